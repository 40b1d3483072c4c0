"""PipeArch-RT: the scheduler (PipeArch sections 7.1-7.3).

One :class:`Runtime` drives any :class:`pipearch_rt.backend.Backend` (the fast ISS
model or the RTL under cocotb) through the same coroutine :meth:`Runtime.run`.

Jobs are submitted as :class:`pipearch_rt.jobs.JobSpec` (each with an ``arrival``
cycle and a ``priority``); :meth:`Runtime.submit` places the job in the shared memory
and validates it -- a program that does not assemble, a size that does not fit the
unit, or a context area overlapping another job's (or its own) data is *rejected*
with the reason, and the others are served as usual.  A unit that stops in Error
*fails* that job with the unit's error code and PC; the unit is then free for the
next thread.

Policies (``policy``):

* ``"fcfs"``: in arrival order, each to completion (no preemption);
* ``"rr"``: round robin in time slots of ``slot`` cycles: when a thread has run its
  slot and another one waits, CTRL.SWITCH is written; the thread is suspended at its
  next YIELD and queued at the back;
* ``"sjf"``: shortest estimated remaining run time first (``pipearch_rt.costs.estimate``:
  data volume over the measured consumption rate, minus the cycles already run); a
  waiting thread whose estimate is shorter than a running thread's remaining estimate
  preempts the longest such running thread.

Priority comes before the policy's order in every policy: with
``priority_preemption`` (default on) a waiting thread of higher priority than a running
one preempts the lowest-priority running thread at its next YIELD.

Migration (``migration=True``, the default): one queue for all units; a suspended (or
new) thread runs on whichever unit frees first, its context being in shared memory.
``migration=False``: each job is bound at submission to a unit (round robin in
submission order) and only ever runs there -- the setting of the paper's Table 7 without
migration.

A pending CTRL.SWITCH that arrived after a thread's last YIELD stays pending in the unit
and suspends the next thread at its first YIELD (the hardware has no way to withdraw
it); such a thread is simply queued again under the policy's order.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from golden import pipearch_isa as I

from .costs import CostModel, estimate
from .jobs import PLACE_ALIGN, Built, JobSpec, Rejected, build

POLICIES = ("fcfs", "rr", "sjf")
TERMINAL = ("finished", "failed", "rejected")


@dataclass
class Thread:
    tid: int
    spec: JobSpec
    built: Built | None = None
    state: str = "new"           # new, ready, running, finished, failed, rejected
    reason: str = ""
    home: int | None = None      # bound unit when migration is off
    unit: int | None = None
    seq: int = 0                 # queue position (RR: re-set at every suspension)
    est: float = 0.0             # SJF estimate of the whole job (cycles)
    ran: int = 0                 # cycles run so far (sum of CYCLES of its STARTs)
    t_start: int | None = None   # cycle of the current START
    t_first: int | None = None
    t_finish: int | None = None
    runs: list = field(default_factory=list)   # (unit, start cycle, end cycle, status)
    model: np.ndarray | None = None
    switch_requested: bool = False

    @property
    def arrival(self):
        return self.spec.arrival

    @property
    def completion(self):
        """Cycles from submission to finish (None unless finished)."""
        return None if self.t_finish is None else self.t_finish - self.arrival

    @property
    def units_used(self):
        return sorted({u for u, *_ in self.runs})

    @property
    def migrations(self):
        return sum(1 for a, b in zip(self.runs, self.runs[1:]) if a[0] != b[0])

    def remaining(self, now):
        cur = now - self.t_start if self.state == "running" and self.t_start is not None else 0
        return max(self.est - self.ran - cur, 0.0)


class Runtime:
    def __init__(self, backend, policy: str = "fcfs", *, slot: int | None = None, migration: bool = True,
                 priority_preemption: bool = True, costs: CostModel | None = None,
                 mem_base: int = 0, log=None):
        if policy not in POLICIES:
            raise ValueError(f"policy {policy!r}: one of {POLICIES}")
        if policy == "rr" and not (isinstance(slot, int) and slot > 0):
            raise ValueError(f"policy 'rr' needs a positive time slot (cycles), got {slot!r}")
        self.be, self.policy, self.slot = backend, policy, slot
        self.migration, self.prio_pre = migration, priority_preemption
        self.costs = costs or CostModel.load()
        self.threads: list[Thread] = []
        self.next_base = mem_base
        self.seq = 0
        self.running: list[Thread | None] = [None] * backend.units
        self.log = log or (lambda *a: None)
        self.switches = 0

    # ------------------------------------------------------------------ submission
    def submit(self, spec: JobSpec) -> Thread:
        th = Thread(len(self.threads), spec)
        self.threads.append(th)
        cfg = self.be.cfg
        try:
            base = spec.base
            if base is None:
                base = self.next_base
            built = build(spec, cfg, base)
            self._check_overlap(th, built)
        except Rejected as e:
            th.state, th.reason = "rejected", str(e)
            self.log(f"rejected {spec.name}: {e}")
            return th
        th.built = built
        hi = max(built.job.end, built.job.ctx_addr + I.CTX_BYTES)
        if spec.base is None or hi > self.next_base:
            self.next_base = max(self.next_base, -(-hi // PLACE_ALIGN) * PLACE_ALIGN)
        th.est = estimate(built, self.costs)
        return th

    def _check_overlap(self, th, built):
        """A context area must not overlap data: another job's areas or its own."""
        ca = built.job.ctx_addr
        ctx = (ca, ca + I.CTX_BYTES)
        ov = lambda a, b: a[0] < b[1] and b[0] < a[1]
        own = [(nm, r) for nm, r in _named_areas(built) if nm != "context"]
        for nm, r in own:
            if ov(ctx, r):
                raise Rejected(f"{th.spec.name}: context area [{ctx[0]:#x}, {ctx[1]:#x}) overlaps its own "
                               f"{nm} [{r[0]:#x}, {r[1]:#x})")
        mine = [r for _, r in _named_areas(built)]
        for o in self.threads:
            if o is th or o.built is None:
                continue
            for nm, r in _named_areas(o.built):
                if ov(ctx, r):
                    raise Rejected(f"{th.spec.name}: context area [{ctx[0]:#x}, {ctx[1]:#x}) overlaps "
                                   f"{o.spec.name}'s {nm} [{r[0]:#x}, {r[1]:#x})")
                for m in mine:
                    if ov(m, r):
                        raise Rejected(f"{th.spec.name}: memory [{m[0]:#x}, {m[1]:#x}) overlaps "
                                       f"{o.spec.name}'s {nm} [{r[0]:#x}, {r[1]:#x})")

    # ------------------------------------------------------------------ scheduling
    def _eligible(self, th, u):
        return self.migration or th.home == u

    def _key(self, th, now):
        if self.policy == "sjf":
            return (-th.spec.priority, th.remaining(now), th.seq)
        return (-th.spec.priority, th.seq)

    def _ready(self):
        return [t for t in self.threads if t.state == "ready"]

    async def _admit(self, now):
        for th in self.threads:
            if th.state == "new" and th.arrival <= now and th.built is not None:
                await self.be.place(th.built)
                th.state = "ready"
                th.seq = self.seq
                if not self.migration:
                    th.home = self.seq % self.be.units
                self.seq += 1

    async def _dispatch(self, now):
        for u in range(self.be.units):
            if self.running[u] is not None:
                continue
            cand = [t for t in self._ready() if self._eligible(t, u)]
            if not cand:
                continue
            th = min(cand, key=lambda t: self._key(t, now))
            th.state, th.unit, th.t_start = "running", u, now
            th.switch_requested = False
            if th.t_first is None:
                th.t_first = now
            self.running[u] = th
            await self.be.start(u, th.built)

    async def _request(self, th, now, why):
        th.switch_requested = True
        self.switches += 1
        self.log(f"{now}: switch {th.spec.name} on unit {th.unit} ({why})")
        await self.be.switch(th.unit)

    async def _preempt(self, now):
        ready = self._ready()
        if not ready:
            return
        # preemption candidates per waiting thread: running threads on units it may use
        taken = set()
        for w in sorted(ready, key=lambda t: self._key(t, now)):
            if any(self.running[u] is None and self._eligible(w, u) for u in range(self.be.units)):
                continue
            victims = [self.running[u] for u in range(self.be.units)
                       if self.running[u] is not None and self._eligible(w, u) and u not in taken]
            if any(v.switch_requested for v in victims):
                # a unit it may use is already being freed
                taken.add(next(v.unit for v in victims if v.switch_requested))
                continue
            victims = [v for v in victims if not v.switch_requested]
            if not victims:
                continue
            v = None
            if self.prio_pre:
                low = [x for x in victims if x.spec.priority < w.spec.priority]
                if low:
                    v = min(low, key=lambda x: (x.spec.priority, -x.remaining(now)))
                    why = f"priority {w.spec.priority} > {v.spec.priority} ({w.spec.name})"
            if v is None and self.policy == "rr":
                due = [x for x in victims if now - x.t_start >= self.slot and x.spec.priority <= w.spec.priority]
                if due:
                    v = min(due, key=lambda x: x.t_start)
                    why = f"time slot of {self.slot} cycles used, {w.spec.name} waits"
            if v is None and self.policy == "sjf":
                longer = [x for x in victims if x.spec.priority <= w.spec.priority
                          and x.remaining(now) > w.remaining(now)]
                if longer:
                    v = max(longer, key=lambda x: x.remaining(now))
                    why = f"{w.spec.name} estimated {w.remaining(now):.0f} < {v.remaining(now):.0f} cycles left"
            if v is not None:
                taken.add(v.unit)
                await self._request(v, now, why)

    def _deadline(self, now):
        cands = [t.arrival for t in self.threads if t.state == "new" and t.built is not None]
        if self.policy == "rr":
            cands += [t.t_start + self.slot for t in self.running
                      if t is not None and not t.switch_requested and t.t_start + self.slot > now]
        return min(cands) if cands else None

    async def _event(self, ev):
        th = self.running[ev.unit]
        if th is None:
            raise RuntimeError(f"unit {ev.unit} reported {ev.status} with no thread on it")
        self.running[ev.unit] = None
        th.runs.append((ev.unit, th.t_start, ev.cycle, ev.status))
        th.ran += ev.busy
        th.unit = None
        th.switch_requested = False
        if ev.status == "finished":
            th.state, th.t_finish = "finished", ev.cycle
            mem = await self.be.read(th.built)
            th.model = th.built.model(mem)
        elif ev.status == "suspended":
            th.state = "ready"
            if self.policy == "rr":
                th.seq = self.seq
                self.seq += 1
        else:
            th.state = "failed"
            th.t_finish = None
            th.reason = (f"{th.spec.name}: unit {ev.unit} reported error code {ev.err_code} "
                         f"({I.ERROR_NAMES.get(ev.err_code, 'unknown')}) at PC {ev.err_pc}")
            self.log(th.reason)

    async def run(self, max_events: int = 1_000_000):
        """Serve every submitted job to the end; returns a :class:`Report`."""
        for _ in range(max_events):
            now = self.be.now
            await self._admit(now)
            await self._dispatch(now)
            await self._preempt(now)
            if all(t.state in TERMINAL for t in self.threads):
                return Report(self)
            evs = await self.be.wait(self._deadline(now))
            for ev in evs:
                await self._event(ev)
        raise RuntimeError(f"runtime: not done after {max_events} events")


def _named_areas(built):
    lb = built.job.cfg.line_bytes
    j = built.job
    from golden.pipearch_programs import PROG_RESERVE
    out = [("program", (j.prog_addr, j.prog_addr + PROG_RESERVE)), ("context", (j.ctx_addr, j.ctx_addr + I.CTX_BYTES))]
    for nm, (a, n) in j.areas.items():
        out.append((f"area '{nm}'", (a * lb, (a + max(n, 1)) * lb)))
    return out


class Report:
    """Completion times and traffic of one :meth:`Runtime.run`."""

    def __init__(self, rt: Runtime):
        self.threads = list(rt.threads)
        self.policy, self.units, self.slot, self.migration = rt.policy, rt.be.units, rt.slot, rt.migration
        self.end = rt.be.now
        self.switches = rt.switches
        self.traffic = rt.be.traffic()
        done = [t for t in self.threads if t.state == "finished"]
        self.completions = np.array([t.completion for t in done], dtype=float)
        self.total = float(max((t.t_finish for t in done), default=0) - min((t.arrival for t in done), default=0))
        self.order = [t.spec.name for t in sorted(done, key=lambda t: (t.t_finish, t.tid))]

    def pct(self, q):
        return float(np.percentile(self.completions, q)) if len(self.completions) else 0.0

    @property
    def median(self):
        return self.pct(50)

    def by_name(self):
        return {t.spec.name: t for t in self.threads}

    def bytes_per_cycle(self):
        tot = sum(self.traffic["read_bytes"]) + sum(self.traffic["write_bytes"])
        return tot / self.end if self.end else 0.0
