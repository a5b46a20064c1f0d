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

from groupchat_core import CHAT_SETTINGS, SIM_NOTE, Agent, ChatSetting
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
    call inside the run form. Which widget, label, row and section each gets is the settings
    schema's form hint (groupchat_core.CHAT_SETTINGS), in its order; rows become columns."""
    if form.PARAM_PREFIX + "name" not in st.session_state:
        actions.fill_params(defaults)
    main = [s for s in CHAT_SETTINGS.values() if s.form and not s.form.more]
    more = [s for s in CHAT_SETTINGS.values() if s.form and s.form.more]
    _draw_rows(main)
    with st.expander("More parameters"):
        _draw_rows(more)


def _draw_rows(settings: Sequence[ChatSetting]) -> None:
    """Neighbours with the same form row side by side (each its column's width), others alone.
    No min/max on number inputs: a browser silently refuses a value outside them (Start then
    did nothing, issue 21). The help names the engine's range (CHAT_BOUNDS) and Start refuses
    an out-of-range value with the engine's one-line message."""
    i = 0
    while i < len(settings):
        hint = settings[i].form
        assert hint is not None
        row = [settings[i]]
        while (hint.row is not None and i + len(row) < len(settings)
               and (nxt := settings[i + len(row)].form) is not None and nxt.row == hint.row):
            row.append(settings[i + len(row)])
        if len(row) == 1:
            _widget(st, row[0])
        else:
            widths = [s.form.width if s.form else 1 for s in row]
            for col, setting in zip(st.columns(widths), row, strict=True):
                _widget(col, setting)
        i += len(row)


def _widget(where: Any, setting: ChatSetting) -> None:
    """One setting's input, as its form hint says."""
    hint, key = setting.form, form.PARAM_PREFIX + setting.name
    assert hint is not None
    common: dict[str, Any] = {"key": key, "help": PARAM_HELP[setting.name],
                              "persist_state": PERSIST}
    if hint.widget == "text":
        where.text_input(hint.label, placeholder=hint.placeholder, **common)
    elif hint.widget == "number":
        where.number_input(hint.label, step=hint.step, **common)
    elif hint.widget == "textarea":
        where.text_area(hint.label, height=hint.height, **common)
    elif hint.widget == "checkbox":
        where.checkbox(hint.label, **common)
    else:
        none_label = hint.none_label
        where.selectbox(hint.label, setting.choices,
                        format_func=lambda v: (none_label if v is None else v) or "", **common)
