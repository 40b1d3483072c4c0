"""PipeArch assembler command line and text round trips: assemble -> disassemble ->
assemble is byte-identical for every program of golden.pipearch_programs and for random
instruction sequences (hypothesis); the example program file is the library's SGD
program; bad input gives an error naming the file and line and exit status 1."""
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import golden.pipearch_asm as A
from golden import pipearch_isa as I
from golden.pipearch_asm import (AsmError, Program, PUConfig, acc, assemble_text, build_image, ch,
                                 check, decode, disassemble, disassemble_instr, hex_to_image,
                                 image_to_hex)
from golden.pipearch_programs import lrmf_job, lrmf_slots, scd_job, sgd_job

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "golden" / "examples" / "sgd_ridge.pasm"
EXAMPLE_CFG = PUConfig(lanes=4, nregions=6, depth=512, amem_depth=128)


def round_trip(image: bytes, cfg: PUConfig) -> str:
    """Assert disassemble -> assemble gives ``image`` back and is a fixed point; return
    the text."""
    text = disassemble(image)
    again = assemble_text(text, cfg, "disassembly").image
    assert again == image, "re-assembled image differs from the original"
    assert disassemble(again) == text
    return text


# ---------------------------------------------------------------------------------
# every program of the library
# ---------------------------------------------------------------------------------
def _cfg(lanes, nregions=6):
    return PUConfig(lanes=lanes, nregions=nregions, depth=512, amem_depth=128)


STREAM_CFG = PUConfig(lanes=4, nregions=4, depth=512, amem_depth=128,
                      region_configs=("replicated", "type_replicated", "type_replicated", "regular"))


def _library_jobs():
    jobs = []
    for lanes in (1, 4, 16):
        for loss in ("ridge", "logistic"):
            for batch, part in ((1, 24), (3, 6)):
                jobs.append((f"sgd-{loss}-b{batch}-L{lanes}", lambda lanes=lanes, loss=loss, batch=batch, part=part:
                             sgd_job(m=24, n=7, loss=loss, alpha=0.25, lam2=0.02, epochs=3, batch=batch,
                                     partition=part, cfg=_cfg(lanes))))
        jobs.append((f"sgd-noctx-noreshuffle-L{lanes}", lambda lanes=lanes:
                     sgd_job(m=24, n=7, loss="ridge", alpha=0.25, lam2=0.0, epochs=2, batch=2, partition=6,
                             reshuffle=False, context_groups=False, cfg=_cfg(lanes))))
        if lanes >= 2:
            for loss in ("lasso", "logistic"):
                jobs.append((f"scd-{loss}-L{lanes}", lambda lanes=lanes, loss=loss:
                             scd_job(m=24, n=6, loss=loss, alpha=0.3, lam1=0.02, epochs=3, partition=8,
                                     cfg=_cfg(lanes))))
        jobs.append((f"lrmf-L{lanes}", lambda lanes=lanes: lrmf_job(
            m=9, u=11, d=3, alpha=0.1, lam=0.01, epochs=2, tile=4,
            slots=lrmf_slots([0, 1, 2, 5, 8, 8], [0, 3, 10, 4, 1, 7], m=9, u=11, tile=4), cfg=_cfg(lanes))))
    for loss in ("ridge", "logistic"):
        for n in (7, 40):
            jobs.append((f"sgd-stream-{loss}-n{n}", lambda loss=loss, n=n:
                         sgd_job(m=24, n=n, loss=loss, alpha=0.25, lam2=0.02, epochs=2, partition=6,
                                 cfg=STREAM_CFG)))
    return jobs


JOBS = _library_jobs()


@pytest.mark.parametrize("make", [j for _, j in JOBS], ids=[n for n, _ in JOBS])
def test_library_program_round_trips(make):
    job = make()
    text = round_trip(job.asm.image, job.cfg)
    assert "RAW" not in text             # every library instruction has a text form


def test_library_covers_stream_and_blocking_sgd():
    """The list above really contains both SGD program shapes (not only one)."""
    kinds = {n.split("-")[0] + ("-stream" if make().info.get("stream") else "")
             for n, make in JOBS if n.startswith("sgd")}
    assert kinds == {"sgd", "sgd-stream"}


def test_round_trip_check_fails_on_a_lossy_disassembler(monkeypatch):
    """Negative: a disassembler that forgets a channel's offset is caught."""
    image = assemble_text(EXAMPLE.read_text(), EXAMPLE_CFG).image
    real = A._fmt_ch

    def lossy(region, word, add_ra, add_rb):
        return real(region, word & ~0x3FFF, add_ra, add_rb)
    monkeypatch.setattr(A, "_fmt_ch", lossy)
    with pytest.raises(AssertionError, match="differs"):
        round_trip(image, EXAMPLE_CFG)


# ---------------------------------------------------------------------------------
# the example file and the command line
# ---------------------------------------------------------------------------------
def test_example_file_is_the_library_sgd_program():
    job = sgd_job(m=8, n=7, loss="ridge", alpha=0.25, lam2=0.02, epochs=2, partition=4,
                  cfg=EXAMPLE_CFG, stream=False)
    a = assemble_text(EXAMPLE.read_text(), EXAMPLE_CFG, str(EXAMPLE))
    assert a.image == job.asm.image
    assert job.areas["x"][0] == 0x20a and job.areas["a"][0] == 524 and job.areas["b"][0] == 556


def cli(*args, stdin=None):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "golden.pipearch_asm", *map(str, args)], cwd=ROOT,
                          env=env, input=stdin, capture_output=True, text=True, timeout=120)


EX_OPTS = ("--lanes", 4, "--nregions", 6, "--depth", 512, "--amem-depth", 128)


@pytest.mark.parametrize("fmt", ["bin", "hex"])
def test_cli_assemble_disassemble_assemble(tmp_path, fmt):
    img1, txt, img2, lst = (tmp_path / n for n in ("a.img", "a.pasm", "b.img", "a.lst"))
    r = cli("asm", EXAMPLE, "-o", img1, "--format", fmt, "--listing", lst, *EX_OPTS)
    assert r.returncode == 0, r.stderr
    assert "32 instructions" in r.stderr
    expect = assemble_text(EXAMPLE.read_text(), EXAMPLE_CFG).image
    raw = img1.read_bytes()
    assert (raw if fmt == "bin" else hex_to_image(raw.decode())) == expect
    if fmt == "hex":
        assert raw.decode().splitlines()[0] == "00000020"     # header word 0: 32 instructions
    r = cli("disasm", img1, "-o", txt, "--format", fmt)
    assert r.returncode == 0, r.stderr
    assert txt.read_text() == disassemble(expect)
    r = cli("asm", txt, "-o", img2, "--format", fmt, *EX_OPTS)
    assert r.returncode == 0, r.stderr
    assert img2.read_bytes() == raw
    listing = lst.read_text()
    assert "line 32" in listing and "StoreContext group" in listing
    r = cli("disasm", img1, "--format", fmt)                  # to standard output
    assert r.stdout == txt.read_text()


def test_cli_errors_name_file_and_line(tmp_path):
    bad = tmp_path / "bad.pasm"
    bad.write_text("    LI R1, 0\n\n    DOTSIG ch(0, 4), ch(1, 4), ch(2, 1), dim=5\n    END\n")
    r = cli("asm", bad, "-o", tmp_path / "x.bin")
    assert r.returncode == 1
    assert f"{bad}: instruction 1 (DOTSIG), line 3" in r.stderr and "length 4 != dimension 5" in r.stderr
    assert not (tmp_path / "x.bin").exists()
    r = cli("asm", "-", "-o", tmp_path / "x.bin", stdin="NOP\nBLT R1, R2, nowhere\n")
    assert r.returncode == 1 and "<stdin>: instruction 1 (BLT), line 2: undefined label 'nowhere'" in r.stderr
    r = cli("asm", "-", "-o", tmp_path / "x.bin", stdin="NOP\nx:\n")
    assert r.returncode == 1 and "label 'x' (line 2) is at PC 1, past the last instruction" in r.stderr
    # an instruction the configuration does not allow: region 6 with --nregions 6
    r = cli("asm", "-", "-o", tmp_path / "x.bin", "--nregions", 6, stdin="STORE ch(6, 1), 0\nEND\n")
    assert r.returncode == 1 and "line 1" in r.stderr and "region = 6 is outside 0..5" in r.stderr
    r = cli("asm", "-", "-o", tmp_path / "x.bin", "--subroutines", "LOAD,STORE",
            stdin="DOTSIG ch(0, 1), ch(1, 1), ch(2, 1), dim=1\n")
    assert r.returncode == 1 and "DOTSIG is not present" in r.stderr
    r = cli("asm", EXAMPLE, "-o", tmp_path / "x.bin", "--lanes", 3)
    assert r.returncode == 1 and "lanes" in r.stderr
    r = cli("asm", tmp_path / "missing.pasm", "-o", tmp_path / "x.bin")
    assert r.returncode == 1 and "missing.pasm: No such file" in r.stderr
    (tmp_path / "short.bin").write_bytes(b"\0" * 40)
    r = cli("disasm", tmp_path / "short.bin")
    assert r.returncode == 1 and "image length 40" in r.stderr
    (tmp_path / "bad.hex").write_text("00000001\nzz\n")
    r = cli("disasm", tmp_path / "bad.hex", "--format", "hex")
    assert r.returncode == 1 and "bad.hex: line 2: 'zz'" in r.stderr


def test_hex_image_format():
    img = assemble_text("LI R1, -1\nEND\n").image
    assert image_to_hex(img).splitlines()[:3] == ["00000002", "000000ff", "000000ff"]
    assert image_to_hex(img).splitlines()[9] == "ffffffff"     # LI's immediate word
    assert hex_to_image(image_to_hex(img)) == img


# ---------------------------------------------------------------------------------
# random programs (hypothesis)
# ---------------------------------------------------------------------------------
POW2 = [1 << k for k in range(12)]


@st.composite
def configs(draw):
    depth = draw(st.sampled_from(POW2[2:]))
    return PUConfig(lanes=draw(st.sampled_from([1, 2, 4, 8, 16, 32])),
                    nregions=draw(st.integers(1, 16)), depth=depth,
                    amem_depth=draw(st.sampled_from([64, 128, 256])),
                    max_iter=draw(st.integers(1, 300)), max_dim=draw(st.integers(1, depth)))


def _chan(draw, cfg, length, region=True):
    kw = dict(offset=draw(st.one_of(st.just(0), st.integers(0, 0x3FFF))),
              fifo=draw(st.booleans()), keep=draw(st.booleans()), amem=draw(st.booleans()),
              ra=draw(st.booleans()), rb=draw(st.booleans()))
    if not region:
        return acc(length, **kw)
    return ch(draw(st.integers(0, cfg.nregions - 1)), length, **kw)


@st.composite
def instructions(draw, cfg, n, labels, has_load_ctx):
    """One legal instruction as a function of a Program."""
    reg = st.integers(0, 15)
    s32 = st.integers(-(1 << 31), (1 << 31) - 1)
    word = st.integers(0, 0xFFFFFFFF)
    it = draw(st.integers(1, cfg.max_iter))
    dim = draw(st.integers(1, min(cfg.max_dim, cfg.depth)))
    vec = lambda: _chan(draw, cfg, dim)                                        # noqa: E731
    sca = lambda: _chan(draw, cfg, 1)                                          # noqa: E731
    anyl = lambda reg_=True: _chan(draw, cfg, draw(st.integers(1, cfg.depth)), reg_)  # noqa: E731
    common = dict(iterations=it, ra=draw(reg), rb=draw(reg), nb=draw(st.booleans()))
    target = draw(st.one_of(st.just(0xFF), st.integers(0, n - 1)))
    target = labels.get(target, target)
    kinds = ["nop", "li", "addi", "add", "sub", "branch", "jmp", "block", "yield", "load", "load_amem",
             "store", "dotsig", "sigdelta", "scalar", "multsub", "l2reg", "raw"]
    if has_load_ctx:
        kinds.append("resume")
    k = draw(st.sampled_from(kinds))
    if k == "nop":
        return lambda p: p.nop()
    if k == "li":
        a = (draw(reg), draw(s32))
        return lambda p: p.li(*a)
    if k == "addi":
        a = (draw(reg), draw(reg), draw(st.one_of(s32, st.integers(0, 0xFFFFFFFF))))
        return lambda p: p.addi(*a)
    if k in ("add", "sub"):
        a = (draw(reg), draw(reg), draw(reg))
        return lambda p: getattr(p, k)(*a)
    if k == "branch":
        m = draw(st.sampled_from(["blt", "bge", "beq", "bne"]))
        a = (draw(reg), draw(reg), target)
        return lambda p: getattr(p, m)(*a)
    if k == "jmp":
        return lambda p: p.jmp(target)
    if k == "block":
        subs = draw(st.lists(st.sampled_from([s.lower() for s in I.SUB_OPS.values()]), max_size=7))
        return lambda p: p.block(*subs)
    if k == "yield":
        return lambda p: p.yield_()
    if k == "resume":
        return lambda p: p.resume()
    if k == "raw":   # an unknown opcode: never expressible, always RAW in the text
        ws = [draw(st.integers(0x3F << 26, 0xFFFFFFFF))] + [draw(word) for _ in range(7)]
        return lambda p: p.raw(*ws)
    if k == "load":
        regions = draw(st.lists(st.integers(0, cfg.nregions - 1), min_size=1, max_size=4))
        c, addr, arb = anyl(False), draw(word), draw(st.booleans())
        return lambda p: p.load(c, addr, regions=regions, addr_rb=arb, **common)
    if k == "load_amem":
        lines = draw(st.integers(1, max(1, min(cfg.max_iter, cfg.amem_depth // cfg.lanes))))
        entry = draw(st.integers(0, cfg.amem_depth - lines * cfg.lanes))
        a = (draw(st.integers(0, cfg.nregions - 1)), draw(st.integers(0, len(I.GLOBAL_CHANNELS) - 1)),
             entry, draw(word))
        kw = dict(lines=lines, rb=common["rb"], addr_rb=draw(st.booleans()), nb=common["nb"])
        if lines * cfg.lanes > cfg.amem_depth:
            return lambda p: p.nop()
        return lambda p: p.load_amem(*a, **kw)
    if k == "store":
        c, addr, arb = anyl(), draw(word), draw(st.booleans())
        return lambda p: p.store(c, addr, addr_rb=arb, **common)
    if k == "dotsig":
        cs, sg = (vec(), vec(), sca()), draw(st.booleans())
        return lambda p: p.dotsig(*cs, dim=dim, sigmoid=sg, **common)
    if k == "sigdelta":
        cs, sg = (vec(), vec(), vec()), draw(st.booleans())
        return lambda p: p.sigdelta(*cs, dim=dim, sigmoid=sg, **common)
    if k == "scalar":
        cs = (sca(), sca(), sca())
        kw = dict(alpha=draw(s32), al=draw(s32), mode=draw(st.sampled_from(["sgd", "scd"])))
        return lambda p: p.scalar(*cs, **kw, **common)
    if k == "multsub":
        cs, l1 = (vec(), vec(), sca(), vec()), cfg.lanes >= 2 and draw(st.booleans())
        return lambda p: p.multsub(*cs, dim=dim, s_lane1=l1, **common)
    cs = (vec(), vec(), vec())
    c = draw(s32)
    return lambda p: p.l2reg(*cs, dim=dim, c=c, **common)


@st.composite
def programs(draw):
    cfg = draw(configs())
    n = draw(st.integers(1, 40))
    marks = draw(st.lists(st.integers(0, n - 1), max_size=2, unique=True))
    sp = marks[0] if marks else None
    lp = marks[1] if len(marks) > 1 else None
    label_pcs = draw(st.lists(st.integers(0, n - 1), max_size=6, unique=True))
    labels = {pc: f"lab{pc}" for pc in label_pcs}
    body = [draw(instructions(cfg, n, labels, lp is not None)) for _ in range(n)]
    p = Program(cfg, "random")
    for pc, emit in enumerate(body):
        if pc == sp:
            p.store_context()
        if pc == lp:
            p.load_context()
        if pc in labels:
            p.label(labels[pc])
        emit(p)
    return cfg, p.assemble()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                    HealthCheck.data_too_large])
@given(programs())
def test_random_programs_round_trip(prog):
    cfg, a = prog
    text = round_trip(a.image, cfg)
    assert text.count("RAW") == sum(1 for w in a.words if w[0] >> 26 == 0x3F)


@st.composite
def instruction_words(draw):
    """Eight words shaped like instructions: known opcodes with random (mostly small)
    fields, some reserved bits set."""
    small = st.one_of(st.just(0), st.integers(0, 3), st.integers(0, 15))
    op = draw(st.sampled_from(sorted(I.CONTROL_OPS) + sorted(I.SUB_OPS) + [0x0C, 0x17, 0x3F]))
    w0 = (op << 26) | (draw(st.integers(0, 1)) * draw(st.booleans()) << 25) \
        | (draw(small) << 21) | (draw(small) << 17) | (draw(small) << 13) \
        | draw(st.one_of(st.just(0), st.integers(1, 4), st.integers(0, 0x1FFF)))
    flags = draw(st.one_of(st.just(0), st.integers(0, 3), st.integers(0, 255)))
    w1 = draw(st.one_of(st.just(0), st.integers(0, 300), st.integers(0, 0xFFFF),
                        st.integers(0, 0xFFFFFF).map(lambda v: v | flags << 24)))
    acc_w = st.one_of(st.just(0), st.builds(
        lambda bram, length, keep, am, off: (bram << 31) | ((1 - bram) << 30) | (length << 16)
        | (keep << 15) | (am << 14) | off,
        st.integers(0, 1), st.integers(0, 20), st.integers(0, 1), st.integers(0, 1),
        st.integers(0, 0x3FFF)), st.integers(0, 0xFFFFFFFF))
    ws = [w0, w1] + [draw(acc_w) for _ in range(4)] + \
        [draw(st.one_of(st.just(0), st.integers(1, 20), st.integers(0, 0xFFFFFFFF))) for _ in range(2)]
    return tuple(w & 0xFFFFFFFF for w in ws)


ROOMY = PUConfig(lanes=1, nregions=16, depth=1 << 14, amem_depth=1 << 16, max_iter=0x1FFF,
                 max_dim=(1 << 14) - 1)


@settings(max_examples=400, deadline=None)
@given(instruction_words())
def test_any_instruction_text_reassembles_iff_the_decoder_accepts(words):
    """The disassembly of any instruction word assembles back to the same words when
    the PU's decode check accepts it (or it is RAW), and is rejected otherwise."""
    nop = (0,) * 8
    image = build_image([words] + [nop] * (I.PROG_MAX - 1))
    text = disassemble(image)
    line = disassemble_instr(words)
    accepted = check(decode(words), ROOMY, I.PROG_MAX) is None
    if words[0] >> 26 == I.RESUME:      # RAW or not: there is no LoadContext group
        with pytest.raises(AsmError, match="line 2" if not accepted and not line.startswith("RAW")
                           else "RESUME without"):
            assemble_text(text, ROOMY)
    elif line.startswith("RAW") or accepted:
        assert assemble_text(text, ROOMY).image == image
    else:
        with pytest.raises(AsmError, match="line 2"):
            assemble_text(text, ROOMY)


GARBAGE = st.text(alphabet=st.sampled_from(list("LIADBTSGRch0123456789(),=:_.# x-[]\"'")), max_size=30)
ARGS = st.lists(st.sampled_from(["R1", "R16", "-3", "0x10", "'a'", "[1, 2]", "[]", "ch(0, 4)", "ch(9, 1)",
                                 "acc(2)", "ch(0, 0)", "ch(0, 4, fifo=1, offset=-1)", "dim=4", "dim='x'",
                                 "regions=[0]", "regions='x'", "iterations=0", "ra=R2", "nb=1", "lab",
                                 "alpha=1", "c=2", "mode='x'", "lines=2", "x=1", "**k", "*a", "1.5"]),
                max_size=6).map(", ".join)
LINES = st.one_of(GARBAGE, st.tuples(st.sampled_from(sorted(A._TEXT_OPS)), ARGS).map(" ".join))


@settings(max_examples=500, deadline=None)
@given(st.lists(LINES, min_size=1, max_size=6))
def test_garbage_text_gives_asm_errors_only(lines):
    """Whatever the text, the assembler either succeeds or raises AsmError naming a
    line (no other exception escapes to the command line)."""
    try:
        assemble_text("\n".join(lines), PUConfig(lanes=4, nregions=4, depth=64))
    except AsmError as e:
        msg = str(e)
        assert "line " in msg or "empty program" in msg or "group is marked" in msg, msg
