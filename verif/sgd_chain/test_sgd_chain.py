"""Composed testbench: dot_sigmoid -> scalar_engine -> multiply_subtract -> l2reg
(the committed ip/ netlists, wired by verif/sgd_chain/sgd_chain.v) run full epochs of
logistic-regression SGD with L2, closed loop: the model that leaves l2reg is what the
testbench feeds back as the next x.  Every intermediate model is scoreboarded against the
per-op golden trace, and the final model must equal golden.sgd.sgd(..., fmt=...) exactly.
"""
from __future__ import annotations

import cocotb
import numpy as np
import pytest
from cocotb.triggers import ClockCycles, ReadOnly, RisingEdge

from golden import pipearch_ops as ops
from golden.fixedpoint import sigmoid_table
from golden.sgd import sgd
from rtl_gen.common.core import IP_DIR, REPO
from rtl_gen.registry import get
from scoreboards.checker import pack_lanes, split_lanes
from verif.harness import run_top
from verif.tb_common import DEFAULT_CYCLES, SubroutineTB, line_spec, sim_test, start_while_busy, wait_until

NAME = "sgd_chain"
PARTS = ("dot_sigmoid", "scalar_engine", "multiply_subtract", "l2reg")
M, D, EPOCHS = 48, 2, 2          # samples, lines per sample vector, epochs
ALPHA, LAM2 = 0.25, 0.01


def dataset(rng, n):
    A = rng.uniform(-1.0, 1.0, size=(M, n))
    w = rng.normal(size=n)
    b = (1.0 / (1.0 + np.exp(-(A @ w))) > rng.uniform(size=M)).astype(np.float64)
    order = np.stack([rng.permutation(M) for _ in range(EPOCHS)])
    return A, b, order


async def run_epochs(dut, corrupt_model: bool = False, abort_first: bool = False, extra_starts: bool = False):
    tb = SubroutineTB(dut, ["s_axis_xd", "s_axis_ad", "s_axis_b", "s_axis_xm", "s_axis_am", "s_axis_xo"],
                      {"m_axis_y": line_spec("m_axis_y", _params())},
                      src_p=0.8, sink_p=0.7)
    fmt, L = tb.fmt, tb.lanes()
    n = L * D
    A, b, order = dataset(tb.rng, n)
    Aq, bq = fmt.to_fixed(A, "A"), fmt.to_fixed(b, "b")
    alpha_q, c_q = int(fmt.to_fixed(ALPHA, "alpha")), int(fmt.to_fixed(2 * ALPHA * LAM2, "2*alpha*lambda"))
    table = sigmoid_table(fmt)
    got = []
    tb.mon["m_axis_y"].add_callback(lambda t: got.append(t[0]))
    await tb.reset()
    if abort_first:
        await _aborted_epoch(tb, Aq, bq, order, alpha_q, c_q, table, got)
    x = np.zeros(n, dtype=np.int64)
    for e in range(EPOCHS):
        await tb.initiate(dimension=D, iterations=M, sigmoid=1, alpha=alpha_q, reg=c_q)
        if extra_starts:   # start while busy, other fields (the last ones invalid): ignored
            await start_while_busy(dut, dut.clk, dict(dimension=1, iterations=3, sigmoid=0, alpha=alpha_q + 1,
                                                      reg=0), pulses=2)
            await start_while_busy(dut, dut.clk, dict(dimension=0, iterations=0, sigmoid=0, alpha=0, reg=0),
                                   pulses=1)
        for i in order[e]:
            a = Aq[i]
            xl, al = x.reshape(D, L), a.reshape(D, L)
            # golden per-op trace of this sample (what the chain must produce)
            dot = ops.dot_sigmoid(fmt, xl, al, D, True, table)[0]
            s = ops.scalar_sgd(fmt, dot, bq[i], alpha_q)
            x1 = ops.multiply_subtract(fmt, x, s, a)
            xn = ops.l2reg(fmt, x1, x, c_q)
            tb.expect_lines("m_axis_y", xn.reshape(D, L), D)
            # regions: stream the current model and the sample into the chain
            for name, lines in (("s_axis_xd", xl), ("s_axis_ad", al), ("s_axis_xm", xl),
                                ("s_axis_am", al), ("s_axis_xo", xl)):
                tb.send_lines(name, lines)
            tb.send_words("s_axis_b", [bq[i]])
            # closed loop: wait for the D new-model lines and use them as the next x
            await wait_until(dut.clk, lambda: len(got) >= D, DEFAULT_CYCLES, "m_axis_y: model lines missing",
                             expect=f"{D} new-model lines of epoch {e} sample {i}",
                             detail=lambda: f"{len(got)} received")
            new = np.concatenate([split_lanes(got.pop(0), L, fmt.W) for _ in range(D)])
            x = np.array(new, dtype=np.int64)
        await tb.wait_done(e + 1)
    ref = sgd(A, b, loss="logistic", alpha=ALPHA, lam2=LAM2, epochs=EPOCHS, order=order,
              batch=1, fmt=fmt, table=table)
    final = x.copy()
    if corrupt_model:
        final[3] ^= 1
    mism = np.flatnonzero(final != ref.x)
    dut._log.info("final model (first 4): rtl %s golden %s; loss per epoch %s",
                  final[:4], ref.x[:4], np.round(ref.loss, 5))
    return tb, mism


async def _aborted_epoch(tb, Aq, bq, order, alpha_q, c_q, table, got):
    """Start an epoch, stream a seeded random number of samples (all with the zero model,
    their per-op golden results expected), reset at a seeded random cycle while the chain
    works, and check that nothing of it survives: busy, done, cfg_err and every output
    valid low, no model line afterwards, the sources' queued lines dropped."""
    dut, fmt, L = tb.dut, tb.fmt, tb.lanes()
    k = int(tb.rng.integers(1, 6))
    at = int(tb.rng.integers(1, 8 * D + 10))
    await tb.initiate(dimension=D, iterations=M, sigmoid=1, alpha=alpha_q, reg=c_q)
    x = np.zeros(L * D, dtype=np.int64)
    for i in order[0][:k]:
        a = Aq[i]
        dot = ops.dot_sigmoid(fmt, x.reshape(D, L), a.reshape(D, L), D, True, table)[0]
        xn = ops.l2reg(fmt, ops.multiply_subtract(fmt, x, ops.scalar_sgd(fmt, dot, bq[i], alpha_q), a), x, c_q)
        tb.expect_lines("m_axis_y", xn.reshape(D, L), D)
        for name in ("s_axis_xd", "s_axis_xm", "s_axis_xo"):
            tb.send_lines(name, x.reshape(D, L))
        for name in ("s_axis_ad", "s_axis_am"):
            tb.send_lines(name, a.reshape(D, L))
        tb.send_words("s_axis_b", [bq[i]])
    await ClockCycles(dut.clk, at)
    assert int(dut.busy.value) == 1, "the aborted epoch is not running"
    dut._log.info("reset %d cycles into an epoch of which %d samples were streamed (%d model lines out)",
                  at, k, len(got))
    await tb.abort_and_reset()
    got.clear()
    for _ in range(60):
        await ReadOnly()
        assert int(dut.busy.value) == 0 and int(dut.done.value) == 0 and int(dut.cfg_err.value) == 0, \
            "busy/done/cfg_err not at reset values after the reset"
        assert int(dut.m_axis_y_tvalid.value) == 0, "a model line of the aborted epoch after the reset"
        await RisingEdge(dut.clk)
    assert not got, "stale model lines after the reset"


def _params():
    p = get("l2reg").resolve({})
    return p


@sim_test(timeout_us={"default": 150, "*": 600})  # measured 31.7 us on default
async def logistic_sgd_epochs(dut):
    """Two epochs of logistic SGD with L2 on the chained cores equal golden SGD exactly."""
    tb, mism = await run_epochs(dut)
    await tb.finish()
    assert mism.size == 0, f"final model differs from golden sgd at features {mism.tolist()}"


@sim_test(timeout_us={"default": 160, "*": 640})  # measured 32.7 us on default
async def reset_during_epoch(dut):
    """Reset at a seeded random cycle in the middle of an epoch (a random number of samples
    streamed, random bubbles and backpressure): the chain returns to idle with nothing left
    over, then two full epochs from scratch equal golden SGD exactly."""
    tb, mism = await run_epochs(dut, abort_first=True)
    await tb.finish()
    assert mism.size == 0, f"final model after the reset differs from golden sgd at features {mism.tolist()}"


@sim_test(timeout_us={"default": 150, "*": 600})  # measured 32.1 us on default
async def start_while_busy_ignored(dut):
    """In every epoch, start pulsed while the chain is busy with other dimension/iterations/
    sigmoid/alpha/reg (then an invalid set): ignored, so the two epochs still equal golden
    SGD exactly, one done per epoch, cfg_err never set."""
    tb, mism = await run_epochs(dut, extra_starts=True)
    await tb.finish()
    assert mism.size == 0, f"final model differs from golden sgd at features {mism.tolist()}"
    assert tb.done_count == EPOCHS and int(dut.cfg_err.value) == 0 and int(dut.busy.value) == 0, \
        f"{tb.done_count} done pulses for {EPOCHS} epochs, cfg_err {int(dut.cfg_err.value)}"


@sim_test(timeout_us={"default": 150, "*": 600})  # measured 31.5 us on default
async def final_model_check_can_fail(dut):
    """Negative test: a one-LSB corruption of the final model is caught."""
    tb, mism = await run_epochs(dut, corrupt_model=True)
    await tb.finish()
    assert mism.tolist() == [3], f"corruption not detected exactly: {mism.tolist()}"


def _sources():
    return [IP_DIR / c / "rtl" / f"{c}.v" for c in PARTS] + [REPO / "verif" / NAME / "sgd_chain.v"]


@pytest.mark.parametrize("sim", ["verilator", "icarus"])
def test_sgd_chain(sim):
    p = get("l2reg").resolve({})
    for c in PARTS:  # the chain assumes the four default netlists share one format
        q = get(c).resolve({})
        assert all(q[k] == p[k] for k in ("LANES", "W", "F", "MAX_DIM", "MAX_ITER") if k in q), c
    args = ["--output-split", "0", "-Wno-fatal"] if sim == "verilator" else []
    run_top(NAME, NAME, "default", sim, _sources(), args, p)


# bus protocol checkers (scoreboards/protocol.py) on every AXI4-Stream/AXI4/AXI4-Lite port
# of the toplevel, attached before each cocotb test; its violations must be zero at the end
from scoreboards.protocol import guard_tests  # noqa: E402

guard_tests(globals())
