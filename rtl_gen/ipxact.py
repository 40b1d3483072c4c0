"""IP-XACT (IEEE 1685-2014) ``component.xml`` of a generated core.

Built with ipyxact's schema-generated IP-XACT 2014 classes (``ipyxact.ipxact2014``), not text
templates:

* the bus interfaces found in the port list by the repository's naming rules --
  ``s_axil_*`` AXI4-Lite slave, ``m_axi_*`` AXI4 master, ``s_axis_<x>_t*`` /
  ``m_axis_<x>_t*`` AXI4-Stream slave / master, ``clk`` clock (ASSOCIATED_BUSIF,
  ASSOCIATED_RESET), ``rst`` synchronous active-high reset (POLARITY) -- with Vivado's bus
  definitions (``xilinx.com:interface:aximm|axis|clock|reset``, abstraction ``*_rtl``) and the
  logical names of those definitions;
* the model's port list (direction, vector bounds) from the generator's ports;
* for a core with a SystemRDL register map, the memory map exported by PeakRDL-ipxact from
  the same compiled map (``rtl_gen/regmaps``), referenced by the AXI4-Lite slave.

``rtl_gen/tests/test_ipxact.py`` checks each committed file against the port header of the
committed Verilog.
"""
from __future__ import annotations

import io
import re
import tempfile
from pathlib import Path

NS = "http://www.accellera.org/XMLSchema/IPXACT/1685-2014"
FILE = "component.xml"
XILINX = ("xilinx.com", "interface")

AXIS_RE = re.compile(r"^([sm]_axis_[a-z0-9_]+?)_(tdata|tvalid|tready|tlast|tkeep|tstrb|tdest|tid|tuser)$")
AXI_RE = re.compile(r"^(s_axil|m_axi)_((?:aw|w|b|ar|r)[a-z]+)$")

# logical ports of the bus definitions (name -> logical name); AXI4 and AXI4-Lite share aximm
AXIMM_LOGICAL = {n: n.upper() for n in (
    "awid", "awaddr", "awlen", "awsize", "awburst", "awlock", "awcache", "awprot", "awqos",
    "awregion", "awuser", "awvalid", "awready", "wid", "wdata", "wstrb", "wlast", "wuser",
    "wvalid", "wready", "bid", "bresp", "buser", "bvalid", "bready", "arid", "araddr", "arlen",
    "arsize", "arburst", "arlock", "arcache", "arprot", "arqos", "arregion", "aruser", "arvalid",
    "arready", "rid", "rdata", "rresp", "rlast", "ruser", "rvalid", "rready")}
AXIS_LOGICAL = {n: n.upper() for n in ("tdata", "tvalid", "tready", "tlast", "tkeep", "tstrb",
                                       "tdest", "tid", "tuser")}
# handshake signals without which an interface is not one
REQUIRED = {"aximm_lite": {"AWADDR", "AWVALID", "AWREADY", "WDATA", "WVALID", "WREADY", "BRESP",
                           "BVALID", "BREADY", "ARADDR", "ARVALID", "ARREADY", "RDATA", "RRESP",
                           "RVALID", "RREADY"},
            "aximm": {"AWADDR", "AWVALID", "AWREADY", "WDATA", "WVALID", "WREADY", "BVALID", "BREADY",
                      "ARADDR", "ARVALID", "ARREADY", "RDATA", "RVALID", "RREADY", "AWLEN", "ARLEN",
                      "WLAST", "RLAST"},
            "axis": {"TVALID"}}


def bus_groups(ports) -> dict[str, dict]:
    """Bus interfaces of a port list: name -> {kind, mode, ports: {port name: logical name}}.
    ``ports``: objects with ``name``, ``direction`` ("in"/"out"), ``width``."""
    out: dict[str, dict] = {}
    for p in ports:
        m = AXI_RE.match(p.name)
        if m:
            name, sig = m.group(1), m.group(2)
            kind = "aximm_lite" if name == "s_axil" else "aximm"
            g = out.setdefault(name, {"kind": kind, "mode": "slave" if name.startswith("s_") else "master",
                                      "ports": {}})
            g["ports"][p.name] = AXIMM_LOGICAL[sig]
            continue
        m = AXIS_RE.match(p.name)
        if m:
            name, sig = m.group(1), m.group(2)
            g = out.setdefault(name, {"kind": "axis", "mode": "slave" if name.startswith("s_") else "master",
                                      "ports": {}})
            g["ports"][p.name] = AXIS_LOGICAL[sig]
    return out


def _fix_ns(obj, seen=None):
    """ipyxact's generated classes leave the namespace prefix of programmatically built
    children unset; give every element of the tree the ipxact prefix."""
    seen = set() if seen is None else seen
    if id(obj) in seen or not hasattr(obj, "__dict__"):
        return
    seen.add(id(obj))
    for k, v in list(vars(obj).items()):
        if k.endswith("_nsprefix_") or k == "ns_prefix_":
            if v is None:
                setattr(obj, k, "ipxact")
        elif isinstance(v, list):
            for x in v:
                _fix_ns(x, seen)
        elif hasattr(v, "export"):
            _fix_ns(v, seen)


def _memory_maps(core: str, params: dict, inst: str | None):
    """The ``memoryMaps`` element (lxml) of the core's SystemRDL map, exported by
    PeakRDL-ipxact (IP-XACT 2014).  Kept as PeakRDL wrote it: ipyxact's generated classes drop
    the registers of a ``registerFile`` when they parse one."""
    from lxml import etree
    from peakrdl_ipxact import IPXACTExporter, Standard

    from rtl_gen import regmaps

    node = regmaps.compile_map(core, params, inst)
    with tempfile.TemporaryDirectory(prefix="rtlgen_ipxact_") as d:
        f = Path(d) / "regs.xml"
        IPXACTExporter(standard=Standard.IEEE_1685_2014, vendor="mlaccel", library="regmaps",
                       version="1.0").export(node, str(f))
        root = etree.parse(str(f), etree.XMLParser(remove_blank_text=True)).getroot()
    mm = root.find(f"{{{NS}}}memoryMaps")
    name = mm.find(f"{{{NS}}}memoryMap/{{{NS}}}name").text
    return mm, name


def component(cd, params: dict, top: str | None = None, vlnv: str | None = None):
    """The ipyxact ``Component`` of one netlist."""
    import ipyxact.ipxact2014 as X
    from rtl_gen import regmaps

    top = top or cd.name
    vendor, library, name, version = (vlnv or cd.vlnv()).split(":")
    _, ports = cd.build(params)
    groups = bus_groups(ports)
    E = X.unsignedIntExpression

    def lib(kind, rtl):
        return X.ConfigurableLibraryRef(vendor=XILINX[0], library=XILINX[1],
                                        name=f"{kind}_rtl" if rtl else kind, version="1.0")

    def params_of(pairs):
        return X.parameters(parameter=[
            X.parameterType(parameterId=k, name=k, value=X.complexBaseExpression(valueOf_=str(v)))
            for k, v in pairs])

    mmaps = mm_name = None
    if regmaps.has_regmap(cd.name):
        mmaps, mm_name = _memory_maps(cd.name, params, top)
    bis = []
    for gname, g in groups.items():
        kind = "aximm" if g["kind"].startswith("aximm") else "axis"
        pm = X.PortMaps(portMap=[X.PortMap(logicalPort=X.LogicalPort(name=lg), physicalPort=X.PhysicalPort(name=ph))
                                 for ph, lg in g["ports"].items()])
        kw = {}
        if g["mode"] == "slave":
            ref = None
            if kind == "aximm" and mmaps is not None:
                ref = X.memoryMapRefType(memoryMapRef=mm_name)
            kw["slave"] = X.Slave(memoryMapRef=ref)
        else:
            kw["master"] = X.Master()
        pairs = []
        if kind == "aximm":
            pairs.append(("PROTOCOL", "AXI4LITE" if g["kind"] == "aximm_lite" else "AXI4"))
        bis.append(X.BusInterface(
            name=gname, busType=lib(kind, False),
            AbstractionTypes=X.AbstractionTypes(abstractionType=[X.AbstractionType(
                abstractionRef=lib(kind, True), portMaps=pm)]),
            parameters=params_of(pairs) if pairs else None, bitSteering=None, **kw))
    names = {p.name for p in ports}
    if "rst" in names:
        bis.append(X.BusInterface(
            name="rst", busType=lib("reset", False),
            AbstractionTypes=X.AbstractionTypes(abstractionType=[X.AbstractionType(
                abstractionRef=lib("reset", True), portMaps=X.PortMaps(portMap=[X.PortMap(
                    logicalPort=X.LogicalPort(name="RST"), physicalPort=X.PhysicalPort(name="rst"))]))]),
            slave=X.Slave(), parameters=params_of([("POLARITY", "ACTIVE_HIGH")]), bitSteering=None))
    if "clk" in names:
        pairs = []
        if groups:
            pairs.append(("ASSOCIATED_BUSIF", ":".join(groups)))
        if "rst" in names:
            pairs.append(("ASSOCIATED_RESET", "rst"))
        bis.append(X.BusInterface(
            name="clk", busType=lib("clock", False),
            AbstractionTypes=X.AbstractionTypes(abstractionType=[X.AbstractionType(
                abstractionRef=lib("clock", True), portMaps=X.PortMaps(portMap=[X.PortMap(
                    logicalPort=X.LogicalPort(name="CLK"), physicalPort=X.PhysicalPort(name="clk"))]))]),
            slave=X.Slave(), parameters=params_of(pairs) if pairs else None, bitSteering=None))
    xports = []
    for p in ports:
        w = int(p.width)
        vec = (X.Vectors(Vector=[X.Vector(left=E(valueOf_=str(w - 1)), right=E(valueOf_="0"))])
               if w > 1 else None)
        xports.append(X.Port(name=p.name, wire=X.PortWire(direction=p.direction, Vectors=vec)))
    comp = X.Component(vendor=vendor, library=library, name=name, version=version,
                       BusInterfaces=X.BusInterfaces(BusInterface=bis) if bis else None,
                       model=X.Model(ports=X.Ports(port=xports)),
                       description=f"{top}: {cd.description} (generated by rtl_gen from {cd.generator})")
    _fix_ns(comp)
    return comp, mmaps


def component_xml(cd, params: dict, top: str | None = None, vlnv: str | None = None) -> str:
    """The file's text: ipyxact's component with PeakRDL's memoryMaps placed where the
    schema puts them (before the model), serialised by lxml."""
    from lxml import etree

    comp, mmaps = component(cd, params, top, vlnv)
    s = io.StringIO()
    comp.export(s, 0, namespaceprefix_="ipxact:", namespacedef_=f'xmlns:ipxact="{NS}"', name_="component")
    root = etree.fromstring(s.getvalue().encode(), etree.XMLParser(remove_blank_text=True))
    if mmaps is not None:
        root.find(f"{{{NS}}}model").addprevious(mmaps)
    root.addprevious(etree.Comment(f" Generated by rtl_gen (make gen) with ipyxact {_version('ipyxact')} "
                                   f"and peakrdl-ipxact {_version('peakrdl-ipxact')}; do not edit. "))
    body = etree.tostring(root.getroottree(), pretty_print=True, encoding="UTF-8", xml_declaration=True)
    return body.decode()


def _version(dist: str) -> str:
    from importlib.metadata import version
    return version(dist)
