"""The Analysis page without streamlit: run labels, per-turn outcomes and bids, and the demo run.

Why: what the page shows about a stored run (who spoke on each turn, what every agent bid) is
easy to get subtly wrong and easy to test as data.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from groupchat_core import GroupChat
from groupchat_core.store import RunStore
from ui.kit.presets import DEBATE_TRIO

DEMO_NAME = "Demo debate"


def run_label(row: Mapping[str, Any]) -> str:
    """A one-line label for a run picker: name, start time, agents, status."""
    started = str(row.get("started_at") or "")[:16].replace("T", " ")
    return (f"{row.get('name') or 'run'} · {started} · {row.get('agents') or ''} · "
            f"{row.get('status') or ''} · {str(row.get('run_id'))[:8]}")


def outcomes(turns: pd.DataFrame) -> dict[int, str]:
    """Who spoke on each turn (or why nobody did), in one pass over the turns."""
    return {int(turn): f"{winner} spoke" if isinstance(winner, str) else
            "lull" if bool(lull) else "every bid failed"
            for turn, winner, lull in zip(turns["turn"], turns["winner"], turns["lull"],
                                          strict=True)}


def turn_bids(bids: pd.DataFrame, turn: int) -> pd.DataFrame:
    """One turn's bids for the transcript: what each agent offered and how it was scored."""
    columns = ["agent", "score", "adjusted", "penalized", "eligible", "winner", "message",
               "error", "latency_ms", "path"]
    rows = bids[bids["turn"] == turn].sort_values("position", kind="stable")
    return rows[columns].reset_index(drop=True)


def run_demo(store: RunStore) -> str:
    """A fast offline debate (sim trio, no latency), recorded; returns its run id."""
    settings = dict(DEBATE_TRIO.settings)
    chat = GroupChat(name=DEMO_NAME, agents=DEBATE_TRIO.build_agents(latency_s=0.0), **settings)
    store.attach(chat)
    chat.run(DEBATE_TRIO.task)
    return str(chat.last_run.run_id)
