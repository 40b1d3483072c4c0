// AXI4-Stream checkers, instantiated by the per-core property fragments
// (verif/<core>/formal/<core>_axis.svh) inside a copy of the committed netlist.

// A master (output) port of the core: once tvalid is up it stays up, with the same
// payload, until the beat is accepted.  Counts accepted beats.
module axis_out_props #(parameter W = 8) (
    input clk,
    input rst,
    input tvalid,
    input tready,
    input [W-1:0] tdata,          // payload incl. tlast
    output reg [7:0] beats
);
    reg past_valid = 1'b0;
    always @(posedge clk) past_valid <= 1'b1;
    initial assume (rst);     // the core's registers have reset values only
    initial beats = 8'd0;
    always @(posedge clk)
        if (rst) beats <= 8'd0;
        else if (tvalid && tready && beats != 8'hff) beats <= beats + 8'd1;
    always @(posedge clk)
        if (past_valid && !rst && !$past(rst) && $past(tvalid && !tready)) begin
            assert (tvalid);
            assert (tdata == $past(tdata));
        end
endmodule

// A slave (input) port of the core: the environment obeys AXI4-Stream (tvalid held,
// payload stable until accepted).  Counts accepted beats.
module axis_in_env #(parameter W = 8) (
    input clk,
    input rst,
    input tvalid,
    input tready,
    input [W-1:0] tdata,
    output reg [7:0] beats
);
    reg past_valid = 1'b0;
    always @(posedge clk) past_valid <= 1'b1;
    initial assume (rst);     // the core's registers have reset values only
    initial beats = 8'd0;
    always @(posedge clk)
        if (rst) beats <= 8'd0;
        else if (tvalid && tready && beats != 8'hff) beats <= beats + 8'd1;
    always @(posedge clk)
        if (past_valid && !rst && !$past(rst) && $past(tvalid && !tready)) begin
            assume (tvalid);
            assume (tdata == $past(tdata));
        end
endmodule
