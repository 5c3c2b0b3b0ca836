"""The per-process cap on concurrent heavy runs (inspector/serving/run_queue.py, issue 32): a third run waits in line
and knows its place, the line is first come first served, a full line or a long wait is one clear refusal, and a
waiting run that is stopped leaves the line. Threads stand in for Streamlit's script threads; events, not timing,
order them."""

from __future__ import annotations

import threading

import pytest

from inspector.base.errors import HostingConfigError
from inspector.base.i18n import Notice, notice_text
from inspector.serving.run_queue import QueuePolicy, RunQueue, ServerBusyError

WAIT_S = 10.0  # how long a test waits for a thread to reach a point before it fails (never reached when correct)


class Heavy:
    """A run that holds its slot until released, recording that it started."""

    def __init__(self, queue: RunQueue, name: str, log: list[str], positions: list[int] | None = None):
        self.started, self.release, self.done = threading.Event(), threading.Event(), threading.Event()
        self.error: BaseException | None = None
        self.positions = positions if positions is not None else []
        self.thread = threading.Thread(target=self._run, args=(queue, name, log), daemon=True)

    def _run(self, queue: RunQueue, name: str, log: list[str]) -> None:
        try:
            with queue.slot(lambda position, running: self.positions.append(position)):
                log.append(name)
                self.started.set()
                assert self.release.wait(WAIT_S)
        except BaseException as err:  # noqa: BLE001 — handed to the test
            self.error = err
        finally:
            self.done.set()

    def start(self) -> Heavy:
        self.thread.start()
        return self


def _until(predicate) -> None:
    event = threading.Event()
    for _ in range(int(WAIT_S / 0.01)):
        if predicate():
            return
        event.wait(0.01)
    raise AssertionError("condition not reached")


def test_a_third_heavy_run_waits_and_reports_its_position():
    queue, log = RunQueue(QueuePolicy(slots=2)), []
    first, second = Heavy(queue, "first", log).start(), Heavy(queue, "second", log).start()
    assert first.started.wait(WAIT_S) and second.started.wait(WAIT_S)
    third = Heavy(queue, "third", log).start()
    _until(lambda: third.positions)
    assert not third.started.is_set() and queue.running == 2 and queue.waiting == 1
    assert set(third.positions) == {1}  # first in line
    first.release.set()
    assert third.started.wait(WAIT_S), "the third run starts once a slot is free"
    second.release.set()
    third.release.set()
    for run in (first, second, third):
        assert run.done.wait(WAIT_S) and run.error is None
    assert log == ["first", "second", "third"] and queue.running == 0 and queue.waiting == 0


def test_the_line_is_first_come_first_served_and_positions_move_up():
    queue, log = RunQueue(QueuePolicy(slots=1)), []
    holder = Heavy(queue, "holder", log).start()
    assert holder.started.wait(WAIT_S)
    waiters = []
    for name in ("a", "b", "c"):
        waiters.append(Heavy(queue, name, log).start())
        _until(lambda: queue.waiting == len(waiters))
    _until(lambda: all(w.positions for w in waiters))
    assert [w.positions[-1] for w in waiters] == [1, 2, 3]
    holder.release.set()
    for place, waiter in zip((2, 1, None), waiters):
        assert waiter.started.wait(WAIT_S)
        if place is not None:  # c reports on its next wake-up (at most POLL_S) while this one holds the slot
            _until(lambda: waiters[2].positions[-1] == place)
        waiter.release.set()
        assert waiter.done.wait(WAIT_S)
    assert log == ["holder", "a", "b", "c"]
    assert waiters[2].positions[0] == 3 and waiters[2].positions[-1] == 1, "c saw its place move from 3 to 1"


def test_a_full_line_and_a_long_wait_are_one_clear_refusal():
    queue, log = RunQueue(QueuePolicy(slots=1, max_waiting=1, max_wait_s=0.3)), []
    holder = Heavy(queue, "holder", log).start()
    assert holder.started.wait(WAIT_S)
    waiter = Heavy(queue, "waiter", log).start()
    _until(lambda: queue.waiting == 1)
    with pytest.raises(ServerBusyError) as full:
        with queue.slot():
            pass
    assert isinstance(full.value.args[0], Notice) and "1 runs are already waiting" in str(full.value)
    assert "排队" in notice_text(full.value.args[0], "zh")
    assert waiter.done.wait(WAIT_S) and isinstance(waiter.error, ServerBusyError)
    assert "waited 0 s in the queue" in str(waiter.error)
    holder.release.set()
    assert holder.done.wait(WAIT_S) and queue.waiting == 0 and queue.running == 0


def test_a_stopped_waiter_leaves_the_line():
    """Streamlit stops a waiting script (a rerun, a closed tab) by raising from the position callback."""
    queue, log = RunQueue(QueuePolicy(slots=1)), []
    holder = Heavy(queue, "holder", log).start()
    assert holder.started.wait(WAIT_S)

    class Stop(Exception):
        pass

    def stopped(position: int, running: int) -> None:
        raise Stop

    with pytest.raises(Stop):
        with queue.slot(stopped):
            pass
    assert queue.waiting == 0
    holder.release.set()
    assert holder.done.wait(WAIT_S) and queue.running == 0


def test_the_policy_reads_the_environment():
    assert QueuePolicy.from_env({}).slots is None
    assert QueuePolicy.from_env({"INSPECTOR_HOSTED": "1"}).slots == 2
    policy = QueuePolicy.from_env({"INSPECTOR_MAX_CONCURRENT_RUNS": "3", "INSPECTOR_MAX_QUEUED_RUNS": "5",
                                   "INSPECTOR_QUEUE_WAIT_S": "9.5"})
    assert (policy.slots, policy.max_waiting, policy.max_wait_s) == (3, 5, 9.5)
    with pytest.raises(HostingConfigError, match="INSPECTOR_MAX_CONCURRENT_RUNS"):
        QueuePolicy.from_env({"INSPECTOR_MAX_CONCURRENT_RUNS": "zero"})
    unlimited = RunQueue(QueuePolicy())
    with unlimited.slot(), unlimited.slot():
        pass


@pytest.mark.slow
def test_the_inspect_page_waits_in_line_and_shows_its_position(monkeypatch):
    """App level: with the server's two slots held by two heavy runs, the Inspect page's run (a cache miss) waits,
    its status line says it is number 1 behind 2 runs, and it draws once a slot frees."""
    from streamlit.testing.v1 import AppTest

    import views.session
    from inspector.serving import run_queue
    from tests.conftest import APP_PATH

    monkeypatch.setenv("INSPECTOR_MAX_CONCURRENT_RUNS", "2")
    run_queue.process_queue.cache_clear()
    queue = run_queue.process_queue()
    assert queue.policy.slots == 2
    labels: list[str] = []
    update = views.session.StatusLine.update
    monkeypatch.setattr(views.session.StatusLine, "update",
                        lambda self, *, label, state="running": (labels.append(label), update(self, label=label,
                                                                                              state=state))[1])
    log: list[str] = []
    holders = [Heavy(queue, name, log).start() for name in ("first", "second")]
    try:
        assert all(h.started.wait(WAIT_S) for h in holders)
        at = AppTest.from_file(str(APP_PATH), default_timeout=240)
        at.query_params["text"] = "A queue forms when a class opens one link at nine o'clock."
        page = threading.Thread(target=at.run, daemon=True)
        page.start()
        _until(lambda: any("in the queue" in label for label in labels))
        assert queue.waiting == 1 and page.is_alive(), "the page's run waits while both slots are held"
        holders[0].release.set()
        page.join(240)
        assert not page.is_alive()
    finally:
        for holder in holders:
            holder.release.set()
            holder.done.wait(WAIT_S)
        run_queue.process_queue.cache_clear()
    assert not at.exception, [e.value for e in at.exception]
    waiting = [label for label in labels if "in the queue" in label]
    assert waiting[0] == ("Waiting for the model: 2 runs are in progress on this server; yours is number 1 in the "
                          "queue.")
    assert at.get("vega_lite_chart") or at.get("arrow_vega_lite_chart"), "the page drew its charts after waiting"
    assert queue.running == 0 and queue.waiting == 0


def test_a_job_takes_a_slot_at_its_first_forward_and_its_clock_starts_when_admitted(monkeypatch, tiny_bert):
    """Every page's long job (Plan.running, issue 32 beyond Inspect): no slot while nothing computes (a job served
    from caches never queues), one slot from its first forward to the end of its block; a job that had to wait is
    told its place, then position 0 when it runs, and the wait is not taken from its deadline."""
    from inspector.core.forward import forward
    from inspector.serving import run_queue
    from inspector.serving.jobs import JobPlan
    from inspector.serving.run import Plan, Request

    def job(kind: str, deadline_s: float | None) -> Plan:
        return Plan(request=Request(kind=kind), job=JobPlan(kind=kind, deadline_s=deadline_s, max_tokens=None))

    monkeypatch.setenv("INSPECTOR_MAX_CONCURRENT_RUNS", "1")
    run_queue.process_queue.cache_clear()
    try:
        queue = run_queue.process_queue()
        inputs = tiny_bert.tokenizer("a queue forms", return_tensors="pt")
        with job("heads", None).running():
            assert queue.running == 0, "no slot before the job computes"
            forward(tiny_bert, inputs)
            forward(tiny_bert, inputs)
            assert queue.running == 1, "one slot, held across the job's forwards"
        assert queue.running == 0

        holder = Heavy(queue, "other page", []).start()
        assert holder.started.wait(WAIT_S)
        positions: list[int] = []
        threading.Timer(0.8, holder.release.set).start()  # the other run ends after longer than our deadline
        with job("lessons", 0.5).running(
                lambda position, running: positions.append(position)):
            forward(tiny_bert, inputs)  # would raise DeadlineExceededError if the wait counted
            assert queue.running == 1
        assert positions[0] == 1 and positions[-1] == 0 and set(positions) == {0, 1}
        assert holder.done.wait(WAIT_S) and holder.error is None and queue.running == 0
    finally:
        run_queue.process_queue.cache_clear()


@pytest.mark.slow
def test_the_heads_page_queues_a_computing_job_and_not_a_cached_one(monkeypatch):
    """App level, a page other than Inspect: with the server's one slot held, the Heads page's report waits in line
    (its place drawn in the page), and draws once the slot frees; the same view again — a cache hit — draws while
    the slot is held, and replays without a closure error (the position line is not recorded into the cache)."""
    from streamlit.testing.v1 import AppTest

    import views.session
    from inspector.serving import run_queue
    from tests.conftest import APP_PATH

    monkeypatch.setenv("INSPECTOR_MAX_CONCURRENT_RUNS", "1")
    run_queue.process_queue.cache_clear()
    queue = run_queue.process_queue()
    positions: list[int] = []
    report = views.session.QueueLine.report
    monkeypatch.setattr(views.session.QueueLine, "report",
                        lambda self, position, running: (positions.append(position), report(self, position,
                                                                                            running))[1])
    at = AppTest.from_file(str(APP_PATH), default_timeout=240)
    at.query_params["text"] = "A class opens the heads page at nine."
    at.run()
    holders = [Heavy(queue, "other", []).start()]
    try:
        assert holders[0].started.wait(WAIT_S)
        at.switch_page("views/heads.py")
        page = threading.Thread(target=at.run, daemon=True)
        page.start()
        _until(lambda: queue.waiting == 1)
        assert page.is_alive() and positions and positions[0] == 1
        holders[0].release.set()
        page.join(240)
        assert not page.is_alive() and not at.exception, [e.value for e in at.exception]
        assert positions[-1] == 0 and at.get("arrow_vega_lite_chart") + at.get("vega_lite_chart")
        holders.append(Heavy(queue, "again", []).start())
        assert holders[1].started.wait(WAIT_S)
        seen = len(positions)
        at.run()  # the same report from the cache: no queue, no replay error
        assert not at.exception, [e.value for e in at.exception]
        assert len(positions) == seen and queue.waiting == 0
    finally:
        for holder in holders:
            holder.release.set()
            holder.done.wait(WAIT_S)
        run_queue.process_queue.cache_clear()
    assert queue.running == 0
