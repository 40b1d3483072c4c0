"""Reusable functional-coverage pieces for the testbenches (see ``verif/funcov.py``).

* point declarations shared by many cores: start x busy, configuration-field corners,
  AXI4-Stream flow patterns, rounding and saturation of a fixed-point operator;
* :class:`SubroutineObserver`: one coroutine that watches a start/busy/done core's pins
  (sampled at the falling edge, i.e. what the DUT sees at the next rising edge): every
  start with ``busy`` (accepted or ignored), the cfg fields of each accepted start, the
  ``cfg_err`` outcome at ``done``, the valid/ready pattern of each stream, and the data
  of every accepted input beat, handed to a per-core ``on_done`` hook that classifies
  the arithmetic the DUT just did (the scoreboard checks the outputs themselves).

Sampling is per event (start, done, the first occurrence of a flow pattern in a job),
not per cycle, so the cost stays small.
"""
from __future__ import annotations

from typing import Callable

import cocotb
import numpy as np
from cocotb.triggers import FallingEdge, ReadOnly

from verif.funcov import CoverModel

FLOW_IN = ["transfer", "back_to_back", "bubble", "stall", "stall_4plus"]
FLOW_OUT = ["transfer", "back_to_back", "idle", "backpressure", "backpressure_4plus"]


def field_bins(cov: CoverModel, max_key: str | None = None, lo: int = 1, signed: bool = False) -> dict:
    """Bins of a configuration field: unsigned ``lo``/mid/max (``max_key``: the DUT
    parameter holding the maximum), or a signed fixed-point word: zero, +-one LSB,
    +-1.0, min, max, other positive/negative."""
    if not signed:
        return {"min": lambda v: v == lo,
                "mid": lambda v, m=max_key: lo < v < cov.p[m],
                "max": lambda v, m=max_key: v == cov.p[m]}
    return {"zero": lambda v: v == 0,
            "lsb_pos": lambda v: v == 1,
            "lsb_neg": lambda v: v == -1,
            "one_pos": lambda v: v == 1 << cov.p["F"],
            "one_neg": lambda v: v == -(1 << cov.p["F"]),
            "positive": lambda v: v > 0,
            "negative": lambda v: v < 0,
            "min": lambda v: v == -(1 << (cov.p["W"] - 1)),
            "max": lambda v: v == (1 << (cov.p["W"] - 1)) - 1}


def declare_control(cov: CoverModel, errors: list[str]):
    """Points ``start`` (valid_cfg / invalid_cfg), ``busy`` (idle / busy), their cross
    ``start_x_busy``, and ``outcome`` (ok + one bin per cfg error cause)."""
    cov.point("start", values=["valid_cfg", "invalid_cfg"], doc="a start pulse, by whether its cfg fields are legal")
    cov.point("busy", values=["idle", "busy"], doc="busy in the cycle start was given")
    cov.cross("start_x_busy", ["start", "busy"],
              doc="start x busy: legal and illegal starts while idle (taken) and while busy (ignored)")
    cov.point("outcome", values=["ok"] + errors, doc="done: cfg_err clear, or set for each cause")


def declare_flow(cov: CoverModel, stream: str, output: bool):
    cov.point(f"{stream}_flow", values=FLOW_OUT if output else FLOW_IN,
              doc=("output" if output else "input") + f" stream {stream} while busy: handshake, two in consecutive "
              "cycles, a cycle without tvalid (bubble/idle), tvalid without tready, 4+ cycles of it")


def declare_round_sat(cov: CoverModel, op: str, ties_neg: bool = True):
    """``<op>_round``: the product's discarded fraction (exact, below half, tie, above
    half; ties of each sign); ``<op>_sat``: none / positive / negative saturation."""
    cov.point(f"{op}_round", values=["exact", "down", "up", "tie_pos"] + (["tie_neg"] if ties_neg else []),
              doc=f"{op}: rounding of the full-width product (round half up)")
    declare_sat(cov, op)


def declare_sat(cov: CoverModel, op: str):
    cov.point(f"{op}_sat", values=["none", "pos", "neg"], doc=f"{op}: result saturated to max / min")


def sample_round(cov: CoverModel, op: str, prod, F: int):
    """Sample ``<op>_round`` once per class present in the full products ``prod``."""
    p = np.asarray(prod, dtype=object).reshape(-1)
    if not len(p):
        return
    half = 1 << (F - 1)
    seen = set()
    for x in p:
        fr = int(x) & ((1 << F) - 1)
        seen.add("exact" if fr == 0 else "down" if fr < half else "up" if fr > half
                 else ("tie_pos" if x > 0 else "tie_neg"))
    for s in seen:
        if s in cov.points[f"{op}_round"].labels:
            cov.sample(f"{op}_round", s)


def sample_sat(cov: CoverModel, op: str, exact, W: int):
    """Sample ``<op>_sat`` once per class present in the exact (unsaturated) results."""
    e = np.asarray(exact, dtype=object).reshape(-1)
    if not len(e):
        return
    hi, lo = (1 << (W - 1)) - 1, -(1 << (W - 1))
    seen = {"pos" if int(x) > hi else "neg" if int(x) < lo else "none" for x in e}
    for s in seen:
        cov.sample(f"{op}_sat", s)


def unpack(words, lanes: int, w: int) -> np.ndarray:
    """Packed lines (ints) -> (lines, lanes) signed int64."""
    m, sb = (1 << w) - 1, 1 << (w - 1)
    out = np.empty((len(words), lanes), dtype=np.int64)
    for i, word in enumerate(words):
        for j in range(lanes):
            v = (word >> (j * w)) & m
            out[i, j] = v - (1 << w) if v & sb else v
    return out


def signed(v: int, w: int) -> int:
    return v - (1 << w) if v >> (w - 1) & 1 else v


class SubroutineObserver:
    """Watches one start/busy/done core (see the module docstring).

    ``fields``: cfg field names read at each accepted start (``cfg_<name>``; signed
    ones listed in ``signed_fields``), sampled into the point of the same name when
    declared.  ``valid(cfg) -> str | None``: the error cause of a cfg (None = legal).
    ``inputs``/``outputs``: stream prefixes; input beats' tdata is kept per job.
    ``on_done(cfg, beats: {stream: [tdata]})`` classifies the job's arithmetic."""

    def __init__(self, cov: CoverModel, dut, fields: list[str], cause: Callable[[dict], str | None],
                 inputs: list[str], outputs: list[str], on_done: Callable | None = None,
                 signed_fields: tuple = (), clk=None, keep_data: tuple | None = None,
                 sample_fields: tuple | None = None):
        self.cov, self.dut, self.clk = cov, dut, clk if clk is not None else dut.clk
        self.fields = {f: getattr(dut, f"cfg_{f}") for f in fields}
        self.signed = set(signed_fields)
        self.sample_fields = set(fields if sample_fields is None else sample_fields)
        self.cause = cause
        self.on_done = on_done
        self.streams = [(s, getattr(dut, f"{s}_tvalid"), getattr(dut, f"{s}_tready"),
                         getattr(dut, f"{s}_tdata"), False) for s in inputs]
        self.streams += [(s, getattr(dut, f"{s}_tvalid"), getattr(dut, f"{s}_tready"), None, True) for s in outputs]
        self.keep = set(inputs if keep_data is None else keep_data)
        self.cfg = None
        self.beats = {s: [] for s in inputs}
        self.seen: set = set()
        self.run = {s: 0 for s, *_ in self.streams}
        self.prev = {s: False for s, *_ in self.streams}
        self._task = cocotb.start_soon(self._watch())

    def _read_cfg(self) -> dict:
        c = {}
        for f, sig in self.fields.items():
            v = int(sig.value)
            c[f] = signed(v, len(sig)) if f in self.signed else v
        return c

    def _flow(self, s: str, label: str):
        key = (s, label)
        if key not in self.seen:
            self.seen.add(key)
            self.cov.sample(f"{s}_flow", label)

    async def _watch(self):
        dut, cov = self.dut, self.cov
        rst, start, busy, done = dut.rst, dut.start, dut.busy, dut.done
        err = getattr(dut, "cfg_err", None)
        fe, ro = FallingEdge(self.clk), ReadOnly()
        while True:
            await fe
            await ro
            if not rst.value.is_resolvable or int(rst.value):
                self.cfg = None
                continue
            b = int(busy.value) if busy.value.is_resolvable else 0
            if int(start.value):
                cfg = self._read_cfg()
                why = self.cause(cfg)
                cov.sample_cross("start_x_busy", "invalid_cfg" if why else "valid_cfg", "busy" if b else "idle")
                if not b:
                    self.cfg = dict(cfg, _cause=why)
                    for f, v in cfg.items():
                        if not why and f in self.sample_fields and f in cov.points:
                            cov.sample(f, v)
                    for s in self.beats:
                        self.beats[s] = []
                    self.seen = set()
            if b:
                for s, tv, tr, td, out in self.streams:
                    v = tv.value.is_resolvable and int(tv.value)
                    r = tr.value.is_resolvable and int(tr.value)
                    if v and r:
                        self._flow(s, "transfer")
                        if self.prev[s]:
                            self._flow(s, "back_to_back")
                        if td is not None and s in self.keep:
                            self.beats[s].append(int(td.value))
                        self.run[s] = 0
                        self.prev[s] = True
                        continue
                    self.prev[s] = False
                    if v:
                        self.run[s] += 1
                        self._flow(s, "backpressure" if out else "stall")
                        if self.run[s] == 4:
                            self._flow(s, "backpressure_4plus" if out else "stall_4plus")
                    else:
                        self.run[s] = 0
                        self._flow(s, "idle" if out else "bubble")
            if int(done.value) and self.cfg is not None:
                e = int(err.value) if err is not None else 0
                why = self.cfg.get("_cause")
                if e and why:
                    cov.sample("outcome", why)
                elif not e and not why:
                    cov.sample("outcome", "ok")   # a disagreement is the tests' to fail, not a bin
                if not e and self.on_done is not None:
                    self.on_done({k: v for k, v in self.cfg.items() if k != "_cause"}, self.beats)
                self.cfg = None


class Flow:
    """The valid/ready pattern of one stream, fed one cycle at a time by a testbench's own
    per-cycle observer (``cycle(valid, ready)`` while the transfer is active); samples each
    ``<stream>_flow`` bin (see :func:`declare_flow`) at its first occurrence after
    :meth:`restart`."""

    def __init__(self, cov: CoverModel, stream: str, output: bool):
        self.cov, self.point, self.out = cov, f"{stream}_flow", output
        self.restart()

    def restart(self):
        self.seen, self.prev, self.run = set(), False, 0

    def _hit(self, label):
        if label not in self.seen:
            self.seen.add(label)
            self.cov.sample(self.point, label)

    def cycle(self, valid, ready):
        if valid and ready:
            self._hit("transfer")
            if self.prev:
                self._hit("back_to_back")
            self.prev, self.run = True, 0
            return
        self.prev = False
        if valid:
            self.run += 1
            self._hit("backpressure" if self.out else "stall")
            if self.run == 4:
                self._hit("backpressure_4plus" if self.out else "stall_4plus")
        else:
            self.run = 0
            self._hit("idle" if self.out else "bubble")
