"""inspector/analyses/heatmap.py: sink removal, word merging and hidden specials — exact on a hand-built case, rows
summing to 1 as promised (hypothesis), the bundled model end to end, and clear errors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inspector.analyses.heatmap import HeatmapOptions, HeatmapView, heatmap_view, layer_views
from inspector.base.errors import InvalidRequestError
from inspector.core.capture import Capture, OutputSummary, capture

ALL_OPTIONS = [HeatmapOptions(hide_special=h, drop_sink=d, words=w)
               for h in (False, True) for d in (False, True) for w in (False, True)]


def fake_capture(weights: np.ndarray, tokens, *, special, word_ids, text="", offsets=None) -> Capture:
    """A Capture around given weights (layers, heads, q_len, q_len); the statistics are placeholders."""
    layers, heads, q_len, _ = weights.shape
    zeros = np.zeros((layers, heads, q_len), np.float32)
    return Capture(
        model_name="fake", text=text, tokens=tuple(tokens), token_ids=np.arange(q_len, dtype=np.int64),
        offsets=np.zeros((q_len, 2), np.int32) if offsets is None else np.asarray(offsets, np.int32),
        special=np.asarray(special, bool), word_ids=np.asarray(word_ids, np.int32), entropy=zeros, lse=zeros,
        sink_mass=zeros, visible_keys=np.full((layers, q_len), q_len, np.int32), causal=False,
        windows=(None,) * layers, weights={layer: weights[layer].astype(np.float32) for layer in range(layers)},
        output=OutputSummary(kind="embedding", embedding=np.zeros(2, np.float32)), backend="torch")


# [CLS] un ##like cats [SEP] — "unlike" is two pieces of one word.
HAND = np.array([[0.5, 0.1, 0.1, 0.1, 0.2],
                 [0.2, 0.2, 0.2, 0.2, 0.2],
                 [0.4, 0.0, 0.2, 0.2, 0.2],
                 [0.1, 0.3, 0.1, 0.4, 0.1],
                 [0.6, 0.1, 0.1, 0.1, 0.1]])


@pytest.fixture()
def hand():
    return fake_capture(HAND[None, None], ["[CLS]", "un", "##like", "cats", "[SEP]"], text="unlike cats",
                        special=[True, False, False, False, True], word_ids=[-1, 0, 0, 1, -1],
                        offsets=[(0, 0), (0, 2), (2, 6), (7, 11), (0, 0)])


def test_plain_view_is_the_captured_head(hand):
    view = heatmap_view(hand, 0, 0)
    np.testing.assert_allclose(view.weights, HAND, rtol=1e-6)
    assert view.query_labels == view.key_labels == ("0: [CLS]", "1: un", "2: ##like", "3: cats", "4: [SEP]")
    assert view.query_tokens[2] == "##like" and view.notes == () and (view.layer, view.head) == (0, 0)


def test_words_sum_columns_and_average_rows(hand):
    view = heatmap_view(hand, 0, 0, HeatmapOptions(words=True))
    expected = [[0.5, 0.2, 0.1, 0.2],
                [0.3, 0.3, 0.2, 0.2],  # mean of rows 1 and 2, columns 1 + 2 summed
                [0.1, 0.4, 0.4, 0.1],
                [0.6, 0.2, 0.1, 0.1]]
    np.testing.assert_allclose(view.weights, expected, rtol=1e-6)
    assert view.query_labels == ("0: [CLS]", "1: unlike", "3: cats", "4: [SEP]")
    assert view.query_tokens == ("[CLS]", "unlike", "cats", "[SEP]") and view.query_positions == (0, 1, 3, 4)
    assert any("5 tokens merged into 4 words" in note for note in view.notes)


def test_drop_sink_renormalises_over_the_other_keys(hand):
    view = heatmap_view(hand, 0, 0, HeatmapOptions(drop_sink=True))
    # The emptied key column leaves the axis (a blank [CLS] column stood there; issue 31); its row stays.
    assert view.key_labels[0] == "1: un" and view.query_labels[0] == "0: [CLS]" and view.weights.shape == (5, 4)
    np.testing.assert_allclose(view.weights[2], [0, 1 / 3, 1 / 3, 1 / 3], rtol=1e-6)
    np.testing.assert_allclose(view.weights[4], [0.25, 0.25, 0.25, 0.25], rtol=1e-6)
    assert view.notes == ("Rows renormalised after removing key 0 ([CLS]), the attention sink.",)


def test_all_three_in_order(hand):
    view = heatmap_view(hand, 0, 0, HeatmapOptions(hide_special=True, drop_sink=True, words=True))
    np.testing.assert_allclose(view.weights, [[5 / 12, 7 / 24], [4 / 9, 4 / 9]], rtol=1e-6)
    assert view.query_labels == view.key_labels == ("1: unlike", "3: cats")
    assert len(view.notes) == 3 and "no longer sum to 1" in view.notes[-1] and "[CLS], [SEP]" in view.notes[-1]


def test_hide_special_does_not_renormalise(hand):
    view = heatmap_view(hand, 0, 0, HeatmapOptions(hide_special=True))
    np.testing.assert_allclose(view.weights, HAND[1:4, 1:4], rtol=1e-6)
    assert view.query_labels == ("1: un", "2: ##like", "3: cats")


def test_a_row_that_only_saw_the_sink_stays_zero():
    causal = np.tril(np.full((3, 3), 1.0)) / np.arange(1, 4)[:, None]  # row 0 sees only key 0
    fake = fake_capture(causal[None, None], ["<s>", "a", "b"], special=[True, False, False], word_ids=[-1, 0, 1])
    view = heatmap_view(fake, 0, 0, HeatmapOptions(drop_sink=True))
    np.testing.assert_allclose(view.weights, [[0, 0], [1, 0], [0.5, 0.5]], rtol=1e-6)
    assert "rows that saw only that key are left at 0" in view.notes[0]


@st.composite
def random_capture(draw):
    """1–2 heads over 2–9 tokens: rows stochastic with some exact zeros, words of 1–3 pieces, special ends."""
    n = draw(st.integers(2, 9))
    heads = draw(st.integers(1, 2))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    raw = rng.exponential(size=(1, heads, n, n)) * (rng.random((1, heads, n, n)) > 0.3)
    raw[..., 0] += (raw.sum(axis=-1) == 0)  # no empty rows
    weights = raw / raw.sum(axis=-1, keepdims=True)
    special = np.zeros(n, bool)
    special[0] = draw(st.booleans())
    special[-1] = draw(st.booleans())
    word_ids, word = [], 0
    sizes = draw(st.lists(st.integers(1, 3), min_size=n, max_size=n))
    position = 0
    for size in sizes:
        for _ in range(size):
            if position < n:
                word_ids.append(-1 if special[position] else word)
                position += 1
        word += 1
    tokens = [f"t{i}" for i in range(n)]
    return fake_capture(weights, tokens, special=special, word_ids=word_ids)


def word_oracle(weights: np.ndarray, word_ids: np.ndarray) -> np.ndarray:
    """Loops, not matrices: the definition of the word view."""
    groups: list[list[int]] = []
    for i, w in enumerate(word_ids.tolist()):
        if w >= 0 and groups and word_ids[groups[-1][0]] == w:
            groups[-1].append(i)
        else:
            groups.append([i])
    return np.array([[np.mean([sum(weights[q, k] for k in gk) for q in gq]) for gk in groups] for gq in groups])


@settings(max_examples=60, deadline=None)
@given(random_capture(), st.sampled_from(ALL_OPTIONS))
def test_properties(fake, options):
    raw = fake.weights[0]  # (heads, n, n)
    if options.hide_special and fake.special.all():
        with pytest.raises(InvalidRequestError, match="nothing to show"):
            layer_views(fake, 0, options)
        return
    views = layer_views(fake, 0, options)
    assert len(views) == fake.num_heads
    for head, view in enumerate(views):
        assert view.head == head and view.weights.dtype == np.float32
        assert ((view.weights >= 0) & (view.weights <= 1 + 1e-5)).all()
        sums = view.row_sums
        if not options.hide_special and not options.drop_sink:
            np.testing.assert_allclose(sums, 1, atol=1e-5)
        elif not options.hide_special and not options.words:
            # after drop_sink a row whose whole budget was on key 0 is left at 0
            assert np.all(np.isclose(sums, 1, atol=1e-5) | np.isclose(sums, 0, atol=1e-6))
        elif not options.hide_special:
            # a word averages its pieces' rows, some of which may be such zero rows
            assert ((sums >= -1e-6) & (sums <= 1 + 1e-5)).all()
            if not (raw[head][:, 1:].sum(axis=-1) == 0).any():
                np.testing.assert_allclose(sums, 1, atol=1e-5)
        else:
            assert (sums <= 1 + 1e-5).all()
        if (options.drop_sink and not options.words and not (options.hide_special and fake.special[0])
                and len(view.query_positions) > 1):
            assert view.key_positions[0] != 0 and view.query_positions[0] == 0  # the sink's column is gone
        if options.words and not options.drop_sink and not options.hide_special:
            np.testing.assert_allclose(view.weights, word_oracle(raw[head], fake.word_ids), rtol=1e-5, atol=1e-6)
        if not options.words and not options.drop_sink:
            keep = ~fake.special if options.hide_special else np.ones(len(fake.tokens), bool)
            np.testing.assert_allclose(view.weights, raw[head][keep][:, keep], rtol=1e-6)
        assert len(view.query_labels) == view.weights.shape[0] and len(set(view.key_labels)) == view.weights.shape[1]
        np.testing.assert_array_equal(view.weights, heatmap_view(fake, 0, head, options).weights)


def test_bundled_model_words_and_labels_come_from_the_text(bundled):
    text = "The animal didn't cross the street unbelievably."
    result = capture(bundled, text, weights=[3])
    view = heatmap_view(result, 3, 11, HeatmapOptions(words=True, drop_sink=True))
    np.testing.assert_allclose(view.row_sums, 1, atol=1e-5)
    assert any(label.endswith(": unbelievably") for label in view.query_labels)
    assert view.query_tokens[0] == "[CLS]" and view.query_tokens[1] == "The"
    assert len(view.query_labels) < len(result.tokens)
    hidden = heatmap_view(result, 3, 11, HeatmapOptions(hide_special=True))
    assert "[CLS]" not in hidden.query_tokens and len(hidden.query_tokens) == len(result.tokens) - 2


def test_errors_say_what_and_how_to_fix(hand):
    with pytest.raises(InvalidRequestError, match=r"layer 3 does not exist: the model has 1 layers \(0–0\)"):
        heatmap_view(hand, 3, 0)
    with pytest.raises(InvalidRequestError, match=r"head -1 does not exist"):
        heatmap_view(hand, 0, -1)
    with pytest.raises(InvalidRequestError, match="whole number"):
        heatmap_view(hand, "0", 0)
    fields = {f: getattr(hand, f) for f in hand.__dataclass_fields__}
    without = Capture(**{**fields, "weights": {}})
    with pytest.raises(InvalidRequestError, match=r"layer 0's attention weights were not captured.*weights='all'"):
        layer_views(without, 0)
    only_special = fake_capture(np.full((1, 1, 2, 2), 0.5), ["[CLS]", "[SEP]"], special=[True, True],
                                word_ids=[-1, -1])
    with pytest.raises(InvalidRequestError, match="turn off 'hide special tokens'"):
        heatmap_view(only_special, 0, 0, HeatmapOptions(hide_special=True))


def test_view_checks_its_own_invariants():
    good = dict(weights=np.eye(2, dtype=np.float32), query_labels=("0: a", "1: b"), key_labels=("0: a", "1: b"),
                query_tokens=("a", "b"), key_tokens=("a", "b"), layer=0, head=0, options=HeatmapOptions())
    HeatmapView(**good)
    with pytest.raises(ValueError, match="unique"):
        HeatmapView(**{**good, "query_labels": ("a", "a")})
    with pytest.raises(ValueError, match="key_tokens"):
        HeatmapView(**{**good, "key_tokens": ("a",)})
    with pytest.raises(ValueError, match="non-negative"):
        HeatmapView(**{**good, "weights": -np.eye(2, dtype=np.float32)})
