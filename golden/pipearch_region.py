"""Golden model of a PipeArch on-chip memory region (``pipearch_region`` core).

A region holds ``depth`` lines.  Channels access it with a 32-bit *regionaccess* word
(PipeArch Table 3) plus an iteration count:

====== =========================================================================
bits   field
====== =========================================================================
[31]   BRAM mode (addressed)
[30]   FIFO mode (exactly one of [31], [30] must be set)
[29:16] length: lines per iteration, 1..depth
[15]   keep count at iterations
[14]   use the channel's address memory
[13:0] offset (lines), taken modulo depth
====== =========================================================================

BRAM mode, line ``k`` (0 <= k < length) of iteration ``j`` (0 <= j < iterations):

* index ``i = j*length + k`` when keep-count is set (the position keeps advancing
  across iterations), else ``i = k`` (every iteration repeats the same lines);
* address ``(offset + i) mod depth``, or with use-address-memory
  ``(offset + amem[i mod amem_depth]) mod depth``.  Any 14-bit offset is legal and
  an access may run past the end of the region: addresses wrap (a ring buffer, e.g.
  the model and sample rings of the streamed SGD program).

FIFO mode ignores offset, keep-count and use-address-memory: ``length*iterations``
lines are pushed (write) or popped (read).  The FIFO is a ring over the storage it
lives in (write pointer ``wptr``, read pointer(s) ``rptr``), so in the ``regular`` and
``replicated`` configurations FIFO pushes write region lines that BRAM-mode reads see,
and BRAM-mode writes into queued positions change what a FIFO read returns.

Configurations:

* ``regular``: one storage, one FIFO (shared by every read channel);
* ``replicated``: one copy per read channel, every write goes to every copy; the FIFO
  is one queue as in ``regular`` (one write pointer, one read pointer, one count):
  a line pushed once is popped once, by whichever read channel pops it (each read
  channel reads it from its own copy, so FIFO and BRAM-mode readers run in parallel);
* ``type_replicated``: separate BRAM storage and FIFO storage.

The model runs accesses one after the other (``ops`` order).  Hardware may overlap
accesses; the result is the same as long as overlapping accesses do not touch the same
lines (FIFO producer/consumer overlap is always fine).  ``reset_fifo()`` empties the
FIFO (pointers to 0, storage kept): the hardware does this on reset and the PU on
every START, so programs know where their pushed lines land.  A push onto a full FIFO or a pop
from an empty one in this sequential order raises ``ValueError``: split the accesses
and interleave them in the order the hardware will see them.
"""
from __future__ import annotations

import numbers

import numpy as np

CONFIGS = ("regular", "replicated", "type_replicated")
BRAM_BIT, FIFO_BIT, KEEP_BIT, AMEM_BIT = 31, 30, 15, 14
MAX_LENGTH = (1 << 14) - 1
MAX_OFFSET = (1 << 14) - 1


def _int(v, name, lo=None, hi=None):
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Integral):
        raise ValueError(f"{name} must be an integer, got {v!r}")
    v = int(v)
    if lo is not None and v < lo:
        raise ValueError(f"{name}={v} is below {lo}")
    if hi is not None and v > hi:
        raise ValueError(f"{name}={v} is above {hi}")
    return v


def encode_access(length, offset=0, fifo=False, keep=False, use_amem=False) -> int:
    """Build a regionaccess word (exactly one of BRAM/FIFO set)."""
    length = _int(length, "length", 0, MAX_LENGTH)
    offset = _int(offset, "offset", 0, MAX_OFFSET)
    return ((0 if fifo else 1) << BRAM_BIT) | ((1 if fifo else 0) << FIFO_BIT) | (length << 16) \
        | (int(bool(keep)) << KEEP_BIT) | (int(bool(use_amem)) << AMEM_BIT) | offset


def decode_access(word) -> dict:
    word = _int(word, "access word", 0, (1 << 32) - 1)
    return {"bram": (word >> BRAM_BIT) & 1, "fifo": (word >> FIFO_BIT) & 1,
            "length": (word >> 16) & 0x3FFF, "keep": (word >> KEEP_BIT) & 1,
            "use_amem": (word >> AMEM_BIT) & 1, "offset": word & 0x3FFF}


def access_error(word, iterations, depth) -> str | None:
    """Why the hardware rejects (access word, iterations), or None when it is legal."""
    f = decode_access(word)
    if f["bram"] == f["fifo"]:
        return "exactly one of the BRAM [31] and FIFO [30] bits must be set"
    if f["length"] == 0:
        return "length is 0"
    if f["length"] > depth:
        return f"length {f['length']} exceeds depth {depth}"
    if iterations == 0:
        return "iterations is 0"
    return None


def bram_addresses(word, iterations, depth, amem=None, amem_depth=None) -> list[int]:
    """Line addresses of a BRAM-mode access, in access order."""
    f = decode_access(word)
    out = []
    for j in range(iterations):
        for k in range(f["length"]):
            i = j * f["length"] + k if f["keep"] else k
            if f["use_amem"]:
                if amem is None:
                    raise ValueError("use-address-memory is set but no address memory was given")
                i = int(amem[i % amem_depth])
            out.append((f["offset"] + i) % depth)
    return out


class Region:
    """Sequential model of one region; ``write``/``read`` return what the hardware does."""

    def __init__(self, depth: int, lanes: int, config: str, n_read: int, amem_depth: int):
        self.depth = _int(depth, "depth", 1, 1 << 14)
        self.lanes = _int(lanes, "lanes", 1)
        if config not in CONFIGS:
            raise ValueError(f"config must be one of {CONFIGS}, got {config!r}")
        self.config = config
        self.n_read = _int(n_read, "n_read", 1)
        self.amem_depth = _int(amem_depth, "amem_depth", 1)
        self.mem = np.zeros((depth, lanes), dtype=np.int64)
        self.fmem = np.zeros((depth, lanes), dtype=np.int64) if config == "type_replicated" else self.mem
        self.reset_fifo()

    def reset_fifo(self):
        """Empty the FIFO (pointers to 0); the storage keeps its lines."""
        self.wptr = 0
        self.rptr = 0
        self.count = 0

    def _amem(self, amem):
        if amem is None:
            return None
        a = np.asarray(amem)
        if a.ndim != 1 or len(a) != self.amem_depth or not np.issubdtype(a.dtype, np.integer):
            raise ValueError(f"amem must be a 1-D integer array of {self.amem_depth} entries")
        if np.any(a < 0) or np.any(a >= self.depth):
            raise ValueError(f"amem entries must be line addresses 0..{self.depth - 1}")
        return a

    def write(self, word, iterations, lines, amem=None) -> str | None:
        """Apply a write access; returns the rejection reason (nothing written) or None."""
        iterations = _int(iterations, "iterations", 0)
        err = access_error(word, iterations, self.depth)
        if err:
            return err
        f = decode_access(word)
        n = f["length"] * iterations
        lines = np.asarray(lines)
        if lines.shape != (n, self.lanes) or not np.issubdtype(lines.dtype, np.integer):
            raise ValueError(f"lines must be an integer array of shape {(n, self.lanes)}, got "
                             f"{lines.shape} {lines.dtype}")
        if f["fifo"]:
            for ln in lines:
                if self.count >= self.depth:
                    raise ValueError("FIFO full in sequential order (the hardware writer would stall)")
                self.fmem[self.wptr] = ln
                self.wptr = (self.wptr + 1) % self.depth
                self.count += 1
        else:
            for a, ln in zip(bram_addresses(word, iterations, self.depth, self._amem(amem),
                                            self.amem_depth), lines):
                self.mem[a] = ln
        return None

    def read(self, ch, word, iterations, amem=None):
        """Lines returned by read channel ``ch``, or the rejection reason (a str)."""
        ch = _int(ch, "ch", 0, self.n_read - 1)
        iterations = _int(iterations, "iterations", 0)
        err = access_error(word, iterations, self.depth)
        if err:
            return err
        f = decode_access(word)
        if f["fifo"]:
            out = []
            for _ in range(f["length"] * iterations):
                if self.count == 0:
                    raise ValueError("FIFO empty in sequential order (the hardware reader would stall)")
                out.append(self.fmem[self.rptr].copy())
                self.rptr = (self.rptr + 1) % self.depth
                self.count -= 1
            return np.array(out, dtype=np.int64).reshape(-1, self.lanes)
        addrs = bram_addresses(word, iterations, self.depth, self._amem(amem), self.amem_depth)
        return self.mem[addrs].copy()


def run_region(depth, lanes, config, n_read, amem_depth, ops) -> list:
    """Run ``ops`` in order.  Each op is a dict: ``kind`` ("write"/"read"), ``ch``,
    ``access``, ``iters``, ``lines`` (writes), ``amem`` (optional).  Returns one entry
    per op: for reads the (n, lanes) array of lines or the rejection reason, for writes
    None or the rejection reason."""
    r = Region(depth, lanes, config, n_read, amem_depth)
    out = []
    for k, op in enumerate(ops):
        if op.get("kind") == "write":
            out.append(r.write(op["access"], op["iters"], op["lines"], op.get("amem")))
        elif op.get("kind") == "read":
            out.append(r.read(op["ch"], op["access"], op["iters"], op.get("amem")))
        else:
            raise ValueError(f"ops[{k}].kind must be 'write' or 'read', got {op.get('kind')!r}")
    return out
