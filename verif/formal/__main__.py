"""``python -m verif.formal [--only SUBSTR ...] [--extra] [--list]``: run the SymbiYosys proofs, write
reports/formal.md, exit non-zero when a proof fails or a negative variant passes."""
from __future__ import annotations

import argparse
import sys

from . import REPORT, all_jobs, report, run_job, verdict


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m verif.formal", description=__doc__)
    ap.add_argument("--only", action="append", default=[],
                    help="run the jobs whose name contains this text (repeatable)")
    ap.add_argument("--list", action="store_true", help="list the jobs and exit")
    ap.add_argument("--extra", action="store_true",
                    help="also the lanewise stream proofs on the committed 16-lane netlists (minutes each)")
    args = ap.parse_args(argv)
    jobs = [j for j in all_jobs(args.extra) if not args.only or any(s in j.name for s in args.only)]
    if args.list:
        for j in jobs:
            print(f"{j.name:48s} {j.mode:6s} depth {j.depth:3d} expect {j.expect}")
        return 0
    if not jobs:
        print("no job selected", file=sys.stderr)
        return 2
    bad = []
    for j in jobs:
        run_job(j)
        print(f"{j.name:48s} {j.mode:6s} depth {j.depth:3d} {verdict(j):28s} {j.seconds:7.1f} s", flush=True)
        if j.result != j.expect:
            bad.append(j)
            print(j.detail, file=sys.stderr)
    # a partial run (--only) never overwrites the report of the full set
    out = REPORT if not args.only else REPORT.parents[1] / "build" / "formal" / "partial.md"
    report(jobs, out)
    print(f"wrote {out.relative_to(REPORT.parents[1])}")
    if bad:
        print(f"{len(bad)} of {len(jobs)} formal jobs did not give their expected result: "
              + ", ".join(j.name for j in bad) + " (logs in build/formal/<job>/sby.log)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
