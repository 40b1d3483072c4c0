"""Thread migration (PipeArch 7.3): a job suspended on one ``pipearch_pu`` resumes on a
second instance.

The DUT is ``pipearch_pu_pair``, a wrapper (written by the launcher below from the
core's port list) holding two instances of the committed ``ip/pipearch_pu`` netlist
with their own host and memory ports (``pu0_*``, ``pu1_*``).  Each PU has its own
``AxiRam``.  The host suspends the job on PU 0 at a random time, copies the thread's
state (context area and the areas the program writes, ``job.state_areas()``) into PU 1's
memory, where the read-only data were placed beforehand, and starts it there -- back and
forth until it finishes.  Compared with the ISS at every suspension and with the golden
training run at the end.
"""
from __future__ import annotations

import cocotb
import numpy as np
import pytest

from golden import pipearch_isa as I
from verif.tb_common import sim_test
from verif.harness import BUILD, REPO, run_top
from verif.pipearch_pu.test_pipearch_pu import (TB, check_run, compare_mem, iss_for, model_of,
                                                 reset_mid_jobs, run_and_compare, scd_case, sgd_case,
                                                 yield_pcs)

NAME = "pipearch_pu_pair"


@sim_test(timeout_us={"default": 230, "*": 3680})  # measured 50.2 us on default
async def reset_during_jobs(dut):
    """Reset (shared by both PUs) at a seeded random cycle while PU 0 runs an SGD job and
    PU 1 an SCD job: both PUs' busy low, STATUS/ERROR/CYCLES at reset values, no AXI beat
    afterwards; then, memory rewritten by the host, each PU runs its job again and ends
    equal to the ISS (memory, PC trace) and the golden model."""
    tb = TB(dut, prefixes=("pu0_", "pu1_"))
    await tb.reset()
    ja, ma, ga = sgd_case(tb.cfg, tb.rng, loss="logistic", m=16, partition=4, epochs=2)
    jb, mb, gb = scd_case(tb.cfg, tb.rng, loss="lasso", m=16, n=5, epochs=2, partition=8)
    at = int(tb.rng.integers(20, 600))
    dut._log.info("reset %d cycles after the STARTs", at)
    await reset_mid_jobs(tb, [(tb.pus[0], ja, ma), (tb.pus[1], jb, mb)], at)
    await run_and_compare(tb, ja, ma, ga, "PU0 sgd after reset")
    tb.pus.reverse()                    # run_and_compare drives tb.pu = tb.pus[0]
    try:
        await run_and_compare(tb, jb, mb, gb, "PU1 scd after reset")
    finally:
        tb.pus.reverse()


@sim_test(timeout_us={"default": 170, "*": 2720})  # measured 35.8 us on default
async def migrate_back_and_forth(dut):
    """SGD job migrates between two PUs at random suspensions; the result equals an
    uninterrupted golden run and every suspension matches the ISS."""
    tb = TB(dut, prefixes=("pu0_", "pu1_"))
    await tb.reset()
    job, mem, gold = sgd_case(tb.cfg, tb.rng, loss="logistic", m=16, partition=4, epochs=2)
    for pu in tb.pus:
        pu.put(mem, 0, job.end)             # program, fresh context, data on both
    imem = mem.copy()
    iss = iss_for(tb, imem)
    cur, moves = 0, 0
    for start in range(60):
        pu = tb.pus[cur]
        st, err, trace, _ = await pu.run(job, switch_at=int(tb.rng.integers(20, 600)))  # run ~2000 cycles
        if st & I.ST_SUSPENDED:
            k = sum(1 for pc in trace if pc in yield_pcs(job))
            r = job.start(iss, switch_at_yield=k)
            check_run(f"PU{cur} start {start}", st, err, trace, r, "suspended")
            here = pu.get(job.end)
            compare_mem(f"PU{cur} start {start}", here, imem, 0, job.end)
            other = tb.pus[1 - cur]
            for a, n in job.state_areas():
                other.ram.write(a, bytes(here.data[a:a + n]))
            cur, moves = 1 - cur, moves + 1
            continue
        r = job.start(iss)
        check_run(f"PU{cur} start {start}", st, err, trace, r, "finished")
        break
    else:
        raise AssertionError("job did not finish after 60 starts")
    assert moves >= 1, "no migration happened"
    got = tb.pus[cur].get(job.end)
    compare_mem("after migration", got, imem, 0, job.end)
    assert np.array_equal(model_of(job, got), gold()), "migrated run differs from the golden run"
    dut._log.info("migrations=%d", moves)


def wrapper_source(ports) -> str:
    """Verilog for two pipearch_pu instances with prefixed host/memory/debug ports."""
    def decl(p, pre):
        w = f"[{p.width - 1}:0] " if int(p.width) > 1 else ""
        return f"    {'input' if p.direction == 'in' else 'output'} wire {w}{pre}{p.name}"
    shared = [p for p in ports if p.name in ("clk", "rst")]
    own = [p for p in ports if p.name not in ("clk", "rst")]
    lines = [f"// Written by verif/{NAME}/test_{NAME}.py (test wrapper, not an IP core).",
             f"module {NAME} ("]
    decls = [decl(p, "") for p in shared] + [decl(p, f"pu{i}_") for i in range(2) for p in own]
    lines.append(",\n".join(decls))
    lines.append(");")
    for i in range(2):
        conns = [f"        .{p.name}({p.name})" for p in shared] + \
                [f"        .{p.name}(pu{i}_{p.name})" for p in own]
        lines.append(f"    pipearch_pu u{i} (\n" + ",\n".join(conns) + "\n    );")
    lines.append("endmodule")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("sim", ["verilator", pytest.param("icarus", marks=pytest.mark.slow)])
def test_pipearch_pu_pair(sim):
    from rtl_gen.pipearch import pipearch_pu as m
    p = m.CORE.resolve({})
    out = BUILD / "gen" / NAME
    out.mkdir(parents=True, exist_ok=True)
    wrap = out / f"{NAME}.v"
    src = wrapper_source(m.port_list(p))
    if not wrap.exists() or wrap.read_text() != src:
        wrap.write_text(src)
    sources = [REPO / "ip" / "pipearch_pu" / "rtl" / "pipearch_pu.v", wrap]
    args = ["-Wall", "--output-split", "0"] if sim == "verilator" else []
    run_top(NAME, NAME, "default", sim, sources, args, p)


# bus protocol checkers (scoreboards/protocol.py) on every AXI4-Stream/AXI4/AXI4-Lite port
# of the toplevel, attached before each cocotb test; its violations must be zero at the end
from scoreboards.protocol import guard_tests  # noqa: E402

guard_tests(globals())
