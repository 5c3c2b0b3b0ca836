"""The one progress-callback signature of the library: ``progress(label, fraction)`` — what is happening, in words,
and how much of the whole is done, in [0, 1]. A long computation takes ``progress: Progress | None = None``; the
CLI prints the label to stderr, a page draws a progress bar."""

from collections.abc import Callable

Progress = Callable[[str, float], None]
