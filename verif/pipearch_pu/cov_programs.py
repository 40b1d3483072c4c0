"""Directed PipeArch-PU programs written for code coverage (issue 14).

Each builder returns ``(job, mem)``: a :class:`golden.pipearch_programs.Job` around a
program assembled with :class:`golden.pipearch_asm.Program` and the memory image (program,
fresh context, data).  ``verif/pipearch_pu/test_pipearch_pu.py`` runs them on the DUT and
on the ISS and compares the whole job memory and the PC trace; nothing here knows what the
RTL computes.

* :func:`sigmoid_sweep` -- SIGDELTA with the sigmoid on, every lane in every segment of
  the PWL table (plus both domain edges and beyond).
* :func:`amem_sweep` -- for each region: an amem LOAD into each of the 18 global
  channels' address memories, then every compute subroutine with all its channels in
  that region in amem mode (lines 0..63 loaded first; reads gather from lines 0..31,
  writes scatter into 32..63),
  LOAD and STORE through theirs; every result stored to its own area.
* :func:`fifo_sweep` -- every compute subroutine with channel k in region
  (rot + k) mod NREGIONS and every channel in FIFO mode, for each rotation.
* :func:`bad_opcode`, :func:`every_register` -- each undefined opcode, every register on
  both ALU ports, SUB and BEQ.
* :func:`step_sweep` -- iterations >= 2 on every (region, channel) pair in BRAM mode
  (keep-count on and off), LOAD/STORE with 2 iterations on every region.
* :func:`stall_deep` -- stall_sweep with enough results (and full-range operands) that
  every producer waits on the full FIFO with data in each pipeline stage.
* :func:`large_w7` -- L2REG c and SCD alpha*lambda1 of integer part 18..31 (saturation).
* :func:`stall_sweep` -- every compute subroutine pushes its results (FIFO mode) into a
  region whose FIFO is full while a non-blocking STORE drains it (the FIFO in region
  i mod NREGIONS for the i-th subroutine).
"""
from __future__ import annotations

import numpy as np

from golden import pipearch_isa as I
from golden.fixedpoint import sigmoid_table
from golden.pipearch_asm import PUConfig, Program, acc, ch
from golden.pipearch_iss import Memory
from golden.pipearch_programs import Job, _Alloc

COMPUTE = (I.DOTSIG, I.SIGDELTA, I.SCALAR, I.MULTSUB, I.L2REG)
SMALL = 1 << 12     # operand scale keeping products away from saturation


def _job(cfg: PUConfig, prog: Program, al: _Alloc, name: str, data: dict) -> tuple[Job, Memory]:
    asm = prog.assemble()
    job = Job(name, cfg, asm, 0, al.prog, al.ctx, dict(al.areas), al.end, 0, 1, tuple(al.areas))
    mem = Memory(job.end, cfg.lanes)
    for line, arr in data.items():
        mem.write_lines(line, np.asarray(arr, dtype=np.int64))
    job.place_program(mem)
    return job, mem


def _words(rng, shape, scale=SMALL):
    return rng.integers(-scale, scale, size=shape, dtype=np.int64)


def _length(kind: str, dim: int) -> int:
    return dim if kind == "vector" else 1


def compute(p: Program, cfg: PUConfig, op: int, chans, *, dim: int, it: int, nb=False, flag=False):
    """One compute subroutine with the channels ``chans`` (``ch(...)`` in channel order)."""
    f = cfg.fmt
    if op == I.DOTSIG:
        p.dotsig(*chans, dim=dim, iterations=it, sigmoid=flag, nb=nb)
    elif op == I.SIGDELTA:
        p.sigdelta(*chans, dim=dim, iterations=it, sigmoid=flag, nb=nb)
    elif op == I.SCALAR:
        p.scalar(*chans, alpha=int(f.to_fixed(0.25)), al=int(f.to_fixed(0.01)), mode="scd" if flag else "sgd",
                 iterations=it, nb=nb)
    elif op == I.MULTSUB:
        p.multsub(*chans, dim=dim, iterations=it, s_lane1=flag, nb=nb)
    else:
        p.l2reg(*chans, dim=dim, c=int(f.to_fixed(0.125)), iterations=it, nb=nb)


def sigmoid_sweep(cfg: PUConfig, rng) -> tuple[Job, Memory]:
    t = sigmoid_table(cfg.fmt)
    nseg, r, L = len(t.base), t.r_int, cfg.lanes
    edges = [-r, r - 1, -r - 1, r, -r + (1 << t.shift) - 1, r - (1 << t.shift)]
    z = np.array([[-r + (((i + j) % nseg) << t.shift) + int(rng.integers(0, 1 << t.shift)) for j in range(L)]
                  for i in range(nseg)] + [[edges[(i + j) % len(edges)] for j in range(L)] for i in range(2)],
                 dtype=np.int64)
    assert all(len({(int(v) + r) >> t.shift for v in z[:nseg, j]}) == nseg for j in range(L))
    b = _words(rng, z.shape)
    al = _Alloc(cfg, 0)
    za, ba, ya = al.area("z", len(z)), al.area("b", len(z)), al.area("y", len(z))
    n = min(32, cfg.max_dim, cfg.depth)
    p = Program(cfg, "sigmoid_sweep")
    for s in range(0, len(z), n):
        k = min(n, len(z) - s)
        p.load(ch(0, k), za + s)
        p.load(ch(1, k), ba + s)
        p.sigdelta(ch(0, k), ch(1, k), ch(2, k), dim=k, sigmoid=True)
        p.store(ch(2, k), ya + s)
    p.end()
    return _job(cfg, p, al, "sigmoid_sweep", {za: z, ba: b})


def amem_sweep(cfg: PUConfig, rng, regions=None) -> tuple[Job, Memory]:
    L, half = cfg.lanes, 32
    dim, it = 4, 2
    n_ent = dim * it
    assert n_ent <= cfg.amem_depth and n_ent % L == 0 and 2 * half <= cfg.depth
    regions = range(cfg.nregions) if regions is None else regions
    al = _Alloc(cfg, 0)
    data = {}
    p = Program(cfg, "amem_sweep")
    outs = 0
    for r in regions:
        for g, (op, k) in enumerate(I.GLOBAL_CHANNELS):
            write = I.CHANNELS[op][k][1] == "w"
            idx = (half if write else 0) + rng.permutation(half)[:n_ent]
            a = al.area(f"amem{r}_{g}", n_ent // L)
            data[a] = idx.reshape(-1, L)
            p.load_amem(r, g, 0, a, lines=n_ent // L)
        # lines 0..63 of the region from memory: region RAMs keep their contents across
        # resets and earlier runs, and the stores below read back all of 32..63
        a = al.area(f"data{r}", 2 * half)
        data[a] = _words(rng, (2 * half, L))
        p.load(ch(r, 2 * half), a)
        for op in COMPUTE:
            chans = [ch(r, _length(kind, dim), 0, keep=True, amem=True) for _, _, kind in I.CHANNELS[op]]
            compute(p, cfg, op, chans, dim=dim, it=it, flag=bool(op & 1))
            p.store(ch(r, half, half), al.area(f"out{outs}", half))
            outs += 1
        a = al.area(f"scatter{r}", n_ent)
        data[a] = _words(rng, (n_ent, L))
        p.load(acc(n_ent, 0, keep=True, amem=True), a, regions=[r])      # LOAD.out through its amem
        p.store(ch(r, half, half), al.area(f"out{outs}", half))
        p.store(ch(r, n_ent, 0, keep=True, amem=True), al.area(f"out{outs + 1}", n_ent))   # STORE.in gather
        outs += 2
    p.end()
    return _job(cfg, p, al, "amem_sweep", data)


def fifo_sweep(cfg: PUConfig, rng) -> tuple[Job, Memory]:
    L, NRG = cfg.lanes, cfg.nregions
    dim, it = 4, 2
    assert NRG >= 4
    al = _Alloc(cfg, 0)
    data = {}
    p = Program(cfg, "fifo_sweep")
    for rot in range(NRG):
        for op in COMPUTE:
            chans = I.CHANNELS[op]
            regs = [(rot + k) % NRG for k in range(len(chans))]
            for k, (_, rw, kind) in enumerate(chans):
                if rw == "r":
                    n = _length(kind, dim) * it
                    a = al.area(f"in{rot}_{op}_{k}", n)
                    data[a] = _words(rng, (n, L))
                    p.load(ch(regs[k], n, 0, fifo=True), a)
            compute(p, cfg, op, [ch(regs[k], _length(kind, dim), 0, fifo=True) for k, (_, _, kind) in enumerate(chans)],
                    dim=dim, it=it, flag=bool(op & 1))
            n = _length(chans[-1][2], dim) * it
            p.store(ch(regs[-1], n, 0, fifo=True), al.area(f"out{rot}_{op}", n))
    p.end()
    return _job(cfg, p, al, "fifo_sweep", data)


def stall_sweep(cfg: PUConfig, rng) -> tuple[Job, Memory]:
    """For the ISS the non-blocking STORE pops the DEPTH prefilled lines first, then the
    producer pushes its results, which the last STORE pops (what the hardware does too:
    its FIFO holds the prefill ahead of the results)."""
    L, NRG, D = cfg.lanes, cfg.nregions, cfg.depth
    dim, it = 4, 4
    al = _Alloc(cfg, 0)
    data = {}
    p = Program(cfg, "stall_sweep")
    for i, op in enumerate(COMPUTE):           # the FIFO in region i mod NREGIONS
        rot = i % NRG
        chans = I.CHANNELS[op]
        kw = len(chans) - 1
        regs = [(rot + 1 + k) % NRG for k in range(kw)] + [rot]
        ins = []
        for k in range(kw):
            n = _length(chans[k][2], dim) * it
            a = al.area(f"in{rot}_{op}_{k}", n)
            data[a] = _words(rng, (n, L))
            p.load(ch(regs[k], n, 0), a)
            ins.append(ch(regs[k], _length(chans[k][2], dim), 0, keep=True))
        a = al.area(f"fill{rot}_{op}", D)
        data[a] = _words(rng, (D, L))
        p.load(ch(rot, D, 0, fifo=True), a)
        p.store(ch(rot, D, 0, fifo=True), al.area(f"drain{rot}_{op}", D), nb=True)
        nw = _length(chans[kw][2], dim)
        compute(p, cfg, op, ins + [ch(rot, nw, 0, fifo=True)], dim=dim, it=it, nb=True, flag=bool(op & 1))
        p.store(ch(rot, nw * it, 0, fifo=True), al.area(f"out{rot}_{op}", nw * it))
    p.end()
    return _job(cfg, p, al, "stall_sweep", data)


def undefined_opcodes() -> list[int]:
    legal = set(I.CONTROL_OPS) | set(I.SUB_OPS)
    return [op for op in range(1 << (32 - I.OP_SHIFT)) if op not in legal]


def bad_opcode(cfg: PUConfig, op: int, pc: int) -> tuple[Job, Memory]:
    """``pc`` NOPs, then an instruction with the undefined opcode ``op`` (the machine stops
    there with E_OPCODE), then END."""
    al = _Alloc(cfg, 0)
    p = Program(cfg, f"opcode_{op}")
    for _ in range(pc):
        p.nop()
    p.raw(op << I.OP_SHIFT, 0, 0, 0, 0, 0, 0, 0)
    p.end()
    return _job(cfg, p, al, f"opcode_{op}", {})


def bad_instruction(cfg: PUConfig, words, pc: int, name: str = "bad_instruction") -> tuple[Job, Memory]:
    """``pc`` NOPs, then the 8 instruction ``words`` as they are, then END (assembled with
    a NOP in that slot, the words written over it in the memory image: no assembler
    check, not even the program-level ones such as RESUME outside a LoadContext group)."""
    al = _Alloc(cfg, 0)
    p = Program(cfg, name)
    for _ in range(pc + 1):
        p.nop()
    p.end()
    job, mem = _job(cfg, p, al, name, {})
    mem.write_bytes(job.prog_addr + I.HEADER_BYTES + 4 * I.INSTR_WORDS * pc,
                    np.asarray([int(w) & 0xFFFFFFFF for w in words], dtype="<u4").tobytes())
    return job, mem


def every_register(cfg: PUConfig, rng) -> tuple[Job, Memory]:
    """R1-R15 written (LI) and read on both ALU ports (ADD Rk, Rk, R(16-k)), SUB, and BEQ
    taken and not taken; END stores the registers in the context."""
    al = _Alloc(cfg, 0)
    p = Program(cfg, "every_register")
    vals = [int(v) for v in rng.integers(-(1 << 31), 1 << 31, size=16)]
    for k in range(1, 16):
        p.li(k, vals[k])
    for k in range(1, 16):
        p.add(k, k, 16 - k)
    p.add(1, 0, 15)
    p.sub(15, 15, 0)
    p.beq(1, 15, "skip")          # R1 = R15 + 0 - 0: taken only if equal
    p.addi(2, 2, 1)
    p.label("skip")
    p.beq(2, 3, "end")            # not taken (distinct random values)
    p.addi(3, 3, 5)
    p.label("end")
    p.end()
    return _job(cfg, p, al, "every_register", {})


AXI_ERROR_CASES = ("load", "store", "load_nb", "store_nb")


def axi_error(cfg: PUConfig, rng, mem_bytes: int, case: str) -> tuple[Job, Memory]:
    """A LOAD whose 4 lines run across the end of a main memory of ``mem_bytes`` (its last
    line inside, the rest past the end: an AXI error response on those beats), or a STORE
    of 4 lines wholly past the end (one crossing the end would write its lines inside the
    memory, which the ISS, checking the range first, does not), after a LOAD/STORE pair
    that works.  ``*_nb``: the failing transfer is non-blocking,
    followed by NOPs and a BLOCK on it.  The ISS (memory of ``mem_bytes``) stops with
    ``E_AXI`` at the failing instruction's PC."""
    assert case in AXI_ERROR_CASES, case
    L, n = cfg.lanes, 4
    last = mem_bytes // cfg.line_bytes - 1          # the last line of the memory
    al = _Alloc(cfg, 0)
    src, dst = al.area("src", n), al.area("dst", n)
    p = Program(cfg, f"axi_error_{case}")
    p.load(ch(0, n), src)
    p.store(ch(0, n), dst)
    nb = case.endswith("_nb")
    if case.startswith("load"):
        p.load(ch(1, n), last, nb=nb)
    else:
        p.store(ch(0, n), last + 1, nb=nb)
    if nb:
        p.nop()
        p.nop()
        p.block(I.LOAD if case.startswith("load") else I.STORE)
    p.store(ch(0, n), dst)                          # not reached
    p.end()
    return _job(cfg, p, al, f"axi_error_{case}", {src: _words(rng, (n, L))})


def step_sweep(cfg: PUConfig, rng) -> tuple[Job, Memory]:
    """Iterations >= 2 on every (region, global channel) pair in BRAM mode: every compute
    subroutine with channel k in region (rot + k) mod NREGIONS for each rotation, reads
    alternating keep-count on/off (the position advancing across iterations or every
    iteration re-reading its first ``length`` lines), writes with keep-count on; LOAD and
    STORE with 2 iterations into / out of every region (issue 14: each channel module's
    iteration counter steps)."""
    L, NRG = cfg.lanes, cfg.nregions
    dim, it = 4, 2
    al = _Alloc(cfg, 0)
    data = {}
    p = Program(cfg, "step_sweep")
    for rot in range(NRG):
        for j, op in enumerate(COMPUTE):
            chans = I.CHANNELS[op]
            regs = [(rot + k) % NRG for k in range(len(chans))]
            cs = []
            for k, (_, rw, kind) in enumerate(chans):
                ln = _length(kind, dim)
                keep = rw == "w" or (j + k + rot) % 2 == 0
                if rw == "r":
                    n = ln * (it if keep else 1)
                    a = al.area(f"in{rot}_{op}_{k}", n)
                    data[a] = _words(rng, (n, L))
                    p.load(ch(regs[k], n, 0), a)
                cs.append(ch(regs[k], ln, 0, keep=keep))
            compute(p, cfg, op, cs, dim=dim, it=it, flag=bool((op + rot) & 1))
            n = _length(chans[-1][2], dim) * it
            p.store(ch(regs[-1], n, 0), al.area(f"out{rot}_{op}", n))
    for r in range(NRG):
        a = al.area(f"ld{r}", 2 * 3)
        data[a] = _words(rng, (2 * 3, L))
        p.load(ch(r, 3, 8, keep=True), a, iterations=2)
        p.store(ch(r, 3, 8, keep=True), al.area(f"st{r}", 2 * 3), iterations=2)
    p.end()
    return _job(cfg, p, al, "step_sweep", data)


def stall_deep(cfg: PUConfig, rng) -> tuple[Job, Memory]:
    """Like :func:`stall_sweep`, with enough results to outrun the drain: every compute
    subroutine pushes ``it`` results (DOTSIG with dim 1: one per line) into a full FIFO
    while a non-blocking STORE drains it through slow memory; once the Store data FIFO has
    filled, the STORE frees slots at the memory's rate and the producer waits with data in
    every pipeline stage (its output FIFO full, the stage enables low).  Inputs re-read
    the same ``dim`` lines every iteration (keep-count off) and span the whole Q32.F range
    (saturating products and differences)."""
    L, NRG, D = cfg.lanes, cfg.nregions, cfg.depth
    it = min(64, cfg.max_iter, D)
    al = _Alloc(cfg, 0)
    data = {}
    p = Program(cfg, "stall_deep")
    for i, op in enumerate(COMPUTE):
        dim = 1 if op == I.DOTSIG else 2
        rot = i % NRG
        chans = I.CHANNELS[op]
        kw = len(chans) - 1
        regs = [(rot + 1 + k) % NRG for k in range(kw)] + [rot]
        ins = []
        for k in range(kw):
            n = _length(chans[k][2], dim)
            a = al.area(f"in{rot}_{op}_{k}", n)
            data[a] = _words(rng, (n, L), scale=1 << (cfg.w - 1))
            p.load(ch(regs[k], n, 0), a)
            ins.append(ch(regs[k], n, 0))
        a = al.area(f"fill{rot}_{op}", D)
        data[a] = _words(rng, (D, L))
        p.load(ch(rot, D, 0, fifo=True), a)
        p.store(ch(rot, D, 0, fifo=True), al.area(f"drain{rot}_{op}", D), nb=True)
        nw = _length(chans[kw][2], dim)
        compute(p, cfg, op, ins + [ch(rot, nw, 0, fifo=True)], dim=dim, it=it, nb=True, flag=bool(op & 1))
        p.store(ch(rot, nw * it, 0, fifo=True), al.area(f"out{rot}_{op}", nw * it))
    p.end()
    return _job(cfg, p, al, "stall_deep", data)


def large_w7(cfg: PUConfig, rng) -> tuple[Job, Memory]:
    """L2REG with c and SCALAR (SCD mode) with alpha*lambda1 of integer part 18..31 (Q.F
    words 18.x..31.x): L2REG's c * x far beyond the format (its products saturate both
    ways) and the soft threshold larger than every operand; both leave a w7 with bits
    20:16 = 18..31 on the engine's held issue word (the amem channel id field of LOAD)."""
    L, F = cfg.lanes, cfg.f
    dim = 4
    al = _Alloc(cfg, 0)
    data = {}
    p = Program(cfg, "large_w7")
    big = 1 << (cfg.w - 2)
    x = rng.integers(-big, big, size=(dim, L), dtype=np.int64)
    xo = rng.integers(-big, big, size=(dim, L), dtype=np.int64)
    x[0, 0], x[1, 0], xo[0, 0], xo[1, 0] = big - 1, -big, -big, big - 1
    ax, axo = al.area("x", dim), al.area("xold", dim)
    data[ax], data[axo] = x, xo
    ga, gx = al.area("g", 1), al.area("xs", 1)
    data[ga], data[gx] = _words(rng, (1, L)), _words(rng, (1, L))
    p.load(ch(0, dim), ax)
    p.load(ch(1, dim), axo)
    p.load(ch(3, 1, 8), ga)
    p.load(ch(3, 1, 9), gx)
    for k in range(18, 32):
        w7 = (k << F) | int(rng.integers(0, 1 << F))
        if k % 2 == 0:
            p.l2reg(ch(0, dim), ch(1, dim), ch(2, dim), dim=dim, c=w7)
            p.store(ch(2, dim), al.area(f"l2reg{k}", dim))
        else:
            p.scalar(ch(3, 1, 8), ch(3, 1, 9), ch(3, 1, 10), alpha=int(cfg.fmt.to_fixed(0.5)), al=w7,
                     mode="scd")
            p.store(ch(3, 1, 10), al.area(f"scalar{k}", 1))
    p.end()
    return _job(cfg, p, al, "large_w7", data)


BUILDERS = {"sigmoid_sweep": sigmoid_sweep, "amem_sweep": amem_sweep, "fifo_sweep": fifo_sweep,
            "stall_sweep": stall_sweep, "every_register": every_register,
            "step_sweep": step_sweep, "large_w7": large_w7,
            "stall_deep": stall_deep}
