"""The generated C side of the SystemRDL register maps, compiled with gcc.

* every core's ``ip/<core>/sw/<core>_regs.h`` compiles (-Wall -Wextra -Werror, C11 and C++
  not needed) and its struct puts every register at the offset of the Python layer;
* ``ip/pipearch_pu/sw/pipearch_pu_example.c`` (load a program, start, poll, request a context
  switch, read the error code) compiles to an object with its demo ``main`` (the MMIO base a
  volatile pointer), and, linked with a harness whose "unit" is a register block in memory,
  writes PROG/CTX and CTRL at the map's offsets and decodes STATUS/ERROR as the map says;
* a harness expecting a wrong offset fails (the check can fail).
"""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from rtl_gen import regmaps
from rtl_gen.common.core import IP_DIR
from scoreboards import regmap

GCC = shutil.which("gcc")
pytestmark = pytest.mark.skipif(GCC is None, reason="gcc not installed")
CFLAGS = ["-std=gnu11", "-Wall", "-Wextra", "-Werror", "-pedantic-errors"]
CORES = [c for c in regmaps.SPECS if regmaps.has_regmap(c)]
PU_SW = IP_DIR / "pipearch_pu" / "sw"


def _gcc(args, cwd):
    r = subprocess.run([GCC] + args, cwd=cwd, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, f"gcc {' '.join(args)} failed:\n{r.stderr}"
    return r


def _c_name(path: str) -> str:
    """Struct member expression of a register path ("THREAD[1].MEM_ADDR" stays as is)."""
    return path


@pytest.mark.parametrize("core", CORES)
def test_header_compiles_and_offsets_follow_the_map(core, tmp_path):
    rm = regmap.load(core)
    hdr = IP_DIR / core / "sw" / regmaps.header_name(core)
    checks = "\n".join(
        f"_Static_assert(offsetof({core}_t, {_c_name(r.name)}) == 0x{r.offset:X}, \"{r.name}\");"
        for r in rm)
    (tmp_path / "t.c").write_text(f'#include <stddef.h>\n#include "{hdr}"\n{checks}\n'
                                  "int main(void) { return 0; }\n")
    _gcc(CFLAGS + ["-fsyntax-only", "t.c"], tmp_path)


def test_header_offset_check_can_fail(tmp_path):
    hdr = IP_DIR / "pipearch_pu" / "sw" / "pipearch_pu_regs.h"
    (tmp_path / "t.c").write_text(f'#include <stddef.h>\n#include "{hdr}"\n'
                                  "_Static_assert(offsetof(pipearch_pu_t, ERROR) == 0x1C, \"ERROR\");\n")
    r = subprocess.run([GCC] + CFLAGS + ["-fsyntax-only", "t.c"], cwd=tmp_path, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode != 0 and "ERROR" in r.stderr


def test_pu_example_compiles_with_its_demo_main(tmp_path):
    src = PU_SW / "pipearch_pu_example.c"
    assert src.exists(), "make gen writes ip/pipearch_pu/sw/pipearch_pu_example.c"
    assert src.read_text() == (regmaps.RDL_DIR / "sw" / "pipearch_pu_example.c").read_text()
    _gcc(CFLAGS + ["-I", str(PU_SW), "-DPIPEARCH_PU_EXAMPLE_MAIN", "-c", str(src), "-o", "ex.o"],
         tmp_path)
    assert (tmp_path / "ex.o").stat().st_size > 0


HARNESS = r"""
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "pipearch_pu_regs.h"

int pu_load_program(volatile pipearch_pu_t *, volatile uint8_t *, uint64_t, const uint8_t *, size_t);
int pu_run(volatile pipearch_pu_t *, unsigned long, unsigned long);
unsigned pu_error(volatile pipearch_pu_t *, unsigned *);

static uint32_t regs[64];                 /* the "unit": a register block in memory */
static uint8_t mem[4096];
#define R(off) regs[(off) / 4]

static int fail(const char *what) { printf("FAIL %s\n", what); return 1; }

int main(void)
{
    volatile pipearch_pu_t *pu = (volatile pipearch_pu_t *)regs;
    uint8_t image[100];
    unsigned pc = 0;
    int i, r;

    for (i = 0; i < 100; i++) image[i] = (uint8_t)(i + 1);
    R(OFF_CONFIG) = CONFIG_LANES << CONFIG_LANES_LSB;
    memset(mem, 0xEE, sizeof mem);
    /* misaligned program address refused, nothing written */
    if (pu_load_program(pu, mem, 0x100000010ull, image, 100) != -1) return fail("misaligned accepted");
    if (R(OFF_PROG_LO) != 0) return fail("misaligned wrote PROG_LO");
    if (pu_load_program(pu, mem, 0x100000000ull + ALIGN, image, 100) != 0) return fail("load");
    if (R(OFF_PROG_LO) != ALIGN || R(OFF_PROG_HI) != 1) return fail("PROG_LO/HI");
    if (memcmp(mem, image, 100) != 0) return fail("image copy");
    if (R(OFF_CTX_HI) != 1 || R(OFF_CTX_LO) != ALIGN + CTX_OFF) return fail("CTX_LO/HI");
    for (i = 0; i < 128; i++) if (mem[CTX_OFF + i] != 0) return fail("fresh context");
    /* finished at the first poll: START only */
    R(OFF_STATUS) = ST_DONE | ST_FINISHED;
    if ((r = pu_run(pu, 10, 10)) != 0) return fail("finished");
    if (R(OFF_CTRL) != CTRL_START) return fail("CTRL START");
    /* suspended */
    R(OFF_STATUS) = ST_DONE | ST_SUSPENDED;
    if (pu_run(pu, 10, 10) != 1) return fail("suspended");
    /* never idle: a switch request, then the timeout */
    R(OFF_STATUS) = ST_BUSY;
    if (pu_run(pu, 10, 10) != 2) return fail("timeout");
    if (R(OFF_CTRL) != CTRL_SWITCH) return fail("CTRL SWITCH");
    /* error: code and PC */
    R(OFF_STATUS) = ST_ERROR;
    R(OFF_ERROR) = ERR_WORD;
    if ((r = pu_run(pu, 10, 10)) != -ERR_CODE) { printf("r=%d\n", r); return fail("error code"); }
    if (pu_error(pu, &pc) != ERR_CODE || pc != ERR_PC) return fail("pu_error");
    printf("OK\n");
    return 0;
}
"""


def _harness_defines(rm, lanes, **over):
    st = rm.STATUS
    d = {f"OFF_{n}": rm[n].offset for n in ("CTRL", "STATUS", "PROG_LO", "PROG_HI", "CTX_LO",
                                            "CTX_HI", "ERROR", "CONFIG")}
    align = max(32, 4 * lanes)
    d.update(CONFIG_LANES=lanes, CONFIG_LANES_LSB=rm.CONFIG.LANES.lsb, ALIGN=align,
             CTX_OFF=(100 + align - 1) // align * align,
             ST_DONE=st.DONE.mask, ST_FINISHED=st.FINISHED.mask, ST_SUSPENDED=st.SUSPENDED.mask,
             ST_BUSY=st.BUSY.mask, ST_ERROR=st.ERROR.mask,
             CTRL_START=rm.CTRL.START.mask, CTRL_SWITCH=rm.CTRL.SWITCH.mask,
             ERR_CODE=7, ERR_PC=5, ERR_WORD=rm.ERROR.pack(CODE=7, PC=5))
    d.update(over)
    return [f"-D{k}={v}" for k, v in d.items()]


def _build_and_run(tmp_path, defines):
    (tmp_path / "h.c").write_text(HARNESS)
    _gcc(CFLAGS + ["-I", str(PU_SW)] + defines + ["h.c", str(PU_SW / "pipearch_pu_example.c"),
                                                  "-o", "h"], tmp_path)
    return subprocess.run([str(tmp_path / "h")], capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("lanes", [4, 16])
def test_pu_example_drives_the_registers_of_the_map(tmp_path, lanes):
    rm = regmap.load("pipearch_pu")
    r = _build_and_run(tmp_path, _harness_defines(rm, lanes))
    assert r.returncode == 0 and r.stdout.strip().endswith("OK"), r.stdout + r.stderr


def test_pu_example_harness_fails_on_a_wrong_offset(tmp_path):
    """The harness is a real check: told that CTRL sits at 0x08, it fails."""
    rm = regmap.load("pipearch_pu")
    r = _build_and_run(tmp_path, _harness_defines(rm, 4, OFF_CTRL=0x08))
    assert r.returncode != 0 and "FAIL" in r.stdout, r.stdout
