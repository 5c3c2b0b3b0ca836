"""A census folder's exemplars (issue 41, Build 1: the contexts that drive each head), read back and checked:
``exemplars.parquet`` (per head and statistic, the top-K contexts and one sample per decile) and
``exemplar_texts.parquet`` (the tokens and the text of every text an exemplar names). The census writes both
(``census --exemplars K``); the atlas (:mod:`inspector.analyses.atlas`) reads them through :func:`read_exemplar_files`,
its one door to them.

``exemplars.parquet``, one row per exemplar: ``statistic`` (one of :data:`EXEMPLAR_STATISTICS`), ``layer``, ``head``,
``kind`` (``top`` or ``decile``), ``rank`` (0 = the highest of the top; the decile's number 0–9), ``text_index`` (the
input row), ``query`` (the query position), ``value`` (the statistic's value there), ``keys`` (the top-3 attended key
positions) and ``key_weights`` (their weights). ``exemplar_texts.parquet``: ``text_index``, ``tokens`` (the
tokenizer's own strings, special tokens included) and ``text`` (the text itself, so the atlas opens it on Inspect
without the census's shards).

A folder is data, possibly crafted: every file is the folder's own (no link), bounded in size, of the schema above,
its numbers finite and its positions inside their text; anything else is one :class:`CensusFolderError` line naming
the file.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from inspector.analyses.census.store import UNREADABLE, CensusFolderError, own_file

EXEMPLARS_FILE = "exemplars.parquet"
EXEMPLAR_TEXTS_FILE = "exemplar_texts.parquet"
# What the census keeps exemplars of (lowest entropy, highest sink mass, previous-token weight, mass on a repeated
# earlier token, longest mean attention distance), in the order the atlas offers them.
EXEMPLAR_STATISTICS: tuple[str, ...] = ("low_entropy", "sink_mass", "previous_token", "induction", "distance")
EXEMPLAR_KINDS: tuple[str, ...] = ("top", "decile")
DECILES = 10
# Bounds a census's exemplars stay inside (a crafted file past them is refused before it is built into anything).
MAX_TOP_K = 1_000
MAX_KEYS = 16
MAX_EXEMPLAR_FILE_BYTES = 256 * 2**20
MAX_TEXT_TOKENS = 1_000_000


@dataclass(frozen=True)
class Exemplar:
    """One context of one head: the text (``text_index``), the query position, the statistic's ``value`` there, and
    the attended ``keys`` (positions, most weight first) with their ``weights``."""

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
    """Every exemplar of a census, checked. N rows: statistic, kind (N,) str; layer, head, rank, query (N,) int64;
    text_index (N,) int64; value (N,) float64; keys, weights: N tuples. texts: text index → its tokens. sources: text
    index → the text itself, where the folder holds it."""

    statistic: np.ndarray
    kind: np.ndarray
    layer: np.ndarray
    head: np.ndarray
    rank: np.ndarray
    text_index: np.ndarray
    query: np.ndarray
    value: np.ndarray
    keys: tuple[tuple[int, ...], ...]
    weights: tuple[tuple[float, ...], ...]
    texts: dict[int, tuple[str, ...]]
    sources: dict[int, str]

    def of_head(self, layer: int, head: int, statistic: str, kind: str) -> list[Exemplar]:
        """The exemplars of head (``layer``, ``head``) for ``statistic`` and ``kind``, by rank."""
        rows = np.flatnonzero((self.layer == layer) & (self.head == head) & (self.statistic == statistic)
                              & (self.kind == kind))
        rows = rows[np.argsort(self.rank[rows], kind="stable")]
        return [Exemplar(statistic=statistic, kind=kind, rank=int(self.rank[i]), text_index=int(self.text_index[i]),
                         query=int(self.query[i]), value=float(self.value[i]), keys=self.keys[i],
                         weights=self.weights[i]) for i in rows]


def _table(path: Path, columns: dict[str, str]):
    """``path`` read as Parquet with ``columns`` (name → 'integer' | 'float' | 'string' | 'integer list' |
    'float list' | 'string list'), or a one-line :class:`CensusFolderError`."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    own_file(path)
    if path.stat().st_size > MAX_EXEMPLAR_FILE_BYTES:
        raise CensusFolderError(f"{path} has {path.stat().st_size:,} bytes, more than a census writes; it is not an "
                                "exemplar file")
    kinds = {"integer": pa.types.is_integer, "float": pa.types.is_floating, "string": pa.types.is_string}
    try:
        table = pq.read_table(path)
        for name, kind in columns.items():
            if name not in table.schema.names:
                raise ValueError(f"no column {name}")
            field_type = table.schema.field(name).type
            if kind.endswith(" list"):
                if not pa.types.is_list(field_type) and not pa.types.is_large_list(field_type):
                    raise ValueError(f"column {name} is not a list")
                field_type = field_type.value_type
                kind = kind.removesuffix(" list")
            if not kinds[kind](field_type):
                raise ValueError(f"column {name} is not {kind}")
            if table.column(name).null_count:
                raise ValueError(f"column {name} has empty values")
        return table
    except (*UNREADABLE, pa.ArrowException) as err:
        raise CensusFolderError(f"{path} is not a census exemplar file ({err}); rerun the census with --exemplars "
                                "into a new folder") from None


def _refuse(path: Path, problem: str) -> CensusFolderError:
    return CensusFolderError(f"{path} is not a census exemplar file ({problem}); rerun the census with --exemplars "
                             "into a new folder")


def _read_texts(path: Path) -> tuple[dict[int, tuple[str, ...]], dict[int, str]]:
    table = _table(path, {"text_index": "integer", "tokens": "string list", "text": "string"})
    index = table.column("text_index").to_numpy()
    if len(np.unique(index)) != len(index) or (index < 0).any():
        raise _refuse(path, "a text index twice, or below 0")
    lengths = table.column("tokens").combine_chunks().value_lengths().to_numpy(zero_copy_only=False)
    if lengths.sum() > MAX_TEXT_TOKENS or (lengths == 0).any():
        raise _refuse(path, f"more than {MAX_TEXT_TOKENS:,} tokens, or a text of none")
    texts = {int(i): tuple(row) for i, row in zip(index, table.column("tokens").to_pylist())}
    return texts, {int(i): text for i, text in zip(index, table.column("text").to_pylist())}


def read_exemplar_files(folder: str | Path, shape: tuple[int, int]) -> ExemplarTable | None:
    """The exemplars of the census in ``folder`` whose heads are ``shape`` (layers, heads), checked against their
    texts; None when the folder holds none (a census run without ``--exemplars``)."""
    folder = Path(folder).expanduser()
    path = folder / EXEMPLARS_FILE
    if not path.exists() and not path.is_symlink():
        return None
    table = _table(path, {"statistic": "string", "layer": "integer", "head": "integer", "kind": "string",
                          "rank": "integer", "text_index": "integer", "query": "integer", "value": "float",
                          "keys": "integer list", "key_weights": "float list"})
    texts, sources = _read_texts(folder / EXEMPLAR_TEXTS_FILE)
    layers, heads = shape
    column = {name: table.column(name).to_numpy() for name in ("layer", "head", "rank", "text_index", "query")}
    value = table.column("value").to_numpy().astype(np.float64)
    statistic = np.asarray(table.column("statistic").to_pylist(), dtype=object)
    kind = np.asarray(table.column("kind").to_pylist(), dtype=object)
    if table.num_rows > layers * heads * len(EXEMPLAR_STATISTICS) * (MAX_TOP_K + DECILES):
        raise _refuse(path, f"{table.num_rows:,} rows, more than {MAX_TOP_K:,} a head and statistic")
    if not (np.isin(statistic, EXEMPLAR_STATISTICS).all() and np.isin(kind, EXEMPLAR_KINDS).all()):
        raise _refuse(path, f"a statistic outside {', '.join(EXEMPLAR_STATISTICS)} or a kind outside top, decile")
    if not ((0 <= column["layer"]) & (column["layer"] < layers) & (0 <= column["head"]) & (column["head"] < heads)
            ).all():
        raise _refuse(path, f"a head outside the census's {layers} × {heads}")
    top = kind == "top"
    if not ((column["rank"] >= 0) & np.where(top, column["rank"] < MAX_TOP_K, column["rank"] < DECILES)).all():
        raise _refuse(path, f"a rank outside 0–{MAX_TOP_K - 1} (top) or 0–{DECILES - 1} (decile)")
    if not np.isfinite(value).all():
        raise _refuse(path, "a value that is not a finite number")
    if not np.isin(column["text_index"], np.fromiter(texts, np.int64, len(texts))).all():
        raise _refuse(path, f"a text index that {EXEMPLAR_TEXTS_FILE} does not hold")
    keys = tuple(tuple(int(k) for k in row) for row in table.column("keys").to_pylist())
    weights = tuple(tuple(float(w) for w in row) for row in table.column("key_weights").to_pylist())
    for i, (row_keys, row_weights) in enumerate(zip(keys, weights)):
        length = len(texts[int(column["text_index"][i])])
        if not 0 <= column["query"][i] < length:
            raise _refuse(path, f"row {i}: query {column['query'][i]} outside its text of {length} tokens")
        if not (0 < len(row_keys) <= MAX_KEYS and len(row_weights) == len(row_keys)
                and all(0 <= k < length for k in row_keys)
                and all(np.isfinite(w) and 0.0 <= w <= 1.0 for w in row_weights)):
            raise _refuse(path, f"row {i}: keys outside its text of {length} tokens, or weights outside 0–1")
    return ExemplarTable(statistic=statistic, kind=kind, layer=column["layer"].astype(np.int64),
                         head=column["head"].astype(np.int64), rank=column["rank"].astype(np.int64),
                         text_index=column["text_index"].astype(np.int64), query=column["query"].astype(np.int64),
                         value=value, keys=keys, weights=weights, texts=texts, sources=sources)
