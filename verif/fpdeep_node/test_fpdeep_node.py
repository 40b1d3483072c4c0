"""fpdeep_node: one FPDeep training node (FP + EB + PG, activation RAM, parameter store,
chain ports) against golden.conv (icp_chain_minibatch with one node; fp_node for the
node in the middle or at the end of a chain, fed with exact partial sums).

cocotb tests (run inside the simulator) and, at the bottom, the pytest launchers.
The chained system test is verif/fpdeep_node_chain.
"""
from __future__ import annotations

import cocotb
import numpy as np
import pytest
from cocotb.triggers import ClockCycles

from golden import conv
from rtl_gen.common.params import ParamError
from rtl_gen.registry import get
from verif.fpdeep_node.node_tb import NodeTB
from verif.harness import matrix, run_core
from verif.tb_common import DEFAULT_CYCLES, record_bench, sim_test, start_while_busy, wait_until

CORE = "fpdeep_node"


def rand_psums(tb, B, h, w, pad):
    """Exact partial sums of 'earlier nodes': the ICP partial of S_IC random channels."""
    out = []
    for _ in range(B):
        xo = tb.rand((tb.S_IC, h, w), scale=2.0)
        wo = tb.rand((tb.S_OC, tb.S_IC, tb.K, tb.K), scale=1.0)
        out.append(conv.icp_partials(xo, wo, 1, pad=pad, fmt=tb.fmt)[0])
    return out


@sim_test(timeout_us={"default": 80, "*": 320})  # measured 13.6 us on default
async def random_minibatches(dut):
    """Random map sizes, pads, batch sizes, learning rates, chain positions (first/middle/
    last, error chain end or not), ReLU on/off and start schedules (sequential, FWD b+1
    overlapping BWD b, all FWD first); bubbles on every source, backpressure on every sink
    (psum, error-chain and readback ports included); the parameters carry over between
    mini-batches (reloaded every other one)."""
    tb = NodeTB(dut, src_p=0.7, sink_p=0.6)
    await tb.reset()
    scheds = ["seq", "overlap", "fwd_first"]
    positions = [(1, 1, 1), (0, 0, 0), (1, 0, 0), (0, 1, 1), (0, 1, 0), (1, 1, 0)]
    for k in range(6):
        h, w, pad = tb.rand_shape()
        B = int(tb.rng.integers(1, tb.p["MAX_BATCH"] + 1))
        if k % 2 == 0:
            await tb.load(*tb.rand_params())
        pos = positions[k % len(positions)]
        relu = bool(tb.rng.integers(0, 2))
        xs, es = tb.rand_batch(B, h, w, pad)
        psums = rand_psums(tb, B, h, w, pad)
        lr = tb.rand_lr()
        tb.queue_batch(xs, es, pad, lr, relu, *pos, psums=psums)
        await tb.run_batch(B, h, w, pad, lr, relu, scheds[k % 3], pos)
    await tb.finish()


@sim_test(timeout_us={"default": 100, "*": 400})  # measured 18.7 us on default
async def padding_edges(dut):
    """Every pad 0..K-1 with the smallest maps (1x1 output) and the maximum map, batch up
    to MAX_BATCH (every activation RAM region)."""
    tb = NodeTB(dut, src_p=0.8, sink_p=0.7)
    await tb.reset()
    K = tb.K
    shapes = []
    for pad in range(K):
        m = max(1, K - 2 * pad)
        shapes.append((m, m, pad))
    shapes += [(tb.p["MAX_HEIGHT"], tb.p["MAX_WIDTH"], 0), (tb.p["MAX_HEIGHT"], tb.p["MAX_WIDTH"], K - 1)]
    for k, (h, w, pad) in enumerate(shapes):
        await tb.load(*tb.rand_params())
        B = tb.p["MAX_BATCH"] if k >= len(shapes) - 2 else 1 + k % 2
        xs, es = tb.rand_batch(B, h, w, pad)
        lr = tb.rand_lr()
        tb.queue_batch(xs, es, pad, lr)
        await tb.run_batch(B, h, w, pad, lr, schedule="overlap")
    await tb.finish()


@sim_test(timeout_us={"default": 70, "*": 280})  # measured 11.8 us on default
async def saturation(dut):
    """Rails: activations, input errors and gradients saturate both ways; the update
    saturates (parameters at the rails, largest lr)."""
    tb = NodeTB(dut, sink_p=0.8)
    await tb.reset()
    K, fmt = tb.K, tb.fmt
    mn, mx = fmt.min_int, fmt.max_int
    h = w = min(tb.p["MAX_HEIGHT"], tb.p["MAX_WIDTH"], K + 1)
    ho, wo = tb.out_shape(h, w, 0)
    B = tb.p["MAX_BATCH"]
    for xv, ev, wv, lr, relu in ((mx, mx, mn, mx, False), (mx, mn, mx, mx, True), (mn, mn, mn, mx, False)):
        xs = [np.full((tb.C, h, w), xv) for _ in range(B)]
        es = [np.full((tb.S_OC, ho, wo), ev) for _ in range(B)]
        await tb.load(np.full((tb.S_OC, tb.C, K, K), wv), np.full(tb.S_OC, wv))
        r = tb.queue_batch(xs, es, 0, lr, relu)
        assert np.abs(np.asarray(r["e_in"][0], dtype=object)).max() >= mx, "input errors do not saturate"
        await tb.run_batch(B, h, w, 0, lr, relu, "seq")
    await tb.finish()


@sim_test(timeout_us={"default": 30, "*": 120})  # measured 1.6 us on default
async def invalid_configuration(dut):
    """Width/height 0 or too large, pad > K-1, padded map smaller than K, sample out of
    range; a BWD op opening a mini-batch with batch 0 / too large or lr_q <= 0: cfg_err and
    the op's done pulse, nothing consumed; a valid mini-batch afterwards is exact."""
    tb = NodeTB(dut)
    await tb.reset()
    K, MB = tb.K, tb.p["MAX_BATCH"]
    ok = dict(width=3, height=3, pad=1, batch=1, lr=1, first=1, last=1, bend=1, relu=1)
    common = [dict(ok, width=0), dict(ok, height=0), dict(ok, width=(1 << len(dut.cfg_width)) - 1),
              dict(ok, height=(1 << len(dut.cfg_height)) - 1), dict(ok, width=1, height=K, pad=(K - 2) // 2)]
    if tb.p["MAX_WIDTH"] + 1 < (1 << len(dut.cfg_width)):
        common.append(dict(ok, width=tb.p["MAX_WIDTH"] + 1))
    common += [dict(ok, pad=q) for q in range(K, 1 << len(dut.cfg_pad))]
    bwd_only = [dict(ok, batch=0), dict(ok, batch=(1 << len(dut.cfg_batch)) - 1), dict(ok, lr=0),
                dict(ok, lr=-1), dict(ok, lr=tb.fmt.min_int)]
    nf = nb = 0
    for f in common:
        await tb.start(fwd=0, fields=f)
        nf += 1
        await tb.wait_counts(f=nf, timeout=20)
        assert int(dut.cfg_err.value) == 1, f"cfg_err not set (FWD) for {f}"
        await tb.start(bwd=0, fields=f)
        nb += 1
        await tb.wait_counts(b=nb, timeout=20)
        assert int(dut.cfg_err.value) == 1, f"cfg_err not set (BWD) for {f}"
    for f in bwd_only:
        await tb.start(bwd=0, fields=f)
        nb += 1
        await tb.wait_counts(b=nb, timeout=20)
        assert int(dut.cfg_err.value) == 1, f"cfg_err not set for {f}"
    if (1 << len(dut.cfg_fsample)) > MB:
        await tb.start(fwd=MB, fields=ok)
        nf += 1
        await tb.wait_counts(f=nf, timeout=20)
        assert int(dut.cfg_err.value) == 1, "cfg_err not set for a sample beyond MAX_BATCH"
    assert int(dut.fwd_busy.value) == 0 and int(dut.bwd_busy.value) == 0
    await tb.load(*tb.rand_params())
    xs, es = tb.rand_batch(1, 3, 3, 1)
    tb.queue_batch(xs, es, 1, 1)
    await ClockCycles(dut.clk, 5)
    assert tb.spix[0].sent == 0 and tb.sberr.sent == 0, "an invalid initiation consumed input"
    await tb.run_batch(1, 3, 3, 1, 1, True, "seq")
    await tb.finish()


@sim_test(timeout_us={"default": 60, "*": 240})  # measured 7.8 us on default
async def reset_mid_batch(dut):
    """Reset in the middle of a mini-batch (a BWD op running, a FWD op overlapping): idle
    afterwards, parameters cleared, the next mini-batches exact."""
    tb = NodeTB(dut, src_p=0.9, sink_p=0.5)
    await tb.reset()
    await tb.load(*tb.rand_params())
    h, w = min(tb.p["MAX_HEIGHT"], 5), min(tb.p["MAX_WIDTH"], 5)
    B = min(2, tb.p["MAX_BATCH"])
    xs, es = tb.rand_batch(B, h, w, 1)
    tb.queue_batch(xs, es, 1, 1)
    fields = dict(width=w, height=h, pad=1, relu=1, batch=B, lr=1, first=1, last=1, bend=1)
    await tb.start(fwd=0, fields=fields)
    await tb.wait_counts(f=1)
    await tb.start(fwd=1 if B > 1 else None, bwd=0, fields=fields)
    at = int(tb.rng.integers(1, 2 * w + 6))     # seeded random reset cycle within the BWD op
    dut._log.info("reset %d cycles after the BWD start", at)
    await ClockCycles(dut.clk, at)
    assert int(dut.bwd_busy.value) == 1
    await tb.abort_and_reset()
    assert int(dut.fwd_busy.value) == 0 and int(dut.bwd_busy.value) == 0
    assert int(dut.stage_busy.value) == 0 and int(dut.fwd_done.value) == 0 and int(dut.bwd_done.value) == 0
    tb.check_flags()                             # cfg_err, row_err, psum_err at reset values
    for _ in range(2):
        h, w, pad = tb.rand_shape()
        if _:
            await tb.load(*tb.rand_params())
        B = int(tb.rng.integers(1, tb.p["MAX_BATCH"] + 1))
        xs, es = tb.rand_batch(B, h, w, pad)
        lr = tb.rand_lr()
        tb.queue_batch(xs, es, pad, lr)          # first one from the cleared (zero) parameters
        await tb.run_batch(B, h, w, pad, lr, True, "overlap")
    await tb.finish()


@sim_test(timeout_us={"default": 50, "*": 200})  # measured 5.2 us on default
async def tlast_checks(dut):
    """A pixel tlast off the row end, an error-map tlast off the row end (row_err) and a
    psum_in tlast off the output-row end (psum_err) are flagged, sticky until the next
    start; the results are unaffected."""
    tb = NodeTB(dut, src_p=0.8)
    await tb.reset()
    await tb.load(*tb.rand_params())
    P = tb.K - 1
    for what in ("pix", "berr", "psum"):
        xs, es = tb.rand_batch(1, 3, 4, P)
        ps = rand_psums(tb, 1, 3, 4, P)
        pos = (0, 1, 1) if what == "psum" else (1, 1, 1)
        tb.queue_batch(xs, es, P, 1, True, *pos, psums=ps)
        src = {"pix": tb.spix[0], "berr": tb.sberr, "psum": tb.sps}[what]
        d, last = src._sendQ[1][0]
        src._sendQ[1] = ((d, 1 - last),) + tuple(src._sendQ[1][1:])
        await tb.run_batch(1, 3, 4, P, 1, True, "seq", pos, flags=False)
        flag = "psum_err" if what == "psum" else "row_err"
        assert int(getattr(dut, flag).value) == 1, f"{flag} not set for a bad {what} tlast"
    xs, es = tb.rand_batch(1, 2, 3, P)
    tb.queue_batch(xs, es, P, 1)
    await tb.run_batch(1, 2, 3, P, 1, True, "seq")       # flags clear on the next starts
    await tb.finish()


@sim_test(timeout_us={"default": 50, "*": 200})  # measured 5.8 us on default
async def start_while_busy_ignored(dut):
    """fwd_start while fwd_busy and bwd_start while bwd_busy, with other cfg fields (other
    sample index, shape, batch, learning rate, chain position): each op in flight completes
    exactly as first configured (activations, input errors and updated parameters
    bit-exact), the extra starts give no done and consume nothing, and the next legal
    starts (the rest of the mini-batch, then a new one) work."""
    tb = NodeTB(dut, src_p=0.7, sink_p=0.6)
    await tb.reset()
    await tb.load(*tb.rand_params())
    h, w = min(tb.p["MAX_HEIGHT"], 5), min(tb.p["MAX_WIDTH"], 5)
    B = min(2, tb.p["MAX_BATCH"])
    xs, es = tb.rand_batch(B, h, w, 1)
    lr = tb.rand_lr()
    tb.queue_batch(xs, es, 1, lr)
    fields = dict(width=w, height=h, pad=1, relu=1, batch=B, lr=lr, first=1, last=1, bend=1)
    alt = dict(width=tb.K, height=tb.K + 1, pad=0, relu=0, batch=tb.p["MAX_BATCH"], lr=lr + 3,
               first=0, last=0, bend=0)
    n = 0
    for s in range(B):
        await tb.start(fwd=s, fields=fields)
        n += await start_while_busy(dut, tb.clk, dict(alt, fsample=(s + 1) % tb.p["MAX_BATCH"]),
                                    start="fwd_start", busy="fwd_busy", pulses=2)
        await tb.wait_counts(f=s + 1)
        await tb.start(bwd=s, fields=fields)
        n += await start_while_busy(dut, tb.clk, dict(alt, bsample=(s + 1) % tb.p["MAX_BATCH"]),
                                    start="bwd_start", busy="bwd_busy", pulses=2)
        await tb.wait_counts(b=s + 1)
        await ClockCycles(dut.clk, 30)
        assert (tb.fdone[0], tb.bdone[0]) == (s + 1, s + 1), \
            f"done counts {tb.fdone[0]}/{tb.bdone[0]} after {s + 1} accepted FWD and BWD ops"
        tb.check_flags()
    dut._log.info("%d starts given while busy", n)
    assert int(dut.fwd_busy.value) == 0 and int(dut.bwd_busy.value) == 0
    h, w, pad = tb.rand_shape()
    xs, es = tb.rand_batch(1, h, w, pad)
    lr = tb.rand_lr()
    tb.queue_batch(xs, es, pad, lr)
    await tb.run_batch(1, h, w, pad, lr, True, "seq")
    assert (tb.fdone[0], tb.bdone[0]) == (B + 1, B + 1)
    await tb.finish()


@sim_test(timeout_us={"default": 60, "*": 240})
async def load_waits_for_idle(dut):
    """Filter and bias beats offered while a mini-batch is open (from its first BWD op to its
    update) are held (tready low) until the node is idle again: that mini-batch runs and
    updates with the old parameters, the
    next one starts from the loaded ones; the two bias beats come back to back (the second
    one wins)."""
    from scoreboards.checker import pack_lanes
    tb = NodeTB(dut)
    await tb.reset()
    h, w, pad = tb.rand_shape()
    await tb.load(*tb.rand_params())
    B = min(2, tb.p["MAX_BATCH"])
    xs, es = tb.rand_batch(B, h, w, pad)
    lr = tb.rand_lr()
    tb.queue_batch(xs, es, pad, lr)
    run = cocotb.start_soon(tb.run_batch(B, h, w, pad, lr))
    # the first BWD op opens the mini-batch (a load between FWD 0 and BWD 0 would be taken)
    await wait_until(dut.clk, lambda: int(dut.bwd_busy.value) == 1, DEFAULT_CYCLES, "bwd_busy never rose")
    w2, b2 = tb.rand_params()
    n0, m0 = tb.sw[0].sent, tb.sbias[0].sent
    for o in range(tb.S_OC):
        for c in range(tb.S_IC):
            tb.sw[0].append((pack_lanes(w2[o, c].reshape(-1), tb.W), 0))
    for bb in (b2[::-1].copy(), b2):
        tb.sbias[0].append((pack_lanes(bb, tb.W), 1))
    await ClockCycles(dut.clk, 8)
    assert tb.sw[0].sent == n0 and tb.sbias[0].sent == m0, "a load was taken while a mini-batch is open"
    await run
    await tb.wait_counts(f=B, b=B)
    await wait_until(dut.clk, lambda: tb.sw[0].sent >= n0 + tb.S_OC * tb.S_IC and tb.sbias[0].sent >= m0 + 2,
                     DEFAULT_CYCLES, "s_axis_w/s_axis_b: load not taken once the node is idle")
    tb.w, tb.b = np.asarray(w2, dtype=np.int64), np.asarray(b2, dtype=np.int64)
    xs, es = tb.rand_batch(1, h, w, pad)
    lr = tb.rand_lr()
    tb.queue_batch(xs, es, pad, lr)
    await tb.run_batch(1, h, w, pad, lr)
    await tb.finish()


@sim_test(timeout_us={"default": 40, "*": 160})  # measured 3.5 us on default
async def checker_catches_corruption(dut):
    """Negative test: a corrupted expected activation, a corrupted expected input error, a
    corrupted expected updated filter word and a dropped expectation each make the
    scoreboard fail."""
    tb = NodeTB(dut)
    await tb.reset()
    await tb.load(*tb.rand_params())
    for k, (q, flip) in enumerate(((tb.exp_act, 1), (tb.exp_ein[0], 1 << (tb.W - 1)), (tb.exp_pw[0], 2))):
        xs, es = tb.rand_batch(1, 3, 3, 1)
        tb.queue_batch(xs, es, 1, 1, relu=False)
        d, last = q[0]
        q[0] = (d ^ flip, last)
        await tb.run_batch(1, 3, 3, 1, 1, False, "seq")
        await ClockCycles(dut.clk, 5)
        assert tb.sb.mismatches == k + 1, f"corruption {k} not detected ({tb.sb.mismatches})"
    with pytest.raises(AssertionError):
        tb.sb.check()
    tb.sb.errors = tb.sb.mismatches = 0
    xs, es = tb.rand_batch(1, 3, 3, 1)
    tb.queue_batch(xs, es, 1, 1)
    tb.exp_pb[0].pop()
    await tb.run_batch(1, 3, 3, 1, 1, True, "seq")
    await ClockCycles(dut.clk, 5)
    assert tb.sb.errors == 1, "extra output not detected"
    tb.sb.errors = 0
    tb.exp_act.append((123, 1))
    with pytest.raises(AssertionError, match="never received"):
        tb.sb.check()


@sim_test(timeout_us={"default": 70, "b32": 1200, "*": 280})  # measured 11.7 us on default
async def bench_throughput(dut):
    """Benchmark (held to verif/bench_limits.py): one node on its own (a chain of one) runs a
    maximum-size mini-batch under the ``stream`` schedule (every start as soon as the node
    takes it), no bubbles, always-ready sinks: cycles per sample of the whole batch and in
    steady state (pad K//2, the issue's 8x8 pad 1 on default) against H*W, and the
    idle-stage fraction of FP, EB and PG over the whole batch (pad 0) and, issue 16's
    measure, after the first sample (pad K//2) (the chained system: verif/fpdeep_node_chain)."""
    tb = NodeTB(dut)
    await tb.reset()
    await tb.load(*tb.rand_params())
    rec = {f"pad{pad}": await tb.measure_idle(pad) for pad in (0, tb.K // 2)}
    await tb.finish()
    p0, p1 = rec["pad0"], rec[f"pad{tb.K // 2}"]
    out = record_bench(CORE, map=f"{tb.p['MAX_HEIGHT']}x{tb.p['MAX_WIDTH']}", samples=p0["samples"],
                       cycles_per_sample=p0["cycles_per_sample"], ideal=p0["ideal_cycles_per_sample"],
                       steady_cycles_per_sample=p1["steady_cycles_per_sample"],
                       idle_fp=p0["idle_fp"], idle_eb=p0["idle_eb"], idle_pg=p0["idle_pg"],
                       **{k: p1[k] for k in ("idle_after_first_fp", "idle_after_first_eb", "idle_after_first_pg")},
                       runs=rec)
    dut._log.info("bench: %s", out)


# ---------------------------------------------------------------- pytest launchers
# "b32" (32x32 map, 16-sample mini-batch) is a bench shape: make bench (verif/bench.py, every
# catalog config) runs its bench_throughput; the functional suite runs on default and k2
BENCH_ONLY = ("b32",)


@pytest.mark.parametrize("cfg,sim", [q for q in matrix(CORE, quick=[("default", "verilator"), ("k2", "icarus")])
                                     if q.values[0] not in BENCH_ONLY])
def test_fpdeep_node(cfg, sim):
    run_core(CORE, cfg, sim)


@pytest.mark.parametrize("given,param", [({"K": 1}, "K"), ({"S_IC": 0}, "S_IC"), ({"MAX_BATCH": 0}, "MAX_BATCH"),
                                         ({"MAX_WIDTH": 2000}, "MAX_WIDTH"), ({"W": 8, "F": 8}, "F"),
                                         ({"PSUM_W": 16}, "PSUM_W")])
def test_fpdeep_node_invalid_parameters(given, param):
    with pytest.raises(ParamError, match=param):
        get(CORE).resolve(given)


# bus protocol checkers (scoreboards/protocol.py) on every AXI4-Stream/AXI4/AXI4-Lite port
# of the toplevel, attached before each cocotb test; its violations must be zero at the end
from scoreboards.protocol import guard_tests  # noqa: E402

guard_tests(globals())
