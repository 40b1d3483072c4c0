"""pipearch_pu: whole PipeArch programs (SGD, SCD, LRMF) on the RTL processing unit.

Every run happens twice, on the DUT and on the instruction-set simulator
(``golden.pipearch_iss.Machine``) with the same memory image:

* DUT: the host is a cocotbext-axi ``AxiLiteMaster``; main memory is a cocotbext-axi
  ``AxiRam`` with random stalls on every AXI channel (latency and backpressure).
* Compared after every run: the whole job memory byte for byte (model, context area),
  the PC trace (``dbg_fetch``/``dbg_pc``) and STATUS/ERROR.  The model is also compared
  with the *independent* bit-true golden training function (``golden.sgd.sgd``,
  ``golden.scd.scd``, ``golden.lrmf.lrmf``), so the check does not rest on the ISS.

Context switches: the host writes CTRL.SWITCH at a random time; the DUT suspends at
the next YIELD, and the ISS is told to suspend at the same YIELD (counted in the DUT's
PC trace).  Resuming (on the same PU, after another job, or -- in ``pipearch_pu_pair`` --
on a second PU) must end with the memory of an uninterrupted run.

cocotb tests (run inside the simulator) and, at the bottom, the pytest launchers.
"""
from __future__ import annotations

import cocotb
import numpy as np
import pytest
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, ReadOnly, RisingEdge
from cocotbext.axi import AxiBus, AxiLiteBus, AxiLiteMaster, AxiRam

from golden import lrmf as lrmf_mod
from golden import pipearch_isa as I
from golden import scd as scd_mod
from golden import sgd as sgd_mod
from golden.pipearch_asm import PUConfig
from golden.pipearch_iss import Machine, Memory
from golden.pipearch_programs import lrmf_job, lrmf_slots, scd_job, sgd_job, stream_regions_ok
from golden.pipearch_region import CONFIGS
from scoreboards import regmap
from scoreboards.gates import Gate
from verif.plots import write_series
from verif.harness import CLOCK_NS, dut_params, ghdl_testcase, matrix, run_core
from verif.pipearch_pu import covermodel as funcov
from verif.tb_common import record_bench, sim_seed, sim_test, stall_message, within

CORE = "pipearch_pu"
MAX_CYCLES = 3_000_000
POLL = 64
AXIL_CYCLES = 10_000  # budget of one AXI4-Lite transaction


def cfg_of(p: dict) -> PUConfig:
    subs = tuple(op for op in I.ALL_SUBROUTINES if p["SUBS"] >> (op - I.LOAD) & 1)
    regions = tuple(CONFIGS[(p["CONFIGS"] >> 2 * r) & 3] for r in range(p["NREGIONS"]))
    return PUConfig(lanes=p["LANES"], f=p["F"], nregions=p["NREGIONS"], depth=p["DEPTH"],
                    amem_depth=p["AMEM_DEPTH"], max_iter=p["MAX_ITER"], max_dim=p["MAX_DIM"],
                    subroutines=subs, region_configs=regions)


class PU:
    """One pipearch_pu instance: host port, memory, PC-trace monitor."""

    def __init__(self, tb, prefix: str, mem_bytes: int, mem_p: float):
        d = tb.dut
        self.tb, self.prefix = tb, prefix
        g = (lambda n: getattr(d, f"{prefix}{n}"))
        self.sig = g
        self.ram = AxiRam(AxiBus.from_prefix(d, f"{prefix}m_axi"), tb.clk, d.rst, size=mem_bytes)
        self.axil = AxiLiteMaster(AxiLiteBus.from_prefix(d, f"{prefix}s_axil"), tb.clk, d.rst)
        self.set_mem_pause(mem_p, tb.seed)
        self.trace = []
        self.busy_cycles = 0
        self.r_beats = 0          # AXI read data beats accepted
        self.w_beats = 0          # AXI write data beats accepted
        cocotb.start_soon(self._monitor())

    def set_mem_pause(self, p, seed):
        chans = [self.ram.read_if.ar_channel, self.ram.read_if.r_channel,
                 self.ram.write_if.aw_channel, self.ram.write_if.w_channel,
                 self.ram.write_if.b_channel]
        for i, ch in enumerate(chans):
            if p >= 1.0:
                ch.set_pause_generator(None)
            else:
                gt = Gate(seed * 37 + i + len(self.prefix), p, max_run=6)
                ch.set_pause_generator(iter(lambda gt=gt: not gt.next(), None))

    async def _monitor(self):
        fetch, pc, busy = self.sig("dbg_fetch"), self.sig("dbg_pc"), self.sig("busy")
        rv, rr = self.sig("m_axi_rvalid"), self.sig("m_axi_rready")
        wv, wr = self.sig("m_axi_wvalid"), self.sig("m_axi_wready")
        while True:
            await RisingEdge(self.tb.clk)
            await ReadOnly()
            if int(fetch.value):
                self.trace.append(int(pc.value))
            if int(busy.value):
                self.busy_cycles += 1
            if int(rv.value) and int(rr.value):
                self.r_beats += 1
            if int(wv.value) and int(wr.value):
                self.w_beats += 1

    async def wr(self, addr, value):
        if addr == RM.CTRL.offset:
            funcov.sample_ctrl(self.sig("busy"), value)
        await within(self.axil.write_dword(addr, value), AXIL_CYCLES,
                     f"{self.prefix}s_axil: write 0x{addr:x} got no response (AW/W/B)")

    async def rd(self, addr):
        return await within(self.axil.read_dword(addr), AXIL_CYCLES,
                            f"{self.prefix}s_axil: read 0x{addr:x} got no response (AR/R)")

    def put(self, mem: Memory, lo=0, hi=None):
        hi = len(mem.data) if hi is None else hi
        self.ram.write(lo, bytes(mem.data[lo:hi]))

    def get(self, nbytes) -> Memory:
        m = Memory(nbytes, self.tb.L)
        m.data[:] = np.frombuffer(self.ram.read(0, nbytes), dtype=np.uint8)
        return m

    async def run(self, job, switch_at=None):
        """START ``job`` and wait for DONE/ERROR.  ``switch_at``: cycle (after START) at
        which the host writes CTRL.SWITCH, or "before" (pending at START).
        Returns (status, error register, trace of this run, cycles)."""
        tb, rm = self.tb, RM
        await self.wr(rm.PROG_LO.offset, job.prog_addr)
        await self.wr(rm.CTX_LO.offset, job.ctx_addr)
        if switch_at == "before":
            await self.wr(rm.CTRL.offset, rm.CTRL.pack(SWITCH=1))
        t0 = len(self.trace)
        await self.wr(rm.CTRL.offset, rm.CTRL.pack(START=1))
        waited = 0
        switched = switch_at in (None, "before")
        while True:
            step = POLL
            if not switched and switch_at - waited < POLL:
                step = max(1, switch_at - waited)
            await ClockCycles(tb.clk, step)
            waited += step
            if not switched and waited >= switch_at:
                await self.wr(rm.CTRL.offset, rm.CTRL.pack(SWITCH=1))
                switched = True
            st = await self.rd(rm.STATUS.offset)
            if st & rm.mask("STATUS", "DONE", "ERROR") and not st & rm.STATUS.BUSY.mask:
                break
            assert waited < MAX_CYCLES, stall_message(f"{job.name}: STATUS without DONE/ERROR", waited,
                                                      "DONE or ERROR", f"STATUS {st:#x}")
        err = await self.rd(rm.ERROR.offset)
        cyc = await self.rd(rm.CYCLES_LO.offset) | (await self.rd(rm.CYCLES_HI.offset)) << 32
        funcov.sample_run(self, job, st, err, self.trace[t0:])   # functional coverage (covermodel.py)
        return st, err, self.trace[t0:], cyc


# host register offsets and fields: the SystemRDL map (rtl_gen/regmaps/pipearch_rm.rdl), the
# source of the datasheet table and of sw/pipearch_pu_regs.h
RM = regmap.load("pipearch_pu")


class TB:
    def __init__(self, dut, mem_p=0.75, prefixes=("",), mem_bytes=1 << 18):
        self.dut = dut
        self.p = dut_params()
        self.cfg = cfg_of(self.p)
        self.L = self.p["LANES"]
        self.seed = sim_seed()
        self.rng = np.random.default_rng(self.seed)
        dut._log.info("seed=%d params=%s", self.seed, self.p)
        self.clk = dut.clk
        self.mem_bytes = mem_bytes
        cocotb.start_soon(Clock(dut.clk, CLOCK_NS, unit="ns").start())
        self.prefixes, self.mem_p = prefixes, mem_p
        self.pus = []

    async def reset(self):
        d = self.dut
        d.rst.value = 1
        await ClockCycles(self.clk, 3)
        if not self.pus:
            self.pus = [PU(self, pre, self.mem_bytes, self.mem_p) for pre in self.prefixes]
            await ClockCycles(self.clk, 2)
        d.rst.value = 0
        await RisingEdge(self.clk)

    @property
    def pu(self):
        return self.pus[0]


# ------------------------------------------------------------------ jobs and golden runs
def sgd_case(cfg, rng, *, loss, m=16, n=6, epochs=2, batch=1, partition=None, base=0,
             context_groups=True, stream=None):
    A = rng.uniform(-1, 1, (m, n))
    w = rng.normal(size=n)
    b = A @ w + 0.05 * rng.normal(size=m) if loss == "ridge" else (A @ w > 0).astype(float)
    order = np.stack([rng.permutation(m) for _ in range(epochs)])
    x0 = rng.uniform(-0.3, 0.3, n)
    kw = dict(m=m, n=n, loss=loss, alpha=0.25, lam2=0.02, epochs=epochs, batch=batch)
    job = sgd_job(**kw, partition=partition, cfg=cfg, base=base, context_groups=context_groups,
                  stream=stream)
    mem = Memory(job.end, cfg.lanes)
    job.load(mem, A, b, order, x0=x0)
    job.order, job.x0 = order, x0
    gold = lambda ep=epochs: sgd_mod.sgd(A, b, loss=loss, alpha=0.25, lam2=0.02, epochs=ep,
                                         order=order[:ep], batch=batch, x0=x0, fmt=cfg.fmt).x
    return job, mem, gold


def scd_case(cfg, rng, *, loss, m=16, n=5, epochs=2, partition=8, base=0, stream=False, interleave=1):
    A = rng.uniform(-1, 1, (m, n))
    w = rng.normal(size=n) * (rng.random(n) < 0.6)
    b = A @ w + 0.05 * rng.normal(size=m) if loss == "lasso" else (A @ w > 0).astype(float)
    co = np.stack([np.stack([rng.permutation(n) for _ in range(m // partition)])
                   for _ in range(epochs)])
    if interleave == 2:              # partition pairs visit the coordinates in one order
        co[:, 1::2] = co[:, 0::2]
    x0 = rng.uniform(-0.3, 0.3, n)
    job = scd_job(m=m, n=n, loss=loss, alpha=0.3, lam1=0.02, epochs=epochs, partition=partition,
                  cfg=cfg, base=base, stream=stream, interleave=interleave)
    mem = Memory(job.end, cfg.lanes)
    job.load(mem, A, b, co, x0=x0)
    gold = lambda ep=epochs: scd_mod.scd(A, b, loss=loss, alpha=0.3, lam1=0.02, epochs=ep,
                                         partition=partition, coord_order=co[:ep], x0=x0,
                                         fmt=cfg.fmt).x
    return job, mem, gold


def lrmf_case(cfg, rng, *, m=6, u=8, d=3, nnz=18, epochs=2, tile=4, base=0):
    flat = rng.choice(m * u, nnz, replace=False)
    rows, cols = flat // u, flat % u
    vals = rng.uniform(-1, 1, nnz)
    M0 = rng.uniform(-0.5, 0.5, (m, d))
    U0 = rng.uniform(-0.5, 0.5, (u, d))
    slots = lrmf_slots(rows, cols, m=m, u=u, tile=tile)
    job = lrmf_job(m=m, u=u, d=d, alpha=0.2, lam=0.01, epochs=epochs, tile=tile, slots=slots,
                   cfg=cfg, base=base)
    mem = Memory(job.end, cfg.lanes)
    job.load(mem, rows, cols, vals, M0=M0, U0=U0)

    def gold(ep=epochs):
        r = lrmf_mod.lrmf(rows, cols, vals, m=m, u=u, d=d, alpha=0.2, lam=0.01, epochs=ep,
                          tile=tile, M0=M0, U0=U0, fmt=cfg.fmt)
        return np.concatenate([r.M.ravel(), r.U.ravel()])
    return job, mem, gold


def model_of(job, mem):
    mdl = job.model(mem)
    if isinstance(mdl, tuple):
        return np.concatenate([np.asarray(x).ravel() for x in mdl])
    return np.asarray(mdl).ravel()


def iss_for(tb, mem: Memory) -> Machine:
    return Machine(tb.cfg, mem)


def yield_pcs(job):
    words = np.frombuffer(job.asm.image[I.HEADER_BYTES:], dtype="<u4").reshape(-1, I.INSTR_WORDS)
    return {i for i, w in enumerate(words) if (int(w[0]) >> I.OP_SHIFT) == I.YIELD}


def check_run(tag, st, err, trace, r, want_status):
    assert not st & I.ST_ERROR, f"{tag}: DUT error {I.ERROR_NAMES.get(err >> 8 & 0xFF)} at PC {err & 0xFF}"
    assert r.status == want_status, f"{tag}: ISS ended {r.status}, expected {want_status}"
    flag = {"finished": I.ST_FINISHED, "suspended": I.ST_SUSPENDED}[want_status]
    assert st & flag, f"{tag}: DUT STATUS {st:#x} lacks {want_status}"
    want = list(r.pc_trace)
    if trace != want:
        first = next((i for i, (a, b) in enumerate(zip(trace, want)) if a != b), min(len(trace), len(want)))
        raise AssertionError(f"{tag}: PC trace differs at fetch {first} "
                             f"(DUT {len(trace)} fetches, ISS {len(want)})")


def compare_mem(tag, got: Memory, want: Memory, lo, hi):
    a, b = got.data[lo:hi], want.data[lo:hi]
    bad = np.flatnonzero(a != b)
    assert bad.size == 0, f"{tag}: memory differs from the ISS at {bad.size} bytes, first at {lo + bad[0]:#x}"


async def run_and_compare(tb, job, mem, gold, tag, switch_at=None):
    """Run ``job`` to the end on the DUT and the ISS; compare; return the DUT memory."""
    pu = tb.pu
    pu.put(mem, 0, job.end)
    imem = mem.copy()
    iss = iss_for(tb, imem)
    st, err, trace, cyc = await pu.run(job, switch_at=switch_at)
    starts = 1
    while True:
        if st & I.ST_SUSPENDED:
            k = sum(1 for pc in trace if pc in yield_pcs(job))
            r = job.start(iss, switch_at_yield=k)
            check_run(f"{tag} start {starts}", st, err, trace, r, "suspended")
            compare_mem(f"{tag} suspended", pu.get(job.end), imem, 0, job.end)
            st, err, trace, c2 = await pu.run(job)
            cyc += c2
            starts += 1
            continue
        r = job.start(iss)
        check_run(f"{tag} start {starts}", st, err, trace, r, "finished")
        break
    got = pu.get(job.end)
    compare_mem(tag, got, imem, 0, job.end)
    g = gold()
    mdl = model_of(job, got)
    assert np.array_equal(mdl, g), f"{tag}: model differs from the golden training run: {np.flatnonzero(mdl != g)[:8]}"
    return got, cyc, starts


# ------------------------------------------------------------------ program tests
@sim_test(timeout_us={"default": 280, "*": 4480})  # measured 63.6 us on default
async def sgd_ridge(dut):
    """Ridge SGD (batch 1, two partitions) on the RTL equals the ISS and golden.sgd: the
    streamed program where the PU's regions allow it (default config), and the blocking
    one; then streamed logistic SGD with a 16-line model."""
    tb = TB(dut)
    await tb.reset()
    streams = [False] + ([True] if stream_regions_ok(tb.cfg) is None else [])
    for stream in streams:
        job, mem, gold = sgd_case(tb.cfg, tb.rng, loss="ridge", partition=8, stream=stream)
        assert job.info["stream"] == stream
        await run_and_compare(tb, job, mem, gold, f"sgd ridge stream={stream}")
    if streams[-1]:
        # a longer model (16 lines at LANES=4) under the same memory stalls: the two-ahead
        # sample prefetch now competes with stalled bursts, and the FIFOs run deeper
        job, mem, gold = sgd_case(tb.cfg, tb.rng, loss="logistic", m=12, n=16 * tb.L,
                                  partition=3, epochs=2)
        assert job.info["stream"]
        await run_and_compare(tb, job, mem, gold, "sgd logistic stream D=16")


@sim_test(timeout_us={"default": 100, "*": 1600})  # measured 19.7 us on default
async def sgd_logistic_minibatch(dut):
    """Logistic SGD with L2, mini-batch 4, equals the ISS and golden.sgd."""
    tb = TB(dut)
    await tb.reset()
    job, mem, gold = sgd_case(tb.cfg, tb.rng, loss="logistic", batch=4, epochs=2)
    await run_and_compare(tb, job, mem, gold, "sgd logistic b4")


async def run_preempted_everywhere(tb, job, mem, gold, tag):
    """Run ``job`` with a SWITCH pending at every START, so it suspends at every YIELD;
    each suspension equals the ISS suspended at the same YIELD and the end equals the
    uninterrupted golden run.  Returns the number of suspensions."""
    pu = tb.pu
    pu.put(mem, 0, job.end)
    imem = mem.copy()
    iss = iss_for(tb, imem)
    for start in range(job.yields_per_epoch * job.epochs + 1):
        st, err, trace, _ = await pu.run(job, switch_at="before")
        if st & I.ST_SUSPENDED:
            r = job.start(iss, switch_at_yield=1)
            check_run(f"{tag} start {start}", st, err, trace, r, "suspended")
            compare_mem(f"{tag} start {start}", pu.get(job.end), imem, 0, job.end)
            continue
        r = job.start(iss)
        check_run(f"{tag} start {start}", st, err, trace, r, "finished")
        break
    else:
        raise AssertionError(f"{tag}: not finished after {start + 1} starts")
    got = pu.get(job.end)
    compare_mem(tag, got, imem, 0, job.end)
    assert np.array_equal(model_of(job, got), gold()), f"{tag}: model differs from the golden run"
    return start


@sim_test(timeout_us={"default": 400, "*": 6400})  # measured 94.8 us on default
async def sgd_minibatch_stream(dut):
    """The streamed mini-batch SGD program (``sgd_job(batch > 1, stream=True)``) equals the
    ISS and golden.sgd under random memory stalls: ridge batch 4 and logistic batch 3
    with a 16-line model (two partitions per epoch), uninterrupted, with a SWITCH at a
    random time, and suspended at every YIELD."""
    tb = TB(dut)
    await tb.reset()
    if stream_regions_ok(tb.cfg) is not None:
        raise AssertionError(f"config {tb.cfg}: the streamed program's regions are missing")
    job, mem, gold = sgd_case(tb.cfg, tb.rng, loss="ridge", m=16, n=6, batch=4, partition=8,
                              stream=True)
    assert job.info["stream"] and job.info["batch"] == 4
    await run_and_compare(tb, job, mem, gold, "mb ridge b4")
    at = int(tb.rng.integers(50, 800))
    _, _, starts = await run_and_compare(tb, job, mem, gold, "mb ridge b4 switched", switch_at=at)
    dut._log.info("switch at %d: %d starts", at, starts)
    job, mem, gold = sgd_case(tb.cfg, tb.rng, loss="logistic", m=12, n=16 * tb.L, batch=3,
                              partition=6, stream=True)
    await run_and_compare(tb, job, mem, gold, "mb logistic b3 D=16")
    n_susp = await run_preempted_everywhere(tb, job, mem, gold, "mb logistic b3 every yield")
    assert n_susp == job.yields_per_epoch * job.epochs, n_susp


@sim_test(timeout_us={"default": 400, "*": 6400})
async def scd_stream(dut):
    """The streamed SCD program (``scd_job(stream=True)``) equals the ISS and golden.scd
    (model and stored z) under random memory stalls: lasso with two partitions, L1
    logistic with a 16-line partition, uninterrupted and suspended at every YIELD."""
    tb = TB(dut)
    await tb.reset()
    job, mem, gold = scd_case(tb.cfg, tb.rng, loss="lasso", stream=True)
    assert job.info["stream"]
    await run_and_compare(tb, job, mem, gold, "scd stream lasso")
    job, mem, gold = scd_case(tb.cfg, tb.rng, loss="logistic", m=16 * tb.L, n=6, partition=8 * tb.L,
                              stream=True)
    await run_and_compare(tb, job, mem, gold, "scd stream logistic Pl=8")
    n_susp = await run_preempted_everywhere(tb, job, mem, gold, "scd stream logistic every yield")
    assert n_susp == job.yields_per_epoch * job.epochs, n_susp


@sim_test(timeout_us={"default": 400, "*": 6400})
async def scd_pair_stream(dut):
    """The streamed SCD program over partition pairs (``scd_job(stream=True,
    interleave=2)``: p's and q's coordinate steps alternate) equals the ISS and golden.scd
    (model and stored z) under random memory stalls: lasso with two pairs, L1 logistic
    with 8-line partitions, uninterrupted and suspended at every YIELD."""
    tb = TB(dut)
    await tb.reset()
    job, mem, gold = scd_case(tb.cfg, tb.rng, loss="lasso", m=32, n=5, partition=8, stream=True,
                              interleave=2)
    assert job.info["interleave"] == 2 and job.yields_per_epoch == 2
    await run_and_compare(tb, job, mem, gold, "scd pair stream lasso")
    job, mem, gold = scd_case(tb.cfg, tb.rng, loss="logistic", m=16 * tb.L, n=6, partition=8 * tb.L,
                              stream=True, interleave=2)
    await run_and_compare(tb, job, mem, gold, "scd pair stream logistic Pl=8")
    n_susp = await run_preempted_everywhere(tb, job, mem, gold, "scd pair stream logistic every yield")
    assert n_susp == job.yields_per_epoch * job.epochs, n_susp


@sim_test(timeout_us={"default": 140, "*": 2240})  # measured 29.1 us on default
async def scd_lasso(dut):
    """Lasso SCD (two partitions) equals the ISS and golden.scd."""
    tb = TB(dut)
    await tb.reset()
    job, mem, gold = scd_case(tb.cfg, tb.rng, loss="lasso")
    await run_and_compare(tb, job, mem, gold, "scd lasso")


@sim_test(timeout_us={"default": 140, "*": 2240})  # measured 29.1 us on default
async def scd_logistic_l1(dut):
    """L1 logistic SCD equals the ISS and golden.scd."""
    tb = TB(dut)
    await tb.reset()
    job, mem, gold = scd_case(tb.cfg, tb.rng, loss="logistic")
    await run_and_compare(tb, job, mem, gold, "scd logistic")


@sim_test(timeout_us={"default": 500, "*": 8000})  # measured 119.5 us on default
async def lrmf(dut):
    """LRMF by tiled alternating SGD equals the ISS and golden.lrmf."""
    tb = TB(dut)
    await tb.reset()
    job, mem, gold = lrmf_case(tb.cfg, tb.rng)
    await run_and_compare(tb, job, mem, gold, "lrmf")


# ------------------------------------------------------------------ context switch
@sim_test(timeout_us={"default": 150, "*": 2400})  # measured 31.6 us on default
async def preempt_and_resume(dut):
    """SWITCH at random times: every suspension and resume matches the ISS at the same
    YIELD, and the final model equals an uninterrupted run (golden)."""
    tb = TB(dut)
    await tb.reset()
    job, mem, gold = sgd_case(tb.cfg, tb.rng, loss="logistic", m=16, partition=4, epochs=2)
    pu = tb.pu
    pu.put(mem, 0, job.end)
    imem = mem.copy()
    iss = iss_for(tb, imem)
    suspensions = 0
    for start in range(40):
        at = int(tb.rng.integers(20, 600))       # the streamed job is ~2000 cycles long
        st, err, trace, _ = await pu.run(job, switch_at=at)
        if st & I.ST_SUSPENDED:
            suspensions += 1
            k = sum(1 for pc in trace if pc in yield_pcs(job))
            r = job.start(iss, switch_at_yield=k)
            check_run(f"start {start}", st, err, trace, r, "suspended")
            compare_mem(f"start {start}", pu.get(job.end), imem, 0, job.end)
            # the pending request was taken: STATUS has no SWITCH_PENDING
            assert not (await pu.rd(I.REG_STATUS)) & I.ST_SWITCH_PENDING
            continue
        # the request came after the last YIELD: it stays pending; clear it with a
        # throw-away YIELD-free check: the ISS must finish too
        r = job.start(iss)
        check_run(f"start {start}", st, err, trace, r, "finished")
        break
    else:
        raise AssertionError("job did not finish after 40 starts")
    assert suspensions >= 1, "no suspension happened: the test did not exercise a context switch"
    got = pu.get(job.end)
    compare_mem("preempted", got, imem, 0, job.end)
    assert np.array_equal(model_of(job, got), gold()), "preempted run differs from the uninterrupted golden run"
    dut._log.info("suspensions=%d", suspensions)


@sim_test(timeout_us={"default": 370, "*": 5920})  # measured 87.5 us on default
async def interleave_two_jobs(dut):
    """Two jobs (ridge SGD and lasso SCD) time-share one PU, switching at every YIELD
    opportunity; both end equal to their golden runs."""
    tb = TB(dut)
    await tb.reset()
    ja, ma, ga = sgd_case(tb.cfg, tb.rng, loss="ridge", partition=4, epochs=2)
    jb, mb, gb = scd_case(tb.cfg, tb.rng, loss="lasso", partition=8, epochs=2, base=ja.end
                          + (-ja.end) % 4096)
    pu = tb.pu
    pu.put(ma, 0, ja.end)
    pu.put(mb, jb.base, jb.end)
    done = {ja.name: False, jb.name + "b": False}
    turns = 0
    jobs = [(ja, ja.name), (jb, jb.name + "b")]
    while not all(done.values()):
        for job, key in jobs:
            if done[key]:
                continue
            st, err, trace, _ = await pu.run(job, switch_at="before")
            assert not st & I.ST_ERROR, f"{key}: error {err:#x}"
            turns += 1
            if st & I.ST_FINISHED:
                done[key] = True
        assert turns < 200
    assert turns > 2, "the jobs did not interleave"
    got = pu.get(jb.end)
    assert np.array_equal(model_of(ja, got), ga()), "SGD job differs after interleaving"
    assert np.array_equal(model_of(jb, got), gb()), "SCD job differs after interleaving"
    # the SWITCH left pending after the last job finished is still pending
    assert (await pu.rd(I.REG_STATUS)) & I.ST_SWITCH_PENDING


@sim_test(timeout_us={"default": 300, "*": 4800})  # measured 68.3 us on default
async def loss_per_epoch(dut):
    """Suspend at every epoch end (SWITCH pending at START, one YIELD per epoch), read
    the model from memory, and record the loss per epoch with the float64 reference."""
    tb = TB(dut)
    await tb.reset()
    epochs = 5
    job, mem, gold = sgd_case(tb.cfg, tb.rng, loss="logistic", m=16, n=6, epochs=epochs,
                              batch=2, partition=16)
    assert job.yields_per_epoch == 1
    pu = tb.pu
    pu.put(mem, 0, job.end)
    losses = []
    for e in range(epochs):
        st, err, _, _ = await pu.run(job, switch_at="before")
        assert st & I.ST_SUSPENDED, f"epoch {e}: STATUS {st:#x}"
        x = model_of(job, pu.get(job.end))
        assert np.array_equal(x, gold(e + 1)), f"epoch {e}: model differs from golden"
        losses.append(job.objective(x))
    st, err, _, _ = await pu.run(job)
    assert st & I.ST_FINISHED
    A, b = job.data
    ref = sgd_mod.sgd(A, b, loss="logistic", alpha=0.25, lam2=0.02, epochs=epochs,
                      order=job.order, batch=2, x0=job.x0).loss
    write_series("pipearch_pu_loss", f"PipeArch-PU logistic SGD + L2 (LANES={tb.L}): RTL vs float64",
                 {"RTL (Q32.16, read from memory)": losses, "float64 reference": list(ref)})
    assert np.allclose(losses, ref, atol=5e-3), (losses, ref)
    assert losses[-1] < losses[0], f"loss did not decrease: {losses}"


# ------------------------------------------------------------------ errors and checkers
@sim_test(timeout_us={"default": 40, "*": 640})  # measured 2.9 us on default
async def illegal_instruction(dut):
    """A malformed instruction stops the PU in Error with the faulting PC (as the ISS)."""
    tb = TB(dut)
    await tb.reset()
    job, mem, _ = sgd_case(tb.cfg, tb.rng, loss="ridge", partition=8)
    # corrupt instruction 5: an unknown opcode
    words = np.frombuffer(bytearray(job.asm.image), dtype="<u4").copy()
    base = I.HEADER_BYTES // 4 + 5 * I.INSTR_WORDS
    words[base] = (0x3F << I.OP_SHIFT)
    mem.write_bytes(job.prog_addr, words.tobytes())
    pu = tb.pu
    pu.put(mem, 0, job.end)
    st, err, trace, _ = await pu.run(job)
    imem = mem.copy()
    r = job.start(iss_for(tb, imem))
    assert r.error and st & I.ST_ERROR, f"STATUS {st:#x}, ISS {r.status}"
    assert (err & 0xFF, err >> 8 & 0xFF) == (r.err_pc, r.err_code) == (5, I.E_OPCODE), (err, r.err_pc, r.err_code)
    assert trace == list(r.pc_trace)


@sim_test(timeout_us={"default": 60, "*": 960})
async def regmap_conformance(dut):
    """The RTL against the SystemRDL map (scoreboards.regmap.check_regmap): reset values
    (CONFIG from this netlist's parameters), undocumented bits read 0, PROG/CTX read back, CTRL
    reads 0, every unknown offset of the 8-bit space reads 0."""
    tb = TB(dut)
    await tb.reset()
    rm = regmap.load("pipearch_pu", tb.p)
    res = await regmap.check_regmap(rm, lambda a: tb.pu.rd(a), tb.pu.wr, tb.rng, len(dut.s_axil_araddr))
    assert res["written"] == 4 and res["unknown_read"] == 64 - len(rm.regs), res
    p = tb.p
    assert await tb.pu.rd(rm.CONFIG.offset) == rm.CONFIG.pack(
        LANES=p["LANES"], NREGIONS=p["NREGIONS"] % 16, LOG2_DEPTH=p["DEPTH"].bit_length() - 1,
        SUBS=p["SUBS"]), "CONFIG does not hold this netlist's parameters"


# ------------------------------------------------------------------ issue 11: corners
async def start_job(pu, job):
    await pu.wr(I.REG_PROG_LO, job.prog_addr)
    await pu.wr(I.REG_CTX_LO, job.ctx_addr)
    await pu.wr(I.REG_CTRL, I.CTRL_START)


async def wait_end(pu, job):
    """Poll STATUS (bounded) until DONE/ERROR with BUSY low; returns STATUS."""
    waited = 0
    while True:
        await ClockCycles(pu.tb.clk, POLL)
        waited += POLL
        st = await pu.rd(I.REG_STATUS)
        if st & (I.ST_DONE | I.ST_ERROR) and not st & I.ST_BUSY:
            return st
        assert waited < MAX_CYCLES, stall_message(f"{job.name}: STATUS without DONE/ERROR", waited,
                                                  "DONE or ERROR", f"STATUS {st:#x}")


async def reset_mid_jobs(tb, runs, at):
    """START each (pu, job, mem) of ``runs``, reset every PU ``at`` cycles later (all of them
    busy, AXI bursts in flight under memory stalls), then check the reset values: ``busy``
    low, STATUS 0 (idle, no DONE/ERROR/SWITCH_PENDING/SUSPENDED/FINISHED, state Idle, PC 0),
    ERROR 0, CYCLES 0, and no AXI beat on any memory port for 300 cycles (nothing of the
    aborted job is still moving)."""
    for pu, job, mem in runs:
        pu.put(mem, 0, job.end)
        await start_job(pu, job)
    await ClockCycles(tb.clk, at)
    for pu, job, _ in runs:
        assert int(pu.sig("busy").value) == 1, f"{pu.prefix}{job.name}: finished before the reset at {at}"
    d = tb.dut
    d.rst.value = 1
    await ClockCycles(tb.clk, 3)
    d.rst.value = 0
    await RisingEdge(tb.clk)
    beats = [(pu.r_beats, pu.w_beats) for pu, _, _ in runs]
    await ClockCycles(tb.clk, 300)
    for (pu, job, _), b in zip(runs, beats):
        assert int(pu.sig("busy").value) == 0, f"{pu.prefix}busy after the reset"
        assert (pu.r_beats, pu.w_beats) == b, f"{pu.prefix}: AXI beats after the reset {b} -> " \
                                              f"{(pu.r_beats, pu.w_beats)}"
        regs = {n: await pu.rd(a) for n, a in (("STATUS", I.REG_STATUS), ("ERROR", I.REG_ERROR),
                                               ("CYCLES_LO", I.REG_CYCLES_LO), ("CYCLES_HI", I.REG_CYCLES_HI))}
        assert regs == dict(STATUS=0, ERROR=0, CYCLES_LO=0, CYCLES_HI=0), \
            f"{pu.prefix}registers after the reset: {regs}"


@sim_test(timeout_us={"default": 180, "*": 2880})  # measured 39.8 us on default
async def reset_during_job(dut):
    """Reset at a seeded random cycle while a streamed SGD job runs (bursts in flight under
    random memory stalls): registers at their reset values and the AXI ports quiet; then
    the host rewrites the job's memory and the same job, and after it an SCD job, run to
    the ISS's memory and PC trace and the golden models exactly."""
    tb = TB(dut)
    await tb.reset()
    job, mem, gold = sgd_case(tb.cfg, tb.rng, loss="logistic", m=16, partition=4, epochs=2)
    at = int(tb.rng.integers(20, 1500))          # the job is ~2000 cycles long
    dut._log.info("reset %d cycles after START", at)
    await reset_mid_jobs(tb, [(tb.pu, job, mem)], at)
    await run_and_compare(tb, job, mem, gold, "sgd after reset")
    job, mem, gold = scd_case(tb.cfg, tb.rng, loss="lasso", m=8, n=4, epochs=1, partition=4)
    await run_and_compare(tb, job, mem, gold, "scd after reset")


@sim_test(timeout_us={"default": 120, "*": 1920})  # measured 23.6 us on default
async def start_while_busy_ignored(dut):
    """CTRL.START written while the PU is busy (the register map: START is accepted only
    when not busy), at seeded random times, also combined with SWITCH-free CLEAR: the job
    runs exactly as started once (PC trace, whole memory and model equal one ISS run from
    START, CYCLES consistent with one run), and the next START works."""
    tb = TB(dut)
    await tb.reset()
    pu = tb.pu
    job, mem, gold = sgd_case(tb.cfg, tb.rng, loss="ridge", m=16, partition=8, epochs=2)
    pu.put(mem, 0, job.end)
    imem = mem.copy()
    t0 = len(pu.trace)
    await start_job(pu, job)
    given = 0
    for k in range(3):
        await ClockCycles(tb.clk, int(tb.rng.integers(5, 150)))
        assert int(pu.sig("busy").value) == 1, "the job finished before the extra START"
        await pu.wr(I.REG_CTRL, I.CTRL_START if k != 1 else I.CTRL_START | I.CTRL_CLEAR)
        given += 1
        assert int(pu.sig("busy").value) == 1, "the job ended at an extra START"
    dut._log.info("%d STARTs written while busy", given)
    st = await wait_end(pu, job)
    trace = pu.trace[t0:]
    r = job.start(iss_for(tb, imem))
    check_run("start while busy", st, await pu.rd(I.REG_ERROR), trace, r, "finished")
    got = pu.get(job.end)
    compare_mem("start while busy", got, imem, 0, job.end)
    assert np.array_equal(model_of(job, got), gold()), "model differs from the golden run"
    assert int(pu.sig("busy").value) == 0
    await ClockCycles(tb.clk, 50)
    assert len(pu.trace) == t0 + len(trace), "fetches after the job ended (a START was kept)"
    job, mem, gold = sgd_case(tb.cfg, tb.rng, loss="logistic", m=8, partition=4, epochs=1)
    await run_and_compare(tb, job, mem, gold, "next start")


def random_case(tb, max_tries=200):
    """A random problem within the configuration's limits (the job builders reject what
    does not fit): SGD ridge/logistic with random m, n, partition, batch, epochs, streamed
    or blocking; SCD lasso/logistic with random m, n, partition; LRMF with random matrix
    size, rank, tile and nonzeros.  Returns (description, job, mem, gold)."""
    rng, cfg, L = tb.rng, tb.cfg, tb.L
    for _ in range(max_tries):
        alg = ["sgd", "sgd", "scd", "lrmf"][int(rng.integers(0, 4))]
        try:
            if alg == "sgd":
                loss = ["ridge", "logistic"][int(rng.integers(0, 2))]
                batch = int(rng.choice([1, 1, 2, 4]))
                P = batch * int(rng.integers(1, 5))
                m = P * int(rng.integers(1, 4))
                n = int(rng.integers(1, min(cfg.max_dim * L, (6 if rng.integers(0, 4) else cfg.max_dim) * L) + 1))
                ep = int(rng.integers(1, 3))
                stream = [None, False][int(rng.integers(0, 2))] if batch == 1 else False
                desc = f"sgd {loss} m={m} n={n} P={P} batch={batch} epochs={ep} stream={stream}"
                job, mem, gold = sgd_case(cfg, rng, loss=loss, m=m, n=n, epochs=ep, batch=batch, partition=P,
                                          stream=stream)
            elif alg == "scd":
                loss = ["lasso", "logistic"][int(rng.integers(0, 2))]
                P = int(rng.integers(1, 9))
                m = P * int(rng.integers(1, 4))
                n = int(rng.integers(1, 9))
                ep = int(rng.integers(1, 3))
                desc = f"scd {loss} m={m} n={n} P={P} epochs={ep}"
                job, mem, gold = scd_case(cfg, rng, loss=loss, m=m, n=n, epochs=ep, partition=P)
            else:
                m, u = int(rng.integers(1, 9)), int(rng.integers(1, 9))
                d = int(rng.integers(1, 2 * L + 1))
                nnz = int(rng.integers(1, min(m * u, 20) + 1))
                tile = int(rng.integers(1, 5))
                ep = int(rng.integers(1, 3))
                desc = f"lrmf m={m} u={u} d={d} nnz={nnz} tile={tile} epochs={ep}"
                job, mem, gold = lrmf_case(cfg, rng, m=m, u=u, d=d, nnz=nnz, epochs=ep, tile=tile)
        except ValueError as e:
            tb.dut._log.info("rejected by the job builder (%s): %s", alg, e)
            continue
        if job.end > tb.mem_bytes:
            continue
        return desc, job, mem, gold
    raise AssertionError(f"no random problem fitted the configuration in {max_tries} draws")


@sim_test(timeout_us={"default": 920, "*": 14720})  # measured 223.0 us on default
async def random_shapes(dut):
    """Random problem shapes and algorithms (``random_case``, seeded) within the
    configuration's limits, each run to the end under random memory stalls: whole job
    memory and PC trace equal the ISS, the model equals the golden training function."""
    tb = TB(dut)
    await tb.reset()
    algs = set()
    for k in range(10):
        desc, job, mem, gold = random_case(tb)
        dut._log.info("case %d: %s", k, desc)
        await run_and_compare(tb, job, mem, gold, f"case {k}: {desc}")
        algs.add(desc.split()[0])
    dut._log.info("algorithms covered: %s", sorted(algs))


@sim_test(timeout_us={"default": 70, "*": 1120})  # measured 10.3 us on default
async def checkers_can_fail(dut):
    """Negative test: the memory, trace and model checks fire on corrupted observations."""
    tb = TB(dut)
    await tb.reset()
    job, mem, gold = sgd_case(tb.cfg, tb.rng, loss="ridge", partition=16, epochs=1)
    got, _, _ = await run_and_compare(tb, job, mem, gold, "baseline")
    bad = got.copy()
    xa = job.line("x") * tb.cfg.line_bytes
    bad.data[xa] ^= 1
    with pytest.raises(AssertionError, match="memory differs"):
        compare_mem("neg", bad, got, 0, job.end)
    imem = mem.copy()
    r = job.start(iss_for(tb, imem))
    with pytest.raises(AssertionError, match="PC trace"):
        check_run("neg", I.ST_FINISHED, 0, list(r.pc_trace)[:-1] + [0], r, "finished")
    assert not np.array_equal(model_of(job, bad), gold())


async def run_directed(tb, name):
    """A directed program of verif/pipearch_pu/cov_programs.py run to the end on the DUT and
    on the ISS: whole job memory and PC trace compared (no training model to check)."""
    from verif.pipearch_pu.cov_programs import BUILDERS
    job, mem = BUILDERS[name](tb.cfg, tb.rng)
    pu = tb.pu
    pu.put(mem, 0, job.end)
    imem = mem.copy()
    st, err, trace, _ = await pu.run(job)
    r = job.start(iss_for(tb, imem))
    check_run(name, st, err, trace, r, "finished")
    got = pu.get(job.end)
    lb = tb.cfg.line_bytes
    bad = [f"{nm} (lines {sorted({int(i) // lb for i in np.flatnonzero(got.data[a * lb:(a + n) * lb] != imem.data[a * lb:(a + n) * lb])})[:8]})"
           for nm, (a, n) in job.areas.items()
           if not np.array_equal(got.data[a * lb:(a + n) * lb], imem.data[a * lb:(a + n) * lb])]
    assert not bad, f"{name}: areas differing from the ISS: {bad[:6]}"
    compare_mem(name, got, imem, 0, job.end)


@sim_test(timeout_us={"default": 60, "*": 960})
async def sigmoid_every_segment(dut):
    """SIGDELTA with the sigmoid on, every lane in every segment of the PWL table and beyond
    both domain ends (cov_programs.sigmoid_sweep), against the ISS."""
    tb = TB(dut)
    await tb.reset()
    await run_directed(tb, "sigmoid_sweep")


@sim_test(timeout_us={"default": 300, "*": 4800})  # measured 74.8 us on default
async def every_channel_amem_and_fifo(dut):
    """Every (region, global channel) in amem mode (an amem LOAD into each channel's address
    memory, then every subroutine gathering/scattering through them) and in FIFO mode
    (every compute subroutine with each channel in a different region's FIFO, each
    rotation), as PU programs (cov_programs.amem_sweep, fifo_sweep), against the ISS."""
    tb = TB(dut)
    await tb.reset()
    await run_directed(tb, "amem_sweep")
    await run_directed(tb, "fifo_sweep")


@sim_test(timeout_us={"default": 300, "*": 4800})  # measured 66.6 us on default
async def every_opcode_and_register(dut):
    """Every undefined opcode stops the PU in Error with E_OPCODE at its PC (0-2 NOPs before
    it); R1-R15 written and read on both ALU ports, SUB and BEQ taken/not taken; each run's
    ERROR, PC trace and memory (context: the registers) against the ISS."""
    from verif.pipearch_pu.cov_programs import bad_opcode, undefined_opcodes
    tb = TB(dut)
    await tb.reset()
    pu = tb.pu
    ops = undefined_opcodes()
    assert len(ops) > 30, ops
    for k, op in enumerate(ops):
        job, mem = bad_opcode(tb.cfg, op, k % 3)
        pu.put(mem, 0, job.end)
        st, err, trace, _ = await pu.run(job)
        r = job.start(iss_for(tb, mem.copy()))
        assert r.error and st & I.ST_ERROR, f"opcode {op}: STATUS {st:#x}, ISS {r.status}"
        assert (err & 0xFF, err >> 8 & 0xFF) == (r.err_pc, r.err_code) == (k % 3, I.E_OPCODE), (op, err)
        assert trace == list(r.pc_trace), f"opcode {op}: PC trace {trace} != ISS {list(r.pc_trace)}"
    await run_directed(tb, "every_register")


@sim_test(timeout_us={"default": 100, "*": 1600})
async def every_decode_error(dut):
    """Every decode-time error class of the register machine's bench
    (verif/pipearch_rm bad_instrs: reserved bits and words, RESUME outside LoadContext,
    branch/JMP targets, fields out of range, rejected access words, vector/scalar
    lengths, absent subroutines where the configuration lacks some, the lowest code
    winning) as a PU program, 0-2 NOPs before it: Error with ERR_PC/ERR_CODE equal to
    the ISS and to the class's code, same PC trace.  The PU's other tests only reach
    E_OPCODE (and E_AXI: axi_error_responses)."""
    from verif.pipearch_pu.cov_programs import bad_instruction
    from verif.pipearch_rm.test_pipearch_rm import bad_instrs
    tb = TB(dut)
    await tb.reset()
    pu = tb.pu
    cases = bad_instrs(tb)
    assert len({code for _, _, code in cases}) >= 6, cases
    for k, (name, words, code) in enumerate(cases):
        pc = k % 3
        job, mem = bad_instruction(tb.cfg, words, pc, name="bad")
        pu.put(mem, 0, job.end)
        st, err, trace, _ = await pu.run(job)
        r = job.start(iss_for(tb, mem.copy()))
        assert r.error and (r.err_pc, r.err_code) == (pc, code), f"{name}: ISS {r.status} {r.err_code} at {r.err_pc}"
        assert st & I.ST_ERROR and not st & I.ST_BUSY, f"{name}: STATUS {st:#x}"
        assert (err & 0xFF, err >> 8 & 0xFF) == (pc, code), \
            f"{name}: ERROR {I.ERROR_NAMES.get(err >> 8 & 0xFF)} at PC {err & 0xFF}, expected {I.ERROR_NAMES[code]} at {pc}"
        assert trace == list(r.pc_trace), f"{name}: PC trace {trace} != ISS {list(r.pc_trace)}"
    dut._log.info("%d decode errors equal to the ISS", len(cases))


def memory_ends_at(pu, limit):
    """The AxiRam answers SLVERR (cocotbext-axi: the access raised) on every read or write
    beat at a byte address >= ``limit``: a main memory of ``limit`` bytes, as the ISS's
    ``Memory(limit)`` (its range error is ``E_AXI``).  Without this the RAM wraps addresses."""
    rd, wr = pu.ram.read_if._read, pu.ram.write_if._write

    async def _read(addr, n):
        if addr + n > limit:
            raise ValueError(f"read at {addr:#x} past the memory end {limit:#x}")
        return await rd(addr, n)

    async def _write(addr, data):
        if addr + len(data) > limit:
            raise ValueError(f"write at {addr:#x} past the memory end {limit:#x}")
        return await wr(addr, data)
    pu.ram.read_if._read, pu.ram.write_if._write = _read, _write


@sim_test(timeout_us={"default": 100, "*": 1600})
async def axi_error_responses(dut):
    """SLVERR on the AXI port: a LOAD or STORE (blocking, and non-blocking then BLOCK) whose
    lines run past the memory end, a program image and a context past the end; each run
    ends in Error with E_AXI at the ISS's PC (the failing instruction, 0 for the program or
    context read), the same PC trace and memory (the first STORE done, nothing after the
    error written); then a good job runs to the end on the same PU."""
    import dataclasses

    from verif.pipearch_pu.cov_programs import AXI_ERROR_CASES, axi_error
    tb = TB(dut)
    await tb.reset()
    pu = tb.pu
    limit = 1 << 16
    memory_ends_at(pu, limit)
    runs = []
    for case in AXI_ERROR_CASES:
        runs.append((case, *axi_error(tb.cfg, tb.rng, limit, case)))
    job, mem = axi_error(tb.cfg, tb.rng, limit, "load")
    runs.append(("program past the end", dataclasses.replace(job, prog_addr=limit), mem))
    runs.append(("context past the end", dataclasses.replace(job, ctx_addr=limit), mem))
    for tag, job, mem in runs:
        full = Memory(limit, tb.L)
        full.data[:job.end] = mem.data[:job.end]
        pu.ram.write(0, bytes(full.data))
        st, err, trace, _ = await pu.run(job)
        r = job.start(iss_for(tb, full))
        assert r.error and r.err_code == I.E_AXI, f"{tag}: ISS ended {r.status} {r.err_code}"
        assert st & I.ST_ERROR and not st & I.ST_BUSY, f"{tag}: STATUS {st:#x}, ISS E_AXI at PC {r.err_pc}"
        assert (err & 0xFF, err >> 8 & 0xFF) == (r.err_pc, I.E_AXI), \
            f"{tag}: ERROR {I.ERROR_NAMES.get(err >> 8 & 0xFF)} at PC {err & 0xFF}, ISS E_AXI at PC {r.err_pc}"
        want = list(r.pc_trace)
        if tag.endswith("_nb"):
            # the ISS runs a subroutine at issue; the PU fetches on after a non-blocking one
            # (two NOPs, then the BLOCK that waits for it) until its error arrives
            k = len(want)
            assert trace[:k] == want and trace[k:] == list(range(r.err_pc + 1, r.err_pc + 1 + len(trace) - k)) \
                and len(trace) - k <= 3, f"{tag}: PC trace {trace}, ISS {want} (+ at most the NOPs and BLOCK)"
        else:
            assert trace == want, f"{tag}: PC trace {trace} != ISS {want}"
        compare_mem(tag, pu.get(limit), full, 0, limit)
        dut._log.info("%s: E_AXI at PC %d as the ISS", tag, r.err_pc)
    job, mem, gold = sgd_case(tb.cfg, tb.rng, loss="ridge", partition=8)
    assert job.end <= limit
    await run_and_compare(tb, job, mem, gold, "sgd after the AXI errors")


@sim_test(timeout_us={"default": 400, "*": 6400})
async def producers_stall_on_full_fifo(dut):
    """Every compute subroutine pushes its results into a full FIFO while a non-blocking
    STORE drains it through slow memory (cov_programs.stall_sweep), against the ISS."""
    tb = TB(dut, mem_p=0.5)
    await tb.reset()
    await run_directed(tb, "stall_sweep")


@sim_test(timeout_us={"default": 600, "*": 9600})
async def producers_wait_in_every_stage(dut):
    """Every compute subroutine produces more results into a full FIFO than the draining
    STORE frees through slow memory, so it waits with data in every pipeline stage (its
    output FIFO full); full-range operands (cov_programs.stall_deep), against the ISS."""
    tb = TB(dut, mem_p=0.5)
    await tb.reset()
    await run_directed(tb, "stall_deep")


@sim_test(timeout_us={"default": 400, "*": 6400})
async def iteration_stepping_every_channel(dut):
    """Two iterations on every (region, global channel) pair in BRAM mode, reads with and
    without keep-count, and LOAD/STORE with two iterations on every region
    (cov_programs.step_sweep), against the ISS (issue 14: each channel module's
    iteration counter)."""
    tb = TB(dut)
    await tb.reset()
    await run_directed(tb, "step_sweep")


@sim_test(timeout_us={"default": 100, "*": 1600})
async def large_w7_saturation(dut):
    """L2REG with c and SCD with alpha*lambda1 of integer part 18..31 on operands near both
    ends of the format (cov_programs.large_w7): saturating products and a threshold above
    every operand, against the ISS."""
    tb = TB(dut)
    await tb.reset()
    await run_directed(tb, "large_w7")


BENCH_P = 4     # samples per partition in the SGD bench (the same for every model size)
BENCH_M = (2 * BENCH_P, 10 * BENCH_P)


def bench_dims(cfg):
    """Model sizes D (lines) for the SGD bench: those the streamed program fits (a ring of
    three D+1-line sample blocks)."""
    return [d for d in (4, 8, 16, 32, 64, 128, 256) if d <= cfg.max_dim and 3 * (d + 1) <= cfg.depth]


async def sgd_cycles_per_sample(tb, stream):
    """Busy cycles per ridge-SGD sample for every model size D (lines): the difference of
    a 40- and an 8-sample run over 32 (partitions of 4, a YIELD each), so setup, the final
    STORE and the pipeline fill cancel.  Returns {D: cycles per sample} and the
    least-squares line c(D) = k*D + c0 over the sizes D >= 16 (k: cycles per model line,
    ideal 1; c0: the constant per sample)."""
    per = {}
    for d in bench_dims(tb.cfg):
        cyc = {}
        for mm in BENCH_M:
            job, mem, gold = sgd_case(tb.cfg, tb.rng, loss="ridge", m=mm, n=d * tb.L, epochs=1,
                                      partition=BENCH_P, stream=stream)
            assert job.info["stream"] == stream
            _, cyc[mm], _ = await run_and_compare(tb, job, mem, gold, f"bench D={d} m={mm}")
        per[d] = (cyc[BENCH_M[1]] - cyc[BENCH_M[0]]) / (BENCH_M[1] - BENCH_M[0])
    big = [d for d in sorted(per) if d >= 16] or sorted(per)
    k, c0 = np.polyfit(np.array(big, dtype=float), np.array([per[d] for d in big]), 1)
    return per, float(k), float(c0)


MB_BATCH = 32   # mini-batch of the streamed mini-batch SGD bench (one partition = one batch)


def mb_stream_dim(cfg):
    """The largest model (lines) the streamed mini-batch program fits on ``cfg``: four
    D+1-line sample blocks and three model vectors per region."""
    return min(cfg.max_dim, cfg.depth // 4 - 1, cfg.depth // 3)


async def minibatch_rates(tb):
    """Streamed mini-batch SGD (ridge, batch ``MB_BATCH``, one YIELD per batch) at the
    largest model the program fits, and the blocking mini-batch program (batch 4, the
    largest partition its regions hold) at the same size: data-stream lines (the D sample
    lines of every sample) per busy cycle and busy cycles per sample, both the difference
    of two runs (setup, the final STORE and the pipeline fill cancel).  Every run is
    checked against the ISS and golden.sgd."""
    d = mb_stream_dim(tb.cfg)
    out = {}
    for tag, stream, batch, ms in (("stream", True, MB_BATCH, (MB_BATCH, 3 * MB_BATCH)),
                                   ("blocking", False, 4, (8, 24))):
        cyc = {}
        for mm in ms:
            job, mem, gold = sgd_case(tb.cfg, tb.rng, loss="ridge", m=mm, n=d * tb.L, epochs=1,
                                      batch=batch, partition=batch, stream=stream)
            assert job.info["stream"] == stream
            _, cyc[mm], _ = await run_and_compare(tb, job, mem, gold, f"bench mb {tag} D={d} m={mm}")
        per = (cyc[ms[1]] - cyc[ms[0]]) / (ms[1] - ms[0])
        out[f"sgd_mb_{tag}_cycles_per_sample"] = round(per, 2)
        out[f"sgd_mb_{tag}_lines_per_cycle"] = round(d / per, 4)
        out[f"sgd_mb_{tag}_batch"] = batch
        tb.dut._log.info("mini-batch SGD %s D=%d batch %d: %.2f cycles/sample, %.4f lines/cycle",
                         tag, d, batch, per, d / per)
    out["sgd_mb_dim_lines"] = d
    return out


def scd_stream_size(cfg):
    """(Pl, n) of the SCD bench: the largest partition column (MAX_DIM lines, within the
    streamed program's DEPTH >= 4 Pl) and 16 coordinates (or what the address memory and
    DEPTH >= n + Pl allow)."""
    pl = min(cfg.max_dim, cfg.depth // 4)
    n = min(16, cfg.amem_depth, cfg.depth - pl)
    return pl, n


async def scd_rates(tb):
    """Lasso SCD, one partition of Pl = ``scd_stream_size`` column lines: column lines (the
    data stream) per busy cycle, streamed and blocking program, from the difference of a
    run over n and over n/2 coordinates (the per-partition loads and stores cancel).  Every
    run is checked against the ISS and golden.scd."""
    pl, n = scd_stream_size(tb.cfg)
    P = pl * tb.L
    out = {}
    for tag, stream in (("stream", True), ("blocking", False)):
        cyc = {}
        for nn in (n // 2, n):
            job, mem, gold = scd_case(tb.cfg, tb.rng, loss="lasso", m=P, n=nn, epochs=1, partition=P,
                                      stream=stream)
            _, cyc[nn], _ = await run_and_compare(tb, job, mem, gold, f"bench scd {tag} Pl={pl} n={nn}")
        per = (cyc[n] - cyc[n // 2]) / (n - n // 2)
        out[f"scd_{tag}_cycles_per_coord"] = round(per, 2)
        out[f"scd_{tag}_lines_per_cycle"] = round(pl / per, 4)
        tb.dut._log.info("SCD %s Pl=%d: %.2f cycles/coordinate, %.4f lines/cycle", tag, pl, per, pl / per)
    out["scd_col_lines"] = pl
    return out


def scd_pair_size(cfg):
    """(Pl, n) of the partition-pair SCD bench: the largest partition column the pair
    program fits (MAX_DIM, DEPTH >= 5 Pl: a ring of five Pl-line column slots) and 16
    coordinates (or what the address memory and DEPTH >= 2 n + 2 Pl allow)."""
    pl = min(cfg.max_dim, cfg.depth // 5)
    n = min(16, cfg.amem_depth, (cfg.depth - 2 * pl) // 2)
    return pl, n


async def scd_pair_rates(tb):
    """Lasso SCD over one partition pair (``interleave=2``), Pl = ``scd_pair_size`` column
    lines per partition: column lines (2 Pl per coordinate step, the data stream) per
    busy cycle, from the difference of a run over n and over n/2 coordinates.  Every run
    is checked against the ISS and golden.scd."""
    pl, n = scd_pair_size(tb.cfg)
    P = pl * tb.L
    cyc = {}
    for nn in (n // 2, n):
        job, mem, gold = scd_case(tb.cfg, tb.rng, loss="lasso", m=2 * P, n=nn, epochs=1, partition=P,
                                  stream=True, interleave=2)
        _, cyc[nn], _ = await run_and_compare(tb, job, mem, gold, f"bench scd pair Pl={pl} n={nn}")
    per = (cyc[n] - cyc[n // 2]) / (n - n // 2)
    tb.dut._log.info("SCD pair stream Pl=%d: %.2f cycles/coordinate pair, %.4f lines/cycle", pl, per,
                     2 * pl / per)
    return {"scd_pair_cycles_per_coord": round(per, 2), "scd_pair_lines_per_cycle": round(2 * pl / per, 4),
            "scd_pair_col_lines": pl}


async def bytes_per_cycle(tb):
    """Main-memory bytes read per busy cycle for SGD, SCD and LRMF."""
    lb = tb.cfg.line_bytes
    d = max(bench_dims(tb.cfg))
    cases = [("sgd", lambda: sgd_case(tb.cfg, tb.rng, loss="ridge", m=8 * BENCH_P, n=d * tb.L, epochs=1,
                                      partition=BENCH_P)),
             ("scd", lambda: scd_case(tb.cfg, tb.rng, loss="lasso", m=32, n=8, epochs=1, partition=16)),
             ("lrmf", lambda: lrmf_case(tb.cfg, tb.rng, d=8, epochs=1))]
    out = {}
    for name, mk in cases:
        job, mem, gold = mk()
        r0 = tb.pu.r_beats
        _, cyc, _ = await run_and_compare(tb, job, mem, gold, f"bench {name}")
        out[name] = round((tb.pu.r_beats - r0) * lb / cyc, 3)
    return out


async def context_switch_cycles(tb):
    """Cycles of a run suspended at its first YIELD and resumed, minus the cycles of the same
    run uninterrupted, by model size (words); the default SGD program (streamed where the
    PU allows: the switch then also drains the pipeline and reloads the next partition)."""
    out = {}
    for n in (16, 64, 256):
        if -(-n // tb.L) > tb.cfg.max_dim:
            continue
        part = BENCH_P if -(-n // tb.L) in bench_dims(tb.cfg) else 1
        job, mem, gold = sgd_case(tb.cfg, tb.rng, loss="ridge", m=2 * part, n=n, epochs=1, partition=part)
        pu = tb.pu
        pu.put(mem, 0, job.end)
        st, _, _, plain = await pu.run(job)
        assert st & I.ST_FINISHED
        pu.put(mem, 0, job.end)
        st, _, _, c1 = await pu.run(job, switch_at="before")
        assert st & I.ST_SUSPENDED
        st, _, _, c2 = await pu.run(job)
        assert st & I.ST_FINISHED
        assert np.array_equal(model_of(job, pu.get(job.end)), gold())
        out[n] = c1 + c2 - plain
    return out


@sim_test(timeout_us={"default": 3470, "*": 55520})  # measured 860.2 us on default
async def bench_throughput(dut):
    """``make bench``: SGD cycles per sample per model line (ideal 1), bytes read per
    cycle for SGD/SCD/LRMF, context-switch cost by model size; memory without stalls.
    Every run is also checked against the ISS and the golden model."""
    tb = TB(dut, mem_p=1.0, mem_bytes=1 << 20)
    await tb.reset()
    rec = {}
    for stream in ([True] if stream_regions_ok(tb.cfg) is None else []) + [False]:
        per, k, c0 = await sgd_cycles_per_sample(tb, stream)
        tag = "stream" if stream else "blocking"
        dmax = max(per)
        rec[f"sgd_{tag}_cycles_per_line"] = round(k, 4)          # least-squares slope, D >= 16
        rec[f"sgd_{tag}_cycles_per_sample_const"] = round(c0, 1)
        rec[f"sgd_{tag}_cycles_per_sample"] = {int(d): round(c, 1) for d, c in per.items()}
        rec[f"sgd_{tag}_ratio_at_D{dmax}"] = round(per[dmax] / dmax, 3)
        dut._log.info("SGD %s: cycles/sample %s; slope %.4f per line + %.1f", tag, per, k, c0)
    rec.update(await minibatch_rates(tb))
    rec.update(await scd_rates(tb))
    rec.update(await scd_pair_rates(tb))
    bpc = await bytes_per_cycle(tb)
    ctx = await context_switch_cycles(tb)
    record_bench(CORE, unit="sample", ideal_cycles_per_line=1.0, **rec,
                 **{f"read_bytes_per_cycle_{k}": v for k, v in bpc.items()},
                 peak_bytes_per_cycle=tb.cfg.line_bytes,
                 **{f"ctx_switch_cycles_n{n}": c for n, c in ctx.items()})


# ------------------------------------------------------------------ pytest launchers
# GHDL (default-ghdl) runs the committed VHDL with every cocotb test except these:
GHDL_VERILOG_ONLY = {
    "bench_throughput": "511 s of the 604 s full GHDL suite measured on the 2-core machine (860 us "
                        "simulated); a benchmark whose runs are also checked on Verilator and Icarus"}


@pytest.mark.parametrize("cfg,sim", matrix(CORE, quick=[("default", "verilator")]))
def test_pipearch_pu(cfg, sim):
    run_core(CORE, cfg, sim, testcase=ghdl_testcase(sim, globals(), GHDL_VERILOG_ONLY))


# bus protocol checkers (scoreboards/protocol.py) on every AXI4-Stream/AXI4/AXI4-Lite port
# of the toplevel, attached before each cocotb test; its violations must be zero at the end
from scoreboards.protocol import guard_tests  # noqa: E402

guard_tests(globals())

