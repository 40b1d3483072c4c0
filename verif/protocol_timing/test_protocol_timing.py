"""Protocol timing diagrams of the datasheets, recorded from the RTL.

One short, deterministic cocotb run per core (the committed ``default`` netlist): a
``start`` with its ``cfg_*`` fields, every input stream presented from the next cycle
(one bubble on the first stream), the output sink ready for the first beat and then
held not-ready for two cycles while the core offers the next one.  Every cycle is
recorded (:mod:`verif.wavetrace`), the protocol relations the datasheet states are
asserted on the recording (busy from the cycle after ``start`` until ``done``; the
datasheet's latency; AXI4-Stream beats held under backpressure; beat counts and
``tlast``; ``done`` a one-cycle pulse after the last output transfer), and the
WaveDrom JSON is written for the launcher.

The launcher (pytest, below) compares that JSON with the committed source of the
datasheet diagram, ``rtl_gen/timing_diagrams/<core>.json`` (rendered to
``ip/<core>/doc/<core>_protocol.svg`` by ``make gen``): a netlist whose protocol timing
changed fails here until the diagram is re-recorded with
``python -m verif.protocol_timing.test_protocol_timing --update <core>``.
"""
from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pytest

CORES = ("l2reg", "multiply_subtract", "sigmoid_delta", "dot_sigmoid", "scalar_engine",
         "pipearch_rm", "pipearch_pu", "cosmic_memory_schedule_unit", "maple_smart_memory", "fpdeep_conv_tile",
         "fpdeep_conv_engine", "fpdeep_line_buffer", "cosmic_accelerator", "pipearch_system",
         "fpdeep_fp", "fpdeep_eb", "fpdeep_pg", "fpdeep_node", "pipearch_ldst", "cosmic_pe",
         "pipearch_region", "pipearch_engine", "maple_pe_chain")
# cores without start/busy/done: streams only.  inputs: (stream, beats, beat carrying tlast
# or None), presented in this order from cycle PRE (one per cycle, the later ones from the
# cycle after the earlier one's first beat), one bubble on the last stream's beat 1
STREAMS = {"fpdeep_conv_tile": {"inputs": [("s_axis_w", 1, None), ("s_axis_win", 3, 2)],
                                "out": "m_axis_res", "latency_from": "s_axis_win",
                                "scenario": "a filter beat, then three windows (one bubble, tlast on the "
                                            "third), the sink ready for the first result and then not "
                                            "ready for two cycles"},
           "fpdeep_conv_engine": {"inputs": [("s_axis_w", 4, None), ("s_axis_b", 1, None), ("s_axis_win", 3, 2)],
                                  "out": "m_axis_res", "latency_from": "s_axis_win",
                                  "scenario": "the S_OC x S_IC = 4 filter beats and the bias beat, then "
                                              "three window beats (one bubble, tlast on the third), the "
                                              "sink ready for the first result and then not ready for two "
                                              "cycles"},
           # a 3 x 2 map with padding 1: 6 pixels in (tlast closing each row), 6 windows out
           "fpdeep_line_buffer": {"start": {"cfg_width": 3, "cfg_height": 2, "cfg_pad": 1},
                                  "inputs": [("s_axis_pix", 6, (2, 5))], "out": "m_axis_win",
                                  "latency_from": "s_axis_pix", "out_tlast": [2, 5], "out_tuser": [5],
                                  "scenario": "`start` of a 3 x 2 map with padding 1, its six pixels from "
                                              "the next cycle (one bubble, tlast closing each row), the "
                                              "sink ready for the first window and then not ready for two "
                                              "cycles"},
           # FPDeep nodes: the filters (and biases) are loaded while idle ("load" leading
           # entries of inputs), then start and the map.  3 x 2 map, padding 1, K = 3
           "fpdeep_fp": {"load": 1, "inputs": [("s_axis_w", 4, None), ("s_axis_pix", 12, (3, 7, 11)),
                                               ("s_axis_psum_in", 2, 1)],
                         "start": {"cfg_width": 4, "cfg_height": 3, "cfg_pad": 0, "cfg_first": 0,
                                   "cfg_last": 0, "cfg_relu": 0},
                         "out": "m_axis_psum_out", "out_beats": 2, "out_tlast": [1],
                         "latency_from": "s_axis_pix",
                         "lb_pad": lambda p, cfg: cfg["cfg_pad"],
                         "scenario": "the 4 filter beats loaded while idle, then `start` of a 4 x 3 map "
                                     "without padding as a middle node (partial sums in and out), its 12 "
                                     "pixels from the next cycle (tlast closing each row), the two partial "
                                     "sums of the previous node (one bubble), the sink ready for the first "
                                     "partial sum and then not ready for two cycles"},
           # forward padding K-1: the error map is not padded
           "fpdeep_eb": {"load": 1, "inputs": [("s_axis_w", 4, None), ("s_axis_err", 12, (3, 7, 11)),
                                               ("s_axis_psum_in", 2, 1)],
                         "start": {"cfg_width": 4, "cfg_height": 3, "cfg_pad": 2, "cfg_first": 0,
                                   "cfg_last": 0},
                         "out": "m_axis_psum_out", "out_beats": 2, "out_tlast": [1],
                         "latency_from": "s_axis_err",
                         "lb_pad": lambda p, cfg: p["K"] - 1 - cfg["cfg_pad"], "pixel": "error beat",
                         "scenario": "the 4 filter beats loaded while idle, then `start` of a 4 x 3 error "
                                     "map with forward padding 2 (the error map is not padded) as a middle "
                                     "run (partial sums in and out), its 12 beats from the next cycle "
                                     "(tlast closing each row), the two partial sums of the previous run "
                                     "(one bubble), the sink ready for the first partial sum and then not "
                                     "ready for two cycles"},
           # the node's FWD op: that of fpdeep_fp (its activations also go to the RAM region)
           "fpdeep_node": {"ctl": "fwd_", "load": 1,
                           "inputs": [("s_axis_w", 4, None), ("s_axis_pix", 12, (3, 7, 11)),
                                      ("s_axis_psum_in", 2, 1)],
                           "start": {"cfg_width": 4, "cfg_height": 3, "cfg_pad": 0, "cfg_first": 0,
                                     "cfg_last": 0, "cfg_relu": 0, "cfg_fsample": 0},
                           "out": "m_axis_psum_out", "out_beats": 2, "out_tlast": [1],
                           "latency_from": "s_axis_pix", "latency_of": "fpdeep_fp",
                           "lb_pad": lambda p, cfg: cfg["cfg_pad"],
                           "scenario": "the 4 filter beats loaded while idle, then `fwd_start` (a FWD op) "
                                       "of a 4 x 3 map without padding as a middle node into activation "
                                       "region 0, its 12 pixels from the next cycle (tlast closing each "
                                       "row), the two partial sums of the previous node (one bubble), the "
                                       "sink ready for the first partial sum and then not ready for two "
                                       "cycles; the BWD side idle"},
           "fpdeep_pg": {"load": 2, "inputs": [("s_axis_w", 2, None), ("s_axis_b", 1, None),
                                               ("s_axis_x", 6, (2, 5)), ("s_axis_err", 6, (2, 5))],
                         "start": {"cfg_width": 3, "cfg_height": 2, "cfg_pad": 1, "cfg_batch": 1,
                                   "cfg_lr": 16},
                         "out": "m_axis_w", "out_beats": 2, "out_tlast": [1],
                         "tlast_text": "marks the last filter of the step",
                         "extra_out": {"m_axis_b": 1}, "done_after": "m_axis_b", "done_gap": 2,
                         "latency_from": "s_axis_err",
                         "latency_ref": (5, "the last error beat of the mini-batch"),
                         "scenario": "the 2 filter beats and the bias beat loaded while idle, then `start` "
                                     "of a one-sample mini-batch over a 3 x 2 map with padding 1, its six "
                                     "activations and six errors from the next cycle (one bubble on the "
                                     "errors, tlast closing each row), the filter sink ready for the first "
                                     "updated filter and then not ready for two cycles, the bias sink ready"}}


def _out_beats(sc):
    return sc["out_beats"] if "out_beats" in sc else sc["out_tuser"][-1] + 1


def _line_buffer_latency(p, cfg):
    """Datasheet: the first window is handed over (K-1-P) + 3 cycles after the handshake
    of the last pixel of input row K-1-P."""
    r = p["K"] - 1 - cfg["cfg_pad"]
    return (r + 1) * cfg["cfg_width"] - 1, r + 3, f"the last pixel of input row {r}"
# AXI4-Lite cores: the register handshake (write then read back) on a read-write register
# of their SystemRDL map: (byte offset, value written)
REGISTER = {"pipearch_rm": (0x08, 0x1000), "pipearch_pu": (0x08, 0x1000),   # PROG_LO
            "cosmic_memory_schedule_unit": (0x010, 0x123),                   # MODEL_ADDR
            "maple_smart_memory": (0x04, 5),                                 # K
            "cosmic_accelerator": (0x100C, 8),                               # SAMPLES
            "pipearch_system": (0x108, 0x1000)}                              # UNIT[1].PROG_LO
# cycles to wait after reset before recording (maple_smart_memory zeroes its RAM for DEPTH
# cycles after reset and refuses configuration writes meanwhile)
SETTLE = {"maple_smart_memory": lambda p: p["DEPTH"] + 4}
AXIL = ["awvalid", "awready", "awaddr", "wvalid", "wready", "wdata", "bvalid", "bready", "bresp",
        "arvalid", "arready", "araddr", "rvalid", "rready", "rdata", "rresp"]
# (dimension, iterations) of the recorded initiation; scalar_engine has no dimension
# (the AXI4-Lite cores have no scenario of this kind)
SCENARIO = {"l2reg": (3, 1), "multiply_subtract": (3, 1), "sigmoid_delta": (3, 1),
            "dot_sigmoid": (2, 2), "scalar_engine": (None, 3)}
MAX_CYCLES = 200
PRE = 2    # recorded idle cycles before start
POST = 2   # recorded cycles after done

try:  # cocotb side (imported by the simulator); absent when pytest collects the launcher
    import cocotb
    from cocotb.clock import Clock
    from cocotb.triggers import FallingEdge, RisingEdge

    from verif.harness import CLOCK_NS, dut_params
    from verif.tb_common import sim_test
    from verif.wavetrace import to_wavedrom, transfers
    _COCOTB = True
except ImportError:  # pragma: no cover
    _COCOTB = False


def _val(sig):
    v = sig.value
    return int(v) if v.is_resolvable else None


def _ports(core, params):
    """Input streams, output streams and cfg_* fields from the core's port list."""
    from rtl_gen.registry import get
    _, ports = get(core).build(params)
    names = [pt.name for pt in ports]
    ins = [n[:-len("_tvalid")] for n in names if n.startswith("s_axis_") and n.endswith("_tvalid")]
    outs = [n[:-len("_tvalid")] for n in names if n.startswith("m_axis_") and n.endswith("_tvalid")]
    cfgs = [n for n in names if n.startswith("cfg_") and n != "cfg_err"]
    return ins, outs, cfgs


def datasheet_latency(core: str, params: dict) -> int:
    from rtl_gen.registry import get
    lat = get(core).datasheet(params).latency
    m = re.match(r"\s*(\d+) cycles? from", lat)
    assert m, f"{core}: datasheet latency {lat!r} does not start with 'N cycles from'"
    return int(m.group(1))


def _reg_relations(core, trace, start_c):
    """AXI4-Lite rules (and the value read back) asserted on a register-handshake trace."""
    s, n = trace["signals"], trace["cycles"]
    a = {k: s[f"s_axil_{k}"] for k in AXIL}
    hs = lambda v, r: [c for c in range(n) if a[v][c] == 1 and a[r][c] == 1]  # noqa: E731
    aw, w, b = hs("awvalid", "awready"), hs("wvalid", "wready"), hs("bvalid", "bready")
    ar, r = hs("arvalid", "arready"), hs("rvalid", "rready")
    for name, h in (("AW", aw), ("W", w), ("B", b), ("AR", ar), ("R", r)):
        assert len(h) == 1, f"{name}: {len(h)} handshakes, expected 1"
    aw, w, b, ar, r = aw[0], w[0], b[0], ar[0], r[0]
    rel = []
    first_b = next(c for c in range(n) if a["bvalid"][c] == 1)
    assert first_b > max(aw, w), f"bvalid in cycle {first_b} before the AW ({aw}) and W ({w}) handshakes"
    stall_b = [c for c in range(first_b, b)]
    assert stall_b and all(a["bvalid"][c] == 1 and a["bresp"][c] == a["bresp"][b] for c in stall_b), \
        "bvalid/bresp must be held until bready"
    assert a["bresp"][b] == 0, f"BRESP {a['bresp'][b]} (the datasheet promises OKAY)"
    rel.append(f"write: AW and W are accepted together {aw - start_c} cycle(s) after they are offered; "
               f"bvalid rises {first_b - max(aw, w)} cycle(s) after the AW/W handshake and is held with "
               f"BRESP OKAY until bready ({len(stall_b)} cycle(s) of backpressure)")
    first_r = next(c for c in range(n) if a["rvalid"][c] == 1)
    assert first_r > ar, f"rvalid in cycle {first_r} before the AR handshake ({ar})"
    stall_r = [c for c in range(first_r, r)]
    assert stall_r and all(a["rvalid"][c] == 1 and a["rdata"][c] == a["rdata"][r] and a["rresp"][c] == 0
                           for c in stall_r), "rvalid/rdata/rresp must be held until rready"
    off, val = REGISTER[core]
    assert a["awaddr"][aw] == off and a["araddr"][ar] == off
    assert a["rdata"][r] == a["wdata"][w] == val, f"read back {a['rdata'][r]:#x}, wrote {a['wdata'][w]:#x}"
    rel.append(f"read: arready {'in the cycle arvalid rises' if ar == next(c for c in range(n) if a['arvalid'][c]) else 'later'}; "
               f"rvalid {first_r - ar} cycle(s) after the AR handshake, RDATA (the value written, "
               f"{val:#x} at {off:#x}) and RRESP OKAY held until rready ({len(stall_r)} cycle(s) of backpressure)")
    return rel


def _stream_relations(core, trace, p):
    """Beat counts, AXI4-Stream hold on the output, tlast passed through, and the
    datasheet latency, on a streams-only trace."""
    s, n = trace["signals"], trace["cycles"]
    sc = STREAMS[core]
    out = sc["out"]
    rel = []
    for st, beats, _ in sc["inputs"]:
        assert len(transfers(trace, st)) == beats, f"{st}: {len(transfers(trace, st))} transfers, expected {beats}"
    src = sc["latency_from"]
    src_tx, tx = transfers(trace, src), transfers(trace, out)
    if "start" not in sc:
        assert len(tx) == len(src_tx), f"{out}: {len(tx)} results for {len(src_tx)} {src} beats"
    else:
        want_out = _out_beats(sc)
        assert len(tx) == want_out, f"{out}: {len(tx)} transfers, expected {want_out}"
        cs, cb, cd = (sc.get("ctl", "") + x for x in ("start", "busy", "done"))
        starts = [c for c in range(n) if s[cs][c] == 1]
        assert len(starts) == 1, f"start must be driven for exactly one cycle, was high in cycles {starts}"
        start_c = starts[0]
        for st, beats, _ in sc["inputs"][:sc.get("load", 0)]:     # loads: all in before start
            assert transfers(trace, st)[-1] < start_c, f"{st}: a load beat transferred after start"
        for st, beats, _ in sc["inputs"][sc.get("load", 0):]:     # map inputs: after start
            assert transfers(trace, st)[0] > start_c, f"{st}: a beat transferred before start"
        assert s[cb][start_c] == 0 and s[cb][start_c + 1] == 1, "busy must rise the cycle after start"
        dones = [c for c in range(n) if s[cd][c] == 1]
        assert len(dones) == 1, f"done must pulse exactly once, was high in cycles {dones}"
        last_st = sc.get("done_after", out)
        for st in sc.get("extra_out", []):
            want = sc["extra_out"][st]
            assert len(transfers(trace, st)) == want, f"{st}: {len(transfers(trace, st))} transfers, expected {want}"
            assert transfers(trace, st)[0] > tx[-1], f"{st}: a beat before the last {out} beat"
        last_tx = transfers(trace, last_st)[-1]
        gaps = (sc["done_gap"],) if "done_gap" in sc else (0, 1)
        assert dones[0] - last_tx in gaps, f"done {dones[0] - last_tx} cycles after the last {last_st} transfer"
        loads = [st for st, _, _ in sc["inputs"][:sc.get("load", 0)]]
        rel.append((f"{' and '.join(loads)} loaded while idle, before {cs}; " if loads else "")
                   + f"{cs} (with cfg_*) is sampled while {cb} is low; {cb} is high from the next cycle; "
                   + "".join(f"{st} ({sc['extra_out'][st]} beat(s)) follows the last {out} beat; "
                             for st in sc.get("extra_out", []))
                   + f"{cd} pulses for one cycle, {dones[0] - last_tx} cycle(s) after the last {last_st} transfer")
    ov, orr = s[f"{out}_tvalid"], s[f"{out}_tready"]
    stalls = [c for c in range(n - 1) if ov[c] == 1 and orr[c] == 0]
    assert len(stalls) >= 2, f"the scenario must stall {out} for 2 cycles, got {stalls}"
    fields = [f for f in ("tvalid", "tdata", "tlast", "tuser") if f"{out}_{f}" in s]
    for c in stalls:
        for f in fields:
            assert s[f"{out}_{f}"][c + 1] == s[f"{out}_{f}"][c], \
                f"{out}_{f} changed from cycle {c} to {c + 1} while tvalid && !tready"
    rel.append(f"{out}: {', '.join(fields[1:])} held while tvalid is high and tready low "
               f"(cycles {stalls[0]}-{stalls[-1]})")
    src_last = [k for k, c in enumerate(src_tx) if s[f"{src}_tlast"][c] == 1]
    out_last = [k for k, c in enumerate(tx) if s[f"{out}_tlast"][c] == 1]
    if "out_tlast" in sc:
        assert out_last == sc["out_tlast"], f"{out}_tlast on results {out_last}, expected {sc['out_tlast']}"
        if "out_tuser" in sc:
            out_user = [k for k, c in enumerate(tx) if s[f"{out}_tuser"][c] == 1]
            assert out_user == sc["out_tuser"], f"{out}_tuser on results {out_user}, expected {sc['out_tuser']}"
            rel.append(f"{out}_tlast closes each output row (beats {', '.join(map(str, out_last))}), "
                       f"{out}_tuser the map (beat {', '.join(map(str, out_user))})")
        else:
            rel.append(f"{out}_tlast {sc.get('tlast_text', 'closes each output row')} "
                       f"(beat{'s' if len(out_last) > 1 else ''} {', '.join(map(str, out_last))})")
    else:
        assert out_last == src_last, f"{out}_tlast on results {out_last}, {src}_tlast on beats {src_last}"
        rel.append(f"{out}_tlast is the tlast of the result's {src} beat (beat {', '.join(map(str, out_last))})")
    assert orr[tx[0]] == 1 and tx[0] == next(c for c in range(n) if ov[c] == 1)
    if core == "fpdeep_line_buffer":
        k, lat, what = _line_buffer_latency(p, sc["start"])
        ref = src_tx[k]
    elif "latency_ref" in sc:
        k, what = sc["latency_ref"]
        lat, ref = datasheet_latency(core, p), src_tx[k]
    elif "lb_pad" in sc:
        # the node's datasheet latency (steady state, from the pixel completing a window)
        # includes the line buffer's share; a map's first window leaves the line buffer
        # (K-1-P)+3 cycles after the last pixel of row K-1-P (fpdeep_line_buffer datasheet)
        from rtl_gen.registry import get
        of = sc.get("latency_of", core)     # the node's FWD latency is that of fpdeep_fp
        po = get(of).resolve({k: v for k, v in p.items() if k in get(of).resolve({})})
        total = datasheet_latency(of, po)
        m = re.search(r"line buffer (\d+)", get(of).datasheet(po).latency)
        assert m, f"{core}: the datasheet latency does not give the line buffer's share"
        lb_share = int(m.group(1))
        k, lb_lat, lb_what = _line_buffer_latency(p, {"cfg_width": sc["start"]["cfg_width"],
                                                      "cfg_pad": sc["lb_pad"](p, sc["start"])})
        lat, ref = lb_lat + total - lb_share, src_tx[k]
        what = (f"{lb_what.replace('pixel', sc.get('pixel', 'pixel'))} (the line buffer's first window of a "
                f"map: {lb_lat} cycles, then the "
                + (f"{of} datasheet's" if of != core else "node's")
                + f" {total} - {lb_share} cycles after the line buffer)")
    else:
        lat, ref, what = datasheet_latency(core, p), src_tx[0], f"its {src} beat"
    assert tx[0] - ref == lat, f"first {out} transfer {tx[0] - ref} cycles after {what}; the datasheet says {lat}"
    rel.append(f"latency: the first {out} beat transfers {lat} cycles after {what}"
               + ("" if "lb_pad" in sc else f" (datasheet: {lat})"))
    return rel


# pipearch_ldst: a Load of LDST_LINES lines from line LDST_ADDR (one burst) against an AXI4
# slave that takes AR at once and returns the beats from the next cycle with one bubble
LDST_ADDR, LDST_LINES = 0x40, 3
LDST_AXI = ["arvalid", "arready", "araddr", "arlen", "rvalid", "rready", "rdata", "rlast"]


def _ldst_relations(trace, p):
    """The Load protocol of pipearch_ldst's datasheet, asserted on a trace."""
    s, n = trace["signals"], trace["cycles"]
    rel = []
    starts = [c for c in range(n) if s["ld_start"][c] == 1]
    assert len(starts) == 1, f"ld_start high in cycles {starts}, expected one"
    st = starts[0]
    assert s["ld_busy"][st] == 0 and s["ld_busy"][st + 1] == 1, "ld_busy must rise the cycle after ld_start"
    assert s["ld_addr"][st] == LDST_ADDR and s["ld_lines"][st] == LDST_LINES
    arv = next(c for c in range(n) if s["m_axi_arvalid"][c] == 1)
    assert arv == st + 2, f"ARVALID rose {arv - st} cycles after ld_start; datasheet: in the cycle after the edge after the sampling edge (2)"
    ar = [c for c in range(n) if s["m_axi_arvalid"][c] == 1 and s["m_axi_arready"][c] == 1]
    assert len(ar) == 1, f"{len(ar)} AR handshakes, expected one burst"
    assert s["m_axi_araddr"][ar[0]] == LDST_ADDR * 64, f"ARADDR {s['m_axi_araddr'][ar[0]]:#x}"
    assert s["m_axi_arlen"][ar[0]] == LDST_LINES - 1, f"ARLEN {s['m_axi_arlen'][ar[0]]}"
    rel.append(f"ld_start (with ld_addr, ld_lines) is sampled while ld_busy is low; ld_busy is high from the "
               f"next cycle; ARVALID rises 2 cycles after ld_start (one cycle after the edge that samples it, "
               f"datasheet) with ARADDR = ld_addr * 64 and ARLEN = ld_lines - 1 (one burst)")
    r = [c for c in range(n) if s["m_axi_rvalid"][c] == 1 and s["m_axi_rready"][c] == 1]
    assert len(r) == LDST_LINES, f"{len(r)} R beats, expected {LDST_LINES}"
    tx = transfers(trace, "m_axis_ld")
    assert len(tx) == LDST_LINES, f"m_axis_ld: {len(tx)} lines, expected {LDST_LINES}"
    first_v = next(c for c in range(n) if s["m_axis_ld_tvalid"][c] == 1)
    assert first_v == r[0] + 3, f"m_axis_ld valid {first_v - r[0]} cycles after the first R handshake cycle; datasheet: after edge n+2 (3)"
    assert tx[0] == first_v, "the sink is ready for the first line"
    assert [s["m_axis_ld_tdata"][c] for c in tx] == [s["m_axi_rdata"][c] for c in r], "lines out of order or changed"
    last = [k for k, c in enumerate(tx) if s["m_axis_ld_tlast"][c] == 1]
    assert last == [LDST_LINES - 1], f"m_axis_ld_tlast on lines {last}"
    rel.append("a read beat accepted at edge n is valid on m_axis_ld after edge n+2 (3 cycles after its R "
               "handshake cycle, datasheet); the lines leave in order with the data read, tlast on the last")
    stalls = [c for c in range(n - 1) if s["m_axis_ld_tvalid"][c] == 1 and s["m_axis_ld_tready"][c] == 0]
    assert len(stalls) >= 2, f"the scenario must stall m_axis_ld for 2 cycles, got {stalls}"
    for c in stalls:
        for f in ("tvalid", "tdata", "tlast"):
            assert s[f"m_axis_ld_{f}"][c + 1] == s[f"m_axis_ld_{f}"][c], \
                f"m_axis_ld_{f} changed from cycle {c} to {c + 1} while tvalid && !tready"
    rel.append(f"m_axis_ld: tdata, tlast held while tvalid is high and tready low (cycles {stalls[0]}-{stalls[-1]})")
    dones = [c for c in range(n) if s["ld_done"][c] == 1]
    assert dones == [tx[-1] + 1], f"ld_done high in cycles {dones}; datasheet: the cycle after the last line's handshake ({tx[-1] + 1})"
    rel.append("ld_done pulses for one cycle, in the cycle after the last line's handshake (datasheet)")
    return rel


# cosmic_pe: a 3-instruction program loaded through the load port, then start:
# (microcode word, output port written, expected value from the inputs sampled in stage 1)
PE_PROG = [(9 | 3 << 5 | 1 << 45, "left_out", lambda i: i["left_in"]),              # pass left_in
           (1 | 3 << 5 | 7 << 8 | 4 << 45, "bus_out", lambda i: i["left_in"] + (1 << 16)),  # left_in + one
           (9 | 5 << 5 | 2 << 45, "right_out", lambda i: i["bus_in"])]               # pass bus_in
PE_LOAD_AT, PE_START_AT = 1, 5


def _pe_relations(trace, p):
    """cosmic_pe's datasheet timing, asserted on a trace."""
    s, n = trace["signals"], trace["cycles"]
    rel = []
    lds = [c for c in range(n) if s["ld_en"][c] == 1]
    starts = [c for c in range(n) if s["start"][c] == 1]
    assert len(starts) == 1, f"start high in cycles {starts}"
    st, L = starts[0], s["cfg_len"][starts[0]]
    c0 = st + 1          # the datasheet's cycle 0 begins at the edge that accepts start
    assert L == len(PE_PROG) and len(lds) == len(PE_PROG) and lds[-1] < st
    assert s["busy"][st] == 0, "start must be sampled with busy low"
    dones = [c for c in range(n) if s["done"][c] == 1]
    from golden.cosmic_pe import DONE_OFFSET as D
    assert dones == [c0 + L + D], f"done high in cycles {dones}; datasheet: cycle cfg_len+{D} = {L + D} from the start edge ({c0 + L + D})"
    assert all(s["busy"][c] == 1 for c in range(st + 1, dones[0])), "busy must be high from the start edge until done"
    assert all(s["busy"][c] == 0 for c in range(dones[0] + 1, n)), "busy must drop after done"
    rel.append(f"the {L} instructions are written through the load port while idle; start (cfg_len {L}) is "
               f"sampled while busy is low; busy is high from the start edge until done, which is high in "
               f"cycle cfg_len+{D} = {L + D} counting the cycle that edge begins as cycle 0 (datasheet)")
    for k, (_, port, fn) in enumerate(PE_PROG):
        s1 = c0 + k + 4                       # execute cycle k+4 of instruction k (datasheet): link/bus inputs read
        vs = [c for c in range(n) if s[f"{port}_valid"][c] == 1]
        assert vs == [c0 + k + 5], f"{port}_valid high in cycles {vs}; datasheet: instruction {k}'s outputs in cycle {k + 5} ({c0 + k + 5})"
        want = fn({"left_in": s["left_in"][s1], "bus_in": s["bus_in"][s1]})
        assert s[port][vs[0]] == want, f"{port} {s[port][vs[0]]:#x}, expected {want:#x} from the inputs of cycle {s1}"
    rel.append("instruction k is in stage 1 in cycle k+1 after the start edge, reads its link/bus inputs in "
               "its execute cycle k+4, and its outputs are valid in cycle k+4+L for one cycle, L = 1 for pass and "
               "add (datasheet): left_out (pass "
               "left_in) in cycle 5, bus_out (left_in + 1.0) in cycle 6, right_out (pass bus_in) in cycle 7")
    assert all(s["err"][c] == 0 for c in range(n)), "err set"
    return rel


# pipearch_region: WriteRegion 0 writes REG_LINES lines at line REG_OFFSET (BRAM mode, one
# iteration), then ReadRegion 0 reads them back with the same access word
REG_LINES, REG_OFFSET = 3, 8
REG_ACCESS = 1 << 31 | REG_LINES << 16 | REG_OFFSET


def _region_relations(trace, p):
    """pipearch_region's datasheet timing and control, asserted on a trace."""
    s, n = trace["signals"], trace["cycles"]
    rel = []
    one = lambda nm: [c for c in range(n) if s[nm][c] == 1]  # noqa: E731
    ws, rs, wd, rd = one("wr0_start"), one("rd0_start"), one("wr0_done"), one("rd0_done")
    assert len(ws) == 1 and len(rs) == 1, f"wr0_start in {ws}, rd0_start in {rs}"
    ws, rs = ws[0], rs[0]
    for ch, st in (("wr0", ws), ("rd0", rs)):
        assert s[f"{ch}_busy"][st] == 0 and s[f"{ch}_busy"][st + 1] == 1, f"{ch}_busy must rise the cycle after {ch}_start"
        assert s[f"{ch}_access"][st] == REG_ACCESS and s[f"{ch}_iters"][st] == 1
    wtx, rtx = transfers(trace, "s_axis_wr0"), transfers(trace, "m_axis_rd0")
    assert len(wtx) == REG_LINES and len(rtx) == REG_LINES, f"{len(wtx)} lines written, {len(rtx)} read"
    assert wtx[0] == ws + 1, f"first line taken {wtx[0] - ws} cycle(s) after wr0_start; datasheet: 1"
    assert wd == [wtx[-1] + 1], f"wr0_done high in cycles {wd}; datasheet: the cycle after the last line is taken ({wtx[-1] + 1})"
    assert rs > wd[0], "the read must start after the write's done"
    rel.append(f"WriteRegion 0 (BRAM mode, {REG_LINES} lines at line {REG_OFFSET}): wr0_start with the access word "
               f"and iterations is sampled while wr0_busy is low, wr0_busy is high from the next cycle, the first "
               f"line is taken 1 cycle after wr0_start and wr0_done pulses in the cycle after the last line is "
               f"taken (datasheet)")
    first_v = next(c for c in range(n) if s["m_axis_rd0_tvalid"][c] == 1)
    assert first_v == rs + 3, f"first read line valid {first_v - rs} cycles after rd0_start; datasheet: 3"
    assert [s["m_axis_rd0_tdata"][c] for c in rtx] == [s["s_axis_wr0_tdata"][c] for c in wtx], "lines read back differ"
    last = [k for k, c in enumerate(rtx) if s["m_axis_rd0_tlast"][c] == 1]
    assert last == [REG_LINES - 1], f"m_axis_rd0_tlast on lines {last}, expected the last of the iteration"
    stalls = [c for c in range(n - 1) if s["m_axis_rd0_tvalid"][c] == 1 and s["m_axis_rd0_tready"][c] == 0]
    assert len(stalls) >= 2, f"the scenario must stall m_axis_rd0 for 2 cycles, got {stalls}"
    for c in stalls:
        for f in ("tvalid", "tdata", "tlast"):
            assert s[f"m_axis_rd0_{f}"][c + 1] == s[f"m_axis_rd0_{f}"][c], \
                f"m_axis_rd0_{f} changed from cycle {c} to {c + 1} while tvalid && !tready"
    assert rd == [rtx[-1] + 1], f"rd0_done high in cycles {rd}; datasheet: the cycle after the last line is accepted ({rtx[-1] + 1})"
    rel.append("ReadRegion 0 with the same access word after wr0_done: the first line is valid 3 cycles after "
               "rd0_start (datasheet: decode, RAM read, output buffer), the lines written come back in order "
               f"with tlast on the last line of the iteration, held while tready is low (cycles {stalls[0]}-"
               f"{stalls[-1]}), and rd0_done pulses in the cycle after the last line is accepted (datasheet)")
    return rel


# pipearch_engine: LOAD (opcode 0x10, sub_start bit 0) of ENG_LINES lines into region 0,
# then STORE (0x11, bit 1) of the same lines; w6 is the line address of each
ENG_LINES, ENG_ACCESS, ENG_LD_ADDR, ENG_ST_ADDR = 3, 1 << 31 | 3 << 16 | 8, 0x40, 0x80


def _engine_relations(trace, p):
    """pipearch_engine's issue/busy protocol and its LOAD/STORE sides, asserted on a trace."""
    s, n = trace["signals"], trace["cycles"]
    rel = []
    one = lambda nm: [c for c in range(n) if s[nm][c] == 1]  # noqa: E731
    for b, op, go, lines, addr, w6, st in ((0, "LOAD", "ld_go", "ld_lines", "ld_addr", ENG_LD_ADDR, "s_axis_ld"),
                                          (1, "STORE", "st_go", "st_lines", "st_addr", ENG_ST_ADDR, "m_axis_st")):
        starts = one(f"sub_start[{b}]")
        assert len(starts) == 1, f"sub_start[{b}] high in cycles {starts}"
        c0 = starts[0]
        busy = s[f"sub_busy[{b}]"]
        assert busy[c0] == 0 and busy[c0 + 1] == 1, f"sub_busy[{b}] must rise the cycle after sub_start[{b}] (datasheet)"
        assert s["sub_w6"][c0] == w6 and s["sub_acc0"][c0] == ENG_ACCESS and s["sub_iters"][c0] == 1
        assert one(go) == [c0 + 1], f"{go} high in cycles {one(go)}; datasheet: the cycle after the {op} was accepted ({c0 + 1})"
        fall = next((c for c in range(c0 + 1, n) if busy[c] == 0), None)
        assert fall is not None, f"sub_busy[{b}] never falls"
        assert all(s[lines][c] == ENG_LINES and s[addr][c] == w6 for c in range(c0 + 1, fall)), \
            f"{lines}/{addr} must be length*iterations = {ENG_LINES} and w6 = {w6:#x}, held from {go}"
        tx = transfers(trace, st)
        assert len(tx) == ENG_LINES and tx[-1] < fall, f"{st}: {len(tx)} lines, last before sub_busy[{b}] falls ({fall})"
        rel.append(f"{op} (sub_start bit {b}, w6 = line address {w6:#x}): sub_busy[{b}] is high from the cycle after "
                   f"the issue (datasheet); {go} pulses in that cycle with {lines} = length x iterations = "
                   f"{ENG_LINES} and {addr} = w6 held from it; sub_busy[{b}] falls (done) after the last "
                   f"{st} line, {fall - tx[-1]} cycle(s) later")
        if b == 1:
            assert c0 > fall_ld, "the STORE is issued after the LOAD's sub_busy fell"
        fall_ld = fall
    ltx, stx = transfers(trace, "s_axis_ld"), transfers(trace, "m_axis_st")
    assert [s["m_axis_st_tdata"][c] for c in stx] == [s["s_axis_ld_tdata"][c] for c in ltx], "the stored lines differ from the loaded ones"
    last = [k for k, c in enumerate(stx) if s["m_axis_st_tlast"][c] == 1]
    assert last == [ENG_LINES - 1], f"m_axis_st_tlast on lines {last}"
    stalls = [c for c in range(n - 1) if s["m_axis_st_tvalid"][c] == 1 and s["m_axis_st_tready"][c] == 0]
    assert len(stalls) >= 2, f"the scenario must stall m_axis_st for 2 cycles, got {stalls}"
    for c in stalls:
        for f in ("tvalid", "tdata", "tlast"):
            assert s[f"m_axis_st_{f}"][c + 1] == s[f"m_axis_st_{f}"][c], \
                f"m_axis_st_{f} changed from cycle {c} to {c + 1} while tvalid && !tready"
    rel.append(f"m_axis_st: the loaded lines in order, tlast on the last line of the iteration, tdata and "
               f"tlast held while tvalid is high and tready low (cycles {stalls[0]}-{stalls[-1]})")
    return rel


# maple_pe_chain: one array through the command stream (read-modify-write reduction):
# a = 2.0 into the input local store, b = 3.0 into every PE's local store, one MAC step
# whose M results (S = 1) add into smart-memory entries 0..M-1, then a dump of those entries
MPC_A, MPC_B = 2 << 16, 3 << 16


def _mpc_cmds(p):
    m = p["M"]
    # SET_SM_REDUCTION writes K too: k = 1 (0 is refused by the smart memory)
    return [(0x2 << 28 | 1 << 8 | 2, "SET_SM_REDUCTION rmw"), (0x3 << 28 | 1, "SM_CTRL START"),
            (0x9 << 28 | 1, "WRITE_A 1"), (MPC_A, "a=2.0"), (0xA << 28 | 255 << 16 | 1, "WRITE_B 1 all"),
            (MPC_B, "b=3.0"), (0xB << 28 | 1 << 16 | 1, "MULT_ACC_DUMP 1 last"),
            (0x4 << 28 | m, f"DUMP_SM {m}")]


def _mpc_relations(trace, p):
    """maple_pe_chain's command and dump streams, asserted on a trace."""
    s, n = trace["signals"], trace["cycles"]
    cmds, m, f = _mpc_cmds(p), p["M"], p["F"]
    rel = []
    ctx = transfers(trace, "s_axis_cmd")
    assert [s["s_axis_cmd_tdata"][c] for c in ctx] == [w for w, _ in cmds], "command words taken out of order or repeated"
    for c in range(n - 1):   # an offered word is held until taken
        if s["s_axis_cmd_tvalid"][c] == 1 and s["s_axis_cmd_tready"][c] == 0:
            assert s["s_axis_cmd_tvalid"][c + 1] == 1 and s["s_axis_cmd_tdata"][c + 1] == s["s_axis_cmd_tdata"][c]
    rel.append(f"the {len(cmds)} command words (instructions and the data words after WRITE_A/WRITE_B) are each "
               "taken once, in order, on s_axis_cmd")
    tx = transfers(trace, "m_axis_out")
    assert len(tx) == m, f"m_axis_out: {len(tx)} beats, expected the {m} dumped entries"
    assert tx[0] > ctx[-1], "the dump starts after DUMP_SM is taken"
    from golden.maple_mapping import ChainParams, run_program
    gold = run_program(ChainParams.from_params(p), [w for w, _ in cmds])   # [(index, value, last)]
    want = (MPC_A * MPC_B) >> f
    assert [(i, v) for i, v, _ in gold] == [(r, want) for r in range(m)], gold   # the scenario as intended
    got = [(s["m_axis_out_tdata"][c] >> 32, s["m_axis_out_tdata"][c] & 0xFFFFFFFF) for c in tx]
    assert got == [(r, want) for r in range(m)], f"dump {got}, expected (index r, a*b = {want:#x}) for r < {m}"
    last = [k for k, c in enumerate(tx) if s["m_axis_out_tlast"][c] == 1]
    assert last == [m - 1], f"m_axis_out_tlast on beats {last}"
    stalls = [c for c in range(n - 1) if s["m_axis_out_tvalid"][c] == 1 and s["m_axis_out_tready"][c] == 0]
    assert len(stalls) >= 2, f"the scenario must stall m_axis_out for 2 cycles, got {stalls}"
    for c in stalls:
        for fl in ("tvalid", "tdata", "tlast"):
            assert s[f"m_axis_out_{fl}"][c + 1] == s[f"m_axis_out_{fl}"][c], \
                f"m_axis_out_{fl} changed from cycle {c} to {c + 1} while tvalid && !tready"
    assert all(v == 0 for v in s["err"]), "err set"
    rel.append(f"m_axis_out dumps entries 0..{m - 1} as {{index, value}} with value a*b = {want:#x} (each PE's one "
               f"product, added into a cleared entry), tlast on the last beat, held while tvalid is high and "
               f"tready low (cycles {stalls[0]}-{stalls[-1]}); the dump starts {tx[0] - ctx[-1]} cycles after "
               "DUMP_SM is taken; err stays low")
    return rel


def _relations(core, trace, ins, out, dim, iters, p, start_c):
    """Assert the datasheet's protocol relations on ``trace``; return them as text."""
    s, n = trace["signals"], trace["cycles"]
    rel = []
    busy, done = s["busy"], s["done"]
    assert busy[start_c] == 0, "start must be sampled with busy low"
    assert busy[start_c + 1] == 1, "busy must be high in the cycle after start"
    dones = [c for c in range(n) if done[c] == 1]
    assert len(dones) == 1, f"done must pulse exactly once, was high in cycles {dones}"
    d = dones[0]
    assert all(busy[c] == 1 for c in range(start_c + 1, d)), "busy must stay high until done"
    fall = next(c for c in range(start_c + 1, n) if busy[c] == 0)
    rel.append(f"start (with cfg_*) is sampled while busy is low; busy is high from the next cycle "
               f"until done, and low from {'the done cycle' if fall == d else f'{fall - d} cycle(s) after done'}")
    line_w = p.get("LANES", 0) * p["W"]
    beats = {}
    for st in ins + [out]:
        w = trace["widths"][f"{st}_tdata"]
        per_iter = dim if (w == line_w and dim) else 1
        beats[st] = (per_iter * iters, per_iter)
        got = len(transfers(trace, st))
        assert got == per_iter * iters, f"{st}: {got} transfers, expected {per_iter * iters}"
    # AXI4-Stream hold on the output under backpressure
    ov, orr = s[f"{out}_tvalid"], s[f"{out}_tready"]
    stalls = [c for c in range(n - 1) if ov[c] == 1 and orr[c] == 0]
    assert len(stalls) >= 2, f"the scenario must stall {out} (valid, not ready) for 2 cycles, got {stalls}"
    for c in stalls:
        for f in ("tvalid", "tdata", "tlast"):
            assert s[f"{out}_{f}"][c + 1] == s[f"{out}_{f}"][c], \
                f"{out}_{f} changed from cycle {c} to {c + 1} while tvalid && !tready"
    rel.append(f"{out}: tdata and tlast are held while tvalid is high and tready low "
               f"(cycles {stalls[0]}-{stalls[-1]})")
    # tlast
    tx = transfers(trace, out)
    total, per_iter = beats[out]
    lasts = [k for k, c in enumerate(tx) if s[f"{out}_tlast"][c] == 1]
    # line outputs: the last line of each iteration; one result per iteration: the last result
    want = [k for k in range(total) if (k + 1) % per_iter == 0] if per_iter > 1 else [total - 1]
    assert lasts == want, f"{out}_tlast on beats {lasts}, expected {want}"
    rel.append(f"{out}_tlast marks the {'last line of each iteration' if per_iter > 1 else 'result of the last iteration'} "
               f"({total} beats, tlast on beat {', '.join(str(k) for k in lasts)})")
    # latency (datasheet) on an idle sink: first output beat
    lat = datasheet_latency(core, p)
    lines = [st for st in ins if trace["widths"][f"{st}_tdata"] == line_w] or ins
    if core == "dot_sigmoid":   # from the last input line of iteration 0
        ref = max(transfers(trace, st)[beats[st][1] - 1] for st in lines)
        what = "the last input line of the first iteration"
    else:                        # from the first input beat (every line input's beat 0)
        ref = max(transfers(trace, st)[0] for st in lines)
        what = "the first input " + ("line" if lines != ins or line_w in [trace["widths"][f"{st}_tdata"] for st in ins] else "beat")
    assert orr[tx[0]] == 1 and tx[0] == next(c for c in range(n) if ov[c] == 1), "first output must meet a ready sink"
    assert tx[0] - ref == lat, (f"first {out} transfer {tx[0] - ref} cycles after {what}; "
                                f"the datasheet says {lat}")
    rel.append(f"latency: the first {out} beat transfers {lat} cycles after {what} (datasheet: {lat})")
    assert d - tx[-1] in (0, 1), f"done {d - tx[-1]} cycles after the last {out} transfer"
    rel.append(f"done pulses for one cycle, {d - tx[-1]} cycle(s) after the last {out} transfer")
    return rel


if _COCOTB:
    @sim_test(timeout_us=20)
    async def capture(dut):
        """Drive the documented sequence, record it, assert the relations, write JSON."""
        core = os.environ["TIMING_CORE"]
        p = dut_params()
        if core in ("pipearch_ldst", "cosmic_pe", "pipearch_region", "pipearch_engine", "maple_pe_chain"):
            doc = await {"pipearch_ldst": capture_ldst, "cosmic_pe": capture_pe,
                         "pipearch_region": capture_region, "pipearch_engine": capture_engine,
                         "maple_pe_chain": capture_mpc}[core](dut, core, p)
            Path(os.environ["TIMING_OUT"]).write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
            return
        if core in REGISTER or core in STREAMS:
            doc = await (capture_registers if core in REGISTER else capture_streams)(dut, core, p)
            Path(os.environ["TIMING_OUT"]).write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
            return
        dim, iters = SCENARIO[core]
        ins, outs, cfgs = _ports(core, p)
        assert len(outs) == 1, outs
        out = outs[0]
        cocotb.start_soon(Clock(dut.clk, CLOCK_NS, unit="ns").start())
        line_w = p.get("LANES", 0) * p["W"]
        rec = ["start", "busy", "done"] + cfgs
        for st in ins + [out]:
            rec += [f"{st}_tvalid", f"{st}_tready", f"{st}_tdata"] + ([f"{st}_tlast"] if st == out else [])
        widths = {n: len(getattr(dut, n).value) for n in rec}
        # idle inputs, reset
        dut.start.value = 0
        for c in cfgs:
            getattr(dut, c).value = 0
        for st in ins:
            getattr(dut, f"{st}_tvalid").value = 0
            getattr(dut, f"{st}_tdata").value = 0
        getattr(dut, f"{out}_tready").value = 1
        dut.rst.value = 1
        for _ in range(3):
            await RisingEdge(dut.clk)
        dut.rst.value = 0
        # stimulus: beat k of input stream st carries value k+1 in every lane (distinct, small)
        need = {st: (dim if widths[f"{st}_tdata"] == line_w and dim else 1) * iters for st in ins}
        sent = {st: 0 for st in ins}
        bubble = {ins[0]: 1}            # stream -> beat delayed by one cycle
        bubbled = set()
        cfg_vals = {"cfg_dimension": dim, "cfg_iterations": iters, "cfg_alpha": 1 << p["F"],
                    "cfg_reg": 1 << max(p["F"] - 4, 0)}
        sig = {n: [] for n in rec}
        stall_left, seen_out = 2, 0
        start_c = PRE
        done_c = None
        c = 0
        drive = {}
        while True:
            await RisingEdge(dut.clk)
            for k, v in drive.items():
                getattr(dut, k).value = v
            await FallingEdge(dut.clk)
            for n in rec:
                sig[n].append(_val(getattr(dut, n)))
            # handshakes of this cycle (they happen at the next rising edge)
            for st in ins:
                if sig[f"{st}_tvalid"][c] == 1 and sig[f"{st}_tready"][c] == 1:
                    sent[st] += 1
            ov, orr = sig[f"{out}_tvalid"][c], sig[f"{out}_tready"][c]
            if ov == 1 and orr == 1:
                seen_out += 1
            elif ov == 1 and orr == 0:
                stall_left -= 1
            if sig["done"][c] == 1 and done_c is None:
                done_c = c
            if done_c is not None and c >= done_c + POST:
                break
            assert c < MAX_CYCLES, f"{core}: no done within {MAX_CYCLES} cycles"
            # drives of the next cycle
            nxt = c + 1
            drive = {"start": int(nxt == start_c)}
            for cf in cfgs:
                drive[cf] = cfg_vals.get(cf, 0) if nxt == start_c else 0
            for st in ins:
                k = sent[st]
                present = nxt > start_c and k < need[st]
                if present and bubble.get(st) == k and st not in bubbled:
                    bubbled.add(st)
                    present = False
                drive[f"{st}_tvalid"] = int(present)
                w = widths[f"{st}_tdata"]
                word = (k + 1) & ((1 << p["W"]) - 1)
                drive[f"{st}_tdata"] = sum(word << (i * p["W"]) for i in range(w // p["W"])) if present else 0
            # sink: ready for the first beat, then not ready until it has refused 2 valid beats
            drive[f"{out}_tready"] = int(not (seen_out >= 1 and stall_left > 0))
            c += 1
        trace = {"cycles": c + 1, "signals": sig, "widths": widths}
        rel = _relations(core, trace, ins, out, dim, iters, p, start_c)

        def beat_labels(st, short):
            tx = transfers(trace, st)

            def lab(cyc, v):
                if sig[f"{st}_tvalid"][cyc] != 1:
                    return None
                k = sum(1 for t in tx if t < cyc)
                return f"{short}{k}"
            return lab

        def cfg_label(name):
            return lambda cyc, v: str(v) if sig["start"][cyc] == 1 else None
        labels = {f"{st}_tdata": beat_labels(st, st.split("_", 2)[2]) for st in ins + [out]}
        labels.update({cf: cfg_label(cf) for cf in cfgs if widths[cf] > 1})
        rows = ["start"] + [cf for cf in cfgs if cf in ("cfg_dimension", "cfg_iterations")] + ["busy", "done", None]
        for st in ins:
            rows += [f"{st}_tvalid", f"{st}_tready", f"{st}_tdata", None]
        rows += [f"{out}_tvalid", f"{out}_tready", f"{out}_tdata", f"{out}_tlast"]
        shape = (f"dimension {dim}, " if dim else "") + f"iterations {iters}"
        wd = to_wavedrom(trace, rows, labels,
                         head=f"{core}: start/busy/done and AXI4-Stream with backpressure ({shape})",
                         foot="recorded from the RTL (verif/protocol_timing)")
        doc = {"core": core, "config": os.environ.get("DUT_CFG", ""), "params": p, "wavedrom": wd,
               "relations": rel, "start_cycle": start_c,
               "scenario": "`start` with its fields, the inputs presented from the next cycle with one "
                           "bubble, the sink ready for the first result and then not ready for two cycles",
               "widths": {n: w for n, w in widths.items() if n.endswith("_tdata")}}
        Path(os.environ["TIMING_OUT"]).write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")

    async def capture_registers(dut, core, p):
        """Write REGISTER[core] then read it back, bready and rready low for the first
        cycle their valid is up."""
        from rtl_gen.registry import get
        _, ports = get(core).build(p)
        cocotb.start_soon(Clock(dut.clk, CLOCK_NS, unit="ns").start())
        for pt in ports:   # every input idle (AXI4 master side, streams, start)
            if pt.direction == "in" and pt.name not in ("clk",):
                getattr(dut, pt.name).value = 0
        rec = [f"s_axil_{k}" for k in AXIL]
        sig = {n: [] for n in rec}
        off, val = REGISTER[core]
        dut.rst.value = 1
        for _ in range(3):
            await RisingEdge(dut.clk)
        dut.rst.value = 0
        for _ in range(SETTLE[core](p) if core in SETTLE else 0):
            await RisingEdge(dut.clk)
        start_c, c, drive = PRE, 0, {}
        phase, b_held, r_held, end_c = "idle", False, False, None
        aw_done = w_done = False
        while True:
            await RisingEdge(dut.clk)
            for k, v in drive.items():
                getattr(dut, f"s_axil_{k}").value = v
            await FallingEdge(dut.clk)
            for n in rec:
                sig[n].append(_val(getattr(dut, n)))
            g = {k: sig[f"s_axil_{k}"][c] for k in AXIL}
            drive = {}
            if phase == "idle" and c + 1 == start_c:
                phase = "write"
                drive.update(awvalid=1, awaddr=off, wvalid=1, wdata=val, wstrb=0xF)
            elif phase == "write":
                aw_done = aw_done or (g["awvalid"] == 1 and g["awready"] == 1)
                w_done = w_done or (g["wvalid"] == 1 and g["wready"] == 1)
                if aw_done:
                    drive.update(awvalid=0, awaddr=0)
                if w_done:
                    drive.update(wvalid=0, wdata=0, wstrb=0)
                if g["bvalid"] and g["bready"]:
                    phase = "gap"
                    drive.update(bready=0)
                elif g["bvalid"]:
                    drive.update(bready=1 if b_held else 0)
                    b_held = True
            elif phase == "gap":
                phase = "read"
                drive.update(arvalid=1, araddr=off)
            elif phase == "read":
                if g["arvalid"] and g["arready"]:
                    drive.update(arvalid=0, araddr=0)
                if g["rvalid"] and g["rready"]:
                    phase, end_c = "end", c
                    drive.update(rready=0)
                elif g["rvalid"]:
                    drive.update(rready=1 if r_held else 0)
                    r_held = True
            if end_c is not None and c >= end_c + POST:
                break
            assert c < MAX_CYCLES, f"{core}: register handshake not finished within {MAX_CYCLES} cycles"
            c += 1
        trace = {"cycles": c + 1, "signals": sig}
        rel = _reg_relations(core, trace, start_c)

        def vlab(name, valid):
            return lambda cyc, v: (f"{v:#x}" if sig[f"s_axil_{valid}"][cyc] == 1 else None)
        labels = {"s_axil_awaddr": vlab("awaddr", "awvalid"), "s_axil_wdata": vlab("wdata", "wvalid"),
                  "s_axil_bresp": lambda cyc, v: ("OKAY" if v == 0 else str(v)) if sig["s_axil_bvalid"][cyc] == 1 else None,
                  "s_axil_araddr": vlab("araddr", "arvalid"), "s_axil_rdata": vlab("rdata", "rvalid"),
                  "s_axil_rresp": lambda cyc, v: ("OKAY" if v == 0 else str(v)) if sig["s_axil_rvalid"][cyc] == 1 else None}
        rows = [f"s_axil_{k}" for k in ("awvalid", "awready", "awaddr", "wvalid", "wready", "wdata")] + [None] \
            + [f"s_axil_{k}" for k in ("bvalid", "bready", "bresp")] + [None] \
            + [f"s_axil_{k}" for k in ("arvalid", "arready", "araddr", "rvalid", "rready", "rdata", "rresp")]
        wd = to_wavedrom(trace, rows, labels,
                         head=f"{core}: AXI4-Lite register write and read back ({off:#x})",
                         foot="recorded from the RTL (verif/protocol_timing)")
        settle = (f"; recorded from {SETTLE[core](p)} cycles after reset, once the RAM is cleared"
                  if core in SETTLE else "")
        return {"core": core, "config": os.environ.get("DUT_CFG", ""), "params": p, "wavedrom": wd,
                "relations": rel, "start_cycle": start_c, "widths": {},
                "scenario": "a register write (AW and W offered together) and its read-back, with "
                            f"bready and rready low for the first two cycles their valid is up{settle}"}

    async def capture_streams(dut, core, p):
        sc = STREAMS[core]
        out = sc["out"]
        cocotb.start_soon(Clock(dut.clk, CLOCK_NS, unit="ns").start())
        ins = [st for st, _, _ in sc["inputs"]]
        cs, cb, cd = (sc.get("ctl", "") + x for x in ("start", "busy", "done"))
        ctl = ([cs] + list(sc["start"]) + [cb, cd]) if "start" in sc else []
        rec = list(ctl)
        outs = [out] + list(sc.get("extra_out", []))
        for st in ins + outs:
            rec += [f"{st}_{f}" for f in ("tvalid", "tready", "tdata", "tlast", "tuser") if hasattr(dut, f"{st}_{f}")]
        widths = {nm: len(getattr(dut, nm).value) for nm in rec}
        if "load" in sc or "extra_out" in sc:   # ports not in the scenario: idle, sinks ready
            from rtl_gen.registry import get
            for pt in get(core).build(p)[1]:
                if pt.direction == "in" and pt.name not in rec and pt.name not in ("clk", "rst"):
                    getattr(dut, pt.name).value = int(pt.name.startswith("m_axis_") and pt.name.endswith("_tready"))
        for nm in rec:
            if nm in (cb, cd):
                continue
            if not any(nm.startswith(o) for o in outs) or nm.endswith("tready"):
                getattr(dut, nm).value = 1 if nm in [f"{o}_tready" for o in outs] else 0
        dut.rst.value = 1
        for _ in range(3):
            await RisingEdge(dut.clk)
        dut.rst.value = 0
        sent = {st: 0 for st in ins}
        first_tx = {}
        bubbled = False
        sig = {nm: [] for nm in rec}
        stall_left, seen_out, c, drive, end_c = 2, 0, 0, {}, None
        total_out = (_out_beats(sc) if "start" in sc
                     else next(b for st, b, _ in sc["inputs"] if st == sc["latency_from"]))
        nload = sc.get("load", 0)
        start_at = PRE if not nload else None   # with loads: the cycle after the last load beat
        while True:
            await RisingEdge(dut.clk)
            for k, v in drive.items():
                getattr(dut, k).value = v
            await FallingEdge(dut.clk)
            for nm in rec:
                sig[nm].append(_val(getattr(dut, nm)))
            for st in ins:
                if sig[f"{st}_tvalid"][c] == 1 and sig[f"{st}_tready"][c] == 1:
                    sent[st] += 1
                    first_tx.setdefault(st, c)
            ov, orr = sig[f"{out}_tvalid"][c], sig[f"{out}_tready"][c]
            if ov == 1 and orr == 1:
                seen_out += 1
                if seen_out == total_out and "done_after" not in sc:
                    end_c = c
            elif ov == 1 and orr == 0:
                stall_left -= 1
            if "done_after" in sc and sig[cd][c] == 1:
                end_c = c
            if end_c is not None and c >= end_c + POST:
                break
            assert c < MAX_CYCLES, f"{core}: not finished within {MAX_CYCLES} cycles"
            nxt, drive = c + 1, {}
            if start_at is None and all(sent[st] == b for st, b, _ in sc["inputs"][:nload]):
                start_at = nxt
            first_in = PRE + (1 if ctl else 0)
            if ctl:
                drive[cs] = int(nxt == start_at)
                for cf, v in sc["start"].items():
                    drive[cf] = v if nxt == start_at else 0
            for i, (st, beats, last) in enumerate(sc["inputs"]):
                k = sent[st]
                prev = ins[i - 1] if i and i != nload else None
                after = ((PRE if i < nload else (None if start_at is None else start_at + 1))
                         if nload else first_in)
                present = (after is not None and nxt >= after and k < beats
                           and (prev is None or prev in first_tx))
                if present and st == ins[-1] and k == 1 and not bubbled:
                    bubbled, present = True, False
                drive[f"{st}_tvalid"] = int(present)
                w = widths[f"{st}_tdata"]
                word = (k + 1) & ((1 << p["W"]) - 1)
                drive[f"{st}_tdata"] = sum(word << (j * p["W"]) for j in range(w // p["W"])) if present else 0
                if f"{st}_tlast" in widths:
                    drive[f"{st}_tlast"] = int(present and (k in last if isinstance(last, tuple) else last == k))
            drive[f"{out}_tready"] = int(not (seen_out >= 1 and stall_left > 0))
            c += 1
        trace = {"cycles": c + 1, "signals": sig, "widths": widths}
        rel = _stream_relations(core, trace, p)

        def beat_labels(st, short):
            tx = transfers(trace, st)
            return lambda cyc, v: (f"{short}{sum(1 for t in tx if t < cyc)}" if sig[f"{st}_tvalid"][cyc] == 1 else None)
        labels = {f"{st}_tdata": beat_labels(st, st.split("_", 2)[2]) for st in ins + outs}
        labels.update({cf: (lambda cyc, v: str(v) if sig[cs][cyc] == 1 else None)
                       for cf in sc.get("start", {}) if widths[cf] > 1 or not nload})
        rows = (ctl + [None]) if ctl else []
        for st in ins + outs:
            rows += [nm for nm in rec if nm.startswith(st + "_")] + [None]
        wd = to_wavedrom(trace, rows[:-1], labels,
                         head=f"{core}: " + ("start/busy/done and " if ctl else "")
                         + "AXI4-Stream in and out with backpressure",
                         foot="recorded from the RTL (verif/protocol_timing)")
        return {"core": core, "config": os.environ.get("DUT_CFG", ""), "params": p, "wavedrom": wd,
                "relations": rel, "start_cycle": start_at,
                "widths": {nm: w for nm, w in widths.items() if nm.endswith("_tdata")},
                "scenario": sc["scenario"]}

    async def capture_ldst(dut, core, p):
        """Load LDST_LINES lines; the AXI slave takes AR at once and returns the beats from
        the next cycle with one bubble; the sink is ready for the first line, then not for two."""
        from rtl_gen.registry import get
        _, ports = get(core).build(p)
        cocotb.start_soon(Clock(dut.clk, CLOCK_NS, unit="ns").start())
        for pt in ports:   # every input idle; store side and write channels unused
            if pt.direction == "in" and pt.name != "clk":
                getattr(dut, pt.name).value = 0
        dut.m_axis_ld_tready.value = 1
        dut.m_axi_arready.value = 1
        rec = ["ld_start", "ld_addr", "ld_lines", "ld_busy", "ld_done"] + [f"m_axi_{k}" for k in LDST_AXI] \
            + [f"m_axis_ld_{k}" for k in ("tvalid", "tready", "tdata", "tlast")]
        sig = {nm: [] for nm in rec}
        dut.rst.value = 1
        for _ in range(3):
            await RisingEdge(dut.clk)
        dut.rst.value = 0
        c, drive, burst, sent, bubbled, seen, stall_left, end_c = 0, {}, None, 0, False, 0, 2, None
        while True:
            await RisingEdge(dut.clk)
            for k, v in drive.items():
                getattr(dut, k).value = v
            await FallingEdge(dut.clk)
            for nm in rec:
                sig[nm].append(_val(getattr(dut, nm)))
            g = {nm: sig[nm][c] for nm in rec}
            drive = {"ld_start": int(c + 1 == PRE), "ld_addr": LDST_ADDR if c + 1 == PRE else 0,
                     "ld_lines": LDST_LINES if c + 1 == PRE else 0}
            if g["m_axi_arvalid"] == 1 and g["m_axi_arready"] == 1:
                assert burst is None, "one burst expected"
                burst = g["m_axi_arlen"] + 1
            if g["m_axi_rvalid"] == 1 and g["m_axi_rready"] == 1:
                sent += 1
            if g["m_axis_ld_tvalid"] == 1 and g["m_axis_ld_tready"] == 1:
                seen += 1
                if seen == LDST_LINES:
                    end_c = c
            elif g["m_axis_ld_tvalid"] == 1:
                stall_left -= 1
            present = burst is not None and sent < burst
            if present and sent == 1 and not bubbled:
                bubbled, present = True, False
            word = sent + 1
            drive.update(m_axi_rvalid=int(present), m_axi_rlast=int(present and sent == burst - 1),
                         m_axi_rdata=sum(word << (32 * i) for i in range(p["LANES"])) if present else 0,
                         m_axis_ld_tready=int(not (seen >= 1 and stall_left > 0)))
            if end_c is not None and c >= end_c + POST:
                break
            assert c < MAX_CYCLES, f"{core}: load not finished within {MAX_CYCLES} cycles"
            c += 1
        trace = {"cycles": c + 1, "signals": sig}
        rel = _ldst_relations(trace, p)

        def beats(valid, short):
            return lambda cyc, v: (f"{short}{sum(1 for t in range(cyc) if sig[valid][t] == 1 and sig[valid.replace('valid', 'ready')][t] == 1)}"
                                   if sig[valid][cyc] == 1 else None)
        labels = {"ld_addr": lambda cyc, v: f"{v:#x}" if sig["ld_start"][cyc] == 1 else None,
                  "ld_lines": lambda cyc, v: str(v) if sig["ld_start"][cyc] == 1 else None,
                  "m_axi_araddr": lambda cyc, v: f"{v:#x}" if sig["m_axi_arvalid"][cyc] == 1 else None,
                  "m_axi_arlen": lambda cyc, v: str(v) if sig["m_axi_arvalid"][cyc] == 1 else None,
                  "m_axi_rdata": beats("m_axi_rvalid", "line"),
                  "m_axis_ld_tdata": beats("m_axis_ld_tvalid", "line")}
        rows = ["ld_start", "ld_addr", "ld_lines", "ld_busy", "ld_done", None] \
            + [f"m_axi_{k}" for k in ("arvalid", "arready", "araddr", "arlen")] + [None] \
            + [f"m_axi_{k}" for k in ("rvalid", "rready", "rdata", "rlast")] + [None] \
            + [f"m_axis_ld_{k}" for k in ("tvalid", "tready", "tdata", "tlast")]
        wd = to_wavedrom(trace, rows, labels,
                         head=f"{core}: Load (ld_start/busy/done, AXI4 AR and R, m_axis_ld with backpressure)",
                         foot="recorded from the RTL (verif/protocol_timing)")
        return {"core": core, "config": os.environ.get("DUT_CFG", ""), "params": p, "wavedrom": wd,
                "relations": rel, "start_cycle": PRE, "widths": {},
                "scenario": f"a Load of {LDST_LINES} lines from line {LDST_ADDR:#x} (byte {LDST_ADDR * 64:#x}): the "
                            "AXI4 slave takes AR at once and returns the burst from the next cycle with one "
                            "bubble, the m_axis_ld sink ready for the first line and then not ready for two "
                            "cycles; the Store side idle"}

    async def capture_pe(dut, core, p):
        """Load PE_PROG through the load port, start it; left_in changes every cycle and
        bus_in is constant, so the recording shows in which cycle each input is sampled."""
        from rtl_gen.registry import get
        _, ports = get(core).build(p)
        cocotb.start_soon(Clock(dut.clk, CLOCK_NS, unit="ns").start())
        for pt in ports:
            if pt.direction == "in" and pt.name != "clk":
                getattr(dut, pt.name).value = 0
        rec = ["ld_en", "ld_addr", "ld_data", "start", "cfg_len", "busy", "done", "err", "left_in", "bus_in",
               "left_out_valid", "left_out", "bus_out_valid", "bus_out", "right_out_valid", "right_out"]
        sig = {nm: [] for nm in rec}
        dut.rst.value = 1
        for _ in range(3):
            await RisingEdge(dut.clk)
        dut.rst.value = 0
        c, drive, end_c = 0, {}, None
        while True:
            await RisingEdge(dut.clk)
            for k, v in drive.items():
                getattr(dut, k).value = v
            await FallingEdge(dut.clk)
            for nm in rec:
                sig[nm].append(_val(getattr(dut, nm)))
            if sig["done"][c] == 1:
                end_c = c
            if end_c is not None and c >= end_c + POST:
                break
            assert c < MAX_CYCLES, f"{core}: no done within {MAX_CYCLES} cycles"
            nxt = c + 1
            k = nxt - PE_LOAD_AT
            ld = 0 <= k < len(PE_PROG)
            drive = {"ld_en": int(ld), "ld_sel": 0, "ld_addr": k if ld else 0, "ld_data": PE_PROG[k][0] if ld else 0,
                     "start": int(nxt == PE_START_AT), "cfg_len": len(PE_PROG) if nxt == PE_START_AT else 0,
                     "left_in": 0x100 * nxt, "bus_in": 0x5000}
            c += 1
        trace = {"cycles": c + 1, "signals": sig}
        rel = _pe_relations(trace, p)
        hexv = lambda cyc, v: f"{v:#x}"  # noqa: E731
        labels = {"ld_addr": lambda cyc, v: str(v) if sig["ld_en"][cyc] == 1 else None,
                  "ld_data": lambda cyc, v: f"i{sig['ld_addr'][cyc]}" if sig["ld_en"][cyc] == 1 else None,
                  "cfg_len": lambda cyc, v: str(v) if sig["start"][cyc] == 1 else None,
                  "err": lambda cyc, v: str(v), "left_in": hexv, "bus_in": hexv,
                  "left_out": hexv, "bus_out": hexv, "right_out": hexv}
        rows = ["ld_en", "ld_addr", "ld_data", None, "start", "cfg_len", "busy", "done", "err", None,
                "left_in", "bus_in", None, "left_out_valid", "left_out", "bus_out_valid", "bus_out",
                "right_out_valid", "right_out"]
        wd = to_wavedrom(trace, rows, labels,
                         head=f"{core}: program load, start/busy/done and the 5-stage pipeline's link/bus timing",
                         foot="recorded from the RTL (verif/protocol_timing)")
        return {"core": core, "config": os.environ.get("DUT_CFG", ""), "params": p, "wavedrom": wd,
                "relations": rel, "start_cycle": PE_START_AT, "widths": {},
                "scenario": "three microcode words (i0: left_out = left_in, i1: bus_out = left_in + 1.0, "
                            "i2: right_out = bus_in) written through the load port, then `start` with "
                            "cfg_len 3; left_in changes every cycle, bus_in is constant"}

    async def capture_region(dut, core, p):
        """WriteRegion 0 then ReadRegion 0 over the same lines: one bubble in the written
        lines, the read sink ready for the first line and then not ready for two cycles."""
        from rtl_gen.registry import get
        _, ports = get(core).build(p)
        cocotb.start_soon(Clock(dut.clk, CLOCK_NS, unit="ns").start())
        for pt in ports:
            if pt.direction == "in" and pt.name != "clk":
                getattr(dut, pt.name).value = int(pt.name.startswith("m_axis_") and pt.name.endswith("_tready"))
        rec = [f"wr0_{k}" for k in ("start", "access", "iters", "busy", "done")] \
            + [f"s_axis_wr0_{k}" for k in ("tvalid", "tready", "tdata")] \
            + [f"rd0_{k}" for k in ("start", "access", "iters", "busy", "done")] \
            + [f"m_axis_rd0_{k}" for k in ("tvalid", "tready", "tdata", "tlast")]
        sig = {nm: [] for nm in rec}
        dut.rst.value = 1
        for _ in range(3):
            await RisingEdge(dut.clk)
        dut.rst.value = 0
        c, drive, sent, bubbled, seen, stall_left, rd_at, end_c = 0, {}, 0, False, 0, 2, None, None
        while True:
            await RisingEdge(dut.clk)
            for k, v in drive.items():
                getattr(dut, k).value = v
            await FallingEdge(dut.clk)
            for nm in rec:
                sig[nm].append(_val(getattr(dut, nm)))
            g = {nm: sig[nm][c] for nm in rec}
            if g["s_axis_wr0_tvalid"] == 1 and g["s_axis_wr0_tready"] == 1:
                sent += 1
            if g["wr0_done"] == 1:
                rd_at = c + 2
            if g["m_axis_rd0_tvalid"] == 1 and g["m_axis_rd0_tready"] == 1:
                seen += 1
            elif g["m_axis_rd0_tvalid"] == 1:
                stall_left -= 1
            if g["rd0_done"] == 1:
                end_c = c
            if end_c is not None and c >= end_c + POST:
                break
            assert c < MAX_CYCLES, f"{core}: not finished within {MAX_CYCLES} cycles"
            nxt = c + 1
            present = PRE < nxt and sent < REG_LINES
            if present and sent == 1 and not bubbled:
                bubbled, present = True, False
            drive = {"wr0_start": int(nxt == PRE), "wr0_access": REG_ACCESS if nxt == PRE else 0,
                     "wr0_iters": 1 if nxt == PRE else 0, "s_axis_wr0_tvalid": int(present),
                     "s_axis_wr0_tdata": sum((sent + 1) << (32 * i) for i in range(p["LANES"])) if present else 0,
                     "rd0_start": int(nxt == rd_at), "rd0_access": REG_ACCESS if nxt == rd_at else 0,
                     "rd0_iters": 1 if nxt == rd_at else 0,
                     "m_axis_rd0_tready": int(not (seen >= 1 and stall_left > 0))}
            c += 1
        trace = {"cycles": c + 1, "signals": sig}
        rel = _region_relations(trace, p)

        def beats(st, short):
            tx = transfers(trace, st)
            return lambda cyc, v: (f"{short}{sum(1 for t in tx if t < cyc)}" if sig[f"{st}_tvalid"][cyc] == 1 else None)
        labels = {"s_axis_wr0_tdata": beats("s_axis_wr0", "line"), "m_axis_rd0_tdata": beats("m_axis_rd0", "line")}
        for ch in ("wr0", "rd0"):
            labels[f"{ch}_access"] = (lambda ch: lambda cyc, v: f"{v:#x}" if sig[f"{ch}_start"][cyc] == 1 else None)(ch)
            labels[f"{ch}_iters"] = (lambda ch: lambda cyc, v: str(v) if sig[f"{ch}_start"][cyc] == 1 else None)(ch)
        rows = rec[:8] + [None] + rec[8:]
        wd = to_wavedrom(trace, rows, labels,
                         head=f"{core}: WriteRegion then ReadRegion (BRAM mode, {REG_LINES} lines at line {REG_OFFSET})",
                         foot="recorded from the RTL (verif/protocol_timing)")
        return {"core": core, "config": os.environ.get("DUT_CFG", ""), "params": p, "wavedrom": wd,
                "relations": rel, "start_cycle": PRE, "widths": {},
                "scenario": f"WriteRegion channel 0 writes {REG_LINES} lines at line {REG_OFFSET} (BRAM mode, "
                            f"access word {REG_ACCESS:#x}, one iteration; one bubble in the lines), then "
                            "ReadRegion channel 0 reads them back with the same word, its sink ready for "
                            "the first line and then not ready for two cycles; the other channels idle"}

    async def capture_engine(dut, core, p):
        """LOAD 3 lines into region 0 (lines offered from the cycle after ld_go, one bubble),
        then STORE them, the Store sink ready for the first line and then not for two."""
        from rtl_gen.registry import get
        _, ports = get(core).build(p)
        cocotb.start_soon(Clock(dut.clk, CLOCK_NS, unit="ns").start())
        for pt in ports:
            if pt.direction == "in" and pt.name != "clk":
                getattr(dut, pt.name).value = int(pt.name == "m_axis_st_tready")
        raw = ["sub_start", "sub_iters", "sub_w1", "sub_acc0", "sub_w6", "sub_busy", "ld_go", "ld_lines", "ld_addr",
               "s_axis_ld_tvalid", "s_axis_ld_tready", "s_axis_ld_tdata", "st_go", "st_lines", "st_addr",
               "m_axis_st_tvalid", "m_axis_st_tready", "m_axis_st_tdata", "m_axis_st_tlast"]
        sig = {nm: [] for nm in raw}
        dut.rst.value = 1
        for _ in range(3):
            await RisingEdge(dut.clk)
        dut.rst.value = 0
        c, drive, sent, bubbled, seen, stall_left = 0, {}, 0, False, 0, 2
        ld_go_c, st_at, end_c, ld_started = None, None, None, False
        while True:
            await RisingEdge(dut.clk)
            for k, v in drive.items():
                getattr(dut, k).value = v
            await FallingEdge(dut.clk)
            for nm in raw:
                sig[nm].append(_val(getattr(dut, nm)))
            g = {nm: sig[nm][c] for nm in raw}
            if g["ld_go"] == 1:
                ld_go_c = c
            if g["s_axis_ld_tvalid"] == 1 and g["s_axis_ld_tready"] == 1:
                sent += 1
            ld_started = ld_started or (g["sub_busy"] & 1) == 1
            if ld_started and st_at is None and sent == ENG_LINES and g["sub_busy"] & 1 == 0:
                st_at = c + 2
            if g["m_axis_st_tvalid"] == 1 and g["m_axis_st_tready"] == 1:
                seen += 1
            elif g["m_axis_st_tvalid"] == 1:
                stall_left -= 1
            if st_at is not None and c > st_at and g["sub_busy"] & 2 == 0 and end_c is None:
                end_c = c
            if end_c is not None and c >= end_c + POST:
                break
            assert c < MAX_CYCLES, f"{core}: not finished within {MAX_CYCLES} cycles"
            nxt = c + 1
            present = ld_go_c is not None and nxt > ld_go_c and sent < ENG_LINES
            if present and sent == 1 and not bubbled:
                bubbled, present = True, False
            issue = 1 if nxt == PRE else 2 if nxt == st_at else 0
            drive = {"sub_start": issue, "sub_iters": 1 if issue else 0,
                     "sub_w1": (1 if issue == 1 else 0), "sub_acc0": ENG_ACCESS if issue else 0,
                     "sub_w6": {1: ENG_LD_ADDR, 2: ENG_ST_ADDR}.get(issue, 0),
                     "s_axis_ld_tvalid": int(present),
                     "s_axis_ld_tdata": sum((sent + 1) << (p["W"] * i) for i in range(p["LANES"])) if present else 0,
                     "m_axis_st_tready": int(not (seen >= 1 and stall_left > 0))}
            c += 1
        n = c + 1
        for b in (0, 1):   # the two bits of the issue pulse and of busy used here, as their own rows
            sig[f"sub_start[{b}]"] = [None if v is None else v >> b & 1 for v in sig["sub_start"]]
            sig[f"sub_busy[{b}]"] = [None if v is None else v >> b & 1 for v in sig["sub_busy"]]
        assert all(v in (0, None) for v in [x & ~3 if x is not None else 0 for x in sig["sub_busy"]]), "other subroutines busy"
        keep = ["sub_start[0]", "sub_start[1]", "sub_iters", "sub_w1", "sub_acc0", "sub_w6", "sub_busy[0]",
                "sub_busy[1]", "ld_go", "ld_lines", "ld_addr", "s_axis_ld_tvalid", "s_axis_ld_tready",
                "s_axis_ld_tdata", "st_go", "st_lines", "st_addr", "m_axis_st_tvalid", "m_axis_st_tready",
                "m_axis_st_tdata", "m_axis_st_tlast"]
        trace = {"cycles": n, "signals": {k: sig[k] for k in keep}}
        rel = _engine_relations(trace, p)
        issued = lambda cyc: sig["sub_start"][cyc] not in (0, None)  # noqa: E731

        def beats(st, short):
            tx = transfers(trace, st)
            return lambda cyc, v: (f"{short}{sum(1 for t in tx if t < cyc)}" if sig[f"{st}_tvalid"][cyc] == 1 else None)
        labels = {"s_axis_ld_tdata": beats("s_axis_ld", "line"), "m_axis_st_tdata": beats("m_axis_st", "line"),
                  "sub_iters": lambda cyc, v: str(v) if issued(cyc) else None,
                  "sub_w1": lambda cyc, v: f"{v:#x}" if issued(cyc) else None,
                  "sub_acc0": lambda cyc, v: f"{v:#x}" if issued(cyc) else None,
                  "sub_w6": lambda cyc, v: f"{v:#x}" if issued(cyc) else None,
                  "ld_lines": lambda cyc, v: str(v), "st_lines": lambda cyc, v: str(v),
                  "ld_addr": lambda cyc, v: f"{v:#x}", "st_addr": lambda cyc, v: f"{v:#x}"}
        rows = keep[:8] + [None] + keep[8:14] + [None] + keep[14:]
        wd = to_wavedrom(trace, rows, labels,
                         head=f"{core}: LOAD then STORE issued on sub_*, busy, the Load and Store sides",
                         foot="recorded from the RTL (verif/protocol_timing)")
        return {"core": core, "config": os.environ.get("DUT_CFG", ""), "params": p, "wavedrom": wd,
                "relations": rel, "start_cycle": PRE, "widths": {},
                "scenario": f"a LOAD (region mask 1, access word {ENG_ACCESS:#x}: {ENG_LINES} lines at line 8 of "
                            f"region 0, one iteration, w6 = {ENG_LD_ADDR:#x}) whose lines arrive from the cycle "
                            "after ld_go with one bubble, then, once its sub_busy bit fell, a STORE of the same "
                            f"lines (w6 = {ENG_ST_ADDR:#x}), the Store sink ready for the first line and then "
                            "not ready for two cycles (sub_start and sub_busy: bits 0 and 1)"}

    async def capture_mpc(dut, core, p):
        """The command words of _mpc_cmds, offered one per cycle (one bubble after the first),
        recorded from DEPTH+4 cycles after reset (the smart memory clears its RAM first);
        the dump sink ready for the first beat and then not ready for two cycles."""
        cocotb.start_soon(Clock(dut.clk, CLOCK_NS, unit="ns").start())
        dut.s_axis_cmd_tvalid.value = 0
        dut.s_axis_cmd_tdata.value = 0
        dut.m_axis_out_tready.value = 1
        rec = ["s_axis_cmd_tvalid", "s_axis_cmd_tready", "s_axis_cmd_tdata", "m_axis_out_tvalid",
               "m_axis_out_tready", "m_axis_out_tdata", "m_axis_out_tlast", "err"]
        sig = {nm: [] for nm in rec}
        cmds = _mpc_cmds(p)
        dut.rst.value = 1
        for _ in range(3):
            await RisingEdge(dut.clk)
        dut.rst.value = 0
        for _ in range(p["DEPTH"] + 4):
            await RisingEdge(dut.clk)
        c, drive, sent, bubbled, seen, stall_left, end_c = 0, {}, 0, False, 0, 2, None
        while True:
            await RisingEdge(dut.clk)
            for k, v in drive.items():
                getattr(dut, k).value = v
            await FallingEdge(dut.clk)
            for nm in rec:
                sig[nm].append(_val(getattr(dut, nm)))
            g = {nm: sig[nm][c] for nm in rec}
            if g["s_axis_cmd_tvalid"] == 1 and g["s_axis_cmd_tready"] == 1:
                sent += 1
            if g["m_axis_out_tvalid"] == 1 and g["m_axis_out_tready"] == 1:
                seen += 1
                if seen == p["M"]:
                    end_c = c
            elif g["m_axis_out_tvalid"] == 1:
                stall_left -= 1
            if end_c is not None and c >= end_c + POST:
                break
            assert c < MAX_CYCLES, f"{core}: dump not finished within {MAX_CYCLES} cycles"
            present = c + 1 >= PRE and sent < len(cmds)
            if present and sent == 1 and not bubbled:
                bubbled, present = True, False
            drive = {"s_axis_cmd_tvalid": int(present), "s_axis_cmd_tdata": cmds[sent][0] if present else 0,
                     "m_axis_out_tready": int(not (seen >= 1 and stall_left > 0))}
            c += 1
        trace = {"cycles": c + 1, "signals": sig}
        rel = _mpc_relations(trace, p)
        names = {w: nm for w, nm in cmds}

        # a row naming the word offered (drawn only; the relations use s_axis_cmd_tdata)
        sig["s_axis_cmd (meaning)"] = list(sig["s_axis_cmd_tdata"])
        labels = {"s_axis_cmd_tdata": lambda cyc, v: f"{v:#x}" if sig["s_axis_cmd_tvalid"][cyc] == 1 else None,
                  "s_axis_cmd (meaning)": lambda cyc, v: names.get(v) if sig["s_axis_cmd_tvalid"][cyc] == 1 else None,
                  "m_axis_out_tdata": lambda cyc, v: f"{v:#x}" if sig["m_axis_out_tvalid"][cyc] == 1 else None}
        rows = rec[:3] + ["s_axis_cmd (meaning)", None] + rec[3:7] + [None, "err"]
        wd = to_wavedrom(trace, rows, labels,
                         head=f"{core}: command stream (one array, read-modify-write) and the smart-memory dump",
                         foot="recorded from the RTL (verif/protocol_timing)")
        return {"core": core, "config": os.environ.get("DUT_CFG", ""), "params": p, "wavedrom": wd,
                "relations": rel, "start_cycle": PRE, "widths": {},
                "scenario": "SET_SM_REDUCTION (read-modify-write), SM_CTRL START, WRITE_A of a = 2.0, WRITE_B of "
                            "b = 3.0 to every PE, MULT_ACC_DUMP of one step (last), DUMP_SM of the M entries, "
                            "offered one word per cycle (one bubble after the first), recorded from "
                            f"{p['DEPTH'] + 4} cycles after reset, once the smart memory has cleared its RAM; "
                            "the dump sink ready for the first beat and then not ready for two cycles"}

    from scoreboards.protocol import guard_tests  # noqa: E402

    guard_tests(globals())


# ---------------------------------------------------------------- pytest launcher
def committed(core: str) -> Path:
    from rtl_gen.common.core import REPO
    return REPO / "rtl_gen" / "timing_diagrams" / f"{core}.json"


def record(core: str, sim: str = "icarus") -> dict:
    """Run the capture on the committed netlist of ``core``; the recorded document."""
    from verif import harness
    from rtl_gen.registry import get
    cd = get(core)
    params = cd.resolve(cd.configs["default"])
    rtl = harness.rtl_dir(core, "default")
    out = harness.BUILD / "timing" / f"{core}-{sim}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.unlink(missing_ok=True)
    run_top = getattr(harness.run_top, "_real", harness.run_top)
    run_top("protocol_timing", core, "default", sim, [rtl / f"{core}.v"],
            ["-Wall", "--output-split", "0"] if sim == "verilator" else [], params,
            extra_env={"TIMING_CORE": core, "TIMING_OUT": str(out)}, tag=core)
    return json.loads(out.read_text())


def compare(recorded: dict, source: dict) -> list[str]:
    """Differences between a recording and the committed diagram source (empty: same)."""
    diffs = []
    for key in ("core", "config", "params", "relations", "start_cycle", "widths", "scenario"):
        if recorded.get(key) != source.get(key):
            diffs.append(f"{key}: recorded {recorded.get(key)!r}, committed {source.get(key)!r}")
    rs = {r.get("name"): r for r in recorded["wavedrom"]["signal"] if r}
    cs = {r.get("name"): r for r in source["wavedrom"]["signal"] if r}
    for name in sorted(set(rs) | set(cs)):
        if rs.get(name) != cs.get(name):
            diffs.append(f"{name}: recorded {rs.get(name)}, committed {cs.get(name)}")
    if not diffs and recorded["wavedrom"] != source["wavedrom"]:
        diffs.append("wavedrom: layout/text differs")
    return diffs


def check_diagram(doc: dict) -> list[str]:
    """The protocol relations, asserted on a diagram source itself (no simulator)."""
    from verif.wavetrace import from_wavedrom
    core = doc["core"]
    trace = from_wavedrom(doc["wavedrom"])
    trace["widths"] = doc["widths"]
    if core in REGISTER:
        return _reg_relations(core, trace, doc["start_cycle"])
    if core == "pipearch_ldst":
        return _ldst_relations(trace, doc["params"])
    if core == "cosmic_pe":
        return _pe_relations(trace, doc["params"])
    if core == "pipearch_region":
        return _region_relations(trace, doc["params"])
    if core == "pipearch_engine":
        return _engine_relations(trace, doc["params"])
    if core == "maple_pe_chain":
        return _mpc_relations(trace, doc["params"])
    if core in STREAMS:
        return _stream_relations(core, trace, doc["params"])
    names = trace["signals"]
    ins = [n[:-len("_tvalid")] for n in names if n.startswith("s_axis_") and n.endswith("_tvalid")]
    out = [n[:-len("_tvalid")] for n in names if n.startswith("m_axis_") and n.endswith("_tvalid")][0]
    dim, iters = SCENARIO[core]
    return _relations(core, trace, ins, out, dim, iters, doc["params"], doc["start_cycle"])


def test_every_catalog_core_has_a_diagram():
    """Every core of the catalog has a recorded diagram, checked here, and its datasheet shows it."""
    from rtl_gen.common.core import REPO
    from rtl_gen.registry import cores
    assert sorted(CORES) == sorted(cores()), f"cores without a diagram: {sorted(set(cores()) - set(CORES))}"
    for core in CORES:
        assert committed(core).is_file(), core
        assert f"doc/{core}_protocol.svg" in (REPO / "ip" / core / "README.md").read_text(), core
        assert (REPO / "ip" / core / "doc" / f"{core}_protocol.svg").is_file(), core


@pytest.mark.parametrize("core", CORES)
def test_committed_diagram_relations_hold(core):
    """What the datasheet draws satisfies the relations it lists (checked on the
    committed WaveDrom source, independently of the recording that produced it)."""
    doc = json.loads(committed(core).read_text())
    assert check_diagram(doc) == doc["relations"]


def _mutated(core, name, fn):
    doc = json.loads(committed(core).read_text())
    row = next(r for r in doc["wavedrom"]["signal"] if r.get("name") == name)
    fn(row)
    return doc


def test_relation_checks_catch_broken_diagrams():
    """Negatives: a diagram whose output changes under backpressure, whose done pulses
    twice, or whose busy drops early fails the relation checks; one changed cell fails
    the comparison with the recording."""
    def change_during_stall(row):     # m_axis_y_tdata: y1 replaced by y2 in the second stalled cycle
        doc = json.loads(committed("l2reg").read_text())
        rows = {r.get("name"): r for r in doc["wavedrom"]["signal"] if r}
        v, r_ = rows["m_axis_y_tvalid"]["wave"], rows["m_axis_y_tready"]["wave"]
        from verif.wavetrace import from_wavedrom
        t = from_wavedrom(doc["wavedrom"])["signals"]
        stall = [c for c in range(len(v)) if t["m_axis_y_tvalid"][c] == 1 and t["m_axis_y_tready"][c] == 0]
        w = list(row["wave"])
        w[stall[1]] = "="
        row["wave"] = "".join(w)
        row["data"] = row["data"][:2] + ["y9"] + row["data"][2:]
    with pytest.raises(AssertionError, match="m_axis_y_tdata changed"):
        check_diagram(_mutated("l2reg", "m_axis_y_tdata", change_during_stall))

    def second_done(row):
        w = list(row["wave"])
        w[1] = "1"
        w[2] = "0"
        row["wave"] = "".join(w)
    with pytest.raises(AssertionError, match="done must pulse exactly once"):
        check_diagram(_mutated("l2reg", "done", second_done))

    def busy_gap(row):
        w = list(row["wave"])
        i = w.index("1")
        w[i + 2], w[i + 3] = "0", "1"
        row["wave"] = "".join(w)
    with pytest.raises(AssertionError, match="busy must stay high"):
        check_diagram(_mutated("dot_sigmoid", "busy", busy_gap))

    # AXI4-Lite: a read that returns another value, a write response before the write
    with pytest.raises(AssertionError, match="read back 0x999"):
        check_diagram(_mutated("pipearch_rm", "s_axil_rdata", lambda r: r.update(data=["0x999"])))

    def early_b(row):
        w = list(row["wave"])
        i = w.index("1")
        w[i - 1] = "1"
        row["wave"] = "".join(w)
    with pytest.raises(AssertionError, match="bvalid in cycle .* before the AW"):
        check_diagram(_mutated("cosmic_memory_schedule_unit", "s_axil_bvalid", early_b))

    # streams only: the result's tlast moved to another result
    def tlast_early(row):             # tlast with the first result (handshake in the cycle
        doc = json.loads(committed("fpdeep_conv_tile").read_text())   # its tvalid rises)
        v = next(r for r in doc["wavedrom"]["signal"] if r.get("name") == "m_axis_res_tvalid")["wave"]
        first = v.index("1")
        row["wave"] = "0" + "." * (first - 1) + "10" + "." * (len(v) - first - 2)
    with pytest.raises(AssertionError, match="m_axis_res_tlast on results"):
        check_diagram(_mutated("fpdeep_conv_tile", "m_axis_res_tlast", tlast_early))

    # loads then start: start moved two cycles earlier (before the last filter beat); the
    # parameter generator's done moved to one cycle after its bias beat
    def shift_pulse(by):
        def fn(row):
            from verif.wavetrace import level_wave
            lv, cur = [], None
            for ch in row["wave"]:
                cur = cur if ch == "." else int(ch)
                lv.append(cur)
            i = lv.index(1)
            lv[i], lv[i + by] = 0, 1
            row["wave"] = level_wave(lv)
        return fn
    with pytest.raises(AssertionError, match="s_axis_w: a load beat transferred after start"):
        check_diagram(_mutated("fpdeep_fp", "start", shift_pulse(-2)))
    with pytest.raises(AssertionError, match="done 1 cycles after the last m_axis_b transfer"):
        check_diagram(_mutated("fpdeep_pg", "done", shift_pulse(-1)))
    # pipearch_ldst: ld_done a cycle late; the first line handed out twice (line1 lost)
    with pytest.raises(AssertionError, match="ld_done high in cycles"):
        check_diagram(_mutated("pipearch_ldst", "ld_done", shift_pulse(1)))
    # cosmic_pe: an output a cycle late; right_out not the bus_in sampled in stage 1
    with pytest.raises(AssertionError, match="left_out_valid high in cycles"):
        check_diagram(_mutated("cosmic_pe", "left_out_valid", shift_pulse(1)))
    with pytest.raises(AssertionError, match="right_out 0x7777, expected"):
        check_diagram(_mutated("cosmic_pe", "right_out", lambda r: r.update(data=r["data"][:-1] + ["0x7777"])))
    # pipearch_region: rd0_start drawn a cycle late (while the channel is busy); a line read back twice
    with pytest.raises(AssertionError, match="rd0_busy must rise the cycle after rd0_start"):
        check_diagram(_mutated("pipearch_region", "rd0_start", shift_pulse(1)))
    with pytest.raises(AssertionError, match="lines read back differ"):
        check_diagram(_mutated("pipearch_region", "m_axis_rd0_tdata",
                               lambda r: r.update(data=[r["data"][0], r["data"][0]] + r["data"][2:])))
    # maple_pe_chain: a dumped value that is not a*b; a command word taken twice
    with pytest.raises(AssertionError, match="dump .* expected"):
        check_diagram(_mutated("maple_pe_chain", "m_axis_out_tdata", lambda r: r.update(data=["0x5"] + r["data"][1:])))
    with pytest.raises(AssertionError, match="command words taken out of order"):
        check_diagram(_mutated("maple_pe_chain", "s_axis_cmd_tdata",
                               lambda r: r.update(data=[r["data"][0], r["data"][0]] + r["data"][2:])))
    # pipearch_engine: st_go a cycle late; a stored line that was not loaded
    with pytest.raises(AssertionError, match="st_go high in cycles"):
        check_diagram(_mutated("pipearch_engine", "st_go", shift_pulse(1)))
    with pytest.raises(AssertionError, match="the stored lines differ"):
        check_diagram(_mutated("pipearch_engine", "m_axis_st_tdata",
                               lambda r: r.update(data=[r["data"][0], r["data"][0]] + r["data"][2:])))
    with pytest.raises(AssertionError, match="lines out of order"):
        check_diagram(_mutated("pipearch_ldst", "m_axis_ld_tdata",
                               lambda r: r.update(data=[r["data"][0], r["data"][0]] + r["data"][2:])))

    good = json.loads(committed("scalar_engine").read_text())
    bad = _mutated("scalar_engine", "s_axis_a_tready", lambda r: r.update(wave=r["wave"][:5] + "0" + r["wave"][6:]))
    assert compare(good, good) == []
    assert any(d.startswith("s_axis_a_tready:") for d in compare(good, bad))


# large netlists (Icarus build of 0.7-6 MB of Verilog): their recording runs in the full
# regression (make sim), not in make test; their committed diagrams are still checked by
# test_committed_diagram_relations_hold there
SLOW_RECORD = ("cosmic_accelerator", "fpdeep_node", "pipearch_engine", "pipearch_system")


@pytest.mark.parametrize("core", [pytest.param(c, marks=[pytest.mark.slow] if c in SLOW_RECORD else [])
                                  for c in CORES])
def test_datasheet_diagram_matches_rtl(core):
    rec = record(core)
    src = committed(core)
    assert src.is_file(), f"no committed diagram {src}: run python -m verif.protocol_timing.test_protocol_timing --update {core}"
    diffs = compare(rec, json.loads(src.read_text()))
    assert not diffs, (f"{core}: the datasheet's protocol diagram no longer matches the RTL:\n  "
                       + "\n  ".join(diffs[:10]) + "\nre-record: python -m verif.protocol_timing."
                       f"test_protocol_timing --update {core}, then make gen")


@pytest.mark.slow
def test_recording_is_the_same_on_verilator():
    """The diagram does not depend on the simulator: l2reg recorded on Verilator equals
    the committed (Icarus) source."""
    import shutil
    if shutil.which("verilator") is None:
        pytest.skip("Verilator not on PATH")
    diffs = compare(record("l2reg", "verilator"), json.loads(committed("l2reg").read_text()))
    assert not diffs, diffs


if __name__ == "__main__":
    args = sys.argv[1:]
    if not args or args[0] != "--update":
        print("usage: python -m verif.protocol_timing.test_protocol_timing --update [core ...]")
        sys.exit(2)
    for core in args[1:] or CORES:
        doc = record(core)
        committed(core).parent.mkdir(parents=True, exist_ok=True)
        committed(core).write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
        print(f"{core}: {committed(core)}")
