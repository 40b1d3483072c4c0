"""AXI4-Stream components on the cocotb-bus bases.

Signals are found by prefix: ``<prefix>_tdata``, ``_tvalid``, ``_tready`` and, when
present, ``_tlast``.  Transactions are ``(tdata:int, tlast:int)`` tuples.
"""
from __future__ import annotations

import cocotb
from cocotb.triggers import ReadOnly, RisingEdge
from cocotb_bus.drivers import Driver
from cocotb_bus.monitors import Monitor

from .gates import Gate, always
from .protocol import AxisRule
from .waits import DEFAULT_CYCLES, wait_until, watch

#: stalls shorter than this are normal random backpressure and not reported
REPORT_STALL = 16


def _opt(dut, name):
    return getattr(dut, name) if hasattr(dut, name) else None


class AxisSource(Driver):
    """Drives a stream; inserts bubbles from ``gate``; holds data while ``tready`` is low.

    A beat not accepted within ``stall_cycles`` cycles fails the test with a
    :class:`~scoreboards.waits.StallError` naming the stream."""

    def __init__(self, dut, prefix: str, clk, gate: Gate | None = None,
                 stall_cycles: int = DEFAULT_CYCLES):
        self.clk = clk
        self.prefix = prefix
        self.stall_cycles = stall_cycles
        self.held = 0  # cycles the current beat has waited for tready
        self.tdata = getattr(dut, f"{prefix}_tdata")
        self.tvalid = getattr(dut, f"{prefix}_tvalid")
        self.tready = getattr(dut, f"{prefix}_tready")
        self.tlast = _opt(dut, f"{prefix}_tlast")
        self.gate = gate or always()
        self.sent = 0
        self.tvalid.value = 0
        super().__init__()
        watch(self)

    def stall_status(self) -> str | None:
        if self.held >= REPORT_STALL:
            return f"{self.prefix}: tvalid held {self.held} cycles without tready ({self.sent} beats accepted)"
        return None

    def _accepted(self) -> bool:
        if int(self.tready.value):
            return True
        self.held += 1
        return False

    async def _driver_send(self, transaction, sync: bool = True, **kwargs):
        data, last = transaction if isinstance(transaction, tuple) else (transaction, 0)
        while not self.gate.next():
            self.tvalid.value = 0
            await RisingEdge(self.clk)
        self.tdata.value = int(data)
        if self.tlast is not None:
            self.tlast.value = int(last)
        self.tvalid.value = 1
        self.held = 0
        await RisingEdge(self.clk)
        await wait_until(self.clk, self._accepted, self.stall_cycles,
                         f"{self.prefix}: tvalid held without tready",
                         expect=f"the DUT to accept beat {self.sent} ({len(self._sendQ)} more queued)")
        self.held = 0
        self.tvalid.value = 0
        self.sent += 1

    async def drain(self, cycles: int = DEFAULT_CYCLES):
        """Wait until everything queued has been handed over (at most ``cycles``)."""
        await wait_until(self.clk, lambda: not (self._sendQ or self.busy_sending()), cycles,
                         f"{self.prefix}: source not drained",
                         expect=f"{len(self._sendQ)} queued beats accepted after {self.sent}")

    def busy_sending(self) -> bool:
        return bool(int(self.tvalid.value))


class AxisSink:
    """Drives ``tready`` from a gate (random backpressure)."""

    def __init__(self, dut, prefix: str, clk, gate: Gate | None = None):
        self.clk = clk
        self.tready = getattr(dut, f"{prefix}_tready")
        self.gate = gate or always()
        self.tready.value = 0
        self._task = cocotb.start_soon(self._run())

    async def _run(self):
        while True:
            self.tready.value = 1 if self.gate.next() else 0
            await RisingEdge(self.clk)

    def stop(self):
        self._task.cancel()
        self.tready.value = 0


class AxisMonitor(Monitor):
    """Records every handshake (tvalid & tready at a rising edge).

    Also checks the AXI4-Stream rules of :class:`scoreboards.protocol.AxisRule`: once
    ``tvalid`` is high, ``tvalid``, ``tdata`` and ``tlast``/``tuser``/``tkeep`` (those
    present) must not change until the handshake (reset excepted), and no X/Z on
    ``tvalid``/``tready`` once reset was seen; violations are counted in
    ``protocol_errors``."""

    def __init__(self, dut, prefix: str, clk, callback=None, reset=None):
        self.clk = clk
        self.reset = reset
        self.name = prefix
        self.tdata = getattr(dut, f"{prefix}_tdata")
        self.tvalid = getattr(dut, f"{prefix}_tvalid")
        self.tready = getattr(dut, f"{prefix}_tready")
        self.tlast = _opt(dut, f"{prefix}_tlast")
        self.rule = AxisRule(prefix)
        self.payload = [self.tdata] + [s for s in (_opt(dut, f"{prefix}_{f}") for f in ("tlast", "tuser", "tkeep"))
                                       if s is not None]
        self.cycles = 0
        self._logged = None
        self.times = []  # cycle index of every handshake (for throughput measurements)
        self.stall = 0   # consecutive cycles with tvalid high and tready low
        super().__init__(callback=callback)
        watch(self)

    def stall_status(self) -> str | None:
        if self.stall >= REPORT_STALL:
            return f"{self.name}: tvalid held {self.stall} cycles without tready ({len(self.times)} beats taken)"
        return None

    def __str__(self):
        return self.name

    @property
    def protocol_errors(self) -> int:
        return self.rule.errors

    async def _monitor_recv(self):
        while True:
            await RisingEdge(self.clk)
            await ReadOnly()
            self.cycles += 1
            if self.reset is not None and int(self.reset.value):
                self.rule.in_reset()  # reset may drop tvalid: exempt from the hold rule
                continue
            v = self.tvalid.value
            valid = int(v) if v.is_resolvable else None
            ready = self.tready.value
            ready = int(ready) if ready.is_resolvable else None
            self.rule.cycle(valid, ready, tuple(s.value for s in self.payload) if valid == 1 else None)
            if self.rule.errors and self.rule.messages and self.rule.messages[-1] is not self._logged:
                self._logged = self.rule.messages[-1]
                self.log.error("%s", self._logged)
            if valid == 1 and ready != 1:
                self.stall += 1
            else:
                self.stall = 0
            if valid == 1 and ready == 1:
                data = int(self.tdata.value)
                last = int(self.tlast.value) if self.tlast is not None else 0
                self.times.append(self.cycles)
                self._recv((data, last))
