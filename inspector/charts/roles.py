"""Altair charts of a :class:`~inspector.analyses.roles.RolesResult` (issue 29): the roles map (layer × head, colour
= dominant role, every probe score on hover — Dodrio's and AttentionViz's one picture of every head), the causal
test (rise for the role's heads against random heads of the same layers, 95 % intervals) and one head's attention
on the first probe sequence (an induction head draws the stripe at offset 1 − R). Builders take finished numbers
and compute no analysis; words come from the catalogue (``chart.roles.*``) in ``lang``.
"""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

from inspector.analyses.roles import NO_ROLE, ROLES, RolesResult
from inspector.base.i18n import DEFAULT_LANGUAGE, t
from inspector.charts.base import (
    HEAD_SELECTION,
    SELECTION_COLOR,
    chart_title,
    head_axis,
    style_chart,
    weight_scale,
)
from inspector.charts.sentences.roles import role_name

# One colour per role (Tableau 10, colour-blind-safe order), grey for none.
ROLE_COLOURS = {"induction": "#e15759", "duplicate": "#b07aa1", "previous": "#4e79a7", "sink": "#f28e2b",
                "local": "#76b7b2", "broad": "#edc948", NO_ROLE: "#d0d0d0"}
_CELL_PX, _SLIDE_CELL_PX = 22, 34


def roles_table(result: RolesResult, lang: str = DEFAULT_LANGUAGE) -> pd.DataFrame:
    """One row per head: layer, head, name, dominant role (in ``lang``) and every role's score and interval."""
    layers, heads = result.shape
    layer_index, head_index = np.meshgrid(np.arange(layers), np.arange(heads), indexing="ij")
    data = {"layer": layer_index.ravel(), "head": head_index.ravel(),
            "name": [f"L{layer}H{head}" for layer, head in zip(layer_index.ravel(), head_index.ravel())],
            "role": [role_name(role, lang) for role in result.dominant.ravel()],
            "role_key": result.dominant.ravel()}
    for role in ROLES:
        data[role] = result.scores[role].ravel().astype(float)
        data[f"{role}_interval"] = [f"{low:.2f}–{high:.2f}" for low, high in
                                    zip(result.low[role].ravel(), result.high[role].ravel())]
    data["sink_rate"] = result.sink_rate.ravel().astype(float)
    return pd.DataFrame(data)


def roles_map_chart(result: RolesResult, *, selected: tuple[int, int] | None = None, slide: bool = False,
                    lang: str = DEFAULT_LANGUAGE) -> alt.LayerChart:
    """Layer × head grid coloured by each head's dominant role, every role's score (and interval) on hover,
    clickable (the point selection :data:`inspector.charts.base.HEAD_SELECTION` over layer and head); ``selected``
    outlines one cell."""
    data = roles_table(result, lang)
    present = (*ROLES, NO_ROLE)
    tooltip = [alt.Tooltip("name:N", title=t("heads.column.head", lang)),
               alt.Tooltip("role:N", title=t("chart.roles.dominant", lang))]
    for role in ROLES:
        tooltip.append(alt.Tooltip(f"{role}:Q", title=role_name(role, lang), format=".3f"))
    tooltip.append(alt.Tooltip("sink_rate:Q", title=t("chart.roles.sink_rate", lang), format=".2f"))
    base = alt.Chart(data).encode(
        x=alt.X("head:O", title=t("heads.column.head", lang), axis=head_axis(int(data["head"].max()) + 1, slide=slide)),
        y=alt.Y("layer:O", title=t("chart.inspect.layer", lang)), tooltip=tooltip)
    cells = base.mark_rect(cursor="pointer", stroke="white", strokeWidth=1).encode(
        color=alt.Color("role:N", title=t("chart.roles.dominant", lang),
                        scale=alt.Scale(domain=[role_name(role, lang) for role in present],
                                        range=[ROLE_COLOURS[role] for role in present]),
                        legend=alt.Legend(orient="bottom", direction="horizontal", columns=4, titleLimit=400)),
    ).add_params(alt.selection_point(name=HEAD_SELECTION, fields=["layer", "head"], on="click", clear="dblclick"))
    drawn = [cells]
    if selected is not None:
        only = (alt.datum.layer == int(selected[0])) & (alt.datum.head == int(selected[1]))
        drawn.append(base.mark_rect(fill=None, stroke="black" if slide else SELECTION_COLOR,
                                    strokeWidth=3).transform_filter(only))
    step = _SLIDE_CELL_PX if slide else _CELL_PX
    thresholds = ", ".join(f"{role_name(role, lang)} ≥ {result.thresholds[role]:g}" for role in ROLES)
    chart = alt.layer(*drawn).properties(
        title=chart_title(t("chart.roles.map_title", lang), [t("chart.roles.map_note", lang, thresholds=thresholds),
                                                                t("chart.roles.map_hover", lang)],
                          slide=slide),
        width=alt.Step(step), height=alt.Step(step))
    return style_chart(chart, slide)


def causal_table(result: RolesResult, lang: str = DEFAULT_LANGUAGE) -> pd.DataFrame:
    """Two rows per causal test: the role's heads and the random heads, each rise with its 95 % interval."""
    rows = []
    for test in result.tests:
        for which, rise, low, high in (("role", test.role_rise, test.role_low, test.role_high),
                                       ("random", test.random_mean, test.random_low, test.random_high)):
            rows.append({"role": role_name(test.role, lang), "which": t(f"chart.roles.{which}_heads", lang),
                         "rise": rise, "low": low, "high": high, "causal": t(
                             "chart.roles.causal" if test.causal else "chart.roles.not_causal", lang),
                         "heads": ", ".join(f"L{layer}H{head}" for layer, head in test.heads)})
    return pd.DataFrame(rows)


def causal_chart(result: RolesResult, *, slide: bool = False, lang: str = DEFAULT_LANGUAGE) -> alt.LayerChart:
    """Per tested role, the rise of its measure when its top heads are removed against as many random heads of the
    same layers: points with 95 % interval bars (role heads: over the probe sequences; random: over the seeds)."""
    data = causal_table(result, lang)
    measure = result.tests[0].measure if result.tests else "loss"
    which = [t("chart.roles.role_heads", lang), t("chart.roles.random_heads", lang)]
    colour = alt.Color("which:N", title=None, scale=alt.Scale(domain=which, range=["#e15759", "#9c9c9c"]),
                       legend=alt.Legend(orient="bottom"))
    tooltip = [alt.Tooltip("role:N", title=t("chart.roles.role", lang)), alt.Tooltip("which:N", title=" "),
               alt.Tooltip("rise:Q", title=t("chart.roles.rise", lang), format="+.3f"),
               alt.Tooltip("low:Q", title="95 % ↓", format="+.3f"),
               alt.Tooltip("high:Q", title="95 % ↑", format="+.3f"),
               alt.Tooltip("heads:N", title=t("chart.roles.heads", lang)),
               alt.Tooltip("causal:N", title=t("chart.roles.verdict", lang))]
    base = alt.Chart(data).encode(
        x=alt.X("role:N", title=None, sort=[role_name(role, lang) for role in ("induction", "previous", "sink")],
                axis=alt.Axis(labelAngle=0)),
        xOffset=alt.XOffset("which:N", sort=which), color=colour, tooltip=tooltip)
    bars = base.mark_rule(strokeWidth=3).encode(y=alt.Y("low:Q", title=t(f"chart.roles.y_{measure}", lang)),
                                                y2="high:Q")
    points = base.mark_point(filled=True, size=90).encode(y="rise:Q")
    zero = alt.Chart(pd.DataFrame({"y": [0.0]})).mark_rule(color="#555", strokeDash=[4, 3]).encode(y="y:Q")
    chart = alt.layer(zero, bars, points).properties(
        title=chart_title(t("chart.roles.causal_title", lang), [t("chart.roles.causal_note", lang,
                                                                    seeds=result.seeds)], slide=slide),
        height=260)
    return style_chart(chart, slide)


def probe_heatmap_chart(result: RolesResult, layer: int, head: int, *, slide: bool = False,
                        lang: str = DEFAULT_LANGUAGE) -> alt.LayerChart:
    """Head (``layer``, ``head``)'s weights on the first probe sequence, positions on both axes (0 = BOS, then the
    first copy, then the second): an induction head's stripe lies at offset 1 − R, a duplicate-token head's at −R,
    a previous-token head's at −1."""
    if result.weights_example is None:
        raise ValueError("this result kept no probe weights")
    weights = result.weights_example[layer, head]  # (n, n)
    n, repeat = weights.shape[0], result.probe.repeat
    query, key = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    data = pd.DataFrame({"query": query.ravel(), "key": key.ravel(), "weight": weights.ravel().astype(float)})
    tooltip = [alt.Tooltip("query:O", title=t("chart.roles.query", lang)),
               alt.Tooltip("key:O", title=t("chart.roles.key", lang)),
               alt.Tooltip("weight:Q", title=t("chart.roles.weight", lang), format=".3f")]
    step = 14 if slide else max(4, min(10, 420 // n))
    axis = alt.Axis(values=[0, 1, repeat + 1, 2 * repeat], labelAngle=0)
    cells = alt.Chart(data).mark_rect().encode(
        x=alt.X("key:O", title=t("chart.roles.key", lang), axis=axis),
        y=alt.Y("query:O", title=t("chart.roles.query", lang), axis=axis),
        color=alt.Color("weight:Q", title=t("chart.roles.weight", lang), scale=weight_scale(slide),
                        legend=alt.Legend(orient="bottom", direction="horizontal")),
        tooltip=tooltip)
    scores = ", ".join(f"{role_name(role, lang)} {result.scores[role][layer, head]:.2f}"
                       for role in ("induction", "duplicate", "previous", "sink"))
    chart = cells.properties(
        title=chart_title(t("chart.roles.heatmap_title", lang, layer=layer, head=head,
                            role=role_name(result.dominant[layer, head], lang)),
                          [t("chart.roles.heatmap_note", lang, repeat=repeat, offset=1 - repeat), scores],
                          slide=slide),
        width=alt.Step(step), height=alt.Step(step))
    return style_chart(chart, slide)
