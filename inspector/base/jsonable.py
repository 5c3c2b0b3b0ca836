"""The one conversion from the library's results to plain JSON values, used by every ``--json`` the command line
writes, every download a page offers and the export pack's ``numbers.json`` (issue 15: there were three
converters, and an analysis that needed one had to import it from the module that imports Altair).

It imports only NumPy and the standard library, so any layer may use it. What becomes what:

- mappings → dicts with ``str`` keys; lists, tuples, sets → lists (sets sorted, so the output is stable);
- NumPy arrays → nested lists; NumPy scalars → Python numbers; ``bool`` stays ``bool``;
- floats: NaN and ±inf → ``None`` (JSON has neither; ``json.dumps(..., allow_nan=False)`` then cannot fail);
  rounded to ``significant_digits`` when asked (7 is all a float32 carries: smaller files, no widening noise
  such as 0.10000000149 — significant digits, not decimals, so 1.5e-05 keeps its digits);
- dataclasses → dicts of their fields; enums → their value; ``Path`` → ``str``; dates and times → ISO 8601;
- anything else raises ``TypeError`` naming the type and where it sat, instead of a half-written file.

``overrides`` maps a type to a function that turns such a value into something convertible; it is checked
first, so a caller can write one result in its own way (``lessons_json`` writes an ``Answer`` as its
sentence in the chosen language).
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import math
from collections.abc import Callable, Mapping
from pathlib import PurePath
from typing import Any

import numpy as np

__all__ = ["to_jsonable"]


def to_jsonable(value: Any, *, significant_digits: int | None = None,
                overrides: Mapping[type, Callable[[Any], Any]] | None = None) -> Any:
    """``value`` (results, dicts, arrays … nested any way) as plain JSON values: see the module docstring.
    significant_digits: round every float to this many significant digits (None: keep full precision)."""
    if significant_digits is not None and (isinstance(significant_digits, bool) or significant_digits < 1):
        raise ValueError(f"significant_digits must be a positive int or None; got {significant_digits!r}")
    return _convert(value, significant_digits, overrides or {}, "value")


def _convert(value: Any, digits: int | None, overrides: Mapping[type, Callable[[Any], Any]], where: str) -> Any:
    for kind, convert in overrides.items():
        if isinstance(value, kind):
            return _convert(convert(value), digits, overrides, where)
    # bool before int/float: it is an int subclass, and True must not become 1.0.
    if value is None or isinstance(value, (str, bool)):
        return value
    if isinstance(value, (int, float)):
        return _number(value, digits)
    if isinstance(value, np.ndarray):
        return _convert(value.tolist(), digits, overrides, where)
    if isinstance(value, np.generic):
        return _convert(value.item(), digits, overrides, where)
    if isinstance(value, Mapping):
        return {str(k): _convert(v, digits, overrides, f"{where}[{k!r}]") for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_convert(v, digits, overrides, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, (set, frozenset)):
        return [_convert(v, digits, overrides, f"{where}{{}}") for v in sorted(value, key=repr)]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _convert(getattr(value, f.name), digits, overrides, f"{where}.{f.name}")
                for f in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return _convert(value.value, digits, overrides, where)
    if isinstance(value, PurePath):
        return str(value)
    if isinstance(value, (datetime.date, datetime.datetime, datetime.time)):
        return value.isoformat()
    raise TypeError(f"{where} is a {type(value).__module__}.{type(value).__qualname__}, which has no JSON form; "
                    "convert it to numbers, strings, lists or dicts first (or pass an override for its type)")


def _number(value: int | float, digits: int | None) -> int | float | None:
    if isinstance(value, int):
        return int(value)  # an IntEnum or other int subclass becomes a plain int
    if not math.isfinite(value):
        return None
    value = float(value)
    return float(f"{value:.{digits}g}") if digits is not None else value
