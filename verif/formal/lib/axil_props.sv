// AXI4-Lite slave checker: the environment is a legal AXI4-Lite master (valid held with
// stable payload until ready); the slave answers every request exactly once (accepted
// requests = accepted responses + the one response on offer) and holds a response,
// unchanged, until it is accepted.
module axil_slave_props #(parameter AW = 8, parameter DW = 32) (
    input clk,
    input rst,
    input [AW-1:0] awaddr, input awvalid, input awready,
    input [DW-1:0] wdata, input [DW/8-1:0] wstrb, input wvalid, input wready,
    input [1:0] bresp, input bvalid, input bready,
    input [AW-1:0] araddr, input arvalid, input arready,
    input [DW-1:0] rdata, input [1:0] rresp, input rvalid, input rready
);
    reg past_valid = 1'b0;
    always @(posedge clk) past_valid <= 1'b1;
    initial assume (rst);

    // ---- environment: a legal master ----------------------------------------------
    always @(posedge clk) if (past_valid && !rst && !$past(rst)) begin
        if ($past(awvalid && !awready)) assume (awvalid && awaddr == $past(awaddr));
        if ($past(wvalid && !wready)) assume (wvalid && wdata == $past(wdata) && wstrb == $past(wstrb));
        if ($past(arvalid && !arready)) assume (arvalid && araddr == $past(araddr));
    end

    // ---- one response per request ---------------------------------------------------
    reg [3:0] aw_n = 0, w_n = 0, b_n = 0, ar_n = 0, r_n = 0;
    always @(posedge clk)
        if (rst) begin
            aw_n <= 0; w_n <= 0; b_n <= 0; ar_n <= 0; r_n <= 0;
        end else begin
            aw_n <= aw_n + {3'd0, awvalid && awready};
            w_n <= w_n + {3'd0, wvalid && wready};
            b_n <= b_n + {3'd0, bvalid && bready};
            ar_n <= ar_n + {3'd0, arvalid && arready};
            r_n <= r_n + {3'd0, rvalid && rready};
        end
    always @(*) if (past_valid && !rst) begin
        assert (aw_n == w_n);                          // address and data taken together
        assert (aw_n == b_n + {3'd0, bvalid});         // each write answered once
        assert (ar_n == r_n + {3'd0, rvalid});         // each read answered once
    end

    // ---- responses held until accepted ---------------------------------------------
    always @(posedge clk) if (past_valid && !rst && !$past(rst)) begin
        if ($past(bvalid && !bready)) assert (bvalid && bresp == $past(bresp));
        if ($past(rvalid && !rready)) assert (rvalid && rdata == $past(rdata) && rresp == $past(rresp));
    end
endmodule
