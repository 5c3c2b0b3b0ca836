"""Heads: an entropy health report, attention sinks and special tokens, head redundancy, head importance and a
pruning curve — each statistic next to what ablating the heads does to the model's output.

Widgets → two cached library calls: the statistics first (:func:`inspector.analyses.heads.head_first_look`, drawn
within seconds), then the full report (:func:`inspector.analyses.heads.head_report`, the same call as ``python -m
inspector heads``, with a progress bar) → charts and a plain-words report (:mod:`views.heads_sections`). Clicking a
head opens it on the Inspect page.
"""

from __future__ import annotations

import time
from dataclasses import replace

import streamlit as st

from inspector import InspectorError
from inspector.analyses.head_progress import ReportProgress
from inspector.analyses.heads import (
    HeadReport,
    head_first_look,
    head_report,
    read_corpus,
    with_thresholds,
)
from inspector.analyses.metrics import HealthThresholds
from inspector.base.errors import error_text
from inspector.base.i18n import t
from inspector.core.deadline import current_deadline
from views import session, share_state, sidebar
from views.census_folder import CENSUS_MODE, show_census
from views.heads_roles import link_params, show_roles
from views.heads_sections import draw_first_look, fill_report
from views.progress_bar import progress_bar


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


@st.cache_data(max_entries=8, ttl=3600, show_spinner=False)
def cached_first_look(spec: str, texts: tuple[str, ...], backend: str, ablation: str) -> HeadReport:
    """The report's statistics alone (:func:`head_first_look`, one forward a length group): drawn while the
    ablations run (issue 44)."""
    return head_first_look(session.cached_model(spec), texts, backend=backend, ablation=ablation)


def stop_corpus_run(request: tuple, texts: int) -> None:
    """Stop button → remember which request was stopped and how far it got. The click's rerun interrupts the
    running report; this flag keeps the rerun from starting it again."""
    st.session_state["_heads_stopped"] = {"request": request, "done": st.session_state.get("_heads_progress", 0),
                                          "texts": texts}


def run_again() -> None:
    st.session_state.pop("_heads_stopped", None)


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
try:  # a collapsed threshold typed above the diffuse one (issue 45's sweep): one line, not an exception box
    thresholds = HealthThresholds(collapsed=collapsed, diffuse=diffuse, sink=sink)
except InspectorError as err:
    status.update(label=t("inputs.run_failed", lang), state="error")
    session.show_error(err, lang)
    st.stop()

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
# Cheap results first (issue 44): the first look's statistics draw within seconds, each section the full report
# adds (importances, the health report, pairs, the pruning curve) is a placeholder until the report is done.
bar_place = st.container()  # the report's progress bar, above the sections it fills
slide = chosen.state.slide
layer, head = st.session_state["layer"], st.session_state["head"]
slots = None
try:
    job = session.plan_job("heads", loaded, lang, texts, count=len(texts) if mode == "corpus" else None)
    with job.running():
        kept = tuple(job.kept(texts))
        first = with_thresholds(cached_first_look(chosen.spec, kept, chosen.state.backend, ablation), thresholds)
        ends = current_deadline()  # the job's instant (moved by any wait for a run slot)
    # Drawn between the job's two parts, outside both: the deadline binds forwards and steps, and drawing is neither
    # (issue 45's sweep saw the report end past its deadline by the first look's drawing). The report keeps the
    # first look's instant.
    slots = draw_first_look(first, texts, info.name, lang, slide, (layer, head))
    with job.running(until=ends), bar_place:
        report = with_thresholds(cached_report(chosen.spec, kept, chosen.state.backend, ablation, lang), thresholds)
except InspectorError as err:
    status.update(label=t("heads.failed", lang), state="error")
    if slots is not None:
        slots.clear()  # no "measuring…" left under the error
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
fill_report(slots, report, texts, info.name, lang, slide, (layer, head))
share_state.publish_view(replace(chosen.state, page="heads"), layer=layer, head=head,
                         extra=link_params(loaded))  # the roles options too
