// dot_sigmoid: AXI4-Stream properties.  verif.formal inserts this fragment (and the
// generated out_fifo2 checker, ENV_FREE=0) before `endmodule` of a copy of
// ip/dot_sigmoid/rtl/dot_sigmoid.v, so it sees the core's ports and internal names.
wire [7:0] formal_a_n, formal_b_n, formal_res_n;
axis_in_env #(.W($bits(s_axis_a_tdata))) formal_a (.clk(clk), .rst(rst), .tvalid(s_axis_a_tvalid),
    .tready(s_axis_a_tready), .tdata(s_axis_a_tdata), .beats(formal_a_n));
axis_in_env #(.W($bits(s_axis_b_tdata))) formal_b (.clk(clk), .rst(rst), .tvalid(s_axis_b_tvalid),
    .tready(s_axis_b_tready), .tdata(s_axis_b_tdata), .beats(formal_b_n));
axis_out_props #(.W($bits({m_axis_res_tlast, m_axis_res_tdata}))) formal_res (.clk(clk), .rst(rst), .tvalid(m_axis_res_tvalid),
    .tready(m_axis_res_tready), .tdata({m_axis_res_tlast, m_axis_res_tdata}), .beats(formal_res_n));
reg formal_pv = 1'b0;
always @(posedge clk) formal_pv <= 1'b1;
always @(*) if (formal_pv && !rst) begin
    assert (formal_a_n == formal_b_n);          // a and b are joined line by line
    assert (formal_res_n <= formal_a_n);        // a dot product needs at least one line
end
