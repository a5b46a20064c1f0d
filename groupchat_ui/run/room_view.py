"""The live room on the Run page (inside its live fragment): the clock, the bids forming, the
hand queue, this seat's controls, and the room links for whoever started it.

Everything shown that a person or a model wrote (names, drafts, posts) goes through
`escape_markdown` / `safe_markdown` (kit/safety.py): inert, as on every other page.
"""

from __future__ import annotations

from collections.abc import Sequence

import streamlit as st

from groupchat_core import HAND_SCORE, PersonState, RoomSnapshot
from groupchat_ui.kit.components import feedback
from groupchat_ui.kit.safety import escape_markdown, safe_markdown
from groupchat_ui.kit.state import SessionState

from . import people_view as actions
from . import room_logic as logic
from . import room_seats as seats


def panel(session: SessionState, job_id: str, roster: Sequence[str], done: bool) -> None:
    """The live room: time left, bids forming, the hand queue, and this seat's controls."""
    entry = seats.table().get(job_id)
    room = entry.room if entry is not None else None
    if entry is None or room is None:
        return
    me = actions.seat_of(job_id)
    if not done:
        seats.presence(job_id, room, me)  # this tab beats; silent tabs have left
    snap = room.snapshot()
    with st.container(key="room_panel", border=True):
        st.caption(logic.time_left_label(snap), help="Updated twice a second.")
        if me is not None:
            st.caption(f"You are **{escape_markdown(me)}** in this room.")
        left, right = st.columns([3, 2])
        with left:
            _bids(snap, roster)
        with right:
            _hands(snap, done)
        if me is not None and not done:
            picker = entry.seats[me].picker if me in entry.seats else False
            _controls(job_id, snap, me, picker)
    _links(job_id)


def _bids(snap: RoomSnapshot, roster: Sequence[str]) -> None:
    st.markdown("**Bids this turn**")
    for i, (name, kind, status, draft) in enumerate(logic.bid_rows(snap, roster)):
        with st.container(key=f"room_bid_{i}"):
            st.markdown(f"{escape_markdown(name)} · {kind} · {escape_markdown(status)}")
            if draft:
                st.caption(safe_markdown(draft[:600]))


def _hands(snap: RoomSnapshot, done: bool) -> None:
    """The hand queue and each person's state; once the run is over every hand is down (the
    room keeps its last state, so a hand still showed up after the end)."""
    st.markdown("**Hands up**")
    with st.container(key="room_hands"):
        queue = [] if done else logic.hand_queue(snap)
        st.markdown("  \n".join(escape_markdown(q) for q in queue) if queue else
                    ROOM_ENDED if done else "No hand up.")
    passed = {b.name for b in snap.bids if b.passed}
    for p in snap.people:
        st.caption(f"{escape_markdown(p.name)}: {person_line(p, p.name in passed, done)}")


ROOM_ENDED = "No hand up: the room has ended."


def person_line(person: PersonState, passed: bool, done: bool) -> str:
    """A person's state in the room's list, as words; after the end a raised hand reads
    lowered and nobody is still thinking."""
    if person.left:
        return "away"
    if done:
        return "hand lowered (the room ended)" if person.hand_up else "the room ended"
    return "hand up" if person.hand_up else "passed" if passed else \
        "bid in" if person.bid_in else "thinking"


def _controls(job_id: str, snap: RoomSnapshot, me: str, picker: bool) -> None:
    """A bidder's hand (up or down at any time: it bids from the next window on), and in the
    bid window a score with an optional draft, or a pass; the winner's post; the picker's pick.
    """
    phase, turn = logic.my_phase(snap, me), snap.turn
    with st.container(key="room_controls"):
        # no hand to raise while writing the winning post: it would bid for the next turn
        if not picker and snap.phase != "finished" and phase != "post":
            _hand_controls(job_id, snap, me, bidding=phase == "bid")
        if phase == "bid" and not picker:
            with st.form(f"room_bid_form_{job_id}"):
                st.slider("Score", 0.0, 1.0, HAND_SCORE, 0.05, key=f"room_score_{job_id}")
                st.text_area("Draft message (optional)", key=f"room_draft_{job_id}_{turn}",
                             height=80)
                st.form_submit_button("Bid", key="room_bid", type="primary",
                                      on_click=actions.on_bid, args=(job_id, turn))
        elif phase == "post":
            draft = next((b.message for b in snap.bids if b.name == me), "")
            st.success("You won the floor: write or confirm your message before the post "
                       "window closes.", icon=":material/campaign:")
            with st.form(f"room_post_form_{job_id}_{turn}"):
                st.text_area("Your message", value=draft, key=f"room_post_{job_id}_{turn}")
                st.form_submit_button("Post", key="room_post", type="primary",
                                      on_click=actions.on_post, args=(job_id, turn))
            feedback("room_post")
        elif phase == "pick":
            _pick_controls(job_id, snap)


def _hand_controls(job_id: str, snap: RoomSnapshot, me: str, *, bidding: bool) -> None:
    person = logic.person_state(snap, me)
    cols = st.columns(2)
    if person is not None and person.hand_up:
        cols[0].button("Lower hand", key="room_lower", icon=":material/back_hand:",
                       on_click=actions.on_lower, args=(job_id,))
    else:
        cols[0].button("Raise hand", key="room_raise", type="primary",
                       icon=":material/pan_tool:", on_click=actions.on_raise, args=(job_id,),
                       help=f"A standing bid of {HAND_SCORE:g}, kept across turns until you "
                            "win (it lowers then) or lower it.")
    if bidding:  # bound to this turn, as the picks are (_pick_controls)
        cols[1].button("Pass", key=f"room_pass_{snap.turn}", icon=":material/do_not_disturb_on:",
                       on_click=actions.on_pass, args=(job_id, snap.turn))
        mine = next((b for b in snap.bids if b.name == me), None)
        if mine is not None:
            st.caption(f"Your bid this turn: {escape_markdown(logic.bid_status(mine))}")


def _pick_controls(job_id: str, snap: RoomSnapshot) -> None:
    """The picker's choice among the top bids. Keys and arguments carry the turn: a click
    that arrives after the turn moved on finds no widget (or is refused by the room), never
    the next turn's button in the same place."""
    rule, turn = snap.rule_pick, snap.turn
    st.info(f"Pick who speaks. The bidding rule would pick "
            f"**{escape_markdown(rule or 'nobody')}**.", icon=":material/how_to_vote:")
    for i, bid in enumerate(snap.candidates):
        with st.container(key=f"room_cand_{i}", border=True):
            status = escape_markdown(logic.bid_status(bid))
            st.markdown(f"**{escape_markdown(bid.name)}** · {status}")
            if bid.message:
                st.markdown(safe_markdown(bid.message[:1500]))
            st.button(f"Let {escape_markdown(bid.name)} speak", key=f"room_pick_{turn}_{i}",
                      on_click=actions.on_pick, args=(job_id, turn, bid.name))
    st.button("Accept the rule's pick", key=f"room_pick_{turn}_rule", on_click=actions.on_pick,
              args=(job_id, turn, None))


def _links(job_id: str) -> None:
    """The starter's session: each seat's room link, to hand to that person."""
    tokens = (st.session_state.get(actions.TOKENS_KEY) or {}).get(job_id)
    if not tokens:
        return
    base = str(getattr(st.context, "url", "") or "").split("?")[0].rsplit("/", 1)[0]
    with st.expander("Room links (each seats its holder; share privately)",
                     icon=":material/link:", key=f"room_links_{job_id}"):
        for name, token in tokens.items():
            st.caption(escape_markdown(name))
            st.code(logic.room_link(base, job_id, token), language=None)

