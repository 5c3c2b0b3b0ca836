"""Triton device code for :mod:`kernels.flash`: the forward, the materialise kernel and the backward.

Every kernel and device helper here is a *plain* Python function, not a ``@triton.jit`` object: Triton
decides between the compiler and the CPU interpreter when ``triton.jit`` runs, which for a decorator is
import time. Leaving the functions undecorated lets :func:`build` wrap each one for the mode in force when
it is first *launched* (``TRITON_INTERPRET=1`` → interpreter, otherwise compiler), so importing this module
never touches a device and one process can use both modes. A kernel calls the helpers (``_head_dim_mask``,
``_key_tile_bounds``, ``_phase_range``, ``_load_tile``, ``_visible``) by name; :func:`build` gives each kernel
its own globals in which those names are the helpers built for the same mode (compiled ones are inlined).

Conventions (all kernels):

* ``q (batch, heads, q_len, HEAD_DIM)``, ``k, v (batch, heads // group, k_len, HEAD_DIM)``; query row ``i`` sits
  at absolute position ``k_len − q_len + i`` (queries are the last positions of the keys).
* ``BLOCK_D`` is ``HEAD_DIM`` rounded up to a power of two (≥ 16); the padding lanes load as 0.
* Scores live in the log2 domain: ``s2 = (q·kᵀ)·scale·log2(e)``, so ``exp2(s2 − m2) = exp(s − m)``.
* Key tiles are visited in three phases: a masked prefix (window edge), an unmasked middle (every row of the
  query block sees every key of the tile: no mask arithmetic at all) and a masked suffix (causal diagonal,
  the ragged last tile). Key padding, being per key, is applied in every phase when present.
* Masks are applied with ``tl.where`` before anything is multiplied by a score (0·(−inf) is NaN).
"""

import types

import triton
import triton.language as tl

# Integer launch arguments that vary per call: without this Triton would compile a new variant whenever one
# of them happens to be 1 or a multiple of 16.
_DO_NOT_SPECIALIZE = ("num_heads", "num_sel", "row_start", "num_rows", "q_len", "k_len", "group", "window")


def _head_dim_mask(offs_d, HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr):
    """Which of the ``BLOCK_D`` lanes are real head dimensions."""
    # A constant all-true mask when no lane is padding: a computed one on the contiguous axis would stop
    # the compiler from vectorising (and pipelining) the loads.
    if BLOCK_D == HEAD_DIM:
        d_ok = tl.full([BLOCK_D], 1, tl.int1)
    else:
        d_ok = offs_d < HEAD_DIM
    return d_ok


def _key_tile_bounds(start_m, q_len, k_len, window, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                     CAUSAL: tl.constexpr, HAS_WINDOW: tl.constexpr):
    """For query block ``start_m``: the key range [lo, hi) some row of the block may see, and the tile-aligned
    part [full_lo, full_hi) that every row sees in full. Returns ``lo, full_lo, full_hi, hi``."""
    offset = k_len - q_len
    pos_lo = offset + start_m * BLOCK_M
    pos_hi = offset + tl.minimum(start_m * BLOCK_M + BLOCK_M, q_len) - 1
    # All values stay ≥ 0 before any division (integer division rounds differently for negatives on the
    # compiler and the interpreter).
    if CAUSAL:
        hi = tl.minimum(k_len, pos_hi + 1)
        full_hi = tl.minimum((k_len // BLOCK_N) * BLOCK_N, ((pos_lo + 1) // BLOCK_N) * BLOCK_N)
    else:
        hi = k_len + 0 * pos_hi
        full_hi = (k_len // BLOCK_N) * BLOCK_N + 0 * pos_hi
    if HAS_WINDOW:
        lo = (tl.maximum(pos_lo - window + 1, 0) // BLOCK_N) * BLOCK_N
        full_lo = ((tl.maximum(pos_hi - window + 1, 0) + BLOCK_N - 1) // BLOCK_N) * BLOCK_N
    else:
        lo = 0 * pos_hi
        full_lo = 0 * pos_hi
    full_lo = tl.minimum(tl.maximum(full_lo, lo), hi)
    full_hi = tl.maximum(tl.minimum(full_hi, hi), full_lo)
    return lo, full_lo, full_hi, hi


def _phase_range(lo, full_lo, full_hi, hi, PHASE: tl.constexpr):
    """``start, end`` of phase ``PHASE``: 0 the masked prefix, 1 the unmasked middle, 2 the masked suffix."""
    if PHASE == 0:
        start = lo
        end = full_lo
    elif PHASE == 1:
        start = full_lo
        end = full_hi
    else:
        start = full_hi
        end = hi
    return start, end


def _load_tile(base, idx, stride_n, offs_d, stride_d, d_ok, limit, MASKED: tl.constexpr):
    """Rows ``idx`` of a ``(·, BLOCK_D)`` tile at ``base``; with ``MASKED``, rows ≥ ``limit`` load as 0 (without
    it the caller knows every row is in range and the load carries no row mask)."""
    if MASKED:
        tile = tl.load(base + idx[:, None] * stride_n + offs_d[None, :] * stride_d,
                       mask=(idx < limit)[:, None] & d_ok[None, :], other=0.0)
    else:
        tile = tl.load(base + idx[:, None] * stride_n + offs_d[None, :] * stride_d,
                       mask=d_ok[None, :], other=0.0)
    return tile


def _visible(key_pos, query_pos, key_ok, query_ok, window, CAUSAL: tl.constexpr, HAS_WINDOW: tl.constexpr):
    """Which (query, key) pairs see each other under the causal and window masks. The arguments come already
    broadcast (``[:, None]`` / ``[None, :]``), so one helper serves both tile orientations."""
    visible = key_ok & query_ok
    if CAUSAL:
        visible = visible & (key_pos <= query_pos)
    if HAS_WINDOW:
        visible = visible & (key_pos > query_pos - window)
    return visible


def _attn_fwd(
    Q, K, V, Out, Lse, Entropy, Sink, Pad,
    stride_qb, stride_qh, stride_qm, stride_qd,
    stride_kb, stride_kh, stride_kn, stride_kd,
    stride_vb, stride_vh, stride_vn, stride_vd,
    stride_ob, stride_oh, stride_om, stride_od,
    stride_pb,
    num_heads, q_len, k_len, group, window, qk_scale,
    HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
    CAUSAL: tl.constexpr, HAS_WINDOW: tl.constexpr, HAS_PADDING: tl.constexpr,
    STORE_LSE: tl.constexpr, STORE_ENTROPY: tl.constexpr, STORE_SINK: tl.constexpr,
    DOT_PRECISION: tl.constexpr,
):
    """One program: BLOCK_M query rows of one (batch, head); online softmax over key tiles, FlashAttention-2
    style, plus the optional per-row statistics selected by the STORE_* flags."""
    tl.static_assert(BLOCK_D >= HEAD_DIM)
    tl.static_assert(BLOCK_M >= 16)
    tl.static_assert(BLOCK_N >= 16)
    start_m = tl.program_id(0)
    off_bh = tl.program_id(1)
    off_b = off_bh // num_heads
    off_h = off_bh % num_heads
    off_kvh = off_h // group

    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, BLOCK_D)
    row_ok = offs_m < q_len
    d_ok = _head_dim_mask(offs_d, HEAD_DIM, BLOCK_D)

    q_base = Q + off_b.to(tl.int64) * stride_qb + off_h.to(tl.int64) * stride_qh
    k_base = K + off_b.to(tl.int64) * stride_kb + off_kvh.to(tl.int64) * stride_kh
    v_base = V + off_b.to(tl.int64) * stride_vb + off_kvh.to(tl.int64) * stride_vh
    q = tl.load(q_base + offs_m[:, None] * stride_qm + offs_d[None, :] * stride_qd,
                mask=row_ok[:, None] & d_ok[None, :], other=0.0)

    pos = k_len - q_len + offs_m  # absolute position of each query row
    lo, full_lo, full_hi, hi = _key_tile_bounds(start_m, q_len, k_len, window, BLOCK_M, BLOCK_N, CAUSAL, HAS_WINDOW)

    if HAS_PADDING:
        pad_base = Pad + off_b.to(tl.int64) * stride_pb

    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)  # running max of s2
    l_i = tl.zeros([BLOCK_M], tl.float32)  # Σ exp2(s2 − m)
    t_i = tl.zeros([BLOCK_M], tl.float32)  # Σ exp2(s2 − m)·(s2 − m), for the entropy
    acc = tl.zeros([BLOCK_M, BLOCK_D], tl.float32)

    for phase in tl.static_range(3):
        start, end = _phase_range(lo, full_lo, full_hi, hi, phase)
        for start_n in range(start, end, BLOCK_N):
            cols = start_n + offs_n
            col_ok = cols < k_len
            k = _load_tile(k_base, cols, stride_kn, offs_d, stride_kd, d_ok, k_len, phase != 1)
            v = _load_tile(v_base, cols, stride_vn, offs_d, stride_vd, d_ok, k_len, phase != 1)
            s = tl.dot(q, tl.trans(k), input_precision=DOT_PRECISION) * qk_scale  # (BLOCK_M, BLOCK_N), log2 units
            if phase != 1:
                visible = _visible(cols[None, :], pos[:, None], col_ok[None, :], (offs_m >= 0)[:, None], window,
                                   CAUSAL, HAS_WINDOW)
                s = tl.where(visible, s, float("-inf"))
            if HAS_PADDING:
                real = tl.load(pad_base + cols, mask=cols < k_len, other=0) != 0
                s = tl.where(real[None, :], s, float("-inf"))

            m_new = tl.maximum(m_i, tl.max(s, 1))
            # A row that has seen no key yet keeps m = −inf; shift it by 0 so exp2(−inf − 0) = 0, not NaN.
            m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
            alpha = tl.exp2(m_i - m_safe)
            centred = s - m_safe[:, None]  # −inf where masked
            p = tl.exp2(centred)
            if STORE_ENTROPY:
                # t ← α·(t + (m_old − m_new)·l), then add this tile's Σ p·(s − m_new) (shared/DESIGN.md).
                shift = tl.where(m_i == float("-inf"), 0.0, m_i - m_safe)
                if phase == 1 and not HAS_PADDING:
                    plogp = p * centred  # nothing masked in this phase: every entry is finite
                else:
                    plogp = p * tl.where(p > 0.0, centred, 0.0)  # masked: 0·(−inf) would be NaN
                t_i = alpha * (t_i + shift * l_i) + tl.sum(plogp, 1)
            l_i = l_i * alpha + tl.sum(p, 1)
            acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v, input_precision=DOT_PRECISION)
            m_i = m_new

    seen = l_i > 0.0
    safe_l = tl.where(seen, l_i, 1.0)
    out = acc / safe_l[:, None]  # a row that sees no key: acc = 0, out = 0
    o_base = Out + off_b.to(tl.int64) * stride_ob + off_h.to(tl.int64) * stride_oh
    tl.store(o_base + offs_m[:, None] * stride_om + offs_d[None, :] * stride_od, out.to(Out.dtype.element_ty),
             mask=row_ok[:, None] & d_ok[None, :])

    stat_offs = off_bh.to(tl.int64) * q_len + offs_m
    m_final = tl.where(m_i == float("-inf"), 0.0, m_i)
    if STORE_LSE:
        lse = tl.where(seen, (m_final + tl.log2(safe_l)) * 0.6931471805599453, float("-inf"))
        tl.store(Lse + stat_offs, lse, mask=row_ok)
    if STORE_ENTROPY:
        # H = ln l − t/l (t in log2 units → × ln 2); both terms are ≥ 0, so only rounding can push it below 0.
        entropy = tl.log(safe_l) - (t_i / safe_l) * 0.6931471805599453
        entropy = tl.where(seen, tl.maximum(entropy, 0.0), 0.0)
        tl.store(Entropy + stat_offs, entropy, mask=row_ok)
    if STORE_SINK:
        # Weight on key 0 = exp2(s2₀ − m)/l; s2₀ is recomputed here rather than tracked through the loop.
        k0 = tl.load(k_base + offs_d * stride_kd, mask=d_ok, other=0.0).to(tl.float32)
        s0 = tl.sum(q.to(tl.float32) * k0[None, :], 1) * qk_scale
        sees0 = offs_m >= 0  # causal never hides key 0 (every position is ≥ 0)
        if HAS_WINDOW:
            sees0 = sees0 & (pos < window)
        if HAS_PADDING:
            sees0 = sees0 & (tl.load(pad_base) != 0)
        sink = tl.where(sees0 & seen, tl.exp2(tl.where(sees0, s0, 0.0) - m_final) / safe_l, 0.0)
        # s2₀ summed elementwise can exceed the tiled row max by an ulp or two when key 0 holds the max; a weight
        # is at most 1.
        sink = tl.minimum(sink, 1.0)
        tl.store(Sink + stat_offs, sink, mask=row_ok)


def _materialize(
    Q, K, Lse, HeadIdx, W, Pad,
    stride_qb, stride_qh, stride_qm, stride_qd,
    stride_kb, stride_kh, stride_kn, stride_kd,
    stride_lb, stride_lh, stride_lm,
    stride_wb, stride_wh, stride_wm, stride_wn,
    stride_pb,
    num_sel, row_start, num_rows, q_len, k_len, group, window, qk_scale,
    HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
    CAUSAL: tl.constexpr, HAS_WINDOW: tl.constexpr, HAS_PADDING: tl.constexpr,
    DOT_PRECISION: tl.constexpr,
):
    """One program: one (BLOCK_M × BLOCK_N) tile of exact weights exp2(s2 − lse·log2 e) for one selected head.

    Rows are ``row_start + [0, num_rows)`` of the queries; the output is ``(batch, num_sel, num_rows, k_len)``.
    """
    tl.static_assert(BLOCK_D >= HEAD_DIM)
    start_n = tl.program_id(0)
    start_m = tl.program_id(1)
    off_bs = tl.program_id(2)
    off_b = off_bs // num_sel
    off_s = off_bs % num_sel
    off_h = tl.load(HeadIdx + off_s)
    off_kvh = off_h // group

    local_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_m = row_start + local_m  # query index
    cols = start_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, BLOCK_D)
    row_ok = local_m < num_rows
    col_ok = cols < k_len
    d_ok = _head_dim_mask(offs_d, HEAD_DIM, BLOCK_D)

    q = tl.load(Q + off_b.to(tl.int64) * stride_qb + off_h.to(tl.int64) * stride_qh
                + offs_m[:, None] * stride_qm + offs_d[None, :] * stride_qd,
                mask=row_ok[:, None] & d_ok[None, :], other=0.0)
    k = tl.load(K + off_b.to(tl.int64) * stride_kb + off_kvh.to(tl.int64) * stride_kh
                + cols[:, None] * stride_kn + offs_d[None, :] * stride_kd,
                mask=col_ok[:, None] & d_ok[None, :], other=0.0)
    lse = tl.load(Lse + off_b.to(tl.int64) * stride_lb + off_h.to(tl.int64) * stride_lh + offs_m * stride_lm,
                  mask=row_ok, other=float("-inf"))
    # A row that saw no key has lse = −inf; +inf makes every weight exp2(· − inf) = 0.
    lse2 = tl.where(lse == float("-inf"), float("inf"), lse * 1.4426950408889634)

    s = tl.dot(q, tl.trans(k), input_precision=DOT_PRECISION) * qk_scale
    pos = k_len - q_len + offs_m
    visible = _visible(cols[None, :], pos[:, None], col_ok[None, :], row_ok[:, None], window, CAUSAL, HAS_WINDOW)
    if HAS_PADDING:
        real = tl.load(Pad + off_b.to(tl.int64) * stride_pb + cols, mask=col_ok, other=0) != 0
        visible = visible & real[None, :]
    p = tl.where(visible, tl.exp2(tl.where(visible, s, 0.0) - lse2[:, None]), 0.0)
    w_base = W + off_b.to(tl.int64) * stride_wb + off_s.to(tl.int64) * stride_wh
    tl.store(w_base + local_m[:, None].to(tl.int64) * stride_wm + cols[None, :] * stride_wn,
             p.to(W.dtype.element_ty), mask=row_ok[:, None] & col_ok[None, :])


def _attn_bwd_delta(
    Out, DOut, Delta,
    stride_ob, stride_oh, stride_om, stride_od,
    stride_db, stride_dh, stride_dm, stride_dd,
    num_heads, q_len,
    HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_M: tl.constexpr,
):
    """delta_i = Σ_d out_id · dout_id in fp32: the row term of the softmax gradient."""
    start_m = tl.program_id(0)
    off_bh = tl.program_id(1)
    off_b = off_bh // num_heads
    off_h = off_bh % num_heads
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, BLOCK_D)
    mask = (offs_m < q_len)[:, None] & (offs_d < HEAD_DIM)[None, :]
    o = tl.load(Out + off_b.to(tl.int64) * stride_ob + off_h.to(tl.int64) * stride_oh
                + offs_m[:, None] * stride_om + offs_d[None, :] * stride_od, mask=mask, other=0.0)
    do = tl.load(DOut + off_b.to(tl.int64) * stride_db + off_h.to(tl.int64) * stride_dh
                 + offs_m[:, None] * stride_dm + offs_d[None, :] * stride_dd, mask=mask, other=0.0)
    delta = tl.sum(o.to(tl.float32) * do.to(tl.float32), 1)
    tl.store(Delta + off_bh.to(tl.int64) * q_len + offs_m, delta, mask=offs_m < q_len)


def _attn_bwd_dkdv(
    Q, K, V, DOut, DK, DV, Lse, Delta, Pad,
    stride_qb, stride_qh, stride_qm, stride_qd,
    stride_kb, stride_kh, stride_kn, stride_kd,
    stride_vb, stride_vh, stride_vn, stride_vd,
    stride_db, stride_dh, stride_dm, stride_dd,
    stride_gb, stride_gh, stride_gn, stride_gd,
    stride_pb,
    num_heads, q_len, k_len, group, window, qk_scale, scale,
    HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
    CAUSAL: tl.constexpr, HAS_WINDOW: tl.constexpr, HAS_PADDING: tl.constexpr,
    DOT_PRECISION: tl.constexpr,
):
    """One program: dK and dV for BLOCK_N keys as seen by one (batch, *query* head), summed over the query tiles
    that can see those keys; weights are recomputed from the forward's log-sum-exp. The result goes to head
    ``off_h`` of DK/DV (layout ``stride_g*``): with GQA the host sums the group's heads afterwards, as
    FlashAttention-2 does — a loop over the group inside the kernel made the compiler spill registers."""
    tl.static_assert(BLOCK_D >= HEAD_DIM)
    start_n = tl.program_id(0)
    off_bh = tl.program_id(1)
    off_b = off_bh // num_heads
    off_h = off_bh % num_heads
    off_kvh = off_h // group

    n_lo = start_n * BLOCK_N
    cols = n_lo + tl.arange(0, BLOCK_N)
    offs_m = tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, BLOCK_D)
    col_ok = cols < k_len
    d_ok = _head_dim_mask(offs_d, HEAD_DIM, BLOCK_D)

    k = tl.load(K + off_b.to(tl.int64) * stride_kb + off_kvh.to(tl.int64) * stride_kh
                + cols[:, None] * stride_kn + offs_d[None, :] * stride_kd,
                mask=col_ok[:, None] & d_ok[None, :], other=0.0)
    v = tl.load(V + off_b.to(tl.int64) * stride_vb + off_kvh.to(tl.int64) * stride_vh
                + cols[:, None] * stride_vn + offs_d[None, :] * stride_vd,
                mask=col_ok[:, None] & d_ok[None, :], other=0.0)
    dk = tl.zeros([BLOCK_N, BLOCK_D], tl.float32)
    dv = tl.zeros([BLOCK_N, BLOCK_D], tl.float32)

    # Query rows [lo, hi) that see some key of this block, and the tile-aligned rows [full_lo, full_hi) that
    # see all of them (which needs the whole key block in range).
    offset = k_len - q_len
    n_last = tl.minimum(n_lo + BLOCK_N, k_len) - 1
    if CAUSAL:
        lo = (tl.maximum(n_lo - offset, 0) // BLOCK_M) * BLOCK_M
        full_lo = ((tl.maximum(n_lo + BLOCK_N - 1 - offset, 0) + BLOCK_M - 1) // BLOCK_M) * BLOCK_M
    else:
        lo = 0 * n_last
        full_lo = 0 * n_last
    if HAS_WINDOW:
        hi = tl.minimum(q_len, tl.maximum(n_last + window - offset, 0))
        full_hi = tl.minimum((q_len // BLOCK_M) * BLOCK_M,
                             (tl.maximum(n_lo + window - offset, 0) // BLOCK_M) * BLOCK_M)
    else:
        hi = q_len + 0 * n_last
        full_hi = (q_len // BLOCK_M) * BLOCK_M + 0 * n_last
    full_hi = tl.where(n_lo + BLOCK_N <= k_len, full_hi, 0)
    full_lo = tl.minimum(tl.maximum(full_lo, lo), hi)
    full_hi = tl.maximum(tl.minimum(full_hi, hi), full_lo)

    q_base = Q + off_b.to(tl.int64) * stride_qb + off_h.to(tl.int64) * stride_qh
    do_base = DOut + off_b.to(tl.int64) * stride_db + off_h.to(tl.int64) * stride_dh
    stat_base = off_bh.to(tl.int64) * q_len
    for phase in tl.static_range(3):
        start, end = _phase_range(lo, full_lo, full_hi, hi, phase)
        for start_m in range(start, end, BLOCK_M):
            rows = start_m + offs_m
            q = _load_tile(q_base, rows, stride_qm, offs_d, stride_qd, d_ok, q_len, phase != 1)
            do = _load_tile(do_base, rows, stride_dm, offs_d, stride_dd, d_ok, q_len, phase != 1)
            if phase == 1:
                lse = tl.load(Lse + stat_base + rows)
                delta = tl.load(Delta + stat_base + rows)
            else:
                row_ok = rows < q_len
                lse = tl.load(Lse + stat_base + rows, mask=row_ok, other=float("-inf"))
                delta = tl.load(Delta + stat_base + rows, mask=row_ok, other=0.0)
            lse2 = tl.where(lse == float("-inf"), float("inf"), lse * 1.4426950408889634)
            # Transposed tiles (keys × queries) so dV += Pᵀ·dO and dK += dSᵀ·Q need no extra transpose.
            s_t = tl.dot(k, tl.trans(q), input_precision=DOT_PRECISION) * qk_scale  # (BLOCK_N, BLOCK_M)
            p_t = tl.exp2(s_t - lse2[None, :])
            if phase != 1:
                pos = offset + rows
                visible = _visible(cols[:, None], pos[None, :], col_ok[:, None], row_ok[None, :], window,
                                   CAUSAL, HAS_WINDOW)
                p_t = tl.where(visible, p_t, 0.0)
            dv += tl.dot(p_t.to(do.dtype), do, input_precision=DOT_PRECISION)
            dp_t = tl.dot(v, tl.trans(do), input_precision=DOT_PRECISION)  # (BLOCK_N, BLOCK_M)
            ds_t = p_t * (dp_t - delta[None, :])
            dk += tl.dot(ds_t.to(q.dtype), q, input_precision=DOT_PRECISION)

    keep = col_ok
    if HAS_PADDING:
        # A padded key gets no weight from any query, so its gradients are exactly 0 (whatever the unmasked
        # arithmetic above produced for its row, which touches no other row).
        keep = keep & (tl.load(Pad + off_b.to(tl.int64) * stride_pb + cols, mask=col_ok, other=0) != 0)
    dk = tl.where(keep[:, None], dk * scale, 0.0)
    dv = tl.where(keep[:, None], dv, 0.0)
    store_mask = col_ok[:, None] & d_ok[None, :]
    g_offs = (off_b.to(tl.int64) * stride_gb + off_h.to(tl.int64) * stride_gh
              + cols[:, None] * stride_gn + offs_d[None, :] * stride_gd)
    tl.store(DK + g_offs, dk.to(DK.dtype.element_ty), mask=store_mask)
    tl.store(DV + g_offs, dv.to(DV.dtype.element_ty), mask=store_mask)


def _attn_bwd_dq(
    Q, K, V, DOut, DQ, Lse, Delta, Pad,
    stride_qb, stride_qh, stride_qm, stride_qd,
    stride_kb, stride_kh, stride_kn, stride_kd,
    stride_vb, stride_vh, stride_vn, stride_vd,
    stride_db, stride_dh, stride_dm, stride_dd,
    stride_gb, stride_gh, stride_gm, stride_gd,
    stride_pb,
    num_heads, q_len, k_len, group, window, qk_scale, scale,
    HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
    CAUSAL: tl.constexpr, HAS_WINDOW: tl.constexpr, HAS_PADDING: tl.constexpr,
    DOT_PRECISION: tl.constexpr,
):
    """One program: dQ for BLOCK_M query rows of one (batch, head), over the key tiles the forward visited.
    dQ's layout is ``stride_g*``."""
    tl.static_assert(BLOCK_D >= HEAD_DIM)
    start_m = tl.program_id(0)
    off_bh = tl.program_id(1)
    off_b = off_bh // num_heads
    off_h = off_bh % num_heads
    off_kvh = off_h // group

    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, BLOCK_D)
    row_ok = offs_m < q_len
    d_ok = _head_dim_mask(offs_d, HEAD_DIM, BLOCK_D)

    q_off = off_b.to(tl.int64) * stride_qb + off_h.to(tl.int64) * stride_qh
    q = tl.load(Q + q_off + offs_m[:, None] * stride_qm + offs_d[None, :] * stride_qd,
                mask=row_ok[:, None] & d_ok[None, :], other=0.0)
    do = tl.load(DOut + off_b.to(tl.int64) * stride_db + off_h.to(tl.int64) * stride_dh
                 + offs_m[:, None] * stride_dm + offs_d[None, :] * stride_dd,
                 mask=row_ok[:, None] & d_ok[None, :], other=0.0)
    stat_offs = off_bh.to(tl.int64) * q_len + offs_m
    lse = tl.load(Lse + stat_offs, mask=row_ok, other=float("-inf"))
    lse2 = tl.where(lse == float("-inf"), float("inf"), lse * 1.4426950408889634)
    delta = tl.load(Delta + stat_offs, mask=row_ok, other=0.0)
    k_base = K + off_b.to(tl.int64) * stride_kb + off_kvh.to(tl.int64) * stride_kh
    v_base = V + off_b.to(tl.int64) * stride_vb + off_kvh.to(tl.int64) * stride_vh

    pos = k_len - q_len + offs_m
    lo, full_lo, full_hi, hi = _key_tile_bounds(start_m, q_len, k_len, window, BLOCK_M, BLOCK_N, CAUSAL, HAS_WINDOW)
    if HAS_PADDING:
        pad_base = Pad + off_b.to(tl.int64) * stride_pb

    dq = tl.zeros([BLOCK_M, BLOCK_D], tl.float32)
    for phase in tl.static_range(3):
        start, end = _phase_range(lo, full_lo, full_hi, hi, phase)
        for start_n in range(start, end, BLOCK_N):
            cols = start_n + offs_n
            col_ok = cols < k_len
            k = _load_tile(k_base, cols, stride_kn, offs_d, stride_kd, d_ok, k_len, phase != 1)
            v = _load_tile(v_base, cols, stride_vn, offs_d, stride_vd, d_ok, k_len, phase != 1)
            s = tl.dot(q, tl.trans(k), input_precision=DOT_PRECISION) * qk_scale
            p = tl.exp2(s - lse2[:, None])
            if phase != 1:
                visible = _visible(cols[None, :], pos[:, None], col_ok[None, :], row_ok[:, None], window,
                                   CAUSAL, HAS_WINDOW)
                p = tl.where(visible, p, 0.0)
            if HAS_PADDING:
                real = tl.load(pad_base + cols, mask=cols < k_len, other=0) != 0
                p = tl.where(real[None, :], p, 0.0)
            dp = tl.dot(do, tl.trans(v), input_precision=DOT_PRECISION)
            ds = p * (dp - delta[:, None])
            dq += tl.dot(ds.to(k.dtype), k, input_precision=DOT_PRECISION)

    dq_ptrs = (DQ + off_b.to(tl.int64) * stride_gb + off_h.to(tl.int64) * stride_gh
               + offs_m[:, None] * stride_gm + offs_d[None, :] * stride_gd)
    tl.store(dq_ptrs, (dq * scale).to(DQ.dtype.element_ty), mask=row_ok[:, None] & d_ok[None, :])


KERNEL_SOURCES = {
    "forward": _attn_fwd,
    "materialize": _materialize,
    "backward_delta": _attn_bwd_delta,
    "backward_dkdv": _attn_bwd_dkdv,
    "backward_dq": _attn_bwd_dq,
}


HELPER_SOURCES = (_head_dim_mask, _key_tile_bounds, _phase_range, _load_tile, _visible)
_HELPER_BUILDS: dict[bool, dict[str, object]] = {}


def _helpers_for(interpret: bool) -> dict[str, object]:
    """The device helpers built once for one mode: interpreter-rewritten functions, or ``JITFunction``s that the
    compiler inlines. (Not ``InterpretedFunction`` objects: calling one patches ``triton.language`` for good.)"""
    builds = _HELPER_BUILDS.get(interpret)
    if builds is None:
        if interpret:
            from triton.runtime.interpreter import InterpretedFunction

            builds = {fn.__name__: InterpretedFunction(fn).rewrite() for fn in HELPER_SOURCES}
        else:
            builds = {fn.__name__: triton.runtime.jit.JITFunction(fn) for fn in HELPER_SOURCES}
        _HELPER_BUILDS[interpret] = builds
    return builds


def _with_helpers(fn, helpers: dict[str, object]):
    """A copy of kernel ``fn`` whose global names of the helpers resolve to ``helpers`` (same code and source)."""
    namespace = {**fn.__globals__, **helpers}
    bound = types.FunctionType(fn.__code__, namespace, fn.__name__, fn.__defaults__, fn.__closure__)
    bound.__annotations__ = dict(fn.__annotations__)
    bound.__qualname__ = fn.__qualname__
    bound.__doc__ = fn.__doc__
    return bound


def build(name: str, interpret: bool):
    """The launchable kernel ``name`` for one mode: Triton's CPU interpreter or its compiler."""
    fn = _with_helpers(KERNEL_SOURCES[name], _helpers_for(interpret))
    if interpret:
        from triton.runtime.interpreter import InterpretedFunction

        return InterpretedFunction(fn)
    params = fn.__code__.co_varnames[:fn.__code__.co_argcount]
    return triton.runtime.jit.JITFunction(fn, do_not_specialize=[p for p in _DO_NOT_SPECIALIZE if p in params])
