// pipearch_pu: the engine never refuses a start of the register machine.
// verif.formal inserts this fragment (and the generated per-site assertions after it,
// verif.formal.pu_suberr_sites) before `endmodule` of a copy of the committed
// pipearch_pu netlist, so it sees the flattened internals.
//
// The engine's error bit of subroutine s (issue_ctl, registered) is
//   (start_s && !busy_s && !ok_s) || (core done && core cfg_err)
// and reaches the register machine's sub_err[s] (with the AXI errors of LOAD/STORE on
// bits 0/1 from the transfer unit).  Claim: it is never set -- every start the register
// machine issues passes the engine's issue checks (ok_s: regions, access words, lengths,
// iterations, dimension, LOAD mask / amem channel), and no compute core ever latches an
// invalid configuration (cfg_err).  Then sub_err[6:2] is constant 0 in the PU, and the
// register machine's E_ACCESS path (se_idx >= 2) is dead there.
//
// Sound over-approximation (verif.formal: cutpoints): every engine subroutine busy, every
// compute core's busy and done, and the register machine's inputs from the transfer unit
// are free inputs (any value in any cycle), so the claim holds for any timing of the
// engine and the AXI side; the program memory contents come from the free firmware
// stream: any program.  The proof keeps only the input cone of the assertions.
initial assume (rst);
reg suberr_pv = 1'b0;
always @(posedge clk) suberr_pv <= 1'b1;
always @(*) if (suberr_pv && !rst) assert (pu_impl0_status_glue0_eng_err == 7'd0);
