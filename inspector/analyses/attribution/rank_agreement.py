"""How much the methods agree: Kendall τ-b and Spearman ρ (scipy) and top-k overlap between every pair of
methods over the content tokens (special tokens and a masked LM's [MASK] excluded), with the 95 % interval of
τ between two random rankings of that length — agreement inside it is what chance alone gives.

Over a corpus (:class:`CorpusAgreement`): the mean τ of every pair over texts with a percentile-bootstrap
interval that resamples texts (:func:`bootstrap_mean_interval`). Prefer τ to ρ for short texts: it counts
concordant pairs and is not dominated by one large rank difference.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

RANDOM_TAU_SAMPLES = 2000
NORMAL_TAU_FROM = 100


def ranking_agreement(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """Kendall τ-b and Spearman ρ between two score vectors (scipy; NaN if either is constant)."""
    tau = stats.kendalltau(a, b).statistic
    rho = stats.spearmanr(a, b).statistic
    return float(tau), float(rho)


def top_k_overlap(a: np.ndarray, b: np.ndarray, k: int) -> float:
    """|top-k(a) ∩ top-k(b)| / k (ties broken by position)."""
    k = max(1, min(k, len(a)))
    top = lambda x: set(np.argsort(-x, kind="stable")[:k].tolist())  # noqa: E731
    return len(top(a) & top(b)) / k


def random_tau_interval(n: int, samples: int = RANDOM_TAU_SAMPLES, seed: int = 0) -> tuple[float, float]:
    """The central 95 % of Kendall τ between two independent random rankings of ``n`` items (expected 0):
    agreement inside this band is what chance alone gives. Monte Carlo over ``samples`` random permutations,
    τ = 1 − 4·(discordant pairs)/(n(n − 1)) (no ties), counted for all samples at once."""
    if n < 2:
        return float("nan"), float("nan")
    if n > NORMAL_TAU_FROM:
        # Long rankings: τ under independence is normal with variance 2(2n + 5) / (9n(n − 1)) to within the
        # Monte Carlo error, and the simulation would cost O(samples · n²).
        half = 1.959964 * math.sqrt(2 * (2 * n + 5) / (9 * n * (n - 1)))
        return -half, half
    rng = np.random.default_rng(seed)
    perms = rng.permuted(np.tile(np.arange(n), (samples, 1)), axis=1)  # (samples, n)
    upper = np.triu(np.ones((n, n), dtype=bool), k=1)  # pairs i < j
    chunk = max(1, 2**24 // (n * n))  # at most ~16M pair comparisons in memory at once
    discordant = np.concatenate([((block[:, :, None] > block[:, None, :]) & upper).sum(axis=(1, 2))
                                 for block in np.array_split(perms, range(chunk, samples, chunk))])
    taus = 1.0 - 4.0 * discordant / (n * (n - 1))
    low, high = np.percentile(taus, [2.5, 97.5])
    return float(low), float(high)


@dataclass(frozen=True)
class Agreement:
    """Pairwise agreement of the methods' rankings over the content tokens.

    methods: m names. kendall, spearman, top_k: (m, m) float64, symmetric, diagonal 1 (NaN where a method is
    constant). k: the top-k size. random_tau: (low, high) 95 % band of τ between random rankings.
    head_tau: (layers, heads) float64 — τ(that head's attention from the query, occlusion), or None."""

    methods: tuple[str, ...]
    kendall: np.ndarray
    spearman: np.ndarray
    top_k: np.ndarray
    k: int
    random_tau: tuple[float, float]
    head_tau: np.ndarray | None = None

    def __post_init__(self) -> None:
        m = len(self.methods)
        for name in ("kendall", "spearman", "top_k"):
            matrix = getattr(self, name)
            if matrix.shape != (m, m):
                raise ValueError(f"Agreement.{name} has shape {matrix.shape}, expected {(m, m)}")
            if not np.allclose(matrix, matrix.T, equal_nan=True):
                raise ValueError(f"Agreement.{name} must be symmetric")
        if self.head_tau is not None and self.head_tau.ndim != 2:
            raise ValueError(f"Agreement.head_tau must be (layers, heads), got shape {self.head_tau.shape}")


def agreement(scores: dict[str, np.ndarray], content: np.ndarray, k: int = 5, seed: int = 0,
              head_tau: np.ndarray | None = None) -> Agreement:
    """Kendall τ, Spearman ρ and top-k overlap between every pair of ``scores`` (each (n,)) over the
    positions where ``content`` (n,) is True; ``head_tau`` (:func:`head_tau_grid`) travels along."""
    methods = tuple(scores)
    m = len(methods)
    kendall, spearman, top = (np.eye(m) for _ in range(3))
    for i in range(m):
        for j in range(i + 1, m):
            a, b = scores[methods[i]][content], scores[methods[j]][content]
            tau, rho = ranking_agreement(a, b)
            kendall[i, j] = kendall[j, i] = tau
            spearman[i, j] = spearman[j, i] = rho
            top[i, j] = top[j, i] = top_k_overlap(a, b, k)
    return Agreement(methods=methods, kendall=kendall, spearman=spearman, top_k=top, k=min(k, int(content.sum())),
                     random_tau=random_tau_interval(int(content.sum()), seed=seed), head_tau=head_tau)


def head_tau_grid(rows: np.ndarray, reference: np.ndarray, content: np.ndarray) -> np.ndarray:
    """Kendall τ between each head's attention row and a reference ranking (the page uses occlusion), over the
    content tokens. rows: (layers, heads, n) weights from one query; reference: (n,). Returns (layers, heads)."""
    wanted = reference[content]
    return np.array([[stats.kendalltau(head_row[content], wanted).statistic for head_row in layer_rows]
                     for layer_rows in rows], dtype=float)


# ---------------------------------------------------------------------------------------------- corpus

@dataclass(frozen=True)
class CorpusAgreement:
    """Kendall τ between methods over several texts. methods: m names; per_text: (texts, m, m);
    mean, low, high: (m, m) — the mean over texts and its 95 % bootstrap interval (resampling texts)."""

    methods: tuple[str, ...]
    per_text: np.ndarray
    mean: np.ndarray
    low: np.ndarray
    high: np.ndarray
    resamples: int

    def __post_init__(self) -> None:
        m = len(self.methods)
        if self.per_text.shape[1:] != (m, m) or any(a.shape != (m, m) for a in (self.mean, self.low, self.high)):
            raise ValueError("CorpusAgreement matrices must be (m, m) per text")


def bootstrap_mean_interval(samples: np.ndarray, resamples: int = 2000, seed: int = 0,
                            confidence: float = 0.95) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean over axis 0 and its percentile-bootstrap interval (resampling rows with replacement; NaN rows are
    left out of each mean)."""
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(samples), size=(resamples, len(samples)))
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-NaN pair (a constant method) stays NaN
        means = np.nanmean(samples[picks], axis=1)
        tail = 100 * (1 - confidence) / 2
        low, high = np.nanpercentile(means, [tail, 100 - tail], axis=0)
        return np.nanmean(samples, axis=0), low, high


def corpus_kendall(methods: tuple[str, ...], per_text: Sequence[np.ndarray], resamples: int = 2000) -> CorpusAgreement:
    """:class:`CorpusAgreement` from each text's (m, m) Kendall matrix
    (:func:`inspector.analyses.attribution.corpus_agreement`
    computes those with the model)."""
    stacked = np.stack(per_text)
    mean, low, high = bootstrap_mean_interval(stacked, resamples)
    return CorpusAgreement(methods=methods, per_text=stacked, mean=mean, low=low, high=high, resamples=resamples)
