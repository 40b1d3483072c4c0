"""Cycle costs of the fast back end, and the run-time estimate SJF uses.

Fast-model cost of one START (``cost_run``): the ISS runs the program and reports every
executed instruction (``golden.pipearch_iss.RunResult.events``); each is charged

* START: ``fw_fixed + fw_line * (program lines + context lines)`` (the firmware reads
  the header, the program and the context over the AXI master);
* a control instruction (ADDI, branches, BLOCK, YIELD, ...): ``ctrl``;
* a blocking subroutine instruction: ``lat[op] + line[op] * lines`` where ``lines`` is
  the lines it moves or streams (LOAD/STORE: ``length * iterations``; vector
  subroutines: ``dim * iterations``; SCALAR: ``iterations``);
* the streamed batch-1 SGD program (every subroutine non-blocking): ``k * D + c`` per
  DOTSIG (one sample, D model lines) and nothing for the other non-blocking
  instructions and the control instructions of the sample loop, which the pipeline
  hides;
* writing the context (at a switch and at the finish): ``ctx_write``.

Where each number comes from (``SOURCES``): ``k, c`` are the measured streamed-SGD cost
per sample of ``pipearch_pu`` (README *Measured*, ``verif/bench_limits.py``: default
0.986 D + 40.8, ``deep`` D + 39.9, ``lanes16`` 0.906 D + 45.0 since the issue-16 split of the
lane products, a least-squares line over D >= 16 of the CYCLES register).  The other constants are least-squares fits
(non-negative) to the CYCLES register of the RTL unit running a calibration set of
SGD/SCD/LRMF jobs with suspensions (``verif/pipearch_rt`` ``calibrate``, data in
``pipearch_rt/calibration.json``, refit with ``python -m pipearch_rt.costs --fit``).
Until that file exists the defaults below (engineering guesses) are used.

SJF's estimate (``estimate``) is what the paper does (section 7.1): the data the job
streams (``Built.data_bytes``: bytes per epoch times epochs) over a measured
data-consumption rate per algorithm -- for SGD one sample block of ``D + 1`` lines per
``k D + c`` cycles (the bench measurement above); for SCD and LRMF the mean of
``data_bytes / CYCLES`` over the calibration set's uninterrupted RTL runs of that
algorithm (``rate_scd``, ``rate_lrmf``; before a calibration the README's bytes read
per cycle of the default unit, SCD 1.29 B and LRMF 0.56 B, which count every byte
read rather than ``data_bytes``).
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from golden import pipearch_isa as I
from golden.pipearch_region import decode_access

CALIBRATION = Path(__file__).with_name("calibration.json")
OPS = tuple(sorted(I.SUB_OPS))

#: streamed SGD per-sample cost measured on pipearch_pu (cycles = k*D + c), per config
STREAM_SGD = {"default": (0.986, 40.8), "deep": (1.0, 39.9), "lanes16": (0.906, 45.0)}
#: measured read rates (bytes/cycle) of pipearch_pu default (README bench table)
RATE_SCD, RATE_LRMF = 1.29, 0.56

#: host cycles per START of the RTL back end (5 AXI4-Lite writes, the STATUS/ERROR/CYCLES
#: reads and on average half of the 16-cycle poll period): the mean gap per START between
#: the RTL and the fast model in the FCFS workload of verif/pipearch_rt mixed_workloads
#: (204 cycles over 6 STARTs); the other workloads there are checked with it
HOST_START = 34.0

SOURCES = {
    "stream_k, stream_c": "README Measured / verif/bench_limits.py: pipearch_pu streamed SGD, "
                          "cycles per sample = k*D + c (default 0.986, 40.8)",
    "fw_*, ctrl, lat, line, ctx_write": "NNLS fit to pipearch_pu CYCLES of the calibration runs "
                                        "(pipearch_rt/calibration.json)",
    "host_start": "RTL back end: mean START gap of the FCFS RTL workload (mixed_workloads)",
    "SJF rates": "README Measured: SCD 1.29 B/cycle, LRMF 0.56 B/cycle; SGD (D+1) lines per "
                 "k*D + c cycles",
}


@dataclass
class CostModel:
    fw_fixed: float = 20.0
    fw_line: float = 1.0
    ctrl: float = 3.0
    lat: dict = field(default_factory=lambda: {op: 10.0 for op in OPS})
    line: dict = field(default_factory=lambda: {op: 1.0 for op in OPS})
    ctx_write: float = 20.0
    stream_k: float = STREAM_SGD["default"][0]
    stream_c: float = STREAM_SGD["default"][1]
    rate_scd: float = RATE_SCD          # SJF: data consumption rates (bytes/cycle)
    rate_lrmf: float = RATE_LRMF
    host_start: float = HOST_START      # host cycles per START (fast back end)
    source: str = "defaults"

    def to_json(self) -> dict:
        d = asdict(self)
        d["lat"] = {I.SUB_OPS[k]: v for k, v in self.lat.items()}
        d["line"] = {I.SUB_OPS[k]: v for k, v in self.line.items()}
        return d

    @classmethod
    def from_json(cls, d: dict) -> "CostModel":
        names = {v: k for k, v in I.SUB_OPS.items()}
        d = dict(d)
        d["lat"] = {names[k]: float(v) for k, v in d["lat"].items()}
        d["line"] = {names[k]: float(v) for k, v in d["line"].items()}
        return cls(**d)

    @classmethod
    def load(cls, path: Path = CALIBRATION) -> "CostModel":
        """The fitted model when ``calibration.json`` exists, else the defaults."""
        if path.is_file():
            return cls.from_json(json.loads(path.read_text())["model"])
        return cls()

    # ---- features: cycles = features . params ------------------------------------------
    def param_names(self):
        return (["fw_fixed", "fw_line", "ctrl", "ctx_write"] + [f"lat_{I.SUB_OPS[o]}" for o in OPS]
                + [f"line_{I.SUB_OPS[o]}" for o in OPS])

    def param_vector(self):
        return np.array([self.fw_fixed, self.fw_line, self.ctrl, self.ctx_write]
                        + [self.lat[o] for o in OPS] + [self.line[o] for o in OPS])

    def set_params(self, v):
        v = [float(x) for x in v]
        self.fw_fixed, self.fw_line, self.ctrl, self.ctx_write = v[:4]
        self.lat = dict(zip(OPS, v[4:4 + len(OPS)]))
        self.line = dict(zip(OPS, v[4 + len(OPS):]))


def sub_lines(call) -> int:
    """Lines a subroutine instruction moves or streams (module docstring)."""
    if call.op in (I.LOAD, I.STORE):
        if call.amem is not None:
            return call.iterations
        return decode_access(call.access[0])["length"] * call.iterations
    if call.op == I.SCALAR:
        return call.iterations
    return call.w6 * call.iterations


@dataclass
class RunCost:
    cycles: float                # the whole START .. Done
    yields: list                 # cycles at which each normal-mode YIELD executes
    features: np.ndarray         # linear features (without the stream part)
    stream: float                # the streamed-SGD part (k*D + c per sample)
    read_bytes: int
    write_bytes: int


def run_features(result, n_instr: int, line_bytes: int, stream: bool, model: CostModel) -> RunCost:
    """Cost of one RunResult (``n_instr``: program length, for the firmware reads)."""
    nops = len(OPS)
    f = np.zeros(4 + 2 * nops)
    prog_lines = -(-(I.HEADER_BYTES + I.INSTR_BYTES * n_instr) // line_bytes)
    ctx_lines = -(-I.CTX_BYTES // line_bytes)
    f[0] = 1
    f[1] = prog_lines + ctx_lines
    rd = (prog_lines + ctx_lines) * line_bytes
    wr = 0
    pv = model.param_vector()
    stream_part = 0.0
    t = float(f @ pv)
    yields = []
    mode = "normal"
    if any(e.kind == "resume" for e in result.events):
        mode = "loadctx"
    for e in result.events:
        g = np.zeros_like(f)
        s = 0.0
        if e.kind == "sub":
            call = e.info["call"]
            n = sub_lines(call)
            if call.op == I.LOAD:
                rd += n * line_bytes
            elif call.op == I.STORE:
                wr += n * line_bytes
            if stream and call.nb:
                if call.op == I.DOTSIG:
                    s = model.stream_k * call.w6 + model.stream_c
            else:
                k = OPS.index(call.op)
                g[4 + k] = 1
                g[4 + nops + k] = n
        elif e.kind in ("switch", "end"):
            if e.kind == "switch" or e.info.get("mode") != "storectx":
                g[3] = 1
                wr += I.CTX_BYTES
            if e.kind == "switch":
                g[2] = 1
        elif e.kind == "error":
            pass
        elif not stream:
            g[2] = 1
        t += float(g @ pv) + s
        f += g
        stream_part += s
        if e.kind in ("yield", "switch") and mode == "normal":
            yields.append(t)
        if e.kind == "resume":
            mode = "normal"
        elif e.kind == "switch":
            mode = "storectx"
    return RunCost(t, yields, f, stream_part, rd, wr)


def estimate(built, model: CostModel | None = None) -> float:
    """SJF's run-time estimate (cycles) of a whole job: data volume / consumption rate."""
    model = model or CostModel()
    spec, job = built.spec, built.job
    lb = job.cfg.line_bytes
    if spec.kind == "sgd":
        D = -(-spec.params["n"] // job.cfg.lanes)
        rate = (D + 1) * lb / (model.stream_k * D + model.stream_c)
    elif spec.kind == "scd":
        rate = model.rate_scd
    elif spec.kind == "lrmf":
        rate = model.rate_lrmf
    else:
        return 0.0
    return built.data_bytes / rate


def consumption_rates(records, cfg=None) -> dict:
    """SJF's rates: mean ``data_bytes / CYCLES`` of the uninterrupted calibration runs
    per algorithm (jobs named as in ``pipearch_rt.workloads.calibration_set``)."""
    from .jobs import build, pu_config
    from .workloads import calibration_set
    cfg = cfg or pu_config()
    specs = {s.name: s for s in calibration_set()}
    per = {}
    for r in records:
        if r["mode"] != "plain" or r["job"] not in specs:
            continue
        sp = specs[r["job"]]
        per.setdefault(sp.kind, []).append(build(sp, cfg, 0).data_bytes / r["cycles"])
    return {k: float(np.mean(v)) for k, v in per.items()}


def fit(records, model: CostModel | None = None) -> tuple[CostModel, dict]:
    """Non-negative least squares of the linear parameters to measured cycles.

    ``records``: dicts with ``features`` (list), ``stream`` (cycles of the streamed part,
    which is fixed from the bench measurement) and ``cycles`` (the RTL's CYCLES)."""
    from scipy.optimize import nnls
    model = model or CostModel()
    X = np.array([r["features"] for r in records], dtype=float)
    y = np.array([r["cycles"] - r["stream"] for r in records], dtype=float)
    keep = np.flatnonzero(X.any(axis=0))
    v, _ = nnls(X[:, keep], y)
    p = np.zeros(X.shape[1])
    p[keep] = v
    m = CostModel(**{**asdict(model)})
    m.set_params(p)
    m.source = f"NNLS fit to {len(records)} RTL runs"
    rates = consumption_rates(records)
    m.rate_scd = rates.get("scd", m.rate_scd)
    m.rate_lrmf = rates.get("lrmf", m.rate_lrmf)
    pred = X @ p + np.array([r["stream"] for r in records])
    meas = np.array([r["cycles"] for r in records], dtype=float)
    rel = (pred - meas) / meas
    return m, {"max_rel_err": float(np.max(np.abs(rel))), "mean_abs_rel_err": float(np.mean(np.abs(rel))),
               "runs": len(records)}


def main(argv=None):
    import argparse
    ap = argparse.ArgumentParser(description="PipeArch-RT cost model: show or refit from calibration.json")
    ap.add_argument("--fit", action="store_true", help="refit the model from the recorded RTL runs")
    ap.add_argument("--runs", type=Path, help="take the runs from this file (the calibrate test writes "
                    "build/bench/pipearch_rt_calibration.json)")
    a = ap.parse_args(argv)
    d = json.loads(CALIBRATION.read_text()) if CALIBRATION.is_file() else None
    if a.runs:
        d = json.loads(a.runs.read_text())
    if a.fit:
        if d is None:
            raise SystemExit(f"{CALIBRATION} missing: run the verif/pipearch_rt calibrate test first")
        m, q = fit(d["runs"])
        d["model"], d["fit"] = m.to_json(), q
        CALIBRATION.write_text(json.dumps(d, indent=1) + "\n")
    m = CostModel.load()
    print(json.dumps(m.to_json(), indent=1))
    if d:
        print(json.dumps(d.get("fit"), indent=1))


if __name__ == "__main__":
    main()
