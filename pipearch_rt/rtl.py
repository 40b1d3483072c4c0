"""The RTL back end: PipeArch-RT driving a simulated system under cocotb.

The DUT is a ``pipearch_system`` (units' register blocks at ``0x100*u`` of one
AXI4-Lite slave, one AXI4 master to memory) or a single ``pipearch_pu`` (one unit, its
block at 0: the same map).  Memory is a cocotbext-axi ``AxiRam`` on the master port,
the host a cocotbext-axi ``AxiLiteMaster``.  Host copies (placing a job, reading its
model) go straight to the RAM model and take no simulated time, as the shared host
memory of the paper's Xeon+FPGA does.

Completion of a START is found by polling each busy unit's STATUS every ``poll``
cycles; the event's cycle is the START cycle plus the unit's CYCLES register (the
cycles it was busy), so the poll period does not blur the measured run lengths (it
does delay the next dispatch, as a real host's polling would).
"""
from __future__ import annotations

import cocotb
from cocotb.simtime import get_sim_time
from cocotb.triggers import ClockCycles, ReadOnly, RisingEdge

from golden import pipearch_isa as I
from golden.pipearch_iss import Memory

from .backend import Backend, UnitEvent

SYS_UNITS, SYS_RD_BEATS, SYS_WR_BEATS = 0xF04, 0xF10, 0xF30


class RtlBackend(Backend):
    def __init__(self, dut, clk, axil, ram, cfg, units: int, *, clock_ns: float = 10.0, poll: int = 16,
                 axil_cycles: int = 10_000):
        self.dut, self.clk, self.axil, self.ram = dut, clk, axil, ram
        self.cfg, self.units = cfg, units
        self.clock_ns, self.poll = clock_ns, poll
        self.axil_cycles = axil_cycles
        self.t0 = self._cycle()
        self.busy = [None] * units          # start cycle of the START in flight
        self.rd_beats = 0
        self.wr_beats = 0
        cocotb.start_soon(self._monitor())

    def _cycle(self) -> int:
        return int(get_sim_time("ns") // self.clock_ns)

    @property
    def now(self) -> int:
        return self._cycle() - self.t0

    async def _monitor(self):
        d = self.dut
        while True:
            await RisingEdge(self.clk)
            await ReadOnly()
            if int(d.m_axi_rvalid.value) and int(d.m_axi_rready.value):
                self.rd_beats += 1
            if int(d.m_axi_wvalid.value) and int(d.m_axi_wready.value):
                self.wr_beats += 1

    async def _wr(self, addr, value):
        from scoreboards.waits import within
        await within(self.axil.write_dword(addr, value), self.axil_cycles,
                     f"s_axil: write 0x{addr:x} got no response")

    async def _rd(self, addr):
        from scoreboards.waits import within
        return await within(self.axil.read_dword(addr), self.axil_cycles,
                            f"s_axil: read 0x{addr:x} got no response")

    async def place(self, built):
        lo, hi = built.window
        self.ram.write(lo, bytes(built.image.data[lo:hi]))
        c = built.job.ctx_addr
        if not lo <= c < hi:
            self.ram.write(c, bytes(built.image.data[c:c + I.CTX_BYTES]))

    async def start(self, unit, built):
        b = 0x100 * unit
        await self._wr(b + I.REG_PROG_LO, built.job.prog_addr & 0xFFFFFFFF)
        await self._wr(b + I.REG_PROG_HI, built.job.prog_addr >> 32)
        await self._wr(b + I.REG_CTX_LO, built.job.ctx_addr & 0xFFFFFFFF)
        await self._wr(b + I.REG_CTX_HI, built.job.ctx_addr >> 32)
        await self._wr(b + I.REG_CTRL, I.CTRL_START)
        self.busy[unit] = self.now

    async def switch(self, unit):
        await self._wr(0x100 * unit + I.REG_CTRL, I.CTRL_SWITCH)

    async def wait(self, deadline):
        if deadline is None and not any(s is not None for s in self.busy):
            raise RuntimeError("wait() with no unit running and no deadline")
        while True:
            out = []
            for u in range(self.units):
                if self.busy[u] is None:
                    continue
                st = await self._rd(0x100 * u + I.REG_STATUS)
                if st & (I.ST_DONE | I.ST_ERROR) and not st & I.ST_BUSY:
                    err = await self._rd(0x100 * u + I.REG_ERROR)
                    cyc = await self._rd(0x100 * u + I.REG_CYCLES_LO)
                    status = "error" if st & I.ST_ERROR else ("suspended" if st & I.ST_SUSPENDED else
                                                              "finished" if st & I.ST_FINISHED else "error")
                    out.append(UnitEvent(u, status, err >> 8 & 0xFF, err & 0xFF,
                                         self.busy[u] + cyc, cyc))
                    self.busy[u] = None
            if out:
                return out
            now = self.now
            if deadline is not None and now >= deadline:
                return []
            step = self.poll if deadline is None else max(1, min(self.poll, deadline - now))
            await ClockCycles(self.clk, step)

    async def read(self, built):
        lo, hi = built.window
        m = Memory(hi, self.cfg.lanes)
        m.data[lo:hi] = memoryview(self.ram.read(lo, hi - lo))
        return m

    def traffic(self):
        """Bytes on the memory port (all units together, reported as unit 0's; per unit:
        :meth:`system_traffic`)."""
        lb = self.cfg.line_bytes
        return {"read_bytes": [self.rd_beats * lb] + [0] * (self.units - 1),
                "write_bytes": [self.wr_beats * lb] + [0] * (self.units - 1)}

    async def system_traffic(self):
        """Per-unit bytes from the system's RD_BEATS/WR_BEATS registers (pipearch_system)."""
        lb = self.cfg.line_bytes
        rd = [await self._rd(SYS_RD_BEATS + 4 * u) * lb for u in range(self.units)]
        wr = [await self._rd(SYS_WR_BEATS + 4 * u) * lb for u in range(self.units)]
        return {"read_bytes": rd, "write_bytes": wr}
