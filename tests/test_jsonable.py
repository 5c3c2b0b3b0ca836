"""inspector/base/jsonable.py: the one conversion to JSON values behind every ``--json``, download and export pack."""

from __future__ import annotations

import ast
import datetime
import enum
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from inspector.base.jsonable import to_jsonable


class Colour(enum.Enum):
    RED = "red"


class Level(enum.IntEnum):
    HIGH = 3


@dataclass(frozen=True)
class Result:
    scores: np.ndarray
    name: str
    nested: tuple


def test_numpy_arrays_and_scalars_become_python_numbers_with_nan_and_inf_as_none():
    value = {"f32": np.array([[0.5, np.nan], [np.inf, -np.inf]], np.float32), "i64": np.int64(3),
             "flag": np.bool_(True), "bools": np.array([True, False]), "f": np.float64(0.25)}
    converted = to_jsonable(value)
    assert converted == {"f32": [[0.5, None], [None, None]], "i64": 3, "flag": True, "bools": [True, False],
                         "f": 0.25}
    assert type(converted["i64"]) is int and type(converted["flag"]) is bool and type(converted["bools"][0]) is bool
    json.dumps(converted, allow_nan=False)  # the point of it: never a NaN in the file


def test_containers_dataclasses_enums_paths_and_dates():
    result = Result(scores=np.arange(3, dtype=np.int32), name="r", nested=({1: float("nan")}, Path("a/b")))
    value = {1: result, "set": {3, 1, 2}, "when": datetime.date(2026, 11, 29),
             "at": datetime.datetime(2026, 11, 29, 8, 30), "colour": Colour.RED, "level": Level.HIGH}
    assert to_jsonable(value) == {"1": {"scores": [0, 1, 2], "name": "r", "nested": [{"1": None}, "a/b"]},
                                  "set": [1, 2, 3], "when": "2026-11-29", "at": "2026-11-29T08:30:00",
                                  "colour": "red", "level": 3}
    assert type(to_jsonable(Level.HIGH)) is int


def test_significant_digits_round_without_losing_small_values():
    value = {"small": np.float32(1.5402663848362863e-05), "one": np.float32(0.1), "big": 123456.789,
             "int": 7, "nan": float("nan")}
    assert to_jsonable(value, significant_digits=7) == {"small": 1.540266e-05, "one": 0.1, "big": 123456.8,
                                                        "int": 7, "nan": None}
    widened = to_jsonable(np.float32(0.1))  # unrounded: float32's 0.1 widened to a double
    assert widened != 0.1 and widened == pytest.approx(0.1)
    with pytest.raises(ValueError, match="significant_digits"):
        to_jsonable(1.0, significant_digits=0)


def test_overrides_come_first_and_their_result_is_converted_too():
    result = Result(scores=np.ones(2), name="r", nested=())
    converted = to_jsonable({"r": result}, overrides={Result: lambda r: {"total": r.scores.sum()}})
    assert converted == {"r": {"total": 2.0}}


def test_an_unknown_object_is_an_error_that_says_where_it_was():
    with pytest.raises(TypeError, match=r"value\['a'\]\[1\] is a builtins.object"):
        to_jsonable({"a": [1, object()]})


def test_it_imports_only_numpy_and_the_standard_library():
    import sys

    tree = ast.parse(Path(sys.modules["inspector.base.jsonable"].__file__).read_text(encoding="utf-8"))
    roots = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
             for alias in node.names}
    roots |= {node.module.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
    assert roots - set(sys.stdlib_module_names) == {"numpy"}
