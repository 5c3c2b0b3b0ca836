"""Issue 33, item 12: a literal "[SEP]" (or any special token's string) typed in a text is read as text, not as the
model's separator — except a masked LM's [MASK], which is how a text asks for a blank to fill."""

from __future__ import annotations

import numpy as np

from inspector.analyses.census.measure import batch_encoding
from inspector.core.capture import capture
from inspector.core.forward import encode_text


def test_a_typed_separator_is_text_not_a_special_token(bundled):
    encoded = encode_text(bundled, "first part [SEP] second part [CLS]")
    assert encoded.tokens[0] == "[CLS]" and encoded.tokens[-1] == "[SEP]"
    assert "[SEP]" not in encoded.tokens[1:-1] and "[CLS]" not in encoded.tokens[1:-1]
    assert int(encoded.special.sum()) == 2  # only the tokenizer's own two
    assert "sep" in encoded.tokens and "[" in encoded.tokens


def test_a_typed_mask_stays_the_blank_of_a_masked_model(bundled):
    encoded = encode_text(bundled, "The capital of France is [MASK].")
    assert "[MASK]" in encoded.tokens


def test_the_census_reads_a_typed_separator_as_a_capture_does(bundled):
    texts = ["a [SEP] b", "plain text", "fill the [MASK] here"]
    ids, masks = batch_encoding(bundled, texts)
    for text, row, mask in zip(texts, ids, masks):
        single = encode_text(bundled, text)
        assert row == single.inputs["input_ids"][0].tolist()
        assert np.array_equal(np.asarray(mask, dtype=bool), single.special)
    result = capture(bundled, "a [SEP] b")
    assert result.tokens.count("[SEP]") == 1


def test_the_lesson_heatmaps_of_a_long_text_ship_pooled_blocks_not_every_cell():
    """Issue 33, item 12: Lessons at 512 tokens took 114 s to render in Chromium — its two heatmaps shipped 512² and
    2 × 512² cells. Past MAX_HEATMAP_SIDE tokens they ship block means, the whole weight kept (rows still sum to 1
    on average), with a note saying so."""
    from inspector.analyses.lessons import WhyQKLesson
    from inspector.charts.lessons import MAX_HEATMAP_SIDE, pooled, tied_weights_chart, weights_chart

    n = 512
    rng = np.random.default_rng(0)
    weights = rng.random((n, n))
    weights /= weights.sum(axis=1, keepdims=True)
    tokens = tuple(f"t{i}" for i in range(n))
    means, labels, notes = pooled(weights, tokens)
    assert means.shape == (MAX_HEATMAP_SIDE, MAX_HEATMAP_SIDE) and len(labels) == MAX_HEATMAP_SIDE
    assert labels[1] == "4–7: t4" and notes and "512 tokens" in notes[0]
    assert np.isclose(means.mean(), weights.mean()) and np.isclose(means[0, 0], weights[:4, :4].mean())
    assert len(weights_chart(weights, tokens, title="w").data) == MAX_HEATMAP_SIDE ** 2
    short, short_labels, short_notes = pooled(weights[:8, :8], tokens[:8])
    assert short.shape == (8, 8) and short_labels[0] == "0: t0" and short_notes == []
    fields = {f: weights if f in ("weights", "tied_weights") else None for f in WhyQKLesson.__dataclass_fields__}
    lesson = WhyQKLesson.__new__(WhyQKLesson)
    for name, value in fields.items():
        object.__setattr__(lesson, name, value)
    assert len(tied_weights_chart(lesson, tokens, title="t").data) == 2 * MAX_HEATMAP_SIDE ** 2
