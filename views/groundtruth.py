"""Ground truth (issue #8): every attribution method scored on models whose causal token is known by construction
— one example at a time, then over N fresh examples with 95 % intervals against chance.

Widgets → cached library calls (:func:`inspector.analyses.groundtruth.score_example` and
:func:`inspector.analyses.groundtruth.scoreboard`, the same call as ``python -m inspector groundtruth``) → charts,
tables
and a reading in words. Models without a card (the bundled one) get buttons to switch to a shipped model.
"""

from __future__ import annotations

import json
import time
from dataclasses import replace

import streamlit as st

from inspector import InspectorError
from inspector.analyses.groundtruth import (
    DEFAULT_EXAMPLES,
    DEFAULT_TOP_K,
    FEWER_EXAMPLES,
    FIRST_VIEW_S,
    ExampleScores,
    Scoreboard,
    ScoredExamples,
    card_for,
    score_example,
    score_examples,
    scoreboard,
    scoreboard_json,
    top_ranked_tokens,
)
from inspector.analyses.tasks import FRESH_SEED, generate
from inspector.base.errors import error_text
from inspector.base.i18n import t
from inspector.charts.groundtruth import (
    example_chart,
    example_table,
    head_hits_chart,
    scoreboard_chart,
    scoreboard_table,
)
from inspector.charts.sentences.groundtruth import reading, target_words, task_words
from inspector.core.forward import backend_for
from inspector.core.loading import model_label, shipped_choices
from inspector.output.export import Provenance, screen_title
from inspector.output.share import escape_markdown
from inspector.serving.jobs import count_limit
from views import session, share_state, sidebar
from views.export_buttons import export_buttons
from views.progress_bar import progress_bar

MAX_SEED = 1_000_000
MIN_EXAMPLES, MAX_EXAMPLES = 10, 500  # the scoreboard's range on a machine of one's own (a hosted one: count_limit)
CACHE_TTL_S = 3600  # an hour: every cached example and scoreboard


@st.cache_data(max_entries=32, ttl=CACHE_TTL_S, show_spinner=False)
def cached_example(spec: str, seed: int, backend: str) -> ExampleScores:
    """Every method on fresh example ``seed`` of the model's task (a frozen dataclass of NumPy arrays)."""
    loaded = session.cached_model(spec)
    card = card_for(loaded)
    example = generate(card.task.name, 1, seed=FRESH_SEED + seed)[0]
    return score_example(loaded, example, card, backend=backend)


@st.cache_data(max_entries=32, ttl=CACHE_TTL_S, show_spinner=False)
def cached_first_examples(spec: str, examples: int, backend: str, _total: int, _lang: str) -> ScoredExamples:
    """The first ``examples`` of every request on this model, scored: how fast scoring goes now, and a part of any
    larger scoreboard (never scored twice). The bar counts towards the request's ``_total``."""
    with progress_bar(t("gt.progress_start", _lang, n=_total),
                      lambda done, total, note: t("gt.progress", _lang, done=min(total, done + 1), n=_total)) as bar:
        def show(done: int, total: int, note: str) -> None:
            st.session_state["_gt_progress"] = done  # what the Stop button reports
            bar(done, total, note)

        return score_examples(session.cached_model(spec), examples, backend=backend, progress=show)


# A scoreboard is a few KB (ranks of N examples × methods): kept an hour for every session of this server, so a
# revisit or another visitor with the same model, seed, size and k gets it without scoring again (issue 31;
# benchmarks/groundtruth_cache.py measures both views).
@st.cache_data(max_entries=32, ttl=CACHE_TTL_S, show_spinner=False)
def cached_scoreboard(spec: str, examples: int, k: int, backend: str, _lang: str,
                      _first: ScoredExamples | None = None) -> Scoreboard:
    # The bar is made here, not passed in: Streamlit replays a cached function's elements on a hit, and can only
    # replay those whose container the function itself created. The language only words the bar, and _first (the
    # first examples, scored already) only saves time: neither is part of the key.
    # done examples are scored when example done + 1 starts.
    with progress_bar(t("gt.progress_start", _lang, n=examples),
                      lambda done, total, note: t("gt.progress", _lang, done=min(total, done + 1), n=total)) as bar:
        def show(done: int, total: int, note: str) -> None:
            st.session_state["_gt_progress"] = done  # what the Stop button reports
            bar(done, total, note)

        return scoreboard(session.cached_model(spec), examples, k=k, backend=backend, progress=show, scored=_first)


@st.cache_resource
def finished_scoreboards() -> dict[tuple, float]:
    """The requests (model, examples, k, backend) whose whole scoreboard this server has computed, and when: while
    its cache entry lives, shown whole (a cache hit) without looking at the first examples' pace."""
    return {}


def whole_board_cached(request: tuple) -> bool:
    """``request``'s whole scoreboard was computed within the cache's lifetime (one evicted by newer entries before
    then is scored again whole, at once)."""
    return time.monotonic() - finished_scoreboards().get(request, -float("inf")) < CACHE_TTL_S


def score_all(request: tuple) -> None:
    """Scoring was slow and the page showed the first examples of ``request``: the reader asks for all of them."""
    st.session_state["_gt_all"] = request


def stop_scoring(request: tuple, examples: int) -> None:
    """Stop button → remember which request was stopped and how far it got. The click's rerun interrupts the
    scoring; this flag keeps the rerun from starting it again."""
    st.session_state["_gt_stopped"] = {"request": request, "done": st.session_state.get("_gt_progress", 0),
                                       "examples": examples}


def score_again(examples: int | None = None) -> None:
    """After a stop: score again, with ``examples`` examples when given (fewer: quicker on a busy server)."""
    st.session_state.pop("_gt_stopped", None)
    if examples is not None:
        st.session_state["gt_examples"] = examples


def pick_model(spec: str | None) -> None:
    """Button callback: the model this page scores (None: the sidebar's again). The page's own choice: the sidebar's
    model, and with it every other page's view, stays as it is (issue 31)."""
    if spec is None:
        st.session_state.pop("gt_model", None)
    else:
        st.session_state["gt_model"] = spec


def next_example() -> None:
    st.session_state["gt_seed"] = min(int(st.session_state.get("gt_seed", 0)) + 1, MAX_SEED)


def open_on_heads(text: str, spec: str) -> None:
    """Button callback: put the example and its model into the sidebar — the reader asked to see them on the Heads
    page — and the script body switches page (switch_page is not allowed in callbacks)."""
    st.session_state["text"] = text
    if spec in sidebar.model_options(session.hosting_policy()):
        st.session_state["model"] = spec
        st.session_state.pop("gt_model", None)  # the sidebar's model is this page's again
    st.session_state["_gt_open_heads"] = True


if st.session_state.pop("_gt_open_heads", False):
    share_state.keep_across_pages()
    st.switch_page("views/heads.py")

heading = st.container()  # the title is in the sidebar's language, known only once the sidebar is drawn
# It scores its own examples, not the sidebar's text, and it reads no layer or head: nothing to warn about or clamp.
chosen, status, loaded = sidebar.open_page(reads_text=False, clamp=False)
lang = chosen.state.lang
heading.title(t("gt.title", lang))
own_model = st.session_state.get("gt_model")
if own_model is not None and own_model not in sidebar.model_options(session.hosting_policy()):
    own_model = None  # no longer offered (a hosted instance's list)
if own_model is not None and own_model != chosen.spec:
    # This page's own model: loaded here, the sidebar's left as it is.
    loaded = session.load(replace(chosen, spec=own_model), status)
    if loaded is None:
        st.stop()
    own_column, back_column = st.columns([3, 1], vertical_alignment="center")
    own_column.caption(escape_markdown(t("gt.own_model", lang, model=sidebar.shown_model_name(own_model, lang),
                                         sidebar=sidebar.shown_model_name(chosen.spec, lang))))
    back_column.button(t("gt.sidebar_model", lang), key="gt_back", on_click=pick_model, args=(None,),
                       icon=":material/undo:")
spec = own_model or chosen.spec
try:
    card = card_for(loaded)
except InspectorError as err:
    model_name = sidebar.shown_model_name(loaded.info.name, lang)
    status.update(label=t("gt.no_card", lang, model=model_name), state="complete")
    offered = {option: label for option, label in shipped_choices().items()
               if option in sidebar.model_options(session.hosting_policy())}
    st.info(escape_markdown(t("gt.needs_card", lang, model=model_name))
            + t("gt.pick_model" if offered else "gt.none_offered", lang))
    if loaded.info.source != "default":  # a folder without a (readable) card: the library says what is missing
        st.caption(escape_markdown(error_text(err, lang)))
    for option, label in offered.items():
        st.button(sidebar.model_choice_label(option, label, lang), key=f"gt_pick_{option}", on_click=pick_model,
                  args=(option,))
    st.stop()

info, slide, backend = loaded.info, chosen.state.slide, chosen.state.backend
task = card.task
st.markdown(escape_markdown(t("gt.intro", lang)))
facts = [t("gt.fact_task", lang, description=task_words(task, "description", lang)),
         t("gt.fact_truth", lang, truth=task_words(task, "truth", lang))]
if card.variant == "deceptive":
    bound = "" if card.attention_bound is None else t("gt.fact_bound", lang, bound=f"{card.attention_bound:.1%}")
    facts.append(t("gt.fact_deceptive", lang, bound=bound))
else:
    facts.append(t("gt.fact_honest", lang))
training = card.training
command = str(training.get("command", "?")).replace("`", "")
facts = [escape_markdown(fact) for fact in facts]
facts.append(escape_markdown(t("gt.fact_accuracy", lang, accuracy=f"{card.accuracy:.1%}",
                               examples=card.accuracy_examples, stated=f"{card.stated_accuracy:.0%}"))
             + f"`{command}`" + escape_markdown(t("gt.fact_seconds", lang,
                                                  seconds=f"{float(training.get('seconds', 0)):.0f}")))
st.markdown("\n".join(f"- {fact}" for fact in facts))

st.subheader(t("gt.one_example", lang))
seed_column, button_column = st.columns([3, 1], vertical_alignment="bottom")
seed = int(seed_column.number_input(t("gt.seed", lang), 0, MAX_SEED, 0, key="gt_seed",
                                    help=t("gt.seed_help", lang, seed=FRESH_SEED)))
button_column.button(t("gt.new_example", lang), key="gt_next", on_click=next_example, icon=":material/casino:")
status.update(label=t("gt.scoring_example", lang))
try:
    scored = cached_example(spec, seed, backend)
except InspectorError as err:
    status.update(label=t("gt.example_failed", lang), state="error")
    session.show_error(err, lang)
    st.stop()
mechanism = task.name == "induction"
probability = float(scored.model.probability[0])
verdict = t("gt.correct" if scored.predicted == scored.answer else "gt.wrong", lang)
st.markdown(escape_markdown(t("gt.answer", lang, predicted=scored.predicted, answer=scored.answer, verdict=verdict,
                              probability=f"{probability:.1%}", target=target_words(scored, task.kind, lang))))
ran_backend = backend_for(loaded, backend)  # the caption names the backend that ran, not the sidebar's "auto"
example_figure = example_chart(scored, slide=slide, lang=lang)
st.altair_chart(screen_title(example_figure))
export_buttons(f"groundtruth-{task.name}-example-{seed}", example_figure,
               Provenance(model=info.name, text=scored.example.text, backend=ran_backend), lang, "gt_example")
st.dataframe(example_table(scored, top_ranked_tokens(scored), mechanism=mechanism, lang=lang), hide_index=True)
if mechanism:
    st.caption(t("gt.mechanism_caption", lang))
    st.button(t("gt.open_heads", lang), key="gt_heads", on_click=open_on_heads,
              args=(scored.example.text, spec), icon=":material/arrow_forward:")

st.subheader(t("gt.scoreboard", lang))
examples_column, k_column = st.columns(2)
most = count_limit("groundtruth", session.hosting_policy()) or MAX_EXAMPLES  # this server's range (issue 45)
fewest = min(MIN_EXAMPLES, most)
examples = int(examples_column.number_input(t("gt.examples", lang), fewest, most, min(DEFAULT_EXAMPLES, most),
                                            key="gt_examples", help=t("gt.examples_help", lang)))
k = int(k_column.number_input(t("gt.k", lang), 1, 10, DEFAULT_TOP_K, key="gt_k"))
status.update(label=t("gt.scoring_board", lang, n=examples))
# Scoring takes seconds on a quiet machine and minutes on a busy one: a Stop button while it runs, and a stopped
# request stays stopped until asked again — at its size or at a smaller one.
request = (spec, examples, k, backend)
stopped = st.session_state.get("_gt_stopped")
if stopped is not None and stopped["request"] == request:
    status.update(state="complete", label=t("gt.stopped", lang, done=stopped["done"], n=stopped["examples"]))
    st.info(t("gt.stopped", lang, done=stopped["done"], n=stopped["examples"]))
    with st.container(horizontal=True):
        st.button(t("gt.score_again", lang, n=examples), key="gt_again", on_click=score_again,
                  icon=":material/replay:")
        if examples > FEWER_EXAMPLES:
            st.button(t("gt.score_fewer", lang, n=FEWER_EXAMPLES), key="gt_fewer", on_click=score_again,
                      args=(FEWER_EXAMPLES,), icon=":material/speed:")
    share_state.publish_view(replace(chosen.state, page="groundtruth", model=spec), layer=st.session_state["layer"],
                             head=st.session_state["head"])
    st.stop()
stop_slot = st.empty()
st.session_state["_gt_progress"] = 0
stop_slot.button(t("gt.stop", lang), key="gt_stop", on_click=stop_scoring, args=(request, examples),
                 icon=":material/stop_circle:")
try:
    job = session.plan_job("groundtruth", loaded, lang, count=examples)  # a hosted instance's limits
    with job.running():
        # The first examples first, always (a part of the whole, never scored twice): when all would take longer
        # than the first view's target at their pace — a busy server — their scoreboard is shown and the rest is
        # scored on request (issue 31, item 5).
        count, first, first_only = job.keep, None, False
        if count > FEWER_EXAMPLES and not whole_board_cached(request):
            first = cached_first_examples(spec, FEWER_EXAMPLES, backend, count, lang)
            first_only = st.session_state.get("_gt_all") != request and first.pace(count) > FIRST_VIEW_S
        board = cached_scoreboard(spec, FEWER_EXAMPLES if first_only else count, k, backend, lang, first)
except InspectorError as err:
    status.update(label=t("gt.board_failed", lang), state="error")
    session.show_error(err, lang)
    st.stop()
stop_slot.empty()
status.update(state="complete", label=t("gt.board_done", lang, model=sidebar.shown_model_name(info.name, lang),
                                        n=board.examples, methods=len(board.methods), seconds=f"{board.seconds:.1f}"))
if first_only:  # the button under the note, not beside it: a side column cut its label to "为全部 10…" at 1000 px
    st.info(t("gt.first_only", lang, n=board.examples, total=count, seconds=f"{first.pace(count) - first.seconds:.0f}"),
            icon=":material/speed:")
    st.button(t("gt.score_all", lang, n=count), key="gt_all", on_click=score_all, args=(request,),
              icon=":material/playlist_add:")
else:
    finished_scoreboards()[request] = time.monotonic()
mass, mass_low, mass_high = board.mass_interval()
columns = st.columns(3 if card.attention_bound is not None else 2)
# Three metrics fit one row of a 1000 px window only with short labels and short values: the full wording is in
# each help, the intervals in a caption under the value.
columns[0].metric(t("gt.metric_accuracy_short", lang), f"{board.accuracy:.0%}",
                  help=t("gt.metric_accuracy", lang) + "\n\n" + t("gt.metric_accuracy_help", lang))
columns[0].caption(t("gt.accuracy_interval", lang, low=f"{board.accuracy_low:.0%}", high=f"{board.accuracy_high:.0%}"))
columns[1].metric(t("gt.metric_mass_short", lang), f"{mass:.2%}",
                  help=t("gt.metric_mass", lang) + "\n\n" + t("gt.metric_mass_help", lang))
columns[1].caption(t("gt.mass_interval", lang, low=f"{mass_low:.2%}", high=f"{mass_high:.2%}"))
if card.attention_bound is not None:
    under = mass_high < card.attention_bound
    columns[2].metric(t("gt.metric_bound_short", lang), f"{card.attention_bound:.1%}", help=t("gt.metric_bound", lang),
                      delta=t("gt.bound_kept" if under else "gt.bound_not_kept", lang),
                      delta_color="normal" if under else "inverse", delta_arrow="off")
chart = scoreboard_chart(board, slide=slide, lang=lang, label=model_label(info.name, lang))
board_provenance = Provenance(model=info.name, backend=ran_backend, text=t(
    "chart.gt.export_text", lang, examples=board.examples, task=task.name, seed=board.seed, k=board.k))
st.altair_chart(screen_title(chart))
export_buttons(f"groundtruth-{task.name}-{card.variant}", chart, board_provenance, lang, "gt_board")
st.dataframe(scoreboard_table(board, lang), hide_index=True)
hits = head_hits_chart(board, slide=slide, lang=lang)
st.altair_chart(screen_title(hits))
export_buttons(f"groundtruth-{task.name}-{card.variant}-heads", hits, board_provenance, lang, "gt_heads_chart")
st.subheader(t("gt.reading", lang))
st.markdown("\n".join(f"- {escape_markdown(line)}" for line in reading(board, lang)))

st.download_button(t("gt.download_json", lang), lambda: json.dumps(scoreboard_json(board), allow_nan=False),
                   file_name=f"groundtruth-{task.name}-{card.variant}.json", mime="application/json", key="gt_json",
                   icon=":material/download:", on_click="ignore")
share_state.publish_view(replace(chosen.state, page="groundtruth", model=spec), layer=st.session_state["layer"],
                    head=st.session_state["head"])
