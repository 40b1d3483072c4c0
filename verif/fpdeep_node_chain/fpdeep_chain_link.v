// Testbench-only chain link for verif/fpdeep_node_chain: a one-entry AXI4-Stream register
// slice between two fpdeep_node chain ports.  While `stall` is high it takes nothing, so
// the testbench's random `stall` bits put random backpressure on the producing node's
// chain output (and bubbles on the consuming node's chain input).  Full valid/ready
// semantics on both sides; one beat per cycle when not stalled.
`timescale 1ns/1ps
module fpdeep_chain_link #(parameter DW = 8) (
    input  wire          clk,
    input  wire          rst,
    input  wire          stall,
    input  wire [DW-1:0] s_tdata,
    input  wire          s_tvalid,
    output wire          s_tready,
    input  wire          s_tlast,
    output wire [DW-1:0] m_tdata,
    output wire          m_tvalid,
    input  wire          m_tready,
    output wire          m_tlast
);
    reg          full;
    reg [DW-1:0] d;
    reg          l;
    assign s_tready = (!full || m_tready) && !stall;
    assign m_tvalid = full;
    assign m_tdata  = d;
    assign m_tlast  = l;
    always @(posedge clk) begin
        if (rst) begin
            full <= 1'b0;
            d    <= {DW{1'b0}};
            l    <= 1'b0;
        end else if (s_tvalid && s_tready) begin
            full <= 1'b1;
            d    <= s_tdata;
            l    <= s_tlast;
        end else if (m_tready) begin
            full <= 1'b0;
        end
    end
endmodule
