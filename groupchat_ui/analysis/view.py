"""The Analysis page's body, built from one stored run's data: the run picker, header, metric
cards, bid and speaker charts, the turn explainer, the transcript and the downloads.

Why here and not in the page: the page should stay a thin script that calls these in order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from groupchat_core import Message, StoreError, format_cost
from groupchat_core.analysis import (
    SpeakerMetrics,
    charts,
    distractor_turns,
    explain_turn,
    run_distractors,
    speaker_metrics,
    transition_matrix,
)
from groupchat_ui.kit.components import bubble, cards
from groupchat_ui.kit.frames import records
from groupchat_ui.kit.jobs import JobRegistry
from groupchat_ui.kit.labels import local_time, run_title
from groupchat_ui.kit.metrics import PHONE_CSS, metric_cards
from groupchat_ui.kit.providers import model_label
from groupchat_ui.kit.safety import escape_markdown
from groupchat_ui.kit.state import SessionState
from groupchat_ui.kit.store_access import RunData, downloads, run_token

from . import actions, logic, outcome_view, selection_view, whatif_view
from . import permalink_view as permalink

# every chart's plotly config: one modebar button, plotly's own "download as PNG" (drawn in
# the browser: no kaleido, no server-side browser)
_CHART: dict[str, Any] = {"displaylogo": False, "modeBarButtons": [["toImage"]],
                          "toImageButtonOptions": {"format": "png", "scale": 2}}


def no_ended_run(runs: pd.DataFrame) -> bool:
    return bool(runs.empty or not runs["status"].isin(logic.ENDED).any())


def session_runs(registry: JobRegistry, session: SessionState) -> list[str]:
    """Run ids of this browser session's ended chat jobs, newest first."""
    found = []
    for job in reversed(registry.jobs_for(session.owner)):
        if job.run_id and job.done:
            found.append(job.run_id)
    return found


def run_picker(runs: pd.DataFrame, session: SessionState, mine: Sequence[str] = (),
               resolve: Callable[[str], str] | None = None) -> str | None:
    """A run from the store: `?run=<id>` first (a full id or a unique prefix, through
    `resolve`: the store's), then this session's choice, then this session's newest ended run,
    then anyone's newest ended run (never a half-finished one by default). A link naming no
    single run shows why and an empty picker: None, never another run, and its `?run=` kept."""
    every: dict[str, Any] = {r["run_id"]: r for r in records(runs)}
    asked = st.query_params.get("run")
    try:
        wanted = _resolve_asked(asked, every, resolve) if asked else session.selected_run
    except StoreError as exc:
        _no_run(every, asked or "", exc)
        return None
    rows: dict[str, Any] = dict(logic.of_kind(every, picker_kind(every, wanted))) or every
    ids = list(rows)
    if wanted in rows and st.session_state.get("analysis_run") != wanted:
        st.session_state["analysis_run"] = wanted
    elif st.session_state.get("analysis_run") not in rows:
        shown = runs[runs["run_id"].isin(set(ids))]
        st.session_state["analysis_run"] = logic.default_run(shown, mine) or ids[0]
    run_id: str = st.selectbox("Run", ids, key="analysis_run",
                               format_func=lambda i: logic.picker_label(rows[i]),
                               on_change=actions.on_run_picked)
    session.selected_run = run_id
    st.query_params["run"] = run_id
    return run_id


def _resolve_asked(asked: str, every: dict[str, Any],
                   resolve: Callable[[str], str] | None) -> str:
    """The full id `?run=` names (StoreError if none, or one not listed yet)."""
    if asked in every:
        return asked
    if resolve is None:
        raise StoreError(f"no run {asked!r}")
    full = resolve(asked)
    if full not in every:
        raise StoreError(f"run {full[:12]} is not listed yet: reload the page in a moment")
    return full


def _no_run(every: dict[str, Any], asked: str, exc: StoreError) -> None:
    """The link's run id names no single run: say so and offer an empty picker (picking a
    run replaces the link's `?run=`)."""
    st.error(f"The link's run `{escape_markdown(asked[:80])}` opens nothing: "
             f"{escape_markdown(str(exc))}. Fix the link, or pick a run below.",
             icon=":material/link_off:")
    st.session_state["analysis_run"] = None  # until a pick replaces the link's ?run=
    st.selectbox("Run", list(every), key="analysis_run", index=None,
                 placeholder="pick a run",
                 format_func=lambda i: logic.picker_label(every[i]),
                 on_change=actions.on_run_picked)


def picker_kind(rows: dict[str, Any], wanted: str | None) -> str:
    """Single runs or sweep runs: the kind of the run asked for, else the user's choice."""
    kinds = [k for k in logic.RUN_KINDS if logic.of_kind(rows, k)]
    asked = logic.kind_of(rows[wanted]) if wanted in rows else None
    if asked and st.session_state.get("analysis_kind_applied") != wanted:
        st.session_state["analysis_kind"] = asked
        st.session_state["analysis_kind_applied"] = wanted
    if st.session_state.get("analysis_kind") not in kinds:
        st.session_state["analysis_kind"] = kinds[0] if kinds else logic.RUN_KINDS[0]
    if len(kinds) < 2:
        return str(st.session_state["analysis_kind"])
    # the options say what they are ("single runs (3)"): no label line above them, so the first
    # chart stays within a phone's first screen
    kind = st.segmented_control("Runs", kinds, key="analysis_kind", on_change=actions.on_kind,
                                format_func=lambda k: f"{k} ({len(logic.of_kind(rows, k))})",
                                label_visibility="collapsed")
    return str(kind or kinds[0])


def header(data: RunData) -> None:
    info = data.info
    agents = ", ".join(f"{escape_markdown(a['agent_name'])} "
                       f"({escape_markdown(model_label(a['model_name']))})"
                       for a in info["spec"].get("agents", []))
    people = run_people(data.bids)
    if people:  # a spec lists agents only: the people are who bid as people
        agents += "  \nPeople: " + ", ".join(escape_markdown(p) for p in people)
    title = run_title(info.get("name"), data.record.task)
    # an unnamed run's title is its task: said once, not twice
    task = ("" if title == data.record.task.strip()
            else f"Task: {escape_markdown(data.record.task)}  \n")
    st.markdown(f"**{escape_markdown(title)}** · started {local_time(info.get('started_at'))} · "
                f"status {info['status']} · stop reason {info['stop_reason'] or 'none'} · "
                f"threshold {data.threshold:g} · cost "
                f"{format_cost(data.record.total_cost_usd, data.record.unpriced_bids)}  \n"
                f"{task}Agents: {agents}")
    permalink.run_link(str(info["run_id"]))
    outcome_view.panel(data)
    unreadable(data)


def run_people(bids: pd.DataFrame) -> list[str]:
    """The people who bid in a run, in the order they first bid (none in a run without)."""
    if bids.empty or "kind" not in bids:
        return []
    return list(dict.fromkeys(str(a) for a in bids.loc[bids["kind"] == "human", "agent"]))


def unreadable(data: RunData) -> None:
    """A run stopped because no bid could be read: say so, and show every agent's reason."""
    turn = logic.unreadable_turn(data.turns) if not data.turns.empty else None
    if turn is None:
        return
    st.error(f"Turn {turn}: {logic.NO_READABLE_BID}, so the run stopped with an error (not a "
             "lull: a lull needs at least one bid that was read).", icon=":material/error:")
    with st.expander(f"Why: each agent's bid on turn {turn}", expanded=True):
        if data.record.error:
            st.caption(escape_markdown(data.record.error[:2000]))
        st.dataframe(logic.bid_reasons(data.bids, turn), hide_index=True,
                     key="unreadable_reasons")


def metrics(data: RunData) -> None:
    """The metric cards: a row of five on a wide screen, a compact grid on a phone."""
    m = _run_metrics(str(data.info["run_id"]), run_token(data.info), id(data), data)
    st.html(PHONE_CSS)  # layout only
    with st.container(key="cards_metrics"):
        cards(metric_cards(m))
    picks = logic.agreement_line(data.turns)  # human as selector: picks against the rule
    if picks:
        st.info(picks, icon=":material/how_to_vote:")
    for held in distractor_turns(data.turns, run_distractors(data.record.config)):
        st.info(escape_markdown(held.text()), icon=":material/campaign:")  # names are untrusted


TABS = ("Bids", "Speakers", "Why?", "Transcript", "Files")  # short: five fit on a phone


def tabs(data: RunData, run_id: str) -> None:
    """The five tabs; only the open one runs (`on_change="rerun"`), so opening a big run draws
    its two bid charts and not the speaker charts, 25 transcript tables and three downloads
    (built on first view) behind the other tabs. The open tab is kept across reruns and runs."""
    bodies: list[Callable[[], None]] = [  # in TABS order
        lambda: bid_charts(data), lambda: speaker_charts(data), lambda: explainer(data, run_id),
        lambda: transcript(data), lambda: download_buttons(run_id)]
    permalink.open_linked_tab("analysis_tab", "Why?")
    shown = st.tabs(list(TABS), key="analysis_tab", on_change="rerun")
    if not shown[TABS.index("Why?")].open:
        permalink.forget()  # the address names a turn only while the turn is shown
    for tab, body in zip(shown, bodies, strict=True):
        if tab.open:
            with tab:
                body()


def turn_window(data: RunData) -> tuple[int, int] | None:
    """The window of turns the per-turn charts show: the latest by default, a picker when the
    run has more than one window (every turn stays reachable). None: the whole run."""
    windows = logic.turn_windows([int(t) for t in data.turns["turn"]]) \
        if not data.turns.empty else []
    if len(windows) <= 1:
        return None
    if st.session_state.get("bid_window") not in windows:  # another run, or the first visit
        st.session_state["bid_window"] = windows[-1]
    window: tuple[int, int] = st.selectbox(
        "Turns shown", windows, key="bid_window",
        format_func=lambda w: f"turns {w[0]}–{w[1]}" + (" (latest)" if w == windows[-1]
                                                        else ""),
        help=f"Per-turn charts show {logic.BID_WINDOW} turns at a time; pick earlier turns here."
    ) or windows[-1]
    return window


def bid_charts(data: RunData) -> None:
    window = turn_window(data)
    # options that name themselves, no label line: the first chart within a phone's first screen
    value = st.segmented_control("Heatmap values", ["score", "adjusted"], default="adjusted",
                                 key="heatmap_value", label_visibility="collapsed",
                                 format_func=lambda v: {"score": "raw scores",
                                                        "adjusted": "adjusted scores"}[v])
    heatmap, lines = _bid_figures(str(data.info["run_id"]), run_token(data.info), id(data), window,
                                  value or "adjusted", data)
    st.plotly_chart(heatmap, key="bids_heatmap", config=_CHART)
    st.plotly_chart(lines, key="bid_lines", config=_CHART)


@st.cache_resource(show_spinner=False, max_entries=16)
def _run_metrics(run_id: str, version: tuple[Any, ...], data_id: int, _data: RunData
                 ) -> SpeakerMetrics:
    """The metric cards' numbers of one run, once for every session (as `_bid_figures`)."""
    return speaker_metrics(_data.turns, _data.bids, stop_reason=_data.record.stop_reason)


@st.cache_resource(show_spinner=False, max_entries=16)
def _bid_figures(run_id: str, version: tuple[Any, ...], data_id: int,
                 window: tuple[int, int] | None, value: str, _data: RunData
                 ) -> tuple[go.Figure, go.Figure]:
    """The Bids tab's two figures of one run's window, built once and shared by every session
    (`st.plotly_chart` copies a figure to send it, never changes it). Why: a fresh tab on a
    16,000-bid run built them again on every visit, 0.2 s of the server's CPU while the browser
    waited for its first chart (bench/analysis_cold.py). Keyed by the run, its version and the
    RunData object the store cache holds (a re-read run is another object: a new entry)."""
    bids, turns = logic.in_window(_data.bids, window), logic.in_window(_data.turns, window)
    return (charts.bids_heatmap(bids, value, _data.threshold, _data.agents),
            charts.bid_lines(bids, turns, _data.threshold, "adjusted", _data.agents))


def speaker_charts(data: RunData) -> None:
    """Who spoke when (per turn, in the chosen window), then the whole run's summaries."""
    window = turn_window(data)
    st.plotly_chart(charts.winner_timeline(logic.in_window(data.turns, window), data.agents),
                    key="winner_timeline", config=_CHART)
    m = speaker_metrics(data.turns, data.bids)
    if window is not None:
        st.caption("Below: the whole run.")
    left, right = st.columns(2)
    left.plotly_chart(charts.transition_heatmap(transition_matrix(data.turns, data.agents)),
                      key="transitions", config=_CHART)
    right.plotly_chart(charts.turn_shares(m), key="turn_shares", config=_CHART)


def explainer(data: RunData, run_id: str) -> None:
    turns = [int(t) for t in data.turns["turn"]] if not data.turns.empty else []
    if not turns:
        st.info("No turn was completed.")
        return
    outcomes = logic.outcomes(data.turns)
    permalink.follow_turn(turns, "explain_turn")
    if st.session_state.get("explain_turn") not in turns:
        st.session_state["explain_turn"] = turns[0]
    turn = st.selectbox("Why did this turn go the way it did?", turns, key="explain_turn",
                        format_func=lambda t: f"turn {t}: {outcomes[t]}")
    text = explain_turn(data.bids, data.turns, int(turn or turns[0]), data.threshold)
    st.info(escape_markdown(text), icon=":material/lightbulb:")
    permalink.turn_and_bid(run_id, int(turn or turns[0]), data.bids)
    whatif_view.whatif(data)
    selection_view.selection(data)


TRANSCRIPT_PAGE = 25  # turns per page: a 1,000-turn run must not draw 1,000 tables at once


def transcript(data: RunData) -> None:
    """The task, then each turn with what was said and every bid behind it (a page of turns
    at a time)."""
    messages = data.messages
    models = {a["agent_name"]: a["model_name"] for a in data.info["spec"].get("agents", [])}
    if not messages.empty:
        bubble(Message(role=messages.iloc[0]["role"], content=messages.iloc[0]["content"]))
    turns = [int(t) for t in data.turns["turn"]]
    outcomes = logic.outcomes(data.turns)
    starts = list(range(0, len(turns), TRANSCRIPT_PAGE))
    start = 0
    if len(starts) > 1:
        if st.session_state.get("transcript_page") not in starts:  # another run was shorter
            st.session_state["transcript_page"] = 0
        start = st.selectbox("Turns", starts, key="transcript_page", format_func=lambda i: (
            f"turns {turns[i]}–{turns[min(i + TRANSCRIPT_PAGE, len(turns)) - 1]}")) or 0
    shown = turns[start:start + TRANSCRIPT_PAGE]
    bids = data.bids[data.bids["turn"].isin(shown)]
    by_turn = {int(r["turn"]): r for r in records(messages)[1:]}
    people = set(run_people(data.bids))
    for turn in shown:
        label = f"Turn {turn}: {escape_markdown(outcomes[turn])}"  # labels are markdown
        with st.expander(label, expanded=turn <= 3):
            row = by_turn.get(turn)
            if row is not None:
                bubble(Message(role=row["role"], content=row["content"], score=row["score"]),
                       model=models.get(row["role"]), turn=turn,
                       person=row["role"] in people)
            st.dataframe(logic.turn_bids(bids, turn), hide_index=True, key=f"turn_bids_{turn}")


def download_buttons(run_id: str) -> None:
    files = downloads(run_id)
    cols = st.columns(3)
    cols[0].download_button("Bundle (JSON)", files["bundle"], f"run-{run_id[:8]}.json",
                            "application/json", key="download_bundle", on_click="ignore",
                            help="The whole run; import it on the Runs page of any lab.")
    cols[1].download_button("Bids (CSV)", files["csv"], f"bids-{run_id[:8]}.csv", "text/csv",
                            key="download_csv", on_click="ignore")
    cols[2].download_button("Transcript (Markdown)", files["markdown"],
                            f"transcript-{run_id[:8]}.md", "text/markdown",
                            key="download_md", on_click="ignore")
