"""The SystemRDL register maps (rtl_gen/regmaps) and the Python register layer
(scoreboards/regmap.py), without a simulator.

* every core with host registers has a map that compiles for every regression config, fits
  the core's AXI4-Lite address width (taken from the generated port list) and is 32-bit;
* the generated C header in ip/<core>/sw/ is what the map gives today (the full
  byte-identical check of ip/ is ``python -m rtl_gen check``);
* ``check_regmap`` passes on a register file model that follows the map and fails on each
  kind of drift (reset value, lost read/write bit, aliased offset, write-only register or
  unknown offset reading non-zero, a bit outside every field).
"""
from __future__ import annotations

import asyncio

import numpy as np
import pytest

from rtl_gen import regmaps
from rtl_gen.common.core import IP_DIR
from rtl_gen.registry import get
from scoreboards import regmap

CORES = [c for c in regmaps.SPECS if regmaps.has_regmap(c)]
EXPECTED = {"pipearch_rm", "pipearch_pu", "maple_smart_memory", "cosmic_memory_schedule_unit",
            "cosmic_accelerator", "pipearch_system"}


def test_every_host_register_core_has_a_map():
    assert EXPECTED <= set(CORES), sorted(EXPECTED - set(CORES))
    from rtl_gen.registry import cores
    with_axil = {n for n, cd in cores().items()
                 if any(p.name == "s_axil_awaddr" for p in cd.build(cd.resolve())[1])}
    assert with_axil <= set(CORES), f"cores with an AXI4-Lite slave but no SystemRDL map: {sorted(with_axil - set(CORES))}"


@pytest.mark.parametrize("core", CORES)
def test_rdl_defaults_are_the_catalog_netlist(core):
    """``regmap.load(core)`` (the RDL's own parameter defaults, used by the tests for offsets
    at import time) describes the catalog netlist exactly."""
    a, b = regmap.load(core), regmap.load(core, get(core).resolve())
    assert [(r.name, r.offset, r.fields) for r in a] == [(r.name, r.offset, r.fields) for r in b]


def test_msu_entry_word_matches_the_golden_encoding():
    """QPUSH fields of the map against golden.cosmic_msu.Entry.encode (the golden model's own
    constants), over random entries."""
    from golden.cosmic_msu import Entry
    rm = regmap.load("cosmic_memory_schedule_unit")
    rng = np.random.default_rng(5)
    for _ in range(200):
        e = Entry(int(rng.integers(0, 4096)), bool(rng.integers(0, 2)), bool(rng.integers(0, 2)),
                  int(rng.integers(0, 1 << 16)))
        assert rm.QPUSH.pack(SIZE=e.size, BASE_PE=e.base, WRITE=int(e.write),
                             BROADCAST=int(e.bcast)) == e.encode(), e
    acc = regmap.load("cosmic_accelerator")
    assert [(r.name[4:], r.offset, r.fields) for r in acc if r.name.startswith("MSU.")] == \
        [(r.name, r.offset, r.fields) for r in regmap.load("cosmic_memory_schedule_unit", dict(
            W=32, NPE=8, NTHREADS=2, QDEPTH=16, ADDR_W=32))]


@pytest.mark.parametrize("core", CORES)
def test_map_compiles_for_every_config_and_fits_the_port(core):
    cd = get(core)
    for cfg, given in cd.configs.items():
        p = cd.resolve(given)
        rm = regmap.load(core, p)
        ports = {pt.name: pt for pt in cd.build(p)[1]}
        aw = int(ports["s_axil_awaddr"].width)
        assert int(ports["s_axil_araddr"].width) == aw
        assert int(ports["s_axil_wdata"].width) == 32
        for r in rm:
            assert r.offset % 4 == 0 and r.offset + 4 <= 1 << aw, (cfg, r.name, hex(r.offset), aw)
            assert all(f.msb < 32 for f in r.fields.values()), (cfg, r.name)
        assert len(rm.by_offset) == len(rm.regs)


@pytest.mark.parametrize("core", CORES)
def test_committed_header_is_what_the_map_gives(core):
    cd = get(core)
    p = cd.resolve()
    f = IP_DIR / core / "sw" / regmaps.header_name(core)
    assert f.exists(), f"{f} missing: run make gen"
    assert f.read_text() == regmaps.c_header(core, p), f"{f} is stale: run make gen"
    readme = (IP_DIR / core / "README.md").read_text()
    rm = regmap.load(core, p)
    for r in list(rm)[:3]:
        assert f"`{r.name}`" in readme, (core, r.name)


# ---------------------------------------------------------------- check_regmap on a model
class Model:
    """A register file that follows a RegMap (what the RTL should do), with knobs to break it."""

    def __init__(self, rm, aw=8):
        self.rm, self.aw = rm, aw
        self.store = {}
        for r in rm:
            v, _ = r.reset_value()
            self.store[r.offset] = v
        self.alias = None          # (from offset, to offset): writes to `from` land in `to`
        self.stuck = None          # (offset, mask): these bits never store
        self.ghost = None          # (offset, value) read at an unknown offset
        self.wo_reads = 0          # value a write-only register reads
        self.decode_bits = None    # writes decode only these address bits (unknown ones alias)
        self.extra_bits = 0        # ORed into every read of a readable register

    async def rd(self, a):
        r = self.rm.by_offset.get(a)
        if r is None:
            return self.ghost[1] if self.ghost and self.ghost[0] == a else 0
        if not r.readable:
            return self.wo_reads
        return (self.store[a] & r.read_mask) | self.extra_bits

    async def wr(self, a, v):
        if self.alias and a == self.alias[0]:
            a = self.alias[1]
        if self.decode_bits is not None:
            a &= (1 << self.decode_bits) - 1
        r = self.rm.by_offset.get(a)
        if r is None:
            return
        m = sum(f.mask for f in r.fields.values() if f.sw == "rw")
        if self.stuck and self.stuck[0] == a:
            m &= ~self.stuck[1]
        self.store[a] = (self.store[a] & ~m) | (v & m)


def _run(model, seed=1, **kw):
    return asyncio.run(regmap.check_regmap(model.rm, model.rd, model.wr,
                                           np.random.default_rng(seed), model.aw, **kw))


@pytest.fixture
def rm():
    return regmap.load("pipearch_rm")


def test_check_regmap_passes_on_a_faithful_model(rm):
    res = _run(Model(rm))
    assert res == {"registers": 10, "written": 4, "unknown_read": 64 - 10, "unknown_written": 0}


def test_check_regmap_unknown_writes(rm):
    """Writes to unknown offsets: none on a faithful model; a write decoder that ignores the
    top address bits (unknown offsets alias registers) is caught."""
    res = _run(Model(rm), unknown_writes=54)
    assert res["unknown_written"] == 54
    m = Model(rm)
    m.decode_bits = 5                      # 0x28..0xFC alias 0x08..0x1C (PROG/CTX)
    with pytest.raises(AssertionError, match="after writes to unknown offsets"):
        _run(m, unknown_writes=54)


def test_check_regmap_catches_a_wrong_reset(rm):
    m = Model(rm)
    m.store[rm.CONFIG.offset] ^= rm.CONFIG.LANES.put(1)
    with pytest.raises(AssertionError, match="CONFIG.*after reset"):
        _run(m)


def test_check_regmap_catches_a_lost_bit(rm):
    m = Model(rm)
    m.stuck = (rm.CTX_HI.offset, 1 << 17)
    with pytest.raises(AssertionError, match="CTX_HI"):
        _run(m, seed=3)


def test_check_regmap_catches_an_alias(rm):
    m = Model(rm)
    m.alias = (rm.PROG_HI.offset, rm.CTX_LO.offset)
    with pytest.raises(AssertionError, match="PROG_HI|CTX_LO"):
        _run(m)


def test_check_regmap_catches_an_unknown_offset_that_reads(rm):
    m = Model(rm)
    m.ghost = (0x3C, 5)
    with pytest.raises(AssertionError, match="unknown offset 0x3c"):
        _run(m)


def test_check_regmap_catches_a_readable_write_only_register(rm):
    m = Model(rm)
    m.wo_reads = 1
    with pytest.raises(AssertionError, match="write-only register CTRL"):
        _run(m)


def test_check_regmap_catches_undocumented_bits(rm):
    m = Model(rm)
    m.extra_bits = 1 << 31
    with pytest.raises(AssertionError, match="in no documented field"):
        _run(m)


def test_layer_fields_follow_the_rdl(rm):
    """Field packing/unpacking, and errors naming what is missing."""
    assert rm.CTRL.pack(START=1, CLEAR=1) == 0b101
    assert rm.STATUS.unpack(0x00AB0905)["PC"] == 0xAB and rm.STATUS.unpack(0x00AB0905)["STATE"] == 9
    with pytest.raises(KeyError, match="no field 'GO'"):
        rm.CTRL.pack(GO=1)
    with pytest.raises(ValueError, match="does not fit"):
        rm.STATUS.STATE.put(16)
    with pytest.raises(KeyError, match="no register 'FOO'"):
        rm["FOO"]
