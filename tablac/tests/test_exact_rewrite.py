"""The mapper's bit-exact DFG rewrite (tablac.mapper.commute_bool_muls) and the lower
bounds the bench divides by (tablac.mapper.critical_path_bound, ops_bound)."""
import numpy as np

import tablac
import tablac.mapper as mp
from golden.fixedpoint import QFormat
from tablac import interp
from tablac.codegen import compile_graph
from tablac.dfg import Graph, Node
from tablac.plan import plan_pes
from tablac.schedule import critical_path, op_count

from .test_machine import check_equal, rand_set

FMT = QFormat(32, 16)


def _hand(inner_op="lt", extra_user=False):
    """w0' = w0 - w1 * (B * x1) with B = (w0*x0 + w1*x1 < 1) (or ``inner_op``)."""
    N = [Node(0, "input", name="x[0]"), Node(1, "input", name="x[1]"), Node(2, "label", name="y"),
         Node(3, "model", name="w[0]"), Node(4, "model", name="w[1]"),
         Node(5, "mul", (3, 0)), Node(6, "mul", (4, 1)), Node(7, "add", (5, 6)),
         Node(8, "const", value=1.0), Node(9, inner_op, (7, 8)),
         Node(10, "mul", (9, 1)), Node(11, "mul", (4, 10)), Node(12, "sub", (3, 11)),
         Node(13, "sub", (4, 10) if extra_user else (4, 2))]
    return Graph(nodes=N, inputs={"x": np.arange(2)}, labels={"y": np.array(2)},
                 model={"w": np.array([3, 4])}, update={"w": np.array([12, 13])})


def _updates(g, x, y, w, fmt):
    v = interp.evaluate(g, {"x": x}, {"y": y}, {"w": w}, fmt=fmt, quantised=fmt is not None)
    return v[np.asarray(g.update["w"])]


def _words(rng, n):
    """Random words with the extremes (saturating products) mixed in."""
    big = np.array([FMT.max_int, FMT.min_int, FMT.max_int // 3, -FMT.one, FMT.one, 0])
    return np.where(rng.random(n) < 0.4, rng.choice(big, n), rng.integers(-4 * FMT.one, 4 * FMT.one, n))


def test_commute_bool_muls_is_bit_exact_with_saturation():
    g = _hand()
    r = mp.commute_bool_muls(g, FMT)
    assert r is not None
    # the comparison now multiplies last: mul(B, mul(w1, x1))
    step = r.nodes[r.nodes[int(r.update["w"][0])].args[1]]
    assert step.op == "mul" and r.nodes[step.args[0]].op == "lt"
    assert critical_path(r) < critical_path(g)
    rng = np.random.default_rng(5)
    seen = set()
    for _ in range(400):
        x, w, y = _words(rng, 2), _words(rng, 2), _words(rng, 1)[0]
        seen.add(int(interp.evaluate(g, {"x": x}, {"y": y}, {"w": w}, fmt=FMT, quantised=True)[9]))
        assert np.array_equal(_updates(g, x, y, w, FMT), _updates(r, x, y, w, FMT))
        xf, wf = x / FMT.one, w / FMT.one
        assert np.array_equal(_updates(g, xf, 0.0, wf, None), _updates(r, xf, 0.0, wf, None))
    assert seen == {0, FMT.one}          # both arms of the comparison were exercised


def test_commuting_a_non_comparison_factor_would_not_be_exact():
    """The same swap with B = w0*x0 + w1*x1 - 1 (not 0/1) changes the rounding: the
    rewrite refuses it, and forcing it shows the equality check above can fail."""
    g = _hand("sub")
    assert mp.commute_bool_muls(g, FMT) is None
    N = list(g.nodes)
    N[10] = Node(10, "mul", (4, 1))
    N[11] = Node(11, "mul", (9, 10))
    forced = Graph(nodes=N, inputs=g.inputs, labels=g.labels, model=g.model, update=g.update)
    rng = np.random.default_rng(6)
    differ = 0
    for _ in range(200):
        x, w = _words(rng, 2), _words(rng, 2)
        differ += not np.array_equal(_updates(g, x, 0, w, FMT), _updates(forced, x, 0, w, FMT))
    assert differ > 0


def test_commute_needs_a_single_user_inner_product():
    assert mp.commute_bool_muls(_hand(extra_user=True), FMT) is None


def test_svm_bound_is_the_rewritten_chain():
    g = tablac.load(tablac.program_path("svm"), overrides={"m": 54}, dot_group=1)
    r = mp.commute_bool_muls(g, FMT)
    # one mul fewer behind the comparison (17 instead of 18 cycles with 1-slot muls)
    assert r is not None
    assert mp.relaxed_path(r) == mp.relaxed_path(g) - mp._result_latency("mul")
    assert mp.critical_path_bound(g, FMT) == mp.relaxed_path(r)
    assert mp.relaxed_path(g) == critical_path(g)
    lg = tablac.load(tablac.program_path("logistic"), overrides={"m": 54}, dot_group=1)
    assert mp.commute_bool_muls(lg, FMT) is None
    assert mp.critical_path_bound(lg, FMT) == critical_path(lg)


def test_rewrite_shortens_the_svm_schedule_and_equals_interpreter(monkeypatch):
    g = tablac.load(tablac.program_path("svm"), overrides={"m": 7}, dot_group=1)
    plan = plan_pes(8, 1)
    data, labels, model0 = rand_set(g, 4, 8, False)     # check_equal's set for seed 8
    c = [interp.evaluate(g, {"x": data["x"][i]}, {"y": labels["y"][i]}, model0, fmt=FMT)
         for i in range(4)]
    lt = next(n.id for n in g.nodes if n.op == "lt")
    for mapper in ("cosmic", "mlrcs"):
        comp = compile_graph(g, plan, mapper=mapper, recompute=4)
        check_equal(g, comp, 1, rounds=2, ns_per_thread=4, seed=8)
        with monkeypatch.context() as m:
            m.setattr(mp, "commute_bool_muls", lambda graph, fmt=None: None)
            plain = compile_graph(g, plan, mapper=mapper, recompute=4)
        assert comp.length <= plain.length, mapper     # both graphs are tried
        if mapper == "cosmic":
            assert comp.length < plain.length
    assert {int(v[lt]) for v in c} == {0, FMT.one}      # samples on both sides of the hinge


def test_ops_bound_counts_the_tree_and_is_below_every_schedule():
    g = _hand()
    # 8 ops; add 7 and mul 5, 6, 10, 11 could be tree folds, lt 9 and the subs cannot
    assert op_count(g) == 8
    assert mp.ops_bound(g, 1, 1) == 8                 # one PE, no tree
    assert mp.ops_bound(g, 2, 2) == 3                 # ceil(8 / (2 + 1)) > ceil(3 / 2)
    assert mp.ops_bound(g, 4, 2) == 2                 # ceil(8 / 5)
    assert mp.ops_bound(g, 8, 8) == 1
    for prog, ov, pes in (("logistic", {"m": 9}, 4), ("svm", {"m": 7}, 8), ("reco", {"nu": 4, "ni": 4, "k": 2}, 4)):
        gg = tablac.load(tablac.program_path(prog), overrides=ov, dot_group=2)
        plan = plan_pes(pes, 1)
        for mapper in ("cosmic", "mlrcs"):
            comp = compile_graph(gg, plan, mapper=mapper)
            assert comp.length >= mp.ops_bound(gg, pes, plan.rows_per_thread)
            assert comp.stats["cycles_compute"] >= comp.stats["critical_path"]


def test_bound_without_bypass_counts_the_link_not_the_hazard():
    """Without bypass a PE reads its own result 5 slots later, but a neighbour reads it
    off the link 1 slot later: the old critical path (5 per step) exceeded real
    schedules, the relaxed path stays below them."""
    g = tablac.load(tablac.program_path("svm"), overrides={"m": 7}, dot_group=1)
    comp = compile_graph(g, plan_pes(8, 1), mapper="cosmic", bypass=0)
    cyc = comp.stats["cycles_compute"]
    assert critical_path(g, bypass=0) > cyc                   # no lower bound
    assert comp.stats["critical_path"] <= cyc
    assert comp.stats["critical_path"] == mp.critical_path_bound(g, FMT, 1, 2)


def test_relaxed_path_lets_the_tree_fold_when_it_is_faster(monkeypatch):
    """A sum of 16 products: with 1-slot adds the PEs are faster than the tree bus
    (LAT_BUS + d for d levels); with 3-slot adds the tree's d levels win, and the bound
    must count them (else it would exceed a schedule using the tree)."""
    xs = [Node(i, "input", name=f"x[{i}]") for i in range(16)]
    ws = [Node(16 + i, "model", name=f"w[{i}]") for i in range(16)]
    N = xs + ws
    terms = []
    for i in range(16):
        N.append(Node(len(N), "mul", (16 + i, i)))
        terms.append(N[-1].id)
    while len(terms) > 1:
        nxt = []
        for k in range(0, len(terms), 2):
            N.append(Node(len(N), "add", (terms[k], terms[k + 1])))
            nxt.append(N[-1].id)
        terms = nxt
    N.append(Node(len(N), "sub", (16, terms[0])))
    g = Graph(nodes=N, inputs={"x": np.arange(16)}, model={"w": np.arange(16, 32)},
              update={"w": np.array([N[-1].id] + list(range(17, 32)))})
    done = mp.done_offset()
    monkeypatch.setattr(mp, "_result_latency", lambda op: 1)
    # mul in slot 0, 4 add levels in 1..4, the sub in 5
    assert mp.relaxed_path(g, 1) == mp.relaxed_path(g, 8) == 6 + done
    monkeypatch.setattr(mp, "_result_latency", lambda op: 3 if op == "add" else 1)
    pe_only = mp.relaxed_path(g, 1)
    assert pe_only == 6 + 4 * 2 + done                  # adds issue in 1, 4, 7, 10
    # 8 rows, d = 3: levels 2 and 3 as folds of the products (emitted in slot 0,
    # readable 0 + LAT_BUS + 3 = 5, where the PEs give 7 and 10), the top level as a
    # fold of the level-1 sums (readable 4, emitted 3: 8), the sub in slot 8
    assert mp.relaxed_path(g, 8) == 9 + done < pe_only
