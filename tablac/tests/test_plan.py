"""Planner (CoSMIC 4.4): shapes from --pes/--threads and from a target description."""
import json

import pytest

from tablac.errors import CompileError
from tablac.plan import load_target, plan_pes, plan_target

TARGET = {"dsps": 64, "brams": 96, "bram_words": 1024, "bandwidth_words": 4, "minibatch": 1000}


def test_pes_threads_shape():
    p = plan_pes(32, 2)
    assert (p.columns, p.rows, p.threads, p.rows_per_thread) == (4, 8, 2, 4)
    assert p.pes == 32 and p.pes_per_thread == 16
    assert [p.pe_offset(t) for t in range(2)] == [0, 16]
    q = plan_pes(2, 1)
    assert (q.columns, q.rows) == (2, 1)


@pytest.mark.parametrize("pes,threads,what", [
    (30, 1, "multiple of the 4 columns"), (32, 3, "does not divide the 8 rows"),
    (0, 1, "positive integer"), (8, True, "positive integer"), (1, 1, "power of two >= 2")])
def test_pes_errors(pes, threads, what):
    with pytest.raises(CompileError, match=what):
        plan_pes(pes, threads)


def test_target_formula():
    # columns = bandwidth, row_max = DSPs / columns = 16, storage / DFG storage = 98304 /
    # 1000 = 98, mini-batch 1000 -> t_max = 16 threads of one row
    p = plan_target(TARGET, storage_words=1000)
    assert (p.columns, p.rows, p.threads, p.rows_per_thread) == (4, 16, 16, 1)
    # storage binds: 98304 / 20000 = 4 threads, rows split 16 / 4 = 4 per thread
    p = plan_target(TARGET, storage_words=20000)
    assert (p.threads, p.rows_per_thread, p.rows) == (4, 4, 16)
    # mini-batch binds
    p = plan_target(dict(TARGET, minibatch=2), storage_words=100)
    assert (p.threads, p.rows_per_thread) == (2, 8)
    # a requested thread count below t_max; 16 rows // 3 = 5 rows each, one row unused
    p = plan_target(dict(TARGET, threads=3), storage_words=100)
    assert (p.threads, p.rows_per_thread, p.rows) == (3, 5, 15)
    # buffer depth: 98304 words / 64 PEs = 1536 per PE -> three 512-word buffers
    assert plan_target(TARGET, storage_words=100).max_buffer_depth == 512


@pytest.mark.parametrize("change,what", [
    ({"dsps": 3}, "cannot fill one row"), ({"bandwidth_words": 3}, "power-of-two"),
    ({"threads": 17}, "exceeds t_max"), ({"brams": 0}, "positive integer"),
    ({"speed": 1}, "unknown target field"), ({"bram_words": 1, "brams": 1}, "needs 100 words")])
def test_target_errors(change, what):
    with pytest.raises(CompileError, match=what):
        plan_target(dict(TARGET, **change), storage_words=100)


def test_target_missing_field_and_file(tmp_path):
    t = dict(TARGET)
    del t["minibatch"]
    with pytest.raises(CompileError, match="lacks 'minibatch'"):
        plan_target(t, storage_words=10)
    f = tmp_path / "t.json"
    f.write_text(json.dumps(TARGET))
    assert load_target(f) == TARGET
    f.write_text("{")
    with pytest.raises(CompileError, match="cannot read target"):
        load_target(f)
