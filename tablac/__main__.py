"""``python -m tablac``: the TABLA/CoSMIC compiler command line.

    python -m tablac compile prog.t --pes 32 [--threads 2] [--mapper cosmic|mlrcs]
                     [--target target.json] [--dot-group auto|G] [-D name=value ...]
                     [--bypass 1|0] [--dot dfg.dot] -o outdir
    python -m tablac dot prog.t -o dfg.dot

``compile`` writes into ``outdir``: ``microcode/peNNN.hex`` (one cosmic_pe microcode word
per line, thread-relative PE index; every thread runs the same programs),
``microcode.asm`` (the same as assembler text), ``pe_config.json`` (the cosmic_pe
generator parameters), ``memory_schedule.json`` (memory schedule unit entries: one START
per sample, and the model broadcast), ``thread_table.json`` (Thread Index Table),
``layout.json`` (memory layout of model and training data, the data map, constants
preloaded into PE buffers), ``tree_bus.json`` (tree-bus program), ``aggregation.json``
(the model words averaged after each round) and ``report.txt`` (cycles per sample, lower
bounds, transfers).  Errors are printed as ``file:line:col: error: msg`` with exit
status 1.
"""
from __future__ import annotations

import argparse
import math
import sys

from .errors import CompileError


def _overrides(items, file):
    out = {}
    for it in items or ():
        name, eq, val = it.partition("=")
        if not eq or not name:
            raise CompileError(f"-D expects name=value, got '{it}'", file)
        try:
            out[name] = float(val) if any(c in val for c in ".eE") else int(val)
        except ValueError:
            raise CompileError(f"-D {name}: '{val}' is not a number", file) from None
    return out


def dot_group_candidates(graph, plan) -> list:
    """1, 2, input words per PE, input words per row (rounded up), distinct, <= 256."""
    words = sum(int(ids.size) for ids in graph.inputs.values())
    c = [1, 2, math.ceil(words / plan.pes_per_thread), math.ceil(words / plan.rows_per_thread)]
    return sorted({max(1, min(256, x)) for x in c})


def best_dot_group(graph0, build, plan, mapper, bypass=1, file="<input>", recompute=None):
    """(G, graph, compiled) with the fewest cycles per sample over the dot-group
    candidates and recompute depths 1 and 4 (1 only for graphs over 1500 nodes, where
    compiling is slow) unless ``recompute`` is given."""
    from .codegen import compile_graph
    best = None
    depths = [recompute] if recompute is not None else \
        ([1] if len(graph0.nodes) > 1500 else [1, 4])
    for G in dot_group_candidates(graph0, plan):
        g = build(G)
        for d in depths:
            comp = compile_graph(g, plan, mapper=mapper, bypass=bypass, recompute=d, file=file)
            key = (comp.stats["cycles_compute"], comp.stats["transfers_total"], G, d)
            if best is None or key < best[0]:
                best = (key, G, g, comp)
    return best[1], best[2], best[3]


def build(args):
    """(graph, plan, compiled) for parsed ``args``."""
    from . import load
    from .codegen import compile_graph
    from .plan import load_target, plan_pes, plan_target
    src = args.program
    ov = _overrides(args.define, src)
    if args.target:
        if args.pes is not None or args.threads is not None:
            raise CompileError("give either --target or --pes/--threads, not both", src)
        target = load_target(args.target)
        g0 = load(src, overrides=ov)
        plan = plan_target(target, g0, file=args.target)
    else:
        if args.pes is None:
            raise CompileError("a plan is needed: --pes N [--threads T] or --target file.json", src)
        plan = plan_pes(args.pes, args.threads or 1, file=src)
    if args.dot_group == "auto":
        g0 = load(src, overrides=ov)
        G, g, comp = best_dot_group(g0, lambda G: load(src, overrides=ov, dot_group=G), plan,
                                    args.mapper, args.bypass, src, args.recompute)
        return g, plan, comp
    elif args.dot_group == "none":
        G = None
    else:
        try:
            G = int(args.dot_group)
        except ValueError:
            raise CompileError(f"--dot-group must be auto, none or an integer, got "
                               f"'{args.dot_group}'", src) from None
    g = load(src, overrides=ov, dot_group=G)
    comp = compile_graph(g, plan, mapper=args.mapper, bypass=args.bypass,
                         recompute=3 if args.recompute is None else args.recompute, file=src)
    return g, plan, comp


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tablac", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("compile", help="compile a program for a plan into an output folder")
    c.add_argument("program")
    c.add_argument("-o", "--out", required=True, help="output folder")
    c.add_argument("--pes", type=int, help="PEs in total")
    c.add_argument("--threads", type=int, help="worker threads (divide the rows)")
    c.add_argument("--target", help="target description JSON (CoSMIC 4.4 planner)")
    c.add_argument("--mapper", choices=("cosmic", "mlrcs"), default="cosmic")
    c.add_argument("--dot-group", default="auto",
                   help="dot lowering group: auto (the fastest of a few), none or G")
    c.add_argument("--bypass", type=int, choices=(0, 1), default=1)
    c.add_argument("--recompute", type=int, default=None,
                   help="levels of an operation chain repeated on a consumer's PE instead of a "
                        "transfer (default: searched with --dot-group auto, else 3)")
    c.add_argument("-D", "--define", action="append", help="override a constant: name=value")
    c.add_argument("--dot", help="also write the DFG as Graphviz DOT")
    d = sub.add_parser("dot", help="write the DFG as Graphviz DOT")
    d.add_argument("program")
    d.add_argument("-o", "--out", required=True)
    d.add_argument("--dot-group", default="none")
    d.add_argument("-D", "--define", action="append")
    args = ap.parse_args(argv)
    try:
        if args.cmd == "dot":
            from . import load
            G = None if args.dot_group == "none" else int(args.dot_group)
            g = load(args.program, overrides=_overrides(args.define, args.program), dot_group=G)
            _write(args.out, g.to_dot(), args.program)
            return 0
        from .codegen import write_outputs
        g, plan, comp = build(args)
        write_outputs(comp, args.out, g, source=args.program)
        if args.dot:
            _write(args.dot, g.to_dot(), args.program)
        sys.stdout.write((open(f"{args.out}/report.txt").read()))
        return 0
    except CompileError as e:
        print(str(e), file=sys.stderr)
        return 1
    except OSError as e:
        print(f"{args.out}:0:0: error: cannot write the output: {e}", file=sys.stderr)
        return 1


def _write(path, text, src):
    try:
        with open(path, "w") as f:
            f.write(text)
    except OSError as e:
        raise CompileError(f"cannot write {path}: {e}", src) from None


if __name__ == "__main__":
    sys.exit(main())
