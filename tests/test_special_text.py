"""Issue 33, item 12: a literal "[SEP]" (or any special token's string) typed in a text is read as text, not as the
model's separator — except a masked LM's [MASK], which is how a text asks for a blank to fill."""

from __future__ import annotations

import numpy as np

from inspector.analyses.census import _batch_encoding
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
    ids, masks = _batch_encoding(bundled, texts)
    for text, row, mask in zip(texts, ids, masks):
        single = encode_text(bundled, text)
        assert row == single.inputs["input_ids"][0].tolist()
        assert np.array_equal(np.asarray(mask, dtype=bool), single.special)
    result = capture(bundled, "a [SEP] b")
    assert result.tokens.count("[SEP]") == 1
