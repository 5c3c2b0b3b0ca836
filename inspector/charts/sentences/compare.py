"""The Compare page's sentence (:func:`comparison_sentence`): what moved between the two texts' attention and their
outputs, composed from a :class:`~inspector.analyses.compare.Comparison`'s numbers in the reader's language; and for
two models of different shapes (:mod:`inspector.analyses.compare_shapes`), :func:`shapes_sentence`."""

from __future__ import annotations

import numpy as np

from inspector.analyses.compare import JS_THRESHOLD, Comparison
from inspector.analyses.compare_shapes import ShapesComparison
from inspector.base.i18n import t
from inspector.base.tokens import readable_tokens


def _number(value: float, digits: int = 3) -> str:
    return f"{value:.{digits}f}"


def comparison_sentence(comparison: Comparison, lang: str = "en") -> str:
    """One sentence composed from the numbers, in ``lang`` (the catalogue's compare.* entries)."""
    total = comparison.num_layers * comparison.num_heads
    query = comparison.token_label(comparison.query)
    layer, head = (int(x) for x in comparison.ranked[0])
    if comparison.key_shift is not None:
        key1, key2 = (comparison.token_label(k) for k in comparison.keys)
        best = np.unravel_index(int(np.argmax(comparison.key_shift)), comparison.key_shift.shape)
        attention = t("compare.sentence_keys", lang, moved=comparison.moved_heads, total=total, query=query,
                      key1=key1, key2=key2, layer=int(best[0]), head=int(best[1]),
                      shift=_number(float(comparison.key_shift[best])))
    else:
        attention = t("compare.sentence_js", lang, moved=comparison.moved_heads, total=total, query=query,
                      threshold=JS_THRESHOLD, layer=layer, head=head, js=_number(float(comparison.js[layer, head])))
    out = comparison.output
    if out.kind is None:
        output = t("compare.sentence_output_none", lang)
    elif out.kind == "embedding":
        output = t("compare.sentence_output_embedding", lang, change=_number(out.change, 4))
    else:
        key = "compare.sentence_output_distribution" if out.kind == "distribution" else "compare.sentence_output_logits"
        top_a, top_b = readable_tokens((out.top_a[0][0], out.top_b[0][0]))
        output = t(key, lang, change=_number(out.change, 4), top_a=top_a, top_b=top_b,
                   delta=f"{out.probability_change:+.3f}")
    return t("compare.sentence", lang, attention=attention, output=output)


def shapes_sentence(result: ShapesComparison, lang: str = "en", names: tuple[str, str] | None = None) -> str:
    """One sentence from the numbers, in ``lang``; ``names``: how the two models are named (default: as they are)."""
    name_a, name_b = names or (result.model_a, result.model_b)
    top_a = int(np.argmax(result.attention_a))
    top_b = int(np.argmax(result.attention_b))
    special = t("compare.shapes_special", lang)

    def segment(index: int) -> str:
        return special if index == len(result.segments) else result.segments[index]

    return t("compare.shapes_sentence", lang, model_a=name_a, model_b=name_b,
             shape_a="×".join(str(x) for x in result.shape_a[:2]), shape_b="×".join(str(x) for x in result.shape_b[:2]),
             query=result.segments[result.query], top_a=segment(top_a), top_b=segment(top_b),
             share_a=f"{result.attention_a[top_a]:.0%}", share_b=f"{result.attention_b[top_b]:.0%}",
             js=f"{result.js:.3f}")


def shapes_words(result: ShapesComparison, lang: str = "en") -> dict[str, str]:
    """What :func:`inspector.analyses.compare_shapes.shapes_json` carries in words: ``shapes_json(result,
    **shapes_words(result, lang))``."""
    return {"note": t("compare.shapes_output", lang), "sentence": shapes_sentence(result, lang)}
