"""The Lessons page's quiz: the user commits to a guess, then the measurement is revealed. UI only: the reveals
are numbers from :mod:`inspector.analyses.lessons`.

An honest score (issue 17): every answer is kept per session in ``st.session_state["quiz_answers"]``, keyed by
the question — the model, text, backend, layer, head and query token it asks about — so a question counts once
however often Reveal is pressed, its guess is locked once revealed (the widget is disabled and held at the
answered guess), and every earlier answer's feedback stays on screen. The score is counted from those answers.
The query is always a content token that sees two or more keys: from [CLS], or from a causal model's first token
(which sees only itself), the answer would be trivial.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import streamlit as st

from inspector import InspectorError
from inspector.analyses.lessons import DefinitionLesson, TokenImportance, attention_target, quiz_queries
from inspector.base.i18n import DEFAULT_LANGUAGE, t
from inspector.charts.base import token_labels
from inspector.output.share import escape_markdown
from views import session
from views.lesson_page import LessonView, cached_requested
from views.progress_bar import progress_bar
from views.sidebar import shown_model_name

ANSWERS_KEY = "quiz_answers"
PENDING_KEY = "quiz_pending"  # (question, guess) a Reveal click asked to answer


def cached_importance(spec: str, text: str, backend: str) -> TokenImportance:
    """Leave-one-out over the text's tokens (the quiz lesson's measurement on request): one forward per token. Layer
    and head 0, the default language: the measurement reads none of them, so another head asks nothing new."""
    return cached_requested("quiz", spec, None, text, backend, 0, 0, DEFAULT_LANGUAGE)


@dataclass(frozen=True)
class Answered:
    """One revealed question: the locked guess (a token index), whether it was right, and the feedback as a
    catalogue key and its values (drawn again on every rerun, in the language of that run). ``measure``: the
    output-change measure's catalogue suffix, appended to ``values["change"]`` when set."""

    guess: int
    right: bool
    key: str
    values: dict[str, str] = field(default_factory=dict)
    measure: str | None = None
    verdict: str | None = None  # a catalogue key with a {fact} placeholder the feedback goes into ("Right. {fact}")

    def show(self, lang: str) -> None:
        values = dict(self.values)
        if self.measure is not None:
            values["change"] = f"{values['change']} ({t(f'measure.{self.measure}', lang)})"
        text = t(self.key, lang, **values)
        if self.verdict is not None:
            text = t(self.verdict, lang, fact=text)
        (st.success if self.right else st.warning)(text)


def _answers() -> dict[tuple, Answered]:
    return st.session_state.setdefault(ANSWERS_KEY, {})


def _request_reveal(question: tuple, guess_key: str) -> None:
    """Reveal's click, before the rerun: note the question and its guess, to be answered before the guess widget
    is drawn (so the widget is already locked in the run that shows the answer). A repeated click is ignored."""
    guess = st.session_state.get(guess_key)
    if guess is not None and question not in _answers():
        st.session_state[PENDING_KEY] = (question, guess)


def _pending_guess(question: tuple) -> int | None:
    """The guess a Reveal click asked to answer for ``question`` (consumed), else None."""
    pending = st.session_state.get(PENDING_KEY)
    if pending is None or pending[0] != question:
        return None
    del st.session_state[PENDING_KEY]
    return None if question in _answers() else pending[1]


def _hold(guess_key: str, answered: Answered | None) -> None:
    """Before the guess widget is drawn: an answered question shows its locked guess, whatever was picked since."""
    if answered is not None:
        st.session_state[guess_key] = answered.guess


def _new_question() -> None:
    # Another query token is another question: start it without a guess (an answered one gets its own back).
    st.session_state.pop("quiz_guess", None)


def _choice_question(name: str, question: tuple, text: str, options: list[str], correct: int, fact_key: str,
                     fact_values: dict[str, str], lang: str) -> None:
    """One multiple-choice question on a measured number: the same commit-then-reveal, lock and count-once rules
    as the token questions. ``options``: the choices, already in the page's language; ``correct``: its index."""
    answers = _answers()
    st.markdown(text)
    guess_key = f"quiz_{name}_guess"
    guess = _pending_guess(question)
    if guess is not None:
        answers[question] = Answered(guess=guess, right=guess == correct, key=fact_key, values=fact_values,
                                     verdict="quiz.decoder.right" if guess == correct else "quiz.decoder.wrong")
    _hold(guess_key, answers.get(question))
    if st.session_state.get(guess_key) not in (None, *range(len(options))):
        st.session_state.pop(guess_key)
    pick = st.selectbox(t("quiz.decoder.choice", lang), range(len(options)), format_func=options.__getitem__,
                        index=None, key=guess_key, disabled=question in answers,
                        placeholder=t("quiz.decoder.choose", lang))
    st.button(t("lesson8.reveal", lang), key=f"quiz_{name}_reveal", disabled=pick is None or question in answers,
              on_click=_request_reveal, args=(question, guess_key))
    if question in answers:
        answers[question].show(lang)


def _decoder_questions(decoder: LessonView, lang: str, asked_about: tuple) -> None:
    """Questions on the decoder lessons, answered from their measurements on the section's decoder (``decoder``: the
    section's page, its results by slug)."""
    st.markdown(f"**{escape_markdown(t('quiz.decoder.heading', lang))}**")
    model = escape_markdown(shown_model_name(decoder.info.name, lang))
    about = (*asked_about, decoder.info.name, decoder.layer, decoder.head)
    rope = decoder.results["rope"].rope
    relative = rope.relative_score_change
    correct = 0 if relative < 1e-3 else 1 if relative < 0.1 else 2
    _choice_question("rope", ("rope", *about), t("quiz.rope.q", lang, model=model, shift=rope.shift),
                     [t(f"quiz.rope.a{i}", lang) for i in range(3)], correct, "quiz.rope.fact",
                     {"change": f"{rope.score_change:.1e}", "relative": f"{relative:.1e}"}, lang)
    sinks = decoder.results["sinks"]
    share = sinks.key_share
    top = int(share.argmax())
    _choice_question("sink", ("sink", *about), t("quiz.sink.q", lang, model=model, layer=decoder.layer),
                     [t(f"quiz.sink.a{i}", lang) for i in range(3)],
                     0 if top == 0 else 2 if top == len(share) - 1 else 1, "quiz.sink.fact",
                     {"first": f"{100 * share[0]:.0f}%", "other": f"{100 * share[1:].max():.0f}%",
                      "layer": str(decoder.layer)}, lang)
    own = decoder.results["gqa"].rows[0]
    group = own.num_heads // own.kv_heads
    factors = [1, group, 2 * group] if group > 1 else [1, 2, 4]
    _choice_question("gqa", ("gqa", *about), t("quiz.gqa.q", lang, model=model, heads=own.num_heads,
                                               kv_heads=own.kv_heads),
                     [t("quiz.gqa.option", lang, factor=f) for f in factors], factors.index(group) if group in factors
                     else 0, "quiz.gqa.fact", {"bytes": f"{own.bytes_per_token:,}",
                                               "mha_bytes": f"{own.bytes_one_kv_per_query:,}",
                                               "saving": f"{own.saving:.1f}"}, lang)


def render(definition: DefinitionLesson, chosen: session.Inputs, lang: str, decoder: LessonView | None = None) -> None:
    """The quiz on lesson 1's weights (``definition``), the token that matters most (measured on request) and, with a
    decoder chosen, the decoder lessons' results."""
    labels = token_labels(definition.tokens)
    shown = [escape_markdown(label) for label in labels]
    content = quiz_queries(definition.special, definition.visible)  # never a query that sees only itself
    answers = _answers()
    asked_about = (chosen.spec, chosen.state.text, chosen.state.backend)
    st.caption(t("lesson8.explain", lang))

    if st.session_state.get("quiz_query") not in content:
        st.session_state.pop("quiz_query", None)  # another text: its first content token is the default again
    query = st.selectbox(t("lesson8.query", lang), content, format_func=labels.__getitem__, key="quiz_query",
                         on_change=_new_question)
    st.markdown(t("lesson8.attention_q", lang, query=shown[query], head=definition.head, layer=definition.layer))
    question = ("attention", *asked_about, definition.layer, definition.head, query)
    guess = _pending_guess(question)
    if guess is not None:
        key, weight = attention_target(definition, query)
        values = {"key": shown[key], "weight": f"{weight:.2f}"}
        if key != guess:
            values.update(guess=shown[guess], guessed=f"{definition.weights[query, guess]:.2f}")
        answers[question] = Answered(guess=guess, right=key == guess,
                                     key="lesson8.right" if key == guess else "lesson8.wrong", values=values)
    _hold("quiz_guess", answers.get(question))
    guess = st.selectbox(t("lesson8.guess", lang), range(len(labels)), format_func=labels.__getitem__, index=None,
                         key="quiz_guess", disabled=question in answers,
                         placeholder=t("lesson8.guess_placeholder", lang))
    st.button(t("lesson8.reveal", lang), key="quiz_reveal", disabled=guess is None or question in answers,
              on_click=_request_reveal, args=(question, "quiz_guess"))
    if question in answers:
        answers[question].show(lang)
        st.caption(t("lesson8.locked", lang))

    st.markdown(t("lesson8.importance_q", lang))
    question = ("importance", *asked_about)
    pick = _pending_guess(question)
    if pick is not None:
        with progress_bar(t("lesson8.computing", lang)):  # no steps to count: a bar that says it is working
            try:
                with session.plan_job("lessons", session.cached_model(chosen.spec), lang,
                                      [chosen.state.text]).running():
                    importance = cached_importance(chosen.spec, chosen.state.text, chosen.state.backend)
            except InspectorError as err:
                session.show_error(err, lang)
                importance = None
        if importance is not None:
            best, change = importance.best, importance.change
            values = {"token": shown[best], "change": f"{change[best]:.2e}"}
            if pick != best:
                values.update(guess=shown[pick], guessed="—" if np.isnan(change[pick]) else f"{change[pick]:.2e}")
            answers[question] = Answered(guess=pick, right=pick == best, values=values, measure=importance.measure,
                                         key="lesson8.importance_right" if pick == best else "lesson8.importance_wrong")
    _hold("quiz_importance_guess", answers.get(question))
    if st.session_state.get("quiz_importance_guess") not in (None, *content):
        st.session_state.pop("quiz_importance_guess")  # a guess from another text
    pick = st.selectbox(t("lesson8.guess", lang), content, format_func=labels.__getitem__, index=None,
                        key="quiz_importance_guess", disabled=question in answers,
                        placeholder=t("lesson8.guess_placeholder", lang))
    st.button(t("lesson8.reveal", lang), key="quiz_importance_reveal", disabled=pick is None or question in answers,
              on_click=_request_reveal, args=(question, "quiz_importance_guess"))
    if question in answers:
        answers[question].show(lang)
        st.caption(t("lesson8.importance_locked", lang))

    if decoder is not None:
        _decoder_questions(decoder, lang, asked_about)
    right, asked = sum(answer.right for answer in answers.values()), len(answers)
    st.metric(t("lesson8.score", lang, right=right, asked=asked), f"{right}/{asked}")
