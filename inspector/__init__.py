"""Attention Inspector: load a transformer, run a text through one attention function, and measure how
attention routes information. The library has no UI imports; ``app.py`` and the CLI are thin drivers over it.

The package's public names load lazily (PEP 562 ``__getattr__``): ``import inspector.base.i18n`` or any
``inspector.charts`` module runs this file first, and an eager ``from inspector.core… import`` here would drag torch
and transformers into every one of them (issue 39). ``inspector.load_model`` still works: the first access imports
the module that defines it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

# Public name → the module that defines it.
_PUBLIC = {
    "InspectorError": "inspector.base.errors",
    "Capture": "inspector.core.capture",
    "OutputSummary": "inspector.core.capture",
    "capture": "inspector.core.capture",
    "LoadedModel": "inspector.core.loading",
    "ModelInfo": "inspector.core.loading",
    "load_model": "inspector.core.loading",
    "ModelSpec": "inspector.base.model_ids",
}

__all__ = ["Capture", "InspectorError", "LoadedModel", "ModelInfo", "ModelSpec", "OutputSummary", "capture",
           "load_model"]

if TYPE_CHECKING:  # for type checkers and editors only; never run
    from inspector.base.errors import InspectorError
    from inspector.base.model_ids import ModelSpec
    from inspector.core.capture import Capture, OutputSummary, capture
    from inspector.core.loading import LoadedModel, ModelInfo, load_model


def __getattr__(name: str):
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'inspector' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # the next access skips this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_PUBLIC})
