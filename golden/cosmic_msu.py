"""Golden model of the CoSMIC memory schedule unit (CoSMIC section 5.1 "Memory interface",
section 5.2 "Multi-Threaded Acceleration").

One schedule (a list of entries {Base PE Index, RD/WR, Broadcast, Size}) is shared by
all worker threads; the Thread Index Table gives each thread its own memory pointer
(Mem Addr, a *word* address) and the index of its first PE (PE Offset).  The unit walks
the schedule round-robin: for every entry, every thread in turn performs the transfer
of ``Size`` words between its Mem Addr and physical PE ``Base + PE Offset``, after which
its Mem Addr advances by ``Size``.  A broadcast read is performed once (from the shared
model pointer ``model_addr``, which then advances) and delivered to PE ``Base + PE
Offset`` of every thread.

Deliveries leave the unit as PE-row beats of ``lanes`` words: word ``k*lanes + i`` of a
transfer sits in lane ``i`` of beat ``k`` whatever the alignment of its memory address
(the shifter), unused lanes of the last beat are zero, and the beat carries the PE index
and a ``last`` flag.  A broadcast read goes out beat-major: beat 0 to every thread's PE,
then beat 1, ...

Pure functions, no HDL imports; every input is validated (``ValueError`` naming it).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

SIZE_BITS = 16          # entry bits [15:0]
BASE_LSB, BASE_BITS = 16, 12   # entry bits [27:16]
WR_BIT, BC_BIT = 28, 29        # entry bit 28: 1 = write (PEs -> memory), bit 29: broadcast read

# sticky error codes (shared with the RTL datasheet)
E_PE, E_SIZE, E_FULL, E_BUSY, E_REG, E_WRPE, E_RESP = 1, 2, 3, 4, 5, 6, 7


@dataclass(frozen=True)
class Entry:
    base: int
    write: bool = False
    bcast: bool = False
    size: int = 1

    def __post_init__(self):
        # fields of the 32-bit entry word: integers / booleans only, in their field widths
        # (a float would be truncated and an oversized value masked by encode())
        for n, bits in (("base", BASE_BITS), ("size", SIZE_BITS)):
            v = getattr(self, n)
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
                raise ValueError(f"Entry.{n} must be an integer, got {v!r}")
            if not 0 <= int(v) < 1 << bits:
                raise ValueError(f"Entry.{n} = {int(v)} does not fit its {bits}-bit field")
            object.__setattr__(self, n, int(v))
        for n in ("write", "bcast"):
            v = getattr(self, n)
            if isinstance(v, (bool, np.bool_)) or (isinstance(v, (int, np.integer)) and int(v) in (0, 1)):
                object.__setattr__(self, n, bool(v))
            else:
                raise ValueError(f"Entry.{n} must be a bool (or 0/1), got {v!r}")

    def encode(self) -> int:
        return ((int(self.size) & 0xFFFF) | ((int(self.base) & 0xFFF) << BASE_LSB)
                | (int(bool(self.write)) << WR_BIT) | (int(bool(self.bcast)) << BC_BIT))

    @staticmethod
    def decode(word: int) -> "Entry":
        word = int(word)
        return Entry(base=(word >> BASE_LSB) & 0xFFF, write=bool((word >> WR_BIT) & 1),
                     bcast=bool((word >> BC_BIT) & 1), size=word & 0xFFFF)


def entry_error(word: int, npe: int) -> int:
    """The error code a pushed entry word gets (0 = accepted); queue overflow is not
    checked here.  Priority: malformed (reserved bits 31:30 set, broadcast write) >
    PE index >= npe > size 0."""
    word = int(word)
    e = Entry.decode(word)
    if (word >> 30) & 3 or (e.write and e.bcast):
        return E_REG
    if e.base >= npe:
        return E_PE
    if e.size == 0:
        return E_SIZE
    return 0


@dataclass(frozen=True)
class MsuConfig:
    W: int = 32          # word width (bits)
    LANES: int = 4       # words per memory beat (= PEs fed per cycle)
    NPE: int = 64        # physical PEs
    NTHREADS: int = 4
    QDEPTH: int = 16     # schedule queue entries

    def __post_init__(self):
        for n in ("W", "LANES", "NPE", "NTHREADS", "QDEPTH"):
            v = getattr(self, n)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v <= 0:
                raise ValueError(f"{n} must be a positive integer, got {v!r}")
        if self.W % 8 or self.W & (self.W - 1):
            raise ValueError(f"W must be a power of two >= 8, got {self.W}")
        if self.LANES & (self.LANES - 1):
            raise ValueError(f"LANES must be a power of two, got {self.LANES}")
        if self.NPE > 1 << BASE_BITS:
            raise ValueError(f"NPE must be <= {1 << BASE_BITS}, got {self.NPE}")


@dataclass(frozen=True)
class Transfer:
    write: bool
    thread: int            # -1 for a broadcast
    pes: tuple             # target PE per delivery (one, or one per thread for a broadcast)
    addr: int              # word address
    size: int              # words


@dataclass
class Plan:
    transfers: list
    mem_addr: list         # Thread Index Table Mem Addr after the run
    model_addr: int
    errors: list = field(default_factory=list)   # (entry index, thread, code) of skipped transfers


def _int(v, name, lo=0, hi=None):
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
        raise ValueError(f"{name} must be an integer, got {v!r}")
    v = int(v)
    if v < lo or (hi is not None and v > hi):
        raise ValueError(f"{name}={v} out of range [{lo}, {hi}]")
    return v


def plan(cfg: MsuConfig, entries, mem_addr, pe_offset, model_addr: int = 0,
         strict: bool = True) -> Plan:
    """The transfers of one run, in issue order.  ``entries`` are :class:`Entry` or
    encoded words.  A target PE (Base + PE Offset) >= NPE raises with ``strict``;
    otherwise that transfer is skipped (the thread's pointer does not advance) and
    recorded in ``Plan.errors`` with code :data:`E_PE`, as the hardware does."""
    if not isinstance(cfg, MsuConfig):
        raise ValueError("cfg must be an MsuConfig")
    ents = []
    for i, e in enumerate(entries):
        if not isinstance(e, Entry):
            w = _int(e, f"entries[{i}]", 0, (1 << 32) - 1)
            code = entry_error(w, cfg.NPE)
            if code:
                raise ValueError(f"entries[{i}] = 0x{w:08x} is a bad entry (error code {code})")
            e = Entry.decode(w)
        else:
            code = entry_error(e.encode(), cfg.NPE) if 0 <= e.size < 1 << 16 and 0 <= e.base < 4096 else E_REG
            if code:
                raise ValueError(f"entries[{i}] = {e} is a bad entry (error code {code})")
        ents.append(e)
    if len(ents) > cfg.QDEPTH:
        raise ValueError(f"entries: {len(ents)} entries overflow the queue (QDEPTH={cfg.QDEPTH})")
    if len(mem_addr) != cfg.NTHREADS or len(pe_offset) != cfg.NTHREADS:
        raise ValueError(f"mem_addr and pe_offset need NTHREADS={cfg.NTHREADS} rows, got "
                         f"{len(mem_addr)} and {len(pe_offset)}")
    addr = [_int(a, f"mem_addr[{t}]") for t, a in enumerate(mem_addr)]
    off = [_int(o, f"pe_offset[{t}]", 0, cfg.NPE - 1) for t, o in enumerate(pe_offset)]
    maddr = _int(model_addr, "model_addr")
    out, errs = [], []
    for i, e in enumerate(ents):
        if e.bcast:
            pes = []
            for t in range(cfg.NTHREADS):
                p = e.base + off[t]
                if p >= cfg.NPE:
                    if strict:
                        raise ValueError(f"entries[{i}]: thread {t} targets PE {p} >= NPE={cfg.NPE}")
                    errs.append((i, t, E_PE))
                else:
                    pes.append(p)
            out.append(Transfer(False, -1, tuple(pes), maddr, e.size))
            maddr += e.size
            continue
        for t in range(cfg.NTHREADS):
            p = e.base + off[t]
            if p >= cfg.NPE:
                if strict:
                    raise ValueError(f"entries[{i}]: thread {t} targets PE {p} >= NPE={cfg.NPE}")
                errs.append((i, t, E_PE))
                continue
            out.append(Transfer(e.write, t, (p,), addr[t], e.size))
            addr[t] += e.size
    return Plan(out, addr, maddr, errs)


def _words(v, name: str, W: int) -> np.ndarray:
    """An array of unsigned ``W``-bit integer words as int64 (``W <= 32`` here); floats,
    booleans and other non-integers raise instead of being truncated."""
    a = np.asarray(v)
    if a.dtype == object:
        flat = a.ravel().tolist()
        bad = [e for e in flat if isinstance(e, bool) or not isinstance(e, (int, np.integer))]
        if bad:
            raise ValueError(f"{name} must hold integer words, got {bad[0]!r}")
        if any(not 0 <= int(e) < 1 << W for e in flat):
            raise ValueError(f"{name} words must be unsigned {W}-bit values")
        return np.array([int(e) for e in flat], dtype=np.int64).reshape(a.shape)
    if not np.issubdtype(a.dtype, np.integer) and not (a.size == 0 and a.dtype == np.float64):
        raise ValueError(f"{name} must hold integer words, got dtype {a.dtype}")
    if a.size and (int(a.min()) < 0 or int(a.max()) >> W):
        raise ValueError(f"{name} words must be unsigned {W}-bit values")
    return a.astype(np.int64)


@dataclass
class Result:
    beats: list            # (pe, tuple of LANES words, valid words, last)
    mem: np.ndarray        # memory image after the writes
    write_requests: list   # (pe, size) of every write transfer, in order


def run(cfg: MsuConfig, p: Plan, mem, write_data=None) -> Result:
    """Execute ``p`` against the word-addressed memory image ``mem`` (unsigned words of
    W bits).  ``write_data`` holds one array of ``size`` words per write transfer, in
    plan order (what the PEs hand back)."""
    m = _words(mem, "mem", cfg.W).copy()
    if m.ndim != 1:
        raise ValueError(f"mem must be 1-D, got shape {m.shape}")
    if np.any(m < 0) or np.any(m >> cfg.W):
        raise ValueError(f"mem words must be unsigned {cfg.W}-bit values")
    writes = [t for t in p.transfers if t.write]
    wd = list(write_data or [])
    if len(wd) != len(writes):
        raise ValueError(f"write_data has {len(wd)} arrays, the plan has {len(writes)} write transfers")
    L = cfg.LANES
    beats, reqs = [], []
    wi = 0
    for tr in p.transfers:
        if tr.addr + tr.size > len(m):
            raise ValueError(f"transfer at word address {tr.addr} size {tr.size} runs past mem "
                             f"({len(m)} words)")
        if tr.write:
            d = _words(wd[wi], f"write_data[{wi}]", cfg.W)
            if d.shape != (tr.size,):
                raise ValueError(f"write_data[{wi}] has shape {d.shape}, expected ({tr.size},)")
            if np.any(d < 0) or np.any(d >> cfg.W):
                raise ValueError(f"write_data[{wi}] words must be unsigned {cfg.W}-bit values")
            m[tr.addr:tr.addr + tr.size] = d
            reqs.append((tr.pes[0], tr.size))
            wi += 1
            continue
        words = m[tr.addr:tr.addr + tr.size]
        nb = -(-tr.size // L)
        for k in range(nb):
            chunk = [int(x) for x in words[k * L:(k + 1) * L]]
            n = len(chunk)
            chunk += [0] * (L - n)
            for pe in tr.pes:
                beats.append((pe, tuple(chunk), n, k == nb - 1))
    return Result(beats, m, reqs)


def mem_beats(cfg: MsuConfig, tr: Transfer) -> int:
    """Memory beats a transfer occupies (an unaligned start costs at most one extra)."""
    s = tr.addr % cfg.LANES
    return -(-(s + tr.size) // cfg.LANES)


def bursts(word_addr: int, size: int, lanes: int, beat_bytes: int, max_burst: int) -> list:
    """The (byte address, beats) INCR bursts the unit issues for a transfer: beat aligned,
    at most ``max_burst`` beats, never crossing a 4 KiB boundary."""
    for n, v in (("lanes", lanes), ("beat_bytes", beat_bytes), ("max_burst", max_burst)):
        _int(v, n, 1)
    s = word_addr % lanes
    ba = word_addr // lanes
    nb = -(-(s + size) // lanes)
    per_page = max(1, 4096 // beat_bytes)
    out = []
    while nb > 0:
        n = min(nb, max_burst, per_page - ba % per_page)
        out.append((ba * beat_bytes, n))
        ba += n
        nb -= n
    return out
