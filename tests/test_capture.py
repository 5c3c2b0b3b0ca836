"""inspector/core/capture.py: validation before the forward, Capture contents against eager, thread safety."""

import copy
import threading
import time

import numpy as np
import pytest
import torch
from transformers import AutoModel

from inspector.base.errors import (
    BackendError,
    DeadlineExceededError,
    DeviceOutOfMemoryError,
    InvalidRequestError,
    InvalidTextError,
)
from inspector.core.capture import Capture, capture, capture_within_memory
from inspector.core.loading import LoadedModel
from kernels.reference import row_entropy
from tests.tolerances import close


def eager_twin(loaded):
    config = copy.deepcopy(loaded.model.config)
    model = AutoModel.from_config(config, attn_implementation="eager").eval()
    model.load_state_dict(loaded.model.state_dict())
    return model


@pytest.mark.parametrize("which", ["tiny_bert", "tiny_llama"])
def test_capture_equals_eager(request, which):
    loaded = request.getfixturevalue(which)
    text = "the cat sat on the mat because it was tired"
    result = capture(loaded, text, weights="all")
    ids = torch.as_tensor(result.token_ids)[None]
    with torch.no_grad():
        eager = eager_twin(loaded)(input_ids=ids, output_attentions=True)
    assert result.tokens[0] == "[CLS]" and result.tokens[-1] == "[SEP]" and "cat" in result.tokens
    assert result.special.tolist() == [True] + [False] * (len(result.tokens) - 2) + [True]
    for layer, weights in enumerate(eager.attentions):
        close(result.weights[layer], weights[0], "weights")
        close(result.entropy[layer], row_entropy(weights[0]), "entropy")
        close(result.sink_mass[layer], weights[0, :, :, 0], "weights")
    n = len(result.tokens)
    expected_visible = np.arange(1, n + 1) if loaded.info.causal else np.full(n, n)
    assert (result.visible_keys == expected_visible).all()
    assert result.causal == loaded.info.causal and result.backend == "torch"
    assert set(result.timings) == {"tokenize", "forward", "collect"}
    # A base model's summary pools its last hidden state, the only one the capture's forward keeps.
    assert loaded.info.head == "none"
    close(result.output.embedding, eager.last_hidden_state[0].mean(dim=0), "hidden")


def test_offsets_point_into_the_text(tiny_bert):
    text = "a cat sat"
    result = capture(tiny_bert, text, weights=None)
    spans = [text[a:b] for a, b in result.offsets.tolist()]
    assert spans == ["", "a", "cat", "sat", ""]
    assert result.weights == {}


def test_only_requested_layers_are_materialised(tiny_bert):
    assert set(capture(tiny_bert, "a cat", weights=[1]).weights) == {1}


@pytest.mark.parametrize("text", ["", "   \n\t "])
def test_empty_text_is_refused(tiny_bert, text):
    with pytest.raises(InvalidTextError, match="empty"):
        capture(tiny_bert, text)


def test_too_long_text_names_both_numbers_and_truncate_opts_in(tiny_bert):
    text = "cat " * 80  # 82 tokens with [CLS]/[SEP]; the tiny model reads 64
    with pytest.raises(InvalidTextError, match=r"82 tokens.*at most 64"):
        capture(tiny_bert, text)
    result = capture(tiny_bert, text, truncate=True, weights=None)
    assert len(result.tokens) == 64 and result.truncated


def test_unknown_layer_and_backend(tiny_bert):
    with pytest.raises(InvalidRequestError, match="layer 5 does not exist"):
        capture(tiny_bert, "a cat", weights=[5])
    with pytest.raises(BackendError, match="Triton"):
        capture(tiny_bert, "a cat", backend="triton")


def test_the_shared_model_is_not_mutated(tiny_bert):
    before = {k: v.clone() for k, v in tiny_bert.model.state_dict().items()}
    hooks_before = sum(len(m._forward_hooks) + len(m._forward_pre_hooks) for m in tiny_bert.model.modules())
    capture(tiny_bert, "the dog ran fast", weights="all")
    after = tiny_bert.model.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)
    assert sum(len(m._forward_hooks) + len(m._forward_pre_hooks) for m in tiny_bert.model.modules()) == hooks_before
    assert tiny_bert.model.config._attn_implementation == "inspector" and not tiny_bert.model.training


def test_two_threads_get_what_they_would_get_alone(bundled):
    texts = ["The animal didn't cross the street because it was too tired.",
             "Les chats dorment beaucoup pendant la journée, surtout après manger."]
    alone = [capture(bundled, t, weights=[2]) for t in texts]
    results: dict[int, list[Capture]] = {0: [], 1: []}
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            for _ in range(3):
                results[i].append(capture(bundled, texts[i], weights=[2]))
        except BaseException as err:  # noqa: BLE001 — surfaced by the assertion below
            errors.append(err)

    threads = [threading.Thread(target=work, args=(i,)) for i in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not errors
    for i in (0, 1):
        assert len(results[i]) == 3
        for result in results[i]:
            assert result.tokens == alone[i].tokens
            np.testing.assert_array_equal(result.entropy, alone[i].entropy)
            np.testing.assert_array_equal(result.weights[2], alone[i].weights[2])


def test_capture_checks_its_own_shapes(tiny_bert):
    good = capture(tiny_bert, "a cat", weights=[0])
    fields = {f: getattr(good, f) for f in good.__dataclass_fields__}
    with pytest.raises(ValueError, match="entropy"):
        Capture(**{**fields, "lse": good.lse[:, :, :-1], "entropy": good.entropy[:, :, :-1]})
    with pytest.raises(ValueError, match="weights"):
        Capture(**{**fields, "weights": {0: good.weights[0][:, :1]}})


def test_word_ids_group_pieces_as_the_tokenizer_does(bundled):
    text = "The animal didn't cross the street unbelievably."
    result = capture(bundled, text, weights=None)
    expected = bundled.tokenizer(text).word_ids()
    assert result.word_ids.dtype == np.int32 and result.word_ids.shape == (len(result.tokens),)
    assert result.word_ids.tolist() == [-1 if w is None else w for w in expected]
    assert result.word_ids[0] == result.word_ids[-1] == -1 and result.special[[0, -1]].all()
    words = {}
    for token, word, (start, end) in zip(result.tokens, result.word_ids.tolist(), result.offsets.tolist()):
        words.setdefault(word, []).append(text[start:end])
    # BERT's pre-tokenizer splits at the apostrophe, so "didn't" is three words; "unbelievably" is one word
    # of several word pieces.
    assert [words[w] for w in sorted(words) if "".join(words[w]) in ("didn", "'", "t")] == [["didn"], ["'"], ["t"]]
    assert any(len(pieces) > 1 and "".join(pieces) == "unbelievably" for pieces in words.values())


def test_word_ids_fall_back_to_one_word_per_token(tiny_bert):
    from inspector.core.forward import token_word_ids

    special = np.array([True, False, False, True])
    assert token_word_ids(None, special).tolist() == [-1, 0, 1, -1]
    good = capture(tiny_bert, "a cat", weights=None)
    fields = {f: getattr(good, f) for f in good.__dataclass_fields__}
    assert Capture(**{**fields, "word_ids": None}).word_ids.tolist() == [-1, 0, 1, -1]
    with pytest.raises(ValueError, match="word_ids"):
        Capture(**{**fields, "word_ids": np.zeros(3, np.int32)})
    with pytest.raises(ValueError, match="special"):
        Capture(**{**fields, "word_ids": np.zeros(4, np.int32)})


# ------------------------------------------------------------------------------- guards: deadline, out of memory

def test_a_forward_past_its_deadline_stops_between_layers_and_the_next_run_works(tiny_bert, monkeypatch):
    import types

    import kernels.hf

    text = "the cat sat on the mat"
    started = time.monotonic()
    ticks = iter([started, started + 10.0])  # layer 0 starts in time, layer 1 ten seconds later
    monkeypatch.setattr(kernels.hf, "time", types.SimpleNamespace(monotonic=lambda: next(ticks)))
    with pytest.raises(DeadlineExceededError, match=r"within the 5 s .*before attention layer 1 started.*try again"):
        capture(tiny_bert, text, deadline_s=5.0)
    monkeypatch.undo()
    assert capture(tiny_bert, text, deadline_s=60.0).entropy.shape[0] == 2


class RunsOutOfMemory(torch.nn.Module):
    """A model whose first ``failures`` forwards raise the allocator's error, as a full GPU does."""

    def __init__(self, inner: torch.nn.Module, failures: int, error=torch.OutOfMemoryError):
        super().__init__()
        self.inner, self.failures, self.error = inner, failures, error

    def forward(self, **kwargs):
        if self.failures:
            self.failures -= 1
            raise self.error("CUDA out of memory. Tried to allocate 2.00 GiB")
        return self.inner(**kwargs)


def _flaky(loaded, failures: int, error=torch.OutOfMemoryError):
    return LoadedModel(model=RunsOutOfMemory(loaded.model, failures, error), tokenizer=loaded.tokenizer,
                       info=loaded.info)


TEXT_FOR_OOM = "the dog ran fast because it was big"


def test_out_of_memory_retries_with_the_layer_on_screen_only(tiny_bert):
    result = capture_within_memory(_flaky(tiny_bert, failures=1), TEXT_FOR_OOM, weights="all", keep_layer=1)
    assert set(result.weights) == {1} and len(result.notices) == 1
    assert "ran out of memory" in result.notices[0] and "layer 1's only" in result.notices[0]
    expected = capture(tiny_bert, TEXT_FOR_OOM, weights=[1])  # the next request works, and agrees
    np.testing.assert_array_equal(result.weights[1], expected.weights[1])
    assert capture_within_memory(tiny_bert, TEXT_FOR_OOM, keep_layer=1).notices == ()


def test_out_of_memory_twice_runs_on_the_cpu_model(tiny_bert):
    cpu_loads = []
    result = capture_within_memory(_flaky(tiny_bert, failures=2), TEXT_FOR_OOM, weights="all", keep_layer=0,
                                   cpu_model=lambda: cpu_loads.append(1) or tiny_bert)
    assert cpu_loads == [1] and set(result.weights) == {0}
    assert "computed on the CPU" in result.notices[-1]


def test_out_of_memory_everywhere_is_a_clear_error(tiny_bert):
    with pytest.raises(DeviceOutOfMemoryError, match=r"ran out of memory 3 times.*and on the CPU.*shorter text"):
        capture_within_memory(_flaky(tiny_bert, failures=3), TEXT_FOR_OOM, weights="all",
                              cpu_model=lambda: _flaky(tiny_bert, failures=1))


def test_the_cpu_allocator_error_is_out_of_memory_too_but_other_errors_are_not_retried(tiny_bert):
    cpu_error = lambda message: RuntimeError(f"[enforce fail] DefaultCPUAllocator: can't allocate memory: {message}")  # noqa: E731
    result = capture_within_memory(_flaky(tiny_bert, 1, cpu_error), TEXT_FOR_OOM, weights=[0], keep_layer=0,
                                   cpu_model=lambda: tiny_bert)
    assert "computed on the CPU" in result.notices[0]  # weights were already one layer: straight to the CPU
    flaky = _flaky(tiny_bert, 1, RuntimeError)
    with pytest.raises(RuntimeError, match="CUDA out of memory"):
        capture_within_memory(flaky, TEXT_FOR_OOM, cpu_model=lambda: tiny_bert)
    assert flaky.model.failures == 0  # it ran once and was not retried


# ------------------------------------------------------------------------------------------------ hostile text

@pytest.mark.parametrize("text", [
    "zero\u200bwidth\u200cnon\u200djoiner\ufeffbom",
    "مرحبا بالعالم — שלום עולם \u202eevil\u202c",
    "emoji 👩‍👩‍👧 🏳️‍🌈 and 𝔘𝔫𝔦𝔠𝔬𝔡𝔢",
    "小猫坐在垫子上，因为它累了。",
    "<img src=x onerror=alert(1)> & \"quotes\"",
])
def test_awkward_unicode_is_captured(bundled, text):
    result = capture(bundled, text, weights=None)
    assert all(isinstance(token, str) for token in result.tokens) and len(result.tokens) >= 3
    assert ((result.offsets >= 0) & (result.offsets <= len(text))).all()
    assert np.isfinite(result.entropy).all()


@pytest.mark.parametrize("text", ["\u200b\u200b\u200b", "\u200e\u200f\u2066\u2069"])
def test_text_the_tokenizer_reads_as_nothing_is_refused(bundled, text):
    with pytest.raises(InvalidTextError, match="only invisible characters"):
        capture(bundled, text, weights=None)


def test_a_causal_lm_s_head_runs_at_the_last_token_only_and_predicts_what_the_whole_forward_predicts(tiny_lm):
    """capture reads a causal LM's prediction at the last token, so it asks for that position's logits alone
    (logits_to_keep): the same top five as the full forward's last row, from a head that saw one position."""
    text = "the cat sat on the mat because it was tired"
    rows_seen = []
    head = tiny_lm.model.get_output_embeddings()
    hook = head.register_forward_hook(lambda module, args, out: rows_seen.append(args[0].shape[1]))
    try:
        result = capture(tiny_lm, text, weights=None)
    finally:
        hook.remove()
    assert rows_seen == [1]
    ids = tiny_lm.tokenizer(text, return_tensors="pt")
    with torch.no_grad():
        probs = torch.softmax(tiny_lm.model(**ids, use_cache=False).logits[0, -1].float(), dim=-1)
    top = torch.topk(probs, 5)
    assert result.output.position == ids["input_ids"].shape[1] - 1
    expected = [str(token) for token in tiny_lm.codec.token_strings(top.indices.tolist())]  # None: "None", as shown
    assert [token for token, _ in result.output.predictions] == expected
    close(torch.tensor([p for _, p in result.output.predictions]), top.values, "weights")  # probabilities: O(1)
