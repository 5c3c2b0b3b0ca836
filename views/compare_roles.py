"""The Compare page's two-model mode: the two models' head-roles maps side by side (issue 29, item 4). Each map is the
Heads page's (:func:`views.heads_roles.cached_roles` at the block's default options, so a model probed on either page
is probed once), with its causal verdicts under it and the usual figure exports; views/compare.py calls :func:`show`
with one line in both of its two-model paths (same shapes or not: roles need no head-to-head partner)."""

from __future__ import annotations

import streamlit as st

from inspector import InspectorError
from inspector.analyses.roles import CAUSAL_ROLES
from inspector.base.i18n import t
from inspector.charts.roles import roles_map_chart
from inspector.charts.sentences.roles import verdict
from inspector.core.forward import backend_for
from inspector.output.export import Provenance, screen_title
from inspector.output.share import escape_markdown
from views import session
from views.export_buttons import export_buttons
from views.heads_roles import cached_roles, default_options


def show(specs: tuple[str, str], names: tuple[str, str], backend: str, lang: str, slide: bool) -> None:
    """An expander (open once run) with a run toggle, then model A's and model B's roles maps in two columns
    (stacked on a slide)."""
    with st.expander(t("roles.compare.title", lang), expanded=bool(st.session_state.get("compare_roles_run")),
                     icon=":material/category:"):
        st.caption(t("roles.compare.caption", lang))
        if not st.toggle(t("roles.compare.run", lang), key="compare_roles_run", help=t("roles.page.run_help", lang)):
            return
        columns = (st.container(), st.container()) if slide else st.columns(2)
        for column, spec, name, side in zip(columns, specs, names, ("a", "b")):
            with column:
                _one_map(spec, name, side, backend, lang, slide)


def _one_map(spec: str, name: str, side: str, backend: str, lang: str, slide: bool) -> None:
    st.markdown(f"**{escape_markdown(t('roles.compare.model', lang, side=side.upper(), model=name))}**")
    try:
        loaded = session.cached_model(spec)
        options = default_options(loaded)
        info = loaded.info
        with st.spinner(t("roles.page.running", lang, heads=info.num_layers * info.num_heads, batch=options["batch"],
                          length=2 * options["repeat"] + 1)):
            with session.plan_job("roles", loaded, lang).running():  # this model's own run slot and deadline
                result, seconds = cached_roles(spec, backend, **options)
    except InspectorError as err:
        session.show_error(err, lang)
        return
    st.caption(t("roles.page.done", lang, seconds=f"{seconds:.1f}"))
    chart = roles_map_chart(result, slide=slide, lang=lang)
    st.altair_chart(screen_title(chart), key=f"compare_roles_map_{side}")
    probe = result.probe
    provenance = Provenance(model=name, text=t("roles.page.probe_text", lang, batch=probe.batch, repeat=probe.repeat,
                                               seed=probe.seed), backend=backend_for(loaded, backend))
    export_buttons(f"head-roles-{side}", chart, provenance, lang, f"compare_roles_{side}")
    st.markdown("\n".join(f"- {escape_markdown(verdict(result.test(role), lang))}" for role in CAUSAL_ROLES
                          if result.test(role) is not None))
