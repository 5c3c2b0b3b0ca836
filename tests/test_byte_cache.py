"""Issue 33, item 11: the app's large results are cached within a byte budget, not a count of entries."""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

from inspector.core.capture import capture
from views.byte_cache import ByteCache, byte_cached, nbytes

MIB = 2**20


def test_results_are_counted_by_the_bytes_they_hold(tiny_bert):
    array = np.zeros((256, 1024), dtype=np.float32)  # 1 MiB
    assert MIB <= nbytes(array) < MIB + 1024
    assert 2 * MIB <= nbytes({"a": array, "b": [array.copy()]}) < 2 * MIB + 4096
    assert nbytes((array, array)) < MIB + 1024  # one object counted once
    chart = alt.Chart(pd.DataFrame({"x": np.arange(2**17, dtype=np.int64)})).mark_point()
    assert nbytes(chart) >= MIB  # a chart is as large as its data
    result = capture(tiny_bert, "The cat sat on the mat.", weights="all")
    weights = sum(w.nbytes for w in result.weights.values())
    assert weights < nbytes(result) < weights + 64 * 1024


def test_the_least_recently_used_results_go_once_the_budget_is_full():
    cache = ByteCache(lambda: 3 * MIB)
    calls = []

    @byte_cached(cache)
    def block(name: str, _ignored: int = 0) -> np.ndarray:
        calls.append(name)
        return np.zeros(MIB // 8)  # 1 MiB of float64

    for name in "abc":
        block(name)
    block("a", _ignored=5)  # a hit: the underscore argument is not part of the key; "a" is now the most recent
    block("d")  # evicts "b", the least recently used
    assert calls == ["a", "b", "c", "d"] and len(cache) == 3 and cache.bytes <= 3 * MIB
    block("b")
    block("a")
    assert calls == ["a", "b", "c", "d", "b"]
    block.clear()
    assert len(cache) == 0 and cache.bytes == 0


def test_a_result_larger_than_the_budget_is_returned_and_not_kept():
    cache = ByteCache(lambda: MIB)
    big = byte_cached(cache)(lambda n: np.zeros(n))
    assert big(MIB).shape == (MIB,)  # 8 MiB
    assert len(cache) == 0 and cache.bytes == 0


def test_entries_expire_after_their_time():
    cache = ByteCache(lambda: MIB, ttl_s=-1.0)
    cache.put(("k",), "value", 10)
    assert cache.get(("k",)) == (False, None) and cache.bytes == 0
