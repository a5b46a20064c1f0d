"""The Run page's live view of a background job (DESIGN.md, "Running jobs from Streamlit").

Why a fragment with `run_every` only while the job runs: only the fragment redraws every half
second (no flicker, unsent form input survives); when it sees the job end it calls `st.rerun()`,
whose full run declares the fragment again without a timer. Everything shown comes from an
immutable snapshot copied under the registry's lock; nothing here touches the job itself.
"""

from __future__ import annotations

from datetime import UTC, datetime

import streamlit as st

from . import actions
from .components import (
    bidding_floor,
    failure_errors,
    status_line,
    summary,
    transcript,
)
from .job_registry import JobRegistry, JobSnapshot
from .safety import escape_markdown, redact
from .state import SessionState
from .views import failures, past_turns

REFRESH_S = 0.5


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
    """This session's jobs, newest first; a selector when there are several."""
    snaps: dict[str, JobSnapshot] = {}
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
        if st.session_state.get("job_select") not in ids:
            st.session_state["job_select"] = current
        current = st.selectbox("Job", ids, key="job_select", on_change=actions.job_selected,
                               format_func=lambda i: _job_label(snaps[i]))
    session.current_job = current
    st.query_params["job"] = current
    return current


def _job_label(snap: JobSnapshot) -> str:
    started = datetime.fromtimestamp(snap.created_at).strftime("%H:%M:%S")
    return f"{started} · {', '.join(snap.models)} · {snap.status} · {snap.id[:8]}"


def job_panel(registry: JobRegistry, session: SessionState, job_id: str) -> None:
    """The live (or finished) view of one job."""
    running = not registry.snapshot(job_id).done

    @st.fragment(run_every=REFRESH_S if running else None)
    def live() -> None:
        snap = registry.snapshot(job_id)
        if running and snap.done:
            st.rerun()  # the full run declares this fragment again, without the timer
        _render(registry, session, snap)

    live()


def _render(registry: JobRegistry, session: SessionState, snap: JobSnapshot) -> None:
    status_line(snap.status, snap.id, snap.current_turn, max(len(snap.messages) - 1, 0))
    if not snap.done:
        st.button("Stop", key="stop_run", type="primary", icon=":material/stop_circle:",
                  on_click=registry.cancel, args=(snap.id,))
    else:
        _ending(snap)
    _problems(session, snap)
    left, right = st.columns([5, 4])
    with left, st.container(height=560, autoscroll=True, border=False):
        transcript(snap.messages, snap.models, live=not snap.done, now=datetime.now(UTC))
    with right:
        _floor(snap)


def _floor(snap: JobSnapshot) -> None:
    """The current turn's bids as they arrive; between turns, the last decided turn."""
    threshold = float(snap.config.get("threshold", 0.5))
    penalty = float(snap.config.get("recency_penalty", 0.0))
    agents = list(snap.agents or snap.models)
    turn, bids = snap.current_turn, snap.current_bids
    last = snap.turns[-1] if snap.turns else None
    if not bids and last is not None:
        turn, bids = last.turn, snap.bids_by_turn.get(last.turn, ())
    if last is not None and last.turn == turn:
        what = (f"{escape_markdown(last.winner)} spoke" if last.winner else
                "lull: no bid cleared the threshold" if last.lull else "every bid failed")
        st.caption(f"Turn {turn}: decided, {what}")
    else:
        st.caption(f"Turn {turn}: {len(bids)} of {len(agents)} bids in" if turn
                   else "Waiting for the first turn…")
    if last is not None and last.winner is None and snap.done:
        st.info(f"Turn {last.turn}: {'lull' if last.lull else 'every bid failed'}, so the "
                "chat ended.", icon=":material/pause_circle:")
    bidding_floor(bids, threshold, penalty, agents, key=f"floor_{snap.id}")
    if snap.turns:
        st.dataframe(past_turns(snap.turns, snap.bids_by_turn, agents), hide_index=True,
                     key=f"turns_{snap.id}")


def _problems(session: SessionState, snap: JobSnapshot) -> None:
    bids = [b for turn_bids in snap.bids_by_turn.values() for b in turn_bids]
    fatal = snap.record is not None and snap.record.stop_reason == "error"
    failure_errors(failures(bids), snap.models, session.secrets(), fatal=fatal)
    if snap.status == "error" and snap.error:
        st.error(f"The run failed: {escape_markdown(redact(snap.error, session.secrets()))}")


def _ending(snap: JobSnapshot) -> None:
    if snap.status == "cancelled":
        st.info("Stopped. What was posted is kept, and the run is saved as cancelled.")
    if snap.record is not None:
        summary(snap.record)
    if snap.run_id:
        st.page_link("app_pages/analysis.py", label="Open this run in Analysis",
                     icon=":material/monitoring:", query_params={"run": snap.run_id})
