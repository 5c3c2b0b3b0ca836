"""The Mechanism page's panels past its first grid (views/mechanism.py): the logit lens as a table, the patching
charts and the score attribution's charts, each with its exports."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from inspector.analyses.mechanism import DirectLogitAttribution, PatchingResult, ScoreAttribution
from inspector.base.i18n import t
from inspector.base.tokens import is_byte_level, readable_token
from inspector.charts.mechanism import (
    head_grid_chart,
    mlp_patch_chart,
    products_chart,
    residual_patch_chart,
    score_marginals_chart,
    score_pairs_chart,
)
from inspector.output.export import Provenance, screen_title
from inspector.output.share import escape_markdown
from views.export_buttons import export_buttons


def shown_token(token: str, tokens) -> str:
    """``token`` as the page shows it, read as byte-level BPE when the text's ``tokens`` are ("ĠRome" → "␣Rome")."""
    return readable_token(token, is_byte_level(tokens))


# The normalisations a decomposition froze (the library's names), in the reader's language.
FROZEN_KEYS = {"final norm": "mech.frozen_final", "post-attention norms": "mech.frozen_post_attention",
               "input norm": "mech.frozen_input", "query norm": "mech.frozen_query", "key norm": "mech.frozen_key"}


def frozen_text(names, lang: str) -> str:
    """The frozen normalisations, listed in ``lang`` (a name this page does not know shown as the library wrote it)."""
    return t("lessons.list_separator", lang).join(t(FROZEN_KEYS[name], lang) if name in FROZEN_KEYS else name
                                                  for name in names)


def top_heads_line(dla: DirectLogitAttribution, lang: str) -> str:
    """One sentence: the target, its value, the sum rule and the heads writing most of it."""
    target = shown_token(dla.answer_token, dla.tokens) + ("" if dla.contrast_token is None
                                                          else f" − {shown_token(dla.contrast_token, dla.tokens)}")
    heads = ", ".join(f"L{layer}H{head} ({value:+.2f})" for layer, head, value in dla.top_heads(3))
    return t("mech.dla_line", lang, target=target, value=f"{dla.target:.3f}", residual=f"{dla.residual:.1e}",
             heads=heads, frozen=frozen_text(dla.frozen, lang), position=dla.position)


def lens_table(dla: DirectLogitAttribution, lang: str) -> pd.DataFrame:
    """The logit lens: one row per layer (the embeddings first), its top tokens and the answer's rank."""
    lens = dla.lens
    rows = [t("mech.lens_embeddings", lang)] + [str(layer) for layer in range(dla.heads.shape[0])]
    tops = [", ".join(f"{shown_token(token, dla.tokens)} {prob:.0%}"
                      for token, prob in zip(tokens, probs, strict=True))
            for tokens, probs in zip(lens.top_tokens, lens.top_probs, strict=True)]
    rank = t("mech.lens_rank", lang, answer=shown_token(dla.answer_token, dla.tokens))
    return pd.DataFrame({t("mech.lens_after", lang): rows, t("mech.lens_top", lang): tops, rank: lens.answer_rank + 1})


def show_patching(result: PatchingResult, provenance: Provenance, slide: bool, lang: str) -> None:
    """The patching panel: the two runs' logit differences, heads beside MLPs, then residual × position."""
    st.markdown(escape_markdown(t("mech.patch_line", lang, clean=f"{result.clean_value:.3f}",
                                  corrupted=f"{result.corrupted_value:.3f}",
                                  answer=shown_token(result.answer_token, result.clean_tokens),
                                  contrast=shown_token(result.contrast_token, result.clean_tokens))))
    heads = head_grid_chart(result.restored(result.heads), t("chart.mech.patch_heads_title", lang),
                            [t("chart.mech.patch_heads_note", lang)], t("chart.mech.restored", lang), slide=slide,
                            lang=lang)
    mlps = mlp_patch_chart(result, slide=slide, lang=lang)
    left, right = st.columns(2)
    with left:
        st.altair_chart(screen_title(heads))
        export_buttons("mechanism-patch-heads", heads, provenance, lang, "mech_patch_heads")
    with right:
        st.altair_chart(screen_title(mlps))
        export_buttons("mechanism-patch-mlps", mlps, provenance, lang, "mech_patch_mlps")
    # Across the page: one column per token, which half of a 1000 px window could not hold.
    residual = residual_patch_chart(result, slide=slide, lang=lang)
    st.altair_chart(screen_title(residual))
    export_buttons("mechanism-patch-residual", residual, provenance, lang, "mech_patch_residual")


def show_score(result: ScoreAttribution, provenance: Provenance, slide: bool, lang: str) -> None:
    """The score panel: the sum rule, the top pairs, the marginals (with the runner-up key) and the products."""
    runner = ("" if result.runner_up is None else
              t("mech.score_runner", lang, key=result.runner_up,
                token=shown_token(result.tokens[result.runner_up], result.tokens),
                score=f"{result.runner_up_score:.3f}"))
    st.markdown(escape_markdown(t("mech.score_line", lang, score=f"{result.score:.3f}",
                                  residual=f"{result.residual:.1e}", frozen=frozen_text(result.frozen, lang)) + runner))
    # One above the other: the components' names need the page's width (half of a 1000 px window cut them).
    pairs = score_pairs_chart(result, slide=slide, lang=lang)
    st.altair_chart(screen_title(pairs))
    export_buttons("mechanism-score-pairs", pairs, provenance, lang, "mech_pairs")
    marginals = score_marginals_chart(result, slide=slide, lang=lang)
    st.altair_chart(screen_title(marginals))
    export_buttons("mechanism-score-marginals", marginals, provenance, lang, "mech_marginals")
    products = products_chart(result, slide=slide, lang=lang)
    st.altair_chart(screen_title(products))
    export_buttons("mechanism-score-products", products, provenance, lang, "mech_products")
