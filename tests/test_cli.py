"""python -m inspector: the documented JSON, equal to eager; bad input exits 2 with one line."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from transformers import AutoModel, AutoTokenizer

from inspector.base.errors import InvalidRequestError
from inspector.cli import main, parse_layers
from inspector.core.loading import bundled_model_path
from kernels.reference import row_entropy
from tests.tolerances import close

ROOT = Path(__file__).resolve().parents[1]
TEXT = "The animal didn't cross the street because it was too tired."


def test_analyze_default_model_equals_eager(tmp_path):
    """The foundation issue's acceptance check: entropies within 1e-4 and weights within 1e-5 of eager."""
    out = tmp_path / "out.json"
    assert main(["analyze", "--model", "default", "--text", TEXT, "--weights", "all", "--json", str(out)]) == 0
    payload = json.loads(out.read_text())
    assert {"name", "architecture", "num_layers", "num_heads", "num_kv_heads", "head_dim", "causal"} <= set(
        payload["model"])
    folder = bundled_model_path()
    tokenizer = AutoTokenizer.from_pretrained(folder)
    encoded = tokenizer(TEXT, return_tensors="pt")
    assert payload["tokens"] == tokenizer.convert_ids_to_tokens(encoded["input_ids"][0].tolist())
    assert payload["backend"] == "torch"
    with torch.no_grad():
        eager = AutoModel.from_pretrained(folder, attn_implementation="eager").eval()(**encoded, output_attentions=True)
    assert sorted(payload["attention"], key=int) == [str(i) for i in range(6)]
    for layer, weights in enumerate(eager.attentions):
        close(payload["attention"][str(layer)], weights[0], "weights", precision="cli")
        close(payload["entropy"][layer], row_entropy(weights[0]), "entropy", precision="cli")


def test_info_json(tmp_path, tiny_model_dirs):
    out = tmp_path / "info.json"
    assert main(["info", "--model", str(tiny_model_dirs["llama"]), "--json", str(out)]) == 0
    info = json.loads(out.read_text())
    assert (info["num_heads"], info["num_kv_heads"], info["causal"]) == (4, 2, True)


def test_weights_subset_and_text_file(tmp_path, tiny_model_dirs):
    text_file = tmp_path / "t.txt"
    text_file.write_text("the cat sat", encoding="utf-8")
    out = tmp_path / "o.json"
    assert main(["analyze", "--model", str(tiny_model_dirs["gpt2"]), "--text-file", str(text_file),
                 "--weights", "1", "--json", str(out)]) == 0
    payload = json.loads(out.read_text())
    assert list(payload["attention"]) == ["1"] and payload["model"]["causal"] is True
    assert payload["head_entropy_normalized"][0][0] is None or 0 <= payload["head_entropy_normalized"][0][0] <= 1


@pytest.mark.parametrize("args,message", [
    (["analyze", "--text", "   "], "empty"),
    (["analyze", "--text", "word " * 600], "602 tokens; all-MiniLM-L6-v2 (bundled) reads at most 512"),
    (["analyze", "--model", "./missing-folder", "--text", "hi"], "neither an existing folder"),
    (["analyze", "--text", "hi", "--weights", "7"], "layer 7 does not exist"),
    (["analyze", "--text", "hi", "--weights", "x-y"], "expected 'all', 'none'"),
    (["analyze", "--text", "hi", "--backend", "triton"], "Triton backend is not available"),
    (["info", "--model", "nobody/nothing"], "not in the local Hugging Face cache"),
])
def test_bad_input_exits_2_with_one_line(capsys, args, message):
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("error: ") and message in err[-1]
    assert not any("Traceback" in line for line in err)


def test_not_a_model_folder_via_subprocess(tmp_path):
    """The real entry point: exit status 2 and no traceback."""
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    done = subprocess.run([sys.executable, "-m", "inspector", "analyze", "--model", str(tmp_path), "--text", "hi"],
                          capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    assert done.returncode == 2
    assert "no config.json" in done.stderr and "Traceback" not in done.stderr


def test_unknown_backend_is_a_one_line_usage_error(capsys):
    assert main(["analyze", "--text", "hi", "--backend", "cuda-magic"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: argument --backend: invalid choice")


def test_parse_layers():
    assert parse_layers("all") == "all" and parse_layers("none") is None
    assert parse_layers("3,0-2,2") == [0, 1, 2, 3]
    with pytest.raises(InvalidRequestError):
        parse_layers("4-1")


@pytest.mark.parametrize("spec", ["0-99999999999", "0-1024", "9" * 5000, "-1", "1e3", "0-2-4"])
def test_parse_layers_refuses_before_building_a_range(spec):
    """Issue 18, case 1: ``0-99999999999`` was a MemoryError — now refused before any range is built."""
    with pytest.raises(InvalidRequestError, match="--weights"):
        parse_layers(spec)


class _ModelLoaded(Exception):
    """Raised by a stand-in load_model: the command got past every check that runs before loading."""


@pytest.fixture
def no_model_load(monkeypatch):
    """load_model replaced by a sentinel, so a test can prove a refusal came before any model loaded."""
    import inspector.core.loading
    import inspector.serving.hosting

    def refuse(*args, **kwargs):
        raise _ModelLoaded

    monkeypatch.setattr(inspector.core.loading, "load_model", refuse)
    monkeypatch.setattr(inspector.serving.hosting, "load_model", refuse)  # how every command loads (issue 39)


def _one_error_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    return err[0]


# Issue 18: each bad argument is refused before any model loads, with one line and exit 2.
@pytest.mark.parametrize("args,message", [
    (["analyze", "--text", "hi", "--weights", "0-99999999999"], "no model has a layer that high"),  # case 1
    (["lessons", "--text", "hi", "--lengths", "999999999"], "each length must be 1 to 4096"),  # case 2
    (["lessons", "--text", "hi", "--lengths", "0,128"], "each length must be 1 to 4096"),
    (["lessons", "--text", "hi", "--lengths", ",".join(["8"] * 9)], "at most 8"),
    (["groundtruth", "--model", "shipped:planted-token", "--seed=-1"], "--seed: -1 is outside 0–4,294,967,295"),  # 3
    (["groundtruth", "--model", "shipped:planted-token", "--seed", str(2**32)], "--seed"),
    (["groundtruth", "--model", "shipped:planted-token", "--examples", "0"], "--examples: 0 is outside"),
    (["groundtruth", "--model", "shipped:planted-token", "--top-k", "-3"], "--top-k"),
    (["groundtruth"], "bundled all-MiniLM-L6-v2 has no known causal tokens"),
    (["attribute", "--text", "hi", "--permutations", "-1"], "--permutations: -1 is outside 1–10,000"),  # case 7
    (["attribute", "--text", "hi", "--permutations", "0"], "--permutations: 0 is outside"),
    (["attribute", "--text", "hi", "--adversarial-steps", "-1"], "--adversarial-steps: -1 is outside 0–10,000"),
    (["attribute", "--text", "hi", "--ig-steps", "0"], "--ig-steps"),
    (["attribute", "--text", "hi", "--methods", "attention,telepathy"], "unknown 'telepathy'"),
    (["attribute", "--text", "hi", "--query", "-2"], "--query"),
    (["attribute", "--text", "hi", "--reference", " "], "--reference is empty"),
    (["analyze", "--text", "  \n "], "the text is empty"),
    (["heads", "--text", ""], "the text is empty"),
    (["heads", "--text", "hi", "--sink", "nan"], "--sink"),
    (["heads", "--text", "hi", "--collapsed", "0.95"], "collapsed < diffuse"),
    (["analyze", "--text-file", "/dev/zero"], "not a regular file"),
    (["analyze", "--text-file", "no\x00such"], "--text-file"),
    (["analyze", "--text", "hi", "--json", "/no/such/folder/out.json"], "does not exist"),
    (["analyze", "--text", "hi", "--device", "tpu"], "--device"),
    (["analyze", "--text", "hi", "--dtype", "int3"], "--dtype"),
    (["info", "--model", " "], "--model is empty"),
])
def test_bad_arguments_are_refused_before_loading(capsys, no_model_load, args, message):
    assert main(args) == 2
    assert message in _one_error_line(capsys)


# Issue 18: the bounds that follow from the loaded model (the bundled one, or a shipped one).
@pytest.mark.parametrize("args,message", [
    (["analyze", "--text", "hi", "--weights", "0-6"], "--weights layer 6 does not exist: all-MiniLM-L6-v2 (bundled) "
                                                      "has layers 0–5"),
    (["lessons", "--text", "hi", "--layer", "6", "--lengths", "none"], "--layer 6 does not exist"),
    (["lessons", "--text", "hi", "--head", "12", "--lengths", "none"], "--head 12 does not exist"),
    (["attribute", "--text", "hi", "--layer", "6"], "--layer 6 does not exist"),
    (["attribute", "--text", "hi", "--class-index", "5"], "is not a classifier"),  # case 7
    (["attribute", "--text", "hi", "--token", "cat"], "is not a language model"),
    (["attribute", "--model", "shipped:induction", "--text", "a b", "--reference", "Another sentence."],
     "--reference applies to encoders without a head"),
    (["attribute", "--model", "shipped:induction", "--text", "a b c a", "--token", "zzzzqq"],
     "is not in shipped:induction's vocabulary (it would be read as [UNK])"),
    (["attribute", "--model", "shipped:deceptive-attention", "--text", "a b c", "--class-index", "5"],
     "--class-index 5 does not exist: shipped:deceptive-attention has classes 0–1"),
])
def test_bounds_from_the_model(capsys, args, message):
    assert main(args) == 2
    assert message in _one_error_line(capsys)


def test_too_long_text_names_the_cli_option(capsys):
    """Case 8's CLI half: the library's message offers what every front end can do; analyze adds --truncate."""
    assert main(["analyze", "--text", "word " * 600]) == 2
    line = _one_error_line(capsys)
    assert "602 tokens" in line and "pass --truncate" in line and "turn on truncation" not in line


def test_broken_model_folders_are_one_line(capsys, tmp_path, tiny_model_dirs):
    """Cases 4 and 6 and the unknown model_type, through the CLI: one line, exit 2, no progress bars."""
    import shutil
    import struct

    cases = {"truncated": "not a readable safetensors file", "huge-header": "not a readable safetensors file",
             "tokenizer-remote": "tokenizer_config.json has auto_map", "unknown-type": "does not know"}
    for name, message in cases.items():
        folder = shutil.copytree(tiny_model_dirs["bert"], tmp_path / name)
        weights = folder / "model.safetensors"
        if name == "truncated":
            weights.write_bytes(weights.read_bytes()[:100])
        elif name == "huge-header":
            weights.write_bytes(struct.pack("<Q", 2**60) + b"{}")
        else:
            config_name = "tokenizer_config.json" if name == "tokenizer-remote" else "config.json"
            config = json.loads((folder / config_name).read_text())
            config.update({"auto_map": {"AutoTokenizer": ["evil.Tok", None]}} if name == "tokenizer-remote"
                          else {"model_type": "zzzmodel"})
            (folder / config_name).write_text(json.dumps(config))
        assert main(["analyze", "--model", str(folder), "--text", "the cat"]) == 2, name
        assert message in _one_error_line(capsys), name


def test_successful_run_prints_no_progress_bars(capfd, tiny_model_dirs, tmp_path):
    out = tmp_path / "o.json"
    assert main(["analyze", "--model", str(tiny_model_dirs["bert"]), "--text", "the cat", "--json", str(out)]) == 0
    err = capfd.readouterr().err
    assert "Loading weights" not in err and err.strip().startswith("wrote ")


def test_cli_json_is_the_export_json(tmp_path, bundled):
    """One function writes the numbers for the CLI and for the app's export pack."""
    from inspector.core.capture import capture
    from inspector.output.export import capture_json

    out = tmp_path / "out.json"
    assert main(["analyze", "--text", TEXT, "--weights", "0,5", "--json", str(out)]) == 0
    payload = json.loads(out.read_text())
    expected = json.loads(json.dumps(capture_json(bundled.info, capture(bundled, TEXT, weights=[0, 5]))))
    payload.pop("timings"), expected.pop("timings")
    assert payload.keys() == expected.keys()
    for key in payload:
        if key in ("attention", "entropy", "sink_mass", "head_entropy", "head_entropy_normalized"):
            np.testing.assert_allclose(np.array(payload[key] if key != "attention" else list(payload[key].values()),
                                                dtype=float),
                                       np.array(expected[key] if key != "attention" else list(expected[key].values()),
                                                dtype=float), atol=1e-6)
        else:
            assert payload[key] == expected[key], key


@pytest.mark.slow
def test_the_installed_console_script_works_from_any_folder(tmp_path):
    """Case 9: the package installs (editable, as the README's set-up does) and ``attention-inspector`` runs from a
    folder that is not the repository. A throwaway venv sees this interpreter's packages through a .pth file."""
    import site

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    packages = next(venv.glob("lib/python3*/site-packages"))
    (packages / "this-interpreter.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    python = venv / "bin" / "python"
    installed = subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                                "-e", str(ROOT)], capture_output=True, text=True, timeout=300)
    assert installed.returncode == 0, installed.stderr
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    env.pop("PYTHONPATH", None)
    done = subprocess.run([str(venv / "bin" / "attention-inspector"), "analyze", "--model", "default", "--text", "hi",
                           "--json", "-"], capture_output=True, text=True, cwd=elsewhere, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["tokens"] == ["[CLS]", "hi", "[SEP]"]
    refused = subprocess.run([str(venv / "bin" / "attention-inspector"), "analyze", "--text", " "],
                             capture_output=True, text=True, cwd=elsewhere, env=env, timeout=300)
    assert refused.returncode == 2 and refused.stderr.startswith("error: the text is empty")


@pytest.mark.parametrize("command", ["analyze", "prepare", "info", "groundtruth"])
@pytest.mark.parametrize("spec,message", [
    ("bundled:nope", "there is no bundled model 'bundled:nope'"),
    ("bundled:", "'bundled:' names no bundled model"),
    ("bundled:../x", "'bundled:../x' names no bundled model"),
    ("shipped:../x", "'shipped:../x' names no shipped model"),
])
def test_a_bad_bundled_or_shipped_spec_is_one_line_and_exit_2(capsys, no_model_load, command, spec, message):
    """Issue 45 item 5: ``--model bundled:`` with an unknown, empty or traversal name was a traceback (``prepare``:
    KeyError). Each is refused before any model loads, in one line."""
    args = [command, "--model", spec] + (["--text", "hi"] if command == "analyze" else [])
    assert main(args) == 2
    line = _one_error_line(capsys)
    assert message in line and "Traceback" not in line


def test_a_bad_bundled_spec_via_subprocess_is_one_line():
    done = subprocess.run([sys.executable, "-m", "inspector", "prepare", "--model", "bundled:nope"],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "there is no bundled model 'bundled:nope'" in done.stderr
