"""Test cases for ``cosmic_accelerator``: a benchmark program compiled by tablac for the
accelerator's plan, its memory image, and its two independent references per round:

* ``tablac.machine.train`` -- the cycle-level model of the compiled program;
* the golden parallel SGD (CoSMIC Eq. 3): ``golden.sgd.parallel_sgd`` for
  linear/logistic/svm; for reco/backprop every thread runs one epoch of
  ``golden.cf.cf_sgd`` / ``golden.mlp.mlp_sgd`` over its own sub-partition and the
  models are averaged with ``golden.sgd.average_fx`` (the same Eq. 3a/3b).

No cocotb import: ``python -m verif.cosmic_accelerator.acc_case`` checks that both
references agree for every program and config (they must, or the RTL comparison would
be meaningless).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import tablac
from golden import sgd as gsgd
from golden.cf import cf_sgd
from golden.cosmic_pe import Instr, PEConfig
from golden.fixedpoint import QFormat
from golden.mlp import mlp_sgd
from tablac.codegen import compile_graph
from tablac.machine import train as machine_train
from tablac.plan import plan_pes

FMT = QFormat(32, 16)
LOSS = {"linear": "ridge", "logistic": "logistic", "svm": "svm"}
SMALL = {"linear": {"m": 6}, "logistic": {"m": 6}, "svm": {"m": 5},
         "reco": {"nu": 4, "ni": 4, "k": 2}, "backprop": {"ni": 4, "nh": 3, "no": 1}}
PROGRAMS = ("linear", "logistic", "svm", "reco", "backprop")


def hw_cfg(p: dict) -> PEConfig:
    return PEConfig(W=p["W"], F=p["F"], DATA_DEPTH=p["DATA_DEPTH"], MODEL_DEPTH=p["MODEL_DEPTH"],
                    INTERIM_DEPTH=p["INTERIM_DEPTH"], SCHED_DEPTH=p["SCHED_DEPTH"], NL=p["NL"],
                    BYPASS=1, ACC_GUARD=8)


def plan_for(p: dict, threads: int | None = None):
    """The plan of an accelerator netlist (threads may be fewer: rows regrouped)."""
    T = p["THREADS"] if threads is None else threads
    return plan_pes(p["ROWS"] * p["COLS"], T, columns=p["COLS"],
                    max_buffer_depth=min(p["DATA_DEPTH"], p["MODEL_DEPTH"], p["INTERIM_DEPTH"]))


def transcode(comp, cfg: PEConfig) -> list[list[int]]:
    """The compiled microcode re-encoded for the netlist's PE configuration (address
    fields as wide as its buffers); raises if the program needs more than it has."""
    c0 = comp.pe_cfg
    for k in ("DATA_DEPTH", "MODEL_DEPTH", "INTERIM_DEPTH"):
        pass
    if comp.length > cfg.SCHED_DEPTH:
        raise ValueError(f"program of {comp.length} instructions > SCHED_DEPTH {cfg.SCHED_DEPTH}")
    if c0.NL & ~cfg.NL:
        raise ValueError(f"program needs NL={c0.NL}, the PEs have NL={cfg.NL}")
    for b, k in (("D", "DATA_DEPTH"), ("M", "MODEL_DEPTH"), ("I", "INTERIM_DEPTH")):
        if comp.usage[b] > getattr(cfg, k):
            raise ValueError(f"program needs {comp.usage[b]} {k} words, the PEs have "
                             f"{getattr(cfg, k)}")
    return [[Instr.decode(w, c0).encode(cfg) for w in prog] for prog in comp.programs]


@dataclass
class Case:
    name: str
    graph: object
    comp: object
    T: int
    sub: int                 # samples per thread per round
    rounds: int
    data: dict
    labels: dict
    model0: dict
    order: np.ndarray
    mem_words: np.ndarray    # model region + samples (round order: ascending)
    machine: list            # per round {array: int64 words}
    golden: list             # per round {array: int64 words}
    machine_obj: object = None

    @property
    def base(self):
        return len(self.comp.model_image)


def _data(g, name, m, rng):
    if name == "reco":
        nu, ni = g.inputs["ou"].shape[0], g.inputs["ov"].shape[0]
        users, items = rng.integers(0, nu, m), rng.integers(0, ni, m)
        data = {"ou": np.eye(nu)[users], "ov": np.eye(ni)[items]}
        labels = {next(iter(g.labels)): rng.normal(size=m)}
        model0 = {k: 0.5 * rng.normal(size=ids.shape) for k, ids in g.model.items()}
        return data, labels, model0, (users, items)
    xin = next(iter(g.inputs))
    n = g.inputs[xin].shape
    A = rng.uniform(-1, 1, (m,) + n)
    lab = next(iter(g.labels))
    lshape = g.labels[lab].shape
    z = A.reshape(m, -1) @ rng.normal(size=int(np.prod(n)))
    if name == "linear":
        y = z + 0.05 * rng.normal(size=m)
    elif name == "logistic":
        y = (rng.uniform(size=m) < 1 / (1 + np.exp(-z))).astype(float)
    elif name == "svm":
        y = np.where(z > 0, 1.0, -1.0)
    else:  # backprop
        y = (rng.uniform(size=(m,) + lshape) < 0.5).astype(float)
    model0 = {k: 0.3 * rng.normal(size=ids.shape) for k, ids in g.model.items()}
    return {xin: A}, {lab: y}, model0, None


def golden_rounds(name, g, data, labels, model0, T, rounds, order, extra):
    mu = g.consts["mu"]
    m = order.shape[1]
    sub = m // T
    out = []
    if name in LOSS:
        A = next(iter(data.values()))
        b = next(iter(labels.values()))
        for r in range(rounds):
            res = gsgd.parallel_sgd(A, b, threads=T, rounds=r + 1, loss=LOSS[name], alpha=mu,
                                    lam2=0.0, order=order[:r + 1], x0=model0["w"], fmt=FMT)
            out.append({"w": np.asarray(res.x, dtype=np.int64)})
        return out
    cur = {k: FMT.to_fixed(v) for k, v in model0.items()}
    for r in range(rounds):
        parts = {k: [] for k in cur}
        for t in range(T):
            mine = order[r][(order[r] >= t * sub) & (order[r] < (t + 1) * sub)]
            o = np.arange(sub)[None, :]
            if name == "reco":
                users, items = extra
                rr = next(iter(labels.values()))
                res = cf_sgd(users[mine], items[mine], rr[mine], FMT.to_float(cur["U"]),
                             FMT.to_float(cur["V"]), alpha=mu, lam=g.consts.get("lam", 0.0),
                             epochs=1, order=o, fmt=FMT)
                parts["U"].append(res.U)
                parts["V"].append(res.V)
            else:
                X = next(iter(data.values()))
                Y = next(iter(labels.values()))
                res = mlp_sgd(X[mine], Y[mine], FMT.to_float(cur["W1"]), FMT.to_float(cur["W2"]),
                              alpha=mu, epochs=1, order=o, fmt=FMT)
                parts["W1"].append(res.W1)
                parts["W2"].append(res.W2)
        cur = {}
        for k, ps in parts.items():
            arr = np.stack([np.asarray(x, dtype=np.int64).ravel() for x in ps])
            cur[k] = np.asarray(gsgd.average_fx(FMT, arr), dtype=np.int64).reshape(ps[0].shape)
        out.append({k: v.copy() for k, v in cur.items()})
    return out


def make_case(name, p, *, threads=None, sub=2, rounds=3, seed=1, shuffle=False) -> Case:
    pl = plan_for(p, threads)
    T = pl.threads
    over = dict(SMALL[name])
    over["n"] = T
    g = tablac.load(tablac.program_path(name), overrides=over)
    comp = compile_graph(g, pl)
    rng = np.random.default_rng(seed)
    m = T * sub
    data, labels, model0, extra = _data(g, name, m, rng)
    if shuffle:
        order = np.array([rng.permutation(m) for _ in range(rounds)])
    else:
        order = np.tile(np.arange(m), (rounds, 1))
    mach, M = machine_train(comp, g, data, labels, model0, rounds=rounds, order=order)
    gold = golden_rounds(name, g, data, labels, model0, T, rounds, order, extra)
    # memory image exactly as tablac.machine lays it out (ascending order every round)
    mask = (1 << FMT.W) - 1
    node_val = {}
    q0 = {k: FMT.to_fixed(v) for k, v in model0.items()}
    for k, ids in g.model.items():
        for v, q in zip(np.asarray(ids).ravel(), q0[k].ravel()):
            node_val[int(v)] = int(q)
    image = [0 if mi is None else node_val[mi[2]] & mask for mi in comp.model_image]
    parts = []
    for d in (g.inputs, g.labels):
        for k in d:
            src = data if k in data else labels
            parts.append(FMT.to_fixed(np.asarray(src[k])).reshape(m, -1))
    samples = np.concatenate(parts, axis=1) & mask
    mem = np.concatenate([np.array(image, dtype=np.int64), samples.ravel()])
    return Case(name, g, comp, T, sub, rounds, data, labels, model0, order, mem, mach, gold, M)


def model_from_words(case: Case, words: dict) -> dict:
    """{array: int64} from on-chip words {model node: word} (as tablac.machine.train)."""
    out = {}
    for k, ids in case.graph.model.items():
        arr = FMT.to_fixed(case.model0[k]).copy()
        flat = arr.reshape(-1)
        for j, v in enumerate(np.asarray(ids).ravel()):
            if int(v) in words:
                flat[j] = words[int(v)]
        out[k] = arr
    return out


if __name__ == "__main__":
    from rtl_gen.cosmic.cosmic_accelerator import CORE
    for cfg in CORE.configs:
        p = CORE.resolve(CORE.configs[cfg])
        for name in PROGRAMS:
            c = make_case(name, p)
            transcode(c.comp, hw_cfg(p))
            for r in range(c.rounds):
                for k in c.machine[r]:
                    assert np.array_equal(c.machine[r][k], c.golden[r][k]), (cfg, name, r, k)
            print(cfg, name, "T", c.T, "len", c.comp.length, "tree", len(c.comp.tree),
                  "agg", len(c.comp.aggregation), "machine == golden for", c.rounds, "rounds")
