"""The one door to a model's tokenizer (issue 39, item 2): every text → ids and ids → text call of the library
goes through a :class:`TokenCodec`, ``loaded.codec``.

A loaded model is shared by every Streamlit session and every worker thread, and a Hugging Face fast tokenizer is
not safe to call from two threads at once: a call with truncation or padding options sets them on the shared Rust
tokenizer first, and a second thread inside the tokenizer meanwhile fails with "Already borrowed" or reads the
other call's settings. Each method here holds the tokenizer's lock for the whole tokenizer call, so no caller
takes a lock by hand and none can forget to. The lock belongs to the tokenizer, not to one codec: two loaded models
built over one tokenizer object (a test's copy of a model, a model rewrapped) serialise on the same lock. The
special tokens are read here too, under the lock: ``all_special_ids``, ``added_tokens_decoder`` and every
``…_token_id`` look like attributes but call into the Rust tokenizer (``convert_tokens_to_ids``,
``get_added_tokens_decoder``), so they can fail the same way beside another thread's encoding.

Every method returns exactly what the tokenizer's own call returns (the same ids, the same token strings): the
codec adds the lock and names, never a change of behaviour. ``tests/test_token_codec.py`` holds that and scans the
library and the pages for any tokenizer call made elsewhere.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Sequence

_LOCKS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # tokenizer → the one lock of its calls
_LOCKS_GUARD = threading.Lock()


def _lock_of(tokenizer) -> threading.Lock:
    """The lock every codec of ``tokenizer`` holds (a fresh one for a tokenizer that cannot be weakly referenced)."""
    with _LOCKS_GUARD:
        try:
            return _LOCKS.setdefault(tokenizer, threading.Lock())
        except TypeError:
            return threading.Lock()


def _calls_rust_directly(tokenizer) -> bool:
    """Whether ``tokenizer(text, …)`` on one text is transformers' fast-tokenizer call unchanged — its own
    ``__call__`` and ``_encode_plus``, no input/target modes — so that :meth:`TokenCodec.encode_for_model` may call the
    Rust tokenizer as that call would (answer cached per class)."""
    cls = type(tokenizer)
    found = _DIRECT.get(cls)
    if found is None:
        try:
            from transformers.tokenization_utils_base import PreTrainedTokenizerBase
            from transformers.tokenization_utils_tokenizers import TokenizersBackend
        except ImportError:  # another transformers layout: always its own call
            found = False
        else:
            found = (issubclass(cls, TokenizersBackend) and cls.__call__ is PreTrainedTokenizerBase.__call__
                     and cls._encode_plus is TokenizersBackend._encode_plus
                     and cls._convert_encoding is TokenizersBackend._convert_encoding
                     and not hasattr(cls, "_switch_to_input_mode"))
        _DIRECT[cls] = found
    return found and not getattr(tokenizer, "_in_target_context_manager", False) and hasattr(tokenizer, "_tokenizer")


_DIRECT: dict[type, bool] = {}


class TokenCodec:
    """A tokenizer (``PreTrainedTokenizerBase``) whose every call is serialised by the tokenizer's one lock.

    ``tokenizer`` is the wrapped tokenizer itself (a cache's key, a prepared folder's save); call it and read its
    special tokens only through the methods below."""

    def __init__(self, tokenizer) -> None:
        self.tokenizer = tokenizer
        self._lock = _lock_of(tokenizer)

    def __repr__(self) -> str:
        return f"TokenCodec({type(self.tokenizer).__name__})"

    # -------------------------------------------------------------------------------------------- text → ids

    def encode(self, text: str, **options):
        """The tokenizer's ``BatchEncoding`` of one ``text``: ``tokenizer(text, **options)`` (``return_tensors``,
        ``truncation``, ``max_length``, ``add_special_tokens``, ``return_offsets_mapping`` … as the tokenizer
        takes them; its ``word_ids()`` where the tokenizer is fast)."""
        with self._lock:
            return self.tokenizer(text, **options)

    def encode_for_model(self, text: str, *, add_special_tokens: bool = True, split_special_tokens: bool = False):
        """:meth:`encode` of one ``text`` as a model's input takes it: ``encode(text, truncation=False,
        verbose=False, return_special_tokens_mask=True, return_offsets_mapping=is_fast, add_special_tokens=…,
        split_special_tokens=…)``, the same ``BatchEncoding`` of lists. Where transformers' call would only hand the
        text to the Rust tokenizer and copy its answer out (:func:`_calls_rust_directly`), the Rust tokenizer is
        called here, as transformers calls it — its truncation and padding off, special-token strings split or
        not — which spares a third of the call (tests/test_token_codec.py holds the answers equal)."""
        tokenizer = self.tokenizer
        if not _calls_rust_directly(tokenizer):
            return self.encode(text, truncation=False, verbose=False, return_special_tokens_mask=True,
                               return_offsets_mapping=self.is_fast, add_special_tokens=add_special_tokens,
                               split_special_tokens=split_special_tokens)
        from transformers import BatchEncoding

        rust = tokenizer._tokenizer
        with self._lock:
            if rust.truncation is not None:
                rust.no_truncation()
            if rust.padding is not None:
                rust.no_padding()
            if rust.encode_special_tokens != split_special_tokens:
                rust.encode_special_tokens = split_special_tokens
            encoding = rust.encode(text, add_special_tokens=add_special_tokens)
        names = tokenizer.model_input_names
        fields = {"input_ids": encoding.ids}
        if "token_type_ids" in names:
            fields["token_type_ids"] = encoding.type_ids
        if "attention_mask" in names:
            fields["attention_mask"] = encoding.attention_mask
        fields["special_tokens_mask"] = encoding.special_tokens_mask
        fields["offset_mapping"] = encoding.offsets
        return BatchEncoding(fields, [encoding])

    def encode_batch(self, texts: Sequence[str], **options):
        """The tokenizer's ``BatchEncoding`` of ``texts`` in one call (a fast tokenizer encodes the list in one go):
        ``input_ids[k]`` is what :meth:`encode` gives ``texts[k]`` with the same options (unpadded lists unless
        ``options`` pad)."""
        with self._lock:
            return self.tokenizer(list(texts), **options)

    def input_ids(self, text: str, *, add_special_tokens: bool = True) -> list[int]:
        """The ids of ``text`` as a list; ``add_special_tokens=False`` for a word's own ids (a target token)."""
        return list(self.encode(text, add_special_tokens=add_special_tokens)["input_ids"])

    def word_ids(self, text: str) -> list[int | None]:
        """Per token of ``text`` (special tokens added), the index of the word it was split from, None for special
        tokens (a fast tokenizer's ``word_ids()``; a slow one raises ``ValueError``)."""
        return self.encode(text).word_ids()

    # -------------------------------------------------------------------------------------------- the vocabulary

    def vocabulary_id(self, token: str) -> int:
        """The id of the vocabulary entry ``token`` as written (``"ĠRome"``, ``"[MASK]"``): ``convert_tokens_to_ids``
        — the unknown token's id (None where the tokenizer has no unknown token) for a string that is no entry."""
        with self._lock:
            return self.tokenizer.convert_tokens_to_ids(token)

    def vocabulary_ids(self, tokens: Sequence[str]) -> list[int]:
        """:meth:`vocabulary_id` of each of ``tokens``, in one call."""
        with self._lock:
            return list(self.tokenizer.convert_tokens_to_ids(list(tokens)))

    def token_strings(self, ids: Sequence[int]) -> list[str | None]:
        """The tokenizer's own token strings of ``ids`` (``convert_ids_to_tokens``: ``Ġ`` and ``▁`` kept, special
        tokens included); None for an id the tokenizer has no string for (a vocabulary padded past the tokenizer's)."""
        with self._lock:
            return list(self.tokenizer.convert_ids_to_tokens([int(i) for i in ids]))

    def encoded_token_strings(self, encoding, ids: Sequence[int]) -> list[str | None]:
        """:meth:`token_strings` of ``ids``, the first text of ``encoding`` (this codec's :meth:`encode`): a fast
        tokenizer's encoding carries them already (its ``tokens()``, the same strings — tests/test_token_codec.py
        compares them on the bundled tokenizers), which spares a call per id; else the tokenizer is asked."""
        carried = encoding.tokens(0) if getattr(encoding, "encodings", None) else None
        return list(carried) if carried is not None and len(carried) == len(ids) else self.token_strings(ids)

    def token_string(self, token_id: int) -> str | None:
        """:meth:`token_strings` of one id."""
        return self.token_strings([token_id])[0]

    # -------------------------------------------------------------------------------------------- special tokens

    def special_token(self, role: str) -> str | None:
        """The tokenizer's ``role`` token as written (``role``: ``"mask"``, ``"unk"``, ``"pad"``, ``"bos"``,
        ``"cls"``, ``"eos"``; its ``{role}_token``), None where it has none."""
        with self._lock:
            return getattr(self.tokenizer, f"{role}_token", None)

    def special_token_id(self, role: str) -> int | None:
        """The id of :meth:`special_token` (its ``{role}_token_id``), None where the tokenizer has none."""
        with self._lock:
            return getattr(self.tokenizer, f"{role}_token_id", None)

    def all_special_ids(self) -> list[int]:
        """Every special token's id (``all_special_ids``); [] where the tokenizer lists none."""
        with self._lock:
            return list(getattr(self.tokenizer, "all_special_ids", None) or [])

    def all_special_tokens(self) -> list[str]:
        """Every special token as written (``all_special_tokens``); [] where the tokenizer lists none."""
        with self._lock:
            return list(getattr(self.tokenizer, "all_special_tokens", None) or [])

    def added_tokens(self) -> dict:
        """The tokens added to the vocabulary, id → ``AddedToken`` (its ``content`` and whether it is ``special``):
        ``added_tokens_decoder``; {} where the tokenizer has none."""
        with self._lock:
            return dict(getattr(self.tokenizer, "added_tokens_decoder", None) or {})

    @property
    def is_fast(self) -> bool:
        """Whether the tokenizer is a fast (Rust) one: it gives offsets and ``word_ids``."""
        return bool(getattr(self.tokenizer, "is_fast", False))

    def has_chat_template(self) -> bool:
        """Whether the tokenizer carries a chat template (:meth:`chat_prompt` renders it)."""
        return bool(getattr(self.tokenizer, "chat_template", None))

    # -------------------------------------------------------------------------------------------- ids → text

    def decode(self, ids: Sequence[int], *, skip_special_tokens: bool = False) -> str:
        """The text ``ids`` spell (``decode``; special tokens kept unless ``skip_special_tokens``)."""
        with self._lock:
            return str(self.tokenizer.decode([int(i) for i in ids], skip_special_tokens=skip_special_tokens))

    def chat_prompt(self, messages: Sequence[dict], *, add_generation_prompt: bool = True) -> str:
        """``messages`` (``{"role": …, "content": …}``) rendered as text by the tokenizer's chat template, the
        assistant's turn opened when ``add_generation_prompt`` (``apply_chat_template(tokenize=False)``;
        transformers renders it in a sandboxed Jinja environment, so the template runs no Python)."""
        with self._lock:
            return str(self.tokenizer.apply_chat_template(list(messages), tokenize=False,
                                                          add_generation_prompt=add_generation_prompt))
