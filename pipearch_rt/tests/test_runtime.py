"""PipeArch-RT on the fast back end: every job's final model equals its stand-alone run
and the golden training function bit for bit, whatever the policy, interleaving or unit;
policies, migration, priority preemption and bad inputs behave as documented."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from golden import pipearch_isa as I
from pipearch_rt import workloads as W
from pipearch_rt.backend import FastBackend, run_sync
from pipearch_rt.costs import CostModel, estimate, run_features
from pipearch_rt.jobs import JobSpec, Rejected, build, pu_config
from pipearch_rt.runtime import Runtime

CFG = pu_config()
MEM = 1 << 20


def serve(specs, policy="fcfs", units=1, slot=None, migration=True, mem_bw=None, **kw):
    be = FastBackend(CFG, units, MEM, mem_bw=mem_bw)
    rt = Runtime(be, policy, slot=slot, migration=migration, **kw)
    ths = [rt.submit(s) for s in specs]
    rep = run_sync(rt.run())
    return rep, ths


def check_exact(th):
    """The correctness criterion: finished, model == golden == stand-alone run."""
    assert th.state == "finished", f"{th.spec.name}: {th.state} {th.reason}"
    gold = th.built.golden()
    r, alone = th.built.standalone()
    assert r.finished
    assert th.model is not None and np.array_equal(th.model, gold), \
        f"{th.spec.name}: model differs from the golden training run"
    assert np.array_equal(th.model, alone), f"{th.spec.name}: model differs from its stand-alone run"


def test_pu_config_is_the_default_netlist():
    from rtl_gen.pipearch import pipearch_pu as m
    from golden.pipearch_region import CONFIGS
    p = m.CORE.resolve({})
    assert CFG.lanes == p["LANES"] and CFG.depth == p["DEPTH"] and CFG.nregions == p["NREGIONS"]
    assert CFG.region_configs == tuple(CONFIGS[(p["CONFIGS"] >> 2 * r) & 3] for r in range(p["NREGIONS"]))


def test_checker_fails_on_a_wrong_model():
    rep, ths = serve([W.short("a", 1)])
    check_exact(ths[0])
    ths[0].model = ths[0].model.copy()
    ths[0].model[0] ^= 1
    with pytest.raises(AssertionError, match="golden"):
        check_exact(ths[0])


@pytest.mark.parametrize("policy,slot", [("fcfs", None), ("rr", 400), ("sjf", None)])
@pytest.mark.parametrize("units", [1, 2])
@pytest.mark.parametrize("migration", [True, False])
def test_policies_bit_exact(policy, slot, units, migration):
    rep, ths = serve(W.rtl_mix(), policy, units, slot, migration)
    for th in ths:
        check_exact(th)
    if policy == "fcfs":
        assert rep.switches == 0
    if not migration:
        for th in ths:
            assert th.units_used == [th.home], f"{th.spec.name} ran on {th.units_used}, bound to {th.home}"


def test_rr_preempts_and_migrates():
    rep, ths = serve(W.rtl_mix(), "rr", 2, 300)
    assert rep.switches >= 5
    assert any(len(t.runs) > 2 for t in ths), "no thread was preempted more than once"
    assert any(t.migrations >= 1 for t in ths), "no thread resumed on the other unit"
    for th in ths:
        check_exact(th)


def test_fcfs_runs_in_arrival_order_to_completion():
    rep, ths = serve(W.rtl_mix(), "fcfs", 1)
    assert rep.order == [s.name for s in W.rtl_mix()]
    assert all(len(t.runs) == 1 for t in ths)


def test_sjf_runs_shortest_estimate_first():
    specs = W.rtl_mix()
    rep, ths = serve(specs, "sjf", 1)
    est = {t.spec.name: t.est for t in ths}
    assert rep.order == sorted(est, key=lambda n: (est[n], [s.name for s in specs].index(n)))
    f, _ = serve(specs, "fcfs", 1)
    assert rep.median < f.median


def test_sjf_preempts_a_longer_running_job():
    specs = [JobSpec("L", "sgd", dict(m=96, n=32, partition=4), seed=1), W.short("S", 3, arrival=800)]
    rep, ths = serve(specs, "sjf", 1)
    L, S = ths
    assert rep.order == ["S", "L"] and rep.switches == 1 and len(L.runs) == 2
    for th in ths:
        check_exact(th)
    rep2, _ = serve(specs, "fcfs", 1)
    assert rep2.order == ["L", "S"]


def test_priority_preemption():
    specs = W.rtl_priority_mix()
    for units in (1, 2):
        rep, ths = serve(specs, "fcfs", units)
        urgent = rep.by_name()["urgent"]
        assert rep.order[0] == "urgent" and rep.switches >= 1
        alone, _ = serve([specs[-1].with_(arrival=0)], "fcfs", 1)
        # completed about as fast as alone: the wait is the rest of a running job's partition
        assert urgent.completion < 2 * alone.end + 1500, (urgent.completion, alone.end)
        for th in ths:
            check_exact(th)
        rep_off, _ = serve(specs, "fcfs", units, priority_preemption=False)
        assert rep_off.by_name()["urgent"].completion > urgent.completion


def test_migration_rebalances_fcfs():
    specs = W.mix(4, seed=3, kinds=("short", "long"))
    on, _ = serve(specs, "fcfs", 2, migration=True)
    off, _ = serve(specs, "fcfs", 2, migration=False)
    assert on.total <= off.total


def test_stale_switch_request_suspends_the_next_thread():
    """A SWITCH written after the last YIELD stays pending (the hardware has no way to
    withdraw it): the next thread on that unit stops at its first YIELD."""
    be = FastBackend(CFG, 1, MEM, host_start=0)
    a = build(W.short("a", 1), CFG, 0)
    b = build(W.short("b", 2), CFG, 1 << 16)
    for x in (a, b):
        run_sync(be.place(x))
    run_sync(be.start(0, a))
    run_sync(be.wait(int(run_features(a.standalone()[0], a.job.asm.n, 16, True, be.costs).cycles) - 5))
    run_sync(be.switch(0))
    (ev,) = run_sync(be.wait(None))
    assert ev.status == "finished"
    run_sync(be.start(0, b))
    (ev,) = run_sync(be.wait(None))
    assert ev.status == "suspended"


def test_switch_suspends_at_the_next_yield_in_time():
    be = FastBackend(CFG, 1, MEM, host_start=0)
    a = build(W.long("a", 1), CFG, 0)
    run_sync(be.place(a))
    r, _ = a.standalone()
    rc = run_features(r, a.job.asm.n, 16, False, be.costs)
    assert len(rc.yields) == r.yields >= 2 and rc.yields == sorted(rc.yields)
    run_sync(be.start(0, a))
    run_sync(be.wait(int(rc.yields[0]) + 1))        # just after the first YIELD
    run_sync(be.switch(0))
    (ev,) = run_sync(be.wait(None))
    assert ev.status == "suspended" and ev.cycle >= int(rc.yields[1])


def test_shared_bandwidth_slows_units_down():
    specs = W.mix(2, seed=5, kinds=("short",))
    fast, _ = serve(specs, "fcfs", 2)
    slow, ths = serve(specs, "fcfs", 2, mem_bw=1.0)
    assert slow.total > 2 * fast.total
    for th in ths:
        check_exact(th)


# ---------------------------------------------------------------------- bad inputs
def test_bad_inputs_rejected_or_failed_others_served():
    rt = Runtime(FastBackend(CFG, 2, MEM), "rr", slot=500)
    good = [rt.submit(s) for s in W.rtl_mix()[:3]]
    bad_asm = rt.submit(W.bad_asm_spec())
    overlap = rt.submit(W.overlap_spec(good[0].built))
    own = rt.submit(JobSpec("own", "sgd", dict(m=8, n=8, partition=4), ctx_addr=rt.next_base + 0x2200,
                            base=rt.next_base))
    misaligned = rt.submit(JobSpec("mis", "sgd", dict(m=8, n=8, partition=4), ctx_addr=0x7FFF0004))
    unknown = rt.submit(JobSpec("what", "fft"))
    nofit = rt.submit(JobSpec("big", "sgd", dict(m=8, n=4096, partition=4)))
    fault = rt.submit(W.faulting_spec(CFG))
    good.append(rt.submit(W.short("late", 9, arrival=3000)))
    rep = run_sync(rt.run())
    assert bad_asm.state == "rejected" and "does not assemble" in bad_asm.reason and "nowhere" in bad_asm.reason
    assert overlap.state == "rejected" and "overlaps L0's area" in overlap.reason
    assert own.state == "rejected" and "overlaps its own" in own.reason, own.reason
    assert misaligned.state == "rejected" and "multiple of" in misaligned.reason
    assert unknown.state == "rejected" and "unknown job kind" in unknown.reason
    assert nofit.state == "rejected" and "the PU needs" in nofit.reason, nofit.reason
    assert fault.state == "failed" and "error code 1 (unknown opcode) at PC 2" in fault.reason
    for th in good:
        check_exact(th)


def test_unit_error_from_memory_fault():
    """A LOAD beyond memory: the unit reports E_AXI; the job fails, the next one runs."""
    from golden.pipearch_asm import Program, acc
    p = Program(CFG, "axi")
    p.load(acc(4), (MEM // CFG.line_bytes) + 64, regions=[3])
    p.end()
    specs = [JobSpec("axi", "image", image=bytes(p.assemble().image)), W.short("ok", 4)]
    rep, (bad, ok) = serve(specs, "fcfs", 1)
    assert bad.state == "failed" and f"error code {I.E_AXI}" in bad.reason and "AXI" in bad.reason
    check_exact(ok)


def test_rr_needs_a_slot():
    with pytest.raises(ValueError, match="time slot"):
        Runtime(FastBackend(CFG, 1, MEM), "rr")
    with pytest.raises(ValueError, match="policy"):
        Runtime(FastBackend(CFG, 1, MEM), "lottery")


def test_estimate_orders_lengths():
    e = {k: estimate(build(f(k, 1), CFG, 0)) for k, f in W.KINDS.items()}
    assert e["short"] < e["long"]


# ---------------------------------------------------------------------- random mixes
def _spec(draw, i):
    kind = draw(st.sampled_from(["sgd", "sgd_mb", "sgd_block", "scd", "lrmf"]))
    seed = draw(st.integers(0, 1 << 16))
    ep = draw(st.integers(1, 2))
    pri = draw(st.sampled_from([0, 0, 0, 1, 3]))
    arr = draw(st.sampled_from([0, 0, 0, 200, 900, 2500]))
    common = dict(epochs=ep, seed=seed, priority=pri, arrival=arr)
    if kind.startswith("sgd"):
        P = draw(st.sampled_from([2, 4]))
        m = P * draw(st.integers(1, 3))
        n = draw(st.integers(1, 24))
        loss = draw(st.sampled_from(["ridge", "logistic"]))
        prm = dict(m=m, n=n, loss=loss, partition=P)
        if kind == "sgd_mb":
            prm.update(batch=2)
        if kind == "sgd_block":
            prm.update(stream=False)
        return JobSpec(f"j{i}", "sgd", prm, **common)
    if kind == "scd":
        P = draw(st.sampled_from([2, 4, 8]))
        return JobSpec(f"j{i}", "scd", dict(m=P * draw(st.integers(1, 3)), n=draw(st.integers(1, 8)),
                                             loss=draw(st.sampled_from(["lasso", "logistic"])), partition=P),
                       **common)
    m, u = draw(st.integers(1, 6)), draw(st.integers(1, 6))
    return JobSpec(f"j{i}", "lrmf", dict(m=m, u=u, d=draw(st.integers(1, 6)), nnz=draw(st.integers(1, m * u)),
                                          tile=draw(st.integers(1, 4))), **common)


@st.composite
def job_mixes(draw):
    n = draw(st.integers(1, 6))
    return [_spec(draw, i) for i in range(n)]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(specs=job_mixes(), policy=st.sampled_from(["fcfs", "rr", "sjf"]), units=st.integers(1, 4),
       slot=st.sampled_from([50, 300, 2000]), migration=st.booleans(), prio=st.booleans())
def test_random_mixes_bit_exact(specs, policy, units, slot, migration, prio):
    rep, ths = serve(specs, policy, units, slot if policy == "rr" else None, migration, priority_preemption=prio)
    for th in ths:
        if th.state == "rejected":          # a size the unit cannot hold: a reason, never a crash
            assert th.reason
            continue
        check_exact(th)
    assert len(rep.completions) == sum(t.state == "finished" for t in ths)


# ---------------------------------------------------------------------- cost model
def test_calibrated_model_predicts_rtl_cycles():
    """The committed fit reproduces every recorded RTL START within 3 %, and the ISS
    features recorded then are still what the programs produce now."""
    import json
    from pipearch_rt.costs import CALIBRATION
    from golden.pipearch_iss import Machine
    d = json.loads(CALIBRATION.read_text())
    m = CostModel.load()
    assert m.source.startswith("NNLS")
    specs = {s.name: s for s in W.calibration_set()}
    seen = set()
    for r in d["runs"]:
        pred = float(np.dot(r["features"], m.param_vector())) + r["stream"]
        assert abs(pred - r["cycles"]) <= 0.03 * r["cycles"], (r["job"], r["mode"], pred, r["cycles"])
        if r["mode"] == "plain" and r["job"] not in seen:
            seen.add(r["job"])
            b = build(specs[r["job"]], CFG, 0)
            res, _ = b.standalone()
            rc = run_features(res, b.job.asm.n, CFG.line_bytes, bool(b.job.info.get("stream")), m)
            assert rc.features.tolist() == r["features"], r["job"]
    assert seen == set(specs)
    bad = CostModel.load()
    bad.lat = {k: v + 40 for k, v in bad.lat.items()}
    r = d["runs"][0]
    assert abs(float(np.dot(r["features"], bad.param_vector())) + r["stream"] - r["cycles"]) > 0.03 * r["cycles"]
