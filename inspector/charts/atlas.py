"""The head atlas's pictures (issue 41; HeadVis's scatter of every head): one point per head placed by any two of its
metrics (:func:`inspector.analyses.atlas.atlas_metrics`: the census's statistics, the probe's role scores, the
layer), coloured by a third, clickable (the point selection :data:`~inspector.charts.base.HEAD_SELECTION`); and a
context as a line of tokens (:func:`context_html`) with the query outlined and the attended keys shaded by weight.
Builders take finished numbers and compute no analysis; words come from the catalogue in ``lang``.

The context is HTML, so every token is escaped (:func:`html.escape`) before it is placed: a corpus is data, and a
token such as ``<img src=x onerror=…>`` must reach the page as text.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

import altair as alt
import numpy as np
import pandas as pd

from inspector.analyses.atlas import LAYER_METRIC, Atlas, MetricGrid, atlas_metrics
from inspector.analyses.batching import STATISTICS
from inspector.base.i18n import DEFAULT_LANGUAGE, t
from inspector.base.tokens import readable_tokens
from inspector.charts.base import (
    ENTROPY_SCHEME,
    HALF_COLUMN_PX,
    HEAD_SELECTION,
    SELECTION_COLOR,
    chart_title,
    style_chart,
)
from inspector.charts.census import statistic_name
from inspector.charts.sentences.roles import role_name

_HEIGHT_PX, _SLIDE_HEIGHT_PX = 360, 520
_METRICS_HEIGHT_PX = 260  # a card's metrics table scrolls down past this
# How many tokens a context shows on each side of the span from its first attended key to its query.
CONTEXT_MARGIN = 12


def metric_name(metric: str, lang: str = DEFAULT_LANGUAGE) -> str:
    """A metric of the atlas in words: the layer, a census statistic, or a role's probe score."""
    if metric == LAYER_METRIC:
        return t("chart.inspect.layer", lang)
    if metric in STATISTICS:
        return statistic_name(metric, lang)
    return t("atlas.metric_role", lang, role=role_name(metric, lang))


def _interval(grid: MetricGrid, layer: np.ndarray, head: np.ndarray) -> list[str]:
    low, high = grid.low[layer, head], grid.high[layer, head]
    return ["–" if not (np.isfinite(a) and np.isfinite(b)) else f"{a:.3f}–{b:.3f}" for a, b in zip(low, high)]


def atlas_table(atlas: Atlas, metrics: Sequence[str], lang: str = DEFAULT_LANGUAGE) -> pd.DataFrame:
    """One row per head: layer, head, name (``L{layer}H{head}``), its dominant role in ``lang`` (or "–"), and for
    each of ``metrics`` its mean (column = the metric) and interval (``{metric}_interval``)."""
    layers, heads = atlas.shape
    layer, head = (index.ravel() for index in np.meshgrid(np.arange(layers), np.arange(heads), indexing="ij"))
    grids = atlas_metrics(atlas)
    data: dict[str, object] = {"layer": layer, "head": head,
                               "name": [f"L{a}H{b}" for a, b in zip(layer, head)]}
    dominant = atlas.roles["dominant"] if atlas.roles is not None else None
    data["role"] = [role_name(str(dominant[a][b]), lang) if dominant is not None else "–" for a, b in zip(layer, head)]
    for metric in dict.fromkeys(metrics):
        data[metric] = grids[metric].mean[layer, head]
        data[f"{metric}_interval"] = _interval(grids[metric], layer, head)
    return pd.DataFrame(data)


def atlas_scatter_chart(atlas: Atlas, x: str, y: str, colour: str, *, title: str,
                        selected: tuple[int, int] | None = None, slide: bool = False,
                        lang: str = DEFAULT_LANGUAGE) -> alt.LayerChart:
    """Every head of ``atlas`` as a point at (``x``, ``y``), coloured by ``colour`` (metrics of
    :func:`~inspector.analyses.atlas.atlas_metrics`); the layer, head, role and each metric's interval on hover;
    clickable (the point selection :data:`HEAD_SELECTION` over layer and head); ``selected`` is ringed. Each point's
    accessible description is its head's name (``L3H5``), which is how a browser test finds it."""
    data = atlas_table(atlas, (x, y, colour), lang)
    tooltip = [alt.Tooltip("name:N", title=t("heads.column.head", lang)),
               alt.Tooltip("layer:O", title=t("chart.inspect.layer", lang)),
               alt.Tooltip("role:N", title=t("chart.roles.dominant", lang))]
    for metric in dict.fromkeys((x, y, colour)):
        if metric != LAYER_METRIC:
            tooltip.append(alt.Tooltip(f"{metric}:Q", title=metric_name(metric, lang), format=".3f"))
            tooltip.append(alt.Tooltip(f"{metric}_interval:N", title=f"{metric_name(metric, lang)} · 95 %"))
    base = alt.Chart(data).encode(
        x=alt.X(f"{x}:Q", title=metric_name(x, lang), scale=alt.Scale(zero=False, nice=True)),
        y=alt.Y(f"{y}:Q", title=metric_name(y, lang), scale=alt.Scale(zero=False, nice=True)),
        tooltip=tooltip, description=alt.Description("name:N"))
    points = base.mark_circle(size=140 if slide else 70, opacity=0.85, cursor="pointer", stroke="white",
                              strokeWidth=0.5).encode(
        color=alt.Color(f"{colour}:Q", title=metric_name(colour, lang), scale=alt.Scale(scheme=ENTROPY_SCHEME),
                        # Under the plot: on the right, a long colour name ("mass punctuation") left the plot
                        # 50 px wide in one of two side-by-side atlases at 1000 px.
                        legend=alt.Legend(orient="bottom", direction="horizontal", titleLimit=220,
                                          gradientLength=160)),
    ).add_params(alt.selection_point(name=HEAD_SELECTION, fields=["layer", "head"], on="click", clear="dblclick"))
    drawn = [points]
    if selected is not None:
        only = (alt.datum.layer == int(selected[0])) & (alt.datum.head == int(selected[1]))
        drawn.append(base.mark_point(size=420 if slide else 260, filled=False, strokeWidth=2.5,
                                     color="black" if slide else SELECTION_COLOR).transform_filter(only))
    chart = alt.layer(*drawn).properties(
        title=chart_title(title, [t("atlas.chart_note", lang, heads=len(data))], width=HALF_COLUMN_PX, slide=slide),
        height=_SLIDE_HEIGHT_PX if slide else _HEIGHT_PX)
    return style_chart(chart, slide)


def metrics_html(atlas: Atlas, layer: int, head: int, lang: str = DEFAULT_LANGUAGE) -> str:
    """A head's metrics (every one of :func:`~inspector.analyses.atlas.atlas_metrics` but the layer) as a two-column
    HTML table — the metric's name, then its mean and its 95 % interval (under the mean where the column is narrow) —
    that wraps and never needs a sideways scroll, even in one of two side-by-side cards at 1000 px; past
    ``_METRICS_HEIGHT_PX`` it scrolls down. A number the census has not (NaN) shows as "–"."""
    cell = "padding:2px 6px;border-bottom:1px solid rgba(128,128,128,0.2);vertical-align:top;"
    rows = []
    for metric, grid in atlas_metrics(atlas).items():
        if metric == LAYER_METRIC:
            continue
        mean, low, high = grid.mean[layer, head], grid.low[layer, head], grid.high[layer, head]
        interval = f"{low:.3f}–{high:.3f}" if np.isfinite(low) and np.isfinite(high) else "–"
        shown = f"{mean:.3f}" if np.isfinite(mean) else "–"
        rows.append(f'<tr><td style="{cell}word-break:break-word">{html.escape(metric_name(metric, lang))}</td>'
                    f'<td style="{cell}text-align:right;font-variant-numeric:tabular-nums">'
                    f'{shown} <span style="opacity:0.65;display:inline-block">{interval}</span>'
                    '</td></tr>')
    header = "".join(f'<th style="{cell}text-align:{align}">{html.escape(t(key, lang))}</th>' for key, align in
                     (("atlas.column_metric", "left"), ("atlas.column_mean", "right")))
    return (f'<div style="max-height:{_METRICS_HEIGHT_PX}px;overflow-y:auto;overflow-x:hidden">'
            '<table style="width:100%;table-layout:fixed;border-collapse:collapse;font-size:0.85em">'
            f'<thead><tr>{header}</tr></thead><tbody>{"".join(rows)}</tbody></table></div>')


def context_html(tokens: Sequence[str], query: int, weights: dict[int, float], *,
                 margin: int = CONTEXT_MARGIN) -> str:
    """A context as one line of HTML: the tokens from ``margin`` before the first key of ``weights`` (key position
    → weight) to ``margin`` after ``query`` (an ellipsis where cut), each key shaded by its weight (red, alpha = the
    weight's square root, so a small weight still shows) and titled with it, the query outlined. Every token is
    escaped."""
    shown = readable_tokens(tokens)
    start = max(0, min([query, *weights]) - margin)
    end = min(len(shown), max([query, *weights]) + margin + 1)
    parts = ["…"] if start > 0 else []
    for position in range(start, end):
        style = "padding:0 1px;border-radius:3px;"
        title = f"{position}"
        if position in weights:
            weight = min(max(float(weights[position]), 0.0), 1.0)
            style += f"background:rgba(225,87,89,{weight ** 0.5:.2f});"
            title += f" · {weight:.3f}"
        if position == query:
            style += "outline:2px solid #1f77b4;"
        parts.append(f'<span title="{title}" style="{style}">{html.escape(shown[position])}</span>')
    if end < len(shown):
        parts.append("…")
    return ('<div style="font-family:monospace;font-size:0.9em;line-height:1.9;white-space:normal;'
            'word-break:break-word">' + " ".join(parts) + "</div>")


def row_html(tokens: Sequence[str], query: int, weights: np.ndarray) -> str:
    """A live row (``weights``: (n,) every key's weight from ``query``) drawn like :func:`context_html`, over the
    whole text."""
    return context_html(tokens, query, {int(k): float(weights[k]) for k in np.flatnonzero(np.asarray(weights) > 0)},
                        margin=len(tokens))
