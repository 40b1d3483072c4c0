"""``python -m tablac`` command line."""
import json
import subprocess
import sys

import numpy as np

import tablac
from golden.cosmic_pe import Instr, PEConfig
from tablac.__main__ import main

PROG = str(tablac.program_path("logistic"))


def test_compile_writes_every_output(tmp_path, capsys):
    out = tmp_path / "o"
    rc = main(["compile", PROG, "--pes", "8", "--threads", "2", "-D", "m=10", "--mapper", "mlrcs",
               "-o", str(out), "--dot", str(tmp_path / "g.dot")])
    assert rc == 0
    rep = capsys.readouterr().out
    assert "cycles per training sample" in rep and "mapper mlrcs" in rep
    for f in ("microcode.asm", "memory_schedule.json", "thread_table.json", "layout.json",
              "aggregation.json", "tree_bus.json", "pe_config.json", "report.txt"):
        assert (out / f).is_file(), f
    cfg = PEConfig(**json.loads((out / "pe_config.json").read_text()))
    hexes = sorted((out / "microcode").glob("pe*.hex"))
    assert len(hexes) == 4                       # 8 PEs, 2 threads: 4 programs per thread
    lens = {len(h.read_text().split()) for h in hexes}
    assert len(lens) == 1
    ops = 0
    for h in hexes:
        for w in h.read_text().split():
            ins = Instr.decode(int(w, 16), cfg)
            assert ins.op <= 13
            ops += ins.op != 0
    assert ops > 0
    ms = json.loads((out / "memory_schedule.json").read_text())
    assert sum(e["size"] for e in ms["sample_entries"]) == 11       # x[0..9], y
    tt = json.loads((out / "thread_table.json").read_text())
    assert [t["pe_offset"] for t in tt["threads"]] == [0, 4]
    lay = json.loads((out / "layout.json").read_text())
    assert lay["data_region"]["sample"] == [f"x[{i}]" for i in range(10)] + ["y"]
    assert (tmp_path / "g.dot").read_text().startswith("digraph")


def test_target_and_dot_subcommand(tmp_path):
    t = tmp_path / "t.json"
    t.write_text(json.dumps({"dsps": 16, "brams": 64, "bram_words": 512, "bandwidth_words": 4,
                             "minibatch": 2}))
    assert main(["compile", PROG, "--target", str(t), "-D", "m=8", "-o", str(tmp_path / "o")]) == 0
    tt = json.loads((tmp_path / "o" / "thread_table.json").read_text())
    assert len(tt["threads"]) == 2               # t_max = min(storage, 4 rows, mini-batch 2)
    assert main(["dot", PROG, "-o", str(tmp_path / "d.dot")]) == 0
    assert "digraph" in (tmp_path / "d.dot").read_text()


def test_errors_are_one_line_no_traceback(tmp_path):
    bad = tmp_path / "bad.t"
    bad.write_text("model w[4];\nx = ;\n")
    cases = [["compile", PROG, "--pes", "30", "-o", str(tmp_path / "a")],
             ["compile", str(bad), "--pes", "8", "-o", str(tmp_path / "b")],
             ["compile", PROG, "-o", str(tmp_path / "c")],
             ["compile", PROG, "--pes", "8", "--target", "x.json", "-o", str(tmp_path / "d")],
             ["compile", str(tmp_path / "missing.t"), "--pes", "8", "-o", str(tmp_path / "e")]]
    for argv in cases:
        r = subprocess.run([sys.executable, "-m", "tablac", *argv], capture_output=True, text=True,
                           timeout=120)
        assert r.returncode == 1, argv
        assert "error:" in r.stderr and "Traceback" not in r.stderr, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1


def test_machine_runs_the_written_microcode(tmp_path):
    """The hex files are the programs the machine runs (codegen's words, not a re-encoding)."""
    from tablac.__main__ import build
    import argparse
    out = tmp_path / "o"
    assert main(["compile", PROG, "--pes", "8", "-D", "m=6", "--dot-group", "2", "-o", str(out)]) == 0
    args = argparse.Namespace(program=PROG, define=["m=6"], target=None, pes=8, threads=None,
                              dot_group="2", mapper="cosmic", bypass=1, recompute=None)
    g, plan, comp = build(args)
    for pe, words in enumerate(comp.programs):
        got = [int(w, 16) for w in (out / "microcode" / f"pe{pe:03d}.hex").read_text().split()]
        assert got == words
    assert np.all([len(w) == comp.length for w in comp.programs])
