"""Lessons: the questions about attention people fumble, each answered by a measurement on the loaded model and
the user's text, with an answer paragraph composed from the measured numbers (in every language of
:mod:`inspector.base.i18n`) — not canned prose.

One function per lesson, each returning a frozen dataclass of numbers (NumPy arrays, shapes in the docstrings)
and an :class:`Answer` (a catalogue key plus the formatted numbers it cites):

1. :func:`definition_lesson` — X, Q, K, V, S, A, O of one head with their real sizes; rows of A sum to 1.
2. :func:`why_qk_lesson` — softmax(XXᵀ)X "looks at itself"; separate W_Q, W_K make S asymmetric
   (‖S − Sᵀ‖_F / ‖S‖_F); tying W_K := W_Q through the attention function (:class:`kernels.hf.TieKeysToQueries`).
3. :func:`position_lesson` — absolute position embeddings (added to X) or RoPE (rotates Q and K only); mean
   weight by relative offset i − j per head; positional heads (> :data:`POSITIONAL_HEAD_MIN_WEIGHT` on one
   offset; Clark et al. 2019 found previous/next-token heads in BERT this way).
4. :func:`scaling_sweep` (simulation, seeded) and :func:`real_scaling_lesson` — why 1/√d_k (Vaswani et al. 2017,
   §3.2.1: for unit-variance entries, q·k has variance d_k) and why not 1/d_k; the softmax Jacobian
   J = diag(p) − ppᵀ shows the gradient vanishing when the softmax saturates.
5. :func:`multi_head_lesson` — the reshape d_model → heads × d_k; effective rank (Roy & Vetterli 2007:
   exp of the entropy of the normalised singular values) of S = QKᵀ, whose rank is at most d_k (A = softmax(S)
   is not bounded that way — the softmax is not linear); each head's contribution norm after W_O (Kobayashi et
   al. 2020); what each head specialises in (an offset, special tokens, or content).
6. :func:`entropy_lesson` — per-layer normalised entropy (Clark et al. 2019), the "shallow broad, deep sharp"
   check (Spearman ρ of layer mean vs depth, scipy) and the collapsed / diffuse alarms.
7. :func:`complexity_lesson` — time and memory of materialised attention vs the flash path (Dao et al. 2022) over
   n, measured live on the current device.
8. Quiz: :func:`attention_target` (where a head looks from a query) and :func:`leave_one_out` (which token
   matters most for the output: delete it and measure the change, Jain & Wallace 2019).

:func:`all_lessons` runs them for the page and the CLI. Everything goes through :mod:`inspector.core.outputs`
(interventions in the one attention function); nothing is attached to the shared model.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
from scipy import stats as scipy_stats
from scipy.special import entr

from inspector.analyses.attribution import batch_size_for
from inspector.analyses.metrics import HeadEntropy, HealthThresholds, head_entropy_from_rows
from inspector.base.display import Displayable
from inspector.base.errors import InvalidRequestError
from inspector.base.i18n import device_label, t
from inspector.base.jsonable import to_jsonable
from inspector.base.progress import Progress, no_progress
from inspector.core.forward import ForwardResult, encode_text, forward
from inspector.core.loading import LoadedModel, model_label
from inspector.core.outputs import head_writes, model_output, output_change
from kernels.hf import TENSOR_NAMES, ScoreScale, TieKeysToQueries
from kernels.reference import blocked_attention, default_block_size, reference_attention, visible_keys_mask

# A head whose mean weight on one relative offset exceeds this is called positional (it mostly looks a fixed
# distance away, whatever the content); also the threshold for a head that specialises in special tokens.
POSITIONAL_HEAD_MIN_WEIGHT = 0.5
SPECIAL_HEAD_MIN_WEIGHT = 0.5
# Entropy alarms on the normalised mean entropy (entropy / log visible keys, 0 … 1) of a head: below
# COLLAPSED_BELOW it sends almost all weight to one key; above DIFFUSE_ABOVE it is nearly uniform. The same
# defaults as the Heads page's health report (one definition: metrics.HealthThresholds).
COLLAPSED_BELOW = HealthThresholds().collapsed
DIFFUSE_ABOVE = HealthThresholds().diffuse
# The synthetic sweep of lesson 4a.
SWEEP_DIMS: tuple[int, ...] = (8, 16, 32, 64, 128, 256, 512, 1024)
SWEEP_KEYS = 64
SWEEP_QUERIES = 256
SWEEP_SEED = 0
SCALE_NAMES: tuple[str, ...] = ("1", "1/√d", "1/d")
# Lesson 7: small lengths by default so the measurement takes seconds on a laptop CPU.
DEFAULT_LENGTHS: tuple[int, ...] = (128, 256, 512, 1024)
# Each length is timed this many times after a warm-up; the lesson reports the median and a bootstrap interval for
# the fitted exponent over the runs (issue 30: one run's n^2.64, 2.52, 2.70 on reruns taught noise, not O(n²)).
TIMING_REPEATS = 7
EXPONENT_RESAMPLES = 400
# Above this relative spread of a length's runs ((q75 − q25) / median) the lesson says the machine was too busy to
# trust the timings, whatever the fit says.
BUSY_SPREAD = 0.25
# Lesson 3's control text (random distinct tokens in place of the text's): its seed.
CONTROL_SEED = 0
# Answer placeholders whose value is a model's name (ModelInfo.name): shown through model_label.
MODEL_PLACEHOLDERS = ("model", "encoder", "decoder", "absolute")


@dataclass(frozen=True)
class Answer:
    """An answer paragraph: a catalogue key and the measured numbers it cites, already formatted as text."""

    key: str
    values: Mapping[str, str]
    # Placeholders whose value is itself a catalogue key (a term such as the output measure), translated too.
    terms: Mapping[str, str] = field(default_factory=dict)
    # Placeholders that list named values: (catalogue key of a name, its value as text) pairs, each written
    # "name: value" in ``lang`` (a full-width colon in Chinese) and joined with the language's list separator.
    named: Mapping[str, tuple[tuple[str, str], ...]] = field(default_factory=dict)
    # Placeholders that list numbers (layers 5, 11, 17), joined with the language's separator ("5、11、17" in
    # Chinese); an empty list reads "—".
    lists: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def text(self, lang: str = "en") -> str:
        # A placeholder that names a model shows the name a person reads in ``lang`` ("Gemma 3 270M (bundled)",
        # not its spec "bundled:gemma-3-270m"); the values keep the spec for exports.
        values = {name: model_label(value, lang) if name in MODEL_PLACEHOLDERS else value
                  for name, value in self.values.items()}
        listed = {name: t("lessons.list_separator", lang).join(
                      t("lessons.named_value", lang, name=t(key, lang), value=value) for key, value in pairs)
                  for name, pairs in self.named.items()}
        numbers = {name: t("lessons.number_separator", lang).join(items) or "—" for name, items in self.lists.items()}
        return t(self.key, lang, **values, **listed, **numbers,
                 **{name: t(key, lang) for name, key in self.terms.items()})


def _f(x: float, digits: int = 2) -> str:
    return "n/a" if not math.isfinite(float(x)) else f"{float(x):.{digits}f}"


def _pct(x: float) -> str:
    return "n/a" if not math.isfinite(float(x)) else f"{100 * float(x):.0f}%"


def _check_shapes(owner: object, expected: Mapping[str, tuple[int, ...]]) -> None:
    for name, shape in expected.items():
        actual = np.shape(getattr(owner, name))
        if actual != shape:
            raise ValueError(f"{type(owner).__name__}.{name} has shape {actual}, expected {shape}")


# ------------------------------------------------------------------------------------------------- one forward


@dataclass
class _Run:
    """The baseline forward the lessons share (not cached: it holds live tensors)."""

    loaded: LoadedModel
    inputs: dict
    tokens: tuple[str, ...]
    special: np.ndarray  # (q_len,) bool
    result: ForwardResult
    layer: int
    head: int
    backend: str


def _run(loaded: LoadedModel, text: str, layer: int, head: int, backend: str) -> _Run:
    layer, head = loaded.info.check_layer(layer), loaded.info.check_head(head)
    encoded = encode_text(loaded, text)
    result = forward(loaded, encoded.inputs, backend=backend, weights_layers=frozenset({layer}), keep=TENSOR_NAMES,
                     keep_layers=frozenset({layer}))
    return _Run(loaded, encoded.inputs, encoded.tokens, encoded.special, result, layer, head, backend)


def _record(run: _Run, layer: int | None = None):
    return run.result.records[run.layer if layer is None else layer]


def _head_tensors(run: _Run) -> dict[str, np.ndarray]:
    """The chosen head's q, k, v (q_len, d_k) and output (q_len, d_k), float64; k and v from its key/value head
    (grouped-query attention shares one among several query heads)."""
    record = _record(run)
    group = record.tensors["query"].shape[1] // record.tensors["key"].shape[1]
    pick = {"query": run.head, "key": run.head // group, "value": run.head // group, "output": run.head}
    return {name: record.tensors[name][0, index].double().cpu().numpy() for name, index in pick.items()}


def _visible(run: _Run) -> np.ndarray:
    """(q_len, k_len) bool: which keys each query of the chosen layer may see."""
    record = _record(run)
    n = len(run.tokens)
    return visible_keys_mask(n, n, causal=record.causal, window=record.window)[0, 0].numpy()


_PRE_NORMS = (".ln_1", ".input_layernorm")  # GPT-2, Llama/Mistral/Qwen2: the norm applied before attention


def attention_input(loaded: LoadedModel, hidden: torch.Tensor, layer: int) -> tuple[torch.Tensor, bool]:
    """What the attention of ``layer`` reads: for pre-LN models (GPT-2's ``ln_1``, Llama's ``input_layernorm``)
    LN(x) computed by calling the layer's own norm module (read-only, no hooks); for post-LN models (BERT,
    DistilBERT) the residual stream x itself. Returns ``(x (q_len, hidden), whether a norm was applied)``."""
    norms = [module for name, module in loaded.model.named_modules() if name.endswith(_PRE_NORMS)]
    if len(norms) == loaded.info.num_layers:
        with torch.inference_mode():
            return norms[layer](hidden), True
    return hidden, False


def position_kind(loaded: LoadedModel) -> str:
    """``rope`` (rotary: positions rotate Q and K only), ``absolute`` (a learned position embedding added to X),
    ``relative`` (BERT's relative-key variants) or ``unknown``, read from the config and the modules."""
    config = loaded.model.config
    if getattr(config, "rope_parameters", None) or getattr(config, "rope_theta", None) or \
            getattr(config, "rope_scaling", None):
        return "rope"
    kind = getattr(config, "position_embedding_type", "absolute")
    if kind and kind != "absolute":
        return "relative"
    names = [name for name, _ in loaded.model.named_modules()]
    if any(name.endswith(("position_embeddings", "wpe")) for name in names):
        return "absolute"
    return "unknown"


def _row_entropy(weights: np.ndarray) -> np.ndarray:
    """Entropy in nats of each row of ``weights`` (..., k_len), 0·log 0 = 0 (scipy's ``entr``)."""
    return entr(weights).sum(axis=-1)


def diagonal_share(scores: np.ndarray, visible: np.ndarray) -> float:
    """Share of rows whose largest visible score is on the diagonal ("the token looks at itself"), over the
    rows that can see at least two keys. ``scores``, ``visible``: (q_len, k_len), queries = keys."""
    masked = np.where(visible, scores, -np.inf)
    rows = visible.sum(axis=-1) >= 2
    if not rows.any():
        return float("nan")
    return float((masked.argmax(axis=-1) == np.arange(len(scores)))[rows].mean())


def asymmetry_index(query: np.ndarray, key: np.ndarray) -> float:
    """‖S − Sᵀ‖_F / ‖S‖_F for S = Q Kᵀ (``query``, ``key``: (n, d)): 0 for tied projections (K = Q, S
    symmetric), up to 2 for an antisymmetric S (S − Sᵀ = 2S)."""
    scores = np.asarray(query, np.float64) @ np.asarray(key, np.float64).T
    norm = np.linalg.norm(scores)
    return float(np.linalg.norm(scores - scores.T) / norm) if norm > 0 else 0.0


def effective_rank(matrix: np.ndarray) -> float:
    """Roy & Vetterli (2007): exp(H(σ / Σσ)) over the singular values σ — between 1 and the rank, and so never
    above it; it counts how many directions carry the matrix, weighting each by its singular value. Prefer it to
    the numerical rank (count of singular values above rounding) to compare heads: the numerical rank counts a
    direction that carries 0.1% of the matrix as fully as the largest one."""
    sigma = np.linalg.svd(np.asarray(matrix, np.float64), compute_uv=False)
    total = sigma.sum()
    if total <= 0:
        return 0.0
    p = sigma / total
    p = p[p > 0]
    return float(np.exp(-(p * np.log(p)).sum()))


def softmax_jacobian(p: torch.Tensor) -> torch.Tensor:
    """∂softmax(s)/∂s = diag(p) − p pᵀ for probabilities ``p`` (..., k) → (..., k, k). Its norm is 0 for a
    one-hot p (a saturated softmax passes no gradient back to the scores)."""
    return torch.diag_embed(p) - p[..., :, None] * p[..., None, :]


def softmax_jacobian_norm(p: torch.Tensor) -> torch.Tensor:
    """‖diag(p) − ppᵀ‖_F for probabilities ``p`` (..., k) → (...), without building the k × k matrix:
    ‖D‖² − 2⟨D, ppᵀ⟩ + ‖ppᵀ‖² = Σp² − 2Σp³ + (Σp²)²."""
    squares = p.pow(2).sum(dim=-1)
    return (squares - 2 * p.pow(3).sum(dim=-1) + squares.pow(2)).clamp_min(0).sqrt()


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


def sharpest_pair(weights: np.ndarray) -> tuple[int, int]:
    """(query, key) of a head's sharpest row and the key that row spends most on — the pair lesson 1's answer is
    about, so its heatmap labels them first (issue 31). ``weights``: (q_len, k_len)."""
    weights = np.asarray(weights, dtype=float)
    best = int(weights.max(axis=-1).argmax())
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
    best, top = sharpest_pair(weights)
    n = len(run.tokens)
    values = {"n": str(n), "d_model": str(info.hidden_size), "d_k": str(info.head_dim), "heads": str(info.num_heads),
              "kv_heads": str(info.num_kv_heads), "scale": _f(record.scale, 4), "layer": str(run.layer),
              "head": str(run.head), "row_error": f"{float(np.abs(row_sums - 1).max()):.1e}",
              "query": run.tokens[best], "key": run.tokens[top], "weight": _f(weights[best, top])}
    return DefinitionLesson(
        layer=run.layer, head=run.head, tokens=run.tokens, special=run.special, d_model=info.hidden_size,
        d_k=info.head_dim,
        num_heads=info.num_heads, num_kv_heads=info.num_kv_heads, scale=float(record.scale),
        position=position_kind(run.loaded), pre_norm=pre_norm, x=x.double().cpu().numpy(), query=tensors["query"],
        key=tensors["key"], value=tensors["value"], scores=scores, visible=_visible(run), weights=weights,
        output=tensors["output"], row_sums=row_sums,
        answer=Answer("lesson1.answer.prenorm" if pre_norm else "lesson1.answer", values))


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
    entropy = float(_row_entropy(definition.weights).mean())
    tied_entropy = float(_row_entropy(tied_weights).mean())
    values = {"xx_share": _pct(xx_share), "qk_share": _pct(shares[run.head]),
              "qk_mean": _pct(float(np.nanmean(shares))),
              "asym": _f(asymmetry[run.head]), "asym_min": _f(asymmetry.min()), "asym_max": _f(asymmetry.max()),
              "head": str(run.head), "layer": str(run.layer), "tied_share": _pct(tied_share),
              "tv": _f(weight_change), "entropy": _f(entropy), "tied_entropy": _f(tied_entropy),
              "change": f"{change:.2e}"}
    return WhyQKLesson(layer=run.layer, head=run.head, xx_diagonal_share=xx_share, qk_diagonal_share=shares,
                       asymmetry=asymmetry, weights=definition.weights, tied_weights=tied_weights,
                       tied_diagonal_share=tied_share, entropy=entropy, tied_entropy=tied_entropy,
                       weight_change=weight_change, output_change=change, output_measure=base_out.kind,
                       answer=Answer("lesson2.answer", values, {"measure": f"measure.{base_out.kind}"}))


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
    specials = set(getattr(loaded.tokenizer, "all_special_ids", []) or [])
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
    listed = ", ".join(f"{h} (i−j = {int(offsets[best[h]]):+d}: {_f(best_weight[h])})" for h in positional) or "—"
    strongest = int(best_weight.argmax())
    values = {"layer": str(run.layer), "count": str(len(positional)), "heads": listed,
              "threshold": _f(POSITIONAL_HEAD_MIN_WEIGHT), "top_head": str(strongest),
              "top_offset": f"{int(offsets[best[strongest]]):+d}", "top_weight": _f(best_weight[strongest])}
    key = f"lesson3.answer.{kind}"
    if not positional:  # a sentence that says "no head", not "0 head(s) … on one offset: —"
        key += ".none"
        values = {name: value for name, value in values.items() if name not in ("count", "heads")}
    control_answer = None
    if len(passed):
        shown = ", ".join(f"{h} (i−j = {int(offsets[best[h]]):+d}: {_f(best_weight[h])} → {_f(control_weight[h])})"
                          for h in passed)
        control_key = ("lesson3.control.holds" if not following else
                       "lesson3.control.induction" if repeated else "lesson3.control.content")
        control_answer = Answer(control_key, {"heads": shown, "threshold": _f(POSITIONAL_HEAD_MIN_WEIGHT),
                                              "following": ", ".join(map(str, following)) or "—"})
    return PositionLesson(layer=run.layer, kind=kind, offsets=offsets, by_offset=by_offset,
                          best_offset=offsets[best], best_weight=best_weight, positional_heads=positional,
                          answer=Answer(key, values), control_weight=control_weight, repeat_heads=following,
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
            per_scale.append((float(-torch.special.xlogy(p, p).sum(-1).mean()), float(p.max(-1).values.mean()),
                              float(softmax_jacobian_norm(p).mean())))
        entropy.append([s[0] for s in per_scale])
        max_weight.append([s[1] for s in per_scale])
        jacobian.append([s[2] for s in per_scale])
    dims_array = np.asarray(dims, dtype=np.int64)
    variance_array = np.asarray(variance)
    slope = float(scipy_stats.linregress(np.log(dims_array), np.log(variance_array)).slope)
    entropy_a, max_a, jac_a = (np.asarray(a).T for a in (entropy, max_weight, jacobian))  # (3, D)
    values = {"slope": _f(slope), "d_max": str(int(dims_array[-1])), "var_max": _f(variance_array[-1], 0),
              "h1": _f(entropy_a[0, -1]), "m1": _f(max_a[0, -1]), "j1": f"{jac_a[0, -1]:.1e}",
              "h2": _f(entropy_a[1, -1]), "m2": _f(max_a[1, -1]), "j2": f"{jac_a[1, -1]:.1e}",
              "h2_min": _f(entropy_a[1].min()), "h2_max": _f(entropy_a[1].max()),
              "h3": _f(entropy_a[2, -1]), "m3": _f(max_a[2, -1]), "uniform": _f(math.log(keys)), "keys": str(keys)}
    return ScalingSweep(dims=dims_array, keys=keys, queries=queries, seed=seed, score_variance=variance_array,
                        slope=slope, entropy=entropy_a, max_weight=max_a, jacobian_norm=jac_a,
                        answer=Answer("lesson4a.answer", values))


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
    rows = visible_counts >= 2
    entropy, normalized, max_weight, change = [], [], [], []
    for scale in scales:
        if scale == own:
            weights, out = definition.weights, base_out
        else:
            result = forward(run.loaded, run.inputs, backend=run.backend, weights_layers=frozenset({run.layer}),
                             interventions=[ScoreScale(run.layer, (run.head,), float(scale))])
            weights = result.records[run.layer].weights[0, run.head].double().cpu().numpy()
            out = model_output(run.loaded, result, run.inputs)
        row_entropy = _row_entropy(weights)
        entropy.append(float(row_entropy.mean()))
        normalized.append(float((row_entropy[rows] / np.log(visible_counts[rows])).mean()) if rows.any() else math.nan)
        max_weight.append(float(weights.max(axis=-1).mean()))
        change.append(output_change(base_out, out))
    values = {"layer": str(run.layer), "head": str(run.head), "d_k": str(d_k), "own": _f(own, 4),
              "h1": _f(normalized[0]), "m1": _f(max_weight[0]), "c1": f"{change[0]:.2e}",
              "h2": _f(normalized[1]), "m2": _f(max_weight[1]),
              "h3": _f(normalized[2]), "m3": _f(max_weight[2]), "c3": f"{change[2]:.2e}"}
    return RealScaling(layer=run.layer, head=run.head, d_k=d_k, scales=scales, entropy=np.array(entropy),
                       normalized_entropy=np.array(normalized), max_weight=np.array(max_weight),
                       output_change=np.array(change), output_measure=base_out.kind,
                       answer=Answer("lesson4b.answer", values, {"measure": f"measure.{base_out.kind}"}))


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
              "special": str(roles.count("special")), "content": str(roles.count("content"))}
    return MultiHeadLesson(layer=run.layer, d_model=info.hidden_size, num_heads=info.num_heads, d_k=info.head_dim,
                           reshape=reshape, scores_effective_rank=erank_s, scores_rank=rank_s,
                           weights_effective_rank=erank_a, contribution_norm=norms, contribution_share=share,
                           special_mass=special_mass, role=roles, answer=Answer("lesson5.answer", values))


# -------------------------------------------------------------------------------------------------- lesson 6


@dataclass(frozen=True)
class EntropyLesson:
    """Lesson 6. entropy: per-head entropy (raw (layers, heads) nats, normalized (layers, heads) in [0, 1]).
    layer_normalized: (layers,) mean normalised entropy of each layer. spearman: ρ of layer_normalized vs depth
    (negative = sharper with depth). collapsed, diffuse: (layer, head) pairs past the alarm thresholds."""

    entropy: HeadEntropy
    layer_normalized: np.ndarray
    spearman: float
    shallow_mean: float
    deep_mean: float
    collapsed: tuple[tuple[int, int], ...]
    diffuse: tuple[tuple[int, int], ...]
    answer: Answer

    def __post_init__(self) -> None:
        _check_shapes(self, {"layer_normalized": (self.entropy.raw.shape[0],)})


def entropy_lesson(run: _Run) -> EntropyLesson:
    records = run.result.records
    entropy = torch.stack([r.stats["entropy"][0] for r in records]).float().cpu().numpy()  # (layers, heads, q_len)
    visible = torch.stack([r.visible_keys[0] for r in records]).cpu().numpy()  # (layers, q_len)
    head_entropy = head_entropy_from_rows(entropy, visible)
    normalized = head_entropy.normalized
    layer_normalized = np.nanmean(normalized, axis=-1)
    layers = len(layer_normalized)
    rho = float(scipy_stats.spearmanr(np.arange(layers), layer_normalized).statistic) if layers > 2 else \
        float(np.sign(layer_normalized[-1] - layer_normalized[0]))
    half = max(1, layers // 2)
    shallow, deep = float(np.nanmean(layer_normalized[:half])), float(np.nanmean(layer_normalized[-half:]))
    collapsed = tuple((int(layer), int(h)) for layer, h in zip(*np.nonzero(normalized < COLLAPSED_BELOW)))
    diffuse = tuple((int(layer), int(h)) for layer, h in zip(*np.nonzero(normalized > DIFFUSE_ABOVE)))
    holds = shallow > deep
    values = {"shallow": _f(shallow), "deep": _f(deep), "rho": _f(rho), "collapsed": str(len(collapsed)),
              "diffuse": str(len(diffuse)), "low": _f(COLLAPSED_BELOW), "high": _f(DIFFUSE_ABOVE),
              "heads": str(normalized.size), "layers": str(layers),
              "collapsed_list": ", ".join(f"L{layer}H{h}" for layer, h in collapsed[:8]) or "—",
              "diffuse_list": ", ".join(f"L{layer}H{h}" for layer, h in diffuse[:8]) or "—"}
    return EntropyLesson(entropy=head_entropy, layer_normalized=layer_normalized, spearman=rho, shallow_mean=shallow,
                         deep_mean=deep, collapsed=collapsed, diffuse=diffuse,
                         answer=Answer("lesson6.answer.holds" if holds else "lesson6.answer.fails", values))


# -------------------------------------------------------------------------------------------------- lesson 7


@dataclass(frozen=True)
class ComplexityLesson:
    """Lesson 7, measured live. lengths: (L,). materialised_ms, flash_ms: (L,) median wall time of ``repeats``
    runs of :func:`kernels.reference.reference_attention` (all n×n weights in fp32) and of the flash path (Triton
    FlashAttention on CUDA, :func:`kernels.reference.blocked_attention` query blocks elsewhere);
    materialised_runs_ms, flash_runs_ms: (L, repeats) every run. time_exponent: b of time ≈ a·n^b fitted to the
    materialised medians, exponent_low / exponent_high its 95% bootstrap interval (:func:`exponent_interval`);
    spread: :func:`timing_spread` of both paths' runs; busy: spread > :data:`BUSY_SPREAD`.
    materialised_bytes, flash_bytes: (L,) what each holds beyond Q, K, V and O in theory. measured_*_bytes: (L,)
    peak allocation measured by CUDA's allocator; NaN on the CPU, where PyTorch reports no peak."""

    device: str
    flash_backend: str
    heads: int
    d_k: int
    dtype: str
    lengths: np.ndarray
    materialised_ms: np.ndarray
    flash_ms: np.ndarray
    materialised_bytes: np.ndarray
    flash_bytes: np.ndarray
    measured_materialised_bytes: np.ndarray
    measured_flash_bytes: np.ndarray
    time_exponent: float
    answer: Answer
    materialised_runs_ms: np.ndarray = field(default_factory=lambda: np.zeros((0, 1)))
    flash_runs_ms: np.ndarray = field(default_factory=lambda: np.zeros((0, 1)))
    exponent_low: float = math.nan
    exponent_high: float = math.nan
    spread: float = math.nan
    busy: bool = False

    def __post_init__(self) -> None:
        _check_shapes(self, {name: (len(self.lengths),) for name in
                             ("materialised_ms", "flash_ms", "materialised_bytes", "flash_bytes",
                              "measured_materialised_bytes", "measured_flash_bytes")})
        _check_shapes(self, {name: (len(self.lengths), self.materialised_runs_ms.shape[1])
                             for name in ("materialised_runs_ms", "flash_runs_ms")})


def _timed(fn, device: torch.device, repeats: int) -> tuple[list[float], float]:
    """(every one of ``repeats`` runs' wall time in milliseconds, peak extra bytes or NaN) of ``fn()`` after one
    warm-up call."""
    cuda = device.type == "cuda"
    fn()
    if cuda:
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
    before = torch.cuda.memory_allocated(device) if cuda else 0
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        fn()
        if cuda:
            torch.cuda.synchronize(device)
        times.append(1000 * (time.perf_counter() - started))
    peak = float(torch.cuda.max_memory_allocated(device) - before) if cuda else math.nan
    return times, peak


def exponent_interval(lengths: np.ndarray, runs_ms: np.ndarray, *, resamples: int = EXPONENT_RESAMPLES,
                      seed: int = 0) -> tuple[float, float, float]:
    """The growth exponent b of time ≈ a·n^b, fitted (least squares on log–log) to the median of each length's
    runs, and a 95% bootstrap interval for it: each resample draws, for every length, one of its runs at random
    and fits again (the spread of the runs — a busy machine — widens the interval; the fit's own residuals do
    not enter). ``lengths``: (L,) ≥ 2 distinct; ``runs_ms``: (L, repeats). Returns (exponent, low, high); NaNs
    for fewer than two lengths."""
    lengths = np.asarray(lengths, dtype=np.float64)
    runs = np.asarray(runs_ms, dtype=np.float64)
    if len(np.unique(lengths)) < 2:
        return math.nan, math.nan, math.nan
    x = np.log(lengths)
    exponent = float(np.polyfit(x, np.log(np.median(runs, axis=1)), 1)[0])
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, runs.shape[1], size=(resamples, len(lengths)))  # (resamples, L)
    sampled = np.log(runs[np.arange(len(lengths))[None, :], picks])  # (resamples, L)
    centred = x - x.mean()
    slopes = (sampled - sampled.mean(axis=1, keepdims=True)) @ centred / (centred @ centred)  # (resamples,)
    low, high = np.percentile(slopes, [2.5, 97.5])
    return exponent, float(low), float(high)


def timing_spread(runs_ms: np.ndarray) -> float:
    """The largest relative spread of one length's runs, (q75 − q25) / median over ``runs_ms`` (L, repeats):
    0 on a quiet machine; above :data:`BUSY_SPREAD` the machine was too busy for the timings to be trusted."""
    runs = np.asarray(runs_ms, dtype=np.float64)
    q25, q50, q75 = np.percentile(runs, [25, 50, 75], axis=1)
    return float(((q75 - q25) / np.maximum(q50, 1e-12)).max())


def complexity_lesson(lengths: Sequence[int] = DEFAULT_LENGTHS, *, heads: int = 12, d_k: int = 64,
                      device: str | torch.device | None = None, repeats: int = TIMING_REPEATS, seed: int = 0,
                      progress: Progress | None = None) -> ComplexityLesson:
    """Time ``softmax(QKᵀ/√d)V`` for one sequence of each length with ``heads`` heads of size ``d_k``.
    ``progress`` (:mod:`inspector.base.progress`) counts lengths timed, called before each (done = its index in
    ``lengths``) and at the end."""
    from kernels import flash

    if not lengths or min(lengths) < 1 or repeats < 1:
        raise InvalidRequestError(f"lengths must be positive and repeats ≥ 1; got {list(lengths)}, {repeats}")
    device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    use_triton = device.type == "cuda" and flash.triton_usable(device)
    dtype = torch.float16 if use_triton else torch.float32
    generator = torch.Generator(device=device).manual_seed(seed)
    scale = d_k ** -0.5
    rows = {name: [] for name in ("mat_ms", "flash_ms", "mat_bytes", "flash_bytes", "mat_peak", "flash_peak")}
    announce = progress or no_progress
    for index, n in enumerate(lengths):
        announce(index, len(lengths), f"timing n = {n}")
        q, k, v = (torch.randn(1, heads, n, d_k, generator=generator, device=device, dtype=dtype) for _ in range(3))
        with torch.inference_mode():
            runs, peak = _timed(lambda: reference_attention(q, k, v, causal=False, scale=scale), device, repeats)
            rows["mat_ms"].append(runs)
            rows["mat_peak"].append(peak)
            if use_triton:
                flash_fn = lambda: flash.flash_attention(q, k, v, causal=False, scale=scale, stats=("lse",))  # noqa: E731
                extra = heads * n * 4  # the fp32 log-sum-exp; score tiles live in on-chip memory
            else:
                flash_fn = lambda: blocked_attention(q, k, v, causal=False, scale=scale, stats=("lse",))  # noqa: E731
                extra = min(n, default_block_size(1, heads, n)) * n * heads * 4  # one block of fp32 scores
            runs, peak = _timed(flash_fn, device, repeats)
        rows["flash_ms"].append(runs)
        rows["flash_peak"].append(peak)
        rows["mat_bytes"].append(2 * heads * n * n * 4)  # fp32 scores and weights, both n×n
        rows["flash_bytes"].append(extra)
    announce(len(lengths), len(lengths), "done")
    lengths_array = np.asarray(lengths, dtype=np.int64)
    mat_runs, flash_runs = np.asarray(rows["mat_ms"]), np.asarray(rows["flash_ms"])  # (L, repeats)
    mat_ms, flash_ms = np.median(mat_runs, axis=1), np.median(flash_runs, axis=1)
    exponent, low, high = exponent_interval(lengths_array, mat_runs)
    spread = max(timing_spread(mat_runs), timing_spread(flash_runs))
    busy = spread > BUSY_SPREAD
    backend = "Triton FlashAttention" if use_triton else "blocked PyTorch (query blocks)"
    last = len(lengths) - 1
    values = {"device": device_label(device), "n": str(int(lengths_array[last])),
              "mat_ms": _f(mat_ms[last], 1), "flash_ms": _f(flash_ms[last], 1),
              "mat_mb": _f(rows["mat_bytes"][last] / 2**20, 1), "flash_mb": _f(rows["flash_bytes"][last] / 2**20, 1),
              "exponent": _f(exponent), "low": _f(low), "high": _f(high), "repeats": str(repeats),
              "spread": _pct(spread), "heads": str(heads), "d_k": str(d_k)}
    return ComplexityLesson(
        device=str(device), flash_backend=backend, heads=heads, d_k=d_k, dtype=str(dtype).removeprefix("torch."),
        lengths=lengths_array, materialised_ms=mat_ms, flash_ms=flash_ms,
        materialised_bytes=np.asarray(rows["mat_bytes"], dtype=np.float64),
        flash_bytes=np.asarray(rows["flash_bytes"], dtype=np.float64),
        measured_materialised_bytes=np.asarray(rows["mat_peak"]), measured_flash_bytes=np.asarray(rows["flash_peak"]),
        time_exponent=exponent, materialised_runs_ms=mat_runs, flash_runs_ms=flash_runs, exponent_low=low,
        exponent_high=high, spread=spread, busy=busy,
        answer=Answer("lesson7.answer.busy" if busy else "lesson7.answer", values,
                      {"backend": "backend.triton" if use_triton else "backend.blocked"}))


# -------------------------------------------------------------------------------------------------- lesson 8


def attention_target(definition: DefinitionLesson, query: int) -> tuple[int, float]:
    """The key the head sends most of ``query``'s budget to, and that weight (the quiz's reveal)."""
    if not 0 <= query < len(definition.tokens):
        raise InvalidRequestError(f"query position {query} is outside the text's {len(definition.tokens)} tokens")
    row = definition.weights[query]
    return int(row.argmax()), float(row.max())


@dataclass(frozen=True)
class TokenImportance:
    """Leave-one-out (Jain & Wallace 2019): the output change when each token is deleted from the text.
    change: (q_len,) float64, NaN for tokens not deleted (special tokens and the output position). measure: the
    output kind compared (:func:`inspector.core.outputs.output_change_name`)."""

    tokens: tuple[str, ...]
    change: np.ndarray
    measure: str
    best: int

    def __post_init__(self) -> None:
        _check_shapes(self, {"change": (len(self.tokens),)})


def leave_one_out(loaded: LoadedModel, text: str, *, backend: str = "torch") -> TokenImportance:
    encoded = encode_text(loaded, text)
    inputs, tokens, special, device = encoded.inputs, encoded.tokens, encoded.special, loaded.device
    base_result = forward(loaded, inputs, backend=backend)
    base = model_output(loaded, base_result, inputs)
    change = np.full(len(tokens), np.nan)
    left_out = [p for p in range(len(tokens)) if not special[p] and p != base.position]
    # Every deletion leaves n − 1 tokens, so the texts batch without padding, as many per forward as fit.
    chunk = batch_size_for(loaded, len(tokens) - 1, backward=False)
    for start in range(0, len(left_out), chunk):
        positions = left_out[start:start + chunk]
        keep = torch.tensor([[i for i in range(len(tokens)) if i != p] for p in positions], device=device)
        reduced = {name: tensor[0][keep] for name, tensor in inputs.items()}  # (len(positions), n − 1)
        result = forward(loaded, reduced, backend=backend, stats=())
        for b, position in enumerate(positions):
            change[position] = output_change(base, model_output(loaded, result, reduced, sequence=b))
    if not np.isfinite(change).any():
        raise InvalidRequestError("the text has no token that can be left out (only special tokens); type a longer "
                                  "text")
    return TokenImportance(tokens=tokens, change=change, measure=base.kind, best=int(np.nanargmax(change)))


# -------------------------------------------------------------------------------------------------- all of them


@dataclass(frozen=True)
class Lessons(Displayable):
    """Every lesson for one model, text, layer and head. ``complexity`` and ``importance`` are None when not
    asked for (they cost extra time: timings, and one forward per token)."""

    model: str
    text: str
    backend: str
    definition: DefinitionLesson
    why_qk: WhyQKLesson
    position: PositionLesson
    sweep: ScalingSweep
    scaling: RealScaling
    multi_head: MultiHeadLesson
    entropy: EntropyLesson
    complexity: ComplexityLesson | None = None
    importance: TokenImportance | None = None


def all_lessons(loaded: LoadedModel, text: str, layer: int, head: int, *, backend: str = "torch",
                timing_lengths: Sequence[int] | None = None, importance: bool = False) -> Lessons:
    """Run lessons 1–6 on ``text`` for ``layer`` and ``head``; lesson 7 when ``timing_lengths`` is given (with the
    model's heads and head size); the leave-one-out of the quiz when ``importance``."""
    run = _run(loaded, text, layer, head, backend)
    definition = definition_lesson(run)
    position = position_lesson(run)
    info = loaded.info
    return Lessons(
        model=info.name, text=text, backend=backend, definition=definition, why_qk=why_qk_lesson(run, definition),
        position=position, sweep=_default_sweep(), scaling=real_scaling_lesson(run, definition),
        multi_head=multi_head_lesson(run, position), entropy=entropy_lesson(run),
        complexity=(complexity_lesson(timing_lengths, heads=info.num_heads, d_k=info.head_dim,
                                      device=loaded.device)
                    if timing_lengths else None),
        importance=leave_one_out(loaded, text, backend=backend) if importance else None)


def lessons_json(lessons: Lessons, lang: str = "en") -> dict:
    """Every number of ``lessons`` as plain JSON (NaN → null), answers written in ``lang``."""
    return to_jsonable(lessons, overrides={Answer: lambda answer: answer.text(lang),
                                           HeadEntropy: lambda h: {"raw": h.raw, "normalized": h.normalized}})
