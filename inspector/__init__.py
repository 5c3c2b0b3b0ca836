"""Attention Inspector: load a transformer, run a text through one attention function, and measure how
attention routes information. The library has no UI imports; ``app.py`` and the CLI are thin drivers over it.

The package's public names load lazily (PEP 562 ``__getattr__``): ``import inspector.base.i18n`` or any
``inspector.charts`` module runs this file first, and an eager ``from inspector.core… import`` here would drag torch
and transformers into every one of them (issue 39). ``inspector.load_model`` still works: the first access imports
the module that defines it.

In a notebook every result draws itself (issue 42). The renderers live in :mod:`inspector.notebook`, above the
results' layers, so :mod:`inspector.base.display` (the protocol every result class inherits) is handed a loader
here: this file runs before any ``inspector.*`` module, so before any result exists, and the loader imports
:data:`_RENDERERS` the first time a result is drawn. The notebook's names (``inspector.show``, ``inspector.link`` …)
load on first access the same way. Neither runs when a module of the package is imported: the charts and Altair load
when something is drawn, never because an analysis was imported.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from inspector.base import display as _display

# The package whose import registers a renderer for every result type.
_RENDERERS = "inspector.notebook"
# Public names loaded on first access → the module that defines them.
_LAZY = {
    "InspectorError": "inspector.base.errors",
    "ModelSpec": "inspector.base.model_ids",
    "Capture": "inspector.core.capture",
    "OutputSummary": "inspector.core.capture",
    "capture": "inspector.core.capture",
    "LoadedModel": "inspector.core.loading",
    "ModelInfo": "inspector.core.loading",
    "load_model": "inspector.core.loading",
    **{name: "inspector.notebook" for name in ("capture_from_link", "head_view", "link", "model_view",
                                               "progress_bar", "set_language", "show")},
}

__all__ = ["Capture", "InspectorError", "LoadedModel", "ModelInfo", "ModelSpec", "OutputSummary", "capture",
           "capture_from_link", "head_view", "link", "load_model", "model_view", "progress_bar", "set_language",
           "show"]

if TYPE_CHECKING:  # for type checkers and editors only; never run
    from inspector.base.errors import InspectorError
    from inspector.base.model_ids import ModelSpec
    from inspector.core.capture import Capture, OutputSummary, capture
    from inspector.core.loading import LoadedModel, ModelInfo, load_model


def _load_renderers() -> None:
    importlib.import_module(_RENDERERS)


_display.set_loader(_load_renderers)


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'inspector' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # the next access skips this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
