"""The Lessons page (views/lessons.py) driven headlessly with AppTest on the bundled model: every lesson renders
with its chart and an answer built from the measured numbers, in English and Chinese; the quiz keeps a score;
the timing lesson measures on request; the language and the text survive switching pages."""

from __future__ import annotations

import json

import pytest
from streamlit.testing.v1 import AppTest
from streamlit.testing.v1.errors import AppTestError

from inspector.charts.base import title_text
from tests.conftest import APP_PATH, open_app_page

TIMEOUT_S = 120


def _lessons_page(query: dict[str, str] | None = None) -> AppTest:
    at = open_app_page("lessons", timeout=TIMEOUT_S, query=query)
    assert not at.error, [e.value for e in at.error]
    return at


def _titles(at: AppTest) -> list[str]:
    titles = [json.loads(chart.proto.spec).get("title") for chart in at.get("vega_lite_chart")]
    return [title_text(title) for title in titles]  # wrapped titles joined into one line


def test_every_lesson_renders_with_a_chart_and_a_measured_answer():
    at = _lessons_page({"layer": "2", "head": "3"})
    assert [e.label for e in at.expander][:8] == [
        "1 · The definition, with real shapes", "2 · Why not softmax(XXᵀ)X?", "3 · Where position enters",
        "4 · Why √d_k, and why not d_k", "5 · What multi-head splits", "6 · Entropy as a diagnostic",
        "7 · Why O(n²) matters, and what FlashAttention changes", "8 · Quiz"]
    titles = _titles(at)
    assert "A = softmax(S) · layer 2, head 3" in titles and "Layer 2: mean weight by offset i − j" in titles
    assert "Entropy by layer: does attention sharpen with depth?" in titles
    answers = [info.value for info in at.info]
    assert any("16 tokens × d\\_model \\= 384" in a for a in answers), answers
    assert any(a.startswith("Simulation\\: the variance of q·k") for a in answers)
    assert "Measured" in at.caption[1].value and "layer 2, head 3" in at.caption[1].value.replace("\\", "")


def test_the_page_speaks_chinese_when_the_link_says_so():
    at = _lessons_page({"lang": "zh"})
    assert at.selectbox(key="lang").value == "zh"
    assert at.expander[0].label == "1 · 定义，用真实的形状"
    assert any("词元" in info.value for info in at.info)
    assert at.sidebar.text_area(key="text").label == "文本"
    assert dict(at.query_params).get("lang") in ("zh", ["zh"])
    # The quiz's menus say "choose a token" in Chinese, not Streamlit's "Choose an option" (issue 17).
    assert [at.selectbox(key=key).proto.placeholder for key in ("quiz_guess", "quiz_importance_guess")] == [
        "选择一个词元…"] * 2
    assert at.multiselect(key="timing_lengths").proto.placeholder == "选择长度…"  # shown once every length is removed
    # Lesson 5's steps: the words translated, the symbols kept.
    steps = next(frame.value for frame in at.dataframe if "步骤" in frame.value.columns)["步骤"].tolist()
    assert steps[:3] == ["X", "X W_Q", "拆分成多头"] and steps[-1] == "拼接 · W_O"
    # Lesson 4's Jacobian column under its symbol, the words in its help (the table fits a 1000 px window).
    sweep = next(frame for frame in at.dataframe if "‖J‖_F（softmax 雅可比）" in frame.value.columns)
    column = json.loads(sweep.proto.columns)["‖J‖_F（softmax 雅可比）"]
    assert column["label"] == "‖J‖_F" and "雅可比" in column["help"]
    status = next(c.value.replace("\\", "") for c in at.caption if "all-MiniLM-L6-v2" in c.value.replace("\\", ""))
    assert "内置" in status and "bundled" not in status


def test_quiz_reveals_and_keeps_score():
    at = _lessons_page()
    at.selectbox(key="quiz_query").set_value(2).run()
    at.selectbox(key="quiz_guess").set_value(0).run()
    at.button(key="quiz_reveal").click().run()
    assert not at.exception
    revealed = [m.value for m in at.success] + [m.value for m in at.warning]
    assert any("budget" in m or "the head sends" in m for m in revealed), revealed
    assert at.metric[-1].value == ("1/1" if at.success else "0/1")
    at.selectbox(key="quiz_importance_guess").set_value(2).run()
    at.button(key="quiz_importance_reveal").click().run()
    assert not at.exception and not at.error
    assert at.metric[-1].value.endswith("/2")


def _feedback(at: AppTest) -> list[str]:
    return [m.value for m in at.success] + [m.value for m in at.warning]


def test_quiz_default_query_is_a_content_token():
    at = _lessons_page()
    query = at.selectbox(key="quiz_query")
    assert query.value == 1 and query.options[0] == "1: the", query.options[:3]
    # Only content tokens are offered: from [CLS] the answer would be [CLS], a trivial question.
    assert not any(label.endswith(("[CLS]", "[SEP]")) for label in query.options)


def _force(widget, value) -> None:
    """Set a widget's value even when it is disabled: what a second click that reaches the server before the
    rerun that disabled the widget (a double click, a slow connection) would send. AppTest itself refuses."""
    widget._value = value


def test_quiz_counts_each_question_once_and_locks_the_guess():
    at = _lessons_page()
    at.selectbox(key="quiz_guess").set_value(0).run()
    at.button(key="quiz_reveal").click().run()
    assert at.metric[-1].value in ("1/1", "0/1"), at.metric[-1].value
    first_feedback = _feedback(at)
    assert len(first_feedback) == 1
    # After the reveal the guess and the button are disabled: a browser cannot press or change them.
    assert at.selectbox(key="quiz_guess").disabled and at.button(key="quiz_reveal").disabled
    with pytest.raises(AppTestError, match="disabled"):
        at.button(key="quiz_reveal").click()
    with pytest.raises(AppTestError, match="disabled"):
        at.selectbox(key="quiz_guess").set_value(3)
    # Reveal pressed twice more anyway (clicks in flight): the question still counts once.
    for _ in range(2):
        _force(at.button(key="quiz_reveal"), True)
        at.run()
        assert not at.exception
    assert at.metric[-1].value in ("1/1", "0/1") and _feedback(at) == first_feedback
    # A changed guess after the reveal is ignored: the widget goes back to the locked guess, the score stays.
    _force(at.selectbox(key="quiz_guess"), 3)
    _force(at.button(key="quiz_reveal"), True)
    at.run()
    assert at.selectbox(key="quiz_guess").value == 0
    assert _feedback(at) == first_feedback and at.metric[-1].value.endswith("/1")


def test_quiz_keeps_earlier_answers_on_screen():
    at = _lessons_page()
    at.selectbox(key="quiz_guess").set_value(0).run()
    at.button(key="quiz_reveal").click().run()
    first = _feedback(at)
    at.selectbox(key="quiz_importance_guess").set_value(2).run()
    at.button(key="quiz_importance_reveal").click().run()
    assert not at.exception and not at.error
    shown = _feedback(at)
    assert len(shown) == 2 and first[0] in shown, shown
    assert at.metric[-1].value.endswith("/2")
    # Another query token is a new question with a fresh guess; the answered one comes back locked.
    at.selectbox(key="quiz_query").set_value(3).run()
    assert at.selectbox(key="quiz_guess").value is None and not at.selectbox(key="quiz_guess").disabled
    at.selectbox(key="quiz_query").set_value(1).run()
    assert at.selectbox(key="quiz_guess").value == 0 and at.selectbox(key="quiz_guess").disabled
    assert first[0] in _feedback(at) and at.metric[-1].value.endswith("/2")


def test_timing_lesson_measures_on_request():
    at = _lessons_page()
    at.multiselect(key="timing_lengths").set_value([128, 256]).run()
    at.button(key="timing_run").click().run()
    assert not at.exception and not at.error
    assert any(title.startswith("Time vs n on cpu") or title.startswith("Time vs n on cuda") for title in _titles(at))
    assert any("Measured just now on" in info.value for info in at.info)
    table = next(frame.value for frame in at.dataframe if "materialised, MiB (measured)" in frame.value.columns)
    measured = list(table["materialised, MiB (measured)"]) + list(table["flash, MiB (measured)"])
    assert None not in measured and "None" not in map(str, measured)
    if any(title.startswith("Time vs n on cpu") for title in _titles(at)):
        assert set(measured) == {"not measured on cpu"}  # the CPU reports no peak allocation


def test_language_and_text_survive_switching_pages():
    at = AppTest.from_file(str(APP_PATH), default_timeout=TIMEOUT_S)
    at.run()
    at.selectbox(key="lang").set_value("zh").run()
    at.text_area(key="text").set_value("Queries search keys like addresses.").run()
    assert at.metric[0].label == "实际运行的后端"
    at.switch_page("views/lessons.py").run()
    assert not at.exception and not at.error
    assert at.text_area(key="text").value == "Queries search keys like addresses."
    assert at.selectbox(key="lang").value == "zh" and at.expander[0].label == "1 · 定义，用真实的形状"
