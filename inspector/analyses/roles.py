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

The **causal test** (a pattern seen is not a pattern used: the top heads of a role removed against random heads of the
same layers) and :func:`~inspector.analyses.roles_causal.head_roles`, the whole view, are in
:mod:`inspector.analyses.roles_causal`; :func:`roles_json` is the result's JSON, and the plain words are
:mod:`inspector.charts.sentences.roles`' (``python -m inspector heads --roles``).
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import torch

from inspector.analyses.batching import batch_statistics
from inspector.analyses.metrics import induction_score
from inspector.base.display import Displayable
from inspector.base.errors import InvalidRequestError
from inspector.base.jsonable import to_jsonable
from inspector.core.forward import forward
from inspector.core.loading import LoadedModel
from inspector.core.outputs import takes_logits_to_keep
from kernels.hf import Intervention

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
# Bounds that keep a typed-in option from running forever or overflowing (issue 45, item 7: --seeds 10**12 ran
# with memory growing, --window 10**30 overflowed a C long). A window past any model's positions means "no limit".
MAX_SEEDS = 100
MAX_WINDOW = 1 << 20
MAX_SEED = 2**63 - 1


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
class RolesResult(Displayable):
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
                  max_positions: int | None = None, seed: int | None = None) -> None:
    """Refuse bad probe options with one :class:`InvalidRequestError` saying what, why and the fix (before any
    forward; ``num_heads`` — layers × heads — and ``max_positions`` once a model is known)."""
    if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 2:
        raise InvalidRequestError(f"the probe repeats {repeat!r} random tokens; it needs at least 2 (an induction "
                                  "target is the token after an earlier occurrence) — use --repeat 2 or more")
    if not isinstance(batch, int) or not 2 <= batch <= MAX_BATCH:
        raise InvalidRequestError(f"the probe batch is {batch!r} sequences; an interval needs 2 to {MAX_BATCH} — "
                                  "use --batch in that range")
    if not isinstance(window, int) or not 1 <= window <= MAX_WINDOW:
        raise InvalidRequestError(f"the local window is {_shown(window)} tokens; it must be 1 to {MAX_WINDOW:,} — use "
                                  "--window in that range")
    if not isinstance(seeds, int) or not 2 <= seeds <= MAX_SEEDS:
        raise InvalidRequestError(f"the causal test draws random heads with {_shown(seeds)} seeds; an interval needs "
                                  f"2 to {MAX_SEEDS} — use --seeds in that range")
    if seed is not None and (not isinstance(seed, int) or not 0 <= seed <= MAX_SEED):
        raise InvalidRequestError(f"the probe seed is {_shown(seed)}; it must be a whole number from 0 to 2^63 − 1 — "
                                  "use --seed 0, say")
    if isinstance(top_k, int) and top_k < 1:
        raise InvalidRequestError(f"--top-k is {top_k}; the causal test ablates at least 1 head — use --top-k 1 or "
                                  "more")
    if not isinstance(top_k, int) or (num_heads is not None and top_k > num_heads):
        limit = (f" and at most {num_heads}, half the model's heads (as many random heads are its comparison)"
                 if num_heads is not None else "")
        raise InvalidRequestError(f"--top-k is {top_k!r}; the causal test ablates at least 1 head{limit} — "
                                  "pick a smaller --top-k")
    if max_positions is not None and 2 * repeat + 1 > max_positions:
        raise InvalidRequestError(f"the probe is 2 × {repeat} + 1 = {2 * repeat + 1} tokens; this model reads at most "
                                  f"{max_positions} — use --repeat {(max_positions - 1) // 2} or less")


def _shown(value: object) -> str:
    """A number for a message, a huge one cut to its first digits (a 10**30 typed in stays one short line)."""
    text = repr(value)
    return text if len(text) <= 24 else text[:12] + "…"


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
    vocab = int(loaded.info.vocab_size)
    excluded = set(int(i) for i in loaded.codec.all_special_ids())
    excluded.update(int(i) for i in loaded.codec.added_tokens())
    ids = np.arange(vocab, dtype=np.int64)
    tokens = loaded.codec.token_strings(ids.tolist())
    keep = np.array([i not in excluded and isinstance(token, str) and not _MARKER.fullmatch(token)
                     for i, token in zip(ids.tolist(), tokens)], dtype=bool)
    return ids[keep]


def _bos_id(loaded: LoadedModel) -> int:
    configured = getattr(loaded.model.config, "bos_token_id", None)
    if isinstance(configured, int) and 0 <= configured < loaded.info.vocab_size:
        return configured
    for role in ("bos", "cls", "eos", "pad"):
        value = loaded.codec.special_token_id(role)
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


def probe_inputs(loaded: LoadedModel, ids: np.ndarray) -> dict[str, torch.Tensor]:
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


def local_windows(records: Sequence, window: int) -> np.ndarray:
    """(L,) the local window of each layer: ``window``, or the layer's own sliding window when that is smaller."""
    return np.array([min(window, record.window) if record.window else window for record in records], dtype=np.int64)


def probe_forward(loaded: LoadedModel, probe: ProbeSpec, *, backend: str = "torch",
                  interventions: Sequence[Intervention] = (), for_causal: bool = False):
    """The probe's one unablated forward (:class:`inspector.core.forward.ForwardResult`): every layer's exact
    weights and the entropy statistic (the scores); with ``for_causal`` also every block's output (the causal test
    resumes from them) and the logits of every position (its baseline), else the language-model head only for the
    last position (the scores never read logits)."""
    keep_logits = None if for_causal or loaded.info.head != "causal-lm" or not takes_logits_to_keep(loaded) else 1
    return forward(loaded, probe_inputs(loaded, probe.ids), backend=backend, weights_layers="all", stats=("entropy",),
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
    windows = local_windows(records, window)
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


def roles_json(result: RolesResult, *, verdicts: Sequence[str], report: Sequence[str]) -> dict:
    """The result as JSON: probe (repeat, batch, seed, id range, BOS), thresholds, per-role (L, H) grids of mean,
    low and high, sink rate, dominant roles, windows, the causal tests with their ``verdicts`` (one per test) and the
    ``report`` lines — the words in the reader's language, from :func:`inspector.charts.sentences.roles.roles_words`."""
    if len(verdicts) != len(result.tests):
        raise ValueError(f"{len(verdicts)} verdicts for {len(result.tests)} causal tests")
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
                          "verdict": verdicts[i]} for i, test in enumerate(result.tests)],
        "report": list(report),
    })
