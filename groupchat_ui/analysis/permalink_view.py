"""Permalinks into the Analysis page: `?run=<id>` opens a run, `&turn=<n>` its Why? tab at that
turn, `&bid=<agent>` that agent's bid on it. The page writes them as the user picks, so the
address bar is always a link to exactly what is shown, and a reload opens it again.

Why query parameters: they survive a reload and can be pasted to someone else; session state
does neither.
"""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import urlencode

import pandas as pd
import streamlit as st

from groupchat_ui.kit.safety import escape_markdown

TURN, BID = "turn", "bid"


def link(run_id: str, turn: int | None = None, bid: str | None = None) -> str:
    """The page-relative address of a run, a turn of it, or one bid on that turn."""
    params: dict[str, str] = {"run": run_id}
    if turn is not None:
        params[TURN] = str(turn)
        if bid:
            params[BID] = bid
    return "analysis?" + urlencode(params)


def run_link(run_id: str) -> None:
    """The run's shareable link: what the address bar holds minus this browser's `?sid=`
    (a link carrying it handed the sender's drafts to whoever opened it: issue 38)."""
    st.caption(f"Link to this run: `{link(run_id)}`")


def forget() -> None:
    """Drop the turn and bid from the address (their tab is not shown)."""
    st.query_params.pop(TURN, None)
    st.query_params.pop(BID, None)


def wanted_turn(turns: Sequence[int]) -> int | None:
    """The turn `?turn=` asks for, when the run has it."""
    raw = st.query_params.get(TURN)
    try:
        turn = int(raw) if raw is not None else None
    except ValueError:
        return None
    return turn if turn in turns else None


def open_linked_tab(tab_key: str, why: str) -> None:
    """Before the tabs are drawn: an address naming a turn not yet opened opens the Why? tab
    (once per link: the user may then move to another tab)."""
    turn = st.query_params.get(TURN)
    link_seen = (st.query_params.get("run"), turn)
    if turn is not None and st.session_state.get(f"{tab_key}_link") != link_seen:
        st.session_state[tab_key] = why
        st.session_state[f"{tab_key}_link"] = link_seen


def follow_turn(turns: Sequence[int], key: str) -> None:
    """Before the turn picker is drawn: a `?turn=` not yet applied (a link, a reload)
    chooses its turn; the page's own writes are marked applied, so they never fight the user."""
    turn = wanted_turn(turns)
    seen = (st.query_params.get("run"), st.query_params.get(TURN))
    if turn is not None and st.session_state.get(f"{key}_applied") != seen:
        st.session_state[key] = turn
        st.session_state[f"{key}_applied"] = seen


def turn_and_bid(run_id: str, turn: int, bids: pd.DataFrame) -> None:
    """Write the chosen turn into the address, offer a bid picker, show the chosen bid and the
    links to both."""
    st.query_params[TURN] = str(turn)
    seen = (run_id, str(turn))  # written by the page: not a link to follow again
    st.session_state["explain_turn_applied"] = st.session_state["analysis_tab_link"] = seen
    on_turn = bids[bids["turn"] == turn]
    agents = [str(a) for a in on_turn["agent"]]
    asked = st.query_params.get(BID)
    if asked in agents and st.session_state.get("explain_bid_applied") != (turn, asked):
        st.session_state["explain_bid"] = asked
        st.session_state["explain_bid_applied"] = (turn, asked)
    if st.session_state.get("explain_bid") not in [None, *agents]:
        st.session_state["explain_bid"] = None
    agent = st.selectbox("A bid on this turn", agents, index=None, key="explain_bid",
                         placeholder="pick an agent to see its bid")
    if agent is None:
        st.query_params.pop(BID, None)
        st.caption(f"Link to this turn: `{link(run_id, turn)}`")
        return
    st.query_params[BID] = agent
    row = on_turn[on_turn["agent"] == agent].iloc[0]
    with st.container(border=True, key="explain_bid_box"):
        st.markdown(f"**Bid of {escape_markdown(agent)} on turn {turn}**: score "
                    f"{row['score']:.2f}, adjusted {row['adjusted']:.2f} · outcome "
                    f"{row['outcome']}" + (" · won the turn" if bool(row["winner"]) else ""))
        if isinstance(row["message"], str) and row["message"]:
            st.text(row["message"][:2000])
        if isinstance(row.get("error"), str) and row["error"]:
            st.caption(escape_markdown(row["error"][:500]))
    st.caption(f"Link to this bid: `{link(run_id, turn, agent)}`")
