import shutil

import pytest

from verif.tests.probe import Probe


@pytest.fixture
def probe(tmp_path, monkeypatch):
    """Factory of probe DUTs (see probe.py); their build folders are removed afterwards.
    Selections of an enclosing regression (make sim CFG=... etc.) do not apply to them."""
    for var in ("MLACCEL_CFG", "MLACCEL_TESTCASE", "MLACCEL_WALL_BUDGET_S", "MLACCEL_PARAMS_OVERRIDE"):
        monkeypatch.delenv(var, raising=False)
    if shutil.which("iverilog") is None:
        pytest.skip("Icarus not installed")
    made = []

    def make(**kw):
        p = Probe(tmp_path, **kw)
        made.append(p)
        return p
    yield make
    for p in made:
        p.cleanup()
