"""Cycle-level machine (tablac/machine.py) running codegen's output equals the DFG
interpreter bit for bit: hand-built DFGs, the five benchmark programs at small sizes,
1/2/4 threads, both mappers, several rounds; plus checks that can fail."""
import dataclasses

import numpy as np
import pytest

import tablac
from golden.cosmic_pe import DONE_OFFSET, Instr, PEModel
from golden.fixedpoint import QFormat
from tablac import interp
from tablac.codegen import compile_graph
from tablac.dfg import Graph, Node
from tablac.machine import Machine, MachineError, train
from tablac.plan import plan_pes

FMT = QFormat(32, 16)


def hand_graph():
    """Every DFG op once.  x[0..5] spread over the PEs (links, row bus, tree bus), w[0..1]."""
    N = []

    def add(op, *args, value=None, name=None):
        N.append(Node(len(N), op, tuple(args), value, name))
        return len(N) - 1
    xs = [add("input", name=f"x[{i}]") for i in range(6)]
    y = add("label", name="y")
    w = [add("model", name=f"w[{i}]") for i in range(2)]
    c = add("const", value=0.25)
    one = add("const", value=1.0)
    d = add("dot", w[0], xs[0], w[1], xs[5])           # x0 and x5 on different rows
    s1 = add("add", d, xs[1])
    s2 = add("sub", s1, xs[4])
    m1 = add("mul", s2, c)
    l1 = add("lt", m1, xs[2])
    g1 = add("gt", xs[3], m1)
    mn = add("min", l1, xs[3])
    mx = add("max", g1, mn)
    sg = add("sigmoid", mx)
    ga = add("gaussian", s2)
    rc = add("recip", add("add", one, add("max", xs[2], add("const", value=0.0))))
    lg = add("log", add("add", one, add("max", xs[1], add("const", value=0.0))))
    ps = add("pass", y)
    e = add("sub", add("add", sg, add("mul", ga, rc)), add("add", lg, ps))
    wn0 = add("sub", w[0], add("mul", add("const", value=0.125), add("mul", e, xs[0])))
    wn1 = add("sub", w[1], add("mul", e, xs[5]))
    return Graph(nodes=N, inputs={"x": np.array(xs)}, labels={"y": np.array(y)},
                 model={"w": np.array(w)}, update={"w": np.array([wn0, wn1])},
                 consts={"mu": 0.125, "threads": 1}, aggregate={"w": ("mean", 1)})


def rand_set(g, ns, seed, onehot=False):
    rng = np.random.default_rng(seed)
    if onehot:
        data = {k: np.eye(ids.shape[0])[rng.integers(0, ids.shape[0], ns)] for k, ids in g.inputs.items()}
    else:
        data = {k: rng.normal(size=(ns,) + ids.shape) for k, ids in g.inputs.items()}
    labels = {k: rng.normal(size=(ns,) + ids.shape) for k, ids in g.labels.items()}
    model0 = {k: rng.normal(size=ids.shape) * 0.3 for k, ids in g.model.items()}
    return data, labels, model0


def check_equal(g, comp, threads, rounds=2, ns_per_thread=3, seed=1, onehot=False):
    data, labels, model0 = rand_set(g, threads * ns_per_thread, seed, onehot)
    order = np.array([np.random.default_rng(seed + r).permutation(threads * ns_per_thread)
                      for r in range(rounds)])
    ref = interp.train(g, data, labels, model0, threads=threads, rounds=rounds, order=order, fmt=FMT)
    got, M = train(comp, g, data, labels, model0, rounds=rounds, order=order)
    for r in range(rounds):
        for k in ref.models[r]:
            assert np.array_equal(ref.models[r][k], got[r][k]), (r, k)
    return M


@pytest.mark.parametrize("mapper", ["cosmic", "mlrcs"])
@pytest.mark.parametrize("pes", [2, 4, 8])
def test_hand_graph_every_op(mapper, pes):
    g = hand_graph()
    comp = compile_graph(g, plan_pes(pes, 1), mapper=mapper)
    M = check_equal(g, comp, 1)
    if pes == 8:   # two rows: the tree bus carried something
        assert M.stats.tree_ops > 0 and M.stats.link_words + M.stats.bus_words > 0


def test_hand_graph_independent_value():
    """One sample computed by hand with QFormat (not the interpreter): w0' of a graph
    w0' = w0 - 0.125 * ((w0*x0 + w1*x3) - y) * x0 on 8 PEs (x0, x3 on different PEs)."""
    N = [Node(0, "input", name="x[0]"), Node(1, "input", name="x[1]"), Node(2, "input", name="x[2]"),
         Node(3, "input", name="x[3]"), Node(4, "label", name="y"), Node(5, "model", name="w[0]"),
         Node(6, "model", name="w[1]"), Node(7, "mul", (5, 0)), Node(8, "mul", (6, 3)),
         Node(9, "add", (7, 8)), Node(10, "sub", (9, 4)), Node(11, "const", value=0.125),
         Node(12, "mul", (11, 10)), Node(13, "mul", (12, 0)), Node(14, "sub", (5, 13))]
    g = Graph(nodes=N, inputs={"x": np.arange(4)}, labels={"y": np.array(4)},
              model={"w": np.array([5, 6])}, update={"w": np.array([14, 6])})
    x = FMT.to_fixed([0.75, -2.0, 0.5, 1.5])
    y, w = FMT.to_fixed(0.3), FMT.to_fixed([0.6, -0.4])
    p = FMT.add(FMT.mul(w[0], x[0]), FMT.mul(w[1], x[3]))
    want = FMT.sub(w[0], FMT.mul(FMT.mul(FMT.to_fixed(0.125), FMT.sub(p, y)), x[0]))
    for mapper in ("cosmic", "mlrcs"):
        comp = compile_graph(g, plan_pes(8, 1), mapper=mapper)
        got, _ = train(comp, g, {"x": x[None]}, {"y": np.array([y])}, {"w": w}, rounds=1)
        assert got[0]["w"][0] == want and got[0]["w"][1] == w[1]


SMALL = {"linear": {"m": 10}, "logistic": {"m": 9}, "svm": {"m": 7},
         "backprop": {"ni": 4, "nh": 3}, "reco": {"nu": 4, "ni": 4, "k": 2}}


@pytest.mark.parametrize("mapper", ["cosmic", "mlrcs"])
@pytest.mark.parametrize("threads", [1, 2, 4])
@pytest.mark.parametrize("prog", sorted(SMALL))
def test_programs_equal_interpreter(prog, threads, mapper):
    g = tablac.load(tablac.program_path(prog), overrides=SMALL[prog], dot_group=2)
    comp = compile_graph(g, plan_pes(4 * threads, threads), mapper=mapper)
    check_equal(g, comp, threads, rounds=2, ns_per_thread=2, onehot=(prog == "reco"))


@pytest.mark.parametrize("recompute", [0, 1, 5])
def test_recompute_depths_stay_exact(recompute):
    g = tablac.load(tablac.program_path("backprop"), overrides={"ni": 5, "nh": 3}, dot_group=1)
    comp = compile_graph(g, plan_pes(16, 2), recompute=recompute)
    assert comp.stats["recompute"] == recompute
    check_equal(g, comp, 2, rounds=2, ns_per_thread=2)


def test_no_bypass_and_wide_rows():
    g = tablac.load(tablac.program_path("logistic"), overrides={"m": 12}, dot_group=3)
    comp = compile_graph(g, plan_pes(16, 2), mapper="cosmic", bypass=0)
    assert comp.pe_cfg.BYPASS == 0
    check_equal(g, comp, 2, rounds=3, ns_per_thread=2)


def test_pe_steps_equal_golden_pe_run():
    """The machine's per-PE stepping equals golden PEModel.run fed with the link/bus
    inputs the machine recorded, PE by PE (final buffers and outputs)."""
    g = tablac.load(tablac.program_path("logistic"), overrides={"m": 9}, dot_group=2)
    comp = compile_graph(g, plan_pes(8, 1))
    data, labels, model0 = rand_set(g, 1, 3)
    M = Machine(comp, trace=True)
    node_val = {int(v): int(q) for v, q in zip(g.model["w"].ravel(), FMT.to_fixed(model0["w"]))}
    M.load_model(node_val)
    samples = np.concatenate([FMT.to_fixed(data["x"]).reshape(1, -1),
                              FMT.to_fixed(labels["y"]).reshape(1, -1)], axis=1)
    mem = np.concatenate([np.zeros(len(comp.model_image), dtype=np.int64),
                          samples.ravel() & M.mask])
    M.load_samples(mem, [len(comp.model_image)])
    before = [{k: b.copy() for k, b in pe.buf.items()} for pe in M.pes]
    M.compute()
    used = 0
    for i, pe in enumerate(M.pes):
        ref = PEModel(comp.pe_cfg, data=before[i][1], model=before[i][2], interim=before[i][3])
        r = ref.run(comp.programs[i], inputs=np.array(M.stats.port_inputs[i]))
        for k in (1, 2, 3):
            assert np.array_equal(r.buffers[k], pe.buf[k]), (i, k)
        used += sum(len(v) for v in r.outputs.values())
    assert used > 0


def test_corrupted_microcode_is_caught():
    """Negative test: the equality check fails when one instruction is altered."""
    g = tablac.load(tablac.program_path("linear"), overrides={"m": 8}, dot_group=2)
    comp = compile_graph(g, plan_pes(4, 1))
    pe, k = next((p, k) for p, ins in enumerate(comp.instrs) for k, i in enumerate(ins)
                 if i.op == 2 and i.wb == 2)          # a sub writing MODEL: a model update
    bad = dataclasses.replace(comp.instrs[pe][k], op=1)   # sub -> add
    comp.programs[pe] = list(comp.programs[pe])
    comp.programs[pe][k] = bad.encode(comp.pe_cfg)
    with pytest.raises(AssertionError):
        check_equal(g, comp, 1, rounds=1)


def test_hardware_rule_violations_raise():
    g = tablac.load(tablac.program_path("linear"), overrides={"m": 8}, dot_group=2)
    comp = compile_graph(g, plan_pes(4, 1))
    cfg = comp.pe_cfg
    # two PEs of one row write the row bus in the same cycle
    k = comp.length - 1
    for pe in (0, 1):
        comp.programs[pe] = list(comp.programs[pe])
        comp.programs[pe][k] = Instr(op=9, src_a=7, out=4).encode(cfg)
    with pytest.raises(MachineError, match="two bus writers"):
        Machine(comp).compute()
    comp2 = compile_graph(g, plan_pes(8, 1))
    comp2.tree = comp2.tree + [(5, "add", (0, 1), (0,))]   # cycle 5: slot 0 writes
    with pytest.raises(MachineError, match="wrote nothing"):
        Machine(comp2).compute()


def test_sum_aggregation_operator():
    """``w[i] = sum[t](w[i]);`` (no division): the threads' models are added, saturated."""
    src = tablac.program_path("linear").read_text().replace(
        "w[i] = sum[t](w[i]) / n;", "w[i] = sum[t](w[i]);")
    g = tablac.compile(src, overrides={"m": 6, "n": 2}, dot_group=3)
    assert g.aggregate["w"][0] == "sum"
    comp = compile_graph(g, plan_pes(8, 2))
    assert {a[4] for a in comp.aggregation} == {"sum"}
    check_equal(g, comp, 2, rounds=2, ns_per_thread=2)


@pytest.mark.parametrize("prog,ov,G,pes,threads,mapper", [
    ("logistic", {"m": 20}, 3, 32, 1, "cosmic"), ("svm", {"m": 20}, 2, 32, 2, "cosmic"),
    ("linear", {"m": 21}, 3, 32, 2, "mlrcs"), ("backprop", {"ni": 6, "nh": 4}, 1, 32, 1, "cosmic"),
    ("reco", {"nu": 8, "ni": 8, "k": 2}, 2, 16, 2, "cosmic")])
def test_many_rows_tree_reductions(prog, ov, G, pes, threads, mapper):
    """Several rows per thread: reductions run as tree-bus expressions, broadcasts reach
    several rows, and the result is still the interpreter's."""
    g = tablac.load(tablac.program_path(prog), overrides=ov, dot_group=G)
    comp = compile_graph(g, plan_pes(pes, threads), mapper=mapper)
    M = check_equal(g, comp, threads, rounds=2, ns_per_thread=2, onehot=(prog == "reco"))
    assert M.stats.tree_ops > 0
    if prog in ("logistic", "svm"):
        assert any(op == "add" and len(src) > 2 for _, op, src, _ in comp.tree)
        assert any(len(d) > 1 for _, _, _, d in comp.tree)


def test_tree_bus_combines_by_tree_levels():
    """Rows 0, 2, 3 with MAX, MAX, -MAX: the tree adds r2 + r3 first (= 0) then r0: MAX;
    a left-to-right fold would give sat(MAX + MAX) - MAX = 0."""
    g = tablac.load(tablac.program_path("linear"), overrides={"m": 8}, dot_group=2)
    M = Machine(compile_graph(g, plan_pes(16, 1)))
    assert M.rpt == 4 and M.d == 2
    vals = {0: FMT.max_int, 2: FMT.max_int, 3: -FMT.max_int, 1: 5}
    assert M._tree_eval("add", (0, 2, 3), vals.__getitem__) == FMT.max_int
    assert M._tree_eval("add", (0, 1), vals.__getitem__) == FMT.max_int
    assert M._tree_eval("pass", (1,), vals.__getitem__) == 5
    two = FMT.to_fixed(2.0)
    assert M._tree_eval("mul", (1, 3), {1: two, 3: two}.__getitem__) == FMT.to_fixed(4.0)
    for bad in (("pass", (0, 1)), ("add", (0, 0)), ("add", (4,))):
        with pytest.raises(MachineError):
            M._tree_eval(bad[0], bad[1], vals.get)


def test_linear_regression_trains_towards_least_squares():
    """Synthetic linear data, 2 threads, 12 rounds on the machine: equal to the
    interpreter at every round, and the model approaches numpy's least-squares fit."""
    g = tablac.load(tablac.program_path("linear"), overrides={"m": 4, "n": 2, "mu": 0.1},
                    dot_group=2)
    rng = np.random.default_rng(5)
    X = rng.uniform(-1, 1, size=(32, 4))
    w_true = np.array([0.5, -1.0, 0.25, 0.75])
    y = X @ w_true + 0.01 * rng.normal(size=32)
    comp = compile_graph(g, plan_pes(8, 2))
    rounds = 12
    ref = interp.train(g, {"x": X}, {"y": y}, {"w": np.zeros(4)}, threads=2, rounds=rounds, fmt=FMT)
    got, M = train(comp, g, {"x": X}, {"y": y}, {"w": np.zeros(4)}, rounds=rounds)
    for r in range(rounds):
        assert np.array_equal(ref.models[r]["w"], got[r]["w"]), r
    w_ls = np.linalg.lstsq(X, y, rcond=None)[0]
    err0 = np.abs(FMT.to_float(got[0]["w"]) - w_ls).max()
    err = np.abs(FMT.to_float(got[-1]["w"]) - w_ls).max()
    assert err < 0.05 and err < err0 / 4, (err0, err)
    assert M.stats.samples == rounds * 16 and M.stats.aggregation_cycles > 0


def test_thread_starts_mimd_rule():
    """thread_starts: each thread starts at max(its data + latency, its previous start +
    sample_period); the lockstep counterfactual waits for the last thread's data."""
    from tablac.machine import sample_period, thread_starts
    comp = compile_graph(tablac.load(tablac.program_path("linear"), overrides={"m": 6, "n": 2}),
                         plan_pes(8, 2, columns=4))
    per = sample_period(comp)
    assert per == comp.length + DONE_OFFSET + 1
    # thread 0's data arrives early, thread 1's late for sample 0; both early for sample 1
    complete = [[10, 12], [40, 42]]
    got = thread_starts(comp, complete)
    assert got == [[12, 12 + per], [42, 42 + per]]
    ls = thread_starts(comp, complete, lockstep=True)
    assert ls == [[42, 42 + per], [42, 42 + per]]
    # data later than the previous sample's end sets the start
    late = [[10, 10 + 3 * per]]
    assert thread_starts(comp, late, latency=1) == [[11, 11 + 3 * per]]
    # the rule is monotone and never earlier than the lockstep counterfactual's data bound
    rng = np.random.default_rng(0)
    for _ in range(50):
        c = np.sort(rng.integers(0, 500, (3, 6)), axis=1).tolist()
        m, l = thread_starts(comp, c), thread_starts(comp, c, lockstep=True)
        for t in range(3):
            for n in range(6):
                assert c[t][n] + 2 <= m[t][n] <= l[t][n]
                assert n == 0 or m[t][n] - m[t][n - 1] >= per
