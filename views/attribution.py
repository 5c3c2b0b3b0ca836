"""Attribution: is attention an explanation? Per-token scores from attention and from methods that test what
the output needs (gradients, integrated gradients, occlusion …), their agreement, ERASER faithfulness, and
counterfactual attention rows that leave the output unchanged.

Widgets → one cached library call (:func:`inspector.attribution.attribute`) → charts. The adversarial search
is a button: it runs many forward and backward passes, with a progress bar, and its result is kept for the
session.
"""

from __future__ import annotations

import streamlit as st

from inspector import InspectorError
from inspector.attribution import (
    DEFAULT_REFERENCE,
    LONG_TEXT_TOKENS,
    METHOD_LABELS,  # the corpus table names methods as the charts do
    AttributionReport,
    AttributionSettings,
    CorpusAgreement,
    CounterfactualAttention,
    TargetSpec,
    attribute,
    corpus_agreement,
    counterfactual_attention,
)
from inspector.budget import count_tokens
from inspector.charts.attribution import (
    agreement_chart,
    counterfactual_chart,
    decay_chart,
    faithfulness_frame,
    head_tau_chart,
    scores_chart,
)
from inspector.examples import EXAMPLES
from inspector.i18n import t
from inspector.share import escape_markdown
from views import inputs


@st.cache_data(max_entries=8, ttl=3600, show_spinner=False)
def cached_attribution(spec: str, text: str, backend: str, reference: str, token: str | None, class_index: int | None,
                       layer: int, head: int | None, query: str | int | None, removal: str,
                       ig_steps: int) -> AttributionReport:
    """The page's one library call, keyed by everything it depends on (a frozen dataclass of NumPy arrays)."""
    settings = AttributionSettings(layer=layer, head=head, query=query, removal=removal, ig_steps=ig_steps)
    return attribute(inputs.cached_model(spec), text, spec=TargetSpec(reference, token, class_index),
                     settings=settings, backend=backend)


@st.cache_data(max_entries=4, ttl=3600, show_spinner=False)
def cached_corpus(spec: str, backend: str, reference: str, removal: str, ig_steps: int) -> CorpusAgreement:
    settings = AttributionSettings(removal=removal, ig_steps=ig_steps)
    return corpus_agreement(inputs.cached_model(spec), [example.text for example in EXAMPLES],
                            spec=TargetSpec(reference=reference), settings=settings, backend=backend)


st.title("Attribution: is attention an explanation?")
st.caption("Attention weights say where a head read from. Whether the output needed those tokens is a different "
           "question; here every method answers it for one number f computed from your text, and the page measures "
           "how much they agree, how faithful each is, and how much the attention can change with f unchanged.")

# clamp: a link's layer or head past this model gets the same warning as on every other page (issue 18).
chosen, status, loaded = inputs.open_page()
info = loaded.info
slide = chosen.state.slide
lang = chosen.state.lang

with st.expander("What f is, and what the layer-local methods read", expanded=True):
    target_column, layer_column, head_column, query_column = st.columns([3, 1, 1, 1])
    reference, token, class_index = DEFAULT_REFERENCE, None, None
    if info.head == "none":
        reference = target_column.text_input("Reference sentence", DEFAULT_REFERENCE, key="attr_reference",
                                             max_chars=1000, help="f = cosine similarity with this sentence's embedding")
    elif info.head in ("masked-lm", "causal-lm"):
        token = target_column.text_input("Target token (empty: the model's top prediction)",
                                         key="attr_token").strip() or None
    else:
        picked = target_column.selectbox("Class", ["predicted class", *info.labels], key="attr_class")
        class_index = None if picked == "predicted class" else list(info.labels).index(picked)
    layer = layer_column.selectbox("Layer", range(info.num_layers), index=info.num_layers - 1, key="attr_layer")
    head = head_column.selectbox("Head", [None, *range(info.num_heads)], key="attr_head",
                                 format_func=lambda h: "mean over heads" if h is None else str(h))
    query_choice = query_column.selectbox("Query row", ["auto", "first", "last", "index…"], key="attr_query",
                                          help="auto: the predicted token's row for language models, else the last "
                                               "token of a decoder or the first ([CLS]) of an encoder")
    query = None if query_choice == "auto" else query_choice
    if query_choice == "index…":
        query = int(st.number_input("Query token index", min_value=0, max_value=info.max_positions - 1, value=0,
                                    key="attr_query_index"))
    removal_column, steps_column, level_column = st.columns(3)
    removal = removal_column.radio("Removal (occlusion and ERASER)", ["mask", "delete"], horizontal=True,
                                   key="attr_removal", format_func={"mask": "replace by [MASK]", "delete": "delete"}.get)
    ig_steps = steps_column.select_slider("Integrated-gradients steps", [8, 16, 32, 64], value=16, key="attr_ig_steps")
    words = level_column.toggle("Words, not pieces", key="attr_words", help="A word's score = sum over its pieces.")

try:
    n_tokens = count_tokens(loaded, chosen.state.text)
except InspectorError as err:
    status.update(label="The text could not be run", state="error")
    st.error(str(err))
    st.stop()
if n_tokens > LONG_TEXT_TOKENS and not st.toggle(f"Run every method on all {n_tokens} tokens (slow)", key="attr_long"):
    st.info(f"The text has {n_tokens} tokens. Occlusion, value zeroing and ERASER run about one forward per token and "
            f"per removal, so past {LONG_TEXT_TOKENS} tokens the page asks first; turn on the toggle above, or shorten "
            "the text.")
    st.stop()
status.update(label="Computing every method, agreement and faithfulness (gradients, integrated gradients, occlusion, "
                    "ERASER removals)…")
try:
    with st.spinner(t("attribution.computing", chosen.state.lang), show_time=True):  # ~16 s when first run on CPU
        report = cached_attribution(chosen.spec, chosen.state.text, chosen.state.backend, reference, token,
                                    class_index, layer, head, query, removal, ig_steps)
except InspectorError as err:
    status.update(label="The attribution could not be computed", state="error")
    st.error(str(err))
    st.stop()
total = sum(report.timings.values())
status.update(state="complete", label=f"Attributed f on {len(report.tokens)} tokens with {len(report.scores)} methods "
                                      f"({total:.1f} s of compute when first run)")

target = report.target
st.subheader("The target f(x)")
st.markdown(escape_markdown(f"f(x) = {target.value:.4g}: {target.description}."))
ig = report.ig
if ig is not None:
    st.caption(escape_markdown(f"Integrated gradients: {ig.steps} steps ({ig.internal_batch_size} per batch), baseline "
                               f"= {ig.baseline} (f = {ig.baseline_value:.4g}); convergence delta {ig.delta:.2g} "
                               f"(Σ attributions − (f(x) − f(baseline)))."))
for method, reason in report.skipped.items():
    st.warning(escape_markdown(f"{method} could not run: {reason}"))

st.subheader("Per-token scores")
st.altair_chart(scores_chart(report, words=words, slide=slide))
st.caption(f"Layer-local methods read layer {report.layer}, "
           f"{'the mean over heads' if report.head is None else f'head {report.head}'}, query row {report.query} "
           f"(“{escape_markdown(report.tokens[report.query])}”). Signed methods: blue supports f, red works "
           "against it.")

st.subheader("Agreement")
agreed = report.agreement
kind = st.radio("Measure", ["Kendall τ", "Spearman ρ", f"top-{agreed.k} overlap"], horizontal=True, key="attr_measure")
matrix = {"Kendall τ": agreed.kendall, "Spearman ρ": agreed.spearman}.get(kind, agreed.top_k)
low, high = agreed.random_tau
st.altair_chart(agreement_chart(agreed.methods, matrix, name=kind, low=0.0 if "overlap" in kind else -1.0, slide=slide,
                                subtitle=[f"Over the {int((~report.protected).sum())} content tokens. Two random "
                                          f"rankings give τ in [{low:.2f}, {high:.2f}] 95% of the time."]))
if agreed.head_tau is not None:
    st.altair_chart(head_tau_chart(agreed.head_tau, slide=slide))
if st.button("Agreement over the example texts, with bootstrap intervals", key="attr_corpus"):
    with st.spinner("Attributing every example text…"):
        try:
            corpus = cached_corpus(chosen.spec, chosen.state.backend, reference, removal, ig_steps)
        except InspectorError as err:
            st.error(str(err))
            corpus = None
    if corpus is not None:
        st.altair_chart(agreement_chart(corpus.methods, corpus.mean, name="mean Kendall τ", slide=slide,
                                        subtitle=[f"Mean over {len(corpus.per_text)} example texts."]))
        pairs = [{"method": METHOD_LABELS[a], "vs": METHOD_LABELS[b], "mean τ": corpus.mean[i, j],
                  "95% low": corpus.low[i, j], "95% high": corpus.high[i, j]} for i, a in enumerate(corpus.methods)
                 for j, b in enumerate(corpus.methods) if j > i]
        st.dataframe(pairs, hide_index=True)

st.subheader("Faithfulness (ERASER)")
faithful = report.faithfulness
removed = f"replaced by {faithful.replacement}" if faithful.removal == "mask" else "deleted"
st.caption(escape_markdown(f"Comprehensiveness f(x) − f(x without the top tokens) — higher is better; sufficiency "
                           f"f(x) − f(only the top tokens) — lower is better; bins "
                           f"{', '.join(f'{b:.0%}' for b in faithful.bins)} of the content tokens, removed tokens "
                           f"{removed}; AOPC = the mean over bins. Flip: {faithful.flip_rule_text(lang)}."))
st.dataframe(faithfulness_frame(faithful), hide_index=True)
st.altair_chart(decay_chart(faithful, slide=slide))

st.subheader("Counterfactual attention")
cf = report.counterfactual
key = (chosen.spec, chosen.state.text, chosen.state.backend, reference, token, class_index, layer, head, report.query)
adversarial: CounterfactualAttention | None = st.session_state.get("attr_adversarial", {}).get(key)
if st.button("Run the adversarial search (5 candidates, Adam lr 0.01, up to 500 steps)", key="attr_adversarial_run"):
    bar = st.progress(0.0, text="adversarial search…")
    try:
        adversarial = counterfactual_attention(
            loaded, chosen.state.text, spec=TargetSpec(reference, token, class_index), layer=layer, head=head,
            query=report.query, backend=chosen.state.backend, progress=lambda label, done: bar.progress(done, text=label))
        st.session_state["attr_adversarial"] = {key: adversarial}
    except InspectorError as err:
        st.error(str(err))
    bar.empty()
shown = adversarial or cf
if shown is not None:
    uniform_column, permutation_column, adversarial_column = st.columns(3)
    uniform_column.metric("Uniform row: |Δf|", f"{shown.uniform_change:.3g}", help=f"JSD {shown.uniform_jsd:.3f} nats")
    permutation_column.metric(f"{len(shown.permutation_changes)} permutations: median |Δf|",
                              f"{shown.permutation_median:.3g}", help=f"largest weight in the row {shown.max_weight:.3f}")
    if shown.adversarial is not None:
        adversarial_column.metric("Adversarial row: JSD (nats)", f"{shown.adversarial_jsd:.3f}",
                                  help=f"|Δf| {shown.adversarial_change:.3g} ≤ ε = {shown.epsilon:g}, "
                                       f"{shown.adversarial_steps} steps, {shown.adversarial_seconds:.1f} s")
    st.altair_chart(counterfactual_chart(report.tokens, shown, slide=slide))
    st.info(escape_markdown(shown.verdict_text(lang)))

inputs.publish_view(chosen.state, layer=layer, head=0 if head is None else head)
