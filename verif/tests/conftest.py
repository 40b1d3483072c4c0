import shutil

import pytest

from verif.tests.probe import Probe


@pytest.fixture
def probe(tmp_path):
    """Factory of probe DUTs (see probe.py); their build folders are removed afterwards."""
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
