"""Activation patching: which components does the prediction *need* (Meng et al. 2022, "Locating and Editing
Factual Associations in GPT" — causal tracing; Wang et al. 2022, "Interpretability in the Wild" — the IOI logit
difference, normalised; TransformerLens ``patching.get_act_patch_*``).

Two texts with the same number of tokens: a *clean* one (the model predicts the answer) and a *corrupted* one that
differs in a token or two (it predicts the contrast). The metric is the logit difference answer − contrast at the last
position, normalised so 0 = the corrupted run's value and 1 = the clean run's. Patching copies one activation of the
clean run into the corrupted run and reports the normalised metric: near 1, that activation alone carries what the
corruption removed. (When clean and corrupted give the same difference there is nothing to restore and every value is
0 by convention.)

Patched, each in its own copy of the corrupted text:

- each head's output at every position (:class:`kernels.hf.HeadPatch` inside the one attention function);
- each of the top heads' outputs at one position at a time;
- each MLP's write (exact from the runs' block outputs: the MLP is the last thing a block adds);
- the residual stream before each layer at one position at a time (the causal-tracing picture; before layer 0
  through the embeddings the model reads).

Cost: the copies run batched, and each starts at the first layer it changes from the corrupted run's kept block
outputs (:class:`kernels.hf.ResumeAt`); no statistics are computed and no logits but the two the metric reads.
Nothing is attached to the shared model.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from inspector.analyses.mechanism.logits import token_id, token_strings
from inspector.analyses.mechanism.parts import ModelParts, model_parts
from inspector.analyses.mechanism.residual import MeasuredRun, embed, measure
from inspector.base.display import Displayable
from inspector.base.errors import InvalidRequestError
from inspector.base.i18n import Notice
from inspector.base.progress import Progress, no_progress
from inspector.core.forward import encode_text, forward
from inspector.core.loading import LoadedModel
from kernels.hf import HeadPatch, ResumeAt

DEFAULT_TOP_HEADS = 3
_COPY_TOKENS = 4096  # copies × tokens per batched forward


class LengthMismatchError(InvalidRequestError):
    """Clean and corrupted texts tokenise to different numbers of tokens."""


@dataclass(frozen=True)
class PatchingResult(Displayable):
    """Activation patching of a clean/corrupted pair (see the module docstring). Values are raw logit differences
    answer − contrast at the last position; :meth:`restored` normalises them (0 = corrupted, 1 = clean).

    clean_tokens, corrupted_tokens: (n,). clean_value, corrupted_value: the unpatched runs' differences. heads:
    (layers, heads) float64 — each head patched at every position; top_heads: (k, 2) int64 (layer, head) and
    head_positions: (k, n) — those heads patched one position at a time; mlps: (layers,); residual: (layers, n) —
    the residual entering layer l patched at position p."""

    clean_tokens: tuple[str, ...]
    corrupted_tokens: tuple[str, ...]
    answer_id: int
    answer_token: str
    contrast_id: int
    contrast_token: str
    clean_value: float
    corrupted_value: float
    heads: np.ndarray
    top_heads: np.ndarray
    head_positions: np.ndarray
    mlps: np.ndarray
    residual: np.ndarray

    def __post_init__(self) -> None:
        n, layers = len(self.clean_tokens), self.heads.shape[0]
        if len(self.corrupted_tokens) != n or self.heads.ndim != 2:
            raise ValueError("clean and corrupted tokens must have one length; heads must be (layers, heads)")
        if self.top_heads.shape != (self.head_positions.shape[0], 2) or self.head_positions.shape[1:] != (n,):
            raise ValueError("top_heads must be (k, 2) and head_positions (k, n)")
        if self.mlps.shape != (layers,) or self.residual.shape != (layers, n):
            raise ValueError("mlps must be (layers,) and residual (layers, n)")
        for name in ("heads", "head_positions", "mlps", "residual"):
            if not np.all(np.isfinite(getattr(self, name))):
                raise ValueError(f"{name} must be finite")

    def restored(self, values: np.ndarray | float) -> np.ndarray:
        """``values`` normalised: (value − corrupted) / (clean − corrupted); 0 where clean = corrupted."""
        span = self.clean_value - self.corrupted_value
        values = np.asarray(values, dtype=np.float64)
        if abs(span) <= 1e-9 * max(1.0, abs(self.clean_value)):
            return np.zeros_like(values)
        return (values - self.corrupted_value) / span


class PatchingRun:
    """The clean and corrupted runs of a pair, and the patched copies run from them (every method returns raw logit
    differences, one per copy). ``clean``/``corrupted``: :class:`MeasuredRun` s; ``direction``: (hidden,) float32,
    W_U[answer] − W_U[contrast].

    ``start``: the first position where the texts differ. A causal model computes the same activations for both texts
    before it, so patching there changes nothing, and every copy runs only the positions from ``start`` on, against
    the corrupted text's keys and values before it (one prefix forward, its KV cache copied per batch)."""

    def __init__(self, loaded: LoadedModel, parts: ModelParts, clean: MeasuredRun, corrupted: MeasuredRun,
                 answer_id: int, contrast_id: int, deadline_s: float | None = None):
        self.loaded, self.parts, self.clean, self.corrupted = loaded, parts, clean, corrupted
        self.answer_id, self.contrast_id = answer_id, contrast_id
        self.direction = parts.unembed[answer_id] - parts.unembed[contrast_id]
        self.offset = 0.0 if parts.unembed_bias is None else float(parts.unembed_bias[answer_id]
                                                                    - parts.unembed_bias[contrast_id])
        self.deadline_s = deadline_s
        self.layers = len(clean.block_outputs)
        differ = torch.nonzero(clean.ids != corrupted.ids)
        self.start = int(differ[0, 0]) if differ.numel() else len(clean.ids)
        self.corrupted_value = float(self.metric(corrupted.block_outputs[-1][None, -1])[0])
        self.clean_value = float(self.metric(clean.block_outputs[-1][None, -1])[0])
        self.prefix_cache = None
        if 0 < self.start < len(clean.ids):
            from transformers import DynamicCache

            self.prefix_cache = DynamicCache(config=loaded.model.config)
            prefix = corrupted.ids[None, :self.start]
            forward(loaded, {"input_ids": prefix, "attention_mask": torch.ones_like(prefix)}, stats=(),
                    cache=self.prefix_cache, logits_to_keep=1, deadline_s=deadline_s)

    def metric(self, final: torch.Tensor) -> np.ndarray:
        """(B,) logit differences from final residuals at the last position (B, hidden), through the model's norm."""
        with torch.inference_mode():
            return (self.parts.final_norm(final) @ self.direction).double().cpu().numpy() + self.offset

    def _copies(self, batch: int, resume_layer: int, last_output: torch.Tensor | None, interventions=(),
                embeds: torch.Tensor | None = None) -> np.ndarray:
        """Run ``batch`` copies of the corrupted text from ``resume_layer`` (the residual entering it: ``last_output``
        (batch, n, hidden), or the corrupted run's), or from ``embeds`` (batch, n, hidden) at layer 0 — positions from
        :attr:`start` on."""
        n, start = len(self.corrupted.ids), self.start
        if start == n:
            return np.full(batch, self.corrupted_value)
        ids = self.corrupted.ids[None, start:].expand(batch, -1)
        inputs = {"attention_mask": torch.ones(batch, n, dtype=torch.long, device=ids.device)}
        if embeds is not None:
            inputs["inputs_embeds"] = embeds[:, start:]
        else:
            inputs["input_ids"] = ids
        resume = None
        if resume_layer > 0:
            outputs = [out[None, start:].expand(batch, -1, -1) for out in self.corrupted.block_outputs[:resume_layer]]
            if last_output is not None:
                outputs[-1] = last_output[:, start:]
            resume = ResumeAt(layer=resume_layer, outputs=tuple(outputs))
        cache = None
        if self.prefix_cache is not None:
            cache = copy.deepcopy(self.prefix_cache)
            cache.batch_repeat_interleave(batch)
        result = forward(self.loaded, inputs, interventions=interventions, stats=(), resume=resume,
                         keep_layer_outputs=True, deadline_s=self.deadline_s, cache=cache,
                         logits_to_keep=torch.zeros(0, dtype=torch.long, device=ids.device))
        return self.metric(result.layer_outputs[-1][:, -1])

    def _chunks(self, count: int) -> list[slice]:
        size = max(1, _COPY_TOKENS // len(self.clean.ids))
        return [slice(start, min(start + size, count)) for start in range(0, count, size)]

    def head_patch(self, layer: int, masks: torch.Tensor) -> np.ndarray:
        """Copies patching the clean heads' outputs where ``masks`` ((B, heads, n) bool) is True at ``layer``."""
        values = []
        for rows in self._chunks(masks.shape[0]):
            mask = masks[rows, :, self.start:].to(self.clean.ids.device)
            patch = HeadPatch(layer=layer, mask=mask, source=self.clean.head_outputs[layer][:, self.start:])
            values.append(self._copies(mask.shape[0], layer, None, interventions=(patch,)))
        return np.concatenate(values)

    def residual_patch(self, layer: int, masks: torch.Tensor) -> np.ndarray:
        """Copies patching the clean residual entering ``layer`` at the positions where ``masks`` ((B, n) bool) is
        True."""
        values = []
        for rows in self._chunks(masks.shape[0]):
            mask = masks[rows].to(self.clean.ids.device)[..., None]  # (b, n, 1)
            if layer == 0:
                clean_tokens, _ = embed(self.parts, self.clean.ids[None])
                corrupted_tokens, _ = embed(self.parts, self.corrupted.ids[None])
                embeds = torch.where(mask, clean_tokens, corrupted_tokens)
                values.append(self._copies(mask.shape[0], 0, None, embeds=embeds))
            else:
                before = layer - 1
                patched = torch.where(mask, self.clean.block_outputs[before], self.corrupted.block_outputs[before])
                values.append(self._copies(mask.shape[0], layer, patched))
        return np.concatenate(values)

    def mlp_patch(self, layer: int) -> float:
        """One copy with the MLP of ``layer`` writing its clean output (every position)."""
        patched = (self.corrupted.block_outputs[layer] - self.corrupted.mlp_write(layer)
                   + self.clean.mlp_write(layer))  # (n, hidden): the residual leaving the block
        if layer == self.layers - 1:
            return float(self.metric(patched[None, -1])[0])
        return float(self._copies(1, layer + 1, patched[None])[0])


def _encode_pair(loaded: LoadedModel, clean: str, corrupted: str):
    first, second = encode_text(loaded, clean), encode_text(loaded, corrupted)
    if len(first.tokens) != len(second.tokens):
        raise LengthMismatchError(
            f"the clean text has {len(first.tokens)} tokens {list(first.tokens)} and the corrupted text "
            f"{len(second.tokens)} {list(second.tokens)}; patching swaps activations position by position, so both "
            "must have the same number of tokens — change a word for one of the same token count",
            notice=Notice("mech.error.length_mismatch", clean=len(first.tokens), corrupted=len(second.tokens)))
    return first, second


def patching_run(loaded: LoadedModel, clean: str, corrupted: str, *, answer: str, contrast: str,
                 deadline_s: float | None = None) -> tuple[PatchingRun, tuple[str, ...], tuple[str, ...]]:
    """The clean and corrupted runs of a pair, ready to patch, and both texts' tokens."""
    parts = model_parts(loaded)
    first, second = _encode_pair(loaded, clean, corrupted)
    answer_id, contrast_id = token_id(loaded, answer, "the answer"), token_id(loaded, contrast, "the contrast")
    if answer_id == contrast_id:
        raise InvalidRequestError(f"the answer and the contrast are the same token ({answer!r}); the metric is their "
                                  "logit difference — give two different tokens",
                                  notice=Notice("mech.error.same_tokens", token=answer))
    runs = [measure(loaded, parts, encoded.inputs, deadline_s=deadline_s) for encoded in (first, second)]
    return (PatchingRun(loaded, parts, runs[0], runs[1], answer_id, contrast_id, deadline_s),
            first.tokens, second.tokens)


def activation_patching(loaded: LoadedModel, clean: str, corrupted: str, *, answer: str, contrast: str,
                        top_heads: int = DEFAULT_TOP_HEADS, progress: Progress | None = None,
                        deadline_s: float | None = None) -> PatchingResult:
    """Patch every head (all positions), the ``top_heads`` heads by position, every MLP and the residual before every
    layer by position, from ``clean`` into ``corrupted`` (see the module docstring). ``progress`` hears layers done (of
    3 · layers + top_heads units); a callback that raises stops the job. Raises :class:`LengthMismatchError` for texts
    of different token counts, :class:`InvalidRequestError` for an answer or contrast of several tokens."""
    progress = progress or no_progress
    run, clean_tokens, corrupted_tokens = patching_run(loaded, clean, corrupted, answer=answer, contrast=contrast,
                                                       deadline_s=deadline_s)
    info, n = loaded.info, len(clean_tokens)
    layers, heads = info.num_layers, info.num_heads
    total = 3 * layers + top_heads
    done = 0
    head_values = np.zeros((layers, heads))
    all_positions = torch.eye(heads, dtype=torch.bool)[:, :, None].expand(heads, heads, n)
    for layer in range(layers):
        head_values[layer] = run.head_patch(layer, all_positions)
        done += 1
        progress(done, total, f"heads: layer {layer + 1}/{layers}")
    mlps = np.zeros(layers)
    for layer in range(layers):
        mlps[layer] = run.mlp_patch(layer)
        done += 1
        progress(done, total, f"MLPs: layer {layer + 1}/{layers}")
    # Before the first differing token both texts' activations are equal: patching there restores nothing.
    residual = np.full((layers, n), run.corrupted_value)
    differing = torch.eye(n, dtype=torch.bool)[run.start:]
    for layer in range(layers):
        if len(differing):
            residual[layer, run.start:] = run.residual_patch(layer, differing)
        done += 1
        progress(done, total, f"residual stream: layer {layer + 1}/{layers}")
    clean_value, corrupted_value = run.clean_value, run.corrupted_value
    chosen = _top(head_values, corrupted_value, top_heads)
    by_position = np.full((len(chosen), n), corrupted_value)
    positions = torch.arange(run.start, n)
    for k, (layer, head) in enumerate(chosen):
        masks = torch.zeros(len(positions), heads, n, dtype=torch.bool)
        masks[torch.arange(len(positions)), head, positions] = True
        if len(positions):
            by_position[k, run.start:] = run.head_patch(layer, masks)
        done += 1
        progress(done, total, f"top heads by position: {k + 1}/{len(chosen)}")
    progress(total, total, "patching done")
    return PatchingResult(
        clean_tokens=clean_tokens, corrupted_tokens=corrupted_tokens, answer_id=run.answer_id,
        answer_token=token_strings(loaded.codec, [run.answer_id])[0], contrast_id=run.contrast_id,
        contrast_token=token_strings(loaded.codec, [run.contrast_id])[0], clean_value=clean_value,
        corrupted_value=corrupted_value, heads=head_values, top_heads=np.array(chosen, dtype=np.int64).reshape(-1, 2),
        head_positions=by_position, mlps=mlps, residual=residual)


def _top(values: np.ndarray, corrupted: float, k: int) -> Sequence[tuple[int, int]]:
    """The ``k`` heads whose patching moves the metric most (|value − corrupted|, largest first)."""
    order = np.argsort(-np.abs(values - corrupted), axis=None)[:k]
    return [(int(i // values.shape[1]), int(i % values.shape[1])) for i in order]
