"""The Analysis page without streamlit: which run opens, run labels, per-turn outcomes and bids,
and the demo run.

Why: what the page shows about a stored run (who spoke on each turn, what every agent bid) is
easy to get subtly wrong and easy to test as data.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pandas as pd

from groupchat_core import RUN_ENDED, GroupChat
from groupchat_core.analysis import Counterfactual, selector_agreement
from groupchat_core.store import RunStore
from groupchat_ui.kit.frames import records
from groupchat_ui.kit.labels import row_label
from groupchat_ui.kit.presets import DEBATE_TRIO

DEMO_NAME = "Demo debate"
ENDED = RUN_ENDED  # not running, not cut off mid-way (declared in the core)
NO_READABLE_BID = "no agent produced a readable bid"


RUN_KINDS = ("single runs", "sweep runs")
WHATIF_THRESHOLDS = tuple(round(0.05 * i, 2) for i in range(21))  # 0.0 .. 1.0


def kind_of(row: Mapping[str, Any]) -> str:
    """A run made by a sweep (it has a sweep id) or on its own."""
    sweep = row.get("sweep_id")
    return RUN_KINDS[1] if isinstance(sweep, str) and sweep else RUN_KINDS[0]


def of_kind(rows: Mapping[str, Mapping[str, Any]], kind: str) -> dict[str, Mapping[str, Any]]:
    """The runs of one kind, in their order (the picker keeps sweep runs apart)."""
    return {i: r for i, r in rows.items() if kind_of(r) == kind}


def picker_label(row: Mapping[str, Any]) -> str:
    """A one-line label for the run picker: the kit's run label, then the run's status."""
    status = row.get("status") or ""
    return row_label(row) + (f" · {status}" if status and status != "finished" else "")


def default_run(runs: pd.DataFrame, mine: Iterable[str]) -> str | None:
    """The run Analysis opens when nothing is asked for: this session's newest ended run, else
    the newest ended run of anyone, else None (offer the demo). `runs` is newest first; `mine`
    are this session's runs whose jobs have ended (the job table knows it before the store's
    row, written in the background, says so).

    Why not simply the newest row: that may be another session's half-finished run."""
    if runs.empty:
        return None
    own = runs[runs["run_id"].isin(set(mine))]
    ended = runs[runs["status"].isin(ENDED)]
    for frame in (own, ended):
        if not frame.empty:
            return str(frame.iloc[0]["run_id"])
    return None


def outcome(winner: Any, lull: Any, reason: Any = "") -> str:
    """Who spoke on a turn, or why nobody did (a lull, or no readable bid: the run stopped)."""
    if isinstance(winner, str) and winner:
        return f"{winner} spoke"
    if bool(lull) or reason == "lull":
        return "lull"
    return NO_READABLE_BID


def outcomes(turns: pd.DataFrame) -> dict[int, str]:
    """Who spoke on each turn (or why nobody did), in one pass over the turns."""
    reasons = turns["reason"] if "reason" in turns else [""] * len(turns)
    return {int(turn): outcome(winner, lull, reason)
            for turn, winner, lull, reason in zip(turns["turn"], turns["winner"], turns["lull"],
                                                  reasons, strict=True)}


def unreadable_turn(turns: pd.DataFrame) -> int | None:
    """The turn on which no bid could be read (the run stopped with an error there), if any."""
    for turn, winner, lull in zip(turns["turn"], turns["winner"], turns["lull"], strict=True):
        if not (isinstance(winner, str) and winner) and not bool(lull):
            return int(turn)
    return None


def bid_reasons(bids: pd.DataFrame, turn: int) -> pd.DataFrame:
    """Each agent's reason on a turn without a readable bid: the bid log rows that say why."""
    columns = [c for c in ("agent", "path", "error", "latency_ms", "calls") if c in bids]
    rows = bids[bids["turn"] == turn]
    if "position" in rows:
        rows = rows.sort_values("position", kind="stable")
    return rows[columns].reset_index(drop=True)


def turn_bids(bids: pd.DataFrame, turn: int) -> pd.DataFrame:
    """One turn's bids for the transcript: what each agent offered and how it was scored."""
    columns = ["agent", "score", "adjusted", "penalized", "eligible", "winner", "message",
               "error", "latency_ms", "path"]
    rows = bids[bids["turn"] == turn].sort_values("position", kind="stable")
    return rows[columns].reset_index(drop=True)


BID_WINDOW = 200  # turns per window of the per-turn charts (the transcript pages too)


def turn_windows(turns: Sequence[int], size: int = BID_WINDOW) -> list[tuple[int, int]]:
    """The per-turn charts' windows as (first turn, last turn), oldest first; together they
    cover every turn. Why: a 1,000-turn run's heatmap and bid lines drew 2,000 winner stars and
    16,000 cells at once, keeping the browser busy; a window of `size` turns draws a fifth."""
    ordered = sorted(int(t) for t in turns)
    return [(ordered[i], ordered[min(i + size, len(ordered)) - 1])
            for i in range(0, len(ordered), size)]


def in_window(frame: pd.DataFrame, window: tuple[int, int] | None) -> pd.DataFrame:
    """The rows of a bids or turns frame whose turn lies in `window` (all rows for None)."""
    if window is None or frame.empty:
        return frame
    return frame[frame["turn"].between(window[0], window[1])]


def run_demo(store: RunStore) -> str:
    """A fast offline debate (sim trio, no latency), recorded; returns its run id."""
    settings = dict(DEBATE_TRIO.settings)
    chat = GroupChat(name=DEMO_NAME, agents=DEBATE_TRIO.build_agents(latency_s=0.0), **settings)
    store.attach(chat)
    chat.run(DEBATE_TRIO.task)
    if chat.last_run is None:  # run() always records one; say so rather than assume it
        raise RuntimeError("the demo chat ended without a run record")
    return str(chat.last_run.run_id)


def agreement_line(turns: pd.DataFrame) -> str | None:
    """Human as selector in Analysis: how often the person's pick was the bidding rule's;
    None for a run in which nobody picked."""
    found = selector_agreement(turns)
    if found.rate is None:
        return None
    s = "s" if found.picks != 1 else ""
    return (f"A person picked who speaks on {found.picks} turn{s}; the bidding rule would "
            f"have picked the same speaker on {found.agreed} (agreement {found.rate:.0%}).")


def whatif_text(replay: Counterfactual, recorded_turns: int) -> str:
    """One line: what a run's recorded bids give under other parameters (`counterfactual`):
    the same run, a lull that ends it sooner, or another speaker from some turn on."""
    rows = records(replay.frame)
    last = rows[-1] if rows else None
    if last is None or not bool(last["diverged"]):
        return (f"The same run: each of its {recorded_turns} recorded turns picks the same "
                "speaker.")
    turn, was, now = int(last["turn"]), last["actual_winner"], last["counterfactual_winner"]
    if not isinstance(now, str):  # None, or NaN once in a frame
        return (f"A lull on turn {turn} (no bid clears the threshold): the chat stops there, "
                f"not after its {recorded_turns} recorded turns.")
    before = f"{was}'s" if isinstance(was, str) else "a lull"
    return (f"Turn {turn} goes to {now} instead of {before}: from there the agents would bid on "
            "another conversation, which the record cannot tell.")


def replay_table(replay: Counterfactual) -> pd.DataFrame:
    """The replayed turns, recorded speaker against replayed one (a lull as '(lull)')."""
    def who(value: object) -> str:
        return value if isinstance(value, str) else "(lull)"

    return pd.DataFrame({
        "turn": [int(t) for t in replay.frame["turn"]],
        "recorded": [who(v) for v in replay.frame["actual_winner"]],
        "replayed": [who(v) for v in replay.frame["counterfactual_winner"]],
        "why": [str(r).replace("_", " ") for r in replay.frame["reason"]]},
        columns=["turn", "recorded", "replayed", "why"])


def same_run_thresholds(grid: pd.DataFrame) -> str:
    """The thresholds of a what-if grid (one penalty and window) that give the recorded run,
    as ranges ('0.10–0.45 and 0.60'), or a sentence saying none does."""
    ordered = grid.sort_values("threshold")
    spans: list[list[float]] = []
    previous_same = False
    for threshold, outcome in zip(ordered["threshold"], ordered["outcome"], strict=True):
        same = outcome == "same"
        if same and previous_same:
            spans[-1][1] = float(threshold)
        elif same:
            spans.append([float(threshold), float(threshold)])
        previous_same = same
    if not spans:
        return "No threshold on the grid gives the recorded run at this penalty and window."
    text = [f"{a:.2f}" if a == b else f"{a:.2f}–{b:.2f}" for a, b in spans]
    joined = text[0] if len(text) == 1 else ", ".join(text[:-1]) + " and " + text[-1]
    return f"At this penalty and window, thresholds {joined} (of the grid) give the recorded run."
