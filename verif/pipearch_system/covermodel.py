"""Functional cover model of pipearch_system (plan: testplan.yaml).

Sampled by the testbench's bus monitor (``SysTB._monitor``) on the shared AXI4 port: each
AR/AW grant by unit and whether other units were requesting (``dbg_ar_req`` /
``dbg_aw_req``), how many units are busy together (``busy``); and by ``Unit.run`` on the
STATUS each run ends with: a context suspended on one unit and started again on the same
or on another unit.  (The per-unit program coverage goes to the pipearch_pu model through
the PU driver the units reuse.)
"""
from __future__ import annotations

from golden import pipearch_isa as I
from verif.funcov import CoverModel, enabled

COV = CoverModel("pipearch_system")
UNITS = ["u0", "u1"]   # present in every configuration with two or more units (default: 2)

if not COV.points:
    for ch in ("ar", "aw"):
        COV.point(f"{ch}_unit", values=UNITS, doc=f"unit granted an {ch.upper()} (units 2 and 3 of the units4 "
                                                   "config are no bins of their own)")
        COV.point(f"{ch}_contention", values=["alone", "contended"],
                  doc=f"other units requesting {ch.upper()} in the grant cycle")
    COV.cross("ar_grant", ["ar_unit", "ar_contention"],
              doc="AR grants to units 0 and 1, alone and against other requesters (the read path carries "
                  "the bandwidth; write bursts are few per job, so AW is covered by its two points)")
    COV.point("busy_units", values=["one", "several"], doc="units busy in the same cycle")
    COV.point("migrate", values=["other_unit"],
              doc="a context suspended on one unit started again on another (resume on the same PU: "
                  "pipearch_pu.resume)")

_suspended_on: dict = {}


class Sampler:
    def __init__(self):
        self.on = enabled()
        self.busy_lv = None

    def grant(self, ch: str, g: int, req: int):
        if not self.on or not 0 <= g < len(UNITS):
            return
        c = "contended" if req & ~(1 << g) else "alone"
        if ch == "ar":
            COV.sample_cross("ar_grant", UNITS[g], c)
        else:
            COV.sample("aw_unit", UNITS[g])
            COV.sample("aw_contention", c)

    def busy(self, b: int):
        if not self.on:
            return
        n = bin(b).count("1")
        lv = None if n == 0 else "one" if n == 1 else "several"
        if lv and lv != self.busy_lv:
            COV.sample("busy_units", lv)
        self.busy_lv = lv


def sample_unit_run(unit, job, st: int):
    key = job.ctx_addr
    if key in _suspended_on and _suspended_on.pop(key) != unit.u:
        COV.sample("migrate", "other_unit")
    if st & I.ST_SUSPENDED:
        _suspended_on[key] = unit.u
