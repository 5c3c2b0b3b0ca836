"""Interventions: per-call edits of one attention layer, carried by the request of :mod:`kernels.hf`.

Interventions (DESIGN's one-function principle) travel in the same request, one frozen dataclass each, and apply
to one layer: :class:`ScoreScale` (another softmax temperature for some heads), :class:`TieKeysToQueries` (use
a head's queries as its keys: W_K := W_Q), :class:`WeightEdit` (replace some heads' weights — uniform,
permuted, adversarial — and recompute their output as weights · V), :class:`HeadAblation` (zero a head's
output, or replace it by its mean over the text's tokens), :class:`SequenceHeadAblation` (the same, with a
different set of heads per sequence of the batch), :class:`HeadGate` (multiply head outputs by a gate — shared
or per sequence — that may require grad: Michel et al.'s importance is |∂L/∂gate| at gate = 1) and :class:`HeadPatch`
(another run's head outputs at chosen positions, per sequence: activation patching). They run in that order:
the first two change the scores before the backend runs, so the statistics describe the attention the model
actually used. The head output they act on is attention's ``(batch, heads, q_len, head_dim)`` result before
the output projection, so zeroing it removes exactly that head's term from the residual stream (the output
projection's bias stays).

Each runs inside the one attention function (``shared/DESIGN.md``'s one-function principle): nothing is attached
to the shared model. :func:`before_scores` applies the score edits, :func:`edit_weights` the weight edits and
:func:`after_attention` the head-output edits; :mod:`kernels.hf` calls them in that order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import torch

from kernels.reference import row_entropy, visible_keys_mask


class InterventionError(ValueError):
    """An intervention names a head that does not exist, or asks for something the layer cannot do."""



@dataclass(frozen=True)
class ScoreScale:
    """Scale the chosen heads' scores by ``scale`` instead of the model's own (1/√d_k for most models)."""

    layer: int
    heads: tuple[int, ...]
    scale: float


@dataclass(frozen=True)
class TieKeysToQueries:
    """Use each chosen head's queries as its keys (W_K := W_Q, biases included): scores become q_i·q_j,
    symmetric. Only for self-attention without a cache (q_len = k_len)."""

    layer: int
    heads: tuple[int, ...]


@dataclass(frozen=True)
class WeightEdit:
    """Replace the chosen heads' weights by ``edit(weights, visible)`` and recompute their output as
    weights · V. ``weights``: (batch, len(heads), q_len, k_len) float32 — the exact weights (with autograd
    when the forward records it); ``visible``: bool broadcastable to it, True where a key may be attended.
    ``edit`` returns a tensor of the same shape (rows need not sum to 1, but usually should)."""

    layer: int
    heads: tuple[int, ...]
    edit: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


@dataclass(frozen=True)
class HeadAblation:
    """Remove the chosen heads' contribution: ``zero`` their output, or replace it by its ``mean`` over the
    text's (non-padding) query positions — the mean keeps the head's constant offset and removes only what
    depends on the token."""

    layer: int
    heads: tuple[int, ...]
    mode: Literal["zero", "mean"] = "zero"


@dataclass(frozen=True)
class HeadGate:
    """Multiply every head's output by ``gate``: a (heads,) tensor shared by the batch, or (batch, heads) — one
    gate per sequence, so one batched forward can gate each copy of a text differently. May require grad."""

    layer: int
    gate: torch.Tensor


@dataclass(frozen=True)
class SequenceHeadAblation:
    """:class:`HeadAblation` chosen per sequence: sequence b has the heads where ``mask[b]`` is True removed
    (``mask``: (batch, heads) bool). One batched forward over copies of a text then ablates a different set
    of heads in each copy — how :mod:`inspector.analyses.heads` measures every head's importance in one call."""

    layer: int
    mask: torch.Tensor
    mode: Literal["zero", "mean"] = "zero"


@dataclass(frozen=True)
class HeadPatch:
    """Activation patching (Meng et al. 2022): where ``mask`` ((batch, heads, q_len) bool) is True, the head's output
    at that query position becomes ``source``'s — (heads, q_len, d) or (batch, heads, q_len, d), another run's
    outputs of this layer — so one batched forward patches a different set of (head, position) cells per copy."""

    layer: int
    mask: torch.Tensor
    source: torch.Tensor


Intervention = (ScoreScale | TieKeysToQueries | WeightEdit | HeadAblation | HeadGate | SequenceHeadAblation
                | HeadPatch)


def _head_indices(item: Intervention, num_heads: int) -> list[int]:
    heads = [int(h) for h in item.heads]
    bad = [h for h in heads if not 0 <= h < num_heads]
    if bad or not heads:
        raise InterventionError(f"{type(item).__name__} at layer {item.layer} names heads {heads}; this layer has "
                                f"heads 0–{num_heads - 1}")
    return heads


def _head_factor(num_heads: int, heads: Sequence[int], value: float, like: torch.Tensor) -> torch.Tensor:
    """(1, heads, 1, 1) tensor: ``value`` at ``heads``, 1 elsewhere — multiplying by it is autograd-safe."""
    factor = torch.ones(num_heads, dtype=like.dtype, device=like.device)
    factor[list(heads)] = value
    return factor[None, :, None, None]


def before_scores(edits: list[Intervention], query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, *,
                   scale: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Apply :class:`ScoreScale` (by rescaling the heads' queries, so every backend honours it) and
    :class:`TieKeysToQueries` (keys and values expanded to one per query head first, so tying one query head
    does not change the others that share its key/value head under GQA)."""
    num_heads = query.shape[1]
    for item in edits:
        if isinstance(item, ScoreScale):
            if not item.scale >= 0:
                raise InterventionError(f"ScoreScale at layer {item.layer}: scale must be ≥ 0, got {item.scale}")
            query = query * _head_factor(num_heads, _head_indices(item, num_heads), item.scale / scale, query)
        elif isinstance(item, TieKeysToQueries):
            heads = _head_indices(item, num_heads)
            if query.shape[2] != key.shape[2]:
                raise InterventionError("TieKeysToQueries needs self-attention over the whole text (no KV cache): "
                                        f"q_len {query.shape[2]} ≠ k_len {key.shape[2]}")
            group = num_heads // key.shape[1]
            if group > 1:
                key, value = key.repeat_interleave(group, dim=1), value.repeat_interleave(group, dim=1)
            tied = torch.zeros(num_heads, dtype=torch.bool, device=query.device)
            tied[heads] = True
            key = torch.where(tied[None, :, None, None], query.to(key.dtype), key)
    return query, key, value


def edit_weights(edits: list[WeightEdit], out: torch.Tensor, weights: torch.Tensor, stats: dict[str, torch.Tensor],
                  value: torch.Tensor, *, causal: bool, window: int | None,
                  padding: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor, dict[str, torch.Tensor]]:
    """Apply :class:`WeightEdit` s in order; the edited heads' output becomes weights · V and their entropy and
    sink mass are recomputed from the new weights (their log-sum-exp stays the original scores')."""
    num_heads, q_len, k_len = out.shape[1], out.shape[2], value.shape[2]
    visible = visible_keys_mask(q_len, k_len, causal=causal, window=window, key_padding_mask=padding,
                                device=out.device)  # (batch or 1, 1, q_len, k_len)
    values = value.repeat_interleave(num_heads // value.shape[1], dim=1).float()  # (batch, heads, k_len, d)
    out, weights, stats = out.clone(), weights.clone(), dict(stats)
    edited_heads: set[int] = set()
    for item in edits:
        heads = _head_indices(item, num_heads)
        edited_heads.update(heads)
        original = weights[:, heads]
        edited = item.edit(original, visible)
        if not isinstance(edited, torch.Tensor) or edited.shape != original.shape:
            raise InterventionError(f"WeightEdit at layer {item.layer} returned "
                                    f"{getattr(edited, 'shape', type(edited))}, expected {tuple(original.shape)}")
        edited = edited.float()
        weights[:, heads] = edited
        out[:, heads] = torch.matmul(edited, values[:, heads]).to(out.dtype)
    changed = sorted(edited_heads)  # the other heads' statistics are the backend's, unchanged
    for name in ("entropy", "sink"):
        if name in stats:
            stats[name] = stats[name].clone()
            stats[name][:, changed] = (row_entropy(weights[:, changed]) if name == "entropy"
                                       else weights[:, changed, :, 0]).to(stats[name].dtype)
    return out, weights, stats


def _ablate(out: torch.Tensor, selected: torch.Tensor, mode: str, padding: torch.Tensor | None,
            what: str) -> torch.Tensor:
    """``out`` (batch, heads, q_len, d) with the heads where ``selected`` ((heads,) or (batch, heads) bool) is True
    zeroed or replaced by their mean over the sequence's real (non-padding) query positions."""
    q_len = out.shape[2]
    selected = selected.to(out.device).reshape(-1 if selected.dim() == 2 else 1, out.shape[1])[:, :, None, None]
    if mode == "zero":
        return torch.where(selected, torch.zeros((), dtype=out.dtype, device=out.device), out)
    if mode == "mean":
        real = (padding[:, -q_len:] if padding is not None
                else torch.ones(out.shape[0], q_len, dtype=torch.bool, device=out.device))
        weights = (real.to(out.dtype) / real.sum(dim=-1, keepdim=True).clamp_min(1))[:, None, :, None]
        mean = (out * weights).sum(dim=2, keepdim=True).expand_as(out)  # (batch, heads, q_len, d)
        return torch.where(selected, mean, out)
    raise InterventionError(f"{what} mode must be 'zero' or 'mean', got {mode!r}")


def after_attention(edits: list[Intervention], out: torch.Tensor, padding: torch.Tensor | None) -> torch.Tensor:
    """Apply :class:`HeadAblation`, :class:`SequenceHeadAblation`, :class:`HeadGate` and :class:`HeadPatch` to the
    heads' outputs ``(batch, heads, q_len, d)``."""
    batch, num_heads = out.shape[0], out.shape[1]
    for item in edits:
        if isinstance(item, HeadAblation):
            selected = torch.zeros(num_heads, dtype=torch.bool, device=out.device)
            selected[_head_indices(item, num_heads)] = True
            out = _ablate(out, selected, item.mode, padding, "HeadAblation")
        elif isinstance(item, SequenceHeadAblation):
            if tuple(item.mask.shape) != (batch, num_heads) or item.mask.dtype != torch.bool:
                raise InterventionError(f"SequenceHeadAblation at layer {item.layer} has a {item.mask.dtype} mask of "
                                        f"shape {tuple(item.mask.shape)}, expected bool ({batch}, {num_heads})")
            out = _ablate(out, item.mask, item.mode, padding, "SequenceHeadAblation")
        elif isinstance(item, HeadGate):
            gate = item.gate
            if tuple(gate.shape) not in ((num_heads,), (batch, num_heads)):
                raise InterventionError(f"HeadGate at layer {item.layer} has shape {tuple(gate.shape)}, expected "
                                        f"({num_heads},) or ({batch}, {num_heads})")
            out = out * gate.to(dtype=out.dtype, device=out.device).reshape(-1, num_heads)[:, :, None, None]
        elif isinstance(item, HeadPatch):
            if (tuple(item.mask.shape) != tuple(out.shape[:3]) or item.mask.dtype != torch.bool
                    or tuple(item.source.shape[-3:]) != tuple(out.shape[1:])):
                raise InterventionError(f"HeadPatch at layer {item.layer}: mask {tuple(item.mask.shape)} "
                                        f"({item.mask.dtype}) and source {tuple(item.source.shape)} do not fit the "
                                        f"heads' output {tuple(out.shape)}")
            out = torch.where(item.mask.to(out.device)[..., None], item.source.to(out), out)
    return out

