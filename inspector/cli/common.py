"""What every command shares: the model options, reading the text, parsing layer lists, writing JSON — and the
argument checks that run before any model loads (issue 18): numbers within bounds as argparse types, files that
are readable regular files, a JSON destination that can be written. Checks that need the model (a layer past the
last one, a class it does not have) run right after loading, through :func:`check_layers` and ``ModelInfo``."""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from inspector.base.errors import InvalidRequestError, InvalidTextError
from inspector.base.jsonable import to_jsonable
from inspector.base.progress import Progress, no_progress
from inspector.base.textfiles import file_lines

if TYPE_CHECKING:  # the run is imported when a command runs one (python -m inspector --help stays light)
    from inspector.serving.run import Plan, Request

T = TypeVar("T")

BACKENDS = ["auto", "torch", "triton"]
DTYPES = ["auto", "float32", "fp32", "float16", "fp16", "bfloat16", "bf16"]
# No model has this many layers; a layer list is refused past it before any range is built (``0-99999999999``
# would otherwise try to hold 10^11 integers). check_layers then holds it to the loaded model.
MAX_LAYER_INDEX = 1_023
# A text file the CLI reads whole: far past any model's context, small enough to read in a blink.
MAX_TEXT_FILE_BYTES = 10 * 2**20
_DEVICE = re.compile(r"auto|cpu|cuda(:[0-9]{1,2})?")
_LAYER_PART = re.compile(r"([0-9]+)(?:-([0-9]+))?")


def int_in(low: int, high: int) -> Callable[[str], int]:
    """An argparse ``type``: a whole number in [low, high], else the usage error names the range."""

    def parse(value: str) -> int:
        try:
            number = int(value.strip())
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number from {low:,} to {high:,}, got "
                                             f"{_shown(value)}") from None
        if not low <= number <= high:
            raise argparse.ArgumentTypeError(f"{number:,} is outside {low:,}–{high:,}")
        return number

    parse.__name__ = "whole number"  # argparse names the type in its fallback message
    return parse


def float_in(low: float, high: float) -> Callable[[str], float]:
    """An argparse ``type``: a finite number in [low, high]."""

    def parse(value: str) -> float:
        try:
            number = float(value.strip())
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number from {low:g} to {high:g}, got {_shown(value)}") \
                from None
        if not math.isfinite(number) or not low <= number <= high:
            raise argparse.ArgumentTypeError(f"{number:g} is outside {low:g}–{high:g}")
        return number

    parse.__name__ = "number"
    return parse


def device_option(value: str) -> str:
    """An argparse ``type`` for ``--device``: auto, cpu, cuda or cuda:N (whether it exists is checked at load)."""
    value = value.strip().lower()
    if not _DEVICE.fullmatch(value):
        raise argparse.ArgumentTypeError(f"expected auto, cpu, cuda or cuda:N, got {_shown(value)}")
    return value


def _shown(value: str) -> str:
    return repr(value if len(value) <= 40 else value[:40] + "…")


def add_model_options(sub: argparse.ArgumentParser) -> None:
    """``--model``, ``--device``, ``--dtype`` and ``--json``: every command takes them."""
    sub.add_argument("--model", default="default",
                     help="'default' (bundled all-MiniLM-L6-v2), 'bundled:gemma-3-270m' or 'bundled:smollm2-135m' (the "
                          "bundled decoders), 'shipped:NAME' (a model under assets/models), "
                          "a local folder, or a Hugging Face hub id")
    sub.add_argument("--device", default="auto", type=device_option, help="auto, cpu or cuda (default: auto)")
    sub.add_argument("--dtype", default="auto", choices=DTYPES, help="auto, float32, float16 or bfloat16 "
                                                                     "(default: auto)")
    sub.add_argument("--json", metavar="OUT", help="write the numbers as JSON to OUT ('-' for stdout)")


def add_text_options(sub: argparse.ArgumentParser, what: str) -> None:
    """``--text`` or ``--text-file`` (one of them required)."""
    source = sub.add_mutually_exclusive_group(required=True)
    source.add_argument("--text", help=what)
    source.add_argument("--text-file", help="read the text from this UTF-8 file")


def check_model_options(args: argparse.Namespace) -> None:
    """Before loading: the model spec is not empty, and ``--json`` names a file that can be written."""
    if not (args.model or "").strip():
        raise InvalidRequestError("--model is empty; use 'default', 'shipped:NAME', a local folder or a hub id")
    if args.json and args.json != "-":
        try:
            destination = Path(args.json)
            if destination.is_dir():
                raise InvalidRequestError(f"--json {args.json} is a folder; give a file name such as out.json")
            folder = destination.parent
            if not folder.is_dir():
                raise InvalidRequestError(f"--json {args.json}: the folder {folder} does not exist; create it or "
                                          "write elsewhere")
        except (OSError, ValueError) as err:
            raise InvalidRequestError(f"--json {_shown(args.json)} is not a usable file name ({err})") from None


def parse_layers(spec: str) -> str | list[int] | None:
    """``all`` | ``none`` | a comma list of indices and ranges (``0,2-4``) → the ``weights`` argument of capture.

    Every index is checked against :data:`MAX_LAYER_INDEX` before a range is expanded, so the list stays small
    whatever is typed; :func:`check_layers` then holds it to the loaded model."""
    spec = spec.strip().lower()
    if spec == "all":
        return "all"
    if spec in ("none", ""):
        return None
    layers: set[int] = set()
    for part in spec.split(","):
        match = _LAYER_PART.fullmatch(part.strip())
        if match is None:
            raise InvalidRequestError(f"--weights {_shown(spec)}: expected 'all', 'none' or layer indices like "
                                      "0,2-4")
        bounds = [match.group(1), match.group(2) or match.group(1)]
        if any(len(bound) > 4 or int(bound) > MAX_LAYER_INDEX for bound in bounds):
            # Compared as text first: int() of a 5,000-digit string is itself an error.
            raise InvalidRequestError(f"--weights {_shown(part.strip())}: no model has a layer that high (layer "
                                      f"indices here stop at {MAX_LAYER_INDEX:,}); give indices like 0,2-4")
        first, last = (int(bound) for bound in bounds)
        if last < first:
            raise InvalidRequestError(f"--weights {part.strip()}: a range runs from the lower layer to the higher "
                                      f"one (like {last}-{first})")
        layers.update(range(first, last + 1))
    return sorted(layers)


def check_layers(layers: str | list[int] | None, info, option: str = "--weights") -> None:
    """After loading: every layer of a :func:`parse_layers` list exists in the model of ``info``."""
    if isinstance(layers, list):
        for layer in layers:
            info.check_layer(layer, f"{option} layer")


def _read_file(path: str, option: str) -> str:
    """A UTF-8 regular file of at most :data:`MAX_TEXT_FILE_BYTES` (not a folder, a pipe or /dev/zero)."""
    try:
        file = Path(path)
        if not file.is_file():
            raise InvalidRequestError(f"cannot read {option} {path}: "
                                      + ("it is not a regular file" if file.exists() else "no such file"))
        size = file.stat().st_size
        if size > MAX_TEXT_FILE_BYTES:
            raise InvalidRequestError(f"{option} {path} has {size:,} bytes, more than the {MAX_TEXT_FILE_BYTES:,} "
                                      "this command reads; split it")
        return file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError, ValueError) as err:
        raise InvalidRequestError(f"cannot read {option} {_shown(path)}: {err}") from None


def read_text(args: argparse.Namespace) -> str:
    """``--text`` or the contents of ``--text-file``, refused when empty (before any model loads)."""
    text = args.text if args.text_file is None else _read_file(args.text_file, "--text-file")
    if not text.strip():
        raise InvalidTextError("the text is empty; give --text with a sentence (or a --text-file that has one)")
    return text


def read_lines(path: str, option: str) -> list[str]:
    """The non-empty lines of a UTF-8 file given by ``option`` (a corpus), checked before any model loads."""
    texts = [line for line in file_lines(_read_file(path, option)) if line.strip()]
    if not texts:
        raise InvalidTextError(f"{option} {path} has no texts; put one text per line")
    return texts



def write_json(payload: dict, destination: str) -> None:
    """``payload`` through :func:`inspector.base.jsonable.to_jsonable` (arrays, dataclasses, NaN → null) to the file
    ``destination`` or stdout (``-``); allow_nan=False stays as the check that nothing slipped past it."""
    text = json.dumps(to_jsonable(payload), ensure_ascii=False, allow_nan=False)
    if destination == "-":
        sys.stdout.write(text + "\n")
        return
    try:
        Path(destination).write_text(text, encoding="utf-8")
    except (OSError, ValueError) as err:
        raise InvalidRequestError(f"cannot write {destination}: {err}") from err


def warn_if_unreadable(loaded, text: str, lang: str = "en") -> None:
    """One line on stderr when the model maps too much of ``text`` to its unknown token (issue 17); the run goes on."""
    from inspector.charts.sentences.unknown_tokens import unreadable_text_warning

    warning = unreadable_text_warning(loaded, text, lang)
    if warning is not None:
        print(f"warning: {warning}", file=sys.stderr)


def stderr_progress(stream=None) -> Progress:
    """A :data:`inspector.base.progress.Progress` that prints each new stage of a long step on its own stderr line
    (``[ 35%] bundled:gemma-3-270m: dequantising the tensors to fp32``); a stage's own counters (the text in
    brackets) do not make new lines. Unlike :func:`~inspector.base.progress.print_progress`, which rewrites one line,
    every line it prints is complete, so an error after a failed stage starts on a line of its own."""
    last: list[str] = []

    def say(done: int, total: int, note: str) -> None:
        stage = re.sub(r"\s*\(.*\)$", "", note)
        if last and last[0] == stage:
            return
        last[:] = [stage]
        print(f"[{100 * done / total:3.0f}%] {note}", file=stream or sys.stderr, flush=True)

    return say


def prepare_bundled_models(args: argparse.Namespace) -> None:
    """Before a command loads a bundled decoder (``--model bundled:NAME``, or ``--model-b``) for the first time:
    prepare it here, with its progress on stderr, so the command's own output stays clean."""
    from inspector.base.model_ids import ModelSpec
    from inspector.core.bundled import prepare

    for option in ("model", "model_b"):
        text = getattr(args, option, None)
        if not (text or "").strip():  # an empty --model is check_model_options's to refuse
            continue
        spec = ModelSpec.parse(text)  # a malformed spec is refused here, in one line (exit 2)
        if spec.kind == "bundled":
            prepare(spec, progress=stderr_progress())


def hosting_policy():
    """The instance's :class:`~inspector.serving.hosting.HostingPolicy` from the environment: with
    ``INSPECTOR_HOSTED=1`` a command honours the hosted limits a page does (issue 39)."""
    from inspector.serving.hosting import HostingPolicy

    return HostingPolicy.from_env()


def load(args: argparse.Namespace, spec: str | None = None):
    """The model ``spec`` (default ``--model``) on ``--device`` in ``--dtype``, loaded under the hosting policy
    (:func:`inspector.serving.hosting.load_allowed_model`: the allow-list when hosted, the parameter cap)."""
    from inspector.serving.hosting import load_allowed_model

    return load_allowed_model(spec or args.model, hosting_policy(), device=args.device, dtype=args.dtype)


def run_request(request: Request, loaded, work: Callable[[Plan, Progress], T], *,
                progress: Progress | None = None) -> tuple[Plan, T]:
    """Plan ``request`` (an :class:`inspector.serving.run.Request`) on ``loaded`` as a page would, print the plan's
    notices on stderr, then ``work(plan, progress)`` inside the one run (the run slot, the deadline, the progress
    checks): returns (plan, what ``work`` returned)."""
    from inspector.serving.run import run

    planned = plan_request(request, loaded)
    return planned, run(planned, lambda checked: work(planned, checked), progress=progress or no_progress)


def plan_request(request: Request, loaded) -> Plan:
    """The plan of ``request`` on ``loaded`` under :func:`hosting_policy` (:func:`inspector.serving.run.plan`), its
    notices (fewer layers' weights, texts, examples or new tokens) printed on stderr."""
    from inspector.serving.run import plan

    planned = plan(request, loaded, hosting_policy())
    for notice in planned.notices:
        print(f"notice: {notice}", file=sys.stderr)
    return planned


def cpu_loader(args: argparse.Namespace, loaded):
    """For a run's out-of-memory fallback: a loader of ``--model`` on the CPU (None when ``loaded`` is there)."""
    if loaded.device.type == "cpu":
        return None
    return lambda: load(argparse.Namespace(**{**vars(args), "device": "cpu"}))

