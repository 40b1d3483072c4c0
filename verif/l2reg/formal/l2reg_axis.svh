// l2reg: AXI4-Stream properties.  verif.formal inserts this fragment (and the generated
// out_fifo2 checker, ENV_FREE=0) before `endmodule` of a copy of
// ip/l2reg/rtl/l2reg.v, so it sees the core's ports and internal names.
wire [7:0] formal_x_n, formal_xold_n, formal_y_n;
axis_in_env #(.W($bits(s_axis_x_tdata))) formal_x (.clk(clk), .rst(rst), .tvalid(s_axis_x_tvalid),
    .tready(s_axis_x_tready), .tdata(s_axis_x_tdata), .beats(formal_x_n));
axis_in_env #(.W($bits(s_axis_xold_tdata))) formal_xold (.clk(clk), .rst(rst), .tvalid(s_axis_xold_tvalid),
    .tready(s_axis_xold_tready), .tdata(s_axis_xold_tdata), .beats(formal_xold_n));
axis_out_props #(.W($bits({m_axis_y_tlast, m_axis_y_tdata}))) formal_y (.clk(clk), .rst(rst), .tvalid(m_axis_y_tvalid),
    .tready(m_axis_y_tready), .tdata({m_axis_y_tlast, m_axis_y_tdata}), .beats(formal_y_n));
reg formal_pv = 1'b0;
always @(posedge clk) formal_pv <= 1'b1;
always @(*) if (formal_pv && !rst) begin
    assert (formal_x_n == formal_xold_n);        // the two inputs are joined line by line
    assert (formal_y_n <= formal_x_n);        // no output line without an input line
    if (!busy) assert (formal_y_n == formal_x_n); // idle: every line came out once
end
