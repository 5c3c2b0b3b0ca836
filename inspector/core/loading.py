"""Resolve a model spec — ``"default"``, ``"bundled:NAME"`` (a bundled decoder LM, prepared once from its GGUF
into a cached safetensors folder by :mod:`inspector.core.bundled`), ``"shipped:NAME"`` (a model this project
trained, under ``assets/models``), a local folder, or a Hugging Face hub id — and load it safely.

Safety by construction: ``trust_remote_code=False`` always; a folder any of whose configs (config.json,
tokenizer_config.json, processor_config.json, …) asks for remote code (``auto_map``) is refused before anything
is imported; only safetensors weights are read (a folder with pickle weights only is refused, so a crafted pickle
never runs), and their headers are checked against the file sizes first. Any failure to read a config, the
tokenizer or the weights becomes one of the typed errors of :mod:`inspector.base.errors`, never a library traceback
(issue 18). A hub id may be pinned to a ``revision``, and ``max_parameters`` refuses a model above a cap,
counted from its safetensors headers before any weight is fetched or loaded (hosted mode,
:mod:`inspector.serving.hosting`). Every model is loaded with ``attn_implementation="inspector"`` so all its attention
layers call :mod:`kernels.hf`, and its transformer blocks are wrapped once so that a forward may start at a layer
(:func:`kernels.hf.install_layer_resume`); the loaded model is then shared read-only — per-call behaviour travels
in :func:`kernels.hf.attention_request`.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import stat
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np
import torch

import kernels.compiled_cpu
import kernels.hf  # registers the "inspector" attention implementation
from inspector.base.errors import (
    CorruptModelError,
    InvalidRequestError,
    NotAModelError,
    UnsafeModelError,
    UnsupportedModelError,
)
from inspector.base.i18n import Notice
from inspector.base.model_ids import DEFAULT_MODEL, SHIPPED_PREFIX, ModelSpec
from inspector.base.progress import Progress
from inspector.core.bundled import ModelCard, cache_root, card_for
from inspector.core.heap import keep_freed_heap
from inspector.core.library_bars import library_bars
from inspector.core.model_folders import (
    CARD_NAME,
    DEFAULT_MODEL_LABEL,
    SHIPPED_MODELS_DIR,
    bundled_model_path,
    check_parameter_count,
    hub_parameter_count,
    model_label,
    model_name,
    resolve_model_folder,
    shipped_choices,
    shipped_kind,
    shipped_model_path,
)
from inspector.core.token_codec import TokenCodec

# Names that moved to inspector.core.model_folders and inspector.base.model_ids (issue 39) and are still imported
# from here by the pages, the analyses and scripts.
__all__ = ["CARD_NAME", "DEFAULT_MODEL", "DEFAULT_MODEL_LABEL", "SHIPPED_MODELS_DIR", "SHIPPED_PREFIX", "LoadedModel",
           "ModelInfo", "bundled_model_path", "check_parameter_count", "check_safetensors", "hub_parameter_count",
           "load_model", "model_label", "resolve_model_folder", "safetensors_parameter_count", "shipped_choices",
           "shipped_kind", "shipped_model_path"]

HeadKind = Literal["none", "masked-lm", "causal-lm", "classifier"]

_PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".ckpt", ".pkl")
# A safetensors file starts with an 8-byte little-endian header length, then that many bytes of JSON naming each
# tensor's dtype and shape (https://github.com/huggingface/safetensors#format). Real headers are kilobytes to a
# few megabytes; anything past this is not a header we will parse.
_SAFETENSORS_MAX_HEADER_BYTES = 100 * 2**20
# Config keys that make transformers import a model's own Python files (with remote code allowed, transformers would
# run them).
_REMOTE_CODE_KEYS = ("auto_map", "custom_pipelines")
_MAX_CONFIG_BYTES = 16 * 2**20
# Tokenizer files and the rest (vocabularies, merges, SentencePiece models): Gemma's tokenizer.json has 33 MB.
_MAX_TOKENIZER_FILE_BYTES = 512 * 2**20
# What a config may say, checked before a model is built from it (a config of 100,000 layers once ran 226 s to a
# MemoryError): no supported model comes near these.
_CONFIG_BOUNDS = {"num_hidden_layers": 1024, "num_attention_heads": 1024, "hidden_size": 2**17, "vocab_size": 2**23}
# A config whose model would be this many times larger than its weights describes another model.
_CONFIG_WEIGHTS_RATIO = 8


@dataclass(frozen=True)
class ModelInfo:
    """What the inspector needs to know about a loaded model.

    ``causal``: whether its attention layers are causal (decoders). ``head``: which output head it has.
    ``sliding_window``: the configured window, if any layers use one. ``max_positions``: the longest input
    (in tokens) it accepts. ``card``: a bundled model's card (architecture, licence, source, quantisation).
    """

    name: str
    source: str
    architecture: str
    model_type: str
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    hidden_size: int
    causal: bool
    max_positions: int
    head: HeadKind
    vocab_size: int
    num_parameters: int
    sliding_window: int | None = None
    labels: tuple[str, ...] = ()
    device: str = "cpu"
    dtype: str = "float32"
    card: ModelCard | None = None

    def __post_init__(self) -> None:
        if self.num_heads % self.num_kv_heads != 0:
            raise ValueError(f"num_heads {self.num_heads} is not a multiple of num_kv_heads {self.num_kv_heads}")

    def check_layer(self, layer: int, what: str = "layer") -> int:
        """``layer`` as an int if this model has it, else :class:`InvalidRequestError` naming the valid range.
        ``what`` names the option in the message (``"--layer"``, ``"an intervention's layer"`` …)."""
        return _checked_index(layer, self.num_layers, what, f"{self.name} has layers 0–{self.num_layers - 1}",
                              lambda value: Notice("error.no_such_layer", layer=value, model=model_name(self.name),
                                                   last=self.num_layers - 1))

    def check_head(self, head: int, what: str = "head") -> int:
        """``head`` as an int if each layer of this model has it, else :class:`InvalidRequestError`."""
        return _checked_index(head, self.num_heads, what, f"{self.name} has heads 0–{self.num_heads - 1} per layer",
                              lambda value: Notice("error.no_such_head", head=value, model=model_name(self.name),
                                                   last=self.num_heads - 1))

    def as_json(self) -> dict:
        return {"name": self.name, "source": self.source, "architecture": self.architecture,
                "model_type": self.model_type, "num_layers": self.num_layers, "num_heads": self.num_heads,
                "num_kv_heads": self.num_kv_heads, "head_dim": self.head_dim, "hidden_size": self.hidden_size,
                "causal": self.causal, "max_positions": self.max_positions, "head": self.head,
                "vocab_size": self.vocab_size, "num_parameters": self.num_parameters,
                "sliding_window": self.sliding_window, "labels": list(self.labels), "device": self.device,
                "dtype": self.dtype, "card": self.card.as_json() if self.card is not None else None}


@dataclass(frozen=True, eq=False)
class LoadedModel:
    """A model in eval mode, its tokenizer and its :class:`ModelInfo`. Shared and never mutated after load.

    ``codec`` is the one way to call the tokenizer and read its special tokens
    (:class:`inspector.core.token_codec.TokenCodec`: every call under its lock, the Rust tokenizer not being safe to
    call from two threads); ``tokenizer`` is the object itself (the codec's, a cache's key).
    """

    model: torch.nn.Module
    tokenizer: object
    info: ModelInfo
    codec: TokenCodec = field(init=False, repr=False)
    _first_parameter: torch.nn.Parameter | None = field(init=False, repr=False, default=None)

    def __post_init__(self) -> None:
        object.__setattr__(self, "codec", TokenCodec(self.tokenizer))
        # Read on every forward: the parameter itself, not a walk over the modules each time (its device follows the
        # model's, as Module.to moves a parameter's data, not the parameter).
        object.__setattr__(self, "_first_parameter", next(self.model.parameters(), None))

    @property
    def device(self) -> torch.device:
        """Where the model's parameters live (every input of a forward goes there)."""
        return (self._first_parameter if self._first_parameter is not None else next(self.model.parameters())).device

    @property
    def can_resume(self) -> bool:
        """Whether a forward can start at a layer from kept outputs (:class:`kernels.hf.ResumeAt`): the model's
        transformer blocks were found and wrapped at load."""
        return kernels.hf.layer_resume_installed(self.model, self.info.num_layers)


def _checked_index(value, count: int, what: str, valid: str, notice: Callable[[object], Notice]) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 0 <= int(value) < count:
        raise InvalidRequestError(f"{what} {value} does not exist: {valid}", notice=notice(value))
    return int(value)


def _safetensors_header(path: Path) -> dict:
    """The JSON header of one ``*.safetensors`` file, checked against the file's size: the declared header length
    and every tensor's byte range must lie inside the file (a truncated download, or a hostile 2**60-byte header
    length, fails here with a ValueError instead of deep inside the safetensors reader)."""
    file_size = path.stat().st_size
    with path.open("rb") as handle:
        prefix = handle.read(8)
        size = struct.unpack("<Q", prefix)[0] if len(prefix) == 8 else -1
        if not 0 < size <= min(_SAFETENSORS_MAX_HEADER_BYTES, file_size - 8):
            raise ValueError(f"it declares a {size:,}-byte header in a {file_size:,}-byte file" if size >= 0
                             else f"it has only {file_size} bytes")
        header = json.loads(handle.read(size))
    if not isinstance(header, dict):
        raise ValueError("its header is not a JSON object")
    data_bytes = file_size - 8 - size
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        start, end = entry["data_offsets"]
        if not 0 <= start <= end <= data_bytes:
            raise ValueError(f"tensor {name[:60]!r} lies at bytes {start:,}–{end:,} of {data_bytes:,} (the file is "
                             "truncated)")
    return header


def _unreadable_weights(path: Path, folder: Path, err: Exception) -> NotAModelError:
    return NotAModelError(f"'{path.name}' in '{folder}' is not a readable safetensors file ({err}); download it "
                          "again, or re-save the model with save_pretrained(safe_serialization=True)")


def check_safetensors(folder: Path) -> None:
    """Raise :class:`NotAModelError` unless every ``*.safetensors`` file of ``folder`` has a sound header."""
    for path in sorted(Path(folder).glob("*.safetensors")):
        try:
            _safetensors_header(path)
        except (OSError, ValueError, KeyError, TypeError, struct.error) as err:
            raise _unreadable_weights(path, folder, err) from err


def safetensors_parameter_count(folder: Path) -> int:
    """Parameters in a folder's ``*.safetensors`` files, read from their headers only (no tensor is loaded).

    Raises :class:`NotAModelError` for a file whose header is not safetensors."""
    total = 0
    for path in sorted(Path(folder).glob("*.safetensors")):
        try:
            header = _safetensors_header(path)
            total += sum(math.prod(entry["shape"]) for name, entry in header.items() if name != "__metadata__")
        except (OSError, ValueError, KeyError, TypeError, struct.error) as err:
            raise _unreadable_weights(path, folder, err) from err
    return total


def _check_folder(folder: Path) -> dict:
    """Refuse folders that are not models or would run code; return the parsed config.json."""
    config_path = folder / "config.json"
    if not config_path.is_file():
        found = sorted(p.name for p in folder.iterdir())[:8]
        raise NotAModelError(f"'{folder}' is not a model folder: it has no config.json (found: "
                             f"{', '.join(found) if found else 'nothing'})")
    config = _read_config(config_path, folder)
    _check_folder_files(folder)
    if not isinstance(config, dict) or "model_type" not in config:
        raise NotAModelError(f"'{config_path}' has no model_type, so no architecture can be chosen for it")
    _refuse_remote_code(folder, {config_path.name: config})
    names = {p.name for p in folder.iterdir()}
    if not any(n.endswith(".safetensors") for n in names):
        pickles = sorted(n for n in names if n.endswith(_PICKLE_SUFFIXES))
        if pickles:
            raise UnsafeModelError(f"'{folder.name}' has only pickle weights ({', '.join(pickles)}), which can run "
                                   "code when loaded; convert them to model.safetensors first")
        raise NotAModelError(f"'{folder}' has no *.safetensors weights")
    return config


def _regular_file(path: Path, folder: Path, most_bytes: int | None) -> int:
    """The size of ``path``, refused unless it is a regular file once links are followed (the hub cache links to
    its blobs; a link to /dev/zero reads as 0 bytes and never ends) of at most ``most_bytes``."""
    try:
        status = path.stat()
    except OSError as err:
        raise NotAModelError(f"'{path.name}' in '{folder}' cannot be read ({err.strerror}); download the model "
                             "again") from None
    if not stat.S_ISREG(status.st_mode):
        raise NotAModelError(f"'{path.name}' in '{folder}' is not a regular file (a device, a pipe or a folder); a "
                             "model folder holds files — download the model again")
    if most_bytes is not None and status.st_size > most_bytes:
        raise NotAModelError(f"'{path.name}' in '{folder}' has {status.st_size:,} bytes, more than the "
                             f"{most_bytes:,} such a file has; it is not a model file")
    return status.st_size


def _read_config(path: Path, folder: Path) -> object:
    """A JSON config of the folder, read only when it is a regular file of a config's size; one clear refusal for
    anything else, a config nested too deeply to parse included."""
    _regular_file(path, folder, _MAX_CONFIG_BYTES)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as err:
        reason = "it is nested too deeply" if isinstance(err, RecursionError) else str(err)
        raise NotAModelError(f"'{path.name}' in '{folder.name}' is not a readable JSON config ({reason}); "
                             "download the model again") from None


def _check_folder_files(folder: Path) -> None:
    """Every file transformers may read from the folder is a regular file of a sane size, checked before any is
    opened: weights (their headers are checked later), tokenizer files and the rest."""
    for path in sorted(folder.iterdir()):
        if path.name.startswith(".") or (path.is_dir() and not path.is_symlink()):
            continue  # .cache and the like, and sub-folders: transformers reads neither here
        weights = path.suffix == ".safetensors"
        _regular_file(path, folder, None if weights else _MAX_TOKENIZER_FILE_BYTES)


def _refuse_remote_code(folder: Path, already_read: dict[str, dict]) -> None:
    """Refuse the folder if any of its configs asks for code that ships with the model: ``auto_map`` (the key
    transformers follows to a ``*.py`` file, in config.json but also tokenizer_config.json, processor_config.json,
    preprocessor_config.json, …) or ``custom_pipelines``. Every ``*config*.json`` of the folder is read."""
    for path in sorted(folder.glob("*config*.json")):
        config = already_read.get(path.name)
        if config is None:
            config = _read_config(path, folder)
        asks = [key for key in _REMOTE_CODE_KEYS if isinstance(config, dict) and key in config]
        if asks:
            raise UnsafeModelError(f"'{folder.name}' needs its own Python code ({path.name} has {asks[0]}); the "
                                   "inspector never runs code that comes with a model (trust_remote_code=False)")


def _check_config_numbers(name: str, config, folder: Path) -> None:
    """Refuse a config whose sizes no model has (0, −1, 100,000 layers; NaN or negative epsilons) or that describes
    a model far larger than its weights — before anything is built from it."""
    for setting, most in _CONFIG_BOUNDS.items():
        value = getattr(config, setting, None)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= most:
            raise NotAModelError(f"the config of '{name}' says {setting} = {value!r}; a model has a whole number from "
                                 f"1 to {most:,} there — the config.json is damaged or not this model's")
    for setting, value in vars(config).items():
        damaged = isinstance(value, float) and not (math.isfinite(value) and value > 0)
        if setting.endswith(("eps", "epsilon")) and damaged:
            raise NotAModelError(f"the config of '{name}' says {setting} = {value!r}; a normalisation epsilon is a "
                                 "small positive number — the config.json is damaged")
    layers, hidden = getattr(config, "num_hidden_layers", None), getattr(config, "hidden_size", None)
    vocab = getattr(config, "vocab_size", None) or 0
    if layers and hidden:
        described = 12 * layers * hidden**2 + vocab * hidden  # attention + MLP blocks and the embedding, roughly
        held = safetensors_parameter_count(folder)
        if described > _CONFIG_WEIGHTS_RATIO * max(held, 1):
            raise NotAModelError(f"the config of '{name}' describes a model of about {described:,} parameters "
                                 f"({layers} layers, hidden size {hidden}) but its weights hold {held:,}; the "
                                 "config.json belongs to another model")


def _check_weights_match(name: str, loading: dict) -> None:
    """Refuse a model whose weights and config disagree: transformers would fill the missing weights with fresh
    random numbers (a Llama config over DeBERTa's weights, a config of 3 layers over weights of 2 once loaded with
    exit 0 and charts drawn from noise)."""
    problems = []
    for kind, what in (("missing_keys", "missing from the weights (they would be random)"),
                       ("unexpected_keys", "in the weights but not in the model the config describes"),
                       ("mismatched_keys", "of another shape than the config says")):
        keys = sorted(str(key[0] if isinstance(key, tuple) else key) for key in loading.get(kind) or ())
        if keys:
            shown = ", ".join(keys[:3]) + (", …" if len(keys) > 3 else "")
            problems.append(f"{len(keys)} tensor{'s' if len(keys) != 1 else ''} {what} ({shown})")
    if problems:
        raise NotAModelError(f"the weights of '{name}' do not match its config.json: {'; '.join(problems)} — the "
                             "config belongs to another model or the weights are incomplete; download the model again")


def _check_tokenizer_fits(name: str, folder: Path, tokenizer, rows: int) -> None:
    """Refuse another model's tokenizer files, which loaded silently (issue 45, item 7): every id the tokenizer can
    produce needs a row of the embedding, and a tokenizer with fewer than half as many tokens as the embedding has
    rows is not the model's either — real models pad their embedding by a few hundred rows at most (Qwen2.5: 151,665
    tokens for 151,936 rows). A tokenizer's ids run from 0 to its size − 1, added tokens aside (their ids are read);
    building the whole vocabulary instead took 2 s of each Gemma load (docs/BENCHMARKS.md)."""
    count = len(tokenizer)
    largest = max(count - 1, max(TokenCodec(tokenizer).added_tokens(), default=-1))  # before the loaded model's codec
    if largest >= rows:
        why = f"it makes ids up to {largest:,}, but the embedding has {rows:,} rows (ids 0–{rows - 1:,})"
    elif 2 * count < rows:
        why = f"it has {count:,} tokens for an embedding of {rows:,} rows"
    else:
        return
    raise NotAModelError(f"the tokenizer in '{folder}' is not the one of '{name}': {why} — its tokenizer files "
                         "(tokenizer.json, tokenizer_config.json, …) come from another model; put the model's own "
                         "tokenizer files in that folder, or download the model again",
                         notice=Notice("error.tokenizer_not_the_models", model=model_name(name), tokens=f"{count:,}",
                                       rows=f"{rows:,}"))


def _head_and_auto_class(architectures: list[str]) -> tuple[HeadKind, type]:
    from transformers import AutoModel, AutoModelForCausalLM, AutoModelForMaskedLM, AutoModelForSequenceClassification

    name = architectures[0] if architectures else ""
    if name.endswith("ForMaskedLM"):
        return "masked-lm", AutoModelForMaskedLM
    if name.endswith(("ForCausalLM", "LMHeadModel")):
        return "causal-lm", AutoModelForCausalLM
    if name.endswith("ForSequenceClassification"):
        return "classifier", AutoModelForSequenceClassification
    return "none", AutoModel


def _max_positions(config, tokenizer) -> int:
    limits = [getattr(config, "max_position_embeddings", None), getattr(tokenizer, "model_max_length", None)]
    # Tokenizers without a limit report a huge sentinel (int(1e30)); ignore anything implausible.
    usable = [int(x) for x in limits if isinstance(x, int) and 0 < x < 10_000_000]
    if not usable:
        raise UnsupportedModelError("the model declares no maximum input length (max_position_embeddings)")
    return min(usable)


def _pick_device(device: str) -> torch.device:
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        chosen = torch.device(device)
    except (RuntimeError, TypeError, ValueError) as err:
        raise UnsupportedModelError(f"unknown device {device!r}; use auto, cpu or cuda") from err
    if chosen.type == "cuda" and not torch.cuda.is_available():
        raise UnsupportedModelError("device 'cuda' was asked for but no CUDA GPU is visible; use --device cpu")
    if chosen.type not in ("cpu", "cuda"):
        raise UnsupportedModelError(f"device {device!r} is not supported; use auto, cpu or cuda")
    if chosen.type == "cuda" and chosen.index is not None and chosen.index >= torch.cuda.device_count():
        raise UnsupportedModelError(f"device {device!r} does not exist: this machine has "
                                    f"{torch.cuda.device_count()} CUDA GPU(s), cuda:0 to "
                                    f"cuda:{torch.cuda.device_count() - 1}")
    return chosen


def _pick_dtype(dtype: str, device: torch.device) -> torch.dtype:
    if dtype == "auto":
        return torch.bfloat16 if device.type == "cuda" else torch.float32
    table = {"float32": torch.float32, "fp32": torch.float32, "float16": torch.float16, "fp16": torch.float16,
             "bfloat16": torch.bfloat16, "bf16": torch.bfloat16}
    if dtype not in table:
        raise UnsupportedModelError(f"unknown dtype {dtype!r}; use auto, float32, float16 or bfloat16")
    return table[dtype]


def _check_model_type(name: str, model_type: object) -> None:
    """Refuse a ``model_type`` this transformers does not know with one line, before transformers answers with
    paragraphs of upgrade advice."""
    import transformers
    from transformers import CONFIG_MAPPING

    if not isinstance(model_type, str) or model_type not in CONFIG_MAPPING:
        raise UnsupportedModelError(f"'{name}' has model_type {str(model_type)[:60]!r}, which transformers "
                                    f"{transformers.__version__} does not know; pick a model such as BERT, RoBERTa, "
                                    "GPT-2, Llama, Mistral or Qwen2 (or a newer transformers, if it is a new one)")


@contextlib.contextmanager
def _prepared_folder_advice(spec: ModelSpec, folder: Path) -> Iterator[None]:
    """A bundled decoder's folder is prepared here, never downloaded: a refusal of its files says so and names the
    command that prepares it again (issue 45), instead of "download the model again"."""
    try:
        yield
    except (NotAModelError, UnsupportedModelError) as err:
        if spec.kind != "bundled":
            raise
        what = str(err).split(" — ")[0].split("; download")[0]
        raise CorruptModelError(f"the prepared folder of {spec.text} ({folder}) is damaged: {what}; delete that "
                                f"folder and run `python -m inspector prepare --model {spec.text}`",
                                notice=Notice("error.bundled_damaged", model=spec.text)) from err


def _first_line(err: Exception) -> str:
    """An error's message up to its first blank line, on one line (library messages often add paragraphs)."""
    text = str(err).strip().split("\n\n", 1)[0]
    return " ".join(text.split())[:500] or type(err).__name__


def compiled_kernel(*, wait: bool) -> str | None:
    """Build (once per machine, under the model cache) and load the compiled CPU attention kernel
    (:mod:`kernels.compiled_cpu`) — under ``$INSPECTOR_KERNEL_DIR``, else the model cache's ``kernels`` folder;
    ``wait=False`` builds in the background. None once it is loaded, else why not."""
    configured = os.environ.get(kernels.compiled_cpu.FOLDER_ENV, "").strip()
    root = Path(configured).expanduser() if configured else cache_root() / "kernels"
    return kernels.compiled_cpu.ensure(root, wait=wait)


def load_model(spec: str, device: str = "auto", dtype: str = "auto", *, revision: str | None = None,
               max_parameters: int | None = None, progress: Progress | None = None) -> LoadedModel:
    """Load ``spec`` (``"default"``, ``"bundled:NAME"``, ``"shipped:NAME"``, a folder, or a hub id at ``revision``)
    for inspection; see the module docstring. With ``max_parameters``, a model above the cap is refused before its
    weights are fetched (hub) or loaded (folders): the count comes from the safetensors headers. ``progress`` hears
    a bundled decoder's one-time preparation."""
    from transformers import AutoConfig, AutoTokenizer

    torch_device = _pick_device(device)  # the cheap refusals first: nothing is read or fetched for a bad device
    torch_dtype = _pick_dtype(dtype, torch_device)
    parsed = ModelSpec.parse(spec)
    folder, name = resolve_model_folder(parsed, revision=revision, max_parameters=max_parameters, progress=progress)
    with _prepared_folder_advice(parsed, folder):
        raw_config = _check_folder(folder)
        if max_parameters is not None:
            check_parameter_count(name, safetensors_parameter_count(folder), max_parameters)
        if raw_config.get("is_encoder_decoder"):
            raise UnsupportedModelError(f"'{name}' is an encoder-decoder model ({raw_config['model_type']}); the "
                                        "inspector supports encoder-only and decoder-only models")
        check_safetensors(folder)
    with _prepared_folder_advice(parsed, folder):
        _check_model_type(name, raw_config["model_type"])
        try:
            config = AutoConfig.from_pretrained(folder, trust_remote_code=False)
        except Exception as err:  # noqa: BLE001 — a bad config fails in many types; each means "cannot read it"
            raise UnsupportedModelError(f"transformers cannot read the config of '{name}' "
                                        f"(model_type={raw_config.get('model_type')!r}): {_first_line(err)}") from err
        _check_config_numbers(name, config, folder)
    head, auto_class = _head_and_auto_class(list(getattr(config, "architectures", None) or []))
    try:
        model_class = auto_class._model_mapping[type(config)]
    except KeyError as err:
        raise UnsupportedModelError(f"transformers has no {auto_class.__name__} for model_type "
                                    f"{config.model_type!r}") from err
    if not getattr(model_class, "_supports_attention_backend", False):
        raise UnsupportedModelError(f"{model_class.__name__} ({config.model_type}) computes attention inside its own "
                                    "code instead of through transformers' attention interface, so the inspector "
                                    "cannot see it; pick a model such as BERT, RoBERTa, GPT-2, Llama, Mistral or Qwen2")
    # transformers' "Loading weights" bar stays off stderr (the page shows its own status line while it loads).
    with _prepared_folder_advice(parsed, folder), library_bars():
        try:
            tokenizer = AutoTokenizer.from_pretrained(folder, trust_remote_code=False)
        except Exception as err:  # noqa: BLE001 — tokenizers' Rust errors are plain Exceptions
            raise NotAModelError(f"'{name}' has no usable tokenizer files: {_first_line(err)}") from err
        try:
            model, loading = auto_class.from_pretrained(folder, config=config,
                                                        attn_implementation=kernels.hf.IMPLEMENTATION_NAME,
                                                        trust_remote_code=False,
                                                        use_safetensors=True, dtype=torch_dtype,
                                                        output_loading_info=True)
        except Exception as err:  # noqa: BLE001 — safetensors' SafetensorError, torch's RuntimeError, shape errors …
            raise UnsupportedModelError(f"could not load the weights of '{name}': {_first_line(err)} — download "
                                        "the model again, or re-save it with save_pretrained(safe_serialization=True)"
                                        ) from err
        _check_weights_match(name, loading)
        _check_tokenizer_fits(name, folder, tokenizer, int(model.get_input_embeddings().num_embeddings))
    model = model.to(torch_device).eval()
    model.requires_grad_(False)
    keep_freed_heap()  # forwards reuse the memory the last one freed, instead of faulting it in again
    if torch_device.type == "cpu":
        compiled_kernel(wait=False)  # built once per machine in the background; the other CPU paths serve meanwhile
    # Before the model is shared: its blocks learn to skip to a layer when a request asks (kernels.hf.ResumeAt).
    kernels.hf.install_layer_resume(model, int(config.num_hidden_layers))

    attention_modules = [m for m in model.modules() if kernels.hf.is_attention_module(m)]
    num_heads = int(config.num_attention_heads)
    hidden = int(config.hidden_size)
    labels = tuple(str(config.id2label[i]) for i in sorted(config.id2label)) if head == "classifier" else ()
    info = ModelInfo(
        name=name,
        # a folder: the ground-truth card is read there
        source=str(folder) if parsed.kind != "default" else DEFAULT_MODEL,
        architecture=type(model).__name__,
        model_type=str(config.model_type),
        num_layers=int(config.num_hidden_layers),
        num_heads=num_heads,
        num_kv_heads=int(getattr(config, "num_key_value_heads", None) or num_heads),
        head_dim=int(getattr(config, "head_dim", None) or hidden // num_heads),
        hidden_size=hidden,
        causal=any(bool(m.is_causal) for m in attention_modules),
        max_positions=_max_positions(config, tokenizer),
        head=head,
        vocab_size=int(model.get_input_embeddings().num_embeddings),
        num_parameters=int(sum(p.numel() for p in model.parameters())),
        sliding_window=getattr(config, "sliding_window", None) if getattr(config, "use_sliding_window", True) else None,
        labels=labels,
        device=str(torch_device),
        dtype=str(torch_dtype).removeprefix("torch."),
        card=card_for(parsed),
    )
    return LoadedModel(model=model, tokenizer=tokenizer, info=info)
