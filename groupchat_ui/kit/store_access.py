"""Shared resources and cached reads for the pages.

Why: `st.cache_resource` holds the thread-safe, process-wide objects (the RunStore for the
configured URL, the JobRegistry); `st.cache_data` holds reads, keyed on the store URL (so a test
that points GROUPCHAT_DB elsewhere gets fresh data) and on a freshness token for runs (status,
end time and turn count: a running run's data is never served stale); a run's data is one
shared read-only object (`st.cache_resource`, not copied per hit). Writes call
`invalidate()`; short lifetimes bound what writers outside this process can leave stale.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd
import streamlit as st

from groupchat_core import (
    Agent,
    RunRecord,
    StoreError,
    bids_csv,
    bundle_json,
    chat_default,
    transcript_markdown,
)
from groupchat_core.store import RunStore, default_url, safe_url

from .jobs import JobRegistry
from .jobs import registry as process_registry
from .safety import escape_markdown


@st.cache_resource(show_spinner=False)
def _store_at(url: str) -> RunStore:
    return RunStore(url)


def store() -> RunStore:
    """The RunStore at GROUPCHAT_DB (or the default SQLite file), one per URL per process."""
    return _opened(default_url())


def _opened(url: str) -> RunStore:
    """The cached store at `url`. One that cannot be opened (a damaged SQLite file, an
    unreachable server) stops the page with the store's one-line reason and fix, instead of
    a traceback."""
    try:
        return _store_at(url)
    except StoreError as exc:
        st.error(f"The store cannot be opened: {escape_markdown(str(exc))}",
                 icon=":material/error:")
        st.stop()


def data_location() -> str:
    return safe_url(default_url())


@st.cache_resource(show_spinner=False)
def job_registry() -> JobRegistry:
    """The process-wide job registry: one background runner for every session."""
    return process_registry()


@st.cache_data(show_spinner=False, max_entries=8)
def _agent_specs(url: str, version: tuple[Any, ...]) -> tuple[list[dict[str, Any]], list[str]]:
    loaded, problems = _opened(url).saved_agents()
    return [a.to_spec() for a in loaded], problems


def agent_problems() -> list[str]:
    """One line per saved agent that no longer loads (shown on the Agents page)."""
    url = default_url()
    return _agent_specs(url, _opened(url).agents_version())[1]


def agents() -> list[Agent]:
    """Saved agents (by name); never carry a key. Cached until the store's agents change, by
    whichever writer (this dashboard, the CLI, another server): one small query checks."""
    url = default_url()
    return [Agent.model_validate(spec)
            for spec in _agent_specs(url, _opened(url).agents_version())[0]]


@st.cache_data(show_spinner=False, ttl=2, max_entries=16)
def _runs(url: str, status: str | None, agent: str | None, since: str | None) -> pd.DataFrame:
    return _opened(url).list_runs(status=status, agent=agent, since=since)


def runs(status: str | None = None, agent: str | None = None,
         since: str | None = None, *, fresh: bool = False) -> pd.DataFrame:
    """Runs, newest first (a 2-second cache: running runs change). `fresh`: read the store
    now (a link to a run another writer recorded a moment ago must open it)."""
    if fresh:
        _runs.clear()
    return _runs(default_url(), status, agent, since)


@dataclass(frozen=True)
class RunData:
    """One run ready for analysis: its row, its record and the three frames."""

    info: dict[str, Any]
    record: RunRecord
    bids: pd.DataFrame
    turns: pd.DataFrame
    messages: pd.DataFrame

    @property
    def threshold(self) -> float:
        return float(self.info["spec"].get("threshold", chat_default("threshold")))

    @property
    def agents(self) -> list[str]:
        return [a["agent_name"] for a in self.info["spec"].get("agents", [])]


@st.cache_resource(show_spinner=False, max_entries=8)
def _run_data(url: str, run_id: str, token: tuple[Any, ...]) -> RunData:
    """One object per run and change, shared by every session and never copied: a cache_data
    hit unpickled the whole record each script run (16,000 Bid models: 0.33 s of a big run's
    Analysis page, bench.analysis_cold). The token (status, end, turns) keys a changed run to a
    new entry; readers treat it as read-only (tests/ui/test_page_reads.py)."""
    s = _opened(url)
    record = s.load_run(run_id)
    return RunData(s.run_info(run_id), record, record.bids_frame(), record.turns_frame(),
                   s.messages(run_id))


def run_token(info: dict[str, Any]) -> tuple[Any, ...]:
    """What changes when a stored run does (status, end, turns): the key of what is cached
    per run, here and on the pages."""
    return info["status"], info["ended_at"], info["turns"]


def run_data(run_id: str) -> RunData:
    """A stored run (StoreError if it is gone), re-read whenever it has changed."""
    info = store().run_info(run_id)
    return _run_data(default_url(), run_id, run_token(info))


@st.cache_data(show_spinner=False, max_entries=8)
def _downloads(url: str, run_id: str, token: tuple[Any, ...]) -> dict[str, str]:
    s = _opened(url)
    return {"bundle": bundle_json(s, run_id), "csv": bids_csv(s, run_id),
            "markdown": transcript_markdown(s, run_id)}


def downloads(run_id: str) -> dict[str, str]:
    """The bundle JSON, bids CSV and Markdown transcript of a run (built once per change)."""
    return _downloads(default_url(), run_id, run_token(store().run_info(run_id)))


def invalidate() -> None:
    """Forget cached reads after a write (agents saved, runs deleted or imported)."""
    for cached in (_agent_specs, _runs, _run_data, _downloads):
        cached.clear()
