"""Functional coverage model of cosmic_pe (testplan: verif/cosmic_pe/testplan.yaml).

Sampled by verif/cosmic_pe/test_cosmic_pe.py on what the DUT did:
* ``sample_run`` (each class once per simulation): after the DUT pulsed ``done`` for a program (at the cycle the golden
  timing says, err read from the pins), every instruction it retired: opcode, operand
  sources, write-back target, mac clr, the read-after-write distance of each buffer
  operand, and the arithmetic class of each result (rounding, saturation, nonlinear
  domain) from the operand values the instruction read (``PEModel`` steps, whose
  outputs/buffers the scoreboard compares with the DUT's);
* ``sample_err``: the ``err`` pins after done (each sticky bit, or none);
* ``sample_output``: every ``*_out_valid`` strobe the monitor saw;
* ``sample_start``: every start pulse with the ``busy`` pin in the cycle it was given.
"""
from __future__ import annotations

from verif.funcov import CoverModel, enabled

COV = CoverModel("cosmic_pe")

OPNAMES = ["nop", "add", "sub", "mul", "mac", "lt", "gt", "min", "max", "pass",
           "sigmoid", "gauss", "recip", "log", "illegal14", "illegal15"]
SRCNAMES = ["DATA", "MODEL", "INTERIM", "left_in", "right_in", "bus_in", "zero", "one"]
BINARY = {"add", "sub", "mul", "mac", "lt", "gt", "min", "max"}
NL = ("sigmoid", "gauss", "recip", "log")
ROUND = ["exact", "down", "up", "tie_pos", "tie_neg"]
SAT = ["none", "pos", "neg"]

COV.point("opcode", values=OPNAMES, doc="opcode of every retired instruction (14/15 illegal)")
COV.point("src_a", values=SRCNAMES, doc="operand A source of every retired non-nop instruction")
COV.point("src_b", values=SRCNAMES, doc="operand B source of every retired binary instruction")
COV.point("writeback", values=["none", "DATA", "MODEL", "INTERIM"],
          doc="buffer written by an instruction that produced a result")
COV.point("output", values=["left", "right", "bus"], doc="*_out_valid strobes seen on the pins")
COV.point("err", values=["none", "illegal", "nl_absent", "bad_len"], doc="err pins after done")
COV.point("mac_clr", values=["clr", "accumulate"], doc="mac with clr (new dot product) and without")
COV.point("raw_distance", values=["d1", "d2", "d3", "d4", "d5plus"],
          doc="a buffer operand read k slots after the last write of that word in the program "
              "(d1..d4: the bypass window with BYPASS=1, the exposed pipeline with BYPASS=0)")
COV.point("mul_round", values=ROUND, doc="mul: discarded fraction of the full product")
COV.point("mul_sat", values=SAT, doc="mul: rounded product above max / below min")
COV.point("mac_round", values=ROUND, doc="mac: discarded fraction of the wide accumulator")
COV.point("mac_sat", values=SAT, doc="mac: rounded accumulator outside the word")
COV.point("acc_sat", values=SAT, doc="mac: the accumulator itself clipped at its guard-bit rails")
COV.point("add_sat", values=SAT, doc="add: exact sum outside the word")
COV.point("sub_sat", values=SAT, doc="sub: exact difference outside the word")
COV.point("compare", values=["a_lt_b", "a_eq_b", "a_gt_b"], doc="lt/gt/min/max operand order")
COV.point("nl_domain", values=[f"{n}_{w}" for n in NL for w in ("below", "inside", "above")],
          doc="nonlinear input below, inside and above the function's domain (clamped outside)")
COV.point("start", values=["valid_len", "bad_len"], doc="start pulse by cfg_len legality")
COV.point("busy", values=["idle", "busy"], doc="busy pin in the cycle start was given")
COV.cross("start_x_busy", ["start", "busy"], doc="start taken while idle, ignored while busy, bad cfg_len")
COV.point("len", {"one": lambda v: v == 1, "mid": lambda v: 1 < v < COV.p["SCHED_DEPTH"],
                  "max": lambda v: v == COV.p["SCHED_DEPTH"], "zero": lambda v: v == 0,
                  "over": lambda v: v > COV.p["SCHED_DEPTH"]},
          doc="cfg_len of every start given while idle")


def _round(v: int, F: int) -> str:
    fr = v & ((1 << F) - 1)
    half = 1 << (F - 1)
    if fr == 0:
        return "exact"
    if fr != half:
        return "down" if fr < half else "up"
    return "tie_pos" if v > 0 else "tie_neg"


def _sat(v: int, fmt) -> str:
    return "pos" if v > fmt.max_int else "neg" if v < fmt.min_int else "none"


def _domain(table) -> tuple[int, int]:
    if hasattr(table, "lo"):
        return int(table.lo), int(table.hi)
    r = int(table.x_range) << table.fmt.F
    return -r, r


def sample_start(cfg_len: int, busy: int, depth: int):
    ok = 1 <= cfg_len <= depth
    COV.sample_cross("start_x_busy", "valid_len" if ok else "bad_len", "busy" if busy else "idle")
    if not busy:
        COV.sample("len", cfg_len)


def sample_err(err: int):
    if not err:
        COV.sample("err", "none")
    for bit, name in enumerate(("illegal", "nl_absent", "bad_len")):
        if err >> bit & 1:
            COV.sample("err", name)


def sample_output(port: str):
    COV.sample("output", port)


_TABLES: dict = {}
_SEEN: set = set()        # (point, label) sampled by sample_run in this process (each once)
RUN_POINTS = ("opcode", "src_a", "src_b", "writeback", "mac_clr", "raw_distance", "mul_round", "mul_sat",
              "mac_round", "mac_sat", "acc_sat", "add_sat", "sub_sat", "compare", "nl_domain")


def sample_run(cfg, words, res):
    """Every instruction of a program the DUT ran to done (``res``: PEModel.run of it)."""
    if not enabled() or all((p, lb) in _SEEN for p in RUN_POINTS for lb in COV.points[p].labels):
        return
    from golden.cosmic_pe import Instr, nl_tables
    key = (cfg.fmt.W, cfg.fmt.F, cfg.NL)
    if key not in _TABLES:
        _TABLES[key] = nl_tables(cfg.fmt, cfg.NL)
    tables = _TABLES[key]
    fmt = cfg.fmt
    F = fmt.F
    last_write = {}                                   # (buffer code, address) -> slot
    depth = {1: cfg.DATA_DEPTH, 2: cfg.MODEL_DEPTH, 3: cfg.INTERIM_DEPTH}
    acc = 0
    lim = 1 << (cfg.acc_w - 1)
    seen = _SEEN

    def hit(point, label):
        if (point, label) not in seen:
            seen.add((point, label))
            COV.sample(point, label)

    for k, (w, st) in enumerate(zip(words, res.steps)):
        ins = Instr.decode(int(w), cfg)
        name = OPNAMES[ins.op]
        hit("opcode", name)
        if name == "nop" or name.startswith("illegal"):
            continue
        used = [ins.src_a] + ([ins.src_b] if name in BINARY else [])
        hit("src_a", SRCNAMES[ins.src_a])
        if name in BINARY:
            hit("src_b", SRCNAMES[ins.src_b])
        for s in set(used):
            if s < 3:
                code = s + 1
                a = (ins.ra_d, ins.ra_m, ins.ra_i)[s] & (depth[code] - 1)
                if (code, a) in last_write:
                    d = k - last_write[(code, a)]
                    hit("raw_distance", f"d{d}" if d < 5 else "d5plus")
        if st.result is None:
            continue
        hit("writeback", ["none", "DATA", "MODEL", "INTERIM"][ins.wb])
        if ins.wb:
            last_write[(ins.wb, ins.wa & (depth[ins.wb] - 1))] = k
        a, b = st.a, st.b
        if name == "mul":
            p = a * b
            hit("mul_round", _round(p, F))
            hit("mul_sat", _sat((p + (1 << (F - 1))) >> F, fmt))
        elif name == "mac":
            hit("mac_clr", "clr" if ins.clr else "accumulate")
            raw = (0 if ins.clr else acc) + a * b
            acc = max(-lim, min(lim - 1, raw))
            hit("acc_sat", "pos" if raw > lim - 1 else "neg" if raw < -lim else "none")
            hit("mac_round", _round(acc, F))
            hit("mac_sat", _sat((acc + (1 << (F - 1))) >> F, fmt))
        elif name in ("add", "sub"):
            hit(f"{name}_sat", _sat(a + b if name == "add" else a - b, fmt))
        elif name in ("lt", "gt", "min", "max"):
            hit("compare", "a_lt_b" if a < b else "a_gt_b" if a > b else "a_eq_b")
        elif name in NL and name in tables:
            lo, hi = _domain(tables[name])
            hit("nl_domain", f"{name}_" + ("below" if a < lo else "above" if a >= hi else "inside"))
