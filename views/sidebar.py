"""What every page reads: the model, the text and the backend — chosen in the sidebar, restored once per
session from a share link, and resolved through Streamlit's caches (:mod:`views.session`).

This module is UI only: it draws the shared sidebar (app.py calls :func:`sidebar` before the page runs) and reads
its widgets. A page calls :func:`open_page` for the inputs and :func:`views.share_state.publish_view` at the end so
the address bar always holds a link to exactly what is on screen.

On a hosted instance (``INSPECTOR_HOSTED=1``, :mod:`inspector.serving.hosting`) the model list is the instance's
allow-list, the free-text "hub id or local folder" box is gone, and share links naming other models fall back to the
bundled one with a warning.
"""

from __future__ import annotations

import logging

import streamlit as st

from inspector import InspectorError, LoadedModel
from inspector.analyses.unknown_tokens import BUNDLED_MULTILINGUAL, script_of
from inspector.base.examples import EXAMPLES
from inspector.base.i18n import CATALOGUE, LANGUAGE_NAMES, LANGUAGES, t
from inspector.base.limits import MAX_TEXT_CHARS
from inspector.base.model_ids import parsed_spec, spec_kind
from inspector.core.bundled import bundled_choices
from inspector.core.loading import (
    DEFAULT_MODEL,
    DEFAULT_MODEL_LABEL,
    model_label,
    shipped_choices,
    shipped_kind,
)
from inspector.output.share import BACKENDS, FLAGS, ViewState, decode_view
from inspector.serving.hosting import HostingPolicy
from views import pages, session, share_state

_log = logging.getLogger(__name__)  # what a visitor must not read (an operator's file paths) goes to the server log

OTHER_MODEL = "__other__"
# The suggested hub models, by the catalogue key of their label: one per architecture family the attention function
# supports. Hub models load from the Hugging Face cache or the network; offline, choosing one explains why it cannot
# load.
_SUGGESTED_LABEL_KEYS = {
    "bert-base-uncased": "model.bert_base",
    "distilbert-base-uncased": "model.distilbert",
    "gpt2": "model.gpt2",
    "HuggingFaceTB/SmolLM2-135M": "model.smollm2",
    # Models that read Chinese (the bundled model's English vocabulary turns most characters into [UNK]).
    "google-bert/bert-base-chinese": "model.bert_chinese",
    "Qwen/Qwen2.5-0.5B": "model.qwen",
    OTHER_MODEL: "model.other",
}
# The bundled models, the project's own trained models, then the suggested hub models (spec → English label).
SUGGESTED_MODELS = {
    DEFAULT_MODEL: DEFAULT_MODEL_LABEL,
    **bundled_choices(),  # the decoders that install with the app (GGUF packages, prepared once)
    **shipped_choices(),  # the models this project trained (assets/models): the Ground truth page's
    **{spec: t(key, "en") for spec, key in _SUGGESTED_LABEL_KEYS.items()},
}


def model_options(policy: HostingPolicy) -> dict[str, str]:
    """Spec → label of the models the sidebar offers: the allow-list when hosted, else the suggestions."""
    return policy.model_choices() if policy.hosted else SUGGESTED_MODELS


def model_choice_label(spec: str, label: str, lang: str) -> str:
    """What a model menu shows for option ``spec`` (whose label is ``label``) in ``lang``; the option itself — the
    spec, what share links carry — never changes. English keeps a shipped model's own card label (the cards, the
    exports and the tests name it); other languages get a short form that fits the sidebar. A label that is not
    the suggestion's own (an operator's allow-list label, hosted mode) is shown as written."""
    if spec == DEFAULT_MODEL and label == DEFAULT_MODEL_LABEL:
        return model_label(label, lang)
    if label == bundled_choices().get(spec):
        return model_label(spec, lang)
    key = _SUGGESTED_LABEL_KEYS.get(spec)
    if key is not None and label == t(key, "en"):
        return t(key, lang)
    if spec_kind(spec) == "shipped" and lang != "en" and label == shipped_choices().get(spec):
        return t("model.ground_truth", lang, name=shipped_kind(spec, lang) or parsed_spec(spec).name)
    return label


def shown_model_name(name: str, lang: str) -> str:
    """A loaded model's name (``ModelInfo.name``) as a page's status line shows it: the bundled model's in ``lang``,
    a shipped model as its menu shows it (not its ``shipped:NAME`` spec)."""
    if spec_kind(name) == "shipped" and name in shipped_choices():
        return model_choice_label(name, shipped_choices()[name], lang)
    return model_label(name, lang)


def _restore_once(policy: HostingPolicy) -> None:
    """Seed the widgets from the URL the session was opened with; later reruns leave them to the user."""
    options = model_options(policy)
    pages.restore_once("view", lambda params: decode_view(params, models=list(options) if policy.hosted else None),
                       lambda state: _apply_view(state, options))


def _apply_view(state: ViewState, options: dict[str, str]) -> None:
    """The shared widgets set from a link's view."""
    if state.model in options:
        st.session_state["model"] = state.model
    else:
        st.session_state["model"] = OTHER_MODEL
        st.session_state["model_other"] = state.model
    st.session_state["text"] = state.text
    st.session_state["backend"] = state.backend
    st.session_state["layer"] = state.layer
    st.session_state["head"] = state.head
    if {"layer", "head"} & set(st.query_params):  # a link chose them: a clamp of these values is worth a warning
        st.session_state["_link_layer_head"] = (state.layer, state.head)
    st.session_state["lang"] = state.lang
    for key in FLAGS:
        st.session_state[key] = getattr(state, key)


def _load_example() -> None:
    chosen = st.session_state.get("example")
    for example in EXAMPLES:
        if example.title == chosen:
            st.session_state["text"] = example.text


def _cut_long_text() -> None:
    """Cut a text past :data:`MAX_TEXT_CHARS` to the limit before the text box is drawn (a widget's value can be
    set only before it is), remembering the pasted length for the notice, shown while that cut text is in the box."""
    text = st.session_state.get("text")
    if isinstance(text, str) and len(text) > MAX_TEXT_CHARS:
        st.session_state["text"] = text[:MAX_TEXT_CHARS]
        st.session_state["_text_cut"] = (len(text), st.session_state["text"])


def sidebar() -> session.Inputs:
    """Draw the sidebar and return the chosen inputs (layer and head are filled in by the page). Called once a run,
    by app.py before the page: a page switch carries the values of the entry script's widgets only.

    Every sidebar widget keeps its value for the session (``persist_state="session"``) through a run that does not
    draw it (the "other model" box) and through a page's own ``st.switch_page``, which carries no widget values
    (Heads → Inspect); its value is never assigned to itself, which would send it back to the browser with every
    run (:data:`views.share_state.SIDEBAR_KEYS` says what that lost)."""
    try:
        policy = session.hosting_policy()
    except InspectorError as err:  # the operator's settings, not the visitor's input: the details (a file's path)
        _log.error("the hosting settings cannot be read: %s", err)  # go to the server's log, never to the page
        lang = st.session_state.get("lang") or st.query_params.get("lang")
        st.error(t("sidebar.misconfigured", lang, error=t("error.kind.hosting_config", lang)))
        st.stop()
    _restore_once(policy)
    share_state.keep_across_pages()  # the pages' own widgets, before any of them is drawn
    options = model_options(policy)
    with st.sidebar:
        # Both languages in the label: whoever cannot read the current one still finds the switch.
        st.selectbox(t("sidebar.language", st.session_state.get("lang")), LANGUAGES,
                     format_func=LANGUAGE_NAMES.__getitem__, key="lang", persist_state="session")
        lang = st.session_state["lang"]
        pages.show_link_warnings("view", lang)
        st.header(t("sidebar.input", lang))
        choice = st.selectbox(t("sidebar.model", lang), list(options), key="model", persist_state="session",
                              format_func=lambda spec: model_choice_label(spec, options[spec], lang))
        if choice == OTHER_MODEL:
            st.text_input(t("sidebar.model_other", lang), key="model_other", persist_state="session",
                          placeholder=t("model.other_placeholder", lang), help=t("sidebar.model_other_help", lang))
        st.session_state.setdefault("example", None)
        # The option is the English title (share links and _load_example read it); the menu shows it in the
        # session language where the catalogue has it (example.<slug>).
        titles = {example.title: f"example.{example.slug}" for example in EXAMPLES}
        st.selectbox(t("sidebar.examples", lang), list(titles), index=None, key="example", persist_state="session",
                     format_func=lambda title: t(titles[title], lang) if titles[title] in CATALOGUE else title,
                     placeholder=t("sidebar.examples_placeholder", lang), on_change=_load_example)
        _cut_long_text()
        # No max_chars: with one, the browser drops a longer paste whole, without a word, and the previous text
        # runs again. The paste reaches the server and _cut_long_text cuts it to the limit, with the notice.
        st.text_area(t("sidebar.text", lang), key="text", height=140, help=t("sidebar.text_help", lang),
                     persist_state="session")
        cut = st.session_state.get("_text_cut")
        if cut is not None and cut[1] == st.session_state["text"]:
            st.warning(t("sidebar.text_cut_from", lang, length=f"{cut[0]:,}", limit=f"{MAX_TEXT_CHARS:,}"),
                       icon="✂️")
        st.selectbox(t("sidebar.backend", lang), BACKENDS, key="backend", help=t("sidebar.backend_help", lang),
                     persist_state="session")
        st.toggle(t("sidebar.slide", lang), key="slide", help=t("sidebar.slide_help", lang), persist_state="session")
    return inputs()


def inputs() -> session.Inputs:
    """The sidebar's inputs in this run, read from its widgets (which app.py has drawn before the page runs)."""
    choice = st.session_state["model"]
    spec = str(st.session_state.get("model_other") or "").strip() if choice == OTHER_MODEL else choice
    state = ViewState(model=spec or DEFAULT_MODEL, text=st.session_state["text"], backend=st.session_state["backend"],
                      lang=st.session_state["lang"], **{key: bool(st.session_state.get(key, False)) for key in FLAGS})
    return session.Inputs(spec=spec, state=state)


def _switch_model(spec: str) -> None:
    st.session_state["model"] = spec


def offer_reader(chosen: session.Inputs, options: dict[str, str]) -> None:
    """Under the unknown-token warning: one click switches the sidebar's model to the bundled model that reads the
    script (Gemma 3 270M; issue 27). An offer, not an automatic switch: the reader sees why and decides, and the text,
    layer and head stay. Only where that model is offered (a hosted instance's allow-list may leave it out)."""
    reader = BUNDLED_MULTILINGUAL
    if chosen.spec == reader or reader not in options:
        return
    lang = chosen.state.lang
    st.button(t("unknown.switch", lang, model=model_label(reader, lang),
                script=t(f"unknown.script.{script_of(chosen.state.text)}", lang)),
              key="switch_to_reader", icon=":material/translate:", type="primary", on_click=_switch_model,
              args=(reader,))


def open_page(*, clamp: bool = True, reads_text: bool = True) -> tuple[session.Inputs, session.StatusLine, LoadedModel]:
    """Every page's first steps: the sidebar, the status line, the cached model — the run stops here, with the
    reason shown, when there is none — the unknown-token warning about the sidebar's text (``reads_text``: only on
    a page that analyses that text; the Ground truth page scores its own examples) and (``clamp``) the layer and
    head fitted to that model. A page whose title depends on the sidebar's language reserves a container for it
    before calling this."""
    chosen = inputs()
    status = session.StatusLine()
    loaded = session.load(chosen, status)
    if loaded is None:
        st.stop()
    if reads_text and session.warn_if_unreadable(chosen):
        offer_reader(chosen, model_options(session.hosting_policy()))
    if clamp:
        share_state.clamp_layer_and_head(chosen.state, loaded.info.num_layers, loaded.info.num_heads)
    return chosen, status, loaded
