"""Run one text through a loaded model with the inspector's attention function and keep what it measured.

:func:`capture` tokenises, validates length and ids *before* any forward, runs the model through the one
forward path (:func:`inspector.core.forward.forward`, inside an :class:`kernels.hf.AttentionRequest`), and returns a
:class:`Capture`: a frozen dataclass of NumPy arrays that is safe to cache, pickle and hand to any thread. The
shared model is never modified; two threads may capture different texts on one model at once.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Literal

import numpy as np
import torch

from inspector.base.display import Displayable
from inspector.base.errors import DeviceOutOfMemoryError, InvalidRequestError
from inspector.base.i18n import Notice
from inspector.core.forward import EncodedText, check_every_layer_ran, encode_text, forward, token_word_ids
from inspector.core.loading import LoadedModel, ModelInfo
from inspector.core.model_folders import model_name
from inspector.core.outputs import takes_logits_to_keep

WeightsChoice = Literal["all"] | Iterable[int] | None

TOP_PREDICTIONS = 5


@dataclass(frozen=True)
class OutputSummary:
    """What the model produced, in its own terms.

    kind: ``"embedding"`` (no head), ``"masked-lm"``, ``"causal-lm"`` or ``"classifier"``.
    embedding: (hidden,) float32 — the last hidden state mean-pooled over the tokens (every model has one).
    predictions: up to five (token or label, probability) pairs — at ``position`` for language models
    (the first [MASK], or the last token for next-token prediction), over the labels for classifiers.
    """

    kind: str
    embedding: np.ndarray
    predictions: tuple[tuple[str, float], ...] = ()
    position: int | None = None


@dataclass(frozen=True)
class Capture(Displayable):
    """One forward's attention measurements for a single text.

    tokens: the tokenizer's own token strings, special tokens included (q_len of them).
    token_ids: (q_len,) int64. offsets: (q_len, 2) int32 character spans in ``text`` ((0, 0) for specials).
    special: (q_len,) bool — True for special tokens ([CLS], [SEP], <s> …).
    word_ids: (q_len,) int32 — the tokenizer's word index of each token (pieces of one word share it), −1 for
    special tokens. Tokenizers that do not report words make each non-special token its own word. Left out
    (None) at construction, it is filled in that way — captures built before the field existed still work.
    entropy: (layers, heads, q_len) float32, nats — entropy of each query's attention row.
    lse: (layers, heads, q_len) float32 — log-sum-exp of each row's scaled scores.
    sink_mass: (layers, heads, q_len) float32 — weight each query puts on the first token.
    visible_keys: (layers, q_len) int32 — how many keys each query could attend to (causal rows see fewer).
    windows: per layer, the sliding window or None.
    weights: {layer: (heads, q_len, q_len) float32} — exact attention weights for the layers asked for.
    timings: seconds per stage (tokenize, forward, collect).
    notices: what the person should know about how this capture was made (e.g. retried with fewer weights or
    on the CPU after the device ran out of memory — :func:`capture_within_memory`); empty when nothing happened.
    Strings — :class:`Notice` where the library wrote them, so a page can show them in its language.
    """

    model_name: str
    text: str
    tokens: tuple[str, ...]
    token_ids: np.ndarray
    offsets: np.ndarray
    special: np.ndarray
    entropy: np.ndarray
    lse: np.ndarray
    sink_mass: np.ndarray
    visible_keys: np.ndarray
    causal: bool
    windows: tuple[int | None, ...]
    weights: dict[int, np.ndarray]
    output: OutputSummary
    backend: str
    truncated: bool = False
    timings: dict[str, float] = field(default_factory=dict)
    # Last and optional so that code building a Capture by keyword without it keeps working.
    word_ids: np.ndarray | None = None
    notices: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.notices, tuple) or not all(isinstance(n, str) for n in self.notices):
            raise ValueError(f"Capture.notices must be a tuple of strings; got {self.notices!r}")
        q_len = len(self.tokens)
        if self.word_ids is None:
            # frozen: __post_init__ is the one place a derived default may be set.
            object.__setattr__(self, "word_ids", token_word_ids(None, self.special))
        layers, heads = self.entropy.shape[:2]
        expected = {"token_ids": (self.token_ids, (q_len,)), "offsets": (self.offsets, (q_len, 2)),
                    "special": (self.special, (q_len,)), "entropy": (self.entropy, (layers, heads, q_len)),
                    "lse": (self.lse, (layers, heads, q_len)), "sink_mass": (self.sink_mass, (layers, heads, q_len)),
                    "visible_keys": (self.visible_keys, (layers, q_len)), "word_ids": (self.word_ids, (q_len,))}
        for name, (array, shape) in expected.items():
            if array.shape != shape:
                raise ValueError(f"Capture.{name} has shape {array.shape}, expected {shape}")
        words = self.word_ids.tolist()  # checked as lists: after a forward each NumPy call costs tens of µs
        if q_len and (min(words) < -1 or any(w != -1 for w, flag in zip(words, self.special.tolist()) if flag)):
            raise ValueError("Capture.word_ids must be −1 for special tokens and ≥ −1 elsewhere")
        if len(self.windows) != layers:
            raise ValueError(f"Capture.windows has {len(self.windows)} entries for {layers} layers")
        for layer, w in self.weights.items():
            if not 0 <= layer < layers or w.shape != (heads, q_len, q_len):
                raise ValueError(f"Capture.weights[{layer}] has shape {w.shape}, expected {(heads, q_len, q_len)}")

    @property
    def num_layers(self) -> int:
        return self.entropy.shape[0]

    @property
    def num_heads(self) -> int:
        return self.entropy.shape[1]


def _weights_layers(choice: WeightsChoice, info: ModelInfo) -> frozenset[int] | Literal["all"] | None:
    if choice is None:
        return None
    if isinstance(choice, str):
        if choice != "all":
            raise InvalidRequestError(f"weights must be 'all', a list of layer indices or None; got {choice!r}")
        return "all"
    return frozenset(info.check_layer(layer) for layer in sorted(int(x) for x in choice))


def _host(tensor: torch.Tensor, dtype: torch.dtype | None = None) -> np.ndarray:
    """``tensor`` (in ``dtype`` where given) as a NumPy array on the host, sharing its memory where it already is one:
    after a forward has flushed the caches each ``.float()`` or ``.cpu()`` that changes nothing still costs a dispatch
    of several µs, and a capture makes a dozen."""
    if dtype is not None and tensor.dtype != dtype:
        tensor = tensor.to(dtype)
    return (tensor if tensor.is_cpu else tensor.cpu()).numpy()


def _summarise_output(loaded: LoadedModel, outputs, input_ids: torch.Tensor) -> OutputSummary:
    last = getattr(outputs, "last_hidden_state", None)  # a base model's; a model with a head keeps every layer's
    hidden = _host((last if last is not None else outputs.hidden_states[-1])[0], torch.float32)  # (q_len, hidden)
    # NumPy's column sum on this thread, what np.mean computes without its Python wrapper (the same float32 values):
    # torch's column mean wakes the intra-op threads for a few thousand additions (≈ 85 µs of a 14 ms MiniLM capture
    # on 2 threads, against ≈ 8 µs).
    embedding = np.add.reduce(hidden, axis=0) / np.float32(hidden.shape[0])
    head = loaded.info.head
    if head in ("masked-lm", "causal-lm"):
        ids = input_ids[0].tolist()
        mask_id = loaded.codec.special_token_id("mask")
        if head == "causal-lm":
            position = len(ids) - 1
        elif mask_id is not None and mask_id in ids:
            position = ids.index(mask_id)
        else:
            return OutputSummary(kind=head, embedding=embedding)
        # A causal LM's head ran at the last position only where it could (capture's logits_to_keep): its last row.
        probs = torch.softmax(outputs.logits[0, -1 if head == "causal-lm" else position].float(), dim=-1)
        top = torch.topk(probs, k=min(TOP_PREDICTIONS, probs.numel()))
        tokens = loaded.codec.token_strings(top.indices.tolist())
        return OutputSummary(kind=head, embedding=embedding, position=position,
                             predictions=tuple((str(t), float(p)) for t, p in zip(tokens, top.values.tolist())))
    if head == "classifier":
        probs = torch.softmax(outputs.logits[0].float(), dim=-1).tolist()
        ranked = sorted(zip(loaded.info.labels, probs), key=lambda pair: -pair[1])[:TOP_PREDICTIONS]
        return OutputSummary(kind=head, embedding=embedding,
                             predictions=tuple((label, float(p)) for label, p in ranked))
    return OutputSummary(kind="embedding", embedding=embedding)


def capture(
    loaded: LoadedModel,
    text: str,
    *,
    backend: str = "auto",
    weights: WeightsChoice = "all",
    truncate: bool = False,
    deadline_s: float | None = None,
    encoded: EncodedText | None = None,
) -> Capture:
    """Run ``text`` through ``loaded`` and return every layer's entropy, log-sum-exp and sink mass, plus exact
    weights for the layers in ``weights`` (``"all"``, an iterable of layer indices, or None).

    ``encoded``: ``text`` already tokenised by :func:`inspector.core.forward.encode_text` (a run's plan did it;
    issue 39: a run tokenises its text once) — its inputs are moved to ``loaded``'s device, so a CPU retry can reuse
    it; None: tokenised here.

    ``deadline_s``: seconds the forward may take (:func:`inspector.core.forward.forward`'s; a run's own deadline,
    :func:`inspector.core.deadline.job_deadline`, binds too); checked as each attention layer starts, past it the
    forward stops with :class:`DeadlineExceededError` (None = none of its own)."""
    info = loaded.info
    timings: dict[str, float] = {}
    started = time.perf_counter()
    if encoded is None:
        encoded = encode_text(loaded, text, truncate=truncate)
    else:
        encoded = replace(encoded, inputs={name: value.to(loaded.device) for name, value in encoded.inputs.items()})
    layers_wanted = _weights_layers(weights, info)
    # The text's own arrays now, beside the tokenizer's, while NumPy is warm: after the forward has flushed the
    # caches each NumPy call costs tens of µs.
    input_ids = encoded.inputs["input_ids"]
    q_len = input_ids.shape[1]
    spans = encoded.encoding.get("offset_mapping")  # (1, q_len, 2), fast tokenizers only
    token_ids = _host(input_ids[0]).astype(np.int64)
    offsets = spans[0].numpy().astype(np.int32) if spans is not None else np.zeros((q_len, 2), np.int32)
    word_ids = token_word_ids(encoded.encoding, encoded.special)
    timings["tokenize"] = time.perf_counter() - started

    started = time.perf_counter()
    # A causal LM's prediction is read at the last token only: its head runs there alone (on Gemma 3 the 262k-word
    # head costs more than the body for every position it runs at).
    last_only = 1 if info.head == "causal-lm" and takes_logits_to_keep(loaded) else None
    # A base model (no head) returns its last hidden state, all the summary reads: the other layers' are not kept.
    result = forward(loaded, encoded.inputs, backend=backend, stats=("entropy", "lse", "sink"),
                     weights_layers=layers_wanted, deadline_s=deadline_s, logits_to_keep=last_only,
                     hidden_states=info.head != "none")
    timings["forward"] = time.perf_counter() - started

    started = time.perf_counter()
    records = result.records
    check_every_layer_ran(loaded, records)

    # Every layer's three statistics in one stack, one array on the CPU: entropy, lse and sink mass are its thirds.
    stats = torch.stack([r.stats[name][0] for name in ("entropy", "lse", "sink") for r in records])
    entropy, lse, sink = _host(stats, torch.float32).reshape(3, len(records), *stats.shape[1:])
    summary = Capture(
        model_name=info.name,
        text=text,
        tokens=encoded.tokens,
        token_ids=token_ids,
        offsets=offsets,
        special=encoded.special,
        word_ids=word_ids,
        entropy=entropy,
        lse=lse,
        sink_mass=sink,
        visible_keys=_host(torch.stack([r.visible_keys[0] for r in records])).astype(np.int32),
        causal=any(r.causal for r in records),
        windows=tuple(r.window for r in records),
        weights={r.layer: _host(r.weights[0], torch.float32) for r in records if r.weights is not None},
        output=_summarise_output(loaded, result.outputs, input_ids),
        backend=result.backend,
        truncated=encoded.truncated,
        timings=timings,
    )
    timings["collect"] = time.perf_counter() - started
    return summary


def is_out_of_memory(err: BaseException) -> bool:
    """Whether ``err`` is an allocation failure: ``torch.OutOfMemoryError`` (CUDA and other accelerators) or the
    CPU allocator's RuntimeError, which PyTorch does not give its own type."""
    return isinstance(err, torch.OutOfMemoryError) or (
        isinstance(err, RuntimeError) and "DefaultCPUAllocator: can't allocate memory" in str(err))


def release_memory(device: torch.device | None) -> None:
    """Give back what a failed forward allocated, so the next request starts from the same free memory (``device``
    None: whichever devices are in use)."""
    gc.collect()
    if (device is None and torch.cuda.is_available() and torch.cuda.is_initialized()) or (
            device is not None and device.type == "cuda"):
        torch.cuda.empty_cache()


def capture_within_memory(
    loaded: LoadedModel,
    text: str,
    *,
    backend: str = "auto",
    weights: WeightsChoice = "all",
    keep_layer: int = 0,
    cpu_model: Callable[[], LoadedModel] | None = None,
    encoded: EncodedText | None = None,
) -> Capture:
    """:func:`capture`, retried when the device runs out of memory: first with only ``keep_layer``'s weights
    (when more were asked for), then — if ``cpu_model`` is given (a loader of the same model on the CPU, called
    only if needed) — on the CPU. The capture's ``notices`` say which retry produced it. Memory is released after
    each failure, so the next request starts clean; when every try fails, :class:`DeviceOutOfMemoryError`.
    ``encoded``: the text's encoding from a run's plan (:func:`capture`), reused by every try."""
    device = loaded.device
    where = "GPU" if device.type == "cuda" else device.type.upper()
    attempts: list[tuple[Callable[[], LoadedModel], str, WeightsChoice, str | None]] = [
        (lambda: loaded, backend, weights, None)]
    if weights is not None and _weights_layers(weights, loaded.info) != frozenset({int(keep_layer)}):
        attempts.append((lambda: loaded, backend, (int(keep_layer),),
                         Notice("notice.oom_fewer_weights", where=where, layer=int(keep_layer))))
    if cpu_model is not None:
        attempts.append((cpu_model, "auto", None if weights is None else (int(keep_layer),),
                         Notice("notice.oom_cpu", where=where)))
    failures: list[str] = []
    for model_for, attempt_backend, attempt_weights, notice in attempts:
        try:
            result = capture(model_for(), text, backend=attempt_backend, weights=attempt_weights,
                             encoded=encoded)
        except RuntimeError as err:  # torch.OutOfMemoryError is a RuntimeError
            if not is_out_of_memory(err):
                raise
            failures.append(str(err).splitlines()[0][:200] if str(err) else type(err).__name__)
        else:
            return replace(result, notices=result.notices + ((notice,) if notice else ()))
        # Outside the except block: the exception (and the tensors its traceback holds) is gone by now.
        release_memory(device)
    raise DeviceOutOfMemoryError(
        f"{loaded.info.name} ran out of memory {len(failures)} times ({failures[-1]}), even with one layer's weights"
        + ("" if cpu_model is None else " and on the CPU")
        + "; the server is short of memory — try a shorter text or a smaller model, or try again later",
        notice=Notice("error.capture_out_of_memory", model=model_name(loaded.info.name)))
