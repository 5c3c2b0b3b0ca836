"""Compare: two texts on one model, or one text on two models — which heads moved the chosen token's
attention, by how much, and whether the model's output moved with them (issue 20).

The famous picture is "The animal didn't cross the street because it was too tired" against "… too wide": in
one head "it" attends to *animal* in the first and *street* in the second. :func:`compare` measures that for
every head at once.

Steps:

1. **Alignment** (:func:`align_tokens`): the two token sequences are aligned with :class:`difflib.SequenceMatcher`
   over the token strings (no junk heuristic). Equal tokens are paired ("equal"); inside a replaced span the
   tokens are paired position by position up to the shorter side ("replace" — *tired* ↔ *wide* is one slot
   whose word changed); what remains of a replaced span, and inserted or deleted tokens, have no partner.
   Every token that is not "equal" is marked as differing.
2. **The query** — the token whose attention row is compared — must have a partner in the other text. Default
   (:func:`default_query`): the first token after the common prefix where the texts differ, i.e. the first
   differing slot when it is paired (*tired* ↔ *wide*), else the first paired token after it (an insertion).
   A token may be named by its string (``"it"``, the first such token in text A, else in text B) or by its
   position in text A.
3. **Per head** (:func:`compare_rows`, pure NumPy): the query's two attention rows are put on one support —
   one entry per aligned key pair plus one **"other" bucket per side** holding that side's mass on keys with no
   partner, so both rows stay distributions and a row that moved its budget to an inserted word shows it —
   and compared by the Jensen–Shannon divergence (nats, between 0 and ln 2; unsmoothed, unlike the Heads page's —
   :mod:`inspector.analyses.divergence` says why). With two key tokens (*animal*,
   *street*) the **key shift** is ½[(B[k₂] − A[k₂]) − (B[k₁] − A[k₁])]: when a mass x moves from key 1 to key
   2 and nothing else changes it is exactly x (the ½ undoes counting the move once on each key), so "more than
   half of its attention moves from *animal* to *street*" reads key shift > 0.5. The **entropy change** is the
   query row's entropy in B minus in A (nats, over each row's own keys).
4. **Output** in the model's own terms (:mod:`inspector.core.outputs`): cosine distance of the sentence
   embedding, KL divergence of the next/masked-token distribution, or the largest class-logit change, with the
   probability of A's top prediction in both runs (the class probability change for a classifier).

Two models are compared head by head only when they have the same layers × heads and their tokenizers split
the text(s) into the same token strings; otherwise :class:`IncomparableModelsError` says what differs.
Attention weights of every layer are kept for both texts (the page draws any head's pair of heatmaps), so
texts are limited to :data:`MAX_COMPARE_TOKENS` tokens.
"""

from __future__ import annotations

import math
import time
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from inspector.analyses.divergence import JS_MAX, jensen_shannon_numpy
from inspector.analyses.token_alignment import TokenAlignment, TokenChoice, align_tokens, default_query, resolve_token
from inspector.base.display import Displayable
from inspector.base.errors import InvalidRequestError, InvalidTextError
from inspector.base.i18n import Notice
from inspector.base.limits import COMPARE_WEIGHTS_BUDGET_BYTES
from inspector.base.tokens import readable_tokens, token_labels
from inspector.core.budget import attention_bytes
from inspector.core.capture import Capture, capture
from inspector.core.forward import encode_text, forward
from inspector.core.loading import LoadedModel
from inspector.core.model_folders import model_name
from inspector.core.outputs import ModelOutput, model_output, output_change

# A sentence pair is a few dozen tokens; the weights of both texts are held to COMPARE_WEIGHTS_BUDGET_BYTES.
MAX_COMPARE_TOKENS = 256
# "Moves more than half of its attention" (key shift) and "moved" (JS divergence, nats; ln 2 ≈ 0.693 at most).
SHIFT_THRESHOLD = 0.5
JS_THRESHOLD = 0.1
DEFAULT_KEYS = ("animal", "street")
TOP_PREDICTIONS = 3


@dataclass(frozen=True)
class ComparePair:
    """An example pair for the Compare page: ``title_key`` (an i18n catalogue key), the two texts, and the
    query and keys to show (None = the defaults of :func:`compare`; ``()`` keys = none)."""

    title_key: str
    text_a: str
    text_b: str
    query: str | None = None
    keys: tuple[str, ...] | None = None


# The famous picture asks where the pronoun looks, so its query is "it" (issue 44); on a decoder "it" cannot see
# tired/wide and the page asks the differing word (causal_blind). Gemma 3 reads 它 inside 因为它, and 马路 as 马 + 路.
COREFERENCE = ComparePair("compare.example_coreference",
                          "The animal didn't cross the street because it was too tired.",
                          "The animal didn't cross the street because it was too wide.", query="it", keys=DEFAULT_KEYS)
COREFERENCE_ZH = ComparePair("compare.example_coreference_zh", "动物没有过马路，因为它太累了。",
                             "动物没有过马路，因为它太宽了。", query="因为它", keys=("动物", "路"))
EXAMPLE_PAIRS: tuple[ComparePair, ...] = (
    COREFERENCE,
    COREFERENCE_ZH,
    ComparePair("compare.example_agreement", "The keys to the old cabinet are on the table.",
                "The key to the old cabinets is on the table.", query="are", keys=("cabinet", "keys")),
    ComparePair("compare.example_negation", "The movie we saw last night was good.",
                "The movie we saw last night was not good.", query="good", keys=()),
)


def text_script(text: str) -> str:
    """The script most of ``text``'s letters are written in: the first word of their Unicode names (``"LATIN"``,
    ``"CJK"`` for Chinese characters, ``"CYRILLIC"`` …); ``""`` for a text without letters."""
    counts: dict[str, int] = {}
    for char in text:
        if char.isalpha():
            script = unicodedata.name(char, "UNKNOWN").split()[0]
            counts[script] = counts.get(script, 0) + 1
    return max(counts, key=counts.__getitem__) if counts else ""


def default_pair(text_a: str) -> ComparePair:
    """The example pair the page opens with for ``text_a``: the pair that starts with it, else the coreference pair
    in text A's script (Chinese for a Chinese text A, so A and B are never in two languages by default)."""
    for pair in EXAMPLE_PAIRS:
        if pair.text_a == text_a:
            return pair
    return COREFERENCE_ZH if text_script(text_a) == "CJK" else COREFERENCE


# Below this share of the two texts' tokens paired as equal, the texts are not a minimal pair and a head-by-head
# comparison pairs unrelated tokens ("动物/The"): the page says so. The coreference pairs align 88–93 %.
MIN_EQUAL_SHARE = 0.5


def pair_warning(text_a: str, text_b: str, alignment: TokenAlignment) -> Notice | None:
    """One sentence when ``text_a`` and ``text_b`` are not a pair worth comparing token by token: written in
    different scripts (a Chinese A against an English B), or less than :data:`MIN_EQUAL_SHARE` of their tokens
    paired as equal. None when they are."""
    script_a, script_b = text_script(text_a), text_script(text_b)
    total = len(alignment.differs_a) + len(alignment.differs_b)
    equal = int((~alignment.differs_a).sum() + (~alignment.differs_b).sum())
    share = equal / total if total else 1.0
    if script_a and script_b and script_a != script_b:
        return Notice("compare.warn_scripts", share=f"{share:.0%}")
    if share < MIN_EQUAL_SHARE:
        return Notice("compare.warn_alignment", share=f"{share:.0%}", threshold=f"{MIN_EQUAL_SHARE:.0%}")
    return None


class IncomparableModelsError(InvalidRequestError):
    """Two models cannot be compared head by head: different layers × heads, or tokenizers that split the text
    into different tokens."""


# ------------------------------------------------------------------------------------------------ per-row math

@dataclass(frozen=True)
class RowComparison:
    """The query rows of every head compared (shapes (layers, heads) unless stated).

    js: float64 nats in [0, ln 2]. aligned_a, aligned_b: (layers, heads, pairs + 1) float64 — each row on the
    common support, the last entry the "other" bucket (mass on keys without a partner). key_mass_a, key_mass_b:
    (layers, heads, 2) float64 — mass on key 1 and key 2 in A and in B, or None without keys. key_shift:
    ½[(B[k₂] − A[k₂]) − (B[k₁] − A[k₁])] in [−1, 1], or None."""

    js: np.ndarray
    aligned_a: np.ndarray
    aligned_b: np.ndarray
    key_mass_a: np.ndarray | None = None
    key_mass_b: np.ndarray | None = None
    key_shift: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.aligned_a.shape != self.aligned_b.shape or self.aligned_a.shape[:-1] != self.js.shape:
            raise ValueError(f"RowComparison: js {self.js.shape}, aligned {self.aligned_a.shape} / "
                             f"{self.aligned_b.shape} do not match")
        keyed = [x is None for x in (self.key_mass_a, self.key_mass_b, self.key_shift)]
        if any(keyed) and not all(keyed):
            raise ValueError("RowComparison: key masses and key shift come together or not at all")
        if self.key_shift is not None and (self.key_shift.shape != self.js.shape
                                           or self.key_mass_a.shape != self.js.shape + (2,)):
            raise ValueError("RowComparison: key arrays must be (layers, heads) and (layers, heads, 2)")


def compare_rows(rows_a: np.ndarray, rows_b: np.ndarray, pairs: np.ndarray,
                 keys: tuple[tuple[int, int], tuple[int, int]] | None = None) -> RowComparison:
    """Compare attention rows ``rows_a (..., len_a)`` and ``rows_b (..., len_b)`` (each summing to 1) over the
    aligned key ``pairs (pairs, 2)``; ``keys``: two (A position, B position) pairs, key 1 then key 2."""
    rows_a, rows_b = np.asarray(rows_a, np.float64), np.asarray(rows_b, np.float64)
    pairs = np.asarray(pairs, np.int64).reshape(-1, 2)
    on_pairs_a, on_pairs_b = rows_a[..., pairs[:, 0]], rows_b[..., pairs[:, 1]]  # (..., pairs)
    # The keys without a partner, summed per side; clipped because the row sums carry float32 rounding.
    other_a = np.clip(rows_a.sum(axis=-1) - on_pairs_a.sum(axis=-1), 0.0, None)[..., None]
    other_b = np.clip(rows_b.sum(axis=-1) - on_pairs_b.sum(axis=-1), 0.0, None)[..., None]
    aligned_a = np.concatenate([on_pairs_a, other_a], axis=-1)
    aligned_b = np.concatenate([on_pairs_b, other_b], axis=-1)
    js = jensen_shannon_numpy(aligned_a, aligned_b, smoothing=0.0)  # unsmoothed: see inspector.analyses.divergence
    if keys is None:
        return RowComparison(js=js, aligned_a=aligned_a, aligned_b=aligned_b)
    (a1, b1), (a2, b2) = keys
    mass_a = np.stack([rows_a[..., a1], rows_a[..., a2]], axis=-1)
    mass_b = np.stack([rows_b[..., b1], rows_b[..., b2]], axis=-1)
    change = mass_b - mass_a  # (..., 2)
    shift = 0.5 * (change[..., 1] - change[..., 0])
    return RowComparison(js=js, aligned_a=aligned_a, aligned_b=aligned_b, key_mass_a=mass_a, key_mass_b=mass_b,
                         key_shift=shift)


# ------------------------------------------------------------------------------------------------ outputs

@dataclass(frozen=True)
class OutputComparison:
    """The model's output for A and for B, in its own terms (:mod:`inspector.core.outputs`).

    kind: ``embedding``, ``distribution`` or ``logits`` (None when the two outputs cannot be compared: two
    models with different vocabularies or labels). change: cosine distance, KL(A ‖ B) in nats, or the largest
    class-logit change (None when incomparable). top_a, top_b: up to three (token or label, probability) pairs
    (empty for embeddings). probability_change: B's probability of A's top prediction minus A's (None for
    embeddings). note: why there is no change, when there is none."""

    kind: str | None
    change: float | None
    top_a: tuple[tuple[str, float], ...] = ()
    top_b: tuple[tuple[str, float], ...] = ()
    probability_change: float | None = None
    note: str = ""

    def __post_init__(self) -> None:
        if (self.kind is None) != (self.change is None):
            raise ValueError("OutputComparison: kind and change are both set or both None")
        if self.change is not None and not (math.isfinite(self.change) and self.change >= -1e-9):
            raise ValueError(f"OutputComparison.change must be a finite non-negative number; got {self.change}")


@dataclass(frozen=True)
class TextRun:
    """One text through one model: the capture (every layer's weights), its output (:class:`ModelOutput`, a CPU
    tensor) and the output's top predictions as (token or label, probability) pairs (empty for embeddings)."""

    capture: Capture
    output: ModelOutput
    top: tuple[tuple[str, float], ...] = ()


def top_predictions(loaded: LoadedModel, output: ModelOutput,
                    k: int = TOP_PREDICTIONS) -> tuple[tuple[str, float], ...]:
    """The ``k`` most probable tokens (language models) or classes (classifiers) of ``output``."""
    if output.kind == "embedding":
        return ()
    vector = output.vector.double()
    probs = vector.exp() if output.kind == "distribution" else vector.softmax(dim=0)
    values, indices = probs.topk(min(k, probs.numel()))
    if output.kind == "distribution":
        names = [str(x) for x in loaded.codec.token_strings(indices.tolist())]
    else:
        labels = tuple(loaded.info.labels)
        names = [labels[i] if i < len(labels) else str(i) for i in indices.tolist()]
    return tuple(zip(names, (float(v) for v in values.tolist())))


def compare_outputs(run_a: TextRun, run_b: TextRun) -> OutputComparison:
    """The output change from A to B and the top predictions of both (see :class:`OutputComparison`)."""
    a, b = run_a.output, run_b.output
    top_a, top_b = run_a.top, run_b.top
    if a.kind != b.kind or a.vector.shape != b.vector.shape:
        return OutputComparison(kind=None, change=None, top_a=top_a, top_b=top_b,
                                note=f"the outputs cannot be compared: A gives a {a.kind} of "
                                     f"{a.vector.shape[0]}, B a {b.kind} of {b.vector.shape[0]}")
    change = max(output_change(a, b), 0.0)
    probability_change = None
    if a.kind != "embedding":
        index = int(a.vector.argmax())
        p_a = a.vector.double().exp() if a.kind == "distribution" else a.vector.double().softmax(dim=0)
        p_b = b.vector.double().exp() if b.kind == "distribution" else b.vector.double().softmax(dim=0)
        probability_change = float(p_b[index] - p_a[index])
    return OutputComparison(kind=a.kind, change=change, top_a=top_a, top_b=top_b,
                            probability_change=probability_change)


# ------------------------------------------------------------------------------------------------ the result

@dataclass(frozen=True)
class Comparison(Displayable):
    """Text/model A against text/model B, head by head.

    tokens_a: len_a strings, tokens_b: len_b. alignment: :class:`TokenAlignment`. query: (A position, B
    position) of the compared token; keys: ((A, B) of key 1, (A, B) of key 2) or None.
    js: (layers, heads) float64, nats — JS divergence of the query's aligned rows (unaligned keys in one "other"
    bucket per side). entropy_change: (layers, heads) float64, nats — row entropy in B minus in A.
    key_shift: (layers, heads) float64 in [−1, 1] or None — mass moved from key 1 to key 2 (module docstring).
    key_mass_a, key_mass_b: (layers, heads, 2) float64 or None — mass on key 1, key 2. rows_a: (layers, heads,
    len_a) float32 — the query's rows in A; rows_b: (layers, heads, len_b). ranked: (layers · heads, 2) int64 —
    (layer, head) by JS divergence, largest first. output: :class:`OutputComparison`. capture_a, capture_b: the
    two captures (every layer's weights), for the side-by-side heatmaps. timings: seconds per stage."""

    model_a: str
    model_b: str
    text_a: str
    text_b: str
    tokens_a: tuple[str, ...]
    tokens_b: tuple[str, ...]
    alignment: TokenAlignment
    query: tuple[int, int]
    keys: tuple[tuple[int, int], tuple[int, int]] | None
    js: np.ndarray
    entropy_change: np.ndarray
    key_shift: np.ndarray | None
    key_mass_a: np.ndarray | None
    key_mass_b: np.ndarray | None
    rows_a: np.ndarray
    rows_b: np.ndarray
    ranked: np.ndarray
    output: OutputComparison
    capture_a: Capture
    capture_b: Capture
    backend: str
    timings: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        layers, heads = self.js.shape
        expected = {"entropy_change": (self.entropy_change, (layers, heads)),
                    "rows_a": (self.rows_a, (layers, heads, len(self.tokens_a))),
                    "rows_b": (self.rows_b, (layers, heads, len(self.tokens_b))),
                    "ranked": (self.ranked, (layers * heads, 2))}
        if self.key_shift is not None:
            expected.update(key_shift=(self.key_shift, (layers, heads)),
                            key_mass_a=(self.key_mass_a, (layers, heads, 2)),
                            key_mass_b=(self.key_mass_b, (layers, heads, 2)))
        elif self.keys is not None or self.key_mass_a is not None or self.key_mass_b is not None:
            raise ValueError("Comparison: keys, key masses and key shift come together or not at all")
        for name, (array, shape) in expected.items():
            if array.shape != shape:
                raise ValueError(f"Comparison.{name} has shape {array.shape}, expected {shape}")
        if self.alignment.partner_a.shape != (len(self.tokens_a),) or \
                self.alignment.partner_b.shape != (len(self.tokens_b),):
            raise ValueError("Comparison.alignment does not belong to these token sequences")
        for a, b in (self.query, *(self.keys or ())):
            if self.alignment.partner_a[a] != b:
                raise ValueError(f"Comparison: ({a}, {b}) is not an aligned pair")
        if (self.js < 0).any() or (self.js > JS_MAX + 1e-9).any():
            raise ValueError("Comparison.js must lie in [0, ln 2]")

    @property
    def num_layers(self) -> int:
        return self.js.shape[0]

    @property
    def num_heads(self) -> int:
        return self.js.shape[1]

    def token_label(self, pair: tuple[int, int]) -> str:
        """“tired/wide” for a replaced slot, the token itself when both sides agree (readable: Ġ and Ċ shown as ␣
        and ↵, :mod:`inspector.base.tokens`)."""
        a, b = self.shown_a[pair[0]], self.shown_b[pair[1]]
        return a if a == b else f"{a}/{b}"

    @property
    def shown_a(self) -> tuple[str, ...]:
        """Text A's tokens as labels show them (:func:`inspector.base.tokens.readable_tokens`)."""
        return readable_tokens(self.tokens_a)

    @property
    def shown_b(self) -> tuple[str, ...]:
        return readable_tokens(self.tokens_b)

    @property
    def moved_heads(self) -> int:
        """Heads that moved more than half of the query's attention from key 1 to key 2 (key shift > 0.5), or,
        without keys, whose JS divergence exceeds :data:`JS_THRESHOLD`."""
        if self.key_shift is not None:
            return int((self.key_shift > SHIFT_THRESHOLD).sum())
        return int((self.js > JS_THRESHOLD).sum())


def _rows(result: Capture, query: int) -> np.ndarray:
    """(layers, heads, k_len) float32: the query's attention row in every head."""
    return np.stack([result.weights[layer][:, query, :] for layer in range(result.num_layers)])


def compare_runs(run_a: TextRun, run_b: TextRun, *, query: TokenChoice | None = None,
                 keys: Sequence[TokenChoice] | None = None) -> Comparison:
    """:func:`compare` on two finished runs (the page caches runs and calls this on every pick).

    ``keys``: two tokens (strings or A positions), key 1 then key 2; None = ("animal", "street") when both
    texts have both, else no keys; ``()`` = no keys."""
    started = time.perf_counter()
    cap_a, cap_b = run_a.capture, run_b.capture
    if (cap_a.num_layers, cap_a.num_heads) != (cap_b.num_layers, cap_b.num_heads):
        raise IncomparableModelsError(
            f"{cap_a.model_name} has {cap_a.num_layers} layers × {cap_a.num_heads} heads and {cap_b.model_name} "
            f"{cap_b.num_layers} × {cap_b.num_heads}: heads can only be compared one to one between models of the "
            "same shape — pick a model of the same architecture (a base model and its fine-tune)",
            notice=Notice("compare.error.shapes", model_a=model_name(cap_a.model_name), layers_a=cap_a.num_layers,
                          heads_a=cap_a.num_heads, model_b=model_name(cap_b.model_name), layers_b=cap_b.num_layers,
                          heads_b=cap_b.num_heads))
    missing = [layer for cap in (cap_a, cap_b) for layer in range(cap.num_layers) if layer not in cap.weights]
    if missing:
        raise InvalidRequestError(f"a capture lacks layer {missing[0]}'s weights; compare needs every layer's")
    if cap_a.model_name != cap_b.model_name and cap_a.text == cap_b.text and cap_a.tokens != cap_b.tokens:
        raise IncomparableModelsError(
            f"the two tokenizers split the text differently ({cap_a.model_name}: {len(cap_a.tokens)} tokens, "
            f"{cap_b.model_name}: {len(cap_b.tokens)}; first difference at "
            f"{_first_difference(cap_a.tokens, cap_b.tokens)}), so rows cannot be matched token by token — "
            "compare models that share a tokenizer",
            notice=Notice("compare.error.tokenizers", model_a=model_name(cap_a.model_name),
                          model_b=model_name(cap_b.model_name)))
    alignment = align_tokens(cap_a.tokens, cap_b.tokens)
    if query is None:
        first = default_query(alignment, cap_a.special)
        query_pair = (first, int(alignment.partner_a[first]))
    else:
        query_pair = resolve_token(query, cap_a.tokens, cap_b.tokens, alignment, "query")
    key_pairs = None
    if keys is None:
        try:
            key_pairs = tuple(resolve_token(k, cap_a.tokens, cap_b.tokens, alignment, "key") for k in DEFAULT_KEYS)
        except InvalidRequestError:
            key_pairs = None
    elif len(keys):
        if len(keys) != 2:
            raise InvalidRequestError(f"keys must name two tokens (key 1, then key 2); got {len(keys)}")
        key_pairs = tuple(resolve_token(k, cap_a.tokens, cap_b.tokens, alignment, "key") for k in keys)
        if key_pairs[0] == key_pairs[1]:
            raise InvalidRequestError(f"the two keys are the same token “{cap_a.tokens[key_pairs[0][0]]}”; pick two "
                                      "different tokens",
                                      notice=Notice("compare.error.same_keys", token=cap_a.tokens[key_pairs[0][0]]))
    rows_a, rows_b = _rows(cap_a, query_pair[0]), _rows(cap_b, query_pair[1])
    rows = compare_rows(rows_a, rows_b, alignment.pairs, key_pairs)
    entropy_change = (cap_b.entropy[:, :, query_pair[1]].astype(np.float64)
                      - cap_a.entropy[:, :, query_pair[0]].astype(np.float64))
    order = np.argsort(-rows.js, axis=None, kind="stable")
    ranked = np.stack(np.unravel_index(order, rows.js.shape), axis=-1).astype(np.int64)
    output = compare_outputs(run_a, run_b)
    timings = {"compare": time.perf_counter() - started}
    return Comparison(model_a=cap_a.model_name, model_b=cap_b.model_name, text_a=cap_a.text, text_b=cap_b.text,
                      tokens_a=cap_a.tokens, tokens_b=cap_b.tokens, alignment=alignment, query=query_pair,
                      keys=key_pairs, js=rows.js, entropy_change=entropy_change, key_shift=rows.key_shift,
                      key_mass_a=rows.key_mass_a, key_mass_b=rows.key_mass_b, rows_a=rows_a, rows_b=rows_b,
                      ranked=ranked, output=output, capture_a=cap_a, capture_b=cap_b, backend=cap_a.backend,
                      timings=timings)


def _first_difference(a: Sequence[str], b: Sequence[str]) -> str:
    for position, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return f"position {position}: “{x}” vs “{y}”"
    return f"position {min(len(a), len(b))}: one ends"


def check_length(loaded: LoadedModel, text: str, what: str = "text") -> int:
    """Tokens of ``text`` (validated as a capture would); :class:`InvalidTextError` past the compare limits."""
    n = len(encode_text(loaded, text).tokens)
    info = loaded.info
    weights = attention_bytes(info, n, copies=2)  # both texts, every layer
    if n > MAX_COMPARE_TOKENS or weights > COMPARE_WEIGHTS_BUDGET_BYTES:
        raise InvalidTextError(
            f"{what} has {n} tokens; Compare keeps every layer's attention weights of both texts and reads at most "
            f"{MAX_COMPARE_TOKENS} tokens (and {COMPARE_WEIGHTS_BUDGET_BYTES // 2**20} MiB of weights: "
            f"{info.num_layers} × {info.num_heads} heads of {n}² need {weights / 2**20:.0f} MiB) — compare a "
            "sentence or two, not a document",
            notice=Notice("compare.error.too_long", tokens=n, limit=MAX_COMPARE_TOKENS))
    return n


def run_text(loaded: LoadedModel, text: str, *, backend: str = "auto", what: str = "text") -> TextRun:
    """``text`` through ``loaded``: the capture with every layer's weights and the output in the model's own
    terms (one more forward without weights; at sentence length it costs a few milliseconds)."""
    check_length(loaded, text, what)
    result = capture(loaded, text, backend=backend, weights="all")
    inputs = encode_text(loaded, text).inputs
    output = model_output(loaded, forward(loaded, inputs, backend=backend, stats=()), inputs)
    return TextRun(capture=result, output=output, top=top_predictions(loaded, output))


def compare(loaded_a: LoadedModel, text_a: str, loaded_b: LoadedModel, text_b: str, *,
            query: TokenChoice | None = None, keys: Sequence[TokenChoice] | None = None,
            backend: str = "auto") -> Comparison:
    """Text A on model A against text B on model B, head by head (module docstring). Two texts on one model:
    pass the same model twice; two models on one text: the same text twice.

    ``query``: the compared token, a string or a position in text A (None = :func:`default_query`). ``keys``:
    two tokens, key 1 then key 2 (None = "animal" and "street" when both texts have them; ``()`` = none).
    Raises :class:`IncomparableModelsError` for models of different shapes or tokenizers,
    :class:`InvalidTextError` for an empty or too long text, :class:`InvalidRequestError` for a query or key
    that is not a token both texts have."""
    started = time.perf_counter()
    info_a, info_b = loaded_a.info, loaded_b.info
    same_model = loaded_a is loaded_b
    if not same_model and (info_a.num_layers, info_a.num_heads) != (info_b.num_layers, info_b.num_heads):
        raise IncomparableModelsError(
            f"{info_a.name} has {info_a.num_layers} layers × {info_a.num_heads} heads and {info_b.name} "
            f"{info_b.num_layers} × {info_b.num_heads}: heads can only be compared one to one between models of the "
            "same shape — pick a model of the same architecture (a base model and its fine-tune)",
            notice=Notice("compare.error.shapes", model_a=model_name(info_a.name), layers_a=info_a.num_layers,
                          heads_a=info_a.num_heads, model_b=model_name(info_b.name), layers_b=info_b.num_layers,
                          heads_b=info_b.num_heads))
    run_a = run_text(loaded_a, text_a, backend=backend, what="text A")
    run_b = run_a if same_model and text_a == text_b else run_text(loaded_b, text_b, backend=backend, what="text B")
    if not same_model:
        # Each text through the other model's tokenizer: rows can be matched only if both split it alike.
        for text, tokens, other in ((text_a, run_a.capture.tokens, loaded_b), (text_b, run_b.capture.tokens, loaded_a)):
            theirs = encode_text(other, text).tokens
            if theirs != tokens:
                raise IncomparableModelsError(
                    f"{info_a.name} and {info_b.name} split the text differently ({len(tokens)} and {len(theirs)} "
                    f"tokens; first difference at {_first_difference(tokens, theirs)}), so attention rows cannot be "
                    "matched token by token — compare models that share a tokenizer",
                    notice=Notice("compare.error.tokenizers", model_a=model_name(info_a.name),
                                  model_b=model_name(info_b.name)))
    runs_s = time.perf_counter() - started
    result = compare_runs(run_a, run_b, query=query, keys=keys)
    result.timings["runs"] = runs_s
    return result


# ------------------------------------------------------------------------------------------------ one head

@dataclass(frozen=True)
class HeadPair:
    """One head's two heatmaps and their difference on the aligned tokens.

    weights_a: (len_a, len_a) float32, weights_b: (len_b, len_b). difference: (pairs, pairs) float32 —
    B − A at each aligned (query pair, key pair). labels_a, labels_b: ``"<position>: <token>"`` per token;
    pair_labels: one per aligned pair (``"14: tired/wide"``, A's position). query: (A, B) positions; query_row:
    the row of ``difference`` that is the query. query_a, query_b: (pairs + 1,) float64 — the query's rows on the
    aligned keys, the last entry the "other" bucket (as :func:`compare_rows` compares them)."""

    layer: int
    head: int
    weights_a: np.ndarray
    weights_b: np.ndarray
    difference: np.ndarray
    labels_a: tuple[str, ...]
    labels_b: tuple[str, ...]
    pair_labels: tuple[str, ...]
    query: tuple[int, int]
    query_row: int
    query_a: np.ndarray
    query_b: np.ndarray

    def __post_init__(self) -> None:
        n = len(self.pair_labels)
        if self.difference.shape != (n, n) or self.weights_a.shape != (len(self.labels_a),) * 2 \
                or self.weights_b.shape != (len(self.labels_b),) * 2 or not 0 <= self.query_row < n \
                or self.query_a.shape != (n + 1,) or self.query_b.shape != (n + 1,):
            raise ValueError("HeadPair: weights, difference and labels do not match")


def head_pair(comparison: Comparison, layer: int, head: int) -> HeadPair:
    """Layer ``layer``, head ``head`` of both captures and B − A on the aligned tokens."""
    if not 0 <= layer < comparison.num_layers or not 0 <= head < comparison.num_heads:
        raise InvalidRequestError(f"layer {layer}, head {head} does not exist: the models have layers "
                                  f"0–{comparison.num_layers - 1} and heads 0–{comparison.num_heads - 1}")
    weights_a = comparison.capture_a.weights[layer][head]
    weights_b = comparison.capture_b.weights[layer][head]
    pairs = comparison.alignment.pairs
    difference = weights_b[np.ix_(pairs[:, 1], pairs[:, 1])] - weights_a[np.ix_(pairs[:, 0], pairs[:, 0])]
    pair_labels = tuple(f"{a}: {comparison.token_label((a, b))}" for a, b in pairs)
    query_row = int(np.flatnonzero(pairs[:, 0] == comparison.query[0])[0])
    rows = compare_rows(comparison.rows_a[layer, head], comparison.rows_b[layer, head], pairs)
    return HeadPair(layer=layer, head=head, weights_a=weights_a, weights_b=weights_b,
                    difference=difference.astype(np.float32),
                    labels_a=tuple(token_labels(comparison.tokens_a)),
                    labels_b=tuple(token_labels(comparison.tokens_b)),
                    pair_labels=pair_labels, query=comparison.query, query_row=query_row, query_a=rows.aligned_a,
                    query_b=rows.aligned_b)


# ------------------------------------------------------------------------------------------------ JSON

def _floats(array: np.ndarray | None) -> list | None:
    return None if array is None else np.round(np.asarray(array, np.float64), 6).tolist()


def comparison_json(comparison: Comparison, sentence: str) -> dict:
    """The numbers of a comparison as JSON-ready data (the CLI writes it; the page offers it as a download), with
    ``sentence``, :func:`inspector.charts.sentences.compare.comparison_sentence` in the reader's language."""
    out = comparison.output
    keys = None if comparison.keys is None else [
        {"a": a, "b": b, "token": comparison.token_label((a, b))} for a, b in comparison.keys]
    heads = []
    for layer, head in comparison.ranked.tolist():
        row = {"layer": layer, "head": head, "js": round(float(comparison.js[layer, head]), 6),
               "entropy_change": round(float(comparison.entropy_change[layer, head]), 6)}
        if comparison.key_shift is not None:
            row["key_shift"] = round(float(comparison.key_shift[layer, head]), 6)
        heads.append(row)
    return {
        "model_a": comparison.model_a, "model_b": comparison.model_b,
        "text_a": comparison.text_a, "text_b": comparison.text_b,
        "tokens_a": list(comparison.tokens_a), "tokens_b": list(comparison.tokens_b),
        "alignment": {"pairs": comparison.alignment.pairs.tolist(), "kinds": list(comparison.alignment.kinds),
                      "differs_a": comparison.alignment.differs_a.tolist(),
                      "differs_b": comparison.alignment.differs_b.tolist()},
        "query": {"a": comparison.query[0], "b": comparison.query[1],
                  "token": comparison.token_label(comparison.query)},
        "keys": keys, "backend": comparison.backend,
        "js": _floats(comparison.js), "entropy_change": _floats(comparison.entropy_change),
        "key_shift": _floats(comparison.key_shift), "key_mass_a": _floats(comparison.key_mass_a),
        "key_mass_b": _floats(comparison.key_mass_b), "ranked_heads": heads,
        "moved_heads": comparison.moved_heads,
        "thresholds": {"key_shift": SHIFT_THRESHOLD, "js": JS_THRESHOLD},
        "output": {"kind": out.kind, "change": out.change, "top_a": [list(p) for p in out.top_a],
                   "top_b": [list(p) for p in out.top_b], "probability_change": out.probability_change,
                   "note": out.note},
        "sentence": sentence,
    }
