"""The sidebar every page shares: this session's jobs (live or recent) and where data lives."""

from __future__ import annotations

from datetime import datetime

import streamlit as st

from .job_registry import JobRegistry
from .safety import escape_markdown
from .state import SessionState

_ICONS = {"queued": ":material/schedule:", "running": ":material/autorenew:",
          "finished": ":material/check_circle:", "cancelled": ":material/stop_circle:",
          "error": ":material/error:"}


def sidebar(session: SessionState, registry: JobRegistry, location: str) -> None:
    """Jobs of this browser session only (never another session's), newest first."""
    with st.sidebar:
        jobs = registry.jobs_for(session.owner)
        running = [j for j in jobs if not j.done]
        st.caption(f"Jobs of this session: {len(running)} running, {len(jobs)} in all")
        for job in reversed(jobs[-5:]):
            names = escape_markdown(", ".join(job.models)) or "?"  # link labels are markdown
            started = datetime.fromtimestamp(job.created_at).strftime("%H:%M")
            st.page_link("app_pages/run.py", label=f"{started} · {names}",
                         icon=_ICONS.get(job.status), query_params={"job": job.id},
                         help=f"job {job.id}: {job.status}")
        st.divider()
        st.caption(f"Data: `{location}`")
        st.caption("sim/ models are offline simulations, not language models.")
