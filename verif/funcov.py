"""Functional coverage: cover models, per-simulation export, merge, testplans, reports.

Built on cocotb-coverage (``CoverPoint``/``CoverCross``, ``coverage_db``,
``export_to_yaml``, ``merge_coverage``); this module adds what the regression needs
around it.

Cover model (``verif/<core>/covermodel.py``)
--------------------------------------------
::

    from verif.funcov import CoverModel
    COV = CoverModel("l2reg")
    COV.point("dimension", {"one": lambda v: v == 1,
                            "max": lambda v: v == COV.p["MAX_DIM"]}, "accepted cfg_dimension")
    COV.point("opcode", values=["LOAD", "STORE"])          # equality bins, label str(v)
    COV.cross("start_x_busy", ["start", "busy"])           # cross of two declared points

Every point is a cocotb-coverage ``CoverPoint`` named ``<core>.<point>`` whose bins are
string labels; a bin is hit when its predicate is true for the sampled value (bins may
overlap: ``min`` and ``negative``).  ``COV.p`` is the DUT parameter set (``DUT_PARAMS``),
read lazily so a model imports outside a simulation (the report does that).

Sampling (in the testbench, on what the DUT did)::

    COV.sample("dimension", int(dut.cfg_dimension.value))
    COV.sample_cross("start_x_busy", "start", "busy")      # samples both points, then the cross

Export
------
The first ``CoverModel`` created inside a simulation launched by ``verif.harness``
(``MLACCEL_FUNCOV_RUN`` set) registers an export at cocotb's shutdown (after the last
test, before the simulator stops; ``atexit`` as a fallback): ``coverage_db`` is written
with ``export_to_yaml`` to ``<MLACCEL_FUNCOV_DIR>/<core>/<run>.yml`` where ``<run>`` is
``<cfg>-<sim>[-<tag>]-<seed>[-tc<hash>]`` (prefixed ``<bench>-`` when the testbench is
not the core's own, e.g. ``pipearch_pu_pair`` sampling ``pipearch_pu``).

Testplan (``verif/<core>/testplan.yaml``)
-----------------------------------------
::

    core: l2reg
    features:
      - id: cfg_fields
        description: dimension and iterations at 1 and at their maxima ...
        coverage: [l2reg.dimension, l2reg.iterations, "l2reg.knob:zero"]   # points or point:bin
        tests: [dimension_edges, random_jobs]                              # cocotb test names
    waivers:
      - bin: "l2reg.knob:min"
        reason: why this bin cannot or need not be hit

Report
------
``python -m verif.funcov report [--core C ...] [--check]`` merges every file of a core
(over tests, configs, simulators, seeds) with ``merge_coverage``, writes
``reports/coverage/functional/<core>.md`` and ``summary.md``.  ``--check`` fails (exit 1)
on a declared bin neither hit nor waived, a selected core with a testplan but no
coverage data, and any testplan error (a point/bin/test that does not exist, a waiver
without a reason, a declared point no feature names).
"""
from __future__ import annotations

import argparse
import atexit
import hashlib
import importlib.util
import json
import os
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import yaml
from cocotb_coverage import coverage as _ccov

REPO = Path(__file__).resolve().parents[1]
VERIF = REPO / "verif"
OUT = REPO / "reports" / "coverage" / "functional"
ENV_DIR = "MLACCEL_FUNCOV_DIR"
ENV_RUN = "MLACCEL_FUNCOV_RUN"
ENV_BENCH = "MLACCEL_FUNCOV_BENCH"


def enabled() -> bool:
    """Testbench observers sample unless ``MLACCEL_FUNCOV=0`` (used to measure their cost)."""
    return os.environ.get("MLACCEL_FUNCOV", "1").strip() not in ("0", "no", "off", "false")


def data_root() -> Path:
    """Where simulations export: ``MLACCEL_FUNCOV_DIR``, else ``<build>/coverage/func``
    (``<build>`` = ``MLACCEL_BUILD_DIR`` or ``build/``)."""
    d = os.environ.get(ENV_DIR)
    if d:
        return Path(d)
    b = os.environ.get("MLACCEL_BUILD_DIR")
    return (Path(b) if b else REPO / "build") / "coverage" / "func"


def run_id(cfg: str, sim: str, seed: int, tag: str | None = None, testcase: str | None = None) -> str:
    """File stem of one simulation's export (see the module docstring)."""
    rid = f"{cfg}-{sim}" + (f"-{tag}" if tag else "") + f"-{seed}"
    if testcase:
        rid += "-tc" + hashlib.sha1(testcase.encode()).hexdigest()[:8]
    return rid


def harness_env(bench: str, cfg: str, sim: str, seed: int, tag: str | None, testcase: str | None) -> dict:
    """Environment ``verif.harness.run_top`` gives a simulation so its models export;
    also deletes that run's old exports (a crashed run must not leave stale data)."""
    root = data_root()
    rid = run_id(cfg, sim, seed, tag, testcase)
    if root.is_dir():
        for f in list(root.glob(f"{bench}/{rid}.yml")) + list(root.glob(f"*/{bench}-{rid}.yml")):
            f.unlink(missing_ok=True)
    return {ENV_DIR: str(root), ENV_RUN: rid, ENV_BENCH: bench}


# ---------------------------------------------------------------- cover models
MODELS: dict[str, "CoverModel"] = {}
_EXPORT_ARMED = False


def _label(v) -> str:
    return str(v)


@dataclass
class Point:
    name: str               # short name (without the core)
    full: str               # <core>.<name>
    labels: list[str]
    doc: str
    sampler: Callable       # the CoverPoint-decorated function
    cross_of: list[str] = field(default_factory=list)

    @property
    def item(self):
        return _ccov.coverage_db[self.full]


class CoverModel:
    """The coverage points of one core (see the module docstring).  One instance per
    core and process: ``CoverModel("x")`` twice returns the same model."""

    def __new__(cls, core: str):
        if core in MODELS:
            return MODELS[core]
        self = super().__new__(cls)
        self.core = core
        self.points: dict[str, Point] = {}
        self._p = None
        MODELS[core] = self
        _arm_export()
        return self

    def __init__(self, core: str):
        pass

    @property
    def p(self) -> dict:
        """DUT parameters of the running simulation (``DUT_PARAMS``)."""
        if self._p is None:
            self._p = json.loads(os.environ.get("DUT_PARAMS", "{}"))
        return self._p

    def _check_new(self, name: str, labels: list[str]):
        if "." in name or ":" in name:
            raise ValueError(f"{self.core}: point name {name!r} must not contain '.' or ':'")
        if len(set(labels)) != len(labels) or not labels:
            raise ValueError(f"{self.core}.{name}: bin labels must be non-empty and unique: {labels}")
        bad = [lb for lb in labels if ":" in lb]
        if bad:
            raise ValueError(f"{self.core}.{name}: bin labels must not contain ':': {bad}")

    def point(self, name: str, bins: dict[str, Callable] | None = None, doc: str = "",
              values: list | None = None) -> Point:
        """Declare ``<core>.<name>``: ``bins`` maps label -> predicate(value), or
        ``values`` gives equality bins labelled ``str(value)``."""
        if (bins is None) == (values is None):
            raise ValueError(f"{self.core}.{name}: give exactly one of bins= or values=")
        if values is not None:
            bins = {_label(v): (lambda x, _v=v: x == _v) for v in values}
        labels = list(bins)
        if name in self.points:
            if self.points[name].labels != labels:
                raise ValueError(f"{self.core}.{name} declared twice with different bins")
            return self.points[name]
        self._check_new(name, labels)
        preds = dict(bins)
        full = f"{self.core}.{name}"

        @_ccov.CoverPoint(full, xf=lambda v: v, rel=lambda v, lb: bool(preds[lb](v)),
                          bins=labels, inj=False)
        def sampler(value):
            return None

        pt = Point(name, full, labels, doc, sampler)
        self.points[name] = pt
        return pt

    def cross(self, name: str, items: list[str], doc: str = "", ignore: list[tuple] = ()) -> Point:
        """Declare ``<core>.<name>``, the cross of the declared points ``items``; its
        bins are labelled ``a*b`` (``ignore``: label tuples to leave out, None = any)."""
        for it in items:
            if it not in self.points or self.points[it].cross_of:
                raise ValueError(f"{self.core}.{name}: cross item {it!r} is not a declared point")
        full = f"{self.core}.{name}"
        if name in self.points:
            return self.points[name]

        @_ccov.CoverCross(full, items=[self.points[i].full for i in items], ign_bins=list(ignore))
        def sampler(*values):
            return None

        keys = list(_ccov.coverage_db[full].detailed_coverage)
        labels = ["*".join(k) for k in keys]
        self._check_new(name, labels)
        pt = Point(name, full, labels, doc, sampler, list(items))
        self.points[name] = pt
        return pt

    def sample(self, name: str, value) -> None:
        pt = self.points[name]
        if pt.cross_of:
            raise ValueError(f"{pt.full} is a cross: use sample_cross")
        pt.sampler(value)

    def sample_cross(self, name: str, *values) -> None:
        """Sample the cross's points with ``values`` (in order), then the cross."""
        pt = self.points[name]
        if len(values) != len(pt.cross_of):
            raise ValueError(f"{pt.full}: {len(pt.cross_of)} values expected")
        for it, v in zip(pt.cross_of, values):
            self.points[it].sampler(v)
        pt.sampler(*values)

    def hits(self) -> dict[str, dict[str, int]]:
        """This process's hits: {point: {label: hits}}."""
        out = {}
        for name, pt in self.points.items():
            det = pt.item.detailed_coverage
            out[name] = {("*".join(k) if isinstance(k, tuple) else str(k)): int(v) for k, v in det.items()}
        return out


# ---------------------------------------------------------------- export
def export_path(core: str) -> Path | None:
    rid = os.environ.get(ENV_RUN)
    if not rid:
        return None
    bench = os.environ.get(ENV_BENCH, core)
    stem = rid if bench == core else f"{bench}-{rid}"
    return data_root() / core / f"{stem}.yml"


def export_all() -> list[Path]:
    """Write every model of this process (``coverage_db.export_to_yaml``), one file per core."""
    out = []
    for core in list(MODELS):
        path = export_path(core)
        if path is None:
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        _ccov.coverage_db.export_to_yaml(str(tmp))
        tmp.replace(path)
        out.append(path)
    return out


def _arm_export():
    global _EXPORT_ARMED
    if _EXPORT_ARMED or not os.environ.get(ENV_RUN):
        return
    _EXPORT_ARMED = True
    try:
        import cocotb._shutdown as sd  # cocotb 2.x: called after the last test (regression tear-down)
        sd.register(export_all)
    except ImportError:
        pass
    atexit.register(export_all)


# ---------------------------------------------------------------- loading models and plans
class PlanError(ValueError):
    pass


def load_model(core: str, verif_dir: Path = VERIF) -> CoverModel:
    """Import ``<verif_dir>/<core>/covermodel.py`` (declares the points) and return the model."""
    f = Path(verif_dir) / core / "covermodel.py"
    name = f"verif.{core}.covermodel" if Path(verif_dir).resolve() == VERIF else f"_funcov_{core}_covermodel"
    if name not in sys.modules:
        if not f.is_file():
            raise PlanError(f"{core}: no cover model {f}")
        spec = importlib.util.spec_from_file_location(name, f)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        try:
            spec.loader.exec_module(mod)
        except BaseException:
            del sys.modules[name]
            raise
    if core not in MODELS:
        raise PlanError(f"{core}: {f} declares no CoverModel({core!r})")
    return MODELS[core]


def _ref(core: str, model: CoverModel, ref: str, need_bin: bool, where: str) -> tuple[str, str | None]:
    """Parse ``<core>.<point>[:<bin>]`` -> (point, bin); raise PlanError if it does not exist."""
    ref = str(ref)
    pt_part, _, b = ref.partition(":")
    if not pt_part.startswith(core + "."):
        raise PlanError(f"{where}: {ref!r} is not named {core}.<point>")
    name = pt_part[len(core) + 1:]
    if name not in model.points:
        raise PlanError(f"{where}: point {pt_part} does not exist in the cover model "
                        f"(declared: {', '.join(sorted(model.points))})")
    if need_bin and not b:
        raise PlanError(f"{where}: {ref!r} names no bin (<core>.<point>:<bin>)")
    if b and b not in model.points[name].labels:
        raise PlanError(f"{where}: bin {b!r} does not exist in {pt_part} "
                        f"(bins: {', '.join(model.points[name].labels)})")
    return name, (b or None)


def cocotb_tests(core: str, verif_dir: Path = VERIF) -> set[str] | None:
    """Names of the cocotb tests of ``<verif_dir>/<core>/test_*.py`` (None if they cannot
    be imported here)."""
    from verif.harness import _test_module, declared_tests
    names: set[str] = set()
    d = Path(verif_dir) / core
    try:
        for f in sorted(d.glob("test_*.py")):
            mod = _test_module(f.stem[5:], [str(d)])
            if mod is not None:
                names.update(declared_tests(mod))
    except Exception:  # noqa: BLE001 -- reported as "not checked"
        return None
    return names


def load_plan(core: str, verif_dir: Path = VERIF, check_tests: bool = True) -> dict:
    """Read and validate ``<verif_dir>/<core>/testplan.yaml`` against the core's cover
    model.  Returns {"features": [...], "waivers": {(point, bin): reason}, "model", "notes"};
    raises PlanError on any inconsistency."""
    f = Path(verif_dir) / core / "testplan.yaml"
    try:
        doc = yaml.safe_load(f.read_text())
    except (OSError, yaml.YAMLError) as e:
        raise PlanError(f"{core}: cannot read {f}: {e}") from None
    if not isinstance(doc, dict):
        raise PlanError(f"{f}: expected a mapping with core, features, waivers")
    unknown = set(doc) - {"core", "description", "features", "waivers"}
    if unknown:
        raise PlanError(f"{f}: unknown key(s) {sorted(unknown)}")
    if doc.get("core") != core:
        raise PlanError(f"{f}: core is {doc.get('core')!r}, expected {core!r}")
    model = load_model(core, verif_dir)
    feats = doc.get("features") or []
    if not isinstance(feats, list) or not feats:
        raise PlanError(f"{f}: features must be a non-empty list")
    tests = cocotb_tests(core, verif_dir) if check_tests else None
    seen_ids, named = set(), set()
    out_feats = []
    for i, ft in enumerate(feats):
        where = f"{f}: feature {i + 1}"
        if not isinstance(ft, dict):
            raise PlanError(f"{where}: expected a mapping")
        bad = set(ft) - {"id", "description", "coverage", "tests"}
        if bad:
            raise PlanError(f"{where}: unknown key(s) {sorted(bad)}")
        fid = str(ft.get("id") or "").strip()
        if not fid or fid in seen_ids:
            raise PlanError(f"{where}: id missing or duplicated ({fid!r})")
        seen_ids.add(fid)
        where = f"{f}: feature {fid}"
        if not str(ft.get("description") or "").strip():
            raise PlanError(f"{where}: description missing")
        cov = ft.get("coverage") or []
        if not isinstance(cov, list) or not cov:
            raise PlanError(f"{where}: coverage must list at least one point")
        refs = [_ref(core, model, r, False, where) for r in cov]
        named.update(p for p, _ in refs)
        ftests = [str(t) for t in (ft.get("tests") or [])]
        if not ftests:
            raise PlanError(f"{where}: tests must name at least one cocotb test")
        if tests is not None:
            missing = [t for t in ftests if t not in tests]
            if missing:
                raise PlanError(f"{where}: no cocotb test named {', '.join(missing)} in verif/{core}/test_*.py")
        out_feats.append({"id": fid, "description": str(ft["description"]).strip(), "refs": refs,
                          "tests": ftests})
    notdone = sorted(set(model.points) - named)
    if notdone:
        raise PlanError(f"{f}: declared point(s) no feature names: {', '.join(f'{core}.{p}' for p in notdone)}")
    waivers = {}
    for i, w in enumerate(doc.get("waivers") or []):
        where = f"{f}: waiver {i + 1}"
        if not isinstance(w, dict) or set(w) - {"bin", "reason"}:
            raise PlanError(f"{where}: expected {{bin, reason}}")
        key = _ref(core, model, w.get("bin", ""), True, where)
        reason = str(w.get("reason") or "").strip()
        if not reason:
            raise PlanError(f"{where}: waiver of {w.get('bin')} has no reason")
        if key in waivers:
            raise PlanError(f"{where}: {w.get('bin')} waived twice")
        waivers[key] = reason
    return {"features": out_feats, "waivers": waivers, "model": model,
            "tests_checked": tests is not None}


# ---------------------------------------------------------------- merge
def data_files(core: str, root: Path | None = None) -> list[Path]:
    root = Path(root) if root is not None else data_root()
    return sorted((root / core).glob("*.yml"))


def merge(core: str, model: CoverModel, files: list[Path], merged: Path | None = None):
    """Merge ``files`` with cocotb-coverage's ``merge_coverage`` after projecting each on
    the current model (bins it does not declare are dropped and counted as stale, missing
    ones are 0).  Returns ({point: {label: hits}}, stale bin count)."""
    stale = 0
    hits = {n: {lb: 0 for lb in pt.labels} for n, pt in model.points.items()}
    if not files:
        return hits, 0
    with tempfile.TemporaryDirectory() as td:
        norm = []
        for k, f in enumerate(files):
            db = yaml.safe_load(Path(f).read_text()) or {}
            out = {}
            for name, pt in model.points.items():
                ent = db.get(pt.full) or {}
                raw = ent.get("bins:_hits") or {}
                keys = _bin_keys(pt)
                got = {}
                for rk, v in raw.items():
                    lb = keys.get(str(rk))
                    if lb is None:
                        stale += 1
                    else:
                        got[lb] = int(v)
                bh = {lb: got.get(lb, 0) for lb in pt.labels}
                out[pt.full] = {"size": len(bh), "coverage": sum(1 for v in bh.values() if v > 0),
                                "cover_percentage": 0.0, "weight": 1, "at_least": 1, "bins:_hits": bh}
            out[model.core] = {"size": sum(e["size"] for e in out.values()),
                               "coverage": sum(e["coverage"] for e in out.values()), "cover_percentage": 0.0}
            p = Path(td) / f"{k}.yml"
            p.write_text(yaml.safe_dump(out))
            norm.append(str(p))
        dest = merged or Path(td) / "merged.yml"
        Path(dest).parent.mkdir(parents=True, exist_ok=True)
        _ccov.merge_coverage(lambda *_: None, str(dest), *norm)
        db = yaml.safe_load(Path(dest).read_text())
    for name, pt in model.points.items():
        for lb, v in (db.get(pt.full, {}).get("bins:_hits") or {}).items():
            hits[name][str(lb)] = int(v)
    return hits, stale


def _bin_keys(pt: Point) -> dict[str, str]:
    """How export_to_yaml spells each bin (str of the key) -> label."""
    det = pt.item.detailed_coverage
    return {str(k): ("*".join(k) if isinstance(k, tuple) else str(k)) for k in det}


# ---------------------------------------------------------------- report
@dataclass
class CoreResult:
    core: str
    declared: int = 0
    hit: int = 0
    waived: int = 0
    unhit: list = field(default_factory=list)     # [(point, bin)]
    errors: list = field(default_factory=list)
    files: int = 0
    runs: list = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors and not self.unhit and self.files > 0

    def verdict(self) -> str:
        if self.errors:
            return "ERROR: " + "; ".join(e.splitlines()[0] for e in self.errors)
        if self.files == 0:
            return "NO DATA"
        if self.unhit:
            return f"FAIL: {len(self.unhit)} unhit"
        return "pass"


def planned_cores(verif_dir: Path = VERIF) -> list[str]:
    return sorted(p.parent.name for p in Path(verif_dir).glob("*/testplan.yaml"))


def _table(headers, rows):
    esc = lambda s: str(s).replace("|", "\\|").replace("\n", " ")
    out = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    out += ["| " + " | ".join(esc(c) for c in r) + " |" for r in rows]
    return out


def core_report(core: str, verif_dir: Path = VERIF, root: Path | None = None,
                out_dir: Path = OUT, check_tests: bool = True) -> CoreResult:
    res = CoreResult(core)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    try:
        plan = load_plan(core, verif_dir, check_tests)
    except Exception as e:  # noqa: BLE001 -- any plan/model problem is a reported error
        res.errors.append(f"{type(e).__name__}: {e}" if not isinstance(e, PlanError) else str(e))
        (out_dir / f"{core}.md").write_text(f"# Functional coverage: {core}\n\n**ERROR**: {res.errors[0]}\n")
        return res
    model = plan["model"]
    files = data_files(core, root)
    res.files = len(files)
    res.runs = [f.stem for f in files]
    root_p = Path(root) if root is not None else data_root()
    hits, stale = merge(core, model, files, root_p / "merged" / f"{core}.yml" if files else None)
    waivers = plan["waivers"]
    lines = [f"# Functional coverage: {core}", "",
             f"Cover model `verif/{core}/covermodel.py`, testplan `verif/{core}/testplan.yaml`; "
             f"merged over {len(files)} simulation export(s) (`build/coverage/func/{core}/`, "
             "one per configuration, simulator and seed) with cocotb-coverage `merge_coverage`.", ""]
    if files:
        lines += ["Runs: " + ", ".join(f"`{s}`" for s in res.runs), ""]
    if stale:
        lines += [f"Note: {stale} bin entries in the exports are no longer declared (older model) and were ignored.", ""]
    rows_pts = []
    for name, pt in model.points.items():
        for lb in pt.labels:
            h = hits[name][lb]
            res.declared += 1
            w = waivers.get((name, lb))
            if h > 0:
                res.hit += 1
                st = "hit" + (f" (waived: {w})" if w else "")
            elif w:
                res.waived += 1
                st = f"waived: {w}"
            else:
                st = "**UNHIT**"
                res.unhit.append((name, lb))
            rows_pts.append((f"{core}.{name}", lb, h, st))
    for (p, b), w in waivers.items():
        if hits[p][b] > 0:
            pass
    if not files:
        res.errors.append(f"{core}: testplan but no coverage data in {root_p / core}")
    lines += ["## Summary", ""]
    lines += _table(["bins declared", "hit", "waived", "unhit", "verdict"],
                    [[res.declared, res.hit, res.waived, len(res.unhit), res.verdict()]])
    lines += ["", "## Features", ""]
    frows = []
    for ft in plan["features"]:
        bins = [(p, b) for p, bb in ft["refs"] for b in ([bb] if bb else model.points[p].labels)]
        nh = sum(hits[p][b] > 0 for p, b in bins)
        nw = sum(hits[p][b] == 0 and (p, b) in waivers for p, b in bins)
        refs = ", ".join(f"{core}.{p}" + (f":{b}" if b else "") for p, b in ft["refs"])
        frows.append([ft["id"], ft["description"], refs, ", ".join(ft["tests"]),
                      f"{nh}/{len(bins)} hit" + (f", {nw} waived" if nw else "")])
    lines += _table(["feature", "description", "coverage", "tests", "bins"], frows)
    lines += ["", "## Points and bins", ""]
    for name, pt in model.points.items():
        kind = f"cross of {', '.join(pt.cross_of)}" if pt.cross_of else "point"
        lines += [f"### {core}.{name} ({kind})", ""] + ([pt.doc, ""] if pt.doc else [])
        lines += _table(["bin", "hits", "status"], [[r[1], r[2], r[3]] for r in rows_pts if r[0] == pt.full])
        lines += [""]
    lines += ["## Unhit bins", ""]
    lines += [f"- {core}.{p}:{b}" for p, b in res.unhit] or ["(none)"]
    lines += ["", "## Waivers", ""]
    lines += [f"- {core}.{p}:{b} ({'hit anyway' if hits[p][b] else 'unhit'}): {w}"
              for (p, b), w in waivers.items()] or ["(none)"]
    lines += [""]
    if not plan["tests_checked"]:
        lines += ["Note: the test names of the plan could not be checked here (test modules not importable).", ""]
    (out_dir / f"{core}.md").write_text("\n".join(lines))
    return res


def report(cores: list[str] | None = None, check: bool = False, verif_dir: Path = VERIF,
           root: Path | None = None, out_dir: Path = OUT, check_tests: bool = True,
           log=print) -> tuple[int, list[CoreResult]]:
    """Write the per-core reports and the summary; returns (exit code, results).  The
    summary covers every core with a testplan; the exit code only the selected ones."""
    allc = planned_cores(verif_dir)
    sel = list(cores) if cores else allc
    results = [core_report(c, verif_dir, root, out_dir, check_tests) for c in allc]
    unknown = [c for c in sel if c not in allc]
    out_dir = Path(out_dir)
    rows = [[r.core, r.declared, r.hit, r.waived, len(r.unhit), r.verdict()] for r in results]
    tot = [sum(r.declared for r in results), sum(r.hit for r in results), sum(r.waived for r in results),
           sum(len(r.unhit) for r in results)]
    lines = ["# Functional coverage summary", "",
             "Per core: bins declared in its cover model, hit (merged over every simulation in "
             "`build/coverage/func/`), waived in its testplan (with the reason), unhit.", ""]
    lines += _table(["core", "bins declared", "hit", "waived", "unhit", "verdict"], rows + [["total", *tot, ""]])
    lines += [""]
    (out_dir / "summary.md").write_text("\n".join(lines))
    rc = 0
    for c in unknown:
        log(f"funcov: {c}: no verif/{c}/testplan.yaml")
        rc = 1 if check else rc
    for r in results:
        if r.core not in sel:
            continue
        log(f"funcov: {r.core}: {r.hit}/{r.declared} bins hit, {r.waived} waived, {len(r.unhit)} unhit "
            f"({r.files} runs): {r.verdict()}")
        if check and not r.ok:
            rc = 1
            for p, b in r.unhit:
                log(f"funcov:   UNHIT {r.core}.{p}:{b}")
            for e in r.errors:
                log(f"funcov:   {e}")
    log(f"funcov: reports in {out_dir}")
    return rc, results


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m verif.funcov", description="functional coverage reports")
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("report", help="merge the exports, write reports/coverage/functional/")
    r.add_argument("--core", action="append", default=[], help="core(s) to report/check (default: all)")
    r.add_argument("--check", action="store_true", help="exit 1 on an unhit unwaived bin, no data or a plan error")
    r.add_argument("--data", type=Path, default=None, help="export root (default build/coverage/func)")
    r.add_argument("--out", type=Path, default=OUT, help="report directory")
    a = ap.parse_args(argv)
    cores = [c.strip() for v in a.core for c in v.split(",") if c.strip()]
    rc, _ = report(cores or None, a.check, root=a.data, out_dir=a.out)
    return rc


if __name__ == "__main__":
    # run the imported module's main: the cover models register in verif.funcov.MODELS,
    # not in this __main__ copy
    from verif import funcov as _self
    sys.exit(_self.main())
