"""A census folder made for the atlas tests: a real census of a tiny model (its manifest, summary and shards), plus
head roles and exemplars written to their contracts (``roles.json`` as ``census --roles`` writes it;
``exemplars.parquet`` and ``exemplar_texts.parquet`` as ``census --exemplars K`` writes them) with known values, so a
test can say exactly what the atlas must show."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from inspector.analyses.census.exemplar_files import EXEMPLAR_TEXTS_FILE, EXEMPLARS_FILE
from inspector.analyses.census.exemplars import DECILES, EXEMPLAR_STATISTICS
from inspector.analyses.roles import NO_ROLE, ROLES

TOP_K = 3


def _grid(values: np.ndarray) -> list:
    return [[float(x) for x in row] for row in values]


def write_roles(out: Path, shape: tuple[int, int]) -> dict:
    """roles.json of a ``shape`` model: head (L, H)'s induction score is (L·H_count + H) / heads, so the last head
    is the top induction head and the only one called induction."""
    layers, heads = shape
    order = np.arange(layers * heads, dtype=np.float64).reshape(shape) / (layers * heads)
    scores = {role: {"mean": _grid(order if role == "induction" else order / 10),
                     "low": _grid(np.maximum(order - 0.05, 0) if role == "induction" else order / 20),
                     "high": _grid(np.minimum(order + 0.05, 1) if role == "induction" else order / 5)}
              for role in ROLES}
    dominant = [[NO_ROLE] * heads for _ in range(layers)]
    dominant[-1][-1] = "induction"
    payload = {"model": "tiny", "shape": [layers, heads], "scores": scores, "dominant": dominant,
               "thresholds": {role: 0.4 for role in ROLES}, "report": []}
    (out / "roles.json").write_text(json.dumps(payload))
    return payload


def write_exemplars(out: Path, shape: tuple[int, int], shard_texts: dict[int, tuple[str, int]]) -> None:
    """Per head and exemplar statistic, the top :data:`TOP_K` and one context per decile, over the texts
    ``shard_texts`` (text index → (text, token count), from the census's shards): context r of head (L, H) is text
    ``sorted(texts)[r % texts]`` at its last query, attending to keys 0, 1 (when there is one)."""
    layers, heads = shape
    texts = sorted(shard_texts)
    token_counts = {index: count for index, (_, count) in shard_texts.items()}
    rows = {name: [] for name in ("statistic", "layer", "head", "kind", "rank", "text_index", "query", "value",
                                  "keys", "key_weights")}
    for statistic in EXEMPLAR_STATISTICS:
        for layer in range(layers):
            for head in range(heads):
                for kind, count in (("top", TOP_K), ("decile", DECILES)):
                    for rank in range(count):
                        text = texts[rank % len(texts)]
                        n = token_counts[text]
                        keys = [0, 1][:n]
                        for name, value in zip(rows, (statistic, layer, head, kind, rank, text, n - 1,
                                                      1.0 - rank / 20, keys, [0.6, 0.3][:len(keys)])):
                            rows[name].append(value)
    table = pa.table({"statistic": pa.array(rows["statistic"], pa.string()),
                      "layer": pa.array(rows["layer"], pa.int16()), "head": pa.array(rows["head"], pa.int16()),
                      "kind": pa.array(rows["kind"], pa.string()), "rank": pa.array(rows["rank"], pa.int16()),
                      "text_index": pa.array(rows["text_index"], pa.int64()),
                      "query": pa.array(rows["query"], pa.int32()), "value": pa.array(rows["value"], pa.float64()),
                      "keys": pa.array(rows["keys"], pa.list_(pa.int32())),
                      "key_weights": pa.array(rows["key_weights"], pa.list_(pa.float32()))})
    pq.write_table(table, out / EXEMPLARS_FILE)
    tokens = [[f"t{text}_{position}" for position in range(token_counts[text])] for text in texts]
    tokens[0][-1] = "<img src=x onerror=alert(1)>"  # a corpus is data: the atlas must show this as text
    pq.write_table(pa.table({"text_index": pa.array(texts, pa.int64()),
                             "tokens": pa.array(tokens, pa.list_(pa.string())),
                             "text": pa.array([shard_texts[i][0] for i in texts], pa.string())}),
                   out / EXEMPLAR_TEXTS_FILE)


def read_shard_texts(out: Path) -> dict[int, tuple[str, int]]:
    """Text index → (text, token count) over a census folder's shards."""
    table = pa.concat_tables([pq.read_table(path, columns=["index", "text", "tokens"])
                              for path in sorted((out / "shards").glob("part-*.parquet"))])
    return {i: (text, n) for i, text, n in zip(*(table.column(name).to_pylist() for name in ("index", "text",
                                                                                            "tokens")))}


def complete_atlas_folder(out: Path) -> Path:
    """Add roles and exemplars to the census in ``out`` (read from its manifest's shape and its shards)."""
    shape = tuple(json.loads((out / "manifest.json").read_text())["shape"])
    write_roles(out, shape)
    write_exemplars(out, shape, read_shard_texts(out))
    return out
