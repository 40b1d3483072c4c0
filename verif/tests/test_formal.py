"""The formal flow (verif.formal) on its fastest jobs: the out_fifo2 block proof on the
scalar_engine netlist and the tready cone check must pass, and their negative variants
(mutated netlists) must come out FAILED -- a vacuous proof cannot pass this test."""
import pytest

from verif import formal


def _job(name):
    # fifo_jobs/struct_jobs read the committed netlists only (all_jobs also generates the
    # small variants of the stream proofs: seconds each)
    jobs = {j.name: j for j in formal.fifo_jobs() + formal.struct_jobs()}
    return jobs[name]


@pytest.mark.parametrize("name", ["scalar_engine.fifo2", "scalar_engine.fifo2.neg",
                                  "scalar_engine.tready", "scalar_engine.tready.neg"])
def test_formal_job_gives_expected_result(name):
    job = formal.run_job(_job(name))
    assert job.expect == ("FAIL" if name.endswith(".neg") else "PASS")
    assert job.result == job.expect, f"{name}: {job.result}\n{job.detail}"


def test_mutation_must_match():
    """A negative variant whose pattern is gone from the netlist is an error, not a pass."""
    with pytest.raises(ValueError, match="not found"):
        formal.mutated("module x; endmodule", (r"no such text", "y", 1))


def test_fifo_sites_found_in_every_listed_core():
    for core in formal.FIFO_CORES:
        sites = formal.fifo2_sites(core)
        assert sites, core
        for s in sites:
            assert s.push and s.not_full and s.m_tready and s.width > 2


def test_every_negative_variant_matches_its_committed_netlist():
    """Each mutant of the default set (committed netlists) finds its pattern exactly once
    there; a regenerated netlist that moved the text would otherwise error only in make formal."""
    for job in (formal.fifo_jobs() + formal.struct_jobs() + formal.axil_jobs() + formal.rm_live_jobs()
                + formal.pu_suberr_jobs()):
        if job.mutate and not job.params:
            formal.mutated(formal.netlist(job.core), job.mutate)


def test_pu_suberr_sites_found_in_the_committed_netlist():
    """The sub_err proof (pipearch_pu.suberr) finds the engine's seven issue-error registers
    and the five compute cores' done/cfg_err/busy in ip/pipearch_pu; a netlist without
    them is an error, not an empty (vacuous) property set."""
    sites = formal.pu_suberr_sites(formal.netlist("pipearch_pu"))
    assert len(sites.issue) == 7 and len(sites.cores) == 5
    assert all(c[1].endswith("_cfg_err") for c in sites.cores)
    with pytest.raises(ValueError, match="issue errors"):
        formal.pu_suberr_sites("module m; endmodule")
    jobs = {j.name: j for j in formal.pu_suberr_jobs()}
    assert jobs["pipearch_pu.suberr"].cone and jobs["pipearch_pu.suberr"].rom_logic
    assert jobs["pipearch_pu.suberr.neg"].expect == "FAIL"
