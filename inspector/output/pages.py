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


@dataclass(frozen=True)
class PageSpec:
    """One page of the app.

    name: the page's url path, its ``page=`` value in a link, its view ``views/NAME.py`` and its menu label
    ``nav.NAME`` in the catalogue. icon: the menu's icon (``:material/…:``). link_keys: the query parameters the page
    owns beyond the shared view's (:data:`VIEW_KEYS`), none shared with another page. default: the app's home, served
    at the root (exactly one page). lecture_target: whether a lecture step may open the page."""

    name: str
    icon: str
    link_keys: tuple[str, ...] = ()
    default: bool = False
    lecture_target: bool = True

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


register_page(PageSpec("inspect", ":material/grid_on:", default=True))
register_page(PageSpec("heads", ":material/view_module:"))
register_page(PageSpec("atlas", ":material/scatter_plot:",
                       link_keys=("atlas", "atlas_b", "ax", "ay", "acolour", "ahead", "astat")))
register_page(PageSpec("attribution", ":material/balance:"))
register_page(PageSpec("lessons", ":material/school:", link_keys=("lesson", "decoder", "dlayer", "dhead")))
register_page(PageSpec("groundtruth", ":material/verified:"))
register_page(PageSpec("compare", ":material/compare_arrows:", link_keys=("text_b", "tzb", "model_b", "query", "keys")))
register_page(PageSpec("generate", ":material/edit_note:",
                       link_keys=("new", "temp", "topk", "topp", "seed", "chat", "step")))
register_page(PageSpec("mechanism", ":material/hub:", link_keys=("mcorrupt", "manswer", "mcontrast", "mcell")))
register_page(PageSpec("lecture", ":material/co_present:", link_keys=("lecture",), lecture_target=False))


def page_names() -> tuple[str, ...]:
    """Every registered page's name, in menu order."""
    return tuple(PAGE_REGISTRY)


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
