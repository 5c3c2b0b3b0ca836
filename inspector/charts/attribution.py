"""Altair charts of an :class:`~inspector.analyses.attribution.AttributionReport` and a
:class:`~inspector.analyses.attribution.CounterfactualAttention` (conventions of :mod:`inspector.charts`: finished
numbers in, a chart out; token strings reach Vega only as data, so they are drawn as text, never as HTML;
``slide=True`` for projectors, applied last by :func:`~inspector.charts.style_chart`; ``lang`` words every title,
axis, legend and tooltip, and names the methods (:func:`~inspector.analyses.attribution.method_label`) — tokens are
data,
shown as they are).
"""

from __future__ import annotations

import json

import altair as alt
import numpy as np
import pandas as pd

from inspector.analyses.attribution import AttributionReport, CounterfactualAttention, Faithfulness, method_label
from inspector.base.i18n import DEFAULT_LANGUAGE, t
from inspector.base.tokens import readable_token, readable_tokens
from inspector.charts.base import (
    FULL_WIDTH_PX,
    chart_title,
    head_axis,
    keyed_colours,
    may_thin,
    style_chart,
    text_width_px,
    thinned_note,
    token_axis,
    token_labels,
)

AGREEMENT_SCHEME = "redblue"  # diverging: −1 red, 0 white, +1 blue — readable for the common colour deficiencies
SCORE_SCHEME = "blues"
_LABEL_LIMIT = 160
_CELL_TEXT_MARGIN = 1.15  # the width estimate's slack: a token written in a cell is never cut


def scores_frame(report: AttributionReport, *, words: bool = False, lang: str = DEFAULT_LANGUAGE) -> pd.DataFrame:
    """One row per (method, token or word): ``method`` (its label in ``lang``), ``unit`` (position label), ``text``,
    ``score`` (the method's own value) and ``relative`` (score / the method's largest |score| over content units, so
    every method spans [−1, 1]). Tokens that a method cannot score (protected ones) have NaN."""
    if words:
        texts = [readable_token(word) for word in report.words]  # a word is text: its newline shown as ↵
        units = [f"{i}: {w}" for i, w in enumerate(texts)]
        table, content = report.word_scores, np.ones(len(units), dtype=bool)
    else:
        units, texts = token_labels(report.tokens), list(readable_tokens(report.tokens))
        table, content = report.scores, ~report.protected
    frames = []
    for method, values in table.items():
        values = np.asarray(values, dtype=float)
        scale = np.nanmax(np.abs(values[content])) if np.isfinite(values[content]).any() else 0.0
        relative = values / scale if scale > 0 else np.zeros_like(values)
        frames.append(pd.DataFrame({"method": method_label(method, lang), "unit": units, "text": texts,
                                    "score": values, "relative": np.where(content, relative, np.nan)}))
    return pd.concat(frames, ignore_index=True)


def scores_chart(report: AttributionReport, *, words: bool = False, slide: bool = False,
                 lang: str = DEFAULT_LANGUAGE) -> alt.LayerChart:
    """Heat-text: one row per method, one column per token (or word), the token written in its cell, colour
    = the method's score relative to its own largest |score| (blue = supports f, red = works against it)."""
    data = scores_frame(report, words=words, lang=lang)
    units = list(dict.fromkeys(data["unit"]))
    methods = list(dict.fromkeys(data["method"]))
    cell = max(34, min(70, 1100 // max(len(units), 1)))
    unit = t("chart.attribution.word" if words else "chart.attribution.token", lang)
    base = alt.Chart(data).encode(
        x=alt.X("unit:O", sort=units, title=unit,
                axis=token_axis(units, horizontal=True, label_limit=_LABEL_LIMIT, slide=slide)),
        y=alt.Y("method:N", sort=methods, title=None, axis=alt.Axis(labelLimit=_LABEL_LIMIT)),
        tooltip=[alt.Tooltip("method:N", title=t("attribution.page.column_method", lang)),
                 alt.Tooltip("unit:N", title=unit),
                 alt.Tooltip("score:Q", title=t("chart.attribution.score", lang), format=".4g"),
                 alt.Tooltip("relative:Q", title=t("chart.attribution.relative", lang), format=".2f")],
    )
    # The legend under the plot, so the tokens get the column's width.
    cells = base.mark_rect().encode(color=alt.Color("relative:Q", title=t("chart.attribution.relative_legend", lang),
                                                    scale=alt.Scale(scheme=AGREEMENT_SCHEME, domain=[-1, 1]),
                                                    legend=alt.Legend(orient="bottom", direction="horizontal")))
    # The column sets the cells' width (Streamlit stretches the chart), known only in the browser: a token is written
    # in its cell whole or not at all (cut to "t…" it named nothing; issue 31) — the axis and the tooltip name it.
    font = 14 if slide else 10
    widths = json.dumps([round(_CELL_TEXT_MARGIN * text_width_px(text, font) + 4, 1)
                         for text in data["text"][:len(units)]])
    fits = f"{widths}[indexof({json.dumps(units, ensure_ascii=True)}, datum.unit)] <= width / {len(units)}"
    # The test sits in the mark's encoding, not in a transform: a calculate transform reading `width` (which the
    # step-sized x scale derives from the data) made Vega's dataflow a cycle, and every export failed (issue 44).
    labels = base.mark_text(fontSize=font).encode(text=alt.condition(fits, alt.Text("text:N"), alt.value("")))
    notes = [t("chart.attribution.scores_note", lang)]
    if may_thin(units, FULL_WIDTH_PX - _LABEL_LIMIT, slide):
        notes.append(thinned_note(lang))
    chart = alt.layer(alt.Chart(data).mark_rect(color="#eeeeee").encode(x=alt.X("unit:O", sort=units),
                                                                       y=alt.Y("method:N", sort=methods)),
                      cells, labels).properties(
        title=chart_title(t("chart.attribution.scores_title", lang), notes, slide=slide),
        width=alt.Step(cell), height=alt.Step(30 if slide else 24))
    return style_chart(chart, slide)


def agreement_chart(methods: tuple[str, ...], matrix: np.ndarray, *, name: str, low: float = -1.0,
                    slide: bool = False, subtitle: list[str] | None = None,
                    lang: str = DEFAULT_LANGUAGE) -> alt.LayerChart:
    """Method × method matrix (Kendall τ, Spearman ρ or top-k overlap) with the value written in each cell.
    ``name``: the measure as the reader reads it, already in ``lang``."""
    labels = [method_label(m, lang) for m in methods]
    rows, cols = np.meshgrid(np.arange(len(methods)), np.arange(len(methods)), indexing="ij")
    data = pd.DataFrame({"a": np.array(labels, dtype=object)[rows.ravel()],
                         "b": np.array(labels, dtype=object)[cols.ravel()],
                         "value": matrix.ravel().astype(float)})
    # Every method named on both axes, whole: Vega would otherwise drop every other rotated label.
    base = alt.Chart(data).encode(x=alt.X("b:N", sort=labels, title=None,
                                          axis=alt.Axis(labelAngle=-40, labelOverlap=False, labelLimit=_LABEL_LIMIT)),
                                  y=alt.Y("a:N", sort=labels, title=None,
                                          axis=alt.Axis(labelOverlap=False, labelLimit=_LABEL_LIMIT)),
                                  tooltip=[alt.Tooltip("a:N", title=t("attribution.page.column_method", lang)),
                                           alt.Tooltip("b:N", title=t("attribution.page.column_vs", lang)),
                                           alt.Tooltip("value:Q", title=name, format=".3f")])
    cells = base.mark_rect().encode(color=alt.Color("value:Q", title=name,
                                                    scale=alt.Scale(scheme=AGREEMENT_SCHEME, domain=[low, 1])))
    text = base.mark_text(fontSize=15 if slide else 11).encode(text=alt.Text("value:Q", format=".2f"))
    step = 64 if slide else 46
    chart = alt.layer(cells, text).properties(title=chart_title(t("chart.attribution.agreement_title", lang,
                                                                  name=name), subtitle, slide=slide),
                                              width=alt.Step(step), height=alt.Step(step))
    return style_chart(chart, slide)


def head_tau_chart(head_tau: np.ndarray, *, slide: bool = False, lang: str = DEFAULT_LANGUAGE) -> alt.Chart:
    """Layer × head grid of Kendall τ between that head's attention (from the report's query) and occlusion."""
    layers, heads = head_tau.shape
    layer_index, head_index = np.meshgrid(np.arange(layers), np.arange(heads), indexing="ij")
    data = pd.DataFrame({"layer": layer_index.ravel(), "head": head_index.ravel(), "tau": head_tau.ravel()})
    step = 40 if slide else 26
    layer, head = t("chart.attribution.layer", lang), t("heads.column.head", lang)
    chart = alt.Chart(data).mark_rect().encode(
        x=alt.X("head:O", title=head, axis=head_axis(heads, slide=slide)),
        y=alt.Y("layer:O", title=layer),
        color=alt.Color("tau:Q", title="Kendall τ", scale=alt.Scale(scheme=AGREEMENT_SCHEME, domain=[-1, 1])),
        tooltip=[alt.Tooltip("layer:O", title=layer), alt.Tooltip("head:O", title=head),
                 alt.Tooltip("tau:Q", title="Kendall τ", format=".3f")],
    ).properties(title=chart_title(t("chart.attribution.head_tau_title", lang),
                                   [t("chart.attribution.head_tau_subtitle", lang)], slide=slide),
                 width=alt.Step(step), height=alt.Step(step))
    return style_chart(chart, slide)


def faithfulness_frame(faithful: Faithfulness, lang: str = DEFAULT_LANGUAGE) -> pd.DataFrame:
    """The ERASER table, its columns named in ``lang``: one row per method, comprehensiveness and sufficiency per
    bin, AOPCs and the flip."""
    table = {t("attribution.page.eraser_method", lang): [method_label(m, lang) for m in faithful.methods],
             t("attribution.page.eraser_comp", lang): faithful.aopc_comprehensiveness,
             t("attribution.page.eraser_suff", lang): faithful.aopc_sufficiency,
             t("attribution.page.eraser_flip", lang): faithful.flip_fraction}
    for i, b in enumerate(faithful.bins):
        table[t("attribution.page.eraser_comp_bin", lang, bin=f"{b:.0%}")] = faithful.comprehensiveness[:, i]
    for i, b in enumerate(faithful.bins):
        table[t("attribution.page.eraser_suff_bin", lang, bin=f"{b:.0%}")] = faithful.sufficiency[:, i]
    return pd.DataFrame(table)


def decay_chart(faithful: Faithfulness, *, slide: bool = False, lang: str = DEFAULT_LANGUAGE) -> alt.Chart:
    """f as each method's top-ranked tokens are removed (Serrano & Smith 2019): steeper = more faithful."""
    frames = [pd.DataFrame({"method": method_label(m, lang), "removed": faithful.curve_fractions,
                            "f": faithful.curve[i]}) for i, m in enumerate(faithful.methods)]
    data = pd.concat(frames, ignore_index=True)
    labels = [method_label(m, lang) for m in faithful.methods]
    removal = (t("attribution.page.removed_mask", lang, replacement=faithful.replacement)
               if faithful.removal == "mask" else t("attribution.page.removed_delete", lang))
    method = t("attribution.page.column_method", lang)
    chart = alt.Chart(data).mark_line(point=True, strokeWidth=3 if slide else 2).encode(
        x=alt.X("removed:Q", title=t("chart.attribution.decay_x", lang), axis=alt.Axis(format="%")),
        y=alt.Y("f:Q", title=t("chart.attribution.decay_y", lang)),
        # Under the plot in columns: a legend beside it was cut off at the column's edge with ten methods.
        # Each method keeps its colour in every language: the scale follows the methods' order, not their names.
        color=alt.Color("method:N", title=method, sort=labels,
                        scale=keyed_colours(labels),
                        legend=alt.Legend(orient="bottom", columns=2, labelLimit=_LABEL_LIMIT,
                                          symbolStrokeWidth=3)),
        tooltip=[alt.Tooltip("method:N", title=method),
                 alt.Tooltip("removed:Q", title=t("chart.attribution.removed", lang), format=".0%"),
                 alt.Tooltip("f:Q", title="f", format=".4g")],
    ).properties(title=chart_title(t("chart.attribution.decay_title", lang),
                                   [t("chart.attribution.decay_subtitle", lang, removal=removal)], slide=slide),
                 width=520 if not slide else 760, height=300 if not slide else 440)
    return style_chart(chart, slide)


def counterfactual_chart(tokens: tuple[str, ...], result: CounterfactualAttention, *, slide: bool = False,
                         lang: str = DEFAULT_LANGUAGE) -> alt.Chart:
    """The model's attention row beside its uniform and adversarial replacements, one bar per key token."""
    labels = token_labels(tokens)
    rows = [(t("chart.attribution.row_model", lang), result.original),
            (t("chart.attribution.row_uniform", lang), result.uniform)]
    if result.adversarial is not None:
        rows.append((t("chart.attribution.row_adversarial", lang, jsd=f"{result.adversarial_jsd:.2f}",
                       change=f"{result.adversarial_change:.3g}"), result.adversarial))
    data = pd.concat([pd.DataFrame({"row": name, "key": labels, "weight": values}) for name, values in rows],
                     ignore_index=True)
    order = [name for name, _ in rows]
    # A facet keeps its own width (Streamlit cannot stretch it): bars narrow enough that a row fits the column.
    step = int(np.clip((FULL_WIDTH_PX - 80) // max(len(labels), 1), 6, 30 if slide else 22))
    heads = (t("chart.attribution.every_head", lang) if result.head is None
             else t("attribution.page.read_head", lang, head=result.head))
    chart = alt.Chart(data).mark_bar().encode(
        x=alt.X("key:O", sort=labels, title=t("chart.attribution.key_token", lang),
                axis=token_axis(labels, horizontal=True, step_px=step, slide=slide)),
        y=alt.Y("weight:Q", title=t("chart.attribution.attention_weight", lang)),
        color=alt.Color("row:N", sort=order, legend=None, scale=alt.Scale(scheme="dark2")),
        tooltip=[alt.Tooltip("row:N", title=t("chart.attribution.row", lang)),
                 alt.Tooltip("key:N", title=t("chart.attribution.key", lang)),
                 alt.Tooltip("weight:Q", title=t("chart.attribution.weight", lang), format=".3f")],
    ).properties(width=alt.Step(step), height=160 if not slide else 220).facet(
        row=alt.Row("row:N", sort=order, title=None, header=alt.Header(labelAngle=0, labelAlign="left",
                                                                      labelOrient="top")),
    ).properties(title=chart_title(t("chart.attribution.counterfactual_title", lang),
                                   [t("chart.attribution.counterfactual_where", lang, layer=result.layer, heads=heads,
                                      query=labels[result.query])], slide=slide))
    return style_chart(chart, slide)
