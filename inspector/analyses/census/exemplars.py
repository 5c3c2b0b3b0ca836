"""A census's exemplars (issue 41, after HeadVis, Anthropic 2026): per head and statistic, the contexts that drive
it — the top-K query rows over the corpus and one sampled text per decile — chosen by exact rules, so the local and
Ray engines and a brute force over every text's weights choose the same rows.

**The statistics** (:data:`EXEMPLAR_STATISTICS`), per query row q of a head, from the row's weights p_j:

- ``low_entropy`` — the row's entropy −Σ p_j log p_j in nats (the attention function's fused statistic); the
  *lowest* ranks first;
- ``sink_mass`` — p_0, the weight on the first key;
- ``previous_token`` — p_{q−1};
- ``induction`` — Σ p_j over the keys j whose previous token is the query's token (token[j − 1] == token[q],
  j − 1 < q): the mass on what followed an earlier copy of the current token;
- ``distance`` — Σ_j p_j |q − j|, the row's mean attention distance in tokens.

Every statistic but ``low_entropy`` ranks its *highest* first.

**Which rows count.** A text's real query rows that may see at least two of its real keys (a row with one visible
key has no choice: query 0 of a decoder would top every sink and entropy list); for ``previous_token`` also q ≥ 1,
for ``induction`` only rows with at least one such key j. A head with no such row in a text has no candidate there.

**Values and ties.** Values are rounded to :data:`VALUE_DECIMALS` decimals before they are ranked and stored: two
batchings of one text differ by float rounding (about 1e-7), which would otherwise reorder exact ties such as a
weight of 1.0 against 0.99999994. Ties then break by text index, then query position, both ascending.

**Keys.** An exemplar's ``keys`` are the row's :data:`~inspector.analyses.batching.TOP_KEYS` heaviest real keys
with weight above 0, highest weight first (ties: lower position first); ``key_weights`` their weights.

**Per batch** (:class:`RowCandidates`, the row sink of :func:`inspector.analyses.batching.batch_statistics`, run
while each layer's weights exist; vectorised, the rows of one layer at a time): each text's best row per statistic
and head — its **extreme**, kept in the text's shard row for the deciles — and, per shard among the batch's texts,
the batch's top K rows, handed on with the texts they belong to (:class:`TextExemplars`). A shard's top K is the
top K of its batches' top K (:func:`top_rows`: the top K of a set holds every member of the whole's top K that lies
in it), written beside the shard; what travels and what is kept is bounded by K per batch and shard, not by the
texts. Both are written with the shard, so a resumed run keeps them and an engine's batching changes none.

**Deciles.** Per statistic and head, the texts with a candidate are ordered by their extreme (best first; ties by
text index) and cut into ten equal-count deciles: text of rank r of N is in decile ⌊10 r / N⌋ (decile 0 the best
tenth; with fewer than ten texts some deciles are empty and left out). One text per decile is drawn uniformly by
``numpy.random.default_rng([seed, statistic number, layer, head])`` (:func:`decile_rows`), and its best row is the
decile's exemplar: a seed gives the same samples on any engine and any resume.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from inspector.analyses.batching import TOP_KEYS

EXEMPLAR_STATISTICS: tuple[str, ...] = ("low_entropy", "sink_mass", "previous_token", "induction", "distance")
# Which per-row value of inspector.analyses.batching.ROW_VALUES each statistic ranks, and whether its lowest is best.
_ROW_VALUE = {"low_entropy": "entropy", "sink_mass": "sink", "previous_token": "previous", "induction": "induction",
              "distance": "distance"}
LOWEST_FIRST = frozenset({"low_entropy"})
MAX_EXEMPLARS = 100
DECILES = 10
VALUE_DECIMALS = 6


def check_exemplars(k: int) -> None:
    from inspector.base.errors import InvalidRequestError

    if not (isinstance(k, int) and 0 <= k <= MAX_EXEMPLARS):
        raise InvalidRequestError(f"--exemplars must be a whole number from 1 to {MAX_EXEMPLARS} (0 = none), got {k}")


@dataclass(frozen=True)
class ExemplarRows:
    """Exemplar rows, flat: N rows of statistic (number in :data:`EXEMPLAR_STATISTICS`), layer, head, rank (int64),
    text_index (int64), query (int64), value (float64), keys (N, TOP_KEYS) int32 (−1 = none), key_weights (N,
    TOP_KEYS) float32. ``kind``: "top" or "decile" for every row."""

    kind: str
    statistic: np.ndarray
    layer: np.ndarray
    head: np.ndarray
    rank: np.ndarray
    text_index: np.ndarray
    query: np.ndarray
    value: np.ndarray
    keys: np.ndarray
    key_weights: np.ndarray

    @classmethod
    def concatenate(cls, kind: str, parts: Sequence[ExemplarRows]) -> ExemplarRows:
        names = ("statistic", "layer", "head", "rank", "text_index", "query", "value", "keys", "key_weights")
        empty = _empty_rows(kind)
        return cls(kind=kind, **{name: np.concatenate([getattr(p, name) for p in (empty, *parts)]) for name in names})

    def select(self, which: np.ndarray | slice) -> ExemplarRows:
        """The rows ``which`` picks: an (N,) bool mask, row numbers or a slice."""
        names = ("statistic", "layer", "head", "rank", "text_index", "query", "value", "keys", "key_weights")
        return ExemplarRows(kind=self.kind, **{name: getattr(self, name)[which] for name in names})


def _empty_rows(kind: str) -> ExemplarRows:
    whole = np.zeros(0, np.int64)
    return ExemplarRows(kind=kind, statistic=whole, layer=whole, head=whole, rank=whole, text_index=whole, query=whole,
                        value=np.zeros(0), keys=np.zeros((0, TOP_KEYS), np.int32),
                        key_weights=np.zeros((0, TOP_KEYS), np.float32))


@dataclass(frozen=True)
class TextExemplars:
    """One text's share of the exemplars. S = len(:data:`EXEMPLAR_STATISTICS`), L = layers, H = heads.

    The text's extreme (its best row) per statistic and head: query (S, L, H) int32, −1 where the head has no
    candidate in the text; value (S, L, H) float64 (rounded), NaN there; keys (S, L, H, TOP_KEYS) int32, −1 past
    the row's keys of weight above 0; key_weights (S, L, H, TOP_KEYS) float32, 0 there. top: the text's rows among
    the top K of its batch and shard (a superset of its rows in the shard's top K). tokens: its token strings."""

    query: np.ndarray
    value: np.ndarray
    keys: np.ndarray
    key_weights: np.ndarray
    top: ExemplarRows
    tokens: tuple[str, ...]

    def __post_init__(self) -> None:
        if self.query.shape != self.value.shape or self.keys.shape != (*self.query.shape, TOP_KEYS) \
                or self.key_weights.shape != self.keys.shape or self.query.shape[0] != len(EXEMPLAR_STATISTICS):
            raise ValueError(f"TextExemplars shapes disagree: {self.query.shape}, {self.value.shape}, "
                             f"{self.keys.shape}, {self.key_weights.shape}")


class RowCandidates:
    """The row sink (:data:`inspector.analyses.batching.RowSink`) of one padded batch: layer by layer, each text's
    best row and, per shard among the batch's texts, the batch's top K rows per statistic and head — so what a
    batch hands on is bounded by K, not by its texts. :meth:`text` gives a text's :class:`TextExemplars`.

    lengths, indices, shards: each text's T, input index and shard; k: K."""

    def __init__(self, lengths: Sequence[int], indices: Sequence[int], shards: Sequence[int], k: int) -> None:
        self.lengths, self.indices, self.shards, self.k = list(lengths), list(indices), list(shards), k
        self.best: list[tuple[np.ndarray, ...]] = []  # per layer: query, value, keys, weights (S, B, H, …)
        self.top: list[ExemplarRows] = []
        self._joined: ExemplarRows | None = None

    def __call__(self, layer: int, rows: dict[str, torch.Tensor]) -> None:
        if layer != len(self.best):
            raise ValueError(f"row values of layer {layer} came after {len(self.best)} layers")
        batch, heads, n = rows["sink"].shape
        device = rows["sink"].device
        position = torch.arange(n, device=device)
        lengths = torch.tensor(self.lengths, device=device)
        counted = (position[None, :] < lengths[:, None]) & (rows["visible"] >= 2)  # (B, n) rows with a choice
        eligible = {"previous_token": counted & (position[None, :] >= 1), "induction": counted & (rows["copies"] > 0)}
        # Values in whole units of 10^−VALUE_DECIMALS, and one int64 key a row that orders rows exactly as the rule
        # does: score first, then (lower first) input index and query — so a max and a top-k need no sort.
        allowed = torch.stack([eligible.get(s, counted) for s in EXEMPLAR_STATISTICS])[:, :, None, :]  # (S, B, 1, n)
        units = torch.stack([torch.round(rows[_ROW_VALUE[s]].nan_to_num() * 10**VALUE_DECIMALS).long()
                             for s in EXEMPLAR_STATISTICS])
        units = torch.where(allowed, units, 0)  # (S, B, H, n); rows that do not count hold 0
        sign = torch.tensor([-1 if s in LOWEST_FIRST else 1 for s in EXEMPLAR_STATISTICS], device=device)
        rank = torch.from_numpy(np.argsort(np.argsort(self.indices, kind="stable"))).to(device)  # by input index
        spread = 1 << (batch * n).bit_length()
        order = spread - 1 - (rank[:, None] * n + position[None, :])  # (B, n): larger for earlier rows
        score = units * sign[:, None, None, None]
        if int(score.abs().max()) >= 2**62 // spread:
            raise ValueError(f"exemplar values too large to rank in one key (batch of {batch} × {n} tokens)")
        key = torch.where(allowed, score * spread + order[None, :, None, :], _MISSING)  # (S, B, H, n)
        keys, weights = _heaviest(rows["top_keys"], rows["top_weights"])  # (B, H, n, TOP_KEYS)
        best, query = key.max(dim=-1)  # (S, B, H): each text's best row
        found = best != _MISSING
        text = torch.arange(batch, device=device)[None, :, None].expand_as(query)
        head = torch.arange(heads, device=device)[None, None, :].expand_as(query)
        self.best.append(_rows_to_host(units, keys, weights, found, text, head, query))
        flat = key.permute(0, 2, 1, 3).reshape(len(EXEMPLAR_STATISTICS), heads, batch * n)
        shards = np.repeat(np.asarray(self.shards), n)
        for shard in np.unique(shards):  # the batch's top K per shard
            mine = torch.from_numpy(shards == shard).to(device)
            ranked, chosen = torch.where(mine, flat, _MISSING).topk(min(self.k, batch * n), dim=-1)  # (S, H, k)
            kept = ranked != _MISSING
            text, row_query = chosen // n, chosen % n
            head = torch.arange(heads, device=device)[None, :, None].expand_as(chosen)
            query, value, row_keys, row_weights = _rows_to_host(units, keys, weights, kept, text, head, row_query)
            where = kept.cpu().numpy()
            statistic = np.broadcast_to(np.arange(len(EXEMPLAR_STATISTICS))[:, None, None], where.shape)
            self.top.append(ExemplarRows(
                kind="top", statistic=statistic[where], layer=np.full(int(where.sum()), layer),
                head=head.cpu().numpy()[where], rank=np.zeros(int(where.sum()), np.int64),
                text_index=np.asarray(self.indices, np.int64)[text.cpu().numpy()[where]],
                query=query[where].astype(np.int64), value=value[where], keys=row_keys[where],
                key_weights=row_weights[where]))

    def text(self, b: int, tokens: Sequence[str]) -> TextExemplars:
        """Text ``b``'s :class:`TextExemplars` over every layer (call after the batch's last layer)."""
        query, value, keys, weights = (np.stack([layer[part][:, b] for layer in self.best], axis=1) for part in
                                       range(4))  # (S, L, H, …)
        if self._joined is None:  # every layer's top rows, by text: one slice a text
            joined = ExemplarRows.concatenate("top", self.top)
            self._joined = joined.select(np.argsort(joined.text_index, kind="stable"))
        start, stop = np.searchsorted(self._joined.text_index, [self.indices[b], self.indices[b] + 1])
        return TextExemplars(query=query, value=value, keys=keys, key_weights=weights,
                             top=self._joined.select(slice(start, stop)), tokens=tuple(tokens))


_MISSING = torch.iinfo(torch.int64).min  # the key of a row that does not count


def _heaviest(keys: torch.Tensor, weights: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Each row's top-k keys and weights (…, ≤ TOP_KEYS) as the exemplars give them: weight descending, ties by
    position, keys of weight 0 dropped (−1, weight 0), padded to TOP_KEYS; weights clipped to 1 (exp(S − LSE) may
    round a hair above it)."""
    weights = weights.float().clamp(0.0, 1.0)
    # One int64 a key, unique in its row: a non-negative float32's bits order as the float does; the position
    # breaks ties (lower first).
    order = (weights.view(torch.int32).long() << 24) + ((1 << 24) - 1 - keys)
    by_order = order.argsort(dim=-1, descending=True)
    keys, weights = keys.gather(-1, by_order), weights.gather(-1, by_order)
    missing = TOP_KEYS - keys.shape[-1]  # a batch narrower than TOP_KEYS tokens
    if missing:
        keys = torch.cat([keys, keys.new_zeros((*keys.shape[:-1], missing))], dim=-1)
        weights = torch.cat([weights, weights.new_zeros((*weights.shape[:-1], missing))], dim=-1)
    return torch.where(weights > 0, keys, -1), torch.where(weights > 0, weights, 0.0)


def _rows_to_host(units: torch.Tensor, keys: torch.Tensor, weights: torch.Tensor, found: torch.Tensor,
                  text: torch.Tensor, head: torch.Tensor, query: torch.Tensor) -> tuple[np.ndarray, ...]:
    """The rows (text, head, query) — index tensors of one shape (S, X…), the first axis the statistic — on the
    host: query int32, value float64 (units / 10^VALUE_DECIMALS), keys (…, TOP_KEYS) int32 and weights float32;
    −1, NaN, −1, 0 where not ``found``."""
    statistic = torch.arange(units.shape[0], device=units.device).view(-1, *([1] * (query.dim() - 1)))
    value = units[statistic, text, head, query].double() / 10**VALUE_DECIMALS
    row_keys, row_weights = keys[text, head, query], weights[text, head, query]
    return (torch.where(found, query, -1).cpu().numpy().astype(np.int32),
            torch.where(found, value, torch.nan).cpu().numpy(),
            torch.where(found[..., None], row_keys, -1).cpu().numpy().astype(np.int32),
            torch.where(found[..., None], row_weights, 0.0).cpu().numpy().astype(np.float32))


# ------------------------------------------------------------------------------------- top rows and deciles

def _scores(statistic: np.ndarray, value: np.ndarray) -> np.ndarray:
    lowest = np.isin(statistic, [EXEMPLAR_STATISTICS.index(s) for s in LOWEST_FIRST])
    return np.where(lowest, -value, value)


def top_rows(rows: ExemplarRows, k: int) -> ExemplarRows:
    """The best ``k`` of ``rows`` per statistic and head — best first, ties by text index then query — ranked 0…k−1.
    Merging is associative: the top k of shards' top k is the top k of their texts."""
    order = np.lexsort((rows.query, rows.text_index, -_scores(rows.statistic, rows.value), rows.head, rows.layer,
                        rows.statistic))
    group = np.stack([rows.statistic[order], rows.layer[order], rows.head[order]], axis=1)
    starts = np.ones(len(order), dtype=bool)
    starts[1:] = (group[1:] != group[:-1]).any(axis=1)
    first = np.maximum.accumulate(np.where(starts, np.arange(len(order)), 0))
    rank = np.arange(len(order)) - first
    keep = order[rank < k]
    return ExemplarRows(kind="top", statistic=rows.statistic[keep], layer=rows.layer[keep], head=rows.head[keep],
                        rank=rank[rank < k], text_index=rows.text_index[keep], query=rows.query[keep],
                        value=rows.value[keep], keys=rows.keys[keep], key_weights=rows.key_weights[keep])


@dataclass(frozen=True)
class TextExtremes:
    """Every measured text's best row per statistic and head, in input order. N texts: text_index (N,) int64;
    query (N, S, L, H) int32 (−1: no candidate); value (N, S, L, H) float64 (NaN there); keys, key_weights (N, S,
    L, H, TOP_KEYS)."""

    text_index: np.ndarray
    query: np.ndarray
    value: np.ndarray
    keys: np.ndarray
    key_weights: np.ndarray


def decile_rows(extremes: TextExtremes, seed: int) -> ExemplarRows:
    """One sampled text per decile of each statistic and head, its best row the exemplar (the module docstring
    gives the rule); rank = the decile, 0 the best tenth."""
    texts, statistics, layers, heads = extremes.value.shape
    value = extremes.value.reshape(texts, -1)  # (N, S·L·H), texts in input order
    sign = np.repeat([-1.0 if s in LOWEST_FIRST else 1.0 for s in EXEMPLAR_STATISTICS], layers * heads)
    # Best first; a stable sort keeps equal scores in input order (ties by text index); texts without a candidate
    # (NaN) go last.
    ranked = np.argsort(np.where(np.isfinite(value), -sign * value, np.inf), axis=0, kind="stable")
    present = np.isfinite(value).sum(axis=0)
    parts = []
    for column in np.flatnonzero(present):
        s, layer, head = np.unravel_index(column, (statistics, layers, heads))
        decile = np.arange(present[column]) * DECILES // present[column]  # non-decreasing
        filled = np.unique(decile)
        starts = np.searchsorted(decile, filled)
        drawn = np.random.default_rng([seed, s, layer, head]).integers(0, np.bincount(decile)[filled])
        chosen = ranked[starts + drawn, column]
        parts.append(ExemplarRows(
            kind="decile", statistic=np.full(len(chosen), s), layer=np.full(len(chosen), layer),
            head=np.full(len(chosen), head), rank=filled.astype(np.int64), text_index=extremes.text_index[chosen],
            query=extremes.query[chosen, s, layer, head].astype(np.int64),
            value=extremes.value[chosen, s, layer, head], keys=extremes.keys[chosen, s, layer, head],
            key_weights=extremes.key_weights[chosen, s, layer, head]))
    return ExemplarRows.concatenate("decile", parts)


# --------------------------------------------------------------------------------------- the shard's columns

def shard_extremes(exemplars: Sequence[TextExemplars], shape: tuple[int, int]) -> TextExtremes:
    """The texts' extremes stacked (text_index left empty: the shard row holds it). shape: (layers, heads)."""
    full = (len(EXEMPLAR_STATISTICS), *shape)
    if not exemplars:
        return TextExtremes(text_index=np.zeros(0, np.int64), query=np.zeros((0, *full), np.int32),
                            value=np.zeros((0, *full)), keys=np.zeros((0, *full, TOP_KEYS), np.int32),
                            key_weights=np.zeros((0, *full, TOP_KEYS), np.float32))
    query, value, keys, weights = (np.stack([getattr(e, name) for e in exemplars]) for name in
                                   ("query", "value", "keys", "key_weights"))
    return TextExtremes(text_index=np.zeros(0, np.int64), query=query, value=value, keys=keys, key_weights=weights)
