"""How the mechanism results draw themselves in a notebook (issue 42; :mod:`inspector.analyses.mechanism`):
direct logit attribution with its logit lens, activation patching, and score attribution of one cell.

Each shows the summary a reader needs first — what was decomposed, the sum-rule residual, the largest parts — with
every token escaped (:func:`inspector.notebook.displays.summary`), then its main chart: :data:`CHARTS` are the views
:func:`inspector.notebook.show` draws, the Mechanism page's own charts (:mod:`inspector.charts.mechanism`).
"""

from __future__ import annotations

import numpy as np

from inspector.analyses.mechanism.logits import DirectLogitAttribution, LogitLens
from inspector.analyses.mechanism.patching import PatchingResult
from inspector.analyses.mechanism.scores import ScoreAttribution
from inspector.base import display
from inspector.base.i18n import t
from inspector.base.tokens import readable_tokens
from inspector.charts import mechanism as charts
from inspector.notebook.displays import drawn, summary, views_line
from inspector.notebook.views import register_views

# The largest parts a summary names.
TOP_PARTS = 3


def _largest_heads(values: np.ndarray, count: int = TOP_PARTS) -> str:
    """The ``count`` heads of a (layers, heads) array with the largest |value|: "L3H1 +2.14, …"."""
    order = np.argsort(-np.abs(values), axis=None)[:count]
    return ", ".join(f"L{layer}H{head} {values[layer, head]:+.3g}"
                     for layer, head in (np.unravel_index(index, values.shape) for index in order))


def _shown(tokens, position: int) -> str:
    return readable_tokens(tokens)[position]


def _logit_attribution(d: DirectLogitAttribution) -> display.Drawing:
    target = repr(d.answer_token) + (f" − {d.contrast_token!r}" if d.contrast_token is not None else "")
    facts = [("target", f"logit {target} at position {d.position} ({_shown(d.tokens, d.position)}) = {d.target:.4g}"),
             ("largest heads", _largest_heads(d.heads)),
             ("MLPs", f"{float(d.mlps.sum()):+.4g} in all"), ("sum-rule residual", f"{d.residual:.2e}"),
             ("frozen", ", ".join(d.frozen) or "nothing"),
             ("logit lens", f"top after the last layer: {d.lens.top_tokens[-1, 0]!r}")]
    return drawn(d, summary("Direct logit attribution", target, [*facts, *views_line(d)], d.tokens))


def _logit_lens(lens: LogitLens) -> display.Drawing:
    first = next((row for row, rank in enumerate(lens.answer_rank) if rank == 0), None)
    facts = [("rows", f"{lens.top_ids.shape[0]} (the embeddings, then each layer)"),
             ("top token after the last layer", repr(str(lens.top_tokens[-1, 0]))),
             ("answer ranked first from row", "never" if first is None else first)]
    return drawn(lens, summary("Logit lens", "", [*facts, *views_line(lens)]))


def _patching(p: PatchingResult) -> display.Drawing:
    restored = p.restored(p.heads)
    facts = [("logit difference", f"{p.answer_token!r} − {p.contrast_token!r}: clean {p.clean_value:.4g}, "
                                  f"corrupted {p.corrupted_value:.4g}"),
             ("heads restoring most (0 = corrupted, 1 = clean)", _largest_heads(restored)),
             ("layers × heads", " × ".join(map(str, p.heads.shape))),
             ("corrupted text", " ".join(readable_tokens(p.corrupted_tokens)))]
    return drawn(p, summary("Activation patching", f"{p.answer_token!r} vs {p.contrast_token!r}",
                            [*facts, *views_line(p)], p.clean_tokens))


def _score(a: ScoreAttribution) -> display.Drawing:
    flat = np.argsort(-np.abs(a.table), axis=None)[:TOP_PARTS]
    pairs = ", ".join(f"{a.components[q]} × {a.components[k]} {a.table[q, k]:+.3g}"
                      for q, k in (np.unravel_index(index, a.table.shape) for index in flat))
    cell = (f"layer {a.layer} head {a.head}: {_shown(a.tokens, a.query_position)} → "
            f"{_shown(a.tokens, a.key_position)}")
    facts = [("score", f"{a.score:.4g} (scale {a.scale:.3g}{', rotary' if a.rotary else ''})"),
             ("largest query × key parts", pairs), ("sum-rule residual", f"{a.residual:.2e}")]
    return drawn(a, summary("Score attribution", cell, [*facts, *views_line(a)], a.tokens))


def _dla_heads(d: DirectLogitAttribution, layer, head, lang: str):
    return charts.head_grid_chart(d.heads, t("chart.mech.dla_title", lang), [t("chart.mech.dla_note", lang)],
                                  t("chart.mech.logit", lang), lang=lang)


def _patched_heads(p: PatchingResult, layer, head, lang: str):
    return charts.head_grid_chart(p.restored(p.heads), t("chart.mech.patch_heads_title", lang),
                                  [t("chart.mech.patch_heads_note", lang)], t("chart.mech.restored", lang), lang=lang)


RENDERERS = {DirectLogitAttribution: _logit_attribution, LogitLens: _logit_lens, PatchingResult: _patching,
             ScoreAttribution: _score}
# The chart views of each mechanism result, the main one first (the Mechanism page's charts).
CHARTS: dict[type, dict] = {
    DirectLogitAttribution: {"heads": _dla_heads},
    PatchingResult: {"heads": _patched_heads,
                     "residual": lambda p, layer, head, lang: charts.residual_patch_chart(p, lang=lang),
                     "mlps": lambda p, layer, head, lang: charts.mlp_patch_chart(p, lang=lang)},
    ScoreAttribution: {"pairs": lambda a, layer, head, lang: charts.score_pairs_chart(a, lang=lang),
                       "marginals": lambda a, layer, head, lang: charts.score_marginals_chart(a, lang=lang),
                       "products": lambda a, layer, head, lang: charts.products_chart(a, lang=lang)},
}

for _kind, _render in RENDERERS.items():
    display.register(_kind, _render)
for _kind, _views in CHARTS.items():
    register_views(_kind, _views)
