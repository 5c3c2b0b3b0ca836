"""Altair chart of a :class:`~inspector.census.CensusSummary`: the layer × head grid of one statistic's mean
over the corpus, with its 95 % interval in the tooltip and the Heads page's C / D marks for collapsed and diffuse
heads. Builders take finished numbers and compute no analysis."""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

from inspector.census import STATISTIC_UNITS, CensusSummary
from inspector.charts.base import ENTROPY_SCHEME, chart_title, style_chart

_CELL_PX, _SLIDE_CELL_PX = 26, 40


def census_table(summary: CensusSummary, statistic: str) -> pd.DataFrame:
    """One row per head: layer, head, name, mean, low, high and texts of ``statistic``, and the health flag."""
    layers, heads = summary.shape
    layer_index, head_index = np.meshgrid(np.arange(layers), np.arange(heads), indexing="ij")  # (layers, heads)
    return pd.DataFrame({
        "layer": layer_index.ravel(), "head": head_index.ravel(),
        "name": [f"L{layer}H{head}" for layer, head in zip(layer_index.ravel(), head_index.ravel())],
        "mean": summary.mean[statistic].ravel().astype(float), "low": summary.low[statistic].ravel().astype(float),
        "high": summary.high[statistic].ravel().astype(float), "texts": summary.count[statistic].ravel(),
        "flag": np.select([summary.flags.collapsed.ravel(), summary.flags.diffuse.ravel()],
                          ["collapsed", "diffuse"], ""),
    })


def census_grid_chart(summary: CensusSummary, statistic: str, *, slide: bool = False) -> alt.LayerChart:
    """Layer × head grid coloured by the corpus mean of ``statistic`` (one of :data:`inspector.census.STATISTICS`)."""
    if statistic not in summary.mean:
        raise ValueError(f"statistic must be one of {sorted(summary.mean)}, got {statistic!r}")
    data = census_table(summary, statistic)
    data["mark"] = data["flag"].str[:1].str.upper()
    legend = f"{statistic.replace('_', ' ')} ({STATISTIC_UNITS.get(statistic, 'share')}), mean over texts"
    bounded = statistic not in ("entropy", "mean_distance")
    scale = alt.Scale(scheme=ENTROPY_SCHEME, domain=[0.0, 1.0]) if bounded else alt.Scale(scheme=ENTROPY_SCHEME)
    base = alt.Chart(data).encode(
        x=alt.X("head:O", title="head", axis=alt.Axis(labelAngle=0)), y=alt.Y("layer:O", title="layer"),
        tooltip=[alt.Tooltip("name:N", title="head"), alt.Tooltip("mean:Q", format=".3f"),
                 alt.Tooltip("low:Q", title="95% interval, low", format=".3f"),
                 alt.Tooltip("high:Q", title="95% interval, high", format=".3f"),
                 alt.Tooltip("texts:Q", title="texts"), alt.Tooltip("flag:N", title="health flag")])
    cells = base.mark_rect().encode(color=alt.Color("mean:Q", title=legend, scale=scale,
                                                    legend=alt.Legend(orient="bottom", direction="horizontal",
                                                                      titleLimit=400)))
    marks = base.mark_text(fontSize=16 if slide else 11, fontWeight="bold", color="white").encode(text="mark:N")
    step = _SLIDE_CELL_PX if slide else _CELL_PX
    chart = alt.layer(base.mark_rect(color="#d0d0d0"), cells, marks).properties(
        title=chart_title(f"Census: {statistic.replace('_', ' ')} over {summary.texts} texts",
                          ["C = collapsed, D = diffuse (Heads page thresholds). Grey = no value."]),
        width=alt.Step(step), height=alt.Step(step))
    return style_chart(chart, slide)
