"""What every page reads: the model, the text and the backend — chosen in the sidebar, restored once per
session from a share link, and resolved through Streamlit's caches.

This module is UI only: it reads widgets, calls the library, and keeps the two caches (STYLE.md: caching
lives in the UI layer, as thin wrappers). A page calls :func:`sidebar` for the inputs and
:func:`publish_view` at the end so the address bar always holds a link to exactly what is on screen.

On a hosted instance (``INSPECTOR_HOSTED=1``, :mod:`inspector.serving.hosting`) the model list is the instance's
allow-list, the free-text "hub id or local folder" box is gone, share links naming other models fall back to the
bundled one with a warning, and every run is planned within the instance's memory budget and deadline.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, replace

import streamlit as st

from inspector import Capture, InspectorError, LoadedModel
from inspector.analyses.heatmap import HeatmapOptions, layer_views
from inspector.analyses.metrics import head_entropy
from inspector.analyses.unknown_tokens import unreadable_text_warning
from inspector.base.examples import EXAMPLES
from inspector.base.i18n import CATALOGUE, LANGUAGE_NAMES, LANGUAGES, notice_text, t
from inspector.base.limits import MAX_TEXT_CHARS
from inspector.charts.bertviz import (
    head_view_height,
    head_view_html,
    head_view_max_layers,
    layers_around,
    model_view_height,
    model_view_html,
    model_view_max_layers,
)
from inspector.charts.inspect import entropy_by_layer_chart, layer_heads_chart
from inspector.core.budget import RequestPlan, plan_request
from inspector.core.capture import capture_within_memory
from inspector.core.loading import DEFAULT_MODEL, DEFAULT_MODEL_LABEL, SHIPPED_PREFIX, model_label, shipped_choices
from inspector.output.share import (
    BACKENDS,
    FLAGS,
    MAX_LINK_CHARS,
    ViewState,
    decode_view,
    encode_view,
    escape_markdown,
    link_fits,
    share_url,
    without_text,
)
from inspector.serving.hosting import HostingPolicy, load_allowed_model

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
# The bundled model, the project's own trained models, then the suggested hub models (spec → English label).
SUGGESTED_MODELS = {
    DEFAULT_MODEL: DEFAULT_MODEL_LABEL,
    **shipped_choices(),  # the models this project trained (assets/models): the Ground truth page's
    **{spec: t(key, "en") for spec, key in _SUGGESTED_LABEL_KEYS.items()},
}


@st.cache_resource(show_spinner=False)
def hosting_policy() -> HostingPolicy:
    """This instance's policy, read from the environment once per server process."""
    return HostingPolicy.from_env()


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
    key = _SUGGESTED_LABEL_KEYS.get(spec)
    if key is not None and label == t(key, "en"):
        return t(key, lang)
    if spec.startswith(SHIPPED_PREFIX) and lang != "en" and label == shipped_choices().get(spec):
        return t("model.ground_truth", lang, name=spec.removeprefix(SHIPPED_PREFIX))
    return label


def shown_model_name(name: str, lang: str) -> str:
    """A loaded model's name (``ModelInfo.name``) as a page's status line shows it: the bundled model's in ``lang``,
    a shipped model as its menu shows it (not its ``shipped:NAME`` spec)."""
    if name.startswith(SHIPPED_PREFIX) and name in shipped_choices():
        return model_choice_label(name, shipped_choices()[name], lang)
    return model_label(name, lang)


@st.cache_resource(show_spinner=False, max_entries=4)
def cached_model(spec: str, device: str = "auto") -> LoadedModel:
    """One loaded model per spec (and device), shared read-only by every session (the library never mutates it)."""
    return load_allowed_model(spec, hosting_policy(), device=device)


class Progress:
    """One line that shows which stage a run is in (loading the model, running attention, computing
    metrics) and then what ran. A placeholder rather than ``st.status``, whose every creation sleeps 50 ms —
    a sixth of a head-click rerun."""

    _ICONS = {"running": ":material/progress_activity:", "complete": ":material/check_circle:",
              "error": ":material/error:"}

    def __init__(self) -> None:
        self._line = st.empty()

    def update(self, *, label: str, state: str = "running") -> None:
        self._line.caption(f"{self._ICONS[state]} {escape_markdown(label)}")


@dataclass(frozen=True)
class Inputs:
    """The sidebar's answer: what to load and run. ``state`` is the share-link view (page options included)."""

    spec: str
    state: ViewState


def _restore_once(policy: HostingPolicy) -> None:
    """Seed the widgets from the URL the session was opened with; later reruns leave them to the user."""
    if st.session_state.get("_restored"):
        return
    st.session_state["_restored"] = True
    options = model_options(policy)
    state, warnings = decode_view(st.query_params.to_dict(), models=list(options) if policy.hosted else None)
    st.session_state["_share_warnings"] = warnings
    if state.model in options:
        st.session_state["model"] = state.model
    else:
        st.session_state["model"] = OTHER_MODEL
        st.session_state["model_other"] = state.model
    st.session_state["text"] = state.text
    st.session_state["backend"] = state.backend
    st.session_state["layer"] = state.layer
    st.session_state["head"] = state.head
    st.session_state["lang"] = state.lang
    for key in FLAGS:
        st.session_state[key] = getattr(state, key)


# Widget keys every page shares. Streamlit drops a widget's value when a run on another page does not draw that
# same widget (the widget id includes the page); assigning each value to itself at the top of a run makes it a
# plain session value again, so the model, text and options survive a page switch.
_SHARED_KEYS = ("model", "model_other", "text", "backend", "example", "lang", "layer", "head", *FLAGS)


def keep_across_pages() -> None:
    """Keep the shared widgets' values through the next page switch (call before ``st.switch_page`` too)."""
    for key in _SHARED_KEYS:
        if key in st.session_state:
            st.session_state[key] = st.session_state[key]


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


def sidebar() -> Inputs:
    """Draw the sidebar and return the chosen inputs (layer and head are filled in by the page)."""
    try:
        policy = hosting_policy()
    except InspectorError as err:  # the operator's settings, not the visitor's input
        st.error(f"This instance is misconfigured: {err}")
        st.stop()
    _restore_once(policy)
    keep_across_pages()
    options = model_options(policy)
    with st.sidebar:
        # Both languages in the label: whoever cannot read the current one still finds the switch.
        st.selectbox(t("sidebar.language", st.session_state.get("lang")), LANGUAGES,
                     format_func=LANGUAGE_NAMES.__getitem__, key="lang")
        lang = st.session_state["lang"]
        for warning in st.session_state.get("_share_warnings", ()):
            st.warning(t("sidebar.share_warning", lang, warning=escape_markdown(notice_text(warning, lang))),
                       icon="⚠️")
        st.header(t("sidebar.input", lang))
        choice = st.selectbox(t("sidebar.model", lang), list(options), key="model",
                              format_func=lambda spec: model_choice_label(spec, options[spec], lang))
        spec = choice
        if choice == OTHER_MODEL:
            spec = st.text_input(t("sidebar.model_other", lang), key="model_other",
                                 placeholder=t("model.other_placeholder", lang),
                                 help=t("sidebar.model_other_help", lang)).strip()
        st.session_state.setdefault("example", None)
        # The option is the English title (share links and _load_example read it); the menu shows it in the
        # session language where the catalogue has it (example.<slug>).
        titles = {example.title: f"example.{example.slug}" for example in EXAMPLES}
        st.selectbox(t("sidebar.examples", lang), list(titles), index=None, key="example",
                     format_func=lambda title: t(titles[title], lang) if titles[title] in CATALOGUE else title,
                     placeholder=t("sidebar.examples_placeholder", lang), on_change=_load_example)
        _cut_long_text()
        # No max_chars: with one, the browser drops a longer paste whole, without a word, and the previous text
        # runs again. The paste reaches the server and _cut_long_text cuts it to the limit, with the notice.
        st.text_area(t("sidebar.text", lang), key="text", height=140, help=t("sidebar.text_help", lang))
        cut = st.session_state.get("_text_cut")
        if cut is not None and cut[1] == st.session_state["text"]:
            st.warning(t("sidebar.text_cut_from", lang, length=f"{cut[0]:,}", limit=f"{MAX_TEXT_CHARS:,}"),
                       icon="✂️")
        st.selectbox(t("sidebar.backend", lang), BACKENDS, key="backend", help=t("sidebar.backend_help", lang))
        st.toggle(t("sidebar.slide", lang), key="slide", help=t("sidebar.slide_help", lang))
    state = ViewState(model=spec or DEFAULT_MODEL, text=st.session_state["text"], backend=st.session_state["backend"],
                      lang=lang, **{key: bool(st.session_state.get(key, False)) for key in FLAGS})
    return Inputs(spec=spec, state=state)


def load(inputs: Inputs, status: Progress) -> LoadedModel | None:
    """The cached model for ``inputs``, or None after showing why it cannot load."""
    if not inputs.spec:
        st.info(t("inputs.type_model", inputs.state.lang))
        return None
    status.update(label=t("inputs.loading", inputs.state.lang))
    try:
        return cached_model(inputs.spec)
    except InspectorError as err:
        status.update(label=t("inputs.load_failed", inputs.state.lang), state="error")
        st.error(str(err))
        return None


def open_page(*, clamp: bool = True, reads_text: bool = True) -> tuple[Inputs, Progress, LoadedModel]:
    """Every page's first steps: the sidebar, the progress line, the cached model — the run stops here, with the
    reason shown, when there is none — the unknown-token warning about the sidebar's text (``reads_text``: only on
    a page that analyses that text; the Ground truth page scores its own examples) and (``clamp``) the layer and
    head fitted to that model. A page whose title depends on the sidebar's language reserves a container for it
    before calling this."""
    chosen = sidebar()
    status = Progress()
    loaded = load(chosen, status)
    if loaded is None:
        st.stop()
    if reads_text:
        warn_if_unreadable(chosen)
    if clamp:
        clamp_layer_and_head(chosen.state, loaded.info.num_layers, loaded.info.num_heads)
    return chosen, status, loaded


@st.cache_data(max_entries=64, ttl=3600, show_spinner=False)
def cached_unreadable_warning(spec: str, text: str, lang: str) -> str | None:
    """The unknown-token warning for this model and text (tokenising only), or None when the model reads it."""
    return unreadable_text_warning(cached_model(spec), text, lang)


def warn_if_unreadable(chosen: Inputs) -> None:
    """Every page: warn when the model maps too much of the text to its unknown token (issue 17)."""
    warning = cached_unreadable_warning(chosen.spec, chosen.state.text, chosen.state.lang)
    if warning is not None:
        hint = "" if hosting_policy().hosted else " " + t("unknown.sidebar_hint", chosen.state.lang)
        st.warning(escape_markdown(warning) + hint, icon=":material/translate:")


class _ModelCalls(threading.local):
    """Per script thread: whether the last :func:`run` had to call the model (a cache miss)."""

    ran = False


_model_calls = _ModelCalls()


# Few entries: a 512-token capture of the bundled model with every layer's weights is ~75 MB.
@st.cache_data(max_entries=8, ttl=3600, show_spinner=False)
def cached_capture(spec: str, text: str, backend: str, weights_layers: tuple[int, ...] | None,
                   _keep_layer: int = 0) -> Capture:
    """Entropy and statistics for every layer, exact weights for ``weights_layers`` (None = every layer),
    so choosing another head — or, within the memory budget, another layer — redraws without a forward.
    Out of memory, the run is retried keeping ``_keep_layer``'s weights only, then on the CPU (not part of the
    cache key: the layer on screen must not force a new forward when every layer's weights are kept)."""
    _model_calls.ran = True  # runs only on a cache miss, in the session's own script thread
    loaded = cached_model(spec)
    on_cpu = loaded.device.type == "cpu"
    return capture_within_memory(loaded, text, backend=backend, weights="all" if weights_layers is None
                                 else weights_layers, keep_layer=_keep_layer, deadline_s=hosting_policy().deadline_s,
                                 cpu_model=None if on_cpu else lambda: cached_model(spec, "cpu"))


def planned_capture(spec: str, text: str, backend: str, planned: RequestPlan, layer: int) -> Capture:
    """The cached capture for a plan, holding ``layer``'s weights (an out-of-memory retry may have kept another
    layer's: then that layer is asked for on its own)."""
    result = cached_capture(spec, text, backend, planned.weights_layers, _keep_layer=layer)
    if layer not in result.weights:
        result = cached_capture(spec, text, backend, (int(layer),), _keep_layer=layer)
    return result


def run(inputs: Inputs, loaded: LoadedModel, layer: int, status: Progress) -> tuple[Capture | None, bool]:
    """The cached capture for the inputs (None after showing why it cannot run) and whether the model ran.

    Every layer's weights are kept while they fit the memory budget; past it, only ``layer``'s (with a notice),
    so a long text costs one layer's n×n and another layer needs one more forward."""
    status.update(label=t("inputs.running", inputs.state.lang))
    _model_calls.ran = False
    try:
        planned = plan_request(loaded, inputs.state.text, layer, budget_bytes=hosting_policy().weights_budget_bytes)
        result = planned_capture(inputs.spec, inputs.state.text, inputs.state.backend, planned, layer)
    except InspectorError as err:
        status.update(label=t("inputs.run_failed", inputs.state.lang), state="error")
        st.error(str(err))
        return None, False
    if planned.notice:
        st.info(notice_text(planned.notice, inputs.state.lang), icon=":material/memory:")
    for notice in result.notices:
        st.warning(notice_text(notice, inputs.state.lang), icon=":material/memory:")
    return result, _model_calls.ran


@st.cache_data(max_entries=8, ttl=3600, show_spinner="Building the bertviz view…")
def cached_bertviz(kind: str, spec: str, text: str, backend: str, layer: int,
                   head: int | None = None) -> tuple[str, int, list[int]]:
    """bertviz's head or model view as offline HTML, its height, and the layers it shows: every layer when
    they fit the view's drawing limit, else the ones around ``layer``. The head view opens on ``layer`` and
    ``head`` (the ones on screen)."""
    loaded = cached_model(spec)
    planned = plan_request(loaded, text, layer, budget_bytes=hosting_policy().weights_budget_bytes)
    result = planned_capture(spec, text, backend, planned, layer)
    fits = head_view_max_layers(result) if kind == "head" else model_view_max_layers(result)
    # Past the memory budget the capture holds the layer on screen only.
    fits = min(fits, len(result.weights))
    layers = layers_around(result, layer, fits)
    if kind == "head":
        return (head_view_html(result, layers=layers or None, layer=layer if layer in layers else None, head=head),
                head_view_height(result), layers)
    return (model_view_html(result, layers=layers or None), model_view_height(result, layers=layers or None),
            layers)


# Charts that a head click does not change, kept per capture so they are not rebuilt on every click. Keyed by what
# names the capture; the capture itself (``_result``) is not hashed. Altair charts are
# not mutated when drawn, so one object serves every session.
@st.cache_resource(max_entries=32, ttl=3600, show_spinner=False)
def cached_entropy_by_layer_chart(spec: str, text: str, backend: str, held: tuple[int, ...], slide: bool, lang: str,
                                  _result: Capture):
    return entropy_by_layer_chart(head_entropy(_result), slide=slide, lang=lang)


@st.cache_resource(max_entries=32, ttl=3600, show_spinner=False)
def cached_layer_heads_chart(spec: str, text: str, backend: str, held: tuple[int, ...], layer: int,
                             options: HeatmapOptions, slide: bool, lang: str, _result: Capture):
    return layer_heads_chart(layer_views(_result, layer, options), slide=slide, lang=lang)


def clamp_layer_and_head(state: ViewState, num_layers: int, num_heads: int) -> None:
    """Keep the layer and head widgets inside the loaded model, warning if a link asked for more."""
    asked = replace(state, layer=st.session_state.setdefault("layer", 0), head=st.session_state.setdefault("head", 0))
    fitted, warnings = asked.fit(num_layers, num_heads)
    for warning in warnings:
        st.warning(t("sidebar.share_warning", state.lang, warning=escape_markdown(notice_text(warning, state.lang))),
                   icon="⚠️")
    st.session_state["layer"], st.session_state["head"] = fitted.layer, fitted.head


def publish_view(state: ViewState, *, layer: int, head: int) -> None:
    """Write the view into the address bar and show it as a copyable link."""
    state = replace(state, layer=int(layer), head=int(head))
    encoded = encode_view(state)
    url = share_url(st.context.url or "", state)
    fits = link_fits(url)
    if not fits:  # a reload of a longer address would meet the server's HTTP 400 page, not the app
        encoded = without_text(encoded)
    if st.query_params.to_dict() != encoded:
        st.query_params.from_dict(encoded)
    with st.sidebar:
        st.subheader(t("sidebar.share", state.lang))
        if fits:
            st.code(url, language=None, wrap_lines=True)
            st.caption(t("sidebar.share_caption", state.lang))
        else:
            st.info(t("share.too_long", state.lang, length=f"{len(url):,}", limit=f"{MAX_LINK_CHARS:,}"),
                    icon=":material/link_off:")
