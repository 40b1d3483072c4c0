"""cocotb under FuseSoC (edalize 0.6.8, tool API, Icarus) with cocotb 2.1.

The generated ``ip/<core>/<core>.core`` copies this file into the FuseSoC work root
and runs it as hook scripts of its ``sim`` target:

``pre_run``:  ``python3 fusesoc_cocotb.py env <core>``
    writes ``cocotb_env.mk`` into the work root.  The target's ``vvp_options`` are
    ``$(eval -include cocotb_env.mk)$(COCOTB_VVP_ARGS)``, so the edalize Makefile
    that runs ``vvp`` exports these variables to it and loads cocotb's VPI library.
    edalize 0.6.8 knows nothing of cocotb 2.1, so this supplies what it lacks:
    ``GPI_USERS="<libpython>;<pygpi entry point>"`` (cocotb 2.1 does not start Python
    without it), ``COCOTB_TEST_MODULES=test_<core>``, ``COCOTB_TOPLEVEL``,
    ``DUT_PARAMS`` (JSON baked into the .core by rtl_gen), ``PYTHONPATH`` with the
    repository root, and ``COCOTB_RESULTS_FILE``.

``post_run``: ``python3 fusesoc_cocotb.py check <core>``
    reads the cocotb results XML and exits 1 when a test failed or errored, when no
    test ran, when the file is missing or unreadable, or when a test was skipped
    without being declared in the ``SKIPS`` dict of ``verif/<core>/test_<core>.py``
    (a literal ``{"<test>": "<reason>"}`` or ``{"<test>": {"reason": ..., "sims":
    [...]}}``, read with ``ast``; see ``verif.harness.skip_allowed``).  Skips are
    counted and printed as skips, never as passes.  ``fusesoc run`` exits 0 even when
    cocotb tests fail; a failing hook makes it exit non-zero.

The hooks are started with whatever ``python3`` is first on PATH, so this file uses
the standard library only.  cocotb's own settings (libpython, entry point, VPI
library) come from the first of: ``$COCOTB_PYTHON``, this interpreter if it has
cocotb, the repository's ``.venv/bin/python``, ``cocotb-config`` on PATH.

Environment knobs (read from the shell that runs ``fusesoc run``):

- ``COCOTB_TEST_FILTER`` / ``COCOTB_RANDOM_SEED``: passed to cocotb unchanged; the
  random seed is the run seed each test's stimulus seed is derived from
  (``verif.tb_common.sim_seed``), so ``COCOTB_RANDOM_SEED=<SEED of a make run>`` replays it.
- ``MLACCEL_REPO``: repository root, if it cannot be found from the work root.
- ``FUSESOC_COCOTB_PARAMS_OVERRIDE``: JSON merged over ``DUT_PARAMS``.  It makes the
  testbench's golden model disagree with the netlist on purpose, to prove that a
  failing cocotb test fails ``fusesoc run`` (see the README).

``check --results FILE`` checks an arbitrary results file (used by the tests of this
wrapper).
"""
from __future__ import annotations

import argparse
import ast
import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

ENV_MK = "cocotb_env.mk"
RESULTS = "results.xml"

_PROBE = r"""
import json, sys
import find_libpython
import cocotb_tools.config as c
print(json.dumps({
    "libpython": find_libpython.find_libpython(),
    "entry": c.pygpi_entry_point(),
    "vpi": c.lib_entry("vpi", "icarus"),
    "python": sys.executable,
}))
"""


def find_repo(work: Path, core: str) -> Path:
    """The repository root: $MLACCEL_REPO, else from the original .core path that
    FuseSoC records (relative to the work root) in ``<name>.eda.yml``, else the first
    parent of the work root that holds ``rtl_gen/`` and ``verif/``."""
    env = os.environ.get("MLACCEL_REPO")
    cands = [Path(env)] if env else []
    for eda in sorted(work.glob("*.eda.yml")):
        for m in re.finditer(r"^\s*core_file:\s*['\"]?([^'\"\n]+?)['\"]?\s*$", eda.read_text(), re.M):
            cf = (work / m.group(1)).resolve()
            if cf.name == f"{core}.core":
                cands.append(cf.parent.parent.parent)  # <repo>/ip/<core>/<core>.core
    cands += list(work.resolve().parents)
    for c in cands:
        if (c / "verif" / core / f"test_{core}.py").is_file() and (c / "rtl_gen").is_dir():
            return c.resolve()
    sys.exit(f"fusesoc_cocotb: cannot find the repository of core {core!r} from {work}; set MLACCEL_REPO")


def cocotb_settings(repo: Path) -> dict:
    pys = [os.environ.get("COCOTB_PYTHON"), sys.executable, str(repo / ".venv" / "bin" / "python")]
    errors = []
    for py in pys:
        if not py or not Path(py).exists():
            continue
        r = subprocess.run([py, "-c", _PROBE], capture_output=True, text=True)
        if r.returncode == 0:
            return json.loads(r.stdout)
        errors.append(f"{py}: {r.stderr.strip().splitlines()[-1] if r.stderr.strip() else r.returncode}")
    cfg = shutil.which("cocotb-config")
    if cfg:
        def q(*a):
            return subprocess.run([cfg, *a], check=True, capture_output=True, text=True).stdout.strip()
        return {"libpython": q("--libpython"), "entry": q("--pygpi-entry-point"),
                "vpi": q("--lib-entry", "vpi", "icarus"), "python": q("--python-bin")}
    sys.exit("fusesoc_cocotb: no Python with cocotb found (tried " + "; ".join(errors or ["nothing"])
             + "); run `make venv` or put cocotb-config on PATH")


def _mk(value: str) -> str:
    if "\n" in value:
        raise ValueError(f"newline in make variable value {value!r}")
    return value.replace("$", "$$")


def cmd_env(core: str) -> int:
    work = Path.cwd()
    repo = find_repo(work, core)
    cs = cocotb_settings(repo)
    if not cs.get("libpython"):
        sys.exit("fusesoc_cocotb: cocotb could not locate libpython")
    params = json.loads(os.environ.get("DUT_PARAMS") or "{}")
    override = os.environ.get("FUSESOC_COCOTB_PARAMS_OVERRIDE")
    if override:
        params.update(json.loads(override))
        print(f"fusesoc_cocotb: DUT_PARAMS overridden with {override} (negative check)")
    pypath = [str(work), str(repo / "verif" / core), str(repo)]
    if os.environ.get("PYTHONPATH"):
        pypath.append(os.environ["PYTHONPATH"])
    results = work / RESULTS
    if results.exists():
        results.unlink()  # a stale file must never pass the check
    env = {
        "GPI_USERS": f"{cs['libpython']};{cs['entry']}",
        "PYGPI_PYTHON_BIN": cs["python"],
        "COCOTB_TEST_MODULES": f"test_{core}",
        "COCOTB_TOPLEVEL": core,
        "TOPLEVEL_LANG": "verilog",
        "COCOTB_RESULTS_FILE": str(results),
        "PYTHONPATH": os.pathsep.join(pypath),
        "DUT_PARAMS": json.dumps(params),
        "DUT_CFG": os.environ.get("DUT_CFG", "default"),
        "DUT_SIM": "icarus",
        "BENCH_DIR": str(work / "bench"),  # keep fusesoc runs out of build/bench (make bench)
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    lines = [f"# written by fusesoc_cocotb.py env {core}; included by the vvp_options of the sim target"]
    lines += [f"export {k} := {_mk(v)}" for k, v in env.items()]
    lines.append(f"COCOTB_VVP_ARGS := -m {_mk(cs['vpi'])}")
    (work / ENV_MK).write_text("\n".join(lines) + "\n")
    print(f"fusesoc_cocotb: {ENV_MK} for {core} (repo {repo}, python {cs['python']})")
    return 0


def read_results(path: Path) -> tuple[int, list[str], list[str]]:
    """(tests, failed names, skipped names) of a cocotb results XML."""
    root = ET.parse(path).getroot()
    n, failed, skipped = 0, [], []
    for tc in root.iter("testcase"):
        n += 1
        if tc.find("failure") is not None or tc.find("error") is not None:
            failed.append(tc.get("name", "?"))
        elif tc.find("skipped") is not None:
            skipped.append(tc.get("name", "?"))
    return n, failed, skipped


def declared_skips(module: Path) -> dict:
    """The literal ``SKIPS`` dict of a cocotb test module ({} when it has none)."""
    tree = ast.parse(module.read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "SKIPS" for t in node.targets):
            return ast.literal_eval(node.value)
    return {}


def skip_reason(skips: dict, test: str, sim: str = "icarus") -> str | None:
    """Same rule as ``verif.harness.skip_allowed`` (this file uses the standard library only)."""
    d = (skips or {}).get(test)
    if isinstance(d, str):
        return d.strip() or None
    if isinstance(d, dict) and str(d.get("reason", "")).strip():
        if d.get("sims") is None or sim in d["sims"]:
            return str(d["reason"]).strip()
    return None


def _skips_of(core: str) -> tuple[dict, str]:
    """SKIPS of the core's test module, and where it came from (lenient: no module, no skips)."""
    work = Path.cwd()
    cands = [Path(os.environ["MLACCEL_REPO"])] if os.environ.get("MLACCEL_REPO") else []
    cands += [work, *work.resolve().parents, Path(__file__).resolve().parent.parent]
    for c in cands:
        m = c / "verif" / core / f"test_{core}.py"
        if m.is_file():
            try:
                return declared_skips(m), str(m)
            except (SyntaxError, ValueError) as e:
                return {}, f"{m} (unreadable SKIPS: {e})"
    try:
        m = find_repo(work, core) / "verif" / core / f"test_{core}.py"
        return declared_skips(m), str(m)
    except SystemExit:
        return {}, "no test module found"


def cmd_check(core: str, results: Path) -> int:
    if not results.is_file():
        print(f"fusesoc_cocotb: FAIL {core}: no cocotb results file {results} (did cocotb start?)")
        return 1
    try:
        n, failed, skipped = read_results(results)
    except ET.ParseError as e:
        print(f"fusesoc_cocotb: FAIL {core}: unreadable results file {results}: {e}")
        return 1
    if n == 0:
        print(f"fusesoc_cocotb: FAIL {core}: no cocotb test ran ({results})")
        return 1
    passed = n - len(failed) - len(skipped)
    counts = f"{n} tests: {passed} passed, {len(failed)} failed, {len(skipped)} skipped"
    skips, where = _skips_of(core) if skipped else ({}, "")
    undeclared = [t for t in skipped if not skip_reason(skips, t)]
    for t in skipped:
        r = skip_reason(skips, t)
        print(f"fusesoc_cocotb: skipped {t}: " + (f"declared: {r}" if r else f"NOT declared in SKIPS ({where})"))
    if failed:
        print(f"fusesoc_cocotb: FAIL {core}: {len(failed)} of {n} cocotb tests failed: {', '.join(failed)} ({counts})")
        return 1
    if undeclared:
        print(f"fusesoc_cocotb: FAIL {core}: {len(undeclared)} undeclared skip(s): {', '.join(undeclared)} ({counts})")
        return 1
    if passed == 0:
        print(f"fusesoc_cocotb: FAIL {core}: no cocotb test passed ({counts})")
        return 1
    print(f"fusesoc_cocotb: PASS {core}: {passed} cocotb tests passed" + (f", {len(skipped)} declared skip(s)" if skipped else "") + f" ({counts})")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="fusesoc_cocotb.py")
    sub = ap.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("env", help="write cocotb_env.mk for the vvp run (pre_run hook)")
    e.add_argument("core")
    c = sub.add_parser("check", help="fail unless the cocotb results show >=1 test and no failure")
    c.add_argument("core")
    c.add_argument("--results", type=Path, default=None)
    a = ap.parse_args(argv)
    if a.cmd == "env":
        return cmd_env(a.core)
    return cmd_check(a.core, a.results or Path.cwd() / RESULTS)


if __name__ == "__main__":
    sys.exit(main())
