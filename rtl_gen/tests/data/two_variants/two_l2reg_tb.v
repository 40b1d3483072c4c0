// Two differently parameterised l2reg variants in one design (rtl_gen/tests/test_fusesoc_gen.py).
// Each gets one line with cfg_reg = 1.0 in its own Q(W,F), so y[i] = x[i] - xold[i] per lane;
// the expected line is computed here from the lane formula, independently of the netlist.
// +BAD makes the expectation wrong on purpose (the negative test of this checker).
`timescale 1ns/1ps
module two_l2reg_tb;
  reg clk = 0, rst = 1;
  always #5 clk = ~clk;
  integer errors = 0;
  integer bad = 0;

`define VARIANT(P, LANES, W, F)                                                          \
  reg P``start = 0; reg [LANES*W-1:0] P``x = 0, P``xold = 0; reg P``xv = 0, P``ov = 0;   \
  wire P``busy, P``done, P``err, P``xr, P``or, P``yv, P``yl; wire [LANES*W-1:0] P``y;   \
  P``l2reg P``dut (.clk(clk), .rst(rst), .start(P``start), .cfg_dimension(1),             \
    .cfg_iterations(1), .cfg_reg(1 << F), .busy(P``busy), .done(P``done),                 \
    .cfg_err(P``err), .s_axis_x_tdata(P``x), .s_axis_x_tvalid(P``xv),                     \
    .s_axis_x_tready(P``xr), .s_axis_xold_tdata(P``xold), .s_axis_xold_tvalid(P``ov),     \
    .s_axis_xold_tready(P``or), .m_axis_y_tdata(P``y), .m_axis_y_tvalid(P``yv),           \
    .m_axis_y_tready(1'b1), .m_axis_y_tlast(P``yl));                                      \
  task P``run; integer i, n; reg [LANES*W-1:0] exp; begin                                  \
    for (i = 0; i < LANES; i = i + 1) begin                                                \
      P``x[i*W +: W] = 100 + 7*i; P``xold[i*W +: W] = 3*i;                                 \
      exp[i*W +: W] = 100 + 4*i + bad;                                                     \
    end                                                                                    \
    @(posedge clk) P``start <= 1; @(posedge clk) P``start <= 0;                            \
    P``xv <= 1; P``ov <= 1;                                                                \
    n = 0; while (!(P``xv && P``xr && P``ov && P``or) && n < 100) begin @(posedge clk); n = n + 1; end \
    @(posedge clk) P``xv <= 0; P``ov <= 0;                                                 \
    n = 0; while (!P``yv && n < 100) begin @(posedge clk); n = n + 1; end                  \
    if (!P``yv) begin $display("TB FAIL %s: no output beat", `"P`"); errors = errors + 1; end \
    else if (P``y !== exp || !P``yl) begin                                                 \
      $display("TB FAIL %s: y=%h expected %h tlast=%b", `"P`", P``y, exp, P``yl); errors = errors + 1; end \
    else $display("TB ok %s: %0d lanes of %0d bits, y=%h", `"P`", LANES, W, P``y);         \
  end endtask

  `VARIANT(va_, 8, 24, 12)
  `VARIANT(vb_, 4, 16, 8)

  initial begin
    if ($test$plusargs("BAD")) bad = 1;
    repeat (3) @(posedge clk); rst <= 0;
    va_run; vb_run;
    if (errors == 0) $display("TB PASS two l2reg variants");
    else $display("TB FAIL %0d errors", errors);
    $finish;
  end
endmodule
