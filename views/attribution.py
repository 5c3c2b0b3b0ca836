"""Attribution: is attention an explanation? Per-token scores from attention and from methods that test what
the output needs (gradients, integrated gradients, occlusion …), their agreement, ERASER faithfulness, and
counterfactual attention rows that leave the output unchanged.

Widgets → one cached library call (:func:`inspector.analyses.attribution.attribute`) → charts. The adversarial search
is a button: it runs many forward and backward passes, with a progress bar, and its result is kept for the
session.
"""

from __future__ import annotations

import streamlit as st

from inspector import InspectorError
from inspector.analyses.attribution import (
    COMPLETENESS_GAP,
    DEFAULT_REFERENCE,
    LONG_TEXT_TOKENS,
    AttributionReport,
    AttributionSettings,
    CorpusAgreement,
    CounterfactualAttention,
    TargetSpec,
    attribute,
    corpus_agreement,
    counterfactual_attention,
    first_look_settings,
    method_label,  # the corpus table and the warnings name methods as the charts do
    removal_modes,
)
from inspector.base.examples import EXAMPLES
from inspector.base.i18n import t
from inspector.base.tokens import readable_tokens
from inspector.charts.attribution import (
    agreement_chart,
    counterfactual_chart,
    decay_chart,
    faithfulness_frame,
    head_tau_chart,
    scores_chart,
)
from inspector.charts.sentences.attribution import baseline_words, target_words  # as other pages say them
from inspector.core.budget import count_tokens
from inspector.core.forward import backend_for
from inspector.output.export import Provenance, screen_title
from inspector.output.share import escape_markdown
from views import pages, session, share_state, sidebar
from views.export_buttons import export_buttons
from views.progress_bar import progress_bar

PREDICTED_CLASS = "predicted class"  # the class selectbox's first option (shown in the session language)
# What f is for each kind of model, said before the run (inspector.analyses.attribution.targets.setup_problem).
TARGET_IN_USE = {"none": "attribution.page.in_use_similarity", "causal-lm": "attribution.page.in_use_next_token",
                 "masked-lm": "attribution.page.in_use_masked_token", "classifier": "attribution.page.in_use_class"}
QUERY_LABELS = {"auto": "attribution.page.query_auto", "first": "attribution.page.query_first",
                "last": "attribution.page.query_last", "index…": "attribution.page.query_index_option"}


@st.cache_data(max_entries=8, ttl=3600, show_spinner=False)
def cached_attribution(spec: str, text: str, backend: str, reference: str, token: str | None, class_index: int | None,
                       layer: int, head: int | None, query: str | int | None, removal: str,
                       ig_steps: int, first_look: bool, _lang: str) -> AttributionReport:
    """The page's library call, keyed by everything it depends on (a frozen dataclass of NumPy arrays):
    ``first_look`` runs only the methods that draw within seconds (:func:`first_look_settings`), else every method
    with a progress bar (made here: Streamlit replays a cached function's elements only from containers it made;
    the language only words the bar, so it is not part of the key)."""
    settings = AttributionSettings(layer=layer, head=head, query=query, removal=removal, ig_steps=ig_steps)
    model, target = session.cached_model(spec), TargetSpec(reference, token, class_index)
    if first_look:
        return attribute(model, text, spec=target, settings=first_look_settings(settings), backend=backend)
    with progress_bar(t("attribution.computing", _lang), lambda done, total, note: t(
            "attribution.page.progress_at", _lang, percent=f"{done / total:.0%}")) as bar:
        return attribute(model, text, spec=target, settings=settings, backend=backend, progress=bar)


@st.cache_data(max_entries=4, ttl=3600, show_spinner=False)
def cached_corpus(spec: str, backend: str, reference: str, removal: str, ig_steps: int) -> CorpusAgreement:
    settings = AttributionSettings(removal=removal, ig_steps=ig_steps)
    return corpus_agreement(session.cached_model(spec), [example.text for example in EXAMPLES],
                            spec=TargetSpec(reference=reference), settings=settings, backend=backend)


heading = st.container()  # the title is in the sidebar's language, known only once the sidebar is drawn
# clamp: a link's layer or head past this model gets the same warning as on every other page (issue 18).
chosen, status, loaded = sidebar.open_page()
info = loaded.info
slide = chosen.state.slide
lang = chosen.state.lang
heading.title(t("attribution.page.title", lang))
heading.caption(t("attribution.page.caption", lang))

def _take_link_layer_head(named: bool) -> None:
    """A link that names a layer or head (a lecture step: layer 3, head 1) sets this page's own menus to them — the
    sidebar has already fitted them to the model; without this the page kept its default, the last layer (issue 44)."""
    if named:
        st.session_state["attr_layer"] = st.session_state["layer"]
        st.session_state["attr_head"] = st.session_state["head"]


pages.restore_once("attribution", lambda params: (bool({"layer", "head"} & set(params)), ()), _take_link_layer_head)

with st.expander(t("attribution.page.settings", lang), expanded=True):
    # The target on its own row: beside three selectboxes it left them too narrow for "mean over heads" at 1000 px.
    target_column = st.container()
    layer_column, head_column, query_column = st.columns(3)
    reference, token, class_index = DEFAULT_REFERENCE, None, None
    # Which f this model gets, in words, before anything runs (issue 27): a causal LM explains its own next token.
    target_column.caption(t(TARGET_IN_USE[info.head], lang))
    if info.head == "none":
        reference = target_column.text_input(t("attribution.page.reference", lang), DEFAULT_REFERENCE,
                                             key="attr_reference", max_chars=1000,
                                             help=t("attribution.page.reference_help", lang))
    elif info.head in ("masked-lm", "causal-lm"):
        token = target_column.text_input(t("attribution.page.target_token", lang), key="attr_token").strip() or None
    else:
        predicted_class = t("attribution.page.predicted_class", lang)
        picked = target_column.selectbox(t("attribution.page.class", lang), [PREDICTED_CLASS, *info.labels],
                                         key="attr_class", format_func=lambda label: predicted_class
                                         if label == PREDICTED_CLASS else label)
        class_index = None if picked == PREDICTED_CLASS else list(info.labels).index(picked)
    layer = layer_column.selectbox(t("inspect.layer", lang), range(info.num_layers), index=info.num_layers - 1,
                                   key="attr_layer")
    head = head_column.selectbox(t("inspect.head", lang), [None, *range(info.num_heads)], key="attr_head",
                                 format_func=lambda h: t("attribution.page.mean_over_heads", lang) if h is None
                                 else str(h))
    query_choice = query_column.selectbox(t("attribution.page.query", lang), list(QUERY_LABELS), key="attr_query",
                                          format_func=lambda choice: t(QUERY_LABELS[choice], lang),
                                          help=t("attribution.page.query_help", lang))
    query = None if query_choice == "auto" else query_choice
    if query_choice == "index…":
        query = int(st.number_input(t("attribution.page.query_index", lang), min_value=0,
                                    max_value=info.max_positions - 1, value=0, key="attr_query_index"))
    removal_column, steps_column, level_column = st.columns(3)
    # Only the modes this model supports, the stand-in named by the model's own token (issue 44).
    modes = removal_modes(loaded)
    if st.session_state.get("attr_removal") not in modes:
        st.session_state.pop("attr_removal", None)
    removal = removal_column.radio(t("attribution.page.removal", lang), list(modes), horizontal=True,
                                   key="attr_removal",
                                   format_func=lambda mode: t("attribution.page.removal_mask", lang, token=modes[mode])
                                   if mode == "mask" else t("attribution.page.removal_delete", lang))
    ig_steps = steps_column.select_slider(t("attribution.page.ig_steps", lang), [8, 16, 32, 64], value=16,
                                          key="attr_ig_steps")
    words = level_column.toggle(t("inspect.words", lang), key="attr_words", help=t("attribution.page.words_help", lang))

try:
    n_tokens = count_tokens(loaded, chosen.state.text)
    job = session.plan_job("attribution", loaded, lang, [chosen.state.text])  # a hosted instance's limits
except InspectorError as err:
    status.update(label=t("inputs.run_failed", lang), state="error")
    session.show_error(err, lang)
    st.stop()
if n_tokens > LONG_TEXT_TOKENS and not st.toggle(t("attribution.page.long_toggle", lang, n=n_tokens),
                                                 key="attr_long"):
    st.info(t("attribution.page.long_info", lang, n=n_tokens, limit=LONG_TEXT_TOKENS))
    st.stop()
status.update(label=t("attribution.page.status_computing", lang))
request = (chosen.spec, chosen.state.text, chosen.state.backend, reference, token, class_index, layer, head, query,
           removal, ig_steps)
bar_place = st.container()  # the full run's progress bar, above what it fills in


def draw_first_look(first: AttributionReport) -> tuple:
    """The target and the quick methods' scores; returns the placeholders the full run fills: its notes (integrated
    gradients' caption, warnings), the score chart, and the note that more methods follow."""
    st.subheader(t("attribution.page.target", lang))
    st.markdown(escape_markdown(t("attribution.page.target_value", lang, value=f"{first.target.value:.4g}",
                                  description=target_words(first.target, lang))))
    notes = st.empty()
    st.subheader(t("attribution.page.scores", lang))
    scores = st.empty()
    scores.altair_chart(screen_title(scores_chart(first, words=words, slide=slide, lang=lang)))
    pending = st.empty()
    pending.info(t("attribution.page.more_methods", lang), icon=":material/hourglass_top:")
    read_head = (t("attribution.page.read_mean", lang) if first.head is None
                 else t("attribution.page.read_head", lang, head=first.head))
    st.caption(t("attribution.page.scores_caption", lang, layer=first.layer, head=read_head, query=first.query,
                 token=escape_markdown(readable_tokens(first.tokens)[first.query])))
    return notes, scores, pending


# Cheap results first (issue 44): the target and the scores of the methods that need no more than one backward
# draw within seconds; integrated gradients, occlusion, value zeroing, faithfulness and the counterfactual follow.
pending = None
try:
    with job.running():
        notes_slot, scores_slot, pending = draw_first_look(cached_attribution(*request, True, lang))
        with bar_place:
            report = cached_attribution(*request, False, lang)
except InspectorError as err:
    status.update(label=t("attribution.page.failed", lang), state="error")
    if pending is not None:
        pending.empty()  # the first look's scores stay, with no "more follow" note under the error
    session.show_error(err, lang)
    st.stop()
pending.empty()
total = sum(report.timings.values())
status.update(state="complete", label=t("attribution.page.done", lang, n=len(report.tokens),
                                        methods=len(report.scores), seconds=f"{total:.1f}"))

ig = report.ig
with notes_slot.container():
    if ig is not None:
        st.caption(escape_markdown(t("attribution.page.ig_caption", lang, steps=ig.steps,
                                     batch=ig.internal_batch_size, baseline=baseline_words(ig, lang),
                                     baseline_value=f"{ig.baseline_value:.4g}", delta=f"{ig.delta:.2g}")))
        if ig.incomplete(report.target.value):  # the scores do not add up to what they explain (issue 44)
            st.warning(t("attribution.page.ig_incomplete", lang, gap=f"{ig.relative_gap(report.target.value):.0%}",
                         threshold=f"{COMPLETENESS_GAP:.0%}", delta=f"{ig.delta:.3g}",
                         change=f"{report.target.value - ig.baseline_value:.3g}"), icon=":material/warning:")
    for method, reason in report.skipped.items():
        st.warning(escape_markdown(t("attribution.page.skipped", lang, method=method_label(method, lang),
                                     reason=reason)))

exported = Provenance(model=loaded.info.name, text=chosen.state.text, backend=backend_for(loaded, chosen.state.backend),
                      layer=report.layer, head=report.head)


def show(name: str, figure) -> None:
    """A chart and, under it, its PNG, SVG and 16:9 slide exports."""
    st.altair_chart(screen_title(figure))
    export_buttons(f"attribution-{name}", figure, exported, lang, f"attr_export_{name}")


with scores_slot.container():
    show("scores", scores_chart(report, words=words, slide=slide, lang=lang))

st.subheader(t("attribution.page.agreement", lang))
agreed = report.agreement
overlap = f"top-{agreed.k} overlap"  # the radio's value; the radio and the chart name it in the session language


def measure_name(name: str) -> str:
    return t("attribution.page.overlap", lang, k=agreed.k) if name == overlap else name


kind = st.radio(t("attribution.page.measure", lang), ["Kendall τ", "Spearman ρ", overlap], horizontal=True,
                key="attr_measure", format_func=measure_name)
matrix = {"Kendall τ": agreed.kendall, "Spearman ρ": agreed.spearman}.get(kind, agreed.top_k)
low, high = agreed.random_tau
show("agreement", agreement_chart(agreed.methods, matrix, name=measure_name(kind), low=0.0 if kind == overlap else -1.0,
                                slide=slide, lang=lang,
                                subtitle=[t("attribution.page.agreement_subtitle", lang,
                                            n=int((~report.protected).sum()), low=f"{low:.2f}", high=f"{high:.2f}")]))
if agreed.head_tau is not None:
    show("head-tau", head_tau_chart(agreed.head_tau, slide=slide, lang=lang))
if st.button(t("attribution.page.corpus_button", lang), key="attr_corpus"):
    with st.spinner(t("attribution.page.corpus_spinner", lang)):
        try:
            with job.running():
                corpus = cached_corpus(chosen.spec, chosen.state.backend, reference, removal, ig_steps)
        except InspectorError as err:
            session.show_error(err, lang)
            corpus = None
    if corpus is not None:
        show("corpus-agreement", agreement_chart(corpus.methods, corpus.mean,
                                                 name=t("chart.attribution.mean_kendall", lang),
                                        slide=slide, lang=lang,
                                        subtitle=[t("attribution.page.corpus_subtitle", lang,
                                                    n=len(corpus.per_text))]))
        columns = [t(f"attribution.page.column_{name}", lang) for name in ("method", "vs", "mean", "low", "high")]
        pairs = [dict(zip(columns, (method_label(a, lang), method_label(b, lang), corpus.mean[i, j],
                                    corpus.low[i, j], corpus.high[i, j])))
                 for i, a in enumerate(corpus.methods) for j, b in enumerate(corpus.methods) if j > i]
        st.dataframe(pairs, hide_index=True)

st.subheader(t("attribution.page.faithfulness", lang))
faithful = report.faithfulness
removed = (t("attribution.page.removed_mask", lang, replacement=faithful.replacement) if faithful.removal == "mask"
           else t("attribution.page.removed_delete", lang))
st.caption(escape_markdown(t("attribution.page.faithfulness_caption", lang,
                             bins=", ".join(f"{b:.0%}" for b in faithful.bins), removed=removed,
                             flip=faithful.flip_rule_text(lang))))
st.dataframe(faithfulness_frame(faithful, lang), hide_index=True)
show("faithfulness", decay_chart(faithful, slide=slide, lang=lang))

st.subheader(t("attribution.page.counterfactual", lang))
cf = report.counterfactual
key = (chosen.spec, chosen.state.text, chosen.state.backend, reference, token, class_index, layer, head, report.query)
adversarial: CounterfactualAttention | None = st.session_state.get("attr_adversarial", {}).get(key)
if st.button(t("attribution.page.adversarial_button", lang), key="attr_adversarial_run"):
    # English: the search's own note (step, best JSD so far); another language: the share done.
    percent = None if lang == "en" else (lambda done, total, note: t(
        "attribution.page.adversarial_progress_at", lang, percent=f"{done / total:.0%}"))
    with progress_bar(t("attribution.page.adversarial_progress", lang), percent) as bar, job.running():
        try:
            adversarial = counterfactual_attention(
                loaded, chosen.state.text, spec=TargetSpec(reference, token, class_index), layer=layer, head=head,
                query=report.query, backend=chosen.state.backend, progress=bar)
            st.session_state["attr_adversarial"] = {key: adversarial}
        except InspectorError as err:
            session.show_error(err, lang)
shown = adversarial or cf
if shown is not None:
    uniform_column, permutation_column, adversarial_column = st.columns(3)
    uniform_column.metric(t("attribution.page.uniform_metric", lang), f"{shown.uniform_change:.3g}",
                          help=t("attribution.page.uniform_help", lang, jsd=f"{shown.uniform_jsd:.3f}"))
    permutation_column.metric(t("attribution.page.permutation_metric", lang, n=len(shown.permutation_changes)),
                              f"{shown.permutation_median:.3g}",
                              help=t("attribution.page.permutation_help", lang, weight=f"{shown.max_weight:.3f}"))
    if shown.adversarial is not None:
        adversarial_column.metric(t("attribution.page.adversarial_metric", lang), f"{shown.adversarial_jsd:.3f}",
                                  help=t("attribution.page.adversarial_help", lang,
                                         change=f"{shown.adversarial_change:.3g}", epsilon=f"{shown.epsilon:g}",
                                         steps=shown.adversarial_steps,
                                         seconds=f"{shown.adversarial_seconds:.1f}"))
    show("counterfactual", counterfactual_chart(report.tokens, shown, slide=slide, lang=lang))
    st.info(escape_markdown(shown.verdict_text(lang)))

share_state.publish_view(chosen.state, layer=layer, head=0 if head is None else head)
