"""The problem every attribution method answers: one text, one model, one scalar target f(x).

:func:`setup_problem` tokenises the text, runs the baseline forward (every layer's weights kept) and resolves f
(:func:`resolve_target`, stated in words on the page):

- encoder without a head (the bundled MiniLM): cosine similarity between the text's mean-pooled, normalised
  embedding (what sentence-transformers returns) and a reference sentence's;
- masked LM: log p(token at the first [MASK]); causal LM: log p(next token) after the text;
- classifier: p(predicted class) — ERASER's quantity (DeYoung et al. 2020).

Also here: f on any batch of token-id rows (:func:`evaluate_rows`, what removal-based methods and ERASER run),
f as a function of the input embeddings (:func:`embed_forward`, what Captum differentiates), and the memory
estimate that sizes every batch (:func:`batch_size_for`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch

from inspector.base.errors import InvalidRequestError, InvalidTextError, UnsupportedModelError
from inspector.base.i18n import Notice
from inspector.base.limits import ATTRIBUTION_MEMORY_BUDGET_BYTES
from inspector.base.tokens import readable_tokens
from inspector.core.budget import attention_bytes
from inspector.core.forward import ForwardResult, encode_text, forward, token_word_ids
from inspector.core.loading import LoadedModel
from inspector.core.outputs import output_position, pooled_embedding, takes_logits_to_keep
from kernels.hf import Intervention, ResumeAt

RemovalMode = Literal["mask", "delete"]
TargetKind = Literal["similarity", "masked-token", "next-token", "class"]
QueryChoice = int | Literal["first", "last"] | None

DEFAULT_REFERENCE = "The tired animal stayed on its side of the road."
# Activations kept for one sequence's backward, per layer and token: ~12 hidden-sized tensors (projections,
# feed-forward, norms) plus 3 heads × n score-sized ones; used to size batches to a memory budget.
_HIDDEN_TENSORS_PER_TOKEN, _SCORE_TENSORS_PER_HEAD = 12, 3


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
    class_index/label: the classifier's class; reference: the reference sentence (similarity); skipped: a language
    model's top prediction (readable) when the default target passed over it as whitespace or special
    (:func:`default_token`)."""

    kind: TargetKind
    description: str
    value: float
    position: int | None = None
    token_id: int | None = None
    token: str | None = None
    class_index: int | None = None
    label: str | None = None
    reference: str | None = None
    skipped: str | None = None

    def __post_init__(self) -> None:
        if not math.isfinite(self.value):
            raise ValueError(f"Target.value must be finite, got {self.value}")


@dataclass
class Problem:
    """Everything the methods share for one (model, text, target): internal, holds live tensors."""

    loaded: LoadedModel
    input_ids: torch.Tensor  # (1, n) int64
    attention_mask: torch.Tensor  # (1, n)
    target: Target
    reference: torch.Tensor | None  # (hidden,) unit vector, similarity targets only
    protected: np.ndarray  # (n,) bool: special tokens and a masked LM's [MASK] — never removed or ranked
    backend: str
    budget_bytes: int
    # Every transformer block's output in the baseline forward ((1, n, hidden) each; empty when the model cannot
    # resume at a layer): a batch of the text changed only from layer l on starts there (:meth:`resume_at`).
    layer_outputs: tuple[torch.Tensor, ...] = ()

    def resume_at(self, layer: int, batch: int) -> ResumeAt | None:
        """Start a forward of ``batch`` copies of the text at ``layer`` (the blocks below return the baseline's
        outputs — a copy changed only from ``layer`` on is the text itself there), or None: no kept outputs, or
        layer 0."""
        if not self.layer_outputs or layer == 0:
            return None
        # Copies, not views: a block that runs may add to its input in place.
        return ResumeAt(layer, tuple(out.repeat(batch, 1, 1) for out in self.layer_outputs[:layer]))

    @property
    def n(self) -> int:
        return int(self.input_ids.shape[1])

    @property
    def device(self) -> torch.device:
        return self.loaded.device


@dataclass(frozen=True)
class EncodingFacts:
    """The tokenizer's view of the text. tokens: n strings; special: (n,) bool; word_ids: (n,) int32 (−1 for
    specials); offsets: (n, 2) character offsets, or None for tokenizers without them."""

    tokens: tuple[str, ...]
    special: np.ndarray
    word_ids: np.ndarray
    offsets: np.ndarray | None

    def __post_init__(self) -> None:
        n = len(self.tokens)
        for name in ("special", "word_ids"):
            if getattr(self, name).shape != (n,):
                raise ValueError(f"EncodingFacts.{name} has shape {getattr(self, name).shape}, expected {(n,)}")


def _sequence_bytes(loaded: LoadedModel, n: int, *, backward: bool) -> int:
    info = loaded.info
    hidden = info.num_layers * n * _HIDDEN_TENSORS_PER_TOKEN * info.hidden_size * 4  # float32 activations
    return max(1, (hidden + attention_bytes(info, n, _SCORE_TENSORS_PER_HEAD)) * (3 if backward else 1))


def batch_size_for(loaded: LoadedModel, n_tokens: int, *, backward: bool,
                   budget_bytes: int = ATTRIBUTION_MEMORY_BUDGET_BYTES, most: int = 256) -> int:
    """How many sequences of ``n_tokens`` fit one forward (``backward``: and its backward) in ``budget_bytes``
    — an estimate from the activation sizes, used for Captum's ``internal_batch_size`` and for batching."""
    return int(max(1, min(most, budget_bytes // _sequence_bytes(loaded, n_tokens, backward=backward))))


def _positions(problem: Problem, mask: torch.Tensor, ids: torch.Tensor | None) -> torch.Tensor:
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
    first_mask = (ids == problem.loaded.codec.special_token_id("mask")).long().argmax(dim=1)
    return torch.where(mask.sum(dim=1) == problem.n, fixed, first_mask)


def target_values(problem: Problem, outputs, mask: torch.Tensor, ids: torch.Tensor | None = None,
                  kept: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """f for every sequence of a batch ((batch,) float32, differentiable) and its decision ((batch,) int64:
    the argmax class or token, −1 for a similarity). ``kept``: the forward computed logits at these positions
    only (``logits_to_keep``, :func:`target_forward`)."""
    target = problem.target
    if target.kind == "similarity":
        pooled = pooled_embedding(outputs.hidden_states[-1], mask)
        values = pooled @ problem.reference
        return values, torch.full_like(values, -1, dtype=torch.long)
    if target.kind == "class":
        probs = torch.softmax(outputs.logits.float(), dim=-1)
        return probs[:, target.class_index], probs.argmax(dim=-1)
    rows = torch.arange(mask.shape[0], device=mask.device)
    positions = _positions(problem, mask, ids)
    if kept is not None:
        positions = torch.searchsorted(kept, positions)
    logits = outputs.logits[rows, positions].float()  # (batch, vocab)
    return torch.log_softmax(logits, dim=-1)[:, target.token_id], logits.argmax(dim=-1)


def target_forward(problem: Problem, inputs: dict[str, torch.Tensor], *, grad: bool = False,
                   interventions: Sequence[Intervention] = (),
                   resume: ResumeAt | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """One forward of a batch (``input_ids`` or ``inputs_embeds``, and ``attention_mask``) with ``interventions``
    (starting at ``resume``'s layer, :meth:`Problem.resume_at`), and its :func:`target_values`. A next-token target
    reads one row per sequence, so a causal LM's head runs at those rows only (``logits_to_keep``): on Gemma 3 the
    262k-word head at every position cost more than the whole body."""
    mask, ids = inputs["attention_mask"], inputs.get("input_ids")
    kept = None
    if problem.target.kind == "next-token" and takes_logits_to_keep(problem.loaded):
        kept = torch.unique(_positions(problem, mask, ids))  # sorted
    result = forward(problem.loaded, inputs, backend=problem.backend, grad=grad, stats=(),
                     interventions=interventions, logits_to_keep=kept, resume=resume)
    return target_values(problem, result.outputs, mask, ids, kept)


def _single_token_id(loaded: LoadedModel, token: str) -> int:
    ids = loaded.codec.input_ids(token, add_special_tokens=False)
    if len(ids) != 1:
        direct = loaded.codec.vocabulary_id(token)
        ids = [direct] if isinstance(direct, int) and direct != loaded.codec.special_token_id("unk") else ids
    if len(ids) != 1:
        raise InvalidRequestError(f"the target token {token!r} is {len(ids)} tokens for this tokenizer; choose a "
                                  "word that is a single token (or leave it empty for the model's top prediction)",
                                  notice=Notice("attribution.error.target_tokens", token=token, count=len(ids)))
    return int(ids[0])


def setup_problem(loaded: LoadedModel, text: str, spec: TargetSpec, backend: str,
                  budget_bytes: int) -> tuple[Problem, ForwardResult, EncodingFacts]:
    """Tokenise, run the baseline forward (every layer's weights and values kept) and resolve the target.

    Returns the problem, the baseline forward and the tokenizer's facts about the text."""
    encoded = encode_text(loaded, text)
    encoding, inputs, special = encoded.encoding, encoded.inputs, encoded.special
    head = loaded.info.head
    base = forward(loaded, inputs, backend=backend, weights_layers="all", keep=("value",), keep_layers="all",
                   keep_layer_outputs=loaded.can_resume)
    outputs = base.outputs
    ids = inputs["input_ids"]
    protected = special.copy()
    reference = None
    if head == "classifier":
        probs = torch.softmax(outputs.logits[0].float(), dim=-1)
        index = int(probs.argmax()) if spec.class_index is None else int(spec.class_index)
        if not 0 <= index < probs.numel():
            raise InvalidRequestError(f"class {index} does not exist: the classifier has classes 0–{probs.numel() - 1}",
                                      notice=Notice("attribution.error.no_class", index=index,
                                                    last=probs.numel() - 1))
        label = loaded.info.labels[index] if index < len(loaded.info.labels) else str(index)
        target = Target(kind="class", value=float(probs[index]), class_index=index, label=label,
                        description=f"the probability the classifier gives class “{label}”"
                                    + (" (its prediction)" if index == int(probs.argmax()) else ""))
    elif head in ("masked-lm", "causal-lm"):
        position = output_position(loaded, inputs)  # the first [MASK], or the last real token
        if position is None:
            mask_token = loaded.codec.special_token("mask") or "[MASK]"
            raise InvalidTextError(f"a masked language model predicts the word at {mask_token}; "
                                   "the text has none — put it where the model should fill in a word",
                                   notice=Notice("attribution.error.no_mask", mask=mask_token))
        if head == "masked-lm":
            protected[position] = True
        log_probs = torch.log_softmax(outputs.logits[0, position].float(), dim=-1)
        top = int(log_probs.argmax())
        token_id = default_token(loaded, log_probs) if not spec.token else _single_token_id(loaded, spec.token)
        token = str(loaded.codec.token_string(token_id))
        where = "at the [MASK]" if head == "masked-lm" else "as the next token after the text"
        skipped = readable_tokens([str(loaded.codec.token_string(top))])[0] if token_id != top and \
            not spec.token else None
        why = (" (the model's top prediction)" if token_id == top else
               f" (the model's most likely word: its top prediction “{skipped}” is whitespace or a special token)"
               if skipped else "")
        target = Target(kind="masked-token" if head == "masked-lm" else "next-token", position=position,
                        token_id=token_id, token=token, value=float(log_probs[token_id]), skipped=skipped,
                        description=f"the log-probability of “{readable_tokens([token])[0]}” {where}{why}")
    else:
        if not spec.reference or not spec.reference.strip():
            raise InvalidTextError("the target compares the text with a reference sentence; type one",
                                   notice=Notice("attribution.error.no_reference"))
        ref_inputs = encode_text(loaded, spec.reference).inputs
        ref_out = forward(loaded, ref_inputs, backend=backend).outputs
        reference = pooled_embedding(ref_out.hidden_states[-1], ref_inputs["attention_mask"])[0]
        value = float(pooled_embedding(outputs.hidden_states[-1], inputs["attention_mask"])[0] @ reference)
        target = Target(kind="similarity", value=value, reference=spec.reference,
                        description=f"the cosine similarity between the text's sentence embedding (mean of the last "
                                    f"layer over its tokens) and that of the reference “{spec.reference}”")
    if (~protected).sum() < 2:
        raise InvalidTextError("the text needs at least two tokens besides the special ones to compare rankings",
                               notice=Notice("attribution.error.too_short"))
    offsets = encoding.get("offset_mapping")
    facts = EncodingFacts(tokens=encoded.tokens, special=special, word_ids=token_word_ids(encoding, special),
                          offsets=offsets[0].numpy() if offsets is not None else None)
    problem = Problem(loaded=loaded, input_ids=ids, attention_mask=inputs["attention_mask"], target=target,
                      reference=reference, protected=protected, backend=backend, budget_bytes=budget_bytes,
                      layer_outputs=tuple(base.layer_outputs))
    return problem, base, facts


# How far down the ranking the default target looks for a word before it settles for the top prediction.
_DEFAULT_TOKEN_CANDIDATES = 50


def default_token(loaded: LoadedModel, log_probs: torch.Tensor) -> int:
    """The token a language model's target explains when none is named: its most likely prediction that is not
    whitespace only and not a special token (Gemma's top next token after a sentence is often "↵↵", which explains
    nothing about the text; issue 44), among the :data:`_DEFAULT_TOKEN_CANDIDATES` most likely; the top prediction
    when none of them is a word. ``log_probs``: (vocab,)."""
    special = set(loaded.codec.all_special_ids())
    ranked = torch.topk(log_probs, min(_DEFAULT_TOKEN_CANDIDATES, log_probs.numel())).indices.tolist()
    for token_id in ranked:
        if token_id not in special and loaded.codec.decode([token_id]).strip():
            return int(token_id)
    return int(ranked[0])


def resolve_target(loaded: LoadedModel, text: str, spec: TargetSpec = TargetSpec(), *,
                   backend: str = "torch") -> Target:
    """f(x) for ``text`` in words and its value (see the module docstring)."""
    return setup_problem(loaded, text, spec, backend, ATTRIBUTION_MEMORY_BUDGET_BYTES)[0].target


def query_index(query: QueryChoice, problem: Problem) -> int:
    """The token row the layer-local methods read: ``query`` as a position, or (None) the target's own row for
    a language model, else the last token of a causal model or the first of an encoder."""
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
        raise InvalidRequestError(f"query {query!r} is not a token position: the text has tokens 0–{n - 1}",
                                  notice=Notice("attribution.error.query", query=repr(query), last=n - 1))
    return int(query)


# ------------------------------------------------------------------------------------------- evaluations

def evaluate_rows(problem: Problem, rows: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
    """f and the decision for token-id sequences of any lengths (right-padded, batched to the memory budget).
    Identical rows are run once."""
    unique: dict[tuple[int, ...], int] = {}
    for row in rows:
        unique.setdefault(tuple(int(t) for t in row), len(unique))
    keys = list(unique)
    values, decisions = np.empty(len(keys)), np.empty(len(keys), dtype=np.int64)
    longest = max(len(k) for k in keys)
    chunk = batch_size_for(problem.loaded, longest, backward=False, budget_bytes=problem.budget_bytes)
    pad = problem.loaded.codec.special_token_id("pad")
    pad = 0 if pad is None else int(pad)
    for start in range(0, len(keys), chunk):
        batch = keys[start:start + chunk]
        width = max(len(k) for k in batch)
        ids = torch.full((len(batch), width), pad, dtype=torch.long, device=problem.device)
        mask = torch.zeros((len(batch), width), dtype=torch.long, device=problem.device)
        for i, k in enumerate(batch):
            ids[i, :len(k)] = torch.tensor(k, dtype=torch.long)
            mask[i, :len(k)] = 1
        f, decision = target_forward(problem, {"input_ids": ids, "attention_mask": mask})
        values[start:start + len(batch)] = f.float().cpu().numpy()
        decisions[start:start + len(batch)] = decision.cpu().numpy()
    index = [unique[tuple(int(t) for t in row)] for row in rows]
    return values[index], decisions[index]


def replacement_id(loaded: LoadedModel) -> tuple[int, str]:
    """The token that stands in for a removed one in ``mask`` mode, and its name."""
    for role in ("mask", "unk", "pad"):
        token, token_id = loaded.codec.special_token(role), loaded.codec.special_token_id(role)
        if token is not None and token_id is not None:
            return int(token_id), str(token)
    raise UnsupportedModelError("this tokenizer has no [MASK], [UNK] or [PAD] token to replace removed tokens "
                                "with; choose removal by deletion", notice=Notice("attribution.error.no_replacement"))


def removal_modes(loaded: LoadedModel) -> dict[str, str | None]:
    """The removal modes ``loaded`` supports, each with the token that stands in for a removed one (None: the
    token is deleted): ``{"mask": "[MASK]", "delete": None}`` on BERT, ``{"mask": "<unk>", …}`` on a decoder whose
    tokenizer has no mask token, only ``{"delete": None}`` when it has none of [MASK], [UNK] or [PAD]. A page offers
    these and names the stand-in (issue 44: "replace by [MASK]" on a model without one)."""
    modes: dict[str, str | None] = {}
    try:
        modes["mask"] = replacement_id(loaded)[1]
    except UnsupportedModelError:
        pass
    modes["delete"] = None
    return modes


def embed_forward(problem: Problem) -> Callable[[torch.Tensor], torch.Tensor]:
    """f as a function of input embeddings (batch, n, hidden) → (batch,), for Captum."""

    def f(embeds: torch.Tensor) -> torch.Tensor:
        mask = problem.attention_mask.expand(embeds.shape[0], -1)
        grad = torch.is_grad_enabled()
        values = target_forward(problem, {"inputs_embeds": embeds, "attention_mask": mask}, grad=grad)[0]
        return values if grad else values.clone()

    return f


def token_embeddings(problem: Problem, ids: torch.Tensor) -> torch.Tensor:
    """(..., hidden) input (word) embeddings of ``ids`` in the model's dtype; the model adds positions itself."""
    with torch.no_grad():
        return problem.loaded.model.get_input_embeddings()(ids.to(problem.device)).detach()
