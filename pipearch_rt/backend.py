"""The back-end interface of PipeArch-RT and the fast ISS-based back end.

A back end is a system of ``units`` PipeArch-PUs sharing one memory (the
``pipearch_system`` contract: every unit reaches all of memory, so a suspended thread
can resume anywhere).  The scheduler (:mod:`pipearch_rt.runtime`) only uses the
methods of :class:`Backend`; they are coroutines so that the same scheduler code drives
the RTL under cocotb (:mod:`pipearch_rt.rtl`) and this fast model, whose coroutines
never suspend (:func:`run_sync` drives them without an event loop).

Fast model (:class:`FastBackend`): each unit is a ``golden.pipearch_iss.Machine`` on one
shared ``Memory``; a START runs the ISS at once and its duration comes from
:mod:`pipearch_rt.costs`.  A CTRL.SWITCH at cycle ``t`` suspends the thread at its first
YIELD executed at or after ``t`` (the ISS rerun from a snapshot of the job's memory with
``switch_at_yield``); a request after the last YIELD stays pending in the unit and
suspends the next thread it runs at that thread's first YIELD -- as the hardware does.
Shared bandwidth: a run's demand is its bytes over its stand-alone cycles; while the
running units together demand more than ``mem_bw`` bytes per cycle, every one of them
advances at ``mem_bw / demand`` of its stand-alone speed (processor sharing).  Each
START also costs ``host_start`` cycles of the host (its register writes and the polling
that notices the previous Done; ``CostModel.host_start``); the host is one thread, so
STARTs issued at the same cycle to several units follow one another.
"""
from __future__ import annotations

from dataclasses import dataclass

from golden import pipearch_isa as I
from golden.pipearch_iss import Machine, Memory

from .costs import CostModel, run_features


@dataclass
class UnitEvent:
    """A unit reached Done or Error: ``status`` "finished" / "suspended" / "error"."""

    unit: int
    status: str
    err_code: int
    err_pc: int
    cycle: int          # system cycle at which the unit was done
    busy: int           # cycles of this START (the unit's CYCLES register)


class Backend:
    """Abstract system of ``units`` PUs with one shared memory (see module docstring)."""

    units: int
    cfg = None

    @property
    def now(self) -> int:            # system cycles since reset
        raise NotImplementedError

    async def place(self, built) -> None:
        """Write the job's memory image (program, fresh context, data) to system memory."""
        raise NotImplementedError

    async def start(self, unit: int, built) -> None:
        """PROG/CTX registers, then CTRL.START on ``unit``."""
        raise NotImplementedError

    async def switch(self, unit: int) -> None:
        """CTRL.SWITCH on ``unit`` (suspend at the next YIELD)."""
        raise NotImplementedError

    async def wait(self, deadline: int | None) -> list:
        """Advance to the first Done/Error of a started unit (all such events at that cycle
        returned) or to ``deadline`` (then ``[]``)."""
        raise NotImplementedError

    async def read(self, built):
        """The job's memory window ``[base, end)`` as a ``Memory`` (for ``built.model``)."""
        raise NotImplementedError

    def traffic(self) -> dict:
        """``{"read_bytes": [...], "write_bytes": [...]}`` per unit since reset."""
        raise NotImplementedError


def run_sync(coro):
    """Run a coroutine whose awaits never suspend (the fast back end) to its result."""
    try:
        coro.send(None)
    except StopIteration as e:
        return e.value
    coro.close()
    raise RuntimeError("run_sync: the coroutine suspended (a back end that needs an event loop?)")


class _Run:
    """One START in flight on a fast unit."""

    def __init__(self, built, t0, result, cost, snapshot, stale_at_start, host=0.0):
        self.built, self.t0, self.result, self.cost = built, t0, result, cost
        self.host = host                 # host cycles of the START (register writes, polling)
        self.snapshot = snapshot
        self.stale_at_start = stale_at_start
        self.work = 0.0                  # stand-alone cycles done
        self.switch_requested = False
        self.set_stale_after = False

    @property
    def total(self):
        return max(self.cost.cycles + self.host, 1.0)

    @property
    def demand(self):                   # bytes per stand-alone cycle
        return (self.cost.read_bytes + self.cost.write_bytes) / self.total


class FastBackend(Backend):
    """ISS units with RTL-calibrated costs (module docstring)."""

    def __init__(self, cfg, units: int, mem_bytes: int, *, costs: CostModel | None = None,
                 mem_bw: float | None = None, host_start: float | None = None):
        if not 1 <= units <= 8:
            raise ValueError(f"units = {units}: a pipearch_system has 1..8 units")
        self.cfg, self.units = cfg, units
        self.mem = Memory(mem_bytes, cfg.lanes)
        self.machines = [Machine(cfg, self.mem) for _ in range(units)]
        self.costs = costs or CostModel.load()
        self.mem_bw = float(mem_bw if mem_bw is not None else cfg.line_bytes)
        self.host_start = float(self.costs.host_start if host_start is None else host_start)
        self.host_free = 0.0             # cycle at which the host has issued its last START
        self.t = 0.0
        self.runs = [None] * units
        self.rd = [0] * units
        self.wr = [0] * units

    @property
    def now(self) -> int:
        return int(round(self.t))

    async def place(self, built):
        lo, hi = built.window
        self.mem.data[lo:hi] = built.image.data[lo:hi]
        c = built.job.ctx_addr
        if not lo <= c < hi:
            self.mem.data[c:c + I.CTX_BYTES] = built.image.data[c:c + I.CTX_BYTES]

    def _ranges(self, built):
        lo, hi = built.window
        out = [(lo, hi)]
        c = built.job.ctx_addr
        if not lo <= c < hi:
            out.append((c, c + I.CTX_BYTES))
        return out

    def _cost(self, built, result):
        stream = bool(built.job.info.get("stream"))
        n = built.job.asm.n if built.job.asm is not None else _image_n(self.mem, built.job.prog_addr)
        return run_features(result, n, self.cfg.line_bytes, stream, self.costs)

    async def start(self, unit, built):
        if self.runs[unit] is not None:
            raise RuntimeError(f"unit {unit} is busy")
        m = self.machines[unit]
        snap = [(lo, self.mem.data[lo:hi].copy()) for lo, hi in self._ranges(built)]
        stale = m.switch_pending
        r = built.job.start(m)
        # one host thread writes the registers: STARTs issued at the same cycle serialise
        begin = max(self.t, self.host_free) + self.host_start
        self.host_free = begin
        self.runs[unit] = _Run(built, self.t, r, self._cost(built, r), snap, stale, begin - self.t)

    async def switch(self, unit):
        run = self.runs[unit]
        if run is None:                       # an idle unit keeps the request pending
            self.machines[unit].switch_pending = True
            return
        if run.switch_requested or not run.result.finished:
            run.switch_requested = True       # already suspending (or stopping): nothing new
            return
        run.switch_requested = True
        k = next((i + 1 for i, y in enumerate(run.cost.yields) if y + run.host >= run.work), None)
        if k is None:                         # after the last YIELD: stays pending
            run.set_stale_after = True
            return
        for lo, data in run.snapshot:         # rerun from the START with the switch at YIELD k
            self.mem.data[lo:lo + len(data)] = data
        m = self.machines[unit]
        m.switch_pending = False
        r = run.built.job.start(m, switch_at_yield=k)
        run.result, run.cost = r, self._cost(run.built, r)

    def _rates(self):
        act = [u for u in range(self.units) if self.runs[u] is not None]
        dem = sum(self.runs[u].demand for u in act)
        f = 1.0 if dem <= self.mem_bw else self.mem_bw / dem
        return {u: f for u in act}

    async def wait(self, deadline):
        rates = self._rates()
        if not rates:
            if deadline is None:
                raise RuntimeError("wait() with no unit running and no deadline")
            self.t = max(self.t, float(deadline))
            return []
        left = {u: (self.runs[u].total - self.runs[u].work) / f for u, f in rates.items()}
        dt = min(left.values())
        if deadline is not None and self.t + dt > deadline + 1e-9:
            dt = max(float(deadline) - self.t, 0.0)
            for u, f in rates.items():
                self.runs[u].work += dt * f
            self.t += dt
            return []
        self.t += dt
        out = []
        for u, f in rates.items():
            run = self.runs[u]
            run.work += dt * f
            if left[u] <= dt + 1e-9:
                out.append(self._finish(u))
        return out

    def _finish(self, u):
        run = self.runs[u]
        self.runs[u] = None
        r = run.result
        if run.set_stale_after:
            self.machines[u].switch_pending = True
        self.rd[u] += run.cost.read_bytes
        self.wr[u] += run.cost.write_bytes
        return UnitEvent(u, r.status, r.err_code, r.err_pc, self.now, int(round(run.cost.cycles)))

    async def read(self, built):
        lo, hi = built.window
        m = Memory(hi, self.cfg.lanes)
        m.data[lo:hi] = self.mem.data[lo:hi]
        return m

    def traffic(self):
        return {"read_bytes": list(self.rd), "write_bytes": list(self.wr)}


def _image_n(mem, prog_addr):
    return int(mem.read_words(prog_addr, 1, signed=False)[0]) or 1
