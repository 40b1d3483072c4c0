// sigmoid_delta: AXI4-Stream properties.  verif.formal inserts this fragment (and the generated
// out_fifo2 checker, ENV_FREE=0) before `endmodule` of a copy of
// ip/sigmoid_delta/rtl/sigmoid_delta.v, so it sees the core's ports and internal names.
wire [7:0] formal_z_n, formal_b_n, formal_y_n;
axis_in_env #(.W($bits(s_axis_z_tdata))) formal_z (.clk(clk), .rst(rst), .tvalid(s_axis_z_tvalid),
    .tready(s_axis_z_tready), .tdata(s_axis_z_tdata), .beats(formal_z_n));
axis_in_env #(.W($bits(s_axis_b_tdata))) formal_b (.clk(clk), .rst(rst), .tvalid(s_axis_b_tvalid),
    .tready(s_axis_b_tready), .tdata(s_axis_b_tdata), .beats(formal_b_n));
axis_out_props #(.W($bits({m_axis_y_tlast, m_axis_y_tdata}))) formal_y (.clk(clk), .rst(rst), .tvalid(m_axis_y_tvalid),
    .tready(m_axis_y_tready), .tdata({m_axis_y_tlast, m_axis_y_tdata}), .beats(formal_y_n));
reg formal_pv = 1'b0;
always @(posedge clk) formal_pv <= 1'b1;
always @(*) if (formal_pv && !rst) begin
    assert (formal_z_n == formal_b_n);        // the two inputs are joined line by line
    assert (formal_y_n <= formal_z_n);        // no output line without an input line
    if (!busy) assert (formal_y_n == formal_z_n); // idle: every line came out once
end
