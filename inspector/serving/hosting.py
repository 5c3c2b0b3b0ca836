"""Hosted mode: what a public instance may load and how much work one request may cost.

People share links to a hosted instance, so anything a visitor types or a link carries must stay inside limits
the operator chose. This module reads those limits once, from environment variables, into a frozen
:class:`HostingPolicy`; the app passes it to :func:`load_allowed_model` and to the request guards of
:mod:`inspector.core.budget`. Off by default: a local ``make app`` loads any folder or hub id, as before.

Anchors: transformers' SECURITY.md (never ``trust_remote_code``, prefer safetensors — :mod:`inspector.core.loading`
already refuses both, in every mode), the Open LLM Leaderboard's submission rules (models named by hub id *and
commit*, safetensors weights, parameter count read from the safetensors metadata before anything runs), and
Streamlit's security settings (XSRF and CORS protection, upload limit, error details — see docs/DEPLOYMENT.md).

Environment variables (read by :meth:`HostingPolicy.from_env`):

- ``INSPECTOR_HOSTED=1`` turns hosted mode on: only the bundled models (MiniLM and the two decoders,
  ``bundled:NAME``), the shipped models and the hub models of the allow-list load — never a local path typed in or
  carried by a link — each hub model at its pinned commit.
- ``INSPECTOR_ALLOWED_MODELS``: the allow-list file (TOML, format in :data:`DEFAULT_ALLOW_LIST`'s comments);
  default ``assets/hosting/allowed_models.toml``.
- ``INSPECTOR_MAX_PARAMETERS``: the parameter cap, checked from safetensors headers before weights are fetched
  (hosted default :data:`HOSTED_MAX_PARAMETERS`; no cap locally unless set).
- ``INSPECTOR_WEIGHTS_BUDGET_MB``: memory for one request's materialised attention weights (hosted default
  :data:`HOSTED_WEIGHTS_BUDGET_BYTES`; locally :data:`inspector.core.budget.ALL_LAYERS_WEIGHTS_BUDGET_BYTES`).
- ``INSPECTOR_DEADLINE_S``: seconds a forward — and every page's long job (:mod:`inspector.serving.jobs`) — may
  run before it is stopped between layers or steps (hosted default :data:`HOSTED_DEADLINE_S`; none locally unless
  set).
- ``INSPECTOR_JOB_MEMORY_MB``: memory one long job may take, by which :mod:`inspector.serving.jobs` plans each
  page's token limit (hosted default :data:`inspector.base.limits.HOSTED_JOB_MEMORY_BYTES`; only hosted instances
  plan by it).
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from inspector.base.assets import ASSETS_DIR
from inspector.base.errors import HostingConfigError, ModelNotAllowedError
from inspector.base.i18n import Notice
from inspector.base.limits import (
    ALL_LAYERS_WEIGHTS_BUDGET_BYTES,
    HOSTED_JOB_MEMORY_BYTES,
    HOSTED_WEIGHTS_BUDGET_BYTES,
)
from inspector.base.model_ids import is_hub_id, is_spec_name
from inspector.core.bundled import bundled_choices
from inspector.core.loading import DEFAULT_MODEL, DEFAULT_MODEL_LABEL, LoadedModel, load_model, shipped_choices

DEFAULT_ALLOW_LIST = ASSETS_DIR / "hosting" / "allowed_models.toml"
# all-MiniLM-L6-v2 has 23 M parameters, GPT-2 124 M, SmolLM2-135M 135 M, the bundled Gemma 3 270M 268 M (1.1 GB in
# fp32; issue 27 offers it on every instance): a 2-core, few-GiB server runs these.
HOSTED_MAX_PARAMETERS = 300_000_000
# The bundled model's 512-token capture took 177 ms on 2 CPU cores (benchmarks.inspect_latency, docs/BENCHMARKS.md);
# a minute means something is wrong (a huge model, a machine under load), and the visitor should hear so rather
# than wait.
HOSTED_DEADLINE_S = 60.0
_TRUE = ("1", "true", "yes", "on")
# A pin must be a commit: branches and tags move, so "main" would let the hub change what the instance runs.
_COMMIT = re.compile(r"[0-9a-f]{40}")


@dataclass(frozen=True)
class AllowedHubModel:
    """A hub model the instance may load: its id, the commit it is pinned to, and the label the sidebar shows."""

    hub_id: str
    revision: str
    label: str


@dataclass(frozen=True)
class ShippedModel:
    """A model folder deployed with the instance (not downloaded), offered under ``name``."""

    name: str
    folder: Path
    label: str


@dataclass(frozen=True)
class HostingPolicy:
    """What this instance may load and how much one request may cost (see the module docstring).

    ``hosted``: whether the allow-list applies. ``hub_models`` / ``shipped``: the allow-list besides the bundled
    model. ``max_parameters``: the parameter cap (None = none). ``weights_budget_bytes``: memory for one
    request's exact weights. ``deadline_s``: seconds a forward or a page's job may take (None = no deadline).
    ``job_memory_bytes``: memory one long job may take (:mod:`inspector.serving.jobs`).
    """

    hosted: bool = False
    hub_models: tuple[AllowedHubModel, ...] = ()
    shipped: tuple[ShippedModel, ...] = ()
    max_parameters: int | None = None
    weights_budget_bytes: int = ALL_LAYERS_WEIGHTS_BUDGET_BYTES
    deadline_s: float | None = None
    job_memory_bytes: int = HOSTED_JOB_MEMORY_BYTES

    def __post_init__(self) -> None:
        if self.max_parameters is not None and self.max_parameters <= 0:
            raise ValueError(f"HostingPolicy.max_parameters must be positive; got {self.max_parameters}")
        if self.weights_budget_bytes <= 0:
            raise ValueError(f"HostingPolicy.weights_budget_bytes must be positive; got {self.weights_budget_bytes}")
        if self.deadline_s is not None and self.deadline_s <= 0:
            raise ValueError(f"HostingPolicy.deadline_s must be positive; got {self.deadline_s}")
        if self.job_memory_bytes <= 0:
            raise ValueError(f"HostingPolicy.job_memory_bytes must be positive; got {self.job_memory_bytes}")
        names = [DEFAULT_MODEL, *(m.hub_id for m in self.hub_models), *(m.name for m in self.shipped)]
        if len(set(names)) != len(names):
            raise ValueError(f"HostingPolicy names a model twice: {names}")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> HostingPolicy:
        """The policy the environment describes; raises :class:`HostingConfigError` for unreadable settings."""
        hosted = environ.get("INSPECTOR_HOSTED", "").strip().lower() in _TRUE
        hub_models: tuple[AllowedHubModel, ...] = ()
        shipped: tuple[ShippedModel, ...] = ()
        if hosted:
            hub_models, shipped = read_allow_list(Path(environ.get("INSPECTOR_ALLOWED_MODELS") or DEFAULT_ALLOW_LIST))
        budget_mb = positive_setting(environ, "INSPECTOR_WEIGHTS_BUDGET_MB", int)
        job_mb = positive_setting(environ, "INSPECTOR_JOB_MEMORY_MB", int)
        max_parameters = positive_setting(environ, "INSPECTOR_MAX_PARAMETERS", int)
        deadline_s = positive_setting(environ, "INSPECTOR_DEADLINE_S", float)
        return cls(
            hosted=hosted, hub_models=hub_models, shipped=shipped,
            max_parameters=max_parameters or (HOSTED_MAX_PARAMETERS if hosted else None),
            weights_budget_bytes=(budget_mb * 2**20 if budget_mb else
                                  HOSTED_WEIGHTS_BUDGET_BYTES if hosted else ALL_LAYERS_WEIGHTS_BUDGET_BYTES),
            deadline_s=deadline_s or (HOSTED_DEADLINE_S if hosted else None),
            job_memory_bytes=job_mb * 2**20 if job_mb else HOSTED_JOB_MEMORY_BYTES,
        )

    def model_choices(self) -> dict[str, str]:
        """Spec → label of every model this instance offers: the bundled one first, then the bundled decoders
        (``bundled:NAME``: installed from pinned packages, their GGUF checked against a pinned SHA-256), then the
        project's own trained models (``shipped:NAME``, as safe as the bundled one: they are in the repository), then
        the operator's shipped folders, then hub models."""
        return {DEFAULT_MODEL: DEFAULT_MODEL_LABEL, **bundled_choices(), **shipped_choices(),
                **{m.name: m.label for m in self.shipped},
                **{m.hub_id: m.label for m in self.hub_models}}

    def allows(self, spec: str) -> bool:
        """Whether ``spec`` may be loaded here (always true outside hosted mode)."""
        return not self.hosted or spec in self.model_choices()


def positive_setting(environ: Mapping[str, str], name: str, kind: type, example: str | None = None
                     ) -> int | float | None:
    """The environment variable ``name`` read as a positive ``kind`` (int or float); None when it is unset or empty.
    Anything else stops the instance at start with one line naming the variable and an ``example`` value."""
    raw = environ.get(name, "").strip()
    if not raw:
        return None
    try:
        value = kind(raw)
    except ValueError:
        value = None
    if value is None or value <= 0:
        raise HostingConfigError(f"{name}={raw!r} is not a positive {'whole ' if kind is int else ''}number; set it "
                                 f"to one (e.g. {name}={example or ('200000000' if kind is int else '60')}) "
                                 "or unset it")
    return value


def read_allow_list(path: Path) -> tuple[tuple[AllowedHubModel, ...], tuple[ShippedModel, ...]]:
    """The hub models (``[[model]]``: ``id``, ``revision`` = a 40-hex commit, optional ``label``) and shipped
    folders (``[[shipped]]``: ``name``, ``path`` relative to the file, optional ``label``) of an allow-list."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as err:
        raise HostingConfigError(f"the allow-list {path} cannot be read ({err}); fix the file or point "
                                 "INSPECTOR_ALLOWED_MODELS at a valid one (format: docs/DEPLOYMENT.md)") from err
    unknown = sorted(set(data) - {"model", "shipped"})
    if unknown:
        raise HostingConfigError(f"the allow-list {path} has unknown tables {unknown}; only [[model]] and "
                                 "[[shipped]] entries are read (format: docs/DEPLOYMENT.md)")
    hub_models, shipped = [], []
    for index, entry in enumerate(data.get("model", [])):
        hub_id, revision = entry.get("id"), entry.get("revision")
        if not is_hub_id(hub_id) or hub_id == DEFAULT_MODEL:
            raise HostingConfigError(f"{path}: [[model]] entry {index + 1} has id {hub_id!r}, not a hub id like "
                                     "'openai-community/gpt2'; fix the entry")
        if not isinstance(revision, str) or not _COMMIT.fullmatch(revision):
            raise HostingConfigError(f"{path}: '{hub_id}' is pinned to {revision!r}, not a 40-character commit hash; "
                                     "branches and tags move — copy the commit from the model's 'Files and "
                                     "versions' page on the hub")
        hub_models.append(AllowedHubModel(hub_id, revision, str(entry.get("label") or f"{hub_id} (hub)")))
    for index, entry in enumerate(data.get("shipped", [])):
        name, relative = entry.get("name"), entry.get("path")
        if not is_spec_name(name) or not isinstance(relative, str):
            raise HostingConfigError(f"{path}: [[shipped]] entry {index + 1} needs a name (letters, digits, -_.) "
                                     "and a path to its folder, relative to the allow-list file")
        folder = (path.parent / relative).resolve()
        if not folder.is_dir():
            raise HostingConfigError(f"{path}: shipped model '{name}' points at {folder}, which is not a folder; "
                                     "deploy the folder or remove the entry")
        shipped.append(ShippedModel(name, folder, str(entry.get("label") or f"{name} (shipped)")))
    try:
        HostingPolicy(hub_models=tuple(hub_models), shipped=tuple(shipped))
    except ValueError as err:
        raise HostingConfigError(f"{path}: {err}; give each model one entry") from err
    return tuple(hub_models), tuple(shipped)


def load_allowed_model(spec: str, policy: HostingPolicy, device: str = "auto", dtype: str = "auto") -> LoadedModel:
    """Load ``spec`` under ``policy``: in hosted mode only a bundled model, a shipped model or an allow-listed
    hub model at its pinned commit, refused (:class:`ModelNotAllowedError`) before anything is read or fetched;
    everywhere, a model above the parameter cap is refused before its weights are fetched or loaded."""
    spec = (spec or "").strip()
    if not policy.hosted:
        return load_model(spec, device, dtype, max_parameters=policy.max_parameters)
    if not policy.allows(spec):
        offered = ", ".join(policy.model_choices())
        raise ModelNotAllowedError(f"'{spec}' is not one of the models this hosted instance offers ({offered}); it "
                                   "loads only listed models, never a folder or any hub id — pick one of those, or "
                                   "run the app on your own machine (make app) to load anything",
                                   notice=Notice("error.model_not_offered", model=spec[:60]))
    shipped = {m.name: m for m in policy.shipped}
    if spec in shipped:
        return load_model(str(shipped[spec].folder), device, dtype, max_parameters=policy.max_parameters)
    if Path(spec).exists():
        # The loader prefers a folder to a hub id of the same name; a hosted instance must not be steered to disk.
        raise ModelNotAllowedError(f"'{spec}' is allow-listed as a hub model, but a file or folder of that name "
                                   "exists in the server's working directory; the operator must remove or rename it")
    revision = next((m.revision for m in policy.hub_models if m.hub_id == spec), None)
    return load_model(spec, device, dtype, revision=revision, max_parameters=policy.max_parameters)
