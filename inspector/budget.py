"""How much of the n×n attention a request may materialise.

Statistics (entropy, log-sum-exp, sink mass) cost O(layers · heads · n) and are always computed; exact
weights cost layers · heads · n² float32 numbers, which for a 32-layer × 32-head model at 512 tokens is
already 1 GiB. A view keeps every layer's weights — so clicking another layer redraws without a forward —
only while that fits :data:`ALL_LAYERS_WEIGHTS_BUDGET_BYTES`; beyond it, only the layer on screen.
"""

from __future__ import annotations

from inspector.capture import tokenize
from inspector.loading import LoadedModel, ModelInfo

# A 512-token capture of the bundled 6 × 12 model with every layer's weights is 75 MiB; the UI caches a few
# captures, so 256 MiB per capture keeps a handful of long texts in memory on a small server.
ALL_LAYERS_WEIGHTS_BUDGET_BYTES = 256 * 2**20
_FLOAT32_BYTES = 4


def weights_bytes(info: ModelInfo, n_tokens: int) -> int:
    """Bytes of float32 weights for every layer of ``info`` at ``n_tokens``."""
    return info.num_layers * info.num_heads * n_tokens * n_tokens * _FLOAT32_BYTES


def weights_layers_within_budget(info: ModelInfo, n_tokens: int, layer: int,
                                 budget_bytes: int = ALL_LAYERS_WEIGHTS_BUDGET_BYTES) -> tuple[int, ...] | None:
    """None (= every layer) when all layers' weights fit ``budget_bytes``, else just ``(layer,)``."""
    if weights_bytes(info, n_tokens) <= budget_bytes:
        return None
    return (int(layer),)


def count_tokens(loaded: LoadedModel, text: str, *, truncate: bool = False) -> int:
    """Tokens the model will read for ``text`` (special tokens included); raises InvalidTextError as
    :func:`inspector.capture.capture` would, before any forward."""
    encoding, _ = tokenize(loaded, text, truncate=truncate)
    return int(encoding["input_ids"].shape[1])
