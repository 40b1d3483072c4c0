"""verif/funcov.py: cover-model export, merge over runs, testplan validation, --check.

Each test builds a throw-away core (unique name: cocotb-coverage's database is one per
process) in tmp_path: ``verif/<core>/covermodel.py``, ``testplan.yaml`` and a cocotb test
module; simulations are stood in for by subprocesses that import the model, sample and
export exactly as a simulation does (``MLACCEL_FUNCOV_*`` set as ``verif.harness`` sets it).
"""
from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import yaml

from rtl_gen.common.core import REPO
from verif import funcov

MODEL = '''
from verif.funcov import CoverModel
COV = CoverModel("{core}")
COV.point("mode", values=["a", "b", "c"], doc="mode")
COV.point("word", {{"zero": lambda v: v == 0, "neg": lambda v: v < 0, "big": lambda v: v > 100}})
COV.cross("mode_x_word", ["mode", "word"], ignore=[("c", None)])
'''
TESTS = '''
import cocotb

@cocotb.test()
async def t_one(dut):
    pass

@cocotb.test()
async def t_two(dut):
    pass
'''
PLAN = {"features": [
    {"id": "modes", "description": "every mode", "coverage": ["{c}.mode"], "tests": ["t_one"]},
    {"id": "words", "description": "word corners", "coverage": ["{c}.word", "{c}.mode_x_word"],
     "tests": ["t_one", "t_two"]}]}
SAMPLE = '''
import sys
sys.path.insert(0, {vd!r})
from verif import funcov
import importlib.util
spec = importlib.util.spec_from_file_location("m", {model!r}); m = importlib.util.module_from_spec(spec)
spec.loader.exec_module(m)
for mode, word in {pairs!r}:
    m.COV.sample_cross("mode_x_word", mode, word)
funcov.export_all()
'''


def _core(tmp_path: Path, waivers=(), plan=None) -> tuple[str, Path]:
    core = "fc" + uuid.uuid4().hex[:10]
    vd = tmp_path / "verif"
    d = vd / core
    d.mkdir(parents=True)
    (d / "covermodel.py").write_text(MODEL.format(core=core))
    (d / f"test_{core}.py").write_text(TESTS)
    p = plan or PLAN
    doc = {"core": core, "features": [dict(f, coverage=[c.format(c=core) for c in f["coverage"]])
                                      for f in p["features"]],
           "waivers": [dict(w, bin=w["bin"].format(c=core)) for w in waivers]}
    (d / "testplan.yaml").write_text(yaml.safe_dump(doc))
    return core, vd


def _run(core: str, vd: Path, data: Path, pairs, cfg="default", sim="verilator", seed=1):
    env = dict(os.environ, PYTHONPATH=str(REPO), **funcov.harness_env(core, cfg, sim, seed, None, None))
    env[funcov.ENV_DIR] = str(data)
    subprocess.run([sys.executable, "-c", SAMPLE.format(vd=str(REPO), model=str(vd / core / "covermodel.py"),
                                                      pairs=list(pairs))], env=env, check=True, timeout=120)


ALL = [("a", 0), ("b", -1), ("a", 101), ("a", -5), ("b", 0), ("b", 200)]   # every bin but mode:c


def _report(core, vd, data, tmp_path, check=True):
    return funcov.report([core], check=check, verif_dir=vd, root=data, out_dir=tmp_path / "out",
                         log=lambda *_: None)


def test_export_file_per_run_and_unhit_bin_fails_check(tmp_path):
    core, vd = _core(tmp_path)
    data = tmp_path / "data"
    _run(core, vd, data, ALL)
    files = funcov.data_files(core, data)
    assert [f.name for f in files] == ["default-verilator-1.yml"]
    rc, res = _report(core, vd, data, tmp_path)
    r = next(x for x in res if x.core == core)
    assert rc == 1 and r.unhit == [("mode", "c")], r.unhit          # mode:c never sampled
    md = (tmp_path / "out" / f"{core}.md").read_text()
    assert f"{core}.mode:c" in md and "**UNHIT**" in md
    assert core in (tmp_path / "out" / "summary.md").read_text()
    # the same data without --check: written, exit 0
    assert _report(core, vd, data, tmp_path, check=False)[0] == 0


def test_waived_bin_does_not_fail_and_reason_is_shown(tmp_path):
    core, vd = _core(tmp_path, waivers=[{"bin": "{c}.mode:c", "reason": "mode c is reserved in this config"}])
    data = tmp_path / "data"
    _run(core, vd, data, ALL)
    rc, res = _report(core, vd, data, tmp_path)
    r = next(x for x in res if x.core == core)
    assert rc == 0 and r.waived == 1 and not r.unhit, r.verdict()
    assert "mode c is reserved in this config" in (tmp_path / "out" / f"{core}.md").read_text()


def test_merge_over_two_runs_unions_hits(tmp_path):
    core, vd = _core(tmp_path, waivers=[{"bin": "{c}.mode:c", "reason": "reserved"}])
    data = tmp_path / "data"
    _run(core, vd, data, ALL[:3], cfg="default", seed=1)           # hits zero, neg, big only partly
    _run(core, vd, data, ALL[3:], cfg="small", sim="icarus", seed=2)
    model = funcov.load_model(core, vd)
    one, _ = funcov.merge(core, model, funcov.data_files(core, data)[:1])
    assert one["mode_x_word"]["b*big"] == 0                         # only in the second run
    rc, res = _report(core, vd, data, tmp_path)
    assert rc == 0, next(x for x in res if x.core == core).verdict()
    hits, _ = funcov.merge(core, model, funcov.data_files(core, data))
    assert hits["mode"] == {"a": 3, "b": 3, "c": 0}                  # summed over both runs
    assert hits["mode_x_word"]["b*big"] == 1 and hits["mode_x_word"]["a*zero"] == 1


def test_plan_naming_missing_point_bin_or_test_fails(tmp_path):
    bad_point = {"features": [dict(PLAN["features"][0]), dict(PLAN["features"][1],
                 coverage=["{c}.word", "{c}.mode_x_word", "{c}.nosuch"])]}
    bad_bin = {"features": [dict(PLAN["features"][0], coverage=["{c}.mode:zz"]), PLAN["features"][1]]}
    bad_test = {"features": [dict(PLAN["features"][0], tests=["t_missing"]), PLAN["features"][1]]}
    missing_pt = {"features": [PLAN["features"][0], dict(PLAN["features"][1], coverage=["{c}.word"])]}
    for plan, msg in ((bad_point, "nosuch does not exist"), (bad_bin, "bin 'zz' does not exist"),
                      (bad_test, "no cocotb test named t_missing"), (missing_pt, "no feature names")):
        core, vd = _core(tmp_path, plan=plan)
        data = tmp_path / "data"
        _run(core, vd, data, ALL + [("c", 0)])
        with pytest.raises(funcov.PlanError, match=msg):
            funcov.load_plan(core, vd)
        rc, res = _report(core, vd, data, tmp_path)
        assert rc == 1 and next(x for x in res if x.core == core).errors


def test_waiver_needs_reason_and_existing_bin(tmp_path):
    for w, msg in (({"bin": "{c}.mode:c", "reason": " "}, "no reason"),
                   ({"bin": "{c}.mode:q", "reason": "x"}, "does not exist"),
                   ({"bin": "{c}.mode", "reason": "x"}, "names no bin")):
        core, vd = _core(tmp_path, waivers=[w])
        with pytest.raises(funcov.PlanError, match=msg):
            funcov.load_plan(core, vd)


def test_no_data_fails_check(tmp_path):
    core, vd = _core(tmp_path)
    rc, res = _report(core, vd, tmp_path / "empty", tmp_path)
    r = next(x for x in res if x.core == core)
    assert rc == 1 and r.verdict() .startswith("ERROR") and "no coverage data" in r.errors[0]


def test_run_ids_and_stale_export_removed(tmp_path, monkeypatch):
    monkeypatch.setenv(funcov.ENV_DIR, str(tmp_path))
    assert funcov.run_id("small", "icarus", 7) == "small-icarus-7"
    assert funcov.run_id("d", "ghdl", 7, tag="x").startswith("d-ghdl-x-7")
    assert funcov.run_id("d", "ghdl", 7, testcase="t1") != funcov.run_id("d", "ghdl", 7, testcase="t2")
    old = tmp_path / "corex" / "d-verilator-3.yml"
    other = tmp_path / "corey" / "benchb-d-verilator-3.yml"
    for f in (old, other):
        f.parent.mkdir(parents=True)
        f.write_text("{}")
    env = funcov.harness_env("corex", "d", "verilator", 3, None, None)
    assert not old.exists() and other.exists()                     # only this bench's run
    funcov.harness_env("benchb", "d", "verilator", 3, None, None)
    assert not other.exists()
    monkeypatch.setenv(funcov.ENV_RUN, env[funcov.ENV_RUN])
    monkeypatch.setenv(funcov.ENV_BENCH, "benchb")
    assert funcov.export_path("corex") == tmp_path / "corex" / "benchb-d-verilator-3.yml"


def test_redeclaring_a_point_with_other_bins_fails():
    m = funcov.CoverModel("fc" + uuid.uuid4().hex[:10])
    m.point("p", values=[1, 2])
    assert m.point("p", values=[1, 2]) is m.points["p"]
    with pytest.raises(ValueError, match="different bins"):
        m.point("p", values=[1, 2, 3])
    with pytest.raises(ValueError):
        m.point("q.r", values=[1])


def test_regress_checks_only_the_full_run(tmp_path, monkeypatch):
    from verif import regress
    core, vd = _core(tmp_path)
    data = tmp_path / "data"
    _run(core, vd, data, ALL)                                      # mode:c unhit
    real = funcov.report
    monkeypatch.setattr(funcov, "planned_cores", lambda verif_dir=None: [core])
    monkeypatch.setattr(funcov, "report", lambda cores, check, out_dir, log: real(
        cores, check, verif_dir=vd, root=data, out_dir=out_dir, log=log))
    problems: list = []
    lines = regress._funcov_report(funcov, [], tmp_path / "rep", check=False, why="quick", problems=problems)
    assert not problems and any("not checked: quick" in x for x in lines)
    lines = regress._funcov_report(funcov, [], tmp_path / "rep", check=True, why="", problems=problems)
    assert problems and "1 unhit" in problems[0]
    assert (tmp_path / "rep" / "coverage" / "functional" / f"{core}.md").is_file()
