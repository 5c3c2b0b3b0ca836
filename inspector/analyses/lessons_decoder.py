"""Lessons for the decoder era (issue 30): what changes from BERT to GPT-style models, each answered by a
measurement on the chosen decoder (and, for the first, an encoder beside it) with an answer paragraph written from
the numbers (:class:`inspector.analyses.lessons.Answer`, every language of the catalogue).

- :func:`causal_lesson` — the mask of an encoder and of a decoder on the same text (where each token may look), the
  score asymmetry ‖S − Sᵀ‖_F/‖S‖_F of the decoder's heads before and after W_K := W_Q
  (:class:`kernels.hf.TieKeysToQueries`), and the KL divergence of the next-token distribution the tie causes.
- :func:`rope_lesson` — RoPE (Su et al. 2021) rotates q and k by angles proportional to the position: shifting
  every position by k leaves every score unchanged (the largest change, measured), while an absolute-position model
  (BERT) changes its scores *and* its values; V is untouched; the score of one head's q/k pair against their
  relative offset, the same at two absolute positions; each pair's wavelength from the model's own frequencies
  (Gemma 3's two θ: 10k local, 1M global).
- :func:`gqa_lesson` — grouped-query attention (Ainslie et al. 2023): which query heads share a key/value head, the
  KV-cache bytes per token against one key/value head per query head (from config shapes), and how alike the
  attention of heads sharing a key/value head is (Jensen–Shannon, :mod:`inspector.analyses.divergence`).
- :func:`sinks_lesson` — attention sinks (Xiao et al. 2023): the sink mass per layer, the first token's small value
  (norm-weighted attention, Kobayashi et al. 2020), removing its column and renormalising, and the streaming-LLM
  perplexity of a long text with a window-only cache, the window plus 4 sink tokens, and full attention. Every
  variant is a :class:`kernels.hf.WeightEdit` in the attention request: the masked rows renormalised are exactly
  softmax over the kept keys; the model is never changed.
- :func:`projections_lesson` — W_Q, W_K, W_V and W_O of the chosen head, their real shapes and singular values.

Nothing is attached to the shared model: every change travels in the attention request.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from inspector.analyses.divergence import jensen_shannon_numpy
from inspector.analyses.lessons import Answer, _check_shapes, _f, _pct, asymmetry_index, position_kind
from inspector.analyses.lessons_geometry import QKSpaceLesson, qk_space_lesson
from inspector.base.display import Displayable
from inspector.base.errors import InvalidRequestError, UnsupportedModelError
from inspector.base.examples import long_corpus_text as long_text
from inspector.base.jsonable import to_jsonable
from inspector.core.bundled import BUNDLED
from inspector.core.forward import encode_text, forward
from inspector.core.loading import LoadedModel
from inspector.core.outputs import head_writes, model_output, output_change, output_projection
from kernels.hf import TieKeysToQueries, WeightEdit
from kernels.reference import visible_keys_mask

# Lesson "RoPE": every position moves by this many (fewer where an absolute-position model has no room).
POSITION_SHIFT = 100
# The relative offsets drawn for one q/k pair, and the two absolute positions it is placed at.
OFFSET_SPAN = 64
SECOND_POSITION = 1000
# Bytes per cached number in the KV-cache lesson: bf16/fp16, as decoders serve.
KV_BYTES_PER_VALUE = 2
# Streaming LLM (Xiao et al. 2023): 4 sink tokens and a window of recent tokens.
SINK_TOKENS = 4
STREAM_WINDOW = 64
STREAM_TOKENS = 320


def _layer_tensors(result, layer: int, name: str) -> np.ndarray:
    """A kept tensor of ``layer`` as float64 NumPy, batch dropped: (heads or kv_heads, n, d)."""
    return result.records[layer].tensors[name][0].double().cpu().numpy()


def _expand_kv(kv: np.ndarray, heads: int) -> np.ndarray:
    """(kv_heads, n, d) → (heads, n, d): each key/value head repeated for its query group."""
    return np.repeat(kv, heads // kv.shape[0], axis=0)


# ------------------------------------------------------------------------------------ causal vs bidirectional


@dataclass(frozen=True)
class CausalLesson:
    """An encoder and a decoder on the same text. encoder_visible: (n_e, n_e) bool and decoder_visible: (n_d, n_d)
    bool — which keys each query may see at the chosen layer (row = query). asymmetry, tied_asymmetry: (heads,) of
    the decoder's chosen layer, ‖S − Sᵀ‖_F/‖S‖_F of S = QKᵀ with its own W_K and with W_K := W_Q (S = QQᵀ).
    kl_head, kl_layer: KL(p ‖ p_tied) in nats of the next-token distribution when the chosen head, or every head
    of the layer, is tied."""

    encoder: str
    decoder: str
    encoder_tokens: tuple[str, ...]
    decoder_tokens: tuple[str, ...]
    encoder_visible: np.ndarray
    decoder_visible: np.ndarray
    layer: int
    head: int
    asymmetry: np.ndarray
    tied_asymmetry: np.ndarray
    kl_head: float
    kl_layer: float
    answer: Answer

    def __post_init__(self) -> None:
        ne, nd = len(self.encoder_tokens), len(self.decoder_tokens)
        _check_shapes(self, {"encoder_visible": (ne, ne), "decoder_visible": (nd, nd),
                             "tied_asymmetry": self.asymmetry.shape})


def _visible(result, layer: int, n: int) -> np.ndarray:
    record = result.records[layer]
    return visible_keys_mask(n, n, causal=record.causal, window=record.window)[0, 0].cpu().numpy()


def causal_lesson(encoder: LoadedModel, decoder: LoadedModel, text: str, layer: int, head: int, *,
                  backend: str = "torch") -> CausalLesson:
    if not decoder.info.causal or decoder.info.head != "causal-lm":
        raise InvalidRequestError(f"{decoder.info.name} is not a causal language model; pick a bundled decoder")
    layer, head = decoder.info.check_layer(layer), decoder.info.check_head(head)
    enc = encode_text(encoder, text)
    enc_result = forward(encoder, enc.inputs, backend=backend, stop_after=0, stats=("lse",))
    dec = encode_text(decoder, text)
    base = forward(decoder, dec.inputs, backend=backend, keep=("query", "key"), keep_layers=frozenset({layer}))
    query = _layer_tensors(base, layer, "query")
    key = _expand_kv(_layer_tensors(base, layer, "key"), len(query))
    asymmetry = np.array([asymmetry_index(q, k) for q, k in zip(query, key)])
    tied_asymmetry = np.array([asymmetry_index(q, q) for q in query])
    base_out = model_output(decoder, base, dec.inputs)
    kl = []
    for heads in ((head,), tuple(range(decoder.info.num_heads))):
        tied = forward(decoder, dec.inputs, backend=backend, interventions=[TieKeysToQueries(layer, heads)],
                       stats=("lse",))
        kl.append(output_change(base_out, model_output(decoder, tied, dec.inputs)))
    n_e, n_d = len(enc.tokens), len(dec.tokens)
    enc_visible, dec_visible = _visible(enc_result, 0, n_e), _visible(base, layer, n_d)
    values = {"encoder": encoder.info.name, "decoder": decoder.info.name, "n_e": str(n_e), "n_d": str(n_d),
              "enc_share": _pct(enc_visible.mean()), "dec_share": _pct(dec_visible.mean()), "layer": str(layer),
              "head": str(head), "asym": _f(asymmetry[head]), "asym_min": _f(asymmetry.min()),
              "asym_max": _f(asymmetry.max()), "tied": f"{tied_asymmetry.max():.1e}", "kl_head": f"{kl[0]:.2e}",
              "kl_layer": f"{kl[1]:.2e}"}
    return CausalLesson(encoder=encoder.info.name, decoder=decoder.info.name, encoder_tokens=enc.tokens,
                        decoder_tokens=dec.tokens, encoder_visible=enc_visible, decoder_visible=dec_visible,
                        layer=layer, head=head, asymmetry=asymmetry, tied_asymmetry=tied_asymmetry, kl_head=kl[0],
                        kl_layer=kl[1], answer=Answer("lesson9.answer", values))


# ------------------------------------------------------------------------------------------------------ RoPE


def rope_frequencies(loaded: LoadedModel) -> dict[str, np.ndarray]:
    """The rotary inverse frequencies (head_dim/2,) the model itself uses, read from its rotary-embedding buffers:
    ``{"all": …}`` for one kind of layer (Llama), ``{"sliding_attention": …, "full_attention": …}`` for Gemma 3's
    local and global layers. Empty for a model without RoPE."""
    found = {}
    for name, buffer in loaded.model.named_buffers():
        last = name.rsplit(".", 1)[-1]
        if last.endswith("inv_freq") and "original" not in last:
            found[last.removesuffix("inv_freq").rstrip("_") or "all"] = buffer.detach().double().cpu().numpy()
    return found


def layer_rope_kind(loaded: LoadedModel, layer: int, kinds: Sequence[str]) -> str:
    """Which entry of :func:`rope_frequencies` layer ``layer`` uses (Gemma 3: its ``layer_types``)."""
    types = getattr(loaded.model.config, "layer_types", None)
    if types is not None and types[layer] in kinds:
        return types[layer]
    return "all" if "all" in kinds else next(iter(kinds))


def rotate(x: np.ndarray, positions: np.ndarray, inv_freq: np.ndarray) -> np.ndarray:
    """Rotate ``x`` (…, n, d) at ``positions`` (n,) the way transformers' ``apply_rotary_pos_emb`` does: pair i is
    (x_i, x_{i + d/2}), turned by position × inv_freq[i]. Rotating by −position undoes it."""
    angles = np.asarray(positions, np.float64)[:, None] * inv_freq[None, :]  # (n, d/2)
    cos, sin = np.cos(angles), np.sin(angles)
    half = x.shape[-1] // 2
    first, second = x[..., :half], x[..., half:]
    return np.concatenate([first * cos - second * sin, second * cos + first * sin], axis=-1)


@dataclass(frozen=True)
class ShiftInvariance:
    """Every position moved by ``shift``: the largest change of any score S = QKᵀ·scale and of any value vector over
    every layer and head, and the largest |S| and |V| for scale."""

    model: str
    position: str
    shift: int
    score_change: float
    score_max: float
    value_change: float
    value_max: float

    @property
    def relative_score_change(self) -> float:
        return self.score_change / self.score_max if self.score_max > 0 else 0.0


def shift_invariance(loaded: LoadedModel, text: str, *, shift: int = POSITION_SHIFT,
                     backend: str = "torch") -> ShiftInvariance:
    """Run ``text`` at positions 0…n−1 and at shift…shift+n−1 (``position_ids``; fewer where the model's learned
    positions run out) and compare every layer's scores and values."""
    encoded = encode_text(loaded, text)
    n = len(encoded.tokens)
    shift = int(min(shift, loaded.info.max_positions - n - _position_offset(loaded)))
    if shift < 1:
        raise InvalidRequestError(f"the text's {n} tokens leave no room to shift positions in {loaded.info.name}; "
                                  "shorten the text")
    results = []
    for start in (0, shift):
        positions = torch.arange(start, start + n, device=loaded.device)[None] + _position_offset(loaded)
        results.append(forward(loaded, {**encoded.inputs, "position_ids": positions}, backend=backend,
                               keep=("query", "key", "value"), keep_layers="all", stats=("lse",)))
    score_change = score_max = value_change = value_max = 0.0
    for layer in range(loaded.info.num_layers):
        scores, values = [], []
        for result in results:
            q = _layer_tensors(result, layer, "query")
            k = _expand_kv(_layer_tensors(result, layer, "key"), len(q))
            scores.append(q @ k.transpose(0, 2, 1) * result.records[layer].scale)
            values.append(_layer_tensors(result, layer, "value"))
        score_change = max(score_change, float(np.abs(scores[1] - scores[0]).max()))
        score_max = max(score_max, float(np.abs(scores[0]).max()))
        value_change = max(value_change, float(np.abs(values[1] - values[0]).max()))
        value_max = max(value_max, float(np.abs(values[0]).max()))
    return ShiftInvariance(model=loaded.info.name, position=position_kind(loaded), shift=shift,
                           score_change=score_change, score_max=score_max, value_change=value_change,
                           value_max=value_max)


def _position_offset(loaded: LoadedModel) -> int:
    """RoBERTa counts positions from padding_idx + 1; everyone else from 0."""
    return int(loaded.model.config.pad_token_id) + 1 if loaded.info.model_type in ("roberta", "xlm-roberta") else 0


@dataclass(frozen=True)
class RopeLesson:
    """rope, absolute: :class:`ShiftInvariance` of the RoPE model and of an absolute-position model (None when
    none was given). offsets: (O,) relative offsets Δ = 0…OFFSET_SPAN; offset_scores: (2, O) the chosen head's score
    of its last token's query and key placed Δ apart, at query position ``positions[0]`` and ``positions[1]``.
    pair_index: (d/2,); wavelength: {kind: (d/2,)} tokens per full turn of each q/k pair, 2π/inv_freq.
    thetas: {kind: θ} the base each kind's frequencies follow (inv_freq[0]/inv_freq[1] raised to d/2)."""

    layer: int
    head: int
    kind: str
    rope: ShiftInvariance
    absolute: ShiftInvariance | None
    offsets: np.ndarray
    positions: tuple[int, int]
    offset_scores: np.ndarray
    offset_gap: float
    pair_index: np.ndarray
    wavelength: dict[str, np.ndarray]
    thetas: dict[str, float]
    answer: Answer

    def __post_init__(self) -> None:
        _check_shapes(self, {"offset_scores": (2, len(self.offsets))})
        for kind, wave in self.wavelength.items():
            if wave.shape != self.pair_index.shape:
                raise ValueError(f"RopeLesson.wavelength[{kind!r}] has shape {wave.shape}")


# The catalogue key naming each kind of layer a model's RoPE frequencies belong to (transformers' layer types).
KIND_NAME_KEYS = {"sliding_attention": "chart.decoder.local", "full_attention": "chart.decoder.global"}


def kind_name_key(kind: str) -> str:
    """The catalogue key of a kind of layer's name ("every layer" for a model with one kind)."""
    return KIND_NAME_KEYS.get(kind, "chart.decoder.all_layers")


def rope_lesson(loaded: LoadedModel, text: str, layer: int, head: int, *, absolute: LoadedModel | None = None,
                backend: str = "torch") -> RopeLesson:
    """The RoPE lesson on ``loaded`` (a rotary model); ``absolute``: an absolute-position model to contrast."""
    frequencies = rope_frequencies(loaded)
    if position_kind(loaded) != "rope" or not frequencies:
        raise InvalidRequestError(f"{loaded.info.name} does not use rotary position embeddings; pick a bundled "
                                  "decoder (SmolLM2 or Gemma 3) for this lesson")
    layer, head = loaded.info.check_layer(layer), loaded.info.check_head(head)
    rope = shift_invariance(loaded, text, backend=backend)
    contrast = shift_invariance(absolute, text, backend=backend) if absolute is not None else None
    encoded = encode_text(loaded, text)
    result = forward(loaded, encoded.inputs, backend=backend, keep=("query", "key"), keep_layers=frozenset({layer}),
                     stop_after=layer, stats=("lse",))
    kind = layer_rope_kind(loaded, layer, tuple(frequencies))
    inv_freq = frequencies[kind]
    n = len(encoded.tokens)
    q = _layer_tensors(result, layer, "query")[head]  # (n, d) rotated
    k = _expand_kv(_layer_tensors(result, layer, "key"), loaded.info.num_heads)[head]
    last = np.array([n - 1])
    q_plain, k_plain = rotate(q[-1:], -last, inv_freq)[0], rotate(k[-1:], -last, inv_freq)[0]  # (d,) unrotated
    offsets = np.arange(OFFSET_SPAN + 1)
    positions = (OFFSET_SPAN, OFFSET_SPAN + SECOND_POSITION)
    scale = result.records[layer].scale
    curves = []
    for m in positions:
        q_at = rotate(np.broadcast_to(q_plain, (len(offsets), len(q_plain))), np.full(len(offsets), m), inv_freq)
        k_at = rotate(np.broadcast_to(k_plain, (len(offsets), len(k_plain))), m - offsets, inv_freq)
        curves.append((q_at * k_at).sum(axis=-1) * scale)
    offset_scores = np.stack(curves)
    gap = float(np.abs(offset_scores[1] - offset_scores[0]).max())
    d = loaded.info.head_dim
    wavelength = {name: 2 * np.pi / freq for name, freq in frequencies.items()}
    # θ read back from the frequencies, to 4 significant digits (float rounding turns Gemma's 1,000,000 into 999,999)
    thetas = {name: float(f"{(freq[0] / freq[1]) ** (d / 2):.4g}") if len(freq) > 1 else math.nan
              for name, freq in frequencies.items()}
    values = {"model": loaded.info.name, "shift": str(rope.shift), "rope_change": f"{rope.score_change:.1e}",
              "rope_rel": f"{rope.relative_score_change:.1e}", "rope_v": f"{rope.value_change:.1e}",
              "layer": str(layer), "head": str(head), "gap": f"{gap:.1e}", "p1": str(positions[0]),
              "p2": str(positions[1]), "span": str(OFFSET_SPAN)}
    named = {"thetas": tuple((kind_name_key(name), f"θ = {theta:,.0f}") for name, theta in thetas.items()),
             "slowest": tuple((kind_name_key(name), f"{wave.max():,.0f}") for name, wave in wavelength.items())}
    key = "lesson10.answer"
    if contrast is not None:
        values.update(absolute=contrast.model, abs_shift=str(contrast.shift), abs_change=_f(contrast.score_change),
                      abs_rel=_pct(contrast.relative_score_change), abs_v=_f(contrast.value_change))
        key = "lesson10.answer.contrast"
    return RopeLesson(layer=layer, head=head, kind=kind, rope=rope, absolute=contrast, offsets=offsets,
                      positions=positions, offset_scores=offset_scores, offset_gap=gap,
                      pair_index=np.arange(d // 2), wavelength=wavelength, thetas=thetas,
                      answer=Answer(key, values, named=named))


# ------------------------------------------------------------------------------------------- grouped-query


def kv_cache_bytes_per_token(num_layers: int, kv_heads: int, head_dim: int,
                             bytes_per_value: int = KV_BYTES_PER_VALUE) -> int:
    """Bytes one token adds to the KV cache: a key and a value vector of ``head_dim`` per key/value head per
    layer."""
    return 2 * num_layers * kv_heads * head_dim * bytes_per_value


@dataclass(frozen=True)
class KVRow:
    """One model's cache arithmetic from its config shapes."""

    model: str
    num_layers: int
    num_heads: int
    kv_heads: int
    head_dim: int
    bytes_per_token: int
    bytes_one_kv_per_query: int

    @property
    def saving(self) -> float:
        return self.bytes_one_kv_per_query / self.bytes_per_token


def kv_row(model: str, num_layers: int, num_heads: int, kv_heads: int, head_dim: int) -> KVRow:
    return KVRow(model=model, num_layers=num_layers, num_heads=num_heads, kv_heads=kv_heads, head_dim=head_dim,
                 bytes_per_token=kv_cache_bytes_per_token(num_layers, kv_heads, head_dim),
                 bytes_one_kv_per_query=kv_cache_bytes_per_token(num_layers, num_heads, head_dim))


@dataclass(frozen=True)
class GQALesson:
    """kv_head_of: (heads,) the key/value head each query head reads. rows: the chosen model's and every bundled
    model's cache arithmetic (plus ``extra`` models). js: (heads, heads) mean Jensen–Shannon divergence (nats, no
    smoothing) between the rows of two heads of the chosen layer; shared_js, other_js: its mean over pairs that share
    a key/value head and over pairs that do not (NaN where there are none)."""

    model: str
    layer: int
    kv_head_of: np.ndarray
    rows: tuple[KVRow, ...]
    js: np.ndarray
    shared_js: float
    other_js: float
    answer: Answer

    def __post_init__(self) -> None:
        heads = len(self.kv_head_of)
        _check_shapes(self, {"js": (heads, heads)})


def gqa_lesson(loaded: LoadedModel, text: str, layer: int, *, extra: Sequence[LoadedModel] = (),
               backend: str = "torch") -> GQALesson:
    info = loaded.info
    layer = info.check_layer(layer)
    encoded = encode_text(loaded, text)
    result = forward(loaded, encoded.inputs, backend=backend, weights_layers=frozenset({layer}), stop_after=layer,
                     stats=("lse",))
    weights = result.records[layer].weights[0].double().cpu().numpy()  # (heads, n, n)
    heads = info.num_heads
    group = heads // info.num_kv_heads
    kv_head_of = np.arange(heads) // group
    js = np.zeros((heads, heads))
    for a in range(heads):
        for b in range(a + 1, heads):
            js[a, b] = js[b, a] = float(jensen_shannon_numpy(weights[a], weights[b], smoothing=0.0).mean())
    pairs = [(a, b) for a in range(heads) for b in range(a + 1, heads)]
    shared = [js[a, b] for a, b in pairs if kv_head_of[a] == kv_head_of[b]]
    other = [js[a, b] for a, b in pairs if kv_head_of[a] != kv_head_of[b]]
    shared_js = float(np.mean(shared)) if shared else math.nan
    other_js = float(np.mean(other)) if other else math.nan
    rows = [kv_row(info.name, info.num_layers, info.num_heads, info.num_kv_heads, info.head_dim)]
    rows += [kv_row(m.info.name, m.info.num_layers, m.info.num_heads, m.info.num_kv_heads, m.info.head_dim)
             for m in extra if m.info.name != info.name]
    for decoder in BUNDLED.values():
        card = decoder.card
        if all(row.model != card.label and not row.model.endswith(decoder.name) for row in rows):
            rows.append(kv_row(card.label, card.num_layers, card.num_heads, card.num_kv_heads, card.head_dim))
    own = rows[0]
    values = {"model": info.name, "heads": str(heads), "kv_heads": str(info.num_kv_heads), "group": str(group),
              "bytes": f"{own.bytes_per_token:,}", "mha_bytes": f"{own.bytes_one_kv_per_query:,}",
              "saving": _f(own.saving, 1), "layer": str(layer), "shared_js": _f(shared_js, 3),
              "other_js": _f(other_js, 3), "per_value": str(KV_BYTES_PER_VALUE)}
    key = "lesson11.answer" if shared and other else "lesson11.answer.mha" if group == 1 else "lesson11.answer.mqa"
    return GQALesson(model=info.name, layer=layer, kv_head_of=kv_head_of, rows=tuple(rows), js=js,
                     shared_js=shared_js, other_js=other_js, answer=Answer(key, values))


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
                                  "needs next-token predictions; pick a bundled decoder")
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


def sinks_lesson(loaded: LoadedModel, text: str, layer: int, *, stream: bool = True,
                 backend: str = "torch") -> SinksLesson:
    info = loaded.info
    layer = info.check_layer(layer)
    encoded = encode_text(loaded, text)
    n = len(encoded.tokens)
    if n < 3:
        raise InvalidRequestError("the sink lesson needs a text of at least 3 tokens")
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
              "change_layer": f"{changes[0]:.2e}", "change_all": f"{changes[1]:.2e}"}
    return SinksLesson(model=info.name, layer=layer, sink_mass=sink_mass, weight_share=weight_share,
                       norm_share=norm_share, value_norm_first=float(norms[:, 0].mean()),
                       value_norm_rest=float(norms[:, 1:].mean()), removal_change_layer=changes[0],
                       removal_change_all=changes[1], output_measure=base_out.kind, stream_tokens=stream_tokens,
                       stream_window=window if stream_ppl is not None else STREAM_WINDOW,
                       stream_perplexity=stream_ppl,
                       answer=Answer("lesson12.answer", values, {"measure": f"measure.{base_out.kind}"}),
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


# ------------------------------------------------------------------------------------------------ all of them


@dataclass(frozen=True)
class DecoderLessons(Displayable):
    """The decoder-era lessons that run on every page load (each a few forwards of the text); the streaming, window
    and linear-attention timings run on request (:func:`streaming_perplexity`, and
    :mod:`inspector.analyses.lessons_geometry`'s ``window_lesson`` and ``linear_lesson``)."""

    model: str
    encoder: str
    text: str
    layer: int
    head: int
    causal: CausalLesson
    rope: RopeLesson
    gqa: GQALesson
    sinks: SinksLesson
    qk_space: QKSpaceLesson
    projections: ProjectionsLesson


def decoder_lessons(encoder: LoadedModel, decoder: LoadedModel, text: str, layer: int, head: int, *,
                    backend: str = "torch") -> DecoderLessons:
    """Lessons D1–D4, D7 and D8 on ``decoder`` (a causal LM with RoPE) for ``layer`` and ``head``, with ``encoder``
    (an absolute-position encoder such as MiniLM) as the contrast of D1 and D2."""
    layer, head = decoder.info.check_layer(layer), decoder.info.check_head(head)
    return DecoderLessons(
        model=decoder.info.name, encoder=encoder.info.name, text=text, layer=layer, head=head,
        causal=causal_lesson(encoder, decoder, text, layer, head, backend=backend),
        rope=rope_lesson(decoder, text, layer, head, absolute=encoder if position_kind(encoder) == "absolute"
                         else None, backend=backend),
        gqa=gqa_lesson(decoder, text, layer, extra=(encoder,), backend=backend),
        sinks=sinks_lesson(decoder, text, layer, stream=False, backend=backend),
        qk_space=qk_space_lesson(decoder, text, layer, head, backend=backend),
        projections=projections_lesson(decoder, layer, head))


def decoder_lessons_json(lessons: DecoderLessons, lang: str = "en") -> dict:
    """Every number of ``lessons`` as plain JSON (NaN → null), answers written in ``lang``."""
    return to_jsonable(lessons, overrides={Answer: lambda answer: answer.text(lang)})
