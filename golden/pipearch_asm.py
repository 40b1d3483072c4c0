"""Assembler, disassembler and decode-time checker for PipeArch-PU programs.

The instruction set, program image and error codes are specified in
:mod:`golden.pipearch_isa`; this module implements them and nothing else.

Writing programs
================

As Python calls on a :class:`Program`::

    from golden.pipearch_asm import Program, PUConfig, ch, acc
    p = Program(PUConfig(lanes=4, nregions=6, depth=256))
    p.li(1, 0)                                   # LI R1, 0  (= ADDI R1, R0, 0)
    p.load(acc(4), addr=0x40, regions=[0])       # LOAD 4 lines to region 0
    p.label("loop")
    p.dotsig(ch(0, 4), ch(1, 4, keep=True, ra=True), ch(2, 1, keep=True),
             dim=4, iterations=8, sigmoid=True, ra=7)
    p.addi(1, 1, 1); p.blt(1, 2, "loop")
    p.yield_()
    p.end()
    p.store_context(); p.store(ch(0, 4), addr=0x40); p.end()
    p.load_context();  p.load(acc(4), addr=0x40, regions=[0]); p.resume()
    a = p.assemble()          # -> Assembled: .image (bytes), .words, .listing, .labels

or as text (:func:`assemble_text` / :func:`parse`), one instruction per line, ``#``
comments, ``name:`` labels, ``.store_context`` / ``.load_context`` directives; an
instruction is its mnemonic followed by the arguments of the Python call written
Python style (registers ``R0..R15``, labels as bare names, channels ``ch(...)`` /
``acc(...)``)::

        LI R2, 10
    loop:
        DOTSIG ch(0, 4), ch(1, 4, keep=1, ra=1), ch(2, 1, keep=1), dim=4, iterations=8, ra=R7
        ADDI R1, R1, 1
        BLT R1, R2, loop
        END

:func:`disassemble` turns an image back into that text (``assemble_text`` of it gives
the same image); words it cannot express are written ``RAW w0, ..., w7``.

Channels
========

``ch(region, length, offset=0, fifo=False, keep=False, amem=False, ra=False, rb=False)``
is one channel of a subroutine: its region and its regionaccess word (Table 3, built
with :func:`golden.pipearch_region.encode_access`); ``ra``/``rb`` set the routing-word
bits that add ``R[ra]``/``R[rb]`` (the instruction's ``ra=``/``rb=`` registers) to
the channel's offset.  ``acc(...)`` is the same without a region (LOAD's output
channel, whose regions are the ``regions`` mask).  ``Ch.raw(region, word)`` takes an
access word as is.

Validation
==========

Every argument is checked when the call is made (:class:`AsmError` naming the
instruction, its source line if any, and the field), and every assembled instruction
is run through :func:`check`, the decode-time checker of the PU that the ISS
(:mod:`golden.pipearch_iss`) uses too, with the register contributions to access
offsets taken as 0.  :class:`PUConfig` holds the PU generics the checks depend on
(LANES, NREGIONS, DEPTH, AMEM_DEPTH, MAX_ITER, MAX_DIM, present subroutines).
``Program.raw(w0..w7)`` emits words without any check (to build faulty programs).
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

import numpy as np

from . import pipearch_isa as I
from .fixedpoint import QFormat
from .pipearch_region import CONFIGS, access_error, decode_access, encode_access

MASK32 = 0xFFFFFFFF
NCH = 4


class AsmError(ValueError):
    """An assembler error; the message names the instruction/line and the field."""


def _pow2(v):
    return v >= 1 and v & (v - 1) == 0


def _s32(v: int) -> int:
    v &= MASK32
    return v - (1 << 32) if v & 0x80000000 else v


# ---------------------------------------------------------------------------------
# PU configuration
# ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class PUConfig:
    """Generics of one PipeArch-PU (what decode-time checks and the ISS depend on).

    ``region_configs``: one of ``golden.pipearch_region.CONFIGS`` per region (default
    all ``"regular"``); ``subroutines``: opcodes present (default all)."""

    lanes: int = 16
    w: int = 32
    f: int = 16
    nregions: int = 6
    depth: int = 1024
    amem_depth: int = 256
    max_iter: int = 4096
    max_dim: int = 1024
    subroutines: tuple = I.ALL_SUBROUTINES
    region_configs: tuple | None = None

    def __post_init__(self):
        def bad(name, why):
            raise ValueError(f"PUConfig.{name}={getattr(self, name)!r}: {why}")
        for name in ("lanes", "w", "f", "nregions", "depth", "amem_depth", "max_iter", "max_dim"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                bad(name, "must be an integer")
        if self.lanes not in (1, 2, 4, 8, 16, 32):
            bad("lanes", "must be one of 1, 2, 4, 8, 16, 32")
        if self.w != 32:
            bad("w", "the PU word is 32 bits")
        if not 0 <= self.f < self.w:
            bad("f", "must be in [0, W-1]")
        if not 1 <= self.nregions <= 16:
            bad("nregions", "must be 1..16 (4-bit region fields)")
        if not _pow2(self.depth) or self.depth > 1 << 14:
            bad("depth", "must be a power of two <= 16384")
        if not _pow2(self.amem_depth) or self.amem_depth > 1 << 16:
            bad("amem_depth", "must be a power of two <= 65536")
        if not 1 <= self.max_iter <= I.ITER_MASK:
            bad("max_iter", f"must be 1..{I.ITER_MASK}")
        if not 1 <= self.max_dim <= (1 << 14) - 1:
            bad("max_dim", "must be 1..16383")
        subs = tuple(sorted(set(int(s) for s in self.subroutines)))
        if any(s not in I.SUB_OPS for s in subs):
            bad("subroutines", f"must be subroutine opcodes {sorted(I.SUB_OPS)}")
        object.__setattr__(self, "subroutines", subs)
        rc = self.region_configs
        rc = ("regular",) * self.nregions if rc is None else tuple(rc)
        if len(rc) != self.nregions or any(c not in CONFIGS for c in rc):
            bad("region_configs", f"must be {self.nregions} of {CONFIGS}")
        object.__setattr__(self, "region_configs", rc)

    @property
    def fmt(self) -> QFormat:
        return QFormat(self.w, self.f)

    @property
    def line_bytes(self) -> int:
        return 4 * self.lanes

    @property
    def align(self) -> int:
        """Alignment of PROG_ADDR and CTX_ADDR."""
        return max(32, self.line_bytes)

    def config_word(self) -> int:
        """The CONFIG host register."""
        mask = sum(1 << (s - I.LOAD) for s in self.subroutines)
        return (self.lanes & 0xFF) | (self.nregions << 8) | \
            ((self.depth.bit_length() - 1) << 16) | (mask << 24)

    def replace(self, **kw) -> "PUConfig":
        d = {k: getattr(self, k) for k in self.__dataclass_fields__}
        d.update(kw)
        if "nregions" in kw and "region_configs" not in kw:
            d["region_configs"] = None
        return PUConfig(**d)


# ---------------------------------------------------------------------------------
# Instruction words
# ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Instr:
    """One decoded instruction word (no checks): raw fields of w0 and the 8 words."""

    words: tuple

    @property
    def op(self):
        return self.words[0] >> I.OP_SHIFT

    @property
    def nb(self):
        return (self.words[0] >> I.NB_BIT) & 1

    @property
    def ra(self):
        return (self.words[0] >> I.RA_SHIFT) & 0xF

    @property
    def rb(self):
        return (self.words[0] >> I.RB_SHIFT) & 0xF

    @property
    def rd(self):
        return (self.words[0] >> I.RD_SHIFT) & 0xF

    @property
    def iterations(self):
        return self.words[0] & I.ITER_MASK

    @property
    def mnemonic(self):
        return I.CONTROL_OPS.get(self.op) or I.SUB_OPS.get(self.op) or f"OP{self.op:#04x}"

    @property
    def flags(self):
        return self.words[1] >> I.FLAGS_SHIFT

    def region(self, k):
        return (self.words[1] >> (4 * k)) & 0xF

    def add_ra(self, k):
        return (self.words[1] >> (I.ADD_RA_SHIFT + k)) & 1

    def add_rb(self, k):
        return (self.words[1] >> (I.ADD_RB_SHIFT + k)) & 1


def decode(words) -> Instr:
    w = tuple(int(x) & MASK32 for x in words)
    if len(w) != I.INSTR_WORDS:
        raise ValueError(f"an instruction is {I.INSTR_WORDS} words, got {len(w)}")
    return Instr(w)


def effective_access(ins: Instr, k: int, regs=None) -> tuple[int, int]:
    """``(effective offset, access word with that offset)`` of channel ``k``; the offset
    may fall outside 0..0x3FFF (then the word keeps the static offset)."""
    word = ins.words[2 + k]
    off = word & 0x3FFF
    if regs is not None:
        if ins.add_ra(k):
            off += _s32(regs[ins.ra])
        if ins.add_rb(k):
            off += _s32(regs[ins.rb])
    if 0 <= off <= 0x3FFF:
        word = (word & ~0x3FFF) | off
    return off, word


def sub_flags_allowed(op: int) -> int:
    """Bit mask (of the 8-bit flags field) of the flags defined for ``op``."""
    if op in (I.LOAD, I.STORE):
        return 0b11 if op == I.LOAD else 0b10
    if op in (I.DOTSIG, I.SIGDELTA, I.SCALAR, I.MULTSUB):
        return 0b01
    return 0


def check(ins: Instr, cfg: PUConfig, n_instr: int, regs=None, in_load_ctx=None):
    """Decode-time check of one instruction, as the PU does it.

    Returns ``None`` or ``(code, message)``; when several faults apply the lowest
    error code wins (``golden.pipearch_isa``: "Errors").  ``regs``: the register file
    (16 ints) for the effective access words, or ``None`` (assembler: register
    contributions taken as 0); ``in_load_ctx``: whether a LoadContext group is running
    (``None`` = unknown, RESUME not checked)."""
    faults = []

    def f(code, msg):
        faults.append((code, msg))

    w = ins.words
    op = ins.op
    if op not in I.CONTROL_OPS and op not in I.SUB_OPS:
        return (I.E_OPCODE, f"unknown opcode {op:#04x}")
    if op in I.CONTROL_OPS:
        if ins.nb:
            f(I.E_RESERVED, "NB (w0[25]) is set on a control opcode")
        if ins.iterations:
            f(I.E_RESERVED, f"iterations (w0[12:0]) = {ins.iterations} on a control opcode must be 0")
        if any(w[2:]):
            k = next(i for i in range(2, 8) if w[i])
            f(I.E_RESERVED, f"w{k} = {w[k]:#x} must be 0 for {ins.mnemonic}")
        if op in (I.BLT, I.BGE, I.BEQ, I.BNE, I.JMP):
            if w[1] >> 8:
                f(I.E_RESERVED, f"w1[31:8] of the branch target word {w[1]:#x} must be 0")
            t = w[1] & 0xFF
            if t != I.END_PC and t >= n_instr:
                f(I.E_TARGET, f"branch target {t} is beyond the program (length {n_instr})")
        elif op == I.BLOCK:
            if w[1] >> 7:
                f(I.E_RESERVED, f"BLOCK mask w1 = {w[1]:#x} has bits above [6:0]")
        elif op != I.ADDI and w[1]:
            f(I.E_RESERVED, f"w1 = {w[1]:#x} must be 0 for {ins.mnemonic}")
        if op == I.RESUME and in_load_ctx is False:
            f(I.E_RESUME, "RESUME outside a LoadContext group")
        return min(faults) if faults else None

    # ---- subroutine opcodes ------------------------------------------------------
    name = I.SUB_OPS[op]
    chans = I.CHANNELS[op]
    nch = len(chans)
    if op not in cfg.subroutines:
        f(I.E_ABSENT, f"{name} is not present in this PU")
    fl = ins.flags
    bad_fl = fl & ~sub_flags_allowed(op)
    if bad_fl:
        f(I.E_RESERVED, f"undefined subroutine flags w1[31:24] = {fl:#04x} for {name}")
    it = ins.iterations
    if not 1 <= it <= cfg.max_iter:
        f(I.E_FIELD, f"iterations = {it} is outside 1..MAX_ITER={cfg.max_iter}")
    amem_mode = op == I.LOAD and fl & 1
    if op == I.LOAD:
        mask = w[1] & 0xFFFF
        if mask == 0:
            f(I.E_FIELD, "LOAD region mask w1[15:0] is empty")
        if mask >> cfg.nregions:
            f(I.E_FIELD, f"LOAD region mask {mask:#06x} names a region >= NREGIONS={cfg.nregions}")
        used = 1
    else:
        used = nch
        for k in range(nch):
            if ins.region(k) >= cfg.nregions:
                f(I.E_FIELD, f"channel {k} ({chans[k][0]}) region {ins.region(k)} >= NREGIONS={cfg.nregions}")
        for k in range(nch, NCH):
            if ins.region(k):
                f(I.E_RESERVED, f"unused channel {k} has region {ins.region(k)} (must be 0)")
    for k in range(used, NCH):
        if ins.add_ra(k) or ins.add_rb(k):
            f(I.E_RESERVED, f"unused channel {k} has register-add bits set")
        if w[2 + k]:
            f(I.E_RESERVED, f"unused channel {k} access word w{2 + k} = {w[2 + k]:#x} (must be 0)")
    if amem_mode:
        if w[2]:
            f(I.E_RESERVED, f"LOAD amem mode: w2 = {w[2]:#x} must be 0")
        if ins.add_ra(0) or ins.add_rb(0):
            f(I.E_RESERVED, "LOAD amem mode: channel 0 register-add bits must be 0")
        mask = w[1] & 0xFFFF
        if mask and bin(mask).count("1") != 1:
            f(I.E_FIELD, f"LOAD amem mode: region mask {mask:#06x} must name exactly one region")
        if w[7] >> 21:
            f(I.E_RESERVED, f"LOAD amem mode: w7[31:21] of {w[7]:#x} must be 0")
        gch = (w[7] >> I.AMEM_CH_SHIFT) & I.AMEM_CH_MASK
        base = w[7] & 0xFFFF
        if gch >= len(I.GLOBAL_CHANNELS):
            f(I.E_FIELD, f"LOAD amem mode: global channel {gch} >= {len(I.GLOBAL_CHANNELS)}")
        if base + it * cfg.lanes > cfg.amem_depth:
            f(I.E_FIELD, f"LOAD amem mode: entries {base}..{base + it * cfg.lanes - 1} exceed "
                         f"AMEM_DEPTH={cfg.amem_depth}")
    elif op in (I.LOAD, I.STORE, I.DOTSIG, I.SIGDELTA, I.MULTSUB) and w[7]:
        f(I.E_RESERVED, f"w7 = {w[7]:#x} must be 0 for {name}")
    dim = None
    if op in (I.DOTSIG, I.SIGDELTA, I.MULTSUB, I.L2REG):
        dim = w[6]
        if not 1 <= dim <= cfg.max_dim:
            f(I.E_FIELD, f"dimension w6 = {dim} is outside 1..MAX_DIM={cfg.max_dim}")
    if op == I.MULTSUB and fl & 1 and cfg.lanes < 2:
        f(I.E_FIELD, "MULTSUB lane-1 flag with LANES = 1 (there is no lane 1)")
    if not amem_mode:
        for k in range(used):
            cname, _, kind = chans[k]
            off, word = effective_access(ins, k, regs)
            if not 0 <= off <= 0x3FFF:
                f(I.E_ACCESS, f"channel {k} ({cname}): effective offset {off} does not fit 14 bits")
                continue
            err = access_error(word, max(it, 1), cfg.depth)
            if err:
                f(I.E_ACCESS, f"channel {k} ({cname}) access word {word:#010x}: {err}")
                continue
            length = (word >> 16) & 0x3FFF
            if kind == "vector" and dim is not None and length != dim:
                f(I.E_LENGTH, f"vector channel {k} ({cname}) length {length} != dimension {dim}")
            if kind == "scalar" and length != 1:
                f(I.E_LENGTH, f"scalar channel {k} ({cname}) length {length} != 1")
    return min(faults) if faults else None


# ---------------------------------------------------------------------------------
# Program builder
# ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Ch:
    """A subroutine channel: region (``None`` for LOAD's output), access word, and the
    routing bits adding ``R[ra]`` / ``R[rb]`` to its offset."""

    region: int | None
    word: int
    add_ra: bool = False
    add_rb: bool = False

    @staticmethod
    def raw(region, word, ra=False, rb=False) -> "Ch":
        return Ch(region, int(word) & MASK32, bool(ra), bool(rb))


def acc(length, offset=0, fifo=False, keep=False, amem=False, ra=False, rb=False) -> Ch:
    """A regionaccess word without a region (LOAD's output channel)."""
    return Ch(None, encode_access(length, offset, fifo=fifo, keep=keep, use_amem=amem),
              bool(ra), bool(rb))


def ch(region, length, offset=0, fifo=False, keep=False, amem=False, ra=False, rb=False) -> Ch:
    """Channel on ``region`` with the access word ``encode_access(length, offset, ...)``."""
    c = acc(length, offset, fifo, keep, amem, ra, rb)
    return Ch(region, c.word, c.add_ra, c.add_rb)


_SUB_NAMES = {v.lower(): k for k, v in I.SUB_OPS.items()}


@dataclass
class _Item:
    mnemonic: str
    words: list            # w0..w7 (w1 may be a label string for branches)
    line: int | None
    src: str
    raw: bool = False


@dataclass
class Assembled:
    """An assembled program: ``image`` (bytes: 32-byte header + 32 bytes per
    instruction), ``words`` (N tuples of 8 ints), ``store_pc``/``load_pc`` (0xFF =
    none), ``labels`` (name -> PC), ``listing`` (text)."""

    image: bytes
    words: list
    store_pc: int
    load_pc: int
    labels: dict
    listing: str
    source: list = field(default_factory=list)

    @property
    def n(self) -> int:
        return len(self.words)

    def __len__(self):
        return len(self.words)


class Program:
    """Builder of one PipeArch-PU program (module docstring)."""

    def __init__(self, cfg: PUConfig | None = None, name: str = "program"):
        self.cfg = cfg or PUConfig()
        self.name = name
        self.items: list[_Item] = []
        self.labels: dict[str, int] = {}
        self.store_pc: int | None = None
        self.load_pc: int | None = None
        self._line: int | None = None   # set by the text parser
        self._label_lines: dict[str, int | None] = {}
        self._src = ""

    # ---- helpers -----------------------------------------------------------------
    @property
    def pc(self) -> int:
        """PC of the next instruction."""
        return len(self.items)

    def _where(self, mnemonic, pc=None):
        pc = self.pc if pc is None else pc
        s = f"{self.name}: instruction {pc} ({mnemonic})"
        if self._line is not None:
            s += f", line {self._line}"
        return s

    def _err(self, mnemonic, msg):
        raise AsmError(f"{self._where(mnemonic)}: {msg}")

    def _reg(self, mn, name, r):
        if isinstance(r, str) and re.fullmatch(r"[Rr]\d+", r):
            r = int(r[1:])
        if isinstance(r, bool) or not isinstance(r, (int, np.integer)) or not 0 <= r < I.NUM_REGS:
            self._err(mn, f"{name} = {r!r} is not a register R0..R15")
        return int(r)

    def _int(self, mn, name, v, lo, hi):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            self._err(mn, f"{name} = {v!r} must be an integer")
        v = int(v)
        if not lo <= v <= hi:
            self._err(mn, f"{name} = {v} is outside {lo}..{hi}")
        return v

    def _word(self, mn, name, v):
        """A 32-bit word given signed or unsigned."""
        return self._int(mn, name, v, -(1 << 31), MASK32) & MASK32

    def _emit(self, mnemonic, words, raw=False):
        if self.pc >= I.PROG_MAX:
            self._err(mnemonic, f"too many instructions (at most {I.PROG_MAX})")
        self.items.append(_Item(mnemonic, list(words), self._line, self._src, raw))
        return self

    @staticmethod
    def _w0(op, ra=0, rb=0, rd=0, it=0, nb=False):
        return (op << I.OP_SHIFT) | (int(bool(nb)) << I.NB_BIT) | (ra << I.RA_SHIFT) | \
            (rb << I.RB_SHIFT) | (rd << I.RD_SHIFT) | it

    # ---- labels and markers --------------------------------------------------------
    def label(self, name: str):
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            self._err("label", f"bad label name {name!r}")
        if re.fullmatch(r"[Rr]\d+", name):
            self._err("label", f"label {name!r} looks like a register")
        if name in self.labels:
            self._err("label", f"label {name!r} defined twice (first at PC {self.labels[name]})")
        self.labels[name] = self.pc
        self._label_lines[name] = self._line
        return self

    def store_context(self):
        """The StoreContext group starts at the next instruction."""
        if self.store_pc is not None:
            self._err(".store_context", "StoreContext group marked twice")
        self.store_pc = self.pc
        return self

    def load_context(self):
        """The LoadContext group starts at the next instruction."""
        if self.load_pc is not None:
            self._err(".load_context", "LoadContext group marked twice")
        self.load_pc = self.pc
        return self

    # ---- control ------------------------------------------------------------------
    def nop(self):
        return self._emit("NOP", [self._w0(I.NOP)] + [0] * 7)

    def addi(self, rd, ra, imm):
        rd, ra = self._reg("ADDI", "rd", rd), self._reg("ADDI", "ra", ra)
        return self._emit("ADDI", [self._w0(I.ADDI, ra=ra, rd=rd), self._word("ADDI", "imm", imm)] + [0] * 6)

    def li(self, rd, imm):
        return self.addi(rd, 0, imm)

    def add(self, rd, ra, rb):
        rd, ra, rb = (self._reg("ADD", n, v) for n, v in (("rd", rd), ("ra", ra), ("rb", rb)))
        return self._emit("ADD", [self._w0(I.ADD, ra=ra, rb=rb, rd=rd)] + [0] * 7)

    def sub(self, rd, ra, rb):
        rd, ra, rb = (self._reg("SUB", n, v) for n, v in (("rd", rd), ("ra", ra), ("rb", rb)))
        return self._emit("SUB", [self._w0(I.SUB, ra=ra, rb=rb, rd=rd)] + [0] * 7)

    def _target(self, mn, t):
        if isinstance(t, str):
            return t
        return self._int(mn, "target", t, 0, 0xFF)

    def _branch(self, op, mn, ra, rb, target):
        ra, rb = self._reg(mn, "ra", ra), self._reg(mn, "rb", rb)
        return self._emit(mn, [self._w0(op, ra=ra, rb=rb), self._target(mn, target)] + [0] * 6)

    def blt(self, ra, rb, target):
        return self._branch(I.BLT, "BLT", ra, rb, target)

    def bge(self, ra, rb, target):
        return self._branch(I.BGE, "BGE", ra, rb, target)

    def beq(self, ra, rb, target):
        return self._branch(I.BEQ, "BEQ", ra, rb, target)

    def bne(self, ra, rb, target):
        return self._branch(I.BNE, "BNE", ra, rb, target)

    def jmp(self, target):
        return self._emit("JMP", [self._w0(I.JMP), self._target("JMP", target)] + [0] * 6)

    def end(self):
        """``JMP 0xFF``: end of the program or of the StoreContext group."""
        return self._emit("JMP", [self._w0(I.JMP), I.END_PC] + [0] * 6)

    def block(self, *subs):
        """Wait for the named subroutines (names like ``"dotsig"`` or opcodes); none =
        all."""
        mask = 0
        for s in subs:
            op = _SUB_NAMES.get(s.lower()) if isinstance(s, str) else s
            if op not in I.SUB_OPS:
                self._err("BLOCK", f"unknown subroutine {s!r}")
            mask |= 1 << (op - I.LOAD)
        return self._emit("BLOCK", [self._w0(I.BLOCK), mask] + [0] * 6)

    def yield_(self):
        return self._emit("YIELD", [self._w0(I.YIELD)] + [0] * 7)

    def resume(self):
        return self._emit("RESUME", [self._w0(I.RESUME)] + [0] * 7)

    def raw(self, *words):
        """Emit 8 words as they are (no checks at all)."""
        if len(words) == 1 and not isinstance(words[0], (int, np.integer)):
            words = tuple(words[0])
        if len(words) != I.INSTR_WORDS:
            self._err("RAW", f"needs {I.INSTR_WORDS} words, got {len(words)}")
        ws = [self._word("RAW", f"w{i}", w) for i, w in enumerate(words)]
        return self._emit("RAW", ws, raw=True)

    # ---- subroutines -------------------------------------------------------------
    def _chan(self, mn, k, c, need_region=True):
        cname = "?"
        if k is not None:
            cname = I.CHANNELS[I.__dict__[mn]][k][0] if mn in I.SUB_OPS.values() else str(k)
        if isinstance(c, int) and not isinstance(c, bool):
            self._err(mn, f"channel {cname}: give ch(region, length, ...) rather than a bare word")
        if not isinstance(c, Ch):
            self._err(mn, f"channel {cname}: expected ch(...)/acc(...), got {c!r}")
        if need_region:
            if c.region is None:
                self._err(mn, f"channel {cname}: no region (use ch(region, ...))")
            self._int(mn, f"channel {cname} region", c.region, 0, self.cfg.nregions - 1)
        return c

    def _sub(self, op, chans, *, iterations, ra=0, rb=0, nb=False, flags=0, w6=0, w7=0, w1_low=None):
        mn = I.SUB_OPS[op]
        it = self._int(mn, "iterations", iterations, 1, self.cfg.max_iter)
        ra, rb = self._reg(mn, "ra", ra), self._reg(mn, "rb", rb)
        w1 = flags << I.FLAGS_SHIFT
        words = [0] * 8
        for k, c in enumerate(chans):
            if c is None:
                continue
            if w1_low is None:
                w1 |= c.region << (4 * k)
            w1 |= int(c.add_ra) << (I.ADD_RA_SHIFT + k)
            w1 |= int(c.add_rb) << (I.ADD_RB_SHIFT + k)
            words[2 + k] = c.word
        if w1_low is not None:
            w1 |= w1_low
        words[0] = self._w0(op, ra=ra, rb=rb, it=it, nb=nb)
        words[1] = w1
        words[6] = w6 & MASK32
        words[7] = w7 & MASK32
        self._static_check(mn, words)
        return self._emit(mn, words)

    def _static_check(self, mn, words, n_instr=None):
        """The PU decode check with registers 0 (branch targets are checked later)."""
        ins = decode(words)
        err = check(ins, self.cfg, n_instr if n_instr is not None else I.END_PC)
        if err:
            self._err(mn, f"{I.ERROR_NAMES[err[0]]}: {err[1]}")

    def _regions_mask(self, mn, regions):
        if isinstance(regions, (int, np.integer)) and not isinstance(regions, bool):
            regions = [regions]
        try:
            regions = list(regions)
        except TypeError:
            self._err(mn, f"regions = {regions!r} must be a region or a list of regions")
        if not regions:
            self._err(mn, "regions is empty")
        mask = 0
        for r in regions:
            r = self._int(mn, "region", r, 0, self.cfg.nregions - 1)
            mask |= 1 << r
        return mask

    def load(self, out, addr, *, regions=None, iterations=1, ra=0, rb=0, addr_rb=False, nb=False):
        """LOAD ``length(out)*iterations`` lines from line address ``addr`` (+R[rb] with
        ``addr_rb``) into every region of ``regions`` (default ``out.region``)."""
        c = self._chan("LOAD", 0, out, need_region=False)
        if regions is None:
            if c.region is None:
                self._err("LOAD", "no regions: give regions=[...] or ch(region, ...)")
            regions = [c.region]
        mask = self._regions_mask("LOAD", regions)
        addr = self._word("LOAD", "addr", addr)
        return self._sub(I.LOAD, [c], iterations=iterations, ra=ra, rb=rb, nb=nb,
                         flags=(2 if addr_rb else 0), w6=addr, w1_low=mask)

    def load_amem(self, region, channel, entry, addr, *, lines=1, rb=0, addr_rb=False, nb=False):
        """LOAD amem mode: ``lines`` lines from ``addr`` into the address memory of
        global channel ``channel`` (a number, or ``"DOTSIG.a"``-style name) of
        ``region``, entries ``entry`` onward."""
        mn = "LOAD"
        region = self._int(mn, "region", region, 0, self.cfg.nregions - 1)
        if isinstance(channel, str):
            names = {f"{I.SUB_OPS[o]}.{I.CHANNELS[o][i][0]}".lower(): g
                     for g, (o, i) in enumerate(I.GLOBAL_CHANNELS)}
            if channel.lower() not in names:
                self._err(mn, f"unknown channel {channel!r} (one of {sorted(names)})")
            channel = names[channel.lower()]
        channel = self._int(mn, "amem channel", channel, 0, len(I.GLOBAL_CHANNELS) - 1)
        entry = self._int(mn, "amem entry", entry, 0, 0xFFFF)
        addr = self._word(mn, "addr", addr)
        return self._sub(I.LOAD, [None], iterations=lines, rb=rb, nb=nb,
                         flags=1 | (2 if addr_rb else 0), w6=addr,
                         w7=(channel << I.AMEM_CH_SHIFT) | entry, w1_low=1 << region)

    def store(self, src, addr, *, iterations=1, ra=0, rb=0, addr_rb=False, nb=False):
        """STORE ``length(src)*iterations`` lines of ``src`` to line address ``addr``."""
        c = self._chan("STORE", 0, src)
        addr = self._word("STORE", "addr", addr)
        return self._sub(I.STORE, [c], iterations=iterations, ra=ra, rb=rb, nb=nb,
                         flags=(2 if addr_rb else 0), w6=addr)

    def _dim(self, mn, dim):
        return self._int(mn, "dim", dim, 1, self.cfg.max_dim)

    def dotsig(self, a, b, res, *, dim, iterations=1, sigmoid=False, ra=0, rb=0, nb=False):
        cs = [self._chan("DOTSIG", k, c) for k, c in enumerate((a, b, res))]
        return self._sub(I.DOTSIG, cs, iterations=iterations, ra=ra, rb=rb, nb=nb,
                         flags=int(bool(sigmoid)), w6=self._dim("DOTSIG", dim))

    def sigdelta(self, z, b, y, *, dim, iterations=1, sigmoid=False, ra=0, rb=0, nb=False):
        cs = [self._chan("SIGDELTA", k, c) for k, c in enumerate((z, b, y))]
        return self._sub(I.SIGDELTA, cs, iterations=iterations, ra=ra, rb=rb, nb=nb,
                         flags=int(bool(sigmoid)), w6=self._dim("SIGDELTA", dim))

    def scalar(self, a, b, res, *, alpha, al=0, mode="sgd", iterations=1, ra=0, rb=0, nb=False):
        """Scalar engine; ``mode`` "sgd" (``alpha*(a-b)``) or "scd" (soft threshold with
        ``g = a``, ``x = b``, ``al`` = alpha*lambda1 word)."""
        modes = {"sgd": 0, "scd": 1, 0: 0, 1: 1}
        if mode not in modes:
            self._err("SCALAR", f"mode = {mode!r} must be 'sgd' or 'scd'")
        cs = [self._chan("SCALAR", k, c) for k, c in enumerate((a, b, res))]
        return self._sub(I.SCALAR, cs, iterations=iterations, ra=ra, rb=rb, nb=nb,
                         flags=modes[mode], w6=self._word("SCALAR", "alpha", alpha),
                         w7=self._word("SCALAR", "al", al))

    def multsub(self, x, a, s, y, *, dim, iterations=1, s_lane1=False, ra=0, rb=0, nb=False):
        cs = [self._chan("MULTSUB", k, c) for k, c in enumerate((x, a, s, y))]
        return self._sub(I.MULTSUB, cs, iterations=iterations, ra=ra, rb=rb, nb=nb,
                         flags=int(bool(s_lane1)), w6=self._dim("MULTSUB", dim))

    def l2reg(self, x, xold, y, *, dim, c, iterations=1, ra=0, rb=0, nb=False):
        cs = [self._chan("L2REG", k, ch_) for k, ch_ in enumerate((x, xold, y))]
        return self._sub(I.L2REG, cs, iterations=iterations, ra=ra, rb=rb, nb=nb,
                         w6=self._dim("L2REG", dim), w7=self._word("L2REG", "c", c))

    # ---- assembly ----------------------------------------------------------------
    def assemble(self) -> Assembled:
        n = len(self.items)
        if n == 0:
            raise AsmError(f"{self.name}: empty program (at least one instruction)")
        for nm, pc in (("StoreContext", self.store_pc), ("LoadContext", self.load_pc)):
            if pc is not None and pc >= n:
                raise AsmError(f"{self.name}: the {nm} group is marked at PC {pc} but has no instructions")
        for lab, pc in self.labels.items():
            if pc >= n:
                ln = self._label_lines.get(lab)
                raise AsmError(f"{self.name}: label {lab!r}" + (f" (line {ln})" if ln is not None else "")
                               + f" is at PC {pc}, past the last instruction")
        words = []
        for pc, it in enumerate(self.items):
            ws = list(it.words)
            where = f"{self.name}: instruction {pc} ({it.mnemonic})" + (
                f", line {it.line}" if it.line is not None else "")
            if isinstance(ws[1], str):
                if ws[1] not in self.labels:
                    raise AsmError(f"{where}: undefined label {ws[1]!r}")
                ws[1] = self.labels[ws[1]]
            if not it.raw:
                err = check(decode(ws), self.cfg, n)
                if err:
                    raise AsmError(f"{where}: {I.ERROR_NAMES[err[0]]}: {err[1]}")
            words.append(tuple(w & MASK32 for w in ws))
        if self.load_pc is None and any(w[0] >> I.OP_SHIFT == I.RESUME for w in words):
            pc = next(k for k, w in enumerate(words) if w[0] >> I.OP_SHIFT == I.RESUME)
            ln = self.items[pc].line
            raise AsmError(f"{self.name}: instruction {pc} (RESUME)" + (f", line {ln}" if ln is not None else "")
                           + ": RESUME without a LoadContext group (.load_context)")
        sp = I.END_PC if self.store_pc is None else self.store_pc
        lp = I.END_PC if self.load_pc is None else self.load_pc
        image = build_image(words, sp, lp)
        listing = _listing(words, sp, lp, self.labels, self.items)
        return Assembled(image, words, sp, lp, dict(self.labels), listing,
                         [it.src for it in self.items])


def build_image(words, store_pc=I.END_PC, load_pc=I.END_PC, n=None, header_extra=(0,) * 5) -> bytes:
    """Program image bytes from instruction words (no checks: ``n`` overrides the
    header's count and ``header_extra`` its words 3..7, for building faulty images)."""
    hdr = [len(words) if n is None else n, store_pc, load_pc] + list(header_extra)
    flat = hdr + [w for ins in words for w in ins]
    return np.asarray([w & MASK32 for w in flat], dtype="<u4").tobytes()


def image_words(image: bytes):
    """``(header words, list of instruction word tuples)`` of an image."""
    if len(image) < I.HEADER_BYTES or len(image) % I.INSTR_BYTES:
        raise ValueError(f"image length {len(image)} is not a header plus whole instructions")
    w = np.frombuffer(bytes(image), dtype="<u4").astype(np.int64)
    hdr = [int(x) for x in w[:8]]
    ins = [tuple(int(x) for x in w[8 + 8 * i: 16 + 8 * i]) for i in range((len(w) - 8) // 8)]
    return hdr, ins


# ---------------------------------------------------------------------------------
# Disassembly and listing
# ---------------------------------------------------------------------------------
def _fmt_ch(region, word, add_ra, add_rb):
    f = decode_access(word)
    if f["bram"] == f["fifo"]:
        return None
    if encode_access(f["length"], f["offset"], fifo=bool(f["fifo"]), keep=bool(f["keep"]),
                     use_amem=bool(f["use_amem"])) != word:
        return None
    args = ([] if region is None else [str(region)]) + [str(f["length"])]
    if f["offset"]:
        args.append(str(f["offset"]))
    for key, v in (("fifo", f["fifo"]), ("keep", f["keep"]), ("amem", f["use_amem"]),
                   ("ra", add_ra), ("rb", add_rb)):
        if v:
            args.append(f"{key}=1")
    return ("acc(" if region is None else "ch(") + ", ".join(args) + ")"


def disassemble_instr(words, labels=None) -> str:
    """Text of one instruction (re-assemblable); ``RAW ...`` when not expressible."""
    ins = decode(words)
    w = ins.words
    raw = "RAW " + ", ".join(f"{x:#010x}" for x in w)
    op = ins.op
    labels = labels or {}

    def tgt(t):
        return "0xff" if t == I.END_PC else labels.get(t, str(t))

    if op in I.CONTROL_OPS:
        if ins.nb or ins.iterations or any(w[2:]):
            return raw
        if op == I.ADDI:
            if ins.rb:
                return raw
            if ins.ra == 0:
                return f"LI R{ins.rd}, {_s32(w[1])}"
            return f"ADDI R{ins.rd}, R{ins.ra}, {_s32(w[1])}"
        if op in (I.BLT, I.BGE, I.BEQ, I.BNE):
            if w[1] >> 8 or ins.rd:
                return raw
            return f"{ins.mnemonic} R{ins.ra}, R{ins.rb}, {tgt(w[1])}"
        if op in (I.ADD, I.SUB):
            if w[1]:
                return raw
            return f"{ins.mnemonic} R{ins.rd}, R{ins.ra}, R{ins.rb}"
        if ins.ra or ins.rb or ins.rd:
            return raw
        if op == I.JMP:
            if w[1] >> 8:
                return raw
            return "END" if w[1] == I.END_PC else f"JMP {tgt(w[1])}"
        if op == I.BLOCK:
            if w[1] >> 7:
                return raw
            names = [f'"{I.SUB_OPS[I.LOAD + b].lower()}"' for b in range(7) if w[1] >> b & 1]
            return "BLOCK" + (" " + ", ".join(names) if names else "")
        if w[1]:
            return raw
        return ins.mnemonic
    if op not in I.SUB_OPS or ins.rd:
        return raw
    fl = ins.flags
    if fl & ~sub_flags_allowed(op):
        return raw
    chans = I.CHANNELS[op]
    nch = len(chans)
    it = ins.iterations
    common = []
    if it != 1:
        common.append(f"iterations={it}")
    if ins.ra:
        common.append(f"ra=R{ins.ra}")
    if ins.rb:
        common.append(f"rb=R{ins.rb}")
    if ins.nb:
        common.append("nb=1")
    if op == I.LOAD:
        mask = w[1] & 0xFFFF
        if any(ins.add_ra(k) or ins.add_rb(k) for k in range(1, NCH)) or any(w[3:6]) or mask == 0:
            return raw
        addr_rb = ["addr_rb=1"] if fl & 2 else []
        if fl & 1:
            if w[2] or ins.add_ra(0) or ins.add_rb(0) or bin(mask).count("1") != 1 or w[7] >> 21 or ins.ra:
                return raw
            region = mask.bit_length() - 1
            gch = (w[7] >> 16) & 0x1F
            extra = [f"lines={it}"] + [c for c in common if not c.startswith("iterations")]
            return (f"LOAD_AMEM {region}, {gch}, {w[7] & 0xFFFF}, {w[6]:#x}, "
                    + ", ".join(extra + addr_rb))
        if w[7]:
            return raw
        c = _fmt_ch(None, w[2], ins.add_ra(0), ins.add_rb(0))
        if c is None:
            return raw
        regs = [b for b in range(16) if mask >> b & 1]
        return (f"LOAD {c}, {w[6]:#x}, regions=[{', '.join(map(str, regs))}]"
                + "".join(", " + x for x in common + addr_rb))
    cs = []
    for k in range(NCH):
        if k >= nch:
            if ins.region(k) or w[2 + k] or ins.add_ra(k) or ins.add_rb(k):
                return raw
            continue
        c = _fmt_ch(ins.region(k), w[2 + k], ins.add_ra(k), ins.add_rb(k))
        if c is None:
            return raw
        cs.append(c)
    args = list(cs)
    if op == I.STORE:
        if w[7]:
            return raw
        args.append(f"{w[6]:#x}")
        if fl & 2:
            common.append("addr_rb=1")
    elif op == I.SCALAR:
        args.append(f"alpha={_s32(w[6])}")
        if w[7]:
            args.append(f"al={_s32(w[7])}")
        if fl & 1:
            args.append('mode="scd"')
    else:
        if op != I.L2REG and w[7]:
            return raw
        args.append(f"dim={w[6]}")
        if op == I.L2REG:
            args.append(f"c={_s32(w[7])}")
        if fl & 1:
            args.append("s_lane1=1" if op == I.MULTSUB else "sigmoid=1")
    return f"{ins.mnemonic} " + ", ".join(args + common)


def disassemble(image: bytes) -> str:
    """Text form of a program image (header count, markers and generated labels
    ``L<pc>`` for branch targets); :func:`assemble_text` of it rebuilds the image when
    every instruction is expressible and the header is well formed."""
    hdr, ins = image_words(image)
    n = hdr[0]
    ins = ins[:n] if 0 <= n <= len(ins) else ins
    targets = set()
    for w in ins:
        d = decode(w)
        if d.op in (I.BLT, I.BGE, I.BEQ, I.BNE, I.JMP) and not w[1] >> 8 and w[1] != I.END_PC \
                and w[1] < len(ins):
            targets.add(w[1])
    labels = {t: f"L{t}" for t in sorted(targets)}
    out = [f"# {len(ins)} instructions, StoreContext PC {hdr[1]:#04x}, LoadContext PC {hdr[2]:#04x}"]
    for pc, w in enumerate(ins):
        if pc == hdr[1]:
            out.append(".store_context")
        if pc == hdr[2]:
            out.append(".load_context")
        if pc in labels:
            out.append(f"{labels[pc]}:")
        out.append("    " + disassemble_instr(w, labels))
    return "\n".join(out) + "\n"


def _listing(words, sp, lp, labels, items) -> str:
    by_pc = {}
    for lab, pc in labels.items():
        by_pc.setdefault(pc, []).append(lab)
    tl = {pc: labs[0] for pc, labs in by_pc.items()}
    out = [f"; {len(words)} instructions; StoreContext PC {sp:#04x}; LoadContext PC {lp:#04x}"]
    for pc, w in enumerate(words):
        if pc == sp:
            out.append("; ---- StoreContext group")
        if pc == lp:
            out.append("; ---- LoadContext group")
        for lab in by_pc.get(pc, []):
            out.append(f"{lab}:")
        hexw = " ".join(f"{x:08x}" for x in w)
        src = f"  ; line {items[pc].line}" if items[pc].line is not None else ""
        out.append(f"{pc:3d} {32 * (pc + 1):5x}: {hexw}  {disassemble_instr(w, tl)}{src}")
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------------
# Text form
# ---------------------------------------------------------------------------------
_TEXT_OPS = {
    "NOP": "nop", "ADDI": "addi", "LI": "li", "ADD": "add", "SUB": "sub", "BLT": "blt",
    "BGE": "bge", "BEQ": "beq", "BNE": "bne", "JMP": "jmp", "END": "end", "BLOCK": "block",
    "YIELD": "yield_", "RESUME": "resume", "RAW": "raw", "LOAD": "load",
    "LOAD_AMEM": "load_amem", "STORE": "store", "DOTSIG": "dotsig", "SIGDELTA": "sigdelta",
    "SCALAR": "scalar", "MULTSUB": "multsub", "L2REG": "l2reg",
}


class _Eval:
    """Evaluates one argument expression of the text form (no Python eval)."""

    def __init__(self, where):
        self.where = where

    def __call__(self, node):
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, str)) \
                and not isinstance(node.value, bool):
            return node.value
        if isinstance(node, ast.Constant) and node.value in (True, False):
            return bool(node.value)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            v = self(node.operand)
            if not isinstance(v, int):
                raise AsmError(f"{self.where}: cannot negate {v!r}")
            return -v if isinstance(node.op, ast.USub) else v
        if isinstance(node, ast.Name):
            if re.fullmatch(r"[Rr]\d+", node.id):
                return int(node.id[1:]) if int(node.id[1:]) < I.NUM_REGS else node.id
            if node.id in ("True", "False"):
                return node.id == "True"
            return node.id  # a label
        if isinstance(node, (ast.List, ast.Tuple)):
            return [self(e) for e in node.elts]
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("ch", "acc"):
            args = [self(a) for a in node.args]
            kw = {k.arg: self(k.value) for k in node.keywords}
            try:
                return (ch if node.func.id == "ch" else acc)(*args, **kw)
            except (TypeError, ValueError) as e:
                raise AsmError(f"{self.where}: {node.func.id}(...): {e}") from None
        raise AsmError(f"{self.where}: cannot read argument {ast.unparse(node)!r}")


def parse(text: str, cfg: PUConfig | None = None, name: str = "text") -> Program:
    """Parse the text form (module docstring) into a :class:`Program`."""
    p = Program(cfg, name)
    for ln, raw_line in enumerate(text.splitlines(), 1):
        line = raw_line.split("#", 1)[0].strip()
        p._line, p._src = ln, raw_line.strip()
        while True:
            m = re.match(r"([A-Za-z_][A-Za-z0-9_]*)\s*:\s*(.*)$", line)
            if not m:
                break
            p.label(m.group(1))
            line = m.group(2).strip()
        if not line:
            continue
        if line.startswith("."):
            d = line.lower()
            if d == ".store_context":
                p.store_context()
            elif d == ".load_context":
                p.load_context()
            else:
                raise AsmError(f"{name}: line {ln}: unknown directive {line!r}")
            continue
        m = re.match(r"([A-Za-z_][A-Za-z0-9_]*)\s*(.*)$", line)
        if not m:
            raise AsmError(f"{name}: line {ln}: expected a mnemonic, a label or a directive, "
                           f"got {line!r}")
        mn, rest = m.group(1).upper(), m.group(2).strip()
        where = f"{name}: line {ln} ({mn})"
        if mn not in _TEXT_OPS:
            raise AsmError(f"{where}: unknown mnemonic {m.group(1)!r}")
        try:
            call = ast.parse(f"f({rest})", mode="eval").body
        except SyntaxError as e:
            raise AsmError(f"{where}: cannot parse the arguments {rest!r} ({e.msg})") from None
        ev = _Eval(where)
        args = [ev(a) for a in call.args]
        kw = {k.arg: ev(k.value) for k in call.keywords}
        if None in kw:
            raise AsmError(f"{where}: ** arguments are not allowed")
        meth = getattr(p, _TEXT_OPS[mn])
        try:
            meth(*args, **kw)
        except TypeError as e:
            raise AsmError(f"{where}: bad arguments: {e}") from None
    p._line, p._src = None, ""
    return p


def assemble_text(text: str, cfg: PUConfig | None = None, name: str = "text") -> Assembled:
    return parse(text, cfg, name).assemble()


# ---------------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------------
_CLI_HELP = """\
PipeArch-PU assembler / disassembler.

  python -m golden.pipearch_asm asm PROG.pasm -o PROG.bin [--listing PROG.lst] [--format hex]
  python -m golden.pipearch_asm disasm PROG.bin [-o PROG.pasm] [--format hex]

The text form is the one of golden.pipearch_asm (one instruction per line, '#'
comments, 'name:' labels, .store_context / .load_context).  Every instruction is
checked as the PU's decoder checks it, for the PU generics given by --lanes,
--nregions, --depth, ... (defaults: PUConfig(); give your PU build's values); an error
names the file, line and field and the exit status is 1.  Images: 'bin' is the raw
little-endian program image (header + 32 bytes per instruction, what the host
copies to PROG_ADDR); 'hex' is one 32-bit word per line, 8 hex digits (for
$readmemh).  The image does not record the PU generics: assemble a disassembled
image with the options it was built for."""


def _cli_parser():
    import argparse
    ap = argparse.ArgumentParser(prog="python -m golden.pipearch_asm", description=_CLI_HELP,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = PUConfig()
    a = sub.add_parser("asm", help="assemble a text program into an image")
    a.add_argument("source", help="program text ('-' = standard input)")
    a.add_argument("-o", "--output", required=True, help="image file to write")
    a.add_argument("--listing", help="also write a listing (PC, byte offset, words, text, source line)")
    for flag, key, hlp in (("--lanes", "lanes", "words per line (LANES)"),
                           ("--nregions", "nregions", "regions (NREGIONS)"),
                           ("--depth", "depth", "lines per region (DEPTH)"),
                           ("--amem-depth", "amem_depth", "address-memory entries (AMEM_DEPTH)"),
                           ("--max-iter", "max_iter", "MAX_ITER"), ("--max-dim", "max_dim", "MAX_DIM"),
                           ("--f", "f", "fraction bits F of the Q32.F words")):
        a.add_argument(flag, dest=key, type=int, default=getattr(d, key),
                       help=f"{hlp} (default {getattr(d, key)})")
    a.add_argument("--subroutines", default=",".join(I.SUB_OPS[s] for s in d.subroutines),
                   help="comma-separated subroutines present in the PU (default: all)")
    a.add_argument("--region-configs", default=None,
                   help=f"comma-separated per-region configuration, one of {CONFIGS} each "
                        "(default: all regular)")
    a.add_argument("--format", choices=("bin", "hex"), default="bin", help="image format (default bin)")
    s = sub.add_parser("disasm", help="disassemble an image into the text form")
    s.add_argument("image", help="image file ('bin' or 'hex', see --format)")
    s.add_argument("-o", "--output", default="-", help="text file to write (default: standard output)")
    s.add_argument("--format", choices=("bin", "hex"), default="bin", help="image format (default bin)")
    return ap


def image_to_hex(image: bytes) -> str:
    """One 32-bit word per line (8 lower-case hex digits), header first."""
    w = np.frombuffer(bytes(image), dtype="<u4")
    return "".join(f"{int(x):08x}\n" for x in w)


def hex_to_image(text: str, name: str = "hex") -> bytes:
    words = []
    for ln, line in enumerate(text.splitlines(), 1):
        line = line.split("//", 1)[0].split("#", 1)[0].strip()
        if not line:
            continue
        for tok in line.split():
            if not re.fullmatch(r"[0-9A-Fa-f]{1,8}", tok):
                raise AsmError(f"{name}: line {ln}: {tok!r} is not a 32-bit hex word")
            words.append(int(tok, 16))
    return np.asarray(words, dtype="<u4").tobytes()


def _cli_config(args) -> PUConfig:
    names = {v: k for k, v in I.SUB_OPS.items()}
    subs = []
    for s in (x.strip().upper() for x in args.subroutines.split(",") if x.strip()):
        if s not in names:
            raise AsmError(f"--subroutines: unknown subroutine {s!r} (one of {', '.join(names)})")
        subs.append(names[s])
    rc = None
    if args.region_configs:
        rc = tuple(x.strip() for x in args.region_configs.split(","))
    try:
        return PUConfig(lanes=args.lanes, f=args.f, nregions=args.nregions, depth=args.depth,
                        amem_depth=args.amem_depth, max_iter=args.max_iter, max_dim=args.max_dim,
                        subroutines=tuple(subs), region_configs=rc)
    except ValueError as e:
        raise AsmError(f"PU configuration: {e}") from None


def main(argv=None) -> int:
    import sys
    args = _cli_parser().parse_args(argv)
    try:
        if args.cmd == "asm":
            cfg = _cli_config(args)
            if args.source == "-":
                text, name = sys.stdin.read(), "<stdin>"
            else:
                try:
                    with open(args.source, encoding="utf-8") as fh:
                        text = fh.read()
                except OSError as e:
                    raise AsmError(f"{args.source}: {e.strerror}") from None
                name = args.source
            a = assemble_text(text, cfg, name)
            if args.format == "hex":
                with open(args.output, "w", encoding="utf-8") as fh:
                    fh.write(image_to_hex(a.image))
            else:
                with open(args.output, "wb") as fh:
                    fh.write(a.image)
            if args.listing:
                with open(args.listing, "w", encoding="utf-8") as fh:
                    fh.write(a.listing)
            print(f"{name}: {a.n} instructions, {len(a.image)} bytes -> {args.output}", file=sys.stderr)
        else:
            try:
                with open(args.image, "rb") as fh:
                    data = fh.read()
            except OSError as e:
                raise AsmError(f"{args.image}: {e.strerror}") from None
            if args.format == "hex":
                data = hex_to_image(data.decode("utf-8", "replace"), args.image)
            try:
                text = disassemble(data)
            except ValueError as e:
                raise AsmError(f"{args.image}: {e}") from None
            if args.output == "-":
                sys.stdout.write(text)
            else:
                with open(args.output, "w", encoding="utf-8") as fh:
                    fh.write(text)
    except AsmError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    # run through the package module so AsmError is one class
    from golden.pipearch_asm import main as _main
    raise SystemExit(_main())
