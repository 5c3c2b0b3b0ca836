"""Result caches bounded by bytes, not entries (issue 33, item 11).

``st.cache_data(max_entries=8)`` bounds how many results a function keeps, not how large they are: a 440-token
capture of the bundled model with every layer's weights is ~56 MB, a 16-token one 74 kB, and forty different
~440-token texts took a hosted server from 782 to 2,689 MB although the entry counts suggested ~600 MB. Here every
cached result counts its bytes (:func:`nbytes`: NumPy arrays, tensors, data frames, strings, and the dataclasses,
mappings, sequences and chart objects that hold them) into one least-recently-used budget shared by every function
decorated with :func:`byte_cached` in the server process; past it, the oldest results go first. A result larger
than the whole budget is returned and not kept.

Results are shared, not copied (``st.cache_data`` unpickles a copy on each hit): the library's results are frozen
dataclasses that nothing mutates, and Altair charts are not mutated when drawn (the chart caches were already
``st.cache_resource``). The budget is :data:`inspector.base.limits.RESULT_CACHE_BYTES`, or
:data:`~inspector.base.limits.HOSTED_RESULT_CACHE_BYTES` on a hosted instance.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping

import numpy as np
import pandas as pd
import torch

_MAX_DEPTH = 12


def nbytes(value: object) -> int:
    """Bytes ``value`` holds, counting each object once: arrays, tensors and data frames by their buffers, strings
    and bytes by length, containers, dataclasses and plain objects (chart specs) by what they hold."""
    seen: set[int] = set()

    def walk(item: object, depth: int) -> int:
        if id(item) in seen or depth > _MAX_DEPTH:
            return 0
        seen.add(id(item))
        if isinstance(item, np.ndarray):
            return int(item.nbytes)
        if isinstance(item, torch.Tensor):
            return int(item.nelement() * item.element_size())
        if isinstance(item, pd.DataFrame | pd.Series):
            return int(item.memory_usage(deep=True).sum() if isinstance(item, pd.DataFrame)
                       else item.memory_usage(deep=True))
        if isinstance(item, str | bytes | bytearray):
            return sys.getsizeof(item)
        if isinstance(item, int | float | bool | complex) or item is None:
            return 16
        if isinstance(item, Mapping):
            return 64 + sum(walk(k, depth + 1) + walk(v, depth + 1) for k, v in item.items())
        if isinstance(item, list | tuple | set | frozenset):
            return 56 + sum(walk(v, depth + 1) for v in item)
        if dataclasses.is_dataclass(item) and not isinstance(item, type):
            return 64 + sum(walk(getattr(item, f.name, None), depth + 1) for f in dataclasses.fields(item))
        state = getattr(item, "__dict__", None)
        if isinstance(state, dict):  # an Altair chart keeps its data and encodings here
            return 64 + walk(state, depth + 1)
        return sys.getsizeof(item)

    return walk(value, 0)


class ByteCache:
    """A least-recently-used map whose values' bytes together stay within ``budget()`` (read at each insertion,
    so the hosting policy decides it), each kept at most ``ttl_s`` seconds. Thread-safe: sessions run in their own
    threads."""

    def __init__(self, budget: Callable[[], int], ttl_s: float = 3600) -> None:
        self._budget, self._ttl_s = budget, ttl_s
        self._entries: OrderedDict[tuple, tuple[object, int, float]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    @property
    def bytes(self) -> int:
        """Bytes held now."""
        return self._bytes

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: tuple) -> tuple[bool, object]:
        """(True, value) for a live entry (now the most recently used), else (False, None)."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return False, None
            value, size, stored = entry
            if time.monotonic() - stored > self._ttl_s:
                del self._entries[key]
                self._bytes -= size
                return False, None
            self._entries.move_to_end(key)
            return True, value

    def put(self, key: tuple, value: object, size: int) -> None:
        """Keep ``value`` (``size`` bytes), dropping the least recently used entries until all fit; a value larger
        than the whole budget is not kept."""
        budget = self._budget()
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._bytes -= old[1]
            if size > budget:
                return
            while self._entries and self._bytes + size > budget:
                _, (_, dropped, _) = self._entries.popitem(last=False)
                self._bytes -= dropped
            self._entries[key] = (value, size, time.monotonic())
            self._bytes += size

    def clear(self, prefix: tuple = ()) -> None:
        """Drop every entry (whose key starts with ``prefix``)."""
        with self._lock:
            for key in [key for key in self._entries if key[:len(prefix)] == prefix]:
                self._bytes -= self._entries.pop(key)[1]


def byte_cached(cache: ByteCache) -> Callable[[Callable], Callable]:
    """Cache a function's results in ``cache``, keyed by the function and its arguments — except those whose name
    starts with an underscore, as ``st.cache_data`` does (they must not change the result). ``wrapper.clear()``
    drops this function's entries."""

    def decorate(func: Callable) -> Callable:
        signature = inspect.signature(func)
        name = f"{func.__module__}.{func.__qualname__}"

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            key = (name, *((arg, value) for arg, value in bound.arguments.items() if not arg.startswith("_")))
            hit, value = cache.get(key)
            if hit:
                return value
            value = func(*args, **kwargs)
            cache.put(key, value, nbytes(value))
            return value

        wrapper.clear = lambda: cache.clear((name,))
        return wrapper

    return decorate
