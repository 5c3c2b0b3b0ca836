"""Fuzzing the command line (issue 18): whatever the arguments, a run ends with exit 0 or with exit 2 and one
``error: …`` line on stderr — never a traceback.

The fuzz covers everything that runs before a model loads (argparse types, each command's checks at the top of
its ``run``): ``load_model`` is replaced by a sentinel, so no example pays for a model and reaching the sentinel
means every pre-load check passed. The checks that need the model are tested case by case in test_cli.py.
"""

from __future__ import annotations

import contextlib
import io
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inspector.cli import COMMANDS, build_parser, main


class _ModelLoaded(Exception):
    """The stand-in load_model was called: the arguments passed every check that runs before loading."""


def _options_by_command() -> dict[str, list[str]]:
    """Every option string of every command, read from the parser itself (a new option is fuzzed too)."""
    parser = build_parser()
    commands = next(action for action in parser._actions if action.dest == "command").choices
    return {name: [option for action in sub._actions for option in action.option_strings if option.startswith("--")
                   and option != "--help"] for name, sub in commands.items()}


OPTIONS = _options_by_command()

# Values that broke the CLI before issue 18 or sit on a boundary, plus free text and numbers of every size.
EDGE_VALUES = ["", " ", "-", "--", "all", "none", "0", "-1", "1", "0-99999999999", "999999999", "4096", "4097",
               "nan", "inf", "-inf", "1e9", "0.5", "2", "auto", "first", "last", "cpu", "cuda", "cuda:7", "float16",
               "default", "shipped:planted-token", "shipped:../../etc", "/dev/zero", "/", "no\x00such", "9" * 5000,
               "0,2-4", "4-1", "1,,2", "zzzzqq", "[UNK]", "mask", "examples", "bundled", "¹²", "٣", "\u200b"]
values = st.one_of(st.sampled_from(EDGE_VALUES), st.integers(-2**70, 2**70).map(str),
                   st.floats(allow_nan=True, allow_infinity=True).map(repr), st.text(max_size=30))


@st.composite
def argument_lists(draw) -> list[str]:
    command = draw(st.sampled_from(COMMANDS + ("nonsense",)))
    known = OPTIONS.get(command, ["--text"])
    argv = [command]
    for _ in range(draw(st.integers(0, 6))):
        option = draw(st.one_of(st.sampled_from(known), st.sampled_from(["--nope", "-x", "--text"])))
        argv.append(option)
        if draw(st.integers(0, 9)) > 0:  # now and then an option without its value
            value = draw(values)
            # "--opt=value" keeps values that start with "-" from reading as options, as a user would write them
            argv[-1:] = [f"{option}={value}"] if draw(st.booleans()) else [option, value]
    return argv


@pytest.fixture
def empty_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a fuzzed --json or --text-file names a file here, never in the repository
    return tmp_path


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(argv=argument_lists())
def test_any_arguments_end_in_exit_0_or_one_error_line(empty_folder, argv):
    out, err = io.StringIO(), io.StringIO()
    with mock.patch("inspector.core.loading.load_model", side_effect=_ModelLoaded), \
            mock.patch("inspector.serving.hosting.load_model", side_effect=_ModelLoaded), \
            contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = main(argv)
        except _ModelLoaded:
            return  # every pre-load check passed; what the model says is tested in test_cli.py
    lines = err.getvalue().strip().splitlines()
    assert "Traceback" not in err.getvalue()
    assert status in (0, 2), (argv, status, lines)
    if status == 2:
        assert len(lines) == 1 and lines[0].startswith("error: "), (argv, lines)


def test_the_fuzz_reaches_the_loader_and_refuses(empty_folder):
    """The two outcomes the fuzz accepts both happen: valid arguments reach load_model, bad ones do not."""
    with mock.patch("inspector.core.loading.load_model", side_effect=_ModelLoaded), \
            mock.patch("inspector.serving.hosting.load_model", side_effect=_ModelLoaded), \
            contextlib.redirect_stderr(io.StringIO()):
        with pytest.raises(_ModelLoaded):
            main(["analyze", "--text", "hi", "--weights", "0,2-4"])
        assert main(["analyze", "--text", "hi", "--weights", "0-99999999999"]) == 2
