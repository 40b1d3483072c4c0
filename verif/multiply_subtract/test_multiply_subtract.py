"""multiply_subtract: per lane y = sat(x - sat(round(s * a))), one s per iteration from
s_axis_s, against golden.pipearch_ops.multiply_subtract.

The cocotb tests come from verif/lanewise_suite.py; the pytest launchers are below."""
from __future__ import annotations

import pytest

from golden import pipearch_ops as ops
from verif.harness import matrix, run_core
from verif.lanewise_suite import Adapter, make_tests

CORE = "multiply_subtract"
ADAPTER = Adapter(
    core=CORE, inputs=("s_axis_x", "s_axis_a"), knob="scalar",
    golden=lambda fmt, x, a, s: ops.multiply_subtract(fmt, x, s, a),
    rails_knobs=lambda fmt: [fmt.max_int, fmt.min_int, -1, 1, 0, fmt.one, -fmt.one])
globals().update(make_tests(ADAPTER))


@pytest.mark.parametrize("cfg,sim", matrix(CORE, quick=[("default", "verilator"), ("small", "icarus"), ("default", "ghdl")]))
def test_multiply_subtract(cfg, sim):
    run_core(CORE, cfg, sim)


# bus protocol checkers (scoreboards/protocol.py) on every AXI4-Stream/AXI4/AXI4-Lite port
# of the toplevel, attached before each cocotb test; its violations must be zero at the end
from scoreboards.protocol import guard_tests  # noqa: E402

guard_tests(globals())
