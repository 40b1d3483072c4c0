"""Functional coverage model of cosmic_memory_schedule_unit
(testplan: verif/cosmic_memory_schedule_unit/testplan.yaml).

Sampled by verif/cosmic_memory_schedule_unit/test_cosmic_memory_schedule_unit.py on what the
DUT did: the entries of every schedule it ran to done (kind, size against the beat and
burst, start offset within a beat), every beat it delivered on m_axis_pe (tkeep, tlast,
tdest), every AXI4 burst it issued (channel, length, ending on a 4 KiB page), the error
codes and queue counts it reported over AXI4-Lite, START with the busy pin, and the
valid/ready patterns of the PE streams (verif/stream_cov.FlowObserver).
"""
from __future__ import annotations

from verif.funcov import CoverModel
from verif.funcov_tb import declare_flow

COV = CoverModel("cosmic_memory_schedule_unit")
if not COV.points:
    COV.point("entry_kind", values=["read", "write", "broadcast"], doc="entry of a schedule the unit ran to done")
    COV.point("entry_size", values=["one_word", "below_beat", "one_beat", "partial_last_beat", "whole_beats",
                                    "above_burst"],
              doc="entry size: 1 word, < LANES words, exactly a beat, a partial last beat, whole beats, "
                  "more words than one MAXBURST burst")
    COV.point("entry_align", values=["aligned", "unaligned"], doc="thread pointer at an entry: beat aligned or not")
    COV.point("entries_in_run", {"one": lambda v: v == 1, "mid": lambda v: 1 < v < COV.p["QDEPTH"],
                                 "full_queue": lambda v: v == COV.p["QDEPTH"]}, doc="entries in a run")
    COV.point("pe_beat", values=["full_keep", "partial_keep", "tlast", "first_pe", "last_pe"],
              doc="beats delivered on m_axis_pe: tkeep all / some lanes, tlast, tdest 0 and NPE-1")
    COV.point("burst", values=["ar_single", "ar_multi", "ar_max", "aw_single", "aw_multi", "aw_max",
                               "ar_ends_at_4k", "aw_ends_at_4k"],
              doc="AXI4 bursts issued: 1 beat, 2..MAXBURST-1, MAXBURST beats, ending on a 4 KiB boundary")
    COV.point("error_code", values=[1, 2, 3, 4, 5, 6, 7],
              doc="STATUS.CODE with ERROR: 1 PE >= NPE, 2 size 0, 3 queue full, 4 busy/empty START, "
                  "5 register, 6 write data from the wrong PE, 7 AXI error response")
    COV.point("qcount", {"empty": lambda v: v == 0, "partial": lambda v: 0 < v < COV.p["QDEPTH"],
                         "full": lambda v: v == COV.p["QDEPTH"]}, doc="QCOUNT read back")
    COV.point("start", values=["idle", "busy"], doc="CTRL.START written with the busy pin low / high")
    declare_flow(COV, "m_axis_pe", True)
    declare_flow(COV, "s_axis_pe", False)


def sample_entries(entries, mem_addr, L: int, maxburst: int):
    from golden.cosmic_msu import Entry
    COV.sample("entries_in_run", len(entries))
    for e in entries:
        e = e if isinstance(e, Entry) else Entry.decode(e)
        COV.sample("entry_kind", "broadcast" if e.bcast else "write" if e.write else "read")
        s = e.size
        lab = ["one_word"] if s == 1 else []
        lab.append("below_beat" if s < L else "one_beat" if s == L else
                   "whole_beats" if s % L == 0 else "partial_last_beat")
        if s > maxburst * L:
            lab.append("above_burst")
        for x in set(lab):
            COV.sample("entry_size", x)
    for a in mem_addr:
        COV.sample("entry_align", "aligned" if a % L == 0 else "unaligned")


def sample_burst(ch: str, addr: int, n: int, beat_bytes: int, maxburst: int):
    COV.sample("burst", f"{ch}_" + ("single" if n == 1 else "max" if n == maxburst else "multi"))
    if (addr + n * beat_bytes) % 4096 == 0:
        COV.sample("burst", f"{ch}_ends_at_4k")


class BeatSampler:
    def __init__(self, LW: int, SB: int, NPE: int):
        self.LW, self.SB, self.NPE = LW, SB, NPE
        self.todo = set(COV.points["pe_beat"].labels)

    def __call__(self, txn):
        if not self.todo:
            return
        v, last = txn
        keep = (v >> self.LW) & ((1 << self.SB) - 1)
        dest = v >> (self.LW + self.SB)
        labs = ["full_keep" if keep == (1 << self.SB) - 1 else "partial_keep"]
        if last:
            labs.append("tlast")
        if dest == 0:
            labs.append("first_pe")
        if dest == self.NPE - 1:
            labs.append("last_pe")
        for lb in labs:
            if lb in self.todo:
                self.todo.discard(lb)
                COV.sample("pe_beat", lb)
