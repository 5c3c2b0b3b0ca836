"""The Atlas page in a real browser (issue 41, "Tests"): a click on a dot of the shipped MiniLM atlas opens that head's
card, and a context's Inspect button opens its text on Inspect at that layer and head — each step waited for on what
it asserts. Chromium through Playwright (the ``browser`` and ``app_url`` fixtures of conftest.py)."""

from __future__ import annotations

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
