"""Attention and every per-row statistic from PyTorch's fused CPU flash-attention op (issue 43).

``torch.ops.aten._scaled_dot_product_flash_attention_for_cpu`` — the kernel behind
``F.scaled_dot_product_attention`` on the CPU — returns the output and the log-sum-exp of the scaled scores, never
the n × n weights. The statistics follow from that (``shared/DESIGN.md``, Numerics):

* **entropy** ``H_i = LSE_i − Σ_j p_ij s_ij`` and ``Σ_j p_ij s_ij = scale · q_i · (Σ_j p_ij k_j)``: the last sum is
  the attention output with the *keys* as values, so one more call of the same op gives it;
* **sink mass** ``p_i0 = exp(s_i0 − LSE_i)``;
* exact **weights**, only where asked, ``exp(s − LSE)`` (:func:`kernels.reference.materialize_weights`).

Supported: causal and bidirectional attention, 2-D key padding, sliding windows, KV caches (queries are the last
``q_len`` positions; the op's own causal flag is top-left aligned, so a cache with 1 < q_len < k_len gets an
explicit mask), grouped-query attention (the op broadcasts key/value heads itself: no copies), and rows that see
no key (the contract of :mod:`kernels.reference`: output 0, entropy 0, sink 0, log-sum-exp −inf).

Numerics. ``LSE − scale·q·ō_K`` subtracts two numbers of the size of the scores to get one of the size of
``log k_len``, and the op rounds the scores and accumulates ``ō_K`` in fp32: the entropy errs by a few units of
2⁻²⁴ times ``Σ_j p_j · |scale| · Σ_d |q_d · k_jd|``, which exceeds the tolerance table on real layers with
scores of only 12–20 (SmolLM2: 29 of 270 heads at 512 tokens with mean-centred keys). Three things keep it
inside ``tests/tolerances.py``: the keys are centred on key 0 first (``k − k_0`` shifts every score of a row by
one constant, which changes neither the weights, the output nor the entropy; key 0's centred key is 0, so the rows
that put their mass on it — the attention sink, where decoders' scores are largest — carry almost no rounding,
and its weight is ``exp(−LSE)``); the combination is done in float64; and where a rounding-error estimate from the
first call's log-sum-exp and sink mass (:func:`fp32_rounding_estimate`) does not stay under the table, that key head's
keys-as-values call runs in float64. The output always comes from the first call, in the inputs' precision (fp32
for 16-bit inputs), like SDPA's.

Where the trick does not hold, :func:`fused_unavailable_reason` says why and the caller falls back to the blocked
path: autograd recording (the op's log-sum-exp carries no gradient), tensors off the CPU, values whose head size
differs from the queries', a torch without the op. Soft-capping and learned sink logits change the scores
inside the softmax; the adapter refuses those before any backend runs. Where the trick holds but the blocked path
is faster — decode steps and short sequences, :func:`fused_is_faster` — the caller takes the blocked path too.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import torch

from kernels.reference import StatName, check_attention_inputs, visible_key_counts, visible_keys_mask

_FLASH_CPU = getattr(torch.ops.aten, "_scaled_dot_product_flash_attention_for_cpu", None)

# The fp32 entropy's rounding-error estimate (see fp32_rounding_estimate) is this many units of 2⁻²⁴ times the
# magnitude the rounding scales with: twice the largest ratio of error to magnitude measured on the bundled models'
# real layers (8.3, SmolLM2 at 512 tokens; docs/BENCHMARKS.md). Not a worst-case proof: that bound (n·2⁻²⁴ for a
# sum of n terms) would send every head to float64.
FP32_ROUNDING_FACTOR = 16.0
# The tolerance the estimate must stay under: tests/tolerances.py's fp32 entropy entry (atol + rtol · H).
ENTROPY_ATOL = ENTROPY_RTOL = 1e-5


# From this many tokens per unit of head size on, the fused path is the faster one; see fused_is_faster.
FUSED_MIN_LENGTH_PER_HEAD_DIM = 10


def fused_is_faster(q_len: int, k_len: int, head_dim: int) -> bool:
    """Whether the fused path is faster than :func:`kernels.reference.blocked_attention` on the CPU for a call
    with ``q_len`` queries against ``k_len`` keys of ``head_dim`` (the rule the ``torch`` backend routes by; both
    are exact): when ``q_len > 1`` and ``√(q_len · k_len) ≥ 10 · head_dim``.

    Why: the blocked path spends, per query–key pair, one head-size-long product for the scores and one for the
    output, plus passes over the n×n scores (mask, softmax, entropy) whose cost does not grow with the head size.
    The fused path writes no scores but runs the flash op twice (values, then keys as values, the second in
    float64 where the rounding estimate needs it: twice the products, at up to twice the cost), and a dozen
    O(n · head_dim) operations around it (centring, casts, the estimate, key 0's scores). So the larger the head, the
    longer the blocked path stays ahead, and the fused path's overhead needs long rows to pay back. Measured on
    the bundled models' real inputs (``benchmarks/fused_routing.py``, docs/BENCHMARKS.md "Fused or blocked: the
    CPU routing rule"; one thread's CPU time, fused ÷ blocked, batch 1), the crossover lay between 128 and 512
    tokens for MiniLM (head_dim 32: 1.10 at 128, 0.56 at 512), past 512 for SmolLM2 (64: 0.97 at 512, 0.56 at
    2,048) and past 2,048 for Gemma 3 (256: 1.74 at 512, 1.07 at 2,048; remeasured with key-0 centring and the
    rounding estimate, three layers: 1.10 at 2,048): 10 · head_dim tokens lies past each. A
    decode step (q length 1) is one matrix–vector product per head on the blocked path, with no mask: the
    blocked path was as fast or faster at every cache length measured (up to 2,048). Batch and head count scale
    both paths alike, so the rule reads neither; batches of 16 ranked the paths as batch 1 did, except MiniLM at
    128 tokens (fused 0.81× blocked there): a census batch of such texts stays on the blocked path.
    """
    return q_len > 1 and q_len * k_len >= (FUSED_MIN_LENGTH_PER_HEAD_DIM * head_dim) ** 2


def fused_unavailable_reason(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> str | None:
    """Why the fused CPU path cannot compute this call exactly, or None when it can."""
    if _FLASH_CPU is None:
        return "this torch build has no fused CPU flash-attention op"
    if q.device.type != "cpu":
        return f"the tensors are on {q.device.type}; the fused op runs on the CPU only"
    if torch.is_grad_enabled() and any(t.requires_grad for t in (q, k, v)):
        return "autograd records this forward and the fused op's log-sum-exp carries no gradient"
    if v.shape[-1] != q.shape[-1]:
        return f"values have head size {v.shape[-1]} and queries {q.shape[-1]}; the fused op needs one head size"
    if not q.dtype.is_floating_point:
        return f"{q.dtype} inputs"
    return None


def _mask_and_causal_flag(q_len: int, k_len: int, *, causal: bool, window: int | None,
                          key_padding_mask: torch.Tensor | None, dtype: torch.dtype,
                          device: torch.device) -> tuple[torch.Tensor | None, bool]:
    """The additive mask ((batch or 1, 1, q_len or 1, k_len), 0 or −inf) and causal flag the op needs.

    The op's causal flag lets query i see keys j ≤ i (top-left): our causal limit when q_len = k_len, and no
    limit at all for a single query at the last position (a decode step). Otherwise the limit goes in the mask.
    """
    use_flag = causal and q_len == k_len
    causal_in_mask = causal and q_len not in (1, k_len)
    window_hides = window is not None and k_len - 1 - window >= 0  # the last query loses key 0 to the window
    if not causal_in_mask and not window_hides:
        if key_padding_mask is None:
            return None, use_flag
        visible = key_padding_mask[:, None, None, :]  # (batch, 1, 1, k_len): broadcast over rows
    else:
        visible = visible_keys_mask(q_len, k_len, causal=causal_in_mask, window=window,
                                    key_padding_mask=key_padding_mask, device=device)
    mask = torch.zeros(visible.shape, dtype=dtype, device=device)
    return mask.masked_fill_(~visible.to(device), float("-inf")), use_flag


def fused_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    causal: bool,
    scale: float,
    key_padding_mask: torch.Tensor | None = None,
    window: int | None = None,
    stats: Sequence[StatName] = ("entropy", "lse", "sink"),
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """:func:`kernels.reference.blocked_attention`'s contract through the fused CPU op.

    ``q (batch, heads, q_len, d)``, ``k, v (batch, kv_heads, k_len, d)``. Returns ``out`` like ``q`` (dtype
    included) and ``stats``: float32 ``(batch, heads, q_len)`` tensors ``entropy`` (nats), ``lse``, ``sink``.
    Not differentiable: check :func:`fused_unavailable_reason` first.
    """
    check_attention_inputs(q, k, v, key_padding_mask, window, stats)
    reason = fused_unavailable_reason(q, k, v)
    if reason is not None:
        raise ValueError(f"the fused CPU path cannot run this call: {reason}")
    q_len, k_len = q.shape[2], k.shape[2]
    compute = torch.float64 if q.dtype == torch.float64 else torch.float32
    queries = q.to(compute)
    first_key = k[:, :, :1].to(compute)  # (batch, kv_heads, 1, d): the centre, so every row's score on key 0 is 0
    keys = k.to(compute) - first_key
    mask, use_flag = _mask_and_causal_flag(q_len, k_len, causal=causal, window=window,
                                           key_padding_mask=key_padding_mask, dtype=compute, device=q.device)
    out, lse_centred = _FLASH_CPU(queries, keys, v.to(compute), 0.0, use_flag, attn_mask=mask, scale=scale)
    lse_centred = lse_centred.double()
    counts = None  # (batch or 1, 1, q_len): the keys each row sees, where a statistic or padding needs them
    if key_padding_mask is not None or "entropy" in stats:
        counts = visible_key_counts(q_len, k_len, causal=causal, window=window, key_padding_mask=key_padding_mask,
                                    device=q.device)[:, None, :]
    empty = counts == 0 if key_padding_mask is not None else None  # only padding can hide every key from a row

    def sink_mass() -> torch.Tensor:  # key 0's centred score is exactly 0: its weight is exp(−LSE) where seen
        return _sink_mass(-lse_centred, k_len, window=window, key_padding_mask=key_padding_mask, empty=empty)

    result: dict[str, torch.Tensor] = {}
    if "entropy" in stats:
        upper = torch.log(counts.clamp_min(1).double())  # rounding must not leave [0, log visible keys]
        every_pair = torch.ones(k.shape[:2], dtype=torch.bool)
        keys_as_values = functools.partial(_keys_as_values, queries, k, first_key, keys, mask=mask,
                                           use_flag=use_flag, scale=scale)
        if compute == torch.float64:
            mean_score, lse_centred = keys_as_values(every_pair, torch.zeros_like(lse_centred), lse_centred)
        else:
            # Pairs whose estimate passes the tolerance even at the largest entropy a row can have, log(visible
            # keys), run in float64 at once; the rest in fp32, then in float64 too where the entropy found is lower
            # than the estimate needs.
            estimate = fp32_rounding_estimate(queries, keys, lse_centred, sink_mass(), scale)
            surely = _pairs_beyond(estimate, upper, k.shape[1])
            mean_score, lse_centred = keys_as_values(surely, torch.zeros_like(lse_centred), lse_centred)
            found = _pairs_beyond(estimate, (lse_centred - mean_score).clamp_min(0.0), k.shape[1]) & ~surely
            if bool(found.any()):
                mean_score, lse_centred = keys_as_values(found, mean_score, lse_centred, only=True)
        entropy = torch.minimum((lse_centred - mean_score).clamp_min_(0.0), upper).float()
        result["entropy"] = entropy if empty is None else entropy.masked_fill_(empty, 0.0)
    if "lse" in stats:  # the model's own (uncentred) scores' log-sum-exp: add back each row's score on key 0
        lse = (lse_centred + _grouped_scores(queries, first_key, scale)[..., 0]).float()
        result["lse"] = lse if empty is None else lse.masked_fill_(empty, float("-inf"))
    if "sink" in stats:
        result["sink"] = sink_mass()
    if empty is not None and bool(empty.any()):
        out = out.masked_fill(empty[..., None], 0.0)
    return out.to(q.dtype), {name: result[name] for name in stats}


def _keys_as_values(queries: torch.Tensor, k: torch.Tensor, first_key: torch.Tensor, keys: torch.Tensor,
                    in_float64: torch.Tensor, mean_score: torch.Tensor, lse: torch.Tensor, *,
                    mask: torch.Tensor | None, use_flag: bool, scale: float,
                    only: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """``Σ_j p_j s_j`` (centred scores) and the log-sum-exp, float64 ``(batch, heads, q_len)``, from the op with
    the centred keys as values: the (batch, key head) pairs ``in_float64`` marks in float64 (keys centred in
    float64: fp32 rounding would move single scores; their log-sum-exp replaces ``lse``'s), the others in fp32 —
    or, with ``only``, left as ``mean_score`` and ``lse`` give them. Where the pairs are split, only each part's
    queries and keys are copied."""
    batch, kv_heads = in_float64.shape
    mean_score, lse = (t.unflatten(1, (kv_heads, -1)).flatten(0, 1).clone() for t in (mean_score, lse))
    per_pair_mask = None if mask is None or mask.shape[0] == 1 else mask.repeat_interleave(kv_heads, dim=0)
    parts = [(True, in_float64.flatten())] + ([] if only else [(False, ~in_float64.flatten())])
    for double, picked in parts:
        if not bool(picked.any()):
            continue
        part_queries = queries.unflatten(1, (kv_heads, -1)).flatten(0, 1)  # (batch · kv_heads, group, q_len, d)
        part_keys = (k.double() - first_key.double() if double else keys).flatten(0, 1)[:, None]
        part_mask = mask if per_pair_mask is None else per_pair_mask  # one (1, …) mask broadcasts over pairs
        if not bool(picked.all()):
            part_queries, part_keys = part_queries[picked], part_keys[picked]
            if per_pair_mask is not None:
                part_mask = per_pair_mask[picked]
        if double:
            part_queries, part_mask = part_queries.double(), None if part_mask is None else part_mask.double()
        mean_key, part_lse = _FLASH_CPU(part_queries, part_keys, part_keys, 0.0, use_flag, attn_mask=part_mask,
                                        scale=scale)
        mean_score[picked] = torch.linalg.vecdot(part_queries.double(), mean_key.double()) * scale
        if double:
            lse[picked] = part_lse.double()
    return tuple(t.unflatten(0, (batch, kv_heads)).flatten(1, 2) for t in (mean_score, lse))


def fp32_rounding_estimate(queries: torch.Tensor, keys: torch.Tensor, lse: torch.Tensor, sink: torch.Tensor,
                           scale: float) -> torch.Tensor:
    """How far an fp32 keys-as-values call may move each row's entropy: float64 ``(batch, heads, q_len)`` (0 on
    rows that see no key), from the first call's log-sum-exp and sink mass (keys centred on key 0).

    The entropy ``LSE − Σ_j p_j s_j`` inherits the rounding of both terms. The op computes each score as a
    d-long fp32 dot product and accumulates ``Σ_j p_j k_j`` in fp32, so both err by about ``2⁻²⁴ · Σ_j p_j a_ij``
    with ``a_ij = |scale| · Σ_d |q_id| · |k_jd|``, plus ``2⁻²⁴ · (|LSE_i| + 1)`` for the log-sum-exp's own sum.
    Key 0's centred key is 0, so ``Σ_j p_j a_ij ≤ (1 − p_i0) · A_i`` with ``A_i = |scale| · Σ_d |q_id| · max_j
    |k_jd|``: O(n·d), and small on the rows that put their mass on key 0 — the rows with the largest scores in
    decoders. The estimate is ``FP32_ROUNDING_FACTOR · 2⁻²⁴ · ((1 − p_i0) · A_i + |LSE_i| + 1)``.
    """
    kv_heads = keys.shape[1]
    largest_key = keys.abs().amax(dim=2)  # (batch, kv_heads, d)
    grouped = queries.abs().unflatten(1, (kv_heads, queries.shape[1] // kv_heads))  # (b, kv, group, q_len, d)
    spread = (grouped @ largest_key[:, :, None, :, None]).squeeze(-1).flatten(1, 2).double() * abs(scale)
    estimate = FP32_ROUNDING_FACTOR * 2.0**-24 * ((1.0 - sink.double()) * spread + lse.abs() + 1.0)
    return estimate.masked_fill_(~torch.isfinite(lse), 0.0)


def _pairs_beyond(estimate: torch.Tensor, entropy: torch.Tensor, kv_heads: int) -> torch.Tensor:
    """The (batch, key head) pairs with a row whose estimate exceeds the tolerance ``ENTROPY_ATOL + ENTROPY_RTOL ·
    entropy`` (``entropy`` broadcasts to ``estimate``'s ``(batch, heads, q_len)``): bool ``(batch, kv_heads)``."""
    beyond = (estimate > ENTROPY_ATOL + ENTROPY_RTOL * entropy).any(-1)  # (batch, heads)
    return beyond.unflatten(1, (kv_heads, -1)).any(-1)


def _grouped_scores(queries: torch.Tensor, key_rows: torch.Tensor, scale: float) -> torch.Tensor:
    """``scale · q_i · key_r`` for a few keys per key head: ``queries (batch, heads, rows, d)``, ``key_rows (batch,
    kv_heads, r, d)`` (each key head serves heads / kv_heads consecutive query heads) → ``(batch, heads, rows, r)``,
    one matmul on a view of the queries (no copy of the keys per query head)."""
    kv_heads = key_rows.shape[1]
    grouped = queries.unflatten(1, (kv_heads, queries.shape[1] // kv_heads))  # (batch, kv_heads, group, rows, d)
    return (grouped @ key_rows.unsqueeze(2).transpose(-1, -2)).flatten(1, 2).double() * scale


def _sink_mass(first_minus_lse: torch.Tensor, k_len: int, *, window: int | None,
               key_padding_mask: torch.Tensor | None, empty: torch.Tensor | None) -> torch.Tensor:
    """``exp(s_i0 − LSE_i)`` (given the exponent, ``(batch, heads, q_len)``) where row i sees key 0, else 0:
    float32 ``(batch, heads, q_len)``. Causal or not, a row that sees any key sees key 0 unless padding or the
    window hides it; ``empty``: the rows that see no key (None: there are none)."""
    q_len = first_minus_lse.shape[-1]
    sink = torch.exp(first_minus_lse).float()
    if window is not None and k_len - 1 >= window:  # the window hides key 0 from the positions ≥ window
        position = k_len - q_len + torch.arange(q_len, device=sink.device)  # (q_len,) absolute position of each query
        sink.masked_fill_((position >= window)[None, None, :], 0.0)
    if key_padding_mask is not None:
        sink.masked_fill_(~key_padding_mask[:, :1, None].to(sink.device) | empty, 0.0)
    return sink
