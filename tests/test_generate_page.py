"""The Generate page (views/generate.py) in ``AppTest`` and in a real browser, and its share-link state
(inspector/output/share.py: GenerateState)."""

from __future__ import annotations

import urllib.parse

import pytest

from inspector.output.share import PAGES, GenerateState, decode_generate, decode_view, encode_generate
from tests.conftest import APP_PATH

APP_TIMEOUT_S = 600


def test_a_generate_link_roundtrips_and_old_links_open_with_the_defaults():
    state = GenerateState(new=16, temp=0.7, topk=40, topp=0.9, seed=12345, chat=True, step=5)
    assert decode_generate(encode_generate(state)) == (state, ())
    assert encode_generate(GenerateState()) == {}  # a default run adds nothing to a link
    assert decode_generate({"v": "1", "text": "hi", "layer": "2"}) == (GenerateState(), ())  # a link from before
    assert "generate" in PAGES and decode_view({"v": "1", "page": "generate"})[0].page == "generate"


@pytest.mark.parametrize("params, key", [
    ({"new": "0"}, "new"), ({"new": "99999"}, "new"), ({"temp": "nan"}, "temp"), ({"temp": "-1"}, "temp"),
    ({"topp": "0"}, "topp"), ({"topp": "1.5"}, "topp"), ({"topk": "x"}, "topk"), ({"seed": "-3"}, "seed"),
    ({"step": "1e9"}, "step"), ({"chat": "maybe"}, "chat"), ({"new": ["4", "<script>"]}, "new"),
])
def test_a_bad_generate_parameter_falls_back_with_a_warning(params, key):
    state, warnings = decode_generate(params)
    assert getattr(state, key) == getattr(GenerateState(), key)
    assert len(warnings) == 1 and str(warnings[0]).startswith(f"{key}=")


def _generate_page(query: dict[str, str], state: dict | None = None):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(APP_PATH), default_timeout=APP_TIMEOUT_S)
    for name, value in query.items():
        at.query_params[name] = value
    for name, value in (state or {}).items():
        at.session_state[name] = value
    at.switch_page("views/generate.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


@pytest.mark.parametrize("lang, words", [("en", "pick"), ("zh", "请在侧边栏中选择")])
def test_an_encoder_gets_one_line_naming_the_bundled_decoders(lang, words):
    at = _generate_page({"lang": lang})
    assert len(at.info) == 1 and words in at.info[0].value.lower()
    assert "SmolLM2-135M-Instruct" in at.info[0].value and "Gemma 3 270M" in at.info[0].value
    assert not at.error and not at.get("vega_lite_chart")


@pytest.mark.slow
def test_the_page_writes_with_smollm2_and_the_link_carries_the_run():
    at = _generate_page({"model": "bundled:smollm2-135m", "text": "The capital of France is", "new": "4",
                         "step": "2", "layer": "3"})
    assert not at.error, [e.value for e in at.error]
    assert at.code[0].value.startswith("The capital of France is Paris")
    assert at.slider(key="generate_step").value == 2 and at.slider(key="generate_new").value == 4
    assert len(at.get("vega_lite_chart")) == 6
    assert at.query_params["new"] in ("4", ["4"]) and at.query_params["step"] in ("2", ["2"])
    at.slider(key="generate_step").set_value(3).run()  # scrubbing reuses the run: no new tokens, same text
    assert not at.exception and at.code[0].value.startswith("The capital of France is Paris")


@pytest.mark.slow
@pytest.mark.parametrize("lang, words", [("en", "sampling at 0.01"), ("zh", "改用 0.01 抽样")])
def test_a_temperature_too_small_to_divide_by_is_raised_with_one_line(lang, words):
    """Issue 45, item 4: a temperature of 1e-40 typed in showed "This app has encountered an error"."""
    at = _generate_page({"model": "bundled:smollm2-135m", "text": "The capital of France is", "new": "2",
                         "lang": lang})
    at.number_input(key="generate_temp").set_value(1e-40).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert [i.value for i in at.info if words in i.value], [i.value for i in at.info]
    assert at.code[0].value.startswith("The capital of France is")
    assert at.query_params["temp"] in ("0.01", ["0.01"])


# ------------------------------------------------------------------------------------------------ real browser

CHART_DRAWN = '[data-testid="stVegaLiteChart"] svg.marks'
CODE = '[data-testid="stMain"] [data-testid="stCode"]'
EXCEPTION = '[data-testid="stException"]'


@pytest.mark.browser
def test_the_page_streams_tokens_and_the_stop_button_ends_a_run(browser, app_url):
    from playwright.sync_api import expect

    context = browser.new_context(viewport={"width": 1400, "height": 1200})
    page = context.new_page()
    try:
        link = urllib.parse.urlencode({"v": "1", "model": "bundled:smollm2-135m", "new": "3",
                                       "text": "The capital of France is"})
        page.goto(f"{app_url}/generate?{link}")
        page.wait_for_function(f"document.querySelectorAll('{CHART_DRAWN}').length >= 6", timeout=600_000)
        expect(page.locator(CODE).first).to_contain_text("Paris", timeout=60_000)  # waited for, as the charts were
        assert page.locator(EXCEPTION).count() == 0
        # A long run, stopped once a token is on screen: the page keeps what was written and stays usable.
        link = urllib.parse.urlencode({"v": "1", "model": "bundled:smollm2-135m", "new": "200",
                                       "text": "Once upon a time"})
        page.goto(f"{app_url}/generate?{link}")
        main = page.locator('[data-testid="stMain"]')  # Streamlit's header has a "Stop" button of its own
        stop = main.get_by_role("button", name="Stop")
        stop.wait_for(timeout=300_000)
        page.wait_for_function(f"[...document.querySelectorAll('{CODE}')].some(c => c.innerText.length > 20)",
                               timeout=120_000)  # streamed tokens after the 16-character prompt
        stop.click()
        page.wait_for_function("document.body.innerText.includes('Stopped after')", timeout=300_000)
        page.wait_for_function(f"document.querySelectorAll('{CHART_DRAWN}').length >= 6", timeout=300_000)
        assert page.locator(EXCEPTION).count() == 0
        main.get_by_role("button", name="Generate again").click()
        stop.wait_for(timeout=120_000)  # a new run starts: the page is usable
        assert page.locator(EXCEPTION).count() == 0
    finally:
        context.close()
