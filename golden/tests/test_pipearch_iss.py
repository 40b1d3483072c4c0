"""PipeArch-PU instruction-set simulator: control flow, every error code with its PC,
context switches (preemption, migration, interleaved jobs) and the subroutine hook."""
import numpy as np
import pytest

from golden import pipearch_isa as I
from golden import scd as scd_mod
from golden import sgd as sgd_mod
from golden.fixedpoint import QFormat
from golden.pipearch_asm import Program, PUConfig, acc, build_image, ch
from golden.pipearch_iss import Machine, Memory, read_context
from golden.pipearch_programs import run_to_end, scd_job, sgd_job

CFG = PUConfig(lanes=4, nregions=6, depth=256, amem_depth=64, max_iter=100, max_dim=32)
PROG, CTX, MEM = 0, 0x4000, 0x8000
FMT = QFormat(32, 16)
SEED = 20261122


def w0(op, ra=0, rb=0, rd=0, it=0, nb=0):
    return op * 2**26 + nb * 2**25 + ra * 2**21 + rb * 2**17 + rd * 2**13 + it


def setup(image, cfg=CFG, ctx_words=None, prog=PROG, ctx=CTX, size=MEM, hook=None):
    mem = Memory(size, cfg.lanes)
    mem.write_bytes(prog, image)
    mem.write_words(ctx, ctx_words if ctx_words is not None else [0] * 32)
    return Machine(cfg, mem, subroutine_hook=hook), mem


def run(p, cfg=CFG, **kw):
    image = p.assemble().image if isinstance(p, Program) else p
    start_kw = {k: kw.pop(k) for k in ("switch_at_yield", "on_step") if k in kw}
    m, mem = setup(image, cfg, **kw)
    return m.start(kw.get("prog", PROG), kw.get("ctx", CTX), **start_kw), m, mem


# ---------------------------------------------------------------------------------
# control flow
# ---------------------------------------------------------------------------------
def test_loop_trace_registers_and_finished_context():
    p = Program(CFG)
    p.li(1, 0).li(2, 10).li(3, 0).label("loop").add(3, 3, 1).addi(1, 1, 1).blt(1, 2, "loop").end()
    r, m, mem = run(p)
    assert r.status == "finished" and r.err_code == 0
    assert r.pc_trace == [0, 1, 2] + [3, 4, 5] * 10 + [6]
    assert r.instr_count == 34
    assert r.regs[1:4] == [10, 10, 45]
    ctx = mem.read_words(CTX, 32, signed=False)
    assert list(ctx[:6]) == [2, 0xFF, 0, 10, 10, 45] and not ctx[6:].any()


def test_r0_wraparound_and_every_branch():
    p = Program(CFG)
    p.addi(0, 0, 5).add(1, 0, 0).li(2, 0x7FFFFFFF).addi(2, 2, 1).sub(3, 0, 2)
    p.li(4, -1).li(5, 1)
    p.blt(4, 5, 9).li(6, 1)        # 7: taken (signed), 8 skipped
    p.bge(4, 5, 11).li(7, 1)       # 9: not taken
    p.beq(4, 4, 13).li(8, 1)       # 11: taken
    p.bne(4, 4, 15).li(9, 1)       # 13: not taken
    p.jmp(17).li(10, 1)            # 15: jump over 16
    p.li(11, 0xFFFFFFFF).end()
    r, _, _ = run(p)
    assert r.finished
    assert r.pc_trace == [0, 1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 13, 14, 15, 17, 18]
    assert r.regs == [0, 0, -2**31, -2**31, -1, 1, 0, 1, 0, 1, 0, -1, 0, 0, 0, 0]


def test_memory_helpers():
    mem = Memory(1024, 4)
    mem.write_vector(3, [1, -2, 3, 4, 5])
    assert mem.read_lines(3, 2).tolist() == [[1, -2, 3, 4], [5, 0, 0, 0]]
    assert mem.read_vector(3, 5).tolist() == [1, -2, 3, 4, 5]
    mem.write_scalars(10, [7, -8])
    assert mem.read_lines(10, 2).tolist() == [[7, 0, 0, 0], [-8, 0, 0, 0]]
    mem.write_words(0, [0xFFFFFFFF])
    assert mem.read_words(0, 1)[0] == -1 and mem.read_words(0, 1, signed=False)[0] == 0xFFFFFFFF
    assert mem.read_bytes(3 * 16, 4) == b"\x01\x00\x00\x00"


# ---------------------------------------------------------------------------------
# errors: code and faulting PC, no context written
# ---------------------------------------------------------------------------------
def nops(k):
    p = Program(CFG)
    for _ in range(k):
        p.nop()
    return p


DOT_OK = (w0(I.DOTSIG, it=2), (2 << 8) | (1 << 4), 0x80040000, 0x80040000, 0x80010000, 0, 4, 0)


def _raw(*ins, pre=2):
    p = nops(pre)
    for w in ins:
        p.raw(*w)
    return p.end()


def _dot(**chg):
    w = list(DOT_OK)
    for k, v in chg.items():
        w[int(k[1:])] = v
    return tuple(w)


def _resume_outside():
    p = nops(1)
    p.load_context().resume()
    return p


def _absent():
    return nops(3).l2reg(ch(0, 4), ch(0, 4), ch(0, 4), dim=4, c=0).end()


def _access_by_register(v):
    p = Program(CFG)
    p.li(7, v).dotsig(ch(0, 4), ch(1, 4, 8, ra=True), ch(2, 1), dim=4, ra=7).end()
    return p


ERROR_CASES = [
    ("opcode", lambda: _raw((w0(0x0C),) + (0,) * 7), I.E_OPCODE, 2),
    ("opcode 0x17", lambda: _raw(_dot(w0=w0(0x17, it=2))), I.E_OPCODE, 2),
    ("nb on control", lambda: _raw((w0(I.NOP, nb=1),) + (0,) * 7), I.E_RESERVED, 2),
    ("iterations on control", lambda: _raw((w0(I.ADD, it=1),) + (0,) * 7), I.E_RESERVED, 2),
    ("w3 on yield", lambda: _raw((w0(I.YIELD), 0, 0, 1, 0, 0, 0, 0)), I.E_RESERVED, 2),
    ("w1 on nop", lambda: _raw((w0(I.NOP), 1) + (0,) * 6), I.E_RESERVED, 2),
    ("branch w1 high bits", lambda: _raw((w0(I.JMP), 0x100) + (0,) * 6), I.E_RESERVED, 2),
    ("block high bits", lambda: _raw((w0(I.BLOCK), 0x80) + (0,) * 6), I.E_RESERVED, 2),
    ("undefined flag", lambda: _raw(_dot(w1=DOT_OK[1] | (1 << 26))), I.E_RESERVED, 2),
    ("unused channel region", lambda: _raw(_dot(w1=DOT_OK[1] | (1 << 12))), I.E_RESERVED, 2),
    ("unused channel word", lambda: _raw(_dot(w5=0x80040000)), I.E_RESERVED, 2),
    ("w7 on dotsig", lambda: _raw(_dot(w7=1)), I.E_RESERVED, 2),
    ("absent subroutine", _absent, I.E_ABSENT, 3),
    ("iterations > MAX_ITER", lambda: _raw(_dot(w0=w0(I.DOTSIG, it=101))), I.E_FIELD, 2),
    ("iterations 0", lambda: _raw(_dot(w0=w0(I.DOTSIG))), I.E_FIELD, 2),
    ("region >= NREGIONS", lambda: _raw(_dot(w1=(2 << 8) | (6 << 4))), I.E_FIELD, 2),
    ("dimension 0", lambda: _raw(_dot(w6=0)), I.E_FIELD, 2),
    ("load empty mask", lambda: _raw((w0(I.LOAD, it=1), 0, 0x80010000, 0, 0, 0, 0, 0)), I.E_FIELD, 2),
    ("amem two regions", lambda: _raw((w0(I.LOAD, it=1), (1 << 24) | 3, 0, 0, 0, 0, 0, 0)), I.E_FIELD, 2),
    ("amem past AMEM_DEPTH", lambda: _raw((w0(I.LOAD, it=17), (1 << 24) | 1, 0, 0, 0, 0, 0, 0)),
     I.E_FIELD, 2),
    ("access both modes", lambda: _raw(_dot(w2=0xC0040000)), I.E_ACCESS, 2),
    ("register offset past 14 bits", lambda: _access_by_register(0x3FF8), I.E_ACCESS, 1),
    ("negative register offset", lambda: _access_by_register(-9), I.E_ACCESS, 1),
    ("vector length", lambda: _raw(_dot(w3=0x80030000)), I.E_LENGTH, 2),
    ("scalar length", lambda: _raw(_dot(w4=0x80020000)), I.E_LENGTH, 2),
    ("resume outside group", _resume_outside, I.E_RESUME, 1),
    ("branch target (not taken)", lambda: _raw((w0(I.BLT, ra=1), 200) + (0,) * 6), I.E_TARGET, 2),
    ("run off the end", lambda: nops(2), I.E_PC_RANGE, 2),
    ("lowest code wins: reserved < field < length",
     lambda: _raw(_dot(w0=w0(I.DOTSIG), w1=DOT_OK[1] | (1 << 27), w3=0x80030000)), I.E_RESERVED, 2),
    ("lowest code wins: field < access",
     lambda: _raw(_dot(w1=(2 << 8) | (7 << 4), w2=0xC0040000)), I.E_FIELD, 2),
    ("load out of memory", lambda: nops(1).load(acc(4), MEM // 16 - 2, regions=[0]).end(), I.E_AXI, 1),
    ("store out of memory", lambda: nops(1).store(ch(0, 4), 1 << 20).end(), I.E_AXI, 1),
]


@pytest.mark.parametrize("name,build,code,pc", ERROR_CASES, ids=[c[0] for c in ERROR_CASES])
def test_error_code_and_pc(name, build, code, pc):
    cfg = PUConfig(lanes=4, nregions=6, depth=256, amem_depth=64, max_iter=100, max_dim=32,
                   subroutines=[s for s in I.ALL_SUBROUTINES if s != I.L2REG])
    p = build()
    if isinstance(p, Program):
        p = p.assemble().image
    r, m, mem = run(p, cfg, ctx_words=[0] * 31 + [0x5A5A])
    assert (r.status, r.err_code, r.err_pc) == ("error", code, pc), r.events[-1].info
    assert r.pc_trace[-1] == (pc - 1 if code == I.E_PC_RANGE else pc)   # E_PC_RANGE: nothing fetched
    assert mem.read_words(CTX, 32)[-1] == 0x5A5A and not mem.read_words(CTX, 31).any()


def _img(n=None, sp=0xFF, lp=0xFF, extra=(0,) * 5, k=2):
    return build_image([(w0(I.NOP),) + (0,) * 7] * (k - 1) + [(w0(I.JMP), 0xFF) + (0,) * 6],
                       sp, lp, n=n, header_extra=extra)


@pytest.mark.parametrize("kind,image,ctx_words,prog,ctx,code", [
    ("count 0", _img(n=0), None, PROG, CTX, I.E_HEADER),
    ("count 256", _img(n=256), None, PROG, CTX, I.E_HEADER),
    ("store pc past end", _img(sp=2), None, PROG, CTX, I.E_HEADER),
    ("load pc past end", _img(lp=5), None, PROG, CTX, I.E_HEADER),
    ("header word 5", _img(extra=(0, 0, 1, 0, 0)), None, PROG, CTX, I.E_HEADER),
    ("misaligned program", _img(), None, 16, CTX, I.E_HEADER),
    ("state 2", _img(), [2, 0xFF] + [0] * 30, PROG, CTX, I.E_CONTEXT),
    ("state 7", _img(), [7] + [0] * 31, PROG, CTX, I.E_CONTEXT),
    ("saved pc word", _img(), [1, 0x100] + [0] * 30, PROG, CTX, I.E_CONTEXT),
    ("misaligned context", _img(), None, PROG, CTX + 16, I.E_CONTEXT),
    ("context outside memory", _img(), None, PROG, MEM, I.E_AXI),
    ("program outside memory", _img(), None, MEM - 32, CTX, I.E_AXI),
])
def test_start_errors_at_pc0(kind, image, ctx_words, prog, ctx, code):
    mem = Memory(MEM, 4)
    if prog + len(image) <= MEM:
        mem.write_bytes(prog, image)
    else:
        mem.write_bytes(prog, image[:32])
    if ctx + 128 <= MEM:
        mem.write_words(ctx, ctx_words or [0] * 32)
    r = Machine(CFG, mem).start(prog, ctx)
    assert (r.status, r.err_code, r.err_pc, r.pc_trace) == ("error", code, 0, [])


def test_context_write_failure_reports_yield_pc():
    # the context area is readable at START but the hook makes memory shrink before YIELD
    p = Program(CFG)
    p.nop().load(acc(1), 0, regions=[0]).yield_().end()
    def shrink(machine, call):
        machine.mem.data = machine.mem.data[:CTX]
    m, mem = setup(p.assemble().image, hook=shrink)
    m.request_switch()
    r = m.start(PROG, CTX)
    assert (r.status, r.err_code, r.err_pc) == ("error", I.E_AXI, 2)


# ---------------------------------------------------------------------------------
# context switch mechanics on a small program
# ---------------------------------------------------------------------------------
def switch_program(groups=True):
    p = Program(CFG)
    p.li(2, 3).label("loop").addi(1, 1, 1).add(3, 3, 1).yield_().blt(1, 2, "loop").end()
    if groups:
        p.store_context().addi(9, 9, 1).yield_().end()        # PCs 6, 7, 8
        p.load_context().addi(10, 10, 7).resume()             # PCs 9, 10
    return p


def test_switch_store_and_load_context_groups():
    m, mem = setup(switch_program().assemble().image)
    r = m.start(PROG, CTX, switch_at_yield=2)
    assert r.suspended and r.yields == 3
    assert r.pc_trace == [0, 1, 2, 3, 4, 1, 2, 3, 6, 7, 8]
    assert [e.kind for e in r.events if e.mnemonic == "YIELD"] == ["yield", "switch", "yield"]
    ctx = read_context(mem, CTX)
    assert ctx["state"] == 1 and ctx["pc"] == 4
    assert ctx["regs"] == [0, 2, 3, 3] + [0] * 12          # R9 of the group is not saved
    r2 = m.start(PROG, CTX)
    assert r2.finished
    assert r2.pc_trace == [9, 10, 4, 1, 2, 3, 4, 5]
    assert r2.regs[1:4] == [3, 3, 6] and r2.regs[10] == 7 and r2.regs[9] == 0
    ctx = read_context(mem, CTX)
    assert ctx["state"] == 2 and ctx["pc"] == 0xFF and ctx["regs"] == r2.regs


def test_switch_without_groups_and_pending_request():
    m, mem = setup(switch_program(groups=False).assemble().image)
    m.request_switch()
    r = m.start(PROG, CTX)
    assert r.suspended and r.pc_trace == [0, 1, 2, 3] and not m.switch_pending
    assert read_context(mem, CTX)["pc"] == 4
    r = m.start(PROG, CTX)
    assert r.finished and r.pc_trace == [4, 1, 2, 3, 4, 1, 2, 3, 4, 5] and r.regs[3] == 6


def test_yield_inside_group_is_nop_and_request_stays_pending():
    m, mem = setup(switch_program().assemble().image)
    r = m.start(PROG, CTX, switch_at_yield=1,
                on_step=lambda mach, pc: mach.request_switch() if pc == 6 else None)
    assert r.suspended and r.pc_trace[-3:] == [6, 7, 8] and m.switch_pending
    r = m.start(PROG, CTX)                      # the pending request takes the next YIELD
    assert r.suspended and r.pc_trace == [9, 10, 4, 1, 2, 3, 6, 7, 8]
    assert read_context(mem, CTX)["regs"][1] == 2


def test_finished_program_ignores_later_switch_until_yield():
    m, mem = setup(switch_program().assemble().image)
    r = m.start(PROG, CTX)
    assert r.finished and r.regs[3] == 6 and r.yields == 3


# ---------------------------------------------------------------------------------
# the subroutine hook (stub subroutines for the RTL register machine)
# ---------------------------------------------------------------------------------
def small_sgd(cfg, base=0, **kw):
    rng = np.random.default_rng(SEED)
    m, n, epochs = 16, 5, 2
    A = rng.uniform(-1, 1, (m, n))
    b = A @ rng.normal(size=n)
    order = np.array([rng.permutation(m) for _ in range(epochs)])
    job = sgd_job(m=m, n=n, loss="ridge", alpha=0.2, lam2=0.01, epochs=epochs, batch=2,
                  partition=4, cfg=cfg, base=base, **kw)
    gold = sgd_mod.sgd(A, b, loss="ridge", alpha=0.2, lam2=0.01, epochs=epochs, order=order,
                       batch=2, fmt=FMT)
    return job, (A, b, order), gold


def small_scd(cfg, base=0):
    rng = np.random.default_rng(SEED + 1)
    m, n, epochs, P = 12, 5, 2, 4
    A = rng.uniform(-1, 1, (m, n))
    b = A @ rng.normal(size=n)
    co = np.array([[rng.permutation(n) for _ in range(m // P)] for _ in range(epochs)])
    job = scd_job(m=m, n=n, loss="lasso", alpha=0.5, lam1=0.01, epochs=epochs, partition=P,
                  cfg=cfg, base=base)
    gold = scd_mod.scd(A, b, loss="lasso", alpha=0.5, lam1=0.01, epochs=epochs, partition=P,
                       coord_order=co, fmt=FMT)
    return job, (A, b, co), gold


def fresh(job, data, cfg, hook=None, size=None):
    mem = Memory(size or job.end, cfg.lanes)
    job.load(mem, *data)
    return Machine(cfg, mem, subroutine_hook=hook), mem


def test_stub_hook_sees_the_same_calls_and_control_flow():
    cfg = PUConfig(lanes=4, depth=256)
    job, data, gold = small_sgd(cfg)
    m, mem = fresh(job, data, cfg)
    ref = m.start(job.prog_addr, job.ctx_addr)
    assert ref.finished and np.array_equal(job.model(mem), gold.x)
    calls = []
    m2, mem2 = fresh(job, data, cfg, hook=lambda mach, c: calls.append(c))
    r = m2.start(job.prog_addr, job.ctx_addr)
    assert r.finished and r.pc_trace == ref.pc_trace and r.regs == ref.regs
    assert calls == [e.info["call"] for e in ref.events if e.kind == "sub"]
    assert not np.array_equal(job.model(mem2), gold.x)      # stubs computed nothing
    # effective access words carry the register offsets: 2nd DOTSIG reads sample 2
    dots = [c for c in calls if c.op == I.DOTSIG]
    dim = -(-5 // 4)
    assert dots[1].access[1] & 0x3FFF == 2 * dim and dots[0].access[1] & 0x3FFF == 0
    assert calls[0].op == I.LOAD and calls[0].addr == job.line("x")
    # a stub returning an error code stops the machine at that instruction
    seen = []
    def failing(mach, c):
        seen.append(c)
        return I.E_AXI if len(seen) == 5 else None
    m3, _ = fresh(job, data, cfg, hook=failing)
    r = m3.start(job.prog_addr, job.ctx_addr)
    assert (r.status, r.err_code, r.err_pc) == ("error", I.E_AXI, seen[4].pc)


# ---------------------------------------------------------------------------------
# preemption, migration, interleaving on real programs
# ---------------------------------------------------------------------------------
@pytest.mark.parametrize("which", ["sgd", "scd"])
def test_preempt_at_random_yield_matches_uninterrupted(which):
    cfg = PUConfig(lanes=4, depth=256)
    job, data, gold = (small_sgd if which == "sgd" else small_scd)(cfg)
    m, mem = fresh(job, data, cfg)
    ref = m.start(job.prog_addr, job.ctx_addr)
    assert ref.finished
    total = job.yields_per_epoch * job.epochs
    rng = np.random.default_rng(SEED)
    for k in sorted(set(rng.integers(1, total + 1, size=3).tolist())):
        m2, mem2 = fresh(job, data, cfg)
        r = m2.start(job.prog_addr, job.ctx_addr, switch_at_yield=k)
        assert r.suspended, (which, k)
        m2.reset_engine()                         # nothing but memory survives the switch
        rest = run_to_end(job, m2)
        assert rest[-1].regs == ref.regs, (which, k)
        assert np.array_equal(mem2.data, mem.data), (which, k)
    assert np.array_equal(job.model(mem), gold.x)


def test_migration_to_a_second_machine():
    cfg = PUConfig(lanes=4, depth=256)
    job, data, gold = small_sgd(cfg)
    mA, memA = fresh(job, data, cfg)
    r = mA.start(job.prog_addr, job.ctx_addr, switch_at_yield=3)
    assert r.suspended
    mB, memB = fresh(job, data, cfg)              # fresh layout: program, data, fresh context
    job.copy_state(memA, memB)                    # the thread's context and model only
    rest = run_to_end(job, mB)
    assert rest[-1].finished
    assert np.array_equal(job.model(memB), gold.x)


def interleave(jobs, machine, k=1, limit=200):
    """Round robin: every job runs until its k-th YIELD (then suspends) or finishes."""
    done = [False] * len(jobs)
    for _ in range(limit):
        for i, j in enumerate(jobs):
            if not done[i]:
                r = j.start(machine, switch_at_yield=k)
                assert not r.error, (j.name, r.err_code, r.err_pc)
                done[i] = r.finished
        if all(done):
            return
    raise AssertionError("jobs did not finish")


def test_two_jobs_interleaved_on_one_machine():
    cfg = PUConfig(lanes=4, depth=256)
    j1, d1, g1 = small_sgd(cfg)
    j2, d2, g2 = small_scd(cfg, base=j1.end)
    mem = Memory(j2.end, cfg.lanes)
    j1.load(mem, *d1)
    j2.load(mem, *d2)
    interleave([j1, j2], Machine(cfg, mem))
    assert np.array_equal(j1.model(mem), g1.x)
    assert np.array_equal(j2.model(mem), g2.x) and np.array_equal(j2.z(mem), g2.z)


def test_interleaving_without_context_groups_loses_the_model():
    """The same schedule with an SGD program lacking StoreContext/LoadContext goes
    wrong: the check above can fail."""
    cfg = PUConfig(lanes=4, depth=256)
    j1, d1, g1 = small_sgd(cfg, context_groups=False)
    j2, d2, g2 = small_scd(cfg, base=j1.end)
    mem = Memory(j2.end, cfg.lanes)
    j1.load(mem, *d1)
    j2.load(mem, *d2)
    interleave([j1, j2], Machine(cfg, mem))
    assert not np.array_equal(j1.model(mem), g1.x)
    assert np.array_equal(j2.model(mem), g2.x)
