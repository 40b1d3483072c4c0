"""Bit-exact fixed-point scoreboard on cocotb-bus's :class:`Scoreboard`.

Every DUT transaction on a monitored stream is compared with the next expected one
(in order).  A mismatch is reported with the transaction index, the lane, and the
expected and actual values both as raw integers and as fixed-point reals; it is
counted, not raised, so one run shows every error.  :meth:`FixedScoreboard.check`
fails when any mismatch was seen, when an expected transaction never arrived (a
dropped output), or when a transaction arrived with nothing expected (an extra
output).
"""
from __future__ import annotations

import logging
from collections import deque

from cocotb_bus.scoreboard import Scoreboard


def to_signed(v: int, w: int) -> int:
    v &= (1 << w) - 1
    return v - (1 << w) if v >> (w - 1) else v


def split_lanes(word: int, lanes: int, w: int) -> list[int]:
    """Signed lane values of a packed word; lane i is bits [i*w +: w]."""
    return [to_signed(word >> (i * w), w) for i in range(lanes)]


def pack_lanes(values, w: int) -> int:
    word = 0
    for i, v in enumerate(values):
        word |= (int(v) & ((1 << w) - 1)) << (i * w)
    return word


class StreamSpec:
    """How to read a stream's tdata: ``fields`` is a list of (name, lanes, W, F)."""

    def __init__(self, name: str, fields):
        self.name = name
        self.fields = list(fields)

    def decode(self, word: int):
        out = []
        shift = 0
        for fname, lanes, w, f in self.fields:
            for i in range(lanes):
                out.append((fname, i, to_signed(word >> shift, w), f))
                shift += w
        return out


class FixedScoreboard(Scoreboard):
    def __init__(self, dut, max_reports: int = 20):
        super().__init__(dut, fail_immediately=False)
        self.log = logging.getLogger(f"cocotb.scoreboard.{dut._name}")
        self.specs = {}
        self.counts = {}
        self.mismatches = 0
        self.max_reports = max_reports
        self.compared = 0

    def add_stream(self, monitor, spec: StreamSpec, check_tlast: bool = True) -> deque:
        """Register ``monitor``; returns the deque to append expected (tdata, tlast) to."""
        exp = deque()
        self.specs[monitor] = (spec, check_tlast)
        self.counts[monitor] = 0
        self.add_interface(monitor, exp, compare_fn=self._make_cb(monitor, exp))
        return exp

    def _make_cb(self, monitor, exp):
        def cb(got):
            idx = self.counts[monitor]
            self.counts[monitor] += 1
            if not exp:
                self.errors += 1
                self.log.error("%s: extra output #%d (nothing expected): tdata=0x%x", monitor, idx, got[0])
                return
            self._compare_fixed(monitor, got, exp.popleft(), idx)
        return cb

    def _compare_fixed(self, monitor, got, expected, idx=0):
        spec, check_tlast = self.specs[monitor]
        self.compared += 1
        gd, gl = got
        ed, el = expected
        bad = False
        for (fname, lane, gv, f), (_, _, ev, _) in zip(spec.decode(gd), spec.decode(ed)):
            if gv != ev:
                bad = True
                if self.mismatches < self.max_reports:
                    self.log.error(
                        "%s: transaction %d field %s lane %d: expected %d (%.9g) got %d (%.9g)",
                        spec.name, idx, fname, lane, ev, ev / (1 << f), gv, gv / (1 << f))
        if check_tlast and gl != el:
            bad = True
            if self.mismatches < self.max_reports:
                self.log.error("%s: transaction %d: expected tlast=%d got %d", spec.name, idx, el, gl)
        if bad:
            self.mismatches += 1
            self.errors += 1

    def pending(self) -> int:
        return sum(len(e) for e in self.expected.values())

    def check(self):
        """Fail on any mismatch, any expected transaction left over, any extra output."""
        left = self.pending()
        msg = (f"scoreboard: {self.compared} compared, {self.mismatches} mismatched, "
               f"{left} expected but never received, {self.errors} errors")
        self.log.info(msg)
        assert self.errors == 0 and left == 0, msg
