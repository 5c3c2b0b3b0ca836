"""The head atlas (issue 41, Build 2 and 3): the reader over a census folder and a shipped atlas, every crafted file
refused in one line without a write, the export without shards, the page's link, the chart and the contexts'
escaping, a live row equal to Inspect's weights, and the page in both languages (AppTest) from a shipped atlas and
from a census folder. The page in Chromium is in tests/test_browser_atlas.py."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from inspector.analyses.atlas import (
    atlas_metrics,
    dominant_role,
    export_atlas,
    live_row,
    read_atlas,
    shipped_atlas_spec,
    shipped_atlases,
)
from inspector.analyses.census.exemplar_files import EXEMPLAR_TEXTS_FILE, EXEMPLARS_FILE
from inspector.analyses.census.input import CENSUS_CORPUS_PATH, read_input
from inspector.analyses.census.run import census
from inspector.analyses.census.store import CensusFolderError
from inspector.analyses.roles import ROLES
from inspector.charts.atlas import atlas_scatter_chart, context_html
from inspector.output.share_atlas import ATLAS_METRICS, AtlasState, decode_atlas, encode_atlas
from tests.atlas_folder import TOP_K, complete_atlas_folder
from tests.test_census import _corpus, _files

# One shipped atlas a bundled model; SmolLM2's is the largest (30 × 9 heads: 40,500 contexts), which the reader's
# whole-column checks open well within the 2 s the test below allows.
SHIPPED_ATLASES = ("default", "gemma-3-270m", "smollm2-135m")


@pytest.fixture(scope="module")
def census_folder(tiny_model_dirs, tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("atlas-census")
    out = folder / "out"
    census(str(tiny_model_dirs["bert"]), _corpus(folder), out=out, shard_size=8, limit=12, progress=None)
    return complete_atlas_folder(out)


def test_a_census_folder_opens_as_an_atlas_with_its_roles_contexts_and_texts(census_folder):
    before = _files(census_folder)
    atlas = read_atlas(census_folder)
    layers, heads = atlas.shape
    assert atlas.summary.texts == 10 and atlas.roles is not None and atlas.exemplars is not None
    metrics = atlas_metrics(atlas)
    assert list(metrics) == [m for m in ATLAS_METRICS if m in metrics] and set(ROLES) <= set(metrics)
    assert metrics["induction"].mean[-1, -1] == pytest.approx((layers * heads - 1) / (layers * heads))
    assert dominant_role(atlas, layers - 1, heads - 1) == "induction" and dominant_role(atlas, 0, 0) == "none"
    top = atlas.exemplars.of_head(1, 2, "induction", "top")
    assert [e.rank for e in top] == list(range(TOP_K)) and top[0].keys == (0, 1)
    assert len(atlas.exemplars.of_head(1, 2, "distance", "decile")) == 10
    text = atlas.text_of(top[0].text_index)  # kept with the exemplars
    assert text and text in (census_folder.parent / "corpus.txt").read_text()
    assert _files(census_folder) == before  # reading never writes


def test_a_census_run_with_exemplars_opens_as_an_atlas_whose_contexts_are_real(tiny_model_dirs, tmp_path):
    """The census's own exemplars (not the fixture's): every top context of every head names a text the atlas holds,
    its query and keys inside that text's tokens."""
    out = tmp_path / "out"
    census(str(tiny_model_dirs["gpt2"]), _corpus(tmp_path), out=out, limit=12, progress=None, exemplars=3)
    atlas = read_atlas(out)
    assert atlas.exemplars is not None and atlas.roles is None
    layers, heads = atlas.shape
    for layer in range(layers):
        for head in range(heads):
            top = atlas.exemplars.of_head(layer, head, "low_entropy", "top")
            assert [e.rank for e in top] == [0, 1, 2]
            for exemplar in top:
                tokens = atlas.exemplars.texts[exemplar.text_index]
                assert atlas.text_of(exemplar.text_index) and exemplar.query < len(tokens)
                assert all(0 <= key <= exemplar.query for key in exemplar.keys)  # GPT-2 is causal


def test_an_exported_atlas_has_no_shards_keeps_every_number_and_opens_fast(census_folder, tmp_path):
    exported = export_atlas(census_folder, tmp_path / "atlas")
    assert not (tmp_path / "atlas" / "shards").exists()
    assert sorted(p.name for p in (tmp_path / "atlas").iterdir()) == sorted(
        ["manifest.json", "summary.json", "roles.json", EXEMPLARS_FILE, EXEMPLAR_TEXTS_FILE])
    original = read_atlas(census_folder)
    for name, grid in atlas_metrics(original).items():
        np.testing.assert_array_equal(atlas_metrics(exported)[name].mean, grid.mean)
    assert np.array_equal(exported.exemplars.keys, original.exemplars.keys)
    assert np.array_equal(exported.exemplars.weights, original.exemplars.weights)
    index = original.exemplars.of_head(0, 0, "sink_mass", "top")[0].text_index
    assert exported.exemplars.sources[index] == original.text_of(index)  # the text travels without the shards


def _rewrite(path: Path, edit) -> None:
    table = pq.read_table(path)
    pq.write_table(edit(table), path)


def _set(table: pa.Table, name: str, values) -> pa.Table:
    return table.set_column(table.schema.get_field_index(name), name, pa.array(values, table.schema.field(name).type))


def _first_changed(table: pa.Table, name: str, value) -> pa.Table:
    values = table.column(name).to_pylist()
    values[0] = value
    return _set(table, name, values)


def _edit_roles(out: Path, edit) -> None:
    roles = json.loads((out / "roles.json").read_text())
    edit(roles)
    (out / "roles.json").write_text(json.dumps(roles))


_CRAFTED = {
    "exemplars without a column": lambda out: _rewrite(out / EXEMPLARS_FILE, lambda t: t.drop_columns(["keys"])),
    "exemplars of the wrong type": lambda out: _rewrite(out / EXEMPLARS_FILE, lambda t: t.set_column(
        t.schema.get_field_index("query"), "query", pa.array([str(q) for q in t.column("query").to_pylist()]))),
    "a huge K": lambda out: _rewrite(out / EXEMPLARS_FILE, lambda t: _first_changed(t, "rank", 30_000)),
    "a NaN value": lambda out: _rewrite(out / EXEMPLARS_FILE, lambda t: _first_changed(t, "value", float("nan"))),
    "a query past its text": lambda out: _rewrite(out / EXEMPLARS_FILE, lambda t: _first_changed(t, "query", 999)),
    "a negative key": lambda out: _rewrite(out / EXEMPLARS_FILE, lambda t: _first_changed(t, "keys", [-1, 0])),
    "a weight above 1": lambda out: _rewrite(out / EXEMPLARS_FILE, lambda t: _first_changed(t, "key_weights",
                                                                                             [7.0, 0.1])),
    "keys without weights": lambda out: _rewrite(out / EXEMPLARS_FILE, lambda t: _first_changed(t, "key_weights",
                                                                                                 [0.5])),
    "an unknown statistic": lambda out: _rewrite(out / EXEMPLARS_FILE, lambda t: _first_changed(t, "statistic",
                                                                                                 "<b>x</b>")),
    "a head outside the model": lambda out: _rewrite(out / EXEMPLARS_FILE, lambda t: _first_changed(t, "layer", 99)),
    "a text the texts lack": lambda out: _rewrite(out / EXEMPLARS_FILE, lambda t: _first_changed(t, "text_index",
                                                                                                  10**9)),
    "texts missing": lambda out: (out / EXEMPLAR_TEXTS_FILE).unlink(),
    "a text twice": lambda out: _rewrite(out / EXEMPLAR_TEXTS_FILE, lambda t: pa.concat_tables([t, t])),
    "exemplars not Parquet": lambda out: (out / EXEMPLARS_FILE).write_bytes(b"PAR1 not really"),
    "exemplars a link": lambda out: ((out / EXEMPLARS_FILE).unlink(), (out / EXEMPLARS_FILE).symlink_to("/dev/zero")),
    "roles of another shape": lambda out: (out / "roles.json").write_text(json.dumps(
        {**json.loads((out / "roles.json").read_text()), "shape": [1, 1]})),
    "a role that is not one": lambda out: (out / "roles.json").write_text(
        (out / "roles.json").read_text().replace('"induction"]', '"<script>"]')),
    "a role that is an object": lambda out: _edit_roles(out, lambda r: r["dominant"][0].__setitem__(0, {"a": 1})),
    "roles without thresholds": lambda out: _edit_roles(out, lambda r: r.pop("thresholds")),
    "texts without their text": lambda out: _rewrite(out / EXEMPLAR_TEXTS_FILE, lambda t: t.drop_columns(["text"])),
    "summary of strings": lambda out: (out / "summary.json").write_text('{"texts": "many"}'),
}


@pytest.mark.parametrize("case", sorted(_CRAFTED))
def test_a_crafted_atlas_folder_is_one_clear_line_and_is_never_written(census_folder, tmp_path, case):
    out = tmp_path / "crafted"
    shutil.copytree(census_folder, out, symlinks=True)
    _CRAFTED[case](out)
    before = _files(out)
    with pytest.raises(CensusFolderError) as refused:
        read_atlas(out)
    assert "\n" not in str(refused.value) and str(out) in str(refused.value), str(refused.value)
    assert _files(out) == before


def test_the_atlas_link_round_trips_and_a_hostile_one_warns_and_never_raises():
    state = AtlasState(atlas="gemma-3-270m", atlas_b="default", x="mean_distance", y="previous", colour="sink",
                       head=(5, 3), statistic="distance")
    decoded, warnings = decode_atlas(encode_atlas(state), atlases=SHIPPED_ATLASES)
    assert decoded == state and warnings == ()
    assert encode_atlas(AtlasState()) == {}
    hostile = {"atlas": "../../etc", "atlas_b": ["x", "/root"], "ax": "<script>", "ay": "1e99", "acolour": "",
               "ahead": "L1H2; DROP", "astat": "induction\n"}
    decoded, warnings = decode_atlas(hostile, atlases=SHIPPED_ATLASES)
    assert decoded == AtlasState() and len(warnings) == 7
    assert decode_atlas("not a mapping", atlases=SHIPPED_ATLASES) == (AtlasState(), ())


def test_the_scatter_is_clickable_and_names_each_point_and_contexts_are_escaped(census_folder):
    atlas = read_atlas(census_folder)
    spec = atlas_scatter_chart(atlas, "entropy_normalized", "induction", "layer", title="t", selected=(1, 2),
                               lang="zh").to_dict()
    params = [*spec.get("params", []), *(param for layer in spec["layer"] for param in layer.get("params", []))]
    assert [param["select"]["fields"] for param in params if param["name"] == "head_pick"] == [["layer", "head"]]
    assert spec["layer"][0]["encoding"]["description"]["field"] == "name"
    assert len(spec["datasets"][next(iter(spec["datasets"]))]) == atlas.shape[0] * atlas.shape[1]
    tokens = ["[CLS]", "<script>alert(1)</script>", "a&b", "\"q\""]
    shown = context_html(tokens, 3, {1: 0.7, 0: 0.2})
    assert "<script" not in shown and "&lt;script&gt;alert(1)&lt;/script&gt;" in shown and "a&amp;b" in shown
    assert "rgba(225,87,89,0.84)" in shown and "outline" in shown  # √0.7 shades the key; the query is outlined


def test_a_live_row_is_inspect_s_row_of_that_head(tiny_loaded_bert):
    from inspector.core.capture import capture

    text = "the cat sat on the mat because it was tired"
    row = live_row(tiny_loaded_bert, text, 1, 2, 4)
    expected = capture(tiny_loaded_bert, text, weights="all").weights[1][2, 4]
    np.testing.assert_allclose(row.weights, expected, atol=1e-6)
    assert row.weights.sum() == pytest.approx(1.0, abs=1e-5) and row.tokens[4] == row.tokens[row.query]
    with pytest.raises(Exception, match="not in the text"):
        live_row(tiny_loaded_bert, text, 1, 2, 500)


@pytest.fixture(scope="module")
def tiny_loaded_bert(tiny_model_dirs):
    from inspector.core.loading import load_model

    return load_model(str(tiny_model_dirs["bert"]))


def test_the_atlas_page_opens_a_census_folder_and_a_crafted_one_is_one_line(census_folder, tmp_path):
    from tests.conftest import open_app_page

    at = open_app_page("atlas", query={"lang": "zh", "ahead": "L1H2"})
    at.selectbox(key="atlas_source").set_value("__folder__").run()
    at.text_input(key="atlas_folder").input(str(census_folder)).run()
    assert not at.exception and not at.error, [e.value for e in (*at.exception, *at.error)]
    assert len(at.get("vega_lite_chart")) == 1 and "第 1 层，第 2 个头" in [s.value for s in at.subheader]
    shown = [element.proto.body for element in at.get("html")]
    assert any("&lt;img" in body for body in shown) and not any("<img" in body for body in shown)
    at.button(key="atlas_live_a_top_0").click().run()  # the row drawn live: one forward of that text
    assert not at.exception and any("毫秒" in c.value for c in at.caption)
    crafted = tmp_path / "crafted"
    shutil.copytree(census_folder, crafted)
    (crafted / EXEMPLARS_FILE).write_bytes(b"PAR1 not really")
    at.text_input(key="atlas_folder").input(str(crafted)).run()
    assert not at.exception and len(at.error) == 1 and "\n" not in at.error[0].value
    assert not at.get("vega_lite_chart")


def test_a_key_weight_rounded_past_1_is_written_as_1_so_the_census_reads_its_own_files():
    """A float32 row of a collapsed head summed to 1.0000076 on MiniLM; the census's reader refused its own file."""
    from inspector.analyses.census.exemplar_files import _ragged

    keys, weights = _ragged(np.array([[3, 0, -1]], np.int32), np.array([[1.0000076, 2e-6, 0.0]], np.float32))
    assert keys.to_pylist() == [[3, 0]] and weights.to_pylist() == [[1.0, pytest.approx(2e-6)]]


# ------------------------------------------------------------------------------------- the shipped atlases


@pytest.fixture
def no_model_load(monkeypatch):
    """The library's loaders and transformers' own replaced by a failure: what runs under it opens no model."""
    import transformers

    import inspector.core.loading
    import inspector.serving.hosting

    def refuse(*args, **kwargs):
        raise AssertionError("a model was loaded")

    monkeypatch.setattr(inspector.core.loading, "load_model", refuse)
    monkeypatch.setattr(inspector.serving.hosting, "load_model", refuse)
    monkeypatch.setattr(transformers.PreTrainedModel, "from_pretrained", classmethod(refuse))


def test_the_shipped_atlases_are_the_three_bundled_models_s():
    assert tuple(shipped_atlases()) == SHIPPED_ATLASES


@pytest.mark.parametrize("name", SHIPPED_ATLASES)
def test_a_shipped_atlas_is_small_opens_in_under_2_s_with_no_model_call_and_its_contexts_are_the_corpus(
        name, no_model_load):
    folder = shipped_atlases()[name]
    size = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
    assert size < 8 * 2**20 and not (folder / "shards").exists(), (name, size)
    started = time.perf_counter()
    atlas = read_atlas(folder)  # every check the census's reader applies to a folder of one's own
    atlas_scatter_chart(atlas, "entropy_normalized", "induction", "layer", title=name).to_dict()
    seconds = time.perf_counter() - started
    assert seconds < 2.0, (name, seconds)
    assert atlas.model_spec == shipped_atlas_spec(name) and atlas.roles is not None
    limit = atlas.summary.manifest["input"]["limit"]
    corpus = {row.index: row.value for row in read_input(CENSUS_CORPUS_PATH, limit=limit).rows}
    assert atlas.summary.texts == limit == len(corpus)
    # The top induction head's top contexts are sentences of the corpus where it copies: one of the keys it attends
    # most follows an earlier copy of the query's token. A decoder's puts most of the row there.
    layer, head = divmod(int(atlas_metrics(atlas)["induction"].mean.argmax()), atlas.shape[1])
    top = atlas.exemplars.of_head(layer, head, "induction", "top")
    assert len(top) == 20 and top[0].value > (0.5 if atlas.summary.model["causal"] else 0.2), (name, top[0])
    for context in top[:5]:
        assert atlas.text_of(context.text_index) == corpus[context.text_index]
        tokens = atlas.exemplars.texts[context.text_index]
        assert any(tokens[key - 1] == tokens[context.query] for key in context.keys if 0 < key <= context.query), (
            name, tokens, context)


@pytest.mark.parametrize("name", SHIPPED_ATLASES)
def test_a_shipped_atlas_crafted_is_refused_as_a_census_folder_is(name, tmp_path):
    out = tmp_path / name
    shutil.copytree(shipped_atlases()[name], out)
    _CRAFTED["a query past its text"](out)
    with pytest.raises(CensusFolderError, match="outside its text"):
        read_atlas(out)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_atlas_page_opens_from_a_shipped_atlas_with_a_head_s_card(lang):
    from tests.conftest import open_app_page

    at = open_app_page("atlas", query={"lang": lang, "ahead": "L3H5"})
    title = {"en": "Head atlas", "zh": "注意力头图谱"}[lang]
    assert [t.value for t in at.title] == [title]
    card = {"en": "Layer 3, head 5", "zh": "第 3 层，第 5 个头"}[lang]
    assert card in [s.value for s in at.subheader]
    assert at.selectbox(key="atlas_source").value == "default"
    assert len(at.get("vega_lite_chart")) == 1
    assert any(b.label == {"en": "Inspect", "zh": "查看"}[lang] for b in at.button)
