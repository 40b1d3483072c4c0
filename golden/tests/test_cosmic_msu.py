"""golden.cosmic_msu: entry encoding and checks, the round-robin walk, broadcast,
deliveries against a word-level reference, writes, burst splitting, input validation."""
import numpy as np
import pytest

from golden.cosmic_msu import (E_PE, E_REG, E_SIZE, Entry, MsuConfig, bursts, entry_error, mem_beats,
                               plan, run)

CFG = MsuConfig()
SMALL = MsuConfig(W=16, LANES=2, NPE=16, NTHREADS=2, QDEPTH=4)


def test_entry_roundtrip_and_errors():
    rng = np.random.default_rng(1)
    for _ in range(200):
        e = Entry(int(rng.integers(0, 4096)), bool(rng.integers(2)), False, int(rng.integers(0, 1 << 16)))
        assert Entry.decode(e.encode()) == e
    assert entry_error(Entry(3, size=5).encode(), 64) == 0
    assert entry_error(Entry(64, size=5).encode(), 64) == E_PE
    assert entry_error(Entry(3, size=0).encode(), 64) == E_SIZE
    assert entry_error(Entry(3, write=True, bcast=True, size=1).encode(), 64) == E_REG
    assert entry_error(Entry(3, size=1).encode() | (1 << 31), 64) == E_REG


def test_round_robin_order_and_pointers():
    ents = [Entry(0, size=5), Entry(2, write=True, size=3), Entry(1, size=2)]
    p = plan(CFG, ents, [100, 200, 300, 400], [0, 8, 16, 24])
    got = [(t.write, t.thread, t.pes, t.addr, t.size) for t in p.transfers]
    exp = []
    addr = [100, 200, 300, 400]
    for e in ents:
        for t in range(4):
            exp.append((e.write, t, (e.base + 8 * t,), addr[t], e.size))
            addr[t] += e.size
    assert got == exp
    assert p.mem_addr == [110, 210, 310, 410]


def test_broadcast_once_to_every_thread():
    ents = [Entry(4, bcast=True, size=6), Entry(0, size=2)]
    p = plan(SMALL, ents, [10, 20], [0, 8], model_addr=50)
    assert p.transfers[0].pes == (4, 12) and p.transfers[0].addr == 50
    assert p.model_addr == 56 and p.mem_addr == [12, 22]
    mem = np.arange(64)
    r = run(SMALL, p, mem)
    # beat-major: beat 0 to both PEs, then beat 1 ...
    assert [b[0] for b in r.beats[:6]] == [4, 12, 4, 12, 4, 12]
    assert r.beats[0][1] == (50, 51) and r.beats[1][1] == (50, 51) and r.beats[5][1] == (54, 55)


@pytest.mark.parametrize("cfg", [CFG, SMALL])
def test_deliveries_match_word_reference(cfg):
    rng = np.random.default_rng(7)
    for _ in range(20):
        n = int(rng.integers(1, cfg.QDEPTH + 1))
        span = cfg.NPE // cfg.NTHREADS          # each thread owns a disjoint PE range
        ents = [Entry(int(rng.integers(0, span)), False, bool(rng.integers(4) == 0),
                      int(rng.integers(1, 3 * cfg.LANES + 2))) for _ in range(n)]
        offs = [t * span for t in range(cfg.NTHREADS)]
        addrs = [int(x) for x in rng.integers(0, 200, size=cfg.NTHREADS)]
        mem = rng.integers(0, 1 << cfg.W, size=2000)
        p = plan(cfg, ents, addrs, offs, model_addr=int(rng.integers(0, 100)))
        r = run(cfg, p, mem)
        # reference: the flat word stream each PE receives, in order
        got, exp = {}, {}
        for pe, words, nv, last in r.beats:
            assert all(w == 0 for w in words[nv:]) and len(words) == cfg.LANES
            got.setdefault(pe, []).extend(words[:nv])
        a = list(addrs)
        ma = p.model_addr - sum(e.size for e in ents if e.bcast)
        for e in ents:
            if e.bcast:
                for t in range(cfg.NTHREADS):
                    exp.setdefault(e.base + offs[t], []).extend(int(x) for x in mem[ma:ma + e.size])
                ma += e.size
            else:
                for t in range(cfg.NTHREADS):
                    exp.setdefault(e.base + offs[t], []).extend(int(x) for x in mem[a[t]:a[t] + e.size])
                    a[t] += e.size
        assert got == exp
        assert sum(b[3] for b in r.beats) == sum(len(t.pes) for t in p.transfers)


def test_writes_land_in_memory():
    ents = [Entry(0, write=True, size=5), Entry(1, size=5)]
    p = plan(SMALL, ents, [3, 11], [0, 2])
    mem = np.zeros(32, dtype=np.int64)
    wd = [np.array([1, 2, 3, 4, 5]), np.array([6, 7, 8, 9, 10])]
    r = run(SMALL, p, mem, wd)
    assert list(r.mem[3:8]) == [1, 2, 3, 4, 5] and list(r.mem[11:16]) == [6, 7, 8, 9, 10]
    assert r.write_requests == [(0, 5), (2, 5)]
    # the read after the write sees the written data (thread 0 reads words 8..12)
    assert r.beats[0][1] == (0, 0) and r.beats[3][1][0] == 0


def test_mem_beats_unaligned():
    p = plan(CFG, [Entry(0, size=4)], [1, 4, 7, 8], [0, 1, 2, 3])
    assert [mem_beats(CFG, t) for t in p.transfers] == [2, 1, 2, 1]


def test_bursts_respect_4k_and_max():
    rng = np.random.default_rng(3)
    for _ in range(500):
        lanes, bb, mb = 4, 16, int(rng.choice([1, 4, 16, 256]))
        a, n = int(rng.integers(0, 20000)), int(rng.integers(1, 3000))
        bs = bursts(a, n, lanes, bb, mb)
        assert sum(b for _, b in bs) == -(-((a % lanes) + n) // lanes)
        for addr, b in bs:
            assert 1 <= b <= mb and addr % bb == 0
            assert addr // 4096 == (addr + b * bb - 1) // 4096
        assert bs[0][0] == (a // lanes) * bb


def test_strict_and_skip():
    ents = [Entry(60, size=2)]
    with pytest.raises(ValueError, match="targets PE"):
        plan(CFG, ents, [0, 0, 0, 0], [0, 2, 4, 6])
    p = plan(CFG, ents, [0, 10, 20, 30], [0, 2, 4, 6], strict=False)
    assert [t.thread for t in p.transfers] == [0, 1]
    assert p.errors == [(0, 2, E_PE), (0, 3, E_PE)] and p.mem_addr == [2, 12, 20, 30]


@pytest.mark.parametrize("kw,match", [
    (dict(W=12), "W must"), (dict(LANES=3), "LANES"), (dict(NPE=0), "NPE"),
    (dict(NPE=5000), "NPE"), (dict(NTHREADS=True), "NTHREADS")])
def test_config_validation(kw, match):
    with pytest.raises(ValueError, match=match):
        MsuConfig(**kw)


def test_input_validation():
    with pytest.raises(ValueError, match="overflow the queue"):
        plan(SMALL, [Entry(0, size=1)] * 5, [0, 0], [0, 0])
    with pytest.raises(ValueError, match="bad entry"):
        plan(SMALL, [Entry(0, size=0)], [0, 0], [0, 0])
    with pytest.raises(ValueError, match="bad entry"):
        plan(SMALL, [Entry(3, size=1).encode() | (1 << 30)], [0, 0], [0, 0])
    with pytest.raises(ValueError, match="NTHREADS"):
        plan(SMALL, [Entry(0, size=1)], [0], [0])
    with pytest.raises(ValueError, match="pe_offset"):
        plan(SMALL, [Entry(0, size=1)], [0, 0], [0, 16])
    p = plan(SMALL, [Entry(0, write=True, size=2)], [0, 4], [0, 1])
    with pytest.raises(ValueError, match="write_data has"):
        run(SMALL, p, np.zeros(8, dtype=np.int64))
    with pytest.raises(ValueError, match="runs past mem"):
        run(SMALL, p, np.zeros(5, dtype=np.int64), [[1, 2], [3, 4]])
    with pytest.raises(ValueError, match="unsigned"):
        run(SMALL, p, np.zeros(8, dtype=np.int64), [[1, 2], [3, 1 << 16]])


def test_non_integer_fields_raise():
    """issue 11: Entry fields and memory words used to accept non-integers (truncated by
    int() / astype) and oversized fields (masked by encode())."""
    for kw, match in ((dict(base=1.5), r"Entry\.base must be an integer, got 1\.5"),
                      (dict(base=True), r"Entry\.base must be an integer"),
                      (dict(base=0, size=2.0), r"Entry\.size must be an integer, got 2\.0"),
                      (dict(base=4096), r"Entry\.base = 4096 does not fit its 12-bit field"),
                      (dict(base=0, size=1 << 16), r"Entry\.size = 65536 does not fit its 16-bit field"),
                      (dict(base=0, write=0.5), r"Entry\.write must be a bool"),
                      (dict(base=0, bcast=2), r"Entry\.bcast must be a bool")):
        with pytest.raises(ValueError, match=match):
            Entry(**kw)
    e = Entry(np.int64(3), 1, np.bool_(False), np.uint16(4))   # integer-likes are normalised
    assert (e.base, e.write, e.bcast, e.size) == (3, True, False, 4) and type(e.base) is int
    p = plan(SMALL, [Entry(0, size=2)], [0, 2], [0, 1])
    with pytest.raises(ValueError, match="mem must hold integer words, got dtype float64"):
        run(SMALL, p, np.arange(8) + 0.5)
    with pytest.raises(ValueError, match="mem must hold integer words, got 1.5"):
        run(SMALL, p, np.array([1.5] * 8, dtype=object))
    pw = plan(SMALL, [Entry(0, write=True, size=2)], [0, 4], [0, 1])
    with pytest.raises(ValueError, match=r"write_data\[0\] must hold integer words"):
        run(SMALL, pw, np.zeros(8, dtype=np.int64), [np.array([1.0, 2.0]), np.array([3, 4])])
    r = run(SMALL, pw, np.zeros(8, dtype=np.int64), [[1, 2], [3, 4]])
    assert r.mem.tolist() == [1, 2, 0, 0, 3, 4, 0, 0]
