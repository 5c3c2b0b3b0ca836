"""The Inspect page's charts: the layer × head entropy grid, one head's heatmap, a layer's heads as small
multiples and entropy by layer. The shared look (palettes, slide mode, token labels) is :mod:`inspector.charts.base`.

Every builder takes ``lang`` (a language of :data:`inspector.base.i18n.LANGUAGES`): titles, axis, legend, header and
tooltip titles come from the catalogue (``chart.inspect.*``), so a Chinese page and its exports read Chinese. The
data's column names stay English (encodings refer to them); token strings are data and stay as they are.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import altair as alt
import numpy as np
import pandas as pd

from inspector.analyses.heatmap import HeatmapView
from inspector.analyses.metrics import HeadEntropy
from inspector.base.i18n import DEFAULT_LANGUAGE, notice_text, t
from inspector.charts.base import (
    CELL_SELECTION,
    ENTROPY_SCHEME,
    FULL_WIDTH_PX,
    HEAD_SELECTION,
    NARROW_COLUMN_PX,
    SELECTION_COLOR,
    SLIDE_ENTROPY_SCHEME,
    WIDE_COLUMN_PX,
    chart_title,
    head_axis,
    largest_weight,
    may_thin,
    style_chart,
    thinned_note,
    token_axis,
    weight_scale,
)

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
_AXIS_TITLE_PX = 20  # a vertical axis title and its padding, beside the labels
_SLIDE_HEATMAP_LABEL_LIMIT_PX = 150
# A compact legend under a grid: narrower than the narrowest column the grid is shown in.
_GRID_LEGEND_PX = 100
# Under the Inspect page's entropy grid in a 1000 px window: a 4-head grid beside "17 · global" layer labels keeps
# about 60 px of plot, and the legend starts under the plot (a 100 px one ran past the chart's edge).
_NARROW_GRID_LEGEND_PX = 56
# Cells a query cannot see (causal mask, sliding window): a mid grey, apart from the weights' white-to-blue ramp and
# from the grid's "undefined" light grey.
MASKED_COLOR = "#9e9e9e"


def _outline(base: alt.Chart, layer: int, head: int, slide: bool) -> list[alt.Chart]:
    """The selected cell's outline: one red stroke, or (slides) a white halo under a black stroke, which
    stands out on every colour of the palette without relying on hue."""
    only = (alt.datum.layer == int(layer)) & (alt.datum.head == int(head))
    if not slide:
        return [base.mark_rect(fill=None, stroke=SELECTION_COLOR, strokeWidth=3).transform_filter(only)]
    return [base.mark_rect(fill=None, stroke="white", strokeWidth=7).transform_filter(only),
            base.mark_rect(fill=None, stroke="black", strokeWidth=3).transform_filter(only)]


def head_entropy_data(entropy: HeadEntropy, *, kv_heads: int | None = None, windows: Sequence[int | None] = (),
                      lang: str = DEFAULT_LANGUAGE) -> pd.DataFrame:
    """One row per (layer, head): ``layer``, ``head``, ``normalized`` and ``raw`` (nats); with ``kv_heads`` (a
    grouped-query model's key/value heads) also ``kv``, the key/value head each query head shares; with ``windows``
    (each layer's sliding window or None, :attr:`Capture.windows`) where some layer has one, ``kind`` ("local 512" /
    "global", in ``lang``)."""
    layers, heads = entropy.raw.shape
    layer_index, head_index = np.meshgrid(np.arange(layers), np.arange(heads), indexing="ij")  # (layers, heads)
    data = pd.DataFrame({
        "layer": layer_index.ravel(),
        "head": head_index.ravel(),
        "normalized": entropy.normalized.ravel().astype(float),
        "raw": entropy.raw.ravel().astype(float),
    })
    if kv_head(0, heads, kv_heads) is not None:
        data["kv"] = [kv_head(h, heads, kv_heads) for h in data["head"]]
    if _windowed(windows, layers):
        data["kind"] = [layer_kind_text(windows[layer], True, lang) for layer in data["layer"]]
    return data


def _windowed(windows: Sequence[int | None], layers: int) -> bool:
    return len(windows) == layers and any(w is not None for w in windows)


def _head_entropy_tooltip(lang: str, data: pd.DataFrame | None = None) -> list[alt.Tooltip]:
    extra = [] if data is None else (
        ([alt.Tooltip("kv:O", title=t("chart.inspect.kv_head", lang))] if "kv" in data else [])
        + ([alt.Tooltip("kind:N", title=t("chart.inspect.layer_kind", lang))] if "kind" in data else []))
    return [alt.Tooltip("layer:O", title=t("chart.inspect.layer", lang)),
            alt.Tooltip("head:O", title=t("heads.column.head", lang)), *extra,
            alt.Tooltip("normalized:Q", title=t("chart.inspect.entropy_per_log_keys", lang), format=".3f"),
            alt.Tooltip("raw:Q", title=t("chart.inspect.entropy_nats", lang), format=".3f")]


def _two_lines(text: str) -> str | list[str]:
    """A legend title broken before its parenthesis ("entropy", "(normalised)"; "熵", "（归一化）"), so it fits under a
    narrow grid; a title without one stays one line."""
    for opening in (" (", "（"):
        first, parenthesis, rest = text.partition(opening)
        if parenthesis:
            return [first, opening.strip() + rest]
    return text


def _vega_string(text: str) -> str:
    """``text`` as a single-quoted Vega expression string."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _header_expression(key: str, lang: str, field: str) -> str:
    """A Vega expression that writes the catalogue text ``key`` with ``datum.value`` in its ``{field}``
    placeholder: ``head {head}`` → ``'head ' + datum.value``; ``第 {head} 个头`` → ``'第 ' + datum.value + ' 个头'``."""
    slot = "\x00"  # a character no catalogue text holds, marking where the value goes
    before, _, after = t(key, lang, **{field: slot}).partition(slot)
    parts = ([_vega_string(before)] if before else []) + ["datum.value"] + ([_vega_string(after)] if after else [])
    return " + ".join(parts)


def _notes(notes, lang: str) -> list[str]:
    """A view's notes in ``lang`` (:class:`~inspector.core.capture.Notice` strings translate; others stay)."""
    return [notice_text(note, lang) for note in notes]


def entropy_grid_chart(entropy: HeadEntropy, *, selected: tuple[int, int] | None = None, selectable: bool = False,
                       slide: bool = False, lang: str = DEFAULT_LANGUAGE, kv_heads: int | None = None,
                       windows: Sequence[int | None] = ()) -> alt.LayerChart:
    """Layer × head grid coloured by normalised entropy (0 = all weight on one key, 1 = uniform).

    One row of data per (layer, head): ``layer``, ``head``, ``normalized`` and ``raw`` (nats). Heads whose
    every row sees a single key have a NaN normalised entropy and are drawn grey. ``selected`` =
    (layer, head) outlines that cell. ``selectable`` adds a click selection named :data:`HEAD_SELECTION`
    over the fields ``layer`` and ``head`` to the coloured cells (for ``st.altair_chart(on_select=…)``).
    ``kv_heads`` (the model's key/value heads, grouped-query attention): each head is labelled "head·kv head"
    ("5·1": query head 5 reads key/value head 1; the title's note explains it with the selected head, or the last
    one: an example from the model on screen). ``windows`` (each layer's window, :attr:`Capture.windows`): in a
    model with sliding-window layers each layer is labelled "local 512" or "global".
    """
    data = head_entropy_data(entropy, kv_heads=kv_heads, windows=windows, lang=lang)
    legend = t("chart.inspect.entropy_normalised", lang)
    heads = entropy.raw.shape[1]
    keep = () if selected is None else (int(selected[1]),)
    # Every head numbered when there is room; in the narrow column every k-th, the selected one first (issue 31).
    numbers = head_axis(heads, keep=keep, slide=slide, font_px=10, labelFontSize=alt.Undefined if slide else 10)
    head_title = t("heads.column.head", lang)
    notes = [t("chart.inspect.grid_click", lang)] if selectable else []
    if "kv" in data:
        group = heads // kv_heads
        example = heads - 1 if selected is None else int(selected[1])
        notes.append(t("chart.inspect.gqa_note", lang, heads=heads, kv=kv_heads, head=example,
                       kv_head=example // group))
        numbers = head_axis(heads, keep=keep, slide=slide, font_px=10, labelFontSize=alt.Undefined if slide else 10,
                            extra_chars=1 + len(str(max(kv_heads - 1, 0))),
                            label=f"datum.value + '·' + floor(datum.value / {group})")
        head_title = t("chart.inspect.head_kv_axis", lang)
    layer_axis, layer_title = alt.Axis(), t("chart.inspect.layer", lang)
    if "kind" in data:
        # Local layers by number, global ones marked: "local 512" on every layer squeezed the grid in a 180 px column.
        window = max(w for w in windows if w is not None)
        marks = json.dumps(["" if w == window else " · " + layer_kind_text(w, True, lang) for w in windows],
                           ensure_ascii=True)
        layer_axis = alt.Axis(labelExpr=f"datum.value + {marks}[datum.value]", labelLimit=NARROW_COLUMN_PX)
        layer_title = t("chart.inspect.layer_local_axis", lang, window=window)
    base = alt.Chart(data).encode(
        # Every head numbered, in type small enough for 12 heads in the narrow column of a 1000 px window.
        x=alt.X("head:O", title=head_title, axis=numbers),
        y=alt.Y("layer:O", title=layer_title, axis=layer_axis),
        tooltip=_head_entropy_tooltip(lang, data),
    )
    cells = base.mark_rect(cursor="pointer" if selectable else "default").encode(
        color=alt.Color("normalized:Q", title=legend,
                        scale=alt.Scale(scheme=SLIDE_ENTROPY_SCHEME if slide else ENTROPY_SCHEME, domain=[0, 1]),
                        # Below the grid, so a 12-head grid plus legend fits a narrow column.
                        # The legend's title in two lines: it starts under the plot, right of the layer axis, in a
                        # 180 px column. (The field's title stays one string: it names the cell for screen readers.)
                        legend=alt.Legend(orient="bottom", direction="horizontal",
                                          gradientLength=_GRID_LEGEND_PX if slide else _NARROW_GRID_LEGEND_PX,
                                          values=[0, 0.5, 1] if slide else [0, 1],
                                          title=legend if slide else _two_lines(legend),
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
        title=chart_title(t("chart.inspect.grid_title", lang), notes,
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
        "masked": (view.masked.ravel() if view.masked is not None else np.zeros(rows * cols, dtype=bool)),
    })


def kv_head(head: int, num_heads: int, kv_heads: int | None) -> int | None:
    """The key/value head that query head ``head`` reads (grouped-query attention: query heads
    g·k … g·k + g − 1 share key/value head k, g = heads / kv heads), or None when every head has its own."""
    if not kv_heads or kv_heads >= num_heads:
        return None
    return int(head) // (num_heads // kv_heads)


def layer_kind_text(window: int | None, windowed_model: bool, lang: str) -> str | None:
    """"local 512" for a sliding-window layer, "global" for a full layer of a model that has windowed ones, None for
    a model without windows."""
    if window is not None:
        return t("chart.inspect.local", lang, window=window)
    return t("chart.inspect.global", lang) if windowed_model else None


def _cell_px(count: int, slide: bool) -> int:
    target, largest = (_SLIDE_HEATMAP_TARGET_PX, _SLIDE_MAX_CELL_PX) if slide else (_HEATMAP_TARGET_PX, _MAX_CELL_PX)
    return int(np.clip(target // max(count, 1), _MIN_CELL_PX, largest))


def heatmap_title(view: HeatmapView, lang: str, kv_heads: int | None = None, num_heads: int | None = None) -> str:
    """"Layer L, head H: attention weights", with the key/value head a grouped-query head shares ("· kv head 0")
    and the layer's kind in a model with sliding windows ("· local 512" / "· global")."""
    title = t("chart.inspect.heatmap_title", lang, layer=view.layer, head=view.head)
    shared = kv_head(view.head, num_heads or 0, kv_heads)
    if shared is not None:
        title += t("chart.inspect.kv_suffix", lang, kv=shared)
    kind = layer_kind_text(view.window, view.windowed_model, lang)
    return title + (f" · {kind}" if kind else "")


def attention_heatmap_chart(view: HeatmapView, *, slide: bool = False, lang: str = DEFAULT_LANGUAGE,
                            kv_heads: int | None = None, num_heads: int | None = None,
                            selectable: bool = False, column_px: int | None = None) -> alt.Chart | alt.LayerChart:
    """Heatmap of one head's attention: row = query (attending), column = key (attended to), colour = weight.

    Labels, title ("Layer L, head H: attention weights") and subtitle (the view's notes, in ``lang``) come from
    ``view``; rows and columns may differ in number. Data: one row per cell (see :func:`heatmap_data`).
    ``kv_heads``/``num_heads`` (the model's): a grouped-query head's title names the key/value head it shares.
    Cells the query could not see (``view.masked``: a causal model's later keys, keys outside a window) are drawn
    grey, not white, with their own legend entry ("masked") and a note under the title saying why: their zero is the
    mask's, not the head's choice.
    ``selectable`` adds a click selection named :data:`CELL_SELECTION` on the visible cells (their row and column
    indices; read it with :func:`~inspector.charts.base.selected_cell`).

    ``column_px``: on screen, the column the chart is drawn in at a 1000 px window. Streamlit stretches (or
    squeezes) a step-sized chart's width to its column but keeps its height, so 16 keys of 28 px in a 290 px column
    were tall, narrow cells (issue 44): the rows take the height the squeezed columns get, and the cells stay square.
    Exports leave it out and keep their larger cells.
    """
    data = heatmap_data(view)
    cell = _cell_px(max(view.weights.shape), slide)
    label_limit = _SLIDE_HEATMAP_LABEL_LIMIT_PX if slide else _HEATMAP_LABEL_LIMIT_PX
    if column_px is not None:  # the plot's drawn width: the column less the query labels and the axis title
        drawn = column_px - label_limit - _AXIS_TITLE_PX
        cell = int(np.clip(drawn // max(view.weights.shape[1], 1), _MIN_CELL_PX, cell))
    column = FULL_WIDTH_PX if slide else WIDE_COLUMN_PX
    notes = _notes(view.notes, lang) + ([] if view.masked is None else [masked_reason(view, lang)])
    if may_thin(view.key_labels, column - label_limit, slide) or cell < 14:
        notes.append(thinned_note(lang))
    weight = t("chart.inspect.weight", lang)
    x = alt.X("key:O", title=t("chart.inspect.key_axis", lang), sort=list(view.key_labels),
              axis=token_axis(view.key_labels, horizontal=True, label_limit=label_limit, slide=slide))
    y = alt.Y("query:O", title=t("chart.inspect.query_axis", lang), sort=list(view.query_labels),
              axis=token_axis(view.query_labels, horizontal=False, step_px=cell, label_limit=label_limit,
                              slide=slide))
    tooltip = [alt.Tooltip("query:N", title=t("chart.inspect.query_token", lang)),
               alt.Tooltip("key:N", title=t("chart.inspect.key_token", lang)),
               alt.Tooltip("weight:Q", title=weight, format=".3f")]
    base = alt.Chart(data)
    cells = base.mark_rect(cursor="pointer" if selectable else "default").encode(
        x=x, y=y,
        color=alt.Color("weight:Q", title=weight, scale=weight_scale(slide, largest_weight(view.weights)),
                        legend=alt.Legend(orient="bottom", direction="horizontal", gradientLength=_GRID_LEGEND_PX)),
        tooltip=tooltip,
    )
    if selectable:
        cells = cells.add_params(alt.selection_point(name=CELL_SELECTION, fields=["query_index", "key_index"],
                                                     on="click", clear="dblclick"))
    title = chart_title(heatmap_title(view, lang, kv_heads, num_heads), notes, width=column, slide=slide)
    if view.masked is None:
        chart = cells.properties(title=title, width=alt.Step(cell), height=alt.Step(cell))
        return style_chart(chart, slide)
    # The mask: its own layer and a one-entry legend ("masked: later key (causal)"), so a reader can tell a
    # structural zero from a learned one. The weight layer leaves those cells out.
    masked = t("chart.inspect.masked", lang)
    masked_cells = base.transform_filter(alt.datum.masked).transform_calculate(mask=_vega_string(masked)).mark_rect(
        stroke="white", strokeWidth=0.5 if cell >= 8 else 0).encode(
        x=x, y=y,
        color=alt.Color("mask:N", title=None, scale=alt.Scale(domain=[masked], range=[MASKED_COLOR]),
                        # Above the plot: beside the weights' legend under it, the label ran past the chart's edge.
                        legend=alt.Legend(orient="top", symbolType="square")),
        tooltip=[*tooltip[:2], alt.Tooltip("mask:N", title=weight)],
    )
    chart = alt.layer(cells.transform_filter(~alt.datum.masked), masked_cells).resolve_scale(
        color="independent").properties(title=title, width=alt.Step(cell), height=alt.Step(cell))
    return style_chart(chart, slide)


def masked_reason(view: HeatmapView, lang: str) -> str:
    """The note under the title that says why the grey (masked) cells are grey: why the query could not see them."""
    if view.causal and view.window is not None:
        return t("chart.inspect.masked_causal_window", lang, window=view.window)
    if view.window is not None:
        return t("chart.inspect.masked_window", lang, window=view.window)
    return t("chart.inspect.masked_causal", lang)


def layer_heads_chart(views: Sequence[HeatmapView], *, slide: bool = False, lang: str = DEFAULT_LANGUAGE,
                      kv_heads: int | None = None) -> alt.FacetChart:
    """Small multiples: every head of one layer side by side (:data:`_MULTIPLES_PER_ROW` per row), same
    colour scale, no token labels (hover a cell for them). ``views``: one per head, all of one layer and
    with the same rows and columns (as :func:`inspector.analyses.heatmap.layer_views` returns). Keep the text at or
    under :data:`SMALL_MULTIPLES_MAX_TOKENS` rows: the data has heads × rows × cols entries."""
    if not views:
        raise ValueError("layer_heads_chart needs at least one view")
    first = views[0]
    for view in views[1:]:
        if view.layer != first.layer or view.query_labels != first.query_labels or view.key_labels != first.key_labels:
            raise ValueError("layer_heads_chart: every view must come from one layer with the same options "
                             "(use inspector.analyses.heatmap.layer_views)")
    frames = []
    for view in views:
        frame = heatmap_data(view)
        frame.insert(0, "head", view.head)
        frames.append(frame)
    data = pd.concat(frames, ignore_index=True)
    rows, cols = first.weights.shape
    size = _SLIDE_MULTIPLE_PX if slide else _MULTIPLE_PX
    cell_w, cell_h = max(1, size // max(cols, 1)), max(1, size // max(rows, 1))
    weight = t("chart.inspect.weight", lang)
    panel = alt.Chart().mark_rect().encode(
        x=alt.X("key_index:O", axis=None),
        y=alt.Y("query_index:O", axis=None),
        # Masked cells (causal, window) grey as on the heatmap, so a structural zero never reads as a learned one.
        # The scale under the panels: beside them it was cut off at the column's edge when the headers widen the
        # panels ("第 0 个头 · 共享键值头 0", SmolLM2 in 简体中文 at 1000 px; issue 44 walkthrough).
        color=alt.condition("datum.masked", alt.value(MASKED_COLOR), alt.Color(
            "weight:Q", title=weight, scale=weight_scale(slide, largest_weight(*(view.weights for view in views))),
            legend=alt.Legend(orient="bottom", direction="horizontal", titleOrient="left", titleAnchor="start"))),
        tooltip=[alt.Tooltip("head:O", title=t("heads.column.head", lang)),
                 alt.Tooltip("query:N", title=t("chart.inspect.query_token", lang)),
                 alt.Tooltip("key:N", title=t("chart.inspect.key_token", lang)),
                 alt.Tooltip("weight:Q", title=weight, format=".3f")],
    ).properties(width=alt.Step(cell_w), height=alt.Step(cell_h))
    label = _header_expression("chart.inspect.head_header", lang, "head")
    if kv_head(0, len(views), kv_heads) is not None:  # "head 5 · kv 1": the key/value head it shares
        label += " + " + _header_expression("chart.inspect.kv_suffix", lang, "kv").replace(
            "datum.value", f"floor(datum.value / {len(views) // kv_heads})")
    header = alt.Header(labelExpr=label, labelOrient="top")
    chart = panel.facet(
        data=data,
        facet=alt.Facet("head:O", title=None, header=header),
        columns=_SLIDE_MULTIPLES_PER_ROW if slide else _MULTIPLES_PER_ROW,
    ).properties(title=chart_title(t("chart.inspect.layer_heads_title", lang, layer=first.layer),
                                   _notes(first.notes, lang), slide=slide))
    return style_chart(chart, slide)


def entropy_by_layer_chart(entropy: HeadEntropy, *, slide: bool = False,
                           lang: str = DEFAULT_LANGUAGE) -> alt.LayerChart:
    """Normalised entropy of every head (dots) and the layer mean (line), layer by layer — the "broad in
    shallow layers, sharp in deep ones" check (Clark et al. 2019 report broad early layers on BERT).

    Data: one row per (layer, head) with ``normalized`` and ``raw`` (nats); the line is the mean of
    ``normalized`` over the layer's heads (Vega's mean skips the NaN heads).
    """
    data = head_entropy_data(entropy)
    x = alt.X("layer:O", title=t("chart.inspect.layer_depth", lang), axis=alt.Axis(labelAngle=0))
    y_scale = alt.Scale(domain=[0, 1])
    dots = alt.Chart(data).mark_circle(size=110 if slide else 50, opacity=0.7).encode(
        x=x, y=alt.Y("normalized:Q", title=t("chart.inspect.entropy_per_log_keys", lang), scale=y_scale),
        color=alt.value("#3b528b"),
        tooltip=_head_entropy_tooltip(lang),
    )
    # Blue dots and an orange line: a pair every common colour-vision deficiency tells apart.
    mean_line = alt.Chart(data).mark_line(point=True, strokeWidth=4 if slide else 2, color="#e66101").encode(
        x=x, y=alt.Y("mean(normalized):Q", scale=y_scale),
        tooltip=[alt.Tooltip("layer:O", title=t("chart.inspect.layer", lang)),
                 alt.Tooltip("mean(normalized):Q", title=t("chart.inspect.layer_mean", lang), format=".3f")],
    )
    step = 70 if slide else 48
    chart = alt.layer(dots, mean_line).properties(
        title=chart_title(t("chart.inspect.by_layer_title", lang), [t("chart.inspect.by_layer_note", lang)],
                          width=FULL_WIDTH_PX if slide else NARROW_COLUMN_PX, slide=slide),
        width=alt.Step(step), height=420 if slide else 260,
    )
    return style_chart(chart, slide)
