"""Shared fixtures: tiny random models of every supported architecture (built from configs, never
downloaded), saved as real model folders with a real tokenizer, and the bundled model."""

from __future__ import annotations

import contextlib
import copy
import os
from pathlib import Path

import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # tests never download; a hub id must fail fast

from transformers import (  # noqa: E402
    AutoModel,
    AutoModelForCausalLM,
    BertConfig,
    DistilBertConfig,
    Gemma3TextConfig,
    GPT2Config,
    LlamaConfig,
    MistralConfig,
    PreTrainedTokenizerFast,
    Qwen2Config,
    RobertaConfig,
)

import kernels.hf  # noqa: E402,F401  (registers the "inspector" attention implementation)
from kernels import compiled_cpu  # noqa: E402

# The compiled CPU kernel (issue 43) is built once, into the real cache's folder, before any test runs, so every
# test sees the same attention paths: tests that move INSPECTOR_CACHE_DIR, and the subprocesses they start, find
# the library here instead of building it again in the background.
if not os.environ.get(compiled_cpu.FOLDER_ENV):
    from inspector.core.bundled import cache_root

    os.environ[compiled_cpu.FOLDER_ENV] = str(cache_root() / "kernels")
# CI sets this: a machine without a C++ compiler would otherwise test only the fallback paths.
REQUIRE_COMPILED_CPU = os.environ.get("INSPECTOR_REQUIRE_COMPILED_CPU") == "1"

VOCAB_WORDS = ("the animal did n't cross street because it was too tired . a cat sat on mat and dog ran "
               "fast slow big small red blue green one two three four five six seven eight nine ten").split()
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
VOCAB_SIZE = 64  # ≥ len(SPECIALS) + len(VOCAB_WORDS)


def _common(**overrides):
    return dict(vocab_size=VOCAB_SIZE, **overrides)


# name -> (config factory, auto class for the model with a head, whether attention is causal)
TINY_ARCHITECTURES = {
    "bert": (lambda: BertConfig(**_common(hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                          intermediate_size=64, max_position_embeddings=64, pad_token_id=0)),
             False),
    "roberta": (lambda: RobertaConfig(**_common(hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                                intermediate_size=64, max_position_embeddings=70, pad_token_id=0)),
                False),
    "distilbert": (lambda: DistilBertConfig(**_common(dim=32, n_layers=2, n_heads=4, hidden_dim=64,
                                                      max_position_embeddings=64, pad_token_id=0)),
                   False),
    "gpt2": (lambda: GPT2Config(**_common(n_embd=32, n_layer=2, n_head=4, n_positions=64, bos_token_id=2,
                                          eos_token_id=3)),
             True),
    "llama": (lambda: LlamaConfig(**_common(hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                            num_key_value_heads=2, intermediate_size=64,
                                            max_position_embeddings=64, pad_token_id=0, bos_token_id=2,
                                            eos_token_id=3)),
              True),
    "mistral": (lambda: MistralConfig(**_common(hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                                num_key_value_heads=2, intermediate_size=64, sliding_window=4,
                                                max_position_embeddings=64, pad_token_id=0, bos_token_id=2,
                                                eos_token_id=3)),
                True),
    "qwen2": (lambda: Qwen2Config(**_common(hidden_size=32, num_hidden_layers=3, num_attention_heads=4,
                                            num_key_value_heads=1, intermediate_size=64, use_sliding_window=True,
                                            sliding_window=4, max_window_layers=1, max_position_embeddings=64,
                                            pad_token_id=0, bos_token_id=2, eos_token_id=3)),
              True),
    # Gemma 3 in small: sandwich norms (post-attention and post-feed-forward), q/k norms, GQA, per-layer-type RoPE,
    # a sliding window on two of three layers, scaled embeddings, (1 + w) RMSNorm weights.
    "gemma3": (lambda: Gemma3TextConfig(**_common(hidden_size=32, num_hidden_layers=3, num_attention_heads=4,
                                                  num_key_value_heads=2, head_dim=8, intermediate_size=64,
                                                  sliding_window=4, query_pre_attn_scalar=8,
                                                  layer_types=["sliding_attention", "full_attention",
                                                               "sliding_attention"],
                                                  max_position_embeddings=64, pad_token_id=0, bos_token_id=2,
                                                  eos_token_id=3)),
               True),
}


def tiny_config(arch: str):
    return TINY_ARCHITECTURES[arch][0]()


def model_pair(arch: str, auto_class=AutoModel, seed: int = 0):
    """An eager model and an inspector model with identical random weights (configs copied: from_config
    writes the attention implementation into the config object it is given)."""
    config = tiny_config(arch)
    torch.manual_seed(seed)
    eager = auto_class.from_config(copy.deepcopy(config), attn_implementation="eager").eval()
    ours = auto_class.from_config(copy.deepcopy(config), attn_implementation="inspector").eval()
    ours.load_state_dict(eager.state_dict())
    return eager, ours


def make_tokenizer() -> PreTrainedTokenizerFast:
    """A real fast tokenizer (word level, [CLS] … [SEP] template) built with the `tokenizers` library."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors

    vocab = {tok: i for i, tok in enumerate(SPECIALS + VOCAB_WORDS)}
    backend = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    backend.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B [SEP]",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])])
    return PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="[UNK]", pad_token="[PAD]",
                                   cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]", model_max_length=64)


def save_tiny_model(folder: Path, arch: str, *, with_head: bool = False, seed: int = 0) -> Path:
    """Write a loadable model folder: config.json, model.safetensors and tokenizer files."""
    causal = TINY_ARCHITECTURES[arch][1]
    auto_class = AutoModelForCausalLM if (with_head and causal) else AutoModel
    torch.manual_seed(seed)
    model = auto_class.from_config(tiny_config(arch), attn_implementation="eager")
    model.save_pretrained(folder, safe_serialization=True)
    make_tokenizer().save_pretrained(folder)
    return folder


@pytest.fixture(scope="session")
def tiny_model_dirs(tmp_path_factory) -> dict[str, Path]:
    """One saved folder per architecture (base model), built once per session."""
    root = tmp_path_factory.mktemp("tiny-models")
    return {arch: save_tiny_model(root / arch, arch) for arch in TINY_ARCHITECTURES}


@pytest.fixture(scope="session", autouse=True)
def compiled_cpu_kernel() -> str | None:
    """Build (or load) the compiled CPU kernel before the first test; None when it is ready, else why not."""
    from inspector.core.loading import compiled_kernel

    problem = compiled_kernel(wait=True)
    if problem is not None and REQUIRE_COMPILED_CPU:
        pytest.exit(f"INSPECTOR_REQUIRE_COMPILED_CPU=1 but the compiled CPU kernel is unavailable: {problem}",
                    returncode=1)
    return problem


@pytest.fixture(scope="session")
def bundled():
    """The bundled all-MiniLM-L6-v2, loaded once through the project's own loader."""
    from inspector.core.loading import load_model

    return load_model("default")


# The tiny models loaded through the project's own loader, once per test module (as each module's own copy was):
# a test never shares a loaded model with another module's, and one that changes weights loads its own.
@pytest.fixture(scope="module")
def tiny_bert(tiny_model_dirs):
    from inspector.core.loading import load_model

    return load_model(str(tiny_model_dirs["bert"]))  # 2 layers × 4 heads, 64 positions


@pytest.fixture(scope="module")
def tiny_llama(tiny_model_dirs):
    from inspector.core.loading import load_model

    return load_model(str(tiny_model_dirs["llama"]))


@pytest.fixture(scope="module")
def tiny_models(tiny_model_dirs):
    """BERT, GPT-2 and Llama by architecture name: absolute, learned and rotary positions, bidirectional and
    causal attention, multi-head and grouped-query."""
    from inspector.core.loading import load_model

    return {arch: load_model(str(tiny_model_dirs[arch])) for arch in ("bert", "gpt2", "llama")}
@pytest.fixture(scope="module")
def tiny_lm(tmp_path_factory):
    """A tiny Llama with its LM head, loaded through the project's loader."""
    from inspector.core.loading import load_model

    folder = tmp_path_factory.mktemp("tiny-lm") / "llama"
    torch.manual_seed(3)
    AutoModelForCausalLM.from_config(tiny_config("llama"), attn_implementation="eager").save_pretrained(folder)
    make_tokenizer().save_pretrained(folder)
    return load_model(str(folder), device="cpu")


@pytest.fixture
def calls(monkeypatch) -> list[tuple[str, int, int, int]]:
    """(path, q_len, k_len, head_dim) of every torch-backend attention call made while the test runs (issue 43's
    CPU paths: ``"compiled"``, ``"fused"`` or ``"blocked: <reason>"``)."""
    seen: list[tuple[str, int, int, int]] = []
    original = kernels.hf._torch_backend

    def spy(query, key, value, **kwargs):
        result = original(query, key, value, **kwargs)
        seen.append((result[-1], query.shape[2], key.shape[2], query.shape[3]))
        return result

    monkeypatch.setattr(kernels.hf, "_torch_backend", spy)
    return seen


@pytest.fixture(scope="session")
def gemma():
    """The bundled Gemma 3 270M, prepared into the default cache on first use (~1 min on 2 cores, once per run
    and machine: later runs find the folder), then loaded through the project's own loader."""
    from inspector.core.loading import load_model

    return load_model("bundled:gemma-3-270m", device="cpu")


@pytest.fixture(scope="session")
def smollm2():
    """The bundled SmolLM2-135M-Instruct, prepared like ``gemma`` (~20 s the first time)."""
    from inspector.core.loading import load_model

    return load_model("bundled:smollm2-135m", device="cpu")


# ---------------------------------------------------------------------------------------- the app in AppTest

APP_PATH = Path(__file__).resolve().parents[1] / "app.py"


def open_app_page(view: str, *, timeout: float = 240, query: dict[str, str] | None = None):
    """The app in Streamlit's ``AppTest`` (opened with ``query`` as its URL parameters), switched to
    ``views/{view}.py``, with no exception on the way."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(APP_PATH), default_timeout=timeout)
    for name, value in (query or {}).items():
        at.query_params[name] = value
    at.run()
    # A link names its page in its path, so the home page never rewrites its address bar: put the link back.
    for name, value in (query or {}).items():
        at.query_params[name] = value
    at.switch_page(f"views/{view}.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


# ---------------------------------------------------------------------------------------- real browser (Chromium)

from benchmarks.live_app import (  # noqa: E402
    CHROMIUM,
    CHROMIUM_ARGS,
    REPO_ROOT,
    AppServerError,
    running_server,
)


def browser_unavailable(reason: str) -> None:
    """Skip a browser test — or fail it where ``INSPECTOR_REQUIRE_BROWSER=1`` (CI) demands the browser."""
    if os.environ.get("INSPECTOR_REQUIRE_BROWSER") == "1":
        pytest.fail(f"{reason}, and INSPECTOR_REQUIRE_BROWSER=1 requires the browser tests to run")
    pytest.skip(f"{reason}; install it with `apt-get install chromium` (set INSPECTOR_REQUIRE_BROWSER=1 "
                "to make this a failure)")


@pytest.fixture(scope="module")
def browser():
    """Headless Debian Chromium driven by Playwright, one per test module."""
    if not CHROMIUM.exists():
        browser_unavailable(f"{CHROMIUM} is missing")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        browser_unavailable("the Python package playwright is not installed")
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


# The session's shared ``streamlit run app.py``: "url", "pid" and "stack" (the ExitStack that stops it) while it runs.
_shared_app: dict = {}


def _running(pid: int) -> bool:
    import psutil

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _stop_shared_app() -> None:
    if _shared_app:
        _shared_app.pop("stack").close()
        _shared_app.clear()


@pytest.fixture
def app_url(browser):
    """A real ``streamlit run app.py`` server's base URL, one server shared by every test that asks for it: a server's
    first pages import torch and load the models (tens of seconds on 2 cores), and a module of its own each cost CI
    minutes. Started by the first such test (or again if it has exited), stopped right after the last one
    (:func:`pytest_runtest_teardown`). A test that needs a fresh server or other settings starts its own
    (:func:`benchmarks.live_app.running_app`)."""
    if _shared_app and not _running(_shared_app["pid"]):
        _stop_shared_app()
    if not _shared_app:
        stack = contextlib.ExitStack()
        try:
            url, pid = stack.enter_context(running_server(REPO_ROOT))
        except AppServerError as err:
            stack.close()
            pytest.fail(str(err))
        _shared_app.update(url=url, pid=pid, stack=stack)
    yield _shared_app["url"]


# ---------------------------------------------------------------------------------------- heads built to a purpose

PREVIOUS_TOKEN_ANGLE = 0.4  # radians between neighbouring positions; 14 tokens × 0.4 < 2π, so no wrap-around


def save_previous_token_bert(folder: Path) -> Path:
    """A tiny BERT whose layer 0, head 0 attends to the previous token and nothing else — positional (all its
    weight on offset i − j = +1) and collapsed (normalised entropy ≈ 0) by construction, so the lessons and
    reports that look for such heads have one to find.

    How: word and token-type embeddings are zero, so the embedding output is LayerNorm(position embedding).
    Position i is embedded as (cos iθ, sin iθ, −cos iθ, −sin iθ, 0, …): mean 0 and the same variance at every
    position, so LayerNorm only scales it (by 4 at hidden size 32). Head 0's key reads (cos jθ, sin jθ) and its
    query the same pair rotated back by θ, so the score q_i·k_j ∝ cos((i − 1 − j)θ) peaks at j = i − 1; the
    factor ``sharp`` makes the peak beat its neighbours (cos θ ≈ 0.92) by (8 · 4)² / √8 · (1 − cos θ) ≈ 29
    logits."""
    torch.manual_seed(0)
    config = tiny_config("bert")
    model = AutoModel.from_config(config, attn_implementation="eager").eval()
    head_dim = config.hidden_size // config.num_attention_heads
    angle = PREVIOUS_TOKEN_ANGLE
    positions = torch.arange(config.max_position_embeddings, dtype=torch.float32)
    circle = torch.stack([torch.cos(positions * angle), torch.sin(positions * angle)], dim=-1)  # (positions, 2)
    sharp = 8.0
    cos, sin = torch.cos(torch.tensor(angle)), torch.sin(torch.tensor(angle))
    rotate_back = torch.stack([torch.stack([cos, sin]), torch.stack([-sin, cos])])  # R(−θ)
    with torch.no_grad():
        embeddings = model.embeddings
        embeddings.word_embeddings.weight.zero_()
        embeddings.token_type_embeddings.weight.zero_()
        embeddings.position_embeddings.weight.zero_()
        embeddings.position_embeddings.weight[:, :2] = circle
        embeddings.position_embeddings.weight[:, 2:4] = -circle
        attention = model.encoder.layer[0].attention.self
        for projection in (attention.query, attention.key):
            projection.weight[:head_dim].zero_()
            projection.bias[:head_dim].zero_()
        # q_i = sharp · R(−θ) x_i[:2], k_j = sharp · x_j[:2]  (rows 0–1 of head 0's slice of W_Q and W_K)
        attention.query.weight[:2, :2] = sharp * rotate_back
        attention.key.weight[:2, :2] = sharp * torch.eye(2)
    model.save_pretrained(folder, safe_serialization=True)
    make_tokenizer().save_pretrained(folder)
    return folder


@pytest.fixture(scope="session")
def previous_token_bert_dir(tmp_path_factory) -> Path:
    """The folder of :func:`save_previous_token_bert` (layer 0, head 0: a collapsed previous-token head)."""
    return save_previous_token_bert(tmp_path_factory.mktemp("previous-token-bert") / "bert")


# ---------------------------------------------------------------------------------------- one local Ray

RAY_START_ATTEMPTS = 3  # Ray gives its raylet a fixed 30 s to register; a loaded CI machine has missed that


def _start_local_ray() -> None:
    """Start the session's local Ray (2 CPUs, this checkout on the workers' path) unless it runs already. A start that
    fails — "The current node timed out during startup" on a loaded machine — is retried, after ending the processes
    that attempt left (this process's new children, by pid)."""
    import psutil  # installed with accelerate (requirements.txt); benchmarks/option_sweep.py uses it too
    import ray

    from inspector.analyses.census.ray_engine import ray_runtime_env

    if ray.is_initialized():
        return
    for attempt in range(1, RAY_START_ATTEMPTS + 1):
        before = {child.pid for child in psutil.Process().children(recursive=True)}
        try:
            ray.init(num_cpus=2, include_dashboard=False, runtime_env=ray_runtime_env(), log_to_driver=False)
            return
        except Exception as err:  # Ray raises a bare Exception for the raylet's timeout
            ray.shutdown()
            left = [child for child in psutil.Process().children(recursive=True) if child.pid not in before]
            for child in left:
                with contextlib.suppress(psutil.Error):
                    child.kill()
            psutil.wait_procs(left, timeout=10)
            if attempt == RAY_START_ATTEMPTS:
                raise RuntimeError(f"local Ray did not start in {attempt} attempts: {err}") from err


@pytest.fixture
def local_ray():
    """A local Ray for the census's Ray engine (which uses a running one and leaves it running). Started by the first
    test that asks for it and shared with the later ones — a start costs tens of seconds on 2 cores — then shut down
    right after the last test that asks for it (:func:`pytest_runtest_teardown`), so the rest of the suite does not
    run beside it."""
    _start_local_ray()
    yield


def _needed_later(item, fixture: str) -> bool:
    """Whether a test after ``item`` in this run asks for ``fixture``."""
    items = item.session.items
    return any(fixture in later.fixturenames for later in items[items.index(item) + 1:])


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item, nextitem):
    """Stop what the session shares (:func:`app_url`'s server, :func:`local_ray`) after the last test that asks, once
    that test's own fixtures are torn down (its browser pages closed)."""
    try:
        return (yield)
    finally:
        if "app_url" in item.fixturenames and not _needed_later(item, "app_url"):
            _stop_shared_app()
        if "local_ray" in item.fixturenames and not _needed_later(item, "local_ray"):
            import ray

            ray.shutdown()


def pytest_sessionfinish(session, exitstatus):
    """The same for a run stopped before those tests (-x, Ctrl+C)."""
    import sys

    _stop_shared_app()
    if "ray" in sys.modules:
        sys.modules["ray"].shutdown()
