// pipearch_rm: bounded response of the register machine (no livelock in fetch/decode/
// execute).  verif.formal inserts this fragment before `endmodule` of a copy of the
// pipearch_rm netlist (the committed one or a small variant generated into build/), so
// it sees the machine's internal names.
//
// Progress is one of: Idle, Done or Error (STATE_IDLE/DONE/ERROR of golden.pipearch_isa),
// the cycle a new instruction enters Fetch, or a wait on something outside the machine:
//   * a subroutine (sub_busy): Decode of a subroutine instruction whose target is busy,
//     a blocking subroutine in Execute after its start cycle, BLOCK on busy subroutines,
//     StoreContext waiting for every subroutine to be idle, the end of a StoreContext
//     group (PC 0xFF) waiting for the same;
//   * a firmware line job (program/context load, context store): a job running
//     (ld_active/st_active) or its engine busy before the start.
// Every other cycle counts; the number of consecutive such cycles must stay <= LIVE_K.
// LIVE_K from the ISA's cycle counts: a new instruction is followed by Decode (2 cycles)
// and Execute (1 cycle of a control instruction, 2 of a subroutine before its busy is
// valid), then either Fetch again, LoadCntxDone (1 cycle, RESUME) or StoreContext's two
// set-up phases (YIELD with a switch request / the program end) before its store job
// starts: 2 + 1 + 2 = 5.  The async error path (fw/subroutine errors) goes to Error.
localparam LIVE_K = 5;
localparam [3:0] LIVE_IDLE = 4'd0, LIVE_PROG = 4'd1, LIVE_CTXL = 4'd2, LIVE_FETCH = 4'd3,
                 LIVE_DEC = 4'd4, LIVE_EXEC = 4'd5, LIVE_STC = 4'd6, LIVE_DONE = 4'd8,
                 LIVE_ERR = 4'd9;
localparam [5:0] LIVE_OP_BLOCK = 6'd9;

reg live_pv = 1'b0;
reg [3:0] live_prev = 4'd0;
reg [3:0] live_cnt = 4'd0;
initial assume (rst);

wire live_wait_sub =
      (state == LIVE_DEC && ph != 0 && dec_err == 0 && info[1] && tbusy)
   || (state == LIVE_EXEC && info[1] && !ex_first && tbusy)
   || (state == LIVE_EXEC && !info[1] && op == LIVE_OP_BLOCK && blk_wait)
   || (state == LIVE_STC && ph == 0 && sub_busy != 0)
   || (state == LIVE_FETCH && pc == 8'hff && in_store && sub_busy != 0);
wire live_wait_fw = ld_active || st_active
   || (state == LIVE_PROG && (ph == 0 || ph == 2) && fw_ld_busy)
   || (state == LIVE_CTXL && ph == 0 && fw_ld_busy)
   || (state == LIVE_STC && ph == 1 && fw_st_busy);
wire live_progress = state == LIVE_IDLE || state == LIVE_DONE || state == LIVE_ERR
   || (state == LIVE_FETCH && live_prev != LIVE_FETCH) || live_wait_sub || live_wait_fw;
// consecutive cycles without progress, this one included
wire [4:0] live_run = live_progress ? 5'd0 : {1'b0, live_cnt} + 5'd1;

always @(posedge clk) begin
    live_pv <= 1'b1;
    live_prev <= state;
    live_cnt <= rst ? 4'd0 : (live_run > 5'd15 ? 4'd15 : live_run[3:0]);
end
always @(*) if (live_pv && !rst) assert (live_run <= LIVE_K);
