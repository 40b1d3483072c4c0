"""Python register layer of the cocotb tests, read from the compiled SystemRDL map.

``load(core, params)`` compiles ``rtl_gen/regmaps/<map>.rdl`` for the DUT's generator
parameters (the same compile that writes the datasheet table and the C header) and returns a
``RegMap``: register offsets, fields (bit position, width, software access, reset value).  The
tests take every offset and field from it instead of their own constants, so the datasheet and
the RTL cannot drift apart without a test failing.

``check_regmap`` is the generic conformance check run by each core's ``regmap_conformance``
cocotb test: reset values, read-back of every read/write field, write-only registers and
unknown offsets read 0.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Field:
    name: str
    lsb: int
    width: int
    sw: str                 # "r", "w", "rw"
    reset: int | None
    desc: str = ""

    @property
    def msb(self) -> int:
        return self.lsb + self.width - 1

    @property
    def mask(self) -> int:
        return ((1 << self.width) - 1) << self.lsb

    @property
    def readable(self) -> bool:
        return "r" in self.sw

    @property
    def writable(self) -> bool:
        return "w" in self.sw

    def get(self, value: int) -> int:
        """This field's value in a register word."""
        return (int(value) >> self.lsb) & ((1 << self.width) - 1)

    def put(self, value: int) -> int:
        """``value`` placed in this field (raises when it does not fit)."""
        if not 0 <= int(value) < (1 << self.width):
            raise ValueError(f"field {self.name} ({self.width} bits): value {value} does not fit")
        return int(value) << self.lsb


@dataclass
class Register:
    name: str               # path below the map's top, e.g. "CTRL", "THREAD[1].MEM_ADDR", "MSU.QPUSH"
    offset: int
    fields: dict[str, Field] = field(default_factory=dict)
    desc: str = ""

    def __getattr__(self, item):
        f = self.__dict__.get("fields", {})
        if item in f:
            return f[item]
        raise AttributeError(f"register {self.__dict__.get('name')} has no field {item!r}")

    @property
    def readable(self) -> bool:
        return any(f.readable for f in self.fields.values())

    @property
    def writable(self) -> bool:
        return any(f.writable for f in self.fields.values())

    @property
    def read_mask(self) -> int:
        m = 0
        for f in self.fields.values():
            if f.readable:
                m |= f.mask
        return m

    def reset_value(self) -> tuple[int, int]:
        """(value, mask) of the readable fields that have a documented reset value."""
        v = m = 0
        for f in self.fields.values():
            if f.readable and f.reset is not None:
                v |= f.reset << f.lsb
                m |= f.mask
        return v, m

    def pack(self, **values) -> int:
        """A register word from field values (``CTRL.pack(START=1)``)."""
        w = 0
        for k, v in values.items():
            if k not in self.fields:
                raise KeyError(f"register {self.name} has no field {k!r}; fields: {', '.join(self.fields)}")
            w |= self.fields[k].put(v)
        return w

    def unpack(self, value: int) -> dict[str, int]:
        return {k: f.get(value) for k, f in self.fields.items() if f.readable}


class RegMap:
    """Registers of one netlist by name; ``rm["CTRL"].offset``, ``rm.CTRL.START.mask``."""

    def __init__(self, core: str, params: dict, regs: list[Register], desc: str = ""):
        self.core, self.params, self.desc = core, dict(params or {}), desc
        self.regs: dict[str, Register] = {r.name: r for r in regs}
        self.by_offset: dict[int, Register] = {}
        for r in regs:
            if r.offset in self.by_offset:
                raise ValueError(f"{core}: registers {self.by_offset[r.offset].name} and {r.name} "
                                 f"share offset {r.offset:#x}")
            self.by_offset[r.offset] = r

    def __getitem__(self, name: str) -> Register:
        if name not in self.regs:
            raise KeyError(f"{self.core}: no register {name!r}; registers: {', '.join(self.regs)}")
        return self.regs[name]

    def __getattr__(self, name: str) -> Register:
        regs = self.__dict__.get("regs", {})
        if name in regs:
            return regs[name]
        raise AttributeError(f"{self.__dict__.get('core')}: no register {name!r}")

    def __iter__(self):
        return iter(self.regs.values())

    def offset(self, name: str) -> int:
        return self[name].offset

    def field(self, reg: str, name: str) -> Field:
        r = self[reg]
        if name not in r.fields:
            raise KeyError(f"{self.core}: register {reg} has no field {name!r}; fields: {', '.join(r.fields)}")
        return r.fields[name]

    def mask(self, reg: str, *names: str) -> int:
        m = 0
        for n in names:
            m |= self.field(reg, n).mask
        return m


def from_node(core: str, params: dict, top) -> RegMap:
    """A ``RegMap`` from an elaborated systemrdl ``AddrmapNode``."""
    from systemrdl.node import RegNode

    regs = []
    nodes = sorted((n for n in top.descendants(unroll=True) if isinstance(n, RegNode)),
                   key=lambda n: n.absolute_address)
    base = top.absolute_address
    for n in nodes:
        path = n.get_path(hier_separator=".")[len(top.get_path(hier_separator=".")) + 1:]
        fields = {}
        for f in n.fields():
            fields[f.inst_name] = Field(f.inst_name, f.lsb, f.width, f.get_property("sw").name,
                                        f.get_property("reset"), " ".join((f.get_property("desc") or "").split()))
        regs.append(Register(path, n.absolute_address - base, fields,
                             " ".join((n.get_property("desc") or "").split())))
    return RegMap(core, params, regs, " ".join((top.get_property("desc") or "").split()))


_CACHE: dict = {}


def load(core: str, params: dict | None = None) -> RegMap:
    """The register layer of ``core`` for these generator parameters (``None``: the map's
    own defaults, those of the catalog netlist; enough for offsets and command bits);
    compiled once per (core, parameters)."""
    from rtl_gen import regmaps

    key = (core, None if params is None else tuple(sorted(regmaps.rdl_params(core, params).items())))
    if key not in _CACHE:
        _CACHE[key] = from_node(core, params, regmaps.compile_map(core, params))
    return _CACHE[key]


def _rand_value(rng, f: Field) -> int:
    return int(rng.integers(0, 1 << f.width)) if f.width < 63 else int(rng.integers(0, 1 << 62))


async def check_regmap(rm: RegMap, rd, wr, rng, addr_bits: int, *, legal=None, skip=(),
                       unknown_sample: int | None = None, check_reset: bool = True,
                       unknown_writes: int = 0):
    """Conformance of a DUT's AXI4-Lite registers with the compiled map ``rm``.

    ``rd(offset) -> int`` and ``wr(offset, value)`` are coroutines doing one AXI4-Lite access.
    Call right after reset.  Checks, raising ``AssertionError`` on the first mismatch:

    1. every readable register reads its documented reset value in the fields that have one
       (``check_reset``), and 0 in the bits no readable field covers;
    2. every register with read/write fields (not in ``skip``) reads back a written value:
       random field values, or ``legal[name](rng)`` (a full register word) where the map's
       legal range is narrower than the field; the written values are read back after all
       writes (an offset aliasing another register shows up);
    3. every write-only register reads 0;
    4. every word offset below ``2**addr_bits`` that is not in the map reads 0 (all of them,
       or ``unknown_sample`` of them drawn with ``rng``);
    5. (``unknown_writes`` > 0) random values written to that many unknown offsets change no
       read/write register and still read 0 there (what a write does to STATUS is per core:
       the caller checks its documented error code).
    """
    legal = dict(legal or {})
    skip = set(skip)
    unknown_ok = "read 0" in rm.desc or "return 0" in rm.desc
    assert unknown_ok, f"{rm.core}: the map's description does not say what unknown offsets read"
    # 1 + 3: reset values, undefined bits, write-only registers
    for r in rm:
        if r.name in skip:
            continue
        v = await rd(r.offset)
        if not r.readable:
            assert v == 0, f"{rm.core}: write-only register {r.name} at {r.offset:#x} reads {v:#x}, documented 0"
            continue
        assert v & ~r.read_mask & 0xFFFFFFFF == 0, (
            f"{rm.core}: {r.name} at {r.offset:#x} reads {v:#x}: bits {v & ~r.read_mask:#x} are in no "
            f"documented field")
        if check_reset:
            rv, m = r.reset_value()
            assert v & m == rv, (f"{rm.core}: {r.name} at {r.offset:#x} reads {v:#x} after reset; documented "
                                 f"reset {rv:#x} under mask {m:#x} ({r.unpack(v)})")
    # 2: read/write fields
    written = {}
    for r in rm:
        if r.name in skip or r.name in legal or not any(f.sw == "rw" for f in r.fields.values()):
            if r.name in legal and r.name not in skip:
                written[r.name] = int(legal[r.name](rng))
            continue
        written[r.name] = sum(f.put(_rand_value(rng, f)) for f in r.fields.values() if f.sw == "rw")
    for name, w in written.items():
        await wr(rm[name].offset, w)
    for name, w in written.items():
        r = rm[name]
        rw_mask = sum(f.mask for f in r.fields.values() if f.sw == "rw")
        v = await rd(r.offset)
        assert v & rw_mask == w & rw_mask, (
            f"{rm.core}: {name} at {r.offset:#x}: wrote {w:#x}, read back {v:#x} (read/write fields "
            f"{', '.join(f.name for f in r.fields.values() if f.sw == 'rw')})")
    # 4: unknown offsets
    known = set(rm.by_offset)
    unknown = all_unknown = [a for a in range(0, 1 << addr_bits, 4) if a not in known]
    if unknown_sample is not None and unknown_sample < len(unknown):
        unknown = sorted(int(a) for a in rng.choice(unknown, unknown_sample, replace=False))
    for a in unknown:
        v = await rd(a)
        assert v == 0, f"{rm.core}: unknown offset {a:#x} reads {v:#x}, documented 0"
    # 5: writes to unknown offsets
    hit = sorted(int(a) for a in rng.choice(all_unknown, min(unknown_writes, len(all_unknown)),
                                            replace=False)) if unknown_writes else []
    for a in hit:
        await wr(a, int(rng.integers(1, 1 << 32)))
    for a in hit:
        v = await rd(a)
        assert v == 0, f"{rm.core}: unknown offset {a:#x} reads {v:#x} after a write, documented 0"
    for name, w in written.items():
        r = rm[name]
        rw_mask = sum(f.mask for f in r.fields.values() if f.sw == "rw")
        v = await rd(r.offset)
        assert v & rw_mask == w & rw_mask, (
            f"{rm.core}: {name} at {r.offset:#x} changed from {w & rw_mask:#x} to {v & rw_mask:#x} "
            f"after writes to unknown offsets {[hex(a) for a in hit]}")
    return {"registers": len(rm.regs), "written": len(written), "unknown_read": len(unknown),
            "unknown_written": len(hit)}
