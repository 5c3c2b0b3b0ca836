"""Issue 41, Build 1: a census's exemplars (inspector/analyses/census/exemplars.py, exemplar_files.py) equal a brute
force over every text's own weights on BERT-, GPT-2- and Llama-style models with ragged lengths; the local and Ray
engines and a resumed run give the same files; decile samples follow the seed; crafted exemplar files are one clear
line and are never written."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from inspector.analyses.census.exemplar_files import EXEMPLAR_TEXTS_FILE, EXEMPLARS_FILE, read_exemplars
from inspector.analyses.census.exemplars import DECILES, EXEMPLAR_STATISTICS, LOWEST_FIRST, VALUE_DECIMALS
from inspector.analyses.census.input import read_input
from inspector.analyses.census.run import census
from inspector.analyses.census.store import CensusFolderError
from inspector.base.assets import REPO_ROOT
from tests.test_census import _corpus

K = 5
TOLERANCE = 1e-5


def _brute_force(loaded, texts: dict[int, str]) -> dict[tuple[int, int, int], list[tuple]]:
    """Every eligible row of every text, each text alone with all its layers' weights materialised: (statistic
    number, layer, head) → [(text index, query, value, keys, weights)], by the rules of the exemplars module."""

    from inspector.core.forward import encode_text, forward
    from kernels.reference import visible_keys_mask

    rows: dict[tuple[int, int, int], list[tuple]] = {}
    for index, text in texts.items():
        inputs = encode_text(loaded, text).inputs
        ids = inputs["input_ids"][0].tolist()
        records = forward(loaded, inputs, weights_layers="all").records
        n = len(ids)
        for layer, record in enumerate(records):
            weights = record.weights[0].double().numpy()  # (H, T, T)
            visible = visible_keys_mask(n, n, causal=record.causal, window=record.window, device="cpu")[0, 0]
            sees = visible.sum(dim=-1).numpy()
            for head in range(weights.shape[0]):
                for q in range(n):
                    if sees[q] < 2:
                        continue
                    p = weights[head, q]
                    copies = [j for j in range(1, q + 1) if ids[j - 1] == ids[q]]
                    values = {"low_entropy": -(p[p > 0] * np.log(p[p > 0])).sum(), "sink_mass": p[0],
                              "previous_token": p[q - 1] if q >= 1 else None,
                              "induction": p[copies].sum() if copies else None,
                              "distance": (p * np.abs(q - np.arange(n))).sum()}
                    heavy = sorted((j for j in range(n) if p[j] > 0), key=lambda j: (-p[j], j))[:3]
                    for s, statistic in enumerate(EXEMPLAR_STATISTICS):
                        if values[statistic] is not None:
                            rows.setdefault((s, layer, head), []).append(
                                (index, q, round(float(values[statistic]), VALUE_DECIMALS), heavy,
                                 [float(p[j]) for j in heavy]))
    for (s, _, _), candidates in rows.items():
        sign = 1 if EXEMPLAR_STATISTICS[s] in LOWEST_FIRST else -1
        candidates.sort(key=lambda row: (sign * row[2], row[0], row[1]))  # best first, ties by text then query
    return rows


def _measured_texts(data: Path, out: Path) -> dict[int, str]:
    refused = {json.loads(line)["index"] for line in (out / "errors.jsonl").read_text().splitlines()}
    return {row.index: row.value for row in read_input(data).rows if row.index not in refused}


def _groups(table: pa.Table) -> dict[tuple[int, int, int, str], list[dict]]:
    groups: dict[tuple[int, int, int, str], list[dict]] = {}
    for row in table.to_pylist():
        key = (EXEMPLAR_STATISTICS.index(row["statistic"]), row["layer"], row["head"], row["kind"])
        groups.setdefault(key, []).append(row)
    return groups


def _assert_row_is(row: dict, expected: tuple, context: str) -> None:
    """``row`` is the brute force's row ``expected``: the same value, and the same heaviest keys and weights."""
    assert abs(row["value"] - expected[2]) <= TOLERANCE, context
    assert row["keys"] == expected[3], context
    np.testing.assert_allclose(row["key_weights"], expected[4], atol=TOLERANCE, err_msg=context)


@pytest.mark.parametrize("arch", ["bert", "gpt2", "llama"])
def test_exemplars_equal_a_brute_force_over_every_text(tiny_model_dirs, tiny_models, tmp_path, arch):
    """Top K and deciles against every row of every text scored alone. Near-ties (values within float rounding)
    may order either way, so each rank is checked by value, and the row there must be that value's row."""
    data, out = _corpus(tmp_path), tmp_path / "out"
    census(str(tiny_model_dirs[arch]), data, out=out, shard_size=8, batch_tokens=64, exemplars=K, progress=None)
    exemplars = read_exemplars(out)
    texts = _measured_texts(data, out)
    expected = _brute_force(tiny_models[arch], texts)
    groups = _groups(exemplars.table)
    layers, heads = json.loads((out / "manifest.json").read_text())["shape"]
    assert len(expected) == len(EXEMPLAR_STATISTICS) * layers * heads  # every statistic has rows, induction too
    for (s, layer, head), candidates in expected.items():
        context = f"{arch} {EXEMPLAR_STATISTICS[s]} L{layer}H{head}"
        by_row = {(c[0], c[1]): c for c in candidates}
        top = groups[(s, layer, head, "top")]
        assert [row["rank"] for row in top] == list(range(min(K, len(candidates)))), context
        for row, best in zip(top, candidates):
            assert abs(row["value"] - best[2]) <= TOLERANCE, context  # the K best values, in order
            _assert_row_is(row, by_row[(row["text_index"], row["query"])], context)
        # Deciles: the texts' extremes ranked best first; the seed's draw picks a rank in each decile.
        extremes = {}
        for candidate in candidates:
            extremes.setdefault(candidate[0], candidate)  # candidates are best first: a text's first is its best
        ranked = list(extremes.values())
        deciles = groups[(s, layer, head, "decile")]
        cut = np.arange(len(ranked)) * DECILES // len(ranked)
        assert [row["rank"] for row in deciles] == sorted(set(cut.tolist())), context
        generator = np.random.default_rng([0, s, layer, head])
        filled = np.unique(cut)
        drawn = np.searchsorted(cut, filled) + generator.integers(0, np.bincount(cut)[filled])
        for row, position in zip(deciles, drawn):
            assert abs(row["value"] - ranked[position][2]) <= TOLERANCE, context
            _assert_row_is(row, extremes[row["text_index"]], context)
    # Every text an exemplar names is there with its tokens and text.
    named = set(exemplars.table.column("text_index").to_pylist())
    assert set(exemplars.texts) == named == set(exemplars.sources)
    for index in named:
        assert exemplars.sources[index] == texts[index]
        ids = tiny_models[arch].codec.input_ids(texts[index])
        assert list(exemplars.texts[index]) == tiny_models[arch].codec.token_strings(ids)


def _files(folder: Path) -> dict[str, bytes]:
    return {name: (folder / name).read_bytes() for name in (EXEMPLARS_FILE, EXEMPLAR_TEXTS_FILE)}


def _assert_same_exemplars(first: Path, second: Path) -> None:
    a, b = (pq.read_table(folder / EXEMPLARS_FILE) for folder in (first, second))
    assert a.num_rows == b.num_rows > 0
    for name in a.schema.names:
        if name == "value":  # float32 row sums of two batchings: 2e-6 apart on a distance of 7.5 tokens
            np.testing.assert_allclose(a.column(name).to_numpy(), b.column(name).to_numpy(), atol=TOLERANCE)
        elif name == "key_weights":
            np.testing.assert_allclose(np.concatenate(a.column(name).to_pylist()),
                                       np.concatenate(b.column(name).to_pylist()), atol=TOLERANCE)
        else:
            assert a.column(name).to_pylist() == b.column(name).to_pylist(), name
    assert pq.read_table(first / EXEMPLAR_TEXTS_FILE).equals(pq.read_table(second / EXEMPLAR_TEXTS_FILE))


@pytest.fixture(scope="module")
def gpt2_exemplars(tiny_model_dirs, tmp_path_factory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("exemplars")
    data = _corpus(folder)
    out = folder / "out"
    census(str(tiny_model_dirs["gpt2"]), data, out=out, shard_size=8, batch_tokens=64, exemplars=K, progress=None)
    return data, out


def test_a_resumed_run_keeps_the_exemplars(tiny_model_dirs, gpt2_exemplars, tmp_path):
    data, full = gpt2_exemplars

    def stop_after_first_shard(done: int, total: int, note: str) -> None:
        raise KeyboardInterrupt

    stopped = tmp_path / "stopped"
    spec = str(tiny_model_dirs["gpt2"])
    with pytest.raises(KeyboardInterrupt):
        census(spec, data, out=stopped, shard_size=8, batch_tokens=64, exemplars=K, progress=stop_after_first_shard)
    assert not (stopped / EXEMPLARS_FILE).exists() and (stopped / "shards" / "exemplars-00000.parquet").exists()
    census(spec, data, out=stopped, shard_size=8, batch_tokens=64, exemplars=K, progress=None)
    _assert_same_exemplars(full, stopped)
    with pytest.raises(CensusFolderError, match="exemplars"):  # another K is another census
        census(spec, data, out=stopped, shard_size=8, batch_tokens=64, exemplars=K + 1, progress=None)


def test_decile_samples_follow_the_seed(tiny_model_dirs, gpt2_exemplars, tmp_path):
    data, first = gpt2_exemplars
    spec = str(tiny_model_dirs["gpt2"])
    again = tmp_path / "again"
    census(spec, data, out=again, shard_size=8, batch_tokens=64, exemplars=K, progress=None)
    assert _files(again) == _files(first)  # the same seed: the same bytes
    other = tmp_path / "other"
    census(spec, data, out=other, shard_size=8, batch_tokens=64, exemplars=K, exemplar_seed=7, progress=None)
    a, b = (pq.read_table(folder / EXEMPLARS_FILE).to_pylist() for folder in (first, other))
    tops = [[row for row in rows if row["kind"] == "top"] for rows in (a, b)]
    assert tops[0] == tops[1]  # the seed draws the deciles only
    samples = [[(row["text_index"], row["query"]) for row in rows if row["kind"] == "decile"] for rows in (a, b)]
    assert len(samples[0]) == len(samples[1]) and samples[0] != samples[1]


@pytest.mark.slow
def test_ray_engine_gives_the_same_exemplar_bytes_as_local(local_ray, tmp_path):
    """Equal by construction, not within a tolerance: an actor measures a whole shard, so in the local engine's
    batches (actors once took 256 rows a call: these 3 shards' 40 texts in one call, bucketed together), with
    numbers no thread count changes (an actor runs 1 torch thread, this process its own count). Every exemplar
    file — top rows, decile samples, their texts — and every shard file are the same bytes. MiniLM, not a tiny
    model: its float32 values move with the batching and the threads; a tiny model's did not."""
    corpus = REPO_ROOT / "assets" / "corpus" / "census-sentences.txt"  # local_ray: ray[data] is pinned
    local, ray = tmp_path / "local", tmp_path / "ray"
    for engine, out in (("local", local), ("ray", ray)):
        census("default", corpus, out=out, engine=engine, actors=2, limit=40, shard_size=16, exemplars=K,
               progress=None)
    assert _files(ray) == _files(local)
    shards = sorted(path.name for path in (local / "shards").iterdir())
    assert len([name for name in shards if name.startswith("exemplars-")]) == 3
    assert sorted(path.name for path in (ray / "shards").iterdir()) == shards
    for name in shards:  # statistics, each text's extremes, each shard's top rows, errors
        assert (ray / "shards" / name).read_bytes() == (local / "shards" / name).read_bytes(), name


def _rewrite(path: Path, edit) -> None:
    table = pq.read_table(path)
    pq.write_table(edit(table), path)


def _set(table: pa.Table, name: str, values: list) -> pa.Table:
    return table.set_column(table.schema.get_field_index(name), table.schema.field(name), pa.array(
        values, table.schema.field(name).type))


def _first(table: pa.Table, name: str, value) -> pa.Table:
    values = table.column(name).to_pylist()
    return _set(table, name, [value, *values[1:]])


_CRAFTED = {
    "wrong schema": lambda t: t.drop_columns(["keys"]),
    "a column of another type": lambda t: t.set_column(t.schema.get_field_index("rank"), "rank",
                                                       t.column("rank").cast(pa.int64())),
    "huge K": lambda t: pa.concat_tables([t] + [_set(t, "rank", [r + 100 * (i + 1) for r in t.column(
        "rank").to_pylist()]) for i in range(2)]),
    "a rank twice": lambda t: pa.concat_tables([t, t.slice(0, 1)]),
    "NaN": lambda t: _first(t, "value", float("nan")),
    "query past its text": lambda t: _first(t, "query", 10_000),
    "key past its text": lambda t: _first(t, "keys", [10_000, *t.column("keys")[0].as_py()[1:]]),
    "a weight above 1": lambda t: _first(t, "key_weights", [2.0, *t.column("key_weights")[0].as_py()[1:]]),
    "keys without weights": lambda t: _first(t, "key_weights", []),
    "a layer outside the model": lambda t: _first(t, "layer", 99),
    "an unknown statistic": lambda t: _first(t, "statistic", "charm"),
}


@pytest.mark.parametrize("case", sorted(_CRAFTED))
def test_a_crafted_exemplar_file_is_one_clear_line_and_is_never_written(gpt2_exemplars, tmp_path, case):
    out = tmp_path / "crafted"
    shutil.copytree(gpt2_exemplars[1], out)
    _rewrite(out / EXEMPLARS_FILE, _CRAFTED[case])
    before = {p.name: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    with pytest.raises(CensusFolderError) as refused:
        read_exemplars(out)
    message = str(refused.value)
    assert "\n" not in message and EXEMPLARS_FILE in message, message
    assert {p.name: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before


def test_crafted_exemplar_texts_and_links_are_refused(gpt2_exemplars, tmp_path):
    out = tmp_path / "crafted"
    shutil.copytree(gpt2_exemplars[1], out)
    _rewrite(out / EXEMPLAR_TEXTS_FILE, lambda t: _set(t, "tokens", [["x"]] * t.num_rows))  # texts of one token
    with pytest.raises(CensusFolderError, match="outside its text"):
        read_exemplars(out)
    (out / EXEMPLAR_TEXTS_FILE).unlink()
    (out / EXEMPLAR_TEXTS_FILE).symlink_to(gpt2_exemplars[1] / EXEMPLAR_TEXTS_FILE)
    with pytest.raises(CensusFolderError, match="not a regular file"):
        read_exemplars(out)


def test_a_census_without_exemplars_has_none(tiny_model_dirs, tmp_path):
    out = tmp_path / "plain"
    census(str(tiny_model_dirs["bert"]), _corpus(tmp_path), out=out, limit=5, progress=None)
    assert read_exemplars(out) is None and not list((out / "shards").glob("exemplars-*"))


def test_cli_keeps_exemplars_and_refuses_a_k_past_100(tiny_model_dirs, tmp_path, capsys):
    from inspector.cli import main

    arguments = ["census", "--model", str(tiny_model_dirs["llama"]), "--data", str(_corpus(tmp_path)), "--limit", "6"]
    assert main([*arguments, "--out", str(tmp_path / "big"), "--exemplars", "101"]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "--exemplars must be a whole number from 1 to 100" in error
    assert not (tmp_path / "big").exists()
    assert main([*arguments, "--out", str(tmp_path / "out"), "--exemplars", "3", "--exemplar-seed", "2"]) == 0
    assert "exemplars.parquet" in capsys.readouterr().out
    table = read_exemplars(tmp_path / "out").table
    assert max(table.filter(pc.equal(table.column("kind"), "top")).column("rank").to_pylist()) == 2
    assert json.loads((tmp_path / "out" / "manifest.json").read_text())["exemplar_seed"] == 2


def test_heaviest_keys_are_ordered_by_weight_then_position_and_clipped_to_one():
    """The benchmark on the real model met a weight of 1.0000001 (exp(S − LSE) rounding), which the reader then
    refused; equal weights order by position — also when they tie for the last of the TOP_KEYS places — and keys
    of weight 0 are not keys."""
    import torch

    from inspector.analyses.census.row_keys import heaviest_keys, heaviest_order

    weights = torch.tensor([[0.0, 0.25, 0.5, 0.0, 0.25, 0.0],  # one row a line, n = 6
                            [1.0000001, 0.0, 0.0, 0.0, 0.0, 0.0],
                            [0.0, 0.25, 0.25, 0.25, 0.25, 0.0]])
    ordered_keys, ordered_weights = heaviest_keys(heaviest_order(weights).numpy())
    assert ordered_keys.tolist() == [[2, 1, 4], [0, -1, -1], [1, 2, 3]]
    assert ordered_weights.tolist() == [[0.5, 0.25, 0.25], [1.0, 0.0, 0.0], [0.25, 0.25, 0.25]]
    narrow_keys, narrow_weights = heaviest_keys(heaviest_order(torch.tensor([[0.5, 0.5]])).numpy())
    assert narrow_keys.tolist() == [[0, 1, -1]] and narrow_weights.tolist() == [[0.5, 0.5, 0.0]]


def test_a_batchs_top_rows_are_each_cells_top_k_past_the_cut_off_on_both_paths():
    """The row sink's choice of a batch's top rows (row_keys.top_rows_of_cells: NumPy on the CPU, torch on other
    devices) against a sort by hand: per cell and shard the k highest keys at or above the shard's threshold, with
    rows of no candidate, several shards in one batch (no census caller makes one yet) and k up to the width."""
    import torch

    from inspector.analyses.census.row_keys import MISSING, _top_rows_numpy, _top_rows_torch

    rng = np.random.default_rng(7)
    shapes_seen = set()
    for _ in range(150):
        cells, width = int(rng.integers(1, 6)), int(rng.integers(1, 40))
        shards, k = int(min(rng.integers(1, 4), width)), int(rng.integers(1, width + 1))
        keys = np.stack([rng.permutation(width) * 7 - 100 for _ in range(cells)]).astype(np.int64)
        keys[rng.random((cells, width)) < 0.2] = MISSING
        shard_of_row = None if shards == 1 else np.concatenate([np.arange(shards), rng.integers(
            0, shards, width - shards)]).astype(np.int64)[None, :]
        thresholds = None if rng.random() < 0.3 else rng.integers(-150, 200, (cells, shards)).astype(np.int64)
        expected = []
        for cell in range(cells):
            for shard in range(shards):
                rows = [row for row in range(width) if keys[cell, row] != MISSING
                        and (shard_of_row is None or shard_of_row[0, row] == shard)
                        and (thresholds is None or keys[cell, row] >= thresholds[cell, shard])]
                expected += [cell * width + row for row in sorted(rows, key=lambda row: -keys[cell, row])[:k]]
        shapes_seen.add((shards > 1, thresholds is None, len(expected) > 0))
        found = _top_rows_numpy(keys, thresholds, shard_of_row, k)
        on_torch = _top_rows_torch(torch.from_numpy(keys), None if thresholds is None else torch.from_numpy(thresholds),
                                   None if shard_of_row is None else torch.from_numpy(shard_of_row), k).numpy()
        assert found.tolist() == on_torch.tolist() == sorted(expected)
    assert {(True, False, True), (True, True, True), (False, False, True), (False, True, True)} <= shapes_seen


def test_the_deciles_draws_for_every_head_at_once_equal_numpy_generators():
    """census/seeded_draws.py gives, for many entropies at once, what a numpy.random.default_rng each gives: bounds
    that draw nothing (1) or are skipped (0) anywhere in a row, bounds up to 2^32 (Lemire's rejections, and more
    words than are made ahead: the generator itself), a seed past 2^32 (the generator itself)."""
    from inspector.analyses.census.seeded_draws import seeded_integers

    rng = np.random.default_rng(11)
    checked = 0
    for trial in range(150):
        count = int(rng.integers(1, 40))
        seed = [0, 7, 2**32 - 1, 2**40][trial % 4]
        entropy = rng.integers(0, [2**32, 100][trial % 2], (count, 3))
        bounds = rng.integers(1, [3, 20, 1000, 2**31, 2**32][trial % 5] + 1, (count, 10))
        bounds[rng.random(bounds.shape) < 0.3] = 0
        drawn = seeded_integers(seed, entropy, bounds)
        for row in range(count):
            mine = bounds[row] > 0
            expected = np.random.default_rng([seed, *entropy[row].tolist()]).integers(0, bounds[row][mine])
            assert drawn[row][mine].tolist() == expected.tolist() and not drawn[row][~mine].any()
            checked += 1
    assert checked > 2000


def test_the_row_sinks_torch_path_writes_the_numpy_paths_files(tiny_model_dirs, gpt2_exemplars, tmp_path,
                                                                  monkeypatch):
    """On the CPU the row sink's key steps run in NumPy (census/row_keys.py); on other devices in torch. Both,
    run here on the CPU, write the same bytes."""
    from inspector.analyses.census import row_keys

    data, numpy_path = gpt2_exemplars
    monkeypatch.setattr(row_keys, "NUMPY_ON_CPU", False)
    torch_path = tmp_path / "torch"
    census(str(tiny_model_dirs["gpt2"]), data, out=torch_path, shard_size=8, batch_tokens=64, exemplars=K,
           progress=None)
    assert _files(torch_path) == _files(numpy_path)
    for path in sorted((numpy_path / "shards").glob("*.parquet")):
        assert (torch_path / "shards" / path.name).read_bytes() == path.read_bytes(), path.name


def test_ranking_layers_one_at_a_time_or_together_writes_the_same_files(tiny_model_dirs, gpt2_exemplars, tmp_path,
                                                                           monkeypatch):
    """The row sink ranks a small batch's layers together and a large batch's one at a time
    (exemplars._HELD_ELEMENTS): both give the same bytes."""
    from inspector.analyses.census import exemplars

    data, together = gpt2_exemplars
    monkeypatch.setattr(exemplars, "_HELD_ELEMENTS", 1)  # every layer ranked as it comes
    alone = tmp_path / "alone"
    census(str(tiny_model_dirs["gpt2"]), data, out=alone, shard_size=8, batch_tokens=64, exemplars=K, progress=None)
    assert _files(alone) == _files(together)
    for path in sorted((together / "shards").glob("*.parquet")):
        assert (alone / "shards" / path.name).read_bytes() == path.read_bytes(), path.name
