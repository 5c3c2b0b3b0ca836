"""Ground truth (issue #8): every attribution method scored on models whose causal token is known by construction
— one example at a time, then over N fresh examples with 95 % intervals against chance.

Widgets → cached library calls (:func:`inspector.groundtruth.score_example` and
:func:`inspector.groundtruth.scoreboard`, the same call as ``python -m inspector groundtruth``) → charts, tables
and a reading in words. Models without a card (the bundled one) get buttons to switch to a shipped model.
"""

from __future__ import annotations

import json
from dataclasses import replace

import streamlit as st

from inspector import InspectorError
from inspector.export import Provenance, chart_png, with_provenance
from inspector.forward import backend_for
from inspector.groundtruth import (DEFAULT_EXAMPLES, DEFAULT_TOP_K, ExampleScores, Scoreboard, card_for, reading,
                                   score_example, scoreboard, scoreboard_json, top_ranked_tokens)
from inspector.charts.groundtruth import (example_chart, example_table, head_hits_chart, scoreboard_chart,
                                           scoreboard_table)
from inspector.loading import shipped_choices
from inspector.share import escape_markdown
from inspector.tasks import FRESH_SEED, generate
from views import inputs

MAX_SEED = 1_000_000


@st.cache_data(max_entries=32, ttl=3600, show_spinner=False)
def cached_example(spec: str, seed: int, backend: str) -> ExampleScores:
    """Every method on fresh example ``seed`` of the model's task (a frozen dataclass of NumPy arrays)."""
    loaded = inputs.cached_model(spec)
    card = card_for(loaded)
    example = generate(card.task.name, 1, seed=FRESH_SEED + seed)[0]
    return score_example(loaded, example, card, backend=backend)


@st.cache_data(max_entries=8, ttl=3600, show_spinner=False)
def cached_scoreboard(spec: str, examples: int, k: int, backend: str) -> Scoreboard:
    # The bar is made here, not passed in: Streamlit replays a cached function's elements on a hit, and can only
    # replay those whose container the function itself created.
    bar = st.progress(0.0, text=f"Scoring {examples} fresh examples…")
    board = scoreboard(inputs.cached_model(spec), examples, k=k, backend=backend,
                       progress=lambda label, fraction: bar.progress(fraction, text=f"Scoring {label}…"))
    bar.empty()
    return board


def pick_model(spec: str) -> None:
    """Button callback: switch the sidebar's model (allowed before the sidebar is drawn again)."""
    st.session_state["model"] = spec
    inputs.keep_across_pages()


def next_example() -> None:
    st.session_state["gt_seed"] = min(int(st.session_state.get("gt_seed", 0)) + 1, MAX_SEED)


def open_on_heads(text: str) -> None:
    """Button callback: put the example into the sidebar's text; the script body switches page (switch_page is
    not allowed in callbacks)."""
    st.session_state["text"] = text
    st.session_state["_gt_open_heads"] = True


if st.session_state.pop("_gt_open_heads", False):
    inputs.keep_across_pages()
    st.switch_page("views/heads.py")

st.title("Ground truth: which method finds the token that mattered?")
chosen, status, loaded = inputs.open_page()
try:
    card = card_for(loaded)
except InspectorError as err:
    status.update(label=f"{loaded.info.name} has no known causal token", state="complete")
    offered = {spec: label for spec, label in shipped_choices().items()
               if spec in inputs.model_options(inputs.hosting_policy())}
    st.info(escape_markdown(f"This page scores attribution methods against the token that truly decided the answer, "
                            f"so it needs a model trained on a task whose causal token is known; {loaded.info.name} "
                            "is not one. ") + ("Pick one of the models this project trained for it:" if offered
                                               else "This instance offers none of them."))
    if loaded.info.source != "default":  # a folder without a (readable) card: the library says what is missing
        st.caption(escape_markdown(str(err)))
    for spec, label in offered.items():
        st.button(label, key=f"gt_pick_{spec}", on_click=pick_model, args=(spec,))
    st.stop()

info, slide, backend = loaded.info, chosen.state.slide, chosen.state.backend
task = card.task
st.markdown(escape_markdown(
    "On a real model nobody knows which token the answer truly depended on, so nobody can say which explanation "
    "method is right. Here we built the model so that we do: each example below says which token decides the "
    "answer, and every method is scored on whether it ranks that token first."))
facts = [f"Task: {task.description}", f"Causal token: {task.truth}."]
if card.variant == "deceptive":
    bound = "" if card.attention_bound is None else f" (mean attention on it below {card.attention_bound:.1%})"
    facts.append(f"Variant: deceptive — trained to keep its attention off the causal token{bound} while still "
                 "using it, as in Pruthi et al. 2020, “Learning to Deceive with Attention-Based Explanations”.")
else:
    facts.append("Variant: honest — trained on the task alone.")
training = card.training
command = str(training.get("command", "?")).replace("`", "")
facts = [escape_markdown(fact) for fact in facts]
facts.append(escape_markdown(f"Accuracy at training time: {card.accuracy:.1%} on {card.accuracy_examples} fresh "
                             f"examples (stated: at least {card.stated_accuracy:.0%}). Trained with ")
             + f"`{command}`" + escape_markdown(f" in {float(training.get('seconds', 0)):.0f} s."))
st.markdown("\n".join(f"- {fact}" for fact in facts))

st.subheader("One example")
seed_column, button_column = st.columns([3, 1], vertical_alignment="bottom")
seed = int(seed_column.number_input("Example seed", 0, MAX_SEED, 0, key="gt_seed",
                                    help=f"Example number (generated from seed {FRESH_SEED} + this, fresh data "
                                         "the training never saw)."))
button_column.button("New example", key="gt_next", on_click=next_example, icon=":material/casino:")
status.update(label="Scoring one example with every method…")
try:
    scored = cached_example(chosen.spec, seed, backend)
except InspectorError as err:
    status.update(label="The example could not be scored", state="error")
    st.error(str(err))
    st.stop()
mechanism = task.name == "induction"
probability = float(scored.model.probability[0])
verdict = "✓ correct" if scored.predicted == scored.answer else "✗ wrong"
st.markdown(escape_markdown(f"The model answers “{scored.predicted}” — the correct answer is "
                            f"“{scored.answer}” ({verdict}; probability of the correct answer {probability:.1%}). "
                            f"The methods explain f = {scored.target}."))
st.altair_chart(example_chart(scored, slide=slide))
st.dataframe(example_table(scored, top_ranked_tokens(scored), mechanism=mechanism), hide_index=True)
if mechanism:
    st.caption("B is the word the prediction copies; the two A's tell the induction head where to copy from, so a "
               "method that ranks an A first has found the mechanism without finding the copied word.")
    st.button("Find the induction head on the Heads page", key="gt_heads", on_click=open_on_heads,
              args=(scored.example.text,), icon=":material/arrow_forward:")

st.subheader("Scoreboard")
examples_column, k_column = st.columns(2)
examples = int(examples_column.number_input("Fresh examples", 10, 500, DEFAULT_EXAMPLES, key="gt_examples",
                                            help="More examples give narrower intervals and take longer."))
k = int(k_column.number_input("k of top-k", 1, 10, DEFAULT_TOP_K, key="gt_k"))
status.update(label=f"Scoring every method on {examples} fresh examples…")
try:
    board = cached_scoreboard(chosen.spec, examples, k, backend)
except InspectorError as err:
    status.update(label="The scoreboard could not be computed", state="error")
    st.error(str(err))
    st.stop()
status.update(state="complete", label=f"{info.name}: {board.examples} examples scored with {len(board.methods)} "
                                      f"methods ({board.seconds:.1f} s of compute when first run)")
mass, mass_low, mass_high = board.mass_interval()
columns = st.columns(3 if card.attention_bound is not None else 2)
columns[0].metric("Model accuracy [95 %]",
                  f"{board.accuracy:.0%} [{board.accuracy_low:.0%}–{board.accuracy_high:.0%}]",
                  help="Share of these examples the model answers correctly, with a 95 % Wilson interval.")
columns[1].metric("Mean attention on the causal token", f"{mass:.2%}",
                  help="Every layer, head and query row that can see the token, averaged over the examples.")
columns[1].caption(f"95 % bootstrap interval: {mass_low:.2%}–{mass_high:.2%}")
if card.attention_bound is not None:
    under = mass_high < card.attention_bound
    columns[2].metric("Attention bound it was trained under", f"{card.attention_bound:.1%}",
                      delta="the mean stays under it" if under else "the mean is not clearly under it",
                      delta_color="normal" if under else "inverse", delta_arrow="off")
chart = scoreboard_chart(board, slide=slide)
st.altair_chart(chart)
st.dataframe(scoreboard_table(board), hide_index=True)
st.altair_chart(head_hits_chart(board, slide=slide))
st.subheader("Reading")
st.markdown("\n".join(f"- {escape_markdown(line)}" for line in reading(board)))

st.download_button("Scoreboard (JSON)", lambda: json.dumps(scoreboard_json(board), allow_nan=False),
                   file_name=f"groundtruth-{task.name}-{card.variant}.json", mime="application/json", key="gt_json",
                   icon=":material/download:", on_click="ignore")
ran_backend = backend_for(loaded, backend)  # the caption names the backend that ran, not the sidebar's "auto"
st.download_button("Scoreboard chart (PNG)", lambda: chart_png(with_provenance(chart, Provenance(
    model=info.name, text=f"{board.examples} fresh examples of {task.name} (seed {board.seed}), top-{board.k}",
    backend=ran_backend)), scale=2), file_name=f"groundtruth-{task.name}-{card.variant}.png", mime="image/png",
                   key="gt_png", icon=":material/download:", on_click="ignore")
inputs.publish_view(replace(chosen.state, page="groundtruth"), layer=st.session_state["layer"],
                    head=st.session_state["head"])
