"""sigmoid_delta: per lane y = sat(S(z) - b), S the PWL sigmoid (cfg_sigmoid=1) or the
identity, against golden.pipearch_ops.sigmoid_delta.

The cocotb tests come from verif/lanewise_suite.py; the pytest launchers are below."""
from __future__ import annotations

import numpy as np
import pytest

from golden import pipearch_ops as ops
from golden.fixedpoint import sigmoid_table
from verif.harness import dut_params, matrix, run_core
from verif.lanewise_suite import Adapter, job, make_tests
from verif.tb_common import SubroutineTB, line_spec, rand_words, sim_test

CORE = "sigmoid_delta"
ADAPTER = Adapter(
    core=CORE, inputs=("s_axis_z", "s_axis_b"), knob="sigmoid",
    golden=lambda fmt, z, b, sig: ops.sigmoid_delta(fmt, z, b, bool(sig)),
    rails_knobs=lambda fmt: [1, 0])
globals().update(make_tests(ADAPTER))


@sim_test(timeout_us={"default": 30, "*": 120})  # measured 0.9 us on default
async def sigmoid_every_segment(dut):
    """Every lane evaluates the PWL sigmoid in every segment of its table (each lane's
    base/slope ROM entry: line i of lane j is in segment (i + j) mod 64 at a random
    offset), at the first and last input of the domain and beyond both ends; exact
    against golden.pipearch_ops.sigmoid_delta (random inputs reach only the few segments
    near 0 and the clamped ends)."""
    tb = SubroutineTB(dut, list(ADAPTER.inputs), {"m_axis_y": line_spec("m_axis_y", dut_params())})
    await tb.reset()
    fmt, L = tb.fmt, tb.lanes()
    t = sigmoid_table(fmt)
    nseg, r = len(t.base), t.r_int
    z = np.array([[-r + (((i + j) % nseg) << t.shift) + int(tb.rng.integers(0, 1 << t.shift))
                   for j in range(L)] for i in range(nseg)], dtype=np.int64)
    edges = [-r, r - 1, -r - 1, r, -r + (1 << t.shift) - 1, r - (1 << t.shift)]
    z = np.vstack([z, [[edges[(i + j) % len(edges)] for j in range(L)] for i in range(2)]])
    assert all(len({(int(v) + r) >> t.shift for v in z[:nseg, j]}) == nseg for j in range(L))
    dim = len(z) // 2
    b = rand_words(tb.rng, z.shape, fmt, 0.0, 1.0)
    await tb.initiate(**job(ADAPTER, tb, dim, 2, k=1, a=z, b=b))
    await tb.wait_done(1)
    await tb.finish()


@sim_test(timeout_us={"default": 30, "*": 120})  # measured 0.4 us on default
async def domain_ends_every_lane(dut):
    """Every lane takes every input at and next to the ends of the sigmoid's domain
    [-r, r) (-r-1, -r, -r+1, r-1, r, r+1) and the rails, one value per line rotated over
    the lanes, with the sigmoid and with the identity; exact against
    golden.pipearch_ops.sigmoid_delta.  z = r is the input that tells the clamp `z >= r`
    from `z > r` (the latter lets z + r wrap to offset 0 of the table: S(-r) for S(r));
    sigmoid_every_segment gives it to only a third of the lanes (mutation m033 of
    sigmoid_delta's campaign, lane 5)."""
    tb = SubroutineTB(dut, list(ADAPTER.inputs), {"m_axis_y": line_spec("m_axis_y", dut_params())})
    await tb.reset()
    fmt, L = tb.fmt, tb.lanes()
    r = sigmoid_table(fmt).r_int
    vals = [v for v in (-r - 1, -r, -r + 1, r - 1, r, r + 1, fmt.min_int, fmt.max_int)
            if fmt.min_int <= v <= fmt.max_int]
    n = len(vals)
    z = np.array([[vals[(i + j) % n] for j in range(L)] for i in range(n)], dtype=np.int64)
    # the stimulus: every lane sees every value, z = r and z = -r among them
    assert all(sorted(z[:, j].tolist()) == sorted(vals) for j in range(L))
    assert r in vals and -r in vals
    for k, sig in enumerate((1, 0)):
        b = rand_words(tb.rng, z.shape, fmt, 0.0, 1.0)
        await tb.initiate(**job(ADAPTER, tb, n, 1, k=sig, a=z, b=b))
        await tb.wait_done(k + 1)
    await tb.finish()


@pytest.mark.parametrize("cfg,sim", matrix(CORE, quick=[("default", "verilator"), ("small", "icarus"), ("default", "ghdl")]))
def test_sigmoid_delta(cfg, sim):
    run_core(CORE, cfg, sim)


# bus protocol checkers (scoreboards/protocol.py) on every AXI4-Stream/AXI4/AXI4-Lite port
# of the toplevel, attached before each cocotb test; its violations must be zero at the end
from scoreboards.protocol import guard_tests  # noqa: E402

guard_tests(globals())
