"""The protocol rules of scoreboards.protocol, fed cycle by cycle without a simulator.

Each rule gets legal traffic (must report nothing) and each violation it knows about
(must report exactly that).  The same rules on a simulated bus are exercised by
test_protocol_sim.py."""
from __future__ import annotations

import pytest

from scoreboards.protocol import (OKAY, SLVERR, Axi4MasterRule, AxilSlaveRule, AxisRule,
                                  find_ports, to_int)

IDLE = (0, 0, None)


# ----------------------------------------------------------------- AXI4-Stream
def _axis(seq, reset_first=True):
    r = AxisRule("s_axis_x")
    if reset_first:
        r.in_reset()
    for v, rd, p in seq:
        r.cycle(v, rd, p)
    return r


def test_axis_legal_stall_and_handshake():
    r = _axis([(1, 0, (5, 0)), (1, 0, (5, 0)), (1, 1, (5, 0)), (1, 1, (6, 1)), (0, 1, None), (0, 0, None)])
    assert r.errors == 0 and r.handshakes == 2


@pytest.mark.parametrize("field", [0, 1, 2, 3])  # tdata, tlast, tuser, tkeep
def test_axis_payload_change_while_stalled(field):
    a = (0x12, 0, 1, 0xF)
    b = tuple(x ^ 1 if i == field else x for i, x in enumerate(a))
    r = _axis([(1, 0, a), (1, 1, b)])
    assert r.errors == 1 and "payload changed" in r.messages[0]


def test_axis_valid_dropped_while_stalled():
    r = _axis([(1, 0, (1,)), (0, 0, None)])
    assert r.errors == 1 and "VALID dropped" in r.messages[0]


def test_axis_waived_withdrawal_counts_down():
    r = AxisRule("s_axis_wr1")
    r.h.waived = 1                                   # what waive_withdraw declares
    for _ in range(2):
        r.cycle(1, 0, (1,))
        r.cycle(0, 0, None)
    assert r.errors == 1 and r.h.waived == 0        # only the declared withdrawal is excused
    r.cycle(1, 0, (1,))
    r.cycle(1, 1, (2,))
    assert r.errors == 2                             # the waiver never covers a payload change


def test_axis_change_after_handshake_is_legal():
    assert _axis([(1, 1, (1,)), (1, 0, (2,)), (1, 1, (2,)), (0, 0, None)]).errors == 0


def test_axis_x_on_valid_or_ready_after_reset():
    assert _axis([(None, 1, None)]).errors == 1
    assert _axis([(0, None, None)]).errors == 1
    # before any reset was seen, X is the power-up state and not a violation
    assert _axis([(None, None, None)], reset_first=False).errors == 0


def test_axis_reset_clears_pending_hold():
    r = AxisRule("m_axis_y")
    r.cycle(1, 0, (3,))
    r.in_reset()
    r.cycle(0, 0, None)
    assert r.errors == 0


# ----------------------------------------------------------------- AXI4 master
def _ar(addr, ln, size=4, burst=1, id_=0):
    return (addr, ln, size, burst, id_)


def _run(rule, cycles):
    for c in cycles:
        rule.cycle(c)
    return rule


def _idle():
    return {ch: IDLE for ch in Axi4MasterRule.CH}


def _c(**chans):
    d = _idle()
    d.update(chans)
    return d


def _write_burst(addr, n, lasts=None, size=4):
    """Cycles of one legal write: AW, n W beats, B."""
    lasts = lasts or [int(i == n - 1) for i in range(n)]
    cyc = [_c(aw=(1, 1, _ar(addr, n - 1, size)))]
    cyc += [_c(w=(1, 1, (i, 0xFFFF, lasts[i]))) for i in range(n)]
    cyc += [_c(b=(1, 1, (0, OKAY)))]
    return cyc


def _read_burst(addr, n, lasts=None, size=4):
    lasts = lasts or [int(i == n - 1) for i in range(n)]
    cyc = [_c(ar=(1, 1, _ar(addr, n - 1, size)))]
    cyc += [_c(r=(1, 1, (0, i, OKAY, lasts[i]))) for i in range(n)]
    return cyc


def _m(max_beats=256):
    r = Axi4MasterRule("m_axi", 16, max_beats)
    r.in_reset()
    return r


def test_axi_legal_traffic():
    r = _run(_m(), _write_burst(0x1000, 4) + _read_burst(0x2000, 3) + _write_burst(0xFF0, 1))
    r.final()
    assert r.errors == 0, r.messages
    assert r.count == {"ar": 1, "aw": 2, "w": 5, "r": 3, "b": 2}


def test_axi_w_before_aw_is_legal():
    cyc = [_c(w=(1, 1, (i, 0xFFFF, int(i == 1)))) for i in range(2)]
    cyc += [_c(aw=(1, 1, _ar(0x40, 1))), _c(b=(1, 1, (0, OKAY)))]
    r = _run(_m(), cyc)
    r.final()
    assert r.errors == 0, r.messages


def test_axi_w_before_aw_wrong_length():
    cyc = [_c(w=(1, 1, (0, 0xFFFF, 1))), _c(aw=(1, 1, _ar(0x40, 1)))]
    r = _run(_m(), cyc)
    assert r.errors == 1 and "AWLEN" in r.messages[0]


@pytest.mark.parametrize("ch", ["ar", "aw"])
def test_axi_address_hold(ch):
    r = _run(_m(), [_c(**{ch: (1, 0, _ar(0x100, 3))}), _c(**{ch: (1, 0, _ar(0x110, 3))})])
    assert r.errors == 1 and "payload changed" in r.messages[0]
    r = _run(_m(), [_c(**{ch: (1, 0, _ar(0x100, 3))}), _idle()])
    assert r.errors == 1 and "VALID dropped" in r.messages[0]


def test_axi_w_hold():
    r = _run(_m(), [_c(w=(1, 0, (7, 0xFFFF, 0))), _c(w=(1, 1, (8, 0xFFFF, 0)))])
    assert any("w: payload changed" in m for m in r.messages)


def test_axi_4k_crossing():
    r = _run(_m(), [_c(ar=(1, 1, _ar(0xFF0, 1)))])
    assert r.errors == 1 and "4 KiB" in r.messages[0]
    r = _run(_m(), [_c(aw=(1, 1, _ar(0x1FC0, 3)))])        # ends exactly at 0x2000: legal
    assert r.errors == 0


@pytest.mark.parametrize("pay,what", [
    (_ar(0, 0, size=5), "wider than"),                     # 32 B beats on a 16 B bus
    (_ar(0, 0, burst=3), "reserved"),
    (_ar(0, 16, burst=0), "FIXED"),
    (_ar(0, 2, burst=2), "WRAP burst of 3"),
    (_ar(8, 1, burst=2), "not aligned"),
    (_ar(0, 16), "INCR burst of 17 beats > 16"),
])
def test_axi_burst_legality(pay, what):
    r = Axi4MasterRule("m_axi", 16, max_beats=16)
    r.cycle(_c(ar=(1, 1, pay)))
    assert r.errors >= 1 and any(what in m for m in r.messages), r.messages


def test_axi_wlast_missing_and_early():
    r = _run(_m(), _write_burst(0, 3, lasts=[0, 0, 0]))
    assert any("WLAST missing on beat 3" in m for m in r.messages)
    r = _run(_m(), _write_burst(0, 3, lasts=[0, 1, 0])[:-1])
    assert any("WLAST on beat 2 of a 3-beat" in m for m in r.messages)


def test_axi_b_before_write_complete_and_missing_b():
    cyc = [_c(aw=(1, 1, _ar(0, 1))), _c(w=(1, 1, (0, 0xFFFF, 0))), _c(b=(1, 1, (0, OKAY)))]
    r = _run(_m(), cyc)
    assert r.errors == 1 and "BVALID" in r.messages[0]
    r = _run(_m(), _write_burst(0, 2)[:-1])
    r.final()
    assert r.errors == 1 and "never got a B" in r.messages[0]


def test_axi_r_without_ar_rlast_and_missing_r():
    r = _run(_m(), [_c(r=(1, 1, (0, 0, OKAY, 1)))])
    assert r.errors == 1 and "no outstanding read" in r.messages[0]
    r = _run(_m(), _read_burst(0, 3, lasts=[0, 0, 0]))
    assert any("RLAST=0 on the last beat" in m for m in r.messages)
    r = _run(_m(), _read_burst(0, 3)[:-1])
    r.final()
    assert r.errors == 1 and "never completed" in r.messages[0]


def test_axi_response_hold():
    r = _run(_m(), [_c(ar=(1, 1, _ar(0, 1))), _c(r=(1, 0, (0, 5, OKAY, 0))), _c(r=(1, 1, (0, 6, OKAY, 0)))])
    assert any("r: payload changed" in m for m in r.messages)


def test_axi_x_on_valid():
    c = _idle()
    c["aw"] = (None, 1, None)
    assert _run(_m(), [c]).errors == 1


# ----------------------------------------------------------------- AXI4-Lite slave
def _l():
    r = AxilSlaveRule("s_axil")
    r.in_reset()
    return r


def _lc(**chans):
    d = {ch: IDLE for ch in AxilSlaveRule.CH}
    d.update(chans)
    return d


def _lwrite(addr, resp=OKAY):
    return [_lc(aw=(1, 1, (addr, 0)), w=(1, 1, (1, 0xF))), _lc(b=(1, 1, (resp,)))]


def _lread(addr, resp=OKAY):
    return [_lc(ar=(1, 1, (addr, 0))), _lc(r=(1, 1, (7, resp)))]


def test_axil_legal():
    cyc = _lwrite(0) + _lread(4)
    # W before AW, response held three cycles under backpressure
    cyc += [_lc(w=(1, 1, (2, 0xF))), _lc(aw=(1, 1, (8, 0))), _lc(b=(1, 0, (OKAY,))), _lc(b=(1, 0, (OKAY,))),
            _lc(b=(1, 1, (OKAY,)))]
    r = _run(_l(), cyc)
    r.final()
    assert r.errors == 0, r.messages
    assert r.count["b"] == 2 and r.count["r"] == 1


@pytest.mark.parametrize("ch,pay,pay2", [("b", (OKAY,), (SLVERR,)), ("r", (7, OKAY), (8, OKAY)),
                                          ("r", (7, OKAY), (7, SLVERR))])
def test_axil_response_hold(ch, pay, pay2):
    req = _lwrite(0)[0] if ch == "b" else _lread(0)[0]
    r = _run(_l(), [req, _lc(**{ch: (1, 0, pay)}), _lc(**{ch: (1, 1, pay2)})])
    assert any("payload changed" in m for m in r.messages)
    r = _run(_l(), [req, _lc(**{ch: (1, 0, pay)}), _lc()])
    assert any("VALID dropped" in m for m in r.messages)


def test_axil_response_without_request():
    r = _run(_l(), [_lc(b=(1, 1, (OKAY,)))])
    assert r.errors == 1 and "BVALID" in r.messages[0]
    r = _run(_l(), [_lc(aw=(1, 1, (0, 0))), _lc(b=(1, 1, (OKAY,)))])  # W still missing
    assert r.errors == 1
    r = _run(_l(), [_lc(r=(1, 1, (0, OKAY)))])
    assert r.errors == 1 and "RVALID" in r.messages[0]
    r = _run(_l(), _lread(0) + [_lc(r=(1, 1, (0, OKAY)))])  # two responses to one request
    assert r.errors == 1


def test_axil_missing_response():
    r = _run(_l(), _lwrite(0)[:1] + _lread(0)[:1])
    r.final()
    assert r.errors == 2


def test_axil_error_response_rule():
    # datasheet default: OKAY always
    r = _run(_l(), _lwrite(0, SLVERR))
    assert r.errors == 1 and "BRESP=2" in r.messages[0]
    # a core that must answer SLVERR above 0x40
    want = lambda kind, addr: SLVERR if addr >= 0x40 else OKAY  # noqa: E731
    r = AxilSlaveRule("s_axil", want)
    _run(r, _lread(0x44, SLVERR) + _lread(0x4, OKAY) + _lwrite(0x80, SLVERR))
    assert r.errors == 0, r.messages
    _run(r, _lread(0x48, OKAY))
    assert r.errors == 1 and "RRESP=0" in r.messages[0]


def test_axil_in_order_responses_checked_by_address():
    # two reads outstanding; responses are matched in request order
    want = lambda kind, addr: SLVERR if addr == 0x44 else OKAY  # noqa: E731
    r = AxilSlaveRule("s_axil", want)
    _run(r, [_lc(ar=(1, 1, (0x0, 0))), _lc(ar=(1, 1, (0x44, 0))),
             _lc(r=(1, 1, (0, SLVERR))), _lc(r=(1, 1, (0, OKAY)))])  # swapped: both wrong
    assert r.errors == 2


# ----------------------------------------------------------------- helpers
class _FakeDut:
    def __init__(self, names):
        self.names = names

    def _keys(self):
        return self.names


def test_find_ports():
    names = ["clk", "rst", "s_axis_a_tvalid", "s_axis_a_tready", "s_axis_a_tdata", "m_axis_tvalid",
             "m_axis_tready", "m_axi_arvalid", "m_axi_awvalid", "s_axil_awvalid", "s_axil_arvalid",
             "m_axis_pe_tvalid", "m_axis_pe_tready", "s_tvalid"]
    assert find_ports(_FakeDut(names)) == {"axis": ["m_axis", "m_axis_pe", "s_axis_a"], "axi": ["m_axi"],
                                           "axil": ["s_axil"]}
    # instance-prefixed ports of the composed benches (two PUs, a chain of nodes)
    names = ["pu0_m_axi_arvalid", "pu0_m_axi_awvalid", "pu1_s_axil_awvalid", "n0_s_axis_w_tvalid",
             "n0_s_axis_w_tready"]
    assert find_ports(_FakeDut(names)) == {"axis": ["n0_s_axis_w"], "axi": ["pu0_m_axi"], "axil": ["pu1_s_axil"]}


def test_to_int():
    assert to_int("0101") == 5 and to_int("01x1") is None and to_int(None) is None and to_int(3) == 3
