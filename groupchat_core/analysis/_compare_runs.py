"""Two recorded runs side by side: their parameters (all, or only what differs) and the per-turn
series the Runs page overlays (the top bid of each turn, who spoke).

Why here: comparing configurations and series is data work the CLI and notebooks can reuse; the
dashboard only draws it (groupchat_ui/runs/compare_view.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

_SKIP = frozenset({"schema_version"})


def flatten_config(spec: Mapping[str, Any]) -> dict[str, Any]:
    """A ChatSpec's data (`ChatSpec.to_data()`, as the store keeps it) as flat settings: nested
    keys joined by dots, each agent's fields under `agent <name>.<field>` (agents are matched by
    name across runs, not by position)."""
    flat: dict[str, Any] = {}

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, Mapping):
            for key in sorted(value):
                if not prefix and key in _SKIP:
                    continue
                walk(f"{prefix}.{key}" if prefix else str(key), value[key])
        elif isinstance(value, list) and all(isinstance(v, Mapping) for v in value) and value:
            for i, item in enumerate(value):
                name = item.get("agent_name", i)
                walk(f"{prefix} {name}" if prefix == "agents" else f"{prefix}[{i}]", item)
        else:
            flat[prefix] = value if not isinstance(value, list) else ", ".join(map(str, value))
    walk("", dict(spec))
    return flat


def config_diff(a: Mapping[str, Any], b: Mapping[str, Any], *,
                only_differs: bool = False) -> pd.DataFrame:
    """Setting, A's value, B's value and whether they differ; a setting one run lacks reads
    as "(not set)". Sorted by setting name."""
    fa, fb = flatten_config(a), flatten_config(b)
    rows = []
    for key in sorted(set(fa) | set(fb)):
        va, vb = fa.get(key, "(not set)"), fb.get(key, "(not set)")
        rows.append({"setting": key, "A": _setting_text(va), "B": _setting_text(vb),
                     "differs": va != vb})
    table = pd.DataFrame(rows, columns=["setting", "A", "B", "differs"])
    return table[table["differs"]].reset_index(drop=True) if only_differs else table


def _setting_text(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def top_bids(bids: pd.DataFrame) -> pd.DataFrame:
    """Per turn: the highest adjusted bid, the mean raw score, and who bid highest."""
    if bids.empty:
        return pd.DataFrame(columns=["turn", "top_adjusted", "mean_score", "top_agent"])
    ordered = bids.sort_values(["turn", "adjusted"], ascending=[True, False], kind="stable")
    best = ordered.drop_duplicates("turn")[["turn", "adjusted", "agent"]]
    means = bids.groupby("turn")["score"].mean().rename("mean_score")
    out = best.rename(columns={"adjusted": "top_adjusted", "agent": "top_agent"})
    out = out.merge(means, left_on="turn", right_index=True, how="left")
    return out[["turn", "top_adjusted", "mean_score", "top_agent"]].reset_index(drop=True)


def rotation(turns: pd.DataFrame) -> pd.DataFrame:
    """Per turn: who spoke (None on a turn nobody won), and how many distinct agents had spoken
    so far (how fast the floor rotates)."""
    if turns.empty:
        return pd.DataFrame(columns=["turn", "speaker", "distinct_so_far"])
    seen: set[str] = set()
    rows = []
    for turn, winner in zip(turns["turn"], turns["winner"], strict=True):
        speaker = winner if isinstance(winner, str) and winner else None
        if speaker:
            seen.add(speaker)
        rows.append({"turn": int(turn), "speaker": speaker, "distinct_so_far": len(seen)})
    return pd.DataFrame(rows, columns=["turn", "speaker", "distinct_so_far"])
