"""The quickstart notebook executed by a real kernel, and a real JupyterLab serving it (issue 42) — shared by the
notebook tests (tests/test_notebook.py) and the timing below, so both run the same thing.

Only loopback: JupyterLab listens on 127.0.0.1 with a token, its configuration, data (the notebook-trust database)
and runtime folders live in a temporary folder, and its update and news checks are off.

Timing (docs/BENCHMARKS.md "Quickstart notebook"): ``python -m benchmarks.live_notebook [--rounds N]`` executes
docs/notebooks/quickstart.ipynb N times with nbclient on a fresh ipykernel and prints each wall time (kernel start
included) and each code cell's time.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
QUICKSTART = REPO_ROOT / "docs" / "notebooks" / "quickstart.ipynb"
# The ports this project's JupyterLab tests may use (the first free one is taken).
JUPYTER_PORTS = range(8890, 8900)
CELL_TIMEOUT_S = 300
SERVER_START_TIMEOUT_S = 90


def kernel_env() -> dict[str, str]:
    """The environment of a kernel that imports this checkout's ``inspector`` (whatever is installed editable)."""
    path = os.environ.get("PYTHONPATH", "")
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(REPO_ROOT), path) if p)}


def execute_notebook(source: Path = QUICKSTART, out: Path | None = None):
    """Execute ``source`` top to bottom with nbclient on a fresh ``python3`` ipykernel (working folder: the
    notebook's), write the executed notebook to ``out`` when given, and return it with the seconds it took. A cell
    that raises raises :class:`nbclient.exceptions.CellExecutionError` here."""
    import nbformat
    from nbclient import NotebookClient

    notebook = nbformat.read(source, as_version=4)
    saved = dict(os.environ)
    os.environ.update(kernel_env())  # the kernel inherits this process's environment
    try:
        client = NotebookClient(notebook, timeout=CELL_TIMEOUT_S, kernel_name="python3",
                                resources={"metadata": {"path": str(source.parent)}})
        started = time.perf_counter()
        client.execute()
        seconds = time.perf_counter() - started
    finally:
        os.environ.clear()
        os.environ.update(saved)
    if out is not None:
        nbformat.write(notebook, out)
    return notebook, seconds


def _free_port() -> int:
    for port in JUPYTER_PORTS:
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port in {JUPYTER_PORTS.start}–{JUPYTER_PORTS.stop - 1} for JupyterLab")


def _jupyter_env(home: Path) -> dict[str, str]:
    folders = {"JUPYTER_CONFIG_DIR": "config", "JUPYTER_DATA_DIR": "data", "JUPYTER_RUNTIME_DIR": "runtime",
               "IPYTHONDIR": "ipython"}
    for folder in folders.values():
        (home / folder).mkdir(parents=True, exist_ok=True)
    return {**kernel_env(), **{name: str(home / folder) for name, folder in folders.items()}}


def trust(notebook: Path, home: Path) -> None:
    """Sign ``notebook`` in ``home``'s trust database: JupyterLab runs an output's scripts (bertviz's view) only in
    a trusted notebook, as it would after the user ran it there."""
    subprocess.run([sys.executable, "-m", "jupyter", "trust", str(notebook)], env=_jupyter_env(home), check=True,
                   capture_output=True)


@contextlib.contextmanager
def running_jupyterlab(root: Path, home: Path, *, settings: dict | None = None) -> Iterator[tuple[str, str]]:
    """``jupyter lab`` serving ``root`` on 127.0.0.1 with a fresh token, its folders under ``home``; yields the base
    URL and the token, and stops the server on exit. ``settings``: user settings by
    plugin id (e.g. the notebook's windowing mode)."""
    env = _jupyter_env(home)
    user_settings = home / "settings"
    for plugin, values in (settings or {}).items():
        package, name = plugin.split(":")
        target = user_settings / package / f"{name}.jupyterlab-settings"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(values))
    port, token = _free_port(), secrets.token_hex(16)
    log_path = home / "jupyterlab.log"
    command = [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--ServerApp.ip=127.0.0.1",
               f"--ServerApp.port={port}", "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}",
               f"--ServerApp.root_dir={root}", f"--LabApp.user_settings_dir={user_settings}",
               f"--LabApp.workspaces_dir={home / 'workspaces'}", "--allow-root"]
    # No update check, no news feed, no extension index: the server fetches nothing from the internet.
    (home / "config" / "jupyter_server_config.json").write_text(json.dumps(
        {"LabApp": {"news_url": None, "check_for_updates_class": "jupyterlab.NeverCheckForUpdate",
                    "extension_manager": "readonly"}}))
    with open(log_path, "wb") as log:
        server = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + SERVER_START_TIMEOUT_S
        while True:
            if server.poll() is not None:
                raise RuntimeError(f"jupyter lab exited with code {server.returncode}:\n{log_path.read_text()}")
            try:
                with urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2) as response:
                    if response.status == 200:
                        break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"jupyter lab did not answer within {SERVER_START_TIMEOUT_S} s:\n"
                                   f"{log_path.read_text()}")
            time.sleep(0.5)
        yield url, token
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    print(f"load before: {Path('/proc/loadavg').read_text().strip()}")
    for round_ in range(args.rounds):
        notebook, seconds = execute_notebook()
        print(f"round {round_ + 1}: quickstart executed in {seconds:.1f} s "
              f"(load {Path('/proc/loadavg').read_text().split()[0]})")
        for number, cell in enumerate(notebook.cells):
            timing = cell.metadata.get("execution", {})
            if cell.cell_type == "code" and "shell.execute_reply" in timing:
                took = (datetime.fromisoformat(timing["shell.execute_reply"])
                        - datetime.fromisoformat(timing["iopub.execute_input"])).total_seconds()
                print(f"  cell {number:2d} {took:6.1f} s  {cell.source.splitlines()[0][:60]}")


if __name__ == "__main__":
    main()
