"""What every page reads: the model, the text and the backend — chosen in the sidebar, restored once per
session from a share link, and resolved through Streamlit's caches.

This module is UI only: it reads widgets, calls the library, and keeps the two caches (STYLE.md: caching
lives in the UI layer, as thin wrappers). A page calls :func:`sidebar` for the inputs and
:func:`publish_view` at the end so the address bar always holds a link to exactly what is on screen.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, replace

import streamlit as st

from inspector import Capture, InspectorError, LoadedModel, capture, load_model
from inspector.bertviz_views import (head_view_height, head_view_html, head_view_max_layers, layers_around,
                                     model_view_height, model_view_html, model_view_max_layers)
from inspector.charts import entropy_by_layer_chart, layer_heads_chart
from inspector.heatmap import HeatmapOptions, layer_views
from inspector.metrics import head_entropy
from inspector.budget import count_tokens, weights_layers_within_budget
from inspector.examples import EXAMPLES
from inspector.loading import DEFAULT_MODEL, DEFAULT_MODEL_LABEL
from inspector.share import BACKENDS, FLAGS, MAX_TEXT_CHARS, ViewState, decode_view, encode_view, escape_markdown, share_url

OTHER_MODEL = "__other__"
# Suggested hub models: one per architecture family the attention function supports. They load from the
# Hugging Face cache or the network; offline, choosing one explains why it cannot load.
SUGGESTED_MODELS = {
    DEFAULT_MODEL: DEFAULT_MODEL_LABEL,
    "bert-base-uncased": "bert-base-uncased (hub)",
    "distilbert-base-uncased": "distilbert-base-uncased (hub)",
    "gpt2": "gpt2 (hub)",
    "HuggingFaceTB/SmolLM2-135M": "SmolLM2-135M, Llama-style with RoPE and GQA (hub)",
    OTHER_MODEL: "Other: a hub id or a local folder…",
}


@st.cache_resource(show_spinner=False, max_entries=4)
def cached_model(spec: str) -> LoadedModel:
    """One loaded model per spec, shared read-only by every session (the library never mutates it)."""
    return load_model(spec)


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


def _restore_once() -> None:
    """Seed the widgets from the URL the session was opened with; later reruns leave them to the user."""
    if st.session_state.get("_restored"):
        return
    st.session_state["_restored"] = True
    state, warnings = decode_view(st.query_params.to_dict())
    st.session_state["_share_warnings"] = warnings
    if state.model in SUGGESTED_MODELS:
        st.session_state["model"] = state.model
    else:
        st.session_state["model"] = OTHER_MODEL
        st.session_state["model_other"] = state.model
    st.session_state["text"] = state.text
    st.session_state["backend"] = state.backend
    st.session_state["layer"] = state.layer
    st.session_state["head"] = state.head
    for key in FLAGS:
        st.session_state[key] = getattr(state, key)


def _load_example() -> None:
    chosen = st.session_state.get("example")
    for example in EXAMPLES:
        if example.title == chosen:
            st.session_state["text"] = example.text


def _keep_across_pages() -> None:
    """Streamlit drops a widget's value when another page draws a widget with the same key; writing each
    sidebar value back as session state first makes every page's sidebar start from the same inputs."""
    for key in ("model", "model_other", "text", "backend", "example", "layer", "head", *FLAGS):
        if key in st.session_state:
            st.session_state[key] = st.session_state[key]


def sidebar() -> Inputs:
    """Draw the sidebar and return the chosen inputs (layer and head are filled in by the page)."""
    _restore_once()
    _keep_across_pages()
    with st.sidebar:
        for warning in st.session_state.get("_share_warnings", ()):
            st.warning(f"Share link: {escape_markdown(warning)}", icon="⚠️")
        st.header("Input")
        choice = st.selectbox("Model", list(SUGGESTED_MODELS), format_func=SUGGESTED_MODELS.__getitem__, key="model")
        spec = choice
        if choice == OTHER_MODEL:
            spec = st.text_input("Hub id or local folder", key="model_other", placeholder="org/name or /path/to/model",
                                 help="Safetensors weights only; models that need their own code are refused.").strip()
        st.session_state.setdefault("example", None)
        st.selectbox("Examples", [example.title for example in EXAMPLES], index=None, key="example",
                     placeholder="Pick an example text…", on_change=_load_example)
        st.text_area("Text", key="text", height=140, max_chars=MAX_TEXT_CHARS,
                     help="Press Ctrl+Enter or click outside the box to run.")
        st.selectbox("Attention backend", BACKENDS, key="backend",
                     help="auto: Triton on a GPU, blocked PyTorch on a CPU. torch: the blocked PyTorch path. "
                          "triton: the project's Triton FlashAttention kernel (needs a GPU).")
        st.toggle("Slide mode", key="slide", help="Large fonts and colour-blind-safe palettes, for slides.")
    state = ViewState(model=spec or DEFAULT_MODEL, text=st.session_state["text"], backend=st.session_state["backend"],
                      **{key: bool(st.session_state.get(key, False)) for key in FLAGS})
    return Inputs(spec=spec, state=state)


def load(inputs: Inputs, status: Progress) -> LoadedModel | None:
    """The cached model for ``inputs``, or None after showing why it cannot load."""
    if not inputs.spec:
        st.info("Type a hub id (org/name) or the path of a local model folder in the sidebar.")
        return None
    status.update(label="Loading the model…")
    try:
        return cached_model(inputs.spec)
    except InspectorError as err:
        status.update(label="The model could not be loaded", state="error")
        st.error(str(err))
        return None


class _ModelCalls(threading.local):
    """Per script thread: whether the last :func:`run` had to call the model (a cache miss)."""

    ran = False


_model_calls = _ModelCalls()


# Few entries: a 512-token capture of the bundled model with every layer's weights is ~75 MB.
@st.cache_data(max_entries=8, ttl=3600, show_spinner=False)
def cached_capture(spec: str, text: str, backend: str, weights_layers: tuple[int, ...] | None) -> Capture:
    """Entropy and statistics for every layer, exact weights for ``weights_layers`` (None = every layer),
    so choosing another head — or, within the memory budget, another layer — redraws without a forward."""
    _model_calls.ran = True  # runs only on a cache miss, in the session's own script thread
    return capture(cached_model(spec), text, backend=backend,
                   weights="all" if weights_layers is None else weights_layers)


def run(inputs: Inputs, loaded: LoadedModel, layer: int, status: Progress) -> tuple[Capture | None, bool]:
    """The cached capture for the inputs (None after showing why it cannot run) and whether the model ran.

    Every layer's weights are kept while they fit the memory budget; past it, only ``layer``'s, so a
    long text costs one layer's n×n and another layer needs one more forward."""
    status.update(label="Running attention…")
    _model_calls.ran = False
    try:
        n_tokens = count_tokens(loaded, inputs.state.text)
        layers = weights_layers_within_budget(loaded.info, n_tokens, layer)
        result = cached_capture(inputs.spec, inputs.state.text, inputs.state.backend, layers)
    except InspectorError as err:
        status.update(label="The text could not be run", state="error")
        st.error(str(err))
        return None, False
    return result, _model_calls.ran


@st.cache_data(max_entries=8, ttl=3600, show_spinner="Building the bertviz view…")
def cached_bertviz(kind: str, spec: str, text: str, backend: str, layer: int) -> tuple[str, int, list[int]]:
    """bertviz's head or model view as offline HTML, its height, and the layers it shows: every layer when
    they fit the view's drawing limit, else the ones around ``layer``."""
    loaded = cached_model(spec)
    n_tokens = count_tokens(loaded, text)
    result = cached_capture(spec, text, backend, weights_layers_within_budget(loaded.info, n_tokens, layer))
    fits = head_view_max_layers(result) if kind == "head" else model_view_max_layers(result)
    # Past the memory budget the capture holds the layer on screen only.
    fits = min(fits, len(result.weights))
    layers = layers_around(result, layer, fits)
    if kind == "head":
        return head_view_html(result, layers=layers or None), head_view_height(result), layers
    return (model_view_html(result, layers=layers or None), model_view_height(result, layers=layers or None),
            layers)


# Charts that a head click does not change, kept per capture so they are not rebuilt on every click. Keyed by what names the capture; the capture itself (``_result``) is not hashed. Altair charts are
# not mutated when drawn, so one object serves every session.
@st.cache_resource(max_entries=32, ttl=3600, show_spinner=False)
def cached_entropy_by_layer_chart(spec: str, text: str, backend: str, held: tuple[int, ...], slide: bool,
                                  _result: Capture):
    return entropy_by_layer_chart(head_entropy(_result), slide=slide)


@st.cache_resource(max_entries=32, ttl=3600, show_spinner=False)
def cached_layer_heads_chart(spec: str, text: str, backend: str, held: tuple[int, ...], layer: int,
                             options: HeatmapOptions, slide: bool, _result: Capture):
    return layer_heads_chart(layer_views(_result, layer, options), slide=slide)


def clamp_layer_and_head(state: ViewState, num_layers: int, num_heads: int) -> None:
    """Keep the layer and head widgets inside the loaded model, warning if a link asked for more."""
    asked = replace(state, layer=st.session_state.setdefault("layer", 0), head=st.session_state.setdefault("head", 0))
    fitted, warnings = asked.fit(num_layers, num_heads)
    for warning in warnings:
        st.warning(f"Share link: {escape_markdown(warning)}", icon="⚠️")
    st.session_state["layer"], st.session_state["head"] = fitted.layer, fitted.head


def publish_view(state: ViewState, *, layer: int, head: int) -> None:
    """Write the view into the address bar and show it as a copyable link."""
    state = replace(state, layer=int(layer), head=int(head))
    encoded = encode_view(state)
    if st.query_params.to_dict() != encoded:
        st.query_params.from_dict(encoded)
    with st.sidebar:
        st.subheader("Share")
        st.code(share_url(st.context.url or "", state), language=None, wrap_lines=True)
        st.caption("Copy this link (icon at the top right of the box): it reopens this model, text, head and options.")
