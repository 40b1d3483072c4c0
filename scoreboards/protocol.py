"""Bus protocol checkers shared by every testbench: AXI4-Stream, AXI4 master, AXI4-Lite slave.

Two layers:

* **rules** (:class:`AxisRule`, :class:`Axi4MasterRule`, :class:`AxilSlaveRule`): plain
  Python, fed one observation per clock cycle and channel ``(valid, ready, payload)``;
  ``valid``/``ready`` are 0, 1 or ``None`` (X/Z).  Each violation is counted in
  ``errors`` and described in ``messages``; :meth:`final` adds the end-of-test rules
  (every request answered).  Simulator-free, so the rules are unit-tested directly.
* **the cocotb side** (:class:`ProtocolChecker`, :func:`attach_all`,
  :func:`guard_tests`): one coroutine per toplevel samples every port each rising edge
  (ReadOnly phase, so one sample is the state of one clock cycle) and feeds the rules.
  :func:`attach_all` finds the ports by name (``s_axis_<x>_t*``/``m_axis_<x>_t*``,
  ``m_axi_*``, ``s_axil_*``); :func:`guard_tests` wraps every cocotb test of a test
  module so that the checkers are attached before the test body runs and the
  violation count is asserted zero when it returns.

Rules (AMBA AXI4 / AXI4-Stream):

* AXI4-Stream: once ``tvalid`` is high, ``tvalid`` stays high and ``tdata``, ``tlast``,
  ``tuser``, ``tkeep``, ``tstrb``, ``tid``, ``tdest`` (those present) keep their values
  until ``tready``; no X/Z on ``tvalid``/``tready`` once a reset has been seen.
* AXI4 master: the same hold rule on AR, AW, W (and on the slave's R and B); AxBURST
  not reserved; INCR at most 256 beats (``max_beats`` when the core has a lower limit),
  FIXED at most 16, WRAP 2/4/8/16 beats on an aligned address; AxSIZE not wider than
  the data bus; an INCR burst does not cross a 4 KiB boundary; WLAST on the last beat of
  each write burst and only there (W beats may precede their AW, as the spec allows;
  they are matched in AW order); BVALID only after both the AW and the last W of a
  burst were accepted, one B per burst; RVALID only for an accepted AR, RLAST on its
  last beat; every burst answered by the end of the test; no X/Z on any VALID/READY.
* AXI4-Lite slave: the hold rule on all five channels (so BRESP, RDATA, RRESP stay
  put until accepted); BVALID only once an AW and a W are both accepted and not yet
  answered, RVALID only for an accepted, unanswered AR, i.e. exactly one response per
  request, in request order; the response code each request must get
  (``expect_resp(kind, addr) -> code``, default: OKAY, as every datasheet here says);
  every request answered by the end of the test; no X/Z on any VALID/READY.

Reset (``rst`` high, or ``rst_n``/``aresetn`` low) clears every pending state.
"""
from __future__ import annotations

import functools
import re
from collections import deque

PAGE = 4096
OKAY, EXOKAY, SLVERR, DECERR = 0, 1, 2, 3
MAX_MESSAGES = 20


def to_int(x):
    """int of a sampled value, ``None`` when it holds X/Z (or is None)."""
    if x is None:
        return None
    if isinstance(x, int):
        return x
    s = str(x)
    if s and all(c in "01" for c in s):
        return int(s, 2)
    try:
        return int(x)
    except (ValueError, TypeError):
        return None


class Rule:
    """Base: a named violation counter."""

    def __init__(self, name: str):
        self.name = name
        self.errors = 0
        self.messages: list[str] = []
        self.handshakes = 0
        self.armed = False      # X/Z checks on VALID/READY once a reset has been seen
        self.cycle_no = 0

    def _err(self, msg: str):
        self.errors += 1
        if len(self.messages) < MAX_MESSAGES:
            self.messages.append(f"{self.name} (cycle {self.cycle_no}): {msg}")

    def _xcheck(self, ch: str, valid, ready):
        if self.armed:
            if valid is None:
                self._err(f"{ch}: VALID is X/Z after reset")
            if ready is None:
                self._err(f"{ch}: READY is X/Z after reset")

    def in_reset(self):
        """Called for every cycle with reset asserted: arms the X/Z checks, drops pending state."""
        self.armed = True
        self._clear()

    def _clear(self):
        pass

    def final(self):
        """End-of-test rules (default: none)."""

    def summary(self) -> str:
        return f"{self.name}: {self.handshakes} handshakes, {self.errors} violations"


class _Hold:
    """Hold rule of one channel: once VALID is high, VALID and the payload stay until READY."""

    def __init__(self, rule: Rule, ch: str):
        self.rule, self.ch = rule, ch
        self.pend = None
        self.fresh = False      # VALID is high this cycle and was not held from the previous one
        self.waived = 0         # declared deliberate withdrawals still allowed (see waive_withdraw)

    def step(self, valid, ready, payload) -> bool:
        """Returns True for a handshake this cycle."""
        p = self.pend
        if p is not None:
            if valid != 1 and self.waived:
                self.waived -= 1
            elif valid != 1:
                self.rule._err(f"{self.ch}: VALID dropped before the handshake")
            elif payload != p:
                self.rule._err(f"{self.ch}: payload changed while VALID && !READY "
                               f"({_fmt(p)} -> {_fmt(payload)})")
        self.fresh = valid == 1 and p is None
        hs = valid == 1 and ready == 1
        self.pend = payload if (valid == 1 and ready != 1) else None
        return hs


def _fmt(payload):
    return "(" + ", ".join(_hexs(x) for x in payload) + ")" if isinstance(payload, tuple) else _hexs(payload)


def _hexs(x):
    v = to_int(x)
    return f"0x{v:x}" if v is not None else str(x)


# ------------------------------------------------------------------ AXI4-Stream
class AxisRule(Rule):
    """AXI4-Stream: payload = tuple of (tdata, tlast, tuser, tkeep, ...) present on the port."""

    def __init__(self, name: str):
        super().__init__(name)
        self.h = _Hold(self, "t")

    def _clear(self):
        self.h.pend = None

    def cycle(self, valid, ready, payload):
        self.cycle_no += 1
        self._xcheck("t", valid, ready)
        if self.h.step(valid, ready, payload):
            self.handshakes += 1


# ------------------------------------------------------------------ AXI4 master
def burst_errors(addr: int, beats: int, size: int, kind: int, data_bytes: int,
                 max_beats: int = 256) -> list[str]:
    """What is illegal about one AR/AW (AXI4 A3.4): the reserved burst type, a beat wider
    than the data bus, FIXED > 16 beats, WRAP not 2/4/8/16 beats or unaligned, INCR
    longer than ``max_beats`` (the core's MAX_BURST, at most 256) or crossing 4 KiB."""
    out = []
    nb = 1 << size
    if nb > data_bytes:
        out.append(f"AxSIZE {nb} bytes wider than the {data_bytes}-byte data bus")
    if kind == 3:
        out.append("AxBURST=3 is reserved")
    elif kind == 0 and beats > 16:
        out.append(f"FIXED burst of {beats} beats (> 16)")
    elif kind == 2:
        if beats not in (2, 4, 8, 16):
            out.append(f"WRAP burst of {beats} beats (must be 2, 4, 8 or 16)")
        if addr % nb:
            out.append(f"WRAP burst address 0x{addr:x} not aligned to the size {nb}")
    elif kind == 1:
        if beats > min(max_beats, 256):
            out.append(f"INCR burst of {beats} beats > {min(max_beats, 256)} (MAX_BURST={max_beats})")
        start = addr - addr % nb
        if addr // PAGE != (start + beats * nb - 1) // PAGE:
            out.append(f"burst 0x{addr:x} x {beats} beats x {nb} bytes crosses a 4 KiB boundary")
    return out


class Axi4MasterRule(Rule):
    """AXI4 master port (the DUT issues AR/AW/W; the testbench's memory answers R/B).

    Payloads: ``ar``/``aw`` = (addr, len, size, burst, id[, ...more fields held]);
    ``w`` = (data, strb, last); ``r`` = (id, data, resp, last); ``b`` = (id, resp).
    ``data_bytes`` is the bus width in bytes; ``max_beats`` a core-specific INCR limit."""

    CH = ("ar", "aw", "w", "r", "b")

    def __init__(self, name: str, data_bytes: int, max_beats: int = 256):
        super().__init__(name)
        self.db = data_bytes
        self.max_beats = max_beats
        self.h = {ch: _Hold(self, ch) for ch in self.CH}
        self.count = dict.fromkeys(self.CH, 0)
        self._clear()

    def _clear(self):
        for h in self.h.values():
            h.pend = None
        self.reads = {}             # id -> deque of [beats left] of accepted ARs
        self.aw_beats = deque()     # (beats, id) of accepted AWs whose W burst has not ended
        self.w_early = deque()      # beat counts of W bursts that ended before their AW
        self.wcnt = 0               # beats of the current W burst
        self.b_due = {}             # id -> bursts with AW and WLAST accepted, no B yet

    def _burst(self, ch, pay):
        addr, ln, size, kind, bid = (to_int(x) for x in pay[:5])
        if None in (addr, ln, size, kind):
            self._err(f"{ch}: X/Z in address/len/size/burst at the handshake")
            return None
        for m in burst_errors(addr, ln + 1, size, kind, self.db, self.max_beats):
            self._err(f"{ch}: {m}")
        return ln + 1, (bid or 0)

    def cycle(self, obs: dict):
        """``obs[ch] = (valid, ready, payload)`` for the channels present."""
        self.cycle_no += 1
        hs = {}
        for ch in self.CH:
            if ch not in obs:
                continue
            v, r, pay = obs[ch]
            self._xcheck(ch, v, r)
            hs[ch] = self.h[ch].step(v, r, pay)
        # responses first: they may only answer requests of earlier cycles
        if "r" in obs:
            v, _, pay = obs["r"]
            rid = (to_int(pay[0]) or 0) if v == 1 else 0
            if v == 1 and self.h["r"].fresh and not self.reads.get(rid):
                self._err(f"r: RVALID (id {rid}) with no outstanding read burst")
            if hs["r"]:
                self.count["r"] += 1
                self.handshakes += 1
                q = self.reads.get(rid)
                last = to_int(pay[3])
                if q:
                    q[0][0] -= 1
                    if q[0][0] == 0:
                        if last != 1:
                            self._err(f"r: RLAST={last} on the last beat of a read burst")
                        q.popleft()
                    elif last == 1:
                        self._err(f"r: RLAST on a beat before the last ({q[0][0]} beats left)")
                        q.popleft()
        if "b" in obs:
            v, _, pay = obs["b"]
            bid = (to_int(pay[0]) or 0) if v == 1 else 0
            if v == 1 and self.h["b"].fresh and not self.b_due.get(bid):
                self._err(f"b: BVALID (id {bid}) before the AW and the last W of a burst were accepted")
            if hs["b"]:
                self.count["b"] += 1
                self.handshakes += 1
                if self.b_due.get(bid):
                    self.b_due[bid] -= 1
        if hs.get("ar"):
            self.count["ar"] += 1
            self.handshakes += 1
            got = self._burst("ar", obs["ar"][2])
            if got:
                self.reads.setdefault(got[1], deque()).append([got[0]])
        if hs.get("aw"):
            self.count["aw"] += 1
            self.handshakes += 1
            got = self._burst("aw", obs["aw"][2])
            if got:
                n, wid = got
                if self.w_early:
                    nw = self.w_early.popleft()
                    if nw != n:
                        self._err(f"w: burst of {nw} beats (WLAST sent before its AW) but AWLEN gives {n}")
                    self.b_due[wid] = self.b_due.get(wid, 0) + 1
                else:
                    self.aw_beats.append((n, wid))
        if hs.get("w"):
            self.count["w"] += 1
            self.handshakes += 1
            last = to_int(obs["w"][2][2])
            self.wcnt += 1
            if self.aw_beats:
                n, wid = self.aw_beats[0]
                if last == 1 or self.wcnt >= n:
                    if last != 1:
                        self._err(f"w: WLAST missing on beat {self.wcnt} of a {n}-beat burst")
                    elif self.wcnt != n:
                        self._err(f"w: WLAST on beat {self.wcnt} of a {n}-beat burst")
                    self.aw_beats.popleft()
                    self.wcnt = 0
                    self.b_due[wid] = self.b_due.get(wid, 0) + 1
            elif last == 1:
                self.w_early.append(self.wcnt)
                self.wcnt = 0
            elif self.wcnt > 256:
                self._err("w: more than 256 beats without WLAST")
                self.wcnt = 0

    def final(self):
        rd = sum(len(q) for q in self.reads.values())
        if rd:
            self._err(f"{rd} read burst(s) never completed (R beats missing)")
        if self.aw_beats or self.wcnt:
            self._err(f"{len(self.aw_beats)} write burst(s) with W beats missing")
        if self.w_early:
            self._err(f"{len(self.w_early)} W burst(s) whose AW never came")
        bd = sum(self.b_due.values())
        if bd:
            self._err(f"{bd} write burst(s) never got a B response")


# ------------------------------------------------------------------ AXI4-Lite slave
class AxilSlaveRule(Rule):
    """AXI4-Lite slave port (the testbench is the master).

    Payloads: ``aw``/``ar`` = (addr, ...), ``w`` = (data, strb), ``b`` = (resp,),
    ``r`` = (data, resp).  ``expect_resp(kind, addr)`` gives the response code a request
    must get (``kind`` "write"/"read"); default OKAY for every request."""

    CH = ("aw", "w", "b", "ar", "r")

    def __init__(self, name: str, expect_resp=None):
        super().__init__(name)
        self.expect_resp = expect_resp or (lambda kind, addr: OKAY)
        self.h = {ch: _Hold(self, ch) for ch in self.CH}
        self.count = dict.fromkeys(self.CH, 0)
        self._clear()

    def _clear(self):
        for h in self.h.values():
            h.pend = None
        self.aw = deque()       # addresses of accepted AWs not yet paired with a W
        self.nw = 0             # accepted Ws not yet paired with an AW
        self.wr = deque()       # complete write requests (addr) awaiting B, in order
        self.rd = deque()       # accepted ARs awaiting R, in order

    def cycle(self, obs: dict):
        self.cycle_no += 1
        hs = {}
        for ch in self.CH:
            v, r, pay = obs[ch]
            self._xcheck(ch, v, r)
            hs[ch] = self.h[ch].step(v, r, pay)
        v, _, pay = obs["b"]
        if v == 1 and self.h["b"].fresh and not self.wr:
            self._err("b: BVALID with no write request (AW and W accepted) awaiting a response")
        if hs["b"]:
            self.count["b"] += 1
            self.handshakes += 1
            resp = to_int(pay[0])
            if self.wr:
                addr = self.wr.popleft()
                want = self.expect_resp("write", addr)
                if resp != want:
                    self._err(f"b: BRESP={resp} for the write to 0x{addr:x}, expected {want}")
        v, _, pay = obs["r"]
        if v == 1 and self.h["r"].fresh and not self.rd:
            self._err("r: RVALID with no read request awaiting a response")
        if hs["r"]:
            self.count["r"] += 1
            self.handshakes += 1
            resp = to_int(pay[1])
            if self.rd:
                addr = self.rd.popleft()
                want = self.expect_resp("read", addr)
                if resp != want:
                    self._err(f"r: RRESP={resp} for the read of 0x{addr:x}, expected {want}")
        if hs["ar"]:
            self.count["ar"] += 1
            self.handshakes += 1
            self.rd.append(to_int(obs["ar"][2][0]) or 0)
        if hs["aw"]:
            self.count["aw"] += 1
            self.handshakes += 1
            self.aw.append(to_int(obs["aw"][2][0]) or 0)
        if hs["w"]:
            self.count["w"] += 1
            self.handshakes += 1
            self.nw += 1
        while self.aw and self.nw:
            self.wr.append(self.aw.popleft())
            self.nw -= 1

    def final(self):
        if self.wr:
            self._err(f"{len(self.wr)} write request(s) never got a B response")
        if self.rd:
            self._err(f"{len(self.rd)} read request(s) never got an R response")


# ------------------------------------------------------------------ cocotb side
def _sig(dut, name):
    try:
        return getattr(dut, name)
    except AttributeError:
        return None


def _bit(sig):
    """0/1 of a 1-bit signal, None for X/Z."""
    s = str(sig.value)
    return int(s) if s in ("0", "1") else None


class _AxisPort:
    FIELDS = ("tdata", "tlast", "tuser", "tkeep", "tstrb", "tid", "tdest")

    def __init__(self, dut, prefix):
        self.rule = AxisRule(prefix)
        self.valid = getattr(dut, f"{prefix}_tvalid")
        self.ready = getattr(dut, f"{prefix}_tready")
        self.pay = [s for s in (_sig(dut, f"{prefix}_{f}") for f in self.FIELDS) if s is not None]

    def sample(self):
        v = _bit(self.valid)
        pay = tuple(s.value for s in self.pay) if v == 1 else None
        self.rule.cycle(v, _bit(self.ready), pay)


class _AxiPort:
    FIELDS = {"ar": ("addr", "len", "size", "burst", "id", "lock", "cache", "prot", "qos"),
              "aw": ("addr", "len", "size", "burst", "id", "lock", "cache", "prot", "qos"),
              "w": ("data", "strb", "last"), "r": ("id", "data", "resp", "last"), "b": ("id", "resp")}

    def __init__(self, dut, prefix, max_beats=256):
        self.chans = {}
        for ch, fields in self.FIELDS.items():
            v = _sig(dut, f"{prefix}_{ch}valid")
            if v is None:
                continue
            self.chans[ch] = (v, getattr(dut, f"{prefix}_{ch}ready"),
                              [_sig(dut, f"{prefix}_{ch}{f}") for f in fields])
        wd = _sig(dut, f"{prefix}_wdata")
        wd = wd if wd is not None else _sig(dut, f"{prefix}_rdata")
        self.rule = Axi4MasterRule(prefix, len(wd) // 8, max_beats)

    def sample(self):
        obs = {}
        for ch, (v, r, pay) in self.chans.items():
            vv = _bit(v)
            obs[ch] = (vv, _bit(r), tuple(s.value if s is not None else 0 for s in pay) if vv == 1 else None)
        self.rule.cycle(obs)


class _AxilPort:
    FIELDS = {"aw": ("addr", "prot"), "w": ("data", "strb"), "b": ("resp",), "ar": ("addr", "prot"),
              "r": ("data", "resp")}

    def __init__(self, dut, prefix, expect_resp=None):
        self.chans = {}
        for ch, fields in self.FIELDS.items():
            self.chans[ch] = (getattr(dut, f"{prefix}_{ch}valid"), getattr(dut, f"{prefix}_{ch}ready"),
                              [_sig(dut, f"{prefix}_{ch}{f}") for f in fields])
        self.rule = AxilSlaveRule(prefix, expect_resp)

    def sample(self):
        obs = {}
        for ch, (v, r, pay) in self.chans.items():
            vv = _bit(v)
            obs[ch] = (vv, _bit(r), tuple(s.value if s is not None else 0 for s in pay) if vv == 1 else None)
        self.rule.cycle(obs)


# an optional instance prefix (``pu0_m_axi``, ``n1_s_axis_w``) is part of the port name
_AXIS = re.compile(r"^((?:\w+_)?[sm]_axis(?:_\w+)?)_tvalid$")
_AXI = re.compile(r"^((?:\w+_)?m_axi(?:_\w+)?)_(?:ar|aw)valid$")
_AXIL = re.compile(r"^((?:\w+_)?s_axil(?:_\w+)?)_awvalid$")


def find_ports(dut) -> dict:
    """Bus ports of a toplevel by name: {"axis": [prefix], "axi": [prefix], "axil": [prefix]}.

    ``<x>s_axis<_y>_tvalid`` (with ``_tready``) is AXI4-Stream, ``<x>s_axil<_y>_awvalid`` an
    AXI4-Lite slave, ``<x>m_axi<_y>_arvalid``/``_awvalid`` an AXI4 master."""
    names = [str(k) for k in dut._keys()]
    out = {"axis": set(), "axi": set(), "axil": set()}
    for n in names:
        m = _AXIS.match(n)
        if m and f"{m.group(1)}_tready" in names:
            out["axis"].add(m.group(1))
            continue
        m = _AXIL.match(n)
        if m:
            out["axil"].add(m.group(1))
            continue
        m = _AXI.match(n)
        if m:
            out["axi"].add(m.group(1))
    return {k: sorted(v) for k, v in out.items()}


_active: list = []


def active():
    """The :class:`ProtocolChecker` of the running test (attached by :func:`guard_tests`), or None."""
    return _active[-1] if _active else None


def waive_withdraw(port: str, times: int = 1):
    """Declare that the test withdraws an offered AXI4-Stream beat on ``port`` on purpose
    (stimulus that checks a rejected request takes no data): the next ``times`` VALID
    drops before a handshake on that port are not violations.  Nothing else is waived."""
    pc = active()
    if pc is None:
        return
    for p in pc.ports:
        if isinstance(p, _AxisPort) and p.rule.name == port:
            p.rule.h.waived += times
            return
    raise KeyError(f"no AXI4-Stream port {port} under the protocol checker")


class ProtocolChecker:
    """Samples every attached port once per clock cycle (after the rising edge, ReadOnly)."""

    def __init__(self, dut, clk=None, reset=None, reset_active_low: bool | None = None):
        import cocotb
        self.dut = dut
        self.clk = clk if clk is not None else dut.clk
        if reset is None:
            for n, low in (("rst", False), ("rst_n", True), ("aresetn", True)):
                reset = _sig(dut, n)
                if reset is not None:
                    reset_active_low = low
                    break
        self.reset = reset
        self.low = bool(reset_active_low)
        self.ports = []
        self.cycles = 0
        self._task = cocotb.start_soon(self._run())

    def add_axis(self, prefix, scope=None):
        self.ports.append(_AxisPort(scope if scope is not None else self.dut, prefix))
        return self._named(self.ports[-1].rule, scope)

    def add_axi_master(self, prefix="m_axi", max_beats=256, scope=None):
        self.ports.append(_AxiPort(scope if scope is not None else self.dut, prefix, max_beats))
        return self._named(self.ports[-1].rule, scope)

    def add_axil_slave(self, prefix="s_axil", expect_resp=None, scope=None):
        self.ports.append(_AxilPort(scope if scope is not None else self.dut, prefix, expect_resp))
        return self._named(self.ports[-1].rule, scope)

    @staticmethod
    def _named(rule, scope):
        if scope is not None:
            rule.name = f"{scope._name}.{rule.name}"
        return rule

    @property
    def rules(self):
        return [p.rule for p in self.ports]

    async def _run(self):
        from cocotb.triggers import ReadOnly, RisingEdge
        edge = RisingEdge(self.clk)
        ro = ReadOnly()
        while True:
            await edge
            await ro
            self.cycles += 1
            if self.reset is not None:
                r = _bit(self.reset)
                if r is None or r == (0 if self.low else 1):
                    for p in self.ports:
                        p.rule.in_reset()
                    continue
            for p in self.ports:
                p.sample()

    @property
    def errors(self) -> int:
        return sum(r.errors for r in self.rules)

    def stop(self):
        self._task.cancel()

    def report(self) -> str:
        return "; ".join(r.summary() for r in self.rules)

    def assert_clean(self, final: bool = True):
        """Fail when any rule was broken (with ``final``: also every request answered)."""
        self.stop()
        if final:
            for r in self.rules:
                r.final()
        msgs = [m for r in self.rules for m in r.messages]
        assert self.errors == 0, (f"{self.errors} bus protocol violation(s): " + " | ".join(msgs)
                                  + f" [{self.report()}]")
        return self.report()


def attach_all(dut, max_beats: int | None = None, axil_resp=None, instances: bool = True,
               **kw) -> ProtocolChecker:
    """A :class:`ProtocolChecker` on every AXI4-Stream, AXI4 master and AXI4-Lite slave
    port of ``dut`` (found by name) and, with ``instances``, of the module instances
    directly under it."""
    pc = ProtocolChecker(dut, **kw)
    top = find_ports(dut)
    scopes = [(None, top)]
    if instances:
        # the cores instantiated by a composed testbench's wrapper (one level down): their
        # ports carry the internal streams between cores; a port the wrapper passes out
        # under an instance prefix (pu0_m_axi for u0.m_axi) is checked once, at the top
        names = [p for v in top.values() for p in v]
        for h in _instances(dut):
            found = find_ports(h)
            for k in found:
                found[k] = [p for p in found[k] if not any(n.endswith("_" + p) for n in names)]
            scopes.append((h, found))
    for scope, ports in scopes:
        for p in ports["axis"]:
            pc.add_axis(p, scope)
        for p in ports["axi"]:
            pc.add_axi_master(p, max_beats or 256, scope)
        for p in ports["axil"]:
            pc.add_axil_slave(p, axil_resp, scope)
    return pc


def _instances(dut):
    """Module instances directly under ``dut`` that have a ``clk`` (cores of a wrapper)."""
    from cocotb.handle import HierarchyObject
    out = []
    try:
        children = list(dut._values())
    except Exception:  # pragma: no cover - a simulator without hierarchy iteration
        return out
    for h in children:
        if isinstance(h, HierarchyObject) and _sig(h, "clk") is not None:
            out.append(h)
    return out


def _params_max_beats():
    import json
    import os
    try:
        p = json.loads(os.environ.get("DUT_PARAMS", "{}"))
        return int(p.get("MAX_BURST", p.get("MAXBURST", 256)))
    except (ValueError, TypeError, AttributeError):
        return 256


def guard_tests(namespace: dict, **attach_kw) -> int:
    """Wrap every cocotb test in ``namespace`` (a test module's ``globals()``): the
    checkers of :func:`attach_all` are attached before the test body runs, and when it
    returns, every rule (end-of-test rules included) must have zero violations.  An
    INCR burst limit is taken from the DUT's ``MAX_BURST`` (``MAXBURST``) parameter when
    it has one.
    Returns the number of tests wrapped."""
    from cocotb._decorators import TestGenerator

    n = 0
    for obj in list(namespace.values()):
        if not isinstance(obj, TestGenerator) or getattr(obj.func, "_protocol_guarded", False):
            continue
        inner = obj.func

        @functools.wraps(inner)
        async def guarded(dut, *args, _inner=inner, **kwargs):
            kw = dict(attach_kw)
            kw.setdefault("max_beats", _params_max_beats())
            pc = attach_all(dut, **kw)
            dut._log.info("protocol checkers on %s", ", ".join(r.name for r in pc.rules) or "no bus port")
            _active.append(pc)
            try:
                await _inner(dut, *args, **kwargs)
            finally:
                _active.remove(pc)
            dut._log.info("protocol: %s", pc.assert_clean())

        guarded._protocol_guarded = True
        obj.func = guarded
        n += 1
    return n
