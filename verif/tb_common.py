"""Shared cocotb testbench for the PipeArch subroutine cores.

One :class:`SubroutineTB` per test: clock, reset, AXI4-Stream sources with seeded
random bubbles, a sink with seeded random backpressure, a monitor per output stream,
and a :class:`~scoreboards.checker.FixedScoreboard` fed by the golden model.
"""
from __future__ import annotations

import functools
import logging
import os
import random

import cocotb
import numpy as np
from cocotb.clock import Clock
from cocotb.simtime import get_sim_time
from cocotb.triggers import ClockCycles, FallingEdge, ReadOnly, RisingEdge, SimTimeoutError, with_timeout

from golden.fixedpoint import QFormat
from scoreboards.axis import AxisMonitor, AxisSink, AxisSource
from scoreboards.checker import FixedScoreboard, StreamSpec, pack_lanes
from scoreboards.gates import Gate
from scoreboards.waits import (DEFAULT_CYCLES, StallError, clear_watched, set_seed_source, stall_message, wait_until,
                              within)
from verif.harness import CLOCK_NS, dut_params


_SEED_LOGGED: set = set()


def sim_seed() -> int:
    """The running cocotb test's stimulus seed: ``verif.harness.test_seed(run seed, test
    name)``.  The run seed is ``MLACCEL_SEED`` (the harness sets it and
    ``COCOTB_RANDOM_SEED``), else cocotb's regression seed; both are logged once per
    test with the command that replays it (``make sim ... SEED=<run seed>
    TESTCASE=<test>``), so a failure repeats exactly."""
    from verif.harness import test_seed
    run = os.environ.get("MLACCEL_SEED", "").strip()
    try:
        from cocotb import regression
        mgr = regression._manager_inst
        name = mgr._test.name
        run = int(run, 0) if run else int(mgr._regression_seed)
    except (ImportError, AttributeError, ValueError):  # cocotb internals moved: still deterministic
        name = os.environ.get("COCOTB_TEST_FILTER", "?")
        run = int(run, 0) if run else int(os.environ.get("COCOTB_RANDOM_SEED", "0") or 0)
    seed = test_seed(run, name)
    if name not in _SEED_LOGGED:
        _SEED_LOGGED.add(name)
        log = getattr(cocotb, "log", None) or logging.getLogger("cocotb")
        log.info("seed: run seed %d, test %s -> stimulus seed %d (replay: SEED=%d TESTCASE=%s)",
                 run, name, seed, run, name)
    return seed


set_seed_source(sim_seed)

#: simulated-time bound (us) of a cocotb test that declares none: 2 M cycles at 10 ns
DEFAULT_TIMEOUT_US = 20_000.0


def _bound_for_cfg(timeout_us) -> float:
    """``timeout_us`` is a number, or a dict {config: us} with an optional ``"*"``
    entry for the configs not listed (the launcher passes the config in DUT_CFG).
    The environment variable SIM_TIMEOUT_SCALE (default 1) multiplies every bound."""
    scale = float(os.environ.get("SIM_TIMEOUT_SCALE", "1") or 1)
    if timeout_us is None:
        return DEFAULT_TIMEOUT_US * scale
    if isinstance(timeout_us, dict):
        cfg = os.environ.get("DUT_CFG", "")
        if cfg in timeout_us:
            return float(timeout_us[cfg]) * scale
        if "*" in timeout_us:
            return float(timeout_us["*"]) * scale
        return max(float(v) for v in timeout_us.values()) * scale
    return float(timeout_us) * scale


def sim_test(timeout_us=None, **kwargs):
    """``@sim_test()`` in place of ``@cocotb.test()``: the test fails once it has run
    ``timeout_us`` of simulated time (a number or a dict per config, see
    :func:`_bound_for_cfg`; :data:`DEFAULT_TIMEOUT_US` when omitted), with a message
    listing the stalled interfaces and the seed.  cocotb's own ``timeout_time`` is set
    a little later as a backstop.  Other keyword arguments go to :func:`cocotb.test`."""
    bound = _bound_for_cfg(timeout_us)

    def deco(fn):
        @functools.wraps(fn)
        async def bounded(dut, *a, **kw):
            clear_watched()
            t0 = get_sim_time("us")
            try:
                return await with_timeout(fn(dut, *a, **kw), bound, "us")
            except SimTimeoutError:
                if get_sim_time("us") - t0 < bound - 0.001:
                    raise  # a timeout of the test's own, not the bound
                raise StallError(stall_message(f"test {fn.__name__}: simulated-time bound of {bound:g} us reached",
                                               int(bound * 1000 / CLOCK_NS),
                                               expect="the test to finish")) from None
        return cocotb.test(timeout_time=bound * 1.05 + 1.0, timeout_unit="us", **kwargs)(bounded)
    return deco


def rand_words(rng: np.random.Generator, shape, fmt: QFormat, extreme: float = 0.1,
               scale: float | None = None):
    """Random fixed-point words: mostly moderate values, a fraction at or near the rails."""
    scale = scale if scale is not None else 4.0
    lim = min(fmt.max_int, int(scale * fmt.one))
    v = rng.integers(-lim, lim + 1, size=shape, dtype=np.int64)
    if extreme > 0:
        m = rng.random(shape) < extreme
        rails = rng.choice(np.array([fmt.min_int, fmt.max_int, fmt.min_int + 1, fmt.max_int - 1, 0, -1, 1]),
                           size=shape)
        v = np.where(m, rails, v)
    return v


class SubroutineTB:
    def __init__(self, dut, inputs: list[str], outputs: dict[str, StreamSpec],
                 src_p: float = 1.0, sink_p: float = 1.0, seed: int | None = None):
        self.dut = dut
        self.p = dut_params()
        self.fmt = QFormat(self.p["W"], self.p["F"])
        self.seed = sim_seed() if seed is None else seed
        self.rng = np.random.default_rng(self.seed)
        dut._log.info("seed=%d params=%s", self.seed, self.p)
        self.clk = dut.clk
        cocotb.start_soon(Clock(dut.clk, CLOCK_NS, unit="ns").start())
        self.inputs = list(inputs)
        self.src_p = src_p
        self._make_sources()
        self.sb = FixedScoreboard(dut)
        self.mon = {}
        self.exp = {}
        self.sinks = {}
        for i, (n, spec) in enumerate(outputs.items()):
            self.sinks[n] = AxisSink(dut, n, dut.clk, Gate(self.seed * 13 + i + 101, sink_p))
            self.mon[n] = AxisMonitor(dut, n, dut.clk, reset=dut.rst)
            self.exp[n] = self.sb.add_stream(self.mon[n], spec)
        dut.start.value = 0
        self.done_count = 0
        cocotb.start_soon(self._count_done())

    async def _count_done(self):
        while True:
            await RisingEdge(self.clk)
            await ReadOnly()
            if self.dut.done.value.is_resolvable and int(self.dut.done.value):
                self.done_count += 1

    def _make_sources(self, salt: int = 0):
        self.src = {n: AxisSource(self.dut, n, self.dut.clk, Gate(self.seed * 7 + i + 1 + salt, self.src_p))
                    for i, n in enumerate(self.inputs)}

    async def abort_and_reset(self):
        """Reset in the middle of work: drop queued stimulus and pending expectations,
        restart the drivers, pulse reset.  Anything the DUT emits afterwards must come
        from new work."""
        for s in self.src.values():
            s.kill()
            s.tvalid.value = 0
        await self.reset()
        self._make_sources(salt=1000)
        for q in self.exp.values():
            q.clear()
        self.done_count = 0

    async def reset(self, cycles: int = 3):
        self.dut.rst.value = 1
        await ClockCycles(self.clk, cycles)
        self.dut.rst.value = 0
        await RisingEdge(self.clk)

    def lanes(self) -> int:
        return self.p["LANES"]

    def send_lines(self, name: str, lines, last_every: int | None = None):
        for k, line in enumerate(lines):
            last = 1 if last_every and (k + 1) % last_every == 0 else 0
            self.src[name].append((pack_lanes(line, self.p["W"]), last))

    def send_words(self, name: str, words):
        for w_ in words:
            self.src[name].append((int(w_) & ((1 << self.p["W"]) - 1), 0))

    def expect_lines(self, name: str, lines, dimension: int):
        for k, line in enumerate(lines):
            self.exp[name].append((pack_lanes(line, self.p["W"]), 1 if (k + 1) % dimension == 0 else 0))

    def expect_words(self, name: str, words, lasts=None):
        w = self.p["W"]
        for k, v in enumerate(words):
            self.exp[name].append((int(v) & ((1 << w) - 1), 1 if lasts is None else lasts[k]))

    async def initiate(self, **fields):
        """Wait until not busy (at most ``busy_cycles``, default DEFAULT_CYCLES), then
        pulse start with the given cfg_* fields."""
        await wait_until(self.clk, lambda: not int(self.dut.busy.value), getattr(self, "busy_cycles", DEFAULT_CYCLES),
                         "busy held high", expect="busy to drop so the next start is taken")
        for k, v in fields.items():
            getattr(self.dut, f"cfg_{k}").value = int(v) & ((1 << len(getattr(self.dut, f"cfg_{k}"))) - 1)
        self.dut.start.value = 1
        await RisingEdge(self.clk)
        self.dut.start.value = 0

    async def wait_done(self, count: int, timeout: int = DEFAULT_CYCLES) -> int:
        """Wait until ``count`` done pulses in total; returns cycles waited."""
        return await wait_until(self.clk, lambda: self.done_count >= count, timeout - 1, "done: no pulse",
                                expect=f"{count} done pulses", detail=lambda: f"{self.done_count} seen")

    async def finish(self, settle: int = 20):
        """Let late (extra) outputs show up, then check protocol and the scoreboard."""
        await ClockCycles(self.clk, settle)
        for n, m in self.mon.items():
            assert m.protocol_errors == 0, f"{n}: {m.protocol_errors} AXI4-Stream hold violations"
        self.sb.check()


def line_spec(name: str, p: dict) -> StreamSpec:
    return StreamSpec(name, [(name, p["LANES"], p["W"], p["F"])])


def word_spec(name: str, p: dict, fields=("y",)) -> StreamSpec:
    return StreamSpec(name, [(f, 1, p["W"], p["F"]) for f in fields])


def rng_py(seed: int) -> random.Random:
    return random.Random(seed)


def env_flag(name: str) -> bool:
    return os.environ.get(name, "") not in ("", "0")


def record_bench(name: str, **metrics):
    """Write one benchmark record (read by ``make bench``) into the build directory.

    Only ``bench_*`` cocotb tests call this.  The record is written first (so ``make
    bench`` shows the number either way), then checked against the datasheet figures of
    ``verif/bench_limits.py``: a broken promise raises ``AssertionError`` naming core,
    config, simulator, field, measured and promised figures, failing the bench test."""
    import json
    from pathlib import Path

    from verif.bench_limits import failures
    out = Path(os.environ.get("BENCH_DIR", "build/bench"))
    out.mkdir(parents=True, exist_ok=True)
    rec = {"core": name, "cfg": os.environ.get("DUT_CFG", "?"), "sim": os.environ.get("DUT_SIM", "?"),
           **metrics}
    (out / f"{name}-{rec['cfg']}-{rec['sim']}.json").write_text(json.dumps(rec, indent=1))
    broken = failures(rec)
    assert not broken, "benchmark below its datasheet:\n" + "\n".join(broken)
    return rec


def steady_cycles_per_beat(times: list[int]) -> float:
    """Cycles per output beat between the first and the last beat (1.0 = one per cycle)."""
    if len(times) < 2:
        raise ValueError("need at least two beats to measure throughput")
    return (times[-1] - times[0]) / (len(times) - 1)


class StartDoneMixin:
    """The start/busy/done handshake of the FPDeep stage testbenches (the cores follow
    the PipeArch subroutine protocol: ``start`` is taken only while ``busy`` is low;
    ``done`` pulses once per map).  The testbench class sets ``self.dut``/``self.clk``,
    ``self.done_count = 0`` and starts ``self._count_done()``."""

    async def _count_done(self):
        while True:
            await RisingEdge(self.clk)
            await ReadOnly()
            if self.dut.done.value.is_resolvable and int(self.dut.done.value):
                self.done_count += 1

    async def initiate(self, **fields):
        # busy is sampled at the falling edge: just after a rising edge a simulator may still
        # show its value from before the edge, and a start given to a busy core is ignored
        await FallingEdge(self.clk)
        await wait_until(self.clk, lambda: not int(self.dut.busy.value), getattr(self, "busy_cycles", DEFAULT_CYCLES),
                         "busy held high", expect="busy to drop so the next start is taken", edge=FallingEdge)
        for k, v in fields.items():
            sig = getattr(self.dut, f"cfg_{k}")
            sig.value = int(v) & ((1 << len(sig)) - 1)
        self.dut.start.value = 1
        await RisingEdge(self.clk)
        self.dut.start.value = 0

    async def wait_done(self, count, timeout=100000):
        return await wait_until(self.clk, lambda: self.done_count >= count, timeout - 1, "done: no pulse",
                                expect=f"{count} done pulses", detail=lambda: f"{self.done_count} seen")


async def start_while_busy(dut, clk, fields: dict, start: str = "start", busy: str | tuple = "busy",
                           cfg_prefix: str = "cfg_", pulses: int = 3, timeout: int = 100000,
                           bit: int | None = None) -> int:
    """Pulse ``start`` with other ``cfg_*`` values while the core is busy (the datasheets'
    "start while busy is ignored"): wait (bounded) until ``busy`` is high, then in each of up
    to ``pulses`` consecutive cycles in which ``busy`` is still high at the falling edge
    drive ``fields`` and pulse ``start``.  The fields are left driven, so a core that keeps
    reading its cfg inputs after the accepted start shows it too.  ``bit`` selects one bit
    of a vector start/busy (e.g. ``sub_start[s]``).  ``busy`` may name several signals (a
    start shared by several cores): pulses are given only while all of them are high.
    Returns the number of pulses given; fails if ``busy`` never rose."""
    names = [busy] if isinstance(busy, str) else list(busy)
    start_sig, busy_sigs = getattr(dut, start), [getattr(dut, n) for n in names]
    busy = "+".join(names)

    def is_busy():
        return all(bool(int(s.value) >> bit & 1) if bit is not None else bool(int(s.value)) for s in busy_sigs)

    await FallingEdge(clk)
    await wait_until(clk, is_busy, timeout, f"start_while_busy: {busy} never rose", edge=FallingEdge,
                     expect=f"{busy} high after the accepted start")
    given = 0
    for _ in range(pulses):
        if not is_busy():
            break
        for k, v in fields.items():
            sig = getattr(dut, f"{cfg_prefix}{k}")
            sig.value = int(v) & ((1 << len(sig)) - 1)
        start_sig.value = (1 << bit) if bit is not None else 1
        await RisingEdge(clk)
        start_sig.value = 0
        given += 1
        await FallingEdge(clk)
    assert given > 0, f"start_while_busy: {busy} fell before any start could be given"
    return given
