"""Inspect's decoder marks (issue 27): the causal mask and sliding windows drawn as masked cells with a legend entry,
grouped-query heads labelled with the key/value head they share, windowed layers marked "local N" / "global"."""

from __future__ import annotations

import json

import numpy as np
import pytest

from inspector import capture
from inspector.analyses.heatmap import HeatmapOptions, heatmap_view, layer_views, token_mask
from inspector.analyses.metrics import head_entropy
from inspector.charts.inspect import (
    MASKED_COLOR,
    attention_heatmap_chart,
    entropy_grid_chart,
    head_entropy_data,
    heatmap_title,
    kv_head,
    layer_heads_chart,
)
from inspector.core.loading import load_model

TEXT = "a a a a a a a a a"  # eleven tokens with [CLS] and [SEP]: longer than the tiny models' window of 4


@pytest.fixture(scope="module")
def windowed(tiny_model_dirs):
    """Qwen2 with a 4-token window on layers 1 and 2, 4 query heads on 1 key/value head."""
    return load_model(str(tiny_model_dirs["qwen2"]))


def test_token_mask_is_the_kernels_contract():
    masked = token_mask(6, causal=True, window=3)
    for i in range(6):
        for j in range(6):
            assert masked[i, j] == (j > i or j <= i - 3)
    assert not token_mask(4, causal=False, window=None).any()


def test_views_mark_exactly_the_cells_a_query_cannot_see(windowed, tiny_bert):
    result = capture(windowed, TEXT, weights="all")
    assert result.causal and result.windows[0] is None and result.windows[1] == 4
    n = len(result.tokens)
    for layer, window in enumerate(result.windows):
        view = heatmap_view(result, layer, 2)
        expected = token_mask(n, True, window)
        np.testing.assert_array_equal(view.masked, expected)
        assert (view.weights[expected] == 0).all() and (view.weights[~expected] > 0).all()
        assert view.window == window and view.windowed_model
    # Hidden specials and merged words keep the mask in step with the weights.
    for options in (HeatmapOptions(hide_special=True), HeatmapOptions(words=True), HeatmapOptions(drop_sink=True)):
        view = heatmap_view(result, 1, 0, options)
        assert view.masked.shape == view.weights.shape and view.masked.any()
        assert (view.weights[view.masked] == 0).all()
    encoder = heatmap_view(capture(tiny_bert, "the animal was tired", weights="all"), 0, 0)
    assert encoder.masked is None and not encoder.causal and not encoder.windowed_model


def test_heatmap_draws_masked_cells_grey_with_a_legend_entry(windowed):
    result = capture(windowed, TEXT, weights="all")
    view = heatmap_view(result, 1, 3)
    for lang, legend, reason in (("en", "masked", "Grey = masked (a later key, or outside the 4-token window)."),
                                 ("zh", "遮蔽", "灰色 = 遮蔽（后面的键，或 4 词元窗口之外）。")):
        spec = attention_heatmap_chart(view, lang=lang, kv_heads=1, num_heads=4).to_dict()
        weights_layer, mask_layer = spec["layer"]
        assert weights_layer["transform"] == [{"filter": "(!datum.masked)"}]
        assert mask_layer["transform"][0] == {"filter": "datum.masked"}
        # A one-word legend entry (a long one ran past a 1000 px window's column), the reason under the title.
        assert mask_layer["encoding"]["color"]["scale"] == {"domain": [legend], "range": [MASKED_COLOR]}
        subtitle = spec["title"]["subtitle"]
        assert reason in (" ".join(subtitle) if isinstance(subtitle, list) else subtitle)
        assert spec["resolve"]["scale"]["color"] == "independent"
        data = next(iter(spec["datasets"].values()))
        assert sum(row["masked"] for row in data) == int(view.masked.sum())
    title = " ".join(spec["title"]["text"]) if isinstance(spec["title"]["text"], list) else spec["title"]["text"]
    assert "共享键值头 0" in title and "局部 4" in title


def test_titles_and_headers_name_the_shared_kv_head_and_the_layer_kind(windowed):
    result = capture(windowed, TEXT, weights="all")
    assert heatmap_title(heatmap_view(result, 1, 3), "en", 1, 4) == \
        "Layer 1, head 3: attention weights · kv head 0 · local 4"
    assert heatmap_title(heatmap_view(result, 0, 3), "en", 1, 4).endswith("· kv head 0 · global")
    assert kv_head(5, 9, 3) == 1 and kv_head(8, 9, 3) == 2 and kv_head(5, 12, 12) is None and kv_head(1, 4, None) \
        is None
    header = layer_heads_chart(layer_views(result, 1), kv_heads=2).to_dict()["facet"]["header"]["labelExpr"]
    assert "floor(datum.value / 2)" in header and "kv head" in header
    spec = layer_heads_chart(layer_views(result, 1), kv_heads=2).to_dict()
    assert spec["spec"]["encoding"]["color"]["condition"]["value"] == MASKED_COLOR


def test_grid_labels_heads_with_their_kv_head_and_layers_with_their_window(windowed):
    result = capture(windowed, TEXT, weights="all")
    entropy = head_entropy(result)
    data = head_entropy_data(entropy, kv_heads=1, windows=result.windows)
    assert set(data["kv"]) == {0} and list(data.drop_duplicates("layer")["kind"]) == ["global", "local 4", "local 4"]
    spec = entropy_grid_chart(entropy, kv_heads=1, windows=result.windows, lang="zh").to_dict()
    base = spec["layer"][0]["encoding"]
    # Each head's kv head ("5·1"), thinned by the head axis when the column is narrow (charts.base.head_axis).
    assert "(datum.value + '·' + floor(datum.value / 4))" in base["x"]["axis"]["labelExpr"]
    assert json.dumps([" · 全局", "", ""], ensure_ascii=True) in base["y"]["axis"]["labelExpr"]
    assert base["y"]["title"] == "层（未标注的为局部 4）"
    assert any(tip.get("field") == "kv" for tip in base["tooltip"])
    # The note's example is a head of the model on screen (issue 44: "head 5" was shown on a 4-head model): the
    # selected head, or the last one.
    for selected, en, zh in ((None, "3·0 = head 3 reads kv head 0", "3·0 = 第 3 个头读取第 0 个键/值头"),
                             ((1, 2), "2·0 = head 2 reads kv head 0", "2·0 = 第 2 个头读取第 0 个键/值头")):
        for lang, note in (("en", en), ("zh", zh)):
            title = entropy_grid_chart(entropy, kv_heads=1, windows=result.windows, selected=selected,
                                       lang=lang).to_dict()["title"]
            shown = "".join(title["subtitle"]).replace(" ", "")  # wrapped to the column: compare without spaces
            assert note.replace(" ", "") in shown and "5·1" not in shown
    # A model without grouped-query heads or windows keeps its plain grid.
    plain = entropy_grid_chart(entropy).to_dict()["layer"][0]["encoding"]
    assert "'·'" not in plain["x"]["axis"].get("labelExpr", "") and "labelExpr" not in plain["y"].get("axis", {})
