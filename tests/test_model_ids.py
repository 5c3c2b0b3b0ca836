"""inspector/base/model_ids.py: one hub-id rule, and the loader, share links and the hosted allow-list all follow it
(they used to disagree: the loader's ``\\w`` took ``org/名``, which no link could carry)."""

from __future__ import annotations

import pytest
from huggingface_hub.errors import HFValidationError
from huggingface_hub.utils import validate_repo_id

import inspector.core.loading
from inspector.base.errors import HostingConfigError, ModelNotFoundError
from inspector.base.model_ids import HUB_ID_PATTERN, is_hub_id
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
    monkeypatch.setattr(inspector.core.loading, "_resolve_hub_id",
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
