"""The Run page's "New run" panel: a preset, the roster in speaking order, the task and every
chat parameter.

Why order gets its own controls: selection ties go to the agent earlier in the list, so the
order of a room is a parameter of the experiment, not cosmetics. The parameters live in a form,
so typing does not rerun the page; `persist_state="session"` keeps a draft across page switches.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import streamlit as st

from groupchat_core import (
    BID_PROMPT_PRESETS,
    CHAT_CHOICES,
    OUTPUT_TYPES,
    SIM_NOTE,
    STRATEGIES,
    TOOL_CHOICE_MODES,
    Agent,
)
from groupchat_ui.kit.components import feedback
from groupchat_ui.kit.presets import PRESETS
from groupchat_ui.kit.providers import model_label
from groupchat_ui.kit.safety import escape_markdown
from groupchat_ui.kit.state import SessionState, ordered

from . import actions, form, logic, people_view

UP, DOWN = ":material/arrow_upward:", ":material/arrow_downward:"
PERSIST: Any = "session"
PARAM_HELP = logic.PARAM_HELP


# An instruction, not a sample task: a question in grey read as a task already filled in.
TASK_PLACEHOLDER = "Type the task or question the agents discuss…"

def new_run(session: SessionState, agents: Sequence[Agent]) -> None:
    """The expander to start a run (open until this session has a job)."""
    st.session_state.setdefault("new_run_open", not session.job_ids)
    with st.expander("New run", key="new_run_open", on_change="rerun",
                     icon=":material/add_circle:"):
        if len(agents) < 2:
            st.info("A chat needs at least two saved agents. Start from a preset (offline "
                    "simulations, no key needed) or create agents on the Agents page.")
        cols = st.columns([3, 1], vertical_alignment="bottom")
        cols[0].selectbox("Preset room", list(PRESETS), key="run_preset_choice")
        cols[1].button("Use preset", key="use_preset", on_click=actions.on_load_preset,
                       args=("run_preset_choice",))
        roster = roster_picker(agents, session)
        by_name = {a.agent_name: a for a in agents}
        chosen = [by_name[n] for n in roster if n in by_name]
        people_view.people_picker(session, list(by_name))
        logic.warm_up_litellm(chosen)
        streaming_caption(chosen)
        problems = key_problems(chosen, session)
        with st.form("run_form"):
            st.text_area("Task", key=form.TASK_KEY, persist_state="session",
                         placeholder=TASK_PLACEHOLDER,
                         help="The first message of the chat (posted as User; it counts toward "
                              "max_loops).")
            param_inputs(logic.default_params())
            st.form_submit_button("Start run", key="start_run", type="primary",
                                  icon=":material/play_arrow:", on_click=actions.on_start_run,
                                  disabled=bool(problems),
                                  help="Disabled until every agent's provider key is set (see "
                                       "above)." if problems else None)
        feedback("run_form")  # why a Start did not start, right under the button


def streaming_caption(agents: Sequence[Agent]) -> None:
    """Say which of the chosen agents will stream (Settings' "Stream bids live"): sims never do."""
    text = logic.stream_note([a.model_name for a in agents],
                             bool(st.session_state.get(form.STREAM_KEY, True)))
    if text:
        st.caption(escape_markdown(text), help="Settings: Stream bids live.")


def key_problems(agents: Sequence[Agent], session: SessionState) -> list[str]:
    """Missing keys, shown under the roster before anything is spent (Start is disabled: the
    engine would refuse the run with "missing credentials"); unknown providers as warnings."""
    with st.spinner("Checking provider keys (the first check loads litellm: a few seconds)…",
                    show_time=True):
        problems, unknown = logic.preflight(agents, session.provider_keys, os.environ)
    if problems:
        lines = "\n".join(f"- {escape_markdown(p)}" for p in problems)
        st.error(f"**Missing credentials**: Start is disabled until they are set.\n\n{lines}"
                 f"\n\n{logic.KEY_FIX}", icon=":material/key:")
    for text in unknown:
        st.warning(escape_markdown(text), icon=":material/key:")
    return problems


def roster_picker(agents: Sequence[Agent], session: SessionState) -> list[str]:
    """Which saved agents take part, in which order (ties go to the earlier agent)."""
    by_name = {a.agent_name: a for a in agents}
    options = ordered(list(by_name), session.agent_order)
    current = st.session_state.get(form.ROSTER_KEY, session.roster)
    st.session_state[form.ROSTER_KEY] = [n for n in current if n in by_name]
    roster: list[str] = st.multiselect(
        "Agents (in speaking-priority order)", options, key=form.ROSTER_KEY,
        format_func=lambda n: f"{n} · {model_label(by_name[n].model_name)}",
        on_change=actions.on_roster_changed, persist_state="session",
        help="At least two. Order matters: a tie between bids goes to the earlier agent. "
             + SIM_NOTE)
    session.roster = list(roster)
    for i, name in enumerate(roster):
        with st.container(horizontal=True, vertical_alignment="center", gap="small"):
            st.button(UP, key=f"roster_up_{name}", disabled=i == 0, type="tertiary",
                      help="Earlier: wins ties", on_click=actions.on_move_in_roster,
                      args=(name, -1))
            st.button(DOWN, key=f"roster_down_{name}", disabled=i == len(roster) - 1,
                      type="tertiary", help="Later", on_click=actions.on_move_in_roster,
                      args=(name, 1))
            st.markdown(f"{i + 1}. {escape_markdown(name)}")
    return list(roster)


def param_inputs(defaults: Mapping[str, Any]) -> None:
    """Every GroupChat parameter, keyed `run_param_<name>` (read back as a form.RunForm);
    call inside the run form."""
    p = form.PARAM_PREFIX
    if p + "name" not in st.session_state:
        actions.fill_params(defaults)
    st.text_input("Run name (optional)", key=p + "name", help=PARAM_HELP["name"],
                  placeholder="left empty: the run is labelled by its task",
                  persist_state=PERSIST)
    # No min/max on these inputs: a browser silently refuses a value outside them (Start then did
    # nothing, issue 21). The help names the engine's range (CHAT_BOUNDS) and Start refuses an
    # out-of-range value with the engine's one-line message.
    cols = st.columns(3)
    cols[0].number_input("max_loops", step=1, key=p + "max_loops", help=PARAM_HELP["max_loops"],
                         persist_state=PERSIST)
    cols[1].number_input("threshold", step=0.05, key=p + "threshold",
                         help=PARAM_HELP["threshold"], persist_state=PERSIST)
    cols[2].number_input("recency_penalty", step=0.05, key=p + "recency_penalty",
                         help=PARAM_HELP["recency_penalty"], persist_state=PERSIST)
    cols = st.columns(3)
    cols[0].number_input("recency_window", step=1, key=p + "recency_window",
                         help=PARAM_HELP["recency_window"], persist_state=PERSIST)
    cols[1].number_input("seed", step=1, key=p + "seed", help=PARAM_HELP["seed"],
                         persist_state=PERSIST)
    cols[2].number_input("bid_timeout (s)", step=1.0, key=p + "bid_timeout",
                         help=PARAM_HELP["bid_timeout"], persist_state=PERSIST)
    who, selector = st.columns([1, 2])
    who.selectbox("Who speaks", STRATEGIES, key=p + "strategy", help=PARAM_HELP["strategy"],
                  persist_state=PERSIST)
    selector.text_input("Selector model", key=p + "selector_model",
                        help=PARAM_HELP["selector_model"], persist_state=PERSIST,
                        placeholder="used by the selector strategy only")
    with st.expander("More parameters"):
        st.text_input("description", key=p + "description", help=PARAM_HELP["description"],
                      persist_state=PERSIST)
        base, mode = st.columns([2, 1])
        base.text_input("Selector endpoint (api_base)", key=p + "selector_api_base",
                        help=PARAM_HELP["selector_api_base"], persist_state=PERSIST,
                        placeholder="the selector model's provider endpoint")
        mode.selectbox("Selector tool-choice mode", (None, *TOOL_CHOICE_MODES),
                       key=p + "selector_tool_choice_mode",
                       format_func=lambda m: m or "forced (default)",
                       help=PARAM_HELP["selector_tool_choice_mode"], persist_state=PERSIST)
        st.selectbox("output_type", OUTPUT_TYPES, key=p + "output_type",
                     help=PARAM_HELP["output_type"], persist_state=PERSIST)
        st.number_input("idle_timeout (s)", step=1.0, key=p + "idle_timeout",
                        help=PARAM_HELP["idle_timeout"], persist_state=PERSIST)
        st.selectbox("Bid prompt preset", (None, *BID_PROMPT_PRESETS),
                     key=p + "bid_prompt_preset",
                     format_func=lambda name: name or "the template below",
                     help=PARAM_HELP["bid_prompt_preset"], persist_state=PERSIST)
        st.text_area("bid_prompt", key=p + "bid_prompt", height=200,
                     help=PARAM_HELP["bid_prompt"], persist_state=PERSIST)
        for col, (setting, choices) in zip(st.columns(len(CHAT_CHOICES)),
                                           CHAT_CHOICES.items(), strict=True):
            col.selectbox(setting, choices, key=p + setting, help=PARAM_HELP[setting],
                          persist_state=PERSIST)
        st.checkbox("verbose", key=p + "verbose", help=PARAM_HELP["verbose"],
                    persist_state=PERSIST)
        st.checkbox("reuse cached bids", key=p + "bid_cache", help=PARAM_HELP["bid_cache"],
                    persist_state=PERSIST)
