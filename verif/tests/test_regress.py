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
