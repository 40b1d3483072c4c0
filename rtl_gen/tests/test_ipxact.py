"""IP-XACT metadata (ip/<core>/component.xml) against each core's committed Verilog.

For every catalog core, the committed ``component.xml`` is read with lxml (not with the
generator's library) and the committed ``rtl/<core>.v`` module header is parsed:

* the model's ports are exactly the Verilog ports, with the same direction and width;
* every physical port of a bus interface exists; every AXI4 / AXI4-Lite / AXI4-Stream
  signal of the Verilog (``s_axil_*``, ``m_axi_*``, ``[sm]_axis_<x>_t*``) is mapped, under its
  own interface, with the logical name of its signal; each interface has the handshake
  signals of its protocol and a slave/master mode that matches the port directions (a
  slave's VALID inputs, READY outputs);
* ``clk`` and ``rst`` are clock and reset interfaces, the clock associated with every bus
  interface and the reset (active high);
* the memory map of a core with a SystemRDL map lists the map's registers at its offsets.

Negative tests: a component with a port renamed, a width changed, a bus signal left unmapped
or a wrong interface mode fails the check.
"""
from __future__ import annotations

import copy
import re

import pytest
from lxml import etree

from rtl_gen import ipxact, regmaps
from rtl_gen.common.core import IP_DIR
from rtl_gen.registry import cores

NS = {"ipxact": ipxact.NS}
NAMES = list(cores())


def verilog_ports(path) -> dict[str, tuple[str, int]]:
    """name -> (direction "in"/"out", width) from a Verilog module header (ANSI or not)."""
    text = re.sub(r"//[^\n]*|/\*.*?\*/", "", path.read_text(), flags=re.S)
    m = re.search(r"\bmodule\s+(\w+)\s*\((.*?)\);", text, re.S)
    assert m, f"{path}: no module header"
    names = [n.strip() for n in m.group(2).split(",") if n.strip()]
    out = {}
    for d, rng, n in re.findall(r"\b(input|output)\s+(?:wire\s+|reg\s+)?(?:signed\s+)?(\[[^\]]+\])?\s*(\w+)\s*;", text):
        w = 1
        if rng:
            hi, lo = (int(x) for x in rng[1:-1].split(":"))
            w = abs(hi - lo) + 1
        out[n] = ("in" if d == "input" else "out", w)
    assert sorted(out) == sorted(names), f"{path}: declarations do not match the port list"
    return {n: out[n] for n in names}


def _t(el, path):
    x = el.find(path, NS)
    return None if x is None else x.text


def read_component(root) -> dict:
    comp = {"ports": {}, "bus": {}, "abs": _absolute_regs(root)}
    for p in root.iterfind("ipxact:model/ipxact:ports/ipxact:port", NS):
        v = p.find("ipxact:wire/ipxact:vectors/ipxact:vector", NS)
        w = 1 if v is None else abs(int(_t(v, "ipxact:left")) - int(_t(v, "ipxact:right"))) + 1
        comp["ports"][_t(p, "ipxact:name")] = (_t(p, "ipxact:wire/ipxact:direction"), w)
    for b in root.iterfind("ipxact:busInterfaces/ipxact:busInterface", NS):
        bt = b.find("ipxact:busType", NS)
        mode = "slave" if b.find("ipxact:slave", NS) is not None else \
            "master" if b.find("ipxact:master", NS) is not None else None
        maps = {_t(pm, "ipxact:physicalPort/ipxact:name"): _t(pm, "ipxact:logicalPort/ipxact:name")
                for pm in b.iterfind(".//ipxact:portMap", NS)}
        params = {_t(p, "ipxact:name"): _t(p, "ipxact:value")
                  for p in b.iterfind("ipxact:parameters/ipxact:parameter", NS)}
        comp["bus"][_t(b, "ipxact:name")] = {"type": bt.get("name"), "vendor": bt.get("vendor"),
                                              "mode": mode, "maps": maps, "params": params}
    return comp


def check(comp: dict, vports: dict, core: str):
    errs = []
    if comp["ports"] != vports:
        for n in sorted(set(comp["ports"]) | set(vports)):
            if comp["ports"].get(n) != vports.get(n):
                errs.append(f"port {n}: component {comp['ports'].get(n)}, Verilog {vports.get(n)}")
    mapped = {}
    for bname, b in comp["bus"].items():
        for ph, lg in b["maps"].items():
            if ph not in vports:
                errs.append(f"{bname}: maps {ph}, not a Verilog port")
            mapped[ph] = (bname, lg)
        lgs = set(b["maps"].values())
        if b["type"] == "aximm":
            need = ipxact.REQUIRED["aximm_lite" if b["params"].get("PROTOCOL") == "AXI4LITE" else "aximm"]
            if not need <= lgs:
                errs.append(f"{bname}: lacks {sorted(need - lgs)}")
            valid_dir = "in" if b["mode"] == "slave" else "out"
            for ph, lg in b["maps"].items():
                if ph in vports and lg.endswith("VALID"):
                    want = valid_dir if lg[:-5] in ("AW", "W", "AR") else ("out" if valid_dir == "in" else "in")
                    if vports[ph][0] != want:
                        errs.append(f"{bname} ({b['mode']}): {ph} ({lg}) is {vports[ph][0]}put")
        elif b["type"] == "axis":
            if "TVALID" not in lgs:
                errs.append(f"{bname}: no TVALID")
            for ph, lg in b["maps"].items():
                if lg == "TVALID" and ph in vports and vports[ph][0] != ("in" if b["mode"] == "slave" else "out"):
                    errs.append(f"{bname} ({b['mode']}): TVALID {ph} is {vports[ph][0]}put")
        elif b["type"] in ("clock", "reset"):
            if b["mode"] != "slave" or len(b["maps"]) != 1:
                errs.append(f"{bname}: a {b['type']} interface is a slave of one port")
        else:
            errs.append(f"{bname}: unknown bus type {b['type']}")
        if b["vendor"] != "xilinx.com":
            errs.append(f"{bname}: bus definition vendor {b['vendor']}")
    for n in vports:
        m = ipxact.AXI_RE.match(n) or ipxact.AXIS_RE.match(n)
        if m:
            want = (m.group(1), m.group(2).upper())
            if mapped.get(n) != want:
                errs.append(f"{n}: mapped as {mapped.get(n)}, expected {want}")
    bus_names = [b for b, x in comp["bus"].items() if x["type"] in ("aximm", "axis")]
    if "clk" in vports:
        c = comp["bus"].get("clk")
        if not c or c["type"] != "clock" or c["maps"] != {"clk": "CLK"}:
            errs.append("clk: no clock interface")
        elif bus_names and sorted(c["params"].get("ASSOCIATED_BUSIF", "").split(":")) != sorted(bus_names):
            errs.append(f"clk: ASSOCIATED_BUSIF {c['params'].get('ASSOCIATED_BUSIF')} != {bus_names}")
        elif "rst" in vports and c["params"].get("ASSOCIATED_RESET") != "rst":
            errs.append("clk: ASSOCIATED_RESET is not rst")
    if "rst" in vports:
        r = comp["bus"].get("rst")
        if not r or r["type"] != "reset" or r["params"].get("POLARITY") != "ACTIVE_HIGH":
            errs.append("rst: no active-high reset interface")
    if regmaps.has_regmap(core):
        from scoreboards import regmap
        rm = regmap.load(core)
        for r in rm:
            leaf = r.name.split(".")[-1].split("[")[0]
            if r.offset not in comp["abs"].get(leaf, []):
                errs.append(f"memory map: register {r.name} at {r.offset:#x} missing")
    return errs


def _absolute_regs(root) -> dict[str, list[int]]:
    """Register name -> absolute byte offsets (block base + register files + dim strides)."""
    out: dict[str, list[int]] = {}

    def num(x):
        return int(x.replace("'h", "0x"), 0) if x else 0

    def walk(el, base):
        for child in el:
            tag = etree.QName(child).localname
            if tag == "register":
                off = base + num(_t(child, "ipxact:addressOffset"))
                dims = [int(d.text) for d in child.iterfind("ipxact:dim", NS)] or [1]
                step = int(_t(child, "ipxact:size")) // 8
                out.setdefault(_t(child, "ipxact:name"), []).extend(off + i * step for i in range(dims[0]))
            elif tag == "registerFile":
                dims = [int(d.text) for d in child.iterfind("ipxact:dim", NS)] or [1]
                rng = num(_t(child, "ipxact:range"))
                start = base + num(_t(child, "ipxact:addressOffset"))
                for i in range(dims[0]):
                    walk(child, start + i * rng)
    for blk in root.iterfind(".//ipxact:memoryMap/ipxact:addressBlock", NS):
        walk(blk, num(_t(blk, "ipxact:baseAddress")))
    return out


def load(core):
    f = IP_DIR / core / ipxact.FILE
    assert f.exists(), f"{f} missing: run make gen"
    root = etree.parse(str(f)).getroot()
    return root, read_component(root)


@pytest.mark.parametrize("name", NAMES)
def test_component_matches_the_verilog(name):
    _, comp = load(name)
    vports = verilog_ports(IP_DIR / name / "rtl" / f"{name}.v")
    errs = check(comp, vports, name)
    assert not errs, "\n".join(errs)
    assert comp["bus"] or name == "cosmic_pe" or not any(
        ipxact.AXI_RE.match(n) or ipxact.AXIS_RE.match(n) for n in vports)


def test_every_core_with_a_map_has_a_memory_map_on_its_slave():
    for name in NAMES:
        if not regmaps.has_regmap(name):
            continue
        root, comp = load(name)
        ref = root.find(".//ipxact:busInterface[ipxact:name='s_axil']/ipxact:slave/ipxact:memoryMapRef", NS)
        mm = root.find(".//ipxact:memoryMaps/ipxact:memoryMap/ipxact:name", NS)
        assert ref is not None and mm is not None and ref.get("memoryMapRef") == mm.text, name


# ---------------------------------------------------------------- the check can fail
def _mutated(name, fn):
    root, _ = load(name)
    root = copy.deepcopy(root)
    fn(root)
    return check(read_component(root), verilog_ports(IP_DIR / name / "rtl" / f"{name}.v"), name)


def test_renamed_port_fails():
    def f(root):
        root.find(".//ipxact:model//ipxact:port/ipxact:name[.='s_axil_wdata']", NS).text = "s_axil_wdat"
    assert any("s_axil_wdat" in e for e in _mutated("maple_smart_memory", f))


def test_changed_width_fails():
    def f(root):
        p = root.find(".//ipxact:model//ipxact:port[ipxact:name='s_axil_awaddr']", NS)
        p.find(".//ipxact:left", NS).text = "11"
    assert any("s_axil_awaddr" in e for e in _mutated("maple_smart_memory", f))


def test_unmapped_bus_signal_fails():
    def f(root):
        pm = root.xpath(".//ipxact:portMap[ipxact:physicalPort/ipxact:name='m_axis_out_tlast']",
                        namespaces=NS)[0]
        pm.getparent().remove(pm)
    assert any("m_axis_out_tlast" in e for e in _mutated("maple_smart_memory", f))


def test_wrong_mode_fails():
    def f(root):
        bi = root.find(".//ipxact:busInterface[ipxact:name='s_axis_in']", NS)
        s = bi.find("ipxact:slave", NS)
        s.tag = f"{{{ipxact.NS}}}master"
    assert any("s_axis_in (master)" in e for e in _mutated("maple_smart_memory", f))


def test_missing_register_fails():
    def f(root):
        r = root.find(".//ipxact:register[ipxact:name='COUNT']", NS)
        r.getparent().remove(r)
    assert any("COUNT" in e for e in _mutated("maple_smart_memory", f))
