"""The real app in a real browser: a ``streamlit run`` server driven by headless Debian Chromium through
Playwright (the ``browser`` fixture in conftest.py). Checks what ``AppTest`` cannot see: the Vega charts
draw; clicking an entropy cell shows that head; the address bar's share link reopens the same view; the PNG
download is a PNG; bertviz's views draw with every request off this machine refused; the Ground truth page scores
a shipped model from a share link; hostile text —
in the text box or in a share link — is shown as text, opens no dialog and makes no request; and two sessions
running different texts at once each see only their own tokens (issue 9: no cross-talk).

Needs ``/usr/bin/chromium`` (``apt-get install chromium``). Without it these tests skip, unless
``INSPECTOR_REQUIRE_BROWSER=1`` — set in CI — makes a missing browser a failure.
"""

from __future__ import annotations

import os
import re
import struct
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError
from playwright.sync_api import expect

from benchmarks.live_app import CHART, CHART_DRAWN, AppServerError, click_grid_cell, heatmap_drawn, running_app
from inspector.base.i18n import t
from inspector.core.bundled import bundled_choices
from inspector.core.loading import shipped_choices
from inspector.output.lecture import LECTURE, step_index, step_url
from inspector.output.pages import PAGE_REGISTRY
from inspector.serving.hosting import DEFAULT_ALLOW_LIST

pytestmark = pytest.mark.browser

# The first session imports torch and loads the model inside the server, so the first chart takes a while.
FIRST_RENDER_TIMEOUT_MS = 90_000
RERUN_TIMEOUT_MS = 30_000

CHARTS_ON_THE_PAGE = 4  # entropy grid, entropy by layer, heatmap, every head of the layer
TOKEN_STRIP = '[data-testid="stMain"] [data-testid="stCode"]'
TEXT_AREA = '[data-testid="stTextArea"] textarea'
EXCEPTION = '[data-testid="stException"]'
IFRAME = '[data-testid="stIFrame"]'
# Markdown that would fetch an image from another host, or make a javascript: link, if any text reached Markdown.
MARKDOWN_INJECTION = "![x](http://127.0.0.2/x.png) [click](javascript:alert(8)) javascript:alert(9)"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
XSS_STRINGS = (
    "<img src=x onerror=alert(1)>",
    "<script>alert(2)</script>",
    "\"><svg onload=alert(3)>",
    "</script><script>alert(4)</script>",
    "<iframe src=javascript:alert(5)></iframe>",
    "[click](javascript:alert(6)) $\\alpha$ :red[red]",
)


class Session:
    """One browser tab on the app with every request off this machine refused and recorded, and every
    alert()/confirm()/prompt() recorded (there should be none of either)."""

    def __init__(self, browser, app_url: str):
        self.context = browser.new_context(viewport={"width": 1400, "height": 1000}, accept_downloads=True)
        self.page = self.context.new_page()
        self.app_url = app_url
        self.dialogs: list[str] = []
        self.outside_requests: list[str] = []
        self.context.route("**/*", self._only_this_server)
        self.page.on("dialog", lambda dialog: (self.dialogs.append(dialog.message), dialog.dismiss()))

    def _only_this_server(self, route) -> None:
        url = route.request.url
        if url.startswith(self.app_url) or url.startswith(("data:", "blob:", "about:")):
            route.continue_()
        else:
            self.outside_requests.append(url)
            route.abort()

    def open(self, query: str = "") -> None:
        self.page.goto(f"{self.app_url}/{query}")
        self.page.wait_for_selector(CHART_DRAWN, timeout=FIRST_RENDER_TIMEOUT_MS)
        self.wait_for_charts()

    def wait_for_charts(self) -> None:
        self.page.wait_for_function(f"document.querySelectorAll('{CHART}').length === {CHARTS_ON_THE_PAGE}",
                                    timeout=RERUN_TIMEOUT_MS)

    def wait_for_heatmap_of(self, layer: int, head: int) -> None:
        self.page.wait_for_function(heatmap_drawn(layer, head), timeout=RERUN_TIMEOUT_MS)

    def run_text(self, text: str) -> None:
        text_area = self.page.locator(TEXT_AREA)
        text_area.fill(text)
        text_area.press("Control+Enter")  # Streamlit commits a text area on Ctrl+Enter (or on blur)

    def toggle(self, label: str) -> None:
        self.page.get_by_text(label, exact=False).click()

    def assert_clean(self) -> None:
        assert self.dialogs == [] and self.outside_requests == []
        assert self.page.locator(EXCEPTION).count() == 0
        # HTML let through would leave its element behind even where a sanitiser removed the handler.
        assert self.page.locator('img[src="x"], iframe[src^="javascript"]').count() == 0


@pytest.fixture
def session(browser, app_url):
    opened = Session(browser, app_url)
    try:
        yield opened
    finally:
        opened.context.close()


def test_page_loads_and_the_charts_draw(session):
    session.open()
    expect(session.page.locator(TOKEN_STRIP).first).to_contain_text("2: animal", timeout=RERUN_TIMEOUT_MS)
    session.wait_for_heatmap_of(0, 0)
    session.assert_clean()


def test_clicking_an_entropy_cell_shows_that_head_and_the_share_link_reopens_it(session, browser, app_url):
    session.open()
    click_grid_cell(session.page, layer=3, head=5)
    session.wait_for_heatmap_of(3, 5)
    # The address bar follows the view; the share box holds the same link.
    session.page.wait_for_function("location.search.includes('layer=3') && location.search.includes('head=5')",
                                   timeout=RERUN_TIMEOUT_MS)
    link = session.page.url
    assert urllib.parse.parse_qs(urllib.parse.urlparse(link).query)["layer"] == ["3"]
    session.assert_clean()

    reopened = Session(browser, app_url)
    try:
        reopened.open(link.removeprefix(app_url).lstrip("/"))
        reopened.wait_for_heatmap_of(3, 5)
        reopened.assert_clean()
    finally:
        reopened.context.close()


def test_png_download_is_a_png_at_twice_the_size(session):
    session.open()
    session.wait_for_heatmap_of(0, 0)
    button = session.page.locator('[data-testid="stDownloadButton"]').filter(has_text="PNG").nth(2)  # the heatmap's
    with session.page.expect_download(timeout=RERUN_TIMEOUT_MS) as download:
        button.click()
    data = Path(download.value.path()).read_bytes()
    assert data.startswith(PNG_SIGNATURE)
    width, height = struct.unpack(">II", data[16:24])  # IHDR
    assert download.value.suggested_filename == "attention-L0-H0.png"
    assert width > 800 and height > 800  # 16 tokens × ~28 px cells plus labels, at scale 2
    session.assert_clean()


def test_bertviz_views_draw_with_the_network_blocked(session):
    session.open()
    session.toggle("Show bertviz's head view")
    frame = session.page.frame_locator(IFRAME).first
    frame.locator("#attention line").first.wait_for(state="attached", timeout=RERUN_TIMEOUT_MS)
    expect(frame.locator("#left text")).to_have_count(16, timeout=RERUN_TIMEOUT_MS)  # one per token
    session.page.get_by_role("tab", name="Model view").click()
    model = session.page.frame_locator(IFRAME).nth(1)
    model.locator("svg").first.wait_for(state="attached", timeout=RERUN_TIMEOUT_MS)
    session.assert_clean()


def test_xss_strings_in_the_text_are_shown_as_text_and_run_nothing(session):
    session.open()
    session.toggle("Show bertviz's head view")  # bertviz shows the tokens too
    session.run_text("  ".join(XSS_STRINGS))
    session.page.wait_for_function(f"document.querySelector('{TOKEN_STRIP}')?.innerText.includes('alert')",
                                   timeout=RERUN_TIMEOUT_MS)
    session.wait_for_heatmap_of(0, 0)  # long text: no small multiples, so fewer charts
    session.page.locator(CHART).nth(2).hover()  # the heatmap's tooltip shows token strings too
    session.page.frame_locator(IFRAME).first.locator("#attention line").first.wait_for(state="attached",
                                                                                        timeout=RERUN_TIMEOUT_MS)
    session.page.wait_for_timeout(500)
    session.assert_clean()


def test_a_hostile_share_link_warns_and_runs_nothing(session):
    hostile = urllib.parse.urlencode({"v": "1", "backend": XSS_STRINGS[0], "model": XSS_STRINGS[2],
                                      "layer": "[x](javascript:alert(7))", "text": MARKDOWN_INJECTION})
    session.open(f"?{hostile}")
    session.page.wait_for_function(f"document.querySelector('{TOKEN_STRIP}')?.innerText.includes('127')",
                                   timeout=RERUN_TIMEOUT_MS)
    assert session.page.locator('img[src*="127.0.0.2"], a[href^="javascript"]').count() == 0
    warnings = session.page.locator('[data-testid="stAlertContentWarning"]')
    for option in ("backend", "layer"):  # waited for: the sidebar's warnings may be drawn after the token strip
        expect(warnings.filter(has_text=option).first).to_be_visible(timeout=RERUN_TIMEOUT_MS)
    assert session.page.locator('[data-testid="stAlertContentWarning"] a').count() == 0  # no link was made
    session.assert_clean()


def _strip_of(loaded, text: str) -> str:
    """The token strip a single session shows for ``text`` (as views/inspect.py writes it)."""
    from inspector.charts.base import token_labels

    ids = loaded.codec.input_ids(text)
    return "   ".join(token_labels(tuple(loaded.codec.token_strings(ids))))


def _tokens_metric(session):
    """The "Tokens" metric's value, a locator to wait on (the strip may be drawn before the metric is redrawn)."""
    metric = session.page.locator('[data-testid="stMetric"]').filter(has_text="Tokens")
    return metric.locator('[data-testid="stMetricValue"]')


def test_two_sessions_running_at_once_each_see_only_their_own_tokens(browser, app_url, bundled):
    texts = ("The cat sat on the mat because it was tired.", "Queries search keys like addresses in a table.")
    sessions = [Session(browser, app_url) for _ in texts]
    try:
        for session in sessions:
            session.open()
        for round_texts in (texts, texts[::-1]):  # then swapped, so each session's cache hit is the other's text
            for session, text in zip(sessions, round_texts):
                session.run_text(text)  # both reruns in flight on one server
            for session, text in zip(sessions, round_texts):
                expected = _strip_of(bundled, text)
                session.page.wait_for_function("([selector, strip]) => document.querySelector(selector)?.innerText"
                                               ".trim() === strip", arg=[TOKEN_STRIP, expected],
                                               timeout=RERUN_TIMEOUT_MS)
                session.wait_for_heatmap_of(0, 0)
                expect(_tokens_metric(session)).to_have_text(f"{expected.count(': ')} / 512",
                                                             timeout=RERUN_TIMEOUT_MS)
                session.assert_clean()
    finally:
        for session in sessions:
            session.context.close()


def test_a_hosted_server_offers_only_its_allow_list_and_refuses_a_linked_model(browser):
    """The deployment path end to end: INSPECTOR_HOSTED=1 and the hosted flags of `make hosted` / the Dockerfile."""
    assert DEFAULT_ALLOW_LIST.is_file()
    try:
        with running_app(env={"INSPECTOR_HOSTED": "1"},
                         options=["--client.showErrorDetails", "none", "--client.toolbarMode", "viewer"]) as url:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=5) as health:
                assert health.status == 200 and health.read() == b"ok"
            session = Session(browser, url)
            try:
                session.open("?" + urllib.parse.urlencode({"model": "someone/seven-billion", "layer": "2"}))
                session.wait_for_heatmap_of(2, 0)
                # Wait for what is asserted (a busy machine draws the warning and the menu a moment later).
                warning = session.page.locator('[data-testid="stAlertContentWarning"]').filter(
                    has_text="not one of the models this instance offers")
                expect(warning.first).to_contain_text("bundled model", timeout=30_000)
                offered = ["all-MiniLM-L6-v2 (bundled)", *bundled_choices().values(), *shipped_choices().values()]
                options = session.page.locator('[role="option"]')
                menu = session.page.locator('[data-testid="stSelectbox"]').filter(has_text="Model").first
                deadline = time.monotonic() + 60
                while options.count() == 0 and time.monotonic() < deadline:
                    # A rerun still drawing the sidebar closes a menu opened under it: open it again until it stays.
                    menu.click()
                    try:
                        options.first.wait_for(state="visible", timeout=5_000)
                    except PlaywrightTimeoutError:
                        session.page.keyboard.press("Escape")
                expect(options).to_have_text(offered, timeout=30_000)
                session.page.keyboard.press("Escape")
                assert session.page.locator('[data-testid="stTextInput"]').count() == 0  # no free-text model box
                session.assert_clean()
            finally:
                session.context.close()
    except AppServerError as err:
        pytest.fail(str(err))


def test_a_share_link_to_a_page_is_the_first_request_a_fresh_server_gets(browser):
    """A share link names its page by path (``/inspect?…``). Opened as the very first request of a new server
    process it must still run through app.py: the app's navigation (page titles), not Streamlit's old
    folder-based pages (helper modules listed as pages, no page config)."""
    try:
        with running_app() as url:
            session = Session(browser, url)
            try:
                session.open("inspect?" + urllib.parse.urlencode({"v": "1", "layer": "2", "head": "3"}))
                session.wait_for_heatmap_of(2, 3)
                nav = session.page.locator('[data-testid="stSidebarNav"]').inner_text()
                assert "Inspect" in nav and "Lessons" in nav and "session" not in nav.lower()
                assert session.page.title() == "Attention Inspector"
                session.assert_clean()
            finally:
                session.context.close()
    except AppServerError as err:
        pytest.fail(str(err))


@pytest.mark.parametrize("name", list(PAGE_REGISTRY))
def test_every_registered_page_path_opens_as_a_share_link(session, name):
    """Issue 44, item 1: ``/inspect?…`` (the home page's own path, which the Lecture's steps and the sidebar once wrote)
    opened on Streamlit's "Page not found". Every path the registry names opens its page, and the home page's path
    lands on the root with the link's parameters kept."""
    link = urllib.parse.urlencode({"v": "1", "text": "The cat sat.", "layer": "1", "head": "2", "page": name})
    session.page.goto(f"{session.app_url}/{name}?{link}")
    session.page.locator('[data-testid="stMain"] h1').first.wait_for(timeout=FIRST_RENDER_TIMEOUT_MS)
    expected = "/" if PAGE_REGISTRY[name].default else f"/{name}"
    session.page.wait_for_function(f"location.pathname === {expected!r} && location.search.includes('v=1')",
                                   timeout=RERUN_TIMEOUT_MS)
    if name != "lecture":  # the Lecture's link is its step alone
        session.page.wait_for_function("location.search.includes('layer=1')", timeout=RERUN_TIMEOUT_MS)
    session.page.wait_for_timeout(1_500)  # the frontend's "Page not found" dialog comes with the navigation message
    assert session.page.get_by_text("Page not found").count() == 0
    # The menu marks the page: the link's text is the icon's name, then the label.
    label = t(PAGE_REGISTRY[name].nav_key, "en")
    current = session.page.locator('[data-testid="stSidebarNav"] a[aria-current="page"]')
    expect(current).to_have_text(re.compile(rf"{re.escape(label)}\s*$"), use_inner_text=True, timeout=RERUN_TIMEOUT_MS)
    session.assert_clean()


# The lesson's title (its expander's summary) below Streamlit's fixed header and inside the window.
_LESSON_TITLE_SHOWN = """number => {
  const title = document.querySelector(`.st-key-lesson-${number} summary`);
  const header = document.querySelector('[data-testid="stHeader"]');
  if (!title || !header) { return false; }
  const box = title.getBoundingClientRect();
  return box.top >= header.getBoundingClientRect().bottom && box.bottom <= window.innerHeight;
}"""
# A fresh server opening Lessons at lesson 7 draws every lesson above it first: the lesson appeared after 118 s on
# this 2-core machine under load (the walkthrough running beside it), past FIRST_RENDER_TIMEOUT_MS.
LESSON_LINK_TIMEOUT_MS = 300_000
_SCROLLED_AND_STOPPED = """() => [...document.querySelectorAll('*')].some(element => element.scrollTop > 0)
  && document.querySelector('[data-testid="stApp"]')?.getAttribute('data-test-script-state') === 'notRunning'"""


def test_a_lecture_step_to_a_lesson_shows_the_lessons_title_below_the_header(session):
    """Issue 44 item 8, redone in Chromium at 1000 px: the step scrolled its lesson to the very top of the page, where
    Streamlit's fixed header covers it — the reader saw a question with no lesson title above it. Once the page has
    scrolled and its run has ended, the lesson's title shows below the header. (English: the zh step is the same
    page and script on Gemma, minutes slower here.)"""
    lang = "en"
    step = LECTURE[step_index("complexity")]  # lesson 7, far enough down the page to scroll to
    session.page.set_viewport_size({"width": 1000, "height": 1000})
    session.page.goto(step_url(session.app_url, step, lang))
    session.page.wait_for_function(_SCROLLED_AND_STOPPED, timeout=LESSON_LINK_TIMEOUT_MS)
    session.page.wait_for_function(_LESSON_TITLE_SHOWN, arg=step.lesson, timeout=RERUN_TIMEOUT_MS)
    expect(session.page.locator(f".st-key-lesson-{step.lesson} summary")).to_contain_text(
        t(f"lesson{step.lesson}.title", lang))
    session.assert_clean()


# Each Lecture step's label in the step list as the lines it is drawn on (characters grouped by their box's top; a
# superscript sits a few pixels above its line).
_STEP_LABEL_LINES = """() => [...document.querySelectorAll('[data-testid="stRadio"] [role="radiogroup"] label')]
  .map(label => label.querySelector('[data-testid="stMarkdownContainer"]') || label)
  .map(box => {
    const lines = [];
    const walker = document.createTreeWalker(box, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      for (let i = 0; i < node.length; i++) {
        const range = document.createRange();
        range.setStart(node, i);
        range.setEnd(node, i + 1);
        const rect = range.getClientRects()[0];
        if (!rect) { continue; }
        const line = lines.find(seen => Math.abs(seen.top - rect.top) < 8);
        if (line) { line.text += node.data[i]; } else { lines.push({top: rect.top, text: node.data[i]}); }
      }
    }
    return lines.map(line => line.text.trim()).filter(text => text);
  })"""


def test_the_lecture_step_titles_wrap_cleanly_in_chinese_at_1000_px(session):
    """Issue 44 walkthrough: step 9's title, "O(n²)，以及 FlashAttention 改变了什么", took three lines in the step list
    at 1000 px, "么" alone on the last. Every step title takes at most two lines and none ends on a lone character."""
    session.page.set_viewport_size({"width": 1000, "height": 1000})
    session.page.goto(f"{session.app_url}/lecture?" + urllib.parse.urlencode({"v": "1", "lang": "zh"}))
    labels = session.page.locator('[data-testid="stRadio"] [role="radiogroup"] label')
    expect(labels).to_have_count(len(LECTURE), timeout=FIRST_RENDER_TIMEOUT_MS)
    expect(labels.nth(8)).to_contain_text(t("lecture.complexity.title", "zh"))
    lines = session.page.evaluate(_STEP_LABEL_LINES)
    assert len(lines) == len(LECTURE)
    for step_lines in lines:
        assert len(step_lines) <= 2 and all(len(line) > 1 for line in step_lines), lines
    session.assert_clean()


def test_the_menu_speaks_the_language_of_the_link(session):
    """``lang=zh`` in a link translates the navigation too (app.py builds the menu before any page runs)."""
    session.open("?" + urllib.parse.urlencode({"v": "1", "lang": "zh"}))
    nav = session.page.locator('[data-testid="stSidebarNav"]')
    for label in ("查看", "课程"):
        expect(nav).to_contain_text(label, timeout=RERUN_TIMEOUT_MS)
    assert "Inspect" not in nav.inner_text()
    session.assert_clean()


def test_the_toolbar_offers_no_deploy_button_on_a_local_server(session):
    """Issue 44: a local server (``make app``: ``streamlit run app.py`` on localhost) showed Streamlit's "Deploy"
    button in English on the 简体中文 pages. The shared config sets the viewer toolbar: its menu, no Deploy."""
    session.open("?" + urllib.parse.urlencode({"v": "1", "lang": "zh"}))
    # The toolbar's menu and the Deploy button are drawn together (the app's header, once connected).
    session.page.locator('[data-testid="stMainMenu"]').wait_for(timeout=RERUN_TIMEOUT_MS)
    assert session.page.locator('[data-testid="stAppDeployButton"]').count() == 0
    assert session.page.get_by_role("button", name="Deploy").count() == 0
    session.assert_clean()


def _chart_titled(title: str) -> str:
    """A JavaScript predicate: a drawn chart's SVG holds ``title`` (spaces ignored: a title that does not fit its
    column is drawn as lines, whose text runs together in ``textContent``)."""
    squeezed = "".join(title.split())
    return (f"[...document.querySelectorAll('{CHART} svg')]"
            f".some(svg => svg.textContent.replace(/\\s+/g, '').includes({squeezed!r}))")


def test_the_ground_truth_page_scores_the_deceptive_model_from_a_link(session):
    """/groundtruth?model=… opens the page on that model; with nothing else set it scores the default 100 examples
    (about 15 s on two cores) and draws the example, the scoreboard and the head grids."""
    link = urllib.parse.urlencode({"v": "1", "model": "shipped:deceptive-attention"})
    session.page.goto(f"{session.app_url}/groundtruth?{link}")
    session.page.wait_for_function(_chart_titled("Where each method puts the credit on this example"),
                                   timeout=FIRST_RENDER_TIMEOUT_MS)
    session.page.wait_for_function(_chart_titled("Ground truth: deceptive-attention classifier (shipped) — which "
                                                 "method finds the causal token?"), timeout=FIRST_RENDER_TIMEOUT_MS)
    session.page.wait_for_function(_chart_titled("Which heads' attention peaks on the causal token"),
                                   timeout=RERUN_TIMEOUT_MS)
    # Waited for, not read once: the frontend may still be mounting the elements that came before the last chart.
    session.page.wait_for_function(  # the example's table, the scoreboard
        "document.querySelectorAll('[data-testid=\"stDataFrame\"]').length === 2", timeout=RERUN_TIMEOUT_MS)
    session.page.locator('[data-testid="stMetric"]', has_text="Attention bound").wait_for(timeout=RERUN_TIMEOUT_MS)
    session.page.get_by_text("Better than chance", exact=False).wait_for(timeout=RERUN_TIMEOUT_MS)  # the reading
    session.page.wait_for_function("location.search.includes('page=groundtruth')", timeout=RERUN_TIMEOUT_MS)
    assert "deceptive-attention" in session.page.url
    session.assert_clean()


def _go_to(session, page_title: str) -> None:
    """Switch page through the sidebar's menu, in the same session (a new address would be a new session)."""
    session.page.locator('[data-testid="stSidebarNav"] a', has_text=page_title).first.click()


def _expect_selectbox(session, label: str, value: str, *, in_sidebar: bool = False) -> None:
    """The select box labelled ``label`` (its combobox input carries the label) shows ``value``, waited for: a page
    just switched to may draw its boxes after the chart a test waited on."""
    scope = '[data-testid="stSidebar"]' if in_sidebar else '[data-testid="stMain"]'
    box = session.page.locator(f'{scope} input[role="combobox"][aria-label="{label}"]').first
    expect(box).to_have_value(value, timeout=RERUN_TIMEOUT_MS)


def test_each_page_keeps_its_own_view_ground_truth_then_compare_then_inspect(session):
    """Issue 31, item 1: choosing the deceptive-attention model on Ground truth is that page's choice — Compare
    then runs on the sidebar's model, Inspect comes back at the reader's layer and head, and no share-link warning
    appears when no link was opened."""
    # Long waits, not timings: this test loads three models and scores a Ground truth example in one session.
    session.page.goto(f"{session.app_url}/")
    session.page.wait_for_function(heatmap_drawn(0, 0), timeout=3 * FIRST_RENDER_TIMEOUT_MS)
    click_grid_cell(session.page, layer=4, head=5)
    session.page.wait_for_function(heatmap_drawn(4, 5), timeout=3 * FIRST_RENDER_TIMEOUT_MS)

    _go_to(session, "Ground truth")
    session.page.get_by_role("button", name=shipped_choices()["shipped:deceptive-attention"]).click()
    session.page.wait_for_function(_chart_titled("Where each method puts the credit on this example"),
                                   timeout=3 * FIRST_RENDER_TIMEOUT_MS)
    warnings = " ".join(session.page.locator('[data-testid="stAlertContentWarning"]').all_inner_texts())
    assert "Share link" not in warnings
    _expect_selectbox(session, "Model", "all-MiniLM-L6-v2 (bundled)", in_sidebar=True)

    _go_to(session, "Compare")
    session.page.wait_for_function(_chart_titled("Text A: layer 4, head 5"), timeout=3 * FIRST_RENDER_TIMEOUT_MS)
    _expect_selectbox(session, "Model", "all-MiniLM-L6-v2 (bundled)", in_sidebar=True)
    _expect_selectbox(session, "Layer", "4")
    _expect_selectbox(session, "Head", "5")
    assert "[UNK]" not in session.page.locator('[data-testid="stMain"]').inner_text()

    _go_to(session, "Inspect")
    session.page.wait_for_function(heatmap_drawn(4, 5), timeout=3 * FIRST_RENDER_TIMEOUT_MS)
    _expect_selectbox(session, "Layer", "4")
    _expect_selectbox(session, "Head", "5")
    warnings = " ".join(session.page.locator('[data-testid="stAlertContentWarning"]').all_inner_texts())
    assert "Share link" not in warnings
    session.assert_clean()


_RUN_OVER = """() => document.querySelector('[data-testid="stApp"]')?.dataset.testScriptState === 'notRunning'
    && document.querySelector('[data-testid="stSidebar"] [data-testid="stTextArea"] textarea') !== null"""
# A page has run after a switch to it: its address, Streamlit's running indicator gone, and the link that page
# publishes at the end of its run (the Heads page's names it, the Inspect page's names none; every link holds "v").
# Nothing else on the page says so: right after a click the previous page's elements and script state are still shown.
_SETTLED_ON = {
    page: f"""() => location.pathname.endsWith('{path}')
        && !document.querySelector('[data-testid="stStatusWidget"]')
        && (new URLSearchParams(location.search).get('page') ?? 'inspect') === '{page}'
        && new URLSearchParams(location.search).has('v')"""
    for page, path in (("heads", "/heads"), ("inspect", "/"))
}
# × 4 sessions × 2 switches a round, half of them 0.3 s after Ctrl+Enter. One round in the suite (8 switches, CI's
# minutes); the 72 switches: INSPECTOR_SWITCH_ROUNDS=9 (docs/BENCHMARKS.md has the run).
SWITCH_ROUNDS = int(os.environ.get("INSPECTOR_SWITCH_ROUNDS", "1"))


def _busy_text(round_number: int, session_number: int) -> str:
    """485 tokens for the bundled model (under its 512): a forward pass that keeps the server busy for a while.
    New in each round and session: a text run before is a cached result, over at once."""
    return f"Round {round_number}. " + " ".join(f"word{session_number} river {k}" for k in range(120))


def _settled_on(sessions: list, page: str) -> list[tuple]:
    """Each session's share-link text and text box once ``page`` has run, with what the page said."""
    kept = []
    for session in sessions:
        said = session.page.locator('[data-testid="stMain"] [data-testid="stAlert"]')
        try:
            session.page.wait_for_function(_SETTLED_ON[page], timeout=3 * FIRST_RENDER_TIMEOUT_MS, polling=250)
        except PlaywrightTimeoutError:
            pytest.fail(f"the {page} page published no link at {session.page.url}; it said {said.all_inner_texts()}")
        kept.append((urllib.parse.parse_qs(urllib.parse.urlparse(session.page.url).query).get("text"),
                     session.page.locator(TEXT_AREA).input_value(), said.all_inner_texts()))
        session.assert_clean()
    return kept


def test_a_page_switch_right_after_ctrl_enter_keeps_every_session_s_new_text(browser, app_url):
    """Issue 33, item 4, and issue 45, item 7: four sessions at once each type a new text, press Ctrl+Enter and switch
    to Heads 0.3 s later while the server is still busy with their previous run, then switch back to Inspect; in
    rounds (:data:`SWITCH_ROUNDS`). In 6 of 16 such sessions the text was lost (the text box came back without it,
    and so did the share link): the Ctrl+Enter rerun still waited behind the running one when the switch arrived,
    Streamlit merged the two, and a page switch carries only the widgets the entry script (app.py) draws. Then 2 in
    72 switches: every run sent the sidebar's values back to the browser, so the busy run put the old text back in
    the box after the reader's Ctrl+Enter, and the switch carried it. The issue's load (12 sessions clicking heads)
    is stood in for by a 485-token text each session runs just before, whose forward pass keeps the server from
    taking the next request."""
    # One typed text for all four sessions and rounds: the Heads and Inspect runs on it are computed once (cached
    # calls), which keeps this test's time down; what failed was a text lost — the box and the link holding the
    # round's busy text instead — not one session's text shown in another (no cross-talk is tested above).
    text = "Each session typed this new text about queries and keys."
    sessions = [Session(browser, app_url) for _ in range(4)]
    switches = []  # (round, page, what the session kept)
    try:
        for session in sessions:  # the four first runs at once
            session.page.goto(f"{app_url}/")
        # The server has run the page (the browser may still be drawing it). Four first runs at once, perhaps on a
        # server whose first run still imports torch and loads the model: 90 s were not enough on a loaded machine.
        for session in sessions:
            session.page.wait_for_function(_RUN_OVER, timeout=3 * FIRST_RENDER_TIMEOUT_MS, polling=250)
        for round_number in range(SWITCH_ROUNDS):
            for session_number, session in enumerate(sessions):
                session.run_text(_busy_text(round_number, session_number))  # the runs the server is busy with
            for session in sessions:
                session.run_text(text)
            sessions[-1].page.wait_for_timeout(300)
            for page, title in (("heads", "Heads"), ("inspect", "Inspect")):
                for session in sessions:
                    _go_to(session, title)
                switches += [(round_number, page, kept) for kept in _settled_on(sessions, page)]
    finally:
        for session in sessions:
            session.context.close()
    assert len(switches) == SWITCH_ROUNDS * len(sessions) * 2
    lost = [(round_number, page, str(link)[:40], box[:40], said) for round_number, page, (link, box, said) in switches
            if (link, box) != ([text], text)]  # the share link's text, the text box
    assert lost == [], f"{len(lost)} of {len(switches)} switches lost the text: {lost}"


STOPPED_REDRAW_TIMEOUT_MS = 10_000
_STOP_CLICKED = """() => {
    const stop = [...document.querySelectorAll('[data-testid="stStatusWidget"] button')]
        .find(button => button.innerText.includes('Stop'));
    if (stop) stop.click();
    return Boolean(stop);
}"""


def test_the_toolbar_s_stop_leaves_no_running_line_on_the_page(session, app_url):
    """Issue 33, item 12: Streamlit's own Stop (the toolbar's) ends a run where it stands, with no chance to redraw,
    and "Measuring 72 heads…" with its spinner and the half-filled bar stayed on the page. What says "running"
    shows only while the page runs."""
    # 47 × 10 + 2 = 472 tokens: long enough to stop mid-run, under MiniLM's 512 (at 60 × 10 + 2 = 602 the page
    # refused the text, and the test passed only while the model loaded slowly enough to show "Measuring…" first).
    text = " ".join(f"step {k} of a long text the Heads page measures" for k in range(47))
    session.page.goto(f"{app_url}/heads?{urllib.parse.urlencode({'text': text})}")
    measuring = session.page.get_by_text("Measuring 72 heads", exact=False)
    measuring.first.wait_for(timeout=FIRST_RENDER_TIMEOUT_MS)
    # Clicked inside the page in one step: the status widget redraws as the run's progress moves, so a locator's
    # click can keep finding its button detached until the run ends (a flaky timeout, seen once in the suite).
    session.page.wait_for_function(_STOP_CLICKED, timeout=RERUN_TIMEOUT_MS, polling=100)
    session.page.wait_for_function("document.querySelector('[data-testid=\"stApp\"]').dataset.testScriptState"
                                   " !== 'running'", timeout=RERUN_TIMEOUT_MS)
    # Gone once the page has taken the stop in (the frontend's last redraw may land a moment after the state
    # changes), and not drawn again: what the issue saw was the line staying for good.
    for running_line in (measuring, session.page.locator('[data-testid="stProgress"]')):
        for index in range(running_line.count()):
            running_line.nth(index).wait_for(state="hidden", timeout=STOPPED_REDRAW_TIMEOUT_MS)
    session.page.wait_for_timeout(1000)
    assert not measuring.filter(visible=True).count()
    assert not session.page.locator('[data-testid="stProgress"]').filter(visible=True).count()
    session.assert_clean()
