"""The Streamlit app, driven headlessly with ``AppTest`` on the bundled model: it renders, reruns on new text,
turns bad input into ``st.error`` (never a traceback), redraws without a model call when the layer or head
changes, restores a view from share-link query parameters and warns about malformed ones.

The model and captures live in Streamlit's process-wide caches, so only the first test pays for loading.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from inspector.charts.base import title_text
from inspector.examples import EXAMPLES
from inspector.loading import shipped_choices
from inspector.share import MAX_TEXT_CHARS, ViewState, encode_view

# AppTest resolves relative paths against the calling file, not the working directory.
APP = Path(__file__).resolve().parents[1] / "app.py"
APP_TIMEOUT_S = 60
DEFAULT_TEXT = "The animal didn't cross the street because it was too tired."


def _run_app(query: dict[str, str] | None = None) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=APP_TIMEOUT_S)
    for name, value in (query or {}).items():
        at.query_params[name] = value
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _chart_titles(at: AppTest) -> list:
    return [json.loads(chart.proto.spec).get("title") for chart in at.get("vega_lite_chart")]


def _title_texts(at: AppTest) -> list[str]:
    return [title_text(title) for title in _chart_titles(at)]  # wrapped titles joined into one line


def _metrics(at: AppTest) -> dict[str, str]:
    return {metric.label: metric.value for metric in at.metric}


def _status_label(at: AppTest) -> str:
    return at.caption[1].value  # the progress line, under the page's one-line introduction


def _server_time_caption(at: AppTest) -> str:
    return next(c.value for c in at.caption if c.value.startswith("Server time for this view"))


def test_page_renders_the_default_text_on_the_bundled_model():
    at = _run_app()
    assert not at.error
    assert at.text_area(key="text").value == DEFAULT_TEXT
    strip = at.code[0].value
    assert "0: [CLS]" in strip and "2: animal" in strip and "7: the" in strip
    titles = _title_texts(at)
    assert titles[0] == "Head entropy: how spread out each head's attention is"
    assert "Layer 0, head 0: attention weights" in titles
    assert any(str(t).startswith("Layer 0") and "every head" in str(t) for t in titles)
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


def test_an_example_fills_the_text_box():
    at = _run_app()
    chinese = next(example for example in EXAMPLES if "小猫" in example.text)
    at.selectbox(key="example").set_value(chinese.title).run()
    assert not at.exception and not at.error
    assert at.text_area(key="text").value == chinese.text
    assert "小" in at.code[0].value


@pytest.mark.parametrize("text", ["", "   \n "])
def test_empty_text_shows_an_error_not_a_traceback(text):
    at = _run_app()
    at.text_area(key="text").set_value(text).run()
    assert not at.exception
    assert len(at.error) == 1 and "empty" in at.error[0].value
    assert not at.get("vega_lite_chart")


def test_changing_layer_and_head_redraws_without_calling_the_model():
    at = _run_app()
    at.selectbox(key="layer").set_value(3).run()
    at.selectbox(key="head").set_value(11).run()
    assert not at.exception and not at.error
    assert "Layer 3, head 11: attention weights" in _title_texts(at)
    grid = json.loads(at.get("vega_lite_chart")[0].proto.spec)
    outline_filter = str([t for layer in grid["layer"] for t in layer.get("transform", [])])
    assert "=== 3" in outline_filter and "=== 11" in outline_filter
    assert "no model call" in _status_label(at)
    assert _server_time_caption(at).endswith("(model not called)")


def test_heatmap_options_change_the_view():
    at = _run_app()
    at.text_area(key="text").set_value("Queries search keys like addresses.").run()
    at.checkbox(key="words").check().run()
    at.checkbox(key="hide_special").check().run()
    assert not at.exception and not at.error
    heatmap = next(json.loads(c.proto.spec) for c in at.get("vega_lite_chart")
                   if "attention weights" in str(json.loads(c.proto.spec).get("title")))
    queries = heatmap["encoding"]["y"]["sort"]
    assert not any("[CLS]" in q or "[SEP]" in q for q in queries)
    assert queries[0].endswith("Queries") and len(queries) == 6  # "que" + "##ries" merged into one word
    subtitle = " ".join(heatmap["title"]["subtitle"])  # wrapped into lines that fit the page's column
    assert "Word view" in subtitle and "Special tokens hidden" in subtitle  # both options are stated on the chart


def test_a_backend_that_cannot_run_here_is_an_error_not_a_traceback():
    at = _run_app()
    at.selectbox(key="backend").set_value("triton").run()
    assert not at.exception
    # On a machine where Triton runs, the page must say so; everywhere else it explains why it cannot.
    assert at.error or _metrics(at)["Backend that ran"] == "triton"


def test_an_unloadable_model_is_an_error_not_a_traceback(tmp_path):
    at = _run_app()
    at.selectbox(key="model").set_value("__other__").run()
    at.text_input(key="model_other").set_value(str(tmp_path / "missing")).run()
    assert not at.exception
    assert at.error and "missing" in at.error[0].value


def test_query_params_restore_the_view():
    state = ViewState(text="Queries search keys like addresses.", layer=4, head=7, words=True, slide=True)
    at = _run_app(encode_view(state))
    assert not at.error and not at.warning
    assert at.text_area(key="text").value == state.text
    assert at.selectbox(key="layer").value == 4 and at.selectbox(key="head").value == 7
    assert at.checkbox(key="words").value and at.toggle(key="slide").value
    assert "Layer 4, head 7: attention weights" in _title_texts(at)
    # The address bar keeps describing the view, so copying it reproduces the same state.
    assert dict(at.query_params)["layer"] in ("4", ["4"])


@pytest.mark.parametrize("query, mentioned", [
    ({"layer": "banana"}, "layer"),
    ({"head": "-3"}, "head"),
    ({"layer": "99"}, "layer"),
    ({"backend": "<script>alert(1)</script>"}, "backend"),
    ({"model": "../../etc/passwd"}, "model"),
    ({"tz": "not-base64!!"}, "text"),
    ({"v": "99"}, "version"),
])
def test_malformed_query_params_warn_and_fall_back(query, mentioned):
    at = _run_app(query)
    assert not at.exception
    warnings = [w.value for w in at.warning] + [w.value for w in at.sidebar.warning]
    assert any(mentioned in w.lower() for w in warnings), warnings
    assert at.get("vega_lite_chart"), "the page still draws with the defaults"


def test_a_one_megabyte_paste_is_cut_to_the_box_and_refused_with_both_reasons():
    at = _run_app()
    paste = ("The animal didn't cross the street because it was too tired. " * 20_000)[:2**20]
    started = time.perf_counter()
    at.text_area(key="text").set_value(paste).run()  # the widget keeps MAX_TEXT_CHARS, as the browser does
    assert time.perf_counter() - started < 20
    assert not at.exception
    assert any(f"at most {MAX_TEXT_CHARS:,} characters" in w.value for w in at.sidebar.warning)
    assert len(at.error) == 1 and "reads at most 512" in at.error[0].value and "shorten" in at.error[0].value


def test_a_text_past_the_memory_budget_is_refused_and_a_long_one_keeps_one_layer(monkeypatch):
    from views import inputs
    from inspector.hosting import HostingPolicy

    text = "Queries search keys like addresses. " * 8  # 58 tokens
    # Every layer at 58 tokens: 6 × 12 × 58² × 4 bytes = 0.92 MiB; one layer 0.15 MiB.
    monkeypatch.setattr(inputs, "hosting_policy", lambda: HostingPolicy(weights_budget_bytes=2**19))
    at = _run_app({"text": text, "layer": "2"})
    assert not at.error and len(at.info) >= 1
    assert any("exact weights only layer 2" in info.value for info in at.info)
    assert "Layer 2, head 0: attention weights" in _title_texts(at)
    monkeypatch.setattr(inputs, "hosting_policy", lambda: HostingPolicy(weights_budget_bytes=2**16))
    at = _run_app({"text": text})
    assert len(at.error) == 1 and "58 tokens" in at.error[0].value and "allows 36 tokens" in at.error[0].value


@pytest.fixture
def hosted_app(monkeypatch, tmp_path):
    """The app as a hosted instance with the shipped allow-list (no entries: the bundled and ground-truth models)."""
    from views import inputs

    monkeypatch.setenv("INSPECTOR_HOSTED", "1")
    inputs.hosting_policy.clear()
    yield
    monkeypatch.delenv("INSPECTOR_HOSTED")
    inputs.hosting_policy.clear()


def test_hosted_mode_offers_only_the_allow_list_and_no_free_text_model(hosted_app):
    at = _run_app()
    assert not at.error
    # The bundled model, then the project's own ground-truth models (always offered; nothing else on this list).
    assert at.selectbox(key="model").options == ["all-MiniLM-L6-v2 (bundled)", *shipped_choices().values()]
    assert not at.text_input  # no "hub id or local folder" box
    assert _metrics(at)["Tokens"] == "16 / 512"


@pytest.mark.parametrize("model", ["openai-community/gpt2", str(APP.parent / "assets")])
def test_hosted_mode_warns_about_a_link_to_another_model_and_shows_the_bundled_one(hosted_app, model):
    at = _run_app({"model": model})
    assert not at.exception and not at.error
    warnings = [w.value for w in at.sidebar.warning]
    assert len(warnings) == 1 and "using the bundled model instead" in warnings[0].replace("\\", "")
    assert at.selectbox(key="model").value == "default" and at.get("vega_lite_chart")


def test_a_run_past_the_deadline_is_an_error_and_the_next_run_works(monkeypatch):
    from views import inputs
    from inspector.hosting import HostingPolicy

    text = "A deadline of a nanosecond stops the first layer."  # not cached by another test
    monkeypatch.setattr(inputs, "hosting_policy", lambda: HostingPolicy(deadline_s=1e-9))
    at = _run_app({"text": text})
    assert len(at.error) == 1 and "did not finish" in at.error[0].value and "try again" in at.error[0].value
    monkeypatch.undo()
    at = _run_app({"text": text})
    assert not at.error and at.get("vega_lite_chart")
