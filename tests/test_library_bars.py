"""inspector/core/library_bars.py (issue 45, item 7): transformers' progress bars ("Loading weights", the GGUF reader's
"Converting and de-quantizing GGUF tensors...") go to the caller inside a scope, never to stderr — and nothing of
transformers is changed outside one."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import tqdm.std
import transformers.modeling_gguf_pytorch_utils as gguf
from transformers.utils import logging as hf_logging

from inspector.core.library_bars import library_bars

ROOT = Path(__file__).resolve().parents[1]


def test_a_scope_s_bars_report_to_it_and_outside_one_transformers_is_unchanged():
    original_gguf_bar, original_hook = gguf.tqdm, hf_logging._tqdm_hook
    seen, other_thread = [], []
    with library_bars(lambda done, total, what: seen.append((done, total, what))):
        assert list(hf_logging.tqdm(range(3), desc="Loading weights")) == [0, 1, 2]
        with gguf.tqdm(["a", "b"], "Converting and de-quantizing GGUF tensors...") as bar:
            assert list(bar) == ["a", "b"]
        bar.set_postfix(x=1)  # any other call a caller makes does nothing
        # Another thread's bar is transformers' own (a session loading another model is not silenced by this one).
        worker = threading.Thread(target=lambda: other_thread.append(hf_logging.tqdm(range(1), disable=True)))
        worker.start()
        worker.join()
        with library_bars():  # nested, and silent
            assert list(hf_logging.tqdm(range(2))) == [0, 1]
    assert seen == [(1, 3, "Loading weights"), (2, 3, "Loading weights"), (3, 3, "Loading weights"),
                    (1, 2, "Converting and de-quantizing GGUF tensors..."),
                    (2, 2, "Converting and de-quantizing GGUF tensors...")]
    assert isinstance(other_thread[0], (tqdm.std.tqdm, hf_logging.EmptyTqdm))  # what transformers makes
    assert gguf.tqdm is original_gguf_bar and hf_logging._tqdm_hook is original_hook


def test_loading_a_model_draws_no_bar_on_stderr(tiny_model_dirs):
    """The library's loader, in a process of its own with transformers' bars at their default (on): stderr holds no
    "Loading weights" bar (the app's server log and the CLI's one-line errors once did)."""
    code = ("import sys; from inspector.core.loading import load_model; "
            "print(load_model(sys.argv[1]).info.num_layers)")
    done = subprocess.run([sys.executable, "-c", code, str(tiny_model_dirs["llama"])], capture_output=True,
                          text=True, timeout=300, cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert done.returncode == 0 and done.stdout.split() == ["2"], done.stderr
    assert "Loading weights" not in done.stderr and "it/s]" not in done.stderr, done.stderr
