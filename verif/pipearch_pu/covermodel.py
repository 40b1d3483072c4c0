"""Functional cover model of pipearch_pu (plan: testplan.yaml).

Sampled by ``PU.run``/``PU.wr`` in ``verif/pipearch_pu/test_pipearch_pu.py`` (and so also
by the ``pipearch_pu_pair`` bench that reuses them) on what the DUT did: the subroutine
instructions at the PCs it fetched (``dbg_fetch``/``dbg_pc``, words read back from its
memory) with their mode flags, the STATUS/ERROR it reported at the end of each run,
suspend -> resume of a context, and CTRL writes against its ``busy`` output.
"""
from __future__ import annotations

from golden import pipearch_isa as I
from verif.funcov import CoverModel

COV = CoverModel("pipearch_pu")
MODES = {  # (opcode, flag bit 24 set) -> label
    (I.LOAD, 0): "load_lines", (I.LOAD, 1): "load_amem", (I.STORE, 0): "store",
    (I.DOTSIG, 0): "dotsig_linear", (I.DOTSIG, 1): "dotsig_sigmoid",
    (I.SIGDELTA, 0): "sigdelta_identity", (I.SIGDELTA, 1): "sigdelta_sigmoid",
    (I.SCALAR, 0): "scalar_sgd", (I.SCALAR, 1): "scalar_scd",
    (I.MULTSUB, 0): "multsub_lane0", (I.MULTSUB, 1): "multsub_lane1", (I.L2REG, 0): "l2reg"}

if not COV.points:
    COV.point("sub_mode", values=list(MODES.values()),
              doc="every subroutine instruction (and its mode flag) the DUT fetched in a run")
    COV.point("end", values=["done", "error", "suspended"], doc="STATUS at the end of a run")
    COV.point("error_code", values=[I.ERROR_NAMES[c] for c in (I.E_OPCODE, I.E_RESERVED, I.E_FIELD, I.E_ACCESS,
                                                                 I.E_LENGTH, I.E_RESUME, I.E_TARGET, I.E_AXI)],
              doc="ERROR.CODE reported by the DUT: every decode-time class (E_ABSENT needs a PU without some "
                  "subroutine, which no configuration is) and E_AXI (an AXI error response); header, context "
                  "and PC-range codes are covered at the register-machine level, pipearch_rm")
    COV.point("resume", values=["resumed_to_done", "resumed_suspended_again"],
              doc="a START of a suspended context (its run ends DONE, or suspended again)")
    COV.point("ctrl", values=["start", "switch"], doc="CTRL command written by the host")
    COV.point("state", values=["idle", "busy"], doc="the DUT's busy output when CTRL was written")
    COV.cross("ctrl_x_busy", ["ctrl", "state"], doc="START and SWITCH while idle and busy")

_suspended: set = set()


def sample_ctrl(busy_sig, value: int):
    b = "busy" if int(busy_sig.value) else "idle"
    for bit, name in ((I.CTRL_START, "start"), (I.CTRL_SWITCH, "switch")):
        if value & bit:
            COV.sample_cross("ctrl_x_busy", name, b)


def sample_run(pu, job, st: int, err: int, trace: list):
    for pc in set(trace):
        raw = pu.ram.read(job.prog_addr + I.HEADER_BYTES + pc * I.INSTR_BYTES, 8)
        w0, w1 = int.from_bytes(raw[:4], "little"), int.from_bytes(raw[4:], "little")
        key = (w0 >> I.OP_SHIFT, int(bool(w1 & I.FLAG_SIGMOID)))
        if key in MODES:
            COV.sample("sub_mode", MODES[key])
    key = (pu.prefix, job.ctx_addr)
    if st & I.ST_ERROR:
        COV.sample("end", "error")
        code = (err >> 8) & 0xFF
        if code in I.ERROR_NAMES and I.ERROR_NAMES[code] in COV.points["error_code"].labels:
            COV.sample("error_code", I.ERROR_NAMES[code])
    if st & I.ST_SUSPENDED:
        COV.sample("end", "suspended")
        if key in _suspended:
            COV.sample("resume", "resumed_suspended_again")
        _suspended.add(key)
    elif st & I.ST_DONE and not st & I.ST_ERROR:
        COV.sample("end", "done")
        if key in _suspended:
            COV.sample("resume", "resumed_to_done")
        _suspended.discard(key)
    else:
        _suspended.discard(key)
