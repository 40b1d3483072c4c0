"""tablac.bench holds every compiled benchmark row to the figure the README promises."""
from tablac.bench import PROMISED, SHAPES, regressions


def _row(prog, mapper, cycles):
    return {"program": prog, "mapper": mapper, "cycles_per_sample": cycles}


def test_every_benchmark_row_has_a_promise():
    for prog, *_ in SHAPES:
        for mapper in ("cosmic", "mlrcs"):
            assert (prog, mapper) in PROMISED


def test_slower_row_is_a_regression_and_equal_or_faster_is_not():
    p = PROMISED[("logistic", "cosmic")]
    assert regressions([_row("logistic", "cosmic", p)]) == []
    assert regressions([_row("logistic", "cosmic", p - 1)]) == []
    bad = regressions([_row("logistic", "cosmic", p + 1)])
    assert len(bad) == 1 and "promised" in bad[0]


def test_row_without_a_promise_fails():
    assert regressions([_row("logistic", "nosuchmapper", 1)])
