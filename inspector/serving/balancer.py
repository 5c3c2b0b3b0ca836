"""What the load balancer in front of a hosted cluster says when it answers by itself (deploy/cluster.py writes
these into nginx's config, deploy/nginx.conf.template), and the request size it must accept.

nginx answers two requests without a replica: a request line or header past its buffers (a link far longer than
any the app makes) and a moment when no replica answers (all restarting). Each gets one line, in English and
简体中文 — nginx does not know the visitor's language, and the line must be understood before the app loads.
"""

from __future__ import annotations

from dataclasses import dataclass

from inspector.base.i18n import LANGUAGES, t
from inspector.output.share import MAX_LINK_CHARS

# nginx's large_client_header_buffers in the template: a request line (the link) and each header (its Referer
# echoes the link) may be this long. Twice the app's link limit, so every link the app makes passes with room for
# the path and the HTTP verb.
HEADER_BUFFER_BYTES = 16 * 1024


@dataclass(frozen=True)
class BalancerPages:
    """The one-line texts nginx returns itself: ``too_long`` (HTTP 414, a link past :data:`HEADER_BUFFER_BYTES`)
    and ``unavailable`` (HTTP 503, no replica answered). Each holds every language, separated by `` · ``, and no
    character nginx's ``return`` would read as syntax (a double quote, ``$``, a backslash)."""

    too_long: str
    unavailable: str

    def __post_init__(self) -> None:
        for text in (self.too_long, self.unavailable):
            if any(c in text for c in '"$\\\n{}'):
                raise ValueError(f"BalancerPages text {text[:40]!r}… holds a character nginx would read as syntax")


def balancer_pages() -> BalancerPages:
    """The texts nginx answers with, every language on one line."""
    if HEADER_BUFFER_BYTES < 2 * MAX_LINK_CHARS:
        raise ValueError(f"HEADER_BUFFER_BYTES ({HEADER_BUFFER_BYTES}) must be at least twice MAX_LINK_CHARS "
                         f"({MAX_LINK_CHARS}) so that every link the app makes passes nginx")
    return BalancerPages(
        too_long=" · ".join(t("balancer.too_long", lang, limit=f"{HEADER_BUFFER_BYTES:,}", link=f"{MAX_LINK_CHARS:,}")
                            for lang in LANGUAGES),
        unavailable=" · ".join(t("balancer.unavailable", lang) for lang in LANGUAGES),
    )
