"""The census's input (:func:`read_input`): rows of .txt, .jsonl or .parquet files, or of a folder of them, with a
fingerprint of their bytes; :func:`row_problem` says why a row cannot be measured before it is tokenised."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from inspector.base.assets import ASSETS_DIR
from inspector.base.errors import InvalidRequestError
from inspector.base.textfiles import read_file_lines

INPUT_SUFFIXES = (".txt", ".jsonl", ".parquet")
# The shipped corpus (assets/corpus/README.md): 15,192 sentences from Python, NumPy and SciPy documentation.
CENSUS_CORPUS_PATH = ASSETS_DIR / "corpus" / "census-sentences.txt"


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
    if source.exists() and not source.is_file():  # /dev/zero, a pipe: reading it would never end (issue 45)
        raise InvalidRequestError(f"the input {source} is not a regular file (a device, pipe or socket); give a "
                                  ".txt, .jsonl or .parquet file or a folder of them")
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
                value = Unreadable(f"the line is not JSON ({err.msg})")
            else:
                value = (record.get(column, Unreadable(f"the JSON object has no key {column!r}"))
                         if isinstance(record, dict) else Unreadable("the line is not a JSON object"))
        rows.append(InputRow(start + len(rows), f"{name}:{number}", value))
    if path.suffix == ".jsonl":
        _check_column_named(path, column, lines)
    return rows


def _check_column_named(path: Path, column: str, lines: list[str]) -> None:
    """Refuse a .jsonl file where no JSON object has ``column``: a typo in --column, not rows to list as errors
    (issue 45: it "succeeded" with 0 texts and NaN lines)."""
    keys: dict[str, None] = {}
    for line in lines:
        try:
            record = json.loads(line) if line.strip() else None
        except json.JSONDecodeError:
            continue
        if isinstance(record, dict):
            if column in record:
                return
            keys.update(dict.fromkeys(record))
    if keys:
        shown = ", ".join(repr(k) for k in list(keys)[:8])
        raise InvalidRequestError(f"no JSON object in {path} has the key {column!r} (they have {shown}); name the "
                                  "text column with --column")


@dataclass(frozen=True)
class Unreadable:
    """A row that could not be read as a value at all (bad JSON, missing key); ``reason`` goes to errors.jsonl."""

    reason: str


def file_digest(path: Path) -> str:
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
        digest.update(f"{path.name}\0{path.stat().st_size}\0{file_digest(path)}\n".encode())
    if limit is not None:
        rows = rows[:limit]
    return CensusInput(paths=files, column=column, rows=tuple(rows), fingerprint=digest.hexdigest())


def row_problem(value: object) -> str | None:
    """Why a value cannot be measured before tokenising it (not text, empty), or None."""
    if isinstance(value, Unreadable):
        return value.reason
    if not isinstance(value, str):
        return f"not text: the value is {type(value).__name__} {json.dumps(value, default=str)[:80]}"
    if not value.strip():
        return "empty text"
    return None

