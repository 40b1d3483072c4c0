"""golden.maple_mapping: the mapping tool's plans and programs, run on the instruction-level
chain model, against plain NumPy (fixed-point dot products, lexsort top-k, argmin/argmax)
and the golden.maple workload functions."""
import numpy as np
import pytest

from golden import maple
from golden import maple_mapping as mm
from golden.fixedpoint import QFormat

CP = mm.ChainParams()                                   # the default core
SMALL = mm.ChainParams(M=2, LSD=16, ILS_LINES=16, KMAX=4, DEPTH=32, IDXW=8, W=16, F=8)


def run(plan, A, B, cp, **kw):
    """Run every chain's program; returns (per-chain model list, all beats)."""
    models, beats = [], []
    for prog in plan.programs(A, B, **kw):
        m = mm.ChainModel(cp)
        beats += m.run(prog)
        models.append(m)
    return models, beats


def rand(rng, shape, fmt, lim=1.0):
    q = int(lim * fmt.one)
    return rng.integers(-q, q + 1, size=shape)


@pytest.mark.parametrize("cp", [CP, SMALL], ids=["default", "small"])
@pytest.mark.parametrize("axis,d", [("rows", 5), ("rows", 40), ("rows", 150), ("cols", 3), ("cols", 70)])
def test_elements_equal_fixedpoint_dot(cp, axis, d):
    """Every mode: the (index, value) stream into the smart memory is C = A B by the
    repository dot rule, in the documented order."""
    if cp is SMALL and d > 2 * cp.LSD:
        d = 2 * cp.LSD - 3
    rng = np.random.default_rng(d)
    f = cp.fmt
    n, m = 7, 3
    A, B = rand(rng, (n, d), f), rand(rng, (d, m), f)
    C = f.dot(A[:, None, :], B.T[None, :, :])
    plan = mm.plan_matmul(n, d, m, "rmw" if axis == "rows" else "topk", axis=axis, k=2, cp=cp)
    (model,), _ = run(plan, A, B, cp)
    if axis == "rows":
        # B blocks are the outer loop: row-major within each block of columns
        cb = plan.cols_per_step * plan.b_num_cols
        exp = [(i * m + j, int(C[i, j])) for b0 in range(0, m, cb) for i in range(n)
               for j in range(b0, min(b0 + cb, m))]
        assert plan.mode == ("column" if plan.S == 1 else "split")
    else:
        exp = [(i, int(C[i, j])) for j in range(m) for i in range(n)]
        assert plan.mode == "replicate" and plan.G == cp.M
    assert model.elements == exp
    assert model.errors == 0


def test_modes_are_chosen_by_size():
    assert mm.plan_matmul(8, 10, 4, "minmax", axis="rows").mode == "column"
    p = mm.plan_matmul(8, 100, 2, "minmax", axis="rows")
    assert (p.mode, p.S, p.G, p.pm, p.b_col_size) == ("split", 2, 2, mm.Fraction(1, 2), 50)
    p = mm.plan_matmul(8, 10, 4, "topk", axis="cols", k=3)
    assert (p.mode, p.pm, p.rows_in_flight) == ("replicate", 4, 4)
    p = mm.plan_matmul(8, 100, 4, "topk", axis="cols", k=3)
    assert (p.S, p.rows_in_flight, p.pm) == (2, 2, 1)


def test_paper_ssi_example():
    """Section 4.2: 2M documents x 64 categories, 64 queries, 32 chains of 8 PEs, 2 KB PE
    local stores, 64 KB input local stores, 4-byte words."""
    cp = mm.ChainParams(M=8, LSD=512, ILS_LINES=2048, KMAX=64, DEPTH=1 << 14, IDXW=16)
    p = mm.plan_matmul(2_000_000, 64, 64, "topk", axis="cols", k=64, chains=32, cp=cp)
    assert p.pm == 8 and p.b_col_size == 64 and p.a_num_rows == 256
    assert p.n_a_blocks == 7813 and p.b_block == 2 and p.n_b_blocks == 1


def test_kmeans_mapping():
    f = CP.fmt
    rng = np.random.default_rng(3)
    N, D, K = 12, 3, 6
    pts = rand(rng, (N, D), f)
    means = rand(rng, (K, D), f)
    means[4] = means[1]                                 # a tie: the smaller index must win
    pts[5] = means[1]
    xp, rp = maple.distance_augment(pts, means, f)
    plan = mm.plan_matmul(N, D + 1, K, "minmax", axis="rows", cp=CP)
    _, beats = run(plan, xp, rp.T, CP)
    assign, score = maple.kmeans_assign_scores(pts, means, f)
    got = [(b[0], b[1]) for b in beats[1::2]]           # the max entry of each dump
    assert got == list(zip(assign.tolist(), score.tolist()))
    assert assign[5] == 1
    # against the bit-true distance: same choice up to rounding ties
    ref, dist = maple.kmeans_assign(pts, means, f)
    d_all = maple.sq_dist(pts, means, f)
    for n in range(N):
        assert d_all[n, assign[n]] - dist[n] <= 4, (n, assign[n], ref[n])


def test_topk_recommend_from_lrmf():
    from golden.lrmf import lrmf
    f = CP.fmt
    rng = np.random.default_rng(11)
    items, users, d = 20, 3, 4
    r = rng.integers(0, items, 40)
    c = rng.integers(0, users, 40)
    v = rng.uniform(-1, 1, 40)
    res = lrmf(r, c, v, m=items, u=users, d=d, alpha=0.05, lam=0.01, epochs=2, tile=4,
               M0=rng.uniform(-0.5, 0.5, (items, d)), fmt=f)
    Mi, U = np.asarray(res.M), np.asarray(res.U)
    Mi[7] = Mi[2]                                       # duplicate item: tie on score
    for k in (1, 5, items, CP.KMAX):
        if k > CP.KMAX:
            continue
        plan = mm.plan_matmul(items, d, users, "topk", axis="cols", k=k, cp=CP)
        _, beats = run(plan, Mi, U.T, CP)
        ei, ev = maple.topk_recommend(Mi, U, k, f)
        exp = []
        for u in range(users):
            n = len(ei[u])
            exp += [(int(ei[u, j]), int(ev[u, j]), int(j == n - 1)) for j in range(n)]
        assert beats == exp


def test_glvq_closest_farthest():
    f = SMALL.fmt
    rng = np.random.default_rng(5)
    T, R, D = 3, 11, 3
    X = rand(rng, (T, D), f)
    refs = rand(rng, (R, D), f)
    refs[9] = refs[3]
    _, rp = maple.distance_augment(X, refs, f)
    xp, _ = maple.distance_augment(X, refs, f)
    plan = mm.plan_matmul(R, D + 1, T, "minmax", axis="cols", cp=SMALL)
    _, beats = run(plan, rp, xp.T, SMALL)
    for t in range(T):
        (ic, sc), (ifa, sf) = maple.glvq_scores_closest_farthest(X[t], refs, f)
        assert beats[2 * t] == (ifa, sf, 0) and beats[2 * t + 1] == (ic, sc, 1)


def test_cnn_aggregation_passes():
    """Input-channel groups as passes accumulating in the RMW store, with saturation."""
    f = SMALL.fmt
    rng = np.random.default_rng(9)
    P, Fo, groups, dc = 6, 3, 3, 5
    prog, parts, addrs = [], [], []
    for g in range(groups):
        A = rand(rng, (P, dc), f, lim=40.0)
        B = rand(rng, (dc, Fo), f, lim=40.0)
        plan = mm.plan_matmul(P, dc, Fo, "rmw", cp=SMALL)
        prog += plan.programs(A, B, rmw_clear=g == 0, rmw_dump=g == groups - 1)[0]
        parts.append(f.dot(A[:, None, :], B.T[None, :, :]).ravel())
        addrs.append(np.arange(P * Fo))
    beats = mm.ChainModel(SMALL).run(prog)
    agg = maple.cnn_aggregate(np.concatenate(parts), np.concatenate(addrs), f, depth=P * Fo)
    assert [b[1] for b in beats] == agg.tolist()
    assert any(abs(v) == f.max_int or v == f.min_int for v in agg.tolist())


def test_short_streams_and_chains():
    """k larger than the array, k = array length, k = 1; work split over 3 chains."""
    f = CP.fmt
    rng = np.random.default_rng(2)
    A, B = rand(rng, (5, 4), f), rand(rng, (4, 7), f)
    for k in (1, 5, 9):
        plan = mm.plan_matmul(5, 4, 7, "topk", axis="cols", k=k, chains=3, cp=CP)
        models, beats = run(plan, A, B, CP)
        assert len(models) == 3
        C = f.dot(A[:, None, :], B.T[None, :, :])
        exp = []
        for j in range(7):
            i_, v_ = maple.topk(C[:, j], np.arange(5), k, True)
            exp += [(int(a), int(b), int(t == len(i_) - 1)) for t, (a, b) in enumerate(zip(i_, v_))]
        assert beats == exp


@pytest.mark.parametrize("kw,msg", [
    (dict(n=4, d=300, m=2, reduction="minmax", axis="rows"), "does not fit"),
    (dict(n=4, d=4, m=2, reduction="topk", k=17), "KMAX"),
    (dict(n=4, d=64, m=9, reduction="minmax", axis="rows"), "needs all of B on chip"),
    (dict(n=40, d=4, m=8, reduction="rmw"), "DEPTH"),
    (dict(n=4, d=4, m=2, reduction="sum"), "reduction must be"),
    (dict(n=4, d=4, m=2, reduction="topk", axis="diag"), "axis must be"),
    (dict(n=0, d=4, m=2, reduction="topk"), "n must be"),
])
def test_errors(kw, msg):
    with pytest.raises(ValueError, match=msg):
        mm.plan_matmul(cp=CP, **kw)


def test_ils_too_small_and_shape_errors():
    cp = mm.ChainParams(M=2, LSD=64, ILS_LINES=2)
    with pytest.raises(ValueError, match="input local store"):
        mm.plan_matmul(3, 40, 2, "minmax", axis="rows", cp=cp)
    with pytest.raises(ValueError, match="row group"):
        mm.plan_matmul(3, 40, 2, "topk", axis="cols", cp=cp)
    p = mm.plan_matmul(3, 4, 2, "topk", cp=CP)
    with pytest.raises(ValueError, match="must be"):
        p.programs(np.zeros((3, 5), dtype=np.int64), np.zeros((4, 2), dtype=np.int64))


def test_model_flags_bad_instructions():
    m = mm.ChainModel(SMALL)
    m.run([mm.i_mode(4, 1), mm.i_mode(1, 2), mm.i_macc(0), mm.i_macc(SMALL.LSD + 1), mm.i_macc(2, nres=3)])
    assert m.errors == 5 and m.elements == []
    with pytest.raises(ValueError, match="not armed"):
        mm.ChainModel(SMALL).run([mm.i_macc(2)])
    with pytest.raises(ValueError, match="KMAX"):
        mm.ChainModel(SMALL).run([mm.i_reduction(0, SMALL.KMAX + 1)])


def test_bus_traffic_counts():
    prog = [mm.i_mode(1, 1), mm.enc(mm.WRITE_A, 100)] + [0] * 100 + [mm.i_macc(4)]
    assert mm.split_words(prog) == (3, 100)
    t = mm.bus_traffic(prog, dump_beats=2, elements=50, results=1, cp=CP)
    assert t["instr_bytes"] == 12
    assert t["bytes_with_sm"] == 400 + 12 and t["bytes_no_sm"] == 400 + 2 * 6 * 50 + 6
    assert t["trans_no_sm"] == 7 + 100 + 1 and t["trans_with_sm"] == 7 + 1


def test_listing():
    lst = mm.mnemonics([mm.enc(mm.WRITE_A, 2), 5, 6, mm.i_macc(3, True)])
    assert lst[0].startswith("WRITE_A") and lst[1] == ".word 0x5" and lst[3].startswith("MULT_ACC_DUMP")


@pytest.mark.parametrize("cp", [CP, SMALL], ids=["default", "small"])
def test_mult_acc_run_equals_its_passes(cp):
    """MULT_ACC_RUN (issue 16) against the same passes written out as MULT_ACC_DUMPs with
    their own set-up words: same elements, same tlast, same dump; strides wrap modulo
    ILW / LSD, sm_addr advances by the results per pass (nres = 0 and nres < M/S), and
    ila / lsa / sm_addr are left as they were."""
    rng = np.random.default_rng(7)
    f, M = cp.fmt, cp.M
    A, B = rand(rng, cp.ilw, f), rand(rng, (M, cp.LSD), f)
    load = [mm.i_mode(2, 1) if M > 2 else mm.i_mode(1, 1), mm.i_reduction(mm.OP_SEL, cp.KMAX),
            mm.enc(mm.SET_INPUT_LS_ADDR, 0), mm.enc(mm.WRITE_A, cp.ilw)] + [mm.data_word(v, cp.W) for v in A]
    for pe in range(M):
        load += [mm.enc(mm.SET_PE_LS_ADDR, 0), mm.i_write_b(cp.LSD, pe)] + [mm.data_word(v, cp.W) for v in B[pe]]
    G = 2 if M > 2 else 1
    for n, passes, ist, lst, nres, ila, lsa, sma in ((3, 5, 6, 3, 0, 2, 1, 10), (2, 4, cp.ilw - 4, cp.LSD - 1, 1, 8, 0, 3),
                                                     (cp.LSD, 2, 0, 0, 0, 0, 0, 0)):
        R = M if nres == 0 else nres
        head = [mm.enc(mm.SM_CTRL, mm.SM_START), mm.enc(mm.SET_INPUT_LS_ADDR, ila), mm.enc(mm.SET_PE_LS_ADDR, lsa),
                mm.enc(mm.SET_SM_ADDR, sma)]
        run = head + [mm.i_stride(ist, lst), mm.i_run(n, passes, True, nres), mm.i_dump()]
        ref = [mm.enc(mm.SM_CTRL, mm.SM_START)]
        for p in range(passes):
            ref += [mm.enc(mm.SET_INPUT_LS_ADDR, (ila + p * ist) % cp.ilw),
                    mm.enc(mm.SET_PE_LS_ADDR, (lsa + p * lst) % cp.LSD),
                    mm.enc(mm.SET_SM_ADDR, sma + p * R), mm.i_macc(n, p == passes - 1, nres)]
        ref.append(mm.i_dump())
        a, b = mm.ChainModel(cp), mm.ChainModel(cp)
        a.run(load + run)
        b.run(load + ref)
        assert a.elements == b.elements and len(a.elements) == passes * R
        assert a.beats == b.beats and a.errors == b.errors == 0
        assert (a.ila, a.lsa, a.sma) == (ila, lsa, sma)
        assert mm.mac_steps(run) == mm.mac_steps(ref) == n * passes
    m = mm.ChainModel(cp)
    m.run([mm.i_run(2, 0), mm.i_run(0, 3), mm.i_run(cp.LSD + 1, 2), mm.i_run(2, 2, nres=M + 1)])
    assert m.errors == 4 and m.elements == []


@pytest.mark.parametrize("axis,red,n,d,m,folds", [
    ("rows", "minmax", 16, 4, 8, True), ("cols", "topk", 40, 4, 2, True), ("rows", "rmw", 6, 4, 3, True),
    ("rows", "rmw", 9, 4, 8, True),
    # nothing to fold: sm_addr advances by m, not by the 2 results of a pass; one row group
    # per A block; the last set of a row has fewer results than the others
    ("rows", "rmw", 5, 70, 6, False), ("cols", "minmax", 9, 70, 2, False), ("rows", "minmax", 7, 5, 7, False)])
def test_programs_use_mult_acc_run(axis, red, n, d, m, folds):
    """The mapping tool folds its passes into MULT_ACC_RUN where their addresses advance by
    constant strides (and sm_addr by the results per pass): fewer words than one
    MULT_ACC_DUMP (and its set-up words) per pass, the same elements and beats as the
    pass-by-pass program (the compressor disabled), every MAC step still issued."""
    rng = np.random.default_rng(n * d + m)
    f = CP.fmt
    A, B = rand(rng, (n, d), f), rand(rng, (d, m), f)
    k = 3 if red == "topk" else 1
    plan = mm.plan_matmul(n, d, m, red, axis=axis, k=k, cp=CP)
    prog = plan.programs(A, B)[0]
    orig = mm.Plan._passes
    try:
        mm.Plan._passes = lambda self, ps: [w for (ila, lsa, sma, nn, nres, last) in ps for w in (
            mm.enc(mm.SET_INPUT_LS_ADDR, ila), mm.enc(mm.SET_PE_LS_ADDR, lsa), mm.enc(mm.SET_SM_ADDR, sma),
            mm.i_macc(nn, last, nres))]
        flat = plan.programs(A, B)[0]
    finally:
        mm.Plan._passes = orig
    a, b = mm.ChainModel(CP), mm.ChainModel(CP)
    assert a.run(prog) == b.run(flat) and a.elements == b.elements
    assert mm.mac_steps(prog) == mm.mac_steps(flat)
    ops = [w.split()[0] for w in mm.mnemonics(prog)]
    # set-up words whose register already holds the value are dropped as well
    assert ("MULT_ACC_RUN" in ops) == folds and len(prog) < len(flat)


@pytest.mark.parametrize("red,axis", [("minmax", "rows"), ("topk", "cols"), ("minmax", "cols")])
def test_dump_start_equals_dump_then_start(red, axis):
    """SM_CTRL DUMP|START (the mapping tool's per-array dump and re-arm) gives the same beats
    as DUMP_SM followed by SM_CTRL START, and the program ends disarmed (its last array
    dumped by DUMP_SM)."""
    rng = np.random.default_rng(11)
    f = CP.fmt
    n, d, m = (6, 4, 5) if axis == "rows" else (9, 3, 3)
    A, B = rand(rng, (n, d), f), rand(rng, (d, m), f)
    plan = mm.plan_matmul(n, d, m, red, axis=axis, k=2 if red == "topk" else 1, cp=CP)
    prog = plan.programs(A, B)[0]
    both = mm.enc(mm.SM_CTRL, mm.SM_DUMP | mm.SM_START)
    assert prog.count(both) == (n if axis == "rows" else m) - 1
    split = []
    for w in prog:
        split += [mm.i_dump(), mm.enc(mm.SM_CTRL, mm.SM_START)] if w == both else [w]
    a, b = mm.ChainModel(CP), mm.ChainModel(CP)
    assert a.run(prog) == b.run(split) and len(a.dumps) == (n if axis == "rows" else m)
    assert not a.sm_armed


@pytest.mark.parametrize("dbeat", [1, 2, 4])
def test_overlapped_programs_equal_plain(dbeat):
    """Issue 16's load/compute overlap in the mapping tool changes only where and when data
    is loaded, never the results: aggregation groups alternating store halves (``buffer``)
    and without the repeated mode/reduction words (``continued``) give the same dump as
    plain concatenated programs; a top-k program whose A load is interleaved with the first
    column's passes (DBEAT > 1) the same as the DBEAT = 1 program; the upper-half program
    really writes the upper halves."""
    cp = mm.ChainParams(DBEAT=dbeat)
    plain_cp = mm.ChainParams(DBEAT=1)
    rng = np.random.default_rng(dbeat)
    f = cp.fmt
    fast, plain = [], []
    for g in range(4):
        A, B = rand(rng, (4, 4), f), rand(rng, (4, 3), f)
        p = mm.plan_matmul(4, 4, 3, "rmw", cp=cp)
        fast += p.programs(A, B, rmw_clear=g == 0, rmw_dump=g == 3, buffer=g % 2, continued=g > 0,
                           keep_armed=g < 3)[0]
        q = mm.plan_matmul(4, 4, 3, "rmw", cp=plain_cp)
        plain += q.programs(A, B, rmw_clear=g == 0, rmw_dump=g == 3)[0]
    a, b = mm.ChainModel(cp), mm.ChainModel(plain_cp)
    assert a.run(fast) == b.run(plain) and a.elements == b.elements and len(a.beats) == 12
    ops = mm.mnemonics(fast, cp)
    assert sum(o.startswith("SET_PARALLEL_MODE") for o in ops) == 1
    assert sum(o == "SM_CTRL 0x1" for o in ops) == 1           # one START: one array for all groups
    assert f"SET_INPUT_LS_ADDR 0x{cp.ilw // 2:x}" in ops and f"SET_PE_LS_ADDR 0x{cp.LSD // 2:x}" in ops
    Mi, U = rand(rng, (64, 4), f), rand(rng, (4, 2), f)
    progs = [mm.plan_matmul(64, 4, 2, "topk", axis="cols", k=16, cp=c).programs(Mi, U)[0] for c in (cp, plain_cp)]
    a, b = mm.ChainModel(cp), mm.ChainModel(plain_cp)
    assert a.run(progs[0]) == b.run(progs[1]) and len(a.beats) == 32
    n_wa = sum(o.startswith("WRITE_A") for o in mm.mnemonics(progs[0], cp))
    assert n_wa == (4 if dbeat > 1 else 1), n_wa


def test_kmeans_chunked_load_equals_plain():
    """A per-row (K-means) program with DBEAT > 1 loads its A block row by row ahead of the
    passes: the rows the chain's input read window of a pass covers (n*G = 4 words, column
    mode: one row of 4) before row 0, then row r+1 right behind row r's passes (8 MAC
    steps, room for its 5 beats); same elements and dump as the DBEAT = 1 program that
    loads the block at once.  With one pass of 4 steps per row (no room) it falls back to 4 chunks, each
    right after the first row of the previous chunk."""
    rng = np.random.default_rng(5)
    cp, plain = mm.ChainParams(DBEAT=4), mm.ChainParams(DBEAT=1)
    f = cp.fmt
    A, B = rand(rng, (16, 4), f), rand(rng, (4, 8), f)
    progs = [mm.plan_matmul(16, 4, 8, "minmax", axis="rows", cp=c).programs(A, B)[0] for c in (cp, plain)]
    a, b = mm.ChainModel(cp), mm.ChainModel(plain)
    assert a.run(progs[0]) == b.run(progs[1]) and a.elements == b.elements and len(a.beats) == 32
    ops = mm.mnemonics(progs[0], cp)
    loads = [o for o in ops if o.startswith("WRITE_A")]
    assert loads == ["WRITE_A 0x4"] * 16, loads
    # the load of row r + 1 follows row r's MULT_ACC_RUN (and its DUMP + START)
    macs = [i for i, o in enumerate(ops) if o.startswith("MULT_ACC")]
    wa = [i for i, o in enumerate(ops) if o.startswith("WRITE_A")]
    assert len(macs) == 16 and wa[0] < macs[0]
    for r in range(15):
        assert macs[r] < wa[r + 1] < macs[r + 1]
        assert ops[wa[r + 1] - 1] == f"SET_INPUT_LS_ADDR 0x{4 * (r + 1):x}"
    assert sum(o.startswith("WRITE_A") for o in mm.mnemonics(progs[1], plain)) == 1
    # one pass of 4 steps per row: 4 chunks of 4 rows
    B4 = rand(rng, (4, 4), f)
    progs = [mm.plan_matmul(16, 4, 4, "minmax", axis="rows", cp=c).programs(A, B4)[0] for c in (cp, plain)]
    a, b = mm.ChainModel(cp), mm.ChainModel(plain)
    assert a.run(progs[0]) == b.run(progs[1]) and a.elements == b.elements
    assert [o for o in mm.mnemonics(progs[0], cp) if o.startswith("WRITE_A")] == ["WRITE_A 0x10"] * 4
