"""transformers' progress bars, kept off stderr while the inspector loads or prepares a model (issue 45, item 7).

transformers draws "Loading weights" when it reads safetensors (through ``transformers.utils.logging.tqdm``, which
asks a hook first) and "Converting and de-quantizing GGUF tensors..." when a bundled decoder is prepared (through
``tqdm.auto`` directly). On the command line they broke the promise of one line on stderr; in the app they filled
the server's log. Inside :func:`library_bars`, every such bar that the same thread (or asyncio task) creates
reports to the caller instead — a page's bar, the command line's stage line — or to nothing; a bar created
outside any scope (another thread's, a notebook's) is drawn as transformers would draw it.

Nothing changes at import: the redirection is installed when the first scope opens and removed when the last one
closes (scopes of several threads may overlap; a count under a lock decides).
"""

from __future__ import annotations

import contextlib
import contextvars
import importlib
import threading
from collections.abc import Callable, Iterable, Iterator

from inspector.base.progress import Progress

# ``report(done, total, description)`` — the one progress contract (inspector.base.progress.Progress): the bar
# described so (transformers' words, "Loading weights") has finished ``done`` of its ``total`` steps.

_GGUF_MODULE = "transformers.modeling_gguf_pytorch_utils"  # binds tqdm.auto's tqdm at import as ``tqdm``


class _Scope:
    """Where this thread's bars go while a :func:`library_bars` scope is open."""

    def __init__(self, report: Progress | None) -> None:
        self.report = report


_CURRENT: contextvars.ContextVar[_Scope | None] = contextvars.ContextVar("library_bars_scope", default=None)
_LOCK = threading.Lock()
_open_scopes = 0
_replaced: dict[str, object] = {}  # what was there before the first scope opened: transformers' hook, GGUF's tqdm


class _Bar:
    """Stands in for a tqdm bar: iterates its iterable and reports each step to the scope; every other call a
    caller makes on a bar (``set_description``, ``refresh``, ``close`` …) does nothing."""

    def __init__(self, scope: _Scope, iterable: Iterable | None = None, desc: str | None = None, *args,
                 total: int | None = None, **kwargs) -> None:
        self._scope, self._iterable, self._description, self._done = scope, iterable, str(desc or ""), 0
        self._total = total if total is not None else (len(iterable) if hasattr(iterable, "__len__") else None)

    def __iter__(self) -> Iterator:
        for item in self._iterable if self._iterable is not None else ():
            yield item
            self.update(1)

    def update(self, steps: int = 1) -> None:
        self._done += steps
        if self._scope.report is not None and self._total:
            self._scope.report(min(self._done, self._total), self._total, self._description)

    def __enter__(self) -> _Bar:
        return self

    def __exit__(self, *exc) -> None:
        return None

    def __getattr__(self, name: str) -> Callable[..., None]:
        return lambda *args, **kwargs: None


def _hook(factory, args: tuple, kwargs: dict):
    """transformers' tqdm hook while a scope is open: a scope's bar, else what transformers would make."""
    scope = _CURRENT.get()
    if scope is not None:
        return _Bar(scope, *args, **kwargs)
    previous = _replaced.get("hook")
    return previous(factory, args, kwargs) if previous is not None else factory(*args, **kwargs)


def _gguf_tqdm(*args, **kwargs):
    """The GGUF reader's ``tqdm`` while a scope is open: a scope's bar, else tqdm's own."""
    scope = _CURRENT.get()
    return _Bar(scope, *args, **kwargs) if scope is not None else _replaced["gguf"](*args, **kwargs)


def _install() -> None:
    global _open_scopes
    from transformers.utils import logging as hf_logging

    with _LOCK:
        if _open_scopes == 0:
            _replaced["hook"] = hf_logging.set_tqdm_hook(_hook)
            gguf = importlib.import_module(_GGUF_MODULE)
            _replaced["gguf"] = gguf.tqdm
            gguf.tqdm = _gguf_tqdm
        _open_scopes += 1


def _remove() -> None:
    global _open_scopes
    from transformers.utils import logging as hf_logging

    with _LOCK:
        _open_scopes -= 1
        if _open_scopes == 0:
            # Put back, but kept: a thread outside any scope may be inside _hook or _gguf_tqdm right now.
            hf_logging.set_tqdm_hook(_replaced["hook"])
            importlib.import_module(_GGUF_MODULE).tqdm = _replaced["gguf"]


@contextlib.contextmanager
def library_bars(report: Progress | None = None) -> Iterator[None]:
    """While open, transformers' progress bars created by this thread report each step to ``report(done, total,
    description)`` (None: to nothing) instead of drawing on stderr."""
    _install()
    token = _CURRENT.set(_Scope(report))
    try:
        yield
    finally:
        _CURRENT.reset(token)
        _remove()
