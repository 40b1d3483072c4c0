"""The VHDL conversion must not negate (or subtract from) a narrower signed value and widen
the result afterwards.

MyHDL converts ``wide.next = -narrow`` to ``wide <= resize(-narrow, N)``: VHDL negates in
the operand's width, so ``-(-2**(W-1))`` wraps to ``-2**(W-1)`` before the resize, while
the Verilog (``wide <= -narrow``) is evaluated in the target width and is exact.  This
is the defect the ``scalar_engine`` VHDL had (its ``-alpha_lambda`` threshold).  Binary
subtractions are converted with the first operand resized first (exact), so the scan
flags unary minus and ``abs`` inside a resize and a subtraction whose left operand is
narrower than the target without being resized.  The fix in a generator: widen into a
signal of the target width first (``rtl_gen.common.blocks.sext``), then negate.
"""
from __future__ import annotations

import re

import pytest

from rtl_gen.common.core import IP_DIR

DECL = re.compile(r"^\s*(?:signal\s+)?(\w+)\s*:\s*(?:in\s+|out\s+|inout\s+)?(signed|unsigned)\s*\((\d+) downto 0\)",
                  re.I)
ASSIGN = re.compile(r"^\s*(\w+)\s*<=\s*(.*);")


def narrowing_findings(vhdl: str) -> list[str]:
    """Assignments of a negation/abs/subtraction of a narrower operand to a wider target."""
    width = {}
    lines = vhdl.splitlines()
    for ln in lines:
        m = DECL.match(ln)
        if m:
            width[m.group(1)] = int(m.group(3)) + 1
    out = []
    for i, ln in enumerate(lines, 1):
        m = ASSIGN.match(ln)
        if not m or m.group(1) not in width:
            continue
        tgt, expr = width[m.group(1)], m.group(2)
        ops = re.findall(r"\(-\s*(?:signed\()?(\w+)", expr)            # unary minus
        ops += re.findall(r"\babs\s*\(\s*(?:signed\()?(\w+)", expr)     # abs
        ops += re.findall(r"(?<![\w)])(\w+)\s*-\s*[\w(]", expr)         # left operand of a subtraction
        for o in ops:
            if o in width and width[o] < tgt and f"resize({o}" not in expr:
                out.append(f"line {i}: {m.group(1)}[{tgt}] <- {o}[{width[o]}]: {ln.strip()}")
    return out


OLD_SCALAR_ENGINE = """
signal nal_r: signed (32 downto 0);
    cfg_alpha_lambda_num: in unsigned(31 downto 0);
                nal_r <= resize((-signed(cfg_alpha_lambda_num)), 33);
"""


def test_scan_flags_the_old_scalar_engine_negation():
    """Negative test: the scan flags the negation the old scalar_engine VHDL had, and
    accepts the fixed form (widened first) and a resized subtraction."""
    assert len(narrowing_findings(OLD_SCALAR_ENGINE)) == 1
    fixed = """
signal nal_r: signed (32 downto 0);
signal al_e: signed (32 downto 0);
signal a0: signed (31 downto 0);
signal b0: signed (31 downto 0);
                nal_r <= (-al_e);
dab <= (resize(a0, 33) - b0);
nal_r <= (resize(a0, 33) - b0);
"""
    assert narrowing_findings(fixed) == []
    assert len(narrowing_findings(fixed + "nal_r <= (a0 - b0);\n")) == 1


@pytest.mark.parametrize("vhd", sorted(p for p in IP_DIR.glob("*/rtl/*.vhd") if "pck_myhdl" not in p.name),
                         ids=lambda p: p.parent.parent.name)
def test_committed_vhdl_has_no_wrapping_widen(vhd):
    found = narrowing_findings(vhd.read_text())
    assert not found, f"{vhd.name}: value negated/subtracted in its own width, then widened:\n" + "\n".join(found)
