"""PipeArch-PU instruction set, program image, context area and host register map.

This module is the single specification shared by the assembler
(``golden.pipearch_asm``), the instruction-set simulator (``golden.pipearch_iss``) and
the RTL (``rtl_gen/pipearch/pipearch_pu.py`` and its parts).  PipeArch sections 6.1-6.3,
Tables 2 and 3.

Machine
=======

* ``LANES`` words of ``W = 32`` bits (Q ``W.F`` signed fixed point) form one *line*;
  main-memory addresses in instructions count lines (``LINE_BYTES = 4*LANES`` bytes),
  host addresses (program, context) count bytes.
* Integer registers ``R0..R15``, 32 bits, two's complement, wrapping add/sub (they are
  loop indexes and line offsets, not data).  ``R0`` reads as 0; writes to it are ignored.
* Program memory: up to 256 instructions of 256 bits (8 words), PC is 8 bits.  PC
  ``0xFF`` is the terminating PC: jumping there ends the program (or the StoreContext
  group).  A program therefore has at most 255 executable instructions (PC 0..254).
* ``NREGIONS`` regions (default 6), each ``DEPTH`` lines, every one with a ReadRegion
  module per subroutine read channel and a WriteRegion module per write channel
  (full crossbar: every channel can name any region), each with an address memory of
  ``AMEM_DEPTH`` entries (``golden.pipearch_region`` is the per-region model).

Instruction word layout (8 x 32-bit words, ``w0`` first / lowest address)
========================================================================

``w0`` header::

    [31:26] opcode
    [25]    NB: non-blocking issue (subroutine opcodes only; must be 0 otherwise)
    [24:21] ra   register A
    [20:17] rb   register B
    [16:13] rd   destination register
    [12:0]  iterations (subroutine opcodes: 1..MAX_ITER; control opcodes: must be 0)

Control opcodes (``w2..w7`` must be 0; ``w1`` as listed, else must be 0):

====== ======== =====================================================================
opcode mnemonic semantics
====== ======== =====================================================================
0x00   NOP      PC+1
0x01   ADDI     ``R[rd] = R[ra] + w1`` (w1 signed 32-bit immediate); ``LI rd, imm`` is
                ``ADDI rd, R0, imm``
0x02   ADD      ``R[rd] = R[ra] + R[rb]``
0x03   SUB      ``R[rd] = R[ra] - R[rb]``
0x04   BLT      ``PC = w1[7:0] if R[ra] < R[rb] (signed) else PC+1``; w1[31:8] = 0
0x05   BGE      ``>=`` (signed)
0x06   BEQ      ``==``
0x07   BNE      ``!=``
0x08   JMP      ``PC = w1[7:0]``; ``END`` is ``JMP 0xFF``
0x09   BLOCK    wait until every subroutine whose bit is set in ``w1[6:0]`` is idle
                (bit = subroutine id - 0x10, see below; ``w1 = 0`` means all), PC+1
0x0A   YIELD    yield point: if a context switch is requested, store the context and
                run the StoreContext group (see "Context switch"); else PC+1
0x0B   RESUME   end of the LoadContext group: ``PC = saved PC`` (state LoadCntxDone);
                outside a LoadContext group it is an illegal instruction
====== ======== =====================================================================

Subroutine opcodes (``iterations`` in w0[12:0], 1..MAX_ITER):

``w1`` routing word::

    [3:0]   region of channel 0       [7:4] region of channel 1
    [11:8]  region of channel 2       [15:12] region of channel 3
    [19:16] add R[ra] to the offset of channel k's access word (bit k)
    [23:20] add R[rb] to the offset of channel k's access word (bit k)
    [31:24] subroutine flags (below; undefined flags must be 0)

``w2..w5``: regionaccess word of channel 0..3 (Table 3, ``golden.pipearch_region``);
unused channels' words and region fields must be 0.  The effective access word has
``offset + (R[ra] if flag) + (R[rb] if flag)``; it must still fit the 14-bit offset field
and pass ``access_error(word, iterations, DEPTH)``.  Every channel runs ``iterations``
iterations of its access word.  A *vector* channel's access length must equal the
dimension (``w6``); a *scalar* channel's must be 1 (one line per iteration; the scalar
is lane 0 of the line unless a lane flag says otherwise; written scalar lines have
the unused lanes 0).

====== ========= ======================= =========================================
opcode mnemonic  channels                ``w6`` / ``w7`` / flags
====== ========= ======================= =========================================
0x10   LOAD      ch0 out (write): every   w6 = main-memory line address; flag
                 region in the mask       [25] adds R[rb] to it.  Lines moved:
                 ``w1[15:0]`` (bit r =    length(w2) * iterations, contiguous.
                 region r, broadcast)     Flag [24] amem mode: ``iterations``
                                          lines are read and their words (LANES
                                          per line, lane 0 first) are written to
                                          the address memory of global channel
                                          ``w7[20:16]`` of the one region in the
                                          mask, entries ``w7[15:0]`` onward
                                          (``w2`` must be 0; ``w7[15:0] +
                                          iterations*LANES <= AMEM_DEPTH``, else
                                          E_FIELD; an entry keeps the low
                                          log2(DEPTH) bits of its word).
                                          Otherwise w7 = 0.
0x11   STORE     ch0 in (read)           w6 = line address, [25] add R[rb]; w7 = 0
0x12   DOTSIG    ch0 a, ch1 b (vector),  w6 = dimension; [24] sigmoid
                 ch2 res (scalar write)
0x13   SIGDELTA  ch0 z, ch1 b (vector),  w6 = dimension; [24] sigmoid
                 ch2 y (vector write)
0x14   SCALAR    ch0 a, ch1 b (scalar),  w6 = alpha, w7 = alpha*lambda1 (words);
                 ch2 res (scalar write)   [24] mode: 0 SGD ``alpha*(a-b)`` -> lane 0;
                                          1 SCD: ``g = a``, ``x = b``,
                                          ``(mu, x-mu)`` = scalar_scd -> lane 0 =
                                          ``x - mu``, lane 1 = ``mu`` (LANES >= 2;
                                          with LANES = 1 only lane 0 is written)
0x15   MULTSUB   ch0 x, ch1 a (vector),  w6 = dimension; [24] take s from lane 1
                 ch2 s (scalar), ch3 y   (``E_FIELD`` when LANES = 1)
                 (vector write)
0x16   L2REG     ch0 x, ch1 xold,        w6 = dimension, w7 = c (= 2*alpha*lambda2)
                 ch2 y (vector write)
====== ========= ======================= =========================================

Global channel ids (amem targets; the order of ReadRegion/WriteRegion modules in
every region): 0 LOAD.out, 1 STORE.in, 2 DOTSIG.a, 3 DOTSIG.b, 4 DOTSIG.res,
5 SIGDELTA.z, 6 SIGDELTA.b, 7 SIGDELTA.y, 8 SCALAR.a, 9 SCALAR.b, 10 SCALAR.res,
11 MULTSUB.x, 12 MULTSUB.a, 13 MULTSUB.s, 14 MULTSUB.y, 15 L2REG.x, 16 L2REG.xold,
17 L2REG.y.

Issue and blocking: Decode waits while the named subroutine is busy.  A blocking
(``NB = 0``) subroutine instruction waits in Execute until that subroutine is done;
non-blocking ones go straight to the next Fetch.  The program must avoid hazards
between concurrently running subroutines (PipeArch section 6.3); the ISS executes
every subroutine instruction to completion at issue, which is the reference result
of a hazard-free program.  Timing a program must allow for: a BRAM-mode read channel
starts reading at issue (it fills its output buffer before the subroutine consumes),
so it must not be issued before the writer of those lines is done (BLOCK); FIFO-mode
channels wait for their data, so a FIFO with one producer and one consumer channel is
always safe.

Errors: an instruction that is malformed (unknown opcode, nonzero reserved bits or
words, NB on a control opcode, a region number >= NREGIONS, iterations or dimension out
of range, an access word rejected for this region, a vector/scalar length rule
broken, RESUME outside LoadContext, a branch to an address >= program length other
than 0xFF) or names a subroutine the PU was generated without, stops the machine in
the Error state with ``ERR_PC`` = its PC and ``ERR_CODE`` (below).  Running off the end
of the program (PC >= length, not 0xFF) is error ``E_PC_RANGE`` at that PC.

Program image (at PROG_ADDR, 32-byte aligned)
=============================================

32-byte header: word0 = instruction count N (1..255), word1 = StoreContext PC
(``0xFF`` = none), word2 = LoadContext PC (``0xFF`` = none), words 3..7 = 0.
Instruction i (0 <= i < N) follows at ``PROG_ADDR + 32*(i+1)``.

Context area (at CTX_ADDR, 128 bytes)
=====================================================

word0 state: 0 fresh (start at PC 0 with all registers 0), 1 suspended, 2 finished;
word1 PC to resume at; words 2..17 R0..R15; words 18..31 = 0.

Alignment: PROG_ADDR and CTX_ADDR must be multiples of ``max(32, LINE_BYTES)``
(the machine moves whole lines); a misaligned PROG_ADDR is ``E_HEADER``, a misaligned
CTX_ADDR ``E_CONTEXT``, both at PC 0.  The PU supports LANES in {1, 2, 4, 8, 16, 32}.

Context switch (PipeArch 6.1, 7.2)
==================================

* The host sets the switch-request flag (``CTRL.SWITCH``).
* At the next YIELD with the flag set, the machine clears the flag, writes the context
  ``{state=1, PC = yield PC + 1, registers}`` (state StoreCntx) and jumps to the
  StoreContext PC; the group ends at PC 0xFF, the machine then goes to Done with
  ``STATUS.SUSPENDED``.  Without a StoreContext group it goes to Done directly.
* A program that reaches 0xFF otherwise writes ``{state=2, PC=0xFF, registers}``
  (``STATUS.FINISHED``).
* Start reads the header, the program and the context.  State 0: PC 0, registers 0.
  State 1: registers from the context, then the LoadContext group runs (if any) and its
  RESUME lands in LoadCntxDone, which continues at the saved PC; without a group the
  machine continues at the saved PC directly.  State 2 or any other value: error
  ``E_CONTEXT``.  Migration is a start of a suspended context on another PU.

Clarifications (register machine, ``pipearch_rm``)
=================================================

* Several errors in one instruction: the lowest error code wins.
* Reserved fields: the w0 register fields ra/rb/rd are never checked (an opcode that
  does not use one ignores it).  BLOCK: w1[31:7] = 0 (``E_RESERVED``).  Subroutines: a
  channel ``k >= len(CHANNELS[op])`` must have its region nibble, its two add flags and its access word 0; LOAD's ``w1[15:0]`` is the
  region mask (nonzero, no bit >= NREGIONS, else ``E_FIELD``), its add flags for
  channels 1..3 must be 0; amem mode: add flags of channel 0 and ``w7[31:21]`` must be 0
  (``E_RESERVED``), exactly one mask bit and ``w7[20:16] < 18`` (``E_FIELD``).  ``w7`` must
  be 0 except for SCALAR, L2REG and LOAD amem.  Vector dimension ``w6`` 1..MAX_DIM
  (``E_FIELD``).  Effective offset = ``offset + R[ra] + R[rb]`` as signed integers; outside
  0..0x3FFF is ``E_ACCESS``.
* Program header (``E_HEADER`` at PC 0): N in 1..255, StoreContext and LoadContext PCs
  ``< N`` or 0xFF, words 3..7 zero.  Context: word1 (PC) must be <= 0xFF for state 1,
  words 18..31 are ignored on read and written 0; R0 is written 0.
* A YIELD inside the StoreContext or LoadContext group is a NOP (the request stays
  pending).  Reaching 0xFF inside the LoadContext group (no RESUME) ends the program as
  finished.  A context write failing (``E_AXI``) reports the PC of the YIELD (0xFF at
  finish); a failing program/context read reports PC 0.  The context is written only
  once every subroutine is idle (the end of a StoreContext group also waits).
* START (accepted when not busy) clears DONE, ERROR, SUSPENDED, FINISHED, the ERROR
  register and CYCLES, and empties every region's FIFO (pointers and occupancy to 0,
  storage kept), so a program knows where its FIFO pushes land (ring position 0 on); CYCLES counts the cycles the machine is busy.  CLEAR clears the
  DONE and ERROR flags only.  SWITCH stays pending until a YIELD takes it.  CONFIG[11:8]
  is NREGIONS mod 16 (16 reads 0).  Address bits at and above ADDR_W are ignored.

Host register map (AXI4-Lite, 32-bit registers)
===============================================

====== ============ ===================================================================
offset name         meaning
====== ============ ===================================================================
0x00   CTRL         write: bit0 START (when idle/done/error), bit1 SWITCH (set the
                    switch request), bit2 CLEAR (clear done/error flags); reads 0
0x04   STATUS       bit0 BUSY, bit1 DONE (sticky), bit2 ERROR (sticky), bit3 SWITCH_PENDING,
                    bit4 SUSPENDED (last run stopped at a yield), bit5 FINISHED,
                    [11:8] state (STATE_* below), [23:16] PC
0x08   PROG_LO      program image byte address [31:0]
0x0C   PROG_HI      [63:32]
0x10   CTX_LO       context area byte address [31:0]
0x14   CTX_HI       [63:32]
0x18   ERROR        [7:0] faulting PC, [15:8] error code
0x1C   CYCLES_LO    cycles since the last START (saturating 64-bit counter)
0x20   CYCLES_HI
0x24   CONFIG       [7:0] LANES, [11:8] NREGIONS, [23:16] log2(DEPTH), [30:24] subroutine
                    mask (bit s-0x10: subroutine present)
====== ============ ===================================================================
"""
from __future__ import annotations

LINE_WORDS_DEFAULT = 16
NUM_REGS = 16
PROG_MAX = 255          # executable instructions (PC 0..254); 0xFF terminates
END_PC = 0xFF
INSTR_WORDS = 8
INSTR_BYTES = 32
HEADER_BYTES = 32
CTX_WORDS = 32
CTX_BYTES = 4 * CTX_WORDS

# opcodes
NOP, ADDI, ADD, SUB, BLT, BGE, BEQ, BNE, JMP, BLOCK, YIELD, RESUME = range(12)
LOAD, STORE, DOTSIG, SIGDELTA, SCALAR, MULTSUB, L2REG = range(0x10, 0x17)
CONTROL_OPS = {NOP: "NOP", ADDI: "ADDI", ADD: "ADD", SUB: "SUB", BLT: "BLT", BGE: "BGE",
               BEQ: "BEQ", BNE: "BNE", JMP: "JMP", BLOCK: "BLOCK", YIELD: "YIELD",
               RESUME: "RESUME"}
SUB_OPS = {LOAD: "LOAD", STORE: "STORE", DOTSIG: "DOTSIG", SIGDELTA: "SIGDELTA",
           SCALAR: "SCALAR", MULTSUB: "MULTSUB", L2REG: "L2REG"}
ALL_SUBROUTINES = tuple(SUB_OPS)

# channels per subroutine: (name, direction, kind) with kind "vector"/"scalar"/"any"
CHANNELS = {
    LOAD: (("out", "w", "any"),),
    STORE: (("in", "r", "any"),),
    DOTSIG: (("a", "r", "vector"), ("b", "r", "vector"), ("res", "w", "scalar")),
    SIGDELTA: (("z", "r", "vector"), ("b", "r", "vector"), ("y", "w", "vector")),
    SCALAR: (("a", "r", "scalar"), ("b", "r", "scalar"), ("res", "w", "scalar")),
    MULTSUB: (("x", "r", "vector"), ("a", "r", "vector"), ("s", "r", "scalar"),
              ("y", "w", "vector")),
    L2REG: (("x", "r", "vector"), ("xold", "r", "vector"), ("y", "w", "vector")),
}
# global channel ids, in the order listed in the module docstring
GLOBAL_CHANNELS = tuple((op, i) for op in sorted(CHANNELS) for i in range(len(CHANNELS[op])))
READ_CHANNELS = tuple(g for g, (op, i) in enumerate(GLOBAL_CHANNELS) if CHANNELS[op][i][1] == "r")
WRITE_CHANNELS = tuple(g for g, (op, i) in enumerate(GLOBAL_CHANNELS) if CHANNELS[op][i][1] == "w")

# w0 fields
OP_SHIFT, NB_BIT, RA_SHIFT, RB_SHIFT, RD_SHIFT = 26, 25, 21, 17, 13
ITER_MASK = (1 << 13) - 1
# w1 fields (subroutines)
ADD_RA_SHIFT, ADD_RB_SHIFT, FLAGS_SHIFT = 16, 20, 24
FLAG_SIGMOID = FLAG_MODE = FLAG_AMEM = FLAG_SLANE1 = 1 << 24
FLAG_ADDR_RB = 1 << 25      # LOAD/STORE: add R[rb] to the line address
AMEM_CH_SHIFT = 16          # LOAD amem mode: w7[20:16] global channel id, w7[15:0] entry base
AMEM_CH_MASK = 0x1F

# error codes
E_NONE, E_OPCODE, E_RESERVED, E_ABSENT, E_FIELD, E_ACCESS, E_LENGTH, E_RESUME, \
    E_TARGET, E_PC_RANGE, E_HEADER, E_CONTEXT, E_AXI = range(13)
ERROR_NAMES = {E_OPCODE: "unknown opcode", E_RESERVED: "nonzero reserved bits or words",
               E_ABSENT: "subroutine not present in this PU", E_FIELD: "field out of range",
               E_ACCESS: "region access word rejected", E_LENGTH: "vector/scalar length rule",
               E_RESUME: "RESUME outside a LoadContext group",
               E_TARGET: "branch target beyond the program", E_PC_RANGE: "PC ran off the program",
               E_HEADER: "bad program header", E_CONTEXT: "bad context state",
               E_AXI: "AXI error response"}

# register machine states (STATUS[11:8])
(STATE_IDLE, STATE_PROG_LOAD, STATE_CTX_LOAD, STATE_FETCH, STATE_DECODE, STATE_EXECUTE,
 STATE_STORE_CNTX, STATE_LOAD_CNTX_DONE, STATE_DONE, STATE_ERROR) = range(10)

# context states
CTX_FRESH, CTX_SUSPENDED, CTX_FINISHED = 0, 1, 2

# host registers
REG_CTRL, REG_STATUS, REG_PROG_LO, REG_PROG_HI, REG_CTX_LO, REG_CTX_HI, REG_ERROR, \
    REG_CYCLES_LO, REG_CYCLES_HI, REG_CONFIG = range(0, 0x28, 4)
CTRL_START, CTRL_SWITCH, CTRL_CLEAR = 1, 2, 4
ST_BUSY, ST_DONE, ST_ERROR, ST_SWITCH_PENDING, ST_SUSPENDED, ST_FINISHED = (1 << i for i in range(6))
