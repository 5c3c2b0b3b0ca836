"""inspector/base/progress.py: one progress contract — every long job calls ``progress(done, total, note)`` with
0 ≤ done ≤ total, done never going down and the last call at done == total, and the command line shows it on one
line."""

from __future__ import annotations

from inspector.analyses.attribution import AttributionSettings, attribute, corpus_agreement
from inspector.analyses.heads import head_report
from inspector.analyses.lessons import complexity_lesson
from inspector.base.progress import no_progress, print_progress

TEXTS = ["the cat sat on the mat because it was tired .", "a dog ran in the park ."]


def _recorder():
    calls = []
    return calls, lambda done, total, note: calls.append((done, total, note))


def _assert_the_contract(calls):
    assert calls, "the job reported nothing"
    for done, total, note in calls:
        assert isinstance(done, int) and isinstance(total, int) and isinstance(note, str) and note
        assert 0 <= done <= total and total > 0
    assert all(b[0] >= a[0] for a, b in zip(calls, calls[1:])) and len({c[1] for c in calls}) == 1
    assert calls[-1][0] == calls[-1][1]


def test_the_lesson_timings_report_each_round_and_the_end():
    calls, progress = _recorder()
    complexity_lesson((16, 32, 48), heads=2, d_k=8, device="cpu", repeats=2, warmups=1, progress=progress)
    _assert_the_contract(calls)  # one warm-up round and two timed rounds, each over every length
    assert [c[0] for c in calls] == [0, 1, 2, 3] and calls[0][2] == "round 1 of 3"


def test_the_attribution_report_the_corpus_agreement_and_the_head_report_keep_the_contract(tiny_bert):
    settings = AttributionSettings(methods=("attention", "gradient"), permutations=0, faithfulness=False,
                                   head_grid=False)
    for run in (lambda p: attribute(tiny_bert, TEXTS[0], settings=settings, progress=p),
                lambda p: corpus_agreement(tiny_bert, TEXTS, settings=settings, resamples=10, progress=p),
                lambda p: head_report(tiny_bert, TEXTS, progress=p)):
        calls, progress = _recorder()
        run(progress)
        _assert_the_contract(calls)


def test_no_progress_shows_nothing(capfd):
    no_progress(1, 2, "x")
    assert capfd.readouterr() == ("", "")


def test_the_command_line_rewrites_one_line_and_ends_it_at_the_total(capsys):
    print_progress(1, 3, "text 1 of 3")
    print_progress(3, 3, "text 3 of 3")
    err = capsys.readouterr().err  # not a terminal: three spaces clear what a longer note left
    assert err == "\rtext 1 of 3   \rtext 3 of 3   \n"


def test_every_progress_callback_is_the_one_type_and_look_alikes_have_their_own_names():
    """A source scan (issue 39, "one progress contract"): no module but inspector/base/progress.py spells the
    contract's shape ``Callable[[int, int, str], None]`` (an alias would be a second name for it), every parameter
    named ``progress`` that is annotated is annotated with :data:`~inspector.base.progress.Progress`, and no class is
    named ``Progress`` (the page's status line is ``StatusLine``)."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    files = [p for folder in ("inspector", "views", "kernels") for p in (root / folder).rglob("*.py")]
    files.append(root / "app.py")
    spelled, annotated, classes, checked = [], [], [], 0
    for path in files:
        name = str(path.relative_to(root))
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Subscript) and ast.unparse(node) == "Callable[[int, int, str], None]" \
                    and name != "inspector/base/progress.py":
                spelled.append(name)
            if isinstance(node, ast.ClassDef) and node.name == "Progress":
                classes.append(name)
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                for argument in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]:
                    if argument.arg == "progress" and argument.annotation is not None:
                        checked += 1
                        if ast.unparse(argument.annotation) not in ("Progress", "Progress | None"):
                            annotated.append(f"{name}:{node.name}")
    assert checked > 10  # the scan sees the jobs' signatures
    assert (spelled, annotated, classes) == ([], [], [])
