"""The dataflow graph (DFG) of one SGD step of a TABLA program, and its builder.

Data model (the front-end/back-end contract, /tmp/team/tablac_contract.md): a list of
:class:`Node` in topological order (``args`` ids < own id) plus the maps of
:class:`Graph` from array names to numpy arrays of node ids.

Semantics and rounding points
-----------------------------
Every node value is one signed Q(W,F) word (``golden.fixedpoint.QFormat``), or a float64
in the float path.  In the bit-true path:

* ``add``/``sub``: exact sum, saturate.  ``mul``: ``QFormat.mul`` (full product, round
  half toward +inf, saturate).  ``lt``/``gt``: ``2**F`` or 0.  ``min``/``max``/``pass``: exact.
* ``sigmoid``/``gaussian``/``log``/``recip``: ``golden.fixedpoint.pwl_fx`` with the tables
  ``golden.cosmic_pe.nl_tables`` builds (the PE's own tables).
* ``dot`` (args ``a0, b0, a1, b1, ...``): the exact sum of the k full products, ONE rounding
  and saturation (``QFormat.dot`` = a ``cosmic_pe`` mac chain with clr on the first; the mac
  accumulator is exact for k <= 2**ACC_GUARD = 256 pairs).  Partial sums between dots
  travel on links and buses as W-bit words (saturated), never wider.
* ``const``: the real ``value`` quantised once with ``fmt.to_fixed`` (round half toward
  +inf).  Leaves (``input``, ``label``, ``model``) are the quantised data/model words.

Lowering (where the rounding points are chosen):

* ``sum[i](a*b)`` (the body is syntactically a product) and ``norm[i](e)`` (= sum of
  ``e*e``: the PE has no square root, so ``norm`` is the squared 2-norm) become dot nodes of
  at most ``dot_group`` pairs (``None``: one dot over all terms, golden/sgd.py's exact dot)
  followed by a balanced tree of saturating adds.  Every other ``sum`` is a balanced adder
  tree of its (already rounded) terms, ``pi`` a balanced tree of ``mul``.
  With ``k = ceil(n / dot_group)`` dots the rounded sum differs from the one-dot value by at
  most ``k/2 + 1/2`` LSB (k roundings instead of one; no saturation).
* A dot of one pair is emitted as ``mul`` (bit-identical).
* ``a / c`` with constant ``c`` is ``a * const(1/c)``; ``a / b`` otherwise ``a * recip(b)``.
  ``-a`` is ``0 - a``.  ``<``/``>`` give 1/0.
* Constants: an operation whose operands are all constants is folded in float64 (the
  folded real is then quantised once).  Exact identities are applied at build time
  (``x+0``, ``0+x``, ``x-0``, ``x*1``, ``1*x`` -> ``x``; ``x*0``, ``0*x`` -> 0), which change
  no value in either path.  Identical operations are shared (common subexpressions).
* SGD update (TABLA 5.1): the new model element is ``w - step`` with ``step = mu*g``.  The
  learning-rate multiply is moved into the gradient's scalar factor ("mu hoisting") so it
  is done once per factor, not once per element, and so the rounding order is the one of
  golden/sgd.py (``x - round(round(alpha*(dot-b)) * a_j)``): for a gradient element
  ``g = p*q`` (a ``mul`` node) ``step = hoist(p)*q`` where ``p`` is, in order of preference,
  the only non-leaf operand, else the operand used by more nodes, else the left operand
  (``hoist(p) = mu*p``, one level only); when both operands are leaves, or ``g`` is not a
  ``mul``, ``step = mu*g``.  ``Graph.gradient`` therefore maps to the step nodes
  (``mu*g``; the unscaled gradient need not exist in the graph).
* Aggregation (CoSMIC Eq. 3b, ``w[i] = sum[j](w[i]) / n``) is not a per-sample node: it is
  recorded in ``Graph.aggregate`` (``{"w": ("mean", T)}``) and done between rounds; bit-true
  mean = ``golden.sgd.average_fx`` (exact sum of the T words, round half toward +inf, saturate).
* Dead nodes (not reachable from an update or gradient step) are removed; the leaves of
  every declared input/label/model element are kept (they are the memory layout).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from . import parser as P
from . import sema as S
from .errors import CompileError

LEAVES = frozenset({"input", "label", "model", "const"})
BINARY = frozenset({"add", "sub", "mul", "lt", "gt", "min", "max"})
UNARY = frozenset({"sigmoid", "gaussian", "log", "recip", "pass"})
NARY = frozenset({"dot"})
OPS = LEAVES | BINARY | UNARY | NARY
COMMUTATIVE = frozenset({"add", "mul", "min", "max"})

# DFG unary op -> the name golden/cosmic_pe.py uses for the same nonlinear table
PE_NAME = {"sigmoid": "sigmoid", "gaussian": "gauss", "log": "log", "recip": "recip",
           "pass": "pass"}
MAX_NODES = 2_000_000


@dataclass(frozen=True)
class Node:
    id: int                       # == index in Graph.nodes; nodes are topologically ordered
    op: str                       # one of OPS
    args: tuple = ()              # operand node ids (all < id)
    value: float | None = None    # 'const' only: a real number (quantised with fmt.to_fixed)
    name: str | None = None       # 'input'/'label'/'model': element name, e.g. "x[3]"
    line: int | None = None       # source line, for messages


@dataclass
class Graph:
    nodes: list
    inputs: dict = field(default_factory=dict)    # model_input name -> int array of node ids
    labels: dict = field(default_factory=dict)    # model_output name -> node ids
    model: dict = field(default_factory=dict)     # model name -> node ids (current elements)
    update: dict = field(default_factory=dict)    # model name -> node ids (new elements)
    gradient: dict = field(default_factory=dict)  # gradient name -> node ids of mu*g (steps)
    consts: dict = field(default_factory=dict)    # program constants incl. mu, batch, threads
    aggregate: dict = field(default_factory=dict)  # model name -> ("mean"|"sum", threads)
    decls: dict = field(default_factory=dict)     # array name -> (kind, shape, line, col)
    bind: dict = field(default_factory=dict)      # gradient name -> model name
    file: str = "<input>"
    dot_group: int | None = None

    def ops_count(self) -> dict:
        out: dict = {}
        for n in self.nodes:
            out[n.op] = out.get(n.op, 0) + 1
        return out

    def array_words(self) -> dict:
        """Words per sample / per model array: ``{name: (kind, shape, words)}`` for the
        planner's buffer check (kind is input, label or model)."""
        return {name: (kind, shape, int(math.prod(shape)))
                for name, (kind, shape, _l, _c) in self.decls.items()
                if kind in ("input", "label", "model")}

    def to_dot(self) -> str:
        """Graphviz DOT text of the graph (leaves as boxes, new model elements doubled)."""
        out_of = {}
        for m, ids in self.update.items():
            for k, nid in np.ndenumerate(ids):
                out_of.setdefault(int(nid), []).append(_elem(m + "'", k))
        lines = ["digraph dfg {", "  rankdir=TB;", '  node [fontname="Helvetica"];']
        for n in self.nodes:
            if n.op == "const":
                label, shape = f"{n.value:g}", "plaintext"
            elif n.op in ("input", "label", "model"):
                label, shape = n.name, "box"
            else:
                label, shape = n.op, "ellipse"
            extra = ""
            if n.id in out_of:
                label += "\\n-> " + ",".join(out_of[n.id][:3]) + ("..." if len(out_of[n.id]) > 3 else "")
                extra = ", peripheries=2"
            label = label.replace('"', '\\"')
            lines.append(f'  n{n.id} [label="{label}", shape={shape}{extra}];')
        for n in self.nodes:
            for k, a in enumerate(n.args):
                lines.append(f"  n{a} -> n{n.id};" if n.op != "dot" else
                             f'  n{a} -> n{n.id} [label="{k}"];')
        lines.append("}")
        return "\n".join(lines) + "\n"


def _elem(name, idx) -> str:
    return name + "".join(f"[{i}]" for i in idx)


# ---- float64 semantics of one op (shared by folding and the interpreter) ----------------
def float_op(op: str, a):
    if op == "add":
        return a[0] + a[1]
    if op == "sub":
        return a[0] - a[1]
    if op == "mul":
        return a[0] * a[1]
    if op == "lt":
        return 1.0 if a[0] < a[1] else 0.0
    if op == "gt":
        return 1.0 if a[0] > a[1] else 0.0
    if op == "min":
        return min(a[0], a[1])
    if op == "max":
        return max(a[0], a[1])
    if op == "pass":
        return a[0]
    if op == "sigmoid":
        return 0.5 * (1.0 + math.tanh(0.5 * a[0]))
    if op == "gaussian":
        return math.exp(-0.5 * a[0] * a[0]) if abs(a[0]) < 1e150 else 0.0
    if op == "log":
        return math.log(a[0]) if a[0] > 0 else (-math.inf if a[0] == 0 else math.nan)
    if op == "recip":
        return 1.0 / a[0] if a[0] != 0 else math.inf
    if op == "dot":
        return sum(a[2 * k] * a[2 * k + 1] for k in range(len(a) // 2))
    raise ValueError(f"no float semantics for op {op!r}")


# ---- the builder --------------------------------------------------------------------------
class _Builder:
    def __init__(self, prog: S.Program, dot_group, max_nodes=MAX_NODES):
        self.prog = prog
        self.max_nodes = max_nodes
        self.work = 0
        self.file = prog.file
        self.G = dot_group
        self.nodes: list = []
        self.cse: dict = {}
        self.vals: dict = {}      # array name -> object ndarray of node ids (-1 unassigned)
        self.line = None
        self.cur = None           # position of the expression being lowered

    def err(self, msg, pos):
        raise CompileError(msg, self.file, pos.line, pos.col)

    # node creation with folding, identities and CSE
    def node(self, op, args=(), value=None, name=None):
        if op == "const":
            value = float(value)
            key = ("const", value)
        elif op in ("input", "label", "model"):
            key = None
        else:
            key = (op, tuple(sorted(args)) if op in COMMUTATIVE else tuple(args))
        if key is not None and key in self.cse:
            return self.cse[key]
        nid = len(self.nodes)
        if nid >= self.max_nodes:
            raise CompileError(f"the DFG exceeds {self.max_nodes} nodes", self.file,
                               *self._where())
        self.nodes.append(Node(nid, op, tuple(args), value, name, self.line))
        if key is not None:
            self.cse[key] = nid
        return nid

    def const(self, v):
        if not math.isfinite(v):
            raise CompileError(f"constant folding gives a non-finite value ({v})", self.file,
                               *self._where())
        return self.node("const", value=v)

    def _where(self):
        if self.cur is not None:
            return self.cur.line, self.cur.col
        return self.line or 0, 0

    def isconst(self, nid, v=None):
        n = self.nodes[nid]
        return n.op == "const" and (v is None or n.value == v)

    def op(self, op, *args):
        if all(self.isconst(a) for a in args):
            return self.const(float_op(op, [self.nodes[a].value for a in args]))
        if op == "add":
            if self.isconst(args[1], 0.0):
                return args[0]
            if self.isconst(args[0], 0.0):
                return args[1]
        elif op == "sub":
            if self.isconst(args[1], 0.0):
                return args[0]
        elif op == "mul":
            for k in (0, 1):
                if self.isconst(args[k], 1.0):
                    return args[1 - k]
                if self.isconst(args[k], 0.0):
                    return self.const(0.0)
        return self.node(op, args)

    def dot(self, pairs):
        pairs = [(a, b) for a, b in pairs if not (self.isconst(a, 0.0) or self.isconst(b, 0.0))]
        if not pairs:
            return self.const(0.0)
        if all(self.isconst(a) and self.isconst(b) for a, b in pairs):
            return self.const(float_op("dot", [self.nodes[x].value for p in pairs for x in p]))
        G = self.G or len(pairs)
        parts = []
        for k in range(0, len(pairs), G):
            chunk = pairs[k:k + G]
            if len(chunk) == 1:
                parts.append(self.op("mul", *chunk[0]))
            else:
                parts.append(self.node("dot", tuple(x for p in chunk for x in p)))
        return self.tree("add", parts)

    def tree(self, op, terms):
        terms = list(terms)
        while len(terms) > 1:
            nxt = [self.op(op, terms[k], terms[k + 1]) for k in range(0, len(terms) - 1, 2)]
            if len(terms) % 2:
                nxt.append(terms[-1])
            terms = nxt
        return terms[0]

    # expressions
    def expr(self, e, env):
        self.work += 1
        if self.work > 50 * self.max_nodes:
            self.err(f"the program needs more than {50 * self.max_nodes} expression evaluations",
                     e.pos)
        if isinstance(e, P.Num):
            return self.const(e.value)
        if isinstance(e, P.Ref):
            s = self.prog.symbols[e.name]
            if s.kind == "const":
                return self.const(s.value)
            idx = tuple(self.index(ix, env, e, k) for k, ix in enumerate(e.index))
            nid = self.vals[e.name][idx] if idx else self.vals[e.name][()]
            if nid < 0:
                self.err(f"{_elem(e.name, idx)} is used before it is assigned", e.pos)
            return int(nid)
        if isinstance(e, P.Neg):
            a = self.expr(e.a, env)
            self.cur = e.pos
            return self.op("sub", self.const(0.0), a)
        if isinstance(e, P.Bin):
            a = self.expr(e.a, env)
            b = self.expr(e.b, env)
            self.cur = e.pos
            if e.op == "div":
                if self.isconst(b):
                    if self.nodes[b].value == 0:
                        self.err("division by zero", e.pos)
                    return self.op("mul", a, self.const(1.0 / self.nodes[b].value))
                return self.op("mul", a, self.op("recip", b))
            return self.op(e.op, a, b)
        if isinstance(e, P.Call):
            args = [self.expr(x, env) for x in e.args]
            self.cur = e.pos
            if e.func in ("log", "recip") and self.isconst(args[0]) and self.nodes[args[0]].value <= 0 \
                    and (e.func == "log" or self.nodes[args[0]].value == 0):
                self.err(f"{e.func} of the constant {self.nodes[args[0]].value:g}", e.pos)
            return self.op(e.func, *args)
        if isinstance(e, P.Group):
            self.cur = e.pos
            it = self.prog.iters[e.iter]
            rng = range(it.lo, it.hi + 1)
            if e.op == "norm":
                terms = [self.expr(e.body, {**env, e.iter: v}) for v in rng]
                return self.dot([(t, t) for t in terms])
            if e.op == "sum" and isinstance(e.body, P.Bin) and e.body.op == "mul":
                pairs = [(self.expr(e.body.a, {**env, e.iter: v}),
                          self.expr(e.body.b, {**env, e.iter: v})) for v in rng]
                return self.dot(pairs)
            terms = [self.expr(e.body, {**env, e.iter: v}) for v in rng]
            return self.tree("add" if e.op == "sum" else "mul", terms)
        raise AssertionError(e)   # pragma: no cover

    def index(self, ix, env, ref, k):
        v = self._ival(ix, env)
        n = self.prog.symbols[ref.name].shape[k]
        if not 0 <= v < n:
            self.err(f"index {v} out of range: dimension {k + 1} of {ref.name} has {n} elements",
                     ix.pos)
        return v

    def _ival(self, e, env):
        if isinstance(e, P.Num):
            return int(e.value)
        if isinstance(e, P.Ref):
            if e.name in env:
                return env[e.name]
            return int(self.prog.symbols[e.name].value)
        if isinstance(e, P.Neg):
            return -self._ival(e.a, env)
        a, b = self._ival(e.a, env), self._ival(e.b, env)
        return a + b if e.op == "add" else a - b if e.op == "sub" else a * b

    # statements
    def assign(self, a: P.Assign):
        self.line = a.pos.line
        self.cur = a.pos
        t = a.target
        s = self.prog.symbols[t.name]
        if t.name not in self.vals:
            self.vals[t.name] = np.full(s.shape, -1, dtype=np.int64)
        lhs = [ix.name for ix in t.index
               if isinstance(ix, P.Ref) and ix.name in self.prog.iters and not ix.index]
        ranges = [range(self.prog.iters[n].lo, self.prog.iters[n].hi + 1) for n in lhs]
        writes = []
        for combo in _product(ranges):
            env = dict(zip(lhs, combo))
            idx = tuple(self.index(ix, env, t, k) for k, ix in enumerate(t.index))
            writes.append((idx, self.expr(a.expr, env)))
        arr = self.vals[t.name]
        for idx, nid in writes:   # all right-hand sides read the old values first
            arr[idx] = nid

    def run(self) -> Graph:
        prog = self.prog
        g = Graph(nodes=self.nodes, file=prog.file, dot_group=self.G)
        kinds = {"input": g.inputs, "label": g.labels, "model": g.model}
        for name in prog.order:
            s = prog.symbols[name]
            g.decls[name] = (s.kind, s.shape, s.pos.line, s.pos.col)
            if s.kind in kinds:
                self.line = s.pos.line
                ids = np.empty(s.shape, dtype=np.int64)
                for idx in np.ndindex(*s.shape):
                    ids[idx] = self.node(s.kind, name=_elem(name, idx))
                kinds[s.kind][name] = ids
                self.vals[name] = ids
            elif s.kind == "gradient":
                self.vals[name] = np.full(s.shape, -1, dtype=np.int64)
                g.bind[name] = s.bind
        for st in prog.stmts:
            self.assign(st)
        # the SGD update with mu hoisting
        self.line = None
        uses = np.zeros(len(self.nodes) + 1, dtype=np.int64)
        for n in self.nodes:
            for a in n.args:
                uses[a] += 1
        self.uses = uses
        mu = self.const(prog.consts["mu"])
        for gname, mname in g.bind.items():
            gs = prog.symbols[gname]
            gv = self.vals[gname]
            self.line = gs.pos.line
            self.cur = gs.pos
            steps = np.empty(gs.shape, dtype=np.int64)
            new = np.empty(gs.shape, dtype=np.int64)
            for idx in np.ndindex(*gs.shape):
                if gv[idx] < 0:
                    self.err(f"gradient element {_elem(gname, idx)} is never assigned", gs.pos)
                steps[idx] = self.hoist(mu, int(gv[idx]))
                new[idx] = self.op("sub", int(g.model[mname][idx]), int(steps[idx]))
            g.gradient[gname] = steps
            g.update[mname] = new
        g.consts = dict(prog.consts)
        g.aggregate = {m: (a.op, a.threads) for m, a in prog.aggregate.items()}
        return _prune(g)

    def leaf(self, nid):
        return self.nodes[nid].op in LEAVES

    def hoist(self, mu, nid):
        n = self.nodes[nid]
        if n.op != "mul" or (self.leaf(n.args[0]) and self.leaf(n.args[1])):
            return self.op("mul", mu, nid)
        a, b = n.args
        if self.leaf(a) != self.leaf(b):
            p, q = (b, a) if self.leaf(a) else (a, b)
        elif self.uses[b] > self.uses[a]:
            p, q = b, a
        else:
            p, q = a, b
        return self.op("mul", self.op("mul", mu, p), q)


def _product(ranges):
    if not ranges:
        yield ()
        return
    for v in ranges[0]:
        for rest in _product(ranges[1:]):
            yield (v,) + rest


def _prune(g: Graph) -> Graph:
    """Remove nodes not reachable from an update/step; keep every array leaf; renumber."""
    nodes = g.nodes
    live = np.zeros(len(nodes), dtype=bool)
    for d in (g.inputs, g.labels, g.model, g.update, g.gradient):
        for ids in d.values():
            live[np.asarray(ids, dtype=np.int64).ravel()] = True
    for n in reversed(nodes):
        if live[n.id]:
            for a in n.args:
                live[a] = True
    remap = np.full(len(nodes), -1, dtype=np.int64)
    out = []
    for n in nodes:
        if live[n.id]:
            remap[n.id] = len(out)
            out.append(Node(len(out), n.op, tuple(int(remap[a]) for a in n.args), n.value,
                            n.name, n.line))
    g.nodes = out
    for d in (g.inputs, g.labels, g.model, g.update, g.gradient):
        for k in d:
            d[k] = remap[np.asarray(d[k], dtype=np.int64)]
    return g


def build_dfg(prog: S.Program, dot_group: int | None = None, max_nodes: int = MAX_NODES) -> Graph:
    """Lower a checked program to its DFG (see the module docstring for the rules);
    more than ``max_nodes`` nodes is a CompileError."""
    if dot_group is not None and (not isinstance(dot_group, int) or isinstance(dot_group, bool)
                                  or dot_group < 1):
        raise CompileError(f"dot_group must be a positive int or None, got {dot_group!r}",
                           prog.file)
    try:
        return _Builder(prog, dot_group, max_nodes).run()
    except RecursionError:
        raise CompileError("expression nested too deeply", prog.file, 1, 1) from None
