"""Plain PyTorch attention: the readable oracle and the CPU compute path.

Both answer to the kernel contract of ``shared/DESIGN.md``:

* :func:`reference_attention` materialises the whole ``(batch, heads, q_len, k_len)`` weight tensor with an
  fp32 softmax. It is the oracle every other path is tested against; it is not used for long inputs.
* :func:`blocked_attention` computes the same thing one block of queries at a time, so its extra memory is
  ``O(batch · heads · block · k_len)`` instead of ``O(heads · n²)``, and returns the fused per-row
  statistics (entropy, log-sum-exp, sink mass). It is the ``torch`` backend of the attention function.
* :func:`materialize_weights` recomputes exact weights ``P = exp(S·scale − LSE)`` from the log-sum-exp the
  forward returned, for the heads and rows asked for only.

Shapes: ``q (batch, heads, q_len, head_dim)``; ``k, v (batch, kv_heads, k_len, head_dim)`` with ``heads`` a
multiple of ``kv_heads`` (grouped-query attention). Queries are the *last* ``q_len`` positions of the keys
(a KV cache), so query ``i`` sits at absolute position ``p_i = k_len − q_len + i``.

Mask semantics (the Hugging Face conventions): ``key_padding_mask`` is bool ``(batch, k_len)``, True = a
real token; ``causal`` lets query ``i`` see keys ``j ≤ p_i``; ``window=w`` keeps keys with ``p_i − w < j``.
A row that sees no key at all (a padded query under left padding) is defined as: output 0, weights 0,
entropy 0, sink mass 0, log-sum-exp −inf.
"""

from __future__ import annotations

from typing import Iterable, Literal, Sequence

import torch

StatName = Literal["entropy", "lse", "sink"]
STAT_NAMES: tuple[StatName, ...] = ("entropy", "lse", "sink")

# Queries per block in blocked_attention are chosen so one block's fp32 scores stay under this many bytes.
_BLOCK_BUDGET_BYTES = 64 * 2**20


def check_attention_inputs(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    key_padding_mask: torch.Tensor | None,
    window: int | None,
    stats: Iterable[str] = (),
) -> None:
    """Raise ``ValueError`` naming the offending shape when the inputs break the kernel contract."""
    if q.ndim != 4 or k.ndim != 4 or v.ndim != 4:
        raise ValueError(f"q, k, v must be 4-D (batch, heads, len, head_dim); got {tuple(q.shape)}, "
                         f"{tuple(k.shape)}, {tuple(v.shape)}")
    batch, heads, q_len, head_dim = q.shape
    if k.shape != v.shape:
        raise ValueError(f"k and v must have the same shape; got {tuple(k.shape)} and {tuple(v.shape)}")
    if k.shape[0] != batch or k.shape[3] != head_dim:
        raise ValueError(f"k {tuple(k.shape)} does not match q {tuple(q.shape)} in batch or head_dim")
    kv_heads, k_len = k.shape[1], k.shape[2]
    if kv_heads == 0 or heads % kv_heads != 0:
        raise ValueError(f"query heads ({heads}) must be a multiple of key/value heads ({kv_heads})")
    if q_len > k_len:
        raise ValueError(f"q_len ({q_len}) exceeds k_len ({k_len}): queries must be the last keys' positions")
    if key_padding_mask is not None:
        if key_padding_mask.dtype != torch.bool or tuple(key_padding_mask.shape) != (batch, k_len):
            raise ValueError(f"key_padding_mask must be bool of shape ({batch}, {k_len}); got "
                             f"{key_padding_mask.dtype} {tuple(key_padding_mask.shape)}")
    if window is not None and (not isinstance(window, int) or window < 1):
        raise ValueError(f"window must be a positive int or None; got {window!r}")
    unknown = set(stats) - set(STAT_NAMES)
    if unknown:
        raise ValueError(f"unknown statistics {sorted(unknown)}; available: {list(STAT_NAMES)}")


def visible_keys_mask(
    q_len: int,
    k_len: int,
    *,
    causal: bool,
    window: int | None = None,
    key_padding_mask: torch.Tensor | None = None,
    rows: slice | None = None,
    device: torch.device | str = "cpu",
) -> torch.Tensor:
    """Which keys each query may see: bool ``(batch or 1, 1, rows, k_len)``, True = visible.

    ``rows`` selects a range of query indices (default: all ``q_len``).
    """
    rows = rows or slice(0, q_len)
    query_idx = torch.arange(rows.start, rows.stop, device=device)
    position = (k_len - q_len + query_idx)[:, None]  # (rows, 1) absolute position of each query
    key_idx = torch.arange(k_len, device=device)[None, :]  # (1, k_len)
    visible = torch.ones(len(query_idx), k_len, dtype=torch.bool, device=device)
    if causal:
        visible &= key_idx <= position
    if window is not None:
        visible &= key_idx > position - window
    visible = visible[None, None]  # (1, 1, rows, k_len)
    if key_padding_mask is not None:
        visible = visible & key_padding_mask[:, None, None, :].to(device)
    return visible


def visible_key_counts(
    q_len: int,
    k_len: int,
    *,
    causal: bool,
    window: int | None = None,
    key_padding_mask: torch.Tensor | None = None,
    device: torch.device | str = "cpu",
) -> torch.Tensor:
    """How many keys each query may see, int64 ``(batch or 1, q_len)``, in O(k_len) memory (prefix sums)."""
    position = k_len - q_len + torch.arange(q_len, device=device)  # absolute position of each query
    last = position if causal else torch.full_like(position, k_len - 1)
    first = (position - window + 1).clamp_min(0) if window is not None else torch.zeros_like(position)
    if key_padding_mask is None:
        real = torch.ones(1, k_len, dtype=torch.long, device=device)
    else:
        real = key_padding_mask.to(device=device, dtype=torch.long)
    prefix = torch.nn.functional.pad(real.cumsum(dim=-1), (1, 0))  # prefix[:, j] = real tokens before key j
    counts = prefix[:, (last + 1).clamp(0, k_len)] - prefix[:, first.clamp(0, k_len)]
    return counts.clamp_min(0)


def _repeat_kv(x: torch.Tensor, heads: int) -> torch.Tensor:
    """(batch, kv_heads, len, d) -> (batch, heads, len, d): each key/value head serves heads/kv_heads queries."""
    group = heads // x.shape[1]
    return x if group == 1 else x.repeat_interleave(group, dim=1)


def _masked_scores(q: torch.Tensor, k: torch.Tensor, visible: torch.Tensor, scale: float) -> torch.Tensor:
    """fp32 scores ``q·kᵀ·scale`` with invisible keys at −inf: (batch, heads, rows, k_len)."""
    scores = torch.matmul(q.float(), k.float().transpose(-1, -2)) * scale
    return scores.masked_fill(~visible, float("-inf"))


def _softmax_with_lse(scores: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Row softmax and log-sum-exp that stay defined on rows with no visible key (weights 0, lse −inf)."""
    row_max = scores.amax(dim=-1, keepdim=True)
    # A fully masked row has max −inf; shifting by 0 instead keeps exp() at exactly 0 rather than NaN.
    row_max = torch.where(torch.isfinite(row_max), row_max, torch.zeros_like(row_max))
    exps = torch.exp(scores - row_max)
    total = exps.sum(dim=-1, keepdim=True)
    weights = torch.where(total > 0, exps / total.clamp_min(torch.finfo(total.dtype).tiny), torch.zeros_like(exps))
    lse = (row_max + torch.log(total)).squeeze(-1)  # log(0) = −inf on empty rows
    return weights, lse


def row_entropy(weights: torch.Tensor) -> torch.Tensor:
    """Shannon entropy in nats of each row of ``weights`` (last axis), with 0·log 0 = 0."""
    return -torch.special.xlogy(weights, weights).sum(dim=-1)


def reference_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    causal: bool,
    scale: float,
    key_padding_mask: torch.Tensor | None = None,
    window: int | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The oracle: ``softmax(q·kᵀ·scale + mask) · v`` with every weight materialised in fp32.

    Returns ``out (batch, heads, q_len, head_dim)`` in ``q``'s dtype and
    ``weights (batch, heads, q_len, k_len)`` float32.
    """
    check_attention_inputs(q, k, v, key_padding_mask, window)
    heads, q_len, k_len = q.shape[1], q.shape[2], k.shape[2]
    visible = visible_keys_mask(q_len, k_len, causal=causal, window=window,
                                key_padding_mask=key_padding_mask, device=q.device)
    weights, _ = _softmax_with_lse(_masked_scores(q, _repeat_kv(k, heads), visible, scale))
    out = torch.matmul(weights, _repeat_kv(v, heads).float())  # (batch, heads, q_len, head_dim)
    return out.to(q.dtype), weights


def default_block_size(batch: int, heads: int, k_len: int) -> int:
    """Queries per block so that one block of fp32 scores fits in the block budget (at least 16)."""
    return max(16, _BLOCK_BUDGET_BYTES // max(1, 4 * batch * heads * k_len))


def blocked_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    causal: bool,
    scale: float,
    key_padding_mask: torch.Tensor | None = None,
    window: int | None = None,
    stats: Sequence[StatName] = ("entropy", "lse"),
    block_size: int | None = None,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Attention computed one block of queries at a time, with fused per-row statistics.

    Returns ``out (batch, heads, q_len, head_dim)`` in ``q``'s dtype and ``stats``: a dict of float32
    ``(batch, heads, q_len)`` tensors — ``entropy`` (nats), ``lse`` (log-sum-exp of the scaled scores, the
    normaliser :func:`materialize_weights` needs), ``sink`` (weight on key 0). Differentiable.
    """
    check_attention_inputs(q, k, v, key_padding_mask, window, stats)
    batch, heads, q_len, head_dim = q.shape
    k_len = k.shape[2]
    keys, values = _repeat_kv(k, heads), _repeat_kv(v, heads).float()
    block = block_size or default_block_size(batch, heads, k_len)
    outs, collected = [], {name: [] for name in stats}
    for start in range(0, q_len, block):
        rows = slice(start, min(start + block, q_len))
        visible = visible_keys_mask(q_len, k_len, causal=causal, window=window,
                                    key_padding_mask=key_padding_mask, rows=rows, device=q.device)
        weights, lse = _softmax_with_lse(_masked_scores(q[:, :, rows], keys, visible, scale))
        outs.append(torch.matmul(weights, values))  # (batch, heads, rows, head_dim)
        if "entropy" in collected:
            collected["entropy"].append(row_entropy(weights))
        if "lse" in collected:
            collected["lse"].append(lse)
        if "sink" in collected:
            collected["sink"].append(weights[..., 0])
    out = torch.cat(outs, dim=2).to(q.dtype)
    return out, {name: torch.cat(parts, dim=2) for name, parts in collected.items()}


def materialize_weights(
    q: torch.Tensor,
    k: torch.Tensor,
    *,
    lse: torch.Tensor,
    causal: bool,
    scale: float,
    key_padding_mask: torch.Tensor | None = None,
    window: int | None = None,
    heads: Sequence[int] | None = None,
    rows: slice | None = None,
) -> torch.Tensor:
    """Exact attention weights ``exp(q·kᵀ·scale − lse)`` for the heads and query rows asked for.

    ``lse`` is the ``(batch, heads, q_len)`` log-sum-exp from the forward. Returns float32
    ``(batch, len(heads), rows, k_len)``; memory is what was asked for, never the whole layer unless asked.
    """
    check_attention_inputs(q, k, k, key_padding_mask, window)
    num_heads, q_len, k_len = q.shape[1], q.shape[2], k.shape[2]
    head_idx = list(range(num_heads)) if heads is None else list(heads)
    rows = rows or slice(0, q_len)
    group = num_heads // k.shape[1]
    kv_idx = [h // group for h in head_idx]
    visible = visible_keys_mask(q_len, k_len, causal=causal, window=window,
                                key_padding_mask=key_padding_mask, rows=rows, device=q.device)
    scores = _masked_scores(q[:, head_idx, rows], k[:, kv_idx], visible, scale)
    row_lse = lse[:, head_idx, rows].float().unsqueeze(-1)
    # Empty rows have lse = −inf and all scores −inf: define their weights as 0, not exp(nan).
    return torch.where(torch.isfinite(row_lse), torch.exp(scores - row_lse), torch.zeros_like(scores))
