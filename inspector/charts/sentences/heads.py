"""The Heads page's health report in words (:func:`health_report`), from a
:class:`~inspector.analyses.heads.HeadReport`: one catalogue sentence per finding, each citing its threshold and the
measured numbers, in the reader's language."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from inspector.analyses.heads import INDUCTION_HEAD_SCORE, HeadReport
from inspector.analyses.metrics import REPORT_HEADS_PER_KIND, TOKEN_CATEGORIES, flagged_heads
from inspector.base.i18n import DEFAULT_LANGUAGE, t
from inspector.core.loading import model_label

# A head "moves little value" through its sinks when its norm-weighted share on [CLS]/[SEP] is below this
# fraction of its attention share there (Kobayashi et al. 2020 show sink attention with small ‖f(x)‖).
_SINK_VALUE_RATIO = 0.5
_SINK_ATTENTION_SHARE = 0.3


def _percent(x: float) -> str:
    return f"{100 * x:.0f}%"


# Token categories named in words; the two special ones by the model's own tokens (HeadReport.category_name).
_CATEGORY_KEYS = {"self": "heads.category.self", "previous": "heads.category.previous",
                  "next": "heads.category.next", "punctuation": "heads.category.punctuation"}


def _against(value: float, threshold: float) -> str:
    """``value`` to 2 decimals, or to as many more (up to 6) as it takes to print on the same side of ``threshold`` as
    it lies: a head at 0.9004 reads "0.9004 > 0.9", not "0.90 > 0.9" (issue 44, seen in the walkthrough)."""
    for digits in range(2, 7):
        text = f"{value:.{digits}f}"
        if float(text) != threshold and (float(text) > threshold) == (value > threshold):
            return text
    return f"{value:.6g}"


def _head_words(layer: int, head: int, lang: str) -> str:
    return t("heads.report.head", lang, layer=layer, head=head)


def left_out_columns(report: HeadReport, lang: str) -> str | None:
    """The sentence under the "where the attention goes" table naming each column left out of it because it is 0 by
    construction on this model (:meth:`HeadReport.category_shown`) and why; None when every column is shown. (Issue
    44: it said "a special-token column" without saying which, and ended on ";" when only "next" was left out.)"""
    reasons = [t(key, lang) for key, category in (("heads.where_hidden_causal", "next"),
                                                  ("heads.where_hidden_start", TOKEN_CATEGORIES[0]),
                                                  ("heads.where_hidden_end", TOKEN_CATEGORIES[1]))
               if not report.category_shown(category)]
    return t("heads.where_hidden", lang, columns=t("heads.where_hidden_separator", lang).join(reasons)) if reasons \
        else None


def measure_words(report: HeadReport, lang: str) -> str:
    """The output measure in words. English keeps :func:`output_change_name`'s wording — the one the JSON and
    the charts carry — so the English report reads as it always has; other languages take the catalogue's."""
    return report.change_name if lang == DEFAULT_LANGUAGE else t(f"measure.{report.output_kind}", lang)


def _where_it_looks(report: HeadReport, layer: int, head: int, lang: str) -> str:
    mass = report.statistics.token_mass[layer, head]
    top = int(np.argmax(mass))
    category = TOKEN_CATEGORIES[top]
    target = (t(_CATEGORY_KEYS[category], lang) if category in _CATEGORY_KEYS
              else t("heads.category.token", lang, token=report.category_name(category)))
    return t("heads.report.looks", lang, share=_percent(mass[top]), target=target)


def _ablation_words(report: HeadReport, layer: int, head: int, lang: str) -> str:
    change = float(report.statistics.importance_ablation[layer, head])
    ranks = np.argsort(-report.statistics.importance_ablation.ravel(), kind="stable")
    rank = int(np.nonzero(ranks == layer * report.num_heads + head)[0][0]) + 1
    return t("heads.report.ablation", lang, mode=t(f"heads.mode.{report.ablation_mode}", lang),
             change=f"{change:.4f}", measure=measure_words(report, lang), rank=rank, total=ranks.size)


def _induction_words(induction: np.ndarray, lang: str = DEFAULT_LANGUAGE) -> str:
    """One line on induction heads (Olsson et al. 2022) from the (L, H) induction scores (NaN: nothing repeats)."""
    if np.isnan(induction).all():
        return t("heads.report.no_repeats", lang)
    scores = np.where(np.isnan(induction), -np.inf, induction)
    order = np.argsort(-scores.ravel(), kind="stable")
    found = [int(flat) for flat in order if scores.flat[flat] > INDUCTION_HEAD_SCORE]
    if not found:
        top = np.unravel_index(int(order[0]), induction.shape)
        return t("heads.report.no_induction", lang, threshold=_percent(INDUCTION_HEAD_SCORE),
                 highest=f"{induction[top]:.2f}", head=_head_words(int(top[0]), int(top[1]), lang))
    heads = induction.shape[1]
    named = t("heads.report.list_separator", lang).join(
        t("heads.report.scored_head", lang, head=_head_words(flat // heads, flat % heads, lang),
          score=f"{induction.flat[flat]:.2f}") for flat in found[:REPORT_HEADS_PER_KIND])
    more = (t("heads.report.and_more_inline", lang, n=len(found) - REPORT_HEADS_PER_KIND)
            if len(found) > REPORT_HEADS_PER_KIND else "")
    return t("heads.report.induction", lang, threshold=f"{INDUCTION_HEAD_SCORE:g}", named=named, more=more)


# A pair of heads is "redundant" when ablating both costs at most REDUNDANT_FACTOR × the larger single cost, "not
# redundant" when it costs at least ADDITIVE_FACTOR × the two added, "partly" in between. The ablations are single
# deterministic forwards (no sampling), so the evidence is the margin to these factors, which the sentence states.
REDUNDANT_FACTOR = 1.25
ADDITIVE_FACTOR = 0.9


def pair_verdict(both: float, first: float, second: float, lang: str = DEFAULT_LANGUAGE) -> tuple[str, str]:
    """(catalogue key, sentence in ``lang``) of what ablating a pair together says about its redundancy, with the
    thresholds it was judged by."""
    larger, added = max(first, second), first + second
    if both <= REDUNDANT_FACTOR * larger:
        key = "heads.report.pair_redundant"
    elif both < ADDITIVE_FACTOR * added:
        key = "heads.report.pair_partly_redundant"
    else:
        key = "heads.report.pair_not_redundant"
    return key, t(key, lang, factor=f"{REDUNDANT_FACTOR:g}", limit=f"{REDUNDANT_FACTOR * larger:.4f}",
                  additive=f"{ADDITIVE_FACTOR:g}", total=f"{ADDITIVE_FACTOR * added:.4f}")


def health_report(report: HeadReport, lang: str = DEFAULT_LANGUAGE, *,
                  per_kind: int | None = REPORT_HEADS_PER_KIND) -> list[str]:
    """The health report in plain words, in ``lang`` (:data:`inspector.base.i18n.LANGUAGES`): one line per finding,
    each citing its threshold and numbers, every line a catalogue sentence filled with the measured numbers. At
    most ``per_kind`` collapsed and diffuse heads each, then "… and N more." (``per_kind=None``: every head)."""
    stats, thresholds, flags = report.statistics, report.thresholds, report.flags
    n_texts = len(report.texts)
    measure = measure_words(report, lang)
    lines = [t("heads.report.measured", lang,
               texts=t("heads.report.texts_one" if n_texts == 1 else "heads.report.texts_many", lang, n=n_texts),
               tokens=sum(len(tokens) for tokens in report.tokens), model=model_label(report.info.name, lang),
               collapsed=f"{thresholds.collapsed:g}", diffuse=f"{thresholds.diffuse:g}", sink=f"{thresholds.sink:g}")]

    def name(layer: int, head: int) -> str:
        return _head_words(int(layer), int(head), lang)

    def listed(mask: np.ndarray, key: np.ndarray, describe: Callable[[int, int], str], none: str) -> None:
        named, more = flagged_heads(mask, key, per_kind)
        if not named:
            lines.append(none)
            return
        lines.extend(describe(layer, head) for layer, head in named)
        if more:
            lines.append(t("heads.report.and_more", lang, n=more))

    listed(flags.collapsed, stats.entropy_normalized,
           lambda layer, head: t("heads.report.collapsed", lang, head=name(layer, head),
                          entropy=_against(stats.entropy_normalized[layer, head], thresholds.collapsed),
                          threshold=f"{thresholds.collapsed:g}",
                          looks=_where_it_looks(report, layer, head, lang),
                          ablation=_ablation_words(report, layer, head, lang)),
           t("heads.report.no_collapsed", lang, threshold=f"{thresholds.collapsed:g}",
             lowest=f"{np.nanmin(stats.entropy_normalized):.2f}"))
    listed(flags.diffuse, -stats.entropy_normalized,
           lambda layer, head: t("heads.report.diffuse", lang, head=name(layer, head),
                          entropy=_against(stats.entropy_normalized[layer, head], thresholds.diffuse),
                          threshold=f"{thresholds.diffuse:g}",
                          ablation=_ablation_words(report, layer, head, lang)),
           t("heads.report.no_diffuse", lang, threshold=f"{thresholds.diffuse:g}",
             highest=f"{np.nanmax(stats.entropy_normalized):.2f}"))

    first = stats.first_token_sink
    lines.append(t("heads.report.sinks", lang, sinks=int(flags.sink.sum()), heads=flags.sink.size,
                   threshold=f"{thresholds.sink:g}", first=int((first > thresholds.sink).sum()),
                   highest=f"{first.max():.2f}", head=name(*np.unravel_index(int(first.argmax()), first.shape))))
    special_attention = stats.token_mass[..., :2].sum(axis=-1)
    special_value = stats.norm_token_mass[..., :2].sum(axis=-1)
    idle = (special_attention > _SINK_ATTENTION_SHARE) & (special_value < _SINK_VALUE_RATIO * special_attention)
    specials = "/".join(dict.fromkeys(token for tokens in report.special_tokens for token in tokens))
    if not specials:  # no special token in the texts (SmolLM2 adds none): nothing to send attention to
        lines.append(t("heads.report.no_special_tokens", lang))
    else:
        listed(idle, special_value - special_attention,
               lambda layer, head: t("heads.report.idle_sink", lang, head=name(layer, head), specials=specials,
                                     share=_percent(_SINK_ATTENTION_SHARE),
                              attention=_percent(special_attention[layer, head]),
                              value=_percent(special_value[layer, head]),
                              ablation=_ablation_words(report, layer, head, lang)),
               t("heads.report.no_idle_sink", lang, share=_percent(_SINK_ATTENTION_SHARE), specials=specials))
    lines.append(_induction_words(stats.induction, lang))

    ablation = stats.importance_ablation
    top_ablation = np.unravel_index(int(ablation.argmax()), ablation.shape)
    top_gradient = np.unravel_index(int(report.importance_gradient.argmax()), ablation.shape)
    from scipy.stats import spearmanr

    if np.ptp(ablation) > 0 and np.ptp(report.importance_gradient) > 0:
        rho = spearmanr(ablation.ravel(), report.importance_gradient.ravel()).statistic
        agreement = t("heads.report.rankings_agree", lang, rho=f"{rho:.2f}")
    else:
        agreement = t("heads.report.rankings_incomparable", lang)
    lines.append(t("heads.report.most_important", lang, ablation_head=name(*top_ablation), measure=measure,
                   ablation=f"{ablation[top_ablation]:.4f}", gradient_head=name(*top_gradient),
                   gradient=f"{report.importance_gradient[top_gradient]:.2f}", agreement=agreement))
    pairs = report.pairs
    for p in range(min(2, len(pairs.heads))):
        a, b = (report.head_name(x) for x in pairs.heads[p])
        _, verdict = pair_verdict(pairs.change_both[p], pairs.change_first[p], pairs.change_second[p], lang)
        lines.append(t("heads.report.pair", lang, a=a, b=b, js=f"{pairs.js_divergence[p]:.3f}",
                       first=f"{pairs.change_first[p]:.4f}", second=f"{pairs.change_second[p]:.4f}",
                       both=f"{pairs.change_both[p]:.4f}", verdict=verdict))
    curve = report.pruning
    half = int(np.argmin(np.abs(curve.fraction - 0.5)))
    lines.append(t("heads.report.pruning", lang, removed=curve.heads_removed[half], heads=curve.order.size,
                   share=_percent(curve.fraction[half]), half=f"{curve.change[half]:.4f}",
                   everything=f"{curve.change[-1]:.4f}", measure=measure))
    return lines


