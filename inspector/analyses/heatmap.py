"""What an attention heatmap shows: one head's weights from a :class:`~inspector.core.capture.Capture`, optionally
re-expressed three ways that readers of attention maps ask for, each stated in the view's ``notes``.

Applied in this order (each step works on the previous one's result):

1. **drop_sink** — zero the column of key 0, the first token (the key ``Capture.sink_mass`` measures), and
   renormalise each row over the remaining keys; the emptied column then leaves the key axis (its row
   stays). Many heads park most of their budget on the first token
   when they have nothing to do (Xiao et al. 2023, "Efficient Streaming Language Models with Attention
   Sinks"; Clark et al. 2019 saw the same on [CLS]/[SEP]); removing it shows how the *rest* is shared.
   A row whose remaining mass is 0 (a causal model's first row sees only key 0) stays all zeros.
2. **words** — word pieces merged into the words the tokenizer split them from (``Capture.word_ids``):
   attention *to* a word is the **sum** over its pieces (the budget spent on any of them), attention *from* a
   word is the **mean** over its pieces' rows — so every row still sums to 1. This is how Clark et al.
   (2019, "What Does BERT Look At?") turn BERT's word-piece attention into word-level attention. Special
   tokens stay their own words.
3. **hide_special** — drop the rows and columns of special tokens ([CLS], [SEP], <s> …) *without*
   renormalising: what remains is what the shown tokens spend on each other, and a row's sum says how much
   of its budget went to what is hidden.

Pure NumPy; nothing here draws. :mod:`inspector.charts` turns a :class:`HeatmapView` into a chart.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass

import numpy as np

from inspector.base.errors import InvalidRequestError
from inspector.base.i18n import Notice
from inspector.base.tokens import readable_token, readable_tokens
from inspector.core.capture import Capture


@dataclass(frozen=True)
class HeatmapOptions:
    """Which re-expressions to apply (see the module docstring for exactly what each does)."""

    hide_special: bool = False  # drop special tokens' rows and columns; rows then sum to ≤ 1
    drop_sink: bool = False  # zero key 0 and renormalise each row over the other keys
    words: bool = False  # merge word pieces: columns summed, rows averaged


@dataclass(frozen=True)
class HeatmapView:
    """One head's attention as a heatmap shows it.

    weights: (rows, cols) float32 — row = query (token or word), column = key; entries in [0, 1].
    query_labels / key_labels: rows / cols unique labels ``"<position>: <text>"``, position = the first token
    of the row in the capture, so labels match the token strip even when rows are hidden or merged.
    query_tokens / key_tokens: the token (or word) text alone, for tooltips.
    query_positions / key_positions: (rows,) / (cols,) — first-token position of each row / column.
    notes: sentences saying what was done to the raw weights (empty: nothing) — :class:`~inspector.core.capture.Notice`
    strings, English as they are and translatable with :func:`~inspector.core.capture.notice_text`.
    masked: (rows, cols) bool or None — True where the query could not see the key at all (a causal model's later
    keys, keys outside a sliding window; a word cell when none of its token cells was visible); such a weight is
    exactly 0 by construction, not by what the head learned. None: nothing is masked (an encoder).
    causal: the model's attention is causal. window: this layer's sliding window in tokens (None = it sees every
    earlier key); windowed_model: some layer of the model has a window (so a layer without one is a global layer).
    """

    weights: np.ndarray
    query_labels: tuple[str, ...]
    key_labels: tuple[str, ...]
    query_tokens: tuple[str, ...]
    key_tokens: tuple[str, ...]
    layer: int
    head: int
    options: HeatmapOptions
    notes: tuple[str, ...] = ()
    query_positions: tuple[int, ...] = ()
    key_positions: tuple[int, ...] = ()
    masked: np.ndarray | None = None
    causal: bool = False
    window: int | None = None
    windowed_model: bool = False

    def __post_init__(self) -> None:
        if self.weights.ndim != 2:
            raise ValueError(f"HeatmapView.weights has shape {self.weights.shape}, expected (rows, cols)")
        rows, cols = self.weights.shape
        for name, values, n in (("query_labels", self.query_labels, rows), ("query_tokens", self.query_tokens, rows),
                                ("key_labels", self.key_labels, cols), ("key_tokens", self.key_tokens, cols)):
            if len(values) != n:
                raise ValueError(f"HeatmapView.{name} has {len(values)} entries for {n} {name.split('_')[0]} rows")
        for name, values, n in (("query_positions", self.query_positions, rows),
                                ("key_positions", self.key_positions, cols)):
            if values and len(values) != n:
                raise ValueError(f"HeatmapView.{name} has {len(values)} entries, expected {n}")
        # Vega-Lite merges equal values on an ordinal axis: a repeated label would fold two rows into one.
        if len(set(self.query_labels)) != rows or len(set(self.key_labels)) != cols:
            raise ValueError("HeatmapView labels must be unique (prefix them with their position)")
        if rows and cols and not (np.isfinite(self.weights).all() and self.weights.min() >= 0):
            raise ValueError("HeatmapView.weights must be finite and non-negative")
        if self.masked is not None:
            if self.masked.shape != (rows, cols) or self.masked.dtype != bool:
                raise ValueError(f"HeatmapView.masked must be a bool array of shape {(rows, cols)}")
            if (self.weights[self.masked] != 0).any():
                raise ValueError("HeatmapView: a masked cell has a non-zero weight")

    @property
    def row_sums(self) -> np.ndarray:
        """(rows,) float32 — each shown row's total weight (1 unless keys were hidden)."""
        return self.weights.sum(axis=-1)


def _checked_index(value, count: int, what: str) -> int:
    try:
        index = operator.index(value)
    except TypeError:
        raise InvalidRequestError(f"{what} must be a whole number; got {value!r} — pick one between 0 and "
                                  f"{count - 1}") from None
    if not 0 <= index < count:
        raise InvalidRequestError(f"{what} {index} does not exist: the model has {count} {what}s "
                                  f"(0–{count - 1}) — pick one in that range")
    return index


def _layer_weights(capture: Capture, layer) -> tuple[int, np.ndarray]:
    """(layer index, (heads, q_len, k_len) weights) or a clear error."""
    layer = _checked_index(layer, capture.num_layers, "layer")
    if layer not in capture.weights:
        captured = ", ".join(str(x) for x in sorted(capture.weights)) or "none"
        raise InvalidRequestError(f"layer {layer}'s attention weights were not captured (captured layers: "
                                  f"{captured}) — capture again with weights='all' or include layer {layer}")
    return layer, capture.weights[layer]


def _word_groups(capture: Capture) -> list[np.ndarray]:
    """Token indices of each word in sentence order; special tokens (and tokens without a word) alone."""
    word_ids = capture.word_ids
    if word_ids is None:  # a Capture pickled before word_ids existed: one word per token
        word_ids = np.where(capture.special, -1, np.arange(len(capture.tokens)))
    groups: dict[object, list[int]] = {}
    for position, word in enumerate(np.asarray(word_ids).tolist()):
        key = ("token", position) if word < 0 else ("word", word)
        groups.setdefault(key, []).append(position)
    return sorted((np.array(g) for g in groups.values()), key=lambda g: int(g[0]))


def _group_text(capture: Capture, group: np.ndarray, shown: tuple[str, ...]) -> str:
    """A word's text as written in the input (via offsets), else its pieces (``shown``: the readable tokens)
    joined without "##"."""
    spans = capture.offsets[group]
    if not capture.special[group].any() and (spans[:, 1] > spans[:, 0]).all():
        word = capture.text[int(spans[:, 0].min()):int(spans[:, 1].max())]
        if word.strip():
            return readable_token(word.strip())
    if len(group) == 1:
        return shown[int(group[0])]
    pieces = [shown[int(i)] for i in group]
    return pieces[0] + "".join(p[2:] if p.startswith("##") else p for p in pieces[1:])


def token_mask(q_len: int, causal: bool, window: int | None) -> np.ndarray:
    """(q_len, q_len) bool — True where query i cannot see key j: j > i in a causal model, j ≤ i − window in a
    sliding-window layer (the kernel's contract: query i sees keys j with i − window < j)."""
    query = np.arange(q_len)[:, None]  # (q_len, 1)
    key = np.arange(q_len)[None, :]  # (1, q_len)
    masked = np.zeros((q_len, q_len), dtype=bool)
    if causal:
        masked |= key > query
    if window is not None:
        masked |= key <= query - window
    return masked


def _views(capture: Capture, layer, heads: list[int], options: HeatmapOptions) -> tuple[HeatmapView, ...]:
    layer, weights = _layer_weights(capture, layer)
    window = capture.windows[layer]
    masked = token_mask(len(capture.tokens), capture.causal, window)  # (q_len, k_len)
    weights = weights[heads].astype(np.float64)  # (h, q_len, k_len) — float64 so sums stay exact-ish
    tokens = readable_tokens(capture.tokens)  # as labels show them: Ġ, Ċ and ▁ read as ␣ and ↵
    notes: list[str] = []

    if options.drop_sink:
        weights[:, :, 0] = 0.0
        remaining = weights.sum(axis=-1, keepdims=True)  # (h, q_len, 1)
        weights = np.divide(weights, remaining, out=np.zeros_like(weights), where=remaining > 0)
        emptied = (remaining[..., 0] <= 0).any()  # rows that saw only the sink
        notes.append(Notice("notice.sink_dropped_emptied" if emptied else "notice.sink_dropped", token=tokens[0]))

    if options.words:
        groups = _word_groups(capture)
        q_len = len(tokens)
        # Put each word's pieces next to each other (they already are for one sequence), then one segmented
        # sum per axis: O(heads · q_len · k_len), where matrix products with group indicators would be cubic.
        order = np.concatenate(groups)
        sizes = np.array([len(g) for g in groups])
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        weights = weights[:, order][:, :, order]
        weights = np.add.reduceat(weights, starts, axis=2)  # (h, q_len, words): attention TO a word = sum
        weights = np.add.reduceat(weights, starts, axis=1) / sizes[None, :, None]  # FROM a word = mean
        # A word cell is masked when none of its token cells was visible.
        visible = (~masked[order][:, order]).astype(np.int64)
        visible = np.add.reduceat(np.add.reduceat(visible, starts, axis=1), starts, axis=0)
        masked = visible == 0
        texts = [_group_text(capture, g, tokens) for g in groups]
        positions = [int(g[0]) for g in groups]
        special = np.array([bool(capture.special[g].all()) for g in groups])
        if len(groups) < q_len:
            notes.append(Notice("notice.words_merged", tokens=q_len, words=len(groups)))
        else:
            notes.append(Notice("notice.words_unchanged"))
    else:
        texts = list(tokens)
        positions = list(range(len(tokens)))
        special = np.asarray(capture.special, dtype=bool)

    if options.hide_special and special.any():
        keep = ~special
        if not keep.any():
            raise InvalidRequestError("every token of this text is a special token, so hiding special tokens "
                                      "leaves nothing to show — turn off 'hide special tokens'")
        hidden = ", ".join(dict.fromkeys(t for t, s in zip(texts, special) if s))
        weights = weights[:, keep][:, :, keep]
        masked = masked[keep][:, keep]
        texts = [t for t, k in zip(texts, keep) if k]
        positions = [p for p, k in zip(positions, keep) if k]
        notes.append(Notice("notice.special_hidden", hidden=hidden))

    labels = tuple(f"{p}: {t}" for p, t in zip(positions, texts))
    # The dropped sink's key column is all zeros by construction: it leaves the key axis rather than stand there
    # blank (issue 31); its row stays — the first token still attends.
    columns = np.ones(len(positions), dtype=bool)
    if (options.drop_sink and len(positions) > 1 and positions[0] == 0
            and not weights[:, :, 0].any()):  # key 0 alone in its column (a word of several pieces keeps it)
        columns[0] = False
    key_labels = tuple(label for label, shown in zip(labels, columns) if shown)
    key_texts = tuple(text for text, shown in zip(texts, columns) if shown)
    key_positions = tuple(p for p, shown in zip(positions, columns) if shown)
    weights, masked = weights[:, :, columns], masked[:, columns]
    return tuple(HeatmapView(weights=weights[i].astype(np.float32), query_labels=labels, key_labels=key_labels,
                             query_tokens=tuple(texts), key_tokens=key_texts, layer=layer, head=head,
                             options=options, notes=tuple(notes), query_positions=tuple(positions),
                             key_positions=key_positions, masked=masked if masked.any() else None,
                             causal=capture.causal, window=window,
                             windowed_model=any(w is not None for w in capture.windows))
                 for i, head in enumerate(heads))


def heatmap_view(capture: Capture, layer: int, head: int, options: HeatmapOptions = HeatmapOptions()) -> HeatmapView:
    """The heatmap of ``capture``'s ``layer``/``head`` with ``options`` applied.

    Raises :class:`InvalidRequestError` if the layer or head does not exist or the layer's weights were not
    captured.
    """
    head = _checked_index(head, capture.num_heads, "head")
    return _views(capture, layer, [head], options)[0]


def layer_views(capture: Capture, layer: int, options: HeatmapOptions = HeatmapOptions()) -> tuple[HeatmapView, ...]:
    """One :class:`HeatmapView` per head of ``layer`` (for small multiples), options applied to each."""
    return _views(capture, layer, list(range(capture.num_heads)), options)
