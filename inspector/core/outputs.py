"""Interventions on a loaded model, compared with the unmodified run — the shared core of the Heads,
Attribution and Lessons pages.

Every intervention goes through the one attention function (:mod:`kernels.hf`): the one forward path
(:func:`inspector.core.forward.forward`, which a capture uses too) runs the shared model inside an
:class:`kernels.hf.AttentionRequest` that carries the interventions, so nothing is attached to the model and
two sessions can intervene on it at once. :func:`model_output` reads what the model produced in its own terms
and :func:`output_change` compares two of those:

- encoder without a head (the bundled MiniLM): the mean-pooled, L2-normalised embedding (what
  sentence-transformers returns); change = cosine distance 1 − cos(e, e′);
- masked LM with a [MASK] in the text, causal LM: the log-distribution over the vocabulary at the first
  [MASK] / the last real token; change = KL(p ‖ p′) in nats;
- classifier: the class logits; change = the largest absolute logit change.

:func:`output_projection` returns each head's slice of the attention output projection W_O, so a head's
contribution to the residual stream (its output × its W_O slice, Kobayashi et al. 2020; Elhage et al. 2021)
can be computed from the ``output`` tensors a request keeps.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch

from inspector.base.errors import InvalidRequestError, UnsupportedModelError
from inspector.core.forward import ForwardResult
from inspector.core.loading import LoadedModel

OutputKind = Literal["embedding", "distribution", "logits"]

# Attention output projections by module-name suffix, per architecture family: (suffix, weight layout).
# "linear": nn.Linear, weight (hidden, heads·head_dim); "conv1d": GPT-2's Conv1D, weight (heads·head_dim, hidden).
_OUTPUT_PROJECTIONS = (
    ("attention.output.dense", "linear"),  # BERT, RoBERTa, MiniLM
    ("attention.out_lin", "linear"),  # DistilBERT
    ("attn.c_proj", "conv1d"),  # GPT-2
    ("self_attn.o_proj", "linear"),  # Llama, Mistral, Qwen2 and most decoders
)


@dataclass(frozen=True)
class ModelOutput:
    """What the model produced, as compared by :func:`output_change`.

    kind: ``embedding`` (vector (hidden,), unit norm), ``distribution`` (vector (vocab,) log-probabilities at
    ``position``) or ``logits`` (vector (labels,)). Tensors are detached float32 on the CPU."""

    kind: OutputKind
    vector: torch.Tensor
    position: int | None = None


def output_position(loaded: LoadedModel, inputs: dict[str, torch.Tensor], sequence: int = 0) -> int | None:
    """The row whose prediction a language model is judged by, or None for embedding/classifier outputs."""
    head = loaded.info.head
    mask = inputs["attention_mask"][sequence]
    if head == "causal-lm":
        return int(mask.nonzero().max())  # the last real token (left or right padding alike)
    if head == "masked-lm" and "input_ids" in inputs:
        mask_id = loaded.codec.special_token_id("mask")
        hits = (inputs["input_ids"][sequence] == mask_id).nonzero() if mask_id is not None else torch.empty(0)
        if len(hits):
            return int(hits[0])
    return None


def takes_logits_to_keep(loaded: LoadedModel) -> bool:
    """Whether the model's forward takes ``logits_to_keep`` (transformers' language-model heads do)."""
    return "logits_to_keep" in inspect.signature(loaded.model.forward).parameters


def read_positions(loaded: LoadedModel, inputs: dict[str, torch.Tensor]) -> torch.Tensor | None:
    """The positions a causal language model's outputs are read at — each sequence's last real token — sorted and
    distinct, for :func:`inspector.core.forward.forward`'s ``logits_to_keep``: the head (on Gemma 3 its 262k-word
    vocabulary costs more than the whole body per token) then runs there only, and :func:`model_output` and
    :func:`output_changes` read the same rows given these positions. None for any other model (an encoder, a
    masked LM, a classifier), or a causal LM whose forward has no ``logits_to_keep``: every position is computed."""
    if loaded.info.head != "causal-lm" or not takes_logits_to_keep(loaded):
        return None
    mask = inputs["attention_mask"]
    last = (mask.long() * torch.arange(mask.shape[1], device=mask.device)).argmax(dim=1)
    return torch.unique(last)  # sorted


def _logit_rows(logits: torch.Tensor, positions: Sequence[int], kept: torch.Tensor | None) -> torch.Tensor:
    """(batch, vocab) logits of each sequence at its position: ``logits`` (batch, n or len(kept), vocab)."""
    index = torch.as_tensor(positions, device=logits.device)
    if kept is not None:
        index = torch.searchsorted(kept.to(logits.device), index)
    return logits[torch.arange(len(positions), device=logits.device), index]


def pooled_embedding(hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """The sentence embedding sentence-transformers computes: (batch, n, hidden) hidden states and (batch, n)
    attention mask → (batch, hidden) float32 unit vectors, the mean over real tokens, L2-normalised."""
    real = mask.to(hidden.dtype)[..., None]
    pooled = (hidden * real).sum(dim=1) / real.sum(dim=1).clamp_min(1)
    return torch.nn.functional.normalize(pooled.float(), dim=-1)


def model_output(loaded: LoadedModel, result: ForwardResult, inputs: dict[str, torch.Tensor],
                 *, keep_graph: bool = False, sequence: int = 0, kept: torch.Tensor | None = None) -> ModelOutput:
    """The output of sequence ``sequence`` (default the first) in the model's own terms (see the module
    docstring).

    ``keep_graph`` keeps the autograd graph (for gradients of the output); otherwise the vector is detached
    and on the CPU. ``kept``: the forward ran with ``logits_to_keep`` = these positions (:func:`read_positions`)."""
    outputs = result.outputs
    position = output_position(loaded, inputs, sequence)
    finish = (lambda t: t) if keep_graph else (lambda t: t.detach().float().cpu())
    if loaded.info.head == "classifier":
        return ModelOutput(kind="logits", vector=finish(outputs.logits[sequence].float()))
    if position is not None:
        row = _logit_rows(outputs.logits[sequence:sequence + 1], [position], kept)[0]
        return ModelOutput(kind="distribution", position=position,
                           vector=finish(torch.log_softmax(row.float(), dim=-1)))
    pooled = pooled_embedding(outputs.hidden_states[-1][sequence:sequence + 1],
                              inputs["attention_mask"][sequence:sequence + 1])[0]
    return ModelOutput(kind="embedding", vector=finish(pooled))


def _changes(kind: OutputKind, base: torch.Tensor, new: torch.Tensor) -> torch.Tensor:
    """:func:`output_change`'s measure for (batch, d) float32 base and new output vectors: (batch,)."""
    if kind == "embedding":
        return 1.0 - torch.nn.functional.cosine_similarity(base, new, dim=1).clamp(-1, 1)
    if kind == "distribution":
        return torch.sum(base.exp() * (base - new), dim=1).clamp_min(0.0)
    return (new - base).abs().amax(dim=1)


def output_change(base: ModelOutput, new: ModelOutput) -> float:
    """How far ``new`` is from ``base``: cosine distance (embeddings), KL(base ‖ new) in nats (distributions),
    largest absolute logit change (classifiers). 0 when nothing changed."""
    if base.kind != new.kind or base.vector.shape != new.vector.shape:
        raise InvalidRequestError(f"cannot compare a {base.kind} output with a {new.kind} output")
    return float(_changes(base.kind, base.vector[None].float(), new.vector[None].float())[0])


def output_changes(loaded: LoadedModel, result: ForwardResult, inputs: dict[str, torch.Tensor],
                   bases: Sequence[ModelOutput], kept: torch.Tensor | None = None) -> np.ndarray:
    """:func:`output_change` of every sequence of a batched forward against its own base: ``bases[b]`` for
    sequence b. (batch,) float64 — the same measures, taken for the whole batch at once. ``kept``: the forward
    ran with ``logits_to_keep`` = these positions (:func:`read_positions`)."""
    kinds = {base.kind for base in bases}
    if len(kinds) != 1:
        raise InvalidRequestError(f"cannot compare one batch against outputs of kinds {sorted(kinds)}")
    kind = kinds.pop()
    outputs = result.outputs
    base = torch.stack([item.vector for item in bases]).float()  # (batch, d) on the CPU
    if kind == "embedding":
        new = pooled_embedding(outputs.hidden_states[-1], inputs["attention_mask"])
    elif kind == "distribution":
        positions = [output_position(loaded, inputs, b) for b in range(len(bases))]
        new = torch.log_softmax(_logit_rows(outputs.logits, positions, kept).float(), dim=-1)
    else:
        new = outputs.logits
    return _changes(kind, base, new.detach().float().cpu()).double().numpy()


def output_change_name(kind: OutputKind) -> str:
    """The change measure :func:`output_change` uses for ``kind``, in words (for labels and reports)."""
    return {"embedding": "cosine distance of the sentence embedding",
            "distribution": "KL divergence of the predicted-token distribution (nats)",
            "logits": "largest change of a class logit"}[kind]


def output_projection(loaded: LoadedModel, layer: int) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Layer ``layer``'s attention output projection, split by head.

    Returns ``weight (heads, head_dim, hidden)`` float32 — head h writes ``out_h @ weight[h]`` into the residual
    stream — and the projection's bias ``(hidden,)`` (shared by all heads) or None. Detached, on the model's
    device. Raises :class:`UnsupportedModelError` for an architecture whose projection it does not know."""
    info = loaded.info
    info.check_layer(layer)
    for suffix, layout in _OUTPUT_PROJECTIONS:
        found = [m for name, m in loaded.model.named_modules() if name.endswith(suffix)]
        if len(found) == info.num_layers:
            module = found[layer]
            weight = module.weight.detach().float()
            per_input = weight.T if layout == "linear" else weight  # (heads·head_dim, hidden)
            if per_input.shape[0] != info.num_heads * info.head_dim:
                break
            bias = module.bias.detach().float() if getattr(module, "bias", None) is not None else None
            return per_input.reshape(info.num_heads, info.head_dim, -1), bias
    raise UnsupportedModelError(f"{info.name} ({info.architecture}): the inspector does not know where this "
                                "architecture keeps its attention output projection, so per-head contributions "
                                "cannot be computed; BERT-, GPT-2- and Llama-style models are supported")


def head_writes(loaded: LoadedModel, layer: int, vectors: torch.Tensor) -> torch.Tensor:
    """What each head of ``layer`` writes into the residual stream for vectors in its value space:
    ``vectors`` (heads or kv_heads, n, head_dim) → (heads, n, hidden) float32, vectors_h @ W_O^h (key/value heads
    serve their whole query group). A record's kept ``value`` gives Kobayashi et al.'s f_h(x_j) = (x_j W_V + b_V)
    W_O^h; its kept ``output`` gives each head's contribution (Elhage et al. 2021)."""
    weight, _ = output_projection(loaded, layer)  # (heads, head_dim, hidden)
    vectors = vectors.float().to(weight.device)
    vectors = vectors.repeat_interleave(weight.shape[0] // vectors.shape[0], dim=0)  # (heads, n, head_dim)
    return torch.einsum("hnd,hdo->hno", vectors, weight)
