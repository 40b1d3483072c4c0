"""``python -m pipearch_rt``: schedule a mixed workload on the fast back end and print
every job's completion.

    python -m pipearch_rt --policy sjf --units 2 --jobs-per-kind 4
    python -m pipearch_rt --policy rr --slot 1000 --no-migration
"""
from __future__ import annotations

import argparse
import sys

import numpy as np

from .backend import FastBackend, run_sync
from .jobs import pu_config
from .runtime import POLICIES, Runtime
from . import workloads as W


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m pipearch_rt", description=__doc__.split("\n")[0])
    ap.add_argument("--policy", choices=POLICIES, default="fcfs")
    ap.add_argument("--units", type=int, default=2)
    ap.add_argument("--slot", type=int, default=2000, help="RR time slot (cycles)")
    ap.add_argument("--no-migration", action="store_true")
    ap.add_argument("--jobs-per-kind", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    cfg = pu_config()
    rt = Runtime(FastBackend(cfg, a.units, 8 << 20), a.policy, slot=a.slot if a.policy == "rr" else None,
                 migration=not a.no_migration)
    for s in W.mix(a.jobs_per_kind, a.seed):
        rt.submit(s)
    rep = run_sync(rt.run())
    print(f"{'job':10} {'kind':5} {'state':9} {'completion':>10} {'runs':>4} units  golden")
    ok = True
    for t in rep.threads:
        same = t.model is not None and np.array_equal(t.model, t.built.golden())
        ok &= same
        print(f"{t.spec.name:10} {t.spec.kind:5} {t.state:9} {t.completion or 0:10d} {len(t.runs):4d} "
              f"{','.join(map(str, t.units_used)):5}  {'equal' if same else 'DIFFERS'}")
    print(f"policy {a.policy}, {a.units} units: median {rep.median:.0f}, total {rep.total:.0f} cycles, "
          f"{rep.switches} switches")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
