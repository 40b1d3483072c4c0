"""Workloads of PipeArch-RT's tests and benchmarks (all deterministic).

Three job lengths from the program library (PipeArch Table 4 algorithms), scaled to
simulation: ``short`` (streamed ridge SGD, 8-24 samples of 16 features), ``medium``
(lasso / L1-logistic SCD, 16-32 samples) and ``long`` (LRMF, 6x8 to 8x8 ratings);
within a length the sizes vary with the seed so no two jobs tie.
"""
from __future__ import annotations

import numpy as np

from golden.pipearch_asm import Program
from .jobs import JobSpec

RTL_SLOT = 1500          # RR time slot (cycles) of the RTL comparison


def short(name, seed, **kw):
    m = 8 * (1 + seed % 3)
    return JobSpec(name, "sgd", dict(m=m, n=16, loss="ridge", partition=4), epochs=1, seed=seed, **kw)


def medium(name, seed, **kw):
    m = 16 * (1 + seed % 2)
    loss = ("lasso", "logistic")[seed % 2]
    return JobSpec(name, "scd", dict(m=m, n=4 + 2 * (seed % 3), loss=loss, partition=8), epochs=1, seed=seed, **kw)


def long(name, seed, **kw):
    m = 6 + 2 * (seed % 2)
    return JobSpec(name, "lrmf", dict(m=m, u=8, d=4, nnz=14 + 2 * (seed % 3), tile=4), epochs=1, seed=seed,
                   **kw)


KINDS = {"short": short, "medium": medium, "long": long}


def mix(n_per_kind: int, seed: int = 0, kinds=("short", "medium", "long"), epochs=None):
    """``n_per_kind`` jobs of each length, submitted at once in a seeded random order."""
    rng = np.random.default_rng(seed)
    specs = []
    for k in kinds:
        for i in range(n_per_kind):
            s = KINDS[k](f"{k}{i}", int(rng.integers(0, 1 << 20)))
            if epochs:
                s = s.with_(epochs=epochs[k])
            specs.append(s)
    idx = rng.permutation(len(specs))
    return [specs[i] for i in idx]


def rtl_mix():
    """Six jobs, two of each length, longest first (the RTL comparison)."""
    return [long("L0", 1), medium("M0", 2), short("S0", 3), long("L1", 4), medium("M1", 5), short("S1", 7)]


def rtl_priority_mix(units: int = 1):
    """More jobs than units (two long, a medium, then more long ones up to units + 1),
    and a short high-priority job arriving at cycle 2000 while every unit is busy."""
    bg = [long("L0", 1), long("L1", 4), medium("M0", 2)] + [long(f"L{i}", 4 + i) for i in range(2, units)]
    return bg + [short("urgent", 3, priority=5, arrival=2000)]


def calibration_set():
    """The jobs whose RTL cycles the fast model is fitted to (see pipearch_rt.costs)."""
    out = []
    for n, m in ((16, 8), (32, 16), (64, 24)):
        out.append(JobSpec(f"sgd_s{n}_{m}", "sgd", dict(m=m, n=n, partition=4), seed=n + m))
    for n, m in ((8, 8), (24, 16)):
        out.append(JobSpec(f"sgd_b{n}_{m}", "sgd", dict(m=m, n=n, partition=4, stream=False), seed=n + m))
    out.append(JobSpec("sgd_mb2", "sgd", dict(m=8, n=12, partition=4, batch=2, loss="logistic"), seed=3))
    out.append(JobSpec("sgd_mb4", "sgd", dict(m=16, n=6, partition=8, batch=4), seed=4))
    for m, n, P, loss in ((16, 4, 8, "lasso"), (32, 8, 16, "lasso"), (16, 12, 4, "logistic")):
        out.append(JobSpec(f"scd_{m}_{n}_{P}", "scd", dict(m=m, n=n, partition=P, loss=loss), seed=m + n))
    for m, u, d, nnz, t in ((6, 8, 3, 18, 4), (8, 8, 8, 24, 4), (4, 4, 4, 8, 2)):
        out.append(JobSpec(f"lrmf_{m}_{u}_{d}", "lrmf", dict(m=m, u=u, d=d, nnz=nnz, tile=t), seed=m * u + d))
    return out


# ---------------------------------------------------------------------- bad inputs
def bad_asm_spec():
    """A program text that does not assemble (region 9 on a 4-region unit, unknown label)."""
    src = "LI R1, 3\nloop:\n  ADDI R1, R1, -1\n  BNE R1, R0, nowhere\n  END\n"
    return JobSpec("bad_asm", "asm", source=src)


def overlap_spec(victim_built):
    """A job whose context area is placed on another job's model."""
    j = victim_built.job
    x = j.areas["x"][0] * j.cfg.line_bytes if "x" in j.areas else j.areas[next(iter(j.areas))][0] * j.cfg.line_bytes
    x -= x % j.cfg.align
    return JobSpec("ctx_on_other", "sgd", dict(m=8, n=8, partition=4), seed=99, ctx_addr=x)


def faulting_spec(cfg):
    """A program that assembles (raw words are not checked) but stops the unit in Error:
    an unknown opcode at PC 2."""
    p = Program(cfg, "fault")
    p.li(1, 1).li(2, 2)
    p.raw(0x3F << 26, 0, 0, 0, 0, 0, 0, 0)
    p.end()
    return JobSpec("faulting", "image", image=bytes(p.assemble().image))
