"""The page registry (inspector/output/pages.py, views/pages.py; issue 39, Build 3): its contract is checked when a page
is registered; every registered page has its view and its menu label; each page's link parameters are its own; no
list of pages or of restore flags is kept anywhere else. The browser test that every registered path opens is in
tests/test_browser.py."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from inspector.base.i18n import CATALOGUE, LANGUAGES
from inspector.output.lecture import LECTURE, encode_lecture
from inspector.output.pages import (
    PAGE_REGISTRY,
    VIEW_KEYS,
    PageSpec,
    home_page,
    lecture_targets,
    page_names,
    register_page,
)
from inspector.output.share import (
    PAGES,
    CompareState,
    GenerateState,
    LessonsState,
    ViewState,
    encode_compare,
    encode_generate,
    encode_lesson,
    encode_lessons,
    encode_view,
)
from inspector.output.share_atlas import AtlasState, encode_atlas

ROOT = Path(__file__).resolve().parents[1]


def test_every_registered_page_has_its_view_and_its_menu_label():
    assert page_names() == PAGES and len(PAGES) >= 8
    assert [spec.name for spec in PAGE_REGISTRY.values() if spec.default] == ["inspect"] == [home_page().name]
    for spec in PAGE_REGISTRY.values():
        assert (ROOT / spec.script).is_file(), spec.script
        assert all(CATALOGUE[spec.nav_key][lang].strip() for lang in LANGUAGES), spec.nav_key
    assert "lecture" not in lecture_targets() and {step.view.page for step in LECTURE} <= set(lecture_targets())


@pytest.mark.parametrize("spec, match", [
    (PageSpec("heads", ":material/x:"), "already registered"),
    (PageSpec("nowhere", ":material/x:"), "nav.nowhere"),
    (PageSpec("nowhere", ":material/x:", default=True), "home page"),
    (PageSpec("nowhere", ":material/x:", link_keys=("lesson",)), "lessons"),
])
def test_registering_a_page_checks_it_against_the_others(spec, match):
    before = dict(PAGE_REGISTRY)
    with pytest.raises(ValueError, match=match):
        register_page(spec)
    assert PAGE_REGISTRY == before


@pytest.mark.parametrize("kwargs, match", [
    (dict(name="Mechanism", icon=":material/x:"), "lower-case"),
    (dict(name="x/y", icon=":material/x:"), "lower-case"),
    (dict(name="x", icon="🔎"), "icon"),
    (dict(name="x", icon=":material/x:", link_keys=("layer",)), "shared view"),
    (dict(name="x", icon=":material/x:", link_keys=["a"]), "tuple"),
])
def test_a_page_spec_refuses_what_no_page_can_be(kwargs, match):
    with pytest.raises(ValueError, match=match):
        PageSpec(**kwargs)


def test_each_page_writes_only_its_own_link_parameters():
    view = ViewState(model="gpt2", text="x " * 900, page="lessons", layer=1, head=2, backend="torch",
                     hide_special=True, drop_sink=True, words=True, slide=True, lang="zh")
    assert set(encode_view(view)) | {"text"} <= VIEW_KEYS | {"tz"}
    written = {
        "compare": encode_compare(CompareState(text_b="y " * 900, model_b="gpt2", query="it", keys=("a", "b")))
        | encode_compare(CompareState(text_b="short")),
        "generate": encode_generate(GenerateState(new=8, temp=0.5, topk=5, topp=0.9, seed=3, chat=True, step=2)),
        "lessons": encode_lesson(4) | encode_lessons(LessonsState(decoder="bundled:smollm2-135m", dlayer=1, dhead=2)),
        "lecture": encode_lecture(3),
        "atlas": encode_atlas(AtlasState(atlas="gemma-3-270m", atlas_b="default", x="layer", y="sink",
                                         colour="entropy", head=(1, 2), statistic="distance")),
    }
    for name, params in written.items():
        assert params and set(params) <= set(PAGE_REGISTRY[name].link_keys), name


def test_no_page_list_or_restore_flag_is_kept_by_hand():
    """The pages, the restore-once flags and the link-warning loop have one home each (the registry, views.pages)."""
    app = (ROOT / "app.py").read_text(encoding="utf-8")
    assert "st.Page(" not in app and "pages.navigation(" in app
    for path in sorted((ROOT / "views").glob("*.py")):
        code = path.read_text(encoding="utf-8")
        if path.name != "pages.py":
            assert "sidebar.share_warning" not in code, f"{path.name}: show link warnings with views.pages"
            assert not re.search(r"_restored\b|_RESTORED", code), f"{path.name}: read a link with pages.restore_once"
            assert "st.Page(" not in code, path.name
