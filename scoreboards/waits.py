"""Bounded waits: every wait of a testbench or scoreboard ends.

A wait ends when its condition comes true or when its cycle budget runs out; then it
raises :class:`StallError` naming the stalled interface or signal, the progress that was
expected, every watched interface that is currently stalled (see :func:`watch`) and the
seed of the run, so a deadlock fails within a bounded simulated time instead of hanging.

* :func:`wait_until` -- the one polling loop (``await wait_until(clk, cond, cycles, what)``)
* :func:`watch` / :func:`stall_report` -- interfaces (AXI4-Stream sources and monitors)
  report how long they have been stalled; the report is appended to every stall message
"""
from __future__ import annotations

import weakref
from typing import Callable

import cocotb
from cocotb.triggers import ReadOnly, RisingEdge

#: default budget of one wait (cycles): generous against any legitimate wait of the
#: testbenches (their longest single job is a few 10k cycles), small against a hang
DEFAULT_CYCLES = 200_000


class StallError(AssertionError):
    """A bounded wait ran out of cycles (deadlock or lost handshake)."""


_seed_source: Callable[[], object] | None = None
_watched: list = []


def set_seed_source(fn: Callable[[], object]) -> None:
    """The function whose value is reported as the seed (verif.tb_common.sim_seed)."""
    global _seed_source
    _seed_source = fn


def current_seed() -> str:
    fn = _seed_source
    if fn is None:
        try:
            from verif.tb_common import sim_seed as fn  # the testbenches' seed
        except Exception:  # pragma: no cover - scoreboards used without verif
            fn = None
    try:
        return str(fn() if fn is not None else cocotb.RANDOM_SEED)
    except Exception:
        return str(getattr(cocotb, "RANDOM_SEED", "?"))


def watch(obj) -> None:
    """Register an interface object with a ``stall_status() -> str | None`` method."""
    _watched.append(weakref.ref(obj))


def clear_watched() -> None:
    """Forget the interfaces of earlier tests (called at the start of each test)."""
    _watched.clear()


def stall_report() -> str:
    """One line per watched interface that is stalled right now ('' when none)."""
    out = []
    for r in list(_watched):
        o = r()
        if o is None:
            continue
        try:
            s = o.stall_status()
        except Exception:  # an interface of a finished test whose handles are gone
            s = None
        if s:
            out.append(s)
    return "; ".join(out)


def stall_message(what: str, cycles: int | None, expect: str = "", detail: str = "") -> str:
    msg = f"stall: {what}" + (f" for {cycles} cycles" if cycles is not None else "")
    if expect:
        msg += f" (expected: {expect})"
    rep = stall_report()
    if detail:
        msg += f"; {detail}"
    if rep:
        msg += f"; stalled interfaces: {rep}"
    return msg + f"; seed={current_seed()}"


async def wait_until(clk, cond: Callable[[], object], cycles: int, what: str, *,
                     expect: str = "", edge=RisingEdge, readonly: bool = False,
                     detail: Callable[[], str] | None = None) -> int:
    """Wait on ``edge(clk)`` (then ``ReadOnly`` when ``readonly``) until ``cond()`` is
    true, at most ``cycles`` edges; ``cond`` is tested first, before any edge.

    Returns the number of edges waited.  On expiry raises :class:`StallError` whose
    message starts with ``what`` (name the interface and the missing event, e.g.
    ``"s_axis_a: tvalid held without tready"``) and adds ``expect``, ``detail()``,
    the watched interfaces that are stalled and the seed."""
    n = 0
    while not cond():
        if n >= cycles:
            raise StallError(stall_message(what, n, expect, detail() if detail else ""))
        await edge(clk)
        if readonly:
            await ReadOnly()
        n += 1
    return n


async def within(coro, cycles: int, what: str, *, period_ns: float = 10.0, expect: str = ""):
    """Await ``coro`` (a transaction of a bus model, e.g. an AXI4-Lite read) for at most
    ``cycles`` clock periods of ``period_ns``; on expiry raise :class:`StallError` naming
    ``what`` (e.g. ``"s_axil: read 0x10 got no response"``)."""
    from cocotb.triggers import SimTimeoutError, with_timeout
    try:
        return await with_timeout(coro, cycles * period_ns, "ns")
    except SimTimeoutError:
        raise StallError(stall_message(what, cycles, expect)) from None
