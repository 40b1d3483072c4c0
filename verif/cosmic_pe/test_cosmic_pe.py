"""cosmic_pe: the CoSMIC processing engine against golden.cosmic_pe.PEModel.

Driver: the load port (schedule + buffers), start/cfg_len, and the neighbour/bus inputs
(one random value per instruction, driven in the cycle the instruction samples them).
Monitor: one coroutine watching left/right/bus `*_valid`, `start` and `done` after every
edge; each output becomes a transaction (value, instruction index derived from its cycle),
so the scoreboard checks value *and* fixed timing.  Buffers are read back through the
read-back port into a fourth scoreboard stream.  Checker: scoreboards.FixedScoreboard.

cocotb tests (run inside the simulator) and, at the bottom, the pytest launchers.
"""
from __future__ import annotations

import cocotb
import numpy as np
import pytest
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, Event, FallingEdge, ReadOnly, RisingEdge
from cocotb_bus.monitors import Monitor

from golden import sgd as gsgd
from golden.cosmic_pe import (DONE_OFFSET, ERR_ILLEGAL, ERR_LEN, ERR_NL, HAZARD_DISTANCE, IN_OFFSET,
                              NL_OPS, OPS, OUT_PORTS, Assembler, Instr, PEConfig, PEModel, pad_hazards, sgd_buffers,
                              sgd_step_program)
from golden.fixedpoint import sigmoid_table
from scoreboards.checker import FixedScoreboard, StreamSpec
from verif.harness import CLOCK_NS, dut_params, matrix, run_core
from verif.tb_common import rand_words, record_bench, sim_seed, sim_test, start_while_busy, wait_until
from verif.cosmic_pe import covermodel as fcov

CORE = "cosmic_pe"


class FedMonitor(Monitor):
    """A cocotb-bus monitor fed by the PE monitor coroutine (``feed``)."""

    def __init__(self, name):
        self.name = name
        self._never = Event()
        super().__init__()

    def __str__(self):
        return self.name

    async def _monitor_recv(self):
        await self._never.wait()

    def feed(self, txn):
        self._recv(txn)


class PETB:
    def __init__(self, dut, seed=None):
        self.dut = dut
        self.p = dut_params()
        self.cfg = PEConfig.from_params(self.p)
        self.fmt = self.cfg.fmt
        self.W = self.p["W"]
        self.seed = sim_seed() if seed is None else seed
        self.rng = np.random.default_rng(self.seed)
        dut._log.info("seed=%d params=%s", self.seed, self.p)
        cocotb.start_soon(Clock(dut.clk, CLOCK_NS, unit="ns").start())
        self.sb = FixedScoreboard(dut)
        self.mon = {n: FedMonitor(n) for n in OUT_PORTS + ("buffers",)}
        spec = lambda n: StreamSpec(n, [(n, 1, self.W, self.p["F"])])  # noqa: E731
        self.exp = {n: self.sb.add_stream(m, spec(n)) for n, m in self.mon.items()}
        self.cycle = 0
        self.start_cycle = None
        self.done_cycles = []
        self.started = 0
        self.divert = None    # a list: outputs go there instead of the scoreboard
        for s in ("start", "ld_en", "ld_sel", "ld_addr", "ld_data", "rb_sel", "rb_addr",
                  "left_in", "right_in", "bus_in", "cfg_len"):
            getattr(dut, s).value = 0
        cocotb.start_soon(self._watch())

    async def _watch(self):
        d = self.dut
        valid = {n: getattr(d, f"{n}_out_valid") for n in OUT_PORTS}
        data = {n: getattr(d, f"{n}_out") for n in OUT_PORTS}
        while True:
            await RisingEdge(d.clk)
            await ReadOnly()
            self.cycle += 1
            if not d.rst.value.is_resolvable or not d.done.value.is_resolvable:
                continue   # before the first reset (GHDL starts at 'U')
            for n in OUT_PORTS:
                if int(valid[n].value):
                    fcov.sample_output(n)
                    k = self.cycle - self.start_cycle   # tag: the cycle after the start edge
                    if self.divert is not None:
                        self.divert.append((n, k, int(data[n].value)))
                    else:
                        self.mon[n].feed((int(data[n].value), k))
            if int(d.done.value):
                self.done_cycles.append(self.cycle)
            if int(d.start.value) and not int(d.busy.value):
                self.start_cycle = self.cycle + 1   # cycle 0 begins at the accepting edge
                self.started += 1

    async def reset(self, cycles=3):
        self.dut.rst.value = 1
        await ClockCycles(self.dut.clk, cycles)
        self.dut.rst.value = 0
        await RisingEdge(self.dut.clk)

    async def load(self, sel, words, base=0):
        d = self.dut
        mask = (1 << len(d.ld_data)) - 1
        d.ld_en.value = 1
        d.ld_sel.value = sel
        for i, w in enumerate(words):
            d.ld_addr.value = base + i
            d.ld_data.value = int(w) & mask
            await RisingEdge(d.clk)
        d.ld_en.value = 0

    async def load_buffers(self, data, model, interim):
        for sel, v in ((1, data), (2, model), (3, interim)):
            await self.load(sel, v)

    async def readback(self, sel, depth):
        d = self.dut
        out = []
        d.rb_sel.value = sel
        d.rb_addr.value = 0
        for a in range(depth):
            await RisingEdge(d.clk)
            await FallingEdge(d.clk)
            out.append(int(d.rb_data.value))
            d.rb_addr.value = (a + 1) % depth
        return out

    def random_buffers(self, extreme=0.1):
        return [rand_words(self.rng, self.cfg.depths[c], self.fmt, extreme) for c in (1, 2, 3)]

    async def run(self, words, inputs=None, expect_done=True):
        """Start ``len(words)`` instructions (already loaded), drive the link inputs,
        wait for done; returns the cycle of done relative to the start edge."""
        d = self.dut
        n = len(words)
        m = (1 << self.W) - 1
        ndone = len(self.done_cycles)
        d.cfg_len.value = n
        fcov.sample_start(n, int(d.busy.value), self.cfg.SCHED_DEPTH)
        d.start.value = 1
        await RisingEdge(d.clk)
        d.start.value = 0
        if inputs is not None:
            # instruction k reads the ports in cycle k+IN_OFFSET (its stage 4): drive
            # inputs[k] during exactly that cycle (cycle c begins at the c-th edge after
            # the accepting one)
            for c in range(1, n + IN_OFFSET):
                await RisingEdge(d.clk)
                k = c - IN_OFFSET
                if 0 <= k < n:
                    d.left_in.value = int(inputs[k, 0]) & m
                    d.right_in.value = int(inputs[k, 1]) & m
                    d.bus_in.value = int(inputs[k, 2]) & m
                else:   # not read by any instruction: garbage, to catch a wrong read cycle
                    for s_ in (d.left_in, d.right_in, d.bus_in):
                        s_.value = int(self.rng.integers(0, m + 1))
        await wait_until(d.clk, lambda: len(self.done_cycles) > ndone, n + 50, "done: no pulse",
                         expect=f"done within {n + 50} cycles of start ({n} instructions)")
        fcov.sample_err(int(d.err.value))
        return self.done_cycles[-1] - self.start_cycle

    async def job(self, words, bufs, inputs=None, check_buffers=True):
        """Load, expect (golden), run, read back.  Returns the golden RunResult."""
        cfg = self.cfg
        n = len(words)
        if inputs is None:
            inputs = rand_words(self.rng, (n, 3), self.fmt, 0.1)
        await self.load(0, words)
        await self.load_buffers(*bufs)
        exp = PEModel(cfg, *bufs).run(words, inputs)
        m = (1 << self.W) - 1
        for port in OUT_PORTS:
            for cy, v in exp.out_cycles[port]:
                self.exp[port].append((v & m, cy))
        dc = await self.run(words, inputs)
        assert dc == exp.cycles, f"done in cycle {dc}, expected {exp.cycles}"
        err = int(self.dut.err.value)
        assert err == exp.err, f"err={err:#x}, expected {exp.err:#x}"
        fcov.sample_run(cfg, words, exp)
        if check_buffers:
            await self.check_buffers(exp)
        return exp

    async def check_buffers(self, exp):
        m = (1 << self.W) - 1
        for c in (1, 2, 3):
            got = await self.readback(c, self.cfg.depths[c])
            for a, v in enumerate(exp.buffers[c]):
                self.exp["buffers"].append((int(v) & m, c * 65536 + a))
            for a, v in enumerate(got):
                self.mon["buffers"].feed((v, c * 65536 + a))

    def finish(self):
        self.sb.check()


# ------------------------------------------------------------------ stimulus
def random_program(tb, n, hazard_addrs=4, p_illegal=0.03):
    """Random instructions over a small address pool (dense read-after-write hazards),
    every opcode, every operand source, random outputs; a few illegal or absent-NL words."""
    cfg, rng = tb.cfg, tb.rng
    asm = Assembler(cfg)
    ops = [o for o in OPS if o != "nop"]
    srcs = ["D", "M", "I", "L", "R", "BUS", "ZERO", "ONE"]
    out = []
    for _ in range(n):
        r = rng.random()
        if r < p_illegal:
            out.append(Instr(op=int(rng.integers(14, 16)), src_a=0, wb=int(rng.integers(1, 4)),
                             wa=int(rng.integers(0, 4)), out=7))
            continue
        op = str(rng.choice(ops + ["nop"] * 1))
        if op == "nop":
            out.append(Instr())
            continue
        if op in NL_OPS and not cfg.NL >> NL_OPS[op] & 1:
            if rng.random() < 0.3:
                out.append(Instr(op=OPS[op], src_a=2, ra_i=int(rng.integers(0, 4)), wb=3, wa=1, out=7))
            continue
        addr = {}

        def operand():
            s = str(rng.choice(srcs))
            if s in ("D", "M", "I"):
                a = addr.setdefault(s, int(rng.integers(0, min(hazard_addrs, cfg.depths[{"D": 1, "M": 2, "I": 3}[s]]))))
                return f"{s}{a}"
            return s

        a = operand()
        b = None if op in ("pass", "sigmoid", "gauss", "recip", "log") else operand()
        dst = []
        if rng.random() < 0.8:
            bname = str(rng.choice(["D", "M", "I"]))
            dst.append(f"{bname}{int(rng.integers(0, hazard_addrs))}")
        for port in ("L", "R", "B"):
            if rng.random() < 0.25:
                dst.append(port)
        out.append(asm.instr(op, a, b, dst, clr=(op == "mac" and rng.random() < 0.3)))
    return [i.encode(cfg) for i in out]


def nl_inputs(tb, k):
    """Buffer words spread over the nonlinear domains (and beyond them)."""
    return tb.rng.integers(-20 * tb.fmt.one, 20 * tb.fmt.one, size=k)


# ------------------------------------------------------------------ tests
@sim_test(timeout_us={"default": 310, "*": 2480})  # measured 71.4 us on default
async def random_programs(dut):
    """Random programs with dense hazards (exercising the bypass), link/bus traffic,
    every opcode, illegal and absent-NL words; outputs, timing, err and buffers exact."""
    tb = PETB(dut)
    await tb.reset()
    n = min(tb.cfg.SCHED_DEPTH, 120)
    for rnd in range(4):
        bufs = tb.random_buffers()
        if rnd % 2:
            bufs[2][:4] = nl_inputs(tb, 4)
        await tb.job(random_program(tb, n), bufs)
    assert tb.started == 4
    tb.finish()


@sim_test(timeout_us={"default": 300, "*": 2400})  # measured 69.9 us on default
async def opcode_corners(dut):
    """Every opcode on every pair of corner values (rails, 0, +-1 LSB, +-one); the mac
    chain that saturates the accumulator; nonlinear ops across and beyond their domains."""
    tb = PETB(dut)
    await tb.reset()
    cfg, fmt = tb.cfg, tb.fmt
    corners = [fmt.min_int, fmt.max_int, 0, -1, 1, fmt.one, -fmt.one, fmt.min_int + 1, fmt.max_int - 1]
    nd = min(len(corners), cfg.DATA_DEPTH, cfg.MODEL_DEPTH)
    data = np.zeros(cfg.DATA_DEPTH, dtype=np.int64)
    model = np.zeros(cfg.MODEL_DEPTH, dtype=np.int64)
    data[:nd] = corners[:nd]
    model[:nd] = corners[:nd]
    alu = ["add", "sub", "mul", "mac", "lt", "gt", "min", "max", "pass"]
    asm = Assembler(cfg)
    for i in range(nd):
        for j in range(nd):
            for op in alu:
                b = None if op == "pass" else f"M{j}"
                asm.op(op, f"D{i}", b, dst=["B"], clr=(op == "mac"))
    words = [w.encode(cfg) for w in asm.instrs]
    for s in range(0, len(words), cfg.SCHED_DEPTH):
        await tb.job(words[s:s + cfg.SCHED_DEPTH], [data, model, np.zeros(cfg.INTERIM_DEPTH, dtype=np.int64)],
                     check_buffers=False)
    # accumulator saturation: min*min products until the wide accumulator clips, then back
    k = min(cfg.SCHED_DEPTH - 4, (1 << cfg.ACC_GUARD) * 4 + 8)
    asm = Assembler(cfg).op("mac", "D0", "M0", clr=True)
    for _ in range(k):
        asm.op("mac", "D0", "M0", dst=["B"])
    asm.op("mac", "D1", "M0", dst=["B", "I0"])        # max*min pulls it back from the rail
    asm.op("mac", "D0", "M1", dst=["B", "I1"])
    await tb.job([w.encode(cfg) for w in asm.instrs], [data, model, np.zeros(cfg.INTERIM_DEPTH, dtype=np.int64)])
    # the negative rail: min*max products until the accumulator clips below, then back
    asm = Assembler(cfg).op("mac", "D0", "M1", clr=True)
    for _ in range(k):
        asm.op("mac", "D0", "M1", dst=["B"])
    asm.op("mac", "D0", "M0", dst=["B", "I0"])
    await tb.job([w.encode(cfg) for w in asm.instrs], [data, model, np.zeros(cfg.INTERIM_DEPTH, dtype=np.int64)])
    # nonlinear units over and beyond their domains
    if cfg.NL:
        zs = np.concatenate([nl_inputs(tb, 40), corners])[:cfg.DATA_DEPTH]
        d2 = np.zeros(cfg.DATA_DEPTH, dtype=np.int64)
        d2[:len(zs)] = zs
        asm = Assembler(cfg)
        for name, bit in NL_OPS.items():
            if cfg.NL >> bit & 1:
                for i in range(len(zs)):
                    asm.op(name, f"D{i}", dst=["B"])
        words = [w.encode(cfg) for w in asm.instrs]
        for s in range(0, len(words), cfg.SCHED_DEPTH):
            await tb.job(words[s:s + cfg.SCHED_DEPTH], [d2, model, np.zeros(cfg.INTERIM_DEPTH, dtype=np.int64)],
                         check_buffers=False)
    tb.finish()


@sim_test(timeout_us={"default": 150, "*": 1200})  # measured 31.1 us on default
async def errors_and_bad_length(dut):
    """Illegal opcodes and absent nonlinear functions set the sticky err bits, suppress
    their write-back and outputs, and the program continues; a bad cfg_len is refused."""
    tb = PETB(dut)
    await tb.reset()
    cfg = tb.cfg
    a = Assembler(cfg)
    words = [Instr(op=14, src_a=0, wb=3, wa=0, out=7).encode(cfg),
             a.instr("add", "D0", "ONE", dst=["I1", "B"]).encode(cfg),
             Instr(op=15, src_a=1, wb=2, wa=0, out=7).encode(cfg)]
    missing = [n for n, b in NL_OPS.items() if not cfg.NL >> b & 1]
    for name in missing:
        words.append(Instr(op=OPS[name], src_a=0, wb=3, wa=2, out=7).encode(cfg))
    words.append(a.instr("pass", "I1", dst=["L", "R"]).encode(cfg))
    exp = await tb.job(words, tb.random_buffers())
    assert exp.err == ERR_ILLEGAL | (ERR_NL if missing else 0)
    # err is cleared by the next start
    await tb.job([a.instr("pass", "D0", dst=["B"]).encode(cfg)], tb.random_buffers())
    assert int(dut.err.value) == 0
    # cfg_len 0 and above SCHED_DEPTH: done with err bit 2, nothing runs
    for bad in (0, cfg.SCHED_DEPTH + 1):
        dut.cfg_len.value = bad
        fcov.sample_start(bad, int(dut.busy.value), cfg.SCHED_DEPTH)
        dut.start.value = 1
        await RisingEdge(dut.clk)
        await ReadOnly()
        assert int(dut.done.value) == 1 and int(dut.busy.value) == 0 and int(dut.err.value) == ERR_LEN
        fcov.sample_err(int(dut.err.value))
        await RisingEdge(dut.clk)
        dut.start.value = 0
        await RisingEdge(dut.clk)
    tb.finish()


@sim_test(timeout_us={"default": 750, "*": 6000})  # measured 180.1 us on default
async def hazard_distances(dut):
    """Read-after-write at distances 1..6 through every buffer (bypass in stage 4 with
    BYPASS=1, exposed-pipeline values with BYPASS=0), and a mac chain feeding a consumer."""
    tb = PETB(dut)
    await tb.reset()
    cfg = tb.cfg
    for bname in ("D", "M", "I"):
        for dist in range(1, 7):
            asm = Assembler(cfg).op("add", f"{bname}0", "ONE", dst=[f"{bname}0", "B"])
            asm.nop(dist - 1)
            asm.op("add", f"{bname}0", "ONE", dst=[f"{bname}0", "L"])
            asm.op("add", f"{bname}0", "ONE", dst=[f"{bname}0", "R"])
            await tb.job([w.encode(cfg) for w in asm.instrs], tb.random_buffers(), check_buffers=(dist == 1))
    asm = Assembler(cfg).op("mac", "D0", "M0", clr=True).op("mac", "D1", "M1", dst=["I0"])
    asm.op("add", "I0", "D2", dst=["I0", "B"]).op("mul", "I0", "I0", dst=["B", "M3"])
    await tb.job([w.encode(cfg) for w in asm.instrs], tb.random_buffers())
    tb.finish()


@sim_test(timeout_us={"default": 290, "*": 2320})  # measured 65.5 us on default
async def sgd_step_demo(dut):
    """One PE computes a full SGD step (one sample) of linear (ridge) and, when the
    sigmoid unit is present, logistic regression; the model it writes back equals
    golden.sgd.sgd(epochs=1, one sample) bit for bit (and PEModel, and the bus outputs)."""
    tb = PETB(dut)
    await tb.reset()
    cfg, fmt = tb.cfg, tb.fmt
    n = min(8, cfg.MODEL_DEPTH - 1, cfg.DATA_DEPTH - 2)
    losses = ["ridge"] + (["logistic"] if cfg.NL & 1 else [])
    for loss in losses:
        for trial in range(2):
            A = tb.rng.normal(0, 1, (1, n))
            b = np.array([float(tb.rng.integers(0, 2))]) if loss == "logistic" else tb.rng.normal(0, 1, 1)
            x0 = tb.rng.normal(0, 0.5, n)
            alpha, lam2 = 0.25, 0.05
            res = gsgd.sgd(A, b, loss=loss, alpha=alpha, lam2=lam2, epochs=1, order=[[0]], x0=x0,
                           fmt=fmt, table=sigmoid_table(fmt))
            prog = sgd_step_program(cfg, n, loss == "logistic")
            if not cfg.BYPASS:
                prog = pad_hazards(prog)
            d, m, i = sgd_buffers(fmt, fmt.to_fixed(A[0]), fmt.to_fixed(b[0]), fmt.to_fixed(x0),
                                  fmt.to_fixed(alpha), fmt.to_fixed(2 * alpha * lam2), n)
            bufs = []
            for c, img in ((1, d), (2, m), (3, i)):
                full = np.zeros(cfg.depths[c], dtype=np.int64)
                full[:len(img)] = img
                bufs.append(full)
            words = [w.encode(cfg) for w in prog]
            exp = await tb.job(words, bufs)
            got = await tb.readback(2, n)
            got = [v - (1 << tb.W) if v >> (tb.W - 1) else v for v in got]
            assert got == res.x.tolist(), f"{loss}: PE model {got} != golden.sgd {res.x.tolist()}"
            assert exp.buffers[2][:n].tolist() == res.x.tolist()
            dut._log.info("%s SGD step: %d instructions, x0=%s -> x1=%s", loss, len(words),
                          np.round(x0, 4).tolist(), np.round(fmt.to_float(res.x), 4).tolist())
    tb.finish()


@sim_test(timeout_us={"default": 130, "*": 1040})  # measured 25.2 us on default
async def reset_mid_program(dut):
    """Reset while a program runs: the outputs before the reset are exactly the golden
    prefix, the PE goes idle, outputs stop, and the next job (buffers reloaded) is exact."""
    tb = PETB(dut)
    await tb.reset()
    cfg = tb.cfg
    words = random_program(tb, min(cfg.SCHED_DEPTH, 60), p_illegal=0.0)
    bufs = tb.random_buffers()
    await tb.load(0, words)
    await tb.load_buffers(*bufs)
    exp = PEModel(cfg, *bufs).run(words)   # link inputs stay 0 in this test
    tb.divert = []
    dut.cfg_len.value = len(words)
    dut.start.value = 1
    await RisingEdge(dut.clk)
    dut.start.value = 0
    at = int(tb.rng.integers(1, len(words) + 1))     # seeded random reset cycle within the program
    dut._log.info("reset %d cycles after start", at)
    await ClockCycles(dut.clk, at)
    assert int(dut.busy.value) == 1
    await tb.reset()
    await ReadOnly()
    assert int(dut.busy.value) == 0 and int(dut.err.value) == 0
    assert not any(int(getattr(dut, f"{p}_out_valid").value) for p in OUT_PORTS)
    await RisingEdge(dut.clk)
    got, tb.divert = tb.divert, None
    m = (1 << tb.W) - 1
    want = sorted((n, cy, v & m) for n in OUT_PORTS for cy, v in exp.out_cycles[n] if cy <= at)
    assert sorted(got) == want, f"outputs before reset {sorted(got)} != golden prefix {want}"
    await tb.job(random_program(tb, min(cfg.SCHED_DEPTH, 60)), tb.random_buffers())
    tb.finish()


@sim_test(timeout_us={"default": 150, "*": 1200})  # measured 32.4 us on default
async def start_while_busy_ignored(dut):
    """start pulses with other cfg_len values (1, then the invalid 0) and ld_en writes of
    garbage into the schedule and data buffer while a program runs: the program in flight
    completes exactly as first configured (outputs, done cycle, err and every buffer equal
    the golden run), one done only, and the next legal start works."""
    tb = PETB(dut)
    await tb.reset()
    cfg = tb.cfg
    n = min(cfg.SCHED_DEPTH, 40)
    words = random_program(tb, n, p_illegal=0.0)
    n = len(words)                        # the generator may give fewer words than asked
    bufs = tb.random_buffers()
    inputs = rand_words(tb.rng, (n, 3), tb.fmt, 0.1)
    await tb.load(0, words)
    await tb.load_buffers(*bufs)
    exp = PEModel(cfg, *bufs).run(words, inputs)
    m = (1 << tb.W) - 1
    for port in OUT_PORTS:
        for cy, v in exp.out_cycles[port]:
            tb.exp[port].append((v & m, cy))
    run = cocotb.start_soon(tb.run(words, inputs))
    given = await start_while_busy(dut, dut.clk, dict(len=1), pulses=3)
    fcov.sample_start(1, 1, cfg.SCHED_DEPTH)          # start_while_busy saw busy high before each pulse
    n0 = given
    given += await start_while_busy(dut, dut.clk, dict(len=0), pulses=1)
    if given > n0:
        fcov.sample_start(0, 1, cfg.SCHED_DEPTH)
    # loads while busy are ignored too (datasheet): garbage into the schedule and DATA buffer
    await FallingEdge(dut.clk)
    assert int(dut.busy.value) == 1, "program finished before the ignored loads"
    dut.ld_en.value = 1
    for k in range(4):
        dut.ld_sel.value = k % 2
        dut.ld_addr.value = k // 2
        dut.ld_data.value = 0x5A5A5A5A & ((1 << len(dut.ld_data)) - 1)
        await FallingEdge(dut.clk)
    dut.ld_en.value = 0
    dut._log.info("%d starts given while busy", given)
    dc = await run
    assert dc == exp.cycles, f"done in cycle {dc}, expected {exp.cycles}"
    assert int(dut.err.value) == exp.err, f"err={int(dut.err.value):#x}, expected {exp.err:#x}"
    await ClockCycles(dut.clk, 10)
    assert len(tb.done_cycles) == 1, f"{len(tb.done_cycles)} done pulses for one program"
    await tb.check_buffers(exp)
    await tb.job(random_program(tb, min(cfg.SCHED_DEPTH, 30)), tb.random_buffers())
    assert len(tb.done_cycles) == 2
    tb.finish()


@sim_test(timeout_us={"default": 200, "*": 1600})
async def data_load_while_busy(dut):
    """DATA words loaded while a program runs: the running program is undisturbed (outputs,
    done cycle, buffers equal the golden run on the old data); then the same program is
    started again without any load.  DBUF=0: the loads were ignored, so the second run
    sees the first run's buffers.  DBUF=1: they went to the shadow bank, so the second run
    sees them (the rest of its DATA bank is what was loaded while idle, not the first
    run's DATA writes) and the first run's MODEL/INTERIM results."""
    tb = PETB(dut)
    await tb.reset()
    cfg = tb.cfg
    m = (1 << tb.W) - 1
    words = random_program(tb, min(cfg.SCHED_DEPTH, 60), p_illegal=0.0)
    n = len(words)
    bufs = tb.random_buffers()
    inputs = rand_words(tb.rng, (n, 3), tb.fmt, 0.1)
    await tb.load(0, words)
    await tb.load_buffers(*bufs)
    exp1 = PEModel(cfg, *bufs).run(words, inputs)
    for port in OUT_PORTS:
        for cy, v in exp1.out_cycles[port]:
            tb.exp[port].append((v & m, cy))
    k_ld = max(1, min(cfg.DATA_DEPTH, n - 8))
    new = rand_words(tb.rng, k_ld, tb.fmt, 0.1)

    async def loader():
        await FallingEdge(dut.clk)
        while not int(dut.busy.value):
            await FallingEdge(dut.clk)
        dut.ld_en.value = 1
        dut.ld_sel.value = 1
        for a in range(k_ld):
            assert int(dut.busy.value) == 1, f"program ended before DATA load {a} of {k_ld}"
            dut.ld_addr.value = a
            dut.ld_data.value = int(new[a]) & m
            await FallingEdge(dut.clk)
        dut.ld_en.value = 0

    ld = cocotb.start_soon(loader())
    dc = await tb.run(words, inputs)
    await ld
    assert dc == exp1.cycles, f"run 1: done in cycle {dc}, expected {exp1.cycles}"
    await tb.check_buffers(exp1)
    # second run, nothing reloaded
    data2 = exp1.buffers[1].copy()
    if tb.p["DBUF"]:
        data2 = np.array(bufs[0], dtype=np.int64).copy()
        data2[:k_ld] = new
    inputs2 = rand_words(tb.rng, (n, 3), tb.fmt, 0.1)
    exp2 = PEModel(cfg, data2, exp1.buffers[2].copy(), exp1.buffers[3].copy()).run(words, inputs2)
    for port in OUT_PORTS:
        for cy, v in exp2.out_cycles[port]:
            tb.exp[port].append((v & m, cy))
    await RisingEdge(dut.clk)   # tb.run starts right after an edge (the monitor's cycle 0)
    dc = await tb.run(words, inputs2)
    assert dc == exp2.cycles, f"run 2: done in cycle {dc}, expected {exp2.cycles}"
    await tb.check_buffers(exp2)
    dut._log.info("DBUF=%d: %d DATA words loaded during a %d-instruction run",
                  tb.p["DBUF"], k_ld, n)
    tb.finish()


@sim_test(timeout_us={"default": 90, "*": 720})  # measured 15.5 us on default
async def checker_catches_corruption(dut):
    """Negative test: a corrupted expected output value, a corrupted output timing, and a
    corrupted expected buffer word must each make the scoreboard fail."""
    tb = PETB(dut)
    await tb.reset()
    cfg = tb.cfg
    asm = Assembler(cfg).op("add", "D0", "M0", dst=["I0", "B"]).op("pass", "I0", dst=["L"])
    words = [w.encode(cfg) for w in asm.instrs]
    bufs = tb.random_buffers(0.0)
    exp = PEModel(cfg, *bufs).run(words)
    m = (1 << tb.W) - 1
    (cb, vb), (cl, vl) = exp.out_cycles["bus"][0], exp.out_cycles["left"][0]
    tb.exp["bus"].append(((vb ^ 1) & m, cb))                             # wrong value
    tb.exp["left"].append((vl & m, cl - 1))                              # wrong cycle
    await tb.load(0, words)
    await tb.load_buffers(*bufs)
    await tb.run(words)
    await ClockCycles(dut.clk, 3)
    assert tb.sb.mismatches == 2, f"corruptions not detected ({tb.sb.mismatches} mismatches)"
    with pytest.raises(AssertionError):
        tb.sb.check()
    tb.sb.errors = tb.sb.mismatches = 0
    # corrupted buffer expectation
    exp.buffers[3][0] ^= 4
    await tb.check_buffers(exp)
    assert tb.sb.mismatches == 1, "corrupted buffer word not detected"
    tb.sb.errors = tb.sb.mismatches = 0
    tb.exp["bus"].append((123, 0))                                        # never produced
    with pytest.raises(AssertionError, match="never received"):
        tb.sb.check()


@sim_test(timeout_us={"default": 70, "*": 560})  # measured 11.8 us on default
async def bench_throughput(dut):
    """Benchmark (reported by `make bench`, not asserted): instructions per cycle on a
    dependent chain (each instruction reads the previous one's result).  With BYPASS=1
    it issues back to back; with BYPASS=0 the chain needs pad_hazards nops.  IPC counts
    useful instructions over issue cycles (done cycle minus the fixed drain)."""
    tb = PETB(dut)
    await tb.reset()
    cfg = tb.cfg
    n = min(200, cfg.SCHED_DEPTH // (5 if cfg.BYPASS else HAZARD_DISTANCE))
    asm = Assembler(cfg).op("pass", "D0", dst=["I0"])
    for _ in range(n - 1):
        asm.op("add", "I0", "D1", dst=["I0"])
    prog = asm.instrs if cfg.BYPASS else pad_hazards(asm.instrs)
    words = [w.encode(cfg) for w in prog]
    exp = await tb.job(words, tb.random_buffers(0.0), check_buffers=False)
    dc = tb.done_cycles[-1] - tb.start_cycle
    issue = dc - DONE_OFFSET
    assert exp.cycles == dc
    # a mac chain into the accumulator (each term depends on the previous sum): one
    # term per cycle whatever the bypass, the dot product's result written at the end
    nm = min(cfg.DATA_DEPTH, cfg.MODEL_DEPTH, 2 ** cfg.ACC_GUARD, cfg.SCHED_DEPTH - 1)
    asm = Assembler(cfg)
    for j in range(nm):
        asm.op("mac", f"D{j}", f"M{j}", dst=["I0", "B"] if j == nm - 1 else [], clr=(j == 0))
    words_m = [w.encode(cfg) for w in asm.instrs]
    exp_m = await tb.job(words_m, tb.random_buffers(0.0), check_buffers=False)
    dcm = tb.done_cycles[-1] - tb.start_cycle
    assert exp_m.cycles == dcm
    rec = record_bench(CORE, chain=n, slots=len(words), cycles_start_to_done=dc,
                       ipc_dependent_chain=n / issue, ideal=1.0, bypass=cfg.BYPASS,
                       fill_latency_cycles=DONE_OFFSET + 1, mac_chain=nm,
                       ipc_mac_chain=nm / (dcm - DONE_OFFSET))
    dut._log.info("bench: %s", rec)
    tb.finish()


@sim_test(timeout_us={"default": 70, "*": 280})  # measured 10.4 us on default
async def rounding_ties(dut):
    """Directed rounding ties (exactly half an LSB, both signs) at every rounding point:
    mul (tie_scalar(j) x tie_operands(j) for j = 0, F/2, F-1 and two random j, plus
    products half an LSB above max_int -- the rounding carries out of the word and must
    saturate -- and next to min_int); mac chains whose final exact accumulator is a tie
    (two random products, one product fixing the residue, one times ONE fixing the word:
    random targets of both signs and the edge targets); the nonlinear units at inputs
    whose segment product slope*offset is a tie (one per segment that has one).  Every
    output bit-exact against PEModel; the ties in the stimulus are counted per operator
    and sign (exact arithmetic, not the model) and must occur."""
    from golden.cosmic_pe import nl_tables
    from verif.rounding_ties import (edge_pairs, edge_targets, fit_tie_shrinking, odd_coef, pwl_segment_products,
                                     pwl_tie_inputs, rand_targets, require_ties, tie_operands, tie_scalar,
                                     tie_value)
    tb = PETB(dut)
    await tb.reset()
    cfg, fmt, rng, F = tb.cfg, tb.fmt, tb.rng, tb.fmt.F
    groups = []                       # per group: [(op, a word, b word | "ONE" | None, clr, out)]
    # mul
    mul_p = []
    for j in [0, F // 2, F - 1] + [int(x) for x in rng.integers(0, F, size=2)]:
        for sign in (1, -1):
            kv = tie_scalar(rng, fmt, j, sign=sign)
            for b in tie_operands(rng, fmt, j, (3,)):
                groups.append([("mul", kv, int(b), False, True)])
                mul_p.append(kv * int(b))
    for a, b in edge_pairs(fmt):
        groups.append([("mul", a, b, False, True)])
        mul_p.append(a * b)
    # mac: acc = a0 b0 + a1 b1 + a_p f + a_q one
    mac_acc = []
    for t in edge_targets(fmt) + rand_targets(fmt, rng, 6):
        a01 = rand_words(rng, 2, fmt, 0.0, 2.0)
        b01 = rand_words(rng, 2, fmt, 0.0, 2.0)
        f = odd_coef(fmt, rng)
        a_p, a_q = fit_tie_shrinking(fmt, a01, b01, f, t)
        rest = int(a01[0]) * int(b01[0]) + int(a01[1]) * int(b01[1])
        groups.append([("mac", int(a01[0]), int(b01[0]), True, False), ("mac", int(a01[1]), int(b01[1]), False, False),
                       ("mac", a_p, f, False, False), ("mac", a_q, "ONE", False, True)])
        mac_acc.append(rest + a_p * f + a_q * fmt.one)
    # nonlinear units
    tabs = nl_tables(fmt, cfg.NL)
    nl_p = {}
    for name, table in tabs.items():
        zs = pwl_tie_inputs(table, 1)
        assert len(zs), f"{name}: no segment product is a tie"
        nl_p[name] = pwl_segment_products(table, zs)
        groups += [[(name, int(z), None, False, True)] for z in zs]
    require_ties(fmt, mul_p, "mul", dut._log)
    require_ties(fmt, mac_acc, "mac", dut._log)
    assert tie_value(fmt, fmt.max_int) in mac_acc, "no mac tie half an LSB above max_int"
    if nl_p:
        allp = [v for p in nl_p.values() for v in p]
        if any(min(t.slope) < 0 for t in tabs.values()):
            require_ties(fmt, allp, "nonlinear segment products", dut._log)
        else:
            assert any(v > 0 for v in allp), "no nonlinear tie"
    # pack the groups into jobs that fit the buffers and the schedule
    njobs = 0

    async def flush(data, model, instrs):
        nonlocal njobs
        bufs = [np.zeros(cfg.depths[c], dtype=np.int64) for c in (1, 2, 3)]
        bufs[0][:len(data)] = data
        bufs[1][:len(model)] = model
        await tb.job([i.encode(cfg) for i in instrs], bufs, check_buffers=False)
        njobs += 1

    asm = Assembler(cfg)
    data, model, instrs = [], [], []
    for g in groups:
        nd, nm = len(g), sum(isinstance(b, int) for _, _, b, _, _ in g)
        if len(data) + nd > cfg.DATA_DEPTH or len(model) + nm > cfg.MODEL_DEPTH or len(instrs) + nd > cfg.SCHED_DEPTH:
            await flush(data, model, instrs)
            data, model, instrs = [], [], []
        for op, a, b, clr, out in g:
            data.append(a)
            if isinstance(b, int):
                model.append(b)
                bs = f"M{len(model) - 1}"
            else:
                bs = b
            instrs.append(asm.instr(op, f"D{len(data) - 1}", bs, ["B"] if out else [], clr=clr))
    if instrs:
        await flush(data, model, instrs)
    dut._log.info("%d tie instructions in %d jobs", sum(len(g) for g in groups), njobs)
    tb.finish()


def nl_segment_inputs(table, rng) -> list:
    """One input in every segment of ``table`` (a random offset inside it), the first and
    last offset of the first and last segment, and one input beyond each end of the domain."""
    zs = [table.lo + (k << table.shift) + int(rng.integers(0, 1 << table.shift))
          for k in range(table.segments)]
    return zs + [table.lo, table.lo + (1 << table.shift) - 1, table.hi - 1, table.lo - 1, table.hi]


@sim_test(timeout_us={"default": 150, "*": 1200})  # measured 61.0 us on default
async def nl_every_segment(dut):
    """Every nonlinear unit evaluated in every segment of its PWL table (every entry of
    its base/slope tables) and at both domain edges and beyond; bus outputs and timing
    exact against PEModel (the other tests draw a few dozen inputs over +-20, which
    select well under half of the 704 table entries).  On a PE without some units each
    absent op must flag ERR_NL and write and output nothing."""
    from golden.cosmic_pe import nl_tables
    tb = PETB(dut)
    await tb.reset()
    cfg = tb.cfg
    tables = nl_tables(cfg.fmt, cfg.NL)
    model = np.zeros(cfg.MODEL_DEPTH, dtype=np.int64)
    interim = np.zeros(cfg.INTERIM_DEPTH, dtype=np.int64)
    njobs = 0
    absent = [name for name in NL_OPS if name not in tables]
    if absent:   # a PE without these units: each flags ERR_NL, writes nothing, outputs nothing
        words = [Instr(op=OPS[name], src_a=2, ra_i=0, wb=3, wa=1, out=7).encode(cfg) for name in absent]
        exp = await tb.job(words, tb.random_buffers())
        assert exp.err & ERR_NL and not any(exp.outputs[p] for p in OUT_PORTS), (exp.err, exp.outputs)
        njobs += 1
    for name, table in tables.items():
        zs = nl_segment_inputs(table, tb.rng)
        for s in range(0, len(zs), min(cfg.DATA_DEPTH, cfg.SCHED_DEPTH)):
            chunk = zs[s:s + min(cfg.DATA_DEPTH, cfg.SCHED_DEPTH)]
            data = np.zeros(cfg.DATA_DEPTH, dtype=np.int64)
            data[:len(chunk)] = chunk
            asm = Assembler(cfg)
            for i in range(len(chunk)):
                asm.op(name, f"D{i}", dst=["B"])
            exp = await tb.job([w.encode(cfg) for w in asm.instrs], [data, model, interim],
                               check_buffers=False)
            assert len(exp.outputs["bus"]) == len(chunk)
            njobs += 1
    dut._log.info("%d jobs over %s", njobs, {n: t.segments for n, t in tables.items()})
    tb.finish()


# ---------------------------------------------------------------- pytest launchers
@pytest.mark.parametrize("cfg,sim", matrix(CORE, quick=[("default", "verilator"), ("small", "icarus"), ("default", "ghdl")]))
def test_cosmic_pe(cfg, sim):
    run_core(CORE, cfg, sim)


# bus protocol checkers (scoreboards/protocol.py) on every AXI4-Stream/AXI4/AXI4-Lite port
# of the toplevel, attached before each cocotb test; its violations must be zero at the end
from scoreboards.protocol import guard_tests  # noqa: E402

guard_tests(globals())
