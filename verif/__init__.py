"""cocotb testbenches (one folder per core) and the regression driver."""
