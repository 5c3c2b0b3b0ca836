"""The parts of a decoder that write into, read from and normalise its residual stream, found once per model, and
every normalisation *frozen*: replaced by the linear map it applied in the measured forward (TransformerLens's
convention, Elhage et al. 2021), so that a sum of components through it is the sum of their images.

Supported decoders: Llama-style (Llama, Mistral, Qwen2/3 — RMSNorm, RoPE, GQA, sliding windows, q/k biases), GPT-2
(LayerNorm with bias, learned positions, Conv1D projections, biases everywhere) and Gemma 3 (``(1 + w)`` RMSNorm,
scaled embeddings, q/k norms, a post-attention "sandwich" norm, per-layer-type RoPE). Anything else is refused
with :class:`UnsupportedModelError`; a norm whose frozen map does not reproduce the module's own output on the
measured input is refused too (never decomposed wrong).

Linear maps are read off the modules themselves: a projection ``f`` (``nn.Linear`` or GPT-2's ``Conv1D``) applied
to a component ``c`` without its bias is ``f(c) − f(0)``, so no weight layout is re-implemented here.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass

import torch

from inspector.base.errors import InvalidRequestError, UnsupportedModelError
from inspector.base.i18n import Notice
from inspector.core.loading import LoadedModel
from inspector.core.model_folders import model_name
from kernels.hf import is_attention_module, transformer_layers

# model_type → family; the family decides where the norms sit (see LayerParts).
FAMILIES = {"llama": "llama", "mistral": "llama", "qwen2": "llama", "qwen3": "llama", "gpt2": "gpt2",
            "gemma3_text": "gemma3"}
DECODER_NAMES = "bundled:smollm2-135m or bundled:gemma-3-270m"
_FROZEN_NORM_TOLERANCE = 1e-4  # relative: a frozen map must reproduce the module's own output this closely


@dataclass(frozen=True)
class FrozenNorm:
    """A normalisation as the linear map it applied in one forward: ``norm(x) = scale ⊙ (x − centre·mean(x)) + bias``.

    scale: (..., width) float64 — the module's weight over the measured root-mean-square (or standard deviation) of
    each row; centre: whether the mean is removed first (LayerNorm); bias: (width,) float64 or None."""

    scale: torch.Tensor
    centre: bool
    bias: torch.Tensor | None

    def linear(self, parts: torch.Tensor) -> torch.Tensor:
        """The map without its bias, applied to each component: parts (C, ..., width) → (C, ..., width)."""
        if self.centre:
            parts = parts - parts.mean(dim=-1, keepdim=True)
        return parts * self.scale


def freeze_norm(module: torch.nn.Module, x: torch.Tensor, what: str) -> FrozenNorm:
    """``module`` (LayerNorm or an RMSNorm) frozen at input ``x`` (..., width); checked against ``module(x)``."""
    x64 = x.double()
    weight = getattr(module, "weight", None)
    if isinstance(module, torch.nn.LayerNorm):
        var = x64.var(dim=-1, unbiased=False, keepdim=True)
        gain = weight.double() if weight is not None else torch.ones(x.shape[-1], dtype=torch.float64)
        frozen = FrozenNorm(scale=gain / torch.sqrt(var + module.eps), centre=True,
                            bias=module.bias.double() if module.bias is not None else None)
    else:
        eps = getattr(module, "variance_epsilon", getattr(module, "eps", None))
        if eps is None or weight is None:
            raise UnsupportedModelError(f"{what} is a {type(module).__name__}, which the mechanism analyses cannot "
                                        "freeze; they support LayerNorm and RMSNorm models (" + DECODER_NAMES + ")")
        # Gemma's RMSNorm multiplies by (1 + w): its weights are stored as offsets from one.
        gain = weight.double() + (1.0 if "Gemma" in type(module).__name__ else 0.0)
        rms = torch.sqrt(x64.pow(2).mean(dim=-1, keepdim=True) + eps)
        frozen = FrozenNorm(scale=gain / rms, centre=False, bias=None)
    with torch.inference_mode():
        actual = module(x).double()
    mapped = frozen.linear(x64[None])[0] + (frozen.bias if frozen.bias is not None else 0.0)
    error = float((mapped - actual).abs().max()) / max(float(actual.abs().max()), 1e-30)
    if error > _FROZEN_NORM_TOLERANCE:
        raise UnsupportedModelError(f"{what} ({type(module).__name__}) is not a LayerNorm or RMSNorm the mechanism "
                                    f"analyses can freeze (relative error {error:.1e}); use " + DECODER_NAMES)
    return frozen


def affine_part(function: Callable[[torch.Tensor], torch.Tensor], parts: torch.Tensor) -> torch.Tensor:
    """``function``'s linear part applied to each row of ``parts`` (..., width): ``f(c) − f(0)`` (f affine)."""
    with torch.inference_mode():
        zero = function(torch.zeros_like(parts[..., :1, :]))
        return function(parts) - zero


@dataclass(frozen=True)
class LayerParts:
    """One transformer block. ``query``/``key``: (..., hidden) → (..., heads or kv_heads, head_dim), bias included,
    before any q/k norm and rotation; ``output``: (..., heads·head_dim) → (..., hidden), the output projection with its
    bias. ``post_attention_norm``: Gemma's norm on the attention output before the residual add (None elsewhere;
    Llama's module of that name is the MLP's input norm). ``layer_type``: Gemma's "sliding_attention" or
    "full_attention" (its RoPE differs between them), else None."""

    attention: torch.nn.Module
    input_norm: torch.nn.Module
    post_attention_norm: torch.nn.Module | None
    query_norm: torch.nn.Module | None
    key_norm: torch.nn.Module | None
    query: Callable[[torch.Tensor], torch.Tensor]
    key: Callable[[torch.Tensor], torch.Tensor]
    output: Callable[[torch.Tensor], torch.Tensor]
    output_has_bias: bool
    layer_type: str | None


@dataclass(frozen=True)
class ModelParts:
    """A decoder's residual-stream parts: its blocks, final norm, unembedding (``unembed`` (vocab, hidden) and
    ``unembed_bias`` (vocab,) or None), token embedding, learned position embedding (GPT-2, else None) and rotary
    embedding module (None without RoPE)."""

    family: str
    layers: tuple[LayerParts, ...]
    final_norm: torch.nn.Module
    unembed: torch.Tensor
    unembed_bias: torch.Tensor | None
    token_embedding: torch.nn.Module
    position_embedding: torch.nn.Module | None
    rotary: torch.nn.Module | None

    def rotation(self, layer: int, positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor] | None:
        """(cos, sin), each (len(positions), head_dim) float64, of the rotary embedding layer ``layer`` uses; None
        without RoPE."""
        if self.rotary is None:
            return None
        probe = self.unembed[:1, None, :].float()
        args: tuple = (probe, positions[None].to(self.unembed.device))
        layer_type = self.layers[layer].layer_type
        if layer_type is not None and "layer_type" in inspect.signature(self.rotary.forward).parameters:
            args = (*args, layer_type)
        with torch.inference_mode():
            cos, sin = self.rotary(*args)
        return cos[0].double(), sin[0].double()


def rotate(vectors: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """RoPE (Su et al. 2021) in transformers' rotate-half layout: vectors (..., head_dim) · cos/sin (head_dim,)."""
    half = vectors.shape[-1] // 2
    rotated_half = torch.cat((-vectors[..., half:], vectors[..., :half]), dim=-1)
    return vectors * cos + rotated_half * sin


def _split_heads(function: Callable, head_dim: int) -> Callable:
    return lambda x: function(x).unflatten(-1, (-1, head_dim))


def _gpt2_slice(c_attn: torch.nn.Module, which: int, hidden: int, head_dim: int) -> Callable:
    return lambda x: c_attn(x)[..., which * hidden:(which + 1) * hidden].unflatten(-1, (-1, head_dim))


def _layer_parts(block: torch.nn.Module, family: str, hidden: int, head_dim: int) -> LayerParts:
    attention = next(m for m in block.modules() if is_attention_module(m))
    if family == "gpt2":
        query = _gpt2_slice(attention.c_attn, 0, hidden, head_dim)
        key = _gpt2_slice(attention.c_attn, 1, hidden, head_dim)
        output, input_norm, post = attention.c_proj, block.ln_1, None
    else:
        query, key = _split_heads(attention.q_proj, head_dim), _split_heads(attention.k_proj, head_dim)
        output, input_norm = attention.o_proj, block.input_layernorm
        post = block.post_attention_layernorm if family == "gemma3" else None
    return LayerParts(attention=attention, input_norm=input_norm, post_attention_norm=post,
                      query_norm=getattr(attention, "q_norm", None), key_norm=getattr(attention, "k_norm", None),
                      query=query, key=key, output=output, output_has_bias=getattr(output, "bias", None) is not None,
                      layer_type=getattr(attention, "layer_type", None))


def model_parts(loaded: LoadedModel) -> ModelParts:
    """The :class:`ModelParts` of a supported causal LM; :class:`UnsupportedModelError` naming the decoders to pick
    for an encoder, a model without a language-model head, or an unsupported architecture."""
    info = loaded.info
    if not info.causal or info.head != "causal-lm":
        raise UnsupportedModelError(f"{info.name} is not a decoder language model (it is {info.architecture}); the "
                                    "mechanism analyses explain a next-token prediction — pick a decoder such as "
                                    + DECODER_NAMES, notice=Notice("mech.error.not_decoder",
                                                                   model=model_name(info.name), decoders=DECODER_NAMES))
    family = FAMILIES.get(info.model_type)
    if family is None:
        raise UnsupportedModelError(f"{info.name} ({info.model_type}): the mechanism analyses support Llama, Mistral, "
                                    "Qwen2/3, GPT-2 and Gemma 3 decoders — pick one such as " + DECODER_NAMES,
                                    notice=Notice("mech.error.family", model=model_name(info.name),
                                                  decoders=DECODER_NAMES))
    model = loaded.model
    blocks = transformer_layers(model, info.num_layers)
    base = getattr(model, "transformer", None) or getattr(model, "model", None)
    if blocks is None or base is None:
        raise UnsupportedModelError(f"{info.name}: its transformer blocks were not found")
    head = model.get_output_embeddings()
    return ModelParts(
        family=family,
        layers=tuple(_layer_parts(block, family, info.hidden_size, info.head_dim) for block in blocks),
        final_norm=base.ln_f if family == "gpt2" else base.norm,
        unembed=head.weight, unembed_bias=getattr(head, "bias", None),
        token_embedding=model.get_input_embeddings(),
        position_embedding=base.wpe if family == "gpt2" else None,
        rotary=getattr(base, "rotary_emb", None))


def check_position(position: int, length: int, what: str) -> int:
    """``position`` as an index into a text of ``length`` tokens (negative counts from the end), else
    :class:`InvalidRequestError` naming the range."""
    if isinstance(position, bool) or not isinstance(position, int) or not -length <= position < length:
        raise InvalidRequestError(f"{what} {position!r} is outside the text's {length} tokens; choose 0–{length - 1} "
                                  "(or −1 for the last)",
                                  notice=Notice("mech.error.position", position=repr(position), length=length,
                                                last=length - 1))
    return position % length
