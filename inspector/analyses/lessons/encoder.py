"""Lessons 1–6 on the sidebar's model and text (:mod:`inspector.analyses.lessons` lists them all): the definition
with real shapes, why Q and K, position, why √d_k, multi-head, entropy per layer."""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from scipy import stats as scipy_stats

from inspector.analyses.lessons.common import (
    ASYMMETRY_FAR,
    COLLAPSED_BELOW,
    CONTROL_SEED,
    DIFFUSE_ABOVE,
    POSITIONAL_HEAD_MIN_WEIGHT,
    SCALE_NAMES,
    SPECIAL_HEAD_MIN_WEIGHT,
    SWEEP_DIMS,
    SWEEP_KEYS,
    SWEEP_QUERIES,
    SWEEP_SEED,
    Answer,
    RankTrend,
    _check_shapes,
    _f,
    _head_tensors,
    _p,
    _pct,
    _record,
    _Run,
    _visible,
    asymmetry_index,
    asymmetry_term,
    attention_input,
    diagonal_share,
    effective_rank,
    position_kind,
    rank_trend,
    saturation_term,
    seeing_rows,
    softmax_jacobian_norm,
    uniformity_term,
)
from inspector.analyses.metrics import HeadEntropy, head_entropy_from_rows
from inspector.base.errors import InvalidRequestError
from inspector.base.tokens import readable_tokens
from inspector.core.forward import forward
from inspector.core.loading import LoadedModel
from inspector.core.outputs import head_writes, model_output, output_change
from kernels.hf import ScoreScale, TieKeysToQueries
from kernels.reference import mean_normalized_entropy, row_entropy

# -------------------------------------------------------------------------------------------------- lesson 1


@dataclass(frozen=True)
class DefinitionLesson:
    """Lesson 1 for one head. tokens: q_len strings. x: (q_len, d_model) — what the attention reads (LN(x) for
    pre-LN models, see ``pre_norm``). special: (q_len,) bool — special tokens ([CLS], [SEP] …). query, key, value,
    output: (q_len, d_k) float64 — as the layer received them (after RoPE for rotary models). scores: (q_len, q_len)
    — S = QKᵀ·scale before masking; visible: (q_len, q_len) bool; weights: (q_len, q_len) — A = softmax(S) over the
    visible keys; row_sums: (q_len,)."""

    layer: int
    head: int
    tokens: tuple[str, ...]
    special: np.ndarray
    d_model: int
    d_k: int
    num_heads: int
    num_kv_heads: int
    scale: float
    position: str
    pre_norm: bool
    x: np.ndarray
    query: np.ndarray
    key: np.ndarray
    value: np.ndarray
    scores: np.ndarray
    visible: np.ndarray
    weights: np.ndarray
    output: np.ndarray
    row_sums: np.ndarray
    answer: Answer

    def __post_init__(self) -> None:
        n, d = len(self.tokens), self.d_k
        _check_shapes(self, {"special": (n,), "x": (n, self.d_model), "query": (n, d), "key": (n, d), "value": (n, d),
                             "output": (n, d), "scores": (n, n), "visible": (n, n), "weights": (n, n),
                             "row_sums": (n,)})


def sharpest_pair(weights: np.ndarray, visible: np.ndarray | None = None) -> tuple[int, int]:
    """(query, key) of a head's sharpest row and the key that row spends most on — the pair lesson 1's answer is
    about, so its heatmap labels them first (issue 31). ``weights``: (q_len, k_len); ``visible``: (q_len, k_len)
    bool — when given, only the rows that see two or more keys compete (:func:`seeing_rows`)."""
    weights = np.asarray(weights, dtype=float)
    peaks = weights.max(axis=-1)
    if visible is not None:
        peaks = np.where(seeing_rows(visible), peaks, -np.inf)
    best = int(peaks.argmax())
    return best, int(weights[best].argmax())


def definition_lesson(run: _Run) -> DefinitionLesson:
    info = run.loaded.info
    record = _record(run)
    tensors = _head_tensors(run)
    hidden = run.result.outputs.hidden_states[run.layer][0]
    x, pre_norm = attention_input(run.loaded, hidden, run.layer)
    weights = record.weights[0, run.head].double().cpu().numpy()
    row_sums = weights.sum(axis=-1)
    scores = tensors["query"] @ tensors["key"].T * record.scale
    visible = _visible(run)
    best, top = sharpest_pair(weights, visible)
    n = len(run.tokens)
    shown = readable_tokens(run.tokens)  # "␣the", not byte-level BPE's raw "Ġthe" (issue 44 walkthrough, SmolLM2)
    values = {"n": str(n), "d_model": str(info.hidden_size), "d_k": str(info.head_dim), "heads": str(info.num_heads),
              "kv_heads": str(info.num_kv_heads), "scale": _f(record.scale, 4), "layer": str(run.layer),
              "head": str(run.head), "row_error": f"{float(np.abs(row_sums - 1).max()):.1e}",
              "query": shown[best], "key": shown[top], "weight": _f(weights[best, top])}
    return DefinitionLesson(
        layer=run.layer, head=run.head, tokens=run.tokens, special=run.special, d_model=info.hidden_size,
        d_k=info.head_dim,
        num_heads=info.num_heads, num_kv_heads=info.num_kv_heads, scale=float(record.scale),
        position=position_kind(run.loaded), pre_norm=pre_norm, x=x.double().cpu().numpy(), query=tensors["query"],
        key=tensors["key"], value=tensors["value"], scores=scores, visible=visible, weights=weights,
        output=tensors["output"], row_sums=row_sums,
        answer=Answer("lesson1.answer.prenorm" if pre_norm else "lesson1.answer", values, terms={
            "sharpest": "lesson1.sharpest" if seeing_rows(visible).all() else "lesson1.sharpest_seeing"}))


# -------------------------------------------------------------------------------------------------- lesson 2


@dataclass(frozen=True)
class WhyQKLesson:
    """Lesson 2. xx_diagonal_share: share of rows of XXᵀ whose maximum is the diagonal. qk_diagonal_share,
    asymmetry: (heads,) — the same share for each head's QKᵀ, and ‖S − Sᵀ‖_F/‖S‖_F. weights, tied_weights:
    (q_len, q_len) — the head's A before and after W_K := W_Q through the attention function.
    weight_change: mean over rows of the total-variation distance ½Σ|A − A_tied|. output_change: the model's
    output change (``output_measure``)."""

    layer: int
    head: int
    xx_diagonal_share: float
    qk_diagonal_share: np.ndarray
    asymmetry: np.ndarray
    weights: np.ndarray
    tied_weights: np.ndarray
    tied_diagonal_share: float
    entropy: float
    tied_entropy: float
    weight_change: float
    output_change: float
    output_measure: str
    answer: Answer

    def __post_init__(self) -> None:
        heads, n = len(self.asymmetry), len(self.weights)
        _check_shapes(self, {"qk_diagonal_share": (heads,), "weights": (n, n), "tied_weights": (n, n)})
        if (self.asymmetry < -1e-12).any():
            raise ValueError("WhyQKLesson.asymmetry must be ≥ 0")


def why_qk_lesson(run: _Run, definition: DefinitionLesson) -> WhyQKLesson:
    record = _record(run)
    visible = definition.visible
    x = definition.x
    xx_share = diagonal_share(x @ x.T, visible)
    query = record.tensors["query"][0].double().cpu().numpy()  # (heads, q_len, d_k)
    key = record.tensors["key"][0].double().cpu().numpy()  # (kv_heads, k_len, d_k)
    group = query.shape[0] // key.shape[0]
    shares = np.array([diagonal_share(query[h] @ key[h // group].T, visible) for h in range(len(query))])
    asymmetry = np.array([asymmetry_index(query[h], key[h // group]) for h in range(len(query))])
    tied = forward(run.loaded, run.inputs, backend=run.backend,
                   interventions=[TieKeysToQueries(run.layer, (run.head,))], weights_layers=frozenset({run.layer}))
    base_out = model_output(run.loaded, run.result, run.inputs)
    change = output_change(base_out, model_output(run.loaded, tied, run.inputs))
    tied_weights = tied.records[run.layer].weights[0, run.head].double().cpu().numpy()
    tied_share = diagonal_share(tied_weights, visible)
    rows = visible.sum(axis=-1) >= 2
    weight_change = float(0.5 * np.abs(definition.weights - tied_weights).sum(axis=-1)[rows].mean()) if rows.any() \
        else 0.0
    entropy = float(row_entropy(definition.weights).mean())
    tied_entropy = float(row_entropy(tied_weights).mean())
    values = {"xx_share": _pct(xx_share), "qk_share": _pct(shares[run.head]),
              "qk_mean": _pct(float(np.nanmean(shares))),
              "asym": _f(asymmetry[run.head]), "asym_min": _f(asymmetry.min()), "asym_max": _f(asymmetry.max()),
              "head": str(run.head), "layer": str(run.layer), "tied_share": _pct(tied_share),
              "tv": _f(weight_change), "entropy": _f(entropy), "tied_entropy": _f(tied_entropy),
              "change": f"{change:.2e}", "asym_far": _f(ASYMMETRY_FAR)}
    return WhyQKLesson(layer=run.layer, head=run.head, xx_diagonal_share=xx_share, qk_diagonal_share=shares,
                       asymmetry=asymmetry, weights=definition.weights, tied_weights=tied_weights,
                       tied_diagonal_share=tied_share, entropy=entropy, tied_entropy=tied_entropy,
                       weight_change=weight_change, output_change=change, output_measure=base_out.kind,
                       answer=Answer("lesson2.answer", values, {"measure": f"measure.{base_out.kind}",
                                                                "symmetry": asymmetry_term(asymmetry[run.head])}))


# -------------------------------------------------------------------------------------------------- lesson 3


def mean_weight_by_offset(weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``weights`` (heads, n, n) → offsets (2n − 1,) = i − j from −(n−1) to n−1 and (heads, 2n − 1) mean of
    A_ij over the pairs at that offset (0 for offsets a causal row cannot see)."""
    n = weights.shape[-1]
    offsets = np.arange(-(n - 1), n)
    by_offset = np.stack([np.diagonal(weights, offset=-int(delta), axis1=-2, axis2=-1).mean(axis=-1)
                          for delta in offsets], axis=-1)
    return offsets, by_offset


def best_offsets(weights: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``weights`` (heads, n, n) → (offsets (2n − 1,), by_offset (heads, 2n − 1), each head's best offset index
    (heads,), its mean weight (heads,)). An offset near ±n has a handful of pairs (i − j = n − 1: one), so a sink on
    the first token would look "positional" there; only offsets at least half the rows have are candidates."""
    offsets, by_offset = mean_weight_by_offset(weights)
    n = weights.shape[-1]
    eligible = np.abs(offsets) <= n - (n + 1) // 2
    candidates = np.where(eligible, by_offset, -np.inf)
    return offsets, by_offset, candidates.argmax(axis=-1), candidates.max(axis=-1)


def has_repeated_span(ids: Sequence[int], special: Sequence[bool]) -> bool:
    """Whether two positions start the same pair of non-special tokens (a repeated bigram): the text an induction
    head (Olsson et al. 2022) can follow, whose offset then mirrors the repeat, not a position rule."""
    pairs = [(a, b) for a, b, sa, sb in zip(ids, ids[1:], special, special[1:]) if not (sa or sb)]
    return len(pairs) != len(set(pairs))


def control_inputs(loaded: LoadedModel, inputs: dict[str, torch.Tensor], special: np.ndarray,
                   seed: int = CONTROL_SEED) -> dict[str, torch.Tensor]:
    """The text's inputs with every non-special token replaced by a distinct random token (seeded, none special):
    the same length and the same special tokens in the same places, no repeat anywhere — TransformerLens's
    head-detector control. A head that keeps its offset here follows the position, not the content."""
    ids = inputs["input_ids"][0].cpu()
    slots = np.flatnonzero(~np.asarray(special, dtype=bool))
    specials = set(loaded.codec.all_special_ids())
    generator = torch.Generator().manual_seed(seed)
    pool = torch.randperm(loaded.info.vocab_size, generator=generator)
    pool = pool[~torch.isin(pool, torch.tensor(sorted(specials), dtype=pool.dtype))][:len(slots)]
    if len(pool) < len(slots):
        raise InvalidRequestError(f"the vocabulary of {loaded.info.vocab_size} tokens has too few ordinary tokens "
                                  f"for a {len(slots)}-token control text; shorten the text")
    control = ids.clone()
    control[torch.as_tensor(slots, dtype=torch.long)] = pool
    return {**inputs, "input_ids": control[None].to(inputs["input_ids"].device)}


@dataclass(frozen=True)
class PositionLesson:
    """Lesson 3 for one layer. kind: ``absolute`` | ``rope`` | ``relative`` | ``unknown``. offsets: (2n − 1,)
    i − j. by_offset: (heads, 2n − 1) mean weight at each offset on the text. best_offset, best_weight: (heads,) —
    each head's most-weighted offset among |i − j| ≤ n − ⌈n/2⌉ (offsets at least half the rows have).
    control_weight: (heads,) the mean weight at that same offset on the control text (:func:`control_inputs`:
    the same length, random tokens, no repeats); NaN where no control ran (no head passed on the text).
    positional_heads: heads whose best_weight and control_weight both exceed POSITIONAL_HEAD_MIN_WEIGHT.
    repeat_heads: heads past the threshold on the text but not on the control — following content (an induction
    head on a repeated text, ``repeated``), not position."""

    layer: int
    kind: str
    offsets: np.ndarray
    by_offset: np.ndarray
    best_offset: np.ndarray
    best_weight: np.ndarray
    positional_heads: tuple[int, ...]
    answer: Answer
    control_weight: np.ndarray | None = None
    repeat_heads: tuple[int, ...] = ()
    repeated: bool = False
    control_answer: Answer | None = None

    def __post_init__(self) -> None:
        heads = len(self.best_offset)
        _check_shapes(self, {"by_offset": (heads, len(self.offsets)), "best_weight": (heads,)})
        if self.control_weight is not None:
            _check_shapes(self, {"control_weight": (heads,)})
        if set(self.positional_heads) & set(self.repeat_heads):
            raise ValueError("PositionLesson: a head cannot be both positional and content-following")


def position_lesson(run: _Run) -> PositionLesson:
    weights = _record(run).weights[0].double().cpu().numpy()  # (heads, n, n)
    offsets, by_offset, best, best_weight = best_offsets(weights)
    passed = np.flatnonzero(best_weight > POSITIONAL_HEAD_MIN_WEIGHT)
    ids = run.inputs["input_ids"][0].tolist()
    repeated = has_repeated_span(ids, run.special.tolist())
    control_weight = None
    if len(passed):  # one more forward, only when some head looks positional on the text
        control = forward(run.loaded, control_inputs(run.loaded, run.inputs, run.special), backend=run.backend,
                          weights_layers=frozenset({run.layer}), stop_after=run.layer, stats=("lse",))
        _, control_by_offset = mean_weight_by_offset(control.records[run.layer].weights[0].double().cpu().numpy())
        control_weight = control_by_offset[np.arange(len(best)), best]
    positional = tuple(int(h) for h in passed if control_weight[h] > POSITIONAL_HEAD_MIN_WEIGHT)
    following = tuple(int(h) for h in passed if int(h) not in positional)
    kind = position_kind(run.loaded)
    listed = tuple(("lesson3.head_offset", {"head": str(h), "offset": f"{int(offsets[best[h]]):+d}",
                                            "weight": _f(best_weight[h])}) for h in positional)
    strongest = int(best_weight.argmax())
    values = {"layer": str(run.layer), "count": str(len(positional)),
              "threshold": _f(POSITIONAL_HEAD_MIN_WEIGHT), "top_head": str(strongest),
              "top_offset": f"{int(offsets[best[strongest]]):+d}", "top_weight": _f(best_weight[strongest])}
    key = f"lesson3.answer.{kind}"
    if not positional:  # a sentence that says "no head", not "0 head(s) … on one offset: —"
        key += ".none"
        values = {name: value for name, value in values.items() if name != "count"}
    control_answer = None
    if len(passed):
        shown = tuple(("lesson3.head_offset_control", {"head": str(h), "offset": f"{int(offsets[best[h]]):+d}",
                                                       "weight": _f(best_weight[h]), "control": _f(control_weight[h])})
                      for h in passed)
        control_key = ("lesson3.control.holds" if not following else
                       "lesson3.control.induction" if repeated else "lesson3.control.content")
        control_answer = Answer(control_key, {"threshold": _f(POSITIONAL_HEAD_MIN_WEIGHT)},
                                lists={"following": tuple(map(str, following))}, phrases={"heads": shown})
    return PositionLesson(layer=run.layer, kind=kind, offsets=offsets, by_offset=by_offset,
                          best_offset=offsets[best], best_weight=best_weight, positional_heads=positional,
                          answer=Answer(key, values, phrases={} if not positional else {"heads": listed}),
                          control_weight=control_weight, repeat_heads=following,
                          repeated=repeated, control_answer=control_answer)


# -------------------------------------------------------------------------------------------------- lesson 4


@dataclass(frozen=True)
class ScalingSweep:
    """Lesson 4a, a seeded simulation with unit-variance Gaussian q and k entries. dims: (D,). score_variance:
    (D,) variance of q·k unscaled; slope: the log-log slope of variance vs d (≈ 1: variance ≈ d).
    entropy, max_weight, jacobian_norm: (3, D) for the scales of :data:`SCALE_NAMES` — mean over queries of the
    row entropy (nats, of ``keys`` keys), the largest weight, and ‖diag(p) − ppᵀ‖_F."""

    dims: np.ndarray
    keys: int
    queries: int
    seed: int
    score_variance: np.ndarray
    slope: float
    entropy: np.ndarray
    max_weight: np.ndarray
    jacobian_norm: np.ndarray
    answer: Answer

    def __post_init__(self) -> None:
        shape = (len(SCALE_NAMES), len(self.dims))
        _check_shapes(self, {"score_variance": (len(self.dims),), "entropy": shape, "max_weight": shape,
                             "jacobian_norm": shape})


def scaling_sweep(dims: Sequence[int] = SWEEP_DIMS, *, keys: int = SWEEP_KEYS, queries: int = SWEEP_QUERIES,
                  seed: int = SWEEP_SEED) -> ScalingSweep:
    if len(dims) < 2 or min(dims) < 1:
        raise InvalidRequestError(f"the sweep needs at least two positive dimensions; got {list(dims)}")
    generator = torch.Generator().manual_seed(seed)
    variance, entropy, max_weight, jacobian = [], [], [], []
    for d in dims:
        q = torch.randn(queries, d, generator=generator, dtype=torch.float64)
        k = torch.randn(keys, d, generator=generator, dtype=torch.float64)
        scores = q @ k.T  # (queries, keys)
        variance.append(float(scores.var()))
        per_scale = []
        for scale in (1.0, d ** -0.5, 1.0 / d):
            p = torch.softmax(scores * scale, dim=-1)
            per_scale.append((float(row_entropy(p).mean()), float(p.max(-1).values.mean()),
                              float(softmax_jacobian_norm(p).mean())))
        entropy.append([s[0] for s in per_scale])
        max_weight.append([s[1] for s in per_scale])
        jacobian.append([s[2] for s in per_scale])
    dims_array = np.asarray(dims, dtype=np.int64)
    variance_array = np.asarray(variance)
    slope = float(scipy_stats.linregress(np.log(dims_array), np.log(variance_array)).slope)
    entropy_a, max_a, jac_a = (np.asarray(a).T for a in (entropy, max_weight, jacobian))  # (3, D)
    n1, n3 = entropy_a[0, -1] / math.log(keys), entropy_a[2, -1] / math.log(keys)  # shares of the uniform entropy
    values = {"slope": _f(slope), "d_max": str(int(dims_array[-1])), "var_max": _f(variance_array[-1], 0),
              "h1": _f(entropy_a[0, -1]), "m1": _f(max_a[0, -1]), "j1": f"{jac_a[0, -1]:.1e}", "n1": _f(n1),
              "h2": _f(entropy_a[1, -1]), "m2": _f(max_a[1, -1]), "j2": f"{jac_a[1, -1]:.1e}", "n3": _f(n3),
              "h2_min": _f(entropy_a[1].min()), "h2_max": _f(entropy_a[1].max()), "keys": str(keys),
              "h3": _f(entropy_a[2, -1]), "m3": _f(max_a[2, -1]), "uniform": _f(math.log(keys)),
              "collapsed": _f(COLLAPSED_BELOW), "diffuse": _f(DIFFUSE_ABOVE)}
    return ScalingSweep(dims=dims_array, keys=keys, queries=queries, seed=seed, score_variance=variance_array,
                        slope=slope, entropy=entropy_a, max_weight=max_a, jacobian_norm=jac_a,
                        answer=Answer("lesson4a.answer", values, {"saturation": saturation_term(n1),
                                                                  "uniformity": uniformity_term(n3)}))


@functools.lru_cache(maxsize=1)
def _default_sweep() -> ScalingSweep:
    """The default sweep is seeded and the same for every model and text: computed once per process."""
    return scaling_sweep()


@dataclass(frozen=True)
class RealScaling:
    """Lesson 4b: the chosen head with its scores scaled by 1, the model's own scale and 1/d_k, through the
    attention function (:class:`kernels.hf.ScoreScale`). scales, entropy (nats), normalized_entropy, max_weight,
    output_change: (3,), in the order of :data:`SCALE_NAMES` (the middle one is the model's own scale)."""

    layer: int
    head: int
    d_k: int
    scales: np.ndarray
    entropy: np.ndarray
    normalized_entropy: np.ndarray
    max_weight: np.ndarray
    output_change: np.ndarray
    output_measure: str
    answer: Answer

    def __post_init__(self) -> None:
        _check_shapes(self, {name: (len(SCALE_NAMES),) for name in
                             ("scales", "entropy", "normalized_entropy", "max_weight", "output_change")})


def real_scaling_lesson(run: _Run, definition: DefinitionLesson) -> RealScaling:
    d_k = run.loaded.info.head_dim
    own = definition.scale
    scales = np.array([1.0, own, 1.0 / d_k])
    base_out = model_output(run.loaded, run.result, run.inputs)
    visible_counts = definition.visible.sum(axis=-1)
    entropy, normalized, max_weight, change = [], [], [], []
    for scale in scales:
        if scale == own:
            weights, out = definition.weights, base_out
        else:
            result = forward(run.loaded, run.inputs, backend=run.backend, weights_layers=frozenset({run.layer}),
                             interventions=[ScoreScale(run.layer, (run.head,), float(scale))])
            weights = result.records[run.layer].weights[0, run.head].double().cpu().numpy()
            out = model_output(run.loaded, result, run.inputs)
        entropy_of_rows = row_entropy(weights)
        entropy.append(float(entropy_of_rows.mean()))
        normalized.append(float(mean_normalized_entropy(entropy_of_rows, visible_counts)))
        max_weight.append(float(weights.max(axis=-1).mean()))
        change.append(output_change(base_out, out))
    values = {"layer": str(run.layer), "head": str(run.head), "d_k": str(d_k), "own": _f(own, 4),
              "h1": _f(normalized[0]), "m1": _f(max_weight[0]), "c1": f"{change[0]:.2e}",
              "h2": _f(normalized[1]), "m2": _f(max_weight[1]),
              "h3": _f(normalized[2]), "m3": _f(max_weight[2]), "c3": f"{change[2]:.2e}", "diffuse": _f(DIFFUSE_ABOVE)}
    return RealScaling(layer=run.layer, head=run.head, d_k=d_k, scales=scales, entropy=np.array(entropy),
                       normalized_entropy=np.array(normalized), max_weight=np.array(max_weight),
                       output_change=np.array(change), output_measure=base_out.kind,
                       answer=Answer("lesson4b.answer", values, {"measure": f"measure.{base_out.kind}",
                                                                 "uniformity": uniformity_term(normalized[2])}))


# -------------------------------------------------------------------------------------------------- lesson 5


@dataclass(frozen=True)
class MultiHeadLesson:
    """Lesson 5 for one layer. reshape: the steps of d_model → heads × d_k with the real tensors' shapes.
    scores_effective_rank, weights_effective_rank: (heads,) effective rank of S = QKᵀ (≤ rank(S) ≤ d_k) and of
    A (not bounded by d_k). scores_rank: (heads,) numerical rank of S. contribution_norm: (heads,) mean over
    tokens of ‖o_h W_O^h‖₂; contribution_share: (heads,) its share of the layer's sum. special_mass: (heads,)
    mean weight on special tokens. role: per head ``offset``, ``special`` or ``content``."""

    layer: int
    d_model: int
    num_heads: int
    d_k: int
    reshape: tuple[tuple[str, tuple[int, ...]], ...]
    scores_effective_rank: np.ndarray
    scores_rank: np.ndarray
    weights_effective_rank: np.ndarray
    contribution_norm: np.ndarray
    contribution_share: np.ndarray
    special_mass: np.ndarray
    role: tuple[str, ...]
    answer: Answer

    def __post_init__(self) -> None:
        _check_shapes(self, {name: (self.num_heads,) for name in
                             ("scores_effective_rank", "scores_rank", "weights_effective_rank", "contribution_norm",
                              "contribution_share", "special_mass")})
        if len(self.role) != self.num_heads:
            raise ValueError(f"MultiHeadLesson.role has {len(self.role)} entries for {self.num_heads} heads")


def multi_head_lesson(run: _Run, position: PositionLesson) -> MultiHeadLesson:
    info = run.loaded.info
    record = _record(run)
    query = record.tensors["query"][0].double().cpu()  # (heads, q_len, d_k)
    key = record.tensors["key"][0].double().cpu()  # (kv_heads, q_len, d_k)
    group = query.shape[0] // key.shape[0]
    key = key.repeat_interleave(group, dim=0)
    scores = query @ key.transpose(-1, -2)  # (heads, q_len, q_len)
    weights = record.weights[0].double().cpu().numpy()
    n = len(run.tokens)
    scores_np = scores.numpy()
    erank_s = np.array([effective_rank(s) for s in scores_np])
    rank_s = np.array([int(torch.linalg.matrix_rank(s)) for s in scores])
    erank_a = np.array([effective_rank(a) for a in weights])
    per_head = head_writes(run.loaded, run.layer, record.tensors["output"][0])  # (heads, q_len, hidden)
    norms = per_head.norm(dim=-1).mean(dim=-1).double().cpu().numpy()
    share = norms / norms.sum() if norms.sum() > 0 else np.zeros_like(norms)
    special_mass = (weights[:, :, run.special].sum(axis=-1).mean(axis=-1) if run.special.any()
                    else np.zeros(len(weights)))
    roles = tuple("offset" if position.best_weight[h] > POSITIONAL_HEAD_MIN_WEIGHT else
                  "special" if special_mass[h] > SPECIAL_HEAD_MIN_WEIGHT else "content" for h in range(len(weights)))
    reshape = (("X", (n, info.hidden_size)), ("X W_Q", (n, info.num_heads * info.head_dim)),
               ("split", (n, info.num_heads, info.head_dim)), ("Q", tuple(record.tensors["query"].shape[1:])),
               ("K, V", tuple(record.tensors["key"].shape[1:])), ("S = QKᵀ, A", (info.num_heads, n, n)),
               ("O = AV", tuple(record.tensors["output"].shape[1:])),
               ("concat · W_O", (n, info.hidden_size)))
    top = int(norms.argmax())
    values = {"layer": str(run.layer), "heads": str(info.num_heads), "d_k": str(info.head_dim),
              "d_model": str(info.hidden_size), "n": str(n), "erank_min": _f(erank_s.min()),
              "erank_max": _f(erank_s.max()), "rank_max": str(int(rank_s.max())),
              "bound": str(min(n, info.head_dim)), "erank_a_max": _f(erank_a.max()),
              "top_head": str(top), "top_share": _pct(share[top]), "offset": str(roles.count("offset")),
              "special": str(roles.count("special")), "content": str(roles.count("content")),
              "offset_min": _f(POSITIONAL_HEAD_MIN_WEIGHT), "special_min": _f(SPECIAL_HEAD_MIN_WEIGHT)}
    return MultiHeadLesson(layer=run.layer, d_model=info.hidden_size, num_heads=info.num_heads, d_k=info.head_dim,
                           reshape=reshape, scores_effective_rank=erank_s, scores_rank=rank_s,
                           weights_effective_rank=erank_a, contribution_norm=norms, contribution_share=share,
                           special_mass=special_mass, role=roles, answer=Answer("lesson5.answer", values))


# -------------------------------------------------------------------------------------------------- lesson 6


@dataclass(frozen=True)
class EntropyLesson:
    """Lesson 6. entropy: per-head entropy (raw (layers, heads) nats, normalized (layers, heads) in [0, 1]).
    layer_normalized: (layers,) mean normalised entropy of each layer. spearman: ρ of layer_normalized vs depth
    (negative = sharper with depth). trend: the one-sided test of "sharper with depth" (:func:`depth_trend`): the
    answer says it holds only when the test shows it. collapsed, diffuse: (layer, head) pairs past the alarm
    thresholds."""

    entropy: HeadEntropy
    layer_normalized: np.ndarray
    spearman: float
    shallow_mean: float
    deep_mean: float
    trend: RankTrend
    collapsed: tuple[tuple[int, int], ...]
    diffuse: tuple[tuple[int, int], ...]
    answer: Answer

    def __post_init__(self) -> None:
        _check_shapes(self, {"layer_normalized": (self.entropy.raw.shape[0],)})


# Lesson 6's answer for each verdict of depth_trend: the claim shown, its opposite shown, or neither.
DEPTH_ANSWERS = {"shown": "lesson6.answer.holds", "opposite": "lesson6.answer.fails",
                 "not_shown": "lesson6.answer.not_shown"}


def depth_trend(layer_normalized: np.ndarray) -> RankTrend:
    """“Shallow broad, deep sharp” as a test: Spearman's ρ between depth and each layer's mean normalised entropy,
    one-sided for “falls with depth” (:func:`~inspector.analyses.lessons.common.rank_trend`, α = VERDICT_ALPHA). A
    larger shallow mean alone is not evidence: with 18 layers a ρ of −0.06 is what a random order gives."""
    return rank_trend(np.arange(len(layer_normalized)), layer_normalized, claimed="less")


def entropy_lesson(run: _Run) -> EntropyLesson:
    records = run.result.records
    entropy = torch.stack([r.stats["entropy"][0] for r in records]).float().cpu().numpy()  # (layers, heads, q_len)
    visible = torch.stack([r.visible_keys[0] for r in records]).cpu().numpy()  # (layers, q_len)
    head_entropy = head_entropy_from_rows(entropy, visible)
    normalized = head_entropy.normalized
    layer_normalized = np.nanmean(normalized, axis=-1)
    layers = len(layer_normalized)
    trend = depth_trend(layer_normalized)
    rho = trend.rho
    half = max(1, layers // 2)
    shallow, deep = float(np.nanmean(layer_normalized[:half])), float(np.nanmean(layer_normalized[-half:]))
    collapsed = tuple((int(layer), int(h)) for layer, h in zip(*np.nonzero(normalized < COLLAPSED_BELOW)))
    diffuse = tuple((int(layer), int(h)) for layer, h in zip(*np.nonzero(normalized > DIFFUSE_ABOVE)))
    values = {"shallow": _f(shallow), "deep": _f(deep), "rho": _f(rho), "p": _p(trend.p),
              "p_opposite": _p(trend.p_opposite), "alpha": f"{trend.alpha:g}", "collapsed": str(len(collapsed)),
              "diffuse": str(len(diffuse)), "low": _f(COLLAPSED_BELOW), "high": _f(DIFFUSE_ABOVE),
              "heads": str(normalized.size), "layers": str(layers)}
    # Joined in the reader's language ("L0H0、L0H3" in Chinese; issue 44 walkthrough saw "L0H0, L0H3, L0H7" there).
    named_heads = {"collapsed_list": tuple(f"L{layer}H{h}" for layer, h in collapsed[:8]),
                   "diffuse_list": tuple(f"L{layer}H{h}" for layer, h in diffuse[:8])}
    return EntropyLesson(entropy=head_entropy, layer_normalized=layer_normalized, spearman=rho, shallow_mean=shallow,
                         deep_mean=deep, trend=trend, collapsed=collapsed, diffuse=diffuse,
                         answer=Answer(DEPTH_ANSWERS[trend.verdict], values, lists=named_heads))


