"""Code generation: microcode in cosmic_pe's encoding, memory schedule and layout that
the golden memory schedule unit turns into the data map, hazards, and the errors."""
import numpy as np
import pytest

import tablac
from golden.cosmic_msu import entry_error, plan as msu_plan, run as msu_run
from golden.cosmic_pe import Instr, pad_hazards
from tablac.codegen import compile_graph
from tablac.errors import CompileError
from tablac.plan import Plan, plan_pes


def logistic(m=12, G=3):
    return tablac.load(tablac.program_path("logistic"), overrides={"m": m}, dot_group=G)


def test_microcode_round_trips_golden_encoding():
    comp = compile_graph(logistic(), plan_pes(8, 1))
    cfg = comp.pe_cfg
    assert len(comp.programs) == 8 and cfg.SCHED_DEPTH >= comp.length
    for words, ins in zip(comp.programs, comp.instrs):
        assert len(words) == comp.length
        for w, i in zip(words, ins):
            assert 0 <= w < 1 << cfg.instr_w
            assert Instr.decode(w, cfg) == i and i.encode(cfg) == w
    # the committed netlist's parameters are used when they suffice
    assert (cfg.DATA_DEPTH, cfg.MODEL_DEPTH, cfg.INTERIM_DEPTH, cfg.SCHED_DEPTH) == (256, 256, 256, 1024)
    assert cfg.instr_w == 48 and cfg.NL == 1        # sigmoid only


def test_memory_schedule_delivers_the_data_map():
    g = logistic(m=13, G=2)
    comp = compile_graph(g, plan_pes(16, 2))
    mc = comp.msu_config()
    for e in comp.sample_entries + comp.model_entries:
        assert entry_error(e.encode(), mc.NPE) == 0
    assert not any(e.bcast for e in comp.sample_entries)
    assert all(e.bcast for e in comp.model_entries)
    # a memory whose every data word is its own index; thread t's first sample
    base = len(comp.model_image)
    n = comp.sample_words
    mem = np.arange(base + 2 * n)
    table = comp.thread_table(1)
    p = msu_plan(mc, comp.sample_entries, [a for a, _ in table], [o for _, o in table])
    res = msu_run(mc, p, mem)
    got = {}
    ptr = {}
    for pe, words, k, _ in res.beats:
        for i in range(k):
            a = ptr.get(pe + i, 0)
            got[(pe + i, a)] = words[i]
            ptr[pe + i] = a + 1
    assert len(got) == 2 * n
    for t in range(2):
        for w, v in enumerate(comp.sample):
            if v is None:
                continue
            pe, a = comp.data_addr[v]
            assert got[(t * comp.pes + pe, a)] == base + t * n + w
    # the sample vector is the natural layout: x[0..m-1] then y
    names = [g.nodes[v].name for v in comp.sample]
    assert names == [f"x[{i}]" for i in range(13)] + ["y"]


def test_model_region_covers_every_model_word_once():
    comp = compile_graph(logistic(), plan_pes(8, 1))
    placed = [m for m in comp.model_image if m is not None]
    assert sorted(m[2] for m in placed) == sorted(comp.model_addr)
    assert {(m[0], m[1]) for m in placed} == set(comp.model_addr.values())
    assert len(comp.aggregation) == 12


def test_no_bypass_schedule_respects_hazard_distance():
    comp = compile_graph(logistic(), plan_pes(8, 1), bypass=0)
    for ins in comp.instrs:
        assert pad_hazards(ins) == ins       # golden inserts no nop: none needed
    comp1 = compile_graph(logistic(), plan_pes(8, 1), bypass=1)
    assert any(pad_hazards(ins) != ins for ins in comp1.instrs)   # the check can fail


def test_errors():
    g = logistic(m=40, G=2)
    small = Plan(columns=2, rows=1, threads=1, rows_per_thread=1, max_buffer_depth=16)
    with pytest.raises(CompileError, match="does not fit the PE buffers"):
        compile_graph(g, small)
    short = Plan(columns=4, rows=2, threads=1, rows_per_thread=2, max_sched_depth=8)
    with pytest.raises(CompileError, match="schedule needs"):
        compile_graph(g, short)
    with pytest.raises(CompileError, match="unknown mapper"):
        compile_graph(g, plan_pes(8, 1), mapper="greedy")
    big = tablac.load(tablac.program_path("linear"), overrides={"m": 300})
    with pytest.raises(CompileError, match="300 terms exceeds the 256-term"):
        compile_graph(big, plan_pes(8, 1))
