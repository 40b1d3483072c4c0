"""The CoSMIC Planner (CoSMIC section 4.4): how many threads, rows and columns of PEs.

A *plan* fixes the shape of the multi-threaded template accelerator a program is compiled
for: ``columns`` PEs per row (= words the memory interface delivers per cycle, the memory
schedule unit's ``LANES``), ``rows`` rows in total, ``threads`` worker threads that each
own ``rows_per_thread`` consecutive rows (``pes_per_thread = rows_per_thread * columns``
PEs, thread ``t``'s first PE is ``t * pes_per_thread``, its PE Offset in the Thread Index
Table), and the largest buffer and schedule-memory depth a PE may have.

Two ways in:

* :func:`plan_target` from a target description (CoSMIC 4.4)::

      {"dsps": 6840, "brams": 2160, "bram_words": 1024,     # words of W bits per BRAM
       "bandwidth_words": 4, "minibatch": 64,
       "threads": null}                                      # optional: force a count

  ``columns = bandwidth_words`` (fewer would waste bandwidth), ``row_max = dsps //
  columns`` (one DSP per PE), ``t_max = min(storage // dfg_storage, row_max,
  minibatch)`` with ``storage = brams * bram_words`` and ``dfg_storage`` the words one
  thread keeps on chip (:func:`dfg_storage`).  Threads = ``t_max`` (or the requested
  count, checked against it); the rows are split evenly (``rows_per_thread = row_max //
  threads``, rows left over stay unused) and each PE gets ``storage / PEs`` words,
  split over its three buffers and rounded down to powers of two.

* :func:`plan_pes` from ``--pes N --threads T``: ``columns = min(4, N)`` (the default
  memory schedule unit width), ``rows = N / columns``; ``T`` must divide the rows.

Everything infeasible raises :class:`tablac.errors.CompileError` with the reason.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass

from .errors import CompileError

MAX_DEPTH = 4096          # cosmic_pe buffer / schedule depth limit (generator range)
MIN_DEPTH = 16


@dataclass(frozen=True)
class Plan:
    columns: int
    rows: int
    threads: int
    rows_per_thread: int
    max_buffer_depth: int = 256     # per buffer (DATA, MODEL, INTERIM), power of two
    max_sched_depth: int = 4096
    minibatch: int | None = None
    source: str = "pes"             # "pes" or "target"
    notes: tuple = ()

    @property
    def pes(self) -> int:
        return self.rows * self.columns

    @property
    def pes_per_thread(self) -> int:
        return self.rows_per_thread * self.columns

    def pe_offset(self, t: int) -> int:
        return t * self.pes_per_thread

    def to_json(self) -> dict:
        d = asdict(self)
        d["pes"] = self.pes
        d["pes_per_thread"] = self.pes_per_thread
        d["notes"] = list(self.notes)
        return d


def _pos_int(v, what, file="<plan>"):
    if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
        raise CompileError(f"{what} must be a positive integer, got {v!r}", file)
    return v


def _pow2_floor(n: int) -> int:
    return 1 << (n.bit_length() - 1) if n > 0 else 0


def dfg_storage(graph) -> int:
    """On-chip words one worker thread needs for ``graph``: one training sample (inputs
    and labels), the model, the constants and one word per intermediate node (an upper
    bound: the allocator reuses nothing)."""
    return len(graph.nodes)


def plan_pes(pes, threads=1, *, columns=None, max_buffer_depth=MAX_DEPTH,
             file="<plan>") -> Plan:
    pes = _pos_int(pes, "--pes", file)
    threads = _pos_int(threads, "--threads", file)
    cols = min(4, pes) if columns is None else _pos_int(columns, "columns", file)
    if cols & (cols - 1) or cols < 2:
        raise CompileError(f"columns = {cols} must be a power of two >= 2 (the memory "
                           "schedule unit delivers LANES >= 2 words per beat)", file)
    if pes % cols:
        raise CompileError(f"--pes {pes} is not a multiple of the {cols} columns "
                           "(PEs are allocated in whole rows)", file)
    rows = pes // cols
    if rows % threads:
        raise CompileError(f"--threads {threads} does not divide the {rows} rows of "
                           f"{cols} PEs (each thread owns whole rows, CoSMIC 5.2)", file)
    return Plan(columns=cols, rows=rows, threads=threads, rows_per_thread=rows // threads,
                max_buffer_depth=max_buffer_depth, source="pes")


TARGET_KEYS = {"dsps", "brams", "bram_words", "bandwidth_words", "minibatch", "threads"}


def load_target(path) -> dict:
    try:
        with open(path) as f:
            t = json.load(f)
    except (OSError, ValueError) as e:
        raise CompileError(f"cannot read target description: {e}", str(path)) from None
    if not isinstance(t, dict):
        raise CompileError("target description must be a JSON object", str(path))
    return t


def plan_target(target: dict, graph=None, *, storage_words=None, file="<target>") -> Plan:
    """CoSMIC 4.4 from a target description (see the module docstring)."""
    unknown = set(target) - TARGET_KEYS
    if unknown:
        raise CompileError(f"unknown target field(s) {sorted(unknown)}; known: "
                           f"{sorted(TARGET_KEYS)}", file)
    for k in ("dsps", "brams", "bram_words", "bandwidth_words", "minibatch"):
        if k not in target:
            raise CompileError(f"target description lacks '{k}'", file)
        _pos_int(target[k], k, file)
    cols = target["bandwidth_words"]
    if cols & (cols - 1) or cols < 2:
        raise CompileError(f"bandwidth_words = {cols}: the memory interface delivers a "
                           "power-of-two number (>= 2) of words per beat", file)
    row_max = target["dsps"] // cols
    if row_max < 1:
        raise CompileError(f"{target['dsps']} DSPs cannot fill one row of {cols} PEs "
                           f"(one DSP per PE)", file)
    storage = target["brams"] * target["bram_words"]
    need = storage_words if storage_words is not None else (
        dfg_storage(graph) if graph is not None else 1)
    by_storage = storage // max(1, need)
    if by_storage < 1:
        raise CompileError(f"one thread needs {need} words on chip, the target has "
                           f"{storage} ({target['brams']} BRAMs x {target['bram_words']} words)",
                           file)
    t_max = min(by_storage, row_max, target["minibatch"])
    threads = target.get("threads")
    if threads is None:
        threads = t_max
    else:
        _pos_int(threads, "threads", file)
        if threads > t_max:
            raise CompileError(f"threads = {threads} exceeds t_max = {t_max} = min(storage/"
                               f"DFG storage = {by_storage}, row_max = {row_max}, "
                               f"mini-batch = {target['minibatch']})", file)
    rpt = row_max // threads
    rows = rpt * threads
    per_pe = storage // (rows * cols)
    depth = min(MAX_DEPTH, _pow2_floor(per_pe // 3)) if per_pe >= 3 else 0
    if depth < MIN_DEPTH:
        raise CompileError(f"{storage} on-chip words over {rows * cols} PEs leave {per_pe} words "
                           f"per PE: less than three {MIN_DEPTH}-word buffers", file)
    notes = (f"row_max = {target['dsps']} DSPs / {cols} columns = {row_max}",
             f"t_max = min({storage} / {need} = {by_storage}, {row_max}, "
             f"{target['minibatch']}) = {t_max}")
    return Plan(columns=cols, rows=rows, threads=threads, rows_per_thread=rpt,
                max_buffer_depth=depth, minibatch=target["minibatch"], source="target",
                notes=notes)
