"""The session's side of every page: the hosting policy, the loaded model, the status and queue lines, the error
line, and the planning of a long job.

This module is UI only: it calls the library and keeps Streamlit's caches (STYLE.md: caching lives in the UI layer,
as thin wrappers) — ``st.cache_resource`` for the loaded model and the text's one tokenisation
(:func:`cached_encoding`), ``st.cache_data`` for small results. A page gets its inputs from
:func:`views.sidebar.open_page` (:func:`load`, :func:`cached_model`) and plans its job here (:func:`plan_job`); the
Inspect run and its byte-bounded cache of captures, charts and bertviz's HTML are :mod:`views.inspect_run`'s.

On a hosted instance (``INSPECTOR_HOSTED=1``, :mod:`inspector.serving.hosting`) every run is planned within the
instance's memory budget and deadline.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import streamlit as st
from streamlit.runtime.caching.cached_message_replay import in_cached_function

from inspector.base.errors import InspectorError, error_text
from inspector.base.i18n import notice_text, t
from inspector.base.model_ids import parsed_spec
from inspector.charts.sentences.unknown_tokens import unreadable_text_warning
from inspector.core.bundled import BUNDLED, bundled_decoder, is_prepared, prepare
from inspector.core.forward import EncodedText, encode_text
from inspector.core.loading import LoadedModel, model_label
from inspector.output.share import ViewState, escape_markdown
from inspector.serving.hosting import HostingPolicy, load_allowed_model
from inspector.serving.run import Plan, Request, plan
from views.progress_bar import progress_bar, while_running


@st.cache_resource(show_spinner=False)
def hosting_policy() -> HostingPolicy:
    """This instance's policy, read from the environment once per server process."""
    return HostingPolicy.from_env()


@st.cache_resource(show_spinner=False, max_entries=4)
def cached_model(spec: str, device: str = "auto") -> LoadedModel:
    """One loaded model per spec (and device), shared read-only by every session (the library never mutates it)."""
    return load_allowed_model(spec, hosting_policy(), device=device)


class StatusLine:
    """One line that shows which stage a run is in (loading the model, running attention, computing
    metrics) and then what ran. A placeholder rather than ``st.status``, whose every creation sleeps 50 ms —
    a sixth of a head-click rerun. A running stage's line shows only while the page runs
    (:func:`views.progress_bar.while_running`)."""

    _ICONS = {"running": ":material/progress_activity:", "complete": ":material/check_circle:",
              "error": ":material/error:"}

    def __init__(self) -> None:
        self._line = st.empty()

    def update(self, *, label: str, state: str = "running") -> None:
        line = f"{self._ICONS[state]} {escape_markdown(label)}"
        if state != "running":
            self._line.caption(line)
            return
        with while_running(self._line):
            st.caption(line)

    def clear(self) -> None:
        """No line: nothing is running (a page that stops to wait for the reader must not say it is loading)."""
        self._line.empty()


@dataclass(frozen=True)
class Inputs:
    """The sidebar's answer: what to load and run. ``state`` is the share-link view (page options included)."""

    spec: str
    state: ViewState


def show_error(err: BaseException, lang: str, *, quoted: bool = False) -> None:
    """Every page's one way to show an error: in the page's language (:func:`~inspector.base.errors.error_text`: the
    error's catalogue sentence, else its class's), never the library's English developer text on another page.
    ``quoted``: the message may quote what a file holds, so it is shown as plain text (no Markdown)."""
    text = error_text(err, lang)
    st.error(escape_markdown(text) if quoted else text)


def load(inputs: Inputs, status: StatusLine) -> LoadedModel | None:
    """The cached model for ``inputs``, or None after showing why it cannot load."""
    if not inputs.spec:
        st.info(t("inputs.type_model", inputs.state.lang))
        return None
    status.update(label=t("inputs.loading", inputs.state.lang))
    try:
        prepare_bundled(inputs.spec, inputs.state.lang)
        loaded = cached_model(inputs.spec)
    except InspectorError as err:
        status.update(label=t("inputs.load_failed", inputs.state.lang), state="error")
        show_error(err, inputs.state.lang)
        return None
    # Loaded: the line says nothing until the page runs something ("Loading the model…" stayed on screen while a
    # page waited for its long-text confirmation, or showed a census folder; issue 33).
    status.clear()
    return loaded


def prepare_bundled(spec: str, lang: str) -> None:
    """A bundled decoder's first use converts its GGUF into the cache (a minute or two; :func:`prepare`): a progress
    bar on the page while it runs, instead of a page that seems to hang. Nothing when it is prepared (``make app``
    prepares them during set-up), when ``spec`` is not a bundled decoder, or when this instance does not offer it
    (loading then refuses it with its own message)."""
    parsed = parsed_spec(spec)
    if parsed is None or parsed.kind != "bundled" or parsed.name not in BUNDLED:
        return
    policy = hosting_policy()
    if policy.hosted and not policy.allows(spec):
        return
    decoder = bundled_decoder(spec)
    if is_prepared(decoder):
        return
    name = model_label(spec, lang)
    # English: the library's own note (stage, MB hashed); another language: the stage's share of the conversion.
    label = None if lang == "en" else (lambda done, total, note: t("inputs.preparing_at", lang, model=name,
                                                                   percent=f"{done / total:.0%}"))
    with progress_bar(t("inputs.preparing", lang, model=name), label) as bar:
        prepare(spec, progress=bar)


@st.cache_resource(show_spinner=False, max_entries=64, ttl=3600)
def cached_encoding(spec: str, text: str) -> EncodedText | None:
    """``text`` tokenised for ``spec``, cut to the model's positions (:func:`inspector.core.forward.encode_text`), or
    None when it cannot be (the page's run says why): one tokenisation shared by the unknown-token warning and the
    Inspect run's plan and forward (issue 39). A resource, not data: every session gets the same object, tensors
    not copied; nothing mutates it."""
    try:
        return encode_text(cached_model(spec), text, truncate=True)
    except InspectorError:
        return None


@st.cache_data(max_entries=64, ttl=3600, show_spinner=False)
def cached_unreadable_warning(spec: str, text: str, lang: str) -> str | None:
    """The unknown-token warning for this model and text (tokenising only), or None when the model reads it."""
    encoded = cached_encoding(spec, text)
    return None if encoded is None else unreadable_text_warning(cached_model(spec), text, lang, encoded)


def warn_if_unreadable(chosen: Inputs) -> bool:
    """Every page: warn when the model maps too much of the text to its unknown token (issue 17); True if it did."""
    warning = cached_unreadable_warning(chosen.spec, chosen.state.text, chosen.state.lang)
    if warning is not None:
        hint = "" if hosting_policy().hosted else " " + t("unknown.sidebar_hint", chosen.state.lang)
        st.warning(escape_markdown(warning) + hint, icon=":material/translate:")
    return warning is not None


def plan_job(kind: str, loaded: LoadedModel, lang: str, texts=(), *, count: int | None = None,
             **options) -> Plan:
    """Every long job's one line (issue 33, item 1): plan ``kind`` (heads, attribution, lessons, compare,
    groundtruth, generate) for ``texts`` — and ``count`` corpus texts, examples or new tokens; ``options``: the
    rest of the :class:`~inspector.serving.run.Request` (``chat``, ``weights``) — under this instance's policy
    (:func:`inspector.serving.run.plan`). A refusal raises its :class:`InspectorError` for the page's own
    ``except`` to show in one line; a shrink shows its notice here. Run the job inside ``with plan.running():``
    (the run slot and the deadline) on ``plan.kept(items)`` / ``plan.keep``."""
    request = Request(kind=kind, texts=tuple(texts), count=count, **{"weights": None, **options})
    planned = plan(request, loaded, hosting_policy())  # a refusal's notice names the model as the menu does
    for notice in planned.notices:
        st.info(notice_text(notice, lang), icon=":material/timer:")
    return replace(planned, on_wait=QueueLine(lang).report)


def outside_replay(draw: Callable[..., None]) -> Callable[..., None]:
    """``draw`` called with Streamlit's cache recording switched off: a run waits for its slot inside a cached
    function (its first forward, or a cache miss, asks for it), and Streamlit records what a cached function draws
    to replay it on the next hit — a line drawn into a placeholder made outside the function cannot be replayed
    (``CacheReplayClosureError``)."""

    def call(*args) -> None:
        token = in_cached_function.set(False)
        try:
            draw(*args)
        finally:
            in_cached_function.reset(token)

    return call


class QueueLine:
    """Where a job that waits for one of the server's run slots (issue 32) shows its place in line: a placeholder
    made before the job starts, filled while it waits and emptied when it runs (drawn :func:`outside_replay`)."""

    def __init__(self, lang: str):
        self.lang = lang
        self.slot = st.empty()

    def report(self, position: int, running: int) -> None:
        outside_replay(self._draw)(position, running)

    def _draw(self, position: int, running: int) -> None:
        if position == 0:
            self.slot.empty()
        else:
            self.slot.info(t("queue.position", self.lang, position=position, running=running),
                           icon=":material/hourglass_top:")
