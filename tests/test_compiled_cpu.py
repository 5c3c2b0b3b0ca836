"""kernels/compiled_cpu.py, the compiled CPU kernel of issue 43: its blocks, weights and strided inputs against the
oracle (tests/test_fused_cpu.py runs the contract's tests on it too); every page's forward taking it; and its build —
once per machine, one process at a time, a folder per source, compiler and CPU — with each way it can be unavailable
named, and the other CPU paths taking over."""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path

import pytest
import torch

import kernels.compiled_cpu as compiled_cpu
import kernels.hf as hf
from inspector.analyses import roles_causal
from inspector.analyses.census.input import InputRow
from inspector.analyses.census.measure import measure_rows
from inspector.analyses.generate import generate
from inspector.analyses.heads import head_report
from inspector.core.capture import capture
from kernels.compiled_cpu import compiled_attention
from kernels.reference import materialize_weights, reference_attention, row_entropy
from tests.test_fused_cpu import AWKWARD
from tests.test_fused_cpu_callers import TEXT
from tests.test_reference import CASES, padding_mask, random_qkv
from tests.tolerances import close

STATS = ("entropy", "lse", "sink")


@pytest.fixture
def kernel_ready(compiled_cpu_kernel) -> None:
    if compiled_cpu_kernel is not None:
        pytest.skip(f"the compiled CPU kernel is unavailable here: {compiled_cpu_kernel}")


@pytest.mark.parametrize("q_len,k_len,causal,window,padded,heads,kv_heads", CASES + AWKWARD)
def test_every_block_size_gives_the_oracle(kernel_ready, q_len, k_len, causal, window, padded, heads, kv_heads):
    """Blocks of 1, 3 and 16 query rows and the kernel's own choice: each block's key range (cut by the causal limit
    and the window) and each row's visible keys within it give the oracle's numbers."""
    q, k, v = random_qkv(heads=heads, kv_heads=kv_heads, q_len=q_len, k_len=k_len, seed=4)
    mask = padding_mask(2, k_len, seed=4) if padded else None
    kwargs = dict(causal=causal, scale=0.3, key_padding_mask=mask, window=window)
    ref_out, ref_weights = reference_attention(q, k, v, **kwargs)
    for rows in (1, 3, 16, 0):
        out, stats = compiled_attention(q, k, v, stats=STATS, block_rows=rows, **kwargs)
        close(out, ref_out, "output")
        close(stats["entropy"], row_entropy(ref_weights), "entropy")
        close(stats["sink"], ref_weights[..., 0], "weights")
        close(materialize_weights(q, k, lse=stats["lse"], **kwargs), ref_weights, "weights")


@pytest.mark.parametrize("q_len,k_len,causal,window,padded,heads,kv_heads", CASES + AWKWARD)
def test_the_weights_written_with_the_output_are_the_exact_weights(kernel_ready, q_len, k_len, causal, window,
                                                                    padded, heads, kv_heads):
    q, k, v = random_qkv(heads=heads, kv_heads=kv_heads, q_len=q_len, k_len=k_len, seed=6)
    mask = padding_mask(2, k_len, seed=6) if padded else None
    kwargs = dict(causal=causal, scale=0.3, key_padding_mask=mask, window=window)
    out, stats, weights = compiled_cpu.run(q, k, v, stats=STATS, with_weights=True, **kwargs)
    plain_out, plain_stats = compiled_attention(q, k, v, stats=STATS, **kwargs)
    assert torch.equal(out, plain_out) and all(torch.equal(stats[n], plain_stats[n]) for n in STATS)
    assert weights.dtype == torch.float32 and weights.shape == (2, heads, q_len, k_len)
    close(weights, reference_attention(q, k, v, **kwargs)[1], "weights")
    close(weights, materialize_weights(q, k, lse=stats["lse"], **kwargs), "weights")


def test_transformers_transposed_views_are_read_as_they_are(kernel_ready):
    """transformers hands the attention function (batch, heads, len, d) views of (batch, len, heads, d) tensors."""
    g = torch.Generator().manual_seed(8)
    q, k, v = (torch.randn(2, 33, heads, 16, generator=g).transpose(1, 2) for heads in (6, 2, 2))
    assert not q.is_contiguous()
    kwargs = dict(causal=True, scale=0.25, window=9)
    out, stats = compiled_attention(q, k, v, **kwargs)
    ref_out, ref_weights = reference_attention(q.contiguous(), k.contiguous(), v.contiguous(), **kwargs)
    close(out, ref_out, "output")
    close(stats["entropy"], row_entropy(ref_weights), "entropy")
    # Written (batch, len, heads, d): transformers' transpose back to that layout, then .contiguous(), copies nothing.
    assert out.transpose(1, 2).is_contiguous()
    odd = torch.randn(1, 4, 12, 16, generator=g)[..., ::2]  # the head dimension itself strided: copied, not misread
    close(compiled_attention(odd, odd, odd, causal=False, scale=0.5)[0],
          reference_attention(odd, odd, odd, causal=False, scale=0.5)[0], "output")


def test_unavailable_reasons_name_the_cause(kernel_ready, monkeypatch):
    q, k, v = random_qkv(q_len=4, k_len=4)
    assert compiled_cpu.unavailable_reason(q, k, v) is None
    assert "float64" in compiled_cpu.unavailable_reason(q.double(), k.double(), v.double())
    assert "autograd" in compiled_cpu.unavailable_reason(q.clone().requires_grad_(), k, v)
    with torch.no_grad():
        assert compiled_cpu.unavailable_reason(q.clone().requires_grad_(), k, v) is None
    with pytest.raises(ValueError, match="float64"):
        compiled_attention(q.double(), k.double(), v.double(), causal=True, scale=0.5)
    with pytest.raises(ValueError, match="block_rows"):
        compiled_attention(q, k, v, causal=True, scale=0.5, block_rows=-1)
    monkeypatch.setenv(compiled_cpu.SWITCH_ENV, "0")
    assert f"{compiled_cpu.SWITCH_ENV}=0" in compiled_cpu.unavailable_reason(q, k, v)


# ------------------------------------------------------------------------------------- every page takes the kernel

def test_every_page_forward_takes_the_compiled_kernel(kernel_ready, tiny_models, tiny_lm, calls):
    """Inspect's capture, Generate's prefill and decode steps, the census and roles batches and the Heads report's
    forwards without gradients: all compiled; the Heads report's gradient importance (autograd records) blocked."""
    capture(tiny_models["llama"], TEXT, backend="torch", weights=[0])
    generate(tiny_lm, TEXT, max_new_tokens=3, stop_at_eos=False, backend="torch")
    rows = [InputRow(i, f"t:{i}", text) for i, text in enumerate([TEXT, "one two"])]
    assert measure_rows(tiny_models["bert"], rows, batch_tokens=60, backend="torch")[1] == []
    roles_causal.head_roles(tiny_models["llama"], repeat=8, batch=4, top_k=2, seeds=2)
    routed = len(calls)
    head_report(tiny_models["bert"], TEXT, pairs=1, pruning_step=1.0)
    assert any(q_len == 1 for _, q_len, *_ in calls[:routed])  # decode steps were among them
    assert {path for path, *_ in calls[:routed]} == {"compiled"}
    report = {path.split(":")[0] for path, *_ in calls[routed:]}
    assert report == {"compiled", "blocked"}
    assert all(path == "compiled" or path.startswith("blocked: autograd records") for path, *_ in calls[routed:])


def test_switched_off_the_other_paths_give_the_same_numbers(kernel_ready, tiny_models, monkeypatch):
    loaded = tiny_models["llama"]
    compiled = capture(loaded, TEXT, backend="torch", weights="all")
    monkeypatch.setenv(compiled_cpu.SWITCH_ENV, "0")
    request = hf.AttentionRequest(stats=STATS)
    with torch.no_grad(), hf.attention_request(request):
        loaded.model(**loaded.tokenizer(TEXT, return_tensors="pt"))
    assert request.records and all(not r.path.startswith("compiled") for r in request.records)
    fallback = capture(loaded, TEXT, backend="torch", weights="all")
    close(compiled.entropy, fallback.entropy, "entropy")
    close(compiled.lse, fallback.lse, "lse")
    close(compiled.sink_mass, fallback.sink_mass, "weights")
    assert compiled.weights.keys() == fallback.weights.keys()
    for layer, weights in compiled.weights.items():
        close(weights, fallback.weights[layer], "weights")


# ------------------------------------------------------------------------------------------------------- the build

@pytest.fixture
def fresh_state(monkeypatch):
    """A process state in which nothing has been built or loaded (the session's loaded kernel stays loaded)."""
    monkeypatch.setattr(compiled_cpu, "_state", compiled_cpu._State())


def _fake_compiler(folder: Path, body: str) -> Path:
    script = folder / "fake-c++"
    script.write_text("#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'fake c++ 1.0'; exit 0; fi\n" + body)
    script.chmod(0o755)
    return script


def test_no_compiler_is_one_reason_and_nothing_is_written(fresh_state, monkeypatch, tmp_path):
    monkeypatch.delenv("CXX", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    reason = compiled_cpu.ensure(tmp_path / "kernels", wait=True)
    assert reason is not None and "no C++ compiler" in reason
    assert not (tmp_path / "kernels").exists()
    q, k, v = random_qkv(q_len=4, k_len=4)
    assert compiled_cpu.unavailable_reason(q, k, v) == reason


def test_a_failed_build_names_its_error_and_its_log(fresh_state, monkeypatch, tmp_path):
    compiler = _fake_compiler(tmp_path, "echo 'attention_cpu.cpp:1: error: this compiler is broken' >&2\nexit 1\n")
    monkeypatch.setenv("CXX", str(compiler))
    reason = compiled_cpu.ensure(tmp_path / "kernels", wait=True)
    assert "failed" in reason and "this compiler is broken" in reason and "build.log" in reason
    (folder,) = (tmp_path / "kernels").iterdir()
    assert "this compiler is broken" in (folder / "build.log").read_text()
    assert not list(folder.glob("*.so*"))  # no library and no partial one
    assert compiled_cpu.ensure(tmp_path / "kernels", wait=True) == reason  # decided once per process


def test_one_build_serves_every_thread_and_lands_whole(monkeypatch, tmp_path):
    """Two builders at once on an empty folder: the compiler runs once (a file lock), and the library appears under
    its name only complete (written as a partial file, then renamed)."""
    runs = tmp_path / "runs"
    compiler = _fake_compiler(tmp_path, f'echo run >> "{runs}"\nsleep 1\n'
                                        'while [ "$1" != -o ]; do shift; done\necho library > "$2"\n')
    monkeypatch.setenv("CXX", str(compiler))
    built: list[Path] = []
    threads = [threading.Thread(target=lambda: built.append(compiled_cpu.build(tmp_path / "kernels")))
               for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert len(built) == 2 and built[0] == built[1] and built[0].read_text() == "library\n"
    assert runs.read_text() == "run\n"
    assert [p.name for p in built[0].parent.glob("*.partial")] == []


def test_the_library_folder_changes_with_the_source_and_the_cpu(monkeypatch, tmp_path):
    compiler = str(_fake_compiler(tmp_path, "exit 1\n"))
    first = compiled_cpu.library_folder(tmp_path, compiler)
    assert compiled_cpu.library_folder(tmp_path, compiler) == first
    edited = tmp_path / "attention_cpu.cpp"
    edited.write_text(compiled_cpu.SOURCE.read_text() + "\n// edited\n")
    monkeypatch.setattr(compiled_cpu, "SOURCE", edited)
    assert compiled_cpu.library_folder(tmp_path, compiler) != first
    monkeypatch.undo()
    monkeypatch.setattr(compiled_cpu, "_cpu_flags", lambda: "fpu sse2")  # a CPU without this one's instructions
    assert compiled_cpu.library_folder(tmp_path, compiler) != first


def test_switched_off_nothing_is_built(fresh_state, monkeypatch, tmp_path):
    monkeypatch.setenv(compiled_cpu.SWITCH_ENV, "0")
    assert "turns the compiled kernel off" in compiled_cpu.ensure(tmp_path / "kernels", wait=True)
    assert not (tmp_path / "kernels").exists()


def test_prepare_builds_the_kernel_and_says_so(kernel_ready, tmp_path, smollm2):
    from inspector.cli import main

    assert main(["prepare", "--model", "bundled:smollm2-135m", "--json", str(tmp_path / "out.json")]) == 0
    assert json.loads((tmp_path / "out.json").read_text())["compiled_cpu_kernel"] == "ready"
    assert sys.modules["kernels.compiled_cpu"]._state.ready


def test_a_process_finds_the_built_library_and_loads_it_before_its_first_forward(kernel_ready):
    """Where the library is built already, a new process (a census's Ray actor, a second replica) loads it in
    ``ensure(wait=False)`` itself, so its first attention call takes the same path as its last."""
    import os
    import subprocess

    code = ("import os, pathlib; import kernels.compiled_cpu as c; "
            "print(c.ensure(pathlib.Path(os.environ[c.FOLDER_ENV]), wait=False), c._state.thread, c._state.ready)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          cwd=Path(__file__).resolve().parents[1], env=dict(os.environ))
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["None", "None", "True"]
