"""Two models of different shapes on one text (issue 27): MiniLM (6 layers × 12 heads, WordPiece, bidirectional)
against Gemma 3 270M (18 × 4, SentencePiece, causal). Heads have no partner across such models and the tokenizers
split the text differently, so :mod:`inspector.analyses.compare`'s head-by-head comparison does not apply; this
module compares what *is* comparable, and says what is not.

- **Entropy by depth**: each layer's mean normalised entropy (entropy / log(visible keys), so a causal row that sees
  3 keys and a bidirectional row that sees 15 are on one 0–1 scale; :func:`inspector.analyses.metrics.head_entropy`)
  at its relative depth (layer + ½) / layers, so 6 and 18 layers lie on one 0–1 axis.
- **Attention by segment**: the text is cut into **segments**, the finest pieces both tokenizers agree on: a
  boundary is kept where *both* tokenizations start a token (character offsets), so every token of either model lies
  inside one segment. The query is a segment (default: the last one with a letter in it), read at its last token (in
  a causal model the only one that sees the whole segment); its attention row, averaged over every head and layer,
  is summed per segment, plus one bucket for the special tokens ([CLS], [SEP], <bos> — where either model parks
  attention). The two distributions are compared by the Jensen–Shannon divergence (nats, 0 … ln 2) over the
  segments and the special bucket.
- **Outputs are not comparable**: an embedding against a next-token distribution, or two vocabularies; the result
  says so (``output_note``) rather than inventing a number.

Pure NumPy over two :class:`~inspector.core.capture.Capture` s with every layer's weights.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

import numpy as np

from inspector.analyses.divergence import JS_MAX, jensen_shannon_numpy
from inspector.analyses.metrics import head_entropy
from inspector.base.errors import InvalidRequestError
from inspector.core.capture import Capture


@dataclass(frozen=True)
class ShapesComparison:
    """One text through two models of different shapes.

    segments: the text's segments (both tokenizers' common pieces), in order; query: the index of the query segment.
    depth_a: (layers_a,) float64 in (0, 1) — relative depth of each layer of A; entropy_a: (layers_a,) float64 —
    the layer's mean normalised entropy (NaN if no row sees two keys); likewise depth_b, entropy_b.
    attention_a: (segments + 1,) float64 — the query's attention in A, mean over layers and heads, per segment, the
    last entry the special tokens; sums to 1. attention_b likewise. js: JS divergence of the two (nats).
    shape_a, shape_b: (layers, heads, key/value heads). tokens_a, tokens_b: token counts."""

    model_a: str
    model_b: str
    text: str
    segments: tuple[str, ...]
    query: int
    depth_a: np.ndarray
    entropy_a: np.ndarray
    depth_b: np.ndarray
    entropy_b: np.ndarray
    attention_a: np.ndarray
    attention_b: np.ndarray
    js: float
    shape_a: tuple[int, int, int]
    shape_b: tuple[int, int, int]
    tokens_a: int
    tokens_b: int
    causal_a: bool
    causal_b: bool

    def __post_init__(self) -> None:
        n = len(self.segments)
        if not 0 <= self.query < n:
            raise ValueError(f"ShapesComparison.query {self.query} outside 0–{n - 1}")
        for side in ("a", "b"):
            depth, entropy = getattr(self, f"depth_{side}"), getattr(self, f"entropy_{side}")
            attention = getattr(self, f"attention_{side}")
            if depth.shape != entropy.shape or depth.ndim != 1 or not ((depth > 0) & (depth < 1)).all():
                raise ValueError(f"ShapesComparison.depth_{side}/entropy_{side} must be (layers,), depth in (0, 1)")
            if attention.shape != (n + 1,) or abs(attention.sum() - 1) > 1e-6 or (attention < 0).any():
                raise ValueError(f"ShapesComparison.attention_{side} must be a distribution over {n} segments + 1")
        if not 0 <= self.js <= JS_MAX + 1e-9:
            raise ValueError("ShapesComparison.js must lie in [0, ln 2]")


def _visible_starts(result: Capture) -> np.ndarray:
    """(q_len,) int64 — where each token's first visible character is (a byte-level or SentencePiece token's span
    may start at the space before its word, a WordPiece token's never does), −1 for special tokens and tokens
    without a span."""
    out = np.full(len(result.tokens), -1, dtype=np.int64)
    for position, ((start, end), special) in enumerate(zip(np.asarray(result.offsets).tolist(),
                                                           result.special.tolist())):
        span = result.text[start:end]
        if not special and span.strip():
            out[position] = start + len(span) - len(span.lstrip())
    return out


def common_segments(text: str, a: Capture, b: Capture) -> list[tuple[int, int]]:
    """(start, end) character spans of the segments: cut where both tokenizations start a token, each segment
    stripped of surrounding spaces; empty segments dropped."""
    starts_a, starts_b = set(_visible_starts(a).tolist()), set(_visible_starts(b).tolist())
    cuts = sorted((starts_a & starts_b) - {-1} | {0})
    ends = cuts[1:] + [len(text)]
    segments = []
    for start, end in zip(cuts, ends):
        piece = text[start:end]
        left = len(piece) - len(piece.lstrip())
        stripped = piece.strip()
        if stripped:
            segments.append((start + left, start + left + len(stripped)))
    return segments


def _segment_of_tokens(result: Capture, segments: list[tuple[int, int]]) -> np.ndarray:
    """(q_len,) int64 — the segment holding each token's first visible character, −1 for special tokens."""
    starts = np.array([start for start, _ in segments])
    visible = _visible_starts(result)
    found = np.searchsorted(starts, visible, side="right") - 1
    return np.where(visible >= 0, np.maximum(found, 0), -1).astype(np.int64)


def _has_letter(text: str) -> bool:
    return any(unicodedata.category(ch).startswith("L") for ch in text)


def _query_attention(result: Capture, token_segments: np.ndarray, query: int, n_segments: int) -> np.ndarray:
    """(n_segments + 1,) — the query segment's last token's row, mean over layers and heads, per segment + specials."""
    positions = np.flatnonzero(token_segments == query)
    if not len(positions):
        raise InvalidRequestError(f"{result.model_name} has no token in the query segment")
    row = np.mean([result.weights[layer][:, positions[-1], :].mean(axis=0) for layer in range(result.num_layers)],
                  axis=0).astype(np.float64)  # (k_len,)
    buckets = np.where(token_segments >= 0, token_segments, n_segments)
    out = np.bincount(buckets, weights=row, minlength=n_segments + 1)
    return out / out.sum()


def _entropy_by_depth(result: Capture) -> tuple[np.ndarray, np.ndarray]:
    layers = result.num_layers
    with np.errstate(invalid="ignore"):
        normalized = head_entropy(result).normalized.astype(np.float64)  # (layers, heads)
        entropy = np.array([np.nanmean(row) if np.isfinite(row).any() else np.nan for row in normalized])
    return (np.arange(layers) + 0.5) / layers, entropy


def compare_shapes(a: Capture, b: Capture, shape_a: tuple[int, int, int], shape_b: tuple[int, int, int],
                   query: int | None = None) -> ShapesComparison:
    """Compare two captures of one text by different models (module docstring). ``shape_*``: (layers, heads,
    key/value heads) of each model; ``query``: a segment index (None = the last segment with a letter)."""
    if a.text != b.text:
        raise InvalidRequestError("models of different shapes are compared on one text; the two captures differ")
    missing = [layer for cap in (a, b) for layer in range(cap.num_layers) if layer not in cap.weights]
    if missing:
        raise InvalidRequestError(f"a capture lacks layer {missing[0]}'s weights; the comparison needs every layer's")
    spans = common_segments(a.text, a, b)
    if not spans:
        raise InvalidRequestError("the text has no piece both tokenizers read; type a sentence")
    segments = tuple(a.text[s:e] for s, e in spans)
    seg_a, seg_b = _segment_of_tokens(a, spans), _segment_of_tokens(b, spans)
    present = [i for i in range(len(spans)) if (seg_a == i).any() and (seg_b == i).any()]
    if query is None:
        lettered = [i for i in present if _has_letter(segments[i])]
        query = (lettered or present or [len(spans) - 1])[-1]
    if not 0 <= query < len(spans) or query not in present:
        raise InvalidRequestError(f"query segment {query} does not exist: pick one of 0–{len(spans) - 1} "
                                  f"({', '.join(segments[:5])}{' …' if len(spans) > 5 else ''})")
    attention_a = _query_attention(a, seg_a, query, len(spans))
    attention_b = _query_attention(b, seg_b, query, len(spans))
    depth_a, entropy_a = _entropy_by_depth(a)
    depth_b, entropy_b = _entropy_by_depth(b)
    js = float(np.clip(jensen_shannon_numpy(attention_a, attention_b, smoothing=0.0), 0.0, JS_MAX))
    return ShapesComparison(model_a=a.model_name, model_b=b.model_name, text=a.text, segments=segments, query=query,
                            depth_a=depth_a, entropy_a=entropy_a, depth_b=depth_b, entropy_b=entropy_b,
                            attention_a=attention_a, attention_b=attention_b, js=js, shape_a=tuple(shape_a),
                            shape_b=tuple(shape_b), tokens_a=len(a.tokens), tokens_b=len(b.tokens),
                            causal_a=a.causal, causal_b=b.causal)


def shapes_json(result: ShapesComparison, *, note: str, sentence: str) -> dict:
    """The numbers as JSON-ready data (the CLI writes it; the page offers it), with the words in the reader's
    language (:func:`inspector.charts.sentences.compare.shapes_words`): the output's ``note`` and the ``sentence``."""
    def floats(array: np.ndarray) -> list:
        return [None if not np.isfinite(x) else round(float(x), 6) for x in array]

    return {"kind": "different-shapes", "model_a": result.model_a, "model_b": result.model_b, "text": result.text,
            "shape_a": {"layers": result.shape_a[0], "heads": result.shape_a[1], "kv_heads": result.shape_a[2],
                        "tokens": result.tokens_a, "causal": result.causal_a},
            "shape_b": {"layers": result.shape_b[0], "heads": result.shape_b[1], "kv_heads": result.shape_b[2],
                        "tokens": result.tokens_b, "causal": result.causal_b},
            "segments": list(result.segments), "query": {"segment": result.query,
                                                         "text": result.segments[result.query]},
            "entropy_by_depth": {"a": {"depth": floats(result.depth_a), "entropy": floats(result.entropy_a)},
                                 "b": {"depth": floats(result.depth_b), "entropy": floats(result.entropy_b)}},
            "attention_by_segment": {"a": floats(result.attention_a), "b": floats(result.attention_b),
                                     "last_entry": "special tokens"},
            "js": round(result.js, 6),
            "output": {"comparable": False, "note": note},
            "sentence": sentence}
