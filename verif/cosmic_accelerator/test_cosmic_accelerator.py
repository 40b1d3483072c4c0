"""cosmic_accelerator: tablac-compiled TABLA programs end to end on the RTL accelerator.

The host is a cocotbext-axi ``AxiLiteMaster``; main memory a cocotbext-axi ``AxiRam``
stalling every AXI channel at random.  Each benchmark program (linear, logistic, svm,
reco, backprop at small sizes, ``acc_case.SMALL``) is compiled by ``tablac.codegen`` for
the netlist's plan, loaded through the register map (microcode, preloads, aggregation
table, tree program), its model broadcast by the memory schedule unit, and trained for
several rounds (mini-batches).  After every round the model read back from the PEs (every
thread's copy) must equal, word for word, ``tablac.machine`` (cycle-level model of the
compiled program) and the golden parallel SGD (``acc_case.golden_rounds``).

Also: a corrupted expected word must be reported (negative test), every error code
(bad PE, slot, link, opcode, queue overflow, thread table, busy, register) leaves the
core idle and readable, reset in the middle of a mini-batch then a restart gives the
same result, the aggregation of hand-made per-thread values equals
``golden.sgd.average_fx``, and the cycles per sample are measured (``bench_*``).
"""
from __future__ import annotations

import os
import random

import cocotb
import numpy as np
import pytest
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, RisingEdge
from cocotbext.axi import AxiBus, AxiLiteBus, AxiLiteMaster, AxiRam

from golden.cosmic_msu import Entry
from golden.cosmic_pe import DONE_OFFSET, Instr, result_latency
from golden.sgd import average_fx
from scoreboards import regmap
from scoreboards.gates import Gate
from verif.harness import CLOCK_NS, dut_params, ghdl_testcase, matrix, run_core
from verif.tb_common import record_bench, sim_seed, sim_test, within
from verif.cosmic_accelerator import covermodel as fcov

CORE = "cosmic_accelerator"
AXIL_CYCLES = 10_000
POLL_LIMIT = 20_000          # STATUS reads while waiting for a command

# register map: offsets and command bits from the SystemRDL map (rtl_gen/regmaps, the
# datasheet's source; the unit's window is its own map, MSU.*)
RM = regmap.load(CORE)
A = RM.CTRL.offset           # base of the accelerator's own window
(CTRL, STATUS, PROG_LEN, SAMPLES, ROUNDS, AGG_LEN, CYCLES, SAMPLE_CNT, ROUND_CNT, LD_PE, LD_SEL,
 LD_ADDR, LD_HI, LD_LO, RB_PE, RB_SEL, RB_ADDR, RB_DATA, ERR_INFO, SHAPE, COMPUTE_CYC, LOAD_CYC,
 AGG_CYC) = (RM[n].offset for n in (
     "CTRL", "STATUS", "PROG_LEN", "SAMPLES", "ROUNDS", "AGG_LEN", "CYCLES", "SAMPLE_CNT",
     "ROUND_CNT", "LD_PE", "LD_SEL", "LD_ADDR", "LD_HI", "LD_LO", "RB_PE", "RB_SEL", "RB_ADDR",
     "RB_DATA", "ERR_INFO", "SHAPE", "COMPUTE_CYC", "LOAD_CYC", "AGG_CYC"))
C_LOAD_MODEL, C_TRAIN, C_ERRCLR, C_AGGREGATE = (RM.CTRL.pack(**{n: 1}) for n in (
    "LOAD_MODEL", "TRAIN", "ERRCLR", "AGGREGATE"))
E_PE, E_SLOT, E_LINK, E_OP, E_MSU, E_TABLE, E_BUSY, E_BUS, E_REG, E_PEERR, E_WRENT = range(1, 12)
# memory schedule unit registers (its own map, in the 0x0000-0x0FFF window)
M_CTRL, M_STATUS, M_QPUSH, M_MODEL = (RM[f"MSU.{n}"].offset for n in ("CTRL", "STATUS", "QPUSH", "MODEL_ADDR"))
M_TBL0 = RM["MSU.THREAD[0].MEM_ADDR"].offset
M_TBL_STRIDE = RM["MSU.THREAD[1].MEM_ADDR"].offset - M_TBL0 if "MSU.THREAD[1].MEM_ADDR" in RM.regs else 8


def m_mem(t):
    return M_TBL0 + M_TBL_STRIDE * t


def m_off(t):
    return RM["MSU.THREAD[0].PE_OFFSET"].offset + M_TBL_STRIDE * t


class Host:
    def __init__(self, dut, mem_p=0.7):
        self.dut = dut
        self.p = dut_params()
        self.rm = regmap.load(CORE, self.p)
        self.seed = sim_seed()
        self.clk = dut.clk
        self.mem_p = mem_p
        self.T = self.p["THREADS"]
        self.C = self.p["COLS"]
        self.N = self.p["ROWS"] * self.C
        self.P = self.N // self.T

    async def start(self):
        """Clock, reset held until the registered outputs are defined (GHDL starts at 'U'),
        then the bus models, then reset released."""
        dut = self.dut
        dut.rst.value = 1
        cocotb.start_soon(Clock(self.clk, CLOCK_NS, unit="ns").start())
        await ClockCycles(self.clk, 3)
        self.ram = AxiRam(AxiBus.from_prefix(dut, "m_axi"), dut.clk, dut.rst, size=1 << 16)
        self.axil = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axil"), dut.clk, dut.rst)
        chans = [self.ram.read_if.ar_channel, self.ram.read_if.r_channel,
                 self.ram.write_if.aw_channel, self.ram.write_if.w_channel,
                 self.ram.write_if.b_channel]
        for i, ch in enumerate(chans):
            if self.mem_p < 1.0:
                gt = Gate(self.seed * 31 + i, self.mem_p, max_run=5)
                ch.set_pause_generator(iter(lambda gt=gt: not gt.next(), None))
        await self.reset()

    async def reset(self, cycles=5):
        self.dut.rst.value = 1
        await ClockCycles(self.clk, cycles)
        self.dut.rst.value = 0
        await ClockCycles(self.clk, 2)

    async def wr(self, addr, value):
        await within(self.axil.write_dword(addr, int(value) & 0xFFFFFFFF), AXIL_CYCLES,
                     f"s_axil: write 0x{addr:x} got no response (AW/W/B)")
        if addr == CTRL:
            fcov.sample_ctrl(self.rm, int(value))

    async def rd(self, addr):
        return await within(self.axil.read_dword(addr), AXIL_CYCLES,
                            f"s_axil: read 0x{addr:x} got no response (AR/R)")

    async def status(self):
        s = int(await self.rd(STATUS))
        f = self.rm.STATUS.unpack(s)
        fcov.sample_status(f["ERROR"], f["CODE"], f["MSU_CODE"])
        return dict(busy=f["BUSY"], done=f["DONE"], err=f["ERROR"], code=f["CODE"],
                    msu=f["MSU_CODE"], state=f["STATE"], raw=s)

    async def wait_idle(self, what):
        for _ in range(POLL_LIMIT):
            s = await self.status()
            if not s["busy"]:
                return s
        raise AssertionError(f"{what}: STATUS.busy still set after {POLL_LIMIT} polls "
                             f"(seed {self.seed})")

    async def expect_error(self, code, what):
        s = await self.wait_idle(what)
        assert s["err"] and s["code"] == code and not s["busy"], \
            f"{what}: expected error {code}, STATUS {s}"
        await self.wr(CTRL, C_ERRCLR)
        s = await self.status()
        assert not s["err"] and s["code"] == 0, f"{what}: ERRCLR left {s}"
        return s

    # ---------------------------------------------------------------- loading
    async def load(self, sel, pe, addr, words, hi=True):
        await self.wr(LD_SEL, sel)
        await self.wr(LD_PE, pe)
        await self.wr(LD_ADDR, addr)
        last_hi = None
        for w in words:
            w = int(w)
            if hi and (w >> 32) != last_hi:
                await self.wr(LD_HI, w >> 32)
                last_hi = w >> 32
            await self.wr(LD_LO, w & 0xFFFFFFFF)

    async def load_case(self, case, programs):
        comp = case.comp
        for pe, prog in enumerate(programs):
            await self.load(0, pe, 0, prog)
        for pe, pre in enumerate(comp.preload):
            for b, sel in (("D", 1), ("M", 2), ("I", 3)):
                for a, q in sorted(pre[b].items()):
                    await self.load(sel, pe, a, [int(q) & 0xFFFFFFFF], hi=False)
        agg = [(e[1] & 0xFFFF) | (e[0] << 16) | (1 << 30 if e[4] == "sum" else 0)
               for e in comp.aggregation]
        await self.load(4, 0, 0, agg, hi=False)
        await self.wr(AGG_LEN, len(agg))
        await self.load(5, 0, 0, tree_words(comp, self.p), hi=False)
        await self.wr(PROG_LEN, comp.length)

    async def put_mem(self, words):
        self.ram.write(0, b"".join(int(w & 0xFFFFFFFF).to_bytes(4, "little") for w in words))

    async def msu_queue(self, entries):
        await self.wr(M_CTRL, 2)           # CLEAR
        for e in entries:
            await self.wr(M_QPUSH, e.encode())

    async def load_model(self, case):
        await self.msu_queue(case.comp.model_entries)
        await self.wr(M_MODEL, 0)
        for t in range(case.T):
            await self.wr(m_off(t), t * self.P)
        await self.wr(CTRL, C_LOAD_MODEL)
        s = await self.wait_idle("LOAD_MODEL")
        assert s["done"] and not s["err"], f"LOAD_MODEL: STATUS {s}"
        await self.msu_queue(case.comp.sample_entries)

    async def train(self, case, rounds=1, check=True):
        sw = case.comp.sample_words
        for t in range(case.T):
            await self.wr(m_mem(t), case.base + t * case.sub * sw)
        await self.wr(SAMPLES, case.sub)
        await self.wr(ROUNDS, rounds)
        await self.wr(CTRL, C_TRAIN)
        if check:
            s = await self.wait_idle("TRAIN")
            assert s["done"] and not s["err"], f"TRAIN: STATUS {s}"
            n = await self.rd(SAMPLE_CNT)
            assert n == case.sub * rounds, f"SAMPLE_CNT {n}, expected {case.sub * rounds}"
            return s

    async def read_words(self, case, thread):
        await self.wr(RB_SEL, 2)
        words = {}
        for v, (pe, a) in sorted(case.comp.model_addr.items()):
            await self.wr(RB_PE, thread * self.P + pe)
            await self.wr(RB_ADDR, a)
            u = await self.rd(RB_DATA)
            words[v] = u - (1 << 32) if u >> 31 else u
        return words


def tree_words(comp, p):
    """The tree-bus program: one word per cycle 0..length+7; for every destination row q
    of a thread, bits [q*(2+RPT) +: 2] the op and the next RPT bits its source rows.
    A tablac ``expr`` entry is accepted when it is one add/mul over two rows."""
    rpt = p["ROWS"] // p["THREADS"]
    fw = 2 + rpt
    words = [0] * (comp.length + 8)
    code = {"pass": 1, "add": 2, "mul": 3}
    for (c, op, srcs, dsts) in comp.tree:
        if op == "expr":
            x = srcs
            if not (isinstance(x, tuple) and len(x) == 3 and x[0] in ("add", "mul")
                    and all(isinstance(v, (int, np.integer)) for v in x[1:])):
                raise ValueError(f"tree expression {x} has no encoding in this netlist")
            op, srcs = x[0], (int(x[1]), int(x[2]))
        if op not in code:
            raise ValueError(f"tree op {op!r} has no encoding in this netlist")
        sm = sum(1 << int(r) for r in srcs)
        for q in dsts:
            if (words[c] >> (int(q) * fw)) & ((1 << fw) - 1):
                raise ValueError(f"two tree entries write row {q} in cycle {c}")
            words[c] |= (code[op] | sm << 2) << (int(q) * fw)
    return words


def compare(case, got, r, tag):
    """Model arrays read from the RTL against tablac.machine and the golden parallel SGD
    after round r; returns a list of mismatch descriptions (empty: equal)."""
    bad = []
    for ref_name, ref in (("tablac.machine", case.machine[r]), ("golden", case.golden[r])):
        for k, arr in ref.items():
            g = got[k]
            if not np.array_equal(g, arr):
                idx = np.argwhere(g != arr)
                i = tuple(idx[0])
                bad.append(f"{tag} round {r}: {k}{list(i)} RTL {int(g[i])} != {ref_name} "
                           f"{int(arr[i])} ({len(idx)} words differ)")
    return bad


def _case(name, p, **kw):
    from verif.cosmic_accelerator.acc_case import make_case
    return make_case(name, p, **kw)


async def run_program(h, name, rounds=3, sub=2, shuffle=False):
    from verif.cosmic_accelerator.acc_case import FMT, hw_cfg, model_from_words, transcode
    case = _case(name, h.p, sub=sub, rounds=rounds, shuffle=False)
    progs = transcode(case.comp, hw_cfg(h.p))
    await h.put_mem(case.mem_words)
    await h.load_case(case, progs)
    await h.load_model(case)
    # the model broadcast reached every thread
    q0 = {k: FMT.to_fixed(v) for k, v in case.model0.items()}
    for t in range(case.T):
        got = model_from_words(case, await h.read_words(case, t))
        for k, arr in q0.items():
            assert np.array_equal(got[k], arr), f"{name}: model broadcast, thread {t}, {k}"
    for r in range(rounds):
        await h.train(case)
        for t in sorted({0, case.T - 1}):
            got = model_from_words(case, await h.read_words(case, t))
            bad = compare(case, got, r, f"{name} thread {t}")
            assert not bad, "\n".join(bad)
        h.dut._log.info("%s round %d: RTL == tablac.machine == golden (%d words, %d threads)",
                        name, r, len(case.comp.model_addr), case.T)
        fcov.COV.sample("rounds", await h.rd(ROUND_CNT))
    fcov.COV.sample("program", name)
    fcov.COV.sample("threads", case.T)
    return case


# ---------------------------------------------------------------------- tests
@sim_test(timeout_us={"default": 40_000, "*": 120_000})
async def programs_end_to_end(dut):
    """All five benchmark programs, three mini-batches each, every AXI channel stalling."""
    h = Host(dut)
    await h.start()
    from verif.cosmic_accelerator.acc_case import PROGRAMS
    for name in PROGRAMS:
        await run_program(h, name)


@sim_test(timeout_us={"default": 20_000, "*": 60_000})
async def rounds_in_one_command(dut):
    """ROUNDS=3 in one TRAIN: the controller restores every thread's Mem Addr per round
    and aggregates after each; the final model equals round 3 of both references."""
    from verif.cosmic_accelerator.acc_case import hw_cfg, model_from_words, transcode
    h = Host(dut)
    await h.start()
    case = _case("logistic", h.p, sub=3, rounds=3)
    await h.put_mem(case.mem_words)
    await h.load_case(case, transcode(case.comp, hw_cfg(h.p)))
    await h.load_model(case)
    await h.train(case, rounds=3)
    assert await h.rd(ROUND_CNT) == 3
    fcov.COV.sample("rounds", 3)
    got = model_from_words(case, await h.read_words(case, 0))
    bad = compare(case, got, 2, "logistic x3")
    assert not bad, "\n".join(bad)


LOSS_EPOCHS = 8
LOSS_SAMPLES = 32         # m: every epoch (one round) visits each sample once
LOSS_TOL = 1e-3           # |RTL loss - float64 loss| bound (Q32.16; measured <= 1e-4)


@sim_test(timeout_us={"default": 40_000, "*": 120_000})
async def loss_per_epoch(dut):
    """Logistic regression (tablac program, 6 features, m = 32 samples split over the
    threads) trained on the RTL for 8 epochs (one TRAIN round each, every AXI channel
    stalling): after every epoch the model read back from the first and last thread
    equals the bit-true golden parallel SGD word for word, so the logistic loss of the RTL
    model equals the bit-true loss exactly; it stays within LOSS_TOL of the float64
    parallel SGD (same data, order and initial model) and decreases.  The series goes to
    build/plots (``make sim`` renders reports/cosmic_accelerator_loss[_<cfg>].png)."""
    from golden import sgd as gsgd
    from verif.cosmic_accelerator.acc_case import FMT, hw_cfg, model_from_words, transcode
    from verif.plots import write_series
    h = Host(dut)
    await h.start()
    case = _case("logistic", h.p, sub=LOSS_SAMPLES // h.T, rounds=LOSS_EPOCHS, seed=3)
    A, y = case.data["x"], case.labels["y"]
    mu = case.graph.consts["mu"]
    ref = gsgd.parallel_sgd(A, y, threads=case.T, rounds=LOSS_EPOCHS, loss="logistic", alpha=mu,
                            lam2=0.0, order=case.order, x0=case.model0["w"]).loss
    await h.put_mem(case.mem_words)
    await h.load_case(case, transcode(case.comp, hw_cfg(h.p)))
    await h.load_model(case)
    rtl, bit_true = [], []
    for e in range(LOSS_EPOCHS):
        await h.train(case)
        for t in sorted({0, case.T - 1}):
            got = model_from_words(case, await h.read_words(case, t))
            bad = compare(case, got, e, f"loss_per_epoch thread {t}")
            assert not bad, "\n".join(bad)
        w = got["w"]
        loss = gsgd.objective(A, y, FMT.to_float(w), "logistic", 0.0)
        gold = gsgd.objective(A, y, FMT.to_float(case.golden[e]["w"]), "logistic", 0.0)
        assert loss == gold, f"epoch {e}: RTL loss {loss!r} != bit-true golden loss {gold!r}"
        # the equality above is sensitive: one LSB of one weight changes the loss
        w1 = w.copy()
        w1.reshape(-1)[e % w1.size] += 1
        assert gsgd.objective(A, y, FMT.to_float(w1), "logistic", 0.0) != gold
        assert abs(loss - ref[e]) <= LOSS_TOL, \
            f"epoch {e}: RTL loss {loss:.6f}, float64 {ref[e]:.6f}: off by more than {LOSS_TOL}"
        rtl.append(loss)
        bit_true.append(gold)
        h.dut._log.info("epoch %d: loss RTL %.6f == bit-true, float64 %.6f", e + 1, loss, ref[e])
    assert rtl[-1] < rtl[0], f"loss did not decrease: {rtl}"
    cfg = os.environ.get("DUT_CFG", "default")
    sim = os.environ.get("DUT_SIM", "")
    name = "cosmic_accelerator_loss" + ("" if cfg == "default" else f"_{cfg}")
    if sim == "verilator":  # one figure per config (the Icarus/GHDL rows compute the same)
        write_series(name, f"cosmic_accelerator {cfg}: logistic, {h.N} PEs, {h.T} thr., "
                     f"m={LOSS_SAMPLES}", {"RTL (Q32.16, read back)": rtl,
                                                         "bit-true golden": bit_true,
                                                         "float64 reference": list(ref)})


@sim_test(timeout_us={"default": 20_000, "*": 60_000})
async def corrupted_expected_word_fails(dut):
    """Negative test: the comparison reports a single corrupted expected word."""
    from verif.cosmic_accelerator.acc_case import hw_cfg, model_from_words, transcode
    h = Host(dut)
    await h.start()
    case = _case("linear", h.p, rounds=1)
    await h.put_mem(case.mem_words)
    await h.load_case(case, transcode(case.comp, hw_cfg(h.p)))
    await h.load_model(case)
    await h.train(case)
    got = model_from_words(case, await h.read_words(case, 0))
    assert not compare(case, got, 0, "clean")
    rng = random.Random(h.seed)
    j = rng.randrange(case.golden[0]["w"].size)
    case.golden[0]["w"].reshape(-1)[j] ^= 1 << rng.randrange(32)
    bad = compare(case, got, 0, "corrupted")
    assert len(bad) == 1 and "golden" in bad[0], bad


@sim_test(timeout_us={"default": 5_000, "*": 15_000})
async def regmap_conformance(dut):
    """The RTL against the SystemRDL map (scoreboards.regmap.check_regmap), both windows:
    reset values (SHAPE from the geometry), undocumented bits read 0, every read/write
    register of the accelerator and of the proxied unit (MODEL_ADDR, Thread Index Table) reads
    back a legal random value, write-only registers read 0, 512 random unknown offsets of the
    13-bit space read 0; no error raised in either."""
    h = Host(dut, mem_p=1.0)
    await h.start()
    rm, p = h.rm, h.p
    rng = np.random.default_rng(h.seed)
    legal = {f"MSU.THREAD[{t}].PE_OFFSET": (lambda g: int(g.integers(0, h.N))) for t in range(h.T)}
    legal.update({"AGG_LEN": lambda g: int(g.integers(0, p["AGG_DEPTH"] + 1)),
                  "LD_SEL": lambda g: int(g.integers(0, 6))})
    res = await regmap.check_regmap(rm, lambda a: h.rd(a), h.wr, rng, len(dut.s_axil_araddr),
                                    legal=legal, unknown_sample=512)
    assert res["unknown_read"] == 512 and res["written"] == 1 + 2 * h.T + 11, res
    s = await h.status()
    assert not s["err"] and not s["msu"], f"legal register writes raised an error: {s}"
    ms = rm["MSU.STATUS"].unpack(int(await h.rd(M_STATUS)))
    assert not ms["ERROR"], f"the unit flagged an error: {ms}"


@sim_test(timeout_us={"default": 20_000, "*": 60_000})
async def error_codes(dut):
    """Every error code: the load or command is refused, STATUS names the code, the core
    is idle, ERRCLR clears it, and a good run afterwards is exact."""
    from verif.cosmic_accelerator.acc_case import hw_cfg
    h = Host(dut)
    await h.start()
    cfg = hw_cfg(h.p)
    # E_PE: a PE that does not exist
    await h.load(0, h.P, 0, [0])
    await h.expect_error(E_PE, "LD_PE = PEs per thread")
    # E_SLOT: schedule slot beyond SCHED_DEPTH; buffer slot beyond DATA_DEPTH
    await h.load(0, 0, h.p["SCHED_DEPTH"], [0])
    await h.expect_error(E_SLOT, "microcode address = SCHED_DEPTH")
    await h.load(1, 0, h.p["DATA_DEPTH"], [5], hi=False)
    await h.expect_error(E_SLOT, "DATA address = DATA_DEPTH")
    # E_LINK: PE at column 0 reads its left link; last column writes right
    w_left = Instr(op=9, src_a=3, src_b=6, wb=3, wa=0).encode(cfg)
    await h.load(0, 0, 0, [w_left])
    await h.expect_error(E_LINK, "column 0 reads left_in")
    w_right = Instr(op=9, src_a=6, src_b=6, out=2).encode(cfg)
    await h.load(0, h.C - 1, 0, [w_right])
    await h.expect_error(E_LINK, "last column writes right_out")
    # an aggregation entry naming a PE or a MODEL word that does not exist; a tree-program
    # slot beyond its depth
    await h.load(4, 0, 0, [h.P << 16], hi=False)
    await h.expect_error(E_PE, "aggregation entry PE = PEs per thread")
    await h.load(4, 0, 0, [h.p["MODEL_DEPTH"]], hi=False)
    await h.expect_error(E_SLOT, "aggregation entry address = MODEL_DEPTH")
    await h.load(5, 0, 2 * h.p["SCHED_DEPTH"], [0], hi=False)
    await h.expect_error(E_SLOT, "tree-program slot = its depth")
    # E_OP: illegal opcode, and a nonlinear function the PEs lack
    await h.load(0, 0, 0, [14])
    await h.expect_error(E_OP, "opcode 14")
    missing = [op for op, bit in ((11, 1), (12, 2), (13, 3)) if not (h.p["NL"] >> bit) & 1]
    if missing:
        await h.load(0, 0, 0, [Instr(op=missing[0], src_a=6, src_b=6).encode(cfg)])
        await h.expect_error(E_OP, f"nonlinear opcode {missing[0]} not instantiated")
    # E_REG: unknown register
    await h.wr(A + 0x7F0, 1)
    await h.expect_error(E_REG, "unknown register")
    # E_MSU: a memory schedule that overflows the unit's queue
    await h.wr(M_CTRL, 2)
    for i in range(h.p["QDEPTH"] + 1):
        await h.wr(M_QPUSH, Entry(base=0, size=1).encode())
    await h.wr(PROG_LEN, 1)
    await h.wr(CTRL, C_LOAD_MODEL)
    s = await h.wait_idle("overflowed queue")
    assert s["err"] and s["code"] == E_MSU and s["msu"] == 3, f"queue overflow: {s}"
    await h.wr(CTRL, C_ERRCLR)
    await h.wr(M_CTRL, 4 | 2)    # the unit's ERRCLR, CLEAR
    # E_TABLE: overlapping threads in the Thread Index Table
    if h.T > 1:
        await h.wr(M_QPUSH, Entry(base=0, size=1).encode())
        for t in range(h.T):
            await h.wr(m_off(t), 0)
        await h.wr(SAMPLES, 1)
        await h.wr(ROUNDS, 1)
        await h.wr(CTRL, C_TRAIN)
        await h.expect_error(E_TABLE, "PE_OFFSET[1] = PE_OFFSET[0]")
    # E_SLOT: PROG_LEN 0
    await h.wr(PROG_LEN, 0)
    await h.wr(CTRL, C_TRAIN)
    await h.expect_error(E_SLOT, "PROG_LEN 0")
    # E_BUSY: a command and a load while a command runs (a long nop program)
    nop = Instr().encode(cfg)
    for q in range(h.P):
        await h.load(0, q, 0, [nop] * 64)
    await h.load(5, 0, 0, [0] * 72, hi=False)
    await h.wr(PROG_LEN, 64)
    await h.wr(M_CTRL, 2)
    await h.wr(M_QPUSH, Entry(base=0, size=1).encode())
    for t in range(h.T):
        await h.wr(m_off(t), t * h.P)
        await h.wr(m_mem(t), 0)
    await h.wr(SAMPLES, 40)
    await h.wr(ROUNDS, 1)
    await h.wr(AGG_LEN, 0)
    await h.wr(CTRL, C_TRAIN)
    s = await h.status()
    assert s["busy"], f"long run not busy: {s}"
    await h.wr(CTRL, C_TRAIN)
    await h.wr(LD_LO, 0)
    await h.wr(M_QPUSH, Entry(base=0, size=1).encode())
    await h.expect_error(E_BUSY, "command/load/queue push while busy")
    s = await h.wait_idle("long run after E_BUSY")
    assert s["done"] and not s["err"], f"the run was disturbed: {s}"
    # a good run afterwards
    await run_program(h, "linear", rounds=1)


BAD_INPUT_POLLS = 200      # STATUS reads: a refused or aborted command is idle by then


async def idle_with_error(h, code, what, msu=None):
    """A bad command must leave the core idle with ``code`` within BAD_INPUT_POLLS STATUS
    reads (bounded: a hang fails here, not at the test's time bound); ERRCLR clears it."""
    for _ in range(BAD_INPUT_POLLS):
        s = await h.status()
        if not s["busy"]:
            break
    assert not s["busy"], f"{what}: still busy after {BAD_INPUT_POLLS} STATUS reads: {s}"
    assert s["err"] and s["code"] == code, f"{what}: expected error {code}, STATUS {s}"
    if msu is not None:
        assert s["msu"] == msu, f"{what}: expected the unit's code {msu}, STATUS {s}"
    await h.wr(CTRL, C_ERRCLR)
    s = await h.status()
    assert not s["err"] and not s["busy"], f"{what}: ERRCLR left {s}"


async def nop_setup(h, length, samples):
    """Every PE runs ``length`` nops; one read entry per row of a thread; legal table."""
    from verif.cosmic_accelerator.acc_case import hw_cfg
    nop = Instr().encode(hw_cfg(h.p))
    for q in range(h.P):
        await h.load(0, q, 0, [nop] * length)
    await h.load(5, 0, 0, [0] * (length + 8), hi=False)
    await h.wr(PROG_LEN, length)
    await h.wr(AGG_LEN, 0)
    await h.wr(M_CTRL, 2)
    for t in range(h.T):
        await h.wr(m_off(t), t * h.P)
        await h.wr(m_mem(t), 64 * t)
    await h.wr(SAMPLES, samples)
    await h.wr(ROUNDS, 1)


@sim_test(timeout_us={"default": 20_000, "*": 60_000})
async def bad_schedule_never_hangs(dut):
    """Bad memory schedules end in an error code and an idle core, never a hang:
    a write entry (PEs -> memory, which the accelerator does not feed) makes LOAD_MODEL
    and TRAIN fail at their start with E_WRENT (the unit's STATUS.WRQ), even behind read
    entries; START written into the unit's CTRL through the window is refused (E_REG)
    and the unit stays idle; a TRAIN on an empty queue aborts with E_MSU (the unit's
    code 4: START refused) as soon as a walk delivers nothing while a complete sample
    waits, before SAMPLES samples ran; a schedule whose transfer falls past the last PE
    for a thread (Base + PE_OFFSET >= PEs, skipped by the unit) ends with E_MSU code 1.
    After each, CLEAR and a good program run exactly."""
    h = Host(dut)
    await h.start()
    await nop_setup(h, 32, 8)
    # a write entry alone, and behind a read entry, for both commands
    for ents in ([Entry(base=0, write=True, size=h.C)],
                 [Entry(base=0, size=h.C), Entry(base=0, write=True, size=h.C)]):
        await h.wr(M_CTRL, 2)
        for e in ents:
            await h.wr(M_QPUSH, e.encode())
        ms = RM["MSU.STATUS"].unpack(int(await h.rd(M_STATUS)))
        assert ms["WRQ"] == 1 and not ms["ERROR"], f"unit STATUS after a write push: {ms}"
        for cmd, what in ((C_LOAD_MODEL, "LOAD_MODEL"), (C_TRAIN, "TRAIN")):
            await h.wr(CTRL, cmd)
            await idle_with_error(h, E_WRENT, f"{what} with a write entry ({len(ents)} entries)")
            assert await h.rd(SAMPLE_CNT) == 0
    # CLEAR drops the flag; a read entry alone does not set it
    await h.wr(M_CTRL, 2)
    await h.wr(M_QPUSH, Entry(base=0, size=h.C).encode())
    ms = RM["MSU.STATUS"].unpack(int(await h.rd(M_STATUS)))
    assert ms["WRQ"] == 0, f"unit STATUS after CLEAR and a read push: {ms}"
    # START of the unit through the window: refused, the unit does not run
    await h.wr(M_CTRL, 1)
    await idle_with_error(h, E_REG, "unit START through the window")
    ms = RM["MSU.STATUS"].unpack(int(await h.rd(M_STATUS)))
    assert not ms["BUSY"] and not ms["DONE"] and not ms["ERROR"], f"the unit ran: {ms}"
    # empty queue: every walk delivers nothing; the run stops early with E_MSU (code 4)
    await h.wr(M_CTRL, 2)
    await h.wr(CTRL, C_TRAIN)
    await idle_with_error(h, E_MSU, "TRAIN on an empty queue", msu=4)
    n = await h.rd(SAMPLE_CNT)
    assert n < 8, f"empty queue: {n} samples ran; the walk delivering nothing must abort"
    await h.wr(M_CTRL, 4 | 2)
    # a transfer past the last PE for the last thread (skipped): E_MSU with code 1
    if h.T > 1:
        await h.wr(M_QPUSH, Entry(base=h.P, size=1).encode())
        await h.wr(CTRL, C_TRAIN)
        await idle_with_error(h, E_MSU, "entry past the last PE", msu=1)
        await h.wr(M_CTRL, 4 | 2)
    await run_program(h, "linear", rounds=1)


def sched_mem(dut, g, iw):
    """Simulator handle of physical PE g's schedule memory (the netlist's only 1r1w RAM of
    cosmic_pe<g> whose words are ``iw`` bits wide)."""
    found = []
    for k in range(0, 8 * 64):
        try:
            hdl = dut._id(f"cosmic_pe{g}_ram_1r1w{k}_mem", extended=False)
        except (AttributeError, KeyError):
            continue
        if len(hdl[0]) == iw:
            found.append(hdl)
    assert len(found) == 1, f"PE {g}: {len(found)} RAMs of {iw}-bit words in the netlist"
    return found[0]


@sim_test(timeout_us={"default": 20_000, "*": 60_000})
async def pe_error_by_fault_injection(dut):
    """E_PEERR (a PE raised err during a run) cannot be caused through the host interface:
    every microcode load is checked (opcode, nonlinear unit, address fields, links: E_OP,
    E_SLOT, E_LINK) and PROG_LEN at the command (E_SLOT), so no PE is ever given an illegal
    instruction.  The code reports a schedule memory corrupted after loading (an upset):
    the testbench writes an illegal opcode (14) into slot 0 of the last PE of the last
    thread through the simulator, after a checked load.  TRAIN must end with E_PEERR after
    the first sample (SAMPLE_CNT 1, ERR_INFO 0), the core idle; ERRCLR, the word reloaded
    through the host, and the same TRAIN is exact."""
    from verif.cosmic_accelerator.acc_case import hw_cfg, model_from_words, transcode
    h = Host(dut)
    await h.start()
    cfg = hw_cfg(h.p)
    case = _case("linear", h.p, sub=2, rounds=1)
    progs = transcode(case.comp, cfg)
    await h.put_mem(case.mem_words)
    await h.load_case(case, progs)
    await h.load_model(case)
    q = h.P - 1                              # thread-relative PE, its copy in the last thread
    mem = sched_mem(dut, (h.T - 1) * h.P + q, cfg.instr_w)
    good = int(mem[0].value)
    assert good == progs[q][0], f"schedule memory slot 0 holds {good:#x}, loaded {progs[q][0]:#x}"
    bad_word = Instr(op=14).encode(cfg)
    mem[0].value = bad_word
    await ClockCycles(h.clk, 2)
    assert int(mem[0].value) == bad_word, "the simulator did not take the injected word"
    await h.train(case, check=False)
    s = await h.wait_idle("TRAIN on a corrupted schedule memory")
    assert s["err"] and s["code"] == E_PEERR and not s["busy"], f"expected E_PEERR: {s}"
    assert await h.rd(SAMPLE_CNT) == 1, "the run must stop after the sample that raised err"
    assert await h.rd(ERR_INFO) == 0
    await h.wr(CTRL, C_ERRCLR)
    mem[0].value = good
    # every PE, every opcode its configuration refuses (14, 15 and the absent nonlinear
    # units): injected into slot 0, E_PEERR after the first sample, the word restored
    from golden.cosmic_pe import NL_OPS, OP_NAMES
    op_w = {name: w for name, _, w in cfg.layout()}["op"]
    refused = [op for op in range(1 << op_w)
               if OP_NAMES.get(op) is None or (OP_NAMES[op] in NL_OPS and not cfg.NL >> NL_OPS[OP_NAMES[op]] & 1)]
    assert 14 in refused and 15 in refused, refused
    for g in range(h.N):
        mg = sched_mem(dut, g, cfg.instr_w)
        keep = int(mg[0].value)
        for op in refused:
            mg[0].value = Instr(op=op, src_a=1, wb=3).encode(cfg)
            await ClockCycles(h.clk, 2)
            await h.train(case, check=False)
            s = await h.wait_idle(f"TRAIN with opcode {op} injected into PE {g}")
            assert s["err"] and s["code"] == E_PEERR and not s["busy"], f"PE {g} opcode {op}: {s}"
            assert await h.rd(SAMPLE_CNT) == 1, f"PE {g} opcode {op}: the run did not stop after one sample"
            await h.wr(CTRL, C_ERRCLR)
        mg[0].value = keep
    await ClockCycles(h.clk, 2)
    await h.load(0, q, 0, [progs[q][0]])
    await h.load_model(case)
    await h.train(case)
    got = model_from_words(case, await h.read_words(case, h.T - 1))
    bad = compare(case, got, 0, "after E_PEERR and reload")
    assert not bad, "\n".join(bad)


@sim_test(timeout_us={"default": 30_000, "*": 90_000})
async def reset_mid_minibatch(dut):
    """Reset at a random cycle inside a mini-batch; reload the model and rerun: the same
    result as an undisturbed run."""
    from verif.cosmic_accelerator.acc_case import hw_cfg, model_from_words, transcode
    h = Host(dut)
    await h.start()
    case = _case("backprop", h.p, sub=3, rounds=2)
    await h.put_mem(case.mem_words)
    await h.load_case(case, transcode(case.comp, hw_cfg(h.p)))
    await h.load_model(case)
    await h.train(case, check=False)
    await ClockCycles(h.clk, random.Random(h.seed).randrange(20, 3 * case.comp.length + 60))
    assert (await h.status())["busy"], "the run ended before the reset"
    await h.reset()
    s = await h.status()
    assert not s["busy"] and not s["err"] and s["state"] == 0, f"after reset: {s}"
    # reset clears the accelerator's registers, not the PE contents or the tables
    assert await h.rd(PROG_LEN) == 0
    await h.wr(PROG_LEN, case.comp.length)
    await h.wr(AGG_LEN, len(case.comp.aggregation))
    await h.load_model(case)
    for r in range(case.rounds):
        await h.train(case)
        got = model_from_words(case, await h.read_words(case, 0))
        bad = compare(case, got, r, "after reset")
        assert not bad, "\n".join(bad)


@sim_test(timeout_us={"default": 20_000, "*": 60_000})
async def aggregation_directed(dut):
    """Each thread copies its own sample word into MODEL (pass D -> M), then the
    aggregation averages word by word: average_fx over the threads, written into every
    thread; extreme words (saturation edges, ties) included.  Then the AGGREGATE command
    alone averages the other copy (MODEL[1]) the same way."""
    from verif.cosmic_accelerator.acc_case import FMT, hw_cfg
    h = Host(dut)
    await h.start()
    cfg = hw_cfg(h.p)
    rng = random.Random(h.seed)
    T, P, C = h.T, h.P, h.C
    # program: PE q copies DATA[0] into MODEL[0] and MODEL[1]
    prog = [Instr(op=9, src_a=0, src_b=6, ra_d=0, wb=2, wa=0).encode(cfg),
            Instr(op=9, src_a=0, src_b=6, ra_d=0, wb=2, wa=1).encode(cfg)]
    for q in range(P):
        await h.load(0, q, 0, prog)
    await h.load(4, 0, 0, [(a | q << 16) for q in range(P) for a in (0,)], hi=False)
    await h.wr(AGG_LEN, P)
    await h.load(5, 0, 0, [0] * 16, hi=False)
    await h.wr(PROG_LEN, 2)
    edge = [FMT.max_int, FMT.min_int, -1, 1, 0]
    vals = [[rng.choice(edge) if rng.random() < 0.3 else rng.randrange(FMT.min_int, FMT.max_int)
             for q in range(P)] for t in range(T)]
    # thread t's samples: one word per PE, one beat per row
    mem = [v & 0xFFFFFFFF for t in range(T) for v in vals[t]]
    await h.put_mem(mem)
    await h.wr(M_CTRL, 2)
    for r in range(P // C):
        await h.wr(M_QPUSH, Entry(base=r * C, size=C).encode())
    for t in range(T):
        await h.wr(m_off(t), t * P)
        await h.wr(m_mem(t), t * P)
    await h.wr(SAMPLES, 1)
    await h.wr(ROUNDS, 1)
    await h.wr(CTRL, C_TRAIN)
    s = await h.wait_idle("aggregation run")
    assert s["done"] and not s["err"], s
    exp = average_fx(FMT, np.array(vals, dtype=np.int64))
    await h.wr(RB_SEL, 2)
    for t in range(T):
        for q in range(P):
            await h.wr(RB_PE, t * P + q)
            for a, want in ((0, int(exp[q])), (1, vals[t][q])):
                await h.wr(RB_ADDR, a)
                u = await h.rd(RB_DATA)
                got = u - (1 << 32) if u >> 31 else u
                assert got == want, f"thread {t} PE {q} MODEL[{a}]: {got} != {want}"
    # CTRL.AGGREGATE alone (no TRAIN): the table now names MODEL[1], which still holds each
    # thread's own word; afterwards every thread holds the average there
    await h.load(4, 0, 0, [(1 | q << 16) for q in range(P)], hi=False)
    await h.wr(CTRL, C_AGGREGATE)
    s = await h.wait_idle("AGGREGATE command")
    assert s["done"] and not s["err"], s
    for t in range(T):
        for q in range(P):
            await h.wr(RB_PE, t * P + q)
            await h.wr(RB_ADDR, 1)
            u = await h.rd(RB_DATA)
            got = u - (1 << 32) if u >> 31 else u
            assert got == int(exp[q]), f"AGGREGATE: thread {t} PE {q} MODEL[1]: {got} != {int(exp[q])}"


async def run_hand(h, prog_of, vals, length, tree=None, expect_ok=True):
    """Hand-assembled microcode: ``prog_of(q)`` -> list of Instr of thread-relative PE q
    (padded with nops to ``length``); ``vals[t][q]`` is delivered to DATA[0] of PE q of
    thread t (one sample); one TRAIN of one sample, no aggregation."""
    from verif.cosmic_accelerator.acc_case import hw_cfg
    cfg = hw_cfg(h.p)
    T, P, C = h.T, h.P, h.C
    for q in range(P):
        prog = list(prog_of(q))
        prog += [Instr()] * (length - len(prog))
        await h.load(0, q, 0, [i.encode(cfg) for i in prog])
    words = list(tree or []) + [0] * (length + 8 - len(tree or []))
    await h.load(5, 0, 0, words, hi=False)
    await h.wr(PROG_LEN, length)
    await h.wr(AGG_LEN, 0)
    await h.put_mem([v & 0xFFFFFFFF for t in range(T) for v in vals[t]])
    await h.wr(M_CTRL, 2)
    for r in range(P // C):
        await h.wr(M_QPUSH, Entry(base=r * C, size=C).encode())
    for t in range(T):
        await h.wr(m_off(t), t * P)
        await h.wr(m_mem(t), t * P)
    await h.wr(SAMPLES, 1)
    await h.wr(ROUNDS, 1)
    await h.wr(CTRL, C_TRAIN)
    s = await h.wait_idle("hand-assembled run")
    if expect_ok:
        assert s["done"] and not s["err"], f"hand-assembled run: {s}"
    return s


async def read_buf(h, g, sel, a):
    await h.wr(RB_SEL, sel)
    await h.wr(RB_PE, g)
    await h.wr(RB_ADDR, a)
    u = await h.rd(RB_DATA)
    return u - (1 << 32) if u >> 31 else u


def rand_vals(h, rng):
    from verif.cosmic_accelerator.acc_case import FMT
    return [[rng.randrange(-4 * FMT.one, 4 * FMT.one) for q in range(h.P)] for t in range(h.T)]


def every_op_cases(cfg, rng):
    """(op, clr, a, b) of one PE's sweep: every arithmetic/compare/min/max/pass op on
    random operands and on the four (max, min) corners (saturating add/sub/mul both ways,
    lt/gt both outcomes), mac starting (clr) and accumulating, and every nonlinear unit of
    ``cfg.NL`` in every segment of its PWL table, at both domain edges and beyond."""
    from golden.cosmic_pe import OPS, nl_tables
    f = cfg.fmt
    lo, hi = int(f.min_int), int(f.max_int)
    corners = [(hi, hi), (lo, lo), (hi, lo), (lo, hi), (5, 5)]
    cases = []
    for name in ("add", "sub", "mul", "lt", "gt", "min", "max", "pass"):
        pairs = corners + [(int(rng.randrange(-8 * f.one, 8 * f.one)), int(rng.randrange(-8 * f.one, 8 * f.one)))
                           for _ in range(3)]
        cases += [(OPS[name], 0, a, b) for a, b in pairs]
    for k in range(6):
        a, b = (hi, hi) if k == 4 else (int(rng.randrange(-4 * f.one, 4 * f.one)), int(rng.randrange(-4 * f.one, 4 * f.one)))
        cases.append((OPS["mac"], int(k in (0, 3)), a, b))
    # the constant operand sources as the second operand: ONE (7) and ZERO (6)
    for name in ("add", "mul"):
        for sb in (7, 6):
            cases.append((OPS[name], 0, int(rng.randrange(-8 * f.one, 8 * f.one)), 0, sb))
    for name, t in nl_tables(f, cfg.NL).items():
        zs = [t.lo + (k << t.shift) + int(rng.randrange(0, 1 << t.shift)) for k in range(t.segments)]
        zs += [t.lo, t.lo + (1 << t.shift) - 1, t.hi - 1, t.lo - 1, t.hi]
        cases += [(OPS[name], 0, max(lo, min(hi, int(z))), 0) for z in zs]
    return cases


@sim_test(timeout_us={"default": 20_000, "*": 60_000})
async def every_op_on_every_pe(dut):
    """Every PE of every thread runs every opcode of its configuration (every_op_cases,
    its own random operands: corners that saturate, both compare outcomes, mac clear and
    accumulate, each nonlinear unit in every PWL segment) from operands the host preloaded
    into MODEL and INTERIM (and from the constant sources ONE and ZERO), writing each result
    to its own INTERIM word; every result read back (RB_*) equals PEModel run on the same
    program and buffers, and DATA[0] reads back the word the run delivered to it.  The tablac programs
    use a few ops on model-range values, so most PEs never saw the others (code coverage)."""
    from golden.cosmic_pe import PEModel
    from verif.cosmic_accelerator.acc_case import hw_cfg
    h = Host(dut)
    await h.start()
    cfg = hw_cfg(h.p)
    rng = random.Random(h.seed)
    per_pe = [every_op_cases(cfg, rng) for _ in range(h.P)]
    n = min(cfg.MODEL_DEPTH, cfg.INTERIM_DEPTH // 2, cfg.SCHED_DEPTH - 8)
    out = cfg.INTERIM_DEPTH - n
    checked = 0
    for s in range(0, max(len(c) for c in per_pe), n):
        progs, exp = {}, {}
        for q in range(h.P):
            chunk = per_pe[q][s:s + n]
            prog = [Instr(op=c[0], clr=c[1], src_a=1, src_b=c[4] if len(c) > 4 else 2, ra_m=i, ra_i=i, wb=3,
                          wa=out + i) for i, c in enumerate(chunk)]
            m = [c[2] for c in chunk]
            it = [c[3] for c in chunk]
            res = PEModel(cfg, model=m, interim=it).run([i.encode(cfg) for i in prog] + [Instr().encode(cfg)] * 6)
            assert not res.err, f"PE {q}: PEModel flags {res.err} on the sweep program"
            exp[q] = [int(v) for v in res.buffers[3][out:out + len(chunk)]]
            progs[q] = prog
            await h.load(2, q, 0, [v & 0xFFFFFFFF for v in m], hi=False)
            await h.load(3, q, 0, [v & 0xFFFFFFFF for v in it], hi=False)
        vals = rand_vals(h, rng)               # DATA[0] of every PE (the program does not read it)
        await run_hand(h, lambda q: progs[q], vals, n + 6)
        for t in range(h.T):
            for q in range(h.P):
                assert await read_buf(h, t * h.P + q, 1, 0) == vals[t][q], f"thread {t} PE {q}: DATA[0] read back"
        await h.wr(RB_SEL, 3)
        for t in range(h.T):
            for q in range(h.P):
                await h.wr(RB_PE, t * h.P + q)
                for i, want in enumerate(exp[q]):
                    await h.wr(RB_ADDR, out + i)
                    u = await h.rd(RB_DATA)
                    got = u - (1 << 32) if u >> 31 else u
                    op, clr, a, b = per_pe[q][s + i][:4]
                    assert got == want, (f"thread {t} PE {q}: op {op} (clr {clr}) on {a}, {b}: RTL {got}, "
                                         f"PEModel {want}")
                    checked += 1
    dut._log.info("%d results (%d per PE) equal to PEModel", checked, len(per_pe[0]))


def bypass_program(cfg, mac_run):
    """(program, INTERIM words to check, MODEL words to check) of one PE: for each operand
    (a from INTERIM, b from MODEL) and each slot distance d = 1..4, a producer writes the
    word the consumer d slots after its result is ready reads (the producer's result
    latency L - 1 + d slots later: the forwarding paths of cosmic_pe's bypass);
    then ``mac_run`` macs of max x max into one accumulator (products reach 2**(2W-2), so
    more than 2**(ACC_GUARD+1) of them saturate it), its last rounded output in INTERIM."""
    p, iw, mw = [], [], []
    for d in range(1, 5):
        # b side: producer -> MODEL[20 + d], consumer reads src_b = M[20 + d]
        p.append(Instr(op=1, src_a=2, src_b=1, ra_i=1, ra_m=1, wb=2, wa=20 + d))
        p += [Instr()] * (d - 1)
        p.append(Instr(op=2, src_a=2, src_b=1, ra_i=2, ra_m=20 + d, wb=3, wa=40 + d))
        # a side: producer -> INTERIM[30 + d], consumer reads src_a = I[30 + d]
        p.append(Instr(op=3, src_a=2, src_b=1, ra_i=3, ra_m=2, wb=3, wa=30 + d))
        p += [Instr()] * (result_latency(3) - 1 + d - 1)
        p.append(Instr(op=1, src_a=2, src_b=1, ra_i=30 + d, ra_m=3, wb=3, wa=50 + d))
        iw += [40 + d, 30 + d, 50 + d]
        mw += [20 + d]
    p += [Instr(op=4, clr=int(k == 0), src_a=2, src_b=1, ra_i=4, ra_m=4, wb=3, wa=60) for k in range(mac_run)]
    iw.append(60)
    return p, iw, mw


@sim_test(timeout_us={"default": 20_000, "*": 60_000})
async def bypass_and_accumulator_saturation(dut):
    """Every PE of every thread: each operand read d = 1..4 slots after the instruction that
    wrote it (both operands, MODEL and INTERIM: the bypass paths), and 2**(ACC_GUARD+1) + 8
    macs of max x max (the accumulator saturates; on a schedule memory too short for that,
    as many as fit, unsaturated); the words read back equal PEModel on the same program and
    preloaded buffers."""
    from golden.cosmic_pe import PEModel
    from verif.cosmic_accelerator.acc_case import hw_cfg
    h = Host(dut)
    await h.start()
    cfg = hw_cfg(h.p)
    rng = random.Random(h.seed)
    f = cfg.fmt
    # products up to 2**(2W-2): 2**(ACC_GUARD+1) + 8 of them saturate the accumulator.  A
    # schedule memory too short for that run (SCHED_DEPTH 256/512 with ACC_GUARD 8: large,
    # tree, t1, t4) runs as many macs as fit: then the exact, unsaturated sum is expected.
    full_run = (1 << (cfg.ACC_GUARD + 1)) + 8
    mac_run = min(full_run, cfg.SCHED_DEPTH - 6 - len(bypass_program(cfg, 0)[0]))
    prog, iw, mw = bypass_program(cfg, mac_run)
    assert len(prog) + 6 <= cfg.SCHED_DEPTH and max(iw + mw) < min(cfg.MODEL_DEPTH, cfg.INTERIM_DEPTH)
    acc_lim = (1 << (cfg.acc_w - 1)) - 1
    want_acc = min(mac_run * int(f.max_int) ** 2, acc_lim)  # max x max, mac_run times, saturating
    assert (want_acc == acc_lim) == (mac_run == full_run), "the whole run saturates, a shorter one does not"
    exp, pre = {}, {}
    for q in range(h.P):
        m = [int(rng.randrange(-8 * f.one, 8 * f.one)) for _ in range(8)]
        it = [int(rng.randrange(-8 * f.one, 8 * f.one)) for _ in range(8)]
        m[4] = it[4] = int(f.max_int)
        res = PEModel(cfg, model=m, interim=it).run([i.encode(cfg) for i in prog] + [Instr().encode(cfg)] * 6)
        assert not res.err and res.acc == want_acc, f"PEModel accumulator {res.acc}, expected {want_acc}"
        exp[q] = ([(3, a, int(res.buffers[3][a])) for a in iw] + [(2, a, int(res.buffers[2][a])) for a in mw])
        pre[q] = (m, it)
        await h.load(2, q, 0, [v & 0xFFFFFFFF for v in m], hi=False)
        await h.load(3, q, 0, [v & 0xFFFFFFFF for v in it], hi=False)
    await run_hand(h, lambda q: prog, rand_vals(h, rng), len(prog) + 6)
    for t in range(h.T):
        for q in range(h.P):
            for sel, a, want in exp[q]:
                got = await read_buf(h, t * h.P + q, sel, a)
                assert got == want, f"thread {t} PE {q}: {('MODEL', 'INTERIM')[sel - 2]}[{a}] RTL {got}, PEModel {want}"
    dut._log.info("bypass distances 1-4 on both operands and a %d-mac %s run: %d words per PE equal to "
                  "PEModel", mac_run, "saturating" if want_acc == acc_lim else "unsaturated", len(exp[0]))


@sim_test(timeout_us={"default": 20_000, "*": 60_000})
async def neighbour_links_both_ways(dut):
    """Every PE sends DATA[0] left and right (the row ends only inward); each PE stores
    what arrives from its left and right neighbour: equal to the neighbours' words."""
    h = Host(dut)
    await h.start()
    C = h.C
    vals = rand_vals(h, random.Random(h.seed))

    def prog(q):
        c = q % C
        out = (1 if c > 0 else 0) | (2 if c < C - 1 else 0)
        p = [Instr(op=9, src_a=0, ra_d=0, out=out)] + [Instr()] * 5
        p.append(Instr(op=9, src_a=3, wb=3, wa=0) if c > 0 else Instr())
        p.append(Instr(op=9, src_a=4, wb=3, wa=1) if c < C - 1 else Instr())
        return p
    await run_hand(h, prog, vals, 8)
    for t in range(h.T):
        for q in range(h.P):
            c = q % C
            if c > 0:
                assert await read_buf(h, t * h.P + q, 3, 0) == vals[t][q - 1], (t, q, "left")
            if c < C - 1:
                assert await read_buf(h, t * h.P + q, 3, 1) == vals[t][q + 1], (t, q, "right")


@sim_test(timeout_us={"default": 20_000, "*": 60_000})
async def row_bus_as_scheduled_and_contention(dut):
    """PE c of every row writes the row bus in slot 6c, every PE of the row reads it in
    slot 6c+5 into INTERIM[2+c]; then two writers in one slot must end the run with
    E_BUS and leave the core idle."""
    h = Host(dut)
    await h.start()
    C = h.C
    vals = rand_vals(h, random.Random(h.seed))

    def prog(q):
        c = q % C
        p = [Instr()] * (6 * C + 6)
        p[6 * c] = Instr(op=9, src_a=0, ra_d=0, out=4)
        for c2 in range(C):
            p[6 * c2 + 5] = Instr(op=9, src_a=5, wb=3, wa=2 + c2)
        return p
    await run_hand(h, prog, vals, 6 * C + 6)
    for t in range(h.T):
        for q in range(h.P):
            row0 = q - q % C
            for c2 in range(C):
                got = await read_buf(h, t * h.P + q, 3, 2 + c2)
                assert got == vals[t][row0 + c2], (t, q, c2, got)
    s = await run_hand(h, lambda q: [Instr(op=9, src_a=0, ra_d=0, out=4)], vals, 8,
                       expect_ok=False)
    assert s["err"] and s["code"] == E_BUS and not s["busy"], f"two bus writers: {s}"
    await h.wr(CTRL, C_ERRCLR)


@sim_test(timeout_us={"default": 20_000, "*": 60_000})
async def tree_bus_add_and_mul(dut):
    """With 2+ rows per thread: column 0 of rows 0 and 1 write the bus in slot 0 (cycle
    5); the tree program of cycle 5 sends add(row0, row1) to row 0 and mul(row0, row1) to
    row 1 (and pass(row 0) to rows >= 2); every PE reads its row bus d slots later."""
    from verif.cosmic_accelerator.acc_case import FMT
    from rtl_gen.cosmic.cosmic_accelerator import tree_depth
    h = Host(dut)
    await h.start()
    rpt = h.p["ROWS"] // h.T
    if rpt < 2:
        h.dut._log.info("tree_bus_add_and_mul: %d row per thread, the tree has one leaf; "
                        "checked: pass of row 0 to itself", rpt)
    C = h.C
    d = tree_depth(rpt)
    vals = rand_vals(h, random.Random(h.seed))
    fw = 2 + rpt
    word = 0
    for q in range(rpt):
        if rpt >= 2 and q == 0:
            word |= (2 | 0b11 << 2) << (q * fw)
        elif rpt >= 2 and q == 1:
            word |= (3 | 0b11 << 2) << (q * fw)
        else:
            word |= (1 | 0b1 << 2) << (q * fw)
    tree = [0] * 5 + [word]

    def prog(q):
        p = [Instr()] * (5 + d + 1)
        if q % C == 0 and q // C < min(rpt, 2):
            p[0] = Instr(op=9, src_a=0, ra_d=0, out=4)
        p[5 + d] = Instr(op=9, src_a=5, wb=3, wa=0)
        return p
    await run_hand(h, prog, vals, 5 + d + 1, tree=tree)
    for t in range(h.T):
        a = vals[t][0]
        b = vals[t][C] if rpt >= 2 else None
        for q in range(h.P):
            row = q // C
            if rpt >= 2 and row == 0:
                want = int(FMT.add(a, b))
            elif rpt >= 2 and row == 1:
                want = int(FMT.mul(a, b))
            else:
                want = a
            got = await read_buf(h, t * h.P + q, 3, 0)
            assert got == want, f"thread {t} PE {q} (row {row}): {got} != {want}"


def stall_after(delay, length):
    """Pause generator of a bus model channel: ``delay`` free cycles, ``length`` paused
    cycles, then free for ever."""
    import itertools
    return itertools.chain(itertools.repeat(False, delay), itertools.repeat(True, length),
                           itertools.repeat(False))


@sim_test(timeout_us={"default": 30_000, "*": 90_000})
async def overlap_waits_for_data(dut):
    """The next sample streams into the PEs' shadow DATA banks while they compute.  Round 0
    runs without memory stalls (its CYCLES is the reference); in rounds 1 and 2 the
    memory's read-data channel stops for 3..8 sample periods at a seeded random cycle of
    the round, so the PEs finish and must wait for a sample's data.  Every round's model
    equals tablac.machine and the golden SGD bit for bit (a sample started on incomplete
    data would compute on the words of the sample before the previous one, which are
    still in that bank), and the stalled rounds took longer than round 0 (the PEs did
    wait)."""
    from verif.cosmic_accelerator.acc_case import hw_cfg, model_from_words, transcode
    h = Host(dut, mem_p=1.0)
    await h.start()
    rng = random.Random(h.seed)
    case = _case("logistic", h.p, sub=6, rounds=3)
    await h.put_mem(case.mem_words)
    await h.load_case(case, transcode(case.comp, hw_cfg(h.p)))
    await h.load_model(case)
    period = case.comp.length + DONE_OFFSET + 1
    r_chan = h.ram.read_if.r_channel
    base_cyc = None
    for r in range(case.rounds):
        length = 0
        if r:
            delay = rng.randrange(10, 4 * period)
            length = rng.randrange(3 * period, 8 * period)
            r_chan.set_pause_generator(stall_after(delay, length))
            dut._log.info("round %d: read data stalled for %d cycles after %d", r, length, delay)
        await h.train(case)
        r_chan.set_pause_generator(None)
        cyc = await h.rd(CYCLES)
        got = model_from_words(case, await h.read_words(case, 0))
        bad = compare(case, got, r, f"stalled round {r}")
        assert not bad, "\n".join(bad)
        if r == 0:
            base_cyc = cyc
        else:
            assert cyc > base_cyc, (f"round {r}: {cyc} cycles with a {length}-cycle read stall, "
                                    f"not more than the unstalled {base_cyc}: no wait")
        dut._log.info("round %d: %d cycles (unstalled %s), model exact", r, cyc, base_cyc)


class RBeatMonitor:
    """Counts the AXI4 read-data handshakes (rvalid & rready) cycle by cycle: the cycles
    at which memory words reach the memory schedule unit."""

    def __init__(self, dut):
        self.dut = dut
        self.cycles = []
        self.now = 0
        self.on = True
        cocotb.start_soon(self._run())

    async def _run(self):
        d = self.dut
        while self.on:
            await RisingEdge(d.clk)
            self.now += 1
            if int(d.m_axi_rvalid.value) and int(d.m_axi_rready.value):
                self.cycles.append(self.now)

    def take(self):
        c, self.cycles = self.cycles, []
        return c


def streaming_windows(cycles, gap=16):
    """Clusters of beat cycles separated by more than ``gap`` idle cycles (the PEs compute
    between two samples' deliveries for PROG_LEN+5 > gap cycles): [(first, last, beats)]."""
    out = []
    for c in cycles:
        if out and c - out[-1][1] <= gap:
            out[-1] = (out[-1][0], c, out[-1][2] + 1)
        else:
            out.append((c, c, 1))
    return out


class ThreadMonitor:
    """Per thread, cycle by cycle: the handshakes of ``tlast`` beats on the memory schedule
    unit's PE stream (inside the netlist: ``msu_m_axis_pe_*``) whose ``tdest`` is one of
    the thread's PEs, and the cycles in which the thread's first PE is started (its
    ``busy`` is low in that cycle and high in the next)."""

    def __init__(self, h):
        d = h.dut
        self.h = h
        self.T, self.P = h.T, h.P
        self.s = {n: getattr(d, f"msu_m_axis_pe_{n}") for n in ("tvalid", "tready", "tlast",
                                                                "tdest")}
        self.busy = [self._busy(d, t * h.P) for t in range(h.T)]
        self.done = [self._busy(d, t * h.P, "done") for t in range(h.T)]
        self.dones = [[] for _ in range(h.T)]
        self.lasts = [[] for _ in range(h.T)]
        self.starts = [[] for _ in range(h.T)]
        self.now = 0
        self.on = True
        cocotb.start_soon(self._run())

    @staticmethod
    def _busy(d, g, what="busy"):
        for n in (f"cosmic_pe{g}_{what}", f"pe{g}_{what}"):
            if hasattr(d, n):
                return getattr(d, n)
        raise AssertionError(f"no busy signal of PE {g} in the netlist")

    async def _run(self):
        prev = [0] * self.T
        while self.on:
            await RisingEdge(self.h.clk)
            self.now += 1
            v = {k: int(x.value) for k, x in self.s.items()}
            if v["tvalid"] and v["tready"] and v["tlast"]:
                self.lasts[v["tdest"] // self.P].append(self.now)
            for t in range(self.T):
                b = int(self.busy[t].value)
                if b and not prev[t]:
                    self.starts[t].append(self.now - 1)
                prev[t] = b
                if int(self.done[t].value):
                    self.dones[t].append(self.now)

    def take(self):
        out = (self.lasts, self.starts)
        self.h.dut._log.info("done cycles per thread: %s", self.dones)
        self.dones = [[] for _ in range(self.T)]
        self.lasts = [[] for _ in range(self.T)]
        self.starts = [[] for _ in range(self.T)]
        return out


@sim_test(timeout_us={"default": 40_000, "*": 120_000})
async def mimd_thread_starts(dut):
    """Threads run MIMD (issue: each on its own rows, starting as soon as its operands
    arrive).  The unit walks the schedule round-robin over the threads, so thread t's
    data of a sample is complete before thread t+1's; with every AXI channel stalling at
    random the gaps vary.  For every thread and sample, the cycle its PEs start equals
    tablac.machine.thread_starts of the cycles its last beats were handed over (the
    MIMD rule: its own data plus START_LATENCY, or the done cycle of its previous
    sample), the model read back equals tablac.machine and the golden SGD, and thread 0
    starts its first sample before the last thread.  Logs the start cycles gained over the
    lockstep counterfactual (every thread waiting for the last thread's data)."""
    from tablac.machine import thread_starts
    from verif.cosmic_accelerator.acc_case import hw_cfg, model_from_words, transcode
    h = Host(dut, mem_p=0.6)
    await h.start()
    mon = ThreadMonitor(h)
    for name in ("linear", "reco"):
        sub = 5
        case = _case(name, h.p, sub=sub, rounds=1)
        E = len(case.comp.sample_entries)
        await h.put_mem(case.mem_words)
        await h.load_case(case, transcode(case.comp, hw_cfg(h.p)))
        await h.load_model(case)
        mon.take()
        await h.train(case)
        lasts, starts = mon.take()
        got = model_from_words(case, await h.read_words(case, h.T - 1))
        bad = compare(case, got, 0, f"{name} MIMD")
        assert not bad, "\n".join(bad)
        for t in range(h.T):
            assert len(lasts[t]) == sub * E and len(starts[t]) == sub, \
                f"{name} thread {t}: {len(lasts[t])} tlast beats, {len(starts[t])} starts"
        complete = [[lasts[t][(n + 1) * E - 1] for n in range(sub)] for t in range(h.T)]
        want = thread_starts(case.comp, complete)
        lock = thread_starts(case.comp, complete, lockstep=True)
        gain = [sum(lock[t][n] - starts[t][n] for n in range(sub)) for t in range(h.T)]
        dut._log.info("%s: data complete %s; starts %s; MIMD rule %s; lockstep %s; start "
                      "cycles gained per thread over %d samples %s", name, complete, starts,
                      want, lock, sub, gain)
        assert starts == want, f"{name}: RTL starts {starts} != thread_starts {want}"
        if h.T > 1:
            assert starts[0][0] < starts[-1][0], f"{name}: thread 0 did not start first"
    mon.on = False


async def steady_state(h, name, n1=4, n2=12, mon=None):
    """Cycles per training sample per thread in steady state (no memory stalls): two TRAIN
    commands of ``n1`` and ``n2`` samples per thread; the difference of their CYCLES -
    AGG_CYC over ``n2 - n1`` (the fill -- table check, first unit START and delivery --
    and the last sample's done and the round's end cancel).  Returns (case, cycles per
    sample, {n: cycles}); with a :class:`ThreadMonitor` ``mon`` also checks every
    thread's start cycles of both TRAINs against ``tablac.machine.thread_starts``."""
    from tablac.machine import thread_starts
    from verif.cosmic_accelerator.acc_case import hw_cfg, transcode
    case = _case(name, h.p, sub=n2, rounds=1)
    await h.put_mem(case.mem_words)
    await h.load_case(case, transcode(case.comp, hw_cfg(h.p)))
    await h.load_model(case)
    sw = case.comp.sample_words
    got = {}
    for n in (n1, n2):
        for t in range(case.T):
            await h.wr(m_mem(t), case.base + t * n2 * sw)
        await h.wr(SAMPLES, n)
        await h.wr(ROUNDS, 1)
        if mon is not None:
            mon.take()
        await h.wr(CTRL, C_TRAIN)
        s = await h.wait_idle(f"{name}: TRAIN of {n} samples")
        assert s["done"] and not s["err"], f"{name}: TRAIN of {n} samples: STATUS {s}"
        assert await h.rd(SAMPLE_CNT) == n
        got[n] = await h.rd(CYCLES) - await h.rd(AGG_CYC)
        if mon is not None:
            lasts, starts = mon.take()
            E = len(case.comp.sample_entries)
            assert all(len(lasts[t]) == n * E for t in range(case.T)), (name, n, lasts)
            complete = [[lasts[t][(k + 1) * E - 1] for k in range(n)] for t in range(case.T)]
            want = thread_starts(case.comp, complete)
            assert starts == want, f"{name}, {n} samples: starts {starts} != thread_starts {want}"
    return case, (got[n2] - got[n1]) / (n2 - n1), got


@sim_test(timeout_us={"default": 40_000, "*": 120_000})
async def bench_throughput(dut):
    """Cycles per training sample per thread against the compiled schedule; samples per
    cycle (all threads; compared across the t1/default/t4 configs of the same 8-PE budget
    for thread scaling); memory words per cycle while a sample's data streams (first to
    last read beat of each delivery) against the bus width (COLS words per beat)."""
    from verif.cosmic_accelerator.acc_case import hw_cfg, transcode
    h = Host(dut, mem_p=1.0)
    await h.start()
    mon = RBeatMonitor(dut)
    rec = {}
    for name in ("linear", "backprop"):
        sub = 8
        case = _case(name, h.p, sub=sub, rounds=1)
        await h.put_mem(case.mem_words)
        await h.load_case(case, transcode(case.comp, hw_cfg(h.p)))
        await h.load_model(case)
        mon.take()
        await h.train(case)
        beats = mon.take()
        cyc = await h.rd(CYCLES)
        comp_c = await h.rd(COMPUTE_CYC)
        load_c = await h.rd(LOAD_CYC)
        agg_c = await h.rd(AGG_CYC)
        sched = case.comp.length + DONE_OFFSET
        per = (cyc - agg_c) / sub
        words = case.comp.sample_words * case.T
        win = streaming_windows(beats)
        # the next sample's memory reads overlap the PEs' compute, so the reads of
        # consecutive samples may fall into one window (gap <= 16) while the pipeline fills
        assert 1 <= len(win) <= sub, f"{name}: {len(win)} delivery windows, expected 1..{sub}"
        span = sum(b - a + 1 for a, b, _ in win)
        nbeats = sum(n for _, _, n in win)
        assert nbeats == len(beats) and nbeats >= sub * case.T, (nbeats, len(beats))
        rec[f"{name}_schedule_cycles"] = sched
        rec[f"{name}_cycles_per_sample"] = round(per, 2)
        rec[f"{name}_compute_cycles_per_sample"] = round(comp_c / sub, 2)
        rec[f"{name}_load_cycles_per_sample"] = round(load_c / sub, 2)
        rec[f"{name}_overhead_vs_schedule"] = round(per / sched - 1, 4)
        rec[f"{name}_mem_words_per_load_cycle"] = round(words / (load_c / sub), 3)
        # while data streams: sample words (and bus words = beats x COLS) per cycle
        rec[f"{name}_stream_words_per_cycle"] = round(words * sub / span, 3)
        rec[f"{name}_stream_bus_words_per_cycle"] = round(nbeats * h.C / span, 3)
        rec[f"{name}_stream_beats_per_sample"] = round(nbeats / sub, 2)
        rec[f"{name}_agg_cycles"] = agg_c
        rec[f"{name}_samples_per_cycle"] = round(case.T * sub / cyc, 5)
        h.dut._log.info("%s: schedule %d cycles, measured %.1f per sample (compute %.1f, "
                        "load %.1f), aggregation %d; streaming %.2f words/cycle (bus %d)",
                        name, sched, per, comp_c / sub, load_c / sub, agg_c,
                        words * sub / span, h.C)
    # steady state of every program against its compiled schedule length PROG_LEN +
    # DONE_OFFSET (tablac stats "cycles_compute": issue slots + the pipeline drain, the
    # datasheet's definition); the datasheet promises <= 1.05x
    from tablac.codegen import load_cycles
    from tablac.machine import sample_period
    from verif.cosmic_accelerator.acc_case import PROGRAMS
    tmon = ThreadMonitor(h)
    for name in PROGRAMS:
        case, per, got = await steady_state(h, name, mon=tmon)
        sched = case.comp.length + DONE_OFFSET
        rec[f"{name}_schedule_cycles"] = sched
        rec[f"{name}_steady_cycles_per_sample"] = round(per, 3)
        rec[f"{name}_schedule_ratio"] = round(per / sched, 4)
        # tablac.machine's timing of the overlapped accelerator: PROG_LEN + DONE_OFFSET + 1 while the
        # next sample's delivery fits in the compute; when it does not (a short program
        # and many threads sharing the unit: t4) the delivery sets the pace, and the
        # start cycles of every thread, checked above against thread_starts, say so
        sp = sample_period(case.comp)
        assert per >= sp, f"{name}: {per} cycles per sample, below sample_period {sp}"
        rec[f"{name}_delivery_bound"] = int(per > sp)
        if per > sp:
            h.dut._log.info("%s: delivery-bound, %.2f cycles per sample > sample_period %d "
                            "(%d beats per sample of all threads)", name, per, sp,
                            load_cycles(case.comp))
        h.dut._log.info("%s: steady state %.2f cycles per sample per thread, schedule %d "
                        "(PROG_LEN %d + 5): ratio %.4f (runs %s)", name, per, sched,
                        case.comp.length, per / sched, got)
    mon.on = False
    tmon.on = False
    record_bench(CORE, unit="sample", threads=h.T, pes=h.N, peak_words_per_cycle=h.C, **rec)


# ------------------------------------------------------------------ pytest launchers
GHDL_VERILOG_ONLY = {
    "pe_error_by_fault_injection": "GHDL's VPI does not write an element of a VHDL array signal "
                                   "(the injected word never reaches the schedule memory)"}


# GHDL also runs the generated VHDL of 'tree' (two rows per thread: tree-bus add/mul nodes)
# and 'large' (4 threads of 8 PEs), not only the committed default
@pytest.mark.parametrize("cfg,sim", matrix(CORE, quick=[("default", "verilator")],
                                           ghdl_cfgs=("tree", "large")))
def test_cosmic_accelerator(cfg, sim):
    run_core(CORE, cfg, sim, testcase=ghdl_testcase(sim, globals(), GHDL_VERILOG_ONLY))


# bus protocol checkers (scoreboards/protocol.py) on the AXI4 and AXI4-Lite ports
from scoreboards.protocol import guard_tests  # noqa: E402

guard_tests(globals())
