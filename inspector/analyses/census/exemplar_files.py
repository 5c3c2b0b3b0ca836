"""A census's exemplar files (:mod:`inspector.analyses.census.exemplars` says what they hold and how each row is
chosen): every shard's top rows beside it (``shards/exemplars-NNNNN.parquet``, written before the shard's Parquet
file, so a shard that exists has them), and once the census finishes, in the folder:

- ``exemplars.parquet`` — one row per exemplar: ``statistic`` (string, one of
  :data:`~inspector.analyses.census.exemplars.EXEMPLAR_STATISTICS`), ``layer`` and ``head`` (int16), ``kind``
  ("top" | "decile"), ``rank`` (int16: 0…K−1 for top, best first; the decile 0…9 for decile, 0 the best tenth),
  ``text_index`` (int64, the input row), ``query`` (int32), ``value`` (float64), ``keys`` (list<int32>: the row's
  heaviest keys, highest weight first) and ``key_weights`` (list<float32>); ordered by statistic, layer, head, kind
  (top first) and rank;
- ``exemplar_texts.parquet`` — ``text_index`` (int64), ``tokens`` (list<string>: the tokenizer's own token strings,
  special tokens included) and ``text`` (string) of every text an exemplar names, by text index.

Both are rewritten from the shards at every finish (exemplar texts first, then the exemplars), each through a
temporary file renamed into place. :func:`read_exemplars` reads them back: a folder is data, possibly crafted, so
every file is checked first and anything a census does not write is one :class:`CensusFolderError` line naming
the file; reading never writes."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from inspector.analyses.batching import TOP_KEYS
from inspector.analyses.census.exemplars import (
    DECILES,
    EXEMPLAR_STATISTICS,
    MAX_EXEMPLARS,
    ExemplarRows,
    TextExtremes,
    decile_rows,
    top_rows,
)
from inspector.analyses.census.measure import TextCensus
from inspector.analyses.census.store import (
    UNREADABLE,
    CensusFolderError,
    checked_manifest,
    own_file,
    shard_path,
    write_atomic,
)

EXEMPLARS_FILE = "exemplars.parquet"
EXEMPLAR_TEXTS_FILE = "exemplar_texts.parquet"
KINDS = ("top", "decile")
# Bounds a census's exemplar files stay inside: a crafted file past them is refused before anything is built.
_MAX_FILE_BYTES = 256 * 2**20
_MAX_TEXT_TOKENS = 1_000_000


def _exemplar_schema():
    import pyarrow as pa

    return pa.schema([("statistic", pa.string()), ("layer", pa.int16()), ("head", pa.int16()), ("kind", pa.string()),
                      ("rank", pa.int16()), ("text_index", pa.int64()), ("query", pa.int32()),
                      ("value", pa.float64()), ("keys", pa.list_(pa.int32())), ("key_weights", pa.list_(pa.float32()))])


def _texts_schema():
    import pyarrow as pa

    return pa.schema([("text_index", pa.int64()), ("tokens", pa.list_(pa.string())), ("text", pa.string())])


def exemplar_shard_path(out: Path, shard: int) -> Path:
    return out / "shards" / f"exemplars-{shard:05d}.parquet"


def _ragged(keys: np.ndarray, weights: np.ndarray):
    """(N, TOP_KEYS) padded keys (−1 = none) and weights as two list arrays of each row's real keys. A weight is
    clipped to [0, 1]: one materialised in float32 can exceed 1 by rounding (1.0000076 on a collapsed MiniLM head,
    which the reader then refused as no census file)."""
    import pyarrow as pa

    kept = keys >= 0
    offsets = np.concatenate([[0], np.cumsum(kept.sum(axis=1))]).astype(np.int32)
    return (pa.ListArray.from_arrays(pa.array(offsets), pa.array(keys[kept].astype(np.int32))),
            pa.ListArray.from_arrays(pa.array(offsets), pa.array(np.clip(weights[kept], 0.0, 1.0).astype(np.float32))))


def _rows_table(parts: list[ExemplarRows]):
    import pyarrow as pa

    columns: dict[str, list] = {name: [] for name in _exemplar_schema().names}
    for rows in parts:
        keys, weights = _ragged(rows.keys, rows.key_weights)
        columns["statistic"].append(pa.array(np.asarray(EXEMPLAR_STATISTICS, dtype=object)[rows.statistic],
                                             pa.string()))
        columns["kind"].append(pa.array([rows.kind] * len(rows.rank), pa.string()))
        columns["keys"].append(keys)
        columns["key_weights"].append(weights)
        for name in ("layer", "head", "rank", "text_index", "query", "value"):
            columns[name].append(pa.array(getattr(rows, name), _exemplar_schema().field(name).type))
    return pa.Table.from_arrays([pa.concat_arrays(columns[f.name]) if columns[f.name] else pa.array([], f.type)
                                 for f in _exemplar_schema()], schema=_exemplar_schema())


def _write_table(path: Path, table) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    write_atomic(path, sink.getvalue().to_pybytes())


@dataclass(frozen=True)
class FinishedShard:
    """What a finished shard's files hold for :func:`write_exemplar_files`, as the run that wrote them has it in
    memory (so a run reads back only the shards an earlier run wrote): ``top`` — its shard top rows (as in
    ``shards/exemplars-NNNNN.parquet``); ``extremes`` — its texts' best rows, text_index filled, in input order;
    ``tokens`` and ``texts`` — each of those texts' token strings and text, in the same order."""

    top: ExemplarRows
    extremes: TextExtremes
    tokens: list[tuple[str, ...]]
    texts: list[str]


def write_shard_exemplars(out: Path, shard: int, measured: list[TextCensus], k: int) -> ExemplarRows:
    """The shard's top ``k`` rows per statistic and head over its texts (``measured`` carry their exemplars),
    written beside the shard; returns them."""
    rows = top_rows(ExemplarRows.concatenate("top", [m.exemplars.top for m in measured]), k)
    _write_table(exemplar_shard_path(out, shard), _rows_table([rows]))
    return rows


# ----------------------------------------------------------------------------------------- reading, checked

def _refuse(path: Path, problem: str) -> CensusFolderError:
    return CensusFolderError(f"{path} is not a census exemplar file ({problem}); rerun the census with --exemplars "
                             "into a new folder")


def _read_table(path: Path, schema):
    """``path`` read as Parquet with exactly ``schema``'s columns and types, no empty value, or a refusal."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    own_file(path)
    if path.stat().st_size > _MAX_FILE_BYTES:
        raise _refuse(path, f"{path.stat().st_size:,} bytes, more than a census writes")
    try:
        table = pq.read_table(path)
        if table.schema.remove_metadata() != schema:
            raise ValueError(f"its columns are {table.schema.remove_metadata().to_string(show_schema_metadata=False)}"
                             .replace("\n", ", "))
        if any(table.column(name).null_count for name in schema.names):
            raise ValueError("an empty value")
        for name in schema.names:
            if pa.types.is_list(schema.field(name).type) and table.column(name).combine_chunks().flatten().null_count:
                raise ValueError(f"an empty value in {name}")
        return table
    except (*UNREADABLE, pa.ArrowException) as err:
        raise _refuse(path, str(err)) from None


def string_codes(column, names: tuple[str, ...]) -> np.ndarray:
    """Each value of a string ``column`` as its index in ``names`` (int64), −1 where it is none of them — computed
    in Arrow, no Python string a row."""
    import pyarrow as pa
    import pyarrow.compute as pc

    return pc.index_in(column, value_set=pa.array(names, pa.string())).fill_null(-1).to_numpy().astype(np.int64)


def padded_rows(counts: np.ndarray, keys: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Ragged rows — ``counts`` (N,) keys each, flat ``keys`` and ``weights`` — as (N, TOP_KEYS) arrays: keys int32
    (−1 past a row's own), weights float32 (0 there). The counts must be at most TOP_KEYS."""
    padded_keys = np.full((len(counts), TOP_KEYS), -1, np.int32)
    padded_weights = np.zeros((len(counts), TOP_KEYS), np.float32)
    row = np.repeat(np.arange(len(counts)), counts)
    column = np.arange(len(keys)) - np.repeat(np.cumsum(counts) - counts, counts)
    padded_keys[row, column], padded_weights[row, column] = keys, weights
    return padded_keys, padded_weights


def _text_lengths(path: Path, text_index: np.ndarray, lengths: dict[int, int]) -> np.ndarray:
    """The length (tokens) of each row's text, looked up in ``lengths`` (text index → tokens) by a sorted search; a
    refusal when a row names a text it does not hold."""
    known = np.fromiter(lengths, np.int64, len(lengths))
    sizes = np.fromiter(lengths.values(), np.int64, len(lengths))
    order = np.argsort(known, kind="stable")
    known, sizes = known[order], sizes[order]
    found = np.searchsorted(known, text_index)
    held = found < len(known)
    held[held] = known[found[held]] == text_index[held]
    if not held.all():
        raise _refuse(path, f"a text index that {EXEMPLAR_TEXTS_FILE} does not hold")
    return sizes[found]


def _checked_rows(path: Path, table, shape: tuple[int, int], lengths: dict[int, int] | None) -> list[ExemplarRows]:
    """The rows of an exemplar table, each checked: a known statistic and kind, a head of ``shape``, ranks within
    bounds and never twice, finite values, keys and weights of one row alike, positions inside the text (of
    ``lengths``: text index → tokens, when known). Every check is on whole columns (a shipped atlas has 40,500 rows:
    a Python step per row took seconds to open it)."""
    layers, heads = shape
    statistic = string_codes(table.column("statistic"), EXEMPLAR_STATISTICS)
    kind = string_codes(table.column("kind"), KINDS)
    number = {name: table.column(name).to_numpy().astype(np.int64) for name in
              ("layer", "head", "rank", "text_index", "query")}
    value = table.column("value").to_numpy()
    keys_column = table.column("keys").combine_chunks()
    weights_column = table.column("key_weights").combine_chunks()
    counts = keys_column.value_lengths().to_numpy(zero_copy_only=False)
    if not ((statistic >= 0).all() and (kind >= 0).all()):
        raise _refuse(path, f"a statistic outside {', '.join(EXEMPLAR_STATISTICS)} or a kind outside top, decile")
    if not ((number["layer"] >= 0) & (number["layer"] < layers) & (number["head"] >= 0)
            & (number["head"] < heads)).all():
        raise _refuse(path, f"a head outside the census's {layers} × {heads}")
    top = kind == KINDS.index("top")
    if not ((number["rank"] >= 0) & (number["rank"] < np.where(top, MAX_EXEMPLARS, DECILES))).all():
        raise _refuse(path, f"a rank outside 0–{MAX_EXEMPLARS - 1} (top) or 0–{DECILES - 1} (decile): more than "
                            f"{MAX_EXEMPLARS} exemplars a head")
    # One number a slot (statistic, layer, head, kind, rank), every part bounded above: equal numbers, equal slots.
    slot = (((statistic * layers + number["layer"]) * heads + number["head"]) * len(KINDS) + kind) * MAX_EXEMPLARS \
        + number["rank"]
    if len(np.unique(slot)) != len(slot):
        raise _refuse(path, "two exemplars of one rank of one head")
    if not np.isfinite(value).all():
        raise _refuse(path, "a value that is not a finite number")
    weights = weights_column.flatten().to_numpy()
    weight_counts = weights_column.value_lengths().to_numpy(zero_copy_only=False)
    if not ((counts >= 1).all() and (counts <= TOP_KEYS).all() and (weight_counts == counts).all()
            and np.isfinite(weights).all() and ((weights >= 0) & (weights <= 1)).all()):
        raise _refuse(path, f"a row of no keys or more than {TOP_KEYS}, keys and weights of different counts, or a "
                            "weight outside 0–1")
    keys = keys_column.flatten().to_numpy().astype(np.int64)
    if lengths is not None:
        length = _text_lengths(path, number["text_index"], lengths)
        if not ((number["query"] >= 0) & (number["query"] < length)).all() \
                or not ((keys >= 0) & (keys < np.repeat(length, counts))).all():
            raise _refuse(path, "a query or key position outside its text")
    elif (number["query"] < 0).any() or (keys < 0).any():
        raise _refuse(path, "a negative position")
    padded_keys, padded_weights = padded_rows(counts, keys, weights)
    return [ExemplarRows(kind=chosen, statistic=statistic[mask], layer=number["layer"][mask],
                         head=number["head"][mask], rank=number["rank"][mask],
                         text_index=number["text_index"][mask], query=number["query"][mask], value=value[mask],
                         keys=padded_keys[mask], key_weights=padded_weights[mask])
            for chosen, mask in (("top", top), ("decile", ~top))]


def _shard_types(shape: tuple[int, int]) -> dict:
    import pyarrow as pa

    size = len(EXEMPLAR_STATISTICS) * shape[0] * shape[1]
    return {"index": pa.int64(), "text": pa.string(), "token_strings": pa.list_(pa.string()),
            "exemplar_query": pa.list_(pa.int32(), size), "exemplar_value": pa.list_(pa.float64(), size),
            "exemplar_keys": pa.list_(pa.int32(), size * TOP_KEYS),
            "exemplar_key_weights": pa.list_(pa.float32(), size * TOP_KEYS)}


def _shard_exemplars(path: Path, shape: tuple[int, int]):
    """A shard's exemplar columns (with its index and text), checked, or a refusal naming the shard."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    own_file(path)
    types = _shard_types(shape)
    try:
        table = pq.read_table(path, columns=list(types))
        wrong = [name for name, kind in types.items() if table.schema.field(name).type != kind]
        if wrong:
            raise ValueError(f"column {', '.join(wrong)} is not what a census with exemplars writes")
        if any(table.column(name).null_count for name in types if name != "text"):
            raise ValueError("an empty value")
        return table
    except (*UNREADABLE, pa.ArrowException) as err:
        raise CensusFolderError(f"{path} is not a census shard with exemplars ({err}); rerun the census with "
                                "--exemplars into a new folder") from None


def _flat(table, name: str, dtype) -> np.ndarray:
    return table.column(name).combine_chunks().flatten().to_numpy(zero_copy_only=False).astype(dtype, copy=False)


def _extremes(table, shape: tuple[int, int]) -> TextExtremes:
    """A shard table's (:func:`_shard_exemplars`) texts' best rows, in its order."""
    full = (len(EXEMPLAR_STATISTICS), *shape)
    column = {name: _flat(table, name, dtype) for name, dtype in (
        ("exemplar_query", np.int32), ("exemplar_value", np.float64), ("exemplar_keys", np.int32),
        ("exemplar_key_weights", np.float32))}
    return TextExtremes(text_index=table.column("index").to_numpy().astype(np.int64),
                        query=column["exemplar_query"].reshape(-1, *full),
                        value=column["exemplar_value"].reshape(-1, *full),
                        keys=column["exemplar_keys"].reshape(-1, *full, TOP_KEYS),
                        key_weights=column["exemplar_key_weights"].reshape(-1, *full, TOP_KEYS))


def _read_finished(out: Path, shard: int, shape: tuple[int, int]) -> tuple[ExemplarRows, TextExtremes, object]:
    """An earlier run's shard, read back checked: its top rows, its texts' extremes, and its texts (a table of
    index, token_strings, text)."""
    table = _shard_exemplars(shard_path(out, shard), shape)
    pool = exemplar_shard_path(out, shard)
    top = _checked_rows(pool, _read_table(pool, _exemplar_schema()), shape, None)[0]
    return top, _extremes(table, shape), table.select(["index", "token_strings", "text"])


def write_exemplar_files(out: Path, seed: int, finished: dict[int, FinishedShard] | None = None) -> None:
    """``exemplars.parquet`` and ``exemplar_texts.parquet`` of the census in ``out`` from its finished shards: the
    top K over the shards' top K, one sampled text per decile (``seed``), the texts they name. Only a census run
    with exemplars calls this (after summary.json), handing over the shards it wrote (``finished``: shard →
    :class:`FinishedShard`); the others, an earlier run's, are read back from the folder."""
    import pyarrow as pa

    manifest = checked_manifest(out)
    k, shape = manifest["exemplars"], tuple(manifest["shape"])
    finished = finished or {}
    tops, extremes, texts = [], [], []  # texts: per shard, a table, or the FinishedShard to take rows from
    for path in sorted((out / "shards").glob("part-*.parquet")):
        shard = int(path.name.removeprefix("part-").removesuffix(".parquet"))
        if shard in finished:
            held = finished[shard]
            tops.append(held.top)
            extremes.append(held.extremes)
            texts.append(held)
        else:
            top, extreme, table = _read_finished(out, shard, shape)
            tops.append(top)
            extremes.append(extreme)
            texts.append(table)
    if not tops:
        return
    # The top rows of one shard this run wrote are its top K already (top_rows's order and ranks): ranked again
    # they are the same. A shard read back is ranked again: a crafted file's order is not trusted.
    top = tops[0] if len(tops) == 1 and isinstance(texts[0], FinishedShard) else \
        top_rows(ExemplarRows.concatenate("top", tops), k)
    deciles = decile_rows(_joined(extremes), seed)
    named = np.union1d(top.text_index, deciles.text_index)
    _write_table(out / EXEMPLAR_TEXTS_FILE, _named_texts(texts, named))
    joined = [np.concatenate([getattr(top, name), getattr(deciles, name)]) for name in
              ("rank", "statistic", "layer", "head")]
    kind = np.concatenate([np.zeros(len(top.rank)), np.ones(len(deciles.rank))])  # top first
    order = np.lexsort((joined[0], kind, joined[3], joined[2], joined[1]))
    _write_table(out / EXEMPLARS_FILE, _rows_table([top, deciles]).take(pa.array(order)))


def _joined(parts: list[TextExtremes]) -> TextExtremes:
    """The shards' extremes as one, ordered by text index."""
    index = np.concatenate([part.text_index for part in parts])
    order = np.argsort(index, kind="stable")
    return TextExtremes(text_index=index[order], **{
        name: np.concatenate([getattr(part, name) for part in parts])[order]
        for name in ("query", "value", "keys", "key_weights")})


def _named_texts(parts: list, named: np.ndarray):
    """exemplar_texts.parquet's table: the texts of ``named`` (text indices) from each shard's part — a table read
    back, or a :class:`FinishedShard`'s lists, of which only the named texts are made into Arrow values."""
    import pyarrow as pa
    import pyarrow.compute as pc

    schema = _texts_schema()
    tables = []
    for part in parts:
        if isinstance(part, FinishedShard):
            mine = np.flatnonzero(np.isin(part.extremes.text_index, named))
            tables.append(pa.table([pa.array(part.extremes.text_index[mine], pa.int64()),
                                    pa.array([list(part.tokens[i]) for i in mine], pa.list_(pa.string())),
                                    pa.array([part.texts[i] for i in mine], pa.string())], schema=schema))
        else:
            chosen = part.filter(pc.is_in(part.column("index"), value_set=pa.array(named, pa.int64())))
            tables.append(chosen.rename_columns(schema.names).cast(schema))
    return pa.concat_tables(tables).sort_by("text_index")


@dataclass(frozen=True)
class CensusExemplars:
    """A census folder's exemplars, read back and checked: ``table`` — exemplars.parquet's rows (the module
    docstring gives its columns), ordered by statistic, layer, head, kind and rank; ``texts`` — text index → its
    token strings; ``sources`` — text index → the text."""

    table: object
    texts: dict[int, tuple[str, ...]]
    sources: dict[int, str]


def read_exemplars(folder: str | Path) -> CensusExemplars | None:
    """The exemplars of the census in ``folder``, checked against its manifest's layers × heads and their texts;
    None when it holds none (a census without ``--exemplars``). A file that is not what a census writes — another
    schema, more than :data:`~inspector.analyses.census.exemplars.MAX_EXEMPLARS` a head, a NaN, a position outside
    its text or a head outside the model — is a :class:`CensusFolderError`; reading never writes."""
    out = Path(folder).expanduser()
    if not (out / "manifest.json").is_file():
        raise CensusFolderError(f"{out} is not a census folder (no manifest.json); run `python -m inspector census "
                                "--exemplars K --out FOLDER` first, or give the folder it wrote")
    shape = tuple(checked_manifest(out)["shape"])
    path = out / EXEMPLARS_FILE
    if not path.exists() and not path.is_symlink():
        return None
    texts_path = out / EXEMPLAR_TEXTS_FILE
    texts = _read_table(texts_path, _texts_schema())
    index = texts.column("text_index").to_numpy()
    lengths = texts.column("tokens").combine_chunks().value_lengths().to_numpy(zero_copy_only=False)
    if len(np.unique(index)) != len(index) or (index < 0).any() or (lengths == 0).any() \
            or lengths.sum() > _MAX_TEXT_TOKENS:
        raise _refuse(texts_path, f"a text index twice or below 0, a text of no tokens, or more than "
                                  f"{_MAX_TEXT_TOKENS:,} tokens")
    table = _read_table(path, _exemplar_schema())
    _checked_rows(path, table, shape, dict(zip(index.tolist(), lengths.tolist())))
    tokens = texts.column("tokens").to_pylist()
    return CensusExemplars(table=table, texts={int(i): tuple(t) for i, t in zip(index, tokens)},
                           sources=dict(zip(index.tolist(), texts.column("text").to_pylist())))
