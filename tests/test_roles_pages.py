"""The head-roles blocks in AppTest on the shipped tiny models (issue 29): the Heads page's block (map, causal chart,
probe heatmap, exports) and the Compare page's two-model roles maps side by side, in English and 简体中文."""

from __future__ import annotations

import json
import re

import pytest

from inspector.base.i18n import t
from inspector.charts.base import title_text
from tests.conftest import open_app_page


def _titles(at) -> list[str]:
    return [title_text(json.loads(chart.proto.spec).get("title")) for chart in at.get("vega_lite_chart")]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_heads_page_roles_block_draws_the_map_the_causal_chart_and_the_heatmap(lang):
    at = open_app_page("heads", query={"model": "shipped:induction", "lang": lang})
    at.toggle(key="roles_run").set_value(True).run()
    assert not at.exception and not at.error, [e.value for e in (*at.exception, *at.error)]
    titles = _titles(at)
    assert t("chart.roles.map_title", lang) in titles and t("chart.roles.causal_title", lang) in titles
    assert any(title.startswith(t("chart.roles.heatmap_title", lang, layer=1, head=0, role="")[:3]) for title in titles)
    verdicts = " ".join(m.value for m in at.markdown)
    assert t("roles.role.induction", lang) in verdicts and "L1H" in verdicts  # the induction layer's heads
    keys = {button.key for button in at.get("download_button")}
    assert {f"roles_{chart}_export_{kind}" for chart in ("map", "causal", "heatmap") for kind in ("png", "svg", "slide")
            } | {"roles_json"} <= keys  # every chart: PNG, SVG and slide; and the JSON


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_compare_page_shows_both_models_roles_maps_side_by_side(lang):
    at = open_app_page("compare", query={"model": "shipped:induction", "lang": lang})
    at.radio(key="compare_mode").set_value("models").run()
    at.selectbox(key="compare_model_b").set_value("shipped:planted-token").run()
    assert not at.toggle(key="compare_roles_run").value  # nothing probed until asked
    at.toggle(key="compare_roles_run").set_value(True).run()
    assert not at.exception and not at.error, [e.value for e in (*at.exception, *at.error)]
    assert _titles(at).count(t("chart.roles.map_title", lang)) == 2
    headings = [m.value for m in at.markdown if m.value.startswith("**")]
    assert any(re.search(r"\bA\b", h) for h in headings) and any(re.search(r"\bB\b", h) for h in headings), headings
    keys = [button.key for button in at.get("download_button")]
    assert {"compare_roles_a_png", "compare_roles_b_png", "compare_roles_a_slide", "compare_roles_b_svg"} <= set(keys)
