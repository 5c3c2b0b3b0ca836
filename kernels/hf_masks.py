"""The mask side of the one attention function (:mod:`kernels.hf`): what its ``AttentionMaskInterface`` entry
(:func:`kernels.hf.inspector_mask`) hands each layer — the 2-D key padding and transformers' index-based pattern, never
an n×n tensor — and the check that the pattern is exactly what the attention function computes (causal or not, a sliding
window, the padding), so a pattern it cannot honour (packed sequences, chunked or custom overlays) is an error, not a
silent difference."""

from __future__ import annotations

import threading
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

import torch

from kernels.reference import visible_keys_mask


class AttentionContractError(ValueError):
    """The model asked the attention function for something it cannot honour exactly."""


@dataclass
class MaskSpec:
    """What :func:`inspector_mask` hands each layer instead of a dense mask.

    ``key_padding_mask``: bool ``(batch, k_len)``, True = real token, or None when nothing is padded.
    ``pattern`` is transformers' index-based mask function for this forward; ``verified`` remembers which
    (causal, window) readings were already checked against it, so the check runs once per forward.
    """

    key_padding_mask: torch.Tensor | None
    pattern: Callable
    q_offset: int
    kv_offset: int
    q_length: int
    kv_length: int
    verified: set = field(default_factory=set)


Value = TypeVar("Value")


class BoundedMemo(Generic[Value]):
    """A process-wide memo shared by every thread: at most ``limit`` entries, the oldest out first. Reads take no
    lock (a dict lookup is atomic); writes do, so that two threads never evict past the bound."""

    def __init__(self, limit: int):
        self._entries: dict[tuple, Value] = {}
        self._limit = limit
        self._lock = threading.Lock()

    def get(self, key: tuple) -> Value | None:
        return self._entries.get(key)

    def __contains__(self, key: tuple) -> bool:
        return key in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def put(self, key: tuple, value: Value) -> None:
        with self._lock:
            if key not in self._entries and len(self._entries) >= self._limit:
                self._entries.pop(next(iter(self._entries)))
            self._entries[key] = value

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


# Mask patterns already found to be exactly (causal, window) on their own, whatever the padding: transformers builds a
# new pattern function each forward, but the plain ones (causal, bidirectional, a sliding window of a given size) are
# the same code over the same numbers each time (:func:`_pattern_key`). One entry per pattern and shape.
_VERIFIED_PATTERNS: BoundedMemo[bool] = BoundedMemo(limit=256)


def _pattern_key(pattern: object, depth: int = 0) -> tuple | None:
    """A hashable description of a mask pattern that fixes what it computes: its code, its defaults and what its
    closure holds (numbers, strings, None, and other such patterns); None where the pattern holds anything else (a
    tensor: transformers' padding and packed-sequence patterns), whose check then runs every forward."""
    if depth > 8:
        return None
    if pattern is None or isinstance(pattern, (bool, int, float, str)):
        return (type(pattern).__name__, pattern)
    if isinstance(pattern, tuple):
        parts = tuple(_pattern_key(part, depth + 1) for part in pattern)
        return None if any(part is None for part in parts) else ("tuple", parts)
    if not isinstance(pattern, types.FunctionType):
        return None
    cells = []
    for cell in pattern.__closure__ or ():
        try:
            content = cell.cell_contents
        except ValueError:  # an empty cell
            return None
        cells.append(_pattern_key(content, depth + 1))
    defaults = tuple(_pattern_key(value, depth + 1) for value in pattern.__defaults__ or ())
    if any(part is None for part in (*cells, *defaults)):
        return None
    return ("function", pattern.__code__, tuple(cells), defaults)


def verify_mask(spec: MaskSpec, *, causal: bool, window: int | None, q_len: int, k_len: int,
                 device: torch.device) -> None:
    """Check that (causal, window, padding) reproduces transformers' own mask pattern: once per forward, or once per
    process and shape for a pattern that holds only numbers (:func:`_pattern_key`)."""
    key = (causal, window, q_len, k_len)
    if key in spec.verified:
        return
    if (spec.q_length, spec.kv_length) != (q_len, k_len):
        raise AttentionContractError(f"mask sizes ({spec.q_length}, {spec.kv_length}) do not match attention "
                                     f"inputs ({q_len}, {k_len}); static caches are not supported")
    batch = spec.key_padding_mask.shape[0] if spec.key_padding_mask is not None else 1
    pattern_key = _pattern_key(spec.pattern)
    # A pattern that holds only numbers is checked without the padding — a stronger statement (padding hides
    # nothing), true for any padding — once per process for its shape, not once per forward.
    remembered = None if pattern_key is None else (pattern_key, *key, spec.q_offset, spec.kv_offset, batch)
    if remembered is not None and remembered in _VERIFIED_PATTERNS:
        spec.verified.add(key)
        return
    padding = spec.key_padding_mask if remembered is None else None
    block = max(1, 2**22 // max(1, batch * k_len))  # at most ~4M booleans at a time
    batch_idx = torch.arange(batch, device=device)[:, None, None, None]
    head_idx = torch.zeros(1, dtype=torch.long, device=device)[None, :, None, None]
    kv_idx = (torch.arange(k_len, device=device) + spec.kv_offset)[None, None, None, :]
    for start in range(0, q_len, block):
        rows = slice(start, min(start + block, q_len))
        q_idx = (torch.arange(rows.start, rows.stop, device=device) + spec.q_offset)[None, None, :, None]
        theirs = spec.pattern(batch_idx, head_idx, q_idx, kv_idx)
        if padding is not None:
            theirs = theirs & padding[:, None, None, :]
        ours = visible_keys_mask(q_len, k_len, causal=causal, window=window, key_padding_mask=padding, rows=rows,
                                 device=device)
        if not torch.equal(*torch.broadcast_tensors(theirs, ours)):
            raise AttentionContractError(
                "this model's attention mask (e.g. packed sequences, chunked attention or a custom pattern) is not "
                f"causal={causal} + sliding window={window} + padding, which is all the inspector backend can express")
    spec.verified.add(key)
    if remembered is not None:
        _VERIFIED_PATTERNS.put(remembered, True)
