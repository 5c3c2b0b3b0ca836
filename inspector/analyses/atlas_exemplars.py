"""A census folder's exemplars (issue 41, Build 1: the contexts that drive each head) as the atlas uses them: per head
and statistic, the top contexts and one sample per decile, with the tokens and the text of each. The census writes
them (``census --exemplars K``: ``exemplars.parquet`` and ``exemplar_texts.parquet``,
:mod:`inspector.analyses.census.exemplar_files` gives their columns) and reads them back, every file checked —
:func:`~inspector.analyses.census.exemplar_files.read_exemplars`, whose checks are the atlas's too (a folder is data,
possibly crafted: anything a census does not write is one :class:`CensusFolderError` line naming the file).
:func:`read_exemplar_files` is the atlas's one door to them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from inspector.analyses.census.exemplar_files import (
    EXEMPLARS_FILE,
    KINDS,
    padded_rows,
    read_exemplars,
    string_codes,
)
from inspector.analyses.census.exemplars import EXEMPLAR_STATISTICS
from inspector.analyses.census.store import CensusFolderError


@dataclass(frozen=True)
class Exemplar:
    """One context of one head: the text (``text_index``), the query position, the statistic's ``value`` there, and
    the attended ``keys`` (positions, most weight first) with their ``weights``. rank: 0 = the highest of the top;
    for a decile sample, the decile (0 = the highest tenth)."""

    statistic: str
    kind: str
    rank: int
    text_index: int
    query: int
    value: float
    keys: tuple[int, ...]
    weights: tuple[float, ...]


@dataclass(frozen=True)
class ExemplarTable:
    """Every exemplar of a census. N rows: statistic, kind (N,) object (str); layer, head, rank, text_index, query
    (N,) int64; value (N,) float64; keys (N, TOP_KEYS) int32 — a row's attended key positions, most weight first,
    −1 past its own — and weights (N, TOP_KEYS) float32 (0 there). texts: text index → its tokens (the tokenizer's
    own strings, special tokens included). sources: text index → the text itself. Whole columns, so a large atlas
    opens without a Python object per row; :meth:`of_head` makes the few a card shows."""

    statistic: np.ndarray
    kind: np.ndarray
    layer: np.ndarray
    head: np.ndarray
    rank: np.ndarray
    text_index: np.ndarray
    query: np.ndarray
    value: np.ndarray
    keys: np.ndarray
    weights: np.ndarray
    texts: dict[int, tuple[str, ...]]
    sources: dict[int, str]

    def of_head(self, layer: int, head: int, statistic: str, kind: str) -> list[Exemplar]:
        """The exemplars of head (``layer``, ``head``) for ``statistic`` and ``kind``, by rank."""
        rows = np.flatnonzero((self.layer == layer) & (self.head == head) & (self.statistic == statistic)
                              & (self.kind == kind))
        rows = rows[np.argsort(self.rank[rows], kind="stable")]
        return [Exemplar(statistic=statistic, kind=kind, rank=int(self.rank[i]), text_index=int(self.text_index[i]),
                         query=int(self.query[i]), value=float(self.value[i]),
                         keys=tuple(int(key) for key in self.keys[i] if key >= 0),
                         weights=tuple(float(weight) for key, weight in zip(self.keys[i], self.weights[i]) if key >= 0))
                for i in rows]


def read_exemplar_files(folder: str | Path, shape: tuple[int, int]) -> ExemplarTable | None:
    """The exemplars of the census in ``folder`` (read and checked by the census's own reader), or None when it holds
    none (a census run without ``--exemplars``). ``shape``: the (layers, heads) of the census read beside them — the
    reader checks the rows against the manifest's, which must be this one."""
    found = read_exemplars(folder)
    if found is None:
        return None
    table = found.table
    layer, head = (table.column(name).to_numpy().astype(np.int64) for name in ("layer", "head"))
    if len(layer) and (layer.max() >= shape[0] or head.max() >= shape[1]):
        raise CensusFolderError(f"{Path(folder) / EXEMPLARS_FILE} names a head outside the census's {shape[0]} × "
                                f"{shape[1]}; rerun the census with --exemplars into a new folder")
    keys, weights = (table.column(name).combine_chunks() for name in ("keys", "key_weights"))
    padded_keys, padded_weights = padded_rows(keys.value_lengths().to_numpy(zero_copy_only=False),
                                              keys.flatten().to_numpy(), weights.flatten().to_numpy())
    statistic_names, kind_names = (np.asarray(names, dtype=object) for names in (EXEMPLAR_STATISTICS, KINDS))
    return ExemplarTable(
        statistic=statistic_names[string_codes(table.column("statistic"), EXEMPLAR_STATISTICS)],
        kind=kind_names[string_codes(table.column("kind"), KINDS)], layer=layer, head=head,
        rank=table.column("rank").to_numpy().astype(np.int64),
        text_index=table.column("text_index").to_numpy().astype(np.int64),
        query=table.column("query").to_numpy().astype(np.int64),
        value=table.column("value").to_numpy().astype(np.float64),
        keys=padded_keys, weights=padded_weights, texts=found.texts, sources=found.sources)
