"""Typed errors. Every message says what went wrong, why, and what to do; the UI shows it with ``st.error``
and the CLI prints it on one line and exits 2."""


class InspectorError(Exception):
    """Base class: a problem with the user's input or environment, explained in the message."""


class ModelNotFoundError(InspectorError):
    """The model spec names no local folder, and is not a valid hub id."""


class NotAModelError(InspectorError):
    """A folder exists but does not hold a loadable model (no config.json, no tokenizer …)."""


class UnsafeModelError(InspectorError):
    """Loading would execute code from the model: pickle weights, or a config that needs remote code."""


class UnsupportedModelError(InspectorError):
    """The architecture's attention does not go through transformers' attention interface, or uses a
    feature the inspector's attention function refuses (soft-capping, custom masks …)."""


class HubUnavailableError(InspectorError):
    """A hub id was asked for, it is not in the local cache, and the hub cannot be reached."""


class InvalidTextError(InspectorError):
    """The text is empty, too long for the model, or tokenises to ids the model does not have."""


class BackendError(InspectorError):
    """The requested attention backend cannot run here."""


class InvalidRequestError(InspectorError):
    """An option names something that does not exist (a layer index past the last layer, …)."""


class ModelNotAllowedError(InspectorError):
    """Hosted mode: the model is not on this instance's allow-list (or names a local folder)."""


class ModelTooLargeError(InspectorError):
    """Hosted mode: the model has more parameters than this instance's cap (checked before any weights load)."""


class HostingConfigError(InspectorError):
    """Hosted mode is on but its settings (environment variables, allow-list file) cannot be read."""


class DeadlineExceededError(InspectorError):
    """A computation ran past its deadline and was stopped between attention layers."""


class DeviceOutOfMemoryError(InspectorError):
    """The device ran out of memory even after retrying with fewer weights (and on the CPU, where offered)."""


class CorruptModelError(InspectorError):
    """A bundled model's installed files are damaged: missing, or their SHA-256 is not the pinned one (checked
    before anything parses them), so it cannot be prepared."""


class OverBudgetError(InspectorError):
    """A request asks for more than this instance gives one request (tokens, memory or time); refused before
    anything runs (:mod:`inspector.serving.jobs`)."""
