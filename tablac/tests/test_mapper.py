"""Mapper variants (tablac/mapper.py): the tree-aligned data map, the PE between two
operands, and the choice among them -- each variant forced alone still runs on the
cycle-level machine and equals the interpreter, and the properties they exist for hold
(with a negative case each, so the checks can fail)."""
import pytest

import tablac
import tablac.mapper as mp
from tablac.codegen import compile_graph
from tablac.plan import plan_pes

from .test_machine import check_equal


def _load(prog, G, **ov):
    return tablac.load(tablac.program_path(prog), overrides=ov, dot_group=G)


def _forced(monkeypatch, variant):
    monkeypatch.setattr(mp, "VARIANTS", (variant,))


def one_cross_row_fold(comp):
    """The dot's sum reaches every used row through ONE tree-bus add over all rows that
    hold a product (the cross-row levels folded once, CoSMIC 5.1)."""
    rows = {r for r, _, size in comp.sched.chunks if size}
    adds = [t for t in comp.tree if t[1] == "add"]
    return len(adds) == 1 and set(adds[0][2]) == rows


def test_aligned_layout_gives_whole_power_of_two_blocks_per_row():
    g = _load("logistic", 1, m=54)              # 55 sample words on 8 rows
    _, chunks, where = mp.data_map(g, 4, 8, align=True)
    assert [c[1] for c in chunks] == [0, 8, 16, 24, 32, 40, 48]
    assert all(size == 8 for _, _, size in chunks[:-1]) and chunks[-1][2] == 7
    _, even, _ = mp.data_map(g, 4, 8, align=False)
    assert [c[2] for c in even] == [7] * 7 + [6]
    g7 = _load("logistic", 7, m=54)             # whole dot groups of 7 words per row
    _, chunks7, _ = mp.data_map(g7, 4, 8, align=True)
    assert all(start % 7 == 0 for _, start, _ in chunks7)


def test_aligned_layout_folds_the_cross_row_sum_once(monkeypatch):
    g = _load("logistic", 1, m=54)
    _forced(monkeypatch, (True, False))
    aligned = compile_graph(g, plan_pes(32, 1), recompute=1)
    assert one_cross_row_fold(aligned)
    _forced(monkeypatch, (False, False))
    even = compile_graph(g, plan_pes(32, 1), recompute=1)
    assert not one_cross_row_fold(even)         # rows straddle subtrees: no single fold
    assert aligned.length < even.length


def test_between_pe_takes_a_reduction_level_off_both_links(monkeypatch):
    """With the neighbour choice an add whose operands sit two PEs apart in a row may go
    to the PE between them; without it, it never does."""
    g = _load("logistic", 1, m=54)
    plan = plan_pes(32, 1)

    def between(comp):
        S = comp.sched
        n = 0
        for node in g.nodes:
            p = S.place.get(node.id)
            if node.op != "add" or p is None:
                continue
            qs = [S.place.get(a) for a in node.args]
            if all(q is not None for q in qs) and p not in qs and \
                    all(abs(q - p) == 1 and q // 4 == p // 4 for q in qs):
                n += 1
        return n
    _forced(monkeypatch, (True, True))
    assert between(compile_graph(g, plan, recompute=1)) > 0
    _forced(monkeypatch, (True, False))
    assert between(compile_graph(g, plan, recompute=1)) == 0


@pytest.mark.parametrize("variant", mp.VARIANTS)
@pytest.mark.parametrize("prog,ov,G", [("logistic", {"m": 9}, 1), ("linear", {"m": 10}, 2),
                                       ("svm", {"m": 7}, 3)])
def test_each_variant_equals_interpreter(monkeypatch, variant, prog, ov, G):
    g = _load(prog, G, **ov)
    _forced(monkeypatch, variant)
    comp = compile_graph(g, plan_pes(16, 2))
    check_equal(g, comp, 2, rounds=2, ns_per_thread=2)


def test_choice_is_never_slower_than_the_plain_even_layout(monkeypatch):
    g = _load("svm", 1, m=54)
    plan = plan_pes(32, 1)
    best = compile_graph(g, plan, recompute=1).length
    _forced(monkeypatch, (False, False))
    assert best <= compile_graph(g, plan, recompute=1).length


def test_spread_balances_model_homes_over_the_data_rows(monkeypatch):
    """backprop: 90 W1 words but 11 data words (one per row): with ``spread`` the
    weights of a row's input live on all its PEs (each PE later does their SGD updates);
    data first alone puts them next to the data word."""
    g = _load("backprop", 1, ni=10, nh=9)
    plan = plan_pes(64, 1)

    def most_homes(comp):
        cnt = {}
        for pe, _ in comp.sched.model_home.values():
            cnt[pe] = cnt.get(pe, 0) + 1
        return max(cnt.values())
    _forced(monkeypatch, (True, True, True))
    spread = compile_graph(g, plan, recompute=1)
    _forced(monkeypatch, (True, True))
    plain = compile_graph(g, plan, recompute=1)
    assert most_homes(spread) <= 4 < most_homes(plain)


def _two_port_reads(comp):
    ports = ("L", "R", "BUS")
    return sum(1 for code in comp.sched.code for ins in code.values()
               if ins.a and ins.b and ins.a[0] in ports and ins.b[0] in ports
               and ins.a[0] != ins.b[0])


def test_two_remote_operands_read_off_two_ports(monkeypatch):
    """The scheduler's dual-port reads: a reduction level takes one operand off each of
    two ports in one slot; with them switched off there is none and the schedule is
    longer (a pass first puts one operand into a buffer)."""
    g = _load("logistic", 1, m=54)
    plan = plan_pes(32, 1)
    _forced(monkeypatch, (True, True, False, True))
    dual = compile_graph(g, plan, recompute=4)
    assert _two_port_reads(dual) > 0
    _forced(monkeypatch, (True, True, False, False))
    single = compile_graph(g, plan, recompute=4)
    assert _two_port_reads(single) == 0 and single.length > dual.length
    check_equal(g, dual, 1, rounds=1, ns_per_thread=2)


def test_a_lone_variant_always_compiles(monkeypatch):
    """A variant the mapper would skip (placement options on mlrcs) still yields a
    schedule when it is the only one: never 'no schedule at all'."""
    g = _load("linear", 2, m=10)
    _forced(monkeypatch, (True, True, True))
    comp = compile_graph(g, plan_pes(8, 1), mapper="mlrcs")
    check_equal(g, comp, 1, rounds=1, ns_per_thread=2)
