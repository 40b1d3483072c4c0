"""PipeArch-PU program library: SGD (Alg. 1), SCD (Alg. 2) and LRMF (Alg. 3).

Each ``*_job`` function takes the hyper-parameters and the PU configuration and
returns a job: the assembled program (``job.asm``: image, listing, instruction
count) plus its memory layout (``job.areas``: name -> (line address, lines)), the host
helpers to lay the data out (``job.load(mem, ...)``) and read the model back
(``job.model(mem)``), and what the runtime needs (``job.prog_addr``,
``job.ctx_addr``, ``job.yields_per_epoch``, ``job.state_areas()``).  The result in
memory equals the bit-true golden model (``golden.sgd.sgd`` / ``golden.scd.scd`` /
``golden.lrmf.lrmf`` with ``fmt = cfg.fmt``) exactly.

Memory layout of a job placed at byte address ``base`` (aligned to
``cfg.align``)::

    base                 program image (8 KiB reserved: header + up to 255 instructions)
    base + 8 KiB         context area (128 bytes, padded to a line)
    then                 the job's areas, line aligned, in ``job.areas`` order

A vector of ``n`` words occupies ``ceil(n/LANES)`` lines, zero padded; a scalar (a
label, an SCD coordinate, an LRMF value) occupies one line, in lane 0.

Data order.  The golden models take the visiting order as an input (SGD ``order``,
SCD ``coord_order``, LRMF ``entry_order``).  The programs have no data-dependent
control flow: the *host* lays the data out in that order and the program streams it
sequentially (SGD: the samples of epoch ``e`` in ``order[e]``, one copy of the data set
per epoch unless ``reshuffle=False``; SCD: the columns of every (epoch, partition) in
``coord_order[e, p]`` plus an address-memory permutation that scatters ``x`` so that the
k-th coordinate visited sits at region line k; LRMF: the entries of every tile in
``golden.lrmf.schedule`` order plus, per entry, the region line addresses of its M and
U rows).

SCD, LRMF and (by default) mini-batch SGD issue every subroutine blocking and access
regions in BRAM mode, so they are hazard-free by construction (the ISS result is the
hardware result).  Batch-1 SGD on a PU whose regions allow it (:func:`stream_regions_ok`)
is the streamed program of :func:`_sgd_stream_job`, and mini-batch SGD with
``stream=True`` that of :func:`_sgd_minibatch_stream_job`: every subroutine
non-blocking, FIFO-coupled, with the hazard freedom argued instruction by instruction
there.

Running: ``r = job.start(machine)`` (one START); :func:`run_to_end` runs, resuming
after every suspension; :func:`run_epochs` suspends at the last YIELD of every epoch
and returns the model after each epoch (for loss-per-epoch plots).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from . import _validate as V
from . import lrmf as lrmf_mod
from . import pipearch_isa as I
from . import pipearch_ops as ops
from . import sgd as sgd_mod
from . import scd as scd_mod
from .pipearch_asm import Assembled, Program, PUConfig, acc, ch
from .pipearch_iss import Machine, Memory, fresh_context, scalar_lines, vector_lines

PROG_RESERVE = I.HEADER_BYTES + I.PROG_MAX * I.INSTR_BYTES + I.INSTR_BYTES  # 8 KiB


def _cdiv(a, b):
    return -(-a // b)


def _require(cond, msg):
    if not cond:
        raise ValueError(msg)


@dataclass
class Job:
    """An assembled program and its memory layout (module docstring)."""

    name: str
    cfg: PUConfig
    asm: Assembled
    base: int
    prog_addr: int
    ctx_addr: int
    areas: dict
    end: int                     # first byte after the job's memory
    yields_per_epoch: int
    epochs: int
    model_areas: tuple           # names of the areas the program writes (state)
    info: dict = field(default_factory=dict)

    @property
    def n_instr(self) -> int:
        return self.asm.n

    def line(self, name) -> int:
        return self.areas[name][0]

    def place_program(self, mem: Memory):
        """Write the program image and a fresh context."""
        mem.write_bytes(self.prog_addr, self.asm.image)
        mem.write_words(self.ctx_addr, fresh_context())

    def state_areas(self):
        """``[(byte address, bytes)]`` of what a thread owns besides its read-only data:
        the context area and the areas the program writes (copy these to migrate)."""
        lb = self.cfg.line_bytes
        out = [(self.ctx_addr, I.CTX_BYTES)]
        for nm in self.model_areas:
            a, n = self.areas[nm]
            out.append((a * lb, n * lb))
        return out

    def copy_state(self, src: Memory, dst: Memory):
        for a, n in self.state_areas():
            dst.write_bytes(a, src.read_bytes(a, n))

    def start(self, machine: Machine, **kw):
        return machine.start(self.prog_addr, self.ctx_addr, **kw)


class _Alloc:
    def __init__(self, cfg: PUConfig, base: int):
        _require(base >= 0 and base % cfg.align == 0,
                 f"base = {base} must be a non-negative multiple of {cfg.align}")
        self.lb = cfg.line_bytes
        self.prog = base
        ctx = base + PROG_RESERVE
        self.ctx = _cdiv(ctx, cfg.align) * cfg.align
        self.next_line = _cdiv(self.ctx + I.CTX_BYTES, self.lb)
        self.areas = {}

    def area(self, name, lines):
        self.areas[name] = (self.next_line, int(lines))
        self.next_line += max(int(lines), 1)
        return self.areas[name][0]

    @property
    def end(self):
        return self.next_line * self.lb


def _check_cfg(cfg, need, name):
    """``need``: dict of minimum generics."""
    for k, v in need.items():
        have = getattr(cfg, k)
        _require(have >= v, f"{name}: the PU needs {k.upper()} >= {v}, the configuration has {have}")
    return cfg


def _pos(v, name):
    return V.pos_int(v, name)


# =====================================================================================
# SGD (PipeArch Alg. 1)
# =====================================================================================
def stream_regions_ok(cfg: PUConfig) -> str | None:
    """Why ``cfg`` cannot run the streamed SGD program (None: it can).  Regions 0..3 are
    the model ring (regular or replicated; replicated lets its FIFO reader and two BRAM
    readers run in parallel), two sample copies whose FIFO is a separate queue
    (type_replicated) and a FIFO for the steps (any)."""
    rc = cfg.region_configs
    if cfg.nregions < 4:
        return f"needs 4 regions, the PU has {cfg.nregions}"
    if rc[0] == "type_replicated":
        return "region 0 (model ring) must be regular or replicated: its FIFO and BRAM reads share storage"
    for r in (1, 2):
        if rc[r] != "type_replicated":
            return f"region {r} must be type_replicated (samples in BRAM mode plus a separate FIFO)"
    return None


def _sgd_finish(p, cfg, *, m, n, loss, alpha, lam2, epochs, batch, P, reshuffle, alpha_q, c_q,
                stream, al, base, x_addr, write_data) -> Job:
    """Assemble ``p`` and wrap it as an SGD job; ``write_data(mem, Aq, bq, order)`` lays
    out the program-specific sample area (the model line and the checks are shared)."""
    fmt, L = cfg.fmt, cfg.lanes
    name = f"sgd_{loss}" + ("_stream" if stream else "")
    job = Job(name, cfg, p.assemble(), base, al.prog, al.ctx, al.areas, al.end, m // P, epochs,
              ("x",), {"m": m, "n": n, "batch": batch, "partition": P, "loss": loss,
                       "alpha": alpha, "lam2": lam2, "reshuffle": reshuffle,
                       "alpha_q": alpha_q, "c_q": c_q, "stream": stream})

    def load(mem: Memory, A, b, order, x0=None):
        """Quantise like golden.sgd and lay out the model, samples and labels."""
        A = V.finite_array(A, "A", 2, (m, n))
        b = V.finite_array(b, "b", 1, (m,))
        order = V.permutations(order, "order", (epochs, m))
        if not reshuffle and not np.all(order == order[0]):
            raise ValueError("reshuffle=False needs the same order every epoch")
        x = np.zeros(n, dtype=np.int64) if x0 is None else fmt.to_fixed(V.finite_array(x0, "x0", 1, (n,)), name="x0")
        job.place_program(mem)
        mem.write_lines(x_addr, vector_lines(x, L))
        write_data(mem, fmt.to_fixed(A, name="A"), fmt.to_fixed(b, name="b"), order)
        job.data = (A, b)

    job.load = load
    job.model = lambda mem: mem.read_vector(x_addr, n)
    job.objective = lambda xw: sgd_mod.objective(job.data[0], job.data[1], fmt.to_float(xw), loss, lam2)
    return job


def _stream_why(cfg, Dl, P) -> str | None:
    """Why the streamed SGD program cannot run ``Dl``-line models in partitions of ``P``
    on ``cfg`` (None: it can)."""
    why = stream_regions_ok(cfg)
    if why:
        return why
    need = max(2 * Dl, 3 * (Dl + 1))       # model ring, ring of three sample blocks
    if cfg.depth < need:
        return f"the PU needs DEPTH >= {need}, the configuration has {cfg.depth}"
    if cfg.max_dim < Dl:
        return f"the PU needs MAX_DIM >= {Dl}, the configuration has {cfg.max_dim}"
    if cfg.depth + (P + 2) * (Dl + 1) > 0x4000:
        return f"partition = {P} too large for the 14-bit region offsets"
    return None


def _sgd_stream_job(cfg, m, n, loss, alpha, lam2, epochs, P, reshuffle, base, alpha_q, c_q) -> Job:
    """Batch-1 SGD as a streamed pipeline (``sgd_job(stream=True)``).

    Regions: 0 the model ring (``x`` pushed in FIFO mode, read back in BRAM mode at ring
    line R10), 1 and 2 two copies of a ring of sample blocks (LOAD broadcast, BRAM mode;
    a block is a sample's Dl lines then its label line, S = Dl+1 lines), and the FIFOs of
    regions 1, 2 and 3 carry dot products, steps ``t`` and step sizes.  Region offsets
    are taken modulo DEPTH, so both rings are plain register additions.  Per sample
    ``j`` (R7 = ring line of its block, R14 = main-memory line of block j+2)::

        DOTSIG   x_j <- FIFO 0 (as L2REG(j-1) pushes it),  a_j <- region 1 at R7,
                 dot -> FIFO 1
        SCALAR   dot <- FIFO 1,  b_j <- region 2 at R7+Dl,  s -> FIFO 3
        BLOCK    L2REG
        MULTSUB  x_j <- region 0 at R10,  a_j <- region 2 at R7,  s <- FIFO 3,  t -> FIFO 2
        L2REG    t <- FIFO 2,  x_j <- region 0 at R10,  x_j+1 -> FIFO 0 (ring line R10+Dl)
        LOAD     block j+2 -> regions 1, 2 at R7+2S (non-blocking)

    All subroutines are non-blocking, so DOTSIG(j+1) runs alongside MULTSUB(j) and
    L2REG(j): a sample costs about Dl cycles plus the latency from its last model line
    through DOTSIG and SCALAR to the first lines of MULTSUB and L2REG; the register
    machine issues 10 instructions per sample (and YIELD, BNE and the partition's
    bookkeeping once per partition, the latter while MULTSUB waits).  Hazard freedom by
    construction:

    * every FIFO has one producer and one consumer channel, so its order is program
      order whatever the timing;
    * a BRAM-mode read channel starts reading when its instruction issues, so MULTSUB(j)
      is issued after a BLOCK on L2REG(j-1), the writer of ``x_j`` (L2REG(j) is issued
      after L2REG(j-1) anyway, DOTSIG takes ``x_j`` from the FIFO);
    * the model ring (DEPTH >= 2*Dl) keeps ``x_j`` until L2REG(j) has read it;
    * LOAD(j+2) is decoded only once LOAD(j+1) is done, and DOTSIG(j+1) is issued after
      it, so block j+1 is in place; LOAD(j+2) is issued after MULTSUB(j), so every reader
      of block j-1 is done, and the sample ring holds three blocks (DEPTH >= 3*S).

    A YIELD follows every partition of ``P`` samples (where only the model and the
    blocks j+1, j+2 are live); a resumed thread refills the model ring from line 0
    (START empties the FIFOs) and reloads blocks j+1 and j+2 (LoadContext).

    Area ``ab``: the sample blocks in visiting order, one copy of the data per epoch
    (one in all if ``reshuffle=False``), then two more blocks (zeros, or with a single
    copy its first two blocks again) that the last two prefetches read.
    """
    L = cfg.lanes
    Dl = _cdiv(n, L)
    nparts = m // P
    S = Dl + 1
    why = _stream_why(cfg, Dl, P)
    _require(why is None, f"sgd_job(stream=True): {why}")
    copies = epochs if reshuffle else 1
    al = _Alloc(cfg, base)
    x_addr = al.area("x", Dl)
    ab_addr = al.area("ab", (copies * m + 2) * S)
    total = epochs * nparts
    RX, RA, RB, RS = 0, 1, 2, 3
    p = Program(cfg, f"sgd_{loss}_stream")

    def reduce(r, lab):              # R[r] mod DEPTH (R11 = DEPTH)
        p.label(lab)
        p.blt(r, 11, lab + "_ok")
        p.addi(r, r, -cfg.depth).jmp(lab)
        p.label(lab + "_ok")

    def sample_head():               # DOTSIG(j), SCALAR(j)
        p.dotsig(ch(RX, Dl, fifo=True), ch(RA, Dl, ra=True), ch(RA, 1, fifo=True),
                 dim=Dl, sigmoid=(loss == "logistic"), ra=7, nb=True)
        p.scalar(ch(RA, 1, fifo=True), ch(RB, 1, Dl, ra=True), ch(RS, 1, fifo=True), alpha=alpha_q,
                 ra=7, nb=True)

    def sample_tail(loop_to):        # MULTSUB(j), L2REG(j), LOAD(j+2), advance, branch
        p.block("l2reg")             # x_j is in the ring before MULTSUB's x channel reads it
        p.multsub(ch(RX, Dl, ra=True), ch(RB, Dl, rb=True), ch(RS, 1, fifo=True), ch(RB, Dl, fifo=True),
                  dim=Dl, ra=10, rb=7, nb=True)
        p.l2reg(ch(RB, Dl, fifo=True), ch(RX, Dl, ra=True), ch(RX, Dl, fifo=True), dim=Dl, c=c_q,
                ra=10, nb=True)
        p.load(acc(S, 2 * S, ra=True), 0, regions=[RA, RB], ra=7, rb=14, addr_rb=True, nb=True)
        p.addi(14, 14, S).addi(10, 10, Dl).addi(7, 7, S)
        loop_to()

    p.load(acc(Dl, fifo=True), x_addr, regions=[RX])          # the model ring starts at line 0
    p.li(11, cfg.depth).li(12, total).li(14, ab_addr).li(13, ab_addr + (m + 2) * S)
    p.load(acc(2 * S), 0, regions=[RA, RB], rb=14, addr_rb=True)   # blocks 0 and 1
    p.addi(14, 14, 2 * S)
    # first sample of a partition: its bookkeeping runs while MULTSUB waits for L2REG(j-1)
    p.label("part")
    sample_head()
    p.addi(12, 12, -1)
    if not reshuffle:                # end of the single copy: back to its block 2
        p.blt(14, 13, "copy_ok").addi(14, 14, -m * S)
        p.label("copy_ok")
    reduce(7, "red7")
    reduce(10, "red10")
    p.addi(9, 7, P * S)
    sample_tail(lambda: p.bge(7, 9, "part_end"))
    p.label("next")
    sample_head()
    sample_tail(lambda: p.blt(7, 9, "next"))
    p.label("part_end")
    p.yield_()                                                 # Alg. 1 line 15
    p.bne(12, 0, "part")
    p.label("done")
    p.block()
    p.store(ch(RX, Dl, ra=True), x_addr, ra=10)               # Alg. 1 line 16
    p.end()
    p.store_context()
    p.store(ch(RX, Dl, ra=True), x_addr, ra=10)
    p.end()
    p.load_context()
    p.li(10, 0)
    p.load(acc(Dl, fifo=True), x_addr, regions=[RX])
    p.addi(15, 14, -2 * S)
    p.load(acc(2 * S, ra=True), 0, regions=[RA, RB], ra=7, rb=15, addr_rb=True)   # blocks j+1, j+2
    p.resume()

    def write_data(mem, Aq, bq, order):
        seq = list(np.concatenate([order[e] for e in range(copies)]))
        if not reshuffle:
            seq += [order[0][0], order[0][1 % m]]
        for k, i in enumerate(seq):
            row = np.zeros(Dl * L, dtype=np.int64)
            row[:n] = Aq[i]
            mem.write_lines(ab_addr + k * S, row.reshape(Dl, L))
            mem.write_lines(ab_addr + k * S + Dl, scalar_lines(bq[i:i + 1], L))

    return _sgd_finish(p, cfg, m=m, n=n, loss=loss, alpha=alpha, lam2=lam2, epochs=epochs, batch=1,
                       P=P, reshuffle=reshuffle, alpha_q=alpha_q, c_q=c_q, stream=True, al=al,
                       base=base, x_addr=x_addr, write_data=write_data)


def _minibatch_stream_why(cfg, Dl, batch) -> str | None:
    """Why the streamed mini-batch SGD program cannot run ``Dl``-line models on ``cfg``
    (None: it can)."""
    why = stream_regions_ok(cfg)
    if why:
        return why
    need = max(3 * Dl, 4 * (Dl + 1))       # model ring + scratch, ring of four sample blocks
    if cfg.depth < need:
        return f"the PU needs DEPTH >= {need}, the configuration has {cfg.depth}"
    if cfg.max_dim < Dl:
        return f"the PU needs MAX_DIM >= {Dl}, the configuration has {cfg.max_dim}"
    return None


def _sgd_minibatch_stream_job(cfg, m, n, loss, alpha, lam2, epochs, batch, P, reshuffle, base,
                              alpha_q, c_q) -> Job:
    """Mini-batch SGD as a streamed pipeline (``sgd_job(batch > 1, stream=True)``).

    The golden update of a mini-batch ``t`` of ``B`` samples is
    ``x^(0) = x_t``, ``x^(k+1) = x^(k) - s_k a_k`` (``s_k = alpha/B (S(<x_t, a_k>) - b_k)``)
    and ``x_{t+1} = l2reg(x^(B), x_t)``: the ``B`` dot products all use ``x_t``, so they
    stream back to back; only the multiply-subtract chain is sequential, and it runs one
    sample behind them.  Regions as in :func:`_sgd_stream_job`: 0 the model ring (``x_t``
    at ring line R10, ``x_{t+1}`` pushed at R10+Dl by L2REG, the chain's scratch vector
    at R10+2Dl), 1 and 2 two copies of a ring of four sample blocks (S = Dl+1 lines:
    the sample, then its label; R7 = ring line of the next sample DOTSIG reads, R6 = of
    the sample MULTSUB reads), FIFOs 1 (dots), 2 (``x^(B)``), 3 (steps).  Per mini-batch
    (sample ``j`` = its first, ``j+B-1`` its last)::

        DOTSIG(j)     x <- FIFO 0 (as L2REG(t-1) pushes x_t), a <- region 1 at R7
        SCALAR(j)     dot <- FIFO 1, b <- region 2 at R7+Dl, s -> FIFO 3
        BLOCK L2REG   (x_t complete in the ring)
        for k = 1 .. B-1:
            DOTSIG(j+k)   x <- region 0 at R10 (BRAM), a <- region 1 at R7
            MULTSUB(j+k-1) x <- R10 (k = 1) or scratch, a <- region 2 at R6, s <- FIFO 3,
                           y -> scratch at R10+2Dl
            SCALAR(j+k)
            LOAD          block j+k+2 -> regions 1, 2 at R7+2S (non-blocking)
        MULTSUB(j+B-1)  x <- scratch (R10 if B = 1), y -> FIFO 2
        L2REG           x^(B) <- FIFO 2, x_t <- region 0 at R10, x_{t+1} -> FIFO 0
        LOAD          block j+B+2

    Hazard freedom by construction (BRAM-mode reads start at issue, FIFO reads wait):

    * every FIFO has one producer and one consumer channel (FIFO 0: LOAD or L2REG.y /
      DOTSIG.a -- never both producers live), so its order is program order;
    * DOTSIG(j+k) and MULTSUB(j) read ``x_t`` in BRAM mode only after BLOCK L2REG, the
      writer of ``x_t``; MULTSUB(j+k) reads the scratch vector only when issued, i.e.
      after MULTSUB(j+k-1), its writer, is done; L2REG(t) is issued after MULTSUB(j+B-2)
      is done (the last reader of ``x_t`` besides itself), and L2REG(t+1), which pushes
      ``x_{t+2}`` over this batch's scratch at R10+2Dl, after every MULTSUB of batch t;
      the scratch of batch t+1 (R10+3Dl) is written after L2REG(t), the last reader of
      ``x_t``, is done, and DEPTH >= 3 Dl keeps it off ``x_{t+1}``;
    * a LOAD of block ``i+3`` (ring slot of block ``i-1``) is issued after MULTSUB(i),
      DOTSIG(i+1) and SCALAR(i+1) are issued, so every reader of block ``i-1`` is done;
      DOTSIG(i) is issued after the LOAD of block ``i+1`` is decoded, which waits until the
      LOAD of block ``i`` is done.

    Issue order makes the dot products run ahead of the chain by one sample: MULTSUB(i)
    is issued (and waits for MULTSUB(i-1)) after DOTSIG(i+1) and before SCALAR(i+1), whose
    issue waits for SCALAR(i): with SCALAR first, MULTSUB(i+1) would also wait for the
    next dot product and scalar step (measured: 15 idle cycles between MULTSUBs instead
    of about 3).  A sample costs about Dl cycles plus MULTSUB's drain and re-issue, and a
    mini-batch adds the latency of the batch-1 recurrence once (L2REG -> DOTSIG ->
    SCALAR -> MULTSUB).

    A YIELD follows every partition (``P/B`` mini-batches), where only the model and
    blocks j+1..j+3 are live; a resumed thread refills the model ring from line 0 and
    reloads those three blocks (LoadContext).  Area ``ab``: the sample blocks in visiting
    order, one copy per epoch (one in all if ``reshuffle=False``), then three more blocks
    (zeros, or with a single copy its first three blocks again) for the last prefetches.
    """
    L = cfg.lanes
    B = batch
    Dl = _cdiv(n, L)
    nparts = m // P
    S = Dl + 1
    why = _minibatch_stream_why(cfg, Dl, B)
    _require(why is None, f"sgd_job(batch={B}, stream=True): {why}")
    copies = epochs if reshuffle else 1
    al = _Alloc(cfg, base)
    x_addr = al.area("x", Dl)
    ab_addr = al.area("ab", (copies * m + 3) * S)
    total = epochs * nparts
    RX, RA, RB, RS = 0, 1, 2, 3
    sig = loss == "logistic"
    p = Program(cfg, f"sgd_{loss}_mb_stream")

    def reduce(r, lab):              # R[r] mod DEPTH (R11 = DEPTH)
        p.label(lab)
        p.blt(r, 11, lab + "_ok")
        p.addi(r, r, -cfg.depth).jmp(lab)
        p.label(lab + "_ok")

    def dot(x_fifo):                 # DOTSIG of the sample at ring line R7
        if x_fifo:
            p.dotsig(ch(RX, Dl, fifo=True), ch(RA, Dl, ra=True), ch(RA, 1, fifo=True),
                     dim=Dl, sigmoid=sig, ra=7, nb=True)
        else:
            p.dotsig(ch(RX, Dl, ra=True), ch(RA, Dl, rb=True), ch(RA, 1, fifo=True),
                     dim=Dl, sigmoid=sig, ra=10, rb=7, nb=True)

    def scal():                      # SCALAR of the sample at ring line R7
        p.scalar(ch(RA, 1, fifo=True), ch(RB, 1, Dl, ra=True), ch(RS, 1, fifo=True), alpha=alpha_q,
                 ra=7, nb=True)

    def advance(lab):                # R6 = R7, R7 = R7 + S mod DEPTH
        p.addi(6, 7, 0).addi(7, 7, S)
        reduce(7, lab)

    def prefetch():                  # block (R7's sample + 2) -> ring line R7 + 2S
        p.load(acc(S, 2 * S, ra=True), 0, regions=[RA, RB], ra=7, rb=14, addr_rb=True, nb=True)
        p.addi(14, 14, S)

    def ms(x_off, last):             # MULTSUB of the sample at R6
        y = ch(RB, Dl, fifo=True) if last else ch(RX, Dl, 2 * Dl, ra=True)
        p.multsub(ch(RX, Dl, x_off, ra=True), ch(RB, Dl, rb=True), ch(RS, 1, fifo=True), y,
                  dim=Dl, ra=10, rb=6, nb=True)

    p.load(acc(Dl, fifo=True), x_addr, regions=[RX])          # x_0 at ring line 0
    p.li(11, cfg.depth).li(12, total).li(14, ab_addr).li(13, ab_addr + (m + 3) * S)
    p.li(9, B - 1).li(3, P // B)
    p.load(acc(3 * S), 0, regions=[RA, RB], rb=14, addr_rb=True)   # blocks 0, 1, 2
    p.addi(14, 14, 3 * S)
    p.label("part")
    p.addi(12, 12, -1)
    if not reshuffle:                # end of the single copy: back to its block 3
        p.blt(14, 13, "copy_ok").addi(14, 14, -m * S)
        p.label("copy_ok")
    p.li(4, 0)
    p.label("batch")
    dot(True)
    scal()
    p.block("l2reg")
    advance("red_a")
    if B == 1:
        ms(0, True)
    else:
        dot(False)
        ms(0, False)
        scal()
        prefetch()
        advance("red_b")
        if B >= 3:
            p.li(5, 1)
            p.label("chain")
            dot(False)
            ms(2 * Dl, False)
            scal()
            prefetch()
            advance("red_c")
            p.addi(5, 5, 1).blt(5, 9, "chain")
        ms(2 * Dl, True)
    p.l2reg(ch(RB, Dl, fifo=True), ch(RX, Dl, ra=True), ch(RX, Dl, fifo=True), dim=Dl, c=c_q,
            ra=10, nb=True)
    prefetch()
    p.addi(10, 10, Dl)
    reduce(10, "red10")
    p.addi(4, 4, 1).blt(4, 3, "batch")
    p.yield_()                                                 # Alg. 1 line 15
    p.bne(12, 0, "part")
    p.block()
    p.store(ch(RX, Dl, ra=True), x_addr, ra=10)               # Alg. 1 line 16
    p.end()
    p.store_context()
    p.store(ch(RX, Dl, ra=True), x_addr, ra=10)
    p.end()
    p.load_context()
    p.li(10, 0)
    p.load(acc(Dl, fifo=True), x_addr, regions=[RX])
    p.addi(15, 14, -3 * S)
    p.load(acc(3 * S, ra=True), 0, regions=[RA, RB], ra=7, rb=15, addr_rb=True)   # blocks j+1..j+3
    p.resume()

    def write_data(mem, Aq, bq, order):
        seq = list(np.concatenate([order[e] for e in range(copies)]))
        seq += [order[0][k % m] for k in range(3)] if not reshuffle else []
        for k, i in enumerate(seq):
            row = np.zeros(Dl * L, dtype=np.int64)
            row[:n] = Aq[i]
            mem.write_lines(ab_addr + k * S, row.reshape(Dl, L))
            mem.write_lines(ab_addr + k * S + Dl, scalar_lines(bq[i:i + 1], L))

    return _sgd_finish(p, cfg, m=m, n=n, loss=loss, alpha=alpha, lam2=lam2, epochs=epochs, batch=B,
                       P=P, reshuffle=reshuffle, alpha_q=alpha_q, c_q=c_q, stream=True, al=al,
                       base=base, x_addr=x_addr, write_data=write_data)


def sgd_job(*, m: int, n: int, loss: str, alpha: float, lam2: float, epochs: int,
            batch: int = 1, partition: int | None = None, reshuffle: bool = True,
            cfg: PUConfig | None = None, base: int = 0, context_groups: bool = True,
            stream: bool | None = None) -> Job:
    """Mini-batch SGD for ridge / logistic regression with L2 (PipeArch Alg. 1).

    Bit-exact with ``golden.sgd.sgd(A, b, loss=..., alpha, lam2, epochs, order, batch,
    x0, fmt=cfg.fmt)``.  ``partition`` samples (default ``m``; a multiple of
    ``batch`` dividing ``m``) are loaded into a region at a time; the program yields
    after every partition (``yields_per_epoch = m/partition``).  StoreContext stores
    the model, LoadContext loads it (``context_groups=False`` leaves both out: a
    suspended thread then loses its model -- for tests).

    Areas: ``x`` (model, ``ceil(n/LANES)`` lines), ``a`` (samples in visiting order,
    one vector each, one copy per epoch unless ``reshuffle=False``), ``b`` (labels, one
    line each, same order).

    ``stream=False``: every subroutine blocking, BRAM mode.  Regions: 0 model and its
    working copy, 1 the partition's samples, 2 its labels, 3 dot products and steps.

    ``stream=True`` (``batch == 1`` and :func:`stream_regions_ok`): the streamed
    pipeline of :func:`_sgd_stream_job` (its own layout), about ``D = ceil(n/LANES)`` cycles per sample
    plus a constant.  ``stream=None`` (default) streams whenever that is possible with
    batch 1.  ``stream=True`` with ``batch > 1``: the streamed mini-batch pipeline of
    :func:`_sgd_minibatch_stream_job` (its own layout: four sample blocks on chip, any
    partition that is a multiple of ``batch``), about ``D`` plus MULTSUB's re-issue per
    sample and the batch-1 recurrence once per mini-batch; only on request, so the
    default program of a mini-batch job (and the runtime's cost model of it) is unchanged.
    """
    cfg = cfg or PUConfig()
    fmt = cfg.fmt
    m, n, epochs, batch = _pos(m, "m"), _pos(n, "n"), _pos(epochs, "epochs"), _pos(batch, "batch")
    V.choice(loss, "loss", ("ridge", "logistic"))
    alpha = V.real(alpha, "alpha", positive=True)
    lam2 = V.real(lam2, "lam2", nonneg=True)
    P = m if partition is None else _pos(partition, "partition")
    _require(m % P == 0, f"partition = {P} does not divide m = {m}")
    _require(P % batch == 0, f"batch = {batch} does not divide partition = {P}")
    L = cfg.lanes
    Dl = _cdiv(n, L)
    nparts = m // P
    alpha_q = V.nonzero_word(fmt.to_fixed(alpha / batch, name="alpha/batch"), "alpha/batch", fmt, alpha / batch)
    c_q = V.nonzero_word(fmt.to_fixed(2.0 * alpha * lam2, name="2*alpha*lam2"), "2*alpha*lam2", fmt,
                         2.0 * alpha * lam2)
    if batch > 1 and stream:         # opt-in: the mini-batch pipeline
        _require(context_groups, "sgd_job(stream=True): context_groups=False (a resumed stream needs "
                                 "its model ring refilled)")
        return _sgd_minibatch_stream_job(cfg, m, n, loss, alpha, lam2, epochs, batch, P, reshuffle,
                                         base, alpha_q, c_q)
    why = (None if batch == 1 else f"batch = {batch} (streaming is batch 1)") \
        or (None if context_groups else "context_groups=False (a resumed stream needs its model ring refilled)") \
        or _stream_why(cfg, Dl, P)
    if stream is None:
        stream = why is None
    _require(not (stream and why), f"sgd_job(stream=True): {why}")
    if stream:
        return _sgd_stream_job(cfg, m, n, loss, alpha, lam2, epochs, P, reshuffle, base, alpha_q, c_q)
    _check_cfg(cfg, {"nregions": 4, "depth": max(2 * Dl, P * Dl, 2 * batch), "max_dim": Dl,
                     "max_iter": batch}, "sgd_job")
    _require(P * Dl <= (1 << 14) - 1, "partition * ceil(n/LANES) must fit the 14-bit length field")

    al = _Alloc(cfg, base)
    copies = epochs if reshuffle else 1
    x_addr = al.area("x", Dl)
    a_addr = al.area("a", copies * m * Dl)
    b_addr = al.area("b", copies * m)

    RX, RA, RB, RS = 0, 1, 2, 3
    p = Program(cfg, f"sgd_{loss}")
    p.load(acc(Dl), x_addr, regions=[RX])                     # Alg. 1 line 4: Load(xAddr, x)
    p.li(2, epochs).li(6, nparts).li(9, P).li(12, 2 * batch)
    p.li(3, a_addr).li(4, b_addr)
    p.label("epoch")
    p.li(5, 0)
    p.label("part")
    p.load(acc(P * Dl), 0, regions=[RA], rb=3, addr_rb=True)   # the partition's samples
    p.load(acc(P), 0, regions=[RB], rb=4, addr_rb=True)        # and labels
    p.li(7, 0).li(8, 0)
    p.label("batch")
    # dot_k = S(<x_t, a_k>) for the mini-batch (x repeats, a advances)
    p.dotsig(ch(RX, Dl), ch(RA, Dl, keep=True, ra=True), ch(RS, 1, 0, keep=True),
             dim=Dl, iterations=batch, sigmoid=(loss == "logistic"), ra=7)
    # s_k = alpha/batch * (dot_k - b_k)
    p.scalar(ch(RS, 1, 0, keep=True), ch(RB, 1, 0, keep=True, ra=True), ch(RS, 1, batch, keep=True),
             alpha=alpha_q, iterations=batch, ra=8)
    # x = x_t - s_0 a_0 (into the working copy), then - s_k a_k for k = 1..batch-1
    p.multsub(ch(RX, Dl), ch(RA, Dl, ra=True), ch(RS, 1, batch), ch(RX, Dl, Dl), dim=Dl, ra=7)
    if batch > 1:
        p.addi(10, 7, Dl).li(11, batch + 1)
        p.label("ms")
        p.multsub(ch(RX, Dl, Dl), ch(RA, Dl, ra=True), ch(RS, 1, 0, rb=True), ch(RX, Dl, Dl),
                  dim=Dl, ra=10, rb=11)
        p.addi(10, 10, Dl).addi(11, 11, 1).blt(11, 12, "ms")
    # x = x - 2 alpha lam2 x_t (back into the model lines)
    p.l2reg(ch(RX, Dl, Dl), ch(RX, Dl), ch(RX, Dl), dim=Dl, c=c_q)
    p.addi(7, 7, batch * Dl).addi(8, 8, batch).blt(8, 9, "batch")
    p.addi(3, 3, P * Dl).addi(4, 4, P).addi(5, 5, 1)
    p.yield_()                                                 # Alg. 1 line 15
    p.blt(5, 6, "part")
    if not reshuffle:
        p.li(3, a_addr).li(4, b_addr)
    p.addi(1, 1, 1).blt(1, 2, "epoch")
    p.store(ch(RX, Dl), x_addr)                                # Alg. 1 line 16
    p.end()
    if context_groups:
        p.store_context()
        p.store(ch(RX, Dl), x_addr)
        p.end()
        p.load_context()
        p.load(acc(Dl), x_addr, regions=[RX])
        p.resume()

    def write_data(mem, Aq, bq, order):
        for e in range(copies):
            rows = np.zeros((m, Dl * L), dtype=np.int64)
            rows[:, :n] = Aq[order[e]]
            mem.write_lines(a_addr + e * m * Dl, rows.reshape(m * Dl, L))
            mem.write_lines(b_addr + e * m, scalar_lines(bq[order[e]], L))

    return _sgd_finish(p, cfg, m=m, n=n, loss=loss, alpha=alpha, lam2=lam2, epochs=epochs, batch=batch,
                       P=P, reshuffle=reshuffle, alpha_q=alpha_q, c_q=c_q, stream=False, al=al,
                       base=base, x_addr=x_addr, write_data=write_data)


# =====================================================================================
# SCD (PipeArch Alg. 2)
# =====================================================================================
def _scd_stream_program(cfg, p, *, n, Pl, nl, nparts, epochs, loss, alpha_q, al_q, x_addr, z_addr,
                        b_addr, col_addr, perm_addr):
    """The streamed SCD program (``scd_job(stream=True)``), assembled into ``p``.

    Regions: 0 the ``z_p`` ring (FIFO pushes by LOAD and MULTSUB.y, popped by SIGDELTA.z
    and at the partition's end by STORE; read back in BRAM mode by MULTSUB.x), 1 and 2
    two copies of a ring of columns (LOAD broadcast, prefetched three ahead; column ``k``
    of a partition at ring line R10 as ``z^(k)`` is in region 0, DEPTH >= 4 Pl), region
    1's FIFO the residuals ``S(z) - b``, region 2's FIFO the gradients, 3 the model
    (scattered by the address memories: the k-th coordinate visited at line k, lane 1
    its ``mu``) and ``b_p`` at lines n..n+Pl-1.  Coordinate 0's SIGDELTA and DOTSIG are
    issued after the partition's loads; then per coordinate ``k`` (R5 = k, R10 = its ring
    line, R7 = main-memory line of column k+3)::

        SCALAR    g <- FIFO 2, x <- region 3 line R5, (x - mu, mu) -> the same line
        BLOCK     SCALAR    (mu in region 3 before MULTSUB's BRAM read of it)
        MULTSUB   z^(k) <- region 0 at R10, a_k <- region 2 at R10, mu <- lane 1 of
                  region 3 line R5, z^(k+1) -> FIFO 0 (ring line R10 + Pl)
        SIGDELTA  z^(k+1) <- FIFO 0, b_p <- region 3, S(z)-b -> FIFO 1   (k < n-1)
        DOTSIG    S(z)-b <- FIFO 1, a_k+1 <- region 1 at R10 + Pl, g -> FIFO 2
        LOAD      column k+3 -> regions 1, 2 at R10 + 3 Pl (non-blocking)

    SIGDELTA(k+1) streams ``z^(k+1)`` as MULTSUB(k) pushes it (issued right behind it, not
    after the loop's bookkeeping), so a coordinate costs Pl cycles plus the latency of
    SIGDELTA, DOTSIG, SCALAR and MULTSUB and the BLOCK.  Hazard freedom: every FIFO has
    one producer and one consumer channel at a time (FIFO 0: LOAD, then MULTSUB.y /
    SIGDELTA.z, then STORE.in); MULTSUB(k) reads ``z^(k)`` in BRAM mode after its writer
    (LOAD, or MULTSUB(k-1), the same subroutine) is done, and ``mu`` after BLOCK SCALAR;
    MULTSUB(k+1) pushes ``z^(k+2)`` over ring line R10+2Pl, not over ``z^(k)`` or
    ``z^(k+1)``; the LOAD of column k+3 (over column k-1) is issued after MULTSUB(k) and
    DOTSIG(k+1) are issued, so column k-1's readers are done, and DOTSIG(k+1) is issued
    after the LOAD of column k+2 is decoded, i.e. after the LOAD of column k+1 is done.
    A partition starts from line R10 of the rings wherever they are (START empties the
    FIFOs and the LoadContext group sets R10 = 0); it ends by storing ``x`` (address
    memory) and ``z_p`` (FIFO: it also empties FIFO 0), so a YIELD has no live on-chip
    state."""
    RZ, RC1, RC2, RM = 0, 1, 2, 3
    sig = loss == "logistic"

    def reduce(r, lab):              # R[r] mod DEPTH (R11 = DEPTH)
        p.label(lab)
        p.blt(r, 11, lab + "_ok")
        p.addi(r, r, -cfg.depth).jmp(lab)
        p.label(lab + "_ok")

    p.li(2, epochs).li(4, nparts).li(6, n).li(11, cfg.depth)
    p.li(12, col_addr).li(13, perm_addr)
    p.label("epoch")
    p.li(3, 0).li(8, z_addr).li(9, b_addr)
    p.label("part")
    p.load_amem(RM, "LOAD.out", 0, 0, lines=nl, rb=13, addr_rb=True)
    p.load_amem(RM, "STORE.in", 0, 0, lines=nl, rb=13, addr_rb=True)
    p.load(acc(n, amem=True), x_addr, regions=[RM])                  # Load(xAddr, x)
    p.load(acc(Pl, n), 0, regions=[RM], rb=9, addr_rb=True)         # Load(bAddr, b_p)
    p.load(acc(Pl, fifo=True), 0, regions=[RZ], rb=8, addr_rb=True)  # z_p at ring line R10
    p.load(acc(3 * Pl, ra=True), 0, regions=[RC1, RC2], ra=10, rb=12, addr_rb=True)  # columns 0-2
    p.addi(7, 12, 3 * Pl).li(5, 0).li(15, n - 1)

    def head(off):                   # SIGDELTA, DOTSIG of the coordinate at ring line R10 + off
        p.sigdelta(ch(RZ, Pl, fifo=True), ch(RM, Pl, n), ch(RC1, Pl, fifo=True), dim=Pl, sigmoid=sig,
                   nb=True)
        p.dotsig(ch(RC1, Pl, fifo=True), ch(RC1, Pl, off, ra=True), ch(RC2, 1, fifo=True), dim=Pl,
                 ra=10, nb=True)

    def tail():                      # SCALAR, BLOCK, MULTSUB of coordinate R5 at ring line R10
        p.scalar(ch(RC2, 1, fifo=True), ch(RM, 1, ra=True), ch(RM, 1, ra=True), alpha=alpha_q,
                 al=al_q, mode="scd", ra=5, nb=True)
        p.block("scalar")
        p.multsub(ch(RZ, Pl, ra=True), ch(RC2, Pl, ra=True), ch(RM, 1, rb=True), ch(RZ, Pl, fifo=True),
                  dim=Pl, s_lane1=True, ra=10, rb=5, nb=True)

    head(0)
    p.bge(5, 15, "last")
    p.label("coord")
    tail()
    head(Pl)                         # the next coordinate streams behind MULTSUB
    p.load(acc(Pl, 3 * Pl, ra=True), 0, regions=[RC1, RC2], ra=10, rb=7, addr_rb=True, nb=True)
    p.addi(7, 7, Pl).addi(10, 10, Pl)
    reduce(10, "red10")
    p.addi(5, 5, 1).blt(5, 15, "coord")
    p.label("last")
    tail()
    p.addi(10, 10, 2 * Pl)           # past z^(n): where the next partition's z_p lands
    reduce(10, "red10p")
    p.store(ch(RM, n, amem=True), x_addr)                            # Store(x, xAddr)
    p.store(ch(RZ, Pl, fifo=True), 0, rb=8, addr_rb=True)            # Store(z_p, zAddr)
    p.block()
    p.addi(8, 8, Pl).addi(9, 9, Pl).addi(12, 12, n * Pl).addi(13, 13, nl).addi(3, 3, 1)
    p.yield_()
    p.blt(3, 4, "part")
    p.addi(1, 1, 1).blt(1, 2, "epoch")
    p.end()
    p.load_context()
    p.li(10, 0)
    p.resume()


def _scd_pair_stream_program(cfg, p, *, n, Pl, nl, nparts, epochs, loss, alpha_q, al_q, x_addr,
                             z_addr, b_addr, col_addr, perm_addr):
    """The streamed SCD program over partition pairs (``scd_job(stream=True, interleave=2)``).

    Why pairs.  Within a partition golden.scd is a strict chain: coordinate k+1's
    gradient needs ``z_p^(k+1) = z_p^(k) - mu_k a_k`` (rounded per element), so one
    partition pays the SIGDELTA -> DOTSIG -> SCALAR -> MULTSUB latency per coordinate
    (:func:`_scd_stream_program`, Pl + 51.5 cycles).  Two partitions ``p = 2i`` and
    ``q = 2i+1`` share nothing but ``x`` (each keeps its own stale ``z``), and ``q``'s
    step on coordinate ``j`` reads ``x_j`` as ``p``'s whole turn left it.  When both visit
    the coordinates in the same order (``coord_order[e, 2i] == coord_order[e, 2i+1]``,
    checked by ``job.load``), that value is the one ``p``'s step on ``j`` wrote (nothing
    else in ``p``'s turn touches ``x_j``), so interleaving the two turns step by step
    (p's step k, then q's step k) gives golden.scd's result bit for bit, while each
    partition's latency chain runs under the other's column stream.  (With different
    orders no bounded interleave is exact: ``p`` may visit ``j`` last and ``q`` first.)

    Regions as in the one-partition program, two Pl-line slots per coordinate in every
    ring: 0 the z ring (``z_p^(k)`` at R10, ``z_q^(k)`` at R10 + Pl; FIFO pushes by LOAD
    and MULTSUB.y, pops by SIGDELTA.z and STORE), 1 and 2 the column ring (``a_p,k`` at
    R10, ``a_q,k`` at R10 + Pl; LOAD broadcast, each column two coordinates ahead into
    the slot freed last: DEPTH >= 5 Pl), region 1's FIFO the residuals, region 2's FIFO
    the gradients, 3 the model (line k: the k-th coordinate visited, lane 1 the last
    ``mu``), scratch lines T_k = n + k (``x_j - mu_p`` in lane 0, ``mu_p`` in lane 1), and
    ``b_p``, ``b_q`` at lines 2n ... 2n+2Pl-1 (DEPTH >= 2n + 2Pl).  Per coordinate ``k``
    (R5 = k, R10 = its ring line; SCALAR_p(k) and the dot products of k are issued
    before)::

        BLOCK     SCALAR                                        (SCALAR_p(k) done)
        SCALAR_q  g_q <- FIFO 2, x <- T_k, (x - mu_p - mu_q, mu_q) -> line k
        MULTSUB_p z_p^(k) <- region 0 at R10, a_p,k <- region 2 at R10, mu_p <- T_k lane 1,
                  z_p^(k+1) -> FIFO 0
        LOAD      a_p,k+2 -> regions 1, 2 at R10 + 4Pl (over a_q,k-1)
        SIGDELTA_p(k+1)  z_p^(k+1) <- FIFO 0, b_p <- region 3, S(z) - b -> FIFO 1
        DOTSIG_p(k+1)    <- FIFO 1, a_p,k+1 <- region 1 at R10 + 2Pl, g_p -> FIFO 2
        BLOCK     SCALAR                                        (SCALAR_q(k) done)
        MULTSUB_q z_q^(k) <- R10 + Pl, a_q,k <- R10 + Pl, mu_q <- line k lane 1,
                  z_q^(k+1) -> FIFO 0
        SCALAR_p(k+1)    g_p <- FIFO 2, x <- line k+1, (x - mu_p, mu_p) -> T_k+1
        SIGDELTA_q(k+1), LOAD a_q,k+2 -> R10 + 5Pl (over a_p,k), DOTSIG_q(k+1) (R10 + 3Pl)

    (the last coordinate only the first five lines without LOAD/SIGDELTA/DOTSIG, then
    BLOCK and MULTSUB_q).  The MULTSUB engine alternates p and q back to back; while
    MULTSUB_q(k) streams, p's chain SIGDELTA_p(k+1), DOTSIG_p(k+1), SCALAR_p(k+1)
    completes, and the other way round.  A coordinate pair costs about 2 Pl cycles plus
    two DOTSIG drains (DOTSIG cannot start an instruction before the previous one has
    drained, about 18 cycles each): 440.5 cycles at Pl = 204 on ``deep``, 0.93 column
    lines per cycle.  Placement choices measured on ``deep`` (Pl = 128 before the column
    ring shrank from eight to five slots): SCALAR_p(k+1) is issued right behind
    MULTSUB_q(k), before SIGDELTA_q(k+1) streams ``b_q`` through region 3's single read
    port (a SCALAR issued during that stream waits for its ``x`` read until the stream
    ends, fixed priority: 0.86 lines per cycle); DOTSIG and SIGDELTA stay one instruction
    per partition because the ISS (hence every program) needs each FIFO's producer
    before its consumer in program order, so a two-iteration DOTSIG over both
    partitions could only be issued behind MULTSUB_q and would put a whole column
    between MULTSUB_p(k) and the gradient p needs next.

    Hazard freedom by construction (BRAM-mode reads start at issue, FIFO reads wait):
    every FIFO has one producer and one consumer channel at a time (FIFO 0: LOAD, then
    MULTSUB.y / SIGDELTA.z, then STORE.in; FIFO 1: SIGDELTA.y / DOTSIG.a; FIFO 2:
    DOTSIG.res / SCALAR.a), each subroutine runs in program order and p and q alternate
    in every FIFO in the same order on both sides.  BRAM reads after their writers:
    SCALAR_q(k) reads T_k and MULTSUB_p(k) reads ``mu_p`` after the BLOCK that ended
    SCALAR_p(k); MULTSUB_q(k) reads ``mu_q`` after the BLOCK that ended SCALAR_q(k);
    SCALAR_p(k+1) reads line k+1 (written only by the pair's blocking LOAD) and writes
    T_k+1, which nothing has read yet; MULTSUB_p(k) reads ``z_p^(k)`` after its writer
    (LOAD or MULTSUB_p(k-1)) is done, since it issues after MULTSUB_q(k-1); MULTSUB_q(k)
    likewise after MULTSUB_p(k).  Ring overwrites: MULTSUB_p(k), MULTSUB_q(k) push
    ``z^(k+1)`` into lines R10+2Pl .. R10+4Pl-1, which with DEPTH >= 4 Pl miss ``z^(k)``
    (R10 .. R10+2Pl-1), the only z lines still to be read or popped; the LOAD of
    a_p,k+2 (lines R10+4Pl.., DEPTH >= 5 Pl: over a_q,k-1) is issued after MULTSUB_p(k),
    i.e. after MULTSUB_q(k-1) is done, and after DOTSIG_q(k) was issued (previous
    iteration), i.e. DOTSIG_q(k-1) is done; the LOAD of a_q,k+2 (over a_p,k) is issued
    after MULTSUB_q(k), i.e. after MULTSUB_p(k) is done, and after DOTSIG_p(k+1), i.e.
    after DOTSIG_p(k) is done.  Column reads after their LOAD: DOTSIG_p(k+1) is issued
    after the LOAD of a_q,k+1 (previous iteration), which waited for the LOAD of a_p,k+1;
    DOTSIG_q(k+1) after the LOAD of a_p,k+2, which waited for the LOAD of a_q,k+1; the
    MULTSUBs read columns loaded before those.  A pair ends by storing ``x`` (address
    memory) and ``z_p``, ``z_q`` (FIFO 0, emptying it), then YIELDs: no live on-chip
    state, so a resume restarts the rings at line 0 (LoadContext: R10 = 0)."""
    RZ, RC1, RC2, RM = 0, 1, 2, 3
    sig = loss == "logistic"
    T = n                            # scratch lines T_k = n + k of region 3
    B0 = 2 * n                       # b_p, b_q at lines B0 .. B0 + 2Pl - 1
    S2 = 2 * Pl                      # pair slot

    def reduce(r, lab):              # R[r] mod DEPTH (R11 = DEPTH)
        p.label(lab)
        p.blt(r, 11, lab + "_ok")
        p.addi(r, r, -cfg.depth).jmp(lab)
        p.label(lab + "_ok")

    p.li(2, epochs).li(4, nparts // 2).li(6, n).li(11, cfg.depth)
    p.li(12, col_addr).li(13, perm_addr)
    p.label("epoch")
    p.li(3, 0).li(8, z_addr).li(9, b_addr)
    p.label("pair")
    p.load_amem(RM, "LOAD.out", 0, 0, lines=nl, rb=13, addr_rb=True)
    p.load_amem(RM, "STORE.in", 0, 0, lines=nl, rb=13, addr_rb=True)
    p.load(acc(n, amem=True), x_addr, regions=[RM])                  # Load(xAddr, x)
    p.load(acc(S2, B0), 0, regions=[RM], rb=9, addr_rb=True)        # b_p, b_q
    p.load(acc(S2, fifo=True), 0, regions=[RZ], rb=8, addr_rb=True)  # z_p, z_q at ring line R10
    p.load(acc(2 * S2, ra=True), 0, regions=[RC1, RC2], ra=10, rb=12, addr_rb=True)  # pairs 0, 1
    p.addi(7, 12, 2 * S2).li(5, 0).li(15, n - 1)

    def sd(part):                    # SIGDELTA of partition part: z <- FIFO 0, S(z) - b -> FIFO 1
        p.sigdelta(ch(RZ, Pl, fifo=True), ch(RM, Pl, B0 + part * Pl), ch(RC1, Pl, fifo=True), dim=Pl,
                   sigmoid=sig, nb=True)

    def ds(off):                     # DOTSIG: S(z) - b <- FIFO 1, column at R10 + off, g -> FIFO 2
        p.dotsig(ch(RC1, Pl, fifo=True), ch(RC1, Pl, off, ra=True), ch(RC2, 1, fifo=True),
                 dim=Pl, ra=10, nb=True)

    def sc_p(k1):                    # SCALAR_p of coordinate R5 + k1: x <- line R5+k1, -> T_(R5+k1)
        p.scalar(ch(RC2, 1, fifo=True), ch(RM, 1, k1, ra=True), ch(RM, 1, T + k1, ra=True),
                 alpha=alpha_q, al=al_q, mode="scd", ra=5, nb=True)

    def sc_q():                      # SCALAR_q of coordinate R5: x <- T_R5, -> line R5
        p.scalar(ch(RC2, 1, fifo=True), ch(RM, 1, T, ra=True), ch(RM, 1, ra=True),
                 alpha=alpha_q, al=al_q, mode="scd", ra=5, nb=True)

    def ms(part):                    # MULTSUB of partition part, mu_p from T_R5, mu_q from line R5
        p.multsub(ch(RZ, Pl, part * Pl, ra=True), ch(RC2, Pl, part * Pl, ra=True),
                  ch(RM, 1, T if part == 0 else 0, rb=True), ch(RZ, Pl, fifo=True), dim=Pl,
                  s_lane1=True, ra=10, rb=5, nb=True)

    sd(0)
    ds(0)
    sd(1)
    ds(Pl)
    sc_p(0)
    p.bge(5, 15, "last")
    p.label("coord")
    p.block("scalar")
    sc_q()
    ms(0)
    p.load(acc(Pl, 2 * S2, ra=True), 0, regions=[RC1, RC2], ra=10, rb=7, addr_rb=True, nb=True)  # a_p,k+2
    sd(0)
    ds(S2)
    p.block("scalar")
    ms(1)
    sc_p(1)
    sd(1)
    p.load(acc(Pl, 2 * S2 + Pl, ra=True), Pl, regions=[RC1, RC2], ra=10, rb=7, addr_rb=True,
           nb=True)                                                                        # a_q,k+2
    ds(S2 + Pl)
    p.addi(7, 7, S2).addi(10, 10, S2)
    reduce(10, "red10")
    p.addi(5, 5, 1).blt(5, 15, "coord")
    p.label("last")
    p.block("scalar")
    sc_q()
    ms(0)
    p.block("scalar")
    ms(1)
    p.addi(10, 10, 2 * S2)           # past z^(n): where the next pair's z lands
    reduce(10, "red10p")
    p.store(ch(RM, n, amem=True), x_addr)                            # Store(x, xAddr)
    p.store(ch(RZ, S2, fifo=True), 0, rb=8, addr_rb=True)            # Store(z_p, z_q)
    p.block()
    p.addi(8, 8, S2).addi(9, 9, S2).addi(12, 12, 2 * n * Pl).addi(13, 13, 2 * nl).addi(3, 3, 1)
    p.yield_()
    p.blt(3, 4, "pair")
    p.addi(1, 1, 1).blt(1, 2, "epoch")
    p.end()
    p.load_context()
    p.li(10, 0)
    p.resume()


def scd_job(*, m: int, n: int, loss: str, alpha: float, lam1: float, epochs: int,
            partition: int, cfg: PUConfig | None = None, base: int = 0,
            stream: bool = False, interleave: int = 1) -> Job:
    """Partitioned SCD for lasso / L1 logistic regression (PipeArch Alg. 2).

    Bit-exact with ``golden.scd.scd(A, b, loss, alpha, lam1, epochs, partition,
    coord_order, x0, fmt=cfg.fmt)`` (the paper's stale per-partition ``z``).  Needs
    LANES >= 2: the scalar engine's SCD mode returns ``x - mu`` in lane 0 and ``mu`` in
    lane 1 of the model line, and MULTSUB takes ``s = mu`` from lane 1.

    Yields after every partition (``yields_per_epoch = m/partition``); at that point
    ``x`` and ``z_p`` are stored, so there are no context groups.

    ``stream=True`` streams one partition (:func:`_scd_stream_program`); with
    ``interleave=2`` as well, the program runs partition pairs with their coordinate
    steps alternating (:func:`_scd_pair_stream_program`): exact only when both
    partitions of a pair visit the coordinates in one order, which ``job.load`` checks;
    it yields after every pair (``yields_per_epoch = m/partition/2``).

    Areas: ``x`` (one coordinate per line in lane 0; lane 1 holds the last ``mu`` of
    that coordinate after a run), ``z`` and ``b`` (``Pl = ceil(P/LANES)`` lines per
    partition), ``cols`` (per epoch, partition and visited coordinate, the column
    ``a_{p,j}``: ``Pl`` lines), ``perm`` (per epoch and partition, ``ceil(n/LANES)``
    lines: entry ``j`` = position of coordinate ``j`` in ``coord_order[e, p]``).
    Regions: 0 the model (scattered by the permutation), 1 ``z_p`` and ``b_p``, 2 the
    column and ``S(z_p) - b_p``, 3 ``g``.
    """
    cfg = cfg or PUConfig()
    fmt = cfg.fmt
    m, n, epochs, P = _pos(m, "m"), _pos(n, "n"), _pos(epochs, "epochs"), _pos(partition, "partition")
    V.choice(loss, "loss", ("lasso", "logistic"))
    alpha = V.real(alpha, "alpha", positive=True)
    lam1 = V.real(lam1, "lam1", nonneg=True)
    _require(m % P == 0, f"partition = {P} does not divide m = {m}")
    L = cfg.lanes
    _require(L >= 2, "scd_job: the SCD scalar step returns mu in lane 1, which needs LANES >= 2")
    Pl = _cdiv(P, L)
    nl = _cdiv(n, L)
    nparts = m // P
    alpha_q = V.nonzero_word(fmt.to_fixed(alpha, name="alpha"), "alpha", fmt, alpha)
    al_q = V.nonzero_word(fmt.to_fixed(alpha * lam1 * P, name="alpha*lam1*partition"),
                          "alpha*lam1*partition", fmt, alpha * lam1 * P)
    _check_cfg(cfg, {"nregions": 4, "depth": max(n, 2 * Pl), "max_dim": Pl, "max_iter": nl,
                     "amem_depth": nl * L}, "scd_job")
    _require(interleave in (1, 2), f"interleave = {interleave!r} must be 1 or 2")
    if interleave == 2:
        _require(stream, "scd_job(interleave=2) is a streamed program: pass stream=True")
        _require(nparts % 2 == 0, f"scd_job(interleave=2) runs partition pairs: m/partition = "
                                  f"{nparts} must be even")
    if stream:
        why = stream_regions_ok(cfg)
        _require(why is None, f"scd_job(stream=True): {why}")
        if interleave == 2:
            _check_cfg(cfg, {"depth": max(2 * n + 2 * Pl, 5 * Pl)}, "scd_job(stream=True, interleave=2)")
        else:
            _check_cfg(cfg, {"depth": max(n + Pl, 4 * Pl)}, "scd_job(stream=True)")

    al = _Alloc(cfg, base)
    x_addr = al.area("x", n)
    z_addr = al.area("z", nparts * Pl)
    b_addr = al.area("b", nparts * Pl)
    # the streamed program prefetches two columns past a partition's last (padding lines)
    col_addr = al.area("cols", epochs * nparts * n * Pl + (2 * Pl if stream else 0))
    perm_addr = al.area("perm", epochs * nparts * nl)

    name = f"scd_{loss}" + ("_stream" if stream else "") + ("2" if interleave == 2 else "")
    p = Program(cfg, name)
    kw = dict(n=n, Pl=Pl, nl=nl, nparts=nparts, epochs=epochs, loss=loss, alpha_q=alpha_q, al_q=al_q,
              x_addr=x_addr, z_addr=z_addr, b_addr=b_addr, col_addr=col_addr, perm_addr=perm_addr)
    if interleave == 2:
        _scd_pair_stream_program(cfg, p, **kw)
    elif stream:
        _scd_stream_program(cfg, p, **kw)
    else:
        _scd_blocking_program(p, 0, 1, 2, 3, **kw)
    asm = p.assemble()
    job = Job(name, cfg, asm, base, al.prog, al.ctx, al.areas,
              al.end, nparts // interleave, epochs,
              ("x", "z"), {"m": m, "n": n, "partition": P, "loss": loss, "alpha": alpha,
                           "lam1": lam1, "alpha_q": alpha_q, "al_q": al_q, "stream": stream,
                           "interleave": interleave})
    return _scd_finish(job, cfg, fmt, m=m, n=n, P=P, L=L, Pl=Pl, nl=nl, nparts=nparts, epochs=epochs,
                       loss=loss, lam1=lam1, x_addr=x_addr, z_addr=z_addr, b_addr=b_addr,
                       col_addr=col_addr, perm_addr=perm_addr, interleave=interleave)


def _scd_blocking_program(p, RX, RZB, RAD, RG, *, n, Pl, nl, nparts, epochs, loss, alpha_q, al_q,
                          x_addr, z_addr, b_addr, col_addr, perm_addr):
    """The blocking SCD program (every subroutine blocking, BRAM mode)."""
    p.li(2, epochs).li(4, nparts).li(6, n)
    p.li(7, col_addr).li(10, perm_addr)
    p.label("epoch")
    p.li(3, 0).li(8, z_addr).li(9, b_addr)
    p.label("part")
    # address memories of LOAD.out / STORE.in of the model region: coordinate j <-> line k
    p.load_amem(RX, "LOAD.out", 0, 0, lines=nl, rb=10, addr_rb=True)
    p.load_amem(RX, "STORE.in", 0, 0, lines=nl, rb=10, addr_rb=True)
    p.load(acc(n, amem=True), x_addr, regions=[RX])                 # Load(xAddr, x)
    p.load(acc(Pl), 0, regions=[RZB], rb=8, addr_rb=True)           # Load(zAddr, z_p)
    p.load(acc(Pl, Pl), 0, regions=[RZB], rb=9, addr_rb=True)       # Load(bAddr, b_p)
    p.li(5, 0)
    p.label("coord")
    p.load(acc(Pl), 0, regions=[RAD], rb=7, addr_rb=True)           # Load(aAddr, a_pj)
    p.sigdelta(ch(RZB, Pl), ch(RZB, Pl, Pl), ch(RAD, Pl, Pl), dim=Pl, sigmoid=(loss == "logistic"))
    p.dotsig(ch(RAD, Pl, Pl), ch(RAD, Pl), ch(RG, 1), dim=Pl)        # g
    p.scalar(ch(RG, 1), ch(RX, 1, ra=True), ch(RX, 1, ra=True), alpha=alpha_q, al=al_q,
             mode="scd", ra=5)                                      # x_j -= mu; lane 1 = mu
    p.multsub(ch(RZB, Pl), ch(RAD, Pl), ch(RX, 1, ra=True), ch(RZB, Pl), dim=Pl,
              s_lane1=True, ra=5)                                   # z_p -= mu a_pj
    p.addi(7, 7, Pl).addi(5, 5, 1).blt(5, 6, "coord")
    p.store(ch(RX, n, amem=True), x_addr)                           # Store(x, xAddr)
    p.store(ch(RZB, Pl), 0, rb=8, addr_rb=True)                     # Store(z_p, zAddr)
    p.addi(8, 8, Pl).addi(9, 9, Pl).addi(10, 10, nl).addi(3, 3, 1)
    p.yield_()
    p.blt(3, 4, "part")
    p.addi(1, 1, 1).blt(1, 2, "epoch")
    p.end()


def _scd_finish(job, cfg, fmt, *, m, n, P, L, Pl, nl, nparts, epochs, loss, lam1, x_addr, z_addr,
                b_addr, col_addr, perm_addr, interleave=1) -> Job:
    """Attach the host helpers of an SCD job (the programs share the data layout, except
    that ``interleave=2`` alternates the columns of a partition pair: per visited
    coordinate ``a_2i,k`` then ``a_2i+1,k``)."""
    def load(mem: Memory, A, b, coord_order, x0=None):
        """Quantise like golden.scd, ``z = A x0`` as golden.scd computes it, and lay out
        the model, z, labels, columns (visiting order) and permutations."""
        A = V.finite_array(A, "A", 2, (m, n))
        b = V.finite_array(b, "b", 1, (m,))
        co = V.permutations(coord_order, "coord_order", (epochs, nparts, n))
        if interleave == 2 and not np.array_equal(co[:, 0::2], co[:, 1::2]):
            raise ValueError("scd_job(interleave=2) needs coord_order[e, 2i] == coord_order[e, 2i+1] "
                             "(the two partitions of a pair visit the coordinates in one order)")
        Aq = fmt.to_fixed(A, name="A")
        bq = fmt.to_fixed(b, name="b")
        x = np.zeros(n, dtype=np.int64) if x0 is None else fmt.to_fixed(V.finite_array(x0, "x0", 1, (n,)), name="x0")
        z = ops.dot_sigmoid(fmt, np.tile(x.reshape(1, n), (m, 1)).reshape(m * n, 1),
                            Aq.reshape(m * n, 1), n, False)
        job.place_program(mem)
        mem.write_scalars(x_addr, x)
        for q in range(nparts):
            mem.write_lines(z_addr + q * Pl, vector_lines(z[q * P:(q + 1) * P], L))
            mem.write_lines(b_addr + q * Pl, vector_lines(bq[q * P:(q + 1) * P], L))
        for e in range(epochs):
            for q in range(nparts):
                blk = e * nparts + q
                cols = np.zeros((n, Pl * L), dtype=np.int64)
                cols[:, :P] = Aq[q * P:(q + 1) * P, co[e, q]].T
                if interleave == 2:     # pair block: column k of q at (2k + q%2) Pl
                    pair0 = col_addr + (blk - q % 2) * n * Pl
                    for k in range(n):
                        mem.write_lines(pair0 + (2 * k + q % 2) * Pl, cols[k].reshape(Pl, L))
                else:
                    mem.write_lines(col_addr + blk * n * Pl, cols.reshape(n * Pl, L))
                pos = np.empty(n, dtype=np.int64)
                pos[co[e, q]] = np.arange(n)
                mem.write_lines(perm_addr + blk * nl, vector_lines(pos, L))
        job.data = (A, b)

    job.load = load
    job.model = lambda mem: mem.read_scalars(x_addr, n)
    job.z = lambda mem: np.concatenate([mem.read_vector(z_addr + q * Pl, P) for q in range(nparts)])
    job.objective = lambda xw: scd_mod.objective(job.data[0], job.data[1], fmt.to_float(xw), loss, lam1)
    return job


# =====================================================================================
# LRMF (PipeArch Alg. 3)
# =====================================================================================
def lrmf_slots(rows, cols, *, m: int, u: int, tile: int) -> int:
    """The largest number of observed entries in one (row tile, column tile) pair:
    the ``slots`` a job needs for this data."""
    rows, cols = np.asarray(rows), np.asarray(cols)
    ntu = _cdiv(u, tile)
    key = (rows // tile) * ntu + cols // tile
    return int(np.bincount(key).max()) if len(key) else 1


def lrmf_job(*, m: int, u: int, d: int, alpha: float, lam: float, epochs: int, tile: int,
             slots: int, cfg: PUConfig | None = None, base: int = 0) -> Job:
    """Tiled alternating SGD for LRMF (PipeArch Alg. 3).

    Bit-exact with ``golden.lrmf.lrmf(rows, cols, vals, m, u, d, alpha, lam, epochs,
    tile, M0, U0, entry_order, fmt=cfg.fmt)``.  Every tile has ``slots`` entry slots
    (:func:`lrmf_slots`); the host fills a tile's unused slots with dummy entries on
    a zero row (value 0), which leave every model word unchanged.

    Per entry (golden.lrmf order: row tile, column tile, rank in ``entry_order``) the
    program loads the entry's row addresses into the address memories of L2REG.x and
    L2REG.y of the M/U region, gathers ``M_r`` and ``U_c`` into fixed lines (an L2REG
    with c = 0 is a copy), computes ``e``, ``M_r' = l2reg(M_r - e U_c, M_r)`` and
    ``U_c' = l2reg(U_c - e M_r', U_c)`` there and scatters both back.  (The address
    memory index restarts at every instruction, so per-entry sequential updates need
    the per-entry reload.)

    Yields after every row tile (``yields_per_epoch = ceil(m/tile)``), after its M tile
    is stored; U tiles are stored after every column tile, so there are no context
    groups.

    Areas: ``M`` / ``U`` (``ceil(m/tile)*tile`` / ``ceil(u/tile)*tile`` rows of
    ``Dl = ceil(d/LANES)`` lines, padding rows zero), ``zero`` (one zero row), ``vals``
    (per tile ``slots`` lines, lane 0), ``addr`` (per tile and slot ``ceil(2 Dl/LANES)``
    lines: the M row's and then the U row's region line addresses).  Regions: 0 the M
    tile, the U tile and the zero row, 1 gathered rows and temporaries, 2 values,
    ``e`` and the step.
    """
    cfg = cfg or PUConfig()
    fmt = cfg.fmt
    m, u, d, epochs, T, slots = (_pos(v, nm) for v, nm in ((m, "m"), (u, "u"), (d, "d"),
                                                          (epochs, "epochs"), (tile, "tile"),
                                                          (slots, "slots")))
    alpha = V.real(alpha, "alpha", positive=True)
    lam = V.real(lam, "lam", nonneg=True)
    L = cfg.lanes
    Dl = _cdiv(d, L)
    Ll = _cdiv(2 * Dl, L)
    ntm, ntu = _cdiv(m, T), _cdiv(u, T)
    alpha_q = V.nonzero_word(fmt.to_fixed(alpha, name="alpha"), "alpha", fmt, alpha)
    lam_q = V.nonzero_word(fmt.to_fixed(lam, name="lam"), "lam", fmt, lam)
    _check_cfg(cfg, {"nregions": 3, "depth": max(2 * T * Dl + Dl, 5 * Dl, slots + 2),
                     "max_dim": Dl, "max_iter": max(2, Ll), "amem_depth": Ll * L}, "lrmf_job")
    al = _Alloc(cfg, base)
    M_addr = al.area("M", ntm * T * Dl)
    U_addr = al.area("U", ntu * T * Dl)
    Z_addr = al.area("zero", Dl)
    V_addr = al.area("vals", ntm * ntu * slots)
    T_addr = al.area("addr", ntm * ntu * slots * Ll)

    RMU, RT, RS = 0, 1, 2
    TD = T * Dl
    E, S = slots, slots + 1
    p = Program(cfg, "lrmf")
    p.li(2, epochs).li(4, ntm).li(6, ntu).li(8, slots)
    p.label("epoch")
    p.li(3, 0).li(9, M_addr).li(11, V_addr).li(12, T_addr)
    p.label("tm")
    p.load(acc(TD), 0, regions=[RMU], rb=9, addr_rb=True)             # Load(MAddr, M_tm)
    p.load(acc(Dl, 2 * TD), Z_addr, regions=[RMU])                    # the zero row
    p.li(5, 0).li(10, U_addr)
    p.label("tu")
    p.load(acc(TD, TD), 0, regions=[RMU], rb=10, addr_rb=True)        # Load(UAddr, U_tu)
    p.load(acc(slots), 0, regions=[RS], rb=11, addr_rb=True)          # Load(XAddr, X_tm,tu)
    p.li(7, 0)
    p.label("entry")
    p.load_amem(RMU, "L2REG.x", 0, 0, lines=Ll, rb=12, addr_rb=True)  # this entry's rows
    p.load_amem(RMU, "L2REG.y", 0, 0, lines=Ll, rb=12, addr_rb=True)
    p.l2reg(ch(RMU, Dl, keep=True, amem=True), ch(RT, Dl, keep=True), ch(RT, Dl, keep=True),
            dim=Dl, c=0, iterations=2)                                # gather M_r, U_c
    p.dotsig(ch(RT, Dl), ch(RT, Dl, Dl), ch(RS, 1, E), dim=Dl)        # e = <M_r, U_c>
    p.scalar(ch(RS, 1, E), ch(RS, 1, 0, ra=True), ch(RS, 1, S), alpha=alpha_q, ra=7)
    p.multsub(ch(RT, Dl), ch(RT, Dl, Dl), ch(RS, 1, S), ch(RT, Dl, 2 * Dl), dim=Dl)
    p.l2reg(ch(RT, Dl, 2 * Dl), ch(RT, Dl), ch(RT, Dl, 3 * Dl), dim=Dl, c=lam_q)      # M_r'
    p.multsub(ch(RT, Dl, Dl), ch(RT, Dl, 3 * Dl), ch(RS, 1, S), ch(RT, Dl, 2 * Dl), dim=Dl)
    p.l2reg(ch(RT, Dl, 2 * Dl), ch(RT, Dl, Dl), ch(RT, Dl, 4 * Dl), dim=Dl, c=lam_q)  # U_c'
    p.l2reg(ch(RT, Dl, 3 * Dl, keep=True), ch(RT, Dl, 3 * Dl, keep=True),
            ch(RMU, Dl, keep=True, amem=True), dim=Dl, c=0, iterations=2)           # scatter
    p.addi(12, 12, Ll).addi(7, 7, 1).blt(7, 8, "entry")
    p.store(ch(RMU, TD, TD), 0, rb=10, addr_rb=True)                  # Store(U_tu, UAddr)
    p.addi(10, 10, TD).addi(11, 11, slots).addi(5, 5, 1).blt(5, 6, "tu")
    p.store(ch(RMU, TD), 0, rb=9, addr_rb=True)                       # Store(M_tm, MAddr)
    p.addi(9, 9, TD).addi(3, 3, 1)
    p.yield_()
    p.blt(3, 4, "tm")
    p.addi(1, 1, 1).blt(1, 2, "epoch")
    p.end()
    asm = p.assemble()
    job = Job("lrmf", cfg, asm, base, al.prog, al.ctx, al.areas, al.end, ntm, epochs, ("M", "U"),
              {"m": m, "u": u, "d": d, "tile": T, "slots": slots, "alpha": alpha, "lam": lam,
               "alpha_q": alpha_q, "lam_q": lam_q})

    def load(mem: Memory, rows, cols, vals, M0, U0=None, entry_order=None):
        """Quantise like golden.lrmf and lay out M, U, values and row addresses."""
        vals = V.finite_array(vals, "vals", 1)
        nnz = len(vals)
        rows = V.int_array(rows, "rows", (nnz,))
        cols = V.int_array(cols, "cols", (nnz,))
        _require(np.all((rows >= 0) & (rows < m)) and np.all((cols >= 0) & (cols < u)),
                 "rows/cols out of range")
        M0 = V.finite_array(M0, "M0", 2, (m, d))
        U0 = np.zeros((u, d)) if U0 is None else V.finite_array(U0, "U0", 2, (u, d))
        eo = np.arange(nnz) if entry_order is None else V.permutations(entry_order, "entry_order", (nnz,))
        need = lrmf_slots(rows, cols, m=m, u=u, tile=T)
        _require(need <= slots, f"a tile has {need} entries but the job has slots = {slots}")
        Mq, Uq, vq = fmt.to_fixed(M0, name="M0"), fmt.to_fixed(U0, name="U0"), fmt.to_fixed(vals, name="vals")
        job.place_program(mem)
        Mp = np.zeros((ntm * T, Dl * L), dtype=np.int64)
        Mp[:m, :d] = Mq
        Up = np.zeros((ntu * T, Dl * L), dtype=np.int64)
        Up[:u, :d] = Uq
        mem.write_lines(M_addr, Mp.reshape(-1, L))
        mem.write_lines(U_addr, Up.reshape(-1, L))
        mem.write_lines(Z_addr, np.zeros((Dl, L), dtype=np.int64))
        seq = lrmf_mod.schedule(rows, cols, m, u, T, eo)
        fill = np.zeros(ntm * ntu, dtype=np.int64)
        zrow = 2 * TD + np.arange(Dl)
        tabs = np.tile(np.concatenate([zrow, zrow, np.zeros(Ll * L - 2 * Dl, dtype=np.int64)]),
                       (ntm * ntu * slots, 1))
        vv = np.zeros(ntm * ntu * slots, dtype=np.int64)
        for k in seq:
            r, c = int(rows[k]), int(cols[k])
            t = (r // T) * ntu + c // T
            s = t * slots + fill[t]
            fill[t] += 1
            tabs[s, :Dl] = (r % T) * Dl + np.arange(Dl)
            tabs[s, Dl:2 * Dl] = TD + (c % T) * Dl + np.arange(Dl)
            vv[s] = vq[k]
        mem.write_lines(T_addr, tabs.reshape(-1, L))
        mem.write_scalars(V_addr, vv)
        job.data = (rows, cols, vals)

    def model(mem):
        Mw = mem.read_lines(M_addr, ntm * TD).reshape(ntm * T, Dl * L)[:m, :d]
        Uw = mem.read_lines(U_addr, ntu * TD).reshape(ntu * T, Dl * L)[:u, :d]
        return Mw, Uw

    job.load = load
    job.model = model
    job.objective = lambda MU: lrmf_mod.objective(job.data[0], job.data[1], job.data[2],
                                                  fmt.to_float(MU[0]), fmt.to_float(MU[1]), lam)
    return job


# =====================================================================================
# Running
# =====================================================================================
def run_to_end(job: Job, machine: Machine, max_starts: int = 100000, **kw):
    """START until the thread finishes (resuming after suspensions); returns the list of
    RunResults.  Raises RuntimeError on an error stop."""
    out = []
    for _ in range(max_starts):
        r = job.start(machine, **kw)
        out.append(r)
        if r.error:
            raise RuntimeError(f"{job.name}: error {I.ERROR_NAMES.get(r.err_code)} at PC {r.err_pc}")
        if r.finished:
            return out
    raise RuntimeError(f"{job.name}: not finished after {max_starts} starts")


def run_epochs(job: Job, machine: Machine, mem: Memory | None = None):
    """Run the thread to the end, suspending at the last YIELD of every epoch.

    Returns the model (``job.model(mem)``) after each epoch -- ``len == job.epochs`` --
    read while the thread is suspended (so every epoch boundary is also a context
    switch).  ``job.objective(model)`` gives the float64 loss for a loss-per-epoch plot.
    """
    mem = mem or machine.mem
    models = []
    for e in range(job.epochs):
        r = job.start(machine, switch_at_yield=job.yields_per_epoch)
        if not r.suspended:
            raise RuntimeError(f"{job.name}: epoch {e}: expected a suspension, got {r.status}"
                               f" ({I.ERROR_NAMES.get(r.err_code, '')} at PC {r.err_pc})")
        models.append(job.model(mem))
    r = job.start(machine)
    if not r.finished:
        raise RuntimeError(f"{job.name}: did not finish after the last epoch: {r.status}")
    return models
