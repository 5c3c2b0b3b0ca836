"""The Heads page's roles block (issue 29): probe every head with repeated random tokens, draw the roles map, the top
heads per role, the causal test and a clicked head's probe heatmap. One cached library call
(:func:`inspector.analyses.roles_causal.head_roles`, the same as ``python -m inspector heads --roles``);
views/heads.py calls :func:`show_roles` with one line."""

from __future__ import annotations

import json
import time
from dataclasses import replace

import streamlit as st

from inspector import InspectorError
from inspector.analyses.roles import (
    CAUSAL_ROLES,
    DEFAULT_BATCH,
    DEFAULT_SEED,
    DEFAULT_TOP_K,
    DEFAULT_WINDOW,
    ROLES,
    RolesResult,
    default_repeat,
    roles_json,
)
from inspector.analyses.roles_causal import head_roles
from inspector.base.i18n import t
from inspector.charts.base import HEAD_SELECTION, selected_head
from inspector.charts.roles import causal_chart, probe_heatmap_chart, roles_map_chart
from inspector.charts.sentences.roles import role_name, roles_words, verdict
from inspector.core.forward import backend_for
from inspector.output.export import Provenance, screen_title
from inspector.output.share import escape_markdown
from views import session
from views.export_buttons import export_buttons


@st.cache_data(max_entries=8, ttl=3600, show_spinner=False)
def cached_roles(spec: str, backend: str, repeat: int, batch: int, top_k: int, window: int, seed: int,
                 ) -> tuple[RolesResult, float]:
    started = time.perf_counter()
    result = head_roles(session.cached_model(spec), repeat=repeat, batch=batch, top_k=top_k, window=window,
                        seed=seed, backend=backend)
    return result, time.perf_counter() - started


def default_options(loaded) -> dict[str, int]:
    """The block's default probe options for ``loaded`` (the widgets' first values): the Compare page's roles maps
    ask :func:`cached_roles` with these, so a model probed on either page is probed once."""
    info = loaded.info
    return {"repeat": min(default_repeat(loaded), max(2, (info.max_positions - 1) // 2)), "batch": DEFAULT_BATCH,
            "top_k": min(DEFAULT_TOP_K, max(1, info.num_layers * info.num_heads // 2)), "window": DEFAULT_WINDOW,
            "seed": DEFAULT_SEED}


def _top_table(result: RolesResult, lang: str) -> dict[str, list]:
    columns = {name: [] for name in ("role", "rank", "head", "score", "interval")}
    for role in ROLES:
        for rank, (layer, head) in enumerate(result.top_heads(role), start=1):
            columns["role"].append(role_name(role, lang))
            columns["rank"].append(rank)
            columns["head"].append(f"L{layer}H{head}")
            columns["score"].append(float(result.scores[role][layer, head]))
            columns["interval"].append(f"{result.low[role][layer, head]:.2f}–{result.high[role][layer, head]:.2f}")
    return {t(f"roles.page.column_{name}", lang): values for name, values in columns.items()}


def show_roles(spec: str, backend: str, model_name: str, lang: str, slide: bool) -> None:
    """The roles block, in an expander (open once run): options, a run toggle, then the map, the table, the causal
    chart and the heatmap. It reads no text, so the page shows it before the (slower) text report."""
    with st.expander(t("roles.page.title", lang), expanded=bool(st.session_state.get("roles_run")),
                     icon=":material/category:"):
        _show_roles(spec, backend, model_name, lang, slide)


def _show_roles(spec: str, backend: str, model_name: str, lang: str, slide: bool) -> None:
    st.caption(t("roles.page.caption", lang))
    loaded = session.cached_model(spec)
    info = loaded.info
    columns = st.columns(5)
    limit = max(2, (info.max_positions - 1) // 2)
    defaults = default_options(loaded)
    repeat = int(columns[0].number_input(t("roles.page.repeat", lang), 2, min(limit, 256), defaults["repeat"],
                                         key="roles_repeat"))
    batch = int(columns[1].number_input(t("roles.page.batch", lang), 2, 64, defaults["batch"], key="roles_batch"))
    top_k = int(columns[2].number_input(t("roles.page.top_k", lang), 1, max(1, info.num_layers * info.num_heads // 2),
                                        defaults["top_k"], key="roles_top_k"))
    window = int(columns[3].number_input(t("roles.page.window", lang), 1, 512, defaults["window"], key="roles_window"))
    seed = int(columns[4].number_input(t("roles.page.seed", lang), 0, 2**31 - 1, defaults["seed"], key="roles_seed"))
    if not st.toggle(t("roles.page.run", lang), key="roles_run", help=t("roles.page.run_help", lang)):
        return
    try:
        with st.spinner(t("roles.page.running", lang, heads=info.num_layers * info.num_heads, batch=batch,
                          length=2 * repeat + 1)):
            result, seconds = cached_roles(spec, backend, repeat, batch, top_k, window, seed)
    except InspectorError as err:
        session.show_error(err, lang)
        return
    st.caption(t("roles.page.done", lang, seconds=f"{seconds:.1f}"))
    probe = result.probe
    provenance = Provenance(model=model_name, text=t("roles.page.probe_text", lang, batch=probe.batch,
                                                    repeat=probe.repeat, seed=probe.seed),
                            backend=backend_for(loaded, backend))
    picked = st.session_state.get("_roles_head") or result.top_heads("induction", 1)[0]
    roles_map = roles_map_chart(result, selected=picked, slide=slide, lang=lang)
    event = st.altair_chart(screen_title(roles_map), on_select="rerun", selection_mode=HEAD_SELECTION, key="roles_map")
    clicked = selected_head(getattr(event, "selection", {}) or {})
    if clicked is not None and clicked != picked:
        st.session_state["_roles_head"] = clicked
        st.rerun()
    export_buttons("head-roles", roles_map, provenance, lang, "roles_map_export")
    st.markdown("\n".join(f"- {escape_markdown(verdict(result.test(role), lang))}" for role in CAUSAL_ROLES
                          if result.test(role) is not None))
    st.markdown(f"**{t('roles.page.top_table', lang)}**")
    st.dataframe(_top_table(result, lang), hide_index=True, height=240,
                 column_config={t("roles.page.column_score", lang): st.column_config.NumberColumn(format="%.3f")})
    st.markdown(f"**{t('roles.page.causal', lang)}**")
    causal = causal_chart(result, slide=slide, lang=lang)
    st.altair_chart(screen_title(causal))
    export_buttons("head-roles-causal", causal, provenance, lang, "roles_causal_export")
    st.caption(t("roles.page.pick", lang))
    heatmap = probe_heatmap_chart(result, *picked, slide=slide, lang=lang)
    st.altair_chart(screen_title(heatmap))
    export_buttons(f"head-roles-probe-L{picked[0]}-H{picked[1]}", heatmap,
                   replace(provenance, layer=picked[0], head=picked[1]), lang, "roles_heatmap_export")
    st.download_button(t("roles.page.download_json", lang),
                       lambda: json.dumps(roles_json(result, **roles_words(result, lang)), ensure_ascii=False,
                                          allow_nan=False),
                       file_name="head-roles.json", mime="application/json", key="roles_json",
                       icon=":material/download:", on_click="ignore")
