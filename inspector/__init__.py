"""Attention Inspector: load a transformer, run a text through one attention function, and measure how
attention routes information. The library has no UI imports; ``app.py`` and the CLI are thin drivers over it."""

from inspector.base.errors import InspectorError
from inspector.core.capture import Capture, OutputSummary, capture
from inspector.core.loading import LoadedModel, ModelInfo, load_model

__all__ = ["Capture", "InspectorError", "LoadedModel", "ModelInfo", "OutputSummary", "capture", "load_model"]
