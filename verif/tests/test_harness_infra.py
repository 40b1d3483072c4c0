"""The simulation harness (verif/harness.py) on a tiny probe DUT (verif/tests/probe.py):
content-keyed builds, reproducible seeds, replay commands, honest skips, wall-time guard.
Each run is one Icarus simulation of about a second."""
from __future__ import annotations

import json
import os
import re
import time

import pytest

from verif import harness


def _days_ago(path, days=2):
    t = time.time() - days * 86400
    os.utime(path, (t, t))


# ---------------------------------------------------------------- 1. stale builds
def test_changed_source_with_older_mtime_is_rebuilt(probe):
    p = probe(k=1)
    first = p.run(PROBE_K=1)
    assert first["outcome"] == "pass" and first["passed"] == 4
    binary = p.build_dir() / "sim.vvp"
    assert binary.exists()
    p.write_rtl(k=2)              # other content, and older than the binary:
    _days_ago(p.src)              # Icarus's own mtime rule would keep the old binary
    assert p.src.stat().st_mtime < binary.stat().st_mtime
    second = p.run(PROBE_K=2)     # passes only on a binary built from the new source
    assert second["outcome"] == "pass"
    assert second["build_key"] != first["build_key"]
    # negative: the check tells the binaries apart (the new binary fails the old K)
    with pytest.raises(AssertionError, match="add_k"):
        p.run(PROBE_K=1)


def test_build_key_covers_content_args_and_params(tmp_path):
    src = tmp_path / "a.v"
    src.write_text("module a; endmodule\n")
    base = harness.build_key("icarus", "a", [src], [], {"W": 8})
    assert harness.build_key("icarus", "a", [src], [], {"W": 8}) == base
    assert harness.build_key("verilator", "a", [src], [], {"W": 8}) != base
    assert harness.build_key("icarus", "a", [src], ["-Wall"], {"W": 8}) != base
    assert harness.build_key("icarus", "a", [src], [], {"W": 16}) != base
    st = src.stat()
    src.write_text("module a; wire x; endmodule\n")
    os.utime(src, (st.st_atime, st.st_mtime))  # same time stamp, other bytes
    assert harness.build_key("icarus", "a", [src], [], {"W": 8}) != base


# ---------------------------------------------------------------- 2. seeds
def _stim(lines, test):
    return [ln for ln in lines if ln.startswith(test + " ")]


def test_same_seed_same_stimulus_other_seed_other_stimulus(probe, monkeypatch):
    p = probe()
    monkeypatch.setenv("MLACCEL_SEED", "1234")
    r1 = p.run()
    a = p.lines()
    p.out.unlink()
    r2 = p.run()
    b = p.lines()
    assert r1["seed"] == r2["seed"] == 1234
    assert a == b and len(a) == 2
    assert _stim(a, "add_k")[0].startswith(f"add_k seed={harness.test_seed(1234, 'add_k')} ")
    # one test alone draws the same stimulus as inside the full run
    p.out.unlink()
    p.run(testcase="add_k")
    assert p.lines() == _stim(a, "add_k")
    # another run seed: other stimulus for every test
    p.out.unlink()
    monkeypatch.setenv("MLACCEL_SEED", "1235")
    p.run()
    c = p.lines()
    assert _stim(c, "add_k") != _stim(a, "add_k") and _stim(c, "maybe_fail") != _stim(a, "maybe_fail")
    assert {c["name"]: c["test_seed"] for c in r1["cases"]}["add_k"] == harness.test_seed(1234, "add_k")


def test_printed_replay_command_reproduces_the_failure(probe, monkeypatch):
    p = probe()
    monkeypatch.setenv("MLACCEL_SEED", "4321")
    with pytest.raises(AssertionError) as e:
        p.run(PROBE_FAIL=1)
    msg = str(e.value)
    m = re.search(r"replay: (make sim .*)", msg)
    assert m, msg
    cmd = m.group(1)
    assert cmd == f"make sim CORE={p.name} SIM=icarus CFG=default SEED=4321 TESTCASE=maybe_fail"
    drawn = re.search(r"deliberate failure, drew (\d+)", json.loads(
        (p.build_dir() / "summary.json").read_text())["cases"][1]["message"]).group(1)
    # replay as `make sim` does it: SEED -> MLACCEL_SEED, TESTCASE -> MLACCEL_TESTCASE, from
    # another shell seed
    kv = dict(x.split("=", 1) for x in cmd.split()[2:])
    monkeypatch.setenv("MLACCEL_SEED", kv["SEED"])
    monkeypatch.setenv("MLACCEL_TESTCASE", kv["TESTCASE"])
    monkeypatch.setenv("MLACCEL_CFG", kv["CFG"])
    monkeypatch.setenv("COCOTB_RANDOM_SEED", "999")   # a stale shell variable must not win
    p.out.unlink()
    with pytest.raises(AssertionError) as e2:
        p.run(PROBE_FAIL=1)
    assert f"deliberate failure, drew {drawn}" in str(e2.value)
    assert p.lines() == [ln for ln in p.lines() if ln.startswith("maybe_fail")] and len(p.lines()) == 1


def test_cfg_selection_deselects_other_configs(probe, monkeypatch):
    p = probe()
    monkeypatch.setenv("MLACCEL_CFG", "small")
    with pytest.raises(pytest.skip.Exception, match="deselected"):
        p.run()


# ---------------------------------------------------------------- 4. skips
def test_undeclared_skip_fails_the_run(probe):
    p = probe(skips={})
    with pytest.raises(AssertionError, match="undeclared skip: maybe_skip"):
        p.run(PROBE_SKIP=1)
    s = json.loads((p.build_dir() / "summary.json").read_text())
    assert (s["passed"], s["skipped"], s["outcome"]) == (3, 1, "fail")


def test_declared_skip_is_counted_as_skip_not_pass(probe):
    p = probe(skips={"maybe_skip": "probe reason"})
    r = p.run(PROBE_SKIP=1)
    assert (r["tests"], r["passed"], r["skipped"], r["outcome"]) == (4, 3, 1, "pass")
    case = {c["name"]: c for c in r["cases"]}["maybe_skip"]
    assert case["status"] == "skipped" and case["message"] == "declared skip: probe reason"


def test_run_of_only_declared_skips_fails(probe):
    p = probe(skips={"maybe_skip": "probe reason"})
    with pytest.raises(AssertionError, match="no cocotb test passed"):
        p.run(testcase="maybe_skip", PROBE_SKIP=1)


def test_skip_declared_for_another_simulator_fails(probe):
    p = probe(skips={"maybe_skip": {"reason": "needs internal signals", "sims": ["verilator"]}})
    with pytest.raises(AssertionError, match="undeclared skip"):
        p.run(PROBE_SKIP=1)


def test_fewer_tests_than_declared_fails(probe, monkeypatch):
    monkeypatch.setenv("PROBE_EXTRA", "1")
    p = probe()
    with pytest.raises(AssertionError, match="5 tests declared, 1 never ran: declared_but_never_run"):
        p.run()


def test_skip_allowed_rules():
    skips = {"a": "why", "b": {"reason": "only here", "sims": ["verilator"]}, "c": "", "d": {"sims": None}}
    assert harness.skip_allowed(skips, "a", "icarus") == "why"
    assert harness.skip_allowed(skips, "b", "verilator") == "only here"
    assert harness.skip_allowed(skips, "b", "icarus") is None
    assert harness.skip_allowed(skips, "c", "icarus") is None      # no reason: not declared
    assert harness.skip_allowed(skips, "d", "icarus") is None
    assert harness.skip_allowed(skips, "zz", "icarus") is None


# ---------------------------------------------------------------- 5. wall time
def test_hung_simulation_is_killed_and_reported_as_timeout(probe, monkeypatch):
    p = probe()
    monkeypatch.setenv("MLACCEL_WALL_BUDGET_S", f"600,{p.name}/default=4")
    monkeypatch.setenv("MLACCEL_SEED", "77")
    t0 = time.monotonic()
    with pytest.raises(harness.SimTimeout) as e:
        p.run(PROBE_HANG=1)
    dt = time.monotonic() - t0
    assert dt < 60, f"the guard took {dt:.0f} s"
    msg = str(e.value)
    assert f"{p.name}/default/icarus seed=77: TIMEOUT" in msg and "4 s" in msg, msg
    s = json.loads((p.build_dir() / "summary.json").read_text())
    assert s["outcome"] == "timeout" and s["seed"] == 77
    # without the hang the same probe passes (a budget that a loaded machine also meets)
    monkeypatch.setenv("MLACCEL_WALL_BUDGET_S", f"{p.name}=120")
    assert p.run()["outcome"] == "pass"


def test_wall_budget_lookup(monkeypatch):
    monkeypatch.delenv("MLACCEL_WALL_BUDGET_S", raising=False)
    assert harness.wall_budget("l2reg", "small") == harness.DEFAULT_WALL_BUDGET_S
    assert harness.wall_budget("pipearch_pu", "deep") == harness.WALL_BUDGET_S["pipearch_pu"]
    monkeypatch.setenv("MLACCEL_WALL_BUDGET_S", "50,l2reg=20,l2reg/small=5")
    assert harness.wall_budget("l2reg", "small") == 5
    assert harness.wall_budget("l2reg", "default") == 20
    assert harness.wall_budget("scalar_engine", "default") == 50


def test_matrix_ghdl_cfgs():
    """GHDL rows of non-default configs only when named (ghdl_cfgs); an unknown name fails."""
    from verif import harness
    ids = lambda ps: [p.id for p in ps]  # noqa: E731
    base = ids(harness.matrix("cosmic_accelerator", quick=[]))
    assert "default-ghdl" in base and "tree-ghdl" not in base
    more = ids(harness.matrix("cosmic_accelerator", quick=[], ghdl_cfgs=("tree",)))
    assert set(more) - set(base) == {"tree-ghdl"}
    with pytest.raises(ValueError, match="nosuch"):
        harness.matrix("cosmic_accelerator", quick=[], ghdl_cfgs=("nosuch",))
