"""Attention and every per-row statistic from PyTorch's fused CPU flash-attention op (issue 43).

``torch.ops.aten._scaled_dot_product_flash_attention_for_cpu`` — the kernel behind
``F.scaled_dot_product_attention`` on the CPU — returns the output and the log-sum-exp of the scaled scores, never
the n × n weights. The statistics follow from that (``shared/DESIGN.md``, Numerics):

* **entropy** ``H_i = LSE_i − Σ_j p_ij s_ij`` and ``Σ_j p_ij s_ij = scale · q_i · (Σ_j p_ij k_j)``: the last sum is
  the attention output with the *keys* as values, so one more call of the same op gives it;
* **sink mass** ``p_i0 = exp(s_i0 − LSE_i)``, one dot product per row;
* exact **weights**, only where asked, ``exp(s − LSE)`` (:func:`kernels.reference.materialize_weights`).

Supported: causal and bidirectional attention, 2-D key padding, sliding windows, KV caches (queries are the last
``q_len`` positions; the op's own causal flag is top-left aligned, so a cache with 1 < q_len < k_len gets an
explicit mask), grouped-query attention (the op broadcasts key/value heads itself: no copies), and rows that see
no key (the contract of :mod:`kernels.reference`: output 0, entropy 0, sink 0, log-sum-exp −inf).

Numerics. ``LSE − scale·q·ō_K`` subtracts two numbers of the size of the scores to get one of the size of
``log k_len``, and the op accumulates ``ō_K`` in fp32: the entropy then errs by about ``7 · 2⁻²⁴ · |s|``.
Three things keep it inside ``tests/tolerances.py``: the keys are centred first (``k − mean_j k_j`` per sequence
and key head shifts every score of a row by one constant, which changes neither the weights, the output nor the
entropy, and removes the large shared key component real models carry); the combination is done in float64; and
where the centred scores can exceed :data:`FP32_SCORE_LIMIT` in magnitude (a Cauchy–Schwarz bound, O(n·d)), the
keys-as-values call runs in float64 — measured on the bundled models, fp32 there would err by up to 2.2e-5 nats
against float64, the blocked path by up to 1e-5. The output always comes from the first call, in the inputs'
precision (fp32 for 16-bit inputs), like SDPA's.

Where the trick does not hold, :func:`fused_unavailable_reason` says why and the caller falls back to the blocked
path: autograd recording (the op's log-sum-exp carries no gradient), tensors off the CPU, values whose head size
differs from the queries', a torch without the op. Soft-capping and learned sink logits change the scores
inside the softmax; the adapter refuses those before any backend runs. Where the trick holds but the blocked path
is faster — decode steps and short sequences, :func:`fused_is_faster` — the caller takes the blocked path too.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from kernels.reference import StatName, check_attention_inputs, visible_key_counts, visible_keys_mask

_FLASH_CPU = getattr(torch.ops.aten, "_scaled_dot_product_flash_attention_for_cpu", None)

# Centred scores up to this magnitude keep fp32's cancellation error in the entropy below ~1e-6 nats (measured:
# tests/test_fused_cpu.py); beyond it both fused calls run in float64.
FP32_SCORE_LIMIT = 24.0


# From this many tokens per unit of head size on, the fused path is the faster one; see fused_is_faster.
FUSED_MIN_LENGTH_PER_HEAD_DIM = 10


def fused_is_faster(q_len: int, k_len: int, head_dim: int) -> bool:
    """Whether the fused path is faster than :func:`kernels.reference.blocked_attention` on the CPU for a call
    with ``q_len`` queries against ``k_len`` keys of ``head_dim`` (the rule the ``torch`` backend routes by; both
    are exact): when ``q_len > 1`` and ``√(q_len · k_len) ≥ 10 · head_dim``.

    Why: the blocked path spends, per query–key pair, one head-size-long product for the scores and one for the
    output, plus passes over the n×n scores (mask, softmax, entropy) whose cost does not grow with the head size.
    The fused path writes no scores but runs the flash op twice (values, then keys as values, the second in
    float64 where the score bound needs it: twice the products, at up to twice the cost), and a dozen
    O(n · head_dim) operations around it (centring, casts, the bound, the anchors). So the larger the head, the
    longer the blocked path stays ahead, and the fused path's overhead needs long rows to pay back. Measured on
    the bundled models' real inputs (``benchmarks/fused_routing.py``, docs/BENCHMARKS.md "Fused or blocked: the
    CPU routing rule"; one thread's CPU time, fused ÷ blocked, batch 1), the crossover lay between 128 and 512
    tokens for MiniLM (head_dim 32: 1.10 at 128, 0.56 at 512), past 512 for SmolLM2 (64: 0.97 at 512, 0.56 at
    2,048) and past 2,048 for Gemma 3 (256: 1.74 at 512, 1.07 at 2,048): 10 · head_dim tokens lies past each. A
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
    stats: Sequence[StatName] = ("entropy", "lse"),
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
    queries, values = q.to(compute), v.to(compute)
    centre = k.to(compute).mean(dim=2, keepdim=True)  # (batch, kv_heads, 1, d); any vector centres exactly
    keys = k.to(compute) - centre  # every score of a row moves by scale·q·centre: weights unchanged
    mask, use_flag = _mask_and_causal_flag(q_len, k_len, causal=causal, window=window,
                                           key_padding_mask=key_padding_mask, dtype=compute, device=q.device)
    out, lse_centred = _FLASH_CPU(queries, keys, values, 0.0, use_flag, attn_mask=mask, scale=scale)
    counts = None  # (batch or 1, 1, q_len): the keys each row sees, where a statistic or padding needs them
    if key_padding_mask is not None or "entropy" in stats:
        counts = visible_key_counts(q_len, k_len, causal=causal, window=window, key_padding_mask=key_padding_mask,
                                    device=q.device)[:, None, :]
    empty = counts == 0 if key_padding_mask is not None else None  # only padding can hide every key from a row
    result: dict[str, torch.Tensor] = {}
    if "entropy" in stats:
        if compute != torch.float64 and _centred_score_bound(queries, keys, scale) > FP32_SCORE_LIMIT:
            # The keys-as-values call in float64 (centred in float64: fp32 rounding would move single scores); its
            # log-sum-exp replaces the fp32 one, so entropy, LSE and sink mass all come from float64 sums.
            queries, keys = q.double(), k.double() - centre.double()
            mask = mask.double() if mask is not None else None
        mean_key, lse_centred = _FLASH_CPU(queries, keys, keys, 0.0, use_flag, attn_mask=mask, scale=scale)
        mean_score = torch.linalg.vecdot(queries, mean_key).double() * scale  # Σ_j p_j s_j, centred scores
        upper = torch.log(counts.clamp_min(1).double())  # rounding must not leave [0, log visible keys]
        entropy = torch.minimum((lse_centred.double() - mean_score).clamp_min_(0.0), upper).float()
        result["entropy"] = entropy if empty is None else entropy.masked_fill_(empty, 0.0)
    if "lse" in stats or "sink" in stats:
        # One matmul: each row's score against the centre (the shift the centring took off) and against key 0.
        anchors = torch.cat([centre.to(queries.dtype), keys[:, :, :1]], dim=2)  # (batch, kv_heads, 2, d)
        against = _grouped_scores(queries, anchors, scale)  # (batch, heads, q_len, 2)
        if "lse" in stats:  # the model's own (uncentred) scores' log-sum-exp: add back scale·q·centre
            lse = (lse_centred + against[..., 0]).float()
            result["lse"] = lse if empty is None else lse.masked_fill_(empty, float("-inf"))
        if "sink" in stats:  # exp(s_i0 − LSE_i) with both centred: the shift cancels
            result["sink"] = _sink_mass(against[..., 1] - lse_centred, k_len, window=window,
                                        key_padding_mask=key_padding_mask, empty=empty)
    if empty is not None and bool(empty.any()):
        out = out.masked_fill(empty[..., None], 0.0)
    return out.to(q.dtype), {name: result[name] for name in stats}


def _grouped_scores(queries: torch.Tensor, key_rows: torch.Tensor, scale: float) -> torch.Tensor:
    """``scale · q_i · key_r`` for a few keys per key head: ``queries (batch, heads, rows, d)``, ``key_rows (batch,
    kv_heads, r, d)`` (each key head serves heads / kv_heads consecutive query heads) → ``(batch, heads, rows, r)``,
    one matmul on a view of the queries (no copy of the keys per query head)."""
    kv_heads = key_rows.shape[1]
    grouped = queries.unflatten(1, (kv_heads, queries.shape[1] // kv_heads))  # (batch, kv_heads, group, rows, d)
    return (grouped @ key_rows.unsqueeze(2).transpose(-1, -2)).flatten(1, 2) * scale


def _centred_score_bound(queries: torch.Tensor, keys: torch.Tensor, scale: float) -> float:
    """An upper bound on |scale · q_i · k_j| over every row and key (Cauchy–Schwarz), O(n·d)."""
    if not queries.numel():
        return 0.0
    norms = [torch.linalg.vector_norm(t, dim=-1).max() for t in (queries, keys)]
    return float(abs(scale) * norms[0] * norms[1])


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
