"""Pre-flight estimate of a sweep: calls, tokens, cost and wall time, with the assumptions
spelled out.

Why: a sweep over real models can cost real money and time; the user sees what it may cost before
it starts, and a budget cap (_scheduler.py) stops it if the guess was wrong. The estimate is an
upper bound (no chat stops early) plus, where earlier runs of the same agents exist, a typical
figure scaled by how long those runs actually were. Prices come from litellm's cost map, imported
only when a sweep uses a non-sim model: sim models send no prompt, so they count zero tokens and
cost nothing, and never load litellm.

Calls per turn follow the strategy (docs/engine.md §16): bidding asks every agent;
bid_then_speak every agent plus the winner's written call; the selector one agent plus the
selector's call; round_robin, random and all_speak one agent.

Wall time: the bids of one turn run concurrently, so a turn takes as long as its slowest agent
(a sim's `sim_latency`, or ASSUMED_CALL_S for a model over the network); `concurrency` cells run
at once, and real-model calls share the process-wide in-flight limit (_limiter.py). On top, the
engine's own work (building each chat, selecting, recording every turn: CELL_S per cell and
BID_S per bid) runs in this one process, so it adds up over every cell whatever the concurrency;
for zero-latency sims it is the whole wall time (bench/estimate_accuracy.py measures both).

Rate limits pace a sweep, they never fail a request (docs/sweeps.md, "Limits pace"): a model
whose deployments all declare rpm (their sum), or with a process-wide set_rate_limit rpm, takes
at most that many calls a minute, so its calls / rpm minutes is a floor on the wall time. A
bid's wait in that queue counts against neither its request's timeout nor its bid deadline.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from ..engine._strategies import message_cap
from ..providers._deployments import group_rpm, parse_deployments
from ..providers._limiter import max_inflight_calls
from ..providers._ratelimit import RATE_LIMITS
from ..providers._routing import in_process_provider
from ..providers._sim import is_sim_model
from ..providers._tokens import count_tokens
from ._spec import Cell, SweepSpec

if TYPE_CHECKING:
    from .._agent import Agent
    from ..store import RunStore

MESSAGE_TOKENS = 80  # assumed size of one posted message in later prompts
TYPICAL_COMPLETION_TOKENS = 60  # a respond call with a short message
_PRIOR_RUNS = 500
ASSUMED_CALL_S = 2.0  # assumed seconds per bid (one model call) for a model over the network
# The engine's own time per cell and per bid, in this process. Measured with
# bench.estimate_accuracy on the three example sweeps (2 cores): 8 ms of CPU per cell and
# 0.24 ms per bid, which the same sweeps took 2.3-3.2 times over in wall time on the machine
# shared with other work; these sit between the two (a busy machine, not an idle one).
CELL_S = 0.012
BID_S = 0.00035
ONE_ASKED = ("round_robin", "random", "all_speak", "selector", "vote")  # one agent asked a turn


class Estimate(BaseModel):
    """What a sweep (or what is left of it) may cost. None means unknown."""

    cells: int
    cells_done: int = 0
    calls_upper: int = 0
    calls_typical: int | None = None
    prompt_tokens_upper: int = 0
    completion_tokens_upper: int = 0
    cost_usd_upper: float | None = 0.0
    cost_usd_typical: float | None = None
    wall_s_upper: float = 0.0  # seconds, if no chat stops early (see the module docstring)
    models: list[str] = Field(default_factory=list)
    sim_models: list[str] = Field(default_factory=list)
    unpriced_models: list[str] = Field(default_factory=list)
    space: str = ""  # the search space: axes and their sizes (SweepSpec.space_text)
    assumptions: list[str] = Field(default_factory=list)

    def wall_time(self) -> str:
        """The estimated wall time as text ('3 min 20 s')."""
        return format_duration(self.wall_s_upper)

    def summary(self) -> str:
        """A few lines for a terminal or a dashboard caption."""
        cost = "unknown" if self.cost_usd_upper is None else f"${self.cost_usd_upper:,.4f}"
        lines = [f"{self.cells:,} cells to run ({self.cells_done:,} already done): up to "
                 f"{self.calls_upper:,} model calls, {self.prompt_tokens_upper:,} prompt + "
                 f"{self.completion_tokens_upper:,} completion tokens, cost up to {cost}, "
                 f"wall time up to {format_duration(self.wall_s_upper)}"]
        if self.space:
            lines.append(f"search space: {self.space}")
        if self.calls_typical is not None:
            typical = "" if self.cost_usd_typical is None else \
                f", about ${self.cost_usd_typical:,.4f}"
            lines.append(f"typical: about {self.calls_typical:,} calls{typical}")
        lines += [f"- {a}" for a in self.assumptions]
        return "\n".join(lines)


def format_duration(seconds: float) -> str:
    """'< 1 s', '42 s', '3 min 20 s', '2 h 05 min': an estimate, so whole seconds at most."""
    if seconds < 1:
        return "< 1 s"  # zero-latency sims: their compute time is not modelled
    total = math.ceil(seconds)
    if total < 60:
        return f"{total} s"
    if total < 3600:
        return f"{total // 60} min {total % 60:02d} s"
    return f"{total // 3600} h {total % 3600 // 60:02d} min"


def call_seconds(agent: Agent) -> float:
    """How long one bid of `agent` takes: its sim_latency for a sim, else ASSUMED_CALL_S."""
    if is_sim_model(agent.model_name):
        try:
            return max(0.0, float(agent.litellm_kwargs.get("sim_latency", 0.0) or 0.0))
        except (TypeError, ValueError):
            return 0.0
    return ASSUMED_CALL_S


class _Tally:
    def __init__(self, concurrency: int) -> None:
        self.calls = 0
        self.prompt: dict[str, int] = defaultdict(int)
        self.completion_upper: dict[str, int] = defaultdict(int)
        self.completion_typical: dict[str, int] = defaultdict(int)
        self.sims: set[str] = set()
        self.concurrency = max(1, concurrency)
        self.cell_seconds: list[float] = []  # each cell's wall time, if it runs alone
        self.network_call_seconds = 0.0  # summed over every real-model call
        self.engine_seconds = 0.0  # the engine's own work over every cell (CELL_S, BID_S)
        self.network_agents = 0  # the most real-model agents in one cell
        self.model_calls: dict[str, float] = defaultdict(float)  # calls per model (upper)

    def add_cell(self, spec: SweepSpec, cell: Cell) -> None:
        chat = spec.chat_spec(cell)
        # vote: one round (message_cap), each agent asked once
        turns = max(message_cap(chat.strategy, chat.max_loops, len(chat.agents)) - 1, 0)
        task = spec.tasks[cell.task_index]
        one = chat.strategy in ONE_ASKED
        # docs/engine.md §16: bid_then_speak's winner and the selector make one more call a
        # turn; any agent may be the one asked or the winner that writes (upper bound).
        extra = turns if chat.strategy in ("bid_then_speak", "selector") else 0
        asked = turns * (1 if one else len(chat.agents))
        self.calls += asked + extra
        writes = 2 if chat.strategy == "bid_then_speak" else 1
        costliest: tuple[str, int, int, int] | None = None  # one-asked: the dearest agent
        for agent in chat.agents:
            model = agent.model_name
            self.model_calls[model] += (asked + extra) / max(1, len(chat.agents))
            if is_sim_model(model):  # a sim sends no prompt and generates no tokens
                self.sims.add(model)
                for tokens in (self.prompt, self.completion_upper, self.completion_typical):
                    tokens.setdefault(model, 0)  # listed among the models, at zero
                continue
            fixed = (count_tokens(model, agent.system_prompt) + count_tokens(model, chat.bid_prompt)
                     + count_tokens(model, task))
            prompt = writes * (turns * fixed + MESSAGE_TOKENS * turns * (turns - 1) // 2)
            usage = (model, prompt, writes * turns * agent.max_tokens,
                     turns * TYPICAL_COMPLETION_TOKENS)
            if one:
                for book in (self.prompt, self.completion_upper, self.completion_typical):
                    book.setdefault(model, 0)
                if costliest is None or prompt + usage[2] > costliest[1] + costliest[2]:
                    costliest = usage
            else:
                self._book(*usage)
            self.network_call_seconds += (turns if not one else turns / len(chat.agents)) \
                * call_seconds(agent)
        if costliest is not None:
            self._book(*costliest)
        wait = turns * max((call_seconds(a) for a in chat.agents), default=0.0)
        work = CELL_S + (asked + extra) * BID_S
        self.engine_seconds += work
        self.cell_seconds.append(wait + work)
        self.network_agents = max(self.network_agents, sum(
            not is_sim_model(a.model_name) for a in chat.agents))

    def _book(self, model: str, prompt: int, completion: int, typical: int) -> None:
        self.prompt[model] += prompt
        self.completion_upper[model] += completion
        self.completion_typical[model] += typical

    def wall_seconds(self, inflight_limit: int,
                     rpm: dict[str, float] | None = None) -> float:
        """Cells in waves of `concurrency`, each as long as its slowest turns and its engine
        work allow; never less than the engine work of every cell (one process does it all),
        nor faster than the in-flight limit lets the real-model calls through, nor than each
        rate-limited model's calls / rpm minutes (`rpm`: model -> requests a minute)."""
        cells = sorted(self.cell_seconds, reverse=True)
        waves = sum(cells[i] for i in range(0, len(cells), self.concurrency))
        limited = self.network_call_seconds / max(1, inflight_limit)
        paced = max((60.0 * self.model_calls[m] / r for m, r in (rpm or {}).items()),
                    default=0.0)
        return max(waves, self.engine_seconds, limited, paced)


def model_rpm(spec: SweepSpec, models: Iterable[str]) -> dict[str, float]:
    """Requests a minute each rate-limited model may take: its deployments' rpm summed (when
    every one declares rpm) and the process-wide set_rate_limit rpm, the lower if both."""
    routed = parse_deployments(spec.deployments) if spec.deployments else {}
    found: dict[str, float] = {}
    for model in models:
        limits = [float(r) for r in (group_rpm(routed.get(model, [])),
                                     RATE_LIMITS.limit(model)[0]) if r is not None]
        if limits:
            found[model] = min(limits)
    return found


def _price(model: str, prompt: int, completion: int) -> float | None:
    """USD from litellm's cost map; 0 for in-process models; None when no price is known."""
    if in_process_provider(model) is not None or is_sim_model(model):
        return 0.0
    from ..providers._litellm import litellm_module

    try:
        prompt_cost, completion_cost = litellm_module().cost_per_token(
            model=model, prompt_tokens=prompt, completion_tokens=completion)
    except Exception:
        return None
    return float(prompt_cost) + float(completion_cost)


def _cost(tally: _Tally, completion: dict[str, int]) -> tuple[float | None, list[str]]:
    total: float | None = 0.0
    unpriced = []
    for model, prompt in tally.prompt.items():
        price = _price(model, prompt, completion[model])
        if price is None:
            unpriced.append(model)
            total = None
        elif total is not None:
            total += price
    return total, unpriced


def typical_fraction(store: RunStore | None, spec: SweepSpec,
                     sweep_id: str | None = None) -> tuple[float, int] | None:
    """Mean share of the possible turns that earlier finished runs of these agents used."""
    if store is None:
        return None
    names = ", ".join(a.agent_name for a in spec.base.agents)
    runs = store.list_runs(sweep_id=sweep_id, status="finished", limit=_PRIOR_RUNS)
    if sweep_id is None or runs.empty:
        runs = store.list_runs(status="finished", limit=_PRIOR_RUNS)
        runs = runs[runs["agents"] == names]
    runs = runs[runs["max_loops"] > 1]
    if runs.empty:
        return None
    shares = (runs["turns"] / (runs["max_loops"] - 1)).clip(upper=1.0)
    return float(shares.mean()), len(runs)


def estimate(spec: SweepSpec, cells: Iterable[Cell] | None = None, *,
             store: RunStore | None = None, sweep_id: str | None = None,
             cells_done: int = 0) -> Estimate:
    """Estimate the cells still to run (all of them by default)."""
    tally = _Tally(spec.concurrency)
    count = 0
    for cell in spec.cells() if cells is None else cells:
        tally.add_cell(spec, cell)
        count += 1
    upper, unpriced = _cost(tally, tally.completion_upper)
    limit = max_inflight_calls()
    rpm = model_rpm(spec, tally.model_calls)
    result = Estimate(cells=count, cells_done=cells_done, calls_upper=tally.calls,
                      prompt_tokens_upper=sum(tally.prompt.values()),
                      completion_tokens_upper=sum(tally.completion_upper.values()),
                      cost_usd_upper=upper, wall_s_upper=tally.wall_seconds(limit, rpm),
                      models=sorted(tally.prompt), sim_models=sorted(tally.sims),
                      unpriced_models=unpriced, space=spec.space_text())
    prior = typical_fraction(store, spec, sweep_id)
    if prior is not None:
        share = prior[0]
        typical, _ = _cost(tally, tally.completion_typical)
        result.calls_typical = round(tally.calls * share)
        result.cost_usd_typical = None if typical is None else typical * share
    result.assumptions = _assumptions(result, prior, spec.concurrency, limit)
    result.assumptions += _rate_notes(tally, rpm)
    return result


def _rate_notes(tally: _Tally, rpm: dict[str, float]) -> list[str]:
    """What the rate limits do to this sweep: the time they take at least."""
    return [f"rate limit: {model} takes at most {per_minute:g} requests a minute, so its "
            f"{tally.model_calls[model]:,.0f} calls take at least "
            f"{format_duration(60.0 * tally.model_calls[model] / per_minute)} (limits pace a "
            "sweep; a wait for them counts against neither a request's timeout nor its bid's "
            "deadline)" for model, per_minute in sorted(rpm.items())]


def _assumptions(result: Estimate, prior: tuple[float, int] | None, concurrency: int,
                 limit: int) -> list[str]:
    notes = [
        "upper bound: every chat runs max_loops - 1 turns (no lull); a turn asks every agent "
        "(bidding; bid_then_speak adds the winner's written call) or one (round_robin, random, "
        "all_speak; the selector adds its own call), one model call per bid",
        "these are calls needed: retries and tool-choice fallbacks add calls; bid-cache hits "
        "make the calls made fewer (not predicted; results report calls_needed and calls_made)",
        f"prompt tokens: system prompt + bid prompt + task + {MESSAGE_TOKENS} tokens per earlier "
        "message (litellm's tokenizer); sims send no prompt: zero tokens",
        f"completion tokens: max_tokens per call (upper), about {TYPICAL_COMPLETION_TOKENS} "
        "per call (typical)",
        f"wall time: a turn lasts as long as its slowest bid (a sim's sim_latency; "
        f"{ASSUMED_CALL_S:g} s per bid assumed for a model over the network), {concurrency} "
        f"cell(s) at once, at most {limit} real-model calls in flight; plus the engine's own "
        f"work in this process, {CELL_S * 1000:g} ms per cell and {BID_S * 1000:g} ms per bid "
        "(measured on 2 cores under load: a faster or idle machine takes less)",
    ]
    sims = [m for m in result.models
            if m in result.sim_models or in_process_provider(m) is not None]
    priced = [m for m in result.models if m not in sims and m not in result.unpriced_models]
    if sims:
        notes.append(f"{', '.join(sims)}: offline simulations, no cost (they send no "
                     "prompt: zero tokens)")
    if priced:
        notes.append(f"prices from litellm's cost map for {', '.join(priced)}")
    if result.unpriced_models:
        notes.append(f"no price known for {', '.join(result.unpriced_models)}: its cost is "
                     "not estimated, and max_usd cannot see it (use max_calls)")
    if prior is None:
        notes.append("no earlier finished runs of these agents: no typical estimate")
    else:
        notes.append(f"typical: earlier finished runs of these agents ({prior[1]}) used "
                     f"{prior[0]:.0%} of their possible turns")
    return notes

