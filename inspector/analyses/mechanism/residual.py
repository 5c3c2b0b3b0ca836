"""One measured forward, and the residual stream it built split into the components that wrote it.

The residual stream of a decoder at a position is a sum (Elhage et al. 2021, "A Mathematical Framework for
Transformer Circuits"): the embeddings, then per layer the attention's write and the MLP's write. The attention's
write is itself a sum over heads — head h's output ``o_h`` through its slice of the output projection, ``W_O,h o_h``
— plus the projection's bias; in Gemma 3 it then passes the post-attention norm, frozen here at its measured scale
(:func:`inspector.analyses.mechanism.parts.freeze_norm`) so the sum survives it. The MLP's write is read off the
blocks' own outputs (block output − block input − attention write), so the components add up to the stream exactly
(rounding aside).

:func:`measure` runs the one forward (:func:`inspector.core.forward.forward`: each head's output kept inside the
attention function, every block's output kept, nothing attached to the model); :func:`residual_components` splits
the residual entering a layer (or the final one) at chosen positions.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from inspector.analyses.mechanism.parts import ModelParts, affine_part, freeze_norm
from inspector.core.forward import LayerChoice, forward
from inspector.core.loading import LoadedModel
from kernels.hf import LayerRecord

EMBEDDING = "embedding"
POSITION = "position"
HEAD = "head"
ATTENTION_BIAS = "attention bias"
MLP = "mlp"
BIAS = "bias"


@dataclass(frozen=True)
class Component:
    """One writer into the residual stream: ``kind`` (embedding, position, head, attention bias, mlp, bias),
    its layer (−1 for embeddings and biases outside a block) and head (−1 unless a head)."""

    kind: str
    layer: int = -1
    head: int = -1

    @property
    def label(self) -> str:
        if self.kind == HEAD:
            return f"L{self.layer}H{self.head}"
        if self.kind == MLP:
            return f"L{self.layer} MLP"
        if self.kind == ATTENTION_BIAS:
            return f"L{self.layer} attn bias"
        return self.kind


@dataclass
class MeasuredRun:
    """What one forward of one text measured (float32, on the model's device, batch dimension dropped).

    ids: (n,) int64. embeddings: (n, hidden) — the residual entering layer 0; token_embedding: (n, hidden) — its
    token part (the rest is GPT-2's learned position). block_outputs[l]: (n, hidden). head_outputs[l]: (heads, n,
    head_dim), each head's attention output before the output projection. attention_writes[l]: (n, hidden), what the
    attention adds to the residual (output projection, then Gemma's post-attention norm). records: the attention
    layers' records (weights and q/k where asked for)."""

    ids: torch.Tensor
    embeddings: torch.Tensor
    token_embedding: torch.Tensor
    block_outputs: list[torch.Tensor]
    head_outputs: list[torch.Tensor]
    attention_writes: list[torch.Tensor]
    records: list[LayerRecord]

    def block_input(self, layer: int) -> torch.Tensor:
        """(n, hidden): the residual entering ``layer`` (``num_layers``: the final residual)."""
        return self.embeddings if layer == 0 else self.block_outputs[layer - 1]

    def mlp_write(self, layer: int) -> torch.Tensor:
        """(n, hidden): what the MLP of ``layer`` adds (Gemma: after its post-feed-forward norm)."""
        return self.block_outputs[layer] - self.block_input(layer) - self.attention_writes[layer]


def embed(parts: ModelParts, ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(token part, whole embedding) of ``ids`` (batch, n), each (batch, n, hidden): the residual entering layer 0."""
    with torch.inference_mode():
        token = parts.token_embedding(ids)
        if parts.position_embedding is None:
            return token, token
        positions = torch.arange(ids.shape[1], device=ids.device)[None]
        return token, token + parts.position_embedding(positions)


def attention_write(layer_parts, heads: torch.Tensor) -> torch.Tensor:
    """(..., n, hidden): what attention adds to the residual, from the heads' outputs (..., heads, n, head_dim)."""
    with torch.inference_mode():
        written = layer_parts.output(heads.transpose(-3, -2).flatten(-2))
        if layer_parts.post_attention_norm is not None:
            written = layer_parts.post_attention_norm(written)
    return written


def measure(loaded: LoadedModel, parts: ModelParts, inputs: dict[str, torch.Tensor], *,
            weights_layers: LayerChoice = None, keep_qk: bool = False, stop_after: int | None = None,
            deadline_s: float | None = None) -> MeasuredRun:
    """One forward of a batch-of-one text keeping every head's output and block's output (and the weights of
    ``weights_layers``, the queries and keys when ``keep_qk``); ``stop_after``: end it after that layer's attention
    (the blocks' outputs then stop below it)."""
    keep: tuple = ("output", "query", "key") if keep_qk else ("output",)
    result = forward(loaded, inputs, keep=keep, keep_layers="all", weights_layers=weights_layers, stats=("lse",),
                     keep_layer_outputs=True, deadline_s=deadline_s, stop_after=stop_after,
                     logits_to_keep=None if stop_after is not None else 1)
    ids = inputs["input_ids"][0]
    token, whole = embed(parts, inputs["input_ids"])
    heads = [record.tensors["output"][0] for record in result.records]
    return MeasuredRun(ids=ids, embeddings=whole[0], token_embedding=token[0],
                       block_outputs=[out[0] for out in result.layer_outputs], head_outputs=heads,
                       attention_writes=[attention_write(parts.layers[layer], h) for layer, h in enumerate(heads)],
                       records=result.records)


def head_writes(parts: ModelParts, run: MeasuredRun, layer: int, positions: torch.Tensor
                ) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Each head's write at ``positions`` (heads, P, hidden) float64 and the output bias's write (P, hidden) or None,
    through the output projection and, for Gemma, the post-attention norm frozen at its measured input."""
    layer_parts = parts.layers[layer]
    outputs = run.head_outputs[layer][:, positions].double()  # (heads, P, d)
    heads, _, head_dim = outputs.shape
    placed = torch.zeros(heads, len(positions), heads * head_dim, dtype=torch.float64, device=outputs.device)
    for h in range(heads):
        placed[h, :, h * head_dim:(h + 1) * head_dim] = outputs[h]
    output = layer_parts.output
    writes = affine_part(lambda x: output(x.to(run.embeddings.dtype)).double(), placed)  # (heads, P, hidden)
    bias = None
    if layer_parts.output_has_bias:
        bias = output.bias.double().expand(len(positions), -1)
    if layer_parts.post_attention_norm is not None:
        with torch.inference_mode():
            projected = output(run.head_outputs[layer][:, positions].transpose(0, 1).flatten(-2))  # (P, hidden)
        frozen = freeze_norm(layer_parts.post_attention_norm, projected, f"layer {layer}'s post-attention norm")
        writes = frozen.linear(writes)
        bias = frozen.linear(bias[None])[0] if bias is not None else None
        if frozen.bias is not None:
            bias = frozen.bias.expand(len(positions), -1) + (bias if bias is not None else 0.0)
    return writes, bias


def residual_components(parts: ModelParts, run: MeasuredRun, positions: torch.Tensor, upto: int
                        ) -> tuple[tuple[Component, ...], torch.Tensor]:
    """The residual entering layer ``upto`` (``num_layers``: the final one) at ``positions`` (P,), split into its
    writers: components and their vectors (C, P, hidden) float64, which sum to ``run.block_input(upto)[positions]``."""
    components: list[Component] = [Component(EMBEDDING)]
    vectors = [run.token_embedding[positions].double()]
    if parts.position_embedding is not None:
        components.append(Component(POSITION))
        vectors.append((run.embeddings - run.token_embedding)[positions].double())
    for layer in range(upto):
        writes, bias = head_writes(parts, run, layer, positions)
        components.extend(Component(HEAD, layer, h) for h in range(writes.shape[0]))
        vectors.extend(writes)
        if bias is not None:
            components.append(Component(ATTENTION_BIAS, layer))
            vectors.append(bias)
        components.append(Component(MLP, layer))
        vectors.append(run.mlp_write(layer)[positions].double())
    return tuple(components), torch.stack(vectors)
