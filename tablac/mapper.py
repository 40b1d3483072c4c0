"""Mapping of DFG data and operations onto one thread's PEs; two selectable policies.

Both start from the same *data map*, fixed by the memory layout (CoSMIC 6: "each
training data element is mapped to the PE connected to the memory interface column
which brings in that element", so nothing is marshalled): a training sample is the
vector of every ``model_input`` element then every ``model_output`` element in
declaration order (row-major inside an array), exactly as it lies in memory; it is cut
into one contiguous chunk per row (as even as possible), and word ``w`` of row ``r``'s
chunk arrives on lane ``w % columns``, i.e. on PE ``r*columns + w % columns`` at DATA
address ``w // columns``.

* ``cosmic`` -- CoSMIC Algorithm 1 (minimum communication, data first): a ready vertex
  goes to the PE of one of its DATA operands (for a ``dot`` the PE holding most of
  them), and an unmapped MODEL operand is mapped to the same PE; otherwise to the PE of
  its (mapped) MODEL operand, or, if that is unmapped, to the next PE of a round-robin
  counter together with the model element; otherwise to the PE of its first INTERIM
  operand.  Vertices are taken longest-dependence-chain first.
* ``mlrcs`` -- TABLA's ML-RCS list scheduling (TABLA 5.3): ready operations in order of
  distance to sink; each takes the PE (resource) on which it can start earliest, with
  the real transfer latencies counted; a model element lives on the PE of its first
  operation.  It maps operations first and lets data follow.

:func:`schedule` runs the mapper once per entry of :data:`VARIANTS` and keeps the
shortest schedule: the tree-aligned data map (``data_map(align=True)``), the PE between
two operand PEs as a candidate for a reduction node, ``spread`` (an operation with a DATA
operand may take another PE of that row or its model element's home; homes balanced) and
the scheduler's two-port reads on or off -- for the DFG as lowered and, where it applies,
for its bit-exact rewrite :func:`commute_bool_muls` (a 0/1 comparison multiplied last).
The lower bounds the bench and the report divide by are :func:`critical_path_bound` and
:func:`ops_bound`.
"""
from __future__ import annotations

import heapq
from dataclasses import replace

import numpy as np

import golden.cosmic_pe as _cosmic_pe

from .errors import CompileError
from .schedule import (LAT_BUS, PE_OP, Sched, Scheduler, critical_path, op_count,  # noqa: F401
                       priorities, tree_depth)

LEAF = ("input", "label", "model", "const")
MAPPERS = ("cosmic", "mlrcs")
# (data_map align, CosmicPolicy neighbours[, spread[, Scheduler.dual]]) candidates; the
# shortest schedule wins (then the fewest transfers).  Without the two-port reads
# (dual False) some list schedules come out shorter (mlrcs on svm and reco): greedy
# anomalies, so both are tried.  The neighbour choice is tried on graphs of at most SMALL_GRAPH
# nodes only (each variant is a full scheduling pass).
VARIANTS = ((False, False), (True, False), (False, True), (True, True),
            (False, True, True), (True, True, True),
            (False, False, False, False), (True, False, False, False))
SMALL_GRAPH = 1000


BOOL_OPS = ("lt", "gt")     # results are exactly 0 or ONE (2**F)


def commute_bool_muls(graph, fmt=None):
    """The DFG with ``mul(X, mul(B, Z))`` rewritten to ``mul(B, mul(X, Z))`` wherever ``B``
    is a comparison (its word is 0 or ONE = 2**F), the inner product has no other user
    and ``B`` comes later than ``X`` and ``Z`` (longer chain of operations below it); None
    when nothing applies (or leaf ids would move).

    Bit-exact in the fixed-point path (``QFormat.mul`` = saturate(round(a*b / 2**F)),
    round half up): with ``B = ONE`` both sides are ``mul(X, Z)`` because ``mul(ONE, v) =
    v`` for every word ``v``; with ``B = 0`` both are 0 (``mul(0, v) = mul(v, 0) = 0``).
    In float64 likewise (``B`` is 0.0 or 1.0).  It takes one operation off the chain
    behind the comparison: the hinge loss's ``mu * (c * (0 - y))`` becomes ``c * (mu *
    (0 - y))``, whose second factor is ready long before ``c``."""
    if fmt is not None and fmt.one > fmt.max_int:
        return None
    nodes = list(graph.nodes)
    users = {}
    for n in nodes:
        for a in n.args:
            users.setdefault(a, []).append(n.id)
    pinned = set()
    for d in (graph.update, graph.gradient):
        for ids in d.values():
            pinned.update(int(v) for v in np.asarray(ids).ravel())

    def levels():       # (the nodes need not be in id order after a rewrite)
        lv = {}
        for root in nodes:
            stack = [root.id]
            while stack:
                v = stack[-1]
                n = nodes[v]
                todo = [a for a in n.args if a not in lv]
                if todo:
                    stack.extend(todo)
                    continue
                stack.pop()
                w = len(n.args) // 2 if n.op == "dot" else 1
                lv[v] = 0 if n.op in LEAF else w + max((lv[a] for a in n.args), default=0)
        return lv

    changed = False
    for _ in range(len(nodes)):
        lv = levels()
        hit = None
        for n2 in nodes:
            if n2.op != "mul" or len(n2.args) != 2 or n2.args[0] == n2.args[1]:
                continue
            for i in (0, 1):
                x, n1 = n2.args[i], n2.args[1 - i]
                m = nodes[n1]
                if m.op != "mul" or len(m.args) != 2 or users.get(n1) != [n2.id] \
                        or n1 in pinned or m.args[0] == m.args[1]:
                    continue
                for j in (0, 1):
                    b, z = m.args[j], m.args[1 - j]
                    if nodes[b].op in BOOL_OPS and lv[b] > max(lv[x], lv[z]) and x != b:
                        hit = (n2.id, n1, x, b, z)
                        break
                if hit:
                    break
            if hit:
                break
        if hit is None:
            break
        i2, i1, x, b, z = hit
        nodes[i1] = replace(nodes[i1], args=(x, z))
        nodes[i2] = replace(nodes[i2], args=(b, i1))
        users = {}
        for n in nodes:
            for a in n.args:
                users.setdefault(a, []).append(n.id)
        changed = True
    if not changed:
        return None
    # topological order again (the inner product may now read a later constant), stable
    deps = {n.id: set(n.args) for n in nodes}
    ready = [n.id for n in nodes if not n.args]
    heapq.heapify(ready)
    left = {n.id: len(deps[n.id]) for n in nodes}
    order = []
    while ready:
        v = heapq.heappop(ready)
        order.append(v)
        for u in dict.fromkeys(users.get(v, [])):
            left[u] -= 1
            if left[u] == 0:
                heapq.heappush(ready, u)
    new = {old: k for k, old in enumerate(order)}
    if len(order) != len(nodes) or any(new[n.id] != n.id for n in nodes if n.op in LEAF[:3]):
        return None
    out = [replace(nodes[old], id=k, args=tuple(new[a] for a in nodes[old].args))
           for k, old in enumerate(order)]

    def remap(d):
        return {k: np.vectorize(lambda v: new.get(int(v), int(v)), otypes=[np.int64])(ids)
                for k, ids in d.items()}
    return replace(graph, nodes=out, inputs=remap(graph.inputs), labels=remap(graph.labels),
                   model=remap(graph.model), update=remap(graph.update),
                   gradient=remap(graph.gradient))


def _result_latency(op):
    f = getattr(_cosmic_pe, "result_latency", None)
    return 1 if f is None else f(op)


def relaxed_path(graph, rows: int = 1) -> int:
    """Cycles (start to ``done``) of the DFG's longest dependence chain when every
    transfer were free, with the dependence latencies no schedule can beat on
    ``cosmic_pe``: an operation's result is readable ``L`` slots after it issues (its
    result latency; 1 for every op today) on its own PE with bypass AND on a neighbour
    over the link (``LAT_LINK`` counts from the output register, which is as early), so
    with or without bypass the chain pays ``L`` per step (without bypass a schedule can
    alternate between two neighbours); a dot of k terms is k macs that may issue as their
    operands come; and an add/mul reduction may instead go through the tree bus (``rows``
    > 1): up to ``d = tree_depth(rows)`` levels at once, readable ``LAT_BUS + d`` slots
    after its last source is emitted (the source's output cycle: issue + L - 1).  The
    last instruction's pipeline (``DONE_OFFSET``) is added."""
    d = tree_depth(rows) if rows > 1 else 0
    ready = {}                                  # slot from which a node is readable
    for n in graph.nodes:
        if n.op in LEAF:
            ready[n.id] = 0
            continue
        op = "mac" if n.op == "dot" else PE_OP.get(n.op, "add")
        lat = _result_latency(op)
        if n.op == "dot":
            t = -1
            for r in sorted(max(ready[n.args[2 * i]], ready[n.args[2 * i + 1]])
                            for i in range(len(n.args) // 2)):
                t = max(t + 1, r)
            fin = t
        else:
            fin = max((ready[a] for a in n.args), default=0)
        best = fin + lat
        if d and n.op in ("add", "mul") and len(n.args) == 2:
            # the deepest fold (d levels of the same op) has the earliest sources
            front, lvl = list(n.args), 1
            while lvl < d:
                nxt = []
                for u in front:
                    un = graph.nodes[u]
                    nxt += list(un.args) if un.op == n.op and len(un.args) == 2 else [u]
                front, lvl = nxt, lvl + 1
            emit = max(max(ready[u] - 1, 0) for u in front)
            best = min(best, emit + LAT_BUS + d)
        ready[n.id] = best
    last = max((r - _result_latency("mac" if n.op == "dot" else PE_OP.get(n.op, "add"))
                for n in graph.nodes if n.op not in LEAF for r in (ready[n.id],)), default=None)
    return 0 if last is None else last + 1 + done_offset()


def done_offset() -> int:
    """Cycles from the last slot's issue to ``done`` (golden.cosmic_pe.DONE_OFFSET)."""
    return getattr(_cosmic_pe, "DONE_OFFSET", _cosmic_pe.OUT_OFFSET)


def critical_path_bound(graph, fmt=None, bypass: int = 1, rows: int = 1) -> int:
    """The critical-path lower bound of what :func:`schedule` may run on ``rows`` rows:
    :func:`relaxed_path` of the DFG and of its bit-exact rewrite
    (:func:`commute_bool_muls`, which the mapper may schedule instead), the smaller.  With
    bypass and every result latency 1 and no fold gaining (a fold takes ``LAT_BUS + d``
    slots for ``d`` levels) it is :func:`tablac.schedule.critical_path`; without bypass
    that one charges the 5-slot hazard the neighbour link avoids, so it is no bound."""
    alt = commute_bool_muls(graph, fmt)
    cp = relaxed_path(graph, rows)
    return cp if alt is None else min(cp, relaxed_path(alt, rows))


def ops_bound(graph, pes: int, rows: int) -> int:
    """Issue slots a schedule of ``graph`` on one thread of ``pes`` PEs in ``rows`` rows
    needs at least, counting what the tree bus can take off the PEs: every PE issues one
    instruction per slot (a dot of k terms is k macs); a tree transaction (at most one
    per cycle, one per schedule slot) applies at most ``rows - 1`` add or mul nodes, and
    only binary add/mul nodes can be folded into one (a constant operand is a preloaded
    word a PE can put on its row bus like any other).  So ``L >= ceil(pe_only / pes)`` and ``pes * L + (rows - 1) * L >= ops``.  The
    cycle bound is this plus the pipeline drain of the last slot (``cycles - length``)."""
    ops = op_count(graph)
    tree = 0 if rows < 2 else sum(
        1 for n in graph.nodes if n.op in ("add", "mul") and len(n.args) == 2)
    pe_only = ops - tree
    cap = rows - 1 if rows > 1 else 0
    return max(-(-pe_only // pes), -(-ops // (pes + cap)))


def sample_vector(graph) -> list:
    """Node ids (None for an element the DFG does not use) in memory order."""
    out = []
    for d in (graph.inputs, graph.labels):
        for name, ids in d.items():
            for v in np.asarray(ids).ravel():
                v = int(v)
                out.append(v if 0 <= v < len(graph.nodes) else None)
    return out


def data_map(graph, columns: int, rows: int, align: bool = False):
    """(sample vector, row chunks [(row, first word, words)], {node: (pe, key)}).

    ``align=True`` cuts the sample into blocks of ``2**h`` dot groups (words when
    ``G = 1``) per row, the smallest power of two that fits the rows: the DFG's reduction
    tree pairs its terms level by level from the left (``dfg.tree``), so every row then
    holds whole subtrees and the cross-row levels are exactly the tree bus's shape (one
    fold, CoSMIC 5.1) instead of rows whose terms straddle a subtree boundary."""
    vec = sample_vector(graph)
    n = len(vec)
    G = getattr(graph, "dot_group", None) or 1
    if align:
        nu = -(-n // G)
        blk = 1
        while blk * rows < nu:
            blk *= 2
        sizes = [blk * G] * rows
    elif G > 1:
        # whole dot groups per row (a row's dot then needs no other row): ceil(n/G)
        # groups, as evenly as possible over the rows
        ng = -(-n // G)
        gb, gr = divmod(ng, rows)
        sizes = [(gb + (1 if r < gr else 0)) * G for r in range(rows)]
    else:
        base, rem = divmod(n, rows)
        sizes = [base + (1 if r < rem else 0) for r in range(rows)]
    chunks, pos = [], 0
    where = {}
    for r in range(rows):
        size = max(0, min(sizes[r], n - pos))
        if size == 0:
            continue
        chunks.append((r, pos, size))
        for w in range(size):
            v = vec[pos + w]
            if v is not None:
                where[v] = (r * columns + w % columns, ("d", w // columns))
        pos += size
    return vec, chunks, where


class CosmicPolicy:
    name = "cosmic"

    def __init__(self, data_pe, npe, model_with_data=True, neighbours=True, spread=False):
        self.data_pe = data_pe
        self.npe = npe
        self.rr = 0
        self.model_with_data = model_with_data
        self.neighbours = neighbours
        self.spread = spread

    def _pe_of(self, v, S):
        if v in self.data_pe:
            return self.data_pe[v][0]
        if v in S.model_home:
            return S.model_home[v][0]
        return S.place.get(v)

    def choose(self, n, S):
        g = S.g
        args = list(n.args)
        data = [a for a in args if g.nodes[a].op in ("input", "label")]
        if data:
            pes = [self.data_pe[a][0] for a in data if a in self.data_pe]
            if pes and n.op == "dot" and len(set(pes)) > 1:
                return min(sorted(set(pes)), key=lambda q: self._dot_cost(n, q, S))
            if pes:
                q0 = max(set(pes), key=lambda q: (pes.count(q), -pes.index(q)))
                if self.spread and n.op != "dot":
                    # an operation that brings a model element home gives that PE its
                    # SGD update later: balance the homes, then start as early as can be
                    homing = any(g.nodes[a].op == "model" and a not in S.model_home
                                 for a in args)
                    return min(self._spread_candidates(n, q0, S),
                               key=lambda q: (self._homes(q, S) if homing else 0,
                                              self._start(n, q, S), q != q0, q))
                return q0
        model = [a for a in args if g.nodes[a].op == "model"]
        if model:
            for a in model:
                if a in S.model_home:
                    return S.model_home[a][0]
            p = self.rr
            self.rr = (self.rr + 1) % self.npe
            return p
        inter = [S.place[a] for a in args if g.nodes[a].op not in LEAF and S.place.get(a) is not None]
        if not inter and any(g.nodes[a].op not in LEAF for a in args):
            # every interim operand comes off the tree bus (it can be delivered to any
            # row): go where the single consumer's DATA operand is, if there is one
            us = S.users.get(n.id, [])
            if len(us) == 1:
                for a in g.nodes[us[0][0]].args:
                    if a in self.data_pe:
                        return self.data_pe[a][0]
        if inter:
            # "map v to the PE in which the operand resides": of the operands' PEs, the
            # one where v can start first (the operand that is ready later stays put);
            # a row neighbour of them competes too (it takes one operand off each link in
            # the same slot: a reduction's level needs no bus word), at equal start the
            # operand's own PE wins (fewer transfers).  Only the PE between two operand
            # PEs: wider choices made backprop and reco slower (their reductions feed
            # broadcasts, where the operand's PE is the better seed)
            cand = list(dict.fromkeys(inter))
            if self.neighbours and len(cand) == 2 and abs(cand[0] - cand[1]) == 2 \
                    and cand[0] // S.C == cand[1] // S.C:
                mid = (cand[0] + cand[1]) // 2
                return min(cand + [mid], key=lambda q: (self._start(n, q, S), q == mid, q))
            return min(cand, key=lambda q: (self._start(n, q, S), q))
        p = self.rr
        self.rr = (self.rr + 1) % self.npe
        return p

    def _homes(self, q, S):
        cnt = getattr(S, "_homes_per_pe", None)
        if cnt is None or sum(cnt.values()) != len(S.model_home):
            cnt = {}
            for pe, _ in S.model_home.values():
                cnt[pe] = cnt.get(pe, 0) + 1
            S._homes_per_pe = cnt
        return cnt.get(q, 0)

    def _spread_candidates(self, n, q0, S):
        """PEs an operation with a DATA operand on ``q0`` may take besides ``q0`` (the
        ``spread`` variant, for DFGs with far more model than data words, e.g. a layer's
        weights): the rest of ``q0``'s row (the data word one link or bus hop away), and
        the home of a model operand of the operation or of its only consumer (the SGD
        step goes where its model element lives)."""
        C = S.C
        r0 = q0 // C * C
        cand = list(range(r0, r0 + C))
        ms = [a for a in n.args if S.g.nodes[a].op == "model"]
        us = S.users.get(n.id, [])
        if len(us) == 1:
            ms += [a for a in S.g.nodes[us[0][0]].args if S.g.nodes[a].op == "model"]
        for a in ms:
            if a in S.model_home and S.model_home[a][0] not in cand:
                cand.append(S.model_home[a][0])
        return cand

    def model_home(self, v, S, p=None, n=None):
        if v in S.model_home:
            return S.model_home[v][0]
        if n is not None and n.op == "dot" and self.model_with_data:
            # the dot is TABLA's sum of products: each product w*x maps (Algorithm 1)
            # to the PE of its DATA operand, and its MODEL operand goes with it
            for i in range(0, len(n.args) - 1, 2):
                a, b = n.args[i], n.args[i + 1]
                partner = b if a == v else a if b == v else None
                if partner is not None and partner in self.data_pe:
                    return self.data_pe[partner][0]
        return 0 if p is None else p

    def _where(self, v, S, n):
        if v in self.data_pe:
            return self.data_pe[v][0]
        if S.g.nodes[v].op == "model":
            return self.model_home(v, S, None, n) if v not in S.model_home else S.model_home[v][0]
        return S.place.get(v)

    def _dot_cost(self, n, q, S):
        """Serialisation estimate of gathering a dot's operands on PE ``q``: words per
        incoming path (each link and the row bus carry one word per cycle, the tree one
        per cycle), then fewer words in total, then more local terms."""
        C = S.C
        paths = {}
        for a in n.args:
            if S.g.nodes[a].op == "const":
                continue
            w = self._where(a, S, n)
            if w is None or w == q:
                continue
            if w // C != q // C:
                k = "tree"
            elif abs(w - q) == 1:
                k = ("link", w)
            else:
                k = "bus"
            paths[k] = paths.get(k, 0) + 1
        return (max(paths.values(), default=0), sum(paths.values()), q)

    @staticmethod
    def _start(n, p, S):
        t = 0
        for a in set(n.args):
            op = S.g.nodes[a].op
            if op == "const" or (op == "model" and a not in S.model_home):
                continue
            t = max(t, S.earliest_arrival(a, p))
        while not S.free_slot(p, t):
            t += 1
        return t


class MlrcsPolicy:
    name = "mlrcs"

    def __init__(self, data_pe, npe):
        self.data_pe = data_pe
        self.npe = npe

    def _homes(self, S):
        if not hasattr(self, "_upd"):
            self._upd = {}
            for name, ids in S.g.update.items():
                for old, new in zip(np.asarray(S.g.model[name]).ravel(), np.asarray(ids).ravel()):
                    self._upd[int(new)] = int(old)
        return self._upd

    def choose(self, n, S):
        g = S.g
        k = len(n.args) // 2 if n.op == "dot" else 1
        upd = self._homes(S).get(n.id)
        home = S.model_home[upd][0] if upd is not None and upd in S.model_home else None
        best = None
        for p in range(self.npe):
            t, remote = 0, 0
            for a in set(n.args):
                op = g.nodes[a].op
                if op == "const" or (op == "model" and a not in S.model_home):
                    continue
                t = max(t, S.earliest_arrival(a, p))
                if S.local(a, p) is None:
                    remote += 1
            s = t
            while not all(S.free_slot(p, s + i) for i in range(k)):
                s += 1
            # a new model element goes back to its home PE after the operation
            back = 0 if home is None or home == p else S.route(p, home)[1]
            key = (s + k + back, remote, len(S.code[p]), p)
            if best is None or key < best:
                best = key
        return best[3]

    def model_home(self, v, S, p=None, n=None):
        if v in S.model_home:
            return S.model_home[v][0]
        return 0 if p is None else p


def schedule(graph, plan, fmt, mapper: str = "cosmic", *, bypass: int = 1,
             recompute: int = 3, file: str = "<input>", rewrite: bool = True) -> Sched:
    """Map and schedule ``graph`` for one thread of ``plan`` (a :class:`tablac.plan.Plan`);
    ``rewrite=False`` schedules the DFG exactly as lowered (no :func:`commute_bool_muls`)."""
    if mapper not in MAPPERS:
        raise CompileError(f"unknown mapper '{mapper}' (choose {' or '.join(MAPPERS)})", file)
    C, R = plan.columns, plan.rows_per_thread
    best = None
    tried = []
    small = len(graph.nodes) <= SMALL_GRAPH
    # the DFG as lowered, and (when it applies) with the 0/1 multiplies commuted
    # (:func:`commute_bool_muls`, bit-exact); the shorter schedule wins
    alt = commute_bool_muls(graph, fmt) if rewrite else None
    for gr in (graph,) if alt is None else (graph, alt):
        for align, nb, *opt in VARIANTS:
            sp = bool(opt and opt[0])
            dual = not (len(opt) > 1 and not opt[1])
            if (nb or sp) and (mapper != "cosmic" or not small) and best is not None:
                continue
            vec, chunks, where = data_map(gr, C, R, align)
            if (gr is alt, chunks, nb, sp, dual) in tried:
                continue
            tried.append((gr is alt, chunks, nb, sp, dual))
            policy = CosmicPolicy(where, C * R, neighbours=nb, spread=sp) if mapper == "cosmic" \
                else MlrcsPolicy(where, C * R)
            S = Scheduler(gr, C, R, fmt, policy, bypass=bypass, recompute=recompute, file=file)
            S.dual = dual
            S.place_leaves(where)
            S.run(priorities(gr))
            length = max((max(c) + 1 for c in S.code if c), default=1)
            key = (length, sum(S.transfers.values()))
            if best is None or key < best[0]:
                best = (key, (vec, chunks, where), S, length)
    _, (vec, chunks, where), S, length = best
    graph = S.g
    return Sched(columns=C, rows=R, length=length, code=S.code,
                 tree=sorted((c, op, tuple(src), tuple(sorted(dst))) for c, op, src, dst, _ in S.tree),
                 data_key=where, sample=vec, chunks=chunks, model_home=S.model_home,
                 model_names={v: graph.nodes[v].name for v in S.model_home},
                 preload=S.preload, transfers=dict(S.transfers),
                 slots_used=sum(len(c) for c in S.code), mapper=mapper, bypass=bypass,
                 nl=S.nl, place=S.place)
