"""inspector/metrics.py: head entropy, raw and normalised by the keys each row can see."""

import math

import numpy as np
import pytest

from inspector.metrics import head_entropy, normalized_row_entropy


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
    rows = normalized_row_entropy(entropy.astype(np.float32), visible)
    assert math.isnan(rows[0, 0, 0]) and np.allclose(rows[0, 0, 1:], 1.0)
    assert head_entropy(FakeCapture(entropy, visible)).normalized[0, 0] == pytest.approx(1.0)


def test_single_key_everywhere_gives_nan_not_an_error():
    result = head_entropy(FakeCapture(np.zeros((1, 1, 1)), np.ones((1, 1))))
    assert math.isnan(result.normalized[0, 0]) and result.raw[0, 0] == 0


def test_bundled_model_entropies_are_in_range(bundled):
    from inspector.capture import capture

    result = capture(bundled, "Attention routes information between tokens.", weights=None)
    he = head_entropy(result)
    assert he.raw.shape == (6, 12) and he.normalized.shape == (6, 12)
    assert np.all((he.normalized >= 0) & (he.normalized <= 1 + 1e-6))
    assert np.all(result.entropy <= np.log(len(result.tokens)) + 1e-5)
