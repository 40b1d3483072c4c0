"""Every cocotb test of the repository has a bounded simulated time (issue 11).

Imports each cocotb test module (``verif/<core>/test_*.py``, ``verif/<core>/*_tb.py``,
``scoreboards/tests/*_tb.py``) and requires every cocotb test in it to carry a
``timeout_time``, i.e. to be declared with :func:`verif.tb_common.sim_test`.  The
generated probe module of the harness tests (``verif/tests/probe.py``) is not scanned:
its deliberate hang exercises the wall-time guard.
"""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
from cocotb._decorators import TestGenerator as _CocotbTest

from rtl_gen.common.core import REPO

MODULES = sorted(set(REPO.glob("verif/*/test_*.py")) | set(REPO.glob("verif/*/*_tb.py"))
                 | set(REPO.glob("scoreboards/tests/*_tb.py")))
MODULES = [m for m in MODULES if m.parent.name != "tests" or m.parent.parent.name == "scoreboards"]


def _load(path: Path):
    sys.path.insert(0, str(path.parent))
    try:
        spec = importlib.util.spec_from_file_location(f"_bounds_{path.parent.name}_{path.stem}", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod
    finally:
        sys.path.remove(str(path.parent))


def unbounded_tests(path: Path) -> list[str]:
    mod = _load(path)
    tests = {n: t for n, t in vars(mod).items() if isinstance(t, _CocotbTest)}
    return sorted(n for n, t in tests.items() if t.timeout is None)


@pytest.mark.parametrize("path", MODULES, ids=[str(m.relative_to(REPO)) for m in MODULES])
def test_every_cocotb_test_is_bounded(path):
    unbounded = unbounded_tests(path)
    assert not unbounded, (f"{path.relative_to(REPO)}: cocotb tests without a simulated-time bound "
                           f"(declare them with verif.tb_common.sim_test): {', '.join(unbounded)}")


def test_scan_finds_the_tests():
    """The scan is not vacuous: the l2reg module exposes its suite with bounds."""
    mod = _load(REPO / "verif" / "l2reg" / "test_l2reg.py")
    tests = [t for t in vars(mod).values() if isinstance(t, _CocotbTest)]
    assert len(tests) >= 8 and all(t.timeout is not None for t in tests)


def test_scan_flags_an_unbounded_test(tmp_path):
    """Negative test: a plain ``@cocotb.test()`` is reported, a ``sim_test`` one is not."""
    m = tmp_path / "test_fake.py"
    m.write_text("import cocotb\nfrom verif.tb_common import sim_test\n\n\n"
                 "@cocotb.test()\nasync def hangs(dut):\n    pass\n\n\n"
                 "@sim_test(timeout_us=50)\nasync def bounded(dut):\n    pass\n")
    assert unbounded_tests(m) == ["hangs"]
