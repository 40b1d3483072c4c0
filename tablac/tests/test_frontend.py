"""tablac front end: the five programs, DFG structure, and every error class with
file:line:col."""
import re

import numpy as np
import pytest

import tablac
from tablac import CompileError, dfg, interp

BASE = """\
m = 4;
model_input x[m];
model_output y;
model w[m];
gradient g[m] -> w;
iterator i[0:m-1];
learning_rate = 0.5;
d = sum[i](w[i] * x[i]);
g[i] = (d - y) * x[i];
"""


def expect_error(text, line, token, msg, occurrence=0, **kw):
    """Compile ``text``; the error must be at ``line`` and at the column of ``token`` (its
    ``occurrence``-th appearance on that line), and the message must match ``msg``."""
    src_line = text.split("\n")[line - 1]
    col = -1
    for _ in range(occurrence + 1):
        col = src_line.index(token, col + 1)
    with pytest.raises(CompileError) as ei:
        tablac.compile(text, file="p.t", **kw)
    e = ei.value
    assert (e.file, e.line, e.col) == ("p.t", line, col + 1), str(e)
    assert re.search(msg, e.msg), e.msg
    assert str(e) == f"p.t:{line}:{col + 1}: error: {e.msg}"
    return e


# ---- the five programs ------------------------------------------------------------------
TABLE3 = {"linear": {"inputs": 55}, "logistic": {"inputs": 54}, "svm": {"inputs": 54},
          "backprop": {"inputs": 10, "model": 10 * 9 + 9}, "reco": {}}


@pytest.mark.parametrize("name", sorted(tablac.PROGRAMS))
def test_program_compiles_at_table3_shape(name):
    # compile time is a measurement (compile_s in `python -m tablac.bench`), not asserted here
    path = tablac.program_path(name)
    assert len(path.read_text().splitlines()) <= 50
    g = tablac.load(path)
    want = TABLE3[name]
    if "inputs" in want:
        assert sum(a.size for a in g.inputs.values()) == want["inputs"]
    if "model" in want:
        assert sum(a.size for a in g.model.values()) == want["model"]
    for n in g.nodes:                                      # topological, ids == positions
        assert all(a < n.id for a in n.args) and n.op in dfg.OPS
    assert g.consts["mu"] > 0 and g.consts["threads"] == 1
    words = g.array_words()
    assert sum(w for k, _s, w in words.values() if k == "model") == \
        sum(a.size for a in g.model.values())


def test_overrides_resize_programs():
    g = tablac.load(tablac.program_path("backprop"), overrides={"ni": 3, "nh": 2, "no": 1})
    assert g.model["W1"].shape == (2, 3) and g.model["W2"].shape == (1, 2)
    g = tablac.load(tablac.program_path("linear"), overrides={"m": 8, "mu": 0.125, "n": 4})
    assert g.inputs["x"].shape == (8,) and g.consts["mu"] == 0.125
    assert g.aggregate == {"w": ("mean", 4)} and g.consts["threads"] == 4


# ---- DFG structure ---------------------------------------------------------------------
def test_linear_dfg_shape_and_mu_hoisting():
    g = tablac.compile(BASE)
    ops = g.ops_count()
    # one dot of 4 pairs, e = d - y, one mu*e, 4 muls by x, 4 subs from w
    assert ops == {"input": 4, "label": 1, "model": 4, "dot": 1, "sub": 5, "const": 1, "mul": 5}
    dot = next(n for n in g.nodes if n.op == "dot")
    assert len(dot.args) == 8
    assert [g.nodes[a].name for a in dot.args] == ["w[0]", "x[0]", "w[1]", "x[1]", "w[2]", "x[2]",
                                                   "w[3]", "x[3]"]
    for j in range(4):
        new = g.nodes[g.update["w"][j]]
        assert new.op == "sub" and new.args[0] == g.model["w"][j]
        step = g.nodes[new.args[1]]
        assert step.id == g.gradient["g"][j] and step.op == "mul"
        assert g.nodes[step.args[1]].name == f"x[{j}]"


def test_dot_group_lowering_and_adder_trees():
    text = BASE.replace("m = 4;", "m = 10;")
    g = tablac.compile(text, dot_group=4)
    dots = [n for n in g.nodes if n.op == "dot"]
    assert sorted(len(n.args) // 2 for n in dots) == [2, 4, 4]
    assert g.ops_count()["add"] == 2                        # balanced tree over 3 parts
    # a sum that is not over a product is an adder tree; pi a multiply tree; norm = squares
    t = BASE.replace("d = sum[i](w[i] * x[i]);",
                     "d = sum[i](w[i] + x[i]) + pi[i](x[i]) + norm[i](w[i] - x[i]);")
    g = tablac.compile(t)
    ops = g.ops_count()
    assert ops["add"] == 4 * 1 + 3 + 2                      # 4 element adds, tree 3, 2 joins
    sq = [n for n in g.nodes if n.op == "dot"]
    assert len(sq) == 1 and all(sq[0].args[2 * k] == sq[0].args[2 * k + 1] for k in range(4))
    v = interp.evaluate(g, np.array([1.0, 2, 3, 4]), 0.5, np.array([0.5, -1, 2, 0]))
    x, w = np.array([1.0, 2, 3, 4]), np.array([0.5, -1, 2, 0])
    d = np.sum(w + x) + np.prod(x) + np.sum((w - x) ** 2)
    np.testing.assert_allclose(v[g.update["w"]], w - 0.5 * (d - 0.5) * x)


def test_constant_folding_identities_and_dead_nodes():
    t = BASE.replace("learning_rate = 0.5;", "learning_rate = 0.5;\nc = 2 * m - 7;\nk = sigmoid(0);")
    t = t.replace("g[i] = (d - y) * x[i];",
                  "unused[i] = x[i] * w[i] - 3;\ng[i] = (d - y) * x[i] * (c * 1 + 0) * (k * 2);")
    g = tablac.compile(t)
    consts = sorted(n.value for n in g.nodes if n.op == "const")
    assert consts == [0.5]              # c = 1 and k*2 = 1 folded and removed by identities
    assert "add" not in g.ops_count()   # the dead 'unused' temporary is gone
    assert g.ops_count()["mul"] == 5


def test_to_dot():
    g = tablac.compile(BASE)
    text = g.to_dot()
    assert text.startswith("digraph dfg {") and text.rstrip().endswith("}")
    assert len(re.findall(r"^  n\d+ \[label=", text, re.M)) == len(g.nodes)
    assert len(re.findall(r"^  n\d+ -> n\d+", text, re.M)) == sum(len(n.args) for n in g.nodes)
    assert text.count("peripheries=2") == 4 and 'label="x[0]"' in text


def test_aggregation_forms():
    t = BASE + "iterator t[0:3];\nw[i] = sum[t](w[i]) / 4;\n"
    assert tablac.compile(t).aggregate == {"w": ("mean", 4)}
    assert tablac.compile(t.replace(" / 4", "")).aggregate == {"w": ("sum", 4)}


def test_binding_by_shape_and_multi_dimensional():
    t = """n = 2; m = 3;
model_input x[m]; model_output y[n]; model W[n][m]; gradient G[n][m];
iterator i[0:m-1]; iterator j[0:n-1];
learning_rate = 0.25;
S[j] = sum[i](X2[j][i] * 0 + W[j][i] * x[i]);
"""
    # X2 is undeclared: error at its position
    expect_error(t, 5, "X2", r"undeclared name X2")
    t = t.replace("X2[j][i] * 0 + ", "")
    t += "E[j] = sigmoid(S[j]) - y[j];\nG[j][i] = x[i] * E[j];\n"
    g = tablac.compile(t)
    assert g.bind == {"G": "W"} and g.update["W"].shape == (2, 3)


# ---- errors ----------------------------------------------------------------------------
def test_syntax_errors():
    expect_error(BASE.replace("m = 4;", "m = 4"), 2, "model_input", r"syntax error: unexpected")
    expect_error(BASE.replace("d - y", "d - $y"), 9, "$", r"unexpected character '\$'")
    e = expect_error(BASE.replace("(d - y)", "(d - y"), 9, ";", r"syntax error")
    assert "RPAR" in e.msg or "')'" in e.msg or "expected" in e.msg
    with pytest.raises(CompileError) as ei:
        tablac.compile("m = (1 +", file="p.t")
    assert (ei.value.line, ei.value.col) == (1, 9)


def test_undeclared_and_redeclared():
    expect_error(BASE.replace("(d - y)", "(d - z)"), 9, "z", r"undeclared name z")
    expect_error(BASE.replace("model w[m];", "model w[m];\nmodel_input w[2];"), 5, "w",
                 r"w is already declared \(as model at line 4\)")
    expect_error(BASE + "m = 3;\n", 10, "m", r"cannot assign constant m \(declared at line 1\)")
    expect_error(BASE.replace("iterator i[0:m-1];", "iterator i[0:m-1], i[0:1];"), 6, "i",
                 r"already declared", occurrence=2)
    expect_error(BASE + "y = d;\n", 10, "y", r"cannot assign label y")


def test_dimension_and_iterator_mismatches():
    expect_error(BASE.replace("iterator i[0:m-1];", "iterator i[0:m];"), 8, "i", r"dimension "
                 r"mismatch: iterator i runs to 4 but dimension 1 of w has 4 elements", occurrence=1)
    expect_error(BASE.replace("w[i] * x[i]", "w[i][i] * x[i]"), 8, "w",
                 r"model w has 1 dimension\(s\) but is indexed with 2")
    expect_error(BASE.replace("(d - y)", "(d - y[i])"), 9, "y", r"indexed with 1")
    expect_error(BASE.replace("x[i]);", "x[j]);").replace("iterator i[0:m-1];",
                 "iterator i[0:m-1], j[0:m-1];"), 8, "j", r"iterator j is not bound", occurrence=0)
    expect_error(BASE.replace("sum[i](w[i] * x[i])", "sum[i](w[2] * x[2])"), 8, "i",
                 r"sum\[i\] body does not use iterator i", occurrence=0)
    expect_error(BASE.replace("g[i] = (d - y) * x[i];", "g[i] = sum[i](x[i]);"), 9, "i",
                 r"iterator i is already bound", occurrence=1)
    expect_error(BASE.replace("w[i] * x[i]", "w[i] * x[5]"), 8, "5", r"index 5 out of range")
    expect_error(BASE.replace("x[i]);", "x[i+1]);"), 8, "+", r"index 4 out of range")
    expect_error(BASE.replace("g[i] = (d - y) * x[i];", "g[i] = (d - y) * x[i];\nq[i] = g[i] * i;"),
                 10, "i", r"iterator i used as a value", occurrence=2)
    expect_error(BASE.replace("g[i] = (d - y) * x[i];", "g[2] = d;"), 5, "g",
                 r"gradient element g\[0\] is never assigned", occurrence=1)
    expect_error(BASE.replace("g[i] = (d - y) * x[i];", "g[i] = e[i];\ne[i] = x[i];"), 9, "e",
                 r"undeclared name e")


def test_gradient_binding_errors():
    expect_error(BASE.replace("gradient g[m] -> w;", "gradient g[m] -> x;"), 5, "x",
                 r"gradient g is bound to x, which is a input, not a model")
    expect_error(BASE.replace("gradient g[m] -> w;", "gradient g[m] -> v;"), 5, "v",
                 r"bound to v, which is undeclared")
    t = BASE.replace("gradient g[m] -> w;", "gradient g[3];").replace(
        "g[i] = (d - y) * x[i];", "iterator j[0:2];\ng[j] = d * x[j];")
    expect_error(t, 5, "g", occurrence=1, msg=r"gradient g is bound to no model \(no model has its shape \[3\]\)")
    expect_error(BASE.replace("model w[m];", "model w[m];\nmodel v[3];"), 5, "v",
                 r"model v has no gradient bound to it")
    expect_error(BASE.replace("gradient g[m] -> w;", "gradient g[2] -> w;").replace(
        "g[i] = (d - y) * x[i];", "iterator j[0:1];\ng[j] = d * x[j];"), 5, "w",
                 r"dimension mismatch: gradient g has shape \[2\] but model w has \[4\]")
    expect_error(BASE + "w[i] = d;\n", 10, "d", r"model w is updated by its gradient")


def test_nonlinear_not_on_pe():
    t = BASE.replace("(d - y)", "(sigmoid(d) - log(y))")
    expect_error(t, 9, "log", r"nonlinear function log is not available on the target PE "
                 r"\(it has: sigmoid\)", nonlinear={"sigmoid"})
    assert tablac.compile(t, nonlinear={"sigmoid", "log"})
    expect_error(BASE.replace("(d - y)", "(d / y)"), 9, "/", r"needs the recip", nonlinear=set())
    expect_error(BASE.replace("(d - y)", "(tanh(d) - y)"), 9, "tanh", r"unknown function tanh")
    expect_error(BASE.replace("(d - y)", "(min(d) - y)"), 9, "min", r"min takes 2 arguments")


def test_constants_settings_and_aggregation_errors():
    expect_error(BASE.replace("m = 4;", "m = 4 / 0;"), 1, "/", r"division by zero")
    expect_error(BASE.replace("model w[m];", "model w[m - 4];"), 4, "-", r"dimension 1 of w must "
                 r"be >= 1, got 0")
    expect_error(BASE.replace("m = 4;", "m = 4.5;"), 2, "m", r"must be an integer, got 4.5",
                 occurrence=1)
    expect_error(BASE.replace("learning_rate = 0.5;", "learning_rate = -0.5;"), 7, "-",
                 r"learning_rate must be positive")
    expect_error(BASE.replace("iterator i[0:m-1];", "iterator i[3:1];"), 6, "i", r"is empty", occurrence=1)
    t = BASE + "iterator t[0:3];\nw[i] = sum[t](w[i]) / 3;\n"
    expect_error(t, 11, "3", r"aggregation divides by 3 but sums 4 thread models")
    expect_error(BASE + "iterator t[0:3];\nw[i] = sum[t](x[i]);\n", 11, "sum",
                 r"only statement that may assign it is the aggregation")
    t = BASE.replace("d = sum[i](w[i] * x[i]);", "q[i] = 1e200;\nd = sum[i](q[i] * q[i]);")
    expect_error(t, 9, "sum", r"constant folding gives a non-finite value")
    with pytest.raises(CompileError, match=r"no learning_rate"):
        tablac.compile(BASE.replace("learning_rate = 0.5;", ""))
    with pytest.raises(CompileError, match=r"override of unknown constant\(s\): q"):
        tablac.compile(BASE, overrides={"q": 1})
    with pytest.raises(CompileError, match=r"override m = 'x' is not a number"):
        tablac.compile(BASE, overrides={"m": "x"})
    with pytest.raises(CompileError, match=r"exceeds 10 nodes"):
        tablac.compile(BASE, max_nodes=10)
    with pytest.raises(CompileError, match=r"dot_group must be"):
        tablac.compile(BASE, dot_group=0)


def test_load_names_the_file(tmp_path):
    p = tmp_path / "bad.t"
    p.write_text(BASE.replace("(d - y)", "(d - z)"))
    with pytest.raises(CompileError) as ei:
        tablac.load(p)
    assert str(ei.value).startswith(f"{p}:9:")
    with pytest.raises(CompileError, match="cannot read program"):
        tablac.load(tmp_path / "missing.t")


def test_data_sizes_for_the_planner():
    g = tablac.load(tablac.program_path("reco"), overrides={"nu": 5, "ni": 7, "k": 3})
    w = g.array_words()
    assert w["ou"] == ("input", (5,), 5) and w["ov"] == ("input", (7,), 7)
    assert w["U"] == ("model", (5, 3), 15) and w["V"] == ("model", (7, 3), 21)
    assert w["r"] == ("label", (), 1)
    lines = tablac.program_path("reco").read_text().split("\n")
    ln = next(k for k, t in enumerate(lines, 1) if t.startswith("model U"))
    assert g.decls["U"][2:] == (ln, 7)       # source position for the planner's messages


def test_tabla_paper_logistic_example():
    """TABLA section 4.3's listing (with semicolons; its V line transposes W, which is
    only square-safe, so it is written W[j][i] here): n outputs, regularised gradient
    assigned in two statements, names with primes."""
    text = """
m = 5; //number of input features
n = 3; //number of model outputs
lambda = 0.1; //regularization factor
model_input X[m]; //model input
model_output Y'[n]; //model output
model W[n][m]; //model parameters
gradient G[n][m]; //gradient
iterator i[0:m - 1]; //iterator for group operations
iterator j[0:n - 1]; //iterator for group operations
learning_rate = 0.125;
S[j] = sum [i](X[i] * W[j][i]);
Y[j] = sigmoid (S[j]); //n parallel sigmoid operations
E[j] = Y[j] - Y'[j]; //n parallel subtractions
G[j][i] = X[i] * E[j]; //n*m parallel multiplications
V[j][i] = lambda * W[j][i]; //n*m parallel multiplications
G[j][i] = G[j][i] + V[j][i]; //n*m parallel additions
"""
    g = tablac.compile(text)
    rng = np.random.default_rng(0)
    x, y, W = rng.normal(size=5), np.array([1.0, 0.0, 1.0]), rng.normal(size=(3, 5))
    v = interp.evaluate(g, x, y, W)
    p = 1 / (1 + np.exp(-(W @ x)))
    np.testing.assert_allclose(v[g.update["W"]], W - 0.125 * (np.outer(p - y, x) + 0.1 * W),
                               rtol=1e-13)
