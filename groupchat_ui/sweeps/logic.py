"""The Sweeps page's logic without streamlit: grid input, spec, launch, progress, results.

Why pure: the page parses comma-separated numbers, builds a SweepSpec, launches it as a job on
the engine loop and folds its events into a progress table; all of that is testable without a
script run. Offline by default: the presets' agents are `sim/` simulations, not language models.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import pandas as pd

from groupchat_core import (
    BID_PROMPT_PRESETS,
    CHAT_BOUNDS,
    CHAT_CHOICES,
    SWEEP_RESUMABLE,
    Agent,
    ConfigError,
    chat_default,
    is_sim_model,
)
from groupchat_core.store import RunStore
from groupchat_core.sweeps import (
    CellFinished,
    CellStarted,
    RayExecutor,
    SweepFinished,
    SweepPlan,
    SweepSpec,
    SweepStarted,
    arun_sweep,
    parse_sweep,
    plan_sweep,
    varying,
)
from groupchat_ui.kit.jobs import LOCAL_USER, JobRegistry, may_manage, not_yours
from groupchat_ui.kit.sweep_status import MISSING, SweepStatus, sweep_status

GRID_AXES = ("threshold", "recency_penalty", "recency_window")
PRESET_DEFAULT = next(iter(BID_PROMPT_PRESETS))  # the default bid prompt's preset name
DEFAULT_GRID = {"threshold": "0.3, 0.4, 0.5, 0.6, 0.7", "recency_penalty": "0.0, 0.15, 0.3, 0.45",
                "recency_window": "1"}
BOUNDS = {axis: (CHAT_BOUNDS[axis].low, CHAT_BOUNDS[axis].high) for axis in GRID_AXES}
MAX_CHECKED_COMBOS = 500
RESUMABLE = SWEEP_RESUMABLE
EXECUTORS = {"local": "this server", "ray": "a Ray cluster"}
WORKER_LABEL_MAX = 120


def parse_numbers(text: str, name: str, *, integer: bool = False,
                  bounds: tuple[float, float] | None = None) -> list[float] | list[int]:
    """'0.3, 0.5' -> [0.3, 0.5]; ConfigError naming the axis and the bad value."""
    parts = [p.strip() for p in text.replace(";", ",").split(",") if p.strip()]
    if not parts:
        raise ConfigError(f"{name}: give at least one value (comma-separated)")
    values: list[Any] = []
    for part in parts:
        try:
            value = float(part)
        except ValueError:
            raise ConfigError(f"{name}: {part!r} is not a number") from None
        if integer and not value.is_integer():
            raise ConfigError(f"{name}: {part!r} is not a whole number")
        if bounds is not None and not bounds[0] <= value <= bounds[1]:
            raise ConfigError(f"{name}: {part} is outside {bounds[0]:g} to {bounds[1]:g}")
        values.append(int(value) if integer else value)
    if len(set(values)) != len(values):
        raise ConfigError(f"{name}: a value is listed twice in {text!r}")
    return values


def all_sim(agents: Sequence[Agent] | Sequence[Mapping[str, Any]]) -> bool:
    """True when every agent is a `sim/` simulation."""
    names = [a.model_name if isinstance(a, Agent) else str(a.get("model_name", ""))
             for a in agents]
    return bool(names) and all(is_sim_model(n) for n in names)


def parse_range(text: str, name: str) -> dict[str, float]:
    """'0.2, 0.8' -> {low: 0.2, high: 0.8} for random search (within the axis's bounds)."""
    values = parse_numbers(text, name, bounds=BOUNDS[name])
    if len(values) != 2 or values[0] >= values[1]:
        raise ConfigError(f"{name} range: give low, high (e.g. 0.2, 0.8), got {text!r}")
    return {"low": float(values[0]), "high": float(values[1])}


def search_space(search: Mapping[str, Any] | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """The page's search options as (grid additions, spec additions): random search over
    threshold and penalty ranges, agent order (every one or sampled), roster sizes,
    temperature values and speaker-selection strategies. Empty inputs add nothing."""
    search = search or {}
    grid: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    if search.get("mode") == "random":
        extra["random"] = {"samples": int(search.get("samples", 10)),
                           "threshold": parse_range(search.get("threshold_range", ""),
                                                    "threshold"),
                           "recency_penalty": parse_range(search.get("penalty_range", ""),
                                                          "recency_penalty")}
    if search.get("order") == "all":
        grid["order"] = "all"
    elif search.get("order") == "sample":
        grid["order"] = {"sample": int(search.get("order_samples", 6))}
    sizes = str(search.get("roster_sizes") or "").strip()
    if sizes:
        grid["roster"] = {"sizes": parse_numbers(sizes, "roster sizes", integer=True,
                                                 bounds=(2, 1000))}
    temperatures = str(search.get("temperature") or "").strip()
    if temperatures:
        grid["temperature"] = parse_numbers(temperatures, "temperature", bounds=(0.0, 2.0))
    strategies = list(search.get("strategies") or [])
    if strategies and strategies != [chat_default("strategy")]:
        grid["strategy"] = strategies
    presets = list(search.get("bid_prompt") or [])
    if presets and presets != [PRESET_DEFAULT]:  # the default alone: not swept
        grid["bid_prompt"] = presets
    for setting in CHAT_CHOICES:  # what a bidder sees: each chosen value is one on the axis
        chosen = list(search.get(setting) or [])
        if chosen and chosen != [chat_default(setting)]:
            grid[setting] = chosen
    return grid, extra


def build_spec(agents: Sequence[Agent], tasks: Sequence[str | Mapping[str, Any]],
               grid_text: Mapping[str, str],
               options: Mapping[str, Any], search: Mapping[str, Any] | None = None
               ) -> SweepSpec:
    """A SweepSpec from the page's inputs; a ConfigError names the bad value. In random
    search, threshold and penalty are drawn from ranges instead of listed. `tasks`: plain
    strings, or task objects with answers (task_sets.scored_tasks)."""
    grid_more, extra = search_space(search)
    drawn = set(extra.get("random", {}))
    grid: dict[str, Any] = {
        axis: parse_numbers(grid_text.get(axis, ""), axis, integer=axis == "recency_window",
                            bounds=BOUNDS[axis]) for axis in GRID_AXES if axis not in drawn}
    grid.update(grid_more)
    base = {"agents": [a.to_spec() for a in agents], "max_loops": int(options["max_loops"]),
            "seed": int(options.get("seed", chat_default("seed")))}
    for key in ("selector_model", "selector_api_base"):  # blank: the engine's default
        value = str((search or {}).get(key) or "").strip()
        if value:
            base[key] = value
    caps = {k: options[k] for k in ("max_calls", "max_usd") if options.get(k)}
    spec = parse_sweep({"name": options.get("name") or "sweep", "base": base, "grid": grid,
                        "tasks": [t for t in tasks if not isinstance(t, str) or t.strip()],
                        "repeats": int(options["repeats"]),
                        "concurrency": int(options["concurrency"]), **caps, **extra}, "sweep")
    _check_values(spec)
    return spec


def _check_values(spec: SweepSpec) -> None:
    """Every combination of values must make a valid chat (ranges checked), up to
    MAX_CHECKED_COMBOS distinct ones."""
    seen: set[str] = set()
    for cell in spec.cells():
        key = json.dumps(cell.params, sort_keys=True)
        if key in seen:
            continue
        seen.add(key)
        if len(seen) > MAX_CHECKED_COMBOS:
            break
        try:
            spec.chat_spec(cell)
        except ConfigError as exc:
            raise ConfigError(str(exc).replace("cell ", "grid values ", 1)) from None


def group_columns(frame: pd.DataFrame) -> list[str]:
    """The axes a results table or chart can group by: the parameters that vary (the random
    sample's index is an id, not an axis)."""
    return [c for c in varying(frame) if c != "sample"]


def preflight(spec: SweepSpec, store: RunStore) -> tuple[int, str, str]:
    """The number of cells, the pre-flight estimate text and its headline: estimated wall
    time, and tokens and cost (zero for sims, which send no prompt)."""
    plan: SweepPlan = plan_sweep(spec, store)
    est = plan.estimate
    if est is None:
        return len(plan.cells), "", ""
    cost = "unknown cost" if est.cost_usd_upper is None else f"${est.cost_usd_upper:,.4f}"
    head = (f"estimated wall time up to {est.wall_time()} · "
            f"{est.prompt_tokens_upper + est.completion_tokens_upper:,} tokens · up to {cost}")
    return len(plan.cells), est.summary(), head


@dataclass(frozen=True)
class RayState:
    """A job event of a sweep on Ray (not a sweep event): its cluster is `starting` (the slow
    part: a local cluster starts in seconds) or `connected`. Marks the job as a Ray sweep."""

    address: str | None
    state: str

    def text(self) -> str:
        where = self.address or "a local cluster started for this sweep"
        return (f"cells run on Ray · {where} · "
                + ("starting the cluster…" if self.state == "starting" else "connected"))


_ray_jobs: list[str] = []  # this process's Ray sweep jobs (Ray is one connection per process)


def ray_executor(registry: JobRegistry, store: RunStore, address: str,
                 spec: SweepSpec | None, cpus_per_cell: float | None = None,
                 tracing: Any = None) -> RayExecutor:
    """An executor for a Ray cluster at `address` (blank: start a local one), checked at once
    (Ray installed, the address answers, `cpus_per_cell` (else the spec's, else 1) in range:
    the engine's one-line ConfigError), not started."""
    busy = [j for j in _ray_jobs if _running(registry, j)]
    _ray_jobs[:] = busy
    if busy:
        raise ConfigError("a sweep on Ray already runs on this server (one Ray connection per "
                          "process): wait for it or stop it, or run this one on this server")
    cpus = cpus_per_cell or (None if spec is None else spec.cpus_per_cell) or 1.0
    executor = RayExecutor(store, address=address.strip() or None,
                           bid_cache=None if spec is None else spec.bid_cache, cpus_per_cell=cpus,
                           tracing=tracing)
    executor.check()
    return executor


def _running(registry: JobRegistry, job_id: str) -> bool:
    try:
        return not registry.task_snapshot(job_id).done
    except KeyError:
        return False


async def on_ray(executor: RayExecutor, emit: Callable[[Any], None],
                 sweep: Callable[[], Awaitable[Any]]) -> Any:
    """Run `sweep()` once `executor` is started; start and close it on worker threads (start
    blocks for seconds: the dashboard's loop must not), close it however the sweep ends."""
    emit(RayState(executor.address, "starting"))
    starting = asyncio.ensure_future(asyncio.to_thread(executor.start))
    try:
        await asyncio.shield(starting)
        emit(RayState(executor.address, "connected"))
        return await sweep()
    finally:
        with contextlib.suppress(Exception):  # stopped while starting: let it end, then close
            await starting
        await asyncio.to_thread(executor.close)


def start_sweep(registry: JobRegistry, store: RunStore, owner: str,
                spec: SweepSpec | None = None, resume: str | None = None, *,
                user: str = LOCAL_USER, user_name: str | None = None,
                executor: str = "local", ray_address: str = "",
                cpus_per_cell: float | None = None, trace: bool = False) -> str:
    """Launch a new sweep (or the rest of sweep `resume`) as a job; returns the job id. A new
    sweep and its runs are recorded as `user`'s; only its owner may resume one (ConfigError).
    `executor` "ray": its cells run on the Ray cluster at `ray_address` (blank: a local one);
    a bad address, a missing Ray or a `cpus_per_cell` out of range (Ray CPUs a cell reserves;
    None: the spec's, else 1) is a ConfigError here, before any job starts. `trace` (the
    Settings page's "Trace runs") traces each cell's chat, as `sweep run --trace` does."""
    if spec is None and resume is None:
        raise ConfigError("a sweep needs a spec, or a sweep id to resume")
    if executor not in EXECUTORS:
        raise ConfigError(f"run cells on: {executor!r} is not one of {', '.join(EXECUTORS)}")
    if resume is not None:
        sweep = store.get_sweep(resume)
        if not may_manage(sweep.get("owner"), user):
            raise ConfigError(not_yours(sweep.get("owner_name") or sweep.get("owner"), "sweep"))
    tracing = None
    if trace:
        from groupchat_ui.kit.traces import sweep_tracing

        tracing = sweep_tracing(user)
    ray = (ray_executor(registry, store, ray_address, spec, cpus_per_cell, tracing)
           if executor == "ray" else None)

    def factory(emit: Any) -> Any:
        def run() -> Any:
            return arun_sweep(spec, store, resume=resume, on_event=emit, owner=user,
                              owner_name=user_name or user, executor=ray,
                              tracing=None if ray is not None else tracing)

        return run() if ray is None else on_ray(ray, emit, run)

    job_id = registry.start_job(factory, owner, kind="sweep", user=user, user_name=user_name)
    if ray is not None:
        _ray_jobs.append(job_id)
    return job_id


def delete_sweep(store: RunStore, sweep_id: str, user: str = LOCAL_USER) -> int:
    """Delete sweep `sweep_id` with its runs, for `user` (its owner, or an admin: may_manage);
    how many runs went with it. Someone else's is a ConfigError saying whose; a running one is
    refused by the store (SweepBusy: stop it first)."""
    sweep = store.get_sweep(sweep_id)
    if not may_manage(sweep.get("owner"), user):
        raise ConfigError(not_yours(sweep.get("owner_name") or sweep.get("owner"), "sweep"))
    return store.delete_sweep(sweep["sweep_id"])


def page_words(message: str) -> str:
    """The engine's Ray messages name the CLI's flags; the page has a choice and a field."""
    return (message.replace("--ray-address", "the Ray address")
            .replace("--executor ray", "a Ray cluster"))


def ray_state(events: Sequence[Any]) -> RayState | None:
    """The latest RayState of a job's events; None for a sweep on this server."""
    return next((e for e in reversed(events) if isinstance(e, RayState)), None)


def worker_table(events: Sequence[Any]) -> pd.DataFrame:
    """Per-worker progress of a Ray sweep, from its CellFinished events' `worker`: cells
    finished, cells that ended otherwise (cancelled, error), the last cell and how it ended.
    The label is a host name and ids from the cluster: kept as plain text (a table cell is
    never markdown), control characters dropped, cut to WORKER_LABEL_MAX. Empty when no event
    names a worker (a local sweep)."""
    rows: dict[str, dict[str, Any]] = {}
    for event in events:
        if not isinstance(event, CellFinished) or not event.worker:
            continue
        label = "".join(c if c.isprintable() else " " for c in event.worker)
        label = label[:WORKER_LABEL_MAX]
        row = rows.setdefault(label, {"worker": label, "finished": 0, "not finished": 0})
        row["finished" if event.status == "finished" else "not finished"] += 1
        row["last cell"], row["last status"] = event.index, event.status
    columns = ["worker", "finished", "not finished", "last cell", "last status"]
    return pd.DataFrame(list(rows.values()), columns=columns)


@dataclass
class Progress:
    """A sweep job's progress, folded from its events."""

    sweep_id: str | None = None
    name: str = ""
    done: int = 0
    total: int = 0
    cells: dict[str, dict[str, Any]] = field(default_factory=dict)
    outcome: Any = None

    @property
    def fraction(self) -> float:
        return min(1.0, self.done / self.total) if self.total else 0.0

    def table(self, status: SweepStatus | None = None) -> pd.DataFrame:
        """The cells seen so far; a running cell shows its turns so far (from `status`, read
        from the store) and "–" where it has no value yet, never None."""
        columns = ["index", "cell", "status", "messages", "turns", "stop_reason", "run_id"]
        rows = sorted(self.cells.values(), key=lambda r: r["index"])
        if status is not None:
            rows = [{**r, "turns": status.running_turns.get(r["cell"])}  # None: no run yet
                    if r["status"] == "running" else r for r in rows]
        return display_frame(pd.DataFrame(rows, columns=columns))


def display_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy for a table: a missing value (a running or pending cell's metrics) reads "–",
    not None, NaN or <NA>. A column with a gap becomes text (one type per column, as Arrow
    needs); complete columns keep their types (and sort as numbers)."""
    out = frame.copy()
    for column in out.columns:
        missing = out[column].isna()
        if missing.any():
            out[column] = [MISSING if gap else _cell_text(v)
                           for v, gap in zip(out[column], missing, strict=True)]
    return out


def _cell_text(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def status_of(store: RunStore, sweep_id: str, registry: JobRegistry | None = None,
              owner: str | None = None) -> SweepStatus:
    """The one status of a stored sweep (groupchat_ui/kit/sweep_status.py), with this session's job
    for it when there is one (so a pressed Stop reads `stopping` here too)."""
    job = None
    if registry is not None and owner is not None:
        job = next((t for t in reversed(registry.tasks_for(owner, "sweep"))
                    if progress(t.events).sweep_id == sweep_id), None)
    return sweep_status(store, sweep_id, job)


def page_behind(running: bool, focused: str | None, now: Any) -> bool:
    """Whether the live panel, redrawn alone every half second, must redraw the whole page: the
    job it was drawn with ended (the charts, Resume and the picker change), or the job has
    created its sweep since the page was drawn with none (`focused` None): Results, drawn once
    per page run, still shows another sweep or none, never this one running (a busy server
    reruns the page after Start before the job creates its sweep)."""
    if not running:
        return False
    return bool(now.done) or (focused is None and progress(now.events).sweep_id is not None)


def job_status(store: RunStore, snap: Any) -> SweepStatus:
    """The one status of a sweep job (kit/sweep_status.py); the same line everywhere."""
    return sweep_status(store, job=snap)


def progress(events: Sequence[Any]) -> Progress:
    """Fold SweepStarted/CellStarted/CellFinished/SweepFinished events into a Progress."""
    out = Progress()
    for event in events:
        if isinstance(event, SweepStarted):
            out.sweep_id, out.name = event.sweep_id, event.name
            out.done, out.total = event.cells_done, event.cells_total
        elif isinstance(event, CellStarted):
            out.cells[event.cell] = {"index": event.index, "cell": event.cell,
                                     "status": "running"}
        elif isinstance(event, CellFinished):
            out.done, out.total = event.cells_done, event.cells_total
            out.cells[event.cell] = {"index": event.index, "cell": event.cell,
                                     "status": event.status, "messages": event.messages,
                                     "turns": event.turns, "stop_reason": event.stop_reason,
                                     "run_id": event.run_id}
        elif isinstance(event, SweepFinished):
            out.outcome = event.outcome
            out.done, out.total = event.outcome.cells_done, event.outcome.cells_total
    return out


def sweep_label(row: Mapping[str, Any]) -> str:
    """'name · created · id' for the sweep picker (the status is in the caption below it:
    a label that changes while the sweep runs would not refresh in an open picker)."""
    created = str(row.get("created_at") or "")[:19].replace("T", " ")
    owner = row.get("owner_name") or row.get("owner")
    by = f" · by {owner}" if isinstance(owner, str) and owner else ""
    return f"{row['name']} · {created} · {str(row['sweep_id'])[:8]}{by}"


LABEL_NAMES = {"recency_penalty": "penalty", "recency_window": "window", "agent_models": "models",
               "bid_prompt": "prompt"}


def cell_label(row: Mapping[str, Any]) -> str:
    """'threshold 0.5 · penalty 0.3 · window 1 · order A → B · task 0 · repeat 1' for the run
    picker: the grid's numbers, then whichever other axes the cell has."""
    parts = [f"threshold {row['threshold']:g}", f"penalty {row['recency_penalty']:g}",
             f"window {row['recency_window']}"]
    for name in ("temperature", "model", "bid_prompt", "order", "roster", "agent_models",
                 "sample", *CHAT_CHOICES):
        value = row.get(name)
        if value is not None and not (isinstance(value, float) and pd.isna(value)):
            text = f"{value:g}" if isinstance(value, float) else str(value)
            parts.append(f"{LABEL_NAMES.get(name, name)} {text}")
    return " · ".join([*parts, f"task {row['task_index']}", f"repeat {row['repeat']}"])


def comparison_text(result: Any, metric_label: str) -> str:
    """A comparison (groupchat_core.sweeps.Comparison) in one or two plain sentences."""
    diff = f"{result.difference:+.3g}"
    if result.difference_low is not None:
        diff += f" (95% interval {result.difference_low:+.3g} to {result.difference_high:+.3g})"
    effect = []
    if result.cliffs_delta is not None:
        effect.append(f"Cliff's delta {result.cliffs_delta:+.2f}"
                      + _span(result.cliffs_low, result.cliffs_high))
    if result.cohens_d is not None:
        effect.append(f"Cohen's d {result.cohens_d:+.2f}"
                      + _span(result.cohens_low, result.cohens_high))
    sizes = (f"{result.n_a} pairs of chats with the same seeds" if result.paired
             else f"{result.n_a} vs {result.n_b} finished chats")
    return (f"{metric_label}: A {result.mean_a:.3g}, B {result.mean_b:.3g}; B − A = {diff}"
            + (f"; {', '.join(effect)}" if effect else "") + f" ({sizes}). {result.note}.")


def family_verdict(result: Any, p_holm: float | None, pairs: int | None) -> Any:
    """The comparison with its verdict read from the Holm-adjusted p across every pair of cells
    the tab offers (issue 38: raw p found "a difference" in 78 % of null 8-cell sweeps); no
    verdict when the family was too big to correct (`pairs` None)."""
    if not result.enough or result.p_value is None:
        return result
    if pairs is None or p_holm is None:
        note = ("no test shown: too many cells to correct across (pick fewer axes); "
                "effect sizes only")
        return replace(result, p_value=None, enough=False, note=note)
    verdict = "a difference" if p_holm < 0.05 else "no clear difference"
    note = (f"{verdict} at the 5% level after Holm's correction across all {pairs} pairs of "
            f"cells (p = {result.p_value:.3g}, Holm p = {p_holm:.3g}; {result.test})")
    return replace(result, note=note)


def _span(low: float | None, high: float | None) -> str:
    return "" if low is None or high is None else f" (95% interval {low:+.2f} to {high:+.2f})"


def interval_notes(table: pd.DataFrame) -> list[str]:
    """What the interval table cannot promise, in plain lines: points without variation (no
    interval drawn rather than a zero-width one), points with too few repeats for an
    informative interval (none drawn rather than the whole range) and points below the repeats
    from which an unbounded metric's interval covers."""
    if table.empty or "note" not in table:
        return []
    notes = table["note"].fillna("").astype(str)
    lines = []
    flat = table[notes.str.startswith("no variation")]
    if not flat.empty:
        counts = ", ".join(sorted({str(int(n)) for n in flat["n"]}))
        lines.append(f"{len(flat)} of {len(table)} points have no variation in their repeats "
                     f"(n = {counts}): no interval is drawn for them; see the note column for "
                     "what can be said.")
    few = table[notes.str.contains("too few for an informative interval|cannot narrow this "
                                   "metric", regex=True)]
    if not few.empty:
        counts = ", ".join(sorted({str(int(n)) for n in few["n"]}))
        lines.append(f"{len(few)} of {len(table)} points have too few repeats (n = {counts}) "
                     "for an informative interval: none is drawn (any interval would span most "
                     "of the metric's range); add repeats.")
    low = table[notes.str.startswith("below")]
    if not low.empty:
        lines.append(f"{len(low)} of {len(table)} points have fewer than "
                     f"{int(low['coverage_from_n'].max())} repeats: their intervals may "
                     "under-cover; add repeats.")
    return lines


def calls_text(summary: Mapping[str, Any]) -> str:
    """Calls needed and calls made apart: the bid cache answers some bids, so the calls made
    depend on what earlier cells left in it, the calls needed only on the parameters."""
    made, hits = int(summary.get("calls") or 0), int(summary.get("cache_hits") or 0)
    if not hits:
        return f"{made:,} model calls"
    return f"{made + hits:,} model calls needed, {made:,} made (the cache answered {hits:,})"
