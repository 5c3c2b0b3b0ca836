"""The census's statistics pass (the package docstring says how): rows → tokens → length buckets of padded batches →
one forward each, statistics only → :class:`TextCensus` per text, :class:`RowError` per refused row. Writes nothing:
:mod:`inspector.analyses.census.store` keeps what this measures."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace

import numpy as np
import torch

from inspector.analyses.batching import (
    CPU_MAX_PADDING,
    GPU_MAX_PADDING,
    STATISTICS,
    batch_statistics,
    length_buckets,
    padded_batch,
)
from inspector.analyses.census.exemplars import RowCandidates, TextExemplars, TopCutoffs
from inspector.analyses.census.input import InputRow, row_problem
from inspector.analyses.census.threads import census_threads
from inspector.analyses.metrics import token_category_masks
from inspector.base.errors import InspectorError, InvalidRequestError
from inspector.core.forward import check_every_layer_ran, encode_text, forward, reads_special_tokens_as_text
from inspector.core.loading import LoadedModel
from kernels.reference import materialize_weights

# Padded tokens (batch × longest text) per forward. On the CPU larger batches stop paying off around here; on a GPU
# raise it (--batch-tokens) until memory or throughput says stop.
DEFAULT_BATCH_TOKENS = 8192


# ------------------------------------------------------------------------------------- the statistics pass

@dataclass(frozen=True)
class TextCensus:
    """One text's numbers: ``statistics`` maps each of :data:`STATISTICS` to (layers, heads) float32; ``exemplars``
    its best rows per head (:mod:`inspector.analyses.census.exemplars`) when the census keeps exemplars."""

    index: int
    text: str
    tokens: int
    statistics: dict[str, np.ndarray]
    exemplars: TextExemplars | None = None


@dataclass(frozen=True)
class RowError:
    """A row that was not measured: where it is and why (goes to errors.jsonl)."""

    index: int
    origin: str
    reason: str

    def as_json(self) -> dict:
        return {"index": self.index, "origin": self.origin, "reason": self.reason}


@dataclass(frozen=True)
class _Encoded:
    index: int
    text: str
    ids: np.ndarray  # (T,) int64
    token_strings: tuple[str, ...]  # (T,) the tokenizer's own strings ("" for an id it has none for)
    special: np.ndarray  # (T,) bool
    category_masks: np.ndarray  # (3, T) bool: [CLS]/BOS, [SEP]/EOS, punctuation (metrics.token_category_masks)


def batch_encoding(loaded: LoadedModel, texts: list[str]) -> tuple[list[list[int]], list[list[int]]]:
    """Token ids and special-tokens masks of ``texts`` from one tokenizer call (a fast tokenizer encodes the list
    in one go): the same ids, text by text, as :func:`inspector.core.forward.encode_text`'s untruncated call."""
    if not texts:
        return [], []
    # Special-token strings typed in a text are read as text, as a single capture reads them (one call per rule).
    ids: list[list[int]] = [[] for _ in texts]
    masks: list[list[int]] = [[] for _ in texts]
    for split in (True, False):
        chosen = [i for i, text in enumerate(texts) if reads_special_tokens_as_text(loaded.codec, text) == split]
        if not chosen:
            continue
        batch = loaded.codec.encode_batch([texts[i] for i in chosen], truncation=False, verbose=False,
                                          return_special_tokens_mask=True, split_special_tokens=split)
        for k, i in enumerate(chosen):
            ids[i], masks[i] = batch["input_ids"][k], batch["special_tokens_mask"][k]
    return ids, masks


def _encode_rows(loaded: LoadedModel, rows: Iterable[InputRow], truncate: bool,
                 ) -> tuple[list[_Encoded], list[RowError]]:
    """Tokenise each row the way a single-text capture does; bad rows become :class:`RowError`.

    The texts are tokenised in one batch call; a text the single-text checks could refuse or cut (too long, no
    tokens, only special tokens, an id outside the vocabulary) goes through :func:`inspector.core.forward.encode_text`
    itself, so its error message or truncation is exactly a capture's."""
    from inspector.analyses.metrics import is_punctuation

    rows = list(rows)
    problems = [row_problem(row.value) for row in rows]
    all_ids, all_special = batch_encoding(loaded, [r.value for r, p in zip(rows, problems) if p is None])
    limit, vocabulary = loaded.info.max_positions, loaded.info.vocab_size
    special_ids = set(loaded.codec.all_special_ids())
    strings: dict[int, str] = {}  # each id's token string and whether it is punctuation, looked up once per call
    punctuation: dict[int, bool] = {}
    encoded, errors = [], []
    batch_position = 0
    for row, problem in zip(rows, problems):
        if problem is None:
            ids, special_mask = all_ids[batch_position], all_special[batch_position]
            batch_position += 1
            if not ids or len(ids) > limit or all(special_mask) or min(ids) < 0 or max(ids) >= vocabulary:
                try:
                    ids = encode_text(loaded, row.value, truncate=truncate).encoding["input_ids"][0].tolist()
                except InspectorError as err:
                    problem = str(err)
        if problem is not None:
            errors.append(RowError(row.index, row.origin, problem))
            continue
        unseen = [i for i in dict.fromkeys(ids) if i not in strings]
        if unseen:
            strings.update((i, "" if token is None else str(token))
                           for i, token in zip(unseen, loaded.codec.token_strings(unseen)))
            punctuation.update((i, is_punctuation(strings[i])) for i in unseen)
        # The Heads page's definitions (inspector.analyses.heads._text_statistics, metrics.token_category_masks):
        # special =
        # an id among all_special_ids; [CLS] = a special token at position 0, [SEP] = any other special token,
        # punctuation = a punctuation token that is not special.
        special = np.fromiter((i in special_ids for i in ids), dtype=bool, count=len(ids))
        first = np.zeros(len(ids), dtype=bool)
        first[:1] = special[:1]
        punctuation_mask = np.fromiter((punctuation[i] for i in ids), dtype=bool, count=len(ids)) \
            & ~special
        encoded.append(_Encoded(row.index, row.value, np.asarray(ids, dtype=np.int64),
                                tuple(strings[i] for i in ids), special,
                                np.stack([first, special & ~first, punctuation_mask])))
    return encoded, errors


def special_token_names(loaded: LoadedModel) -> list[list[str]]:
    """The model's own tokens in the two special categories the masses measure (a special token at position 0, and
    every other special token: BERT's [CLS] and [SEP]), as its tokenizer adds them to a text — ``[["<bos>"], []]`` on
    Gemma, ``[[], []]`` on SmolLM2, ``[["[CLS]"], ["[SEP]"]]`` on BERT. The manifest keeps them, so the Heads page names
    the masses by the model's tokens and leaves out one the tokenizer never adds (issue 44)."""
    encoded = encode_text(loaded, "a")
    masks = token_category_masks(encoded.tokens, encoded.special)
    return [[token for token, hit in zip(encoded.tokens, masks[category]) if hit] for category in (0, 1)]


def _materialize(backend: str, query: torch.Tensor, key: torch.Tensor, lse: torch.Tensor, *, causal: bool,
                 scale: float, padding: torch.Tensor | None, window: int | None) -> torch.Tensor:
    """One layer's exact weights (batch, heads, n, n) float32, as the attention function makes them."""
    if backend == "triton":
        from kernels import flash

        return flash.materialize_weights(query, key, lse=lse, causal=causal, scale=scale, key_padding_mask=padding,
                                         window=window)
    return materialize_weights(query, key, lse=lse, causal=causal, scale=scale, key_padding_mask=padding,
                               window=window)


def _measure_bucket(loaded: LoadedModel, items: list[_Encoded], backend: str, exemplars: int,
                    shard_of: Callable[[int], int], cutoffs: TopCutoffs) -> list[TextCensus]:
    info, device = loaded.info, loaded.device
    lengths_list = [len(item.ids) for item in items]
    n, batch = max(lengths_list), len(items)
    inputs = padded_batch(loaded, [torch.from_numpy(item.ids).to(device) for item in items])
    category_masks = np.zeros((batch, n, 3), dtype=np.float64)
    for b, item in enumerate(items):  # zero past each text's T, like its padded keys
        category_masks[b, :lengths_list[b]] = item.category_masks.T
    # The statistics need every layer's attention and nothing after the last one: that layer's output projection
    # and MLP (9 of its 12 d² weight units: an eighth of a 6-layer model's matrix products) and the head never run.
    result = forward(loaded, inputs, backend=backend, stats=("entropy", "lse"), keep=("query", "key"),
                     keep_layers="all", stop_after=info.num_layers - 1)
    records = result.records
    check_every_layer_ran(loaded, records)
    padding = inputs["attention_mask"].bool()
    padding = None if bool(padding.all()) else padding

    def materialized(record) -> torch.Tensor:
        weights = _materialize(backend, record.tensors["query"], record.tensors["key"], record.stats["lse"],
                               causal=record.causal, scale=record.scale, padding=padding, window=record.window)
        record.tensors.clear()
        return weights

    indices = [item.index for item in items]
    candidates = RowCandidates(lengths_list, indices, [shard_of(i) for i in indices], exemplars, cutoffs) \
        if exemplars else None
    reduced, _ = batch_statistics(records, materialized, lengths_list, category_masks, input_ids=inputs["input_ids"],
                                  row_sink=candidates)
    host = {name: reduced[name].float().cpu().numpy() for name in STATISTICS}  # (B, L, H) each
    return [TextCensus(index=item.index, text=item.text, tokens=lengths_list[b],
                       statistics={name: host[name][b] for name in STATISTICS},
                       exemplars=candidates.text(b, item.token_strings) if candidates else None)
            for b, item in enumerate(items)]


def measure_rows(loaded: LoadedModel, rows: Sequence[InputRow], *, batch_tokens: int = DEFAULT_BATCH_TOKENS,
                 truncate: bool = False, backend: str = "torch", max_padding: float | None = None,
                 exemplars: int = 0, shard_of: Callable[[int], int] | None = None,
                 ) -> tuple[list[TextCensus], list[RowError]]:
    """The census of ``rows``: tokenised, bucketed by length into padded batches of at most ``batch_tokens``
    padded tokens and at most ``max_padding`` padding per real token (default: :data:`CPU_MAX_PADDING` on the
    CPU, :data:`GPU_MAX_PADDING` elsewhere), measured (see the module docstring). Results come back in input
    order; bad rows (empty, not text, too long without ``truncate``) come back as :class:`RowError` and never
    stop the others. ``exemplars`` K > 0: each text also carries its share of the exemplars (its best row per
    statistic and head, and its rows among each batch's top K per shard:
    :class:`~inspector.analyses.census.exemplars.TextExemplars`), taken in the same pass, the batches sharing one
    running cut-off (:class:`~inspector.analyses.census.exemplars.TopCutoffs`); ``shard_of`` maps an input index to
    its shard (default: every row of the call in one). The rows' float32 values depend on their batches (the
    call's rows) and on nothing else: not on the intra-op thread count (:mod:`inspector.analyses.census.threads`)."""
    if batch_tokens < 1:
        raise InvalidRequestError(f"--batch-tokens must be at least 1, got {batch_tokens}")
    if max_padding is None:
        max_padding = CPU_MAX_PADDING if torch.device(loaded.device).type == "cpu" else GPU_MAX_PADDING
    encoded, errors = _encode_rows(loaded, rows, truncate)
    measured: list[TextCensus] = []
    cutoffs = TopCutoffs(exemplars)
    shard_of = shard_of or (lambda index: 0)
    buckets = length_buckets([len(item.ids) for item in encoded], batch_tokens, max_padding)  # shortest first
    if exemplars:
        # The longest batch first: its rows' distances put the cut-off high from the start. Shortest first, each
        # batch's distances beat every earlier one's and it handed on K rows a head (a 200-text census: 26,000
        # distance rows of 49,000, against 6,000 of 34,000). A text's numbers depend on its batch, not the order.
        buckets = buckets[-1:] + buckets[:-1]
    with census_threads(loaded.device):  # numbers no thread count changes: the engines' actors and cores differ
        for bucket in buckets:
            measured.extend(_measure_bucket(loaded, [encoded[i] for i in bucket], backend, exemplars,
                                            shard_of, cutoffs))
    measured.sort(key=lambda item: item.index)
    if exemplars:  # every batch is in: drop the top rows that K rows of their shard outrank
        tops = cutoffs.trim([shard_of(item.index) for item in measured], [item.exemplars.top for item in measured])
        measured = [item if top is item.exemplars.top else replace(item, exemplars=replace(item.exemplars, top=top))
                    for item, top in zip(measured, tops)]
    return measured, errors


def resolved_backend(loaded: LoadedModel, backend: str) -> str:
    from inspector.base.errors import BackendError
    from kernels.hf import BackendUnavailableError, resolve_backend

    try:
        return resolve_backend(backend, loaded.device)
    except BackendUnavailableError as err:
        raise BackendError(str(err)) from err

