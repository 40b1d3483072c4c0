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


def keyword_block(kind: str, names, impl, params: dict):
    """A MyHDL block function named ``kind`` with one argument per port in ``names``
    that calls ``impl(dict_of_port_signals, params)`` (``impl`` must be a ``@block``).

    MyHDL takes the top-level port names from the *source* of the top function, so the
    generated source is registered in ``linecache``.  Use this for cores whose port list
    depends on the parameters."""
    import linecache

    from myhdl import block

    names = list(names)
    fname = f"<rtl_gen {kind} top {len(linecache.cache)}>"
    src = (f"def {kind}({', '.join(names)}):\n"
           f"    return impl(dict({', '.join(f'{n}={n}' for n in names)}), P)\n")
    linecache.cache[fname] = (len(src), None, src.splitlines(True), fname)
    ns = {"impl": impl, "P": dict(params)}
    exec(compile(src, fname, "exec"), ns)
    return block(ns[kind])
