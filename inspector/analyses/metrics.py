"""Pure analyses over captures and attention weights.

Head entropy (Clark et al. 2019, "What Does BERT Look At?"): the mean over queries of each row's entropy
−Σ_j α_ij log α_ij. Use the raw value (nats) to compare heads of one model on one input; use the normalised
value — each row's entropy divided by log(number of keys that row could see) — to compare across lengths,
across causal and bidirectional models, and between early and late rows of a causal model, where row i sees
only i + 1 keys and its raw entropy is capped at log(i + 1). Rows that see a single key have no choice to
make and are left out of the normalised mean.

The head statistics of the Heads page (issue #5) work on one text's exact weights ``(layers, heads, q_len,
k_len)`` (no padding) and each answer a different question:

- :func:`token_category_mass` — where the budget goes (Clark et al. 2019): [CLS], [SEP], punctuation, the
  token itself, the previous and the next token. Prefer it to entropy when asking *what* a sharp head looks at.
- :func:`sink_scores` — attention sinks (Gu et al. 2024, "When Attention Sink Emerges"): key k's score is the
  mean weight the queries that can see it put on it, Σ_i A_ik / (queries that see k) (T − k under a causal mask),
  a sink when > 0.3. The first key's score is the first-token mass (Xiao et al. 2023).
- :func:`mean_attention_distance` — how far a head looks, Σ_j α_ij |i − j| averaged over queries: positional
  heads (previous/next token) score ≈ 1, sink heads score by where the sink sits.
- :func:`norm_weighted_attention` — Kobayashi et al. 2020, "Attention is Not Only a Weight": ‖α_ij f(x_j)‖ with
  f(x) = (x W_V + b_V) W_O, the size of what key j actually sends. Prefer it to raw weights when a head attends
  heavily to a sink: a sink with a small ‖f(x_j)‖ moves little, and its norm-weighted share is small.
- :func:`induction_score` — induction heads (Olsson et al. 2022, "In-context learning and induction heads"): a
  repeated token's attention on the token that followed its earlier occurrence (… A B … A → B). Prefer it to the
  category masses when asking whether a head copies from context; it says nothing on a text that repeats no token.
- :class:`HealthThresholds` and :func:`health_flags` — "collapsed" (normalised entropy below 0.1: nearly
  one-hot rows) and "diffuse" (above 0.9: nearly uniform rows), thresholds shown wherever they are used.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from inspector.base.errors import InvalidRequestError
from inspector.base.i18n import Notice
from inspector.core.capture import Capture
from kernels.reference import mean_normalized_entropy


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


def head_entropy(capture: Capture) -> HeadEntropy:
    """Per-head entropy of ``capture``: raw mean over queries, normalised mean, and per-layer mean."""
    return head_entropy_from_rows(capture.entropy, capture.visible_keys)


def head_entropy_from_rows(entropy: np.ndarray, visible_keys: np.ndarray) -> HeadEntropy:
    """:func:`head_entropy` from row entropies ``(layers, heads, q_len)`` (nats) and ``visible_keys (layers, q_len)``
    — for callers that ran the forward themselves (the attention function's ``entropy`` statistic)."""
    entropy = np.asarray(entropy, dtype=np.float32)
    raw = entropy.mean(axis=-1).astype(np.float32)
    normalized = mean_normalized_entropy(entropy, np.asarray(visible_keys)[:, None, :]).astype(np.float32)
    return HeadEntropy(raw=raw, normalized=normalized, layer_mean=raw.mean(axis=-1).astype(np.float32))


# ---------------------------------------------------------------------------------------------- head statistics

# Where a query's attention budget goes (Clark et al. 2019, section 3): the columns of token_category_mass.
TOKEN_CATEGORIES: tuple[str, ...] = ("[CLS]", "[SEP]", "punctuation", "self", "previous", "next")
# Word-piece markers stripped before asking whether a token is punctuation (WordPiece, GPT-2 BPE, SentencePiece).
_PIECE_MARKERS = ("##", "Ġ", "▁", "Ċ")


@dataclass(frozen=True)
class HealthThresholds:
    """Where a head counts as unhealthy (user-set, so a bad value is an :class:`InvalidRequestError`).

    collapsed: normalised entropy below this (rows nearly one-hot); diffuse: above this (rows nearly uniform — the
    head routes nothing in particular); sink: a key whose sink score (Gu et al. 2024) exceeds this is a sink."""

    collapsed: float = 0.1
    diffuse: float = 0.9
    sink: float = 0.3

    def __post_init__(self) -> None:
        if not 0.0 <= self.collapsed < self.diffuse <= 1.0:
            raise InvalidRequestError(Notice("error.health_thresholds", collapsed=f"{self.collapsed:g}",
                                             diffuse=f"{self.diffuse:g}"))
        if not 0.0 < self.sink <= 1.0:
            raise InvalidRequestError(Notice("error.sink_threshold", sink=f"{self.sink:g}"))


@dataclass(frozen=True)
class HealthFlags:
    """collapsed, diffuse, sink: (layers, heads) bool — which heads cross which :class:`HealthThresholds`."""

    collapsed: np.ndarray
    diffuse: np.ndarray
    sink: np.ndarray

    def __post_init__(self) -> None:
        if not self.collapsed.shape == self.diffuse.shape == self.sink.shape:
            raise ValueError("HealthFlags arrays must share one (layers, heads) shape")


def health_flags(entropy_normalized: np.ndarray, max_sink_score: np.ndarray,
                 thresholds: HealthThresholds = HealthThresholds()) -> HealthFlags:
    """Flag heads from their normalised entropy and largest sink score (both (layers, heads)). NaN entropies
    (heads whose rows all see one key) are never flagged."""
    with np.errstate(invalid="ignore"):
        return HealthFlags(collapsed=np.asarray(entropy_normalized < thresholds.collapsed),
                           diffuse=np.asarray(entropy_normalized > thresholds.diffuse),
                           sink=np.asarray(max_sink_score > thresholds.sink))


# How many heads of each kind a plain-words report names before summarising the rest ("… and N more"): the Heads
# page's health report and the census report alike.
REPORT_HEADS_PER_KIND = 6


def flagged_heads(mask: np.ndarray, order: np.ndarray, per_kind: int | None = REPORT_HEADS_PER_KIND,
                  ) -> tuple[list[tuple[int, int]], int]:
    """The flagged heads a report names: (layer, head) of every True of the (layers, heads) ``mask``, ascending
    by ``order`` (layers, heads; ties keep layer-major order), at most ``per_kind`` of them (None: all) — and how
    many more were flagged but not named."""
    found = sorted(zip(*np.nonzero(mask)), key=lambda lh: order[lh])
    shown = len(found) if per_kind is None else per_kind
    return [(int(layer), int(head)) for layer, head in found[:shown]], max(0, len(found) - shown)


def is_punctuation(token: str) -> bool:
    """True for a token made only of punctuation once word-piece markers are stripped ("," "." "Ġ!" "##?")."""
    for marker in _PIECE_MARKERS:
        token = token.replace(marker, "")
    token = token.strip()
    return bool(token) and all(unicodedata.category(ch).startswith("P") for ch in token)


def token_category_masks(tokens: Sequence[str], special: np.ndarray) -> np.ndarray:
    """(3, k_len) bool key masks for [CLS], [SEP] and punctuation: "[CLS]" is a special token at position 0
    (<s>, BOS too), "[SEP]" every other special token (</s>, EOS, padding markers), punctuation as
    :func:`is_punctuation` says. A model whose tokenizer adds no special tokens has empty first two rows."""
    special = np.asarray(special, dtype=bool)
    first = np.zeros(len(tokens), dtype=bool)
    first[:1] = special[:1]
    punctuation = np.array([is_punctuation(t) for t in tokens], dtype=bool) & ~special
    return np.stack([first, special & ~first, punctuation])


def token_category_mass(weights: np.ndarray, tokens: Sequence[str], special: np.ndarray) -> np.ndarray:
    """Share of the attention budget on each of :data:`TOKEN_CATEGORIES`, mean over queries (Clark et al. 2019).

    weights: (layers, heads, q_len, q_len) — rows that sum to 1, or any non-negative matrix whose rows are
    normalised here (e.g. :func:`norm_weighted_attention`). Returns (layers, heads, 6) in [0, 1]. "previous" /
    "next" average over the rows that have such a neighbour."""
    weights = np.asarray(weights, dtype=np.float64)
    totals = weights.sum(axis=-1, keepdims=True)
    rows = np.divide(weights, totals, out=np.zeros_like(weights), where=totals > 0)
    masks = token_category_masks(tokens, special).astype(np.float64)  # (3, k_len)
    by_key = np.einsum("lhqk,ck->lhc", rows, masks) / rows.shape[2]
    n = rows.shape[2]
    diagonal = np.diagonal(rows, axis1=2, axis2=3)  # (layers, heads, n)
    previous = np.diagonal(rows, offset=-1, axis1=2, axis2=3)  # row i, key i − 1
    following = np.diagonal(rows, offset=1, axis1=2, axis2=3)  # row i, key i + 1
    neighbour = lambda d: d.mean(axis=-1) if n > 1 else np.zeros(rows.shape[:2])  # noqa: E731
    positional = np.stack([diagonal.mean(axis=-1), neighbour(previous), neighbour(following)], axis=-1)
    return np.concatenate([by_key, positional], axis=-1).astype(np.float32)


def sink_scores(weights: np.ndarray, visible: np.ndarray) -> np.ndarray:
    """Gu et al. (2024)'s sink score of every key: Σ_i A_ik / (number of queries that can see key k).

    weights: (layers, heads, q_len, k_len); visible: (layers, q_len, k_len) bool — which keys each query may see
    (T − k queries see key k under a causal mask, all T in an encoder). Returns (layers, heads, k_len) in [0, 1]:
    the mean weight key k receives from the queries that could give it any. A key scoring above 0.3 is a sink."""
    visible = np.asarray(visible, dtype=bool)
    seen_by = visible.sum(axis=1)[:, None, :]  # (layers, 1, k_len)
    received = np.asarray(weights, dtype=np.float64).sum(axis=2)  # (layers, heads, k_len)
    scores = np.divide(received, seen_by, out=np.zeros_like(received), where=seen_by > 0)
    return np.clip(scores, 0.0, 1.0).astype(np.float32)


def mean_attention_distance(weights: np.ndarray) -> np.ndarray:
    """(layers, heads): Σ_j α_ij |i − j| averaged over queries, in tokens — how far each head looks."""
    n_q, n_k = weights.shape[-2:]
    offset = n_k - n_q  # queries are the last positions (no cache here: 0)
    distance = np.abs(np.arange(n_q)[:, None] + offset - np.arange(n_k)[None, :]).astype(np.float64)
    return (np.asarray(weights, dtype=np.float64) * distance).sum(axis=-1).mean(axis=-1).astype(np.float32)


def norm_weighted_attention(weights: np.ndarray, value_norms: np.ndarray) -> np.ndarray:
    """Kobayashi et al. (2020): ‖α_ij f(x_j)‖ = α_ij ‖f_h(x_j)‖, f_h(x) = (x W_V + b_V) W_O^h.

    weights: (layers, heads, q_len, k_len); value_norms: (layers, heads, k_len) — ‖f_h(x_j)‖, the length of
    what head h would write if it attended only to key j. Returns (layers, heads, q_len, k_len) float32 (rows do
    not sum to 1; :func:`token_category_mass` normalises them)."""
    return (np.asarray(weights, dtype=np.float32) * np.asarray(value_norms, dtype=np.float32)[:, :, None, :])


def induction_score(weights: np.ndarray, ids: np.ndarray, special: np.ndarray) -> np.ndarray:
    """Induction score of every head: how much of a repeated token's attention lands on the token that followed
    its earlier occurrence (Olsson et al. 2022, "In-context learning and induction heads": in … A B … A, the
    second A attends to B — their "prefix matching" score, which they measure on repeated random tokens).

    weights: (layers, heads, n, n) — rows that sum to 1. ids: (n,) token ids. special: (n,) bool — special tokens
    ([CLS], [SEP], BOS …) never count as a repeat. A query row i qualifies when its token occurred earlier at some
    j with j + 1 < i (ids[j] == ids[i], neither special); its mass is the row's total weight on the set
    {j + 1 : such j}. Adjacent duplicates ("A A") do not count: their j + 1 is the query itself, which a head
    attending to itself would also hit. Returns (layers, heads) float32 in [0, 1], the mean of that mass over
    the qualifying rows — NaN for every head when no row qualifies (the text repeats no token).

    Prefer it to :func:`token_category_mass` ("previous", "self") when asking whether a head copies from
    context: a previous-token head scores near 0 here unless the repeat is adjacent. Works in an encoder too, but
    there a head may see the answer directly; the score is most meaningful for causal models, where it is the
    mechanism behind in-context copying. A text without repeats can say nothing about induction — give one that
    repeats a phrase."""
    weights = np.asarray(weights, dtype=np.float64)
    ids = np.asarray(ids).reshape(-1)
    special = np.asarray(special, dtype=bool).reshape(-1)
    n = ids.shape[0]
    if weights.ndim != 4 or weights.shape[-2:] != (n, n) or special.shape != (n,):
        raise ValueError(f"induction_score needs weights (layers, heads, n, n), ids (n,) and special (n,); got "
                         f"{weights.shape}, {ids.shape} and {special.shape}")
    position = np.arange(n)
    # earlier[i, j]: query i repeats the token at j, and the token after j lies strictly before i.
    earlier = ((ids[:, None] == ids[None, :]) & (position[None, :] + 1 < position[:, None])
               & ~special[:, None] & ~special[None, :])  # (n, n) over (query, earlier occurrence)
    targets = np.zeros((n, n), dtype=bool)  # (query, key): key = j + 1 for some earlier occurrence j
    targets[:, 1:] = earlier[:, :-1]
    rows = earlier.any(axis=1)  # (n,) the queries that repeat a token
    if not rows.any():
        return np.full(weights.shape[:2], np.nan, dtype=np.float32)
    mass = np.einsum("lhqk,qk->lhq", weights[:, :, rows], targets[rows].astype(np.float64))  # (layers, heads, R)
    return np.clip(mass.mean(axis=-1), 0.0, 1.0).astype(np.float32)
