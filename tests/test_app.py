"""The Streamlit page, driven headlessly with ``AppTest`` on the bundled model: it renders, reruns on new
text, turns bad input into ``st.error`` (never a traceback), and redraws when the layer or head changes.

The model and captures live in Streamlit's process-wide caches, so only the first test pays for loading.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

# AppTest resolves relative paths against the calling file, not the working directory.
APP = Path(__file__).resolve().parents[1] / "app.py"
APP_TIMEOUT_S = 60
DEFAULT_TEXT = "The animal didn't cross the street because it was too tired."


def _run_app() -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=APP_TIMEOUT_S).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _chart_titles(at: AppTest) -> list[str]:
    return [json.loads(chart.proto.spec).get("title") for chart in at.get("vega_lite_chart")]


def _metrics(at: AppTest) -> dict[str, str]:
    return {metric.label: metric.value for metric in at.metric}


def test_page_renders_the_default_text_on_the_bundled_model():
    at = _run_app()
    assert not at.error
    assert at.text_area(key="text").value == DEFAULT_TEXT
    strip = at.code[0].value
    assert "0: [CLS]" in strip and "2: animal" in strip and "7: the" in strip
    assert _chart_titles(at) == ["Head entropy: how spread out each head's attention is",
                                 "Layer 0, head 0: attention weights"]
    metrics = _metrics(at)
    assert metrics["Backend that ran"] == "torch"
    assert metrics["Tokens"] == "16 / 512"
    assert any("6 layers × 12 heads" in caption.value and "512 tokens" in caption.value
               for caption in at.sidebar.caption)


def test_changing_the_text_reruns_and_shows_the_new_tokens():
    at = _run_app()
    at.text_area(key="text").set_value("Queries search keys like addresses.").run()
    assert not at.exception and not at.error
    strip = at.code[0].value
    assert "1: que   2: ##ries" in strip and "6: addresses" in strip and "animal" not in strip
    assert _metrics(at)["Tokens"].startswith(f"{strip.count(': ')} / ")


@pytest.mark.parametrize("text", ["", "   \n "])
def test_empty_text_shows_an_error_not_a_traceback(text):
    at = _run_app()
    at.text_area(key="text").set_value(text).run()
    assert not at.exception
    assert len(at.error) == 1 and "empty" in at.error[0].value
    assert not at.get("vega_lite_chart")


def test_changing_layer_and_head_redraws_both_charts():
    at = _run_app()
    at.selectbox(key="layer").set_value(3).run()
    at.selectbox(key="head").set_value(11).run()
    assert not at.exception and not at.error
    assert _chart_titles(at)[1] == "Layer 3, head 11: attention weights"
    grid = json.loads(at.get("vega_lite_chart")[0].proto.spec)
    outline_filter = str([t for layer in grid["layer"] for t in layer.get("transform", [])])
    assert "=== 3" in outline_filter and "=== 11" in outline_filter


def test_a_backend_that_cannot_run_here_is_an_error_not_a_traceback():
    at = _run_app()
    at.selectbox(key="backend").set_value("triton").run()
    assert not at.exception
    # On a machine where Triton runs, the page must say so; everywhere else it explains why it cannot.
    assert at.error or _metrics(at)["Backend that ran"] == "triton"
