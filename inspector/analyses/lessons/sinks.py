"""Decoder lessons D4 and D8 (:mod:`inspector.analyses.lessons`): attention sinks with the streaming-LLM perplexity,
and the head's projection matrices."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from inspector.analyses.lessons.common import PARKING_RATIO, Answer, _check_shapes, _f, _pct
from inspector.analyses.lessons.decoder import SINK_TOKENS, STREAM_TOKENS, STREAM_WINDOW
from inspector.base.errors import InvalidRequestError, UnsupportedModelError
from inspector.base.examples import long_corpus_text as long_text
from inspector.base.i18n import Notice
from inspector.core.forward import encode_text, forward
from inspector.core.loading import LoadedModel
from inspector.core.model_folders import model_name
from inspector.core.outputs import head_writes, model_output, output_change, output_projection
from kernels.hf import WeightEdit

# ------------------------------------------------------------------------------------------------------ sinks


def keep_keys_edit(keep: torch.Tensor):
    """A :class:`kernels.hf.WeightEdit` function keeping only the keys where ``keep`` ((q_len, k_len) bool) is True
    and renormalising each row: exactly softmax over the kept keys, since the rest of the row's exponentials are
    dropped from both numerator and denominator. A row left with nothing keeps its own weights."""
    def edit(weights: torch.Tensor, visible: torch.Tensor) -> torch.Tensor:
        kept = weights * keep.to(weights.device, weights.dtype)
        total = kept.sum(dim=-1, keepdim=True)
        return torch.where(total > 0, kept / total.clamp_min(torch.finfo(weights.dtype).tiny), weights)
    return edit


def streaming_keep(n: int, window: int, sinks: int) -> torch.Tensor:
    """(n, n) bool: query i keeps the ``window`` most recent keys (i − window < j ≤ i) and the first ``sinks``
    tokens — the cache of StreamingLLM (Xiao et al. 2023) when ``sinks`` > 0, a plain window cache when 0."""
    i = torch.arange(n)[:, None]
    j = torch.arange(n)[None, :]
    return (j <= i) & ((i - j < window) | (j < sinks))


def _all_heads_edit(loaded: LoadedModel, keep: torch.Tensor, layers: Sequence[int]) -> list[WeightEdit]:
    heads = tuple(range(loaded.info.num_heads))
    return [WeightEdit(layer, heads, keep_keys_edit(keep)) for layer in layers]


def perplexity(loaded: LoadedModel, inputs: dict[str, torch.Tensor], interventions: Sequence = (), *,
               first: int = 0, backend: str = "torch") -> float:
    """exp of the mean next-token negative log-likelihood over predictions of tokens first+1 … n−1."""
    result = forward(loaded, inputs, backend=backend, interventions=interventions, stats=("lse",))
    logits = result.outputs.logits[0, :-1].float()
    targets = inputs["input_ids"][0, 1:]
    nll = torch.nn.functional.cross_entropy(logits, targets, reduction="none")[first:]
    return float(torch.exp(nll.mean()))


@dataclass(frozen=True)
class SinksLesson:
    """sink_mass: (layers,) mean over heads and rows (the first row excluded in a causal model: it can only see
    token 0) of the weight on the first token. weight_share, norm_share: (heads,) at the chosen layer, the first
    token's share of each head's attention by weight and by norm ‖α f(x)‖ (Kobayashi et al. 2020).
    value_norm_first, value_norm_rest: mean ‖f(x_j)‖ of the first token and of the others (over heads).
    removal_change_layer, removal_change_all: the output change (KL for a language model) when the first token's
    column is removed and rows renormalised in the chosen layer / in every layer. stream_tokens, stream_window,
    stream_perplexity: the long text's token count, the window, and perplexity with (window only, window + sinks,
    full attention); None when not measured. key_share: (n,) each key's share of the chosen layer's attention (mean
    over heads and rows)."""

    model: str
    layer: int
    sink_mass: np.ndarray
    weight_share: np.ndarray
    norm_share: np.ndarray
    value_norm_first: float
    value_norm_rest: float
    removal_change_layer: float
    removal_change_all: float
    output_measure: str
    stream_tokens: int | None
    stream_window: int
    stream_perplexity: tuple[float, float, float] | None
    answer: Answer
    stream_answer: Answer | None
    key_share: np.ndarray = field(default_factory=lambda: np.zeros(1))

    def __post_init__(self) -> None:
        _check_shapes(self, {"norm_share": self.weight_share.shape})


def streaming_perplexity(loaded: LoadedModel, *, tokens: int = STREAM_TOKENS, window: int = STREAM_WINDOW,
                         sinks: int = SINK_TOKENS,
                         backend: str = "torch") -> tuple[int, int, tuple[float, float, float]]:
    """Perplexity of :func:`long_text` cut to ``tokens`` tokens with a window-only cache, the window plus ``sinks``
    sink tokens, and full attention — each cache a mask in every layer's attention (positions keep their original
    values, as a cache that is not recomputed keeps them). Predictions scored from token ``window + sinks`` on,
    where the caches differ. Returns (tokens, window, (window only, window + sinks, full)): the window shrinks to a
    quarter of the text on a model that reads fewer positions than ``tokens``."""
    if not loaded.info.causal or loaded.info.head != "causal-lm":
        raise InvalidRequestError(f"{loaded.info.name} is not a causal language model: the streaming experiment "
                                  "needs next-token predictions; pick a bundled decoder",
                                  notice=Notice("decoder.error.not_decoder", model=model_name(loaded.info.name)))
    encoded = encode_text(loaded, long_text(), truncate=True)
    inputs = {name: tensor[:, :tokens] for name, tensor in encoded.inputs.items()}
    n = inputs["input_ids"].shape[1]
    window = min(window, max(1, n // 4 - sinks))  # a model that reads few positions gets a window it can exceed
    if n <= window + sinks + 1:
        raise InvalidRequestError(f"the long text has only {n} tokens; the experiment needs more than "
                                  f"{window + sinks + 1}")
    layers = range(loaded.info.num_layers)
    first = window + sinks
    scores = tuple(perplexity(loaded, inputs, _all_heads_edit(loaded, streaming_keep(n, window, s), layers)
                              if s is not None else (), first=first, backend=backend) for s in (0, sinks, None))
    return n, window, scores


def parking_term(weight_share: float, norm_share: float) -> str:
    """The catalogue key of what the first token is: "a parking spot, not a source" when its share of the
    norm-weighted attention is below :data:`PARKING_RATIO` × its share of the weight, else "not shown"."""
    return "lessons.sink.parking" if norm_share < PARKING_RATIO * weight_share else "lessons.sink.not_parking"


def sinks_lesson(loaded: LoadedModel, text: str, layer: int, *, stream: bool = True,
                 backend: str = "torch") -> SinksLesson:
    info = loaded.info
    layer = info.check_layer(layer)
    encoded = encode_text(loaded, text)
    n = len(encoded.tokens)
    if n < 3:
        raise InvalidRequestError("the sink lesson needs a text of at least 3 tokens",
                                  notice=Notice("lessons.error.text_too_short", tokens=3))
    base = forward(loaded, encoded.inputs, backend=backend, weights_layers=frozenset({layer}), keep=("value",),
                   keep_layers=frozenset({layer}))
    rows = slice(1, None) if info.causal else slice(None)
    sink = np.stack([r.stats["sink"][0].float().cpu().numpy() for r in base.records])  # (layers, heads, n)
    sink_mass = sink[:, :, rows].mean(axis=(1, 2))
    weights = base.records[layer].weights[0].double().cpu().numpy()[:, rows]  # (heads, rows, n)
    value = base.records[layer].tensors["value"][0]
    norms = head_writes(loaded, layer, value).norm(dim=-1).double().cpu().numpy()  # (heads, n) ‖f_h(x_j)‖
    weighted = weights * norms[:, None, :]
    weight_share = weights[..., 0].mean(axis=-1)
    norm_share = (weighted[..., 0] / np.maximum(weighted.sum(axis=-1), 1e-30)).mean(axis=-1)
    base_out = model_output(loaded, base, encoded.inputs)
    no_first = torch.ones(n, n, dtype=torch.bool)
    no_first[:, 0] = False
    changes = []
    for layers in ((layer,), range(info.num_layers)):
        edited = forward(loaded, encoded.inputs, backend=backend, interventions=_all_heads_edit(loaded, no_first,
                                                                                                 layers),
                         stats=("lse",))
        changes.append(output_change(base_out, model_output(loaded, edited, encoded.inputs)))
    stream_tokens, stream_ppl, stream_answer, window = None, None, None, STREAM_WINDOW
    if stream and info.causal and info.head == "causal-lm":
        stream_tokens, window, stream_ppl = streaming_perplexity(loaded, backend=backend)
        stream_answer = Answer("lesson12.stream", {
            "tokens": str(stream_tokens), "window": str(window), "sinks": str(SINK_TOKENS),
            "window_ppl": _f(stream_ppl[0], 1), "sink_ppl": _f(stream_ppl[1], 1), "full_ppl": _f(stream_ppl[2], 1)})
    top = int(sink_mass.argmax())
    values = {"model": info.name, "layers": str(info.num_layers), "top_layer": str(top),
              "top_mass": _pct(sink_mass[top]), "mean_mass": _pct(sink_mass.mean()), "layer": str(layer),
              "weight_share": _pct(weight_share.mean()), "norm_share": _pct(norm_share.mean()),
              "v_first": _f(norms[:, 0].mean()), "v_rest": _f(norms[:, 1:].mean()),
              "change_layer": f"{changes[0]:.2e}", "change_all": f"{changes[1]:.2e}",
              "ratio": _f(PARKING_RATIO), "parking_limit": _pct(PARKING_RATIO * weight_share.mean())}
    parking = parking_term(float(weight_share.mean()), float(norm_share.mean()))
    return SinksLesson(model=info.name, layer=layer, sink_mass=sink_mass, weight_share=weight_share,
                       norm_share=norm_share, value_norm_first=float(norms[:, 0].mean()),
                       value_norm_rest=float(norms[:, 1:].mean()), removal_change_layer=changes[0],
                       removal_change_all=changes[1], output_measure=base_out.kind, stream_tokens=stream_tokens,
                       stream_window=window if stream_ppl is not None else STREAM_WINDOW,
                       stream_perplexity=stream_ppl,
                       answer=Answer("lesson12.answer", values, {
                           "measure": f"measure.{base_out.kind}", "parking": parking,
                           "conclusion": "lesson12.conclusion.parking" if parking == "lessons.sink.parking"
                           else "lesson12.conclusion.not_parking"}),
                       stream_answer=stream_answer, key_share=weights.mean(axis=(0, 1)))


# ------------------------------------------------------------------------------------------ the projections

# (query, key, value) module suffixes and their layout: Llama-style separate Linear layers, BERT's self-attention.
_QKV_PROJECTIONS = (
    (("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"), "linear"),
    (("attention.self.query", "attention.self.key", "attention.self.value"), "linear"),
    (("attention.q_lin", "attention.k_lin", "attention.v_lin"), "linear"),
)


def head_projections(loaded: LoadedModel, layer: int, head: int) -> dict[str, np.ndarray]:
    """W_Q^h, W_K^h, W_V^h (d_model, d_k) — x @ W gives the head's q, k, v before any rotary embedding or norm —
    and W_O^h (d_k, d_model), float64. K and V come from the head's key/value head (GQA)."""
    info = loaded.info
    layer, head = info.check_layer(layer), info.check_head(head)
    modules = dict(loaded.model.named_modules())
    group = info.num_heads // info.num_kv_heads
    for suffixes, _layout in _QKV_PROJECTIONS:
        found = [[m for name, m in modules.items() if name.endswith(suffix)] for suffix in suffixes]
        if all(len(f) == info.num_layers for f in found):
            d = info.head_dim
            picks = (head, head // group, head // group)
            matrices = {}
            for name, found_list, index in zip(("W_Q", "W_K", "W_V"), found, picks):
                weight = found_list[layer].weight.detach().double().cpu().numpy().T  # (d_model, out)
                matrices[name] = weight[:, index * d:(index + 1) * d]
            matrices["W_O"] = output_projection(loaded, layer)[0][head].double().cpu().numpy()
            return matrices
    raise UnsupportedModelError(f"{info.name} ({info.architecture}): the inspector does not know where this "
                                "architecture keeps W_Q, W_K and W_V; Llama-, Gemma- and BERT-style models are "
                                "supported")


@dataclass(frozen=True)
class ProjectionsLesson:
    """The chosen head's matrices: shapes {name: (rows, cols)}; singular: {name: (min(rows, cols),)} descending;
    the bilinear form W_Q^h W_K^hᵀ (d_model, d_model) — rank ≤ d_k — as ``W_QK``."""

    model: str
    layer: int
    head: int
    shapes: dict[str, tuple[int, int]]
    singular: dict[str, np.ndarray]
    answer: Answer


def projections_lesson(loaded: LoadedModel, layer: int, head: int) -> ProjectionsLesson:
    matrices = head_projections(loaded, layer, head)
    matrices["W_QK"] = matrices["W_Q"] @ matrices["W_K"].T
    singular = {name: np.linalg.svd(m, compute_uv=False) for name, m in matrices.items()}
    shapes = {name: tuple(int(s) for s in m.shape) for name, m in matrices.items()}
    qk = singular["W_QK"]
    d_k = loaded.info.head_dim
    rank = int((qk > qk[0] * 1e-6).sum()) if qk[0] > 0 else 0
    values = {"model": loaded.info.name, "layer": str(layer), "head": str(head),
              "d_model": str(loaded.info.hidden_size), "d_k": str(d_k),
              "q_shape": " × ".join(map(str, shapes["W_Q"])), "o_shape": " × ".join(map(str, shapes["W_O"])),
              "q_top": _f(singular["W_Q"][0]), "k_top": _f(singular["W_K"][0]), "v_top": _f(singular["W_V"][0]),
              "o_top": _f(singular["W_O"][0]), "qk_rank": str(rank),
              "q_cond": _f(singular["W_Q"][0] / max(singular["W_Q"][-1], 1e-30), 1)}
    return ProjectionsLesson(model=loaded.info.name, layer=layer, head=head, shapes=shapes, singular=singular,
                             answer=Answer("lesson16.answer", values))
