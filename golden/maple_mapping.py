"""MAPLE mapping tool (section 4.2) and instruction-level model of one PE chain.

The RTL core ``maple_pe_chain`` executes a stream of 32-bit words: instructions, some of
which are followed by inline data words.  This module

* defines that instruction set (:data:`OPCODES`, :func:`enc`, :func:`decode`),
* maps a matrix product ``C = A B`` (A: n x d streaming row-wise, B: d x m held
  column-wise in the PE local stores) plus a smart-memory reduction onto a chain:
  parallelism mode, block sizes and the instruction stream (:func:`plan_matmul`,
  :meth:`Plan.programs`), with a ``ValueError`` naming what does not fit,
* runs an instruction stream on NumPy exactly as the chain does (:class:`ChainModel`),
  returning every smart-memory dump beat ``(index, value, last)``,
* counts the off-chip bus traffic of a program with and without the smart memory
  (:func:`bus_traffic`).

Instruction word: ``opcode[31:28] | operand[27:0]`` (field layout per opcode in
:data:`OPCODES`).  Data words (after WRITE_A / WRITE_B / WRITE_BV) carry a W-bit two's
complement value in bits ``[W-1:0]``.

Stream beats (``ChainParams.DBEAT`` words of 32 bits per beat, the ``s_axis_cmd`` width):
a program is a list of beats.  An instruction beat holds the instruction in bits
``[31:0]`` (the rest zero).  WRITE_B's n data beats hold one word each in ``[31:0]``;
WRITE_A's n words are packed DBEAT per beat (word ``j`` of the beat in bits
``[32j+31:32j]``, ``ceil(n/DBEAT)`` beats, the unused words of the last beat ignored);
WRITE_BV n writes one word per PE at each of n local-store addresses, packed DBEAT per
beat in address-major, PE-minor order (``n*M/DBEAT`` beats).  With ``DBEAT = 1`` a beat is
one 32-bit word.

Datapath (what the model computes).  ILW = ILS_LINES * M input-local-store words, a
line holds M words, one per lane.  ``SET_PARALLEL_MODE`` sets ``G`` (words consumed per
step, a power of two <= M) and ``S`` (PEs combined per result, power of two <= G).  In
step ``j`` of ``MULT_ACC_DUMP n`` the chain reads word address ``w = ila + j*G``; PE
``i`` takes lane ``(w mod M) | (i mod G)`` of line ``w div M`` and local-store word
``lsa + j`` of its own store, and accumulates the full product exactly.  After ``n``
steps result ``r`` (``r = 0 .. M/S-1``) is the exact sum of the accumulators of PEs
``r*S .. r*S+S-1`` rounded once (F bits, round half up) and saturated to W bits -- the
repository dot rule -- and goes to the smart memory with index ``sm_addr + r``.
Modes used by the mapping tool:

* column (pm = 1): G = S = 1; every PE sees the same A word, PE i holds column i;
* split (pm = 1/S): G = S; PE i holds segment ``i mod S`` of column ``i div S``;
* replicate (pm = M/S): G = M; every PE holds the same column (segment ``i mod S``
  when S > 1) and PE i works on A row ``i div S`` of the row group: M/S rows in flight.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from . import maple
from .fixedpoint import QFormat, rshift_round

# ---------------------------------------------------------------------- the ISA
NOP, SET_PARALLEL_MODE, SET_SM_REDUCTION, SM_CTRL, DUMP_SM, SET_SM_ADDR, SET_PE_LS_ADDR, \
    SET_INPUT_LS_ADDR, INC_INPUT_LS_ADDR, WRITE_A, WRITE_B, MULT_ACC_DUMP, MULT_ACC_RUN, \
    SET_RUN_STRIDE, WRITE_BV = range(15)
RUN_MAX_PASSES = 127

OPCODES = [
    # (code, mnemonic, operand fields, meaning)
    (NOP, "NOP", "-", "no operation"),
    (SET_PARALLEL_MODE, "SET_PARALLEL_MODE", "[3:0] log2 G, [7:4] log2 S",
     "G words of the input local store per step (lane of PE i: (w mod M) OR (i mod G)), S PEs "
     "combined per result; needs S <= G <= M (else error, mode kept). Reset G = S = 1"),
    (SET_SM_REDUCTION, "SET_SM_REDUCTION", "[1:0] op, [2] largest, [23:8] k",
     "smart-memory OP (0 top-k selection, 1 min/max with index, 2 read-modify-write), CMP and "
     "K registers (waits until the smart memory is idle, then three register writes)"),
    (SM_CTRL, "SM_CTRL", "[0] START, [1] CLEAR, [2] DUMP, [3] ERRCLR",
     "smart-memory command: START arms it for one array (ended by a MULT_ACC_DUMP with "
     "last), CLEAR zeroes the RMW RAM (in the background), DUMP as DUMP_SM with len = 0, "
     "DUMP with START dumps and re-arms in one command (min/max: the dump overlaps the next "
     "array); waits until idle first"),
    (DUMP_SM, "DUMP_SM", "[13:0] len, [27:14] base",
     "dump the smart memory on m_axis_out (len = 0: LIST or min/max; else BASE/LEN are "
     "written first for an RMW range); waits until idle first"),
    (SET_SM_ADDR, "SET_SM_ADDR", "[15:0] index", "index of result 0 of the next MULT_ACC_DUMP"),
    (SET_PE_LS_ADDR, "SET_PE_LS_ADDR", "[15:0] addr",
     "PE local-store word address: first word read by MULT_ACC_DUMP, first word written by WRITE_B"),
    (SET_INPUT_LS_ADDR, "SET_INPUT_LS_ADDR", "[15:0] addr",
     "input local-store word address (ila): first word read by MULT_ACC_DUMP / written by WRITE_A"),
    (INC_INPUT_LS_ADDR, "INC_INPUT_LS_ADDR", "[15:0] delta", "ila += delta (mod ILW)"),
    (WRITE_A, "WRITE_A", "[15:0] n",
     "the next n stream words go to the input local store at ila, ila+1, ...; packed DBEAT "
     "words per beat (ceil(n/DBEAT) beats; DBEAT consecutive addresses written per cycle)"),
    (WRITE_B, "WRITE_B", "[15:0] n, [23:16] pe (255 = every PE)",
     "the next n stream words go to the local store of PE pe at lsa, lsa+1, ..."),
    (MULT_ACC_DUMP, "MULT_ACC_DUMP", "[15:0] n, [16] last, [23:17] nres",
     "n multiply-accumulate steps (1 <= n <= LSD, else error and skipped), then results "
     "0..nres-1 (nres = 0: all M/S; nres > M/S: error, skipped) to the smart memory, tlast on "
     "the final one when last = 1"),
    (MULT_ACC_RUN, "MULT_ACC_RUN", "[12:0] n, [13] last, [20:14] nres, [27:21] passes",
     "self-advancing MULT_ACC_DUMP: `passes` MAC passes of n steps back to back, pass p reading "
     "from ila + p*ila_stride and lsa + p*lsa_stride and sending its results to sm_addr + p*R "
     "(R = nres, or M/S for nres = 0); last applies to the final pass only. ila/lsa/sm_addr "
     "themselves are not changed. n, nres as MULT_ACC_DUMP; passes = 0 is an error (skipped)"),
    (SET_RUN_STRIDE, "SET_RUN_STRIDE", "[15:0] ila stride, [27:16] lsa stride",
     "address advance per MULT_ACC_RUN pass (mod ILW / LSD). Reset 0, 0"),
    (WRITE_BV, "WRITE_BV", "[15:0] n",
     "the next n*M/DBEAT beats go to every PE's local store at lsa, lsa+1, ..., lsa+n-1: "
     "word j of beat t is PE (t mod (M/DBEAT))*DBEAT + j at address lsa + t div (M/DBEAT) "
     "(one word per PE per address; DBEAT PEs written per cycle)"),
]
MNEMONIC = {c: name for c, name, _, _ in OPCODES}
SM_START, SM_CLEAR, SM_DUMP, SM_ERRCLR = 1, 2, 4, 8
OP_SEL, OP_MINMAX, OP_RMW = 0, 1, 2          # smart-memory OP register values
BCAST = 255


def enc(op: int, operand: int = 0) -> int:
    if not 0 <= op < 16:
        raise ValueError(f"opcode must be 0..15, got {op}")
    if not 0 <= operand < (1 << 28):
        raise ValueError(f"operand must fit 28 bits, got {operand}")
    return (op << 28) | operand


def i_mode(G: int, S: int) -> int:
    return enc(SET_PARALLEL_MODE, (int(S).bit_length() - 1) << 4 | (int(G).bit_length() - 1))


def i_reduction(op: int, k: int = 1, largest: bool = True) -> int:
    return enc(SET_SM_REDUCTION, (k << 8) | (int(bool(largest)) << 2) | op)


def i_macc(n: int, last: bool = False, nres: int = 0) -> int:
    return enc(MULT_ACC_DUMP, (nres << 17) | (int(bool(last)) << 16) | n)


def i_run(n: int, passes: int, last: bool = False, nres: int = 0) -> int:
    if not 0 <= n < (1 << 13) or not 0 <= passes <= RUN_MAX_PASSES or not 0 <= nres < 128:
        raise ValueError(f"MULT_ACC_RUN fields out of range: n={n} passes={passes} nres={nres}")
    return enc(MULT_ACC_RUN, (passes << 21) | (nres << 14) | (int(bool(last)) << 13) | n)


def i_stride(ila: int, lsa: int) -> int:
    return enc(SET_RUN_STRIDE, ((lsa & 0xFFF) << 16) | (ila & 0xFFFF))


def i_dump(base: int = 0, length: int = 0) -> int:
    return enc(DUMP_SM, (base << 14) | length)


def i_write_b(n: int, pe: int = BCAST) -> int:
    return enc(WRITE_B, (pe << 16) | n)


def decode(word: int) -> tuple[str, int]:
    word &= 0xFFFFFFFF
    return MNEMONIC.get(word >> 28, f"OP{word >> 28}"), word & ((1 << 28) - 1)


def data_word(v: int, W: int) -> int:
    return int(v) & ((1 << W) - 1) & 0xFFFFFFFF


def pack_beats(words, dbeat: int) -> list[int]:
    """32-bit data words -> stream beats of ``dbeat`` words (word j in bits [32j+31:32j],
    the last beat zero-padded)."""
    words = [int(w) & 0xFFFFFFFF for w in words]
    return [sum(w << (32 * j) for j, w in enumerate(words[b:b + dbeat])) for b in range(0, len(words), dbeat)]


def data_beats(word: int, M: int = 4, dbeat: int = 1) -> tuple[int, int]:
    """``(data beats, data words)`` that follow instruction ``word`` on the stream."""
    op, n = (int(word) & 0xFFFFFFFF) >> 28, int(word) & 0xFFFF
    if op == WRITE_A:
        return -(-n // dbeat), n
    if op == WRITE_B:
        return n, n
    if op == WRITE_BV:
        return n * M // dbeat, n * M
    return 0, 0


def beat_word(beats, f: int, dbeat: int, base: int = 0) -> int:
    """Data word ``f`` of the run of packed beats starting at ``beats[base]``."""
    return (int(beats[base + f // dbeat]) >> (32 * (f % dbeat))) & 0xFFFFFFFF


# ---------------------------------------------------------------------- chain parameters
@dataclass(frozen=True)
class ChainParams:
    """What the mapping needs to know about one chain (the generator parameters)."""
    M: int = 4            # PEs per chain
    LSD: int = 64         # words per PE local store
    ILS_LINES: int = 64   # input local store lines of M words
    KMAX: int = 16        # smart-memory LIST size
    DEPTH: int = 256      # smart-memory RMW entries
    IDXW: int = 16
    W: int = 32
    F: int = 16
    DBEAT: int = 1        # 32-bit data words per s_axis_cmd beat

    @property
    def ilw(self) -> int:
        return self.ILS_LINES * self.M

    @property
    def fmt(self) -> QFormat:
        return QFormat(self.W, self.F)

    @classmethod
    def from_params(cls, p: dict) -> "ChainParams":
        return cls(**{k: int(p[k]) for k in ("M", "LSD", "ILS_LINES", "KMAX", "DEPTH", "IDXW", "W", "F")},
                   DBEAT=int(p.get("DBEAT", 1)) or int(p["M"]))      # DBEAT 0 means M


# ---------------------------------------------------------------------- instruction-level model
class ChainModel:
    """Runs an instruction stream exactly as ``maple_pe_chain`` does (module docstring).

    :meth:`run` returns the list of dump beats ``(index, value, last)`` and keeps
    ``self.elements`` (every ``(index, value)`` sent to the smart memory, in order) and
    ``self.errors`` (chain errors: bad mode, bad MULT_ACC_DUMP)."""

    def __init__(self, cp: ChainParams):
        self.cp = cp
        self.fmt = cp.fmt
        M = cp.M
        self.ils = np.zeros(cp.ilw, dtype=np.int64)
        self.ls = np.zeros((M, cp.LSD), dtype=np.int64)
        self.G = self.S = 1
        self.ila = self.lsa = self.sma = 0
        self.ila_st = self.lsa_st = 0
        self.sm_op, self.sm_k, self.sm_largest = OP_SEL, cp.KMAX, True
        self.sm_mem = np.zeros(cp.DEPTH, dtype=np.int64)
        self.sm_arr: list[tuple[int, int]] = []
        self.sm_armed = False
        self.elements: list[tuple[int, int]] = []
        self.errors = 0
        self.sm_errors = 0
        self.beats: list[tuple[int, int, int]] = []
        self.dumps: list[list[tuple[int, int, int]]] = []

    def _signed(self, w: int) -> int:
        W = self.cp.W
        w &= (1 << W) - 1
        return w - (1 << W) if w >> (W - 1) else w

    # -- smart memory -------------------------------------------------------------
    def _sm_push(self, idx: int, val: int, last: bool):
        if not self.sm_armed:
            raise ValueError("MULT_ACC_DUMP result sent to a smart memory that is not armed "
                             "(SM_CTRL START missing): the hardware would stall forever")
        if self.sm_op == OP_RMW:
            if idx >= self.cp.DEPTH:
                self.sm_errors += 1
            else:
                lo, hi = self.fmt.min_int, self.fmt.max_int
                self.sm_mem[idx] = min(max(int(self.sm_mem[idx]) + val, lo), hi)
        else:
            self.sm_arr.append((idx, val))
        if last:
            self.sm_armed = False

    def _sm_dump(self, base: int, length: int) -> list[tuple[int, int, int]]:
        if self.sm_armed:
            raise ValueError("DUMP_SM while the smart memory is still armed (no MULT_ACC_DUMP "
                             "with last): the hardware would wait forever")
        out: list[tuple[int, int]] = []
        if self.sm_op == OP_RMW:
            if length:
                self.sm_base, self.sm_len = base, length
            b, n = getattr(self, "sm_base", 0), getattr(self, "sm_len", self.cp.DEPTH)
            if b + n > self.cp.DEPTH:
                raise ValueError(f"DUMP_SM range {b}+{n} exceeds DEPTH={self.cp.DEPTH}")
            out = [(b + j, int(self.sm_mem[b + j])) for j in range(n)]
        elif self.sm_arr:
            v = np.array([e[1] for e in self.sm_arr], dtype=np.int64)
            ix = np.array([e[0] for e in self.sm_arr], dtype=np.int64)
            if self.sm_op == OP_SEL:
                ti, tv = maple.topk(v, ix, self.sm_k, self.sm_largest)
                out = list(zip(ti.tolist(), tv.tolist()))
            else:
                (a, av), (b_, bv) = maple.min_max_with_index(v, ix)
                out = [(int(a), int(av)), (int(b_), int(bv))]
        beats = [(i, v, int(j == len(out) - 1)) for j, (i, v) in enumerate(out)]
        return beats

    # -- the chain ----------------------------------------------------------------
    def _macc(self, n: int, last: bool, nres: int, passes: int = 1):
        cp, M, G, S = self.cp, self.cp.M, self.G, self.S
        R = M // S
        if n == 0 or n > cp.LSD or nres > R or passes == 0:
            self.errors += 1
            return
        nres = R if nres == 0 else nres
        for p in range(passes):
            ila = (self.ila + p * self.ila_st) % cp.ilw
            lsa = (self.lsa + p * self.lsa_st) % cp.LSD
            sma = self.sma + p * nres
            acc = [0] * M
            for j in range(n):
                w = (ila + j * G) % cp.ilw
                line, lane0 = w // M, w % M
                for i in range(M):
                    a = int(self.ils[line * M + (lane0 | (i % G))])
                    b = int(self.ls[i, (lsa + j) % cp.LSD])
                    acc[i] += a * b
            for r in range(nres):
                s = sum(acc[r * S:(r + 1) * S])
                v = int(self.fmt.sat(rshift_round(np.asarray(s, dtype=object), self.fmt.F)))
                idx = (sma + r) % (1 << cp.IDXW)
                self.elements.append((idx, v))
                self._sm_push(idx, v, last and p == passes - 1 and r == nres - 1)

    def run(self, words) -> list[tuple[int, int, int]]:
        cp = self.cp
        words = [int(w) for w in words]
        pc = 0
        D = cp.DBEAT
        while pc < len(words):
            w = words[pc] & 0xFFFFFFFF
            pc += 1
            op, x = w >> 28, w & ((1 << 28) - 1)
            if op == SET_PARALLEL_MODE:
                G, S = 1 << (x & 15), 1 << ((x >> 4) & 15)
                if S <= G <= cp.M:
                    self.G, self.S = G, S
                else:
                    self.errors += 1
            elif op == SET_SM_REDUCTION:
                o, lg, k = x & 3, bool((x >> 2) & 1), (x >> 8) & 0xFFFF
                if o > 2 or not 1 <= k <= cp.KMAX:
                    raise ValueError(f"SET_SM_REDUCTION op={o} k={k}: the smart memory rejects it "
                                     f"(op 0..2, k 1..KMAX={cp.KMAX})")
                self.sm_op, self.sm_largest, self.sm_k = o, lg, k
            elif op == SM_CTRL:
                if x & SM_CLEAR:
                    self.sm_mem[:] = 0
                    self.sm_arr, self.sm_armed = [], False
                else:
                    if x & SM_DUMP:
                        beats = self._sm_dump(0, 0)
                        self.beats += beats
                        self.dumps.append(beats)
                    if x & SM_START:
                        self.sm_arr, self.sm_armed = [], True
            elif op == DUMP_SM:
                beats = self._sm_dump((x >> 14) & 0x3FFF, x & 0x3FFF)
                self.beats += beats
                self.dumps.append(beats)
            elif op == SET_SM_ADDR:
                self.sma = x & 0xFFFF
            elif op == SET_PE_LS_ADDR:
                self.lsa = (x & 0xFFFF) % cp.LSD
            elif op == SET_INPUT_LS_ADDR:
                self.ila = (x & 0xFFFF) % cp.ilw
            elif op == INC_INPUT_LS_ADDR:
                self.ila = (self.ila + (x & 0xFFFF)) % cp.ilw
            elif op == WRITE_A:
                n = x & 0xFFFF
                for j in range(n):
                    self.ils[(self.ila + j) % cp.ilw] = self._signed(beat_word(words, j, D, pc))
                pc += -(-n // D)
            elif op == WRITE_BV:
                n = x & 0xFFFF
                for f in range(n * cp.M):
                    t, i = divmod(f, cp.M)
                    self.ls[i, (self.lsa + t) % cp.LSD] = self._signed(beat_word(words, f, D, pc))
                pc += n * cp.M // D
            elif op == WRITE_B:
                n, pe = x & 0xFFFF, (x >> 16) & 0xFF
                for j in range(n):
                    v = self._signed(words[pc + j])
                    a = (self.lsa + j) % cp.LSD
                    if pe == BCAST:
                        self.ls[:, a] = v
                    elif pe < cp.M:
                        self.ls[pe, a] = v
                pc += n
            elif op == MULT_ACC_DUMP:
                self._macc(x & 0xFFFF, bool((x >> 16) & 1), (x >> 17) & 0x7F)
            elif op == MULT_ACC_RUN:
                self._macc(x & 0x1FFF, bool((x >> 13) & 1), (x >> 14) & 0x7F, (x >> 21) & 0x7F)
            elif op == SET_RUN_STRIDE:
                self.ila_st = (x & 0xFFFF) % cp.ilw
                self.lsa_st = ((x >> 16) & 0xFFF) % cp.LSD
        return self.beats


def run_program(cp: ChainParams, words) -> list[tuple[int, int, int]]:
    return ChainModel(cp).run(words)


# ---------------------------------------------------------------------- the mapping tool
REDUCTIONS = ("topk", "minmax", "rmw")
AXES = ("cols", "rows")


@dataclass
class Plan:
    """Output of :func:`plan_matmul` (section 4.2 parameters plus the hardware mode).

    ``axis = "cols"``: one smart-memory array per column of B, elements over the rows of
    A (index = A row), B replicated over the PEs; ``axis = "rows"``: one array per row of
    A, elements over the columns of B (index = B column); ``rmw``: every C entry is
    accumulated at RMW address ``rmw_base + i_local * m + j``."""
    n: int
    d: int
    m: int
    reduction: str
    axis: str
    k: int
    largest: bool
    chains: int
    cp: ChainParams
    mode: str              # "column", "split", "replicate"
    pm: Fraction           # paper's parallelism mode: > 1 replication, < 1 split
    G: int
    S: int
    b_col_size: int        # words of a (zero-padded) column segment in one local store
    b_num_cols: int        # column (sets) per local store
    b_block: int           # columns of B loaded at once (per chain)
    n_b_blocks: int
    a_num_rows: int        # rows of A per A block (input local store)
    n_a_blocks: int
    rows_in_flight: int
    cols_per_step: int
    rmw_base: int = 0
    notes: list[str] = field(default_factory=list)

    # ---- work split over chains ------------------------------------------------
    def chain_ranges(self) -> list[tuple[int, int]]:
        """Per chain, the range of B columns (axis cols) or A rows (rows / rmw) it owns."""
        total = self.m if self.axis == "cols" else self.n
        per = -(-total // self.chains)
        return [(min(h * per, total), min((h + 1) * per, total)) for h in range(self.chains)]

    def programs(self, A, B, rmw_clear: bool = True, rmw_dump: bool = True,
                 buffer: int = 0, continued: bool = False, keep_armed: bool = False) -> list[list[int]]:
        """One instruction stream (with inline data) per chain.  For ``rmw``,
        ``rmw_clear`` / ``rmw_dump`` put the CLEAR before and the DUMP after the pass, so
        several passes (e.g. CNN input-channel groups) can be concatenated and accumulate.
        ``buffer`` (axis rows / rmw): 1 places A and B in the upper halves of the input and
        PE local stores when they fit there (each half alone), so that concatenated programs
        alternating ``buffer`` 0, 1, 0, ... load one half while the passes of the previous
        program still read the other (the chain's writes wait only for the words still read).
        ``continued``: the program follows one of a plan with the same mode and reduction
        (e.g. the next input-channel group): no SET_PARALLEL_MODE / SET_SM_REDUCTION (the
        chain would wait for every earlier result to reach the smart memory before them).
        An RMW program is one smart-memory array (one START, tlast on its final pass);
        ``keep_armed`` leaves it open (no tlast) for a ``continued`` program that follows
        (no START), so concatenated groups never wait for a START handshake."""
        self._clear, self._dump, self._buffer = rmw_clear, rmw_dump, int(buffer) & 1
        self._continued = bool(continued)
        self._keep_armed = bool(keep_armed)
        A = np.asarray(A, dtype=np.int64)
        B = np.asarray(B, dtype=np.int64)
        if A.shape != (self.n, self.d) or B.shape != (self.d, self.m):
            raise ValueError(f"A must be ({self.n}, {self.d}) and B ({self.d}, {self.m}); got "
                             f"{A.shape} and {B.shape}")
        if not self.cp.fmt.in_range(A) or not self.cp.fmt.in_range(B):
            raise ValueError(f"A and B must hold {self.cp.fmt} words")
        lim = min(1 << self.cp.IDXW, 1 << 16)
        if self.axis == "cols" and self.n > lim:
            raise ValueError(f"n={self.n} rows do not fit the result index / SET_SM_ADDR field "
                             f"({lim} values)")
        out = []
        for lo, hi in self.chain_ranges():
            if self.axis == "cols":
                out.append(self._prog_cols(A, B[:, lo:hi]) if hi > lo else [])
            else:
                out.append(self._prog_rows(A[lo:hi], B) if hi > lo else [])
        return out

    # ---- helpers -------------------------------------------------------------
    def _seg(self, col: np.ndarray, s: int) -> np.ndarray:
        """Segment ``s`` of a column, zero-padded to b_col_size."""
        seg = np.zeros(self.b_col_size, dtype=np.int64)
        part = col[s * self.b_col_size:(s + 1) * self.b_col_size]
        seg[:len(part)] = part
        return seg

    def _w(self, v) -> list[int]:
        return [data_word(x, self.cp.W) for x in np.asarray(v).ravel().tolist()]

    def _wa(self, v) -> list[int]:
        """WRITE_A / WRITE_BV payload: the words packed DBEAT per beat."""
        return pack_beats(self._w(v), self.cp.DBEAT)

    def _write_bv(self, imgs, base: int = 0) -> list[int]:
        """WRITE_BV of one local-store image per PE (equal lengths) from address ``base``."""
        out = [] if self._st.get("lsa") == base else [enc(SET_PE_LS_ADDR, base)]
        self._st["lsa"] = base
        flat = np.stack([np.asarray(im, dtype=np.int64) for im in imgs], axis=1)   # address-major
        return out + [enc(WRITE_BV, flat.shape[0])] + self._wa(flat)

    def _passes(self, passes) -> list[int]:
        """Instruction words for a list of MAC passes ``(ila, lsa, sma, n, nres, last)``
        (``nres`` as encoded: 0 = all): consecutive passes with equal n and nres, constant
        ila and lsa strides and sma advancing by the results per pass (and ``last`` only on
        the final one) become one MULT_ACC_RUN; a set-up word is emitted only when its
        register (ila, lsa, sm_addr, the strides) does not already hold the value."""
        cp, R = self.cp, self.cp.M // self.S
        out, i, st = [], 0, self._st
        while i < len(passes):
            ila, lsa, sma, n, nres, last = passes[i]
            step = R if nres == 0 else nres
            k = 1
            if i + 1 < len(passes):
                d_ila = (passes[i + 1][0] - ila) % cp.ilw
                d_lsa = (passes[i + 1][1] - lsa) % cp.LSD
                while i + k < len(passes) and k < RUN_MAX_PASSES and not passes[i + k - 1][5]:
                    q, pv = passes[i + k], passes[i + k - 1]
                    if q[3] != n or q[4] != nres or (q[0] - pv[0]) % cp.ilw != d_ila or \
                            (q[1] - pv[1]) % cp.LSD != d_lsa or q[2] - pv[2] != step:
                        break
                    k += 1
            for key, op, v in (("ila", SET_INPUT_LS_ADDR, ila), ("lsa", SET_PE_LS_ADDR, lsa),
                               ("sma", SET_SM_ADDR, sma)):
                if st.get(key) != v:
                    out.append(enc(op, v))
                    st[key] = v
            if k == 1:
                out.append(i_macc(n, last, nres))
            else:
                if st.get("stride") != (d_ila, d_lsa):
                    out.append(i_stride(d_ila, d_lsa))
                    st["stride"] = (d_ila, d_lsa)
                out.append(i_run(n, k, passes[i + k - 1][5], nres))
            i += k
        return out

    def _head(self) -> list[int]:
        op = {"topk": OP_SEL, "minmax": OP_MINMAX, "rmw": OP_RMW}[self.reduction]
        self._st = {}          # set-up registers as the program leaves them (unknown at its start)
        if getattr(self, "_continued", False):
            return []
        return [i_mode(self.G, self.S), i_reduction(op, self.k, self.largest)]

    # ---- axis = cols: B column replicated, A rows stream, one array per column ----
    def _write_a_cols(self, A, r0, r1, g0: int = 0, g1: int | None = None) -> list[int]:
        """WRITE_A of the row groups g0..g1-1 of the A block r0..r1 (all by default), at their
        input-local-store address g0 * bcs * M."""
        M, S, RF, bcs = self.cp.M, self.S, self.rows_in_flight, self.b_col_size
        rows = r1 - r0
        groups = -(-rows // RF)
        g1 = groups if g1 is None else g1
        img = np.zeros((g1 - g0) * bcs * M, dtype=np.int64)
        for g in range(g0, g1):
            for j in range(bcs):
                for lane in range(M):
                    r = r0 + g * RF + lane // S
                    c = (lane % S) * bcs + j
                    if r < r1 and c < self.d:
                        img[((g - g0) * bcs + j) * M + lane] = A[r, c]
        self._st["ila"] = g0 * bcs * M
        return [enc(SET_INPUT_LS_ADDR, g0 * bcs * M), enc(WRITE_A, len(img))] + self._wa(img)

    def _prog_cols(self, A, B) -> list[int]:
        M, S, RF, bcs = self.cp.M, self.S, self.rows_in_flight, self.b_col_size
        mloc = B.shape[1]
        prog = self._head()
        a_blocks = [(a, min(a + self.a_num_rows, self.n)) for a in range(0, self.n, self.a_num_rows)]
        a_once = len(a_blocks) == 1
        armed = False
        # A resident (one block): its load is interleaved with the first column's passes, in
        # chunks of row groups (the chain writes a chunk while the passes of the previous
        # one run); the other columns reuse it
        chunked = a_once and self.cp.DBEAT > 1
        for b0 in range(0, mloc, self.b_num_cols):
            b1 = min(b0 + self.b_num_cols, mloc)
            # WRITE_B: column c of the block at local-store words (c-b0)*bcs ..; PE i gets segment i % S
            segs = [np.concatenate([self._seg(B[:, c], s) for c in range(b0, b1)]) for s in range(S)]
            if S == 1:          # the same column in every PE: one broadcast WRITE_B
                prog += [enc(SET_PE_LS_ADDR, 0), i_write_b(len(segs[0]), BCAST)] + self._w(segs[0])
                self._st["lsa"] = 0
            else:               # PE i holds segment i mod S: one WRITE_BV
                prog += self._write_bv([segs[i % S] for i in range(M)])
            for c in range(b0, b1):
                if not armed:
                    prog.append(enc(SM_CTRL, SM_START))
                for ab, (r0, r1) in enumerate(a_blocks):
                    first = c == 0
                    if not a_once or (first and not chunked):
                        prog += self._write_a_cols(A, r0, r1)
                    groups = -(-(r1 - r0) // RF)
                    passes = []
                    for g in range(groups):
                        row0 = r0 + g * RF
                        nres = min(RF, self.n - row0)
                        last = ab == len(a_blocks) - 1 and g == groups - 1
                        passes.append((g * bcs * M, (c - b0) * bcs, row0, bcs, 0 if nres == RF else nres, last))
                    if first and chunked:
                        ch = max(1, -(-groups // 4))
                        for g0 in range(0, groups, ch):
                            prog += self._write_a_cols(A, r0, r1, g0, min(g0 + ch, groups))
                            prog += self._passes(passes[g0:g0 + ch])
                    else:
                        prog += self._passes(passes)
                # the next column's array: dump and re-arm in one command
                armed = c < mloc - 1
                prog.append(enc(SM_CTRL, SM_DUMP | SM_START) if armed else i_dump())
        return prog

    # ---- axis = rows / rmw: columns spread over PEs, A rows stream -------------
    def _prog_rows(self, A, B) -> list[int]:
        M, S, bcs, CPS = self.cp.M, self.S, self.b_col_size, self.cols_per_step
        nloc = A.shape[0]
        rowlen = bcs * S                      # ILS words per A row
        prog = self._head()
        ib = lb = 0
        if getattr(self, "_buffer", 0):
            rows_blk = min(self.a_num_rows, nloc)
            nsets_max = -(-min(CPS * self.b_num_cols, self.m) // CPS)
            if rows_blk * rowlen <= self.cp.ilw // 2 and nsets_max * bcs <= self.cp.LSD // 2:
                ib, lb = self.cp.ilw // 2, self.cp.LSD // 2
        rmw = self.reduction == "rmw"
        armed = False
        if rmw and getattr(self, "_clear", True):
            prog.append(enc(SM_CTRL, SM_CLEAR))
        rmw_armed = getattr(self, "_continued", False)      # RMW: one array for the program
        cols_per_block = CPS * self.b_num_cols
        for b0 in range(0, self.m, cols_per_block):
            b1 = min(b0 + cols_per_block, self.m)
            nsets = -(-(b1 - b0) // CPS)
            imgs = []
            for i in range(M):                 # PE i: segment i % S of columns b0 + set*CPS + i // S
                img = np.zeros(nsets * bcs, dtype=np.int64)
                for st in range(nsets):
                    c = b0 + st * CPS + i // S
                    if c < b1:
                        img[st * bcs:(st + 1) * bcs] = self._seg(B[:, c], i % S)
                imgs.append(img)
            prog += self._write_bv(imgs, lb)   # one word per PE per address, DBEAT PEs a cycle
            for r0 in range(0, nloc, self.a_num_rows):
                r1 = min(r0 + self.a_num_rows, nloc)
                img = np.zeros((r1 - r0) * rowlen, dtype=np.int64)
                for r in range(r0, r1):
                    for j in range(bcs):
                        for s in range(S):
                            c = s * bcs + j
                            if c < self.d:
                                img[(r - r0) * rowlen + j * S + s] = A[r, c]
                # per-row reductions with DBEAT > 1: the block is loaded in 4 chunks of rows,
                # chunk k+1 right after the first row of chunk k (it overlaps chunk k's rows)
                ch = -(-(r1 - r0) // 4) if not rmw and self.cp.DBEAT > 1 and r1 - r0 >= 8 else r1 - r0
                # rows loaded `ahead` rows ahead (the first `ahead` before row 0, row
                # r+ahead behind row r's passes; `ahead` rows cover the chain's input read
                # window of a pass, n*G words) when that load (SET_INPUT_LS_ADDR, WRITE_A, its
                # beats) and the row's own words (MULT_ACC_*, SM_CTRL, SET_INPUT_LS_ADDR) fit
                # in the row's MAC steps: the sequencer never waits on the stream between rows
                ahead = -(-(bcs * self.G) // rowlen)
                if not (not rmw and self.cp.DBEAT > 1 and r1 - r0 > ahead and
                        5 + -(-rowlen // self.cp.DBEAT) <= nsets * bcs):
                    ahead = 0
                if ahead:
                    ch = ahead

                def wr_rows(a, b):
                    self._st["ila"] = ib + (a - r0) * rowlen
                    return [enc(SET_INPUT_LS_ADDR, ib + (a - r0) * rowlen), enc(WRITE_A, (b - a) * rowlen)] + \
                        self._wa(img[(a - r0) * rowlen:(b - r0) * rowlen])

                prog += wr_rows(r0, min(r0 + ch, r1))
                if rmw and not rmw_armed:
                    prog.append(enc(SM_CTRL, SM_START))
                    rmw_armed = True
                passes = []
                for r in range(r0, r1):
                    if not rmw and not armed:
                        prog.append(enc(SM_CTRL, SM_START))
                    for st in range(nsets):
                        c0 = b0 + st * CPS
                        nres = min(CPS, b1 - c0)
                        last = st == nsets - 1 and (not rmw or (r == nloc - 1 and b1 == self.m and
                                                                not getattr(self, "_keep_armed", False)))
                        sma = self.rmw_base + r * self.m + c0 if rmw else c0
                        passes.append((ib + (r - r0) * rowlen, lb + st * bcs, sma, bcs, 0 if nres == CPS else nres,
                                       last))
                    if not rmw:
                        # the next row's array: dump and re-arm in one command
                        armed = not (r == nloc - 1 and b1 == self.m)
                        prog += self._passes(passes) + [enc(SM_CTRL, SM_DUMP | SM_START) if armed else i_dump()]
                        passes = []
                    if ahead:
                        if r + ahead < r1:
                            prog += wr_rows(r + ahead, r + ahead + 1)
                    elif (r - r0) % ch == 0 and r + ch < r1:
                        prog += wr_rows(r + ch, min(r + 2 * ch, r1))
                prog += self._passes(passes)
        if rmw and getattr(self, "_dump", True):
            prog.append(i_dump(self.rmw_base, nloc * self.m))
        return prog


def _pos(v, name: str) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
        raise ValueError(f"{name} must be a positive integer, got {v!r}")
    return int(v)


def plan_matmul(n: int, d: int, m: int, reduction: str, *, axis: str = "cols", k: int = 1,
                largest: bool = True, chains: int = 1, cp: ChainParams | None = None,
                rmw_base: int = 0) -> Plan:
    """Map ``C = A (n x d) B (d x m)`` plus a reduction onto ``chains`` chains of ``cp``.

    ``reduction``: ``"topk"`` (k best, ``largest``), ``"minmax"`` (both extremes) or
    ``"rmw"`` (accumulate every C entry in the RMW store).  ``axis`` (topk / minmax):
    ``"cols"`` reduces each column of C over the rows of A, ``"rows"`` each row of C
    over the columns of B.  Raises ``ValueError`` naming the limit when it cannot fit."""
    cp = cp or ChainParams()
    n, d, m = _pos(n, "n"), _pos(d, "d"), _pos(m, "m")
    chains = _pos(chains, "chains")
    k = _pos(k, "k")
    if reduction not in REDUCTIONS:
        raise ValueError(f"reduction must be one of {REDUCTIONS}, got {reduction!r}")
    if reduction == "rmw":
        axis = "rows"
    if axis not in AXES:
        raise ValueError(f"axis must be one of {AXES}, got {axis!r}")
    M = cp.M
    if reduction == "topk" and k > cp.KMAX:
        raise ValueError(f"k={k} exceeds the smart-memory LIST size KMAX={cp.KMAX}")
    if reduction != "topk":
        k = 1
    # split a column of B when it does not fit one local store
    S = 1
    while -(-d // S) > cp.LSD:
        S *= 2
    if S > M:
        raise ValueError(f"a column of B (d={d}) does not fit: even split over all M={M} PEs a "
                         f"segment needs {-(-d // M)} words > local store LSD={cp.LSD}")
    bcs = -(-d // S)
    b_num_cols = cp.LSD // bcs
    notes = []
    if axis == "cols":
        G = M
        RF = M // S
        CPS = 1
        mode = "replicate"
        pm = Fraction(RF, S)
        rows_per_group_words = bcs * M
        if rows_per_group_words > cp.ilw:
            raise ValueError(f"one row group needs {rows_per_group_words} input-local-store words "
                             f"> ILW={cp.ilw}")
        a_num_rows = (cp.ilw // rows_per_group_words) * RF
        mloc = -(-m // chains)
        b_block = min(b_num_cols, mloc)
        n_b_blocks = -(-mloc // b_num_cols)
        if -(-n // a_num_rows) > 1:
            notes.append("A does not fit the input local store: it is streamed once per column of B")
    else:
        G = S
        RF = 1
        CPS = M // S
        mode = "column" if S == 1 else "split"
        pm = Fraction(1, S)
        a_num_rows = cp.ilw // (bcs * S)
        if a_num_rows == 0:
            raise ValueError(f"one row of A (d={d}, {bcs * S} words) does not fit the input "
                             f"local store ILW={cp.ilw}")
        on_chip = CPS * b_num_cols
        if reduction != "rmw" and m > on_chip:
            raise ValueError(f"per-row reduction over m={m} columns needs all of B on chip; the chain "
                             f"holds {on_chip} columns of {d} words (M={M}, LSD={cp.LSD})")
        b_block = min(m, on_chip)
        n_b_blocks = -(-m // on_chip)
        nloc = -(-n // chains)
        if reduction == "rmw" and rmw_base + nloc * m > cp.DEPTH:
            raise ValueError(f"aggregation of {nloc} x {m} results at base {rmw_base} exceeds the "
                             f"smart-memory RMW DEPTH={cp.DEPTH}")
        if reduction == "rmw" and rmw_base + nloc * m > 1 << 14:
            raise ValueError("aggregation range exceeds the DUMP_SM 14-bit fields")
        if m > 1 << cp.IDXW:
            raise ValueError(f"m={m} columns do not fit the result index (IDXW={cp.IDXW})")
    if bcs > 0xFFFF or cp.ilw > 0xFFFF:
        raise ValueError("sizes exceed the 16-bit instruction fields")
    return Plan(n=n, d=d, m=m, reduction=reduction, axis=axis, k=k, largest=bool(largest),
                chains=chains, cp=cp, mode=mode, pm=pm, G=G, S=S, b_col_size=bcs,
                b_num_cols=b_num_cols, b_block=b_block, n_b_blocks=n_b_blocks,
                a_num_rows=a_num_rows,
                n_a_blocks=-(-(n if axis == "cols" else -(-n // chains)) // a_num_rows),
                rows_in_flight=RF, cols_per_step=CPS, rmw_base=rmw_base, notes=notes)


# ---------------------------------------------------------------------- bus traffic
BURST_BYTES = 64     # a streaming transfer moves in bursts of up to 64 bytes


def split_words(words, cp: ChainParams | None = None) -> tuple[int, int]:
    """``(instruction words, data words)`` of a program (data = WRITE_A/WRITE_B/WRITE_BV
    payload, counted in words, however many per beat)."""
    cp = cp or ChainParams()
    pc, words, ni, nd = 0, [int(w) for w in words], 0, 0
    while pc < len(words):
        nb, nw = data_beats(words[pc], cp.M, cp.DBEAT)
        pc += 1 + nb
        ni += 1
        nd += nw
    return ni, nd


def mac_steps(words, cp: ChainParams | None = None) -> int:
    """MAC steps a program issues (MULT_ACC_DUMP n, MULT_ACC_RUN passes x n)."""
    cp = cp or ChainParams()
    pc, words, steps = 0, [int(w) for w in words], 0
    while pc < len(words):
        op, x = (words[pc] & 0xFFFFFFFF) >> 28, words[pc] & ((1 << 28) - 1)
        pc += 1 + data_beats(words[pc], cp.M, cp.DBEAT)[0]
        if op == MULT_ACC_DUMP:
            steps += x & 0xFFFF
        elif op == MULT_ACC_RUN:
            steps += (x & 0x1FFF) * ((x >> 21) & 0x7F)
    return steps


def bus_traffic(words, dump_beats: int, elements: int, results: int, cp: ChainParams) -> dict:
    """Off-chip data traffic of one program run, with and without the smart memory.

    ``words`` is the program (instruction words are fetched from the separate instruction
    memory of section 4.1 and reported apart, ``instr_bytes``).  With SM: the data words
    (A and B, ``W/8`` bytes each) are read and the dump records ({index, value},
    ``ceil((W+IDXW)/8)`` bytes) written, as bursts of up to :data:`BURST_BYTES`.  Without
    SM: the same reads, plus every intermediate result (``elements``) stored off-chip as a
    single transaction and loaded back by the reduction (one more), plus the ``results``
    final records written in bursts.  ``trans_ratio`` is Table 3's "reduction" column."""
    ni, nd = split_words(words, cp)
    rec = -(-(cp.W + cp.IDXW) // 8)
    in_b = nd * (cp.W // 8)
    in_t = -(-in_b // BURST_BYTES)
    with_b = in_b + rec * dump_beats
    with_t = in_t + -(-(rec * dump_beats) // BURST_BYTES)
    no_b = in_b + 2 * rec * elements + rec * results
    no_t = in_t + 2 * elements + -(-(rec * results) // BURST_BYTES)
    return {"instr_bytes": 4 * ni, "bytes_with_sm": with_b, "bytes_no_sm": no_b,
            "trans_with_sm": with_t, "trans_no_sm": no_t, "bytes_ratio": round(no_b / with_b, 3),
            "trans_ratio": round(no_t / max(with_t, 1), 3)}


def mnemonics(words, cp: ChainParams | None = None) -> list[str]:
    """Readable listing (data beats shown as ``.word``)."""
    cp = cp or ChainParams()
    out, pc, words = [], 0, [int(w) for w in words]
    while pc < len(words):
        name, x = decode(words[pc])
        out.append(f"{name} 0x{x:x}")
        n = data_beats(words[pc], cp.M, cp.DBEAT)[0]
        pc += 1
        out += [f".word 0x{w:x}" for w in words[pc:pc + n]]
        pc += n
    return out

