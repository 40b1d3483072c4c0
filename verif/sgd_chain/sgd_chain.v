// Testbench-only composition (not a catalog core): the four committed PipeArch
// subroutine netlists from ip/ wired as in PipeArch Alg. 1 (lines 11-14):
//   dot_sigmoid -> scalar_engine (SGD mode) -> multiply_subtract -> l2reg.
// The cocotb test plays the regions: it streams the model x and sample a_i in,
// the label b_i, and feeds the new model that leaves l2reg back as the next x.
`timescale 1ns/1ps
module sgd_chain #(parameter LW = 512, parameter W = 32, parameter DW = 11, parameter IW = 13) (
    input  wire          clk,
    input  wire          rst,
    input  wire          start,
    input  wire [DW-1:0] cfg_dimension,
    input  wire [IW-1:0] cfg_iterations,
    input  wire          cfg_sigmoid,
    input  wire [W-1:0]  cfg_alpha,
    input  wire [W-1:0]  cfg_reg,
    output wire          busy,
    output wire          done,
    output wire          cfg_err,
    // x and a_i into dot_sigmoid
    input  wire [LW-1:0] s_axis_xd_tdata, input wire s_axis_xd_tvalid, output wire s_axis_xd_tready,
    input  wire [LW-1:0] s_axis_ad_tdata, input wire s_axis_ad_tvalid, output wire s_axis_ad_tready,
    // label b_i into scalar_engine
    input  wire [W-1:0]  s_axis_b_tdata,  input wire s_axis_b_tvalid,  output wire s_axis_b_tready,
    // x and a_i into multiply_subtract
    input  wire [LW-1:0] s_axis_xm_tdata, input wire s_axis_xm_tvalid, output wire s_axis_xm_tready,
    input  wire [LW-1:0] s_axis_am_tdata, input wire s_axis_am_tvalid, output wire s_axis_am_tready,
    // old x into l2reg
    input  wire [LW-1:0] s_axis_xo_tdata, input wire s_axis_xo_tvalid, output wire s_axis_xo_tready,
    // new model lines
    output wire [LW-1:0] m_axis_y_tdata,  output wire m_axis_y_tvalid, input wire m_axis_y_tready,
    output wire          m_axis_y_tlast
);
    wire [W-1:0]   dot_tdata;   wire dot_tvalid, dot_tready, dot_tlast;
    wire [2*W-1:0] sc_tdata;    wire sc_tvalid, sc_tready, sc_tlast;
    wire [LW-1:0]  ms_tdata;    wire ms_tvalid, ms_tready, ms_tlast;
    wire b0, b1, b2, b3, d0, d1, d2, e0, e1, e2, e3;

    dot_sigmoid u_dot (.clk(clk), .rst(rst), .start(start), .cfg_dimension(cfg_dimension),
        .cfg_iterations(cfg_iterations), .cfg_sigmoid(cfg_sigmoid), .busy(b0), .done(d0), .cfg_err(e0),
        .s_axis_a_tdata(s_axis_xd_tdata), .s_axis_a_tvalid(s_axis_xd_tvalid), .s_axis_a_tready(s_axis_xd_tready),
        .s_axis_b_tdata(s_axis_ad_tdata), .s_axis_b_tvalid(s_axis_ad_tvalid), .s_axis_b_tready(s_axis_ad_tready),
        .m_axis_res_tdata(dot_tdata), .m_axis_res_tvalid(dot_tvalid), .m_axis_res_tready(dot_tready),
        .m_axis_res_tlast(dot_tlast));

    scalar_engine u_sc (.clk(clk), .rst(rst), .start(start), .cfg_iterations(cfg_iterations),
        .cfg_mode(1'b0), .cfg_alpha(cfg_alpha), .cfg_alpha_lambda({W{1'b0}}), .busy(b1), .done(d1), .cfg_err(e1),
        .s_axis_a_tdata(dot_tdata), .s_axis_a_tvalid(dot_tvalid), .s_axis_a_tready(dot_tready),
        .s_axis_b_tdata(s_axis_b_tdata), .s_axis_b_tvalid(s_axis_b_tvalid), .s_axis_b_tready(s_axis_b_tready),
        .m_axis_res_tdata(sc_tdata), .m_axis_res_tvalid(sc_tvalid), .m_axis_res_tready(sc_tready),
        .m_axis_res_tlast(sc_tlast));

    multiply_subtract u_ms (.clk(clk), .rst(rst), .start(start), .cfg_dimension(cfg_dimension),
        .cfg_iterations(cfg_iterations), .busy(b2), .done(d2), .cfg_err(e2),
        .s_axis_x_tdata(s_axis_xm_tdata), .s_axis_x_tvalid(s_axis_xm_tvalid), .s_axis_x_tready(s_axis_xm_tready),
        .s_axis_a_tdata(s_axis_am_tdata), .s_axis_a_tvalid(s_axis_am_tvalid), .s_axis_a_tready(s_axis_am_tready),
        .s_axis_s_tdata(sc_tdata[W-1:0]), .s_axis_s_tvalid(sc_tvalid), .s_axis_s_tready(sc_tready),
        .m_axis_y_tdata(ms_tdata), .m_axis_y_tvalid(ms_tvalid), .m_axis_y_tready(ms_tready),
        .m_axis_y_tlast(ms_tlast));

    l2reg u_l2 (.clk(clk), .rst(rst), .start(start), .cfg_dimension(cfg_dimension),
        .cfg_iterations(cfg_iterations), .cfg_reg(cfg_reg), .busy(b3), .done(done), .cfg_err(e3),
        .s_axis_x_tdata(ms_tdata), .s_axis_x_tvalid(ms_tvalid), .s_axis_x_tready(ms_tready),
        .s_axis_xold_tdata(s_axis_xo_tdata), .s_axis_xold_tvalid(s_axis_xo_tvalid), .s_axis_xold_tready(s_axis_xo_tready),
        .m_axis_y_tdata(m_axis_y_tdata), .m_axis_y_tvalid(m_axis_y_tvalid), .m_axis_y_tready(m_axis_y_tready),
        .m_axis_y_tlast(m_axis_y_tlast));

    assign busy = b0 | b1 | b2 | b3;
    assign cfg_err = e0 | e1 | e2 | e3;
endmodule
