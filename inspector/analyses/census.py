"""Corpus census (issue 16): the Heads page's per-head statistics over a whole dataset, batched, resumable, on
this machine or on a Ray cluster — with the same numbers either way.

:func:`census` runs every text through the one attention function (:func:`inspector.core.forward.forward`,
statistics only: no ``weights_layers``), in **padded batches bucketed by length** — texts tokenised in one
tokenizer call per shard, sorted by token count and packed while ``batch size × longest text ≤ batch_tokens`` and
the padding stays under :data:`CPU_MAX_PADDING` (on a GPU :data:`GPU_MAX_PADDING`) of the real tokens — and
records per text and per head
(:data:`STATISTICS`): entropy in nats and normalised entropy (Clark et al. 2019; means over the text's real
queries), the first-token and the largest sink score (Xiao et al. 2023; Gu et al. 2024), the Heads page's
token-category masses ([CLS]/BOS, [SEP]/EOS, punctuation, self, previous, next — Clark et al. 2019), the mean
attention distance, and the token count.

**How the per-key sums are taken without n × n per layer kept.** Entropy comes fused out of the attention
function; the category masses, sink scores and distances need the rows themselves. Asking the request for every
layer's weights would keep all L layers' ``(batch, heads, n, n)`` weights until the forward ends. Instead the
request keeps each layer's queries and keys (``keep=("query", "key")``, O(batch · heads · n · d) per layer, the
size of the hidden states the forward keeps anyway) and its log-sum-exp; after the forward the census
materialises **one layer at a time** with the same exact formula the attention function uses (P = exp(S − LSE),
:func:`kernels.reference.materialize_weights`, or the Triton materialise kernel on a GPU), reduces it at once to
``(batch, heads)`` numbers and drops it. Peak attention memory is one layer's ``batch · heads · n²``, bounded by
the token budget. The reduction sweeps the n × n weights twice: one matrix product (the real queries' indicator
row times P) gives what each key receives, from which the [CLS]/[SEP]/punctuation masses and the sink scores
follow on ``(batch, heads, n)``; self, previous and next are three diagonals (views); the distance-weighted row
sums are the second pass. Row sums (at most n terms) run in float32, everything after them in float64.
:func:`inspector.analyses.batching.batch_statistics` is that reduction; the Heads report
(:mod:`inspector.analyses.heads`) takes its statistics part through it too, from the weights its own forward keeps. The
forward stops once the last layer's attention is recorded (``stop_after``): the last layer's output projection and MLP
and the model's head compute nothing the census reads.

**Batching changes no number.** Batches are right-padded (positions 0…T−1 for every text, so absolute and rotary
positions are the single-text ones; under a causal mask a real query never sees a padded key), padded keys get
exactly zero weight, and every reduction runs over the text's own T real queries and keys only. Each text's
statistics equal those of a single-text run (:func:`inspector.analyses.heads.head_report`'s ``per_text``) within 1e-5;
tests/test_census.py checks it on BERT, GPT-2 and Llama-style models with ragged lengths.

**Output folder** (:func:`read_census` reads it back): ``shards/part-NNNNN.parquet`` — one row per text (``index``
in the input, ``text``, ``tokens``, and one fixed-size list column of layers × heads float32 per statistic,
layer-major; the shape is in the manifest), ``manifest.json`` (model, code version, statistics, input fingerprint,
engine, times), ``errors.jsonl`` (rows that could not be measured, with the reason) and ``summary.json`` (per head
and statistic: the mean over texts with a 95 % Student-t interval, the health flags of
:func:`inspector.analyses.metrics.health_flags` and the report lines). Shard k holds input rows [k·S, (k+1)·S); a shard
is written to a temporary name and renamed, so it is either complete or absent. Re-running into the same folder
**resumes**: finished shards are kept and never written twice; a different model or input is refused, naming the
difference.

**Engines**: ``local`` runs in this process; ``ray`` runs the same per-batch function in Ray Data actors
(``map_batches`` with a stateful class that loads the model once per actor; ``concurrency`` = actors,
``num_gpus`` per actor) and the driver writes the same shards. Ray is imported only there.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import math
import os
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

import numpy as np
import torch

from inspector.analyses.batching import (
    CPU_MAX_PADDING,
    GPU_MAX_PADDING,
    STATISTIC_RANGES,
    STATISTICS,
    batch_statistics,
    length_buckets,
    padded_batch,
)
from inspector.analyses.metrics import HealthFlags, HealthThresholds, flagged_heads, health_flags
from inspector.base.assets import ASSETS_DIR, REPO_ROOT
from inspector.base.display import Displayable
from inspector.base.errors import InspectorError, InvalidRequestError
from inspector.base.i18n import t
from inspector.base.progress import Progress, print_progress
from inspector.base.textfiles import read_file_lines
from inspector.core.forward import encode_text, forward, reads_special_tokens_as_text
from inspector.core.loading import LoadedModel, ModelInfo, model_label, resolve_model_folder
from kernels.reference import materialize_weights

Engine = Literal["local", "ray"]
ENGINES: tuple[Engine, ...] = ("local", "ray")
FORMAT_VERSION = 1
INPUT_SUFFIXES = (".txt", ".jsonl", ".parquet")
# The shipped corpus (assets/corpus/README.md): 15,192 sentences from Python, NumPy and SciPy documentation.
CENSUS_CORPUS_PATH = ASSETS_DIR / "corpus" / "census-sentences.txt"

# Statistics that are NaN where a text cannot measure them (normalised entropy of a one-token text): summaries skip
# those texts, as HeadStatistics.mean does.
_NAN_SKIPPING = ("entropy_normalized",)
STATISTIC_UNITS = {"entropy": "nats", "entropy_normalized": "entropy / log(visible keys)",
                   "mean_distance": "tokens"}
# Padded tokens (batch × longest text) per forward. On the CPU larger batches stop paying off around here; on a GPU
# raise it (--batch-tokens) until memory or throughput says stop.
DEFAULT_BATCH_TOKENS = 8192
DEFAULT_SHARD_SIZE = 1000
# Rows handed to one Ray actor call: the actor buckets them by length itself.
_RAY_BATCH_ROWS = 256
CONFIDENCE = 0.95

class CensusFolderError(InvalidRequestError):
    """The output folder holds a census of another model or input, or is not a census folder."""


# ------------------------------------------------------------------------------------------------ input rows

@dataclass(frozen=True)
class InputRow:
    """One row of the input: its position over all input files (``index``), where it came from (``origin``, e.g.
    ``corpus.txt:12``) and its value (any JSON value; only non-empty strings are measured)."""

    index: int
    origin: str
    value: object


@dataclass(frozen=True)
class CensusInput:
    """The rows of ``paths`` (files in sorted order) and a fingerprint of their bytes and the reading options."""

    paths: tuple[Path, ...]
    column: str
    rows: tuple[InputRow, ...]
    fingerprint: str


def _input_files(source: Path) -> tuple[Path, ...]:
    if source.is_dir():
        files = tuple(sorted(p for p in source.iterdir() if p.is_file() and p.suffix in INPUT_SUFFIXES))
        if not files:
            raise InvalidRequestError(f"the folder {source} has no {', '.join(INPUT_SUFFIXES)} files; put the texts "
                                      "there one per line (.txt) or as a column of .jsonl/.parquet rows")
        return files
    if not source.is_file():
        raise InvalidRequestError(f"the input {source} does not exist; give a .txt, .jsonl or .parquet file or a "
                                  "folder of them")
    if source.suffix not in INPUT_SUFFIXES:
        raise InvalidRequestError(f"the input {source} is a {source.suffix or 'suffix-less'} file; the census reads "
                                  ".txt (one text per line), .jsonl or .parquet (with --column)")
    return (source,)


def _rows_of(path: Path, column: str, start: int) -> list[InputRow]:
    name = path.name
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        try:
            schema = pq.read_schema(path)
            if column not in schema.names:
                raise InvalidRequestError(f"{path} has no column {column!r} (it has {', '.join(schema.names)}); "
                                          "name the text column with --column")
            values = pq.read_table(path, columns=[column]).column(column).to_pylist()
        except InvalidRequestError:
            raise
        except Exception as err:  # pyarrow raises its own error types for a damaged file
            raise InvalidRequestError(f"cannot read the Parquet file {path}: {err}") from err
        return [InputRow(start + i, f"{name}:row {i}", v) for i, v in enumerate(values)]
    try:
        lines = read_file_lines(path)
    except (OSError, UnicodeDecodeError) as err:
        raise InvalidRequestError(f"cannot read {path}: {err} — give a UTF-8 text file") from err
    rows: list[InputRow] = []
    for number, line in enumerate(lines, start=1):
        if path.suffix == ".txt":
            if line.lstrip().startswith("#"):  # comments, as in the Heads page's corpus files
                continue
            value: object = line
        else:
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as err:
                value = _Unreadable(f"the line is not JSON ({err.msg})")
            else:
                value = (record.get(column, _Unreadable(f"the JSON object has no key {column!r}"))
                         if isinstance(record, dict) else _Unreadable("the line is not a JSON object"))
        rows.append(InputRow(start + len(rows), f"{name}:{number}", value))
    return rows


@dataclass(frozen=True)
class _Unreadable:
    """A row that could not be read as a value at all (bad JSON, missing key); ``reason`` goes to errors.jsonl."""

    reason: str


def _file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def read_input(source: str | Path, *, column: str = "text", limit: int | None = None) -> CensusInput:
    """The rows of ``source`` (a .txt file — one text per line, ``#`` lines are comments —, a .jsonl or .parquet
    file whose ``column`` holds the texts, or a folder of such files read in name order), the first ``limit``
    rows only when given. Raises :class:`InvalidRequestError` for a missing, unreadable or unsupported input."""
    if limit is not None and limit < 1:
        raise InvalidRequestError(f"--limit must be at least 1, got {limit}")
    source = Path(source)
    files = _input_files(source)
    rows: list[InputRow] = []
    digest = hashlib.sha256(json.dumps({"column": column, "limit": limit}).encode())
    for path in files:
        rows.extend(_rows_of(path, column, len(rows)))
        digest.update(f"{path.name}\0{path.stat().st_size}\0{_file_digest(path)}\n".encode())
    if limit is not None:
        rows = rows[:limit]
    return CensusInput(paths=files, column=column, rows=tuple(rows), fingerprint=digest.hexdigest())


def row_problem(value: object) -> str | None:
    """Why a value cannot be measured before tokenising it (not text, empty), or None."""
    if isinstance(value, _Unreadable):
        return value.reason
    if not isinstance(value, str):
        return f"not text: the value is {type(value).__name__} {json.dumps(value, default=str)[:80]}"
    if not value.strip():
        return "empty text"
    return None


# ------------------------------------------------------------------------------------- the statistics pass

@dataclass(frozen=True)
class TextCensus:
    """One text's numbers: ``statistics`` maps each of :data:`STATISTICS` to (layers, heads) float32."""

    index: int
    text: str
    tokens: int
    statistics: dict[str, np.ndarray]


@dataclass(frozen=True)
class RowError:
    """A row that was not measured: where it is and why (goes to errors.jsonl)."""

    index: int
    origin: str
    reason: str

    def as_json(self) -> dict:
        return {"index": self.index, "origin": self.origin, "reason": self.reason}


@dataclass(frozen=True)
class _Encoded:
    index: int
    text: str
    ids: np.ndarray  # (T,) int64
    special: np.ndarray  # (T,) bool
    category_masks: np.ndarray  # (3, T) bool: [CLS]/BOS, [SEP]/EOS, punctuation (metrics.token_category_masks)


def _batch_encoding(loaded: LoadedModel, texts: list[str]) -> tuple[list[list[int]], list[list[int]]]:
    """Token ids and special-tokens masks of ``texts`` from one tokenizer call (a fast tokenizer encodes the list
    in one go): the same ids, text by text, as :func:`inspector.core.forward.encode_text`'s untruncated call."""
    if not texts:
        return [], []
    # Special-token strings typed in a text are read as text, as a single capture reads them (one call per rule).
    ids: list[list[int]] = [[] for _ in texts]
    masks: list[list[int]] = [[] for _ in texts]
    for split in (True, False):
        chosen = [i for i, text in enumerate(texts) if reads_special_tokens_as_text(loaded.tokenizer, text) == split]
        if not chosen:
            continue
        with loaded.tokenizer_lock:
            batch = loaded.tokenizer([texts[i] for i in chosen], truncation=False, verbose=False,
                                     return_special_tokens_mask=True, split_special_tokens=split)
        for k, i in enumerate(chosen):
            ids[i], masks[i] = batch["input_ids"][k], batch["special_tokens_mask"][k]
    return ids, masks


def _encode_rows(loaded: LoadedModel, rows: Iterable[InputRow], truncate: bool,
                 ) -> tuple[list[_Encoded], list[RowError]]:
    """Tokenise each row the way a single-text capture does; bad rows become :class:`RowError`.

    The texts are tokenised in one batch call; a text the single-text checks could refuse or cut (too long, no
    tokens, only special tokens, an id outside the vocabulary) goes through :func:`inspector.core.forward.encode_text`
    itself, so its error message or truncation is exactly a capture's."""
    from inspector.analyses.metrics import is_punctuation

    rows = list(rows)
    problems = [row_problem(row.value) for row in rows]
    all_ids, all_special = _batch_encoding(loaded, [r.value for r, p in zip(rows, problems) if p is None])
    limit, vocabulary = loaded.info.max_positions, loaded.info.vocab_size
    special_ids = set(getattr(loaded.tokenizer, "all_special_ids", []))
    punctuation: dict[int, bool] = {}  # is_punctuation of each id's token, looked up once per call
    encoded, errors = [], []
    batch_position = 0
    for row, problem in zip(rows, problems):
        if problem is None:
            ids, special_mask = all_ids[batch_position], all_special[batch_position]
            batch_position += 1
            if not ids or len(ids) > limit or all(special_mask) or min(ids) < 0 or max(ids) >= vocabulary:
                try:
                    ids = encode_text(loaded, row.value, truncate=truncate).encoding["input_ids"][0].tolist()
                except InspectorError as err:
                    problem = str(err)
        if problem is not None:
            errors.append(RowError(row.index, row.origin, problem))
            continue
        unseen = [i for i in dict.fromkeys(ids) if i not in punctuation]
        if unseen:
            tokens = loaded.tokenizer.convert_ids_to_tokens(unseen)
            punctuation.update((i, is_punctuation(str(token))) for i, token in zip(unseen, tokens))
        # The Heads page's definitions (inspector.analyses.heads._text_statistics, metrics.token_category_masks):
        # special =
        # an id among all_special_ids; [CLS] = a special token at position 0, [SEP] = any other special token,
        # punctuation = a punctuation token that is not special.
        special = np.fromiter((i in special_ids for i in ids), dtype=bool, count=len(ids))
        first = np.zeros(len(ids), dtype=bool)
        first[:1] = special[:1]
        punctuation_mask = np.fromiter((punctuation[i] for i in ids), dtype=bool, count=len(ids)) & ~special
        encoded.append(_Encoded(row.index, row.value, np.asarray(ids, dtype=np.int64), special,
                                np.stack([first, special & ~first, punctuation_mask])))
    return encoded, errors


def _materialize(backend: str, query: torch.Tensor, key: torch.Tensor, lse: torch.Tensor, *, causal: bool,
                 scale: float, padding: torch.Tensor | None, window: int | None) -> torch.Tensor:
    """One layer's exact weights (batch, heads, n, n) float32, as the attention function makes them."""
    if backend == "triton":
        from kernels import flash

        return flash.materialize_weights(query, key, lse=lse, causal=causal, scale=scale, key_padding_mask=padding,
                                         window=window)
    return materialize_weights(query, key, lse=lse, causal=causal, scale=scale, key_padding_mask=padding,
                               window=window)


def _measure_bucket(loaded: LoadedModel, items: list[_Encoded], backend: str) -> list[TextCensus]:
    info, device = loaded.info, loaded.device
    lengths_list = [len(item.ids) for item in items]
    n, batch = max(lengths_list), len(items)
    inputs = padded_batch(loaded, [torch.from_numpy(item.ids).to(device) for item in items])
    category_masks = np.zeros((batch, n, 3), dtype=np.float64)
    for b, item in enumerate(items):  # zero past each text's T, like its padded keys
        category_masks[b, :lengths_list[b]] = item.category_masks.T
    # The statistics need every layer's attention and nothing after the last one: that layer's output projection
    # and MLP (9 of its 12 d² weight units: an eighth of a 6-layer model's matrix products) and the head never run.
    result = forward(loaded, inputs, backend=backend, stats=("entropy", "lse"), keep=("query", "key"),
                     keep_layers="all", stop_after=info.num_layers - 1)
    records = result.records
    if len(records) != info.num_layers:
        raise InspectorError(f"{info.name} ran {len(records)} attention layers but declares {info.num_layers}; "
                             "its attention does not all go through the inspector's attention function")
    padding = inputs["attention_mask"].bool()
    padding = None if bool(padding.all()) else padding

    def materialized(record) -> torch.Tensor:
        weights = _materialize(backend, record.tensors["query"], record.tensors["key"], record.stats["lse"],
                               causal=record.causal, scale=record.scale, padding=padding, window=record.window)
        record.tensors.clear()
        return weights

    reduced, _ = batch_statistics(records, materialized, lengths_list, category_masks)
    host = {name: reduced[name].float().cpu().numpy() for name in STATISTICS}  # (B, L, H) each
    return [TextCensus(index=item.index, text=item.text, tokens=lengths_list[b],
                       statistics={name: host[name][b] for name in STATISTICS}) for b, item in enumerate(items)]


def measure_rows(loaded: LoadedModel, rows: Sequence[InputRow], *, batch_tokens: int = DEFAULT_BATCH_TOKENS,
                 truncate: bool = False, backend: str = "torch", max_padding: float | None = None,
                 ) -> tuple[list[TextCensus], list[RowError]]:
    """The census of ``rows``: tokenised, bucketed by length into padded batches of at most ``batch_tokens``
    padded tokens and at most ``max_padding`` padding per real token (default: :data:`CPU_MAX_PADDING` on the
    CPU, :data:`GPU_MAX_PADDING` elsewhere), measured (see the module docstring). Results come back in input
    order; bad rows (empty, not text, too long without ``truncate``) come back as :class:`RowError` and never
    stop the others."""
    if batch_tokens < 1:
        raise InvalidRequestError(f"--batch-tokens must be at least 1, got {batch_tokens}")
    if max_padding is None:
        max_padding = CPU_MAX_PADDING if torch.device(loaded.device).type == "cpu" else GPU_MAX_PADDING
    encoded, errors = _encode_rows(loaded, rows, truncate)
    measured: list[TextCensus] = []
    for bucket in length_buckets([len(item.ids) for item in encoded], batch_tokens, max_padding):
        measured.extend(_measure_bucket(loaded, [encoded[i] for i in bucket], backend))
    measured.sort(key=lambda item: item.index)
    return measured, errors


# ----------------------------------------------------------------------------------------- the output folder

def code_version() -> str:
    """``git describe`` of the checkout this code runs from, else the package version."""
    root = REPO_ROOT
    try:
        described = subprocess.run(["git", "describe", "--always", "--dirty", "--tags"], cwd=root,
                                   capture_output=True, text=True, timeout=5)
        if described.returncode == 0 and described.stdout.strip():
            return f"git {described.stdout.strip()}"
    except (OSError, subprocess.SubprocessError):
        pass
    try:
        from importlib.metadata import version

        return f"attention-inspector {version('attention-inspector')}"
    except Exception:  # not installed as a package either
        return "unknown"


def model_fingerprint(folder: Path) -> str:
    """sha256 over the model folder's config and tokenizer files and each weights file's size and safetensors
    header (the header lists every tensor's name, shape, dtype and offsets): cheap, and any re-trained or swapped
    weights file changes it."""
    digest = hashlib.sha256()
    for path in sorted(folder.iterdir()):
        if not path.is_file():
            continue
        if path.suffix == ".safetensors":
            with path.open("rb") as handle:
                size = int.from_bytes(handle.read(8), "little")
                header = handle.read(min(size, 100_000_000))
            digest.update(f"{path.name}\0{path.stat().st_size}\0".encode() + hashlib.sha256(header).digest())
        elif path.suffix in (".json", ".txt", ".model"):
            digest.update(f"{path.name}\0".encode() + bytes.fromhex(_file_digest(path)))
    return digest.hexdigest()


def describe_model(spec: str, info: ModelInfo) -> dict:
    """The manifest's model entry: spec, name, shape, resolved folder, hub revision (the snapshot commit) and
    fingerprint."""
    folder, _ = resolve_model_folder(spec)
    revision = folder.name if folder.parent.name == "snapshots" else None
    return {"spec": spec, "name": info.name, "architecture": info.architecture, "num_layers": info.num_layers,
            "num_heads": info.num_heads, "folder": str(folder.resolve()), "revision": revision,
            "fingerprint": model_fingerprint(folder), "dtype": info.dtype}


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


# Inside a census folder: the lock a run holds while it writes, and the prefix and suffix of its temporary files.
_LOCK_NAME = ".census.lock"
_TEMPORARY_SUFFIX = ".tmp"


def _replace_from_temporary(path: Path, write: Callable[[Path], None]) -> None:
    """Write ``path`` through a temporary file of a unique name beside it (``.NAME.XXXX.tmp``), then rename it into
    place: a reader sees the old file or the new one, never part of one, and no two writers share a temporary."""
    handle, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=_TEMPORARY_SUFFIX)
    os.close(handle)
    temporary = Path(name)
    try:
        write(temporary)
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def _write_atomic(path: Path, data: bytes) -> None:
    _replace_from_temporary(path, lambda temporary: temporary.write_bytes(data))


def _is_run_leftover(path: Path) -> bool:
    """The lock file, a temporary file a killed run left behind, or a ``shards`` folder holding nothing else —
    what a run killed before its first manifest leaves (never a census file itself)."""
    if path.name == "shards" and path.is_dir():
        return all(_is_run_leftover(entry) for entry in path.iterdir())
    return path.name == _LOCK_NAME or (path.name.startswith(".") and path.name.endswith(_TEMPORARY_SUFFIX))


@contextlib.contextmanager
def _folder_lock(out: Path):
    """Hold ``out``'s census lock for one run: a second run into the same folder at the same time is refused at
    once (two runs once both computed every shard, and one crashed on the other's temporary file). Under the lock,
    temporaries a killed run left behind are removed."""
    from filelock import FileLock, Timeout

    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise CensusFolderError(f"cannot create the census folder {out}: {err.strerror}; give a folder you can "
                                "write") from None
    lock = FileLock(out / _LOCK_NAME, timeout=0)
    try:
        lock.acquire()
    except Timeout:
        raise CensusFolderError(f"another census run is writing into {out} right now (it holds {out / _LOCK_NAME}); "
                                "wait for it to finish, or give another --out folder") from None
    try:
        for folder in (out, out / "shards"):
            for leftover in (folder.glob(f".*{_TEMPORARY_SUFFIX}") if folder.is_dir() else ()):
                leftover.unlink(missing_ok=True)
        yield
    finally:
        lock.release()


def _write_json(path: Path, payload: dict) -> None:
    _write_atomic(path, (json.dumps(payload, ensure_ascii=False, indent=1, allow_nan=False) + "\n").encode())


def _identity(manifest: dict) -> dict:
    """What must match for a folder to be resumed: the model, the input and what is measured."""
    # The model by its resolved folder, not the words that named it: "m/" and "./m" are the same model as "m".
    return {"model fingerprint": manifest["model"]["fingerprint"], "model": manifest["model"]["folder"],
            "input fingerprint": manifest["input"]["fingerprint"], "text column": manifest["input"]["column"],
            "row limit": manifest["input"]["limit"], "truncation": manifest["input"]["truncate"],
            "statistics": manifest["statistics"], "shard size": manifest["shard_size"],
            "format": manifest["format_version"]}


def _check_resumable(out: Path, manifest: dict) -> dict | None:
    """The folder's existing manifest if it is a census of the same model and input; None for a new folder."""
    path = out / "manifest.json"
    if not path.exists():
        if out.exists() and any(not _is_run_leftover(entry) for entry in out.iterdir()):
            raise CensusFolderError(f"{out} is not empty and holds no census manifest.json; give an empty or new "
                                    "folder, or the folder of an earlier census to resume it")
        return None
    try:
        existing = json.loads(path.read_text(encoding="utf-8"))
        theirs = _identity(existing)
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise CensusFolderError(f"{path} is not a readable census manifest ({err}); use another folder") from err
    ours = _identity(manifest)
    different = [name for name in ours if ours[name] != theirs[name]]
    if different:
        details = "; ".join(f"{name}: folder has {theirs[name]!r}, this run {ours[name]!r}" for name in different)
        raise CensusFolderError(f"{out} holds a census of a different {' and '.join(different)} ({details}); give "
                                "another --out folder, or rerun with the same model and input to resume it")
    return existing


def _shard_path(out: Path, shard: int) -> Path:
    return out / "shards" / f"part-{shard:05d}.parquet"


def _write_shard(out: Path, shard: int, measured: list[TextCensus], errors: list[RowError], shape: tuple[int, int],
                 ) -> None:
    """The shard's errors first, then its Parquet file, each written to a temporary name and renamed: a shard
    whose Parquet file exists is complete."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = _shard_path(out, shard)
    lines = "".join(json.dumps(e.as_json(), ensure_ascii=False) + "\n" for e in sorted(errors, key=lambda e: e.index))
    _write_atomic(path.with_suffix(".errors.jsonl"), lines.encode())
    size = shape[0] * shape[1]
    columns = {"index": pa.array([m.index for m in measured], pa.int64()),
               "text": pa.array([m.text for m in measured], pa.string()),
               "tokens": pa.array([m.tokens for m in measured], pa.int32())}
    for name in STATISTICS:
        flat = np.stack([m.statistics[name].reshape(-1) for m in measured]).astype(np.float32) if measured \
            else np.zeros((0, size), np.float32)
        columns[name] = pa.FixedSizeListArray.from_arrays(pa.array(flat.reshape(-1), pa.float32()), size)
    _replace_from_temporary(path, lambda temporary: pq.write_table(pa.table(columns), temporary))


@dataclass(frozen=True)
class CensusPlan:
    """What a run has to do: the folder, the manifest, and the input rows of each shard not yet written."""

    out: Path
    manifest: dict
    pending: dict[int, tuple[InputRow, ...]]
    total_rows: int


def _plan(spec: str, info: ModelInfo, data: CensusInput, out: Path, *, engine: str, truncate: bool,
          limit: int | None, shard_size: int, batch_tokens: int) -> CensusPlan:
    manifest = {
        "format_version": FORMAT_VERSION,
        "model": describe_model(spec, info),
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
        "engine": engine,
        "started": _now(),
        "finished": None,
        "runs": [],
    }
    return CensusPlan(out=out, manifest=manifest, pending={}, total_rows=len(data.rows))


def _progress_note(done: int, total: int, elapsed: float, kept: int = 0) -> str:
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
           loaded: LoadedModel | None = None) -> CensusSummary:
    """Measure every text of ``source`` with model ``spec`` into the folder ``out`` (see the module docstring)
    and return its summary. Resumes a folder holding the same model's census of the same input.

    ``engine``: ``local`` (this process; ``loaded`` may pass the already-loaded model) or ``ray`` (``actors``
    actors, each loading the model once, ``gpus_per_actor`` GPUs each; on the cluster at ``address`` or
    ``RAY_ADDRESS``, else a local Ray with ``num_cpus`` CPUs, shut down afterwards). ``progress``
    (:mod:`inspector.base.progress`; units: texts, the ones kept from an earlier run counted done) is called after
    each shard, its note giving texts/s and an ETA (the default prints it on stderr). A KeyboardInterrupt
    keeps every finished shard; rerun to resume."""
    from inspector.core.loading import load_model

    if engine not in ENGINES:
        raise InvalidRequestError(f"unknown engine {engine!r}; choose one of {', '.join(ENGINES)}")
    for option, value in (("--batch-tokens", batch_tokens), ("--shard-size", shard_size)):
        if value < 1:
            raise InvalidRequestError(f"{option} must be at least 1, got {value}")
    if engine == "ray" and actors < 1:
        raise InvalidRequestError(f"--actors must be at least 1, got {actors}")
    if gpus_per_actor < 0:
        raise InvalidRequestError(f"--gpus-per-actor must be ≥ 0, got {gpus_per_actor}")
    data = read_input(source, column=column, limit=limit)
    if not data.rows:
        raise InvalidRequestError(f"{source} holds no rows to measure; give a .txt with one text per line, or a "
                                  ".jsonl / .parquet file with a text column")
    if Path(out).exists() and not Path(out).is_dir():
        raise CensusFolderError(f"--out {out} is a file, not a folder; give a new or empty folder")
    if loaded is None:
        loaded = load_model(spec, device=device, dtype=dtype)
    plan = _plan(spec, loaded.info, data, Path(out), engine=engine, truncate=truncate, limit=limit,
                 shard_size=shard_size, batch_tokens=batch_tokens)
    _check_resumable(plan.out, plan.manifest)  # refuse a wrong folder before creating anything in it
    with _folder_lock(plan.out):
        return _run_locked(plan, data, loaded, spec=spec, engine=engine, truncate=truncate,
                           batch_tokens=batch_tokens, shard_size=shard_size, backend=backend, device=device,
                           dtype=dtype, address=address, actors=actors, gpus_per_actor=gpus_per_actor,
                           num_cpus=num_cpus, thresholds=thresholds, progress=progress)


def _run_locked(plan: CensusPlan, data: CensusInput, loaded: LoadedModel, *, spec: str, engine: Engine,
                truncate: bool, batch_tokens: int, shard_size: int, backend: str, device: str, dtype: str,
                address: str | None, actors: int, gpus_per_actor: float, num_cpus: int | None,
                thresholds: HealthThresholds, progress: Progress | None) -> CensusSummary:
    """:func:`census`'s run, under the folder's lock (read again: a run that finished meanwhile wrote shards)."""
    existing = _check_resumable(plan.out, plan.manifest)
    if existing is not None:
        plan.manifest["started"] = existing["started"]
        plan.manifest["runs"] = existing.get("runs", [])
    (plan.out / "shards").mkdir(parents=True, exist_ok=True)
    shards = math.ceil(len(data.rows) / shard_size)
    for shard in range(shards):
        if not _shard_path(plan.out, shard).exists():
            plan.pending[shard] = data.rows[shard * shard_size:(shard + 1) * shard_size]
    run = {"engine": engine, "started": _now(), "finished": None, "shards_written": 0,
           "shards_kept": shards - len(plan.pending)}
    plan.manifest["runs"].append(run)
    _write_json(plan.out / "manifest.json", plan.manifest)
    shape = (loaded.info.num_layers, loaded.info.num_heads)
    done_rows = sum(min(shard_size, len(data.rows) - s * shard_size) for s in range(shards) if s not in plan.pending)
    started = time.perf_counter()
    counter = {"rows": done_rows}

    def shard_done(shard: int, measured: list[TextCensus], errors: list[RowError]) -> None:
        _write_shard(plan.out, shard, measured, errors, shape)
        run["shards_written"] += 1
        counter["rows"] += len(plan.pending[shard])
        if progress is not None:
            done, total = counter["rows"], len(data.rows)
            progress(done, total, _progress_note(done, total, time.perf_counter() - started, kept=done_rows))

    try:
        if plan.pending:
            if engine == "local":
                chosen_backend = _resolved_backend(loaded, backend)
                for shard, rows in plan.pending.items():
                    measured, errors = measure_rows(loaded, rows, batch_tokens=batch_tokens, truncate=truncate,
                                                    backend=chosen_backend)
                    shard_done(shard, measured, errors)
            else:
                _run_ray(plan, spec=spec, shard_done=shard_done, batch_tokens=batch_tokens, truncate=truncate,
                               backend=backend, device=device, dtype=dtype, address=address, actors=actors,
                               gpus_per_actor=gpus_per_actor, num_cpus=num_cpus)
    finally:
        run["finished"] = _now()
        _write_json(plan.out / "manifest.json", plan.manifest)
    return finish(plan.out, thresholds=thresholds)


def _resolved_backend(loaded: LoadedModel, backend: str) -> str:
    from inspector.base.errors import BackendError
    from kernels.hf import BackendUnavailableError, resolve_backend

    try:
        return resolve_backend(backend, loaded.device)
    except BackendUnavailableError as err:
        raise BackendError(str(err)) from err


# ----------------------------------------------------------------------------------------------- the summary

@dataclass(frozen=True)
class CensusSummary(Displayable):
    """A finished census, as summary.json holds it. L = layers, H = heads.

    mean, low, high: {statistic: (L, H) float32} — the mean over texts and its 95 % Student-t interval (NaN where
    fewer than two texts measured the head). count: {statistic: (L, H) int} texts that measured it. flags: the
    Heads page's :func:`inspector.analyses.metrics.health_flags` of the mean normalised entropy and largest sink score.
    texts / errors / tokens: rows measured, rows refused, real tokens measured. folder: where it was read from."""

    model: dict
    texts: int
    errors: int
    tokens: int
    thresholds: HealthThresholds
    mean: dict[str, np.ndarray]
    low: dict[str, np.ndarray]
    high: dict[str, np.ndarray]
    count: dict[str, np.ndarray]
    flags: HealthFlags
    folder: str = ""
    manifest: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        shape = (int(self.model["num_layers"]), int(self.model["num_heads"]))
        for table in (self.mean, self.low, self.high, self.count):
            for name, values in table.items():
                if values.shape != shape:
                    raise ValueError(f"CensusSummary {name} has shape {values.shape}, expected {shape}")

    @property
    def shape(self) -> tuple[int, int]:
        return int(self.model["num_layers"]), int(self.model["num_heads"])


def summarise(values: dict[str, np.ndarray], *, model: dict, errors: int, tokens: int,
              thresholds: HealthThresholds = HealthThresholds()) -> CensusSummary:
    """Means with 95 % Student-t intervals over texts, clipped to the values each statistic can take
    (:data:`~inspector.analyses.batching.STATISTIC_RANGES`): ``values`` maps each statistic to (texts, L, H)."""
    # Student's t quantile from scipy.special (stdtrit): the same numbers as scipy.stats.t.ppf, without importing
    # scipy.stats (`python -X importtime`: 1.4 s for scipy.stats against 0.4 s for scipy.special on this CPU).
    from scipy.special import stdtrit

    mean, low, high, count = {}, {}, {}, {}
    for name, stacked in values.items():
        stacked = stacked.astype(np.float64)
        finite = np.isfinite(stacked)
        n = finite.sum(axis=0)
        total = np.where(finite, stacked, 0.0).sum(axis=0)
        with np.errstate(invalid="ignore", divide="ignore"):
            average = np.where(n > 0, total / np.maximum(n, 1), np.nan)
            squares = np.where(finite, (stacked - average) ** 2, 0.0).sum(axis=0)
            spread = np.sqrt(squares / np.maximum(n - 1, 1)) / np.sqrt(np.maximum(n, 1))
            half = np.where(n > 1, stdtrit(np.maximum(n - 1, 1), 0.5 + CONFIDENCE / 2) * spread, np.nan)
        mean[name], count[name] = average.astype(np.float32), n.astype(np.int64)
        bottom, top = STATISTIC_RANGES.get(name, (-np.inf, np.inf))
        low[name] = np.clip(average - half, bottom, top).astype(np.float32)
        high[name] = np.clip(average + half, bottom, top).astype(np.float32)
    texts = int(next(iter(values.values())).shape[0]) if values else 0
    flags = health_flags(mean["entropy_normalized"], mean["max_sink_score"], thresholds)
    return CensusSummary(model=model, texts=texts, errors=errors, tokens=tokens, thresholds=thresholds, mean=mean,
                         low=low, high=high, count=count, flags=flags)


# What a census folder's files may hold, checked before anything is built from them: a folder is data, possibly
# crafted (issue 33: 17 of 37 crafted folders raised an exception box).
_MAX_FOLDER_JSON_BYTES = 64 * 2**20
_MAX_LAYERS_OR_HEADS = 4096
# What reading a damaged file of the folder may raise (pyarrow's own errors subclass these or ArrowException).
_UNREADABLE = (OSError, ValueError, KeyError, TypeError, AttributeError, IndexError, RecursionError, OverflowError)


def _whole(value: object, least: int = 0) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= least


def _own_file(path: Path) -> Path:
    """``path`` if it is a regular file of the folder itself (not a link to elsewhere), else a refusal."""
    if path.is_symlink() or not path.is_file():
        raise CensusFolderError(f"{path} is not a regular file of the census folder (a link, a folder or missing); "
                                "a census folder holds its own files — rerun the census into a new folder")
    return path


def _read_folder_json(path: Path) -> object:
    _own_file(path)
    if path.stat().st_size > _MAX_FOLDER_JSON_BYTES:
        raise CensusFolderError(f"{path} has {path.stat().st_size:,} bytes, more than a census writes; it is not a "
                                "census file")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (*_UNREADABLE, UnicodeDecodeError) as err:
        raise CensusFolderError(f"{path} is not readable JSON ({type(err).__name__}); rerun the census into a new "
                                "folder") from None


def _checked_manifest(out: Path) -> dict:
    """The folder's manifest.json, with every field this module reads checked for type and range."""
    manifest = _read_folder_json(out / "manifest.json")
    problem = None
    if not isinstance(manifest, dict):
        problem = "it is not a JSON object"
    elif not (isinstance(manifest.get("shape"), list) and len(manifest["shape"]) == 2
              and all(_whole(n, 1) and n <= _MAX_LAYERS_OR_HEADS for n in manifest["shape"])):
        problem = "its shape is not [layers, heads]"
    elif not (isinstance(manifest.get("model"), dict)
              and [manifest["model"].get("num_layers"), manifest["model"].get("num_heads")] == manifest["shape"]):
        problem = "its model does not name the layers and heads of its shape"
    elif not (isinstance(manifest.get("input"), dict) and _whole(manifest["input"].get("rows"))):
        problem = "its input has no row count"
    elif not _whole(manifest.get("shard_size"), 1):
        problem = "its shard_size is not a whole number of at least 1"
    if problem:
        raise CensusFolderError(f"{out / 'manifest.json'} is not a census manifest: {problem}; rerun the census into "
                                "a new folder")
    return manifest


def _read_shards(out: Path, manifest: dict) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray, list[dict]]:
    """(statistic → (texts, L, H), indices, token counts, errors) over every finished shard, in input order; a
    shard that is not what a census writes (its schema, its sizes, a link) is a :class:`CensusFolderError`."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    layers, heads = manifest["shape"]
    shards = out / "shards"
    tables = []
    for path in sorted(shards.glob("part-*.parquet")) if shards.is_dir() else ():
        _own_file(path)
        try:
            table = pq.read_table(path)
            names = set(table.schema.names)
            missing = [name for name in ("index", "tokens", *STATISTICS) if name not in names]
            if missing:
                raise ValueError(f"no column {', '.join(missing)}")
            for name in STATISTICS:
                kind = table.schema.field(name).type
                if not (pa.types.is_fixed_size_list(kind) and kind.list_size == layers * heads):
                    raise ValueError(f"column {name} is not {layers} × {heads} values a text")
            if not (pa.types.is_integer(table.schema.field("index").type)
                    and pa.types.is_integer(table.schema.field("tokens").type)):
                raise ValueError("index and tokens are not whole numbers")
        except (*_UNREADABLE, pa.ArrowException) as err:
            raise CensusFolderError(f"{path} is not a census shard ({err}); rerun the census into a new folder") \
                from None
        tables.append(table)
    errors: list[dict] = []
    for path in sorted(shards.glob("part-*.errors.jsonl")) if shards.is_dir() else ():
        _own_file(path)
        try:
            rows = [json.loads(line) for line in read_file_lines(path) if line]
        except (*_UNREADABLE, UnicodeDecodeError) as err:
            raise CensusFolderError(f"{path} is not a census error list ({type(err).__name__}); rerun the census "
                                    "into a new folder") from None
        if not all(isinstance(row, dict) and _whole(row.get("index")) for row in rows):
            raise CensusFolderError(f"{path} is not a census error list (a line without a row index); rerun the "
                                    "census into a new folder")
        errors.extend(rows)
    if not tables:
        return {name: np.zeros((0, layers, heads), np.float32) for name in STATISTICS}, np.zeros(0, np.int64), \
            np.zeros(0, np.int64), errors
    index = np.concatenate([t.column("index").to_numpy() for t in tables])
    tokens = np.concatenate([t.column("tokens").to_numpy() for t in tables]).astype(np.int64)
    order = np.argsort(index, kind="stable")
    values = {}
    for name in STATISTICS:
        flat = np.concatenate([t.column(name).combine_chunks().flatten().to_numpy(zero_copy_only=False)
                               for t in tables])
        values[name] = flat.reshape(-1, layers, heads)[order]
    return values, index[order], tokens[order], sorted(errors, key=lambda e: e["index"])


def _collect(out: Path, thresholds: HealthThresholds) -> tuple[CensusSummary, list[dict], bool]:
    """The summary of ``out``'s finished shards, their errors, and whether every shard is there — read only."""
    manifest = _checked_manifest(out)
    values, index, tokens, errors = _read_shards(out, manifest)
    if len(np.unique(index)) != len(index):
        raise CensusFolderError(f"{out} has a text in two shards; the folder was edited by hand — start a new census")
    shards_expected = math.ceil(manifest["input"]["rows"] / manifest["shard_size"])
    complete = len(list((out / "shards").glob("part-*.parquet"))) == shards_expected
    summary = summarise(values, model=manifest["model"], errors=len(errors), tokens=int(tokens.sum()),
                        thresholds=thresholds)
    return _with_folder(summary, out, manifest), errors, complete


def finish(out: str | Path, *, thresholds: HealthThresholds = HealthThresholds()) -> CensusSummary:
    """Collect the finished shards of ``out`` into errors.jsonl and summary.json (rewritten from the shards every
    time, so nothing is counted twice) and return the summary. The manifest's ``finished`` is set once every
    shard is there. Only a census run calls this; reading a census (:func:`read_census`) never writes."""
    out = Path(out)
    summary, errors, complete = _collect(out, thresholds)
    _write_atomic(out / "errors.jsonl", "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in errors).encode())
    payload = summary_json(summary)
    payload["complete"] = complete
    _write_json(out / "summary.json", payload)
    if complete and summary.manifest.get("finished") is None:
        manifest = dict(summary.manifest, finished=_now())
        _write_json(out / "manifest.json", manifest)
        summary = _with_folder(summary, out, manifest)
    return summary


def _with_folder(summary: CensusSummary, out: Path, manifest: dict) -> CensusSummary:
    from dataclasses import replace

    return replace(summary, folder=str(out), manifest=manifest)


def _json_grid(array: np.ndarray) -> list:
    return [[(round(float(x), 7) if np.isfinite(x) else None) for x in row] for row in np.asarray(array, np.float64)]


def summary_json(summary: CensusSummary) -> dict:
    layers, heads = summary.shape
    return {
        "model": summary.model, "texts": summary.texts, "errors": summary.errors, "tokens": summary.tokens,
        "shape": [layers, heads], "confidence": CONFIDENCE,
        "heads": [f"L{layer}H{head}" for layer in range(layers) for head in range(heads)],
        "thresholds": {"collapsed": summary.thresholds.collapsed, "diffuse": summary.thresholds.diffuse,
                       "sink": summary.thresholds.sink},
        "statistics": {name: {"mean": _json_grid(summary.mean[name]), "low": _json_grid(summary.low[name]),
                              "high": _json_grid(summary.high[name]), "count": summary.count[name].tolist()}
                       for name in summary.mean},
        "flags": {"collapsed": summary.flags.collapsed.tolist(), "diffuse": summary.flags.diffuse.tolist(),
                  "sink": summary.flags.sink.tolist()},
        "report": census_report(summary),
    }


def read_census(folder: str | Path, *, thresholds: HealthThresholds | None = None) -> CensusSummary:
    """The summary of the census in ``folder`` (summary.json, else rebuilt from the shards in memory), judged by
    ``thresholds`` (default: the ones it was written with). Reading never writes into the folder. Raises
    :class:`CensusFolderError` — one line naming the file — for a folder that holds no census or a file that is
    not what a census writes."""
    out = Path(folder).expanduser()
    if not (out / "manifest.json").is_file():
        raise CensusFolderError(f"{out} is not a census folder (no manifest.json); run `python -m inspector census "
                                "--out FOLDER` first, or give the folder it wrote")
    manifest = _checked_manifest(out)
    if not (out / "summary.json").exists() and not (out / "summary.json").is_symlink():
        return _collect(out, thresholds or HealthThresholds())[0]
    payload = _read_folder_json(out / "summary.json")
    try:
        if not isinstance(payload, dict) or payload.get("model") != manifest["model"]:
            raise ValueError("its model is not the manifest's")
        if not all(_whole(payload.get(name)) for name in ("texts", "errors", "tokens")):
            raise ValueError("texts, errors and tokens are not whole numbers")
        if list(payload.get("shape", ())) != manifest["shape"]:
            raise ValueError("its shape is not the manifest's")
        if not isinstance(payload.get("statistics"), dict) or set(payload["statistics"]) != set(STATISTICS):
            raise ValueError("it does not hold every statistic of a census")
        shape = tuple(manifest["shape"])
        grids = {part: {name: np.array([[np.nan if x is None else x for x in row] for row in entry[part]],
                                       dtype=np.float32).reshape(shape)
                        for name, entry in payload["statistics"].items()} for part in ("mean", "low", "high")}
        count = {name: np.asarray(entry["count"], dtype=np.int64).reshape(shape)
                 for name, entry in payload["statistics"].items()}
        written = HealthThresholds(**payload["thresholds"])
    except (*_UNREADABLE, InvalidRequestError) as err:
        raise CensusFolderError(f"{out / 'summary.json'} is not a census summary ({err}); delete it to rebuild it "
                                "from the shards, or rerun the census") from None
    chosen = thresholds or written
    return CensusSummary(model=payload["model"], texts=payload["texts"], errors=payload["errors"],
                         tokens=payload["tokens"], thresholds=chosen, mean=grids["mean"], low=grids["low"],
                         high=grids["high"], count=count,
                         flags=health_flags(grids["mean"]["entropy_normalized"], grids["mean"]["max_sink_score"],
                                            chosen),
                         folder=str(out), manifest=manifest)


# ----------------------------------------------------------------------------------------------- head roles

ROLES_FILE = "roles.json"


def census_roles(spec: str, out: str | Path, *, loaded: LoadedModel | None = None, device: str = "auto",
                 dtype: str = "auto", backend: str = "auto", **options) -> dict:
    """Probe the head roles of model ``spec`` (:func:`inspector.analyses.roles.head_roles` with ``options``: repeat,
    batch, top_k, window, seed, seeds) — no corpus needed — and write them into the census folder ``out`` as
    ``roles.json`` next to (or without) a corpus census, so roles can be compared across models. The census's own
    files and readers are untouched (:func:`read_census` does not read this file); :func:`read_census_roles` does.
    Returns the JSON written: :func:`inspector.analyses.roles.roles_json` plus the census's ``model`` description
    and ``shape``."""
    from inspector.analyses.roles import head_roles, roles_json
    from inspector.core.loading import load_model

    out = Path(out)
    if out.exists() and not out.is_dir():
        raise CensusFolderError(f"--out {out} is a file, not a folder; give a new or empty folder")
    if loaded is None:
        loaded = load_model(spec, device=device, dtype=dtype)
    result = head_roles(loaded, backend=backend, **options)
    payload = roles_json(result)
    payload.update(model=describe_model(spec, loaded.info), model_name=result.model, shape=list(result.shape),
                   written=_now(), code=code_version())
    out.mkdir(parents=True, exist_ok=True)
    _write_json(out / ROLES_FILE, payload)
    return payload


def read_census_roles(folder: str | Path) -> dict:
    """The ``roles.json`` a census folder holds (:func:`census_roles`), checked: a model description, a [layers,
    heads] shape and, for every role, mean/low/high grids of that shape. :class:`CensusFolderError` otherwise."""
    from inspector.analyses.roles import ROLES

    path = Path(folder).expanduser() / ROLES_FILE
    if not path.is_file():
        raise CensusFolderError(f"{path.parent} holds no head roles ({ROLES_FILE}); run `python -m inspector census "
                                "--roles --out FOLDER` first")
    payload = _read_folder_json(path)
    try:
        shape = payload["shape"]
        if not (isinstance(shape, list) and len(shape) == 2 and all(_whole(n, 1) for n in shape)):
            raise ValueError("its shape is not [layers, heads]")
        for role in ROLES:
            for part in ("mean", "low", "high"):
                grid = np.array([[np.nan if x is None else x for x in row] for row in payload["scores"][role][part]],
                                dtype=np.float32)
                if grid.shape != tuple(shape):
                    raise ValueError(f"{role} {part} is not {shape[0]} × {shape[1]}")
        if np.array(payload["dominant"]).shape != tuple(shape):
            raise ValueError("its dominant roles are not one per head")
    except (*_UNREADABLE, InvalidRequestError) as err:
        raise CensusFolderError(f"{path} is not a head-roles file ({err}); rerun `census --roles`") from None
    return payload


# ----------------------------------------------------------------------------------------- words and numbers

def census_report(summary: CensusSummary, lang: str = "en") -> list[str]:
    """The statistics part of the Heads page's health report, for a census: what was measured, the collapsed
    and diffuse heads (same thresholds and flags as :func:`inspector.analyses.heads.health_report`) with their 95 %
    intervals, and the sink heads. Ablation and gradient importance are not part of a census."""
    th, flags, mean = summary.thresholds, summary.flags, summary.mean
    lines = [t("census.report_measured", lang, texts=summary.texts, tokens=summary.tokens,
               model=model_label(summary.model.get("name", summary.model.get("spec", "?")), lang),
               errors=summary.errors,
               collapsed=f"{th.collapsed:g}", diffuse=f"{th.diffuse:g}", sink=f"{th.sink:g}")]
    normalized = mean["entropy_normalized"]

    def interval(name: str, layer: int, head: int) -> str:
        low, high = summary.low[name][layer, head], summary.high[name][layer, head]
        return f"{low:.2f}–{high:.2f}" if np.isfinite(low) and np.isfinite(high) else "—"

    for kind, mask, order_key in (("collapsed", flags.collapsed, normalized),
                                  ("diffuse", flags.diffuse, -normalized)):
        named, more = flagged_heads(mask, order_key)
        if not named:
            extreme = np.nanmin(normalized) if kind == "collapsed" else np.nanmax(normalized)
            lines.append(t(f"census.report_no_{kind}", lang, threshold=f"{getattr(th, kind):g}",
                           value=f"{extreme:.2f}"))
            continue
        for layer, head in named:
            lines.append(t(f"census.report_{kind}", lang, layer=int(layer), head=int(head),
                           value=f"{normalized[layer, head]:.2f}", interval=interval("entropy_normalized", layer, head),
                           threshold=f"{getattr(th, kind):g}"))
        if more:
            lines.append(t("census.report_more", lang, count=more))
    first = mean["first_token_sink"]
    top = np.unravel_index(int(np.nanargmax(first)), first.shape) if np.isfinite(first).any() else (0, 0)
    lines.append(t("census.report_sinks", lang, sinks=int(flags.sink.sum()), heads=flags.sink.size,
                   threshold=f"{th.sink:g}", first=int((first > th.sink).sum()),
                   highest=f"{first[top]:.2f}", layer=int(top[0]), head=int(top[1]),
                   interval=interval("first_token_sink", int(top[0]), int(top[1]))))
    return lines


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
    """The Ray Data actor: loads the model once (in ``__init__``), then measures each batch of rows it is handed
    with :func:`measure_rows` — the local engine's function — and returns one output row per input row (``error``
    empty when the row was measured; statistics NaN otherwise)."""

    def __init__(self, spec: str, device: str, dtype: str, backend: str, batch_tokens: int, truncate: bool,
                 threads: int) -> None:
        from inspector.core.loading import load_model

        torch.set_num_threads(max(1, threads))  # actors share the machine's cores instead of each taking all
        self.loaded = load_model(spec, device=device, dtype=dtype)
        self.backend = _resolved_backend(self.loaded, backend)
        self.batch_tokens, self.truncate = batch_tokens, truncate

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        rows = [InputRow(int(i), str(o), str(v)) for i, o, v in zip(batch["index"], batch["origin"], batch["text"])]
        measured, errors = measure_rows(self.loaded, rows, batch_tokens=self.batch_tokens, truncate=self.truncate,
                                        backend=self.backend)
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
        return out


def _run_ray(plan: CensusPlan, *, spec: str, shard_done: Callable[[int, list[TextCensus], list[RowError]], None],
             batch_tokens: int, truncate: bool, backend: str, device: str, dtype: str, address: str | None,
             actors: int, gpus_per_actor: float, num_cpus: int | None) -> None:
    """The pending shards on Ray Data: rows → ``map_batches(CensusWorker)`` on an actor pool → this process
    writes each shard as soon as all its rows are back (so an interrupted run keeps its finished shards)."""
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
            for row in rows:
                problem = row_problem(row.value)
                if problem is not None:  # refused here: no actor needs to see it
                    errors[shard].append(RowError(row.index, row.origin, problem))
                    continue
                texts[row.index], shard_of[row.index] = row.value, shard
                expected[shard] += 1
                items.append({"index": row.index, "origin": row.origin, "text": row.value})
        received = {shard: 0 for shard in plan.pending}
        for shard in plan.pending:
            if expected[shard] == 0:
                shard_done(shard, [], errors[shard])
        if not items:
            return
        cpus = float(ray.cluster_resources().get("CPU", 1))
        threads = max(1, int(cpus // actors)) if not address else 1
        dataset = ray.data.from_items(items).map_batches(
            CensusWorker, batch_size=_RAY_BATCH_ROWS, batch_format="numpy",
            compute=ray.data.ActorPoolStrategy(size=actors),
            num_gpus=gpus_per_actor or None, num_cpus=1 if gpus_per_actor else min(1.0, cpus / actors),
            fn_constructor_kwargs=dict(spec=spec, device=device, dtype=dtype, backend=backend,
                                       batch_tokens=batch_tokens, truncate=truncate, threads=threads))

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
                                    for name in STATISTICS}))
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
