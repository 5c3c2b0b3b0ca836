"""The report ending every benchmark script shares: where a figure came from, and the one place benchmark
scripts write ``docs/BENCHMARKS.md`` (and their raw JSON).

``shared/DESIGN.md`` asks that every figure be recorded with its command, shapes, versions and device.
:func:`provenance_lines` gathers those facts from the running machine (never typed in by hand; :func:`gpu_lines`
adds the GPU's), :func:`write_section` replaces one ``## Title`` section of the benchmarks file, leaving every
other section as it was, so each script can be re-run on its own, and :func:`finish` is the ending of a script:
print the table and its notes, and with ``--write-docs`` write them with their provenance.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
BENCHMARKS_DOC = REPO_ROOT / "docs" / "BENCHMARKS.md"

_DOC_HEADER = """# Benchmarks

Every figure in this file was measured by the command named in its section, on the machine and with the
versions listed there; re-running that command with `--write-docs` replaces that section only. Nothing here
is estimated or copied from elsewhere: a figure that has not been measured is marked as such.

GPU figures: not yet measured (no GPU session).
"""

_VERSIONED_PACKAGES = ("torch", "transformers", "numpy")


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _ram_gib() -> str:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return f"{int(line.split()[1]) / 2**20:.1f} GiB"
    except OSError:
        pass
    return "unknown"


def _git_state() -> str:
    """Short commit of the checkout and whether the measured code (kernels/, inspector/) differs from it."""
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO_ROOT, capture_output=True,
                                text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "kernels", "inspector"], cwd=REPO_ROOT,
                               capture_output=True, text=True, check=True).stdout.rstrip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout)"
    if not dirty:
        return f"{commit} (kernels/ and inspector/ as committed)"
    # Porcelain lines are "XY path"; X is a space for unstaged changes, so only the end may be stripped.
    changed = [line[3:] for line in dirty.splitlines()]
    return f"{commit} plus uncommitted changes in {', '.join(changed)}"


def system_busy_seconds() -> float:
    """CPU seconds all processes on this machine have spent busy since boot (``/proc/stat``, all CPUs summed)."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(x) for x in fields[:8])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


class OtherLoad:
    """How many CPUs *other* processes kept busy while a block ran: the machine's busy time minus this
    process's own CPU time, divided by wall time. Timings taken while this is well above 0 are contended.

    Usage: ``with OtherLoad() as load: ...``; then ``load.cores``.
    """

    def __enter__(self) -> OtherLoad:
        self._wall, self._busy, self._own = time.perf_counter(), system_busy_seconds(), time.process_time()
        return self

    def __exit__(self, *exc) -> None:
        wall = time.perf_counter() - self._wall
        others = (system_busy_seconds() - self._busy) - (time.process_time() - self._own)
        self.cores = max(0.0, others) / wall if wall > 0 else 0.0


def provenance_lines(command: str, shapes: str, *, gpu: bool = False) -> list[str]:
    """Markdown bullet lines: command, shapes, code version, package versions, machine, date. gpu: the figures
    come from a GPU (then :func:`gpu_lines` describes it; the machine line says so instead of "no GPU")."""
    versions = ", ".join(f"{name} {metadata.version(name)}" for name in _VERSIONED_PACKAGES)
    threads = os.environ.get("OMP_NUM_THREADS", "unset")
    return [
        f"- Command: `{command}`",
        f"- Shapes: {shapes}",
        f"- Code: git {_git_state()}",
        f"- Versions: python {platform.python_version()}, {versions}",
        f"- Machine: {len(os.sched_getaffinity(0))} CPUs (`nproc`), {_cpu_model()}, {_ram_gib()} RAM, "
        f"{platform.system()} {platform.machine()}, {'GPU below' if gpu else 'no GPU'}; OMP_NUM_THREADS={threads}",
        f"- Date: {datetime.date.today().isoformat()}",
    ]


def gpu_lines(device: str) -> list[str]:
    """A markdown bullet naming the device that ran the numbers: the CUDA GPU (name, memory, SMs, compute
    capability, CUDA, cuDNN and Triton versions), or the CPU interpreter of a smoke run."""
    import torch

    if device != "cuda":
        return ["- Device: CPU through Triton's interpreter (`TRITON_INTERPRET=1`) — a smoke run, not performance"]
    import triton

    props = torch.cuda.get_device_properties(0)
    cudnn = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else "n/a"
    return [f"- GPU: {props.name}, {props.total_memory / 2**30:.0f} GiB, {props.multi_processor_count} SMs, compute "
            f"capability {props.major}.{props.minor}; CUDA {torch.version.cuda}, cuDNN {cudnn}, triton "
            f"{triton.__version__}"]


def shown_argv(argv: list[str] | None) -> list[str]:
    """The arguments a script was run with: those given to ``main(argv)``, else the command line's."""
    return list(argv if argv is not None else sys.argv[1:])


def command_line(module: str, argv: list[str]) -> str:
    """The command a reader can paste to reproduce a run, from the repository root."""
    interpreter = Path(sys.executable)
    if interpreter.is_relative_to(REPO_ROOT):  # a virtualenv inside the checkout: show it as the user runs it
        shown = str(interpreter.relative_to(REPO_ROOT))
    else:
        shown = "python"
    return " ".join([shown, "-m", module, *argv])


def write_section(title: str, body: str, path: Path = BENCHMARKS_DOC) -> None:
    """Replace (or append) the ``## {title}`` section of ``path``, creating the file with its header if missing.

    A section runs from its heading to the next ``## `` heading or the end of the file.
    """
    text = path.read_text() if path.exists() else _DOC_HEADER
    section = f"## {title}\n\n{body.strip()}\n"
    pattern = re.compile(rf"^## {re.escape(title)}[ \t]*\n.*?(?=^## |\Z)", re.MULTILINE | re.DOTALL)
    if pattern.search(text):
        text = pattern.sub(lambda _: section + "\n", text, count=1)
    else:
        text = text.rstrip("\n") + "\n\n" + section
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text.rstrip("\n") + "\n")


def write_report(title: str, summary: str, *, module: str, argv: list[str], shapes: str, table: str,
                 notes: list[str]) -> None:
    """Write one benchmark's section: a summary line, its provenance, the measured table and its notes."""
    body = "\n".join([summary, "", *provenance_lines(command_line(module, argv), shapes), "", table, "", *notes])
    write_section(title, body)
    print(f"wrote section '{title}' of {BENCHMARKS_DOC.relative_to(REPO_ROOT)}", file=sys.stderr)


def finish(write_docs: bool, title: str, summary: str, *, module: str, argv: list[str] | None, shapes: str,
           table: str, notes: list[str]) -> None:
    """The ending of a benchmark script: print the table and its notes; when ``write_docs`` (its ``--write-docs``)
    is set, also write them as the ``title`` section of docs/BENCHMARKS.md with their provenance
    (:func:`write_report`). argv: what ``main`` was given (None: the command line)."""
    print(table)
    print("\n".join(notes))
    if write_docs:
        write_report(title, summary, module=module, argv=shown_argv(argv), shapes=shapes, table=table, notes=notes)


def write_raw_json(path: Path, raw: dict) -> None:
    """A benchmark's raw numbers next to its table: indented JSON, anything JSON lacks (a dtype, a Path) as text."""
    path.write_text(json.dumps(raw, indent=1, default=str))


def benchmark_parser(doc: str, section_title: str) -> argparse.ArgumentParser:
    """A benchmark script's argument parser: its docstring's first paragraph as the description, its usage
    examples kept as written, and ``--write-docs`` for its own section of docs/BENCHMARKS.md."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--write-docs", action="store_true",
                        help=f"replace the '{section_title}' section of docs/BENCHMARKS.md with this run")
    return parser
