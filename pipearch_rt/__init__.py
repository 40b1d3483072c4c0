"""PipeArch-RT: the PipeArch runtime manager (PipeArch sections 7 and 9.2) as a library.

* :mod:`pipearch_rt.jobs` -- job specifications (SGD / SCD / LRMF programs of
  ``golden.pipearch_programs`` with data, epochs, priority, arrival; user programs),
  building, placement and the golden references;
* :mod:`pipearch_rt.runtime` -- the scheduler: FCFS, RR, SJF, priority preemption,
  migration; rejection and failure of bad jobs;
* :mod:`pipearch_rt.backend` -- the back-end interface and the fast ISS-based model;
* :mod:`pipearch_rt.rtl` -- the RTL back end (cocotb, ``pipearch_system`` or one
  ``pipearch_pu``);
* :mod:`pipearch_rt.costs` -- the fast model's cycle costs and SJF's estimate, with
  where each number comes from;
* :mod:`pipearch_rt.workloads` -- the workloads of the tests and benchmarks;
* :mod:`pipearch_rt.bench` -- ``make bench``'s mixed-workload experiments.

Quick use::

    from pipearch_rt import FastBackend, Runtime, JobSpec, pu_config, run_sync
    cfg = pu_config()                                   # the default pipearch_pu netlist
    rt = Runtime(FastBackend(cfg, units=2, mem_bytes=1 << 20), "sjf")
    rt.submit(JobSpec("a", "sgd", dict(m=16, n=16, partition=4), epochs=2))
    rep = run_sync(rt.run())                            # under cocotb: await rt.run()
    rep.order, rep.median, rep.total
"""
from .backend import Backend, FastBackend, UnitEvent, run_sync  # noqa: F401
from .jobs import JobSpec, Rejected, build, pu_config  # noqa: F401
from .runtime import POLICIES, Report, Runtime  # noqa: F401
