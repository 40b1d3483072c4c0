"""Functional cover model of pipearch_region (plan: testplan.yaml).

:func:`observe` starts one coroutine per test that watches the region's pins at the
falling edge (what the DUT sees at the next rising edge): every ``rd*/wr*_start`` with
the channel's ``busy`` (taken or ignored), the access mode of each taken start, the
``*_err`` outcome at ``*_done`` classified by the access word that started it, and the
``fifo_count`` level (empty / partly full / full).
"""
from __future__ import annotations

import cocotb
from cocotb.triggers import FallingEdge, ReadOnly

from golden.pipearch_region import decode_access
from verif.funcov import CoverModel, enabled

COV = CoverModel("pipearch_region")
MODES = ["bram", "bram_keep", "bram_amem", "bram_keep_amem", "fifo"]
ERRORS = ["mode_bits", "length_zero", "length_above_depth", "iterations_zero"]

if not COV.points:
    COV.point("rd_mode", values=MODES, doc="access mode of every taken read-channel start")
    COV.point("wr_mode", values=MODES, doc="access mode of every taken write-channel start")
    COV.point("kind", values=["rd", "wr"], doc="channel kind of a start pulse")
    COV.point("busy", values=["idle", "busy"], doc="that channel's busy when start was given")
    COV.cross("start_x_busy", ["kind", "busy"], doc="start x busy on read and write channels")
    COV.point("outcome", values=["ok"] + ERRORS, doc="*_done: err clear, or set for each rejection cause")
    COV.point("fifo_level", values=["empty", "partial", "full"], doc="fifo_count level reached")
    COV.point("concurrency", values=["one", "several"], doc="channels started in the same cycle")


def mode(word: int) -> str | None:
    f = decode_access(word)
    if f["fifo"] and not f["bram"]:
        return "fifo"
    if f["bram"] and not f["fifo"]:
        return "bram" + ("_keep" if f["keep"] else "") + ("_amem" if f["use_amem"] else "")
    return None


def cause(word: int, iters: int, depth: int) -> str | None:
    f = decode_access(word)
    if f["bram"] == f["fifo"]:
        return "mode_bits"
    if f["length"] == 0:
        return "length_zero"
    if f["length"] > depth:
        return "length_above_depth"
    if iters == 0:
        return "iterations_zero"
    return None


def observe(tb):
    if enabled():
        cocotb.start_soon(_watch(tb))


async def _watch(tb):
    dut = tb.dut
    chans = [(k, i, getattr(dut, f"{k}{i}_start"), getattr(dut, f"{k}{i}_busy"), getattr(dut, f"{k}{i}_done"),
              getattr(dut, f"{k}{i}_err"), getattr(dut, f"{k}{i}_access"), getattr(dut, f"{k}{i}_iters"))
             for k, n in (("rd", tb.NR), ("wr", tb.NW)) for i in range(n)]
    taken = {}
    level = None
    depth = tb.D
    fe, ro = FallingEdge(tb.clk), ReadOnly()
    while True:
        await fe
        await ro
        if int(dut.rst.value):
            taken.clear()
            continue
        n_started = 0
        for k, i, st, bz, dn, er, acc, it in chans:
            if int(dn.value) and (k, i) in taken:
                w, n = taken.pop((k, i))
                why = cause(w, n, depth)
                if int(er.value) and why:
                    COV.sample("outcome", why)
                elif not int(er.value) and not why:
                    COV.sample("outcome", "ok")
            if int(st.value):
                b = int(bz.value)
                COV.sample_cross("start_x_busy", k, "busy" if b else "idle")
                if not b:
                    n_started += 1
                    w, n = int(acc.value), int(it.value)
                    taken[(k, i)] = (w, n)
                    m = mode(w)
                    if m and not cause(w, n, depth):
                        COV.sample(f"{k}_mode", m)
        if n_started:
            COV.sample("concurrency", "one" if n_started == 1 else "several")
        c = int(dut.fifo_count.value)
        lv = "empty" if c == 0 else "full" if c >= depth else "partial"
        if lv != level:
            level = lv
            COV.sample("fifo_level", lv)
