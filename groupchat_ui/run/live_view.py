"""The Run page's live view of a background job (DESIGN.md, "Running jobs from Streamlit").

Why a fragment with `run_every` only while the job runs: only it redraws every half second (no
flicker, unsent form input survives); when it sees the job end it calls `st.rerun()`, whose
full run declares it again without a timer. Everything shown comes from an immutable snapshot
copied under the registry's lock; nothing here touches the job itself.

Why one timed fragment for the whole view (head, transcript, candidates forming, floor), never
two: Streamlit 1.67's browser side crashes now and then when a full run meets the reruns of
several timed fragments ("Cannot set a node at a delta path"; React drops the whole page, which
stays blank for good). Nested timed fragments did it (the room browser test in CI), and so did
sibling ones (fresh clone P5; likely n2 and L1 too, whose failures printed no page tree).
`python -m bench.blank_page`: the view's shape with
three sibling timed fragments crashed at 18 of 60 job ends under load, with one fragment at none
(BENCHMARKS.md, "A page that went blank").

Push, not polling (issue 41, point 1): where the app serves its live channel (kit/live_view.py,
kit/live_routes.py), a running job's fragment has no timer at all. The channel's component
draws the candidates forming and the bids coming in as the engine has them, and asks for a
rerun of this fragment only when the turn opens or ends; on the job's end, the fragment sees
it done and asks for the full run as before. The timer stays only where the channel is not
served (AppTest, the app embedded some other way) and for a job with a room, whose panel and
presence beat still ride on it (the room's own stream is the next step of point 1).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import pandas as pd
import streamlit as st

from groupchat_core import Bid, Message, RunRecord, StoreError, mask_secrets
from groupchat_core.analysis import charts
from groupchat_ui.kit import live_view as channel
from groupchat_ui.kit import store_access
from groupchat_ui.kit.components import bubble, cards, refresh_every
from groupchat_ui.kit.jobs import JobRegistry, JobSnapshot, from_record, may_manage, not_yours
from groupchat_ui.kit.labels import run_label
from groupchat_ui.kit.metrics import PHONE_CSS
from groupchat_ui.kit.providers import failure_hint, model_label
from groupchat_ui.kit.safety import escape_markdown, safe_markdown
from groupchat_ui.kit.state import SessionState

from . import actions, logic, room_seats, room_view

REFRESH_S = 0.5
NO_MARGIN = "–"  # the past-turns table's margin on a lull or an unreadable turn
PERSON_DECIDING = "person · deciding in the room"  # not "waiting for the first token…"
ModelInfo = Mapping[str, tuple[str, str | None]]  # agent -> (model, api_base)
# The head's last draw of a run that has just ended, before the full rerun that settles the page.
ENDING_KEY = "run_head_ending"


def adopt_job_from_url(registry: JobRegistry, session: SessionState) -> None:
    """`?job=<id>` (a reload, a sidebar link) selects that job; ids are unguessable."""
    job_id = st.query_params.get("job")
    if not job_id:
        return
    if job_id not in session.job_ids:
        try:
            registry.snapshot(job_id)
        except KeyError:
            return
        session.job_ids.append(job_id)
    session.current_job = job_id
    st.session_state["job_select"] = job_id  # before the selector is drawn


def pick_job(registry: JobRegistry, session: SessionState) -> str | None:
    """This session's jobs, newest first; a selector when there are several. The job shown is
    `session.current_job` (the one last started, picked or linked), whatever a selector left
    behind on another page: coming back to Run shows the job you were watching."""
    snaps: dict[str, JobSnapshot] = {}
    # the session's list is bounded as the table is (GROUPCHAT_KEEP_FINISHED_JOBS), so it no
    # longer grows by one with every run; the job on screen stays
    session.job_ids[:] = registry.bounded(session.job_ids, also=session.current_job)
    for job_id in session.job_ids:
        try:
            snaps[job_id] = registry.snapshot(job_id)
        except KeyError:
            continue  # expired
    if not snaps:
        return None
    ids = list(reversed(list(snaps)))
    current = session.current_job if session.current_job in snaps else ids[0]
    if len(ids) > 1:
        st.session_state["job_select"] = current  # before the selector is drawn
        current = st.selectbox("Job", ids, key="job_select", on_change=actions.on_job_selected,
                               format_func=lambda i: _job_label(snaps[i]))
    session.current_job = current
    st.query_params["job"] = current
    return current


def _job_label(snap: JobSnapshot) -> str:
    """The kit's run label (name or task, start time, id), then the job's status."""
    label = run_label(snap.config.get("name"), snap.task, snap.created_at, snap.id, date=False)
    return f"{label} · {snap.status} · by {snap.user_name}"


def job_panel(registry: JobRegistry, session: SessionState, job_id: str) -> None:
    """The live (or finished) view of one job, in one fragment: the head (status, controls,
    room), the transcript with a streamed turn's candidates forming under it, and the floor."""
    first = _snapshot(registry, job_id)
    if first is None:
        return
    running = not first.done
    streams = logic.may_stream(first.config, first.models)
    pushed = running and room_seats.table().get(job_id) is None and channel.served()

    @st.fragment(run_every=refresh_every("run-live", REFRESH_S if running and not pushed
                                         else None))
    def live() -> None:
        snap = _snapshot(registry, job_id)
        if snap is None:  # expired: the full run draws the page without it
            st.rerun()
        if running and snap.done:
            # Drawn first, so the final status shows even if the rerun is lost; in a keyed
            # container, so whoever waits for the settled page (the browser tests) can tell
            # this draw from the full run's that replaces it a moment later.
            with st.container(key=ENDING_KEY):
                _head(session, snap)
            st.rerun()  # the full run declares the fragment again, without a timer
        _head(session, snap)
        left, right = st.columns([5, 4])
        with left, st.container(height=560, autoscroll=True, border=False):
            _chat(snap, replay=not pushed)
            if pushed and not snap.done:
                channel.stream(job_id, snap.agents or tuple(snap.models), sorted(people_of(snap)),
                               streams=streams, person_word=PERSON_DECIDING)
            elif streams:
                _candidates(snap)
        with right:
            _floor(snap)

    live()


def _snapshot(registry: JobRegistry, job_id: str) -> JobSnapshot | None:
    """The job's snapshot, or None once it expired (finished jobs do, after the table's TTL).
    A finished chat whose live state the table dropped (only its summary is left) is filled
    in from its recorded run in the store."""
    try:
        snap = registry.snapshot(job_id)
    except KeyError:
        return None
    if not snap.summary or not snap.run_id:
        return snap
    try:
        return from_record(snap, store_access.store().load_run(snap.run_id))
    except StoreError:
        return snap  # not recorded (deleted, or the store is unreachable): the summary alone


def _head(session: SessionState, snap: JobSnapshot) -> None:
    _status_line(snap.status, snap.id, snap.current_turn, max(len(snap.messages) - 1, 0))
    mine = may_manage(snap.user, session.user)
    if not mine:
        st.caption(f"Started by {escape_markdown(snap.user_name)}")
    if not snap.done:
        reason = None if mine else not_yours(snap.user_name, "run")
        st.button("Stop", key="stop_run", type="primary", icon=":material/stop_circle:",
                  on_click=actions.on_stop, args=(snap.id,), disabled=not mine, help=reason)
        if reason:
            st.caption(escape_markdown(reason), help="Runs belong to whoever started them.")
    else:
        _ending(snap)
    _problems(session, snap)
    room_view.panel(session, snap.id, list(snap.agents), snap.done)  # people in the room


def _chat(snap: JobSnapshot, *, replay: bool = True) -> None:
    """The transcript; a streamed run was watched forming, so its winner is posted whole, not
    replayed, with the turn's other candidates folded under it. `replay=False` (a pushed
    view, which reruns only when a turn opens or ends): every reply whole, never a replay
    frozen half-way until the next rerun."""
    streamed = logic.streams(snap.config, snap.models)
    _transcript(snap.messages, snap.models, live=replay and not snap.done and not streamed,
                now=datetime.now(UTC), folded=snap.bids_by_turn if streamed else None,
                people=people_of(snap))


def people_of(snap: JobSnapshot) -> frozenset[str]:
    """The people in this run: the room's seats, and whoever bid as a person."""
    entry = room_seats.table().get(snap.id)
    seated = set(entry.seats) if entry is not None else set()
    bids = [*snap.current_bids, *(b for turn in snap.bids_by_turn.values() for b in turn)]
    return frozenset(seated | {b.agent for b in bids if b.kind == "human"})


def _status_line(status: str, job_id: str, turn: int, messages: int) -> None:
    """A stable, machine-readable line for browser tests and for people: `status: running`."""
    st.caption(f"status: {status} · job {job_id} · turn {turn} · messages {messages}")


def _transcript(messages: Sequence[Message], models: ModelInfo, *, live: bool,
                now: Any = None, folded: Mapping[int, Sequence[Bid]] | None = None,
                people: frozenset[str] = frozenset()) -> None:
    """Every message in order; the newest model reply streams in word by word while live (a
    person's post is shown whole: nobody typed it token by token). `folded` (streamed runs):
    under each posted reply, the turn's other candidates, folded."""
    for i, message in enumerate(messages):
        person = message.role in people
        model = models.get(message.role, (None, None))[0] \
            if message.score is not None and not person else None
        newest = live and i == len(messages) - 1 and message.score is not None and not person
        if newest and now is not None:
            text, done = logic.reveal(message.content, message.timestamp, now)
            bubble(message, model=model, text=text, streaming=not done)
        else:
            bubble(message, model=model, person=person)
        if folded is not None and i > 0:  # message i is turn i's winner
            _folded(i, logic.losing_bids(folded.get(i, ())))


def _folded(turn: int, losers: Sequence[Bid]) -> None:
    """A settled turn's other candidates: out of the way, one click from their text."""
    if not losers:
        return
    with st.expander(f"Turn {turn}: {len(losers)} other candidate"
                     f"{'s' if len(losers) != 1 else ''} (not posted)",
                     icon=":material/unfold_more:"):
        for bid in losers:
            st.markdown(f"**{escape_markdown(bid.agent)}** · score {bid.score:.2f}")
            st.markdown(safe_markdown(bid.message))


def _candidates(snap: JobSnapshot) -> None:
    """Streamed runs: every candidate's reply forming under the transcript while the turn is
    open; once it settles the winner is posted and the others fold under it (_folded)."""
    turn, bids = snap.current_turn, snap.candidates
    if logic.streams(snap.config, snap.models) and _turn_open(snap):
        with st.container(key=f"forming_{snap.id}", border=True):
            st.caption(f"Turn {turn}: the candidates are writing")
            people = people_of(snap)
            for i, (agent, status, text, typing) in enumerate(
                    logic.candidate_rows(list(snap.agents), bids)):
                if agent in people and agent not in bids:  # no tokens: a person decides
                    status = PERSON_DECIDING
                with st.container(key=f"cand_{i}"):
                    st.markdown(f"**{escape_markdown(agent)}** · {escape_markdown(status)}")
                    if text:
                        st.markdown(safe_markdown(text) + (" ▌" if typing else ""))


def _turn_open(snap: JobSnapshot) -> bool:
    """A streamed turn is under way: its candidates are writing (not yet settled)."""
    turn = snap.current_turn
    last = snap.turns[-1] if snap.turns else None
    return bool(not snap.done and turn and (last is None or last.turn < turn))


def _floor(snap: JobSnapshot) -> None:
    """The current turn's bids as they arrive; between turns, the last decided turn."""
    threshold, penalty = logic.floor_settings(snap.config)
    agents = list(snap.agents or snap.models)
    turn, bids = snap.current_turn, snap.current_bids
    last = snap.turns[-1] if snap.turns else None
    if not bids and last is not None:
        turn, bids = last.turn, snap.bids_by_turn.get(last.turn, ())
    if last is not None and last.turn == turn:
        what = (f"{escape_markdown(last.winner)} spoke" if last.winner else
                "lull: no bid cleared the threshold" if last.lull else logic.NO_READABLE_BID)
        st.caption(f"Turn {turn}: decided, {what}")
    else:
        st.caption(f"Turn {turn}: {len(bids)} of {len(agents)} bids in" if turn
                   else "Waiting for the first turn…")
    if last is not None and last.winner is None and last.lull and snap.done:
        st.info(f"Turn {last.turn}: lull, so the chat ended.", icon=":material/pause_circle:")
    _bidding_floor(bids, threshold, penalty, agents, key=f"floor_{snap.id}")
    if snap.turns:
        # A heading line between chart and table: the table's hover toolbar sits above its top
        # edge and otherwise covers the chart's last agent name on a phone.
        st.caption("Past turns, newest first")
        st.dataframe(shown_turns(logic.past_turns(snap.turns, snap.bids_by_turn, agents)),
                     hide_index=True, key=f"turns_{snap.id}")


def shown_turns(table: pd.DataFrame) -> pd.DataFrame:
    """The past-turns table as shown: a turn without a winner has no margin, said by a dash
    (a missing number was drawn as a grey `None`)."""
    shown = table.copy()
    shown["margin"] = [NO_MARGIN if pd.isna(m) else f"{m:.3f}" for m in shown["margin"]]
    return shown


def _bidding_floor(bids: Iterable[Bid], threshold: float, recency_penalty: float,
                   agents: Sequence[str], key: str) -> None:
    fig = charts.bidding_floor(list(bids), threshold, recency_penalty, agents)
    fig.update_layout(title=None, height=320, margin={"t": 30, "b": 10, "l": 10, "r": 10},
                      legend={"orientation": "h", "y": 1.12, "x": 0})
    st.plotly_chart(fig, key=key, config={"displayModeBar": False})


def _problems(session: SessionState, snap: JobSnapshot) -> None:
    bids = [b for turn_bids in snap.bids_by_turn.values() for b in turn_bids]
    fatal = snap.record is not None and snap.record.stop_reason == "error"
    unreadable = logic.unreadable_turn(snap.turns, snap.bids_by_turn) if snap.done else None
    if unreadable is not None:  # the run stopped: say so, then each agent's reason below
        st.error(f"Turn {unreadable[0]}: {logic.NO_READABLE_BID}, so the run stopped with an "
                 "error (not a lull). Each agent's reason:", icon=":material/error:")
        _failure_errors(unreadable[1], snap.models, session.secrets(), fatal=True)
        return
    people = [b for b in bids if b.kind == "human"]
    for line in missed_posts(people):  # a person's silence, not a provider's failure
        st.info(line, icon=":material/timer_off:")
    _failure_errors(logic.failures(b for b in bids if b.kind != "human"), snap.models,
                    session.secrets(), fatal=fatal)
    if snap.status == "error" and snap.error:
        st.error(f"The run failed: {escape_markdown(mask_secrets(snap.error, session.secrets()))}")


def missed_posts(bids: Iterable[Bid]) -> list[str]:
    """One line per person who won a turn and let the post window close (the engine's note
    on their bid), said as that; markdown-safe."""
    return [f"Turn {b.turn}: **{escape_markdown(b.agent)}** won the floor but did not post in "
            f"time ({escape_markdown(b.error or '')}): not an error."
            for b in bids if b.kind == "human" and b.error]


def _failure_errors(failed: Mapping[str, str], models: ModelInfo, secrets: Sequence[str],
                    *, fatal: bool) -> None:
    """One actionable message per failing agent: which agent, what went wrong, what to do."""
    show = st.error if fatal else st.warning
    for agent, error in failed.items():
        model, api_base = models.get(agent, ("?", None))
        text = mask_secrets(error, secrets)[:400]
        show(f"**{escape_markdown(agent)}** ({escape_markdown(model_label(model))}) failed: "
             f"{escape_markdown(text)}  \n→ {escape_markdown(failure_hint(text, model, api_base))}")


def _ending(snap: JobSnapshot) -> None:
    if snap.status == "cancelled":
        st.info("Stopped. What was posted is kept, and the run is saved as cancelled.")
    if snap.record is not None:
        _summary(snap.record)
    if snap.run_id:
        st.page_link("app_pages/analysis.py", label="Open this run in Analysis",
                     icon=":material/monitoring:", query_params={"run": snap.run_id})


def _summary(record: RunRecord) -> None:
    """The end of a run at a glance: stop reason, turns, messages, tokens, cost, time."""
    st.html(PHONE_CSS)  # layout only: a compact grid of cards on a phone
    with st.container(key="cards_summary"):
        cards([(label, value, "", note) for label, value, note in logic.summary(record)],
              per_row=3)
