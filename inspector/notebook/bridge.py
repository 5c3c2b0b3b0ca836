"""From a notebook to the app and back, and bertviz's views in a notebook (issue 42).

- :func:`link` gives the share link (:mod:`inspector.output.share`'s format) that opens the same view of a result in
  a running app: a capture on the Inspect page at ``layer`` / ``head``, a generation on Generate with its sampling,
  a head report on Heads, an attribution report on Attribution, lessons on Lessons. ``base_url`` is the app's
  address (``make app`` serves http://localhost:8501).
- :func:`capture_from_link` reads such a link with the app's own defensive reader (:func:`decode_view`: a bad value
  falls back to its default and is reported as a warning) and captures its text on its model, as the Inspect page
  does — so a view someone shared can be studied further in a notebook.
- :func:`head_view` and :func:`model_view` are bertviz's views built offline by :mod:`inspector.charts.bertviz` (the
  vendored d3, jQuery and require.js inlined, tokens script-escaped, a Content-Security-Policy that refuses every
  fetch, the app's limits), shown in a sandboxed ``<iframe srcdoc>``: the page's scripts run in their own opaque
  origin, apart from the notebook's own require.js and d3, and a view drawn in one cell cannot reach another.
  JupyterLab runs an output's scripts only in a trusted notebook (one this user executed, or ``jupyter trust``).
"""

from __future__ import annotations

import html
import warnings
from dataclasses import dataclass
from urllib.parse import parse_qs, urlsplit, urlunsplit

from inspector.analyses.attribution.report import AttributionReport
from inspector.analyses.generate import Generation
from inspector.analyses.heads import HeadReport
from inspector.analyses.lessons import Lessons
from inspector.base.errors import InvalidRequestError
from inspector.base.i18n import DEFAULT_LANGUAGE, notice_text
from inspector.charts import bertviz
from inspector.core.capture import Capture, capture
from inspector.core.loading import DEFAULT_MODEL, DEFAULT_MODEL_LABEL, LoadedModel, load_model
from inspector.output.share import GenerateState, ViewState, decode_view, generate_share_url, link_fits, share_url

DEFAULT_APP_URL = "http://localhost:8501"


def _model_spec(name: str, override: str | None) -> str:
    """The spec a link carries for a model shown as ``name`` (the bundled encoder is shown by its label)."""
    if override is not None:
        return override
    return DEFAULT_MODEL if name == DEFAULT_MODEL_LABEL else name


def _checked(url: str, model: str) -> str:
    _, problems = decode_view(parse_qs(urlsplit(url).query))
    if problems:
        raise InvalidRequestError(f"a share link cannot carry this view ({notice_text(problems[0])}); a link names a "
                                  f"bundled, shipped or hub model, and {model!r} is not one — capture with one of them")
    if not link_fits(url):
        raise InvalidRequestError(f"the link would have {len(url)} characters, more than browsers and proxies "
                                  "accept — share a shorter text")
    return url


def link(result: object, base_url: str = DEFAULT_APP_URL, *, layer: int = 0, head: int = 0,
         lang: str = DEFAULT_LANGUAGE, model: str | None = None) -> str:
    """The share link that opens ``result``'s view in the app at ``base_url`` (see the module docstring);
    ``layer`` / ``head``: the head the page shows, ``lang``: the page's language. ``model``: the spec the app
    should load, when the result's own name is not one (a model loaded from a local folder is named after the
    folder, which a link would read as a hub id; links never carry paths)."""
    scheme, netloc, path, _, _ = urlsplit(base_url)
    base_url = urlunsplit((scheme, netloc, path or "/", "", ""))  # http://host:8501/?v=1…, as a browser writes it
    common = {"layer": layer, "head": head, "lang": lang}
    if isinstance(result, Capture):
        backend = result.backend if result.backend in ("torch", "triton") else "auto"
        state = ViewState(model=_model_spec(result.model_name, model), text=result.text, page="inspect",
                          backend=backend, **common)
        return _checked(share_url(base_url, state), result.model_name)
    if isinstance(result, Generation):
        state = ViewState(model=_model_spec(result.model_name, model), text=result.prompt, page="generate", **common)
        options = result.options
        run = GenerateState(new=result.max_new_tokens, temp=float(options.temperature), topk=options.top_k or 0,
                            topp=float(options.top_p), seed=options.seed, chat=result.chat)
        return _checked(generate_share_url(base_url, state, run), result.model_name)
    pages = {HeadReport: ("heads", lambda r: (r.info.name, r.texts[0])),
             AttributionReport: ("attribution", lambda r: (r.model_name, r.text)),
             Lessons: ("lessons", lambda r: (r.model, r.text))}
    for kind, (page, read) in pages.items():
        if isinstance(result, kind):
            name, text = read(result)
            state = ViewState(model=_model_spec(name, model), text=text, page=page, **common)
            return _checked(share_url(base_url, state), name)
    raise InvalidRequestError(f"{type(result).__name__} has no page a link can open — link() takes a Capture, a "
                              "Generation, a HeadReport, an AttributionReport or Lessons")


def capture_from_link(url: str, *, loaded: LoadedModel | None = None) -> Capture:
    """The capture a share link shows: its text on its model, with the weights of its layer (every problem the
    link has is a warning, as the app shows it). ``loaded``: the link's model when already loaded (else it is
    loaded here, which takes seconds)."""
    if not isinstance(url, str) or not url.strip():
        raise InvalidRequestError("capture_from_link needs a share link (the app's Share button copies one)")
    state, problems = decode_view(parse_qs(urlsplit(url.strip()).query, keep_blank_values=True))
    for problem in problems:
        warnings.warn(notice_text(problem), stacklevel=2)
    if loaded is None:
        loaded = load_model(state.model)
    info = loaded.info
    state, clamped = state.fit(info.num_layers, info.num_heads)
    for problem in clamped:
        warnings.warn(notice_text(problem), stacklevel=2)
    return capture(loaded, state.text, backend=state.backend, weights=[state.layer])


@dataclass(frozen=True)
class BertvizView:
    """One bertviz view as a sandboxed iframe. document: the offline page; height: the frame's height in px."""

    document: str
    height: int
    title: str

    def iframe(self) -> str:
        """The ``<iframe>`` element: the page in ``srcdoc`` (attribute-escaped), scripts allowed, no same-origin."""
        return (f'<iframe title="{html.escape(self.title)}" sandbox="allow-scripts" '
                f'style="width: 100%; height: {self.height}px; border: 0" srcdoc="{html.escape(self.document)}">'
                "</iframe>")

    def _repr_html_(self) -> str:
        return self.iframe()


def head_view(result: Capture, *, layer: int | None = None, head: int | None = None,
              layers: list[int] | None = None) -> BertvizView:
    """bertviz's head view of ``result``, offline: ``layer`` shown first (default: the first kept), ``head`` alone
    (default: every head); the menu offers ``layers`` (default: the kept layers — as many around ``layer`` as the
    app's limits allow for this text)."""
    if layers is None and result.weights:
        kept = sorted(result.weights)
        fits = max(bertviz.head_view_max_layers(result), 1)
        layers = kept if len(kept) <= fits else bertviz.layers_around(result, kept[0] if layer is None else layer,
                                                                      fits)
    document = bertviz.head_view_html(result, layers=layers, layer=layer, head=head)
    height = min(bertviz.head_view_height(result), bertviz.IFRAME_MAX_HEIGHT)
    return BertvizView(document, height, "bertviz head view")


def model_view(result: Capture, *, layers: list[int] | None = None, heads: list[int] | None = None) -> BertvizView:
    """bertviz's model view of ``result``: one thumbnail per (layer, head) of the kept layers, offline."""
    document = bertviz.model_view_html(result, layers=layers, heads=heads)
    height = min(bertviz.model_view_height(result, layers=layers), bertviz.IFRAME_MAX_HEIGHT)
    return BertvizView(document, height, "bertviz model view")
