"""Cycle traces recorded from a simulation, turned into WaveDrom JSON.

A trace is ``{"cycles": N, "signals": {name: [value per cycle]}}``: the value of each
signal in every clock cycle (sampled between two rising edges), ``None`` for X/Z.
:func:`to_wavedrom` draws it: 1-bit signals as levels, buses as labelled values (the
label of a value comes from ``labels[name](cycle, value)``, e.g. the index of the
AXI4-Stream beat it carries; ``None`` draws the value as don't-care).  The JSON is the
source of truth of the datasheets' protocol diagrams (``rtl_gen/timing.py`` renders
it); ``verif/protocol_timing`` records it from the RTL and fails when it drifts.
"""
from __future__ import annotations

from typing import Callable


def transfers(trace: dict, stream: str) -> list[int]:
    """Cycles in which AXI4-Stream ``stream`` (``s_axis_x``/``m_axis_y``) transferred a beat."""
    s = trace["signals"]
    v, r = s[f"{stream}_tvalid"], s[f"{stream}_tready"]
    return [c for c in range(trace["cycles"]) if v[c] == 1 and r[c] == 1]


def level_wave(values: list) -> str:
    out, prev = [], object()
    for v in values:
        ch = "x" if v is None else ("1" if v else "0")
        out.append("." if ch == prev else ch)
        prev = ch
    return "".join(out)


def bus_wave(values: list, label: Callable[[int, int], str | None]) -> tuple[str, list[str]]:
    """WaveDrom wave and data for a bus: a new '=' cell whenever the label changes,
    'x' where the label is None."""
    wave, data, prev = [], [], object()
    for c, v in enumerate(values):
        lab = None if v is None else label(c, v)
        if lab is None:
            wave.append("." if prev is None else "x")
            prev = None
            continue
        if lab == prev:
            wave.append(".")
        else:
            wave.append("=")
            data.append(lab)
        prev = lab
    return "".join(wave), data


def to_wavedrom(trace: dict, rows: list, labels: dict, head: str, foot: str = "") -> dict:
    """WaveDrom JSON of ``trace``.  ``rows``: signal names in display order, ``None`` for
    a spacer; a name in ``labels`` is drawn as a bus."""
    sig = [{"name": "clk", "wave": "p" + "." * (trace["cycles"] - 1)}]
    for name in rows:
        if name is None:
            sig.append({})
            continue
        vals = trace["signals"][name]
        if name in labels:
            wave, data = bus_wave(vals, labels[name])
            sig.append({"name": name, "wave": wave, "data": data})
        else:
            sig.append({"name": name, "wave": level_wave(vals)})
    out = {"signal": sig, "head": {"text": head}, "config": {"hscale": 1}}
    if foot:
        out["foot"] = {"text": foot}
    return out


def from_wavedrom(wd: dict) -> dict:
    """The trace a WaveDrom diagram shows (inverse of :func:`to_wavedrom` up to the
    values of buses: each label becomes a distinct integer, don't-care ``None``), so the
    protocol relations can be checked on a diagram itself."""
    rows = [r for r in wd["signal"] if r]
    n = len(rows[0]["wave"])
    sig = {}
    for r in rows[1:]:
        vals, cur, data, ids = [], None, iter(r.get("data", [])), {}
        for ch in r["wave"]:
            if ch == ".":
                pass
            elif ch in "01":
                cur = int(ch)
            elif ch == "x":
                cur = None
            elif ch == "=":
                lab = next(data)
                if lab == "OKAY":        # an AXI response code
                    cur = 0
                else:
                    try:                 # a number drawn as its value (addresses, data words)
                        cur = int(lab, 0)
                    except ValueError:   # a name (a stream beat): a distinct integer per name
                        cur = ids.setdefault(lab, -(len(ids) + 1))
            else:
                raise ValueError(f"{r['name']}: wave character {ch!r} not produced by to_wavedrom")
            vals.append(cur)
        if len(vals) != n:
            raise ValueError(f"{r['name']}: {len(vals)} cycles, clk has {n}")
        sig[r["name"]] = vals
    return {"cycles": n, "signals": sig}
