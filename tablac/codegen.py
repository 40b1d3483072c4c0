"""Code generation: a thread's :class:`tablac.schedule.Sched` -> what the accelerator runs.

:func:`compile_graph` produces a :class:`Compiled` holding

* ``pe_cfg`` -- the ``cosmic_pe`` generator parameters every PE shares (buffer and
  schedule depths are the smallest powers of two that hold the schedule, at most the
  plan's limits; ``NL`` the nonlinear units the program uses);
* ``programs[pe]`` -- the microcode of each of a thread's PEs (thread-relative index),
  ``length`` instructions, encoded with ``golden.cosmic_pe.Assembler``/``Instr.encode``;
  every thread runs the same programs (CoSMIC 6: one schedule, PE Offset per thread);
* ``preload[pe]`` -- constant words written into PE buffers at configuration time
  (``{"D"|"M"|"I": {addr: word}}``) through the PE load port;
* ``tree`` -- the tree-bus program of one thread: ``(cycle, op, src rows, dst rows)``,
  ``cycle`` counted from the start edge (see :mod:`tablac.schedule`);
* ``sample_entries`` -- the memory schedule (``golden.cosmic_msu.Entry``, thread
  relative ``base``) that loads one training sample into every thread's DATA buffers
  (one START of the unit per sample), and ``model_entries``, the broadcast reads that load
  the model into every thread's MODEL buffers (one START at configuration);
* the memory layout: model region at word 0 (``model_image`` gives, per word, the model
  element or None for padding), then each thread's samples, contiguous and unchanged
  (``sample_words`` words each, ``sample`` names them) -- no marshalling;
* ``aggregation`` -- after every round the model words ``(pe, addr, name, node, op)`` of
  all threads are combined word by word over the threads (``mean``: the result is
  ``golden.sgd.average_fx``; ``sum``: exact sum, saturated -- the program's aggregation
  operator, ``Graph.aggregate``) and written back into every thread (:mod:`tablac.machine`
  documents the unit).

Delivery rule the accelerator integration must follow (the memory schedule unit's
``m_axis_pe`` is fanned out to a row): lane ``i`` of a beat addressed to PE ``p`` goes to
PE ``p + i``; a per-thread read writes the DATA buffer, a broadcast read the MODEL
buffer, each PE at consecutive addresses from 0 (a write pointer per PE and buffer, reset
by every START).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from golden.cosmic_msu import Entry, MsuConfig
from golden.cosmic_pe import DONE_OFFSET, Assembler, AsmError, PEConfig, OP_NAMES, Instr
from golden.fixedpoint import QFormat

from .errors import CompileError
from .mapper import critical_path_bound, schedule
from .schedule import TREE_CYCLE_SHIFT, op_count, tree_depth

MIN_DEPTH = 16


def _pow2(n):
    n = max(MIN_DEPTH, int(n))
    return 1 << (n - 1).bit_length()


@dataclass
class Compiled:
    plan: object
    sched: object
    fmt: QFormat
    pe_cfg: PEConfig
    programs: list            # per thread-relative PE: list[int] microcode words
    instrs: list              # per PE: list[Instr]
    preload: list             # per PE: {"D"/"M"/"I": {addr: word}}
    tree: list
    sample_entries: list
    model_entries: list
    model_image: list         # model region word -> (pe, addr, node) or None
    sample: list              # sample vector node ids (None unused) in memory order
    sample_words: int
    data_addr: dict           # node -> (pe, addr)
    model_addr: dict          # model node -> (pe, addr)
    aggregation: list         # (pe, addr, name, node, "mean"|"sum")
    length: int
    usage: dict
    stats: dict = field(default_factory=dict)

    @property
    def columns(self):
        return self.plan.columns

    @property
    def pes(self):
        return self.plan.pes_per_thread

    def msu_config(self, threads=None):
        T = self.plan.threads if threads is None else threads
        q = max(len(self.sample_entries), len(self.model_entries), 2)
        return MsuConfig(W=self.fmt.W if self.fmt.W in (8, 16, 32) else 32,
                         LANES=max(2, self.plan.columns), NPE=max(2, self.plan.pes),
                         NTHREADS=T, QDEPTH=_pow2(q) if q > 16 else 16)

    def thread_table(self, samples_per_thread: int, round_=0):
        """(Mem Addr, PE Offset) per thread for one round's data region."""
        base = len(self.model_image)
        per = samples_per_thread * self.sample_words
        return [(base + t * per, self.plan.pe_offset(t)) for t in range(self.plan.threads)]


def _operand(o, amap, pe):
    src, key = o
    if src in "DMI" and len(src) == 1:
        return f"{src}{amap[(pe, src, key)]}"
    return {"L": "L", "R": "R", "BUS": "BUS", "ZERO": "ZERO", "ONE": "ONE"}[src]


def compile_graph(graph, plan, *, mapper="cosmic", fmt=None, bypass=1, recompute=3,
                  file="<input>") -> Compiled:
    """``recompute``: how many levels of an operation chain the scheduler may repeat on a
    consumer's PE instead of transferring the result (0: never)."""
    fmt = fmt or QFormat(32, 16)
    S = schedule(graph, plan, fmt, mapper, bypass=bypass, recompute=recompute, file=file)
    P, C = S.pes, S.columns
    # ---------------------------------------------------------------- addresses
    amap = {}
    use = {"D": [0] * P, "M": [0] * P, "I": [0] * P}
    # DATA: sample words at their arrival address, then scratch
    for v, (pe, key) in S.data_key.items():
        amap[(pe, "D", key)] = key[1]
    dwords = [0] * P
    for (r, start, size) in S.chunks:
        for w in range(size):
            pe = r * C + w % C
            dwords[pe] = max(dwords[pe], w // C + 1)
    # MODEL: row-uniform model region, then constants and scratch
    per_pe_model = [[] for _ in range(P)]
    for v, (pe, key) in sorted(S.model_home.items()):
        per_pe_model[pe].append(v)
    mw_row = [max(len(per_pe_model[r * C + c]) for c in range(C)) for r in range(S.rows)]
    model_addr = {}
    for pe in range(P):
        for i, v in enumerate(per_pe_model[pe]):
            amap[(pe, "M", ("m", v))] = i
            model_addr[v] = (pe, i)
    nxt = {"D": list(dwords), "M": [mw_row[pe // C] for pe in range(P)], "I": [0] * P}

    def addr(pe, buf, key):
        k = (pe, buf, key)
        if k not in amap:
            amap[k] = nxt[buf][pe]
            nxt[buf][pe] += 1
        return amap[k]

    for pe in range(P):
        for s in sorted(S.code[pe]):
            ins = S.code[pe][s]
            for o in (ins.a, ins.b, ins.wb):
                if o and o[0] in ("D", "M", "I") and o[1] is not None:
                    addr(pe, o[0], o[1])
    for (pe, buf, key) in S.preload:
        addr(pe, buf, key)
    for b in "DMI":
        use[b] = list(nxt[b])
    need = {b: max(use[b]) for b in "DMI"}
    lim = plan.max_buffer_depth
    for b, name in (("D", "DATA"), ("M", "MODEL"), ("I", "INTERIM")):
        if need[b] > lim:
            raise CompileError(f"data does not fit the PE buffers: a PE needs {need[b]} {name} "
                               f"words, the plan allows {lim} (use more PEs or a larger target)",
                               file)
    if S.length > plan.max_sched_depth:
        raise CompileError(f"the schedule needs {S.length} instructions per PE, the schedule "
                           f"memory holds at most {plan.max_sched_depth}", file)
    # the committed cosmic_pe netlist's depths (256-word buffers, 1024 instructions) when
    # they suffice and the plan allows them, else the smallest power of two that holds
    d0, s0 = PEConfig.DATA_DEPTH, PEConfig.SCHED_DEPTH

    def depth(n, default, limit):
        return default if n <= default <= limit else _pow2(n)
    cfg = PEConfig(W=fmt.W, F=fmt.F, DATA_DEPTH=depth(need["D"], d0, lim),
                   MODEL_DEPTH=depth(need["M"], d0, lim), INTERIM_DEPTH=depth(need["I"], d0, lim),
                   SCHED_DEPTH=depth(S.length, s0, plan.max_sched_depth), NL=S.nl, BYPASS=bypass)
    # ---------------------------------------------------------------- microcode
    programs, instrs = [], []
    for pe in range(P):
        asm = Assembler(cfg)
        for s in range(S.length):
            ins = S.code[pe].get(s)
            if ins is None:
                asm.nop()
                continue
            dst = []
            if ins.wb:
                dst.append(f"{ins.wb[0]}{amap[(pe, ins.wb[0], ins.wb[1])]}")
            dst += sorted(ins.outs)
            a = _operand(ins.a, amap, pe) if ins.a else None
            b = _operand(ins.b, amap, pe) if ins.b else None
            try:
                asm.op(ins.op, a, b, dst=dst, clr=ins.clr)
            except AsmError as e:   # a scheduler bug, never a user error
                raise AssertionError(f"PE {pe} slot {s}: {e}") from None
        instrs.append(list(asm.instrs))
        programs.append(asm.words())
    preload = [{"D": {}, "M": {}, "I": {}} for _ in range(P)]
    for (pe, buf, key), q in S.preload.items():
        preload[pe][buf][amap[(pe, buf, key)]] = int(q)
    # ---------------------------------------------------------------- memory schedule
    sample_entries = [Entry(base=r * C, write=False, bcast=False, size=size)
                      for (r, start, size) in S.chunks]
    model_entries, model_image = [], []
    for r in range(S.rows):
        if mw_row[r] == 0:
            continue
        model_entries.append(Entry(base=r * C, write=False, bcast=True, size=C * mw_row[r]))
        for w in range(C * mw_row[r]):
            pe, a = r * C + w % C, w // C
            vs = per_pe_model[pe]
            model_image.append((pe, a, vs[a]) if a < len(vs) else None)
    arr_of = {int(v): k for k, ids in graph.model.items() for v in np.asarray(ids).ravel()}
    agg_op = {k: (getattr(graph, "aggregate", {}) or {}).get(k, ("mean",))[0] for k in graph.model}
    aggregation = [(pe, a, S.model_names.get(v), v, agg_op.get(arr_of.get(v), "mean"))
                   for v, (pe, a) in sorted(model_addr.items(), key=lambda kv: kv[1])]
    data_addr = {v: (pe, key[1]) for v, (pe, key) in S.data_key.items()}
    ops = op_count(graph)
    stats = {"length": S.length, "cycles_compute": S.length + DONE_OFFSET,
             "critical_path": critical_path_bound(graph, fmt, bypass, S.rows), "ops": ops,
             "ops_per_pe": -(-ops // P), "transfers": dict(S.transfers),
             "transfers_total": sum(S.transfers.values()), "slots_used": S.slots_used,
             "tree_depth": tree_depth(S.rows), "mapper": mapper,
             "dot_group": getattr(graph, "dot_group", None), "recompute": recompute}
    return Compiled(plan=plan, sched=S, fmt=fmt, pe_cfg=cfg, programs=programs, instrs=instrs,
                    preload=preload,
                    tree=[(c + TREE_CYCLE_SHIFT, op, src, dst) for c, op, src, dst in S.tree],
                    sample_entries=sample_entries,
                    model_entries=model_entries, model_image=model_image, sample=S.sample,
                    sample_words=len(S.sample), data_addr=data_addr, model_addr=model_addr,
                    aggregation=aggregation, length=S.length, usage=need, stats=stats)


# ---------------------------------------------------------------------- files
def _cfg_dict(cfg):
    return {k: getattr(cfg, k) for k in cfg.__dataclass_fields__}


def load_cycles(comp, threads=None) -> int:
    """Memory beats one sample takes for all threads (the unit walks the entries
    round-robin over the threads, one beat per cycle) -- the cycles loading would cost
    with the PEs idle; the accelerator RTL delivers the next sample while the PEs compute
    (cosmic_pe DBUF=1, :func:`tablac.machine.sample_period`)."""
    T = comp.plan.threads if threads is None else threads
    L = comp.plan.columns
    return T * sum(-(-e.size // L) for e in comp.sample_entries)


def write_outputs(comp, outdir, graph=None, *, source="<input>"):
    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    cfg = comp.pe_cfg
    width = -(-cfg.instr_w // 4)
    files = []
    mdir = out / "microcode"
    mdir.mkdir(exist_ok=True)
    for pe, words in enumerate(comp.programs):
        p = mdir / f"pe{pe:03d}.hex"
        p.write_text("".join(f"{w:0{width}x}\n" for w in words))
        files.append(p)
    asm_txt = []
    for pe, ins in enumerate(comp.instrs):
        asm_txt.append(f"# PE {pe}")
        for k, i in enumerate(ins):
            if i.op:
                asm_txt.append(f"{k:5d}: {_disasm(i)}")
    (out / "microcode.asm").write_text("\n".join(asm_txt) + "\n")
    msu = {"lanes": comp.plan.columns,
           "sample_entries": [{"base": e.base, "write": e.write, "bcast": e.bcast, "size": e.size,
                               "word": f"0x{e.encode():08x}"} for e in comp.sample_entries],
           "model_entries": [{"base": e.base, "write": e.write, "bcast": e.bcast, "size": e.size,
                              "word": f"0x{e.encode():08x}"} for e in comp.model_entries]}
    (out / "memory_schedule.json").write_text(json.dumps(msu, indent=1) + "\n")
    table = [{"thread": t, "pe_offset": comp.plan.pe_offset(t),
              "mem_addr": "model_words + t * samples_per_thread * sample_words"}
             for t in range(comp.plan.threads)]
    (out / "thread_table.json").write_text(json.dumps(
        {"model_words": len(comp.model_image), "sample_words": comp.sample_words,
         "threads": table}, indent=1) + "\n")
    g = graph
    name = (lambda v: None if v is None else (g.nodes[v].name if g is not None else str(v)))
    layout = {
        "model_region": {"addr": 0, "words": [None if m is None else
                                               {"pe": m[0], "addr": m[1], "name": name(m[2])}
                                               for m in comp.model_image]},
        "data_region": {"addr": len(comp.model_image), "sample_words": comp.sample_words,
                        "sample": [name(v) for v in comp.sample],
                        "per_thread": "contiguous samples, thread t after thread t-1"},
        "data_map": {name(v): {"pe": pe, "addr": a} for v, (pe, a) in comp.data_addr.items()},
        "preload": [{b: {str(k): v for k, v in d.items()} for b, d in p.items()}
                    for p in comp.preload],
    }
    (out / "layout.json").write_text(json.dumps(layout, indent=1) + "\n")
    agg = {"rule": {"mean": "sat(floor((sum_t w_t + T//2) / T)) (golden.sgd.average_fx)",
                    "sum": "sat(sum_t w_t) (exact sum, one saturation)"},
           "when": "after every round (each thread's sub-partition)",
           "words": [{"pe": pe, "addr": a, "name": n, "op": op}
                     for pe, a, n, _, op in comp.aggregation]}
    (out / "aggregation.json").write_text(json.dumps(agg, indent=1) + "\n")
    (out / "tree_bus.json").write_text(json.dumps(
        {"depth": comp.stats["tree_depth"],
         "program": [{"cycle": c, "op": op, "src_rows": list(s), "dst_rows": list(d)}
                     for c, op, s, d in comp.tree]}, indent=1) + "\n")
    (out / "pe_config.json").write_text(json.dumps(_cfg_dict(cfg), indent=1) + "\n")
    (out / "report.txt").write_text(report(comp, source=source))
    return out


def _disasm(i: Instr) -> str:
    name = OP_NAMES.get(i.op, f"op{i.op}")
    src = ["D{ra_d}", "M{ra_m}", "I{ra_i}", "L", "R", "BUS", "ZERO", "ONE"]
    f = i.__dict__
    a = src[i.src_a].format(**f)
    b = "" if name in ("pass", "sigmoid", "gauss", "recip", "log") else " " + src[i.src_b].format(**f)
    dst = []
    if i.wb:
        dst.append(["", "D", "M", "I"][i.wb] + str(i.wa))
    for bit, n in ((1, "L"), (2, "R"), (4, "B")):
        if i.out & bit:
            dst.append(n)
    return f"{name}{'.clr' if i.clr else ''} {a}{b} -> {' '.join(dst)}"


def report(comp, source="<input>") -> str:
    p, s = comp.plan, comp.stats
    lc = load_cycles(comp)
    lines = [
        f"tablac report for {source}",
        f"plan: {p.pes} PEs = {p.rows} rows x {p.columns} columns, {p.threads} thread(s) of "
        f"{p.rows_per_thread} row(s) ({p.pes_per_thread} PEs); mapper {s['mapper']}; "
        f"dot group {s['dot_group']}; recompute depth {s['recompute']}",
        *[f"  planner: {n}" for n in p.notes],
        f"PE: {comp.pe_cfg}",
        f"buffer words used (max over PEs): DATA {comp.usage['D']}, MODEL {comp.usage['M']}, "
        f"INTERIM {comp.usage['I']}",
        f"schedule: {comp.length} instructions per PE, {s['slots_used']} busy slots",
        f"cycles per training sample (per thread): compute {s['cycles_compute']} "
        f"(start to done) + load {lc} (memory beats, PEs idle) = {s['cycles_compute'] + lc}",
        f"lower bounds: critical path {s['critical_path']}, operations/PEs "
        f"{s['ops']}/{p.pes_per_thread} = {s['ops_per_pe']}",
        f"inter-PE transfers per sample: {s['transfers_total']} "
        f"(link {s['transfers']['link']}, row bus {s['transfers']['bus']}, "
        f"tree bus {s['transfers']['tree']})",
        f"memory schedule: {len(comp.sample_entries)} entries per sample, "
        f"{len(comp.model_entries)} broadcast entries for the model",
        f"memory layout: model region {len(comp.model_image)} words at 0, samples of "
        f"{comp.sample_words} words from {len(comp.model_image)}",
        f"aggregation: {len(comp.aggregation)} model words averaged over {p.threads} thread(s) "
        f"after every round",
    ]
    return "\n".join(lines) + "\n"
