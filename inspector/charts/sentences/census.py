"""The census report's sentences: what a :class:`~inspector.analyses.census.summary.CensusSummary` measured and which
heads it flags, in the reader's language."""

from __future__ import annotations

import numpy as np

from inspector.analyses.census.summary import CensusSummary
from inspector.analyses.metrics import flagged_heads
from inspector.base.i18n import t
from inspector.core.loading import model_label


def census_report(summary: CensusSummary, lang: str = "en") -> list[str]:
    """The statistics part of the Heads page's health report, for a census: what was measured, the collapsed
    and diffuse heads (same thresholds and flags as :func:`inspector.charts.sentences.heads.health_report`) with
    their 95 % intervals, and the sink heads. Ablation and gradient importance are not part of a census."""
    th, flags, mean = summary.thresholds, summary.flags, summary.mean
    lines = [t("census.report_measured", lang, texts=summary.texts, tokens=summary.tokens,
               model=model_label(summary.model.get("name", summary.model.get("spec", "?")), lang),
               errors=summary.errors,
               collapsed=f"{th.collapsed:g}", diffuse=f"{th.diffuse:g}", sink=f"{th.sink:g}")]
    normalized = mean["entropy_normalized"]

    def interval(name: str, layer: int, head: int) -> str:
        low, high = summary.low[name][layer, head], summary.high[name][layer, head]
        return f"{low:.2f}–{high:.2f}" if np.isfinite(low) and np.isfinite(high) else "—"

    for kind, mask, order_key in (("collapsed", flags.collapsed, normalized),
                                  ("diffuse", flags.diffuse, -normalized)):
        named, more = flagged_heads(mask, order_key)
        if not named:
            extreme = np.nanmin(normalized) if kind == "collapsed" else np.nanmax(normalized)
            lines.append(t(f"census.report_no_{kind}", lang, threshold=f"{getattr(th, kind):g}",
                           value=f"{extreme:.2f}"))
            continue
        for layer, head in named:
            lines.append(t(f"census.report_{kind}", lang, layer=int(layer), head=int(head),
                           value=f"{normalized[layer, head]:.2f}", interval=interval("entropy_normalized", layer, head),
                           threshold=f"{getattr(th, kind):g}"))
        if more:
            lines.append(t("census.report_more", lang, count=more))
    first = mean["first_token_sink"]
    top = np.unravel_index(int(np.nanargmax(first)), first.shape) if np.isfinite(first).any() else (0, 0)
    lines.append(t("census.report_sinks", lang, sinks=int(flags.sink.sum()), heads=flags.sink.size,
                   threshold=f"{th.sink:g}", first=int((first > th.sink).sum()),
                   highest=f"{first[top]:.2f}", layer=int(top[0]), head=int(top[1]),
                   interval=interval("first_token_sink", int(top[0]), int(top[1]))))
    return lines

