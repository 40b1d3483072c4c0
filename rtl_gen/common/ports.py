"""Create the top-level signals of a core from its documented port list."""
from __future__ import annotations

from .hdl import new_reset, sig_b, sig_u


def port_signals(ports) -> dict:
    sigs = {}
    for p in ports:
        if p.name == "rst":
            sigs[p.name] = new_reset()
        elif p.width == 1:
            sigs[p.name] = sig_b(False)
        else:
            sigs[p.name] = sig_u(int(p.width))
    return sigs


def make_factory(top_fn, ports):
    """A zero-argument factory that instantiates ``top_fn`` with fresh port signals
    (MyHDL takes port names from ``top_fn``'s argument names)."""
    def factory():
        sigs = port_signals(ports)
        return top_fn(**sigs)
    return factory
