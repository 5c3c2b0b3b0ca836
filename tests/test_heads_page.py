"""The Heads page, driven headlessly with ``AppTest``: it renders on the bundled model, reports health in words
with its thresholds, relabels heads without a model call when a threshold moves, shows bad input as
``st.error``, runs corpus mode, and a grid click opens the head on the Inspect page."""

from __future__ import annotations

import json

from streamlit.testing.v1 import AppTest

from inspector.analyses.heads import read_corpus
from inspector.base.errors import InvalidRequestError
from inspector.charts.base import title_text
from tests.conftest import open_app_page


def _heads_page() -> AppTest:
    return open_app_page("heads")


def _titles(at: AppTest) -> list[str]:
    # Wrapped titles (a list of lines) joined into one line.
    return [title_text(json.loads(chart.proto.spec).get("title", {})) for chart in at.get("vega_lite_chart")]


def _report_text(at: AppTest) -> str:
    return next(m.value for m in at.markdown if "Thresholds" in m.value).replace("\\", "")


def test_heads_page_renders_on_the_bundled_model():
    at = _heads_page()
    assert not at.error
    titles = _titles(at)
    assert titles[0] == "Heads coloured by normalised entropy"
    assert {"Jensen–Shannon divergence between heads", "What heads write: linear CKA",
            "Pruning curve: how far the output moves as heads are removed"} <= set(titles)
    report = _report_text(at)
    assert "collapsed = normalised entropy < 0.1" in report and "sink score > 0.3" in report
    # The bundled model's layer 0 head 2 attends to the previous token (a well-known positional head).
    assert "Layer 0 head 2: normalised entropy 0.00 < 0.1 (collapsed)" in report and "previous token" in report
    assert at.query_params["page"] in ("heads", ["heads"])
    at.segmented_control(key="heads_metric").set_value("gradient").run()
    assert not at.exception and _titles(at)[0].startswith("Heads coloured by importance: gradient")
    at.segmented_control(key="heads_metric").set_value("induction").run()
    assert not at.exception and _titles(at)[0] == "Heads coloured by induction score (Olsson et al.)"
    # The default text repeats "the" (uncased), so the report judges induction instead of saying it cannot.
    assert "nduction head" in _report_text(at) and "No token repeats" not in _report_text(at)

    at.number_input(key="heads_collapsed").set_value(0.5).run()
    assert not at.exception and not at.error
    assert "< 0.5 (collapsed)" in _report_text(at).replace("0.50", "0.5")


def test_clicking_a_head_opens_it_on_the_inspect_page():
    at = _heads_page()
    at.session_state["_heads_open"] = (3, 5)  # what the grid's click callback stores
    at.run()
    assert not at.exception and not at.error
    assert at.selectbox(key="layer").value == 3 and at.selectbox(key="head").value == 5
    assert any(str(t).startswith("Layer 3, head 5") for t in _titles(at))
    assert at.text_area(key="text").value.startswith("The animal")  # the text survived both page switches


def test_empty_text_is_an_error_not_a_traceback():
    at = _heads_page()
    at.text_area(key="text").set_value("  ").run()
    assert not at.exception
    assert at.error and "empty" in at.error[0].value


def test_corpus_mode_on_a_tiny_model(tiny_model_dirs):
    at = _heads_page()
    at.selectbox(key="model").set_value("__other__").run()
    at.text_input(key="model_other").set_value(str(tiny_model_dirs["bert"])).run()
    at.session_state["heads_corpus_size"] = 6  # the first 6 sentences, not all of them: keeps the test fast
    at.radio(key="heads_mode").set_value("corpus").run()
    assert at.number_input(key="heads_corpus_size").max == len(read_corpus())
    assert not at.exception and not at.error
    status = next(c.value.replace("\\", "") for c in at.caption if " texts in " in c.value.replace("\\", ""))
    assert "6 texts in" in status and "texts/s" in status  # finished: how long, and how fast
    assert "Measured on 6 texts" in _report_text(at)
    assert "heads_stop" not in [b.key for b in at.button]  # the Stop button goes once the report is done

    # What a click on Stop leaves behind (its callback's flag): the rerun shows where it stopped and does not
    # start the report again; "Run again" clears the flag and the report is back (from the cache).
    assert at.session_state["_heads_progress"] in range(7)
    stopped = {"request": at.session_state["_heads_request"], "done": 2, "texts": 6}
    at.session_state["_heads_stopped"] = stopped
    at.run()
    assert not at.exception and not at.error
    assert [i.value for i in at.info] == ["Stopped after 2 of 6 texts. Nothing is shown for a stopped run."]
    assert not at.get("vega_lite_chart") and not any("Measured on" in m.value for m in at.markdown)
    at.button(key="heads_run_again").click().run()
    assert not at.exception and not at.info and "Measured on 6 texts" in _report_text(at)
    # A stop flag belongs to the run it stopped: another corpus size runs.
    at.session_state["_heads_stopped"] = stopped
    at.number_input(key="heads_corpus_size").set_value(5).run()
    assert not at.exception and not at.info and "Measured on 5 texts" in _report_text(at)


def test_the_page_in_chinese_shows_no_english_sentence():
    from tests.test_i18n import CJK, page_texts, untranslated

    at = open_app_page("heads", query={"lang": "zh"})
    assert not at.error and at.selectbox(key="lang").value == "zh"
    texts = page_texts(at)
    assert untranslated(texts) == []
    assert at.title[0].value == "注意力头"
    report = next(m.value for m in at.markdown if "阈值" in m.value).replace("\\", "")
    assert "第 0 层第 2 个头：归一化熵 0.00 < 0.1（坍缩）" in report and "前一个词元" in report
    assert all(CJK.search(line) for line in report.splitlines())
    # The English page shows the phrases the check looks for, so the check is not looking for nothing.
    at.selectbox(key="lang").set_value("en").run()
    assert not at.exception and untranslated(page_texts(at))


def test_the_statistics_draw_before_the_full_report(monkeypatch):
    """Issue 44: the page draws the first look (the grid by entropy, where the attention goes, the redundancy maps)
    before the full report runs. With the report failing, they are on the page beside its error, and what only the
    report gives (the pruning curve, the health report, the grid's exports) is not — no "measuring" note stays."""
    import inspector.analyses.heads as heads

    def failing(*args, **kwargs):
        raise InvalidRequestError("the full report failed on purpose")

    monkeypatch.setattr(heads, "head_report", failing)
    at = _heads_page()
    at.text_area(key="text").set_value("A small dog slept because it was tired.").run()  # in no cache yet
    assert not at.exception
    assert any("failed on purpose" in error.value for error in at.error)
    titles = _titles(at)
    assert titles[0] == "Heads coloured by normalised entropy" and "Jensen–Shannon divergence between heads" in titles
    assert "Pruning curve: how far the output moves as heads are removed" not in titles
    assert not any("Thresholds" in m.value for m in at.markdown) and not at.info
