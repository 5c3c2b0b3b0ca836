"""Run one text through a loaded model with the inspector's attention function and keep what it measured.

:func:`capture` tokenises, validates length and ids *before* any forward, runs the model inside an
:func:`kernels.hf.attention_request`, and returns a :class:`Capture`: a frozen dataclass of NumPy arrays
that is safe to cache, pickle and hand to any thread. The shared model is never modified; two threads may
capture different texts on one model at once.
"""

from __future__ import annotations

import gc
import time
from dataclasses import dataclass, field, replace
from typing import Callable, Iterable, Literal

import numpy as np
import torch

from inspector.errors import (BackendError, DeadlineExceededError, DeviceOutOfMemoryError, InspectorError,
                              InvalidRequestError, InvalidTextError, UnsupportedModelError)
from inspector.loading import LoadedModel
from kernels.hf import (AttentionContractError, AttentionRequest, BackendUnavailableError, DeadlinePassed,
                        attention_request, resolve_backend)

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
class Capture:
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
        if q_len and (int(self.word_ids.min()) < -1 or (self.word_ids[self.special] != -1).any()):
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


def _weights_layers(choice: WeightsChoice, num_layers: int) -> frozenset[int] | Literal["all"] | None:
    if choice is None:
        return None
    if isinstance(choice, str):
        if choice != "all":
            raise InvalidRequestError(f"weights must be 'all', a list of layer indices or None; got {choice!r}")
        return "all"
    layers = frozenset(int(x) for x in choice)
    bad = sorted(x for x in layers if not 0 <= x < num_layers)
    if bad:
        raise InvalidRequestError(f"layer {bad[0]} does not exist: the model has {num_layers} layers "
                                  f"(0–{num_layers - 1})")
    return layers


def token_word_ids(encoding, special: np.ndarray) -> np.ndarray:
    """(q_len,) int32 word index per token from a fast tokenizer's ``BatchEncoding`` (``word_ids()``), −1 for
    special tokens. Without word information (slow tokenizers, ``encoding=None``) every non-special token is
    its own word, numbered in order."""
    special = np.asarray(special, dtype=bool)
    words = None
    if encoding is not None and getattr(encoding, "is_fast", False):
        try:
            words = encoding.word_ids(0)
        except (ValueError, IndexError):  # no word information for this encoding
            words = None
    if words is None or len(words) != len(special):
        result = np.cumsum(~special, dtype=np.int64) - 1
    else:
        result = np.array([-1 if w is None else w for w in words], dtype=np.int64)
    return np.where(special, -1, result).astype(np.int32)


def tokenize(loaded: LoadedModel, text: str, *, truncate: bool = False) -> tuple[dict, bool]:
    """Tokenise and validate before any forward: non-empty, within the model's length, ids in vocabulary.

    Returns the tokenizer's encoding (batch of one, PyTorch tensors) and whether it was truncated.
    """
    encoding, truncated = _encode(loaded, text, truncate=truncate)
    return dict(encoding), truncated


def _encode(loaded: LoadedModel, text: str, *, truncate: bool):
    """:func:`tokenize`, keeping the tokenizer's ``BatchEncoding`` (it knows which word each token is from)."""
    if not isinstance(text, str) or not text.strip():
        raise InvalidTextError("the text is empty; type or paste a sentence to inspect")
    tokenizer, limit = loaded.tokenizer, loaded.info.max_positions
    options = dict(return_tensors="pt", return_special_tokens_mask=True,
                   return_offsets_mapping=bool(getattr(tokenizer, "is_fast", False)))
    with loaded.tokenizer_lock:
        encoding = tokenizer(text, truncation=False, verbose=False, **options)
        full_length = encoding["input_ids"].shape[1]
        if full_length > limit:
            if not truncate:
                raise InvalidTextError(f"the text has {full_length} tokens; {loaded.info.name} reads at most "
                                       f"{limit} — shorten it or pick a long-context model")
            encoding = tokenizer(text, truncation=True, max_length=limit, **options)
    ids = encoding["input_ids"]
    if ids.shape[1] == 0:
        raise InvalidTextError("the text produced no tokens for this model's tokenizer")
    if bool(encoding["special_tokens_mask"].all()):
        # e.g. only zero-width or control characters: the model would see [CLS] [SEP] and nothing of the text.
        raise InvalidTextError("the text has nothing this model's tokenizer reads — only invisible characters (zero-"
                               "width spaces, direction marks, …) or special tokens; type or paste visible text")
    if int(ids.min()) < 0 or int(ids.max()) >= loaded.info.vocab_size:
        raise InvalidTextError(f"the tokenizer produced id {int(ids.max())}, outside the model's vocabulary of "
                               f"{loaded.info.vocab_size}; the tokenizer does not belong to this model")
    return encoding, full_length > limit


def _summarise_output(loaded: LoadedModel, outputs, input_ids: torch.Tensor) -> OutputSummary:
    hidden = outputs.hidden_states[-1][0].float()  # (q_len, hidden)
    embedding = hidden.mean(dim=0).cpu().numpy().astype(np.float32)
    head, tokenizer = loaded.info.head, loaded.tokenizer
    if head in ("masked-lm", "causal-lm"):
        ids = input_ids[0].tolist()
        mask_id = getattr(tokenizer, "mask_token_id", None)
        if head == "causal-lm":
            position = len(ids) - 1
        elif mask_id is not None and mask_id in ids:
            position = ids.index(mask_id)
        else:
            return OutputSummary(kind=head, embedding=embedding)
        probs = torch.softmax(outputs.logits[0, position].float(), dim=-1)
        top = torch.topk(probs, k=min(TOP_PREDICTIONS, probs.numel()))
        tokens = tokenizer.convert_ids_to_tokens(top.indices.tolist())
        return OutputSummary(kind=head, embedding=embedding, position=position,
                             predictions=tuple((str(t), float(p)) for t, p in zip(tokens, top.values.tolist())))
    if head == "classifier":
        probs = torch.softmax(outputs.logits[0].float(), dim=-1).tolist()
        ranked = sorted(zip(loaded.info.labels, probs), key=lambda pair: -pair[1])[:TOP_PREDICTIONS]
        return OutputSummary(kind=head, embedding=embedding, predictions=tuple((l, float(p)) for l, p in ranked))
    return OutputSummary(kind="embedding", embedding=embedding)


def capture(
    loaded: LoadedModel,
    text: str,
    *,
    backend: str = "auto",
    weights: WeightsChoice = "all",
    truncate: bool = False,
    deadline_s: float | None = None,
) -> Capture:
    """Run ``text`` through ``loaded`` and return every layer's entropy, log-sum-exp and sink mass, plus exact
    weights for the layers in ``weights`` (``"all"``, an iterable of layer indices, or None).

    ``deadline_s``: seconds the forward may take; it is checked as each attention layer starts, and past it the
    forward stops with :class:`DeadlineExceededError` (None = no deadline)."""
    info = loaded.info
    timings: dict[str, float] = {}
    started = time.perf_counter()
    encoding, truncated = _encode(loaded, text, truncate=truncate)
    layers_wanted = _weights_layers(weights, info.num_layers)
    device = next(loaded.model.parameters()).device
    try:
        chosen = resolve_backend(backend, device)
    except BackendUnavailableError as err:
        raise BackendError(str(err)) from err
    timings["tokenize"] = time.perf_counter() - started

    started = time.perf_counter()
    deadline = None if deadline_s is None else time.monotonic() + deadline_s
    request = AttentionRequest(backend=chosen, stats=("entropy", "lse", "sink"), weights_layers=layers_wanted,
                               deadline=deadline)
    input_ids = encoding["input_ids"].to(device)
    try:
        with torch.inference_mode(), attention_request(request):
            outputs = loaded.model(input_ids=input_ids, attention_mask=encoding["attention_mask"].to(device),
                                   output_hidden_states=True)
    except DeadlinePassed as err:
        raise DeadlineExceededError(f"{info.name} did not finish {input_ids.shape[1]} tokens within the "
                                    f"{deadline_s:g} s this server allows one run ({err}); the server may be busy "
                                    "or the text long — try again, shorten the text, or pick a smaller model") from err
    except AttentionContractError as err:
        raise UnsupportedModelError(f"{info.name}: {err}") from err
    except BackendUnavailableError as err:
        raise BackendError(str(err)) from err
    timings["forward"] = time.perf_counter() - started

    started = time.perf_counter()
    records = request.records
    if len(records) != info.num_layers:
        raise InspectorError(f"{info.name} ran {len(records)} attention layers but declares {info.num_layers}; "
                             "its attention does not all go through the inspector's attention function")

    def stack(name: str) -> np.ndarray:
        return torch.stack([r.stats[name][0] for r in records]).float().cpu().numpy()

    offsets = encoding.get("offset_mapping")
    q_len = input_ids.shape[1]
    special = encoding["special_tokens_mask"][0].numpy().astype(bool)
    result = Capture(
        model_name=info.name,
        text=text,
        tokens=tuple(str(t) for t in loaded.tokenizer.convert_ids_to_tokens(input_ids[0].tolist())),
        token_ids=input_ids[0].cpu().numpy().astype(np.int64),
        offsets=(offsets[0].numpy().astype(np.int32) if offsets is not None else np.zeros((q_len, 2), np.int32)),
        special=special,
        word_ids=token_word_ids(encoding, special),
        entropy=stack("entropy"),
        lse=stack("lse"),
        sink_mass=stack("sink"),
        visible_keys=torch.stack([r.visible_keys[0] for r in records]).cpu().numpy().astype(np.int32),
        causal=any(r.causal for r in records),
        windows=tuple(r.window for r in records),
        weights={r.layer: r.weights[0].float().cpu().numpy() for r in records if r.weights is not None},
        output=_summarise_output(loaded, outputs, input_ids),
        backend=chosen,
        truncated=truncated,
        timings=timings,
    )
    timings["collect"] = time.perf_counter() - started
    return result


def is_out_of_memory(err: BaseException) -> bool:
    """Whether ``err`` is an allocation failure: ``torch.OutOfMemoryError`` (CUDA and other accelerators) or the
    CPU allocator's RuntimeError, which PyTorch does not give its own type."""
    return isinstance(err, torch.OutOfMemoryError) or (
        isinstance(err, RuntimeError) and "DefaultCPUAllocator: can't allocate memory" in str(err))


def _release_memory(device: torch.device) -> None:
    """Give back what a failed forward allocated, so the next request starts from the same free memory."""
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()


def capture_within_memory(
    loaded: LoadedModel,
    text: str,
    *,
    backend: str = "auto",
    weights: WeightsChoice = "all",
    keep_layer: int = 0,
    cpu_model: Callable[[], LoadedModel] | None = None,
    deadline_s: float | None = None,
) -> Capture:
    """:func:`capture`, retried when the device runs out of memory: first with only ``keep_layer``'s weights
    (when more were asked for), then — if ``cpu_model`` is given (a loader of the same model on the CPU, called
    only if needed) — on the CPU. The capture's ``notices`` say which retry produced it. Memory is released after
    each failure, so the next request starts clean; when every try fails, :class:`DeviceOutOfMemoryError`."""
    device = next(loaded.model.parameters()).device
    where = "GPU" if device.type == "cuda" else device.type.upper()
    attempts: list[tuple[Callable[[], LoadedModel], str, WeightsChoice, str | None]] = [
        (lambda: loaded, backend, weights, None)]
    if weights is not None and _weights_layers(weights, loaded.info.num_layers) != frozenset({int(keep_layer)}):
        attempts.append((lambda: loaded, backend, (int(keep_layer),),
                         f"The {where} ran out of memory keeping several layers' attention weights; "
                         f"this run kept layer {keep_layer}'s only, so another layer needs a new run."))
    if cpu_model is not None:
        attempts.append((cpu_model, "auto", None if weights is None else (int(keep_layer),),
                         f"The {where} ran out of memory; this view was computed on the CPU "
                         f"instead (slower). The next run tries the {where} again."))
    failures: list[str] = []
    for model_for, attempt_backend, attempt_weights, notice in attempts:
        try:
            result = capture(model_for(), text, backend=attempt_backend, weights=attempt_weights,
                             deadline_s=deadline_s)
        except RuntimeError as err:  # torch.OutOfMemoryError is a RuntimeError
            if not is_out_of_memory(err):
                raise
            failures.append(str(err).splitlines()[0][:200] if str(err) else type(err).__name__)
        else:
            return replace(result, notices=result.notices + ((notice,) if notice else ()))
        # Outside the except block: the exception (and the tensors its traceback holds) is gone by now.
        _release_memory(device)
    raise DeviceOutOfMemoryError(
        f"{loaded.info.name} ran out of memory {len(failures)} times ({failures[-1]}), even with one layer's weights"
        + ("" if cpu_model is None else " and on the CPU")
        + "; the server is short of memory — try a shorter text or a smaller model, or try again later")
