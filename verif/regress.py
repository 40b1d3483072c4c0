"""Regression driver behind ``make test`` and ``make sim``.

    python -m verif.regress [--quick] [--jobs N|auto] [--sim S ...] [--core C ...]

* ``--quick`` (``make test``): ``-m "not slow"`` -- golden-model, generator and
  scoreboard unit tests plus the quick cocotb combinations of every core.  Without it
  (``make sim``) everything runs, including the ``slow`` parameter sets.
* ``--jobs``: pytest-xdist workers (``-n``; ``auto`` = one per CPU, ``1`` = no xdist).
* JUnit XML goes to ``reports/junit.xml``; the summary table to stdout and
  ``reports/summary.md``.

Narrowing (``--core``/``--sim``, ``make sim CORE=l2reg SIM=icarus``)
--------------------------------------------------------------------
Narrowing selects *simulations*: once either option is given, only the cocotb
launchers under ``verif/`` run (the golden/generator/scoreboard unit tests do not
depend on a core or simulator and run in un-narrowed runs).

* ``--core C`` passes the path ``verif/C`` to pytest (C must be a registered core
  with a ``verif/C`` directory; repeat the option or use commas for several).
* ``--sim S`` adds ``-k`` on the test ids.  The launchers are parametrised
  ``[<cfg>-<sim>]`` (``verif.harness.matrix``), so ``-k verilator`` / ``-k icarus``
  select them; GHDL runs the VHDL netlist in ``test_<core>_vhdl_smoke``, so
  ``--sim ghdl`` is ``-k "ghdl or vhdl_smoke"``.  Several ``--sim`` are or-ed.

A selection that collects no test (pytest exit code 5) is a failure, never a pass.

Reporting
---------
Every ``verif.harness.run_top`` call (``run_core`` goes through it) made during the
run is recorded (this module
is loaded into pytest and its workers as a plugin, ``-p verif.regress``, and wraps
``run_top`` without changing its behaviour).  Each call is a row of the table:
core, config, simulator, cocotb tests, result and simulated cycles, read from the
``build/sim/<core>/<cfg>/<sim>/summary.json`` the harness writes (stale ones in the
selection are deleted before the run).  A call whose summary is missing is marked
``MISSING`` and fails the run; a call that pytest skipped (simulator not installed)
is marked ``SKIPPED`` with the reason and is never counted as passed.  The unit-test
suites are totalled from the JUnit XML (passed / failed / errors / skipped).

Simulators not on this machine are listed with the reason.  Locally the run goes on
with what is there; under CI (``CI=true``), where the machine kind has all three,
a missing simulator fails the run unless ``--allow-missing-sims`` is given.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
REPORTS = REPO / "reports"
SIM_ROOT = REPO / "build" / "sim"
RUN_ENV = "VERIF_REGRESS_RUN_DIR"
SIMS = ("verilator", "icarus", "ghdl")
SIM_K = {"verilator": "verilator", "icarus": "icarus", "ghdl": "ghdl or vhdl_smoke"}
SUITES = [  # (JUnit classname prefix, label)
    ("golden.", "golden models"),
    ("rtl_gen.", "generators"),
    ("scoreboards.", "scoreboards"),
    ("verif.", "cocotb launchers"),
]


# --------------------------------------------------------------------------------
# pytest plugin side (runs in the pytest process and every xdist worker)
# --------------------------------------------------------------------------------
def _record(entry: dict):
    run_dir = os.environ.get(RUN_ENV)
    if not run_dir:
        return
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    with open(Path(run_dir) / f"calls-{worker}.jsonl", "a") as fh:
        fh.write(json.dumps(entry) + "\n")


def pytest_configure(config):
    """Wrap verif.harness.run_top (which run_core calls) so every simulation call is
    recorded.  Runs before collection, so ``from verif.harness import run_top`` in test
    modules binds the wrapper."""
    if not os.environ.get(RUN_ENV):
        return
    import verif.harness as h

    if getattr(h.run_top, "_regress_wrapped", False):
        return
    real = h.run_top

    def run_top(name, toplevel, cfg, sim, sources, build_args, params, testcase=None,
                extra_env=None, tag=None):
        node = os.environ.get("PYTEST_CURRENT_TEST", "").rsplit(" (", 1)[0]
        entry = {"node": node, "core": name, "cfg": cfg, "sim": sim, "tag": tag or "",
                 "testcase": testcase or "", "start": time.time()}
        try:
            res = real(name, toplevel, cfg, sim, sources, build_args, params, testcase=testcase,
                       extra_env=extra_env, tag=tag)
        except BaseException as e:  # noqa: BLE001 -- recorded and re-raised unchanged
            skipped = type(e).__name__ == "Skipped"
            entry["outcome"] = "skipped" if skipped else "failed"
            entry["reason"] = str(getattr(e, "msg", None) or e).splitlines()[0][:200] if str(e) else type(e).__name__
            _record(entry)
            raise
        entry["outcome"] = "passed"
        _record(entry)
        return res

    run_top._regress_wrapped = True
    run_top.__doc__ = real.__doc__
    h.run_top = run_top


def pytest_collection_finish(session):
    if os.environ.get(RUN_ENV):  # after -m/-k deselection
        _record({"collected": len(session.items), "worker": os.environ.get("PYTEST_XDIST_WORKER", "main")})


# --------------------------------------------------------------------------------
# driver side
# --------------------------------------------------------------------------------
def _split(values):
    out = []
    for v in values or []:
        out += [x.strip() for x in v.split(",") if x.strip()]
    return out


def _known_cores() -> list[str]:
    from rtl_gen.registry import cores
    return list(cores())


def _cycles_from_xml(xml_path: Path) -> int | None:
    """Simulated cycles from cocotb's results XML (``sim_time_duration`` properties)."""
    from verif.harness import CLOCK_NS
    try:
        root = ET.parse(xml_path).getroot()
    except (OSError, ET.ParseError):
        return None
    total_ns = 0.0
    scale = {"fs": 1e-6, "ps": 1e-3, "ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}
    for tc in root.iter("testcase"):
        props = {p.get("name"): p.get("value") for p in tc.iter("property")}
        if "sim_time_duration" in props:
            total_ns += float(props["sim_time_duration"]) * scale.get(props.get("sim_time_unit", "ns"), 1.0)
        elif tc.get("sim_time_ns"):
            total_ns += float(tc.get("sim_time_ns"))
    return int(total_ns / CLOCK_NS)


def _build_dir(c: dict) -> Path:
    return SIM_ROOT / c["core"] / c["cfg"] / (c["sim"] + (f"-{c['tag']}" if c["tag"] else ""))


def _clear_stale(core_sel: list[str], sim_sel: list[str]) -> int:
    n = 0
    for f in SIM_ROOT.glob("*/*/*/summary.json"):
        core, sim_dir = f.parts[-4], f.parts[-2]
        if core_sel and core not in core_sel:
            continue
        if sim_sel and sim_dir.split("-")[0] not in sim_sel:
            continue
        f.unlink(missing_ok=True)
        n += 1
    return n


def _junit_totals(path: Path):
    totals = {label: {"passed": 0, "failed": 0, "errors": 0, "skipped": 0} for _, label in SUITES}
    totals["other"] = {"passed": 0, "failed": 0, "errors": 0, "skipped": 0}
    failed_ids = []
    if not path.exists():
        return totals, failed_ids
    root = ET.parse(path).getroot()
    for tc in root.iter("testcase"):
        cls = tc.get("classname", "")
        label = next((lab for pre, lab in SUITES if cls.startswith(pre)), "other")
        if tc.find("failure") is not None:
            kind = "failed"
        elif tc.find("error") is not None:
            kind = "errors"
        elif tc.find("skipped") is not None:
            kind = "skipped"
        else:
            kind = "passed"
        totals[label][kind] += 1
        if kind in ("failed", "errors"):
            failed_ids.append(f"{cls}::{tc.get('name')}")
    return totals, failed_ids


def _load_calls(run_dir: Path):
    calls, collected = [], 0
    for f in sorted(run_dir.glob("calls-*.jsonl")):
        for line in f.read_text().splitlines():
            if not line.strip():
                continue
            e = json.loads(line)
            if "collected" in e:
                collected = max(collected, e["collected"])
            else:
                calls.append(e)
    return calls, collected


def _rows(calls, t0):
    rows = []
    for c in sorted(calls, key=lambda c: (c["core"], c["cfg"], SIMS.index(c["sim"]) if c["sim"] in SIMS else 9, c["tag"])):
        bd = _build_dir(c)
        summ = bd / "summary.json"
        sim = c["sim"] + (f" ({c['tag']})" if c["tag"] else "")
        if c["testcase"]:
            sim += f" [{c['testcase']}]"
        row = {"core": c["core"], "cfg": c["cfg"], "sim": sim, "tests": "-", "result": "",
               "cycles": "-", "bad": False, "skipped": False}
        if c["outcome"] == "skipped":
            row.update(result=f"SKIPPED: {c.get('reason', '')}", skipped=True)
        elif summ.exists() and summ.stat().st_mtime >= t0:
            s = json.loads(summ.read_text())
            cyc = s.get("cycles") or 0
            if not cyc:
                cyc = _cycles_from_xml(bd / "results.xml") or 0
            nfail = s.get("failures", 0)
            row.update(tests=str(s.get("tests", 0)), cycles=str(cyc))
            if s.get("tests", 0) == 0:
                row.update(result="FAIL (no cocotb test ran)", bad=True)
            elif nfail:
                bad = [n for n, ok in s.get("cases", []) if not ok]
                row.update(result=f"FAIL {nfail}: {', '.join(bad)[:80]}", bad=True)
            elif c["outcome"] != "passed":
                row.update(result=f"FAIL: {c.get('reason', '')[:80]}", bad=True)
            else:
                row.update(result="pass")
        else:
            row.update(result=f"MISSING results ({c.get('reason', 'no summary.json')[:80]})", bad=True)
        rows.append(row)
    return rows


def _table(headers, rows):
    w = [max(len(str(h)), *(len(str(r[i])) for r in rows)) if rows else len(str(h)) for i, h in enumerate(headers)]
    fmt = "| " + " | ".join(f"{{:{x}}}" for x in w) + " |"
    out = [fmt.format(*headers), "|" + "|".join("-" * (x + 2) for x in w) + "|"]
    out += [fmt.format(*[str(c) for c in r]) for r in rows]
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m verif.regress", description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help='skip tests marked slow (-m "not slow")')
    ap.add_argument("--jobs", "-j", default="auto", help="pytest-xdist workers: N or auto (1 = no xdist)")
    ap.add_argument("--sim", action="append", default=[], help=f"narrow to simulator(s): {', '.join(SIMS)}")
    ap.add_argument("--core", action="append", default=[], help="narrow to core(s): verif/<core>")
    ap.add_argument("--allow-missing-sims", action="store_true",
                    help="under CI=true, do not fail when a simulator is not installed")
    ap.add_argument("pytest_args", nargs="*", help="extra pytest arguments (after --)")
    a = ap.parse_args(argv)

    sims, core_sel = _split(a.sim), _split(a.core)
    bad = [s for s in sims if s not in SIMS]
    if bad:
        print(f"regress: unknown simulator(s) {', '.join(bad)}; known: {', '.join(SIMS)}", file=sys.stderr)
        return 2
    if core_sel:
        known = _known_cores()
        bad = [c for c in core_sel if c not in known or not (REPO / "verif" / c).is_dir()]
        if bad:
            with_tb = [c for c in known if (REPO / "verif" / c).is_dir()]
            print(f"regress: unknown core(s) or no verif/<core> testbench: {', '.join(bad)}; "
                  f"cores with testbenches: {', '.join(with_tb)}", file=sys.stderr)
            return 2
    if a.jobs != "auto" and not (a.jobs.isdigit() and int(a.jobs) >= 1):
        print(f"regress: --jobs must be a positive integer or auto, got {a.jobs!r}", file=sys.stderr)
        return 2

    from verif.harness import sim_available
    missing = {s: why for s in SIMS if (why := sim_available(s))}

    REPORTS.mkdir(exist_ok=True)
    junit = REPORTS / "junit.xml"
    junit.unlink(missing_ok=True)
    run_dir = REPO / "build" / "regress" / f"run-{os.getpid()}"
    shutil.rmtree(run_dir, ignore_errors=True)
    run_dir.mkdir(parents=True)
    cleared = _clear_stale(core_sel, sims)

    cmd = [sys.executable, "-m", "pytest", "-p", "verif.regress", f"--junitxml={junit}",
           "-o", "junit_family=xunit1", "-rfEs", "--durations=15", "-q"]
    if a.jobs != "1":
        cmd += ["-n", a.jobs, "--dist", "worksteal"]
    if a.quick:
        cmd += ["-m", "not slow"]
    if sims:
        cmd += ["-k", " or ".join(f"({SIM_K[s]})" for s in sims)]
    if core_sel:
        cmd += [f"verif/{c}" for c in core_sel]
    elif sims:
        cmd += ["verif"]
    cmd += a.pytest_args

    env = dict(os.environ)
    env[RUN_ENV] = str(run_dir)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    print("regress:", " ".join(repr(c) if " " in c else c for c in cmd), flush=True)
    print(f"regress: cleared {cleared} stale summary.json file(s)", flush=True)
    t0 = time.time()
    rc = subprocess.call(cmd, cwd=REPO, env=env)
    elapsed = time.time() - t0

    calls, collected = _load_calls(run_dir)
    rows = _rows(calls, t0 - 1.0)
    totals, failed_ids = _junit_totals(junit)
    problems = []
    if rc == 5:
        problems.append("pytest collected no tests for this selection (exit code 5): "
                        f"quick={a.quick} core={core_sel or 'all'} sim={sims or 'all'}; "
                        "check the --core/--sim names against the test ids (`pytest --collect-only -q verif`)")
    elif rc != 0:
        problems.append(f"pytest exited with code {rc}" + (f" ({len(failed_ids)} failed/errored tests)" if failed_ids else ""))
    bad_rows = [r for r in rows if r["bad"]]
    if bad_rows:
        problems.append(f"{len(bad_rows)} simulation row(s) failed or have no results")
    if rc == 0 and sims and calls and all(r["skipped"] for r in rows):
        problems.append(f"every selected simulation was skipped: nothing was verified on {', '.join(sims)}")
    if rc == 0 and (sims or core_sel) and not calls:
        problems.append("the selection ran no simulation at all")
    ci = os.environ.get("CI", "").lower() in ("1", "true", "yes")
    relevant_missing = {s: w for s, w in missing.items() if not sims or s in sims}
    if relevant_missing and ci and not a.allow_missing_sims:
        problems.append("CI=true and simulator(s) missing: " + ", ".join(relevant_missing)
                        + " (the CI machine kind has all three; pass --allow-missing-sims to accept)")
    if sims and any(s in missing for s in sims) and not problems:
        problems.append("requested simulator(s) not installed: " + ", ".join(s for s in sims if s in missing))

    from verif.plots import render
    figures = render(REPORTS, since=t0 - 1.0)

    # ---------------------------------------------------------------- summary
    mode = "quick (-m 'not slow')" if a.quick else "full"
    lines = [f"# Regression summary ({mode})", "",
             f"- selection: core={','.join(core_sel) or 'all'} sim={','.join(sims) or 'all'}, "
             f"jobs={a.jobs}, {collected} tests collected, wall time {elapsed:.0f} s",
             f"- pytest exit code {rc}; JUnit XML: reports/junit.xml", ""]
    lines += ["## Simulations", ""]
    if rows:
        lines += _table(["core", "config", "simulator", "tests", "result", "cycles"],
                        [[r["core"], r["cfg"], r["sim"], r["tests"], r["result"], r["cycles"]] for r in rows])
    else:
        lines += ["(no simulation ran)"]
    nsk = sum(r["skipped"] for r in rows)
    npass = sum(r["result"] == "pass" for r in rows)
    lines += ["", f"{len(rows)} simulation runs: {npass} passed, {len(bad_rows)} failed/missing, {nsk} skipped "
              "(skipped runs are not counted as passed)", ""]
    if figures:
        lines += ["## Figures", ""] + [f"- reports/{f.name}" for f in figures] + [""]
    lines += ["## Simulators", ""]
    for s in SIMS:
        if s in missing:
            lines.append(f"- {s}: SKIPPED -- {missing[s]}")
        elif sims and s not in sims:
            lines.append(f"- {s}: available, not selected (--sim)")
        else:
            lines.append(f"- {s}: available")
    lines += ["", "## pytest totals", ""]
    trows = [[lab, t["passed"], t["failed"], t["errors"], t["skipped"]]
             for lab, t in totals.items() if any(t.values()) or lab != "other"]
    lines += _table(["suite", "passed", "failed", "errors", "skipped"], trows)
    if failed_ids:
        lines += ["", "Failed tests:"] + [f"- {f}" for f in failed_ids[:50]]
    lines += [""]
    if problems:
        lines += ["## RESULT: FAIL", ""] + [f"- {p}" for p in problems]
    else:
        lines += ["## RESULT: PASS"]
    text = "\n".join(lines) + "\n"
    (REPORTS / "summary.md").write_text(text)
    print("\n" + "=" * 78 + "\n" + text + "=" * 78)
    shutil.rmtree(run_dir, ignore_errors=True)
    if problems:
        return rc if rc not in (0, 5) else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
