"""Flow-pattern coverage of AXI4-Stream ports for cores that are not start/busy/done
subroutines (``verif.funcov_tb.SubroutineObserver`` does the same for those).

:class:`FlowObserver` samples, at the falling edge (what the DUT sees at the next rising
edge), the point ``<stream>_flow`` declared by ``verif.funcov_tb.declare_flow``:

* ``transfer``: a handshake; ``back_to_back``: handshakes in consecutive cycles;
* input ``bubble`` / output ``idle``: no tvalid inside a packet (after a beat without
  tlast; streams without tlast: after any beat, until the stream's next beat);
* input ``stall`` / output ``backpressure``: tvalid without tready; ``*_4plus``: four
  or more such cycles in a row.

Each (stream, label) is sampled once per observer, and the observer stops when it has
seen every label.  While no stream has tvalid high and no idle cycle inside a packet is
still to be seen, it sleeps until some tvalid rises instead of waking every cycle (load
ports used only between jobs cost next to nothing).
"""
from __future__ import annotations

import cocotb
from cocotb.triggers import FallingEdge, First, ReadOnly, RisingEdge

from verif.funcov import enabled
from verif.funcov_tb import FLOW_IN, FLOW_OUT


class FlowObserver:
    def __init__(self, cov, dut, inputs=(), outputs=(), clk=None, rst=None):
        self.cov = cov
        self.clk = clk if clk is not None else dut.clk
        self.rst = rst if rst is not None else getattr(dut, "rst", None)
        self.streams = []
        for names, out in ((inputs, False), (outputs, True)):
            for s in names:
                last = getattr(dut, f"{s}_tlast") if hasattr(dut, f"{s}_tlast") else None
                self.streams.append((s, getattr(dut, f"{s}_tvalid"), getattr(dut, f"{s}_tready"), last, out))
        self.todo = {(s, lb) for s, *_, out in self.streams for lb in (FLOW_OUT if out else FLOW_IN)}
        self.task = cocotb.start_soon(self._watch()) if enabled() and self.streams else None

    def _hit(self, s, label):
        if (s, label) in self.todo:
            self.todo.discard((s, label))
            self.cov.sample(f"{s}_flow", label)

    async def _watch(self):
        run = {s[0]: 0 for s in self.streams}
        prev = {s[0]: False for s in self.streams}
        inpkt = {s[0]: False for s in self.streams}
        fe, ro = FallingEdge(self.clk), ReadOnly()
        while self.todo:
            await fe
            await ro
            if self.rst is not None and (not self.rst.value.is_resolvable or int(self.rst.value)):
                for s in run:
                    run[s], prev[s], inpkt[s] = 0, False, False
                continue
            quiet = True
            for s, tv, tr, tl, out in self.streams:
                v = tv.value.is_resolvable and int(tv.value)
                if v or (inpkt[s] and (s, "idle" if out else "bubble") in self.todo):
                    quiet = False
                r = tr.value.is_resolvable and int(tr.value)
                if v and r:
                    self._hit(s, "transfer")
                    if prev[s]:
                        self._hit(s, "back_to_back")
                    prev[s], run[s] = True, 0
                    inpkt[s] = not (tl is not None and tl.value.is_resolvable and int(tl.value))
                    continue
                prev[s] = False
                if v:
                    run[s] += 1
                    self._hit(s, "backpressure" if out else "stall")
                    if run[s] >= 4:
                        self._hit(s, "backpressure_4plus" if out else "stall_4plus")
                else:
                    run[s] = 0
                    if inpkt[s]:
                        self._hit(s, "idle" if out else "bubble")
            if quiet and self.todo:
                for s in prev:
                    prev[s], run[s] = False, 0
                await First(*[RisingEdge(tv) for _, tv, *_ in self.streams])
