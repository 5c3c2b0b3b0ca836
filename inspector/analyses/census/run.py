"""The census run (:func:`census`): plan the folder, take its lock, measure the pending shards with the local engine
or the Ray engine, write each shard as it finishes, and summarise the folder."""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Literal

from inspector.analyses.batching import STATISTICS
from inspector.analyses.census.exemplar_files import FinishedShard, write_exemplar_files, write_shard_exemplars
from inspector.analyses.census.exemplars import check_exemplars
from inspector.analyses.census.input import CensusInput, read_input
from inspector.analyses.census.measure import (
    DEFAULT_BATCH_TOKENS,
    RowError,
    TextCensus,
    measure_rows,
    resolved_backend,
    special_token_names,
)
from inspector.analyses.census.ray_engine import run_ray
from inspector.analyses.census.store import (
    FORMAT_VERSION,
    CensusFolderError,
    CensusPlan,
    check_resumable,
    code_version,
    describe_model,
    folder_lock,
    now,
    shard_path,
    write_json,
    write_shard,
)
from inspector.analyses.census.summary import STATISTIC_UNITS, CensusSummary, ReportLines, finish
from inspector.analyses.census.threads import ask_strict_cpu_math
from inspector.analyses.metrics import HealthThresholds
from inspector.base.errors import InvalidRequestError
from inspector.base.progress import Progress, print_progress
from inspector.core.loading import LoadedModel

Engine = Literal["local", "ray"]
ENGINES: tuple[Engine, ...] = ("local", "ray")
DEFAULT_SHARD_SIZE = 1000


def _plan(spec: str, loaded: LoadedModel, data: CensusInput, out: Path, *, engine: str, truncate: bool,
          limit: int | None, shard_size: int, batch_tokens: int, exemplars: int, exemplar_seed: int) -> CensusPlan:
    info = loaded.info
    manifest = {
        "format_version": FORMAT_VERSION,
        # What makes a statistic 0 by construction on this model (a causal mask; special tokens it never adds).
        "model": {**describe_model(spec, info), "causal": info.causal, "special_tokens": special_token_names(loaded)},
        "code_version": code_version(),
        "statistics": list(STATISTICS),
        "statistic_units": STATISTIC_UNITS,
        "shape": [info.num_layers, info.num_heads],
        "layout": "each statistic column is a fixed-size list of layers × heads float32, layer-major "
                  "(flat index = layer · heads + head)",
        "input": {"paths": [str(p) for p in data.paths], "column": data.column, "rows": len(data.rows),
                  "limit": limit, "truncate": truncate, "fingerprint": data.fingerprint},
        "shard_size": shard_size,
        "batch_tokens": batch_tokens,
        "exemplars": exemplars,
        "exemplar_seed": exemplar_seed,
        "engine": engine,
        "started": now(),
        "finished": None,
        "runs": [],
    }
    return CensusPlan(out=out, manifest=manifest, pending={}, total_rows=len(data.rows))


def progress_note(done: int, total: int, elapsed: float, kept: int = 0) -> str:
    """The census's progress line: texts done, texts/s and the time left at that pace. The rate counts only the
    texts this run measured: ``kept`` texts an earlier run wrote are done but took no time (a resumed run once
    reported 449.8 texts/s; issue 33)."""
    rate = (done - kept) / elapsed if elapsed > 0 else 0.0
    eta = (total - done) / rate if rate > 0 else float("nan")
    eta_text = f"{eta:.0f} s" if math.isfinite(eta) else "?"
    return f"census: {done}/{total} texts, {rate:.1f} texts/s, ETA {eta_text}"


def census(spec: str, source: str | Path, *, out: str | Path, engine: Engine = "local", column: str = "text",
           limit: int | None = None, truncate: bool = False, batch_tokens: int = DEFAULT_BATCH_TOKENS,
           shard_size: int = DEFAULT_SHARD_SIZE, backend: str = "auto", device: str = "auto", dtype: str = "auto",
           address: str | None = None, actors: int = 2, gpus_per_actor: float = 0.0, num_cpus: int | None = None,
           thresholds: HealthThresholds = HealthThresholds(), progress: Progress | None = print_progress,
           loaded: LoadedModel | None = None, report: ReportLines | None = None, exemplars: int = 0,
           exemplar_seed: int = 0) -> CensusSummary:
    """Measure every text of ``source`` with model ``spec`` into the folder ``out`` (see the module docstring)
    and return its summary. Resumes a folder holding the same model's census of the same input.

    ``engine``: ``local`` (this process; ``loaded`` may pass the already-loaded model) or ``ray`` (``actors``
    actors, each loading the model once, ``gpus_per_actor`` GPUs each; on the cluster at ``address`` or
    ``RAY_ADDRESS``, else a local Ray with ``num_cpus`` CPUs, shut down afterwards). ``progress``
    (:mod:`inspector.base.progress`; units: texts, the ones kept from an earlier run counted done) is called after
    each shard, its note giving texts/s and an ETA (the default prints it on stderr). A KeyboardInterrupt
    keeps every finished shard; rerun to resume. ``report`` writes its lines into summary.json (:func:`finish`).
    ``exemplars`` K (1…100; 0 = none): also keep per head and statistic the top K contexts and one sampled text per
    decile (drawn with ``exemplar_seed``) in exemplars.parquet and exemplar_texts.parquet
    (:mod:`inspector.analyses.census.exemplars`); K is part of what a resumed folder must match."""
    from inspector.core.loading import compiled_kernel, load_model

    if engine not in ENGINES:
        raise InvalidRequestError(f"unknown engine {engine!r}; choose one of {', '.join(ENGINES)}")
    for option, value in (("--batch-tokens", batch_tokens), ("--shard-size", shard_size)):
        if value < 1:
            raise InvalidRequestError(f"{option} must be at least 1, got {value}")
    if engine == "ray" and actors < 1:
        raise InvalidRequestError(f"--actors must be at least 1, got {actors}")
    check_exemplars(exemplars)
    if gpus_per_actor < 0:
        raise InvalidRequestError(f"--gpus-per-actor must be ≥ 0, got {gpus_per_actor}")
    data = read_input(source, column=column, limit=limit)
    if not data.rows:
        raise InvalidRequestError(f"{source} holds no rows to measure; give a .txt with one text per line, or a "
                                  ".jsonl / .parquet file with a text column")
    if Path(out).exists() and not Path(out).is_dir():
        raise CensusFolderError(f"--out {out} is a file, not a folder; give a new or empty folder")
    ask_strict_cpu_math()  # before this process's first matrix product, if it is still to come
    if loaded is None:
        loaded = load_model(spec, device=device, dtype=dtype)
    if loaded.device.type == "cpu":
        compiled_kernel(wait=True)  # every batch on one CPU attention path, as the Ray actors' (ray_engine.py)
    plan = _plan(spec, loaded, data, Path(out), engine=engine, truncate=truncate, limit=limit,
                 shard_size=shard_size, batch_tokens=batch_tokens, exemplars=exemplars,
                 exemplar_seed=exemplar_seed)
    check_resumable(plan.out, plan.manifest)  # refuse a wrong folder before creating anything in it
    with folder_lock(plan.out):
        return _run_locked(plan, data, loaded, spec=spec, engine=engine, truncate=truncate,
                           batch_tokens=batch_tokens, shard_size=shard_size, backend=backend, device=device,
                           dtype=dtype, address=address, actors=actors, gpus_per_actor=gpus_per_actor,
                           num_cpus=num_cpus, thresholds=thresholds, progress=progress, report=report)


def _run_locked(plan: CensusPlan, data: CensusInput, loaded: LoadedModel, *, spec: str, engine: Engine,
                truncate: bool, batch_tokens: int, shard_size: int, backend: str, device: str, dtype: str,
                address: str | None, actors: int, gpus_per_actor: float, num_cpus: int | None,
                thresholds: HealthThresholds, progress: Progress | None, report: ReportLines | None,
                ) -> CensusSummary:
    """:func:`census`'s run, under the folder's lock (read again: a run that finished meanwhile wrote shards)."""
    existing = check_resumable(plan.out, plan.manifest)
    if existing is not None:
        plan.manifest["started"] = existing["started"]
        plan.manifest["runs"] = existing.get("runs", [])
    (plan.out / "shards").mkdir(parents=True, exist_ok=True)
    shards = math.ceil(len(data.rows) / shard_size)
    for shard in range(shards):
        if not shard_path(plan.out, shard).exists():
            plan.pending[shard] = data.rows[shard * shard_size:(shard + 1) * shard_size]
    run = {"engine": engine, "started": now(), "finished": None, "shards_written": 0,
           "shards_kept": shards - len(plan.pending)}
    plan.manifest["runs"].append(run)
    write_json(plan.out / "manifest.json", plan.manifest)
    shape = (loaded.info.num_layers, loaded.info.num_heads)
    done_rows = sum(min(shard_size, len(data.rows) - s * shard_size) for s in range(shards) if s not in plan.pending)
    started = time.perf_counter()
    counter = {"rows": done_rows}

    exemplars = plan.manifest["exemplars"]

    finished: dict[int, FinishedShard] = {}  # this run's shards' exemplar data, not read back at the end

    def shard_done(shard: int, measured: list[TextCensus], errors: list[RowError]) -> None:
        if exemplars:  # before the shard's Parquet file, which marks it complete
            top = write_shard_exemplars(plan.out, shard, measured, exemplars)
        extremes = write_shard(plan.out, shard, measured, errors, shape, exemplars=bool(exemplars))
        if exemplars:
            finished[shard] = FinishedShard(top=top, extremes=extremes, tokens=[m.exemplars.tokens for m in measured],
                                            texts=[m.text for m in measured])
        run["shards_written"] += 1
        counter["rows"] += len(plan.pending[shard])
        if progress is not None:
            done, total = counter["rows"], len(data.rows)
            progress(done, total, progress_note(done, total, time.perf_counter() - started, kept=done_rows))

    try:
        if plan.pending:
            if engine == "local":
                chosen_backend = resolved_backend(loaded, backend)
                for shard, rows in plan.pending.items():
                    measured, errors = measure_rows(loaded, rows, batch_tokens=batch_tokens, truncate=truncate,
                                                    backend=chosen_backend, exemplars=exemplars)
                    shard_done(shard, measured, errors)
            else:
                run_ray(plan, spec=spec, shard_done=shard_done, batch_tokens=batch_tokens, truncate=truncate,
                        backend=backend, device=device, dtype=dtype, address=address, actors=actors,
                        gpus_per_actor=gpus_per_actor, num_cpus=num_cpus, exemplars=exemplars)
    finally:
        run["finished"] = now()
        write_json(plan.out / "manifest.json", plan.manifest)
    summary = finish(plan.out, thresholds=thresholds, report=report)
    if exemplars:
        write_exemplar_files(plan.out, plan.manifest["exemplar_seed"], finished)
    return summary

