"""Pre-flight estimate of a sweep: calls, tokens, cost and wall time, with the assumptions
spelled out.

Why: a sweep over real models can cost real money and time; the user sees what it may cost before
it starts, and a budget cap (_scheduler.py) stops it if the guess was wrong. The estimate is an
upper bound (no chat stops early) plus, where earlier runs of the same agents exist, a typical
figure scaled by how long those runs actually were. Prices come from litellm's cost map, imported
only when a sweep uses a non-sim model: sim models send no prompt, so they count zero tokens and
cost nothing, and never load litellm.

Wall time: the bids of one turn run concurrently, so a turn takes as long as its slowest agent
(a sim's `sim_latency`, or ASSUMED_CALL_S for a model over the network); `concurrency` cells run
at once, and real-model calls share the process-wide in-flight limit (_limiter.py).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from ..providers._limiter import max_inflight_calls
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
        self.network_agents = 0  # the most real-model agents in one cell

    def add_cell(self, spec: SweepSpec, cell: Cell) -> None:
        chat = spec.chat_spec(cell)
        turns = max(chat.max_loops - 1, 0)
        task = spec.tasks[cell.task_index]
        # docs/engine.md §16: bid_then_speak's winner and the selector make one more call a
        # turn; any agent may be the winner that writes, so its tokens may double (upper).
        self.calls += turns if chat.strategy in ("bid_then_speak", "selector") else 0
        writes = 2 if chat.strategy == "bid_then_speak" else 1
        for agent in chat.agents:
            model = agent.model_name
            self.calls += turns
            if is_sim_model(model):  # a sim sends no prompt and generates no tokens
                self.sims.add(model)
                for tokens in (self.prompt, self.completion_upper, self.completion_typical):
                    tokens.setdefault(model, 0)  # listed among the models, at zero
                continue
            fixed = (count_tokens(model, agent.system_prompt) + count_tokens(model, chat.bid_prompt)
                     + count_tokens(model, task))
            self.prompt[model] += writes * (turns * fixed + MESSAGE_TOKENS * turns * (turns - 1)
                                             // 2)
            self.completion_upper[model] += writes * turns * agent.max_tokens
            self.completion_typical[model] += turns * TYPICAL_COMPLETION_TOKENS
            self.network_call_seconds += turns * call_seconds(agent)
        self.cell_seconds.append(turns * max((call_seconds(a) for a in chat.agents),
                                             default=0.0))
        self.network_agents = max(self.network_agents, sum(
            not is_sim_model(a.model_name) for a in chat.agents))

    def wall_seconds(self, inflight_limit: int) -> float:
        """Cells in waves of `concurrency`, each as long as its slowest turn allows; no faster
        than the in-flight limit lets the real-model calls through."""
        cells = sorted(self.cell_seconds, reverse=True)
        waves = sum(cells[i] for i in range(0, len(cells), self.concurrency))
        limited = self.network_call_seconds / max(1, inflight_limit)
        return max(waves, limited)


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
    result = Estimate(cells=count, cells_done=cells_done, calls_upper=tally.calls,
                      prompt_tokens_upper=sum(tally.prompt.values()),
                      completion_tokens_upper=sum(tally.completion_upper.values()),
                      cost_usd_upper=upper, wall_s_upper=tally.wall_seconds(limit),
                      models=sorted(tally.prompt), sim_models=sorted(tally.sims),
                      unpriced_models=unpriced, space=spec.space_text())
    prior = typical_fraction(store, spec, sweep_id)
    if prior is not None:
        share = prior[0]
        typical, _ = _cost(tally, tally.completion_typical)
        result.calls_typical = round(tally.calls * share)
        result.cost_usd_typical = None if typical is None else typical * share
    result.assumptions = _assumptions(result, prior, spec.concurrency, limit)
    return result


def _assumptions(result: Estimate, prior: tuple[float, int] | None, concurrency: int,
                 limit: int) -> list[str]:
    notes = [
        "upper bound: every chat runs max_loops - 1 turns (no lull) and every agent bids on "
        "every turn, one model call per bid",
        "these are calls needed: retries and tool-choice fallbacks add calls; bid-cache hits "
        "make the calls made fewer (not predicted; results report calls_needed and calls_made)",
        f"prompt tokens: system prompt + bid prompt + task + {MESSAGE_TOKENS} tokens per earlier "
        "message (litellm's tokenizer); sims send no prompt: zero tokens",
        f"completion tokens: max_tokens per call (upper), about {TYPICAL_COMPLETION_TOKENS} "
        "per call (typical)",
        f"wall time: a turn lasts as long as its slowest bid (a sim's sim_latency; "
        f"{ASSUMED_CALL_S:g} s per bid assumed for a model over the network), {concurrency} "
        f"cell(s) at once, at most {limit} real-model calls in flight",
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

