"""The Generate page's run (issue 28): the page's settings restored from a link or kept through a page switch, the
model writing with its tokens streamed into the page and a Stop button, a stopped run's tokens kept, and the last
few finished runs kept in the session. views/generate.py calls :func:`run_or_reuse` with one line; the library call
is :func:`inspector.analyses.generate.generate` (the same numbers as ``python -m inspector generate``)."""

from __future__ import annotations

import time
from dataclasses import replace

import streamlit as st

from inspector import InspectorError
from inspector.analyses.generate import Generation, generate
from inspector.base.i18n import t
from inspector.output.share import GenerateState, decode_generate
from inspector.serving.run import Plan
from views import pages, session

PAGE_KEYS = ("generate_new", "generate_temp", "generate_topk", "generate_topp", "generate_seed", "generate_chat")
KEPT_RUNS = 4  # finished runs kept per session (a 64-step SmolLM2 run with every layer's rows is ~15 MB)


def restore_page_state() -> None:
    """Once per session: the link's Generate parameters; afterwards, the values kept through a page switch."""

    def apply(state: GenerateState) -> None:
        for key in ("new", "temp", "topk", "topp", "seed", "chat"):
            st.session_state[f"generate_{key}"] = getattr(state, key)
        st.session_state["_generate_link_step"] = state.step

    pages.restore_once("generate", decode_generate, apply)
    for key, value in st.session_state.get("_generate_saved", {}).items():
        st.session_state.setdefault(key, value)


def save_page_state() -> None:
    """Keep the page's settings for the next visit (Streamlit drops a page's widget values when it is left)."""
    st.session_state["_generate_saved"] = {key: st.session_state[key] for key in PAGE_KEYS if key in st.session_state}


def sync_prompt() -> None:
    st.session_state["text"] = st.session_state["generate_prompt"]


def stop_run(request: tuple) -> None:
    """Stop button → remember how far the run got. The click's rerun interrupts the running loop; the rerun then
    keeps the tokens written so far (regenerated exactly: the run is deterministic) instead of starting again."""
    st.session_state["_generate_stopped"] = (request, st.session_state.get("_generate_done", 0))


def run_again(request: tuple) -> None:
    st.session_state.get("_generate_runs", {}).pop(request, None)
    st.session_state.pop("_generate_stopped", None)


def keep(request: tuple, result: Generation) -> None:
    runs = st.session_state.setdefault("_generate_runs", {})
    runs.pop(request, None)
    runs[request] = result
    while len(runs) > KEPT_RUNS:
        runs.pop(next(iter(runs)))


def first_token_s(request: tuple) -> float | None:
    """Seconds from the start of ``request``'s streamed run to its first token (None when it was not streamed)."""
    timed_request, first = st.session_state.get("_generate_first_token", (None, None))
    return first if timed_request == request else None


def stream(loaded, request: tuple, options: dict, lang: str, job: Plan) -> Generation:
    """Run the model with the tokens written into the page as they come, and a Stop button."""
    text_slot, bar_slot, stop_slot = st.empty(), st.empty(), st.empty()
    stop_slot.button(t("generate.stop", lang), key="generate_stop", on_click=stop_run, args=(request,),
                     icon=":material/stop_circle:")
    st.session_state["_generate_done"] = 0
    started = time.perf_counter()
    first: list[float] = []

    def on_token(step: int, token: str, text: str) -> None:
        if not first:
            first.append(time.perf_counter() - started)
        st.session_state["_generate_done"] = step + 1
        text_slot.code(options["prompt_shown"] + text, language=None, wrap_lines=True)

    def progress(done: int, total: int, note: str) -> None:
        bar_slot.progress(done / total, text=t("generate.progress", lang, done=done, total=total))

    result = generate(loaded, options["prompt"], max_new_tokens=options["new"], temperature=options["temp"],
                      top_k=options["topk"] or None, top_p=options["topp"], seed=options["seed"],
                      chat=options["chat"], weights=job.weights, backend=options["backend"], on_token=on_token,
                      progress=progress, encoded=job.encodings[0])
    st.session_state["_generate_first_token"] = (request, first[0] if first else None)
    for slot in (text_slot, bar_slot, stop_slot):
        slot.empty()
    return result


def run_or_reuse(loaded, request: tuple, options: dict, status: session.StatusLine, lang: str) -> Generation:
    """The finished run for ``request`` kept in the session, or a new one: streamed, or — after Stop — the tokens
    written before the click, regenerated exactly. ``options``: prompt, prompt_shown, new, temp, topk, topp, seed,
    chat, backend. An :class:`InspectorError` ends the page with one error box."""
    result = st.session_state.setdefault("_generate_runs", {}).get(request)
    if result is not None:
        return result
    stopped = st.session_state.get("_generate_stopped")
    status.update(label=t("generate.running", lang, n=options["new"]))
    try:
        # A hosted instance's limits (issue 33, item 1): the prompt's length and the new tokens planned before the
        # run (refused or cut with a notice), the deadline held while it runs.
        job = session.plan_job("generate", loaded, lang, [options["prompt"]], count=options["new"],
                               chat=options["chat"], weights="all")
        if stopped is not None and stopped[0] == request:
            if stopped[1] < 1:  # stopped before the first token: nothing to show
                status.clear()
                st.info(t("generate.stopped_early", lang))
                st.button(t("generate.again", lang), key="generate_again", on_click=run_again, args=(request,))
                st.stop()
            # The same request for as many tokens as were written: the same tokens (greedy, or the same seed).
            with job.running():
                result = generate(loaded, options["prompt"], max_new_tokens=min(int(stopped[1]), job.keep),
                                  temperature=options["temp"], top_k=options["topk"] or None,
                                  top_p=options["topp"], seed=options["seed"], chat=options["chat"],
                                  weights=job.weights, backend=options["backend"], encoded=job.encodings[0])
            result = replace(result, max_new_tokens=options["new"], finish="stopped")
        else:
            with job.running():
                result = stream(loaded, request, {**options, "new": job.keep}, lang, job)
    except InspectorError as err:
        status.update(label=t("generate.failed", lang), state="error")
        session.show_error(err, lang)
        st.stop()
    keep(request, result)
    return result
