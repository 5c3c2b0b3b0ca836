"""Lesson D9 (inspector/analyses/lessons/mechanism.py; issue 40, Teaching): on a tiny random causal LM the two lists —
the heads that look at the most-attended token, the heads whose patching restores the answer — are the measurements'
own (checked against direct logit attribution and activation patching run here), and the answer is written from
their numbers in both languages; the pair falls back to one made from the text when the model reads no example."""

from __future__ import annotations

import numpy as np
import pytest

from inspector.analyses.lessons import MechanismPair, lesson_pair, mechanism_lesson, pair_from_text
from inspector.analyses.lessons.mechanism import example_fits
from inspector.analyses.mechanism import activation_patching, direct_logit_attribution
from inspector.base.errors import InvalidRequestError
from inspector.base.examples import MECHANISM_EXAMPLES
from inspector.base.i18n import LANGUAGES
from inspector.core.loading import load_model
from tests.conftest import save_tiny_model

PAIR = MechanismPair(clean="the cat sat on the mat and the dog ran", corrupted="the dog sat on the mat and the dog ran",
                     answer="cat", contrast="dog", source="example")


@pytest.fixture(scope="module")
def tiny_llama_lm(tmp_path_factory):
    """The tiny Llama with its language-model head (RoPE, 4 heads on 2 key/value heads)."""
    return load_model(str(save_tiny_model(tmp_path_factory.mktemp("lm") / "llama", "llama", with_head=True)))


@pytest.fixture(scope="module")
def lesson(tiny_llama_lm):
    return mechanism_lesson(tiny_llama_lm, PAIR, top=3)


def test_the_two_lists_are_the_measurements_own(tiny_llama_lm, lesson):
    dla = direct_logit_attribution(tiny_llama_lm, PAIR.clean, answer="cat", contrast="dog",
                                   key_position=lesson.attended_position)
    patched = activation_patching(tiny_llama_lm, PAIR.clean, PAIR.corrupted, answer="cat", contrast="dog")
    restored = patched.restored(patched.heads)  # (layers, heads)
    # The restoring heads are the three largest restored fractions, with those fractions.
    assert sorted(restored.ravel(), reverse=True)[:3] == pytest.approx(list(lesson.restored))
    assert [restored[layer, head] for layer, head in lesson.restoring] == pytest.approx(list(lesson.restored))
    # The attending heads carry the three largest weights on the attended key.
    assert sorted(dla.attention_to_key.ravel(), reverse=True)[:3] == pytest.approx(list(lesson.attending_weights))
    assert [dla.attention_to_key[layer, head] for layer, head in lesson.attending] == \
        pytest.approx(list(lesson.attending_weights))
    assert [dla.heads[layer, head] for layer, head in lesson.writing] == pytest.approx(list(lesson.direct))
    # The attended key is neither the first token nor the last (the query itself).
    assert 0 < lesson.attended_position < len(dla.tokens) - 1
    shared = {tuple(h) for h in lesson.attending.tolist()} & {tuple(h) for h in lesson.restoring.tolist()}
    assert lesson.shared == len(shared)
    assert (lesson.clean_value, lesson.corrupted_value) == pytest.approx((patched.clean_value,
                                                                         patched.corrupted_value))


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_answer_is_written_from_the_numbers(lesson, lang):
    answer, verdict = (part.text(lang) for part in lesson.answers)
    for (layer, head), weight in zip(lesson.attending, lesson.attending_weights, strict=True):
        assert f"L{layer}H{head} ({weight:.2f})" in answer
    for (layer, head), fraction in zip(lesson.restoring, lesson.restored, strict=True):
        assert f"L{layer}H{head} ({fraction:.0%})" in answer
    assert f"{lesson.clean_value:.3f}" in answer and f"{lesson.corrupted_value:.3f}" in answer
    assert lesson.attended_token in answer and f"{lesson.attended_position}" in answer
    expected = {0: "lesson17.verdict_none", 3: "lesson17.verdict_all"}.get(lesson.shared, "lesson17.verdict_some")
    assert lesson.verdict.key == expected and "cat" in verdict
    assert lesson.shared == 0 or lesson.shared == 3 or str(lesson.shared) in verdict


def test_a_model_that_reads_no_example_gets_a_pair_from_the_text(tiny_llama_lm):
    assert not any(example_fits(tiny_llama_lm, example) for example in MECHANISM_EXAMPLES.values())
    pair = lesson_pair(tiny_llama_lm, "zh", "the animal did n't cross the street")
    assert pair.source == "text" and pair.answer is None and pair.clean != pair.corrupted
    assert len(pair.clean.split()) == len(pair.corrupted.split())
    lesson = mechanism_lesson(tiny_llama_lm, pair, top=2)
    assert lesson.answer_token != lesson.contrast_token  # the model's top prediction and its runner-up
    assert len(lesson.restoring) == 2 and np.all(np.isfinite(lesson.restored))


def test_bad_requests_are_one_clear_line(tiny_llama_lm):
    with pytest.raises(InvalidRequestError, match="no word of the text"):
        pair_from_text(tiny_llama_lm, "cat cat cat")
    for top in (0, 99, True):
        with pytest.raises(InvalidRequestError, match="top must be a whole number from 1 to 8"):
            mechanism_lesson(tiny_llama_lm, PAIR, top=top)
