"""Functional cover model of pipearch_rm (plan: testplan.yaml).

Sampled by the testbench (``verif/pipearch_rm/test_pipearch_rm.py``, ``TB.run``/``TB.wr``)
on what the DUT did: the opcodes at the PCs it fetched (``dbg_fetch``/``dbg_pc``, the
instruction read back from the image it loaded), the subroutine issues it made
(``sub_start`` with ``sub_nb``, ``sub_w1`` and the ``sub_acc*`` access words), the STATUS
and ERROR registers it reports, and CTRL writes against its ``busy`` output.
"""
from __future__ import annotations

from golden import pipearch_isa as I
from golden.pipearch_region import decode_access
from verif.funcov import CoverModel

COV = CoverModel("pipearch_rm")
OPS = {**I.CONTROL_OPS, **I.SUB_OPS}
ACCESS = ["bram", "fifo", "bram_keep", "bram_amem", "add_ra", "add_rb"]
END = ["done", "error", "suspended"]

if not COV.points:
    COV.point("opcode", values=list(OPS.values()) + ["illegal"],
              doc="opcode of every instruction the DUT fetched (its PC trace), illegal = no such opcode")
    COV.point("issue_op", values=list(I.SUB_OPS.values()), doc="subroutine the DUT issued (sub_start)")
    COV.point("issue_nb", values=["blocking", "nonblocking"], doc="sub_nb of the issue")
    COV.cross("issue_x_nb", ["issue_op", "issue_nb"], doc="every subroutine issued blocking and non-blocking")
    COV.point("access", values=ACCESS,
              doc="region-access mode of each channel access word the DUT issued (BRAM, FIFO, BRAM keep-count, "
                  "BRAM through the address memory) and offsets adjusted by R[ra]/R[rb] (routing word flags)")
    COV.point("load_amem", values=["lines", "amem"], doc="LOAD issued in line mode and in address-memory mode (w1 flag 24)")
    COV.point("error_code", values=[I.ERROR_NAMES[c] for c in sorted(I.ERROR_NAMES)],
              doc="ERROR.CODE the DUT reported at the end of a run")
    COV.point("end", values=END, doc="STATUS at the end of a run: DONE, ERROR, suspended by a context switch")
    COV.point("ctrl", values=["start", "switch", "clear"], doc="CTRL command written by the host")
    COV.point("state", values=["idle", "busy"], doc="the DUT's busy output when CTRL was written")
    COV.cross("ctrl_x_busy", ["ctrl", "state"], doc="start x busy (and SWITCH/CLEAR) while idle and busy")


def sample_ctrl(dut, value: int):
    busy = "busy" if int(dut.busy.value) else "idle"
    for bit, name in ((I.CTRL_START, "start"), (I.CTRL_SWITCH, "switch"), (I.CTRL_CLEAR, "clear")):
        if value & bit:
            COV.sample_cross("ctrl_x_busy", name, busy)


def sample_run(tb, prog: int, status: int, errw: int):
    """After a run: the fetched opcodes, the issues, the end state and error code."""
    for pc in set(tb.trace):
        w0 = int.from_bytes(tb.mem.read_bytes(prog + I.HEADER_BYTES + pc * I.INSTR_BYTES, 4), "little")
        COV.sample("opcode", OPS.get(w0 >> I.OP_SHIFT, "illegal"))
    for rec in tb.issues:
        name = I.SUB_OPS[rec["op"]]
        COV.sample_cross("issue_x_nb", name, "nonblocking" if rec["nb"] else "blocking")
        w1 = rec["w1"]
        if rec["op"] == I.LOAD:
            COV.sample("load_amem", "amem" if w1 & I.FLAG_AMEM else "lines")
        for k, word in enumerate(rec["acc"]):
            if not word:
                continue
            f = decode_access(word)
            if f["fifo"] and not f["bram"]:
                COV.sample("access", "fifo")
            elif f["bram"] and not f["fifo"]:
                COV.sample("access", "bram_amem" if f["use_amem"] else "bram_keep" if f["keep"] else "bram")
            if w1 >> (16 + k) & 1:
                COV.sample("access", "add_ra")
            if w1 >> (20 + k) & 1:
                COV.sample("access", "add_rb")
    st = tb.rm.STATUS.unpack(status)
    if st["ERROR"]:
        COV.sample("end", "error")
        code = tb.rm.ERROR.CODE.get(errw)
        if code in I.ERROR_NAMES:
            COV.sample("error_code", I.ERROR_NAMES[code])
    elif st["DONE"] and not st.get("SUSPENDED"):
        COV.sample("end", "done")
    if st.get("SUSPENDED"):
        COV.sample("end", "suspended")
