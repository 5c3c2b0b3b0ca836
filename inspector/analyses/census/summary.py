"""A census's summary: per head and statistic the mean over texts with a 95 % Student-t interval, and the health
flags (:class:`CensusSummary`); :func:`finish` writes it from the shards, :func:`read_census` reads it back."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from inspector.analyses.batching import STATISTIC_RANGES, STATISTICS
from inspector.analyses.census.store import (
    UNREADABLE,
    CensusFolderError,
    checked_manifest,
    now,
    read_folder_json,
    read_shards,
    whole,
    write_atomic,
    write_json,
)
from inspector.analyses.metrics import HealthFlags, HealthThresholds, health_flags
from inspector.base.display import Displayable
from inspector.base.errors import InvalidRequestError

STATISTIC_UNITS = {"entropy": "nats", "entropy_normalized": "entropy / log(visible keys)",
                   "mean_distance": "tokens"}
CONFIDENCE = 0.95
# The two special-token masses, in the order of the manifest's special_tokens (census.measure.special_token_names).
_SPECIAL_MASSES = ("mass_cls", "mass_sep")


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

    def special_tokens(self, statistic: str) -> list[str] | None:
        """The model's own tokens a special-token mass (``mass_cls``, ``mass_sep``) measures, as the manifest records
        them (``["<bos>"]``; ``[]`` when the tokenizer adds none); None for any other statistic, or a census written
        before the manifest recorded them."""
        names = self.model.get("special_tokens")
        if statistic not in _SPECIAL_MASSES or not isinstance(names, list) or len(names) != len(_SPECIAL_MASSES):
            return None
        return [str(name) for name in names[_SPECIAL_MASSES.index(statistic)]]

    def zero_by_construction(self, statistic: str) -> str | None:
        """Why ``statistic`` is 0 on every text of this model, by what the manifest records: ``"causal"`` for the mass
        on the next token under a causal mask, ``"specials"`` for a special-token mass whose tokens the tokenizer
        never adds; None when it can be measured (issue 44: decoders' census showed BERT's masses as zeros)."""
        if statistic == "mass_next" and self.model.get("causal") is True:
            return "causal"
        return "specials" if self.special_tokens(statistic) == [] else None


# What turns a summary into the report's sentences (the sentence layer's census_report, in one language).
ReportLines = Callable[[CensusSummary], list[str]]


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


def collect(out: Path, thresholds: HealthThresholds) -> tuple[CensusSummary, list[dict], bool]:
    """The summary of ``out``'s finished shards, their errors, and whether every shard is there — read only."""
    manifest = checked_manifest(out)
    values, index, tokens, errors = read_shards(out, manifest)
    if len(np.unique(index)) != len(index):
        raise CensusFolderError(f"{out} has a text in two shards; the folder was edited by hand — start a new census")
    shards_expected = math.ceil(manifest["input"]["rows"] / manifest["shard_size"])
    complete = len(list((out / "shards").glob("part-*.parquet"))) == shards_expected
    summary = summarise(values, model=manifest["model"], errors=len(errors), tokens=int(tokens.sum()),
                        thresholds=thresholds)
    return with_folder(summary, out, manifest), errors, complete


def finish(out: str | Path, *, thresholds: HealthThresholds = HealthThresholds(),
           report: ReportLines | None = None) -> CensusSummary:
    """Collect the finished shards of ``out`` into errors.jsonl and summary.json (rewritten from the shards every
    time, so nothing is counted twice) and return the summary. The manifest's ``finished`` is set once every
    shard is there. Only a census run calls this; reading a census (:func:`read_census`) never writes.
    ``report`` (the command line passes :func:`inspector.charts.sentences.census.census_report`) writes its lines
    into summary.json's ``report``."""
    out = Path(out)
    summary, errors, complete = collect(out, thresholds)
    write_atomic(out / "errors.jsonl", "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in errors).encode())
    payload = summary_json(summary, report)
    payload["complete"] = complete
    write_json(out / "summary.json", payload)
    if complete and summary.manifest.get("finished") is None:
        manifest = dict(summary.manifest, finished=now())
        write_json(out / "manifest.json", manifest)
        summary = with_folder(summary, out, manifest)
    return summary


def with_folder(summary: CensusSummary, out: Path, manifest: dict) -> CensusSummary:
    return replace(summary, folder=str(out), manifest=manifest)


def _json_grid(array: np.ndarray) -> list:
    return [[(round(float(x), 7) if np.isfinite(x) else None) for x in row] for row in np.asarray(array, np.float64)]


def summary_json(summary: CensusSummary, report: ReportLines | None = None) -> dict:
    """summary.json's content: the numbers of ``summary``, and ``report``'s lines when given (the analyses build no
    sentences: the words live in :mod:`inspector.charts.sentences`)."""
    layers, heads = summary.shape
    payload = {
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
    }
    if report is not None:
        payload["report"] = report(summary)
    return payload


def read_census(folder: str | Path, *, thresholds: HealthThresholds | None = None) -> CensusSummary:
    """The summary of the census in ``folder`` (summary.json, else rebuilt from the shards in memory), judged by
    ``thresholds`` (default: the ones it was written with). Reading never writes into the folder. Raises
    :class:`CensusFolderError` — one line naming the file — for a folder that holds no census or a file that is
    not what a census writes."""
    out = Path(folder).expanduser()
    if not (out / "manifest.json").is_file():
        raise CensusFolderError(f"{out} is not a census folder (no manifest.json); run `python -m inspector census "
                                "--out FOLDER` first, or give the folder it wrote")
    manifest = checked_manifest(out)
    if not (out / "summary.json").exists() and not (out / "summary.json").is_symlink():
        return collect(out, thresholds or HealthThresholds())[0]
    payload = read_folder_json(out / "summary.json")
    try:
        if not isinstance(payload, dict) or payload.get("model") != manifest["model"]:
            raise ValueError("its model is not the manifest's")
        if not all(whole(payload.get(name)) for name in ("texts", "errors", "tokens")):
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
    except (*UNREADABLE, InvalidRequestError) as err:
        raise CensusFolderError(f"{out / 'summary.json'} is not a census summary ({err}); delete it to rebuild it "
                                "from the shards, or rerun the census") from None
    chosen = thresholds or written
    return CensusSummary(model=payload["model"], texts=payload["texts"], errors=payload["errors"],
                         tokens=payload["tokens"], thresholds=chosen, mean=grids["mean"], low=grids["low"],
                         high=grids["high"], count=count,
                         flags=health_flags(grids["mean"]["entropy_normalized"], grids["mean"]["max_sink_score"],
                                            chosen),
                         folder=str(out), manifest=manifest)

