"""The Heads page's result sections, drawn in two steps (issue 44: the page took 35–101 s on a bundled decoder
before anything showed): :func:`draw_first_look` draws what the report's plain forwards give
(:func:`inspector.analyses.heads.head_first_look`: the grid by entropy, sinks or induction, where the attention goes,
the redundancy maps) and leaves a placeholder for each section the ablations and gradients add; :func:`fill_report`
fills them from the full report (the grid by any measure with its click and exports, the health report, the
redundant pairs, the pruning curve, the JSON download). The first look's numbers are the report's own, so what
it drew stays."""

from __future__ import annotations

import json
from dataclasses import dataclass

import streamlit as st

from inspector.analyses.divergence import JS_MAX
from inspector.analyses.heads import HeadReport, report_json
from inspector.analyses.metrics import TOKEN_CATEGORIES
from inspector.base.i18n import t
from inspector.charts.base import HEAD_SELECTION, selected_head
from inspector.charts.heads import head_grid_chart, head_matrix_chart, mds_chart, pruning_chart
from inspector.charts.sentences.heads import health_report, left_out_columns, measure_words
from inspector.output.export import Provenance, screen_title
from inspector.output.share import escape_markdown
from views.export_buttons import export_buttons

GRID_METRICS = ("entropy", "sink", "induction", "ablation", "gradient")  # labels: catalogue keys heads.grid.*
IMPORTANCE_METRICS = ("ablation", "gradient")  # what only the full report has


@dataclass(frozen=True)
class ReportSlots:
    """Where :func:`fill_report` draws: the grid's measure control, the grid (and its exports), the health
    report, the pairs table and the pruning curve; ``metric``: the grid's measure the reader chose."""

    control: object
    grid: object
    health: object
    pairs: object
    pruning: object
    metric: str

    def clear(self) -> None:
        """Empty every placeholder that says the report is on its way (it failed); the first look's grid stays."""
        for slot in (self.health, self.pairs, self.pruning):
            slot.empty()
        if self.metric in IMPORTANCE_METRICS:
            self.grid.empty()


def open_in_inspect() -> None:
    """Grid click → remember the head; the page's script switches page (switch_page is not allowed in callbacks)."""
    picked = selected_head(st.session_state["heads_grid"].selection)
    if picked is not None:
        st.session_state["_heads_open"] = picked


def _provenance(report: HeadReport, texts: tuple[str, ...], model: str, lang: str) -> Provenance:
    return Provenance(model=model, backend=report.backend,
                      text=texts[0] if len(texts) == 1 else t("chart.heads.corpus_text", lang, n=len(texts)))


def draw_first_look(first: HeadReport, texts: tuple[str, ...], model: str, lang: str, slide: bool,
                    selected: tuple[int, int]) -> ReportSlots:
    """The sections the first look holds, and a placeholder for each of the others (see the module docstring)."""
    st.subheader(t("heads.glance", lang))
    # The measure's control is greyed out until the report is done: a click reruns the page, and a rerun while the
    # report runs would start it again from nothing (Streamlit's cache holds only finished calls).
    metric = st.session_state.get("heads_metric") or "entropy"
    control = st.empty()
    _metric_control(control, lang, metric=metric)
    grid = st.empty()
    with grid.container():
        if metric in IMPORTANCE_METRICS:
            st.info(t("heads.importance_pending", lang), icon=":material/hourglass_top:")
        else:  # no click and no exports yet: both need the full report's grid
            st.altair_chart(screen_title(head_grid_chart(first, metric, selected=selected, slide=slide, lang=lang)))
    st.subheader(t("heads.health", lang))
    health = st.empty()
    health.info(t("heads.importance_pending", lang), icon=":material/hourglass_top:")
    _where_it_looks(first, lang)
    exported = _provenance(first, texts, model, lang)
    st.subheader(t("heads.redundancy", lang))
    stats = first.statistics
    js_tab, cka_tab, map_tab = st.tabs([t("heads.tab_js", lang), t("heads.tab_cka", lang), t("heads.tab_mds", lang)])
    maps = {"js": head_matrix_chart(first, stats.js_divergence, title=t("chart.heads.js_title", lang),
                                    legend=t("chart.heads.js_legend", lang), domain=(0.0, JS_MAX), slide=slide,
                                    lang=lang),
            "cka": head_matrix_chart(first, stats.contribution_cka, title=t("chart.heads.cka_title", lang),
                                     legend=t("chart.heads.cka_legend", lang), domain=(0.0, 1.0), scheme="magma",
                                     slide=slide, lang=lang),
            "mds": mds_chart(first, slide=slide, lang=lang)}
    for tab, (name, figure) in zip((js_tab, cka_tab, map_tab), maps.items()):
        with tab:
            st.altair_chart(screen_title(figure))
            export_buttons(f"heads-{name}", figure, exported, lang, f"heads_{name}_export")
    pairs = st.empty()
    pairs.info(t("heads.importance_pending", lang), icon=":material/hourglass_top:")
    st.subheader(t("heads.pruning", lang))
    pruning = st.empty()
    pruning.info(t("heads.importance_pending", lang), icon=":material/hourglass_top:")
    return ReportSlots(control=control, grid=grid, health=health, pairs=pairs, pruning=pruning, metric=metric)


def _metric_control(place, lang: str, *, metric: str | None = None) -> str:
    """The grid's measure, in ``place``: greyed out showing ``metric`` while the report runs, else the live
    control (the widget key ``heads_metric``)."""
    words = {"format_func": lambda name: t(f"heads.grid.{name}", lang)}
    if metric is not None:
        place.segmented_control(t("heads.colour_by", lang), GRID_METRICS, default=metric, disabled=True, **words)
        return metric
    return place.segmented_control(t("heads.colour_by", lang), GRID_METRICS, key="heads_metric", default="entropy",
                                   **words) or "entropy"


def _where_it_looks(report: HeadReport, lang: str) -> None:
    st.subheader(t("heads.where", lang))
    stats = report.statistics

    def category_name(category: str) -> str:
        """A token category as a column label: the special ones by the model's own tokens, the others words."""
        return t(f"heads.column.{category}", lang) if category.isalpha() else report.category_name(category)

    # A column that must be 0 on this model (a special category its tokenizer never added, "next" under a causal
    # mask) is left out and the caption says why (issue 44).
    table = {t("heads.column.head", lang): [report.head_name(i) for i in range(stats.entropy.size)]}
    for index, category in enumerate(TOKEN_CATEGORIES):
        if report.category_shown(category):
            table[f"→ {category_name(category)}"] = stats.token_mass[..., index].ravel()
    for index, category in enumerate(TOKEN_CATEGORIES[:2]):
        if report.category_shown(category):
            table[f"‖αf(x)‖ → {category_name(category)}"] = stats.norm_token_mass[..., index].ravel()
    table[t("heads.column.first_sink", lang)] = stats.first_token_sink.ravel()
    table[t("heads.column.distance", lang)] = stats.mean_distance.ravel()
    st.dataframe(table, hide_index=True, height=260,
                 column_config={name: st.column_config.NumberColumn(format="%.3f") for name in list(table)[1:]})
    st.caption(t("heads.where_caption", lang))
    left_out = left_out_columns(report, lang)
    if left_out:
        st.caption(left_out)


def _show_every_listed_head(report: HeadReport, lang: str) -> None:
    """The heads the health report cut short ("… and 54 more."), in an expander under it."""
    shown = set(health_report(report, lang))
    rest = [line for line in health_report(report, lang, per_kind=None) if line not in shown]
    if rest:
        with st.expander(t("heads.more_lines", lang, count=len(rest))):
            st.markdown("\n".join(f"- {escape_markdown(line)}" for line in rest))


def fill_report(slots: ReportSlots, report: HeadReport, texts: tuple[str, ...], model: str, lang: str, slide: bool,
                selected: tuple[int, int]) -> None:
    """The full report's sections, into the placeholders :func:`draw_first_look` left."""
    exported = _provenance(report, texts, model, lang)
    measure = measure_words(report, lang)
    metric = _metric_control(slots.control, lang)
    with slots.grid.container():
        grid = head_grid_chart(report, metric, selected=selected, slide=slide, lang=lang)
        st.altair_chart(screen_title(grid), on_select=open_in_inspect, selection_mode=HEAD_SELECTION,
                        key="heads_grid")
        export_buttons(f"heads-grid-{metric}", grid, exported, lang, "heads_grid_export")
        st.caption(t("heads.grid_caption", lang, measure=measure, mode=t(f"heads.mode.{report.ablation_mode}", lang)))
    with slots.health.container():
        st.markdown("\n".join(f"- {escape_markdown(line)}" for line in health_report(report, lang)))
        _show_every_listed_head(report, lang)
    pairs = report.pairs
    pair_columns = [t(f"heads.pairs.{name}", lang) for name in ("js", "first", "second", "both")]
    with slots.pairs.container():
        st.dataframe({t("heads.pairs.pair", lang): [" & ".join(report.head_name(h) for h in pair)
                                                    for pair in pairs.heads],
                      **dict(zip(pair_columns, (pairs.js_divergence, pairs.change_first, pairs.change_second,
                                                pairs.change_both)))}, hide_index=True,
                     column_config={name: st.column_config.NumberColumn(format="%.4f") for name in pair_columns})
        st.caption(t("heads.pairs_caption", lang, measure=measure))
    with slots.pruning.container():
        pruning = pruning_chart(report, slide=slide, lang=lang)
        st.altair_chart(screen_title(pruning))
        export_buttons("pruning-curve", pruning, exported, lang, "heads_pruning_export")
        st.download_button(t("heads.download_json", lang),
                           lambda: json.dumps(report_json(report, health_report(report, lang)), allow_nan=False),
                           file_name="head-report.json", mime="application/json", key="heads_json",
                           icon=":material/download:", on_click="ignore")
