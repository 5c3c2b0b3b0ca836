"""inspector/core/budget.py (the one bytes formula) and the Inspect run's plan (inspector/serving/run.py): the token
limit (positions or memory, whichever is smaller), which layers' weights a request keeps, and refusals — all before
any forward."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from inspector.base.errors import InvalidTextError
from inspector.base.limits import MAX_TEXT_CHARS
from inspector.core.budget import attention_bytes, max_tokens, tokens_within, weight_bytes
from inspector.core.loading import LoadedModel
from inspector.serving.hosting import HostingPolicy
from inspector.serving.run import Plan, Request, plan

WORDS = "the cat sat on the mat and the dog ran fast"


def plan_request(loaded: LoadedModel, text: str, layer: int, *, budget_bytes: int | None = None) -> Plan:
    policy = HostingPolicy() if budget_bytes is None else HostingPolicy(weights_budget_bytes=budget_bytes)
    return plan(Request(kind="inspect", texts=(text,), weights="all", layer=layer), loaded, policy)


def test_one_bytes_formula_and_its_inverse(tiny_bert):
    info = tiny_bert.info
    assert attention_bytes(info, 10) == info.num_layers * info.num_heads * 100 * 4
    assert attention_bytes(info, 10, 2, layers=1) == 2 * info.num_heads * 100 * 4
    for copies, layers in ((1, None), (8, None), (2, 1)):
        n = tokens_within(info, 10**7, copies, layers=layers)
        assert attention_bytes(info, n, copies, layers=layers) <= 10**7 < attention_bytes(info, n + 1, copies,
                                                                                          layers=layers)


def test_the_model_formula_is_the_shape_formula(tiny_bert):
    info = tiny_bert.info
    assert weight_bytes(3, 5) == 3 * 5 * 5 * 4
    assert weight_bytes(3, 5, keys=7) == 3 * 5 * 7 * 4
    assert weight_bytes(3, 5, 2.5, keys=7) == int(2.5 * 3 * 5 * 7 * 4)
    for copies, layers in ((1, None), (8, None), (2, 1), (0.5, 2)):
        count = info.num_layers if layers is None else layers
        assert attention_bytes(info, 13, copies, layers=layers) == weight_bytes(count * info.num_heads, 13, copies)


# heads · n² · 4 written by hand: a squared length ("n * n", "n ** 2") and the float32 size on one line.
_SQUARED = r"(?:\b(\w+) \* \1\b|\*\* ?2\b)"
_HAND_BYTES = re.compile(rf"{_SQUARED}.*\* 4\b|\b4 \*.*{_SQUARED.replace('1', '2')}")


def test_one_bytes_formula_in_the_library_the_pages_and_the_benchmarks():
    """Issue 39: every bytes figure of n × n weights comes from inspector.core.budget."""
    root = Path(__file__).resolve().parents[1]
    home = root / "inspector" / "core" / "budget.py"
    files = [p for folder in ("inspector", "views", "benchmarks", "training")
             for p in sorted((root / folder).rglob("*.py")) if p != home]
    assert any(p.name == "timing.py" for p in files)
    offenders = [f"{p.relative_to(root).as_posix()}:{number}: {line.strip()}" for p in files
                 for number, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
                 if _HAND_BYTES.search(line)]
    assert not offenders, "use inspector.core.budget.attention_bytes or weight_bytes:\n" + "\n".join(offenders)
    for old in ("global_bytes = (heads * lengths_a * lengths_a * 4)", "rows.append(2 * heads * n * n * 4)",
                "info.num_layers * info.num_heads * tokens**2 * 4 / 2**20", "layers * heads * row['n'] ** 2 * 4",
                "4 * heads * n * n"):
        assert _HAND_BYTES.search(old), old  # each way it was written before


def test_the_token_limit_is_the_smaller_of_positions_and_memory(bundled):
    info = bundled.info  # 12 heads, 512 positions
    assert max_tokens(info) == 512
    one_layer_at = lambda n: info.num_heads * n * n * 4  # noqa: E731
    assert max_tokens(info, one_layer_at(100)) == 100
    assert max_tokens(info, one_layer_at(100) - 1) == 99


def test_all_layers_are_kept_while_they_fit_and_only_the_layer_on_screen_past_that(tiny_bert):
    n = len(tiny_bert.tokenizer(WORDS)["input_ids"])
    fits = plan_request(tiny_bert, WORDS, 1)
    assert fits.lengths == (n,) and fits.max_tokens == 64 and fits.weights == "all" and not fits.notices
    assert fits.encodings[0].tokens == tuple(tiny_bert.tokenizer.convert_ids_to_tokens(
        tiny_bert.tokenizer(WORDS)["input_ids"]))  # tokenised once, for the forward too
    tight = plan_request(tiny_bert, WORDS, 1, budget_bytes=attention_bytes(tiny_bert.info, n) - 1)
    assert tight.weights == (1,) and tight.lengths == (n,)
    assert "only layer 1" in tight.notice and "MiB" in tight.notice


def test_a_text_past_the_memory_limit_is_refused_before_any_forward(tiny_bert, monkeypatch):
    def no_forward(*args, **kwargs):
        raise AssertionError("the model ran")

    monkeypatch.setattr(tiny_bert.model, "forward", no_forward)
    n = len(tiny_bert.tokenizer(WORDS)["input_ids"])
    one_layer = tiny_bert.info.num_heads * (n - 1) ** 2 * 4
    with pytest.raises(InvalidTextError, match=f"has {n} tokens.*allows {n - 1} tokens.*shorten"):
        plan_request(tiny_bert, WORDS, 0, budget_bytes=one_layer)


def test_a_text_past_the_model_positions_names_both_numbers(tiny_bert):
    with pytest.raises(InvalidTextError, match="reads at most 64"):
        plan_request(tiny_bert, " ".join([WORDS] * 10), 0)


def test_a_one_megabyte_paste_is_refused_at_once_without_tokenising(tiny_bert):
    class NoTokenizer:
        def __call__(self, *args, **kwargs):
            raise AssertionError("the text was tokenised")

    untokenizable = LoadedModel(model=tiny_bert.model, tokenizer=NoTokenizer(), info=tiny_bert.info)
    started = time.perf_counter()
    with pytest.raises(InvalidTextError, match=f"1,048,576 characters; this app reads at most {MAX_TEXT_CHARS:,}"):
        plan_request(untokenizable, "x" * 2**20, 0)
    assert time.perf_counter() - started < 0.5


@pytest.mark.parametrize("text", ["", " \n\t"])
def test_empty_text_is_refused(tiny_bert, text):
    with pytest.raises(InvalidTextError, match="empty"):
        plan_request(tiny_bert, text, 0)


def test_a_request_checks_its_own_invariants():
    with pytest.raises(ValueError, match="kind"):
        Request(kind="a-census")
    with pytest.raises(ValueError, match="one text"):
        Request(kind="inspect", texts=("a", "b"))
    assert Request(kind="inspect", texts=["a"], weights=[2, 1]) == Request(kind="inspect", texts=("a",),
                                                                          weights=(2, 1))
