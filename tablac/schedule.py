"""Static schedule of one thread's DFG on its ``rows x columns`` CoSMIC PEs.

Time is counted in *slots*: every PE of a thread starts its microcode together and issues
instruction ``k`` in slot ``k`` (stage 1 in cycle ``k+1``, golden/cosmic_pe.py).  The
real ``cosmic_pe`` latencies the schedule obeys (and :mod:`tablac.machine` checks by
executing it):

* same PE: a result written by slot ``k`` is read by slot ``k+L`` (``BYPASS=1``; L the
  op's result latency, ``golden.cosmic_pe.result_latency``: 1, mul 3, mac and the
  nonlinear ops 4) or ``k+8`` (``BYPASS=0``, exposed pipeline, ``HAZARD_DISTANCE``); a
  ``mac`` chain issues one term per slot.  A producing instruction's own outputs come
  L - 1 cycles later than a latency-1 op's (``Scheduler.xd``), which the link, bus and
  tree timings below add; relays are passes (L = 1);
* neighbour link (PE ``q`` -> ``q-1`` or ``q+1`` in the same row): ``left_out``/
  ``right_out`` is valid in cycle ``k+5`` (``OUT_OFFSET``) and read straight off the port by
  the neighbour's slot ``s`` in its execute cycle ``s+4`` (``IN_OFFSET``), so ``s >= k+1``
  (``LAT_LINK``); the register holds the value until the next write to that port (one word
  per cycle each way);
* row bus: the PE with ``bus_out_valid`` in cycle ``k+5`` writes the row's bus register
  (at most one writer per row per cycle), readable by the row's slots ``s >= k+2``
  (``LAT_BUS``);
* tree bus (CoSMIC 5.1) over the thread's rows, ``d = max(1, ceil(log2 rows))`` pipeline
  levels: a transaction in cycle ``c`` takes the bus writes of its source rows in cycle
  ``c``, combines them in the tree's nodes (each node applies the transaction's op --
  saturating ``add`` or ``mul`` -- when both of its subtrees hold a source, passes the
  one that does otherwise) and writes the result into the bus registers of its
  destination rows at the end of cycle ``c+d`` (readable by slots ``s >= c+d``); one
  transaction starts per cycle.  A reduction's add (or mul) nodes whose operands sit on
  different rows are folded into one transaction when the DFG's subtree is exactly the
  tree's shape over those rows (:meth:`Scheduler.embeds`).

Every transfer reserves the register it travels on from the slot its value becomes
readable to the slot of its last reader, and reservations on one register never
overlap, so no write clobbers a value still to be read.

The placement of operations (which PE) comes from :mod:`tablac.mapper` (CoSMIC
Algorithm 1, or ML-RCS); this module turns a placement policy into slots, transfers,
buffer addresses and the tree-bus program.  Operations are taken in priority order
(longest latency-weighted distance to a sink first, TABLA 5.3 / CoSMIC 6) and each gets
the earliest slot at which its operands can be on its PE.
"""
from __future__ import annotations

import bisect
import heapq
import math
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from golden.cosmic_pe import DONE_OFFSET, HAZARD_DISTANCE, result_latency

from .errors import CompileError

LAT_LINK = 1            # neighbour link: slot s reads slot k's left/right_out from s = k+1
LAT_BUS = 2             # row bus register: from s = k+2; a tree delivery from c0 + depth
TREE_CYCLE_SHIFT = 3    # tree transaction at schedule slot c0 (= source slot + LAT_BUS) is
#                         tree-program cycle c0 + 3 (= source slot + OUT_OFFSET, codegen)
SEARCH = 4096           # slots searched for one operation before giving up
MAX_ACC_TERMS = 256     # 2**ACC_GUARD with the default ACC_GUARD = 8
RECOMPUTE_DEPTH = 3     # operations repeated on a consumer's PE instead of a transfer
DUAL_WINDOW = 4         # slots searched for an instruction reading two remote operands

PE_OP = {"add": "add", "sub": "sub", "mul": "mul", "lt": "lt", "gt": "gt", "min": "min",
         "max": "max", "sigmoid": "sigmoid", "gaussian": "gauss", "log": "log",
         "recip": "recip", "pass": "pass"}
UNARY_OPS = {"sigmoid", "gaussian", "log", "recip", "pass"}
NL_BIT = {"sigmoid": 1, "gaussian": 2, "recip": 4, "log": 8}


def _start(iv):
    return iv[0]


def tree_depth(rows: int) -> int:
    return max(1, math.ceil(math.log2(rows))) if rows > 1 else 1


@dataclass
class Ins:
    """One microcode slot before address assignment.  Operands are ``(src, key)``:
    ``src`` in D M I (buffer, ``key`` a symbolic address) or L R BUS ZERO ONE."""
    op: str
    a: tuple | None = None
    b: tuple | None = None
    wb: tuple | None = None        # (buf, key)
    outs: set = field(default_factory=set)
    clr: bool = False
    node: int | None = None        # DFG node whose value this instruction computes
    kind: str = "op"               # op, mac, relay, recv, copy, commit


@dataclass
class Copy:
    pe: int
    buf: str
    key: tuple
    ready: int                     # first slot that may read it


@dataclass
class Sched:
    """A thread's schedule (symbolic addresses; :mod:`tablac.codegen` assigns numbers)."""
    columns: int
    rows: int
    length: int
    code: list                     # per PE: {slot: Ins}
    tree: list                     # (cycle, op, src rows, dst rows)
    data_key: dict                 # leaf node id -> (pe, key) of its DATA word
    sample: list                   # sample vector: node ids (or None) in memory order
    chunks: list                   # (row, first word, words) of each row transfer
    model_home: dict               # model node id -> (pe, key)
    model_names: dict              # model node id -> element name
    preload: dict                  # (pe, buf, key) -> fixed-point word (constants)
    transfers: dict                # kind -> count (link, bus, tree)
    slots_used: int
    mapper: str
    bypass: int
    nl: int
    place: dict                    # op node id -> PE

    @property
    def pes(self):
        return self.columns * self.rows


class Scheduler:
    def __init__(self, graph, columns: int, rows: int, fmt, policy, *, bypass: int = 1,
                 recompute: int = RECOMPUTE_DEPTH, file: str = "<input>"):
        self.g = graph
        self.C, self.R = columns, rows
        self.P = columns * rows
        self.fmt = fmt
        self.policy = policy
        self.dd = 1 if bypass else HAZARD_DISTANCE     # a pass (latency 1)
        self.bypass = bypass
        self.file = file
        self.d = tree_depth(rows)
        self.code = [dict() for _ in range(self.P)]
        self.regs = defaultdict(list)       # register -> [(lo, hi)]
        self.tree_busy = set()
        self.tree = []                      # [cycle, op, src rows, dst rows, node]
        self.txns = defaultdict(list)       # node -> its tree transactions
        self.bus_deliv = defaultdict(list)  # node -> deliveries on row bus registers
        self.copies = defaultdict(list)     # node -> [Copy]
        self.prod = {}                      # node -> (pe, slot) of its producing instruction
        self.deliv = defaultdict(list)      # (node, pe) -> [[reg, vis, hi, src]]
        self.reads = defaultdict(lambda: -1)  # (pe, buf, key) -> last slot reading it
        self.nscratch = 0
        self.preload = {}
        self.transfers = {"link": 0, "bus": 0, "tree": 0}
        self.model_home = {}
        self.place = {}
        self.users = defaultdict(list)
        for n in graph.nodes:
            for i, a in enumerate(n.args):
                self.users[a].append((n.id, i))
        self.nl = 0
        self.acc_busy = defaultdict(list)
        self.pend = {}                      # node -> pending tree-bus expression
        self.fold = True
        self.recompute = recompute          # depth of repeated operations (0: none)
        self.dual = True                    # instructions may read two remote operands
        self.recomputed = 0

    # ------------------------------------------------------------ helpers
    def err(self, msg, node=None):
        line = self.g.nodes[node].line if node is not None else 0
        raise CompileError(msg, self.file, line or 0, 0)

    def row(self, pe):
        return pe // self.C

    def free_slot(self, pe, s):
        return s not in self.code[pe]

    def lat(self, op):
        """Slots from an instruction of PE op ``op`` to the first slot of the same PE
        reading its result (golden.cosmic_pe.result_latency; HAZARD_DISTANCE without
        bypass)."""
        return result_latency(op) if self.bypass else HAZARD_DISTANCE

    def xd(self, pe, e, relay=False):
        """Cycles by which slot ``e``'s own outputs come later than a latency-1 op's
        (its op's result latency - 1; a relay is a pass: 0)."""
        return 0 if relay else result_latency(self.code[pe][e].op) - 1

    def reg_free(self, reg, lo, hi, ignore=None):
        """No reservation of ``reg`` overlaps ``[lo, hi]`` (reservations are disjoint and
        kept sorted, so only the neighbours of ``lo`` need a look)."""
        ivs = self.regs[reg]
        i = bisect.bisect_left(ivs, lo, key=_start)
        for j in (i - 1, i, i + 1):
            if 0 <= j < len(ivs):
                iv = ivs[j]
                if iv is not ignore and not (hi < iv[0] or lo > iv[1]):
                    return False
        return True

    def reserve(self, reg, iv):
        bisect.insort(self.regs[reg], iv, key=_start)

    def scratch(self, buf):
        self.nscratch += 1
        return ("s", self.nscratch)

    def emit(self, pe, s, ins):
        assert s not in self.code[pe], (pe, s)
        self.code[pe][s] = ins
        for opnd in (ins.a, ins.b):
            if opnd and opnd[0] in "DMI":
                k = (pe, opnd[0], opnd[1])
                self.reads[k] = max(self.reads[k], s)

    def const_operand(self, v, pe, avoid):
        """Operand for constant node ``v`` on ``pe`` not in buffer ``avoid``: ZERO/ONE or a
        word preloaded at configuration time."""
        q = int(self.fmt.to_fixed(self.g.nodes[v].value, name=f"constant {self.g.nodes[v].value}",
                                   saturate=True))
        if q == 0:
            return ("ZERO", None)
        if q == self.fmt.one:
            return ("ONE", None)
        for buf in ("M", "D", "I"):
            if buf != avoid:
                key = ("c", v)
                self.preload[(pe, buf, key)] = q
                return (buf, key)

    def is_const(self, v):
        return self.g.nodes[v].op == "const"

    # ------------------------------------------------------------ routes
    def route(self, q, p):
        """(kind, latency, source register, destination register, operand code)."""
        if self.row(q) == self.row(p):
            if p == q - 1:
                return "link", LAT_LINK, ("L", q), None, "R"
            if p == q + 1:
                return "link", LAT_LINK, ("R", q), None, "L"
            return "bus", LAT_BUS, ("B", self.row(q)), None, "BUS"
        return "tree", LAT_BUS + self.d, ("B", self.row(q)), ("B", self.row(p)), "BUS"

    def try_transfer(self, v, p, s):
        """A way to have ``v`` readable on port of PE ``p`` in slot ``s``: returns an action
        tuple for :meth:`commit_transfer`, or None."""
        # reuse an existing delivery by extending its window
        for dl in self.deliv[(v, p)]:
            reg, vis, hi, src, iv = dl
            if vis <= s and (s <= hi or self.reg_free(reg, hi + 1, s, ignore=iv)):
                return ("extend", dl, s, src)
        # a value already on this row's bus register (for another PE of the row)
        breg = ("B", self.row(p))
        for dl in self.bus_deliv[v]:
            reg, vis, hi, src, iv = dl
            if reg == breg and vis <= s and (s <= hi or self.reg_free(reg, hi + 1, s, ignore=iv)):
                return ("extend", dl, s, "BUS")
        # a tree transaction of this value: add this row to its destinations
        for txn in self.txns[v]:
            c0 = txn[0]
            vis = c0 + self.d
            if breg[1] not in txn[3] and vis <= s \
                    and self.reg_free(breg, vis, s):
                return ("addrow", txn, vis, s, breg)
        if v in self.pend and not self.copies[v]:
            return self.try_tree_expr(v, p, s)
        best = None
        for c in self.copies[v]:
            q = c.pe
            if q == p:
                continue
            kind, lat, sreg, dreg, src = self.route(q, p)
            cand = []
            pr = self.prod.get(v)
            if pr and pr[0] == q:
                cand.append((pr[1], False))
            lo = c.ready
            for e in range(s - lat, lo - 1, -1):
                if self.free_slot(q, e):
                    cand.append((e, True))
                    if len(cand) > 3:
                        break
            for e, relay in cand:
                x = self.xd(q, e, relay)
                if e + x + lat > s:
                    continue
                if kind == "tree":
                    c0 = e + x + LAT_BUS
                    if c0 in self.tree_busy:
                        continue
                    if not self.reg_free(sreg, c0, c0) or not self.reg_free(dreg, e + x + lat, s):
                        continue
                    if not relay and (("B" in self.code[q][e].outs)):
                        continue
                elif kind == "bus":
                    if not self.reg_free(sreg, e + x + lat, s):
                        continue
                    if not relay and "B" in self.code[q][e].outs:
                        continue
                else:
                    if not self.reg_free(sreg, e + x + lat, s):
                        continue
                    if not relay and sreg[0] in self.code[q][e].outs:
                        continue
                act = ("new", v, c, e, relay, kind, lat + x, sreg, dreg, s, src, x)
                if best is None or (not relay and best[4]):
                    best = act
                break
        return best

    # ------------------------------------------------------------ tree-bus expressions
    def leaf_emit(self, w):
        """(copy, earliest emission slot, producer slot or None) of a concrete value."""
        best = None
        for c in self.copies[w]:
            pr = self.prod.get(w)
            ps = pr[1] if pr and pr[0] == c.pe else None
            e = ps + self.xd(c.pe, ps) if ps is not None else c.ready
            if best is None or e < best[1]:
                best = (c, e, ps)
        return best

    def _leaf_at(self, lf):
        """(copy, earliest emission, producer slot or None) of an expression leaf, on the
        copy (hence row) fixed when the expression was formed."""
        c = lf[3]
        pr = self.prod.get(lf[2])
        ps = pr[1] if pr and pr[0] == c.pe else None
        return c, (ps + self.xd(c.pe, ps) if ps is not None else c.ready), ps

    def expr_leaves(self, x, out):
        if x[0] == "leaf":
            out.append(x)
        else:
            self.expr_leaves(x[2], out)
            self.expr_leaves(x[3], out)
        return out

    @staticmethod
    def embeds(x):
        """Whether expression ``x`` fits the fixed binary tree over the rows: every
        internal node sits at the lowest common ancestor of its leaf rows with its two
        operands in the two different subtrees below it."""
        if x[0] == "leaf":
            return True
        rows = x[1]
        lo, hi = min(rows), max(rows)
        h = (lo ^ hi).bit_length()
        if h == 0:
            return False
        left, right = x[2][1], x[3][1]
        sl = {(r >> (h - 1)) & 1 for r in left}
        sr = {(r >> (h - 1)) & 1 for r in right}
        if len(sl) != 1 or len(sr) != 1 or sl == sr:
            return False
        return Scheduler.embeds(x[2]) and Scheduler.embeds(x[3])

    def as_expr(self, v):
        if v in self.pend and not self.copies[v]:
            return self.pend[v]["expr"]
        le = self.leaf_emit(v)
        if le is None:
            return None
        return ("leaf", frozenset({self.row(le[0].pe)}), v, le[0])

    def try_fold(self, n):
        """Make add/mul node ``n`` a pending tree-bus expression if its operands sit on
        different rows and the combination fits the tree; True if folded."""
        if self.R < 2 or n.op not in ("add", "mul") or len(n.args) != 2:
            return False
        a, b = n.args
        if a == b or self.is_const(a) or self.is_const(b):
            return False
        for v in (a, b):
            if v in self.pend and (len(self.users.get(v, [])) != 1
                                   or self.pend[v]["expr"][0] != n.op):
                return False    # one op per transaction: every tree node adds, or multiplies
        # only reductions: n extends a pending expression, or feeds (alone) another
        # node of its own op -- a lone cross-row add/mul is cheaper on a PE than a tree
        # transaction (one starts per cycle)
        us = self.users.get(n.id, [])
        inner = len(us) == 1 and self.g.nodes[us[0][0]].op == n.op
        if not inner and a not in self.pend and b not in self.pend:
            return False
        ea, eb = self.as_expr(a), self.as_expr(b)
        if ea is None or eb is None or ea[1] & eb[1]:
            return False
        x = (n.op, ea[1] | eb[1], ea, eb)
        if not self.embeds(x):
            return False
        lo = max(self._leaf_at(l)[1] for l in self.expr_leaves(x, []))
        self.pend[n.id] = {"expr": x, "lo": lo}
        return True

    def try_tree_expr(self, v, p, s):
        x = self.pend[v]["expr"]
        leaves = self.expr_leaves(x, [])
        dreg = ("B", self.row(p))
        hi_e = s - LAT_BUS - self.d
        lo_e = self.pend[v]["lo"]
        e = hi_e + 1
        tries = 0
        while e > lo_e and tries < 64:     # latest emission first: shortest windows
            e -= 1
            tries += 1
            c0 = e + LAT_BUS
            if c0 in self.tree_busy or not self.reg_free(dreg, c0 + self.d, s):
                continue
            plan = []
            for lf in leaves:
                c, _, ps = self._leaf_at(lf)
                q = c.pe
                if not self.reg_free(("B", self.row(q)), c0, c0):
                    break
                if ps is not None and ps + self.xd(q, ps) == e and "B" not in self.code[q][ps].outs:
                    plan.append((lf[2], c, False, ps))
                elif e >= c.ready and self.free_slot(q, e):
                    plan.append((lf[2], c, True, e))
                else:
                    break
            else:
                return ("expr", v, e, plan, s, dreg)
        return None

    def commit_expr(self, act, p):
        _, v, e, plan, s, dreg = act
        c0 = e + LAT_BUS
        for w, c, relay, slot in plan:
            if relay:
                self.emit(c.pe, slot, Ins("pass", a=(c.buf, c.key), outs={"B"}, node=w, kind="relay"))
            else:
                self.code[c.pe][slot].outs.add("B")
            self.reserve(("B", self.row(c.pe)), [c0, c0])
        self.tree_busy.add(c0)
        iv = [c0 + self.d, s]
        self.reserve(dreg, iv)
        x = self.pend[v]["expr"]
        txn = [c0, x[0], tuple(sorted(x[1])), [dreg[1]], v]
        self.tree.append(txn)
        self.txns[v].append(txn)
        self.bus_deliv[v].append([dreg, c0 + self.d, s, "BUS", iv])
        self.transfers["tree"] += len(plan)
        return "BUS"

    def commit_transfer(self, act, p):
        if act[0] == "expr":
            return self.commit_expr(act, p)
        if act[0] == "extend":
            dl, s = act[1], act[2]
            iv = dl[4]
            iv[1] = max(iv[1], s)
            dl[2] = iv[1]
            return act[3]
        if act[0] == "addrow":
            _, txn, vis, s, breg = act
            txn[3].append(breg[1])
            iv = [vis, s]
            self.reserve(breg, iv)
            self.bus_deliv[txn[4]].append([breg, vis, s, "BUS", iv])
            return "BUS"
        _, v, c, e, relay, kind, lat, sreg, dreg, s, src, x = act
        q = c.pe
        port = "B" if kind in ("bus", "tree") else sreg[0]
        if relay:
            self.emit(q, e, Ins("pass", a=(c.buf, c.key), outs={port}, node=v, kind="relay"))
        else:
            self.code[q][e].outs.add(port)
        if kind == "tree":
            c0 = e + x + LAT_BUS
            self.tree_busy.add(c0)
            self.reserve(sreg, [c0, c0])
            iv = [e + lat, s]
            self.reserve(dreg, iv)
            txn = [c0, "pass", (self.row(q),), [self.row(p)], v]
            self.tree.append(txn)
            self.txns[v].append(txn)
            reg = dreg
        else:
            iv = [e + lat, s]
            self.reserve(sreg, iv)
            reg = sreg
        self.transfers[kind] += 1
        dl = [reg, e + lat, s, src, iv]
        if reg[0] == "B":
            self.bus_deliv[v].append(dl)
        else:
            self.deliv[(v, p)].append(dl)
        return src

    def earliest_arrival(self, v, p):
        best = None
        for c in self.copies[v]:
            if c.pe == p:
                t = c.ready
            else:
                pr = self.prod.get(v)
                base = pr[1] + self.xd(c.pe, pr[1]) if pr and pr[0] == c.pe else c.ready
                t = base + self.route(c.pe, p)[1]
            best = t if best is None else min(best, t)
        if v in self.pend:
            t = self.pend[v]["lo"] + LAT_BUS + self.d
            for txn in self.txns[v]:
                t = min(t, txn[0] + self.d)
            best = t if best is None else min(best, t)
        if best is None:
            self.err(f"internal: value of node {v} is nowhere", v)
        return best

    def pick_pair(self, a, b, p):
        """Copies of ``a`` and ``b`` on ``p`` that two operands can read together (other
        buffers, or the same word), earliest first; None if there are none."""
        best = None
        for ca in self.copies[a]:
            if ca.pe != p:
                continue
            for cb in self.copies[b]:
                if cb.pe != p or (ca.buf == cb.buf and ca.key != cb.key):
                    continue
                k = max(ca.ready, cb.ready)
                if best is None or k < best[0]:
                    best = (k, ca, cb)
        return None if best is None else (best[1], best[2])

    def local(self, v, p, avoid=None):
        for c in self.copies[v]:
            if c.pe == p and c.buf != avoid:
                return c
        return None

    def receive(self, v, p, avoid=None):
        """Bring ``v`` into a buffer of ``p`` (not ``avoid``) with a ``pass``; returns the Copy."""
        c = self.local(v, p)
        if c is not None:   # local copy in the wrong buffer: copy across buffers
            buf = "D" if avoid != "D" else "I"
            s = c.ready
            while not self.free_slot(p, s):
                s += 1
            key = self.scratch(buf)
            self.emit(p, s, Ins("pass", a=(c.buf, c.key), wb=(buf, key), node=v, kind="copy"))
            nc = Copy(p, buf, key, s + self.lat("pass"))
            self.copies[v].append(nc)
            return nc
        s = self.earliest_arrival(v, p)
        for _ in range(SEARCH):
            if self.free_slot(p, s):
                act = self.try_transfer(v, p, s)
                if act:
                    src = self.commit_transfer(act, p)
                    buf = "I" if avoid != "I" else "D"
                    key = self.scratch(buf)
                    self.emit(p, s, Ins("pass", a=(src, None), wb=(buf, key), node=v, kind="recv"))
                    nc = Copy(p, buf, key, s + self.lat("pass"))
                    self.copies[v].append(nc)
                    return nc
            s += 1
        self.err(f"cannot route node {v} to PE {p}", v)

    # ------------------------------------------------------------ operations
    def result_buf(self, n):
        us = self.users.get(n.id, [])
        if us:
            u, i = us[0]
            un = self.g.nodes[u]
            if i == 1 and un.op not in ("dot",) and un.args and un.args[0] != n.id \
                    and self.g.nodes[un.args[0]].op not in ("input", "label", "const"):
                return "D"
        return "I"

    # ------------------------------------------------------------ recomputation
    def recompute_est(self, v, p, depth):
        """Slot from which ``v`` could be read on ``p`` if its operation were repeated
        there (operands brought or repeated in turn, ``depth`` levels); None if not."""
        n = self.g.nodes[v]
        if depth <= 0 or n.op not in PE_OP or v in self.pend or v not in self.prod:
            return None
        t = 0
        for a in set(n.args):
            if self.is_const(a):
                continue
            t = max(t, self.avail_est(a, p, depth - 1))
        while not self.free_slot(p, t):
            t += 1
        return t + self.lat(PE_OP[n.op])

    def avail_est(self, a, p, depth):
        c = self.local(a, p)
        if c is not None:
            return c.ready
        t = self.earliest_arrival(a, p)
        r = self.recompute_est(a, p, depth)
        return t if r is None else min(t, r)

    def maybe_recompute(self, v, p):
        """Repeat ``v``'s operation on ``p`` when that makes it readable there sooner than
        a transfer (a node computes the same word wherever its operands are: the result
        stays bit-exact).  Returns True if it did."""
        if self.is_const(v) or self.local(v, p) is not None or not self.recompute:
            return False
        r = self.recompute_est(v, p, self.recompute)
        if r is None or r >= self.earliest_arrival(v, p):
            return False
        old = self.prod.get(v)
        self.schedule_binary(self.g.nodes[v], p)
        if old is not None:
            self.prod[v] = old
        self.recomputed += 1
        return True

    @staticmethod
    def act_src(act):
        """Port code a transfer action delivers on (L, R or BUS)."""
        return {"extend": lambda a: a[3], "addrow": lambda a: "BUS",
                "expr": lambda a: "BUS", "new": lambda a: a[10]}[act[0]](act)

    @staticmethod
    def act_emits(act):
        """(pe, slot) of the relay instructions an action would add."""
        if act[0] == "new":
            return {(act[2].pe, act[3])} if act[4] else set()
        if act[0] == "expr":
            return {(c.pe, slot) for _, c, relay, slot in act[3] if relay}
        return set()

    def acts_compatible(self, a, b):
        """Two transfers read by one instruction: different ports (so different
        registers), no relay slot wanted twice."""
        return self.act_src(a) != self.act_src(b) and not (self.act_emits(a) & self.act_emits(b))

    def dual_port_slot(self, remote, p, lo, hi):
        """First slot in ``[lo, hi]`` at which both remote operands can be read off two
        different ports of ``p`` (nothing is committed); None if there is none."""
        for s in range(lo, hi + 1):
            if not self.free_slot(p, s):
                continue
            a = self.try_transfer(remote[0], p, s)
            b = a and self.try_transfer(remote[1], p, s)
            if a and b and self.acts_compatible(a, b):
                return s
        return None

    def schedule_binary(self, n, p):
        args = list(n.args)
        unary = n.op in UNARY_OPS
        opnds = args[:1] if unary else args[:2]
        for v in dict.fromkeys(opnds):
            self.maybe_recompute(v, p)
        # two remote operands: read both straight off two different ports (a link and
        # the other link or the bus) in one slot when that is no later than receiving the
        # earlier one into a buffer first (one slot more on this PE)
        remote = [v for v in opnds if not self.is_const(v) and self.local(v, p) is None]
        if len(remote) == 2 and remote[0] != remote[1]:
            ta, tb = (self.earliest_arrival(v, p) for v in remote)
            dual = self.dual_port_slot(remote, p, max(ta, tb), max(ta, tb) + DUAL_WINDOW) \
                if self.dual else None
            if dual is None or dual > max(min(ta, tb) + self.dd, max(ta, tb)):
                r0 = min(remote, key=lambda v: self.earliest_arrival(v, p))
                self.receive(r0, p)
        # buffer conflicts between two local operands (one read port per buffer)
        fixed = {}
        if len(opnds) == 2 and opnds[0] != opnds[1] and self.local(opnds[0], p) \
                and self.local(opnds[1], p):
            pair = self.pick_pair(opnds[0], opnds[1], p)
            if pair is None:
                self.receive(opnds[1], p, avoid=self.local(opnds[0], p).buf)
                pair = self.pick_pair(opnds[0], opnds[1], p)
            fixed = {opnds[0]: pair[0], opnds[1]: pair[1]}
        lo = 0
        for v in opnds:
            if not self.is_const(v):
                lo = max(lo, self.earliest_arrival(v, p))
        s = lo
        for _ in range(SEARCH):
            if self.free_slot(p, s):
                ops, acts, ok, used = [], [], True, None
                for j, v in enumerate(opnds):
                    if j == 1 and v == opnds[0]:
                        ops.append(("same", None))
                        continue
                    if self.is_const(v):
                        ops.append(("const", v))
                        continue
                    c = fixed.get(v) or self.local(v, p)
                    if c is not None:
                        if c.ready > s:
                            ok = False
                            break
                        ops.append(("buf", c))
                        continue
                    act = self.try_transfer(v, p, s)
                    if act is None:
                        ok = False
                        break
                    acts.append(act)
                    ops.append(("act", act))
                if ok and len(acts) == 2 and not self.acts_compatible(*acts):
                    ok = False
                if ok:
                    break
            s += 1
        else:
            self.err(f"cannot schedule node {n.id} ({n.op}) on PE {p}", n.id)
        # commit
        fin = []
        bufs_used = {o[1].buf for o in ops if o[0] == "buf"}
        for o in ops:
            if o[0] == "same":
                fin.append(fin[0])
            elif o[0] == "buf":
                fin.append((o[1].buf, o[1].key))
            elif o[0] == "act":
                fin.append((self.commit_transfer(o[1], p), None))
            else:
                other = [b for b in bufs_used]
                fin.append(self.const_operand(o[1], p, other[0] if other else None))
                if fin[-1][0] in "DMI":
                    bufs_used.add(fin[-1][0])
        buf = self.result_buf(n)
        key = self.scratch(buf)
        ins = Ins(PE_OP[n.op], a=fin[0], b=None if unary else fin[1], wb=(buf, key), node=n.id)
        self.emit(p, s, ins)
        self.prod[n.id] = (p, s)
        self.copies[n.id].append(Copy(p, buf, key, s + self.lat(ins.op)))
        if n.op in NL_BIT:
            self.nl |= NL_BIT[n.op]

    def schedule_dot(self, n, p):
        pairs = [(n.args[2 * i], n.args[2 * i + 1]) for i in range(len(n.args) // 2)]
        if len(n.args) % 2 or not pairs:
            self.err(f"dot node {n.id} needs an even, non-zero number of operands", n.id)
        if len(pairs) > MAX_ACC_TERMS:
            self.err(f"dot of {len(pairs)} terms exceeds the {MAX_ACC_TERMS}-term mac chain "
                     "the PE accumulator keeps exact (lower with a smaller dot group)", n.id)
        for v in dict.fromkeys(n.args):
            self.maybe_recompute(v, p)
        rem = lambda v: not self.is_const(v) and self.local(v, p) is None  # noqa: E731
        terms = []
        for a, b in pairs:
            if rem(a) and rem(b) and a != b:
                self.receive(a, p)
            if not rem(a) and not rem(b) and a != b and not self.is_const(a) \
                    and not self.is_const(b) and self.pick_pair(a, b, p) is None:
                self.receive(b, p, avoid=self.local(a, p).buf)
            # (remote operand or None, local/const operand, estimated ready slot)
            if rem(a):
                terms.append((a, b, self.earliest_arrival(a, p)))
            elif rem(b):
                terms.append((b, a, self.earliest_arrival(b, p)))
            else:
                terms.append((None, (a, b), 0))
        chosen = []
        for r, other, est in terms:
            if r is None:
                a, b = other
                if a != b and not self.is_const(a) and not self.is_const(b):
                    ca, cb = self.pick_pair(a, b, p)
                    chosen.append((None, ((ca.buf, ca.key), (cb.buf, cb.key)),
                                   max(ca.ready, cb.ready)))
                    continue
                if self.is_const(a) and not self.is_const(b):
                    fb, rb = self._buf_operand(b, p, None)
                    fa, ra = self._buf_operand(a, p, fb[0] if fb[0] in "DMI" else None)
                else:
                    fa, ra = self._buf_operand(a, p, None)
                    fb, rb = self._buf_operand(b, p, fa[0] if a != b and fa[0] in "DMI" else None)
                chosen.append((None, (fa, fb), max(ra, rb)))
            elif other == r:
                chosen.append((r, None, est))
            else:
                fo, ro = self._buf_operand(other, p, None)
                chosen.append((r, fo, max(est, ro)))
        # The accumulator sums exact products (2W + 8 bits, no saturation for <= 256
        # terms), so the terms may issue in any order: ready ones first, with gaps, as
        # long as no other mac chain on this PE interleaves (chains follow each other);
        # a remote operand is read straight off the link or bus port.
        k = len(chosen)
        order = sorted(range(k), key=lambda i: (chosen[i][2], i))
        t = max([iv[1] + 1 for iv in self.acc_busy[p]], default=0)
        slots = []
        buf = self.result_buf(n)
        key = self.scratch(buf)
        for j, i in enumerate(order):
            r, fo, est = chosen[i]
            t = max(t, est)
            for _ in range(SEARCH):
                if self.free_slot(p, t):
                    act = self.try_transfer(r, p, t) if r is not None else True
                    if act:
                        break
                t += 1
            else:
                self.err(f"cannot place the mac chain of node {n.id}", n.id)
            if r is None:
                fa, fb = fo
            else:
                src = (self.commit_transfer(act, p), None)
                fa, fb = (src, src) if fo is None else (src, fo)
            last = j == k - 1
            self.emit(p, t, Ins("mac", a=fa, b=fb, wb=(buf, key) if last else None,
                                clr=(j == 0), node=n.id if last else None, kind="mac"))
            slots.append(t)
            t += 1
        lo, hi = slots[0], slots[-1]
        self.acc_busy[p].append((lo, hi))
        self.prod[n.id] = (p, hi)
        self.copies[n.id].append(Copy(p, buf, key, hi + self.lat("mac")))

    def _buf_operand(self, v, p, avoid):
        if self.is_const(v):
            return self.const_operand(v, p, avoid), 0
        c = self.local(v, p, avoid=avoid) or self.local(v, p)
        return (c.buf, c.key), c.ready

    # ------------------------------------------------------------ leaves
    def place_leaves(self, data_pe):
        for v, (pe, key) in data_pe.items():
            self.copies[v].append(Copy(pe, "D", key, 0))

    def place_model(self, v, pe):
        if v in self.model_home:
            return
        key = ("m", v)
        self.model_home[v] = (pe, key)
        self.copies[v].append(Copy(pe, "M", key, 0))

    # ------------------------------------------------------------ commits
    def commit_updates(self):
        g = self.g
        for name, ids in g.update.items():
            olds = np.asarray(g.model[name]).ravel()
            news = np.asarray(ids).ravel()
            for old, new in zip(olds, news):
                old, new = int(old), int(new)
                if old < 0 or old == new:
                    continue
                if old not in self.model_home:   # model element read by nobody: home PE 0
                    self.place_model(old, self.policy.model_home(old, self))
                h, key = self.model_home[old]
                last = self.reads[(h, "M", key)]
                pr = self.prod.get(new)
                if (pr and pr[0] == h and len(self.users.get(new, [])) == 0
                        and last <= pr[1] and not self.code[h][pr[1]].outs
                        and not any(self.deliv[(new, q)] for q in range(self.P))
                        and not self.bus_deliv[new]
                        and len(self.copies[new]) == 1):
                    self.code[h][pr[1]].wb = ("M", key)
                    self.copies[new][0] = Copy(h, "M", key, pr[1] + self.lat(self.code[h][pr[1]].op))
                    continue
                lo = last + 1
                if self.is_const(new):
                    s = lo
                    while not self.free_slot(h, s):
                        s += 1
                    self.emit(h, s, Ins("pass", a=self.const_operand(new, h, "M"), wb=("M", key),
                                        kind="commit"))
                    continue
                if self.local(new, h) is None:
                    c = self.receive(new, h, avoid="M")
                c = self.local(new, h, avoid="M") or self.receive(new, h, avoid="M")
                s = max(lo, c.ready)
                while not self.free_slot(h, s):
                    s += 1
                self.emit(h, s, Ins("pass", a=(c.buf, c.key), wb=("M", key), kind="commit"))

    # ------------------------------------------------------------ driver
    def run(self, priority):
        g = self.g
        indeg = {}
        heap = []
        for n in g.nodes:
            if n.op in ("input", "label", "model", "const"):
                continue
            k = sum(1 for a in set(n.args) if g.nodes[a].op not in ("input", "label", "model", "const"))
            indeg[n.id] = k
            if k == 0:
                heapq.heappush(heap, (-priority[n.id], n.id))
        done_users = defaultdict(int)
        while heap:
            _, v = heapq.heappop(heap)
            n = g.nodes[v]
            if self.fold and self.try_fold(n):
                self.place[v] = None
                for u in sorted({u for u, _ in self.users.get(v, [])}):
                    done_users[u] += 1
                    if done_users[u] == indeg[u]:
                        heapq.heappush(heap, (-priority[u], u))
                continue
            p = self.policy.choose(n, self)
            self.place[v] = p
            for a in n.args:
                if g.nodes[a].op == "model":
                    self.place_model(a, self.policy.model_home(a, self, p, n))
            if n.op == "dot":
                self.schedule_dot(n, p)
            else:
                self.schedule_binary(n, p)
            for u in sorted({u for u, _ in self.users.get(v, [])}):
                done_users[u] += 1
                if done_users[u] == indeg[u]:
                    heapq.heappush(heap, (-priority[u], u))
        self.commit_updates()


def priorities(graph) -> dict:
    """Latency-weighted longest distance from each op to a sink (TABLA's distance to
    sink, counting a dot of k terms as k slots)."""
    dist = {}
    users = defaultdict(list)
    for n in graph.nodes:
        for a in n.args:
            users[a].append(n.id)
    for n in reversed(graph.nodes):
        w = len(n.args) // 2 if n.op == "dot" else 1
        dist[n.id] = w + max((dist[u] for u in users[n.id]), default=0)
    return dist


def critical_path(graph, bypass: int = 1) -> int:
    """Cycles from start to done of the DFG's longest dependence chain on one PE with the
    real cosmic_pe latencies: each op one slot (mac chain one per term), a dependent op
    its producer's result latency (golden.cosmic_pe.result_latency; HAZARD_DISTANCE
    without bypass) later, plus the DONE_OFFSET-cycle pipeline of the last instruction."""
    fin = {}
    lat = {}
    for n in graph.nodes:
        if n.op in ("input", "label", "model", "const"):
            fin[n.id], lat[n.id] = -1, 1
            continue
        start = max((fin[a] + lat[a] for a in n.args), default=0)
        k = len(n.args) // 2 if n.op == "dot" else 1
        fin[n.id] = start + k - 1
        op = "mac" if n.op == "dot" else PE_OP.get(n.op, "add")
        lat[n.id] = result_latency(op) if bypass else HAZARD_DISTANCE
    last = max((f for f in fin.values()), default=-1)
    return last + 1 + DONE_OFFSET if last >= 0 else 0


def op_count(graph) -> int:
    """PE issue slots the DFG needs at least (a dot of k terms is k macs)."""
    return sum(len(n.args) // 2 if n.op == "dot" else 1 for n in graph.nodes
               if n.op not in ("input", "label", "model", "const"))
