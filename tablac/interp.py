"""DFG interpreter: float64 and bit-true evaluation of one step, and parallel SGD training.

The semantics of every node are those of tablac/dfg.py's docstring.  The graph is turned
into one straight-line Python function per (graph, format) (plain Python ints for the
bit-true path; every operation re-implements the QFormat rule it names, and
tablac/tests/test_interp.py checks each against golden.fixedpoint / golden.cosmic_pe
operand by operand).

:func:`train` is CoSMIC's parallelised SGD (Eq. 3a/3b) exactly as golden/sgd.py
``parallel_sgd``: the m samples are split into ``threads`` contiguous sub-partitions, each
thread runs sequential SGD (one DFG step per sample, in the order its samples appear in
``order[r]``) from the round's model, then the thread models are aggregated
(``Graph.aggregate``: mean = float64 mean or bit-true ``golden.sgd.average_fx``; sum =
exact sum, saturated).  It is the reference the cycle-level machine model must equal.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from golden.cosmic_pe import NL_ALL, nl_tables
from golden.fixedpoint import QFormat
from golden.sgd import average_fx

from .dfg import PE_NAME, Graph


# ---- code generation -----------------------------------------------------------------------
def _float_expr(n, v):
    a = [v(x) for x in n.args]
    op = n.op
    if op == "add":
        return f"{a[0]} + {a[1]}"
    if op == "sub":
        return f"{a[0]} - {a[1]}"
    if op == "mul":
        return f"{a[0]} * {a[1]}"
    if op == "lt":
        return f"(1.0 if {a[0]} < {a[1]} else 0.0)"
    if op == "gt":
        return f"(1.0 if {a[0]} > {a[1]} else 0.0)"
    if op in ("min", "max"):
        return f"{op}({a[0]}, {a[1]})"
    if op == "pass":
        return a[0]
    if op == "dot":
        return "sum((" + ", ".join(f"{a[2*k]} * {a[2*k+1]}" for k in range(len(a) // 2)) + "))"
    return f"F_{op}({a[0]})"


def _fixed_expr(n, v):
    a = [v(x) for x in n.args]
    op = n.op
    if op == "add":
        return f"sat({a[0]} + {a[1]})"
    if op == "sub":
        return f"sat({a[0]} - {a[1]})"
    if op == "mul":
        return f"sat(rnd({a[0]} * {a[1]}))"
    if op == "lt":
        return f"(ONE if {a[0]} < {a[1]} else 0)"
    if op == "gt":
        return f"(ONE if {a[0]} > {a[1]} else 0)"
    if op in ("min", "max"):
        return f"{op}({a[0]}, {a[1]})"
    if op == "pass":
        return a[0]
    if op == "dot":
        return "sat(rnd(" + " + ".join(f"{a[2*k]} * {a[2*k+1]}" for k in range(len(a) // 2)) + "))"
    return f"P_{op}({a[0]})"


def _pwl_py(table):
    """pwl_fx of one Python int (the same steps as golden.fixedpoint.pwl_fx)."""
    fmt = table.fmt
    lo, hi, sh = table.lo, table.hi, table.shift
    mask = (1 << sh) - 1
    base, slope = table.base, table.slope
    F = fmt.F
    half = (1 << (F - 1)) if F else 0
    wmin, wmax, ymin, ymax = fmt.min_int, fmt.max_int, table.y_min, table.y_max

    def f(z):
        zc = lo if z < lo else hi - 1 if z > hi - 1 else z
        u = zc - lo
        i = u >> sh
        y = base[i] + ((slope[i] * (u & mask) + half) >> F if F else slope[i] * (u & mask))
        y = wmin if y < wmin else wmax if y > wmax else y
        return ymin if y < ymin else ymax if y > ymax else y
    return f


@lru_cache(maxsize=8)
def fixed_env(fmt: QFormat) -> dict:
    F, lo, hi = fmt.F, fmt.min_int, fmt.max_int
    half = (1 << (F - 1)) if F else 0

    def sat(v):
        return lo if v < lo else hi if v > hi else v

    if F:
        def rnd(v):
            return (v + half) >> F
    else:
        def rnd(v):
            return v
    env = {"sat": sat, "rnd": rnd, "ONE": fmt.one}
    tabs = nl_tables(fmt, NL_ALL)
    for op, pe in PE_NAME.items():
        if pe in tabs:
            env["P_" + op] = _pwl_py(tabs[pe])
    return env


def _fl(fn):
    def g(x):
        from .dfg import float_op
        return float_op(fn, [x])
    return g


FLOAT_ENV = {**{"F_" + op: _fl(op) for op in ("sigmoid", "gaussian", "log", "recip")}}


def _compile(graph: Graph, fmt, outputs):
    """A function ``f(L) -> list`` computing the values of node ids ``outputs`` from ``L``
    (a list indexed by node id holding every leaf value; consts are baked in)."""
    lines = ["def _f(L):"]
    name = (lambda i: f"v{i}")
    for n in graph.nodes:
        if n.op == "const":
            c = repr(float(n.value)) if fmt is None else \
                repr(int(fmt.to_fixed(n.value, name=f"constant {n.value:g} (line {n.line})")))
            lines.append(f" v{n.id} = {c}")
        elif n.op in ("input", "label", "model"):
            lines.append(f" v{n.id} = L[{n.id}]")
        else:
            lines.append(f" v{n.id} = " + (_float_expr(n, name) if fmt is None else _fixed_expr(n, name)))
    lines.append(" return [" + ", ".join(f"v{int(i)}" for i in outputs) + "]")
    env = dict(FLOAT_ENV if fmt is None else fixed_env(fmt))
    exec(compile("\n".join(lines), f"<dfg {graph.file}>", "exec"), env)
    return env["_f"]


def _kernels(graph: Graph, fmt):
    cache = graph.__dict__.setdefault("_interp_cache", {})
    key = (fmt, len(graph.nodes))
    if key not in cache:
        upd = [int(i) for m in graph.model for i in np.asarray(graph.update[m]).ravel()]
        cache[key] = (_compile(graph, fmt, range(len(graph.nodes))), _compile(graph, fmt, upd))
    return cache[key]


# ---- input handling ------------------------------------------------------------------------
def _as_dict(v, names: dict, what: str):
    if not names and (v is None or (isinstance(v, dict) and not v)):
        return {}
    if isinstance(v, dict):
        extra = set(v) - set(names)
        if extra:
            raise ValueError(f"unknown {what} array(s): {sorted(extra)} (the program has "
                             f"{sorted(names)})")
        missing = set(names) - set(v)
        if missing:
            raise ValueError(f"missing {what} array(s): {sorted(missing)}")
        return v
    if len(names) != 1:
        raise ValueError(f"the program has {len(names)} {what} arrays {sorted(names)}: pass a dict")
    return {next(iter(names)): v}


def _values(arr, shape, name, fmt, quantised, lead=()):
    a = np.asarray(arr)
    want = tuple(lead) + tuple(shape)
    if a.shape != want and not (a.size == math.prod(want) and a.ndim <= len(want)):
        raise ValueError(f"{name} has shape {a.shape}, expected {want}")
    a = a.reshape(want)
    if fmt is None:
        a = a.astype(np.float64)
        if not np.all(np.isfinite(a)):
            raise ValueError(f"{name} contains a non-finite value")
        return a
    if quantised:
        if not np.issubdtype(a.dtype, np.integer) or not fmt.in_range(a):
            raise ValueError(f"{name}: quantised values must be integers inside {fmt}")
        return a.astype(np.int64)
    return fmt.to_fixed(a, name=name)


def evaluate(graph: Graph, inputs, labels, model, fmt: QFormat | None = None,
             quantised: bool = False) -> np.ndarray:
    """Values of every node for one sample: float64 (``fmt=None``) or int64 words.

    ``inputs``/``labels``/``model``: dicts name -> array of the declared shape (a bare array
    when the program has one such array).  With ``fmt`` the reals are quantised with
    ``fmt.to_fixed``, or taken as words when ``quantised``."""
    L = [0] * len(graph.nodes)
    for group, what in ((graph.inputs, "input"), (graph.labels, "label"), (graph.model, "model")):
        vals = _as_dict({"input": inputs, "label": labels, "model": model}[what], group, what)
        for name, ids in group.items():
            v = _values(vals[name], ids.shape, name, fmt, quantised)
            for i, x in zip(np.asarray(ids).ravel(), v.ravel().tolist()):
                L[int(i)] = x
    f_all, _ = _kernels(graph, fmt)
    out = f_all(L)
    return np.array(out, dtype=np.float64 if fmt is None else np.int64)


@dataclass
class TrainResult:
    """``models[r]``: dict name -> array after round r (float64, or int64 words with fmt);
    ``loss[r]``: the user's loss of that model (empty without ``loss``)."""
    models: list
    loss: list = field(default_factory=list)
    fmt: QFormat | None = None

    @property
    def model(self) -> dict:
        return self.models[-1]

    def model_float(self, r: int = -1) -> dict:
        return {k: (v if self.fmt is None else self.fmt.to_float(v)) for k, v in self.models[r].items()}


def train(graph: Graph, data, labels, model0=None, *, threads: int | None = None,
          rounds: int | None = None, epochs: int | None = None, order=None,
          fmt: QFormat | None = None, loss=None) -> TrainResult:
    """Parallel SGD over the DFG (module docstring).

    ``data``/``labels``: dict name -> array with a leading sample axis ``m`` (bare arrays
    for single-array programs); ``model0``: dict name -> initial model (zeros if None);
    ``threads`` defaults to the program's aggregation thread count; ``rounds`` (= epochs:
    every round visits every sample once); ``order`` int (rounds, m), each row a
    permutation of ``range(m)`` (default identity); ``loss(model_float_dict) -> float``
    is evaluated after every round when given."""
    if rounds is None:
        rounds = epochs
    if rounds is None or int(rounds) != rounds or rounds < 1:
        raise ValueError(f"rounds (epochs) must be a positive int, got {rounds!r}")
    rounds = int(rounds)
    threads = int(graph.consts.get("threads", 1)) if threads is None else threads
    if int(threads) != threads or threads < 1:
        raise ValueError(f"threads must be a positive int, got {threads!r}")
    data = _as_dict(data, graph.inputs, "input")
    labels = _as_dict(labels, graph.labels, "label")
    ms = {np.asarray(v).shape[0] if np.asarray(v).ndim else -1
          for v in list(data.values()) + list(labels.values())}
    if len(ms) != 1 or -1 in ms:
        raise ValueError(f"data and labels must share one leading sample axis, got sizes {sorted(ms)}")
    m = ms.pop()
    if m < 1 or m % threads:
        raise ValueError(f"threads = {threads} does not divide the sample count m = {m}")
    if order is None:
        order = np.tile(np.arange(m), (rounds, 1))
    order = np.asarray(order)
    if order.shape != (rounds, m) or not np.issubdtype(order.dtype, np.integer) or \
            any(sorted(row) != list(range(m)) for row in order.tolist()):
        raise ValueError(f"order must be int ({rounds}, {m}) with each row a permutation of range({m})")
    # flattened leaf ids and per-sample leaf values
    leaf_ids, cols = [], []
    for group, vals in ((graph.inputs, data), (graph.labels, labels)):
        for name, ids in group.items():
            v = _values(vals[name], ids.shape, name, fmt, False, lead=(m,))
            leaf_ids.extend(int(i) for i in np.asarray(ids).ravel())
            cols.append(v.reshape(m, -1))
    rows = np.concatenate(cols, axis=1).tolist()
    if model0 is None:
        model0 = {k: np.zeros(ids.shape) for k, ids in graph.model.items()}
    model0 = _as_dict(model0, graph.model, "model")
    mids = [int(i) for k in graph.model for i in np.asarray(graph.model[k]).ravel()]
    x = np.concatenate([_values(model0[k], ids.shape, k, fmt, False).ravel()
                        for k, ids in graph.model.items()]) if mids else np.zeros(0)
    _, f_upd = _kernels(graph, fmt)
    sub = m // threads
    L = [0] * len(graph.nodes)
    models, losses = [], []
    for r in range(rounds):
        parts = []
        for j in range(threads):
            lo = j * sub
            mine = order[r][(order[r] >= lo) & (order[r] < lo + sub)]
            cur = x.tolist()
            for s in mine.tolist():
                for i, v in zip(mids, cur):
                    L[i] = v
                for i, v in zip(leaf_ids, rows[s]):
                    L[i] = v
                cur = f_upd(L)
            parts.append(cur)
        x = _aggregate(graph, parts, fmt, threads)
        models.append(_split(graph, x))
        if loss is not None:
            losses.append(float(loss(_split(graph, x if fmt is None else fmt.to_float(x)))))
    return TrainResult(models, losses, fmt)


def _aggregate(graph, parts, fmt, threads):
    out, off = [], 0
    P = np.asarray(parts, dtype=np.float64 if fmt is None else np.int64)
    for k, ids in graph.model.items():
        n = int(np.asarray(ids).size)
        blk = P[:, off:off + n]
        op = graph.aggregate.get(k, ("mean", threads))[0]
        if fmt is None:
            out.append(blk.mean(axis=0) if op == "mean" else blk.sum(axis=0))
        elif op == "mean":
            out.append(np.asarray(average_fx(fmt, blk), dtype=np.int64).reshape(n))
        else:
            out.append(np.asarray(fmt.sat(np.sum(blk.astype(object), axis=0)), dtype=np.int64).reshape(n))
        off += n
    return np.concatenate(out) if out else np.zeros(0)


def _split(graph, x):
    out, off = {}, 0
    for k, ids in graph.model.items():
        n = int(np.asarray(ids).size)
        out[k] = np.asarray(x[off:off + n]).reshape(np.asarray(ids).shape).copy()
        off += n
    return out
