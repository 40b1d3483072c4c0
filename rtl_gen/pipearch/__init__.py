"""PipeArch compute subroutines (PipeArch section 6.2, Table 2)."""
