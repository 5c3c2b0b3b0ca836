"""The Compare page (issue 20) in AppTest on the bundled model — default pair, picks, examples, share links (good and
malformed), the two-model path, leave-one-out, 简体中文 — and in Chromium: the side-by-side heatmaps are drawn with
visible cells, and clicking a grid cell shows that head."""

from __future__ import annotations

import json
import urllib.parse

import pytest

from benchmarks.live_app import CHART
from inspector.base.i18n import t
from inspector.charts.base import title_text
from tests.conftest import open_app_page

TIRED = "The animal didn't cross the street because it was too tired."


def _open_with_link(query: dict[str, str]):
    """The Compare page as a share link opens it. AppTest starts on the default page, whose run rewrites the
    address to its own view; the link's parameters are put back before the switch, as a browser opening
    /compare?… would have them on the page's first run."""
    from streamlit.testing.v1 import AppTest

    from tests.conftest import APP_PATH

    at = AppTest.from_file(str(APP_PATH), default_timeout=240)
    for name, value in query.items():
        at.query_params[name] = value
    at.run()
    for name in list(at.query_params):
        del at.query_params[name]
    for name, value in query.items():
        at.query_params[name] = value
    at.switch_page("views/compare.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _titles(at) -> list[str]:
    titles = [json.loads(chart.proto.spec).get("title") for chart in at.get("vega_lite_chart")]
    return [title_text(title) for title in titles]  # wrapped titles are lists of lines


def _sentence(at) -> str:
    return next(info.value for info in at.info if "heads" in info.value or "个头" in info.value)


def test_the_default_pair_shows_the_ranked_heads_the_grid_and_both_heatmaps():
    at = open_app_page("compare")
    assert not at.error and not at.warning
    assert at.text_area(key="compare_text_a").value == TIRED
    strip = at.code[0].value.replace("\u00a0", " ")  # the strip keeps each label on one line
    assert "13: tired ~" in strip and "13: wide ~" in strip and "10: it   " in strip
    titles = _titles(at)
    # The famous picture's query is the pronoun (issue 44), not the differing word.
    assert titles == ["Top 12 heads: “it”", "How far “it” moved its attention, head by head",
                      "Text A: layer 0, head 0", "Text B: layer 0, head 0", "B − A: layer 0, head 0",
                      "Row of the query, layer 0, head 0"]
    assert "of 72 heads" in _sentence(at) and "animal" in _sentence(at)
    metrics = {metric.label: metric.value for metric in at.metric}
    assert metrics["Heads that moved"].endswith("/ 72") and float(metrics["Output change"]) > 0
    assert at.query_params["page"] == "compare" and at.query_params["keys"] == "2,8"
    assert at.query_params["query"] == "10"


def test_picking_the_query_head_and_an_example_redraws():
    at = open_app_page("compare")
    assert "Query read: “10: it”." in [c.value.replace("\\", "") for c in at.caption]
    assert "“it” moves" in _sentence(at).replace("\\", "")
    at.selectbox(key="compare_query").set_value(None).run()
    assert "Query read: “13: tired/wide” (chosen automatically)." in [c.value.replace("\\", "") for c in at.caption]
    at.selectbox(key="layer").set_value(3).run()
    at.selectbox(key="head").set_value(1).run()
    assert not at.exception and "Text A: layer 3, head 1" in _titles(at)
    at.selectbox(key="compare_example").set_value("compare.example_negation").run()
    assert not at.exception and not at.error
    assert "8:\u00a0not\u00a0+" in at.code[0].value  # inserted in B, no partner
    assert at.selectbox(key="compare_key1").value is None  # the negation pair has no default keys
    assert "Jensen" in _sentence(at)


def test_a_share_link_restores_the_view_and_a_malformed_one_warns():
    at = _open_with_link({"v": "1", "text_b": "The animal didn't cross the street because it was "
                                         "too wide.", "query": "it", "keys": "street,animal", "layer": "2",
                                         "head": "5"})
    assert not at.error and not at.warning
    assert at.selectbox(key="compare_query").value == 10
    assert (at.selectbox(key="compare_key1").value, at.selectbox(key="compare_key2").value) == (8, 2)
    assert "Text A: layer 2, head 5" in _titles(at)
    bad = _open_with_link({"v": "1", "keys": "animal", "query": "\x07", "tzb": "!!"})
    assert not bad.exception and not bad.error
    warnings = " ".join(w.value for w in bad.warning)
    assert "keys" in warnings and "query" in warnings and "tzb" in warnings
    assert bad.get("vega_lite_chart")  # the page still draws, with the defaults

    chinese = _open_with_link({"v": "1", "lang": "zh", "keys": "animal"})  # the page's language (issue 26)
    assert [w.value.replace("\\", "") for w in chinese.warning] == [
        "分享链接：keys='animal' 不是用逗号分隔的两个词元；改用默认的键。"]


def test_a_query_no_longer_in_the_text_falls_back_to_auto():
    at = _open_with_link({"v": "1", "query": "giraffe"})
    assert not at.exception and not at.error
    assert any("giraffe" in w.value for w in at.warning)
    assert at.selectbox(key="compare_query").value is None and at.get("vega_lite_chart")


def test_two_models_of_different_shapes_get_the_clear_message():
    at = open_app_page("compare")
    at.radio(key="compare_mode").set_value("models").run()
    assert not at.exception and not at.error  # model B defaults to model A: identical inputs
    assert any("identical" in info.value for info in at.info)
    assert at.query_params["model_b"] == "default"
    at.selectbox(key="compare_model_b").set_value("shipped:planted-token").run()
    assert not at.exception and not at.error
    # No head has a partner (issue 27): the page compares what both models have, and says so.
    assert any(h.value == "Two models of different shapes: what can be compared" for h in at.subheader)
    assert any("partners" in info.value and "JS divergence" in info.value for info in at.info)
    assert any("not comparable" in caption.value for caption in at.caption)
    assert at.query_params["model_b"] == "shipped:planted-token"


def test_a_link_to_two_models_opens_the_model_picker_on_them():
    at = _open_with_link({"v": "1", "model_b": "shipped:deceptive-attention"})
    assert at.radio(key="compare_mode").value == "models"
    assert at.selectbox(key="compare_model_b").value == "shipped:deceptive-attention"
    # Different shapes (issue 27): the per-model view, not an error.
    assert not at.error and any("partners" in info.value and "JS divergence" in info.value for info in at.info)
    hub = _open_with_link({"v": "1", "model_b": "someone/unlisted-model"})
    assert hub.selectbox(key="compare_model_b").value == "__other__"
    assert hub.text_input(key="compare_model_b_other").value == "someone/unlisted-model"
    assert not hub.exception and len(hub.error) == 1  # offline: the hub model cannot load, and the page says so


def test_leave_one_out_runs_on_both_texts():
    at = open_app_page("compare")
    at.button(key="compare_loo").click().run()
    assert not at.exception and not at.error
    table = at.dataframe[0].value
    assert list(table.columns)[-2:] == ["A: leave-one-out", "B: leave-one-out"] and len(table) == 16


def test_the_page_speaks_chinese():
    at = open_app_page("compare", query={"v": "1", "lang": "zh"})
    assert not at.error
    assert at.title[0].value == "对比：两段文本或两个模型"
    assert "个头" in _sentence(at)
    assert at.radio(key="compare_mode").options == ["两段文本，一个模型", "两个模型，一段文本"]
    # The query menu's auto option is one word whatever the texts (a label with the token went stale on screen:
    # Streamlit keeps a selectbox's value as its label; issue 31); the caption names the query the comparison read.
    query = at.selectbox(key="compare_query")
    assert query.value == 10 and query.options[0] == "自动"
    assert "读取的查询：“10: it”。" in [c.value.replace("\\", "") for c in at.caption]
    query.set_value(None).run()
    assert "读取的查询：“13: tired/wide”（自动选择）。" in [c.value.replace("\\", "") for c in at.caption]
    assert "第一个不同的词元" in query.help
    status = next(c.value.replace("\\", "") for c in at.caption if "all-MiniLM-L6-v2" in c.value.replace("\\", ""))
    assert "内置" in status and "bundled" not in status


ZH_TIRED, ZH_WIDE = "动物没有过马路，因为它太累了。", "动物没有过马路，因为它太宽了。"


def _pair_warnings(at) -> list[str]:
    """The page's warnings about the pair itself (MiniLM also warns that it reads Chinese as [UNK])."""
    return [w.value for w in at.warning if "pair up" in w.value or "能配对" in w.value]


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_a_chinese_text_a_gets_the_chinese_pair_and_no_mixed_language_comparison(lang):
    """Issue 44 item 3: with a Chinese text A the page compared it with the English default B ("动物/The" moves…)
    and said nothing. Text B now follows A's pair; B in another script, or a poorly aligned B, gets one warning."""
    at = open_app_page("compare", query={"v": "1", "lang": lang, "text": ZH_TIRED})
    assert at.text_area(key="compare_text_a").value == ZH_TIRED
    assert at.text_area(key="compare_text_b").value == ZH_WIDE
    assert not _pair_warnings(at) and "The" not in at.code[0].value
    at.text_area(key="compare_text_b").set_value(TIRED).run()  # the reader writes an English B
    assert not at.exception
    warning = {"zh": "文本 A 与文本 B 用的是不同的文字", "en": "Text A and text B are written in different scripts"}
    assert len(_pair_warnings(at)) == 1 and warning[lang] in _pair_warnings(at)[0]
    at.text_area(key="compare_text_b").set_value(ZH_WIDE).run()
    assert not _pair_warnings(at)
    # One script, but not a minimal pair: 2 of 20 tokens ([CLS], [SEP]) pair as equal.
    at.text_area(key="compare_text_a").set_value("Rain is coming soon, let us go home.").run()
    at.text_area(key="compare_text_b").set_value("The quarterly report was late again.").run()
    share = {"zh": "（低于 50%）", "en": "(below 50%)"}
    assert len(_pair_warnings(at)) == 1 and share[lang] in _pair_warnings(at)[0].replace("\\", "")


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_an_unset_query_or_key_reads_in_the_page_s_language(lang):
    """Issue 44 walkthrough (Compare in 简体中文): the query's menu read "Choose an option" — Streamlit draws a None
    value as the widget's placeholder, English by default. The automatic query and an unset key read as the
    options' own words."""
    at = open_app_page("compare", query={"v": "1", "lang": lang})
    assert not at.exception
    assert at.selectbox(key="compare_query").proto.placeholder == t("compare.query_auto", lang)
    for key in ("compare_key1", "compare_key2"):
        assert at.selectbox(key=key).proto.placeholder == t("compare.key_none", lang)


def test_the_chinese_example_pair_on_gemma_asks_where_the_differing_word_looks_back():
    """The Chinese pair on the bundled Gemma 3 (which reads Chinese). Gemma is causal: the pronoun's token 因为它 comes
    before 累/宽 and cannot see them, so its two rows are equal (issue 44's walkthrough: 0 of 72 heads moved, JS
    1e-12). The page asks the differing word instead, with the keys 动物 and 路 (马路 is two tokens); the pronoun
    picked by hand gets one line saying why its row cannot change."""
    at = open_app_page("compare", query={"v": "1", "lang": "zh", "model": "bundled:gemma-3-270m", "text": ZH_TIRED})
    assert not at.exception and not at.error and not at.warning
    assert at.selectbox(key="compare_query").value is None  # the automatic query: the first differing token
    used = next(caption.value for caption in at.caption if "读取的查询" in caption.value).replace("\\", "")
    assert "累" in used and "宽" in used, used
    keys = (at.selectbox(key="compare_key1"), at.selectbox(key="compare_key2"))
    assert [key.format_func(key.value).split(": ")[1] for key in keys] == ["动物", "路"]
    pronoun = next(i for i, option in enumerate(at.selectbox(key="compare_query").options) if "因为它" in option)
    at.selectbox(key="compare_query").select_index(pronoun).run()
    assert not at.exception
    blind = [w.value for w in at.warning if "因果模型" in w.value]
    assert len(blind) == 1 and "因为它" in blind[0] and "不可能变化" in blind[0], [w.value for w in at.warning]


def test_a_query_before_the_difference_is_blind_only_on_a_causal_model():
    """The rule behind the warning, at its boundary: the last token of the common prefix is blind on a causal model,
    the first differing one is not, and a bidirectional model or two identical texts are never blind."""
    from inspector.analyses.token_alignment import align_tokens, causal_blind

    alignment = align_tokens(["it", "was", "too", "tired", "."], ["it", "was", "too", "wide", "."])
    assert alignment.common_prefix == 3
    assert causal_blind(2, alignment, True) and not causal_blind(3, alignment, True)
    assert not causal_blind(2, alignment, False)
    assert not causal_blind(0, align_tokens(["a", "b"], ["a", "b"]), True)


# ------------------------------------------------------------------------------------------------ Chromium

def _chart_titled(title: str) -> str:
    return f"[...document.querySelectorAll('{CHART} svg')].some(svg => svg.textContent.includes({title!r}))"


@pytest.mark.browser
def test_the_side_by_side_heatmaps_are_drawn_with_visible_cells_in_chromium(browser, app_url):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    try:
        page.goto(f"{app_url}/compare?" + urllib.parse.urlencode({"v": "1", "query": "it"}))
        for title in ("Text A: layer 0, head 0", "Text B: layer 0, head 0", "B − A: layer 0, head 0"):
            page.wait_for_function(_chart_titled(title), timeout=90_000)
        for title in ("Text A", "Text B", "B − A"):
            chart = page.locator(CHART).filter(has_text=f"{title}: layer 0, head 0")
            cells = chart.locator("g.mark-rect path")
            assert cells.count() >= 15 * 15 + 15  # every cell plus the outlined query row
            box = cells.first.bounding_box()
            assert box is not None and box["width"] >= 8 and box["height"] >= 8
            assert chart.bounding_box()["x"] + chart.bounding_box()["width"] <= 1400  # not cut off
        grid = page.locator(CHART).filter(has_text="moved its attention, head by head")
        cell = grid.locator('path[aria-label^="head: 1; layer: 3;"]').first
        cell.scroll_into_view_if_needed()
        box = cell.bounding_box()
        page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        page.wait_for_function(_chart_titled("Text A: layer 3, head 1"), timeout=30_000)
        page.wait_for_function("location.search.includes('layer=3') && location.search.includes('head=1')",
                               timeout=30_000)
        assert page.locator('[data-testid="stException"]').count() == 0
    finally:
        context.close()
