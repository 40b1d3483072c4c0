"""Functional coverage model of maple_pe_chain (testplan: verif/maple_pe_chain/testplan.yaml).

Sampled on what the DUT did: every instruction word it accepted on s_axis_cmd (decoded
from the handshakes the command monitor saw, data words after WRITE_A/WRITE_B skipped):
opcode, parallel mode, reduction, smart-memory command, dump kind, MULT_ACC_DUMP step
count / last / nres (legal and each error), WRITE_B target; the err pin; the rounding and
saturation of every result a program sent to the smart memory (from a shadow run of the
instruction-level model), sampled once the DUT has delivered every dump beat of that
program; and the valid/ready patterns of both streams (verif/stream_cov.FlowObserver).
"""
from __future__ import annotations


from verif.funcov import CoverModel
from verif.funcov_tb import declare_flow

COV = CoverModel("maple_pe_chain")
NAMES = ["NOP", "SET_PARALLEL_MODE", "SET_SM_REDUCTION", "SM_CTRL", "DUMP_SM", "SET_SM_ADDR", "SET_PE_LS_ADDR",
         "SET_INPUT_LS_ADDR", "INC_INPUT_LS_ADDR", "WRITE_A", "WRITE_B", "MULT_ACC_DUMP", "MULT_ACC_RUN",
         "SET_RUN_STRIDE", "WRITE_BV"]
if not COV.points:
    COV.point("opcode", values=NAMES, doc="instruction accepted on s_axis_cmd")
    COV.point("mode", values=["column", "split", "replicate", "split_replicate", "bad"],
              doc="SET_PARALLEL_MODE: G=S=1, G=S>1, G>S=1, G>S>1, and an illegal S > G or G > M")
    COV.point("reduction", values=["topk_largest", "topk_smallest", "minmax", "rmw"], doc="SET_SM_REDUCTION")
    COV.point("sm_ctrl", values=["START", "CLEAR", "ERRCLR"], doc="SM_CTRL command bits")
    COV.point("dump", values=["list", "range"], doc="DUMP_SM with len 0 (LIST / min-max) and an RMW range")
    COV.point("macc", values=["n_one", "n_mid", "n_lsd", "last", "not_last", "nres_all", "nres_some",
                              "bad_n_zero", "bad_n_over", "bad_nres"],
              doc="MULT_ACC_DUMP: 1, mid, LSD steps; last or not; all or some results; each illegal form")
    COV.point("write_b", values=["broadcast", "one_pe"], doc="WRITE_B to every PE (255) or one")
    COV.point("err", values=["clear", "set"], doc="err pin at the end of a test / after bad instructions")
    COV.point("result_round", values=["exact", "down", "up", "tie_pos", "tie_neg"],
              doc="a result's exact sum of S accumulators: discarded fraction at its one rounding")
    COV.point("result_sat", values=["none", "pos", "neg"], doc="a result saturated to max / min")
    declare_flow(COV, "s_axis_cmd", False)
    declare_flow(COV, "m_axis_out", True)


class CmdDecoder:
    """Monitor callback: decode the accepted command stream."""

    def __init__(self, M: int, LSD: int, DBEAT: int = 1):
        self.M, self.LSD, self.D = M, LSD, DBEAT
        self.skip = 0
        self.S = 1

    def reset(self):
        self.skip, self.S = 0, 1

    def __call__(self, txn):
        w = int(txn[0] if isinstance(txn, tuple) else txn) & 0xFFFFFFFF
        if self.skip:
            self.skip -= 1
            return
        op, x = w >> 28, w & ((1 << 28) - 1)
        if op >= len(NAMES):
            return
        COV.sample("opcode", NAMES[op])
        if op == 1:
            G, S = 1 << (x & 15), 1 << ((x >> 4) & 15)
            if not S <= G <= self.M:
                COV.sample("mode", "bad")
            else:
                self.S = S
                COV.sample("mode", "column" if G == 1 else "split" if G == S else
                           "replicate" if S == 1 else "split_replicate")
        elif op == 2:
            o, lg = x & 3, (x >> 2) & 1
            if o <= 2:
                COV.sample("reduction", ("topk_largest" if lg else "topk_smallest") if o == 0 else
                           "minmax" if o == 1 else "rmw")
        elif op == 3:
            for bit, n in ((1, "START"), (2, "CLEAR"), (8, "ERRCLR")):
                if x & bit:
                    COV.sample("sm_ctrl", n)
        elif op == 4:
            COV.sample("dump", "range" if x & 0x3FFF else "list")
        elif op == 9:                # WRITE_A: DBEAT words per beat
            self.skip = -(-(x & 0xFFFF) // self.D)
        elif op == 14:               # WRITE_BV: one word per PE per address, DBEAT per beat
            self.skip = (x & 0xFFFF) * self.M // self.D
        elif op == 10:
            self.skip = x & 0xFFFF
            COV.sample("write_b", "broadcast" if (x >> 16) & 0xFF == 255 else "one_pe")
        elif op in (11, 12):         # MULT_ACC_DUMP, MULT_ACC_RUN (its n / last / nres fields)
            if op == 11:
                n, last, nres = x & 0xFFFF, (x >> 16) & 1, (x >> 17) & 0x7F
            else:
                n, last, nres = x & 0x1FFF, (x >> 13) & 1, (x >> 14) & 0x7F
            R = self.M // self.S
            if n == 0:
                COV.sample("macc", "bad_n_zero")
            elif n > self.LSD:
                COV.sample("macc", "bad_n_over")
            elif nres > R:
                COV.sample("macc", "bad_nres")
            else:
                COV.sample("macc", "n_one" if n == 1 else "n_lsd" if n == self.LSD else "n_mid")
                COV.sample("macc", "last" if last else "not_last")
                COV.sample("macc", "nres_all" if nres in (0, R) else "nres_some")


def _round(v: int, F: int) -> str:
    fr, half = v & ((1 << F) - 1), 1 << (F - 1)
    if fr == 0:
        return "exact"
    if fr != half:
        return "down" if fr < half else "up"
    return "tie_pos" if v > 0 else "tie_neg"


def shadow_model(cp):
    """An instruction-level model (golden.maple_mapping.ChainModel) that also records the
    exact sum behind every result, for the rounding/saturation classes."""
    from golden import maple_mapping as mm

    class Shadow(mm.ChainModel):
        def __init__(self, cp):
            super().__init__(cp)
            self.exact = []

        def _macc(self, n, last, nres, passes=1):
            cp, M, G, S = self.cp, self.cp.M, self.G, self.S
            R = M // S
            if not (n == 0 or n > cp.LSD or nres > R):
                for p in range(passes):
                    ila, lsa = (self.ila + p * self.ila_st) % cp.ilw, (self.lsa + p * self.lsa_st) % cp.LSD
                    acc = [0] * M
                    for j in range(n):
                        w = (ila + j * G) % cp.ilw
                        line, lane0 = w // M, w % M
                        for i in range(M):
                            acc[i] += int(self.ils[line * M + (lane0 | (i % G))]) * int(self.ls[i, (lsa + j) % cp.LSD])
                    self.exact += [sum(acc[r * S:(r + 1) * S]) for r in range(R if nres == 0 else nres)]
            super()._macc(n, last, nres, passes)

    return Shadow(cp)


def result_labels(exact, F: int, W: int) -> list:
    hi, lo = (1 << (W - 1)) - 1, -(1 << (W - 1))
    out = set()
    for s in exact:
        out.add(("result_round", _round(int(s), F)))
        y = (int(s) + (1 << (F - 1))) >> F
        out.add(("result_sat", "pos" if y > hi else "neg" if y < lo else "none"))
    return sorted(out)
