// multiply_subtract: AXI4-Stream properties.  verif.formal inserts this fragment (and the
// generated out_fifo2 checker, ENV_FREE=0) before `endmodule` of a copy of
// ip/multiply_subtract/rtl/multiply_subtract.v, so it sees the core's ports and internal names.
wire [7:0] formal_x_n, formal_a_n, formal_s_n, formal_y_n;
axis_in_env #(.W($bits(s_axis_x_tdata))) formal_x (.clk(clk), .rst(rst), .tvalid(s_axis_x_tvalid),
    .tready(s_axis_x_tready), .tdata(s_axis_x_tdata), .beats(formal_x_n));
axis_in_env #(.W($bits(s_axis_a_tdata))) formal_a (.clk(clk), .rst(rst), .tvalid(s_axis_a_tvalid),
    .tready(s_axis_a_tready), .tdata(s_axis_a_tdata), .beats(formal_a_n));
axis_in_env #(.W($bits(s_axis_s_tdata))) formal_s (.clk(clk), .rst(rst), .tvalid(s_axis_s_tvalid),
    .tready(s_axis_s_tready), .tdata(s_axis_s_tdata), .beats(formal_s_n));
axis_out_props #(.W($bits({m_axis_y_tlast, m_axis_y_tdata}))) formal_y (.clk(clk), .rst(rst), .tvalid(m_axis_y_tvalid),
    .tready(m_axis_y_tready), .tdata({m_axis_y_tlast, m_axis_y_tdata}), .beats(formal_y_n));
reg formal_pv = 1'b0;
always @(posedge clk) formal_pv <= 1'b1;
always @(*) if (formal_pv && !rst) begin
    assert (formal_x_n == formal_a_n);          // x and a are joined line by line
    assert (formal_s_n <= formal_x_n);          // one scalar per vector (on its last line)
    assert (formal_y_n <= formal_x_n);          // no output line without an input line
    if (!busy) begin
        assert (formal_y_n == formal_x_n);      // idle: every line came out once
        assert (formal_s_n <= formal_x_n);
    end
end
