"""verif/bench_limits.py and record_bench: benchmarks fail when they break a datasheet promise.

Pure Python (no simulator): records shaped like the bench tests' own are checked against
the table; the negative cases show the check fails for a halved throughput and for a
promise made stricter than a real measurement."""
from __future__ import annotations

import json
import re

import pytest

from rtl_gen.common.core import REPO
from rtl_gen.registry import cores
from verif import bench_limits as bl

L2REG_MEASURED = {"core": "l2reg", "cfg": "default", "sim": "verilator", "unit": "line", "beats": 256,
                  "cycles_per_unit": 1.0, "ideal": 1.0}   # what bench_throughput records today


def benched_cores():
    """Cores whose cocotb module has a bench test (own or from the lane-wise suite)."""
    out = []
    for name in cores():
        f = REPO / "verif" / name / f"test_{name}.py"
        if f.is_file() and re.search(r"bench_throughput|make_tests\(", f.read_text()):
            out.append(name)
    return out


def test_every_benchmarked_core_and_config_has_a_promise():
    names = benched_cores()
    assert "l2reg" in names and "fpdeep_fp" in names and len(names) >= 18
    missing = [(n, c) for n in names for c in cores()[n].configs if not bl.promises(n, c)]
    assert not missing, f"no datasheet figure in verif/bench_limits.py for {missing}"
    # the composed FPDeep chain bench (not a registry core): configs n2, n3, n4
    assert all(bl.promises("fpdeep_node_chain", f"n{k}") for k in (2, 3, 4))


def test_the_measured_figure_keeps_the_promise():
    assert bl.failures(L2REG_MEASURED) == []
    v = bl.verdicts(L2REG_MEASURED)
    assert [(x["field"], x["ok"]) for x in v] == [("cycles_per_unit", True)]


def test_halved_throughput_fails_naming_core_config_measured_and_promised():
    rec = dict(L2REG_MEASURED, cycles_per_unit=2.0)   # the one-entry output FIFO of issue 11
    (msg,) = bl.failures(rec)
    assert msg == ("bench l2reg/default (verilator): cycles_per_unit measured 2, datasheet promises "
                   "<= 1 (tolerance 2 %) (simulated cycles)")
    assert bl.failures(dict(L2REG_MEASURED, cycles_per_unit=1.02)) == []       # inside the tolerance
    assert bl.failures(dict(L2REG_MEASURED, cycles_per_unit=1.021)) != []      # just outside


def test_a_promise_stricter_than_the_measurement_fails():
    strict = {"l2reg": {"*": [bl.Promise("cycles_per_unit", 0.9)]}}
    (msg,) = bl.failures(L2REG_MEASURED, strict)
    assert "measured 1, datasheet promises <= 0.9" in msg
    # a real record of the last make bench, when present, fails the same way
    f = REPO / "build" / "bench" / "l2reg-default-verilator.json"
    if f.is_file():
        rec = json.loads(f.read_text())
        assert bl.failures(rec) == [] and len(bl.failures(rec, strict)) == 1


def test_higher_is_better_nested_missing_and_unknown():
    rec = {"core": "cosmic_memory_schedule_unit", "cfg": "default", "sim": "verilator",
           "long_aligned": {"fraction_of_peak": 1.0}, "long_unaligned": {"fraction_of_peak": 0.97}}
    (msg,) = bl.failures(rec)
    assert "long_unaligned.fraction_of_peak measured 0.97, datasheet promises >= 1" in msg
    del rec["long_aligned"]
    assert any("has no numeric field 'long_aligned.fraction_of_peak'" in m for m in bl.failures(rec))
    (msg,) = bl.failures({"core": "no_such_core", "cfg": "x", "sim": "icarus", "cycles_per_line": 1.0})
    assert "no datasheet figure recorded for no_such_core/x" in msg
    with pytest.raises(ValueError, match="better must be"):
        bl.Promise("x", 1.0, "faster")


def test_record_bench_fails_the_bench_test(tmp_path, monkeypatch):
    from verif.tb_common import record_bench
    monkeypatch.setenv("BENCH_DIR", str(tmp_path))
    monkeypatch.setenv("DUT_CFG", "small")
    monkeypatch.setenv("DUT_SIM", "verilator")
    rec = record_bench("l2reg", unit="line", beats=256, cycles_per_unit=1.0, ideal=1.0)
    assert rec["cfg"] == "small"
    with pytest.raises(AssertionError, match=r"bench l2reg/small \(verilator\): cycles_per_unit measured 2"):
        record_bench("l2reg", unit="line", beats=256, cycles_per_unit=2.0, ideal=1.0)
    # the record is still written, so make bench shows the number
    assert json.loads((tmp_path / "l2reg-small-verilator.json").read_text())["cycles_per_unit"] == 2.0
