"""Readable token labels (inspector.base.tokens, issue 27): byte-level and SentencePiece markers shown as ␣ and ↵,
byte-level characters joined back, WordPiece and special tokens unchanged — and every page's labels go through it."""

from __future__ import annotations

import numpy as np

from inspector.analyses.heatmap import HeatmapOptions, heatmap_view
from inspector.base.tokens import is_byte_level, readable_token, readable_tokens, token_labels
from inspector.charts.base import token_labels as chart_token_labels


def test_byte_level_markers_and_characters_read_as_text():
    tokens = ["<|im_start|>", "The", "Ġanimal", "ĠdidnâĢĻt", "Ċ", "ĉx", "ĠcafÃ©"]
    assert is_byte_level(tokens)
    assert readable_tokens(tokens) == ("<|im_start|>", "The", "␣animal", "␣didn’t", "↵", "⇥x", "␣café")


def test_part_of_a_character_shows_its_bytes():
    # 动 is three UTF-8 bytes (E5 8A A8); byte-level BPE may split it over two tokens.
    assert readable_tokens(["Ġ", "åĬ", "¨"]) == ("␣", "<0xE5><0x8A>", "<0xA8>")


def test_sentencepiece_markers_and_raw_controls():
    tokens = ["<bos>", "▁the", "\n", "<0x0A>", "动物", "▁▁", "a\x01"]
    assert not is_byte_level(tokens)
    assert readable_tokens(tokens) == ("<bos>", "␣the", "↵", "↵", "动物", "␣␣", "a\\x01")


def test_wordpiece_and_accents_are_left_alone():
    # No byte-level marker in the sequence: é is a letter, not a byte.
    assert readable_tokens(["[CLS]", "café", "##ing", "[SEP]"]) == ("[CLS]", "café", "##ing", "[SEP]")
    assert readable_token("café") == "café" and readable_token("Ã©", byte_level=True) == "é"


def test_labels_are_unique_and_every_chart_uses_them():
    tokens = ["Ġthe", "Ċ", "Ġthe"]
    assert token_labels(tokens) == ["0: ␣the", "1: ↵", "2: ␣the"]
    assert chart_token_labels(tokens) == token_labels(tokens)
    assert all("\n" not in label for label in token_labels(["\n", "a\nb"]))


def test_heatmap_labels_are_readable(tiny_llama):
    from inspector import capture

    result = capture(tiny_llama, "a b\nc", weights="all")
    view = heatmap_view(result, 0, 0, HeatmapOptions())
    assert all("\n" not in label and "Ġ" not in label and "Ċ" not in label for label in view.query_labels)
    assert view.query_tokens == readable_tokens(result.tokens)
    assert np.isfinite(view.weights).all()
