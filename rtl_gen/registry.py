"""The catalog: every core the repository generates, in catalog order."""
from __future__ import annotations

import importlib

from rtl_gen.common.core import CoreDef

CORE_MODULES = [
    "rtl_gen.pipearch.dot_sigmoid",
    "rtl_gen.pipearch.sigmoid_delta",
    "rtl_gen.pipearch.scalar_engine",
    "rtl_gen.pipearch.multiply_subtract",
    "rtl_gen.pipearch.l2reg",
    "rtl_gen.pipearch.pipearch_region",
    "rtl_gen.pipearch.pipearch_engine",
    "rtl_gen.pipearch.pipearch_rm",
    "rtl_gen.pipearch.pipearch_ldst",
    "rtl_gen.pipearch.pipearch_pu",
    "rtl_gen.pipearch.pipearch_system",
    "rtl_gen.maple.maple_smart_memory",
    "rtl_gen.maple.maple_pe_chain",
    "rtl_gen.fpdeep.fpdeep_line_buffer",
    "rtl_gen.fpdeep.fpdeep_conv_tile",
    "rtl_gen.fpdeep.fpdeep_conv_engine",
    "rtl_gen.fpdeep.fpdeep_fp",
    "rtl_gen.fpdeep.fpdeep_eb",
    "rtl_gen.fpdeep.fpdeep_pg",
    "rtl_gen.fpdeep.fpdeep_node",
    "rtl_gen.cosmic.cosmic_pe",
    "rtl_gen.cosmic.cosmic_memory_schedule_unit",
    "rtl_gen.cosmic.cosmic_accelerator",
]


def cores() -> dict[str, CoreDef]:
    out = {}
    for m in CORE_MODULES:
        try:
            mod = importlib.import_module(m)
        except ModuleNotFoundError as e:
            if e.name and (m == e.name or m.startswith(e.name + ".")):
                continue  # core not written yet
            raise
        out[mod.CORE.name] = mod.CORE
    return out


def cores_named(names) -> tuple[dict[str, CoreDef], list[str]]:
    """The catalog and the cores a command line named (all when none); an unknown name
    exits with the list of known cores (the rtl_gen.synth / rtl_gen.fmax / verif.bench CLIs)."""
    allc = cores()
    names = list(names or allc)
    unknown = [n for n in names if n not in allc]
    if unknown:
        raise SystemExit(f"unknown core(s): {', '.join(unknown)}; known: {', '.join(allc)}")
    return allc, names


def get(name: str) -> CoreDef:
    c = cores()
    if name not in c:
        raise KeyError(f"unknown core {name!r}; known: {', '.join(c)}")
    return c[name]
