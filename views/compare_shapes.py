"""The Compare page's view of two models of different shapes on one text (issue 27): MiniLM against Gemma has no
head-to-head partners, so the page shows what is comparable (:mod:`inspector.analyses.compare_shapes`) — entropy by
relative depth and one piece's attention by piece, side by side — and says that the outputs are not."""

from __future__ import annotations

import json

import streamlit as st

from inspector import InspectorError
from inspector.analyses.compare import TextRun
from inspector.analyses.compare_shapes import compare_shapes, shapes_json
from inspector.base.i18n import t
from inspector.base.tokens import readable_token
from inspector.charts.compare_shapes import shapes_attention_chart, shapes_entropy_chart
from inspector.charts.sentences.compare import shapes_sentence, shapes_words
from inspector.core.loading import ModelInfo
from inspector.output.export import screen_title
from inspector.output.share import escape_markdown
from views import session


def comparable_head_by_head(run_a: TextRun, run_b: TextRun) -> bool:
    """Whether two runs can be compared head by head: the same layers × heads and the same tokens."""
    a, b = run_a.capture, run_b.capture
    return (a.num_layers, a.num_heads) == (b.num_layers, b.num_heads) and a.tokens == b.tokens


def render(run_a: TextRun, run_b: TextRun, info_a: ModelInfo, info_b: ModelInfo, names: tuple[str, str], lang: str,
           slide: bool) -> None:
    shape_a = (info_a.num_layers, info_a.num_heads, info_a.num_kv_heads)
    shape_b = (info_b.num_layers, info_b.num_heads, info_b.num_kv_heads)
    st.subheader(t("compare.shapes_heading", lang))
    st.caption(escape_markdown(t("compare.shapes_intro", lang, model_a=names[0], model_b=names[1],
                                 layers_a=shape_a[0], heads_a=shape_a[1], kv_a=shape_a[2],
                                 tokens_a=len(run_a.capture.tokens), layers_b=shape_b[0], heads_b=shape_b[1],
                                 kv_b=shape_b[2], tokens_b=len(run_b.capture.tokens))))
    try:
        try:
            result = compare_shapes(run_a.capture, run_b.capture, shape_a, shape_b,
                                    query=st.session_state.get("compare_shapes_query"))
        except InspectorError:
            if st.session_state.pop("compare_shapes_query", None) is None:
                raise
            result = compare_shapes(run_a.capture, run_b.capture, shape_a, shape_b)  # the text changed under a pick
    except InspectorError as err:
        session.show_error(err, lang)
        return
    pieces = list(range(len(result.segments)))
    st.selectbox(t("compare.shapes_query", lang), pieces, index=result.query, key="compare_shapes_query",
                 format_func=lambda i: f"{i}: {readable_token(result.segments[i])}")
    st.info(escape_markdown(shapes_sentence(result, lang, names)), icon=":material/compare_arrows:")
    st.altair_chart(screen_title(shapes_attention_chart(result, names, slide=slide, lang=lang)))
    st.altair_chart(screen_title(shapes_entropy_chart(result, names, slide=slide, lang=lang)))
    st.caption(t("compare.shapes_output", lang))
    st.download_button(t("compare.shapes_download", lang),
                       lambda: json.dumps(shapes_json(result, **shapes_words(result, lang)), ensure_ascii=False,
                                          allow_nan=False),
                       file_name="compare-models.json", mime="application/json", key="compare_shapes_json",
                       icon=":material/download:", on_click="ignore")
