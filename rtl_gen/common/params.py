"""Generator parameters: declared once per core, validated before any HDL is written."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable


class ParamError(ValueError):
    """An impossible generator configuration; the message names the parameter."""


@dataclass(frozen=True)
class Param:
    name: str
    default: int
    doc: str
    lo: int | None = None
    hi: int | None = None
    check: Callable[[int], str | None] | None = None  # returns an error text or None

    def validate(self, value) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ParamError(f"parameter {self.name} must be an integer, got {value!r}")
        if self.lo is not None and value < self.lo:
            raise ParamError(f"parameter {self.name}={value} is below its minimum {self.lo}")
        if self.hi is not None and value > self.hi:
            raise ParamError(f"parameter {self.name}={value} is above its maximum {self.hi}")
        if self.check is not None:
            msg = self.check(value)
            if msg:
                raise ParamError(f"parameter {self.name}={value}: {msg}")
        return value


def power_of_two(v: int) -> str | None:
    return None if v > 0 and v & (v - 1) == 0 else "must be a power of two"


def multiple_of_8(v: int) -> str | None:
    return None if v % 8 == 0 else "must be a multiple of 8 (AXI4-Stream byte lanes)"


@dataclass
class ParamSet:
    specs: list[Param]
    cross_checks: list[Callable[[dict], str | None]] = field(default_factory=list)

    def resolve(self, given: dict | None = None) -> dict:
        given = dict(given or {})
        names = {p.name for p in self.specs}
        unknown = sorted(set(given) - names)
        if unknown:
            raise ParamError(f"unknown parameter(s) {', '.join(unknown)}; known: {', '.join(sorted(names))}")
        out = {p.name: p.validate(given.get(p.name, p.default)) for p in self.specs}
        for chk in self.cross_checks:
            msg = chk(out)
            if msg:
                raise ParamError(msg)
        return out
