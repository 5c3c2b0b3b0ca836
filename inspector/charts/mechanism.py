"""Charts of the Mechanism page (:mod:`inspector.analyses.mechanism`): layer × head grids (direct logit attribution,
attention to the answer's token, patching), the residual stream patched layer × position, the MLPs, and the score
attribution's top pairs, marginals and per-dimension products. Titles, axes and legends in ``lang``
(``chart.mech.*``); tokens are data."""

from __future__ import annotations

import re

import altair as alt
import numpy as np
import pandas as pd

from inspector.analyses.mechanism import PatchingResult, ScoreAttribution
from inspector.base.i18n import DEFAULT_LANGUAGE, t
from inspector.base.tokens import is_byte_level, readable_token
from inspector.charts.base import (
    FULL_WIDTH_PX,
    HALF_COLUMN_PX,
    chart_title,
    style_chart,
    token_axis,
    zero_white_scale,
)

_DIVERGING = "redblue"
TOP_PAIRS = 12
PAIR_LABEL_PX = 260  # the pairs chart's labels, drawn across the page
TOP_COMPONENTS = 10


_COMPONENT_KEYS = {"embedding": "chart.mech.comp_embedding", "position": "chart.mech.comp_position",
                   "bias": "chart.mech.comp_bias"}
_ATTENTION_BIAS = re.compile(r"L(\d+) attn bias")


def component_text(name: str, lang: str = DEFAULT_LANGUAGE) -> str:
    """A residual component's label (:attr:`~inspector.analyses.mechanism.residual.Component.label`: "L3H2",
    "L3 MLP", "L3 attn bias", "embedding", "position", "bias") in ``lang``; heads and MLPs read the same in both."""
    if name in _COMPONENT_KEYS:
        return t(_COMPONENT_KEYS[name], lang)
    match = _ATTENTION_BIAS.fullmatch(name)
    return t("chart.mech.comp_attn_bias", lang, layer=match.group(1)) if match else name


def _symmetric(values: np.ndarray) -> alt.Scale:
    """A diverging scale centred on 0, blue for positive (helps the target), red for negative."""
    high = float(np.nanmax(np.abs(values))) if values.size else 1.0
    return alt.Scale(scheme=_DIVERGING, domain=[-max(high, 1e-9), max(high, 1e-9)])


def head_grid_chart(values: np.ndarray, title: str, subtitle: list[str], value_title: str, *, diverging: bool = True,
                    slide: bool = False, lang: str = DEFAULT_LANGUAGE) -> alt.Chart:
    """A layer × head heatmap of ``values`` (layers, heads), drawn in one of two equal columns (its title wrapped to
    :data:`HALF_COLUMN_PX`: the pages set two grids side by side). Data: ``layer``, ``head``, ``value``."""
    layers, heads = values.shape
    data = pd.DataFrame({"layer": np.repeat(np.arange(layers), heads), "head": np.tile(np.arange(heads), layers),
                         "value": values.ravel().astype(float)})
    layer_title, head_title = t("chart.mech.layer", lang), t("chart.mech.head", lang)
    scale = _symmetric(values) if diverging else zero_white_scale("blues", None)
    chart = alt.Chart(data).mark_rect().encode(
        x=alt.X("head:O", title=head_title),
        y=alt.Y("layer:O", title=layer_title),
        color=alt.Color("value:Q", title=value_title, scale=scale,
                        legend=alt.Legend(orient="bottom", titleLimit=HALF_COLUMN_PX)),
        tooltip=[alt.Tooltip("layer:O", title=layer_title), alt.Tooltip("head:O", title=head_title),
                 alt.Tooltip("value:Q", title=value_title, format=".3f")],
    ).properties(title=chart_title(title, subtitle, width=FULL_WIDTH_PX if slide else HALF_COLUMN_PX, slide=slide),
                 height=max(160, min(12 * layers, 420)))
    return style_chart(chart, slide)


def residual_patch_chart(result: PatchingResult, *, slide: bool = False, lang: str = DEFAULT_LANGUAGE) -> alt.Chart:
    """Causal tracing: the normalised metric with the residual entering layer l patched at position p. Data:
    ``layer``, ``position``, ``token`` (a unique "p: clean / corrupted" label), ``restored``."""
    restored = result.restored(result.residual)
    layers, n = restored.shape
    byte_level = is_byte_level(result.clean_tokens + result.corrupted_tokens)  # "ĠItaly" is read " Italy"
    labels = [f"{p}: {readable_token(c, byte_level)}" + ("" if c == x else f" / {readable_token(x, byte_level)}")
              for p, (c, x) in enumerate(zip(result.clean_tokens, result.corrupted_tokens, strict=True))]
    data = pd.DataFrame({"layer": np.repeat(np.arange(layers), n), "token": labels * layers,
                         "restored": restored.ravel()})
    value = t("chart.mech.restored", lang)
    chart = alt.Chart(data).mark_rect().encode(
        x=alt.X("token:N", sort=labels, title=t("chart.mech.position", lang),
                axis=token_axis(labels, horizontal=True, slide=slide)),
        y=alt.Y("layer:O", title=t("chart.mech.layer", lang)),
        color=alt.Color("restored:Q", title=value, scale=alt.Scale(scheme=_DIVERGING, domain=[-1, 1]),
                        legend=alt.Legend(orient="bottom", titleLimit=FULL_WIDTH_PX)),
        tooltip=[alt.Tooltip("layer:O", title=t("chart.mech.layer", lang)),
                 alt.Tooltip("token:N", title=t("chart.mech.position", lang)),
                 alt.Tooltip("restored:Q", title=value, format=".3f")],
    ).properties(title=chart_title(t("chart.mech.residual_title", lang), [t("chart.mech.residual_note", lang)],
                                   slide=slide), height=max(160, min(12 * layers, 420)))
    return style_chart(chart, slide)


def mlp_patch_chart(result: PatchingResult, *, slide: bool = False, lang: str = DEFAULT_LANGUAGE) -> alt.Chart:
    """One bar per layer: the normalised metric with that layer's MLP patched, in one of two equal columns (labels
    that would overlap left out). Data: ``layer``, ``restored``."""
    data = pd.DataFrame({"layer": np.arange(len(result.mlps)), "restored": result.restored(result.mlps)})
    value = t("chart.mech.restored", lang)
    chart = alt.Chart(data).mark_bar().encode(
        x=alt.X("layer:O", title=t("chart.mech.layer", lang), axis=alt.Axis(labelOverlap="greedy", labelAngle=0)),
        y=alt.Y("restored:Q", title=value),
        tooltip=[alt.Tooltip("layer:O", title=t("chart.mech.layer", lang)),
                 alt.Tooltip("restored:Q", title=value, format=".3f")],
    ).properties(title=chart_title(t("chart.mech.mlp_title", lang), width=FULL_WIDTH_PX if slide else HALF_COLUMN_PX,
                                   slide=slide), height=200)
    return style_chart(chart, slide)


def score_pairs_chart(result: ScoreAttribution, *, slide: bool = False, lang: str = DEFAULT_LANGUAGE) -> alt.Chart:
    """The largest (query component × key component) cells of the score, one bar each. Data: ``pair``, ``part``."""
    pairs = result.top_pairs(TOP_PAIRS)
    labels = [f"{component_text(query, lang)} × {component_text(key, lang)}" for query, key, _ in pairs]
    data = pd.DataFrame({"pair": labels, "part": [part for _, _, part in pairs]})
    part = t("chart.mech.score_part", lang)
    chart = alt.Chart(data).mark_bar().encode(
        # The components' names in full ("embedding × embedding" was cut at Vega's default 180 px).
        y=alt.Y("pair:N", sort=labels, title=t("chart.mech.pair", lang), axis=alt.Axis(labelLimit=PAIR_LABEL_PX)),
        x=alt.X("part:Q", title=part),
        color=alt.condition(alt.datum.part > 0, alt.value("#2166ac"), alt.value("#b2182b")),
        tooltip=[alt.Tooltip("pair:N", title=t("chart.mech.pair", lang)), alt.Tooltip("part:Q", title=part,
                                                                                       format=".3f")],
    ).properties(title=chart_title(t("chart.mech.pairs_title", lang, score=f"{result.score:.3f}"),
                                   [t("chart.mech.pairs_note", lang)], slide=slide), height=24 * len(labels))
    return style_chart(chart, slide)


def score_marginals_chart(result: ScoreAttribution, *, slide: bool = False,
                          lang: str = DEFAULT_LANGUAGE) -> alt.Chart:
    """The components that matter most on each side: query marginal, key marginal and (when there is one) the
    runner-up key's marginal, side by side. Data: ``component``, ``side``, ``part``."""
    sides = {t("chart.mech.side_query", lang): result.query_marginal(),
             t("chart.mech.side_key", lang, key=result.key_position): result.key_marginal()}
    if result.runner_up_table is not None:
        sides[t("chart.mech.side_runner", lang, key=result.runner_up)] = result.runner_up_table.sum(axis=0)
    strength = np.max(np.abs(np.stack(list(sides.values()))), axis=0)
    keep = np.argsort(-strength)[:TOP_COMPONENTS]
    names = [component_text(result.components[i], lang) for i in keep]
    data = pd.concat([pd.DataFrame({"component": names, "side": side, "part": values[keep]})
                      for side, values in sides.items()], ignore_index=True)
    part, side = t("chart.mech.score_part", lang), t("chart.mech.side", lang)
    chart = alt.Chart(data).mark_bar().encode(
        y=alt.Y("component:N", sort=names, title=t("chart.mech.component", lang),
                axis=alt.Axis(labelLimit=PAIR_LABEL_PX)),
        yOffset=alt.YOffset("side:N", sort=list(sides)),
        x=alt.X("part:Q", title=part),
        color=alt.Color("side:N", sort=list(sides), title=side, legend=alt.Legend(orient="bottom", columns=1)),
        tooltip=[alt.Tooltip("component:N"), alt.Tooltip("side:N", title=side),
                 alt.Tooltip("part:Q", title=part, format=".3f")],
    ).properties(title=chart_title(t("chart.mech.marginals_title", lang), [t("chart.mech.marginals_note", lang)],
                                   slide=slide), height=36 * len(names))
    return style_chart(chart, slide)


def products_chart(result: ScoreAttribution, *, slide: bool = False, lang: str = DEFAULT_LANGUAGE) -> alt.Chart:
    """scale · q_d · k_d per dimension d, with the rotation and (RoPE models) without. Data: ``dimension``,
    ``kind``, ``product``."""
    kinds = {t("chart.mech.rotated", lang): result.products}
    if result.rotary:
        kinds[t("chart.mech.unrotated", lang)] = result.products_unrotated
    data = pd.concat([pd.DataFrame({"dimension": np.arange(len(values)), "kind": kind, "product": values})
                      for kind, values in kinds.items()], ignore_index=True)
    product = t("chart.mech.product", lang)
    note = t("chart.mech.products_note", lang, score=f"{result.score:.3f}", plain=f"{result.score_unrotated:.3f}")
    chart = alt.Chart(data).mark_bar(opacity=0.8).encode(
        x=alt.X("dimension:O", title=t("chart.mech.dimension", lang), axis=alt.Axis(labels=len(data) <= 128)),
        y=alt.Y("product:Q", title=product),
        color=alt.Color("kind:N", sort=list(kinds), title=None, legend=alt.Legend(orient="bottom")),
        xOffset=alt.XOffset("kind:N", sort=list(kinds)),
        tooltip=[alt.Tooltip("dimension:O"), alt.Tooltip("kind:N"), alt.Tooltip("product:Q", format=".4f")],
    ).properties(title=chart_title(t("chart.mech.products_title", lang), [note], slide=slide), height=200)
    return style_chart(chart, slide)
