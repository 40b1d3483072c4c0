"""Semantic checks of a parsed TABLA program: constants, declarations, iterators,
dimensions, gradient bindings, the aggregation statement, the learning rate and the
mini-batch size.  Produces a :class:`Program` that :func:`tablac.dfg.build_dfg` lowers.

Language summary (TABLA section 4, CoSMIC section 4.1)::

    m = 55;                            constant (any expression of numbers and constants)
    model_input x[m];                  one training sample's input (arrays of any rank)
    model_output y;                    its label(s)
    model w[m];                        model parameters
    gradient g[m] -> w;                gradient bound to model w (without "-> w": the one
                                       model of the same shape)
    iterator i[0:m-1];                 inclusive index range
    learning_rate = 0.01;              SGD step mu (TABLA 5.1: w = w - mu*g)
    mini_batch = 64;                   CoSMIC mini-batch: samples between aggregations
    d = sum[i](w[i]*x[i]);             temporaries are defined by assignment
    g[i] = (sigmoid(d) - y) * x[i];    element-wise over the left-hand side's iterators
    w[i] = sum[j](w[i]) / n;           CoSMIC aggregation: mean (with "/ n", n = the
                                       number of j values) or sum over the n threads

Operators: ``+ - * /``, unary ``-``, ``<`` and ``>`` (1 or 0); group operations
``sum[i](e)``, ``pi[i](e)``, ``norm[i](e)`` (sum of squares, the PE has no square root);
functions ``sigmoid gaussian log recip`` (the PE's nonlinear tables; the allowed set is a
parameter) and ``min(a, b)``, ``max(a, b)``.  ``//`` starts a comment.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from . import parser as P
from .errors import CompileError

NONLINEAR = ("sigmoid", "gaussian", "log", "recip")
BINFUNC = ("min", "max")
MAX_ELEMS = 1 << 20          # per array: a guard, not a hardware limit (the planner checks fit)
SETTING_KEY = {"learning_rate": "mu", "mini_batch": "batch"}
OVERRIDE_ALIAS = {"learning_rate": "mu", "mini_batch": "batch"}


@dataclass
class Symbol:
    kind: str              # const input label model gradient temp
    name: str
    shape: tuple = ()
    pos: P.Pos = P.Pos(0, 0)
    value: float | None = None     # const
    bind: str | None = None        # gradient -> model
    bind_pos: P.Pos | None = None


@dataclass
class Iter:
    name: str
    lo: int
    hi: int
    pos: P.Pos

    @property
    def size(self) -> int:
        return self.hi - self.lo + 1


@dataclass
class Aggregation:
    model: str
    op: str                # "mean" or "sum"
    threads: int
    pos: P.Pos


@dataclass
class Program:
    file: str
    consts: dict           # name -> float (incl. mu, batch, threads)
    symbols: dict          # name -> Symbol (declarations and temporaries)
    iters: dict            # name -> Iter
    stmts: list            # P.Assign, in order (aggregation statements removed)
    aggregate: dict        # model -> Aggregation
    nonlinear: frozenset
    order: list = field(default_factory=list)   # declared array names in order


class _Checker:
    def __init__(self, mod: P.Module, overrides: dict, nonlinear):
        self.file = mod.file
        self.mod = mod
        self.syms: dict = {}
        self.iters: dict = {}
        self.consts: dict = {}
        self.stmts: list = []
        self.aggs: dict = {}
        self.order: list = []
        self.nonlinear = frozenset(nonlinear)
        self.overrides = {}
        for k, v in (overrides or {}).items():
            k = OVERRIDE_ALIAS.get(k, k)
            try:
                v = float(v)
            except (TypeError, ValueError):
                raise CompileError(f"override {k} = {v!r} is not a number", self.file) from None
            if not math.isfinite(v):
                raise CompileError(f"override {k} = {v!r} is not finite", self.file)
            self.overrides[k] = v
        self.used_overrides: set = set()

    def err(self, msg, pos):
        raise CompileError(msg, self.file, pos.line if pos else 0, pos.col if pos else 0)

    # ---- constants -----------------------------------------------------------------
    def const_value(self, e, what="value"):
        """Evaluate a constant expression (float64) or raise naming the offender."""
        v = self._cv(e, what)
        if not math.isfinite(v):
            self.err(f"{what} is not finite", e.pos)
        return v

    def _cv(self, e, what):
        if isinstance(e, P.Num):
            return e.value
        if isinstance(e, P.Ref):
            s = self.syms.get(e.name)
            if s is None:
                if e.name in self.iters:
                    self.err(f"iterator {e.name} used in the {what}, which must be constant", e.pos)
                self.err(f"undeclared name {e.name}", e.pos)
            if s.kind != "const":
                self.err(f"{s.kind} {e.name} used in the {what}, which must be constant", e.pos)
            if e.index:
                self.err(f"constant {e.name} is a scalar and cannot be indexed", e.pos)
            return s.value
        if isinstance(e, P.Neg):
            return -self._cv(e.a, what)
        if isinstance(e, P.Bin):
            a, b = self._cv(e.a, what), self._cv(e.b, what)
            return fold(e.op, (a, b), self, e.pos)
        if isinstance(e, P.Call):
            args = [self._cv(x, what) for x in e.args]
            self.check_call(e)
            return fold(e.func, args, self, e.pos)
        if isinstance(e, P.Group):
            self.err(f"group operation {e.op} in the {what}, which must be constant", e.pos)
        raise AssertionError(e)   # pragma: no cover

    def is_const_expr(self, e) -> bool:
        if isinstance(e, P.Num):
            return True
        if isinstance(e, P.Ref):
            s = self.syms.get(e.name)
            return s is not None and s.kind == "const" and not e.index
        if isinstance(e, P.Neg):
            return self.is_const_expr(e.a)
        if isinstance(e, P.Bin):
            return self.is_const_expr(e.a) and self.is_const_expr(e.b)
        if isinstance(e, P.Call):
            return all(self.is_const_expr(a) for a in e.args)
        return False

    def int_value(self, e, what, lo=None):
        v = self.const_value(e, what)
        if v != int(v):
            self.err(f"{what} must be an integer, got {v:g}", e.pos)
        v = int(v)
        if lo is not None and v < lo:
            self.err(f"{what} must be >= {lo}, got {v}", e.pos)
        return v

    def check_call(self, e: P.Call):
        if e.func in NONLINEAR:
            if len(e.args) != 1:
                self.err(f"{e.func} takes 1 argument, got {len(e.args)}", e.pos)
            if e.func not in self.nonlinear:
                have = ", ".join(sorted(self.nonlinear)) or "none"
                self.err(f"nonlinear function {e.func} is not available on the target PE "
                         f"(it has: {have})", e.pos)
        elif e.func in BINFUNC:
            if len(e.args) != 2:
                self.err(f"{e.func} takes 2 arguments, got {len(e.args)}", e.pos)
        else:
            self.err(f"unknown function {e.func} (functions: "
                     f"{', '.join(NONLINEAR + BINFUNC)})", e.pos)

    # ---- declarations --------------------------------------------------------------
    def declare(self, name, pos):
        if name in self.syms or name in self.iters:
            old = self.syms.get(name) or self.iters.get(name)
            kind = getattr(old, "kind", "iterator")
            self.err(f"{name} is already declared (as {kind} at line {old.pos.line})", pos)
        if name in NONLINEAR or name in BINFUNC:
            self.err(f"{name} is a function name and cannot be declared", pos)

    def decl(self, d: P.Decl):
        self.declare(d.name, d.pos)
        shape = []
        for k, e in enumerate(d.dims):
            n = self.int_value(e, f"dimension {k + 1} of {d.name}", lo=1)
            shape.append(n)
        total = math.prod(shape)
        if total > MAX_ELEMS:
            self.err(f"{d.name} has {total} elements (more than {MAX_ELEMS})", d.pos)
        kind = {"model_input": "input", "model_output": "label", "model": "model",
                "gradient": "gradient"}[d.kind]
        if d.bind is not None and kind != "gradient":
            self.err(f"only a gradient can be bound to a model (-> {d.bind})", d.bind_pos)
        self.syms[d.name] = Symbol(kind, d.name, tuple(shape), d.pos, bind=d.bind,
                                   bind_pos=d.bind_pos)
        self.order.append(d.name)

    def iterdecl(self, d: P.IterDecl):
        self.declare(d.name, d.pos)
        lo = self.int_value(d.lo, f"start of iterator {d.name}", lo=0)
        hi = self.int_value(d.hi, f"end of iterator {d.name}", lo=0)
        if hi < lo:
            self.err(f"iterator {d.name}[{lo}:{hi}] is empty (end before start)", d.pos)
        if hi >= MAX_ELEMS:
            self.err(f"iterator {d.name} ends at {hi} (more than {MAX_ELEMS - 1})", d.pos)
        self.iters[d.name] = Iter(d.name, lo, hi, d.pos)

    def setting(self, s: P.Setting):
        key = SETTING_KEY[s.key]
        if key in self.consts:
            self.err(f"{s.key} is already set", s.pos)
        if key in self.overrides:
            v = self.overrides[key]
            self.used_overrides.add(key)
        else:
            v = self.const_value(s.expr, s.key)
        if key == "mu" and not v > 0:
            self.err(f"learning_rate must be positive, got {v:g}", s.expr.pos)
        if key == "batch" and (v != int(v) or v < 1):
            self.err(f"mini_batch must be a positive integer, got {v:g}", s.expr.pos)
        self.consts[key] = v

    # ---- expressions ---------------------------------------------------------------
    def expr(self, e, bound: dict, used: set):
        """Check ``e``; ``bound`` = iterators in scope; adds the free iterators to ``used``."""
        if isinstance(e, P.Num):
            return
        if isinstance(e, P.Ref):
            if e.name in self.iters and e.name not in self.syms:
                self.err(f"iterator {e.name} used as a value (iterators only index arrays)", e.pos)
            s = self.syms.get(e.name)
            if s is None:
                self.err(f"undeclared name {e.name}", e.pos)
            if s.kind == "const":
                if e.index:
                    self.err(f"constant {e.name} is a scalar and cannot be indexed", e.pos)
                return
            self.index(e, s, bound, used)
            return
        if isinstance(e, P.Neg):
            return self.expr(e.a, bound, used)
        if isinstance(e, P.Bin):
            self.expr(e.a, bound, used)
            self.expr(e.b, bound, used)
            if e.op == "div" and "recip" not in self.nonlinear and not self.is_const_expr(e.b):
                self.err("division by a non-constant needs the recip nonlinear function, "
                         "which the target PE lacks", e.pos)
            return
        if isinstance(e, P.Call):
            self.check_call(e)
            for a in e.args:
                self.expr(a, bound, used)
            return
        if isinstance(e, P.Group):
            it = self.iters.get(e.iter)
            if it is None:
                self.err(f"{e.op} ranges over {e.iter}, which is not a declared iterator", e.iter_pos)
            if e.iter in bound:
                self.err(f"iterator {e.iter} is already bound here; {e.op} needs another one",
                         e.iter_pos)
            inner: set = set()
            self.expr(e.body, {**bound, e.iter: it}, inner)
            if e.iter not in inner:
                self.err(f"{e.op}[{e.iter}] body does not use iterator {e.iter}", e.iter_pos)
            used |= inner - {e.iter}
            return
        raise AssertionError(e)   # pragma: no cover

    def index(self, r: P.Ref, s: Symbol, bound: dict, used: set):
        if len(r.index) != len(s.shape):
            self.err(f"{s.kind} {r.name} has {len(s.shape)} dimension(s) but is indexed with "
                     f"{len(r.index)}", r.pos)
        for k, ix in enumerate(r.index):
            names = set()
            self.index_expr(ix, bound, names)
            used |= names
            if isinstance(ix, P.Ref) and ix.name in self.iters and not ix.index:
                it = self.iters[ix.name]
                if it.hi >= s.shape[k]:
                    self.err(f"dimension mismatch: iterator {it.name} runs to {it.hi} but "
                             f"dimension {k + 1} of {r.name} has {s.shape[k]} elements", ix.pos)
            elif not names:
                v = self.int_value(ix, f"index {k + 1} of {r.name}", lo=0)
                if v >= s.shape[k]:
                    self.err(f"index {v} out of range: dimension {k + 1} of {r.name} has "
                             f"{s.shape[k]} elements", ix.pos)

    def index_expr(self, e, bound, names: set):
        """Index expressions: integer arithmetic of constants and bound iterators."""
        if isinstance(e, P.Num):
            return
        if isinstance(e, P.Ref):
            if e.index:
                self.err(f"array {e.name} used inside an index (indices are constants and "
                         f"iterators)", e.pos)
            if e.name in self.iters:
                if e.name not in bound:
                    self.err(f"iterator {e.name} is not bound here: it is neither on the "
                             f"left-hand side nor ranged over by a group operation", e.pos)
                names.add(e.name)
                return
            s = self.syms.get(e.name)
            if s is None:
                self.err(f"undeclared name {e.name}", e.pos)
            if s.kind != "const":
                self.err(f"{s.kind} {e.name} used inside an index (indices are constants and "
                         f"iterators)", e.pos)
            return
        if isinstance(e, P.Neg):
            return self.index_expr(e.a, bound, names)
        if isinstance(e, P.Bin) and e.op in ("add", "sub", "mul"):
            self.index_expr(e.a, bound, names)
            self.index_expr(e.b, bound, names)
            return
        self.err("index must be integer arithmetic (+ - *) of constants and iterators", e.pos)

    # ---- statements ----------------------------------------------------------------
    def assign(self, a: P.Assign):
        t = a.target
        s = self.syms.get(t.name)
        if t.name in self.iters:
            self.err(f"cannot assign iterator {t.name}", t.pos)
        if s is None and not t.index and self.is_const_expr(a.expr):
            return self.const_def(a)
        if s is not None and s.kind == "const":
            self.err(f"cannot assign constant {t.name} (declared at line {s.pos.line})", t.pos)
        if s is not None and s.kind in ("input", "label"):
            self.err(f"cannot assign {s.kind} {t.name}: training data is read-only", t.pos)
        if s is not None and s.kind == "model":
            return self.aggregation(a, s)
        # left-hand side iterators
        lhs: dict = {}
        if s is None:   # a new temporary: every index must be a distinct iterator
            shape = []
            for ix in t.index:
                if not (isinstance(ix, P.Ref) and ix.name in self.iters and not ix.index):
                    self.err(f"temporary {t.name} must be indexed by iterators on the left-hand "
                             f"side", getattr(ix, "pos", t.pos))
                if ix.name in lhs:
                    self.err(f"iterator {ix.name} appears twice on the left-hand side", ix.pos)
                lhs[ix.name] = self.iters[ix.name]
                shape.append(self.iters[ix.name].hi + 1)
            if math.prod(shape) > MAX_ELEMS:
                self.err(f"{t.name} would have more than {MAX_ELEMS} elements", t.pos)
            used: set = set()
            self.expr(a.expr, lhs, used)
            self.syms[t.name] = Symbol("temp", t.name, tuple(shape), t.pos)
        else:
            for ix in t.index:
                if isinstance(ix, P.Ref) and ix.name in self.iters and not ix.index:
                    if ix.name in lhs:
                        self.err(f"iterator {ix.name} appears twice on the left-hand side", ix.pos)
                    lhs[ix.name] = self.iters[ix.name]
            used = set()
            self.index(t, s, lhs, used)
            used = set()
            self.expr(a.expr, lhs, used)
        self.stmts.append(a)

    def const_def(self, a: P.Assign):
        name = a.target.name
        self.declare(name, a.pos)
        if name in self.overrides:
            v = self.overrides[name]
            self.used_overrides.add(name)
        else:
            v = self.const_value(a.expr, f"constant {name}")
        self.syms[name] = Symbol("const", name, (), a.pos, value=v)
        self.consts[name] = v

    def aggregation(self, a: P.Assign, s: Symbol):
        t = a.target
        where = (f"model {t.name} is updated by its gradient; the only statement that may "
                 f"assign it is the aggregation {t.name}[...] = sum[j]({t.name}[...]) / n")
        lhs = []
        if len(t.index) != len(s.shape):
            self.err(f"model {t.name} has {len(s.shape)} dimension(s) but is indexed with "
                     f"{len(t.index)}", t.pos)
        for k, ix in enumerate(t.index):
            if not (isinstance(ix, P.Ref) and ix.name in self.iters and not ix.index):
                self.err(where, t.pos)
            if ix.name in lhs:
                self.err(f"iterator {ix.name} appears twice on the left-hand side", ix.pos)
            it = self.iters[ix.name]
            if it.lo != 0 or it.hi != s.shape[k] - 1:
                self.err(f"aggregation must cover all of {t.name}: iterator {it.name} is "
                         f"[{it.lo}:{it.hi}] but dimension {k + 1} has {s.shape[k]} elements",
                         ix.pos)
            lhs.append(ix.name)
        e, div = a.expr, None
        if isinstance(e, P.Bin) and e.op == "div":
            e, div = e.a, e.b
        if not (isinstance(e, P.Group) and e.op == "sum" and isinstance(e.body, P.Ref)
                and e.body.name == t.name
                and [getattr(x, "name", None) for x in e.body.index] == lhs
                and all(isinstance(x, P.Ref) and not x.index for x in e.body.index)):
            self.err(where, a.expr.pos)
        it = self.iters.get(e.iter)
        if it is None:
            self.err(f"sum ranges over {e.iter}, which is not a declared iterator", e.iter_pos)
        if e.iter in lhs:
            self.err(f"the aggregation iterator {e.iter} must range over threads, not over "
                     f"{t.name}", e.iter_pos)
        op = "sum"
        if div is not None:
            d = self.const_value(div, "aggregation divisor")
            if d != it.size:
                self.err(f"aggregation divides by {d:g} but sums {it.size} thread models "
                         f"(iterator {it.name}); use / {it.size} for the mean", div.pos)
            op = "mean"
        if t.name in self.aggs:
            self.err(f"model {t.name} already has an aggregation (line "
                     f"{self.aggs[t.name].pos.line})", t.pos)
        if self.aggs:
            other = next(iter(self.aggs.values()))
            if other.threads != it.size:
                self.err(f"aggregation over {it.size} threads but model {other.model} "
                         f"aggregates over {other.threads}", e.iter_pos)
        self.aggs[t.name] = Aggregation(t.name, op, it.size, a.pos)

    # ---- whole program -------------------------------------------------------------
    def run(self) -> Program:
        for st in self.mod.stmts:
            if isinstance(st, P.Decl):
                self.decl(st)
            elif isinstance(st, P.IterDecl):
                self.iterdecl(st)
            elif isinstance(st, P.Setting):
                self.setting(st)
            else:
                self.assign(st)
        unused = set(self.overrides) - self.used_overrides
        if unused:
            raise CompileError(f"override of unknown constant(s): {', '.join(sorted(unused))}",
                               self.file, 1, 1)
        self.bind()
        if "mu" not in self.consts:
            raise CompileError("no learning_rate given (e.g. `learning_rate = 0.01;`)",
                               self.file, 1, 1)
        self.consts.setdefault("batch", 1.0)
        threads = next(iter(self.aggs.values())).threads if self.aggs else 1
        self.consts["threads"] = float(threads)
        aggs = {}
        for name in self.order:
            if self.syms[name].kind == "model":
                aggs[name] = self.aggs.get(name) or Aggregation(name, "mean", threads, P.Pos(0, 0))
        return Program(self.file, dict(self.consts), self.syms, self.iters, self.stmts, aggs,
                       self.nonlinear, list(self.order))

    def bind(self):
        models = [s for s in self.syms.values() if s.kind == "model"]
        grads = [s for s in self.syms.values() if s.kind == "gradient"]
        if not models:
            raise CompileError("the program declares no model", self.file, 1, 1)
        taken: dict = {}
        for g in grads:
            if g.bind is None:
                cands = [m for m in models if m.shape == g.shape]
                if len(cands) != 1:
                    why = "no model has" if not cands else "several models have"
                    self.err(f"gradient {g.name} is bound to no model ({why} its shape "
                             f"{list(g.shape)}); write `gradient {g.name}[...] -> <model>;`", g.pos)
                g.bind = cands[0].name
            else:
                m = self.syms.get(g.bind)
                if m is None or m.kind != "model":
                    what = "undeclared" if m is None else f"a {m.kind}, not a model"
                    self.err(f"gradient {g.name} is bound to {g.bind}, which is {what}",
                             g.bind_pos)
                if m.shape != g.shape:
                    self.err(f"dimension mismatch: gradient {g.name} has shape {list(g.shape)} "
                             f"but model {m.name} has {list(m.shape)}", g.bind_pos)
            if g.bind in taken:
                self.err(f"model {g.bind} already has gradient {taken[g.bind]}", g.pos)
            taken[g.bind] = g.name
        for m in models:
            if m.name not in taken:
                self.err(f"model {m.name} has no gradient bound to it", m.pos)


def fold(op, args, chk, pos):
    """float64 value of ``op`` on constant operands (build-time constant folding)."""
    try:
        if op == "add":
            return args[0] + args[1]
        if op == "sub":
            return args[0] - args[1]
        if op == "mul":
            return args[0] * args[1]
        if op == "div":
            if args[1] == 0:
                chk.err("division by zero", pos)
            return args[0] / args[1]
        if op == "lt":
            return 1.0 if args[0] < args[1] else 0.0
        if op == "gt":
            return 1.0 if args[0] > args[1] else 0.0
        if op == "min":
            return min(args)
        if op == "max":
            return max(args)
        if op == "sigmoid":
            return 0.5 * (1.0 + math.tanh(0.5 * args[0]))
        if op == "gaussian":
            return math.exp(-0.5 * args[0] * args[0])
        if op == "log":
            if args[0] <= 0:
                chk.err(f"log of a non-positive constant ({args[0]:g})", pos)
            return math.log(args[0])
        if op == "recip":
            if args[0] == 0:
                chk.err("recip of zero", pos)
            return 1.0 / args[0]
    except OverflowError:
        chk.err("constant overflows", pos)
    raise AssertionError(op)   # pragma: no cover


def check(mod: P.Module, overrides: dict | None = None, nonlinear=NONLINEAR) -> Program:
    """Check a parsed module; ``overrides`` replaces constants (also ``mu``/``batch``),
    ``nonlinear`` is the set of nonlinear functions the target PE provides."""
    bad = set(nonlinear) - set(NONLINEAR)
    if bad:
        raise CompileError(f"unknown nonlinear function(s) in the target: {sorted(bad)}", mod.file)
    try:
        return _Checker(mod, overrides, nonlinear).run()
    except RecursionError:
        raise CompileError("expression nested too deeply", mod.file, 1, 1) from None
