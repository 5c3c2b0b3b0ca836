"""Attention Inspector — type a text and see how every head of a real model spreads its attention.

A thin driver over :mod:`inspector` (DESIGN.md): widgets → one cached library call → charts from
:mod:`inspector.charts`. Run with ``streamlit run app.py``.
"""

from __future__ import annotations

import streamlit as st

from inspector import Capture, InspectorError, LoadedModel, capture, load_model
from inspector.charts import attention_heatmap_chart, entropy_grid_chart, token_labels
from inspector.loading import DEFAULT_MODEL, DEFAULT_MODEL_LABEL
from inspector.metrics import head_entropy

st.set_page_config(page_title="Attention Inspector", page_icon="🔎", layout="wide")

DEFAULT_TEXT = "The animal didn't cross the street because it was too tired."
MODELS = {DEFAULT_MODEL: DEFAULT_MODEL_LABEL}  # spec → label; hub ids and folders join in a later issue
BACKENDS = ("auto", "torch", "triton")
# Tokenising is linear in the text, but a pasted book would still stall the session before the length check.
MAX_TEXT_CHARS = 20_000


@st.cache_resource(show_spinner=False)
def cached_model(spec: str) -> LoadedModel:
    """One loaded model per spec, shared read-only by every session (the library never mutates it)."""
    return load_model(spec)


# Few entries: a 512-token capture with every layer's weights is ~75 MB.
@st.cache_data(max_entries=8, ttl=3600, show_spinner=False)
def cached_capture(spec: str, text: str, backend: str) -> Capture:
    """Every layer's weights are kept, so choosing another layer or head redraws without a new forward."""
    return capture(cached_model(spec), text, backend=backend, weights="all")


with st.sidebar:
    st.header("Input")
    spec = st.selectbox("Model", list(MODELS), format_func=MODELS.__getitem__, key="model")
    model_summary = st.container()
    text = st.text_area("Text", value=DEFAULT_TEXT, key="text", height=140, max_chars=MAX_TEXT_CHARS,
                        help="Press Ctrl+Enter or click outside the box to run.")
    backend = st.selectbox("Attention backend", BACKENDS, key="backend",
                           help="auto picks the fastest backend available here; torch is the plain PyTorch path.")
    run_summary = st.container()

st.title("Attention Inspector")
st.caption("Each query token spends a fixed attention budget (its weights sum to 1) on the keys. "
           "Low entropy: the head looks at a few tokens; high entropy: it spreads its attention out.")

try:
    with st.spinner("Loading the model…"):
        loaded = cached_model(spec)
except InspectorError as err:
    st.error(str(err))
    st.stop()
info = loaded.info
model_summary.caption(f"{info.architecture} · {info.num_layers} layers × {info.num_heads} heads · "
                      f"head size {info.head_dim} · up to {info.max_positions} tokens")

try:
    with st.spinner("Running the model…"):
        result = cached_capture(spec, text, backend)
except InspectorError as err:
    st.error(str(err))
    st.stop()

run_summary.metric("Backend that ran", result.backend)
run_summary.metric("Tokens", f"{len(result.tokens)} / {info.max_positions}")

st.subheader("Tokens")
# st.code shows the tokenizer's strings verbatim and escaped; positions match the chart labels.
st.code("   ".join(token_labels(result.tokens)), language=None, wrap_lines=True)

entropy_column, attention_column = st.columns([2, 3], gap="large")
with attention_column:
    layer_column, head_column = st.columns(2)
    layer = layer_column.selectbox("Layer", range(info.num_layers), key="layer")
    head = head_column.selectbox("Head", range(info.num_heads), key="head")
    st.altair_chart(attention_heatmap_chart(result.weights[layer][head], result.tokens,
                                            title=f"Layer {layer}, head {head}: attention weights"),
                    width="content")
    st.caption("Row = the query token doing the attending; its weights over the key columns sum to 1.")
with entropy_column:
    st.altair_chart(entropy_grid_chart(head_entropy(result), selected=(layer, head)), width="content")
    st.caption("Mean over queries of each row's entropy divided by log(number of visible keys): "
               "0 = all weight on one key, 1 = spread evenly. The outlined cell is the head on the right.")
