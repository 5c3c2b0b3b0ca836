"""The attribution methods, behind one contract and one registry (as Captum's ``attr/_core``).

The contract: an :class:`AttributionMethod` takes a :class:`MethodContext` — the prepared problem (model, text,
target f), its baseline forward and the layer/head/query the layer-local methods read — and returns one score
per token, ``(q_len,)`` float64, higher = more support for f (NaN where a method has no score, e.g. occlusion on
protected tokens). Each method also says whether it satisfies completeness (Σ scores = f(x) − f(baseline); it
then reports its convergence delta), whether it reads the attention weights and whether it reads the chosen
layer/head/query, and whether it needs gradients. Work several methods share (the gradient ∂f/∂e behind both
saliency and gradient × input, the occlusion scores the head grid compares against) is computed once through the
context's cache, never by one method writing another's result.

Adding a method is one decorated function here (or in a caller's module) — :func:`attribution_method` —
and :func:`inspector.analyses.attribution.attribute`, the page, the command line and the ground-truth scoreboard pick it
up from :data:`REGISTRY`.

The built-in methods, in :data:`METHODS` order:

- ``attention`` — the raw weights of a chosen layer/head (or the mean over heads) from a chosen query row.
  Cheap, but a weight says where a head *read*, not what the output *needed* (Jain & Wallace 2019).
- ``rollout`` — attention rollout (Abnar & Zuidema 2020): Ã = (A + I)/2 with A the mean over heads, rows
  renormalised, R = Ã_L ⋯ Ã_1, the query's row of R. Prefer it to raw attention when asking about the input
  tokens rather than one layer's mixed representations.
- ``norm`` — norm-weighted attention (Kobayashi et al. 2020): ‖Σ_h α^h_ij f^h(x_j)‖ with
  f^h(x) = (x W_V^h + b_V^h) W_O^h (one head: α_ij ‖f^h(x_j)‖). Prefer it to raw weights: a large weight on a
  token whose transformed value is tiny (e.g. [SEP]) moves nothing.
- ``gradient`` — saliency: ‖∂f/∂e_j‖₂ over the input embedding e_j (Captum ``Saliency``). Local, unsigned.
- ``grad_x_input`` — Σ_d e_jd ∂f/∂e_jd (Captum's ``InputXGradient``, from the same gradient), signed; the
  quantity Jain & Wallace use.
- ``integrated_gradients`` — Sundararajan et al. 2017 (Captum ``IntegratedGradients``, Gauss–Legendre):
  satisfies completeness, Σ_j IG_j = f(x) − f(baseline), up to the convergence delta shown. Baseline: every
  non-special token's embedding replaced by the tokenizer's pad token's (zeros without one), special tokens
  and a masked LM's [MASK] kept. Prefer it to gradients when saturation makes local gradients misleading.
- ``occlusion`` — leave-one-out: f(x) − f(x without token j), j replaced by [MASK] (Captum
  ``FeatureAblation`` on the embeddings; [UNK], then [PAD], for tokenizers without a mask token) or deleted
  (by hand: Captum has no deletion). The direct causal test for one token, blind to interactions.
- ``value_zeroing`` — Mohebbi et al. 2023: cosine distance between the query's output of the chosen layer
  and the same output with token j's value vectors zeroed in every head (through :class:`WeightEdit`, since
  zeroing a value = zeroing its weight column without renormalising). Layer-local, like attention.
- ``random`` — a seeded random score: the floor every method should beat.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from inspector.analyses.attribution.targets import (
    Problem,
    RemovalMode,
    batch_size_for,
    embed_forward,
    evaluate_rows,
    replacement_id,
    token_embeddings,
)
from inspector.base.i18n import CATALOGUE, DEFAULT_LANGUAGE, t
from inspector.core.forward import ForwardResult, forward
from inspector.core.outputs import head_writes, takes_logits_to_keep
from kernels.hf import WeightEdit

# ------------------------------------------------------------------------------------------ the context

# Integrated gradients' completeness (Sundararajan et al. 2017): Σ attributions = f(x) − f(baseline). A convergence
# delta above this share of |f(x) − f(baseline)| is flagged on the page: the Riemann/Gauss sum missed more than 5 %.
COMPLETENESS_GAP = 0.05


@dataclass(frozen=True)
class IntegratedGradientsRun:
    """Integrated gradients' bookkeeping. steps: Gauss–Legendre points; internal_batch_size: sequences per
    forward; delta: Captum's convergence delta Σ attributions − (f(x) − f(baseline)); baseline_value:
    f(baseline); baseline: how the baseline was built, in words; pad_token: the token whose embedding replaced the
    content tokens' (the tokenizer's own pad token, ``<pad>`` on Gemma), None when zeros did (no pad token)."""

    steps: int
    internal_batch_size: int
    delta: float
    baseline_value: float
    baseline: str
    pad_token: str | None = None

    def relative_gap(self, value: float) -> float:
        """|delta| / |f(x) − f(baseline)| for ``value`` = f(x): the share of the change to explain that the
        attributions miss (inf when f(x) = f(baseline) and delta ≠ 0; 0 when both are 0)."""
        change = abs(value - self.baseline_value)
        if change > 0:
            return abs(self.delta) / change
        return 0.0 if self.delta == 0 else math.inf

    def incomplete(self, value: float) -> bool:
        """Whether completeness fails by more than :data:`COMPLETENESS_GAP` of the change (issue 44: a gap of 15
        went unflagged) — then the scores do not add up to f(x) − f(baseline): more steps, or a gentler path."""
        return self.relative_gap(value) > COMPLETENESS_GAP


@dataclass(eq=False)
class MethodContext:
    """What every method receives: the problem, its baseline forward, what the layer-local methods read and
    the settings some methods need. Internal (holds live tensors); shared intermediate results are computed
    once on first use (:meth:`shared`).

    layer: the chosen layer; head: the chosen head (None = mean over heads); query: the chosen query row;
    ig_steps: integrated-gradients points; removal: occlusion by [MASK] or deletion; seed: for random scores."""

    problem: Problem
    base: ForwardResult
    layer: int
    head: int | None
    query: int
    ig_steps: int = 16
    removal: RemovalMode = "mask"
    seed: int = 0
    _shared: dict[str, object] = field(default_factory=dict, repr=False)

    @property
    def n(self) -> int:
        return self.problem.n

    def shared(self, key: str, compute: Callable[[], object]) -> object:
        """``compute()`` the first time ``key`` is asked for, the same object afterwards."""
        if key not in self._shared:
            self._shared[key] = compute()
        return self._shared[key]

    def weights(self, layer: int) -> torch.Tensor:
        """(heads, n, n) float32 attention weights of ``layer`` in the baseline forward."""
        return self.base.records[layer].weights[0].float()

    def query_rows(self) -> np.ndarray:
        """(layers, heads, n) float64: every head's attention row from the query, every layer."""
        return self.shared("query_rows", lambda: np.stack([
            self.weights(layer)[:, self.query, :].cpu().numpy() for layer in range(self.problem.loaded.info.num_layers)
        ]).astype(np.float64))

    def embeddings(self) -> torch.Tensor:
        """(1, n, hidden) input (word) embeddings of the text."""
        return self.shared("embeddings", lambda: token_embeddings(self.problem, self.problem.input_ids))

    def gradient(self) -> torch.Tensor:
        """(1, n, hidden) ∂f/∂e at the text's embeddings (Captum ``Saliency``, signed): one backward shared by
        saliency and gradient × input."""

        def compute() -> torch.Tensor:
            from captum.attr import Saliency

            embeds = self.embeddings().clone().requires_grad_(True)
            return Saliency(embed_forward(self.problem)).attribute(embeds, abs=False).detach()

        return self.shared("gradient", compute)

    def occlusion(self) -> np.ndarray:
        """(n,) leave-one-out scores (NaN for protected tokens): the occlusion method's scores, and what the
        layer × head grid compares each head with."""
        return self.shared("occlusion", lambda: _occlusion(self.problem, self.removal, self.embeddings()))

    def integrated_gradients(self) -> tuple[np.ndarray, IntegratedGradientsRun]:
        """(n,) integrated gradients and the run's bookkeeping (one Captum run)."""
        return self.shared("integrated_gradients", lambda: _integrated_gradients(self.problem, self.embeddings(),
                                                                                 self.ig_steps))


# ------------------------------------------------------------------------------------ the contract, registry

Scorer = Callable[[MethodContext], np.ndarray]


@dataclass(frozen=True)
class AttributionMethod:
    """One attribution method. name: the registry key (URLs, JSON, ``--methods``); label: for people;
    score: the contract, context → (n,) scores; completeness: Σ scores = f(x) − f(baseline) holds, up to the
    delta ``convergence`` reports; reads_attention: the scores are built from the attention weights;
    layer_local: it reads the chosen layer (and head, query row) rather than the whole model;
    needs_gradients: it runs a backward pass."""

    name: str
    label: str
    score: Scorer
    completeness: bool = False
    convergence: Callable[[MethodContext], IntegratedGradientsRun] | None = None
    reads_attention: bool = False
    layer_local: bool = False
    needs_gradients: bool = False

    def __post_init__(self) -> None:
        if not self.name.isidentifier():
            raise ValueError(f"an attribution method's name must be an identifier, got {self.name!r}")
        if self.completeness != (self.convergence is not None):
            raise ValueError(f"method {self.name!r}: a method that satisfies completeness reports its convergence "
                             "delta (and only such a method does)")

    def __call__(self, context: MethodContext) -> np.ndarray:
        """(n,) float64 scores; raises ValueError if the method broke the contract."""
        scores = np.asarray(self.score(context), dtype=np.float64)
        if scores.shape != (context.n,):
            raise ValueError(f"method {self.name!r} returned scores of shape {scores.shape}, expected {(context.n,)}")
        return scores


REGISTRY: dict[str, AttributionMethod] = {}


def register(method: AttributionMethod) -> AttributionMethod:
    """Add ``method`` to :data:`REGISTRY` (after the methods already there)."""
    if method.name in REGISTRY:
        raise ValueError(f"an attribution method named {method.name!r} is already registered")
    REGISTRY[method.name] = method
    return method


def unregister(name: str) -> None:
    """Remove a method added with :func:`register`; the built-in :data:`METHODS` stay."""
    if name in METHODS:
        raise ValueError(f"{name!r} is a built-in attribution method and cannot be removed")
    REGISTRY.pop(name, None)


def attribution_method(name: str, label: str, **facts) -> Callable[[Scorer], Scorer]:
    """Decorator: register the decorated context → scores function as method ``name`` (``facts``: the other
    fields of :class:`AttributionMethod`)."""

    def decorate(score: Scorer) -> Scorer:
        register(AttributionMethod(name=name, label=label, score=score, **facts))
        return score

    return decorate


class _Labels(Mapping[str, str]):
    """The registry's labels by name, read live: a method registered later is labelled everywhere too."""

    def __getitem__(self, name: str) -> str:
        return REGISTRY[name].label

    def __iter__(self) -> Iterator[str]:
        return iter(REGISTRY)

    def __len__(self) -> int:
        return len(REGISTRY)

    def __repr__(self) -> str:
        return repr(dict(self))


METHOD_LABELS: Mapping[str, str] = _Labels()


def method_label(method: str, lang: str = DEFAULT_LANGUAGE) -> str:
    """Method ``method``'s label for people in ``lang``: in English exactly :data:`METHOD_LABELS`' label, in another
    language the catalogue's ``method.<name>``. A method registered later with no catalogue entry keeps its own
    label in every language (its author named it). Raises KeyError for a name not registered, as
    :data:`METHOD_LABELS` does."""
    label = METHOD_LABELS[method]
    key = f"method.{method}"
    return t(key, lang) if lang != DEFAULT_LANGUAGE and key in CATALOGUE else label


# ------------------------------------------------------------------------------------------ the methods

def attention_rollout(weights: Sequence[np.ndarray]) -> np.ndarray:
    """Abnar & Zuidema (2020): weights per layer (heads, n, n) → R (n, n) = Ã_L ⋯ Ã_1 with
    Ã = (mean_h A + I)/2, rows renormalised. Row i: how much token i's top representation draws on each
    input token through the residual and attention paths."""
    n = weights[0].shape[-1]
    rollout = np.eye(n)
    for layer_weights in weights:
        mixed = 0.5 * (layer_weights.mean(axis=0) + np.eye(n))
        mixed = mixed / mixed.sum(axis=-1, keepdims=True)
        rollout = mixed @ rollout
    return rollout


@attribution_method("attention", "raw attention", reads_attention=True, layer_local=True)
def _attention(context: MethodContext) -> np.ndarray:
    row = context.weights(context.layer)[:, context.query, :]  # (heads, n)
    chosen = row.mean(dim=0) if context.head is None else row[context.head]  # (n,)
    return chosen.detach().double().cpu().numpy()


@attribution_method("rollout", "attention rollout", reads_attention=True)
def _rollout(context: MethodContext) -> np.ndarray:
    layers = range(context.problem.loaded.info.num_layers)
    rollout = attention_rollout([context.weights(i).cpu().numpy().astype(np.float64) for i in layers])
    return rollout[context.query]


@attribution_method("norm", "norm-weighted attention", reads_attention=True, layer_local=True)
def _norm_weighted(context: MethodContext) -> np.ndarray:
    """Kobayashi et al. (2020): ‖Σ_h α^h_qj f^h(x_j)‖ (one head: α^h_qj ‖f^h(x_j)‖), f^h(x) = v^h W_O^h."""
    layer = context.layer
    record = context.base.records[layer]
    transformed = head_writes(context.problem.loaded, layer, record.tensors["value"][0])  # (heads, n, hidden)
    alpha = context.weights(layer)[:, context.query, :]  # (heads, n)
    if context.head is not None:
        return (alpha[context.head] * transformed[context.head].norm(dim=-1)).cpu().numpy()
    return (alpha[..., None] * transformed).sum(dim=0).norm(dim=-1).cpu().numpy()


@attribution_method("gradient", "gradient (saliency)", needs_gradients=True)
def _saliency(context: MethodContext) -> np.ndarray:
    return context.gradient()[0].float().norm(dim=-1).double().cpu().numpy()


@attribution_method("grad_x_input", "gradient × input", needs_gradients=True)
def _gradient_times_input(context: MethodContext) -> np.ndarray:
    product = context.embeddings() * context.gradient()  # (1, n, hidden): Captum's InputXGradient
    return product[0].float().sum(dim=-1).double().cpu().numpy()


def _integrated_gradients(problem: Problem, embeds: torch.Tensor,
                          steps: int) -> tuple[np.ndarray, IntegratedGradientsRun]:
    from captum.attr import IntegratedGradients

    f = embed_forward(problem)
    pad_id = problem.loaded.codec.special_token_id("pad")
    pad_token = None if pad_id is None else problem.loaded.codec.special_token("pad")
    content = torch.as_tensor(~problem.protected, device=problem.device)
    if pad_id is not None:
        pad = token_embeddings(problem, torch.tensor([pad_id]))
        described = f"every non-special token's embedding replaced by the {pad_token} embedding; special tokens kept"
    else:
        pad = torch.zeros(1, embeds.shape[-1], device=problem.device, dtype=embeds.dtype)
        described = "every non-special token's embedding replaced by zeros (no pad token); special tokens kept"
    baseline = torch.where(content[None, :, None], pad[None], embeds)
    batch = batch_size_for(problem.loaded, problem.n, backward=True, budget_bytes=problem.budget_bytes, most=steps)
    attributions, delta = IntegratedGradients(f).attribute(
        embeds, baselines=baseline, n_steps=steps, method="gausslegendre", internal_batch_size=batch,
        return_convergence_delta=True)
    with torch.no_grad():
        baseline_value = float(f(baseline)[0])
    scores = attributions[0].float().sum(dim=-1).detach().double().cpu().numpy()
    return scores, IntegratedGradientsRun(steps=steps, internal_batch_size=batch, delta=float(delta[0]),
                                          baseline_value=baseline_value, baseline=described, pad_token=pad_token)


@attribution_method("integrated_gradients", "integrated gradients", needs_gradients=True, completeness=True,
                    convergence=lambda context: context.integrated_gradients()[1])
def _integrated(context: MethodContext) -> np.ndarray:
    return context.integrated_gradients()[0]


def occlusion_on_embeddings(f: Callable[[torch.Tensor], torch.Tensor], embeds: torch.Tensor,
                            replacement: torch.Tensor, positions: Sequence[int], per_eval: int = 32) -> np.ndarray:
    """Occlusion with Captum's ``FeatureAblation``: f(x) − f(x with the embedding at each of ``positions``
    replaced by ``replacement`` (hidden,)). embeds: (1, n, hidden); f maps (batch, n, hidden) → (batch,).
    Returns (len(positions),) float64."""
    from captum.attr import FeatureAblation

    positions = torch.as_tensor(list(positions), dtype=torch.long)
    baseline = embeds.clone()
    baseline[0, positions] = replacement.to(embeds.dtype)
    # One feature per token; tokens outside ``positions`` keep their own embedding as the baseline (no effect).
    feature_mask = torch.arange(embeds.shape[1], device=embeds.device)[None, :, None].expand_as(embeds)
    with torch.no_grad():
        attributions = FeatureAblation(f).attribute(embeds, baselines=baseline, feature_mask=feature_mask,
                                                    perturbations_per_eval=per_eval)
    return attributions[0, positions, 0].detach().double().cpu().numpy()


def leave_one_out(evaluate: Callable[[list[list[int]]], np.ndarray], ids: Sequence[int], positions: Sequence[int],
                  f0: float) -> np.ndarray:
    """Deletion occlusion: f0 − f(ids without token j) for each j in ``positions`` ((len(positions),) float64);
    ``evaluate`` maps token-id rows of any lengths to f values."""
    rows = [[t for i, t in enumerate(ids) if i != j] for j in positions]
    return f0 - np.asarray(evaluate(rows), dtype=float)


def _occlusion(problem: Problem, mode: RemovalMode, embeds: torch.Tensor) -> np.ndarray:
    """Leave-one-out f(x) − f(x without j) for content tokens (NaN for protected ones)."""
    content = np.flatnonzero(~problem.protected)
    scores = np.full(problem.n, np.nan)
    if mode == "mask":
        replacement, _ = replacement_id(problem.loaded)
        stand_in = token_embeddings(problem, torch.tensor([replacement]))
        chunk = batch_size_for(problem.loaded, problem.n, backward=False, budget_bytes=problem.budget_bytes)
        scores[content] = occlusion_on_embeddings(embed_forward(problem), embeds, stand_in[0], content, chunk)
    else:
        scores[content] = leave_one_out(lambda rows: evaluate_rows(problem, rows)[0],
                                        problem.input_ids[0].tolist(), content, problem.target.value)
    return scores


@attribution_method("occlusion", "occlusion (leave-one-out)")
def _leave_one_out(context: MethodContext) -> np.ndarray:
    return context.occlusion()


@attribution_method("value_zeroing", "value zeroing", layer_local=True)
def _value_zeroing(context: MethodContext) -> np.ndarray:
    """Mohebbi et al. (2023): 1 − cos(h_q, h_q with token j's values zeroed in every head of the layer), the
    layer's output at the query, one batched forward with token j's weight column zeroed in sequence j (starting
    at the layer where the model can: below it each sequence is the text itself)."""
    problem, layer, query = context.problem, context.layer, context.query
    n, heads = problem.n, problem.loaded.info.num_heads
    original = context.base.outputs.hidden_states[layer + 1][0, query].float()
    scores = np.zeros(n)
    chunk = batch_size_for(problem.loaded, n, backward=False, budget_bytes=problem.budget_bytes)
    # Only a hidden state is read: a causal LM's head (Gemma 3's 262k words) runs at no position.
    no_logits = (torch.zeros(0, dtype=torch.long, device=problem.device)
                 if takes_logits_to_keep(problem.loaded) else None)
    for start in range(0, n, chunk):
        columns = torch.arange(start, min(start + chunk, n), device=problem.device)
        keep = torch.ones(len(columns), n, device=problem.device)
        keep[torch.arange(len(columns)), columns] = 0.0  # (batch, n): sequence b zeroes column start + b

        def zero_column(weights: torch.Tensor, visible: torch.Tensor, keep=keep) -> torch.Tensor:
            return weights * keep[:, None, None, :]

        inputs = {"input_ids": problem.input_ids.expand(len(columns), -1),
                  "attention_mask": problem.attention_mask.expand(len(columns), -1)}
        result = forward(problem.loaded, inputs, backend=problem.backend, stats=(),
                         interventions=[WeightEdit(layer, tuple(range(heads)), zero_column)], logits_to_keep=no_logits,
                         resume=problem.resume_at(layer, len(columns)))  # below the layer: the text itself
        changed = result.outputs.hidden_states[layer + 1][:, query].float()  # (batch, hidden)
        cos = torch.nn.functional.cosine_similarity(changed, original[None], dim=-1)
        scores[start:start + len(columns)] = (1.0 - cos).cpu().numpy()
    return scores


@attribution_method("random", "random (baseline)")
def _random(context: MethodContext) -> np.ndarray:
    return np.random.default_rng(context.seed).random(context.n)


# The built-in methods, in registry order (the order of every table and chart); REGISTRY also holds methods
# registered later.
METHODS: tuple[str, ...] = tuple(REGISTRY)
