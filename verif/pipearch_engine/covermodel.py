"""Functional cover model of pipearch_engine (plan: testplan.yaml).

Sampled in ``EngineTB._count_err`` (the testbench's per-cycle observer, ReadOnly after
each rising edge) on the engine's pins: an issue is *taken* when its ``sub_busy`` bit
rises (the issue fields are still on ``sub_*`` then), *rejected* when its ``sub_err``
bit pulses; the number of subroutines busy together, and the Load/Store stream
patterns.  ``sub_start`` given while that subroutine is busy (ignored) is sampled by the
start-while-busy test from the pulses ``verif.tb_common.start_while_busy`` gave with the
``sub_busy`` bit seen high (a pulse written at the falling edge is gone by ReadOnly).
"""
from __future__ import annotations

from golden import pipearch_isa as I
from golden.pipearch_region import decode_access
from verif.funcov import CoverModel, enabled
from verif.funcov_tb import Flow, declare_flow

COV = CoverModel("pipearch_engine")
NAMES = [I.SUB_OPS[op] for op in I.ALL_SUBROUTINES]
MODES = {(I.LOAD, 0): "load_lines", (I.LOAD, 1): "load_amem", (I.STORE, 0): "store",
         (I.DOTSIG, 0): "dotsig_linear", (I.DOTSIG, 1): "dotsig_sigmoid",
         (I.SIGDELTA, 0): "sigdelta_identity", (I.SIGDELTA, 1): "sigdelta_sigmoid",
         (I.SCALAR, 0): "scalar_sgd", (I.SCALAR, 1): "scalar_scd",
         (I.MULTSUB, 0): "multsub_lane0", (I.MULTSUB, 1): "multsub_lane1", (I.L2REG, 0): "l2reg"}

if not COV.points:
    COV.point("taken", values=list(MODES.values()), doc="every subroutine in each mode, issue taken (sub_busy rose)")
    COV.point("rejected", values=NAMES, doc="a malformed issue of each subroutine rejected (sub_err)")
    COV.point("access", values=["bram", "bram_keep", "bram_amem", "fifo"],
              doc="region-access mode of every channel word of a taken issue")
    COV.point("overlap", values=["alone", "overlapped"], doc="other subroutines busy when an issue is taken")
    COV.point("start_busy", values=["LOAD", "STORE", "DOTSIG"],
              doc="sub_start given while that subroutine is busy (ignored): the Load and Store movers and "
                  "one compute subroutine (the test aims at these three)")
    declare_flow(COV, "s_axis_ld", output=False)
    declare_flow(COV, "m_axis_st", output=True)


def sample_start_busy(name: str, pulses: int):
    """``pulses`` sub_start pulses of ``name`` given while its sub_busy bit was seen high
    (``verif.tb_common.start_while_busy`` gives a pulse only then)."""
    for _ in range(pulses):
        COV.sample("start_busy", name)


class Sampler:
    def __init__(self, dut):
        self.on = enabled()
        self.d = dut
        self.prev_busy = 0
        self.fl = (Flow(COV, "s_axis_ld", False), Flow(COV, "m_axis_st", True))

    def cycle(self, err: int):
        if not self.on:
            return
        d = self.d
        b = int(d.sub_busy.value) if d.sub_busy.value.is_resolvable else 0
        rose = b & ~self.prev_busy
        for s in range(7):
            if err >> s & 1:
                COV.sample("rejected", NAMES[s])
            if rose >> s & 1:
                op = I.LOAD + s
                w1 = int(d.sub_w1.value)
                key = (op, int(bool(w1 & I.FLAG_SIGMOID)))
                if key in MODES:
                    COV.sample("taken", MODES[key])
                COV.sample("overlap", "overlapped" if b & ~(1 << s) else "alone")
                for k, _ in enumerate(I.CHANNELS[op]):
                    w = int(getattr(d, f"sub_acc{k}").value)
                    if not w:
                        continue
                    f = decode_access(w)
                    COV.sample("access", "fifo" if f["fifo"] else "bram_amem" if f["use_amem"]
                               else "bram_keep" if f["keep"] else "bram")
        if b & 1 and not self.prev_busy & 1:
            self.fl[0].restart()
        if b & 2 and not self.prev_busy & 2:
            self.fl[1].restart()
        if b & 1:
            self.fl[0].cycle(int(d.s_axis_ld_tvalid.value), int(d.s_axis_ld_tready.value))
        if b & 2:
            self.fl[1].cycle(int(d.m_axis_st_tvalid.value), int(d.m_axis_st_tready.value))
        self.prev_busy = b
