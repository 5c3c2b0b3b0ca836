"""inspector/serving/hosting.py: the hosted instance's allow-list, parameter cap and settings — every refusal happens
before a weight is fetched or loaded, and nothing touches the network (the hub is faked where it appears)."""

from __future__ import annotations

import json
import pickle
import shutil
from pathlib import Path

import pytest

import inspector.core.loading
import inspector.core.model_folders
import inspector.serving.hosting
from inspector.base.errors import (
    HostingConfigError,
    ModelNotAllowedError,
    ModelTooLargeError,
    NotAModelError,
    UnsafeModelError,
)
from inspector.base.limits import HOSTED_WEIGHTS_BUDGET_BYTES
from inspector.core.bundled import BUNDLED
from inspector.core.loading import DEFAULT_MODEL, safetensors_parameter_count, shipped_choices
from inspector.serving.hosting import (
    DEFAULT_ALLOW_LIST,
    HOSTED_DEADLINE_S,
    HOSTED_MAX_PARAMETERS,
    AllowedHubModel,
    HostingPolicy,
    load_allowed_model,
    read_allow_list,
)
from tests.test_loading import _Canary

PINNED = "0123456789abcdef0123456789abcdef01234567"


def write_allow_list(folder: Path, text: str) -> Path:
    path = folder / "allowed.toml"
    path.write_text(text)
    return path


def hosted(hub: dict[str, str] | None = None, shipped: dict[str, Path] | None = None, **limits) -> HostingPolicy:
    from inspector.serving.hosting import ShippedModel

    return HostingPolicy(hosted=True, hub_models=tuple(AllowedHubModel(h, r, h) for h, r in (hub or {}).items()),
                         shipped=tuple(ShippedModel(n, f, n) for n, f in (shipped or {}).items()), **limits)


def test_off_by_default_and_the_shipped_allow_list_offers_the_bundled_model():
    local = HostingPolicy.from_env({})
    assert not local.hosted and local.max_parameters is None and local.deadline_s is None
    assert local.allows("/any/folder") and local.allows("someone/model")
    policy = HostingPolicy.from_env({"INSPECTOR_HOSTED": "1"})
    # The bundled model first, the bundled decoders (issue 27), then the ground-truth models this project trains and
    # ships (assets/models).
    assert policy.hosted
    assert policy.model_choices() == {DEFAULT_MODEL: "all-MiniLM-L6-v2 (bundled)",
                                      "bundled:gemma-3-270m": "Gemma 3 270M (bundled)",
                                      "bundled:smollm2-135m": "SmolLM2-135M-Instruct (bundled)", **shipped_choices()}
    assert policy.allows("bundled:gemma-3-270m") and HOSTED_MAX_PARAMETERS > BUNDLED["gemma-3-270m"].card.num_parameters
    assert set(shipped_choices()) == {"shipped:planted-token", "shipped:induction", "shipped:deceptive-attention"}
    assert (policy.max_parameters, policy.weights_budget_bytes, policy.deadline_s) == (
        HOSTED_MAX_PARAMETERS, HOSTED_WEIGHTS_BUDGET_BYTES, HOSTED_DEADLINE_S)
    assert read_allow_list(DEFAULT_ALLOW_LIST) == ((), ())


def test_environment_overrides_the_limits(tmp_path):
    path = write_allow_list(tmp_path, f'[[model]]\nid = "openai-community/gpt2"\nrevision = "{PINNED}"\n'
                                      f'label = "GPT-2"\n')
    policy = HostingPolicy.from_env({"INSPECTOR_HOSTED": "true", "INSPECTOR_ALLOWED_MODELS": str(path),
                                     "INSPECTOR_MAX_PARAMETERS": "1000", "INSPECTOR_WEIGHTS_BUDGET_MB": "8",
                                     "INSPECTOR_DEADLINE_S": "2.5"})
    assert policy.hub_models == (AllowedHubModel("openai-community/gpt2", PINNED, "GPT-2"),)
    assert (policy.max_parameters, policy.weights_budget_bytes, policy.deadline_s) == (1000, 8 * 2**20, 2.5)
    assert policy.allows("openai-community/gpt2") and not policy.allows("gpt2")


@pytest.mark.parametrize("content, problem", [
    ("[[model]\n", "cannot be read"),
    ('[[model]]\nid = "openai-community/gpt2"\nrevision = "main"\n', "not a 40-character commit"),
    ('[[model]]\nid = "../etc"\nrevision = "' + PINNED + '"\n', "not a hub id"),
    ('[[model]]\nid = "default"\nrevision = "' + PINNED + '"\n', "not a hub id"),
    ('[[models]]\nid = "x"\n', "unknown tables"),
    ('[[shipped]]\nname = "mine"\npath = "missing-folder"\n', "not a folder"),
    ('[[model]]\nid = "a/b"\nrevision = "' + PINNED + '"\n[[model]]\nid = "a/b"\nrevision = "' + PINNED + '"\n',
     "names a model twice"),
])
def test_a_bad_allow_list_is_refused_with_the_reason(tmp_path, content, problem):
    path = write_allow_list(tmp_path, content)
    with pytest.raises(HostingConfigError, match=problem):
        HostingPolicy.from_env({"INSPECTOR_HOSTED": "1", "INSPECTOR_ALLOWED_MODELS": str(path)})


@pytest.mark.parametrize("name, value", [("INSPECTOR_MAX_PARAMETERS", "lots"), ("INSPECTOR_DEADLINE_S", "-1"),
                                         ("INSPECTOR_WEIGHTS_BUDGET_MB", "0.5")])
def test_bad_limits_in_the_environment_are_refused(name, value):
    with pytest.raises(HostingConfigError, match=name):
        HostingPolicy.from_env({name: value})


@pytest.fixture
def no_loading(monkeypatch):
    """Fail the test if anything reaches the loader."""
    def refuse(*args, **kwargs):
        raise AssertionError(f"load_model was called with {args}")

    monkeypatch.setattr(inspector.serving.hosting, "load_model", refuse)


@pytest.mark.parametrize("spec", ["someone/unlisted-model", "gpt2", "../../etc", "/etc", "~", "tiny-folder"])
def test_hosted_mode_refuses_unlisted_models_and_local_paths_before_loading(tmp_path, tiny_model_dirs, no_loading,
                                                                              spec):
    spec = str(tiny_model_dirs["bert"]) if spec == "tiny-folder" else spec  # an existing, loadable folder
    with pytest.raises(ModelNotAllowedError, match="not one of the models this hosted instance offers"):
        load_allowed_model(spec, hosted(hub={"openai-community/gpt2": PINNED}))


def test_an_allow_listed_hub_id_shadowed_by_a_local_folder_is_refused(tmp_path, monkeypatch, no_loading):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "gpt2").mkdir()
    with pytest.raises(ModelNotAllowedError, match="folder of that name exists"):
        load_allowed_model("gpt2", hosted(hub={"gpt2": PINNED}))


def test_the_projects_own_models_load_in_hosted_mode_but_other_folders_do_not():
    policy = hosted()
    assert policy.allows("shipped:induction") and not policy.allows("assets/models/induction")
    assert load_allowed_model("shipped:induction", policy, device="cpu").info.head == "causal-lm"
    with pytest.raises(ModelNotAllowedError):
        load_allowed_model("assets/models/induction", policy)


def test_shipped_models_load_and_the_cap_is_read_from_safetensors_headers(tiny_model_dirs):
    folder = tiny_model_dirs["bert"]
    loaded = load_allowed_model("tiny", hosted(shipped={"tiny": folder}))
    assert safetensors_parameter_count(folder) == loaded.info.num_parameters
    with pytest.raises(ModelTooLargeError, match=f"{loaded.info.num_parameters:,} parameters.*1,000"):
        load_allowed_model("tiny", hosted(shipped={"tiny": folder}, max_parameters=1_000))


def test_a_safetensors_file_with_a_bad_header_is_not_counted(tmp_path, tiny_model_dirs):
    folder = tmp_path / "bad-header"
    shutil.copytree(tiny_model_dirs["bert"], folder)
    (folder / "model.safetensors").write_bytes((2**40).to_bytes(8, "little") + b"{}")
    with pytest.raises(NotAModelError, match="not a readable safetensors file"):
        safetensors_parameter_count(folder)


class FakeHub:
    """Stands in for huggingface_hub: a cache that holds nothing, metadata of a chosen size, and a download
    that records its call and returns a local folder."""

    def __init__(self, parameters: int, folder: Path):
        self.parameters, self.folder = parameters, folder
        self.metadata_calls: list[tuple] = []
        self.downloads: list[dict] = []

    def snapshot_download(self, repo_id, *, local_files_only=False, **kwargs):
        from huggingface_hub.errors import LocalEntryNotFoundError

        if local_files_only:
            raise LocalEntryNotFoundError("not cached")
        self.downloads.append(dict(repo_id=repo_id, **kwargs))
        return str(self.folder)

    def get_safetensors_metadata(self, repo_id, *, revision=None, **kwargs):
        self.metadata_calls.append((repo_id, revision))

        class Metadata:
            parameter_count = {"F32": self.parameters}

        return Metadata()


@pytest.fixture
def fake_hub(monkeypatch, tiny_model_dirs):
    def install(parameters: int) -> FakeHub:
        hub = FakeHub(parameters, tiny_model_dirs["bert"])
        monkeypatch.setenv("HF_HUB_OFFLINE", "")
        monkeypatch.setattr(inspector.core.model_folders, "_hub_reachable", lambda: True)
        monkeypatch.setattr("huggingface_hub.snapshot_download", hub.snapshot_download)
        monkeypatch.setattr("huggingface_hub.get_safetensors_metadata", hub.get_safetensors_metadata)
        return hub
    return install


def test_the_parameter_cap_is_checked_from_hub_metadata_before_any_download(fake_hub):
    hub = fake_hub(7_000_000_000)
    with pytest.raises(ModelTooLargeError, match="7,000,000,000 parameters"):
        load_allowed_model("someone/huge", hosted(hub={"someone/huge": PINNED}, max_parameters=200_000_000))
    assert hub.metadata_calls == [("someone/huge", PINNED)] and hub.downloads == []


def test_an_allowed_hub_model_is_fetched_at_its_pinned_commit(fake_hub):
    hub = fake_hub(10_000)
    loaded = load_allowed_model("someone/small", hosted(hub={"someone/small": PINNED}, max_parameters=200_000))
    assert loaded.info.num_layers == 2
    assert [(d["repo_id"], d["revision"]) for d in hub.downloads] == [("someone/small", PINNED)]
    assert not any(p.endswith((".bin", ".pt", ".pth", ".ckpt", ".pkl", ".py"))
                   for p in hub.downloads[0]["allow_patterns"])


def _pickle_only(folder: Path, canary: Path) -> None:
    (folder / "model.safetensors").unlink()
    (folder / "pytorch_model.bin").write_bytes(pickle.dumps(_Canary(str(canary))))


def _needs_remote_code(folder: Path, canary: Path) -> None:
    config = json.loads((folder / "config.json").read_text())
    config["auto_map"] = {"AutoModel": "modeling_evil.EvilModel"}
    (folder / "config.json").write_text(json.dumps(config))
    (folder / "modeling_evil.py").write_text(f"open({str(canary)!r}, 'w')\n")


@pytest.mark.parametrize("make_unsafe, refusal", [(_pickle_only, "pickle weights"),
                                                  (_needs_remote_code, "trust_remote_code=False")])
def test_hosted_mode_refuses_unsafe_shipped_models_and_the_canary_never_runs(tmp_path, tiny_model_dirs,
                                                                              make_unsafe, refusal):
    folder, canary = tmp_path / "unsafe", tmp_path / "canary-ran"
    shutil.copytree(tiny_model_dirs["bert"], folder)
    make_unsafe(folder, canary)
    with pytest.raises(UnsafeModelError, match=refusal):
        load_allowed_model("unsafe", hosted(shipped={"unsafe": folder}))
    assert not canary.exists()
