"""Lessons on what attention costs and where it lives (issue 30), each measured on the chosen model and text with an
answer written from the numbers (:class:`inspector.analyses.lessons.Answer`):

- :func:`window_lesson` — sliding-window layers (Mistral; Gemma 3: 15 of 18 layers see 512 tokens): the weight
  beyond the window is exactly zero on a text longer than the window, a global layer's is not; what a local and a
  global layer cost as n grows (median of repeats, :func:`inspector.analyses.lessons.exponent_interval`); the
  reach of a stack of windows.
- :func:`linear_lesson` — linear attention (Katharopoulos et al. 2020): one head's softmax replaced by the kernel
  φ(q)·φ(k) with φ = elu + 1, normalised per row; how far each row's routing moves (Jensen–Shannon), how much the
  model's output moves (the head's weights swapped through :class:`kernels.hf.WeightEdit`), and time against n of
  φ(Q)(φ(K)ᵀV) against the materialised softmax.
- :func:`qk_space_lesson` — the query–key space (AttentionViz, Yeh et al. 2023): one head's queries and keys
  projected together (PCA) after translating the keys (k + c adds q·c to a whole row: softmax unchanged) and scaling
  queries by α and keys by 1/α (scores unchanged) so the two clouds share a centre and a mean norm; the Spearman
  correlation of query–key distance with dot product as the plot's trust figure; the mean ‖q‖ / ‖k‖ per layer.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from inspector.analyses.divergence import jensen_shannon_numpy
from inspector.analyses.lessons.common import (
    BLUR_MARGIN,
    BUSY_SPREAD,
    QK_MIN_RHO,
    VERDICT_ALPHA,
    Answer,
    _check_shapes,
    _f,
    _p,
    _pct,
    rank_trend,
)
from inspector.analyses.lessons.timing import exponent_interval, timing_spread
from inspector.base.errors import InvalidRequestError
from inspector.base.examples import long_corpus_text as long_text
from inspector.base.i18n import Notice
from inspector.core.budget import attention_bytes, weight_bytes
from inspector.core.deadline import check_deadline
from inspector.core.forward import encode_text, forward
from inspector.core.loading import LoadedModel
from inspector.core.model_folders import model_name
from inspector.core.outputs import model_output, output_change
from kernels.hf import WeightEdit
from kernels.reference import row_entropy, visible_keys_mask

WINDOW_LENGTHS: tuple[int, ...] = (256, 512, 1024, 2048, 4096)
LINEAR_LENGTHS: tuple[int, ...] = (256, 512, 1024, 2048)
TIMING_REPEATS = 5


def _runs_ms(fn, repeats: int) -> list[float]:
    fn()  # warm-up
    runs = []
    for _ in range(repeats):
        started = time.perf_counter()
        fn()
        runs.append(1000 * (time.perf_counter() - started))
    return runs


# ------------------------------------------------------------------------------------------- sliding windows
TIMING_BLOCK = 128  # query rows per block of :func:`banded_attention`


def banded_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, scale: float, window: int | None,
                     block: int = TIMING_BLOCK) -> torch.Tensor:
    """Causal attention one block of queries at a time, each block reading only the keys it may see — keys
    ``lo … stop − 1`` for queries ``start … stop − 1``, with ``lo = 0`` for a global layer and ``start − window + 1``
    for a sliding-window one (the window of :func:`kernels.reference.visible_keys_mask`: a query at i sees keys
    i − window + 1 … i). What a windowed kernel saves: O(n·w) work and scores instead of O(n²); the lesson times
    both with this one function, so the only difference is the keys read. q, k, v: (batch, heads, n, d) →
    (batch, heads, n, d)."""
    n = q.shape[2]
    outs = []
    for start in range(0, n, block):
        stop = min(start + block, n)
        lo = 0 if window is None else max(0, start - window + 1)
        query_at = torch.arange(start, stop, device=q.device)[:, None]
        key_at = torch.arange(lo, stop, device=q.device)[None, :]
        visible = key_at <= query_at
        if window is not None:
            visible &= key_at > query_at - window
        scores = (q[:, :, start:stop] @ k[:, :, lo:stop].transpose(-1, -2) * scale).masked_fill(~visible, -math.inf)
        outs.append(torch.softmax(scores, dim=-1) @ v[:, :, lo:stop])
    return torch.cat(outs, dim=2)


@dataclass(frozen=True)
class WindowLesson:
    """window: the local layers' window; local_layers, global_layers: their indices. n: tokens of the long text.
    beyond_local: (heads,) the largest weight any query of ``local_layer`` puts on a key ≥ window tokens back
    (exactly 0); beyond_global: (heads,) the mean mass a query of ``global_layer`` puts there (rows that have such
    keys). lengths: (L,); local_ms, global_ms: (L,) medians of :func:`banded_attention` with and without the window
    (``heads`` × ``d_k``, causal); local_bytes, global_bytes: (L,) the scores a materialised layer would hold —
    n·min(n, w) against n². reach: how far back a token can be read through the local layers alone."""

    model: str
    window: int
    local_layers: tuple[int, ...]
    global_layers: tuple[int, ...]
    n: int
    local_layer: int
    global_layer: int | None
    beyond_local: np.ndarray
    beyond_global: np.ndarray | None
    lengths: np.ndarray
    local_ms: np.ndarray
    global_ms: np.ndarray
    local_bytes: np.ndarray
    global_bytes: np.ndarray
    spread: float
    reach: int
    answer: Answer

    def __post_init__(self) -> None:
        _check_shapes(self, {name: (len(self.lengths),) for name in
                             ("local_ms", "global_ms", "local_bytes", "global_bytes")})


def window_layers(loaded: LoadedModel, n: int, text_inputs: dict) -> tuple[int | None, list[int], list[int]]:
    """(window, local layers, global layers), read from what the attention function was told in one forward."""
    result = forward(loaded, text_inputs, stats=("lse",))
    windows = [record.window for record in result.records]
    local = [i for i, w in enumerate(windows) if w is not None]
    return (windows[local[0]] if local else None), local, [i for i, w in enumerate(windows) if w is None]


def window_lesson(loaded: LoadedModel, *, text: str | None = None, lengths: Sequence[int] = WINDOW_LENGTHS,
                  repeats: int = TIMING_REPEATS, backend: str = "torch") -> WindowLesson:
    """On ``text`` (default: the bundled long corpus text, cut to window + 64 tokens)."""
    info = loaded.info
    probe = encode_text(loaded, "a b c")
    window, local, global_ = window_layers(loaded, 5, probe.inputs)
    if window is None:
        raise InvalidRequestError(f"{info.name} has no sliding-window layer; pick Gemma 3 270M (15 of its 18 layers "
                                  "see a 512-token window)",
                                  notice=Notice("decoder.error.no_window", model=model_name(info.name)))
    encoded = encode_text(loaded, text or long_text(4 * window + 256), truncate=True)
    n = min(encoded.inputs["input_ids"].shape[1], window + 64)
    inputs = {name: tensor[:, :n] for name, tensor in encoded.inputs.items()}
    if n <= window:
        raise InvalidRequestError(f"the text has {n} tokens, not more than the window of {window}; use a longer text",
                                  notice=Notice("decoder.error.text_within_window", tokens=n, window=window))
    local_layer, global_layer = local[0], (global_[0] if global_ else None)
    layers = frozenset({local_layer} | ({global_layer} if global_layer is not None else set()))
    result = forward(loaded, inputs, backend=backend, weights_layers=layers,
                     stop_after=max(layers), stats=("lse",))
    far = ~visible_keys_mask(n, n, causal=True, window=window)[0, 0].numpy() & np.tril(np.ones((n, n), bool))
    local_w = result.records[local_layer].weights[0].double().cpu().numpy()
    beyond_local = np.where(far, local_w, 0).max(axis=(1, 2))
    beyond_global = None
    if global_layer is not None:
        global_w = result.records[global_layer].weights[0].double().cpu().numpy()
        rows = far.any(axis=-1)
        beyond_global = np.where(far, global_w, 0).sum(axis=-1)[:, rows].mean(axis=-1)
    generator = torch.Generator().manual_seed(0)
    local_runs, global_runs = [], []
    d, heads = info.head_dim, info.num_heads
    for length in lengths:
        check_deadline(f"before timing n = {length}")  # a run's deadline binds between lengths
        q, k, v = (torch.randn(1, heads, length, d, generator=generator) for _ in range(3))
        with torch.inference_mode():
            local_runs.append(_runs_ms(lambda: banded_attention(q, k, v, scale=d ** -0.5, window=window), repeats))
            global_runs.append(_runs_ms(lambda: banded_attention(q, k, v, scale=d ** -0.5, window=None), repeats))
    lengths_a = np.asarray(lengths, dtype=np.int64)
    local_bytes = np.array([weight_bytes(heads, length, keys=min(length, window)) for length in lengths], np.float64)
    global_bytes = np.array([attention_bytes(info, length, layers=1) for length in lengths], np.float64)
    local_ms, global_ms = np.median(local_runs, axis=1), np.median(global_runs, axis=1)
    spread = max(timing_spread(np.asarray(local_runs)), timing_spread(np.asarray(global_runs)))
    # Layers stacked below the first global layer pass information back at most window − 1 tokens each.
    stacked = global_[0] if global_ else info.num_layers
    reach = stacked * (window - 1)
    values = {"model": info.name, "window": str(window), "local": str(len(local)), "global": str(len(global_)),
              "n": str(n), "local_layer": str(local_layer),
              "beyond_local": f"{beyond_local.max():.1e}", "stacked": str(stacked), "reach": f"{reach:,}",
              "global_layer": str(global_layer), "last": str(int(lengths_a[-1])),
              "beyond_global": _pct(beyond_global.mean()) if beyond_global is not None else "—",
              "local_ms": _f(local_ms[-1], 1), "global_ms": _f(global_ms[-1], 1),
              "local_mb": _f(local_bytes[-1] / 2**20, 1), "global_mb": _f(global_bytes[-1] / 2**20, 1),
              "spread": _pct(spread), "busy": _pct(BUSY_SPREAD)}
    busy = spread > BUSY_SPREAD
    key = (("lesson13.answer.busy" if busy else "lesson13.answer") if global_layer is not None else
           ("lesson13.answer.local.busy" if busy else "lesson13.answer.local"))
    return WindowLesson(model=info.name, window=window, local_layers=tuple(local), global_layers=tuple(global_),
                        n=n, local_layer=local_layer, global_layer=global_layer, beyond_local=beyond_local,
                        beyond_global=beyond_global, lengths=lengths_a, local_ms=local_ms, global_ms=global_ms,
                        local_bytes=local_bytes, global_bytes=global_bytes, spread=spread, reach=reach,
                        answer=Answer(key, values, lists={"global_list": tuple(map(str, global_))}))


# ------------------------------------------------------------------------------------------ linear attention


def elu_feature(x: torch.Tensor) -> torch.Tensor:
    """φ(x) = elu(x) + 1 (Katharopoulos et al. 2020): positive, so φ(q)·φ(k) > 0 can stand in for exp(q·k)."""
    return torch.nn.functional.elu(x) + 1


def linear_weights(query: torch.Tensor, key: torch.Tensor, visible: torch.Tensor) -> torch.Tensor:
    """The routing linear attention implies: A_ij = φ(q_i)·φ(k_j) / Σ_{j' visible} φ(q_i)·φ(k_j'), 0 where j is
    not visible. query (…, n, d), key (…, k_len, d), visible bool broadcastable to (…, n, k_len)."""
    kernel = elu_feature(query) @ elu_feature(key).transpose(-1, -2)  # (…, n, k_len)
    kernel = torch.where(visible, kernel, torch.zeros((), dtype=kernel.dtype, device=kernel.device))
    return kernel / kernel.sum(dim=-1, keepdim=True).clamp_min(torch.finfo(kernel.dtype).tiny)


def linear_attention(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, *, causal: bool) -> torch.Tensor:
    """O = φ(Q)(φ(K)ᵀV) / (φ(Q)·Σφ(K)) in O(n·d²) — causal: running sums over the keys so far — never building an
    n × n matrix. query, key, value: (…, n, d)."""
    fq, fk = elu_feature(query), elu_feature(key)
    if not causal:
        kv = fk.transpose(-1, -2) @ value  # (…, d, d_v)
        return (fq @ kv) / (fq @ fk.sum(dim=-2, keepdim=True).transpose(-1, -2)).clamp_min(1e-30)
    kv = torch.cumsum(fk[..., :, :, None] * value[..., :, None, :], dim=-3)  # (…, n, d, d_v) prefix sums
    numerator = (fq[..., :, None, :] @ kv)[..., 0, :]
    denominator = (fq * torch.cumsum(fk, dim=-2)).sum(dim=-1, keepdim=True)
    return numerator / denominator.clamp_min(1e-30)


@dataclass(frozen=True)
class LinearLesson:
    """The chosen head: weights, linear: (n, n) softmax weights and the linear-attention routing; js: (n,) JS
    divergence (nats) of each row; entropy_softmax, entropy_linear: mean row entropy (nats); output_change: the
    model's output change with the head's weights replaced (``output_measure``). lengths: (L,); softmax_ms,
    linear_ms: (L,) medians for one head of size d_k."""

    layer: int
    head: int
    tokens: tuple[str, ...]
    weights: np.ndarray
    linear: np.ndarray
    js: np.ndarray
    entropy_softmax: float
    entropy_linear: float
    output_change: float
    output_measure: str
    lengths: np.ndarray
    softmax_ms: np.ndarray
    linear_ms: np.ndarray
    exponent_softmax: float
    exponent_linear: float
    spread: float
    answer: Answer

    def __post_init__(self) -> None:
        n = len(self.tokens)
        _check_shapes(self, {"weights": (n, n), "linear": (n, n), "js": (n,)})
        _check_shapes(self, {"softmax_ms": (len(self.lengths),), "linear_ms": (len(self.lengths),)})


def blur_term(entropy_softmax: float, entropy_linear: float) -> str:
    """The catalogue key of what linear attention did to the routing: "blurrier" when the mean row entropy rose by at
    least :data:`BLUR_MARGIN` nats, else "not shown to be blurrier"."""
    return "lessons.linear.blurrier" if entropy_linear - entropy_softmax >= BLUR_MARGIN else \
        "lessons.linear.not_blurrier"


def linear_lesson(loaded: LoadedModel, text: str, layer: int, head: int, *, lengths: Sequence[int] = LINEAR_LENGTHS,
                  repeats: int = TIMING_REPEATS, backend: str = "torch") -> LinearLesson:
    info = loaded.info
    layer, head = info.check_layer(layer), info.check_head(head)
    encoded = encode_text(loaded, text)
    base = forward(loaded, encoded.inputs, backend=backend, weights_layers=frozenset({layer}), keep=("query", "key"),
                   keep_layers=frozenset({layer}))
    record = base.records[layer]
    group = info.num_heads // info.num_kv_heads
    q = record.tensors["query"][0, head].double().cpu()
    k = record.tensors["key"][0, head // group].double().cpu()
    n = q.shape[0]
    visible = visible_keys_mask(n, n, causal=record.causal, window=record.window)[0, 0]
    # φ sees q and k as the softmax did, including its scale (split evenly between the two, √scale each).
    root = math.sqrt(record.scale)
    linear = linear_weights(q * root, k * root, visible).numpy()
    weights = record.weights[0, head].double().cpu().numpy()
    js = jensen_shannon_numpy(weights, linear, smoothing=0.0)

    def swap(original: torch.Tensor, seen: torch.Tensor) -> torch.Tensor:
        return torch.as_tensor(linear, dtype=original.dtype, device=original.device).expand_as(original)

    edited = forward(loaded, encoded.inputs, backend=backend, interventions=[WeightEdit(layer, (head,), swap)],
                     stats=("lse",))
    base_out = model_output(loaded, base, encoded.inputs)
    change = output_change(base_out, model_output(loaded, edited, encoded.inputs))
    generator = torch.Generator().manual_seed(0)
    d = info.head_dim
    soft_runs, lin_runs = [], []
    for length in lengths:
        check_deadline(f"before timing n = {length}")
        qq, kk, vv = (torch.randn(1, 1, length, d, generator=generator) for _ in range(3))
        with torch.inference_mode():
            soft_runs.append(_runs_ms(lambda: torch.softmax(qq @ kk.transpose(-1, -2) * d ** -0.5, dim=-1) @ vv,
                                      repeats))
            lin_runs.append(_runs_ms(lambda: linear_attention(qq, kk, vv, causal=False), repeats))
    lengths_a = np.asarray(lengths, dtype=np.int64)
    soft_runs_a, lin_runs_a = np.asarray(soft_runs), np.asarray(lin_runs)
    soft_exp = exponent_interval(lengths_a, soft_runs_a)[0]
    lin_exp = exponent_interval(lengths_a, lin_runs_a)[0]
    spread = max(timing_spread(soft_runs_a), timing_spread(lin_runs_a))
    rows = visible.numpy().sum(axis=-1) >= 2
    entropy_softmax, entropy_linear = float(row_entropy(weights).mean()), float(row_entropy(linear).mean())
    values = {"layer": str(layer), "head": str(head), "js_mean": _f(js[rows].mean() if rows.any() else 0.0, 3),
              "js_max": _f(js.max(), 3), "h_soft": _f(entropy_softmax), "h_lin": _f(entropy_linear),
              "change": f"{change:.2e}", "last": str(int(lengths_a[-1])), "soft_ms": _f(np.median(soft_runs[-1]), 2),
              "lin_ms": _f(np.median(lin_runs[-1]), 2), "soft_exp": _f(soft_exp), "lin_exp": _f(lin_exp),
              "d_k": str(d), "spread": _pct(spread), "busy": _pct(BUSY_SPREAD),
              "blur_margin": _f(BLUR_MARGIN)}
    blur = blur_term(entropy_softmax, entropy_linear)
    # The last sentence follows the verdict: the lost sharpness is claimed only where this head shows it.
    conclusion = "lesson14.conclusion.blurrier" if blur == "lessons.linear.blurrier" else \
        "lesson14.conclusion.not_blurrier"
    key = "lesson14.answer.busy" if spread > BUSY_SPREAD else "lesson14.answer"
    return LinearLesson(layer=layer, head=head, tokens=encoded.tokens, weights=weights, linear=linear, js=js,
                        entropy_softmax=entropy_softmax, entropy_linear=entropy_linear, output_change=change,
                        output_measure=base_out.kind, lengths=lengths_a, softmax_ms=np.median(soft_runs_a, axis=1),
                        linear_ms=np.median(lin_runs_a, axis=1), exponent_softmax=soft_exp, exponent_linear=lin_exp,
                        spread=spread,
                        answer=Answer(key, values, {"measure": f"measure.{base_out.kind}", "blur": blur,
                                                     "conclusion": conclusion}))


# ------------------------------------------------------------------------------------------- query–key space


def normalise_qk(query: np.ndarray, key: np.ndarray) -> tuple[np.ndarray, np.ndarray, float, np.ndarray]:
    """AttentionViz's two moves that leave every row's softmax unchanged: keys translated by c = mean(q) − mean(k)
    (q_i·(k_j + c) = q_i·k_j + q_i·c, the same for every key of row i) and queries scaled by α, keys by 1/α with α =
    sqrt(mean‖k‖ / mean‖q‖) (q·k unchanged), so both clouds share a centre and a mean norm. Returns (q', k', α, c)."""
    translation = query.mean(axis=0) - key.mean(axis=0)
    moved = key + translation
    alpha = math.sqrt(np.linalg.norm(moved, axis=-1).mean() / max(np.linalg.norm(query, axis=-1).mean(), 1e-30))
    return query * alpha, moved / alpha, alpha, translation


@dataclass(frozen=True)
class QKSpaceLesson:
    """query_xy, key_xy: (n, 2) the head's queries and keys after :func:`normalise_qk`, on the first two principal
    components of both together; explained: share of variance on those two. spearman: ρ between ‖q'_i − k'_j‖ and
    q'_i·k'_j over visible pairs (negative: near means a high score — the plot can be trusted). norm_gap: (layers,)
    mean ‖q‖ / mean ‖k‖ of every layer (over heads and tokens, before the normalisation). unchanged: the largest
    change of any weight after the normalisation (0 to rounding)."""

    layer: int
    head: int
    tokens: tuple[str, ...]
    query_xy: np.ndarray
    key_xy: np.ndarray
    explained: float
    alpha: float
    spearman: float
    unchanged: float
    norm_gap: np.ndarray
    answer: Answer

    def __post_init__(self) -> None:
        n = len(self.tokens)
        _check_shapes(self, {"query_xy": (n, 2), "key_xy": (n, 2)})


def _softmax_rows(scores: np.ndarray, visible: np.ndarray) -> np.ndarray:
    masked = np.where(visible, scores, -np.inf)
    masked = masked - masked.max(axis=-1, keepdims=True)
    e = np.exp(masked)
    return e / e.sum(axis=-1, keepdims=True)


def qk_space_lesson(loaded: LoadedModel, text: str, layer: int, head: int, *, backend: str = "torch") -> QKSpaceLesson:
    info = loaded.info
    layer, head = info.check_layer(layer), info.check_head(head)
    encoded = encode_text(loaded, text)
    result = forward(loaded, encoded.inputs, backend=backend, keep=("query", "key"), keep_layers="all",
                     stats=("lse",))
    gaps = []
    for record in result.records:
        qn = record.tensors["query"][0].float().norm(dim=-1).mean()
        kn = record.tensors["key"][0].float().norm(dim=-1).mean()
        gaps.append(float(qn / kn.clamp_min(1e-30)))
    record = result.records[layer]
    group = info.num_heads // info.num_kv_heads
    q = record.tensors["query"][0, head].double().cpu().numpy()
    k = record.tensors["key"][0, head // group].double().cpu().numpy()
    n = len(q)
    visible = visible_keys_mask(n, n, causal=record.causal, window=record.window)[0, 0].numpy()
    q2, k2, alpha, _ = normalise_qk(q, k)
    unchanged = float(np.abs(_softmax_rows(q2 @ k2.T, visible) - _softmax_rows(q @ k.T, visible)).max())
    both = np.vstack([q2, k2])
    centred = both - both.mean(axis=0)
    _, sigma, vt = np.linalg.svd(centred, full_matrices=False)
    xy = centred @ vt[:2].T
    explained = float((sigma[:2] ** 2).sum() / max((sigma ** 2).sum(), 1e-30))
    distance = np.linalg.norm(q2[:, None, :] - k2[None, :, :], axis=-1)[visible]
    dot = (q2 @ k2.T)[visible]
    rho, p, readable = nearness_verdict(distance, dot)
    gap = np.asarray(gaps)
    values = {"layer": str(layer), "head": str(head), "alpha": _f(alpha), "explained": _pct(explained),
              "rho": _f(rho), "p": _p(p), "min_rho": _f(QK_MIN_RHO), "test_alpha": f"{VERDICT_ALPHA:g}",
              "unchanged": f"{unchanged:.1e}", "gap_min": _f(gap.min()), "gap_max": _f(gap.max()),
              "gap_layer": _f(gap[layer]), "gap_top": str(int(gap.argmax()))}
    return QKSpaceLesson(layer=layer, head=head, tokens=encoded.tokens, query_xy=xy[:n], key_xy=xy[n:],
                         explained=explained, alpha=alpha, spearman=rho, unchanged=unchanged, norm_gap=gap,
                         answer=Answer("lesson15.answer" if readable else "lesson15.answer.weak", values))


def nearness_verdict(distance: np.ndarray, dot: np.ndarray, *, min_rho: float = QK_MIN_RHO,
                     alpha: float = VERDICT_ALPHA) -> tuple[float, float, bool]:
    """(ρ, one-sided p, readable): Spearman's ρ between query–key distance and dot product, tested for “nearer means
    a higher score” (ρ < 0). The picture may be read that way only for a strong link: ρ ≤ −min_rho and p < alpha."""
    trend = rank_trend(distance, dot, claimed="less", alpha=alpha)
    readable = trend.verdict == "shown" and trend.rho <= -min_rho
    return trend.rho, trend.p, readable
