"""The Atlas page in a real browser (issue 41, "Tests" and "Done when"): a click on a dot of the shipped MiniLM atlas
opens that head's card, and a context's Inspect button opens its text on Inspect at that layer and head; the shipped
Gemma atlas in 简体中文 at 1000 px, its menus readable, opens its top induction head's card on the corpus sentences
where it copies — each step waited for on what it asserts. Chromium through Playwright (the ``browser`` and
``app_url`` fixtures of conftest.py)."""

from __future__ import annotations

import html
import re

import pytest

from benchmarks.live_app import CHART, CHART_DRAWN, heatmap_drawn

pytestmark = pytest.mark.browser

FIRST_RENDER_TIMEOUT_MS = 90_000
RERUN_TIMEOUT_MS = 60_000
EXCEPTION = '[data-testid="stException"]'


def test_a_click_on_a_dot_opens_its_card_and_a_context_opens_inspect_at_that_head(browser, app_url):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    try:
        page.goto(f"{app_url}/atlas")
        page.wait_for_selector(CHART_DRAWN, timeout=FIRST_RENDER_TIMEOUT_MS)
        # Vega labels each point for screen readers with its description: the head's name.
        dot = page.locator(CHART).first.locator('path[aria-label="L4H7"]').first
        dot.scroll_into_view_if_needed()
        box = dot.bounding_box()
        page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        card = page.locator('[data-testid="stMain"] h3', has_text="Layer 4, head 7")
        card.wait_for(timeout=RERUN_TIMEOUT_MS)
        page.wait_for_function("location.search.includes('ahead=L4H7')", timeout=RERUN_TIMEOUT_MS)
        contexts = page.locator('[data-testid="stMain"] [data-testid="stHtml"]')
        assert contexts.count() >= 5  # the top contexts' snippets
        page.locator('[data-testid="stMain"]').get_by_role("button", name="Inspect").first.click()
        page.wait_for_function("location.pathname === '/' && location.search.includes('layer=4') "
                               "&& location.search.includes('head=7')", timeout=RERUN_TIMEOUT_MS)
        page.wait_for_function(heatmap_drawn(4, 7), timeout=FIRST_RENDER_TIMEOUT_MS)
        assert page.locator(EXCEPTION).count() == 0
    finally:
        context.close()


# A leaf of the page's menus or the card's HTML wider than its box: a menu value cut short, a table scrolled sideways.
CUT_SHORT = """() => [...document.querySelectorAll('[data-testid="stMain"] [data-testid="stSelectbox"] *,'
  + '[data-testid="stMain"] [data-testid="stHtml"] div')].filter(el => el.scrollWidth > el.clientWidth + 1)
  .map(el => el.textContent.slice(0, 40))"""


def test_the_gemma_atlas_in_chinese_opens_its_top_induction_head_on_corpus_sentences_where_it_copies(browser, app_url):
    from inspector.analyses.atlas import atlas_metrics, read_atlas, shipped_atlases
    from inspector.charts.atlas import context_html

    atlas = read_atlas(shipped_atlases()["gemma-3-270m"])
    assert divmod(int(atlas_metrics(atlas)["induction"].mean.argmax()), atlas.shape[1]) == (5, 1)
    top = atlas.exemplars.of_head(5, 1, "induction", "top")[0]
    drawn = context_html(atlas.exemplars.texts[top.text_index], top.query, dict(zip(top.keys, top.weights)))
    sentence = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", drawn)).split())  # the snippet as the page reads
    context = browser.new_context(viewport={"width": 1000, "height": 1000})
    page = context.new_page()
    try:
        page.goto(f"{app_url}/atlas?v=1&lang=zh&atlas=gemma-3-270m")
        page.wait_for_selector(CHART_DRAWN, timeout=FIRST_RENDER_TIMEOUT_MS)
        assert page.locator('[data-testid="stMain"] h1', has_text="注意力头图谱").count() == 1
        dot = page.locator(CHART).first.locator('path[aria-label="L5H1"]').first
        dot.scroll_into_view_if_needed()
        box = dot.bounding_box()
        page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        page.locator('[data-testid="stMain"] h3', has_text="第 5 层，第 1 个头").wait_for(timeout=RERUN_TIMEOUT_MS)
        shown = page.locator('[data-testid="stMain"] [data-testid="stHtml"]').filter(has_text=sentence[:40]).first
        shown.wait_for(timeout=RERUN_TIMEOUT_MS)
        assert " ".join(shown.inner_text().split()) == sentence  # a sentence of the corpus, as the census read it
        shaded = shown.locator('span[style*="background"]').all_inner_texts()  # the attended keys, highlighted
        assert len(shaded) == len(top.keys)
        assert "探针判定的角色：归纳" in page.locator('[data-testid="stMain"]').inner_text()  # its verdict: induction
        assert page.evaluate(CUT_SHORT) == [] and page.locator(EXCEPTION).count() == 0
    finally:
        context.close()
