"""Altair charts for the Lessons page, over the finished numbers of :mod:`inspector.analyses.lessons` (nothing here
computes
an analysis). Same conventions as :mod:`inspector.charts`: token strings reach Vega only as data, tokens are
labelled ``"position: token"``, ``slide=True`` enlarges type through :func:`inspector.charts.style_chart` as the
last step. Titles come from the caller (already in the page's language); every other text a reader sees (axis,
legend and tooltip titles, the paths' names) is written in ``lang`` from the catalogue, and symbols (d, n, i − j)
stay symbols.
"""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

from inspector.analyses.lessons import (
    SCALE_NAMES,
    ComplexityLesson,
    HeadDimLesson,
    MultiHeadLesson,
    PositionCodesLesson,
    PositionLesson,
    ScalingSweep,
    WhyQKLesson,
)
from inspector.base.i18n import DEFAULT_LANGUAGE, t
from inspector.charts.base import (
    DARK2,
    FULL_WIDTH_PX,
    HALF_COLUMN_PX,
    SET2,
    chart_title,
    head_axis,
    keyed_colours,
    largest_weight,
    may_thin,
    style_chart,
    thinned_note,
    token_axis,
    token_labels,
    weight_scale,
)

# The lesson heatmaps draw at most this many rows and columns: a longer text's weights are pooled into blocks (the
# mean of each block), so a 512-token text ships 128² cells per panel to the browser instead of 512² (issue 33: the
# page took 114 s to render at 512 tokens while the server spent 8 CPU-seconds).
MAX_HEATMAP_SIDE = 128
# Offsets drawn in the position chart: |i − j| up to this (longer offsets have few pairs and say little).
OFFSET_SPAN = 8
# The complexity chart's flash path, as :func:`inspector.analyses.lessons.complexity_lesson` names it → its catalogue
# key.
_ROLE_ORDER = ("offset", "special", "content")  # lesson 5's head roles, in their colours' order
_FLASH_PATH_KEYS = {"Triton FlashAttention": "backend.triton",
                    "blocked PyTorch (query blocks)": "chart.lessons.blocked"}


def heatmap_legend(slide: bool = False) -> alt.Legend:
    """The colour legend of every Lessons heatmap: a horizontal gradient under the plot, at its left edge. Beside the
    plot (Vega's default) it is the first thing cut off when a long text makes the heatmap wider than the page's
    column, and a heatmap without its scale cannot be read (issue 30)."""
    return alt.Legend(orient="bottom", direction="horizontal", gradientLength=200 if slide else 160,
                      titleOrient="left", titleAnchor="start")


def _weight_tooltips(lang: str) -> list[alt.Tooltip]:
    """A heatmap cell's query, key and weight, titled in ``lang``."""
    return [alt.Tooltip("query:N", title=t("lesson1.col_query", lang)),
            alt.Tooltip("key:N", title=t("chart.lessons.key", lang)),
            alt.Tooltip("weight:Q", title=t("chart.lessons.weight", lang), format=".3f")]


def pooled(weights: np.ndarray, tokens: tuple[str, ...], lang: str = DEFAULT_LANGUAGE,
           max_side: int = MAX_HEATMAP_SIDE) -> tuple[np.ndarray, list[str], list[str]]:
    """(weights, labels, notes) to draw: ``weights`` (n, n) as they are when n ≤ ``max_side``; else the mean of each
    block of ⌈n / max_side⌉ consecutive queries × keys — at most ``max_side`` per side — each labelled
    ``"start–end: first token"``, with a note saying so."""
    n = len(tokens)
    labels = token_labels(tokens)
    if n <= max_side:
        return np.asarray(weights, dtype=float), labels, []
    block = -(-n // max_side)
    starts = list(range(0, n, block))
    sums = np.add.reduceat(np.add.reduceat(np.asarray(weights, dtype=float), starts, axis=0), starts, axis=1)
    sizes = np.diff([*starts, n])
    means = sums / np.outer(sizes, sizes)
    names = [f"{start}–{start + size - 1}: {tokens[start]}" for start, size in zip(starts, sizes)]
    return means, names, [t("chart.lessons.pooled", lang, n=n, block=block)]


def weights_chart(weights: np.ndarray, tokens: tuple[str, ...], *, title: str, slide: bool = False,
                  lang: str = DEFAULT_LANGUAGE, keep: tuple[int, ...] = ()) -> alt.Chart:
    """One head's weights (q_len, q_len) as a heatmap: row = query, column = key (pooled into blocks past
    :data:`MAX_HEATMAP_SIDE` tokens, :func:`pooled`). ``keep``: token positions the lesson is about, labelled
    first when the axes thin (their blocks when pooled)."""
    block = -(-len(tokens) // MAX_HEATMAP_SIDE) if len(tokens) > MAX_HEATMAP_SIDE else 1
    keep = tuple(position // block for position in keep)
    weights, labels, pooled_notes = pooled(weights, tokens, lang)
    rows, cols = np.meshgrid(np.arange(len(labels)), np.arange(len(labels)), indexing="ij")
    data = pd.DataFrame({"query": np.asarray(labels, dtype=object)[rows.ravel()],
                         "key": np.asarray(labels, dtype=object)[cols.ravel()],
                         "weight": np.asarray(weights, dtype=float).ravel()})
    cell = int(np.clip(420 // max(len(labels), 1), 4, 28))
    notes = [thinned_note(lang)] if may_thin(labels, FULL_WIDTH_PX - 120, slide) or cell < 14 else []
    notes += pooled_notes
    chart = alt.Chart(data).mark_rect().encode(
        x=alt.X("key:O", sort=labels, title=t("chart.lessons.key", lang),
                axis=token_axis(labels, horizontal=True, slide=slide, keep=keep[::-1])),
        y=alt.Y("query:O", sort=labels, title=t("lesson1.col_query", lang),
                axis=token_axis(labels, horizontal=False, step_px=cell, slide=slide, keep=keep)),
        color=alt.Color("weight:Q", title=t("chart.lessons.weight", lang),
                        scale=weight_scale(slide, largest_weight(weights)), legend=heatmap_legend(slide)),
        tooltip=_weight_tooltips(lang),
    ).properties(width=alt.Step(cell), height=alt.Step(cell), title=chart_title(title, notes, slide=slide))
    return style_chart(chart, slide)


def tied_weights_chart(lesson: WhyQKLesson, tokens: tuple[str, ...], *, title: str,
                       slide: bool = False, lang: str = DEFAULT_LANGUAGE) -> alt.FacetChart:
    """The head's weights with its own W_K and with W_K := W_Q, side by side (pooled into blocks past
    :data:`MAX_HEATMAP_SIDE` tokens, :func:`pooled`)."""
    own, labels, pooled_notes = pooled(lesson.weights, tokens, lang)
    tied, _, _ = pooled(lesson.tied_weights, tokens, lang)
    rows, cols = np.meshgrid(np.arange(len(labels)), np.arange(len(labels)), indexing="ij")
    frames = []
    for name, weights in (("W_K", own), ("W_K := W_Q", tied)):
        frames.append(pd.DataFrame({"keys": name, "query": np.asarray(labels, dtype=object)[rows.ravel()],
                                    "key": np.asarray(labels, dtype=object)[cols.ravel()],
                                    "weight": np.asarray(weights, dtype=float).ravel()}))
    # Two panels and one set of row labels in the main column at a 1000 px window (a facet keeps its own width).
    cell = int(np.clip((FULL_WIDTH_PX - 150) // (2 * max(len(labels), 1)), 3, 20))
    notes = ([thinned_note(lang)] if cell < 15 else []) + pooled_notes
    panel = alt.Chart().mark_rect().encode(
        x=alt.X("key:O", sort=labels, title=t("chart.lessons.key", lang),
                axis=token_axis(labels, horizontal=True, step_px=cell, slide=slide)),
        y=alt.Y("query:O", sort=labels, title=t("lesson1.col_query", lang),
                axis=token_axis(labels, horizontal=False, step_px=cell, slide=slide)),
        color=alt.Color("weight:Q", title=t("chart.lessons.weight", lang),
                        scale=weight_scale(slide, largest_weight(own, tied)),
                        legend=heatmap_legend(slide)),
        tooltip=[alt.Tooltip("keys:N", title=t("chart.lessons.keys", lang)), *_weight_tooltips(lang)],
    ).properties(width=alt.Step(cell), height=alt.Step(cell))
    chart = panel.facet(data=pd.concat(frames, ignore_index=True), column=alt.Column("keys:N", title=None,
                                                                                     sort=["W_K", "W_K := W_Q"]))
    return style_chart(chart.properties(title=chart_title(title, notes, slide=slide)), slide)


def asymmetry_chart(lesson: WhyQKLesson, *, title: str, slide: bool = False,
                    lang: str = DEFAULT_LANGUAGE) -> alt.Chart:
    """‖S − Sᵀ‖/‖S‖ per head (bars), the chosen head darker."""
    data = pd.DataFrame({"head": np.arange(len(lesson.asymmetry)), "asymmetry": lesson.asymmetry.astype(float),
                         "chosen": np.arange(len(lesson.asymmetry)) == lesson.head})
    chart = alt.Chart(data).mark_bar().encode(
        x=alt.X("head:O", title=t("heads.column.head", lang), axis=head_axis(len(data), slide=slide)),
        y=alt.Y("asymmetry:Q", title="‖S − Sᵀ‖ / ‖S‖"),
        color=alt.condition(alt.datum.chosen, alt.value("#08519c"), alt.value("#9ecae1")),
        tooltip=[alt.Tooltip("head:O", title=t("heads.column.head", lang)),
                 alt.Tooltip("asymmetry:Q", title=t("chart.lessons.asymmetry", lang), format=".3f")],
    ).properties(title=chart_title(title, slide=slide), width=alt.Step(36 if slide else 24), height=220)
    return style_chart(chart, slide)


def offset_chart(lesson: PositionLesson, *, title: str, slide: bool = False,
                 lang: str = DEFAULT_LANGUAGE) -> alt.Chart:
    """Mean weight by offset i − j (|i − j| ≤ :data:`OFFSET_SPAN`) for every head of the layer."""
    keep = np.abs(lesson.offsets) <= OFFSET_SPAN
    heads, offsets = np.meshgrid(np.arange(len(lesson.by_offset)), lesson.offsets[keep], indexing="ij")
    data = pd.DataFrame({"head": heads.ravel(), "offset": offsets.ravel(),
                         "weight": lesson.by_offset[:, keep].astype(float).ravel()})
    step = 34 if slide else 22
    chart = alt.Chart(data).mark_rect().encode(
        x=alt.X("offset:O", title="i − j", axis=alt.Axis(labelAngle=0)),
        y=alt.Y("head:O", title=t("heads.column.head", lang)),
        color=alt.Color("weight:Q", title=t("chart.lessons.mean_weight", lang), scale=weight_scale(slide),
                        legend=heatmap_legend(slide)),
        tooltip=[alt.Tooltip("head:O", title=t("heads.column.head", lang)),
                 alt.Tooltip("offset:O", title=t("chart.lessons.offset", lang)),
                 alt.Tooltip("weight:Q", title=t("chart.lessons.weight", lang), format=".3f")],
    ).properties(title=chart_title(title, slide=slide), width=alt.Step(step), height=alt.Step(step))
    return style_chart(chart, slide)


def sweep_chart(sweep: ScalingSweep, *, title: str, slide: bool = False, lang: str = DEFAULT_LANGUAGE) -> alt.Chart:
    """Mean entropy against d (log scale) for each scale of the simulation, with log(keys) as a rule."""
    frames = [pd.DataFrame({"d": sweep.dims, "scale": name, "entropy": sweep.entropy[i].astype(float),
                            "max weight": sweep.max_weight[i].astype(float)})
              for i, name in enumerate(SCALE_NAMES)]
    data = pd.concat(frames, ignore_index=True)
    lines = alt.Chart(data).mark_line(point=True, strokeWidth=4 if slide else 2).encode(
        x=alt.X("d:Q", scale=alt.Scale(type="log", base=2)),
        y=alt.Y("entropy:Q", title=t("lesson4.table_entropy_nats", lang)),
        # Under the plot: the chart shares a row with another, and a legend beside it would squeeze the plot.
        color=alt.Color("scale:N", title=t("lesson4.table_scale", lang), sort=list(SCALE_NAMES),
                        scale=alt.Scale(scheme="dark2"),
                        legend=alt.Legend(orient="bottom", columns=2, labelLimit=HALF_COLUMN_PX // 2)),
        tooltip=["d:Q", alt.Tooltip("scale:N", title=t("lesson4.table_scale", lang)),
                 alt.Tooltip("entropy:Q", title=t("chart.lessons.entropy", lang), format=".3f"),
                 alt.Tooltip("max weight:Q", title=t("chart.lessons.max_weight", lang), format=".3f")])
    uniform = alt.Chart(pd.DataFrame({"uniform": [float(np.log(sweep.keys))]})).mark_rule(strokeDash=[4, 4]).encode(
        y="uniform:Q")
    chart = alt.layer(lines, uniform).properties(title=chart_title(title, width=HALF_COLUMN_PX, slide=slide), width=420,
                                                 height=260)
    return style_chart(chart, slide)


def variance_chart(sweep: ScalingSweep, *, title: str, slide: bool = False,
                   lang: str = DEFAULT_LANGUAGE) -> alt.Chart:
    """Variance of q·k against d, both on log axes: a slope-1 line means variance ∝ d."""
    data = pd.DataFrame({"d": sweep.dims, "variance": sweep.score_variance.astype(float)})
    chart = alt.Chart(data).mark_line(point=True, strokeWidth=4 if slide else 2).encode(
        x=alt.X("d:Q", scale=alt.Scale(type="log", base=2)),
        y=alt.Y("variance:Q", title="Var(q·k)", scale=alt.Scale(type="log", base=2)),
        tooltip=["d:Q", alt.Tooltip("variance:Q", title=t("chart.lessons.variance", lang), format=".1f")],
    ).properties(title=chart_title(title, width=HALF_COLUMN_PX, slide=slide), width=320, height=260)
    return style_chart(chart, slide)


def contribution_chart(lesson: MultiHeadLesson, role_names: dict[str, str], *, title: str,
                       slide: bool = False, lang: str = DEFAULT_LANGUAGE) -> alt.Chart:
    """Each head's mean contribution norm after W_O, coloured by what it specialises in (``role_names``: each
    role's name in ``lang``, as the legend shows it)."""
    present = [role for role in _ROLE_ORDER if role in lesson.role]
    roles = [role_names[role] for role in present]
    data = pd.DataFrame({"head": np.arange(lesson.num_heads), "norm": lesson.contribution_norm.astype(float),
                         "share": lesson.contribution_share.astype(float),
                         "role": [role_names[r] for r in lesson.role],
                         "rank(S)": lesson.scores_rank.astype(int),
                         "erank(S)": lesson.scores_effective_rank.astype(float)})
    chart = alt.Chart(data).mark_bar().encode(
        x=alt.X("head:O", title=t("heads.column.head", lang), axis=head_axis(len(data), slide=slide)),
        y=alt.Y("norm:Q", title="‖o_h W_O^h‖"),
        # A role keeps its colour in every language (the translated names sort differently).
        color=alt.Color("role:N", title=t("chart.lessons.role", lang), sort=roles,
                        scale=alt.Scale(domain=roles, range=[SET2[_ROLE_ORDER.index(r)] for r in present])),
        tooltip=[alt.Tooltip("head:O", title=t("heads.column.head", lang)),
                 alt.Tooltip("role:N", title=t("chart.lessons.role", lang)),
                 alt.Tooltip("norm:Q", title=t("chart.lessons.norm", lang), format=".3f"),
                 alt.Tooltip("share:Q", title=t("chart.lessons.share", lang), format=".1%"),
                 alt.Tooltip("rank(S):Q", title=t("chart.lessons.rank", lang)),
                 alt.Tooltip("erank(S):Q", title=t("chart.lessons.effective_rank", lang), format=".2f")],
    ).properties(title=chart_title(title, slide=slide), width=alt.Step(36 if slide else 24), height=220)
    return style_chart(chart, slide)


def complexity_chart(lesson: ComplexityLesson, *, title: str, slide: bool = False,
                     lang: str = DEFAULT_LANGUAGE) -> alt.Chart:
    """Milliseconds against n, log–log, for the materialised and the flash path."""
    # A backend this chart does not know keeps the name the lesson gave it.
    flash_key = _FLASH_PATH_KEYS.get(lesson.flash_backend)
    flash = t(flash_key, lang) if flash_key else lesson.flash_backend
    data = pd.concat([pd.DataFrame({"n": lesson.lengths, "path": t("chart.lessons.materialised", lang),
                                    "ms": lesson.materialised_ms}),
                      pd.DataFrame({"n": lesson.lengths, "path": flash, "ms": lesson.flash_ms})],
                     ignore_index=True)
    path, ms = t("chart.lessons.path", lang), t("chart.lessons.ms", lang)
    paths = [t("chart.lessons.materialised", lang), flash]
    chart = alt.Chart(data).mark_line(point=True, strokeWidth=4 if slide else 2).encode(
        x=alt.X("n:Q", scale=alt.Scale(type="log", base=2)), y=alt.Y("ms:Q", title=ms, scale=alt.Scale(type="log")),
        # Under the plot, whole ("blocked PyTorch (query …" was cut at the default limit), in a fixed order.
        color=alt.Color("path:N", title=path, sort=paths, scale=keyed_colours(paths, DARK2),
                        legend=alt.Legend(orient="bottom", direction="vertical", labelLimit=FULL_WIDTH_PX)),
        tooltip=["n:Q", alt.Tooltip("path:N", title=path), alt.Tooltip("ms:Q", title=ms, format=".2f")],
    ).properties(title=chart_title(title, slide=slide), width=420, height=260)
    return style_chart(chart, slide)


def growth_chart(lesson: ComplexityLesson, *, title: str, slide: bool = False,
                 lang: str = DEFAULT_LANGUAGE) -> alt.Chart:
    """Each measure of lesson 7 divided by its value at the shortest n, against n, log–log: the counted bytes of the
    n×n weights and the counted FLOPs (slope 2 exactly), the materialised path's median time (a busy machine bends
    it), and (n / n₀)² as the reference line."""
    base = lesson.lengths / lesson.lengths[0]
    series = [("chart.lessons.growth_square", base ** 2),
              ("chart.lessons.growth_bytes", lesson.weight_bytes / lesson.weight_bytes[0]),
              ("chart.lessons.growth_flops", lesson.flops / lesson.flops[0]),
              ("chart.lessons.growth_time", lesson.materialised_ms / lesson.materialised_ms[0])]
    names = [t(key, lang) for key, _ in series]
    data = pd.concat([pd.DataFrame({"n": lesson.lengths, "measure": name, "ratio": values})
                      for name, (_, values) in zip(names, series)], ignore_index=True)
    measure, ratio = t("chart.lessons.measure", lang), t("chart.lessons.ratio", lang)
    chart = alt.Chart(data).mark_line(point=True, strokeWidth=4 if slide else 2).encode(
        x=alt.X("n:Q", scale=alt.Scale(type="log", base=2)),
        y=alt.Y("ratio:Q", title=ratio, scale=alt.Scale(type="log")),
        color=alt.Color("measure:N", title=measure, sort=names, scale=keyed_colours(names, DARK2),
                        legend=alt.Legend(orient="bottom", direction="vertical", labelLimit=FULL_WIDTH_PX)),
        strokeDash=alt.condition(alt.datum.measure == names[0], alt.value([6, 4]), alt.value([1, 0])),
        tooltip=["n:Q", alt.Tooltip("measure:N", title=measure), alt.Tooltip("ratio:Q", title=ratio, format=".3g")],
    ).properties(title=chart_title(title, slide=slide), width=420, height=260)
    return style_chart(chart, slide)


def bottleneck_chart(lesson: HeadDimLesson, *, title: str, slide: bool = False,
                     lang: str = DEFAULT_LANGUAGE) -> alt.Chart:
    """Lesson 18's simulation: the best mean KL (nats) against d_k, log-scaled d_k."""
    data = pd.DataFrame({"d_k": lesson.dims, "KL": lesson.simulated_kl})
    chart = alt.Chart(data).mark_line(point=True, strokeWidth=4 if slide else 2).encode(
        x=alt.X("d_k:Q", scale=alt.Scale(type="log", base=2)),
        y=alt.Y("KL:Q", title=t("chart.lessons.kl_nats", lang)),
        tooltip=["d_k:Q", alt.Tooltip("KL:Q", title=t("chart.lessons.kl_nats", lang), format=".4f")],
    ).properties(title=chart_title(title, width=HALF_COLUMN_PX, slide=slide), width=HALF_COLUMN_PX, height=220)
    return style_chart(chart, slide)


def rank_cut_chart(lesson: HeadDimLesson, *, title: str, slide: bool = False,
                   lang: str = DEFAULT_LANGUAGE) -> alt.Chart:
    """Lesson 18 on the chosen head: KL (nats) of its weights with its scores cut to rank r, against r."""
    data = pd.DataFrame({"r": lesson.ranks, "KL": lesson.head_kl})
    chart = alt.Chart(data).mark_line(point=True, strokeWidth=4 if slide else 2).encode(
        x=alt.X("r:Q", title=t("chart.lessons.rank_kept", lang), scale=alt.Scale(domainMin=1)),
        y=alt.Y("KL:Q", title=t("chart.lessons.kl_nats", lang)),
        tooltip=[alt.Tooltip("r:Q", title=t("chart.lessons.rank_kept", lang)),
                 alt.Tooltip("KL:Q", title=t("chart.lessons.kl_nats", lang), format=".4f")],
    ).properties(title=chart_title(title, width=HALF_COLUMN_PX, slide=slide), width=HALF_COLUMN_PX, height=220)
    return style_chart(chart, slide)


def position_codes_chart(lesson: PositionCodesLesson, names: dict[str, str], *, title: str, slide: bool = False,
                         lang: str = DEFAULT_LANGUAGE) -> alt.Chart:
    """Lesson 19: mean cosine similarity of the codes of p and p + Δ against Δ, one line per code; ``names``: each
    code's name in ``lang``, by ``sinusoidal``, ``learned`` and ``rope`` (a missing learned table draws no line)."""
    series = [("sinusoidal", lesson.sinusoidal), ("learned", lesson.learned), ("rope", lesson.rope)]
    shown = [names[code] for code, values in series if values is not None]
    data = pd.concat([pd.DataFrame({"Δ": lesson.offsets, "code": names[code], "cos": values})
                      for code, values in series if values is not None], ignore_index=True)
    code, cosine = t("lesson19.col_code", lang), t("chart.lessons.cosine", lang)
    chart = alt.Chart(data).mark_line(strokeWidth=4 if slide else 2).encode(
        x=alt.X("Δ:Q", title=t("chart.lessons.offset", lang) + " Δ"), y=alt.Y("cos:Q", title=cosine),
        color=alt.Color("code:N", title=code, sort=shown, scale=keyed_colours(shown, DARK2),
                        legend=alt.Legend(orient="bottom", direction="vertical", labelLimit=FULL_WIDTH_PX)),
        tooltip=["Δ:Q", alt.Tooltip("code:N", title=code), alt.Tooltip("cos:Q", title=cosine, format=".3f")],
    ).properties(title=chart_title(title, slide=slide), width=420, height=240)
    return style_chart(chart, slide)


__all__ = ["asymmetry_chart", "bottleneck_chart", "complexity_chart", "contribution_chart", "growth_chart",
           "offset_chart", "position_codes_chart", "rank_cut_chart", "sweep_chart", "tied_weights_chart",
           "variance_chart", "weights_chart"]
