"""Typed errors. Every message says what went wrong, why, and what to do; the UI shows it with ``st.error`` in the
page's language and the CLI prints it on one line and exits 2.

Errors in the reader's language (issue 39): an error may carry a :class:`~inspector.base.i18n.Notice` — its catalogue
key and values — and :func:`error_text` shows it in a page's language. An error without one is shown, in a language
other than English, by its class's sentence (``error.kind.<class>``, what went wrong and what to try) — never the
English developer text, which may name a folder of the server.
"""

from __future__ import annotations

from inspector.base.i18n import DEFAULT_LANGUAGE, Notice, t


class InspectorError(Exception):
    """Base class: a problem with the user's input or environment, explained in the message.

    ``notice``: the same message as a catalogue entry (key and values) for a page in another language, or None.
    A message given as a :class:`Notice` is its own notice."""

    notice: Notice | None

    def __init__(self, message: object = "", *, notice: Notice | None = None) -> None:
        super().__init__(message)
        self.notice = notice if notice is not None else (message if isinstance(message, Notice) else None)

    def __reduce__(self) -> tuple:
        # Pickled with its notice (errors cross process boundaries in the census's Ray engine and the job queue).
        return _rebuild_error, (type(self), str(self.args[0]) if self.args else "", self.notice)

    def text(self, lang: str = DEFAULT_LANGUAGE) -> str:
        """The message in ``lang`` (:func:`error_text`)."""
        return error_text(self, lang)


def _rebuild_error(kind: type, message: str, notice: Notice | None) -> InspectorError:
    error = kind.__new__(kind)
    InspectorError.__init__(error, message, notice=notice)
    return error


def error_kind(err: BaseException) -> str:
    """The catalogue family member of an error's class: ``ModelNotFoundError`` → ``"model_not_found"``, the nearest
    :class:`InspectorError` class the catalogue knows."""
    for kind in type(err).__mro__:
        if kind.__name__ in ERROR_KINDS:
            return ERROR_KINDS[kind.__name__]
    return "inspector"


def error_text(err: BaseException, lang: str = DEFAULT_LANGUAGE) -> str:
    """What a page shows for ``err`` in ``lang``: its notice translated; else its English message on an English page,
    and its class's sentence on a page in another language."""
    notice = getattr(err, "notice", None)
    if isinstance(notice, Notice):
        return notice.text(lang)
    if lang == DEFAULT_LANGUAGE:
        return str(err)
    return t(f"error.kind.{error_kind(err)}", lang)


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


# Class name → its member of the catalogue family "error.kind.{kind}" (inspector.base.catalogue.common).
ERROR_KINDS: dict[str, str] = {
    "InspectorError": "inspector", "ModelNotFoundError": "model_not_found", "NotAModelError": "not_a_model",
    "UnsafeModelError": "unsafe_model", "UnsupportedModelError": "unsupported_model",
    "HubUnavailableError": "hub_unavailable", "InvalidTextError": "invalid_text", "BackendError": "backend",
    "InvalidRequestError": "invalid_request", "ModelNotAllowedError": "model_not_allowed",
    "ModelTooLargeError": "model_too_large", "HostingConfigError": "hosting_config",
    "DeadlineExceededError": "deadline_exceeded", "DeviceOutOfMemoryError": "device_out_of_memory",
    "CorruptModelError": "corrupt_model", "OverBudgetError": "over_budget",
}
