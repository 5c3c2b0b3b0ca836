"""Every page in 简体中文 (issue 17): rendered with ``AppTest`` on the bundled model, a Chinese page shows no catalogue
key, no English catalogue entry whose Chinese differs, and no English sentence of the code — a text the English page
shows too, word for word, with three or more English words in it once names (models, tokens) are taken out. The
attribution methods are named in Chinese, not allowed as names.

Every chart the page draws is read too (tests/chart_text.py): its titles, axes, legends, headers and tooltips show
no English word but names and the text's own words.
"""

from __future__ import annotations

import json
import re
from types import SimpleNamespace

import pytest
from streamlit.testing.v1 import AppTest

from inspector.base.i18n import CATALOGUE, placeholders
from inspector.charts.base import title_text
from tests.chart_text import chart_strings, english_words
from tests.conftest import open_app_page
from tests.test_i18n import CJK, english_runs, page_texts

PAGES = ("inspect", "heads", "attribution", "lessons", "groundtruth", "compare")
# What a Chinese page may show in English: names and data, not sentences. Model labels and ids and the default text
# (its tokens) are data; the bundled model's architecture is a class name. Method labels are not: they translate.
NAMES = ("all-MiniLM-L6-v2", "BertModel", "sentence-transformers", "Kendall τ", "Spearman ρ", "bertviz", "Triton",
         "FlashAttention", "PyTorch", "ERASER", "AOPC", "Jensen–Shannon", "CKA")


def _english_entries() -> set[str]:
    """Whole English catalogue entries (no placeholders, a word in them: "." ends a sentence in both languages and
    is a token too) that their Chinese does not repeat."""
    return {entry["en"].strip() for key, entry in CATALOGUE.items()
            if not placeholders(key, "en") and re.search("[A-Za-z]", entry["en"])
            and entry["en"].strip() != entry["zh"].strip()}


def _keys_shown(texts: list[str]) -> list[str]:
    return [f"key {key!r} in {text[:80]!r}" for key in CATALOGUE for text in texts
            if re.search(rf"(?<![\w.]){re.escape(key)}(?![\w.])", text)]


def _data_names(at: AppTest) -> set[str]:
    """The strings a page shows as data in every language: the text's tokens and words, example texts, model
    choices."""
    from inspector.analyses.attribution import DEFAULT_REFERENCE
    from inspector.base.examples import EXAMPLES
    from inspector.output.share import BACKENDS

    names = set(NAMES) | set(BACKENDS) | {example.text for example in EXAMPLES}
    names |= set(at.selectbox(key="model").options)
    text = at.text_area(key="text").value
    names |= set(text.split()) | {text, DEFAULT_REFERENCE}
    return names


def _texts(at: AppTest) -> list[str]:
    """Every text of the main area (labels, help, bodies, options, table columns and cells) and the sidebar."""
    return page_texts(at) + page_texts(SimpleNamespace(main=at.sidebar))  # page_texts walks ``.main``


def _open(page: str) -> AppTest:
    at = open_app_page(page, query={"lang": "zh"})
    assert at.selectbox(key="lang").value == "zh"
    return at


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES)
def test_every_page_in_chinese_shows_no_key_no_english_entry_and_no_english_sentence(page):
    at = _open(page)
    assert not at.error, [e.value for e in at.error]
    if page == "inspect":  # rendered for real: the grid, the heatmap and the layer's heads are drawn
        assert len(at.get("vega_lite_chart")) >= 3
    chinese = _texts(at)
    assert sum(bool(CJK.search(text)) for text in chinese) >= 10, chinese  # the page rendered, in Chinese
    assert _keys_shown(chinese) == []
    english_entries = _english_entries()
    names = _data_names(at)  # a backend's name ("auto") is not the Attribution page's query option "auto"
    assert [text for text in chinese if text.strip() in english_entries - names] == []
    # Every chart's titles, axes, legends, headers and tooltips (the spec Streamlit sends; the data go apart).
    texts = [box.value for box in at.text_area]  # Compare's second text too
    words_of_names = {word for name in [*names, *texts] for word in re.findall(r"[A-Za-z]+", name or "")}
    charts = [json.loads(chart.proto.spec) for chart in at.get("vega_lite_chart")]
    assert [(title_text(spec.get("title")), words) for spec in charts
            if (words := english_words(chart_strings(spec), names | words_of_names))] == []

    # The same page in English: what both show word for word is not translated by the page.
    at.selectbox(key="lang").set_value("en").run()
    assert not at.exception, [e.value for e in at.exception]
    english = _texts(at)
    assert [text for text in english if text.strip() in english_entries]  # the check sees English where it is
    if charts:  # and the chart check sees English charts
        assert any(english_words(chart_strings(json.loads(chart.proto.spec)), names | words_of_names)
                   for chart in at.get("vega_lite_chart"))
    shared = set(chinese) & set(english)
    sentences = sorted(text for text in shared if english_runs(text, names))
    assert sentences == [], sentences
    # An English phrase of the English page inside a Chinese text: words the library wrote, set in a translation.
    english_text = "\n".join(english)
    fragments = sorted({run for text in set(chinese) - shared for run in english_runs(text, names)
                        if run in english_text and len(run.split()) >= 3})
    assert fragments == [], fragments


def test_the_examples_menu_titles_are_the_examples_own():
    from inspector.base.examples import EXAMPLES
    from inspector.base.i18n import t

    for example in EXAMPLES:
        key = f"example.{example.slug}"
        if key in CATALOGUE:
            assert t(key, "en") == example.title and CJK.search(t(key, "zh")), key
    assert sum(f"example.{example.slug}" in CATALOGUE for example in EXAMPLES) == len(EXAMPLES)
