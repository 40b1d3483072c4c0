// AXI4 master checker (one ID, in-order responses): burst legality on AR and AW (INCR,
// full-width size, no 4 KiB crossing, address/control held until accepted), W beats
// held until accepted, WLAST exactly on the last beat of each AW burst.  The environment is a legal slave: R and B only for accepted
// requests, in order, RLAST on the last beat of each read burst; at most QD requests of
// each kind outstanding (the slave stalls AR/AW otherwise); W taken only after its AW.
module axi_master_props #(parameter AW = 32, parameter DW = 128, parameter SIZE = 4) (
    input clk,
    input rst,
    input [AW-1:0] araddr, input [7:0] arlen, input [2:0] arsize, input [1:0] arburst,
    input arvalid, input arready,
    input rvalid, input rready, input rlast,
    input [AW-1:0] awaddr, input [7:0] awlen, input [2:0] awsize, input [1:0] awburst,
    input awvalid, input awready,
    input [DW-1:0] wdata, input wlast, input wvalid, input wready,
    input bvalid, input bready
);
    reg past_valid = 1'b0;
    always @(posedge clk) past_valid <= 1'b1;
    initial assume (rst);
    wire ar_hs = arvalid && arready, r_hs = rvalid && rready;
    wire aw_hs = awvalid && awready, w_hs = wvalid && wready, b_hs = bvalid && bready;

    // ---- burst legality ---------------------------------------------------------------
    wire [12:0] ar_end = {1'b0, araddr[11:0]} + (({5'd0, arlen} + 13'd1) << SIZE);
    wire [12:0] aw_end = {1'b0, awaddr[11:0]} + (({5'd0, awlen} + 13'd1) << SIZE);
    always @(*) if (past_valid && !rst) begin
        if (arvalid) begin
            assert (arburst == 2'b01 && arsize == SIZE);
            assert (araddr[SIZE-1:0] == 0);
            assert (ar_end <= 13'd4096);                 // no 4 KiB crossing
        end
        if (awvalid) begin
            assert (awburst == 2'b01 && awsize == SIZE);
            assert (awaddr[SIZE-1:0] == 0);
            assert (aw_end <= 13'd4096);
        end
    end
    always @(posedge clk) if (past_valid && !rst && !$past(rst)) begin
        if ($past(arvalid && !arready))
            assert (arvalid && araddr == $past(araddr) && arlen == $past(arlen));
        if ($past(awvalid && !awready))
            assert (awvalid && awaddr == $past(awaddr) && awlen == $past(awlen));
        if ($past(wvalid && !wready))
            assert (wvalid && wdata == $past(wdata) && wlast == $past(wlast));
    end

    // ---- read side: queue of accepted burst lengths (environment) ------------------------
    reg [7:0] rq [0:3];
    reg [1:0] rq_h = 0, rq_t = 0;
    reg [2:0] rq_n = 0;
    reg [7:0] rbeat = 0;
    always @(*) if (!rst) begin
        if (rq_n == 3'd4) assume (!arready);
        if (rq_n == 3'd0) assume (!rvalid);
        if (rq_n != 3'd0) assume (rlast == (rbeat == rq[rq_h]));
    end
    always @(posedge clk)
        if (rst) begin rq_h <= 0; rq_t <= 0; rq_n <= 0; rbeat <= 0; end
        else begin
            if (ar_hs) begin rq[rq_t] <= arlen; rq_t <= rq_t + 2'd1; end
            if (r_hs) begin
                if (rbeat == rq[rq_h]) begin rbeat <= 0; rq_h <= rq_h + 2'd1; end
                else rbeat <= rbeat + 8'd1;
            end
            rq_n <= rq_n + {2'd0, ar_hs} - {2'd0, r_hs && rbeat == rq[rq_h]};
        end

    // ---- write side: WLAST on the last beat of each accepted AW burst --------------------
    reg [7:0] wq [0:3];
    reg [1:0] wq_h = 0, wq_t = 0;
    reg [2:0] wq_n = 0;       // AW accepted whose W beats are not all sent
    reg [2:0] b_owe = 0;      // W bursts completed whose B is not yet given
    reg [7:0] wbeat = 0;
    always @(*) if (!rst) begin
        if (wq_n == 3'd4) assume (!awready);
        if (b_owe == 3'd0) assume (!bvalid);
        if (wq_n == 3'd0) assume (!wready);  // a legal slave may take W only after its AW
    end
    always @(*) if (past_valid && !rst) begin
        if (wvalid && wq_n != 3'd0) assert (wlast == (wbeat == wq[wq_h]));
    end
    always @(posedge clk)
        if (rst) begin wq_h <= 0; wq_t <= 0; wq_n <= 0; wbeat <= 0; b_owe <= 0; end
        else begin
            if (aw_hs) begin wq[wq_t] <= awlen; wq_t <= wq_t + 2'd1; end
            if (w_hs && wq_n != 3'd0) begin
                if (wbeat == wq[wq_h]) begin wbeat <= 0; wq_h <= wq_h + 2'd1; end
                else wbeat <= wbeat + 8'd1;
            end
            wq_n <= wq_n + {2'd0, aw_hs} - {2'd0, w_hs && wq_n != 3'd0 && wbeat == wq[wq_h]};
            b_owe <= b_owe + {2'd0, w_hs && wq_n != 3'd0 && wbeat == wq[wq_h]} - {2'd0, b_hs};
        end
endmodule
