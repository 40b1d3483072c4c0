"""Random DFGs (every op, shared subexpressions, operands on any PE) through every
plan shape, both mappers, BYPASS 0/1 and recompute depths: the cycle-level machine
equals the DFG interpreter bit for bit."""
import numpy as np
import pytest

from tablac.codegen import compile_graph
from tablac.dfg import Graph, Node
from tablac.plan import plan_pes

from .test_machine import check_equal

BIN = ["add", "sub", "mul", "lt", "gt", "min", "max"]
UN = ["sigmoid", "gaussian", "log", "recip", "pass"]


def random_graph(seed):
    rng = np.random.default_rng(seed)
    N = []

    def node(op, args=(), value=None, name=None):
        N.append(Node(len(N), op, tuple(int(a) for a in args), value, name))
        return len(N) - 1
    nx, nw = int(rng.integers(2, 9)), int(rng.integers(1, 5))
    xs = [node("input", name=f"x[{i}]") for i in range(nx)]
    y = node("label", name="y")
    ws = [node("model", name=f"w[{i}]") for i in range(nw)]
    pool = xs + [y] + ws + [node("const", value=float(rng.choice([0.0, 1.0, 0.375, -1.25])))]
    for _ in range(int(rng.integers(4, 20))):
        r = rng.random()
        pick = lambda: pool[int(rng.integers(max(0, len(pool) - 8), len(pool)))] \
            if rng.random() < 0.7 else pool[int(rng.integers(0, len(pool)))]  # noqa: E731
        if r < 0.55:
            v = node(str(rng.choice(BIN)), (pick(), pick()))
        elif r < 0.75:
            v = node(str(rng.choice(UN)), (pick(),))
        else:
            k = int(rng.integers(1, 5))
            v = node("dot", [pick() for _ in range(2 * k)])
        pool.append(v)
    mu = node("const", value=0.0625)
    upd = [node("sub", (w, node("mul", (mu, pool[-1 - (j % 3)])))) for j, w in enumerate(ws)]
    return Graph(nodes=N, inputs={"x": np.array(xs)}, labels={"y": np.array(y)},
                 model={"w": np.array(ws)}, update={"w": np.array(upd)},
                 consts={"mu": 0.0625}, aggregate={"w": ("mean", 1)})


@pytest.mark.parametrize("seed", range(24))
def test_random_graph(seed):
    g = random_graph(seed)
    rng = np.random.default_rng(1000 + seed)
    pes, threads = [(2, 1), (4, 1), (8, 1), (16, 1), (8, 2), (16, 4)][seed % 6]
    mapper = ["cosmic", "mlrcs"][seed % 2]
    comp = compile_graph(g, plan_pes(pes, threads), mapper=mapper, bypass=int(rng.integers(0, 2)),
                         recompute=int(rng.choice([0, 1, 3, 5])))
    check_equal(g, comp, threads, rounds=2, ns_per_thread=2, seed=seed)
