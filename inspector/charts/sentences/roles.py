"""The head roles' words (:mod:`inspector.analyses.roles`): role names, each causal test's verdict and the report's
lines, in the reader's language; :func:`roles_words` gives what :func:`inspector.analyses.roles.roles_json` carries."""

from __future__ import annotations

from collections.abc import Sequence

from inspector.analyses.roles import NO_ROLE, ROLES, CausalTest, RolesResult
from inspector.base.i18n import DEFAULT_LANGUAGE, t


def role_name(role: str, lang: str = DEFAULT_LANGUAGE) -> str:
    """A role's name in ``lang`` (catalogue family ``roles.role.{role}``; ``none`` included)."""
    return t(f"roles.role.{role}", lang)


def _heads_words(heads: Sequence[tuple[int, int]]) -> str:
    return ", ".join(f"L{layer}H{head}" for layer, head in heads)


def verdict(test: CausalTest, lang: str = DEFAULT_LANGUAGE) -> str:
    """The causal test's verdict line, from its numbers."""
    values = dict(role=role_name(test.role, lang), heads=_heads_words(test.heads),
                  measure=t(f"roles.measure.{test.role}_{test.measure}", lang),
                  rise=f"{test.role_rise:+.3f}", low=f"{test.role_low:+.3f}", high=f"{test.role_high:+.3f}",
                  random=f"{test.random_mean:+.3f}", rlow=f"{test.random_low:+.3f}",
                  rhigh=f"{test.random_high:+.3f}", seeds=len(test.random_heads))
    return t("roles.verdict.causal" if test.causal else "roles.verdict.not_causal", lang, **values)


def roles_report(result: RolesResult, lang: str = DEFAULT_LANGUAGE, *, per_role: int | None = None) -> list[str]:
    """Plain-words lines: the probe, the top induction and previous-token heads with their scores and intervals,
    the count of heads per dominant role, and each causal verdict."""
    probe = result.probe
    lines = [t("roles.report.probe", lang, batch=probe.batch, repeat=probe.repeat, low=probe.id_low,
               high=probe.id_high, seed=probe.seed, window=result.window)]
    for role in ("induction", "previous"):
        heads = result.top_heads(role, per_role)
        shown = ", ".join(f"L{layer}H{head} {result.scores[role][layer, head]:.2f} "
                          f"({result.low[role][layer, head]:.2f}–{result.high[role][layer, head]:.2f})"
                          for layer, head in heads)
        lines.append(t("roles.report.top", lang, role=role_name(role, lang), heads=shown))
    counts = {role: int((result.dominant == role).sum()) for role in (*ROLES, NO_ROLE)}
    separator = t("heads.report.list_separator", lang)
    lines.append(t("roles.report.counts", lang,
                   counts=separator.join(f"{role_name(role, lang)} {n}" for role, n in counts.items())))
    lines.extend(verdict(test, lang) for test in result.tests)
    return lines




def roles_words(result: RolesResult, lang: str = DEFAULT_LANGUAGE) -> dict[str, list[str]]:
    """The words :func:`inspector.analyses.roles.roles_json` carries, in ``lang``: ``verdicts`` (one per causal test)
    and the ``report`` lines — ``roles_json(result, **roles_words(result, lang))``."""
    return {"verdicts": [verdict(test, lang) for test in result.tests], "report": roles_report(result, lang)}
