"""Chained system test: N committed ``fpdeep_node`` netlists (ip/fpdeep_node, default
parameters) in a 1-D chain that splits the input channels of one conv layer (ICP).

The wrapper (``chain_verilog(N)``, written into build/ at test time; a testbench-only
composition, not a catalog core) instantiates node 0..N-1:

    forward:  node i m_axis_psum_out -> link -> node i+1 s_axis_psum_in; node 0 is
              cfg_first, node N-1 cfg_last and drives m_axis_act (bias, ReLU)
    backward: s_axis_berr -> node N-1 -> link -> node N-2 ... -> node 0 (cfg_bend);
              every node's EB gives the errors of its input channels on n<i>_m_axis_ein
    per node: parameter load (n<i>_s_axis_w/_b), readback (n<i>_m_axis_pw/_pb), pixels
              of its channel slice (n<i>_s_axis_pix), status

Every link is a register slice (verif/fpdeep_node_chain/fpdeep_chain_link.v) whose
``stall`` bit the testbench drives at random: random backpressure on every chain port.
Checks: the forward output equals ``relu(golden.conv.forward)`` of the whole layer, each
node's input errors equal its slice of ``golden.conv.backprop_error``, and after each
mini-batch each node's parameters equal ``golden.conv.pg_minibatch`` on its slice (=
``golden.conv.update`` with the full layer's ``param_gradient``) bit for bit.
"""
from __future__ import annotations

import os

import cocotb
import pytest
from cocotb.triggers import ClockCycles, ReadOnly, RisingEdge

from rtl_gen.common.core import IP_DIR, REPO
from rtl_gen.fpdeep.fpdeep_node import ports_of
from rtl_gen.registry import get
from verif.fpdeep_node.node_tb import NodeTB
from verif.harness import BUILD, run_top
from verif.tb_common import record_bench, sim_test, start_while_busy

NAME = "fpdeep_node_chain"
NODE = "fpdeep_node"
SHARED_IN = ("fwd_start", "bwd_start", "cfg_width", "cfg_height", "cfg_pad", "cfg_relu", "cfg_fsample",
             "cfg_bsample", "cfg_batch", "cfg_lr")
PER_NODE = ("s_axis_w", "s_axis_b", "m_axis_pw", "m_axis_pb", "s_axis_pix", "m_axis_ein")
STATUS = ("fwd_busy", "fwd_done", "bwd_busy", "bwd_done", "cfg_err", "row_err", "psum_err", "stage_busy")


def chain_verilog(n: int, p: dict) -> str:
    """The wrapper of ``n`` nodes (ports named after the node's port list)."""
    ports = {q.name: q for q in ports_of(p)}

    def rng(w):
        return "" if int(w) == 1 else f"[{int(w) - 1}:0] "

    def decl(direction, name, w):
        return f"    {'input ' if direction == 'in' else 'output'} wire {rng(w)}{name}"

    io = [decl("in", "clk", 1), decl("in", "rst", 1), decl("in", "stall", 2 * (n - 1))]
    io += [decl("in", s, ports[s].width) for s in SHARED_IN]
    # per-node BWD start, OR-ed with the shared bwd_start (the stream schedule of the bench
    # starts each node's next BWD op as soon as that node is free, as each controller of a
    # 1-D array of separate devices would); the other schedules leave it low
    io += [decl("in", f"n{i}_bwd_go", 1) for i in range(n)]
    for s in ("s_axis_berr", "m_axis_act"):
        for suf in ("tdata", "tvalid", "tready", "tlast"):
            q = ports[f"{s}_{suf}"]
            io.append(decl(q.direction, q.name, q.width))
    for i in range(n):
        for s in STATUS:
            io.append(decl("out", f"n{i}_{s}", ports[s].width))
        for s in PER_NODE:
            for suf in ("tdata", "tvalid", "tready", "tlast"):
                if f"{s}_{suf}" in ports:
                    q = ports[f"{s}_{suf}"]
                    io.append(decl(q.direction, f"n{i}_{q.name}", q.width))
    body = []
    psw, ew = int(ports["s_axis_psum_in_tdata"].width), int(ports["s_axis_berr_tdata"].width)
    for i in range(n):
        for kind, w in (("ps", psw), ("be", ew)):      # node i's chain outputs and inputs
            for d in ("o", "i"):
                body.append(f"    wire [{w - 1}:0] {kind}{d}{i}_d; wire {kind}{d}{i}_v, {kind}{d}{i}_r, {kind}{d}{i}_l;")
        body.append(f"    wire [{int(ports['m_axis_act_tdata'].width) - 1}:0] act{i}_d; "
                    f"wire act{i}_v, act{i}_r, act{i}_l;")
    for i in range(n - 1):   # psum: node i -> node i+1 (stall[i]); errors: node i+1 -> node i (stall[n-1+i])
        body.append(f"    fpdeep_chain_link #(.DW({psw})) lps{i} (.clk(clk), .rst(rst), .stall(stall[{i}]), "
                    f".s_tdata(pso{i}_d), .s_tvalid(pso{i}_v), .s_tready(pso{i}_r), .s_tlast(pso{i}_l), "
                    f".m_tdata(psi{i + 1}_d), .m_tvalid(psi{i + 1}_v), .m_tready(psi{i + 1}_r), .m_tlast(psi{i + 1}_l));")
        body.append(f"    fpdeep_chain_link #(.DW({ew})) lbe{i} (.clk(clk), .rst(rst), .stall(stall[{n - 1 + i}]), "
                    f".s_tdata(beo{i + 1}_d), .s_tvalid(beo{i + 1}_v), .s_tready(beo{i + 1}_r), .s_tlast(beo{i + 1}_l), "
                    f".m_tdata(bei{i}_d), .m_tvalid(bei{i}_v), .m_tready(bei{i}_r), .m_tlast(bei{i}_l));")
    body += [f"    assign psi0_d = {psw}'d0; assign psi0_v = 1'b0; assign psi0_l = 1'b0;",
             f"    assign pso{n - 1}_r = 1'b1;",
             "    assign beo0_r = 1'b1;",
             f"    assign bei{n - 1}_d = s_axis_berr_tdata; assign bei{n - 1}_v = s_axis_berr_tvalid; "
             f"assign s_axis_berr_tready = bei{n - 1}_r; assign bei{n - 1}_l = s_axis_berr_tlast;",
             f"    assign m_axis_act_tdata = act{n - 1}_d; assign m_axis_act_tvalid = act{n - 1}_v; "
             f"assign act{n - 1}_r = m_axis_act_tready; assign m_axis_act_tlast = act{n - 1}_l;"]
    for i in range(n - 1):
        body.append(f"    assign act{i}_r = 1'b1;")
    for i in range(n):
        conn = [".clk(clk)", ".rst(rst)"] + [f".{s}({s} | n{i}_bwd_go)" if s == "bwd_start" else f".{s}({s})"
                                              for s in SHARED_IN]
        conn += [f".cfg_first(1'b{int(i == 0)})", f".cfg_last(1'b{int(i == n - 1)})", f".cfg_bend(1'b{int(i == 0)})"]
        conn += [f".{s}(n{i}_{s})" for s in STATUS]
        for s in PER_NODE:
            for suf in ("tdata", "tvalid", "tready", "tlast"):
                if f"{s}_{suf}" in ports:
                    conn.append(f".{s}_{suf}(n{i}_{s}_{suf})")
        for port, sig in (("s_axis_psum_in", f"psi{i}"), ("m_axis_psum_out", f"pso{i}"),
                          ("s_axis_berr", f"bei{i}"), ("m_axis_berr", f"beo{i}"), ("m_axis_act", f"act{i}")):
            conn += [f".{port}_tdata({sig}_d)", f".{port}_tvalid({sig}_v)", f".{port}_tready({sig}_r)",
                     f".{port}_tlast({sig}_l)"]
        body.append(f"    {NODE} node{i} (\n        " + ",\n        ".join(conn) + ");")
    return ("// Generated by verif/fpdeep_node_chain/test_fpdeep_node_chain.py (chain_verilog); testbench only.\n"
            "`timescale 1ns/1ps\n"
            f"module {NAME} (\n" + ",\n".join(io) + "\n);\n" + "\n".join(body) + "\nendmodule\n")


def n_nodes() -> int:
    return int(os.environ["DUT_CFG"].lstrip("n"))


def corner_shape(tb):
    """The smallest map: 1 x 1 with the least padding that fits the K x K window, so the
    output is 1 x 1 when K is odd (width/height minimum, out_1x1/out_w1/out_h1 corners)."""
    return 1, 1, tb.valid_pads(1, 1)[0]


async def train(dut, batches=2, stall_p=0.3, src_p=0.7, sink_p=0.6, corrupt=False, shapes=None):
    tb = NodeTB(dut, n_nodes(), src_p=src_p, sink_p=sink_p, stall_p=stall_p)
    await tb.reset()
    scheds = ["overlap", "seq", "fwd_first"]
    for k in range(batches):
        h, w, pad = (shapes or {}).get(k, NodeTB.rand_shape)(tb)
        B = int(tb.rng.integers(2, tb.p["MAX_BATCH"] + 1))
        if k == 0:
            await tb.load(*tb.rand_params())
        xs, es = tb.rand_batch(B, h, w, pad)
        lr = tb.rand_lr()
        relu = k % 2 == 0
        tb.queue_batch(xs, es, pad, lr, relu)
        if corrupt:
            d, last = tb.exp_pw[-1][-1]            # the last node's last updated filter
            tb.exp_pw[-1][-1] = (d ^ 1, last)
        dut._log.info("mini-batch %d: B=%d map %dx%d pad %d lr_q %d schedule %s", k, B, h, w, pad, lr,
                      scheds[k % 3])
        await tb.run_batch(B, h, w, pad, lr, relu, scheds[k % 3])
    return tb


@sim_test(timeout_us={"n2": 70, "*": 280})  # measured 10.6 us on n2
async def train_minibatches(dut):
    """Mini-batches of random maps through the chain with random stalls on every chain
    link, source bubbles and sink backpressure; forward output, input errors and updated
    parameters of every node bit-exact; the second mini-batch runs on the updated
    parameters held in the nodes (not reloaded).  The second mini-batch is the 1 x 1 map
    (``corner_shape``: width/height minimum, 1 x 1 output), the others random."""
    tb = await train(dut, batches=3, shapes={1: corner_shape})
    assert (tb.K % 2 == 0) or tb.out_shape(*corner_shape(tb)) == (1, 1), corner_shape(tb)
    await tb.finish()


@sim_test(timeout_us={"n2": 50, "*": 200})  # measured 6.2 us on n2
async def reset_during_minibatch(dut):
    """Reset at a seeded random cycle while a mini-batch runs through the chain (FWD and BWD
    ops overlapping, random link stalls, bubbles, backpressure): every node's busy, done,
    stage_busy and error flags at their reset values, no output valid and nothing emitted
    for a while; then mini-batches from the cleared (zero) parameters and after a reload
    are bit-exact on every node, with nothing of the aborted mini-batch leaking out."""
    tb = NodeTB(dut, n_nodes(), src_p=0.8, sink_p=0.6, stall_p=0.3)
    await tb.reset()
    await tb.load(*tb.rand_params())
    h, w, pad = tb.rand_shape()
    B = int(tb.rng.integers(2, tb.p["MAX_BATCH"] + 1))
    xs, es = tb.rand_batch(B, h, w, pad)
    lr = tb.rand_lr()
    tb.queue_batch(xs, es, pad, lr, True)
    at = int(tb.rng.integers(5, max(6, B * h * w * 2)))
    task = cocotb.start_soon(tb.run_batch(B, h, w, pad, lr, True, "overlap"))
    await ClockCycles(dut.clk, at)
    busy = [int(tb.sig(i, "stage_busy").value) for i in range(tb.N)]
    dut._log.info("reset %d cycles into a %d-sample mini-batch (%dx%d pad %d), stage_busy %s, fwd_done %s, "
                  "bwd_done %s", at, B, h, w, pad, busy, tb.fdone, tb.bdone)
    assert any(busy) and min(tb.bdone) < B, "the mini-batch finished before the reset"
    task.cancel()
    dut.fwd_start.value = 0
    dut.bwd_start.value = 0
    await tb.abort_and_reset()
    outs = ["m_axis_act"] + [f"{tb.pre(i)}{s}" for i in range(tb.N) for s in ("m_axis_ein", "m_axis_pw", "m_axis_pb")]
    for _ in range(60):
        await ReadOnly()
        for i in range(tb.N):
            for s in ("fwd_busy", "bwd_busy", "fwd_done", "bwd_done", "stage_busy", "cfg_err", "row_err",
                      "psum_err"):
                assert int(tb.sig(i, s).value) == 0, f"node {i}: {s} not at its reset value after the reset"
        for o in outs:
            assert int(getattr(dut, f"{o}_tvalid").value) == 0, f"{o} valid after the reset"
        await RisingEdge(dut.clk)
    for k in range(2):
        if k:
            await tb.load(*tb.rand_params())
        h, w, pad = tb.rand_shape()
        B = int(tb.rng.integers(1, tb.p["MAX_BATCH"] + 1))
        xs, es = tb.rand_batch(B, h, w, pad)
        lr = tb.rand_lr()
        tb.queue_batch(xs, es, pad, lr, bool(k))       # the first from the cleared parameters
        await tb.run_batch(B, h, w, pad, lr, bool(k), "overlap")
    await tb.finish()


@sim_test()
async def start_while_busy_ignored(dut):
    """The shared fwd_start / bwd_start pulsed while every node is busy with the op, with
    other shape, batch, learning rate and sample index: every node's ops complete exactly
    as first configured (forward output, input errors and updated parameters bit-exact),
    done counts exact, no error flag; the rest of the mini-batch and a new one work."""
    tb = NodeTB(dut, n_nodes(), src_p=0.7, sink_p=0.6, stall_p=0.3)
    await tb.reset()
    await tb.load(*tb.rand_params())
    h, w = min(tb.p["MAX_HEIGHT"], 5), min(tb.p["MAX_WIDTH"], 5)
    B = min(2, tb.p["MAX_BATCH"])
    xs, es = tb.rand_batch(B, h, w, 1)
    lr = tb.rand_lr()
    tb.queue_batch(xs, es, 1, lr, True)
    fields = dict(width=w, height=h, pad=1, relu=1, batch=B, lr=lr)
    alt = dict(width=tb.K, height=tb.K + 1, pad=0, relu=0, batch=tb.p["MAX_BATCH"], lr=lr + 3)
    fb = [f"n{i}_fwd_busy" for i in range(tb.N)]
    bb = [f"n{i}_bwd_busy" for i in range(tb.N)]
    n = 0
    for s in range(B):
        await tb.start(fwd=s, fields=fields)
        n += await start_while_busy(dut, tb.clk, dict(alt, fsample=(s + 1) % tb.p["MAX_BATCH"]),
                                    start="fwd_start", busy=fb, pulses=2)
        await tb.wait_counts(f=s + 1)
        await tb.start(bwd=s, fields=fields)
        n += await start_while_busy(dut, tb.clk, dict(alt, bsample=(s + 1) % tb.p["MAX_BATCH"]),
                                    start="bwd_start", busy=bb, pulses=2)
        await tb.wait_counts(b=s + 1)
        await ClockCycles(dut.clk, 30)
        assert tb.fdone == [s + 1] * tb.N and tb.bdone == [s + 1] * tb.N, \
            f"done counts fwd {tb.fdone} bwd {tb.bdone} after {s + 1} accepted FWD and BWD ops"
        tb.check_flags()
    dut._log.info("%d starts given while busy", n)
    h, w, pad = tb.rand_shape()
    xs, es = tb.rand_batch(1, h, w, pad)
    lr = tb.rand_lr()
    tb.queue_batch(xs, es, pad, lr, True)
    await tb.run_batch(1, h, w, pad, lr, True, "seq")
    await tb.finish()


@sim_test(timeout_us={"n2": 40, "*": 160})  # measured 3.6 us on n2
async def checker_catches_corruption(dut):
    """Negative test: a one-LSB corruption of an expected updated filter of the last node
    is caught by the scoreboard (one mismatch per mini-batch)."""
    tb = await train(dut, batches=2, stall_p=0.2, src_p=0.9, sink_p=0.9, corrupt=True)
    await ClockCycles(dut.clk, 10)
    assert tb.sb.mismatches == 2, f"corruption not detected ({tb.sb.mismatches})"
    with pytest.raises(AssertionError):
        tb.sb.check()


@sim_test(timeout_us={"n2": 70, "*": 280})  # measured 11.9 us on n2
async def bench_throughput(dut):
    """Benchmark (reported): idle-stage fraction of the chain -- per node and stage (FP, EB,
    PG) the fraction of cycles from the first start to the last done in which the stage has
    no map (FP, EB) or no sample / update (PG) -- and the cycles per sample (whole batch,
    steady state) for one maximum-size mini-batch of MAX_BATCH samples under the ``stream``
    schedule with per-node BWD starts (pad 0 and K//2) and with the shared bwd_start (pad
    K//2, ``pad<K//2>_shared_start``), no stalls, no bubbles, always-ready sinks; every output
    scoreboarded bit-exactly."""
    tb = NodeTB(dut, n_nodes())
    await tb.reset()
    await tb.load(*tb.rand_params())
    h, w, B = tb.p["MAX_HEIGHT"], tb.p["MAX_WIDTH"], tb.p["MAX_BATCH"]
    rec = {f"pad{pad}": await tb.measure_idle(pad) for pad in (0, tb.K // 2)}
    # the same with one shared bwd_start (the next BWD op waits for the slowest node: the
    # error map reaches each node further down the chain 2 cycles later)
    rec[f"pad{tb.K // 2}_shared_start"] = await tb.measure_idle(tb.K // 2, "stream_shared")
    await tb.finish()
    p0, p1 = rec["pad0"], rec[f"pad{tb.K // 2}"]
    out = record_bench(NAME, nodes=tb.N, map=f"{h}x{w}", samples=B, cycles_per_sample=p0["cycles_per_sample"],
                       ideal=p0["ideal_cycles_per_sample"], idle_fp=p0["idle_fp"], idle_eb=p0["idle_eb"],
                       idle_pg=p0["idle_pg"], idle_any_stage=p0["idle_any_stage"],
                       **{k: p1[k] for k in ("idle_after_first_fp", "idle_after_first_eb", "idle_after_first_pg")},
                       runs=rec)
    dut._log.info("bench: %s", out)


# ---------------------------------------------------------------- pytest launchers
def _run(n: int, sim: str, testcase: str | None = None, tag: str | None = None):
    p = get(NODE).resolve({})
    gen = BUILD / "gen" / NAME
    gen.mkdir(parents=True, exist_ok=True)
    top = gen / f"{NAME}_n{n}.v"
    text = chain_verilog(n, p)
    if not top.exists() or top.read_text() != text:
        tmp = top.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(text)
        tmp.replace(top)
    sources = [IP_DIR / NODE / "rtl" / f"{NODE}.v", REPO / "verif" / NAME / "fpdeep_chain_link.v", top]
    args = ["--output-split", "0", "-Wno-fatal"] if sim == "verilator" else []
    return run_top(NAME, NAME, f"n{n}", sim, sources, args, p, testcase=testcase, tag=tag)


@pytest.mark.parametrize("n,sim", [
    pytest.param(2, "verilator", id="n2-verilator"),
    pytest.param(3, "verilator", id="n3-verilator", marks=pytest.mark.slow),
    pytest.param(4, "verilator", id="n4-verilator", marks=pytest.mark.slow),
    pytest.param(2, "icarus", id="n2-icarus", marks=pytest.mark.slow),
    pytest.param(3, "icarus", id="n3-icarus", marks=pytest.mark.slow),
])
def test_fpdeep_node_chain(n, sim):
    _run(n, sim)


# bus protocol checkers (scoreboards/protocol.py) on every AXI4-Stream/AXI4/AXI4-Lite port
# of the toplevel, attached before each cocotb test; its violations must be zero at the end
from scoreboards.protocol import guard_tests  # noqa: E402

guard_tests(globals())
