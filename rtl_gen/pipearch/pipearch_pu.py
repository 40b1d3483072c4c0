"""``pipearch_pu`` core: a complete PipeArch processing unit (PipeArch section 6).

Three blocks, each its own generator and core:

* ``pipearch_rm``: the register machine -- host AXI4-Lite registers, program memory,
  fetch/decode/execute, context switch, decode-time checks;
* ``pipearch_engine``: the computation engine -- regions and compute subroutines with
  their crossbar, and the region side of LOAD and STORE;
* ``pipearch_ldst``: the Load and Store AXI4 masters (bursts, outstanding reads).

This module wires them and arbitrates the AXI master between the register machine's
firmware transfers (program, context) and the LOAD/STORE subroutines:

* a start request (``fw_ld_start`` of the machine or ``ld_go`` of the engine; the same for
  stores) is captured with its owner, address and line count and handed to the AXI
  master as soon as it is idle, so a request is never lost to a one-cycle busy overlap;
* the owner's stream is connected to the master's line stream until the next request;
* LOAD/STORE stay *busy* toward the register machine until the AXI master has finished
  (for STORE: every write response received), so a blocking STORE followed by a LOAD of
  the same memory reads the new data;
* an AXI error response of a subroutine transfer is reported as that subroutine's error
  (``E_AXI`` at the PC that issued it); of a firmware transfer as the firmware error.

The instruction set, program image, context area and register map are
``golden/pipearch_isa.py``; the instruction-set simulator ``golden/pipearch_iss.py`` is
the reference the RTL is checked against.
"""
from __future__ import annotations

from myhdl import ConcatSignal, always_comb, always_seq, block

from golden import pipearch_isa as isa
from rtl_gen.common.blocks import fit
from rtl_gen.common.core import CoreDef, Datasheet, Port
from rtl_gen.common.hdl import sig_b, sig_u
from rtl_gen.common.params import Param, ParamSet, power_of_two
from rtl_gen.common.ports import keyword_block, make_factory, port_signals

from . import pipearch_engine as m_eng
from . import pipearch_ldst as m_ldst
from . import pipearch_rm as m_rm

KIND = "pipearch_pu"
LD, ST = isa.LOAD - 0x10, isa.STORE - 0x10


def _lanes(v):
    return None if v in (1, 2, 4, 8, 16, 32) else "must be one of 1, 2, 4, 8, 16, 32"


def _sub_check(p, fn, sub):
    try:
        fn(sub)
    except Exception as e:  # ParamError from the sub-generator, re-labelled
        return f"{e}"
    return None


def _cross(p: dict) -> str | None:
    if p["MAX_DIM"] > p["DEPTH"]:
        return f"parameter MAX_DIM={p['MAX_DIM']} must not exceed DEPTH={p['DEPTH']}"
    for fn, sub in ((m_rm.PARAMS.resolve, rm_params(p)), (m_eng.PARAMS.resolve, eng_params(p)),
                    (m_ldst.PARAMS.resolve, ldst_params(p))):
        err = _sub_check(p, fn, sub)
        if err:
            return err
    return None


PARAMS = ParamSet([
    Param("LANES", 4, "32-bit words per line; AXI data width = 32*LANES bits", 1, 32, _lanes),
    Param("F", 16, "fraction bits of the Q(32,F) data", 1, 31),
    Param("NREGIONS", 4, "regions", 1, 16),
    Param("DEPTH", 256, "lines per region (power of two)", 2, 8192, power_of_two),
    Param("AMEM_DEPTH", 64, "address-memory entries per (region, channel) (power of two)", 2, 4096,
          power_of_two),
    Param("CONFIGS", 0x29, "region configurations, 2 bits per region (bits [2r+1:2r]): 0 regular, "
                           "1 replicated, 2 type_replicated; default 0x29 = region 0 replicated, 1 and "
                           "2 type_replicated, 3 regular (what the streamed SGD program needs)",
          0, (1 << 32) - 1),
    Param("MAX_DIM", 64, "largest vector dimension in lines", 1, 8192),
    Param("MAX_ITER", 4096, "largest iteration count of a subroutine instruction", 1, isa.ITER_MASK),
    Param("SUBS", 0x7F, "present subroutines, bit s = opcode 0x10+s (LOAD and STORE required)", 3,
          0x7F),
    Param("ADDR_W", 32, "AXI4 byte address width", 32, 64),
    Param("ID_W", 1, "AXI4 ID width", 1, 16),
    Param("MAX_BURST", 16, "longest AXI4 burst in lines", 1, 256),
    Param("FIFO_DEPTH", 64, "lines in each of the Load and Store data FIFOs", 2, 4096, power_of_two),
], [_cross])


def rm_params(p):
    return dict(LANES=p["LANES"], NREGIONS=p["NREGIONS"], DEPTH=p["DEPTH"],
                MAX_ITER=p["MAX_ITER"], MAX_DIM=p["MAX_DIM"], AMEM_DEPTH=p["AMEM_DEPTH"],
                SUBS=p["SUBS"], ADDR_W=p["ADDR_W"])


def eng_params(p):
    return dict(LANES=p["LANES"], W=32, F=p["F"], NREGIONS=p["NREGIONS"], DEPTH=p["DEPTH"],
                AMEM_DEPTH=p["AMEM_DEPTH"], CONFIGS=p["CONFIGS"], MAX_DIM=p["MAX_DIM"],
                MAX_ITER=p["MAX_ITER"], SUBS=p["SUBS"])


def ldst_params(p):
    return dict(LANES=p["LANES"], ADDR_W=p["ADDR_W"], ID_W=p["ID_W"], MAX_BURST=p["MAX_BURST"],
                FIFO_DEPTH=p["FIFO_DEPTH"], MAX_LINES=p["DEPTH"] * p["MAX_ITER"],
                OUTSTANDING=max(1, min(8, p["FIFO_DEPTH"] // p["MAX_BURST"])))


def port_list(p: dict) -> list[Port]:
    rm_ports = {pt.name: pt for pt in m_rm.ports_of(rm_params(p))}
    ld_ports = m_ldst.ports_of(ldst_params(p))
    ports = [Port("clk", "in", 1, "clock, rising edge"),
             Port("rst", "in", 1, "synchronous active-high reset (region and program RAM contents "
                                  "are kept)")]
    ports += [pt for n, pt in rm_ports.items() if n.startswith("s_axil_")]
    ports += [pt for pt in ld_ports if pt.name.startswith("m_axi_")]
    ports += [
        Port("busy", "out", 1, "STATUS.BUSY: a program (or its firmware transfers) is running"),
        Port("dbg_state", "out", 4, "register-machine state (STATE_* of golden.pipearch_isa)"),
        Port("dbg_pc", "out", 8, "program counter"),
        Port("dbg_fetch", "out", 1, "pulse: the instruction at dbg_pc is fetched (PC trace)"),
        Port("dbg_sub_busy", "out", 7, "bit s: subroutine 0x10+s busy (engine or AXI master)"),
    ]
    return ports


# ------------------------------------------------------------------ glue
@block
def xfer_arb(clk, rst, fw_start, fw_addr, fw_lines, sub_go, sub_addr, sub_lines,
             m_start, m_addr, m_lines, m_busy, own_fw, pend):
    """Capture a transfer request (firmware or subroutine) and start the AXI master when
    it is idle.  ``own_fw``: the last captured request came from the firmware."""
    fa, fl, sa, sl = (sig_u(len(x)) for x in (m_addr, m_lines, m_addr, m_lines))
    insts = [fit(fw_addr, fa), fit(fw_lines, fl), fit(sub_addr, sa), fit(sub_lines, sl)]

    @always_comb
    def go():
        m_start.next = pend and not m_busy

    @always_seq(clk.posedge, reset=rst)
    def cap():
        if fw_start:
            pend.next = True
            own_fw.next = True
            m_addr.next = fa
            m_lines.next = fl
        elif sub_go:
            pend.next = True
            own_fw.next = False
            m_addr.next = sa
            m_lines.next = sl
        elif pend and not m_busy:
            pend.next = False

    return insts, go, cap


@block
def stream_split(own_fw, src_d, src_v, src_r, a_d, a_v, a_r, b_d, b_v, b_r):
    """Route one line stream to ``a`` (own_fw) or ``b``."""
    @always_comb
    def o():
        a_d.next = src_d
        b_d.next = src_d
        a_v.next = src_v and own_fw
        b_v.next = src_v and not own_fw
        if own_fw:
            src_r.next = a_r
        else:
            src_r.next = b_r

    return o


@block
def stream_join(own_fw, a_d, a_v, a_r, b_d, b_v, b_r, dst_d, dst_v, dst_r):
    """Connect ``a`` (own_fw) or ``b`` to one line stream."""
    @always_comb
    def o():
        if own_fw:
            dst_d.next = a_d
            dst_v.next = a_v
        else:
            dst_d.next = b_d
            dst_v.next = b_v
        a_r.next = dst_r and own_fw
        b_r.next = dst_r and not own_fw

    return o


@block
def status_glue(clk, rst, own_ld_fw, own_st_fw, ld_pend, st_pend, ld_busy, st_busy,
                ld_done, st_done, ld_rerr, st_rerr, ld_cerr, st_cerr, eng_busy, eng_err,
                fw_ld_busy, fw_st_busy, fw_ld_done, fw_st_done, fw_ld_err, fw_st_err,
                rm_sub_busy, rm_sub_err):
    """Busy, done and error signals toward the register machine."""
    n = len(eng_err)
    eng_err_d = sig_u(n)
    xb, xe = sig_u(n), sig_u(n)   # AXI-side busy / error of LOAD (bit 0) and STORE (bit 1)

    @always_seq(clk.posedge, reset=rst)
    def dly():
        eng_err_d.next = eng_err

    @always_comb
    def fw():
        fw_ld_busy.next = ld_pend or ld_busy
        fw_st_busy.next = st_pend or st_busy
        fw_ld_done.next = ld_done and own_ld_fw
        fw_st_done.next = st_done and own_st_fw
        fw_ld_err.next = ld_done and own_ld_fw and ld_rerr
        fw_st_err.next = st_done and own_st_fw and st_rerr

    @always_comb
    def axi_side():
        xb.next = 0
        xe.next = 0
        xb.next[0] = (ld_pend or ld_busy) and not own_ld_fw
        xb.next[1] = (st_pend or st_busy) and not own_st_fw
        xe.next[0] = ld_done and (ld_rerr or ld_cerr) and not own_ld_fw
        xe.next[1] = st_done and (st_rerr or st_cerr) and not own_st_fw

    @always_comb
    def o():
        rm_sub_busy.next = eng_busy | xb
        rm_sub_err.next = (eng_err & ~eng_err_d) | xe

    return dly, fw, axi_side, o


@block
def pu_impl(s, p):
    rmp, egp, lsp = rm_params(p), eng_params(p), ldst_params(p)
    rm_fn, eng_fn, ls_fn = m_rm.block_fn(rmp), m_eng.block_fn(egp), m_ldst.block_fn(lsp)
    rm_s = port_signals(m_rm.ports_of(rmp))
    eg_s = port_signals(m_eng.port_list(egp))
    ls_s = port_signals(m_ldst.ports_of(lsp))
    clk, rst = s["clk"], s["rst"]
    for d in (rm_s, eg_s, ls_s):
        d["clk"], d["rst"] = clk, rst
    for n in rm_s:
        if n.startswith("s_axil_"):
            rm_s[n] = s[n]
    for n in ls_s:
        if n.startswith("m_axi_"):
            ls_s[n] = s[n]
    rm_s["busy"], rm_s["dbg_state"], rm_s["dbg_pc"], rm_s["dbg_fetch"] = (
        s["busy"], s["dbg_state"], s["dbg_pc"], s["dbg_fetch"])
    rm_s["sub_busy"] = s["dbg_sub_busy"]
    # issue fields: register machine -> engine
    eg_s["sub_start"] = rm_s["sub_start"]
    eg_s["fifo_clr"] = rm_s["fifo_clr"]          # START empties every region FIFO
    for n in ("sub_w1", "sub_acc0", "sub_acc1", "sub_acc2", "sub_acc3", "sub_w6", "sub_w7"):
        eg_s[n] = rm_s[n]
    insts = [fit(rm_s["sub_iter"], eg_s["sub_iters"])]

    own_ld, own_st, ld_pend, st_pend = sig_b(), sig_b(), sig_b(), sig_b()
    insts.append(xfer_arb(clk, rst, rm_s["fw_ld_start"], rm_s["fw_ld_addr"], rm_s["fw_ld_lines"],
                          eg_s["ld_go"], eg_s["ld_addr"], eg_s["ld_lines"],
                          ls_s["ld_start"], ls_s["ld_addr"], ls_s["ld_lines"], ls_s["ld_busy"],
                          own_ld, ld_pend))
    insts.append(xfer_arb(clk, rst, rm_s["fw_st_start"], rm_s["fw_st_addr"], rm_s["fw_st_lines"],
                          eg_s["st_go"], eg_s["st_addr"], eg_s["st_lines"],
                          ls_s["st_start"], ls_s["st_addr"], ls_s["st_lines"], ls_s["st_busy"],
                          own_st, st_pend))
    # load lines: AXI master -> firmware or engine (tlast is not used by either)
    insts.append(stream_split(own_ld, ls_s["m_axis_ld_tdata"], ls_s["m_axis_ld_tvalid"],
                              ls_s["m_axis_ld_tready"],
                              rm_s["s_axis_fw_tdata"], rm_s["s_axis_fw_tvalid"], rm_s["s_axis_fw_tready"],
                              eg_s["s_axis_ld_tdata"], eg_s["s_axis_ld_tvalid"], eg_s["s_axis_ld_tready"]))
    # store lines: firmware or engine -> AXI master (line counts come with the start)
    insts.append(stream_join(own_st, rm_s["m_axis_fw_tdata"], rm_s["m_axis_fw_tvalid"],
                             rm_s["m_axis_fw_tready"],
                             eg_s["m_axis_st_tdata"], eg_s["m_axis_st_tvalid"], eg_s["m_axis_st_tready"],
                             ls_s["s_axis_st_tdata"], ls_s["s_axis_st_tvalid"], ls_s["s_axis_st_tready"]))
    insts.append(status_glue(clk, rst, own_ld, own_st, ld_pend, st_pend, ls_s["ld_busy"], ls_s["st_busy"],
                             ls_s["ld_done"], ls_s["st_done"], ls_s["ld_resp_err"], ls_s["st_resp_err"],
                             ls_s["ld_cfg_err"], ls_s["st_cfg_err"],
                             eg_s["sub_busy"], eg_s["sub_err"],
                             rm_s["fw_ld_busy"], rm_s["fw_st_busy"], rm_s["fw_ld_done"],
                             rm_s["fw_st_done"], rm_s["fw_ld_err"], rm_s["fw_st_err"],
                             s["dbg_sub_busy"], rm_s["sub_err"]))
    # outputs nobody needs (line counts travel with the starts; PC/NB are for debug)
    # and address/count bits beyond what the AXI master takes (the ISA ignores address
    # bits at and above ADDR_W; the register machine bounds the line counts)
    unused_sink = ConcatSignal(rm_s["m_axis_fw_tlast"], rm_s["sub_nb"], rm_s["sub_pc"],
                               eg_s["m_axis_st_tlast"], ls_s["m_axis_ld_tlast"],
                               eg_s["ld_addr"], eg_s["ld_lines"], eg_s["st_addr"], eg_s["st_lines"])
    unused_sig = sig_u(len(unused_sink))   # named *unused*: Verilator -Wall waives it

    @always_comb
    def sink():
        unused_sig.next = unused_sink

    rm_i = rm_fn(**rm_s)
    eg_i = eng_fn(**eg_s)
    ls_i = ls_fn(**ls_s)
    return insts, sink, rm_i, eg_i, ls_i


def block_fn(p: dict):
    p = PARAMS.resolve(p)
    return keyword_block(KIND, [pt.name for pt in port_list(p)], pu_impl, p)


def build(p):
    ports = port_list(p)
    return make_factory(block_fn(p), ports), ports


def datasheet(p: dict) -> Datasheet:
    L = p["LANES"]
    return Datasheet(
        summary=(f"A PipeArch processing unit: register machine, {p['NREGIONS']} regions of "
                 f"{p['DEPTH']} lines x {L}x32 bits, the compute subroutines (mask "
                 f"0x{p['SUBS']:02X}) and Load/Store over one AXI4 master "
                 f"({32 * L}-bit data). Programs, context switching and the host register map "
                 f"follow golden/pipearch_isa.py; golden/pipearch_iss.py is the reference."),
        latency="program dependent",
        throughput="one line per cycle per region port; see the README bench table",
        notes=[
            "Host: write PROG_LO/HI and CTX_LO/HI, then CTRL.START; poll STATUS (or watch "
            "`busy`) for DONE/ERROR. CTRL.SWITCH requests a context switch at the next YIELD.",
            "Assemble programs with golden/pipearch_asm.py; golden/pipearch_programs.py holds "
            "SGD, SCD and LRMF.",
            "The AXI master carries firmware transfers (program, context) and LOAD/STORE; "
            "one transfer per direction at a time.",
            "Regions (CONFIGS): region 0 replicated, 1 and 2 type_replicated, 3 regular by "
            "default, the organisation golden/pipearch_programs.py's streamed SGD needs (model "
            "ring read by three channels at once, sample copies with a separate FIFO); every "
            "START empties all region FIFOs (the storage is kept).",
        ])


CORE = CoreDef(
    name=KIND, family="pipearch",
    description="PipeArch processing unit: register machine, regions, compute subroutines, "
                "Load/Store AXI4 master, AXI4-Lite host registers, context switch",
    params=PARAMS, build=build, datasheet=datasheet,
    configs={"default": {}, "lanes16": {"LANES": 16, "MAX_BURST": 4, "DEPTH": 128, "MAX_DIM": 32},
             "deep": {"DEPTH": 1024, "MAX_DIM": 256}},
    generator="rtl_gen/pipearch/pipearch_pu.py",
)
