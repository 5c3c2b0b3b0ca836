"""The Ground truth page, driven headlessly with ``AppTest``: on the bundled model it explains what it needs and
offers the shipped models; a shipped model shows one scored example and the scoreboard; the deceptive model shows
its attention bound; the induction example opens on the Heads page."""

from __future__ import annotations

import json

from streamlit.testing.v1 import AppTest

from inspector.analyses.groundtruth import card_for
from inspector.analyses.tasks import FRESH_SEED, generate
from inspector.charts.base import title_text
from inspector.core.loading import load_model, shipped_choices
from tests.conftest import open_app_page

FEW_EXAMPLES = 10  # the page's smallest scoreboard: keeps each test to a few seconds


def _open_page() -> AppTest:
    return open_app_page("groundtruth")


def _pick(at: AppTest, spec: str) -> AppTest:
    """Click the page's button for ``spec`` with the scoreboard set to a few examples."""
    at.session_state["gt_examples"] = FEW_EXAMPLES
    at.button(key=f"gt_pick_{spec}").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    # The page's own choice: the sidebar's model (every other page's) stays as it was (issue 31).
    assert at.session_state["gt_model"] == spec
    assert at.selectbox(key="model").value != spec
    return at


def _titles(at: AppTest) -> list[str]:
    # Wrapped titles (a list of lines) joined into one line.
    return [title_text(json.loads(chart.proto.spec).get("title", {})) for chart in at.get("vega_lite_chart")]


def test_the_bundled_model_gets_an_explanation_and_a_button_per_shipped_model():
    at = _open_page()
    assert not at.error
    assert at.info and "causal token is known" in at.info[0].value
    labels = {button.label for button in at.button}
    assert set(shipped_choices().values()) <= labels
    assert not at.get("vega_lite_chart")  # the page stops before scoring anything


def test_the_planted_token_model_shows_an_example_and_the_scoreboard():
    at = _pick(_open_page(), "shipped:planted-token")
    titles = _titles(at)
    assert "Where each method puts the credit on this example" in titles
    assert "Ground truth: planted-token classifier (shipped) — which method finds the causal token?" in titles
    assert "Which heads' attention peaks on the causal token — and with how much weight" in titles
    example, board = at.dataframe[0].value, at.dataframe[1].value
    assert list(example.columns) == ["method", "rank of the causal token", "top-ranked token", "hit"]
    assert example["hit"].isin(["✓", "✗"]).all() and (example["hit"] == "✓").any()
    assert board["method"].iloc[-1] == "chance (a random ranking)" and "top-3 [95 %]" in board.columns
    # Short labels and values (three metrics fit a row at 1000 px); the full wording is in the help, the
    # intervals in captions.
    metrics = {metric.label: metric for metric in at.metric}
    assert set(metrics) == {"Model accuracy", "Causal-token weight"}
    assert "Model accuracy [95 %]" in metrics["Model accuracy"].help
    assert "Mean attention on the causal token" in metrics["Causal-token weight"].help
    assert "[" not in metrics["Model accuracy"].value
    assert any(c.value.startswith("95 % Wilson interval: ") for c in at.caption)
    assert any("Better than chance" in md.value for md in at.markdown)
    status = next(c.value.replace("\\", "") for c in at.caption if "examples scored" in c.value)
    assert f"{FEW_EXAMPLES} examples scored" in status
    assert at.query_params["page"] in ("groundtruth", ["groundtruth"])

    # A new example is the next seed; the answer line names the correct answer.
    at.button(key="gt_next").click().run()
    assert not at.exception and at.number_input(key="gt_seed").value == 1
    answer = generate("planted-token", 1, seed=FRESH_SEED + 1)[0].answer
    assert any(f"correct answer is “{answer}”" in md.value.replace("\\", "") for md in at.markdown)


def test_the_deceptive_model_shows_its_attention_bound():
    at = _pick(_open_page(), "shipped:deceptive-attention")
    bound = card_for(load_model("shipped:deceptive-attention")).attention_bound
    metric = next(m for m in at.metric if m.label == "Attention bound")
    assert metric.help == "Attention bound it was trained under"
    assert metric.value == f"{bound:.1%}"
    assert any("Pruthi et al. 2020" in md.value.replace("\\", "") for md in at.markdown)
    reading = next(md.value for md in at.markdown if "Attention\\-based methods" in md.value).replace("\\", "")
    assert "trained to keep its attention off the causal token" in reading


def test_the_induction_example_opens_on_the_heads_page_with_its_text():
    at = _pick(_open_page(), "shipped:induction")
    example = at.dataframe[0].value
    assert list(example.columns) == ["method", "rank of B", "top-ranked token", "hit", "found the mechanism"]
    assert "found the mechanism [95 %]" in at.dataframe[1].value.columns
    at.button(key="gt_heads").click().run()
    assert not at.exception, [e.value for e in at.exception]
    text = generate("induction", 1, seed=FRESH_SEED)[0].text
    assert at.text_area(key="text").value == text
    assert at.selectbox(key="model").value == "shipped:induction"  # asked for: the example on its model
    assert any(title and title.startswith("Heads coloured by") for title in _titles(at))


def test_the_page_model_goes_back_to_the_sidebar_model_and_clamps_nothing():
    """Issue 31: the page's own model leaves the sidebar's layer and head alone, and one button returns to the
    sidebar's model."""
    at = open_app_page("groundtruth")
    at.session_state["layer"], at.session_state["head"] = 4, 5
    at = _pick(at, "shipped:planted-token")
    assert (at.session_state["layer"], at.session_state["head"]) == (4, 5)
    assert not at.warning
    at.button(key="gt_back").click().run()
    assert "gt_model" not in at.session_state
    assert at.info and "causal token is known" in at.info[0].value


def test_the_pages_in_chinese_show_no_english_sentence():
    from tests.test_i18n import CJK, page_texts, untranslated

    at = open_app_page("groundtruth", query={"lang": "zh"})
    assert not at.error and untranslated(page_texts(at)) == []
    assert at.info and "因果词元已知" in at.info[0].value
    # The model buttons and the sidebar's model menu in Chinese, short enough for the sidebar (issue 17).
    names = ["植入词元分类器", "欺骗性注意力分类器", "归纳语言模型"]  # one term for "ground truth" (issue 31)
    assert {f"已知答案：{name}" for name in names} <= {button.label for button in at.button}
    assert at.selectbox(key="model").options[0] == "all-MiniLM-L6-v2（内置）"
    status = next(c.value.replace("\\", "") for c in at.caption if "all-MiniLM-L6-v2" in c.value.replace("\\", ""))
    assert "内置" in status and "bundled" not in status and "内置" in at.info[0].value
    for spec in ("shipped:deceptive-attention", "shipped:induction"):
        at = _pick(open_app_page("groundtruth", query={"lang": "zh"}), spec)
        texts = page_texts(at)
        assert untranslated(texts) == [], spec
        reading = next(md.value for md in at.markdown if "随机基线" in md.value).replace("\\", "")
        assert all(CJK.search(line) for line in reading.splitlines())
        assert "平均排名 [95%]" in at.dataframe[1].value.columns
        # The methods in Chinese in both tables, the reading and the charts (issue 17).
        charts = "\n".join(json.dumps(json.loads(chart.proto.spec), ensure_ascii=False)
                           for chart in at.get("vega_lite_chart"))
        for shown in ("\n".join(texts), reading, charts):
            assert "积分梯度" in shown and "integrated gradients" not in shown, spec
        # The scoreboard's title names the model in Chinese, not by its card's English label (issue 31).
        assert any(title.startswith("已知答案：") and "哪种方法" in title for title in _titles(at)), spec
        assert "Ground truth:" not in charts, spec
        assert "原始注意力" in set(at.dataframe[0].value.iloc[:, 0]) | set(at.dataframe[1].value.iloc[:, 0])
    assert any("找到机制" in column for column in at.dataframe[0].value.columns)  # the induction example
    at.selectbox(key="lang").set_value("en").run()
    assert not at.exception and untranslated(page_texts(at))  # the check finds English where there is English


def test_the_page_does_not_warn_about_the_sidebar_text_it_does_not_read():
    """It scores its own generated examples: the sidebar's Chinese text, which the bundled model cannot read, is
    no concern of this page (issue 17) — the Inspect page, which does analyse it, still warns."""
    from tests.test_app import CHINESE

    for lang in ("en", "zh"):
        at = open_app_page("groundtruth", query={"text": CHINESE, "lang": lang})
        assert at.text_area(key="text").value == CHINESE
        assert not [w.value for w in at.warning if "[UNK]" in w.value.replace("\\", "")], lang
    at.switch_page("views/inspect.py").run()
    assert [w.value for w in at.warning if "[UNK]" in w.value.replace("\\", "")]


def test_slow_scoring_shows_the_first_examples_first_and_all_of_them_on_request(monkeypatch):
    """Issue 31, item 5: when all the examples would take longer than the first view's target at the pace of the
    first ones (a busy server), the page shows the first ones' scoreboard, says so, and scores the rest when asked;
    once whole, the scoreboard is what the page shows."""
    from inspector.analyses import groundtruth

    # Every pace is too slow; the page's smallest scoreboard first (not 20 of 21: half the examples to score).
    monkeypatch.setattr(groundtruth, "FIRST_VIEW_S", 0.0)
    monkeypatch.setattr(groundtruth, "FEWER_EXAMPLES", FEW_EXAMPLES)
    asked = FEW_EXAMPLES + 1
    at = _open_page()
    at.session_state["gt_examples"] = asked
    at.button(key="gt_pick_shipped:planted-token").click().run()
    assert not at.exception, [e.value for e in at.exception]

    def scored() -> str:
        return next(c.value.replace("\\", "") for c in at.caption if "examples scored" in c.value)

    assert f"{FEW_EXAMPLES} examples scored" in scored()
    assert any(f"first {FEW_EXAMPLES} of the {asked} examples" in info.value for info in at.info)
    at.button(key="gt_all").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert f"{asked} examples scored" in scored()
    assert not any("slow on this server" in info.value for info in at.info)
    # The whole scoreboard, once computed, is what the page shows next time, without being asked.
    del at.session_state["_gt_all"]
    at.run()
    assert f"{asked} examples scored" in scored()
