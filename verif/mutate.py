"""Mutation score of a core's regression: single-point mutants of its committed netlist.

    python -m verif.mutate --core C [-n N] [--jobs J] [--sim icarus|verilator] [--seed S]
                           [--sample-seed S] [--mode auto|suite|first-fail] [--list]
    python -m verif.mutate --summary          (rebuild reports/mutation/summary.md)

``make mutate CORE=<core> [N=40] [JOBS=2]`` runs the first form under ``nice``.

What it does
------------
1. **Mutants.**  :func:`enumerate_mutants` lists every single-point change of the
   generated Verilog ``ip/<core>/rtl/<core>.v`` (the ``default`` netlist that ships) in
   these classes (:data:`CLASSES`):

   * ``arith`` ``+`` <-> ``-`` (binary operators only; an operator between two integer
     literals, e.g. the index ``(32 - 1)``, is left to the ``index`` class);
   * ``logic`` ``&`` <-> ``|``, ``&&`` <-> ``||``, ``^`` -> ``&``;
   * ``relop`` ``==`` <-> ``!=``, ``<`` <-> ``<=``, ``>`` <-> ``>=``;
   * ``shift`` ``>>`` <-> ``<<``, ``>>>`` -> ``>>``;
   * ``cond`` an ``if (c)`` becomes ``if (!(c))``; a ``!x`` loses its ``!``;
   * ``stuck`` the right-hand side of an assignment (``assign``, ``<=``, ``=``) becomes
     ``0``; a ``1'b0``/``1'b1`` constant flips;
   * ``const`` a sized literal (``8'd5``, ``64'h0``) has its lowest bit flipped;
   * ``index`` an unsized integer in an expression (counts, bounds, bit indices, slice
     limits) becomes one more or one less;
   * ``width`` the MSB of an internal ``reg``/``wire`` declaration becomes one less (a
     wider signal is almost always equivalent, so it is not generated).

   Comment lines, the ``timescale``, port declarations and the ``reg``/``wire``
   declaration of a port are never mutated.
2. **Sampling.**  A seeded (``--sample-seed``, default 1) permutation that takes the
   classes in turn (a random class with sites left, then a random site of it), so a
   netlist full of one kind of line (bit fills) does not crowd out the others.  The
   first N mutants of the permutation run; each mutant that does not compile
   (*stillborn*) is replaced by the next one, so N is the number of *viable* mutants
   whenever the netlist has that many.
3. **Runs.**  Each mutant is written to ``build/mutate/<core>/m<k>/rtl/<core>.v`` and
   the core's regression row ``default-<sim>`` runs against it through
   :func:`verif.harness.run_core` in a child process with ``MLACCEL_RTL_OVERRIDE``
   (the harness reads the default netlist from the mutant folder),
   ``MLACCEL_BUILD_DIR`` (its own build folder) and a fixed run seed (``--seed``,
   default 1, the same for the unmutated baseline).  ``--mode suite`` runs the whole
   cocotb suite in one simulation; ``first-fail`` runs the cocotb tests one at a time,
   cheapest first (baseline wall time), and stops at the first failing one; ``auto``
   (default) picks ``suite`` when the baseline row takes under :data:`AUTO_SUITE_S`
   (20 s, build included).  The mutant
   folder's build is deleted after the run (the ``.v`` and ``result.json`` stay).
4. **Outcomes.**  ``killed`` (a cocotb test failed), ``timeout`` (the simulation ran
   past its wall budget, ``max(60 s, 5 x baseline)``, counted as killed: the
   regression fails), ``error`` (the simulator crashed or wrote no results after a
   successful build, counted as killed for the same reason, listed apart),
   ``survived`` (the row passed), ``stillborn`` (the simulator's build rejected the
   mutant: excluded from the score, counted in the report).  The unmutated netlist
   runs first; if it does not pass, nothing is scored.  A run that fails before its
   simulation is built (a Python error in the harness, a generator or the testbench's
   imports) is a ``harness_error``: it says nothing about the mutant, so the campaign
   stops there and scores nothing, instead of counting it as killed.
   **Snapshot.**  Every run (baseline, mutants, reruns) imports the harness, generators
   and testbenches from a copy of the working tree taken when the campaign starts
   (``build/mutate/<core>/tree``: tracked files and untracked, not ignored ones, as they
   are at that moment), so a file being edited in the tree during a campaign of hours
   cannot fail (and so "kill") the mutants that run meanwhile.
5. **Killing a survivor.**  After a test is added, ``--rerun-survivors`` runs the
   campaign's survivors again (same mutants of the unchanged netlist) against the current
   tests and records the new outcome with the date and the old one.
6. **Report.**  ``reports/mutation/<core>.md`` (+ ``.json``) lists every mutant (line,
   class, original and mutated text, outcome, the killing tests), every survivor with
   the reason from :data:`EQUIV_FILE` when one is given, the score and the measured
   cost; ``reports/mutation/summary.md`` tabulates every core measured so far.
   Score = (killed + timeout + error) / (viable mutants); the *adjusted* score leaves
   out survivors argued equivalent in :data:`EQUIV_FILE`.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
REPORTS = REPO / "reports" / "mutation"
EQUIV_FILE = REPO / "verif" / "mutation_equivalent.txt"
CLASSES = ("arith", "logic", "relop", "shift", "cond", "stuck", "const", "index", "width")
KILLED = ("killed", "timeout", "error")
# --mode auto: a baseline (unmutated) row faster than this runs each mutant as one suite
# simulation; slower ones run the cocotb tests one at a time and stop at the first failure
AUTO_SUITE_S = 20.0


def norm_key(key: str) -> str:
    """A mutant key with its spaces trimmed and runs of spaces made one."""
    return re.sub(r"\s+", " ", key.strip())


@dataclass(frozen=True)
class Mutant:
    line: int          # 1-based line number in the netlist
    col: int           # 0-based start column of the replaced text
    end: int           # 0-based end column (exclusive)
    cls: str           # one of CLASSES
    original: str      # replaced text
    replacement: str   # new text

    @property
    def key(self) -> str:
        """Stable name of the mutant (for the equivalence file)."""
        return norm_key(f"L{self.line}:{self.col}:{self.cls}:{self.replacement}")

    def apply(self, lines: list[str]) -> list[str]:
        out = list(lines)
        s = out[self.line - 1]
        assert s[self.col:self.end] == self.original, (s, self)
        out[self.line - 1] = s[:self.col] + self.replacement + s[self.end:]
        return out


# ---------------------------------------------------------------- mutant generation
_BINOPS = [  # (class, regex of the operator with its surrounding spaces, replacement)
    ("arith", r" \+ ", " - "), ("arith", r" - ", " + "),
    ("logic", r" && ", " || "), ("logic", r" \|\| ", " && "),
    ("logic", r" & ", " | "), ("logic", r" \| ", " & "), ("logic", r" \^ ", " & "),
    ("relop", r" == ", " != "), ("relop", r" != ", " == "),
    ("relop", r" < ", " <= "), ("relop", r" <= ", " < "),
    ("relop", r" > ", " >= "), ("relop", r" >= ", " > "),
    ("shift", r" >>> ", " >> "), ("shift", r" >> ", " << "), ("shift", r" << ", " >> "),
]
_DECL = re.compile(r"^\s*(reg|wire)\s+(signed\s+)?\[(\d+):(\d+)\]")
_PORT = re.compile(r"^\s*(input|output|inout)\b")
_IF = re.compile(r"^(\s*(?:end\s+)?(?:else\s+)?if\s*)\((.*)\)(\s*begin\s*)$")
_NOT = re.compile(r"!(?!=)(?=[\w(])")
_ASSIGN = re.compile(r"^(\s*(?:assign\s+)?[\w\[\]:+\- ()]+?\s*(?:<=|=)\s*)(.+?);\s*$")
_BITCONST = re.compile(r"1'b[01]")
_SIZED = re.compile(r"(?<![\w$])(\d+)'(s?)([bdh])([0-9a-fA-F_]+)")
_UNSIZED = re.compile(r"(?<![\w'$.])\d+(?![\w'.])")
_STRINGISH = re.compile(r"\$(display|write|finish|stop|fatal|error|warning|info|dumpfile|dumpvars)")


def _code_line(s: str) -> bool:
    t = s.strip()
    return bool(t) and not t.startswith("//") and not t.startswith("`") \
        and not _PORT.match(s) and not t.startswith("module") and not _STRINGISH.search(s)


def enumerate_mutants(text: str) -> list[Mutant]:
    """Every single-point mutant of the Verilog ``text`` (see the module docstring)."""
    out: list[Mutant] = []
    in_ports = False
    ports = set()  # a port's own reg/wire declaration keeps the port's width
    for s in text.splitlines():
        m = _PORT.match(s)
        if m:
            ports.add(re.split(r"[\s;]+", s.strip().rstrip(";"))[-1])
    for i, s in enumerate(text.splitlines(), 1):
        t = s.strip()
        if t.startswith("module"):
            in_ports = True
        if in_ports:
            if t.endswith(");"):
                in_ports = False
            continue
        if not _code_line(s):
            continue
        m = _DECL.match(s)
        if m and s.strip().rstrip(";").split()[-1] in ports:
            continue
        if m:
            msb = int(m.group(3))
            a, b = m.span(3)
            if msb > int(m.group(4)):
                out.append(Mutant(i, a, b, "width", m.group(3), str(msb - 1)))
            continue
        if re.match(r"^\s*(reg|wire|integer|localparam|parameter)\b", s):
            continue
        # binary operators: only in the expression part (after '=' / '<=' or inside if (...))
        for cls, rx, rep in _BINOPS:
            for mm in re.finditer(rx, s):
                a, b = mm.span()
                if re.search(r"(?<![\w'])\d+\)?$", s[:a]) and re.match(r"\(?\d+(?![\w'])", s[b:]):
                    continue  # a constant expression (an index like (32 - 1)): the index class
                if cls == "relop" and rx == r" <= " and _is_nonblocking(s, a):
                    continue
                out.append(Mutant(i, a, b, cls, s[a:b], rep))
        m = _IF.match(s)
        if m:
            a, b = m.end(1), m.start(3)
            out.append(Mutant(i, a, b, "cond", s[a:b], f"(!{s[a:b]})"))
        for mm in _NOT.finditer(s):
            out.append(Mutant(i, mm.start(), mm.end(), "cond", "!", ""))
        m = _ASSIGN.match(s)
        if m and not _IF.match(s):
            a, b = m.span(2)
            rhs = s[a:b]
            if not re.fullmatch(r"\d+|\d+'[bdh][0-9a-fA-F]+|\(?-?\d+\)?", rhs.strip()):
                out.append(Mutant(i, a, b, "stuck", rhs, "0"))
        for mm in _BITCONST.finditer(s):
            out.append(Mutant(i, mm.start(), mm.end(), "stuck", mm.group(0),
                              "1'b1" if mm.group(0) == "1'b0" else "1'b0"))
        for mm in _SIZED.finditer(s):
            if mm.group(0) in ("1'b0", "1'b1"):
                continue
            width, sgn, base, digits = mm.groups()
            val = int(digits.replace("_", ""), {"b": 2, "d": 10, "h": 16}[base]) ^ 1
            new = {"b": format(val, "b"), "d": str(val), "h": format(val, "x")}[base]
            out.append(Mutant(i, mm.start(), mm.end(), "const", mm.group(0),
                              f"{width}'{sgn}{base}{new}"))
        for mm in _UNSIZED.finditer(s):
            if _in_sized(s, mm.start()):
                continue
            v = int(mm.group(0))
            out.append(Mutant(i, mm.start(), mm.end(), "index", mm.group(0), str(v + 1)))
            if v > 0:
                out.append(Mutant(i, mm.start(), mm.end(), "index", mm.group(0), str(v - 1)))
    return out


def _is_nonblocking(s: str, pos: int) -> bool:
    """True when the ``<=`` at ``pos`` is the assignment of a clocked statement, not a
    comparison (the first ``<=`` of a statement line that is not an ``if``)."""
    t = s.lstrip()
    if t.startswith("if") or t.startswith("else") or t.startswith("assign"):
        return False
    return s.find(" <= ") == pos


def _in_sized(s: str, pos: int) -> bool:
    for mm in _SIZED.finditer(s):
        if mm.start() <= pos < mm.end():
            return True
    return False


def sample_order(mutants: list[Mutant], seed: int) -> list[Mutant]:
    """A deterministic permutation of ``mutants``: repeatedly a random class (of those
    with mutants left), then a random mutant of it."""
    rng = random.Random(seed)
    by_cls: dict[str, list[Mutant]] = {}
    for m in mutants:
        by_cls.setdefault(m.cls, []).append(m)
    for c in by_cls:
        rng.shuffle(by_cls[c])
    order = []
    while by_cls:
        c = rng.choice(sorted(by_cls))
        order.append(by_cls[c].pop())
        if not by_cls[c]:
            del by_cls[c]
    return order


# ---------------------------------------------------------------- score arithmetic
def score(results: list[dict], equivalent: set[str] = frozenset()) -> dict:
    """Counts and scores of mutant results (dicts with ``outcome`` and ``key``).

    Stillborn mutants are excluded; ``timeout`` and ``error`` count as killed.
    ``score`` = killed / viable; ``adjusted`` leaves out survivors named in
    ``equivalent``.  Percentages are None when nothing is viable."""
    n = {o: sum(r["outcome"] == o for r in results)
         for o in ("killed", "timeout", "error", "survived", "stillborn")}
    killed = n["killed"] + n["timeout"] + n["error"]
    viable = killed + n["survived"]
    equivalent = {norm_key(k) for k in equivalent}
    eq = sum(r["outcome"] == "survived" and norm_key(r["key"]) in equivalent for r in results)
    return {**n, "total_killed": killed, "viable": viable, "equivalent": eq,
            "score": None if viable == 0 else 100.0 * killed / viable,
            "adjusted": None if viable - eq == 0 else 100.0 * killed / (viable - eq)}


def load_equivalent(core: str, path: Path = EQUIV_FILE) -> dict[str, str]:
    """``{mutant key: reason}`` for ``core`` from lines ``<core> <key> :: <reason>``."""
    out: dict[str, str] = {}
    if not path.is_file():
        return out
    for ln in path.read_text().splitlines():
        if not ln.strip() or ln.lstrip().startswith("#") or "::" not in ln:
            continue
        head, reason = ln.split("::", 1)
        parts = head.split(None, 1)
        if len(parts) == 2 and parts[0] == core and reason.strip():
            out[norm_key(parts[1])] = reason.strip()
    return out


# ---------------------------------------------------------------- running one mutant
def _child(args) -> int:
    """Child process: run the core's default-<sim> row on the netlist in ``--rtl``."""
    spec = json.loads(args.child)
    os.environ["MLACCEL_RTL_OVERRIDE"] = f"{spec['core']}={spec['rtl']}"
    os.environ["MLACCEL_BUILD_DIR"] = spec["build"]
    os.environ["MLACCEL_SEED"] = str(spec["seed"])
    os.environ["MLACCEL_WALL_BUDGET_S"] = str(spec["budget"])
    for k in ("MLACCEL_TESTCASE", "MLACCEL_CFG", "MLACCEL_COVERAGE", "WAVES"):
        os.environ.pop(k, None)
    from verif import harness

    core, sim = spec["core"], spec["sim"]
    res = {"outcome": None, "tests_run": [], "failed": [], "message": "", "per_test": {}}
    groups = [None] if spec["mode"] == "suite" else spec["tests"]
    t0 = time.monotonic()
    for tc in groups:
        summary = Path(spec["build"]) / "sim" / core / "default" / sim / "summary.json"
        summary.unlink(missing_ok=True)
        try:
            harness.run_core(core, "default", sim, testcase=tc)
            err = None
        except BaseException as e:  # noqa: BLE001 - classify below
            err = e
        meta = json.loads(summary.read_text()) if summary.is_file() else None
        if meta is None:  # no summary: the run ended before its simulation (build or harness)
            res["outcome"] = "stillborn" if isinstance(err, RuntimeError) else "harness_error"
            res["message"] = f"{type(err).__name__}: {str(err)[:400]}"
            break
        for c in meta.get("cases", []):
            res["tests_run"].append(c["name"])
            res["per_test"][c["name"]] = c.get("wall_s", 0.0)
        if meta["outcome"] == "pass":
            continue
        res["outcome"] = {"fail": "killed", "timeout": "timeout"}.get(meta["outcome"], "error")
        res["failed"] = [c["name"] for c in meta.get("cases", []) if c["status"] == "failed"] \
            or ([tc] if tc else [])
        res["message"] = str(err)[:400] if err else meta["outcome"]
        break
    else:
        res["outcome"] = "survived"
    res["wall_s"] = round(time.monotonic() - t0, 2)
    Path(spec["out"]).write_text(json.dumps(res, indent=1))
    return 0


_CHILDREN: set[int] = set()  # process groups of running mutant simulations
_STOP: list[bool] = []  # set by _kill_children: start no further mutant


def _kill_children(signum=None, frame=None):
    """SIGTERM/SIGINT of the campaign ends its running simulations too (each runs in its
    own session, so they would outlive it)."""
    _STOP.append(True)
    for pid in list(_CHILDREN):
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass
    if signum is not None:
        raise SystemExit(128 + signum)


def snapshot_tree(dst: Path, repo: Path = REPO) -> Path:
    """Copy the files of the working tree at ``repo`` as they are now -- tracked ones and
    untracked ones that are not ignored (a test written for a survivor counts before it
    is committed) -- into ``dst``, a fresh folder.  Build outputs, reports and the venv
    are ignored files and are not copied."""
    out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                         cwd=repo, capture_output=True, check=True).stdout
    if dst.exists():
        shutil.rmtree(dst)
    for rel in filter(None, out.split(b"\0")):
        src = repo / os.fsdecode(rel)
        if src.is_file():  # a tracked file deleted in the tree is left out, as in the tree
            d = dst / os.fsdecode(rel)
            d.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, d)
    return dst


class HarnessError(SystemExit):
    """A run failed before its simulation was built: the campaign's result is void."""


def _check_harness(res: dict, what: str, work: Path) -> dict:
    if res["outcome"] == "harness_error":
        raise HarnessError(f"{what}: the harness failed before simulating ({res['message']}); "
                           f"nothing is scored (see {work / 'log.txt'})")
    return res


def run_netlist(core: str, sim: str, rtl: Path, work: Path, seed: int, budget: float,
                mode: str, tests: list[str], outer_timeout: float, tree: Path = REPO) -> dict:
    """Run the regression row on the netlist folder ``rtl`` in a child process that
    imports the harness and the testbenches from ``tree`` (a :func:`snapshot_tree`)."""
    work.mkdir(parents=True, exist_ok=True)
    out = work / "result.json"
    out.unlink(missing_ok=True)
    spec = {"core": core, "sim": sim, "rtl": str(rtl.resolve()), "build": str((work / "build").resolve()),
            "seed": seed, "budget": budget, "mode": mode, "tests": tests, "out": str(out.resolve())}
    env = dict(os.environ, PYTHONPATH=str(tree), PYTHONHASHSEED="0")
    t0 = time.monotonic()
    with open(work / "log.txt", "w") as log:
        proc = subprocess.Popen([sys.executable, "-m", "verif.mutate", "--child", json.dumps(spec)],
                                cwd=tree, env=env, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
        _CHILDREN.add(proc.pid)
        try:
            proc.wait(timeout=outer_timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            _CHILDREN.discard(proc.pid)
            return {"outcome": "timeout", "failed": [], "tests_run": [], "per_test": {},
                    "message": f"whole run killed after {outer_timeout:g} s",
                    "wall_s": round(time.monotonic() - t0, 2)}
    _CHILDREN.discard(proc.pid)
    if not out.is_file():  # the child itself died (it writes a result for every simulator outcome)
        return {"outcome": "harness_error", "failed": [], "tests_run": [], "per_test": {},
                "message": f"mutation child exited {proc.returncode} without a result (see {work / 'log.txt'})",
                "wall_s": round(time.monotonic() - t0, 2)}
    res = json.loads(out.read_text())
    res["wall_s_total"] = round(time.monotonic() - t0, 2)
    return res


# ---------------------------------------------------------------- campaign
def netlist_path(core: str) -> Path:
    return REPO / "ip" / core / "rtl" / f"{core}.v"


def run_campaign(core: str, n: int, jobs: int, sim: str, seed: int, sample_seed: int,
                 mode: str, work_root: Path, log=print) -> dict:
    src = netlist_path(core)
    text = src.read_text()
    lines = text.splitlines(keepends=True)
    nl_sha = hashlib.sha256(text.encode()).hexdigest()[:16]
    all_m = enumerate_mutants(text)
    order = sample_order(all_m, sample_seed)
    _STOP.clear()  # a harness error of an earlier campaign in this process does not stop this one
    root = work_root / core
    if root.exists():
        shutil.rmtree(root)
    # baseline: the unmutated netlist through the same path
    base_dir = root / "baseline"
    (base_dir / "rtl").mkdir(parents=True)
    shutil.copy(src, base_dir / "rtl" / src.name)
    tree = snapshot_tree(root / "tree")
    from verif import harness
    mod = harness._test_module(core, [str(tree / "verif" / core)])
    tests = harness.declared_tests(mod)
    log(f"{core}: {len(all_m)} candidate mutants; baseline ({sim}, seed {seed}, {len(tests)} cocotb tests)")
    t0 = time.monotonic()
    base = _check_harness(run_netlist(core, sim, base_dir / "rtl", base_dir, seed, 3600.0, "suite",
                                      tests, 7200.0, tree), f"{core} baseline", base_dir)
    base_wall = time.monotonic() - t0
    shutil.rmtree(base_dir / "build", ignore_errors=True)
    log(f"{core}: baseline {base['outcome']} in {base_wall:.1f} s")
    if base["outcome"] != "survived":
        raise SystemExit(f"{core}: the unmutated netlist does not pass its regression "
                         f"({base['outcome']}: {base['message']}); see {base_dir / 'log.txt'}")
    sim_total = sum(base["per_test"].values())
    if mode == "auto":
        mode = "suite" if base_wall < AUTO_SUITE_S else "first-fail"
    tests_sorted = sorted(tests, key=lambda t: (base["per_test"].get(t, 1e9), t))
    budget = max(60.0, 5 * max(base["per_test"].values(), default=sim_total) if mode == "first-fail"
                 else 5 * sim_total)
    outer = 5 * base_wall + budget * (len(tests) if mode == "first-fail" else 1) + 300
    results: list[dict] = []
    idx = 0
    import threading
    lock = threading.Lock()

    def next_mutant():
        """(k, result slot) of the next mutant to run, "wait" while running mutants may
        still turn out stillborn, None when N viable mutants are done or none is left."""
        nonlocal idx
        with lock:
            viable = sum(r["outcome"] not in (None, "stillborn") for r in results)
            pending = sum(r["outcome"] is None for r in results)
            if viable >= n or idx >= len(order) or _STOP:
                return None
            if viable + pending >= n:
                return "wait"
            k = idx
            idx += 1
            r = {"k": k, "outcome": None}
            results.append(r)
            return k, r

    def worker():
        while True:
            got = next_mutant()
            if got is None:
                return
            if got == "wait":
                time.sleep(1.0)
                continue
            k, r = got
            m = order[k]
            wd = root / f"m{k:03d}"
            (wd / "rtl").mkdir(parents=True, exist_ok=True)
            (wd / "rtl" / src.name).write_text("".join(m.apply(lines)))
            res = run_netlist(core, sim, wd / "rtl", wd, seed, budget, mode, tests_sorted, outer, tree)
            shutil.rmtree(wd / "build", ignore_errors=True)
            if res["outcome"] == "harness_error":
                _STOP.append(True)  # start no further mutant: the environment, not the mutant, failed
            with lock:
                r.update(asdict(m), key=m.key, mutated_line=m.apply(lines)[m.line - 1].strip(),
                         original_line=lines[m.line - 1].strip(), **{
                             kk: res.get(kk) for kk in ("failed", "message", "wall_s", "tests_run")})
                r["wall_s_total"] = res.get("wall_s_total", res.get("wall_s"))
                r["outcome"] = res["outcome"]
                done = sum(x["outcome"] is not None for x in results)
            log(f"{core} m{k:03d} L{m.line} {m.cls:6s} {m.original.strip()!r}->{m.replacement.strip()!r}: "
                f"{res['outcome']} ({r['wall_s_total']:.0f} s; {done} done)")

    t1 = time.monotonic()
    with ThreadPoolExecutor(max_workers=jobs) as ex:
        futs = [ex.submit(worker) for _ in range(jobs)]
        for f in futs:
            f.result()
    wall = time.monotonic() - t1
    for r in results:
        _check_harness(r, f"{core} m{r['k']:03d}", root / f"m{r['k']:03d}")
    results.sort(key=lambda r: r["k"])
    return {"core": core, "sim": sim, "seed": seed, "sample_seed": sample_seed, "mode": mode,
            "n": n, "jobs": jobs, "netlist": str(src.relative_to(REPO)), "netlist_sha256": nl_sha,
            "candidates": len(all_m), "candidates_by_class": {c: sum(m.cls == c for m in all_m) for c in CLASSES},
            "baseline_wall_s": round(base_wall, 1), "baseline_tests": len(base["tests_run"]),
            "budget_s": budget, "campaign_wall_s": round(wall, 1), "results": results,
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}


def rerun_survivors(camp: dict, work_root: Path, log=print, only: set[int] | None = None) -> dict:
    """Run every survivor of a finished campaign again against the current regression (after
    a test was added to kill it): the same mutant of the same netlist (its SHA-256 must be
    unchanged), the same row, seed and mode, every cocotb test the module declares now.
    Killed mutants are not rerun (a test added later cannot make them pass).  A survivor's
    new outcome replaces the old one; ``rerun`` records when, and the old outcome."""
    core = camp["core"]
    src = netlist_path(core)
    text = src.read_text()
    if hashlib.sha256(text.encode()).hexdigest()[:16] != camp["netlist_sha256"]:
        raise SystemExit(f"{core}: the netlist changed since the campaign; run make mutate again")
    lines = text.splitlines(keepends=True)
    tree = snapshot_tree(work_root / core / "rerun-tree")
    from verif import harness
    tests = harness.declared_tests(harness._test_module(core, [str(tree / "verif" / core)]))
    for r in camp["results"]:
        if r["outcome"] != "survived" or (only is not None and r["k"] not in only):
            continue
        m = Mutant(r["line"], r["col"], r["end"], r["cls"], r["original"], r["replacement"])
        wd = work_root / core / f"rerun-m{r['k']:03d}"
        (wd / "rtl").mkdir(parents=True, exist_ok=True)
        (wd / "rtl" / src.name).write_text("".join(m.apply(lines)))
        res = run_netlist(core, camp["sim"], wd / "rtl", wd, camp["seed"], camp["budget_s"],
                          camp["mode"], tests, 5 * camp["baseline_wall_s"] + camp["budget_s"] * len(tests) + 300,
                          tree)
        shutil.rmtree(wd / "build", ignore_errors=True)
        _check_harness(res, f"{core} m{r['k']:03d} rerun", wd)
        r["rerun"] = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "was": r["outcome"],
                      "tests": len(tests)}
        r.update(outcome=res["outcome"], failed=res.get("failed"), message=res.get("message"))
        log(f"{core} m{r['k']:03d} rerun: {res['outcome']} {', '.join(res.get('failed') or [])}")
    return camp


# ---------------------------------------------------------------- reports
def _esc(s: str) -> str:
    return s.replace("|", "\\|").replace("`", "'")


def write_report(camp: dict, reports: Path = REPORTS) -> Path:
    core = camp["core"]
    eqv = load_equivalent(core)
    sc = score(camp["results"], set(eqv))
    camp["score"] = sc
    reports.mkdir(parents=True, exist_ok=True)
    (reports / f"{core}.json").write_text(json.dumps(camp, indent=1))
    ran = [r for r in camp["results"] if r["outcome"] != "stillborn"]
    per = [r["wall_s_total"] for r in camp["results"] if r.get("wall_s_total") is not None]
    mean = sum(per) / len(per) if per else 0.0
    L = [f"# Mutation score: {core}", "",
         f"- netlist: `{camp['netlist']}` (sha256 {camp['netlist_sha256']}), {camp['candidates']} candidate "
         f"single-point mutants ({', '.join(f'{c} {k}' for c, k in camp['candidates_by_class'].items() if k)})",
         f"- regression row: `default-{camp['sim']}` (`verif/{core}`, every cocotb test), run seed "
         f"{camp['seed']}, mode `{camp['mode']}`, wall budget {camp['budget_s']:g} s per simulation; "
         f"sample seed {camp['sample_seed']}, N = {camp['n']}, {camp['jobs']} jobs; {camp['date']}",
         f"- baseline (unmutated netlist, same path): pass, {camp['baseline_tests']} cocotb tests, "
         f"{camp['baseline_wall_s']:g} s",
         f"- cost: {mean / 60:.2f} min per mutant (mean wall time of one mutant run incl. build, "
         f"{len(per)} runs), campaign {camp['campaign_wall_s'] / 60:.1f} min with {camp['jobs']} jobs",
         "",
         f"**Score: {sc['total_killed']} / {sc['viable']} viable mutants killed = "
         + (f"{sc['score']:.1f} %" if sc['score'] is not None else "n/a") + "**"
         + (f"; {sc['equivalent']} survivor(s) argued equivalent, adjusted "
            f"{sc['adjusted']:.1f} %" if sc["equivalent"] else ""),
         "",
         f"killed {sc['killed']}, timeout {sc['timeout']}, error {sc['error']} (these three count as killed), "
         f"survived {sc['survived']}, stillborn {sc['stillborn']} (not compiled by {camp['sim']}: excluded "
         "from the score, replaced by the next mutant of the sample)", "",
         "## Survivors", ""]
    surv = [r for r in ran if r["outcome"] == "survived"]
    if not surv:
        L.append("None.")
    for r in surv:
        why = eqv.get(norm_key(r["key"]))
        L.append(f"- m{r['k']:03d} line {r['line']} ({r['cls']}) `{_esc(r['original_line'])}` -> "
                 f"`{_esc(r['mutated_line'])}`: "
                 + (f"argued equivalent: {why}" if why else "**not killed, not argued equivalent**"))
    late = [r for r in ran if r.get("rerun") and r["outcome"] != "survived"]
    if late:
        L += ["", "Survivors of the campaign killed by a test added afterwards (`--rerun-survivors`):", ""]
        for r in late:
            L.append(f"- m{r['k']:03d} line {r['line']} ({r['cls']}) `{_esc(r['original_line'])}` -> "
                     f"`{_esc(r['mutated_line'])}`: {r['outcome']} by {', '.join(r.get('failed') or []) or '?'} "
                     f"({r['rerun']['date']})")
    L += ["", "## Every mutant", "",
          "| # | line | class | original | mutated | result | failing cocotb test(s) | s |",
          "|---|------|-------|----------|---------|--------|------------------------|---|"]
    for r in camp["results"]:
        f = r.get("failed") or []
        fails = ", ".join(f[:3]) + (f" (+{len(f) - 3} more)" if len(f) > 3 else "")
        if r["outcome"] in ("stillborn", "error") and not fails:
            fails = _esc((r.get("message") or "").splitlines()[0][:80]) if r.get("message") else ""
        res = r["outcome"] + (f" (rerun {r['rerun']['date']}; was {r['rerun']['was']})" if r.get("rerun") else "")
        L.append(f"| m{r['k']:03d} | {r['line']} | {r['cls']} | `{_esc(r['original'])}` | "
                 f"`{_esc(r['replacement'])}` | {res} | {_esc(fails)} | {r.get('wall_s_total') or 0:.0f} |")
    L += ["", "Line text of every mutant: `reports/mutation/" + core + ".json` (`original_line`, "
          "`mutated_line`). Replay one: `make mutate CORE=" + core + f" N={camp['n']}` rewrites "
          f"`build/mutate/{core}/m<k>/rtl/{core}.v`.", ""]
    out = reports / f"{core}.md"
    out.write_text("\n".join(L))
    return out


def write_summary(reports: Path = REPORTS) -> Path:
    rows = []
    for f in sorted(reports.glob("*.json")):
        camp = json.loads(f.read_text())
        sc = score(camp["results"], set(load_equivalent(camp["core"])))
        per = [r["wall_s_total"] for r in camp["results"] if r.get("wall_s_total") is not None]
        rows.append((camp, sc, (sum(per) / len(per) / 60) if per else 0.0))
    L = ["# Mutation scores (`make mutate CORE=<core> N=<n>`)", "",
         "Single-point mutants of each committed default netlist, run against the core's "
         "`default-<sim>` regression row (`verif/mutate.py`). Score = killed (incl. timeout and "
         "simulator error) / viable; stillborn mutants (not compiled) are excluded. Target: "
         ">= 90 % of >= 40 mutants.", "",
         "| core | sim | viable | killed | survived | equivalent | stillborn | score | adjusted | min/mutant | date |",
         "|------|-----|--------|--------|----------|------------|-----------|-------|----------|------------|------|"]
    for camp, sc, mpm in rows:
        fmt = (lambda v: "n/a" if v is None else f"{v:.1f} %")
        L.append(f"| [{camp['core']}]({camp['core']}.md) | {camp['sim']} | {sc['viable']} | {sc['total_killed']} | "
                 f"{sc['survived']} | {sc['equivalent']} | {sc['stillborn']} | {fmt(sc['score'])} | "
                 f"{fmt(sc['adjusted'])} | {mpm:.2f} | {camp['date']} |")
    L.append("")
    out = reports / "summary.md"
    out.write_text("\n".join(L))
    return out


# ---------------------------------------------------------------- command line
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m verif.mutate", description=__doc__.split("\n\n")[0])
    ap.add_argument("--core")
    ap.add_argument("-n", type=int, default=40, help="viable mutants to run (default 40)")
    ap.add_argument("--jobs", type=int, default=2, help="mutants run in parallel (default 2)")
    ap.add_argument("--sim", choices=("icarus", "verilator"), default="icarus")
    ap.add_argument("--seed", type=int, default=1, help="run seed of every simulation (default 1)")
    ap.add_argument("--sample-seed", type=int, default=1)
    ap.add_argument("--mode", choices=("auto", "suite", "first-fail"), default="auto")
    ap.add_argument("--rerun-survivors", action="store_true",
                    help="run the survivors in reports/mutation/<core>.json again against the "
                         "current tests (after adding a test that kills one)")
    ap.add_argument("--only", help="with --rerun-survivors: these mutants only (m027,m031)")
    ap.add_argument("--list", action="store_true", help="print the sampled mutants and exit")
    ap.add_argument("--summary", action="store_true", help="only rebuild reports/mutation/summary.md")
    ap.add_argument("--report", action="store_true",
                    help="only rewrite reports/mutation/<core>.md from its .json (after editing "
                         "verif/mutation_equivalent.txt)")
    ap.add_argument("--work", default=str(REPO / "build" / "mutate"))
    ap.add_argument("--reports", default=str(REPORTS))
    ap.add_argument("--child", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        return _child(a)
    reports = Path(a.reports)
    if a.summary:
        print(write_summary(reports))
        return 0
    if not a.core:
        ap.error("--core is required")
    from rtl_gen.registry import cores_named
    cores_named([a.core])
    src = netlist_path(a.core)
    if not src.is_file():
        ap.error(f"no netlist {src}")
    if a.rerun_survivors:
        only = {int(x.strip().lstrip("m")) for x in a.only.split(",")} if a.only else None
        camp = rerun_survivors(json.loads((reports / f"{a.core}.json").read_text()), Path(a.work), only=only)
        print(write_report(camp, reports))
        write_summary(reports)
        return 0
    if a.report:
        camp = json.loads((reports / f"{a.core}.json").read_text())
        print(write_report(camp, reports))
        write_summary(reports)
        return 0
    if a.list:
        order = sample_order(enumerate_mutants(src.read_text()), a.sample_seed)
        for k, m in enumerate(order[:a.n]):
            print(f"m{k:03d} L{m.line} {m.cls} {m.original!r} -> {m.replacement!r}")
        return 0
    signal.signal(signal.SIGTERM, _kill_children)
    signal.signal(signal.SIGINT, _kill_children)
    camp = run_campaign(a.core, a.n, a.jobs, a.sim, a.seed, a.sample_seed, a.mode, Path(a.work))
    out = write_report(camp, reports)
    write_summary(reports)
    sc = camp["score"]
    print(f"{a.core}: {sc['total_killed']}/{sc['viable']} killed"
          + (f" = {sc['score']:.1f} %" if sc["score"] is not None else "")
          + f", {sc['survived']} survived, {sc['stillborn']} stillborn; {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
