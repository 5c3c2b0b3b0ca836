"""The Inspect page's charts: the layer × head entropy grid, one head's heatmap, a layer's heads as small
multiples and entropy by layer. The shared look (palettes, slide mode, token labels) is :mod:`inspector.charts.base`."""

from __future__ import annotations

from collections.abc import Sequence

import altair as alt
import numpy as np
import pandas as pd

from inspector.charts.base import (
    ENTROPY_SCHEME,
    FULL_WIDTH_PX,
    HEAD_SELECTION,
    NARROW_COLUMN_PX,
    SELECTION_COLOR,
    SLIDE_ENTROPY_SCHEME,
    THINNED_NOTE,
    WIDE_COLUMN_PX,
    chart_title,
    largest_weight,
    may_thin,
    style_chart,
    token_axis,
    weight_scale,
)
from inspector.heatmap import HeatmapView
from inspector.metrics import HeadEntropy

# Recommended longest text (in rows of one view) for :func:`layer_heads_chart`: 12 heads × 64² cells is
# ~49k data rows, about the most a browser draws without stalling; the app checks this before calling.
SMALL_MULTIPLES_MAX_TOKENS = 64

# Heatmap cells shrink with the text so a 512-token input still fits on a screen; clamp to stay clickable.
_MAX_CELL_PX = 28
_MIN_CELL_PX = 4
_HEATMAP_TARGET_PX = 560
_SLIDE_MAX_CELL_PX = 44
_SLIDE_HEATMAP_TARGET_PX = 820
_GRID_CELL_PX = 26
_SLIDE_GRID_CELL_PX = 40
# Each small multiple is about this wide, whatever the length; cells stay at least 1 px. A row of them fits the
# main column at a 1000 px window (4 × 110 px, or 2 × 220 px on slides, plus the gaps).
_MULTIPLE_PX = 110
_SLIDE_MULTIPLE_PX = 220
_MULTIPLES_PER_ROW = 4
_SLIDE_MULTIPLES_PER_ROW = 2
# Token labels longer than this are cut (with "…"); the heatmap's colour legend sits under the plot, so the
# labels and the plot share the column's width.
_HEATMAP_LABEL_LIMIT_PX = 110
_SLIDE_HEATMAP_LABEL_LIMIT_PX = 150
# A compact legend under a grid: narrower than the narrowest column the grid is shown in.
_GRID_LEGEND_PX = 100

def _outline(base: alt.Chart, layer: int, head: int, slide: bool) -> list[alt.Chart]:
    """The selected cell's outline: one red stroke, or (slides) a white halo under a black stroke, which
    stands out on every colour of the palette without relying on hue."""
    only = (alt.datum.layer == int(layer)) & (alt.datum.head == int(head))
    if not slide:
        return [base.mark_rect(fill=None, stroke=SELECTION_COLOR, strokeWidth=3).transform_filter(only)]
    return [base.mark_rect(fill=None, stroke="white", strokeWidth=7).transform_filter(only),
            base.mark_rect(fill=None, stroke="black", strokeWidth=3).transform_filter(only)]


def head_entropy_data(entropy: HeadEntropy) -> pd.DataFrame:
    """One row per (layer, head): ``layer``, ``head``, ``normalized`` and ``raw`` (nats)."""
    layers, heads = entropy.raw.shape
    layer_index, head_index = np.meshgrid(np.arange(layers), np.arange(heads), indexing="ij")  # (layers, heads)
    return pd.DataFrame({
        "layer": layer_index.ravel(),
        "head": head_index.ravel(),
        "normalized": entropy.normalized.ravel().astype(float),
        "raw": entropy.raw.ravel().astype(float),
    })


_HEAD_ENTROPY_TOOLTIP = [alt.Tooltip("layer:O"), alt.Tooltip("head:O"),
                         alt.Tooltip("normalized:Q", title="entropy / log(keys)", format=".3f"),
                         alt.Tooltip("raw:Q", title="entropy (nats)", format=".3f")]


def entropy_grid_chart(entropy: HeadEntropy, *, selected: tuple[int, int] | None = None, selectable: bool = False,
                       slide: bool = False) -> alt.LayerChart:
    """Layer × head grid coloured by normalised entropy (0 = all weight on one key, 1 = uniform).

    One row of data per (layer, head): ``layer``, ``head``, ``normalized`` and ``raw`` (nats). Heads whose
    every row sees a single key have a NaN normalised entropy and are drawn grey. ``selected`` =
    (layer, head) outlines that cell. ``selectable`` adds a click selection named :data:`HEAD_SELECTION`
    over the fields ``layer`` and ``head`` to the coloured cells (for ``st.altair_chart(on_select=…)``).
    """
    data = head_entropy_data(entropy)
    base = alt.Chart(data).encode(
        # Every head numbered, in type small enough for 12 heads in the narrow column of a 1000 px window.
        x=alt.X("head:O", title="head", axis=alt.Axis(labelAngle=0, labelOverlap=False,
                                                      labelFontSize=alt.Undefined if slide else 10)),
        y=alt.Y("layer:O", title="layer"),
        tooltip=_HEAD_ENTROPY_TOOLTIP,
    )
    cells = base.mark_rect(cursor="pointer" if selectable else "default").encode(
        color=alt.Color("normalized:Q", title="entropy (normalised)",
                        scale=alt.Scale(scheme=SLIDE_ENTROPY_SCHEME if slide else ENTROPY_SCHEME, domain=[0, 1]),
                        # Below the grid, so a 12-head grid plus legend fits a narrow column.
                        # The legend's title in two lines: it starts under the plot, right of the layer axis, in a
                        # 180 px column. (The field's title stays one string: it names the cell for screen readers.)
                        legend=alt.Legend(orient="bottom", direction="horizontal", gradientLength=_GRID_LEGEND_PX,
                                          title="entropy (normalised)" if slide else ["entropy", "(normalised)"],
                                          titleLimit=FULL_WIDTH_PX if slide else NARROW_COLUMN_PX)),
    )
    if selectable:
        cells = cells.add_params(alt.selection_point(name=HEAD_SELECTION, fields=["layer", "head"], on="click",
                                                     clear="dblclick"))
    # Vega-Lite drops rows with a NaN colour value; a grey layer underneath keeps those cells visible.
    undefined = base.mark_rect(color="#d0d0d0")
    layers_drawn = [undefined, cells]
    if selected is not None:
        layers_drawn.extend(_outline(base, *selected, slide=slide))
    step = _SLIDE_GRID_CELL_PX if slide else _GRID_CELL_PX
    chart = alt.layer(*layers_drawn).properties(
        title=chart_title("Head entropy: how spread out each head's attention is",
                          ["Click a cell to show that head."] if selectable else (),
                          width=FULL_WIDTH_PX if slide else NARROW_COLUMN_PX, slide=slide),
        width=alt.Step(step), height=alt.Step(step),
    )
    return style_chart(chart, slide)


def heatmap_data(view: HeatmapView) -> pd.DataFrame:
    """One row per (query, key) cell of ``view``: labels, raw token texts, row/column index and ``weight``."""
    rows, cols = view.weights.shape
    query_index, key_index = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")  # (rows, cols)
    query_labels = np.asarray(view.query_labels, dtype=object)
    key_labels = np.asarray(view.key_labels, dtype=object)
    query_tokens = np.asarray(view.query_tokens, dtype=object)
    key_tokens = np.asarray(view.key_tokens, dtype=object)
    return pd.DataFrame({
        "query": query_labels[query_index.ravel()],
        "key": key_labels[key_index.ravel()],
        "query_token": query_tokens[query_index.ravel()],
        "key_token": key_tokens[key_index.ravel()],
        "query_index": query_index.ravel(),
        "key_index": key_index.ravel(),
        "weight": view.weights.ravel().astype(float),
    })


def _cell_px(count: int, slide: bool) -> int:
    target, largest = (_SLIDE_HEATMAP_TARGET_PX, _SLIDE_MAX_CELL_PX) if slide else (_HEATMAP_TARGET_PX, _MAX_CELL_PX)
    return int(np.clip(target // max(count, 1), _MIN_CELL_PX, largest))


def attention_heatmap_chart(view: HeatmapView, *, slide: bool = False) -> alt.Chart:
    """Heatmap of one head's attention: row = query (attending), column = key (attended to), colour = weight.

    Labels, title ("Layer L, head H: attention weights") and subtitle (the view's notes) come from
    ``view``; rows and columns may differ in number. Data: one row per cell (see :func:`heatmap_data`).
    """
    data = heatmap_data(view)
    cell = _cell_px(max(view.weights.shape), slide)
    label_limit = _SLIDE_HEATMAP_LABEL_LIMIT_PX if slide else _HEATMAP_LABEL_LIMIT_PX
    column = FULL_WIDTH_PX if slide else WIDE_COLUMN_PX
    notes = list(view.notes)
    if may_thin(view.key_labels, column - label_limit, slide) or cell < 14:
        notes.append(THINNED_NOTE)
    chart = alt.Chart(data).mark_rect().encode(
        x=alt.X("key:O", title="key (attended to)", sort=list(view.key_labels),
                axis=token_axis(view.key_labels, horizontal=True, label_limit=label_limit, slide=slide)),
        y=alt.Y("query:O", title="query (attending)", sort=list(view.query_labels),
                axis=token_axis(view.query_labels, horizontal=False, step_px=cell, label_limit=label_limit,
                                slide=slide)),
        color=alt.Color("weight:Q", title="weight", scale=weight_scale(slide, largest_weight(view.weights)),
                        legend=alt.Legend(orient="bottom", direction="horizontal", gradientLength=_GRID_LEGEND_PX)),
        tooltip=[alt.Tooltip("query:N", title="query token"), alt.Tooltip("key:N", title="key token"),
                 alt.Tooltip("weight:Q", format=".3f")],
    ).properties(title=chart_title(f"Layer {view.layer}, head {view.head}: attention weights", notes, width=column,
                                   slide=slide),
                 width=alt.Step(cell), height=alt.Step(cell))
    return style_chart(chart, slide)


def layer_heads_chart(views: Sequence[HeatmapView], *, slide: bool = False) -> alt.FacetChart:
    """Small multiples: every head of one layer side by side (:data:`_MULTIPLES_PER_ROW` per row), same
    colour scale, no token labels (hover a cell for them). ``views``: one per head, all of one layer and
    with the same rows and columns (as :func:`inspector.heatmap.layer_views` returns). Keep the text at or
    under :data:`SMALL_MULTIPLES_MAX_TOKENS` rows: the data has heads × rows × cols entries."""
    if not views:
        raise ValueError("layer_heads_chart needs at least one view")
    first = views[0]
    for view in views[1:]:
        if view.layer != first.layer or view.query_labels != first.query_labels or view.key_labels != first.key_labels:
            raise ValueError("layer_heads_chart: every view must come from one layer with the same options "
                             "(use inspector.heatmap.layer_views)")
    frames = []
    for view in views:
        frame = heatmap_data(view)
        frame.insert(0, "head", view.head)
        frames.append(frame)
    data = pd.concat(frames, ignore_index=True)
    rows, cols = first.weights.shape
    size = _SLIDE_MULTIPLE_PX if slide else _MULTIPLE_PX
    cell_w, cell_h = max(1, size // max(cols, 1)), max(1, size // max(rows, 1))
    panel = alt.Chart().mark_rect().encode(
        x=alt.X("key_index:O", axis=None),
        y=alt.Y("query_index:O", axis=None),
        color=alt.Color("weight:Q", title="weight",
                        scale=weight_scale(slide, largest_weight(*(view.weights for view in views)))),
        tooltip=[alt.Tooltip("head:O"), alt.Tooltip("query:N", title="query token"),
                 alt.Tooltip("key:N", title="key token"), alt.Tooltip("weight:Q", format=".3f")],
    ).properties(width=alt.Step(cell_w), height=alt.Step(cell_h))
    chart = panel.facet(
        data=data,
        facet=alt.Facet("head:O", title=None, header=alt.Header(labelExpr="'head ' + datum.value", labelOrient="top")),
        columns=_SLIDE_MULTIPLES_PER_ROW if slide else _MULTIPLES_PER_ROW,
    ).properties(title=chart_title(f"Layer {first.layer}: every head", first.notes, slide=slide))
    return style_chart(chart, slide)


def entropy_by_layer_chart(entropy: HeadEntropy, *, slide: bool = False) -> alt.LayerChart:
    """Normalised entropy of every head (dots) and the layer mean (line), layer by layer — the "broad in
    shallow layers, sharp in deep ones" check (Clark et al. 2019 report broad early layers on BERT).

    Data: one row per (layer, head) with ``normalized`` and ``raw`` (nats); the line is the mean of
    ``normalized`` over the layer's heads (Vega's mean skips the NaN heads).
    """
    data = head_entropy_data(entropy)
    x = alt.X("layer:O", title="layer (input → output)", axis=alt.Axis(labelAngle=0))
    y_scale = alt.Scale(domain=[0, 1])
    dots = alt.Chart(data).mark_circle(size=110 if slide else 50, opacity=0.7).encode(
        x=x, y=alt.Y("normalized:Q", title="entropy / log(keys)", scale=y_scale),
        color=alt.value("#3b528b"),
        tooltip=_HEAD_ENTROPY_TOOLTIP,
    )
    # Blue dots and an orange line: a pair every common colour-vision deficiency tells apart.
    mean_line = alt.Chart(data).mark_line(point=True, strokeWidth=4 if slide else 2, color="#e66101").encode(
        x=x, y=alt.Y("mean(normalized):Q", scale=y_scale),
        tooltip=[alt.Tooltip("layer:O"), alt.Tooltip("mean(normalized):Q", title="layer mean", format=".3f")],
    )
    step = 70 if slide else 48
    chart = alt.layer(dots, mean_line).properties(
        title=chart_title("Entropy by layer: does attention sharpen with depth?",
                          ["Dots: each head (0 = one key, 1 = uniform). Line: the layer's mean."],
                          width=FULL_WIDTH_PX if slide else NARROW_COLUMN_PX, slide=slide),
        width=alt.Step(step), height=420 if slide else 260,
    )
    return style_chart(chart, slide)
