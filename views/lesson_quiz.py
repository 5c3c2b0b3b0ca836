"""The Lessons page's quiz: the user commits to a guess, then the measurement is revealed; a running score per
session in ``st.session_state["quiz_score"]``. UI only: the reveals are numbers from :mod:`inspector.lessons`."""

from __future__ import annotations

import numpy as np
import streamlit as st

from inspector import InspectorError
from inspector.charts.base import token_labels
from inspector.i18n import t
from inspector.lessons import Lessons, TokenImportance, attention_target, leave_one_out
from inspector.share import escape_markdown
from views import inputs


@st.cache_data(max_entries=8, ttl=3600, show_spinner=False)
def cached_importance(spec: str, text: str, backend: str) -> TokenImportance:
    """Leave-one-out over the text's tokens: one forward per token."""
    return leave_one_out(inputs.cached_model(spec), text, backend=backend)


def _score(right: bool) -> None:
    score = st.session_state.setdefault("quiz_score", {"asked": 0, "right": 0})
    score["asked"] += 1
    score["right"] += int(right)


def render(lessons: Lessons, chosen: inputs.Inputs, lang: str) -> None:
    definition = lessons.definition
    labels = token_labels(definition.tokens)
    shown = [escape_markdown(label) for label in labels]
    st.caption(t("lesson8.explain", lang))

    query = st.selectbox(t("lesson8.query", lang), range(len(labels)), format_func=labels.__getitem__,
                         key="quiz_query")
    st.markdown(t("lesson8.attention_q", lang, query=shown[query], head=definition.head, layer=definition.layer))
    guess = st.selectbox(t("lesson8.guess", lang), range(len(labels)), format_func=labels.__getitem__, index=None,
                         key="quiz_guess")
    if st.button(t("lesson8.reveal", lang), key="quiz_reveal", disabled=guess is None):
        key, weight = attention_target(definition, query)
        _score(key == guess)
        if key == guess:
            st.success(t("lesson8.right", lang, key=shown[key], weight=f"{weight:.2f}"))
        else:
            st.warning(t("lesson8.wrong", lang, key=shown[key], weight=f"{weight:.2f}", guess=shown[guess],
                         guessed=f"{definition.weights[query, guess]:.2f}"))

    st.markdown(t("lesson8.importance_q", lang))
    candidates = [i for i in range(len(labels)) if not definition.special[i]] or list(range(len(labels)))
    pick = st.selectbox(t("lesson8.guess", lang), candidates, format_func=labels.__getitem__, index=None,
                        key="quiz_importance_guess")
    if st.button(t("lesson8.reveal", lang), key="quiz_importance_reveal", disabled=pick is None):
        bar = st.progress(0.0, text=t("lesson8.computing", lang))
        try:
            importance = cached_importance(chosen.spec, chosen.state.text, chosen.state.backend)
        except InspectorError as err:
            st.error(str(err))
            return
        finally:
            bar.empty()
        best, change = importance.best, importance.change
        guessed = change[pick]
        _score(pick == best)
        measure = t(f"measure.{importance.measure}", lang)
        if pick == best:
            st.success(t("lesson8.importance_right", lang, token=shown[best], change=f"{change[best]:.2e} ({measure})"))
        else:
            st.warning(t("lesson8.importance_wrong", lang, token=shown[best], change=f"{change[best]:.2e} ({measure})",
                         guess=shown[pick], guessed="—" if np.isnan(guessed) else f"{guessed:.2e}"))
    score = st.session_state.get("quiz_score", {"asked": 0, "right": 0})
    st.metric(t("lesson8.score", lang, right=score["right"], asked=score["asked"]), f"{score['right']}/{score['asked']}")
