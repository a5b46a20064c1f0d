"""Speaker metrics, transitions, turn explanations and counterfactual re-selection over bid logs.

Why a module of pure functions over the docs/engine.md §9 frames (RunRecord.bids_frame() and
friends): the dashboard, the CLI and the sweeps ask the same questions of a run ("who
dominated?", "why did X speak?", "what if the threshold were higher?"), whether the run is live,
stored or replayed.
Counterfactuals reuse the engine's own `select_speaker`, so they can never disagree with it.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

from .._bidding import format_decimal
from .._errors import ConfigError
from .._records import BidOutcome
from ..engine._selection import (
    NO_READ_BID_REASONS,
    Candidate,
    Selection,
    Standing,
    decide,
    human_message,
    select_speaker,
)
from ..engine._strategies import ASKS_ONE, score_only


@dataclass(frozen=True)
class SpeakerMetrics:
    """Who spoke how much in one run; None where a value is undefined (e.g. nobody spoke)."""

    turns: int
    messages_posted: int  # agent messages (the task is not counted)
    agents: tuple[str, ...]  # every agent that bid, in agent-list order
    shares: dict[str, float]  # fraction of posted messages per agent (0 for the silent)
    # A chat without messages has no speaker balance: entropy, evenness and Gini are all None
    # for it (one rule, docs/statistics.md), so no aggregate counts it as a monologue (0 bits)
    # for one metric while leaving it out of the others.
    entropy_bits: float | None
    evenness: float | None  # entropy / log2(len(agents)); 1 means perfectly even
    gini: float | None  # 0 equal shares, (n-1)/n a single speaker
    longest_monologue: int
    longest_monologue_agent: str | None
    mean_margin: float | None
    penalty_changed_winner: int
    penalty_changed_rate: float | None  # per turn with a winner
    failed_bids: int
    lull_turn: int | None = None
    stop_reason: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Counterfactual:
    """Re-selection under other parameters, valid only while the history stays identical."""

    frame: pd.DataFrame  # turn, actual_winner, counterfactual_winner, diverged, reason
    first_divergence: int | None
    stopped: str | None  # "lull"/"all_failed"/"no_readable_bid" (no winner), "diverged", None


def agent_order(bids: pd.DataFrame | None) -> list[str]:
    """Agents in agent-list order (by `position`), the order every chart and table uses."""
    if bids is None or bids.empty:
        return []
    ordered = bids.sort_values("position", kind="stable") if "position" in bids else bids
    return list(dict.fromkeys(ordered["agent"]))


def agent_orders(bids: pd.DataFrame) -> dict[str, list[str]]:
    """`agent_order` of each run in a bids frame of many runs, keyed by run id."""
    by_run: dict[str, list[tuple[int, str]]] = {}
    if bids.empty:
        return {}
    for run_id, position, agent in zip(bids["run_id"], bids["position"], bids["agent"],
                                       strict=True):
        by_run.setdefault(run_id, []).append((position, agent))
    return {run_id: list(dict.fromkeys(a for _, a in sorted(rows, key=lambda r: r[0])))
            for run_id, rows in by_run.items()}


def speakers(log: pd.DataFrame) -> list[str]:
    """Posted speakers in order, from a turns, bids or messages frame (the task excluded)."""
    if log.empty:
        return []
    if "agent" in log and "winner" in log:  # bids frame: winner is a flag
        won = log[log["winner"].astype(bool)].sort_values("turn", kind="stable")
        return [str(a) for a in won["agent"]]
    if "winner" in log:  # turns frame: winner is a name or None
        ordered = log.sort_values("turn", kind="stable")
        return [w for w in ordered["winner"] if isinstance(w, str)]
    return [str(r) for r in log["role"].iloc[1:]]  # messages frame: the first one is the task


def gini(values: Sequence[float]) -> float | None:
    """Gini coefficient (mean absolute difference / twice the mean); None for an all-zero set."""
    n, total = len(values), float(sum(values))
    if n == 0 or total <= 0:
        return None
    spread = sum(abs(a - b) for a in values for b in values)
    return spread / (2 * n * total)


def _longest_run(sequence: Sequence[str]) -> tuple[str | None, int]:
    best: tuple[str | None, int] = (None, 0)
    current, length = None, 0
    for item in sequence:
        length = length + 1 if item == current else 1
        current = item
        if length > best[1]:
            best = (item, length)
    return best


def _entropy(shares: Sequence[float]) -> float:
    return -sum(p * math.log2(p) for p in shares if p > 0) + 0.0  # + 0.0 turns -0.0 into 0.0


def speaker_metrics(
    turns: pd.DataFrame,
    bids: pd.DataFrame | None = None,
    *,
    stop_reason: str | None = None,
) -> SpeakerMetrics:
    """Balance and dynamics of one run; agents come from the bids so the silent count too."""
    return _metrics_of_rows(turns.to_dict("records"), agent_order(bids), stop_reason)


def speaker_metrics_by_run(turns: pd.DataFrame, agents: Mapping[str, Sequence[str]],
                           stop_reasons: Mapping[str, str | None]) -> dict[str, SpeakerMetrics]:
    """`speaker_metrics` of every run in a turns frame of many runs (its `run_id` column), by
    the same rule, with each run's agents given in agent-list order. Why not a frame per run:
    slicing a frame 1,200 times took most of a big sweep's page (5.2 s of its 8.3 s)."""
    by_run: dict[str, list[dict[Any, Any]]] = {}
    for row in turns.to_dict("records"):
        by_run.setdefault(row["run_id"], []).append(row)
    return {run_id: _metrics_of_rows(rows, list(agents.get(run_id, ())), stop_reasons.get(run_id))
            for run_id, rows in by_run.items()}


def _metrics_of_rows(rows: Sequence[Mapping[Any, Any]], agents: list[str],
                     stop_reason: str | None) -> SpeakerMetrics:
    """The rule of `speaker_metrics` over one run's turn rows (in the frame's order)."""
    order = [w for r in sorted(rows, key=lambda r: r["turn"]) if isinstance(w := r["winner"], str)]
    agents = [*agents, *(s for s in dict.fromkeys(order) if s not in agents)]
    posted = len(order)
    shares = {a: (order.count(a) / posted if posted else 0.0) for a in agents}
    entropy = _entropy(list(shares.values()))
    who, longest = _longest_run(order)
    margins = [m for r in rows if pd.notna(m := r.get("margin"))]
    changed = sum(bool(r["penalty_changed_winner"]) for r in rows)
    lulls = [int(r["turn"]) for r in rows if bool(r.get("lull", False))]
    return SpeakerMetrics(
        turns=len(rows),
        messages_posted=posted,
        agents=tuple(agents),
        shares=shares,
        entropy_bits=entropy if posted else None,
        evenness=entropy / math.log2(len(agents)) if len(agents) > 1 and posted else None,
        gini=gini(list(shares.values())) if posted else None,
        longest_monologue=longest,
        longest_monologue_agent=who,
        # numpy's mean, as pandas' Series.mean sums: the same float to the last bit
        mean_margin=float(np.mean(np.asarray(margins, dtype=float))) if margins else None,
        penalty_changed_winner=changed,
        penalty_changed_rate=changed / posted if posted else None,
        failed_bids=int(sum(f for r in rows if pd.notna(f := r.get("failed_bids", 0)))),
        lull_turn=min(lulls) if lulls else None,
        stop_reason=stop_reason,
    )


def transition_matrix(log: pd.DataFrame, agents: Sequence[str] | None = None) -> pd.DataFrame:
    """Counts of speaker -> next speaker over consecutive posted messages, all agents both ways."""
    order = speakers(log)
    names = list(agents) if agents is not None else []
    names += [s for s in dict.fromkeys(order) if s not in names]
    matrix = pd.DataFrame(
        0,
        index=pd.Index(names, name="speaker"),
        columns=pd.Index(names, name="next_speaker"),
        dtype=int,
    )
    for (current, following), count in Counter(zip(order, order[1:], strict=False)).items():
        matrix.at[current, following] = count
    return matrix


# --- explaining one turn ----------------------------------------------------------------


def _num(value: float) -> str:
    return f"{round(float(value), 4):g}"


NO_OUTCOME = ("these bids have no outcome column (a table written before bids stored one): "
              "read them from the store, or export them again, to get it")


def bid_outcome(row: Any) -> BidOutcome:
    """A bid row's `outcome`, the field the turn loop set (the store's v10 upgrade filled it in
    for older bids)."""
    if "outcome" not in row:
        raise ConfigError(NO_OUTCOME)
    return row["outcome"]  # type: ignore[no-any-return]  # a BidOutcome, as the store holds it


def bid_outcomes(bids: pd.DataFrame) -> pd.Series:
    """Every bid row's outcome (see `bid_outcome`), for masks such as `== "failed"`."""
    if "outcome" not in bids:
        if bids.empty:
            return pd.Series(dtype=object, index=bids.index)
        raise ConfigError(NO_OUTCOME)
    return bids["outcome"]


def _failed(row: Any) -> bool:
    return bid_outcome(row) == "failed"


def _candidate(row: Any) -> Candidate:
    outcome = bid_outcome(row)
    message = row["message"] if isinstance(row["message"], str) else ""
    if row.get("kind") == "human":  # a person's bid, read by the engine's own rule
        error = row.get("error")
        message = human_message(float(row["score"]), message,
                                error if isinstance(error, str) else None)
    return Candidate(str(row["agent"]), float(row["score"]), message,
                     failed=outcome == "failed", unreadable=outcome == "unreadable")


def _recorded_selection(rows: pd.DataFrame, threshold: float) -> Selection:
    """The engine's decision over a recorded turn, from the standings its bids carry."""
    records = rows.to_dict("records")
    standings = [Standing(bool(r["penalized"]), float(r["adjusted"]), bool(r["eligible"]))
                 for r in records]
    return decide([_candidate(r) for r in records], standings, threshold)


def _speaking(rows: pd.DataFrame) -> pd.DataFrame:
    """Bids that offered a message and did not fail: the only ones selection considers."""
    mask = [isinstance(r["message"], str) and bool(r["message"]) and not _failed(r)
            for _, r in rows.iterrows()]
    return rows[mask]


def _bid_text(row: Any) -> str:
    if bool(row["penalized"]):
        return f"{_num(row['adjusted'])} (raw {_num(row['score'])} minus the recency penalty)"
    return _num(row["adjusted"])


# Turns whose speaker a strategy named instead of a bid (docs/engine.md §16).
_NAMED_BY_RULE = {
    "round_robin": "it was next in list order (round_robin)",
    "random": "the seeded draw of the random strategy picked it",
    "selector": "the selector model chose it",
    "all_speak": "every agent speaks each round, in list order (all_speak)",
    "human_pick": "the person choosing the speaker picked it over the rule's choice",
}


def _explain_winner(rows: pd.DataFrame, info: Any, threshold: float) -> list[str]:
    speaking = _speaking(rows)
    won = rows[rows["winner"].astype(bool)].iloc[0]
    name = won["agent"]
    if info.get("reason") in _NAMED_BY_RULE:
        return [f"{name} spoke because {_NAMED_BY_RULE[info.get('reason')]}; its score "
                f"({_num(won['score'])}) did not decide it.", *_selector_said(info)]
    chosen = _recorded_selection(rows, threshold)
    parts = [f"{name} spoke with an adjusted bid of {_bid_text(won)}, above the threshold "
             f"{format_decimal(threshold)}."]
    if chosen.runner_up is None:
        parts.append("No other agent offered a message, so there was no runner-up.")
    else:
        runner = rows.iloc[chosen.runner_up]
        margin = info.get("margin")
        margin = float(won["adjusted"] - runner["adjusted"]) if margin is None else margin
        parts.append(f"The runner-up was {runner['agent']} at {_bid_text(runner)}, "
                     f"a margin of {_num(margin)}.")
    if info.get("reason") == "tie_by_order":
        tied = [a for a in speaking[speaking["adjusted"] == won["adjusted"]]["agent"] if a != name]
        parts.append(f"It was a tie with {', '.join(tied)}; ties go to the agent earliest in "
                     f"the list, {name}.")
    if bool(info.get("penalty_changed_winner")) and chosen.raw_winner is not None:
        raw = rows.iloc[chosen.raw_winner]
        parts.append(f"The recency penalty changed the outcome: on raw scores {raw['agent']} "
                     f"({_num(raw['score'])}) would have won.")
    elif rows["penalized"].astype(bool).any():
        hit = ", ".join(rows[rows["penalized"].astype(bool)]["agent"])
        parts.append(f"The recency penalty applied to {hit} but did not change the winner.")
    return parts


def _selector_said(info: Any) -> list[str]:
    """The selector model's stored reply (strategy selector), so its "why" is on the page; a
    round_robin turn of a selector run fell back because the reply named nobody."""
    said = info.get("selector_reason")
    if not said:
        return []
    if info.get("reason") == "selector":
        return [f'The selector said: "{said}".']
    return [f'The selector\'s reply named nobody on the roster, so round robin chose: "{said}".']


def _explain_no_winner(rows: pd.DataFrame, info: Any, threshold: float) -> list[str]:
    if info.get("reason") in NO_READ_BID_REASONS:
        errors = "; ".join(f"{r['agent']}: {r['error']}" for _, r in rows.iterrows())
        what = ("Every bid failed" if info.get("reason") == "all_failed"
                else "No agent produced a readable bid")
        return [f"{what}, so the run stopped with an error (this is not a lull: no agent "
                "produced a readable bid).", f"Reasons: {errors}."]
    best_index = _recorded_selection(rows, threshold).runner_up  # with no winner: the best
    parts = ["Nobody spoke: a lull, which ends the run."]
    if best_index is None:
        parts.append("Every agent stayed silent or failed, so no bid could take the floor.")
        return parts
    best = rows.iloc[best_index]
    relation = "equal to" if best["adjusted"] == threshold else "not above"
    parts.append(f"The best adjusted bid with a message was {best['agent']}'s {_bid_text(best)}, "
                 f"{relation} the threshold {format_decimal(threshold)} (a bid must be strictly "
                 "above it).")
    return parts


def explain_turn(bids: pd.DataFrame, turns: pd.DataFrame, turn: int, threshold: float) -> str:
    """One paragraph on why a turn went the way it did: winner, runner-up, margin, penalty, lull."""
    rows = bids[bids["turn"] == turn].sort_values("position", kind="stable")
    found = turns[turns["turn"] == turn]
    if rows.empty or found.empty:
        known = sorted(int(t) for t in turns["turn"]) if not turns.empty else []
        raise ConfigError(f"turn {turn!r} is not in this run; recorded turns: {known}")
    info = {k: (None if _missing(v) else v) for k, v in found.iloc[0].items()}
    if rows["winner"].astype(bool).any():
        parts = _explain_winner(rows, info, threshold)
    else:
        parts = _explain_no_winner(rows, info, threshold)
    silent = sum(not (isinstance(m, str) and m) for m in rows["message"])
    failed = sum(_failed(r) for _, r in rows.iterrows())
    if silent and info.get("reason") not in NO_READ_BID_REASONS:
        parts.append(f"{silent} of {len(rows)} bids had an empty message ({failed} failed).")
    return f"Turn {turn}: " + " ".join(parts)


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


# --- counterfactual re-selection ----------------------------------------------------------


@dataclass(frozen=True)
class RecordedTurn:
    """One recorded turn reduced to what re-selection needs (prepare once, re-select often)."""

    turn: int
    candidates: tuple[Candidate, ...]  # in agent-list order
    actual_winner: str | None
    # A person as selector overrode the rule on this turn (reason human_pick): what the rule
    # had picked. None: the rule's pick stood (no selector, or the person accepted it).
    overrode: str | None = None
    # The run's strategy named the speaker (round_robin, random, selector, all_speak: §16):
    # threshold, penalty and window never entered, so no value of them changes this turn.
    assigned: bool = False


def _overrides(turns: pd.DataFrame | None) -> dict[int, str]:
    """Turn -> the rule's pick, for the turns a person as selector overrode."""
    if turns is None or turns.empty or "rule_winner" not in turns:
        return {}
    return {int(t): str(rule) for t, reason, rule in
            zip(turns["turn"], turns["reason"], turns["rule_winner"], strict=True)
            if reason == "human_pick" and isinstance(rule, str)}


def recorded_turns(bids: pd.DataFrame, turns: pd.DataFrame | None = None,
                   strategy: str | None = None) -> list[RecordedTurn]:
    """The bid log as RecordedTurns, in turn order (for many counterfactuals over one run).
    `turns` (the run's turn log) tells which turns a person as selector overrode; `strategy`
    (the run's config; None: bidding) which runs name their speakers without §6."""
    ordered = bids.sort_values(["turn", "position"], kind="stable")
    overrides = _overrides(turns)
    assigned = strategy in ASKS_ONE
    prepared = []
    for turn, group in ordered.groupby("turn", sort=True):
        candidates = tuple(_candidate(r) for r in group.to_dict("records"))
        if strategy == "bid_then_speak":  # chosen on scores: only the winner wrote a message
            candidates = tuple(score_only(c) for c in candidates)
        won = [str(a) for a, w in zip(group["agent"], group["winner"], strict=True) if bool(w)]
        number = int(str(turn))
        prepared.append(RecordedTurn(number, candidates, won[0] if won else None,
                                     overrides.get(number), assigned))
    return prepared


def reselect(turns: Sequence[RecordedTurn], threshold: float, recency_penalty: float,
           recency_window: int) -> list[dict[str, Any]]:
    """Counterfactual rows (see `counterfactual`) up to the first divergence or lull."""
    rows: list[dict[str, Any]] = []
    spoken: list[str] = []
    for recorded in turns:
        if recorded.assigned:  # the strategy named the speaker: the parameters change nothing
            rows.append({"turn": recorded.turn, "actual_winner": recorded.actual_winner,
                         "counterfactual_winner": recorded.actual_winner, "diverged": False,
                         "reason": "assigned" if recorded.actual_winner else "lull"})
            if recorded.actual_winner is None:
                break
            spoken.append(recorded.actual_winner)
            continue
        recent = spoken[-recency_window:] if recency_window > 0 else []
        choice = select_speaker(list(recorded.candidates), recent, threshold, recency_penalty)
        alt = recorded.candidates[choice.winner].agent if choice.winner is not None else None
        actual, reason = recorded.actual_winner, str(choice.reason)
        if recorded.overrode is not None and alt == recorded.overrode:
            alt, reason = actual, "human_pick"  # the person saw the same pick: taken as made
        rows.append({"turn": recorded.turn, "actual_winner": actual,
                     "counterfactual_winner": alt, "diverged": alt != actual,
                     "reason": reason})
        if alt != actual or alt is None:
            break
        spoken.append(alt)
    return rows


def counterfactual(
    bids: pd.DataFrame, threshold: float, recency_penalty: float, recency_window: int,
    *, prepared: Sequence[RecordedTurn] | None = None, turns: pd.DataFrame | None = None,
    strategy: str | None = None,
) -> Counterfactual:
    """Re-select each recorded turn under other parameters while the history is unchanged.

    Bids are taken as recorded: the bids of turn t depend on the messages before it, so the
    comparison stops at the first turn whose winner differs (later bids would have been made
    against another conversation) or where the counterfactual would lull. An LLM shown other
    numbers in its prompt might also bid differently; this assumes it would not. Pass
    `prepared=recorded_turns(bids)` when asking many questions of one run. With `turns` (the
    run's turn log), a turn where a person as selector overrode the rule keeps their pick
    while the rule would still pick what it picked then (they chose against the same pick),
    and diverges where the rule would pick otherwise (their choice then is unknown). With
    `strategy` (the run's) one that names its speakers (round_robin, random, selector,
    all_speak) keeps every recorded turn: threshold, penalty and window never enter it.
    """
    columns = ["turn", "actual_winner", "counterfactual_winner", "diverged", "reason"]
    rows = reselect(recorded_turns(bids, turns, strategy) if prepared is None else prepared,
                  threshold, recency_penalty, recency_window)
    stopped: str | None = None
    if rows and (rows[-1]["diverged"] or rows[-1]["counterfactual_winner"] is None):
        last = rows[-1]
        stopped = last["reason"] if last["counterfactual_winner"] is None else "diverged"
    frame = pd.DataFrame(rows, columns=columns)
    first = next((r["turn"] for r in rows if r["diverged"]), None)
    return Counterfactual(frame=frame, first_divergence=first, stopped=stopped)
