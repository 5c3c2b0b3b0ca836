"""Pure analyses over captures.

Head entropy (Clark et al. 2019, "What Does BERT Look At?"): the mean over queries of each row's entropy
−Σ_j α_ij log α_ij. Use the raw value (nats) to compare heads of one model on one input; use the normalised
value — each row's entropy divided by log(number of keys that row could see) — to compare across lengths,
across causal and bidirectional models, and between early and late rows of a causal model, where row i sees
only i + 1 keys and its raw entropy is capped at log(i + 1). Rows that see a single key have no choice to
make and are left out of the normalised mean.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from inspector.capture import Capture


@dataclass(frozen=True)
class HeadEntropy:
    """raw: (layers, heads) float32, nats — mean row entropy. normalized: (layers, heads) float32 in [0, 1] —
    mean of entropy / log(visible keys) over rows that see at least two keys (NaN if none do).
    layer_mean: (layers,) float32 — raw entropy averaged over the layer's heads."""

    raw: np.ndarray
    normalized: np.ndarray
    layer_mean: np.ndarray

    def __post_init__(self) -> None:
        if self.raw.shape != self.normalized.shape or self.layer_mean.shape != self.raw.shape[:1]:
            raise ValueError(f"inconsistent shapes: raw {self.raw.shape}, normalized {self.normalized.shape}, "
                             f"layer_mean {self.layer_mean.shape}")


def normalized_row_entropy(entropy: np.ndarray, visible_keys: np.ndarray) -> np.ndarray:
    """entropy (layers, heads, q_len) / log(visible_keys (layers, q_len)); NaN where a row sees < 2 keys."""
    log_keys = np.log(visible_keys.astype(np.float64))[:, None, :]  # (layers, 1, q_len)
    with np.errstate(divide="ignore", invalid="ignore"):
        normalized = np.where(log_keys > 0, entropy / np.where(log_keys > 0, log_keys, 1.0), np.nan)
    return normalized.astype(np.float32)


def head_entropy(capture: Capture) -> HeadEntropy:
    """Per-head entropy of ``capture``: raw mean over queries, normalised mean, and per-layer mean."""
    raw = capture.entropy.mean(axis=-1).astype(np.float32)
    normalized_rows = normalized_row_entropy(capture.entropy, capture.visible_keys)
    counted = np.isfinite(normalized_rows).sum(axis=-1)
    sums = np.nansum(normalized_rows, axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        normalized = np.where(counted > 0, sums / np.maximum(counted, 1), np.nan).astype(np.float32)
    return HeadEntropy(raw=raw, normalized=normalized, layer_mean=raw.mean(axis=-1).astype(np.float32))
