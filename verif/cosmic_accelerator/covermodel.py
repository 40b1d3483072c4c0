"""Functional coverage model of cosmic_accelerator (testplan: verif/cosmic_accelerator/testplan.yaml).

Sampled by verif/cosmic_accelerator/test_cosmic_accelerator.py on what the DUT did: every
CTRL command whose AXI4-Lite write it answered, every error code (and memory-schedule-unit
sub-code) it reported in STATUS, each benchmark program it trained to a model equal to both
references (tablac.machine and golden parallel SGD), the number of rounds a finished TRAIN
command ran (ROUND_CNT) and the thread count of the netlist that ran it.
"""
from __future__ import annotations

from verif.funcov import CoverModel

COV = CoverModel("cosmic_accelerator")
if not COV.points:
    COV.point("command", values=["LOAD_MODEL", "TRAIN", "ERRCLR", "AGGREGATE"], doc="CTRL command written")
    COV.point("error_code", values=list(range(1, 12)),
              doc="STATUS.CODE with ERROR: 1 PE, 2 slot, 3 link, 4 opcode, 5 memory schedule unit, "
                  "6 thread table, 7 busy, 8 bus, 9 register, 10 PE error, 11 write entry in the schedule")
    COV.point("msu_code", values=list(range(1, 8)), doc="STATUS.MSU_CODE of an error 5 (the unit's own codes)")
    COV.point("program", values=["linear", "logistic", "svm", "reco", "backprop"],
              doc="benchmark program trained and checked word for word after every round")
    COV.point("rounds", {"one": lambda v: v == 1, "several": lambda v: v > 1},
              doc="rounds a finished TRAIN command ran (ROUND_CNT)")
    COV.point("threads", {"one": lambda v: v == 1, "two": lambda v: v == 2, "more": lambda v: v > 2},
              doc="threads of the netlist that trained a program")


def sample_ctrl(rm, value: int):
    for name in ("LOAD_MODEL", "TRAIN", "ERRCLR", "AGGREGATE"):
        if value & rm.CTRL.pack(**{name: 1}):
            COV.sample("command", name)


def sample_status(err: int, code: int, msu: int):
    if err and 1 <= code <= 11:
        COV.sample("error_code", code)
        if code == 5 and 1 <= msu <= 7:
            COV.sample("msu_code", msu)
