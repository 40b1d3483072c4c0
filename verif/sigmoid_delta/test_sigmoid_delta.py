"""sigmoid_delta: per lane y = sat(S(z) - b), S the PWL sigmoid (cfg_sigmoid=1) or the
identity, against golden.pipearch_ops.sigmoid_delta.

The cocotb tests come from verif/lanewise_suite.py; the pytest launchers are below."""
from __future__ import annotations

import pytest

from golden import pipearch_ops as ops
from verif.harness import matrix, run_core
from verif.lanewise_suite import Adapter, make_tests

CORE = "sigmoid_delta"
ADAPTER = Adapter(
    core=CORE, inputs=("s_axis_z", "s_axis_b"), knob="sigmoid",
    golden=lambda fmt, z, b, sig: ops.sigmoid_delta(fmt, z, b, bool(sig)),
    rails_knobs=lambda fmt: [1, 0])
globals().update(make_tests(ADAPTER))


@pytest.mark.parametrize("cfg,sim", matrix(CORE, quick=[("default", "verilator"), ("small", "icarus"), ("default", "ghdl")]))
def test_sigmoid_delta(cfg, sim):
    run_core(CORE, cfg, sim)


# bus protocol checkers (scoreboards/protocol.py) on every AXI4-Stream/AXI4/AXI4-Lite port
# of the toplevel, attached before each cocotb test; its violations must be zero at the end
from scoreboards.protocol import guard_tests  # noqa: E402

guard_tests(globals())
