"""PipeArch-PU assembler: encodings against hand-built bit fields, text/disassembly round
trips, and every error path."""
import pytest

from golden import pipearch_isa as I
from golden.pipearch_asm import (AsmError, Ch, Program, PUConfig, acc, assemble_text, build_image,
                                 check, ch, decode, disassemble, image_words, parse)

CFG = PUConfig(lanes=4, nregions=6, depth=256, amem_depth=64, max_iter=100, max_dim=32)


def w0(op, ra=0, rb=0, rd=0, it=0, nb=0):
    """Hand encoding of w0, written from the spec's bit table (not the assembler's)."""
    return op * 2**26 + nb * 2**25 + ra * 2**21 + rb * 2**17 + rd * 2**13 + it


def full_program(cfg=CFG):
    p = Program(cfg, "full")
    p.nop()
    p.li(1, 0).li(2, 3).addi(3, 1, -7).add(4, 2, 3).sub(5, 4, 2)
    p.label("top")
    p.load(acc(4, 8, keep=True, ra=True), 0x1234, regions=[0, 2], iterations=2, ra=1, rb=2, addr_rb=True)
    p.load_amem(1, "DOTSIG.b", 4, 0x40, lines=2, rb=3, addr_rb=True)
    p.store(ch(2, 4, rb=True), 0x99, iterations=3, rb=5, nb=True)
    p.dotsig(ch(0, 4), ch(1, 4, 4, keep=True, amem=True, ra=True), ch(2, 1, keep=True),
             dim=4, iterations=8, sigmoid=True, ra=7)
    p.sigdelta(ch(0, 2, fifo=True), ch(1, 2), ch(3, 2, 10), dim=2, sigmoid=True, nb=True)
    p.scalar(ch(2, 1), ch(3, 1), ch(3, 1, 5), alpha=-5, al=3, mode="scd", iterations=4)
    p.scalar(ch(2, 1), ch(3, 1), ch(3, 1, 5), alpha=0x10000)
    p.multsub(ch(0, 4), ch(1, 4), ch(2, 1, rb=True), ch(0, 4), dim=4, s_lane1=True, rb=9)
    p.l2reg(ch(0, 4), ch(0, 4), ch(5, 4, 100), dim=4, c=-3)
    p.block("dotsig", "load").block()
    p.blt(1, 2, "top").bge(1, 2, "top").beq(1, 2, 0xFF).bne(1, 2, "ctx").jmp("top")
    p.yield_()
    p.end()
    p.store_context()
    p.label("ctx")
    p.store(ch(0, 4), 0x40)
    p.end()
    p.load_context()
    p.load(acc(4), 0x40, regions=[0])
    p.resume()
    return p


def test_encoding_matches_the_spec_bit_layout():
    a = full_program().assemble()
    hdr, ins = image_words(a.image)
    assert hdr == [a.n, a.labels["ctx"], a.labels["ctx"] + 2, 0, 0, 0, 0, 0]
    assert len(a.image) == 32 * (a.n + 1)
    assert ins[0] == (w0(I.NOP),) + (0,) * 7
    assert ins[3] == (w0(I.ADDI, ra=1, rd=3), 2**32 - 7) + (0,) * 6
    assert ins[4] == (w0(I.ADD, ra=2, rb=3, rd=4),) + (0,) * 7
    top = a.labels["top"]
    # LOAD: mask 0b101, channel-0 add-ra bit (w1[16]), flag [25]; w6 address
    assert ins[top] == (w0(I.LOAD, ra=1, rb=2, it=2), (1 << 25) | (1 << 16) | 0b101,
                        (1 << 31) | (4 << 16) | (1 << 15) | 8, 0, 0, 0, 0x1234, 0)
    # LOAD amem: flags [24]+[25], one-region mask, w7 = channel << 16 | entry
    assert ins[top + 1] == (w0(I.LOAD, rb=3, it=2), (3 << 24) | 0b10, 0, 0, 0, 0, 0x40, (3 << 16) | 4)
    # STORE: region nibble 2, add-rb bit of channel 0 (w1[20]), NB
    assert ins[top + 2] == (w0(I.STORE, rb=5, it=3, nb=1), (1 << 20) | 2,
                            (1 << 31) | (4 << 16), 0, 0, 0, 0x99, 0)
    # DOTSIG: regions 0,1,2; add-ra on channel 1 (w1[17]); sigmoid flag
    assert ins[top + 3] == (w0(I.DOTSIG, ra=7, it=8), (1 << 24) | (1 << 17) | (2 << 8) | (1 << 4),
                            (1 << 31) | (4 << 16), (1 << 31) | (4 << 16) | (1 << 15) | (1 << 14) | 4,
                            (1 << 31) | (1 << 16) | (1 << 15), 0, 4, 0)
    assert ins[top + 4][2] == (1 << 30) | (2 << 16)          # FIFO access word
    assert ins[top + 5][6:] == (2**32 - 5, 3) and ins[top + 5][1] >> 24 == 1
    assert ins[top + 7][1] == (1 << 24) | (1 << 22) | (0 << 12) | (2 << 8) | (1 << 4)
    assert ins[top + 8][7] == 2**32 - 3
    assert ins[top + 9][1] == 0b0000101 and ins[top + 10][1] == 0
    assert ins[top + 11] == (w0(I.BLT, ra=1, rb=2), top) + (0,) * 6
    assert ins[top + 13][1] == 0xFF
    assert ins[top + 14][1] == a.labels["ctx"]
    assert ins[top + 17] == (w0(I.JMP), 0xFF) + (0,) * 6
    assert build_image(a.words, a.store_pc, a.load_pc) == a.image


def test_disassemble_and_text_round_trip():
    a = full_program().assemble()
    text = disassemble(a.image)
    b = assemble_text(text, CFG)
    assert b.image == a.image
    assert "RAW" not in text
    assert disassemble(b.image) == text
    for pc in range(a.n):
        assert f"{pc:3d} " in a.listing
    assert "StoreContext group" in a.listing and "DOTSIG" in a.listing


def test_text_form_features():
    src = """
    # a comment line
        LI R1, 0          # trailing comment
        li r2, 4
    loop: ADDI R1, R1, 1
        BLT R1, R2, loop
        LOAD acc(4), 0x10, regions=[1]
        LOAD_AMEM 1, 11, 0, 16, lines=1
        MULTSUB ch(1, 4), ch(1, 4, amem=True), ch(2, 1), ch(1, 4), dim=4
    done:
        END
    .store_context
        STORE ch(1, 4), 0x10
        END
    """
    a = assemble_text(src, CFG)
    assert a.labels == {"loop": 2, "done": 7}
    assert a.store_pc == 8 and a.load_pc == 0xFF and a.n == 10
    p = Program(CFG)
    p.li(1, 0).li(2, 4).label("loop").addi(1, 1, 1).blt(1, 2, "loop")
    p.load(acc(4), 0x10, regions=[1]).load_amem(1, 11, 0, 16)
    p.multsub(ch(1, 4), ch(1, 4, amem=True), ch(2, 1), ch(1, 4), dim=4)
    p.label("done").end().store_context().store(ch(1, 4), 0x10).end()
    assert p.assemble().image == a.image


def test_raw_and_unexpressible_words_disassemble_as_raw():
    p = Program(CFG)
    p.raw(w0(0x3F), 1, 2, 3, 4, 5, 6, 7)
    p.raw(w0(I.NOP, ra=3), 0, 0, 0, 0, 0, 0, 0)       # unused register field: legal, not text
    p.end()
    a = p.assemble()
    text = disassemble(a.image)
    assert text.count("RAW") == 2
    assert assemble_text(text, CFG).image == a.image


def test_checker_accepts_assembled_and_flags_raw():
    a = full_program().assemble()
    for w in a.words:
        assert check(decode(w), CFG, a.n) is None
    assert check(decode((w0(0x3F),) + (0,) * 7), CFG, 1)[0] == I.E_OPCODE


# ---------------------------------------------------------------------------------
# error paths
# ---------------------------------------------------------------------------------
def err(fn, *match):
    with pytest.raises(AsmError) as e:
        fn()
    for m in match:
        assert m in str(e.value), str(e.value)
    return str(e.value)


def P(cfg=CFG):
    return Program(cfg, "t")


def test_register_and_immediate_fields():
    err(lambda: P().addi(16, 0, 1), "instruction 0 (ADDI)", "rd = 16")
    err(lambda: P().add(1, -1, 2), "(ADD)", "ra = -1")
    err(lambda: P().blt(1, "R17", 0), "(BLT)", "rb = 17")
    err(lambda: P().addi(1, 0, 1 << 32), "(ADDI)", "imm")
    err(lambda: P().li(1, 1.5), "(ADDI)", "imm")
    err(lambda: P().jmp(256), "(JMP)", "target")


def test_subroutine_fields():
    err(lambda: P().dotsig(ch(0, 4), ch(1, 4), ch(2, 1), dim=4, iterations=0), "(DOTSIG)", "iterations = 0")
    err(lambda: P().dotsig(ch(0, 4), ch(1, 4), ch(2, 1), dim=4, iterations=101), "iterations = 101")
    err(lambda: P().dotsig(ch(0, 4), ch(1, 4), ch(2, 1), dim=0), "dim = 0")
    err(lambda: P().dotsig(ch(0, 33), ch(1, 33), ch(2, 1), dim=33), "dim = 33")
    err(lambda: P().dotsig(ch(6, 4), ch(1, 4), ch(2, 1), dim=4), "(DOTSIG)", "channel a region")
    err(lambda: P().load(acc(4), 0, regions=[]), "(LOAD)", "regions is empty")
    err(lambda: P().load(acc(4), 0, regions=[6]), "(LOAD)", "region = 6")
    err(lambda: P().load(acc(4), 0), "(LOAD)", "no regions")
    err(lambda: P().store(acc(4), 0), "(STORE)", "no region")
    err(lambda: P().store(ch(0, 4), -1 - (1 << 31)), "(STORE)", "addr")
    err(lambda: P().scalar(ch(0, 1), ch(0, 1), ch(0, 1), alpha=1, mode="x"), "(SCALAR)", "mode")
    err(lambda: P().l2reg(ch(0, 4), 0x80040000, ch(0, 4), dim=4, c=0), "(L2REG)", "channel xold")
    err(lambda: P().block("nosuch"), "(BLOCK)", "unknown subroutine")


def test_access_words_and_length_rule():
    err(lambda: P().store(ch(0, 300), 0), "(STORE)", "region access word rejected", "exceeds depth 256")
    P().store(ch(0, 4, 300), 0)            # offset taken modulo DEPTH: legal
    P().store(ch(0, 200, 100), 0)          # runs past the end of the region: wraps, legal
    err(lambda: P().store(Ch.raw(0, (3 << 30) | (4 << 16)), 0), "exactly one of the BRAM")
    err(lambda: P().store(Ch.raw(0, 1 << 31), 0), "length is 0")
    err(lambda: P().dotsig(ch(0, 4), ch(1, 3), ch(2, 1), dim=4), "(DOTSIG)", "vector/scalar length rule",
        "channel 1 (b) length 3 != dimension 4")
    err(lambda: P().dotsig(ch(0, 4), ch(1, 4), ch(2, 2), dim=4), "scalar channel 2 (res) length 2 != 1")
    err(lambda: P().multsub(ch(0, 4), ch(1, 4), ch(2, 1), ch(3, 5), dim=4), "channel 3 (y)")
    with pytest.raises(ValueError, match="length"):
        ch(0, 1 << 14)


def test_amem_and_lanes_rules():
    err(lambda: P().load_amem(0, 2, 60, 0, lines=2), "(LOAD)", "exceed AMEM_DEPTH=64")
    err(lambda: P().load_amem(0, 18, 0, 0), "amem channel = 18")
    err(lambda: P().load_amem(0, "DOTSIG.q", 0, 0), "unknown channel")
    one = PUConfig(lanes=1, depth=256)
    err(lambda: P(one).multsub(ch(0, 4), ch(1, 4), ch(2, 1), ch(0, 4), dim=4, s_lane1=True),
        "(MULTSUB)", "LANES = 1")
    P(one).multsub(ch(0, 4), ch(1, 4), ch(2, 1), ch(0, 4), dim=4)


def test_absent_subroutine():
    cfg = PUConfig(lanes=4, depth=256, subroutines=(I.LOAD, I.STORE))
    err(lambda: P(cfg).l2reg(ch(0, 4), ch(0, 4), ch(0, 4), dim=4, c=0), "(L2REG)", "not present")
    P(cfg).load(acc(4), 0, regions=[0])


def test_program_level_errors():
    p = P()
    for _ in range(I.PROG_MAX):
        p.nop()
    err(lambda: p.nop(), "instruction 255 (NOP)", "too many instructions")
    err(lambda: P().assemble(), "empty program")
    err(lambda: P().blt(1, 2, "nowhere").end().assemble(), "instruction 0 (BLT)", "undefined label 'nowhere'")
    err(lambda: P().label("a").nop().label("a"), "defined twice")
    err(lambda: P().label("R3"), "looks like a register")
    err(lambda: P().nop().jmp(5).assemble(), "instruction 1 (JMP)", "branch target 5 is beyond")
    err(lambda: P().nop().store_context().assemble(), "StoreContext group is marked at PC 1")
    err(lambda: P().store_context().store_context(), "marked twice")
    err(lambda: P().nop().resume().end().assemble(), "RESUME without a LoadContext")
    err(lambda: P().nop().label("late").assemble(), "label 'late'")
    P().nop().jmp(1).assemble()


def test_text_errors_name_the_line():
    err(lambda: parse("NOP\nFROB R1\n", CFG), "line 2", "unknown mnemonic 'FROB'")
    err(lambda: parse("NOP\n\nADDI R1, R1, 1, nb=1\n", CFG), "line 3 (ADDI)", "nb")
    err(lambda: parse("LI R1, (\n", CFG), "line 1 (LI)", "cannot parse")
    err(lambda: parse("LI R1, foo(3)\n", CFG), "line 1 (LI)", "cannot read argument")
    err(lambda: parse("NOP\nLI R16, 1\n", CFG), "line 2", "rd = 16")
    err(lambda: parse(".frob\n", CFG), "line 1", "unknown directive")
    err(lambda: parse("DOTSIG ch(0, 4), ch(1, 4), ch(2, 1), dim=5\n", CFG), "(DOTSIG), line 1",
        "channel 0 (a) length 4 != dimension 5")
    err(lambda: assemble_text("BLT R1, R2, nowhere\nEND\n", CFG), "line 1", "undefined label")
    err(lambda: parse("YIELD nb=1\n", CFG), "line 1 (YIELD)", "bad arguments")


def test_puconfig_validation():
    with pytest.raises(ValueError, match="lanes"):
        PUConfig(lanes=3)
    with pytest.raises(ValueError, match="depth"):
        PUConfig(depth=1000)
    with pytest.raises(ValueError, match="region_configs"):
        PUConfig(nregions=2, region_configs=("regular",))
    c = PUConfig(lanes=8, nregions=6, depth=1024)
    assert c.config_word() == 8 | (6 << 8) | (10 << 16) | (0x7F << 24)
    assert c.align == 32 and PUConfig(lanes=16).align == 64
