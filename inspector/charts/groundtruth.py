"""Altair charts and display tables of the ground-truth lab (:mod:`inspector.analyses.groundtruth`, issue #8): the
scoreboard's hit rates with their intervals against chance, one example's scores with the causal token marked,
and the heads whose attention row peaks on the causal token next to the weight it puts there.

Conventions of :mod:`inspector.charts`: finished numbers in, a chart out, no analysis; token strings reach
Vega only as data (drawn as text, escaped in tooltips), never as HTML; ``slide=True`` for projectors, applied
last by :func:`~inspector.charts.style_chart`; ``lang`` words every title, axis, legend, tooltip and mark, and names
the methods (:func:`~inspector.analyses.attribution.method_label`; model labels and tokens are names and data, shown
as they
are).
"""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

from inspector.analyses.attribution import METHOD_LABELS, method_label
from inspector.analyses.groundtruth import ExampleScores, Scoreboard, rank_of
from inspector.base.i18n import DEFAULT_LANGUAGE, t
from inspector.charts.base import (
    FULL_WIDTH_PX,
    chart_title,
    head_axis,
    may_thin,
    style_chart,
    thinned_note,
    token_axis,
    token_labels,
    wrap_text,
    zero_white_scale,
)
from inspector.charts.sentences.groundtruth import task_words

HIT_COLOR = "#4c78a8"
INTERVAL_COLOR = "#222222"
CHANCE_COLOR = "#d62728"
SCALED_SCHEME = "blues"
CAUSAL_MARK, SUPPORTING_MARK = "◆ causal", "◇ supporting"  # in English; causal_mark(lang) and supporting_mark(lang)
_LABEL_LIMIT = 200
_NAMES_PX = 170  # the method names left of the scoreboard (the longest label, "attention × gradient", and a gap)
_PANEL_SPACING_PX = 24


def _label(method: str, lang: str) -> str:
    """The method's label in ``lang``; a board read from JSON may name a method this process never registered."""
    return method_label(method, lang) if method in METHOD_LABELS else method


def causal_mark(lang: str = DEFAULT_LANGUAGE) -> str:
    """:data:`CAUSAL_MARK` in ``lang``: the suffix of the causal token's column."""
    return t("chart.gt.causal_mark", lang)


def supporting_mark(lang: str = DEFAULT_LANGUAGE) -> str:
    """:data:`SUPPORTING_MARK` in ``lang``: the suffix of a supporting token's column."""
    return t("chart.gt.supporting_mark", lang)


def has_mechanism(board: Scoreboard) -> bool:
    """Whether the task has supporting tokens (induction), so "found the mechanism" differs from "found B"."""
    return board.card.task.name == "induction"


def method_order(board: Scoreboard) -> list[int]:
    """Method indices best first: top-1 hit rate, then top-k, then mean rank (lower first)."""
    return sorted(range(len(board.methods)), key=lambda i: (-board.top1[i], -board.topk[i], board.mean_rank[i]))


def _rate_panel(data: pd.DataFrame, order: list[str], *, field: str, title: str, chance: float | None,
                slide: bool, labels: bool = True, width: int = 220, lang: str = DEFAULT_LANGUAGE) -> alt.LayerChart:
    """One panel: a bar per method at ``field``, its 95 % interval as a rule, chance as a dashed line;
    ``labels=False`` leaves the method names to the panel on its left. ``title``: already in ``lang``."""
    base = alt.Chart(data).encode(
        y=alt.Y("method:N", sort=order, title=None, axis=alt.Axis(labelLimit=_LABEL_LIMIT, labels=labels)),
        tooltip=[alt.Tooltip("method:N", title=t("gt.column.method", lang)),
                 alt.Tooltip(f"{field}:Q", title=title, format=".1%"),
                 alt.Tooltip(f"{field}_low:Q", title=t("chart.gt.low", lang), format=".1%"),
                 alt.Tooltip(f"{field}_high:Q", title=t("chart.gt.high", lang), format=".1%")])
    bars = base.mark_bar(color=HIT_COLOR, opacity=0.8).encode(
        x=alt.X(f"{field}:Q", title=title, scale=alt.Scale(domain=[0, 1]), axis=alt.Axis(format="%")))
    interval = base.mark_rule(color=INTERVAL_COLOR, strokeWidth=3 if slide else 2).encode(
        x=alt.X(f"{field}_low:Q"), x2=alt.X2(f"{field}_high:Q"))
    layers = [bars, interval]
    if chance is not None:
        line = pd.DataFrame({"chance": [float(chance)], "label": [t("chart.gt.chance", lang, rate=f"{chance:.0%}")]})
        rule = alt.Chart(line).mark_rule(color=CHANCE_COLOR, strokeDash=[6, 4], strokeWidth=3 if slide else 2)
        layers.append(rule.encode(x="chance:Q",
                                  tooltip=[alt.Tooltip("label:N", title=t("chart.gt.random_ranking", lang))]))
        layers.append(alt.Chart(line).mark_text(color=CHANCE_COLOR, align="left", dx=4, dy=-6, baseline="bottom",
                                                fontSize=15 if slide else 11)
                      .encode(x="chance:Q", y=alt.value(0), text="label:N"))
    return alt.layer(*layers).properties(width=width, height=alt.Step(34 if slide else 24))


def scoreboard_chart(board: Scoreboard, *, slide: bool = False, lang: str = DEFAULT_LANGUAGE,
                     label: str | None = None) -> alt.HConcatChart:
    """Per method, the share of examples that rank the causal token first (and among the top k) with its
    95 % Wilson interval, best method first, against a random ranking's rate (dashed). For tasks with
    supporting tokens (induction) a third panel: the share whose top-ranked token is the causal token or a
    supporting one — whether the method found the mechanism at all. ``label``: the model's name in ``lang`` for
    the title (the caller's :func:`inspector.core.loading.model_label`; default: its card's English label)."""
    order_index = method_order(board)
    data = pd.DataFrame({
        "method": [_label(board.methods[i], lang) for i in order_index],
        **{name: [float(getattr(board, name)[i]) for i in order_index]
           for name in ("top1", "top1_low", "top1_high", "topk", "topk_low", "topk_high", "mechanism_top1",
                        "mechanism_top1_low", "mechanism_top1_high")},
    })
    order = list(data["method"])
    # A concatenation keeps its own width (Streamlit cannot stretch it): the panels share the main column at a
    # 1000 px window with the method names on the left.
    count = 3 if has_mechanism(board) else 2
    width = max(90, (FULL_WIDTH_PX - _NAMES_PX - _PANEL_SPACING_PX * (count - 1)) // count)
    panels = [_rate_panel(data, order, field="top1", title=t("chart.gt.top1", lang), chance=board.chance_top1,
                          slide=slide, width=width, lang=lang),
              _rate_panel(data, order, field="topk", title=t("chart.gt.topk", lang, k=board.k),
                          chance=board.chance_topk, slide=slide, labels=False, width=width, lang=lang)]
    if has_mechanism(board):
        panels.append(_rate_panel(data, order, field="mechanism_top1", title=t("chart.gt.mechanism", lang),
                                  chance=None, slide=slide, labels=False, width=width, lang=lang))
    card = board.card
    subtitle = [t("chart.gt.scoreboard_subtitle", lang, examples=board.examples,
                  task=task_words(card.task, "name", lang),
                  truth=task_words(card.task, "truth", lang)),
                t("chart.gt.scoreboard_key", lang)]
    chart = alt.hconcat(*panels, spacing=_PANEL_SPACING_PX).resolve_scale(y="shared").properties(
        title=chart_title(t("chart.gt.scoreboard_title", lang, label=label or card.label), subtitle, slide=slide))
    return style_chart(chart, slide)


def example_frame(scored: ExampleScores, lang: str = DEFAULT_LANGUAGE) -> pd.DataFrame:
    """One row per (method, token): ``method`` (its label in ``lang``), ``unit`` (position label, the causal column
    suffixed with :func:`causal_mark`, supporting ones with :func:`supporting_mark`, in ``lang``), ``token``, ``role``
    (causal / supporting / other / special), ``role_name`` (the role in ``lang``), ``score`` (the method's own
    value), ``scaled`` (min–max over the content tokens, in [0, 1]; NaN for special tokens and scores that are not
    finite) and ``rank`` (1-based among the content tokens, ties against the token; None for special tokens)."""
    units = token_labels(scored.tokens)
    roles = ["special" if not scored.content[i] else "other" for i in range(len(units))]
    for i in scored.supporting:
        units[i], roles[i] = f"{units[i]} {supporting_mark(lang)}", "supporting"
    units[scored.position], roles[scored.position] = f"{units[scored.position]} {causal_mark(lang)}", "causal"
    role_names = [t(f"chart.gt.role.{role}", lang) for role in roles]
    frames = []
    for method, values in scored.scores.items():
        values = np.asarray(values, dtype=float)
        usable = scored.content & np.isfinite(values)
        scaled = np.full(len(values), np.nan)
        if usable.any():
            low, high = values[usable].min(), values[usable].max()
            scaled[usable] = (values[usable] - low) / (high - low) if high > low else 0.0
        ranks = [rank_of(values, scored.content, i) if scored.content[i] else None for i in range(len(values))]
        frames.append(pd.DataFrame({"method": _label(method, lang), "unit": units, "token": list(scored.tokens),
                                    "role": roles, "role_name": role_names, "score": values, "scaled": scaled,
                                    "rank": pd.array(ranks, dtype="Int64")}))
    return pd.concat(frames, ignore_index=True)


def example_chart(scored: ExampleScores, *, slide: bool = False, lang: str = DEFAULT_LANGUAGE) -> alt.LayerChart:
    """Token × method heatmap: each method's scores rescaled to [0, 1] over the content tokens (min–max per
    method; grey = special token or no score), the causal token's column outlined in black and marked
    :func:`causal_mark`, supporting tokens outlined dashed and marked :func:`supporting_mark`."""
    data = example_frame(scored, lang)
    units = list(dict.fromkeys(data["unit"]))
    methods = list(dict.fromkeys(data["method"]))
    token = t("chart.attribution.token", lang)
    base = alt.Chart(data).encode(
        x=alt.X("unit:O", sort=units, title=token,
                axis=token_axis(units, horizontal=True, label_limit=_LABEL_LIMIT, slide=slide,
                                keep=(scored.position, *scored.supporting))),
        y=alt.Y("method:N", sort=methods, title=None, axis=alt.Axis(labelLimit=_LABEL_LIMIT)),
        tooltip=[alt.Tooltip("token:N", title=token), alt.Tooltip("method:N", title=t("gt.column.method", lang)),
                 alt.Tooltip("score:Q", title=t("chart.gt.raw_score", lang), format=".4g"),
                 alt.Tooltip("rank:Q", title=t("chart.gt.rank", lang)),
                 alt.Tooltip("role_name:N", title=t("chart.gt.role", lang))])
    grey = base.mark_rect(color="#d9d9d9")
    cells = base.mark_rect().encode(color=alt.Color("scaled:Q", title=t("chart.gt.scaled_legend", lang),
                                                    scale=zero_white_scale(SCALED_SCHEME, 1.0)))
    width = 4 if slide else 3
    causal = base.mark_rect(fill=None, stroke="black", strokeWidth=width).transform_filter(
        alt.datum.role == "causal")
    supporting = base.mark_rect(fill=None, stroke="#e66101", strokeWidth=width - 1, strokeDash=[4, 3]).transform_filter(
        alt.datum.role == "supporting")
    step = 48 if slide else 34
    notes = [t("chart.gt.example_note", lang),
             t("chart.gt.causal_supporting_note", lang, causal=causal_mark(lang), supporting=supporting_mark(lang))
             if scored.supporting else t("chart.gt.causal_note", lang, causal=causal_mark(lang))]
    if may_thin(units, FULL_WIDTH_PX - _LABEL_LIMIT, slide):
        notes.append(thinned_note(lang))
    chart = alt.layer(grey, cells, supporting, causal).properties(
        title=chart_title(t("chart.gt.example_title", lang), notes, slide=slide),
        width=alt.Step(step), height=alt.Step(30 if slide else 24))
    return style_chart(chart, slide)


def head_hits_frame(board: Scoreboard) -> pd.DataFrame:
    """One row per (layer, head): ``peaks`` (share of examples whose attention row in this head peaks on the
    causal token) and ``weight`` (that row's mean weight on it)."""
    layers, heads = board.head_top1.shape
    layer_index, head_index = np.meshgrid(np.arange(layers), np.arange(heads), indexing="ij")  # (layers, heads)
    return pd.DataFrame({"layer": layer_index.ravel(), "head": head_index.ravel(),
                         "peaks": board.head_top1.ravel().astype(float),
                         "weight": board.head_weight.ravel().astype(float)})


def head_hits_chart(board: Scoreboard, *, slide: bool = False, lang: str = DEFAULT_LANGUAGE) -> alt.HConcatChart:
    """Two layer × head grids side by side, both on [0, 1]: the share of examples whose attention row (the one
    the attention method reads) in this head peaks on the causal token among the content tokens, and the mean
    weight that row puts on it. Shown together because a head can rank the token first with almost none of its
    weight (the deceptive model's layer 0), which the first grid alone would make look like "finding" it."""
    data = head_hits_frame(board)
    heads = int(data["head"].max()) + 1
    # Two grids side by side in the main column at a 1000 px window (a concatenation keeps its own width);
    # the numbers are written in the cells only where they fit.
    step = int(np.clip((FULL_WIDTH_PX - 120) // (2 * heads), 12, 56 if slide else 44))
    numbers = step >= (48 if slide else 34)
    layer, head = t("chart.attribution.layer", lang), t("heads.column.head", lang)
    tooltip = [alt.Tooltip("layer:O", title=layer), alt.Tooltip("head:O", title=head),
               alt.Tooltip("peaks:Q", title=t("chart.gt.peaks", lang), format=".1%"),
               alt.Tooltip("weight:Q", title=t("chart.gt.weight", lang), format=".2%")]
    base = alt.Chart(data).encode(x=alt.X("head:O", title=head, axis=head_axis(heads, step_px=step, slide=slide)),
                                  y=alt.Y("layer:O", title=layer), tooltip=tooltip)
    legend_px = max(step * heads, 120)

    def grid(field: str, legend: str, scheme: str, number: str) -> alt.LayerChart:
        # The legend's title wrapped under its grid; the field's title stays one string (screen readers read it).
        cells = base.mark_rect().encode(color=alt.Color(
            f"{field}:Q", title=legend, scale=zero_white_scale(scheme, 1.0),
            legend=alt.Legend(orient="bottom", gradientLength=min(legend_px, 200),
                              title=wrap_text(legend, legend_px, 16 if slide else 12))))
        layers = [cells]
        if numbers:
            layers.append(base.mark_text(fontSize=14 if slide else 10).encode(
                text=alt.Text(f"{field}:Q", format=number),
                color=alt.condition(f"datum.{field} > 0.6", alt.value("white"), alt.value("black"))))
        return alt.layer(*layers).properties(width=alt.Step(step), height=alt.Step(step))

    row = t("chart.gt.last_token", lang) if board.card.task.kind == "causal-lm" else "[CLS]"
    chart = alt.hconcat(
        grid("peaks", t("chart.gt.peaks_legend", lang), "purples", ".0%"),
        grid("weight", t("chart.gt.weight_legend", lang), "greens", ".1%"),
        spacing=32).resolve_scale(color="independent").properties(
        title=chart_title(t("chart.gt.head_hits_title", lang),
                          [t("chart.gt.head_hits_row", lang, row=row, examples=board.examples),
                           t("chart.gt.head_hits_caution", lang)]
                          + ([] if numbers else [t("chart.gt.hover", lang)]), slide=slide))
    return style_chart(chart, slide)


def _interval(value: float, low: float, high: float, fmt: str) -> str:
    return f"{value:{fmt}} [{low:{fmt}}–{high:{fmt}}]"


def scoreboard_table(board: Scoreboard, lang: str = DEFAULT_LANGUAGE) -> pd.DataFrame:
    """The scoreboard as display text in ``lang``, best method first, then a chance row: method, top-1 [95 %],
    top-k [95 %], mean rank [95 %], top-1 by magnitude [95 %] and — for tasks with supporting tokens — found the
    mechanism [95 %]. Mean ranks with one decimal: "11.30 [9.00–13.90]" made the column a few pixels too wide for
    the page at a 1000 px window."""
    mechanism = has_mechanism(board)
    method, top1, topk = t("gt.column.method", lang), t("gt.column.top1", lang), t("gt.column.topk", lang, k=board.k)
    mean_rank, magnitude = t("gt.column.mean_rank", lang), t("gt.column.magnitude", lang)
    found = t("gt.column.mechanism_rate", lang)
    rows = []
    for i in method_order(board):
        row = {method: _label(board.methods[i], lang),
               top1: _interval(board.top1[i], board.top1_low[i], board.top1_high[i], ".0%"),
               topk: _interval(board.topk[i], board.topk_low[i], board.topk_high[i], ".0%"),
               mean_rank: _interval(board.mean_rank[i], board.mean_rank_low[i], board.mean_rank_high[i], ".1f"),
               magnitude: _interval(board.magnitude_top1[i], board.magnitude_top1_low[i],
                                    board.magnitude_top1_high[i], ".0%")}
        if mechanism:
            row[found] = _interval(board.mechanism_top1[i], board.mechanism_top1_low[i],
                                   board.mechanism_top1_high[i], ".0%")
        rows.append(row)
    chance = {method: t("gt.column.chance", lang), top1: f"{board.chance_top1:.0%}", topk: f"{board.chance_topk:.0%}",
              mean_rank: f"{board.chance_rank:.1f}", magnitude: f"{board.chance_top1:.0%}"}
    if mechanism:
        chance[found] = ""
    rows.append(chance)
    return pd.DataFrame(rows)


def example_table(scored: ExampleScores, top: dict[str, int], *, mechanism: bool,
                  lang: str = DEFAULT_LANGUAGE) -> pd.DataFrame:
    """One example as display text in ``lang``: method, the causal token's rank (of the n content tokens), the
    top-ranked token (``top``: method → its position), hit ✓/✗ and — with ``mechanism`` — whether the top token
    is the causal or a supporting one."""
    n = int(scored.content.sum())
    method, rank_title = t("gt.column.method", lang), t("gt.column.rank_b" if mechanism else "gt.column.rank", lang)
    top_token, hit, found = t("gt.column.top_token", lang), t("gt.column.hit", lang), t("gt.column.mechanism", lang)
    rows = []
    for name, rank in scored.ranks.items():
        row = {method: _label(name, lang), rank_title: t("gt.column.rank_of", lang, rank=rank, n=n),
               top_token: f"{top[name]}: {scored.tokens[top[name]]}", hit: "✓" if rank == 1 else "✗"}
        if mechanism:
            row[found] = "✓" if scored.mechanism_ranks[name] == 1 else "✗"
        rows.append(row)
    return pd.DataFrame(rows)
