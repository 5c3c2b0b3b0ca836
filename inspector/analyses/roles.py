"""Head roles, found by probes and proven by ablation (issue 29; DESIGN, "Head roles by probe").

A user's sentence rarely repeats a token, so it cannot tell an induction head from anything else. This module asks
every head the same fixed question instead: a seeded batch of **repeated random token sequences** — BOS, then R
random ids, then the same R ids again (Olsson et al. 2022, "In-context learning and induction heads"; the probe of
TransformerLens's ``head_detector``) — run through the project's one forward (:func:`inspector.core.forward.forward`)
with every layer's exact weights kept (the probe is short: the weights of B × (2R + 1)² cells per head are cheap).
Positions: 0 is BOS, 1 … R the first copy, R + 1 … 2R the second copy, so the token at i > R repeats the one at
i − R. Scores, per head and per probe sequence, each in [0, 1], then the mean with a 95 % Student-t interval over the
sequences of the batch (the t quantile from scipy, as the census takes it):

- **previous-token** — mean weight from position i to i − 1 over i ≥ 1 (TransformerLens ``head_detector``'s
  ``previous_token_head``; Clark et al.'s "previous" mass, :func:`inspector.analyses.batching.batch_statistics`).
  Prefer it to the local share for the one-token offset that forms the first half of an induction circuit.
- **induction** — mean weight from each second-copy token to the token that followed its earlier occurrence
  (offset 1 − R; :func:`inspector.analyses.metrics.induction_score`, Olsson et al.'s prefix-matching score).
- **duplicate-token** — mean weight from each second-copy token to its own earlier occurrence (offset −R;
  ``head_detector``'s ``duplicate_token_head``).
- **sink** — Gu et al. 2024 ("When Attention Sink Emerges"): the first token's score Σ_i A_i0 / (queries that see
  it), a sink when it exceeds ε = 0.3; the *sink rate* is the share of probe sequences in which it does.
- **local** — the share of each row's weight on the keys within w tokens of the query (i − w < j ≤ i under a causal
  mask, |i − j| < w in an encoder), mean over rows: Voita et al. 2019's positional heads widened to a window. On a
  layer with its own sliding window (Gemma's local layers) the window is min(w, the model's window).
- **broad** — the normalised entropy, each row's entropy over log(keys it sees), mean over rows that see two keys
  or more (Clark et al. 2019; :func:`inspector.analyses.batching.batch_statistics`): near 1, the head spreads
  its budget evenly and routes nothing in particular.

A head's **dominant role** is the first of :data:`ROLES` (content roles before positional ones) whose mean score
reaches its threshold (:data:`ROLE_THRESHOLDS`), and ``none`` when no role does.

**Causal test** (:func:`causal_test`): a pattern seen is not a pattern used. For each of induction, previous-token
and sink, the top-k heads by score are removed and what the role should carry is measured on the same probe —

- induction: the loss (cross-entropy, nats) of the repeated half's predictions (tokens R + 2 … 2R) rises;
- previous-token: the loss of the first half's predictions (tokens 2 … R) rises;
- sink: the output changes (KL(p ‖ p′), nats, at the first copy's positions 1 … R — ordinary prediction from random
  context; position 0 sees only the first token, which it keeps) when the first token's weight is removed from the
  head's rows and the rows renormalised (a :class:`kernels.hf.WeightEdit`);

induction and previous-token heads are mean-ablated (:class:`kernels.hf.SequenceHeadAblation`, mode ``mean``: the
head keeps its mean output over the sequence, loses what depends on the token). The same is done to as many
**random heads of the same layers** (other heads of those layers where there are enough), over several seeds.
Models without a language-model head (encoders) measure the cosine distance of the final hidden states at the
same positions instead of a loss. The role heads' rise has a 95 % t interval over the probe sequences, the random
heads' over the seeds; the role is **causal** on this model when its interval lies wholly above the random one
and above 0.
**Cost** (what makes the whole view a few forwards): the probe and the causal test share one unablated forward
(:func:`probe_forward`: the weights for the scores, every block's output and the logits for the test's baseline).
Every configuration of a role (role heads, then each seed's random heads) runs as copies of the probe batch in
batched forwards, started at the lowest ablated layer from the unablated forward's block outputs
(:class:`kernels.hf.ResumeAt`), without statistics; in a causal model the copies read the probe only up to the last
position the measure reads (later tokens cannot change a prediction there; the previous-token and sink tests read
R + 1 tokens, and a mean-ablated head's mean is over the tokens read). The language-model head runs only at the
measured positions, a vocabulary chunk at a time from the final hidden states (:class:`_ChunkedHead`, checked
against the model's own logits; otherwise the model's head through ``logits_to_keep``, as many copies a forward as
2^27 logits hold). The measures read each copy's logits once: a log-sum-exp over the vocabulary and the target's
logit (loss), or a row-wise dot product with the unablated distribution (KL(p ‖ p′) = Σ p log p − Σ p · logits′ +
log-sum-exp).

:func:`head_roles` does both and returns a frozen :class:`RolesResult`; :func:`roles_json` and
:func:`roles_report` are its JSON and plain-words twins (``python -m inspector heads --roles``).
"""

from __future__ import annotations

import inspect
import re
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import torch

from inspector.analyses.batching import batch_statistics
from inspector.analyses.metrics import induction_score
from inspector.base.errors import InvalidRequestError
from inspector.base.i18n import DEFAULT_LANGUAGE, t
from inspector.base.jsonable import to_jsonable
from inspector.core.forward import forward
from inspector.core.loading import LoadedModel
from kernels.hf import Intervention, ResumeAt, SequenceHeadAblation, WeightEdit

Role = Literal["induction", "duplicate", "previous", "sink", "local", "broad"]
# Precedence of the dominant role: content roles (which token) before positional ones (where), broad last.
ROLES: tuple[Role, ...] = ("induction", "duplicate", "previous", "sink", "local", "broad")
NO_ROLE = "none"
# A head takes a role when its mean score reaches this. 0.4 is the Heads report's induction threshold
# (inspector.analyses.heads.INDUCTION_HEAD_SCORE) and serves the other one-key roles too; 0.3 is Gu et al.'s ε;
# local 0.8 (four fifths of the budget inside the window); broad 0.9 is the Heads page's "diffuse" threshold.
ROLE_THRESHOLDS: dict[Role, float] = {"induction": 0.4, "duplicate": 0.4, "previous": 0.4, "sink": 0.3,
                                      "local": 0.8, "broad": 0.9}
SINK_EPSILON = 0.3  # Gu et al. 2024
CAUSAL_ROLES: tuple[Role, ...] = ("induction", "previous", "sink")
CONFIDENCE = 0.95

DEFAULT_REPEAT = 20
DEFAULT_BATCH = 8
DEFAULT_TOP_K = 3
DEFAULT_WINDOW = 4
DEFAULT_SEEDS = 4
DEFAULT_SEED = 0
MAX_BATCH = 256
# Tokens one causal-test forward may hold (copies × batch × length), and logits (copies × batch × measured positions ×
# vocabulary: 2^27 float32 = 512 MB, Gemma's 262k-token vocabulary at one to three copies a forward).
_FORWARD_TOKENS = 4096
_LOGITS_BUDGET = 2**27
_VOCAB_CHUNK = 4096  # ids a chunk of the language-model head (2.6 MB of Gemma's weights; 4k–32k ran alike here)


@dataclass(frozen=True)
class ProbeSpec:
    """The probe: ``batch`` sequences of BOS + ``repeat`` random ids + the same ids again (length 2R + 1), the ids
    drawn without replacement within a sequence, uniformly from the ``candidates`` ids of [``id_low``, ``id_high``)
    that are not special or added tokens, with ``numpy.random.default_rng(seed)``. ids: (batch, 2R + 1) int64."""

    repeat: int
    batch: int
    seed: int
    bos_id: int
    id_low: int
    id_high: int
    candidates: int
    ids: np.ndarray

    def __post_init__(self) -> None:
        if self.ids.shape != (self.batch, 2 * self.repeat + 1):
            raise ValueError(f"probe ids {self.ids.shape}, expected ({self.batch}, {2 * self.repeat + 1})")
        if not np.array_equal(self.ids[:, 1:self.repeat + 1], self.ids[:, self.repeat + 1:]):
            raise ValueError("the probe's second half must repeat its first")

    @property
    def length(self) -> int:
        return 2 * self.repeat + 1


@dataclass(frozen=True)
class CausalTest:
    """One role's causal test. heads: the top-k role heads ((layer, head), best first). measure: ``loss`` (nats,
    causal LMs) or ``hidden`` (cosine distance of final hidden states, encoders) or ``kl`` (sink, nats); baseline:
    the measure on the unablated probe (0 for a change measure). role_rise: the rise when the role heads are
    removed, with its 95 % t interval over the probe sequences (role_low, role_high). random_rises: (seeds,) the
    rise for each seed's random heads of the same layers (random_heads[s]: their (layer, head)); random_mean and its
    95 % t interval over seeds. causal: role_low > max(random_high, 0) — a rise, and above the random heads'."""

    role: Role
    heads: tuple[tuple[int, int], ...]
    measure: str
    baseline: float
    role_rise: float
    role_low: float
    role_high: float
    random_heads: tuple[tuple[tuple[int, int], ...], ...]
    random_rises: np.ndarray
    random_mean: float
    random_low: float
    random_high: float
    causal: bool

    def __post_init__(self) -> None:
        if self.random_rises.shape != (len(self.random_heads),):
            raise ValueError("one random rise per seed")
        if self.causal != bool(self.role_low > max(self.random_high, 0.0)):
            raise ValueError("causal must be role_low > max(random_high, 0)")


@dataclass(frozen=True)
class RolesResult:
    """Probe scores of every head, their dominant roles and the causal tests. L = layers, H = heads.

    scores / low / high: {role: (L, H) float32 in [0, 1]} — mean over the probe sequences and its 95 % t interval
    (clipped to [0, 1]). sink_rate: (L, H) float32 — share of sequences whose first-token score exceeds ε.
    dominant: (L, H) str — a role of :data:`ROLES` or ``none``. windows: (L,) int — the local window each layer
    used. tests: the causal tests, one per role of :data:`CAUSAL_ROLES` (empty when not run)."""

    model: str
    probe: ProbeSpec
    window: int
    top_k: int
    seeds: int
    thresholds: dict
    scores: dict[str, np.ndarray]
    low: dict[str, np.ndarray]
    high: dict[str, np.ndarray]
    sink_rate: np.ndarray
    dominant: np.ndarray
    windows: np.ndarray
    tests: tuple[CausalTest, ...] = ()
    weights_example: np.ndarray | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        shape = self.dominant.shape
        for table in (self.scores, self.low, self.high):
            if set(table) != set(ROLES):
                raise ValueError(f"scores for {sorted(table)}, expected {sorted(ROLES)}")
            for name, values in table.items():
                if values.shape != shape:
                    raise ValueError(f"{name} has shape {values.shape}, expected {shape}")
                finite = values[np.isfinite(values)]
                if finite.size and (finite.min() < 0 or finite.max() > 1):
                    raise ValueError(f"{name} scores leave [0, 1]")
        if self.sink_rate.shape != shape or self.windows.shape != shape[:1]:
            raise ValueError("sink_rate (L, H) and windows (L,) must match the scores")
        if self.weights_example is not None and self.weights_example.shape != (
                *shape, self.probe.length, self.probe.length):
            raise ValueError("weights_example must be (L, H, 2R + 1, 2R + 1)")

    @property
    def shape(self) -> tuple[int, int]:
        return self.dominant.shape

    def top_heads(self, role: Role, k: int | None = None) -> list[tuple[int, int]]:
        """The ``k`` (default :attr:`top_k`) heads with the highest ``role`` score, best first (ties: layer-major)."""
        values = self.scores[role]
        order = np.argsort(-np.nan_to_num(values, nan=-1.0).ravel(), kind="stable")[:k or self.top_k]
        return [(int(i // values.shape[1]), int(i % values.shape[1])) for i in order]

    def test(self, role: Role) -> CausalTest | None:
        return next((item for item in self.tests if item.role == role), None)


# ------------------------------------------------------------------------------------------------ the options


def check_options(*, repeat: int, batch: int, top_k: int, window: int, seeds: int, num_heads: int | None = None,
                  max_positions: int | None = None) -> None:
    """Refuse bad probe options with one :class:`InvalidRequestError` saying what, why and the fix (before any
    forward; ``num_heads`` — layers × heads — and ``max_positions`` once a model is known)."""
    if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 2:
        raise InvalidRequestError(f"the probe repeats {repeat!r} random tokens; it needs at least 2 (an induction "
                                  "target is the token after an earlier occurrence) — use --repeat 2 or more")
    if not isinstance(batch, int) or not 2 <= batch <= MAX_BATCH:
        raise InvalidRequestError(f"the probe batch is {batch!r} sequences; an interval needs 2 to {MAX_BATCH} — "
                                  "use --batch in that range")
    if not isinstance(window, int) or window < 1:
        raise InvalidRequestError(f"the local window is {window!r} tokens; it must be at least 1 — use --window 1 "
                                  "or more")
    if not isinstance(seeds, int) or seeds < 2:
        raise InvalidRequestError(f"the causal test draws random heads with {seeds!r} seeds; an interval needs at "
                                  "least 2")
    if not isinstance(top_k, int) or top_k < 1 or (num_heads is not None and top_k > num_heads):
        limit = (f" and at most {num_heads}, half the model's heads (as many random heads are its comparison)"
                 if num_heads is not None else "")
        raise InvalidRequestError(f"--top-k is {top_k!r}; the causal test ablates at least 1 head{limit} — "
                                  "pick a smaller --top-k")
    if max_positions is not None and 2 * repeat + 1 > max_positions:
        raise InvalidRequestError(f"the probe is 2 × {repeat} + 1 = {2 * repeat + 1} tokens; this model reads at most "
                                  f"{max_positions} — use --repeat {(max_positions - 1) // 2} or less")


def default_repeat(loaded: LoadedModel) -> int:
    """:data:`DEFAULT_REPEAT`, or less when the model reads fewer than 2R + 1 tokens."""
    return max(2, min(DEFAULT_REPEAT, (loaded.info.max_positions - 1) // 2))


# ------------------------------------------------------------------------------------------------ the probe


_MARKER = re.compile(r"\[[A-Za-z_]+\]|<[^<>]*>")  # [CLS], <unused0>, <|im_start|>, <start_of_image> …


_CANDIDATES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # tokenizer → its candidate ids


def _probe_candidates(loaded: LoadedModel) -> np.ndarray:
    """Ids the probe may draw: the model's vocabulary without special and added tokens and without marker-like
    tokens (``[CLS]``, ``<unused0>``, ``<|im_start|>`` — a tokenizer never produces them inside ordinary text).
    Kept per tokenizer (reading Gemma's 262k tokens takes most of a second)."""
    try:
        cached = _CANDIDATES.get(loaded.tokenizer)
    except TypeError:  # a tokenizer that cannot be weakly referenced
        cached = None
    if cached is not None and len(cached) and cached.max() < loaded.info.vocab_size:
        return cached
    candidates = _read_candidates(loaded)
    try:
        _CANDIDATES[loaded.tokenizer] = candidates
    except TypeError:
        pass
    return candidates


def _read_candidates(loaded: LoadedModel) -> np.ndarray:
    tokenizer = loaded.tokenizer
    vocab = int(loaded.info.vocab_size)
    excluded = set(int(i) for i in (getattr(tokenizer, "all_special_ids", None) or []))
    excluded.update(int(i) for i in (getattr(tokenizer, "added_tokens_decoder", None) or {}))
    ids = np.arange(vocab, dtype=np.int64)
    with loaded.tokenizer_lock:
        tokens = tokenizer.convert_ids_to_tokens(ids.tolist())
    keep = np.array([i not in excluded and isinstance(token, str) and not _MARKER.fullmatch(token)
                     for i, token in zip(ids.tolist(), tokens)], dtype=bool)
    return ids[keep]


def _bos_id(loaded: LoadedModel) -> int:
    tokenizer = loaded.tokenizer
    configured = getattr(loaded.model.config, "bos_token_id", None)
    if isinstance(configured, int) and 0 <= configured < loaded.info.vocab_size:
        return configured
    for name in ("bos_token_id", "cls_token_id", "eos_token_id", "pad_token_id"):
        value = getattr(tokenizer, name, None)
        if isinstance(value, int) and 0 <= value < loaded.info.vocab_size:
            return value
    return 0


def make_probe(loaded: LoadedModel, *, repeat: int, batch: int, seed: int) -> ProbeSpec:
    """The seeded probe batch of :class:`ProbeSpec` for ``loaded``."""
    candidates = _probe_candidates(loaded)
    if len(candidates) < repeat:
        raise InvalidRequestError(f"{loaded.info.name} has {len(candidates)} ordinary token ids, fewer than the "
                                  f"{repeat} distinct ids a probe sequence needs — use --repeat {len(candidates)} or "
                                  "less")
    rng = np.random.default_rng(seed)
    first = np.stack([rng.choice(candidates, size=repeat, replace=False) for _ in range(batch)])  # (batch, R)
    bos = _bos_id(loaded)
    ids = np.concatenate([np.full((batch, 1), bos, dtype=np.int64), first, first], axis=1)  # (batch, 2R + 1)
    return ProbeSpec(repeat=repeat, batch=batch, seed=seed, bos_id=bos, id_low=int(candidates.min()),
                     id_high=int(candidates.max()) + 1, candidates=len(candidates), ids=ids)


def _inputs(loaded: LoadedModel, ids: np.ndarray) -> dict[str, torch.Tensor]:
    device = loaded.device
    tensor = torch.from_numpy(np.ascontiguousarray(ids)).to(device)
    return {"input_ids": tensor, "attention_mask": torch.ones_like(tensor)}


def mean_interval(values: np.ndarray, bounds: tuple[float, float] = (0.0, 1.0),
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean over axis 0 of ``values`` (n, …) and its 95 % Student-t interval (NaN-skipping; clipped to
    ``bounds``). The t quantile from scipy.special (stdtrit), as :func:`inspector.analyses.census.summary.summarise`."""
    from scipy.special import stdtrit

    values = np.asarray(values, dtype=np.float64)
    finite = np.isfinite(values)
    n = finite.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(n > 0, np.where(finite, values, 0.0).sum(axis=0) / np.maximum(n, 1), np.nan)
        squares = np.where(finite, (values - mean) ** 2, 0.0).sum(axis=0)
        spread = np.sqrt(squares / np.maximum(n - 1, 1)) / np.sqrt(np.maximum(n, 1))
        half = np.where(n > 1, stdtrit(np.maximum(n - 1, 1), 0.5 + CONFIDENCE / 2) * spread, np.nan)
    return mean, np.clip(mean - half, *bounds), np.clip(mean + half, *bounds)


def _local_windows(records: Sequence, window: int) -> np.ndarray:
    """(L,) the local window of each layer: ``window``, or the layer's own sliding window when that is smaller."""
    return np.array([min(window, record.window) if record.window else window for record in records], dtype=np.int64)


def _takes_logits_to_keep(loaded: LoadedModel) -> bool:
    return "logits_to_keep" in inspect.signature(loaded.model.forward).parameters


def probe_forward(loaded: LoadedModel, probe: ProbeSpec, *, backend: str = "torch",
                  interventions: Sequence[Intervention] = (), for_causal: bool = False):
    """The probe's one unablated forward (:class:`inspector.core.forward.ForwardResult`): every layer's exact
    weights and the entropy statistic (the scores); with ``for_causal`` also every block's output (the causal test
    resumes from them) and the logits of every position (its baseline), else the language-model head only for the
    last position (the scores never read logits)."""
    keep_logits = None if for_causal or loaded.info.head != "causal-lm" or not _takes_logits_to_keep(loaded) else 1
    return forward(loaded, _inputs(loaded, probe.ids), backend=backend, weights_layers="all", stats=("entropy",),
                   interventions=interventions, keep_layer_outputs=for_causal and loaded.can_resume,
                   logits_to_keep=keep_logits)


def probe_scores(loaded: LoadedModel, probe: ProbeSpec, *, window: int = DEFAULT_WINDOW, backend: str = "torch",
                 interventions: Sequence[Intervention] = (), forwarded=None,
                 ) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray, np.ndarray]:
    """Per-sequence scores of every head on ``probe``: ({role: (batch, L, H) float64}, the first-token sink scores
    (batch, L, H), the layers' local windows (L,), the first sequence's weights (L, H, n, n) float32).
    ``forwarded``: the probe's :func:`probe_forward` when already run (the causal test shares it)."""
    repeat, n = probe.repeat, probe.length
    result = forwarded or probe_forward(loaded, probe, backend=backend, interventions=interventions)
    records = result.records
    windows = _local_windows(records, window)
    position = torch.arange(n)
    per_layer: dict[str, list[torch.Tensor]] = {"duplicate": [], "local": []}
    example, per_sequence_weights = [], []
    special = np.zeros(n, dtype=bool)
    special[0] = True
    for record, w in zip(records, windows):
        weights = record.weights.float().cpu()  # (batch, H, n, n)
        example.append(weights[0].numpy().copy())
        per_sequence_weights.append(weights)
        # Duplicate-token: row i of the second copy, key i − R (its own earlier occurrence).
        per_layer["duplicate"].append(torch.diagonal(weights[:, :, repeat + 1:, 1:], dim1=2, dim2=3).double()
                                      .mean(dim=-1))
        offset = position[:, None] - position[None, :]  # (n, n) i − j
        band = (offset >= 0) & (offset < w) if record.causal else offset.abs() < w
        per_layer["local"].append((weights * band).sum(dim=-1).double().mean(dim=-1))  # (batch, H)
    scores = {name: torch.stack(values, dim=1).numpy() for name, values in per_layer.items()}  # (batch, L, H)
    # Induction: Olsson et al.'s prefix matching through the Heads report's own definition, sequence by sequence.
    stacked = torch.stack(per_sequence_weights, dim=1).numpy()  # (batch, L, H, n, n)
    scores["induction"] = np.stack([induction_score(stacked[b], probe.ids[b], special)
                                    for b in range(probe.batch)]).astype(np.float64)
    # Previous-token, first-token sink and normalised entropy: the census's batched reductions (one computation).
    categories = np.zeros((probe.batch, n, 3), dtype=np.float64)
    categories[:, 0, 0] = 1.0
    reduced, _ = batch_statistics(records, lambda record: record.weights.float().clone(), [n] * probe.batch,
                                  categories)
    scores["previous"] = reduced["mass_previous"].cpu().numpy()
    scores["sink"] = reduced["first_token_sink"].cpu().numpy()
    scores["broad"] = reduced["entropy_normalized"].cpu().numpy()
    return scores, scores["sink"].copy(), windows, np.stack(example)


def dominant_roles(scores: dict[str, np.ndarray], thresholds: dict[str, float] | None = None) -> np.ndarray:
    """(L, H) the first role of :data:`ROLES` whose mean score (``scores[role]``: (L, H)) reaches its threshold,
    else ``none``."""
    thresholds = thresholds or ROLE_THRESHOLDS
    shape = scores[ROLES[0]].shape
    dominant = np.full(shape, NO_ROLE, dtype=object)
    for role in reversed(ROLES):
        with np.errstate(invalid="ignore"):
            dominant = np.where(scores[role] >= thresholds[role], role, dominant)
    return dominant.astype(str)


# ------------------------------------------------------------------------------------------------ causal test


def random_same_layer_heads(heads: Sequence[tuple[int, int]], num_heads: int, rng: np.random.Generator,
                            num_layers: int | None = None) -> tuple[tuple[int, int], ...]:
    """As many random heads as ``heads``, none of them one of ``heads``, layer for layer: in each layer, from the
    layer's other heads; where a layer has too few (every head of a small layer has the role), the rest from the
    other layers' heads (``num_layers`` given), so the comparison never ablates the role's own heads."""
    taken = set((int(layer), int(head)) for layer, head in heads)
    chosen: list[tuple[int, int]] = []
    missing = 0
    for layer in sorted({layer for layer, _ in taken}):
        wanted = sum(1 for other, _ in taken if other == layer)
        others = [h for h in range(num_heads) if (layer, h) not in taken]
        picked = rng.choice(others, size=min(wanted, len(others)), replace=False) if others else []
        chosen.extend((layer, int(h)) for h in picked)
        missing += wanted - len(picked)
    if missing:
        layers = range(num_layers) if num_layers is not None else sorted({layer for layer, _ in taken})
        pool = [(layer, h) for layer in layers for h in range(num_heads)
                if (layer, h) not in taken and (layer, h) not in chosen]
        if len(pool) < missing:
            raise InvalidRequestError(f"the causal test needs {len(taken)} heads that are not the role's own to "
                                      f"compare with, and the model has {len(pool) + len(chosen)} — pick a smaller "
                                      "--top-k")
        chosen.extend(pool[i] for i in rng.choice(len(pool), size=missing, replace=False))
    return tuple(sorted(chosen))


def _first_token_removed(selected: torch.Tensor):
    """A :class:`WeightEdit` function: the rows of sequences/heads where ``selected`` (batch, heads) is True lose the
    first key's weight and are renormalised over the rest (a row that sees only the first key keeps it)."""

    def edit(weights: torch.Tensor, visible: torch.Tensor) -> torch.Tensor:
        removed = weights.clone()
        removed[..., 0] = 0.0
        total = removed.sum(dim=-1, keepdim=True)
        renormalised = torch.where(total > 0, removed / total.clamp_min(1e-30), weights)
        return torch.where(selected.to(weights.device)[:, :, None, None], renormalised, weights)

    return edit


def _measured_positions(role: Role, repeat: int, n: int) -> np.ndarray:
    """Positions whose prediction (logits at p predict token p + 1) or hidden state the role's measure reads."""
    if role == "induction":
        return np.arange(repeat + 1, 2 * repeat)  # predicts tokens R + 2 … 2R: the repeat, after its first token
    if role == "previous":
        return np.arange(1, repeat)  # predicts tokens 2 … R
    # Sink: the first copy's positions 1 … R, ordinary next-token prediction from random context (position 0 sees
    # only the first key, which it keeps, so its output never changes). As many positions as the other roles read,
    # and a causal model's copies read only the first R + 1 tokens.
    return np.arange(1, repeat + 1)


@dataclass(frozen=True)
class _ChunkedHead:
    """The language-model head read a vocabulary chunk at a time: ``logits = softcap(hidden @ weight.T + bias)`` for
    :data:`_VOCAB_CHUNK` ids at once, so a measure over the vocabulary (a log-sum-exp, a target's logit, a dot product
    with a distribution) never holds a (rows × vocabulary) tensor and the matrix product stays in cache (about 15 %
    faster than one product over Gemma's 262k ids on this machine). Built only when it reproduces the model's own
    logits (:meth:`of`); a model whose head does more (a scale, a bias on the hidden state) keeps the model's head."""

    weight: torch.Tensor  # (vocab, hidden)
    bias: torch.Tensor | None  # (vocab,)
    softcap: float | None

    @classmethod
    def of(cls, loaded: LoadedModel, hidden: torch.Tensor, logits: torch.Tensor) -> _ChunkedHead | None:
        """The chunked twin of ``loaded``'s head, checked against the unablated probe's final hidden states
        ``hidden`` (batch, n, d) and its logits (batch, n, vocab) at the first sequence's last position; None when
        the model's head is not a plain linear layer (with Gemma 2's final soft-capping) or the check fails."""
        module = loaded.model.get_output_embeddings() if hasattr(loaded.model, "get_output_embeddings") else None
        if not isinstance(module, torch.nn.Linear) or module.weight.shape[0] != logits.shape[-1]:
            return None
        config = getattr(loaded.model.config, "get_text_config", lambda: loaded.model.config)()
        softcap = getattr(config, "final_logit_softcapping", None)
        head = cls(weight=module.weight.detach(), bias=None if module.bias is None else module.bias.detach(),
                   softcap=float(softcap) if softcap else None)
        row = hidden[:1, -1:].float()
        expected = logits[:1, -1:].float()
        mine = torch.cat([chunk for _, chunk in head.chunks(row)], dim=-1)
        scale = float(expected.abs().max()) or 1.0
        return head if torch.allclose(mine, expected, rtol=1e-4, atol=1e-4 * scale) else None

    def chunks(self, hidden: torch.Tensor):
        """(start, logits of ids start … start + chunk − 1) for ``hidden`` (…, d), chunk by chunk."""
        hidden = hidden.to(self.weight.dtype)
        for start in range(0, self.weight.shape[0], _VOCAB_CHUNK):
            stop = start + _VOCAB_CHUNK
            bias = None if self.bias is None else self.bias[start:stop]
            yield start, self._capped(torch.nn.functional.linear(hidden, self.weight[start:stop], bias).float())

    def target_logits(self, hidden: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """(…,) the logit of ``targets`` (…) for ``hidden`` (…, d): one dot product per row."""
        logit = (hidden.to(self.weight.dtype) * self.weight[targets]).sum(dim=-1)
        if self.bias is not None:
            logit = logit + self.bias[targets]
        return self._capped(logit.float())

    def _capped(self, logits: torch.Tensor) -> torch.Tensor:
        return logits if self.softcap is None else torch.tanh(logits / self.softcap) * self.softcap


@dataclass
class _BaseRun:
    """The unablated probe's forward (:func:`probe_forward` with ``for_causal``): its kept block outputs (for
    :class:`ResumeAt`) and its logits (causal LMs, (batch, n, vocab)) or final hidden states (encoders); ``head``:
    the chunked language-model head the ablated copies are measured with (None: they use the model's own)."""

    loaded: LoadedModel
    probe: ProbeSpec
    layer_outputs: list[torch.Tensor]
    logits: torch.Tensor | None
    hidden: torch.Tensor | None
    head: _ChunkedHead | None = None

    @classmethod
    def of(cls, loaded: LoadedModel, probe: ProbeSpec, forwarded) -> _BaseRun:
        outputs = forwarded.outputs
        causal_lm = loaded.info.head == "causal-lm"
        hidden = outputs.hidden_states[-1].detach()
        logits = outputs.logits.detach() if causal_lm else None
        return cls(loaded=loaded, probe=probe, layer_outputs=forwarded.layer_outputs, logits=logits,
                   hidden=None if causal_lm else hidden,
                   head=_ChunkedHead.of(loaded, hidden, logits) if causal_lm else None)

    def baseline(self, role: Role, positions: np.ndarray, targets: torch.Tensor | None) -> dict[str, torch.Tensor]:
        """What the unablated probe says at ``positions``: ``logp`` (batch, P) — the log-probability of
        ``targets``; or, for the sink's KL, ``p`` (batch, P, vocab) and ``plogp`` (batch, P) — Σ p log p; or, for an
        encoder, ``unit`` (batch, P, hidden) — the unit final hidden states."""
        index = torch.as_tensor(positions)
        if self.logits is None:
            hidden = self.hidden[:, index.to(self.hidden.device)]
            return {"unit": torch.nn.functional.normalize(hidden.float(), dim=-1)}
        log_probs = torch.log_softmax(self.logits[:, index.to(self.logits.device)].float(), dim=-1)
        if targets is not None:
            return {"logp": log_probs.gather(-1, targets.to(log_probs.device)[..., None])[..., 0]}
        probs = log_probs.exp()
        return {"p": probs, "plogp": torch.einsum("bpv,bpv->bp", probs, log_probs)}


def _base_run(loaded: LoadedModel, probe: ProbeSpec, backend: str, interventions: Sequence[Intervention] = (),
              ) -> _BaseRun:
    return _BaseRun.of(loaded, probe, probe_forward(loaded, probe, backend=backend, interventions=interventions,
                                                    for_causal=True))


def _copy_rises(loaded: LoadedModel, role: Role, base: dict[str, torch.Tensor], outputs, positions: np.ndarray,
                targets: torch.Tensor | None, copies: int, head: _ChunkedHead | None = None) -> list[np.ndarray]:
    """(batch,) the measure's rise per sequence for each of ``copies`` copies of the probe batch in ``outputs``:
    the loss rise (causal LM: induction, previous-token), the mean KL(p ‖ p′) (causal LM: sink) or the mean cosine
    distance of the final hidden states (encoders). Lean on memory: one log-sum-exp pass over the vocabulary and a
    gather or a row-wise dot product per copy, never a second (copies × batch × P × vocab) tensor; with ``head``
    (the chunked language-model head) the logits are made here from the final hidden states, a chunk at a time."""
    index = torch.as_tensor(positions)
    if "unit" in base:
        hidden = outputs.hidden_states[-1]
        unit = torch.nn.functional.normalize(hidden[:, index.to(hidden.device)].float(), dim=-1)
        batch = base["unit"].shape[0]
        return [(1.0 - (unit[c * batch:(c + 1) * batch] * base["unit"]).sum(dim=-1)).mean(dim=-1).double().cpu()
                .numpy() for c in range(copies)]
    if head is not None:
        return _chunked_rises(head, base, outputs.hidden_states[-1], index, targets, copies)
    logits = outputs.logits  # (copies × batch, P, vocab) with logits_to_keep, else (copies × batch, n, vocab)
    if logits.shape[1] != len(positions):
        logits = logits[:, index.to(logits.device)]
    logits = logits.float()
    rises = []
    batch = logits.shape[0] // copies
    for c in range(copies):
        part = logits[c * batch:(c + 1) * batch]
        lse = torch.logsumexp(part, dim=-1)  # (batch, P)
        if "p" in base:  # KL(p ‖ p′) = Σ p log p − Σ p · logits′ + log-sum-exp(logits′)
            kl = base["plogp"] - torch.einsum("bpv,bpv->bp", base["p"], part) + lse
            rises.append(kl.clamp_min(0).mean(dim=-1).double().cpu().numpy())
        else:  # −log p′(target) − (−log p(target))
            new = part.gather(-1, targets.to(part.device)[..., None])[..., 0] - lse
            rises.append((base["logp"] - new).mean(dim=-1).double().cpu().numpy())
    return rises


def _chunked_rises(head: _ChunkedHead, base: dict[str, torch.Tensor], hidden: torch.Tensor, index: torch.Tensor,
                   targets: torch.Tensor | None, copies: int) -> list[np.ndarray]:
    """:func:`_copy_rises` from the final hidden states (copies × batch, n, d) through the chunked head: every copy's
    log-sum-exp (and, for the KL, Σ p · logits′) accumulated chunk by chunk over the vocabulary."""
    rows = hidden[:, index.to(hidden.device)]  # (copies × batch, P, d)
    batch, count = rows.shape[0] // copies, rows.shape[1]
    flat = rows.reshape(copies, batch * count, rows.shape[-1])
    p = base["p"].reshape(batch * count, -1) if "p" in base else None
    lse_parts, dot = [], torch.zeros(copies, batch * count)
    for start, logits in head.chunks(flat):  # (copies, batch × P, chunk)
        lse_parts.append(torch.logsumexp(logits, dim=-1))
        if p is not None:
            dot += torch.einsum("crv,rv->cr", logits, p[:, start:start + logits.shape[-1]].to(logits.device)).cpu()
    lse = torch.logsumexp(torch.stack(lse_parts, dim=-1), dim=-1).cpu().reshape(copies, batch, count)
    if p is not None:  # KL(p ‖ p′) = Σ p log p − Σ p · logits′ + log-sum-exp(logits′)
        kl = base["plogp"].cpu() - dot.reshape(copies, batch, count) + lse
        return list(kl.clamp_min(0).mean(dim=-1).double().numpy())
    tiled = targets.to(rows.device).repeat(copies, 1)  # (copies × batch, P)
    new = head.target_logits(rows, tiled).cpu().reshape(copies, batch, count) - lse
    return list((base["logp"].cpu() - new).mean(dim=-1).double().numpy())


def causal_test(loaded: LoadedModel, probe: ProbeSpec, role: Role, heads: Sequence[tuple[int, int]], *,
                seeds: int = DEFAULT_SEEDS, seed: int = DEFAULT_SEED, backend: str = "torch",
                base_run: _BaseRun | None = None, interventions: Sequence[Intervention] = ()) -> CausalTest:
    """The causal test of ``role`` (one of :data:`CAUSAL_ROLES`) for ``heads`` against ``seeds`` draws of random
    heads of the same layers (see the module docstring). ``base_run``: the probe's unablated forward that kept its
    block outputs and logits (:func:`_base_run`), shared by the roles and the scores. ``interventions``: applied to
    every forward (the model under test is the model with them, e.g. a head forced into a role)."""
    if role not in CAUSAL_ROLES:
        raise InvalidRequestError(f"no causal test for the {role!r} role; choose one of {CAUSAL_ROLES}")
    info = loaded.info
    heads = tuple((int(layer), int(head)) for layer, head in heads)
    rng = np.random.default_rng([seed, CAUSAL_ROLES.index(role)])
    random_sets = tuple(random_same_layer_heads(heads, info.num_heads, rng, info.num_layers)
                        for _ in range(seeds))
    configs = (heads, *random_sets)
    base_run = base_run or _base_run(loaded, probe, backend, interventions)
    positions = _measured_positions(role, probe.repeat, probe.length)
    ids = torch.from_numpy(probe.ids)
    targets = ids[:, positions + 1] if role != "sink" and info.head == "causal-lm" else None
    base = base_run.baseline(role, positions, targets)
    first_layer = min(layer for config in configs for layer, _ in config)
    per_forward = max(1, _FORWARD_TOKENS // (probe.batch * probe.length))
    if info.head == "causal-lm" and base_run.head is None:
        per_forward = max(1, min(per_forward, _LOGITS_BUDGET // (probe.batch * len(positions) * info.vocab_size)))
    rises: list[np.ndarray] = []
    for start in range(0, len(configs), per_forward):
        group = configs[start:start + per_forward]
        rises.extend(_ablated_rises(loaded, probe, role, group, first_layer, base_run, positions, targets, base,
                                    backend, interventions))
    role_rises, random_rises = rises[0], np.array([r.mean() for r in rises[1:]])
    role_rise, role_low, role_high = (float(v) for v in mean_interval(role_rises, (-np.inf, np.inf)))
    random_mean, random_low, random_high = (float(v) for v in mean_interval(random_rises, (-np.inf, np.inf)))
    baseline = float((-base["logp"]).mean()) if targets is not None else 0.0
    measure = ("hidden" if info.head != "causal-lm" else "kl" if role == "sink" else "loss")
    return CausalTest(role=role, heads=heads, measure=measure, baseline=baseline, role_rise=role_rise,
                      role_low=role_low, role_high=role_high, random_heads=random_sets, random_rises=random_rises,
                      random_mean=random_mean, random_low=random_low, random_high=random_high,
                      causal=bool(role_low > max(random_high, 0.0)))


def _ablated_rises(loaded: LoadedModel, probe: ProbeSpec, role: Role, configs: Sequence[tuple[tuple[int, int], ...]],
                   first_layer: int, base_run: _BaseRun, positions: np.ndarray, targets: torch.Tensor | None,
                   base: dict[str, torch.Tensor], backend: str, extra: Sequence[Intervention] = (),
                   ) -> list[np.ndarray]:
    """One batched forward: copy c of the probe batch has ``configs[c]`` removed. (batch,) rises per config."""
    info, batch = loaded.info, probe.batch
    copies = len(configs)
    # A causal model's prediction at p never reads a later token: the copies read the probe up to the last measured
    # position (the previous-token test, half of it; the ablated heads' mean is over the tokens read).
    end = int(positions.max()) + 1 if info.causal else probe.length
    ids = np.tile(probe.ids[:, :end], (copies, 1))  # (copies × batch, end): copy c is rows c·batch … (c + 1)·batch − 1
    inputs = _inputs(loaded, ids)
    interventions = []
    for layer in sorted({layer for config in configs for layer, _ in config}):
        mask = torch.zeros(copies * batch, info.num_heads, dtype=torch.bool)
        for c, config in enumerate(configs):
            for at, head in config:
                if at == layer:
                    mask[c * batch:(c + 1) * batch, head] = True
        mask = mask.to(loaded.device)
        if role == "sink":
            interventions.append(WeightEdit(layer=layer, heads=tuple(range(info.num_heads)),
                                            edit=_first_token_removed(mask)))
        else:
            interventions.append(SequenceHeadAblation(layer=layer, mask=mask, mode="mean"))
    first_layer = min([first_layer, *(item.layer for item in extra)])
    interventions.extend(extra)
    resume = None
    if base_run.layer_outputs and first_layer > 0:
        resume = ResumeAt(layer=first_layer, outputs=tuple(
            out[:, :end].repeat(copies, *([1] * (out.dim() - 1))) for out in base_run.layer_outputs[:first_layer]))
    if info.head == "causal-lm" and _takes_logits_to_keep(loaded):  # the model's head: the measured positions only,
        kept = positions[:0] if base_run.head is not None else positions  # or none when the chunked head reads them
        inputs["logits_to_keep"] = torch.as_tensor(kept, device=loaded.device)
    result = forward(loaded, inputs, interventions=interventions, backend=backend, stats=(), resume=resume)
    tiled = targets.to(loaded.device) if targets is not None else None
    return _copy_rises(loaded, role, base, result.outputs, positions, tiled, copies, base_run.head)


# ------------------------------------------------------------------------------------------------ the whole view


def head_roles(loaded: LoadedModel, *, repeat: int | None = None, batch: int = DEFAULT_BATCH,
               top_k: int = DEFAULT_TOP_K, window: int = DEFAULT_WINDOW, seed: int = DEFAULT_SEED,
               seeds: int = DEFAULT_SEEDS, backend: str = "torch", causal: bool = True,
               thresholds: dict[str, float] | None = None, interventions: Sequence[Intervention] = (),
               ) -> RolesResult:
    """Probe every head of ``loaded`` (``repeat`` random ids, default :func:`default_repeat`; ``batch``
    sequences; ``seed``), assign dominant roles, and — when ``causal`` — run the causal test of the top ``top_k``
    heads of each role of :data:`CAUSAL_ROLES` against ``seeds`` random draws. Raises
    :class:`InvalidRequestError` for bad options (:func:`check_options`). ``interventions`` apply to every forward
    (the roles of an edited model: a head forced into a role by a :class:`kernels.hf.WeightEdit`)."""
    info = loaded.info
    repeat = default_repeat(loaded) if repeat is None else repeat
    check_options(repeat=repeat, batch=batch, top_k=top_k, window=window, seeds=seeds,
                  num_heads=info.num_layers * info.num_heads // 2, max_positions=info.max_positions)
    thresholds = dict(thresholds or ROLE_THRESHOLDS)
    probe = make_probe(loaded, repeat=repeat, batch=batch, seed=seed)
    # One unablated forward for both parts: the weights for the scores, the block outputs and logits for the test.
    forwarded = probe_forward(loaded, probe, backend=backend, interventions=interventions, for_causal=causal)
    per_sequence, sink_scores, windows, example = probe_scores(loaded, probe, window=window, backend=backend,
                                                               forwarded=forwarded)
    scores, low, high = {}, {}, {}
    for role in ROLES:
        mean, bottom, top = mean_interval(per_sequence[role])
        scores[role], low[role], high[role] = (np.clip(mean, 0, 1).astype(np.float32), bottom.astype(np.float32),
                                               top.astype(np.float32))
    sink_rate = (sink_scores > SINK_EPSILON).mean(axis=0).astype(np.float32)
    dominant = dominant_roles(scores, thresholds)
    result = RolesResult(model=info.name, probe=probe, window=window, top_k=top_k, seeds=seeds, thresholds=thresholds,
                         scores=scores, low=low, high=high, sink_rate=sink_rate, dominant=dominant, windows=windows,
                         weights_example=example)
    if not causal:
        return result
    base_run = _BaseRun.of(loaded, probe, forwarded)
    del forwarded  # the records' weights are in the scores now
    tests = tuple(causal_test(loaded, probe, role, result.top_heads(role), seeds=seeds, seed=seed, backend=backend,
                              base_run=base_run, interventions=interventions) for role in CAUSAL_ROLES)
    return RolesResult(**{**result.__dict__, "tests": tests})


# ------------------------------------------------------------------------------------------------ words and JSON


def role_name(role: str, lang: str = DEFAULT_LANGUAGE) -> str:
    """A role's name in ``lang`` (catalogue family ``roles.role.{role}``; ``none`` included)."""
    return t(f"roles.role.{role}", lang)


def _heads_words(heads: Sequence[tuple[int, int]]) -> str:
    return ", ".join(f"L{layer}H{head}" for layer, head in heads)


def verdict(test: CausalTest, lang: str = DEFAULT_LANGUAGE) -> str:
    """The causal test's verdict line, from its numbers."""
    values = dict(role=role_name(test.role, lang), heads=_heads_words(test.heads),
                  measure=t(f"roles.measure.{test.role}_{test.measure}", lang),
                  rise=f"{test.role_rise:+.3f}", low=f"{test.role_low:+.3f}", high=f"{test.role_high:+.3f}",
                  random=f"{test.random_mean:+.3f}", rlow=f"{test.random_low:+.3f}",
                  rhigh=f"{test.random_high:+.3f}", seeds=len(test.random_heads))
    return t("roles.verdict.causal" if test.causal else "roles.verdict.not_causal", lang, **values)


def roles_report(result: RolesResult, lang: str = DEFAULT_LANGUAGE, *, per_role: int | None = None) -> list[str]:
    """Plain-words lines: the probe, the top induction and previous-token heads with their scores and intervals,
    the count of heads per dominant role, and each causal verdict."""
    probe = result.probe
    lines = [t("roles.report.probe", lang, batch=probe.batch, repeat=probe.repeat, low=probe.id_low,
               high=probe.id_high, seed=probe.seed, window=result.window)]
    for role in ("induction", "previous"):
        heads = result.top_heads(role, per_role)
        shown = ", ".join(f"L{layer}H{head} {result.scores[role][layer, head]:.2f} "
                          f"({result.low[role][layer, head]:.2f}–{result.high[role][layer, head]:.2f})"
                          for layer, head in heads)
        lines.append(t("roles.report.top", lang, role=role_name(role, lang), heads=shown))
    counts = {role: int((result.dominant == role).sum()) for role in (*ROLES, NO_ROLE)}
    lines.append(t("roles.report.counts", lang, counts="; ".join(f"{role_name(role, lang)} {n}"
                                                                  for role, n in counts.items())))
    lines.extend(verdict(test, lang) for test in result.tests)
    return lines


def roles_json(result: RolesResult, lang: str = DEFAULT_LANGUAGE) -> dict:
    """The result as JSON: probe (repeat, batch, seed, id range, BOS), thresholds, per-role (L, H) grids of mean,
    low and high, sink rate, dominant roles, windows, the causal tests and the report lines."""
    probe = result.probe
    return to_jsonable({
        "model": result.model,
        "probe": {"repeat": probe.repeat, "batch": probe.batch, "seed": probe.seed, "bos_id": probe.bos_id,
                  "id_range": [probe.id_low, probe.id_high], "candidates": probe.candidates,
                  "length": probe.length, "ids": probe.ids},
        "window": result.window, "windows": result.windows, "top_k": result.top_k, "seeds": result.seeds,
        "thresholds": result.thresholds, "sink_epsilon": SINK_EPSILON,
        "scores": {role: {"mean": result.scores[role], "low": result.low[role], "high": result.high[role]}
                   for role in ROLES},
        "sink_rate": result.sink_rate,
        "dominant": result.dominant.tolist(),
        "top": {role: [{"layer": layer, "head": head, "score": float(result.scores[role][layer, head])}
                       for layer, head in result.top_heads(role)] for role in ROLES},
        "causal_tests": [{"role": test.role, "heads": [list(h) for h in test.heads], "measure": test.measure,
                          "baseline": test.baseline, "role_rise": test.role_rise,
                          "role_interval": [test.role_low, test.role_high],
                          "random_heads": [[list(h) for h in heads] for heads in test.random_heads],
                          "random_rises": test.random_rises, "random_mean": test.random_mean,
                          "random_interval": [test.random_low, test.random_high], "causal": test.causal,
                          "verdict": verdict(test, lang)} for test in result.tests],
        "report": roles_report(result, lang),
    })
