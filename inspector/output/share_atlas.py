"""The Atlas page's link (issue 41): which atlas, the second one beside it, the scatter's axes and colour, the head
whose card is open and the statistic its contexts are ranked by — next to the shared view's parameters
(:mod:`inspector.output.share`, whose ``decode_view`` ignores these).

``atlas`` and ``atlas_b`` name shipped atlases only (``assets/atlas/<name>``): a link never points the server at a
folder — a reader's own census folder is a session widget, as on the Heads page. ``ax``, ``ay``, ``acolour`` are
metrics of :data:`ATLAS_METRICS`; ``ahead`` (and ``ahead_b``, the second atlas's) is ``L{layer}H{head}``; ``astat``
one of the exemplar statistics. Only values that differ from the defaults are written. Like ``decode_view``,
:func:`decode_atlas` never raises: a bad value falls back to the default with a warning (a
:class:`~inspector.base.i18n.Notice`) naming it.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, fields, replace

from inspector.analyses.atlas import LAYER_METRIC
from inspector.analyses.batching import STATISTICS
from inspector.analyses.census.exemplars import EXEMPLAR_STATISTICS
from inspector.analyses.roles import ROLES
from inspector.base.i18n import Notice
from inspector.output.share import _shown, _text_reader

# Every metric a link may put on an axis or the colour (an atlas without roles offers the first two groups only).
ATLAS_METRICS: tuple[str, ...] = (LAYER_METRIC, *STATISTICS, *ROLES)
_HEAD = re.compile(r"L([0-9]{1,4})H([0-9]{1,4})")


@dataclass(frozen=True)
class AtlasState:
    """What an Atlas link reproduces: atlas (a shipped atlas's name; "" = the page's default), atlas_b (the second
    atlas, "" = none), x, y, colour (metrics), head ((layer, head) whose card is open, or None), head_b (the second
    atlas's) and statistic (what the first card's contexts are ranked by). The Compare page's two-model mode writes
    the same parameters for its two models' atlases (without atlas and atlas_b: its models name them)."""

    atlas: str = ""
    atlas_b: str = ""
    x: str = "entropy_normalized"
    y: str = "induction"
    colour: str = LAYER_METRIC
    head: tuple[int, int] | None = None
    head_b: tuple[int, int] | None = None
    statistic: str = "induction"

    def __post_init__(self) -> None:
        for name in ("x", "y", "colour"):
            if getattr(self, name) not in ATLAS_METRICS:
                raise ValueError(f"AtlasState.{name} must be one of {ATLAS_METRICS}; got {getattr(self, name)!r}")
        if self.statistic not in EXEMPLAR_STATISTICS:
            raise ValueError(f"AtlasState.statistic must be one of {EXEMPLAR_STATISTICS}; got {self.statistic!r}")


_DEFAULTS = AtlasState()
_PARAMETERS = {"atlas": "atlas", "atlas_b": "atlas_b", "x": "ax", "y": "ay", "colour": "acolour", "head": "ahead",
               "head_b": "ahead_b", "statistic": "astat"}


def decode_atlas(params: Mapping[str, str | Sequence[str]], *, atlases: Collection[str],
                 ) -> tuple[AtlasState, tuple[Notice, ...]]:
    """Read an :class:`AtlasState` from query parameters; ``atlases``: the shipped atlases' names. Never raises."""
    if not isinstance(params, Mapping):
        return _DEFAULTS, ()
    warnings: list[Notice] = []
    get = _text_reader(params, warnings)
    values: dict[str, object] = {}
    for field, choices in (("atlas", atlases), ("atlas_b", atlases), ("x", ATLAS_METRICS), ("y", ATLAS_METRICS),
                           ("colour", ATLAS_METRICS), ("statistic", EXEMPLAR_STATISTICS)):
        key = _PARAMETERS[field]
        value = get(key)
        if value is None:
            continue
        if value in choices:
            values[field] = value
        else:
            warnings.append(Notice("atlas.link_bad_choice", key=key, value=_shown(value),
                                   choices=", ".join(choices)))
    for field in ("head", "head_b"):
        head = get(_PARAMETERS[field])
        if head is None:
            continue
        match = _HEAD.fullmatch(head)
        if match:
            values[field] = (int(match.group(1)), int(match.group(2)))
        else:
            warnings.append(Notice("atlas.link_bad_head", key=_PARAMETERS[field], value=_shown(head)))
    return replace(_DEFAULTS, **values), tuple(warnings)


def encode_atlas(state: AtlasState) -> dict[str, str]:
    """Query parameters for ``state`` (only what differs from the defaults), to add to the view's."""
    params: dict[str, str] = {}
    for field in fields(AtlasState):
        value = getattr(state, field.name)
        if value == getattr(_DEFAULTS, field.name):
            continue
        head = field.name in ("head", "head_b")
        params[_PARAMETERS[field.name]] = f"L{value[0]}H{value[1]}" if head else str(value)
    return params
