"""The row sink's steps on int64 keys (:class:`inspector.analyses.census.exemplars.RowCandidates`): a batch's top
rows of each cell (layer, statistic, head) past a cut-off, the distinct chosen rows and their weights, and each
chosen row's heaviest keys. Each runs on any device in torch, and on the CPU in NumPy where NumPy's partition,
count, flatnonzero and take are several times faster than torch's on the census's small batches (about ten texts of
10–60 tokens): their per-call cost, not the rows, is the time there. Both paths give the same rows in the same
order (tests/test_census_exemplars.py checks them against a sort by hand)."""

from __future__ import annotations

import numpy as np
import torch

from inspector.analyses.batching import TOP_KEYS

MISSING = torch.iinfo(torch.int64).min  # the key of a row that does not count
# Whether CPU tensors take the NumPy path (tests switch it off to run the other devices' torch path on the CPU).
NUMPY_ON_CPU = True
POSITION_BITS = 24  # a key position below 2^24 shares one int64 with its weight's bits


def _numpy(tensor: torch.Tensor) -> bool:
    return NUMPY_ON_CPU and tensor.device.type == "cpu"


def top_rows_of_cells(cells: torch.Tensor, thresholds: torch.Tensor | None, shard_of_row: torch.Tensor | None,
                      k: int) -> torch.Tensor:
    """Where, in the flat order of ``cells`` (C, W) int64 keys (a cell's keys differ; MISSING: no row), lie the
    top k rows of each cell and shard that are at or above the shard's ``thresholds`` (C, G), or above MISSING
    without them: at most k a cell and shard, (P,) ascending. ``shard_of_row``: (1, W) each row's shard (0…G−1),
    None for one shard. A cell's k-th highest key is looked for only where more than k of its rows pass the
    threshold: once a shard has K rows, in a few cells of a batch. On the CPU in NumPy, whose partition, count and
    flatnonzero are 4–5× faster than torch's topk, sum and nonzero on the census's rows of 100–500 keys."""
    if _numpy(cells):
        return torch.from_numpy(_top_rows_numpy(cells.numpy(), None if thresholds is None else thresholds.numpy(),
                                                None if shard_of_row is None else shard_of_row.numpy(), k))
    return _top_rows_torch(cells, thresholds, shard_of_row, k)


def _top_rows_torch(cells: torch.Tensor, thresholds: torch.Tensor | None, shard_of_row: torch.Tensor | None,
                    k: int) -> torch.Tensor:
    """:func:`top_rows_of_cells` on any device."""
    shards = 1 if shard_of_row is None else int(shard_of_row.max()) + 1
    least = torch.full((len(cells), shards), MISSING + 1, dtype=torch.int64, device=cells.device) \
        if thresholds is None else thresholds.clamp_min(MISSING + 1)
    width = cells.shape[-1]
    of_row = torch.zeros(width, dtype=torch.int64, device=cells.device) if shard_of_row is None else shard_of_row[0]
    chosen = (cells >= least[:, of_row]).reshape(-1).nonzero().squeeze(1)
    group = chosen // width * shards + of_row[chosen % width]  # cell · G + shard
    crowded = (torch.bincount(group, minlength=len(cells) * shards) > k).nonzero().squeeze(1)
    if len(crowded):
        cell, shard = crowded // shards, crowded % shards
        mine = torch.where(of_row[None, :] == shard[:, None], cells[cell], MISSING)
        least[cell, shard] = torch.maximum(least[cell, shard], mine.topk(k, dim=-1).values[:, -1])
        chosen = chosen[cells.reshape(-1)[chosen] >= least.reshape(-1)[group]]
    return chosen


def _top_rows_numpy(cells: np.ndarray, thresholds: np.ndarray | None, shard_of_row: np.ndarray | None,
                    k: int) -> np.ndarray:
    """:func:`top_rows_of_cells` in NumPy."""
    shards = 1 if shard_of_row is None else int(shard_of_row.max()) + 1
    least = np.full((len(cells), shards), MISSING + 1, np.int64) if thresholds is None else \
        np.maximum(thresholds, MISSING + 1)
    width = cells.shape[-1]
    of_row = np.zeros(width, np.int64) if shard_of_row is None else shard_of_row[0]
    chosen = np.flatnonzero(cells >= (least if shards == 1 else least[:, of_row]))  # past the threshold
    group = chosen // width * shards + (0 if shards == 1 else of_row[chosen % width])  # cell · G + shard
    crowded = np.flatnonzero(np.bincount(group, minlength=len(cells) * shards) > k)
    if len(crowded):  # then only the k highest of those cells' rows
        cell, shard = crowded // shards, crowded % shards
        mine = cells[cell] if shards == 1 else np.where(of_row[None, :] == shard[:, None], cells[cell], MISSING)
        least[cell, shard] = np.maximum(least[cell, shard], np.partition(mine, width - k, axis=-1)[:, width - k])
        chosen = chosen[cells.reshape(-1)[chosen] >= least.reshape(-1)[group]]
    return chosen


def distinct_rows(rows: torch.Tensor, size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The distinct values of ``rows`` (R,) int64 in [0, size), ascending, and each row's place among them. On the
    CPU by marking them in a table of ``size`` (3× faster than a sort on the census's rows)."""
    if not _numpy(rows):
        return torch.unique(rows, return_inverse=True)
    marked = np.zeros(size, np.bool_)
    marked[rows.numpy()] = True
    distinct = np.flatnonzero(marked)
    place = np.empty(size, np.int64)
    place[distinct] = np.arange(len(distinct))
    return torch.from_numpy(distinct), torch.from_numpy(place[rows.numpy()])


def take_rows(layers: list[torch.Tensor], rows: torch.Tensor) -> torch.Tensor:
    """(R, n): rows ``rows`` (R,) int64, ascending, of the ``layers``' weights (each (B, H, n, n)) seen one after
    another as rows of n — row l · B·H·n + (b · H + h) · n + q. On the CPU NumPy's take into one array (a few
    times faster than torch's indexing on a few thousand rows, and no concatenation after)."""
    n = layers[0].shape[-1]
    per_layer = layers[0].numel() // n
    if not _numpy(rows):
        bounds = torch.searchsorted(rows, torch.arange(1, len(layers), device=rows.device) * per_layer).tolist()
        return torch.cat([weights.reshape(-1, n)[part - layer * per_layer]
                          for layer, (weights, part) in enumerate(zip(layers, rows.tensor_split(bounds)))])
    chosen = rows.numpy()
    taken = np.empty((len(chosen), n), layers[0].numpy().dtype)
    bounds = [0, *np.searchsorted(chosen, np.arange(1, len(layers)) * per_layer).tolist(), len(chosen)]
    for layer, weights in enumerate(layers):
        start, stop = bounds[layer], bounds[layer + 1]
        np.take(weights.numpy().reshape(-1, n), chosen[start:stop] - layer * per_layer, axis=0, out=taken[start:stop])
    return torch.from_numpy(taken)


def heaviest_order(rows: torch.Tensor) -> torch.Tensor:
    """The TOP_KEYS heaviest keys of each row of weights (…, n) as one int64 each (…, ≤ TOP_KEYS), best first:
    weight descending, ties by position (lower first) — a non-negative float32's bits order as the float does,
    and the position fills the low bits, so the keys of a row are unique and one top-k orders them. Weights are
    clipped to [0, 1] first (exp(S − LSE) may round a hair above 1). :func:`heaviest_keys` decodes them."""
    n = rows.shape[-1]
    count = min(TOP_KEYS, n)
    if not _numpy(rows):
        weights = rows.float().clamp(0.0, 1.0)
        position = torch.arange(n, device=rows.device)
        order = (weights.view(torch.int32).long() << POSITION_BITS) + ((1 << POSITION_BITS) - 1 - position)
        return order.topk(count, dim=-1).values
    # On the CPU in NumPy, in place where it can be: a partition, then a sort of the few it keeps, is 2–3× faster
    # than topk on the census's short rows (3,000 rows of 20–120 keys); the keys of a row are unique, so both give
    # the same keys in the same order.
    order = np.clip(rows.float().numpy(), 0.0, 1.0).view(np.int32).astype(np.int64)
    order <<= POSITION_BITS
    order += (1 << POSITION_BITS) - 1 - np.arange(n)
    order.partition(n - count, axis=-1)
    kept = order[..., n - count:]
    kept.sort(axis=-1)
    return torch.from_numpy(kept[..., ::-1].copy())


def heaviest_keys(order: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`heaviest_order`'s int64s (…, ≤ TOP_KEYS) as the exemplars give them: keys (…, TOP_KEYS) int32 and
    weights float32, keys of weight 0 dropped (−1, weight 0), padded to TOP_KEYS (a batch narrower than
    TOP_KEYS tokens)."""
    low = (1 << POSITION_BITS) - 1
    weights = (order >> POSITION_BITS).astype(np.int32).view(np.float32)
    keys = (low - (order & low)).astype(np.int32)
    missing = TOP_KEYS - order.shape[-1]
    if missing:
        keys = np.concatenate([keys, np.zeros((*keys.shape[:-1], missing), np.int32)], axis=-1)
        weights = np.concatenate([weights, np.zeros((*weights.shape[:-1], missing), np.float32)], axis=-1)
    return np.where(weights > 0, keys, -1).astype(np.int32), np.where(weights > 0, weights, 0.0).astype(np.float32)
