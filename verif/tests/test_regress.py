"""verif/regress.py: rows, summary and the merged JUnit report (fabricated calls, fast),
and one end-to-end run whose printed replay command reproduces a failure exactly."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from rtl_gen.common.core import REPO
from verif import regress

LONG = "a_cocotb_test_with_a_really_long_descriptive_name_" + "x" * 90  # > 80 characters


def _summary(outcome="pass", cases=(), problems=(), seed=42, **kw):
    cs = [{"name": n, "status": st, "message": m, "sim_ns": 10.0, "wall_s": 0.1, "test_seed": 7}
          for n, st, m in cases]
    return {"core": "l2reg", "cfg": "small", "sim": "icarus", "tag": "", "seed": seed, "outcome": outcome,
            "tests": len(cs), "passed": sum(c["status"] == "passed" for c in cs),
            "failures": sum(c["status"] == "failed" for c in cs),
            "skipped": sum(c["status"] == "skipped" for c in cs), "cycles": 5, "wall_s": 3.0,
            "budget_s": 9.0, "cases": cs, "problems": list(problems),
            "replay": f"make sim CORE=l2reg SIM=icarus CFG=small SEED={seed}", **kw}


def _call(node, summary, outcome="passed", testcase=""):
    return {"node": node, "core": "l2reg", "cfg": "small", "sim": "icarus", "tag": "", "testcase": testcase,
            "outcome": outcome, "summary": summary, "reason": "x"}


NODE = "verif/l2reg/test_l2reg.py::test_l2reg[small-icarus]"
PYTEST_XML = """<testsuites><testsuite>
<testcase classname="golden.tests.test_x" name="test_a"/>
<testcase classname="verif.l2reg.test_l2reg" name="test_l2reg[small-icarus]"><failure message="boom"/></testcase>
<testcase classname="verif.l2reg.test_l2reg" name="test_l2reg[default-icarus]"><skipped message="deselected: CFG=small"/></testcase>
</testsuite></testsuites>"""


def test_rows_show_failures_skips_timeouts_untruncated():
    s_fail = _summary("fail", [(LONG, "failed", "mismatch"), ("b", "skipped", "undeclared skip (...)")],
                      [f"cocotb tests failed: {LONG}", "undeclared skip: b"])
    s_to = _summary("timeout", [], ["TIMEOUT"])
    s_ok = _summary("pass", [("a", "passed", ""), ("c", "skipped", "declared skip: why")])
    rows = regress._rows([_call(NODE, s_fail, "failed"), _call(NODE, s_to, "failed", "t"),
                          _call(NODE, s_ok), _call(NODE, None, "deselected")], 42)
    assert len(rows) == 3                             # the deselected call is no row
    fail = next(r for r in rows if r["result"].startswith("FAIL"))
    assert LONG in fail["result"] and "undeclared skip: b" in fail["result"] and fail["bad"]
    assert fail["tests"] == "0/2, 1 skipped"
    to = next(r for r in rows if r["result"].startswith("TIMEOUT"))
    assert to["bad"] and "wall budget 9 s" in to["result"]
    ok = next(r for r in rows if r["result"] == "pass")
    assert ok["tests"] == "1/2, 1 skipped" and not ok["bad"]


def test_merged_junit_has_one_case_per_cocotb_test_with_seeds(tmp_path):
    px = tmp_path / "p.xml"
    px.write_text(PYTEST_XML)
    s = _summary("fail", [(LONG, "failed", "mismatch at 3"), ("ok", "passed", ""),
                          ("sk", "skipped", "declared skip: no internal signals")],
                 [f"cocotb tests failed: {LONG}"], seed=42)
    out = tmp_path / "junit.xml"
    regress.merge_junit([(42, px, [_call(NODE, s, "failed")])], out, multi_seed=False)
    root = ET.parse(out).getroot()
    cases = {(tc.get("classname"), tc.get("name")): tc for tc in root.iter("testcase")}
    # the launcher is replaced by its cocotb tests; the deselected launcher is dropped
    assert ("verif.l2reg.test_l2reg", "test_l2reg[small-icarus]") not in cases
    assert ("verif.l2reg.test_l2reg", "test_l2reg[default-icarus]") not in cases
    assert ("golden.tests.test_x", "test_a") in cases
    cls = "cocotb.l2reg.small.icarus"
    long_tc = cases[(cls, LONG)]                       # full name
    assert long_tc.find("failure").get("message") == "mismatch at 3"
    props = {p.get("name"): p.get("value") for p in long_tc.iter("property")}
    assert props["run_seed"] == "42" and props["test_seed"] == "7"
    assert props["replay"] == f"make sim CORE=l2reg SIM=icarus CFG=small SEED=42 TESTCASE={LONG}"
    assert cases[(cls, "sk")].find("skipped") is not None and cases[(cls, "ok")].find("failure") is None
    totals, failed = regress._junit_totals(out)
    assert totals["cocotb tests"] == {"passed": 1, "failed": 1, "errors": 0, "skipped": 1}
    assert f"{cls}::{LONG}" in failed


def test_merged_junit_timeout_is_an_error_case(tmp_path):
    px = tmp_path / "p.xml"
    px.write_text(PYTEST_XML)
    s = _summary("timeout", [], ["TIMEOUT: killed after 9 s"], seed=5)
    out = tmp_path / "junit.xml"
    regress.merge_junit([(5, px, [_call(NODE, s, "failed")]), (6, px, [])], out, multi_seed=True)
    root = ET.parse(out).getroot()
    err = [tc for tc in root.iter("testcase") if tc.get("name") == "simulation"]
    assert len(err) == 1 and err[0].get("classname") == "cocotb.l2reg.small.icarus.seed5"
    assert "TIMEOUT" in err[0].find("error").get("message")


def test_seeds_distinct_and_first_from_option():
    class A:
        seed, seeds = 99, 5
    s = regress._seeds(A)
    assert s[0] == 99 and len(set(s)) == 5
    A.seed, A.seeds = None, 1
    from verif.harness import commit_seed
    assert regress._seeds(A) == [commit_seed()]


def _make_args(cmd: str) -> list[str]:
    """`make sim K=V ...` -> the verif.regress arguments the Makefile passes."""
    out = []
    kv = dict(x.split("=", 1) for x in cmd.split()[2:])
    for k, opt in (("CORE", "--core"), ("SIM", "--sim"), ("CFG", "--cfg"), ("SEED", "--seed"),
                   ("TESTCASE", "--testcase")):
        if k in kv:
            out += [opt, kv[k]]
    return out


def _regress(tmp_path, name, args, extra_env):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLACCEL_", "PYTEST_", "VERIF_REGRESS"))}
    env.update(MLACCEL_BUILD_DIR=str(tmp_path / "build"), **extra_env)
    rep = tmp_path / name
    r = subprocess.run([sys.executable, "-m", "verif.regress", "--jobs", "1", "--reports", str(rep), *args],
                       cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
    return r, (rep / "summary.md").read_text(), ET.parse(rep / "junit.xml").getroot()


def _failure(root, out, test):
    """The failure of ``test`` in the merged JUnit, and the scoreboard's mismatch lines
    (transaction, lane, expected and actual values: they depend on the stimulus)."""
    for tc in root.iter("testcase"):
        if tc.get("classname") == "cocotb.l2reg.small.icarus" and tc.get("name") == test:
            f = tc.find("failure")
            assert f is not None, f"{test} did not fail"
            return re.findall(r"(m_axis_y: transaction \d+ .* expected .* got .*)$", out, re.M)
    raise AssertionError(f"no cocotb test case {test}")


@pytest.mark.skipif(shutil.which("iverilog") is None, reason="Icarus not installed")
def test_printed_replay_command_reproduces_a_regression_failure(tmp_path):
    """l2reg small on Icarus with the testbench's model made to disagree (F=3): the
    summary prints the replay command; running it gives the same failure, another seed
    another one."""
    bad = {"MLACCEL_PARAMS_OVERRIDE": '{"F": 3}'}
    r, summ, root = _regress(tmp_path, "r1", ["--core", "l2reg", "--sim", "icarus", "--cfg", "small",
                                              "--seed", "1234", "--testcase", "random_jobs"], bad)
    assert r.returncode != 0, summ
    assert "## RESULT: FAIL" in summ and "| 1234 " in summ, summ
    m = re.search(r"`(make sim [^`]*)`", summ)
    assert m, summ
    cmd = m.group(1)
    assert cmd == "make sim CORE=l2reg SIM=icarus CFG=small SEED=1234 TESTCASE=random_jobs", summ
    first = _failure(root, r.stdout, "random_jobs")
    assert first, "random_jobs must fail with F overridden, with scoreboard mismatches"
    r2, summ2, root2 = _regress(tmp_path, "r2", _make_args(cmd), bad)
    assert r2.returncode != 0 and _failure(root2, r2.stdout, "random_jobs") == first, summ2
    r3, summ3, root3 = _regress(tmp_path, "r3", _make_args(cmd.replace("SEED=1234", "SEED=1235")), bad)
    assert r3.returncode != 0 and _failure(root3, r3.stdout, "random_jobs") != first, summ3


def test_funcov_summary_fails_only_when_checked(tmp_path):
    """make test (unchecked) lists a core with unhit bins without 'FAIL' and adds no
    problem; make sim (checked) says FAIL and records the problem that fails the run."""
    from types import SimpleNamespace

    class Res:
        core, hit, declared, waived, unhit, ok = "x", 1, 2, 0, ["p/b"], False

        def verdict(self):
            return "FAIL: 1 unhit"

    fake = SimpleNamespace(report=lambda sel, check, out_dir, log: (1 if check else 0, [Res()]),
                           planned_cores=lambda: ["x"])
    problems = []
    lines = regress._funcov_report(fake, ["x"], tmp_path, False, "quick", problems)
    assert "- x: 1 unhit" in lines and not any("FAIL" in ln for ln in lines) and problems == []
    lines = regress._funcov_report(fake, ["x"], tmp_path, True, "", problems)
    assert "- x: FAIL: 1 unhit" in lines and len(problems) == 1 and "x: FAIL: 1 unhit" in problems[0]


# ---------------------------------------------------------------- make sim / make nightly split
def _row(core, pid, name=None):
    return f"verif/{core}/test_{core}.py::{name or 'test_' + core}[{pid}]"


SPLIT = {"efficiency": 1.0, "unit_s": 100.0, "rows": {
    _row("a", "default-verilator"): {"s": 100.0, "quick": True},
    _row("a", "big-verilator"): {"s": 900.0},
    _row("a", "mid-verilator"): {"s": 300.0},
    _row("a", "default-ghdl"): {"s": 500.0},      # the only GHDL row: make sim keeps it
    _row("a", "small-icarus"): {"s": 50.0},       # no quick Icarus row: the cheapest is kept
    _row("a", "large-icarus"): {"s": 400.0},
}}


def test_row_of_reads_core_and_simulator_from_the_test_id():
    assert regress.row_of(_row("l2reg", "small-icarus")) == ("l2reg", "icarus")
    assert regress.row_of("verif/pipearch_rt/test_pipearch_rt.py::test_pipearch_rt[verilator-pipearch_system-units1]") \
        == ("pipearch_rt", "verilator")
    assert regress.row_of("verif/cosmic_accelerator/test_cosmic_resources.py::test_tiling_rule_on_lone_multipliers[16-16]") \
        == ("cosmic_accelerator", "-")
    assert regress.row_of("rtl_gen/tests/test_fusesoc_targets.py::test_sim_verilator[maple]") == ("rtl_gen", "-")


def test_plan_moves_the_longest_slow_rows_until_make_sim_fits_and_keeps_every_core_simulator():
    # all rows: (100 + 2250) / 2 = 1175 s; budget 525 s: big (900) moves, default-ghdl is kept,
    # large-icarus (400) moves, and then (100 + 950) / 2 = 525 fits, so mid-verilator stays
    p = regress.plan(SPLIT, budget_s=525.0)
    assert p["nightly"] == sorted([_row("a", "big-verilator"), _row("a", "large-icarus")])
    assert p["keepers"] == sorted([_row("a", "default-ghdl"), _row("a", "small-icarus")])
    assert p["full_s"] == 1175.0 and p["sim_s"] == 525.0 and p["test_s"] == 100.0 and p["floor_s"] == 375.0
    assert regress.split_problems(SPLIT, {n: not v.get("quick") for n, v in SPLIT["rows"].items()}, p) == []
    # a budget under the floor: every row but the quick one and the keepers moves
    p0 = regress.plan(SPLIT, budget_s=10.0)
    assert set(p0["nightly"]) == set(SPLIT["rows"]) - {_row("a", "default-verilator")} - set(p0["keepers"])
    assert p0["sim_s"] == p0["floor_s"] == 375.0   # (100 + 100 + 500 + 50) / 2
    assert regress.split_problems(SPLIT, {n: not v.get("quick") for n, v in SPLIT["rows"].items()}, p0) == []
    # a test naming no simulator (a Yosys check, a sweep launcher) needs no keeper
    alone = {"efficiency": 1.0, "unit_s": 0.0, "rows": {"verif/a/test_r.py::test_synth[big]": {"s": 60.0}}}
    assert regress.plan(alone, budget_s=0.0)["nightly"] == ["verif/a/test_r.py::test_synth[big]"]


def test_split_problems_catch_each_broken_property():
    collected = {n: not v.get("quick") for n, v in SPLIT["rows"].items()}
    good = regress.plan(SPLIT, budget_s=525.0)
    new = _row("a", "new-icarus")
    probs = regress.split_problems(SPLIT, {**collected, new: True}, good)
    assert probs == [f"no cost in verif/row_costs.json: {new}"]
    gone = _row("a", "mid-verilator")
    assert regress.split_problems(SPLIT, {k: v for k, v in collected.items() if k != gone}, good) == \
        [f"cost of a row that is not collected: {gone}"]
    assert regress.split_problems(SPLIT, {**collected, _row("a", "default-verilator"): True}, good) == \
        [f"quick flag disagrees with the slow marker: {_row('a', 'default-verilator')}"]
    bad = {**good, "nightly": good["nightly"] + [_row("a", "default-verilator")]}
    assert regress.split_problems(SPLIT, collected, bad) == \
        [f"quick row left to the nightly run: {_row('a', 'default-verilator')}"]
    bad = {**good, "nightly": good["nightly"] + [_row("a", "default-ghdl")]}
    assert regress.split_problems(SPLIT, collected, bad) == ["a/ghdl: no row in make sim"]
    bad = {**good, "nightly": [_row("a", "large-icarus")], "sim_s": 975.0}   # big-verilator left in make sim
    assert regress.split_problems(SPLIT, collected, bad) == \
        [f"make sim estimated at 975 s > 525 s with 2 slow rows left that could move, e.g. {_row('a', 'big-verilator')}"]


def _collected_rows() -> dict:
    """Every test id pytest collects under verif/ (and the slow unit tests), -> marked slow."""
    code = ("import sys, pytest\n"
            "class P:\n"
            "    def pytest_collection_modifyitems(self, items):\n"
            "        for it in items:\n"
            "            slow = it.get_closest_marker('slow') is not None\n"
            "            n = it.nodeid\n"
            "            if not n.startswith('verif/tests/') and n.startswith('verif/') or slow:\n"
            "                print('ROW', int(slow), n)\n"
            "sys.exit(pytest.main(['--collect-only', '-q', '-p', 'no:xdist', '-p', 'no:cacheprovider', 'verif',\n"
            "                      'rtl_gen/tests/test_fusesoc_targets.py'], plugins=[P()]))\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLACCEL_", "PYTEST_", "VERIF_REGRESS"))}
    r = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    rows = {}
    for ln in r.stdout.splitlines():
        if ln.startswith("ROW "):
            _, slow, node = ln.split(" ", 2)
            rows[node] = slow == "1"
    return rows


def test_committed_split_keeps_make_test_and_every_core_simulator_in_make_sim():
    """The split of verif/row_costs.json for the rows pytest collects (verif/ and the slow
    FuseSoC target tests): quick flags = the slow marker, no quick row is nightly, every (core,
    simulator) pair keeps a row in make sim, and make sim is within budget unless only its
    floor is left.  A row without a cost (a test added since the table was written) stays in
    make sim and is only warned about; so is a cost of a row that no longer exists."""
    import warnings
    collected = _collected_rows()
    assert len(collected) > 250, len(collected)
    costs = regress.load_costs()
    p = regress.plan(costs)
    probs = regress.split_problems(costs, {n: s for n, s in collected.items() if n in costs["rows"]}, p)
    stale = [x for x in probs if x.startswith("cost of a row that is not collected")]
    for x in stale + [f"no cost in verif/row_costs.json (stays in make sim): {n}"
                      for n in sorted(set(collected) - set(costs["rows"]))]:
        warnings.warn(x)
    assert [x for x in probs if x not in stale] == []
    night, rows = set(p["nightly"]), set(costs["rows"])
    assert night <= rows and not any(costs["rows"][n].get("quick") for n in night)
    assert p["nightly"], "make sim runs every row: no nightly rows, yet it was over budget"


def test_collection_hook_leaves_nightly_rows_out_of_make_sim_and_orders_longest_first(monkeypatch):
    from types import SimpleNamespace
    monkeypatch.setattr(regress, "load_costs", lambda path=None: SPLIT)
    monkeypatch.setattr(regress, "BUDGET_S", 525.0)
    monkeypatch.setattr(regress.plan, "__defaults__", (525.0,))
    names = list(SPLIT["rows"]) + ["golden/tests/test_x.py::test_unit"]
    dropped = []
    config = SimpleNamespace(hook=SimpleNamespace(pytest_deselected=lambda items: dropped.extend(items)))
    for mode, want_out in (("sim", {_row("a", "big-verilator"), _row("a", "large-icarus")}), ("nightly", set())):
        monkeypatch.setenv(regress.MODE_ENV, mode)
        dropped.clear()
        items = [SimpleNamespace(nodeid=n) for n in names]
        regress.pytest_collection_modifyitems(None, config, items)
        assert {it.nodeid for it in dropped} == want_out
        order = [it.nodeid for it in items]
        assert set(order) == set(names) - want_out
        costs = [SPLIT["rows"].get(n, {}).get("s", 0.0) for n in order]
        assert costs == sorted(costs, reverse=True) and order[-1] == "golden/tests/test_x.py::test_unit"
    monkeypatch.delenv(regress.MODE_ENV)
    items = [SimpleNamespace(nodeid=n) for n in names]
    regress.pytest_collection_modifyitems(None, config, items)   # plain pytest: untouched
    assert [it.nodeid for it in items] == names


# ---------------------------------------------------------------- time and the object cache
def test_cpu_time_counts_child_processes_not_waiting():
    c0 = regress._cpu_now()
    subprocess.run([sys.executable, "-c", "x = 0\nfor i in range(4_000_000): x += i"], check=True)
    spent = regress._cpu_now() - c0
    assert spent >= 0.1, spent
    c0 = regress._cpu_now()
    subprocess.run([sys.executable, "-c", "import time; time.sleep(0.5)"], check=True)
    assert regress._cpu_now() - c0 < 0.5 * spent + 0.15   # a sleeping child costs (almost) no CPU


def test_rows_and_summary_show_build_and_cpu_time(tmp_path):
    c = {**_call(NODE, _summary("pass", [("a", "passed", "")])), "total_s": 41.6, "cpu_s": 57.2}
    (row,) = regress._rows([c], 42)
    assert (row["wall"], row["total"], row["cpu"]) == ("3", "42", "57")
    items = {NODE: {"wall_s": 42.0, "cpu_s": 57.0}, "golden/tests/test_x.py::test_a": {"wall_s": 0.5, "cpu_s": 0.4}}
    lines = regress._time_lines(100.0, 180.0, items, tmp_path, top=1)
    assert any("CPU 180 s" in ln and "CPU / 2 = 90 s" in ln for ln in lines)
    assert any(NODE in ln and "57" in ln for ln in lines) and not any("test_x" in ln for ln in lines)
    import json
    saved = json.loads((tmp_path / "row_times.json").read_text())
    assert saved["items"] == items and saved["cpu_s"] == 180.0


def test_objcache_uses_ccache_from_path_only(tmp_path):
    fake = tmp_path / "bin" / "ccache"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\nexec \"$@\"\n")
    fake.chmod(0o755)
    env = {"PATH": str(fake.parent)}
    assert regress._objcache(env) == str(fake) and env["OBJCACHE"] == str(fake)
    assert env["CCACHE_DIR"].endswith("ccache")
    env = {"PATH": str(tmp_path)}                       # no ccache: Verilator compiles as before
    assert regress._objcache(env) == "" and "OBJCACHE" not in env
    env = {"PATH": str(fake.parent), "OBJCACHE": ""}     # turned off by the caller
    assert regress._objcache(env) == "" and env["OBJCACHE"] == ""


def test_update_costs_takes_the_cpu_time_of_known_rows(tmp_path):
    import json
    table = tmp_path / "costs.json"
    table.write_text(json.dumps(SPLIT))
    times = tmp_path / "row_times.json"
    big, new = _row("a", "big-verilator"), _row("a", "new-icarus")
    times.write_text(json.dumps({"wall_s": 1, "cpu_s": 1, "items": {
        big: {"wall_s": 300.0, "cpu_s": 250.4}, new: {"wall_s": 9.0, "cpu_s": 8.0}}}))
    assert regress.update_costs(times, table) == 1
    got = json.loads(table.read_text())["rows"]
    assert got[big]["s"] == 250.4 and "row_times.json" in got[big]["src"] and new not in got
    assert got[_row("a", "mid-verilator")] == SPLIT["rows"][_row("a", "mid-verilator")]


def test_verilator_cxx_optimisation_default_and_override():
    env = {}
    assert regress._cxx_opt(env) == regress.VERILATOR_CXX_OPT == env["USER_CPPFLAGS"]
    env = {"USER_CPPFLAGS": ""}                          # empty: Verilator's own -Os
    assert regress._cxx_opt(env) == "" and env["USER_CPPFLAGS"] == ""
