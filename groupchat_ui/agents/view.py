"""The Agents page's list of saved agents (order, edit, duplicate, delete) and the agent form.

Why order gets its own controls: selection ties go to the agent earlier in the list, so the
order of a room is a parameter of the experiment, not cosmetics. Why the form is filled from
callbacks: widget values can only be set before a widget is drawn, so validation runs in the
submit callback, and the error for a field is shown right under that field on the next render.
`persist_state="session"` keeps a draft across page switches. Why edit mode is explicit: saving
a new agent must never rename the previous one, so only an agent's Edit button opens it, and
the form says so.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from groupchat_core import AGENT_BOUNDS, SIM_MODELS, SIM_NOTE, TOOL_CHOICE_MODES, Agent
from groupchat_ui.kit import store_access
from groupchat_ui.kit.access import not_your_agent
from groupchat_ui.kit.components import confirm
from groupchat_ui.kit.providers import LIMITS_HELP, MODEL_HINT, model_label
from groupchat_ui.kit.safety import escape_markdown
from groupchat_ui.kit.state import SessionState, actor

from . import actions, logic
from .actions import AGENT_KEYS, OTHER_MODEL

UP, DOWN = ":material/arrow_upward:", ":material/arrow_downward:"
TOOL_MODES = ("", *TOOL_CHOICE_MODES)  # "": automatic, the engine's fallback ladder
PERSIST: Any = "session"


def agent_rows(agents: Sequence[Agent], session: SessionState) -> list[str]:
    """Saved agents in their stored order, each with move, edit, duplicate, delete; the agent
    being edited is marked, and a delete asks first, inside the agent's own row."""
    by_name = {a.agent_name: a for a in agents}
    names = list(by_name)  # the store's order (agents.position)
    session.agent_order = names
    who = actor(session)
    store = store_access.store()
    rights, owners = logic.editable(store, who), store.agent_owners()
    for i, name in enumerate(names):
        agent = by_name[name]
        with st.container(border=True, key=f"agent_row_{i}"):
            text, tools = st.columns([3, 2], vertical_alignment="center")
            role = agent.system_prompt[:90] + ("…" if len(agent.system_prompt) > 90 else "")
            editing = " · :orange-badge[:material/edit: editing]" if (
                session.editing == name) else ""
            owner = owners.get(name, (None, None))[1]
            by = f" · by {escape_markdown(owner)}" if owner and who.signed_in else ""
            text.markdown(f"**{i + 1}. {escape_markdown(name)}** · "
                          f"{escape_markdown(model_label(agent.model_name))}{by}{editing}  \n"
                          f"{escape_markdown(role) or '*no role*'}")
            locked = None if rights.get(name, True) else not_your_agent(name, owner)
            _agent_tools(tools, name, names, i, locked)
            if session.confirm_agent_delete == name:
                confirm(f"Delete the agent {escape_markdown(name)} for good? Past runs keep "
                        "their copy of it.", "confirm_agent_delete",
                        actions.on_confirm_delete_agent, yes="Yes, delete")
    return names


def import_confirm(session: SessionState) -> None:
    """Ask before an import replaces saved agents that differ from the file's (as a preset
    does): replace them, keep them and add the file's as copies, or cancel."""
    if session.confirm_import is None:
        return
    source, _, changed = session.confirm_import
    names = ", ".join(escape_markdown(n) for n in changed)
    confirm(f"{escape_markdown(source)} would replace your saved {names} (they differ from "
            "the file's). Nothing can undo that.", "confirm_import", actions.on_confirm_import,
            yes="Replace them", more=[("Keep mine, add the file's as copies", "copies")])


def _agent_tools(column: DeltaGenerator, name: str, names: list[str], i: int,
                 locked: str | None) -> None:
    """The row's buttons; `locked` (why this user may not change the agent) disables Edit and
    Delete and says why in their help; Duplicate stays open to everyone."""
    buttons: list[tuple[str, str, str, Callable[..., None], tuple[Any, ...], bool]] = [
        (UP, "up", "Move up", actions.on_move_agent, (name, -1, names), i == 0),
        (DOWN, "down", "Move down", actions.on_move_agent, (name, 1, names),
         i == len(names) - 1),
        (":material/edit:", "edit", locked or "Edit", actions.on_edit_agent, (name,),
         locked is not None),
        (":material/content_copy:", "dup", "Duplicate", actions.on_duplicate_agent, (name,),
         False),
        (":material/delete:", "delete", locked or "Delete (asks first)",
         actions.on_ask_delete_agent, (name,), locked is not None),
    ]
    with column.container(horizontal=True, horizontal_alignment="right", gap="small"):
        for label, kind, help_text, callback, args, disabled in buttons:
            st.button(label, key=f"agent_{kind}_{name}", help=help_text, on_click=callback,
                      args=args, disabled=disabled, type="tertiary")


def _error(errors: Mapping[str, str], *fields: str) -> None:
    for field in fields:
        if field in errors:
            st.error(errors[field], icon=":material/error:")


def agent_form(editing: str | None, errors: Mapping[str, str],
               on_save: Callable[[], None]) -> None:
    """The agent form: a new agent (`editing` None), or edit mode for the saved agent
    `editing`, entered only by its Edit button, where a changed name renames it. `on_save`
    runs as the submit callback (it validates and saves)."""
    if AGENT_KEYS["agent_name"] not in st.session_state:
        actions.fill_agent_form(None, SIM_MODELS[0])
    k = AGENT_KEYS
    with st.container(key="agent_form_box"), st.form("agent_form"):
        if editing is None:
            st.markdown("**New agent**")
        else:
            st.markdown(f"**Edit {escape_markdown(editing)}**")
            st.info(f"Editing the saved agent **{escape_markdown(editing)}**. Rename: change "
                    "the name below and save (past runs keep the old name). New agent leaves "
                    "without saving.", icon=":material/edit:")
        st.text_input("Name" if editing is None else "Name (change it to rename)",
                      key=k["agent_name"], persist_state=PERSIST,
                      help="Unique: names identify speakers in the chat.")
        _error(errors, "agent_name", "form")
        st.text_area("Role (system prompt)", key=k["system_prompt"], persist_state=PERSIST,
                     help="Who this agent is. Simulated agents bid higher when the "
                          "conversation touches the words of their role.")
        st.selectbox("Model", [*SIM_MODELS, OTHER_MODEL], key=k["model_choice"],
                     format_func=model_label, persist_state=PERSIST,
                     help=SIM_NOTE)
        st.text_input("litellm model string (when Model is 'other')", key=k["custom_model"],
                      placeholder="e.g. gpt-4o-mini or ollama/llama3.2", persist_state=PERSIST,
                      help=f"Used only when Model is '{OTHER_MODEL}': {MODEL_HINT}.")
        _error(errors, "model_name")
        cols = st.columns(2)
        heat, tokens = AGENT_BOUNDS["temperature"], AGENT_BOUNDS["max_tokens"]  # the engine's
        cols[0].number_input("Temperature", heat.low, heat.high, step=0.1, key=k["temperature"],
                             persist_state=PERSIST)
        cols[1].number_input("Max tokens", int(tokens.low), int(tokens.high), step=64,
                             key=k["max_tokens"], persist_state=PERSIST)
        _error(errors, "temperature", "max_tokens")
        with st.expander("Advanced"):
            _advanced_fields(errors)
        st.form_submit_button("Save agent" if editing is None else "Save changes",
                              key="save_agent", type="primary", on_click=on_save)


# Scrolls the agent form into view; run once per Edit click (the counter makes each script new).
_SHOW_FORM = """<script>/* {n} */
(() => {{ const form = () => document.querySelector('.st-key-agent_form_box');
  let tries = 0;
  const go = () => {{ const el = form();
    if (el) {{ el.style.scrollMarginTop = '4rem';
      el.scrollIntoView({{block: 'start', behavior: 'instant'}}); return; }}
    if (tries++ < 50) setTimeout(go, 50); }};
  requestAnimationFrame(go); }})();
</script>"""


def show_form_once() -> None:
    """After an Edit click, scroll the agent form into view once (layout only: the script
    names no data). Reruns without a new click leave the page where the user put it."""
    wanted = int(st.session_state.get(actions.SCROLL_KEY) or 0)
    if wanted and st.session_state.get("agent_form_scrolled") != wanted:
        st.session_state["agent_form_scrolled"] = wanted
        st.html(_SHOW_FORM.format(n=wanted), unsafe_allow_javascript=True)


def _advanced_fields(errors: Mapping[str, str]) -> None:
    k = AGENT_KEYS
    st.text_input("api_base (optional)", key=k["api_base"], persist_state=PERSIST,
                  placeholder="http://127.0.0.1:8000/v1",
                  help="Base URL of an OpenAI-compatible server (vLLM, llama.cpp, LM Studio); "
                       "leave empty for the provider's default.")
    st.number_input("Timeout per request (s)", step=1.0, key=k["timeout"], persist_state=PERSIST,
                    help=f"{LIMITS_HELP} Allowed: {AGENT_BOUNDS['timeout'].text()} s.")
    st.selectbox("Tool choice mode", TOOL_MODES, key=k["tool_choice_mode"],
                 format_func=lambda m: m or "automatic (fall back as needed)",
                 persist_state=PERSIST,
                 help="json: ask for a plain-text JSON bid, for models or servers without "
                      "tool support. json_schema: the same, constrained to the bid's JSON "
                      "schema where the server supports it (llama.cpp), so a small model's "
                      "bids are always readable.")
    st.number_input("Simulated latency per bid (s, sim/ models only)", 0.0, 60.0, step=0.1,
                    key=k["sim_latency"], persist_state=PERSIST)
    _error(errors, "api_base", "timeout", "tool_choice_mode", "sim_latency")
