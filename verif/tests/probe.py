"""A tiny DUT (``y = a + K``) and cocotb module for the regression-infrastructure tests.

Every test gets a fresh name, so its build folder ``build/sim/<name>/`` and its test
module ``test_<name>.py`` (in a temporary directory) are its own; the folder is removed
afterwards.  Environment flags of the cocotb module:

* ``PROBE_K``: the K the ``add_k`` test expects;
* ``PROBE_FAIL``: ``maybe_fail`` fails, naming a number drawn from its stimulus seed;
* ``PROBE_SKIP``: ``maybe_skip`` skips itself;
* ``PROBE_HANG``: ``maybe_hang`` never ends (a deadlock for the wall-time guard);
* ``PROBE_OUT``: file each test appends its seed and stimulus to.
"""
from __future__ import annotations

import itertools
import os
import shutil
from pathlib import Path

from verif import harness

_COUNT = itertools.count()

VERILOG = """module {name} (input wire [7:0] a, output wire [7:0] y);
  assign y = a + 8'd{k};
endmodule
"""

MODULE = '''import os

import cocotb
import numpy as np
import pytest
from cocotb.triggers import Timer

from verif.tb_common import sim_seed

SKIPS = {skips!r}


def _out(line):
    with open(os.environ["PROBE_OUT"], "a") as f:
        f.write(line + "\\n")


@cocotb.test()
async def add_k(dut):
    seed = sim_seed()
    vals = [int(v) for v in np.random.default_rng(seed).integers(0, 256, 6)]
    _out(f"add_k seed={{seed}} vals={{vals}}")
    k = int(os.environ.get("PROBE_K", "1"))
    for v in vals:
        dut.a.value = v
        await Timer(1, "ns")
        assert int(dut.y.value) == (v + k) % 256, f"a={{v}}: y={{int(dut.y.value)}}, expected {{(v + k) % 256}}"


@cocotb.test()
async def maybe_fail(dut):
    seed = sim_seed()
    v = int(np.random.default_rng(seed).integers(0, 1 << 30))
    _out(f"maybe_fail seed={{seed}} v={{v}}")
    await Timer(1, "ns")
    assert not os.environ.get("PROBE_FAIL"), f"deliberate failure, drew {{v}}"


@cocotb.test()
async def maybe_skip(dut):
    await Timer(1, "ns")
    if os.environ.get("PROBE_SKIP"):
        pytest.skip("probe skip")


@cocotb.test()
async def maybe_hang(dut):
    await Timer(1, "ns")
    if os.environ.get("PROBE_HANG"):
        while True:  # a deliberate deadlock: only the wall-time guard ends it
            await Timer(1, "ns")


if os.environ.get("PROBE_EXTRA") and "DUT_PARAMS" not in os.environ:
    @cocotb.test()
    async def declared_but_never_run(dut):  # defined in pytest's view only
        await Timer(1, "ns")
'''


class Probe:
    def __init__(self, tmp: Path, skips: dict | None = None, k: int = 1):
        self.name = f"probe_{os.getpid()}_{next(_COUNT)}"
        self.dir = tmp / self.name
        self.dir.mkdir(parents=True)
        self.src = self.dir / f"{self.name}.v"
        self.out = self.dir / "out.txt"
        self.write_rtl(k)
        (self.dir / f"test_{self.name}.py").write_text(MODULE.format(skips=skips or {}))

    def write_rtl(self, k: int):
        self.src.write_text(VERILOG.format(name=self.name, k=k))

    def run(self, testcase: str | None = None, **flags) -> dict:
        env = {"PYTHONPATH": str(self.dir), "PROBE_OUT": str(self.out)}
        env.update({k: str(v) for k, v in flags.items()})
        run_top = getattr(harness.run_top, "_real", harness.run_top)  # not a row of a regression
        return run_top(self.name, self.name, "default", "icarus", [self.src], [], {},
                               testcase=testcase, extra_env=env)

    def lines(self) -> list[str]:
        return self.out.read_text().splitlines() if self.out.exists() else []

    def build_dir(self) -> Path:
        return harness.BUILD / "sim" / self.name / "default" / "icarus"

    def cleanup(self):
        shutil.rmtree(harness.BUILD / "sim" / self.name, ignore_errors=True)
