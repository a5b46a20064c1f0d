"""The Runs page without streamlit: filters the store's query does not do, the side-by-side
comparison of two runs, deleting runs and importing a run bundle.

Why: a comparison table is easy to get subtly wrong and easy to test as data.
"""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

from groupchat_core import import_bundle
from groupchat_core.analysis import SpeakerMetrics
from groupchat_core.store import RunStore
from ui.kit.metrics import Card, metric_cards


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


def import_run(store: RunStore, data: str | bytes, source: str) -> str:
    """A run bundle into the store, validated completely first (nothing written on error)."""
    return import_bundle(store, data, source)


def delete_runs(store: RunStore, run_ids: Iterable[str]) -> int:
    return sum(store.delete_run(run_id) for run_id in run_ids)
