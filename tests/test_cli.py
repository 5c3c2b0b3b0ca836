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

from inspector.cli import main, parse_layers
from inspector.errors import InvalidRequestError
from inspector.loading import bundled_model_path
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


def test_unknown_backend_is_an_argparse_error(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["analyze", "--text", "hi", "--backend", "cuda-magic"])
    assert exit_info.value.code == 2


def test_parse_layers():
    assert parse_layers("all") == "all" and parse_layers("none") is None
    assert parse_layers("3,0-2,2") == [0, 1, 2, 3]
    with pytest.raises(InvalidRequestError):
        parse_layers("4-1")


def test_cli_json_is_the_export_json(tmp_path, bundled):
    """One function writes the numbers for the CLI and for the app's export pack."""
    from inspector.capture import capture
    from inspector.export import capture_json

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
