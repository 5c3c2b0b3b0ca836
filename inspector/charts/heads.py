"""Altair charts of a :class:`~inspector.analyses.heads.HeadReport`: the clickable head grid (coloured by entropy, sink
score, induction score or importance), the redundancy heatmaps in clustered order, the MDS map of the heads and the
pruning curve. Like :mod:`inspector.charts`, builders take finished numbers and compute no analysis; slide mode and
fonts come from :func:`inspector.charts.style_chart`.

Every builder takes ``lang``: what a reader sees (titles, axes, legends, tooltips, the C / D marks and the health
flags) comes from the catalogue (``chart.heads.*``); the data's column names stay English.
"""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

from inspector.analyses.heads import HeadReport
from inspector.base.i18n import DEFAULT_LANGUAGE, t
from inspector.charts.base import (
    ENTROPY_SCHEME,
    FULL_WIDTH_PX,
    HEAD_SELECTION,
    LABEL_PITCH_PX,
    SELECTION_COLOR,
    chart_title,
    head_axis,
    mark_ink,
    may_thin,
    style_chart,
    thinned_note,
    token_axis,
    zero_white_scale,
)
from inspector.charts.sentences.heads import measure_words

# What the head grid can be coloured by: key → (catalogue key of the legend title, colour scheme, fixed domain or
# None).
GRID_METRICS = {
    "entropy": ("chart.heads.metric.entropy", ENTROPY_SCHEME, (0.0, 1.0)),
    "sink": ("chart.heads.metric.sink", "orangered", (0.0, 1.0)),
    "induction": ("chart.heads.metric.induction", "blues", (0.0, 1.0)),
    "ablation": ("chart.heads.metric.ablation", "purples", None),
    "gradient": ("chart.heads.metric.gradient", "greens", None),
}
_CELL_PX, _SLIDE_CELL_PX = 26, 40
_MATRIX_PX, _SLIDE_MATRIX_PX = 440, 620


def health_words(collapsed: np.ndarray, diffuse: np.ndarray, lang: str = DEFAULT_LANGUAGE, *,
                 marks: bool = False) -> np.ndarray:
    """(N,) each head's health flag in ``lang``, layer-major: "collapsed", "diffuse" or "" (healthy), from the
    (layers, heads) boolean ``collapsed`` / ``diffuse`` flags; with ``marks``, the one-character marks the grids
    draw ("C", "D"). The census grid shares them."""
    kind = "mark" if marks else "flag"
    return np.select([np.ravel(collapsed), np.ravel(diffuse)],
                     [t(f"chart.heads.{kind}.collapsed", lang), t(f"chart.heads.{kind}.diffuse", lang)], "")


def head_table(report: HeadReport, lang: str = DEFAULT_LANGUAGE) -> pd.DataFrame:
    """One row per head: layer, head, name and every per-head number the grid can show or tooltip (NaN where a
    head has no value, e.g. the induction score of a text that repeats no token). The texts (``induction_text``,
    ``flag``) are in ``lang``."""
    stats = report.statistics
    layers, heads = stats.entropy.shape
    layer_index, head_index = np.meshgrid(np.arange(layers), np.arange(heads), indexing="ij")  # (layers, heads)
    return pd.DataFrame({
        "layer": layer_index.ravel(), "head": head_index.ravel(),
        "name": [report.head_name(i) for i in range(layers * heads)],
        "entropy": stats.entropy_normalized.ravel().astype(float),
        "entropy_nats": stats.entropy.ravel().astype(float),
        "sink": stats.max_sink_score.ravel().astype(float),
        "first_token": stats.first_token_sink.ravel().astype(float),
        "ablation": stats.importance_ablation.ravel().astype(float),
        "gradient": report.importance_gradient.ravel().astype(float),
        "distance": stats.mean_distance.ravel().astype(float),
        "induction": stats.induction.ravel().astype(float),
        # Vega's format() reads a null as 0, so the tooltip shows this text instead of a number that is not there.
        "induction_text": [f"{x:.3f}" if np.isfinite(x) else t("chart.heads.no_induction", lang)
                           for x in stats.induction.ravel()],
        "flag": health_words(report.flags.collapsed, report.flags.diffuse, lang),
    })


def head_grid_chart(report: HeadReport, metric: str, *, selected: tuple[int, int] | None = None,
                    slide: bool = False, lang: str = DEFAULT_LANGUAGE) -> alt.LayerChart:
    """Layer × head grid coloured by ``metric`` (a key of :data:`GRID_METRICS`), clickable: a point selection
    named :data:`inspector.charts.HEAD_SELECTION` over ``layer`` and ``head``. Collapsed and diffuse heads
    carry a "C" / "D" mark; ``selected`` outlines one cell. A head with no value for the metric (NaN: Vega-Lite
    filters it from the coloured layer) stays grey."""
    if metric not in GRID_METRICS:
        raise ValueError(f"metric must be one of {sorted(GRID_METRICS)}, got {metric!r}")
    legend_key, scheme, domain = GRID_METRICS[metric]
    legend = t(legend_key, lang)
    data = head_table(report, lang)
    data["mark"] = health_words(report.flags.collapsed, report.flags.diffuse, lang, marks=True)
    tooltip = [alt.Tooltip("name:N", title=t("heads.column.head", lang)),
               alt.Tooltip("entropy:Q", title=t("chart.inspect.entropy_per_log_keys", lang), format=".3f"),
               alt.Tooltip("entropy_nats:Q", title=t("chart.inspect.entropy_nats", lang), format=".3f"),
               alt.Tooltip("sink:Q", title=t("chart.heads.metric.sink", lang), format=".3f"),
               alt.Tooltip("first_token:Q", title=t("heads.column.first_sink", lang), format=".3f"),
               alt.Tooltip("ablation:Q", title=t("chart.heads.ablation_change", lang,
                                                 measure=measure_words(report, lang)), format=".4f"),
               alt.Tooltip("gradient:Q", title=t("chart.heads.gradient_importance", lang), format=".3f"),
               alt.Tooltip("distance:Q", title=t("chart.heads.distance", lang), format=".2f"),
               alt.Tooltip("induction_text:N", title=t("chart.heads.metric.induction", lang)),
               alt.Tooltip("flag:N", title=t("chart.heads.health_flag", lang))]
    base = alt.Chart(data).encode(x=alt.X("head:O", title=t("heads.column.head", lang),
                                          axis=head_axis(int(data["head"].max()) + 1, slide=slide,
                                                         keep=() if selected is None else (int(selected[1]),))),
                                  y=alt.Y("layer:O", title=t("chart.inspect.layer", lang)), tooltip=tooltip)
    if scheme == ENTROPY_SCHEME:  # viridis: its dark end is its own zero
        scale = alt.Scale(scheme=scheme, domain=list(domain))
    else:  # sequential ramps start at white, so a head with no sink / no importance reads as nothing
        scale = zero_white_scale(scheme, domain[1] if domain else None)
    cells = base.mark_rect(cursor="pointer").encode(
        color=alt.Color(f"{metric}:Q", title=legend, scale=scale,
                        legend=alt.Legend(orient="bottom", direction="horizontal", titleLimit=400)),
    ).add_params(alt.selection_point(name=HEAD_SELECTION, fields=["layer", "head"], on="click", clear="dblclick"))
    # Each mark in the ink its cell's colour needs (white on dark, black on pale).
    data["dark"] = mark_ink(data[metric], scheme, *(domain if domain else (0.0, None))) == "white"
    marks = base.mark_text(fontSize=16 if slide else 11, fontWeight="bold").encode(
        text="mark:N", color=alt.condition("datum.dark", alt.value("white"), alt.value("black")))
    drawn = [base.mark_rect(color="#d0d0d0"), cells, marks]
    if selected is not None:
        only = (alt.datum.layer == int(selected[0])) & (alt.datum.head == int(selected[1]))
        drawn.append(base.mark_rect(fill=None, stroke="black" if slide else SELECTION_COLOR,
                                    strokeWidth=3).transform_filter(only))
    step = _SLIDE_CELL_PX if slide else _CELL_PX
    chart = alt.layer(*drawn).properties(
        title=chart_title(t("chart.heads.grid_title", lang, legend=legend), [t("chart.heads.grid_note", lang),
                                                                                  t("chart.heads.grid_click", lang)],
                          slide=slide),
        width=alt.Step(step), height=alt.Step(step))
    return style_chart(chart, slide)


def head_matrix_chart(report: HeadReport, matrix: np.ndarray, *, title: str, legend: str,
                      domain: tuple[float, float], scheme: str = "viridis", slide: bool = False,
                      lang: str = DEFAULT_LANGUAGE) -> alt.Chart:
    """Head × head heatmap of ``matrix`` (N, N) with both axes in the report's clustered order (similar heads
    next to each other). ``title`` and ``legend`` are the caller's, already in ``lang`` (the catalogue's
    ``chart.heads.js_*`` / ``chart.heads.cka_*`` for the Heads page's two matrices)."""
    names = [report.head_name(i) for i in range(matrix.shape[0])]
    ordered = [names[i] for i in report.order]
    rows, cols = np.meshgrid(np.arange(len(names)), np.arange(len(names)), indexing="ij")
    data = pd.DataFrame({"a": np.asarray(names, dtype=object)[rows.ravel()],
                         "b": np.asarray(names, dtype=object)[cols.ravel()],
                         "value": np.asarray(matrix, dtype=float).ravel()})
    size = _SLIDE_MATRIX_PX if slide else _MATRIX_PX
    cell = max(2, size // max(len(names), 1))
    # Every head is named on both axes when there is room; a 72-head model in a narrow column names every k-th
    # and says so (the heads are also in the tooltip).
    notes = [t("chart.heads.clustered_note", lang)]
    if may_thin(ordered, FULL_WIDTH_PX - 60, slide) or cell < LABEL_PITCH_PX:
        notes.append(thinned_note(lang, "head"))
    chart = alt.Chart(data).mark_rect().encode(
        x=alt.X("b:O", sort=ordered, title=None,
                axis=token_axis(ordered, horizontal=True, angle=-90, ticks=False, slide=slide)),
        y=alt.Y("a:O", sort=ordered, title=None,
                axis=token_axis(ordered, horizontal=False, step_px=cell, ticks=False, slide=slide)),
        color=alt.Color("value:Q", title=legend, scale=alt.Scale(scheme=scheme, domain=list(domain)),
                        legend=alt.Legend(orient="bottom", direction="horizontal", titleLimit=FULL_WIDTH_PX - 40)),
        tooltip=[alt.Tooltip("a:N", title=t("heads.column.head", lang)),
                 alt.Tooltip("b:N", title=t("chart.heads.other_head", lang)),
                 alt.Tooltip("value:Q", title=legend, format=".4f")],
    ).properties(title=chart_title(title, notes, slide=slide), width=alt.Step(cell), height=alt.Step(cell))
    return style_chart(chart, slide)


def mds_chart(report: HeadReport, *, slide: bool = False, lang: str = DEFAULT_LANGUAGE) -> alt.Chart:
    """The heads on a 2-D classical-MDS map of their JS divergence: near = attend alike; colour = layer."""
    data = head_table(report, lang)
    data["x"], data["y"] = report.mds[:, 0].astype(float), report.mds[:, 1].astype(float)
    height = 420 if slide else 300
    chart = alt.Chart(data).mark_circle(size=160 if slide else 70, opacity=0.85).encode(
        x=alt.X("x:Q", title=t("chart.heads.mds_axis", lang, axis=1)),
        y=alt.Y("y:Q", title=t("chart.heads.mds_axis", lang, axis=2)),
        color=alt.Color("layer:O", title=t("chart.inspect.layer", lang), scale=alt.Scale(scheme="viridis"),
                        legend=layer_legend(report.info.num_layers, height)),
        tooltip=[alt.Tooltip("name:N", title=t("heads.column.head", lang)),
                 alt.Tooltip("entropy:Q", title=t("chart.inspect.entropy_per_log_keys", lang), format=".3f")],
    ).properties(title=chart_title(t("chart.heads.mds_title", lang), [t("chart.heads.mds_note", lang)], slide=slide),
                 width=460 if slide else 320, height=height)
    return style_chart(chart, slide)


# One entry of a symbol legend, in px (Vega's default symbol and label, with slide mode's larger text).
_LEGEND_ROW_PX = 24


def layer_legend(layers: int, height: int) -> alt.Legend:
    """A legend of ``layers`` layers beside a plot ``height`` px high, in as many columns as it takes to stay within
    the plot's height: one column of 30 layers (SmolLM2) ran 200 px below the Heads page's map (issue 44
    walkthrough). Every layer keeps its entry (no symbol limit)."""
    rows = max(1, (height - _LEGEND_ROW_PX) // _LEGEND_ROW_PX)  # the title takes one row
    return alt.Legend(columns=-(-layers // rows), symbolLimit=0)


def pruning_chart(report: HeadReport, *, slide: bool = False, lang: str = DEFAULT_LANGUAGE) -> alt.LayerChart:
    """Output change (the model's own measure) against the share of heads removed, least important first."""
    curve = report.pruning
    data = pd.DataFrame({"fraction": curve.fraction.astype(float), "removed": curve.heads_removed,
                         "change": curve.change.astype(float)})
    measure = measure_words(report, lang)
    base = alt.Chart(data).encode(
        x=alt.X("fraction:Q", title=t("chart.heads.removed_axis", lang), axis=alt.Axis(format="%")),
        y=alt.Y("change:Q", title=measure),
        tooltip=[alt.Tooltip("removed:Q", title=t("chart.heads.heads_removed", lang)),
                 alt.Tooltip("fraction:Q", title=t("chart.heads.fraction", lang), format=".0%"),
                 alt.Tooltip("change:Q", title=measure, format=".4f")])
    chart = alt.layer(base.mark_line(strokeWidth=4 if slide else 2, color="#e66101"),
                      base.mark_circle(size=120 if slide else 50, color="#e66101")).properties(
        title=chart_title(t("chart.heads.pruning_title", lang),
                          [t("chart.heads.pruning_note", lang, mode=t(f"heads.mode.{report.ablation_mode}", lang))],
                          slide=slide),
        width=480 if slide else 380, height=360 if slide else 260)
    return style_chart(chart, slide)
