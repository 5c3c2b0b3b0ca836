"""The tokenizer's one door (issue 39, item 2): ``inspector.core.token_codec.TokenCodec``.

No module of the library or the pages calls a tokenizer or reads its special tokens except through ``loaded.codec``
(read with ``ast``); the codec returns exactly what the tokenizer's own calls return; and threads encoding at once
through one codec get the ids each text gets alone.
"""

from __future__ import annotations

import ast
import copy
import threading
from pathlib import Path

import pytest

from inspector.core.token_codec import TokenCodec
from tests.conftest import make_tokenizer

ROOT = Path(__file__).resolve().parents[1]
CODEC_MODULE = "inspector/core/token_codec.py"
# Tokenizer methods that read or write its files, not text: loading one (inspector.core.loading) and saving a
# bundled decoder's prepared folder (inspector.core.bundled) happen before any LoadedModel, hence any codec, exists.
FILE_METHODS = frozenset({"from_pretrained", "save_pretrained"})
# The loader reads the limit of the tokenizer it has just loaded, before the LoadedModel (and its codec) exists; a
# plain Python attribute, no call into the Rust tokenizer.
READ_BEFORE_THE_CODEC = frozenset({("inspector/core/loading.py", "getattr(tokenizer, 'model_max_length', None)")})


def _is_tokenizer(node: ast.expr) -> bool:
    """Whether ``node`` names a tokenizer: ``tokenizer``, ``…_tokenizer`` or an attribute ``….tokenizer``."""
    if isinstance(node, ast.Name):
        return node.id.lower().endswith("tokenizer")
    return isinstance(node, ast.Attribute) and node.attr == "tokenizer"


def direct_tokenizer_calls(source: str) -> list[tuple[int, str]]:
    """(line, code) of every call of a tokenizer or a tokenizer's method in ``source`` (file methods aside), of every
    read of a tokenizer's attribute, written out or through ``getattr`` — its special tokens (``all_special_ids``,
    ``added_tokens_decoder``, ``pad_token_id`` …) call into the Rust tokenizer outside the codec's lock — and of
    every use of a hand-held ``tokenizer_lock``. A tokenizer passed on as a value (a cache's key) passes."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            func = node.func
            read_by_getattr = (isinstance(func, ast.Name) and func.id == "getattr" and node.args
                               and _is_tokenizer(node.args[0]))
            if _is_tokenizer(func) or read_by_getattr:
                found.append((node.lineno, ast.unparse(node)[:100]))
        elif isinstance(node, ast.Attribute) and _is_tokenizer(node.value) and node.attr not in FILE_METHODS:
            found.append((node.lineno, ast.unparse(node)[:100]))
        elif (isinstance(node, ast.Attribute) and node.attr == "tokenizer_lock") or (
                isinstance(node, ast.Name) and node.id == "tokenizer_lock"):
            found.append((node.lineno, ast.unparse(node)))
    return found


def _scanned_files() -> list[Path]:
    files = [ROOT / "app.py", *sorted((ROOT / "inspector").rglob("*.py")), *sorted((ROOT / "views").rglob("*.py"))]
    return [path for path in files if path.relative_to(ROOT).as_posix() != CODEC_MODULE]


def test_no_tokenizer_is_called_outside_the_codec():
    files = _scanned_files()
    assert len(files) > 100 and any(p.name == "forward.py" for p in files)  # the scan reads the whole code base
    offenders = [f"{path.relative_to(ROOT).as_posix()}:{line}: {code}"
                 for path in files for line, code in direct_tokenizer_calls(path.read_text(encoding="utf-8"))
                 if (path.relative_to(ROOT).as_posix(), code) not in READ_BEFORE_THE_CODEC]
    assert not offenders, "call the tokenizer through loaded.codec (inspector.core.token_codec):\n" + "\n".join(
        offenders)


def test_the_scan_finds_each_way_the_tokenizer_was_called_before_the_codec():
    """The sites the codec replaced, as they were written (issue 39): each is found, the special-token reads too;
    a tokenizer passed on as a value and a file method are not."""
    old = '''
def f(loaded, tokenizer, text, ids):
    with loaded.tokenizer_lock:
        encoding = tokenizer(text, truncation=False)
    batch = loaded.tokenizer([text, text])
    token = loaded.tokenizer.convert_ids_to_tokens(ids)[0]
    one = tokenizer.convert_tokens_to_ids(token)
    text = tokenizer.apply_chat_template([], tokenize=False)
    piece = loaded.tokenizer.decode(ids)
    words = loaded.tokenizer(text).word_ids()
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    specials = set(getattr(loaded.tokenizer, "all_special_ids", []))
    special = set(loaded.tokenizer.all_special_ids)
    added = getattr(tokenizer, "added_tokens_decoder", {}).values()
    cached = CACHE.get(loaded.tokenizer)
    tokenizer.save_pretrained("folder")
    return loaded.codec.encode(text), loaded.codec.token_strings(ids), loaded.codec.all_special_ids()
'''
    # Lines 3–14 each hold one use (word_ids() is a method of the encoding: the tokenizer call inside it is the use).
    assert sorted({line for line, _ in direct_tokenizer_calls(old)}) == list(range(3, 15))


# ------------------------------------------------------------------------------------------------ same answers


TEXTS = ["the cat sat on the mat .", "a dog ran fast", "the animal did n't cross the street because it was too tired",
         "seven eight nine ten one two three four five six seven eight nine ten one two three"]


@pytest.fixture(scope="module")
def tokenizer():
    return make_tokenizer()


def test_the_codec_returns_what_the_tokenizer_returns(tokenizer):
    codec = TokenCodec(tokenizer)
    for text in TEXTS:
        for options in ({}, {"add_special_tokens": False}, {"truncation": True, "max_length": 5},
                        {"return_offsets_mapping": True, "return_special_tokens_mask": True}):
            assert dict(codec.encode(text, **options)) == dict(tokenizer(text, **options))
        assert codec.input_ids(text) == tokenizer(text)["input_ids"]
        assert codec.input_ids(text, add_special_tokens=False) == tokenizer(text, add_special_tokens=False)["input_ids"]
        assert codec.word_ids(text) == tokenizer(text).word_ids()
        ids = tokenizer(text)["input_ids"]
        assert codec.token_strings(ids) == tokenizer.convert_ids_to_tokens(ids)
        assert [codec.token_string(i) for i in ids] == [tokenizer.convert_ids_to_tokens(i) for i in ids]
        assert codec.decode(ids) == tokenizer.decode(ids, skip_special_tokens=False)
        assert codec.decode(ids, skip_special_tokens=True) == tokenizer.decode(ids, skip_special_tokens=True)
    batch = codec.encode_batch(TEXTS, truncation=False, return_special_tokens_mask=True)
    assert dict(batch) == dict(tokenizer(TEXTS, truncation=False, return_special_tokens_mask=True))
    assert batch["input_ids"] == [codec.input_ids(text) for text in TEXTS]
    words = ["cat", "[MASK]", "zebra"]  # an entry, a special token, and no entry (the unknown token's id)
    assert [codec.vocabulary_id(w) for w in words] == [tokenizer.convert_tokens_to_ids(w) for w in words]
    assert codec.vocabulary_ids(words) == tokenizer.convert_tokens_to_ids(words)
    assert codec.vocabulary_id("zebra") == tokenizer.unk_token_id


AWKWARD_TEXTS = ["[SEP] [MASK] <s> </s> <bos> <eos> <|im_start|> <unk> [UNK]",
                 "##ing Ġthe ▁the <0x0A> \t\ttabs\nand a line",
                 "emoji 🤗👍🏽 中文 العربية \u200b\u200d ｆｕｌｌ ｗｉｄｔｈ 𝔘𝔫𝔦𝔠𝔬𝔡𝔢",
                 "   leading spaces and trailing   "]


def _codec_and_texts(which: str, tokenizer, request) -> tuple[TokenCodec, list[str]]:
    """The codec of the tiny tokenizer or of a bundled model's, and the texts to compare on: the short ones, the
    awkward ones and the census corpus's first 300."""
    if which == "tiny":
        codec = TokenCodec(tokenizer)
    else:
        loaded = request.getfixturevalue({"default": "bundled", "bundled:smollm2-135m": "smollm2",
                                          "bundled:gemma-3-270m": "gemma"}[which])
        codec = loaded.codec
    corpus = (ROOT / "assets" / "corpus" / "census-sentences.txt").read_text(encoding="utf-8").splitlines()[:300]
    return codec, [*TEXTS, *AWKWARD_TEXTS, *corpus]


@pytest.mark.parametrize("which", ["tiny", "default", "bundled:smollm2-135m", "bundled:gemma-3-270m"])
def test_the_token_strings_an_encoding_carries_are_the_tokenizer_s_own(which, tokenizer, request):
    """encoded_token_strings reads the fast tokenizer's encoding instead of converting each id: the same strings as
    convert_ids_to_tokens, with special-token strings read as text and as tokens."""
    codec, texts = _codec_and_texts(which, tokenizer, request)
    for text in texts:
        for split in (True, False):
            encoding = codec.encode(text, return_special_tokens_mask=True, split_special_tokens=split)
            ids = encoding["input_ids"]
            assert codec.encoded_token_strings(encoding, ids) == codec.token_strings(ids), (which, text, split)
    assert codec.encoded_token_strings({"input_ids": [5, 6]}, [5, 6]) == codec.token_strings([5, 6])  # no encodings


@pytest.mark.parametrize("which", ["tiny", "default", "bundled:smollm2-135m", "bundled:gemma-3-270m"])
def test_a_model_s_input_from_the_rust_tokenizer_is_what_the_tokenizer_s_call_gives(which, tokenizer, request):
    """encode_for_model calls the Rust tokenizer itself where transformers' call would only pass the text on: the
    same fields, lists, word ids and token strings, with special-token strings split or parsed, with and without
    special tokens — and after a truncating or padding call left its settings on the Rust tokenizer."""
    from inspector.core.token_codec import _calls_rust_directly

    codec, texts = _codec_and_texts(which, tokenizer, request)
    assert _calls_rust_directly(codec.tokenizer)  # the three bundled tokenizers and the tiny one take the direct path
    for text in texts:
        for split in (True, False):
            for special in (True, False):
                ours = codec.encode_for_model(text, add_special_tokens=special, split_special_tokens=split)
                theirs = codec.encode(text, truncation=False, verbose=False, return_special_tokens_mask=True,
                                      return_offsets_mapping=True, add_special_tokens=special,
                                      split_special_tokens=split)
                assert dict(ours) == dict(theirs), (which, text, split, special)
                assert list(ours.keys()) == list(theirs.keys())
                assert ours.word_ids() == theirs.word_ids() and ours.tokens() == theirs.tokens()
    long_text = " ".join(TEXTS)
    codec.encode(long_text, truncation=True, max_length=4)  # leaves truncation on the Rust tokenizer
    codec.encode_batch([long_text, "a"], padding="max_length", max_length=40)  # and padding
    assert dict(codec.encode_for_model(long_text)) == dict(codec.encode(
        long_text, truncation=False, verbose=False, return_special_tokens_mask=True, return_offsets_mapping=True,
        split_special_tokens=False))


def test_a_tokenizer_class_with_a_call_of_its_own_is_called_as_it_is(tokenizer):
    """A tokenizer that changes transformers' call (here its _encode_plus) is never bypassed."""
    from inspector.core.token_codec import _calls_rust_directly

    calls = []

    class Marking(type(tokenizer)):
        def _encode_plus(self, *args, **kwargs):
            calls.append(args)
            return super()._encode_plus(*args, **kwargs)

    marking = copy.copy(tokenizer)
    marking.__class__ = Marking
    assert not _calls_rust_directly(marking)
    codec = TokenCodec(marking)
    assert dict(codec.encode_for_model(TEXTS[0])) == dict(TokenCodec(tokenizer).encode_for_model(TEXTS[0]))
    assert len(calls) == 1


def test_the_codec_reads_the_special_tokens_the_tokenizer_holds(tokenizer):
    codec = TokenCodec(tokenizer)
    for role in ("mask", "unk", "pad", "cls", "bos"):  # BERT's tokenizer has no beginning-of-sequence token
        assert codec.special_token(role) == getattr(tokenizer, f"{role}_token")
        assert codec.special_token_id(role) == getattr(tokenizer, f"{role}_token_id")
    assert codec.special_token("mask") == "[MASK]" and codec.special_token_id("bos") is None
    assert codec.all_special_ids() == tokenizer.all_special_ids and len(codec.all_special_ids()) == 5
    assert codec.all_special_tokens() == tokenizer.all_special_tokens
    added = {i: (token.content, token.special) for i, token in tokenizer.added_tokens_decoder.items()}
    assert {i: (token.content, token.special) for i, token in codec.added_tokens().items()} == added and added
    assert codec.is_fast and not codec.has_chat_template()


def test_an_id_past_the_tokenizer_has_no_string(tokenizer):
    assert TokenCodec(tokenizer).token_strings([0, len(tokenizer) + 5]) == ["[PAD]", None]


def test_the_chat_prompt_is_the_chat_template_rendered(tokenizer):
    tokenizer = make_tokenizer()
    tokenizer.chat_template = ("{% for m in messages %}<{{ m.role }}>{{ m.content }}\n{% endfor %}"
                               "{% if add_generation_prompt %}<assistant>{% endif %}")
    messages = [{"role": "user", "content": "a cat"}]
    codec = TokenCodec(tokenizer)
    assert codec.chat_prompt(messages) == "<user>a cat\n<assistant>"
    assert codec.chat_prompt(messages) == tokenizer.apply_chat_template(messages, tokenize=False,
                                                                        add_generation_prompt=True)
    assert codec.chat_prompt(messages, add_generation_prompt=False) == "<user>a cat\n"


def test_a_loaded_model_carries_a_codec_of_its_own_tokenizer(tiny_bert):
    from inspector.core.loading import LoadedModel

    assert tiny_bert.codec.tokenizer is tiny_bert.tokenizer
    assert not hasattr(tiny_bert, "tokenizer_lock")
    assert tiny_bert.codec.input_ids(TEXTS[0]) == tiny_bert.tokenizer(TEXTS[0])["input_ids"]
    # A second model over the same tokenizer object serialises on the same lock; another tokenizer has its own.
    twin = LoadedModel(model=tiny_bert.model, tokenizer=tiny_bert.tokenizer, info=tiny_bert.info)
    assert twin.codec is not tiny_bert.codec and twin.codec._lock is tiny_bert.codec._lock
    assert TokenCodec(make_tokenizer())._lock is not tiny_bert.codec._lock


def test_threads_encoding_at_once_through_one_codec_get_each_text_s_own_ids(bundled):
    """Truncation options are set on the shared Rust tokenizer by each call: without the codec's lock, threads
    tokenising at once with different options interleave those settings (or fail "Already borrowed")."""
    codec = bundled.codec
    texts = [" ".join(["word"] * (5 + 7 * k)) + f" number {k}" for k in range(8)]
    options = [{"truncation": True, "max_length": 4 + 3 * k} if k % 2 else {"truncation": False}
               for k in range(len(texts))]
    expected = [bundled.tokenizer(text, **option)["input_ids"] for text, option in zip(texts, options)]
    assert len(set(map(tuple, expected))) == len(texts)  # every text (and option) gives its own ids
    errors: list[BaseException] = []
    mismatches: list[int] = []
    start = threading.Barrier(len(texts))

    def encode_many(k: int) -> None:
        try:
            start.wait()
            for _ in range(200):
                if codec.encode(texts[k], **options[k])["input_ids"] != expected[k]:
                    mismatches.append(k)
        except BaseException as err:  # noqa: BLE001 — any failure in a thread is this test's failure
            errors.append(err)

    threads = [threading.Thread(target=encode_many, args=(k,)) for k in range(len(texts))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors and not mismatches
