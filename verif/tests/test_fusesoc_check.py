"""verif/fusesoc_cocotb.py check: skips are counted as skips and fail unless declared."""
from __future__ import annotations

import subprocess
import sys

import pytest

from rtl_gen.common.core import REPO

HELPER = REPO / "verif" / "fusesoc_cocotb.py"


def _xml(passed=(), skipped=(), failed=()):
    cases = [f'<testcase name="{n}"/>' for n in passed]
    cases += [f'<testcase name="{n}"><skipped message="Test was skipped"/></testcase>' for n in skipped]
    cases += [f'<testcase name="{n}"><failure message="x"/></testcase>' for n in failed]
    return f"<testsuites><testsuite>{''.join(cases)}</testsuite></testsuites>"


def _check(tmp_path, xml: str, skips: str | None):
    repo = tmp_path / "repo"
    mod = repo / "verif" / "fakecore" / "test_fakecore.py"
    mod.parent.mkdir(parents=True)
    mod.write_text("import cocotb\n" + (f"SKIPS = {skips}\n" if skips is not None else ""))
    res = tmp_path / "results.xml"
    res.write_text(xml)
    return subprocess.run([sys.executable, str(HELPER), "check", "fakecore", "--results", str(res)],
                          capture_output=True, text=True, cwd=tmp_path,
                          env={"MLACCEL_REPO": str(repo), "PATH": "/usr/bin:/bin"})


T8 = [f"t{i}" for i in range(8)]


@pytest.mark.parametrize("xml,skips,ok,expect", [
    # 7 of 8 skipped, nothing declared: the old hook read "8 tests, pass"
    (_xml(T8[:1], T8[1:]), None, False, "7 undeclared skip(s)"),
    (_xml(T8[:1], T8[1:]), "{}", False, "1 passed, 0 failed, 7 skipped"),
    (_xml(["a"], ["b"]), '{"b": "needs a feature Icarus lacks"}', True, "1 declared skip(s)"),
    (_xml(["a"], ["b"]), '{"b": ""}', False, "undeclared"),                      # a reason is required
    (_xml(["a"], ["b"]), '{"b": {"reason": "r", "sims": ["verilator"]}}', False, "undeclared"),
    (_xml(["a"], ["b"]), '{"b": {"reason": "r", "sims": ["icarus"]}}', True, "PASS"),
    (_xml([], ["b"]), '{"b": "r"}', False, "no cocotb test passed"),             # skips only
    (_xml(["a"], ["b"], ["c"]), '{"b": "r"}', False, "failed: c"),
    (_xml(["a", "b"]), None, True, "2 cocotb tests passed"),
], ids=["7of8-undeclared", "7of8-empty-SKIPS", "declared", "no-reason", "other-sim",
        "this-sim", "only-skips", "failure", "no-skips"])
def test_check_counts_skips(tmp_path, xml, skips, ok, expect):
    r = _check(tmp_path, xml, skips)
    assert (r.returncode == 0) == ok, r.stdout + r.stderr
    assert expect in r.stdout, r.stdout


def test_declared_skips_of_pipearch_rm_are_readable():
    sys.path.insert(0, str(HELPER.parent))
    try:
        import fusesoc_cocotb as fc
    finally:
        sys.path.remove(str(HELPER.parent))
    skips = fc.declared_skips(REPO / "verif" / "pipearch_rm" / "test_pipearch_rm.py")
    assert fc.skip_reason(skips, "cycles_saturate", "verilator")
    assert fc.skip_reason(skips, "cycles_saturate", "icarus") is None
