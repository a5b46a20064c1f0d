"""The Sweeps page's grid definition and live view (DESIGN.md, "Running jobs from Streamlit").

Why plain widgets, not a form: the cell count and the pre-flight estimate update as the grid is
typed. A sweep runs as a generic job on the engine loop (JobRegistry.start_job); its progress is
folded from the job's events inside a fragment that redraws every half second only while the
sweep runs, like the Run page's live view.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import streamlit as st

from groupchat_core import (
    BID_PROMPT_PRESETS,
    CHAT_BOUNDS,
    CHAT_CHOICES,
    SIM_NOTE,
    STRATEGIES,
    SWEEP_BOUNDS,
    Agent,
    ConfigError,
    StoreError,
    chat_default,
)
from groupchat_core.store import RunStore
from groupchat_core.sweeps import CallCounts, SweepSpec, sweep_summary
from groupchat_ui.kit import store_access
from groupchat_ui.kit.components import confirm, refresh_every
from groupchat_ui.kit.jobs import JobRegistry, may_manage, not_yours
from groupchat_ui.kit.presets import PRESETS
from groupchat_ui.kit.safety import escape_markdown
from groupchat_ui.kit.state import SessionState
from groupchat_ui.kit.sweep_status import SweepStatus
from groupchat_ui.kit.traces import TRACE_KEY

from . import logic as svc
from . import tasks_view

REFRESH_S = 0.5
REFRESH_HELP = ("Counted from the store, where every turn is recorded as it completes; refreshed "
                "every half second while the sweep runs.")
SAVED = "Saved agents"

# The live panel's last read of its sweep (a Snapshot), which the Results caption of the same
# sweep draws instead of reading the store again: two reads, half a second apart on their own
# timers, showed "0 / 2" beside "1 / 2 cells" and 30 turns beside 22.
SNAPSHOT_KEY = "sw_panel_snapshot"

LOOPS = CHAT_BOUNDS["max_loops"]
ORDERS = {"fixed": "as listed", "all": "every order", "sample": "sampled orders"}


@dataclass(frozen=True)
class Snapshot:
    """One read of a sweep: its status line and its totals (runs, calls, cost)."""

    status: SweepStatus
    summary: dict[str, Any] | None  # None while the sweep's row does not exist yet

    def totals(self) -> str:
        """'1,200 runs · 6,500 model calls needed, 1,800 made (...) · $0.0000': the calls in
        the words of the CLI's last line and `sweep show` (CallCounts.text)."""
        if self.summary is None:
            return ""
        s = self.summary
        counts = CallCounts(made=s["calls"], cached=s["calls_cached"], bids=s["bids"],
                            cache_hits=s["cache_hits"], cost_usd=s["cost_usd"])
        return f"{s['runs']} runs · {counts.text()} · ${counts.cost_usd:.4f}"


def read_snapshot(store: RunStore, status: SweepStatus) -> Snapshot:
    """The status with the sweep's totals, read together (no summary before its row)."""
    summary = None
    if status.sweep_id is not None:
        try:
            summary = sweep_summary(store, status.sweep_id)
        except StoreError:
            summary = None
    return Snapshot(status, summary)


def panel_snapshot(sweep_id: str) -> Snapshot | None:
    """What this session's live panel last read, when it shows sweep `sweep_id`."""
    shown = st.session_state.get(SNAPSHOT_KEY)
    return shown if isinstance(shown, Snapshot) and shown.status.sweep_id == sweep_id else None


def _range(name: str) -> tuple[int, int]:
    """(min, max) of a sweep setting's number input: the core's SWEEP_BOUNDS."""
    bound = SWEEP_BOUNDS[name]
    return int(bound.low), int(bound.high)


def _room(agents: list[Agent]) -> tuple[list[Agent], str]:
    """The chosen agents (a preset's sims, or saved agents) and a sample task."""
    room = st.selectbox("Agents", [*PRESETS, SAVED], key="sw_room",
                        help="Presets are offline sim/ agents (simulations, no key needed).")
    if room != SAVED:
        preset = PRESETS[room]
        return preset.build_agents(latency_s=0), preset.task
    names = [a.agent_name for a in agents]
    if "sw_saved" in st.session_state:  # remembered (form_memory): drop deleted agents
        st.session_state["sw_saved"] = [n for n in st.session_state["sw_saved"] if n in names]
    chosen = st.multiselect("Saved agents (in order)", names, default=names[:3], key="sw_saved")
    return [a for a in agents if a.agent_name in chosen], ""


def _options() -> dict[str, Any]:
    cols = st.columns(6)
    return {
        "max_loops": cols[0].number_input("max_loops", int(LOOPS.low), int(LOOPS.high), 12,
                                          key="sw_max_loops", help=f"{LOOPS.text()}; 12 keeps "
                                          "a sweep's chats short (the engine's default is "
                                          f"{chat_default('max_loops')})."),
        "repeats": cols[1].number_input("repeats", *_range("repeats"), 3, key="sw_repeats",
                                        help="Repeat r runs with seed r."),
        "concurrency": cols[2].number_input("concurrency", *_range("concurrency"),
                                            SweepSpec.model_fields["concurrency"].default,
                                            key="sw_concurrency"),
        "max_calls": cols[3].number_input("max_calls (0: none)", 0, None, 0, key="sw_max_calls"),
        "max_usd": cols[4].number_input("max_usd (0: none)", 0.0, None, 0.0, step=0.5,
                                        key="sw_max_usd"),
        "name": cols[5].text_input("Name", "sweep", key="sw_name"),
    }


def _search() -> dict[str, Any]:
    """Grid or random search over threshold and penalty; agent order, roster and temperature
    as extra axes (blank: not swept)."""
    mode = st.radio("Search", ["grid", "random"], key="sw_search", horizontal=True,
                    format_func={"grid": "Grid (every combination)",
                                 "random": "Random search (N draws from ranges)"}.get,
                    help="Random search draws threshold and penalty uniformly from their "
                         "ranges, seeded: the same inputs draw the same cells.")
    search: dict[str, Any] = {"mode": mode}
    if mode == "random":
        rand = st.columns(3)
        search["samples"] = rand[0].number_input("draws", *_range("samples"), 10,
                                                 key="sw_samples")
        search["threshold_range"] = rand[1].text_input("threshold range (low, high)",
                                                       "0.2, 0.8", key="sw_rand_threshold")
        search["penalty_range"] = rand[2].text_input("recency_penalty range (low, high)",
                                                     "0.0, 0.5", key="sw_rand_penalty")
    more = st.columns(4)
    search["order"] = more[0].selectbox(
        "Agent order", list(ORDERS), key="sw_order", format_func=lambda o: ORDERS[o],
        help="Ties go to the agent earlier in the order, so the order is a parameter.")
    search["order_samples"] = more[1].number_input("sampled orders", *_range("samples"), 6,
                                                   key="sw_order_samples",
                                                   disabled=search["order"] != "sample")
    search["roster_sizes"] = more[2].text_input(
        "roster sizes (blank: everyone)", "", key="sw_roster",
        help="Every subset of the agents of these sizes takes part, e.g. 2, 3.")
    search["temperature"] = more[3].text_input("temperature values (blank: as set)", "",
                                               key="sw_temperature")
    who = st.columns([2, 1, 1])
    search["strategies"] = who[0].multiselect(
        "Who speaks (strategies compared)", STRATEGIES, default=["bidding"], key="sw_strategy",
        help="Each strategy chosen is a value of the strategy axis: bidding (the default), "
             "round_robin, random, selector, bid_then_speak, all_speak, vote. "
             "Bidding alone (or none): not swept.")
    search["selector_model"] = who[1].text_input(
        "Selector model", "", key="sw_selector_model",
        placeholder=f"blank: {chat_default('selector_model')}",
        help="The model the selector strategy asks to name the next speaker; other "
             "strategies ignore it.")
    search["selector_api_base"] = who[2].text_input(
        "Selector endpoint (api_base)", "", key="sw_selector_api_base",
        placeholder="blank: the model's provider",
        help="The OpenAI-compatible server the selector model is asked on, as an agent's "
             "api_base (e.g. a local llama.cpp server).")
    seen = st.columns(1 + len(CHAT_CHOICES))
    search["bid_prompt"] = seen[0].multiselect(
        "Bid prompts (presets compared)", list(BID_PROMPT_PRESETS),
        default=[svc.PRESET_DEFAULT], key="sw_bid_prompt",
        help="Each preset chosen is a value of the bid_prompt axis: swarms-14 (the default) "
             "or swarms-16 (the reference's 16.0.3 prompt). The default alone: not swept.")
    for col, (setting, choices) in zip(seen[1:], CHAT_CHOICES.items(), strict=True):
        search[setting] = col.multiselect(
            setting, list(choices), default=[choices[0]], key="sw_" + setting,
            help=f"Each choice is a value of the {setting} axis ({choices[0]} is the default; "
                 "it alone is not swept).")
    return search


def define(store: RunStore, agents: list[Agent]) -> SweepSpec | None:
    """The grid inputs with the live cell count and estimate; the spec, or None if invalid."""
    chosen, task = _room(agents)
    tasks = tasks_view.choose(task)
    search = _search()
    drawn = ("threshold", "recency_penalty") if search["mode"] == "random" else ()
    axes = [a for a in svc.GRID_AXES if a not in drawn]
    cols = st.columns(3)
    grid = {axis: cols[i].text_input(f"{axis} values (comma-separated)",
                                     svc.DEFAULT_GRID[axis], key=f"sw_{axis}")
            for i, axis in enumerate(axes)}
    options = _options()
    if chosen and svc.all_sim(chosen):
        st.caption(f":material/science: {SIM_NOTE}")
    if tasks is None:  # the task set's one line is shown under it
        return None
    try:
        spec = svc.build_spec(chosen, tasks, grid, options, search)
        cells, text, head = svc.preflight(spec, store)
    except ConfigError as exc:
        st.error(f"Fix the grid: {escape_markdown(str(exc))}", icon=":material/error:")
        return None
    st.markdown(f"**{cells:,} cells** ({escape_markdown(spec.space_text())}) · {head}")
    st.code(text, language=None, wrap_lines=True)
    return spec


def where() -> dict[str, Any]:
    """Where the cells run: this server's process (default) or a Ray cluster, at an address
    or (blank) a local cluster started for the sweep."""
    cols = st.columns([1, 2])
    executor = cols[0].radio(
        "Run cells on", list(svc.EXECUTORS), key="sw_executor", horizontal=True,
        format_func=svc.EXECUTORS.get,
        help="A Ray cluster runs each cell as a Ray task, over as many machines as it has; "
             "needs the ray extra: pip install 'groupchat-lab[ray]'.")
    address = cols[1].text_input(
        "Ray address (blank: start a local cluster)", "", key="sw_ray_address",
        disabled=executor != "ray", placeholder="host:port of the head, or auto",
        help="The head of a running cluster (`ray start --head` prints it), `auto` for the "
             "cluster this machine belongs to, or blank to start one on this server.")
    cpus = cols[1].number_input(
        "CPUs per cell (Ray)", min_value=0.01, max_value=64.0, value=None, step=0.25,
        key="sw_cpus_per_cell", disabled=executor != "ray",
        placeholder="the spec's cpus_per_cell, else 1",
        help="Ray CPUs each cell reserves: 1 suits sim cells (CPU-bound); a fraction such as "
             "0.25 lets cells that wait on HTTP models share a CPU, so more run at once.")
    return {"executor": executor, "ray_address": address, "cpus_per_cell": cpus}


def tracing_on() -> bool:
    """The Settings page's "Trace runs" switch (runs and sweeps started in this tab)."""
    return bool(st.session_state.get(TRACE_KEY, False))


def launch(registry: JobRegistry, store: RunStore, session: SessionState,
           spec: SweepSpec | None, runner: dict[str, Any] | None = None) -> None:
    """The Start button: starts nothing unless the grid is valid and (on Ray) Ray is installed
    and the address answers; else the engine's one line, under the button."""
    if st.button("Start sweep", key="sw_start", type="primary", icon=":material/play_arrow:",
                 disabled=spec is None):
        if spec is not None:
            try:
                job_id = svc.start_sweep(registry, store, session.owner, spec,
                                         user=session.user, user_name=session.user_name,
                                         trace=tracing_on(), **(runner or {}))
            except ConfigError as exc:
                st.error(f"Cannot start the sweep: {escape_markdown(svc.page_words(str(exc)))}",
                         icon=":material/error:")
                return
            session.sweep_jobs.append(job_id)
            st.rerun()


def resume_button(registry: JobRegistry, store: RunStore, session: SessionState,
                  sweep_id: str, key: str) -> None:
    """Resume a stopped or interrupted sweep: only its unfinished cells run; only its owner
    may resume it (others see the button disabled, with the reason)."""
    try:
        sweep = store.get_sweep(sweep_id)
    except StoreError as exc:
        st.error(escape_markdown(str(exc)))
        return
    mine = may_manage(sweep.get("owner"), session.user)
    reason = None if mine else not_yours(sweep.get("owner_name") or sweep.get("owner"), "sweep")
    if st.button("Resume", key=key, icon=":material/resume:", disabled=not mine,
                 help=reason or "Run the cells that did not finish; finished cells are never "
                                "rerun."):
        try:
            job_id = svc.start_sweep(registry, store, session.owner, resume=sweep_id,
                                     user=session.user, user_name=session.user_name,
                                     trace=tracing_on())
        except (ConfigError, StoreError) as exc:
            st.error(escape_markdown(str(exc)))
            return
        session.sweep_jobs.append(job_id)
        st.rerun()
    if reason:
        st.caption(escape_markdown(reason))


def delete_button(store: RunStore, session: SessionState, info: dict[str, Any],
                  running: bool) -> None:
    """Delete the sweep shown, with its runs, after a confirmation naming it; only its owner
    (or an admin) may: others see the button disabled, with the reason."""
    sweep_id, name = info["sweep_id"], str(info.get("name") or "")
    mine = may_manage(info.get("owner"), session.user)
    reason = (not_yours(info.get("owner_name") or info.get("owner"), "sweep") if not mine else
              "Stop the sweep first." if running else None)
    st.button("Delete sweep", key="sw_delete", icon=":material/delete:",
              disabled=reason is not None, on_click=_ask_delete, args=(session, sweep_id),
              help=reason or "Delete this sweep and its runs for good.")
    if session.confirm_sweep_delete == sweep_id:
        confirm(f"Delete sweep **{escape_markdown(name)}** ({sweep_id[:8]}) and its "
                f"{info.get('runs', 0)} run(s) for good? Nothing can undo that.",
                "confirm_sweep_delete", lambda yes: _on_delete(store, session, sweep_id, yes),
                yes="Yes, delete")


def _ask_delete(session: SessionState, sweep_id: str) -> None:
    session.confirm_sweep_delete = sweep_id


def _on_delete(store: RunStore, session: SessionState, sweep_id: str, confirmed: bool) -> None:
    session.confirm_sweep_delete = None
    if not confirmed:
        return
    try:
        count = svc.delete_sweep(store, sweep_id, session.user)
    except (ConfigError, StoreError) as exc:
        session.notify("error", f"Nothing was deleted: {exc}")
        return
    st.session_state.pop("sw_pick", None)
    st.query_params.pop("sweep", None)
    store_access.invalidate()
    session.notify("success", f"Deleted sweep {sweep_id[:8]} and its {count} run(s).")


def _latest(registry: JobRegistry, session: SessionState) -> Any:
    for job_id in reversed(session.sweep_jobs):
        try:
            return registry.task_snapshot(job_id)
        except KeyError:
            continue
    return None


def _adopt_from_url(registry: JobRegistry, store: RunStore,
                    session: SessionState) -> str | None:
    """`?sweep=<id>` (a reload, a shared link; a full id or a unique prefix): if this process
    runs that sweep, show its job (with Stop) as the latest of this session; returns its full
    id, None when the link names no single sweep (Results says why)."""
    asked = st.query_params.get("sweep")
    try:
        wanted = store.resolve_sweep(asked) if asked else None
    except StoreError:
        return None
    if not wanted:
        return None
    mine = {svc.progress(s.events).sweep_id for s in registry.tasks_for(
        session.owner, "sweep", session.user) if s.id in session.sweep_jobs}
    if wanted not in mine:
        running = registry.find_tasks("sweep", lambda s: not s.done and svc.progress(
            s.events).sweep_id == wanted)
        if running and running[-1].id not in session.sweep_jobs:
            session.sweep_jobs.append(running[-1].id)
    return wanted


def _stored_status(store: RunStore, sweep_id: str) -> None:
    """No job of this process runs sweep `sweep_id`: say what the store says. A sweep left
    `running` by a dead process is marked interrupted first (then Results offers Resume)."""
    try:
        status = store.get_sweep(sweep_id)["status"]
        if status == "running":
            store.mark_interrupted()
            status = store.get_sweep(sweep_id)["status"]
    except StoreError as exc:
        st.caption(f"sweep status: unknown · {escape_markdown(str(exc))}")
        return
    if status == "running":
        st.caption(f"sweep status: running · {sweep_id[:8]} · in another process: stop it "
                   "there (this page cannot)")
    else:
        st.caption(f"sweep status: {status} · {sweep_id[:8]} · not running here"
                   + (": Resume under Results runs the rest" if status in svc.RESUMABLE
                      else ""))


def live(registry: JobRegistry, store: RunStore, session: SessionState) -> None:
    """This session's latest sweep job: progress, live cells, Stop; Resume once stopped. A
    sweep named in `?sweep=` shows its real status: live with Stop if this process runs it,
    else as stored (interrupted, with Resume, if its process is gone)."""
    wanted = _adopt_from_url(registry, store, session)
    snap = _latest(registry, session)
    st.session_state.pop(SNAPSHOT_KEY, None)  # set again below while the panel shows a job
    if snap is None:
        if wanted:
            _stored_status(store, wanted)
        else:
            st.caption("sweep status: idle · no sweep yet in this session")
        return
    focused = _focus(snap)
    running = not snap.done

    @st.fragment(run_every=refresh_every("sweep-live", REFRESH_S if running else None))
    def panel() -> None:
        now = registry.task_snapshot(snap.id)
        if svc.page_behind(running, focused, now):
            st.rerun()
        _render(registry, store, session, now)

    panel()


def _focus(snap: Any) -> str | None:
    """Once per job, show its sweep in the results picker (before the picker is drawn).
    Returns the job's sweep id; None while the job has not created its sweep yet."""
    seen: set[str] = st.session_state.setdefault("sw_focused", set())
    sweep_id = svc.progress(snap.events).sweep_id
    if sweep_id and snap.id not in seen:
        seen.add(snap.id)
        st.session_state["sw_pick"] = sweep_id
        st.query_params["sweep"] = sweep_id
    return sweep_id


def _render(registry: JobRegistry, store: RunStore, session: SessionState, snap: Any) -> None:
    """The job's status: the same line (kit/sweep_status.py) as Results and the sidebar."""
    try:
        shown = read_snapshot(store, svc.job_status(store, snap))
    except StoreError as exc:
        st.error(f"Cannot read the sweep from the store: {escape_markdown(str(exc))}")
        return
    st.session_state[SNAPSHOT_KEY] = shown  # the Results caption of this sweep draws it too
    status = shown.status
    st.caption(f"{status.text()} · {escape_markdown(status.name)} · "
               f"{(status.sweep_id or '')[:8]}", help=REFRESH_HELP)
    st.progress(status.fraction, text=status.cells_text())
    prog = svc.progress(snap.events)
    mine = may_manage(snap.user, session.user)
    if not snap.done:
        reason = None if mine else not_yours(snap.user_name, "sweep")
        st.button("Stop", key="sw_stop", type="primary", icon=":material/stop_circle:",
                  on_click=_stop, args=(registry, snap.id, session.user),
                  disabled=not mine, help=reason)
        if reason:
            st.caption(escape_markdown(reason))
    elif snap.status == "error":
        st.error(f"The sweep failed: {escape_markdown(snap.error or '')}")
    elif prog.outcome is not None and prog.outcome.status != "finished":
        st.info(f"Sweep {prog.outcome.status}: {escape_markdown(prog.outcome.reason or '')}. "
                "Finished cells are kept; Resume (under Results) runs only the rest.")
    st.dataframe(prog.table(status), hide_index=True, key=f"sw_cells_{snap.id}", height=240)
    _workers(snap)


def _workers(snap: Any, key: str | None = None) -> None:
    """A sweep on Ray: where its cluster is, and cells per worker (nothing for a local one)."""
    ray = svc.ray_state(snap.events)
    if ray is None:
        return
    st.caption(escape_markdown(ray_line(ray, snap.done)))
    workers = svc.worker_table(snap.events)
    if workers.empty:
        st.caption("workers: none has finished a cell yet")
        return
    st.caption(f"Ray workers: {len(workers)} worker(s) ran "
               f"{int(workers['finished'].sum())} finished cell(s).")
    st.dataframe(workers, hide_index=True, key=key or f"sw_workers_{snap.id}")


def ray_workers(registry: JobRegistry, sweep_id: str) -> None:
    """Under Results: the per-worker table of this process's latest Ray job of sweep
    `sweep_id` (any session's), so it is there after a reload or from another tab too, not
    only in the live panel of the session that started it. Nothing for a local sweep."""
    jobs = registry.find_tasks("sweep", lambda s: svc.progress(s.events).sweep_id == sweep_id
                               and svc.ray_state(s.events) is not None)
    if jobs:
        _workers(jobs[-1], key="sw_results_workers")


def ray_line(ray: svc.RayState, done: bool) -> str:
    """The Ray line: once the job has ended its connection is closed, so never "connected"."""
    if not done:
        return ray.text()
    where = ray.address or "a local cluster started for this sweep"
    return f"cells ran on Ray · {where} · disconnected: the sweep has ended"


def _stop(registry: JobRegistry, job_id: str, user: str) -> None:
    """The Stop button's callback (whether the job was still running does not matter here)."""
    registry.cancel(job_id, user=user)
