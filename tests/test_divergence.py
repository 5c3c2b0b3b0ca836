"""inspector/analyses/divergence.py: one Jensen–Shannon formula — the tensor, NumPy and pairwise entries give the
same numbers, the smoothing is the one stated, and the gradient the adversarial search follows is finite."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from inspector.analyses.divergence import (
    CLARK_SMOOTHING,
    JS_MAX,
    jensen_shannon,
    jensen_shannon_numpy,
    jensen_shannon_pairs,
)


def test_jensen_shannon_limits():
    p = torch.tensor([1.0, 0.0, 0.0])
    q = torch.tensor([0.0, 0.5, 0.5])
    assert float(jensen_shannon(p, p, smoothing=0.0)) == pytest.approx(0.0, abs=1e-7)
    assert float(jensen_shannon(p, q, smoothing=0.0)) == pytest.approx(np.log(2), abs=1e-6)


def test_jensen_shannon_bounds():
    assert jensen_shannon_numpy(np.array([1.0, 0.0]), np.array([0.0, 1.0]), smoothing=0.0) == pytest.approx(JS_MAX)
    assert jensen_shannon_numpy(np.array([0.3, 0.7]), np.array([0.3, 0.7]), smoothing=0.0) == 0.0


def _kl_by_hand(a, b):
    return sum(x * np.log(x / y) for x, y in zip(a, b) if x > 0)


@st.composite
def distributions(draw):
    n = draw(st.integers(1, 9))
    rows = [np.asarray(draw(st.lists(st.floats(0.0, 10.0), min_size=n, max_size=n))) + 1e-9 for _ in range(2)]
    return [row / row.sum() for row in rows]


@settings(max_examples=60, deadline=None)
@given(distributions(), st.sampled_from([0.0, CLARK_SMOOTHING, 0.5]))
def test_every_entry_is_the_one_formula(rows, smoothing):
    """½ KL(p ‖ m) + ½ KL(q ‖ m) by hand, after (p + s/n)/(1 + s): the NumPy entry, the tensor entry in float64
    and the pairwise entry all give it."""
    p, q = rows
    n = len(p)
    ps, qs = ((x + smoothing / n) / (1 + smoothing) for x in (p, q))
    m = (ps + qs) / 2
    expected = 0.5 * _kl_by_hand(ps, m) + 0.5 * _kl_by_hand(qs, m)
    assert jensen_shannon_numpy(p, q, smoothing=smoothing) == pytest.approx(expected, abs=1e-12)
    tensor = jensen_shannon(torch.from_numpy(p), torch.from_numpy(q), smoothing=smoothing)
    assert float(tensor) == pytest.approx(expected, abs=1e-12)
    pairs = jensen_shannon_pairs(np.stack([p, q]), smoothing=smoothing)
    assert pairs.shape == (2, 2) and pairs[0, 0] == pairs[1, 1] == 0.0 and pairs[0, 1] == pairs[1, 0]
    assert pairs[0, 1] == pytest.approx(expected, abs=1e-12)
    assert 0.0 <= jensen_shannon_numpy(p, q, smoothing=smoothing) <= JS_MAX


def test_pairs_compare_each_item_with_every_other_query_by_query():
    rng = np.random.default_rng(0)
    rows = rng.dirichlet(np.ones(7), size=(5, 3))  # (items, queries, keys)
    pairs = jensen_shannon_pairs(rows, smoothing=CLARK_SMOOTHING)
    assert pairs.shape == (5, 5, 3)
    for i in range(5):
        for j in range(5):
            want = 0.0 if i == j else jensen_shannon_numpy(rows[i], rows[j], smoothing=CLARK_SMOOTHING)
            np.testing.assert_allclose(pairs[i, j], want, atol=1e-15)


def test_smoothing_keeps_disjoint_rows_below_ln2_and_refuses_a_negative_value():
    first, last = np.eye(6)[0], np.eye(6)[5]
    assert jensen_shannon_numpy(first, last, smoothing=0.0) == pytest.approx(JS_MAX, abs=1e-15)
    smoothed = jensen_shannon_numpy(first, last, smoothing=CLARK_SMOOTHING)
    assert JS_MAX - 0.01 < smoothed < JS_MAX
    with pytest.raises(ValueError, match="smoothing"):
        jensen_shannon_numpy(first, last, smoothing=-0.1)


def test_the_gradient_is_finite_where_rows_are_zero():
    """The adversarial search differentiates −JS through rows with exact zeros (keys the query cannot see)."""
    candidate = torch.tensor([[0.0, 0.2, 0.8], [0.0, 0.0, 1.0]], requires_grad=True)
    original = torch.tensor([0.0, 0.5, 0.5])
    (gradient,) = torch.autograd.grad(jensen_shannon(candidate, original[None], smoothing=0.0).sum(), candidate)
    assert torch.isfinite(gradient).all() and bool(gradient.abs().sum() > 0)
