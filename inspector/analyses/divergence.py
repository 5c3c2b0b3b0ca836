"""The Jensen–Shannon divergence, once, for every page that compares attention rows (issue 26).

    JS(p ‖ q) = H(m) − ½ (H(p) + H(q)),  m = ½ (p + q),  H(x) = −Σ x log x  (0 · log 0 = 0)

— the same number as ½ KL(p ‖ m) + ½ KL(q ‖ m), written as the "Jensen gap" of the entropy because that form
separates: the entropy of each row is computed once, so every pair of N rows (:func:`jensen_shannon_pairs`)
needs one new entropy per pair, not three. In nats over the last axis; 0 exactly for equal inputs, at most
ln 2 (:data:`JS_MAX`) for rows on disjoint keys. Symmetric; not a metric (its square root is).

``smoothing`` is an argument of every entry, and every caller states it: with smoothing s each row of n entries
is first replaced by (p + s/n) / (1 + s) — still a distribution, no entry 0. The callers differ on purpose:

- **Heads page** (:func:`inspector.analyses.redundancy.js_divergence_matrix`): Clark et al. (2019, "What Does
  BERT Look At?", section 6) smooth with s = 0.001 (:data:`CLARK_SMOOTHING`), as their head distance does; two
  one-hot rows on different keys of 6 then score ln 2 − 0.002 instead of ln 2. Values stay comparable with the
  paper's.
- **Compare page** (:func:`inspector.analyses.compare.compare_rows`): s = 0. Its rows are put on a common
  support with an "other" bucket, which already gives every row mass somewhere, and its verdicts read plain
  nats: identical rows exactly 0, "moved" above :data:`inspector.analyses.compare.JS_THRESHOLD`.
- **Attribution's counterfactual** (:mod:`inspector.analyses.attribution.counterfactual`): s = 0, as Jain &
  Wallace (2019) measure the adversarial row; keys the query cannot see stay exactly 0, and JS_MAX is the
  verdict's scale. It needs a gradient, so it uses the tensor entry :func:`jensen_shannon`.

Two variants of the one formula, because both are needed: :func:`jensen_shannon` on torch tensors is
differentiable (the adversarial search optimises −JS; the entropy's gradient at 0 is 0, not NaN) and is not
clipped, so rounding never cuts the gradient off; :func:`jensen_shannon_numpy` and :func:`jensen_shannon_pairs`
work in float64 NumPy (as fast as the pairs of 72 heads × 512² keys need). Both take each row's entropy from the
one :func:`kernels.reference.row_entropy`;
:func:`jensen_shannon_numpy` clips to [0, ln 2], since rounding can step a hair outside.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from kernels.reference import row_entropy

JS_MAX = math.log(2.0)
# Clark et al. 2019: 0.001/n added to every weight of a row of n keys, then the row renormalised.
CLARK_SMOOTHING = 0.001


def _smoothed(p, smoothing: float):
    """(p + s/n) / (1 + s) over the last axis, n its length (NumPy array or tensor); s = 0 leaves p as it is."""
    if smoothing < 0:
        raise ValueError(f"smoothing must be ≥ 0, got {smoothing}")
    if smoothing == 0:
        return p
    return (p + smoothing / p.shape[-1]) / (1.0 + smoothing)  # rows still sum to 1


def _jensen_gap(p, q, entropy_p, entropy_q, entropy):
    """The one formula, for NumPy arrays and tensors alike: H((p + q)/2) − (H(p) + H(q))/2, with the rows'
    entropies passed in (so a caller comparing many pairs computes each row's once)."""
    return entropy((p + q) / 2.0) - (entropy_p + entropy_q) / 2.0


def jensen_shannon(p: torch.Tensor, q: torch.Tensor, *, smoothing: float) -> torch.Tensor:
    """JS(p ‖ q) in nats over the last axis of two tensors of distributions (broadcast against each other),
    after ``smoothing`` (see the module docstring; 0 = none). Differentiable; returned in the inputs' dtype; not
    clipped (rounding can leave equal rows a hair below 0).

    Computed in float64: the formula subtracts entropies near log n, which float32 holds only to a few 1e-7
    nats (a uniform row's 0.0548 nats came out 2.5e-7 off on the tests' sharp tiny BERT) — all the digits of
    a small divergence. The rows compared here are a handful (the search's K candidates), so float64 costs
    nothing."""
    dtype = torch.promote_types(p.dtype, q.dtype)
    p, q = (_smoothed(x.to(torch.float64), smoothing) for x in (p, q))
    return _jensen_gap(p, q, row_entropy(p), row_entropy(q), row_entropy).to(dtype)


def jensen_shannon_numpy(p: np.ndarray, q: np.ndarray, *, smoothing: float) -> np.ndarray:
    """:func:`jensen_shannon` on NumPy arrays: float64 nats over the last axis, clipped to [0, ln 2]; exactly 0
    for equal inputs."""
    p, q = (_smoothed(np.asarray(x, np.float64), smoothing) for x in (p, q))
    return np.clip(_jensen_gap(p, q, row_entropy(p), row_entropy(q), row_entropy), 0.0, JS_MAX)


def jensen_shannon_pairs(rows: np.ndarray, *, smoothing: float) -> np.ndarray:
    """JS between every pair of items of ``rows`` (items, ..., n) — e.g. (heads, q_len, k_len), each head's
    rows against every other head's, query by query. Returns (items, items, ...) float64 nats: exactly
    symmetric, exactly 0 on the diagonal, and not clipped — a caller that averages them clips the average
    (rounding leaves near-equal rows a hair below 0). Each row's entropy is computed once and one item is
    compared with the rest at a time (memory items · ... · n)."""
    p = _smoothed(np.asarray(rows, dtype=np.float64), smoothing)
    items = p.shape[0]
    own = row_entropy(p)  # (items, ...)
    result = np.zeros((items, items, *p.shape[1:-1]), dtype=np.float64)
    for i in range(items):
        result[i, i + 1:] = _jensen_gap(p[i][None], p[i + 1:], own[i][None], own[i + 1:], row_entropy)
    return result + np.swapaxes(result, 0, 1)  # the upper triangle mirrored: exactly symmetric
