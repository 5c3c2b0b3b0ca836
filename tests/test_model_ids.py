"""inspector/base/model_ids.py: one hub-id rule, and the loader, share links and the hosted allow-list all follow it
(they used to disagree: the loader's ``\\w`` took ``org/名``, which no link could carry)."""

from __future__ import annotations

import pytest
from huggingface_hub.errors import HFValidationError
from huggingface_hub.utils import validate_repo_id

import inspector.core.loading
import inspector.core.model_folders
from inspector.base.errors import HostingConfigError, ModelNotFoundError
from inspector.base.model_ids import HUB_ID_PATTERN, ModelSpec, is_hub_id, is_spec_name, parsed_spec, spec_kind
from inspector.core.loading import resolve_model_folder
from inspector.output.share import ViewState, decode_view
from inspector.serving.hosting import read_allow_list

PINNED = "0123456789abcdef0123456789abcdef01234567"

HUB_IDS = ["a/b", "gpt2", "openai-community/gpt2", "Qwen/Qwen2.5-0.5B", "a_b/c.d", "org/x_", "x" * 96,
           "o" * 96 + "/" + "n" * 96]
NOT_HUB_IDS = ["org/名", "../x", "a/b/c", "", "café", "org/naïve", "/abs", "~/x", ".hidden", "_x", "-x", "a\\b",
               "org/name.", "org/name-", "a--b", "a..b", "org/model.git", "x" * 97, "a/", "/b", "a b", "a/b\n"]


@pytest.mark.parametrize("text", HUB_IDS)
def test_hub_ids(text):
    assert is_hub_id(text) and HUB_ID_PATTERN.fullmatch(text)
    validate_repo_id(text)  # the hub's own check agrees


@pytest.mark.parametrize("text", NOT_HUB_IDS)
def test_not_hub_ids(text):
    assert not is_hub_id(text)


def test_the_hub_refuses_what_is_only_ours_to_refuse_or_not_at_all():
    """The one place we are stricter than huggingface_hub: a part starting with "_"."""
    validate_repo_id("_x")
    for text in NOT_HUB_IDS:
        if text != "_x":
            with pytest.raises(HFValidationError):
                validate_repo_id(text)
    assert not is_hub_id(None) and not is_hub_id(42)


@pytest.mark.parametrize("text", ["org/名", "a/b", "../x", "a/b/c", "gpt2", "a--b", "org/name."])
def test_loading_share_links_and_the_allow_list_agree(text, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # no folder of that name where a relative spec would be looked up
    fetched = []
    monkeypatch.setattr(inspector.core.model_folders, "_resolve_hub_id",
                        lambda repo_id, **_: fetched.append(repo_id) or tmp_path)
    try:
        resolve_model_folder(text)
        loads = True
    except ModelNotFoundError as err:
        assert "neither an existing folder nor a valid Hugging Face hub id" in str(err)
        loads = False
    assert loads == (fetched == [text])

    state, warnings = decode_view({"model": text})
    linked = state.model == text and warnings == ()
    assert linked or (state == ViewState() and len(warnings) == 1)

    allow_list = tmp_path / "allowed.toml"
    allow_list.write_text(f'[[model]]\nid = "{text}"\nrevision = "{PINNED}"\n', encoding="utf-8")
    try:
        allowed = read_allow_list(allow_list)[0][0].hub_id == text
    except HostingConfigError:
        allowed = False

    assert loads == linked == allowed == is_hub_id(text)


# ---------------------------------------------------------------------------------------- model specs


@pytest.mark.parametrize("text,kind,name", [
    ("default", "default", "default"), ("  default ", "default", "default"),
    ("bundled:gemma-3-270m", "bundled", "gemma-3-270m"), ("shipped:induction", "shipped", "induction"),
    ("gpt2", "hub", "gpt2"), ("openai-community/gpt2", "hub", "openai-community/gpt2"),
    ("./models/mine", "folder", "./models/mine"), ("/abs/path", "folder", "/abs/path"), ("org/名", "folder", "org/名"),
])
def test_a_spec_is_read_once_into_its_kind(text, kind, name):
    spec = ModelSpec.parse(text)
    assert (spec.kind, spec.name) == (kind, name)
    assert ModelSpec.parse(spec.text) == spec and str(spec) == spec.text


@pytest.mark.parametrize("text", ["bundled:", "bundled:../x", "bundled:a/b", "shipped:café", "shipped:ab-",
                                  "shipped:.hidden", "shipped:a..b", "", "   ", None])
def test_a_spec_whose_name_is_no_name_is_one_typed_error(text):
    """One name rule per kind: the NAME of bundled:/shipped: is one part of a hub id — the loader's old
    ``_SHIPPED_NAME`` took ``café`` and ``ab-``, which the allow-list refused."""
    with pytest.raises(ModelNotFoundError) as caught:
        ModelSpec.parse(text)
    assert caught.value.notice is not None and caught.value.notice.key.startswith("error.spec_")
    assert "\n" not in str(caught.value)
    assert parsed_spec(text) is None and spec_kind(text) is None


@pytest.mark.parametrize("name", ["café", "ab-", "a..b", "../x", ".x", "a/b", ""])
def test_the_loader_the_links_and_the_allow_list_refuse_the_same_shipped_names(name, tmp_path):
    assert not is_spec_name(name)
    with pytest.raises(ModelNotFoundError):
        resolve_model_folder(f"shipped:{name}")
    state, warnings = decode_view({"model": f"shipped:{name}"})
    assert state.model != f"shipped:{name}" and len(warnings) == 1
    (tmp_path / "m").mkdir()
    allow_list = tmp_path / "allowed.toml"
    allow_list.write_text(f'[[shipped]]\nname = "{name}"\npath = "m"\n', encoding="utf-8")
    with pytest.raises(HostingConfigError):
        read_allow_list(allow_list)


def test_a_valid_spec_value_refuses_a_name_of_another_kind():
    with pytest.raises(ValueError):
        ModelSpec("bundled", "../x")
    with pytest.raises(ValueError):
        ModelSpec("hub", "org/名")
