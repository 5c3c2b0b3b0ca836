"""The lecture path (inspector/output/lecture.py) and its page (views/lecture.py), issue 31 item 7.

The steps are read back through the share-link parser, and every page and lesson they name is checked to exist, so
the path cannot rot when a page or a lesson moves. The page runs in AppTest: the steps in both languages, the step's
link, and "Open this step" landing on the page with the step's model, text, layer and head."""

from __future__ import annotations

import html
import io
import re
from dataclasses import replace
from pathlib import Path

import pytest
from PIL import Image

from inspector.analyses.lessons.registry import LESSONS
from inspector.base.examples import mechanism_example
from inspector.base.i18n import CATALOGUE, LANGUAGES, t
from inspector.base.model_ids import parsed_spec, spec_kind
from inspector.charts.base import text_width_px
from inspector.core.bundled import BUNDLED
from inspector.core.loading import DEFAULT_MODEL
from inspector.output.lecture import (
    GEMMA,
    LECTURE,
    LECTURE_PAGE,
    ZH_TEXTS,
    LectureStep,
    decode_lecture,
    encode_lecture,
    page_url,
    step_index,
    step_params,
    step_url,
)
from inspector.output.pages import PAGE_REGISTRY, lecture_targets
from inspector.output.share import (
    LESSON_COUNT,
    PAGES,
    GenerateState,
    ViewState,
    decode_generate,
    decode_lesson,
    decode_view,
    encode_lesson,
)
from inspector.output.slides import SLIDE_HEIGHT_PX, SLIDE_WIDTH_PX, title_slide_svg
from tests.conftest import APP_PATH

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("lang", LANGUAGES)
def test_every_step_round_trips_through_the_share_link_parser(lang):
    for step in LECTURE:
        params = step_params(step, lang)
        state, warnings = decode_view(params)
        assert warnings == () and state == step.view_for(lang), step.slug
        assert decode_lesson(params) == (step.lesson, ())
        assert decode_generate(params) == (step.generate or GenerateState(), ())
        url = step_url("http://host:8501/lecture?lecture=x", step, lang)
        path = "" if PAGE_REGISTRY[step.view.page].default else step.view.page  # the home page is the root
        assert url.startswith(f"http://host:8501/{path}?"), url


def test_every_page_and_lesson_a_step_names_exists():
    assert set(PAGES) == set(PAGE_REGISTRY)  # every page a link may name is in the menu, and the other way round
    # The lessons the Lessons page draws (it loops over the registry), numbered as a link's lesson=N.
    drawn = {lesson.number for lesson in LESSONS.values()}
    assert drawn == set(range(1, LESSON_COUNT + 1))
    for step in LECTURE:
        assert step.view.page in lecture_targets() and step.view.page != LECTURE_PAGE
        assert (ROOT / PAGE_REGISTRY[step.view.page].script).exists()
        assert step.lesson is None or step.lesson in drawn
        model = step.view.model
        assert model == DEFAULT_MODEL or (spec_kind(model) == "bundled" and parsed_spec(model).name in BUNDLED), model
        for key in (step.title_key, step.look_key):
            assert key in CATALOGUE and all(CATALOGUE[key][lang].strip() for lang in LANGUAGES), key


def test_the_path_tells_the_storyline_in_order():
    slugs = [step.slug for step in LECTURE]
    assert len(set(slugs)) == len(slugs) and 12 <= len(LECTURE) <= 18
    assert slugs[0] == "soft-addressing" and slugs[-1] == "generate"
    pages = {step.slug: step.view.page for step in LECTURE}
    assert pages["not-explanation"] == "attribution" and pages["generate"] == "generate"
    assert {step.lesson for step in LECTURE} >= {4, 5, 9, 10, 16}  # √d, multi-head, causal, RoPE, W_Q/W_K/W_V
    # The seed's points the path once skipped (issue 44): why not XXᵀ, position, O(n²) and FlashAttention, sliding
    # windows, linear attention — each a step that opens its lesson.
    assert {step.lesson for step in LECTURE} >= {2, 3, 7, 13, 14}
    encoders = [step for step in LECTURE if step.view.model == DEFAULT_MODEL]
    decoders = [step for step in LECTURE if step.view.model != DEFAULT_MODEL]
    assert encoders and decoders and all(LECTURE.index(s) < LECTURE.index(d) for s in encoders[:5] for d in
                                         decoders[1:])  # the encoder story first, then the decoders


def test_zh_steps_open_on_gemma_with_the_chinese_sentence():
    """简体中文 readers walk the path on Gemma, the bundled model that reads Chinese, with the Chinese twin of each
    step's text, at the step's own page, layer, head and lesson (issue 44, item 8)."""
    assert [step.slug for step in LECTURE if not step.zh_on_gemma] == ["mechanism"]  # SmolLM2's English pair
    for step in (step for step in LECTURE if step.zh_on_gemma):
        state, _ = decode_view(step_params(step, "zh"))
        assert state.model == GEMMA and state.lang == "zh", step.slug
        assert state.text == ZH_TEXTS[step.view.text] and not state.text.isascii(), step.slug
        assert (state.page, state.layer, state.head) == (step.view.page, step.view.layer, step.view.head)
        assert decode_lesson(step_params(step, "zh")) == (step.lesson, ())
    assert {ZH_TEXTS[step.view.text] for step in LECTURE} >= {"动物没有过马路，因为它太累了。"}
    assert all(step.view_for("en") == replace(step.view, lang="en") for step in LECTURE)  # English: as written


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_mechanism_step_carries_the_example_pair(lang):
    step = LECTURE[step_index("mechanism")]
    example = mechanism_example("en")  # SmolLM2 reads English, whatever the reader's language
    params = step_params(step, lang)
    state, _ = decode_view(params)
    assert (state.page, state.model, state.text) == ("mechanism", "bundled:smollm2-135m", example["clean"])
    assert {name: params[name] for name in ("mcorrupt", "manswer", "mcontrast")} == {
        "mcorrupt": example["corrupted"], "manswer": example["answer"], "mcontrast": example["contrast"]}
    assert set(dict(step.own)) <= set(PAGE_REGISTRY["mechanism"].link_keys)
    with pytest.raises(ValueError, match="link parameters"):  # another page's parameter
        LectureStep("x", "lecture.soft.title", "lecture.soft.look", ViewState(page="mechanism"), own=(("lesson", "3"),))


@pytest.mark.slow
def test_the_mechanism_step_opens_the_page_with_its_pair_filled():
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(APP_PATH), default_timeout=900)
    at.query_params.update({"lang": "zh", "lecture": "mechanism"})
    at.switch_page("views/lecture.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.radio(key="lecture_step").value == step_index("mechanism")
    at.button(key="lecture_open").click().run()
    assert not at.exception, [e.value for e in at.exception]
    example = mechanism_example("en")
    assert at.session_state["model"] == "bundled:smollm2-135m" and at.session_state["text"] == example["clean"]
    assert (at.session_state["layer"], at.session_state["head"]) == (16, 4)
    assert at.text_input(key="mech_answer").value == example["answer"]
    assert at.text_input(key="mech_contrast").value == example["contrast"]
    assert at.text_area(key="mech_corrupted").value == example["corrupted"]
    assert not at.error, [e.value for e in at.error]
    assert any(t("mech.patch_header", "zh") in header.value for header in at.header)


def test_the_lecture_page_link_names_its_step():
    for index in range(len(LECTURE)):
        assert decode_lecture(encode_lecture(index)) == (index, ())
    assert decode_lecture({}) == (0, ())
    index, warnings = decode_lecture({"lecture": "<script>"})
    assert index == 0 and len(warnings) == 1 and "lecture=" in warnings[0]
    assert "讲课路线" in warnings[0].text("zh")


def test_a_lesson_link_roundtrips_and_a_bad_one_warns():
    assert decode_lesson(encode_lesson(12)) == (12, ()) and encode_lesson(None) == {}
    for bad in ("0", str(LESSON_COUNT + 1), "x", "-1"):
        lesson, warnings = decode_lesson({"lesson": bad})
        assert lesson is None and len(warnings) == 1 and warnings[0].text("zh").startswith("lesson=")


def test_a_step_refuses_what_no_link_can_open():
    view = ViewState(page="lessons")
    with pytest.raises(ValueError, match="page"):
        LectureStep("x", "lecture.soft.title", "lecture.soft.look", ViewState(page="lecture"))
    with pytest.raises(ValueError, match="lesson"):
        LectureStep("x", "lecture.soft.title", "lecture.soft.look", ViewState(page="inspect"), lesson=4)
    with pytest.raises(ValueError, match="lesson"):
        LectureStep("x", "lecture.soft.title", "lecture.soft.look", view, lesson=LESSON_COUNT + 1)
    with pytest.raises(ValueError, match="Generate"):
        LectureStep("x", "lecture.soft.title", "lecture.soft.look", view, generate=GenerateState())
    with pytest.raises(ValueError, match="slug"):
        LectureStep("Not a slug", "lecture.soft.title", "lecture.soft.look", view)


@pytest.mark.parametrize("base, expected", [
    ("", "/lessons"), ("http://h:1/", "http://h:1/lessons"), ("http://h:1/lecture?lecture=qkv", "http://h:1/lessons"),
    ("https://h/app/inspect?v=1", "https://h/app/lessons"), ("https://h/app/", "https://h/app/lessons"),
])
def test_page_url_points_the_app_at_another_page(base, expected):
    assert page_url(base, "lessons") == expected


@pytest.mark.parametrize("base, expected", [
    ("", "/"), ("http://h:1/lessons?lesson=4", "http://h:1/"), ("https://h/app/inspect?v=1", "https://h/app/"),
    ("https://h/app/", "https://h/app/"),
])
def test_page_url_names_the_root_for_the_home_page_never_its_path(base, expected):
    # /inspect opens too (views.pages sends it on), but the link the app writes is the path the menu shows.
    assert page_url(base, "inspect") == expected


@pytest.mark.parametrize("lang", LANGUAGES)
def test_a_title_slide_keeps_every_line_on_the_canvas(lang):
    step = LECTURE[1]
    link = step_url("http://teaching.example.org:8501/lecture", LECTURE[-1], lang) + "&" + "x" * 200
    svg = title_slide_svg(t(step.title_key, lang), t(step.look_key, lang), "model · “text” · " + "word " * 60,
                          kicker=t("lecture.slide_step", lang, n=2, total=len(LECTURE)), link=link)
    assert f'width="{SLIDE_WIDTH_PX}" height="{SLIDE_HEIGHT_PX}"' in svg
    lines = re.findall(r'<text x="(\d+)" y="(\d+)" [^>]*font-size="([0-9.]+)px"[^>]*>([^<]*)</text>', svg)
    assert len(lines) >= 4
    for x, y, size, text in lines:
        text = html.unescape(text)
        assert 0 < int(y) < SLIDE_HEIGHT_PX and int(x) + text_width_px(text, float(size)) <= SLIDE_WIDTH_PX - int(x)
        assert not text.startswith(("，", "。", "、", "：", "）", "”"))
    drawn = "".join(html.unescape(text) for *_, text in lines)
    assert t(step.title_key, lang) in drawn and link in drawn  # the whole link, in lines that fit


# ------------------------------------------------------------------------------------------- the page, in AppTest


def _link(at) -> str:
    return next(code.value for code in at.code if "v=1" in code.value)


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_lecture_page_lists_the_steps_and_opens_one_as_its_link_does(lang):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(APP_PATH), default_timeout=240)
    at.query_params.update({"lang": lang, "lecture": "sqrt-d"})
    at.switch_page("views/lecture.py").run()  # the link opens the Lecture page first, as a browser does
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error and not at.warning, [w.value for w in at.warning]
    radio = at.radio(key="lecture_step")
    assert radio.options == [f"{i} · {t(step.title_key, lang)}" for i, step in enumerate(LECTURE, 1)]
    sqrt_d = _index("sqrt-d")
    assert radio.value == sqrt_d  # the link's step is the current one
    assert _link(at).endswith("?" + step_url("", LECTURE[sqrt_d], lang).split("?")[1])
    assert at.link_button[0].proto.url == _link(at)
    assert dict(at.query_params).get("lecture") in ("sqrt-d", ["sqrt-d"])
    at.button(key="lecture_previous").click().run()
    before = sqrt_d - 1
    assert at.radio(key="lecture_step").value == before
    assert _link(at) == step_url(_link(at).split("?")[0], LECTURE[before], lang)
    assert t(LECTURE[before].look_key, lang) in at.info[0].value.replace("\\", "")
    at.radio(key="lecture_step").set_value(0).run()
    at.session_state["layer"], at.session_state["head"] = 0, 0  # the reader's own choice, replaced by the step's
    at.button(key="lecture_open").click().run()
    assert not at.exception, [e.value for e in at.exception]
    first = LECTURE[0].view_for(lang)  # 简体中文: Gemma and the Chinese sentence (issue 44)
    assert (at.session_state["layer"], at.session_state["head"]) == (first.layer, first.head)
    assert at.session_state["model"] == first.model and at.session_state["text"] == first.text
    assert at.selectbox(key="layer").value == first.layer and at.selectbox(key="head").value == first.head
    assert at.get("vega_lite_chart")  # the Inspect page drew its charts


def _index(slug: str) -> int:
    return next(i for i, step in enumerate(LECTURE) if step.slug == slug)


@pytest.mark.parametrize("slug, lang", [("qkv", "zh"), ("sqrt-d", "en"), ("not-explanation", "en")])
def test_a_step_slide_is_a_16_9_png(slug, lang):
    """A title slide; lesson 4's simulation; "attention is not explanation" — once a title-only slide (issue 44) — now
    the agreement of attention with the attribution methods on the step's sentence."""
    from views.lecture_slides import slide_caption, step_slide_png

    index = _index(slug)
    step = LECTURE[index]
    assert (step.chart is None) == (slide_caption(step, lang) == t("lecture.slide_title", lang))
    assert slug != "not-explanation" or step.chart == "agreement"
    image = Image.open(io.BytesIO(step_slide_png(index, lang, "http://host/lecture")))
    assert image.size == (SLIDE_WIDTH_PX, SLIDE_HEIGHT_PX)
    assert image.convert("L").getextrema()[0] < 80  # ink: the title at least


def test_a_lessons_step_opens_its_lesson_and_keeps_it_in_the_link():
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(APP_PATH), default_timeout=240)
    at.query_params.update({"lecture": "sqrt-d"})
    at.switch_page("views/lecture.py").run()
    at.button(key="lecture_open").click().run()  # step 3: lesson 4 on MiniLM, layer 3, head 1
    assert not at.exception and not at.error, [e.value for e in at.error]
    opened = {e.label: e.proto.expanded for e in at.expander}
    assert opened["4 · Why √d_k, and why not d_k"] and not opened["1 · The definition, with real shapes"]
    assert (at.selectbox(key="layer").value, at.selectbox(key="head").value) == (3, 1)
    assert dict(at.query_params).get("lesson") in ("4", ["4"])
    at.switch_page("views/lecture.py").run()  # back to the lecture: the step it was on, ready for "Next"
    assert at.radio(key="lecture_step").value == _index("sqrt-d") and not at.exception


def _open_step(slug: str, lang: str = "en"):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(APP_PATH), default_timeout=400)
    at.query_params.update({"lecture": slug, "lang": lang})
    at.switch_page("views/lecture.py").run()
    at.button(key="lecture_open").click().run()
    assert not at.exception and not at.error, [e.value for e in at.exception] + [e.value for e in at.error]
    return at


def test_the_not_explanation_step_opens_attribution_at_its_layer_and_head():
    """Issue 44: Attribution kept its own default (the last layer, 5) and ignored the step's layer 3, head 1."""
    at = _open_step("not-explanation")
    view = LECTURE[_index("not-explanation")].view
    assert (at.selectbox(key="attr_layer").value, at.selectbox(key="attr_head").value) == (view.layer, view.head)
    assert at.session_state["model"] == view.model and at.session_state["text"] == view.text


def test_a_lessons_step_scrolls_to_its_lesson_once():
    """The step opens its lesson's expander and scrolls the page to it (issue 44: it landed 1–2 screens above)."""
    at = _open_step("complexity")
    opened = {e.label: e.proto.expanded for e in at.expander}
    assert opened["7 · Why O(n²) matters, and what FlashAttention changes"]
    assert not opened["1 · The definition, with real shapes"]
    scripts = [element.proto.body for element in at.get("html") if "scrollIntoView" in element.proto.body]
    assert len(scripts) == 1 and ".st-key-lesson-7" in scripts[0]
    at.run()  # the reader's next action: no scroll back to the lesson
    assert not [element for element in at.get("html") if "scrollIntoView" in element.proto.body]



# Every page a step opens, by the catalogue key of its title (what AppTest can read of the page it landed on).
_PAGE_TITLES = {"inspect": "inspect.title", "lessons": "lessons.title", "attribution": "attribution.page.title",
                "mechanism": "mech.title", "generate": "generate.title"}
# 简体中文 on a few steps, one per page kind a zh reader opens on Gemma (the rest are the same code with English words).
_ZH_STEPS = ("soft-addressing", "rope", "not-explanation", "generate")


def _assert_landed(at, step: LectureStep, lang: str) -> None:
    """``at`` shows the page ``step`` opens, on its model, text, layer and head (and its lesson or run)."""
    view = step.view_for(lang)
    assert PAGE_REGISTRY[view.page].script and view.page in _PAGE_TITLES, view.page
    assert [title.value for title in at.title] == [t(_PAGE_TITLES[view.page], lang)], step.slug
    assert at.session_state["model"] == view.model and at.session_state["text"] == view.text, step.slug
    assert (at.session_state["layer"], at.session_state["head"]) == (view.layer, view.head), step.slug
    if view.page == "attribution":
        assert (at.selectbox(key="attr_layer").value, at.selectbox(key="attr_head").value) == (view.layer, view.head)
    elif view.page in ("inspect", "lessons"):
        assert (at.selectbox(key="layer").value, at.selectbox(key="head").value) == (view.layer, view.head)
    if step.lesson is not None:
        opened = [e.label for e in at.expander if e.proto.expanded]
        assert t(f"lesson{step.lesson}.title", lang) in opened, (step.slug, opened)
        assert dict(at.query_params).get("lesson") in (str(step.lesson), [str(step.lesson)])
    if step.generate is not None:
        assert at.slider(key="generate_new").value == step.generate.new
    if step.own:
        assert at.text_input(key="mech_answer").value == dict(step.own)["manswer"]


@pytest.mark.slow
@pytest.mark.parametrize("slug, lang", [*((step.slug, "en") for step in LECTURE),
                                        *((slug, "zh") for slug in _ZH_STEPS)])
def test_every_step_opens_its_page_on_its_model_layer_and_head(slug, lang):
    """Issue 44: only three of the sixteen steps were ever opened by a test. Each is opened as a teacher opens it
    (the Lecture page, then "Open this step") and must land on its page with its model, text, layer, head and lesson,
    with no exception and no error box."""
    at = _open_step(slug, lang)
    _assert_landed(at, LECTURE[_index(slug)], lang)
