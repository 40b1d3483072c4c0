"""Functional cover model of pipearch_ldst (plan: testplan.yaml).

Sampled by the testbench's own per-cycle observer (``TB._observe`` calls
:meth:`Sampler.cycle` with the raw pin values, before any negative-test corruption) and
by ``TB.start`` / the start-while-busy test (``busy`` as seen when each start was given):
AR/AW burst lengths and 4 KiB page ends, bursts in flight, the load FIFO level, RRESP/
BRESP errors, the outcome flags at each done, the line-count field, and the valid/ready
patterns of ``m_axis_ld`` and ``s_axis_st``.
"""
from __future__ import annotations

from verif.funcov import CoverModel, enabled
from verif.funcov_tb import Flow, declare_flow

COV = CoverModel("pipearch_ldst")
PAGE = 4096

if not COV.points:
    for ch in ("ar", "aw"):
        COV.point(f"{ch}_len", {"single": lambda n: n == 1,
                                "mid": lambda n: 1 < n < COV.p["MAX_BURST"],
                                "max": lambda n: n == COV.p["MAX_BURST"]},
                  doc=f"{ch.upper()} burst length in beats (AxLEN+1): 1, between, MAX_BURST")
        COV.point(f"{ch}_page", values=["inside", "ends_at_4k", "starts_at_4k"],
                  doc=f"{ch.upper()} burst placement against 4 KiB pages (a burst never crosses one)")
    COV.point("ar_inflight", {"one": lambda n: n == 1, "several": lambda n: n > 1},
              doc="read bursts in flight (AR taken, RLAST not yet) after each AR handshake (loads are also "
                  "limited by free FIFO space: FIFO_DEPTH/MAX_BURST full bursts)")
    COV.point("aw_inflight", {"one": lambda n: n == 1, "several": lambda n: 1 < n < COV.p["OUTSTANDING"],
                              "max": lambda n: n == COV.p["OUTSTANDING"]},
              doc="write bursts in flight (AW taken, B not yet) after each AW handshake")
    COV.point("ld_fifo", values=["empty", "partial", "full"], doc="load data FIFO fill (R beats in, m_axis_ld out)")
    COV.point("resp", values=["rresp_slverr", "bresp_slverr"], doc="error responses observed on R and B")
    for k in ("ld", "st"):
        COV.point(f"{k}_outcome", values=["ok", "cfg_err", "resp_err"], doc=f"{k}_done with its error flags")
        COV.point(f"{k}_lines", {"one": lambda n: n == 1,
                                 "within_burst": lambda n: 1 < n <= COV.p["MAX_BURST"],
                                 "multi_burst": lambda n: COV.p["MAX_BURST"] < n < COV.p["MAX_LINES"],
                                 "max": lambda n: n == COV.p["MAX_LINES"],
                                 "zero": lambda n: n == 0,
                                 "above_max": lambda n: n > COV.p["MAX_LINES"]},
                  doc=f"{k}_lines of each start taken (0 and above MAX_LINES are rejected)")
    COV.point("kind", values=["ld", "st"], doc="which start")
    COV.point("busy", values=["idle", "busy"], doc="that side's busy when the start was given")
    COV.cross("start_x_busy", ["kind", "busy"], doc="ld_start and st_start while idle (taken) and busy (ignored)")
    declare_flow(COV, "m_axis_ld", output=True)
    declare_flow(COV, "s_axis_st", output=False)


def sample_start(kind: str, busy: bool, lines: int | None = None):
    COV.sample_cross("start_x_busy", kind, "busy" if busy else "idle")
    if lines is not None and not busy:
        COV.sample(f"{kind}_lines", lines)


class Sampler:
    def __init__(self, dut):
        self.on = enabled()
        self.d = dut
        self.p = COV.p
        self.lb = 4 * self.p["LANES"]
        self.inflight = 0
        self.aw_inflight = 0
        self.level = None
        self.flow = {"ld": Flow(COV, "m_axis_ld", True), "st": Flow(COV, "s_axis_st", False)}
        self.busy = {"ld": 0, "st": 0}

    def reset(self):
        self.inflight = self.aw_inflight = 0

    def fill(self, fill: int):
        if not self.on:
            return
        fd = self.p["FIFO_DEPTH"]
        lv = "empty" if fill <= 0 else "full" if fill >= fd else "partial"
        if lv != self.level:
            self.level = lv
            COV.sample("ld_fifo", lv)

    def cycle(self, v):
        """Raw pin values of this cycle (``v(signal)`` -> int or None)."""
        if not self.on:
            return
        d = self.d
        for ch in ("ar", "aw"):
            if v(getattr(d, f"m_axi_{ch}valid")) and v(getattr(d, f"m_axi_{ch}ready")):
                n = (v(getattr(d, f"m_axi_{ch}len")) or 0) + 1
                a = v(getattr(d, f"m_axi_{ch}addr")) or 0
                COV.sample(f"{ch}_len", n)
                COV.sample(f"{ch}_page", "ends_at_4k" if (a + n * self.lb) % PAGE == 0
                           else "starts_at_4k" if a % PAGE == 0 else "inside")
                if ch == "ar":
                    self.inflight += 1
                    COV.sample("ar_inflight", self.inflight)
                else:
                    self.aw_inflight += 1
                    COV.sample("aw_inflight", self.aw_inflight)
        if v(d.m_axi_rvalid) and v(d.m_axi_rready):
            if (v(d.m_axi_rresp) or 0) & 2:
                COV.sample("resp", "rresp_slverr")
            if v(d.m_axi_rlast):
                self.inflight -= 1
        if v(d.m_axi_bvalid) and v(d.m_axi_bready):
            self.aw_inflight -= 1
            if (v(d.m_axi_bresp) or 0) & 2:
                COV.sample("resp", "bresp_slverr")
        for k, s, out in (("ld", "m_axis_ld", True), ("st", "s_axis_st", False)):
            b = v(getattr(d, f"{k}_busy"))
            if b and not self.busy[k]:
                self.flow[k].restart()
            self.busy[k] = b
            if b:
                self.flow[k].cycle(v(getattr(d, f"{s}_tvalid")), v(getattr(d, f"{s}_tready")))
            if v(getattr(d, f"{k}_done")):
                COV.sample(f"{k}_outcome", "cfg_err" if v(getattr(d, f"{k}_cfg_err"))
                           else "resp_err" if v(getattr(d, f"{k}_resp_err")) else "ok")
