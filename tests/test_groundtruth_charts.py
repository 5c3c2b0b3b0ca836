"""Charts and display tables of the ground-truth lab (:mod:`inspector.charts.groundtruth`) on real scores of the
shipped models: every builder gives a valid Vega-Lite spec, in both modes, with the causal token marked, and speaks
the page's language."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from inspector.analyses.attribution import METHOD_LABELS, method_label
from inspector.analyses.groundtruth import card_for, score_example, scoreboard, top_ranked_tokens
from inspector.analyses.tasks import FRESH_SEED, generate
from inspector.charts.base import title_text
from inspector.charts.groundtruth import (
    CAUSAL_MARK,
    SUPPORTING_MARK,
    causal_mark,
    example_chart,
    example_frame,
    example_table,
    head_hits_chart,
    head_hits_frame,
    method_order,
    scoreboard_chart,
    scoreboard_table,
)
from inspector.core.loading import load_model
from tests.chart_text import chart_strings, english_words


@pytest.fixture(scope="module")
def planted():
    return load_model("shipped:planted-token", device="cpu")


@pytest.fixture(scope="module")
def board(planted):
    return scoreboard(planted, 4)


@pytest.fixture(scope="module")
def induction_example():
    loaded = load_model("shipped:induction", device="cpu")
    card = card_for(loaded)
    return score_example(loaded, generate("induction", 1, seed=FRESH_SEED)[0], card, methods=("attention", "occlusion"))


def _data(spec: dict) -> list[dict]:
    """Every inline data row of a Vega-Lite spec (Altair gathers them under ``datasets``)."""
    return [row for rows in spec.get("datasets", {}).values() for row in rows]


@pytest.mark.parametrize("slide", [False, True])
def test_scoreboard_chart_is_valid_with_chance_and_intervals(board, slide):
    spec = scoreboard_chart(board, slide=slide).to_dict()
    assert title_text(spec["title"]) == ("Ground truth: planted-token classifier (shipped) — which method finds the "
                                         "causal token?")
    subtitle = " ".join(spec["title"]["subtitle"])  # wrapped into lines that fit the page's column
    assert "4 fresh examples" in subtitle and "known by construction" in subtitle
    assert len(spec["hconcat"]) == 2  # top-1 and top-k; no mechanism panel without supporting tokens
    rows = _data(spec)
    assert {"label": f"chance {board.chance_top1:.0%}", "chance": board.chance_top1} in [
        {k: r[k] for k in ("label", "chance")} for r in rows if "chance" in r]
    methods = [r["method"] for r in rows if "top1" in r]
    assert methods == [METHOD_LABELS[board.methods[i]] for i in method_order(board)]
    tops = [r["top1"] for r in rows if "top1" in r]
    assert tops == sorted(tops, reverse=True)  # best first
    assert all(r["top1_low"] <= r["top1"] <= r["top1_high"] for r in rows if "top1" in r)
    if slide:
        assert spec["config"]["title"]["fontSize"] == 24


def test_scoreboard_table_has_a_chance_row(board):
    table = scoreboard_table(board)
    assert list(table.columns) == ["method", "top-1 [95 %]", "top-3 [95 %]", "mean rank [95 %]",
                                   "top-1 by magnitude [95 %]"]
    assert len(table) == len(board.methods) + 1 and table["method"].iloc[-1] == "chance (a random ranking)"
    assert table["top-1 [95 %]"].iloc[0].endswith("]") and "–" in table["top-1 [95 %]"].iloc[0]
    # Mean ranks with one decimal ("11.3 [9.0–13.9]"): two made the column too wide for the page at 1000 px.
    assert all(re.fullmatch(r"\d+\.\d \[\d+\.\d–\d+\.\d\]", cell) for cell in table["mean rank [95 %]"].iloc[:-1])
    assert re.fullmatch(r"\d+\.\d", table["mean rank [95 %]"].iloc[-1])
    assert list(table["method"].iloc[:-1]) == [METHOD_LABELS[board.methods[i]] for i in method_order(board)]
    chinese = scoreboard_table(board, "zh")
    assert list(chinese.iloc[:-1, 0]) == [method_label(board.methods[i], "zh") for i in method_order(board)]
    assert "积分梯度" in set(chinese.iloc[:, 0]) and "integrated gradients" not in set(chinese.iloc[:, 0])


@pytest.mark.parametrize("slide", [False, True])
def test_example_chart_marks_the_causal_token_and_keeps_tokens_as_data(planted, slide):
    card = card_for(planted)
    scored = score_example(planted, generate("planted-token", 1, seed=FRESH_SEED)[0], card)
    spec = example_chart(scored, slide=slide).to_dict()
    assert title_text(spec["title"]) == "Where each method puts the credit on this example"
    units = {r["unit"] for r in _data(spec)}
    assert f"{scored.position}: {scored.tokens[scored.position]} {CAUSAL_MARK}" in units
    frame = example_frame(scored)
    content = frame[frame["role"] != "special"]
    assert content["scaled"].between(0, 1).all()  # min–max per method over the content tokens
    assert frame[frame["role"] == "special"]["scaled"].isna().all()
    assert (frame.groupby("method")["scaled"].max() == 1).any()
    causal = frame[(frame["role"] == "causal") & (frame["method"] == "occlusion (leave-one-out)")]
    assert int(causal["rank"].iloc[0]) == scored.ranks["occlusion"]
    json.dumps(spec, allow_nan=False)  # NaN scores became nulls

    table = example_table(scored, top_ranked_tokens(scored), mechanism=False)
    assert list(table.columns) == ["method", "rank of the causal token", "top-ranked token", "hit"]
    occlusion = table[table["method"] == "occlusion (leave-one-out)"].iloc[0]
    assert occlusion["hit"] == "✓"
    assert occlusion["top-ranked token"] == f"{scored.position}: {scored.tokens[scored.position]}"


def test_example_chart_marks_supporting_tokens_differently(induction_example):
    frame = example_frame(induction_example)
    assert set(frame[frame["role"] == "supporting"]["unit"].str.endswith(SUPPORTING_MARK)) == {True}
    assert frame[frame["role"] == "supporting"]["unit"].nunique() == 2
    spec = example_chart(induction_example).to_dict()
    strokes = [layer["mark"].get("strokeDash") for layer in spec["layer"] if isinstance(layer["mark"], dict)]
    assert [4, 3] in strokes
    table = example_table(induction_example, top_ranked_tokens(induction_example), mechanism=True)
    assert list(table.columns) == ["method", "rank of B", "top-ranked token", "hit", "found the mechanism"]
    assert list(table["method"]) == ["raw attention", "occlusion (leave-one-out)"]
    chinese = example_table(induction_example, top_ranked_tokens(induction_example), mechanism=True, lang="zh")
    assert list(chinese.iloc[:, 0]) == ["原始注意力", "遮挡（逐一删除）"]


@pytest.mark.parametrize("slide", [False, True])
def test_head_hits_chart_shows_peaks_next_to_weights(board, slide):
    spec = head_hits_chart(board, slide=slide).to_dict()
    assert title_text(spec["title"]).startswith("Which heads' attention peaks on the causal token")
    assert len(spec["hconcat"]) == 2
    scales = [panel["layer"][0]["encoding"]["color"]["scale"] for panel in spec["hconcat"]]
    assert [(s["domain"][0], s["domain"][-1], s["range"][0]) for s in scales] == [(0, 1, "#ffffff")] * 2  # 0 is white
    frame = head_hits_frame(board)
    layers, heads = board.head_top1.shape
    assert len(frame) == layers * heads
    np.testing.assert_allclose(frame["peaks"], board.head_top1.ravel())
    np.testing.assert_allclose(frame["weight"], board.head_weight.ravel())


def test_every_chart_in_chinese_shows_no_english_but_names_and_tokens(planted, board, induction_example):
    """Built in 简体中文 on real scores, a chart shows the model's label, the task's name and the text's tokens in
    English (names and data) and nothing else — the methods in Chinese; in English the same check finds English."""
    scored = score_example(planted, generate("planted-token", 1, seed=FRESH_SEED)[0], card_for(planted))
    names = {board.card.label, board.card.task.name, *scored.tokens, *induction_example.tokens}

    def builders(lang):
        return {"scoreboard": scoreboard_chart(board, lang=lang),
                "scoreboard slide": scoreboard_chart(board, slide=True, lang=lang),
                "example": example_chart(scored, lang=lang), "induction": example_chart(induction_example, lang=lang),
                "head hits": head_hits_chart(board, lang=lang)}

    def english_on(chart) -> list[str]:
        # One text: a title wrapped into lines splits the model's label, and the lines join again at a space.
        return english_words([" ".join(chart_strings(chart.to_dict()))], allowed=names)

    chinese = {name: english_on(chart) for name, chart in builders("zh").items()}
    assert chinese == {name: [] for name in chinese}
    english = {name: english_on(chart) for name, chart in builders("en").items()}
    assert all(english.values()), english  # the check sees English where it is
    # The method axes are data (chart_strings reads data only for legends and facets): the labels of the language.
    for lang in ("zh", "en"):
        built = builders(lang)
        for name, methods in (("scoreboard", board.methods), ("example", tuple(scored.scores)),
                              ("induction", tuple(induction_example.scores))):
            shown = {row["method"] for row in _data(built[name].to_dict()) if "method" in row}
            assert shown == {method_label(m, lang) for m in methods}, (lang, name)
    frame = example_frame(induction_example, "zh")
    assert english_words([*frame["unit"], *frame["role_name"]], allowed=names) == []
    assert set(frame["role"]) >= {"causal", "supporting", "other"}  # the roles the chart filters on stay as they are
    assert frame[frame["role"] == "causal"]["unit"].str.endswith(causal_mark("zh")).all()
