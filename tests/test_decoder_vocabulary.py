"""A decoder's pages speak its own vocabulary (issue 44, item 7): the Heads report names the model's special tokens
(``<bos>``, not "[CLS]/[SEP]"), leaves out the columns a causal mask or a missing special token makes 0 by
construction and says why in one line, and Attribution offers only the removal modes the tokenizer supports, naming
the token that stands in. On tiny causal models whose tokenizer adds ``<bos>`` (as Gemma's does), or nothing (as
SmolLM2's does), next to the tiny BERT."""

from __future__ import annotations

import pytest

from inspector.analyses.attribution import removal_modes
from inspector.analyses.heads import head_report
from inspector.analyses.metrics import TOKEN_CATEGORIES
from inspector.charts.sentences.heads import health_report, left_out_columns
from inspector.core.loading import load_model
from tests.conftest import VOCAB_WORDS, open_app_page, save_tiny_model

TEXT = "the cat sat on the mat and the dog ran"


def decoder_tokenizer(specials: str):
    """A word-level tokenizer as a decoder's: ``"bos"`` adds ``<bos>`` in front and has ``<unk>`` and ``<pad>`` (no
    mask token, like Gemma's); ``"none"`` adds nothing and has no [MASK], [UNK] or [PAD] at all."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    names = ["<pad>", "<unk>", "<bos>", "<eos>"] if specials == "bos" else ["<unk>"]
    vocab = {tok: i for i, tok in enumerate(names + VOCAB_WORDS)}
    # "none": the word-level model still maps an unknown word somewhere, but transformers is told of no unk token.
    backend = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    if specials == "bos":
        backend.post_processor = processors.TemplateProcessing(single="<bos> $A", special_tokens=[
            ("<bos>", vocab["<bos>"])])
        return PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="<unk>", pad_token="<pad>",
                                       bos_token="<bos>", eos_token="<eos>", model_max_length=64)
    return PreTrainedTokenizerFast(tokenizer_object=backend, model_max_length=64)


@pytest.fixture(scope="module")
def decoder_dirs(tmp_path_factory):
    """Tiny Llama folders with a ``<bos>`` tokenizer and with one that adds no special token."""
    root = tmp_path_factory.mktemp("tiny-decoders")
    folders = {}
    for specials in ("bos", "none"):
        folder = save_tiny_model(root / specials, "llama")
        decoder_tokenizer(specials).save_pretrained(folder)
        folders[specials] = folder
    return folders


@pytest.fixture(scope="module")
def bos_decoder(decoder_dirs):
    return load_model(str(decoder_dirs["bos"]))


def test_the_heads_report_names_the_decoders_own_special_token(bos_decoder, tiny_bert):
    report = head_report(bos_decoder, TEXT, pairs=1, pruning_step=0.5)
    assert report.info.causal and report.special_tokens == (("<bos>",), ())
    assert report.category_name("[CLS]") == "<bos>"
    # "next" is 0 by construction under the causal mask, and so is a special category the tokenizer never adds.
    assert report.statistics.token_mass[..., TOKEN_CATEGORIES.index("next")].max() == 0
    assert [c for c in TOKEN_CATEGORIES if not report.category_shown(c)] == ["[SEP]", "next"]
    for lang in ("en", "zh"):
        lines = "\n".join(health_report(report, lang, per_kind=None))
        assert "[CLS]" not in lines and "[SEP]" not in lines, lines
        assert "<bos>" in lines  # the idle-sink line names the model's own token
    encoder = head_report(tiny_bert, TEXT, pairs=1, pruning_step=0.5)
    assert encoder.special_tokens == (("[CLS]",), ("[SEP]",))
    assert all(encoder.category_shown(c) for c in TOKEN_CATEGORIES)
    assert "[CLS]/[SEP]" in "\n".join(health_report(encoder, "en", per_kind=None))


def test_a_text_without_special_tokens_says_so_instead_of_naming_cls(decoder_dirs):
    report = head_report(load_model(str(decoder_dirs["none"])), TEXT, pairs=1, pruning_step=0.5)
    assert report.special_tokens == ((), ())
    assert not report.category_shown("[CLS]") and not report.category_shown("[SEP]")
    for lang, words in (("en", "added no special token"), ("zh", "没有给这段文本加任何特殊词元")):
        lines = "\n".join(health_report(report, lang, per_kind=None))
        assert words in lines and "[CLS]" not in lines and "[SEP]" not in lines


def test_the_columns_left_out_are_each_named_with_the_reason(bos_decoder, decoder_dirs, tiny_bert):
    """Issue 44 (walkthrough): the caption said "a special-token column" without saying which one, and ended on ";"
    when only "next" was left out. Each left-out column is named, in one sentence that ends as a sentence."""
    bos = head_report(bos_decoder, TEXT, pairs=1, pruning_step=0.5)  # <bos> at the start, no [SEP]/</s>
    assert left_out_columns(bos, "en") == (
        "Columns left out because they are 0 by construction on this model: “→ next” (a causal mask hides every "
        "later token); those on the other special tokens ([SEP], </s>, <eos>, padding: the tokenizer added none to "
        "these texts).")
    assert left_out_columns(bos, "zh") == (
        "本模型上必然为 0 的列未列出：“→ 后一个”（因果掩码遮住了后面的所有词元）；"
        "其他特殊词元（[SEP]、</s>、<eos>、填充）的列（分词器没有给这些文本加这类词元）。")
    bare = head_report(load_model(str(decoder_dirs["none"])), TEXT, pairs=1, pruning_step=0.5)
    for lang, start in (("en", "those on a special token at the start of the text"), ("zh", "文本开头特殊词元")):
        sentence = left_out_columns(bare, lang)
        assert start in sentence and sentence.count(";" if lang == "en" else "；") == 2
        assert sentence.endswith("." if lang == "en" else "。") and not sentence.endswith((";.", "；。"))
    assert left_out_columns(head_report(tiny_bert, TEXT, pairs=1, pruning_step=0.5), "en") is None


def test_removal_modes_are_the_ones_the_tokenizer_supports(bos_decoder, decoder_dirs, tiny_bert):
    assert removal_modes(tiny_bert) == {"mask": "[MASK]", "delete": None}
    assert removal_modes(bos_decoder) == {"mask": "<unk>", "delete": None}  # no mask token: <unk> stands in
    assert removal_modes(load_model(str(decoder_dirs["none"]))) == {"delete": None}


def _on_model(page: str, folder, lang: str = "en"):
    at = open_app_page(page, query={"lang": lang})
    at.text_area(key="text").set_value(TEXT)  # words the tiny vocabulary holds
    at.selectbox(key="model").set_value("__other__").run()
    at.text_input(key="model_other").set_value(str(folder)).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


@pytest.mark.slow
def test_the_heads_page_on_a_decoder_hides_the_zero_columns_and_says_why(decoder_dirs):
    at = _on_model("heads", decoder_dirs["bos"])
    assert not at.error, [e.value for e in at.error]
    columns = [list(frame.value.columns) for frame in at.dataframe if "→ <bos>" in frame.value.columns]
    assert columns, [list(frame.value.columns) for frame in at.dataframe]
    assert "→ next" not in columns[0] and "→ [SEP]" not in columns[0] and "‖αf(x)‖ → <bos>" in columns[0]
    captions = [c.value for c in at.caption if "0 by construction" in c.value]
    assert len(captions) == 1 and "causal mask" in captions[0]
    assert not [m.value for m in at.markdown if "[CLS]" in m.value or "[SEP]" in m.value]


@pytest.mark.slow
def test_the_attribution_page_offers_only_what_the_model_supports(decoder_dirs):
    at = _on_model("attribution", decoder_dirs["bos"])
    removal = at.radio(key="attr_removal")
    assert list(removal.options) == ["replace by <unk>", "delete"]
    at = _on_model("attribution", decoder_dirs["none"], lang="zh")
    assert list(at.radio(key="attr_removal").options) == ["删除"]


def test_occlusion_is_described_by_the_models_own_stand_in_in_both_languages(bos_decoder, tiny_bert):
    from inspector.analyses.attribution import Target
    from inspector.charts.sentences.attribution import removal_words, target_words

    assert removal_words(removal_modes(bos_decoder)["mask"]) == "replaced by <unk>"
    assert removal_words(removal_modes(tiny_bert)["mask"], "zh") == "替换为 [MASK]"
    assert removal_words(None) == "deleted" and removal_words(None, "zh") == "删除"
    target = Target("next-token", "log p(next token = ' sat' | text) (the model's prediction)", -1.0, token=" sat")
    assert target_words(target) == target.description
    assert "sat" in target_words(target, "zh") and "prediction" not in target_words(target, "zh")


@pytest.mark.slow
@pytest.mark.parametrize("specials, lang, removed", [("bos", "en", "replaced by <unk>"), ("none", "zh", "删除")])
def test_compares_leave_one_out_names_how_this_model_removes_a_token(decoder_dirs, specials, lang, removed):
    """Compare's occlusion note said "replaced by [MASK]" on every model (issue 44 item 7); a model without any
    stand-in could not run it at all."""
    at = _on_model("compare", decoder_dirs[specials], lang)
    at.text_area(key="compare_text_b").set_value(TEXT.replace("dog ran", "dog sat")).run()
    at.button(key="compare_loo").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    captions = [c.value.replace("\\", "") for c in at.caption if "f\\(x\\)" in c.value]  # markdown-escaped
    assert len(captions) == 1 and removed in captions[0] and "[MASK]" not in captions[0], captions
    columns = list(at.dataframe[0].value.columns)
    assert columns[-1] == ("B: leave-one-out" if lang == "en" else "B：逐一删除"), columns


def _census_of(folder, tmp_path):
    from inspector.analyses.census.run import census
    from inspector.analyses.census.summary import read_census

    data = tmp_path / "texts.txt"
    data.write_text("\n".join([TEXT, "the dog sat on the mat", "a cat ran fast"]) + "\n")
    census(str(folder), data, out=tmp_path / "out", progress=None)
    return tmp_path / "out", read_census(tmp_path / "out")


@pytest.mark.parametrize("specials, first, hidden", [("bos", "<bos>", {"mass_next", "mass_sep"}),
                                                     ("none", None, {"mass_next", "mass_cls", "mass_sep"})])
def test_a_decoders_census_names_its_own_special_tokens_and_leaves_out_zero_masses(decoder_dirs, tmp_path, specials,
                                                                                  first, hidden):
    """The census named its masses "mass cls" / "[CLS] 的注意力比例" on every model and offered masses a causal mask
    or a missing special token makes 0 (issue 44 item 7): the manifest now records both, and the names follow."""
    from inspector.analyses.batching import STATISTICS
    from inspector.charts.census import shown_statistics, statistic_name

    _, summary = _census_of(decoder_dirs[specials], tmp_path)
    assert summary.model["causal"] is True
    assert summary.model["special_tokens"] == ([[first], []] if first else [[], []])
    shown, reasons = shown_statistics(summary)
    assert set(STATISTICS) - set(shown) == hidden and "mass_previous" in shown
    assert reasons == ({"causal", "specials"})
    for statistic in hidden:  # 0 by construction indeed
        assert float(abs(summary.mean[statistic]).max()) == 0.0, statistic
    if first:
        assert statistic_name("mass_cls", "en", summary) == "mass on <bos>"
        assert statistic_name("mass_cls", "zh", summary) == "<bos> 的注意力比例"
    assert statistic_name("mass_cls") == "mass cls"  # a census that records no tokens keeps the generic name


def test_an_encoders_census_keeps_every_statistic_named_by_its_tokens(tiny_model_dirs, tmp_path):
    from inspector.analyses.batching import STATISTICS
    from inspector.charts.census import shown_statistics, statistic_name

    _, summary = _census_of(tiny_model_dirs["bert"], tmp_path)
    assert summary.model["causal"] is False and summary.model["special_tokens"] == [["[CLS]"], ["[SEP]"]]
    assert shown_statistics(summary) == (list(STATISTICS), set())
    assert statistic_name("mass_sep", "en", summary) == "mass on [SEP]"


@pytest.mark.slow
def test_the_heads_page_offers_a_decoders_census_without_its_zero_masses(decoder_dirs, tmp_path):
    folder, _ = _census_of(decoder_dirs["bos"], tmp_path)
    for lang, mass, left_out in (("en", "mass on <bos>", "0 by construction"),
                                 ("zh", "<bos> 的注意力比例", "必然为 0")):
        at = open_app_page("heads", query={"lang": lang})
        at.session_state["heads_mode"] = "census"
        at.run()
        at.text_input(key="heads_census_path").set_value(str(folder)).run()
        assert not at.exception and not at.error, [e.value for e in at.error]
        menu = at.selectbox(key="heads_census_statistic")
        assert mass in menu.options and len(menu.options) == 9, menu.options
        assert not [option for option in menu.options if "cls" in option.lower() or "sep" in option.lower()]
        assert len([c for c in at.caption if left_out in c.value]) == 1


@pytest.mark.parametrize("which, pad", [("bos", "<pad>"), ("none", None)])
def test_the_integrated_gradients_baseline_is_named_by_the_models_own_pad_token(decoder_dirs, tiny_bert, which, pad):
    """The baseline's words said "[PAD]" on every model (issue 44 item 7; Gemma's pad token is ``<pad>``)."""
    from inspector.analyses.attribution import AttributionSettings, attribute
    from inspector.charts.sentences.attribution import baseline_words

    settings = AttributionSettings(ig_steps=4, methods=("integrated_gradients",), head_grid=False, permutations=0,
                                   removal="delete")  # the "none" tokenizer has no stand-in token
    for loaded, expected in ((load_model(str(decoder_dirs[which])), pad), (tiny_bert, "[PAD]")):
        ig = attribute(loaded, TEXT, settings=settings).ig
        assert ig.pad_token == expected
        if expected is None:
            assert "zeros" in ig.baseline and baseline_words(ig) == ig.baseline
            assert "零向量" in baseline_words(ig, "zh")
        else:
            assert f"the {expected} embedding" in ig.baseline and baseline_words(ig) == ig.baseline
            assert f"替换为 {expected} 的嵌入" in baseline_words(ig, "zh")
        if expected != "[PAD]":
            assert "[PAD]" not in baseline_words(ig) + baseline_words(ig, "zh")
