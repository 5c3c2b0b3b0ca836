"""Two seed points that had no experiment (issue 44, item 11): lesson 18, a head dimension that is too small hurts
(§5.2), and lesson 19, the sinusoidal formula applied live beside learned and rotary positions (§3.3).

Lesson 18 has two parts. A seeded simulation of the low-rank bottleneck (Bhojanapalli et al. 2020, "Low-Rank
Bottleneck in Multi-head Attention Models"): the scores of a head are S = QKᵀ with Q, K of n × d_k, so rank(S) ≤ d_k;
for random dense target patterns over n keys (Dirichlet rows, whose log-probabilities are full rank) we fit Q and K by
gradient descent for each d_k and report the best mean KL(target ‖ softmax(QKᵀ)) reached. Its limits, stated on the
page: the targets are random, harder than the patterns a trained head learns, and the optimiser's best is an upper
bound on the true minimum. Then the chosen head on the reader's text: its scores cut to their r strongest directions
(the best rank-r approximation, Eckart–Young) and the KL of the resulting weights from the real ones, for each r up
to d_k — how many of its d_k dimensions the head's pattern on this text uses. Cutting a trained head is not training
a smaller one: a head trained with d_k = r might do better.

Lesson 19: cosine similarity between the position codes of positions p and p + Δ, against the offset Δ, for the
sinusoidal formula of Vaswani et al. (2017) at the model's width, the model's own learned position table when it has
one (BERT's ``position_embeddings``, GPT-2's ``wpe``), and RoPE (Su et al. 2021): a fixed vector q rotated to p and to
p + Δ, with the model's own rotary frequencies when it has them, else base 10000 at its head size. For each Δ the mean
over p and the spread (standard deviation over p): the formulas' similarity depends on Δ alone (spread at rounding
level), a learned table's does not (it was free to learn any table).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
import torch

from inspector.analyses.lessons.common import Answer, _check_shapes, _f
from inspector.analyses.lessons.decoder import rope_frequencies
from inspector.analyses.lessons.encoder import DefinitionLesson
from inspector.core.loading import LoadedModel

# Lesson 18's simulation: keys (= queries) per pattern, the d_k swept, the optimiser's budget, the seed.
BOTTLENECK_KEYS = 32
BOTTLENECK_DIMS: tuple[int, ...] = (1, 2, 4, 8, 16, 32)
BOTTLENECK_STEPS = 400
BOTTLENECK_SEED = 0
# KL (nats, mean over rows) below which a rank-r cut of the head's scores reproduces its weights (the answer names r).
KEEPS_PATTERN_BELOW = 0.05
# Lesson 19: offsets Δ = 0 … MAX_OFFSET, over positions p = 0 … POSITIONS − 1 − Δ; RoPE's base when the model has none.
MAX_OFFSET = 48
POSITIONS = 128
ROPE_BASE = 10000.0
POSITION_SEED = 0
# A spread over p below this is rounding: the similarity depends on the offset alone.
RELATIVE_ONLY_BELOW = 1e-6
# Where lesson 19's rotary frequencies come from → the catalogue key that says so.
_ROPE_SOURCE_KEYS = {"model": "lesson19.rope_source.model", "formula": "lesson19.rope_source.formula"}


@dataclass(frozen=True)
class HeadDimLesson:
    """Lesson 18. Simulation: dims (D,) the d_k fitted, simulated_kl (D,) the best mean KL(target ‖ softmax(QKᵀ)) in
    nats over ``keys`` random Dirichlet(1) rows, after ``steps`` Adam steps, seed ``seed``. The chosen head: ranks
    (R,) = 1 … min(d_k, n), head_kl (R,) mean KL(A ‖ softmax(S_r)) of its weights A from those of its scores cut to
    rank r (visible keys only), d_k its size, tokens the text's length, needed the smallest r with head_kl below
    :data:`KEEPS_PATTERN_BELOW` (None: none below d_k reaches it)."""

    dims: np.ndarray
    simulated_kl: np.ndarray
    keys: int
    steps: int
    seed: int
    layer: int
    head: int
    d_k: int
    tokens: int
    ranks: np.ndarray
    head_kl: np.ndarray
    needed: int | None
    answer: Answer

    def __post_init__(self) -> None:
        _check_shapes(self, {"simulated_kl": (len(self.dims),), "head_kl": (len(self.ranks),)})


def _mean_kl(target: torch.Tensor, log_fitted: torch.Tensor) -> torch.Tensor:
    """Mean over rows of KL(target ‖ fitted), both (n, n), the fitted given as log-probabilities."""
    return (torch.special.xlogy(target, target) - target * log_fitted).sum(dim=-1).mean()


@functools.cache
def bottleneck_sweep(dims: tuple[int, ...] = BOTTLENECK_DIMS, *, keys: int = BOTTLENECK_KEYS,
                     steps: int = BOTTLENECK_STEPS, seed: int = BOTTLENECK_SEED) -> np.ndarray:
    """(len(dims),) the best mean KL(target ‖ softmax(QKᵀ)) Adam reaches with Q, K of ``keys`` × d_k, for one seeded
    target of ``keys`` Dirichlet(1) rows over ``keys`` keys (the same target for every d_k). Seeded and the same for
    every model and text: computed once per process (a second or two on a CPU)."""
    generator = torch.Generator().manual_seed(seed)
    gamma = -torch.log(torch.rand(keys, keys, generator=generator, dtype=torch.float64))  # Gamma(1) draws
    target = gamma / gamma.sum(dim=-1, keepdim=True)  # (keys, keys) Dirichlet(1) rows
    best = []
    for d_k in dims:
        q = (torch.randn(keys, d_k, generator=generator, dtype=torch.float64) * 0.1).requires_grad_()
        k = (torch.randn(keys, d_k, generator=generator, dtype=torch.float64) * 0.1).requires_grad_()
        optimiser = torch.optim.Adam([q, k], lr=0.05)
        lowest = math.inf
        for _ in range(steps):
            optimiser.zero_grad()
            loss = _mean_kl(target, torch.log_softmax(q @ k.T, dim=-1))
            lowest = min(lowest, float(loss.detach()))
            loss.backward()
            optimiser.step()
        best.append(lowest)
    return np.asarray(best)


def rank_cut_kl(definition: DefinitionLesson) -> np.ndarray:
    """(min(d_k, n),) mean KL(A ‖ softmax(S_r)) over the rows of the head's weights A, S_r the best rank-r
    approximation of its scores S (visible keys only), r = 1 … min(d_k, n)."""
    scores, visible = np.asarray(definition.scores, np.float64), np.asarray(definition.visible, bool)
    u, sigma, vt = np.linalg.svd(scores)
    weights = np.asarray(definition.weights, np.float64)
    kls = []
    for r in range(1, min(definition.d_k, len(scores)) + 1):
        cut = np.where(visible, (u[:, :r] * sigma[:r]) @ vt[:r], -np.inf)  # (n, n)
        log_cut = cut - np.logaddexp.reduce(cut, axis=-1, keepdims=True)
        kept = weights > 0  # a masked key (weight 0, cut −inf) adds nothing: 0·∞ is never formed
        terms = np.where(kept, weights * (np.log(np.where(kept, weights, 1.0)) - np.where(kept, log_cut, 0.0)), 0.0)
        kls.append(float(terms.sum(axis=-1).mean()))
    return np.asarray(kls)


def head_dim_lesson(definition: DefinitionLesson, simulated: np.ndarray | None = None) -> HeadDimLesson:
    """Lesson 18 on the chosen head (``definition``: lesson 1's result); ``simulated``: :func:`bottleneck_sweep`'s
    result when the caller keeps one (it is the same for every model and text)."""
    simulated = bottleneck_sweep() if simulated is None else np.asarray(simulated)
    head_kl = rank_cut_kl(definition)
    ranks = np.arange(1, len(head_kl) + 1)
    below = np.flatnonzero(head_kl < KEEPS_PATTERN_BELOW)
    needed = int(ranks[below[0]]) if below.size else None
    dims = np.asarray(BOTTLENECK_DIMS)
    values = {"keys": str(BOTTLENECK_KEYS), "low_d": str(dims[0]), "low_kl": _f(simulated[0]),
              "mid_d": str(dims[len(dims) // 2]), "mid_kl": _f(simulated[len(dims) // 2]), "high_d": str(dims[-1]),
              "high_kl": _f(simulated[-1]), "layer": str(definition.layer), "head": str(definition.head),
              "d_k": str(definition.d_k), "n": str(len(definition.tokens)), "threshold": _f(KEEPS_PATTERN_BELOW),
              "one_kl": _f(head_kl[0]), "needed": str(needed)}
    return HeadDimLesson(dims=dims, simulated_kl=simulated, keys=BOTTLENECK_KEYS, steps=BOTTLENECK_STEPS,
                         seed=BOTTLENECK_SEED, layer=definition.layer, head=definition.head, d_k=definition.d_k,
                         tokens=len(definition.tokens), ranks=ranks, head_kl=head_kl, needed=needed,
                         answer=Answer("lesson18.answer" if needed is not None else "lesson18.answer.all", values))


# -------------------------------------------------------------------------------------------------- lesson 19


@dataclass(frozen=True)
class PositionCodesLesson:
    """Lesson 19. offsets: (Δ,) 0 … :data:`MAX_OFFSET`. For each code — ``sinusoidal`` (the formula at width
    ``d_model``), ``learned`` (the model's table; None when it has none) and ``rope`` (a fixed vector rotated, at
    ``rope_dim`` with ``rope_source`` "model" or "formula") — the mean over p of cos(code(p), code(p + Δ)) and its
    spread (standard deviation over p), each (Δ,)."""

    offsets: np.ndarray
    d_model: int
    rope_dim: int
    rope_source: str
    sinusoidal: np.ndarray
    sinusoidal_spread: np.ndarray
    learned: np.ndarray | None
    learned_spread: np.ndarray | None
    rope: np.ndarray
    rope_spread: np.ndarray
    answer: Answer

    def __post_init__(self) -> None:
        shape = (len(self.offsets),)
        _check_shapes(self, {name: shape for name in ("sinusoidal", "sinusoidal_spread", "rope", "rope_spread")})
        if self.learned is not None:
            _check_shapes(self, {"learned": shape, "learned_spread": shape})


def sinusoidal_codes(positions: int, width: int) -> np.ndarray:
    """(positions, width) the sinusoidal position encoding of Vaswani et al. (2017): PE(p, 2i) = sin(p / 10000^(2i/d)),
    PE(p, 2i + 1) = cos(p / 10000^(2i/d))."""
    p = np.arange(positions, dtype=np.float64)[:, None]  # (positions, 1)
    frequencies = 10000.0 ** (-np.arange(0, width, 2, dtype=np.float64) / width)  # (ceil(width / 2),)
    codes = np.zeros((positions, width))
    codes[:, 0::2] = np.sin(p * frequencies)
    codes[:, 1::2] = np.cos(p * frequencies)[:, : width // 2]
    return codes


def rotated_codes(positions: int, inverse_frequencies: np.ndarray, seed: int = POSITION_SEED) -> np.ndarray:
    """(positions, 2 · len(inverse_frequencies)) one fixed random vector rotated by RoPE to each position: pair i of
    dimensions (first half, second half, as Llama's ``rotate_half``) turned by the angle p · θ_i."""
    half = len(inverse_frequencies)
    vector = np.random.default_rng(seed).standard_normal(2 * half)
    angles = np.arange(positions, dtype=np.float64)[:, None] * inverse_frequencies[None, :]  # (positions, half)
    first, second = vector[:half], vector[half:]
    return np.concatenate([first * np.cos(angles) - second * np.sin(angles),
                           second * np.cos(angles) + first * np.sin(angles)], axis=1)


def similarity_by_offset(codes: np.ndarray, max_offset: int) -> tuple[np.ndarray, np.ndarray]:
    """(mean, spread) over p of cos(codes[p], codes[p + Δ]) for Δ = 0 … ``max_offset``, each (max_offset + 1,);
    ``codes``: (positions, width) with positions > max_offset."""
    unit = codes / np.linalg.norm(codes, axis=1, keepdims=True)
    means, spreads = [], []
    for offset in range(max_offset + 1):
        cosines = (unit[: len(unit) - offset] * unit[offset:]).sum(axis=1)
        means.append(cosines.mean())
        spreads.append(cosines.std())
    return np.asarray(means), np.asarray(spreads)


def learned_verdict(spread: float) -> str:
    """The catalogue key of what lesson 19 says of a learned position table whose cosine varies by ``spread`` over
    absolute positions (mean over offsets): not a function of the offset alone at or above
    :data:`RELATIVE_ONLY_BELOW`, like the formulas below it."""
    return "lesson19.learned.relative" if spread < RELATIVE_ONLY_BELOW else "lesson19.learned.not_relative"


def learned_table(loaded: LoadedModel) -> np.ndarray | None:
    """(positions, d_model) the model's learned absolute position table (BERT's ``position_embeddings``, GPT-2's
    ``wpe``), or None when it has none."""
    for name, module in loaded.model.named_modules():
        if name.endswith(("position_embeddings", "wpe")) and isinstance(module, torch.nn.Embedding):
            return module.weight.detach().double().cpu().numpy()
    return None


def position_codes_lesson(loaded: LoadedModel) -> PositionCodesLesson:
    """Lesson 19 on ``loaded``: the sinusoidal formula at its width, its learned table if any, RoPE at its head size
    (its own frequencies when it is a rotary model)."""
    info = loaded.info
    table = learned_table(loaded)
    positions = POSITIONS if table is None else min(POSITIONS, len(table))
    max_offset = min(MAX_OFFSET, positions - 1)
    offsets = np.arange(max_offset + 1)
    sinusoidal, sinusoidal_spread = similarity_by_offset(sinusoidal_codes(positions, info.hidden_size), max_offset)
    own = rope_frequencies(loaded)
    if own:
        inverse, source = next(iter(own.values())), "model"
    else:
        inverse = ROPE_BASE ** (-np.arange(0, info.head_dim, 2, dtype=np.float64) / info.head_dim)
        source = "formula"
    rope, rope_spread = similarity_by_offset(rotated_codes(positions, inverse), max_offset)
    learned = learned_spread = None
    if table is not None:
        learned, learned_spread = similarity_by_offset(table[:positions], max_offset)
    values = {"d_model": str(info.hidden_size), "rope_dim": str(2 * len(inverse)), "offset": "1",
              "far": str(max_offset), "sin_near": _f(sinusoidal[1]), "sin_far": _f(sinusoidal[-1]),
              "rope_near": _f(rope[1]), "rope_far": _f(rope[-1]),
              "formula_spread": f"{max(sinusoidal_spread.max(), rope_spread.max()):.0e}",
              "threshold": f"{RELATIVE_ONLY_BELOW:.0e}", "model": info.name}
    terms = {"rope_source": _ROPE_SOURCE_KEYS[source]}
    if learned is not None:
        spread = float(learned_spread[1:].mean())
        values |= {"learned_near": _f(learned[1]), "learned_far": _f(learned[-1]), "learned_spread": _f(spread, 3)}
        terms["learned_verdict"] = learned_verdict(spread)
    key = "lesson19.answer" if learned is not None else "lesson19.answer.no_table"
    return PositionCodesLesson(offsets=offsets, d_model=info.hidden_size, rope_dim=2 * len(inverse),
                               rope_source=source, sinusoidal=sinusoidal, sinusoidal_spread=sinusoidal_spread,
                               learned=learned, learned_spread=learned_spread, rope=rope, rope_spread=rope_spread,
                               answer=Answer(key, values, terms))
