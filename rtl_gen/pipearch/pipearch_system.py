"""``pipearch_system`` core: ``UNITS`` PipeArch processing units sharing one memory
(PipeArch sections 5, 7 and 9: the multi-tenant Xeon+FPGA setup).

* ``UNITS`` instances of ``pipearch_pu`` (every pipearch_pu parameter is passed through
  to each unit);
* one AXI4 master: the units' masters behind ``rtl_gen/common/axi_arbiter.py``
  (round-robin on AR and AW, W bursts whole and in AW order, R/B routed by the ID's top
  ``ceil(log2 UNITS)`` bits), so every unit reaches the whole address space -- what
  lets a suspended thread resume on another unit;
* one AXI4-Lite slave (12-bit byte address): unit ``u``'s register block (the
  pipearch_pu register map, byte for byte) at ``0x100*u``, the system block at ``0xF00``
  (ID, UNITS, CYCLES, per-unit RD_BEATS/WR_BEATS); everything else reads 0 and ignores
  writes, with an OKAY response (as pipearch_pu does for its unknown offsets).

The host slave handles one read and one write at a time: a unit access is forwarded to
the unit's slave and its response (data, resp) is returned unchanged.
"""
from __future__ import annotations

from myhdl import ConcatSignal, always_comb, always_seq, block

from golden import pipearch_isa as isa
from rtl_gen.common import axi_arbiter as arb
from rtl_gen.common.core import CoreDef, Datasheet, Port
from rtl_gen.common.hdl import sig_b, sig_u
from rtl_gen.common.params import Param, ParamSet
from rtl_gen.common.ports import keyword_block, make_factory, port_signals

from . import pipearch_pu as m_pu

KIND = "pipearch_system"
SYS_ID = 0x50415359           # "PASY"
SYS_BASE = 0xF00
REG_ID, REG_UNITS, REG_CYCLES = 0x00, 0x04, 0x08
REG_RD_BEATS, REG_WR_BEATS = 0x10, 0x30   # + 4*u, u < 8
MAX_UNITS = 8
AXIL_AW = 12


def _cross(p: dict) -> str | None:
    try:
        m_pu.PARAMS.resolve(pu_params(p))
    except Exception as e:  # ParamError of pipearch_pu, re-labelled
        return f"{e}"
    return None


PARAMS = ParamSet([Param("UNITS", 2, "processing units sharing the AXI4 master", 1, MAX_UNITS)]
                  + list(m_pu.PARAMS.specs), [_cross])


def pu_params(p: dict) -> dict:
    return {s.name: p[s.name] for s in m_pu.PARAMS.specs if s.name in p}


def id_width(p: dict) -> int:
    return p["ID_W"] + arb.index_width(p["UNITS"])


def port_list(p: dict) -> list[Port]:
    U = p["UNITS"]
    pu = {pt.name: pt for pt in m_pu.port_list(m_pu.PARAMS.resolve(pu_params(p)))}
    iw = id_width(p)
    ports = [pu["clk"], pu["rst"]]
    for n, pt in pu.items():
        if n.startswith("s_axil_"):
            w = AXIL_AW if n in ("s_axil_awaddr", "s_axil_araddr") else pt.width
            desc = {"s_axil_awaddr": "byte address: unit u at 0x100*u (its pipearch_pu register "
                                     "map), system block at 0xF00",
                    "s_axil_araddr": "byte address (see s_axil_awaddr)",
                    "s_axil_awready": "high with wready when awvalid and wvalid and no write in "
                                      "progress",
                    "s_axil_rdata": "unknown offsets read 0",
                    "s_axil_bresp": "the unit's response (OKAY), OKAY elsewhere",
                    "s_axil_rresp": "the unit's response (OKAY), OKAY elsewhere"}.get(n, pt.desc)
            ports.append(Port(n, pt.direction, w, desc))
    for n, pt in pu.items():
        if n.startswith("m_axi_"):
            if n in ("m_axi_arid", "m_axi_rid", "m_axi_awid", "m_axi_bid"):
                ports.append(Port(n, pt.direction, iw,
                                  f"{{unit index ({arb.index_width(U)} bits), unit ID ({p['ID_W']} "
                                  "bits)}" if U > 1 else "the unit's ID"))
            else:
                desc = {"m_axi_rready": "from the unit named by rid",
                        "m_axi_bready": "from the unit named by bid",
                        "m_axi_wvalid": "only for bursts whose AW has been issued, in AW order",
                        "m_axi_arvalid": "round-robin over the units' requests",
                        "m_axi_awvalid": "round-robin over the units' requests"}.get(n, pt.desc)
                ports.append(Port(n, pt.direction, pt.width, desc))
    ports += [
        Port("busy", "out", U, "bit u: unit u's `busy` (STATUS.BUSY)"),
        Port("dbg_fetch", "out", U, "bit u: unit u's `dbg_fetch` (PC trace pulse)"),
        Port("dbg_pc", "out", 8 * U, "bits [8u+7:8u]: unit u's program counter"),
        Port("dbg_ar_req", "out", U, "bit u: unit u's AR valid (request to the arbiter)"),
        Port("dbg_aw_req", "out", U, "bit u: unit u's AW valid (request to the arbiter)"),
    ]
    return ports


# ------------------------------------------------------------------ small blocks
@block
def sys_pack(bits, out):
    """out = {bits[n-1], ..., bits[0]} (vector) or bits[0] (one signal)."""
    if len(bits) == 1:
        return arb.arb_wire(bits[0], out)
    v = ConcatSignal(*reversed(bits))

    @always_comb
    def o():
        out.next = v

    return o


@block
def sys_pick(bits, idx, y):
    """y = bits[idx] (bits: list of one-bit signals)."""
    if len(bits) == 1:
        return arb.arb_wire(bits[0], y)
    v = ConcatSignal(*reversed(bits))
    nb = len(bits)
    if nb == 1 << len(idx):
        @always_comb
        def o():
            y.next = v[idx]
    else:
        @always_comb
        def o():
            if idx < nb:
                y.next = v[idx]
            else:
                y.next = False
    return o


@block
def sys_counter(clk, rst, inc_a, inc_b, cnt):
    """32-bit wrapping counter of cycles with inc_a and inc_b both high."""
    @always_seq(clk.posedge, reset=rst)
    def o():
        if inc_a and inc_b:
            if (~cnt) == 0:
                cnt.next = 0
            else:
                cnt.next = cnt + 1

    return o


@block
def sys_unit_axil_flat(k, w_unit, aw_pend, w_pend, w_busy, w_addr, w_data, w_strb,
                    r_unit, ar_pend, r_busy, r_addr,
                    awvalid, wvalid, bready, awaddr, wdata, wstrb, arvalid, rready, araddr):
    @always_comb
    def o():
        awvalid.next = aw_pend and w_unit == k
        wvalid.next = w_pend and w_unit == k
        bready.next = w_busy and w_unit == k
        awaddr.next = w_addr
        wdata.next = w_data
        wstrb.next = w_strb
        arvalid.next = ar_pend and r_unit == k
        rready.next = r_busy and r_unit == k
        araddr.next = r_addr

    return o


@block
def host_slave(clk, rst, s, units, n, sys_sel, sys_rdata):
    """The 12-bit AXI4-Lite slave: forwards unit accesses, answers the system block.
    ``sys_sel``/``sys_rdata``: the system-block read mux (address low byte -> value)."""
    uw = max(1, arb.clog2(n))
    w_unit, r_unit = sig_u(uw), sig_u(uw)
    w_addr, r_addr = sig_u(8), sig_u(8)
    w_data, w_strb = sig_u(32), sig_u(4)
    aw_pend, w_pend, w_busy, bvalid_r = sig_b(), sig_b(), sig_b(), sig_b()
    ar_pend, r_busy, rvalid_r = sig_b(), sig_b(), sig_b()
    bresp_r, rresp_r, rdata_r = sig_u(2), sig_u(2), sig_u(32)
    insts = []
    for k, u in enumerate(units):
        insts.append(sys_unit_axil_flat(k, w_unit, aw_pend, w_pend, w_busy, w_addr, w_data, w_strb,
                                     r_unit, ar_pend, r_busy, r_addr,
                                     u["s_axil_awvalid"], u["s_axil_wvalid"], u["s_axil_bready"],
                                     u["s_axil_awaddr"], u["s_axil_wdata"], u["s_axil_wstrb"],
                                     u["s_axil_arvalid"], u["s_axil_rready"], u["s_axil_araddr"]))

    awready_u, wready_u, bvalid_u, arready_u, rvalid_u = (sig_b() for _ in range(5))
    for name, sel, y in (("s_axil_awready", w_unit, awready_u), ("s_axil_wready", w_unit, wready_u),
                         ("s_axil_bvalid", w_unit, bvalid_u), ("s_axil_arready", r_unit, arready_u),
                         ("s_axil_rvalid", r_unit, rvalid_u)):
        insts.append(sys_pick([units[k][name] for k in range(n)], sel, y))
    u_bresp, u_rresp, u_rdata = sig_u(2), sig_u(2), sig_u(32)
    insts.append(arb.mux_by_index(w_unit, [units[k]["s_axil_bresp"] for k in range(n)], u_bresp))
    insts.append(arb.mux_by_index(r_unit, [units[k]["s_axil_rresp"] for k in range(n)], u_rresp))
    insts.append(arb.mux_by_index(r_unit, [units[k]["s_axil_rdata"] for k in range(n)], u_rdata))
    awaddr, araddr = s["s_axil_awaddr"], s["s_axil_araddr"]
    awvalid, wvalid, arvalid = s["s_axil_awvalid"], s["s_axil_wvalid"], s["s_axil_arvalid"]
    bready, rready = s["s_axil_bready"], s["s_axil_rready"]
    wdata, wstrb = s["s_axil_wdata"], s["s_axil_wstrb"]
    awready, wready, bvalid, bresp = (s["s_axil_awready"], s["s_axil_wready"], s["s_axil_bvalid"],
                                      s["s_axil_bresp"])
    arready, rvalid, rresp, rdata = (s["s_axil_arready"], s["s_axil_rvalid"], s["s_axil_rresp"],
                                     s["s_axil_rdata"])
    aw_blk, ar_blk = awaddr(AXIL_AW, 8), araddr(AXIL_AW, 8)
    ar_lo = araddr(8, 0)
    uhi = 8 + uw
    w_acc, r_acc = sig_b(), sig_b()

    @always_comb
    def outs():
        awready.next = awvalid and wvalid and not w_busy and not bvalid_r
        wready.next = awvalid and wvalid and not w_busy and not bvalid_r
        bvalid.next = bvalid_r
        bresp.next = bresp_r
        arready.next = not r_busy and not rvalid_r
        rvalid.next = rvalid_r
        rresp.next = rresp_r
        rdata.next = rdata_r
        sys_sel.next = ar_lo
        w_acc.next = awvalid and wvalid and not w_busy and not bvalid_r
        r_acc.next = arvalid and not r_busy and not rvalid_r

    @always_seq(clk.posedge, reset=rst)
    def wr_fsm():
        if w_acc:
            w_addr.next = awaddr[8:]
            w_data.next = wdata
            w_strb.next = wstrb
            if aw_blk < n:
                w_unit.next = awaddr[uhi:8]
                w_busy.next = True
                aw_pend.next = True
                w_pend.next = True
            else:
                bvalid_r.next = True       # system block (read-only) or unmapped: ignored
                bresp_r.next = 0
        else:
            if aw_pend and awready_u:
                aw_pend.next = False
            if w_pend and wready_u:
                w_pend.next = False
            if w_busy and bvalid_u:
                w_busy.next = False
                bvalid_r.next = True
                bresp_r.next = u_bresp
            elif bvalid_r and bready:
                bvalid_r.next = False

    @always_seq(clk.posedge, reset=rst)
    def rd_fsm():
        if r_acc:
            r_addr.next = araddr[8:]
            if ar_blk < n:
                r_unit.next = araddr[uhi:8]
                r_busy.next = True
                ar_pend.next = True
            else:
                rvalid_r.next = True
                rresp_r.next = 0
                if ar_blk == 0xF:
                    rdata_r.next = sys_rdata
                else:
                    rdata_r.next = 0
        else:
            if ar_pend and arready_u:
                ar_pend.next = False
            if r_busy and rvalid_u:
                r_busy.next = False
                rvalid_r.next = True
                rresp_r.next = u_rresp
                rdata_r.next = u_rdata
            elif rvalid_r and rready:
                rvalid_r.next = False

    return insts, outs, wr_fsm, rd_fsm


@block
def sys_impl(s, p):
    U = p["UNITS"]
    pp = m_pu.PARAMS.resolve(pu_params(p))
    pu_ports = m_pu.port_list(pp)
    clk, rst = s["clk"], s["rst"]
    units, insts = [], []
    for _ in range(U):
        su = port_signals(pu_ports)
        su["clk"], su["rst"] = clk, rst
        units.append(su)
        insts.append(m_pu.pu_impl(su, pp))
    # memory: the arbiter
    up = [{n: su["m_axi_" + n] for n in arb.ALL} for su in units]
    dn = {n: s["m_axi_" + n] for n in arb.ALL}
    insts.append(arb.axi_arbiter(clk, rst, up, dn, pp["ID_W"]))
    # system block: counters and the read mux
    cycles = sig_u(32)
    one = sig_b(True)
    insts.append(sys_counter(clk, rst, one, one, cycles))
    rd_cnt = [sig_u(32) for _ in range(U)]
    wr_cnt = [sig_u(32) for _ in range(U)]
    for k, su in enumerate(units):
        insts.append(sys_counter(clk, rst, su["m_axi_rvalid"], su["m_axi_rready"], rd_cnt[k]))
        insts.append(sys_counter(clk, rst, su["m_axi_wvalid"], su["m_axi_wready"], wr_cnt[k]))
    sys_sel, sys_rdata = sig_u(8), sig_u(32)
    entries = [(REG_ID, SYS_ID), (REG_UNITS, U), (REG_CYCLES, cycles)]
    entries += [(REG_RD_BEATS + 4 * k, rd_cnt[k]) for k in range(U)]
    entries += [(REG_WR_BEATS + 4 * k, wr_cnt[k]) for k in range(U)]
    acc = [sig_u(32) for _ in entries]
    for i, (a, v) in enumerate(entries):
        prev = acc[i - 1] if i else None
        insts.append(arb.arb_mux_stage(sys_sel, a, v, prev, acc[i]))  # v: a word or a counter
    insts.append(arb.arb_wire(acc[-1], sys_rdata))
    insts.append(host_slave(clk, rst, s, units, U, sys_sel, sys_rdata))
    # debug outputs
    insts.append(sys_pack([su["busy"] for su in units], s["busy"]))
    insts.append(sys_pack([su["dbg_fetch"] for su in units], s["dbg_fetch"]))
    insts.append(sys_pack([su["dbg_pc"] for su in units], s["dbg_pc"]))
    insts.append(sys_pack([su["m_axi_arvalid"] for su in units], s["dbg_ar_req"]))
    insts.append(sys_pack([su["m_axi_awvalid"] for su in units], s["dbg_aw_req"]))
    unused_sink = ConcatSignal(*[x for su in units for x in (su["dbg_state"], su["dbg_sub_busy"])])
    unused_sig = sig_u(len(unused_sink))   # named *unused*: Verilator -Wall waives it

    @always_comb
    def sink():
        unused_sig.next = unused_sink

    return insts, sink


def block_fn(p: dict):
    p = PARAMS.resolve(p)
    return keyword_block(KIND, [pt.name for pt in port_list(p)], sys_impl, p)


def build(p):
    ports = port_list(p)
    return make_factory(block_fn(p), ports), ports


_DEFAULT_BENCH = ("Measured (make bench, memory without stalls, every unit streaming ridge SGD "
                  "with a 32-line model): 7.5 bytes read per cycle with one unit busy, 14.1 "
                  "with both (88 % of the 16-byte R channel); verif/bench_limits.py holds "
                  "these figures")


def datasheet(p: dict) -> Datasheet:
    U, L = p["UNITS"], p["LANES"]
    ixw = arb.index_width(U)
    return Datasheet(
        summary=(f"{U} PipeArch processing unit(s) (`pipearch_pu`, {p['NREGIONS']} regions of "
                 f"{p['DEPTH']} lines x {L}x32 bits each) sharing one AXI4 master "
                 f"({32 * L}-bit data, {id_width(p)}-bit ID) through a round-robin AXI4 "
                 f"arbiter, and one AXI4-Lite slave holding every unit's register block and a "
                 f"system block. Every unit reaches the whole memory, so a thread suspended on "
                 f"one unit resumes on any other (PipeArch sections 5, 7 and 9)."),
        latency="program dependent; the arbiter adds no cycle on AR/AW (a W burst starts the "
                "cycle after its AW handshake)",
        throughput=("one AXI beat per cycle on each of R and W, shared by the units. "
                    + (_DEFAULT_BENCH if p == PARAMS.resolve({}) else
                       "Aggregate bytes per cycle by unit count: README bench table "
                       "(pipearch_system)")),
        notes=[
            "Arbitration (rtl_gen/common/axi_arbiter.py): round-robin on AR and on AW (after a "
            "grant the pointer moves to the next unit, so with every unit requesting each gets "
            "one burst per round); the grant is held while the downstream valid waits. W bursts "
            "follow AW order and are never interleaved (an 8-entry AW-order queue; AW waits "
            "while it is full). R and B are routed by the ID's top "
            f"{ixw} bit(s) (unit index); the unit sees its own ID.",
            "Host slave: one read and one write in flight; a unit access is forwarded to the "
            "unit's register block and answered with the unit's data and response.",
            "Debug outputs: per-unit busy, PC trace (dbg_fetch/dbg_pc) and the AR/AW requests "
            "(for fairness monitors).",
            "Everything else (programs, context switch, migration, registers of a unit) is "
            "pipearch_pu's: see ip/pipearch_pu/README.md.",
        ])


CORE = CoreDef(
    name=KIND, family="pipearch",
    description="PipeArch multi-tenant system: UNITS pipearch_pu behind a round-robin AXI4 "
                "arbiter (one AXI4 master), one AXI4-Lite slave for every unit's registers",
    params=PARAMS, build=build, datasheet=datasheet,
    configs={"default": {},
             "units4": {"UNITS": 4, "DEPTH": 64, "MAX_DIM": 16, "AMEM_DEPTH": 16, "FIFO_DEPTH": 32,
                        "MAX_BURST": 8},
             "units1": {"UNITS": 1}},
    generator="rtl_gen/pipearch/pipearch_system.py",
)
