"""Cycle-level model of the assembled CoSMIC accelerator running :mod:`tablac.codegen`'s
output -- the reference for the accelerator RTL (issue 13).

Structure: ``rows x columns`` ``cosmic_pe`` (``plan.pes``), thread ``t`` owning rows
``[t*rows_per_thread, (t+1)*rows_per_thread)``.  Per PE the instruction behaviour is
``golden.cosmic_pe.PEModel.execute`` on microcode words decoded with
``golden.cosmic_pe.Instr.decode``; buffers follow cosmic_pe's rules (``BYPASS=1``: a read
sees the writes at least ``result_latency(op)`` slots older, the latest instruction's
winning; ``BYPASS=0``: only writes ``HAZARD_DISTANCE`` (8) or more slots older; addresses
use the low ``log2(depth)`` bits).  Interconnect, in cycles from the start edge (PE slot ``k``
reads its link/bus input ports in cycle ``k+4``, its execute stage --
``golden.cosmic_pe.IN_OFFSET`` -- and its outputs are valid in cycle ``k+4+L``, L its op's
result latency (``golden.cosmic_pe.out_offset``; ``k+5`` below for L = 1); so a
register written at the end of cycle ``x`` is seen by slots ``s >= x+1-4``: a neighbour
output by ``s >= k+1``, the row bus register by ``s >= k+2``, a tree delivery by
``s >= c+d-3``):

* links: ``left_out``/``right_out`` registers of each PE, wired to the neighbour's
  ``right_in``/``left_in`` in the same row (0 at the row ends);
* row bus: one register per row, written at the end of cycle ``c`` by the PE whose
  ``bus_out_valid`` is high in cycle ``c`` -- two writers in one cycle are an error;
* tree bus: one per thread over its rows, ``d = tree_depth(rows_per_thread)`` levels of
  nodes with an ALU (CoSMIC 5.1); a program entry ``(c, op, src rows, dst rows)`` takes
  the bus writes of its source rows in cycle ``c`` (each must have one); level ``h``'s
  node ``k`` (rows ``[k*2**h, (k+1)*2**h)``) applies ``op`` (saturating ``add``, ``mul``
  = QFormat.mul) to its two children when both carry a source value and passes the one
  that does otherwise (``pass``: one source row); the root's value is written into the
  destination rows' bus registers at the end of cycle ``c+d``.  Two writes of one
  register in one cycle are an error.  (A left-to-right fold would differ from this
  under saturation: the tree is what the compiler's reductions rely on.)

Memory: one word-addressed image (``W``-bit words): model region, then each thread's
samples.  ``golden.cosmic_msu.plan``/``run`` turn the memory schedule and the Thread Index
Table into PE-row beats, delivered by the integration rule of :mod:`tablac.codegen`.  A
sample is one START of the unit (every thread's rows loaded, one beat per cycle), then
every PE starts its program; ``done`` comes ``length + DONE_OFFSET`` (8) cycles later (the schedule
length, ``Stats.compute_cycles`` per sample).

Timing of the accelerator RTL (the values do not depend on it): the PEs have
double-buffered DATA (``cosmic_pe`` ``DBUF=1``), so the unit delivers sample ``n+1``
while the PEs run sample ``n``; the threads run MIMD: each thread starts sample ``n+1``
as soon as its own data is complete and its PEs are idle (at the earliest in the
``done`` cycle of sample ``n``, :func:`thread_starts`): :func:`sample_period` cycles per
sample in steady state when a sample's delivery (``load_cycles`` beats, the unit's
START and the memory latency) fits in it.
This model loads and computes one sample after the other; ``Stats.load_cycles`` counts
what the deliveries would cost without the overlap.

Aggregation (after each round): for every model word ``(pe, addr)`` the unit reads the
word from each thread's PE through the read-back ports, sums exactly (``W +
ceil(log2 T)`` bits), divides by ``T`` rounding to nearest with ties toward +inf,
saturates -- ``golden.sgd.average_fx`` -- and writes the result back into every thread's
PE through the load ports, one word per cycle.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from golden.cosmic_msu import plan as msu_plan, run as msu_run
from golden.cosmic_pe import (DONE_OFFSET, HAZARD_DISTANCE, IN_OFFSET, Instr, PEModel,
                              result_latency)
from golden.sgd import average_fx

from .schedule import tree_depth


def sample_period(comp) -> int:
    """Steady-state cycles per training sample per thread of the accelerator RTL: the
    schedule length ``length + DONE_OFFSET`` plus the PEs' done cycle (a ``cosmic_pe``
    accepts the next start in the cycle ``done`` is high), the delivery of the next
    sample hidden behind the compute (DBUF=1)."""
    return comp.length + DONE_OFFSET + 1


START_LATENCY = 2


def thread_starts(comp, complete, *, latency: int = START_LATENCY, lockstep: bool = False):
    """Start cycles of every thread's samples in the accelerator RTL (MIMD: each thread
    starts on its own, CoSMIC 5.2).  ``complete[t][n]``: the cycle of the handshake, on
    the memory schedule unit's ``m_axis_pe``, of thread ``t``'s last beat of sample ``n``
    (its ``len(comp.sample_entries)``-th ``tlast`` of that sample).  Thread ``t`` starts
    sample ``n`` in cycle ``max(complete[t][n] + latency, start[t][n-1] +
    sample_period(comp))``: the beat is registered, the thread's count of transfers closes
    the sample one edge later, and the PEs start as soon as they are idle (in the done
    cycle of the previous sample).  ``lockstep=True`` is the counterfactual of one start
    for all threads: every thread waits for the last thread's data
    (``max_t complete[t][n]``).  Returns ``[[start]]`` per thread and sample."""
    per = sample_period(comp)
    T = len(complete)
    out = [[] for _ in range(T)]
    for n in range(len(complete[0])):
        last = max(complete[t][n] for t in range(T))
        for t in range(T):
            c = (last if lockstep else complete[t][n]) + latency
            if n:
                prev = max(out[u][n - 1] for u in range(T)) if lockstep else out[t][n - 1]
                c = max(c, prev + per)
            out[t].append(c)
    return out


class MachineError(RuntimeError):
    """The compiled program broke a hardware rule (a compiler bug, never user input)."""


@dataclass
class Stats:
    samples: int = 0
    compute_cycles: int = 0
    load_cycles: int = 0
    aggregation_cycles: int = 0
    model_load_cycles: int = 0
    link_words: int = 0
    bus_words: int = 0
    tree_ops: int = 0
    port_inputs: list = field(default_factory=list)   # optional trace per PE

    @property
    def total(self):
        return self.compute_cycles + self.load_cycles + self.aggregation_cycles + \
            self.model_load_cycles


class Machine:
    def __init__(self, comp, *, trace: bool = False):
        self.c = comp
        self.plan = comp.plan
        self.fmt = comp.fmt
        self.cfg = comp.pe_cfg
        self.T = self.plan.threads
        self.P = self.plan.pes_per_thread
        self.C = self.plan.columns
        self.N = self.P * self.T
        self.rpt = self.plan.rows_per_thread
        self.d = tree_depth(self.rpt)
        self.progs = [[Instr.decode(w, self.cfg) for w in comp.programs[g % self.P]]
                      for g in range(self.N)]
        self.pes = []
        for g in range(self.N):
            m = PEModel(self.cfg) if g == 0 else PEModel.__new__(PEModel)
            if g:
                m.cfg, m.fmt, m.tables = self.cfg, self.fmt, self.pes[0].tables
                m.buf = {k: np.zeros(self.cfg.depths[k], dtype=np.int64) for k in (1, 2, 3)}
                m.acc = 0
            self.pes.append(m)
        for g in range(self.N):
            for b, code in (("D", 1), ("M", 2), ("I", 3)):
                for a, q in comp.preload[g % self.P][b].items():
                    self.pes[g].buf[code][a] = q
        self.stats = Stats()
        self.trace = trace
        self.mask = (1 << self.fmt.W) - 1
        self.msu_cfg = comp.msu_config()

    # ------------------------------------------------------------ words
    def _u(self, q):
        return int(q) & self.mask

    def _s(self, u):
        u = int(u)
        return u - (1 << self.fmt.W) if u >> (self.fmt.W - 1) else u

    # ------------------------------------------------------------ memory schedule unit
    def _deliver(self, entries, mem, mem_addr, model_addr, code):
        p = msu_plan(self.msu_cfg, entries, mem_addr, [self.plan.pe_offset(t) for t in range(self.T)],
                     model_addr=model_addr)
        res = msu_run(self.msu_cfg, p, mem)
        ptr = {}
        for pe, words, n, last in res.beats:
            for i in range(n):
                tgt = pe + i
                k = ptr.get(tgt, 0)
                if k >= self.cfg.depths[code]:
                    raise MachineError(f"delivery overflows PE {tgt}'s buffer {code}")
                self.pes[tgt].buf[code][k] = self._s(words[i])
                ptr[tgt] = k + 1
        return len(res.beats), p

    def load_model(self, words_by_node):
        """Broadcast the model region (the host wrote ``words_by_node``) into every thread."""
        image = [0 if m is None else self._u(words_by_node[m[2]]) for m in self.c.model_image]
        mem = np.array(image or [0], dtype=np.int64)
        beats, _ = self._deliver(self.c.model_entries, mem, [0] * self.T, 0, 2) \
            if self.c.model_entries else (0, None)
        self.stats.model_load_cycles += beats + 3

    def load_samples(self, mem, mem_addr):
        beats, p = self._deliver(self.c.sample_entries, mem, mem_addr, 0, 1)
        self.stats.load_cycles += beats + 3
        return p.mem_addr

    # ------------------------------------------------------------ compute
    def compute(self):
        L = len(self.progs[0])
        N, C, fmt = self.N, self.C, self.fmt
        regs = {}            # ("L"|"R", pe) or ("B", row) -> value
        pending = {}         # vis slot -> {reg: value}
        buswr = {}           # (row, cycle) -> value
        tree = {}            # cycle -> [(thread, op, srcs, dsts)]
        for (c, op, srcs, dsts) in self.c.tree:
            if not 5 <= c < L + DONE_OFFSET or op not in ("pass", "add", "mul"):
                raise MachineError(f"tree entry ({c}, {op}) outside the program's bus cycles")
        for t in range(self.T):
            for (c, op, srcs, dsts) in self.c.tree:
                tree.setdefault(c, []).append((t, op, srcs, dsts))
        delayed = [[] for _ in range(N)]    # pending buffer writes (vis slot, k, code, addr, value)
        owner = [dict() for _ in range(N)]  # (code, addr) -> k of the write the word holds
        bypass = self.cfg.BYPASS
        depth_mask = {1: self.cfg.DATA_DEPTH - 1, 2: self.cfg.MODEL_DEPTH - 1,
                      3: self.cfg.INTERIM_DEPTH - 1}
        inputs_trace = [[] for _ in range(N)] if self.trace else None
        one = fmt.one

        def seen(x):
            """First slot that reads a register written at the end of cycle ``x``."""
            return x + 1 - IN_OFFSET

        def put(vis, reg, val):
            slot = pending.setdefault(vis, {})
            if reg in slot:
                raise MachineError(f"two writes of {reg} land in the same cycle (slot {vis})")
            slot[reg] = val

        for m in self.pes:
            m.acc = 0
        outq = {}            # cycle -> [(pe, out bits, value)] outputs valid in that cycle
        for k in range(L):
            for reg, val in pending.pop(k, {}).items():
                regs[reg] = val
            emits = []
            for g in range(N):
                ins = self.progs[g][k]
                m = self.pes[g]
                if delayed[g]:
                    # a write is seen from slot k+L (its op's latency, BYPASS=1) or
                    # k+HAZARD_DISTANCE; the latest instruction's write of a word wins
                    keep = []
                    for w in delayed[g]:
                        if w[0] <= k:
                            if w[1] > owner[g].get((w[2], w[3]), -1):
                                m.buf[w[2]][w[3]] = w[4]
                                owner[g][(w[2], w[3])] = w[1]
                        else:
                            keep.append(w)
                    delayed[g] = keep
                r, c = divmod(g, C)
                left_in = regs.get(("R", g - 1), 0) if c > 0 else 0
                right_in = regs.get(("L", g + 1), 0) if c < C - 1 else 0
                bus_in = regs.get(("B", g // C), 0)
                if inputs_trace is not None:
                    inputs_trace[g].append((left_in, right_in, bus_in))
                if ins.op == 0:
                    continue

                def operand(s):
                    if s == 0:
                        return int(m.buf[1][ins.ra_d & depth_mask[1]])
                    if s == 1:
                        return int(m.buf[2][ins.ra_m & depth_mask[2]])
                    if s == 2:
                        return int(m.buf[3][ins.ra_i & depth_mask[3]])
                    return (left_in, right_in, bus_in, 0, one)[s - 3]

                res, e = m.execute(ins, operand(ins.src_a), operand(ins.src_b))
                if e:
                    raise MachineError(f"PE {g} slot {k}: error bits {e}")
                if res is None:
                    continue
                lat = result_latency(ins.op)
                if ins.wb:
                    a = ins.wa & depth_mask[ins.wb]
                    delayed[g].append((k + (lat if bypass else HAZARD_DISTANCE), k, ins.wb, a, res))
                if ins.out:
                    outq.setdefault(k + IN_OFFSET + lat, []).append((g, ins.out, res))
            cy = k + IN_OFFSET + 1     # outputs valid in this cycle: of the slots k' with
            emits = outq.pop(cy, [])   # k' + IN_OFFSET + L = cy (link registers written at
            for g, out, res in emits:   # the end of cycle cy-1, the bus at cy)
                if out & 1:
                    put(seen(cy - 1), ("L", g), res)
                    self.stats.link_words += 1
                if out & 2:
                    put(seen(cy - 1), ("R", g), res)
                    self.stats.link_words += 1
                if out & 4:
                    row = g // C
                    if (row, cy) in buswr:
                        raise MachineError(f"row {row}: two bus writers in cycle {cy}")
                    buswr[(row, cy)] = res
                    put(seen(cy), ("B", row), res)
                    self.stats.bus_words += 1
            for (t, op, srcs, dsts) in tree.get(cy, []):
                def row_val(r):
                    gr = t * self.rpt + r
                    if (gr, cy) not in buswr:
                        raise MachineError(f"tree entry at cycle {cy}: row {gr} wrote nothing")
                    return buswr[(gr, cy)]
                v = self._tree_eval(op, srcs, row_val)
                for r in dsts:
                    gr = t * self.rpt + r
                    vs = seen(cy + self.d)
                    slot = pending.setdefault(vs, {})
                    # a tree delivery and a PE bus write of the same row in one cycle clash
                    if ("B", gr) in slot:
                        raise MachineError(f"row {gr}: tree delivery clashes in slot {vs}")
                    slot[("B", gr)] = v
                self.stats.tree_ops += 1
        for g in range(N):
            for _, kw, code, a, v in delayed[g]:
                if kw > owner[g].get((code, a), -1):
                    self.pes[g].buf[code][a] = v
                    owner[g][(code, a)] = kw
        if outq:
            raise MachineError(f"outputs after the last slot: cycles {sorted(outq)}")
        self.stats.compute_cycles += L + DONE_OFFSET
        self.stats.samples += 1
        if inputs_trace is not None:
            self.stats.port_inputs = inputs_trace

    def _tree_eval(self, op, srcs, row_val):
        """The tree bus: level by level, node ``k`` of level ``h`` covers rows
        ``[k*2**h, (k+1)*2**h)``; it applies ``op`` to its two children when both hold a
        source value, passes the one that does otherwise."""
        if len(set(srcs)) != len(srcs) or not srcs:
            raise MachineError(f"tree entry sources {srcs}: each row at most once, at least one")
        if op == "pass" and len(srcs) != 1:
            raise MachineError(f"a pass entry has one source row, got {srcs}")
        vals = {}
        for r in srcs:
            if not 0 <= r < self.rpt:
                raise MachineError(f"tree entry names row {r} outside the thread")
            vals[int(r)] = row_val(int(r))
        for _ in range(self.d):
            nxt = {}
            for k, v in sorted(vals.items()):
                if k // 2 in nxt:
                    a = nxt[k // 2]
                    nxt[k // 2] = int(self.fmt.add(a, v)) if op == "add" else int(self.fmt.mul(a, v))
                else:
                    nxt[k // 2] = v
            vals = nxt
        if len(vals) != 1:
            raise MachineError(f"tree of depth {self.d} cannot combine rows {srcs}")
        return next(iter(vals.values()))

    # ------------------------------------------------------------ aggregation
    def aggregate(self):
        if self.T == 1:
            return
        for pe, a, _, _, op in self.c.aggregation:
            vals = [self.pes[t * self.P + pe].buf[2][a] for t in range(self.T)]
            if op == "sum":
                avg = int(self.fmt.sat(np.asarray(sum(int(x) for x in vals), dtype=object)))
            else:
                avg = int(average_fx(self.fmt, np.array(vals, dtype=np.int64)[:, None])[0])
            for t in range(self.T):
                self.pes[t * self.P + pe].buf[2][a] = avg
        self.stats.aggregation_cycles += len(self.c.aggregation) + \
            max(1, (self.T - 1).bit_length()) + 2

    def read_model(self, thread=0):
        return {v: int(self.pes[thread * self.P + pe].buf[2][a])
                for v, (pe, a) in self.c.model_addr.items()}


# ---------------------------------------------------------------------- driver
def _fixed(fmt, x, name):
    x = np.asarray(x)
    if np.issubdtype(x.dtype, np.integer):
        return x.astype(np.int64)
    return fmt.to_fixed(x, name=name)


def train(comp, graph, data, labels, model0, *, rounds=1, order=None, trace=False):
    """Run ``rounds`` rounds of CoSMIC parallel SGD through the compiled program.

    ``data``/``labels``: {array name: (m, *shape)} (floats are quantised, ints are words);
    ``model0``: {model name: array}.  Thread ``t`` owns samples ``[t*m/T, (t+1)*m/T)``
    and visits them in the order they appear in ``order[r]`` (default: ascending); the
    host writes them into the data region in that order.  Returns (models per round as
    {name: int64 array}, :class:`Machine`)."""
    fmt = comp.fmt
    M = Machine(comp, trace=trace)
    T = M.T
    arrays = {}
    for d in (data, labels):
        for k, v in d.items():
            arrays[k] = _fixed(fmt, v, k)
    m = None
    for k in list(graph.inputs) + list(graph.labels):
        n = arrays[k].shape[0]
        m = n if m is None else m
        if n != m:
            raise ValueError(f"{k} has {n} samples, expected {m}")
    if m % T:
        raise ValueError(f"threads = {T} does not divide the sample count {m}")
    sub = m // T
    # sample vector rows in memory order
    vec_parts = []
    for d in (graph.inputs, graph.labels):
        for k in d:
            vec_parts.append(arrays[k].reshape(m, -1))
    samples = np.concatenate(vec_parts, axis=1)
    if samples.shape[1] != comp.sample_words:
        raise ValueError(f"samples have {samples.shape[1]} words, the program {comp.sample_words}")
    model = {k: _fixed(fmt, v, k).copy() for k, v in model0.items()}
    node_val = {}
    for k, ids in graph.model.items():
        for v, q in zip(np.asarray(ids).ravel(), model[k].ravel()):
            if int(v) >= 0:
                node_val[int(v)] = int(q)
    M.load_model(node_val)
    order = np.tile(np.arange(m), (rounds, 1)) if order is None else np.asarray(order)
    out = []
    base = len(comp.model_image)
    for r in range(rounds):
        mem = np.zeros(base + m * comp.sample_words, dtype=np.int64)
        seq = []
        for t in range(T):
            mine = order[r][(order[r] >= t * sub) & (order[r] < (t + 1) * sub)]
            seq.append(mine)
            blk = samples[mine].ravel() & M.mask
            mem[base + t * sub * comp.sample_words: base + (t + 1) * sub * comp.sample_words] = blk
        addr = [base + t * sub * comp.sample_words for t in range(T)]
        for i in range(sub):
            addr = M.load_samples(mem, addr)
            M.compute()
        M.aggregate()
        vals = M.read_model(0)
        res = {}
        for k, ids in graph.model.items():
            arr = model[k].copy()
            flat = arr.reshape(-1)
            for j, v in enumerate(np.asarray(ids).ravel()):
                if int(v) in vals:
                    flat[j] = vals[int(v)]
            res[k] = arr
        out.append(res)
    return out, M
