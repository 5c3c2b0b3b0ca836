"""The Mechanism page in ``AppTest``: an encoder names the decoders to pick; on SmolLM2 with the English example pair
(a share link) every panel draws — direct logit attribution beside attention, the lens, patching, score attribution —
and the link keeps the page's own parameters."""

from __future__ import annotations

import json

import pytest

from inspector.base.examples import mechanism_example
from inspector.charts.base import title_text
from tests.conftest import open_app_page


def test_an_encoder_names_the_decoders():
    at = open_app_page("mechanism")  # the bundled MiniLM, an encoder
    assert not at.error
    shown = " ".join(info.value for info in at.info)
    assert "bundled:smollm2-135m" in shown and "bundled:gemma-3-270m" in shown
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
