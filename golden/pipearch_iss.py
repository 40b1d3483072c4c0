"""Instruction-set simulator of the PipeArch-PU (spec: :mod:`golden.pipearch_isa`).

Quick use::

    from golden.pipearch_asm import PUConfig
    from golden.pipearch_iss import Machine, Memory
    cfg = PUConfig(lanes=4, nregions=6, depth=1024, amem_depth=256)
    mem = Memory(1 << 20, cfg.lanes)
    mem.write_bytes(prog_addr, assembled.image)          # program image
    mem.write_words(ctx_addr, [0] * 32)                  # fresh context
    m = Machine(cfg, mem)
    r = m.start(prog_addr, ctx_addr)                     # runs to Done/Error
    r.status        # "finished" | "suspended" | "error"
    r.err_code, r.err_pc, r.pc_trace, r.regs, r.instr_count, r.events

Context switches: ``m.request_switch()`` sets ``CTRL.SWITCH`` (call it before
``start`` or from ``on_step``/a subroutine hook); ``start(..., switch_at_yield=k)``
sets it just before the ``k``-th YIELD of this run (k = 1 is the first).  A suspended
run is continued by ``start`` again with the same context address -- on the same
Machine or on another one (migration), the memory holding what the host copied.

What the machine does (each item is the spec; choices the spec leaves open are
marked *ISS choice*):

* Start: PROG_ADDR alignment (``max(32, LINE_BYTES)``, else ``E_HEADER`` at PC 0),
  header (count 1..255, StoreContext/LoadContext PC ``< N`` or ``0xFF``, words 3..7 zero,
  else ``E_HEADER``), the N instructions, then CTX_ADDR alignment and the context
  (``E_CONTEXT`` for a bad alignment, a state other than 0/1, or a saved PC word above
  0xFF).  A memory range error on these reads is ``E_AXI`` at PC 0.  Instructions are
  checked when decoded, not at load.
* Fetch: PC 0xFF ends the program (or the StoreContext group); PC >= N is
  ``E_PC_RANGE``.  ``pc_trace`` lists every PC fetched (so the faulting one is last for
  a decode error; not listed for ``E_PC_RANGE``).
* Decode: :func:`golden.pipearch_asm.check` with the current registers (effective
  access words) -- a fault stops with that code and PC (lowest code wins).
* Execute: control opcodes as specified; subroutine instructions run to completion at
  issue (every read channel is read, the result computed, then every write channel
  written), so NB and BLOCK change nothing here (BLOCK is recorded as an event).
* YIELD with the switch flag set (outside a context group): clear the flag, write the
  context ``{1, PC+1, R}``, then the StoreContext group (or Done).  *ISS choice*:
  inside a StoreContext/LoadContext group YIELD is a NOP.  A switch flag still set
  when the program finishes stays set (it is consumed by the next YIELD, even of a
  later run).
* Reaching 0xFF: in the StoreContext group -> Done/suspended (context already
  written); otherwise the context ``{2, 0xFF, R}`` is written -> finished.  *ISS
  choice*: this includes reaching 0xFF inside a LoadContext group.
* Errors write no context.  A failing context write is ``E_AXI`` at the YIELD's PC
  (0xFF at the finish); a failing program/context read is ``E_AXI`` at PC 0.
* Register fields ra/rb/rd an opcode does not use are ignored (not checked).

Subroutines and the stub hook
=============================

Every subroutine instruction becomes a :class:`SubCall` (opcode, iterations, NB, the
effective access word and region of each channel, the effective main-memory line
address of LOAD/STORE, flags, w6/w7, the amem target of LOAD amem mode) passed to
:meth:`Machine.execute_subroutine`.  By default that runs the golden models
(:mod:`golden.pipearch_ops` on :class:`golden.pipearch_region.Region` objects, one per
region, plus one address memory of ``AMEM_DEPTH`` entries per (region, global
channel)).  ``Machine(cfg, mem, subroutine_hook=f)`` replaces it: ``f(machine, call)``
is called instead and may return ``None`` (done) or an error code (e.g.
``pipearch_isa.E_AXI``) which stops the machine at that instruction's PC; it can call
``machine.golden_subroutine(call)`` to run the golden behaviour as well.  Use this to
test the RTL register machine with stub subroutines: the control flow, register file,
PC trace, context words and error codes are independent of what the hook does.

Data semantics of the golden subroutines (LANES words per line, signed Q32.F words):

* LOAD: ``length*iterations`` contiguous lines from line address ``w6 (+R[rb])``
  (mod 2^32) are written with the channel-0 access word to every region of the mask
  (ascending).  Amem mode: ``iterations`` lines, their words lane 0 first, go to
  the address memory, each entry keeping the low log2(DEPTH) bits of its word.
* STORE: the lines read with the channel-0 access word go to ``w6 (+R[rb])``.
* Read channel ``g`` (global id) of a region is read channel
  ``READ_CHANNELS.index(g)`` of its Region model; a channel with use-address-memory
  uses the address memory of (that region, ``g``).
* Scalars are lane 0 of a line (MULTSUB's ``s`` lane 1 with its flag); scalar lines
  written have the other lanes 0; SCALAR SCD mode writes lane 0 ``x - mu`` and lane 1
  ``mu`` (LANES >= 2).
* A FIFO that a sequential run would find empty/full (the hardware would stall
  forever) raises :class:`Deadlock`; too many instructions raise :class:`StepLimit`.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from . import pipearch_isa as I
from . import pipearch_ops as ops
from .fixedpoint import sigmoid_table
from .pipearch_asm import MASK32, PUConfig, _s32, check, decode, effective_access
from .pipearch_region import Region, decode_access

N_GLOBAL = len(I.GLOBAL_CHANNELS)


class Deadlock(RuntimeError):
    """A FIFO access that the hardware would wait on forever."""


class StepLimit(RuntimeError):
    """The run exceeded ``max_steps`` instructions."""


class AxiError(Exception):
    """A memory access outside the simulated memory (-> ``E_AXI``)."""


# ---------------------------------------------------------------------------------
# Main memory
# ---------------------------------------------------------------------------------
class Memory:
    """Byte-addressed little-endian main memory (a NumPy uint8 array ``data``).

    Byte helpers take byte addresses; ``*_lines`` helpers take line addresses
    (``LINE_BYTES = 4*lanes``).  Words are 32-bit two's complement; reads return
    int64 (signed by default)."""

    def __init__(self, size: int, lanes: int):
        self.data = np.zeros(int(size), dtype=np.uint8)
        self.lanes = int(lanes)
        self.line_bytes = 4 * self.lanes

    @property
    def size(self) -> int:
        return len(self.data)

    def copy(self) -> "Memory":
        m = Memory(0, self.lanes)
        m.data = self.data.copy()
        return m

    def _range(self, addr, n):
        if addr < 0 or n < 0 or addr + n > len(self.data):
            raise AxiError(f"access [{addr:#x}, {addr + n:#x}) outside memory of {len(self.data):#x} bytes")

    def write_bytes(self, addr: int, b) -> None:
        b = np.frombuffer(bytes(b), dtype=np.uint8)
        self._range(addr, len(b))
        self.data[addr:addr + len(b)] = b

    def read_bytes(self, addr: int, n: int) -> bytes:
        self._range(addr, n)
        return self.data[addr:addr + n].tobytes()

    def write_words(self, addr: int, words) -> None:
        w = np.asarray(words, dtype=np.int64).reshape(-1)
        if np.any((w < -(1 << 31)) | (w > MASK32)):
            raise ValueError("words must fit 32 bits (signed or unsigned)")
        self.write_bytes(addr, (w & MASK32).astype("<u4").tobytes())

    def read_words(self, addr: int, n: int, signed: bool = True) -> np.ndarray:
        raw = np.frombuffer(self.read_bytes(addr, 4 * n), dtype="<i4" if signed else "<u4")
        return raw.astype(np.int64)

    def write_lines(self, line_addr: int, lines) -> None:
        lines = np.asarray(lines, dtype=np.int64)
        if lines.ndim != 2 or lines.shape[1] != self.lanes:
            raise ValueError(f"lines must be (n, {self.lanes}), got {lines.shape}")
        self.write_words(line_addr * self.line_bytes, lines)

    def read_lines(self, line_addr: int, n: int) -> np.ndarray:
        return self.read_words(line_addr * self.line_bytes, n * self.lanes).reshape(n, self.lanes)

    def write_vector(self, line_addr: int, words) -> int:
        """A vector of words as ``ceil(len/lanes)`` lines, zero padded; returns the line
        count."""
        lines = vector_lines(words, self.lanes)
        self.write_lines(line_addr, lines)
        return len(lines)

    def read_vector(self, line_addr: int, n: int) -> np.ndarray:
        return self.read_lines(line_addr, -(-n // self.lanes)).reshape(-1)[:n]

    def write_scalars(self, line_addr: int, values) -> None:
        """One value per line in lane 0 (other lanes 0)."""
        self.write_lines(line_addr, scalar_lines(values, self.lanes))

    def read_scalars(self, line_addr: int, n: int) -> np.ndarray:
        return self.read_lines(line_addr, n)[:, 0].copy()


def vector_lines(words, lanes) -> np.ndarray:
    w = np.asarray(words, dtype=np.int64).reshape(-1)
    nl = -(-len(w) // lanes)
    out = np.zeros(nl * lanes, dtype=np.int64)
    out[:len(w)] = w
    return out.reshape(nl, lanes)


def scalar_lines(values, lanes) -> np.ndarray:
    v = np.asarray(values, dtype=np.int64).reshape(-1)
    out = np.zeros((len(v), lanes), dtype=np.int64)
    out[:, 0] = v
    return out


# ---------------------------------------------------------------------------------
# Records
# ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class SubCall:
    """One subroutine initiation (what Decode hands to the subroutine).

    ``regions[k]`` / ``access[k]``: region and *effective* access word of channel k
    (for LOAD, ``regions`` is the tuple of regions in the mask and ``access`` has the
    one channel-0 word, 0 in amem mode); ``addr``: effective main-memory line address
    (LOAD/STORE) else None; ``amem``: ``(region, global channel, first entry)`` in
    LOAD amem mode else None."""

    pc: int
    op: int
    nb: bool
    iterations: int
    regions: tuple
    access: tuple
    flags: int
    w6: int
    w7: int
    addr: int | None
    amem: tuple | None
    words: tuple

    @property
    def name(self) -> str:
        return I.SUB_OPS[self.op]


@dataclass
class Event:
    """One executed instruction: ``kind`` is "control", "branch", "sub", "block",
    "yield", "switch" (a YIELD that stored the context), "resume", "end",
    "error"; ``info`` holds the details (register written and value, branch taken
    and target, the SubCall, ...)."""

    pc: int
    mnemonic: str
    kind: str
    info: dict = field(default_factory=dict)


@dataclass
class RunResult:
    """Outcome of one START: ``status`` "finished" / "suspended" / "error";
    ``err_code``/``err_pc`` (0 when no error); ``pc_trace`` (PCs fetched);
    ``regs`` (register file at the end, signed ints); ``instr_count`` (instructions
    fetched = ``len(pc_trace)``); ``yields`` (YIELDs executed); ``events``;
    ``context`` (the 32 context words written, or None)."""

    status: str
    err_code: int = 0
    err_pc: int = 0
    pc_trace: list = field(default_factory=list)
    regs: list = field(default_factory=lambda: [0] * I.NUM_REGS)
    instr_count: int = 0
    yields: int = 0
    events: list = field(default_factory=list)
    context: list | None = None

    @property
    def finished(self):
        return self.status == "finished"

    @property
    def suspended(self):
        return self.status == "suspended"

    @property
    def error(self):
        return self.status == "error"


class _Stop(Exception):
    def __init__(self, code, pc, msg=""):
        super().__init__(msg)
        self.code, self.pc, self.msg = code, pc, msg


# ---------------------------------------------------------------------------------
# The machine
# ---------------------------------------------------------------------------------
class Machine:
    """One PipeArch-PU: register machine + computation engine (module docstring).

    Region contents and address memories persist across runs (as on hardware); every
    START empties the regions' FIFOs (pointers to 0); ``reset_engine()`` clears all."""

    def __init__(self, cfg: PUConfig, memory: Memory, subroutine_hook=None, table=None):
        if not isinstance(cfg, PUConfig):
            raise ValueError(f"cfg must be a PUConfig, got {type(cfg).__name__}")
        if memory.lanes != cfg.lanes:
            raise ValueError(f"memory has {memory.lanes} lanes, the PU {cfg.lanes}")
        self.cfg = cfg
        self.mem = memory
        self.fmt = cfg.fmt
        self.table = table or sigmoid_table(self.fmt)
        self.hook = subroutine_hook
        self.switch_pending = False
        self.reset_engine()

    # ---- host interface -----------------------------------------------------------
    def reset_engine(self):
        c = self.cfg
        self.regions = [Region(c.depth, c.lanes, c.region_configs[r], len(I.READ_CHANNELS), c.amem_depth)
                        for r in range(c.nregions)]
        self.amem = np.zeros((c.nregions, N_GLOBAL, c.amem_depth), dtype=np.int64)

    def request_switch(self):
        """Set the switch-request flag (CTRL.SWITCH)."""
        self.switch_pending = True

    def start(self, prog_addr: int, ctx_addr: int, *, switch_at_yield: int | None = None,
              on_step=None, max_steps: int = 10_000_000) -> RunResult:
        """START: load header, program and context, run to Done or Error.

        ``switch_at_yield=k``: request a switch just before the k-th YIELD of this run;
        ``on_step(machine, pc)``: called before every fetch (may call
        ``request_switch``)."""
        r = RunResult(status="running")
        self._r = r
        for rg in self.regions:        # START empties every region's FIFO (storage kept)
            rg.reset_fifo()
        try:
            self._run(r, int(prog_addr), int(ctx_addr), switch_at_yield, on_step, max_steps)
        except _Stop as s:
            r.status, r.err_code, r.err_pc = "error", s.code, s.pc
            r.events.append(Event(s.pc, "", "error", {"code": s.code, "name": I.ERROR_NAMES.get(s.code),
                                                       "message": s.msg}))
        r.instr_count = len(r.pc_trace)
        return r

    run = start

    # ---- internals ------------------------------------------------------------------
    def _read_words(self, addr, n):
        try:
            return [int(x) for x in self.mem.read_words(addr, n, signed=False)]
        except AxiError as e:
            raise _Stop(I.E_AXI, 0, str(e)) from None

    def _write_context(self, ctx_addr, state, pc, regs, r, err_pc):
        words = [state, pc] + [0] + [x & MASK32 for x in regs[1:]] + [0] * (I.CTX_WORDS - 18)
        try:
            self.mem.write_words(ctx_addr, words)
        except AxiError as e:
            raise _Stop(I.E_AXI, err_pc, str(e)) from None
        r.context = words

    def _run(self, r, prog_addr, ctx_addr, switch_at_yield, on_step, max_steps):
        cfg = self.cfg
        if prog_addr % cfg.align:
            raise _Stop(I.E_HEADER, 0, f"PROG_ADDR {prog_addr:#x} is not a multiple of {cfg.align}")
        hdr = self._read_words(prog_addr, 8)
        n, sp, lp = hdr[0], hdr[1], hdr[2]
        if not 1 <= n <= I.PROG_MAX:
            raise _Stop(I.E_HEADER, 0, f"instruction count {n}")
        for v, nm in ((sp, "StoreContext"), (lp, "LoadContext")):
            if v != I.END_PC and v >= n:
                raise _Stop(I.E_HEADER, 0, f"{nm} PC {v:#x} for {n} instructions")
        if any(hdr[3:]):
            raise _Stop(I.E_HEADER, 0, "header words 3..7 must be 0")
        flat = self._read_words(prog_addr + I.HEADER_BYTES, n * I.INSTR_WORDS)
        prog = [decode(flat[8 * i: 8 * i + 8]) for i in range(n)]
        if ctx_addr % cfg.align:
            raise _Stop(I.E_CONTEXT, 0, f"CTX_ADDR {ctx_addr:#x} is not a multiple of {cfg.align}")
        ctx = self._read_words(ctx_addr, I.CTX_WORDS)
        regs = [0] * I.NUM_REGS
        mode = "normal"
        saved_pc = 0
        if ctx[0] == I.CTX_FRESH:
            pc = 0
        elif ctx[0] == I.CTX_SUSPENDED:
            if ctx[1] > 0xFF:
                raise _Stop(I.E_CONTEXT, 0, f"saved PC word {ctx[1]:#x}")
            regs = [0] + [_s32(x) for x in ctx[3:18]]
            saved_pc = ctx[1]
            if lp != I.END_PC:
                mode, pc = "loadctx", lp
            else:
                pc = saved_pc
        else:
            raise _Stop(I.E_CONTEXT, 0, f"context state {ctx[0]}")
        r.regs = regs
        yields_seen = 0
        while True:
            if pc == I.END_PC:
                if mode == "storectx":
                    r.status = "suspended"
                else:
                    self._write_context(ctx_addr, I.CTX_FINISHED, I.END_PC, regs, r, I.END_PC)
                    r.status = "finished"
                r.events.append(Event(pc, "", "end", {"mode": mode}))
                return
            if pc >= n:
                raise _Stop(I.E_PC_RANGE, pc, f"PC {pc} >= program length {n}")
            if len(r.pc_trace) >= max_steps:
                raise StepLimit(f"more than {max_steps} instructions")
            if on_step is not None:
                on_step(self, pc)
            r.pc_trace.append(pc)
            ins = prog[pc]
            err = check(ins, cfg, n, regs, in_load_ctx=(mode == "loadctx"))
            if err:
                raise _Stop(err[0], pc, err[1])
            op, w = ins.op, ins.words
            nxt = pc + 1
            if op == I.NOP:
                r.events.append(Event(pc, "NOP", "control"))
            elif op in (I.ADDI, I.ADD, I.SUB):
                a = regs[ins.ra]
                b = _s32(w[1]) if op == I.ADDI else regs[ins.rb]
                v = _s32(a + b if op != I.SUB else a - b)
                if ins.rd:
                    regs[ins.rd] = v
                r.events.append(Event(pc, ins.mnemonic, "control", {"rd": ins.rd, "value": regs[ins.rd]}))
            elif op in (I.BLT, I.BGE, I.BEQ, I.BNE, I.JMP):
                a, b = regs[ins.ra], regs[ins.rb]
                taken = {I.BLT: a < b, I.BGE: a >= b, I.BEQ: a == b, I.BNE: a != b, I.JMP: True}[op]
                if taken:
                    nxt = w[1] & 0xFF
                r.events.append(Event(pc, ins.mnemonic, "branch", {"taken": taken, "target": w[1] & 0xFF}))
            elif op == I.BLOCK:
                r.events.append(Event(pc, "BLOCK", "block", {"mask": w[1]}))
            elif op == I.YIELD:
                r.yields += 1
                if mode == "normal":
                    yields_seen += 1
                    if switch_at_yield is not None and yields_seen == switch_at_yield:
                        self.switch_pending = True
                if mode == "normal" and self.switch_pending:
                    self.switch_pending = False
                    self._write_context(ctx_addr, I.CTX_SUSPENDED, pc + 1, regs, r, pc)
                    r.events.append(Event(pc, "YIELD", "switch", {"saved_pc": pc + 1}))
                    if sp == I.END_PC:
                        r.status = "suspended"
                        return
                    mode, nxt = "storectx", sp
                else:
                    r.events.append(Event(pc, "YIELD", "yield"))
            elif op == I.RESUME:
                mode, nxt = "normal", saved_pc
                r.events.append(Event(pc, "RESUME", "resume", {"pc": saved_pc}))
            else:
                call = self._subcall(ins, pc, regs)
                r.events.append(Event(pc, ins.mnemonic, "sub", {"call": call}))
                code = self.execute_subroutine(call)
                if code:
                    raise _Stop(int(code), pc, f"{ins.mnemonic} returned error {code}")
            pc = nxt

    def _subcall(self, ins, pc, regs) -> SubCall:
        w = ins.words
        op = ins.op
        fl = ins.flags
        addr = amem = None
        if op in (I.LOAD, I.STORE):
            addr = w[6] + (regs[ins.rb] if fl & 2 else 0)
            addr &= MASK32
        if op == I.LOAD:
            mask = w[1] & 0xFFFF
            regions = tuple(b for b in range(16) if mask >> b & 1)
            if fl & 1:
                amem = (regions[0], (w[7] >> I.AMEM_CH_SHIFT) & I.AMEM_CH_MASK, w[7] & 0xFFFF)
                access = (0,)
            else:
                access = (effective_access(ins, 0, regs)[1],)
        else:
            nch = len(I.CHANNELS[op])
            regions = tuple(ins.region(k) for k in range(nch))
            access = tuple(effective_access(ins, k, regs)[1] for k in range(nch))
        return SubCall(pc, op, bool(ins.nb), ins.iterations, regions, access, fl, w[6], w[7],
                       addr, amem, w)

    def execute_subroutine(self, call: SubCall):
        """Run one subroutine initiation; returns None or an error code.  Calls the
        hook when one was given, else :meth:`golden_subroutine`."""
        if self.hook is not None:
            return self.hook(self, call)
        return self.golden_subroutine(call)

    # ---- golden computation engine ------------------------------------------------------
    def _gch(self, op, k):
        return I.GLOBAL_CHANNELS.index((op, k))

    def _read(self, call, k):
        op = call.op
        region = call.regions[k]
        g = self._gch(op, k)
        word = call.access[k]
        am = self.amem[region, g] if decode_access(word)["use_amem"] else None
        try:
            out = self.regions[region].read(I.READ_CHANNELS.index(g), word, call.iterations, am)
        except ValueError as e:
            raise Deadlock(f"PC {call.pc} {call.name} channel {k}: {e}") from None
        if isinstance(out, str):  # cannot happen after check(); keep the model honest
            raise AssertionError(f"PC {call.pc}: region rejected a checked access: {out}")
        return out

    def _write(self, call, k, region, lines):
        g = self._gch(call.op, k)
        word = call.access[k]
        am = self.amem[region, g] if decode_access(word)["use_amem"] else None
        try:
            out = self.regions[region].write(word, call.iterations, np.asarray(lines, dtype=np.int64), am)
        except ValueError as e:
            raise Deadlock(f"PC {call.pc} {call.name} channel {k}: {e}") from None
        if isinstance(out, str):
            raise AssertionError(f"PC {call.pc}: region rejected a checked access: {out}")

    def _scalar_out(self, lane0, lane1=None):
        out = np.zeros((len(lane0), self.cfg.lanes), dtype=np.int64)
        out[:, 0] = lane0
        if lane1 is not None and self.cfg.lanes > 1:
            out[:, 1] = lane1
        return out

    def golden_subroutine(self, call: SubCall):
        """The golden behaviour of one subroutine initiation (module docstring)."""
        fmt, L, it, op = self.fmt, self.cfg.lanes, call.iterations, call.op
        try:
            if op == I.LOAD:
                if call.amem is not None:
                    region, g, base = call.amem
                    words = self.mem.read_lines(call.addr, it).reshape(-1)
                    self.amem[region, g, base:base + len(words)] = words & (self.cfg.depth - 1)
                    return None
                n = decode_access(call.access[0])["length"] * it
                lines = self.mem.read_lines(call.addr, n)
                for region in call.regions:
                    self._write(call, 0, region, lines)
                return None
            if op == I.STORE:
                n = decode_access(call.access[0])["length"] * it
                self.mem._range(call.addr * self.mem.line_bytes, n * self.mem.line_bytes)
                self.mem.write_lines(call.addr, self._read(call, 0))
                return None
        except AxiError:
            return I.E_AXI
        dim = call.w6
        if op == I.DOTSIG:
            a, b = self._read(call, 0), self._read(call, 1)
            d = ops.dot_sigmoid(fmt, a, b, dim, bool(call.flags & 1), self.table)
            self._write(call, 2, call.regions[2], self._scalar_out(d))
        elif op == I.SIGDELTA:
            z, b = self._read(call, 0), self._read(call, 1)
            y = ops.sigmoid_delta(fmt, z, b, bool(call.flags & 1), self.table)
            self._write(call, 2, call.regions[2], y)
        elif op == I.SCALAR:
            a, b = self._read(call, 0)[:, 0], self._read(call, 1)[:, 0]
            alpha = _s32(call.w6)
            if call.flags & 1:
                mu, xm = ops.scalar_scd(fmt, a, b, alpha, _s32(call.w7))
                out = self._scalar_out(xm, mu)
            else:
                out = self._scalar_out(ops.scalar_sgd(fmt, a, b, alpha))
            self._write(call, 2, call.regions[2], out)
        elif op == I.MULTSUB:
            x, a = self._read(call, 0), self._read(call, 1)
            s = self._read(call, 2)[:, 1 if call.flags & 1 else 0]
            y = ops.multiply_subtract(fmt, x, np.repeat(s, dim), a)
            self._write(call, 3, call.regions[3], y)
        elif op == I.L2REG:
            x, xo = self._read(call, 0), self._read(call, 1)
            self._write(call, 2, call.regions[2], ops.l2reg(fmt, x, xo, _s32(call.w7)))
        else:  # pragma: no cover - check() rejects other opcodes
            raise AssertionError(f"opcode {op:#x}")
        return None


def fresh_context() -> list:
    """The 32 words of a fresh context (state 0)."""
    return [0] * I.CTX_WORDS


def read_context(mem: Memory, ctx_addr: int) -> dict:
    """``{"state", "pc", "regs"}`` of a context area."""
    w = mem.read_words(ctx_addr, I.CTX_WORDS, signed=False)
    return {"state": int(w[0]), "pc": int(w[1]), "regs": [0] + [_s32(int(x)) for x in w[3:18]]}
