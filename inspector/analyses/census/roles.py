"""Head roles by probe kept in a census folder (``roles.json``), so roles can be compared across models."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from inspector.analyses.census.store import (
    UNREADABLE,
    CensusFolderError,
    code_version,
    describe_model,
    now,
    read_folder_json,
    whole,
    write_json,
)
from inspector.base.errors import InvalidRequestError
from inspector.core.loading import LoadedModel

if TYPE_CHECKING:
    from inspector.analyses.roles import RolesResult

# The sentences roles.json carries (verdicts, report), built above the analyses: the command line passes
# inspector.charts.sentences.roles.roles_words.
RolesWords = Callable[["RolesResult"], dict[str, list[str]]]

# ----------------------------------------------------------------------------------------------- head roles

ROLES_FILE = "roles.json"


def census_roles(spec: str, out: str | Path, *, words: RolesWords, loaded: LoadedModel | None = None,
                 device: str = "auto", dtype: str = "auto", backend: str = "auto", **options) -> dict:
    """Probe the head roles of model ``spec`` (:func:`inspector.analyses.roles_causal.head_roles` with ``options``:
    repeat, batch, top_k, window, seed, seeds) — no corpus needed — and write them into the census folder ``out`` as
    ``roles.json`` next to (or without) a corpus census, so roles can be compared across models. The census's own
    files and readers are untouched (:func:`read_census` does not read this file); :func:`read_census_roles` does.
    Returns the JSON written: :func:`inspector.analyses.roles.roles_json` (its verdicts and report from ``words``,
    the command line's :func:`inspector.charts.sentences.roles.roles_words`) plus the census's ``model`` description
    and ``shape``."""
    from inspector.analyses.roles import roles_json
    from inspector.analyses.roles_causal import head_roles
    from inspector.core.loading import load_model

    out = Path(out)
    if out.exists() and not out.is_dir():
        raise CensusFolderError(f"--out {out} is a file, not a folder; give a new or empty folder")
    if loaded is None:
        loaded = load_model(spec, device=device, dtype=dtype)
    result = head_roles(loaded, backend=backend, **options)
    payload = roles_json(result, **words(result))
    payload.update(model=describe_model(spec, loaded.info), model_name=result.model, shape=list(result.shape),
                   written=now(), code=code_version())
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / ROLES_FILE, payload)
    return payload


def read_census_roles(folder: str | Path) -> dict:
    """The ``roles.json`` a census folder holds (:func:`census_roles`), checked: a model description, a [layers,
    heads] shape and, for every role, mean/low/high grids of that shape. :class:`CensusFolderError` otherwise."""
    from inspector.analyses.roles import ROLES

    path = Path(folder).expanduser() / ROLES_FILE
    if not path.is_file():
        raise CensusFolderError(f"{path.parent} holds no head roles ({ROLES_FILE}); run `python -m inspector census "
                                "--roles --out FOLDER` first")
    payload = read_folder_json(path)
    try:
        shape = payload["shape"]
        if not (isinstance(shape, list) and len(shape) == 2 and all(whole(n, 1) for n in shape)):
            raise ValueError("its shape is not [layers, heads]")
        for role in ROLES:
            for part in ("mean", "low", "high"):
                grid = np.array([[np.nan if x is None else x for x in row] for row in payload["scores"][role][part]],
                                dtype=np.float32)
                if grid.shape != tuple(shape):
                    raise ValueError(f"{role} {part} is not {shape[0]} × {shape[1]}")
        if np.array(payload["dominant"]).shape != tuple(shape):
            raise ValueError("its dominant roles are not one per head")
    except (*UNREADABLE, InvalidRequestError) as err:
        raise CensusFolderError(f"{path} is not a head-roles file ({err}); rerun `census --roles`") from None
    return payload

