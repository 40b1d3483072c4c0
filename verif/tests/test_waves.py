"""WAVES=1 (``make sim CORE=<core> WAVES=1``): a tracing build (the flag is in the build
key, so switching it rebuilds), a waveform written for every simulation, its path in
``summary.json``, in a failure message and in the regression summary; a run asked for a
waveform that wrote none fails.  The probe DUT (``y = a + K``) on Icarus (FST) and
Verilator (VCD, parsed here: the recorded ``y`` is ``a + K`` at every change), and one
small core end to end through ``python -m verif.regress --waves`` on both simulators."""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from verif import harness
from verif.tests.test_regress import _regress


def _run(p, sim="icarus", **flags):
    env = {"PYTHONPATH": str(p.dir), "PROBE_OUT": str(p.out), **{k: str(v) for k, v in flags.items()}}
    run_top = getattr(harness.run_top, "_real", harness.run_top)
    return run_top(p.name, p.name, "default", sim, [p.src], [], {}, extra_env=env)


def _bdir(p, sim="icarus"):
    return harness.BUILD / "sim" / p.name / "default" / sim


def parse_vcd(text: str) -> tuple[dict, list]:
    """``({code: name}, [(time, {code: int value})])``, the state after each time step
    (x/z read as -1)."""
    names, steps, cur, t = {}, [], {}, None
    tokens = iter(text.split())
    for tok in tokens:
        if tok == "$var":
            _kind, _width, code, name = next(tokens), next(tokens), next(tokens), next(tokens)
            names.setdefault(code, name)
        elif tok.startswith("#") and tok[1:].isdigit():
            if t is not None:
                steps.append((t, dict(cur)))
            t = int(tok[1:])
        elif tok[0] in "bB":
            bits, code = tok[1:], next(tokens)
            cur[code] = int(bits, 2) if set(bits) <= {"0", "1"} else -1
        elif tok[0] in "01xzXZ" and len(tok) > 1 and tok[1:] in names:
            cur[tok[1:]] = int(tok[0]) if tok[0] in "01" else -1
    if t is not None:
        steps.append((t, dict(cur)))
    return names, steps


def test_waves_flag_is_in_the_build_key(tmp_path):
    src = tmp_path / "a.v"
    src.write_text("module a; endmodule\n")
    base = harness.build_key("icarus", "a", [src], [], {})
    assert harness.build_key("icarus", "a", [src], [], {}, waves=False) == base   # unchanged keys
    assert harness.build_key("icarus", "a", [src], [], {}, waves=True) != base


def test_waves_enabled_reads_like_cocotb(monkeypatch):
    for v, want in (("1", True), ("yes", True), ("ON", True), ("0", False), ("off", False), ("", False)):
        monkeypatch.setenv("WAVES", v)
        assert harness.waves_enabled() is want
    monkeypatch.delenv("WAVES")
    assert harness.waves_enabled() is False
    monkeypatch.setenv("WAVES", "maybe")
    with pytest.raises(ValueError, match="WAVES='maybe'"):
        harness.waves_enabled()


def test_icarus_waves_on_off_rebuilds_and_writes_fst(probe, monkeypatch):
    p = probe(k=3)
    monkeypatch.delenv("WAVES", raising=False)
    plain = _run(p, PROBE_K=3)
    fst = harness.waves_path(_bdir(p), "icarus", p.name)
    assert plain["outcome"] == "pass" and plain["waves"] == "" and not fst.exists()
    monkeypatch.setenv("WAVES", "1")
    traced = _run(p, PROBE_K=3)
    assert traced["outcome"] == "pass" and traced["build_key"] != plain["build_key"]
    assert traced["waves"] == str(fst) and fst.stat().st_size > 0
    assert (_bdir(p) / "cocotb_iverilog_dump.v").is_file()       # really a tracing build
    assert json.loads((_bdir(p) / "summary.json").read_text())["waves"] == str(fst)
    monkeypatch.setenv("WAVES", "0")
    again = _run(p, PROBE_K=3)                                     # back: rebuilt without tracing
    assert again["build_key"] == plain["build_key"] and again["waves"] == "" and not fst.exists()
    assert not (_bdir(p) / "cocotb_iverilog_dump.v").exists()


def test_failure_message_names_the_waveform(probe, monkeypatch):
    p = probe()
    monkeypatch.setenv("WAVES", "0")
    with pytest.raises(AssertionError) as e:
        _run(p, PROBE_FAIL=1)
    assert "waveform: add WAVES=1 to the replay command" in str(e.value)
    assert re.search(r"replay: make sim CORE=\S+ SIM=icarus CFG=default SEED=\d+ TESTCASE=maybe_fail$",
                     str(e.value), re.M)
    monkeypatch.setenv("WAVES", "1")
    with pytest.raises(AssertionError) as e:
        _run(p, PROBE_FAIL=1)
    fst = harness.waves_path(_bdir(p), "icarus", p.name)
    assert f"waveform: {fst}" in str(e.value) and fst.stat().st_size > 0


def test_missing_waveform_fails_the_run(probe, monkeypatch):
    """Negative: a simulator that wrote no waveform where one was asked for."""
    p = probe()
    monkeypatch.setenv("WAVES", "1")
    monkeypatch.setitem(harness.WAVE_FILES, "icarus", "not_written.fst")
    with pytest.raises(AssertionError, match="WAVES=1 but the simulator wrote no waveform"):
        _run(p)


@pytest.mark.skipif(shutil.which("verilator") is None, reason="Verilator not on PATH")
def test_verilator_vcd_records_the_dut(probe, monkeypatch):
    p = probe(k=5)
    monkeypatch.setenv("WAVES", "1")
    r = _run(p, "verilator", PROBE_K=5)
    vcd = Path(r["waves"])
    assert vcd == harness.waves_path(_bdir(p, "verilator"), "verilator", p.name) and vcd.is_file()
    names, steps = parse_vcd(vcd.read_text())
    code = {n: c for c, n in reversed(list(names.items()))}
    assert {"a", "y"} <= set(code), names
    a, y = code["a"], code["y"]
    seen = [(s[a], s[y]) for _, s in steps if s.get(a, -1) >= 0]
    # add_k drives 6 random values (and the other tests leave a as it is)
    assert len({v for v, _ in seen}) >= 4, seen
    assert all(yv == (av + 5) % 256 for av, yv in seen), seen
    # negative: the same check on a waveform of K=5 fails for K=4
    assert not all(yv == (av + 4) % 256 for av, yv in seen)


@pytest.mark.parametrize("sim", ["icarus", pytest.param("verilator", marks=pytest.mark.slow)])
def test_regress_waves_prints_each_waveform(tmp_path, sim):
    """``make sim CORE=l2reg SIM=<sim> CFG=small TESTCASE=dimension_edges WAVES=1`` (as the Makefile
    passes it): the summary lists the waveform, which exists and is non-empty."""
    exe = {"icarus": "iverilog", "verilator": "verilator"}[sim]
    if shutil.which(exe) is None:
        pytest.skip(f"{exe} not installed")
    r, summ, _ = _regress(tmp_path, "w", ["--core", "l2reg", "--sim", sim, "--cfg", "small",
                                          "--testcase", "dimension_edges", "--waves"], {})
    assert r.returncode == 0, summ
    m = re.search(r"^## Waveforms\n\n- l2reg/small/" + sim + r": (\S+)$", summ, re.M)
    assert m, summ
    path = Path(m.group(1))
    wave = path if path.is_absolute() else tmp_path / "build" / path
    assert wave.is_file() and wave.stat().st_size > 0, wave
    assert wave.name == harness.waves_path(Path("."), sim, "l2reg").name
