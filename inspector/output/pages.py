"""The page registry: every page of the app in one place — its name (the url path and a link's ``page=`` value), its
menu icon, the link parameters it owns beyond the shared view's, whether it is the app's home and whether a lecture
step may open it (issue 39, Build 3; the attribution methods' registry, :mod:`inspector.analyses.attribution.methods`,
is the model: one contract, checked when a page is registered).

The menu (``app.py`` through :func:`views.pages.navigation`), the ``page=`` check of a share link
(:data:`inspector.output.share.PAGES`), the links the Lecture builds (:func:`page_url`), the once-per-session reading
of a link and its warnings (:mod:`views.pages`) all loop over :data:`PAGE_REGISTRY`; no other list of pages exists.

**Adding a page** (say ``mechanism``):

1. ``register_page(PageSpec("mechanism", ":material/hub:", link_keys=("target", …)))`` below, in menu order;
2. write ``views/mechanism.py`` — ``sidebar.open_page()``, one library call, charts; its own link parameters, if
   any, read once per session with ``views.pages.restore_once("mechanism", decode, apply)`` and their warnings shown
   with ``views.pages.show_link_warnings("mechanism", lang)``; ``share_state.publish_view(…, extra=…)`` at the end;
3. the page's sentences in its catalogue module, ``nav.mechanism`` (the menu entry) among them;
4. its analysis, chart and CLI modules.

Nothing else: app.py, share.py and the restore flags follow the registry (tests/test_pages.py checks that every
registered page has its view, its menu label in every language and a path that opens).

The home page (``default=True``, Inspect) is served at the app's root by Streamlit; its own path (``/inspect``) opens it
too (:mod:`views.pages` sends it on to the root), so a link naming any registered path opens (issue 44, item 1), and
:func:`page_url` writes the root for it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

from inspector.base.i18n import CATALOGUE, LANGUAGES

# The parameters every page's link shares: the view (inspector.output.share.ViewState, ``v``, ``tz`` for a compressed
# text). A page's own parameters must not reuse them.
VIEW_KEYS = frozenset({"v", "model", "text", "tz", "page", "layer", "head", "backend", "lang",
                       "hide_special", "drop_sink", "words", "slide"})
_NAME = re.compile(r"[a-z][a-z0-9]*")
_KEY = re.compile(r"[a-z][a-z0-9_]*")
# The view's numeric parameters: every page that draws a layer and a head fits a link's values to the loaded model
# (inspector.output.share.ViewState.fit).
VIEW_NUMBERS = ("layer", "head")
# Where a numeric option's range comes from (issue 45, item 1: from the model and the policy, never a fixed constant
# where the work grows with it): "roles" (inspector.serving.option_plan.roles_ranges), "timing" (option_plan's
# timing_choices), "count" (inspector.serving.jobs.count_limit: examples, new tokens), "job" (the job's own plan,
# jobs.plan_job: a corpus cut to its token budget), "model" (the loaded model's positions, layers, heads or the text's
# tokens) and "fixed" (a range the work does not grow with: a threshold, a seed, a choice among a few steps).
OPTION_BOUNDS = ("roles", "timing", "count", "job", "model", "fixed")
# The models a page offers an option with: "any" model, a "decoder" with a language-model head (Generate, Mechanism),
# or a ground-truth "task" model (the shipped models trained on a task whose deciding token is known).
OPTION_MODELS = ("any", "decoder", "task")


@dataclass(frozen=True)
class NumericOption:
    """One numeric widget of a page (a number input, slider, select-slider or a multiselect of numbers).

    key: the widget's key. link: the query parameter that carries it in a share link (None: only the widget sets
    it). bound: where its range comes from (:data:`OPTION_BOUNDS`). needs: session values under which the page draws
    the widget (a mode, a choice), as (key, value) pairs. starts: the toggle or button that starts the work the option
    sizes (None: the page runs it on every rerun). on: the models the page offers it with (:data:`OPTION_MODELS`).
    The hosted sweep (benchmarks/option_sweep.py) drives every option declared here to its extremes and beyond, and
    fails on a numeric widget a page draws without declaring it."""

    key: str
    link: str | None = None
    bound: str = "fixed"
    needs: tuple[tuple[str, object], ...] = ()
    starts: str | None = None
    on: str = "any"

    def __post_init__(self) -> None:
        if not isinstance(self.key, str) or not _KEY.fullmatch(self.key):
            raise ValueError(f"NumericOption.key must be a widget key (lower-case name); got {self.key!r}")
        if self.bound not in OPTION_BOUNDS:
            raise ValueError(f"option {self.key!r}: bound {self.bound!r} is not one of {OPTION_BOUNDS}")
        if self.on not in OPTION_MODELS:
            raise ValueError(f"option {self.key!r}: on {self.on!r} is not one of {OPTION_MODELS}")


@dataclass(frozen=True)
class PageSpec:
    """One page of the app.

    name: the page's url path, its ``page=`` value in a link, its view ``views/NAME.py`` and its menu label
    ``nav.NAME`` in the catalogue. icon: the menu's icon (``:material/…:``). link_keys: the query parameters the page
    owns beyond the shared view's (:data:`VIEW_KEYS`), none shared with another page. default: the app's home, served
    at the root (exactly one page). lecture_target: whether a lecture step may open the page. numbers: the page's
    numeric widgets (:class:`NumericOption`), each carried by one of its link keys or by none."""

    name: str
    icon: str
    link_keys: tuple[str, ...] = ()
    default: bool = False
    lecture_target: bool = True
    numbers: tuple[NumericOption, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _NAME.fullmatch(self.name):
            raise ValueError(f"PageSpec.name must be one lower-case word (the url path); got {self.name!r}")
        if not isinstance(self.icon, str) or not self.icon.startswith(":material/"):
            raise ValueError(f"page {self.name!r}: the icon must be a ':material/NAME:' icon; got {self.icon!r}")
        if not isinstance(self.link_keys, tuple) or not all(isinstance(k, str) and _KEY.fullmatch(k)
                                                            for k in self.link_keys):
            raise ValueError(f"page {self.name!r}: link_keys must be a tuple of lower-case names; "
                             f"got {self.link_keys!r}")
        shared = VIEW_KEYS.intersection(self.link_keys)
        if shared:
            raise ValueError(f"page {self.name!r}: link keys {sorted(shared)} are the shared view's; pick other names")
        unlinked = [o.key for o in self.numbers if o.link is not None and o.link not in self.link_keys]
        if unlinked:
            raise ValueError(f"page {self.name!r}: options {unlinked} name a link parameter the page does not own")

    @property
    def script(self) -> str:
        """The page's view, relative to the repository root (what ``st.Page`` and ``st.switch_page`` take)."""
        return f"views/{self.name}.py"

    @property
    def nav_key(self) -> str:
        """The catalogue key of the page's menu label."""
        return f"nav.{self.name}"


PAGE_REGISTRY: dict[str, PageSpec] = {}


def register_page(spec: PageSpec) -> PageSpec:
    """Add ``spec`` to the registry (menu order = registration order) after checking it against the others: a new
    name, link keys no other page owns, at most one home page, and a menu label in every language."""
    if spec.name in PAGE_REGISTRY:
        raise ValueError(f"a page named {spec.name!r} is already registered")
    for other in PAGE_REGISTRY.values():
        clash = set(other.link_keys).intersection(spec.link_keys)
        if clash:
            raise ValueError(f"page {spec.name!r}: link keys {sorted(clash)} already belong to page {other.name!r}")
        if spec.default and other.default:
            raise ValueError(f"page {spec.name!r}: {other.name!r} is already the home page (default=True)")
    missing = [lang for lang in LANGUAGES if not CATALOGUE.get(spec.nav_key, {}).get(lang, "").strip()]
    if missing:
        raise ValueError(f"page {spec.name!r}: the catalogue has no {spec.nav_key!r} in {missing}; add the menu label")
    PAGE_REGISTRY[spec.name] = spec
    return spec


SAMPLING = (("generate_temp", 1.0),)  # Generate's top-k, top-p and seed are drawn enabled only when it samples
# (and its step slider only once a run of two steps or more has finished: "generate_step" asks for 4 new tokens)
register_page(PageSpec("inspect", ":material/grid_on:", default=True))
register_page(PageSpec("heads", ":material/view_module:", link_keys=("rrepeat", "rbatch", "rtopk", "rwindow", "rseed"),
                       numbers=(NumericOption("heads_collapsed"), NumericOption("heads_diffuse"),
                                NumericOption("heads_sink"),
                                NumericOption("heads_corpus_size", bound="job", needs=(("heads_mode", "corpus"),)),
                                NumericOption("roles_repeat", "rrepeat", "roles", starts="roles_run"),
                                NumericOption("roles_batch", "rbatch", "roles", starts="roles_run"),
                                NumericOption("roles_top_k", "rtopk", "model", starts="roles_run"),
                                NumericOption("roles_window", "rwindow", "model", starts="roles_run"),
                                NumericOption("roles_seed", "rseed", starts="roles_run"))))
register_page(PageSpec("atlas", ":material/scatter_plot:",
                       link_keys=("atlas", "atlas_b", "ax", "ay", "acolour", "ahead", "astat")))
register_page(PageSpec("attribution", ":material/balance:",
                       numbers=(NumericOption("attr_query_index", bound="model", needs=(("attr_query", "index…"),)),
                                NumericOption("attr_ig_steps"))))
register_page(PageSpec("lessons", ":material/school:", link_keys=("lesson", "decoder", "dlayer", "dhead"),
                       numbers=(NumericOption("timing_lengths", bound="timing", starts="timing_run"),)))
register_page(PageSpec("groundtruth", ":material/verified:",
                       numbers=(NumericOption("gt_seed", on="task"),
                                NumericOption("gt_examples", bound="count", on="task"),
                                NumericOption("gt_k", on="task"))))
register_page(PageSpec("compare", ":material/compare_arrows:", link_keys=("text_b", "tzb", "model_b", "query", "keys")))
register_page(PageSpec("generate", ":material/edit_note:",
                       link_keys=("new", "temp", "topk", "topp", "seed", "chat", "step"),
                       numbers=(NumericOption("generate_new", "new", "count", on="decoder"),
                                NumericOption("generate_temp", "temp", on="decoder"),
                                NumericOption("generate_topk", "topk", needs=SAMPLING, on="decoder"),
                                NumericOption("generate_topp", "topp", needs=SAMPLING, on="decoder"),
                                NumericOption("generate_seed", "seed", needs=SAMPLING, on="decoder"),
                                NumericOption("generate_step", "step", "model", needs=(("generate_new", 4),),
                                              on="decoder"))))
register_page(PageSpec("mechanism", ":material/hub:", link_keys=("mcorrupt", "manswer", "mcontrast", "mcell"),
                       numbers=(NumericOption("mech_query", "mcell", "model", on="decoder"),
                                NumericOption("mech_key", "mcell", "model", on="decoder"))))
register_page(PageSpec("lecture", ":material/co_present:", link_keys=("lecture",), lecture_target=False))

def page_names() -> tuple[str, ...]:
    """Every registered page's name, in menu order."""
    return tuple(PAGE_REGISTRY)


def numeric_options() -> dict[str, tuple[NumericOption, ...]]:
    """Every registered page's numeric widgets (page name → its options; a page without any maps to ``()``)."""
    return {name: spec.numbers for name, spec in PAGE_REGISTRY.items()}


def home_page() -> PageSpec:
    """The page served at the app's root."""
    return next(spec for spec in PAGE_REGISTRY.values() if spec.default)


def lecture_targets() -> tuple[str, ...]:
    """The pages a lecture step may open."""
    return tuple(name for name, spec in PAGE_REGISTRY.items() if spec.lecture_target)


def page_url(base_url: str, page: str) -> str:
    """``base_url`` (the address the app runs at, on any of its pages) pointing at ``page`` instead, no query: the
    last path segment is dropped when it names a page; then ``page`` is appended — except the home page, which is the
    app's root (its own path opens it too, but the root is what the menu shows)."""
    scheme, netloc, path, _, _ = urlsplit(base_url)
    parts = path.rstrip("/").split("/")
    if parts and parts[-1] in PAGE_REGISTRY:
        parts = parts[:-1]
    if PAGE_REGISTRY[page].default:
        return urlunsplit((scheme, netloc, "/".join(parts) + "/", "", ""))
    return urlunsplit((scheme, netloc, "/".join([*parts, page]), "", ""))
