"""The one formula for what the n×n attention costs, and the token counts a plan starts from (issue 39: one bytes
formula for every planner, check and estimate).

Statistics (entropy, log-sum-exp, sink mass) cost O(layers · heads · n) and are always computed; exact weights cost
layers · heads · n² float32 numbers, which for a 32-layer × 32-head model at 512 tokens is already 1 GiB.
:func:`attention_bytes` is that product, with the copies a job keeps at once; :func:`tokens_within` is its inverse.
:func:`weight_bytes` is the same product for any number of heads, and for shapes that are not n × n (a band of
keys, a block of queries): every bytes figure of weights or scores, in the library, the lessons and the benchmarks,
is one of the two.
The plan that decides what a request may keep is :func:`inspector.serving.run.plan`.
"""

from __future__ import annotations

import math

from inspector.base.limits import ALL_LAYERS_WEIGHTS_BUDGET_BYTES
from inspector.core.forward import encode_text
from inspector.core.loading import LoadedModel, ModelInfo

_FLOAT32_BYTES = 4


def weight_bytes(heads: int, n: int, copies: float = 1, *, keys: int | None = None) -> int:
    """Bytes of ``copies`` copies of ``heads`` float32 attention weight (or score) matrices of n queries × ``keys``
    keys (None = n, the n×n weights): copies · heads · n · keys · 4. ``heads`` counts every (layer, head) matrix
    held; ``keys`` serves the shapes that are not n × n (a sliding window's band, a block of queries against every
    key)."""
    return int(copies * heads * n * (n if keys is None else keys) * _FLOAT32_BYTES)


def attention_bytes(info: ModelInfo, n: int, copies: float = 1, *, layers: int | None = None) -> int:
    """Bytes of ``copies`` copies of the float32 n×n attention weights of ``layers`` layers (None = every layer of
    ``info``): copies · layers · heads · n² · 4 (:func:`weight_bytes`). The one formula every planner, check and
    estimate uses."""
    count = info.num_layers if layers is None else layers
    return weight_bytes(count * info.num_heads, n, copies)


def tokens_within(info: ModelInfo, budget_bytes: int, copies: float = 1, *, layers: int | None = None) -> int:
    """The longest n whose :func:`attention_bytes` (same ``copies`` and ``layers``) fits ``budget_bytes``."""
    return math.isqrt(int(budget_bytes // attention_bytes(info, 1, copies, layers=layers)))


def max_tokens(info: ModelInfo, budget_bytes: int = ALL_LAYERS_WEIGHTS_BUDGET_BYTES) -> int:
    """The longest text a request that keeps weights may have: the model's positions, or fewer if one layer's
    weights (heads · n² float32) at that length would not fit ``budget_bytes``."""
    return min(info.max_positions, tokens_within(info, budget_bytes, layers=1))


def count_tokens(loaded: LoadedModel, text: str, *, truncate: bool = False) -> int:
    """Tokens the model will read for ``text`` (special tokens included); raises InvalidTextError as
    :func:`inspector.core.capture.capture` would, before any forward."""
    return len(encode_text(loaded, text, truncate=truncate).tokens)
