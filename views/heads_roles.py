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
    DEFAULT_SEEDS,
    DEFAULT_TOP_K,
    DEFAULT_WINDOW,
    MAX_BATCH,
    ROLES,
    RolesResult,
    default_repeat,
    roles_json,
)
from inspector.analyses.roles_causal import head_roles
from inspector.base.errors import error_text
from inspector.base.i18n import notice_text, t
from inspector.charts.base import HEAD_SELECTION, selected_head
from inspector.charts.roles import causal_chart, probe_heatmap_chart, roles_map_chart
from inspector.charts.sentences.roles import role_name, roles_words, verdict
from inspector.core.forward import backend_for
from inspector.output.export import Provenance, screen_title
from inspector.output.share import escape_markdown
from inspector.output.share_roles import decode_roles, encode_roles, link_options
from inspector.serving.option_plan import MIN_BATCH, MIN_REPEAT, plan_roles, roles_ranges
from views import pages, session
from views.export_buttons import export_buttons


@st.cache_data(max_entries=8, ttl=3600, show_spinner=False)
def cached_roles(spec: str, backend: str, repeat: int, batch: int, top_k: int, window: int, seed: int,
                 ) -> tuple[RolesResult, float]:
    started = time.perf_counter()
    result = head_roles(session.cached_model(spec), repeat=repeat, batch=batch, top_k=top_k, window=window,
                        seed=seed, backend=backend)
    return result, time.perf_counter() - started


# Option → its widget's key.
OPTION_KEYS = {"repeat": "roles_repeat", "batch": "roles_batch", "top_k": "roles_top_k", "window": "roles_window",
               "seed": "roles_seed"}
MAX_SEED = 2**31 - 1


def default_options(loaded) -> dict[str, int]:
    """The block's default probe options for ``loaded`` (the widgets' first values), inside the ranges this model and
    this server allow (:func:`inspector.serving.option_plan.roles_ranges`): the Compare page's roles maps ask
    :func:`cached_roles` with these, so a model probed on either page is probed once."""
    info = loaded.info
    ranges = roles_ranges(info, session.hosting_policy(), default_repeat(loaded), seeds=DEFAULT_SEEDS,
                          max_batch=DEFAULT_BATCH)
    return {"repeat": max(MIN_REPEAT, min(default_repeat(loaded), ranges.max_repeat)),
            "batch": max(MIN_BATCH, min(DEFAULT_BATCH, ranges.max_batch)),
            "top_k": min(DEFAULT_TOP_K, max(1, info.num_layers * info.num_heads // 2)), "window": DEFAULT_WINDOW,
            "seed": DEFAULT_SEED}


def _bounded(name: str, low: int, high: int, default: int, model: str, lang: str) -> None:
    """Keep option ``name``'s widget value (typed, carried by a share link, or left from another model) in
    [``low``, ``high``] before its widget is drawn: a value outside is clamped, with a notice saying so."""
    key = OPTION_KEYS[name]
    value = st.session_state.get(key, default)
    value = default if isinstance(value, bool) or not isinstance(value, (int, float)) else int(value)
    kept = min(max(value, low), high)
    if kept != value:
        st.info(t("option.clamped", lang, option=t(f"roles.page.{name}", lang), asked=f"{value:,}",
                  low=f"{low:,}", high=f"{high:,}", kept=f"{kept:,}", model=model), icon=":material/tune:")
    st.session_state[key] = kept


def _restore_link() -> None:
    """A share link's roles options, once per session (clamped by :func:`_bounded` as the widgets are drawn)."""

    def apply(state) -> None:
        for name, value in link_options(state).items():
            st.session_state[OPTION_KEYS[name]] = value

    pages.restore_once("roles", decode_roles, apply)


def link_params(loaded) -> dict[str, str]:
    """The roles options on screen as share-link parameters (only those that differ from the defaults)."""
    options = {name: st.session_state[key] for name, key in OPTION_KEYS.items() if key in st.session_state}
    return encode_roles(options, default_options(loaded))


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


def _options(loaded, model: str, lang: str) -> dict[str, int]:
    """The option widgets, each range from the model and this server's policy (a hosted instance's memory and
    deadline: :func:`inspector.serving.option_plan.roles_ranges`); values outside are clamped with a notice."""
    info, policy = loaded.info, session.hosting_policy()
    defaults = default_options(loaded)
    longest = roles_ranges(info, policy, seeds=DEFAULT_SEEDS).max_repeat
    columns = st.columns(5)
    _bounded("repeat", MIN_REPEAT, longest, defaults["repeat"], model, lang)
    repeat = int(columns[0].number_input(t("roles.page.repeat", lang), MIN_REPEAT, longest, key="roles_repeat"))
    widest = roles_ranges(info, policy, repeat, seeds=DEFAULT_SEEDS, max_batch=MAX_BATCH).max_batch
    _bounded("batch", MIN_BATCH, widest, defaults["batch"], model, lang)
    batch = int(columns[1].number_input(t("roles.page.batch", lang), MIN_BATCH, widest, key="roles_batch"))
    heads = max(1, info.num_layers * info.num_heads // 2)
    _bounded("top_k", 1, heads, defaults["top_k"], model, lang)
    top_k = int(columns[2].number_input(t("roles.page.top_k", lang), 1, heads, key="roles_top_k"))
    _bounded("window", 1, info.max_positions, defaults["window"], model, lang)
    window = int(columns[3].number_input(t("roles.page.window", lang), 1, info.max_positions, key="roles_window"))
    _bounded("seed", 0, MAX_SEED, defaults["seed"], model, lang)
    seed = int(columns[4].number_input(t("roles.page.seed", lang), 0, MAX_SEED, key="roles_seed"))
    return {"repeat": repeat, "batch": batch, "top_k": top_k, "window": window, "seed": seed}


def _show_roles(spec: str, backend: str, model_name: str, lang: str, slide: bool) -> None:
    st.caption(t("roles.page.caption", lang))
    loaded = session.cached_model(spec)
    info = loaded.info
    _restore_link()
    pages.show_link_warnings("roles", lang)
    if roles_ranges(info, session.hosting_policy(), seeds=DEFAULT_SEEDS).max_repeat < MIN_REPEAT:
        try:  # not even the smallest probe fits this server: the plan's refusal, in one line, before anything is asked
            plan_roles(info, session.hosting_policy(), MIN_REPEAT, MIN_BATCH, DEFAULT_SEEDS)
        except InspectorError as err:
            st.info(error_text(err, lang), icon=":material/timer_off:")
        return
    options = _options(loaded, model_name, lang)
    if not st.toggle(t("roles.page.run", lang), key="roles_run", help=t("roles.page.run_help", lang)):
        return
    try:
        planned = plan_roles(info, session.hosting_policy(), options["repeat"], options["batch"], DEFAULT_SEEDS)
        for notice in planned.notices:
            st.info(notice_text(notice, lang), icon=":material/timer:")
        options.update(planned.values)
        with st.spinner(t("roles.page.running", lang, heads=info.num_layers * info.num_heads, batch=options["batch"],
                          length=2 * options["repeat"] + 1)):
            with session.plan_job("roles", loaded, lang).running():  # the run slot and the deadline
                result, seconds = cached_roles(spec, backend, **options)
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
