"""``pipearch_rm`` core: the PipeArch-PU register machine (PipeArch section 6.1).

The instruction set, program image, context area, error codes, states and host
register map are those of ``golden/pipearch_isa.py`` (the specification, including its
"Clarifications" section).  This block fetches, decodes and executes the program,
issues subroutine instructions to the computation engine, and reads/writes the program
and the context through firmware line streams that the PU top connects to its
Load/Store AXI4 masters.

Structure:

* Program memory: 256 x 256-bit block RAM (one write process, synchronous read into
  the instruction register).  A line/chunk converter turns ``LANES*32``-bit lines into
  256-bit chunks (8 words): ``256/(32*LANES)`` lines per chunk for ``LANES <= 8``,
  ``LANES/8`` chunks per line for ``LANES > 8``.
* Registers R0..R15 as one 512-bit vector (R0 never written), two read ports.
* Fetch (1 cycle) -> Decode (2 cycles) -> Execute (1 cycle for control instructions; a
  blocking subroutine or BLOCK waits here).  ``sub_start`` is registered: it is high
  during the first Execute cycle, so a blocking instruction samples ``sub_busy`` only
  from the second Execute cycle on (the engine must raise busy in the cycle after the
  start pulse).
* Timing (issue 16): the program memory is read with the next PC (``pc_d``, the value
  ``pc`` takes at the clock edge), so the instruction is in the block RAM's read
  register during Fetch.  Fetch only copies it into a fabric register ``ir_r``, reads
  R[ra]/R[rb] and looks up the opcode's decode-table row ``info``; Decode's first cycle
  computes every decode-time check (and the effective access words, w6 + R[rb], the
  branch decision and the next PC) from those registers into registers; Decode's
  second cycle only prioritises the registered check bits into the error code and
  issues.  No path runs from the block RAM's output through the decode logic, and the
  cycle counts are those of the single-register design before it.
"""
from __future__ import annotations

from myhdl import ConcatSignal, always, always_comb, always_seq, block, concat, intbv

from golden import pipearch_isa as isa
from rtl_gen.common.core import CoreDef, Datasheet, Port
from rtl_gen.common.hdl import sig_b, sig_u
from rtl_gen.common.params import Param, ParamSet, power_of_two
from rtl_gen.common.ports import make_factory

KIND = "pipearch_rm"
AXIL_AW = 8
LINES_W = 16      # fw_*_lines width
NSUB = 7
NGCH = len(isa.GLOBAL_CHANNELS)  # 18


def log2(n: int) -> int:
    return int(n).bit_length() - 1


def _lanes(v):
    return None if v in (1, 2, 4, 8, 16, 32) else "must be one of 1, 2, 4, 8, 16, 32"


def _cross(p):
    lb = 4 * p["LANES"]
    if p["ADDR_W"] < log2(max(32, lb)) + 1:
        return f"parameter ADDR_W={p['ADDR_W']} too small for LANES={p['LANES']}"
    return None


PARAMS = ParamSet([
    Param("LANES", 16, "32-bit words per line (line = LANES*32 bits)", 1, 32, _lanes),
    Param("NREGIONS", 6, "regions of the PU (region numbers >= NREGIONS are rejected)", 1, 16),
    Param("DEPTH", 1024, "lines per region (power of two; access words are checked against it)",
          2, 1 << 14, power_of_two),
    Param("MAX_ITER", 4096, "largest iterations field of a subroutine instruction", 1, (1 << 13) - 1),
    Param("MAX_DIM", 1024, "largest vector dimension (w6 of a vector subroutine)", 1, (1 << 14) - 1),
    Param("AMEM_DEPTH", 256, "address-memory entries per (region, channel): LOAD amem mode "
                             "entries w7[15:0] + iterations*LANES must not exceed it", 2, 1 << 16,
          power_of_two),
    Param("SUBS", 0x7F, "mask of present subroutines (bit s-0x10: LOAD, STORE, DOTSIG, SIGDELTA, "
                        "SCALAR, MULTSUB, L2REG)", 1, 0x7F),
    Param("ADDR_W", 32, "byte address width of the program/context addresses", 8, 64),
], [_cross])

# ---- per-opcode decode table (ROM over the 6-bit opcode)
I_VALID, I_SUB, I_RA, I_RB, I_RD = 0, 1, 2, 3, 4
I_W1 = 5            # 2 bits: 0 must be 0, 1 any, 2 branch target [31:8]=0, 3 BLOCK [31:7]=0
I_USED, I_VEC, I_SCA = 8, 12, 16   # 4-bit channel masks
I_FLAGS = 20        # 2 bits: allowed w1[25:24]
I_W7 = 22           # w7 may be nonzero
I_DIM = 23          # w6 is a vector dimension
I_PRES = 24         # subroutine present
I_TGT = 25          # branch / JMP (target check)


def info_rom(subs: int) -> tuple:
    rom = []
    for op in range(64):
        v = 0
        if op in isa.CONTROL_OPS:
            v |= 1 << I_VALID
            ra = op in (isa.ADDI, isa.ADD, isa.SUB, isa.BLT, isa.BGE, isa.BEQ, isa.BNE)
            rb = op in (isa.ADD, isa.SUB, isa.BLT, isa.BGE, isa.BEQ, isa.BNE)
            rd = op in (isa.ADDI, isa.ADD, isa.SUB)
            v |= (ra << I_RA) | (rb << I_RB) | (rd << I_RD)
            w1 = {isa.ADDI: 1, isa.BLT: 2, isa.BGE: 2, isa.BEQ: 2, isa.BNE: 2, isa.JMP: 2,
                  isa.BLOCK: 3}.get(op, 0)
            v |= w1 << I_W1
            if op in (isa.BLT, isa.BGE, isa.BEQ, isa.BNE, isa.JMP):
                v |= 1 << I_TGT
        elif op in isa.SUB_OPS:
            s = op - isa.LOAD
            v |= (1 << I_VALID) | (1 << I_SUB) | (1 << I_RA) | (1 << I_RB)
            chans = isa.CHANNELS[op]
            used = (1 << len(chans)) - 1
            vec = sum(1 << i for i, c in enumerate(chans) if c[2] == "vector")
            sca = sum(1 << i for i, c in enumerate(chans) if c[2] == "scalar")
            flags = {isa.LOAD: 3, isa.STORE: 2, isa.L2REG: 0}.get(op, 1)
            w7 = op in (isa.SCALAR, isa.L2REG)
            dim = op in (isa.DOTSIG, isa.SIGDELTA, isa.MULTSUB, isa.L2REG)
            v |= (used << I_USED) | (vec << I_VEC) | (sca << I_SCA) | (flags << I_FLAGS)
            v |= (w7 << I_W7) | (dim << I_DIM) | (((subs >> s) & 1) << I_PRES)
        rom.append(v)
    return tuple(rom)


@block
def rm_reg(clk, rst, r, rf_we, frd, add_res, rf_clr, ctx_we, ck_idx, ck_data, i):
    """Register R``i`` (1..15): instruction write, clear, context-load write."""
    c, j = (i + 2) // 8, (i + 2) % 8

    @always_seq(clk.posedge, reset=rst)
    def rproc():
        if rf_we and frd == i:
            r.next = add_res
        elif rf_clr:
            r.next = 0
        elif ctx_we and ck_idx == c:
            r.next = ck_data[32 * (j + 1):32 * j]

    return rproc


@block
def rm_rfmux(sel, y, r1, r2, r3, r4, r5, r6, r7, r8, r9, r10, r11, r12, r13, r14, r15):
    """y = R[sel] (R0 = 0) as a binary tree of 2:1 multiplexers, one level per index bit."""

    @always_comb
    def rfmux():
        if sel[3]:
            if sel[2]:
                if sel[1]:
                    if sel[0]:
                        y.next = r15
                    else:
                        y.next = r14
                elif sel[0]:
                    y.next = r13
                else:
                    y.next = r12
            elif sel[1]:
                if sel[0]:
                    y.next = r11
                else:
                    y.next = r10
            elif sel[0]:
                y.next = r9
            else:
                y.next = r8
        elif sel[2]:
            if sel[1]:
                if sel[0]:
                    y.next = r7
                else:
                    y.next = r6
            elif sel[0]:
                y.next = r5
            else:
                y.next = r4
        elif sel[1]:
            if sel[0]:
                y.next = r3
            else:
                y.next = r2
        elif sel[0]:
            y.next = r1
        else:
            y.next = 0

    return rfmux


@block
def rm_channel(clk, rst, ir, ra_q, rb_q, w6, e_k, ab_k, lnd_k, ln1_k, ng_k, nz_k, uz_k, k, NREG, DEPTH):
    """Decode checks of subroutine channel ``k``: effective access word and its rules."""
    wk = sig_u(32)
    s34 = sig_u(34)
    a34 = sig_u(34)
    b34 = sig_u(34)
    o34 = sig_u(34)
    ln = sig_u(14)
    ln32 = sig_u(32)
    nib = sig_u(4)
    fa = sig_b()
    fb = sig_b()

    @always_comb
    def ch_in():
        wk.next = ir[32 * (k + 3):32 * (k + 2)]
        fa.next = ir[32 + 16 + k]
        fb.next = ir[32 + 20 + k]
        nib.next = ir[32 + 4 * k + 4:32 + 4 * k]

    @always_comb
    def ch_ops():
        if fa:
            a34.next = concat(ra_q[31], ra_q[31], ra_q)
        else:
            a34.next = 0
        if fb:
            b34.next = concat(rb_q[31], rb_q[31], rb_q)
        else:
            b34.next = 0
        o34.next = concat(intbv(0)[20:], wk[14:])
        ln.next = wk[30:16]

    @always_comb
    def ch_sum():
        s34.next = o34 + a34 + b34

    @always_comb
    def ch_end():
        ln32.next = concat(intbv(0)[18:], ln)

    if DEPTH < (1 << 14):
        @always_comb
        def ch_ab():
            ab_k.next = s34[34:14] != 0 or wk[31] == wk[30] or ln == 0 or ln > DEPTH
    else:                            # a 14-bit length never exceeds DEPTH = 2**14
        @always_comb
        def ch_ab():
            ab_k.next = s34[34:14] != 0 or wk[31] == wk[30] or ln == 0

    @always_comb
    def ch_chk():
        e_k.next = concat(wk[32:14], s34[14:])
        lnd_k.next = ln32 != w6
        ln1_k.next = ln != 1
        nz_k.next = nib != 0
        uz_k.next = fa or fb or wk != 0

    if NREG < 16:
        @always_comb
        def ch_ng():
            ng_k.next = nib >= NREG
    else:
        @always_seq(clk.posedge, reset=rst)
        def ch_ng():
            ng_k.next = False
    return ch_in, ch_ops, ch_sum, ch_end, ch_ab, ch_chk, ch_ng


def ports_of(p: dict) -> list[Port]:
    L = p["LANES"]
    LW = 32 * L
    LAW = p["ADDR_W"] - log2(4 * L)
    return [
        Port("clk", "in", 1, "clock, rising edge"),
        Port("rst", "in", 1, "synchronous active-high reset (machine to Idle, flags and requests cleared)"),
        Port("s_axil_awaddr", "in", AXIL_AW, "AXI4-Lite write address (byte offset)"),
        Port("s_axil_awvalid", "in", 1, ""),
        Port("s_axil_awready", "out", 1, "high with wready when awvalid and wvalid and no response pending"),
        Port("s_axil_wdata", "in", 32, ""),
        Port("s_axil_wstrb", "in", 4, "must be 0xF (a partial write is ignored)"),
        Port("s_axil_wvalid", "in", 1, ""),
        Port("s_axil_wready", "out", 1, ""),
        Port("s_axil_bresp", "out", 2, "always OKAY"),
        Port("s_axil_bvalid", "out", 1, ""),
        Port("s_axil_bready", "in", 1, ""),
        Port("s_axil_araddr", "in", AXIL_AW, "AXI4-Lite read address"),
        Port("s_axil_arvalid", "in", 1, ""),
        Port("s_axil_arready", "out", 1, ""),
        Port("s_axil_rdata", "out", 32, "unknown offsets read 0"),
        Port("s_axil_rresp", "out", 2, "always OKAY"),
        Port("s_axil_rvalid", "out", 1, ""),
        Port("s_axil_rready", "in", 1, ""),
        Port("fw_ld_start", "out", 1, "one-cycle pulse: read fw_ld_lines lines from line address "
                                      "fw_ld_addr (issued only while fw_ld_busy is low)"),
        Port("fw_ld_addr", "out", LAW, "line address (byte address / (4*LANES)); held until the next start"),
        Port("fw_ld_lines", "out", LINES_W, "lines to read (>= 1); held until the next start"),
        Port("fw_ld_busy", "in", 1, "load engine busy (a start is only issued while low)"),
        Port("fw_ld_done", "in", 1, "one-cycle pulse when the read job has finished"),
        Port("fw_ld_err", "in", 1, "the read job got an error (E_AXI): a pulse or a level, sampled "
                                    "only while a job runs, from the cycle after fw_ld_start"),
        Port("s_axis_fw_tdata", "in", LW, "read lines, in address order (lane i = bits [32i+31:32i])"),
        Port("s_axis_fw_tvalid", "in", 1, ""),
        Port("s_axis_fw_tready", "out", 1, "high while a read job expects lines (and in Error, to drain)"),
        Port("fw_st_start", "out", 1, "one-cycle pulse: write fw_st_lines lines to line address fw_st_addr"),
        Port("fw_st_addr", "out", LAW, "line address; held until the next start"),
        Port("fw_st_lines", "out", LINES_W, "lines to write; held until the next start"),
        Port("fw_st_busy", "in", 1, "store engine busy (a start is only issued while low)"),
        Port("fw_st_done", "in", 1, "one-cycle pulse when every line is written (responses received)"),
        Port("fw_st_err", "in", 1, "the write job got an error (E_AXI): pulse or level, sampled as "
                                    "fw_ld_err"),
        Port("m_axis_fw_tdata", "out", LW, "context lines to write, in address order"),
        Port("m_axis_fw_tvalid", "out", 1, ""),
        Port("m_axis_fw_tready", "in", 1, ""),
        Port("m_axis_fw_tlast", "out", 1, "last line of the job"),
        Port("sub_start", "out", NSUB, "one-cycle issue pulse, bit s = opcode - 0x10; the sub_* "
                                       "fields are valid with it and held until the next issue"),
        Port("sub_busy", "in", NSUB, "subroutine s busy: must be high from the cycle after its "
                                     "start until it is done"),
        Port("sub_err", "in", NSUB, "pulse: runtime error of subroutine s (E_AXI for LOAD/STORE, "
                                    "E_ACCESS otherwise, at the PC that issued it)"),
        Port("sub_nb", "out", 1, "the issued instruction is non-blocking"),
        Port("sub_pc", "out", 8, "PC of the issued instruction"),
        Port("sub_iter", "out", 13, "iterations"),
        Port("sub_w1", "out", 32, "routing word w1 (regions / LOAD mask, add flags, subroutine flags)"),
        Port("sub_acc0", "out", 32, "effective access word of channel 0 (offset + R[ra]/R[rb] as flagged)"),
        Port("sub_acc1", "out", 32, "effective access word of channel 1"),
        Port("sub_acc2", "out", 32, "effective access word of channel 2"),
        Port("sub_acc3", "out", 32, "effective access word of channel 3"),
        Port("sub_w6", "out", 32, "w6 (LOAD/STORE: line address, + R[rb] when w1[25])"),
        Port("sub_w7", "out", 32, "w7"),
        Port("busy", "out", 1, "STATUS.BUSY"),
        Port("dbg_state", "out", 4, "state (STATE_* of golden.pipearch_isa)"),
        Port("dbg_pc", "out", 8, "PC"),
        Port("dbg_fetch", "out", 1, "pulse: the instruction at dbg_pc is fetched (PC trace)"),
        Port("fifo_clr", "out", 1, "one-cycle pulse in the cycle after START is accepted: empty every "
                                   "region's FIFO (engine `fifo_clr`)"),
    ]


def block_fn(p: dict):
    L = p["LANES"]
    LW = 32 * L
    LB = 4 * L
    LBW = log2(LB)
    AW = p["ADDR_W"]
    LAW = AW - LBW
    AB = log2(max(32, LB))             # alignment bits
    NREG, DEPTH, MAX_ITER, MAX_DIM, SUBS = p["NREGIONS"], p["DEPTH"], p["MAX_ITER"], p["MAX_DIM"], p["SUBS"]
    AMEM_DEPTH = p["AMEM_DEPTH"]
    HDR_LINES = max(1, 32 // LB)
    CTXL = isa.CTX_BYTES // LB          # context lines (>= 1)
    R_PER = 256 // LW if LW <= 256 else 1   # lines per chunk
    C_PER = LW // 256 if LW > 256 else 1    # chunks per line
    INFO = info_rom(SUBS)
    SDEC = tuple((1 << i) & 0x7F for i in range(8))
    NREG_LIM = NREG if NREG < 16 else 16
    CONFIG_VAL = L | ((NREG % 16) << 8) | (log2(DEPTH) << 16) | (SUBS << 24)
    STW = max(1, log2(CTXL) + 1)       # store line counter width
    S_IDLE, S_PROG, S_CTXL, S_FETCH, S_DEC, S_EXEC, S_STC, S_LCD, S_DONE, S_ERR = range(10)

    @block
    def pipearch_rm(clk, rst,
                    s_axil_awaddr, s_axil_awvalid, s_axil_awready,
                    s_axil_wdata, s_axil_wstrb, s_axil_wvalid, s_axil_wready,
                    s_axil_bresp, s_axil_bvalid, s_axil_bready,
                    s_axil_araddr, s_axil_arvalid, s_axil_arready,
                    s_axil_rdata, s_axil_rresp, s_axil_rvalid, s_axil_rready,
                    fw_ld_start, fw_ld_addr, fw_ld_lines, fw_ld_busy, fw_ld_done, fw_ld_err,
                    s_axis_fw_tdata, s_axis_fw_tvalid, s_axis_fw_tready,
                    fw_st_start, fw_st_addr, fw_st_lines, fw_st_busy, fw_st_done, fw_st_err,
                    m_axis_fw_tdata, m_axis_fw_tvalid, m_axis_fw_tready, m_axis_fw_tlast,
                    sub_start, sub_busy, sub_err, sub_nb, sub_pc, sub_iter, sub_w1,
                    sub_acc0, sub_acc1, sub_acc2, sub_acc3, sub_w6, sub_w7,
                    busy, dbg_state, dbg_pc, dbg_fetch, fifo_clr):
        pmem = [sig_u(256) for _ in range(256)]
        spc = [sig_u(8) for _ in range(NSUB)]
        ir = sig_u(256)          # program memory read register (address pc_d)
        ir_r = sig_u(256)        # its copy in fabric registers (Fetch -> Decode)
        pc_d = sig_u(8)          # next PC (the program memory read address)
        pc1 = sig_u(8)
        pc_nx = sig_u(8)         # PC after this instruction when it does not wait (registered)
        e_go = sig_b()
        w6e_r = sig_u(32)
        effr0, effr1, effr2, effr3 = (sig_u(32) for _ in range(4))
        b_r = sig_u(8)           # registered check bits: opc res abs fld acc len rsm tgt
        pm_we = sig_b()
        pm_wa = sig_u(8)
        spc_we = sig_b()
        spc_wa = sig_u(3)

        # machine state
        state = sig_u(4)
        ph = sig_u(2)
        pc = sig_u(8)
        regs = [sig_u(32) for _ in range(15)]          # R1..R15
        rf = ConcatSignal(*reversed(regs))                 # R1..R15 (R0 = 0)
        rf_we = sig_b()
        rf_clr = sig_b()
        ctx_we = sig_b()
        busy_s = sig_b()
        sdec = sig_u(NSUB)
        n9 = sig_u(9)
        n1 = sig_u(9)
        prog_n = sig_u(8)
        sc_pc = sig_u(8)
        lc_pc = sig_u(8)
        saved_pc = sig_u(8)
        hdr_bad = sig_b()
        in_load = sig_b()
        in_store = sig_b()
        ctx_st = sig_u(32)
        ctx_pcw = sig_u(32)
        st_state = sig_u(2)
        st_pc = sig_u(8)
        f_done = sig_b()
        f_err = sig_b()
        f_sw = sig_b()
        f_susp = sig_b()
        f_fin = sig_b()
        err_pc = sig_u(8)
        err_code = sig_u(8)
        cyc = sig_u(64)
        cyc_hi_l = sig_u(32)
        prog_lo = sig_u(32)
        prog_hi = sig_u(32)
        ctx_lo = sig_u(32)
        ctx_hi = sig_u(32)
        prog_a = sig_u(AW)
        ctx_a = sig_u(AW)
        bvalid_r = sig_b()
        rvalid_r = sig_b()
        rdata_r = sig_u(32)
        # firmware load / store
        ld_active = sig_b()
        ld_lines = sig_u(LINES_W)
        ld_rcv = sig_u(LINES_W)
        ld_dseen = sig_b()
        ld_start_r = sig_b()
        ld_addr_r = sig_u(LAW)
        ck_idx = sig_u(10)
        st_active = sig_b()
        st_idx = sig_u(STW)
        st_dseen = sig_b()
        st_start_r = sig_b()
        st_addr_r = sig_u(LAW)
        # issue outputs
        ss_r = sig_u(NSUB)
        snb_r = sig_b()
        spc_r = sig_u(8)
        sit_r = sig_u(13)
        sw1_r = sig_u(32)
        sacc0, sacc1, sacc2, sacc3 = (sig_u(32) for _ in range(4))
        sw6_r = sig_u(32)
        sw7_r = sig_u(32)
        ra_q = sig_u(32)
        ex_first = sig_b()
        rb_q = sig_u(32)

        # ---- combinational
        ck_data = sig_u(256)
        ck_valid = sig_b()
        cv_full = sig_b()
        fw_acc = sig_b()
        ld_cmp = sig_b()
        ra_val = sig_u(32)
        rb_val = sig_u(32)
        op = sig_u(6)
        nbit = sig_b()
        fra = sig_u(4)
        frb = sig_u(4)
        frd = sig_u(4)
        itr = sig_u(13)
        w1 = sig_u(32)
        w6 = sig_u(32)
        w7 = sig_u(32)
        w27nz = sig_b()
        info = sig_u(26)
        sidx = sig_u(3)
        tgt = sig_u(8)
        is_load = sig_b()
        amem = sig_b()
        lmask = sig_u(16)
        eff = [sig_u(32) for _ in range(4)]
        acc_bad_l = [sig_b() for _ in range(4)]
        len_ne_dim_l = [sig_b() for _ in range(4)]
        len_ne_1_l = [sig_b() for _ in range(4)]
        nib_ge_l = [sig_b() for _ in range(4)]
        nib_nz_l = [sig_b() for _ in range(4)]
        unz_l = [sig_b() for _ in range(4)]
        acc_bad = ConcatSignal(*reversed(acc_bad_l))
        len_ne_dim = ConcatSignal(*reversed(len_ne_dim_l))
        len_ne_1 = ConcatSignal(*reversed(len_ne_1_l))
        nib_ge = ConcatSignal(*reversed(nib_ge_l))
        nib_nz = ConcatSignal(*reversed(nib_nz_l))
        unz = ConcatSignal(*reversed(unz_l))
        eff0, eff1, eff2, eff3 = eff
        b_opc, b_res, b_abs, b_fld, b_acc, b_len, b_rsm, b_tgt = (sig_b() for _ in range(8))
        res_ctl = sig_b()
        res_sub = sig_b()
        res_ch = sig_b()
        fld_sub = sig_b()
        dec_err = sig_u(8)
        tbusy = sig_b()
        busy8 = sig_u(8)
        blk_wait = sig_b()
        se_any = sig_b()
        se_idx = sig_u(3)
        se_pc = sig_u(8)
        add_res = sig_u(32)
        cyc_full = sig_b()
        take_c = sig_b()
        w6_eff = sig_u(32)
        ctxv = sig_u(1024)
        ctx_line = sig_u(LW)
        status = sig_u(32)
        hdr_bad_c = sig_b()
        ld_lines_prog = sig_u(LINES_W)
        n_ge_tgt = sig_b()
        insts = []

        # ---------------- line -> 256-bit chunk converter ----------------
        if LW <= 256:
            ck = sig_u(256)
            ckv = sig_b()
            if R_PER > 1:
                ckc = sig_u(log2(R_PER))

                @always_seq(clk.posedge, reset=rst)
                def conv():
                    ckv.next = False
                    if ld_start_r:
                        ckc.next = 0
                    elif fw_acc:
                        ck.next = concat(s_axis_fw_tdata, ck[256:LW])
                        ckc.next = ckc + 1
                        if ckc == R_PER - 1:
                            ckv.next = True
            else:
                @always_seq(clk.posedge, reset=rst)
                def conv():
                    ckv.next = False
                    if fw_acc and not ld_start_r:
                        ck.next = s_axis_fw_tdata
                        ckv.next = True

            @always_comb
            def conv_o():
                ck_data.next = ck
                ck_valid.next = ckv
                cv_full.next = ckv
            insts += [conv, conv_o]
        else:
            lr = sig_u(LW)
            lrv = sig_b()
            ci = sig_u(log2(C_PER))

            @always_seq(clk.posedge, reset=rst)
            def conv():
                if ld_start_r:
                    lrv.next = False
                elif fw_acc:
                    lr.next = s_axis_fw_tdata
                    lrv.next = True
                    ci.next = 0
                elif lrv:
                    lr.next = concat(intbv(0)[256:], lr[LW:256])
                    ci.next = ci + 1
                    if ci == C_PER - 1:
                        lrv.next = False

            @always_comb
            def conv_o():
                ck_data.next = lr[256:]
                ck_valid.next = lrv
                cv_full.next = lrv
            insts += [conv, conv_o]

        @always_comb
        def fw_c():
            fw_acc.next = s_axis_fw_tvalid and ld_active and not cv_full
            s_axis_fw_tready.next = (ld_active and not cv_full) or state == S_ERR
            ld_cmp.next = ld_active and ld_rcv == ld_lines and (ld_dseen or fw_ld_done) and not cv_full
            fw_ld_start.next = ld_start_r
            fw_ld_addr.next = ld_addr_r
            fw_ld_lines.next = ld_lines
            fw_st_start.next = st_start_r
            fw_st_addr.next = st_addr_r
            fw_st_lines.next = CTXL

        # ---------------- program memory ----------------
        @always_comb
        def pm_c():
            pm_we.next = ck_valid and state == S_PROG and ph == 3 and ck_idx != 0 and \
                ck_idx <= concat(intbv(0)[2:], prog_n)
            pm_wa.next = ck_idx[8:] - 1

        @always(clk.posedge)
        def pm_ram():
            if pm_we:
                pmem[pm_wa].next = ck_data
            ir.next = pmem[pc_d]

        # Fetch: the instruction out of the block RAM is only copied, used as register
        # indices and looked up in the decode table; everything else reads ir_r
        op_f = sig_u(6)
        info_f = sig_u(26)

        @always_comb
        def op_fc():
            op_f.next = ir[32:26]

        @always_comb
        def info_fc():
            info_f.next = INFO[op_f]

        @always(clk.posedge)
        def ir_copy():
            ir_r.next = ir

        @always_seq(clk.posedge, reset=rst)
        def info_reg():
            info.next = info_f
        insts += [op_fc, info_fc, ir_copy, info_reg]

        @always(clk.posedge)
        def spc_ram():
            if spc_we:
                spc[spc_wa].next = pc

        # ---------------- header check, lines of the program image ----------------
        @always_comb
        def hdr_c():
            hdr_bad_c.next = (ck_data[32:] == 0 or ck_data[32:] > 255
                              or (ck_data[64:32] != 255 and ck_data[64:32] >= ck_data[32:])
                              or (ck_data[96:64] != 255 and ck_data[96:64] >= ck_data[32:])
                              or ck_data[256:96] != 0)

        @always_comb
        def n9_c():
            n9.next = concat(intbv(0)[1:], prog_n)

        n16 = sig_u(LINES_W)
        if LB <= 32:
            @always_comb
            def n1_c():
                n1.next = n9 + 1
        else:
            @always_comb
            def n1_c():
                n16.next = concat(intbv(0)[LINES_W - 9:], n9) + C_PER
        if R_PER > 1:
            RB = log2(R_PER)

            @always_comb
            def plines_c():
                ld_lines_prog.next = concat(intbv(0)[LINES_W - 9 - RB:], n1, intbv(0)[RB:])
        elif C_PER > 1:
            CB = log2(C_PER)

            @always_comb
            def plines_c():
                ld_lines_prog.next = n16 >> CB
        else:
            @always_comb
            def plines_c():
                ld_lines_prog.next = concat(intbv(0)[LINES_W - 9:], n1)
        insts += [n9_c, n1_c, plines_c]

        # ---------------- registers R1..R15 (one process each) ----------------

        for i in range(1, 16):
            insts.append(rm_reg(clk, rst, regs[i - 1], rf_we, frd, add_res, rf_clr, ctx_we, ck_idx, ck_data, i))

        @always_comb
        def rf_ctl():
            rf_we.next = state == S_EXEC and (op == isa.ADDI or op == isa.ADD or op == isa.SUB)
            rf_clr.next = state == S_CTXL and ph == 2 and ctx_st == isa.CTX_FRESH
            ctx_we.next = ck_valid and state == S_CTXL and ph == 1

        # ---------------- register file reads, instruction fields ----------------
        # R[fra] / R[frb]: a balanced 16:1 multiplexer tree on the index bits (the case
        # statement mapped to a 6-LUT-deep AND-OR after the block RAM's output)
        insts.append(rm_rfmux(fra, ra_val, *regs))
        insts.append(rm_rfmux(frb, rb_val, *regs))

        @always_comb
        def fields():
            fra.next = ir[25:21]          # register read in Fetch (block RAM output)
            frb.next = ir[21:17]
            op.next = ir_r[32:26]
            nbit.next = ir_r[25]
            frd.next = ir_r[17:13]
            itr.next = ir_r[13:]
            w1.next = ir_r[64:32]
            w6.next = ir_r[224:192]
            w7.next = ir_r[256:224]
            w27nz.next = ir_r[256:64] != 0
            tgt.next = ir_r[40:32]
            sidx.next = ir_r[29:26]
            lmask.next = ir_r[48:32]

        @always_comb
        def misc_c():
            is_load.next = op == isa.LOAD
            amem.next = op == isa.LOAD and w1[24]
            n_ge_tgt.next = tgt != 255 and tgt >= prog_n

        # ---------------- per-channel checks ----------------

        for k in range(4):
            insts.append(rm_channel(clk, rst, ir_r, ra_q, rb_q, w6, eff[k], acc_bad_l[k], len_ne_dim_l[k], len_ne_1_l[k],
                                    nib_ge_l[k], nib_nz_l[k], unz_l[k], k, NREG, DEPTH))

        # ---------------- decode-time checks (lowest error code wins) ----------------
        @always_comb
        def chk_res():
            # control opcodes
            r = nbit or itr != 0 or w27nz
            if info[I_W1 + 2:I_W1] == 0 and w1 != 0:
                r = True
            if info[I_W1 + 2:I_W1] == 2 and w1[32:8] != 0:
                r = True
            if info[I_W1 + 2:I_W1] == 3 and w1[32:7] != 0:
                r = True
            res_ctl.next = r

        @always_comb
        def chk_res_ch():
            r = False
            for k in range(4):
                if not info[I_USED + k]:
                    if unz[k] or (nib_nz[k] and not is_load):
                        r = True
            res_ch.next = r

        @always_comb
        def chk_res_sub():
            r = bool(res_ch)
            if w1[24] and not info[I_FLAGS]:
                r = True
            if w1[25] and not info[I_FLAGS + 1]:
                r = True
            if w1[32:26] != 0:
                r = True
            if amem:
                if w1[16] or w1[20] or ir_r[96:64] != 0 or w7[32:21] != 0:
                    r = True
            elif not info[I_W7] and w7 != 0:
                r = True
            res_sub.next = r

        itr_big = sig_b()
        mask_big = sig_b()
        if MAX_ITER < (1 << 13) - 1:
            @always_comb
            def itr_c():
                itr_big.next = itr > MAX_ITER
        else:
            @always_seq(clk.posedge, reset=rst)
            def itr_c():
                itr_big.next = False
        if NREG < 16:
            @always_comb
            def mask_c():
                mask_big.next = lmask[16:NREG] != 0
        else:
            @always_seq(clk.posedge, reset=rst)
            def mask_c():
                mask_big.next = False
        insts += [itr_c, mask_c]
        amem_big = sig_b()
        am_end = sig_u(19)
        LL = log2(L)

        if LL > 0:
            @always_comb
            def amem_c():
                am_end.next = concat(intbv(0)[3:], w7[16:]) + concat(intbv(0)[6 - LL:], itr, intbv(0)[LL:])
        else:
            @always_comb
            def amem_c():
                am_end.next = concat(intbv(0)[3:], w7[16:]) + concat(intbv(0)[6:], itr)

        @always_comb
        def amem_c2():
            amem_big.next = am_end > AMEM_DEPTH
        insts += [amem_c, amem_c2]

        @always_comb
        def chk_fld():
            f = itr == 0 or itr_big
            if info[I_DIM] and (w6 == 0 or w6 > MAX_DIM):
                f = True
            if is_load:
                if lmask == 0 or mask_big:
                    f = True
                if amem and ((lmask & (lmask - 1)) != 0 or w7[21:16] >= NGCH or amem_big):
                    f = True
            else:
                for k in range(4):
                    if info[I_USED + k] and nib_ge[k]:
                        f = True
            if op == isa.MULTSUB and w1[24] and L == 1:
                f = True
            fld_sub.next = f

        @always_comb
        def chk_all():
            b_opc.next = not info[I_VALID]
            b_res.next = (res_sub if info[I_SUB] else res_ctl)
            b_abs.next = info[I_SUB] and not info[I_PRES]
            b_fld.next = info[I_SUB] and fld_sub
            a = False
            ln = False
            for k in range(4):
                if info[I_USED + k] and acc_bad[k] and not (k == 0 and amem):
                    a = True
                if info[I_VEC + k] and len_ne_dim[k]:
                    ln = True
                if info[I_SCA + k] and len_ne_1[k]:
                    ln = True
            b_acc.next = info[I_SUB] and a
            b_len.next = info[I_SUB] and ln
            b_rsm.next = op == isa.RESUME and not in_load
            b_tgt.next = info[I_TGT] and n_ge_tgt

        # Decode cycle 1 -> 2: every check bit, the effective words and the next PC
        # into registers (the inputs are stable from the end of Fetch on)
        @always_seq(clk.posedge, reset=rst)
        def dec_reg():
            b_r.next = concat(b_tgt, b_rsm, b_len, b_acc, b_fld, b_abs, b_res, b_opc)
            if op == isa.JMP or ((op == isa.BLT or op == isa.BGE or op == isa.BEQ or op == isa.BNE)
                                 and take_c):
                pc_nx.next = tgt
            else:
                pc_nx.next = pc1

        @always(clk.posedge)
        def dec_words():
            w6e_r.next = w6_eff
            effr0.next = eff0
            effr1.next = eff1
            effr2.next = eff2
            effr3.next = eff3

        @always_comb
        def pc1_c():
            pc1.next = pc + 1
        insts += [dec_reg, dec_words, pc1_c]

        # Decode cycle 2: the lowest error code of the registered check bits
        @always_comb
        def chk_enc():
            if b_r[0]:
                dec_err.next = isa.E_OPCODE
            elif b_r[1]:
                dec_err.next = isa.E_RESERVED
            elif b_r[2]:
                dec_err.next = isa.E_ABSENT
            elif b_r[3]:
                dec_err.next = isa.E_FIELD
            elif b_r[4]:
                dec_err.next = isa.E_ACCESS
            elif b_r[5]:
                dec_err.next = isa.E_LENGTH
            elif b_r[6]:
                dec_err.next = isa.E_RESUME
            elif b_r[7]:
                dec_err.next = isa.E_TARGET
            else:
                dec_err.next = 0

        # ---------------- execute helpers ----------------
        @always_comb
        def sdec_c():
            sdec.next = SDEC[sidx]
            busy8.next = concat(False, sub_busy)

        @always_comb
        def ex_c():
            tbusy.next = busy8[sidx]
            if w1[7:] == 0:
                blk_wait.next = sub_busy != 0
            else:
                blk_wait.next = (sub_busy & w1[7:]) != 0
            if op == isa.SUB:
                add_res.next = ra_q - rb_q
            elif op == isa.ADD:
                add_res.next = ra_q + rb_q
            else:
                add_res.next = ra_q + w1
            cyc_full.next = (~cyc) == 0
            if op == isa.BLT:
                take_c.next = ra_q.signed() < rb_q.signed()
            elif op == isa.BGE:
                take_c.next = ra_q.signed() >= rb_q.signed()
            elif op == isa.BEQ:
                take_c.next = ra_q == rb_q
            else:
                take_c.next = ra_q != rb_q
            if w1[25] and (op == isa.LOAD or op == isa.STORE):
                w6_eff.next = w6 + rb_q
            else:
                w6_eff.next = w6

        # the lowest set bit of sub_err as a priority chain (one arm per bit; it was a
        # 128-entry case table with the same function: issue 14 code coverage
        # counted every redundant mask combination as a separate arm)
        @always_comb
        def se_c():
            se_any.next = sub_err != 0
            if sub_err[0]:
                se_idx.next = 0
            elif sub_err[1]:
                se_idx.next = 1
            elif sub_err[2]:
                se_idx.next = 2
            elif sub_err[3]:
                se_idx.next = 3
            elif sub_err[4]:
                se_idx.next = 4
            elif sub_err[5]:
                se_idx.next = 5
            elif sub_err[6]:
                se_idx.next = 6
            else:
                se_idx.next = 0

        @always_comb
        def se_rd():
            se_pc.next = spc[se_idx]

        # ---------------- context line out ----------------
        @always_comb
        def ctx_c():
            ctxv.next = concat(intbv(0)[448:], rf, intbv(0)[32:], intbv(0)[24:], st_pc,
                               intbv(0)[30:], st_state)

        ctx_sr = sig_u(1024)
        st_v = sig_b()

        @always_seq(clk.posedge, reset=rst)
        def ctx_shift():
            if st_start_r:
                ctx_sr.next = ctxv
            elif st_v and m_axis_fw_tready and CTXL > 1:
                ctx_sr.next = ctx_sr >> LW

        @always_comb
        def ctx_o():
            ctx_line.next = ctx_sr[LW:]
        insts += [ctx_shift, ctx_o]

        @always_comb
        def outs():
            m_axis_fw_tdata.next = ctx_line
            m_axis_fw_tvalid.next = st_v
            st_v.next = st_active and not st_start_r and st_idx != CTXL
            m_axis_fw_tlast.next = st_idx == CTXL - 1
            sub_start.next = ss_r
            sub_nb.next = snb_r
            sub_pc.next = spc_r
            sub_iter.next = sit_r
            sub_w1.next = sw1_r
            sub_acc0.next = sacc0
            sub_acc1.next = sacc1
            sub_acc2.next = sacc2
            sub_acc3.next = sacc3
            sub_w6.next = sw6_r
            sub_w7.next = sw7_r
            busy_s.next = state != S_IDLE and state != S_DONE and state != S_ERR
            busy.next = state != S_IDLE and state != S_DONE and state != S_ERR
            dbg_state.next = state
            dbg_pc.next = pc
            dbg_fetch.next = state == S_FETCH and pc != 255 and pc < prog_n
            spc_we.next = state == S_DEC and ph == 1 and dec_err == 0 and info[I_SUB] and not tbusy
            spc_wa.next = sidx

        @always_comb
        def status_c():
            status.next = concat(intbv(0)[8:], pc, intbv(0)[4:], state, intbv(0)[2:], f_fin, f_susp,
                                 f_sw, f_err, f_done, busy_s)

        @always_comb
        def axil_o():
            s_axil_awready.next = s_axil_awvalid and s_axil_wvalid and not bvalid_r
            s_axil_wready.next = s_axil_awvalid and s_axil_wvalid and not bvalid_r
            s_axil_bvalid.next = bvalid_r
            s_axil_bresp.next = 0
            s_axil_arready.next = not rvalid_r
            s_axil_rvalid.next = rvalid_r
            s_axil_rresp.next = 0
            s_axil_rdata.next = rdata_r

        if AW < 32:
            @always_comb
            def addr_c():
                prog_a.next = prog_lo[AW:]
                ctx_a.next = ctx_lo[AW:]
        elif AW == 32:
            @always_comb
            def addr_c():
                prog_a.next = prog_lo
                ctx_a.next = ctx_lo
        else:
            @always_comb
            def addr_c():
                prog_a.next = concat(prog_hi[AW - 32:], prog_lo)
                ctx_a.next = concat(ctx_hi[AW - 32:], ctx_lo)

        # ---------------- the next PC (also the program memory read address) ----------------
        @always_comb
        def e_go_c():
            # Execute leaves for the next instruction at pc_nx this cycle
            if info[I_SUB]:
                e_go.next = not tbusy and not ex_first
            elif op == isa.BLOCK:
                e_go.next = not blk_wait
            elif op == isa.YIELD:
                e_go.next = not (f_sw and not in_load and not in_store)
            elif op == isa.RESUME:
                e_go.next = False
            else:
                e_go.next = True

        @always_comb
        def pc_c():
            pc_d.next = pc
            if state == S_CTXL:
                if ph != 0 and ph != 1:
                    if ctx_st == isa.CTX_FRESH:
                        pc_d.next = 0
                    elif ctx_st == isa.CTX_SUSPENDED and ctx_pcw[32:8] == 0:
                        if lc_pc != 255:
                            pc_d.next = lc_pc
                        else:
                            pc_d.next = ctx_pcw[8:]
            elif state == S_DEC:
                if ph != 0 and dec_err == 0 and info[I_SUB] and not tbusy and nbit:
                    pc_d.next = pc_nx
            elif state == S_EXEC:
                if e_go:
                    pc_d.next = pc_nx
            elif state == S_LCD:
                pc_d.next = saved_pc
            elif state == S_STC:
                if ph != 0 and ph != 1 and st_idx == CTXL and (st_dseen or fw_st_done) and \
                        st_state == isa.CTX_SUSPENDED and sc_pc != 255:
                    pc_d.next = sc_pc
            if s_axil_awvalid and s_axil_wvalid and not bvalid_r and s_axil_wstrb == 15 and \
                    s_axil_awaddr == isa.REG_CTRL and s_axil_wdata[0] and not busy_s:
                pc_d.next = 0

        # ---------------- the machine ----------------
        @always_seq(clk.posedge, reset=rst)
        def main():
            ld_start_r.next = False
            st_start_r.next = False
            ss_r.next = 0
            fifo_clr.next = False
            ra_q.next = ra_val
            rb_q.next = rb_val
            pc.next = pc_d               # every PC change is decided in pc_c
            busy_now = bool(busy_s)
            if busy_now and not cyc_full:
                cyc.next = cyc + 1
            # ---- firmware load bookkeeping
            if fw_acc:
                ld_rcv.next = ld_rcv + 1
            if ld_active and fw_ld_done:
                ld_dseen.next = True
            if ck_valid:
                ck_idx.next = ck_idx + 1
                if state == S_PROG and ph == 1 and ck_idx == 0:
                    hdr_bad.next = hdr_bad_c
                    prog_n.next = ck_data[8:]
                    sc_pc.next = ck_data[40:32]
                    lc_pc.next = ck_data[72:64]
                if state == S_CTXL and ph == 1:
                    if ck_idx == 0:
                        ctx_st.next = ck_data[32:]
                        ctx_pcw.next = ck_data[64:32]
            # ---- firmware store
            if st_v and m_axis_fw_tready:
                st_idx.next = st_idx + 1
            if st_active and fw_st_done:
                st_dseen.next = True

            if state == S_PROG:
                if ph == 0:
                    if prog_a[AB:] != 0:
                        state.next = S_ERR
                        f_err.next = True
                        err_code.next = isa.E_HEADER
                        err_pc.next = 0
                    elif not fw_ld_busy:
                        ld_start_r.next = True
                        ld_addr_r.next = prog_a[AW:LBW]
                        ld_lines.next = HDR_LINES
                        ld_active.next = True
                        ld_rcv.next = 0
                        ld_dseen.next = False
                        ck_idx.next = 0
                        ph.next = 1
                elif ph == 1:
                    if ld_cmp:
                        ld_active.next = False
                        ph.next = 2
                elif ph == 2:
                    if hdr_bad:
                        state.next = S_ERR
                        f_err.next = True
                        err_code.next = isa.E_HEADER
                        err_pc.next = 0
                    elif not fw_ld_busy:
                        ld_start_r.next = True
                        ld_addr_r.next = prog_a[AW:LBW]
                        ld_lines.next = ld_lines_prog
                        ld_active.next = True
                        ld_rcv.next = 0
                        ld_dseen.next = False
                        ck_idx.next = 0
                        ph.next = 3
                else:
                    if ld_cmp:
                        ld_active.next = False
                        state.next = S_CTXL
                        ph.next = 0
            elif state == S_CTXL:
                if ph == 0:
                    if ctx_a[AB:] != 0:
                        state.next = S_ERR
                        f_err.next = True
                        err_code.next = isa.E_CONTEXT
                        err_pc.next = 0
                    elif not fw_ld_busy:
                        ld_start_r.next = True
                        ld_addr_r.next = ctx_a[AW:LBW]
                        ld_lines.next = CTXL
                        ld_active.next = True
                        ld_rcv.next = 0
                        ld_dseen.next = False
                        ck_idx.next = 0
                        ph.next = 1
                elif ph == 1:
                    if ld_cmp:
                        ld_active.next = False
                        ph.next = 2
                else:
                    ph.next = 0
                    if ctx_st == isa.CTX_FRESH:
                        state.next = S_FETCH
                    elif ctx_st == isa.CTX_SUSPENDED and ctx_pcw[32:8] == 0:
                        state.next = S_FETCH
                        if lc_pc != 255:
                            in_load.next = True
                            saved_pc.next = ctx_pcw[8:]
                    else:
                        state.next = S_ERR
                        f_err.next = True
                        err_code.next = isa.E_CONTEXT
                        err_pc.next = 0
            elif state == S_FETCH:
                if pc == 255:
                    if in_store:
                        if sub_busy == 0:
                            in_store.next = False
                            state.next = S_DONE
                            f_done.next = True
                            f_susp.next = True
                    else:
                        in_load.next = False
                        st_state.next = isa.CTX_FINISHED
                        st_pc.next = 255
                        state.next = S_STC
                        ph.next = 0
                elif pc >= prog_n:
                    state.next = S_ERR
                    f_err.next = True
                    err_code.next = isa.E_PC_RANGE
                    err_pc.next = pc
                else:
                    state.next = S_DEC
                    ph.next = 0
            elif state == S_DEC:
                if ph == 0:
                    ph.next = 1
                elif dec_err != 0:
                    state.next = S_ERR
                    f_err.next = True
                    err_code.next = dec_err
                    err_pc.next = pc
                elif info[I_SUB]:
                    if not tbusy:
                        ss_r.next = sdec
                        snb_r.next = nbit
                        spc_r.next = pc
                        sit_r.next = itr
                        sw1_r.next = w1
                        sacc0.next = effr0
                        sacc1.next = effr1
                        sacc2.next = effr2
                        sacc3.next = effr3
                        sw6_r.next = w6e_r
                        sw7_r.next = w7
                        ex_first.next = True
                        if nbit:
                            state.next = S_FETCH
                        else:
                            state.next = S_EXEC
                else:
                    state.next = S_EXEC
            elif state == S_EXEC:
                if info[I_SUB]:
                    # the start pulse is out during the first Execute cycle; the engine's
                    # busy is valid from the next one
                    ex_first.next = False
                    if not tbusy and not ex_first:
                        state.next = S_FETCH
                elif op == isa.ADDI or op == isa.ADD or op == isa.SUB:
                    state.next = S_FETCH
                elif op == isa.BLT or op == isa.BGE or op == isa.BEQ or op == isa.BNE:
                    state.next = S_FETCH
                elif op == isa.JMP:
                    state.next = S_FETCH
                elif op == isa.BLOCK:
                    if not blk_wait:
                        state.next = S_FETCH
                elif op == isa.YIELD:
                    if f_sw and not in_load and not in_store:
                        f_sw.next = False
                        st_state.next = isa.CTX_SUSPENDED
                        st_pc.next = pc + 1
                        state.next = S_STC
                        ph.next = 0
                    else:
                        state.next = S_FETCH
                elif op == isa.RESUME:
                    in_load.next = False
                    state.next = S_LCD
                else:
                    state.next = S_FETCH
            elif state == S_LCD:
                state.next = S_FETCH
            elif state == S_STC:
                if ph == 0:
                    if sub_busy == 0:
                        ph.next = 1
                elif ph == 1:
                    if not fw_st_busy:
                        st_start_r.next = True
                        st_addr_r.next = ctx_a[AW:LBW]
                        st_active.next = True
                        st_idx.next = 0
                        st_dseen.next = False
                        ph.next = 2
                else:
                    if st_idx == CTXL and (st_dseen or fw_st_done):
                        st_active.next = False
                        ph.next = 0
                        if st_state == isa.CTX_SUSPENDED:
                            if sc_pc != 255:
                                in_store.next = True
                                state.next = S_FETCH
                            else:
                                state.next = S_DONE
                                f_done.next = True
                                f_susp.next = True
                        else:
                            state.next = S_DONE
                            f_done.next = True
                            f_fin.next = True
            # ---- asynchronous errors (firmware streams, subroutines)
            if busy_now:
                if (ld_active and not ld_start_r and fw_ld_err) or (st_active and not st_start_r and fw_st_err):
                    state.next = S_ERR
                    f_err.next = True
                    err_code.next = isa.E_AXI
                    err_pc.next = pc
                    ld_active.next = False
                    st_active.next = False
                elif se_any:
                    state.next = S_ERR
                    f_err.next = True
                    if se_idx < 2:
                        err_code.next = isa.E_AXI
                    else:
                        err_code.next = isa.E_ACCESS
                    err_pc.next = se_pc
                    ld_active.next = False
                    st_active.next = False

            # ---- AXI4-Lite read
            if s_axil_arvalid and not rvalid_r:
                rvalid_r.next = True
                ra = s_axil_araddr
                if ra == isa.REG_STATUS:
                    rdata_r.next = status
                elif ra == isa.REG_PROG_LO:
                    rdata_r.next = prog_lo
                elif ra == isa.REG_PROG_HI:
                    rdata_r.next = prog_hi
                elif ra == isa.REG_CTX_LO:
                    rdata_r.next = ctx_lo
                elif ra == isa.REG_CTX_HI:
                    rdata_r.next = ctx_hi
                elif ra == isa.REG_ERROR:
                    rdata_r.next = concat(intbv(0)[16:], err_code, err_pc)
                elif ra == isa.REG_CYCLES_LO:
                    rdata_r.next = cyc[32:]
                    cyc_hi_l.next = cyc[64:32]
                elif ra == isa.REG_CYCLES_HI:
                    rdata_r.next = cyc_hi_l
                elif ra == isa.REG_CONFIG:
                    rdata_r.next = CONFIG_VAL
                else:
                    rdata_r.next = 0
            elif rvalid_r and s_axil_rready:
                rvalid_r.next = False
            # ---- AXI4-Lite write
            if s_axil_awvalid and s_axil_wvalid and not bvalid_r:
                bvalid_r.next = True
                wa = s_axil_awaddr
                if s_axil_wstrb == 15:
                    if wa == isa.REG_CTRL:
                        if s_axil_wdata[2]:
                            f_done.next = False
                            f_err.next = False
                        if s_axil_wdata[1]:
                            f_sw.next = True
                        if s_axil_wdata[0] and not busy_now:
                            state.next = S_PROG
                            fifo_clr.next = True
                            ph.next = 0
                            in_load.next = False
                            in_store.next = False
                            f_done.next = False
                            f_err.next = False
                            f_susp.next = False
                            f_fin.next = False
                            err_code.next = 0
                            err_pc.next = 0
                            cyc.next = 0
                            ld_active.next = False
                            st_active.next = False
                    elif wa == isa.REG_PROG_LO:
                        prog_lo.next = s_axil_wdata
                    elif wa == isa.REG_PROG_HI:
                        prog_hi.next = s_axil_wdata
                    elif wa == isa.REG_CTX_LO:
                        ctx_lo.next = s_axil_wdata
                    elif wa == isa.REG_CTX_HI:
                        ctx_hi.next = s_axil_wdata
            elif bvalid_r and s_axil_bready:
                bvalid_r.next = False

        return (insts, fw_c, pm_c, pm_ram, spc_ram, hdr_c, rf_ctl, sdec_c, fields, misc_c,
                chk_res, chk_res_ch, chk_res_sub, chk_fld, chk_all, chk_enc, ex_c, se_c, se_rd,
                ctx_c, outs, status_c, axil_o, addr_c, e_go_c, pc_c, main)

    return pipearch_rm


def build(p):
    ports = ports_of(p)
    return make_factory(block_fn(p), ports), ports


def datasheet(p):
    L = p["LANES"]
    return Datasheet(
        summary="The PipeArch-PU register machine (PipeArch 6.1): fetches 256-bit instructions "
                "from a 256-entry program memory, checks every decode-time rule of "
                "`golden/pipearch_isa.py`, runs the control instructions (R0..R15, ADDI/ADD/SUB, "
                "branches, JMP/END, BLOCK, YIELD, RESUME), issues subroutine instructions with "
                "their effective access words to the computation engine, and loads the program "
                "and context / stores the context through firmware line streams.",
        latency="by construction: a control instruction takes 4 cycles (Fetch, Decode x2, "
                "Execute); a non-blocking subroutine instruction 3 (its `sub_start` is out in the "
                "next instruction's Fetch cycle); a blocking one stays in Execute until the cycle "
                "after `sub_busy[s]` is seen low again (at least 2 Execute cycles); Decode adds the "
                "cycles the target subroutine is still busy.  START to the first Fetch: header, "
                "program and context reads (each until its `fw_ld_done`); at the end, the context write.  "
                "Inside these cycles the program memory is read with the next PC, Fetch registers the "
                "instruction, its register operands and its decode-table row, the first Decode cycle "
                "registers every check, and the second only issues (no block-RAM-to-issue path)",
        throughput="one instruction per 3-4 cycles; non-blocking subroutines overlap with the "
                   "following instructions (and with other subroutines)",
        notes=[
            "Subroutine handshake: `sub_start[s]` is a one-cycle pulse; `sub_nb`, `sub_pc`, "
            "`sub_iter`, `sub_w1`, `sub_acc0..3`, `sub_w6`, `sub_w7` are valid in that cycle and "
            "held until the next issue.  The engine must raise `sub_busy[s]` in the cycle after "
            "the start pulse and hold it until subroutine s is done.  Decode waits while "
            "`sub_busy[s]`; a blocking instruction waits in Execute until `sub_busy[s]` is low.  "
            "`sub_err[s]` (a pulse) stops the machine with E_AXI (LOAD/STORE) or E_ACCESS "
            "(others) at the PC that last issued s.",
            "Firmware load: `fw_ld_start` pulse (only while `fw_ld_busy` is low) with "
            "`fw_ld_addr` (line address) and `fw_ld_lines`; the lines arrive on `s_axis_fw` in "
            "address order; the job completes when all lines are received and `fw_ld_done` has "
            "pulsed (any order).  `fw_ld_err` (a pulse, or a level held until the next start, e.g. "
            "pipearch_ldst `ld_cfg_err | ld_resp_err`) stops the machine with E_AXI; it is "
            "ignored in the cycle of `fw_ld_start` (a stale level of the previous job).  Store: "
            f"`fw_st_start` pulse with `fw_st_addr`/`fw_st_lines` (= {isa.CTX_BYTES // (4 * L)}); "
            "the lines leave on `m_axis_fw` (`tlast` on the last); the job completes on "
            "`fw_st_done` after the last line.  An error aborts the stream.",
            "Start: header (1 chunk), then the whole image again (header + N instructions), "
            "then the context (128 bytes).  Reads of 32-byte chunks beyond the program are "
            "ignored.",
            "Context writes (at YIELD with a request and at the program end) first wait until "
            "every subroutine is idle; the end of a StoreContext group also waits.",
            "An error leaves issued subroutines running (they are not aborted); START again only "
            "once `sub_busy` is 0.",
            "Errors and choices: see the Clarifications section of golden/pipearch_isa.py.",
        ])


CORE = CoreDef(
    name=KIND, family="pipearch",
    description="PipeArch-PU register machine: program memory, R0..R15, decode checks, "
                "subroutine issue, context load/store, AXI4-Lite host registers",
    params=PARAMS, build=build, datasheet=datasheet,
    configs={
        "default": {},
        "small": {"LANES": 4, "NREGIONS": 3, "DEPTH": 64, "MAX_ITER": 100, "MAX_DIM": 48,
                  "SUBS": 0x3F, "ADDR_W": 24},
        "lanes1": {"LANES": 1, "NREGIONS": 16, "DEPTH": 16384, "SUBS": 0x7F},
        "lanes32": {"LANES": 32, "NREGIONS": 2, "DEPTH": 128, "SUBS": 0x5B, "ADDR_W": 40},
    },
    generator="rtl_gen/pipearch/pipearch_rm.py",
)
