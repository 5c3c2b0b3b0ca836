"""kernels/hf.py: every supported architecture through the one attention function equals eager attention."""

import contextlib
import copy

import pytest
import torch
from transformers import AutoModel, AutoModelForCausalLM, DynamicCache

from kernels.hf import (
    AttentionContractError,
    AttentionRequest,
    BackendUnavailableError,
    ResumeAt,
    SequenceHeadAblation,
    attention_request,
    inspector_attention,
    install_layer_resume,
    layer_resume_installed,
    resolve_backend,
)
from kernels.reference import row_entropy
from tests.conftest import TINY_ARCHITECTURES, model_pair, tiny_config
from tests.tolerances import close


def batch_inputs(causal: bool, seq: int = 11, seed: int = 0):
    """Two sequences: one full, one padded (left padding for decoders, right for encoders, as in practice)."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, 40, (2, seq), generator=g)
    mask = torch.ones(2, seq, dtype=torch.long)
    if causal:
        mask[1, :3] = 0
    else:
        mask[1, -3:] = 0
    return ids, mask


@pytest.mark.parametrize("arch", sorted(TINY_ARCHITECTURES))
def test_single_input_equals_eager(arch):
    eager, ours = model_pair(arch)
    ids, _ = batch_inputs(TINY_ARCHITECTURES[arch][1])
    with torch.no_grad():
        expected = eager(input_ids=ids[:1], output_attentions=True)
        request = AttentionRequest(weights_layers="all")
        with attention_request(request):
            actual = ours(input_ids=ids[:1])
    close(actual.last_hidden_state, expected.last_hidden_state, "hidden")
    assert len(request.records) == len(expected.attentions)
    for record, eager_weights in zip(request.records, expected.attentions):
        close(record.weights, eager_weights, "weights")
        close(record.stats["entropy"], row_entropy(eager_weights), "entropy")


@pytest.mark.parametrize("arch", sorted(TINY_ARCHITECTURES))
def test_padded_batch_equals_eager_on_real_tokens(arch):
    causal = TINY_ARCHITECTURES[arch][1]
    eager, ours = model_pair(arch, seed=1)
    ids, mask = batch_inputs(causal, seed=1)
    real = mask.bool()
    with torch.no_grad():
        expected = eager(input_ids=ids, attention_mask=mask, output_attentions=True)
        request = AttentionRequest(weights_layers="all")
        with attention_request(request):
            actual = ours(input_ids=ids, attention_mask=mask)
    close(actual.last_hidden_state[real], expected.last_hidden_state[real], "hidden")
    assert len(request.records) == len(expected.attentions)  # else the zip below compares nothing
    for record, eager_weights in zip(request.records, expected.attentions):
        # Compare rows of real query tokens only: eager gives padded queries arbitrary rows.
        rows = real[:, None, :, None].expand_as(eager_weights)
        close(record.weights[rows], eager_weights[rows], "weights")
        entropy_rows = real[:, None, :].expand_as(record.stats["entropy"])
        close(record.stats["entropy"][entropy_rows], row_entropy(eager_weights)[entropy_rows], "entropy")
        assert (record.weights[~real[:, None, None, :].expand_as(record.weights)] == 0).all()
        assert record.causal == causal


def test_sliding_window_and_gqa_are_honoured():
    _, ours = model_pair("qwen2")  # layer 0 full attention, layers 1-2 a window of 4; 4 query heads share 1 kv head
    ids, _ = batch_inputs(True, seq=10)
    request = AttentionRequest(weights_layers="all")
    with torch.no_grad(), attention_request(request):
        ours(input_ids=ids[:1])
    assert [r.window for r in request.records] == [None, 4, 4]
    assert request.records[1].visible_keys[0].tolist() == [1, 2, 3, 4] + [4] * 6
    assert request.records[0].visible_keys[0].tolist() == list(range(1, 11))
    far = request.records[2].weights[0, :, 9, :6]  # query 9 must not see keys 0..5
    assert (far == 0).all()


@pytest.mark.parametrize("arch", ["gpt2", "llama", "mistral"])
def test_kv_cache_decoding_equals_eager(arch):
    """Queries that are the last positions of a longer key sequence (a KV cache) match eager."""
    eager, ours = model_pair(arch, auto_class=AutoModelForCausalLM, seed=2)
    ids, _ = batch_inputs(True, seq=9, seed=2)
    with torch.no_grad():
        logits = []
        for model in (eager, ours):
            cache = DynamicCache(config=model.config)
            model(input_ids=ids[:1, :6], cache=cache, use_cache=True)
            logits.append(model(input_ids=ids[:1, 6:], cache=cache, use_cache=True).logits)
    close(logits[1], logits[0], "hidden")


def test_outside_a_request_it_is_plain_attention_and_records_nothing():
    eager, ours = model_pair("bert")
    ids, mask = batch_inputs(False)
    with torch.no_grad():
        close(ours(input_ids=ids, attention_mask=mask).last_hidden_state[mask.bool()],
              eager(input_ids=ids, attention_mask=mask).last_hidden_state[mask.bool()], "hidden")


def test_request_is_reset_even_when_the_forward_fails():
    _, ours = model_pair("bert")
    request = AttentionRequest(weights_layers="all")
    with pytest.raises(IndexError):
        with torch.no_grad(), attention_request(request):
            ours(input_ids=torch.tensor([[1, 2, 9999]]))  # id outside the embedding table
    with torch.no_grad():
        ours(input_ids=torch.tensor([[1, 2, 3]]))
    assert request.records == []  # the failed forward stopped before any layer; later calls record nothing


def test_weights_only_for_requested_layers():
    _, ours = model_pair("llama")
    request = AttentionRequest(weights_layers=frozenset({1}))
    with torch.no_grad(), attention_request(request):
        ours(input_ids=torch.tensor([[5, 6, 7, 8]]))
    assert request.records[0].weights is None and request.records[1].weights.shape == (1, 4, 4, 4)


def test_packed_sequences_are_refused_not_silently_merged():
    """position_ids that restart mark packed sequences; our parametric mask cannot express that."""
    _, ours = model_pair("llama")
    ids = torch.tensor([[5, 6, 7, 8, 9, 10]])
    position_ids = torch.tensor([[0, 1, 2, 0, 1, 2]])
    with pytest.raises(AttentionContractError, match="packed sequences"):
        with torch.no_grad():
            ours(input_ids=ids, position_ids=position_ids, use_cache=False)


def test_prepared_4d_mask_is_refused():
    _, ours = model_pair("bert")
    with pytest.raises(AttentionContractError, match="4-D"):
        with torch.no_grad():
            ours(input_ids=torch.tensor([[5, 6, 7]]), attention_mask=torch.ones(1, 1, 3, 3))


def test_dropout_is_refused():
    config = tiny_config("bert")
    model = AutoModel.from_config(copy.deepcopy(config), attn_implementation="inspector").train()
    with pytest.raises(AttentionContractError, match="eval"):
        model(input_ids=torch.tensor([[5, 6, 7]]))


@pytest.mark.parametrize("feature", ["softcap", "s_aux", "sinks", "cu_seq_lens_q"])
def test_unsupported_features_raise(feature):
    q = torch.zeros(1, 2, 3, 4)
    module = torch.nn.Module()
    with pytest.raises(AttentionContractError, match=feature):
        inspector_attention(module, q, q, q, None, scaling=0.5, **{feature: torch.ones(1)})


def test_unknown_arguments_raise_instead_of_being_ignored():
    q = torch.zeros(1, 2, 3, 4)
    with pytest.raises(AttentionContractError, match="does not understand"):
        inspector_attention(torch.nn.Module(), q, q, q, None, scaling=0.5, alibi_slopes=torch.ones(2))


def test_scaling_is_the_modules_own():
    """GPT-2 with scale_attn_by_inverse_layer_idx divides its scale by (layer + 1); we must use it."""
    config = tiny_config("gpt2")
    config.scale_attn_by_inverse_layer_idx = True
    torch.manual_seed(0)
    eager = AutoModel.from_config(copy.deepcopy(config), attn_implementation="eager").eval()
    ours = AutoModel.from_config(copy.deepcopy(config), attn_implementation="inspector").eval()
    ours.load_state_dict(eager.state_dict())
    ids = torch.tensor([[5, 6, 7, 8, 9]])
    request = AttentionRequest()
    with torch.no_grad(), attention_request(request):
        actual = ours(input_ids=ids).last_hidden_state
    close(actual, eager(input_ids=ids).last_hidden_state, "hidden")
    assert request.records[1].scale == pytest.approx(request.records[0].scale / 2)


def test_backend_resolution(monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    assert resolve_backend("auto", "cpu") == "torch"
    assert resolve_backend("torch", "cpu") == "torch"
    if not torch.cuda.is_available():
        with pytest.raises(BackendUnavailableError, match="NVIDIA GPU.*torch or auto backend.*TRITON_INTERPRET=1"):
            resolve_backend("triton", "cpu")
        with pytest.raises(BackendUnavailableError, match="NVIDIA GPU"):  # a request made without resolving
            with attention_request(AttentionRequest(backend="triton")):
                inspector_attention(torch.nn.Module(), *(torch.zeros(1, 2, 3, 4),) * 3, None, scaling=0.5)
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert resolve_backend("triton", "cpu") == "triton"
    assert resolve_backend("auto", "cpu") == "torch"  # the interpreter is for tests and teaching: never auto
    with pytest.raises(BackendUnavailableError, match="unknown"):
        resolve_backend("cuda-magic", "cpu")


# --------------------------------------------------------------------- the Triton backend (CPU interpreter)


@pytest.fixture
def triton_interpreter(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")


@pytest.mark.parametrize("arch", ["bert", "gpt2", "llama", "mistral", "qwen2"])
def test_triton_backend_equals_eager_and_the_torch_backend(arch, triton_interpreter):
    causal = TINY_ARCHITECTURES[arch][1]
    eager, ours = model_pair(arch, seed=3)
    ids, mask = batch_inputs(causal, seed=3)
    real = mask.bool()
    requests = {backend: AttentionRequest(backend=backend, weights_layers="all") for backend in ("torch", "triton")}
    hidden = {}
    with torch.no_grad():
        expected = eager(input_ids=ids, attention_mask=mask).last_hidden_state
        for backend, request in requests.items():
            with attention_request(request):
                hidden[backend] = ours(input_ids=ids, attention_mask=mask).last_hidden_state
    close(hidden["triton"][real], expected[real], "hidden")
    for triton_record, torch_record in zip(requests["triton"].records, requests["torch"].records):
        # Every row, padded queries included: both backends define them the same way.
        close(triton_record.weights, torch_record.weights, "weights")
        for name in ("entropy", "sink"):
            close(triton_record.stats[name], torch_record.stats[name], "entropy" if name == "entropy" else "weights")
        close(triton_record.stats["lse"], torch_record.stats["lse"], "lse")
        assert torch.equal(triton_record.visible_keys, torch_record.visible_keys)
        assert (triton_record.window, triton_record.causal) == (torch_record.window, torch_record.causal)


def test_triton_backend_kv_cache_decoding_equals_eager(triton_interpreter):
    eager, ours = model_pair("mistral", auto_class=AutoModelForCausalLM, seed=4)
    ids, _ = batch_inputs(True, seq=9, seed=4)
    def one_request(model):  # one request per forward: layers report in order once per forward
        if model is eager:
            return contextlib.nullcontext()
        return attention_request(AttentionRequest(backend="triton"))

    with torch.no_grad():
        logits = []
        for model in (eager, ours):
            cache = DynamicCache(config=model.config)
            with one_request(model):
                model(input_ids=ids[:1, :6], cache=cache, use_cache=True)
            with one_request(model):
                logits.append(model(input_ids=ids[:1, 6:], cache=cache, use_cache=True).logits)
    close(logits[1], logits[0], "hidden")


def test_gradients_flow_through_the_triton_backend(triton_interpreter):
    """Gradient attribution through the flash path: d(output, weights)/d(embeddings) as the torch backend gives."""
    _, ours = model_pair("llama", seed=5)
    ids, mask = batch_inputs(True, seq=8, seed=5)
    embeds = ours.get_input_embeddings()(ids).detach()
    probe = torch.randn(2, 8, ours.config.hidden_size, generator=torch.Generator().manual_seed(0))
    grads = {}
    for backend in ("torch", "triton"):
        inputs = embeds.clone().requires_grad_()
        request = AttentionRequest(backend=backend, weights_layers=frozenset({1}))
        with attention_request(request):
            hidden = ours(inputs_embeds=inputs, attention_mask=mask).last_hidden_state
        weights = request.records[1].weights
        assert weights is not None and not weights.requires_grad  # records are detached
        grads[backend] = torch.autograd.grad((hidden * probe).sum(), inputs)[0]
    close(grads["triton"], grads["torch"], "grad")


def test_output_attentions_weights_are_differentiable_on_the_triton_backend(triton_interpreter):
    """With autograd on, returned weights carry the full softmax gradient (the Triton LSE itself carries none)."""
    q, k, v = (torch.randn(1, 2, 6, 8, generator=torch.Generator().manual_seed(i)).requires_grad_() for i in range(3))
    probe = torch.randn(1, 2, 6, 6, generator=torch.Generator().manual_seed(9))
    module = torch.nn.Module()
    module.is_causal = True
    grads = {}
    for backend in ("torch", "triton"):
        with attention_request(AttentionRequest(backend=backend)):
            _, weights = inspector_attention(module, q, k, v, None, scaling=0.4, output_attentions=True)
        grads[backend] = torch.autograd.grad((weights * probe).sum(), (q, k))
    for ours, expected in zip(grads["triton"], grads["torch"]):
        close(ours, expected, "grad")


def test_what_the_triton_backend_cannot_compute_is_a_backend_error(triton_interpreter):
    module = torch.nn.Module()
    with attention_request(AttentionRequest(backend="triton")):
        with pytest.raises(BackendUnavailableError, match="float64; choose the torch backend"):
            inspector_attention(module, *(torch.zeros(1, 2, 3, 4, dtype=torch.float64),) * 3, None, scaling=0.5)
        with pytest.raises(BackendUnavailableError, match="head_dim up to 256"):
            inspector_attention(module, *(torch.zeros(1, 1, 2, 320),) * 3, None, scaling=0.5)


@pytest.mark.parametrize("arch", ["bert", "llama"])
def test_capture_through_triton_equals_capture_through_torch(arch, tiny_model_dirs, triton_interpreter):
    from inspector.core.capture import capture
    from inspector.core.loading import load_model

    loaded = load_model(str(tiny_model_dirs[arch]))
    text = "the cat sat on the mat because it was tired"
    ours, reference = capture(loaded, text, backend="triton"), capture(loaded, text, backend="torch")
    assert ours.backend == "triton" and reference.backend == "torch"
    close(ours.entropy, reference.entropy, "entropy")
    close(ours.lse, reference.lse, "lse")
    close(ours.sink_mass, reference.sink_mass, "weights")
    assert set(ours.weights) == set(reference.weights)
    for layer in ours.weights:
        close(ours.weights[layer], reference.weights[layer], "weights")


def _final_hidden(model, ids, mask, request):
    with torch.no_grad(), attention_request(request):
        return model(input_ids=ids, attention_mask=mask).last_hidden_state


@pytest.mark.parametrize("arch", sorted(TINY_ARCHITECTURES))
def test_a_forward_resumed_at_a_layer_equals_the_whole_forward(arch):
    """Blocks below the resume layer return the kept outputs and do not run; the layers from there on run as in
    the whole forward, interventions included, on a padded batch of every architecture."""
    _, ours = model_pair(arch, auto_class=AutoModelForCausalLM if TINY_ARCHITECTURES[arch][1] else AutoModel)
    layers = ours.config.num_hidden_layers
    assert install_layer_resume(ours, layers) and layer_resume_installed(ours, layers)
    assert install_layer_resume(ours, layers)  # idempotent: wrapping twice would run a block twice
    ids, mask = batch_inputs(TINY_ARCHITECTURES[arch][1], seed=2)
    kept = AttentionRequest(stats=(), keep_layer_outputs=True)
    with torch.no_grad(), attention_request(kept):
        whole = ours(input_ids=ids, attention_mask=mask, output_hidden_states=True).hidden_states[-1]
    assert len(kept.layer_outputs) == layers and len(kept.records) == layers
    ablate = torch.tensor([[True, False, False, False], [False, False, True, True]])
    for start in range(1, layers):
        # The whole forward with a head ablated at `start`, and the same forward resumed there.
        edit = (SequenceHeadAblation(start, ablate),)
        expected = AttentionRequest(stats=("entropy",), interventions=edit)
        resumed = AttentionRequest(stats=("entropy",), interventions=edit,
                                   resume=ResumeAt(start, tuple(kept.layer_outputs[:start])))
        with torch.no_grad():
            with attention_request(expected):
                full = ours(input_ids=ids, attention_mask=mask, output_hidden_states=True)
            with attention_request(resumed):
                short = ours(input_ids=ids, attention_mask=mask, output_hidden_states=True)
        assert [r.layer for r in resumed.records] == list(range(start, layers))  # the skipped layers never ran
        close(short.hidden_states[-1], full.hidden_states[-1], "hidden")
        assert not torch.allclose(full.hidden_states[-1], whole)  # the ablation does change the output
        for got, want in zip(resumed.records, expected.records[start:]):
            close(got.stats["entropy"], want.stats["entropy"], "entropy")


def test_resuming_from_outputs_of_another_shape_is_refused():
    _, ours = model_pair("bert")
    install_layer_resume(ours, ours.config.num_hidden_layers)
    ids, mask = batch_inputs(False)
    kept = AttentionRequest(stats=(), keep_layer_outputs=True)
    _final_hidden(ours, ids, mask, kept)
    wrong = ResumeAt(1, (kept.layer_outputs[0][:1],))  # one row kept, two in the batch
    with pytest.raises(AttentionContractError, match=r"layer 0 was to be skipped .* shape \(1, 11, 32\)"):
        _final_hidden(ours, ids, mask, AttentionRequest(stats=(), resume=wrong))


def test_a_copy_of_a_wrapped_model_runs_its_own_blocks():
    """The wrapper is a method bound to its block, so copy.deepcopy rebinds it: a copy put in training mode (or
    with other weights) runs its own layers, not the original's."""
    _, ours = model_pair("bert")
    install_layer_resume(ours, ours.config.num_hidden_layers)
    changed = copy.deepcopy(ours)
    with torch.no_grad():
        for parameter in changed.encoder.layer[1].parameters():
            parameter.mul_(0.5)
    ids, mask = batch_inputs(False)
    assert not torch.allclose(_final_hidden(changed, ids, mask, AttentionRequest(stats=())),
                              _final_hidden(ours, ids, mask, AttentionRequest(stats=())))


def test_without_a_stack_of_blocks_nothing_is_wrapped():
    class NoStack(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = torch.nn.ModuleList([torch.nn.Linear(2, 2), torch.nn.Linear(2, 2)])

    model = NoStack()
    assert not install_layer_resume(model, 2) and not layer_resume_installed(model, 2)


_PATTERN_CALLS: list[int] = []


def _counted_causal(batch_idx, head_idx, q_idx, kv_idx):
    """transformers' causal pattern, counting its calls (a module-level function: the same code each forward)."""
    _PATTERN_CALLS.append(1)
    return kv_idx <= q_idx


def _shifted(offset: int):
    def pattern(batch_idx, head_idx, q_idx, kv_idx):
        return kv_idx <= q_idx + offset
    return pattern


def _attend(pattern, q_len: int, padding: torch.Tensor | None = None):
    """One causal layer through the attention function with a mask spec built on ``pattern``."""
    from kernels.hf import inspector_mask

    q = torch.randn(1 if padding is None else padding.shape[0], 2, q_len, 4)
    module = torch.nn.Module()
    module.is_causal = True
    attention_mask = None if padding is None else padding.long()
    spec = inspector_mask(q.shape[0], q_len, q_len, mask_function=pattern, attention_mask=attention_mask)
    with torch.no_grad():
        return inspector_attention(module, q, q, q, spec, scaling=0.5)


def test_a_plain_mask_pattern_is_checked_once_per_shape_not_once_per_forward():
    _PATTERN_CALLS.clear()
    _attend(_counted_causal, 13)
    checked = len(_PATTERN_CALLS)
    assert checked > 0
    _attend(_counted_causal, 13)
    assert len(_PATTERN_CALLS) == checked  # the second forward's fresh mask spec reuses the first one's check
    _attend(_counted_causal, 14)
    assert len(_PATTERN_CALLS) > checked  # another shape is checked again


def test_a_remembered_pattern_does_not_let_another_pattern_of_the_same_shape_through():
    _attend(_shifted(0), 9)  # exactly causal: checked and remembered
    with pytest.raises(AttentionContractError, match="custom pattern"):
        _attend(_shifted(1), 9)  # the same code over another number sees one key ahead
    with pytest.raises(AttentionContractError, match="custom pattern"):
        _attend(_shifted(1), 9)  # refused every time, never remembered


def test_a_pattern_holding_only_numbers_is_checked_without_the_padding():
    """Checked once for every padding, so it must be causal everywhere — even at keys this forward pads away."""
    def causal_but_for_the_last_key(batch_idx, head_idx, q_idx, kv_idx):
        return (kv_idx <= q_idx) & (kv_idx < 8)

    padding = torch.ones(1, 9, dtype=torch.bool)
    padding[0, 8] = False
    with pytest.raises(AttentionContractError, match="custom pattern"):
        _attend(causal_but_for_the_last_key, 9, padding=padding)


def test_arguments_it_does_not_know_pass_when_they_are_none():
    q = torch.zeros(1, 2, 3, 4)
    out, _ = inspector_attention(torch.nn.Module(), q, q, q, None, scaling=0.5, alibi_slopes=None)
    assert out.shape == (1, 3, 2, 4)


def test_unpadded_forwards_of_one_shape_share_their_visible_key_counts():
    """The counts depend on the shape alone without padding: a second request reuses the first one's (read-only), a
    padded batch computes its own, and both equal kernels.reference.visible_key_counts."""
    from kernels.reference import visible_key_counts

    _, ours = model_pair("gpt2")
    ids = torch.tensor([[5, 6, 7, 8, 9, 10, 11]])
    records = []
    for mask in (None, None, torch.tensor([[0, 0, 1, 1, 1, 1, 1]])):
        request = AttentionRequest()
        with torch.no_grad(), attention_request(request):
            ours(input_ids=ids, attention_mask=mask, use_cache=False)
        records.append(request.records[0])
    pointer = [record.visible_keys.untyped_storage().data_ptr() for record in records]
    assert pointer[0] == pointer[1] != pointer[2]
    assert torch.equal(records[0].visible_keys, visible_key_counts(7, 7, causal=True))
    padded = torch.tensor([[0, 0, 1, 1, 1, 1, 1]], dtype=torch.bool)
    assert torch.equal(records[2].visible_keys, visible_key_counts(7, 7, causal=True, key_padding_mask=padded))


def test_the_process_wide_memos_stay_within_their_bound_under_threads():
    """The verified patterns and the unpadded counts share one memo: oldest out first, never past its limit, even when
    threads write at once; a rewrite of a held key evicts nothing."""
    from concurrent.futures import ThreadPoolExecutor

    from kernels.hf_masks import BoundedMemo

    memo: BoundedMemo[int] = BoundedMemo(limit=8)
    for n in range(8):
        memo.put((n,), n)
    memo.put((0,), 100)  # held: rewritten in place
    assert len(memo) == 8 and memo.get((0,)) == 100
    memo.put((8,), 8)
    assert (0,) not in memo and memo.get((1,)) == 1 and memo.get((8,)) == 8  # the oldest went
    with ThreadPoolExecutor(max_workers=4) as pool:
        list(pool.map(lambda n: memo.put((n,), n), range(1_000, 3_000)))
    assert len(memo) == 8
