"""Job specifications of PipeArch-RT: what a user submits, and how it becomes a program
image, a memory layout and the golden results it must end with.

A :class:`JobSpec` names a program of the library (``golden.pipearch_programs``: SGD
Alg. 1, SCD Alg. 2, LRMF Alg. 3) with its problem size, hyper-parameters, epochs, data
seed and priority; or a user program (``source`` text for the assembler, or an already
assembled ``image``).  :func:`build` turns it into a :class:`Built` job placed at a byte
address: the golden ``Job`` (program, layout, ``model()``), the memory image of its
window ``[base, end)`` and two references every runtime test compares with:

* ``golden()`` -- the independent bit-true training function (``golden.sgd.sgd``,
  ``golden.scd.scd``, ``golden.lrmf.lrmf``) on the same data and visiting order;
* ``standalone()`` -- the job run alone, uninterrupted, on the instruction-set simulator.

Data are synthetic and fully determined by ``seed`` (the same recipe as the
``pipearch_pu`` testbench: uniform features, a planted model, labels from it).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from golden import lrmf as lrmf_mod
from golden import pipearch_isa as I
from golden import scd as scd_mod
from golden import sgd as sgd_mod
from golden.pipearch_asm import AsmError, PUConfig, assemble_text
from golden.pipearch_iss import Machine, Memory, fresh_context
from golden.pipearch_programs import Job, PROG_RESERVE, lrmf_job, lrmf_slots, scd_job, sgd_job
from golden.pipearch_region import CONFIGS

#: hyper-parameters of the library programs (the testbench's)
SGD_ALPHA, SGD_LAM2 = 0.25, 0.02
SCD_ALPHA, SCD_LAM1 = 0.3, 0.02
LRMF_ALPHA, LRMF_LAM = 0.2, 0.01

#: placement granularity of jobs in the shared memory (bytes)
PLACE_ALIGN = 4096


def pu_config(params: dict | None = None) -> PUConfig:
    """The PUConfig of a ``pipearch_pu`` parameter set (generator names: LANES, F,
    NREGIONS, DEPTH, AMEM_DEPTH, MAX_DIM, MAX_ITER, SUBS, CONFIGS); ``None`` = the
    generator's default netlist (``ip/pipearch_pu``)."""
    p = dict(LANES=4, F=16, NREGIONS=4, DEPTH=256, AMEM_DEPTH=64, CONFIGS=0x29, MAX_DIM=64,
             MAX_ITER=4096, SUBS=0x7F)
    p.update(params or {})
    subs = tuple(op for op in I.ALL_SUBROUTINES if p["SUBS"] >> (op - I.LOAD) & 1)
    regions = tuple(CONFIGS[(p["CONFIGS"] >> 2 * r) & 3] for r in range(p["NREGIONS"]))
    return PUConfig(lanes=p["LANES"], f=p["F"], nregions=p["NREGIONS"], depth=p["DEPTH"],
                    amem_depth=p["AMEM_DEPTH"], max_iter=p["MAX_ITER"], max_dim=p["MAX_DIM"],
                    subroutines=subs, region_configs=regions)


@dataclass(frozen=True)
class JobSpec:
    """One submission.

    ``kind``: "sgd" (``m, n, loss`` ridge/logistic, ``partition``, ``batch``), "scd"
    (``m, n, loss`` lasso/logistic, ``partition``), "lrmf" (``m, u, d, nnz, tile``),
    "asm" (``source``: assembler text; no data, no golden model) or "image" (``image``:
    program bytes, e.g. with raw words, assembled elsewhere).  ``params`` holds the
    sizes; ``epochs``, ``seed`` (data), ``priority`` (larger = more urgent), ``arrival``
    (cycle of submission), ``ctx_addr`` (byte address of the context area, default the
    job's own, right after its program) and ``base`` (placement, default: the runtime
    allocates)."""

    name: str
    kind: str
    params: dict = field(default_factory=dict)
    epochs: int = 1
    seed: int = 0
    priority: int = 0
    arrival: int = 0
    ctx_addr: int | None = None
    base: int | None = None
    source: str | None = None
    image: bytes | None = None

    def with_(self, **kw) -> "JobSpec":
        return replace(self, **kw)


class Rejected(ValueError):
    """A job the runtime refuses at submission (the message is the reason)."""


@dataclass
class Built:
    spec: JobSpec
    job: Job                 # golden.pipearch_programs.Job (or a minimal one for asm/image)
    image: Memory            # the job's memory, valid on [job.base, job.end)
    golden: object           # () -> model words (flat int64) or None
    data_bytes: int          # bytes of input data the job streams per epoch (SJF estimate)

    @property
    def window(self):
        return self.job.base, self.job.end

    def model(self, mem: Memory):
        """The job's model words (flat) read from ``mem``; None for user programs."""
        if self.spec.kind in ("asm", "image"):
            return None
        mdl = self.job.model(mem)
        if isinstance(mdl, tuple):
            return np.concatenate([np.asarray(x).ravel() for x in mdl])
        return np.asarray(mdl).ravel()

    def data_areas(self):
        """``[(lo, hi)]`` byte ranges of the job (program, context, every area)."""
        lb = self.job.cfg.line_bytes
        out = [(self.job.prog_addr, self.job.prog_addr + PROG_RESERVE),
               (self.job.ctx_addr, self.job.ctx_addr + I.CTX_BYTES)]
        for a, n in self.job.areas.values():
            out.append((a * lb, (a + max(n, 1)) * lb))
        return out

    def standalone(self, cfg: PUConfig | None = None):
        """Run alone and uninterrupted on a fresh ISS: (RunResult, model)."""
        mem = self.image.copy()
        m = Machine(cfg or self.job.cfg, mem)
        r = self.job.start(m)
        return r, (self.model(mem) if r.finished else None)


def _data_rng(spec):
    return np.random.default_rng([int(spec.seed), 0x5EED])


def footprint(spec: JobSpec, cfg: PUConfig) -> int:
    """Bytes the job occupies from its base (program, context, data)."""
    b = build(spec, cfg, base=0)
    return b.job.end


def build(spec: JobSpec, cfg: PUConfig, base: int) -> Built:
    """Assemble ``spec`` at ``base`` and lay its data out; raises :class:`Rejected`
    with the reason when the program does not assemble or the sizes do not fit."""
    if spec.epochs < 1:
        raise Rejected(f"{spec.name}: epochs = {spec.epochs} must be >= 1")
    try:
        return _build(spec, cfg, base)
    except Rejected:
        raise
    except AsmError as e:
        raise Rejected(f"{spec.name}: the program does not assemble: {e}") from None
    except ValueError as e:
        raise Rejected(f"{spec.name}: {e}") from None


def _build(spec, cfg, base) -> Built:
    rng = _data_rng(spec)
    p, ep = dict(spec.params), spec.epochs
    fmt, L = cfg.fmt, cfg.lanes
    if spec.kind == "sgd":
        m, n, loss = p["m"], p["n"], p.get("loss", "ridge")
        batch = p.get("batch", 1)
        A = rng.uniform(-1, 1, (m, n))
        w = rng.normal(size=n)
        b = A @ w + 0.05 * rng.normal(size=m) if loss == "ridge" else (A @ w > 0).astype(float)
        order = np.stack([rng.permutation(m) for _ in range(ep)])
        x0 = rng.uniform(-0.3, 0.3, n)
        job = sgd_job(m=m, n=n, loss=loss, alpha=SGD_ALPHA, lam2=SGD_LAM2, epochs=ep, batch=batch,
                      partition=p.get("partition"), cfg=cfg, base=base, stream=p.get("stream"))
        img = Memory(job.end, L)
        job.load(img, A, b, order, x0=x0)
        gold = lambda: sgd_mod.sgd(A, b, loss=loss, alpha=SGD_ALPHA, lam2=SGD_LAM2, epochs=ep, order=order,
                                   batch=batch, x0=x0, fmt=fmt).x
        data = m * (-(-n // L) + 1) * cfg.line_bytes
    elif spec.kind == "scd":
        m, n, loss, P = p["m"], p["n"], p.get("loss", "lasso"), p["partition"]
        A = rng.uniform(-1, 1, (m, n))
        w = rng.normal(size=n) * (rng.random(n) < 0.6)
        b = A @ w + 0.05 * rng.normal(size=m) if loss == "lasso" else (A @ w > 0).astype(float)
        co = np.stack([np.stack([rng.permutation(n) for _ in range(m // P)]) for _ in range(ep)]) \
            if m % P == 0 else None
        if co is None:
            raise Rejected(f"{spec.name}: partition = {P} does not divide m = {m}")
        x0 = rng.uniform(-0.3, 0.3, n)
        job = scd_job(m=m, n=n, loss=loss, alpha=SCD_ALPHA, lam1=SCD_LAM1, epochs=ep, partition=P,
                      cfg=cfg, base=base)
        img = Memory(job.end, L)
        job.load(img, A, b, co, x0=x0)
        gold = lambda: scd_mod.scd(A, b, loss=loss, alpha=SCD_ALPHA, lam1=SCD_LAM1, epochs=ep, partition=P,
                                   coord_order=co, x0=x0, fmt=fmt).x
        data = (m // P) * n * (-(-P // L)) * cfg.line_bytes
    elif spec.kind == "lrmf":
        m, u, d, nnz, T = p["m"], p["u"], p["d"], p["nnz"], p["tile"]
        if not 1 <= nnz <= m * u:
            raise Rejected(f"{spec.name}: nnz = {nnz} must be 1..m*u = {m * u}")
        flat = rng.choice(m * u, nnz, replace=False)
        rows, cols = flat // u, flat % u
        vals = rng.uniform(-1, 1, nnz)
        M0 = rng.uniform(-0.5, 0.5, (m, d))
        U0 = rng.uniform(-0.5, 0.5, (u, d))
        slots = lrmf_slots(rows, cols, m=m, u=u, tile=T)
        job = lrmf_job(m=m, u=u, d=d, alpha=LRMF_ALPHA, lam=LRMF_LAM, epochs=ep, tile=T, slots=slots,
                       cfg=cfg, base=base)
        img = Memory(job.end, L)
        job.load(img, rows, cols, vals, M0=M0, U0=U0)

        def gold():
            r = lrmf_mod.lrmf(rows, cols, vals, m=m, u=u, d=d, alpha=LRMF_ALPHA, lam=LRMF_LAM, epochs=ep,
                              tile=T, M0=M0, U0=U0, fmt=fmt)
            return np.concatenate([r.M.ravel(), r.U.ravel()])
        ntm, ntu = -(-m // T), -(-u // T)
        Dl = -(-d // L)
        data = (ntm * ntu * slots * (1 + -(-2 * Dl // L)) + ntm * ntu * T * Dl) * cfg.line_bytes
    elif spec.kind in ("asm", "image"):
        if spec.kind == "asm":
            if not isinstance(spec.source, str):
                raise Rejected(f"{spec.name}: kind 'asm' needs the program text in source")
            image = assemble_text(spec.source, cfg).image
        else:
            if not spec.image:
                raise Rejected(f"{spec.name}: kind 'image' needs the program bytes in image")
            image = bytes(spec.image)
        if len(image) > PROG_RESERVE:
            raise Rejected(f"{spec.name}: program image of {len(image)} bytes exceeds {PROG_RESERVE}")
        ctx = base + PROG_RESERVE
        ctx = -(-ctx // cfg.align) * cfg.align
        end = ctx + -(-I.CTX_BYTES // cfg.align) * cfg.align
        from golden.pipearch_asm import Assembled  # noqa: F401  (type only)
        job = Job(spec.name, cfg, None, base, base, ctx, {}, end, 1, ep, ())
        img = Memory(end, L)
        img.write_bytes(base, image)
        img.write_words(ctx, fresh_context())
        gold = None
        data = 0
    else:
        raise Rejected(f"{spec.name}: unknown job kind {spec.kind!r} (sgd, scd, lrmf, asm, image)")
    if spec.ctx_addr is not None:
        if spec.ctx_addr % cfg.align:
            raise Rejected(f"{spec.name}: ctx_addr {spec.ctx_addr:#x} is not a multiple of {cfg.align}")
        job.ctx_addr = int(spec.ctx_addr)
        if job.ctx_addr + I.CTX_BYTES > img.size:
            grown = Memory(job.ctx_addr + I.CTX_BYTES, L)
            grown.data[:img.size] = img.data
            img = grown
        img.write_words(job.ctx_addr, fresh_context())
    return Built(spec, job, img, gold, int(data) * ep)
