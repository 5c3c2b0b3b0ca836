"""The head atlas (issue 41; HeadVis, Anthropic 2026, is the reference): every head of a model on one map, each with
the contexts that drive it — read from a census folder (``python -m inspector census --exemplars K --roles``) or from
a shipped atlas (``assets/atlas/<model>/``: the same folder without its shards). No model runs to open one.

An atlas folder holds the census's ``manifest.json`` and ``summary.json`` (per head and statistic, the mean over the
corpus with a 95 % interval), and, where the run wrote them, ``roles.json`` (head roles by probe,
:mod:`inspector.analyses.census.roles`) and the exemplars (:mod:`inspector.analyses.atlas_exemplars`). Every file goes
through the census's own crafted-folder checks (:func:`~inspector.analyses.census.summary.read_census`,
:func:`~inspector.analyses.census.roles.read_census_roles`): a folder that is not what a census writes is one
:class:`~inspector.analyses.census.store.CensusFolderError` line, and reading never writes.

A head's metrics (:func:`atlas_metrics`) are the census's statistics and the probe's role scores, each a (layers,
heads) mean with its interval; a card's live row (:func:`live_row`) is the one model call, on request: one forward of
the exemplar's text, the head's weights from its query.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from inspector.analyses.atlas_exemplars import ExemplarTable, read_exemplar_files
from inspector.analyses.batching import STATISTICS
from inspector.analyses.census.exemplar_files import EXEMPLAR_TEXTS_FILE, EXEMPLARS_FILE
from inspector.analyses.census.roles import ROLES_FILE, read_census_roles
from inspector.analyses.census.store import CensusFolderError
from inspector.analyses.census.summary import CensusSummary, read_census
from inspector.analyses.roles import NO_ROLE, ROLES
from inspector.base.assets import ASSETS_DIR
from inspector.base.errors import InvalidRequestError
from inspector.core.capture import capture
from inspector.core.loading import LoadedModel

ATLAS_DIR = ASSETS_DIR / "atlas"
LAYER_METRIC = "layer"


@dataclass(frozen=True)
class MetricGrid:
    """One metric of every head: mean, low, high (layers, heads) float64 (low/high: the 95 % interval, NaN where
    none)."""

    mean: np.ndarray
    low: np.ndarray
    high: np.ndarray


@dataclass(frozen=True)
class Atlas:
    """A census read for the atlas. summary: the census's; roles: ``roles.json`` as
    :func:`~inspector.analyses.census.roles.read_census_roles` returns it, or None; exemplars: the exemplar table, or
    None (a census without ``--exemplars``); folder: where it was read from."""

    summary: CensusSummary
    roles: dict | None
    exemplars: ExemplarTable | None
    folder: str

    def __post_init__(self) -> None:
        if self.roles is None:
            return
        path = Path(self.folder) / ROLES_FILE
        if tuple(self.roles["shape"]) != self.summary.shape:
            raise CensusFolderError(f"{path} is of a {self.roles['shape'][0]} × {self.roles['shape'][1]} model, the "
                                    f"census of a {self.summary.shape[0]} × {self.summary.shape[1]} one; rerun "
                                    "`census --roles` into this folder")
        dominant = np.asarray(self.roles["dominant"], dtype=object).ravel()
        if not all(isinstance(role, str) and role in (*ROLES, NO_ROLE) for role in dominant):
            raise CensusFolderError(f"{path} names a dominant role that is not a role; rerun `census --roles`")
        thresholds = self.roles.get("thresholds")
        if not (isinstance(thresholds, dict) and all(isinstance(thresholds.get(role), (int, float))
                                                     and not isinstance(thresholds.get(role), bool)
                                                     for role in ROLES)):
            raise CensusFolderError(f"{path} has no threshold for every role; rerun `census --roles`")

    @property
    def shape(self) -> tuple[int, int]:
        return self.summary.shape

    @property
    def model_spec(self) -> str:
        """The spec the census loaded its model by (``default``, ``bundled:gemma-3-270m``, a hub id …)."""
        return str(self.summary.model.get("spec", ""))

    @property
    def model_name(self) -> str:
        return str(self.summary.model.get("name", ""))

    def text_of(self, text_index: int) -> str | None:
        """The text the census read at input row ``text_index`` (the exemplars' texts keep it), or None."""
        return self.exemplars.sources.get(text_index) if self.exemplars is not None else None


def read_atlas(folder: str | Path) -> Atlas:
    """The atlas of the census in ``folder`` (a census folder, or a shipped atlas: the same files without shards):
    summary, roles and exemplars, each checked as the census's readers check them. Raises
    :class:`CensusFolderError` (one line naming the file) for anything that is not what a census writes."""
    out = Path(folder).expanduser()
    summary = read_census(out)
    roles = read_census_roles(out) if (out / ROLES_FILE).exists() or (out / ROLES_FILE).is_symlink() else None
    return Atlas(summary=summary, roles=roles, exemplars=read_exemplar_files(out, summary.shape), folder=str(out))


def shipped_atlases() -> dict[str, Path]:
    """The atlases that ship with the app (``assets/atlas/<name>/``), by name, sorted."""
    if not ATLAS_DIR.is_dir():
        return {}
    return {path.name: path for path in sorted(ATLAS_DIR.iterdir()) if (path / "manifest.json").is_file()}


def shipped_atlas_spec(name: str) -> str:
    """The model spec a shipped atlas was made of: ``default`` (MiniLM) or a bundled decoder's ``bundled:NAME``."""
    return "default" if name == "default" else f"bundled:{name}"


def atlas_metrics(atlas: Atlas) -> dict[str, MetricGrid]:
    """Every metric the atlas can place a head by: ``layer``, the census's statistics and (with roles) the probe's
    role scores — each (layers, heads)."""
    layers, heads = atlas.shape
    layer = np.repeat(np.arange(layers, dtype=np.float64)[:, None], heads, axis=1)
    metrics = {LAYER_METRIC: MetricGrid(layer, layer, layer)}
    for name in STATISTICS:
        metrics[name] = MetricGrid(*(np.asarray(part[name], np.float64) for part in
                                     (atlas.summary.mean, atlas.summary.low, atlas.summary.high)))
    if atlas.roles is not None:
        for role in ROLES:
            scores = atlas.roles["scores"][role]
            metrics[role] = MetricGrid(*(np.array([[np.nan if x is None else x for x in row] for row in scores[part]],
                                                  dtype=np.float64) for part in ("mean", "low", "high")))
    return metrics


def dominant_role(atlas: Atlas, layer: int, head: int) -> str | None:
    """The probe's dominant role of the head (one of :data:`~inspector.analyses.roles.ROLES`, or ``none``); None
    for an atlas without roles."""
    if atlas.roles is None:
        return None
    return str(atlas.roles["dominant"][layer][head])


@dataclass(frozen=True)
class LiveRow:
    """One head's attention row drawn live: tokens (n,) as the model reads the text; weights (n,) float32 of the
    query at ``query`` over every key; seconds: the forward's wall time."""

    tokens: tuple[str, ...]
    query: int
    weights: np.ndarray
    seconds: float


def live_row(loaded: LoadedModel, text: str, layer: int, head: int, query: int, *, backend: str = "auto",
             ) -> LiveRow:
    """One forward of ``text`` (only ``layer``'s weights kept) and the row of (``layer``, ``head``) at ``query``.
    Raises :class:`InvalidRequestError` when the query is not a position of the text as this model reads it (the
    census was of another tokenizer)."""
    result = capture(loaded, text, backend=backend, weights=[layer])
    if not 0 <= query < len(result.tokens):
        raise InvalidRequestError(f"query position {query} is not in the text as {loaded.info.name} reads it "
                                  f"({len(result.tokens)} tokens); the census was of another model")
    return LiveRow(tokens=result.tokens, query=query, weights=result.weights[layer][head, query].copy(),
                   seconds=float(sum(result.timings.values())))


def export_atlas(census_folder: str | Path, out: str | Path) -> Atlas:
    """Write the census in ``census_folder`` as a shippable atlas into ``out``: its manifest, summary, roles,
    exemplars and the exemplars' texts, as they are — a few MB, no shards. The census is read and checked first
    (:func:`read_atlas`) and must hold exemplars; returns the atlas read back from ``out``."""
    source, out = Path(census_folder).expanduser(), Path(out)
    if read_atlas(source).exemplars is None:
        raise CensusFolderError(f"{source} holds no exemplars; run the census with --exemplars K first")
    out.mkdir(parents=True, exist_ok=True)
    for name in ("manifest.json", "summary.json", ROLES_FILE, EXEMPLARS_FILE, EXEMPLAR_TEXTS_FILE):
        if (source / name).is_file():
            shutil.copyfile(source / name, out / name)
    return read_atlas(out)
