"""Golden model of the PipeArch region against an independent dict-based reference and
hand-worked cases."""
from __future__ import annotations

import numpy as np
import pytest

from golden.pipearch_region import (Region, access_error, bram_addresses, decode_access,
                                    encode_access, run_region)


def test_word_layout_matches_table3():
    w = encode_access(length=5, offset=7, fifo=False, keep=True, use_amem=True)
    assert w == (1 << 31) | (5 << 16) | (1 << 15) | (1 << 14) | 7
    assert encode_access(3, 0, fifo=True) == (1 << 30) | (3 << 16)
    f = decode_access(w)
    assert f == {"bram": 1, "fifo": 0, "length": 5, "keep": 1, "use_amem": 1, "offset": 7}


@pytest.mark.parametrize("word,it,why", [
    (encode_access(2, 0) | (1 << 30), 1, "exactly one"),
    (encode_access(2, 0) & ~(1 << 31), 1, "exactly one"),
    (encode_access(0, 0), 1, "length is 0"),
    (encode_access(17, 0), 1, "exceeds depth"),
    (encode_access(2, 0), 0, "iterations is 0"),
])
def test_illegal_words(word, it, why):
    assert why in access_error(word, it, 16)
    r = Region(16, 2, "regular", 1, 4)
    assert why in r.read(0, word, it)
    assert why in r.write(word, it, np.zeros((0, 2), dtype=np.int64))


def test_edge_legal():
    assert access_error(encode_access(16, 0), 1, 16) is None
    assert access_error(encode_access(1, 15), 1, 16) is None
    assert access_error(encode_access(16, 15), 1, 16) is None      # runs past the end: wraps
    assert bram_addresses(encode_access(4, 14), 1, 16) == [14, 15, 0, 1]
    assert access_error(encode_access(2, 0x3FFF), 1, 16) is None    # offset modulo depth
    assert bram_addresses(encode_access(2, 0x3FFF), 1, 16) == [15, 0]


def test_keep_count_semantics():
    # keep: iteration j continues at j*length; no keep: each iteration restarts
    assert bram_addresses(encode_access(3, 2, keep=True), 2, 16) == [2, 3, 4, 5, 6, 7]
    assert bram_addresses(encode_access(3, 2, keep=False), 2, 16) == [2, 3, 4, 2, 3, 4]
    assert bram_addresses(encode_access(3, 14, keep=True), 2, 16) == [14, 15, 0, 1, 2, 3]  # wraps


def test_address_memory():
    am = np.array([5, 0, 9, 9])
    assert bram_addresses(encode_access(3, 1, use_amem=True), 2, 16, am, 4) == [6, 1, 10, 6, 1, 10]
    assert bram_addresses(encode_access(3, 8, keep=True, use_amem=True), 2, 16, am, 4) == \
        [13, 8, 1, 1, 13, 8]


def _reference(depth, lanes, config, nr, amd, ops):
    """Independent reference: dict memories, Python lists as FIFOs of (address) slots."""
    mem = {}
    fmem = {} if config == "type_replicated" else mem
    wp, rp, cnt = 0, 0, 0
    out = []
    for op in ops:
        w = op["access"]
        bram, fifo = w >> 31 & 1, w >> 30 & 1
        ln, keep, ua, off = w >> 16 & 0x3FFF, w >> 15 & 1, w >> 14 & 1, w & 0x3FFF
        if bram == fifo or ln == 0 or ln > depth or op["iters"] == 0:
            out.append("rejected")
            continue
        n = ln * op["iters"]
        if fifo:
            if op["kind"] == "write":
                for x in op["lines"]:
                    fmem[wp] = tuple(x)
                    wp = (wp + 1) % depth
                    cnt += 1
                out.append(None)
            else:
                res = []
                for _ in range(n):
                    res.append(fmem.get(rp, (0,) * lanes))
                    rp = (rp + 1) % depth
                    cnt -= 1
                out.append(res)
            continue
        addrs = []
        for k in range(n):
            i = k if keep else k % ln
            if ua:
                i = op["amem"][i % amd]
            addrs.append((off + i) % depth)
        if op["kind"] == "write":
            for a, x in zip(addrs, op["lines"]):
                mem[a] = tuple(x)
            out.append(None)
        else:
            out.append([mem.get(a, (0,) * lanes) for a in addrs])
    return out


@pytest.mark.parametrize("config", ["regular", "replicated", "type_replicated"])
@pytest.mark.parametrize("seed", range(6))
def test_random_against_reference(config, seed):
    rng = np.random.default_rng(seed)
    depth, lanes, nr, amd = 16, 3, 2, 8
    ops, fifo_n = [], 0
    for _ in range(40):
        kind = "write" if rng.random() < 0.5 else "read"
        fifo = rng.random() < 0.35
        ln = int(rng.integers(0, 6))
        off = int(rng.integers(0, 40)) if rng.random() < 0.8 else int(rng.integers(0, 0x4000))
        it = int(rng.integers(0, 3))
        w = encode_access(ln, off, fifo=fifo, keep=bool(rng.integers(0, 2)),
                          use_amem=bool(rng.integers(0, 2)))
        if rng.random() < 0.05:
            w |= 1 << (31 if fifo else 30)
        legal = access_error(w, it, depth) is None
        ch = int(rng.integers(0, nr))
        if fifo and legal:
            n = ln * it
            if kind == "write" and fifo_n + n > depth:
                continue
            if kind == "read" and fifo_n < n:
                continue
            fifo_n += n if kind == "write" else -n
        op = {"kind": kind, "ch": ch, "access": w, "iters": it,
              "amem": rng.integers(0, depth, amd)}
        if kind == "write":
            op["lines"] = rng.integers(-100, 100, size=(ln * it, lanes))
        ops.append(op)
    got = run_region(depth, lanes, config, nr, amd, ops)
    ref = _reference(depth, lanes, config, nr, amd, ops)
    for g, r, op in zip(got, ref, ops):
        if r == "rejected":
            assert isinstance(g, str)
        elif r is None:
            assert g is None
        else:
            assert [tuple(x) for x in g.tolist()] == r


def test_fifo_overflow_and_underflow_raise():
    r = Region(4, 1, "regular", 1, 2)
    a = encode_access(4, 0, fifo=True)
    r.write(a, 1, np.arange(4).reshape(4, 1))
    with pytest.raises(ValueError, match="full"):
        r.write(encode_access(1, 0, fifo=True), 1, np.zeros((1, 1), dtype=np.int64))
    assert r.read(0, a, 1).ravel().tolist() == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="empty"):
        r.read(0, encode_access(1, 0, fifo=True), 1)


def test_replicated_fifo_is_one_queue_and_shares_storage():
    r = Region(8, 1, "replicated", 2, 2)
    r.write(encode_access(3, 0, fifo=True), 1, np.array([[1], [2], [3]]))
    assert r.read(1, encode_access(2, 0, fifo=True), 1).ravel().tolist() == [1, 2]
    assert r.read(0, encode_access(1, 0, fifo=True), 1).ravel().tolist() == [3]   # popped once
    with pytest.raises(ValueError, match="empty"):
        r.read(1, encode_access(1, 0, fifo=True), 1)
    # the ring shares storage with BRAM mode
    assert r.read(0, encode_access(3, 0), 1).ravel().tolist() == [1, 2, 3]
    t = Region(8, 1, "type_replicated", 2, 2)
    t.write(encode_access(3, 0, fifo=True), 1, np.array([[1], [2], [3]]))
    assert t.read(0, encode_access(3, 0), 1).ravel().tolist() == [0, 0, 0]


def test_reset_fifo_keeps_storage():
    r = Region(8, 1, "regular", 1, 2)
    r.write(encode_access(3, 0, fifo=True), 1, np.array([[1], [2], [3]]))
    r.read(0, encode_access(1, 0, fifo=True), 1)
    r.reset_fifo()
    with pytest.raises(ValueError, match="empty"):
        r.read(0, encode_access(1, 0, fifo=True), 1)
    r.write(encode_access(1, 0, fifo=True), 1, np.array([[9]]))   # lands at line 0 again
    assert r.read(0, encode_access(3, 0), 1).ravel().tolist() == [9, 2, 3]


def test_validation():
    with pytest.raises(ValueError, match="config"):
        Region(8, 1, "bogus", 1, 2)
    r = Region(8, 2, "regular", 1, 4)
    with pytest.raises(ValueError, match="shape"):
        r.write(encode_access(2, 0), 1, np.zeros((3, 2), dtype=np.int64))
    with pytest.raises(ValueError, match="amem"):
        r.read(0, encode_access(2, 0, use_amem=True), 1, amem=np.zeros(3, dtype=np.int64))
    with pytest.raises(ValueError, match="ch"):
        r.read(1, encode_access(2, 0), 1)
    with pytest.raises(ValueError, match="kind"):
        run_region(8, 1, "regular", 1, 2, [{"kind": "erase"}])
