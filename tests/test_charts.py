"""Chart builders: the data behind each chart has one row per cell, token labels stay unique when tokens
repeat, axes keep sentence order, the specs are valid Vega-Lite (``to_dict`` validates the schema), slide
mode changes type sizes and palettes, and Streamlit accepts the entropy grid's click selection."""

from __future__ import annotations

import dataclasses
import math
import re

import altair as alt
import numpy as np
import pandas as pd
import pytest

from inspector.analyses.heatmap import HeatmapOptions, HeatmapView
from inspector.analyses.metrics import HeadEntropy
from inspector.charts.base import (
    CELL_SELECTION,
    HEAD_SELECTION,
    NARROW_COLUMN_PX,
    THINNED_NOTE,
    WIDE_COLUMN_PX,
    chart_title,
    composable,
    mark_ink,
    selected_cell,
    selected_head,
    style_chart,
    text_width_px,
    token_axis,
    token_labels,
    wrap_text,
)
from inspector.charts.inspect import (
    SMALL_MULTIPLES_MAX_TOKENS,
    attention_heatmap_chart,
    entropy_by_layer_chart,
    entropy_grid_chart,
    layer_heads_chart,
)

CJK = re.compile(r"[\u4e00-\u9fff]")

# "the" repeats and there are more than ten positions, so label order would go wrong if sorted as text.
TOKENS = ("[CLS]", "the", "cat", "sat", "on", "the", "mat", "and", "the", "dog", "sat", "too", "[SEP]")


def _row_stochastic(rows: int, cols: int | None = None, seed: int = 0) -> np.ndarray:
    scores = np.random.default_rng(seed).normal(size=(rows, cols or rows))
    weights = np.exp(scores)
    return (weights / weights.sum(axis=-1, keepdims=True)).astype(np.float32)  # (rows, cols)


def _view(tokens=TOKENS, *, head: int = 7, weights=None, notes=()) -> HeatmapView:
    labels = tuple(token_labels(tokens))
    return HeatmapView(weights=_row_stochastic(len(tokens)) if weights is None else weights, query_labels=labels,
                       key_labels=labels, query_tokens=tuple(tokens), key_tokens=tuple(tokens), layer=2, head=head,
                       options=HeatmapOptions(), notes=tuple(notes))


def _head_entropy(layers: int = 3, heads: int = 5) -> HeadEntropy:
    raw = np.random.default_rng(1).uniform(0.1, 2.5, size=(layers, heads)).astype(np.float32)
    normalized = (raw / 2.5).astype(np.float32)
    normalized[0, 0] = np.nan  # a head whose rows all see one key has no normalised entropy
    return HeadEntropy(raw=raw, normalized=normalized, layer_mean=raw.mean(axis=-1))


def _layer_data(chart: alt.LayerChart):
    return chart.layer[0].data if chart.data is alt.Undefined else chart.data


def test_token_labels_are_unique_and_keep_the_token():
    labels = token_labels(TOKENS)
    assert len(labels) == len(set(labels)) == len(TOKENS)
    assert labels[1] == "1: the" and labels[5] == "5: the"
    assert all(label.endswith(token) for label, token in zip(labels, TOKENS))


def test_attention_heatmap_has_one_row_per_query_key_pair():
    view = _view(notes=("Rows renormalised after removing key 0 ([CLS]), the attention sink.",))
    chart = attention_heatmap_chart(view)
    data = chart.data
    n = len(TOKENS)
    assert len(data) == n * n
    assert data["query"].nunique() == data["key"].nunique() == n
    np.testing.assert_allclose(data["weight"].to_numpy(), view.weights.ravel(), rtol=1e-6)
    row = data[(data.query_index == 5) & (data.key_index == 8)].iloc[0]
    assert (row["query"], row["key"], row["query_token"], row["key_token"]) == ("5: the", "8: the", "the", "the")
    assert row["weight"] == pytest.approx(view.weights[5, 8])

    spec = chart.to_dict()
    labels = token_labels(TOKENS)
    assert spec["encoding"]["x"]["sort"] == labels and spec["encoding"]["y"]["sort"] == labels
    tooltips = {t["field"]: t for t in spec["encoding"]["tooltip"]}
    assert set(tooltips) == {"query", "key", "weight"} and tooltips["weight"]["format"] == ".3f"
    # Notes are wrapped into lines that fit the Inspect page's column; the words are the view's notes.
    assert spec["title"]["text"] == "Layer 2, head 7: attention weights"
    assert " ".join(spec["title"]["subtitle"]).startswith(" ".join(view.notes))


def test_attention_heatmap_rows_and_columns_may_differ():
    keys = ("1: the", "2: cat", "3: sat")
    view = HeatmapView(weights=_row_stochastic(2, 3), query_labels=("1: the", "2: cat"), key_labels=keys,
                       query_tokens=("the", "cat"), key_tokens=("the", "cat", "sat"), layer=0, head=0,
                       options=HeatmapOptions(hide_special=True))
    spec = attention_heatmap_chart(view).to_dict()
    assert spec["encoding"]["x"]["sort"] == list(keys) and spec["encoding"]["y"]["sort"] == ["1: the", "2: cat"]
    assert spec["title"]["text"] == "Layer 0, head 0: attention weights" and "subtitle" not in spec["title"]


def test_attention_heatmap_cells_shrink_for_long_texts_but_stay_visible():
    short = attention_heatmap_chart(_view(("a", "b", "c"))).to_dict()
    long = attention_heatmap_chart(_view(tuple(f"t{i}" for i in range(200))))
    assert short["width"]["step"] > long.width.step >= 4


def test_entropy_grid_has_one_row_per_head_and_outlines_the_selected_head():
    entropy = _head_entropy(layers=3, heads=5)
    chart = entropy_grid_chart(entropy, selected=(2, 4))
    data = _layer_data(chart)
    assert len(data) == 3 * 5
    assert set(zip(data["layer"], data["head"])) == {(layer, head) for layer in range(3) for head in range(5)}
    cell = data[(data["layer"] == 1) & (data["head"] == 3)].iloc[0]
    assert cell["raw"] == pytest.approx(entropy.raw[1, 3])
    assert cell["normalized"] == pytest.approx(entropy.normalized[1, 3])
    assert np.isnan(data[(data["layer"] == 0) & (data["head"] == 0)].iloc[0]["normalized"])

    spec = chart.to_dict()
    filters = [t["filter"] for layer in spec["layer"] for t in layer.get("transform", [])]
    assert filters and "2" in str(filters[0]) and "4" in str(filters[0])
    assert "params" not in spec  # not selectable unless asked


def test_entropy_grid_without_selection_has_no_outline():
    spec = entropy_grid_chart(_head_entropy()).to_dict()
    assert not any(layer.get("transform") for layer in spec["layer"])


def test_selectable_grid_has_the_click_selection_on_the_coloured_cells():
    spec = entropy_grid_chart(_head_entropy(), selected=(0, 1), selectable=True).to_dict()
    (param,) = spec["params"]
    assert param["name"] == HEAD_SELECTION == "head_pick"
    assert param["select"]["type"] == "point" and param["select"]["fields"] == ["layer", "head"]
    assert param["select"]["on"] == "click"
    (view_name,) = param["views"]
    (cells,) = [layer for layer in spec["layer"] if layer.get("name") == view_name]
    assert cells["encoding"]["color"]["field"] == "normalized"
    tooltips = {t["field"] for layer in spec["layer"] for t in layer.get("encoding", {}).get("tooltip", [])}
    tooltips |= {t["field"] for t in spec.get("encoding", {}).get("tooltip", [])}
    assert {"layer", "head", "normalized", "raw"} <= tooltips


def test_streamlit_accepts_the_selection_and_reports_it_by_name():
    """Streamlit looks for selection params through layers; an unknown name would raise here."""
    from streamlit.testing.v1 import AppTest

    def page():
        import numpy as np
        import streamlit as st

        from inspector.analyses.metrics import HeadEntropy
        from inspector.charts.base import HEAD_SELECTION
        from inspector.charts.inspect import entropy_grid_chart

        raw = np.linspace(0.1, 1, 12, dtype=np.float32).reshape(3, 4)
        entropy = HeadEntropy(raw=raw, normalized=raw, layer_mean=raw.mean(axis=-1))
        for slide in (False, True):
            event = st.altair_chart(entropy_grid_chart(entropy, selected=(1, 2), selectable=True, slide=slide),
                                    on_select="rerun", selection_mode=HEAD_SELECTION, key=f"grid-{slide}")
            st.text(",".join(sorted(event.selection)))

    app = AppTest.from_function(page, default_timeout=60).run()
    assert not app.exception
    assert [t.value for t in app.text] == ["head_pick", "head_pick"]


@pytest.mark.parametrize("selection,expected", [
    ({"head_pick": [{"layer": 2, "head": 7}]}, (2, 7)),
    ({"head_pick": [{"layer": 2.0, "head": 7}]}, (2, 7)),
    ({"head_pick": {}}, None), ({"head_pick": []}, None), ({}, None), (None, None),
    ({"head_pick": [{"layer": "x", "head": 1}]}, None), ({"head_pick": [{"layer": 1}]}, None),
    ({"head_pick": [{"layer": 1.5, "head": 1}]}, None), ({"head_pick": [{"layer": True, "head": 1}]}, None),
    ({"head_pick": "garbage"}, None), ({"head_pick": [None]}, None),
])
def test_selected_head_reads_streamlits_event(selection, expected):
    assert selected_head(selection) == expected


@pytest.mark.parametrize("selection,expected", [
    ({"cell_pick": [{"query_index": 5, "key_index": 2}]}, (5, 2)), ({"cell_pick": []}, None), (None, None),
    ({"head_pick": [{"layer": 2, "head": 7}]}, None), ({"cell_pick": [{"query_index": 5}]}, None),
    ({"cell_pick": [{"query_index": 1.5, "key_index": 0}]}, None),
])
def test_selected_cell_reads_streamlits_event(selection, expected):
    assert selected_cell(selection) == expected


def test_a_selectable_causal_heatmap_selects_only_the_visible_cells():
    """A causal LM's heatmap on Inspect: the click selection (rows and columns of the view) sits on the weights'
    layer, not on the masked cells', and Streamlit accepts it by name."""
    from streamlit.testing.v1 import AppTest

    later = np.triu(np.ones((5, 5), dtype=bool), 1)  # (5, 5) the keys a causal query cannot see
    weights = np.where(later, 0, _row_stochastic(5)).astype(np.float32)
    view = dataclasses.replace(_view(TOKENS[:5], weights=weights), masked=later, causal=True)
    spec = attention_heatmap_chart(view, selectable=True).to_dict()
    (param,) = spec["params"]
    assert param["name"] == CELL_SELECTION == "cell_pick"
    assert param["select"]["fields"] == ["query_index", "key_index"] and param["select"]["on"] == "click"
    (view_name,) = param["views"]
    (cells,) = [layer for layer in spec["layer"] if layer.get("name") == view_name]
    assert cells["encoding"]["color"]["field"] == "weight" and cells["mark"]["cursor"] == "pointer"
    assert "params" not in attention_heatmap_chart(view).to_dict()

    def page():
        import dataclasses

        import numpy as np
        import streamlit as st

        from inspector.analyses.heatmap import HeatmapOptions, HeatmapView
        from inspector.charts.base import CELL_SELECTION
        from inspector.charts.inspect import attention_heatmap_chart

        tokens = ("a", "b", "c")
        view = HeatmapView(weights=np.tril(np.full((3, 3), 0.5, dtype=np.float32)), query_labels=tokens,
                           key_labels=tokens, query_tokens=tokens, key_tokens=tokens, layer=0, head=0,
                           options=HeatmapOptions())
        view = dataclasses.replace(view, masked=np.triu(np.ones((3, 3), dtype=bool), 1), causal=True)
        event = st.altair_chart(attention_heatmap_chart(view, selectable=True), on_select="rerun",
                                selection_mode=CELL_SELECTION, key="heatmap")
        st.text(",".join(sorted(event.selection)))

    app = AppTest.from_function(page, default_timeout=60).run()
    assert not app.exception and [t.value for t in app.text] == ["cell_pick"]


def test_layer_heads_chart_is_small_multiples_of_every_head():
    tokens = TOKENS[:6]
    views = [_view(tokens, head=h, weights=_row_stochastic(6, seed=h)) for h in range(12)]
    chart = layer_heads_chart(views)
    assert len(chart.data) == 12 * 6 * 6
    assert sorted(chart.data["head"].unique()) == list(range(12))
    spec = chart.to_dict()
    assert spec["columns"] == 4 and spec["facet"]["field"] == "head"
    assert spec["title"]["text"] == "Layer 2: every head"
    assert spec["spec"]["encoding"]["x"]["axis"] is None
    assert SMALL_MULTIPLES_MAX_TOKENS == 64
    with pytest.raises(ValueError, match="one layer"):
        layer_heads_chart([views[0], _view(TOKENS)])
    with pytest.raises(ValueError, match="at least one"):
        layer_heads_chart([])


def test_entropy_by_layer_has_dots_per_head_and_a_mean_line():
    entropy = _head_entropy(layers=4, heads=3)
    chart = entropy_by_layer_chart(entropy)
    assert len(_layer_data(chart)) == 12
    spec = chart.to_dict()
    marks = [layer["mark"]["type"] if isinstance(layer["mark"], dict) else layer["mark"] for layer in spec["layer"]]
    assert marks == ["circle", "line"]
    assert spec["layer"][1]["encoding"]["y"]["aggregate"] == "mean"


def _builders():
    entropy = _head_entropy()
    view = _view()
    return {
        "grid": lambda slide: entropy_grid_chart(entropy, selected=(1, 1), selectable=True, slide=slide),
        "heatmap": lambda slide: attention_heatmap_chart(view, slide=slide),
        "heads": lambda slide: layer_heads_chart([_view(head=h) for h in range(3)], slide=slide),
        "by_layer": lambda slide: entropy_by_layer_chart(entropy, slide=slide),
    }


@pytest.mark.parametrize("name", ["grid", "heatmap", "heads", "by_layer"])
def test_slide_mode_has_large_type_and_stays_valid(name):
    build = _builders()[name]
    plain, slide = build(False).to_dict(), build(True).to_dict()
    assert "title" not in plain.get("config", {})
    assert slide["config"]["title"]["fontSize"] == 24
    assert slide["config"]["axis"]["labelFontSize"] == 16 and slide["config"]["legend"]["labelFontSize"] == 16


def test_slide_mode_uses_colour_blind_safe_palettes_and_a_hue_free_outline():
    heat = attention_heatmap_chart(_view(), slide=True).to_dict()
    assert heat["encoding"]["color"]["scale"]["scheme"] == "cividis"
    assert heat["width"]["step"] > attention_heatmap_chart(_view()).to_dict()["width"]["step"]
    grid = entropy_grid_chart(_head_entropy(), selected=(1, 1), slide=True).to_dict()
    strokes = [layer["mark"].get("stroke") for layer in grid["layer"] if isinstance(layer["mark"], dict)]
    assert "black" in strokes and "white" in strokes
    assert grid["layer"][1]["encoding"]["color"]["scale"]["scheme"] in ("viridis", "cividis")


def test_style_chart_is_last_and_composition_still_works():
    entropy = _head_entropy()
    composed = alt.hconcat(composable(entropy_grid_chart(entropy)), composable(entropy_by_layer_chart(entropy)))
    assert style_chart(composed, slide=True).to_dict()["config"]["title"]["fontSize"] == 24
    finished = style_chart(composed, slide=False).to_dict()
    assert "title" not in finished["config"] and "autosize" not in finished  # a concatenation keeps its size
    assert finished["padding"]["bottom"] == 20
    # A single chart fits its column's width and keeps its height (Streamlit's default "fit" squeezes it).
    assert entropy_by_layer_chart(entropy).to_dict()["autosize"] == {"type": "fit-x", "contains": "padding"}


def test_hostile_tokens_stay_data():
    tokens = ("[CLS]", "<script>alert(1)</script>", "<img src=x onerror=alert(1)>", "[SEP]")
    chart = attention_heatmap_chart(_view(tokens))
    spec = chart.to_dict()
    assert "1: <script>alert(1)</script>" in spec["encoding"]["y"]["sort"]
    assert set(chart.data["key_token"]) == set(tokens)
    # Tokens appear in the data and sort order only — never in a format string or expression.
    assert "script" not in str(spec["encoding"]["tooltip"]) and "script" not in str(spec.get("title"))


# ---- issue 17: charts that hold their shape in the app's columns


def test_a_title_that_fits_stays_one_string_and_a_long_one_wraps_to_its_column():
    short = chart_title("Layer 0, head 0: attention weights", width=WIDE_COLUMN_PX).to_dict()
    assert short["text"] == "Layer 0, head 0: attention weights" and short["limit"] == WIDE_COLUMN_PX
    long = chart_title("Head entropy: how spread out each head's attention is", ["Click a cell to show that head."],
                       width=NARROW_COLUMN_PX).to_dict()
    assert isinstance(long["text"], list) and " ".join(long["text"]) == "Head entropy: how spread out each head's " \
                                                                          "attention is"
    assert all(text_width_px(line, 16) <= NARROW_COLUMN_PX for line in long["text"])
    assert all(text_width_px(line, 11) <= NARROW_COLUMN_PX for line in long["subtitle"])
    # Chinese has no spaces: it breaks between characters, each counted about twice as wide as a Latin letter.
    lines = wrap_text("注意力头的熵：每个头的注意力分布有多分散", NARROW_COLUMN_PX, 16)
    assert len(lines) > 1 and "".join(lines) == "注意力头的熵：每个头的注意力分布有多分散"
    assert all(text_width_px(line, 16) <= NARROW_COLUMN_PX for line in lines)


@pytest.mark.parametrize("name", ["grid", "heatmap", "heads", "by_layer"])
@pytest.mark.parametrize("slide", [False, True])
def test_every_inspect_title_line_fits_a_1000_px_window(name, slide):
    title = _builders()[name](slide).to_dict()["title"]
    text = title["text"] if isinstance(title["text"], list) else [title["text"]]
    assert all(text_width_px(line, 24 if slide else 16) <= title["limit"] for line in text), text
    assert all(text_width_px(line, 16 if slide else 11) <= title["limit"] for line in title.get("subtitle", []))


def test_zero_weight_is_drawn_white():
    import re

    import vl_convert

    weights = np.zeros((len(TOKENS), len(TOKENS)), dtype=np.float32)
    weights[:, 0] = 1.0  # every row puts all of its weight on [CLS]; every other cell is exactly 0
    svg = vl_convert.vegalite_to_svg(attention_heatmap_chart(_view(weights=weights)).to_json())
    fills = re.findall(r'<path[^>]*fill="([^"]+)"[^>]*/>', svg)
    assert fills.count("#ffffff") + fills.count("rgb(255, 255, 255)") >= len(TOKENS) * (len(TOKENS) - 1)


def test_token_axes_never_hide_labels_silently():
    axis = attention_heatmap_chart(_view()).to_dict()["encoding"]["x"]["axis"]
    assert axis["labelOverlap"] is False
    # The stride comes from the drawn width (Vega's `width` signal), and the chart says when it skips labels.
    assert "width" in axis["labelExpr"] and "% max(1, ceil(" in axis["labelExpr"]
    long_title = attention_heatmap_chart(_view(tuple(f"t{i}" for i in range(60)))).to_dict()["title"]
    assert " ".join(long_title["subtitle"]).endswith(THINNED_NOTE)


def test_fixed_height_charts_keep_their_height_in_streamlit():
    spec = entropy_by_layer_chart(_head_entropy()).to_dict()
    # Streamlit's default autosize "fit" squeezed the plot to leave room for the title (a 60 px pruning curve).
    assert spec["autosize"] == {"type": "fit-x", "contains": "padding"} and spec["height"] == 260


def test_a_long_texts_small_weights_still_show_their_pattern():
    n = 60  # Altair's default data limit is 5,000 rows
    weights = np.full((n, n), 0.002, dtype=np.float32)
    weights[:, 0] = 1 - 0.002 * (n - 1)  # a sink column of 0.88; everything else 0.002
    tokens = tuple(f"t{i}" for i in range(n))
    scale = attention_heatmap_chart(_view(tokens, weights=weights)).to_dict()["encoding"]["color"]["scale"]
    assert scale["domain"][0] == 0 and scale["domain"][-1] == pytest.approx(weights.max())  # [0, max], from white
    uniform = np.full((n, n), 1 / n, dtype=np.float32)
    scale = attention_heatmap_chart(_view(tokens, weights=uniform)).to_dict()["encoding"]["color"]["scale"]
    assert scale["domain"][-1] == pytest.approx(0.05)  # nearly uniform weights do not turn dark


# ---- issue 17: every chart speaks the page's language


@pytest.fixture(scope="module")
def bundled_capture(bundled):
    from inspector.core.capture import capture

    return capture(bundled, "Unbelievably, the tokenizer splits words.", weights=(0,))


def _inspect_charts(result, lang: str) -> tuple[dict[str, alt.TopLevelMixin], list[str]]:
    """Every Inspect chart in ``lang`` (and the texts' tokens and labels, which are data), drawn from the bundled
    model's ``result`` with views that carry notes (the sink dropped, words merged, special tokens hidden), so the
    notes' subtitles are read too; slide mode as well."""
    from inspector.analyses.heatmap import heatmap_view, layer_views
    from inspector.analyses.metrics import head_entropy

    entropy = head_entropy(result)
    options = HeatmapOptions(drop_sink=True, words=True, hide_special=True)
    view = heatmap_view(result, 0, 3, options)
    assert view.notes  # the subtitle has sentences to translate
    charts = {}
    for slide in (False, True):
        charts[f"grid-{slide}"] = entropy_grid_chart(entropy, selected=(0, 3), selectable=True, slide=slide,
                                                     lang=lang)
        charts[f"heatmap-{slide}"] = attention_heatmap_chart(view, slide=slide, lang=lang)
        charts[f"heads-{slide}"] = layer_heads_chart(layer_views(result, 0, options), slide=slide, lang=lang)
        charts[f"by_layer-{slide}"] = entropy_by_layer_chart(entropy, slide=slide, lang=lang)
    # A long text's heatmap says that only every k-th token is labelled.
    charts["heatmap-thinned"] = attention_heatmap_chart(_view(tuple(f"t{i}" for i in range(60))), lang=lang)
    return charts, [*result.tokens, *token_labels(result.tokens), *view.key_labels, *view.key_tokens]


def test_inspect_charts_in_chinese_show_no_english_words(bundled_capture):
    from tests.chart_text import chart_strings, english_words

    chinese, tokens = _inspect_charts(bundled_capture, "zh")
    allowed = [*tokens, *(f"t{i}" for i in range(60))]
    for name, chart in chinese.items():
        spec = chart.to_dict(validate=True)
        assert english_words(chart_strings(spec), allowed=allowed) == [], name
        assert any(CJK.search(text) for text in chart_strings(spec)), name
    english, _ = _inspect_charts(bundled_capture, "en")
    for name, chart in english.items():  # the check can fail: the same charts in English are full of words
        assert english_words(chart_strings(chart.to_dict()), allowed=allowed), name


def test_inspect_charts_in_chinese_keep_their_data_and_wrap_their_titles(bundled_capture):
    chinese, _ = _inspect_charts(bundled_capture, "zh")
    english, _ = _inspect_charts(bundled_capture, "en")
    heads = chinese["heads-False"].to_dict()
    assert heads["facet"]["header"]["labelExpr"] == "'第 ' + datum.value + ' 个头'"
    assert english["heads-False"].to_dict()["facet"]["header"]["labelExpr"] == "'head ' + datum.value"
    assert chinese["heatmap-False"].to_dict()["title"]["text"] == "第 0 层第 3 个头：注意力权重"
    assert english["heatmap-False"].to_dict()["title"]["text"] == "Layer 0, head 3: attention weights"
    # The views' notes translate: the word-merging note in Chinese, and in English as the view has it.
    assert any("按词显示" in line for line in chinese["heatmap-False"].to_dict()["title"]["subtitle"])
    for name in chinese:
        zh, en = chinese[name].to_dict(), english[name].to_dict()
        assert zh["datasets"] == en["datasets"], name  # the same numbers and field names, only the words differ
        title = zh["title"]
        lines = title["text"] if isinstance(title["text"], list) else [title["text"]]
        slide = name.endswith("True")
        assert all(text_width_px(line, 24 if slide else 16) <= title["limit"] for line in lines), (name, lines)


def _axis_labels(svg: str) -> list[str]:
    """The axis labels a rendered SVG draws (non-empty), in order."""
    groups = re.findall(r'<g class="mark-text role-axis-label"[^>]*>(.*?)</g>', svg, re.S)
    return [text for group in groups for text in re.findall(r"<text[^>]*>([^<]+)</text>", group)]


@pytest.mark.parametrize("width", (180, 320))
def test_a_thinned_axis_labels_the_important_tokens_first(width):
    """Issue 31: a 16-token axis in a narrow column labelled every other token, so "13: tired" — the token the
    page was about — disappeared. The kept positions are labelled whatever the stride, and no other label comes
    within a stride of them."""
    import vl_convert

    labels = [f"{i}: t{i}" for i in range(16)]
    data = pd.DataFrame({"key": labels, "value": 1.0})
    chart = alt.Chart(data).mark_rect().encode(
        x=alt.X("key:O", sort=labels, axis=token_axis(labels, horizontal=True, keep=(13, 6)))).properties(width=width)
    shown = _axis_labels(vl_convert.vegalite_to_svg(chart.to_dict()))
    positions = sorted(int(label.split(":")[0]) for label in shown)
    assert "13: t13" in shown and "6: t6" in shown and len(shown) < len(labels), shown
    stride = math.ceil(22 * len(labels) / width)
    assert all(b - a >= stride for a, b in zip(positions, positions[1:])), (stride, positions)


def test_a_head_axis_numbers_every_kth_head_in_a_narrow_column_the_selected_one_first():
    """Issue 31: twelve head numbers in the entropy grid's 180 px column read "…9 1011"."""
    import vl_convert

    entropy = _head_entropy(layers=2, heads=12)
    grid = entropy_grid_chart(entropy, selected=(1, 11)).properties(width=130)
    shown = _axis_labels(vl_convert.vegalite_to_svg(grid.to_dict()))
    numbers = [label for label in shown if label.isdigit()]  # the heads, and the two layers 0 and 1
    assert "11" in numbers and len(numbers) < 12 + 2, numbers
    wide = entropy_grid_chart(entropy, selected=(1, 11)).properties(width=600)
    assert {str(h) for h in range(12)} <= set(_axis_labels(vl_convert.vegalite_to_svg(wide.to_dict())))


def test_marks_on_cells_take_the_ink_their_colour_needs():
    """Issue 31: white C/D marks on pale sink-grid cells could not be read."""
    ink = mark_ink([0.0, 0.1, 0.9, 1.0, np.nan], "orangered", 0.0, 1.0)
    assert list(ink) == ["black", "black", "white", "white", "black"]
    assert list(mark_ink([0.0, 1.0], "viridis", 0.0, 1.0)) == ["white", "black"]  # viridis is dark at 0
    assert list(mark_ink([0.0, 1.0, 4.0], "purples")) == ["black", "black", "white"]  # up to the largest value
