"""The census folder (the package docstring lists its files): the manifest's model and code descriptions, the one
writer's folder lock, atomic writes, resuming checks, and the shards written and read back — every file read checked
before anything is built from it (a folder is data, possibly crafted)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from inspector.analyses.batching import STATISTICS, TOP_KEYS
from inspector.analyses.census.exemplars import EXEMPLAR_STATISTICS, TextExtremes, shard_extremes
from inspector.analyses.census.input import InputRow, file_digest
from inspector.analyses.census.measure import RowError, TextCensus
from inspector.base.assets import REPO_ROOT
from inspector.base.errors import InvalidRequestError
from inspector.base.textfiles import read_file_lines
from inspector.core.loading import ModelInfo, resolve_model_folder

FORMAT_VERSION = 1


class CensusFolderError(InvalidRequestError):
    """The output folder holds a census of another model or input, or is not a census folder."""


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
            digest.update(f"{path.name}\0".encode() + bytes.fromhex(file_digest(path)))
    return digest.hexdigest()


def describe_model(spec: str, info: ModelInfo) -> dict:
    """The manifest's model entry: spec, name, shape, resolved folder, hub revision (the snapshot commit) and
    fingerprint."""
    folder, _ = resolve_model_folder(spec)
    revision = folder.name if folder.parent.name == "snapshots" else None
    return {"spec": spec, "name": info.name, "architecture": info.architecture, "num_layers": info.num_layers,
            "num_heads": info.num_heads, "folder": str(folder.resolve()), "revision": revision,
            "fingerprint": model_fingerprint(folder), "dtype": info.dtype}


def now() -> str:
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


def write_atomic(path: Path, data: bytes) -> None:
    _replace_from_temporary(path, lambda temporary: temporary.write_bytes(data))


def _is_run_leftover(path: Path) -> bool:
    """The lock file, a temporary file a killed run left behind, or a ``shards`` folder holding nothing else —
    what a run killed before its first manifest leaves (never a census file itself)."""
    if path.name == "shards" and path.is_dir():
        return all(_is_run_leftover(entry) for entry in path.iterdir())
    return path.name == _LOCK_NAME or (path.name.startswith(".") and path.name.endswith(_TEMPORARY_SUFFIX))


@contextlib.contextmanager
def folder_lock(out: Path):
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


def write_json(path: Path, payload: dict) -> None:
    write_atomic(path, (json.dumps(payload, ensure_ascii=False, indent=1, allow_nan=False) + "\n").encode())


def _identity(manifest: dict) -> dict:
    """What must match for a folder to be resumed: the model, the input and what is measured."""
    # The model by its resolved folder, not the words that named it: "m/" and "./m" are the same model as "m".
    return {"model fingerprint": manifest["model"]["fingerprint"], "model": manifest["model"]["folder"],
            "input fingerprint": manifest["input"]["fingerprint"], "text column": manifest["input"]["column"],
            "row limit": manifest["input"]["limit"], "truncation": manifest["input"]["truncate"],
            "statistics": manifest["statistics"], "shard size": manifest["shard_size"],
            "format": manifest["format_version"], "exemplars": manifest.get("exemplars", 0)}


def check_resumable(out: Path, manifest: dict) -> dict | None:
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


def shard_path(out: Path, shard: int) -> Path:
    return out / "shards" / f"part-{shard:05d}.parquet"


def write_shard(out: Path, shard: int, measured: list[TextCensus], errors: list[RowError], shape: tuple[int, int],
                exemplars: bool = False) -> TextExtremes | None:
    """The shard's errors first, then its Parquet file, each written to a temporary name and renamed: a shard
    whose Parquet file exists is complete. ``exemplars``: the rows also hold each text's token strings and its
    extreme per exemplar statistic and head (``token_strings``; ``exemplar_query``, ``exemplar_value``,
    ``exemplar_keys``, ``exemplar_key_weights``: S · L · H values a text, statistic-major, then layer-major), and
    those extremes are returned (text_index filled)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = shard_path(out, shard)
    lines = "".join(json.dumps(e.as_json(), ensure_ascii=False) + "\n" for e in sorted(errors, key=lambda e: e.index))
    write_atomic(path.with_suffix(".errors.jsonl"), lines.encode())
    size = shape[0] * shape[1]
    columns = {"index": pa.array([m.index for m in measured], pa.int64()),
               "text": pa.array([m.text for m in measured], pa.string()),
               "tokens": pa.array([m.tokens for m in measured], pa.int32())}
    for name in STATISTICS:
        flat = np.stack([m.statistics[name].reshape(-1) for m in measured]).astype(np.float32) if measured \
            else np.zeros((0, size), np.float32)
        columns[name] = pa.FixedSizeListArray.from_arrays(pa.array(flat.reshape(-1), pa.float32()), size)
    if exemplars:
        extremes = shard_extremes([m.exemplars for m in measured], shape)
        rows = len(EXEMPLAR_STATISTICS) * size
        columns["token_strings"] = pa.array([list(m.exemplars.tokens) for m in measured], pa.list_(pa.string()))
        for name, values, kind, width in (("exemplar_query", extremes.query, pa.int32(), rows),
                                          ("exemplar_value", extremes.value, pa.float64(), rows),
                                          ("exemplar_keys", extremes.keys, pa.int32(), rows * TOP_KEYS),
                                          ("exemplar_key_weights", extremes.key_weights, pa.float32(),
                                           rows * TOP_KEYS)):
            columns[name] = pa.FixedSizeListArray.from_arrays(pa.array(values.reshape(-1), kind), width)
    table = pa.table(columns)
    # Dictionary encoding, Parquet's default, pays on repeated values. A shard with exemplars is mostly the extremes'
    # columns, whose values barely repeat: trying it took half its write (a 300-text shard: 19.5 ms with it on all
    # but the values and weights, 10.5 ms with none, and 3.70 MB against 3.56 MB), so it is off for that shard.
    dictionary = not exemplars
    _replace_from_temporary(path, lambda temporary: pq.write_table(table, temporary, use_dictionary=dictionary))
    return replace(extremes, text_index=np.array([m.index for m in measured], np.int64)) if exemplars else None


@dataclass(frozen=True)
class CensusPlan:
    """What a run has to do: the folder, the manifest, and the input rows of each shard not yet written."""

    out: Path
    manifest: dict
    pending: dict[int, tuple[InputRow, ...]]
    total_rows: int


# What a census folder's files may hold, checked before anything is built from them: a folder is data, possibly
# crafted (issue 33: 17 of 37 crafted folders raised an exception box).
_MAX_FOLDER_JSON_BYTES = 64 * 2**20
_MAX_LAYERS_OR_HEADS = 4096
# What reading a damaged file of the folder may raise (pyarrow's own errors subclass these or ArrowException).
UNREADABLE = (OSError, ValueError, KeyError, TypeError, AttributeError, IndexError, RecursionError, OverflowError)


def whole(value: object, least: int = 0) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= least


def own_file(path: Path) -> Path:
    """``path`` if it is a regular file of the folder itself (not a link to elsewhere), else a refusal."""
    if path.is_symlink() or not path.is_file():
        raise CensusFolderError(f"{path} is not a regular file of the census folder (a link, a folder or missing); "
                                "a census folder holds its own files — rerun the census into a new folder")
    return path


def read_folder_json(path: Path) -> object:
    own_file(path)
    if path.stat().st_size > _MAX_FOLDER_JSON_BYTES:
        raise CensusFolderError(f"{path} has {path.stat().st_size:,} bytes, more than a census writes; it is not a "
                                "census file")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (*UNREADABLE, UnicodeDecodeError) as err:
        raise CensusFolderError(f"{path} is not readable JSON ({type(err).__name__}); rerun the census into a new "
                                "folder") from None


def checked_manifest(out: Path) -> dict:
    """The folder's manifest.json, with every field this module reads checked for type and range."""
    manifest = read_folder_json(out / "manifest.json")
    problem = None
    if not isinstance(manifest, dict):
        problem = "it is not a JSON object"
    elif not (isinstance(manifest.get("shape"), list) and len(manifest["shape"]) == 2
              and all(whole(n, 1) and n <= _MAX_LAYERS_OR_HEADS for n in manifest["shape"])):
        problem = "its shape is not [layers, heads]"
    elif not (isinstance(manifest.get("model"), dict)
              and [manifest["model"].get("num_layers"), manifest["model"].get("num_heads")] == manifest["shape"]):
        problem = "its model does not name the layers and heads of its shape"
    elif not (isinstance(manifest.get("input"), dict) and whole(manifest["input"].get("rows"))):
        problem = "its input has no row count"
    elif not whole(manifest.get("shard_size"), 1):
        problem = "its shard_size is not a whole number of at least 1"
    if problem:
        raise CensusFolderError(f"{out / 'manifest.json'} is not a census manifest: {problem}; rerun the census into "
                                "a new folder")
    return manifest


def read_shards(out: Path, manifest: dict) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray, list[dict]]:
    """(statistic → (texts, L, H), indices, token counts, errors) over every finished shard, in input order; a
    shard that is not what a census writes (its schema, its sizes, a link) is a :class:`CensusFolderError`."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    layers, heads = manifest["shape"]
    shards = out / "shards"
    tables = []
    for path in sorted(shards.glob("part-*.parquet")) if shards.is_dir() else ():
        own_file(path)
        try:
            schema = pq.read_schema(path)
            missing = [name for name in ("index", "tokens", *STATISTICS) if name not in schema.names]
            if missing:
                raise ValueError(f"no column {', '.join(missing)}")
            for name in STATISTICS:
                kind = schema.field(name).type
                if not (pa.types.is_fixed_size_list(kind) and kind.list_size == layers * heads):
                    raise ValueError(f"column {name} is not {layers} × {heads} values a text")
            if not (pa.types.is_integer(schema.field("index").type)
                    and pa.types.is_integer(schema.field("tokens").type)):
                raise ValueError("index and tokens are not whole numbers")
            # Only the columns read here: a census with exemplars also holds each text's tokens and extremes.
            table = pq.read_table(path, columns=["index", "tokens", *STATISTICS])
        except (*UNREADABLE, pa.ArrowException) as err:
            raise CensusFolderError(f"{path} is not a census shard ({err}); rerun the census into a new folder") \
                from None
        tables.append(table)
    errors: list[dict] = []
    for path in sorted(shards.glob("part-*.errors.jsonl")) if shards.is_dir() else ():
        own_file(path)
        try:
            rows = [json.loads(line) for line in read_file_lines(path) if line]
        except (*UNREADABLE, UnicodeDecodeError) as err:
            raise CensusFolderError(f"{path} is not a census error list ({type(err).__name__}); rerun the census "
                                    "into a new folder") from None
        if not all(isinstance(row, dict) and whole(row.get("index")) for row in rows):
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

