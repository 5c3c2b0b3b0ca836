"""Batched per-head statistics, shared by the corpus census (:mod:`inspector.analyses.census`) and the Heads
report's corpus path (:mod:`inspector.analyses.heads`), so both give one computation's numbers.

- :func:`length_buckets` groups texts of about one length into batches under a token budget and a padding cap;
- :func:`padded_batch` right-pads token-id rows into one batch (every text keeps positions 0 … T − 1, so absolute
  and rotary positions are the single-text ones, and its own mask: padded keys get exactly zero weight);
- :func:`batch_statistics` reduces one batch's per-layer weights to :data:`STATISTICS` per text and head —
  entropy and normalised entropy (Clark et al. 2019), the first-token and largest sink scores (Xiao et al. 2023;
  Gu et al. 2024), Clark et al.'s token-category masses and the mean attention distance — over each text's own
  real queries and keys, one layer's n × n at a time; on request (``row_sink``) it also hands each layer's per-row
  values (:data:`ROW_VALUES`: the rows a census's exemplars rank, :mod:`inspector.analyses.census.exemplars`) to
  the caller before that layer's weights are dropped.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch

from inspector.core.loading import LoadedModel
from kernels.reference import mean_normalized_entropy, visible_keys_mask

# Per text and head, in this order; each a (layers, heads) float32 array. The mass_* columns follow
# inspector.analyses.metrics.TOKEN_CATEGORIES ([CLS], [SEP], punctuation, self, previous, next).
STATISTICS: tuple[str, ...] = (
    "entropy", "entropy_normalized", "first_token_sink", "max_sink_score",
    "mass_cls", "mass_sep", "mass_punctuation", "mass_self", "mass_previous", "mass_next", "mean_distance",
)
# The values each statistic can take: entropy (nats) and the distance (tokens) are at least 0, every other one is a
# share of attention or a normalised entropy in [0, 1]. An interval over texts is clipped to this range (a
# Student-t interval near a bound can reach past it: −0.01–0.01 for a head whose every text scores 0).
STATISTIC_RANGES: dict[str, tuple[float, float]] = {
    name: (0.0, np.inf) if name in ("entropy", "mean_distance") else (0.0, 1.0) for name in STATISTICS}
# How much padding a batch may carry, as a share of its real tokens. On the CPU a padded token costs as much as a
# real one and one more forward little (a 1000-text shard of the census corpus: 21 % padding in 6 batches at 0.25,
# 1.4 % in 26 at 0.05, about a fifth less forward time), so batches are cut tight there; on a GPU fewer, fuller
# batches pay for their padding.
CPU_MAX_PADDING = 0.05
GPU_MAX_PADDING = 0.25
# Per query row of each head, one (5, B, H, n) float64 tensor ``values`` in this order (the sink may overwrite it):
# the row's entropy (nats, the attention function's fused statistic),
# its weight on key 0, on key q − 1, on the keys j that follow an earlier copy of the query's token (token[j − 1] ==
# token[q], j − 1 < q: induction-like), and its mean distance Σ_j p_j |q − j|. Beside them: ``visible`` (B, n),
# how many of the text's real keys each row may see, ``copies`` (B, n), how many induction keys j each row has, and
# ``weights`` (B, H, n, n) float32, the layer's weights themselves, intact and valid only during the call (a sink
# reads the TOP_KEYS heaviest keys of the few rows it keeps from them, not of every row).
ROW_VALUES: tuple[str, ...] = ("entropy", "sink", "previous", "induction", "distance")
TOP_KEYS = 3
# What batch_statistics hands a row sink, layer by layer: (layer index, the values above).
RowSink = Callable[[int, dict[str, torch.Tensor]], None]


def length_buckets(lengths: Sequence[int], batch_tokens: int, max_padding: float = CPU_MAX_PADDING,
                   ) -> list[list[int]]:
    """Positions of ``lengths`` grouped into batches: sorted by length and packed while count × longest ≤
    ``batch_tokens`` and the padding stays under ``max_padding`` of the batch's real tokens (a text longer than
    the budget goes alone). Every position appears exactly once."""
    order = sorted(range(len(lengths)), key=lambda i: (lengths[i], i))
    buckets: list[list[int]] = []
    current: list[int] = []
    real = 0
    for position in order:
        length = lengths[position]
        padded = (len(current) + 1) * length
        if current and (padded > batch_tokens or padded > (1 + max_padding) * (real + length)):
            buckets.append(current)
            current, real = [], 0
        current.append(position)
        real += length
    if current:
        buckets.append(current)
    return buckets


def padded_batch(loaded: LoadedModel, rows: Sequence[torch.Tensor], width: int | None = None,
                 ) -> dict[str, torch.Tensor]:
    """Token-id rows (each (T,) on the model's device) as one right-padded batch: every text keeps positions 0 … T − 1
    and its own mask, padded keys get exactly zero weight and a real query never sees one, so each row's numbers are its
    single-text numbers up to float rounding. ``width``: the padded length (default the longest row; rows of one length
    then make an unpadded batch)."""
    width = width or max(int(row.shape[0]) for row in rows)
    device = rows[0].device
    pad_id = loaded.codec.special_token_id("pad") or 0
    input_ids = torch.full((len(rows), width), int(pad_id), dtype=torch.long, device=device)
    attention_mask = torch.zeros((len(rows), width), dtype=torch.long, device=device)
    for r, row in enumerate(rows):
        input_ids[r, :row.shape[0]] = row
        attention_mask[r, :row.shape[0]] = 1
    return {"input_ids": input_ids, "attention_mask": attention_mask}


def _layer_statistics(weights: torch.Tensor, real: torch.Tensor, counts: torch.Tensor, neighbours: torch.Tensor,
                      categories: torch.Tensor, seen_by: torch.Tensor, distance: torch.Tensor,
                      scratch: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
    """Reduce one layer's weights to per-text, per-head numbers — the batched twins of
    :func:`inspector.analyses.metrics.token_category_mass`, :func:`~inspector.analyses.metrics.sink_scores` and
    :func:`~inspector.analyses.metrics.mean_attention_distance`, each over the text's own T real queries and keys.

    weights: (B, H, n, n) float32, overwritten without a ``scratch``; real: (B, n) float32, 1 for a real token, 0 for
    padding; counts: (B, 1) float64 T per text (at least 1); neighbours: (B, 1) float64 T − 1; categories: (B, n,
    3) float64 key masks (zero past T); seen_by: (B, n) float64 — how many real queries may see each key (0 past
    T); distance: (n, n) float32 |i − j|.

    Two passes over the n × n weights: one matrix product sums each key's weight over the real queries (the
    category masses and sink scores need nothing else), and the distance-weighted row sums. Padded query rows
    (which do see the real keys in an encoder) are left out by those sums; a padded key has exactly 0 weight.
    Row-level sums run in float32 (at most n terms in [0, 1], or in [0, n] for the distance: a relative error of
    about 1e-7), everything after them in float64. token_category_mass also divides each row by its sum, a change
    below 1e-7 here, so it is left out."""
    rows = real[:, None, None, :]  # (B, 1, 1, n): which query rows count
    received = torch.matmul(rows, weights).squeeze(2).double()  # (B, H, n): Σ over real queries of each key
    by_key = torch.matmul(received, categories) / counts[:, :, None]  # (B, H, 3)
    real64 = real.double()
    # Diagonals are strided views (n values per head): self = row i, key i (0 on padded rows: their key is
    # padding); previous = row i + 1, key i (a padded row i + 1 may see a real key i, so it is masked); next = row
    # i, key i + 1 (0 wherever row i or key i + 1 is padding).
    self_mass = torch.diagonal(weights, dim1=2, dim2=3).double().sum(dim=-1) / counts
    previous = (torch.diagonal(weights, offset=-1, dim1=2, dim2=3).double() * real64[:, None, 1:]).sum(dim=-1)
    following = torch.diagonal(weights, offset=1, dim1=2, dim2=3).double().sum(dim=-1)
    has_neighbour = neighbours > 0
    previous_mass = torch.where(has_neighbour, previous / neighbours.clamp_min(1), 0.0)
    next_mass = torch.where(has_neighbour, following / neighbours.clamp_min(1), 0.0)
    # Sink scores: what each key receives from the real queries, over how many real queries may see it.
    scores = torch.where(seen_by[:, None, :] > 0, received / seen_by.clamp_min(1)[:, None, :], 0.0).clamp(0.0, 1.0)
    scores = torch.where(real64[:, None, :] > 0, scores, -1.0)  # padded keys never the largest
    row_distance = _row_distance(weights, distance, scratch)  # (B, H, n); the weights' last use
    mean_distance = (row_distance * real64[:, None, :]).sum(dim=-1) / counts
    return {"row_distance": row_distance, "key_scores": scores, "first_token_sink": scores[..., 0],
            "max_sink_score": scores.max(dim=-1).values,
            "mass_cls": by_key[..., 0], "mass_sep": by_key[..., 1], "mass_punctuation": by_key[..., 2],
            "mass_self": self_mass, "mass_previous": previous_mass,
            "mass_next": next_mass, "mean_distance": mean_distance}


# The most float32 elements the distance pass may hold beside weights it must keep (64 MiB): a batch's heads go
# through it in groups of at most this many n × n elements, at least one head at a time.
_SCRATCH_ELEMENTS = 2**24


def distance_scratch(weights: torch.Tensor) -> torch.Tensor:
    """A scratch for :func:`_row_distance` over weights of the shape of ``weights`` (B, H, n, n): (B, G, n, n) of
    their dtype and device, G ≤ H heads and at most :data:`_SCRATCH_ELEMENTS` elements (at least one head). Made
    once a batch and shared by its layers: a fresh one each layer cost a third of the pass (new pages to fault in)."""
    batch, heads, n, _ = weights.shape
    group = min(heads, max(1, _SCRATCH_ELEMENTS // (batch * n * n)))
    return torch.empty((batch, group, n, n), dtype=weights.dtype, device=weights.device)


def _row_distance(weights: torch.Tensor, distance: torch.Tensor, scratch: torch.Tensor | None) -> torch.Tensor:
    """Σ_j p_j |q − j| of every row, (B, H, n) float64, from weights (B, H, n, n) float32 and distance (n, n):
    in place without a ``scratch`` (no copy), else through it (:func:`distance_scratch`), the weights left intact.
    Both multiply the same elements and sum each row of n alike, so they give the same bits (checked on the census
    corpus's MiniLM batches)."""
    if scratch is None:
        return weights.mul_(distance).sum(dim=-1).double()
    parts = [torch.mul(part, distance, out=scratch[:, :part.shape[1]]).sum(dim=-1)
             for part in weights.split(scratch.shape[1], dim=1)]
    return (parts[0] if len(parts) == 1 else torch.cat(parts, dim=1)).double()


def induction_pairs(input_ids: torch.Tensor, lengths: torch.Tensor,
                    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(text, query, key) index triples (each (P,) int64) of every key j that follows an earlier copy of query q's
    token — token[j − 1] == token[q] with j − 1 < q, so j ≤ q — inside each text's own T tokens. input_ids: (B, n);
    lengths: (B,) T per text. Repeats are rare in prose, so P is small and the induction mass a gather."""
    n = input_ids.shape[1]
    position = torch.arange(n, device=input_ids.device)
    same = input_ids[:, :, None] == input_ids[:, None, :]  # (B, n, n) [b, q, i]: token[i] == token[q]
    earlier = position[None, :] < position[:, None]  # (n, n) [q, i]: i < q
    inside = position[None, :] < lengths[:, None]  # (B, n) real tokens
    text, query, earlier_copy = (same & earlier & inside[:, :, None] & inside[:, None, :]).nonzero(as_tuple=True)
    return text, query, earlier_copy + 1


def _row_values(weights: torch.Tensor, entropy: torch.Tensor,
                pairs: tuple[torch.Tensor, torch.Tensor, torch.Tensor]) -> torch.Tensor:
    """:data:`ROW_VALUES` as one (len(ROW_VALUES), B, H, n) float64 tensor, in that order, the distance left unset
    (the distance pass gives it), read from one layer's weights (B, H, n, n): a column, a diagonal and a gather of
    the induction pairs, each written into its slice (no copy per value, no n × n copy). entropy: (B, H, n), the
    fused statistic."""
    batch, heads, n, _ = weights.shape
    values = torch.empty(len(ROW_VALUES), batch, heads, n, dtype=torch.float64, device=weights.device)
    values[0] = entropy
    values[1] = weights[..., 0]
    values[2, ..., 0] = 0.0  # row 0 has no previous key
    values[2, ..., 1:] = torch.diagonal(weights, offset=-1, dim1=2, dim2=3)  # row q, key q − 1
    induction = values[3].zero_().permute(0, 2, 1)  # (B, n, H) view
    text, query, key = pairs
    induction.index_put_((text, query), weights[text, :, query, key].double(), accumulate=True)  # (P, H) added
    return values


def _entropy_statistics(records: list, real: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(B, L, H) mean row entropy over each text's real queries, and the mean of entropy / log(visible keys) over
    the real queries that see at least two keys (NaN where none do) — :func:`kernels.reference.mean_normalized_entropy`,
    as :func:`inspector.analyses.metrics.head_entropy_from_rows` takes it, for every text of the batch at once."""
    entropy = torch.stack([r.stats["entropy"] for r in records], dim=1).double()  # (B, L, H, n)
    visible = torch.stack([r.visible_keys for r in records], dim=1).double()  # (B, L, n)
    real64 = real.double()[:, None, None, :]  # (B, 1, 1, n)
    raw = (entropy * real64).sum(dim=-1) / real64.sum(dim=-1).clamp_min(1)
    return raw, mean_normalized_entropy(entropy, visible[:, :, None, :], rows=real64 > 0)


def batch_statistics(records: Sequence, weights_of: Callable[[object], torch.Tensor], lengths: Sequence[int],
                     category_masks: np.ndarray, *, input_ids: torch.Tensor | None = None,
                     row_sink: RowSink | None = None) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
    """The census's reductions for one right-padded batch of B texts (each text's own T real queries and keys):
    :data:`STATISTICS` as (B, L, H) float64 tensors, and every key's sink score (B, L, H, n) — padded keys −1.

    records: the forward's L :class:`kernels.hf.LayerRecord` s (with the ``entropy`` statistic); ``weights_of``
    gives a record's exact weights (B, H, n, n) float32, which the reduction overwrites unless there is a
    ``row_sink`` (materialise them, or pass a copy); ``category_masks``: (B, n, 3) [CLS]/[SEP]/punctuation key
    masks (zero past T). The Heads report's corpus statistics come from here too (:mod:`inspector.analyses.heads`),
    so both give the same numbers by one code.

    ``row_sink`` (with the batch's ``input_ids`` (B, n), for the induction pairs) is called once per layer, in
    order, with that layer's :data:`ROW_VALUES` per query row and its intact weights: what the census's exemplars
    rank, taken from the same materialised weights, so they cost no second materialisation."""
    n = category_masks.shape[1]
    with torch.inference_mode():  # the forward's weights are inference tensors, reduced in place
        device = records[0].stats["entropy"].device
        lengths_tensor = torch.tensor(list(lengths), device=device)
        real = (torch.arange(n, device=device)[None, :] < lengths_tensor[:, None]).float()  # (B, n): real = T first
        counts = lengths_tensor.double().clamp_min(1)[:, None]
        neighbours = (lengths_tensor.double() - 1)[:, None]  # rows with a neighbour inside the text
        categories = torch.from_numpy(np.ascontiguousarray(category_masks, dtype=np.float64)).to(device)
        position = torch.arange(n, device=device)
        distance = (position[:, None] - position[None, :]).abs().float()  # (n, n) |i − j|
        seen_by_pattern: dict[tuple[bool, int | None], tuple[torch.Tensor, torch.Tensor]] = {}
        pairs = induction_pairs(input_ids.to(device), lengths_tensor) if row_sink is not None else None
        if pairs is not None:  # how many induction keys each row has: the same on every layer, so counted once
            copies = torch.zeros(len(lengths), n, dtype=torch.int64, device=device)  # (B, n)
            copies.index_put_(pairs[:2], torch.ones_like(pairs[0]), accumulate=True)
        per_layer: list[dict[str, torch.Tensor]] = []
        scratch = None  # the distance pass's, once the sink needs the weights intact
        for layer, record in enumerate(records):
            pattern = (record.causal, record.window)
            if pattern not in seen_by_pattern:
                visible = visible_keys_mask(n, n, causal=record.causal, window=record.window, device=device)[0, 0]
                seen_by = torch.matmul(real.double(), visible.double()) * real.double()  # (B, n) per key
                sees = torch.matmul(real.double(), visible.double().T)  # (B, n) real keys each row may see
                seen_by_pattern[pattern] = seen_by, sees
            seen_by, sees = seen_by_pattern[pattern]
            weights = weights_of(record)
            rows = _row_values(weights, record.stats["entropy"], pairs) if pairs is not None else None
            if rows is not None and scratch is None:
                scratch = distance_scratch(weights)
            statistics = _layer_statistics(weights, real, counts, neighbours, categories, seen_by, distance, scratch)
            row_distance = statistics.pop("row_distance")
            if rows is not None:
                rows[ROW_VALUES.index("distance")] = row_distance
                row_sink(layer, {"values": rows, "copies": copies, "visible": sees, "weights": weights})
            per_layer.append(statistics)
            del weights, rows  # one layer's n × n at a time
        entropy, normalized = _entropy_statistics(records, real)
        key_scores = torch.stack([layer.pop("key_scores") for layer in per_layer], dim=1)  # (B, L, H, n)
        reduced = {name: torch.stack([layer[name] for layer in per_layer], dim=1) for name in per_layer[0]}
        reduced.update(entropy=entropy, entropy_normalized=normalized)
        return reduced, key_scores
