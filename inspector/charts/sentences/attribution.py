"""The words about an attribution result that other pages show beside their own (issue 44): f, the explained scalar,
in the reader's language (:func:`target_words`), and how occlusion removed a token on this model
(:func:`removal_words`) — by the model's own stand-in token, never a [MASK] a decoder does not have —, and the
integrated-gradients baseline, named by the model's own pad token (:func:`baseline_words`)."""

from __future__ import annotations

from inspector.analyses.attribution import IntegratedGradientsRun, Target
from inspector.base.i18n import DEFAULT_LANGUAGE, t
from inspector.base.tokens import readable_tokens


def target_words(target: Target, lang: str = DEFAULT_LANGUAGE) -> str:
    """f in words in ``lang``: the library's own description in English, the catalogue's sentence otherwise (the
    same words as the Attribution page's)."""
    if lang == DEFAULT_LANGUAGE:
        return target.description
    # The library marks a target that is the model's own prediction in its description; the words keep that.
    predicted = t("attribution.page.target_predicted", lang) if "prediction)" in target.description else ""
    if target.skipped:  # the top prediction was whitespace or special: the most likely word is explained instead
        predicted = t("attribution.page.target_skipped", lang, skipped=target.skipped)
    if target.kind == "class":
        return t("attribution.page.target_class", lang, label=target.label, predicted=predicted)
    if target.kind in ("masked-token", "next-token"):
        return t(f"attribution.page.target_{target.kind.replace('-', '_')}", lang,
                 token=readable_tokens([target.token])[0], predicted=predicted)
    return t("attribution.page.target_similarity", lang, reference=target.reference)


def removal_words(stand_in: str | None, lang: str = DEFAULT_LANGUAGE) -> str:
    """How a removed token was removed, in ``lang``: replaced by ``stand_in`` (the model's own token, e.g. ``<unk>``
    on a decoder without [MASK]; :func:`inspector.analyses.attribution.removal_modes`), or deleted when None."""
    if stand_in is None:
        return t("attribution.removed_by_deletion", lang)
    return t("attribution.removed_by_token", lang, token=readable_tokens([stand_in])[0])


def baseline_words(ig: IntegratedGradientsRun, lang: str = DEFAULT_LANGUAGE) -> str:
    """How the integrated-gradients baseline was built, in ``lang``: the content tokens' embeddings replaced by the
    model's own pad token's (``<pad>`` on Gemma; issue 44 item 7: it said [PAD] on every model), or by zeros."""
    if ig.pad_token is None:
        return t("attribution.page.baseline_zeros", lang)
    return t("attribution.page.baseline_pad", lang, token=readable_tokens([ig.pad_token])[0])
