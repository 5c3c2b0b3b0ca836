"""Altair charts for the decoder-era lessons (:mod:`inspector.analyses.lessons`: ``decoder``, ``sinks``,
``geometry``), over finished numbers only. Conventions as in
:mod:`inspector.charts.lessons`: titles from the caller in the page's language, every other visible word from the
catalogue in ``lang``, tokens labelled ``"position: token"`` and only ever passed as data, colour legends of
heatmaps under the plot (:func:`inspector.charts.lessons.heatmap_legend`), ``slide`` applied last.
"""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

from inspector.analyses.lessons import (
    CausalLesson,
    GQALesson,
    LinearLesson,
    ProjectionsLesson,
    QKSpaceLesson,
    RopeLesson,
    SinksLesson,
    WindowLesson,
    kind_name_key,
)
from inspector.base.i18n import DEFAULT_LANGUAGE, t
from inspector.charts.base import (
    DARK2,
    FULL_WIDTH_PX,
    chart_title,
    head_axis,
    keyed_colours,
    largest_weight,
    style_chart,
    thinned_note,
    token_axis,
    token_labels,
    weight_scale,
)
from inspector.charts.lessons import heatmap_legend


def _bottom_legend(columns: int = 2) -> alt.Legend:
    """A category legend under the plot, inside the chart's width at a 1000 px window."""
    return alt.Legend(orient="bottom", columns=columns, labelLimit=FULL_WIDTH_PX // 2)


def mask_chart(visible: np.ndarray, tokens: tuple[str, ...], *, title: str, slide: bool = False,
               lang: str = DEFAULT_LANGUAGE) -> alt.Chart:
    """Which keys (columns) each query (rows) may see: ``visible`` (n, n) bool."""
    labels = token_labels(tokens)
    n = len(tokens)
    rows, cols = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    seen, masked = t("chart.decoder.visible", lang), t("chart.decoder.masked", lang)
    data = pd.DataFrame({"query": np.asarray(labels, dtype=object)[rows.ravel()],
                         "key": np.asarray(labels, dtype=object)[cols.ravel()],
                         "mask": np.where(np.asarray(visible).ravel(), seen, masked)})
    cell = int(np.clip((FULL_WIDTH_PX - 130) // max(n, 1), 4, 24))
    notes = [thinned_note(lang)] if cell < 14 else []
    chart = alt.Chart(data).mark_rect(stroke="white", strokeWidth=0.5).encode(
        x=alt.X("key:O", sort=labels, title=t("chart.lessons.key", lang),
                axis=token_axis(labels, horizontal=True, step_px=cell, slide=slide)),
        y=alt.Y("query:O", sort=labels, title=t("lesson1.col_query", lang),
                axis=token_axis(labels, horizontal=False, step_px=cell, slide=slide)),
        color=alt.Color("mask:N", title=t("chart.decoder.mask", lang), sort=[seen, masked],
                        scale=alt.Scale(domain=[seen, masked], range=["#2171b5", "#eeeeee"]),
                        legend=_bottom_legend()),
        tooltip=[alt.Tooltip("query:N", title=t("lesson1.col_query", lang)),
                 alt.Tooltip("key:N", title=t("chart.lessons.key", lang)),
                 alt.Tooltip("mask:N", title=t("chart.decoder.mask", lang))],
    ).properties(width=alt.Step(cell), height=alt.Step(cell), title=chart_title(title, notes, slide=slide))
    return style_chart(chart, slide)


def asymmetry_pair_chart(lesson: CausalLesson, *, title: str, slide: bool = False,
                         lang: str = DEFAULT_LANGUAGE) -> alt.Chart:
    """‖S − Sᵀ‖/‖S‖ per head with the model's W_K and with W_K := W_Q, side by side."""
    own, tied = t("chart.decoder.own", lang), t("chart.decoder.tied", lang)
    heads = np.arange(len(lesson.asymmetry))
    data = pd.concat([pd.DataFrame({"head": heads, "keys": own, "asymmetry": lesson.asymmetry}),
                      pd.DataFrame({"head": heads, "keys": tied, "asymmetry": lesson.tied_asymmetry})])
    chart = alt.Chart(data).mark_bar().encode(
        x=alt.X("head:O", title=t("heads.column.head", lang), axis=head_axis(len(heads), slide=slide)),
        xOffset=alt.XOffset("keys:N", sort=[own, tied]),
        y=alt.Y("asymmetry:Q", title="‖S − Sᵀ‖ / ‖S‖"),
        color=alt.Color("keys:N", title=t("chart.decoder.keys", lang), sort=[own, tied],
                        scale=alt.Scale(range=["#08519c", "#fd8d3c"]), legend=_bottom_legend()),
        tooltip=[alt.Tooltip("head:O", title=t("heads.column.head", lang)),
                 alt.Tooltip("keys:N", title=t("chart.decoder.keys", lang)),
                 alt.Tooltip("asymmetry:Q", title=t("chart.lessons.asymmetry", lang), format=".3g")],
    ).properties(title=chart_title(title, slide=slide), width=alt.Step(18 if slide else 14), height=200)
    return style_chart(chart, slide)


def rope_offset_chart(lesson: RopeLesson, *, title: str, slide: bool = False,
                      lang: str = DEFAULT_LANGUAGE) -> alt.Chart:
    """The chosen head's score of one q/k pair against their offset, with the query at two positions."""
    where = t("chart.decoder.query_at", lang)
    frames = [pd.DataFrame({"offset": lesson.offsets, "score": lesson.offset_scores[i], "at": f"m = {m}"})
              for i, m in enumerate(lesson.positions)]
    order = [f"m = {m}" for m in lesson.positions]
    chart = alt.Chart(pd.concat(frames)).mark_line(strokeWidth=4 if slide else 2).encode(
        x=alt.X("offset:Q", title=t("chart.decoder.offset", lang)),
        y=alt.Y("score:Q", title=t("chart.decoder.score", lang)),
        color=alt.Color("at:N", title=where, sort=order, scale=alt.Scale(scheme="dark2"), legend=_bottom_legend()),
        strokeDash=alt.StrokeDash("at:N", sort=order, legend=None, scale=alt.Scale(range=[[1, 0], [6, 4]])),
        tooltip=[alt.Tooltip("offset:Q", title=t("chart.decoder.offset", lang)), alt.Tooltip("at:N", title=where),
                 alt.Tooltip("score:Q", title=t("chart.decoder.score", lang), format=".4f")],
    ).properties(title=chart_title(title, slide=slide), width=420, height=220)
    return style_chart(chart, slide)


def rope_wavelength_chart(lesson: RopeLesson, *, title: str, slide: bool = False,
                          lang: str = DEFAULT_LANGUAGE) -> alt.Chart:
    """Tokens per full turn of each q/k pair, one line per kind of layer (θ), log scale."""
    frames = [pd.DataFrame({"pair": lesson.pair_index, "tokens": wave,
                            "kind": t("lessons.named_value", lang, name=t(kind_name_key(kind), lang),
                                      value=f"θ = {lesson.thetas[kind]:,.0f}")})
              for kind, wave in lesson.wavelength.items()]
    order = [frame["kind"].iloc[0] for frame in frames]  # the lesson's order, whatever the names say
    kinds = t("chart.decoder.layers", lang)
    chart = alt.Chart(pd.concat(frames)).mark_line(strokeWidth=4 if slide else 2).encode(
        x=alt.X("pair:Q", title=t("chart.decoder.pair", lang)),
        y=alt.Y("tokens:Q", title=t("chart.decoder.tokens_per_turn", lang), scale=alt.Scale(type="log")),
        color=alt.Color("kind:N", title=kinds, sort=order, scale=keyed_colours(order, DARK2), legend=_bottom_legend(1)),
        tooltip=[alt.Tooltip("kind:N", title=kinds), alt.Tooltip("pair:Q", title=t("chart.decoder.pair", lang)),
                 alt.Tooltip("tokens:Q", title=t("chart.decoder.tokens_per_turn", lang), format=",.1f")],
    ).properties(title=chart_title(title, slide=slide), width=420, height=220)
    return style_chart(chart, slide)


def js_heatmap(lesson: GQALesson, *, title: str, slide: bool = False, lang: str = DEFAULT_LANGUAGE) -> alt.Chart:
    """Mean JS divergence between every two heads of the layer, heads labelled with their key/value head."""
    heads = len(lesson.kv_head_of)
    names = [f"{h} (kv {int(lesson.kv_head_of[h])})" for h in range(heads)]
    a, b = np.meshgrid(np.arange(heads), np.arange(heads), indexing="ij")
    data = pd.DataFrame({"a": np.asarray(names, dtype=object)[a.ravel()],
                         "b": np.asarray(names, dtype=object)[b.ravel()], "js": lesson.js.ravel()})
    step = 36 if slide else 30
    chart = alt.Chart(data).mark_rect().encode(
        x=alt.X("b:O", sort=names, title=t("chart.decoder.head_b", lang), axis=alt.Axis(labelAngle=-45)),
        y=alt.Y("a:O", sort=names, title=t("chart.decoder.head_a", lang)),
        color=alt.Color("js:Q", title=t("chart.decoder.js", lang), scale=alt.Scale(scheme="blues"),
                        legend=heatmap_legend(slide)),
        tooltip=[alt.Tooltip("a:N", title=t("chart.decoder.head_a", lang)),
                 alt.Tooltip("b:N", title=t("chart.decoder.head_b", lang)),
                 alt.Tooltip("js:Q", title=t("chart.decoder.js", lang), format=".4f")],
    ).properties(title=chart_title(title, slide=slide), width=alt.Step(step), height=alt.Step(step))
    return style_chart(chart, slide)


def sink_mass_chart(lesson: SinksLesson, *, title: str, slide: bool = False,
                    lang: str = DEFAULT_LANGUAGE) -> alt.Chart:
    """Mean weight on the first token per layer, the chosen layer darker."""
    layers = np.arange(len(lesson.sink_mass))
    data = pd.DataFrame({"layer": layers, "mass": lesson.sink_mass, "chosen": layers == lesson.layer})
    chart = alt.Chart(data).mark_bar().encode(
        x=alt.X("layer:O", title=t("chart.decoder.layer", lang), axis=alt.Axis(labelAngle=0)),
        y=alt.Y("mass:Q", title=t("chart.decoder.sink_mass", lang), scale=alt.Scale(domain=[0, 1])),
        color=alt.condition(alt.datum.chosen, alt.value("#08519c"), alt.value("#9ecae1")),
        tooltip=[alt.Tooltip("layer:O", title=t("chart.decoder.layer", lang)),
                 alt.Tooltip("mass:Q", title=t("chart.decoder.sink_mass", lang), format=".1%")],
    ).properties(title=chart_title(title, slide=slide), width=alt.Step(13 if len(layers) > 20 else 20), height=200)
    return style_chart(chart, slide)


def sink_share_chart(lesson: SinksLesson, *, title: str, slide: bool = False,
                     lang: str = DEFAULT_LANGUAGE) -> alt.Chart:
    """Per head of the chosen layer: the first token's share by weight and by norm-weighted attention."""
    by_weight, by_norm = t("chart.decoder.by_weight", lang), t("chart.decoder.by_norm", lang)
    heads = np.arange(len(lesson.weight_share))
    data = pd.concat([pd.DataFrame({"head": heads, "by": by_weight, "share": lesson.weight_share}),
                      pd.DataFrame({"head": heads, "by": by_norm, "share": lesson.norm_share})])
    by = t("chart.decoder.by", lang)
    chart = alt.Chart(data).mark_bar().encode(
        x=alt.X("head:O", title=t("heads.column.head", lang), axis=head_axis(len(heads), slide=slide)),
        xOffset=alt.XOffset("by:N", sort=[by_weight, by_norm]),
        y=alt.Y("share:Q", title=t("chart.decoder.share", lang), scale=alt.Scale(domain=[0, 1])),
        color=alt.Color("by:N", title=by, sort=[by_weight, by_norm], scale=alt.Scale(range=["#08519c", "#fd8d3c"]),
                        legend=_bottom_legend()),
        tooltip=[alt.Tooltip("head:O", title=t("heads.column.head", lang)), alt.Tooltip("by:N", title=by),
                 alt.Tooltip("share:Q", title=t("chart.decoder.share", lang), format=".1%")],
    ).properties(title=chart_title(title, slide=slide), width=alt.Step(14 if slide else 11), height=200)
    return style_chart(chart, slide)


def _timing_chart(lengths: np.ndarray, series: dict[str, np.ndarray], legend_title: str, *, title: str,
                  slide: bool, lang: str) -> alt.Chart:
    data = pd.concat([pd.DataFrame({"n": lengths, "ms": ms, "series": name}) for name, ms in series.items()])
    ms = t("chart.decoder.ms", lang)
    chart = alt.Chart(data).mark_line(point=True, strokeWidth=4 if slide else 2).encode(
        x=alt.X("n:Q", scale=alt.Scale(type="log", base=2)),
        y=alt.Y("ms:Q", title=ms, scale=alt.Scale(type="log")),
        color=alt.Color("series:N", title=legend_title, sort=list(series), scale=alt.Scale(scheme="dark2"),
                        legend=_bottom_legend()),
        tooltip=["n:Q", alt.Tooltip("series:N", title=legend_title), alt.Tooltip("ms:Q", title=ms, format=".2f")],
    ).properties(title=chart_title(title, slide=slide), width=420, height=220)
    return style_chart(chart, slide)


def window_timing_chart(lesson: WindowLesson, *, title: str, slide: bool = False,
                        lang: str = DEFAULT_LANGUAGE) -> alt.Chart:
    return _timing_chart(lesson.lengths, {t("chart.decoder.local", lang): lesson.local_ms,
                                          t("chart.decoder.global", lang): lesson.global_ms},
                         t("chart.decoder.kind", lang), title=title, slide=slide, lang=lang)


def linear_timing_chart(lesson: LinearLesson, *, title: str, slide: bool = False,
                        lang: str = DEFAULT_LANGUAGE) -> alt.Chart:
    return _timing_chart(lesson.lengths, {t("chart.decoder.softmax", lang): lesson.softmax_ms,
                                          t("chart.decoder.linear", lang): lesson.linear_ms},
                         t("chart.decoder.form", lang), title=title, slide=slide, lang=lang)


def linear_weights_chart(lesson: LinearLesson, *, title: str, slide: bool = False,
                         lang: str = DEFAULT_LANGUAGE) -> alt.FacetChart:
    """The head's softmax weights and the linear-attention routing, side by side, one colour scale."""
    labels = token_labels(lesson.tokens)
    n = len(labels)
    rows, cols = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    soft, lin = t("chart.decoder.softmax", lang), t("chart.decoder.linear", lang)
    frames = [pd.DataFrame({"form": name, "query": np.asarray(labels, dtype=object)[rows.ravel()],
                            "key": np.asarray(labels, dtype=object)[cols.ravel()], "weight": weights.ravel()})
              for name, weights in ((soft, lesson.weights), (lin, lesson.linear))]
    cell = int(np.clip((FULL_WIDTH_PX - 150) // (2 * max(n, 1)), 3, 20))
    notes = [thinned_note(lang)] if cell < 15 else []
    panel = alt.Chart().mark_rect().encode(
        x=alt.X("key:O", sort=labels, title=t("chart.lessons.key", lang),
                axis=token_axis(labels, horizontal=True, step_px=cell, slide=slide)),
        y=alt.Y("query:O", sort=labels, title=t("lesson1.col_query", lang),
                axis=token_axis(labels, horizontal=False, step_px=cell, slide=slide)),
        color=alt.Color("weight:Q", title=t("chart.lessons.weight", lang),
                        scale=weight_scale(slide, largest_weight(lesson.weights, lesson.linear)),
                        legend=heatmap_legend(slide)),
        tooltip=[alt.Tooltip("form:N", title=t("chart.decoder.form", lang)),
                 alt.Tooltip("query:N", title=t("lesson1.col_query", lang)),
                 alt.Tooltip("key:N", title=t("chart.lessons.key", lang)),
                 alt.Tooltip("weight:Q", title=t("chart.lessons.weight", lang), format=".3f")],
    ).properties(width=alt.Step(cell), height=alt.Step(cell))
    chart = panel.facet(data=pd.concat(frames, ignore_index=True), column=alt.Column("form:N", title=None,
                                                                                     sort=[soft, lin]))
    return style_chart(chart.properties(title=chart_title(title, notes, slide=slide)), slide)


def qk_scatter_chart(lesson: QKSpaceLesson, *, title: str, slide: bool = False,
                     lang: str = DEFAULT_LANGUAGE) -> alt.Chart:
    """Queries and keys on the joint PCA plane after the normalisation."""
    labels = token_labels(lesson.tokens)
    query, key = t("chart.decoder.query", lang), t("chart.decoder.key", lang)
    data = pd.concat([pd.DataFrame({"x": lesson.query_xy[:, 0], "y": lesson.query_xy[:, 1], "role": query,
                                    "token": labels}),
                      pd.DataFrame({"x": lesson.key_xy[:, 0], "y": lesson.key_xy[:, 1], "role": key,
                                    "token": labels})])
    role = t("chart.decoder.role", lang)
    chart = alt.Chart(data).mark_point(filled=True, size=90 if slide else 50).encode(
        x=alt.X("x:Q", title="PC 1"), y=alt.Y("y:Q", title="PC 2"),
        color=alt.Color("role:N", title=role, sort=[query, key], scale=alt.Scale(range=["#08519c", "#fd8d3c"]),
                        legend=_bottom_legend()),
        shape=alt.Shape("role:N", sort=[query, key], legend=None),
        tooltip=[alt.Tooltip("token:N", title=t("chart.decoder.token", lang)), alt.Tooltip("role:N", title=role)],
    ).properties(title=chart_title(title, slide=slide), width=380, height=300)
    return style_chart(chart, slide)


def norm_gap_chart(lesson: QKSpaceLesson, *, title: str, slide: bool = False,
                   lang: str = DEFAULT_LANGUAGE) -> alt.Chart:
    layers = np.arange(len(lesson.norm_gap))
    data = pd.DataFrame({"layer": layers, "ratio": lesson.norm_gap, "chosen": layers == lesson.layer})
    chart = alt.Chart(data).mark_bar().encode(
        x=alt.X("layer:O", title=t("chart.decoder.layer", lang), axis=alt.Axis(labelAngle=0)),
        y=alt.Y("ratio:Q", title=t("chart.decoder.ratio", lang)),
        color=alt.condition(alt.datum.chosen, alt.value("#08519c"), alt.value("#9ecae1")),
        tooltip=[alt.Tooltip("layer:O", title=t("chart.decoder.layer", lang)),
                 alt.Tooltip("ratio:Q", title=t("chart.decoder.ratio", lang), format=".2f")],
    ).properties(title=chart_title(title, slide=slide), width=alt.Step(13 if len(layers) > 20 else 20), height=200)
    return style_chart(chart, slide)


def singular_values_chart(lesson: ProjectionsLesson, *, title: str, slide: bool = False,
                          lang: str = DEFAULT_LANGUAGE) -> alt.Chart:
    """Singular values of W_Q, W_K, W_V, W_O and W_Q W_Kᵀ by index, log scale (W_QK: only its first d_k + 8, the
    rest are rounding)."""
    names = ["W_Q", "W_K", "W_V", "W_O", "W_QK"]
    frames = []
    for name in names:
        sigma = lesson.singular[name]
        if name == "W_QK":
            sigma = sigma[:len(lesson.singular["W_Q"]) + 8]
        frames.append(pd.DataFrame({"index": np.arange(len(sigma)), "sigma": np.maximum(sigma, 1e-12),
                                    "matrix": "W_Q W_Kᵀ" if name == "W_QK" else name}))
    shown = [("W_Q W_Kᵀ" if name == "W_QK" else name) for name in names]
    matrix = t("chart.decoder.matrix", lang)
    chart = alt.Chart(pd.concat(frames)).mark_line(strokeWidth=3 if slide else 1.5).encode(
        x=alt.X("index:Q", title=t("chart.decoder.index", lang)),
        y=alt.Y("sigma:Q", title=t("chart.decoder.sigma", lang), scale=alt.Scale(type="log")),
        color=alt.Color("matrix:N", title=matrix, sort=shown, scale=alt.Scale(scheme="dark2"),
                        legend=_bottom_legend(5)),
        tooltip=[alt.Tooltip("matrix:N", title=matrix), alt.Tooltip("index:Q", title=t("chart.decoder.index", lang)),
                 alt.Tooltip("sigma:Q", title=t("chart.decoder.sigma", lang), format=".3g")],
    ).properties(title=chart_title(title, slide=slide), width=420, height=220)
    return style_chart(chart, slide)


__all__ = ["asymmetry_pair_chart", "js_heatmap", "linear_timing_chart", "linear_weights_chart", "mask_chart",
           "norm_gap_chart", "qk_scatter_chart", "rope_offset_chart", "rope_wavelength_chart", "singular_values_chart",
           "sink_mass_chart", "sink_share_chart", "window_timing_chart"]
