"""Protocol timing diagrams of the datasheets (WaveDrom).

The source of each diagram is ``rtl_gen/timing_diagrams/<core>.json``: WaveDrom JSON and
the protocol relations recorded from the committed netlist by
``verif/protocol_timing`` (which fails when the RTL stops producing it; re-record with
``python -m verif.protocol_timing.test_protocol_timing --update <core>``).  ``make gen``
renders it to ``ip/<core>/doc/<core>_protocol.svg`` with the pinned yowasp-wavedrom
(WaveDrom 3.5 in QuickJS; the SVG is byte-identical run to run) and the datasheet shows
it with the relations.  Only the catalog netlist (``default``) gets one: a variant
package's parameters may change the timing.
"""
from __future__ import annotations

import json
from pathlib import Path

SRC_DIR = Path(__file__).resolve().parent / "timing_diagrams"


def source(core: str) -> dict | None:
    f = SRC_DIR / f"{core}.json"
    return json.loads(f.read_text()) if f.is_file() else None


def svg_name(core: str) -> str:
    return f"doc/{core}_protocol.svg"


def render(doc: dict) -> str:
    """SVG text of a diagram source (``doc["wavedrom"]``)."""
    import yowasp_wavedrom
    return yowasp_wavedrom.render(doc["wavedrom"])


def write_files(core: str, outdir: Path, params: dict) -> list[Path]:
    """``doc/<core>_protocol.svg`` in a catalog package when the core has a recorded
    diagram for these parameters."""
    doc = source(core)
    if doc is None or doc.get("params") != params:
        return []
    f = Path(outdir) / svg_name(core)
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text(render(doc))
    return [f]


def datasheet_section(core: str, params: dict) -> list[str]:
    doc = source(core)
    if doc is None or doc.get("params") != params:
        return []
    return ["", "## Protocol timing", "",
            f"![{core} protocol timing]({svg_name(core)})", "",
            "Recorded from this netlist on Icarus "
            f"(`verif/protocol_timing`, source `rtl_gen/timing_diagrams/{core}.json`): "
            f"{doc['scenario']}.  The test fails "
            "when the RTL no longer produces this diagram, and asserts on the recording:", ""] + \
        [f"- {r}" for r in doc["relations"]]
