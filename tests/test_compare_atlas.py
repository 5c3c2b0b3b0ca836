"""The Compare page's two-model mode reads two atlases (issue 41, Build 2; views/compare_atlas.py), in AppTest: both
models with an atlas (the shipped MiniLM atlas on both sides) side by side on one set of axes, each head's card open
from the link and the link written back, the way to the Atlas page at a head; a model without an atlas (one line
naming the census command) and a census folder opened for it instead, a folder of another model's census said so, a
crafted folder one error line; on a hosted instance no folder box; the block in 简体中文 with no catalogue key and no
English entry. The Atlas link's second head (``ahead_b``), which the block writes too, round-trips."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from inspector.analyses.census.exemplar_files import EXEMPLARS_FILE
from inspector.analyses.census.run import census
from inspector.base.i18n import t
from inspector.charts.base import title_text
from inspector.output.share_atlas import AtlasState, decode_atlas, encode_atlas
from tests.atlas_folder import complete_atlas_folder
from tests.conftest import open_app_page
from tests.test_census import _corpus

MINILM = "all-MiniLM-L6-v2"


@pytest.fixture(scope="module")
def census_folder(tiny_model_dirs, tmp_path_factory) -> Path:
    """A census of the tiny BERT with roles and contexts: an atlas folder of a model the page does not compare."""
    folder = tmp_path_factory.mktemp("compare-atlas-census")
    out = folder / "out"
    census(str(tiny_model_dirs["bert"]), _corpus(folder), out=out, shard_size=8, limit=12, progress=None)
    return complete_atlas_folder(out)


def _atlas_titles(at, lang: str = "en") -> list[str]:
    """The titles of the atlas scatters the page draws ("Every head of …")."""
    before, after = t("atlas.chart_title", lang, model="\0").split("\0")
    titles = [title_text(json.loads(chart.proto.spec).get("title")) for chart in at.get("vega_lite_chart")]
    return [title for title in titles if title.startswith(before) and title.endswith(after)]


def _two_models(query: dict[str, str]):
    at = open_app_page("compare", query={"v": "1", **query})
    assert at.radio(key="compare_mode").value == "models"
    assert not at.exception and not at.error, [e.value for e in (*at.exception, *at.error)]
    return at


def test_two_models_with_atlases_show_both_maps_with_their_cards_and_open_the_atlas_page_at_a_head():
    at = _two_models({"model_b": "default", "ahead": "L3H5", "ahead_b": "L0H1", "ax": "max_sink_score"})
    subheaders = [s.value for s in at.subheader]
    assert "Head atlases of the two models, side by side" in subheaders
    assert "Layer 3, head 5" in subheaders and "Layer 0, head 1" in subheaders  # each model's card, from the link
    verdicts = [m.value for m in at.markdown if m.value.startswith("Role by probe:")]
    assert len(verdicts) == 2 and all("\\" not in verdict for verdict in verdicts)  # bold, not a literal **
    assert len(_atlas_titles(at)) == 2 and all(MINILM in title for title in _atlas_titles(at))
    # The axes are chosen once, for both maps.
    assert at.selectbox(key="compare_atlas_x").value == "max_sink_score"
    assert not any("census" in info.value for info in at.info)  # nothing is missing
    params = at.query_params
    assert (params["ahead"], params["ahead_b"], params["ax"], params["model_b"]) == ("L3H5", "L0H1",
                                                                                     "max_sink_score", "default")
    at.selectbox(key="compare_atlas_colour").set_value("induction").run()
    assert not at.exception and at.query_params["acolour"] == "induction"

    at.button(key="compare_atlas_open_compare_b").click().run()  # model B's atlas, at its open head
    assert not at.exception and [title.value for title in at.title] == ["Head atlas"]
    assert at.selectbox(key="atlas_source").value == "default" and at.selectbox(key="atlas_b").value == "default"
    assert at.selectbox(key="atlas_x").value == "max_sink_score"
    assert at.selectbox(key="atlas_colour").value == "induction"
    assert (at.query_params["ahead"], at.query_params["ahead_b"]) == ("L0H1", "L3H5")


def test_a_model_without_an_atlas_gets_one_line_and_a_census_folder_opens_in_its_place(census_folder, tmp_path):
    at = _two_models({"model_b": "shipped:planted-token"})  # a model of another shape: no atlas ships for it
    missing = [info.value for info in at.info if "python -m inspector census" in info.value]
    assert len(missing) == 1 and "\n" not in missing[0]
    assert "--model shipped:planted-token" in missing[0] and "--exemplars 20 --roles" in missing[0]
    assert len(_atlas_titles(at)) == 1 and MINILM in _atlas_titles(at)[0]  # model A's atlas still draws

    at.text_input(key="compare_atlas_folder_b").input(str(census_folder)).run()
    assert not at.exception and not at.error, [e.value for e in (*at.exception, *at.error)]
    assert len(_atlas_titles(at)) == 2
    assert not any("python -m inspector census" in info.value for info in at.info)
    # The folder is a census of another model than model B: it is drawn, and the page says so in one line.
    other = [w.value.replace("\\", "") for w in at.warning if "This census is of" in w.value]
    assert len(other) == 1 and "not of" in other[0]
    assert "atlas" not in at.query_params and "atlas_b" not in at.query_params  # a link never names a folder

    crafted = tmp_path / "crafted"
    shutil.copytree(census_folder, crafted)
    (crafted / EXEMPLARS_FILE).write_bytes(b"PAR1 not really")
    at.text_input(key="compare_atlas_folder_b").input(str(crafted)).run()
    assert not at.exception and len(at.error) == 1 and "\n" not in at.error[0].value
    assert len(_atlas_titles(at)) == 1


def test_the_atlas_block_speaks_chinese():
    from tests.test_i18n_pages import _data_names, _english_entries, _keys_shown, _texts

    at = _two_models({"lang": "zh", "model_b": "shipped:planted-token", "ahead": "L3H5"})
    subheaders = [s.value for s in at.subheader]
    assert "两个模型的注意力头图谱并排对比" in subheaders and "第 3 层，第 5 个头" in subheaders
    missing = [info.value for info in at.info if "python -m inspector census" in info.value]
    assert len(missing) == 1 and "没有图谱" in missing[0]
    assert at.text_input(key="compare_atlas_folder_b").label == "模型 B 的普查文件夹（可选）"
    assert at.button(key="compare_atlas_open_compare_a").label == "在图谱页中打开"
    assert len(_atlas_titles(at, "zh")) == 1
    texts = _texts(at)
    assert _keys_shown(texts) == []
    assert [text for text in texts if text.strip() in _english_entries() - _data_names(at)] == []  # "auto": data


def test_the_atlas_link_keeps_the_second_atlas_s_head_and_a_bad_one_warns():
    state = AtlasState(atlas="default", atlas_b="default", head=(3, 5), head_b=(0, 1))
    params = encode_atlas(state)
    assert params["ahead_b"] == "L0H1"
    assert decode_atlas(params, atlases=["default"]) == (state, ())
    decoded, warnings = decode_atlas({"ahead_b": "<script>"}, atlases=["default"])
    assert decoded.head_b is None and [warning.key for warning in warnings] == ["atlas.link_bad_head"]


def test_a_hosted_instance_offers_no_folder_box_and_says_where_an_atlas_is_made(monkeypatch):
    from inspector.serving.hosting import HostingPolicy
    from views import session

    monkeypatch.setattr(session, "hosting_policy", lambda: HostingPolicy(hosted=True))
    at = _two_models({"model_b": "shipped:planted-token"})
    assert not [box for box in at.text_input if box.key in ("compare_atlas_folder_a", "compare_atlas_folder_b")]
    missing = [info.value for info in at.info if "python -m inspector census" in info.value]
    assert len(missing) == 1 and "on a local instance" in missing[0]
    assert len(_atlas_titles(at)) == 1
