"""What every lesson shares (:mod:`inspector.analyses.lessons`): the :class:`Answer` a lesson writes from its numbers,
the one baseline forward of the encoder lessons (:class:`_Run`) and the small measures several lessons use."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import torch
from scipy import stats as scipy_stats

from inspector.analyses.metrics import HealthThresholds
from inspector.base.i18n import t
from inspector.core.forward import ForwardResult, encode_text, forward
from inspector.core.loading import LoadedModel, model_label
from kernels.hf import TENSOR_NAMES
from kernels.reference import row_entropy, visible_keys_mask

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
# Untimed rounds over every length before the timed ones: the first length then no longer pays the allocator's and
# the kernels' first-call costs (issue 44: a V-shaped curve, fitted exponent 0.47).
TIMING_WARMUPS = 2
EXPONENT_RESAMPLES = 400
# A quiet run whose fitted time exponent stays below this did not show the square growth at these lengths (fixed
# costs dominate small n): the answer says so instead of claiming O(n²) from the clock.
TIME_SHOWS_SQUARE_FROM = 1.5
# Lesson 7's blocked path on a CPU takes this many queries per block (fewer when the block budget says so), a tile
# size of the order FlashAttention uses: every length above it is computed in several blocks, so "blocked equals
# materialised" is tested at every such length, not only where the default budget would split the queries.
QUERY_BLOCK = 64
# Above this relative spread of a length's runs ((q75 − q25) / median) the lesson says the machine was too busy to
# trust the timings, whatever the fit says.
BUSY_SPREAD = 0.25
# Lesson 3's control text (random distinct tokens in place of the text's): its seed.
CONTROL_SEED = 0
# A verdict read from a rank correlation is stated only when a one-sided test in its direction gives p below this
# (scipy.stats.spearmanr); otherwise the lesson says "not shown" (issue 44: "shallow broad, deep sharp holds" was
# written for ρ = −0.06).
VERDICT_ALPHA = 0.05
# Lesson D7: "nearer means a higher score" also needs a strong link, ρ(distance, dot product) ≤ −QK_MIN_RHO. Its
# query–key pairs share queries and keys, so the test's p is optimistic; the size of ρ is the main threshold (ρ =
# −0.22 read as "closer means higher" in issue 44).
QK_MIN_RHO = 0.5
# "S is far from symmetric" (lessons 2 and D1) when ‖S − Sᵀ‖_F/‖S‖_F is at least this: 0 for W_Q = W_K, about √2 for
# a matrix of unrelated entries. The measure is exact (one forward, no sampling), so the margin is the evidence.
ASYMMETRY_FAR = 0.5
# "A parking spot, not a source" (D4) when the first token's share of the norm-weighted attention is below this
# fraction of its share of the weight — the Heads report's idle-sink ratio (Kobayashi et al. 2020).
PARKING_RATIO = 0.5
# D2: moving every position by the same shift changes RoPE scores by "rounding" when the largest change is at most
# this share of the largest score (fp32 forwards differ around 1e-6 of it; a learned absolute position moves scores by
# tens of per cent), and only then does the lesson conclude that position enters as the offset alone.
ROUNDING_SHARE = 1e-3
# "Blurrier" (D6) when linear attention raises the head's mean row entropy by at least this many nats.
BLUR_MARGIN = 0.05
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
    # Placeholders that list phrases: (catalogue key, its values) pairs, each written in ``lang`` (Chinese brackets
    # and colons, issue 44: "2 (i−j = +1: 1.00)" stood in a Chinese sentence) and joined with the language's list
    # separator; an empty list reads "—".
    phrases: Mapping[str, tuple[tuple[str, Mapping[str, str]], ...]] = field(default_factory=dict)

    def text(self, lang: str = "en") -> str:
        # A placeholder that names a model shows the name a person reads in ``lang`` ("Gemma 3 270M (bundled)",
        # not its spec "bundled:gemma-3-270m"); the values keep the spec for exports.
        values = {name: model_label(value, lang) if name in MODEL_PLACEHOLDERS else value
                  for name, value in self.values.items()}
        listed = {name: t("lessons.list_separator", lang).join(
                      t("lessons.named_value", lang, name=t(key, lang), value=value) for key, value in pairs)
                  for name, pairs in self.named.items()}
        numbers = {name: t("lessons.number_separator", lang).join(items) or "—" for name, items in self.lists.items()}
        phrases = {name: t("lessons.list_separator", lang).join(t(key, lang, **fields) for key, fields in items) or "—"
                   for name, items in self.phrases.items()}
        return t(self.key, lang, **values, **listed, **numbers, **phrases,
                 **{name: t(key, lang) for name, key in self.terms.items()})


def _f(x: float, digits: int = 2) -> str:
    """``x`` to ``digits`` decimals; a number that rounds to zero prints as 0.00, never -0.00 (issue 44: Lesson 4
    showed a saturated entropy of −1e-9 nats as "-0.00"). A negative number prints with the minus sign U+2212, as the
    sentences' thresholds do ("ρ = −0.03, at most −0.50"), not with a hyphen."""
    return "n/a" if not math.isfinite(float(x)) else f"{float(x):z.{digits}f}".replace("-", "\u2212")


def _pct(x: float) -> str:
    """``x`` as a whole percentage; one that rounds to zero prints as 0%, never -0%; a negative one with U+2212."""
    return "n/a" if not math.isfinite(float(x)) else f"{100 * float(x):z.0f}%".replace("-", "\u2212")


def asymmetry_term(asymmetry: float) -> str:
    """The catalogue key saying whether S is far from symmetric (‖S − Sᵀ‖/‖S‖ ≥ :data:`ASYMMETRY_FAR`)."""
    return "lessons.asymmetry.far" if asymmetry >= ASYMMETRY_FAR else "lessons.asymmetry.near"


# A query row that sees fewer keys than this puts all its weight on the one it sees by construction (a causal model's
# first row: `<bos>` → itself), so it is neither a finding nor a question (issue 44).
MIN_VISIBLE_KEYS = 2


def seeing_rows(visible: np.ndarray) -> np.ndarray:
    """(q_len,) bool: the query rows that see at least :data:`MIN_VISIBLE_KEYS` keys (all of them when none does).
    ``visible``: (q_len, k_len) bool."""
    seeing = np.asarray(visible, dtype=bool).sum(axis=-1) >= MIN_VISIBLE_KEYS
    return seeing if seeing.any() else np.ones_like(seeing)


def quiz_queries(special: np.ndarray, visible: np.ndarray) -> list[int]:
    """The query positions the quiz asks about, the first being its default: content tokens that see two or more keys
    (:func:`seeing_rows`) — from [CLS], or from a causal model's first token, which sees only itself, the answer is
    trivial (SmolLM2's default question was token 0; issue 44) — else any content token, else every token.
    ``special``: (q_len,) bool; ``visible``: (q_len, k_len) bool."""
    special, seeing = np.asarray(special, dtype=bool), seeing_rows(visible)
    positions = range(len(special))
    return ([i for i in positions if not special[i] and seeing[i]] or [i for i in positions if not special[i]]
            or list(positions))


def rounding_term(relative_change: float) -> str:
    """The catalogue key saying whether a change is rounding (lesson D2): at most :data:`ROUNDING_SHARE` of the
    largest score; else "more than rounding"."""
    return "lessons.rope.rounding" if relative_change <= ROUNDING_SHARE else "lessons.rope.not_rounding"


def saturation_term(normalized_entropy: float) -> str:
    """The catalogue key saying whether softmax rows are saturated (lesson 4): their mean entropy below
    :data:`COLLAPSED_BELOW` of the uniform one (log of the keys), the Heads page's "collapsed"; else "not shown"."""
    return "lessons.scale.saturated" if normalized_entropy < COLLAPSED_BELOW else "lessons.scale.not_saturated"


def uniformity_term(normalized_entropy: float) -> str:
    """The catalogue key saying whether softmax rows are close to uniform (lesson 4): their mean entropy above
    :data:`DIFFUSE_ABOVE` of the uniform one, the Heads page's "diffuse"; else "not shown"."""
    return "lessons.scale.uniform" if normalized_entropy > DIFFUSE_ABOVE else "lessons.scale.not_uniform"


def _p(x: float) -> str:
    """A p-value as text: two significant digits, "< 0.001" below that."""
    return "n/a" if not math.isfinite(float(x)) else "< 0.001" if x < 1e-3 else f"{float(x):.2g}"


@dataclass(frozen=True)
class RankTrend:
    """A one-sided Spearman test of a claimed direction. rho: Spearman's ρ; p: the one-sided p-value in the claimed
    direction; p_opposite: in the other; verdict: ``"shown"`` (p < alpha), ``"opposite"`` (p_opposite < alpha) or
    ``"not_shown"`` (neither, or fewer than 3 finite points)."""

    rho: float
    p: float
    p_opposite: float
    alpha: float
    verdict: str


def rank_trend(x: np.ndarray, y: np.ndarray, *, claimed: str, alpha: float = VERDICT_ALPHA) -> RankTrend:
    """Spearman's ρ between ``x`` and ``y`` tested one-sided for the ``claimed`` direction (``"less"``: y falls as x
    grows; ``"greater"``: it rises); pairs with a non-finite value are left out."""
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    finite = np.isfinite(x) & np.isfinite(y)
    x, y = x[finite], y[finite]
    if len(x) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return RankTrend(rho=math.nan, p=math.nan, p_opposite=math.nan, alpha=alpha, verdict="not_shown")
    opposite = "greater" if claimed == "less" else "less"
    test = scipy_stats.spearmanr(x, y, alternative=claimed)
    p_opposite = float(scipy_stats.spearmanr(x, y, alternative=opposite).pvalue)
    p = float(test.pvalue)
    verdict = "shown" if p < alpha else "opposite" if p_opposite < alpha else "not_shown"
    return RankTrend(rho=float(test.statistic), p=p, p_opposite=p_opposite, alpha=alpha, verdict=verdict)


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
    return float(np.exp(row_entropy(p)))


def softmax_jacobian(p: torch.Tensor) -> torch.Tensor:
    """∂softmax(s)/∂s = diag(p) − p pᵀ for probabilities ``p`` (..., k) → (..., k, k). Its norm is 0 for a
    one-hot p (a saturated softmax passes no gradient back to the scores)."""
    return torch.diag_embed(p) - p[..., :, None] * p[..., None, :]


def softmax_jacobian_norm(p: torch.Tensor) -> torch.Tensor:
    """‖diag(p) − ppᵀ‖_F for probabilities ``p`` (..., k) → (...), without building the k × k matrix:
    ‖D‖² − 2⟨D, ppᵀ⟩ + ‖ppᵀ‖² = Σp² − 2Σp³ + (Σp²)²."""
    squares = p.pow(2).sum(dim=-1)
    return (squares - 2 * p.pow(3).sum(dim=-1) + squares.pow(2)).clamp_min(0).sqrt()


