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
the batch's top K rows that pass the shard's running cut-off (:class:`TopCutoffs`: a row below the K-th best
score its shard has had so far cannot enter), handed on with the texts they belong to (:class:`TextExemplars`). A
shard's top K is the top K of its batches' top K (:func:`top_rows`: the top K of a set holds every member of the
whole's top K that lies in it), written beside the shard; what travels and what is kept is bounded by K per batch
and shard, not by the texts. Both are written with the shard, so a resumed run keeps them and an engine's batching
changes none.

**Deciles.** Per statistic and head, the texts with a candidate are ordered by their extreme (best first; ties by
text index) and cut into ten equal-count deciles: text of rank r of N is in decile ⌊10 r / N⌋ (decile 0 the best
tenth; with fewer than ten texts some deciles are empty and left out). One text per decile is drawn uniformly by
``numpy.random.default_rng([seed, statistic number, layer, head])`` (:func:`decile_rows`), and its best row is the
decile's exemplar: a seed gives the same samples on any engine and any resume.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import torch

from inspector.analyses.batching import ROW_VALUES, TOP_KEYS
from inspector.analyses.census.row_keys import (
    MISSING,
    distinct_rows,
    heaviest_keys,
    heaviest_order,
    take_rows,
    top_rows_of_cells,
)
from inspector.analyses.census.seeded_draws import seeded_integers

EXEMPLAR_STATISTICS: tuple[str, ...] = ("low_entropy", "sink_mass", "previous_token", "induction", "distance")
# Which per-row value of inspector.analyses.batching.ROW_VALUES each statistic ranks (the row sink's values come in
# that order, so statistic s ranks values[s]), and whether its lowest is best.
_ROW_VALUE = {"low_entropy": "entropy", "sink_mass": "sink", "previous_token": "previous", "induction": "induction",
              "distance": "distance"}
if tuple(_ROW_VALUE[s] for s in EXEMPLAR_STATISTICS) != ROW_VALUES:
    raise ImportError("EXEMPLAR_STATISTICS must rank batching.ROW_VALUES in their order")
LOWEST_FIRST = frozenset({"low_entropy"})
MAX_EXEMPLARS = 100
DECILES = 10
VALUE_DECIMALS = 6


def check_exemplars(k: int) -> None:
    from inspector.base.errors import InvalidRequestError

    if not (isinstance(k, int) and 0 <= k <= MAX_EXEMPLARS):
        raise InvalidRequestError(f"--exemplars must be a whole number from 1 to {MAX_EXEMPLARS} (0 = none), got {k}")


_ROW_FIELDS = ("statistic", "layer", "head", "rank", "text_index", "query", "value", "keys", "key_weights")


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
        empty = _empty_rows(kind)
        return cls(kind=kind, **{name: np.concatenate([getattr(p, name) for p in (empty, *parts)])
                                 for name in _ROW_FIELDS})

    def select(self, which: np.ndarray | slice) -> ExemplarRows:
        """The rows ``which`` picks: an (N,) bool mask, row numbers or a slice."""
        return ExemplarRows(kind=self.kind, **{name: getattr(self, name)[which] for name in _ROW_FIELDS})


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
    the top K of its batch and shard that no K rows of its measuring call outrank (a superset of its rows in the
    shard's top K). tokens: its token strings."""

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


class _BatchConstants(NamedTuple):
    """What every layer of one batch ranks its rows with. B texts, H heads, n tokens, G shards among the texts."""

    real: torch.Tensor  # (B, n) bool: a real query row of its text
    eligible: dict[str, torch.Tensor]  # statistic → (B, n) bool: what else a row needs to count for it
    order: torch.Tensor  # (B, n) int64 in [0, spread): larger for earlier rows (input index, then query)
    spread: int  # a power of two above every order
    scale: torch.Tensor  # (S, 1, 1, 1) float64: 10^VALUE_DECIMALS, negated where the lowest value is best
    best_rows: torch.Tensor  # (H, B) int64: (b · H + h) · n, a text's head's first row in the (B·H·n, n) rows
    shards: list[int]  # the shards among the texts, ascending
    shard_of_row: torch.Tensor | None  # (1, B · n) int64: row b · n + q's shard (its place in shards); None: G = 1
    thresholds: torch.Tensor | None  # (L, S, H, G) int64: the least key a row needs to pass the cut-off, or None
    k: int  # the top rows a batch keeps per shard, statistic and head: min(K, B · n)


class TopCutoffs:
    """The running cut-off of one measuring call's batches (:func:`inspector.analyses.census.measure.measure_rows`):
    per shard, the K best scores so far of each layer, statistic and head among the top rows its batches handed on.
    A later batch's row scoring below the K-th of them cannot be in its shard's top K — K rows above it are in the
    shard already — so it is neither handed on nor are its keys read; a row that ties it is kept (ties break by
    text index, which no batch's key orders across batches). What a batch hands on stays a superset of its rows in
    the shard's top K, so the shard's top K, and every file, is the one without the cut-off; only the first
    batches of a shard hand on K rows per statistic and head."""

    def __init__(self, k: int) -> None:
        self.k = k
        self._best: dict[int, np.ndarray] = {}  # shard → (L, S, H, K) int64 scores, the least first; _LEAST: none

    def thresholds(self, shards: Sequence[int]) -> np.ndarray | None:
        """(L, G, S, H) int64: the K-th best score so far of each of ``shards`` (_LEAST while it has fewer than K
        rows), or None before any of them has one."""
        known = [self._best[shard] for shard in shards if shard in self._best]
        if not known:
            return None
        if len(shards) == 1:
            return known[0][:, None, ..., 0]
        least = np.full(known[0].shape[:-1], _LEAST, np.int64)
        return np.stack([self._best[shard][..., 0] if shard in self._best else least for shard in shards], axis=1)

    def add(self, shard: int, cell: np.ndarray, scores: np.ndarray, shape: tuple[int, int, int]) -> None:
        """The scores (int64) of the rows a batch handed on for ``shard``, each of cell (layer · S + statistic) · H +
        head of ``shape`` (L, S, H)."""
        if len(cell) > 1 and (cell[1:] < cell[:-1]).any():  # a batch of one shard hands them on by cell already
            order = np.argsort(cell, kind="stable")
            cell, scores = cell[order], scores[order]
        slot = np.arange(len(cell)) - np.searchsorted(cell, cell)  # the row's place among its cell's
        width = max(self.k, int(slot.max(initial=-1)) + 1)
        merged = np.full((int(np.prod(shape)), width), _LEAST, np.int64)
        merged[cell, slot] = scores
        previous = self._best.get(shard)
        if previous is not None:
            merged = np.concatenate([previous.reshape(len(merged), -1), merged], axis=-1)
        self._best[shard] = np.partition(merged, -self.k, axis=-1)[..., -self.k:].reshape(*shape, self.k)

    def trim(self, shards: Sequence[int], tops: Sequence[ExemplarRows]) -> list[ExemplarRows]:
        """Each text's ``tops`` — its top rows that this call's batches handed on, the text in shard ``shards`` —
        less those scoring below their shard's K-th best so far (K rows above them are in the shard: an early batch
        hands on K rows a head that later ones outrank). Once every batch is in, what is left is still a superset
        of the rows in the shard's top K, and the shard's top K is found among far fewer rows. All texts in one
        pass: a text's rows are a slice of the kept rows (a text's own pass cost a few operations a text)."""
        rows = ExemplarRows.concatenate("top", tops)
        counts = np.fromiter((len(top.rank) for top in tops), np.int64, len(tops))
        shard = np.repeat(np.asarray(shards, np.int64), counts)
        # A value is its score / 10^VALUE_DECIMALS in float64: the product rounds back to the score exactly.
        score = np.rint(_scores(rows.statistic, rows.value) * 10**VALUE_DECIMALS).astype(np.int64)
        least = np.full(len(score), _LEAST, np.int64)
        for number in np.unique(shard).tolist():
            if number in self._best:
                mine = shard == number
                least[mine] = self._best[number][rows.layer[mine], rows.statistic[mine], rows.head[mine], 0]
        kept = score >= least
        if kept.all():
            return list(tops)
        rows = rows.select(kept)
        kept_before = np.concatenate([[0], np.cumsum(kept)])  # kept rows before each row
        bounds = kept_before[np.concatenate([[0], np.cumsum(counts)])].tolist()  # each text's kept rows
        return [ExemplarRows(kind="top", **{name: getattr(rows, name)[start:stop] for name in _ROW_FIELDS})
                for start, stop in zip(bounds, bounds[1:])]


class RowCandidates:
    """The row sink (:data:`inspector.analyses.batching.RowSink`) of one padded batch: layer by layer, each text's
    best row and, per shard among the batch's texts, the batch's top K rows per statistic and head that pass the
    shard's running cut-off (``cutoffs``, shared by the batches of one call: :class:`TopCutoffs`) — so what a batch
    hands on is bounded by K, not by its texts. :meth:`text` gives a text's :class:`TextExemplars`.

    The layers' row values and weights are held until they reach :data:`_HELD_ELEMENTS` weights (a small batch's
    every layer; a large batch's one layer at a time), then ranked together with one int64 key a row, in a few
    whole-group operations (what does not change from layer to layer is made once; on the CPU's small batches each
    operation's fixed cost, not the rows, is the time), and only the chosen rows' weights are copied out; their
    heaviest keys are read a few groups' rows at a time (:data:`_KEY_ELEMENTS`), all of it on the device; the first
    :meth:`text` call ranks what is still held, takes every choice to the host at once, decodes it and moves the
    cut-off on.

    lengths, indices, shards: each text's T, input index and shard; k: K."""

    def __init__(self, lengths: Sequence[int], indices: Sequence[int], shards: Sequence[int], k: int,
                 cutoffs: TopCutoffs | None = None) -> None:
        self.lengths, self.indices, self.shards, self.k = list(lengths), list(indices), list(shards), k
        self.cutoffs = cutoffs if cutoffs is not None else TopCutoffs(k)
        self._layers = 0  # the layers handed in so far
        self._held: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = []  # values, allowed, weights a layer
        # Per ranked group of layers: best, query (leading dimension: its layers), largest, and where the best rows'
        # (G_L, S, H, B) choices are among the copied rows; and its kept top rows, flat (C,) each: layer, statistic,
        # head, text (b), query, key and where among the copied rows.
        self._groups: list[tuple[torch.Tensor, ...]] = []
        self._tops: list[tuple[torch.Tensor, ...]] = []
        self._rows: list[torch.Tensor] = []  # weights (·, n) of copied rows whose keys are not read yet
        self._heaviest: list[torch.Tensor] = []  # the copied rows' heaviest keys (row_keys.heaviest_order), in order
        self._copied = 0
        self._allowed: tuple[torch.Tensor, torch.Tensor] | None = None  # a layer's visible counts, its (S, B, 1, n)
        self._constants: _BatchConstants | None = None
        self._host: tuple[tuple[np.ndarray, ...], list[ExemplarRows]] | None = None

    def _batch_constants(self, rows: dict[str, torch.Tensor]) -> _BatchConstants:
        _, batch, heads, n = rows["values"].shape
        device = rows["values"].device
        # Made in NumPy and moved once (a torch call's fixed cost is several NumPy calls', on tensors this small).
        position = np.arange(n)
        rank = np.argsort(np.argsort(self.indices, kind="stable"))  # by input index
        spread = 1 << (batch * n).bit_length()
        if all(shard == self.shards[0] for shard in self.shards):  # a batch of one shard: np.unique's cost spared
            unique, shard_of_text = np.asarray(self.shards[:1]), None
        else:
            unique, shard_of_text = np.unique(self.shards, return_inverse=True)
        thresholds = self.cutoffs.thresholds(unique.tolist())  # (L, G, S, H)
        return _BatchConstants(
            real=torch.from_numpy(position[None, :] < np.asarray(self.lengths)[:, None]).to(device),
            eligible={"previous_token": torch.from_numpy(position >= 1)[None, :].to(device),
                      "induction": rows["copies"] > 0},
            order=torch.from_numpy(spread - 1 - (rank[:, None] * n + position[None, :])).to(device), spread=spread,
            scale=torch.from_numpy(np.where(_SIGNS > 0, 1.0, -1.0) * 10.0**VALUE_DECIMALS)[:, None, None, None]
            .to(device),
            best_rows=torch.from_numpy((np.arange(batch)[None, :] * heads + np.arange(heads)[:, None]) * n).to(device),
            shards=unique.tolist(),
            shard_of_row=None if shard_of_text is None else
            torch.from_numpy(np.repeat(shard_of_text.astype(np.int64), n)[None, :]).to(device),
            thresholds=None if thresholds is None else
            torch.from_numpy(np.ascontiguousarray(_least_keys(thresholds, spread).transpose(0, 2, 3, 1))).to(device),
            k=min(self.k, batch * n))

    def _allowed_rows(self, visible: torch.Tensor) -> torch.Tensor:
        """(S, B, 1, n) bool: the rows that count for each statistic, given how many real keys each row sees
        (``visible`` (B, n): one tensor per attention pattern, so layers of one pattern share the answer)."""
        if self._allowed is None or self._allowed[0] is not visible:
            constants = self._constants
            counted = constants.real & (visible >= 2)  # (B, n) rows with a choice
            allowed = torch.stack([counted & constants.eligible[s] if s in constants.eligible else counted
                                   for s in EXEMPLAR_STATISTICS])[:, :, None, :]
            self._allowed = visible, allowed
        return self._allowed[1]

    def __call__(self, layer: int, rows: dict[str, torch.Tensor]) -> None:
        if layer != self._layers:
            raise ValueError(f"row values of layer {layer} came after {self._layers} layers")
        if self._constants is None:
            self._constants = self._batch_constants(rows)
        self._layers += 1
        # The weights stay intact after the call (batch_statistics reduces them before it calls the sink).
        self._held.append((rows["values"], self._allowed_rows(rows["visible"]), rows["weights"]))
        if sum(weights.numel() for *_, weights in self._held) >= _HELD_ELEMENTS:
            self._rank_held()

    def _rank_held(self) -> None:
        """Rank the held layers together (G_L of them, from layer ``first``) and copy out their chosen rows."""
        if not self._held:
            return
        constants = self._constants
        first = self._layers - len(self._held)
        values = torch.stack([held[0] for held in self._held])  # (G_L, S, B, H, n) float64
        allowed = torch.stack([held[1] for held in self._held])  # (G_L, S, B, 1, n)
        group, statistics, batch, heads, n = values.shape
        # Values in whole units of 10^−VALUE_DECIMALS, and one int64 key a row that orders rows exactly as the rule
        # does: score first, then (lower first) input index and query — so a max and a k-th highest need no sort,
        # and the key alone gives the value back (key // spread is the score). The keys are laid out (G_L, S, H, B,
        # n): a head's rows of the batch, b · n + q, side by side.
        left_out = ~allowed
        scores = values.nan_to_num_().masked_fill_(left_out, 0.0).mul_(constants.scale).round_()  # signed scores
        key = torch.empty((group, statistics, heads, batch, n), dtype=torch.int64, device=values.device)
        key.copy_(scores.transpose(2, 3))
        low, high = torch.aminmax(key)
        largest = torch.maximum(high, -low)  # the largest |score|: the keys below hold it times the spread
        torch.add(constants.order, key, alpha=constants.spread, out=key).masked_fill_(left_out.transpose(2, 3), MISSING)
        best, query = key.max(dim=-1)  # (G_L, S, H, B): each text's best row
        # The batch's top rows per shard: each cell's (layer, statistic, head) rows of the shard at or above both
        # its k-th highest key there and the shard's cut-off — its top k, or fewer (a cell's keys differ) — found
        # by one comparison, not a top-k.
        cells = key.view(-1, batch * n)  # (G_L · S · H, B · n)
        least = None if constants.thresholds is None else \
            constants.thresholds[first:first + group].reshape(len(cells), len(constants.shards))
        chosen = top_rows_of_cells(cells, least, constants.shard_of_row, constants.k)  # by cell, then b · n + q
        cell, place = chosen // (batch * n), chosen % (batch * n)
        text, row, head = place // n, place % n, cell % heads
        layer = cell // (statistics * heads)
        # The weights of the chosen rows only — each text's best rows and each shard's kept top rows — as rows
        # l · B·H·n + (b · H + h) · n + q of the group's layers' weights, each seen as (B · H · n, n). A row chosen
        # twice (by two statistics, or as a text's best and a top row: about half of them) is copied once.
        layer_rows = torch.arange(group, device=key.device) * (batch * heads * n)
        best_rows = (constants.best_rows + query + layer_rows[:, None, None, None]).reshape(-1)
        top_choices = layer * (batch * heads * n) + (text * heads + head) * n + row
        distinct, where = distinct_rows(torch.cat([best_rows, top_choices]), group * batch * heads * n)
        self._rows.append(take_rows([weights for *_, weights in self._held], distinct))
        where = where + self._copied
        self._copied += len(distinct)
        self._groups.append((best, query, largest, where[:len(best_rows)].reshape(best.shape)))
        self._tops.append((layer + first, cell // heads % statistics, head, text, row, cells.view(-1)[chosen],
                           where[len(best_rows):]))
        self._held.clear()
        if sum(part.numel() for part in self._rows) >= _KEY_ELEMENTS:
            self._read_keys()

    def _read_keys(self) -> None:
        if self._rows:
            self._heaviest.append(heaviest_order(self._rows[0] if len(self._rows) == 1 else torch.cat(self._rows)))
            self._rows.clear()

    def text(self, b: int, tokens: Sequence[str]) -> TextExemplars:
        """Text ``b``'s :class:`TextExemplars` over every layer (call after the batch's last layer)."""
        if self._host is None:
            self._host = self._on_host()
        (query, value, keys, weights), tops = self._host
        return TextExemplars(query=query[:, :, b], value=value[:, :, b], keys=keys[:, :, b],
                             key_weights=weights[:, :, b], top=tops[b], tokens=tuple(tokens))

    def _on_host(self) -> tuple[tuple[np.ndarray, ...], list[ExemplarRows]]:
        """Every layer's choice, decoded: the best rows' query (S, L, B, H) int32, value float64, keys and weights
        (S, L, B, H, TOP_KEYS) — −1, NaN, −1, 0 where a head has no candidate in a text — and each text's kept top
        rows of every layer and shard. Moves the shards' cut-off on by those rows."""
        self._rank_held()
        self._read_keys()
        best, query, largest, best_at = (torch.cat(part).cpu().numpy() if part[0].dim() else
                                         torch.stack(part).cpu().numpy() for part in zip(*self._groups))
        layer, statistic, head, text, row, ranked, top_at = (torch.cat(part).cpu().numpy() for part in zip(*self._tops))
        spread, n = self._constants.spread, self._constants.real.shape[1]
        if int(largest.max()) >= 2**62 // spread:  # then the keys overflowed: refuse what they chose
            raise ValueError(f"exemplar values too large to rank in one key (batch of {len(self.indices)} × {n} "
                             "tokens)")
        layers, statistics, heads, batch = best.shape
        keys, weights = heaviest_keys(torch.cat(self._heaviest).cpu().numpy())  # (copied rows, TOP_KEYS)
        self._heaviest.clear()
        found = best != MISSING
        per_text = (np.where(found, query, -1).astype(np.int32),
                    np.where(found, (best // spread * _SIGNS[:, None, None]).astype(np.float64) / 10**VALUE_DECIMALS,
                             np.nan),
                    np.where(found[..., None], keys[best_at], -1), np.where(found[..., None], weights[best_at], 0.0))
        per_text = tuple(part.swapaxes(0, 1).swapaxes(2, 3) for part in per_text)  # (S, L, B, H, …)
        score = ranked // spread
        top = ExemplarRows(
            kind="top", statistic=statistic, layer=layer, head=head, rank=np.zeros(len(layer), np.int64),
            text_index=np.asarray(self.indices, np.int64)[text], query=row,
            value=(score * _SIGNS[statistic]).astype(np.float64) / 10**VALUE_DECIMALS, keys=keys[top_at],
            key_weights=weights[top_at])
        cell = (layer * statistics + statistic) * heads + head
        if len(self._constants.shards) == 1:
            self.cutoffs.add(self._constants.shards[0], cell, score, (layers, statistics, heads))
        else:
            shard = np.searchsorted(self._constants.shards, np.asarray(self.shards)[text])
            for g, number in enumerate(self._constants.shards):
                self.cutoffs.add(number, cell[shard == g], score[shard == g], (layers, statistics, heads))
        # Each text's top rows, split off the rows ordered by text (views, not a copy a text).
        order = np.argsort(text, kind="stable")
        bounds = np.searchsorted(text[order], np.arange(batch + 1)).tolist()
        ordered = {name: getattr(top, name)[order] for name in _ROW_FIELDS}
        return per_text, [ExemplarRows(kind="top", **{name: rows[start:stop] for name, rows in ordered.items()})
                          for start, stop in zip(bounds, bounds[1:])]


_SIGNS = np.array([-1 if s in LOWEST_FIRST else 1 for s in EXEMPLAR_STATISTICS])  # int64 (no −0.0), by number


_LEAST = np.iinfo(np.int64).min  # a score below every row's: the cut-off of a shard with fewer than K rows


def _least_keys(thresholds: np.ndarray, spread: int) -> np.ndarray:
    """The least key of a row scoring at least each of ``thresholds`` (int64 scores): threshold · spread, a real
    row's key above MISSING. A threshold is clipped to the scores a batch's keys can hold (|score| < 2^62 /
    spread, or the batch is refused): one past them passes every such row or none, as it would unclipped."""
    bound = 2**62 // spread
    return np.where(thresholds == _LEAST, MISSING + 1, np.clip(thresholds, -bound, bound) * spread)


# The most weight elements of chosen rows held before their heaviest keys are read (16 MiB of float32): the rows of
# a few layers share one pass on a small batch, and a large one reads each layer's at once.
_KEY_ELEMENTS = 2**22
# The most weight elements of whole layers a batch's sink holds before it ranks them (64 MiB of float32): every
# layer of the CPU's small batches (a 20-token batch of 9 texts: 43,200 a layer) is ranked in one go; a batch
# whose one layer is larger ranks each layer as it comes, holding nothing more than the statistics pass does.
_HELD_ELEMENTS = 2**24


# ------------------------------------------------------------------------------------- top rows and deciles

_SIGN = np.array([-1.0 if s in LOWEST_FIRST else 1.0 for s in EXEMPLAR_STATISTICS])  # by statistic number


def _scores(statistic: np.ndarray, value: np.ndarray) -> np.ndarray:
    """Each row's value, negated where the lowest is best: higher scores rank first. (A lookup, not np.isin: this
    runs once a text, 200 times in a 200-text census.)"""
    return _SIGN[statistic] * value


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
    value = extremes.value.reshape(texts, -1)  # (N, C): C = S·L·H columns, texts in input order
    sign = np.repeat([-1.0 if s in LOWEST_FIRST else 1.0 for s in EXEMPLAR_STATISTICS], layers * heads)
    # Best first; a stable sort keeps equal scores in input order (ties by text index); texts without a candidate
    # (NaN) go last.
    ranked = np.argsort(np.where(np.isfinite(value), -sign * value, np.inf), axis=0, kind="stable")
    present = np.isfinite(value).sum(axis=0)  # (C,)
    # Rank r of N is in decile ⌊10 r / N⌋, so decile d starts at rank ⌈d N / 10⌉; a decile of no texts is left out.
    starts = (np.arange(DECILES + 1)[None, :] * present[:, None] + DECILES - 1) // DECILES  # (C, 11)
    sizes = np.diff(starts, axis=1)  # (C, 10)
    columns = np.flatnonzero(present)
    column, decile = np.nonzero(sizes[columns] > 0)  # by column, then decile
    column = columns[column]
    s, layer, head = np.unravel_index(columns, (statistics, layers, heads))
    # One generator's draws a column, default_rng([seed, statistic, layer, head]).integers(0, its deciles' sizes),
    # made for every column at once (seeded_draws: the same numbers as the 360 generators, a tenth of their time).
    drawn = seeded_integers(seed, np.stack([s, layer, head], axis=1), sizes[columns])[sizes[columns] > 0]
    chosen = ranked[starts[column, decile] + drawn, column]
    at = (chosen, *np.unravel_index(column, (statistics, layers, heads)))
    return ExemplarRows(kind="decile", statistic=at[1].astype(np.int64), layer=at[2].astype(np.int64),
                        head=at[3].astype(np.int64), rank=decile.astype(np.int64),
                        text_index=extremes.text_index[chosen], query=extremes.query[at].astype(np.int64),
                        value=extremes.value[at], keys=extremes.keys[at], key_weights=extremes.key_weights[at])


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
