"""Heads: an entropy health report, attention sinks and special tokens, head redundancy, head importance and a
pruning curve — each statistic next to what ablating the heads does to the model's output.

Widgets → one cached library call (:func:`inspector.heads.head_report`, the same call as
``python -m inspector heads``) → charts and a plain-words report. Clicking a head opens it on the Inspect page.
"""

from __future__ import annotations

import json
from dataclasses import replace

import streamlit as st

from inspector import InspectorError
from inspector.charts.base import HEAD_SELECTION, selected_head
from inspector.export import Provenance, chart_png, with_provenance
from inspector.heads import HeadReport, head_report, health_report, read_corpus, report_json, with_thresholds
from inspector.charts.heads import head_grid_chart, head_matrix_chart, mds_chart, pruning_chart
from inspector.metrics import TOKEN_CATEGORIES, HealthThresholds
from inspector.redundancy import LN2
from inspector.share import escape_markdown
from views import inputs
from views.census_folder import CENSUS_MODE, show_census

GRID_LABELS = {"entropy": "Entropy", "sink": "Sink score", "induction": "Induction",
               "ablation": "Importance (ablation)", "gradient": "Importance (gradient)"}


# Reports are small (NumPy arrays of heads × heads at most, plus per-text sink scores). The thresholds are not
# part of the key: they only relabel heads (with_thresholds), so moving a threshold never reruns the model.
@st.cache_data(max_entries=8, ttl=3600, show_spinner=False)
def cached_report(spec: str, texts: tuple[str, ...], backend: str, ablation: str) -> HeadReport:
    # The bar is made here, not passed in: Streamlit replays a cached function's elements on a hit, and can only
    # replay those whose container the function itself created.
    bar = st.progress(0.0, text=f"Measuring {len(texts)} text(s)…")
    report = head_report(inputs.cached_model(spec), texts, backend=backend, ablation=ablation,
                         progress=lambda done, total, label: bar.progress(done / total, text=label))
    bar.empty()
    return report


def open_in_inspect() -> None:
    """Grid click → remember the head; the script body switches page (switch_page is not allowed in callbacks)."""
    picked = selected_head(st.session_state["heads_grid"].selection)
    if picked is not None:
        st.session_state["_heads_open"] = picked


if "_heads_open" in st.session_state:
    inputs.keep_across_pages()
    st.session_state["layer"], st.session_state["head"] = st.session_state.pop("_heads_open")
    st.switch_page("views/inspect.py")

st.title("Heads")
st.caption("Which heads are healthy, which attend to sinks, which are redundant, and which matter — every "
           "statistic is paired with what happens to the model's output when the head is removed.")
chosen, status, loaded = inputs.open_page()
info = loaded.info

mode_column, ablation_column = st.columns(2)
try:
    corpus = tuple(read_corpus())
except InspectorError as err:
    corpus = ()
    st.warning(str(err))
hosted = inputs.hosting_policy().hosted
modes = ["This text", f"Corpus ({len(corpus)} sentences)"] + ([] if hosted else [CENSUS_MODE])
mode = mode_column.radio("Texts", modes, key="heads_mode",
                         horizontal=True, disabled=not corpus,
                         help="The sidebar's text, or the bundled corpus (assets/corpus) so a verdict is not drawn "
                              "from one sentence — corpus numbers are means over its texts —, or a census folder "
                              "written by `python -m inspector census` (local instances only).")
ablation = ablation_column.radio("Remove a head by", ["zero", "mean"], key="heads_ablation", horizontal=True,
                                 help="zero: its output is set to 0. mean: replaced by its mean over the text, "
                                      "keeping its constant offset and removing only what depends on the token.")
with st.expander("Health thresholds"):
    columns = st.columns(3)
    collapsed = columns[0].number_input("Collapsed below", 0.0, 1.0, 0.1, 0.01, key="heads_collapsed",
                                        help="Normalised entropy under this: nearly one-hot rows.")
    diffuse = columns[1].number_input("Diffuse above", 0.0, 1.0, 0.9, 0.01, key="heads_diffuse",
                                      help="Normalised entropy over this: nearly uniform rows.")
    sink = columns[2].number_input("Sink above", 0.01, 1.0, 0.3, 0.01, key="heads_sink",
                                   help="Gu et al. 2024: a key whose mean received weight exceeds this is a sink.")

if mode == CENSUS_MODE:
    show_census(collapsed, diffuse, sink, hosted=hosted, lang=st.session_state.get("lang", "en"),
                slide=chosen.state.slide)
if mode == "This text":
    texts = (chosen.state.text,)
else:
    size = st.number_input("Sentences from the corpus", 2, len(corpus), len(corpus), key="heads_corpus_size",
                           help="Fewer sentences run faster; the verdict rests on fewer examples.")
    texts = corpus[:size]
status.update(label=f"Measuring {info.num_layers * info.num_heads} heads on {len(texts)} text(s)…")
try:
    thresholds = HealthThresholds(collapsed=collapsed, diffuse=diffuse, sink=sink)
    report = with_thresholds(cached_report(chosen.spec, texts, chosen.state.backend, ablation), thresholds)
except InspectorError as err:
    status.update(label="The head report could not be computed", state="error")
    st.error(str(err))
    st.stop()
status.update(state="complete", label=(f"{info.name}: {len(texts)} text(s), {report.backend} backend, "
                                       f"{sum(report.timings.values()):.1f} s of measurement"))
slide = chosen.state.slide
layer, head = st.session_state["layer"], st.session_state["head"]

st.subheader("Every head at a glance")
metric = st.segmented_control("Colour by", list(GRID_LABELS), format_func=GRID_LABELS.__getitem__,
                              key="heads_metric", default="entropy") or "entropy"
grid = head_grid_chart(report, metric, selected=(layer, head), slide=slide)
st.altair_chart(grid, on_select=open_in_inspect, selection_mode=HEAD_SELECTION, key="heads_grid")
st.caption(f"Importance by ablation = {report.change_name} when the head alone is removed ({report.ablation_mode}); "
           "by gradient = Michel et al.'s |∂L/∂gate| at gate 1, divided by its layer's ℓ2 norm. "
           "Induction = Olsson et al.'s score: a repeated token's attention on the token that followed its earlier "
           "occurrence (grey when the text repeats no token).")

st.subheader("Health report")
st.markdown("\n".join(f"- {escape_markdown(line)}" for line in health_report(report)))

st.subheader("Where the attention goes (Clark et al. 2019) and what it moves (Kobayashi et al. 2020)")
stats = report.statistics
table = {"head": [report.head_name(i) for i in range(stats.entropy.size)]}
for index, category in enumerate(TOKEN_CATEGORIES):
    table[f"→ {category}"] = stats.token_mass[..., index].ravel()
for index, category in enumerate(TOKEN_CATEGORIES[:2]):
    table[f"‖αf(x)‖ → {category}"] = stats.norm_token_mass[..., index].ravel()
table["first-token sink score"] = stats.first_token_sink.ravel()
table["mean distance (tokens)"] = stats.mean_distance.ravel()
st.dataframe(table, hide_index=True, height=260,
             column_config={name: st.column_config.NumberColumn(format="%.3f") for name in list(table)[1:]})
st.caption("Shares of each head's attention budget, mean over queries; ‖αf(x)‖ columns: the same share of the "
           "norm-weighted attention, which is small when a sink receives weight but sends little value.")

st.subheader("Redundancy")
js_tab, cka_tab, map_tab = st.tabs(["Attend alike (JS divergence)", "Write alike (CKA)", "Map (MDS)"])
with js_tab:
    st.altair_chart(head_matrix_chart(report, stats.js_divergence, title="Jensen–Shannon divergence between heads",
                                      legend="JS divergence (nats)", domain=(0.0, LN2), slide=slide))
with cka_tab:
    st.altair_chart(head_matrix_chart(report, stats.contribution_cka, title="What heads write: linear CKA",
                                      legend="CKA of residual contributions", domain=(0.0, 1.0), scheme="magma",
                                      slide=slide))
with map_tab:
    st.altair_chart(mds_chart(report, slide=slide))
pairs = report.pairs
st.dataframe({"pair": [" & ".join(report.head_name(h) for h in pair) for pair in pairs.heads],
              "JS divergence": pairs.js_divergence, "ablate first": pairs.change_first,
              "ablate second": pairs.change_second, "ablate both": pairs.change_both}, hide_index=True,
             column_config={name: st.column_config.NumberColumn(format="%.4f")
                            for name in ("JS divergence", "ablate first", "ablate second", "ablate both")})
st.caption(f"The most attention-alike pairs, each ablated alone and together ({report.change_name}).")

st.subheader("Pruning")
pruning = pruning_chart(report, slide=slide)
st.altair_chart(pruning)

st.download_button("Numbers (JSON)", lambda: json.dumps(report_json(report), allow_nan=False),
                   file_name="head-report.json", mime="application/json", key="heads_json",
                   icon=":material/download:", on_click="ignore")
st.download_button("Pruning curve (PNG)", lambda: chart_png(with_provenance(pruning, Provenance(
    model=info.name, text=texts[0] if len(texts) == 1 else f"corpus of {len(texts)} texts",
    backend=report.backend)), scale=2), file_name="pruning-curve.png", mime="image/png", key="heads_png",
                   icon=":material/download:", on_click="ignore")
inputs.publish_view(replace(chosen.state, page="heads"), layer=layer, head=head)
