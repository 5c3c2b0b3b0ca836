"""The Heads page's roles options in a share link (issue 45, item 1), next to :mod:`inspector.output.share`'s view.

Parameters (decode_view ignores them): ``rrepeat`` (the probe's repeat length R), ``rbatch`` (its sequences),
``rtopk`` (heads removed per role), ``rwindow`` (the local window) and ``rseed`` (the probe's seed). Only values
that differ from the page's defaults are written. A value is read when it is a whole number of at most
:data:`MAX_DIGITS` digits; whether it fits the loaded model and this server is the page's to decide — it clamps the
value to the range it offers with a notice (``R=1000000`` opens at the longest R planned). Anything else falls back
to the default with a warning. Never raises.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace

from inspector.base.i18n import Notice

MAX_DIGITS = 12  # 10**12 − 1: larger than any range, short enough to show in a warning
_WHOLE = re.compile(rf"[0-9]{{1,{MAX_DIGITS}}}")
ROLES_PARAMETERS = {"rrepeat": "repeat", "rbatch": "batch", "rtopk": "top_k", "rwindow": "window", "rseed": "seed"}


@dataclass(frozen=True)
class RolesLinkState:
    """The roles options a link carries (None: the page's default)."""

    repeat: int | None = None
    batch: int | None = None
    top_k: int | None = None
    window: int | None = None
    seed: int | None = None


def decode_roles(params: Mapping[str, str | Sequence[str]]) -> tuple[RolesLinkState, tuple[Notice, ...]]:
    """Read a :class:`RolesLinkState` from query parameters; a value that is not a whole number falls back with a
    warning."""
    if not isinstance(params, Mapping):
        return RolesLinkState(), ()
    values: dict[str, int] = {}
    warnings: list[Notice] = []
    for key, name in ROLES_PARAMETERS.items():
        value = params.get(key)
        if isinstance(value, (list, tuple)):
            value = value[-1] if value else None
        if value is None:
            continue
        if isinstance(value, str) and _WHOLE.fullmatch(value):
            values[name] = int(value)
        else:
            shown = repr(value)[:24]
            warnings.append(Notice("share.bad_roles", key=key, value=shown))
    return replace(RolesLinkState(), **values), tuple(warnings)


def encode_roles(options: Mapping[str, int], defaults: Mapping[str, int]) -> dict[str, str]:
    """Query parameters for the roles ``options`` (option → value) that differ from ``defaults``."""
    return {key: str(int(options[name])) for key, name in ROLES_PARAMETERS.items()
            if name in options and options[name] != defaults.get(name)}


def link_options(state: RolesLinkState) -> dict[str, int]:
    """The options the link set (option → value)."""
    return {f.name: getattr(state, f.name) for f in fields(RolesLinkState) if getattr(state, f.name) is not None}
