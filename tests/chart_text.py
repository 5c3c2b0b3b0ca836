"""What a person reads on a chart, taken from its Vega-Lite spec — for the tests that build charts in 简体中文 and
find no English on them (issue 17).

:func:`chart_strings` walks a spec (``chart.to_dict()``, or the JSON Streamlit sends) and returns the texts a reader
sees: titles and subtitles, axis, legend, header and tooltip titles, the string literals of label expressions,
text marks' literal text, and the data values a legend or a facet header draws (the fields encoded as colour,
shape, stroke dash, row, column or facet). :func:`english_words` then finds the Latin words of three letters or more
in them once the allowed names (model and method names, the text's tokens, symbols) are taken out.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

# Channels whose data values a reader sees as words: legend entries and facet headers.
_LABELLED_CHANNELS = ("color", "fill", "stroke", "shape", "strokeDash", "row", "column", "facet")
# Words a Chinese chart may keep: symbols and abbreviations read the same in both languages.
ALWAYS_ALLOWED = ("log", "CLS", "SEP", "BOS", "EOS", "UNK", "PAD", "MASK", "JSD", "CKA", "AOPC", "Kendall", "Spearman",
                  "Jensen", "Shannon", "Var", "Olsson", "Michel", "Clark", "Kobayashi",
                  "Voita", "Xiao", "Triton", "PyTorch", "bertviz", "softmax", "datum", "value", "label")
_WORD = re.compile(r"[A-Za-z][A-Za-z'’]{2,}")
_STRING_LITERAL = re.compile(r"'((?:[^'\\]|\\.)*)'|\"((?:[^\"\\]|\\.)*)\"")


def _title_texts(title) -> list[str]:
    if isinstance(title, str):
        return [title]
    if isinstance(title, (list, tuple)):
        return [str(line) for line in title]
    if isinstance(title, dict):
        texts = []
        for part in ("text", "subtitle"):
            if part in title:
                texts += _title_texts(title[part])
        return texts
    return []


def _datasets(spec: dict) -> dict[str, list[dict]]:
    found: dict[str, list[dict]] = dict(spec.get("datasets", {}))
    for inner in _children(spec):
        found.update(_datasets(inner))
    return found


def _children(spec: dict) -> list[dict]:
    children = [spec[key] for key in ("spec",) if isinstance(spec.get(key), dict)]
    for key in ("layer", "hconcat", "vconcat", "concat"):
        children += [inner for inner in spec.get(key, []) if isinstance(inner, dict)]
    return children


def _walk(value, texts: list[str], fields: set[str]) -> None:
    if isinstance(value, dict):
        for key, inner in value.items():
            if key in ("title", "subtitle"):
                texts += _title_texts(inner)
            elif key in ("labelExpr", "expr") and isinstance(inner, str):
                texts += [single or double for single, double in _STRING_LITERAL.findall(inner)]
            elif key == "text" and isinstance(inner, str):
                texts.append(inner)
            elif key == "text" and isinstance(inner, dict) and isinstance(inner.get("value"), str):
                texts.append(inner["value"])
            elif key in _LABELLED_CHANNELS and isinstance(inner, dict) and isinstance(inner.get("field"), str):
                fields.add(inner["field"])
            if key not in ("datasets", "data"):
                _walk(inner, texts, fields)
    elif isinstance(value, list):
        for inner in value:
            _walk(inner, texts, fields)


def chart_strings(spec: dict) -> list[str]:
    """The texts a reader sees on the chart ``spec`` (a Vega-Lite dict)."""
    texts: list[str] = []
    fields: set[str] = set()
    _walk(spec, texts, fields)
    for rows in _datasets(spec).values():
        for row in rows:
            texts += [str(row[field]) for field in fields if isinstance(row.get(field), str)]
    return [text for text in texts if text.strip()]


def english_words(texts: Iterable[str], allowed: Iterable[str] = ()) -> list[str]:
    """The Latin words of three letters or more in ``texts`` once the ``allowed`` names and :data:`ALWAYS_ALLOWED`
    are taken out — what a Chinese chart must not show."""
    names = sorted({*allowed, *ALWAYS_ALLOWED}, key=len, reverse=True)
    found = []
    for text in texts:
        for name in names:
            if name:  # whole words only: the text's "on" must not eat the end of "Olsson"
                text = re.sub(rf"(?<![A-Za-z]){re.escape(name)}(?![A-Za-z])", " ", text)
        found += _WORD.findall(text)
    return found
