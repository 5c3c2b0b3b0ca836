"""The one forward path: a text checked and tokenised before any model call, then one model call through the
inspector's attention function (:mod:`kernels.hf`), with every error the attention function can raise turned
into the library's typed errors here and nowhere else.

:func:`encode_text` — the one way to tokenise a text — validates it (non-empty, within the model's length, ids in
its vocabulary) and puts the inputs on the model's device; :func:`forward` resolves the backend, enters an
:class:`kernels.hf.AttentionRequest` (what to measure, keep and change, and the deadline), runs the model under
``inference_mode`` — or ``enable_grad`` when gradients are wanted — and translates:

- :class:`kernels.hf.AttentionContractError` (the model asks for something the attention function cannot
  honour exactly: soft-capping, dropout, packed sequences …) → :class:`UnsupportedModelError`;
- :class:`kernels.hf.BackendUnavailableError` (Triton where it cannot run, an unknown backend) → :class:`BackendError`;
- :class:`kernels.hf.DeadlinePassed` (a layer started after the deadline) → :class:`DeadlineExceededError`;
- :class:`kernels.hf.InterventionError` (an intervention names a head the layer lacks …) → :class:`InvalidRequestError`.

:mod:`inspector.core.capture` (one text's measurements) and every analysis (Heads, Attribution, Lessons, Ground
truth, Compare, the census) tokenise and run the model through here, importing from this module. Nothing is
attached to the shared model: every per-call choice travels in the request, a context variable.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import torch

from inspector.base.errors import (
    BackendError,
    CorruptModelError,
    InvalidRequestError,
    InvalidTextError,
    UnsupportedModelError,
)
from inspector.base.i18n import Notice
from inspector.core.deadline import admit_job, current_deadline, job_deadline
from inspector.core.loading import LoadedModel
from inspector.core.model_folders import model_name
from inspector.core.token_codec import TokenCodec
from kernels.hf import (
    AttentionContractError,
    AttentionDone,
    AttentionRequest,
    BackendUnavailableError,
    DeadlinePassed,
    Intervention,
    InterventionError,
    LayerRecord,
    ResumeAt,
    TensorName,
    attention_request,
    resolve_backend,
)
from kernels.reference import StatName

LayerChoice = frozenset[int] | Literal["all"] | None


# ------------------------------------------------------------------------------------------------ tokenising


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
        return np.where(special, -1, np.cumsum(~special, dtype=np.int64) - 1).astype(np.int32)
    # One array from Python lists: right after a forward each further NumPy call costs tens of µs (cold caches).
    return np.array([-1 if flag or w is None else w for w, flag in zip(words, special.tolist())], dtype=np.int32)


def reads_special_tokens_as_text(codec: TokenCodec, text: str) -> bool:
    """Whether ``text`` is tokenised with its special-token strings read as plain text (issue 33, item 12): a
    "[SEP]" or "<s>" typed in a text is characters the person typed, not a separator the model must obey — except
    a masked LM's mask token, which is how a text asks the model to fill a blank (the Attribution page's
    target): a text holding the mask token's string keeps every special token as the tokenizer parses it."""
    mask = codec.special_token("mask")
    return not (isinstance(mask, str) and mask and mask in text)


def _batch_of_one(encoding):
    """``encoding`` (one text's lists from the tokenizer, a ``BatchEncoding``) as the tokenizer's
    ``return_tensors="pt"`` call gives it: each field made an int64 tensor with a batch dimension of one, in place; the
    fast tokenizer's encodings (``word_ids()``) kept."""
    for name, value in list(encoding.items()):
        encoding[name] = torch.from_numpy(np.asarray(value, dtype=np.int64)[None])
    return encoding


def _validated_encoding(loaded: LoadedModel, text: str, *, truncate: bool, add_special_tokens: bool = True):
    """The tokenizer's ``BatchEncoding`` of ``text`` (one text's lists, as the tokenizer returns them) and whether it
    was truncated, after the checks :func:`encode_text` states — made on the lists: right after a forward each NumPy
    or torch call costs tens of µs (cold caches), and Inspect tokenises right after the previous forward."""
    if not isinstance(text, str) or not text.strip():
        raise InvalidTextError("the text is empty; type or paste a sentence to inspect",
                               notice=Notice("error.text_empty"))
    limit = loaded.info.max_positions
    # A text that already carries its special tokens (a chat template's output) is parsed as such.
    split = add_special_tokens and reads_special_tokens_as_text(loaded.codec, text)
    encoding = loaded.codec.encode_for_model(text, add_special_tokens=add_special_tokens, split_special_tokens=split)
    full_length = len(encoding["input_ids"])
    if full_length > limit:
        if not truncate:
            raise InvalidTextError(f"the text has {full_length} tokens; {loaded.info.name} reads at most "
                                   f"{limit} — shorten it or pick a long-context model",
                                   notice=Notice("error.text_too_long", tokens=f"{full_length:,}",
                                                 model=model_name(loaded.info.name), limit=f"{limit:,}"))
        encoding = loaded.codec.encode(text, truncation=True, max_length=limit, return_special_tokens_mask=True,
                                       return_offsets_mapping=loaded.codec.is_fast,
                                       add_special_tokens=add_special_tokens, split_special_tokens=split)
    ids = encoding["input_ids"]
    if not ids:
        raise InvalidTextError("the text produced no tokens for this model's tokenizer",
                               notice=Notice("error.text_no_tokens"))
    if all(encoding["special_tokens_mask"]):
        # e.g. only zero-width or control characters: the model would see [CLS] [SEP] and nothing of the text.
        raise InvalidTextError("the text has nothing this model's tokenizer reads — only invisible characters (zero-"
                               "width spaces, direction marks, …) or special tokens; type or paste visible text",
                               notice=Notice("error.text_invisible"))
    if min(ids) < 0 or max(ids) >= loaded.info.vocab_size:
        raise InvalidTextError(f"the tokenizer produced id {max(ids)}, outside the model's vocabulary of "
                               f"{loaded.info.vocab_size}; the tokenizer does not belong to this model")
    return encoding, full_length > limit


@dataclass(frozen=True)
class EncodedText:
    """A validated text, ready for :func:`forward`.

    inputs: ``input_ids`` and ``attention_mask``, (1, q_len) int64 on the model's device. tokens: the tokenizer's
    own token strings, special tokens included (q_len of them). special: (q_len,) bool — the tokenizer's special
    tokens mask. truncated: whether the text was cut to the model's length. encoding: the tokenizer's
    ``BatchEncoding`` on the CPU (offsets, and :func:`token_word_ids`)."""

    inputs: dict[str, torch.Tensor]
    tokens: tuple[str, ...]
    special: np.ndarray
    truncated: bool
    encoding: object


def encode_text(loaded: LoadedModel, text: str, *, truncate: bool = False,
                add_special_tokens: bool = True) -> EncodedText:
    """Tokenise ``text`` and validate it before any forward — non-empty, within the model's length (or cut to it
    when ``truncate``), not only special or invisible tokens, ids inside the vocabulary — and put its inputs on
    the model's device. ``add_special_tokens=False`` for a text that already carries them (a chat template's
    output). Raises :class:`InvalidTextError`."""
    encoding, truncated = _validated_encoding(loaded, text, truncate=truncate, add_special_tokens=add_special_tokens)
    tokens = tuple(map(str, loaded.codec.encoded_token_strings(encoding, encoding["input_ids"])))
    special = np.array(encoding["special_tokens_mask"], dtype=bool)
    # Lists from the tokenizer, made tensors here: BatchEncoding's own conversion to tensors cost more than the
    # tokenizing of a 128-token text.
    encoding = _batch_of_one(encoding)
    device = loaded.device
    return EncodedText(
        inputs={"input_ids": encoding["input_ids"].to(device), "attention_mask": encoding["attention_mask"].to(device)},
        tokens=tokens, special=special, truncated=truncated, encoding=encoding)


# ------------------------------------------------------------------------------------------------ the forward


def backend_for(loaded: LoadedModel, backend: str) -> str:
    """The attention backend that will run for ``backend`` (``auto``, ``torch``, ``triton``) on ``loaded``'s
    device; :class:`BackendError` saying why and what to choose when it cannot run there."""
    try:
        return resolve_backend(backend, loaded.device)
    except BackendUnavailableError as err:
        raise BackendError(str(err)) from err


@dataclass
class ForwardResult:
    """One forward's model outputs (transformers' ``ModelOutput``, hidden states included unless the forward was asked
    not to keep them; None for a forward that stopped after a layer's attention, ``forward(stop_after=…)``), the
    attention layers' records (:class:`kernels.hf.LayerRecord`, one per layer that ran, in order), the backend that
    ran and, when asked for, each transformer block's output (``layer_outputs``: (batch, n, hidden) each, detached)."""

    outputs: object | None
    records: list[LayerRecord]
    backend: str = "torch"
    layer_outputs: list[torch.Tensor] = field(default_factory=list)


def forward(
    loaded: LoadedModel,
    inputs: dict[str, torch.Tensor],
    *,
    interventions: Sequence[Intervention] = (),
    backend: str = "torch",
    weights_layers: LayerChoice = None,
    keep: tuple[TensorName, ...] = (),
    keep_layers: LayerChoice = None,
    grad: bool = False,
    stats: tuple[StatName, ...] = ("entropy", "lse", "sink"),
    deadline_s: float | None = None,
    resume: ResumeAt | None = None,
    keep_layer_outputs: bool = False,
    stop_after: int | None = None,
    cache: object | None = None,
    logits_to_keep: int | None = None,
    hidden_states: bool = True,
) -> ForwardResult:
    """Run the shared model on ``inputs`` (``input_ids`` or ``inputs_embeds``, plus ``attention_mask``, on the
    model's device) through the inspector's attention function, with ``interventions`` applied inside it.

    ``weights_layers``: the layers whose exact weights the records keep. ``keep`` / ``keep_layers``: which
    tensors (query, key, value, output) to keep, for which layers. ``stats``: the per-row statistics the records
    carry (``()`` when only the outputs matter: batched evaluations skip the entropy pass). Autograd records
    only when ``grad`` is True (the model's parameters never require grad; gradients flow to inputs and to
    intervention tensors). ``deadline_s``: seconds this forward may take (None = no deadline of its own) — a
    :func:`inspector.core.deadline.job_deadline` around it, the one deadline mechanism, so a run's deadline that comes
    sooner still binds; it is checked as each attention layer starts. ``resume``: start at a layer, the blocks below
    returning kept outputs
    (:class:`kernels.hf.ResumeAt`); ``keep_layer_outputs``: keep every block's output
    (:attr:`ForwardResult.layer_outputs`) for such a later forward. Both need :attr:`LoadedModel.can_resume`.
    ``stop_after``: end the forward once that layer's attention is recorded — the records are complete up to it,
    and ``outputs`` is None (the census reads records only, so the last layer's MLP and the head never run).
    ``cache``: a transformers KV cache (``DynamicCache``) the forward reads and extends — how
    :mod:`inspector.analyses.generate` prefills a prompt and then decodes one query a step through the same
    attention function (the queries are then the last positions of the keys); hidden states are not kept then.
    ``logits_to_keep``: compute the language-model head for the last this many positions only (decoding reads
    the last one). ``hidden_states``: whether ``outputs`` keeps every layer's hidden states (False: a base model's
    ``last_hidden_state`` only, what :func:`inspector.core.capture.capture` reads).

    Raises :class:`InvalidRequestError` for an intervention naming a layer or head the model lacks,
    :class:`BackendError`, :class:`UnsupportedModelError` and :class:`DeadlineExceededError` (see the module
    docstring)."""
    info = loaded.info
    for item in interventions:
        info.check_layer(item.layer, "an intervention's layer")
    if (resume is not None or keep_layer_outputs) and not loaded.can_resume:
        raise InvalidRequestError(f"{info.name} ({info.architecture}): its transformer blocks were not found, so a "
                                  "forward cannot resume at a layer")
    if stop_after is not None:
        info.check_layer(stop_after, "the layer to stop after")
    if resume is not None:
        info.check_layer(resume.layer, "the layer to resume at")
        first = resume.layer
        if any(item.layer < first for item in interventions):
            raise InvalidRequestError(f"an intervention below layer {first}, where the forward resumes, would not run")
    chosen = backend_for(loaded, backend)
    admit_job()  # a job's first forward waits for its admission (a hosted server's run slot) here
    run = functools.partial(_forward, loaded, inputs, chosen, interventions=interventions,
                            weights_layers=weights_layers, keep=keep, keep_layers=keep_layers, grad=grad, stats=stats,
                            resume=resume, keep_layer_outputs=keep_layer_outputs, stop_after=stop_after, cache=cache,
                            logits_to_keep=logits_to_keep, hidden_states=hidden_states)
    if deadline_s is None:  # no deadline of its own: a run's (job_deadline around the caller) binds as it is
        return run()
    q_len = next(iter(inputs.values())).shape[1]  # ids, mask (batch, n) and embeddings (batch, n, hidden)
    # The clock starts here, after tokenising: the deadline bounds the model's work, not the caller's.
    with job_deadline(deadline_s, Notice("error.deadline_forward", model=model_name(info.name), tokens=q_len)):
        return run()


def _forward(loaded: LoadedModel, inputs: dict[str, torch.Tensor], chosen: str, *, interventions, weights_layers,
             keep, keep_layers, grad, stats, resume, keep_layer_outputs, stop_after, cache,
             logits_to_keep, hidden_states) -> ForwardResult:
    """:func:`forward` once its arguments are checked, inside its deadline."""
    info = loaded.info
    job = current_deadline()  # the run's one deadline (inspector.core.deadline) binds each of its forwards
    request = AttentionRequest(backend=chosen, stats=stats, weights_layers=weights_layers,
                               interventions=tuple(interventions), keep=keep, keep_layers=keep_layers,
                               deadline=None if job is None else job.at, resume=resume,
                               keep_layer_outputs=keep_layer_outputs, stop_after=stop_after)
    context = torch.enable_grad() if grad else torch.inference_mode()
    try:
        with context, attention_request(request):
            extra: dict = {"output_hidden_states": hidden_states and cache is None}
            if cache is not None:
                extra.update(cache=cache, use_cache=True)
            elif info.causal:  # a decoder would otherwise fill a KV cache nobody reads (a copy of every key and value)
                extra["use_cache"] = False
            if logits_to_keep is not None:
                extra["logits_to_keep"] = logits_to_keep
            outputs = loaded.model(**inputs, **extra)
    except AttentionDone:
        outputs = None
    except DeadlinePassed as err:
        raise job.error(f"at a forward: {err}") from err
    except InterventionError as err:
        raise InvalidRequestError(str(err)) from err
    except AttentionContractError as err:
        raise UnsupportedModelError(f"{info.name}: {err}") from err
    except BackendUnavailableError as err:
        raise BackendError(str(err)) from err
    _check_finite_logits(info.name, outputs, inputs)
    return ForwardResult(outputs=outputs, records=request.records, backend=chosen,
                         layer_outputs=request.layer_outputs)


def check_every_layer_ran(loaded: LoadedModel, records: Sequence[LayerRecord]) -> None:
    """Refuse a model whose forward recorded another number of attention layers than it declares — some of its
    attention does not go through the inspector's attention function, so its layers cannot be told apart:
    :class:`UnsupportedModelError` (the Inspect run, Generate and the census)."""
    info = loaded.info
    if len(records) != info.num_layers:
        raise UnsupportedModelError(f"{info.name} ran {len(records)} attention layers but declares {info.num_layers}; "
                                    "its attention does not all go through the inspector's attention function",
                                    notice=Notice("error.layers_not_all_read", model=model_name(info.name),
                                                  ran=len(records), declared=info.num_layers))


def _check_finite_logits(name: str, outputs, inputs: dict) -> None:
    """Refuse NaN or infinite logits at the text's own positions (padding rows may be anything): damaged weights
    (flipped bytes) otherwise predicted NaN, written as ``null``, with exit 0 (issue 45, item 7)."""
    logits = getattr(outputs, "logits", None)
    if not isinstance(logits, torch.Tensor) or logits.dim() != 3:
        return
    mask = inputs.get("attention_mask")
    # Row sums first (one pass, no copy of the logits): a non-finite score makes its row's sum non-finite; only the
    # rows whose sum is not finite (a huge finite score can overflow it) are looked at score by score.
    logits = logits.detach()
    by_mask = mask is not None and mask.shape[:2] == logits.shape[:2]
    row_sums = logits.sum(dim=-1)  # (batch, n)
    if bool(torch.isfinite(row_sums[mask.bool()] if by_mask else row_sums[-1:]).all()):
        return
    if not bool(torch.isfinite(logits[mask.bool()] if by_mask else logits[-1:]).all()):
        raise CorruptModelError(f"{name} predicted NaN or infinite scores for this text: its weights are damaged or "
                                "overflow in this precision — for a bundled model run python -m inspector prepare "
                                "again (delete its prepared folder first), else try --dtype float32 or download the "
                                "model again")
