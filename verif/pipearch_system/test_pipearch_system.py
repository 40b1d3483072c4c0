"""pipearch_system: UNITS PipeArch processing units sharing one memory through the AXI4
arbiter, one AXI4-Lite host slave.

One cocotbext-axi ``AxiRam`` (random stalls on every AXI channel) is the shared memory;
one ``AxiLiteMaster`` is the host.  Each unit's register block (0x100*u) is reached
through a ``Unit`` view that behaves like ``verif/pipearch_pu``'s ``PU`` (same ``run``,
``put``, ``get``), so every job is compared exactly as in the pipearch_pu testbench:
whole job memory and PC trace against the ISS (``golden/pipearch_iss.py``), the model
against the independent golden training function.  Jobs of different units live in
disjoint areas of the one memory (``job.base``).

A bus monitor on the shared AXI4 port attributes every R beat to a unit by the RID's top
bits and every W beat by AW order, feeds AR/AW grants with the units' requests
(``dbg_ar_req``/``dbg_aw_req``) to ``scoreboards/rr_fairness.py``, and its counts are
compared with the system block's RD_BEATS/WR_BEATS registers.
"""
from __future__ import annotations

import cocotb
import numpy as np
import pytest
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, ReadOnly, RisingEdge
from cocotbext.axi import AxiBus, AxiLiteBus, AxiLiteMaster, AxiRam, AxiResp

from golden import pipearch_isa as I
from scoreboards.gates import Gate
from scoreboards.rr_fairness import RoundRobinChecker
from scoreboards.waits import within
from verif.harness import CLOCK_NS, dut_params, matrix, run_core
from verif.pipearch_system import covermodel as funcov
from verif.pipearch_pu.test_pipearch_pu import (AXIL_CYCLES, PU, cfg_of, check_run, compare_mem,
                                                 iss_for, lrmf_case, model_of, scd_case, sgd_case,
                                                 yield_pcs)
from verif.tb_common import record_bench, sim_seed, sim_test

CORE = "pipearch_system"
SYS = 0xF00
SYS_ID, REG_ID, REG_UNITS, REG_CYCLES, REG_RD, REG_WR = 0x50415359, 0x00, 0x04, 0x08, 0x10, 0x30
STRIDE = 0x10000          # bytes of memory per unit's job
MAX_WAIT = 3_000_000


class BitView:
    """``.value`` of bit ``bit`` of a vector signal (a one-bit view for ``PU`` helpers)."""

    def __init__(self, sig, bit):
        self.sig, self.bit = sig, bit

    @property
    def value(self):
        return (int(self.sig.value) >> self.bit) & 1


class Unit(PU):
    """Unit ``u`` of the system seen as a pipearch_pu: its register block at 0x100*u, the
    shared memory, its PC trace and beat counts from the system monitor."""

    def __init__(self, tb, u):  # noqa: super().__init__ would build its own bus models
        self.tb, self.u, self.base = tb, u, 0x100 * u
        self.prefix = f"unit{u} "
        self.ram, self.axil = tb.ram, tb.axil
        self.trace, self.busy_cycles = [], 0
        self.r_beats = self.w_beats = 0          # since the start of the test
        self.r_since = self.w_since = 0          # since the last reset (RD/WR_BEATS)

    def sig(self, name):
        assert name == "busy", name
        return BitView(self.tb.dut.busy, self.u)

    async def wr(self, addr, value):
        await super().wr(self.base + addr, value)

    async def run(self, job, switch_at=None):
        res = await super().run(job, switch_at=switch_at)
        funcov.sample_unit_run(self, job, res[0])   # functional coverage (covermodel.py)
        return res

    async def rd(self, addr):
        return await super().rd(self.base + addr)


class SysTB:
    def __init__(self, dut, mem_p=0.75, mem_bytes=1 << 20):
        self.dut = dut
        self.p = dut_params()
        self.cfg = cfg_of(self.p)
        self.L, self.U, self.idw = self.p["LANES"], self.p["UNITS"], self.p["ID_W"]
        self.seed = sim_seed()
        self.rng = np.random.default_rng(self.seed)
        dut._log.info("seed=%d params=%s", self.seed, self.p)
        self.clk = dut.clk
        self.mem_bytes, self.mem_p = mem_bytes, mem_p
        cocotb.start_soon(Clock(dut.clk, CLOCK_NS, unit="ns").start())
        self.units: list[Unit] = []
        self.ar_chk = RoundRobinChecker(self.U, "AR")
        self.aw_chk = RoundRobinChecker(self.U, "AW")
        self.fc = funcov.Sampler()
        self.cycle = 0
        self.busy_first = [None] * self.U
        self.busy_last = [None] * self.U
        self.beat_errors: list[str] = []

    async def reset(self):
        d = self.dut
        d.rst.value = 1
        await ClockCycles(self.clk, 3)
        if not self.units:
            self.ram = AxiRam(AxiBus.from_prefix(d, "m_axi"), self.clk, d.rst, size=self.mem_bytes)
            self.axil = AxiLiteMaster(AxiLiteBus.from_prefix(d, "s_axil"), self.clk, d.rst)
            self.set_mem_pause(self.mem_p)
            self.units = [Unit(self, u) for u in range(self.U)]
            self.pu = self.units[0]
            cocotb.start_soon(self._monitor())
            await ClockCycles(self.clk, 2)
        d.rst.value = 0
        await RisingEdge(self.clk)

    def set_mem_pause(self, p, per_channel=None):
        """Accept probability ``p`` on every memory channel (1.0: no stalls), or per
        channel from ``per_channel`` {"ar"|"r"|"aw"|"w"|"b": p}."""
        chans = {"ar": self.ram.read_if.ar_channel, "r": self.ram.read_if.r_channel,
                 "aw": self.ram.write_if.aw_channel, "w": self.ram.write_if.w_channel,
                 "b": self.ram.write_if.b_channel}
        for i, (name, ch) in enumerate(chans.items()):
            q = (per_channel or {}).get(name, p)
            if q >= 1.0:
                ch.set_pause_generator(None)
            else:
                gt = Gate(self.seed * 41 + i, q, max_run=6)
                ch.set_pause_generator(iter(lambda gt=gt: not gt.next(), None))

    def hold_aw_for_contention(self, p, hold=200, until=4):
        """Memory AW acceptance that makes AW contention happen: while exactly one unit
        requests an AW (``dbg_aw_req``) the memory withholds AWREADY for up to ``hold``
        cycles, so a second unit reaching its write burst meanwhile competes for the grant;
        otherwise (and after ``until`` releases with several units requesting) a random
        gate of acceptance ``p``.  Bounded: never more than ``hold`` cycles per request."""
        gt = Gate(self.seed * 41 + 2, p, max_run=6)
        d = self.dut

        def gen():
            waited, episodes, prev = 0, 0, 0
            while True:
                n = bin(int(d.dbg_aw_req.value)).count("1")
                episodes += n > 1 and prev <= 1     # several units now wait at AW
                prev = n
                if n == 1 and waited < hold and episodes < until:
                    waited += 1
                    yield True                    # pause: AWREADY low
                    continue
                if n != 1:
                    waited = 0
                yield not gt.next()
        self.ram.write_if.aw_channel.set_pause_generator(gen())

    def unit_of_id(self, v):
        return int(v) >> self.idw

    async def _monitor(self):
        d = self.dut
        aw_order = []
        U = self.U
        while True:
            await RisingEdge(self.clk)
            await ReadOnly()
            self.cycle += 1
            if int(d.rst.value):
                aw_order.clear()
                self.ar_chk.reset()
                self.aw_chk.reset()
                for un in self.units:
                    un.r_since = un.w_since = 0
                continue
            fetch, pcs, busy = int(d.dbg_fetch.value), int(d.dbg_pc.value), int(d.busy.value)
            self.fc.busy(busy)
            for u in range(U):
                if fetch >> u & 1:
                    self.units[u].trace.append(pcs >> (8 * u) & 0xFF)
                if busy >> u & 1:
                    self.units[u].busy_cycles += 1
                    if self.busy_first[u] is None:
                        self.busy_first[u] = self.cycle
                    self.busy_last[u] = self.cycle
            if int(d.m_axi_arvalid.value) and int(d.m_axi_arready.value):
                req = int(d.dbg_ar_req.value)
                self.ar_chk.grant(self.cycle, self.unit_of_id(d.m_axi_arid.value),
                                  [u for u in range(U) if req >> u & 1])
                self.fc.grant("ar", self.unit_of_id(d.m_axi_arid.value), req)
            if int(d.m_axi_awvalid.value) and int(d.m_axi_awready.value):
                req = int(d.dbg_aw_req.value)
                g = self.unit_of_id(d.m_axi_awid.value)
                self.aw_chk.grant(self.cycle, g, [u for u in range(U) if req >> u & 1])
                self.fc.grant("aw", g, req)
                aw_order.append(g)
            if int(d.m_axi_rvalid.value) and int(d.m_axi_rready.value):
                u = self.unit_of_id(d.m_axi_rid.value)
                if u >= U:
                    self.beat_errors.append(f"cycle {self.cycle}: R beat with RID for unit {u}")
                else:
                    self.units[u].r_beats += 1
                    self.units[u].r_since += 1
            if int(d.m_axi_wvalid.value) and int(d.m_axi_wready.value):
                if U == 1:
                    # one unit: the arbiter is a wire-through and the unit's W may lead its
                    # AW handshake (legal AXI4); with several units the arbiter releases a
                    # burst's W only after its AW, so a W without an AW is an error there
                    self.units[0].w_beats += 1
                    self.units[0].w_since += 1
                elif not aw_order:
                    self.beat_errors.append(f"cycle {self.cycle}: W beat without an AW")
                else:
                    u = aw_order[0]
                    self.units[u].w_beats += 1
                    self.units[u].w_since += 1
                    if int(d.m_axi_wlast.value):
                        aw_order.pop(0)

    async def rd(self, addr):
        return await within(self.axil.read_dword(addr), AXIL_CYCLES,
                            f"s_axil: read 0x{addr:x} got no response (AR/R)")

    async def wr(self, addr, value):
        await within(self.axil.write_dword(addr, value), AXIL_CYCLES,
                     f"s_axil: write 0x{addr:x} got no response (AW/W/B)")

    async def check_beat_registers(self):
        """RD_BEATS/WR_BEATS of every unit equal the monitor's counts since reset (read
        with the memory idle), RD/WR_BEATS of absent units read 0."""
        for u in range(8):
            rd, wr = await self.rd(SYS + REG_RD + 4 * u), await self.rd(SYS + REG_WR + 4 * u)
            want = (self.units[u].r_since, self.units[u].w_since) if u < self.U else (0, 0)
            assert (rd, wr) == want, f"unit {u}: RD_BEATS/WR_BEATS {(rd, wr)}, monitor {want}"

    def check_bus(self):
        assert not self.beat_errors, self.beat_errors[:3]
        self.ar_chk.check()
        self.aw_chk.check()


# ------------------------------------------------------------------ jobs
def make_case(tb, kind, u, **kw):
    """A job of ``kind`` placed at unit ``u``'s memory area."""
    base = u * STRIDE
    if kind == "sgd_stream":
        c = sgd_case(tb.cfg, tb.rng, loss="logistic", m=16, partition=4, epochs=2, base=base, **kw)
    elif kind == "sgd_block":
        c = sgd_case(tb.cfg, tb.rng, loss="ridge", m=16, partition=8, epochs=2, base=base,
                     stream=False, **kw)
    elif kind == "scd":
        c = scd_case(tb.cfg, tb.rng, loss="lasso", m=16, n=5, epochs=2, partition=8, base=base)
    elif kind == "lrmf":
        c = lrmf_case(tb.cfg, tb.rng, epochs=2, base=base)
    else:
        raise ValueError(kind)
    job = c[0]
    assert job.base == base and job.end <= base + STRIDE <= tb.mem_bytes, (kind, job.end)
    return c


def cases_for_all(tb, kinds=("sgd_stream", "scd", "lrmf", "sgd_block")):
    out = []
    for u in range(tb.U):
        kind = kinds[u % len(kinds)]
        try:
            job, mem, gold = make_case(tb, kind, u)
        except ValueError as e:             # the configuration cannot hold this program
            tb.dut._log.info("unit %d: %s rejected (%s); SGD instead", u, kind, e)
            kind = "sgd_block"
            job, mem, gold = make_case(tb, kind, u)
        out.append((tb.units[u], job, mem, gold, f"unit{u} {kind}"))
    return out


async def run_concurrently(tb, cases):
    """Place every job, START them all (each unit polled by its own coroutine) and wait
    for all; then compare each with its stand-alone ISS run and the golden model.
    Returns {unit: cycles of its run (the unit's CYCLES register)}."""
    for unit, job, mem, _, _ in cases:
        unit.put(mem, job.base, job.end)
    tasks = [cocotb.start_soon(unit.run(job)) for unit, job, _, _, _ in cases]
    res = []
    for t in tasks:
        res.append(await t)
    cyc = {}
    for (unit, job, mem, gold, tag), (st, err, trace, c) in zip(cases, res):
        imem = mem.copy()
        r = job.start(iss_for(tb, imem))
        check_run(tag, st, err, trace, r, "finished")
        got = unit.get(job.end)
        compare_mem(tag, got, imem, job.base, job.end)
        g = gold()
        mdl = model_of(job, got)
        assert np.array_equal(mdl, g), f"{tag}: model differs from the golden run"
        cyc[unit.u] = c
    return cyc


# ------------------------------------------------------------------ tests
@sim_test(timeout_us={"default": 300, "*": 900})  # measured 61.9 us on default
async def concurrent_programs(dut):
    """Every unit runs a different program (streamed SGD, SCD, LRMF, blocking SGD, ...)
    at the same time on the one memory with random stalls on every channel: each ends
    equal to its stand-alone ISS run (whole job memory, PC trace, STATUS) and the golden
    model; round-robin holds on AR and AW; RD/WR_BEATS equal the bus monitor."""
    tb = SysTB(dut)
    await tb.reset()
    cases = cases_for_all(tb)
    cyc = await run_concurrently(tb, cases)
    dut._log.info("cycles per unit %s; R beats %s; W beats %s", cyc,
                  [un.r_beats for un in tb.units], [un.w_beats for un in tb.units])
    await tb.check_beat_registers()
    for un in tb.units:
        assert un.r_beats > 0 and un.w_beats > 0, f"unit {un.u}: no memory traffic seen"
    tb.check_bus()
    # a second round on the same units (state left by the first must not matter)
    cases = cases_for_all(tb, kinds=("scd", "sgd_block", "sgd_stream", "lrmf"))
    await run_concurrently(tb, cases)
    await tb.check_beat_registers()
    tb.check_bus()


@sim_test(timeout_us={"default": 120, "*": 360})  # measured 13.5 us on default
async def fairness_saturated(dut):
    """All units stream the same bandwidth-heavy SGD job (long model, slow memory) at
    once: every AR/AW grant obeys round-robin (a unit waiting at a grant is served before
    the granted unit is served again; two grants in a row with every unit requesting go
    to consecutive units, i.e. one burst per unit per round; at least 4*UNITS grants are
    made with every unit requesting, so the check has contention to judge), every unit
    reads the same number of beats (RD_BEATS equal to the monitor's), and the results
    stay exact."""
    tb = SysTB(dut)
    await tb.reset()
    # the address channels are the bottleneck (the memory takes an AR/AW in about one
    # cycle of six), so the units queue their bursts and compete for every grant
    tb.set_mem_pause(0.75, {"ar": 0.15, "aw": 0.15})
    # write bursts are few (the model at the end of each epoch): AWREADY is withheld while a
    # single unit requests, so the units' write bursts also meet at the AW grant
    tb.hold_aw_for_contention(0.15)
    d = min(tb.cfg.max_dim, 16, (tb.cfg.depth // 3) - 1)
    cases = []
    for u in range(tb.U):
        job, mem, gold = sgd_case(tb.cfg, tb.rng, loss="ridge", m=8, n=d * tb.L, epochs=1,
                                  partition=4, base=u * STRIDE)
        cases.append((tb.units[u], job, mem, gold, f"unit{u} sgd D={d}"))
    g0, w0 = len(tb.ar_chk.grants), len(tb.aw_chk.grants)
    r0 = [un.r_beats for un in tb.units]
    await run_concurrently(tb, cases)
    tb.check_bus()
    full = frozenset(range(tb.U))
    for chk, g in ((tb.ar_chk, tb.ar_chk.grants[g0:]), (tb.aw_chk, tb.aw_chk.grants[w0:])):
        breaks = chk.rotation_breaks(g)
        assert not breaks, f"{len(breaks)} grant(s) out of round-robin order; first: {breaks[0]}"
    contended = [j for _, j, req in tb.ar_chk.grants[g0:] if req == full]
    counts = [contended.count(u) for u in range(tb.U)]
    dut._log.info("AR grants with every unit requesting: %s (of %d AR grants)", counts,
                  len(tb.ar_chk.grants) - g0)
    aw_contended = [j for _, j, req in tb.aw_chk.grants[w0:] if req - {j}]
    dut._log.info("AW grants with another unit requesting: %d (of %d AW grants)", len(aw_contended),
                  len(tb.aw_chk.grants) - w0)
    if tb.U > 1:
        assert len(contended) >= 4 * tb.U, f"too few contended AR grants to judge fairness: {counts}"
        assert aw_contended, "no AW grant with another unit requesting: AW round-robin not judged"
    beats = [un.r_beats - b for un, b in zip(tb.units, r0)]
    assert len(set(beats)) == 1, f"identical jobs read different beat counts {beats}"
    await tb.check_beat_registers()


@sim_test(timeout_us={"default": 200, "*": 600})  # measured 36.7 us on default
async def migrate_between_units(dut):
    """A streamed SGD job is suspended at a yield (CTRL.SWITCH at a random time) on one
    unit and resumed from its context on the next unit, around all units, until it
    finishes; meanwhile the other units run jobs of their own.  Every suspension matches
    the ISS suspended at the same yield; the end equals an uninterrupted golden run."""
    tb = SysTB(dut)
    await tb.reset()
    job, mem, gold = make_case(tb, "sgd_stream", 0)
    tb.units[0].put(mem, job.base, job.end)
    imem = mem.copy()
    iss = iss_for(tb, imem)
    cur, moves = 0, 0
    for start in range(60):
        un = tb.units[cur]
        st, err, trace, _ = await un.run(job, switch_at=int(tb.rng.integers(20, 600)))
        if st & I.ST_SUSPENDED:
            k = sum(1 for pc in trace if pc in yield_pcs(job))
            r = job.start(iss, switch_at_yield=k)
            check_run(f"unit{cur} start {start}", st, err, trace, r, "suspended")
            compare_mem(f"unit{cur} start {start}", un.get(job.end), imem, job.base, job.end)
            cur, moves = (cur + 1) % tb.U, moves + 1
            continue
        r = job.start(iss)
        check_run(f"unit{cur} start {start}", st, err, trace, r, "finished")
        break
    else:
        raise AssertionError("job did not finish after 60 starts")
    assert moves >= 1, "no suspension happened"
    got = tb.units[cur].get(job.end)
    compare_mem("after migration", got, imem, job.base, job.end)
    assert np.array_equal(model_of(job, got), gold()), "migrated run differs from the golden run"
    dut._log.info("suspensions=%d, finished on unit %d", moves, cur)
    tb.check_bus()


@sim_test(timeout_us={"default": 200, "*": 600})  # measured 40.8 us on default
async def reset_mid_run(dut):
    """Reset at a seeded random cycle while every unit runs a job (bursts of several
    units in flight under memory stalls): every unit's busy low and STATUS, ERROR,
    CYCLES 0; the system block's RD/WR_BEATS 0 and CYCLES restarted; no AXI beat for 300
    cycles.  Then the host rewrites the memory and all jobs run again to exact results."""
    tb = SysTB(dut)
    await tb.reset()
    cases = cases_for_all(tb)
    for unit, job, mem, _, _ in cases:
        unit.put(mem, job.base, job.end)
        await unit.wr(I.REG_PROG_LO, job.prog_addr)
        await unit.wr(I.REG_CTX_LO, job.ctx_addr)
        await unit.wr(I.REG_CTRL, I.CTRL_START)
    at = int(tb.rng.integers(20, 500))
    dut._log.info("reset %d cycles after the STARTs", at)
    await ClockCycles(tb.clk, at)
    assert int(dut.busy.value) == (1 << tb.U) - 1, f"busy {int(dut.busy.value):#x} before the reset"
    dut.rst.value = 1
    await ClockCycles(tb.clk, 3)
    dut.rst.value = 0
    await RisingEdge(tb.clk)
    beats = [(un.r_beats, un.w_beats) for un in tb.units]
    await ClockCycles(tb.clk, 300)
    assert int(dut.busy.value) == 0, "busy after the reset"
    assert [(un.r_beats, un.w_beats) for un in tb.units] == beats, "AXI beats after the reset"
    for un in tb.units:
        regs = {n: await un.rd(a) for n, a in (("STATUS", I.REG_STATUS), ("ERROR", I.REG_ERROR),
                                               ("CYCLES_LO", I.REG_CYCLES_LO))}
        assert regs == dict(STATUS=0, ERROR=0, CYCLES_LO=0), f"unit {un.u} after the reset: {regs}"
    cyc = await tb.rd(SYS + REG_CYCLES)
    assert 300 <= cyc < 300 + 20 * AXIL_CYCLES, f"CYCLES {cyc} after the reset"
    await tb.check_beat_registers()     # all 0: nothing moved since the reset
    assert all(un.r_since == 0 and un.w_since == 0 for un in tb.units)
    await run_concurrently(tb, cases)
    await tb.check_beat_registers()
    tb.check_bus()


@sim_test(timeout_us={"default": 40, "*": 120})  # measured 4.4 us on default
async def register_decode(dut):
    """Every unit's register block answers at 0x100*u and only there (distinct values
    written to each unit's PROG_LO/CTX_LO read back from that unit alone); the system
    block reads ID, UNITS, a running CYCLES and RD/WR_BEATS 0 after reset (0 for absent
    units); unknown offsets (unit-less blocks, gaps of the system block, a unit's unused
    offset) read 0 with OKAY and writes there (and to the read-only system block) change
    nothing."""
    tb = SysTB(dut)
    await tb.reset()
    U = tb.U
    vals = {u: (0x1000 * (u + 1) + 0x40, 0x2000 * (u + 1) + 0x80) for u in range(U)}
    for u, (pl, cl) in vals.items():
        await tb.units[u].wr(I.REG_PROG_LO, pl)
        await tb.units[u].wr(I.REG_CTX_LO, cl)

    async def check_units(tag):
        cfgs = set()
        for u, (pl, cl) in vals.items():
            got = (await tb.units[u].rd(I.REG_PROG_LO), await tb.units[u].rd(I.REG_CTX_LO))
            assert got == (pl, cl), f"{tag}: unit {u} PROG_LO/CTX_LO {got}, wrote {(pl, cl)}"
            cfgs.add(await tb.units[u].rd(I.REG_CONFIG))
        assert len(cfgs) == 1 and 0 not in cfgs, f"{tag}: CONFIG of the units {cfgs}"

    await check_units("after writes")
    assert await tb.rd(SYS + REG_ID) == SYS_ID
    assert await tb.rd(SYS + REG_UNITS) == U
    c0 = await tb.rd(SYS + REG_CYCLES)
    await ClockCycles(tb.clk, 100)
    c1 = await tb.rd(SYS + REG_CYCLES)
    assert c1 - c0 >= 100, f"CYCLES {c0} -> {c1} over 100+ cycles"
    await tb.check_beat_registers()
    unknown = [SYS + 0x0C, SYS + 0x50, SYS + 0xFC, 0x0FC, 0xE00, 0x800 + 0x10]
    unknown += [0x100 * u for u in range(U, 8)] + [0x100 * U + I.REG_PROG_LO] if U < 8 else []
    for a in unknown:
        r = await within(tb.axil.read(a, 4), AXIL_CYCLES, f"read 0x{a:x}")
        assert r.resp == AxiResp.OKAY and bytes(r.data) == bytes(4), \
            f"unknown offset 0x{a:03x}: resp {r.resp} data {bytes(r.data).hex()}"
        w = await within(tb.axil.write(a, (0xA5A5A5A5).to_bytes(4, "little")), AXIL_CYCLES,
                         f"write 0x{a:x}")
        assert w.resp == AxiResp.OKAY, f"write 0x{a:03x}: resp {w.resp}"
    for a in (SYS + REG_ID, SYS + REG_UNITS, SYS + REG_RD, SYS + REG_WR):
        await tb.wr(a, 0x5A5A5A5A)
    assert await tb.rd(SYS + REG_ID) == SYS_ID
    assert await tb.rd(SYS + REG_UNITS) == U
    await tb.check_beat_registers()
    await check_units("after writes to unknown offsets")
    for a in unknown:
        assert await tb.rd(a) == 0, f"0x{a:03x} reads nonzero after a write"
    assert int(dut.busy.value) == 0, "a write started a unit"


@sim_test(timeout_us={"default": 150, "*": 450})  # measured 30.1 us on default
async def checkers_can_fail(dut):
    """Negative tests: the memory/trace/model comparisons, the beat-register check and
    the round-robin checker fire on corrupted observations."""
    tb = SysTB(dut)
    await tb.reset()
    cases = cases_for_all(tb, kinds=("sgd_block",))[:1]
    await run_concurrently(tb, cases)
    unit, job, mem, gold, _ = cases[0]
    got = unit.get(job.end)
    bad = got.copy()
    bad.data[job.line("x") * tb.cfg.line_bytes] ^= 1
    with pytest.raises(AssertionError, match="memory differs"):
        compare_mem("neg", bad, got, job.base, job.end)
    assert not np.array_equal(model_of(job, bad), gold())
    r = job.start(iss_for(tb, mem.copy()))
    with pytest.raises(AssertionError, match="PC trace"):
        check_run("neg", I.ST_FINISHED, 0, list(r.pc_trace)[:-1] + [0], r, "finished")
    unit.r_since += 1
    with pytest.raises(AssertionError, match="RD_BEATS"):
        await tb.check_beat_registers()
    unit.r_since -= 1
    c = RoundRobinChecker(3)
    for t, j, req in ((1, 0, [0, 1, 2]), (2, 1, [1, 2]), (3, 0, [0, 2])):
        c.grant(t, j, req)
    with pytest.raises(AssertionError, match="round-robin"):
        c.check()
    r = RoundRobinChecker(3)
    for t, j in ((1, 0), (2, 2)):
        r.grant(t, j, [0, 1, 2])
    assert r.rotation_breaks(), "rotation check missed 0 -> 2 with all requesting"
    tb.check_bus()


# the pipearch_pu coverage programs (verif/pipearch_pu/cov_programs.py) run on every unit
UNIT_SWEEPS = ("sigmoid_sweep", "amem_sweep", "fifo_sweep", "step_sweep", "stall_sweep",
               "every_register", "large_w7")


@sim_test(timeout_us={"default": 4000, "*": 12000})
async def units_directed_sweeps(dut):
    """The pipearch_pu coverage programs (every sigmoid segment; every (region, global
    channel) in amem, FIFO and BRAM-stepping modes; producers stalled on full FIFOs under
    slow memory; every register; saturating w7 operands) on each unit in turn, through the
    system's host slave and shared memory, each against the ISS (whole job memory and PC
    trace, as in pipearch_pu); the bus checks at the end.  Its own launcher (make sim):
    issue 14 code coverage of the flattened units."""
    from verif.pipearch_pu.test_pipearch_pu import run_directed
    tb = SysTB(dut)
    await tb.reset()
    for u in range(tb.U):
        tb.pu = tb.units[u]
        for name in UNIT_SWEEPS:
            tb.set_mem_pause(0.5 if name == "stall_sweep" else tb.mem_p)
            await run_directed(tb, name)
            dut._log.info("unit %d: %s equals the ISS", u, name)
    tb.set_mem_pause(tb.mem_p)
    tb.check_bus()
    await tb.check_beat_registers()


@sim_test(timeout_us={"default": 4000, "*": 12000})
async def units_stall_and_errors(dut):
    """On each unit in turn: every compute subroutine waiting with data in every pipeline
    stage on a full FIFO (cov_programs.stall_deep, slow memory), every undefined opcode
    and every decode-time error class of the register machine's bench (0-2 NOPs before
    it: Error with ERR_PC/ERR_CODE and the PC trace equal to the ISS and the class's
    code).  Its own launcher (make sim): issue 14 code coverage of the flattened units."""
    from verif.pipearch_pu.cov_programs import bad_instruction, bad_opcode, undefined_opcodes
    from verif.pipearch_pu.test_pipearch_pu import run_directed
    from verif.pipearch_rm.test_pipearch_rm import bad_instrs
    tb = SysTB(dut)
    await tb.reset()
    cases = [(f"opcode {op}", (op << I.OP_SHIFT, 0, 0, 0, 0, 0, 0, 0), I.E_OPCODE)
             for op in undefined_opcodes()] + list(bad_instrs(tb))
    assert len({code for _, _, code in cases}) >= 6, cases
    for u in range(tb.U):
        pu = tb.pu = tb.units[u]
        tb.set_mem_pause(0.5)
        await run_directed(tb, "stall_deep")
        tb.set_mem_pause(tb.mem_p)
        for k, (name, words, code) in enumerate(cases):
            pc = k % 3
            if code == I.E_OPCODE and name.startswith("opcode"):
                job, mem = bad_opcode(tb.cfg, words[0] >> I.OP_SHIFT, pc)
            else:
                job, mem = bad_instruction(tb.cfg, words, pc, name="bad")
            pu.put(mem, 0, job.end)
            st, err, trace, _ = await pu.run(job)
            r = job.start(iss_for(tb, mem.copy()))
            assert r.error and (r.err_pc, r.err_code) == (pc, code), \
                f"unit {u} {name}: ISS {r.status} {r.err_code} at {r.err_pc}"
            assert st & I.ST_ERROR and not st & I.ST_BUSY, f"unit {u} {name}: STATUS {st:#x}"
            assert (err & 0xFF, err >> 8 & 0xFF) == (pc, code), \
                f"unit {u} {name}: ERROR {err >> 8 & 0xFF} at PC {err & 0xFF}, expected {code} at {pc}"
            assert trace == list(r.pc_trace), f"unit {u} {name}: PC trace {trace} != ISS {list(r.pc_trace)}"
        dut._log.info("unit %d: stall_deep and %d error programs equal to the ISS", u, len(cases))
    tb.check_bus()


async def aggregate_bandwidth(tb, k, d):
    """Bytes read+written per cycle by ``k`` units streaming SGD at once (model of ``d``
    lines): total R and W beats times the line size over the cycles from the first unit
    busy to the last unit idle."""
    cases = []
    for u in range(k):
        job, mem, gold = sgd_case(tb.cfg, tb.rng, loss="ridge", m=32, n=d * tb.L, epochs=1,
                                  partition=4, base=u * STRIDE)
        cases.append((tb.units[u], job, mem, gold, f"bench k={k} unit{u}"))
    tb.busy_first, tb.busy_last = [None] * tb.U, [None] * tb.U
    b0 = [(un.r_beats, un.w_beats) for un in tb.units]
    await run_concurrently(tb, cases)
    rb = sum(un.r_beats - b[0] for un, b in zip(tb.units, b0))
    wb = sum(un.w_beats - b[1] for un, b in zip(tb.units, b0))
    span = max(x for x in tb.busy_last[:k]) - min(x for x in tb.busy_first[:k]) + 1
    return round(rb * tb.cfg.line_bytes / span, 3), round(wb * tb.cfg.line_bytes / span, 3), span


@sim_test(timeout_us={"default": 300, "*": 900})  # measured 56.7 us on default
async def bench_throughput(dut):
    """``make bench``: aggregate bytes per cycle (read, write) with 1, 2, 4 units (up to
    UNITS) streaming ridge SGD at once, memory without stalls; every run also checked
    against the ISS and the golden model."""
    tb = SysTB(dut, mem_p=1.0)
    await tb.reset()
    d = min(tb.cfg.max_dim, 32, (tb.cfg.depth // 3) - 1)
    rec = {}
    for k in (1, 2, 4):
        if k > tb.U:
            continue
        r, w, span = await aggregate_bandwidth(tb, k, d)
        dut._log.info("%d unit(s): read %.3f B/cycle, write %.3f B/cycle over %d cycles", k, r, w, span)
        rec[f"read_bytes_per_cycle_u{k}"] = r
        rec[f"write_bytes_per_cycle_u{k}"] = w
    tb.check_bus()
    rec["speedup_read_u2"] = round(rec["read_bytes_per_cycle_u2"] / rec["read_bytes_per_cycle_u1"], 3) \
        if "read_bytes_per_cycle_u2" in rec else None
    record_bench(CORE, unit="byte", model_lines=d, peak_bytes_per_cycle=tb.cfg.line_bytes,
                 **{k: v for k, v in rec.items() if v is not None})


# ------------------------------------------------------------------ pytest launchers
GHDL_VERILOG_ONLY = {
    "bench_throughput": "a benchmark (make bench runs it on Verilator); its runs are also "
                        "checked on Verilator and Icarus"}


# cocotb tests run by their own launcher only (not in every row of the matrix)
OWN_LAUNCHER = {
    "units_directed_sweeps": "the pipearch_pu coverage programs on every unit (minutes of "
                             "simulation): default-verilator only, test_pipearch_system_unit_sweeps",
    "units_stall_and_errors": "stall and error programs on every unit: the same launcher"}


def row_testcase(sim: str) -> str:
    """The cocotb tests of a matrix row: all but OWN_LAUNCHER (and GHDL_VERILOG_ONLY on GHDL)."""
    names = [n for n, v in globals().items() if type(v).__name__ == "TestGenerator"]
    unknown = sorted(set(OWN_LAUNCHER) - set(names))
    assert not unknown, f"OWN_LAUNCHER names no cocotb test: {unknown}"
    drop = set(OWN_LAUNCHER) | (set(GHDL_VERILOG_ONLY) if sim == "ghdl" else set())
    keep = [n for n in names if n not in drop]
    clash = [(x, k) for x in drop for k in keep if x.endswith(k)]
    assert not clash, f"an excluded test would still match: {clash}"
    return ",".join(keep)


@pytest.mark.parametrize("cfg,sim", matrix(CORE, quick=[("default", "verilator")]))
def test_pipearch_system(cfg, sim):
    run_core(CORE, cfg, sim, testcase=row_testcase(sim))


@pytest.mark.slow
def test_pipearch_system_unit_sweeps():
    # one simulation per test (each within the core's wall budget: 554 s for the stall and
    # error programs on a -O0 coverage build under a load of 18), one build (tag sweeps)
    for name in OWN_LAUNCHER:
        run_core(CORE, "default", "verilator", testcase=name, tag="sweeps")


# bus protocol checkers (scoreboards/protocol.py) on every AXI4-Stream/AXI4/AXI4-Lite port
# of the toplevel, attached before each cocotb test; its violations must be zero at the end
from scoreboards.protocol import guard_tests  # noqa: E402

guard_tests(globals())
