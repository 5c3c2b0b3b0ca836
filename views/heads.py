"""Heads: an entropy health report, attention sinks and special tokens, head redundancy, head importance and a
pruning curve — each statistic next to what ablating the heads does to the model's output.

Widgets → one cached library call (:func:`inspector.analyses.heads.head_report`, the same call as
``python -m inspector heads``) → charts and a plain-words report. Clicking a head opens it on the Inspect page.
"""

from __future__ import annotations

import json
import time
from dataclasses import replace

import streamlit as st

from inspector import InspectorError
from inspector.analyses.divergence import JS_MAX
from inspector.analyses.head_progress import ReportProgress
from inspector.analyses.heads import (
    HeadReport,
    head_report,
    read_corpus,
    report_json,
    with_thresholds,
)
from inspector.analyses.metrics import TOKEN_CATEGORIES, HealthThresholds
from inspector.base.errors import error_text
from inspector.base.i18n import t
from inspector.charts.base import HEAD_SELECTION, selected_head
from inspector.charts.heads import head_grid_chart, head_matrix_chart, mds_chart, pruning_chart
from inspector.charts.sentences.heads import health_report, measure_words
from inspector.output.export import Provenance, screen_title
from inspector.output.share import escape_markdown
from views import session, share_state, sidebar
from views.census_folder import CENSUS_MODE, show_census
from views.export_buttons import export_buttons
from views.heads_roles import link_params, show_roles
from views.progress_bar import progress_bar

GRID_METRICS = ("entropy", "sink", "induction", "ablation", "gradient")  # labels: catalogue keys heads.grid.*


# Reports are small (NumPy arrays of heads × heads at most, plus per-text sink scores). The thresholds are not
# part of the key: they only relabel heads (with_thresholds), so moving a threshold never reruns the model.
@st.cache_data(max_entries=8, ttl=3600, show_spinner=False)
def cached_report(spec: str, texts: tuple[str, ...], backend: str, ablation: str, _lang: str) -> HeadReport:
    # The bar is made here, not passed in: Streamlit replays a cached function's elements on a hit, and can only
    # replay those whose container the function itself created. The language only words the bar (so it is not
    # part of the key: switching language never reruns the model).
    with progress_bar(t("heads.progress_start", _lang, n=len(texts))) as bar:
        started = time.perf_counter()

        def show(done: int, total: int, note: str) -> None:
            now = ReportProgress(done=done, total=total, texts=len(texts), elapsed=time.perf_counter() - started)
            st.session_state["_heads_progress"] = now.texts_done  # what the Stop button reports
            bar(done, total, t("heads.corpus_progress", _lang, **now.label_values()))

        return head_report(session.cached_model(spec), texts, backend=backend, ablation=ablation, progress=show)


def stop_corpus_run(request: tuple, texts: int) -> None:
    """Stop button → remember which request was stopped and how far it got. The click's rerun interrupts the
    running report; this flag keeps the rerun from starting it again."""
    st.session_state["_heads_stopped"] = {"request": request, "done": st.session_state.get("_heads_progress", 0),
                                          "texts": texts}


def run_again() -> None:
    st.session_state.pop("_heads_stopped", None)


def open_in_inspect() -> None:
    """Grid click → remember the head; the script body switches page (switch_page is not allowed in callbacks)."""
    picked = selected_head(st.session_state["heads_grid"].selection)
    if picked is not None:
        st.session_state["_heads_open"] = picked


if "_heads_open" in st.session_state:
    share_state.keep_across_pages()
    st.session_state["layer"], st.session_state["head"] = st.session_state.pop("_heads_open")
    st.switch_page("views/inspect.py")

heading = st.container()  # the title is in the sidebar's language, known only once the sidebar is drawn
chosen, status, loaded = sidebar.open_page()
lang = chosen.state.lang
heading.title(t("heads.title", lang))
heading.caption(t("heads.caption", lang))
info = loaded.info

mode_column, ablation_column = st.columns(2)
try:
    corpus = tuple(read_corpus())
except InspectorError as err:
    corpus = ()
    st.warning(error_text(err, lang))
hosted = session.hosting_policy().hosted
mode_labels = {"text": t("heads.mode_text", lang), "corpus": t("heads.mode_corpus", lang, n=len(corpus))}
if not hosted:  # a visitor must not make the server read its paths
    mode_labels[CENSUS_MODE] = t("heads.mode_census", lang)
mode = mode_column.radio(t("heads.texts", lang), list(mode_labels), format_func=mode_labels.__getitem__,
                         key="heads_mode", horizontal=True, disabled=not corpus, help=t("heads.texts_help", lang))
ablation = ablation_column.radio(t("heads.ablation", lang), ["zero", "mean"], key="heads_ablation",
                                 format_func=lambda mode: t(f"heads.mode.{mode}", lang), horizontal=True,
                                 help=t("heads.ablation_help", lang))
with st.expander(t("heads.thresholds", lang)):
    columns = st.columns(3)
    collapsed = columns[0].number_input(t("heads.collapsed_below", lang), 0.0, 1.0, 0.1, 0.01, key="heads_collapsed",
                                        help=t("heads.collapsed_help", lang))
    diffuse = columns[1].number_input(t("heads.diffuse_above", lang), 0.0, 1.0, 0.9, 0.01, key="heads_diffuse",
                                      help=t("heads.diffuse_help", lang))
    sink = columns[2].number_input(t("heads.sink_above", lang), 0.01, 1.0, 0.3, 0.01, key="heads_sink",
                                   help=t("heads.sink_help", lang))
show_roles(chosen.spec, chosen.state.backend, info.name, lang, chosen.state.slide)  # text-free: before the report

if mode == CENSUS_MODE:
    show_census(collapsed, diffuse, sink, hosted=hosted, lang=lang, slide=chosen.state.slide)
if mode == "text":
    texts = (chosen.state.text,)
else:
    size = st.number_input(t("heads.corpus_size", lang), 2, len(corpus), len(corpus), key="heads_corpus_size",
                           help=t("heads.corpus_size_help", lang))
    texts = corpus[:size]
status.update(label=t("heads.measuring", lang, heads=info.num_layers * info.num_heads, n=len(texts)))
# A corpus run takes minutes on a CPU: it gets a Stop button, and a stopped run stays stopped until asked again.
request = (chosen.spec, len(texts), chosen.state.backend, ablation)
st.session_state["_heads_request"] = request
stopped = st.session_state.get("_heads_stopped")
if mode == "corpus" and stopped is not None and stopped["request"] == request:
    status.update(state="complete", label=t("heads.corpus_stopped", lang, done=stopped["done"], n=stopped["texts"]))
    st.info(t("heads.corpus_stopped", lang, done=stopped["done"], n=stopped["texts"]))
    st.button(t("heads.corpus_run_again", lang), key="heads_run_again", on_click=run_again)
    st.stop()
stop_slot = st.empty()
if mode == "corpus":
    st.session_state["_heads_progress"] = 0
    stop_slot.button(t("heads.corpus_stop", lang), key="heads_stop", on_click=stop_corpus_run,
                     args=(request, len(texts)), icon=":material/stop_circle:")
try:
    thresholds = HealthThresholds(collapsed=collapsed, diffuse=diffuse, sink=sink)
    job = session.plan_job("heads", loaded, lang, texts, count=len(texts) if mode == "corpus" else None)
    with job.running():
        report = with_thresholds(cached_report(chosen.spec, tuple(job.kept(texts)), chosen.state.backend, ablation,
                                               lang), thresholds)
except InspectorError as err:
    status.update(label=t("heads.failed", lang), state="error")
    session.show_error(err, lang)
    st.stop()
stop_slot.empty()
seconds = sum(report.timings.values())
model_name = sidebar.shown_model_name(info.name, lang)  # the bundled model's name in the page's language
if mode == "corpus":
    status.update(state="complete", label=t("heads.corpus_done", lang, model=model_name, n=len(texts),
                                            backend=report.backend, seconds=f"{seconds:.1f}",
                                            rate=f"{len(texts) / seconds:.2f}" if seconds > 0 else "…"))
else:
    status.update(state="complete", label=t("heads.done", lang, model=model_name, n=len(texts),
                                            backend=report.backend, seconds=f"{seconds:.1f}"))
slide = chosen.state.slide
layer, head = st.session_state["layer"], st.session_state["head"]

st.subheader(t("heads.glance", lang))
metric = st.segmented_control(t("heads.colour_by", lang), GRID_METRICS,
                              format_func=lambda name: t(f"heads.grid.{name}", lang),
                              key="heads_metric", default="entropy") or "entropy"
grid = head_grid_chart(report, metric, selected=(layer, head), slide=slide, lang=lang)
st.altair_chart(screen_title(grid), on_select=open_in_inspect, selection_mode=HEAD_SELECTION, key="heads_grid")
exported = Provenance(model=info.name, backend=report.backend,
                      text=texts[0] if len(texts) == 1 else t("chart.heads.corpus_text", lang, n=len(texts)))
export_buttons(f"heads-grid-{metric}", grid, exported, lang, "heads_grid_export")
measure = measure_words(report, lang)
st.caption(t("heads.grid_caption", lang, measure=measure, mode=t(f"heads.mode.{report.ablation_mode}", lang)))


def show_every_listed_head(report: HeadReport, lang: str) -> None:
    """The heads the health report cut short ("… and 54 more."), in an expander under it."""
    shown = set(health_report(report, lang))
    rest = [line for line in health_report(report, lang, per_kind=None) if line not in shown]
    if rest:
        with st.expander(t("heads.more_lines", lang, count=len(rest))):
            st.markdown("\n".join(f"- {escape_markdown(line)}" for line in rest))


st.subheader(t("heads.health", lang))
st.markdown("\n".join(f"- {escape_markdown(line)}" for line in health_report(report, lang)))
show_every_listed_head(report, lang)

st.subheader(t("heads.where", lang))
stats = report.statistics


def category_name(category: str) -> str:
    """A token category as a column label: the special ones by the model's own tokens, the others words."""
    return t(f"heads.column.{category}", lang) if category.isalpha() else report.category_name(category)


# A column that must be 0 on this model (a special category its tokenizer never added, "next" under a causal mask)
# is left out and the caption says why (issue 44).
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
if not all(report.category_shown(category) for category in TOKEN_CATEGORIES):
    st.caption(t("heads.where_hidden", lang, causal=t("heads.where_hidden_causal", lang) if report.info.causal else "",
                 specials=t("heads.where_hidden_specials", lang)
                 if not all(report.category_shown(category) for category in TOKEN_CATEGORIES[:2]) else ""))

st.subheader(t("heads.redundancy", lang))
js_tab, cka_tab, map_tab = st.tabs([t("heads.tab_js", lang), t("heads.tab_cka", lang), t("heads.tab_mds", lang)])
maps = {"js": head_matrix_chart(report, stats.js_divergence, title=t("chart.heads.js_title", lang),
                                legend=t("chart.heads.js_legend", lang), domain=(0.0, JS_MAX), slide=slide, lang=lang),
        "cka": head_matrix_chart(report, stats.contribution_cka, title=t("chart.heads.cka_title", lang),
                                 legend=t("chart.heads.cka_legend", lang), domain=(0.0, 1.0), scheme="magma",
                                 slide=slide, lang=lang),
        "mds": mds_chart(report, slide=slide, lang=lang)}
for tab, (name, figure) in zip((js_tab, cka_tab, map_tab), maps.items()):
    with tab:
        st.altair_chart(screen_title(figure))
        export_buttons(f"heads-{name}", figure, exported, lang, f"heads_{name}_export")
pairs = report.pairs
pair_columns = [t(f"heads.pairs.{name}", lang) for name in ("js", "first", "second", "both")]
st.dataframe({t("heads.pairs.pair", lang): [" & ".join(report.head_name(h) for h in pair) for pair in pairs.heads],
              **dict(zip(pair_columns, (pairs.js_divergence, pairs.change_first, pairs.change_second,
                                        pairs.change_both)))}, hide_index=True,
             column_config={name: st.column_config.NumberColumn(format="%.4f") for name in pair_columns})
st.caption(t("heads.pairs_caption", lang, measure=measure))

st.subheader(t("heads.pruning", lang))
pruning = pruning_chart(report, slide=slide, lang=lang)
st.altair_chart(screen_title(pruning))
export_buttons("pruning-curve", pruning, exported, lang, "heads_pruning_export")

st.download_button(t("heads.download_json", lang),
                   lambda: json.dumps(report_json(report, health_report(report, lang)), allow_nan=False),
                   file_name="head-report.json", mime="application/json", key="heads_json",
                   icon=":material/download:", on_click="ignore")
share_state.publish_view(replace(chosen.state, page="heads"), layer=layer, head=head,
                         extra=link_params(loaded))  # the roles options too
