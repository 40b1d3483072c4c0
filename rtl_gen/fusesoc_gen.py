"""FuseSoC generator (GAPI 1.0) for the rtl_gen cores: ``ip/rtl_gen/rtl_gen.core``.

A user's core asks for a variant under ``generate:``::

    generate:
      l2reg_small:
        generator: rtl_gen
        parameters:
          core: l2reg              # any core of `python -m rtl_gen list`
          name: small_             # optional prefix of the top module / entity / VHDL package
          params: {LANES: 4, W: 16, F: 8}   # optional; omitted ones keep their defaults

and lists it under its target's ``generate: [l2reg_small]`` (plus ``mlaccel:tools:rtl_gen``
among its dependencies).  FuseSoC runs this script with the input YAML as its only
argument in a fresh directory; it writes the standalone package there (``rtl/*.v``,
``rtl/*.vhd``, README.md, and a ``.core`` named with the VLNV FuseSoC asked for, whose
``rtl_verilog`` fileset is used by the ``default`` target and ``rtl_vhdl`` by ``default_vhdl``).
An illegal parameter set fails the build with rtl_gen's message (parameter and legal range).
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _reexec_if_needed():
    """Run under an interpreter that has MyHDL (the repository's .venv when the ``python3``
    FuseSoC found lacks it) with PYTHONHASHSEED=0, so the netlist is byte-identical to
    ``python -m rtl_gen gen``."""
    venv_py = REPO / ".venv" / "bin" / "python"
    try:
        import myhdl  # noqa: F401
        have = True
    except ImportError:
        have = False
    if have and os.environ.get("PYTHONHASHSEED") == "0":
        return
    exe = sys.executable if have or not venv_py.exists() else str(venv_py)
    env = dict(os.environ, PYTHONHASHSEED="0", PYTHONDONTWRITEBYTECODE="1")
    os.execve(exe, [exe, str(Path(__file__).resolve())] + sys.argv[1:], env)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        sys.exit("usage: fusesoc_gen.py <generator input .yml>  (run by FuseSoC)")
    sys.path.insert(0, str(REPO))
    import warnings

    import yaml

    from rtl_gen.common.params import ParamError
    from rtl_gen.registry import cores

    cfg = yaml.safe_load(Path(argv[0]).read_text())
    par = cfg.get("parameters") or {}
    unknown = sorted(set(par) - {"core", "name", "params"})
    if unknown:
        sys.exit(f"rtl_gen generator: unknown key(s) {unknown}; use core, name, params")
    allc = cores()
    name = par.get("core")
    if name not in allc:
        sys.exit(f"rtl_gen generator: parameters.core={name!r} is not a core; known: {', '.join(allc)}")
    cd = allc[name]
    given = par.get("params") or {}
    prefix = par.get("name") or ""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            files = cd.write_variant(Path.cwd(), given, prefix, vlnv=cfg["vlnv"])
    except (ParamError, ValueError) as e:
        ranges = "; ".join(f"{p.name} in {p.lo}..{p.hi}" for p in cd.params.specs)
        sys.exit(f"rtl_gen generator ({cfg['vlnv']}): {e}\nlegal ranges of {name}: {ranges}")
    print(f"rtl_gen generator: {name} as {cd.variant_top(prefix)} -> {len(files)} files in {Path.cwd()}")
    return 0


if __name__ == "__main__":
    _reexec_if_needed()
    sys.exit(main())
