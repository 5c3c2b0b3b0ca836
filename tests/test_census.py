"""inspector/analyses/census/ (issue 16): batched statistics equal single-text runs on BERT, GPT-2 and Llama-style
models
with ragged lengths; the local and Ray engines write the same folder; a stopped run resumes without writing a
shard twice; bad rows land in errors.jsonl; a different model or input is refused; the CLI and the Heads page
read a census folder (never in hosted mode)."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from inspector.analyses.batching import STATISTICS, length_buckets
from inspector.analyses.census.input import InputRow
from inspector.analyses.census.measure import measure_rows
from inspector.analyses.census.run import census
from inspector.analyses.census.store import CensusFolderError
from inspector.analyses.census.summary import read_census
from inspector.analyses.heads import head_report
from inspector.analyses.metrics import TOKEN_CATEGORIES, head_entropy
from inspector.core.capture import capture
from tests.conftest import VOCAB_WORDS

TOLERANCE = 1e-5
_MASSES = ("mass_cls", "mass_sep", "mass_punctuation", "mass_self", "mass_previous", "mass_next")


def ragged_texts(count: int, seed: int = 0) -> list[str]:
    """Texts of 1 to 20 words from the tiny tokenizer's vocabulary (punctuation included), lengths all different
    enough that every batch is padded."""
    generator = random.Random(seed)
    return [" ".join(generator.choice(VOCAB_WORDS) for _ in range(generator.randint(1, 20))) for _ in range(count)]


@pytest.mark.parametrize("arch", ["bert", "gpt2", "llama"])
def test_batched_statistics_equal_single_text_runs(tiny_models, arch):
    loaded = tiny_models[arch]
    texts = ragged_texts(9, seed=len(arch))
    rows = [InputRow(i, f"t:{i}", text) for i, text in enumerate(texts)]
    # 60 padded tokens per batch and generous padding: several batches, each mixing lengths, so padding is
    # exercised everywhere.
    measured, errors = measure_rows(loaded, rows, batch_tokens=60, backend="torch", max_padding=0.25)
    assert errors == [] and [m.index for m in measured] == list(range(len(texts)))
    lengths = [m.tokens for m in measured]
    assert len(set(lengths)) > 3
    assert any(len(b) > 1 and len({lengths[i] for i in b}) > 1 for b in length_buckets(lengths, 60, 0.25))
    for item in measured:
        expected = single_text_statistics(loaded, item.text)
        for name in STATISTICS:
            np.testing.assert_allclose(item.statistics[name], expected[name], atol=TOLERANCE, rtol=0,
                                       equal_nan=True, err_msg=f"{arch} text {item.index} {name}")
        entropy = head_entropy(capture(loaded, item.text, backend="torch", weights=None))
        np.testing.assert_allclose(item.statistics["entropy"], entropy.raw, atol=TOLERANCE, rtol=0)
    # The Heads report takes these numbers with the census's reductions (batching.batch_statistics); against the
    # metric functions on the one text's own weights they are the same too.
    report = head_report(loaded, texts[0], backend="torch", pairs=1, pruning_step=1.0).statistics
    expected = single_text_statistics(loaded, texts[0])
    as_report = {"entropy": report.entropy, "entropy_normalized": report.entropy_normalized,
                 "first_token_sink": report.first_token_sink, "max_sink_score": report.max_sink_score,
                 "mean_distance": report.mean_distance,
                 **{f"mass_{name}": report.token_mass[..., c]
                    for c, name in enumerate(("cls", "sep", "punctuation", "self", "previous", "next"))}}
    assert set(as_report) == set(STATISTICS)
    for name in STATISTICS:
        np.testing.assert_allclose(as_report[name], expected[name], atol=TOLERANCE, rtol=0, equal_nan=True,
                                   err_msg=f"{arch} Heads report {name}")
    # The fixture must contain what the masses measure: punctuation tokens and, for BERT, [CLS]/[SEP].
    assert any("." in text for text in texts)
    stacked = np.stack([m.statistics["mass_cls"] for m in measured])
    assert (stacked > 0).any() and np.isfinite(stacked).all()


def single_text_statistics(loaded, text: str) -> dict[str, np.ndarray]:
    """One text alone, with every layer's weights kept, reduced by the Heads page's metric functions exactly as
    inspector.analyses.heads._text_statistics does."""
    import torch

    from inspector.analyses.metrics import (
        head_entropy_from_rows,
        mean_attention_distance,
        sink_scores,
        token_category_mass,
    )
    from inspector.core.forward import encode_text, forward
    from kernels.reference import visible_keys_mask

    inputs = encode_text(loaded, text).inputs
    records = forward(loaded, inputs, weights_layers="all").records
    weights = torch.stack([r.weights[0] for r in records]).float().numpy()  # (L, H, T, T)
    n = weights.shape[-1]
    visible = torch.stack([visible_keys_mask(n, n, causal=r.causal, window=r.window, device="cpu")[0, 0]
                           for r in records]).numpy()
    entropy = head_entropy_from_rows(torch.stack([r.stats["entropy"][0] for r in records]).float().numpy(),
                                     visible.sum(axis=-1))
    ids = inputs["input_ids"][0].tolist()
    special = np.array([i in set(loaded.tokenizer.all_special_ids) for i in ids])
    masses = token_category_mass(weights, loaded.tokenizer.convert_ids_to_tokens(ids), special)
    scores = sink_scores(weights, visible)
    expected = {"entropy": entropy.raw, "entropy_normalized": entropy.normalized,
                "first_token_sink": scores[..., 0], "max_sink_score": scores.max(axis=-1),
                "mean_distance": mean_attention_distance(weights)}
    expected.update({name: masses[..., TOKEN_CATEGORIES.index(category)]
                     for name, category in zip(_MASSES, TOKEN_CATEGORIES)})
    return expected


def _corpus(folder: Path) -> Path:
    """A small .txt corpus with bad rows: an empty line, a row past the tiny models' 64 positions."""
    texts = ragged_texts(23, seed=3)
    texts[4] = ""
    texts[11] = " ".join(["cat"] * 80)
    path = folder / "corpus.txt"
    path.write_text("# a comment line, not a row\n" + "\n".join(texts) + "\n", encoding="utf-8")
    return path


def _rows(out: Path) -> dict[int, dict]:
    rows: dict[int, dict] = {}
    for path in sorted((out / "shards").glob("part-*.parquet")):
        for row in pq.read_table(path).to_pylist():
            assert row["index"] not in rows, f"text {row['index']} written twice"
            rows[row["index"]] = row
    return rows


def _assert_same_census(first: Path, second: Path) -> None:
    a, b = _rows(first), _rows(second)
    assert sorted(a) == sorted(b)
    for index in a:
        assert a[index]["text"] == b[index]["text"] and a[index]["tokens"] == b[index]["tokens"]
        for name in STATISTICS:
            np.testing.assert_allclose(np.array(a[index][name], float), np.array(b[index][name], float),
                                       atol=TOLERANCE, equal_nan=True)
    assert (first / "errors.jsonl").read_text() == (second / "errors.jsonl").read_text()
    summary_a, summary_b = (json.loads((f / "summary.json").read_text()) for f in (first, second))
    assert summary_a["flags"] == summary_b["flags"] and summary_a["texts"] == summary_b["texts"]
    for name in STATISTICS:
        np.testing.assert_allclose(np.array(summary_a["statistics"][name]["mean"], float),
                                   np.array(summary_b["statistics"][name]["mean"], float), atol=TOLERANCE)


@pytest.mark.slow
def test_ray_engine_writes_the_same_folder_as_local(tiny_model_dirs, local_ray, tmp_path):
    # local_ray: no importorskip, this test must run (ray[data] is pinned in requirements.txt)
    spec, data = str(tiny_model_dirs["bert"]), _corpus(tmp_path)
    local = census(spec, data, out=tmp_path / "local", shard_size=8, batch_tokens=64, progress=None)
    distributed = census(spec, data, out=tmp_path / "ray", engine="ray", actors=2, shard_size=8, batch_tokens=64,
                         progress=None)
    assert local.texts == distributed.texts == 21 and local.errors == distributed.errors == 2
    _assert_same_census(tmp_path / "local", tmp_path / "ray")
    manifest = json.loads((tmp_path / "ray" / "manifest.json").read_text())
    assert manifest["engine"] == "ray" and manifest["finished"] is not None


def test_a_stopped_run_resumes_without_writing_a_shard_twice(tiny_model_dirs, tmp_path):
    spec, data = str(tiny_model_dirs["gpt2"]), _corpus(tmp_path)
    full = tmp_path / "full"
    census(spec, data, out=full, shard_size=8, batch_tokens=64, progress=None)

    def stop_after_first_shard(done: int, total: int, note: str) -> None:
        raise KeyboardInterrupt  # what Ctrl-C does between two shards

    stopped = tmp_path / "stopped"
    with pytest.raises(KeyboardInterrupt):
        census(spec, data, out=stopped, shard_size=8, batch_tokens=64, progress=stop_after_first_shard)
    kept = sorted((stopped / "shards").glob("part-*.parquet"))
    assert [p.name for p in kept] == ["part-00000.parquet"]
    first_written = kept[0].stat().st_mtime_ns
    summary = census(spec, data, out=stopped, shard_size=8, batch_tokens=64, progress=None)
    assert kept[0].stat().st_mtime_ns == first_written  # kept, not rewritten
    assert summary.texts == 21 and len(list((stopped / "shards").glob("*.tmp"))) == 0
    _assert_same_census(full, stopped)
    runs = json.loads((stopped / "manifest.json").read_text())["runs"]
    assert [(r["shards_kept"], r["shards_written"]) for r in runs] == [(0, 1), (1, 2)]


def test_bad_rows_land_in_errors_jsonl_and_never_stop_the_run(tiny_model_dirs, tmp_path):
    spec = str(tiny_model_dirs["bert"])
    folder = tmp_path / "input"
    folder.mkdir()
    (folder / "a.jsonl").write_text("\n".join([json.dumps({"text": "the cat sat ."}), json.dumps({"text": 42}),
                                               "{not json", json.dumps({"body": "no text key"}),
                                               json.dumps({"text": "   "})]) + "\n")
    (folder / "b.txt").write_text("a dog ran fast\n" + " ".join(["dog"] * 90) + "\n")
    (folder / "notes.md").write_text("ignored: not an input suffix\n")
    summary = census(spec, folder, out=tmp_path / "out", progress=None)
    errors = [json.loads(line) for line in (tmp_path / "out" / "errors.jsonl").read_text().splitlines()]
    assert summary.texts == 2 and summary.errors == 5 == len(errors)
    reasons = {e["origin"]: e["reason"] for e in errors}
    assert "not text" in reasons["a.jsonl:2"] and "not JSON" in reasons["a.jsonl:3"]
    assert "no key 'text'" in reasons["a.jsonl:4"] and reasons["a.jsonl:5"] == "empty text"
    assert "92 tokens" in reasons["b.txt:2"] and "reads at most 64" in reasons["b.txt:2"]
    truncated = census(spec, folder, out=tmp_path / "truncated", truncate=True, progress=None)
    assert truncated.texts == 3 and truncated.errors == 4


def test_a_different_model_or_input_is_refused(tiny_model_dirs, tmp_path):
    data, out = _corpus(tmp_path), tmp_path / "out"
    census(str(tiny_model_dirs["bert"]), data, out=out, limit=5, progress=None)
    with pytest.raises(CensusFolderError, match="different model fingerprint and model"):
        census(str(tiny_model_dirs["llama"]), data, out=out, limit=5, progress=None)
    with pytest.raises(CensusFolderError, match="input fingerprint"):
        census(str(tiny_model_dirs["bert"]), data, out=out, limit=6, progress=None)
    census(str(tiny_model_dirs["bert"]), data, out=out, limit=5, progress=None)  # the same: resumes, nothing to do
    assert read_census(out).texts == 4


def test_a_second_run_into_a_folder_being_written_is_refused_in_one_line(tiny_model_dirs, tmp_path):
    """Issue 33: two runs into one --out at once both computed every shard and one crashed on the other's
    temporary file. The folder is locked while a run writes: the second is refused at once, naming the folder,
    and the first run's folder is untouched."""
    from filelock import FileLock

    spec, data, out = str(tiny_model_dirs["bert"]), _corpus(tmp_path), tmp_path / "out"
    census(spec, data, out=out, limit=5, progress=None)
    before = {p.name: p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file()}
    with FileLock(out / ".census.lock", timeout=0):  # what a run in another process holds while it writes
        with pytest.raises(CensusFolderError, match=f"another census run is writing into {out} right now"):
            census(spec, data, out=out, limit=5, progress=None)
    assert {p.name: p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file()} == before
    census(spec, data, out=out, limit=5, progress=None)  # once the lock is free, the folder resumes
    assert read_census(out).texts == 4


def test_temporaries_a_killed_run_left_behind_never_block_or_stay(tiny_model_dirs, tmp_path):
    """Temporary files have unique names (``.NAME.XXXX.tmp``); a fresh folder holding only a killed run's
    leftovers is a new census, and the leftovers are removed under the lock."""
    spec, data, out = str(tiny_model_dirs["bert"]), _corpus(tmp_path), tmp_path / "out"
    (out / "shards").mkdir(parents=True)
    (out / ".manifest.json.k1ll3d.tmp").write_text("{half")
    (out / "shards" / ".part-00000.parquet.k1ll3d.tmp").write_bytes(b"PAR1 half")
    summary = census(spec, data, out=out, limit=5, progress=None)
    assert summary.texts == 4
    assert list(out.rglob("*.tmp")) == []


def test_the_same_model_named_with_a_trailing_slash_resumes(tiny_model_dirs, tmp_path):
    """Issue 33: a rerun naming the model folder as "m/" (or through a relative path) was refused as a
    different model."""
    data, out = _corpus(tmp_path), tmp_path / "out"
    folder = tiny_model_dirs["bert"]
    census(str(folder), data, out=out, limit=5, progress=None)
    census(str(folder) + "/", data, out=out, limit=5, progress=None)
    census(os.path.relpath(folder), data, out=out, limit=5, progress=None)
    runs = json.loads((out / "manifest.json").read_text())["runs"]
    assert [run["shards_written"] for run in runs] == [1, 0, 0]


@pytest.fixture(scope="module")
def tiny_census(tiny_model_dirs, tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("tiny-census")
    out = folder / "out"
    census(str(tiny_model_dirs["bert"]), _corpus(folder), out=out, shard_size=8, limit=12, progress=None)
    return out


def _files(folder: Path) -> dict[str, int]:
    return {str(p.relative_to(folder)): p.lstat().st_mtime_ns for p in folder.rglob("*")}


def _edit_json(path: Path, edit) -> None:
    payload = json.loads(path.read_text())
    edit(payload)
    path.write_text(json.dumps(payload))


def _write_shard_without_statistics(path: Path) -> None:
    import pyarrow as pa

    pq.write_table(pa.table({"index": pa.array([0, 1], pa.int64())}), path)


_CRAFTED = {
    "texts NaN": lambda out: _edit_json(out / "summary.json", lambda s: s.update(texts=float("nan"))),
    "texts many": lambda out: _edit_json(out / "summary.json", lambda s: s.update(texts="many")),
    "model missing": lambda out: _edit_json(out / "summary.json", lambda s: s.pop("model")),
    "model a string": lambda out: _edit_json(out / "summary.json", lambda s: s.update(model="bert")),
    "a statistic missing": lambda out: _edit_json(out / "summary.json", lambda s: s["statistics"].pop("entropy")),
    "shapes that do not match": lambda out: _edit_json(out / "summary.json", lambda s: s["statistics"]["entropy"]
                                                       .update(mean=[[0.5]])),
    "manifest a list": lambda out: (out / "manifest.json").write_text("[1, 2]"),
    "manifest shard_size 0": lambda out: _edit_json(out / "manifest.json", lambda m: m.update(shard_size=0)),
    "manifest shape of strings": lambda out: _edit_json(out / "manifest.json", lambda m: m.update(shape=["2", "x"])),
    "deeply nested summary": lambda out: (out / "summary.json").write_text("[" * 100_000 + "]" * 100_000),
    "summary a link to /dev/zero": lambda out: ((out / "summary.json").unlink(),
                                                (out / "summary.json").symlink_to("/dev/zero")),
    "wrong-schema shard": lambda out: ((out / "summary.json").unlink(),
                                       _write_shard_without_statistics(out / "shards" / "part-00000.parquet")),
    "symlinked shard": lambda out: ((out / "summary.json").unlink(), (out / "shards" / "part-00001.parquet").unlink(),
                                    (out / "shards" / "part-00001.parquet").symlink_to(
                                        out / "shards" / "part-00000.parquet")),
    "bad errors.jsonl": lambda out: ((out / "summary.json").unlink(),
                                     (out / "shards" / "part-00000.errors.jsonl").write_text("{not json\n")),
    "errors.jsonl without indices": lambda out: ((out / "summary.json").unlink(),
                                                 (out / "shards" / "part-00000.errors.jsonl").write_text('"x"\n')),
}


@pytest.mark.parametrize("case", sorted(_CRAFTED))
def test_a_crafted_census_folder_is_one_clear_line_and_is_never_written(tiny_census, tmp_path, case):
    """Issue 33: crafted folders raised exception boxes on the Heads page, and a folder without summary.json was
    written to although it was only read. Each is one line naming the file; the folder is left as it was."""
    import shutil

    out = tmp_path / "crafted"
    shutil.copytree(tiny_census, out, symlinks=True)
    _CRAFTED[case](out)
    before = _files(out)
    with pytest.raises(CensusFolderError) as refused:
        read_census(out)
    assert "\n" not in str(refused.value) and str(out) in str(refused.value)
    assert _files(out) == before


def test_reading_a_census_without_its_summary_rebuilds_it_in_memory_only(tiny_census, tmp_path):
    import shutil

    out = tmp_path / "no-summary"
    shutil.copytree(tiny_census, out)
    (out / "summary.json").unlink()
    (out / "errors.jsonl").unlink()
    before = _files(out)
    summary = read_census(out)
    assert summary.texts == read_census(tiny_census).texts == 10  # 12 rows, 2 of them errors
    assert _files(out) == before and not (out / "summary.json").exists()


def test_cli_writes_a_census_and_bad_input_is_one_line(tiny_model_dirs, tmp_path, capsys):
    from inspector.cli import main

    data = _corpus(tmp_path)
    arguments = ["census", "--model", str(tiny_model_dirs["bert"]), "--data", str(data), "--out",
                 str(tmp_path / "out"), "--limit", "6"]
    assert main(arguments) == 0
    printed = capsys.readouterr()
    assert f"{tmp_path / 'out'}/summary.json" in printed.out and "Census of 5 texts" in printed.out
    assert "texts/s" in printed.err and "ETA" in printed.err
    assert main(arguments[:3] + ["--data", str(tmp_path / "missing.txt"), "--out", str(tmp_path / "x")]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "does not exist" in error


def test_cli_refuses_a_column_typo_and_a_device_in_one_line(tiny_model_dirs, tmp_path, capsys):
    """Issue 45, item 7: a --column typo "succeeded" with 0 texts and NaN lines; /dev/zero "did not exist"."""
    from inspector.cli import main

    data = tmp_path / "texts.jsonl"
    data.write_text('{"text": "the cat sat", "id": 1}\n{"text": "a dog ran", "id": 2}\n', encoding="utf-8")
    arguments = ["census", "--model", str(tiny_model_dirs["bert"]), "--data", str(data), "--out"]
    assert main([*arguments, str(tmp_path / "typo"), "--column", "txet"]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "'txet'" in error and "'text'" in error and "--column" in error
    assert not (tmp_path / "typo" / "summary.json").exists()
    assert main([*arguments, str(tmp_path / "ok")]) == 0  # the right column still reads
    capsys.readouterr()
    assert main([*arguments[:4], "/dev/zero", "--out", str(tmp_path / "zero")]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "not a regular file" in error and "does not exist" not in error


@pytest.mark.parametrize("extra, message", [
    (["--shard-size", "0"], "--shard-size must be at least 1, got 0"),
    (["--batch-tokens", "0"], "--batch-tokens must be at least 1, got 0"),
    (["--batch-tokens", "-5"], "--batch-tokens must be at least 1, got -5"),
    (["--out", "/dev/null"], "--out /dev/null is a file, not a folder"),
    (["--out", "FILE"], "is a file, not a folder"),
    (["--data", "EMPTY"], "holds no rows to measure"),
])
def test_cli_census_refusals_are_one_line_and_exit_2(tiny_model_dirs, tmp_path, capsys, extra, message):
    """Issue 33: 0 for a size used to become the default silently; --out naming a file and an empty input used to
    end in a traceback or in "lowest nan" with exit 0."""
    from inspector.cli import main

    (tmp_path / "a-file.txt").write_text("not a folder\n")
    (tmp_path / "empty.txt").write_text("")
    extra = [{"FILE": str(tmp_path / "a-file.txt"), "EMPTY": str(tmp_path / "empty.txt")}.get(a, a) for a in extra]
    arguments = ["census", "--model", str(tiny_model_dirs["bert"]), "--data", str(_corpus(tmp_path)), "--out",
                 str(tmp_path / "out"), *extra]
    assert main(arguments) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and message in error and "Traceback" not in error


def test_summary_intervals_stay_inside_what_each_statistic_can_take():
    """A head whose every text scores 0 (a collapsed head's normalised entropy) or near 1 (a sink) gets an
    interval inside [0, 1], not −0.01–0.01 or 0.86–1.08."""
    from inspector.analyses.batching import STATISTIC_RANGES
    from inspector.analyses.census.summary import summarise

    rng = np.random.default_rng(0)
    values = {name: rng.uniform(0.0, 1.0, size=(6, 2, 3)).astype(np.float32) for name in STATISTICS}
    values["entropy_normalized"][:, 0, 0] = [0.0, 0.0, 0.0, 0.0, 0.0, 0.02]
    values["first_token_sink"][:, 1, 2] = [1.0, 1.0, 0.9, 1.0, 1.0, 0.8]
    summary = summarise(values, model={"spec": "test", "num_layers": 2, "num_heads": 3}, errors=0, tokens=60)
    assert summary.low["entropy_normalized"][0, 0] == 0.0 < summary.high["entropy_normalized"][0, 0]
    assert summary.low["first_token_sink"][1, 2] < summary.high["first_token_sink"][1, 2] == 1.0
    for name, (bottom, top) in STATISTIC_RANGES.items():
        assert (summary.low[name] >= bottom).all() and (summary.high[name] <= top).all()


@pytest.fixture(scope="module")
def bundled_census(tmp_path_factory) -> Path:
    from inspector.analyses.heads import CORPUS_PATH

    out = tmp_path_factory.mktemp("census") / "bundled"
    census("default", CORPUS_PATH, out=out, limit=12, progress=None)
    return out


def test_the_heads_page_opens_a_census_folder(bundled_census):
    from streamlit.testing.v1 import AppTest

    from tests.conftest import APP_PATH

    at = AppTest.from_file(str(APP_PATH), default_timeout=240)
    at.run()
    at.session_state["heads_mode"] = "census"  # before the page runs: no head report is computed
    at.switch_page("views/heads.py").run()
    assert not at.exception, [e.value for e in at.exception]
    at.text_input(key="heads_census_path").set_value(str(bundled_census)).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    report = "\n".join(m.value for m in at.markdown).replace("\\", "")
    assert "Census of 12 texts" in report and "Layer 0 head 2: normalised entropy" in report
    titles = [json.loads(chart.proto.spec).get("title", {}).get("text") for chart in at.get("vega_lite_chart")]
    assert titles == ["Census: entropy normalized over 12 texts"]
    assert len(at.dataframe) == 1 and len(at.dataframe[0].value) == 72
    at.text_input(key="heads_census_path").set_value(str(bundled_census.parent / "nothing")).run()
    assert at.error and "not a census folder" in at.error[0].value


def test_markdown_in_a_census_manifest_is_shown_as_text(bundled_census, tmp_path):
    """Issue 33: a manifest's code_version of ``![](http://127.0.0.1:9/pixel.png) :red[RED] $\\sum$`` was
    rendered (the browser fetched the image). Every value read from the folder reaches the page escaped."""
    import shutil

    from streamlit.testing.v1 import AppTest

    from tests.conftest import APP_PATH

    folder = tmp_path / "crafted"
    shutil.copytree(bundled_census, folder)
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["code_version"] = "![](http://127.0.0.1:9/pixel.png) :red[RED] $\\sum$"
    manifest["engine"] = "**bold**"
    (folder / "manifest.json").write_text(json.dumps(manifest))
    at = AppTest.from_file(str(APP_PATH), default_timeout=240)
    at.run()
    at.session_state["heads_mode"] = "census"
    at.switch_page("views/heads.py").run()
    at.text_input(key="heads_census_path").set_value(str(folder)).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert not [c.value for c in at.caption if "Loading the model" in c.value]  # loaded, and nothing runs
    caption = next(c.value for c in at.caption if "pixel" in c.value)
    assert "![](" not in caption and ":red[" not in caption and "**bold**" not in caption
    assert caption.replace("\\", "").count("![](http://127.0.0.1:9/pixel.png) :red[RED] $sum$") == 1


def test_the_heads_page_never_opens_a_census_in_hosted_mode(bundled_census, monkeypatch):
    from views import session

    monkeypatch.setenv("INSPECTOR_HOSTED", "1")
    session.hosting_policy.clear()
    try:
        from streamlit.testing.v1 import AppTest

        from tests.conftest import APP_PATH

        at = AppTest.from_file(str(APP_PATH), default_timeout=240)
        at.query_params["heads_census_path"] = str(bundled_census)  # a link cannot carry the path either
        at.run()
        at.switch_page("views/heads.py").run()
        assert not at.exception
        assert "census" not in at.radio(key="heads_mode").options  # AppTest lists formatted labels too
        assert "Census folder" not in at.radio(key="heads_mode").options
        assert not [w for w in at.text_input if w.key == "heads_census_path"]
    finally:
        monkeypatch.delenv("INSPECTOR_HOSTED")
        session.hosting_policy.clear()


def test_census_chart_and_table_in_chinese_show_no_english_words(bundled_census):
    from inspector.analyses.census.summary import STATISTIC_UNITS
    from inspector.analyses.metrics import HealthThresholds
    from inspector.charts.census import census_grid_chart, census_table, statistic_name, statistic_unit
    from tests.chart_text import chart_strings, english_words

    # Thresholds that flag heads both ways, so the C / D marks and flags are drawn.
    summary = read_census(bundled_census, thresholds=HealthThresholds(collapsed=0.3, diffuse=0.7))
    assert summary.flags.collapsed.any() and summary.flags.diffuse.any()
    for statistic in STATISTICS:
        # English is the statistic's own name and unit, as the chart wrote them before the catalogue did.
        assert statistic_name(statistic) == statistic.replace("_", " ")
        assert statistic_unit(statistic) == STATISTIC_UNITS.get(statistic, "share")
        for slide in (False, True):
            chinese = census_grid_chart(summary, statistic, slide=slide, lang="zh").to_dict(validate=True)
            assert english_words(chart_strings(chinese)) == [], statistic
            english = census_grid_chart(summary, statistic, slide=slide).to_dict()
            assert english_words(chart_strings(english)), statistic  # the check can fail
        table = census_table(summary, statistic, "zh")
        words = [*map(str, table.columns), *(cell for cell in table.to_numpy().ravel() if isinstance(cell, str))]
        assert english_words(words) == [], statistic
    grid = census_grid_chart(summary, "entropy_normalized", lang="zh").to_dict()
    assert grid["title"]["text"] == "普查：12 条文本上的归一化熵"
    data = next(iter(grid["datasets"].values()))
    assert {row["mark"] for row in data} == {"坍", "弥", ""}
    assert list(census_table(summary, "entropy")) == ["layer", "head", "name", "mean", "low", "high", "texts", "flag"]


def test_summary_intervals_are_student_t_intervals_over_the_texts_that_measured():
    """Each head's interval is the 95 % Student-t interval of its mean over the texts with a finite value (a NaN
    text is skipped), as scipy.stats computes it."""
    from scipy import stats

    from inspector.analyses.census.summary import summarise

    rng = np.random.default_rng(0)
    values = {name: rng.normal(0.5, 0.2, size=(7, 2, 3)).astype(np.float32) for name in STATISTICS}
    values["entropy_normalized"][2, 0, 0] = np.nan  # a one-token text: skipped for that head only
    summary = summarise(values, model={"spec": "test", "num_layers": 2, "num_heads": 3}, errors=0, tokens=70)
    for name in ("entropy", "entropy_normalized"):
        for layer, head in ((0, 0), (1, 2)):
            sample = values[name][:, layer, head].astype(np.float64)
            sample = sample[np.isfinite(sample)]
            low, high = stats.t.interval(0.95, len(sample) - 1, loc=sample.mean(), scale=stats.sem(sample))
            assert summary.count[name][layer, head] == len(sample)
            np.testing.assert_allclose([summary.low[name][layer, head], summary.high[name][layer, head]],
                                       [low, high], rtol=1e-5)
    assert summary.count["entropy_normalized"][0, 0] == 6


# Characters str.splitlines() breaks at that are ordinary characters inside a line of a JSONL or text file.
_NOT_LINE_BREAKS = "\u2028\u2029\u0085\x0b\x0c\x1c\x1d\x1e"


def test_a_jsonl_input_keeps_every_record_whatever_characters_its_texts_hold(tmp_path):
    """Issue 33: json.dumps(..., ensure_ascii=False) writes U+2028 and friends as they are; four records are four
    rows, each with its own text and origin, and no "not JSON" error."""
    from inspector.analyses.census.input import read_input

    texts = [f"record {i} with {ch!r}: a{ch}b" for i, ch in enumerate(_NOT_LINE_BREAKS[:4])]
    source = tmp_path / "data.jsonl"
    source.write_bytes("".join(json.dumps({"text": text}, ensure_ascii=False) + "\r\n" for text in texts)
                      .encode("utf-8"))
    rows = read_input(source).rows
    assert [row.value for row in rows] == texts
    assert [row.origin for row in rows] == ["data.jsonl:1", "data.jsonl:2", "data.jsonl:3", "data.jsonl:4"]


def test_a_text_input_has_one_row_a_line_and_no_origins_past_its_end(tmp_path):
    from inspector.analyses.census.input import read_input

    texts = [f"line {i}{ch}still line {i}" for i, ch in enumerate(_NOT_LINE_BREAKS[:4])]
    source = tmp_path / "corpus.txt"
    source.write_text("\n".join(texts) + "\n", encoding="utf-8")
    rows = read_input(source).rows
    assert [row.value for row in rows] == texts
    assert [row.origin for row in rows] == [f"corpus.txt:{n}" for n in range(1, 5)]


@pytest.mark.parametrize("text, lines", [
    ("", []), ("a", ["a"]), ("a\n", ["a"]), ("a\r\nb\r\n", ["a", "b"]), ("a\n\nb", ["a", "", "b"]),
    ("a\u2028b\x0cc\n", ["a\u2028b\x0cc"]),
])
def test_file_lines_breaks_at_newlines_only(text, lines):
    from inspector.base.textfiles import file_lines

    assert file_lines(text) == lines


def test_a_resumed_run_reports_the_rate_of_the_texts_it_measured():
    from inspector.analyses.census.run import progress_note

    assert progress_note(1100, 2000, 10.0) == "census: 1100/2000 texts, 110.0 texts/s, ETA 8 s"
    assert progress_note(1100, 2000, 10.0, kept=1000) == "census: 1100/2000 texts, 10.0 texts/s, ETA 90 s"
