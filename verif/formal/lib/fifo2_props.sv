// Properties of rtl_gen.common.blocks.out_fifo2 (the two-entry output FIFO), checked on
// the committed netlist: verif.formal inserts an instance of this module into a copy of
// ip/<core>/rtl/<core>.v, connected to the flattened FIFO's registers (<prefix>_cnt, _d0,
// _d1, _l0, _l1) and to its inputs.  With ENV_FREE=1 the flow also cuts the FIFO's
// inputs loose (yosys cutpoint), so the block is proven for any producer that obeys its
// contract (push only while not_full) and any consumer.  With ENV_FREE=0 the core drives
// the FIFO and "push only while not_full" is asserted instead (no overflow in the core).
module fifo2_props #(
    parameter W = 8,          // {tlast, tdata} width
    parameter ENV_FREE = 1
) (
    input clk,
    input rst,
    input push,
    input [W-1:0] din,        // {din_last, din}
    input not_full,
    input m_tvalid,
    input m_tready,
    input [W-1:0] m_out,      // {m_tlast, m_tdata}
    input [1:0] cnt,
    input [W-1:0] e0,         // {l0, d0}: head entry
    input [W-1:0] e1          // {l1, d1}: second entry
);
    reg past_valid = 1'b0;
    always @(posedge clk) past_valid <= 1'b1;
    initial assume (rst);

    wire pop = m_tvalid && m_tready;

    // ---- environment -------------------------------------------------------------
    always @(*) if (ENV_FREE && !rst) assume (!push || not_full);

    // ---- counts in range, no overflow / underflow, registered not_full ------------
    always @(*) if (past_valid && !rst) begin
        assert (cnt <= 2'd2);
        assert (m_tvalid == (cnt != 2'd0));       // never pops an empty FIFO
        // the registered full flag never claims room in a full FIFO (it may be low for a
        // cycle after reset: the flag's reset value belongs to the instantiating core)
        assert (!not_full || cnt != 2'd2);
        if (!ENV_FREE) assert (!push || not_full); // the core never pushes into a full FIFO
        assert (m_out == e0);
    end

    // shadow occupancy: beats pushed minus beats popped (no beat lost or duplicated)
    reg [3:0] shadow = 4'd0;
    always @(posedge clk)
        if (rst) shadow <= 4'd0;
        else shadow <= shadow + {3'd0, push} - {3'd0, pop};
    always @(*) if (past_valid && !rst) assert (shadow == {2'd0, cnt});

    // ---- output held while not accepted -------------------------------------------
    always @(posedge clk) if (past_valid && !rst && !$past(rst) && $past(m_tvalid && !m_tready)) begin
        assert (m_tvalid);
        assert (m_out == $past(m_out));
    end

    // ---- order kept: two-transaction tracking --------------------------------------
    // A tagged push of value fa, and the push right after it (value fb), must leave the
    // FIFO as fa then fb, fb being the very next beat popped after fa.
    (* anyconst *) reg [W-1:0] fa;
    (* anyconst *) reg [W-1:0] fb;
    (* anyseq *) reg tag;
    // 0 idle; 1 A inside, B not pushed; 2 A and B inside; 3 A out, B inside;
    // 4 A out, B not pushed yet; 5 finished
    reg [2:0] st = 3'd0;
    reg [1:0] ahead = 2'd0;   // entries in front of A
    always @(*) if (!rst) begin
        if (st == 3'd0 && push && tag) assume (din == fa);
        if ((st == 3'd1 || st == 3'd4) && push) assume (din == fb);
    end
    always @(posedge clk) begin
        if (rst) begin
            st <= 3'd0;
            ahead <= 2'd0;
        end else case (st)
            3'd0: if (push && tag) begin
                      st <= 3'd1;
                      ahead <= cnt - {1'b0, pop};
                  end
            3'd1: begin
                      if (pop && ahead == 2'd0) st <= push ? 3'd3 : 3'd4;
                      else if (push) st <= 3'd2;
                      if (pop && ahead != 2'd0) ahead <= ahead - 2'd1;
                  end
            3'd2: if (pop && ahead == 2'd0) st <= 3'd3;
                  else if (pop) ahead <= ahead - 2'd1;
            3'd3: if (pop) st <= 3'd5;
            3'd4: if (push) st <= 3'd3;
            default: ;
        endcase
    end
    always @(*) if (past_valid && !rst) begin
        // the popped beat is the tracked one exactly when the tracker says so
        if ((st == 3'd1 || st == 3'd2) && pop && ahead == 2'd0) assert (m_out == fa);
        if (st == 3'd3 && pop) assert (m_out == fb);
        // inductive strengthening: where A and B sit
        if (st == 3'd1) begin
            assert ({1'b0, ahead} + 3'd1 == {1'b0, cnt});   // A is the last entry
            if (ahead == 2'd0) assert (e0 == fa);
            if (ahead == 2'd1) assert (e1 == fa);
        end
        if (st == 3'd2) begin
            assert (ahead == 2'd0 && cnt == 2'd2);
            assert (e0 == fa && e1 == fb);
        end
        if (st == 3'd3) begin
            assert (cnt != 2'd0);
            assert (e0 == fb);
        end
        if (st == 3'd4) assert (cnt == 2'd0);
        assert (st <= 3'd5);
    end
endmodule
