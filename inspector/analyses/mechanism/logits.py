"""Direct logit attribution and the logit lens: which components write a prediction, and what the residual stream
would predict after each layer.

**Direct logit attribution** (Elhage et al. 2021, "A Mathematical Framework for Transformer Circuits"; TransformerLens
``stack_head_results`` + ``residual_stack_to_logit_diff``). The logit of token t at position p is
``W_U[t] · norm(r_p) (+ b_U[t])`` with ``r_p`` the final residual, a sum of components (embeddings, each head's write,
each attention-output bias, each MLP's write — :mod:`inspector.analyses.mechanism.residual`). With the final norm
frozen at the scale it measured on ``r_p`` (and Gemma's post-attention norms frozen inside the blocks), the logit is
exactly the sum of each component's image plus the norm's and the unembedding's biases. The target is one token's
logit, or the difference to a contrast token (Wang et al. 2022's IOI logit difference), which removes what the two
share. Only the *direct* path counts: a head whose write changes later layers' inputs is credited there, not here —
compare with activation patching (:mod:`inspector.analyses.mechanism.patching`) for the total effect. The result
carries its sum-rule residual (target − Σ parts).

**Logit lens** (nostalgebraist 2020): the final norm and unembedding applied to the residual after each layer; the
last row is the model's own prediction.

**Attention to the answer's token**: the weight each head puts from p on one key (default: the answer token's last
earlier occurrence in the text, else the most attended token between the first and p) — shown beside the
contributions, since the heads that look at a token are not always the heads that write the answer.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from inspector.analyses.attribution.targets import default_token
from inspector.analyses.mechanism.parts import DECODER_NAMES, ModelParts, check_position, freeze_norm, model_parts
from inspector.analyses.mechanism.residual import (
    ATTENTION_BIAS,
    EMBEDDING,
    HEAD,
    MLP,
    POSITION,
    MeasuredRun,
    measure,
    residual_components,
)
from inspector.base.display import Displayable
from inspector.base.errors import InvalidRequestError, UnsupportedModelError
from inspector.base.i18n import Notice
from inspector.core.forward import encode_text
from inspector.core.loading import LoadedModel
from inspector.core.model_folders import model_name
from inspector.core.token_codec import TokenCodec

SUM_RULE_TOLERANCE = 1e-4  # relative to the largest |part|, |target| or 1
LENS_TOP_K = 5


def _check_sum(target: float, parts: np.ndarray, residual: float, what: str) -> None:
    scale = max(1.0, abs(target), float(np.abs(parts).max(initial=0.0)))
    if not abs(residual) <= SUM_RULE_TOLERANCE * scale:
        raise ValueError(f"{what}: the parts miss the target by {residual:.3g} (more than {SUM_RULE_TOLERANCE:g} of "
                         f"{scale:.3g})")


@dataclass(frozen=True)
class LogitLens(Displayable):
    """The prediction read off the residual after the embeddings (row 0) and after each layer (row l + 1).

    top_ids: (layers + 1, k) int64; top_tokens: (layers + 1, k) str; top_probs: (layers + 1, k) float32 (softmax over
    the vocabulary); answer_logit, answer_prob: (layers + 1,) float32; answer_rank: (layers + 1,) int64 (0 = top)."""

    top_ids: np.ndarray
    top_tokens: np.ndarray
    top_probs: np.ndarray
    answer_logit: np.ndarray
    answer_prob: np.ndarray
    answer_rank: np.ndarray

    def __post_init__(self) -> None:
        rows = self.top_ids.shape[0]
        for name in ("top_tokens", "top_probs"):
            if getattr(self, name).shape != self.top_ids.shape:
                raise ValueError(f"{name} has shape {getattr(self, name).shape}, expected {self.top_ids.shape}")
        for name in ("answer_logit", "answer_prob", "answer_rank"):
            if getattr(self, name).shape != (rows,):
                raise ValueError(f"{name} has shape {getattr(self, name).shape}, expected ({rows},)")
        if not np.all((self.top_probs >= 0) & (self.top_probs <= 1 + 1e-5)):
            raise ValueError("top_probs must lie in [0, 1]")


@dataclass(frozen=True)
class DirectLogitAttribution(Displayable):
    """The target logit (or logit difference) at ``position`` split into the direct writes of every component.

    tokens: (n,) the tokenizer's token strings. answer_id/answer_token; contrast_id/contrast_token (None: the target is
    the answer's logit alone). target: the model's own value. heads: (layers, heads) float64; mlps: (layers,);
    attention_biases: (layers,) (0 where the output projection has no bias); embeddings: (e,) named by
    embedding_names ("embedding", "position"); bias: the final norm's and unembedding's biases. residual = target −
    (Σ heads + Σ mlps + Σ attention_biases + Σ embeddings + bias), within :data:`SUM_RULE_TOLERANCE`.
    frozen: the normalisations frozen at their measured scale. key_position: the token whose attention is shown;
    attention_to_key: (layers, heads) float32, the weight each head puts from ``position`` on it. lens: the
    :class:`LogitLens` at ``position``."""

    tokens: tuple[str, ...]
    position: int
    answer_id: int
    answer_token: str
    contrast_id: int | None
    contrast_token: str | None
    target: float
    heads: np.ndarray
    mlps: np.ndarray
    attention_biases: np.ndarray
    embeddings: np.ndarray
    embedding_names: tuple[str, ...]
    bias: float
    residual: float
    frozen: tuple[str, ...]
    key_position: int
    attention_to_key: np.ndarray
    lens: LogitLens

    def __post_init__(self) -> None:
        layers = self.heads.shape[0]
        if self.heads.ndim != 2 or self.attention_to_key.shape != self.heads.shape:
            raise ValueError(f"heads {self.heads.shape} and attention_to_key {self.attention_to_key.shape} must be "
                             "(layers, heads)")
        if self.mlps.shape != (layers,) or self.attention_biases.shape != (layers,):
            raise ValueError("mlps and attention_biases must be (layers,)")
        if self.embeddings.shape != (len(self.embedding_names),):
            raise ValueError("one embedding contribution per embedding name")
        if not (0 <= self.position < len(self.tokens) and 0 <= self.key_position <= self.position):
            raise ValueError("position and key_position must index the text, the key at or before the position")
        if self.lens.top_ids.shape[0] != layers + 1:
            raise ValueError("the logit lens has one row per layer plus the embeddings")
        _check_sum(self.target, self.parts(), self.residual, "direct logit attribution")

    def parts(self) -> np.ndarray:
        """Every contribution in one flat array (heads row-major, then MLPs, attention biases, embeddings, bias)."""
        return np.concatenate([self.heads.ravel(), self.mlps, self.attention_biases, self.embeddings, [self.bias]])

    def top_heads(self, k: int = 10) -> list[tuple[int, int, float]]:
        """The ``k`` heads with the largest |contribution|: (layer, head, contribution)."""
        order = np.argsort(-np.abs(self.heads), axis=None)[:k]
        return [(int(i // self.heads.shape[1]), int(i % self.heads.shape[1]), float(self.heads.flat[i]))
                for i in order]


def token_id(loaded: LoadedModel, token: str, what: str) -> int:
    """The single vocabulary id ``token`` stands for: a vocabulary entry as written (``"ĠRome"``), else the text's
    tokenisation without special tokens, which must be exactly one token. :class:`InvalidRequestError` otherwise."""
    if not isinstance(token, str) or not token:
        raise InvalidRequestError(f"{what} is empty; give one token of the model's vocabulary",
                                  notice=Notice("mech.error.token_empty"))
    direct = loaded.codec.vocabulary_id(token)
    unknown = loaded.codec.special_token_id("unk")
    if isinstance(direct, int) and direct != unknown and 0 <= direct < loaded.info.vocab_size:
        return direct
    ids = loaded.codec.input_ids(token, add_special_tokens=False)
    pieces = loaded.codec.token_strings(ids)
    if len(ids) != 1:
        raise InvalidRequestError(f"{what} {token!r} is {len(ids)} tokens for {loaded.info.name} ({pieces}); a logit "
                                  "belongs to one token — give a single token (often with its leading space)",
                                  notice=Notice("mech.error.not_one_token", token=token, count=len(ids),
                                                model=model_name(loaded.info.name), pieces=" ".join(pieces)))
    return int(ids[0])


def token_strings(codec: TokenCodec, ids: list[int]) -> list[str]:
    """The tokenizer's strings for ``ids``; ``<id>`` for an id the tokenizer has no string for (a model whose
    vocabulary is padded past its tokenizer's)."""
    return [str(t) if t is not None else f"<{i}>" for i, t in zip(ids, codec.token_strings(ids), strict=True)]


def _unembed(parts: ModelParts, residual: torch.Tensor) -> torch.Tensor:
    """(rows, vocab) float32 logits the model's own final norm and unembedding give residual rows (rows, hidden)."""
    with torch.inference_mode():
        normed = parts.final_norm(residual)
        logits = normed @ parts.unembed.T
        return logits + parts.unembed_bias if parts.unembed_bias is not None else logits


def logit_lens(parts: ModelParts, run: MeasuredRun, position: int, answer_id: int, codec: TokenCodec,
               k: int = LENS_TOP_K) -> LogitLens:
    """:class:`LogitLens` at ``position`` (nostalgebraist 2020)."""
    layers = len(run.block_outputs)
    states = torch.stack([run.block_input(layer)[position] for layer in range(layers + 1)])  # (layers + 1, hidden)
    logits = _unembed(parts, states).float()
    probs = torch.softmax(logits, dim=-1)
    top = torch.topk(probs, k, dim=-1)
    answer_logit = logits[:, answer_id]
    rank = (logits > answer_logit[:, None]).sum(dim=-1)
    ids = top.indices.cpu().numpy()
    tokens = np.array([token_strings(codec, row.tolist()) for row in ids], dtype=object)
    return LogitLens(top_ids=ids.astype(np.int64), top_tokens=tokens, top_probs=top.values.cpu().numpy(),
                     answer_logit=answer_logit.cpu().numpy(), answer_prob=probs[:, answer_id].cpu().numpy(),
                     answer_rank=rank.cpu().numpy().astype(np.int64))


def _key_position(run: MeasuredRun, position: int, answer_id: int, weights: np.ndarray) -> int:
    """The answer token's last occurrence before ``position``, else the token between the first and ``position``
    (both left out: the first is the sink, and a position attending to itself names no token the answer reads) with
    the most attention from ``position`` summed over every head (``weights`` (layers, heads, n)); the position
    itself when nothing lies between."""
    earlier = np.flatnonzero(run.ids[:position].cpu().numpy() == answer_id)
    if earlier.size:
        return int(earlier[-1])
    if position < 2:
        return position
    return int(np.argmax(weights.sum(axis=(0, 1))[1:position]) + 1)


def direct_logit_attribution(loaded: LoadedModel, text: str, *, answer: str | None = None,
                             contrast: str | None = None, position: int = -1, key_position: int | None = None,
                             deadline_s: float | None = None) -> DirectLogitAttribution:
    """Direct logit attribution of the logit of ``answer`` (default: the model's top prediction that is a word —
    :func:`~inspector.analyses.attribution.targets.default_token`, not Gemma's "↵↵" after a sentence) at ``position``
    (default the last token), minus ``contrast``'s when given, with the logit lens and each head's attention to
    ``key_position`` (see the module docstring). Raises :class:`UnsupportedModelError` for encoders and unsupported
    architectures, :class:`InvalidRequestError` for an answer of several tokens or a position outside the text."""
    parts = model_parts(loaded)
    if getattr(loaded.model.config, "final_logit_softcapping", None):
        raise UnsupportedModelError(f"{loaded.info.name} soft-caps its logits, which no linear decomposition can "
                                    "split; pick " + DECODER_NAMES)
    encoded = encode_text(loaded, text)
    n = len(encoded.tokens)
    position = check_position(position, n, "the position")
    run = measure(loaded, parts, encoded.inputs, weights_layers="all", deadline_s=deadline_s)
    final = run.block_input(len(run.block_outputs))[position]  # (hidden,)
    logits = _unembed(parts, final[None])[0]
    answer_id = default_token(loaded, logits) if answer is None else token_id(loaded, answer, "the answer")
    contrast_id = None if contrast is None else token_id(loaded, contrast, "the contrast")
    direction = parts.unembed[answer_id].double()
    target = float(logits[answer_id])
    bias_value = float(parts.unembed_bias[answer_id]) if parts.unembed_bias is not None else 0.0
    if contrast_id is not None:
        direction = direction - parts.unembed[contrast_id].double()
        target -= float(logits[contrast_id])
        if parts.unembed_bias is not None:
            bias_value -= float(parts.unembed_bias[contrast_id])
    components, vectors = residual_components(parts, run, torch.tensor([position], device=final.device),
                                              len(run.block_outputs))
    frozen = freeze_norm(parts.final_norm, final[None], "the final norm")
    values = (frozen.linear(vectors[:, 0]) @ direction).cpu().numpy()  # (C,)
    if frozen.bias is not None:
        bias_value += float(frozen.bias @ direction)
    info = loaded.info
    heads = np.zeros((info.num_layers, info.num_heads))
    mlps, attention_biases = np.zeros(info.num_layers), np.zeros(info.num_layers)
    embedding_names, embeddings = [], []
    for component, value in zip(components, values, strict=True):
        if component.kind == HEAD:
            heads[component.layer, component.head] = value
        elif component.kind == MLP:
            mlps[component.layer] = value
        elif component.kind == ATTENTION_BIAS:
            attention_biases[component.layer] = value
        elif component.kind in (EMBEDDING, POSITION):
            embedding_names.append(component.kind)
            embeddings.append(value)
    weights = np.stack([r.weights[0, :, position].float().cpu().numpy() for r in run.records])  # (layers, heads, n)
    key = _key_position(run, position, answer_id, weights) if key_position is None else \
        check_position(key_position, position + 1, "the key position")
    total = float(values.sum() + bias_value)
    codec = loaded.codec
    return DirectLogitAttribution(
        tokens=encoded.tokens, position=position, answer_id=answer_id,
        answer_token=token_strings(codec, [answer_id])[0], contrast_id=contrast_id,
        contrast_token=None if contrast_id is None else token_strings(codec, [contrast_id])[0],
        target=target, heads=heads, mlps=mlps, attention_biases=attention_biases, embeddings=np.array(embeddings),
        embedding_names=tuple(embedding_names), bias=bias_value, residual=target - total,
        frozen=frozen_norm_names(parts), key_position=key, attention_to_key=weights[:, :, key].astype(np.float32),
        lens=logit_lens(parts, run, position, answer_id, codec))


def frozen_norm_names(parts: ModelParts) -> tuple[str, ...]:
    """The normalisations a direct logit attribution freezes: the final norm and, for Gemma, every layer's
    post-attention norm (and post-feed-forward norm, folded into the MLP's measured write)."""
    names = ["final norm"]
    if parts.family == "gemma3":
        names.append("post-attention norms")
    return tuple(names)
