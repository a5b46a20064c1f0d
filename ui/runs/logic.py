"""Data shaping for the pages: records and frames in, small tables and labels out (pure).

Why: the numbers a page shows (the past-turns table of the live floor, run summaries, metric
cards, side-by-side comparisons) are easy to get subtly wrong and easy to test as data.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

import pandas as pd

from groupchat_core import Bid, RunRecord, Turn
from groupchat_core.analysis import SpeakerMetrics

WORDS_PER_SECOND = 14.0


def parse_time(value: str | None) -> datetime | None:
    try:
        return datetime.fromisoformat(value) if value else None
    except ValueError:
        return None


def duration_s(started: str | None, ended: str | None) -> float | None:
    start, end = parse_time(started), parse_time(ended)
    return (end - start).total_seconds() if start and end else None


def reveal(content: str, posted_at: str | None, now: datetime) -> tuple[str, bool]:
    """The words of a new reply shown so far (streamed at WORDS_PER_SECOND) and whether all are."""
    words = content.split(" ")
    posted = parse_time(posted_at)
    if posted is None:
        return content, True
    shown = int((now - posted).total_seconds() * WORDS_PER_SECOND) + 1
    if shown >= len(words):
        return content, True
    return " ".join(words[:max(shown, 1)]), False


def run_label(row: Mapping[str, Any]) -> str:
    """A one-line label for a run picker: name, start time, agents, status."""
    started = str(row.get("started_at") or "")[:16].replace("T", " ")
    return (f"{row.get('name') or 'run'} · {started} · {row.get('agents') or ''} · "
            f"{row.get('status') or ''} · {str(row.get('run_id'))[:8]}")


def _cell(bid: Bid | None) -> str:
    if bid is None:
        return ""
    if bid.error and bid.path == "none":
        return "failed"
    if not bid.message:
        return f"{bid.score:.2f} silent"
    mark = f" → {bid.adjusted:.2f}" if bid.penalized else ""
    return f"{bid.score:.2f}{mark}" + (" ★" if bid.winner else "")


def past_turns(turns: Sequence[Turn], bids_by_turn: Mapping[int, Sequence[Bid]],
               agents: Sequence[str]) -> pd.DataFrame:
    """One row per finished turn, newest first: winner (or lull), margin, every agent's bid."""
    rows = []
    for turn in reversed(turns):
        by_agent = {b.agent: b for b in bids_by_turn.get(turn.turn, ())}
        outcome = turn.winner or ("lull" if turn.lull else "every bid failed")
        row: dict[str, Any] = {"turn": turn.turn, "spoke": outcome,
                               "margin": None if turn.margin is None else round(turn.margin, 3)}
        row.update({agent: _cell(by_agent.get(agent)) for agent in agents})
        rows.append(row)
    return pd.DataFrame(rows, columns=["turn", "spoke", "margin", *agents])


def failures(bids: Iterable[Bid]) -> dict[str, str]:
    """The first failed call (or unparseable reply) per agent, in the order they happened."""
    found: dict[str, str] = {}
    for bid in bids:
        if bid.error and bid.agent not in found:
            found[bid.agent] = bid.error
    return found


def summary(record: RunRecord) -> list[tuple[str, str, str | None]]:
    """Stop reason, turns, tokens, cost and time of a finished run: (label, value, note)."""
    seconds = duration_s(record.started_at, record.ended_at)
    tokens = record.total_prompt_tokens + record.total_completion_tokens
    return [
        ("Stop reason", record.stop_reason or "running", None),
        ("Turns", str(len(record.turns)), None),
        ("Messages", str(max(len(record.messages) - 1, 0)), "posted after the task"),
        ("Tokens", f"{tokens:,}", "simulated agents use none" if _all_sim(record) else None),
        ("Cost", f"${record.total_cost_usd:.4f}" if record.total_cost_usd else "$0",
         f"{record.total_calls} model calls"),
        ("Time", "n/a" if seconds is None else f"{seconds:.1f} s", None),
    ]


def _all_sim(record: RunRecord) -> bool:
    return bool(record.bids) and all(b.path == "simulation" for b in record.bids)


def _fmt(value: float | None, spec: str = ".2f") -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return format(value, spec)


Card = tuple[str, str, str, str | None]  # label, value, help, a short note under the value


def metric_cards(m: SpeakerMetrics) -> list[Card]:
    """(label, value, help, note) for every speaker metric the Analysis page shows."""
    rate = m.penalty_changed_rate
    return [
        ("Turns", str(m.turns), "Turns played, including a final lull.", m.stop_reason),
        ("Lull turn", "none" if m.lull_turn is None else str(m.lull_turn),
         "First turn on which no bid cleared the threshold.", None),
        ("Speaker entropy", f"{m.entropy_bits:.2f}", "Shannon entropy of turn shares, in bits.",
         "bits"),
        ("Evenness", _fmt(m.evenness), "Entropy over its maximum: 1 means perfectly even.",
         None),
        ("Gini", _fmt(m.gini), "Gini of turn shares: 0 equal shares; near 1 one agent "
         "dominates.", None),
        ("Longest monologue", str(m.longest_monologue),
         "Most consecutive messages by one agent.", m.longest_monologue_agent),
        ("Mean margin", _fmt(m.mean_margin, ".3f"),
         "Winner's adjusted bid minus the runner-up's, averaged over turns with both.", None),
        ("Penalty flips", str(m.penalty_changed_winner),
         "Turns where the recency penalty changed who spoke.",
         None if rate is None else f"{rate:.0%} of turns with a winner"),
        ("Failed bids", str(m.failed_bids), "Bids whose model call failed.", None),
    ]


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


def turn_bids(bids: pd.DataFrame, turn: int) -> pd.DataFrame:
    """One turn's bids for the transcript: what each agent offered and how it was scored."""
    columns = ["agent", "score", "adjusted", "penalized", "eligible", "winner", "message",
               "error", "latency_ms", "path"]
    rows = bids[bids["turn"] == turn].sort_values("position", kind="stable")
    return rows[columns].reset_index(drop=True)


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
