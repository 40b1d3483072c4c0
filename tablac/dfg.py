"""The dataflow graph (DFG) of one SGD step of a TABLA program.

(Full semantics, rounding points and the builder follow; this is the contract's data model.)
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

LEAVES = frozenset({"input", "label", "model", "const"})
BINARY = frozenset({"add", "sub", "mul", "lt", "gt", "min", "max"})
UNARY = frozenset({"sigmoid", "gaussian", "log", "recip", "pass"})
NARY = frozenset({"dot"})
OPS = LEAVES | BINARY | UNARY | NARY

# DFG unary op -> the name golden/cosmic_pe.py uses for the same nonlinear table
PE_NAME = {"sigmoid": "sigmoid", "gaussian": "gauss", "log": "log", "recip": "recip",
           "pass": "pass"}


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
    gradient: dict = field(default_factory=dict)  # gradient name -> node ids
    consts: dict = field(default_factory=dict)    # program constants incl. mu, batch, threads

    def ops_count(self) -> dict:
        out: dict = {}
        for n in self.nodes:
            out[n.op] = out.get(n.op, 0) + 1
        return out

    def to_dot(self) -> str:
        raise NotImplementedError
