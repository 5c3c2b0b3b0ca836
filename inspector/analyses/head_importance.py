"""Head importance by removal and by gradient (issue #5), for the head report (:mod:`inspector.analyses.heads`):
output changes of copies of texts with sets of heads ablated (:class:`kernels.hf.SequenceHeadAblation`, each copy
resuming at its first ablated layer), and Michel et al. (2019)'s gate gradients (:class:`kernels.hf.HeadGate`) with
their per-layer normalisation. Every copy runs through the one attention function in right-padded batches."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal

import numpy as np
import torch

from inspector.analyses.batching import padded_batch
from inspector.core.forward import forward
from inspector.core.loading import LoadedModel
from inspector.core.outputs import ModelOutput, model_output, output_changes, read_positions
from kernels.hf import HeadGate, ResumeAt, SequenceHeadAblation

AblationMode = Literal["zero", "mean"]
# Embeddings have no label to take a loss against: L is their projection on this many fixed random directions
# orthogonal to the unablated embedding (see gradient_importance).
EMBEDDING_DIRECTIONS = 8
# Copies per batched forward without gradients: copies × padded tokens stays under this, so long texts do not blow
# up memory.
BATCH_TOKENS = 8192
# Copies per forward and backward: copies × padded tokens × hidden size stays under this (a backward keeps every
# layer's activations), with one text's copies at the least.
_GRADIENT_ELEMENTS = 2 ** 20


def layer_normalized(raw: np.ndarray) -> np.ndarray:
    """Michel et al.'s per-layer normalisation: each layer's scores divided by their ℓ2 norm (0 stays 0)."""
    norms = np.linalg.norm(raw, axis=-1, keepdims=True)
    return np.divide(raw, norms, out=np.zeros_like(raw, dtype=np.float64), where=norms > 0).astype(np.float32)


def row_chunks(lengths: Sequence[int], copies: int | Sequence[int], budget: int,
                minimum: int = 1) -> list[list[tuple[int, int]]]:
    """Rows (text k, copy c) — copies ``range(copies)``, or the given copy indices — of every text, cut into
    consecutive forwards of at most ``budget`` padded tokens (rows × longest text; at least ``minimum`` rows
    each)."""
    chosen = range(copies) if isinstance(copies, int) else copies
    rows = [(k, c) for k in range(len(lengths)) for c in chosen]
    if not rows:
        return []
    per_forward = max(minimum, budget // max(lengths))
    # Forwards of equal size: 288 rows at 273 a forward run as 144 + 144, not 273 + a wasteful 15.
    per_forward = -(-len(rows) // -(-len(rows) // per_forward))
    return [rows[start:start + per_forward] for start in range(0, len(rows), per_forward)]


def texts_changes(loaded: LoadedModel, ids: Sequence[torch.Tensor], bases: Sequence[ModelOutput],
                   masks: torch.Tensor, mode: AblationMode, backend: str,
                   layer_outputs: Sequence[torch.Tensor] | None = None,
                   advance: Callable[[int], None] | None = None) -> np.ndarray:
    """Output change of each text for each ablation set: ``ids`` (K texts, each (T,)), their unablated outputs,
    masks (S, L, H) bool — set s removes the heads where it is True. (K, S) float32. The K · S copies run in
    right-padded batched forwards of at most :data:`BATCH_TOKENS` padded tokens.

    ``layer_outputs``: every transformer block's output for the K texts as one right-padded batch ((K, n,
    hidden) per layer, from the forward that gave ``bases``). With them each copy starts at the first layer its
    set ablates (:class:`kernels.hf.ResumeAt`): below it the copy is the unablated text, whose block outputs
    are these. Copies are then grouped by that layer and padded to the same n.

    ``advance``: told after each batched forward how much it ran, in layer-tokens — Σ over its copies of the
    text's tokens × the layers the copy ran (from its start) — so a caller's progress moves within one text.
    A causal language model's head runs at each copy's last real token only (:func:`read_positions`)."""
    layers = masks.shape[1]
    changes = np.zeros((len(ids), masks.shape[0]), dtype=np.float32)
    lengths = [int(row.shape[0]) for row in ids]
    # Each set's first ablated layer ((S, L) ablated-anywhere flags, first True), or 0 for every set.
    starts = (masks.flatten(2).any(dim=2).int().argmax(dim=1).tolist() if layer_outputs is not None
              else [0] * masks.shape[0])
    width = int(layer_outputs[0].shape[1]) if layer_outputs is not None else None
    for start in sorted(set(starts)):
        sets = [s for s in range(masks.shape[0]) if starts[s] == start]
        for part in row_chunks(lengths, sets, BATCH_TOKENS):
            row_masks = masks[[s for _, s in part]]  # (R, L, H)
            interventions = [SequenceHeadAblation(layer, row_masks[:, layer], mode) for layer in range(layers)
                             if row_masks[:, layer].any()]
            batch = padded_batch(loaded, [ids[k] for k, _ in part], width)
            resume = None
            if start > 0:
                texts = torch.tensor([k for k, _ in part], device=layer_outputs[0].device)
                resume = ResumeAt(start, tuple(output[texts] for output in layer_outputs[:start]))
            kept = read_positions(loaded, batch)
            result = forward(loaded, batch, interventions=interventions, backend=backend, stats=(), resume=resume,
                             logits_to_keep=kept)
            found = output_changes(loaded, result, batch, [bases[k] for k, _ in part], kept)
            for r, (k, s) in enumerate(part):
                changes[k, s] = found[r]
            if advance is not None:
                advance(sum(lengths[k] for k, _ in part) * (layers - start))
    return changes


def ablated_changes(loaded: LoadedModel, inputs: dict[str, torch.Tensor], base: ModelOutput, masks: torch.Tensor,
                     mode: AblationMode, backend: str) -> np.ndarray:
    """Output change for each ablation set: masks (S, L, H) bool — set s removes the heads where it is True.
    Runs batched forwards of copies of the text (chunked to :data:`BATCH_TOKENS` tokens)."""
    return texts_changes(loaded, [inputs["input_ids"][0]], [base], masks, mode, backend)[0]


def texts_gradients(loaded: LoadedModel, ids: Sequence[torch.Tensor], bases: Sequence[ModelOutput],
                     backend: str) -> np.ndarray:
    """:func:`gradient_importance` of K texts at once: (K, L, H) float32. Texts are rows of right-padded
    batches, each row with its own gates, so as rows never mix, each row's gate gradient is that of its own loss.
    A distribution or logits output has one loss per text: one backward of their sum. An embedding has one loss
    per direction: one forward, then one backward per direction — vmapped together on the torch backend
    (``is_grads_batched``), one after another on Triton, whose backward kernel has no batching rule."""
    info = loaded.info
    device = loaded.device
    embedding = bases[0].kind == "embedding"
    copies = EMBEDDING_DIRECTIONS if embedding else 1
    directions = []
    if embedding:
        for base in bases:
            generator = torch.Generator().manual_seed(0)
            found = torch.randn(copies, base.vector.shape[0], generator=generator)
            found = found - (found @ base.vector)[:, None] * base.vector[None, :]  # ⊥ e
            directions.append(torch.nn.functional.normalize(found, dim=1).to(device))
    squares = torch.zeros(len(ids), info.num_layers, info.num_heads, dtype=torch.float32)
    # A backward keeps every layer's activations (and an embedding's vmapped one makes `copies` of each gradient
    # at a time): the batch is held to a token budget that shrinks as the hidden size grows, one text at least.
    budget = max(1, _GRADIENT_ELEMENTS // (info.hidden_size * copies))
    for part in row_chunks([int(row.shape[0]) for row in ids], 1, budget):
        texts = [k for k, _ in part]
        gates = [torch.ones(len(part), info.num_heads, device=device, requires_grad=True)
                 for _ in range(info.num_layers)]
        batch = padded_batch(loaded, [ids[k] for k in texts])
        kept = read_positions(loaded, batch)  # a causal LM's head at the read positions only
        result = forward(loaded, batch, interventions=[HeadGate(layer, gate) for layer, gate in enumerate(gates)],
                         backend=backend, grad=True, stats=(), logits_to_keep=kept)
        vectors = [model_output(loaded, result, batch, keep_graph=True, sequence=r, kept=kept).vector
                   for r in range(len(part))]
        with torch.enable_grad():
            if embedding:
                stacked = torch.stack(vectors)  # (R, hidden)
                along = torch.stack([directions[k] for k in texts], dim=1)  # (copies, R, hidden): L_c = ⟨r_c, e⟩
                if backend == "torch":
                    grads = torch.autograd.grad((stacked,), gates, grad_outputs=(along,), is_grads_batched=True)
                else:
                    grads = [torch.stack(found) for found in zip(*(
                        torch.autograd.grad((stacked,), gates, grad_outputs=(along[c],), retain_graph=c + 1 < copies)
                        for c in range(copies)))]
                per_gate = torch.stack([g.detach().float().cpu() for g in grads], dim=2)  # (copies, R, L, H)
            else:
                losses = []
                for vector, k in zip(vectors, texts):
                    log_probs = vector if bases[k].kind == "distribution" else torch.log_softmax(vector, dim=-1)
                    losses.append(-log_probs[int(bases[k].vector.argmax())])  # logits → log p of the top one
                grads = torch.autograd.grad(sum(losses), gates)
                per_gate = torch.stack([g.detach().float().cpu() for g in grads], dim=1)[None]  # (1, R, L, H)
        for r, k in enumerate(texts):
            squares[k] += per_gate[:, r].pow(2).sum(dim=0)
    return squares.sqrt().numpy().astype(np.float32)


def gradient_importance(loaded: LoadedModel, inputs: dict[str, torch.Tensor], base: ModelOutput,
                        backend: str) -> np.ndarray:
    """Michel et al. (2019)'s head importance for one text before per-layer normalisation: |∂L/∂g_h| at
    gates g = 1 (:class:`HeadGate` on every layer; the model's parameters get no gradient). (L, H) float32.

    L is a loss whose first-order change says how much the output moves — the output-change measures
    themselves are useless here, since a distance is at its minimum (gradient 0) at g = 1:

    - next-token distribution / class logits: Michel's own setting with the model's prediction as the label,
      L = −log p(ŷ) with ŷ the unablated model's top token or class;
    - sentence embedding (no label exists): L_b = ⟨r_b, e(g_b)⟩ for :data:`EMBEDDING_DIRECTIONS` fixed random
      unit directions r_b orthogonal to the unablated embedding e (one copy of the text per direction, each
      with its own gates), and I_h = √Σ_b (∂L_b/∂g_{b,h})² — an estimate, proportional in expectation, of
      ‖∂e/∂g_h‖, the first-order distance the unit embedding moves when the head's gate moves. Directions
      come from a fixed seed, so the numbers are reproducible; the per-layer normalisation removes the scale.
    """
    return texts_gradients(loaded, [inputs["input_ids"][0]], [base], backend)[0]
