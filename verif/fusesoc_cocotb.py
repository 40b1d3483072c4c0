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
    "vpi_ghdl": str(c.lib_name_path("vpi", "ghdl")),
    "share": str(c.share_dir),
    "libs": str(c.libs_dir),
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
                "vpi": q("--lib-entry", "vpi", "icarus"), "python": q("--python-bin"),
                "share": q("--share"), "libs": q("--lib-dir"),
                "vpi_ghdl": q("--lib-name-path", "vpi", "ghdl")}
    sys.exit("fusesoc_cocotb: no Python with cocotb found (tried " + "; ".join(errors or ["nothing"])
             + "); run `make venv` or put cocotb-config on PATH")


def _mk(value: str) -> str:
    if "\n" in value:
        raise ValueError(f"newline in make variable value {value!r}")
    return value.replace("$", "$$")


VLT_VC = "cocotb_vlt.vc"
VLT_MAIN = "cocotb_vlt_main.cpp"
ENV_TXT = "cocotb_env.txt"


def cmd_vlt(core: str) -> int:
    """pre_build hook of the Verilator sim targets.  edalize builds a C++ model with
    ``--cc --exe`` and links it as ``V<core>``, but the target has no C++ harness, hence
    "undefined reference to `main'".  This writes the harness: cocotb's own
    ``share/lib/verilator/verilator.cpp`` (its ``main`` renamed, ``Vtop`` mapped onto
    edalize's ``V<core>`` class), wrapped by a ``main`` that first loads the cocotb
    environment the pre_run hook wrote to ``cocotb_env.txt`` (edalize starts the model
    directly, not through make, so the Icarus trick of a make include cannot pass it), and
    ``cocotb_vlt.vc`` (``--vpi --public-flat-rw``, cocotb's VPI library, the harness) that
    the target's ``verilator_options`` read with ``-f``."""
    work = Path.cwd()
    cs = cocotb_settings(find_repo(work, core))
    share, libs = Path(cs["share"]), Path(cs["libs"])
    cpp = share / "lib" / "verilator" / "verilator.cpp"
    if not cpp.is_file():
        sys.exit(f"fusesoc_cocotb: cocotb's Verilator harness {cpp} is missing")
    (work / "Vtop.h").write_text(f'#include "V{core}.h"\n#define Vtop V{core}\n')
    (work / VLT_MAIN).write_text(f"""// written by fusesoc_cocotb.py vlt {core}
#include <cstdlib>
#include <fstream>
#include <string>
#define main cocotb_verilator_main
#include "{cpp}"
#undef main
int main(int argc, char **argv) {{
    std::ifstream env("{ENV_TXT}");
    if (!env) {{
        fprintf(stderr, "fusesoc_cocotb: {ENV_TXT} missing (the pre_run hook writes it)\\n");
        return 2;
    }}
    std::string line;
    while (std::getline(env, line)) {{
        std::string::size_type eq = line.find('=');
        if (eq != std::string::npos)
            setenv(line.substr(0, eq).c_str(), line.substr(eq + 1).c_str(), 1);
    }}
    return cocotb_verilator_main(argc, argv);
}}
""")
    vc = ["--vpi", "--public-flat-rw", "-Wno-fatal",
          "-LDFLAGS", f"-Wl,-rpath,{libs}", "-LDFLAGS", f"-L{libs}", "-LDFLAGS", "-lcocotbvpi_verilator",
          "-CFLAGS", f"-I{work}", str(work / VLT_MAIN)]
    (work / VLT_VC).write_text("\n".join(vc) + "\n")
    print(f"fusesoc_cocotb: {VLT_VC} and {VLT_MAIN} for {core} (cocotb {share})")
    return 0


# what the fast sim targets run: every test but the benchmarks (cocotb test names bench_*)
NO_BENCH_FILTER = r"^(?!(.*\.)?bench_)"


def cmd_env(core: str, sim: str = "icarus", skip_bench: bool = False) -> int:
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
        "TOPLEVEL_LANG": "vhdl" if sim == "ghdl" else "verilog",
        "COCOTB_RESULTS_FILE": str(results),
        "PYTHONPATH": os.pathsep.join(pypath),
        "DUT_PARAMS": json.dumps(params),
        "DUT_CFG": os.environ.get("DUT_CFG", "default"),
        "DUT_SIM": sim,
        "BENCH_DIR": str(work / "bench"),  # keep fusesoc runs out of build/bench (make bench)
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    if skip_bench:
        # a filter given by the user wins; otherwise leave the benchmarks out
        env["COCOTB_TEST_FILTER"] = os.environ.get("COCOTB_TEST_FILTER") or NO_BENCH_FILTER
    lines = [f"# written by fusesoc_cocotb.py env {core}; included by the vvp_options of the sim target"]
    lines += [f"export {k} := {_mk(v)}" for k, v in env.items()]
    lines.append(f"COCOTB_VVP_ARGS := -m {_mk(cs['vpi'])}")
    if cs.get("vpi_ghdl"):
        lines.append(f"COCOTB_GHDL_ARGS := --vpi={_mk(cs['vpi_ghdl'])}")
    (work / ENV_MK).write_text("\n".join(lines) + "\n")
    (work / ENV_TXT).write_text("".join(f"{k}={v}\n" for k, v in env.items()))
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


def cmd_check(core: str, results: Path, sim: str = "icarus") -> int:
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
    undeclared = [t for t in skipped if not skip_reason(skips, t, sim)]
    for t in skipped:
        r = skip_reason(skips, t, sim)
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
    e.add_argument("--sim", choices=["icarus", "verilator", "ghdl"], default="icarus")
    e.add_argument("--skip-bench", action="store_true", help="run every test except bench_*")
    v = sub.add_parser("vlt", help="write the Verilator cocotb harness (pre_build hook)")
    v.add_argument("core")
    c = sub.add_parser("check", help="fail unless the cocotb results show >=1 test and no failure")
    c.add_argument("core")
    c.add_argument("--results", type=Path, default=None)
    c.add_argument("--sim", choices=["icarus", "verilator", "ghdl"], default="icarus")
    a = ap.parse_args(argv)
    if a.cmd == "env":
        return cmd_env(a.core, a.sim, a.skip_bench)
    if a.cmd == "vlt":
        return cmd_vlt(a.core)
    return cmd_check(a.core, a.results or Path.cwd() / RESULTS, a.sim)


if __name__ == "__main__":
    sys.exit(main())
