"""Score attribution: why head h of layer l attends from query i to key j (Anthropic 2025, "Attention QK
attributions"; Elhage et al. 2021's QK circuit).

The pre-softmax score is ``s = scale · q_i · k_j`` with ``q_i = R_i · n_q(W_Q · N(r_i) + b_Q)`` — ``r_i`` the residual
entering the layer, ``N`` the block's input norm, ``n_q`` Gemma's query norm, ``R_i`` the rotary embedding at
position i — and ``k_j`` alike. Freeze ``N``, ``n_q`` and ``n_k`` at the scales the real forward measured and every
step is linear, so with ``r_i = Σ_a c_a(i)`` split into its writers (embeddings, each earlier head, each earlier MLP,
attention-output biases; :mod:`inspector.analyses.mechanism.residual`), plus one *bias* component per side (the
norm's bias and the projection's bias), the score is exactly ``Σ_a Σ_b T[a, b]`` with
``T[a, b] = scale · q(c_a(i)) · k(c_b(j))``. The result carries that sum rule's residual against the score computed
from the query and key the attention function received.

Also returned: the same table for the runner-up key (the best-scoring other key the query can see: what makes j win
is the difference), the score with the rotation left out (RoPE models — Su et al. 2021: the rotation makes the score
depend on the offset i − j), and the per-dimension products q_d · k_d that bertviz's neuron view draws.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from inspector.analyses.mechanism.parts import check_position, freeze_norm, model_parts, rotate
from inspector.analyses.mechanism.residual import measure, residual_components
from inspector.base.display import Displayable
from inspector.base.errors import InvalidRequestError
from inspector.base.i18n import Notice
from inspector.core.forward import encode_text
from inspector.core.loading import LoadedModel

SUM_RULE_TOLERANCE = 1e-4  # relative to max(1, |score|, largest |cell|)


def _check_sum(total: float, cells: np.ndarray, what: str) -> None:
    scale = max(1.0, abs(total), float(np.abs(cells).max(initial=0.0)))
    if not abs(total - float(cells.sum())) <= SUM_RULE_TOLERANCE * scale:
        raise ValueError(f"{what}: the parts sum to {float(cells.sum()):.6g}, not {total:.6g}")


@dataclass(frozen=True)
class ScoreAttribution(Displayable):
    """One pre-softmax score split into query-side × key-side components.

    components: (C,) labels of the residual's writers (the last one, "bias", is each side's norm and projection bias).
    table: (C, C) float64, T[a, b] = the part of the score from query component a meeting key component b. score: the
    score from the query and key the attention function received (scale included); residual = score − Σ table.
    scale: the layer's score scale. rotary: whether the layer rotates q and k. score_unrotated: the score with the
    rotation left out (= score without RoPE). products, products_unrotated: (head_dim,) scale · q_d · k_d with and
    without the rotation (each sums to its score). runner_up: the best-scoring other key the query sees (None when it
    sees no other), runner_up_table (C, C) and runner_up_score alike. frozen: the norms frozen at measured scale."""

    tokens: tuple[str, ...]
    layer: int
    head: int
    query_position: int
    key_position: int
    components: tuple[str, ...]
    table: np.ndarray
    score: float
    residual: float
    scale: float
    rotary: bool
    score_unrotated: float
    products: np.ndarray
    products_unrotated: np.ndarray
    runner_up: int | None
    runner_up_table: np.ndarray | None
    runner_up_score: float | None
    frozen: tuple[str, ...]

    def __post_init__(self) -> None:
        size = len(self.components)
        if self.table.shape != (size, size):
            raise ValueError(f"table has shape {self.table.shape}, expected ({size}, {size})")
        if self.products.shape != self.products_unrotated.shape or self.products.ndim != 1:
            raise ValueError("products and products_unrotated must be (head_dim,)")
        if not 0 <= self.key_position <= self.query_position < len(self.tokens):
            raise ValueError("the key must be at or before the query, both inside the text")
        if abs(self.residual - (self.score - float(self.table.sum()))) > 1e-9 * max(1.0, abs(self.score)):
            raise ValueError("residual must be score − Σ table")
        _check_sum(self.score, self.table, "score attribution")
        _check_sum(self.score, self.products, "per-dimension products")
        _check_sum(self.score_unrotated, self.products_unrotated, "unrotated per-dimension products")
        if (self.runner_up is None) != (self.runner_up_table is None):
            raise ValueError("runner_up and runner_up_table go together")
        if self.runner_up_table is not None:
            _check_sum(float(self.runner_up_score), self.runner_up_table, "runner-up score attribution")

    def query_marginal(self) -> np.ndarray:
        """(C,): each query-side component's share of the score (summed over key components)."""
        return self.table.sum(axis=1)

    def key_marginal(self) -> np.ndarray:
        """(C,): each key-side component's share of the score (summed over query components)."""
        return self.table.sum(axis=0)

    def top_pairs(self, k: int = 10, table: np.ndarray | None = None) -> list[tuple[str, str, float]]:
        """The ``k`` (query component, key component, part) cells with the largest |part|."""
        table = self.table if table is None else table
        order = np.argsort(-np.abs(table), axis=None)[:k]
        size = table.shape[1]
        return [(self.components[i // size], self.components[i % size], float(table.flat[i])) for i in order]


def _side(layer_parts, frozen_input, vectors: torch.Tensor, which: str, head: int, measured: torch.Tensor):
    """One side's per-component vectors (C + 1, head_dim) float64 for one head at one position, before rotation, and
    the name of the q/k norm it froze (or None). vectors: (C, hidden) components at the position; measured: (hidden,)
    the residual there; the last row is the bias component."""
    project = layer_parts.query if which == "query" else layer_parts.key
    norm = layer_parts.query_norm if which == "query" else layer_parts.key_norm
    dtype = measured.dtype
    normed = frozen_input.linear(vectors)  # (C, hidden)
    bias = frozen_input.bias if frozen_input.bias is not None else torch.zeros_like(normed[0])
    with torch.inference_mode():
        parts = project(normed.to(dtype)).double() - project(torch.zeros_like(measured[None])).double()
        bias_part = project(bias[None].to(dtype)).double()
    rows = torch.cat([parts[:, head], bias_part[:, head]])  # (C + 1, d)
    if norm is None:
        return rows, None
    with torch.inference_mode():
        pre_norm = project(layer_parts.input_norm(measured[None]))[0, head]  # (d,) as the model computed it
    frozen = freeze_norm(norm, pre_norm, f"the {which} norm")
    return rows * frozen.scale, f"{which} norm"


def _visible_best(scores: torch.Tensor, i: int, exclude: int, window: int | None) -> int | None:
    """The best-scoring key other than ``exclude`` that query ``i`` sees (causal, within a sliding window)."""
    keys = torch.arange(i + 1)
    visible = keys != exclude
    if window is not None:
        visible &= i - keys < window
    if not bool(visible.any()):
        return None
    masked = torch.where(visible, scores[: i + 1].cpu(), torch.tensor(-torch.inf, dtype=scores.dtype))
    return int(torch.argmax(masked))


def score_attribution(loaded: LoadedModel, text: str, *, layer: int, head: int, query_position: int,
                      key_position: int, deadline_s: float | None = None) -> ScoreAttribution:
    """Split the score of (``layer``, ``head``, ``query_position``, ``key_position``) into query-side × key-side
    components (see the module docstring). :class:`InvalidRequestError` for a layer, head or position outside the model
    or text, or a key the query cannot see (later, or outside the sliding window)."""
    parts = model_parts(loaded)
    info = loaded.info
    layer, head = info.check_layer(layer, "the layer"), info.check_head(head, "the head")
    encoded = encode_text(loaded, text)
    n = len(encoded.tokens)
    i = check_position(query_position, n, "the query position")
    j = check_position(key_position, n, "the key position")
    if j > i:
        raise InvalidRequestError(f"key {j} comes after query {i}; a causal model's query sees only keys 0–{i}",
                                  notice=Notice("mech.error.key_after_query", key=j, query=i))
    run = measure(loaded, parts, encoded.inputs, keep_qk=True, stop_after=layer)
    record = run.records[layer]
    if record.window is not None and i - j >= record.window:
        raise InvalidRequestError(f"layer {layer} attends within a sliding window of {record.window} tokens; query {i} "
                                  f"cannot see key {j} — choose a key from {i - record.window + 1} to {i}",
                                  notice=Notice("mech.error.outside_window", layer=layer, window=record.window, key=j,
                                                query=i, first=i - record.window + 1))
    kv_head = head // (info.num_heads // info.num_kv_heads)
    real_q, real_k = record.tensors["query"][0, head].double(), record.tensors["key"][0, kv_head].double()
    real_scores = record.scale * (real_k @ real_q[i])  # (n,)
    runner_up = _visible_best(real_scores, i, j, record.window)
    positions = [i, j] + ([runner_up] if runner_up is not None else [])
    components, vectors = residual_components(parts, run, torch.tensor(positions, device=run.ids.device), layer)
    layer_parts = parts.layers[layer]
    measured = run.block_input(layer)[positions]  # (P, hidden)
    frozen = freeze_norm(layer_parts.input_norm, measured, f"layer {layer}'s input norm")
    frozen_names = ["input norm"]
    sides = []
    for index, position_vectors in enumerate(vectors.unbind(1)):
        which = "query" if index == 0 else "key"
        frozen_at = type(frozen)(scale=frozen.scale[index], centre=frozen.centre, bias=frozen.bias)
        rows, norm_name = _side(layer_parts, frozen_at, position_vectors, which, head if index == 0 else kv_head,
                                measured[index])
        if norm_name is not None and norm_name not in frozen_names:
            frozen_names.append(norm_name)
        sides.append(rows)
    rotation = parts.rotation(layer, torch.tensor(positions))
    rotated = [rotate(rows, rotation[0][k], rotation[1][k]) for k, rows in enumerate(sides)] if rotation else sides
    scale = record.scale
    labels = tuple(c.label for c in components) + ("bias",)

    def table(key_index: int) -> np.ndarray:
        return (scale * rotated[0] @ rotated[key_index].T).cpu().numpy()

    q_total, k_total = rotated[0].sum(0), rotated[1].sum(0)
    q_plain, k_plain = sides[0].sum(0), sides[1].sum(0)
    score = float(real_scores[j])
    main = table(1)
    return ScoreAttribution(
        tokens=encoded.tokens, layer=layer, head=head, query_position=i, key_position=j, components=labels,
        table=main, score=score, residual=score - float(main.sum()), scale=float(scale), rotary=rotation is not None,
        score_unrotated=float(scale * q_plain @ k_plain), products=(scale * q_total * k_total).cpu().numpy(),
        products_unrotated=(scale * q_plain * k_plain).cpu().numpy(), runner_up=runner_up,
        runner_up_table=table(2) if runner_up is not None else None,
        runner_up_score=float(real_scores[runner_up]) if runner_up is not None else None,
        frozen=tuple(frozen_names))
