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

from collections.abc import Iterable, Sequence
from typing import Literal

import numpy as np
import torch

StatName = Literal["entropy", "lse", "sink"]
STAT_NAMES: tuple[StatName, ...] = ("entropy", "lse", "sink")

# Queries per block in blocked_attention are chosen so one block's fp32 scores stay under this many bytes.
_BLOCK_BUDGET_BYTES = 32 * 2**20


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
    if q_len == 1 and key_padding_mask is None:  # a decode step: one query at the last position, plain ints
        first_key = max(k_len - window, 0) if window is not None else 0
        return torch.tensor([[k_len - first_key]], device=device)
    position = k_len - q_len + torch.arange(q_len, device=device)  # absolute position of each query
    last = position if causal else torch.full_like(position, k_len - 1)
    first = (position - window + 1).clamp_min(0) if window is not None else torch.zeros_like(position)
    if key_padding_mask is None:  # every key real (one text, a decode step): no prefix sums needed
        return ((last + 1).clamp(max=k_len) - first.clamp(0, k_len)).clamp_min(0)[None]
    real = key_padding_mask.to(device=device, dtype=torch.long)
    prefix = torch.nn.functional.pad(real.cumsum(dim=-1), (1, 0))  # prefix[:, j] = real tokens before key j
    counts = prefix[:, (last + 1).clamp(0, k_len)] - prefix[:, first.clamp(0, k_len)]
    return counts.clamp_min(0)


def _repeat_kv(x: torch.Tensor, heads: int) -> torch.Tensor:
    """(batch, kv_heads, len, d) -> (batch, heads, len, d): each key/value head serves heads/kv_heads queries."""
    group = heads // x.shape[1]
    return x if group == 1 else x.repeat_interleave(group, dim=1)


def _scores(q: torch.Tensor, k: torch.Tensor, scale: float, visible: torch.Tensor | None) -> torch.Tensor:
    """fp32 scores ``(q·scale)·kᵀ`` with invisible keys at −inf: (batch, heads, rows, k_len)."""
    scores = torch.matmul(q.float() * scale, k.float().transpose(-1, -2))
    if visible is not None:
        scores.masked_fill_(~visible, float("-inf"))  # in place on a fresh tensor: autograd-safe
    return scores


def _weights_from_scores(scores: torch.Tensor, lse: torch.Tensor, *, inplace: bool) -> torch.Tensor:
    """``exp(scores − lse)`` row by row; a row that sees no key (lse = −inf) gets weights 0, not NaN."""
    shift = lse.masked_fill(torch.isneginf(lse), 0.0).unsqueeze(-1)
    return scores.sub_(shift).exp_() if inplace else torch.exp(scores - shift)


def _softmax_and_lse(scores: torch.Tensor, *, inplace: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """Row softmax of ``scores`` and its log-sum-exp, overwriting ``scores`` when ``inplace`` (no block-sized
    temporaries). A row with no visible key gets weights 0 and log-sum-exp −inf."""
    row_max = scores.amax(dim=-1, keepdim=True)
    row_max = row_max.masked_fill(torch.isneginf(row_max), 0.0)  # shift empty rows by 0: exp(−inf) = 0
    exps = scores.sub_(row_max).exp_() if inplace else torch.exp(scores - row_max)
    total = exps.sum(dim=-1, keepdim=True)
    safe_total = total.clamp_min(torch.finfo(total.dtype).tiny)
    weights = exps.div_(safe_total) if inplace else exps / safe_total
    return weights, (row_max + torch.log(total)).squeeze(-1)


def _mask_if_any(q_len: int, k_len: int, *, causal: bool, window: int | None,
                 key_padding_mask: torch.Tensor | None, rows: slice, device: torch.device) -> torch.Tensor | None:
    """The visibility mask for a block of rows, or None when every key is visible (nothing to mask): no padding,
    and neither the causal limit nor the window hides a key from these rows — e.g. a decode step's single query,
    the last position, which sees every key (masking an all-visible block would change nothing)."""
    if key_padding_mask is None:
        last_position = k_len - q_len + rows.stop - 1  # the block's lowest query sees least under a window
        causal_hides = causal and rows.start < q_len - 1  # only the last query sees every key causally
        window_hides = window is not None and last_position - window >= 0  # key 0 falls out of the last row's window
        if not causal_hides and not window_hides:
            return None
    return visible_keys_mask(q_len, k_len, causal=causal, window=window, key_padding_mask=key_padding_mask,
                             rows=rows, device=device)


def row_entropy(weights: torch.Tensor | np.ndarray) -> torch.Tensor | np.ndarray:
    """Shannon entropy −Σ p log p in nats of each row of ``weights`` (last axis), with 0·log 0 = 0: the project's
    one row entropy over explicit weights (issue 39). A tensor gives a tensor (differentiable, the gradient at a
    zero weight 0), a NumPy array a NumPy array, in the input's dtype.

    The fused paths compute the same quantity without the rows and keep their own accumulation: the online
    sums of the Triton kernel, LSE − Σ p s on the fused CPU path, and :func:`reference_attention`'s in-place
    p log p (no second weights buffer)."""
    if not isinstance(weights, torch.Tensor):
        p = np.asarray(weights)
        return -(p * np.log(p, out=np.zeros_like(p), where=p > 0)).sum(axis=-1)  # log taken of positive weights only
    if not weights.requires_grad:
        return -torch.special.xlogy(weights, weights).sum(dim=-1)
    # xlogy's gradient at a zero weight is NaN (0/0 through its second argument): take the log of 1 there instead.
    positive = weights > 0
    plogp = weights * torch.log(torch.where(positive, weights, torch.ones_like(weights)))
    return -torch.where(positive, plogp, torch.zeros_like(plogp)).sum(dim=-1)



def mean_normalized_entropy(entropy, visible_keys, rows=None):
    """The normalised entropy of a head (Clark et al. 2019): over the rows of ``entropy`` (last axis, nats) that see
    at least two keys, the mean of entropy / log(visible keys); NaN where no row does. The project's one normalised
    entropy (issue 39): the Inspect page's, the census's and lesson 4b's.

    ``visible_keys`` (how many keys each row sees) and ``rows`` (an optional bool mask of the rows to count, e.g. a
    padded batch's real queries) broadcast against ``entropy``; the result has ``entropy``'s shape without its last
    axis. NumPy in, NumPy out; a tensor in, a tensor out. Each row's quotient is taken in float64 and kept in
    ``entropy``'s dtype before the mean."""
    if isinstance(entropy, torch.Tensor):
        keys = torch.as_tensor(visible_keys, device=entropy.device)
        counted = keys > 1 if rows is None else (keys > 1) & torch.as_tensor(rows, device=entropy.device)
        log_keys = torch.where(keys > 1, keys, 2).to(torch.float64).log()
        quotients = torch.where(counted, (entropy / log_keys).to(entropy.dtype), 0.0).sum(dim=-1)
        count = counted.sum(dim=-1)
        return torch.where(count > 0, quotients / count.clamp_min(1), float("nan"))
    keys = np.asarray(visible_keys)
    counted = keys > 1 if rows is None else (keys > 1) & np.asarray(rows)
    log_keys = np.log(np.where(keys > 1, keys, 2).astype(np.float64))
    quotients = np.where(counted, (entropy / log_keys).astype(entropy.dtype), 0.0).sum(axis=-1)
    count = counted.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, quotients / np.maximum(count, 1), np.nan)


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
    scores = torch.matmul(q.float(), _repeat_kv(k, heads).float().transpose(-1, -2)) * scale
    scores = scores.masked_fill(~visible, float("-inf"))
    weights = torch.softmax(scores, dim=-1).nan_to_num(nan=0.0)  # a row with no visible key: all 0
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
    # In-place softmax and entropy save block-sized copies, but would overwrite what autograd needs.
    inplace = not (torch.is_grad_enabled() and any(t.requires_grad for t in (q, k, v)))
    outs, collected = [], {name: [] for name in stats}
    for start in range(0, q_len, block):
        rows = slice(start, min(start + block, q_len))
        visible = _mask_if_any(q_len, k_len, causal=causal, window=window, key_padding_mask=key_padding_mask,
                               rows=rows, device=q.device)
        scores = _scores(q[:, :, rows], keys, scale, visible)  # (batch, heads, rows, k_len)
        weights, lse = _softmax_and_lse(scores, inplace=inplace)  # lse: (batch, heads, rows)
        outs.append(torch.matmul(weights, values))  # (batch, heads, rows, head_dim)
        if "lse" in collected:
            collected["lse"].append(lse)
        if "sink" in collected:
            collected["sink"].append(weights[..., 0].clone())
        if "entropy" in collected:  # last: in place, it turns the weights into p·log p (no second n×n buffer)
            collected["entropy"].append(-weights.xlogy_(weights).sum(dim=-1) if inplace else row_entropy(weights))
    if len(outs) == 1:  # one block (every decode step, most texts): no concatenation copy
        return outs[0].to(q.dtype), {name: parts[0] for name, parts in collected.items()}
    out = torch.cat(outs, dim=2).to(q.dtype)
    return out, {name: torch.cat(parts, dim=2) for name, parts in collected.items()}


def select_heads_and_rows(num_heads: int, q_len: int, heads: Sequence[int] | None,
                          rows: slice | None) -> tuple[list[int], slice]:
    """The heads and query rows a ``materialize_weights`` call asks for, checked and normalised.

    ``heads`` defaults to every head and ``rows`` to every query row. Returns the head indices and
    ``slice(start, stop)`` with ``0 ≤ start ≤ stop ≤ q_len``. Both implementations share it, so they accept
    and refuse the same arguments.
    """
    head_idx = list(range(num_heads)) if heads is None else [int(h) for h in heads]
    if any(not 0 <= h < num_heads for h in head_idx):
        raise ValueError(f"heads {head_idx} must lie in 0–{num_heads - 1}")
    start, stop, step = (slice(0, q_len) if rows is None else rows).indices(q_len)
    if step != 1:
        raise ValueError(f"rows must be a contiguous slice (step 1); got step {step}")
    return head_idx, slice(start, max(start, stop))


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
    head_idx, rows = select_heads_and_rows(num_heads, q_len, heads, rows)
    group = num_heads // k.shape[1]
    kv_idx = [h // group for h in head_idx]
    visible = _mask_if_any(q_len, k_len, causal=causal, window=window, key_padding_mask=key_padding_mask,
                           rows=rows, device=q.device)
    if head_idx == list(range(num_heads)):  # every head: slices are views, no copy of q, k and lse first
        queries, keys, lse = q[:, :, rows], _repeat_kv(k, num_heads), lse[:, :, rows]
    else:
        queries, keys, lse = q[:, head_idx, rows], k[:, kv_idx], lse[:, head_idx, rows]
    scores = _scores(queries, keys, scale, visible)
    return _weights_from_scores(scores, lse.float(), inplace=not torch.is_grad_enabled())
