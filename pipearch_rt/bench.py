"""``python -m pipearch_rt.bench`` (part of ``make bench``): PipeArch section 9.2 in shape.

On the fast back end (``pipearch_rt.backend.FastBackend``, costs from the RTL):

* ``fig9``: the mixed workload -- ``N`` jobs of each of three lengths submitted at once
  to 1, 2 and 4 units under FCFS, RR and SJF; completion-time histograms (Figure 9) and
  median / total completion; asserts SJF's median is well below FCFS's and RR's;
* ``table7``: jobs of two lengths on 2 units, percentiles and total with and without
  migration per policy (Table 7);
* ``fig10``: total completion against the RR time slot (Figure 10);
* ``bandwidth``: aggregate bytes per cycle against the shared memory's bandwidth as
  units are added (streamed SGD, the most bandwidth-hungry program);
* ``rtl``: the RTL comparison recorded by ``verif/pipearch_rt`` (``mixed_workloads``:
  the same runtime on the RTL and on the fast model; completion order -- required equal
  for FCFS, SJF and priority, reported for RR -- and cycles; ``bandwidth``), run here
  through its pytest launcher unless ``--no-rtl``.

Writes ``reports/pipearch_rt_bench.md``, ``reports/pipearch_rt_bench.json`` and the
PNGs ``reports/pipearch_rt_fig9.png``, ``..._table7.png``, ``..._fig10.png``,
``..._bandwidth.png``.  Every run's models are checked bit for bit against the golden
training functions.  Exit code 1 when a check or an assertion fails.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from .backend import FastBackend, run_sync
from .jobs import JobSpec, pu_config
from .runtime import Runtime
from . import workloads as W

REPO = Path(__file__).resolve().parents[1]
REPORTS = REPO / "reports"
BENCH_DIR = REPO / "build" / "bench"
MEM = 8 << 20
SLOT = 2000                           # RR time slot of fig9/table7 (cycles)
EPOCHS = {"short": 1, "medium": 2, "long": 4}
SJF_MEDIAN_RATIO = 0.6                # SJF median must be below this fraction of FCFS's and RR's


def serve(specs, policy, units, slot=None, migration=True, mem_bw=None, **kw):
    cfg = pu_config()
    rt = Runtime(FastBackend(cfg, units, MEM, mem_bw=mem_bw), policy, slot=slot, migration=migration, **kw)
    for s in specs:
        rt.submit(s)
    rep = run_sync(rt.run())
    for t in rep.threads:
        if t.state != "finished":
            raise AssertionError(f"{t.spec.name}: {t.state} {t.reason}")
        if not np.array_equal(t.model, t.built.golden()):
            raise AssertionError(f"{policy}/{units}: {t.spec.name}: model differs from the golden run")
    return rep


def standalone_cycles(specs):
    return {s.name: serve([s.with_(arrival=0)], "fcfs", 1).end for s in specs}


def summary(rep):
    c = rep.completions
    return {"median": float(np.median(c)), "p75": float(np.percentile(c, 75)), "p99": float(np.percentile(c, 99)),
            "total": rep.total, "switches": rep.switches,
            "migrations": int(sum(t.migrations for t in rep.threads))}


def fig9(n_per_kind, units_list=(1, 2, 4)):
    specs = W.mix(n_per_kind, seed=9, epochs=EPOCHS)
    alone = standalone_cycles(specs)
    res = {"jobs": len(specs), "slot": SLOT, "standalone": alone, "runs": {}}
    for u in units_list:
        for pol in ("fcfs", "rr", "sjf"):
            rep = serve(specs, pol, u, SLOT if pol == "rr" else None)
            res["runs"][f"{pol}/{u}"] = {**summary(rep), "completions": rep.completions.tolist()}
    return res


def table7(n_per_kind):
    specs = W.mix(n_per_kind, seed=7, kinds=("short", "long"), epochs=EPOCHS)
    out = {"jobs": len(specs), "units": 2, "slot": SLOT}
    for mig in (False, True):
        for pol in ("fcfs", "rr", "sjf"):
            rep = serve(specs, pol, 2, SLOT if pol == "rr" else None, migration=mig)
            out[f"{pol}/{'mig' if mig else 'nomig'}"] = summary(rep)
    return out


def fig10(n_jobs, slots=(250, 500, 1000, 2000, 4000, 8000, 16000)):
    specs = W.mix(-(-n_jobs // 3), seed=10, epochs=EPOCHS)[:n_jobs]
    out = {"jobs": len(specs), "units": 2, "rr": {}}
    for s in slots:
        out["rr"][s] = summary(serve(specs, "rr", 2, s))
    out["fcfs"] = summary(serve(specs, "fcfs", 2))
    out["sjf"] = summary(serve(specs, "sjf", 2))
    return out


def bandwidth(units_list=(1, 2, 4, 8)):
    cfg = pu_config()
    specs = [JobSpec(f"sgd{i}", "sgd", dict(m=32, n=256, partition=4), seed=i) for i in range(8)]
    out = {"peak_bytes_per_cycle": cfg.line_bytes, "rows": {}}
    for u in units_list:
        capped = serve(specs, "fcfs", u)
        free = serve(specs, "fcfs", u, mem_bw=1e9)
        out["rows"][u] = {"bytes_per_cycle": capped.bytes_per_cycle(), "total": capped.total,
                          "demand_bytes_per_cycle": free.bytes_per_cycle(), "total_unlimited": free.total}
    return out


def priority(features=(16, 64, 256)):
    """Figure 11 in shape: a high-priority SGD job submitted to a busy system (2 units,
    8 long jobs), with and without preemption, against its stand-alone run; the number of
    features sets the model size and thus the context-switch cost."""
    busy = [W.long(f"bg{i}", 20 + i).with_(epochs=4) for i in range(8)]
    out = {}
    for n in features:
        hp = JobSpec(f"hp{n}", "sgd", dict(m=16, n=n, partition=4), seed=n, priority=9, arrival=6000)
        alone = serve([hp.with_(arrival=0)], "fcfs", 2).end
        on = serve(busy + [hp], "fcfs", 2).by_name()[hp.name].completion
        off = serve(busy + [hp], "fcfs", 2, priority_preemption=False).by_name()[hp.name].completion
        out[n] = {"standalone": alone, "preemption": on, "no_preemption": off}
    return out


def rtl(run: bool):
    """Run (optionally) and read the RTL comparison of verif/pipearch_rt."""
    if run:
        env = dict(os.environ, MLACCEL_TESTCASE="mixed_workloads,bandwidth")
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:xdist", "verif/pipearch_rt"]
        print("bench: " + " ".join(cmd) + " (MLACCEL_TESTCASE=mixed_workloads,bandwidth)", flush=True)
        r = subprocess.run(cmd, cwd=REPO, env=env)
        if r.returncode:
            raise AssertionError("the RTL comparison (verif/pipearch_rt mixed_workloads) failed")
    out = {}
    for f in sorted(BENCH_DIR.glob("pipearch_rt_rtl_u*.json")):
        rows = json.loads(f.read_text())
        errs = []
        for r in rows:
            for k, v in r["rtl"].items():
                errs.append((r["fast"][k] - v) / v)
            r["order_match"] = r["rtl_order"] == r["fast_order"]
        out[f.stem.split("_")[-1]] = {"workloads": rows, "max_rel_err": float(np.max(np.abs(errs))),
                                      "mean_rel_err": float(np.mean(errs)),
                                      "mean_abs_rel_err": float(np.mean(np.abs(errs)))}
    for f in sorted(BENCH_DIR.glob("pipearch_rt_bw_u*.json")):
        out.setdefault(f.stem.split("_")[-1], {"workloads": []})["bandwidth"] = json.loads(f.read_text())
    return out


# ------------------------------------------------------------------------ plots
def plots(res):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    REPORTS.mkdir(parents=True, exist_ok=True)
    f9 = res["fig9"]
    units = sorted({int(k.split("/")[1]) for k in f9["runs"]})
    fig, axs = plt.subplots(len(units), 4, figsize=(15, 3.0 * len(units)), squeeze=False)
    for i, u in enumerate(units):
        alone = np.array(list(f9["standalone"].values()))
        hi = max(max(f9["runs"][f"{p}/{u}"]["completions"]) for p in ("fcfs", "rr", "sjf"))
        bins = np.linspace(0, hi * 1.02, 25)
        axs[i][0].hist(alone, bins=25, color="grey")
        axs[i][0].set_title("stand-alone run times")
        for j, p in enumerate(("fcfs", "rr", "sjf")):
            r = f9["runs"][f"{p}/{u}"]
            axs[i][j + 1].hist(r["completions"], bins=bins)
            axs[i][j + 1].axvline(r["median"], color="k", ls="--")
            axs[i][j + 1].set_title(f"{p.upper()}, {u} unit{'s' * (u > 1)}: P50 {r['median']:.0f}, "
                                    f"total {r['total']:.0f}", fontsize=9)
        axs[i][0].set_ylabel("jobs")
    for a in axs[-1]:
        a.set_xlabel("completion time (cycles)")
    fig.suptitle(f"PipeArch-RT, {f9['jobs']} jobs of three lengths submitted at once (fast model)")
    fig.tight_layout()
    fig.savefig(REPORTS / "pipearch_rt_fig9.png", dpi=90)
    plt.close(fig)

    t7 = res["table7"]
    fig, ax = plt.subplots(figsize=(7, 3.5))
    pols = ("fcfs", "rr", "sjf")
    x = np.arange(len(pols))
    for k, (tag, lab) in enumerate((("nomig", "no migration"), ("mig", "migration"))):
        ax.bar(x + 0.2 * (2 * k - 1), [t7[f"{p}/{tag}"]["total"] for p in pols], 0.4, label=f"total, {lab}")
        ax.plot(x + 0.2 * (2 * k - 1), [t7[f"{p}/{tag}"]["median"] for p in pols], "k^" if k else "kv",
                label=f"median, {lab}")
    ax.set_xticks(x, [p.upper() for p in pols])
    ax.set_ylabel("cycles")
    ax.set_title(f"Table 7 in shape: {t7['jobs']} jobs, 2 units")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(REPORTS / "pipearch_rt_table7.png", dpi=90)
    plt.close(fig)

    f10 = res["fig10"]
    fig, ax = plt.subplots(figsize=(7, 3.5))
    rr = {int(k): v for k, v in f10["rr"].items()}
    s = sorted(rr)
    ax.plot(s, [rr[k]["total"] for k in s], "o-", label="RR total")
    ax.plot(s, [rr[k]["median"] for k in s], "s--", label="RR median")
    ax.axhline(f10["fcfs"]["total"], color="grey", ls=":", label="FCFS total")
    ax.axhline(f10["sjf"]["total"], color="green", ls=":", label="SJF total")
    ax.set_xscale("log")
    ax.set_xlabel("RR time slot (cycles)")
    ax.set_ylabel("cycles")
    ax.set_title(f"Figure 10 in shape: {f10['jobs']} jobs, 2 units")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(REPORTS / "pipearch_rt_fig10.png", dpi=90)
    plt.close(fig)

    bw = res["bandwidth"]
    fig, ax = plt.subplots(figsize=(6, 3.5))
    rows = {int(k): v for k, v in bw["rows"].items()}
    u = sorted(rows)
    ax.plot(u, [rows[k]["bytes_per_cycle"] for k in u], "o-", label="fast model, shared memory")
    ax.plot(u, [rows[k]["demand_bytes_per_cycle"] for k in u], "s--", label="fast model, unlimited memory")
    rb = sorted((r["bandwidth"]["units"], r["bandwidth"]["rtl_bytes_per_cycle"], r["bandwidth"]["D"])
                for r in res.get("rtl", {}).values() if "bandwidth" in r)
    if rb:
        ax.plot([x[0] for x in rb], [x[1] for x in rb], "k*", ms=10,
                label="RTL pipearch_system (D = " + "/".join(str(x[2]) for x in rb) + ")")
    ax.axhline(bw["peak_bytes_per_cycle"], color="r", ls=":", label="shared memory bandwidth")
    ax.set_xlabel("units")
    ax.set_ylabel("bytes per cycle")
    ax.set_xticks(u)
    ax.legend(fontsize=8)
    ax.set_title("Aggregate bandwidth, streamed SGD (D = 64 lines)")
    fig.tight_layout()
    fig.savefig(REPORTS / "pipearch_rt_bandwidth.png", dpi=90)
    plt.close(fig)


def markdown(res) -> str:
    L = ["# PipeArch-RT benchmarks (fast model; `python -m pipearch_rt.bench`)", ""]
    f9 = res["fig9"]
    L += [f"## Mixed workload ({f9['jobs']} jobs, three lengths, all submitted at cycle 0; RR slot {SLOT})", "",
          "| units | policy | median | P75 | P99 | total | switches | migrations |", "|---|---|---|---|---|---|---|---|"]
    for k, r in f9["runs"].items():
        p, u = k.split("/")
        L.append(f"| {u} | {p.upper()} | {r['median']:.0f} | {r['p75']:.0f} | {r['p99']:.0f} | {r['total']:.0f} | "
                 f"{r['switches']} | {r['migrations']} |")
    t7 = res["table7"]
    L += ["", f"## Table 7 in shape ({t7['jobs']} jobs of two lengths, 2 units; cycles)", "",
          "| | FCFS | RR | SJF | FCFS mig. | RR mig. | SJF mig. |", "|---|---|---|---|---|---|---|"]
    for q in ("median", "p75", "p99", "total"):
        L.append(f"| {q} | " + " | ".join(f"{t7[f'{p}/{m}'][q]:.0f}" for m in ("nomig", "mig")
                                           for p in ("fcfs", "rr", "sjf")) + " |")
    f10 = res["fig10"]
    L += ["", f"## Figure 10 in shape ({f10['jobs']} jobs, 2 units): RR time slot", "",
          "| slot | total | median | switches |", "|---|---|---|---|"]
    for s, r in f10["rr"].items():
        L.append(f"| {s} | {r['total']:.0f} | {r['median']:.0f} | {r['switches']} |")
    L.append(f"| FCFS | {f10['fcfs']['total']:.0f} | {f10['fcfs']['median']:.0f} | 0 |")
    L.append(f"| SJF | {f10['sjf']['total']:.0f} | {f10['sjf']['median']:.0f} | {f10['sjf']['switches']} |")
    bw = res["bandwidth"]
    L += ["", f"## Aggregate bandwidth (streamed SGD, shared memory {bw['peak_bytes_per_cycle']} B/cycle)", "",
          "| units | bytes/cycle | unlimited memory | total | total unlimited |", "|---|---|---|---|---|"]
    for u, r in bw["rows"].items():
        L.append(f"| {u} | {r['bytes_per_cycle']:.2f} | {r['demand_bytes_per_cycle']:.2f} | {r['total']:.0f} | "
                 f"{r['total_unlimited']:.0f} |")
    pr = res.get("priority", {})
    if pr:
        L += ["", "## High-priority job on a busy system (Figure 11 in shape; 2 units, 8 long jobs, FCFS)", "",
              "| features | stand-alone | with preemption | without preemption |", "|---|---|---|---|"]
        for n, r in pr.items():
            L.append(f"| {n} | {r['standalone']:.0f} | {r['preemption']:.0f} | {r['no_preemption']:.0f} |")
    bws = [r["bandwidth"] for r in res.get("rtl", {}).values() if "bandwidth" in r]
    if bws:
        L += ["", "## Bandwidth on the RTL (one streamed SGD job per unit, all at once)", "",
              "| units | D | RTL bytes/cycle | fast bytes/cycle | RTL total | fast total | fast, unlimited memory |",
              "|---|---|---|---|---|---|---|"]
        for b in bws:
            L.append(f"| {b['units']} | {b['D']} | {b['rtl_bytes_per_cycle']:.2f} | {b['fast_bytes_per_cycle']:.2f} | "
                     f"{b['rtl_total']:.0f} | {b['fast_total']:.0f} | {b['fast_unlimited_total']:.0f} |")
    for tag, r in res.get("rtl", {}).items():
        if not r["workloads"]:
            continue
        L += ["", f"## RTL vs fast model ({tag})", "",
              "| workload | policy | jobs | order equal | RTL total | fast total | max abs rel. err per job |",
              "|---|---|---|---|---|---|---|"]
        for w in r["workloads"]:
            e = max(abs(w["fast"][k] - v) / v for k, v in w["rtl"].items())
            L.append(f"| {w['name']} | {w['policy']} | {len(w['rtl'])} | {w['order_match']} | {w['rtl_total']:.0f} | "
                     f"{w['fast_total']:.0f} | {100 * e:.1f} % |")
        L.append(f"\nCompletion times, fast vs RTL: mean {100 * r['mean_rel_err']:+.1f} %, mean |err| "
                 f"{100 * r['mean_abs_rel_err']:.1f} %, max |err| {100 * r['max_rel_err']:.1f} %.")
    return "\n".join(L) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--jobs-per-kind", type=int, default=16, help="Figure 9: jobs per length (default 16: 48 jobs)")
    ap.add_argument("--no-rtl", action="store_true", help="do not run the RTL comparison (read a previous one)")
    a = ap.parse_args(argv)
    t0 = time.time()
    res = {}
    res["fig9"] = fig9(a.jobs_per_kind)
    print(f"bench: fig9 done ({time.time() - t0:.0f} s)", flush=True)
    res["table7"] = table7(a.jobs_per_kind * 3 // 2)
    print(f"bench: table7 done ({time.time() - t0:.0f} s)", flush=True)
    res["fig10"] = fig10(32)
    print(f"bench: fig10 done ({time.time() - t0:.0f} s)", flush=True)
    res["bandwidth"] = bandwidth()
    res["priority"] = priority()
    res["rtl"] = rtl(not a.no_rtl)
    REPORTS.mkdir(parents=True, exist_ok=True)
    (REPORTS / "pipearch_rt_bench.json").write_text(json.dumps(res, indent=1))
    md = markdown(res)
    (REPORTS / "pipearch_rt_bench.md").write_text(md)
    plots(res)
    print(md)
    bad = []
    for u in sorted({k.split("/")[1] for k in res["fig9"]["runs"]}):
        r = {p: res["fig9"]["runs"][f"{p}/{u}"]["median"] for p in ("fcfs", "rr", "sjf")}
        if not (r["sjf"] < SJF_MEDIAN_RATIO * r["fcfs"] and r["sjf"] < SJF_MEDIAN_RATIO * r["rr"]):
            bad.append(f"{u} units: SJF median {r['sjf']:.0f} not below {SJF_MEDIAN_RATIO} x FCFS {r['fcfs']:.0f}"
                       f" and RR {r['rr']:.0f}")
    for tag, r in res["rtl"].items():
        for w in r["workloads"]:
            if not w["order_match"] and w["policy"] != "rr":
                bad.append(f"RTL {tag} {w['name']}: completion order differs from the fast model")
    if bad:
        print("bench: FAILED\n  " + "\n  ".join(bad))
        return 1
    print(f"bench: pipearch_rt OK ({time.time() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
