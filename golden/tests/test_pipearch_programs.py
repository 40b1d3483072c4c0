"""PipeArch program library on the ISS against the independent bit-true golden models
(golden.sgd / golden.scd / golden.lrmf, Q32.16): final models bit for bit, and the
model after every epoch (loss-per-epoch trajectory)."""
import numpy as np
import pytest

from golden import lrmf as lrmf_mod
from golden import scd as scd_mod
from golden import sgd as sgd_mod
from golden.fixedpoint import QFormat
from golden.pipearch_asm import PUConfig
from golden.pipearch_iss import Machine, Memory
import golden.pipearch_programs as progs
from golden.pipearch_programs import lrmf_job, lrmf_slots, run_epochs, run_to_end, scd_job, sgd_job

FMT = QFormat(32, 16)
SEED = 7331


def cfg_for(lanes):
    return PUConfig(lanes=lanes, nregions=6, depth=512, amem_depth=128)


def machine(job, lanes, *data, **kw):
    mem = Memory(job.end, lanes)
    job.load(mem, *data, **kw)
    return Machine(job.cfg, mem), mem


# ---------------------------------------------------------------------------------
# SGD
# ---------------------------------------------------------------------------------
def sgd_data(loss, m=24, n=7, epochs=3, seed=SEED):
    rng = np.random.default_rng(seed)
    A = rng.uniform(-1, 1, (m, n))
    z = A @ rng.normal(size=n)
    b = z + 0.1 * rng.normal(size=m) if loss == "ridge" else (z > 0).astype(float)
    order = np.array([rng.permutation(m) for _ in range(epochs)])
    return A, b, order


@pytest.mark.parametrize("lanes", [1, 4, 16])
@pytest.mark.parametrize("loss", ["ridge", "logistic"])
@pytest.mark.parametrize("batch,partition", [(1, 24), (3, 6)])
def test_sgd_bit_exact(lanes, loss, batch, partition):
    A, b, order = sgd_data(loss)
    x0 = np.random.default_rng(SEED + 1).uniform(-0.5, 0.5, 7)
    job = sgd_job(m=24, n=7, loss=loss, alpha=0.25, lam2=0.02, epochs=3, batch=batch,
                  partition=partition, cfg=cfg_for(lanes))
    m, mem = machine(job, lanes, A, b, order, x0=x0)
    r = job.start(m)
    assert r.finished and r.yields == 3 * 24 // partition
    gold = sgd_mod.sgd(A, b, loss=loss, alpha=0.25, lam2=0.02, epochs=3, order=order,
                       batch=batch, x0=x0, fmt=FMT)
    got = job.model(mem)
    assert np.array_equal(got, gold.x), (got - gold.x)
    assert not np.array_equal(got, FMT.to_fixed(x0))


def test_sgd_same_order_every_epoch_single_copy():
    A, b, order = sgd_data("ridge")
    order[:] = order[0]
    job = sgd_job(m=24, n=7, loss="ridge", alpha=0.25, lam2=0.0, epochs=3, batch=2,
                  partition=8, reshuffle=False, cfg=cfg_for(4))
    assert job.areas["a"][1] == 24 * 2
    m, mem = machine(job, 4, A, b, order)
    assert job.start(m).finished
    gold = sgd_mod.sgd(A, b, loss="ridge", alpha=0.25, lam2=0.0, epochs=3, order=order, batch=2, fmt=FMT)
    assert np.array_equal(job.model(mem), gold.x)
    with pytest.raises(ValueError, match="same order"):
        job.load(Memory(job.end, 4), A, b, sgd_data("ridge")[2])


def test_sgd_loss_per_epoch_trajectory():
    A, b, order = sgd_data("logistic", epochs=4)
    job = sgd_job(m=24, n=7, loss="logistic", alpha=0.5, lam2=0.01, epochs=4, batch=2,
                  partition=12, cfg=cfg_for(4))
    m, mem = machine(job, 4, A, b, order)
    models = run_epochs(job, m)
    gold = sgd_mod.sgd(A, b, loss="logistic", alpha=0.5, lam2=0.01, epochs=4, order=order, batch=2, fmt=FMT)
    ref = sgd_mod.sgd(A, b, loss="logistic", alpha=0.5, lam2=0.01, epochs=4, order=order, batch=2)
    for e in range(4):
        ge = sgd_mod.sgd(A, b, loss="logistic", alpha=0.5, lam2=0.01, epochs=e + 1,
                         order=order[:e + 1], batch=2, fmt=FMT)
        assert np.array_equal(models[e], ge.x), e
    losses = [job.objective(x) for x in models]
    assert losses == gold.loss
    assert np.allclose(losses, ref.loss, atol=5e-3)      # float64 reference trajectory
    assert losses[-1] < losses[0]
    assert np.array_equal(job.model(mem), gold.x)


STREAM_REGIONS = ("replicated", "type_replicated", "type_replicated", "regular")


def stream_cfg(lanes, depth=512, regions=STREAM_REGIONS):
    return PUConfig(lanes=lanes, nregions=4, depth=depth, amem_depth=128, region_configs=regions)


@pytest.mark.parametrize("lanes", [1, 4, 16])
@pytest.mark.parametrize("loss", ["ridge", "logistic"])
@pytest.mark.parametrize("n", [7, 40])
def test_sgd_stream_bit_exact_and_preemptable(lanes, loss, n):
    """The streamed batch-1 program equals golden.sgd, uninterrupted and when suspended
    at every YIELD (each resume refills the model ring from line 0)."""
    A, b, order = sgd_data(loss, n=n)
    x0 = np.random.default_rng(SEED + 1).uniform(-0.5, 0.5, n)
    gold = sgd_mod.sgd(A, b, loss=loss, alpha=0.25, lam2=0.02, epochs=3, order=order, x0=x0, fmt=FMT)
    for switch in (None, 1):
        job = sgd_job(m=24, n=n, loss=loss, alpha=0.25, lam2=0.02, epochs=3, partition=6,
                      cfg=stream_cfg(lanes))
        assert job.info["stream"] and job.name.endswith("_stream")
        m, mem = machine(job, lanes, A, b, order, x0=x0)
        rs = run_to_end(job, m) if switch is None else run_to_end(job, m, switch_at_yield=switch)
        assert len(rs) == (1 if switch is None else 1 + 3 * 24 // 6)
        assert np.array_equal(job.model(mem), gold.x)


def test_sgd_stream_ring_wraps_and_two_jobs_interleave():
    """DEPTH = 16: Dl = 3 (the model ring wraps mid-vector) and Dl = 4 (5-line sample
    blocks, the sample ring wraps mid-block); two streamed jobs (one with a single data
    copy) preempting each other at every YIELD on one machine."""
    cfg = stream_cfg(4, depth=16)
    A, b, order = sgd_data("ridge", m=8, n=11, epochs=2)
    A2, b2, order2 = sgd_data("logistic", m=8, n=13, epochs=2, seed=SEED + 5)
    order2[:] = order2[0]
    j1 = sgd_job(m=8, n=11, loss="ridge", alpha=0.25, lam2=0.02, epochs=2, partition=2, cfg=cfg)
    j2 = sgd_job(m=8, n=13, loss="logistic", alpha=0.25, lam2=0.02, epochs=2, partition=4, cfg=cfg,
                 reshuffle=False, base=-(-j1.end // 32) * 32)
    assert j1.info["stream"] and j2.info["stream"] and j2.areas["ab"][1] == (8 + 2) * 5
    mem = Memory(j2.end, 4)
    j1.load(mem, A, b, order)
    j2.load(mem, A2, b2, order2)
    mach = Machine(cfg, mem)
    done = [False, False]
    while not all(done):
        for k, j in enumerate((j1, j2)):
            if not done[k]:
                done[k] = j.start(mach, switch_at_yield=1).finished
    for j, (a_, b_, o_, loss) in ((j1, (A, b, order, "ridge")), (j2, (A2, b2, order2, "logistic"))):
        g = sgd_mod.sgd(a_, b_, loss=loss, alpha=0.25, lam2=0.02, epochs=2, order=o_, fmt=FMT)
        assert np.array_equal(j.model(mem), g.x)


def test_sgd_stream_choice_and_requirements():
    kw = dict(m=24, n=7, loss="ridge", alpha=0.25, lam2=0.02, epochs=1, partition=6)
    assert not sgd_job(**kw, cfg=cfg_for(4)).info["stream"]              # all regular: blocking
    assert not sgd_job(**kw, batch=2, cfg=stream_cfg(4)).info["stream"]  # mini-batch: blocking
    assert not sgd_job(**kw, cfg=stream_cfg(4), context_groups=False).info["stream"]
    assert not sgd_job(**kw, cfg=stream_cfg(4), stream=False).info["stream"]
    with pytest.raises(ValueError, match="region 1 must be type_replicated"):
        sgd_job(**kw, cfg=cfg_for(4), stream=True)
    # mini-batch: streamed only on request (stream=True), with its own requirements
    assert sgd_job(**kw, batch=2, cfg=stream_cfg(4), stream=True).info["stream"]
    with pytest.raises(ValueError, match="region 1 must be type_replicated"):
        sgd_job(**kw, batch=2, cfg=cfg_for(4), stream=True)
    with pytest.raises(ValueError, match="DEPTH >= 12"):   # four sample blocks of 2 + 1 lines
        sgd_job(**kw, batch=2, cfg=stream_cfg(4, depth=8), stream=True)
    with pytest.raises(ValueError, match="context_groups"):
        sgd_job(**kw, batch=2, cfg=stream_cfg(4), stream=True, context_groups=False)
    with pytest.raises(ValueError, match="region 0"):
        sgd_job(**kw, cfg=stream_cfg(4, regions=("type_replicated",) * 4), stream=True)
    kw2 = dict(kw, partition=2)
    with pytest.raises(ValueError, match="DEPTH >= 9"):    # three sample blocks of 2 + 1 lines
        sgd_job(**kw2, cfg=stream_cfg(4, depth=8), stream=True)
    assert not sgd_job(**kw2, cfg=stream_cfg(4, depth=8)).info["stream"]    # too shallow: blocking


def test_sgd_stream_needs_no_partition_sized_region():
    """The streamed program keeps three sample blocks on chip, not a partition: a
    24-sample partition runs on 16-line regions (the blocking program would need 48)."""
    A, b, order = sgd_data("ridge")
    cfg = stream_cfg(4, depth=16)
    job = sgd_job(m=24, n=7, loss="ridge", alpha=0.25, lam2=0.02, epochs=3, partition=24, cfg=cfg)
    assert job.info["stream"]
    with pytest.raises(ValueError, match="DEPTH >= 48"):
        sgd_job(m=24, n=7, loss="ridge", alpha=0.25, lam2=0.02, epochs=3, partition=24, cfg=cfg,
                stream=False)
    m, mem = machine(job, 4, A, b, order)
    assert job.start(m).finished
    gold = sgd_mod.sgd(A, b, loss="ridge", alpha=0.25, lam2=0.02, epochs=3, order=order, fmt=FMT)
    assert np.array_equal(job.model(mem), gold.x)


def test_sgd_stream_region_requirement_is_real(monkeypatch):
    """With the sample regions regular, their FIFO ring shares the storage of the sample
    ring and overwrites blocks not yet read once the rings wrap: the requirement check
    is what keeps the result right."""
    import golden.pipearch_programs as progs
    monkeypatch.setattr(progs, "stream_regions_ok", lambda cfg: None)
    A, b, order = sgd_data("ridge")
    job = sgd_job(m=24, n=7, loss="ridge", alpha=0.25, lam2=0.02, epochs=1, partition=6,
                  cfg=stream_cfg(4, depth=16, regions=("replicated", "regular", "regular", "regular")))
    m, mem = machine(job, 4, A, b, order[:1])
    job.start(m)
    gold = sgd_mod.sgd(A, b, loss="ridge", alpha=0.25, lam2=0.02, epochs=1, order=order[:1], fmt=FMT)
    assert not np.array_equal(job.model(mem), gold.x)


@pytest.mark.parametrize("lanes", [1, 4])
@pytest.mark.parametrize("loss", ["ridge", "logistic"])
@pytest.mark.parametrize("batch,partition,n", [(2, 6, 7), (3, 12, 40), (6, 6, 9), (1, 3, 7)])
def test_sgd_minibatch_stream_bit_exact_and_preemptable(lanes, loss, batch, partition, n):
    """The streamed mini-batch program (``stream=True``, batch > 1; batch 1 through the
    same generator) equals golden.sgd uninterrupted and suspended at every YIELD; the
    blocking program gives the same model."""
    A, b, order = sgd_data(loss, n=n)
    x0 = np.random.default_rng(SEED + 2).uniform(-0.5, 0.5, n)
    gold = sgd_mod.sgd(A, b, loss=loss, alpha=0.25, lam2=0.02, epochs=3, order=order, batch=batch,
                       x0=x0, fmt=FMT)
    assert not np.array_equal(gold.x, FMT.to_fixed(x0))
    kw = dict(m=24, n=n, loss=loss, alpha=0.25, lam2=0.02, epochs=3, batch=batch, partition=partition)
    for switch in (None, 1):
        if batch == 1:
            job = progs._sgd_minibatch_stream_job(stream_cfg(lanes), 24, n, loss, 0.25, 0.02, 3, 1,
                                                  partition, True, 0, FMT.to_fixed(0.25),
                                                  FMT.to_fixed(2 * 0.25 * 0.02))
        else:
            job = sgd_job(**kw, cfg=stream_cfg(lanes), stream=True)
        assert job.info["stream"] and job.areas["ab"][1] == (3 * 24 + 3) * (-(-n // lanes) + 1)
        m, mem = machine(job, lanes, A, b, order, x0=x0)
        rs = run_to_end(job, m) if switch is None else run_to_end(job, m, switch_at_yield=switch)
        assert len(rs) == (1 if switch is None else 1 + 3 * 24 // partition)
        assert np.array_equal(job.model(mem), gold.x)
    if batch > 1:
        job = sgd_job(**kw, cfg=stream_cfg(lanes), stream=False)
        m, mem = machine(job, lanes, A, b, order, x0=x0)
        assert job.start(m).finished and np.array_equal(job.model(mem), gold.x)


def test_sgd_minibatch_stream_rings_wrap_single_copy():
    """DEPTH = 16 and 3-line sample blocks: the sample ring (4 blocks = 12 lines) and the
    model ring with its scratch vector wrap mid-block; one data copy (reshuffle=False,
    the prefetch of the last three blocks wraps to the copy's start); two mini-batch
    jobs preempting each other at every YIELD on one machine."""
    cfg = stream_cfg(4, depth=16)
    A, b, order = sgd_data("ridge", m=12, n=7, epochs=3)
    order[:] = order[0]
    A2, b2, order2 = sgd_data("logistic", m=12, n=5, epochs=3, seed=SEED + 9)
    j1 = sgd_job(m=12, n=7, loss="ridge", alpha=0.25, lam2=0.02, epochs=3, batch=3, partition=6,
                 cfg=cfg, reshuffle=False, stream=True)
    j2 = sgd_job(m=12, n=5, loss="logistic", alpha=0.25, lam2=0.02, epochs=3, batch=4, partition=12,
                 cfg=cfg, stream=True, base=-(-j1.end // 32) * 32)
    assert j1.areas["ab"][1] == (12 + 3) * 3
    mem = Memory(j2.end, 4)
    j1.load(mem, A, b, order)
    j2.load(mem, A2, b2, order2)
    mach = Machine(cfg, mem)
    done = [False, False]
    while not all(done):
        for k, j in enumerate((j1, j2)):
            if not done[k]:
                done[k] = j.start(mach, switch_at_yield=1).finished
    for j, (a_, b_, o_, loss, bt) in ((j1, (A, b, order, "ridge", 3)), (j2, (A2, b2, order2, "logistic", 4))):
        g = sgd_mod.sgd(a_, b_, loss=loss, alpha=0.25, lam2=0.02, epochs=3, order=o_, batch=bt, fmt=FMT)
        assert np.array_equal(j.model(mem), g.x)


def test_sgd_minibatch_stream_region_requirement_is_real(monkeypatch):
    """Negative: with the sample regions regular (their FIFOs share the sample ring's
    storage) the streamed mini-batch result is wrong, so the region check matters."""
    monkeypatch.setattr(progs, "stream_regions_ok", lambda cfg: None)
    A, b, order = sgd_data("ridge")
    job = sgd_job(m=24, n=7, loss="ridge", alpha=0.25, lam2=0.02, epochs=1, batch=3, partition=6,
                  cfg=stream_cfg(4, depth=16, regions=("replicated", "regular", "regular", "regular")),
                  stream=True)
    m, mem = machine(job, 4, A, b, order[:1])
    assert job.start(m).finished
    gold = sgd_mod.sgd(A, b, loss="ridge", alpha=0.25, lam2=0.02, epochs=1, order=order[:1], batch=3,
                       fmt=FMT)
    assert not np.array_equal(job.model(mem), gold.x)


# ---------------------------------------------------------------------------------
# SCD
# ---------------------------------------------------------------------------------
def scd_data(loss, m=24, n=6, P=8, epochs=3, seed=SEED):
    rng = np.random.default_rng(seed)
    A = rng.uniform(-1, 1, (m, n))
    w = rng.normal(size=n) * (rng.random(n) < 0.6)
    z = A @ w
    b = z + 0.05 * rng.normal(size=m) if loss == "lasso" else (z > 0).astype(float)
    co = np.array([[rng.permutation(n) for _ in range(m // P)] for _ in range(epochs)])
    return A, b, co


@pytest.mark.parametrize("lanes", [2, 4, 16])
@pytest.mark.parametrize("loss", ["lasso", "logistic"])
def test_scd_bit_exact(lanes, loss):
    A, b, co = scd_data(loss)
    x0 = np.random.default_rng(SEED + 2).uniform(-0.3, 0.3, 6)
    job = scd_job(m=24, n=6, loss=loss, alpha=0.3, lam1=0.02, epochs=3, partition=8, cfg=cfg_for(lanes))
    m, mem = machine(job, lanes, A, b, co, x0=x0)
    r = job.start(m)
    assert r.finished and r.yields == 9
    gold = scd_mod.scd(A, b, loss=loss, alpha=0.3, lam1=0.02, epochs=3, partition=8,
                       coord_order=co, x0=x0, fmt=FMT)
    assert np.array_equal(job.model(mem), gold.x), job.model(mem) - gold.x
    assert np.array_equal(job.z(mem), gold.z)


@pytest.mark.parametrize("lanes", [2, 4])
@pytest.mark.parametrize("loss", ["lasso", "logistic"])
@pytest.mark.parametrize("m,n,P,depth", [(24, 6, 8, 512), (24, 9, 24, 64), (12, 5, 4, 32), (16, 1, 16, 512)])
def test_scd_stream_bit_exact_and_preemptable(lanes, loss, m, n, P, depth):
    """The streamed SCD program (``stream=True``) equals golden.scd (model and stored z)
    uninterrupted and suspended at every YIELD (a resume restarts the rings at line 0),
    also with rings that wrap inside a partition (DEPTH 32/64) and a single coordinate."""
    _scd_stream_equals_golden(lanes, loss, m, n, P, depth, interleave=1, x0_seed=SEED + 3)


def _scd_stream_equals_golden(lanes, loss, m, n, P, depth, *, interleave, x0_seed):
    """A streamed SCD job (3 epochs) equals golden.scd in model and stored z, run to the end
    and suspended at every YIELD (one per partition, or per pair with interleave=2, whose
    partitions then share their coordinate order)."""
    A, b, co = scd_data(loss, m=m, n=n, P=P)
    if interleave == 2:
        co[:, 1::2] = co[:, 0::2]
    x0 = np.random.default_rng(x0_seed).uniform(-0.3, 0.3, n)
    gold = scd_mod.scd(A, b, loss=loss, alpha=0.3, lam1=0.02, epochs=3, partition=P,
                       coord_order=co, x0=x0, fmt=FMT)
    assert not np.array_equal(gold.x, FMT.to_fixed(x0))
    cfg = stream_cfg(lanes, depth=depth)
    yields = m // P // interleave
    for switch in (None, 1):
        job = scd_job(m=m, n=n, loss=loss, alpha=0.3, lam1=0.02, epochs=3, partition=P, cfg=cfg,
                      stream=True, interleave=interleave)
        if interleave == 1:
            assert job.info["stream"] and job.name.endswith("_stream")
        else:
            assert job.name.endswith("_stream2") and job.yields_per_epoch == yields
        mach, mem = machine(job, lanes, A, b, co, x0=x0)
        rs = run_to_end(job, mach) if switch is None else run_to_end(job, mach, switch_at_yield=switch)
        assert len(rs) == (1 if switch is None else 1 + 3 * yields)
        assert np.array_equal(job.model(mem), gold.x), job.model(mem) - gold.x
        assert np.array_equal(job.z(mem), gold.z)


def test_scd_stream_requirements_and_region_check_is_real(monkeypatch):
    """stream=True needs the streaming regions and DEPTH >= max(n + Pl, 4 Pl); with the
    column regions regular (FIFOs sharing the column ring's storage) the result is wrong,
    so the region check matters (negative)."""
    kw = dict(m=24, n=6, loss="lasso", alpha=0.3, lam1=0.02, epochs=1, partition=24)
    assert not scd_job(**kw, cfg=stream_cfg(4)).info["stream"]            # blocking by default
    with pytest.raises(ValueError, match="region 1 must be type_replicated"):
        scd_job(**kw, cfg=cfg_for(4), stream=True)
    with pytest.raises(ValueError, match="DEPTH >= 24"):                   # 4 x 6 column lines
        scd_job(**kw, cfg=stream_cfg(4, depth=16), stream=True)
    monkeypatch.setattr(progs, "stream_regions_ok", lambda cfg: None)
    A, b, co = scd_data("lasso", P=24, epochs=1)
    job = scd_job(**kw, cfg=stream_cfg(4, depth=32, regions=("replicated", "regular", "regular", "regular")),
                  stream=True)
    mach, mem = machine(job, 4, A, b, co)
    assert job.start(mach).finished
    gold = scd_mod.scd(A, b, loss="lasso", alpha=0.3, lam1=0.02, epochs=1, partition=24, coord_order=co,
                       fmt=FMT)
    assert not np.array_equal(job.model(mem), gold.x)


@pytest.mark.parametrize("lanes", [2, 4])
@pytest.mark.parametrize("loss", ["lasso", "logistic"])
@pytest.mark.parametrize("m,n,P,depth", [(32, 6, 8, 512), (24, 9, 4, 64), (16, 5, 4, 16), (16, 1, 8, 512)])
def test_scd_pair_stream_bit_exact_and_preemptable(lanes, loss, m, n, P, depth):
    """The partition-pair streamed SCD program (``interleave=2``: the coordinate steps of
    partitions 2i and 2i+1 alternate) equals golden.scd (model and stored z) when each
    pair shares its coordinate order, uninterrupted and suspended at every YIELD (one
    per pair), also with rings that wrap inside a pair (DEPTH 16/64) and one coordinate."""
    _scd_stream_equals_golden(lanes, loss, m, n, P, depth, interleave=2, x0_seed=SEED + 4)


def test_scd_pair_stream_requirements():
    """interleave=2 needs stream=True, an even number of partitions, DEPTH >= max(2 n +
    2 Pl, 5 Pl) and, per pair, one coordinate order (with two orders no step-by-step
    interleave equals golden.scd: load refuses the data)."""
    kw = dict(m=32, n=6, loss="lasso", alpha=0.3, lam1=0.02, epochs=2, partition=8)
    with pytest.raises(ValueError, match="pass stream=True"):
        scd_job(**kw, cfg=stream_cfg(4), interleave=2)
    with pytest.raises(ValueError, match="must be even"):
        scd_job(**{**kw, "m": 24}, cfg=stream_cfg(4), stream=True, interleave=2)
    with pytest.raises(ValueError, match="must be 1 or 2"):
        scd_job(**kw, cfg=stream_cfg(4), stream=True, interleave=3)
    with pytest.raises(ValueError, match="DEPTH >= 16"):                   # 2 x 6 + 2 x 2 lines
        scd_job(**kw, cfg=stream_cfg(4, depth=8), stream=True, interleave=2)
    with pytest.raises(ValueError, match="DEPTH >= 40"):                   # 5 x 8 column lines
        scd_job(**{**kw, "m": 64, "partition": 32}, cfg=stream_cfg(4, depth=32), stream=True,
                interleave=2)
    scd_job(**{**kw, "m": 64, "partition": 32}, cfg=stream_cfg(4, depth=32), stream=True)  # 4 Pl
    A, b, co = scd_data("lasso", m=32, n=6, P=8, epochs=2)
    assert not np.array_equal(co[:, 0::2], co[:, 1::2])
    job = scd_job(**kw, cfg=stream_cfg(4), stream=True, interleave=2)
    with pytest.raises(ValueError, match="coord_order"):
        machine(job, 4, A, b, co)
    co[1, 3] = co[1, 2]
    co[:, 1] = co[:, 0]
    with pytest.raises(ValueError, match="coord_order"):                  # one pair differs
        machine(job, 4, A, b, co)


def test_scd_needs_two_lanes():
    with pytest.raises(ValueError, match="LANES >= 2"):
        scd_job(m=8, n=3, loss="lasso", alpha=0.3, lam1=0.0, epochs=1, partition=8, cfg=cfg_for(1))


def test_scd_loss_per_epoch_trajectory():
    A, b, co = scd_data("lasso", m=16, P=16, epochs=4)
    job = scd_job(m=16, n=6, loss="lasso", alpha=0.15, lam1=0.01, epochs=4, partition=16, cfg=cfg_for(4))
    m, mem = machine(job, 4, A, b, co)
    models = run_epochs(job, m)
    gold = scd_mod.scd(A, b, loss="lasso", alpha=0.15, lam1=0.01, epochs=4, partition=16,
                       coord_order=co, fmt=FMT)
    ref = scd_mod.scd(A, b, loss="lasso", alpha=0.15, lam1=0.01, epochs=4, partition=16, coord_order=co)
    for e in range(4):
        ge = scd_mod.scd(A, b, loss="lasso", alpha=0.15, lam1=0.01, epochs=e + 1, partition=16,
                         coord_order=co[:e + 1], fmt=FMT)
        assert np.array_equal(models[e], ge.x), e
    losses = [job.objective(x) for x in models]
    assert losses == gold.loss
    assert np.allclose(losses, ref.loss, atol=1e-3) and losses[-1] < losses[0]


# ---------------------------------------------------------------------------------
# LRMF
# ---------------------------------------------------------------------------------
def lrmf_data(m=9, u=11, d=3, density=0.35, seed=SEED):
    rng = np.random.default_rng(seed)
    Mt, Ut = rng.uniform(-1, 1, (m, d)), rng.uniform(-1, 1, (u, d))
    rows, cols = np.nonzero(rng.random((m, u)) < density)
    vals = np.einsum("kd,kd->k", Mt[rows], Ut[cols])
    M0 = rng.uniform(-0.5, 0.5, (m, d))
    U0 = rng.uniform(-0.3, 0.3, (u, d))
    eo = rng.permutation(len(rows))
    return rows, cols, vals, M0, U0, eo


@pytest.mark.parametrize("lanes", [1, 4, 16])
def test_lrmf_bit_exact(lanes):
    rows, cols, vals, M0, U0, eo = lrmf_data()
    slots = lrmf_slots(rows, cols, m=9, u=11, tile=4)
    job = lrmf_job(m=9, u=11, d=3, alpha=0.1, lam=0.01, epochs=2, tile=4, slots=slots, cfg=cfg_for(lanes))
    m, mem = machine(job, lanes, rows, cols, vals, M0, U0=U0, entry_order=eo)
    r = job.start(m)
    assert r.finished and r.yields == 2 * 3
    gold = lrmf_mod.lrmf(rows, cols, vals, m=9, u=11, d=3, alpha=0.1, lam=0.01, epochs=2, tile=4,
                         M0=M0, U0=U0, entry_order=eo, fmt=FMT)
    Mw, Uw = job.model(mem)
    assert np.array_equal(Mw, gold.M) and np.array_equal(Uw, gold.U)


def test_lrmf_loss_per_epoch_trajectory_and_preemption():
    rows, cols, vals, M0, _, eo = lrmf_data(m=8, u=8, d=2, density=0.4, seed=SEED + 3)
    slots = lrmf_slots(rows, cols, m=8, u=8, tile=4)
    job = lrmf_job(m=8, u=8, d=2, alpha=0.2, lam=0.005, epochs=3, tile=4, slots=slots, cfg=cfg_for(4))
    m, mem = machine(job, 4, rows, cols, vals, M0, entry_order=eo)
    models = run_epochs(job, m)
    kw = dict(m=8, u=8, d=2, alpha=0.2, lam=0.005, tile=4, M0=M0, entry_order=eo)
    gold = lrmf_mod.lrmf(rows, cols, vals, epochs=3, fmt=FMT, **kw)
    ref = lrmf_mod.lrmf(rows, cols, vals, epochs=3, **kw)
    for e in range(3):
        ge = lrmf_mod.lrmf(rows, cols, vals, epochs=e + 1, fmt=FMT, **kw)
        assert np.array_equal(models[e][0], ge.M) and np.array_equal(models[e][1], ge.U), e
    objs = [job.objective(mu) for mu in models]
    assert [o[0] for o in objs] == gold.loss and [o[1] for o in objs] == gold.rmse
    assert np.allclose([o[1] for o in objs], ref.rmse, atol=1e-3)
    assert objs[-1][1] < objs[0][1]


# ---------------------------------------------------------------------------------
# requirements and layout
# ---------------------------------------------------------------------------------
def test_job_requirements_are_checked():
    small = PUConfig(lanes=1, depth=16, amem_depth=4)
    with pytest.raises(ValueError, match="DEPTH >= 24"):
        sgd_job(m=8, n=3, loss="ridge", alpha=0.1, lam2=0.0, epochs=1, cfg=small)
    with pytest.raises(ValueError, match="AMEM_DEPTH"):
        scd_job(m=4, n=9, loss="lasso", alpha=0.1, lam1=0.0, epochs=1, partition=4,
                cfg=PUConfig(lanes=2, depth=64, amem_depth=8))
    with pytest.raises(ValueError, match="does not divide"):
        sgd_job(m=10, n=3, loss="ridge", alpha=0.1, lam2=0.0, epochs=1, batch=3, partition=5, cfg=cfg_for(4))
    rows, cols, vals, M0, _, _ = lrmf_data()
    job = lrmf_job(m=9, u=11, d=3, alpha=0.1, lam=0.0, epochs=1, tile=4, slots=2, cfg=cfg_for(4))
    with pytest.raises(ValueError, match="slots = 2"):
        job.load(Memory(job.end, 4), rows, cols, vals, M0)


def test_two_jobs_share_memory_and_a_machine():
    """Layouts at different bases do not overlap, and run_to_end resumes suspensions."""
    cfg = cfg_for(4)
    A, b, order = sgd_data("ridge", epochs=2)
    j1 = sgd_job(m=24, n=7, loss="ridge", alpha=0.25, lam2=0.02, epochs=2, partition=8, cfg=cfg)
    rows, cols, vals, M0, U0, eo = lrmf_data()
    slots = lrmf_slots(rows, cols, m=9, u=11, tile=4)
    j2 = lrmf_job(m=9, u=11, d=3, alpha=0.1, lam=0.01, epochs=1, tile=4, slots=slots, cfg=cfg, base=j1.end)
    mem = Memory(j2.end, 4)
    j1.load(mem, A, b, order)
    j2.load(mem, rows, cols, vals, M0, U0=U0, entry_order=eo)
    mach = Machine(cfg, mem)
    r1 = j1.start(mach, switch_at_yield=2)
    assert r1.suspended
    assert len(run_to_end(j2, mach, switch_at_yield=1)) == 4      # 3 row tiles -> 3 suspensions
    run_to_end(j1, mach)
    g1 = sgd_mod.sgd(A, b, loss="ridge", alpha=0.25, lam2=0.02, epochs=2, order=order, fmt=FMT)
    g2 = lrmf_mod.lrmf(rows, cols, vals, m=9, u=11, d=3, alpha=0.1, lam=0.01, epochs=1, tile=4,
                       M0=M0, U0=U0, entry_order=eo, fmt=FMT)
    assert np.array_equal(j1.model(mem), g1.x)
    assert np.array_equal(j2.model(mem)[0], g2.M) and np.array_equal(j2.model(mem)[1], g2.U)


def test_vanishing_regularisation_words_raise_zero_is_legal():
    """issue 11: the program builders quantise the same words as golden.sgd/scd/lrmf and
    raise the same way when a non-zero regulariser rounds to the zero word."""
    cfg = cfg_for(4)
    with pytest.raises(ValueError, match=r"2\*alpha\*lam2 = .* quantises to 0"):
        sgd_job(m=8, n=3, loss="ridge", alpha=0.1, lam2=1e-6, epochs=1, cfg=cfg)
    with pytest.raises(ValueError, match=r"alpha\*lam1\*partition = .* quantises to 0"):
        scd_job(m=8, n=3, loss="lasso", alpha=0.1, lam1=1e-7, epochs=1, partition=4, cfg=cfg)
    with pytest.raises(ValueError, match=r"lam = 1e-06 quantises to 0"):
        lrmf_job(m=4, u=4, d=2, alpha=0.1, lam=1e-6, epochs=1, tile=2, slots=2, cfg=cfg)
    sgd_job(m=8, n=3, loss="ridge", alpha=0.1, lam2=0.0, epochs=1, cfg=cfg)
    scd_job(m=8, n=3, loss="lasso", alpha=0.1, lam1=0.0, epochs=1, partition=4, cfg=cfg)
    lrmf_job(m=4, u=4, d=2, alpha=0.1, lam=0.0, epochs=1, tile=2, slots=2, cfg=cfg)
