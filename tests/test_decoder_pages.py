"""The pages on the bundled decoders (issue 27): the preparation's progress bar, the Chinese offer of Gemma, the
Attribution target said in words. Driven with ``AppTest``; the preparation is a fake progress source (a real one
converts for a minute or more), so nothing here needs the decoders prepared."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

import views.session as session
from inspector.base.errors import CorruptModelError

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
        raise CorruptModelError("stopped part-way (a fake preparation)")  # the bar stays: its last state is seen

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
    assert [e.value for e in at.error] == ["stopped part-way (a fake preparation)"]


def test_no_bar_for_a_prepared_or_an_ordinary_model(monkeypatch):
    def unexpected(spec, progress=None):
        raise AssertionError("prepare must not run")

    monkeypatch.setattr(session, "prepare", unexpected)
    for spec in ("default", "bundled:no-such-model"):
        session.prepare_bundled(spec, "en")
    monkeypatch.setattr(session, "is_prepared", lambda decoder: True)
    session.prepare_bundled("bundled:gemma-3-270m", "en")
