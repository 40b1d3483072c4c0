"""AXI4 N:1 arbiter: several AXI4 masters share one AXI4 master port.

A reusable MyHDL block (``axi_arbiter``), used by ``pipearch_system``:

* **AR and AW: round-robin.**  Each address channel has a pointer; the grant goes to the
  first requesting master at or after the pointer, and after a handshake the pointer
  moves to the master after the granted one.  A master whose ``valid`` waits
  therefore gets its address through before any other master gets a second one (at
  most one burst per master per round).  Once the downstream ``valid`` is up without
  ``ready``, the grant is *locked* until the handshake, so the downstream payload never
  changes while it waits (AXI4 stability rule), whatever other masters do.
* **W: in AW order, never interleaved.**  Every AW handshake pushes the granted master
  into a small queue (``WQ`` entries); W beats are taken only from the master at the
  head of the queue, which is popped on its ``wlast`` beat.  AW is held while the queue
  is full.  W data therefore follows the AW order, one whole burst at a time (a master's
  W beats wait for its AW to be granted: this slave port waits for AWVALID before
  WREADY, which AXI4 allows).
* **R and B: routed by ID.**  The downstream ID is ``{master index, master ID}``
  (``ID_W + ceil(log2 N)`` bits); a response goes back to the master named in its ID's
  top bits with the master's own ID.  ``rready``/``bready`` come from that master, so
  backpressure on one master's response never drops a beat (it stalls the channel).
  A response whose ID names no master (only possible with a faulty slave when N is not
  a power of two) is accepted and dropped.
* N = 1: a wire-through (same ID width).

Ports are passed as dicts of MyHDL signals with the AXI4 names without prefix
(``arid``, ``araddr``, ... ``bready``): ``up`` is a list with one dict per master,
``dn`` the shared port.
"""
from __future__ import annotations

from myhdl import ConcatSignal, always, always_comb, always_seq, block, concat

from .hdl import sig_b, sig_u

AR_FIELDS = ("araddr", "arlen", "arsize", "arburst", "arlock", "arcache", "arprot", "arqos")
AW_FIELDS = ("awaddr", "awlen", "awsize", "awburst", "awlock", "awcache", "awprot", "awqos")
W_FIELDS = ("wdata", "wstrb", "wlast")
R_FIELDS = ("rdata", "rresp", "rlast")
B_FIELDS = ("bresp",)
ALL = (("arid",) + AR_FIELDS + ("arvalid", "arready", "rid") + R_FIELDS + ("rvalid", "rready",
       "awid") + AW_FIELDS + ("awvalid", "awready") + W_FIELDS + ("wvalid", "wready", "bid")
       + B_FIELDS + ("bvalid", "bready"))
TO_DN = {"arid", "arvalid", "rready", "awid", "awvalid", "wvalid", "bready",
         *AR_FIELDS, *AW_FIELDS, *W_FIELDS}


def clog2(n: int) -> int:
    return max(0, (n - 1).bit_length())


def index_width(n: int) -> int:
    """Bits of the master index added to the ID (0 for one master)."""
    return clog2(n)


def axi_ports(prefix: str, id_w: int, addr_w: int, data_w: int, master: bool = True):
    """(name, direction, width) of an AXI4 port, ``master`` seen from its owner."""
    w = {"id": id_w, "addr": addr_w, "len": 8, "size": 3, "burst": 2, "lock": 1, "cache": 4,
         "prot": 3, "qos": 4, "data": data_w, "strb": data_w // 8, "resp": 2, "last": 1,
         "valid": 1, "ready": 1}
    out = []
    for n in ALL:
        key = n[2:] if n[:2] in ("ar", "aw") else n[1:]
        d = "out" if (n in TO_DN) == master else "in"
        out.append((prefix + n, d, w[key]))
    return out


@block
def arb_wire(a, b):
    """b = a (same width)."""
    @always_comb
    def o():
        b.next = a

    return o


@block
def arb_mux_stage(sel, k, x, prev, y):
    """y = x when sel == k, else prev (or 0 for the first stage)."""
    if prev is None:
        @always_comb
        def o():
            if sel == k:
                y.next = x
            else:
                y.next = 0
    else:
        @always_comb
        def o():
            if sel == k:
                y.next = x
            else:
                y.next = prev
    return o


@block
def mux_by_index(sel, ins, out):
    """``out = ins[sel]`` for a list of equally wide vector signals (0 when sel is out of
    range), unrolled at elaboration time so every slice and index is a constant."""
    n = len(ins)
    acc = [sig_u(len(out)) for _ in range(n)]
    insts = [arb_mux_stage(sel, k, ins[k], acc[k - 1] if k else None, acc[k]) for k in range(n)]
    insts.append(arb_wire(acc[-1], out))
    return insts


@block
def arb_split(pay, fields):
    """Drive each signal of ``fields`` (MSB first) from its slice of vector ``pay``."""
    insts = []
    hi = len(pay)
    for s in fields:
        w = len(s)
        lo = hi - w
        if w == 1 and not hasattr(s.val, "_nrbits"):
            insts.append(arb_bit(pay, lo, s))
        else:
            insts.append(arb_slice(pay, hi, lo, s))
        hi = lo
    return insts


@block
def arb_bit(v, i, y):
    @always_comb
    def o():
        y.next = v[i]

    return o


@block
def arb_slice(v, hi, lo, y):
    @always_comb
    def o():
        y.next = v[hi:lo]

    return o


@block
def arb_enc_stage(reqv, ptr, k, prev, cur, top):
    """Priority-encoder stage k (stages run from n-1 down to 0, so the lowest index
    wins): b = any request, a = any request at or above the pointer ``ptr``."""
    pa, ha, pb, hb = cur
    if prev is None:
        if top:
            @always_comb
            def o():
                pb.next = k
                hb.next = reqv[k]
                pa.next = k
                ha.next = reqv[k]
        else:
            @always_comb
            def o():
                pb.next = k
                hb.next = reqv[k]
                pa.next = k
                ha.next = reqv[k] and ptr <= k
    else:
        qa, qha, qb, qhb = prev
        if top:
            @always_comb
            def o():
                if reqv[k]:
                    pb.next = k
                    hb.next = True
                    pa.next = k
                    ha.next = True
                else:
                    pb.next = qb
                    hb.next = qhb
                    pa.next = qa
                    ha.next = qha
        else:
            @always_comb
            def o():
                if reqv[k]:
                    pb.next = k
                    hb.next = True
                else:
                    pb.next = qb
                    hb.next = qhb
                if reqv[k] and ptr <= k:
                    pa.next = k
                    ha.next = True
                else:
                    pa.next = qa
                    ha.next = qha
    return o


@block
def arb_enc_out(c, pa, ha, pb, hb):
    qa, qha, qb, qhb = c

    @always_comb
    def o():
        pa.next = qa
        ha.next = qha
        pb.next = qb
        hb.next = qhb

    return o


@block
def rr_arbiter(clk, rst, reqv, blocked, dn_valid, dn_ready, sel, n):
    """Round-robin grant over the ``n`` request bits of ``reqv``; ``sel`` is the granted
    index, ``dn_valid`` the shared valid (a request and not ``blocked``).  The grant
    locks while ``dn_valid`` waits for ``dn_ready``; after a handshake the pointer moves
    to the index after the granted one."""
    ixw = len(sel)
    ptr, sel_r, pa, pb = sig_u(ixw), sig_u(ixw), sig_u(ixw), sig_u(ixw)
    lk, ha, hb = sig_b(), sig_b(), sig_b()
    last = n - 1

    chain = [(sig_u(ixw), sig_b(), sig_u(ixw), sig_b()) for _ in range(n)]
    insts = [arb_enc_stage(reqv, ptr, k, chain[k + 1] if k < n - 1 else None, chain[k],
                        k >= (1 << ixw) - 1) for k in range(n)]
    insts.append(arb_enc_out(chain[0], pa, ha, pb, hb))

    @always_comb
    def grant():
        if lk:
            sel.next = sel_r
        elif ha:
            sel.next = pa
        else:
            sel.next = pb
        dn_valid.next = hb and not blocked

    @always_seq(clk.posedge, reset=rst)
    def st():
        if dn_valid and dn_ready:
            lk.next = False
            if sel == last:
                ptr.next = 0
            else:
                ptr.next = sel + 1
        elif dn_valid:
            lk.next = True
            sel_r.next = sel

    return insts, grant, st


@block
def arb_ready_to(dn_ready, dn_valid, sel, k, y):
    @always_comb
    def o():
        y.next = dn_ready and dn_valid and sel == k

    return o


@block
def arb_and2(a, b, y):
    @always_comb
    def o():
        y.next = a and b

    return o


@block
def arb_route(dn_valid, idx, k, y):
    @always_comb
    def o():
        y.next = dn_valid and idx == k

    return o


@block
def arb_ready_back(vec, valid, idx, n, y):
    """Response ready of the master named by ``idx``; high while no response is offered
    (so an undriven ID never reaches the ready) and for an ID that names no master."""
    if n == 1 << len(idx):
        @always_comb
        def o():
            if not valid:
                y.next = True
            else:
                y.next = vec[idx]
    else:
        @always_comb
        def o():
            if not valid:
                y.next = True
            elif idx < n:
                y.next = vec[idx]
            else:
                y.next = True

    return o


@block
def arb_w_head_valid(vec, head, empty, y):
    @always_comb
    def o():
        y.next = (not empty) and vec[head]

    return o


@block
def arb_w_ready_to(dn_ready, head, empty, k, y):
    @always_comb
    def o():
        y.next = dn_ready and (not empty) and head == k

    return o


@block
def arb_id_out(sel, idm, y):
    @always_comb
    def o():
        y.next = concat(sel, idm)

    return o


@block
def arb_id_low(idv, w, y):
    @always_comb
    def o():
        y.next = idv[w:]

    return o


@block
def arb_w_queue(clk, rst, push, push_val, pop, head, empty, full, depth):
    """FIFO of master indices (AW order) for the W channel."""
    pw = max(1, clog2(depth))
    mem = [sig_u(len(push_val)) for _ in range(depth)]
    wp, rp = sig_u(pw), sig_u(pw)
    cnt = sig_u(pw + 1)
    top = depth - 1

    @always(clk.posedge)
    def wr():
        if push:
            mem[wp].next = push_val

    @always_seq(clk.posedge, reset=rst)
    def ptrs():
        if push:
            if wp == top:
                wp.next = 0
            else:
                wp.next = wp + 1
        if pop:
            if rp == top:
                rp.next = 0
            else:
                rp.next = rp + 1
        if push and not pop:
            cnt.next = cnt + 1
        elif pop and not push:
            cnt.next = cnt - 1

    @always_comb
    def flags():
        head.next = mem[rp]
        empty.next = cnt == 0
        full.next = cnt == depth

    return wr, ptrs, flags


def _vec(up, name):
    n = len(up)
    return ConcatSignal(*[up[k][name] for k in reversed(range(n))])


@block
def arb_addr_channel(clk, rst, up, dn, pre, fields, blocked, sel, hs, id_w):
    """One address channel (AR or AW): round-robin grant, payload mux, ID prefix."""
    n = len(up)
    reqv = _vec(up, pre + "valid")
    pays = [ConcatSignal(up[k][pre + "id"], *[up[k][f] for f in fields]) for k in range(n)]
    pay = sig_u(len(pays[0]))
    idm = sig_u(id_w)
    valid, ready = dn[pre + "valid"], dn[pre + "ready"]
    insts = [rr_arbiter(clk, rst, reqv, blocked, valid, ready, sel, n),
             mux_by_index(sel, pays, pay),
             arb_split(pay, [idm] + [dn[f] for f in fields]),
             arb_id_out(sel, idm, dn[pre + "id"])]
    insts += [arb_ready_to(ready, valid, sel, k, up[k][pre + "ready"]) for k in range(n)]
    if hs is not None:
        insts.append(arb_and2(valid, ready, hs))
    return insts


@block
def arb_resp_channel(up, dn, pre, fields, id_w, ixw):
    """One response channel (R or B): routed to the master named by the ID's top bits."""
    n = len(up)
    idx = dn[pre + "id"](id_w + ixw, id_w)
    insts = [arb_ready_back(_vec(up, pre + "ready"), dn[pre + "valid"], idx, n, dn[pre + "ready"])]
    for k in range(n):
        insts.append(arb_route(dn[pre + "valid"], idx, k, up[k][pre + "valid"]))
        uid = up[k][pre + "id"]
        insts.append(arb_bit(dn[pre + "id"], 0, uid) if not hasattr(uid.val, "_nrbits")
                     else arb_id_low(dn[pre + "id"], id_w, uid))
        insts += [arb_wire(dn[f], up[k][f]) for f in fields]
    return insts


@block
def axi_arbiter(clk, rst, up, dn, id_w, wq_depth=8):
    """N:1 AXI4 arbiter (see the module docstring).  ``up``: list of N port dicts;
    ``dn``: the shared port (ID width ``id_w + index_width(N)``)."""
    n = len(up)
    insts = []
    if n == 1:
        u = up[0]
        for name in ALL:
            if name in TO_DN:
                insts.append(arb_wire(u[name], dn[name]))
            else:
                insts.append(arb_wire(dn[name], u[name]))
        return insts
    ixw = index_width(n)

    ar_sel, aw_sel = sig_u(ixw), sig_u(ixw)
    aw_hs = sig_b()
    never, wq_full = sig_b(False), sig_b()
    insts.append(arb_addr_channel(clk, rst, up, dn, "ar", AR_FIELDS, never, ar_sel, None, id_w))
    insts.append(arb_addr_channel(clk, rst, up, dn, "aw", AW_FIELDS, wq_full, aw_sel, aw_hs, id_w))

    # ---------------- W: from the master at the head of the AW-order queue
    head, empty, w_pop = sig_u(ixw), sig_b(), sig_b()
    insts.append(arb_w_queue(clk, rst, aw_hs, aw_sel, w_pop, head, empty, wq_full, wq_depth))
    w_pays = [ConcatSignal(*[up[k][f] for f in W_FIELDS]) for k in range(n)]
    w_pay = sig_u(len(w_pays[0]))
    insts.append(mux_by_index(head, w_pays, w_pay))
    insts.append(arb_split(w_pay, [dn[f] for f in W_FIELDS]))
    insts.append(arb_w_head_valid(_vec(up, "wvalid"), head, empty, dn["wvalid"]))
    insts += [arb_w_ready_to(dn["wready"], head, empty, k, up[k]["wready"]) for k in range(n)]
    dn_wvalid, dn_wready, dn_wlast = dn["wvalid"], dn["wready"], dn["wlast"]

    @always_comb
    def wpop():
        w_pop.next = dn_wvalid and dn_wready and dn_wlast

    insts.append(wpop)

    # ---------------- R and B: routed by the ID's top bits
    insts.append(arb_resp_channel(up, dn, "r", R_FIELDS, id_w, ixw))
    insts.append(arb_resp_channel(up, dn, "b", B_FIELDS, id_w, ixw))
    return insts
