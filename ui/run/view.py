"""Lists the user orders and picks from: saved agents, the run's roster, a stored run.

Why order gets its own controls: selection ties go to the agent earlier in the list, so the
order of a room is a parameter of the experiment, not cosmetics.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from groupchat_core import Agent

from . import actions
from .providers import model_label
from .safety import escape_markdown
from .state import SessionState, ordered
from .views import run_label

UP, DOWN = ":material/arrow_upward:", ":material/arrow_downward:"


def agent_rows(agents: Sequence[Agent], session: SessionState) -> list[str]:
    """Saved agents in this session's order, each with move, edit, duplicate, delete."""
    by_name = {a.agent_name: a for a in agents}
    names = ordered(list(by_name), session.agent_order)
    session.agent_order = names
    for i, name in enumerate(names):
        agent = by_name[name]
        with st.container(border=True):
            text, tools = st.columns([3, 2], vertical_alignment="center")
            role = agent.system_prompt[:90] + ("…" if len(agent.system_prompt) > 90 else "")
            text.markdown(f"**{i + 1}. {escape_markdown(name)}** · "
                          f"{escape_markdown(model_label(agent.model_name))}  \n"
                          f"{escape_markdown(role) or '*no role*'}")
            _agent_tools(tools, name, names, i)
    return names


def _agent_tools(column: DeltaGenerator, name: str, names: list[str], i: int) -> None:
    buttons = [
        (UP, "up", "Move up", actions.move_agent, (name, -1, names), i == 0),
        (DOWN, "down", "Move down", actions.move_agent, (name, 1, names), i == len(names) - 1),
        (":material/edit:", "edit", "Edit", actions.edit_agent, (name,), False),
        (":material/content_copy:", "dup", "Duplicate", actions.duplicate_agent, (name,), False),
        (":material/delete:", "delete", "Delete", actions.delete_agent, (name,), False),
    ]
    with column.container(horizontal=True, horizontal_alignment="right", gap="small"):
        for label, kind, help_text, callback, args, disabled in buttons:
            st.button(label, key=f"agent_{kind}_{name}", help=help_text, on_click=callback,
                      args=args, disabled=disabled, type="tertiary")


def roster_picker(agents: Sequence[Agent], session: SessionState) -> list[str]:
    """Which saved agents take part, in which order (ties go to the earlier agent)."""
    by_name = {a.agent_name: a for a in agents}
    options = ordered(list(by_name), session.agent_order)
    current = st.session_state.get(actions.ROSTER_KEY, session.roster)
    st.session_state[actions.ROSTER_KEY] = [n for n in current if n in by_name]
    roster: list[str] = st.multiselect(
        "Agents (in speaking-priority order)", options, key=actions.ROSTER_KEY,
        format_func=lambda n: f"{n} · {model_label(by_name[n].model_name)}",
        on_change=actions.roster_changed, persist_state="session",
        help="At least two. Order matters: a tie between bids goes to the earlier agent.")
    session.roster = list(roster)
    for i, name in enumerate(roster):
        with st.container(horizontal=True, vertical_alignment="center", gap="small"):
            st.button(UP, key=f"roster_up_{name}", disabled=i == 0, type="tertiary",
                      help="Earlier: wins ties", on_click=actions.move_in_roster,
                      args=(name, -1))
            st.button(DOWN, key=f"roster_down_{name}", disabled=i == len(roster) - 1,
                      type="tertiary", help="Later", on_click=actions.move_in_roster,
                      args=(name, 1))
            st.markdown(f"{i + 1}. {escape_markdown(name)}")
    return list(roster)


def run_picker(runs: pd.DataFrame, session: SessionState) -> str:
    """A run from the store: `?run=<id>` first, then this session's choice, then the newest."""
    rows = {r["run_id"]: r for r in runs.to_dict("records")}
    ids = list(rows)
    wanted = st.query_params.get("run") or session.selected_run
    if wanted in rows and st.session_state.get("analysis_run") != wanted:
        st.session_state["analysis_run"] = wanted
    elif st.session_state.get("analysis_run") not in rows:
        st.session_state["analysis_run"] = ids[0]
    run_id: str = st.selectbox("Run", ids, key="analysis_run",
                               format_func=lambda i: run_label(rows[i]),
                               on_change=actions.run_picked)
    session.selected_run = run_id
    st.query_params["run"] = run_id
    return run_id
