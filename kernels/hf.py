"""The one attention function: every attention layer of every supported model calls :func:`inspector_attention`.

It is registered with transformers' ``AttentionInterface`` and — without which a custom backend silently
receives no mask, so padding and causality vanish — ``AttentionMaskInterface`` under the name
``"inspector"``. Load a model with ``attn_implementation="inspector"`` once; after that, what a call does
(backend, statistics, which layers' weights to keep) travels in a context variable set by
:func:`attention_request`, never on the shared model. Outside a request the function is plain exact attention.

Supported, and tested against eager attention on tiny random models: bidirectional encoders with padding
(BERT, RoBERTa, DistilBERT), causal decoders (GPT-2), RoPE with grouped-query attention (Llama), sliding
windows (Mistral). The mask is taken the way FlashAttention takes it — causal flag, sliding window, 2-D key
padding — and checked against the mask pattern transformers describes (:mod:`kernels.hf_masks`), so a pattern this
function cannot honour (packed sequences, chunked or custom overlays, prepared 4-D masks) is an error, not a
silent difference. ``softcap``, ``s_aux`` (attention sinks) and attention dropout are refused the same way.

Two compute backends answer to the same contract: ``torch`` and ``triton``. ``torch`` runs this project's compiled
CPU kernel (:mod:`kernels.compiled_cpu`: output, statistics and any requested weights in one pass per block) wherever
it is built and can run the call; otherwise PyTorch's fused CPU flash-attention op with the statistics derived from
its log-sum-exp (:mod:`kernels.fused_cpu`) wherever that is exact and faster, and
:func:`kernels.reference.blocked_attention` (query blocks, any device) where it is not — autograd recording, tensors
off the CPU, an explicit query block size, decode steps and short sequences (:func:`kernels.fused_cpu.fused_is_faster`);
each layer's record names the path that ran and why.
``triton`` (:mod:`kernels.flash`: the fused FlashAttention kernel for the output and the
statistics, its materialise kernel for requested weights, its Triton backward when autograd records).
``auto`` picks Triton for CUDA tensors and torch otherwise; Triton on the CPU needs ``TRITON_INTERPRET=1``.

Interventions (:mod:`kernels.interventions`) travel in the same request, one frozen dataclass each, and apply
to one layer; the score edits run before the backend, so the statistics describe the attention the model
actually used.

One thing lives outside the attention function: :func:`install_layer_resume` wraps each transformer block once at
load so that a request can :class:`ResumeAt` a layer — the blocks below it return outputs an earlier forward of
the same text kept, instead of recomputing them. A copy of a text with a head ablated at layer l is the text
itself below l, so the Heads report's single-head ablations start there. Outside such a request a block runs
unchanged.
"""

from __future__ import annotations

import contextlib
import contextvars
import time
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Literal

import torch
from transformers import AttentionInterface
from transformers.masking_utils import AttentionMaskInterface, causal_mask_function, prepare_padding_mask

from kernels import compiled_cpu, flash
from kernels.fused_cpu import fused_attention, fused_is_faster, fused_unavailable_reason
from kernels.hf_masks import AttentionContractError as AttentionContractError  # re-exported: callers import it here
from kernels.hf_masks import BoundedMemo, verify_mask
from kernels.hf_masks import MaskSpec as MaskSpec  # the mask side lives in kernels.hf_masks
from kernels.interventions import HeadAblation as HeadAblation  # re-exported: callers import them from here
from kernels.interventions import HeadGate as HeadGate
from kernels.interventions import HeadPatch as HeadPatch
from kernels.interventions import Intervention as Intervention
from kernels.interventions import InterventionError as InterventionError
from kernels.interventions import ScoreScale as ScoreScale
from kernels.interventions import SequenceHeadAblation as SequenceHeadAblation
from kernels.interventions import TieKeysToQueries as TieKeysToQueries
from kernels.interventions import WeightEdit as WeightEdit
from kernels.interventions import after_attention, before_scores, edit_weights
from kernels.reference import (
    StatName,
    blocked_attention,
    check_attention_inputs,
    materialize_weights,
    visible_key_counts,
)

IMPLEMENTATION_NAME = "inspector"

Backend = Literal["torch", "triton"]
BACKENDS: tuple[Backend, ...] = ("torch", "triton")


class BackendUnavailableError(RuntimeError):
    """The requested compute backend cannot run here (e.g. Triton without a GPU)."""


class DeadlinePassed(RuntimeError):
    """The request's deadline passed before an attention layer started; the forward stops there."""


class AttentionDone(Exception):
    """Not an error: the layer :attr:`AttentionRequest.stop_after` names has been recorded, and the rest of the
    forward (that layer's output projection and MLP, the layers above, the head) would only compute outputs the
    caller does not read. Raised out of the model to end the forward there; :func:`inspector.core.forward.forward`
    catches it."""


# Keyword arguments transformers passes that change nothing about the attention maths.
_IGNORED_KWARGS = frozenset({
    "position_ids", "cache_position", "use_cache", "output_attentions", "output_hidden_states",
    "return_dict", "encoder_hidden_states", "past_key_values", "cache", "token_type_ids",
})
# Features with a meaning we do not implement: refusing beats silently computing something else.
_REFUSED_KWARGS = {
    "softcap": "logit soft-capping (Gemma-2 style)",
    "s_aux": "learned attention-sink logits (gpt-oss style)",
    "sinks": "learned attention-sink logits",
    "cu_seq_lens_q": "packed variable-length sequences",
    "cu_seq_lens_k": "packed variable-length sequences",
    "max_length_q": "packed variable-length sequences",
    "max_length_k": "packed variable-length sequences",
    "head_mask": "a head mask (use the inspector's interventions instead)",
}


def inspector_mask(
    batch_size: int,
    q_length: int,
    kv_length: int,
    q_offset: int = 0,
    kv_offset: int = 0,
    mask_function: Callable = causal_mask_function,
    attention_mask: torch.Tensor | None = None,
    use_vmap: bool = False,
    **kwargs,
) -> MaskSpec:
    """The ``AttentionMaskInterface`` entry: keep the 2-D padding mask and the pattern, build nothing n×n."""
    if use_vmap:
        raise AttentionContractError(
            "this model overlays a custom attention-mask pattern (e.g. bidirectional image tokens) that the "
            "inspector backend cannot express; load it with a supported architecture instead")
    padding = prepare_padding_mask(attention_mask, kv_length, kv_offset)
    if padding is not None:  # any nonzero entry is a token: an unpadded mask is not converted, only read
        padding = None if bool(padding.all()) else padding.to(torch.bool)
    return MaskSpec(key_padding_mask=padding, pattern=mask_function, q_offset=int(q_offset),
                    kv_offset=int(kv_offset), q_length=int(q_length), kv_length=int(kv_length))


@dataclass
class LayerRecord:
    """What one attention layer reports during a request. Tensors are detached, on the compute device.

    entropy, lse, sink: (batch, heads, q_len) float32; visible_keys: (batch, q_len) int64 — how many keys
    each query could see; weights: (batch, heads, q_len, k_len) float32 or None — the weights the layer used,
    after any :class:`WeightEdit`. tensors: what :attr:`AttentionRequest.keep` asked for — ``query``
    (batch, heads, q_len, d) and ``key`` / ``value`` (batch, kv_heads, k_len, d) as the layer received them
    (after the projections and any rotary embedding), ``output`` (batch, heads, q_len, d): each head's
    attention output after interventions, before the output projection. k_len: how many keys the layer
    received (with a KV cache that keeps a sliding window, fewer than the text's length). path: which compute path
    ran — ``"triton"``, ``"fused"`` (the fused CPU op, :mod:`kernels.fused_cpu`) or ``"blocked: <why not fused>"``.
    """

    layer: int
    causal: bool
    window: int | None
    scale: float
    stats: dict[str, torch.Tensor]
    visible_keys: torch.Tensor
    weights: torch.Tensor | None
    tensors: dict[str, torch.Tensor] = field(default_factory=dict)
    k_len: int | None = None
    path: str = ""


TensorName = Literal["query", "key", "value", "output"]
TENSOR_NAMES: tuple[TensorName, ...] = ("query", "key", "value", "output")



@dataclass(frozen=True)
class ResumeAt:
    """Start a forward at layer ``layer``: each earlier layer (the model's own transformer blocks, see
    :func:`install_layer_resume`) does not run and returns ``outputs[i]`` instead — its output for these very
    inputs, from an earlier forward that kept it (:attr:`AttentionRequest.keep_layer_outputs`), rows taken to
    match this batch. The attention layers then count from ``layer``, so interventions and records name the
    layers that run. What that buys: a copy of a text changed only from layer ``layer`` on (a head ablated
    there) need not recompute the layers below, which are the unchanged text's.

    ``outputs``: ``layer`` tensors ``(batch, n, hidden)``, each exactly the shape the skipped layer receives."""

    layer: int
    outputs: tuple[torch.Tensor, ...]


@dataclass
class AttentionRequest:
    """Per-call instructions for the attention function, and the records it fills in.

    ``weights_layers``: the layer indices whose exact weights to keep, ``"all"``, or None.
    ``block_size``: queries per block on the torch path (None = sized to a memory budget).
    ``interventions``: applied at their layers (see the module docstring for the order).
    ``keep`` / ``keep_layers``: which tensors (:data:`TENSOR_NAMES`) to keep, detached, for which layers
    (``"all"``, a set of indices, or None).
    ``deadline``: a ``time.monotonic()`` instant; a layer that starts after it raises :class:`DeadlinePassed`.
    ``resume``: skip the layers before :attr:`ResumeAt.layer`, returning their kept outputs
    (:class:`ResumeAt`). ``stop_after``: end the forward (:class:`AttentionDone`) once this layer's record is
    written — for callers that read the records only. ``keep_layer_outputs``: fill ``layer_outputs`` with every
    transformer block's output,
    detached, in order — what a later request resumes from. Both need :func:`install_layer_resume` at load.
    """

    backend: Backend = "torch"
    stats: tuple[StatName, ...] = ("entropy", "lse", "sink")
    weights_layers: frozenset[int] | Literal["all"] | None = None
    block_size: int | None = None
    interventions: tuple[Intervention, ...] = ()
    keep: tuple[TensorName, ...] = ()
    keep_layers: frozenset[int] | Literal["all"] | None = None
    records: list[LayerRecord] = field(default_factory=list)
    deadline: float | None = None
    resume: ResumeAt | None = None
    stop_after: int | None = None
    keep_layer_outputs: bool = False
    layer_outputs: list[torch.Tensor] = field(default_factory=list)
    _visible: dict[tuple, torch.Tensor] = field(default_factory=dict, init=False, repr=False, compare=False)
    _checked: dict[tuple, str | None] = field(default_factory=dict, init=False, repr=False, compare=False)

    @property
    def first_layer(self) -> int:
        """The first layer this request runs (0 unless it resumes)."""
        return self.resume.layer if self.resume is not None else 0

    def wants_weights(self, layer: int) -> bool:
        return self.weights_layers == "all" or (self.weights_layers is not None and layer in self.weights_layers)

    def wants_tensors(self, layer: int) -> bool:
        return bool(self.keep) and (self.keep_layers == "all" or
                                    (self.keep_layers is not None and layer in self.keep_layers))

    def interventions_at(self, layer: int) -> list[Intervention]:
        return [item for item in self.interventions if item.layer == layer]

    def visible_keys(self, q_len: int, k_len: int, *, causal: bool, window: int | None,
                     padding: torch.Tensor | None, device: torch.device) -> torch.Tensor:
        """:func:`kernels.reference.visible_key_counts` for one of this forward's masks, computed once per mask: the
        layers of a forward share it (the sliding-window layers theirs). Read-only: every record holds it."""
        key = (q_len, k_len, causal, window, None if padding is None else id(padding))
        found = self._visible.get(key)
        if found is None:
            shared = (q_len, k_len, causal, window, device) if padding is None else None
            found = _UNPADDED_COUNTS.get(shared) if shared is not None else None
            if found is None:
                found = visible_key_counts(q_len, k_len, causal=causal, window=window, key_padding_mask=padding,
                                           device=device)
                if shared is not None:
                    _UNPADDED_COUNTS.put(shared, found)
            self._visible[key] = found
        return found

    def checked_inputs(self, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                       padding: torch.Tensor | None, window: int | None, stats: tuple[StatName, ...]) -> str | None:
        """:func:`kernels.reference.check_attention_inputs` for a layer's tensors (raising what it raises), then
        :func:`kernels.compiled_cpu.unavailable_reason` for them: both once per shapes, dtypes, device, autograd
        state, padding, window and statistics in a request (every layer of a forward brings the same). The key holds
        the padding tensor itself, so its identity cannot pass to another."""
        recording = torch.is_grad_enabled() and (query.requires_grad or key.requires_grad or value.requires_grad)
        memo = (query.shape, key.shape, value.shape, query.dtype, key.dtype, value.dtype, query.is_cpu, recording,
                padding, window, stats)
        try:
            return self._checked[memo]
        except KeyError:
            check_attention_inputs(query, key, value, padding, window, stats)
            found = self._checked[memo] = compiled_cpu.unavailable_reason(query, key, value)
            return found


# The visible-key counts of an unpadded forward depend on its shape alone: every request shares them (read-only, like
# a request's own), so a forward computes them only for a shape no forward has had.
_UNPADDED_COUNTS: BoundedMemo[torch.Tensor] = BoundedMemo(limit=256)


_REQUEST: contextvars.ContextVar[AttentionRequest | None] = contextvars.ContextVar("inspector_attention_request",
                                                                                      default=None)


@contextlib.contextmanager
def attention_request(request: AttentionRequest) -> Iterator[AttentionRequest]:
    """Make ``request`` govern every attention call in this thread/context until the block exits."""
    if request.backend not in BACKENDS:
        raise BackendUnavailableError(f"unknown attention backend {request.backend!r}; choose one of {BACKENDS}")
    unknown = sorted(set(request.keep) - set(TENSOR_NAMES)) if request.keep else ()
    if unknown:
        raise InterventionError(f"cannot keep {unknown}; choose from {TENSOR_NAMES}")
    token = _REQUEST.set(request)
    try:
        yield request
    finally:
        _REQUEST.reset(token)


def resolve_backend(name: str, device: torch.device | str) -> Backend:
    """Map a user's backend choice (``auto``, ``torch``, ``triton``) to the backend that will actually run.

    ``auto``: Triton for a model on a CUDA device (when Triton can run there), torch otherwise — including on
    the CPU with ``TRITON_INTERPRET=1``, since the interpreter is for tests and teaching, not speed.
    ``triton`` where it cannot run raises :class:`BackendUnavailableError` saying why and what to choose.
    """
    if name == "auto":
        return "triton" if torch.device(device).type == "cuda" and flash.triton_usable(device) else "torch"
    if name == "torch":
        return "torch"
    if name == "triton":
        reason = flash.triton_unavailable_reason(device)
        if reason is not None:
            raise BackendUnavailableError(reason)
        return "triton"
    raise BackendUnavailableError(f"unknown backend {name!r}; choose auto, torch or triton")


_ALLOWED_KWARGS = _IGNORED_KWARGS | {"is_causal", "sliding_window"}


def _check_kwargs(kwargs: dict, dropout: float) -> None:
    # Every layer of every forward comes here: set operations on the names settle the usual call (only names this
    # function knows, none it refuses) without a loop; the loop below runs only where a name needs its value read.
    if kwargs.keys() & _REFUSED_KWARGS.keys() or not kwargs.keys() <= _ALLOWED_KWARGS:
        for name, what in _REFUSED_KWARGS.items():
            if kwargs.get(name) is not None:
                raise AttentionContractError(f"this model uses {what} ({name}), which the inspector backend does not "
                                             "implement; it refuses rather than compute different attention")
        unknown = sorted(k for k, v in kwargs.items() if v is not None and k not in _ALLOWED_KWARGS)
        if unknown:
            raise AttentionContractError(f"the attention function received arguments it does not understand: "
                                         f"{unknown}; refusing rather than ignoring them")
    if dropout:
        raise AttentionContractError(f"attention dropout p={dropout} is active; the inspector measures the model "
                                     "in eval mode — call model.eval()")


def inspector_attention(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: MaskSpec | torch.Tensor | None,
    *,
    scaling: float | None = None,
    dropout: float = 0.0,
    **kwargs,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """transformers' attention contract: ``query (batch, heads, q_len, d)``, ``key/value (batch, kv_heads,
    k_len, d)`` → ``(out (batch, q_len, heads, d), weights (batch, heads, q_len, k_len) | None)``."""
    _check_kwargs(kwargs, dropout)
    request = _REQUEST.get()
    if request is not None and request.deadline is not None and time.monotonic() > request.deadline:
        raise DeadlinePassed(f"the deadline passed before attention layer {request.first_layer + len(request.records)} "
                             "started")
    if isinstance(attention_mask, torch.Tensor):
        raise AttentionContractError("a prepared 4-D attention mask was passed; the inspector backend takes the "
                                     "usual 2-D attention_mask (1 = token, 0 = padding) instead")
    is_causal = kwargs.get("is_causal")
    causal = bool(is_causal if is_causal is not None else getattr(module, "is_causal", False))
    window = kwargs.get("sliding_window")
    scale = scaling if scaling is not None else query.shape[-1] ** -0.5
    q_len, k_len = query.shape[2], key.shape[2]
    padding = None
    if isinstance(attention_mask, MaskSpec):
        if (causal, window, q_len, k_len) not in attention_mask.verified:  # the forward's first layer of each kind
            verify_mask(attention_mask, causal=causal, window=window, q_len=q_len, k_len=k_len, device=query.device)
        padding = attention_mask.key_padding_mask

    backend = request.backend if request is not None else "torch"
    layer = request.first_layer + len(request.records) if request is not None else None
    edits = request.interventions_at(layer) if request is not None and request.interventions else []
    received = (query, key, value)  # what a record keeps: the tensors as the layer received them, before any edit
    if edits:
        query, key, value = before_scores(edits, query, key, value, scale=scale)

    stats_wanted = request.stats if request is not None else ()
    stats_to_compute = stats_wanted if "lse" in stats_wanted else (*stats_wanted, "lse")  # lse materialises weights
    want_weights = request is not None and request.wants_weights(layer)
    return_weights = bool(kwargs.get("output_attentions"))
    weight_edits = [item for item in edits if isinstance(item, WeightEdit)] if edits else []
    needs_weights = want_weights or return_weights or bool(weight_edits)
    weights = None  # every head's exact weights, where the backend wrote them with the output
    path = "triton"
    if backend == "triton":
        reason = flash.triton_unavailable_reason(query.device, dtype=query.dtype, head_dim=query.shape[-1])
        if reason is not None:
            raise BackendUnavailableError(reason)
        # Differentiable through the Triton backward when autograd records; the plain forward otherwise.
        out, stats = flash.flash_attention(query, key, value, causal=causal, scale=scale, key_padding_mask=padding,
                                           window=window, stats=stats_to_compute)
    else:
        if request is not None:  # checked once per kind of layer in a request
            compiled_reason = request.checked_inputs(query, key, value, padding, window, stats_to_compute)
        else:
            check_attention_inputs(query, key, value, padding, window, stats_to_compute)
            compiled_reason = compiled_cpu.unavailable_reason(query, key, value)
        out, stats, weights, path = _torch_backend(
            query, key, value, causal=causal, scale=scale, padding=padding, window=window, stats=stats_to_compute,
            weights=needs_weights, block_size=request.block_size if request is not None else None,
            compiled_reason=compiled_reason)
    if needs_weights and weights is None:
        weights = _exact_weights(backend, query, key, stats["lse"], causal=causal, scale=scale, padding=padding,
                                 window=window)
    if weight_edits:
        out, weights, stats = edit_weights(weight_edits, out, weights, stats, value, causal=causal, window=window,
                                            padding=padding)
    if edits:
        out = after_attention(edits, out, padding)
    if request is not None:
        declared = getattr(module, "layer_idx", None)
        if isinstance(declared, int) and declared != layer:
            raise AttentionContractError(f"attention layer {declared} ran as call {layer}: layers must run in order "
                                         "once per forward inside one request")
        visible = request.visible_keys(q_len, k_len, causal=causal, window=window, padding=padding,
                                       device=query.device)  # (batch or 1, q_len)
        batch = query.shape[0]
        recording = torch.is_grad_enabled()  # else nothing here carries autograd history: no detached copies to make
        if request.wants_tensors(layer):
            kept = dict(zip(("query", "key", "value", "output"), (*received, out)))
            tensors = {name: kept[name].detach() for name in request.keep}
        else:
            tensors = {}
        request.records.append(LayerRecord(
            layer=layer, causal=causal, window=window, scale=float(scale),
            stats={name: stats[name].detach() if recording else stats[name] for name in stats_wanted},
            visible_keys=visible if visible.shape[0] == batch else visible.expand(batch, q_len),
            weights=(weights.detach() if recording else weights) if want_weights else None,
            tensors=tensors, k_len=k_len, path=path,
        ))
        if request.stop_after is not None and layer >= request.stop_after:
            raise AttentionDone(f"layer {layer} recorded; the request stops after it")
    return out.transpose(1, 2).contiguous(), (weights if return_weights else None)


def _torch_backend(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, *, causal: bool, scale: float,
                   padding: torch.Tensor | None, window: int | None, stats: tuple[StatName, ...],
                   block_size: int | None, weights: bool, compiled_reason: str | None
                   ) -> tuple[torch.Tensor, dict[str, torch.Tensor], torch.Tensor | None, str]:
    """The ``torch`` backend: the compiled CPU kernel (:mod:`kernels.compiled_cpu`) wherever it is built and can
    run the call; else the fused CPU op with the statistics derived from its log-sum-exp (:mod:`kernels.fused_cpu`)
    wherever that is exact and faster (:func:`kernels.fused_cpu.fused_is_faster`), the blocked path otherwise.
    Returns the output, the statistics, every head's exact weights when ``weights`` asks and the compiled kernel
    wrote them with the output (None otherwise: the caller materialises them from the log-sum-exp), and which path
    ran (``"compiled"``, ``"fused"``, or ``"blocked: <reason>"``). ``compiled_reason``: why the compiled kernel cannot
    run these tensors (:func:`kernels.compiled_cpu.unavailable_reason`), None when it can; the caller has checked
    the inputs (:func:`kernels.reference.check_attention_inputs`) in either case."""
    q_len, k_len = query.shape[2], key.shape[2]
    if block_size is None:
        if compiled_reason is None:
            return compiled_cpu.launch(query, key, value, causal=causal, scale=scale, key_padding_mask=padding,
                                       window=window, stats=stats, with_weights=weights) + ("compiled",)
    reason = ("the request sets a query block size, a parameter of the blocked path" if block_size is not None
              else fused_unavailable_reason(query, key, value))
    if reason is None and not fused_is_faster(q_len, k_len, query.shape[-1]):
        reason = f"faster for {q_len} queries × {k_len} keys of size {query.shape[-1]} (fused_cpu.fused_is_faster)"
    if reason is None:
        out, stats_out = fused_attention(query, key, value, causal=causal, scale=scale, key_padding_mask=padding,
                                         window=window, stats=stats)
        return out, stats_out, None, "fused"
    out, stats_out = blocked_attention(query, key, value, causal=causal, scale=scale, key_padding_mask=padding,
                                       window=window, stats=stats, block_size=block_size)
    return out, stats_out, None, f"blocked: {reason}"


def _exact_weights(backend: Backend, query: torch.Tensor, key: torch.Tensor, lse: torch.Tensor, *, causal: bool,
                   scale: float, padding: torch.Tensor | None, window: int | None) -> torch.Tensor:
    """All heads' exact weights ``(batch, heads, q_len, k_len)`` float32 from the forward's log-sum-exp."""
    needs_grad = torch.is_grad_enabled() and (query.requires_grad or key.requires_grad)
    if backend == "triton" and not needs_grad:
        return flash.materialize_weights(query, key, lse=lse, causal=causal, scale=scale, key_padding_mask=padding,
                                         window=window)
    weights = materialize_weights(query, key, lse=lse, causal=causal, scale=scale, key_padding_mask=padding,
                                  window=window)
    if backend == "triton":
        # The Triton LSE carries no gradient, so exp(S − LSE) alone would miss the softmax's normalising term.
        # Dividing by the row sum (1 up to rounding; 0 for a row that sees nothing) leaves the values as they
        # are and restores exactly the softmax gradient.
        weights = weights / weights.sum(dim=-1, keepdim=True).clamp_min(torch.finfo(weights.dtype).tiny)
    return weights


# ------------------------------------------------------------------------------------------- layer resume

_LAYER_INDEX = "_inspector_layer_index"  # on each wrapped block: its index
_RESUMABLE_LAYERS = "_inspector_resumable_layers"  # on the model: how many blocks were wrapped


def is_attention_module(module: torch.nn.Module) -> bool:
    """Whether ``module`` is one of transformers' attention modules (the ones that call the attention interface:
    they carry ``is_causal`` and ``scaling``)."""
    return hasattr(module, "is_causal") and hasattr(module, "scaling")


def transformer_layers(model: torch.nn.Module, num_layers: int) -> torch.nn.ModuleList | None:
    """The model's stack of transformer blocks — the one ``ModuleList`` of ``num_layers`` modules that each hold
    exactly one attention module (BERT's ``encoder.layer``, GPT-2's ``h``, Llama's ``layers`` …) — or None
    when there is not exactly one such list."""
    found = [m for m in model.modules() if isinstance(m, torch.nn.ModuleList) and len(m) == num_layers
             and all(sum(map(is_attention_module, block.modules())) == 1 for block in m)]
    return found[0] if len(found) == 1 else None


def install_layer_resume(model: torch.nn.Module, num_layers: int) -> bool:
    """Make the model's transformer blocks honour :class:`ResumeAt` and ``keep_layer_outputs`` of the current
    request; outside such a request they run exactly as before. Call once at load, before the model is shared
    (like the attention implementation, what a call does then travels in the request, never on the model).
    Idempotent. Returns False, installing nothing, when the blocks cannot be found (see
    :func:`transformer_layers`); the requests that resume are then refused by :func:`layer_resume_installed`'s
    callers, never run wrong."""
    if layer_resume_installed(model, num_layers):
        return True
    layers = transformer_layers(model, num_layers)
    if layers is None:
        return False
    for index, block in enumerate(layers):
        setattr(block, _LAYER_INDEX, index)
        # A method bound to the block (not a closure over it): a deep copy of the model rebinds it to the copy.
        block.forward = types.MethodType(_resumable_forward, block)
    setattr(model, _RESUMABLE_LAYERS, num_layers)
    return True


def layer_resume_installed(model: torch.nn.Module, num_layers: int) -> bool:
    """Whether :func:`install_layer_resume` wrapped all ``num_layers`` blocks of ``model``."""
    return getattr(model, _RESUMABLE_LAYERS, None) == num_layers


def _resumable_forward(block: torch.nn.Module, *args, **kwargs):
    """A wrapped block's forward: its class's own, unless the request resumes past it or keeps its output."""
    index = getattr(block, _LAYER_INDEX)
    request = _REQUEST.get()
    if request is not None and request.resume is not None and index < request.resume.layer:
        kept = request.resume.outputs[index]
        received = args[0] if args else kwargs.get("hidden_states")
        if not isinstance(received, torch.Tensor) or received.shape != kept.shape:
            raise AttentionContractError(
                f"layer {index} was to be skipped with a kept output of shape {tuple(kept.shape)} but received "
                f"{tuple(getattr(received, 'shape', ()))}; resume from outputs of the same batch shape")
        return kept
    out = type(block).forward(block, *args, **kwargs)
    if request is not None and request.keep_layer_outputs:
        if not isinstance(out, torch.Tensor):
            raise AttentionContractError(f"layer {index} returns {type(out).__name__}, not a hidden-state tensor, so "
                                         "a later forward cannot resume from it")
        request.layer_outputs.append(out.detach())
    return out


def register() -> None:
    """Register the function and its mask under ``"inspector"`` (idempotent; names only, no model state)."""
    AttentionInterface.register(IMPLEMENTATION_NAME, inspector_attention)
    AttentionMaskInterface.register(IMPLEMENTATION_NAME, inspector_mask)


register()
