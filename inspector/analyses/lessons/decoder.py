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
from dataclasses import dataclass

import numpy as np
import torch

from inspector.analyses.divergence import jensen_shannon_numpy
from inspector.analyses.lessons.common import (
    ASYMMETRY_FAR,
    ROUNDING_SHARE,
    Answer,
    _check_shapes,
    _f,
    _pct,
    asymmetry_index,
    asymmetry_term,
    position_kind,
    rounding_term,
)
from inspector.base.errors import InvalidRequestError
from inspector.base.i18n import Notice
from inspector.core.bundled import BUNDLED
from inspector.core.forward import encode_text, forward
from inspector.core.loading import LoadedModel
from inspector.core.model_folders import model_name
from inspector.core.outputs import model_output, output_change
from kernels.hf import TieKeysToQueries
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
        raise InvalidRequestError(f"{decoder.info.name} is not a causal language model; pick a bundled decoder",
                                  notice=Notice("decoder.error.not_decoder", model=model_name(decoder.info.name)))
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
              "kl_layer": f"{kl[1]:.2e}", "asym_far": _f(ASYMMETRY_FAR)}
    return CausalLesson(encoder=encoder.info.name, decoder=decoder.info.name, encoder_tokens=enc.tokens,
                        decoder_tokens=dec.tokens, encoder_visible=enc_visible, decoder_visible=dec_visible,
                        layer=layer, head=head, asymmetry=asymmetry, tied_asymmetry=tied_asymmetry, kl_head=kl[0],
                        kl_layer=kl[1], answer=Answer("lesson9.answer", values,
                                                      {"symmetry": asymmetry_term(asymmetry[head])}))


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
                                  "shorten the text", notice=Notice("decoder.error.no_room_to_shift", tokens=n,
                                                                    model=model_name(loaded.info.name)))
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
                                  "decoder (SmolLM2 or Gemma 3) for this lesson",
                                  notice=Notice("decoder.error.no_rope", model=model_name(loaded.info.name)))
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
              "p2": str(positions[1]), "span": str(OFFSET_SPAN), "rounding_limit": f"{ROUNDING_SHARE:.0e}"}
    rounding = rounding_term(rope.relative_score_change)
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
                      answer=Answer(key, values, {"rounding": rounding, "conclusion": "lesson10.conclusion.shown"
                                                  if rounding == "lessons.rope.rounding"
                                                  else "lesson10.conclusion.not_shown"}, named=named))


# ------------------------------------------------------------------------------------------- grouped-query


def kv_cache_bytes_per_token(num_layers: int, kv_heads: int, head_dim: int,
                             bytes_per_value: int = KV_BYTES_PER_VALUE) -> int:
    """Bytes one token adds to the KV cache: a key and a value vector of ``head_dim`` per key/value head per
    layer."""
    return 2 * num_layers * kv_heads * head_dim * bytes_per_value


@dataclass(frozen=True)
class KVRow:
    """One model's cache arithmetic from its config shapes; model: a loaded model's name (``ModelInfo.name``) or a
    bundled decoder's spec, which :func:`~inspector.core.model_folders.model_label` words in a page's language."""

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
    for decoder in BUNDLED.values():  # named by spec, as a loaded model is: a page words it in its language
        card = decoder.card
        if all(row.model != card.label and not row.model.endswith(decoder.name) for row in rows):
            rows.append(kv_row(decoder.spec, card.num_layers, card.num_heads, card.num_kv_heads, card.head_dim))
    own = rows[0]
    values = {"model": info.name, "heads": str(heads), "kv_heads": str(info.num_kv_heads), "group": str(group),
              "bytes": f"{own.bytes_per_token:,}", "mha_bytes": f"{own.bytes_one_kv_per_query:,}",
              "saving": _f(own.saving, 1), "layer": str(layer), "shared_js": _f(shared_js, 3),
              "other_js": _f(other_js, 3), "per_value": str(KV_BYTES_PER_VALUE)}
    key = "lesson11.answer" if shared and other else "lesson11.answer.mha" if group == 1 else "lesson11.answer.mqa"
    return GQALesson(model=info.name, layer=layer, kv_head_of=kv_head_of, rows=tuple(rows), js=js,
                     shared_js=shared_js, other_js=other_js, answer=Answer(key, values))


