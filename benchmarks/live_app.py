"""A real ``streamlit run app.py`` server on a free loopback port, and the Chromium that drives it — shared
by the browser tests (tests/test_browser.py) and the app benchmarks, so both measure the same thing.

Only loopback: the server listens on 127.0.0.1 and nothing here sends traffic anywhere else.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = Path("/usr/bin/chromium")
# As root in a sandboxed container: no sandbox, no GPU; the background-networking flags stop Chromium's own
# connections to Google's hosts, which this machine's closed network refuses many at a time.
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
SERVER_START_TIMEOUT_S = 30


class AppServerError(RuntimeError):
    """The server exited or never answered its health check; the message carries its log."""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait_until_healthy(url: str, server: subprocess.Popen, log_path: Path, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise AppServerError(f"streamlit exited with code {server.returncode}:\n{log_path.read_text()}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.1)
    raise AppServerError(f"streamlit did not answer /_stcore/health within {timeout_s:g} s:\n{log_path.read_text()}")


@contextlib.contextmanager
def running_app(*, timeout_s: float = SERVER_START_TIMEOUT_S, env: Mapping[str, str] | None = None,
                options: Sequence[str] = ()) -> Iterator[str]:
    """Start ``streamlit run app.py`` (this interpreter, repository root) and yield its URL once healthy;
    stop it on exit. ``env``: variables added to this process's environment for the server (e.g.
    ``INSPECTOR_HOSTED``); ``options``: extra ``streamlit run`` flags (e.g. ``--client.showErrorDetails none``)."""
    with running_server(REPO_ROOT, timeout_s=timeout_s, env=env, options=options) as (url, _pid):
        yield url


@contextlib.contextmanager
def running_server(tree: Path, *, timeout_s: float = SERVER_START_TIMEOUT_S, env: Mapping[str, str] | None = None,
                   options: Sequence[str] = ()) -> Iterator[tuple[str, int]]:
    """:func:`running_app` for ``tree``'s app.py (another checkout of the project, run from its own folder):
    yields (URL, the server's pid) once healthy and stops the server on exit."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    command = [sys.executable, "-m", "streamlit", "run", str(tree / "app.py"), "--server.headless", "true",
               "--server.port", str(port), "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false",
               *options]
    with tempfile.TemporaryDirectory() as scratch:
        log_path = Path(scratch) / "streamlit.log"
        with log_path.open("w") as log:
            server = subprocess.Popen(command, cwd=tree, stdout=log, stderr=subprocess.STDOUT,
                                      env={**os.environ, **(env or {})})
            try:
                _wait_until_healthy(url, server, log_path, timeout_s)
                yield url, server.pid
            finally:
                server.terminate()
                try:
                    server.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    server.kill()
                    server.wait()


# What the Inspect page draws, as the browser sees it. Streamlit wraps every Altair chart in this element;
# Vega draws into an <svg class="marks"> (or a <canvas>).
CHART = '[data-testid="stVegaLiteChart"]'
CHART_DRAWN = f"{CHART} svg.marks, {CHART} canvas"


def heatmap_drawn(layer: int, head: int) -> str:
    """A JavaScript predicate: the heatmap of (layer, head) is on the page."""
    title = f"Layer {layer}, head {head}: attention weights"
    return f"[...document.querySelectorAll('{CHART} svg')].some(svg => svg.textContent.includes({title!r}))"


def click_grid_cell(page, layer: int, head: int) -> None:
    """Click the (layer, head) cell of the entropy grid (the page's first chart) with the mouse."""
    # Vega labels each mark for screen readers with its tooltip fields, which names the cell to click.
    cell = page.locator(CHART).first.locator(f'path[aria-label^="head: {head}; layer: {layer}; entropy (normalised)"]')
    cell.scroll_into_view_if_needed()
    box = cell.bounding_box()
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
