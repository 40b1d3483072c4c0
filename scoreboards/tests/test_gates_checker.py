"""Pure helpers of the scoreboards: random gates and the fixed-point lane codecs.

The FixedScoreboard itself needs cocotb monitors and is exercised by every core's
negative test (``checker_catches_corruption``); here only simulator-free code."""
from __future__ import annotations

import random

import pytest

from scoreboards.checker import StreamSpec, pack_lanes, split_lanes, to_signed
from scoreboards.gates import Gate, always


# ----------------------------------------------------------------- Gate
def _draw(g: Gate, n: int) -> list[bool]:
    return [g.next() for _ in range(n)]


def _runs(seq):
    runs, cur, n = [], seq[0], 0
    for v in seq:
        if v == cur:
            n += 1
        else:
            runs.append((cur, n))
            cur, n = v, 1
    runs.append((cur, n))
    return runs


def test_gate_p1_never_stalls():
    assert all(_draw(Gate(123, 1.0), 5000))
    assert all(_draw(always(), 1000))


@pytest.mark.parametrize("p", [0.1, 0.3, 0.5, 0.7, 0.9])
@pytest.mark.parametrize("max_run", [1, 4, 9])
def test_gate_open_fraction_matches_p(p, max_run):
    n = 40000
    frac = sum(_draw(Gate(2024, p, max_run), n)) / n
    # runs of mean length (max_run+1)/2 are drawn independently of the state: the
    # long-run open fraction is p; tolerance ~5 sigma of the run-level binomial
    runs = n / ((max_run + 1) / 2)
    tol = 5 * (p * (1 - p) / runs) ** 0.5 * 1.5 + 0.005
    assert abs(frac - p) < tol, f"p={p} max_run={max_run}: open fraction {frac:.4f}"


@pytest.mark.parametrize("max_run", [1, 3, 8])
def test_gate_runs_bounded_and_both_states_seen(max_run):
    seq = _draw(Gate(7, 0.5, max_run), 20000)
    runs = _runs(seq)
    assert {s for s, _ in runs} == {True, False}
    if max_run == 1:
        # independent draws: consecutive equal states still happen, but every state
        # is redrawn each cycle -- the longest run is short
        assert max(n for _, n in runs) < 40
    else:
        # a run of one state may span several draws that agree; a closed run longer
        # than max_run needs two consecutive "closed" draws, so some runs exceed
        # max_run but a single draw never covers more than max_run cycles: check that
        # run lengths reach max_run (bursts exist)
        assert max(n for _, n in runs) >= max_run


def test_gate_burst_lengths_within_max_run():
    """Each drawn state is held 1..max_run cycles: observe the hold lengths directly."""
    g = Gate(99, 0.5, 5)
    holds = []
    for _ in range(5000):
        fresh = g._left == 0  # this cycle draws a new state and hold length
        g.next()
        if fresh:
            holds.append(g._left + 1)
    assert set(holds) == {1, 2, 3, 4, 5}


@pytest.mark.parametrize("seed", [0, 1, 42, 2**31 - 1])
def test_gate_deterministic_per_seed(seed):
    a = _draw(Gate(seed, 0.6, 4), 3000)
    b = _draw(Gate(seed, 0.6, 4), 3000)
    assert a == b
    c = _draw(Gate(seed + 1, 0.6, 4), 3000)
    assert a != c, "different seeds gave the same sequence"


def test_gate_independent_of_global_random():
    random.seed(1)
    a = _draw(Gate(5, 0.5), 500)
    random.seed(2)
    random.random()
    b = _draw(Gate(5, 0.5), 500)
    assert a == b


@pytest.mark.parametrize("kw", [dict(p=0.0), dict(p=-0.1), dict(p=1.0001), dict(p=2),
                                dict(p=0.5, max_run=0), dict(p=0.5, max_run=-3)])
def test_gate_bad_arguments_raise(kw):
    with pytest.raises(ValueError):
        Gate(0, **kw)


# ----------------------------------------------------------------- checker helpers
@pytest.mark.parametrize("v,w,expect", [
    (0, 8, 0), (1, 8, 1), (0x7F, 8, 127), (0x80, 8, -128), (0xFF, 8, -1),
    (0x1FF, 8, -1), (0x100, 8, 0), (-1, 8, -1), (-128, 8, -128), (128, 8, -128),
    (0x7FFF, 16, 32767), (0x8000, 16, -32768),
    (0x7FFFFFFF, 32, 2**31 - 1), (0x80000000, 32, -2**31), (0xFFFFFFFF, 32, -1),
    (1, 1, -1), (0, 1, 0),
])
def test_to_signed(v, w, expect):
    assert to_signed(v, w) == expect


@pytest.mark.parametrize("w", [8, 16, 24, 32])
@pytest.mark.parametrize("lanes", [1, 2, 4, 16])
def test_pack_split_round_trip_with_negatives(w, lanes):
    rng = random.Random(w * 100 + lanes)
    lo, hi = -(1 << (w - 1)), (1 << (w - 1)) - 1
    for _ in range(200):
        vals = [rng.choice([lo, hi, -1, 0, 1, lo + 1, hi - 1, rng.randint(lo, hi)]) for _ in range(lanes)]
        word = pack_lanes(vals, w)
        assert 0 <= word < (1 << (w * lanes))
        assert split_lanes(word, lanes, w) == vals


def test_pack_lanes_layout():
    # lane i is bits [i*w +: w], two's complement
    assert pack_lanes([1, -1], 8) == 0xFF01
    assert pack_lanes([-128, 127, 0], 8) == 0x007F80
    assert split_lanes(0xFF01, 2, 8) == [1, -1]
    assert pack_lanes([], 16) == 0


def test_pack_lanes_accepts_numpy_ints():
    np = pytest.importorskip("numpy")
    vals = np.array([-5, 7, -32768, 32767], dtype=np.int64)
    assert split_lanes(pack_lanes(vals, 16), 4, 16) == [-5, 7, -32768, 32767]


def test_split_ignores_bits_above_lanes():
    assert split_lanes((0xAB << 16) | 0x80FF, 2, 8) == [-1, -128]


def test_stream_spec_decode():
    spec = StreamSpec("m_axis_y", [("a", 2, 8, 4), ("b", 1, 16, 8)])
    word = pack_lanes([-3, 100], 8) | (to_signed(-300, 16) & 0xFFFF) << 16
    assert spec.decode(word) == [("a", 0, -3, 4), ("a", 1, 100, 4), ("b", 0, -300, 8)]
    assert spec.name == "m_axis_y"


def test_stream_spec_decode_round_trip_random():
    rng = random.Random(3)
    fields = [("x", 4, 16, 8), ("y", 1, 32, 16), ("z", 3, 8, 0)]
    spec = StreamSpec("s", fields)
    for _ in range(100):
        vals, word, shift = [], 0, 0
        for _, lanes, w, _f in fields:
            lane_vals = [rng.randint(-(1 << (w - 1)), (1 << (w - 1)) - 1) for _ in range(lanes)]
            word |= pack_lanes(lane_vals, w) << shift
            shift += lanes * w
            vals += lane_vals
        dec = spec.decode(word)
        assert [v for _, _, v, _ in dec] == vals
        assert [(n, i, f) for n, i, _, f in dec] == [(n, i, f) for n, l, _, f in fields for i in range(l)]
