"""How much of the n×n attention a request may materialise, decided before any forward.

Statistics (entropy, log-sum-exp, sink mass) cost O(layers · heads · n) and are always computed; exact
weights cost layers · heads · n² float32 numbers, which for a 32-layer × 32-head model at 512 tokens is
already 1 GiB. A request gets a weights budget (:data:`ALL_LAYERS_WEIGHTS_BUDGET_BYTES`, less on a hosted
instance — :mod:`inspector.serving.hosting`) and :func:`plan_request` turns it into three decisions:

- the **token limit** is the smaller of the model's positions and the longest text whose one layer
  (heads · n² floats — the least the page draws) fits the budget; a longer text is refused before the forward;
- every layer's weights are kept — so clicking another layer redraws without a forward — while all of them
  (layers · heads · n²) fit;
- beyond that, only the layer on screen is materialised next to every layer's statistics, with a notice.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from inspector.base.errors import InvalidTextError
from inspector.base.i18n import Notice
from inspector.base.limits import ALL_LAYERS_WEIGHTS_BUDGET_BYTES, MAX_TEXT_CHARS
from inspector.core.forward import encode_text
from inspector.core.loading import LoadedModel, ModelInfo

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


def max_tokens(info: ModelInfo, budget_bytes: int = ALL_LAYERS_WEIGHTS_BUDGET_BYTES) -> int:
    """The longest text a request may have: the model's positions, or fewer if one layer's weights
    (heads · n² float32) at that length would not fit ``budget_bytes``."""
    by_memory = math.isqrt(budget_bytes // (info.num_heads * _FLOAT32_BYTES))
    return min(info.max_positions, by_memory)


def count_tokens(loaded: LoadedModel, text: str, *, truncate: bool = False) -> int:
    """Tokens the model will read for ``text`` (special tokens included); raises InvalidTextError as
    :func:`inspector.core.capture.capture` would, before any forward."""
    return len(encode_text(loaded, text, truncate=truncate).tokens)


@dataclass(frozen=True)
class RequestPlan:
    """What one request will compute, decided before the forward.

    n_tokens: tokens the model reads (special tokens included), ≤ ``max_tokens``. weights_layers: layers whose
    exact weights to keep — None = every layer — for :func:`inspector.core.capture.capture`'s ``weights``.
    notice: why fewer than every layer's weights are kept (a :class:`~inspector.core.capture.Notice`), or None.
    """

    n_tokens: int
    max_tokens: int
    weights_layers: tuple[int, ...] | None
    notice: str | None = None

    def __post_init__(self) -> None:
        if not 0 < self.n_tokens <= self.max_tokens:
            raise ValueError(f"RequestPlan.n_tokens {self.n_tokens} is not in 1..max_tokens ({self.max_tokens})")
        if (self.weights_layers is None) != (self.notice is None):
            raise ValueError("RequestPlan.notice must explain exactly the plans that keep fewer layers' weights")


def plan_request(loaded: LoadedModel, text: str, layer: int, *,
                 budget_bytes: int = ALL_LAYERS_WEIGHTS_BUDGET_BYTES, max_chars: int = MAX_TEXT_CHARS) -> RequestPlan:
    """Validate ``text`` for ``loaded`` under ``budget_bytes`` and decide which weights to keep (module docstring).

    Raises :class:`InvalidTextError` — before any forward, and before tokenising a text past ``max_chars`` — for
    an empty text, one past the characters this app reads, or one past the token limit."""
    if isinstance(text, str) and len(text) > max_chars:
        raise InvalidTextError(f"the text has {len(text):,} characters; this app reads at most {max_chars:,} "
                               "(a long paste would stall the page before the model could refuse it) — paste a "
                               "shorter passage")
    info = loaded.info
    n_tokens = count_tokens(loaded, text)  # raises past the model's positions
    limit = max_tokens(info, budget_bytes)
    if n_tokens > limit:
        raise InvalidTextError(f"the text has {n_tokens:,} tokens; {info.name}'s attention weights for one layer "
                               f"({info.num_heads} heads × {n_tokens:,}²) would not fit the "
                               f"{budget_bytes / 2**20:,.0f} MiB this server gives one request, which allows "
                               f"{limit:,} tokens — shorten the text "
                               "or run the app on a machine with a larger INSPECTOR_WEIGHTS_BUDGET_MB")
    layers = weights_layers_within_budget(info, n_tokens, layer, budget_bytes)
    notice = None
    if layers is not None:
        notice = Notice("notice.weights_budget", n=f"{n_tokens:,}", budget=f"{budget_bytes / 2**20:,.0f}",
                        needed=f"{weights_bytes(info, n_tokens) / 2**20:,.0f}", layer=layers[0])
    return RequestPlan(n_tokens=n_tokens, max_tokens=limit, weights_layers=layers, notice=notice)
