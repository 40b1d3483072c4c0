"""Functional coverage model of maple_smart_memory (testplan: verif/maple_smart_memory/testplan.yaml).

Sampled by verif/maple_smart_memory/test_maple_smart_memory.py on what the DUT did:
* every CTRL command whose AXI4-Lite write the DUT answered, and every error code the DUT
  reported in STATUS;
* each selection / min-max array after the DUT went idle and its dump was requested (the
  scoreboard compares the dump, in slot order, with the same trace): k, CMP, the fill
  level, and for every element whether it filled, replaced (and which slot of the LIST it
  overwrote: the slot order is what DUMP shows) or was discarded, ties included;
* RMW arrays: saturation of each read-modify-write and back-to-back hits on one address;
* the valid/ready patterns of s_axis_in and m_axis_out (verif/stream_cov.FlowObserver).
"""
from __future__ import annotations

from verif.funcov import CoverModel
from verif.funcov_tb import declare_flow

COV = CoverModel("maple_smart_memory")
SLOTS = 16   # KMAX of the default netlist (the largest of the regression configs)

COV.point("command", values=["START", "CLEAR", "DUMP", "ERRCLR"], doc="CTRL command written (B response seen)")
COV.point("op", values=["selection", "minmax", "rmw"], doc="reduction of an array the DUT consumed")
COV.point("error_code", values=[1, 2, 3, 4, 5, 6],
          doc="STATUS.CODE with ERROR set: 1 bad K, 2 bad OP, 3 bad BASE/LEN, 4 busy/armed, "
              "5 RMW address >= DEPTH, 6 unknown/misaligned/partial write")
COV.point("k", {"one": lambda v: v == 1, "mid": lambda v: 1 < v < COV.p["KMAX"],
                "kmax": lambda v: v == COV.p["KMAX"]}, doc="K of a selection array")
COV.point("cmp", values=["largest", "smallest"], doc="CMP of a selection array")
COV.point("fill", values=["single", "below_k", "equal_k", "above_k"],
          doc="elements in a selection array: one, fewer than k, exactly k, more than k")
COV.point("topk_event", values=["fill", "replace", "discard", "tie_discard", "tie_replace"],
          doc="per element: written into a free slot, replaced the threshold, discarded; ties on "
              "value decided by index (a later equal value discarded, a smaller index replacing)")
COV.point("topk_slot", {f"s{i}": (lambda v, i=i: v == i) for i in range(SLOTS)},
          doc="slot of the LIST overwritten by a replacement (slots >= KMAX exist only in larger netlists)")
COV.point("minmax", values=["single", "distinct", "tie_min", "tie_max", "all_equal", "empty"],
          doc="min/max arrays: one element, distinct extremes, a tie on the min or the max "
              "(smaller index wins), every value equal, an empty store dumped")
COV.point("rmw_sat", values=["none", "pos", "neg"], doc="RMW: mem + value saturated high / low")
COV.point("rmw_same_addr", values=["back_to_back", "other"],
          doc="RMW element to the address of the previous element (forwarding) or another")
for s, out in (("s_axis_in", False), ("m_axis_out", True)):
    declare_flow(COV, s, out)

CTRL_BITS = ("START", "CLEAR", "DUMP", "ERRCLR")


def sample_ctrl(rm, value: int):
    for name in CTRL_BITS:
        if value & rm.CTRL.pack(**{name: 1}):
            COV.sample("command", name)


def sample_status(err: int, code: int):
    if err:
        COV.sample("error_code", code)


def sample_selection(values, indices, k: int, largest: bool):
    from golden.maple import better
    COV.sample("op", "selection")
    COV.sample("k", k)
    COV.sample("cmp", "largest" if largest else "smallest")
    n = len(values)
    COV.sample("fill", "single" if n == 1 else "below_k" if n < k else "equal_k" if n == k else "above_k")
    slots, thr, seen = [], 0, set()

    def hit(p, lb):
        if (p, lb) not in seen:
            seen.add((p, lb))
            COV.sample(p, lb)

    for val, idx in zip([int(v) for v in values], [int(i) for i in indices]):
        if len(slots) < k:
            if not slots or better(slots[thr][0], slots[thr][1], val, idx, largest):
                thr = len(slots)
            slots.append((val, idx))
            hit("topk_event", "fill")
        elif better(val, idx, slots[thr][0], slots[thr][1], largest):
            hit("topk_event", "tie_replace" if val == slots[thr][0] else "replace")
            hit("topk_slot", thr)
            slots[thr] = (val, idx)
            w = 0
            for s in range(1, k):
                if better(slots[w][0], slots[w][1], slots[s][0], slots[s][1], largest):
                    w = s
            thr = w
        else:
            hit("topk_event", "tie_discard" if val == slots[thr][0] else "discard")


def sample_minmax(values):
    COV.sample("op", "minmax")
    v = [int(x) for x in values]
    if not v:
        COV.sample("minmax", "empty")
        return
    if len(v) == 1:
        COV.sample("minmax", "single")
        return
    lo, hi = min(v), max(v)
    if lo == hi:
        COV.sample("minmax", "all_equal")
        return
    COV.sample("minmax", "distinct")
    if v.count(lo) > 1:
        COV.sample("minmax", "tie_min")
    if v.count(hi) > 1:
        COV.sample("minmax", "tie_max")


def sample_rmw(mem, addrs, values, fmt):
    COV.sample("op", "rmw")
    m = {int(a): int(x) for a, x in enumerate(mem)}
    prev, seen = None, set()
    for a, x in zip([int(a) for a in addrs], [int(x) for x in values]):
        s = m.get(a, 0) + x
        lb = "pos" if s > fmt.max_int else "neg" if s < fmt.min_int else "none"
        m[a] = max(fmt.min_int, min(fmt.max_int, s))
        for key in (("rmw_sat", lb), ("rmw_same_addr", "back_to_back" if a == prev else "other")):
            if key not in seen:
                seen.add(key)
                COV.sample(*key)
        prev = a
