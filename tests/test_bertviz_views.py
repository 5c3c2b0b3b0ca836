"""bertviz's head and model views built offline (inspector/charts/bertviz.py, issue 4).

The unit tests read the HTML: nothing in it points at the network, the vendored files are the checked ones,
hostile token strings cannot close the data's <script>, and bad requests get an InvalidRequestError that
says what to do. The browser tests (marker ``browser``) draw both views in headless Debian Chromium with
every request refused, as on an offline host: the SVG appears with the token texts, no script error is
raised, no request is attempted, and a token such as ``<img src=x onerror=alert(1)>`` stays text.

Like tests/test_browser.py these need ``/usr/bin/chromium``: without it they skip, unless
``INSPECTOR_REQUIRE_BROWSER=1`` (set in CI) makes a missing browser a failure.
"""

from __future__ import annotations

import dataclasses
import hashlib
import html as html_lib
import json
import re
import time
from html.parser import HTMLParser

import numpy as np
import pytest

import inspector.charts.bertviz as views
from inspector.base.errors import InvalidRequestError
from inspector.base.tokens import readable_tokens
from inspector.core.capture import Capture, OutputSummary, capture

SENTENCE = "The animal didn't cross the street because it was too tired."
HOSTILE_TOKENS = ("[CLS]", "<img src=x onerror=alert(1)>", "</script><script>alert(1)</script>", "a&amp;b",
                  "<!--", "\u2028", "[SEP]")
# Streamlit's sandbox for components.html / st.iframe (its frontend's IFrameUtil): scripts run, same origin.
STREAMLIT_SANDBOX = ("allow-forms allow-modals allow-popups allow-popups-to-escape-sandbox allow-same-origin "
                     "allow-scripts allow-downloads")
# An attribute or CSS reference that would make the browser fetch from the network.
FETCH_REFERENCE = re.compile(r"""(?:\b(?:src|href|action|srcset|data)\s*=\s*["']?\s*"""
                             r"""|url\(\s*["']?\s*|@import\s+["']?)(?:https?:)?//""", re.IGNORECASE)
DRAW_TIMEOUT_S = 30


def make_capture(tokens, *, layers: int = 2, heads: int = 3, weights_layers=None, seed: int = 0) -> Capture:
    """A hand-built Capture: any token strings, random row-stochastic weights for ``weights_layers``."""
    n = len(tokens)
    rng = np.random.default_rng(seed)
    zeros = np.zeros((layers, heads, n), np.float32)
    weights = {}
    for layer in (range(layers) if weights_layers is None else weights_layers):
        scores = rng.random((heads, n, n)) ** 4
        weights[layer] = (scores / scores.sum(-1, keepdims=True)).astype(np.float32)
    return Capture(model_name="hand-built", text=" ".join(tokens), tokens=tuple(tokens),
                   token_ids=np.arange(n, dtype=np.int64), offsets=np.zeros((n, 2), np.int32),
                   special=np.zeros(n, bool), entropy=zeros, lse=zeros, sink_mass=zeros,
                   visible_keys=np.full((layers, n), n, np.int32), causal=False, windows=(None,) * layers,
                   weights=weights, output=OutputSummary(kind="embedding", embedding=np.zeros(4, np.float32)),
                   backend="torch")


def uniform_capture(n_tokens: int, *, layers: int, heads: int) -> Capture:
    """A long capture for the limit tests without random numbers (every layer's weights held)."""
    empty = make_capture([f"t{i}" for i in range(n_tokens)], layers=layers, heads=heads, weights_layers=())
    uniform = np.full((heads, n_tokens, n_tokens), 1 / n_tokens, np.float32)
    return dataclasses.replace(empty, weights={layer: uniform for layer in range(layers)})


class _ElementLister(HTMLParser):
    def __init__(self):
        super().__init__()
        self.elements: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.elements.append(tag)


def parsed_elements(page_html: str) -> list[str]:
    """Start tags in document order, as an HTML parser sees them (script content is raw text to it)."""
    lister = _ElementLister()
    lister.feed(page_html)
    lister.close()
    return lister.elements


PAGE_START = ["html", "head", "meta", "meta", "title", "style", "body"] + ["script"] * 4
# bertviz's markup (the head view has a layer menu, the model view of one sentence none), its script, then the
# script that zooms the page to its frame's width.
EXPECTED_ELEMENTS = {"head": PAGE_START + ["div", "span", "select", "div", "script", "script"],
                     "model": PAGE_START + ["div", "span", "div", "script", "script"]}


def embedded_params(page_html: str) -> dict:
    """The parameters the page hands to bertviz's JavaScript, decoded as the browser would decode them."""
    line = next(line for line in page_html.splitlines() if line.lstrip().startswith(views._PARAMS_START))
    return json.loads(line.strip()[len(views._PARAMS_START):-1])


@pytest.fixture(scope="module")
def sentence_capture(bundled) -> Capture:
    return capture(bundled, SENTENCE, weights="all")


@pytest.fixture(scope="module")
def hostile_capture() -> Capture:
    return make_capture(HOSTILE_TOKENS)


# ---------------------------------------------------------------------------------------------- vendored files

def test_vendored_files_match_the_published_checksums():
    listed = {}
    for line in (views.VENDOR_DIR / "SHA256SUMS").read_text().splitlines():
        digest, name = line.split()
        listed[name] = digest
    vendor_doc = (views.VENDOR_DIR / "VENDOR.md").read_text()
    for name in views.VENDORED_SCRIPTS:
        assert name in listed, f"{name} is inlined but not checksummed in SHA256SUMS"
        assert listed[name] in vendor_doc, f"VENDOR.md does not list {name}'s sha256"
    for name, digest in listed.items():
        assert hashlib.sha256((views.VENDOR_DIR / name).read_bytes()).hexdigest() == digest, name


# ---------------------------------------------------------------------------------------------- the HTML

@pytest.mark.parametrize("build", [views.head_view_html, views.model_view_html], ids=["head", "model"])
def test_views_are_self_contained_and_fetch_nothing(sentence_capture, build):
    page = build(sentence_capture)
    assert page.startswith("<!DOCTYPE html>")
    assert FETCH_REFERENCE.findall(page) == []
    bertviz_script = page.rsplit("<script>", 1)[1]
    assert "cdnjs" not in page and "require.config" not in bertviz_script
    for name in views.VENDORED_SCRIPTS:
        assert (views.VENDOR_DIR / name).read_text(encoding="utf-8") in page
    policy = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]*)">', page).group(1)
    assert "default-src 'none'" in policy and "unsafe-inline" not in policy.split("style-src")[0]
    # Identical input, identical page: the app can cache it and Streamlit does not reload the iframe.
    assert build(sentence_capture) == page


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_views_own_words_are_in_the_page_language(sentence_capture, lang):
    """Issue 44 item 9: bertviz's "Layer:" label, its model view's axis titles and detail heading speak ``lang``."""
    head = views.head_view_html(sentence_capture, lang=lang)
    model = views.model_view_html(sentence_capture, lang=lang)
    if lang == "zh":
        assert "层： <select" in head and "Layer:" not in head and '<html lang="zh-Hans">' in head
        assert '.text("\\u5c42")' in model and '.text("\\u5934")' in model  # 层, 头 (the script escapes non-ASCII)
        assert "'Layer '" not in model and '"Layers"' not in model and '"Heads"' not in model
        assert '.text("\\u7b2c " + config.layers[layerIndex] + " \\u5c42\\uff0c\\u7b2c " + config.heads[headIndex]' \
            in model  # 第 L 层，第 H 个头
    else:
        assert "Layer: <select" in head and '.text("Layers")' in model and '.text("Heads")' in model
        assert '.text("Layer " + config.layers[layerIndex] + ", Head " + config.heads[headIndex] + "")' in model


def test_weights_are_embedded_rounded_and_tokens_unchanged(sentence_capture):
    params = embedded_params(views.model_view_html(sentence_capture, layers=[1, 4], heads=[0, 7]))
    attention = np.array(params["attention"][0]["attn"])  # (layers, heads, q_len, q_len)
    expected = np.stack([sentence_capture.weights[layer][[0, 7]] for layer in (1, 4)])
    np.testing.assert_array_equal(attention, np.round(expected.astype(np.float64), views.WEIGHT_DECIMALS))
    assert params["attention"][0]["left_text"] == list(sentence_capture.tokens)
    assert (params["include_layers"], params["include_heads"]) == ([1, 4], [0, 7])


@pytest.mark.parametrize("view", ["head", "model"])
def test_hostile_tokens_cannot_leave_the_data(hostile_capture, view):
    page = (views.head_view_html if view == "head" else views.model_view_html)(hostile_capture)
    # Parsed as the browser parses it: five scripts (d3, jQuery, require.js, the define shim, bertviz with
    # its data) and bertviz's own markup — a token that closed a script would add elements here.
    assert parsed_elements(page) == EXPECTED_ELEMENTS[view]
    for token in HOSTILE_TOKENS[1:-1]:
        assert token not in page
    assert "<img" not in page.lower() and "<!--" not in page
    # Escaped, not altered: the browser decodes exactly the labels the tokens read as (a space shown as ␣,
    # inspector.base.tokens, issue 27) — the markup inside them intact, as text.
    assert embedded_params(page)["attention"][0]["left_text"] == list(readable_tokens(HOSTILE_TOKENS))


# ---------------------------------------------------------------------------------------------- refusals

def test_a_layer_without_weights_is_refused_with_the_fix():
    partial = make_capture(["[CLS]", "a", "[SEP]"], layers=3, weights_layers=[0, 2])
    with pytest.raises(InvalidRequestError, match=r"layer 1, .*holds layers: 0, 2.*weights='all'"):
        views.head_view_html(partial, layers=[0, 1])
    with pytest.raises(InvalidRequestError, match=r"model view needs .*layer 1\b"):
        views.model_view_html(partial)  # the model view shows every layer by default
    assert embedded_params(views.head_view_html(partial))["include_layers"] == [0, 2]  # default: those held
    with pytest.raises(InvalidRequestError, match="holds no attention weights"):
        views.head_view_html(make_capture(["a", "b"], weights_layers=()))


@pytest.mark.parametrize("call, message", [
    (lambda c: views.head_view_html(c, layers=[7]), r"layer 7 does not exist: hand-built has 2 layers \(0–1\)"),
    (lambda c: views.model_view_html(c, heads=[3]), r"head 3 does not exist: .* 3 heads per layer \(0–2\)"),
    (lambda c: views.model_view_html(c, layers=[]), "no layers were chosen"),
    (lambda c: views.model_view_html(c, heads=["0"]), "heads must be whole numbers"),
    (lambda c: views.model_view_html(c, display_mode="sepia"), "display_mode must be 'light' or 'dark'"),
])
def test_bad_options_are_refused(call, message):
    with pytest.raises(InvalidRequestError, match=message):
        call(make_capture(["a", "b", "c"]))


def test_texts_too_long_for_a_view_are_refused_with_the_numbers():
    with pytest.raises(InvalidRequestError, match=r"129 tokens; the head view shows at most 128"):
        views.head_view_html(uniform_capture(129, layers=1, heads=1))
    with pytest.raises(InvalidRequestError, match=r"65 tokens; the model view shows at most 64"):
        views.model_view_html(uniform_capture(65, layers=1, heads=1))
    # Drawing: the bundled model's shape (6 layers × 12 heads) at 64 tokens is 294,912 lines at once.
    with pytest.raises(InvalidRequestError, match=r"6 layers × 12 heads × 64² tokens = 294,912 lines .* "
                                                  r"120,000 — choose at most 2 layers"):
        views.model_view_html(uniform_capture(64, layers=6, heads=12))
    # A 32-head model draws too much even for one layer of the head view.
    with pytest.raises(InvalidRequestError, match=r"32 heads × 96² tokens = 294,912 lines per layer.*to 61 tokens"):
        views.head_view_html(uniform_capture(96, layers=1, heads=32))
    # Page size: eight layers of 12 heads at 100 tokens would embed 960,000 weights; seven fit.
    long_text = uniform_capture(100, layers=8, heads=12)
    assert views.head_view_max_layers(long_text) == 7
    with pytest.raises(InvalidRequestError, match=r"960,000 weights.*900,000.*at most 7 layers"):
        views.head_view_html(long_text)


def test_the_largest_allowed_pages_stay_near_5_mb():
    # Uniform weights are near the worst case: every one prints as "0.01" (real attention has many "0.0").
    head = views.head_view_html(uniform_capture(100, layers=7, heads=12))
    model = views.model_view_html(uniform_capture(40, layers=6, heads=12))
    assert len(head.encode()) < 5.5e6 and len(model.encode()) < 2e6


# ---------------------------------------------------------------------------------------------- in Chromium

class OfflinePage:
    """A fresh page with the network cut off, recording what the page tried and what went wrong.

    A fresh page per document: ``set_content`` keeps the first document's Content-Security-Policy, which
    would block a second view's scripts (their hashes differ).
    """

    def __init__(self, browser):
        # A short viewport, so the document's scrollHeight is the content's height, not the window's.
        self.context = browser.new_context(viewport={"width": 1200, "height": 100})
        self.page = self.context.new_page()
        self.requests: list[str] = []
        self.errors: list[str] = []
        self.console_errors: list[str] = []
        self.dialogs: list[str] = []
        self.page.route("**/*", lambda route: (self.requests.append(route.request.url), route.abort()))
        self.page.on("pageerror", lambda error: self.errors.append(str(error)))
        self.page.on("console", lambda message: message.type == "error" and self.console_errors.append(message.text))
        self.page.on("dialog", lambda dialog: (self.dialogs.append(dialog.message), dialog.dismiss()))

    def wait_for(self, selector: str, count: int, frame=None, *, console_errors_expected: bool = False) -> None:
        """Until ``count`` elements match; fails at once, with the page's errors, if the page reports one."""
        target = frame or self.page
        deadline = time.monotonic() + DRAW_TIMEOUT_S
        while (found := target.locator(selector).count()) != count:
            broken = self.errors or (self.console_errors and not console_errors_expected)
            if broken or time.monotonic() > deadline:
                def shorten(messages):
                    return [m if len(m) < 300 else f"{m[:150]} … {m[-150:]}" for m in messages]

                pytest.fail(f"{found} of {count} '{selector}' drawn; page errors: {shorten(self.errors)}; console "
                            f"errors: {shorten(self.console_errors)}; requests: {self.requests}")
            self.page.wait_for_timeout(50)

    def texts(self, selector: str, frame=None) -> list[str]:
        return (frame or self.page).eval_on_selector_all(selector, "nodes => nodes.map(n => n.textContent)")

    def assert_clean(self) -> None:
        assert self.requests == [] and self.errors == [] and self.console_errors == [] and self.dialogs == []


@pytest.fixture
def offline(browser):
    opened = OfflinePage(browser)
    try:
        yield opened
    finally:
        opened.context.close()


def _prettified(tokens) -> list[str]:
    # As bertviz shows them: our readable labels (inspector.base.tokens), then bertviz's own clean-up.
    return [t.replace("Ġ", " ").replace("▁", " ").replace("</w>", "") for t in readable_tokens(tokens)]


def assert_height_predicted(page, predicted: int) -> None:
    """The predicted height shows the whole page, with no more than a few pixels to spare."""
    needed = page.evaluate("document.documentElement.scrollHeight")
    assert needed <= predicted <= needed + 24


@pytest.mark.browser
def test_head_view_draws_offline(offline, sentence_capture):
    n, heads = len(sentence_capture.tokens), sentence_capture.num_heads
    offline.page.set_content(views.head_view_html(sentence_capture))
    offline.wait_for("#attention line", heads * n * n)
    assert offline.texts("#left text") == offline.texts("#right text") == _prettified(sentence_capture.tokens)
    assert offline.texts("#layer option") == [str(layer) for layer in range(sentence_capture.num_layers)]
    offline.page.select_option("#layer", "3")  # another layer redraws from the embedded weights
    offline.wait_for("#attention line", heads * n * n)
    offline.page.hover("#left text >> nth=2")
    offline.wait_for("#attention line[visibility='visible']", heads * n)
    assert_height_predicted(offline.page, views.head_view_height(sentence_capture))
    offline.assert_clean()


@pytest.mark.browser
def test_model_view_draws_offline(offline, sentence_capture):
    n, layers, heads = len(sentence_capture.tokens), sentence_capture.num_layers, sentence_capture.num_heads
    offline.page.set_content(views.model_view_html(sentence_capture))
    offline.wait_for("svg line", layers * heads * n * n)
    offline.page.click("#attn_background_2_5", force=True)  # a thumbnail opens the detail with the tokens
    offline.wait_for("text.token", 2 * n)
    assert offline.texts("text.token") == 2 * _prettified(sentence_capture.tokens)
    assert "Layer 2, Head 5" in offline.texts("text.detail")
    assert_height_predicted(offline.page, views.model_view_height(sentence_capture))
    offline.assert_clean()


@pytest.mark.browser
@pytest.mark.parametrize("view", ["head", "model"])
def test_hostile_tokens_are_drawn_as_text(offline, hostile_capture, view):
    n = len(HOSTILE_TOKENS)
    if view == "head":
        offline.page.set_content(views.head_view_html(hostile_capture))
        offline.wait_for("#attention line", hostile_capture.num_heads * n * n)
        offline.page.hover("#left text >> nth=1")
        shown = offline.texts("#left text")
    else:
        offline.page.set_content(views.model_view_html(hostile_capture))
        offline.page.click("#attn_background_1_2", force=True)
        offline.wait_for("text.token", 2 * n)
        shown = offline.texts("text.token")[:n]
    assert shown == list(readable_tokens(HOSTILE_TOKENS))
    assert offline.page.locator("img").count() == 0
    assert offline.page.locator("script").count() == 6
    offline.assert_clean()


@pytest.mark.browser
def test_the_page_policy_stops_markup_that_got_in_anyway(offline, hostile_capture):
    # Defence in depth: were a token ever to reach the page as markup, the policy runs none of it and
    # fetches nothing. (The image lives on an unroutable host: a request would show in `requests`.)
    injected = "<img src=http://example.invalid/x.png onerror=alert(1)><script>alert(2)</script>"
    page = views.head_view_html(hostile_capture).replace("<body>\n", f"<body>\n{injected}", 1)
    offline.page.set_content(page)
    offline.wait_for("#attention line", hostile_capture.num_heads * len(HOSTILE_TOKENS) ** 2,
                     console_errors_expected=True)
    assert offline.dialogs == [] and offline.requests == [] and offline.errors == []
    assert any("Content Security Policy" in message for message in offline.console_errors)


@pytest.mark.browser
def test_the_view_draws_inside_a_streamlit_like_srcdoc_iframe(offline, sentence_capture):
    # How the app embeds it: components.html / st.iframe put the page in <iframe srcdoc> with this sandbox.
    height = views.head_view_height(sentence_capture)
    offline.page.set_content(f'<iframe sandbox="{STREAMLIT_SANDBOX}" style="border:0" width="1000" '
                             f'height="{height}" srcdoc="{html_lib.escape(views.head_view_html(sentence_capture))}">'
                             "</iframe>")
    frame = offline.page.frames[1]
    n = len(sentence_capture.tokens)
    offline.wait_for("#attention line", sentence_capture.num_heads * n * n, frame=frame)
    assert offline.texts("#left text", frame=frame) == _prettified(sentence_capture.tokens)
    # The predicted height shows the whole view: nothing scrolls inside the frame.
    assert frame.evaluate("document.documentElement.scrollHeight") <= height
    offline.assert_clean()


def test_layers_around_keeps_the_chosen_layer_inside_the_model():
    capture = make_capture(["a", "b", "c"], layers=6)
    assert views.layers_around(capture, 0, 3) == [0, 1, 2]
    assert views.layers_around(capture, 3, 3) == [2, 3, 4]
    assert views.layers_around(capture, 5, 3) == [3, 4, 5]
    assert views.layers_around(capture, 2, 99) == list(range(6))
    assert views.model_view_max_layers(capture) == 6  # 3 tokens: every layer fits
    long = uniform_capture(60, layers=6, heads=12)  # 12 · 60² = 43,200 lines a layer
    assert views.model_view_max_layers(long) == views.MAX_LINES_DRAWN_AT_ONCE // 43_200
    assert views.model_view_max_layers(uniform_capture(views.MODEL_VIEW_MAX_TOKENS + 1, layers=1, heads=1)) == 0


def test_the_head_view_opens_on_the_layer_and_head_asked_for(sentence_capture):
    params = embedded_params(views.head_view_html(sentence_capture, layer=3, head=2))
    assert (params["layer"], params["heads"]) == (3, [2])
    assert embedded_params(views.head_view_html(sentence_capture))["layer"] is None  # bertviz's default: the first
    with pytest.raises(InvalidRequestError, match="not among the layers"):
        views.head_view_html(sentence_capture, layers=[0, 1], layer=4)
    with pytest.raises(InvalidRequestError, match="head 99 does not exist"):
        views.head_view_html(sentence_capture, head=99)


@pytest.mark.browser
def test_the_head_view_shows_the_layer_asked_for(offline, sentence_capture):
    offline.page.set_content(views.head_view_html(sentence_capture, layer=4, head=1))
    n = len(sentence_capture.tokens)
    offline.wait_for("#attention line", sentence_capture.num_heads * n * n)
    assert offline.page.eval_on_selector("#layer", "menu => menu.value") == "4"
    offline.assert_clean()


@pytest.mark.browser
@pytest.mark.parametrize("frame_width", [940, 600])
def test_the_model_view_fits_the_width_of_its_frame(offline, sentence_capture, frame_width):
    """bertviz draws the model view 970 px wide; in a narrower frame (the app's column: 940 px at a 1400 px
    window) the page zooms out so the last head's column is not cut off."""
    html = views.model_view_html(sentence_capture)
    offline.page.set_content(f'<iframe sandbox="{STREAMLIT_SANDBOX}" style="border:0" width="{frame_width}" '
                             f'height="{views.model_view_height(sentence_capture)}" '
                             f'srcdoc="{html_lib.escape(html)}"></iframe>')
    frame = offline.page.frames[1]
    n, layers, heads = len(sentence_capture.tokens), sentence_capture.num_layers, sentence_capture.num_heads
    offline.wait_for("svg line", layers * heads * n * n, frame=frame)
    frame.wait_for_function("document.body.style.zoom !== ''")
    fit = frame.evaluate("""() => ({need: document.documentElement.scrollWidth,
                                    have: document.documentElement.clientWidth,
                                    right: Math.max(...[...document.querySelectorAll('svg rect')]
                                                    .map(r => r.getBoundingClientRect().right))})""")
    assert fit["need"] <= fit["have"] and fit["right"] <= fit["have"], fit
    offline.assert_clean()
