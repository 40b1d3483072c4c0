"""CoSMIC processing engine (PE): instruction set, assembler and bit-true golden model.

The PE (CoSMIC section 5.1, Fig. 6; TABLA section 6.3) has separate DATA, MODEL and
INTERIM buffers, an ALU with a wide multiply-accumulator, an optional nonlinear unit,
links to its left and right neighbours and to the row bus.  A static microcode program
(the schedule) is loaded into the PE's schedule memory before ``start``; one
instruction issues per cycle, there is no fetch from main memory and no interlock.

Microcode word (LSB first; ``AW = log2`` of the largest buffer depth; every address
field is AW bits and a buffer uses its low ``log2(depth)`` bits)::

    [3:0]   op      0 nop 1 add 2 sub 3 mul 4 mac 5 lt 6 gt 7 min 8 max 9 pass
                    10 sigmoid 11 gauss 12 recip 13 log   (14, 15 illegal)
    [4]     clr     mac only: start a new accumulation (acc := 0 before adding)
    [7:5]   src_a   operand A: 0 DATA[ra_d] 1 MODEL[ra_m] 2 INTERIM[ra_i] 3 left_in
                    4 right_in 5 bus_in 6 zero 7 one (2**F)
    [10:8]  src_b   operand B, same codes
    next AW bits    ra_d    read address of the DATA buffer
    next AW bits    ra_m    read address of the MODEL buffer
    next AW bits    ra_i    read address of the INTERIM buffer
    next 2 bits     wb      write-back buffer: 0 none 1 DATA 2 MODEL 3 INTERIM
    next AW bits    wa      write-back address
    next 3 bits     out     bit0 left_out, bit1 right_out, bit2 bus_out

Each buffer has one read port, so both operands may read the same buffer only at the
same address (the encoding has one read address per buffer, which enforces it).

Semantics of one instruction (``a``, ``b`` the operands, signed Q(W,F) words)::

    add  sat(a + b)              sub  sat(a - b)
    mul  sat(round(a*b, F))      (full product, round half up, saturate)
    mac  acc := sat_ACC((0 if clr else acc) + a*b)  (exact product, ACC = 2W+ACC_GUARD
         bits, saturating); result := sat(round(acc, F)).  A chain of n macs with clr
         on the first equals QFormat.dot of the n pairs bit for bit (as long as the
         accumulator does not saturate, i.e. n <= 2**ACC_GUARD).
    lt   one if a < b else 0     gt   one if a > b else 0     (one = 2**F)
    min, max, pass (= a)
    sigmoid/gauss/recip/log: pwl_fx(a, table) with the tables of golden.fixedpoint.

``nop`` writes nothing.  An illegal opcode (14, 15) sets error bit 0, an opcode whose
nonlinear function is not instantiated (``NL`` bitmask: bit0 sigmoid, bit1 gaussian,
bit2 reciprocal, bit3 log) sets error bit 1; both are sticky until the next start and
the instruction's write-back (buffer and every output port) is suppressed.

Hazards.  Each op has a result latency L (:func:`result_latency`: 1 for add, sub, lt,
gt, min, max, pass; 3 for mul; 4 for mac and the nonlinear ops).  With ``BYPASS=1`` a
write of slot ``k`` is seen by slots ``s >= k+L`` (the execute stage forwards every
completed result still in the pipeline and three retired write-backs); a slot
reading earlier sees the word's previous value, and of several visible writes of one
word the latest instruction's wins (buffers are written in order at the end of the
pipeline, so the final state is sequential).  A dependent op must therefore be L slots
after its producer (:func:`pad_hazards` with ``distance=None`` inserts the nops); a
chain of macs into the accumulator still issues one term per slot.  With ``BYPASS=0``
an instruction sees only the buffer writes of instructions at least
:data:`HAZARD_DISTANCE` (8) slots earlier (the pipeline is exposed; :func:`pad_hazards`
inserts nops).

Timing (cycles from the edge that accepted ``start``): instruction ``k`` is in stage 1
in cycle ``k+1`` (:data:`ISSUE_OFFSET`), enters the execute stages in cycle ``k+4``
and reads the ``left_in``/``right_in``/``bus_in`` ports directly in that cycle
(:data:`IN_OFFSET`; the ports feed the first execute stage's operand multiplexer like
a bypass); its outputs are valid in cycle ``k+4+L`` (:func:`out_offset`; ``k+5``,
:data:`OUT_OFFSET`, for the latency-1 ops), its buffer write lands at the end of cycle
``k+8`` and ``done`` is high in cycle ``n+8`` (:data:`DONE_OFFSET`).  So a neighbour
reads a result L slots after its producer, the same distance as on the same PE with
``BYPASS=1``; the row bus register L+1.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from .fixedpoint import (QFormat, gaussian_table, log_table, pwl_fx, reciprocal_table,
                         sigmoid_pwl)

OPS = {"nop": 0, "add": 1, "sub": 2, "mul": 3, "mac": 4, "lt": 5, "gt": 6, "min": 7, "max": 8,
       "pass": 9, "sigmoid": 10, "gauss": 11, "recip": 12, "log": 13}
OP_NAMES = {v: k for k, v in OPS.items()}
UNARY = {"pass", "sigmoid", "gauss", "recip", "log"}
NL_OPS = {"sigmoid": 0, "gauss": 1, "recip": 2, "log": 3}   # op -> NL bit
NL_ALL = 15
SRC = {"D": 0, "M": 1, "I": 2, "L": 3, "R": 4, "BUS": 5, "ZERO": 6, "ONE": 7}
BUF = {"D": 1, "M": 2, "I": 3}                                # write-back buffer codes
BUF_NAMES = {1: "DATA", 2: "MODEL", 3: "INTERIM"}
OUT_BITS = {"L": 1, "R": 2, "B": 4, "BUS": 4}
OUT_PORTS = ("left", "right", "bus")
ERR_ILLEGAL, ERR_NL, ERR_LEN = 1, 2, 4
ISSUE_OFFSET = 1       # instruction k is in stage 1 in cycle k+1 after the start edge
IN_OFFSET = 4          # ... reads its left_in/right_in/bus_in ports in cycle k+4 (stage 4)
# Per-operation result latency L (slots): instruction k's result is forwarded to (and a
# neighbour reads it from) slot k+L on; its outputs are valid in cycle k+IN_OFFSET+L
# (:func:`out_offset`).  Every instruction writes its buffer word in order, at the end
# of cycle k+DONE_OFFSET, and ``done`` is high in cycle n+DONE_OFFSET.
RESULT_LATENCY = {**{name: 1 for name in OPS}, "mul": 3, "mac": 4, "sigmoid": 4, "gauss": 4,
                  "recip": 4, "log": 4}
LAT_MAX = max(RESULT_LATENCY.values())
OUT_OFFSET = IN_OFFSET + 1                # outputs of a latency-1 op (add, sub, ..., pass)
DONE_OFFSET = IN_OFFSET + LAT_MAX         # in-order write-back / done
HAZARD_DISTANCE = DONE_OFFSET   # a write is visible without bypass to instructions >= this many slots later


def result_latency(op) -> int:
    """Result latency (slots) of opcode ``op`` (a code or a name); nop/illegal: 1."""
    name = OP_NAMES.get(op) if isinstance(op, (int, np.integer)) else op
    return RESULT_LATENCY.get(name, 1)


def out_offset(op) -> int:
    """Cycle (after the start edge) minus k in which slot k's outputs are valid."""
    return IN_OFFSET + result_latency(op)

# Slot distances these give between PEs (a consumer in slot s, a producer in slot k):
# a neighbour output register is valid in cycle k+out_offset(op), so s >= k+L; a
# register the assembled accelerator loads from a PE output (the row bus) is valid one
# cycle later, so s >= k+L+1.


def nl_tables(fmt: QFormat, nl: int) -> dict:
    """The nonlinear tables a PE with bitmask ``nl`` instantiates, keyed by opcode name."""
    makers = {"sigmoid": sigmoid_pwl, "gauss": gaussian_table, "recip": reciprocal_table,
              "log": log_table}
    return {name: makers[name](fmt) for name, bit in NL_OPS.items() if nl >> bit & 1}


def _aw(depth: int) -> int:
    return max(1, (depth - 1).bit_length())


@dataclass(frozen=True)
class PEConfig:
    W: int = 32
    F: int = 16
    DATA_DEPTH: int = 256
    MODEL_DEPTH: int = 256
    INTERIM_DEPTH: int = 256
    SCHED_DEPTH: int = 1024
    NL: int = NL_ALL
    BYPASS: int = 1
    ACC_GUARD: int = 8

    @classmethod
    def from_params(cls, p: dict) -> "PEConfig":
        return cls(**{k: p[k] for k in cls.__dataclass_fields__ if k in p})

    @property
    def fmt(self) -> QFormat:
        return QFormat(self.W, self.F)

    @property
    def depths(self) -> dict:
        return {1: self.DATA_DEPTH, 2: self.MODEL_DEPTH, 3: self.INTERIM_DEPTH}

    @property
    def daw(self):
        return _aw(self.DATA_DEPTH)

    @property
    def maw(self):
        return _aw(self.MODEL_DEPTH)

    @property
    def iaw(self):
        return _aw(self.INTERIM_DEPTH)

    @property
    def waw(self):
        return max(self.daw, self.maw, self.iaw)

    @property
    def acc_w(self):
        return 2 * self.W + self.ACC_GUARD

    def layout(self) -> list:
        """(field, lsb, width) of the microcode word, LSB first."""
        out, pos = [], 0
        for name, w in (("op", 4), ("clr", 1), ("src_a", 3), ("src_b", 3), ("ra_d", self.waw),
                        ("ra_m", self.waw), ("ra_i", self.waw), ("wb", 2), ("wa", self.waw),
                        ("out", 3)):
            out.append((name, pos, w))
            pos += w
        return out

    @property
    def instr_w(self) -> int:
        name, lsb, w = self.layout()[-1]
        return lsb + w


class AsmError(ValueError):
    """An instruction that cannot be encoded; the message names the field."""


@dataclass(frozen=True)
class Instr:
    op: int = 0
    clr: int = 0
    src_a: int = 6
    src_b: int = 6
    ra_d: int = 0
    ra_m: int = 0
    ra_i: int = 0
    wb: int = 0
    wa: int = 0
    out: int = 0

    def encode(self, cfg: PEConfig) -> int:
        word = 0
        for name, lsb, w in cfg.layout():
            v = getattr(self, name)
            if not isinstance(v, (int, np.integer)) or v < 0 or v >= 1 << w:
                raise AsmError(f"field {name}={v!r} does not fit its {w} bits")
            word |= int(v) << lsb
        return word

    @classmethod
    def decode(cls, word: int, cfg: PEConfig) -> "Instr":
        return cls(**{name: (int(word) >> lsb) & ((1 << w) - 1) for name, lsb, w in cfg.layout()})


# ------------------------------------------------------------------ assembler
_OPERAND = re.compile(r"^(D|M|I)\[?(\d+)\]?$|^(L|R|BUS|ZERO|ONE)$", re.I)


class Assembler:
    """Python-call and text front end producing microcode words.

    ``asm.op("add", a="D3", b="M3", dst=["I7", "L"])`` or the text form
    ``add D3 M3 -> I7 L`` (``mac.clr`` starts an accumulation; ``#`` comments).
    Operands: ``D<n> M<n> I<n>`` (buffer words), ``L R BUS`` (neighbour / bus inputs),
    ``ZERO ONE``.  Destinations: ``D<n> M<n> I<n>`` (at most one buffer), ``L R B``
    (left / right / bus outputs).  Every field is validated with an error naming it."""

    def __init__(self, cfg: PEConfig):
        self.cfg = cfg
        self.instrs: list[Instr] = []

    # -- operand parsing --------------------------------------------------
    def _operand(self, tok, role, addrs):
        m = _OPERAND.match(str(tok).strip())
        if not m:
            raise AsmError(f"operand {role}={tok!r}: expected D<n>, M<n>, I<n>, L, R, BUS, ZERO or ONE")
        if m.group(1):
            buf = m.group(1).upper()
            code = BUF[buf]
            addr = int(m.group(2))
            depth = self.cfg.depths[code]
            if addr >= depth:
                raise AsmError(f"operand {role}={tok}: address {addr} beyond {BUF_NAMES[code]} depth {depth}")
            key = {"D": "ra_d", "M": "ra_m", "I": "ra_i"}[buf]
            if key in addrs and addrs[key] != addr:
                raise AsmError(f"operand {role}={tok}: the {BUF_NAMES[code]} buffer has one read port and "
                               f"is already read at address {addrs[key]} by the other operand")
            addrs[key] = addr
            return SRC[buf]
        return SRC[m.group(3).upper()]

    def instr(self, op: str, a=None, b=None, dst=(), clr: bool = False) -> Instr:
        name = str(op).lower()
        if name not in OPS:
            raise AsmError(f"op={op!r}: unknown opcode; known: {', '.join(OPS)}")
        if clr and name != "mac":
            raise AsmError(f"clr is only valid on mac, not on {name}")
        if isinstance(dst, str):
            dst = dst.split()
        addrs = {}
        if name == "nop":
            if a is not None or b is not None or dst:
                raise AsmError("nop takes no operands and no destination")
            return Instr()
        if a is None:
            raise AsmError(f"{name}: operand a is missing")
        sa = self._operand(a, "a", addrs)
        if name in UNARY:
            if b is not None:
                raise AsmError(f"{name} is unary: operand b must be omitted")
            sb = SRC["ZERO"]
        else:
            if b is None:
                raise AsmError(f"{name}: operand b is missing")
            sb = self._operand(b, "b", addrs)
        if name in NL_OPS and not self.cfg.NL >> NL_OPS[name] & 1:
            raise AsmError(f"{name}: this PE has no {name} unit (NL={self.cfg.NL}); "
                           "use Instr() to encode it on purpose")
        wb = wa = out = 0
        for d in dst:
            t = str(d).strip().upper()
            m = re.match(r"^(D|M|I)\[?(\d+)\]?$", t)
            if m:
                if wb:
                    raise AsmError(f"dst {d}: only one buffer write per instruction")
                wb = BUF[m.group(1)]
                wa = int(m.group(2))
                if wa >= self.cfg.depths[wb]:
                    raise AsmError(f"dst {d}: address {wa} beyond {BUF_NAMES[wb]} depth {self.cfg.depths[wb]}")
            elif t in OUT_BITS:
                out |= OUT_BITS[t]
            else:
                raise AsmError(f"dst {d!r}: expected D<n>, M<n>, I<n>, L, R or B")
        return Instr(op=OPS[name], clr=int(bool(clr)), src_a=sa, src_b=sb, ra_d=addrs.get("ra_d", 0),
                     ra_m=addrs.get("ra_m", 0), ra_i=addrs.get("ra_i", 0), wb=wb, wa=wa, out=out)

    def op(self, op: str, a=None, b=None, dst=(), clr: bool = False) -> "Assembler":
        self.instrs.append(self.instr(op, a, b, dst, clr))
        return self

    def nop(self, n: int = 1) -> "Assembler":
        self.instrs.extend([Instr()] * n)
        return self

    def text(self, src: str) -> "Assembler":
        for ln, line in enumerate(src.splitlines(), 1):
            line = line.split("#")[0].strip()
            if not line:
                continue
            left, _, right = line.partition("->")
            toks = left.split()
            opname, clr = toks[0].lower(), False
            if opname.endswith(".clr"):
                opname, clr = opname[:-4], True
            ops_ = toks[1:]
            if len(ops_) > 2:
                raise AsmError(f"line {ln}: too many operands in {line!r}")
            try:
                self.op(opname, *(ops_ + [None, None])[:2], dst=right.split(), clr=clr)
            except AsmError as e:
                raise AsmError(f"line {ln}: {e}") from None
        return self

    def words(self) -> list[int]:
        if len(self.instrs) > self.cfg.SCHED_DEPTH:
            raise AsmError(f"program has {len(self.instrs)} instructions, schedule depth is {self.cfg.SCHED_DEPTH}")
        return [i.encode(self.cfg) for i in self.instrs]


def reads(ins: Instr) -> set:
    """(buffer code, address) pairs the instruction reads."""
    out = set()
    n_ops = 1 if OP_NAMES.get(ins.op) in UNARY else 2
    if ins.op in (0, 14, 15):
        return out
    for s in (ins.src_a, ins.src_b)[:n_ops]:
        if s < 3:
            out.add((s + 1, (ins.ra_d, ins.ra_m, ins.ra_i)[s]))
    return out


def pad_hazards(instrs: list, distance: int | None = HAZARD_DISTANCE) -> list:
    """Insert nops so no instruction reads a buffer word written fewer than ``distance``
    slots earlier (the schedule a PE without bypass needs); ``distance=None``: fewer
    than the writer's result latency (:func:`result_latency`, a PE with bypass)."""
    out: list = []
    dmax = HAZARD_DISTANCE if distance is None else distance
    for ins in instrs:
        need = reads(ins)
        while True:
            recent = out[-(dmax - 1):] if dmax > 1 else []
            hit = any(p.wb and p.op and (p.wb, p.wa) in need
                      and len(recent) - i < (result_latency(p.op) if distance is None else distance)
                      for i, p in enumerate(recent))
            if not hit:
                break
            out.append(Instr())
        out.append(ins)
    return out


# ------------------------------------------------------------------ golden model
@dataclass
class Step:
    k: int
    op: int
    a: int
    b: int
    result: int | None          # None: nop or suppressed
    write: tuple | None         # (buffer code, address, value)
    outs: dict                  # port -> value


@dataclass
class RunResult:
    buffers: dict               # code -> int64 array
    steps: list
    outputs: dict               # port -> list of (k, value), program order
    acc: int
    err: int
    cycles: int                 # start edge to done (done is high in this cycle)
    out_cycles: dict = None     # port -> [(cycle, value)]: what the port shows, cycle by
    #                             cycle; of two writes landing in one cycle the later
    #                             instruction (the shorter latency) wins


class PEModel:
    """Bit-true instruction-level reference of ``cosmic_pe``."""

    def __init__(self, cfg: PEConfig, data=None, model=None, interim=None):
        self.cfg = cfg
        self.fmt = cfg.fmt
        self.tables = nl_tables(self.fmt, cfg.NL)
        self.buf = {}
        for code, init in ((1, data), (2, model), (3, interim)):
            b = np.zeros(cfg.depths[code], dtype=np.int64)
            if init is not None:
                init = np.asarray(init, dtype=np.int64)
                if init.ndim != 1 or len(init) > len(b):
                    raise ValueError(f"{BUF_NAMES[code]} init must be 1-D with at most {len(b)} words")
                if not self.fmt.in_range(init):
                    raise ValueError(f"{BUF_NAMES[code]} init has values outside {self.fmt}")
                b[:len(init)] = init
            self.buf[code] = b
        self.acc = 0

    def _sat_acc(self, v: int) -> int:
        lim = 1 << (self.cfg.acc_w - 1)
        return max(-lim, min(lim - 1, v))

    def execute(self, ins: Instr, a: int, b: int):
        """(result or None, error bits) of one instruction; updates the accumulator."""
        fmt = self.fmt
        name = OP_NAMES.get(ins.op)
        if name is None:
            return None, ERR_ILLEGAL
        if name == "nop":
            return None, 0
        if name in NL_OPS:
            if name not in self.tables:
                return None, ERR_NL
            return int(pwl_fx(np.int64(a), self.tables[name])), 0
        if name == "add":
            return int(fmt.add(a, b)), 0
        if name == "sub":
            return int(fmt.sub(a, b)), 0
        if name == "mul":
            return int(fmt.mul(a, b)), 0
        if name == "mac":
            self.acc = self._sat_acc((0 if ins.clr else self.acc) + a * b)
            r = (self.acc + (1 << (fmt.F - 1))) >> fmt.F if fmt.F else self.acc
            return max(fmt.min_int, min(fmt.max_int, r)), 0
        if name == "lt":
            return (fmt.one if a < b else 0), 0
        if name == "gt":
            return (fmt.one if a > b else 0), 0
        if name == "min":
            return min(a, b), 0
        if name == "max":
            return max(a, b), 0
        return a, 0   # pass

    def run(self, program, inputs=None) -> RunResult:
        """Run ``program`` (microcode words or Instr) from a fresh start.

        ``inputs``: (n, 3) ints, the (left_in, right_in, bus_in) values instruction k
        reads (present on the ports in cycle k+IN_OFFSET; defaults to zeros)."""
        cfg, fmt = self.cfg, self.fmt
        instrs = [p if isinstance(p, Instr) else Instr.decode(int(p), cfg) for p in program]
        n = len(instrs)
        if not 1 <= n <= cfg.SCHED_DEPTH:
            raise ValueError(f"program length {n} must be in 1..SCHED_DEPTH={cfg.SCHED_DEPTH}")
        inputs = np.zeros((n, 3), dtype=np.int64) if inputs is None else np.asarray(inputs, dtype=np.int64)
        if inputs.shape != (n, 3):
            raise ValueError(f"inputs must be ({n}, 3) (left, right, bus per instruction), got {inputs.shape}")
        self.acc = 0
        err = 0
        # writes not yet visible: (first slot that sees it, k, code, addr, value).  With
        # BYPASS=1 a write of slot k is forwarded from slot k+L (its op's latency); of
        # several visible writes of one word the latest instruction's wins (an older
        # write completing later does not overwrite it), which is also the in-order
        # write-back's final state.  BYPASS=0: visible from slot k+HAZARD_DISTANCE.
        pending = []
        owner = {}     # (code, addr) -> k of the write the buffer word holds
        steps, outputs = [], {p: [] for p in OUT_PORTS}
        events = {p: {} for p in OUT_PORTS}   # port -> cycle -> (k, value)
        one = fmt.one
        for k, ins in enumerate(instrs):
            keep = []
            for w in pending:
                vis, kw, c, ad, v = w
                if vis <= k:
                    if kw > owner.get((c, ad), -1):
                        self.buf[c][ad] = v
                        owner[(c, ad)] = kw
                else:
                    keep.append(w)
            pending = keep
            vis = self.buf
            addr = {0: ins.ra_d & (cfg.DATA_DEPTH - 1), 1: ins.ra_m & (cfg.MODEL_DEPTH - 1),
                    2: ins.ra_i & (cfg.INTERIM_DEPTH - 1)}

            def operand(s):
                if s < 3:
                    return int(vis[s + 1][addr[s]])
                if s < 6:
                    return int(inputs[k, s - 3])
                return 0 if s == 6 else one

            a, b = operand(ins.src_a), operand(ins.src_b)
            res, e = self.execute(ins, a, b)
            err |= e
            write, outs = None, {}
            if res is not None:
                lat = result_latency(ins.op)
                if ins.wb:
                    wa = ins.wa & (cfg.depths[ins.wb] - 1)
                    write = (ins.wb, wa, res)
                    pending.append((k + (lat if cfg.BYPASS else HAZARD_DISTANCE), k, ins.wb, wa, res))
                for bit, port in enumerate(OUT_PORTS):
                    if ins.out >> bit & 1:
                        outs[port] = res
                        outputs[port].append((k, res))
                        cy = k + IN_OFFSET + lat
                        if cy not in events[port] or events[port][cy][0] < k:
                            events[port][cy] = (k, res)
            steps.append(Step(k, ins.op, a, b, res, write, outs))
        for _, kw, c, ad, v in pending:
            if kw > owner.get((c, ad), -1):
                self.buf[c][ad] = v
                owner[(c, ad)] = kw
        out_cycles = {p: [(cy, kv[1]) for cy, kv in sorted(events[p].items())] for p in OUT_PORTS}
        return RunResult({c: b.copy() for c, b in self.buf.items()}, steps, outputs, self.acc, err,
                         n + DONE_OFFSET, out_cycles)


# ------------------------------------------------------------------ SGD programs
def sgd_buffers(fmt: QFormat, a, b, x, alpha_q: int, c_q: int, n: int):
    """Buffer images for :func:`sgd_step_program`: DATA = a[0..n-1], b at n (n+1 is
    scratch); MODEL = x[0..n-1], alpha at n; INTERIM = c = 2*alpha*lam2 at 1 (2..6 scratch).
    All arguments are fixed-point words."""
    data = np.concatenate([np.asarray(a, dtype=np.int64), [int(b), 0]])
    model = np.concatenate([np.asarray(x, dtype=np.int64), [int(alpha_q)]])
    interim = np.array([0, int(c_q)], dtype=np.int64)
    return data, model, interim


def sgd_step_program(cfg: PEConfig, n: int, logistic: bool) -> list:
    """Microcode of one SGD step (one sample, batch 1) of ridge/linear or logistic
    regression, mirroring golden.sgd._epoch_fixed op by op:

      dot = mac chain over (a_j, x_j)           (== QFormat.dot: exact sum, one rounding)
      dot = sigmoid(dot)                        (logistic)
      s   = mul(alpha, sub(dot, b))             (== pipearch_ops.scalar_sgd)
      per j: t = mul(c, x_j); u = mul(s, a_j); v = sub(x_j, u); x_j = sub(v, t)
            (== multiply_subtract then l2reg with x_t = the old model)
    """
    if n + 2 > cfg.DATA_DEPTH or n + 1 > cfg.MODEL_DEPTH or cfg.INTERIM_DEPTH < 8:
        raise ValueError(f"n={n} features do not fit the PE buffers")
    asm = Assembler(cfg)
    for j in range(n):
        asm.op("mac", f"D{j}", f"M{j}", dst=["I2"] if j == n - 1 else [], clr=(j == 0))
    if logistic:
        asm.op("sigmoid", "I2", dst=["I2"])
    asm.op("sub", "I2", f"D{n}", dst=["I3"])
    asm.op("mul", f"M{n}", "I3", dst=["I4"])
    for j in range(n):
        asm.op("mul", "I1", f"M{j}", dst=[f"D{n + 1}"])
        asm.op("mul", "I4", f"D{j}", dst=["I5"])
        asm.op("sub", f"M{j}", "I5", dst=["I6"])
        asm.op("sub", "I6", f"D{n + 1}", dst=[f"M{j}", "B"])
    return pad_hazards(asm.instrs, None) if cfg.BYPASS else asm.instrs
