"""inspector/core/forward.py: the one forward path — every kernel error becomes the same typed error whichever
caller (capture or an analysis) ran the model, and the forward and the tokenising each have one entry, here."""

import copy
import importlib

import numpy as np
import pytest
import torch

import inspector.core.forward
from inspector.base.errors import (
    BackendError,
    DeadlineExceededError,
    InvalidRequestError,
    InvalidTextError,
    UnsupportedModelError,
    error_text,
)
from inspector.core.capture import capture
from inspector.core.forward import backend_for, check_every_layer_ran, encode_text, forward
from inspector.core.loading import LoadedModel
from kernels.hf import AttentionContractError, BackendUnavailableError, DeadlinePassed, HeadAblation, InterventionError

TEXT = "the cat sat on the mat because it was tired"


def _both_callers(loaded: LoadedModel, **options):
    """The two ways the library runs the model: a capture, and an analysis's forward on encoded inputs."""
    forward_options = {k: v for k, v in options.items() if k != "weights"}
    return (lambda: capture(loaded, TEXT, **options),
            lambda: forward(loaded, encode_text(loaded, TEXT).inputs, **forward_options))


def test_a_feature_the_attention_function_refuses_is_an_unsupported_model_from_every_caller(tiny_bert):
    # A model left in training mode hands the attention function an active dropout, which it refuses.
    training = LoadedModel(model=copy.deepcopy(tiny_bert.model).train(), tokenizer=tiny_bert.tokenizer,
                           info=tiny_bert.info)
    assert training.model.config.attention_probs_dropout_prob > 0  # the case exists in this fixture
    for call in _both_callers(training, backend="torch"):
        with pytest.raises(UnsupportedModelError, match=r"dropout p=0\.1 is active") as caught:
            call()
        assert isinstance(caught.value.__cause__, AttentionContractError)
        assert tiny_bert.info.name in str(caught.value)


def test_a_deadline_of_zero_stops_the_forward_from_every_caller(tiny_bert):
    for call in _both_callers(tiny_bert, backend="torch", deadline_s=0.0):
        with pytest.raises(DeadlineExceededError, match=r"within the 0 s .*before attention layer 0 started") \
                as caught:
            call()
        assert isinstance(caught.value.__cause__, DeadlinePassed)
    assert capture(tiny_bert, TEXT, deadline_s=60.0, weights=None).entropy.shape[0] == 2  # next run works


def test_an_intervention_naming_a_missing_head_or_layer_is_an_invalid_request(tiny_bert):
    inputs = encode_text(tiny_bert, TEXT).inputs
    with pytest.raises(InvalidRequestError, match=r"names heads \[99\]; this layer has heads 0–3") as caught:
        forward(tiny_bert, inputs, interventions=[HeadAblation(0, (99,))])
    assert isinstance(caught.value.__cause__, InterventionError)
    with pytest.raises(InvalidRequestError, match=r"an intervention's layer 99 does not exist: .* has layers 0–1"):
        forward(tiny_bert, inputs, interventions=[HeadAblation(99, (0,))])


def test_a_backend_that_cannot_run_is_a_backend_error_from_every_caller(tiny_bert, monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    for name, message in (("no-such-backend", "unknown"), ("triton", "Triton")):
        for call in _both_callers(tiny_bert, backend=name):
            with pytest.raises(BackendError, match=message) as caught:
                call()
            assert isinstance(caught.value.__cause__, BackendUnavailableError)
    assert backend_for(tiny_bert, "auto") == "torch"  # a CPU model


def test_the_forward_records_every_layer_and_says_which_backend_ran(tiny_bert):
    encoded = encode_text(tiny_bert, TEXT)
    result = forward(tiny_bert, encoded.inputs, backend="auto", weights_layers="all")
    assert result.backend == "torch" and len(result.records) == tiny_bert.info.num_layers
    assert all(r.weights is not None and "entropy" in r.stats for r in result.records)
    assert not result.outputs.last_hidden_state.requires_grad  # inference mode unless grad is asked for
    embeds = tiny_bert.model.get_input_embeddings()(encoded.inputs["input_ids"]).detach().requires_grad_()
    graded = forward(tiny_bert, {"inputs_embeds": embeds, "attention_mask": encoded.inputs["attention_mask"]},
                     grad=True, stats=())
    (gradient,) = torch.autograd.grad(graded.outputs.last_hidden_state.sum(), embeds)
    assert gradient.shape == embeds.shape and bool(gradient.abs().sum() > 0)


def test_encode_text_agrees_with_the_capture_and_validates_first(tiny_bert):
    encoded = encode_text(tiny_bert, TEXT)
    result = capture(tiny_bert, TEXT, weights=None)
    assert encoded.tokens == result.tokens and encoded.tokens[0] == "[CLS]"
    np.testing.assert_array_equal(encoded.special, result.special)
    np.testing.assert_array_equal(encoded.inputs["input_ids"][0].cpu().numpy(), result.token_ids)
    assert encoded.inputs["input_ids"].device == tiny_bert.device and not encoded.truncated
    with pytest.raises(InvalidTextError, match="empty"):
        encode_text(tiny_bert, "   ")
    with pytest.raises(InvalidTextError, match=r"82 tokens.*at most 64"):
        encode_text(tiny_bert, "cat " * 80)
    assert encode_text(tiny_bert, "cat " * 80, truncate=True).truncated


def test_the_forward_and_the_tokenising_have_one_entry_each():
    """No re-export shims: capture and outputs import the forward from here and pass nothing on under other names,
    and forward.py tokenises through one public function (encode_text)."""
    module = inspector.core.forward
    public = {name for name, value in vars(module).items()
              if not name.startswith("_") and callable(value) and getattr(value, "__module__", None) == module.__name__}
    # reads_special_tokens_as_text: the one rule for typed special-token strings, which the census's batch
    # tokenising shares (issue 33); check_every_layer_ran: the one refusal of a forward that recorded fewer
    # attention layers than the model declares (capture, generate and the census; issue 39).
    assert public == {"token_word_ids", "EncodedText", "encode_text", "backend_for", "ForwardResult", "forward",
                      "reads_special_tokens_as_text", "check_every_layer_ran"}
    capture_module = importlib.import_module("inspector.core.capture")  # the package's `capture` is the function
    outputs_module = importlib.import_module("inspector.core.outputs")
    for holder in (module, capture_module, outputs_module):
        assert not {"run", "tokenize", "encode", "validated_encoding"} & set(vars(holder))
    assert "forward" not in vars(outputs_module) and "encode_text" not in vars(outputs_module)


def test_a_forward_that_recorded_fewer_layers_than_declared_is_refused_in_the_reader_s_language(tiny_bert):
    """Capture, generate and the census refuse such a model with one typed error and its catalogue sentence."""
    records = forward(tiny_bert, encode_text(tiny_bert, TEXT).inputs).records
    check_every_layer_ran(tiny_bert, records)  # every layer recorded: nothing to say
    declared = tiny_bert.info.num_layers
    with pytest.raises(UnsupportedModelError, match=f"ran {declared - 1} attention layers but declares {declared}"
                       ) as refused:
        check_every_layer_ran(tiny_bert, records[:-1])
    assert f"却声明有 {declared} 个" in error_text(refused.value, "zh")


def test_a_forward_that_stops_after_a_layer_keeps_its_records_and_skips_the_rest(tiny_bert, monkeypatch):
    """stop_after ends the forward once that layer's attention is recorded: the records are the whole forward's
    up to there, no output is computed (the last layer's MLP never runs), and the next forward is whole."""
    inputs = encode_text(tiny_bert, TEXT).inputs
    whole = forward(tiny_bert, inputs)
    last = tiny_bert.info.num_layers - 1
    mlp_calls = []
    block = tiny_bert.model.encoder.layer[last]
    handle = block.intermediate.register_forward_hook(lambda *_: mlp_calls.append(1))
    try:
        stopped = forward(tiny_bert, inputs, stop_after=last)
        assert stopped.outputs is None and mlp_calls == []
        early = forward(tiny_bert, inputs, stop_after=0)
        assert [r.layer for r in early.records] == [0]
        after = forward(tiny_bert, inputs)
        assert after.outputs is not None and mlp_calls == [1]
    finally:
        handle.remove()
    assert len(stopped.records) == len(whole.records)
    for got, want in zip(stopped.records, whole.records):
        for name in ("entropy", "lse", "sink"):
            assert torch.equal(got.stats[name], want.stats[name])
    with pytest.raises(InvalidRequestError, match="layer to stop after"):
        forward(tiny_bert, inputs, stop_after=last + 1)


def test_resuming_needs_the_blocks_wrapped_and_no_intervention_below(tiny_bert):
    from kernels.hf import ResumeAt

    inputs = encode_text(tiny_bert, TEXT).inputs
    kept = forward(tiny_bert, inputs, keep_layer_outputs=True).layer_outputs
    with pytest.raises(InvalidRequestError, match="below layer 1, where the forward resumes"):
        forward(tiny_bert, inputs, resume=ResumeAt(1, tuple(kept[:1])), interventions=[HeadAblation(0, (0,))])
    unwrapped = LoadedModel(model=copy.deepcopy(tiny_bert.model), tokenizer=tiny_bert.tokenizer,
                            info=tiny_bert.info)
    delattr(unwrapped.model, "_inspector_resumable_layers")
    with pytest.raises(InvalidRequestError, match="transformer blocks were not found"):
        forward(unwrapped, inputs, keep_layer_outputs=True)


def test_damaged_weights_predicting_nan_are_refused_in_one_line(tmp_path, capsys):
    """Issue 45, item 7: flipped weight bytes predicted NaN (written as null) with exit 0."""
    from safetensors.torch import load_file, save_file

    from inspector.base.errors import CorruptModelError
    from inspector.cli import main
    from inspector.core.loading import load_model
    from tests.conftest import save_tiny_model

    folder = save_tiny_model(tmp_path / "llama", "llama", with_head=True)
    text = "the cat sat on the mat"
    assert forward(load_model(str(folder)), encode_text(load_model(str(folder)), text).inputs).outputs is not None
    weights = load_file(folder / "model.safetensors")
    name = next(key for key in weights if key.endswith("norm.weight"))
    weights[name][0] = float("nan")
    save_file(weights, folder / "model.safetensors", metadata={"format": "pt"})
    damaged = load_model(str(folder))
    with pytest.raises(CorruptModelError, match="NaN or infinite"):
        forward(damaged, encode_text(damaged, text).inputs)
    capsys.readouterr()  # save_pretrained's own progress bar above
    assert main(["analyze", "--model", str(folder), "--text", text]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "NaN or infinite" in err and "Traceback" not in err


def test_huge_finite_logits_are_not_mistaken_for_damaged_weights():
    """The finite-logits check sums each row first; a row of huge finite scores overflows that sum to inf, and must
    then be judged score by score — finite, so no error — while one NaN among them still is one."""
    from types import SimpleNamespace

    from inspector.base.errors import CorruptModelError
    from inspector.core.forward import _check_finite_logits

    logits = torch.full((1, 3, 8), 3e38)  # every row's sum overflows float32
    inputs = {"attention_mask": torch.ones(1, 3, dtype=torch.long)}
    _check_finite_logits("m", SimpleNamespace(logits=logits), inputs)
    logits[0, 1, 5] = float("nan")
    with pytest.raises(CorruptModelError, match="NaN or infinite"):
        _check_finite_logits("m", SimpleNamespace(logits=logits), inputs)
    inputs["attention_mask"][0, 1] = 0  # a padding row may be anything
    _check_finite_logits("m", SimpleNamespace(logits=logits), inputs)


def test_a_decoder_forward_without_a_cache_fills_none(tmp_path):
    """A forward that is given no KV cache runs the decoder with use_cache=False: nothing copies every key and value
    into a cache nobody reads (issue 43), and the records are those of a forward with one."""
    from transformers import DynamicCache

    from inspector.core.loading import load_model
    from tests.conftest import save_tiny_model

    loaded = load_model(str(save_tiny_model(tmp_path / "llama", "llama", with_head=True)))
    inputs = encode_text(loaded, "the cat sat on the mat").inputs
    plain = forward(loaded, inputs)
    assert getattr(plain.outputs, "past_key_values", None) is None
    cached = forward(loaded, inputs, cache=DynamicCache(config=loaded.model.config))
    for without, with_cache in zip(plain.records, cached.records, strict=True):
        torch.testing.assert_close(without.stats["entropy"], with_cache.stats["entropy"])
