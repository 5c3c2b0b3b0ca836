"""The census's Ray engine: the pending shards on Ray Data — a stateful actor per model copy (:class:`CensusWorker`)
runs :func:`inspector.analyses.census.measure.measure_rows`, the local engine's function, on one whole shard a call,
and the driver writes each shard as soon as its rows are back. Ray is imported only here, and only when this engine
runs.

A call is a shard, not a fixed number of rows, so that an actor cuts the shard into the very batches the local
engine cuts it into: a row's float32 values depend on its batch (padding, the batch's shape), and when the actors
took 256 rows a call, 13 of the 3,600 decile samples of the 15,192-text corpus named another text than the local
engine's (a text's value, rounded to 6 decimals, fell on the other side of a rounding step; issue 41). With the same
batches, and numbers no thread count changes (:mod:`inspector.analyses.census.threads`), both engines write the
same bytes. The price: no more actors are busy than there are pending shards."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable

import numpy as np
import torch

from inspector.analyses.batching import STATISTICS, TOP_KEYS
from inspector.analyses.census.exemplars import EXEMPLAR_STATISTICS, ExemplarRows, TextExemplars
from inspector.analyses.census.input import InputRow, row_problem
from inspector.analyses.census.measure import RowError, TextCensus, measure_rows, resolved_backend
from inspector.analyses.census.store import CensusPlan
from inspector.analyses.census.threads import ask_strict_cpu_math, strict_cpu_math_on
from inspector.base.assets import REPO_ROOT
from inspector.base.errors import InspectorError, InvalidRequestError

# ------------------------------------------------------------------------------------------- the Ray engine

def ray_runtime_env(address: str | None = None) -> dict:
    """The ``runtime_env`` Ray workers need to import this code: on a local Ray, this checkout on PYTHONPATH; on a
    cluster, the ``inspector`` and ``kernels`` packages uploaded as ``py_modules`` (the cluster's Python must have
    requirements.txt installed). Offline settings travel along, so workers never reach for the network either."""
    root = REPO_ROOT
    env_vars = {name: os.environ[name] for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_HOME",
                                                     "TRITON_INTERPRET") if name in os.environ}
    if address:
        return {"py_modules": [str(root / "inspector"), str(root / "kernels")], "env_vars": env_vars}
    env_vars["PYTHONPATH"] = os.pathsep.join(p for p in (str(root), os.environ.get("PYTHONPATH", "")) if p)
    return {"env_vars": env_vars}


class CensusWorker:
    """The Ray Data actor: loads the model once (in ``__init__``), then measures each shard it is handed (one input
    row: ``shard`` and its ``rows`` as JSON) with :func:`measure_rows` — the local engine's function, on the same
    rows, so in the same batches — and returns one output row per text (``error`` empty when the row was measured;
    statistics NaN otherwise) — with ``exemplars`` K, also the text's :class:`TextExemplars`. ``strict``: measure in
    MKL's strict mode, as the driver does; else with one thread, as the driver would
    (:mod:`inspector.analyses.census.threads`)."""

    def __init__(self, spec: str, device: str, dtype: str, backend: str, batch_tokens: int, truncate: bool,
                 threads: int, exemplars: int = 0, strict: bool = False) -> None:
        from inspector.core.loading import compiled_kernel, load_model

        if strict:  # the driver's mode (threads.py), asked for before the model's first matrix product
            ask_strict_cpu_math()
        torch.set_num_threads(max(1, threads))  # actors share the machine's cores instead of each taking all
        self.loaded = load_model(spec, device=device, dtype=dtype)
        if self.loaded.device.type == "cpu":
            compiled_kernel(wait=True)  # the driver's CPU attention path (run.py), whatever this process found
        self.backend = resolved_backend(self.loaded, backend)
        self.batch_tokens, self.truncate, self.exemplars = batch_tokens, truncate, exemplars

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        if len(batch["shard"]) != 1:
            raise ValueError(f"a census actor measures one shard a call, got {len(batch['shard'])}")
        rows = [InputRow(int(i), str(o), str(v)) for i, o, v in json.loads(str(batch["rows"][0]))]
        measured, errors = measure_rows(self.loaded, rows, batch_tokens=self.batch_tokens, truncate=self.truncate,
                                        backend=self.backend, exemplars=self.exemplars)
        info = self.loaded.info
        size = info.num_layers * info.num_heads
        by_index = {m.index: m for m in measured}
        reasons = {e.index: e.reason for e in errors}
        out: dict[str, np.ndarray] = {
            "index": np.array([r.index for r in rows], dtype=np.int64),
            "tokens": np.array([by_index[r.index].tokens if r.index in by_index else 0 for r in rows], np.int32),
            "error": np.array([reasons.get(r.index, "") for r in rows], dtype=object),
        }
        blank = np.full(size, np.nan, dtype=np.float32)
        for name in STATISTICS:
            out[name] = np.stack([by_index[r.index].statistics[name].reshape(-1) if r.index in by_index else blank
                                  for r in rows])
        if self.exemplars:
            out.update(_exemplar_columns([by_index.get(r.index) for r in rows], (info.num_layers, info.num_heads)))
        return out


# A text's rows among its batch's top K, packed for the trip from an actor to the driver (one bytes value a row).
_TOP_ROW = np.dtype([("statistic", np.int64), ("layer", np.int64), ("head", np.int64), ("query", np.int64),
                     ("value", np.float64), ("keys", np.int32, (TOP_KEYS,)), ("key_weights", np.float32, (TOP_KEYS,))])


def _exemplar_columns(measured: list[TextCensus | None], shape: tuple[int, int]) -> dict[str, np.ndarray]:
    """Each row's :class:`TextExemplars`: its best rows as fixed-size columns, its top rows packed as bytes and its
    tokens as JSON (ragged values are one Arrow type that way)."""
    full = (len(EXEMPLAR_STATISTICS), *shape)
    query = np.full((len(measured), *full), -1, np.int32)
    value = np.full((len(measured), *full), np.nan)
    keys = np.full((len(measured), *full, TOP_KEYS), -1, np.int32)
    weights = np.zeros((len(measured), *full, TOP_KEYS), np.float32)
    top = np.empty(len(measured), dtype=object)
    tokens = np.empty(len(measured), dtype=object)
    for r, item in enumerate(measured):
        packed = np.zeros(0, _TOP_ROW)
        if item is not None:
            mine = item.exemplars
            query[r], value[r], keys[r], weights[r] = mine.query, mine.value, mine.keys, mine.key_weights
            packed = np.zeros(len(mine.top.rank), _TOP_ROW)
            for name in _TOP_ROW.names:
                packed[name] = getattr(mine.top, name)
        top[r] = packed.tobytes()
        tokens[r] = json.dumps(item.exemplars.tokens if item is not None else [])
    return {"exemplar_query": query, "exemplar_value": value, "exemplar_keys": keys, "exemplar_key_weights": weights,
            "exemplar_top": top, "token_strings": tokens}


def _text_exemplars(batch: dict[str, np.ndarray], position: int, index: int) -> TextExemplars:
    """The inverse of :func:`_exemplar_columns` for one row (input ``index``)."""
    packed = np.frombuffer(bytes(batch["exemplar_top"][position]), _TOP_ROW)
    top = ExemplarRows(kind="top", statistic=packed["statistic"], layer=packed["layer"], head=packed["head"],
                       rank=np.zeros(len(packed), np.int64), text_index=np.full(len(packed), index, np.int64),
                       query=packed["query"], value=packed["value"], keys=packed["keys"],
                       key_weights=packed["key_weights"])
    return TextExemplars(query=np.asarray(batch["exemplar_query"][position]),
                         value=np.asarray(batch["exemplar_value"][position]),
                         keys=np.asarray(batch["exemplar_keys"][position]),
                         key_weights=np.asarray(batch["exemplar_key_weights"][position]), top=top,
                         tokens=tuple(json.loads(str(batch["token_strings"][position]))))


def run_ray(plan: CensusPlan, *, spec: str, shard_done: Callable[[int, list[TextCensus], list[RowError]], None],
             batch_tokens: int, truncate: bool, backend: str, device: str, dtype: str, address: str | None,
             actors: int, gpus_per_actor: float, num_cpus: int | None, exemplars: int = 0) -> None:
    """The pending shards on Ray Data: shards → ``map_batches(CensusWorker)`` on an actor pool, one shard a call →
    this process writes each shard as soon as its rows are back (so an interrupted run keeps its finished shards)."""
    try:
        import ray
    except ImportError as err:
        raise InvalidRequestError("the ray engine needs Ray Data: pip install 'ray[data]' (pinned in "
                                  "requirements.txt), or use --engine local") from err
    address = address or os.environ.get("RAY_ADDRESS") or None
    started_here = not ray.is_initialized()
    if started_here:
        try:
            if address:
                ray.init(address=address, runtime_env=ray_runtime_env(address), log_to_driver=False,
                         logging_level=logging.WARNING)
            else:
                ray.init(num_cpus=num_cpus or os.cpu_count(), include_dashboard=False, log_to_driver=False,
                         runtime_env=ray_runtime_env(), logging_level=logging.WARNING)
        except ConnectionError as err:
            raise InvalidRequestError(f"cannot reach the Ray cluster at {address}: {err} — check --address / "
                                      "RAY_ADDRESS, or leave both unset to start Ray on this machine") from err
    try:
        import ray.data

        context = ray.data.DataContext.get_current()
        context.enable_progress_bars = False  # the census reports its own progress, per shard
        context.print_on_execution_start = False
        layers, heads = plan.manifest["shape"]
        texts: dict[int, str] = {}
        shard_of: dict[int, int] = {}
        expected = {shard: 0 for shard in plan.pending}
        measured: dict[int, list[TextCensus]] = {shard: [] for shard in plan.pending}
        errors: dict[int, list[RowError]] = {shard: [] for shard in plan.pending}
        items = []
        for shard, rows in plan.pending.items():
            kept = []
            for row in rows:
                problem = row_problem(row.value)
                if problem is not None:  # refused here, as measure_rows would: no actor needs to see it
                    errors[shard].append(RowError(row.index, row.origin, problem))
                    continue
                texts[row.index], shard_of[row.index] = row.value, shard
                expected[shard] += 1
                kept.append([row.index, row.origin, row.value])
            if kept:
                items.append({"shard": shard, "rows": json.dumps(kept)})
        received = {shard: 0 for shard in plan.pending}
        for shard in plan.pending:
            if expected[shard] == 0:
                shard_done(shard, [], errors[shard])
        if not items:
            return
        cpus = float(ray.cluster_resources().get("CPU", 1))
        threads = max(1, int(cpus // actors)) if not address else 1
        dataset = ray.data.from_items(items).map_batches(
            CensusWorker, batch_size=1, batch_format="numpy",  # one shard a call
            compute=ray.data.ActorPoolStrategy(size=actors),
            num_gpus=gpus_per_actor or None, num_cpus=1 if gpus_per_actor else min(1.0, cpus / actors),
            fn_constructor_kwargs=dict(spec=spec, device=device, dtype=dtype, backend=backend,
                                       batch_tokens=batch_tokens, truncate=truncate, threads=threads,
                                       exemplars=exemplars, strict=strict_cpu_math_on()))

        def take(batch: dict[str, np.ndarray]) -> None:
            for position, index in enumerate(batch["index"].tolist()):
                shard = shard_of[index]
                reason = str(batch["error"][position])
                if reason:
                    origin = next(r.origin for r in plan.pending[shard] if r.index == index)
                    errors[shard].append(RowError(index, origin, reason))
                else:
                    measured[shard].append(TextCensus(
                        index=index, text=texts[index], tokens=int(batch["tokens"][position]),
                        statistics={name: np.asarray(batch[name][position], np.float32).reshape(layers, heads)
                                    for name in STATISTICS},
                        exemplars=_text_exemplars(batch, position, index) if exemplars else None))
                received[shard] += 1
                if received[shard] == expected[shard]:
                    shard_done(shard, sorted(measured.pop(shard), key=lambda m: m.index), errors.pop(shard))

        try:
            for batch in dataset.iter_batches(batch_size=None, batch_format="numpy"):
                take(batch)  # each shard is written as soon as its last row is back
        except ray.exceptions.RayError as err:
            cause = getattr(err, "cause", None)
            if isinstance(cause, InspectorError):  # e.g. the model cannot be loaded on the workers
                raise type(cause)(str(cause)) from err
            first = (str(cause or err).strip().splitlines() or [type(err).__name__])[-1]
            raise InspectorError(f"the Ray engine failed: {first[:300]} — the finished shards are kept; fix the "
                                 "cause and rerun to resume, or use --engine local") from err
    finally:
        if started_here:
            ray.shutdown()
