"""The Lessons page (views/lessons.py) driven headlessly with AppTest on the bundled model: every lesson renders
with its chart and an answer built from the measured numbers, in English and Chinese; the quiz keeps a score;
the timing lesson measures on request; the language and the text survive switching pages."""

from __future__ import annotations

import json
import re

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
    assert [e.label for e in at.expander][:10] == [
        "1 · The definition, with real shapes", "2 · Why not softmax(XXᵀ)X?", "3 · Where position enters",
        "19 · Sinusoidal, learned and rotary positions, side by side", "4 · Why √d_k, and why not d_k",
        "18 · A head dimension that is too small hurts", "5 · What multi-head splits", "6 · Entropy as a diagnostic",
        "7 · Why O(n²) matters, and what FlashAttention changes", "8 · Quiz"]
    titles = _titles(at)
    assert "A = softmax(S) · layer 2, head 3" in titles and "Layer 2: mean weight by offset i − j" in titles
    assert "Entropy by layer: does attention sharpen with depth?" in titles
    answers = [info.value for info in at.info]
    assert any("16 tokens × d\\_model \\= 384" in a for a in answers), answers
    assert any(a.startswith("Simulation\\: the variance of q·k") for a in answers)
    # Lessons 17 and 18 (issue 44, item 11): the simulation with its limits, the head cut to rank r, the three codes.
    assert {"Simulation: best KL vs d_k", "Layer 2, head 3: KL vs rank kept",
            "Similarity of position codes vs offset Δ"} <= set(titles)
    assert any("Sinusoidal codes at d \\= 384" in a and "learned table gives" in a for a in answers), answers
    assert any("Its limits" in caption.value for caption in at.caption)
    # Lesson 1 points at the Mechanism page's per-dimension products q_d · k_d.
    assert [link.proto.page for link in at.get("page_link")] == ["mechanism"]
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
    assert any(title.startswith(("Time vs n on CPU", "Time vs n on CUDA")) for title in _titles(at))  # device_label
    # The median of the runs and an interval for the exponent; on a busy machine the answer says so first.
    answers = [info.value.replace("\\", "") for info in at.info]
    assert any(("Measured just now on" in a or "too busy to trust" in a) and "95% interval" in a for a in answers)
    table = next(frame.value for frame in at.dataframe if "materialised, MiB (measured)" in frame.value.columns)
    measured = list(table["materialised, MiB (measured)"]) + list(table["flash, MiB (measured)"])
    assert None not in measured and "None" not in map(str, measured)
    if any(title.startswith("Time vs n on cpu") for title in _titles(at)):
        assert set(measured) == {"not measured on cpu"}  # the CPU reports no peak allocation
    # Blocked equals materialised, live: the max |Δ| on screen is the one just measured, in the table and the answer.
    timing = at.session_state["timing"]
    table = next(frame.value for frame in at.dataframe if "max |Δ| flash vs materialised" in frame.value.columns)
    assert list(table["max |Δ| flash vs materialised"]) == [f"{delta:.1e}" for delta in timing.max_abs_delta]
    counted = next(a for a in answers if a.startswith("Counted, not timed"))
    assert f"max |Δ| = {timing.max_abs_delta[-1]:.1e}" in counted and "n^2.00 and n^2.00" in counted
    assert any("Recomputation" in caption.value and "bandwidth" in caption.value for caption in at.caption)
    assert {"Growth with n: counted vs timed"} <= set(_titles(at))


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


# ------------------------------------------------------------------------------------ the decoder-era lessons

# A catalogue key shown instead of its sentence: "lesson12.title", "decoder.pick", "chart.decoder.mask" …
RAW_KEY = re.compile(r"\b(?:lesson\d+|decoder|quiz|chart)\.[a-z_0-9]+(?:\.[a-z_0-9]+)*\b")
DECODER_TITLES = {"en": ["D1 · Causal vs bidirectional: how GPT differs from BERT",
                         "D2 · RoPE, live: position in Q·K only",
                         "D3 · Grouped-query and multi-query attention", "D4 · Why sinks exist",
                         "D5 · Sliding windows vs global layers", "D6 · Linear attention: what it gives up",
                         "D7 · The query–key space", "D8 · The projection matrices W_Q, W_K, W_V, W_O"],
                  "zh": ["D1 · 因果与双向：GPT 与 BERT 有何不同", "D2 · 现场看 RoPE：位置只进入 Q·K",
                         "D3 · 分组查询与多查询注意力", "D4 · 为什么会有注意力汇点", "D5 · 滑动窗口层与全局层",
                         "D6 · 线性注意力：放弃了什么", "D7 · 查询–键空间", "D8 · 投影矩阵 W_Q、W_K、W_V、W_O"]}


@pytest.fixture(scope="module")
def tiny_decoder(tmp_path_factory) -> str:
    """A tiny Mistral-style causal LM (RoPE, 4 query heads on 2 key/value heads, a window of 4) as a model folder: the
    decoder lessons on it take seconds."""
    from tests.conftest import save_tiny_model

    return str(save_tiny_model(tmp_path_factory.mktemp("tiny-decoder") / "mistral", "mistral", with_head=True))


def _decoder_page(model: str, lang: str = "en") -> AppTest:
    """The Lessons page with ``model`` typed into the sidebar's "other model" box (a share link never carries a
    folder) and a text in the tiny models' vocabulary."""
    at = _lessons_page({"text": "the cat sat on the mat and the dog ran fast", "lang": lang})
    at.selectbox(key="model").set_value("__other__").run()
    at.text_input(key="model_other").set_value(model).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    return at


def _shown_texts(at: AppTest) -> list[str]:
    return [e.value for kind in ("markdown", "caption", "info", "success", "warning", "error", "subheader")
            for e in at.get(kind)] + [e.label for e in at.expander]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_decoder_lessons_render_on_a_decoder_in_both_languages(tiny_decoder, lang):
    at = _decoder_page(tiny_decoder, lang)
    labels = [e.label for e in at.expander]
    first = next(i for i, label in enumerate(labels) if label.startswith("D1 ·"))  # after the encoder lessons
    assert labels[first:first + 8] == DECODER_TITLES[lang]
    assert labels[-1] == ("8 · Quiz" if lang == "en" else "8 · 小测验")
    # The on-request lessons measured, as a reader would ask.
    for key in ("stream_run", "window_run", "linear_run"):
        at.button(key=key).click().run()
        assert not at.exception and not at.error, [e.value for e in at.error]
    titles = _titles(at)
    assert sum(title.startswith(("Where each token may look", "每个词元能看向哪里")) for title in titles) == 2
    assert len(titles) == 8 + 3 + 14  # lessons 1–6 (8 charts), 18 and 19 beside them (3), the decoder lessons (14)
    shown = _shown_texts(at)
    assert not [text for text in shown if RAW_KEY.search(text.replace("\\", ""))]
    answers = [info.value.replace("\\", "") for info in at.info]
    assert sum(("exactly zero" if lang == "en" else "恰好为零") in a for a in answers) == 1  # D5 on the window
    assert any(("Streaming LLM" if lang == "en" else "StreamingLLM") in a for a in answers)
    if lang == "zh":
        unquoted = [re.sub(r"“[^”]*”", "", a) for a in answers]  # a quoted token is the text's own word
        assert not [a for a in unquoted if re.search(r"\b(the|and|with|of)\b", a)], "English left in a Chinese answer"
    assert at.selectbox(key="decoder_model").value == tiny_decoder  # the sidebar's decoder, chosen for the section


def test_decoder_section_on_an_encoder_says_which_model_to_pick_and_runs_nothing():
    at = _lessons_page()
    assert at.selectbox(key="decoder_model").value is None
    pick = [info.value.replace("\\", "") for info in at.info if "pick a bundled decoder" in info.value]
    assert pick and "SmolLM2" in pick[0] and "The sidebar keeps" in pick[0]
    assert not any(e.label.startswith("D1 ·") for e in at.expander)


def test_decoder_quiz_questions_are_scored_like_the_others(tiny_decoder):
    at = _decoder_page(tiny_decoder)
    at.selectbox(key="quiz_rope_guess").set_value(0).run()
    at.button(key="quiz_rope_reveal").click().run()
    assert not at.exception
    feedback = _feedback(at)
    assert len(feedback) == 1 and feedback[0].startswith("Right.") and "largest change measured" in feedback[0]
    assert at.metric[-1].value == "1/1" and at.selectbox(key="quiz_rope_guess").disabled
    at.selectbox(key="quiz_gqa_guess").set_value(0).run()  # 1× smaller: wrong for 4 query heads on 2
    at.button(key="quiz_gqa_reveal").click().run()
    assert at.metric[-1].value == "1/2" and any(f.startswith("Not quite.") for f in _feedback(at))


INDUCTION_TEXT = "table river window garden paper stone music yellow seven market bridge cloud"


def _lessons_link(query: dict[str, str]) -> AppTest:
    """The Lessons page as a share link opens it. AppTest starts on the default page, whose run rewrites the address
    to its own view; the link's parameters are put back before the switch, as a browser opening /lessons?… would
    have them on the page's first run (as tests/test_compare_page.py does)."""
    at = AppTest.from_file(str(APP_PATH), default_timeout=TIMEOUT_S)
    for name, value in query.items():
        at.query_params[name] = value
    at.run()
    for name in list(at.query_params):
        del at.query_params[name]
    for name, value in query.items():
        at.query_params[name] = value
    at.switch_page("views/lessons.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_a_link_carries_the_decoder_sections_model_layer_and_head():
    """The section's decoder, layer and head come from the link (a head the decoder lacks is clamped with a warning)
    and go back into the address bar; a decoder the section does not offer is named in a warning, nothing runs."""
    at = _lessons_link({"model": "shipped:induction", "text": INDUCTION_TEXT, "decoder": "shipped:induction",
                        "dlayer": "0", "dhead": "9"})
    assert at.selectbox(key="decoder_model").value == "shipped:induction"
    assert (at.selectbox(key="decoder_layer").value, at.selectbox(key="decoder_head").value) == (0, 3)
    warnings = [w.value.replace("\\", "") for w in at.warning]
    assert any("asks for head 9" in w and "showing head 3" in w for w in warnings), warnings
    link = {key: value for key, value in at.query_params.items() if key in ("decoder", "dlayer", "dhead")}
    assert {key: value if isinstance(value, str) else value[-1] for key, value in link.items()} == {
        "decoder": "shipped:induction", "dlayer": "0", "dhead": "3"}
    at.selectbox(key="decoder_head").set_value(1).run()
    assert dict(at.query_params).get("dhead") in ("1", ["1"])

    # MiniLM in the sidebar: the section offers the bundled decoders only, so the link's model is refused by name.
    at = _lessons_link({"decoder": "shipped:induction", "lang": "zh"})
    assert at.selectbox(key="decoder_model").value is None
    assert any("shipped:induction" in w.value.replace("\\", "") and "不在本节提供的解码器" in w.value
               for w in at.warning)
    assert "decoder" not in dict(at.query_params)
