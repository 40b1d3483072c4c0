"""TABLA source text -> a small positioned AST (lark LALR parser, tablac/grammar.lark).

Every syntax error becomes a :class:`tablac.errors.CompileError` with file, line, column.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import lark
from lark import Lark, Token

from .errors import CompileError

GRAMMAR = Path(__file__).with_name("grammar.lark")


# ---- AST -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Pos:
    line: int
    col: int


@dataclass(frozen=True)
class Num:
    value: float
    pos: Pos


@dataclass(frozen=True)
class Ref:
    name: str
    index: tuple           # of expressions
    pos: Pos


@dataclass(frozen=True)
class Bin:
    op: str                # add sub mul div lt gt
    a: object
    b: object
    pos: Pos


@dataclass(frozen=True)
class Neg:
    a: object
    pos: Pos


@dataclass(frozen=True)
class Call:
    func: str
    args: tuple
    pos: Pos


@dataclass(frozen=True)
class Group:
    op: str                # sum pi norm
    iter: str
    iter_pos: Pos
    body: object
    pos: Pos


@dataclass(frozen=True)
class Decl:
    kind: str              # model_input model_output model gradient
    name: str
    dims: tuple
    bind: str | None
    bind_pos: Pos | None
    pos: Pos


@dataclass(frozen=True)
class IterDecl:
    name: str
    lo: object
    hi: object
    pos: Pos


@dataclass(frozen=True)
class Setting:
    key: str               # learning_rate mini_batch
    expr: object
    pos: Pos


@dataclass(frozen=True)
class Assign:
    target: Ref
    expr: object
    pos: Pos


@dataclass
class Module:
    file: str
    stmts: list = field(default_factory=list)


# ---- parsing ---------------------------------------------------------------------------
@lru_cache(maxsize=1)
def _parser() -> Lark:
    return Lark(GRAMMAR.read_text(), parser="lalr", propagate_positions=True,
                maybe_placeholders=False)


def _pos(x) -> Pos:
    if isinstance(x, Token):
        return Pos(x.line or 0, x.column or 0)
    m = x.meta
    return Pos(getattr(m, "line", 0) or 0, getattr(m, "column", 0) or 0)


_BIN = {"add", "sub", "mul", "div", "lt", "gt"}


def _expr(t):
    d = t.data
    if d == "number":
        tok = t.children[0]
        try:
            v = float(tok)
        except ValueError:   # pragma: no cover - the NUMBER regex only admits floats
            raise CompileError(f"bad number {tok!s}", "", tok.line, tok.column) from None
        return Num(v, _pos(tok))
    if d == "ref":
        name = t.children[0]
        idx = tuple(_expr(c.children[0]) for c in t.children[1:])
        return Ref(str(name), idx, _pos(name))
    if d in _BIN:
        a, op, b = t.children
        return Bin(d, _expr(a), _expr(b), _pos(op))
    if d == "neg":
        return Neg(_expr(t.children[1]), _pos(t.children[0]))
    if d == "call":
        name = t.children[0]
        return Call(str(name), tuple(_expr(c) for c in t.children[1:]), _pos(name))
    if d == "group":
        op, it, body = t.children
        return Group(str(op), str(it), _pos(it), _expr(body), _pos(op))
    raise AssertionError(f"unknown tree {d}")   # pragma: no cover


def _stmt(t):
    d = t.data
    if d == "decl":
        kind = t.children[0]
        out = []
        for item in t.children[1:]:
            name = item.children[0]
            dims, bind, bind_pos = [], None, None
            for c in item.children[1:]:
                if c.data == "dim":
                    dims.append(_expr(c.children[0]))
                else:
                    bind, bind_pos = str(c.children[0]), _pos(c.children[0])
            out.append(Decl(str(kind), str(name), tuple(dims), bind, bind_pos, _pos(name)))
        return out
    if d == "iterdecl":
        return [IterDecl(str(it.children[0]), _expr(it.children[1]), _expr(it.children[2]),
                         _pos(it.children[0])) for it in t.children]
    if d == "setting":
        key = t.children[0]
        return [Setting(str(key), _expr(t.children[1]), _pos(key))]
    if d == "assign":
        target = _expr(t.children[0])
        return [Assign(target, _expr(t.children[1]), target.pos)]
    raise AssertionError(f"unknown statement {d}")   # pragma: no cover


def _describe(tok) -> str:
    if tok is None or getattr(tok, "type", None) == "$END":
        return "end of input"
    return repr(str(tok))


def parse(text: str, file: str = "<input>") -> Module:
    """Parse TABLA source ``text``; ``file`` names it in error messages."""
    if not isinstance(text, str):
        raise CompileError(f"program text must be a str, got {type(text).__name__}", file)
    try:
        tree = _parser().parse(text)
    except lark.exceptions.UnexpectedCharacters as e:
        raise CompileError(f"unexpected character {text[e.pos_in_stream]!r}", file,
                           e.line, e.column) from None
    except lark.exceptions.UnexpectedToken as e:
        exp = sorted(x for x in e.expected if not x.startswith("__"))
        want = f"; expected one of {', '.join(exp)}" if exp else ""
        line, col = e.line, e.column
        if line in (None, -1) or getattr(e.token, "type", None) == "$END":
            line, col = _end(text)
        raise CompileError(f"syntax error: unexpected {_describe(e.token)}{want}", file,
                           line, col) from None
    except lark.exceptions.UnexpectedEOF as e:
        line, col = _end(text)
        raise CompileError("syntax error: unexpected end of input", file, line, col) from None
    except lark.exceptions.LarkError as e:   # any other lexer/parser complaint
        raise CompileError(f"syntax error: {e}", file, 1, 1) from None
    mod = Module(file)
    try:
        for st in tree.children:
            mod.stmts.extend(_stmt(st))
    except RecursionError:
        raise CompileError("expression nested too deeply", file, 1, 1) from None
    return mod


def _end(text: str):
    lines = text.split("\n")
    return len(lines), len(lines[-1]) + 1
