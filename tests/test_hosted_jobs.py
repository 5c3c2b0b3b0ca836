"""Issue 33, item 1: every page's long job is planned within a hosted instance's limits before it starts (refused
or shrunk with a notice, :mod:`inspector.serving.jobs`) and held to the deadline while it runs
(:mod:`inspector.core.deadline`)."""

from __future__ import annotations

import time
from contextlib import contextmanager
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from inspector.analyses.attribution import attribute
from inspector.analyses.heads import head_report
from inspector.base.errors import DeadlineExceededError, OverBudgetError
from inspector.base.limits import HOSTED_GROUNDTRUTH_EXAMPLES, HOSTED_JOB_TOKENS
from inspector.core.deadline import admit_job, check_deadline, current_deadline, job_deadline
from inspector.core.forward import encode_text, forward
from inspector.serving.hosting import HOSTED_DEADLINE_S, HostingPolicy
from inspector.serving.jobs import JOB_KINDS, JobPlan, job_token_limit, plan_job

APP = Path(__file__).resolve().parents[1] / "app.py"
HOSTED = HostingPolicy(hosted=True, deadline_s=HOSTED_DEADLINE_S)
LONG = "word " * 510  # 512 tokens with [CLS] and [SEP] on the bundled model: its longest text


def test_a_local_instance_plans_no_limits(tiny_bert):
    for kind in JOB_KINDS:
        plan = plan_job(HostingPolicy(), kind, tiny_bert, ["word " * 60], count=500)
        assert plan.max_tokens is None and plan.deadline_s is None and plan.keep == 500 and plan.notice is None


def test_hosted_token_limits_shrink_with_the_model_and_the_memory_budget(tiny_bert, tiny_models):
    # The tiny models are far smaller than the reference: their positions (64) bind.
    assert job_token_limit("attribution", tiny_bert.info, HOSTED) == 64
    assert job_token_limit("groundtruth", tiny_bert.info, HOSTED) is None  # it reads no text of the reader's
    small = HostingPolicy(hosted=True, job_memory_bytes=64 * 8 * 4 * 100**2)  # 64 copies, 8 heads, 4 B
    assert job_token_limit("attribution", tiny_bert.info, small) == 64
    tighter = HostingPolicy(hosted=True, job_memory_bytes=64 * 2 * 4 * 4 * 30 ** 2)
    assert job_token_limit("attribution", tiny_bert.info, tighter) == 30


def test_a_text_past_the_limit_is_refused_in_one_line_before_anything_runs(tiny_bert):
    policy = HostingPolicy(hosted=True, deadline_s=60, job_memory_bytes=64 * 2 * 4 * 4 * 20 ** 2)  # 20 tokens
    with pytest.raises(OverBudgetError) as raised:
        plan_job(policy, "attribution", tiny_bert, ["word " * 30])
    message = str(raised.value)
    assert "\n" not in message and "32 tokens" in message and "at most 20 tokens" in message
    assert "make app" in message
    assert plan_job(policy, "attribution", tiny_bert, ["word " * 10]).max_tokens == 20


def test_counts_are_shrunk_with_a_notice(tiny_bert):
    board = plan_job(HOSTED, "groundtruth", tiny_bert, count=500)
    assert board.keep == HOSTED_GROUNDTRUTH_EXAMPLES and "500" in board.notice
    assert plan_job(HOSTED, "groundtruth", tiny_bert, count=20).notice is None
    generated = plan_job(HOSTED, "generate", tiny_bert, ["word " * 40], count=100)
    assert generated.keep == 64 - 42 and generated.notice.key == "notice.job_new_tokens"
    corpus = ["word " * 30] * 10  # 32 tokens each; the tiny model's corpus budget is 1,024 × 64 / 256 = 256
    plan = plan_job(HOSTED, "heads", tiny_bert, corpus, count=len(corpus))
    assert plan.keep == 8 and len(plan.kept(corpus)) == 8 and plan.notice.key == "notice.job_corpus"


def test_a_plan_states_its_invariants():
    with pytest.raises(ValueError, match="notice"):
        JobPlan(kind="heads", deadline_s=None, max_tokens=None, requested=5, keep=2)
    with pytest.raises(ValueError, match="kind"):
        JobPlan(kind="a-census", deadline_s=None, max_tokens=None)


def test_a_job_deadline_stops_every_forward_inside_it_and_only_there(tiny_bert):
    inputs = encode_text(tiny_bert, "A short text.").inputs
    with job_deadline(1e-9, "the test job"):
        time.sleep(0.001)
        with pytest.raises(DeadlineExceededError, match="the test job did not finish within the 1e-09 s"):
            forward(tiny_bert, inputs)
        with pytest.raises(DeadlineExceededError):
            check_deadline()
    assert current_deadline() is None
    forward(tiny_bert, inputs)  # outside the job: no deadline
    check_deadline()
    with job_deadline(None, "no deadline"):
        forward(tiny_bert, inputs)


def test_the_sooner_of_two_deadlines_binds():
    with job_deadline(1e-9, "outer"):
        with job_deadline(3600, "inner") as inner:
            assert inner.job == "outer"
    with job_deadline(3600, "outer"):
        with job_deadline(1e-9, "inner") as inner:
            assert inner.job == "inner"


def test_a_wait_for_admission_moves_the_deadline_and_the_jobs_own_work_does_not():
    """Waiting in line is not the job's time; its work before the first forward is (a restart from the admission
    forgave both: Heads corpus runs ended 0.4 s past their deadline in the hosted sweep)."""

    @contextmanager
    def slow_admission():
        time.sleep(0.2)  # the time a job waits for its run slot
        yield

    with job_deadline(60.0, "the test job", admit=slow_admission) as first:
        time.sleep(0.5)  # the job's own work before its first forward: not forgiven
        admit_job()
        moved = current_deadline().at - first.at
    assert 0.2 <= moved < 0.6, moved


def test_a_jobs_second_part_keeps_the_first_parts_instant_and_seconds(tiny_bert):
    """A page that draws between a job's two parts (the Heads page's first look) does it outside both blocks; the
    second part ends when the first would have, and its message names the job's whole deadline."""
    with job_deadline(0.05, "the test job") as first:
        pass
    time.sleep(0.06)  # the drawing between the parts, past the instant
    with job_deadline(0.05, "the test job", until=first) as second:
        assert (second.at, second.seconds) == (first.at, first.seconds)
        with pytest.raises(DeadlineExceededError, match="within the 0.05 s"):
            forward(tiny_bert, encode_text(tiny_bert, "A short text.").inputs)
    with job_deadline(None, "no deadline", until=first) as none:
        assert none is None  # a local instance: no deadline in either part


def test_the_heads_page_draws_its_first_look_outside_the_jobs_deadline(monkeypatch):
    """Issue 45's sweep: a Heads run ended past its deadline by the first look's drawing (a step no layer check
    covers). The first look is drawn between the job's two parts, with no deadline set."""
    from views import heads_sections, session

    monkeypatch.setattr(session, "hosting_policy", lambda: HostingPolicy(hosted=True, deadline_s=600.0))
    seen = []
    original = heads_sections.draw_first_look

    def draw(*args, **kwargs):
        seen.append(current_deadline())
        return original(*args, **kwargs)

    monkeypatch.setattr(heads_sections, "draw_first_look", draw)
    at, _ = _page("views/heads.py", "A text whose first look is drawn outside the job's deadline.")
    assert not at.exception and not at.error, [e.value for e in (*at.exception, *at.error)]
    assert seen == [None]


def test_long_jobs_stop_at_the_deadline_while_they_run(tiny_bert):
    """Attribution (forwards and backward passes) and the Heads report (forwards, progress steps) both stop."""
    with job_deadline(1e-9, "the attribution run"), pytest.raises(DeadlineExceededError, match="attribution run"):
        time.sleep(0.001)
        attribute(tiny_bert, "The cat sat on the mat.")
    with job_deadline(1e-9, "the Heads report"), pytest.raises(DeadlineExceededError, match="Heads report"):
        time.sleep(0.001)
        head_report(tiny_bert, ("The cat sat on the mat.",))


@pytest.fixture
def hosted_app(monkeypatch):
    from views import session

    monkeypatch.setenv("INSPECTOR_HOSTED", "1")
    session.hosting_policy.clear()
    yield
    monkeypatch.delenv("INSPECTOR_HOSTED")
    session.hosting_policy.clear()


def _page(page: str, text: str, timeout: float = 240) -> tuple[AppTest, float]:
    at = AppTest.from_file(str(APP), default_timeout=timeout)
    at.query_params["text"] = text
    started = time.perf_counter()
    at.switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]
    return at, time.perf_counter() - started


@pytest.mark.parametrize("page, kind", [("views/attribution.py", "attribution"), ("views/heads.py", "heads"),
                                        ("views/lessons.py", "lessons"), ("views/compare.py", "compare")])
def test_hosted_pages_refuse_a_512_token_text_within_the_deadline(hosted_app, page, kind):
    """The issue's hostile requests: Attribution's "every method on all tokens" at 512 tokens ran 240 s and took
    6 GB, Heads at 512 tokens 55 s; hosted, each page refuses in one line before any of that runs."""
    at, seconds = _page(page, LONG)
    errors = [e.value for e in at.error]
    limit = HOSTED_JOB_TOKENS[kind]
    assert any(f"at most {limit} tokens" in e and "512 tokens" in e for e in errors), errors
    assert not at.toggle or not any(tg.key == "attr_long" for tg in at.toggle)  # no "run every method" to turn on
    assert seconds < HOSTED_DEADLINE_S, seconds


def test_a_hosted_refusal_reads_in_the_page_language(hosted_app):
    """Issue 33, item 12 (seen in Chromium): the refusal was English on a 简体中文 page, and named "the lessons"."""
    at = AppTest.from_file(str(APP), default_timeout=240)
    at.query_params["text"], at.query_params["lang"] = LONG, "zh"
    at.switch_page("views/lessons.py").run()
    assert not at.exception, [e.value for e in at.exception]
    errors = [e.value for e in at.error]
    assert len(errors) == 1 and "课程页面使用 all-MiniLM-L6-v2（内置） 时最多读取" in errors[0], errors
    assert "the text has" not in errors[0]


def test_a_hosted_heads_run_past_its_deadline_is_one_line_and_no_bar(monkeypatch):
    from views import session

    monkeypatch.setattr(session, "hosting_policy", lambda: HostingPolicy(hosted=True, deadline_s=1e-6))
    at, _ = _page("views/heads.py", "A text for a deadline of a microsecond on the Heads page.")
    errors = [e.value for e in at.error]
    assert len(errors) == 1 and "did not finish within the 1e-06 s" in errors[0], errors
    assert not at.get("progress")
