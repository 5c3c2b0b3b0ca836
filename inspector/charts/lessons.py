"""Altair charts for the Lessons page, over the finished numbers of :mod:`inspector.lessons` (nothing here computes
an analysis). Same conventions as :mod:`inspector.charts`: token strings reach Vega only as data, tokens are
labelled ``"position: token"``, ``slide=True`` enlarges type through :func:`inspector.charts.style_chart` as the
last step. Titles come from the caller (already in the page's language); axis titles are symbols (d, n, i − j).
"""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

from inspector.charts.base import (
    FULL_WIDTH_PX,
    HALF_COLUMN_PX,
    THINNED_NOTE,
    chart_title,
    largest_weight,
    may_thin,
    style_chart,
    token_axis,
    token_labels,
    weight_scale,
)
from inspector.lessons import SCALE_NAMES, ComplexityLesson, MultiHeadLesson, PositionLesson, ScalingSweep, WhyQKLesson

# Offsets drawn in the position chart: |i − j| up to this (longer offsets have few pairs and say little).
OFFSET_SPAN = 8


def weights_chart(weights: np.ndarray, tokens: tuple[str, ...], *, title: str, slide: bool = False) -> alt.Chart:
    """One head's weights (q_len, q_len) as a heatmap: row = query, column = key."""
    labels = token_labels(tokens)
    rows, cols = np.meshgrid(np.arange(len(tokens)), np.arange(len(tokens)), indexing="ij")
    data = pd.DataFrame({"query": np.asarray(labels, dtype=object)[rows.ravel()],
                         "key": np.asarray(labels, dtype=object)[cols.ravel()],
                         "weight": np.asarray(weights, dtype=float).ravel()})
    cell = int(np.clip(420 // max(len(tokens), 1), 4, 28))
    notes = [THINNED_NOTE] if may_thin(labels, FULL_WIDTH_PX - 120, slide) or cell < 14 else []
    chart = alt.Chart(data).mark_rect().encode(
        x=alt.X("key:O", sort=labels, title="key", axis=token_axis(labels, horizontal=True, slide=slide)),
        y=alt.Y("query:O", sort=labels, title="query",
                axis=token_axis(labels, horizontal=False, step_px=cell, slide=slide)),
        color=alt.Color("weight:Q", scale=weight_scale(slide, largest_weight(weights))),
        tooltip=["query:N", "key:N", alt.Tooltip("weight:Q", format=".3f")],
    ).properties(width=alt.Step(cell), height=alt.Step(cell), title=chart_title(title, notes, slide=slide))
    return style_chart(chart, slide)


def tied_weights_chart(lesson: WhyQKLesson, tokens: tuple[str, ...], *, title: str,
                       slide: bool = False) -> alt.FacetChart:
    """The head's weights with its own W_K and with W_K := W_Q, side by side."""
    labels = token_labels(tokens)
    rows, cols = np.meshgrid(np.arange(len(tokens)), np.arange(len(tokens)), indexing="ij")
    frames = []
    for name, weights in (("W_K", lesson.weights), ("W_K := W_Q", lesson.tied_weights)):
        frames.append(pd.DataFrame({"keys": name, "query": np.asarray(labels, dtype=object)[rows.ravel()],
                                    "key": np.asarray(labels, dtype=object)[cols.ravel()],
                                    "weight": np.asarray(weights, dtype=float).ravel()}))
    # Two panels and one set of row labels in the main column at a 1000 px window (a facet keeps its own width).
    cell = int(np.clip((FULL_WIDTH_PX - 150) // (2 * max(len(tokens), 1)), 3, 20))
    notes = [THINNED_NOTE] if cell < 15 else []
    panel = alt.Chart().mark_rect().encode(
        x=alt.X("key:O", sort=labels, title="key", axis=token_axis(labels, horizontal=True, step_px=cell,
                                                                   slide=slide)),
        y=alt.Y("query:O", sort=labels, title="query", axis=token_axis(labels, horizontal=False, step_px=cell,
                                                                       slide=slide)),
        color=alt.Color("weight:Q", scale=weight_scale(slide, largest_weight(lesson.weights, lesson.tied_weights))),
        tooltip=["keys:N", "query:N", "key:N", alt.Tooltip("weight:Q", format=".3f")],
    ).properties(width=alt.Step(cell), height=alt.Step(cell))
    chart = panel.facet(data=pd.concat(frames, ignore_index=True), column=alt.Column("keys:N", title=None,
                                                                                     sort=["W_K", "W_K := W_Q"]))
    return style_chart(chart.properties(title=chart_title(title, notes, slide=slide)), slide)


def asymmetry_chart(lesson: WhyQKLesson, *, title: str, slide: bool = False) -> alt.Chart:
    """‖S − Sᵀ‖/‖S‖ per head (bars), the chosen head darker."""
    data = pd.DataFrame({"head": np.arange(len(lesson.asymmetry)), "asymmetry": lesson.asymmetry.astype(float),
                         "chosen": np.arange(len(lesson.asymmetry)) == lesson.head})
    chart = alt.Chart(data).mark_bar().encode(
        x=alt.X("head:O", axis=alt.Axis(labelAngle=0)), y=alt.Y("asymmetry:Q", title="‖S − Sᵀ‖ / ‖S‖"),
        color=alt.condition(alt.datum.chosen, alt.value("#08519c"), alt.value("#9ecae1")),
        tooltip=["head:O", alt.Tooltip("asymmetry:Q", format=".3f")],
    ).properties(title=chart_title(title, slide=slide), width=alt.Step(36 if slide else 24), height=220)
    return style_chart(chart, slide)


def offset_chart(lesson: PositionLesson, *, title: str, slide: bool = False) -> alt.Chart:
    """Mean weight by offset i − j (|i − j| ≤ :data:`OFFSET_SPAN`) for every head of the layer."""
    keep = np.abs(lesson.offsets) <= OFFSET_SPAN
    heads, offsets = np.meshgrid(np.arange(len(lesson.by_offset)), lesson.offsets[keep], indexing="ij")
    data = pd.DataFrame({"head": heads.ravel(), "offset": offsets.ravel(),
                         "weight": lesson.by_offset[:, keep].astype(float).ravel()})
    step = 34 if slide else 22
    chart = alt.Chart(data).mark_rect().encode(
        x=alt.X("offset:O", title="i − j", axis=alt.Axis(labelAngle=0)), y=alt.Y("head:O"),
        color=alt.Color("weight:Q", title="mean weight", scale=weight_scale(slide)),
        tooltip=["head:O", "offset:O", alt.Tooltip("weight:Q", format=".3f")],
    ).properties(title=chart_title(title, slide=slide), width=alt.Step(step), height=alt.Step(step))
    return style_chart(chart, slide)


def sweep_chart(sweep: ScalingSweep, *, title: str, slide: bool = False) -> alt.Chart:
    """Mean entropy against d (log scale) for each scale of the simulation, with log(keys) as a rule."""
    frames = [pd.DataFrame({"d": sweep.dims, "scale": name, "entropy": sweep.entropy[i].astype(float),
                            "max weight": sweep.max_weight[i].astype(float)})
              for i, name in enumerate(SCALE_NAMES)]
    data = pd.concat(frames, ignore_index=True)
    lines = alt.Chart(data).mark_line(point=True, strokeWidth=4 if slide else 2).encode(
        x=alt.X("d:Q", scale=alt.Scale(type="log", base=2)), y=alt.Y("entropy:Q", title="entropy (nats)"),
        # Under the plot: the chart shares a row with another, and a legend beside it would squeeze the plot.
        color=alt.Color("scale:N", sort=list(SCALE_NAMES), scale=alt.Scale(scheme="dark2"),
                        legend=alt.Legend(orient="bottom", columns=2, labelLimit=HALF_COLUMN_PX // 2)),
        tooltip=["d:Q", "scale:N", alt.Tooltip("entropy:Q", format=".3f"), alt.Tooltip("max weight:Q", format=".3f")])
    uniform = alt.Chart(pd.DataFrame({"uniform": [float(np.log(sweep.keys))]})).mark_rule(strokeDash=[4, 4]).encode(
        y="uniform:Q")
    chart = alt.layer(lines, uniform).properties(title=chart_title(title, width=HALF_COLUMN_PX, slide=slide), width=420,
                                                 height=260)
    return style_chart(chart, slide)


def variance_chart(sweep: ScalingSweep, *, title: str, slide: bool = False) -> alt.Chart:
    """Variance of q·k against d, both on log axes: a slope-1 line means variance ∝ d."""
    data = pd.DataFrame({"d": sweep.dims, "variance": sweep.score_variance.astype(float)})
    chart = alt.Chart(data).mark_line(point=True, strokeWidth=4 if slide else 2).encode(
        x=alt.X("d:Q", scale=alt.Scale(type="log", base=2)),
        y=alt.Y("variance:Q", title="Var(q·k)", scale=alt.Scale(type="log", base=2)),
        tooltip=["d:Q", alt.Tooltip("variance:Q", format=".1f")],
    ).properties(title=chart_title(title, width=HALF_COLUMN_PX, slide=slide), width=320, height=260)
    return style_chart(chart, slide)


def contribution_chart(lesson: MultiHeadLesson, role_names: dict[str, str], *, title: str,
                       slide: bool = False) -> alt.Chart:
    """Each head's mean contribution norm after W_O, coloured by what it specialises in."""
    data = pd.DataFrame({"head": np.arange(lesson.num_heads), "norm": lesson.contribution_norm.astype(float),
                         "share": lesson.contribution_share.astype(float),
                         "role": [role_names[r] for r in lesson.role],
                         "rank(S)": lesson.scores_rank.astype(int),
                         "erank(S)": lesson.scores_effective_rank.astype(float)})
    chart = alt.Chart(data).mark_bar().encode(
        x=alt.X("head:O", axis=alt.Axis(labelAngle=0)), y=alt.Y("norm:Q", title="‖o_h W_O^h‖"),
        color=alt.Color("role:N", scale=alt.Scale(scheme="set2")),
        tooltip=["head:O", "role:N", alt.Tooltip("norm:Q", format=".3f"), alt.Tooltip("share:Q", format=".1%"),
                 "rank(S):Q", alt.Tooltip("erank(S):Q", format=".2f")],
    ).properties(title=chart_title(title, slide=slide), width=alt.Step(36 if slide else 24), height=220)
    return style_chart(chart, slide)


def complexity_chart(lesson: ComplexityLesson, *, title: str, slide: bool = False) -> alt.Chart:
    """Milliseconds against n, log–log, for the materialised and the flash path."""
    data = pd.concat([pd.DataFrame({"n": lesson.lengths, "path": "materialised n×n", "ms": lesson.materialised_ms}),
                      pd.DataFrame({"n": lesson.lengths, "path": lesson.flash_backend, "ms": lesson.flash_ms})],
                     ignore_index=True)
    chart = alt.Chart(data).mark_line(point=True, strokeWidth=4 if slide else 2).encode(
        x=alt.X("n:Q", scale=alt.Scale(type="log", base=2)), y=alt.Y("ms:Q", scale=alt.Scale(type="log")),
        color=alt.Color("path:N", scale=alt.Scale(scheme="dark2")),
        tooltip=["n:Q", "path:N", alt.Tooltip("ms:Q", format=".2f")],
    ).properties(title=chart_title(title, slide=slide), width=420, height=260)
    return style_chart(chart, slide)


__all__ = ["asymmetry_chart", "complexity_chart", "contribution_chart", "offset_chart", "sweep_chart",
           "tied_weights_chart", "variance_chart", "weights_chart"]
