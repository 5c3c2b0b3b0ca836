"""Attribution lab: is attention an explanation? Per-token scores from attention and from methods that
measure what the output depends on, how well they agree, how faithful each is, and how far the attention
itself can be changed without changing the output.

One scalar target f(x) per model type (:func:`resolve_target`, stated in words on the page):

- encoder without a head (the bundled MiniLM): cosine similarity between the text's mean-pooled, normalised
  embedding (what sentence-transformers returns) and a reference sentence's;
- masked LM: log p(token at the first [MASK]); causal LM: log p(next token) after the text;
- classifier: p(predicted class) — ERASER's quantity (DeYoung et al. 2020).

Methods (:data:`METHODS`; one score per token, higher = more support for f):

- ``attention`` — the raw weights of a chosen layer/head (or the mean over heads) from a chosen query row.
  Cheap, but a weight says where a head *read*, not what the output *needed* (Jain & Wallace 2019).
- ``rollout`` — attention rollout (Abnar & Zuidema 2020): Ã = (A + I)/2 with A the mean over heads, rows
  renormalised, R = Ã_L ⋯ Ã_1, the query's row of R. Prefer it to raw attention when asking about the input
  tokens rather than one layer's mixed representations.
- ``norm`` — norm-weighted attention (Kobayashi et al. 2020): ‖Σ_h α^h_ij f^h(x_j)‖ with
  f^h(x) = (x W_V^h + b_V^h) W_O^h (one head: α_ij ‖f^h(x_j)‖). Prefer it to raw weights: a large weight on a
  token whose transformed value is tiny (e.g. [SEP]) moves nothing.
- ``gradient`` — saliency: ‖∂f/∂e_j‖₂ over the input embedding e_j (Captum ``Saliency``). Local, unsigned.
- ``grad_x_input`` — Σ_d e_jd ∂f/∂e_jd (Captum ``InputXGradient``), signed; the quantity Jain & Wallace use.
- ``integrated_gradients`` — Sundararajan et al. 2017 (Captum ``IntegratedGradients``, Gauss–Legendre):
  satisfies completeness, Σ_j IG_j = f(x) − f(baseline), up to the convergence delta shown. Baseline: every
  non-special token's embedding replaced by the [PAD] embedding (zeros without a pad token), special tokens
  and a masked LM's [MASK] kept. Prefer it to gradients when saturation makes local gradients misleading.
- ``occlusion`` — leave-one-out: f(x) − f(x without token j), j replaced by [MASK] (Captum
  ``FeatureAblation`` on the embeddings; [UNK], then [PAD], for tokenizers without a mask token) or deleted
  (by hand: Captum has no deletion). The direct causal test for one token, blind to interactions.
- ``value_zeroing`` — Mohebbi et al. 2023: cosine distance between the query's output of the chosen layer
  and the same output with token j's value vectors zeroed in every head (through :class:`WeightEdit`, since
  zeroing a value = zeroing its weight column without renormalising). Layer-local, like attention.
- ``random`` — a seeded random score: the floor every method should beat.

Agreement (:class:`Agreement`): Kendall τ-b and Spearman ρ (scipy) and top-k overlap between every pair,
over the content tokens (special tokens and a masked LM's [MASK] excluded), with the 95 % interval of τ
between two random rankings of that length; a layer × head grid of τ(head's attention, occlusion); over a
corpus, bootstrap intervals (:func:`corpus_agreement`).

Faithfulness (:class:`Faithfulness`, DeYoung et al. 2020, ERASER): comprehensiveness f(x) − f(x∖r) and
sufficiency f(x) − f(r) for the top {1, 5, 10, 20, 50} % of content tokens r (⌈p·n⌉ tokens), AOPC = the mean
over bins; removal by [MASK] or deletion. Decay curves: f as the top tokens are removed; remove-until-flip
(Serrano & Smith 2019) = the first removed fraction on the curve at which the decision flips — for a
classifier the predicted class changes; for every other target (no decision to flip) f falls below the
midpoint between f(x) and f with every content token removed.

Counterfactual attention (:func:`counterfactual_attention`, through the one attention function): the
chosen row replaced by uniform weights (Wiegreffe & Pinter 2019), by 100 random permutations of itself
(Jain & Wallace: median |Δf| against the row's largest weight), and an adversarial search (Jain & Wallace:
K = 5 candidates batched, Adam lr 0.01, ≤ 500 steps, loss −JSD(α′, α) + 500·ReLU(|Δf| − ε), ε = 0.01).
JSD in nats (at most ln 2 ≈ 0.693).
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass, field
from typing import Callable, Literal, Sequence

import numpy as np
import torch
from scipy import stats

from inspector.capture import _encode, token_word_ids
from inspector.errors import InvalidRequestError, InvalidTextError, UnsupportedModelError
from inspector.experiments import encode, forward, head_writes, output_position, pooled_embedding
from inspector.loading import LoadedModel
from kernels.hf import WeightEdit

Method = Literal["attention", "rollout", "norm", "gradient", "grad_x_input", "integrated_gradients", "occlusion",
                 "value_zeroing", "random"]
METHODS: tuple[Method, ...] = ("attention", "rollout", "norm", "gradient", "grad_x_input", "integrated_gradients",
                               "occlusion", "value_zeroing", "random")
METHOD_LABELS: dict[str, str] = {
    "attention": "raw attention", "rollout": "attention rollout", "norm": "norm-weighted attention",
    "gradient": "gradient (saliency)", "grad_x_input": "gradient × input",
    "integrated_gradients": "integrated gradients", "occlusion": "occlusion (leave-one-out)",
    "value_zeroing": "value zeroing", "random": "random (baseline)",
}
RemovalMode = Literal["mask", "delete"]
TargetKind = Literal["similarity", "masked-token", "next-token", "class"]
QueryChoice = int | Literal["first", "last"] | None

FAITHFULNESS_BINS: tuple[float, ...] = (0.01, 0.05, 0.10, 0.20, 0.50)
# The decay curve reuses the ERASER bins (rows removed once serve both) plus a few points to 100 %: every point
# costs one forward per method, the largest share of the page's compute.
CURVE_FRACTIONS: tuple[float, ...] = (0.0, 0.01, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0)
DEFAULT_REFERENCE = "The tired animal stayed on its side of the road."
RANDOM_TAU_SAMPLES = 2000
NORMAL_TAU_FROM = 100
# Every removal-based method costs about one forward per content token (occlusion, value zeroing) or per curve
# point and method (ERASER): past this length the page asks before running them (benchmarks.attribution_methods
# times 64 tokens).
LONG_TEXT_TOKENS = 128
# Activations kept for one sequence's backward, per layer and token: ~12 hidden-sized tensors (projections,
# feed-forward, norms) plus 3 heads × n score-sized ones; used to size batches to a memory budget.
_HIDDEN_TENSORS_PER_TOKEN, _SCORE_TENSORS_PER_HEAD = 12, 3
MEMORY_BUDGET_BYTES = 512 * 2**20
JSD_MAX = math.log(2.0)
# The adversarial search stops once its best JSD (with |Δf| ≤ ε) has not grown by MIN_GAIN nats in PATIENCE steps.
MIN_GAIN, PATIENCE = 1e-3, 50

Progress = Callable[[str, float], None]


# ------------------------------------------------------------------------------------------------ targets

@dataclass(frozen=True)
class TargetSpec:
    """What the user asks f(x) to be. reference: the sentence an encoder's embedding is compared with;
    token: the token a language model's log-probability is taken of (None = the model's top prediction);
    class_index: the classifier's class (None = the predicted class)."""

    reference: str = DEFAULT_REFERENCE
    token: str | None = None
    class_index: int | None = None


@dataclass(frozen=True)
class Target:
    """The resolved scalar f(x). kind: see :data:`TargetKind`; description: f in words; value: f(x);
    position: the token row a language model is read at; token_id/token: the predicted token;
    class_index/label: the classifier's class; reference: the reference sentence (similarity)."""

    kind: TargetKind
    description: str
    value: float
    position: int | None = None
    token_id: int | None = None
    token: str | None = None
    class_index: int | None = None
    label: str | None = None
    reference: str | None = None

    def __post_init__(self) -> None:
        if not math.isfinite(self.value):
            raise ValueError(f"Target.value must be finite, got {self.value}")


@dataclass
class _Problem:
    """Everything the methods share for one (model, text, target): internal, holds live tensors."""

    loaded: LoadedModel
    input_ids: torch.Tensor  # (1, n) int64
    attention_mask: torch.Tensor  # (1, n)
    target: Target
    reference: torch.Tensor | None  # (hidden,) unit vector, similarity targets only
    protected: np.ndarray  # (n,) bool: special tokens and a masked LM's [MASK] — never removed or ranked
    backend: str
    budget_bytes: int

    @property
    def n(self) -> int:
        return int(self.input_ids.shape[1])

    @property
    def device(self) -> torch.device:
        return self.input_ids.device


def _sequence_bytes(loaded: LoadedModel, n: int, *, backward: bool) -> int:
    info = loaded.info
    per_layer = n * (_HIDDEN_TENSORS_PER_TOKEN * info.hidden_size + _SCORE_TENSORS_PER_HEAD * info.num_heads * n)
    return max(1, info.num_layers * per_layer * 4 * (3 if backward else 1))


def batch_size_for(loaded: LoadedModel, n_tokens: int, *, backward: bool, budget_bytes: int = MEMORY_BUDGET_BYTES,
                   most: int = 256) -> int:
    """How many sequences of ``n_tokens`` fit one forward (``backward``: and its backward) in ``budget_bytes``
    — an estimate from the activation sizes, used for Captum's ``internal_batch_size`` and for batching."""
    return int(max(1, min(most, budget_bytes // _sequence_bytes(loaded, n_tokens, backward=backward))))


def _positions(problem: _Problem, mask: torch.Tensor, ids: torch.Tensor | None) -> torch.Tensor:
    """(batch,) row each sequence's language-model target is read at."""
    target = problem.target
    if target.kind == "next-token":
        order = torch.arange(mask.shape[1], device=mask.device)
        return (mask.long() * order).argmax(dim=1)  # the last real token (right padding)
    fixed = torch.full((mask.shape[0],), int(target.position), device=mask.device)
    if ids is None:
        return fixed
    # A row as long as the text keeps every position (nothing deleted; removal by [MASK] may have added other
    # [MASK]s, so the target's own position is used). A shorter row had tokens deleted: its target is its first
    # [MASK] (protected, never deleted, and deletion adds none).
    first_mask = (ids == problem.loaded.tokenizer.mask_token_id).long().argmax(dim=1)
    return torch.where(mask.sum(dim=1) == problem.n, fixed, first_mask)


def _target_values(problem: _Problem, outputs, mask: torch.Tensor,
                   ids: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """f for every sequence of a batch ((batch,) float32, differentiable) and its decision ((batch,) int64:
    the argmax class or token, −1 for a similarity)."""
    target = problem.target
    if target.kind == "similarity":
        pooled = pooled_embedding(outputs.hidden_states[-1], mask)
        values = pooled @ problem.reference
        return values, torch.full_like(values, -1, dtype=torch.long)
    if target.kind == "class":
        probs = torch.softmax(outputs.logits.float(), dim=-1)
        return probs[:, target.class_index], probs.argmax(dim=-1)
    rows = torch.arange(mask.shape[0], device=mask.device)
    logits = outputs.logits[rows, _positions(problem, mask, ids)].float()  # (batch, vocab)
    return torch.log_softmax(logits, dim=-1)[:, target.token_id], logits.argmax(dim=-1)


def _single_token_id(loaded: LoadedModel, token: str) -> int:
    tokenizer = loaded.tokenizer
    with loaded.tokenizer_lock:
        ids = tokenizer(token, add_special_tokens=False)["input_ids"]
        if len(ids) != 1:
            direct = tokenizer.convert_tokens_to_ids(token)
            ids = [direct] if isinstance(direct, int) and direct != tokenizer.unk_token_id else ids
    if len(ids) != 1:
        raise InvalidRequestError(f"the target token {token!r} is {len(ids)} tokens for this tokenizer; choose a "
                                  "word that is a single token (or leave it empty for the model's top prediction)")
    return int(ids[0])


def _setup(loaded: LoadedModel, text: str, spec: TargetSpec, backend: str,
           budget_bytes: int) -> tuple[_Problem, object, dict]:
    """Tokenise, run the baseline forward (every layer's weights kept) and resolve the target.

    Returns the problem, the baseline :class:`~inspector.experiments.ForwardResult` and the tokenizer's
    encoding facts (tokens, special, word_ids, offsets)."""
    encoding, _ = _encode(loaded, text, truncate=False)
    inputs = encode(loaded, text)
    special = encoding["special_tokens_mask"][0].numpy().astype(bool)
    head = loaded.info.head
    base = forward(loaded, inputs, backend=backend, weights_layers="all", keep=("value",), keep_layers="all")
    outputs = base.outputs
    tokenizer = loaded.tokenizer
    ids = inputs["input_ids"]
    protected = special.copy()
    reference = None
    if head == "classifier":
        probs = torch.softmax(outputs.logits[0].float(), dim=-1)
        index = int(probs.argmax()) if spec.class_index is None else int(spec.class_index)
        if not 0 <= index < probs.numel():
            raise InvalidRequestError(f"class {index} does not exist: the classifier has classes 0–{probs.numel() - 1}")
        label = loaded.info.labels[index] if index < len(loaded.info.labels) else str(index)
        target = Target(kind="class", value=float(probs[index]), class_index=index, label=label,
                        description=f"the probability the classifier gives class “{label}”"
                                    + (" (its prediction)" if index == int(probs.argmax()) else ""))
    elif head in ("masked-lm", "causal-lm"):
        position = output_position(loaded, inputs)  # the first [MASK], or the last real token
        if position is None:
            raise InvalidTextError(f"a masked language model predicts the word at {tokenizer.mask_token or '[MASK]'}; "
                                   "the text has none — put it where the model should fill in a word")
        if head == "masked-lm":
            protected[position] = True
        log_probs = torch.log_softmax(outputs.logits[0, position].float(), dim=-1)
        token_id = int(log_probs.argmax()) if not spec.token else _single_token_id(loaded, spec.token)
        token = str(tokenizer.convert_ids_to_tokens(token_id))
        where = "at the [MASK]" if head == "masked-lm" else "as the next token after the text"
        target = Target(kind="masked-token" if head == "masked-lm" else "next-token", position=position,
                        token_id=token_id, token=token, value=float(log_probs[token_id]),
                        description=f"the log-probability of “{token}” {where}"
                                    + (" (the model's top prediction)" if token_id == int(log_probs.argmax()) else ""))
    else:
        if not spec.reference or not spec.reference.strip():
            raise InvalidTextError("the target compares the text with a reference sentence; type one")
        ref_inputs = encode(loaded, spec.reference)
        ref_out = forward(loaded, ref_inputs, backend=backend).outputs
        reference = pooled_embedding(ref_out.hidden_states[-1], ref_inputs["attention_mask"])[0]
        value = float(pooled_embedding(outputs.hidden_states[-1], inputs["attention_mask"])[0] @ reference)
        target = Target(kind="similarity", value=value, reference=spec.reference,
                        description=f"the cosine similarity between the text's sentence embedding (mean of the last "
                                    f"layer over its tokens) and that of the reference “{spec.reference}”")
    if (~protected).sum() < 2:
        raise InvalidTextError("the text needs at least two tokens besides the special ones to compare rankings")
    words = token_word_ids(encoding, special)
    offsets = encoding.get("offset_mapping")
    facts = {"tokens": tuple(str(t) for t in tokenizer.convert_ids_to_tokens(ids[0].tolist())),
             "special": special, "word_ids": words,
             "offsets": offsets[0].numpy() if offsets is not None else None}
    problem = _Problem(loaded=loaded, input_ids=ids, attention_mask=inputs["attention_mask"], target=target,
                       reference=reference, protected=protected, backend=backend, budget_bytes=budget_bytes)
    return problem, base, facts


def resolve_target(loaded: LoadedModel, text: str, spec: TargetSpec = TargetSpec(), *,
                   backend: str = "torch") -> Target:
    """f(x) for ``text`` in words and its value (see the module docstring)."""
    return _setup(loaded, text, spec, backend, MEMORY_BUDGET_BYTES)[0].target


# ------------------------------------------------------------------------------------------- evaluations

def _evaluate_rows(problem: _Problem, rows: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
    """f and the decision for token-id sequences of any lengths (right-padded, batched to the memory budget).
    Identical rows are run once."""
    unique: dict[tuple[int, ...], int] = {}
    for row in rows:
        unique.setdefault(tuple(int(t) for t in row), len(unique))
    keys = list(unique)
    values, decisions = np.empty(len(keys)), np.empty(len(keys), dtype=np.int64)
    longest = max(len(k) for k in keys)
    chunk = batch_size_for(problem.loaded, longest, backward=False, budget_bytes=problem.budget_bytes)
    pad = problem.loaded.tokenizer.pad_token_id
    pad = 0 if pad is None else int(pad)
    for start in range(0, len(keys), chunk):
        batch = keys[start:start + chunk]
        width = max(len(k) for k in batch)
        ids = torch.full((len(batch), width), pad, dtype=torch.long, device=problem.device)
        mask = torch.zeros((len(batch), width), dtype=torch.long, device=problem.device)
        for i, k in enumerate(batch):
            ids[i, :len(k)] = torch.tensor(k, dtype=torch.long)
            mask[i, :len(k)] = 1
        result = forward(problem.loaded, {"input_ids": ids, "attention_mask": mask}, backend=problem.backend,
                         stats=())
        f, decision = _target_values(problem, result.outputs, mask, ids)
        values[start:start + len(batch)] = f.float().cpu().numpy()
        decisions[start:start + len(batch)] = decision.cpu().numpy()
    index = [unique[tuple(int(t) for t in row)] for row in rows]
    return values[index], decisions[index]


def _replacement_id(loaded: LoadedModel) -> tuple[int, str]:
    """The token that stands in for a removed one in ``mask`` mode, and its name."""
    tokenizer = loaded.tokenizer
    for name in ("mask_token", "unk_token", "pad_token"):
        token, token_id = getattr(tokenizer, name, None), getattr(tokenizer, f"{name}_id", None)
        if token is not None and token_id is not None:
            return int(token_id), str(token)
    raise UnsupportedModelError("this tokenizer has no [MASK], [UNK] or [PAD] token to replace removed tokens "
                                "with; choose removal by deletion")


def _embed_forward(problem: _Problem) -> Callable[[torch.Tensor], torch.Tensor]:
    """f as a function of input embeddings (batch, n, hidden) → (batch,), for Captum."""

    def f(embeds: torch.Tensor) -> torch.Tensor:
        mask = problem.attention_mask.expand(embeds.shape[0], -1)
        grad = torch.is_grad_enabled()
        result = forward(problem.loaded, {"inputs_embeds": embeds, "attention_mask": mask}, backend=problem.backend,
                         grad=grad, stats=())
        values = _target_values(problem, result.outputs, mask)[0]
        return values if grad else values.clone()

    return f


def _embeddings(problem: _Problem) -> torch.Tensor:
    """(1, n, hidden) input (word) embeddings in the model's dtype; the model adds positions itself."""
    with torch.no_grad():
        return problem.loaded.model.get_input_embeddings()(problem.input_ids).detach()


# ------------------------------------------------------------------------------------------------- methods

def _query_index(query: QueryChoice, problem: _Problem) -> int:
    n = problem.n
    if query is None:
        if problem.target.position is not None:
            return int(problem.target.position)
        query = "last" if problem.loaded.info.causal else "first"
    if query == "first":
        return 0
    if query == "last":
        return n - 1
    if isinstance(query, bool) or not isinstance(query, int) or not 0 <= query < n:
        raise InvalidRequestError(f"query {query!r} is not a token position: the text has tokens 0–{n - 1}")
    return int(query)


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


def _norm_weighted(problem: _Problem, record, weights: torch.Tensor, layer: int, head: int | None,
                   query: int) -> np.ndarray:
    """Kobayashi et al. (2020): ‖Σ_h α^h_qj f^h(x_j)‖ (one head: α^h_qj ‖f^h(x_j)‖), f^h(x) = v^h W_O^h."""
    transformed = head_writes(problem.loaded, layer, record.tensors["value"][0])  # (heads, n, hidden), b_V included
    alpha = weights[:, query, :]  # (heads, n)
    if head is not None:
        return (alpha[head] * transformed[head].norm(dim=-1)).cpu().numpy()
    return (alpha[..., None] * transformed).sum(dim=0).norm(dim=-1).cpu().numpy()


def _value_zeroing(problem: _Problem, base, layer: int, query: int) -> np.ndarray:
    """Mohebbi et al. (2023): 1 − cos(h_q, h_q with token j's values zeroed in every head of ``layer``), the
    layer's output at the query, one batched forward with token j's weight column zeroed in sequence j."""
    n, heads = problem.n, problem.loaded.info.num_heads
    original = base.outputs.hidden_states[layer + 1][0, query].float()
    scores = np.zeros(n)
    chunk = batch_size_for(problem.loaded, n, backward=False, budget_bytes=problem.budget_bytes)
    for start in range(0, n, chunk):
        columns = torch.arange(start, min(start + chunk, n), device=problem.device)
        keep = torch.ones(len(columns), n, device=problem.device)
        keep[torch.arange(len(columns)), columns] = 0.0  # (batch, n): sequence b zeroes column start + b

        def zero_column(weights: torch.Tensor, visible: torch.Tensor, keep=keep) -> torch.Tensor:
            return weights * keep[:, None, None, :]

        inputs = {"input_ids": problem.input_ids.expand(len(columns), -1),
                  "attention_mask": problem.attention_mask.expand(len(columns), -1)}
        result = forward(problem.loaded, inputs, backend=problem.backend, stats=(),
                         interventions=[WeightEdit(layer, tuple(range(heads)), zero_column)])
        changed = result.outputs.hidden_states[layer + 1][:, query].float()  # (batch, hidden)
        cos = torch.nn.functional.cosine_similarity(changed, original[None], dim=-1)
        scores[start:start + len(columns)] = (1.0 - cos).cpu().numpy()
    return scores


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


def _occlusion(problem: _Problem, mode: RemovalMode, embeds: torch.Tensor) -> np.ndarray:
    """Leave-one-out f(x) − f(x without j) for content tokens (NaN for protected ones)."""
    content = np.flatnonzero(~problem.protected)
    scores = np.full(problem.n, np.nan)
    if mode == "mask":
        replacement, _ = _replacement_id(problem.loaded)
        with torch.no_grad():
            stand_in = problem.loaded.model.get_input_embeddings()(torch.tensor([replacement], device=problem.device))
        chunk = batch_size_for(problem.loaded, problem.n, backward=False, budget_bytes=problem.budget_bytes)
        scores[content] = occlusion_on_embeddings(_embed_forward(problem), embeds, stand_in[0], content, chunk)
    else:
        scores[content] = leave_one_out(lambda rows: _evaluate_rows(problem, rows)[0],
                                        problem.input_ids[0].tolist(), content, problem.target.value)
    return scores


@dataclass(frozen=True)
class IntegratedGradientsRun:
    """Integrated gradients' bookkeeping. steps: Gauss–Legendre points; internal_batch_size: sequences per
    forward; delta: Captum's convergence delta Σ attributions − (f(x) − f(baseline)); baseline_value:
    f(baseline); baseline: how the baseline was built, in words."""

    steps: int
    internal_batch_size: int
    delta: float
    baseline_value: float
    baseline: str


def _gradient_methods(problem: _Problem, embeds: torch.Tensor, wanted: set[str], steps: int,
                      timings: dict[str, float]) -> tuple[dict[str, np.ndarray], IntegratedGradientsRun | None]:
    from captum.attr import InputXGradient, IntegratedGradients, Saliency

    f = _embed_forward(problem)
    scores: dict[str, np.ndarray] = {}
    if "gradient" in wanted:
        started = time.perf_counter()
        grads = Saliency(f).attribute(embeds.clone().requires_grad_(True), abs=False)
        scores["gradient"] = grads[0].float().norm(dim=-1).detach().double().cpu().numpy()
        timings["gradient"] = time.perf_counter() - started
    if "grad_x_input" in wanted:
        started = time.perf_counter()
        product = InputXGradient(f).attribute(embeds.clone().requires_grad_(True))
        scores["grad_x_input"] = product[0].float().sum(dim=-1).detach().double().cpu().numpy()
        timings["grad_x_input"] = time.perf_counter() - started
    run = None
    if "integrated_gradients" in wanted:
        started = time.perf_counter()
        pad_id = problem.loaded.tokenizer.pad_token_id
        content = torch.as_tensor(~problem.protected, device=problem.device)
        if pad_id is not None:
            with torch.no_grad():
                pad = problem.loaded.model.get_input_embeddings()(torch.tensor([pad_id], device=problem.device))
            described = "every non-special token's embedding replaced by the [PAD] embedding; special tokens kept"
        else:
            pad = torch.zeros(1, embeds.shape[-1], device=problem.device, dtype=embeds.dtype)
            described = "every non-special token's embedding replaced by zeros (no pad token); special tokens kept"
        baseline = torch.where(content[None, :, None], pad[None], embeds)
        batch = batch_size_for(problem.loaded, problem.n, backward=True, budget_bytes=problem.budget_bytes,
                               most=steps)
        attributions, delta = IntegratedGradients(f).attribute(
            embeds, baselines=baseline, n_steps=steps, method="gausslegendre", internal_batch_size=batch,
            return_convergence_delta=True)
        with torch.no_grad():
            baseline_value = float(f(baseline)[0])
        scores["integrated_gradients"] = attributions[0].float().sum(dim=-1).detach().double().cpu().numpy()
        run = IntegratedGradientsRun(steps=steps, internal_batch_size=batch, delta=float(delta[0]),
                                     baseline_value=baseline_value, baseline=described)
        timings["integrated_gradients"] = time.perf_counter() - started
    return scores, run


# ---------------------------------------------------------------------------------------- agreement

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


def agreement(scores: dict[str, np.ndarray], content: np.ndarray, k: int = 5, seed: int = 0) -> Agreement:
    """Kendall τ, Spearman ρ and top-k overlap between every pair of ``scores`` (each (n,)) over the
    positions where ``content`` (n,) is True."""
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
                     random_tau=random_tau_interval(int(content.sum()), seed=seed))


# ------------------------------------------------------------------------------------------ faithfulness

@dataclass(frozen=True)
class Faithfulness:
    """ERASER (DeYoung et al. 2020) and decay curves, per method.

    methods: m names. bins: (b,) fractions of content tokens. comprehensiveness, sufficiency: (m, b) —
    f(x) − f(x∖r) and f(x) − f(r) (higher comprehensiveness and lower sufficiency = more faithful).
    aopc_comprehensiveness, aopc_sufficiency: (m,) means over bins. removal: ``mask`` (replaced by
    ``replacement``) or ``delete``. curve_fractions: (c,); curve: (m, c) f after removing that fraction of the
    top-ranked content tokens. flip_fraction: (m,) first curve fraction at which the decision flipped (NaN:
    never). flip_rule: the flip in words."""

    methods: tuple[str, ...]
    bins: np.ndarray
    comprehensiveness: np.ndarray
    sufficiency: np.ndarray
    aopc_comprehensiveness: np.ndarray
    aopc_sufficiency: np.ndarray
    removal: RemovalMode
    replacement: str | None
    curve_fractions: np.ndarray
    curve: np.ndarray
    flip_fraction: np.ndarray
    flip_rule: str

    def __post_init__(self) -> None:
        m, b, c = len(self.methods), len(self.bins), len(self.curve_fractions)
        expected = {"comprehensiveness": (m, b), "sufficiency": (m, b), "aopc_comprehensiveness": (m,),
                    "aopc_sufficiency": (m,), "curve": (m, c), "flip_fraction": (m,)}
        for name, shape in expected.items():
            if getattr(self, name).shape != shape:
                raise ValueError(f"Faithfulness.{name} has shape {getattr(self, name).shape}, expected {shape}")


def _ranked_content(scores: np.ndarray, content: np.ndarray) -> np.ndarray:
    """Content positions, highest score first (NaN last, ties by position)."""
    positions = np.flatnonzero(content)
    values = np.nan_to_num(scores[positions], nan=-np.inf)
    return positions[np.argsort(-values, kind="stable")]


def eraser_faithfulness(evaluate: Callable[[list[list[int]]], tuple[np.ndarray, np.ndarray]], ids: Sequence[int],
                        protected: np.ndarray, f0: float, scores: dict[str, np.ndarray], *, mode: RemovalMode,
                        replacement: tuple[int, str] | None = None, flip_class: int | None = None,
                        bins: Sequence[float] = FAITHFULNESS_BINS,
                        fractions: Sequence[float] = CURVE_FRACTIONS) -> Faithfulness:
    """Comprehensiveness, sufficiency (AOPC over ``bins``) and decay curves for each method's ranking.

    evaluate: token-id rows of any lengths → (f values, decisions); ids: the text's (n,) ids; protected: (n,)
    bool, never removed; f0 = f(ids); mode: replace removed tokens by ``replacement`` (id, name) or delete
    them; flip_class: a classifier's predicted class (the flip is a change of decision), else None (the flip
    is f falling halfway to f with every content token removed)."""
    ids = list(ids)
    n = len(ids)
    content = ~np.asarray(protected, dtype=bool)
    n_content = int(content.sum())
    methods = tuple(scores)
    if mode == "mask" and replacement is None:
        raise InvalidRequestError("removal by [MASK] needs a replacement token")

    def removed(drop: np.ndarray) -> list[int]:
        if mode == "delete":
            return [t for t, d in zip(ids, drop) if not d]
        return [replacement[0] if d else t for t, d in zip(ids, drop)]

    def drop_top(order: np.ndarray, count: int, keep_only: bool) -> list[int]:
        drop = np.zeros(n, dtype=bool)
        if keep_only:
            drop[order[count:]] = True
        else:
            drop[order[:count]] = True
        return removed(drop)

    count = lambda p: int(math.ceil(p * n_content))  # noqa: E731
    rows: list[list[int]] = []
    for name in methods:
        order = _ranked_content(scores[name], content)
        rows += [drop_top(order, count(p), False) for p in bins]
        rows += [drop_top(order, count(p), True) for p in bins]
        rows += [drop_top(order, count(p), False) for p in fractions]
    values, decisions = evaluate(rows)
    b, c = len(bins), len(fractions)
    per = 2 * b + c
    values = np.asarray(values, dtype=float).reshape(len(methods), per)
    decisions = np.asarray(decisions).reshape(len(methods), per)
    comprehensiveness = f0 - values[:, :b]
    sufficiency = f0 - values[:, b:2 * b]
    curve, curve_decisions = values[:, 2 * b:], decisions[:, 2 * b:]
    if flip_class is not None:
        flipped = curve_decisions != flip_class
        rule = "the predicted class changes"
    else:
        everything_removed = (float(curve[0, -1]) if fractions[-1] == 1.0
                              else float(evaluate([removed(content.copy())])[0][0]))
        threshold = 0.5 * (f0 + everything_removed)
        flipped = curve < threshold if everything_removed < f0 else np.zeros_like(curve, dtype=bool)
        rule = (f"f falls below {threshold:.4g}, halfway from f(x) = {f0:.4g} to f with every content token removed "
                f"({everything_removed:.4g}) — this target has no decision to flip")
    fraction_array = np.asarray(fractions, dtype=float)
    flip = np.array([fraction_array[row.argmax()] if row.any() else np.nan for row in flipped])
    return Faithfulness(methods=methods, bins=np.asarray(bins, dtype=float), comprehensiveness=comprehensiveness,
                        sufficiency=sufficiency, aopc_comprehensiveness=comprehensiveness.mean(axis=1),
                        aopc_sufficiency=sufficiency.mean(axis=1), removal=mode,
                        replacement=replacement[1] if mode == "mask" else None,
                        curve_fractions=fraction_array, curve=curve, flip_fraction=flip, flip_rule=rule)


def faithfulness(problem: _Problem, scores: dict[str, np.ndarray], mode: RemovalMode) -> Faithfulness:
    """:func:`eraser_faithfulness` on the model: rows run through the attention function in batches."""
    return eraser_faithfulness(lambda rows: _evaluate_rows(problem, rows), problem.input_ids[0].tolist(),
                               problem.protected, problem.target.value, scores, mode=mode,
                               replacement=_replacement_id(problem.loaded) if mode == "mask" else None,
                               flip_class=problem.target.class_index if problem.target.kind == "class" else None)


# ----------------------------------------------------------------------------------- counterfactual attention

def jensen_shannon(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """JSD(p ‖ q) in nats over the last axis (0 … ln 2); zero entries handled (0·log 0 = 0)."""
    m = 0.5 * (p + q)

    def kl(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.where(a > 0, a * (torch.log(a.clamp_min(1e-30)) - torch.log(b.clamp_min(1e-30))),
                           torch.zeros_like(a)).sum(dim=-1)

    return 0.5 * kl(p, m) + 0.5 * kl(q, m)


@dataclass(frozen=True)
class CounterfactualAttention:
    """What happens to f when one attention row is replaced (Jain & Wallace 2019; Wiegreffe & Pinter 2019).

    layer, head (None = every head of the layer gets the new row; the original is then their mean), query:
    the row edited. original, uniform: (n,) float64 rows. uniform_change: |Δf| with uniform weights;
    uniform_jsd: JSD(uniform, original), nats. permutation_changes: (P,) |Δf| for P random permutations of the
    row among its visible keys; max_weight: the row's largest weight. adversarial: (n,) the best row found with
    |Δf| ≤ epsilon (None if not run or none found), adversarial_jsd / adversarial_change / adversarial_steps /
    adversarial_seconds. verdict: one sentence built from these numbers."""

    layer: int
    head: int | None
    query: int
    original: np.ndarray
    uniform: np.ndarray
    uniform_change: float
    uniform_jsd: float
    permutation_changes: np.ndarray
    max_weight: float
    epsilon: float
    adversarial: np.ndarray | None = None
    adversarial_jsd: float | None = None
    adversarial_change: float | None = None
    adversarial_steps: int = 0
    adversarial_seconds: float = 0.0
    verdict: str = ""

    def __post_init__(self) -> None:
        n = self.original.shape
        if self.uniform.shape != n or (self.adversarial is not None and self.adversarial.shape != n):
            raise ValueError("CounterfactualAttention rows must all have the original row's shape")
        if self.adversarial_change is not None and self.adversarial_change > self.epsilon + 1e-9:
            raise ValueError("the adversarial row must keep |Δf| ≤ epsilon")

    @property
    def permutation_median(self) -> float:
        return float(np.median(self.permutation_changes)) if len(self.permutation_changes) else float("nan")


def _row_edit(layer: int, heads: tuple[int, ...], query: int, rows: torch.Tensor) -> WeightEdit:
    """Replace row ``query`` of ``heads`` by ``rows`` (batch, n) — one row per sequence of the batch."""

    def edit(weights: torch.Tensor, visible: torch.Tensor) -> torch.Tensor:
        new = weights.clone()
        new[:, :, query, :] = rows[:, None, :].to(weights.dtype)
        return new

    return WeightEdit(layer, heads, edit)


def _f_with_rows(problem: _Problem, layer: int, heads: tuple[int, ...], query: int, rows: torch.Tensor, *,
                 grad: bool = False) -> torch.Tensor:
    batch = rows.shape[0]
    inputs = {"input_ids": problem.input_ids.expand(batch, -1), "attention_mask": problem.attention_mask.expand(batch, -1)}
    result = forward(problem.loaded, inputs, backend=problem.backend, grad=grad, stats=(),
                     interventions=[_row_edit(layer, heads, query, rows)])
    return _target_values(problem, result.outputs, inputs["attention_mask"], inputs["input_ids"])[0]


def _verdict(result: dict, epsilon: float, where: str) -> str:
    uniform = (f"uniform weights changed f by {result['uniform_change']:.3g} (JSD {result['uniform_jsd']:.2f} nats), "
               f"and 100 random permutations by a median of {result['permutation_median']:.3g} "
               f"(largest weight {result['max_weight']:.2f})")
    jsd = result.get("adversarial_jsd")
    if jsd is None:
        return f"At {where}, {uniform}. Run the adversarial search to see how different a row can be for the same output."
    if result.get("adversarial") is None:
        return (f"At {where}, {uniform}; the adversarial search found no row within |Δf| ≤ {epsilon:g}, so this "
                "attention is constrained by the output here.")
    share = jsd / JSD_MAX
    strength = ("almost entirely different" if share > 0.8 else "substantially different" if share > 0.4
                else "only mildly different")
    if share > 0.4:
        conclusion = "So this attention map is not a unique explanation of the output."
    elif result["converged"]:
        conclusion = "Here the output does constrain the attention."
    else:
        conclusion = (f"The search was still improving when it stopped after {result['steps']} steps; allow more "
                      "steps before concluding that the output constrains this attention.")
    return (f"At {where}, an attention row {strength} from the model's own (JSD {jsd:.2f} of at most "
            f"{JSD_MAX:.2f} nats) changes f by only {result['adversarial_change']:.3g} (≤ ε = {epsilon:g}); "
            f"{uniform}. {conclusion}")


def counterfactual_attention(loaded: LoadedModel, text: str, *, spec: TargetSpec = TargetSpec(), layer: int | None = None,
                             head: int | None = None, query: QueryChoice = None, permutations: int = 100,
                             adversarial: bool = True, candidates: int = 5, steps: int = 500, lr: float = 0.01,
                             epsilon: float = 0.01, penalty: float = 500.0, seed: int = 0, backend: str = "torch",
                             progress: Progress | None = None) -> CounterfactualAttention:
    """Replace one attention row at (``layer``, ``head``, ``query``) through the attention function and
    measure f (see the module docstring). ``layer`` None = the last layer; ``head`` None = every head.
    The adversarial search stops early once its best valid JSD has not grown by :data:`MIN_GAIN` in
    :data:`PATIENCE` steps."""
    problem, base, _ = _setup(loaded, text, spec, backend, MEMORY_BUDGET_BYTES)
    return _counterfactual(problem, base, layer=layer, head=head, query=query, permutations=permutations,
                           adversarial=adversarial, candidates=candidates, steps=steps, lr=lr, epsilon=epsilon,
                           penalty=penalty, seed=seed, progress=progress)


def _counterfactual(problem: _Problem, base, *, layer: int | None, head: int | None, query: QueryChoice,
                    permutations: int, adversarial: bool, candidates: int = 5, steps: int = 500, lr: float = 0.01,
                    epsilon: float = 0.01, penalty: float = 500.0, seed: int = 0,
                    progress: Progress | None = None) -> CounterfactualAttention:
    """:func:`counterfactual_attention` on an already set-up problem and its baseline forward."""
    loaded = problem.loaded
    info = loaded.info
    layer = info.num_layers - 1 if layer is None else int(layer)
    if not 0 <= layer < info.num_layers:
        raise InvalidRequestError(f"layer {layer} does not exist: {info.name} has layers 0–{info.num_layers - 1}")
    if head is not None and not 0 <= head < info.num_heads:
        raise InvalidRequestError(f"head {head} does not exist: {info.name} has heads 0–{info.num_heads - 1}")
    q = _query_index(query, problem)
    heads = tuple(range(info.num_heads)) if head is None else (int(head),)
    weights = base.records[layer].weights[0].float()  # (heads, n, n)
    original = weights[list(heads), q, :].mean(dim=0)  # (n,)
    visible = original > 0
    f0 = problem.target.value
    generator = torch.Generator().manual_seed(seed)

    uniform = visible.float() / visible.sum()
    perms = []
    positions = visible.nonzero()[:, 0]
    for _ in range(permutations):
        row = torch.zeros_like(original)
        row[positions] = original[positions][torch.randperm(len(positions), generator=generator)]
        perms.append(row)
    rows = torch.stack([uniform, *perms])
    changes = (_f_with_rows(problem, layer, heads, q, rows).float().cpu() - f0).abs().numpy()
    result = dict(uniform_change=float(changes[0]), uniform_jsd=float(jensen_shannon(uniform, original)),
                  permutation_median=float(np.median(changes[1:])) if permutations else float("nan"),
                  max_weight=float(original.max()))
    tokens = loaded.tokenizer.convert_ids_to_tokens(problem.input_ids[0].tolist())
    where = (f"layer {layer}, {'every head' if head is None else f'head {head}'}, query {q} (“{tokens[q]}”)")
    extra: dict = {}
    if adversarial:
        started = time.perf_counter()
        # Diverse starts: candidate 0 at the model's own row, the others ever further from it (noise of standard
        # deviation 1.5·k on the logits), so the search does not depend on small steps from one start.
        spread = 1.5 * torch.arange(candidates, dtype=torch.float32)[:, None]
        noise = torch.randn(candidates, len(positions), generator=generator) * spread
        logits = (torch.log(original[positions].clamp_min(1e-6)).cpu()[None] + noise).to(original.device)
        logits.requires_grad_(True)
        optimizer = torch.optim.Adam([logits], lr=lr)
        best_jsd, best_row, best_change, last_gain, done, converged = -1.0, None, None, 0, 0, False
        for step in range(steps):
            probs = torch.softmax(logits, dim=-1)  # (K, visible)
            candidate = torch.zeros(candidates, len(original), device=original.device).index_copy(1, positions, probs)
            f = _f_with_rows(problem, layer, heads, q, candidate, grad=True)
            change = (f - f0).abs()
            jsd = jensen_shannon(candidate, original[None])
            loss = (-jsd + penalty * torch.relu(change - epsilon)).sum()
            with torch.no_grad():
                valid = change <= epsilon
                if valid.any():
                    pick = int(torch.where(valid, jsd, torch.full_like(jsd, -1.0)).argmax())
                    if float(jsd[pick]) > best_jsd + MIN_GAIN:
                        last_gain = step
                    if float(jsd[pick]) > best_jsd:
                        best_jsd, best_change = float(jsd[pick]), float(change[pick])
                        best_row = candidate[pick].detach().clone()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            done = step + 1
            if progress is not None:
                progress(f"adversarial search: step {done}/{steps}, best JSD {max(best_jsd, 0):.3f} nats", done / steps)
            if step - last_gain >= PATIENCE and best_row is not None:
                converged = True
                break
        extra = dict(adversarial=best_row, adversarial_jsd=best_jsd if best_row is not None else None,
                     adversarial_change=best_change, adversarial_steps=done,
                     adversarial_seconds=time.perf_counter() - started)
        result.update(adversarial=best_row, adversarial_jsd=best_jsd, adversarial_change=best_change, steps=done,
                      converged=converged)
    verdict = _verdict(result, epsilon, where)
    if extra.get("adversarial") is not None:
        extra["adversarial"] = extra["adversarial"].double().numpy()
    return CounterfactualAttention(layer=layer, head=head, query=q, original=original.detach().double().cpu().numpy(),
                                   uniform=uniform.detach().double().cpu().numpy(), uniform_change=result["uniform_change"],
                                   uniform_jsd=result["uniform_jsd"], permutation_changes=changes[1:].astype(float),
                                   max_weight=result["max_weight"], epsilon=epsilon, verdict=verdict, **extra)


# ---------------------------------------------------------------------------------------------- the report

@dataclass(frozen=True)
class AttributionSettings:
    """How :func:`attribute` runs. layer: the layer for raw attention, norm, value zeroing and the
    counterfactual (None = last); head: None = mean over heads; query: row the layer-local methods read
    (None = the target's token for language models, else the last token of a causal model or the first);
    methods: which of :data:`METHODS`; ig_steps: integrated-gradients points; removal: occlusion and ERASER
    by [MASK] replacement or deletion; top_k: for top-k overlap; head_grid: compute the layer × head τ grid;
    permutations: for the counterfactual row (0 = skip the counterfactual); faithfulness: run ERASER (False:
    scores and agreement only — the fast path for scoring methods against a known answer)."""

    layer: int | None = None
    head: int | None = None
    query: QueryChoice = None
    methods: tuple[str, ...] = METHODS
    ig_steps: int = 16
    removal: RemovalMode = "mask"
    top_k: int = 5
    head_grid: bool = True
    permutations: int = 100
    faithfulness: bool = True
    seed: int = 0
    budget_bytes: int = MEMORY_BUDGET_BYTES

    def __post_init__(self) -> None:
        unknown = sorted(set(self.methods) - set(METHODS))
        if unknown:
            raise InvalidRequestError(f"unknown attribution methods {unknown}; choose from {', '.join(METHODS)}")
        if self.removal not in ("mask", "delete"):
            raise InvalidRequestError(f"removal must be 'mask' or 'delete', got {self.removal!r}")
        if not 1 <= self.ig_steps <= 1024:
            raise InvalidRequestError(f"ig_steps must be between 1 and 1024, got {self.ig_steps}")


@dataclass(frozen=True)
class AttributionReport:
    """Every method's per-token scores for one (model, text, target), their agreement and faithfulness.

    tokens: n token strings; special: (n,) bool; protected: (n,) bool — never removed or ranked (specials and
    a masked LM's [MASK]); word_ids: (n,) int32 (−1 for specials); words: one string per word id.
    scores: {method: (n,) float64} (NaN where undefined); word_scores: {method: (words,) float64} — the sum
    over each word's pieces. layer/head/query: what the layer-local methods read. ig: integrated gradients'
    bookkeeping. skipped: {method: why it could not run}. timings: seconds per stage."""

    model_name: str
    text: str
    target: Target
    tokens: tuple[str, ...]
    special: np.ndarray
    protected: np.ndarray
    word_ids: np.ndarray
    words: tuple[str, ...]
    layer: int
    head: int | None
    query: int
    removal: RemovalMode
    scores: dict[str, np.ndarray]
    word_scores: dict[str, np.ndarray]
    agreement: Agreement
    faithfulness: Faithfulness | None
    ig: IntegratedGradientsRun | None
    counterfactual: CounterfactualAttention | None
    skipped: dict[str, str] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        n = len(self.tokens)
        for name in ("special", "protected", "word_ids"):
            if getattr(self, name).shape != (n,):
                raise ValueError(f"AttributionReport.{name} has shape {getattr(self, name).shape}, expected {(n,)}")
        for method, values in self.scores.items():
            if values.shape != (n,):
                raise ValueError(f"AttributionReport.scores[{method!r}] has shape {values.shape}, expected {(n,)}")
            if self.word_scores[method].shape != (len(self.words),):
                raise ValueError(f"AttributionReport.word_scores[{method!r}] does not match the {len(self.words)} words")
        if self.agreement.methods != tuple(self.scores):
            raise ValueError("AttributionReport.agreement must cover exactly the scored methods, in order")


def _words(text: str, tokens: Sequence[str], word_ids: np.ndarray, offsets: np.ndarray | None) -> tuple[str, ...]:
    count = int(word_ids.max()) + 1 if len(word_ids) else 0
    words = []
    for w in range(count):
        members = np.flatnonzero(word_ids == w)
        if offsets is not None and len(members) and offsets[members].max() > 0:
            words.append(text[int(offsets[members, 0].min()):int(offsets[members, 1].max())])
        else:
            words.append("".join(tokens[i].removeprefix("##") for i in members))
    return tuple(words)


def word_level(scores: np.ndarray, word_ids: np.ndarray) -> np.ndarray:
    """(n,) token scores → (words,) sums over each word's pieces (specials, word id −1, dropped; a word whose
    pieces are all NaN stays NaN)."""
    count = int(word_ids.max()) + 1 if len(word_ids) else 0
    out = np.full(count, np.nan)
    for w in range(count):
        values = scores[word_ids == w]
        if np.isfinite(values).any():
            out[w] = np.nansum(values)
    return out


def attribute(loaded: LoadedModel, text: str, *, spec: TargetSpec = TargetSpec(),
              settings: AttributionSettings = AttributionSettings(), backend: str = "torch",
              progress: Progress | None = None) -> AttributionReport:
    """Every method in ``settings.methods`` on ``text``, their agreement, ERASER faithfulness, the layer ×
    head τ grid and (``settings.permutations`` > 0) the uniform/permutation counterfactual — the one call the
    Attribution page and ``python -m inspector attribute`` make. The adversarial search is separate
    (:func:`counterfactual_attention`): it takes far longer than everything else together."""
    timings: dict[str, float] = {}
    say = progress or (lambda label, fraction: None)
    started = time.perf_counter()
    say("running the model", 0.05)
    problem, base, facts = _setup(loaded, text, spec, backend, settings.budget_bytes)
    info = loaded.info
    layer = info.num_layers - 1 if settings.layer is None else int(settings.layer)
    if not 0 <= layer < info.num_layers:
        raise InvalidRequestError(f"layer {layer} does not exist: {info.name} has layers 0–{info.num_layers - 1}")
    if settings.head is not None and not 0 <= settings.head < info.num_heads:
        raise InvalidRequestError(f"head {settings.head} does not exist: {info.name} has heads 0–{info.num_heads - 1}")
    query = _query_index(settings.query, problem)
    timings["baseline"] = time.perf_counter() - started
    wanted = set(settings.methods)
    if settings.head_grid:
        wanted.add("occlusion")
    weights = {r.layer: r.weights[0].float() for r in base.records}  # (heads, n, n) each
    scores: dict[str, np.ndarray] = {}
    skipped: dict[str, str] = {}

    if "attention" in wanted:
        row = weights[layer][:, query, :]
        chosen = row.mean(dim=0) if settings.head is None else row[settings.head]  # (n,)
        scores["attention"] = chosen.detach().double().cpu().numpy()
    if "rollout" in wanted:
        rollout = attention_rollout([weights[i].cpu().numpy().astype(np.float64) for i in range(info.num_layers)])
        scores["rollout"] = rollout[query]
    if "norm" in wanted:
        try:
            scores["norm"] = _norm_weighted(problem, base.records[layer], weights[layer], layer, settings.head, query)
        except UnsupportedModelError as err:
            skipped["norm"] = str(err)
    say("gradients and integrated gradients", 0.15)
    embeds = _embeddings(problem)
    gradient_scores, ig = _gradient_methods(problem, embeds, wanted, settings.ig_steps, timings)
    scores.update(gradient_scores)
    say("occlusion and value zeroing", 0.45)
    if "occlusion" in wanted:
        started = time.perf_counter()
        scores["occlusion"] = _occlusion(problem, settings.removal, embeds)
        timings["occlusion"] = time.perf_counter() - started
    if "value_zeroing" in wanted:
        started = time.perf_counter()
        scores["value_zeroing"] = _value_zeroing(problem, base, layer, query)
        timings["value_zeroing"] = time.perf_counter() - started
    if "random" in wanted:
        scores["random"] = np.random.default_rng(settings.seed).random(problem.n)
    order = [m for m in METHODS if m in scores and (m in settings.methods or m == "occlusion")]
    scores = {m: scores[m] for m in order}

    content = ~problem.protected
    head_tau = None
    if settings.head_grid:
        loo = scores["occlusion"][content]
        head_tau = np.array([[stats.kendalltau(weights[l][h, query].cpu().numpy()[content], loo).statistic
                              for h in range(info.num_heads)] for l in range(info.num_layers)], dtype=float)
        if "occlusion" not in settings.methods:
            scores.pop("occlusion")
    agreed = agreement(scores, content, k=settings.top_k, seed=settings.seed)
    agreed = Agreement(**{**agreed.__dict__, "head_tau": head_tau})
    faithful = None
    if settings.faithfulness:
        say("faithfulness (ERASER)", 0.6)
        started = time.perf_counter()
        faithful = faithfulness(problem, scores, settings.removal)
        timings["faithfulness"] = time.perf_counter() - started
    counterfactual = None
    if settings.permutations > 0:
        say("counterfactual attention", 0.85)
        started = time.perf_counter()
        counterfactual = _counterfactual(problem, base, layer=layer, head=settings.head, query=query,
                                         permutations=settings.permutations, adversarial=False, seed=settings.seed)
        timings["counterfactual"] = time.perf_counter() - started
    words = _words(text, facts["tokens"], facts["word_ids"], facts["offsets"])
    say("done", 1.0)
    return AttributionReport(
        model_name=info.name, text=text, target=problem.target, tokens=facts["tokens"], special=facts["special"],
        protected=problem.protected, word_ids=facts["word_ids"], words=words, layer=layer, head=settings.head,
        query=query, removal=settings.removal, scores=scores,
        word_scores={m: word_level(v, facts["word_ids"]) for m, v in scores.items()}, agreement=agreed,
        faithfulness=faithful, ig=ig, counterfactual=counterfactual, skipped=skipped, timings=timings)


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


def corpus_agreement(loaded: LoadedModel, texts: Sequence[str], *, spec: TargetSpec = TargetSpec(),
                     settings: AttributionSettings = AttributionSettings(), backend: str = "torch",
                     resamples: int = 2000, progress: Progress | None = None) -> CorpusAgreement:
    """:func:`attribute` on each text (no counterfactual, no head grid) and the bootstrap interval of the
    mean Kendall τ of every pair of methods."""
    if len(texts) < 2:
        raise InvalidRequestError("a corpus needs at least two texts for a bootstrap interval")
    light = AttributionSettings(**{**settings.__dict__, "head_grid": False, "permutations": 0, "faithfulness": False})
    per_text, methods = [], None
    for i, text in enumerate(texts):
        if progress is not None:
            progress(f"text {i + 1} of {len(texts)}", i / len(texts))
        report = attribute(loaded, text, spec=spec, settings=light, backend=backend)
        methods = methods or report.agreement.methods
        if report.agreement.methods != methods:
            raise InvalidRequestError("the methods that could run differ between the corpus texts")
        per_text.append(report.agreement.kendall)
    stacked = np.stack(per_text)
    mean, low, high = bootstrap_mean_interval(stacked, resamples)
    return CorpusAgreement(methods=methods, per_text=stacked, mean=mean, low=low, high=high, resamples=resamples)


def report_json(report: AttributionReport) -> dict:
    """The numbers of a report as plain JSON-ready values (the CLI's output)."""
    from inspector.export import to_jsonable

    cf = report.counterfactual
    faithful = report.faithfulness
    payload = {
        "model": report.model_name, "text": report.text,
        "target": {k: v for k, v in report.target.__dict__.items()},
        "tokens": list(report.tokens), "protected": report.protected, "words": list(report.words),
        "layer": report.layer, "head": report.head, "query": report.query, "removal": report.removal,
        "scores": report.scores, "word_scores": report.word_scores, "skipped": report.skipped,
        "integrated_gradients": report.ig.__dict__ if report.ig else None,
        "agreement": {"methods": list(report.agreement.methods), "kendall": report.agreement.kendall,
                      "spearman": report.agreement.spearman, "top_k_overlap": report.agreement.top_k,
                      "k": report.agreement.k, "random_tau_95": list(report.agreement.random_tau),
                      "head_tau_vs_occlusion": report.agreement.head_tau},
        "faithfulness": None if faithful is None else {
            "methods": list(faithful.methods), "bins": faithful.bins, "removal": faithful.removal,
            "replacement": faithful.replacement, "comprehensiveness": faithful.comprehensiveness,
            "sufficiency": faithful.sufficiency, "aopc_comprehensiveness": faithful.aopc_comprehensiveness,
            "aopc_sufficiency": faithful.aopc_sufficiency, "curve_fractions": faithful.curve_fractions,
            "curve": faithful.curve, "flip_fraction": faithful.flip_fraction, "flip_rule": faithful.flip_rule},
        "counterfactual": counterfactual_json(cf) if cf is not None else None,
        "timings": report.timings,
    }
    return to_jsonable(payload)


def counterfactual_json(cf: CounterfactualAttention) -> dict:
    from inspector.export import to_jsonable

    return to_jsonable({**cf.__dict__, "permutation_median": cf.permutation_median})
