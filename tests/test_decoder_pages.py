"""The pages on the bundled decoders (issue 27): the preparation's progress bar, the Chinese offer of Gemma, the
Attribution target said in words. Driven with ``AppTest``; the preparation is a fake progress source (a real one
converts for a minute or more), so nothing here needs the decoders prepared."""

from __future__ import annotations

from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

import views.session as session

APP = Path(__file__).resolve().parents[1] / "app.py"


def _progress(at: AppTest) -> list:
    return [el.proto for el in at.main if el.type == "progress"]


@pytest.mark.parametrize("lang, label", [("en", "bundled:smollm2-135m: dequantising the tensors to fp32"),
                                         ("zh", "首次使用前正在准备 SmolLM2-135M-Instruct（内置）：40%")])
def test_a_bundled_decoder_is_prepared_under_a_progress_bar(monkeypatch, lang, label):
    calls = []

    def fake_prepare(spec, progress=None):
        calls.append(spec)
        progress(40, 100, "bundled:smollm2-135m: dequantising the tensors to fp32")
        # Stopped part-way as the toolbar's Stop does: the bar stays, so its last state is seen (an InspectorError
        # would replace it by its one line, views.progress_bar).
        st.stop()

    monkeypatch.setattr(session, "is_prepared", lambda decoder: False)
    monkeypatch.setattr(session, "prepare", fake_prepare)
    at = AppTest.from_file(str(APP), default_timeout=60)
    at.query_params["model"] = "bundled:smollm2-135m"
    at.query_params["lang"] = lang
    at.run()
    assert not at.exception
    assert calls == ["bundled:smollm2-135m"]
    bars = _progress(at)
    assert len(bars) == 1 and bars[0].value == 40 and bars[0].text == label


def test_no_bar_for_a_prepared_or_an_ordinary_model(monkeypatch):
    def unexpected(spec, progress=None):
        raise AssertionError("prepare must not run")

    monkeypatch.setattr(session, "prepare", unexpected)
    for spec in ("default", "bundled:no-such-model"):
        session.prepare_bundled(spec, "en")
    monkeypatch.setattr(session, "is_prepared", lambda decoder: True)
    session.prepare_bundled("bundled:gemma-3-270m", "en")


@pytest.mark.slow
def test_the_chinese_example_offers_gemma_and_one_click_reads_it():
    """Choosing the Chinese example on MiniLM (English vocabulary) warns and offers Gemma; one click switches the
    sidebar's model and the same text draws with readable tokens, no [UNK] (Gemma must be prepared: make app)."""
    from inspector.base.examples import EXAMPLES

    chinese = next(e for e in EXAMPLES if e.slug == "04-chinese")
    at = AppTest.from_file(str(APP), default_timeout=180)
    at.query_params["lang"] = "zh"
    at.run()
    at.selectbox(key="example").set_value(chinese.title).run()
    assert not at.exception
    assert any("UNK" in w.value and "gemma" in w.value for w in at.warning)  # markdown-escaped
    button = at.button(key="switch_to_reader")
    assert button.label == "切换到 Gemma 3 270M（内置）：它无需下载就能读中文"
    assert at.selectbox(key="model").value == "default"  # an offer: nothing switched by itself
    button.click().run()
    assert not at.exception and not at.error
    assert at.selectbox(key="model").value == "bundled:gemma-3-270m"
    assert at.text_area(key="text").value == chinese.text
    strip = at.code[0].value
    assert "[UNK]" not in strip and "没有" in strip and "<bos>" in strip
    assert not any("UNK" in w.value for w in at.warning)
    assert not [b for b in at.button if b.key == "switch_to_reader"]
