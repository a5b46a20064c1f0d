"""The Runs page without streamlit: filters the store's query does not do, the side-by-side
comparison of two runs, deleting runs and importing a run bundle.

Why: a comparison table is easy to get subtly wrong and easy to test as data.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

from groupchat_core import format_cost, import_bundle, is_sim_model
from groupchat_core.analysis import SpeakerMetrics
from groupchat_core.store import RunStore
from groupchat_ui.kit.frames import records
from groupchat_ui.kit.jobs import LOCAL_USER, may_manage
from groupchat_ui.kit.labels import local_time, row_label, run_label
from groupchat_ui.kit.metrics import Card, metric_cards

TABLE_COLUMNS = ["run", "started", "status", "owner", "stop_reason", "agents", "turns", "threshold",
                 "recency_penalty", "recency_window", "max_loops", "cost", "task", "name",
                 "ended", "run_id"]
# Shown after "cost" when some run of the table was scored (docs/outcomes.md) or simulated.
OUTCOME_COLUMNS = ["outcome", "answer", "scorer"]


def cost_text(total: float | None, unpriced: Any) -> str:
    """A stored run's cost for the table: the store keeps an unknown cost as NULL (NaN here)
    and each run's unpriced bids (schema v13)."""
    known = None if total is None or pd.isna(total) else float(total)
    return format_cost(known, 0 if unpriced is None or pd.isna(unpriced) else int(unpriced))


def runs_table(runs: pd.DataFrame) -> pd.DataFrame:
    """The Runs table as people read it: a label naming each run, local times to the second,
    cost "unknown" where no price was known."""
    out = runs.copy()
    out["run"] = [row_label(r) for r in records(runs)]
    out["started"] = [local_time(v) for v in runs["started_at"]]
    out["ended"] = [local_time(v) for v in runs["ended_at"]]
    unpriced = runs["unpriced_bids"] if "unpriced_bids" in runs else [0] * len(runs)
    out["cost"] = [cost_text(t, n) for t, n in zip(runs["total_cost_usd"], unpriced, strict=True)]
    out["owner"] = [owner_label(r) for r in records(runs)]
    columns = list(TABLE_COLUMNS)
    at = columns.index("cost") + 1
    if "scorer" in runs and runs["scorer"].notna().any():
        out["outcome"] = [verdict_text(c) for c in runs["correct"]]
        out["answer"] = [a if isinstance(a, str) else "" for a in runs["answer"]]
        out["scorer"] = runs["scorer"].fillna("")
        columns[at:at] = OUTCOME_COLUMNS
        at += len(OUTCOME_COLUMNS)
    if "models" in runs:
        flags = [isinstance(m, list | tuple) and any(is_sim_model(str(x)) for x in m)
                 for m in runs["models"]]
        if any(flags):
            out["simulated"] = ["simulated" if f else "" for f in flags]
            columns.insert(at, "simulated")
    return out[columns].reset_index(drop=True)


def verdict_text(correct: object) -> str:
    """A run's outcome for the table: correct, wrong, or blank (a plain task, or unscored)."""
    if correct is None or correct != correct:  # None or NaN
        return ""
    return "correct" if bool(correct) else "wrong"


def owner_label(row: Mapping[str, Any]) -> str:
    """Who started a run, as the table shows it (a dash for runs from before owners were kept,
    or recorded by a script that named none)."""
    for key in ("owner_name", "owner"):
        value = row.get(key)
        if isinstance(value, str) and value:
            return value
    return "—"


def not_deletable(runs: pd.DataFrame, run_ids: Iterable[str], user: str) -> list[str]:
    """The runs among `run_ids` that `user` may not delete: someone else's (may_manage)."""
    wanted = set(run_ids)
    rows = runs[runs["run_id"].isin(wanted)]
    owners = rows["owner"] if "owner" in rows else pd.Series([None] * len(rows))
    return [str(i) for i, o in zip(rows["run_id"], owners, strict=True)
            if not may_manage(_text(o), user)]


def compare_labels(a: dict[str, object], a_task: str, b: dict[str, object],
                   b_task: str) -> tuple[str, str]:
    """Compare headers that say which run is which (the same function as every other label)."""
    la = "A: " + run_label(str(a.get("name") or ""), a_task, a.get("started_at"),
                           str(a.get("run_id") or ""))
    lb = "B: " + run_label(str(b.get("name") or ""), b_task, b.get("started_at"),
                           str(b.get("run_id") or ""))
    return la, lb


def filter_runs(runs: pd.DataFrame, *, text: str = "", threshold: tuple[float, float] | None = None,
                max_loops: tuple[int, int] | None = None) -> pd.DataFrame:
    """Parameter and text filters the store's query does not do (status/agent/date it does)."""
    out = runs
    if text.strip():
        needle = text.strip().lower()
        hay = (out["name"].fillna("") + " " + out["task"].fillna("")).str.lower()
        out = out[hay.str.contains(needle, regex=False)]
    if threshold is not None:
        out = out[out["threshold"].between(*threshold)]
    if max_loops is not None:
        out = out[out["max_loops"].between(*max_loops)]
    return out


ALL_RUNS, SINGLE_RUNS = "all", "single"  # the scope filter's two fixed choices


def run_scopes(runs: pd.DataFrame, sweeps: pd.DataFrame) -> dict[str, str]:
    """The scope filter's choices, value -> label with counts: every run, the single runs
    (started alone: no sweep), then each sweep with runs in `runs`, newest first, so a big
    sweep's runs can be set aside from a handful of single ones."""
    ids = runs["sweep_id"] if "sweep_id" in runs else pd.Series([None] * len(runs))
    counts = ids.dropna().astype(str).value_counts().to_dict()
    single = len(runs) - sum(counts.values())
    out = {ALL_RUNS: f"all runs ({len(runs):,})", SINGLE_RUNS: f"single runs ({single:,})"}
    for row in records(sweeps):
        sweep_id = str(row["sweep_id"])
        if sweep_id in counts:
            out[sweep_id] = f"sweep {scope_sweep_label(row)} ({counts[sweep_id]:,} runs)"
    return out


def scope_sweep_label(row: Mapping[str, Any]) -> str:
    """'name · created · id prefix', as the Sweeps page's picker names a sweep."""
    created = str(row.get("created_at") or "")[:16].replace("T", " ")
    return " · ".join(p for p in (str(row.get("name") or "sweep"), created,
                                  str(row["sweep_id"])[:8]) if p)


def scope_from_query(params: Mapping[str, str], choices: Iterable[str]) -> str:
    """The scope a shared link names: `?runs=single`, or `?sweep=<id or unique prefix>`;
    anything else (no link, a sweep with no runs here) is every run."""
    if params.get("runs") == SINGLE_RUNS:
        return SINGLE_RUNS
    asked = str(params.get("sweep") or "")
    found = [c for c in choices if c not in (ALL_RUNS, SINGLE_RUNS) and asked
             and c.startswith(asked)]
    return found[0] if len(found) == 1 else ALL_RUNS


def scope_query(scope: str) -> dict[str, str]:
    """The query parameters that name `scope` in a link (none for every run)."""
    if scope == SINGLE_RUNS:
        return {"runs": SINGLE_RUNS}
    return {} if scope == ALL_RUNS else {"sweep": scope}


def in_scope(runs: pd.DataFrame, scope: str) -> pd.DataFrame:
    """The runs of a scope: every run, the single ones, or one sweep's."""
    if scope == ALL_RUNS or "sweep_id" not in runs:
        return runs
    if scope == SINGLE_RUNS:
        return runs[runs["sweep_id"].isna()]
    return runs[runs["sweep_id"] == scope]


def compare_metrics(a: SpeakerMetrics, b: SpeakerMetrics,
                    labels: tuple[str, str]) -> pd.DataFrame:
    """Two runs' metric cards side by side, one row per metric."""
    left, right = metric_cards(a), metric_cards(b)
    def shown(card: Card) -> str:
        return card[1] + (f" ({card[3]})" if card[3] else "")

    return pd.DataFrame({"metric": [c[0] for c in left], labels[0]: [shown(c) for c in left],
                         labels[1]: [shown(c) for c in right]})


def _winners(turns: pd.DataFrame) -> dict[int, str]:
    out: dict[int, str] = {}
    for _, row in turns.iterrows():
        winner = row.get("winner")
        out[int(row["turn"])] = winner if isinstance(winner, str) else (
            "(lull)" if bool(row.get("lull")) else "(failed)")
    return out


def aligned_speakers(turns_a: pd.DataFrame, turns_b: pd.DataFrame,
                     labels: tuple[str, str]) -> pd.DataFrame:
    """Speaker per turn of two runs, aligned by turn number, with a same/different flag."""
    a, b = _winners(turns_a), _winners(turns_b)
    rows = [{"turn": t, labels[0]: a.get(t, ""), labels[1]: b.get(t, ""),
             "same": a.get(t) == b.get(t)} for t in sorted(set(a) | set(b))]
    return pd.DataFrame(rows, columns=["turn", labels[0], labels[1], "same"])


def import_run(store: RunStore, data: str | bytes, source: str, *, user: str = LOCAL_USER,
               user_name: str | None = None) -> str:
    """A run bundle into the store, validated completely first (nothing written on error).
    The run belongs to whoever imported it (bundles name no owner)."""
    run_id = import_bundle(store, data, source)
    store.set_owner(run_id, user, user_name or user)
    return run_id


def run_names(runs: pd.DataFrame, run_ids: Iterable[str]) -> list[str]:
    """Each run's label (`row_label`), in `run_ids` order; an id not in `runs` as itself."""
    rows = {str(r["run_id"]): r for r in records(runs)} if "run_id" in runs else {}
    return [row_label(rows[i]) if i in rows else str(i) for i in map(str, run_ids)]


def refusal_text(names: list[str]) -> str:
    """Why nothing was deleted, naming the runs (raw text: the caller escapes on display)."""
    subject = (f"the run {names[0]} was" if len(names) == 1
               else f"{len(names)} of the selected runs ({'; '.join(names)}) were")
    return (f"Nothing was deleted: {subject} started by someone else, or by nobody recorded "
            "(the command line, a script, an older version); only whoever started a run, or an "
            "admin, can delete it. Select only your own runs.")


def confirm_text(names: list[str]) -> str:
    """The delete question, naming the runs (raw text: the caller escapes on display)."""
    if len(names) == 1:
        return f"Delete the run {names[0]} and its bid log for good?"
    return f"Delete these {len(names)} runs and their bid logs for good? {'; '.join(names)}"


def delete_runs(store: RunStore, run_ids: Iterable[str], user: str = LOCAL_USER) -> int:
    """Delete the runs `user` may delete (may_manage: their own; an admin any); returns how
    many were."""
    owners = store.list_runs().set_index("run_id")["owner"].to_dict()
    return sum(store.delete_run(run_id) for run_id in run_ids
               if run_id in owners and may_manage(_text(owners[run_id]), user))


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None
