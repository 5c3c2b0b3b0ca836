"""The Attribution page, driven headlessly with ``AppTest`` on the bundled model: it renders every section,
turns bad input into ``st.error``, and runs the adversarial search behind its button."""

from __future__ import annotations

import json

import pytest
from streamlit.testing.v1 import AppTest

from inspector.base.errors import InvalidRequestError
from inspector.charts.base import title_text
from tests.conftest import open_app_page


def _open_page() -> AppTest:
    return open_app_page("attribution")


def _titles(at: AppTest) -> list[str]:
    # Wrapped titles (a list of lines) joined into one line.
    return [title_text(json.loads(chart.proto.spec).get("title", {})) for chart in at.get("vega_lite_chart")]


def test_attribution_page_renders_on_the_bundled_model():
    at = _open_page()
    assert not at.error
    assert at.text_area(key="text").value.startswith("The animal didn't cross the street")
    assert any("cosine similarity" in md.value for md in at.markdown)
    titles = _titles(at)
    for expected in ("Which tokens each method says f depends on", "Agreement between methods: Kendall τ",
                     "Does any head's attention rank tokens like leave-one-out does?",
                     "Decay curves: f as each method's top tokens are removed",
                     "The attention row, and rows that replace it"):
        assert expected in titles, titles
    table = at.dataframe[0].value
    assert "AOPC comprehensiveness ↑" in table.columns and len(table) == 9
    assert any("convergence delta" in caption.value for caption in at.caption)
    assert {metric.label for metric in at.metric} >= {"Uniform row: |Δf|", "100 permutations: median |Δf|"}


def test_changing_the_measure_and_level_redraws():
    at = _open_page()
    at.radio(key="attr_measure").set_value("Spearman ρ").run()
    at.toggle(key="attr_words").set_value(True).run()
    assert not at.exception and not at.error
    assert "Agreement between methods: Spearman ρ" in _titles(at)
    heat = next(json.loads(c.proto.spec) for c in at.get("vega_lite_chart")
                if title_text(json.loads(c.proto.spec)["title"]).startswith("Which tokens"))
    assert heat["layer"][1]["encoding"]["x"]["title"] == "word"


def test_an_empty_reference_is_an_error_not_a_traceback():
    at = _open_page()
    at.text_input(key="attr_reference").set_value("   ").run()
    assert not at.exception
    assert at.error and "reference" in at.error[0].value


@pytest.mark.slow
def test_the_adversarial_search_button_shows_two_rows_and_a_verdict():
    at = _open_page()
    at.button(key="attr_adversarial_run").click().run()
    assert not at.exception and not at.error
    labels = {metric.label for metric in at.metric}
    assert "Adversarial row: JSD (nats)" in labels
    assert any("JSD" in info.value and "ε" in info.value for info in at.info)
    chart = next(json.loads(c.proto.spec) for c in at.get("vega_lite_chart")
                 if title_text(json.loads(c.proto.spec)["title"]).startswith("The attention row"))
    assert '"adversarial (JSD' in json.dumps(chart, ensure_ascii=False)  # the third row of bars is drawn


def test_a_long_text_asks_before_running():
    at = _open_page()
    at.text_area(key="text").set_value("the cat sat on the mat " * 30).run()
    assert not at.exception and not at.error
    assert at.info and "asks first" in at.info[0].value
    assert not at.get("vega_lite_chart")


def test_the_verdict_follows_the_sessions_language():
    from tests.test_i18n import page_texts

    at = open_app_page("attribution", query={"lang": "zh"})
    assert not at.error
    assert any("对抗搜索" in info.value for info in at.info), [info.value for info in at.info]
    # The methods are named in Chinese in the ERASER table and on the charts (issue 17).
    texts = "\n".join(page_texts(at))
    charts = "\n".join(json.dumps(json.loads(chart.proto.spec), ensure_ascii=False)
                           for chart in at.get("vega_lite_chart"))
    for shown in (texts, charts):
        assert "积分梯度" in shown and "遮挡（逐一删除）" in shown
        assert "integrated gradients" not in shown and "occlusion (leave-one-out)" not in shown
    assert "积分梯度" in set(at.dataframe[0].value.iloc[:, 0])


def test_the_quick_methods_draw_before_the_full_run(monkeypatch):
    """Issue 44: the target and the scores of the quick methods are drawn before the full run (integrated
    gradients, occlusion, value zeroing, faithfulness, the counterfactual). With the full run failing, the first
    look's score chart is on the page beside its error, and nothing of the full run is."""
    import inspector.analyses.attribution as attribution

    real = attribution.attribute

    def failing_full_run(loaded, text, *, settings, **kwargs):
        if settings.faithfulness:
            raise InvalidRequestError("the full run failed on purpose")
        return real(loaded, text, settings=settings, **kwargs)

    monkeypatch.setattr(attribution, "attribute", failing_full_run)
    at = _open_page()
    at.text_area(key="text").set_value("A small dog slept because it was tired.").run()  # in no cache yet
    assert not at.exception
    assert any("failed on purpose" in error.value for error in at.error)
    assert any("cosine similarity" in md.value for md in at.markdown)  # the target
    titles = _titles(at)
    assert titles == ["Which tokens each method says f depends on"], titles
    assert not at.metric and not at.info
