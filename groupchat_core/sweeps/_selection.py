"""Did the floor go to the best candidate? A judge scores every candidate message of each turn.

Why: bidding picks the speaker by the agents' own scores; whether those scores point at the most
useful message is a separate question. A judge (any model, through the engine's model-call path
and the bid cache, as the outcome judge) scores each turn's candidate messages for usefulness as
the next message, blind to who wrote them and what they bid. From those scores: per turn,
whether the winner was the judge's best and the regret (best judged score minus the winner's);
per agent and overall, the calibration of bids against judged usefulness (Spearman's rho with a
Fisher-z interval, and the mean of bid minus judged score). Calls are counted, priced and cached
like bids; nothing is called unless asked (docs/outcomes.md, "Selection quality").
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pandas as pd

from .._agent import Agent
from .._records import IN_PROCESS_PATHS, Bid, RunRecord
from .._secrets import scrub
from ..engine._bidcache import BidCache, default_cache
from ..outcomes._judge import JUDGE_TIMEOUT_S, verdict_tool
from ..providers._model_calls import provider_for
from ..providers._providers import BidRequest, ModelReply
from ..providers._replies import ModelCallFailed
from ._intervals import Interval, studentized_mean, wilson, z_value
from ._pvalues import spearman

if TYPE_CHECKING:
    from ..store import RunStore

SELECTION_TOOL = verdict_tool(
    "the proposed next message",
    "How useful it would be as the next message (0 = useless or off-topic, 1 = the best "
    "possible).")
SELECTION_PROMPT = (
    "You judge a group discussion. Score how useful the proposed message would be as the next "
    "message toward the task, from 0 (useless or off-topic) to 1 (the best possible next "
    "message), by calling `respond` with the score and a one-sentence reason.\n\n"
    "Task:\n{task}\n\nThe conversation so far:\n{history}\n\nProposed next message:\n{candidate}"
)
MIN_CALIBRATION_N = 4  # Spearman's rho with fewer pairs has no usable interval
CANDIDATE_COLUMNS = ["run_id", "turn", "agent", "kind", "bid", "adjusted", "eligible", "winner",
                     "judged", "reason", "error", "calls", "cached", "cost_usd"]


def selection_prompt(task: str, history: Sequence[tuple[str, str]], candidate: str) -> str:
    """The whole prompt the judge is sent for one candidate (no author, no bid: blind)."""
    shown = "\n".join(f"{name}: {text}" for name, text in history) or "(nothing yet)"
    return SELECTION_PROMPT.format(task=task, history=shown, candidate=candidate)


def selection_judge(model: str, api_base: str | None = None) -> Agent:
    """The judge as an Agent (temperature 0: its answers are cached like deterministic bids)."""
    return Agent(agent_name="selection-judge", model_name=model, temperature=0.0,
                 max_tokens=256, api_base=api_base, num_retries=2,
                 tools_list_dictionary=[SELECTION_TOOL])


def candidates_of(record: RunRecord) -> list[tuple[int, list[tuple[str, str]], list[Bid]]]:
    """Per turn with a winner: (turn, the conversation before it, its candidate bids: readable
    bids with a message). Lull turns have no winner to judge; the history is the task and the
    winners' messages of the earlier turns."""
    by_turn: dict[int, list[Bid]] = {}
    for bid in record.bids:
        by_turn.setdefault(bid.turn, []).append(bid)
    history: list[tuple[str, str]] = []
    found = []
    for turn in sorted(record.turns, key=lambda t: t.turn):
        bids = by_turn.get(turn.turn, [])
        offered = [b for b in bids if b.error is None and b.message.strip()]
        winner = next((b for b in offered if b.winner), None)
        if winner is not None:
            found.append((turn.turn, list(history), offered))
            history.append((winner.agent, winner.message))
    return found


@dataclass
class SelectionJudgement:
    """Every judged candidate (one row each) and what the judging cost."""

    candidates: pd.DataFrame
    judge_model: str
    calls: int = 0
    cached: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    unpriced: int = 0
    errors: list[str] = field(default_factory=list)


async def _judge_one(agent: Agent, prompt: str, cache: BidCache | None) -> ModelReply:
    messages = [{"role": "user", "content": prompt}]
    deadline = asyncio.get_running_loop().time() + JUDGE_TIMEOUT_S
    request = BidRequest(agent, messages, (), 0, 0, deadline)
    provider = provider_for(agent.model_name)

    async def call() -> ModelReply:
        return await provider.bid(request)

    if cache is not None and cache.applies(agent, None):
        return await cache.fetch(request, call)
    return await call()


async def ajudge_selection(records: Iterable[RunRecord], model: str, *,
                           api_base: str | None = None, cache: bool = True,
                           store: RunStore | None = None,
                           concurrency: int = 8) -> SelectionJudgement:
    """Judge every candidate message of every turn with a winner in `records`. `cache`: the
    answers are remembered like bids (in `store`'s bid cache when given, so a second look costs
    nothing, else in this process's memory)."""
    agent = selection_judge(model, api_base)
    chosen = None if not cache else BidCache(store) if store is not None else default_cache()
    gate = asyncio.Semaphore(max(1, concurrency))
    jobs: list[tuple[RunRecord, int, Bid, str]] = []
    for record in records:
        for turn, history, offered in candidates_of(record):
            jobs.extend((record, turn, bid, selection_prompt(record.task, history, bid.message))
                        for bid in offered)

    async def one(prompt: str) -> ModelReply | ModelCallFailed:
        async with gate:
            try:
                return await _judge_one(agent, prompt, chosen)
            except ModelCallFailed as exc:
                return exc

    replies = await asyncio.gather(*(one(prompt) for *_, prompt in jobs))
    result = SelectionJudgement(pd.DataFrame(columns=CANDIDATE_COLUMNS), model)
    rows = []
    for (record, turn, bid, _), reply in zip(jobs, replies, strict=True):
        row: dict[str, Any] = {
            "run_id": record.run_id, "turn": turn, "agent": bid.agent, "kind": bid.kind,
            "bid": bid.score, "adjusted": bid.adjusted, "eligible": bid.eligible,
            "winner": bid.winner, "judged": None, "reason": "", "error": None, "calls": 0,
            "cached": False, "cost_usd": None}
        if isinstance(reply, ModelCallFailed):
            row["error"] = scrub(str(reply), [agent])[:2000]
            row["calls"] = reply.calls
        else:
            row["calls"], row["cached"], row["cost_usd"] = reply.calls, reply.cached, \
                reply.cost_usd
            if reply.bid.readable:
                row["judged"], row["reason"] = reply.bid.score, scrub(reply.bid.message,
                                                                      [agent])[:2000]
            else:
                row["error"] = scrub(reply.bid.error or "unreadable verdict", [agent])[:2000]
            result.prompt_tokens += reply.prompt_tokens or 0
            result.completion_tokens += reply.completion_tokens or 0
            if reply.cost_usd is None and not reply.cached and reply.calls \
                    and reply.path not in IN_PROCESS_PATHS:  # the rule of _records.unpriced
                result.unpriced += 1
            result.cost_usd += reply.cost_usd or 0.0
        result.calls += row["calls"]
        result.cached += int(bool(row["cached"]))
        if row["error"] is not None:
            result.errors.append(row["error"])
        rows.append(row)
    if rows:
        result.candidates = pd.DataFrame(rows, columns=CANDIDATE_COLUMNS)
    return result


def judge_selection(records: Iterable[RunRecord], model: str, *,
                    api_base: str | None = None, cache: bool = True,
                    store: RunStore | None = None, concurrency: int = 8) -> SelectionJudgement:
    """`ajudge_selection` from synchronous code (not from inside a running event loop)."""
    return asyncio.run(ajudge_selection(records, model, api_base=api_base, cache=cache,
                                        store=store, concurrency=concurrency))


def selection_turns(candidates: pd.DataFrame) -> pd.DataFrame:
    """Per judged turn: candidates, the winner, the judge's best (ties: all of them, joined by
    ", "), whether the winner was among the best, and the regret (best judged minus the
    winner's). Turns whose winner's message the judge could not score are left out."""
    columns = ["run_id", "turn", "candidates", "winner", "best", "winner_judged", "best_judged",
               "winner_is_best", "regret"]
    rows = []
    judged = candidates[candidates["judged"].notna()]
    for (run_id, _turn), group in judged.groupby(["run_id", "turn"], sort=True):
        won = group[group["winner"].astype(bool)]
        if won.empty:
            continue
        best = float(group["judged"].max())
        mine = float(won["judged"].iloc[0])
        rows.append({"run_id": run_id, "turn": int(group["turn"].iloc[0]), "candidates": len(group),
                     "winner": str(won["agent"].iloc[0]),
                     "best": ", ".join(group.loc[group["judged"] == best, "agent"]),
                     "winner_judged": mine, "best_judged": best,
                     "winner_is_best": mine >= best, "regret": best - mine})
    return pd.DataFrame(rows, columns=columns)


def _rho_interval(x: Sequence[float], y: Sequence[float]) -> Interval:
    """Spearman's rho with a Fisher-z interval (se 1.06/sqrt(n-3), Fieller et al. 1957)."""
    n = len(x)
    rho, _ = spearman(x, y)
    if n < MIN_CALIBRATION_N:
        return Interval(rho, math.nan, math.nan, "spearman",
                        f"{n} pairs: too few for an interval (needs {MIN_CALIBRATION_N})")
    if math.isnan(rho):
        return Interval(rho, math.nan, math.nan, "spearman",
                        "no variation in the bids or in the judged scores: no rank correlation")
    if abs(rho) >= 1.0:
        return Interval(rho, rho, rho, "spearman, fisher z",
                        f"all {n} pairs in the same order: the interval is the point")
    z, half = math.atanh(rho), z_value() * 1.06 / math.sqrt(n - 3)
    return Interval(rho, math.tanh(z - half), math.tanh(z + half), "spearman, fisher z")


def calibration(candidates: pd.DataFrame) -> pd.DataFrame:
    """How bids track judged usefulness, per agent and overall ("all"): n pairs, Spearman's rho
    with its interval, and the mean of bid minus judged score (> 0: bids above the judge's
    view) with a studentized bootstrap interval cut to [-1, 1]."""
    judged = candidates[candidates["judged"].notna()]
    groups: list[tuple[str, pd.DataFrame]] = [
        (str(agent), group) for agent, group in judged.groupby("agent", sort=True)]
    groups.append(("all", judged))
    rows = []
    for name, group in groups:
        bids = [float(v) for v in group["bid"]]
        scores = [float(v) for v in group["judged"]]
        rho = _rho_interval(bids, scores)
        gap = studentized_mean([b - s for b, s in zip(bids, scores, strict=True)],
                               low=-1.0, high=1.0) if len(bids) >= 2 else \
            Interval(math.nan, math.nan, math.nan, "studentized bootstrap", "fewer than 2 pairs")
        rows.append({"agent": name, "n": len(bids), "rho": rho.estimate, "rho_low": rho.low,
                     "rho_high": rho.high, "bid_minus_judged": gap.estimate,
                     "gap_low": gap.low, "gap_high": gap.high,
                     "note": "; ".join(n for n in (rho.note, gap.note) if n)})
    return pd.DataFrame(rows)


@dataclass(frozen=True)
class SelectionSummary:
    """The headline numbers over every judged turn with at least two candidates."""

    turns: int  # judged turns with two or more candidates
    single: int  # judged turns with one candidate (the winner is trivially the best)
    winner_is_best: Interval
    regret: Interval
    note: str


def selection_summary(turns: pd.DataFrame) -> SelectionSummary:
    """Winner-is-best rate (Wilson) and mean regret (studentized bootstrap, cut to [0, 1]) over
    the judged turns that had a choice; one-candidate turns are counted apart."""
    contested = turns[turns["candidates"] >= 2]
    single = int((turns["candidates"] < 2).sum())
    n = len(contested)
    if n == 0:
        nothing = Interval(math.nan, math.nan, math.nan, "", "no judged turn had a choice")
        return SelectionSummary(0, single, nothing, nothing,
                                "no judged turn had two or more candidates: the data cannot "
                                "say whether the floor went to the best one")
    best = int(contested["winner_is_best"].astype(bool).sum())
    rate = wilson(best, n)
    regret = studentized_mean([float(v) for v in contested["regret"]], low=0.0, high=1.0) \
        if n >= 2 else Interval(float(contested["regret"].iloc[0]), math.nan, math.nan,
                                "studentized bootstrap", "one turn: no interval")
    note = "" if n >= 10 else f"only {n} contested turns: wide intervals"
    return SelectionSummary(n, single, rate, regret, note)


def summary_lines(judgement: SelectionJudgement) -> list[str]:
    """What a person reads first: the rate, the regret, the calibration and the calls."""
    turns = selection_turns(judgement.candidates)
    summary = selection_summary(turns)
    lines = []
    if summary.turns:
        rate, regret = summary.winner_is_best, summary.regret
        best = int(round(rate.estimate * summary.turns))
        lines.append(f"winner was the judge's best on {best} of {summary.turns} contested "
                     f"turns: {rate.estimate:.2f} ({rate.low:.2f}-{rate.high:.2f}, "
                     f"{rate.method})")
        span = "" if math.isnan(regret.low) else f" ({regret.low:.3f}-{regret.high:.3f})"
        lines.append(f"mean regret {regret.estimate:.3f}{span} (best judged score minus the "
                     "winner's, 0 to 1)")
    if summary.note:
        lines.append(summary.note)
    overall = calibration(judgement.candidates).iloc[-1]
    if overall["n"] and not math.isnan(overall["rho"]):
        span = "" if math.isnan(overall["rho_low"]) else \
            f" ({overall['rho_low']:.2f} to {overall['rho_high']:.2f})"
        lines.append(f"bids vs judged usefulness: Spearman rho {overall['rho']:.2f}{span} over "
                     f"{int(overall['n'])} candidates")
    elif overall["note"]:
        lines.append(f"calibration: {overall['note']}")
    cost = f"${judgement.cost_usd:.4f}" + (f" + {judgement.unpriced} unpriced"
                                           if judgement.unpriced else "")
    lines.append(f"judge {judgement.judge_model}: {judgement.calls} calls made, "
                 f"{judgement.cached} answers from the cache, {cost}"
                 + (f", {len(judgement.errors)} failed" if judgement.errors else ""))
    return lines
