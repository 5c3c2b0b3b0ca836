"""inspector/analyses/metrics.py: head entropy, raw and normalised by the keys each row can see."""

import math

import numpy as np
import pytest
import torch

from inspector.analyses.metrics import head_entropy, induction_score
from kernels.reference import mean_normalized_entropy


class FakeCapture:
    """Just the fields head_entropy reads: entropy (layers, heads, q_len) and visible_keys (layers, q_len)."""

    def __init__(self, entropy, visible):
        self.entropy, self.visible_keys = np.asarray(entropy, np.float32), np.asarray(visible, np.int32)


def test_uniform_rows_score_log_n_and_one():
    n = 7
    result = head_entropy(FakeCapture(np.full((1, 2, n), math.log(n)), np.full((1, n), n)))
    np.testing.assert_allclose(result.raw, math.log(n), rtol=1e-6)
    np.testing.assert_allclose(result.normalized, 1.0, rtol=1e-6)


def test_one_hot_rows_score_zero():
    result = head_entropy(FakeCapture(np.zeros((2, 3, 5)), np.full((2, 5), 5)))
    assert (result.raw == 0).all() and (result.normalized == 0).all() and (result.layer_mean == 0).all()


def test_causal_rows_are_normalised_by_what_they_see_and_the_first_row_is_skipped():
    visible = np.arange(1, 5)[None]  # row i sees i + 1 keys
    entropy = np.log(visible.astype(np.float64))[:, None, :]  # every row uniform over what it sees
    entropy[..., 0] = 5.0  # the first row sees one key: whatever it holds, it is not counted
    assert mean_normalized_entropy(entropy.astype(np.float32), visible[:, None, :])[0, 0] == pytest.approx(1.0)
    assert head_entropy(FakeCapture(entropy, visible)).normalized[0, 0] == pytest.approx(1.0)


def test_one_normalised_entropy_for_arrays_and_tensors_with_the_rows_a_caller_counts():
    """kernels.reference.mean_normalized_entropy serves the Inspect page (NumPy), the census (a padded batch's
    tensors with its real rows) and lesson 4b: each head's mean over counted rows seeing two keys or more."""
    rng = np.random.default_rng(0)
    entropy = rng.uniform(0.0, 2.0, (2, 3, 6))  # (layers, heads, rows)
    visible = rng.integers(0, 7, (2, 1, 6))
    rows = rng.random((2, 1, 6)) > 0.3
    rows[1] = False  # no row counted: NaN
    expected = np.full((2, 3), np.nan)
    for layer in range(2):
        kept = rows[layer, 0] & (visible[layer, 0] > 1)
        if kept.any():
            expected[layer] = (entropy[layer][:, kept] / np.log(visible[layer, 0, kept])).mean(axis=-1)
    array = mean_normalized_entropy(entropy, visible, rows=rows)
    tensor = mean_normalized_entropy(torch.from_numpy(entropy), torch.from_numpy(visible), rows=torch.from_numpy(rows))
    assert isinstance(array, np.ndarray) and isinstance(tensor, torch.Tensor)
    np.testing.assert_allclose(array, expected, rtol=1e-12)
    np.testing.assert_allclose(tensor.numpy(), expected, rtol=1e-12)
    assert np.isnan(array[1]).all() and np.isfinite(array[0]).all()


def test_single_key_everywhere_gives_nan_not_an_error():
    result = head_entropy(FakeCapture(np.zeros((1, 1, 1)), np.ones((1, 1))))
    assert math.isnan(result.normalized[0, 0]) and result.raw[0, 0] == 0


def test_bundled_model_entropies_are_in_range(bundled):
    from inspector.core.capture import capture

    result = capture(bundled, "Attention routes information between tokens.", weights=None)
    he = head_entropy(result)
    assert he.raw.shape == (6, 12) and he.normalized.shape == (6, 12)
    assert np.all((he.normalized >= 0) & (he.normalized <= 1 + 1e-6))
    assert np.all(result.entropy <= np.log(len(result.tokens)) + 1e-5)


# ------------------------------------------------------------------------------------- induction (Olsson et al.)

def _rows(n, picks):
    """(1, heads, n, n) causal weights: row i puts ``picks[h].get(i, {})`` on its keys and the rest on itself."""
    weights = np.zeros((1, len(picks), n, n))
    for h, pick in enumerate(picks):
        for i in range(n):
            for key, mass in pick.get(i, {}).items():
                weights[0, h, i, key] = mass
            weights[0, h, i, i] += 1.0 - weights[0, h, i].sum()
    return weights


def test_induction_score_is_the_mass_on_the_token_after_the_earlier_occurrence():
    ids = np.array([5, 6, 7, 5])  # row 3 repeats token 5 (position 0), which was followed by key 1
    special = np.zeros(4, dtype=bool)
    weights = _rows(4, [{3: {1: 0.7, 0: 0.3}}, {}, {3: {1: 1.0}}])  # head 1 keeps row 3 on itself (key 3)
    np.testing.assert_allclose(induction_score(weights, ids, special)[0], [0.7, 0.0, 1.0], rtol=1e-6)
    assert induction_score(weights, ids, special).dtype == np.float32


def test_induction_score_averages_rows_and_counts_every_earlier_occurrence_once():
    ids = np.array([1, 2, 1, 3, 1])  # row 2 → key 1; row 4 → keys 1 and 3 (after both earlier 1s)
    weights = _rows(5, [{2: {1: 0.5}, 4: {1: 0.25, 3: 0.5}}])
    score = induction_score(weights, ids, np.zeros(5, dtype=bool))
    assert score[0, 0] == pytest.approx((0.5 + 0.75) / 2)


def test_adjacent_duplicates_special_tokens_and_texts_without_repeats():
    weights = _rows(4, [{}])
    # "A A": the token after the earlier A is the query itself, so the row does not qualify.
    assert np.isnan(induction_score(weights, np.array([9, 5, 5, 8]), np.zeros(4, dtype=bool))).all()
    # Nothing repeats: NaN for every head, not 0.
    assert np.isnan(induction_score(_rows(4, [{}, {}]), np.arange(4), np.zeros(4, dtype=bool))).all()
    # A repeated special token (id 0 at 0 and 2) never counts; the real repeat at 4 still does.
    ids = np.array([0, 7, 0, 8, 7])
    special = np.array([True, False, True, False, False])
    score = induction_score(_rows(5, [{2: {1: 1.0}, 4: {2: 0.6}}]), ids, special)
    assert score[0, 0] == pytest.approx(0.6)  # only row 4 (token 7, earlier at 1 → key 2) is averaged
    with pytest.raises(ValueError, match="induction_score"):
        induction_score(weights, np.arange(3), np.zeros(3, dtype=bool))
