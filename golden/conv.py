"""Golden convolution-layer training for one layer: FPDeep Eq. 1-4 and ICP.

Every function exists once and takes ``fmt``: ``None`` is the float64 reference,
a :class:`~golden.fixedpoint.QFormat` the bit-true model the RTL is compared with.

Shapes (one sample)::

    x      (C_in, H, W)            activations of layer l-1
    w      (C_out, C_in, K, K)     parameters Pa[l][o][i]
    bias   (C_out,)                optional
    y      (C_out, Ho, Wo)         Ho = (H + 2*pad - K) // stride + 1
    err    (C_out, Ho, Wo)         errors E[l] of the outputs (stride 1)

Operations (cross-correlation, as in every CNN framework)::

    forward         y[o,i,j]   = b[o] + sum_{c,u,v} xp[c, i*s+u, j*s+v] * w[o,c,u,v]   (Eq. 1)
    backprop_error  e_in[c]    = sum_o corr(pad(err[o], K-1-pad), rot180(w[o,c]))          (Eq. 2)
    param_gradient  dw[o,c,u,v]= sum_{i,j} xp[c, i+u, j+v] * err[o,i,j]; db[o] = sum err[o] (Eq. 3)
    update          w'         = w - lr * mean_b(g_b)                                      (Eq. 4)

``xp`` is ``x`` zero-padded by ``pad`` on every side.  Eq. 2 is the "full" convolution of
FPDeep section 4.3: the error map is zero-padded by ``K-1-pad`` on every side (a 3x3 error
map of a K=3, pad=0 layer becomes 7x7) and correlated with the filters rotated by 180
degrees and transposed in (C_out, C_in); the result has the input's (C_in, H, W) shape.
Back-propagation and the gradient are for stride 1 (the stride of the FPDeep engines).

Bit-true rules (the RTL matches these exactly)
---------------------------------------------
Real inputs are quantised once with ``fmt.to_fixed`` (an error names the argument if the
format cannot hold a value); integer arrays are taken as fixed-point words and must lie in
the W-bit range.  Every output element is **one exact sum of full-width products** (Python
integers, scale ``2**-2F``), to which a bias word is added as ``b << F``; then **one**
round to nearest (ties toward +inf, ``(v + 2**(F-1)) >> F``) and **one** saturation to W
bits.  That is exactly ``fmt.dot`` over the window.

ICP (FPDeep 4.1): :func:`icp_forward` splits the input channels into ``parts``
contiguous groups.  In the bit-true model each group's partial sum is returned as the
exact wide integer (scale ``2**-2F``, no rounding: the conv tile's mode-1 output); the
partial sums and ``bias << F`` are added exactly and the **only rounding point is the
final sum** (``fmt.sat(rshift_round(sum_parts + (b << F), F))``), so the ICP result is
bit-identical to :func:`forward` whatever ``parts`` is.

Tracking bound (bit-true vs float64, no saturation): with inputs already on the grid the
difference is at most LSB/2 per output element (the single rounding).  With real inputs,
quantisation adds ``LSB/2 * (sum|x_window| + sum|w| + n*LSB/2) + LSB/2`` (bias) for an
element made of ``n`` products; :func:`tracking_bound` computes it per element.
"""
from __future__ import annotations

import numbers

import numpy as np

from .fixedpoint import QFormat, rshift_round


# ---------------------------------------------------------------- validation
def _fmt(fmt):
    if fmt is not None and not isinstance(fmt, QFormat):
        raise ValueError(f"fmt must be a QFormat or None, got {type(fmt).__name__}")
    return fmt


def _int_param(v, name, lo, hi=None):
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Integral):
        raise ValueError(f"{name} must be an integer, got {v!r}")
    v = int(v)
    if v < lo or (hi is not None and v > hi):
        rng = f">= {lo}" if hi is None else f"in [{lo}, {hi}]"
        raise ValueError(f"{name} must be {rng}, got {v}")
    return v


def _array(v, name, ndim, fmt, shape=None):
    """float64 array (fmt None) or int64 fixed-point words (fmt given)."""
    a = np.asarray(v)
    if a.dtype == object or not (np.issubdtype(a.dtype, np.integer) or np.issubdtype(a.dtype, np.floating)):
        raise ValueError(f"{name} must be a numeric array, got dtype {a.dtype}")
    if a.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-D, got shape {a.shape}")
    if shape is not None:
        for k, (got, exp) in enumerate(zip(a.shape, shape)):
            if exp is not None and got != exp:
                raise ValueError(f"{name} has shape {a.shape}: axis {k} must be {exp}")
    if any(s == 0 for s in a.shape):
        raise ValueError(f"{name} must not be empty, got shape {a.shape}")
    if fmt is None:
        a = a.astype(np.float64)
        if not np.all(np.isfinite(a)):
            raise ValueError(f"{name} contains a non-finite value (NaN or inf)")
        return a
    if np.issubdtype(a.dtype, np.integer):
        a = a.astype(np.int64)
        if not fmt.in_range(a):
            raise ValueError(f"{name} holds words outside the {fmt.W}-bit range of {fmt}")
        return a
    return fmt.to_fixed(a, name)


def _psum(v, shape, fmt, psum_bits):
    """``psum_in`` of a node: float64 (fmt None), or exact integers (Python ints in an
    object array, scale ``2**-2F``) within ``psum_bits`` signed bits when given."""
    a = np.asarray(v)
    if a.shape != shape:
        raise ValueError(f"psum_in has shape {a.shape}, expected {shape}")
    if fmt is None:
        if a.dtype == object or a.dtype == np.bool_ or not (
                np.issubdtype(a.dtype, np.integer) or np.issubdtype(a.dtype, np.floating)):
            raise ValueError(f"psum_in must be a numeric array, got dtype {a.dtype}")
        a = a.astype(np.float64)
        if not np.all(np.isfinite(a)):
            raise ValueError("psum_in contains a non-finite value (NaN or inf)")
        return a
    if a.dtype != object and not np.issubdtype(a.dtype, np.integer):
        raise ValueError(f"psum_in must hold exact integers (scale 2**-2F) in the bit-true model, "
                         f"got dtype {a.dtype}")
    flat = a.ravel().tolist()
    bad = [e for e in flat if isinstance(e, bool) or not isinstance(e, (int, np.integer))]
    if bad:
        raise ValueError(f"psum_in must hold exact integers (scale 2**-2F), got {bad[0]!r}")
    if psum_bits is not None:
        lo, hi = -(1 << (psum_bits - 1)), (1 << (psum_bits - 1)) - 1
        out = [e for e in flat if not lo <= int(e) <= hi]
        if out:
            raise ValueError(f"psum_in = {int(out[0])} does not fit the {psum_bits}-bit psum link")
    return np.array([int(e) for e in flat], dtype=object).reshape(shape)


def _out_size(n, k, pad, stride, what):
    span = n + 2 * pad - k
    if span < 0:
        raise ValueError(f"{what} {n} with pad {pad} is smaller than the kernel K={k}")
    return span // stride + 1


# ---------------------------------------------------------------- windows
def pad_map(x, pad: int):
    """Zero-pad the last two axes by ``pad`` on every side."""
    pad = _int_param(pad, "pad", 0)
    x = np.asarray(x)
    cfg = [(0, 0)] * (x.ndim - 2) + [(pad, pad), (pad, pad)]
    return np.pad(x, cfg)


def sliding_windows(fmap, K: int, pad: int = 0, stride: int = 1):
    """All K x K windows of a zero-padded 2-D map, in raster order of their top-left
    corner: shape ``(Ho, Wo, K, K)``.  This is what ``fpdeep_line_buffer`` presents
    (stride 1)."""
    K = _int_param(K, "K", 1)
    stride = _int_param(stride, "stride", 1)
    fmap = np.asarray(fmap)
    if fmap.ndim != 2:
        raise ValueError(f"fmap must be 2-D, got shape {fmap.shape}")
    ho = _out_size(fmap.shape[0], K, pad, stride, "height")
    wo = _out_size(fmap.shape[1], K, pad, stride, "width")
    xp = pad_map(fmap, pad)
    v = np.lib.stride_tricks.sliding_window_view(xp, (K, K))
    return np.ascontiguousarray(v[::stride, ::stride][:ho, :wo])


def _corr(x, w, pad, stride, fmt):
    """sum_{c,u,v} xp[c, i*s+u, j*s+v] * w[o,c,u,v]: float, or exact Python ints (object)."""
    C, H, Wd = x.shape
    O, _, K, _ = w.shape
    ho = _out_size(H, K, pad, stride, "height")
    wo = _out_size(Wd, K, pad, stride, "width")
    xp = pad_map(x, pad)
    v = np.lib.stride_tricks.sliding_window_view(xp, (K, K), axis=(1, 2))[:, ::stride, ::stride][:, :ho, :wo]
    if fmt is None:
        return np.einsum("chwuv,ocuv->ohw", v, w)
    # exact: |product| < 2**62 and at most C*K*K products per element; use object ints
    cols = v.transpose(1, 2, 0, 3, 4).reshape(ho * wo, C * K * K).astype(object)
    wm = w.reshape(O, C * K * K).astype(object)
    return (wm @ cols.T).reshape(O, ho, wo)


def _finish(acc, bias, fmt):
    """Float: acc + bias.  Bit-true: one round and one saturation of the exact sum."""
    if fmt is None:
        return acc if bias is None else acc + bias[:, None, None]
    acc = np.asarray(acc, dtype=object)
    if bias is not None:
        acc = acc + (np.asarray(bias).astype(object) << fmt.F)[:, None, None]
    return fmt.sat(rshift_round(acc, fmt.F))


# ---------------------------------------------------------------- Eq. 1-4
def forward(x, w, bias=None, stride: int = 1, pad: int = 0, fmt: QFormat | None = None):
    """Eq. 1: ``y = corr(pad(x), w) + bias``; shape ``(C_out, Ho, Wo)``."""
    fmt = _fmt(fmt)
    x = _array(x, "x", 3, fmt)
    w = _array(w, "w", 4, fmt, (None, x.shape[0], None, None))
    if w.shape[2] != w.shape[3]:
        raise ValueError(f"w must hold square K x K filters, got {w.shape[2]}x{w.shape[3]}")
    K = w.shape[2]
    pad = _int_param(pad, "pad", 0, K - 1)
    stride = _int_param(stride, "stride", 1)
    if bias is not None:
        bias = _array(bias, "bias", 1, fmt, (w.shape[0],))
    return _finish(_corr(x, w, pad, stride, fmt), bias, fmt)


def relu(x, fmt: QFormat | None = None):
    """max(x, 0) (exact in both paths)."""
    fmt = _fmt(fmt)
    a = np.asarray(x)
    a = _array(a, "x", a.ndim, fmt) if a.ndim else _array(a.reshape(1), "x", 1, fmt).reshape(())
    return np.maximum(a, 0)


def backprop_error(err_out, w, pad: int = 0, fmt: QFormat | None = None):
    """Eq. 2: errors of the layer's inputs, shape ``(C_in, H, W)`` with
    ``H = Ho + K - 1 - 2*pad``: the error map zero-padded by ``K-1-pad`` and correlated
    with the 180-degree rotated, (C_out, C_in)-transposed filters (stride 1)."""
    fmt = _fmt(fmt)
    e = _array(err_out, "err_out", 3, fmt)
    w = _array(w, "w", 4, fmt, (e.shape[0], None, None, None))
    if w.shape[2] != w.shape[3]:
        raise ValueError(f"w must hold square K x K filters, got {w.shape[2]}x{w.shape[3]}")
    K = w.shape[2]
    pad = _int_param(pad, "pad", 0, K - 1)
    if e.shape[1] + K - 1 - 2 * pad < 1 or e.shape[2] + K - 1 - 2 * pad < 1:
        raise ValueError(f"err_out of shape {e.shape} is too small for K={K}, pad={pad}")
    wt = np.ascontiguousarray(w[:, :, ::-1, ::-1].transpose(1, 0, 2, 3))
    return _finish(_corr(e, wt, K - 1 - pad, 1, fmt), None, fmt)


def param_gradient(x, err_out, K: int, pad: int = 0, fmt: QFormat | None = None):
    """Eq. 3: ``(dw, db)``; ``dw[o,c,u,v] = sum_{i,j} xp[c,i+u,j+v] err[o,i,j]`` (the error
    map is the filter that slides over the activations), ``db[o] = sum err[o]``.
    Bit-true: each element is one exact sum, rounded and saturated once (``db`` is an
    exact sum of words, saturated)."""
    fmt = _fmt(fmt)
    K = _int_param(K, "K", 1)
    pad = _int_param(pad, "pad", 0, K - 1)
    x = _array(x, "x", 3, fmt)
    ho = _out_size(x.shape[1], K, pad, 1, "height")
    wo = _out_size(x.shape[2], K, pad, 1, "width")
    e = _array(err_out, "err_out", 3, fmt, (None, ho, wo))
    O, C = e.shape[0], x.shape[0]
    xp = pad_map(x, pad)
    v = np.lib.stride_tricks.sliding_window_view(xp, (ho, wo), axis=(1, 2))  # (C, K, K, ho, wo)
    if fmt is None:
        return np.einsum("cuvhw,ohw->ocuv", v, e), e.sum(axis=(1, 2))
    vm = v.reshape(C * K * K, ho * wo).astype(object)
    em = e.reshape(O, ho * wo).astype(object)
    acc = (em @ vm.T).reshape(O, C, K, K)
    db = fmt.sat(np.asarray([sum(int(t) for t in row) for row in em], dtype=object))
    return fmt.sat(rshift_round(acc, fmt.F)), db


def update(w, grads, lr, fmt: QFormat | None = None):
    """Eq. 4 with mini-batch averaging: ``w - lr * mean_b(grads[b])``; ``grads`` has shape
    ``(batch,) + w.shape`` (use it for filters and for biases).

    Bit-true: ``lr_q = to_fixed(lr / batch)``; ``step = sat(round(lr_q * sum_b g_b))`` (the sum
    of gradient words is exact, one rounding); ``w' = sat(w - step)``."""
    fmt = _fmt(fmt)
    if isinstance(lr, (bool, np.bool_)) or not isinstance(lr, numbers.Real) or not np.isfinite(lr) or lr <= 0:
        raise ValueError(f"lr must be a finite real > 0, got {lr!r}")
    wa = np.asarray(w)
    w = _array(wa, "w", wa.ndim, fmt)
    g = _array(grads, "grads", w.ndim + 1, fmt, (None,) + w.shape)
    batch = g.shape[0]
    if fmt is None:
        return w - lr * g.mean(axis=0)
    lr_q = int(fmt.to_fixed(lr / batch, "lr / batch"))
    if lr_q == 0:
        raise ValueError(f"lr / batch = {lr / batch!r} quantises to 0 in {fmt}")
    gsum = g.astype(object).sum(axis=0)
    step = fmt.sat(rshift_round(gsum * lr_q, fmt.F))
    return fmt.sub(w, step)


# ---------------------------------------------------------------- ICP and the tile
def icp_partials(x, w, parts: int, stride: int = 1, pad: int = 0, fmt: QFormat | None = None):
    """Input-channel partition: ``parts`` partial sums (list), one per contiguous group of
    input channels (``np.array_split`` sizes).  Bit-true partials are exact integers
    (object arrays, scale ``2**-2F``) -- no rounding."""
    fmt = _fmt(fmt)
    x = _array(x, "x", 3, fmt)
    w = _array(w, "w", 4, fmt, (None, x.shape[0], None, None))
    K = w.shape[2]
    parts = _int_param(parts, "parts", 1, x.shape[0])
    pad = _int_param(pad, "pad", 0, K - 1)
    stride = _int_param(stride, "stride", 1)
    groups = np.array_split(np.arange(x.shape[0]), parts)
    return [_corr(x[g], w[:, g], pad, stride, fmt) for g in groups]


def icp_forward(x, w, parts: int, bias=None, stride: int = 1, pad: int = 0,
                fmt: QFormat | None = None):
    """FPDeep ICP forward: ``(y, partials)``; ``y`` is the sum of the partials plus bias,
    rounded/saturated once (bit-true), and equals :func:`forward` exactly."""
    fmt = _fmt(fmt)
    partials = icp_partials(x, w, parts, stride, pad, fmt)
    if bias is not None:
        bias = _array(bias, "bias", 1, fmt, (np.asarray(w).shape[0],))
    total = partials[0]
    for p in partials[1:]:
        total = total + p
    return _finish(total, bias, fmt), partials


def window_dot(win, wk, fmt: QFormat, exact: bool = False):
    """The conv tile: windows ``(..., K, K)`` (words) times one filter ``(K, K)`` (words).
    ``exact`` (mode 1): the exact sum of products (Python ints, scale ``2**-2F``);
    otherwise (mode 0) ``fmt.dot``: one round and one saturation."""
    win = np.asarray(win, dtype=np.int64)
    wk = np.asarray(wk, dtype=np.int64)
    a = win.reshape(win.shape[:-2] + (-1,)).astype(object)
    b = wk.reshape(-1).astype(object)
    acc = np.sum(a * b, axis=-1)
    if exact:
        return acc
    return fmt.sat(rshift_round(np.asarray(acc, dtype=object), fmt.F))


def tracking_bound(x, w, bias=None, stride: int = 1, pad: int = 0, fmt: QFormat = None):
    """Per-element bound of ``|forward(fmt) - forward(None)|`` in real units for real inputs
    (no saturation): final rounding + input quantisation (see the module docstring)."""
    x = np.abs(np.asarray(x, dtype=np.float64))
    w = np.abs(np.asarray(w, dtype=np.float64))
    h = fmt.lsb / 2
    n = w.shape[1] * w.shape[2] * w.shape[3]
    sx = forward(x, np.ones_like(w), None, stride, pad)          # sum |x| over each window
    sw = w.sum(axis=(1, 2, 3))[:, None, None]
    b = h if bias is not None else 0.0
    return h + h * (sx + sw + n * h) + b


# ---------------------------------------------------------------- engines and the FP node
def engine_beat(wins, filters, fmt: QFormat, bias=None, exact: bool = False):
    """The ``fpdeep_conv_engine``: ``wins`` ``(..., S_IC, K, K)`` (one beat = the windows of
    S_IC input channels), ``filters`` ``(S_OC, S_IC, K, K)``, ``bias`` ``(S_OC,)`` or None.
    Returns ``(..., S_OC)``: per engine the exact sum over the S_IC tiles plus ``b << F``;
    ``exact`` keeps it (scale ``2**-2F``, object ints), otherwise one round and one
    saturation (= :func:`forward` of that window position)."""
    wins = np.asarray(wins, dtype=np.int64)
    f = np.asarray(filters, dtype=np.int64)
    if f.ndim != 4 or wins.shape[-3:] != f.shape[1:]:
        raise ValueError(f"wins {wins.shape} and filters {f.shape} disagree: need (..., S_IC, K, K) "
                         "and (S_OC, S_IC, K, K)")
    lead = wins.shape[:-3]
    a = wins.reshape(lead + (-1,)).astype(object)
    acc = a @ f.reshape(f.shape[0], -1).astype(object).T
    if bias is not None:
        acc = acc + (np.asarray(bias, dtype=np.int64).astype(object) << fmt.F)
    if exact:
        return acc
    return fmt.sat(rshift_round(np.asarray(acc, dtype=object), fmt.F))


def fp_node(x_part, w_part, psum_in=None, last: bool = True, bias=None, relu_out: bool = True,
            pad: int = 0, fmt: QFormat | None = None, psum_bits: int | None = None):
    """One FPDeep FP node with input-channel partitioning (section 5.3, 4.1).

    ``x_part`` ``(C_part, H, W)`` and ``w_part`` ``(C_out, C_part, K, K)`` are this node's
    share of the input channels; ``psum_in`` ``(C_out, Ho, Wo)`` the partial activations of
    the previous node (None for the first node).  The node adds its exact partial sum to
    ``psum_in``.  Not ``last``: returns that sum (bit-true: exact integers, scale ``2**-2F``,
    saturated to ``psum_bits`` signed bits -- the width of the psum link -- which never
    happens for a chain short enough; ``bias`` and ``relu_out`` are ignored).  ``last``:
    adds ``bias``, rounds and saturates once, then ReLU when ``relu_out`` -- so a chain of
    nodes over a split of the channels gives exactly ``relu(forward(x, w, bias))``.  Stride 1."""
    fmt = _fmt(fmt)
    x = _array(x_part, "x_part", 3, fmt)
    w = _array(w_part, "w_part", 4, fmt, (None, x.shape[0], None, None))
    if w.shape[2] != w.shape[3]:
        raise ValueError(f"w_part must hold square K x K filters, got {w.shape[2]}x{w.shape[3]}")
    K = w.shape[2]
    pad = _int_param(pad, "pad", 0, K - 1)
    acc = _corr(x, w, pad, 1, fmt)
    if psum_bits is not None:
        psum_bits = _int_param(psum_bits, "psum_bits", 2)
    if psum_in is not None:
        acc = acc + _psum(psum_in, acc.shape, fmt, psum_bits)
    if not last:
        if fmt is None:
            return acc
        if psum_bits is None:
            return acc
        lo, hi = -(1 << (psum_bits - 1)), (1 << (psum_bits - 1)) - 1
        return np.minimum(np.maximum(np.asarray(acc, dtype=object), lo), hi)
    if bias is not None:
        bias = _array(bias, "bias", 1, fmt, (w.shape[0],))
    y = _finish(acc, bias, fmt)
    return np.maximum(y, 0) if relu_out else y


# ---------------------------------------------------------------- the EB node (appended)
def eb_node(err_part, w_part, psum_in=None, last: bool = True, pad: int = 0,
            fmt: QFormat | None = None, psum_bits: int | None = None):
    """One FPDeep EB run (section 5.4) over a group of output channels.

    ``err_part`` ``(O_part, Ho, Wo)`` are the errors of this group of output channels,
    ``w_part`` ``(O_part, C_in, K, K)`` their filters in the forward layout (the rotation
    by 180 degrees and the (C_out, C_in) transpose are the hardware's job), ``pad`` the
    forward padding of the layer (the error map is padded by ``K-1-pad``).  The exact sum
    over the group (Python ints, scale ``2**-2F``) is added to ``psum_in`` (None: 0).
    Not ``last``: returns that sum, saturated to ``psum_bits`` signed bits when given.
    ``last``: one round and one saturation to W bits, so a chain of runs over a split of
    the output channels gives exactly :func:`backprop_error` of the whole layer."""
    fmt = _fmt(fmt)
    e = _array(err_part, "err_part", 3, fmt)
    w = _array(w_part, "w_part", 4, fmt, (e.shape[0], None, None, None))
    if w.shape[2] != w.shape[3]:
        raise ValueError(f"w_part must hold square K x K filters, got {w.shape[2]}x{w.shape[3]}")
    K = w.shape[2]
    pad = _int_param(pad, "pad", 0, K - 1)
    if e.shape[1] + K - 1 - 2 * pad < 1 or e.shape[2] + K - 1 - 2 * pad < 1:
        raise ValueError(f"err_part of shape {e.shape} is too small for K={K}, pad={pad}")
    wt = np.ascontiguousarray(w[:, :, ::-1, ::-1].transpose(1, 0, 2, 3))
    acc = _corr(e, wt, K - 1 - pad, 1, fmt)
    if psum_bits is not None:
        psum_bits = _int_param(psum_bits, "psum_bits", 2)
    if psum_in is not None:
        acc = acc + _psum(psum_in, acc.shape, fmt, psum_bits)
    if not last:
        if fmt is None or psum_bits is None:
            return acc
        lo, hi = -(1 << (psum_bits - 1)), (1 << (psum_bits - 1)) - 1
        return np.minimum(np.maximum(np.asarray(acc, dtype=object), lo), hi)
    return _finish(acc, None, fmt)


# ---------------------------------------------------------------- PG in hardware order (appended)
def pg_sample_exact(x, err_out, K: int, pad: int = 0, fmt: QFormat | None = None):
    """Eq. 3 in the order a streaming PG engine computes it (FPDeep 5.5: the large
    Ho x Wo gradient convolution cut into K x K pieces): the K x K window of the padded
    activations at output position (i, j) (``sliding_windows``, raster order) times the
    scalar error ``err[o, i, j]`` is added to the K x K accumulator tile (o, c) -- K*K MACs
    per (o, c) per position.  Returns the **exact** accumulators ``(O, C, K, K)`` (bit-true:
    Python ints, scale ``2**-2F``; float64 otherwise) and the exact error sums ``(O,)``
    (bit-true: sum of words, scale ``2**-F``).  Rounding them once gives
    :func:`param_gradient`."""
    fmt = _fmt(fmt)
    K = _int_param(K, "K", 1)
    pad = _int_param(pad, "pad", 0, K - 1)
    x = _array(x, "x", 3, fmt)
    ho = _out_size(x.shape[1], K, pad, 1, "height")
    wo = _out_size(x.shape[2], K, pad, 1, "width")
    e = _array(err_out, "err_out", 3, fmt, (None, ho, wo))
    O, C = e.shape[0], x.shape[0]
    conv_t = object if fmt is not None else np.float64
    acc = np.zeros((O, C, K, K), dtype=conv_t)
    esum = np.zeros(O, dtype=conv_t)
    wins = [sliding_windows(x[c], K, pad) for c in range(C)]
    for i in range(ho):
        for j in range(wo):
            for o in range(O):
                ev = e[o, i, j] if fmt is None else int(e[o, i, j])
                esum[o] += ev
                for c in range(C):
                    acc[o, c] += wins[c][i, j].astype(conv_t) * ev
    return acc, esum


def pg_minibatch(xs, errs, w, bias, lr, K: int, pad: int = 0, fmt: QFormat | None = None):
    """A PG module over one mini-batch (FPDeep 5.5, Eq. 3 + Eq. 4): per sample the exact
    accumulators of :func:`pg_sample_exact` are rounded/saturated once to gradient words
    (= :func:`param_gradient`), the words are summed exactly in the gradient buffer over
    the batch, and at the end of the batch the parameters take one SGD step with the
    averaged gradient (= :func:`update`).  Returns ``(w_new, bias_new, gsum_w, gsum_b)``."""
    fmt = _fmt(fmt)
    if len(xs) != len(errs) or len(xs) == 0:
        raise ValueError(f"xs and errs must hold the same number (>= 1) of samples, got {len(xs)} and {len(errs)}")
    gw, gb = [], []
    for x, e in zip(xs, errs):
        acc, esum = pg_sample_exact(x, e, K, pad, fmt)
        if fmt is None:
            gw.append(acc)
            gb.append(esum)
        else:
            gw.append(fmt.sat(rshift_round(acc, fmt.F)).astype(np.int64))
            gb.append(fmt.sat(esum).astype(np.int64))
    gw, gb = np.stack(gw), np.stack(gb)
    gsum_w = gw.sum(axis=0) if fmt is None else gw.astype(object).sum(axis=0)
    gsum_b = gb.sum(axis=0) if fmt is None else gb.astype(object).sum(axis=0)
    return update(w, gw, lr, fmt), update(bias, gb, lr, fmt), gsum_w, gsum_b


# ---------------------------------------------------------------- a chain of training nodes (appended)
def icp_chain_minibatch(xs, errs, w, bias, lr, parts: int, pad: int = 0, relu_out: bool = True,
                        fmt: QFormat | None = None):
    """One mini-batch on a 1-D chain of ``parts`` FPDeep training nodes (``fpdeep_node``) that
    split the input channels of a layer (ICP, contiguous ``np.array_split`` groups).

    Per sample: the forward chain of :func:`fp_node` (exact partial sums, bias, one rounding
    and ReLU in the last node; = ``relu(forward(x, w, bias))``), and each node's input errors
    :func:`backprop_error` of the sample's output errors with the node's filters (every node
    holds every output channel, so its slice of the layer's ``backprop_error`` is complete).
    End of the mini-batch: each node's :func:`pg_minibatch` on its slice of the activations
    (all nodes see the same errors, hence the same bias step).  Returns a dict: ``y`` (list of
    ``(C_out, Ho, Wo)``), ``e_in`` (list of ``(C_in, H, W)``), ``w_new`` ``(C_out, C_in, K, K)``
    assembled from the nodes, ``b_new`` ``(C_out,)``, ``groups`` (the channel groups)."""
    fmt = _fmt(fmt)
    if len(xs) != len(errs) or len(xs) == 0:
        raise ValueError(f"xs and errs must hold the same number (>= 1) of samples, got {len(xs)} and {len(errs)}")
    xs = [_array(x, "xs[b]", 3, fmt) for x in xs]
    w = _array(w, "w", 4, fmt, (None, xs[0].shape[0], None, None))
    bias = _array(bias, "bias", 1, fmt, (w.shape[0],))
    K = w.shape[2]
    parts = _int_param(parts, "parts", 1, xs[0].shape[0])
    groups = np.array_split(np.arange(xs[0].shape[0]), parts)
    ys, eins = [], []
    for x, e in zip(xs, errs):
        ps = None
        for k, g in enumerate(groups):
            ps = fp_node(x[g], w[:, g], ps, k == parts - 1, bias, relu_out, pad, fmt)
        ys.append(ps)
        eins.append(np.concatenate([backprop_error(e, w[:, g], pad, fmt) for g in groups], axis=0))
    w_new = np.empty_like(w)
    b_new = None
    for g in groups:
        wn, bn, _, _ = pg_minibatch([x[g] for x in xs], errs, w[:, g], bias, lr, K, pad, fmt)
        w_new[:, g] = wn
        if b_new is not None and not np.array_equal(b_new, bn):
            raise AssertionError("nodes disagree on the bias step")   # cannot happen: same errors
        b_new = bn
    return {"y": ys, "e_in": eins, "w_new": w_new, "b_new": b_new, "groups": groups}
