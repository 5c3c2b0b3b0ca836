"""The Compare page's charts (issue 20): the layer × head grid of how far the query's attention moved (clickable,
like the entropy grid), the heads ranked by that movement, and one head's two heatmaps with the query row
outlined plus their difference on the aligned tokens. Builders take a finished
:class:`~inspector.analyses.compare.Comparison` / :class:`~inspector.analyses.compare.HeadPair` and compute nothing;
the shared
look is :mod:`inspector.charts.base`. Every builder takes ``lang`` and writes what a reader sees (titles, axes,
legends, tooltips, the "other" bucket) in that language from the catalogue; tokens are data and stay as they are.
"""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

from inspector.analyses.compare import Comparison, HeadPair
from inspector.analyses.divergence import JS_MAX
from inspector.base.i18n import DEFAULT_LANGUAGE, t
from inspector.charts.base import (
    FULL_WIDTH_PX,
    HALF_COLUMN_PX,
    HEAD_SELECTION,
    LABEL_PITCH_PX,
    SELECTION_COLOR,
    SLIDE_WEIGHT_SCHEME,
    WEIGHT_SCHEME,
    chart_title,
    head_axis,
    may_thin,
    style_chart,
    thinned_note,
    token_axis,
)

# What the grid can be coloured by: key → (catalogue key of the legend title, scheme, diverging around 0).
GRID_METRICS = {
    "js": ("chart.compare.legend_js", "oranges", False),
    "shift": ("chart.compare.legend_shift", "redblue", True),
    "entropy": ("chart.compare.legend_entropy", "purpleorange", True),
}
_GRID_CELL_PX, _SLIDE_GRID_CELL_PX = 26, 40
# The two heatmaps share a row: cells shrink with the text so both fit half of a laptop screen.
_PAIR_TARGET_PX, _SLIDE_PAIR_TARGET_PX = 340, 480
_MAX_CELL_PX, _MIN_CELL_PX = 22, 4
RANKED_HEADS = 12
_PADDING_PX = 12  # style_chart's padding, left and right
# Short enough for half of a 1000 px window, where a longer gradient is cut at the chart's edge.
_PAIR_LEGEND = alt.Legend(orient="bottom", direction="horizontal", gradientLength=120)
# B − A's legend ends in a wider label ("0.05", centred on the gradient's end): a shorter gradient keeps it inside a
# 15-token map in half the column of a 1000 px window.
_DIFFERENCE_LEGEND = alt.Legend(orient="bottom", direction="horizontal", gradientLength=96)


def head_movement_data(comparison: Comparison) -> pd.DataFrame:
    """One row per (layer, head): ``layer``, ``head``, ``name`` ("L3 H1"), ``js``, ``entropy`` (change) and
    ``shift`` (NaN without keys), plus ``rank`` (1 = moved most)."""
    layers, heads = comparison.js.shape
    layer_index, head_index = np.meshgrid(np.arange(layers), np.arange(heads), indexing="ij")  # (layers, heads)
    rank = np.empty(layers * heads, dtype=int)
    rank[comparison.ranked[:, 0] * heads + comparison.ranked[:, 1]] = np.arange(1, layers * heads + 1)
    shift = (np.full((layers, heads), np.nan) if comparison.key_shift is None else comparison.key_shift)
    return pd.DataFrame({
        "layer": layer_index.ravel(), "head": head_index.ravel(),
        "name": [f"L{layer} H{head}" for layer, head in zip(layer_index.ravel(), head_index.ravel())],
        "js": comparison.js.ravel().astype(float), "entropy": comparison.entropy_change.ravel().astype(float),
        "shift": shift.ravel().astype(float), "rank": rank,
    })


def _tooltip(comparison: Comparison, lang: str = DEFAULT_LANGUAGE) -> list[alt.Tooltip]:
    tips = [alt.Tooltip("name:N", title=t("heads.column.head", lang)),
            alt.Tooltip("rank:Q", title=t("chart.compare.rank", lang)),
            alt.Tooltip("js:Q", title=t("chart.compare.js", lang), format=".4f"),
            alt.Tooltip("entropy:Q", title=t("chart.compare.entropy", lang), format="+.3f")]
    if comparison.key_shift is not None:
        tips.append(alt.Tooltip("shift:Q", title=t("chart.compare.shift", lang), format="+.3f"))
    return tips


def _domain(metric: str, data: pd.DataFrame) -> list[float]:
    if metric == "js":  # up to the largest divergence: most pairs move far less than ln 2, and would all look pale
        return [0.0, min(max(float(data["js"].max()), 0.05), JS_MAX)]
    if metric == "shift":
        return [-1.0, 1.0]
    largest = float(np.nanmax(np.abs(data["entropy"]))) if len(data) else 0.0
    return [-max(largest, 0.1), max(largest, 0.1)]


def movement_grid_chart(comparison: Comparison, metric: str = "js", *, selected: tuple[int, int] | None = None,
                        slide: bool = False, lang: str = DEFAULT_LANGUAGE) -> alt.LayerChart:
    """Layer × head grid coloured by ``metric`` (a key of :data:`GRID_METRICS`), clickable: a point selection
    named :data:`HEAD_SELECTION` over ``layer`` and ``head``; ``selected`` outlines one cell."""
    if metric not in GRID_METRICS:
        raise ValueError(f"metric must be one of {sorted(GRID_METRICS)}, got {metric!r}")
    if metric == "shift" and comparison.key_shift is None:
        raise ValueError("the key-shift grid needs a comparison with two keys")
    legend_key, scheme, diverging = GRID_METRICS[metric]
    data = head_movement_data(comparison)
    base = alt.Chart(data).encode(x=alt.X("head:O", title=t("heads.column.head", lang),
                                          axis=head_axis(int(data["head"].max()) + 1, slide=slide,
                                                         keep=() if selected is None else (int(selected[1]),))),
                                  y=alt.Y("layer:O", title=t("chart.compare.layer", lang)),
                                  tooltip=_tooltip(comparison, lang))
    scale = alt.Scale(scheme=scheme, domain=_domain(metric, data), **({"domainMid": 0, "reverse": scheme == "redblue"}
                                                                      if diverging else {}))
    cells = base.mark_rect(cursor="pointer", stroke="white", strokeWidth=0.5).encode(
        color=alt.Color(f"{metric}:Q", title=t(legend_key, lang), scale=scale,
                        legend=alt.Legend(orient="bottom", direction="horizontal", titleLimit=400)),
    ).add_params(alt.selection_point(name=HEAD_SELECTION, fields=["layer", "head"], on="click", clear="dblclick"))
    drawn = [base.mark_rect(color="#d0d0d0"), cells]
    if selected is not None:
        only = (alt.datum.layer == int(selected[0])) & (alt.datum.head == int(selected[1]))
        drawn.append(base.mark_rect(fill=None, stroke="black" if slide else SELECTION_COLOR,
                                    strokeWidth=3).transform_filter(only))
    step = _SLIDE_GRID_CELL_PX if slide else _GRID_CELL_PX
    query = comparison.token_label(comparison.query)
    chart = alt.layer(*drawn).properties(
        title=chart_title(t("chart.compare.grid_title", lang, query=query), [t("chart.compare.grid_subtitle", lang)],
                          slide=slide),
        width=alt.Step(step), height=alt.Step(step))
    return style_chart(chart, slide)


def ranked_heads_chart(comparison: Comparison, *, top: int = RANKED_HEADS, slide: bool = False,
                       lang: str = DEFAULT_LANGUAGE) -> alt.Chart:
    """The ``top`` heads by JS divergence of the query's rows, largest first, as horizontal bars (the key shift
    and entropy change in the tooltip)."""
    data = head_movement_data(comparison).sort_values("rank").head(top)
    order = list(data["name"])
    # Drawn at its own width (the page asks for width="content"), labels and padding included: the title wraps to
    # that, not to the column, or its subtitle runs past the chart's right edge.
    width = 420 if slide else 300
    # No flush labels: Streamlit's theme sets labelFlush, which moves the first label down to the axis's top edge,
    # onto the second (12 px type is 16 px tall; the bars are 18 px apart).
    chart = alt.Chart(data).mark_bar().encode(
        x=alt.X("js:Q", title=t("chart.compare.legend_js", lang)),
        y=alt.Y("name:N", title=None, sort=order, axis=alt.Axis(labelOverlap=False, labelFlush=False)),
        color=alt.value("#e66101"),
        tooltip=_tooltip(comparison, lang),
    ).properties(title=chart_title(t("chart.compare.ranked_title", lang, count=len(data),
                                     query=comparison.token_label(comparison.query)),
                                   [t("chart.compare.ranked_subtitle", lang)], width=width - _PADDING_PX, slide=slide),
                 width=width, height=alt.Step(30 if slide else 18))
    return style_chart(chart, slide)


def _pair_cell_px(count: int, slide: bool) -> int:
    target = _SLIDE_PAIR_TARGET_PX if slide else _PAIR_TARGET_PX
    return int(np.clip(target // max(count, 1), _MIN_CELL_PX, _MAX_CELL_PX * (2 if slide else 1)))


def _matrix_data(weights: np.ndarray, labels: tuple[str, ...], query_row: int) -> pd.DataFrame:
    rows, cols = weights.shape
    query_index, key_index = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")  # (rows, cols)
    names = np.asarray(labels, dtype=object)
    return pd.DataFrame({"query": names[query_index.ravel()], "key": names[key_index.ravel()],
                         "is_query": (query_index.ravel() == query_row), "weight": weights.ravel().astype(float)})


def _matrix_chart(data: pd.DataFrame, labels: tuple[str, ...], *, title: str, subtitle: list[str], color: alt.Color,
                  cell: int, slide: bool, tooltip_title: str, tooltip_format: str,
                  lang: str = DEFAULT_LANGUAGE, keep: tuple[int, ...] = ()) -> alt.LayerChart:
    label_limit = 200 if slide else 110
    # The narrowest place each map is drawn at a 1000 px window: half the main column (the two share a row), or
    # all of it in slide mode, where they are stacked.
    column = FULL_WIDTH_PX if slide else HALF_COLUMN_PX
    # Too many tokens for the width (the key axis) or for the cell height (the query axis): every k-th token is
    # labelled (token_axis), and the subtitle says so — never Vega's silent overlap removal.
    if may_thin(labels, column - label_limit, slide) or cell < LABEL_PITCH_PX * (1.4 if slide else 1.0):
        subtitle = [*subtitle, thinned_note(lang)]
    base = alt.Chart(data).encode(
        # Key labels at −90°, so that the column is as narrow as a line of text. No flush labels (Streamlit's theme
        # sets labelFlush): the first and last would move off their cells towards their neighbours.
        x=alt.X("key:O", title=t("chart.compare.key_axis", lang), sort=list(labels),
                axis=token_axis(labels, horizontal=True, angle=-90, label_limit=label_limit, slide=slide,
                                keep=keep, labelFlush=False)),
        y=alt.Y("query:O", title=t("chart.compare.query_axis", lang), sort=list(labels),
                axis=token_axis(labels, horizontal=False, step_px=cell, label_limit=label_limit, slide=slide,
                                keep=keep, labelFlush=False)),
        tooltip=[alt.Tooltip("query:N", title=t("chart.compare.query_token", lang)),
                 alt.Tooltip("key:N", title=t("chart.compare.key_token", lang)),
                 alt.Tooltip("weight:Q", title=tooltip_title, format=tooltip_format)])
    cells = base.mark_rect().encode(color=color)
    # The query's row outlined cell by cell: one stroke colour that stands out on every palette.
    outline = base.mark_rect(fill=None, stroke="black" if slide else SELECTION_COLOR,
                             strokeWidth=2).transform_filter(alt.datum.is_query)
    return alt.layer(cells, outline).properties(title=chart_title(title, subtitle, width=HALF_COLUMN_PX, slide=slide),
                                                width=alt.Step(cell), height=alt.Step(cell))


def head_heatmap_chart(pair: HeadPair, side: str, *, slide: bool = False,
                       lang: str = DEFAULT_LANGUAGE) -> alt.LayerChart:
    """One side (``"A"`` or ``"B"``) of a head pair: the attention weights with the query's row outlined."""
    if side not in ("A", "B"):
        raise ValueError(f"side must be 'A' or 'B', got {side!r}")
    weights, labels, query = ((pair.weights_a, pair.labels_a, pair.query[0]) if side == "A"
                              else (pair.weights_b, pair.labels_b, pair.query[1]))
    weight = t("chart.compare.weight", lang)
    color = alt.Color("weight:Q", title=weight,
                      scale=alt.Scale(scheme=SLIDE_WEIGHT_SCHEME if slide else WEIGHT_SCHEME, domain=[0, 1]),
                      legend=_PAIR_LEGEND)
    chart = _matrix_chart(_matrix_data(weights, labels, query), labels,
                          title=t("chart.compare.heatmap_title", lang, side=side, layer=pair.layer, head=pair.head),
                          subtitle=[t("chart.compare.heatmap_subtitle", lang, label=labels[query])], color=color,
                          cell=_pair_cell_px(max(len(pair.labels_a), len(pair.labels_b)), slide), slide=slide,
                          tooltip_title=weight, tooltip_format=".3f", lang=lang, keep=(query,))
    return style_chart(chart, slide)


def head_difference_chart(pair: HeadPair, *, slide: bool = False, lang: str = DEFAULT_LANGUAGE) -> alt.LayerChart:
    """B − A of one head on the aligned tokens (rows and columns: aligned pairs), red where B attends more."""
    largest = max(float(np.abs(pair.difference).max()) if pair.difference.size else 0.0, 0.05)
    color = alt.Color("weight:Q", title="B − A",
                      scale=alt.Scale(scheme="redblue", reverse=True, domain=[-largest, largest], domainMid=0),
                      legend=_DIFFERENCE_LEGEND)
    chart = _matrix_chart(_matrix_data(pair.difference, pair.pair_labels, pair.query_row), pair.pair_labels,
                          title=t("chart.compare.difference_title", lang, layer=pair.layer, head=pair.head),
                          subtitle=[t("chart.compare.difference_subtitle", lang)], color=color,
                          cell=_pair_cell_px(len(pair.pair_labels), slide), slide=slide, tooltip_title="B − A",
                          tooltip_format="+.3f", lang=lang, keep=(pair.query_row,))
    return style_chart(chart, slide)


def query_rows_chart(pair: HeadPair, *, slide: bool = False, lang: str = DEFAULT_LANGUAGE) -> alt.Chart:
    """The query's row in A and in B on the aligned keys (plus the "other" bucket: keys without a partner), as
    paired horizontal bars — where this head's attention from the query went in each text."""
    labels = [*pair.pair_labels, t("chart.compare.other", lang)]
    text = t("chart.compare.text", lang)
    data = pd.DataFrame({"key": labels * 2, "side": ["A"] * len(labels) + ["B"] * len(labels),
                         "weight": np.concatenate([pair.query_a, pair.query_b]).astype(float)})
    chart = alt.Chart(data).mark_bar().encode(
        y=alt.Y("key:N", title=None, sort=labels, axis=alt.Axis(labelOverlap=False, labelLimit=200 if slide else 110)),
        yOffset=alt.YOffset("side:N", sort=["A", "B"]),
        x=alt.X("weight:Q", title=t("chart.compare.attention_weight", lang), scale=alt.Scale(domain=[0, 1])),
        color=alt.Color("side:N", title=text, scale=alt.Scale(domain=["A", "B"], range=["#3b528b", "#e66101"]),
                        legend=alt.Legend(orient="bottom", direction="horizontal")),
        tooltip=[alt.Tooltip("key:N", title=t("chart.compare.key", lang)), alt.Tooltip("side:N", title=text),
                 alt.Tooltip("weight:Q", title=t("chart.compare.weight", lang), format=".3f")],
    ).properties(title=chart_title(t("chart.compare.rows_title", lang, layer=pair.layer, head=pair.head),
                                   [t("chart.compare.rows_subtitle", lang)], width=HALF_COLUMN_PX, slide=slide),
                 height=alt.Step(16 if slide else 9))
    return style_chart(chart, slide)
