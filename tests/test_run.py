"""The one run (inspector/serving/run.py, issue 39 item 1): a request is planned once — its text tokenised once, for
the forward too — and run holding one of the server's run slots and one deadline, with the out-of-memory retries
and the CPU fallback; every command goes through it, so ``INSPECTOR_HOSTED=1`` limits a command as it limits a page.
Fakes stand in for an exhausted device and a busy server; a spy counts the tokenizer's calls."""

from __future__ import annotations

import threading
import time
from dataclasses import replace

import pytest
import torch

import inspector.core.capture as capture_module
from inspector.base.errors import DeadlineExceededError, DeviceOutOfMemoryError, InvalidTextError, OverBudgetError
from inspector.charts.sentences.unknown_tokens import unreadable_text_warning
from inspector.cli import main
from inspector.core.budget import attention_bytes
from inspector.core.forward import encode_text, forward
from inspector.core.loading import LoadedModel
from inspector.serving.hosting import HostingPolicy
from inspector.serving.jobs import JOB_KINDS
from inspector.serving.run import RUN_KINDS, Request, RunStopped, plan, run, run_capture
from inspector.serving.run_queue import QueuePolicy, RunQueue

TEXT = "the cat sat on the mat and the dog ran fast"


class CountingTokenizer:
    """The model's tokenizer, counting how often a text is tokenised (calls and encodes; id → string lookups are
    not tokenising)."""

    def __init__(self, tokenizer):
        self._tokenizer, self.calls = tokenizer, 0

    def __call__(self, *args, **kwargs):
        self.calls += 1
        return self._tokenizer(*args, **kwargs)

    def encode(self, *args, **kwargs):
        self.calls += 1
        return self._tokenizer.encode(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._tokenizer, name)


def counted(loaded: LoadedModel) -> tuple[LoadedModel, CountingTokenizer]:
    spy = CountingTokenizer(loaded.tokenizer)
    return LoadedModel(model=loaded.model, tokenizer=spy, info=loaded.info), spy


def inspect(text: str = TEXT, **options) -> Request:
    return Request(kind="inspect", texts=(text,), **{"weights": "all", **options})


def test_the_inspect_run_tokenises_its_text_once(tiny_bert):
    loaded, spy = counted(tiny_bert)
    planned = plan(inspect(), loaded, HostingPolicy())
    result = run_capture(planned, loaded)
    assert spy.calls == 1, "the plan's encoding reached the forward"
    assert result.tokens == planned.encodings[0].tokens and sorted(result.weights) == [0, 1]


def test_the_inspect_page_s_warning_and_plan_share_one_tokenisation(tiny_bert):
    """The Inspect page's one encoding (views.session.cached_encoding): the unknown-token warning reads it, the plan
    and the forward reuse it — one tokenisation in all. A text cut to the model's positions is tokenised again by
    the plan, which refuses it in the usual words."""
    loaded, spy = counted(tiny_bert)
    encoded = encode_text(loaded, TEXT, truncate=True)
    assert unreadable_text_warning(loaded, TEXT, "en", encoded) is None
    result = run_capture(plan(inspect(), loaded, HostingPolicy(), encoded=encoded), loaded)
    assert spy.calls == 1 and result.tokens == encoded.tokens
    long_text = " ".join(["cat"] * (loaded.info.max_positions + 5))
    cut = encode_text(loaded, long_text, truncate=True)
    assert cut.truncated
    with pytest.raises(InvalidTextError, match="reads at most"):
        plan(inspect(long_text), loaded, HostingPolicy(), encoded=cut)


def test_a_generation_tokenises_its_prompt_once(decoder):
    from inspector.analyses.generate import generate

    loaded, spy = counted(decoder)
    planned = plan(Request(kind="generate", texts=(TEXT,), count=3, weights="all"), loaded, HostingPolicy())
    result = run(planned, lambda progress: generate(loaded, TEXT, max_new_tokens=planned.keep, weights=planned.weights,
                                                    encoded=planned.encodings[0], stop_at_eos=False))
    assert spy.calls == 1 and result.steps == 3 and len(result.weights) == decoder.info.num_layers


def test_the_run_holds_one_slot_and_gives_it_back(tiny_bert):
    queue = RunQueue(QueuePolicy(slots=1))
    planned = plan(inspect(), tiny_bert, HostingPolicy())
    seen = []
    assert run(planned, lambda progress: seen.append(queue.running) or "done", queue=queue) == "done"
    assert seen == [1] and queue.running == 0
    with pytest.raises(ValueError):
        run(planned, lambda progress: (_ for _ in ()).throw(ValueError("boom")), queue=queue)
    assert queue.running == 0 and queue.waiting == 0, "a failed run gives its slot back"


def test_a_run_that_waits_reports_its_place_and_its_clock_starts_with_its_slot(tiny_bert):
    queue = RunQueue(QueuePolicy(slots=1))
    planned = plan(inspect(), tiny_bert, HostingPolicy(deadline_s=0.5))
    inputs = tiny_bert.tokenizer(TEXT, return_tensors="pt")
    held, release = threading.Event(), threading.Event()

    def other() -> None:
        with queue.slot():
            held.set()
            release.wait(10)

    threading.Thread(target=other, daemon=True).start()
    assert held.wait(10)
    threading.Timer(0.8, release.set).start()  # longer than the run's deadline: the wait must not count
    positions = []
    run(planned, lambda progress: forward(tiny_bert, inputs), queue=queue,
        on_wait=lambda position, running: positions.append(position))
    assert positions[0] == 1 and positions[-1] == 0 and queue.running == 0


def test_one_deadline_binds_the_forwards_and_the_steps_between_them(tiny_bert):
    planned = plan(inspect(), tiny_bert, HostingPolicy(deadline_s=2.0))
    inputs = tiny_bert.tokenizer(TEXT, return_tensors="pt")

    def slow_forward(progress):
        time.sleep(2.1)
        return forward(tiny_bert, inputs)

    with pytest.raises(DeadlineExceededError, match="the Inspect view did not finish within the 2 s"):
        run(planned, slow_forward)

    def slow_steps(progress):
        time.sleep(2.1)
        progress(1, 2, "between two steps")

    with pytest.raises(DeadlineExceededError, match="stopped between two steps"):
        run(planned, slow_steps)
    assert run(planned, lambda progress: forward(tiny_bert, inputs)).records, "the next run works"


def test_should_stop_ends_the_run_at_its_next_step(tiny_bert):
    planned = plan(inspect(), tiny_bert, HostingPolicy())
    steps = []

    def work(progress):
        for step in range(5):
            progress(step, 5, "step")
            steps.append(step)

    with pytest.raises(RunStopped):
        run(planned, work, should_stop=lambda: len(steps) >= 2)
    assert steps == [0, 1]


def test_out_of_memory_keeps_one_layer_then_falls_back_to_the_cpu(tiny_bert, monkeypatch):
    real, tries = capture_module.capture, []

    def exhausted(loaded, text, *, weights, **kwargs):
        tries.append(weights)
        if len(tries) < 3:  # the device is out of memory for every layer's weights, then for one layer's too
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return real(loaded, text, weights=weights, **kwargs)

    monkeypatch.setattr(capture_module, "capture", exhausted)
    on_cpu = []
    planned = plan(inspect(layer=1), tiny_bert, HostingPolicy())
    result = run_capture(planned, tiny_bert, cpu_model=lambda: on_cpu.append(1) or tiny_bert)
    assert tries == ["all", (1,), (1,)] and on_cpu == [1]
    assert sorted(result.weights) == [1] and [n.key for n in result.notices] == ["notice.oom_cpu"]
    tries.clear()
    with pytest.raises(DeviceOutOfMemoryError, match="ran out of memory 2 times"):
        run_capture(planned, tiny_bert)  # no CPU to fall back on


def test_out_of_memory_in_any_run_is_one_line(tiny_bert):
    planned = plan(Request(kind="heads", texts=(TEXT,)), tiny_bert, HostingPolicy())

    def work(progress):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 9.00 GiB")

    with pytest.raises(DeviceOutOfMemoryError, match="the Heads report ran out of memory") as raised:
        run(planned, work)
    assert "\n" not in str(raised.value)


def test_generate_keeps_the_layers_that_fit_with_a_notice_or_refuses(decoder):
    info = decoder.info
    request = Request(kind="generate", texts=(TEXT,), count=4, weights="all")
    n = len(plan(request, decoder, HostingPolicy()).encodings[0].tokens) + 4
    two_layers = attention_bytes(info, n, 2, layers=2)
    kept = plan(request, decoder, HostingPolicy(weights_budget_bytes=two_layers))
    assert info.num_layers > 2 and kept.weights == (0, 1) and kept.notice.key == "notice.generate_weights"
    with pytest.raises(OverBudgetError, match="not even one layer"):
        plan(request, decoder, HostingPolicy(weights_budget_bytes=two_layers // 4))
    assert plan(replace(request, weights=None), decoder, HostingPolicy(weights_budget_bytes=1)).weights is None


def test_generate_weights_all_on_a_long_prompt_is_planned_like_the_page(capsys, monkeypatch, decoder, decoder_dir,
                                                                         tmp_path):
    """Issue 45, item 3: ``generate --weights all`` kept every layer's rows of any prompt (6 GB at 1,400 tokens). The
    command now keeps the layers that fit the budget, with a notice — or refuses in one line when none does."""
    import json

    import inspector.serving.hosting

    prompt = "word " * 40
    args = ["generate", "--model", str(decoder_dir), "--prompt", prompt, "--max-new-tokens", "4", "--weights", "all",
            "--no-eos", "--json", str(tmp_path / "out.json")]
    n = len(plan(Request(kind="generate", texts=(prompt,)), decoder, HostingPolicy()).encodings[0].tokens) + 4
    budget = attention_bytes(decoder.info, n, 2, layers=2)
    monkeypatch.setattr(inspector.serving.hosting, "ALL_LAYERS_WEIGHTS_BUDGET_BYTES", budget)
    assert main(args) == 0
    err = capsys.readouterr().err
    assert "notice: " in err and "keeps 2 of the 4 layers' weights (0, 1)" in err
    assert sorted(json.loads((tmp_path / "out.json").read_text())["attention"]) == ["0", "1"]
    monkeypatch.setattr(inspector.serving.hosting, "ALL_LAYERS_WEIGHTS_BUDGET_BYTES", budget // 4)
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and "not even one layer" in err[0]


def test_a_command_honours_the_hosted_limits(capsys, monkeypatch):
    monkeypatch.setenv("INSPECTOR_HOSTED", "1")
    monkeypatch.setenv("INSPECTOR_WEIGHTS_BUDGET_MB", "1")
    assert main(["analyze", "--text", "word " * 200, "--json", "-"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "would not fit the 1 MiB this server gives one request" in err[0]
    assert main(["attribute", "--text", "word " * 200, "--reference", "a word", "--json", "-"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "on this hosted instance the attribution run reads at most" in err[0]
    assert main(["analyze", "--model", "./some-folder", "--text", "hi"]) == 2
    assert "not one of the models this hosted instance offers" in capsys.readouterr().err


@pytest.fixture(scope="module")
def decoder_dir(tmp_path_factory):
    """A tiny Llama with its language-model head (4 layers, so a plan can keep some of them), saved as a folder."""
    from transformers import AutoModelForCausalLM

    from tests.conftest import make_tokenizer, tiny_config

    folder = tmp_path_factory.mktemp("run-decoder")
    torch.manual_seed(3)
    config = tiny_config("llama")
    config.num_hidden_layers = 4
    AutoModelForCausalLM.from_config(config, attn_implementation="eager").save_pretrained(folder,
                                                                                         safe_serialization=True)
    make_tokenizer().save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def decoder(decoder_dir):
    from inspector.core.loading import load_model

    return load_model(str(decoder_dir), device="cpu")


def test_every_page_job_is_a_run_kind():
    """A page plans its job through the one run: a job kind it cannot name would crash the page (the Mechanism
    page's patching did, before "mechanism" was a run kind)."""
    assert set(JOB_KINDS) <= set(RUN_KINDS)
    for kind in JOB_KINDS:
        assert Request(kind=kind, texts=("a",) if kind == "generate" else ("a", "b")).kind == kind


# Commands that run no model forward, so they plan no run: ``info`` prints a loaded model's facts (loaded under the
# hosting policy like every command's), ``prepare`` converts the bundled decoders' files.
NO_FORWARD_COMMANDS = {"info", "prepare"}


def test_every_command_that_runs_an_analysis_runs_it_through_the_one_run():
    """A source scan of inspector/cli/: each command module that imports an analysis builds a
    :class:`~inspector.serving.run.Request` and runs it (``run_request`` or ``run_capture``) — not only imports the
    run — and no command loads a model around the hosting policy (``load_model`` instead of ``common.load``)."""
    import ast
    from pathlib import Path

    from inspector.cli import COMMANDS

    folder = Path(__file__).resolve().parents[1] / "inspector" / "cli"
    running = set()
    for command in COMMANDS:
        tree = ast.parse((folder / f"{command}.py").read_text(encoding="utf-8"))
        imported = {(node.module, alias.name) for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                    for alias in node.names}
        called = {node.func.id for node in ast.walk(tree)
                  if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)}
        assert "load_model" not in called, f"inspector {command} loads its model around the hosting policy"
        if not any(module.startswith("inspector.analyses") for module, _ in imported if module):
            continue
        running.add(command)
        assert ("inspector.serving.run", "Request") in imported, f"inspector {command} plans no Request"
        assert "Request" in called and called & {"run_request", "run_capture"}, f"inspector {command} runs no run"
    assert running == set(COMMANDS) - NO_FORWARD_COMMANDS
