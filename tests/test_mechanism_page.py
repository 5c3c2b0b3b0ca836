"""The Mechanism page in ``AppTest``: an encoder names the decoders to pick; on SmolLM2 with the English example pair
(a share link) every panel draws — direct logit attribution beside attention, the lens, patching, score attribution —
and the link keeps the page's own parameters; a heatmap cell clicked on Inspect opens "why this cell" here."""

from __future__ import annotations

import json
import re

import pytest

from inspector.base.examples import mechanism_example
from inspector.base.i18n import t
from inspector.charts.base import CELL_SELECTION, title_text
from tests.conftest import open_app_page


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_an_encoder_names_the_decoders(lang):
    """By the names the sidebar's model menu shows (issue 44 walkthrough: it named them by their specs)."""
    from views.sidebar import shown_model_name

    at = open_app_page("mechanism", query={"lang": lang})  # the bundled MiniLM, an encoder
    assert not at.error
    shown = " ".join(info.value for info in at.info)
    for spec in ("bundled:smollm2-135m", "bundled:gemma-3-270m"):
        assert shown_model_name(spec, lang) in shown and spec not in shown, shown
    assert not at.get("vega_lite_chart")


@pytest.mark.slow
def test_every_panel_on_smollm2_from_a_share_link():
    example = mechanism_example("en")
    at = open_app_page("mechanism", timeout=900, query={
        "model": "bundled:smollm2-135m", "text": example["clean"], "layer": "20", "head": "3",
        "mcorrupt": example["corrupted"], "manswer": example["answer"], "mcontrast": example["contrast"]})
    assert not at.error, [e.value for e in at.error]
    titles = [title_text(json.loads(chart.proto.spec).get("title", {})) for chart in at.get("vega_lite_chart")]
    assert any("Direct contribution" in title for title in titles)
    assert any("Attention each head pays" in title for title in titles)
    assert any("Residual stream patched" in title for title in titles)
    assert any("query component × key component" in title for title in titles)
    assert at.query_params["mcorrupt"] == [example["corrupted"]] or at.query_params["mcorrupt"] == example["corrupted"]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_heatmap_cell_on_inspect_opens_why_this_cell_here(lang):
    example = mechanism_example("en")
    at = open_app_page("inspect", timeout=600, query={
        "model": "bundled:smollm2-135m", "text": example["clean"], "layer": "16", "head": "4", "lang": lang})
    captions = [caption.value for caption in at.caption]
    assert t("inspect.why_cell_hint", lang) in captions  # a causal LM's heatmap says a cell can be clicked
    # AppTest cannot click a chart: put in the selection Streamlit reports for a click on row 11, column 10 (the
    # last token " is" looking at " Italy"; SmolLM2 adds no special token, so rows and columns are positions).
    at.session_state["heatmap_cell"] = {"selection": {CELL_SELECTION: [{"query_index": 11, "key_index": 10}]}}
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    line = " ".join(markdown.value for markdown in at.markdown)
    assert "11: ␣is" in line.replace("\\", "") and "10: ␣Italy" in line.replace("\\", "")
    button = at.button(key="why_cell_open")
    assert button.label == t("inspect.why_cell_open", lang)
    button.click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state["mech_cell"] == "11,10"
    assert at.number_input(key="mech_query").value == 11 and at.number_input(key="mech_key").value == 10
    assert (at.session_state["layer"], at.session_state["head"]) == (16, 4)
    assert at.session_state["model"] == "bundled:smollm2-135m" and at.session_state["text"] == example["clean"]
    shown = [element.value.replace("\\", "") for element in (*at.caption, *at.markdown)]
    assert any("10: ␣Italy" in text for text in shown)  # the cell's tokens as the page reads them …
    assert not any("Ġ" in text for text in shown)  # … never the byte-level vocabulary's "ĠItaly"
    titles = [title_text(json.loads(chart.proto.spec).get("title", {})) for chart in at.get("vega_lite_chart")]
    assert any(t("chart.mech.marginals_title", lang) in title for title in titles), titles  # that cell's score


def test_a_hosted_page_refuses_a_text_past_the_mechanism_limit_before_any_forward(monkeypatch):
    """Hosted, direct logit attribution is planned like patching and the CLI's explain: a text past the mechanism
    run's token limit is one line, and no panel is drawn."""
    from views import session

    monkeypatch.setenv("INSPECTOR_HOSTED", "1")
    session.hosting_policy.clear()
    try:
        at = open_app_page("mechanism", query={"model": "bundled:smollm2-135m", "text": "one two three " * 60})
    finally:
        monkeypatch.delenv("INSPECTOR_HOSTED")
        session.hosting_policy.clear()
    errors = [e.value for e in at.error]
    assert len(errors) == 1 and re.search(r"the mechanism run reads at most \d+ tokens", errors[0]), errors
    assert not at.get("vega_lite_chart")
