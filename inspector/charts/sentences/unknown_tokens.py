"""The warning a page and the command line show when a model cannot read a text (issue 17): how many tokens became
its unknown token, what that means and which models read the text, from
:class:`~inspector.analyses.unknown_tokens.UnknownTokens`."""

from __future__ import annotations

from inspector.analyses.unknown_tokens import UNKNOWN_SHARE_LIMIT, UnknownTokens, unknown_tokens
from inspector.base.i18n import t
from inspector.core.forward import EncodedText
from inspector.core.loading import LoadedModel, model_label


def unknown_tokens_warning(found: UnknownTokens, lang: str = "en") -> str:
    """The warning, in ``lang``: how many tokens are unknown, what that means, which models read the text (the
    model named as :func:`inspector.core.loading.model_label` names it in ``lang``)."""
    return t("unknown.warning", lang, unknown=found.unknown, total=found.total, share=f"{found.share:.0%}",
             model=model_label(found.model, lang), limit=f"{UNKNOWN_SHARE_LIMIT:.0%}",
             script=t(f"unknown.script.{found.script}", lang),
             models=", ".join(found.suggested) or "—")


def unreadable_text_warning(loaded: LoadedModel, text: str, lang: str = "en",
                            encoded: EncodedText | None = None) -> str | None:
    """The warning for ``text`` when the model cannot read it
    (:attr:`~inspector.analyses.unknown_tokens.UnknownTokens.too_many`), else None. ``encoded``: ``text``
    already tokenised (:func:`~inspector.analyses.unknown_tokens.unknown_tokens`)."""
    found = unknown_tokens(loaded, text, encoded)
    return unknown_tokens_warning(found, lang) if found is not None and found.too_many else None
