"""The live channel on a page: a keyed `st.components.v2` component (its script is live.js,
beside this file, served by Streamlit itself: no CDN) that opens the job's stream
(kit/live_routes.py), draws the candidates and bids as they come, as text, and asks Python
for a rerun only when something settles (a turn opens or ends, the job ends).

The session's channel token lives in its session state (never in a URL of the app); drawing a
job's stream grants that job to the token, so the route serves it to this session only.

`served()` says whether this process serves the channel's route (the app was started by
`streamlit run`, which finds the `st.App` in streamlit_app.py). Where it is not (AppTest, or
the app embedded some other way), or the component's script did not ship, `stream` draws
nothing and returns False: the page keeps its timed fragment as a fallback. Where the route is
served but the browser cannot have the stream (refused, or blocked by a proxy or a network),
the script falls back to asking for a rerun once a second until it can.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import streamlit as st

from . import live_routes

SCRIPT = Path(__file__).with_name("live.js")
TOKEN_KEY = "live_channel_token"  # session state; not a widget's
CSS = """
.gc-live { font-size: 0.95rem; }
.gc-live p { margin: 0 0 0.25rem 0; }
.gc-live .gc-live-head { color: var(--st-secondary-text-color, #808495); font-size: 0.85rem; }
.gc-live .gc-cand { padding: 0.25rem 0; }
.gc-live .gc-cand-text { white-space: pre-wrap; overflow-wrap: anywhere; }
"""


@st.cache_resource(show_spinner=False)
def _component() -> Callable[..., object] | None:
    """The component, registered once per process (None: its script did not ship)."""
    if not SCRIPT.exists():
        return None
    return st.components.v2.component("groupchat_live", js=SCRIPT.read_text(encoding="utf-8"),
                                      css=CSS, isolate_styles=False)


def served() -> bool:
    """Whether this process serves the live channel's route (and its script shipped)."""
    return live_routes.SERVED.is_set() and SCRIPT.exists()


def token() -> str:
    """This session's channel token (made on first use)."""
    if TOKEN_KEY not in st.session_state:
        st.session_state[TOKEN_KEY] = live_routes.Grants.new_token()
    return str(st.session_state[TOKEN_KEY])


def _settled() -> None:
    """A turn began or ended, the job ended, or the stream cannot be had (`retry`): the rerun
    the trigger asks for is all."""


def stream(job_id: str, agents: Sequence[str], people: Sequence[str], *, streams: bool,
           person_word: str) -> bool:
    """Draw the job's live stream (it must be one the page shows this session); False when
    the channel is not served here (the caller falls back to its timed fragment)."""
    component = _component() if served() else None
    if component is None:
        return False
    secret = token()
    live_routes.GRANTS.allow(secret, job_id)
    component(key=f"live_{job_id}", data={
        "job": job_id, "url": live_routes.PATH.format(job_id=job_id), "token": secret,
        "agents": list(agents), "people": list(people), "streams": streams,
        "person_word": person_word}, on_turn_change=_settled, on_settled_change=_settled,
        on_ended_change=_settled, on_retry_change=_settled)
    return True
