"""Typed records of a run (messages, bids, turns) and the events observers receive.

Field names are the contract of docs/engine.md §9: the store, the bundles, the exports and the
pandas frames all use them. Every field of Message, Bid, Turn and RunRecord carries a
description, so an exported JSON schema of a run explains itself.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated, Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from ._statuses import RunStatus as RunStatus  # declared once, there

if TYPE_CHECKING:
    import pandas as pd

StopReason = Literal["max_loops", "lull", "error", "cancelled"]
BidPath = Literal[
    "tool_call",  # forced respond tool call (the normal path)
    "tool_call:required",  # provider rejected a forced tool_choice; retried with "required"
    "tool_call:auto",  # ... and then with "auto"
    "json_text",  # provider rejected tools; asked for a JSON object in plain text
    "json_schema",  # opt-in constrained decoding: no tools, the respond schema as response_format
    "tool_call:json",  # json mode (no tools sent), but the reply carried a respond call anyway
    "text_fallback",  # tools were sent, but the reply was text (parsed as JSON, or silent)
    "tool_call:stream",  # streamed (stream_bids): the forced respond call, read as it arrived
    "tool_call:required:stream",  # ... streamed after the forced tool_choice was rejected
    "tool_call:auto:stream",  # ... streamed with tool_choice "auto"
    "tool_call:unstreamed",  # streaming asked for, refused by the model: a non-streamed bid
    "tool_call:required:unstreamed",
    "tool_call:auto:unstreamed",
    "text_fallback:unstreamed",
    "simulation",  # offline sim/<persona> model, run in-process
    "scripted",  # a scripted fake from groupchat_core.testing._scripted
    "human",  # a person's bid (issue 22): no model call
    "none",  # no call was completed (e.g. cancelled, blocked)
]
TurnReason = Literal[
    "highest_bid",  # a clear winner
    "tie_by_order",  # a later eligible bid had the same adjusted score: list order decided
    "penalty_changed_winner",  # on raw scores a different bid would have won
    "lull",  # no eligible bid, and at least one bid was read
    "all_failed",  # every bid's call failed: the run stops with "error"
    "no_readable_bid",  # no bid could be read (replies unreadable, the rest failed): "error"
    # Strategies other than bidding (docs/engine.md §16): the rule named the one agent asked.
    "round_robin",  # the next agent in list order
    "random",  # an agent drawn with the chat's seed and the turn
    "selector",  # the agent a selector model chose from the roster and the transcript
    "all_speak",  # every agent speaks each round, in list order
    "human_pick",  # a person chose another speaker than the rule among the top bids
]
BidOutcome = Literal[
    "read",  # a reply came back and its score was read (a clamped score still counts)
    "cached",  # read, from the bid cache: no model call was made
    "unreadable",  # a reply came back, but no score could be read from it
    "failed",  # the call produced no reply (an exception, a timeout, a rejection)
]
"""What became of a bid: set once by the turn loop, stored with the bid, read by selection, the
analysis, the charts, the CLI and the exports. A new kind of participant (a human, a scripted
voice) adds a value here, and every reader that asks `bid.read` / `bid.failed` keeps working."""

READ_OUTCOMES: frozenset[str] = frozenset({"read", "cached"})
"""Outcomes of a bid whose score was read: a turn with one of these is a lull, not an error."""

UNREADABLE = "unreadable: "
"""Prefix of the error of a bid whose reply could not be read: the note for people; the field
that says so is Bid.outcome."""


def utc_now() -> str:
    """ISO-8601 timestamp in UTC, the format of every time in the records."""
    return datetime.now(UTC).isoformat()


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Message(_Record):
    """One posted message: the task first, then each turn's winning reply (docs/engine.md §9)."""

    role: str = Field(
        description='Who posted it: "User" for the task, else the speaking agent\'s agent_name.')
    content: str = Field(description="The posted text (the task, or the winning bid's message).")
    timestamp: str = Field(
        default_factory=utc_now,
        description="When the message was posted, ISO-8601 in UTC "
        "(e.g. 2026-01-01T12:00:00+00:00).")
    score: float | None = Field(
        default=None,
        description="The winning bid's raw (unpenalized) score in [0, 1]; null for the task.")

    def as_dict(self) -> dict[str, Any]:
        """Message dict of docs/engine.md §8: role, content, timestamp, plus score on replies."""
        out: dict[str, Any] = {
            "role": self.role,
            "content": self.content,
            "timestamp": self.timestamp,
        }
        if self.score is not None:
            out["score"] = self.score
        return out


class Bid(_Record):
    """One agent's bid on one turn, whether or not it won (docs/engine.md §5, §6, §9)."""

    turn: int = Field(description="The turn the bid was placed on, from 1.")
    agent: str = Field(description="The bidding agent's agent_name.")
    position: int = Field(
        description="The agent's index in the chat's agent list, from 0 (it breaks ties).")
    score: float = Field(
        default=0.0,
        description="The parsed score, clamped into [0, 1]; 0.0 when the call failed or the "
        "score was invalid.")
    adjusted: float = Field(
        default=0.0,
        description="The score used for selection: score - recency_penalty when penalized, "
        "else score (not clamped).")
    penalized: bool = Field(
        default=False,
        description="Whether the agent was among the recent speakers (the authors of the last "
        "recency_window posted agent messages), so the recency penalty applied.")
    eligible: bool = Field(
        default=False,
        description="Whether the bid could win: non-empty message, the call did not fail, and "
        "adjusted > threshold.")
    winner: bool = Field(
        default=False, description="Whether this bid won the turn and its message was posted.")
    message: str = Field(
        default="",
        description="The message the agent would have posted (stripped); empty means the agent "
        "stayed silent. Only the winner's message enters the conversation.")
    latency_ms: float = Field(
        default=0.0,
        description="Wall time of the whole bid in milliseconds: waiting for the in-flight "
        "limit, retries and fallbacks included.")
    prompt_tokens: int | None = Field(
        default=None,
        description="Prompt tokens as the provider reported them; null when not reported "
        "(simulations, cache hits).")
    completion_tokens: int | None = Field(
        default=None,
        description="Completion tokens as the provider reported them; null when not reported.")
    cost_usd: float | None = Field(
        default=None,
        description="Cost of the bid in US dollars from litellm's prices; null when unknown "
        "(not 0); 0.0 for a cache hit of a priced reply.")
    path: BidPath = Field(
        default="none",
        description="How the bid was obtained: tool_call (forced respond call), "
        "tool_call:required / tool_call:auto (after the provider rejected a forced "
        "tool_choice), json_text (tools rejected; JSON asked for in plain text), tool_call:json "
        "(JSON asked for, but the reply carried a respond call, which was read), text_fallback "
        "(tools sent, text reply), simulation (sim/ model), scripted (test fake), none (no "
        "reply: the call failed). With stream_bids, a streamed tool path ends in :stream, and "
        "one ends in :unstreamed when the model refused to stream (a 400 on stream=true, or a "
        "stream without a respond call) and the bid was asked for again without streaming.")
    error: str | None = Field(
        default=None,
        description="Null, or what went wrong: the failed call's exception type and text (at "
        "most 2,000 characters), or why the reply did not parse. A reply no score could be read "
        'from is "unreadable: ..." (the bid counts as score 0.0 and cannot make a lull); other '
        "notes (a message cut to 20,000 characters, an invalid message type) leave the bid "
        "read.")
    calls: int = Field(
        default=0,
        description="Model requests made for this bid, retries and rejected fallback requests "
        "included; 1 for an in-process model; 0 for a cache hit.")
    cached: bool = Field(
        default=False,
        description="Whether the bid cache answered it: no model call was made (calls == 0). "
        "For bid_then_speak's row, whether its score-only call was answered from the cache.")
    cached_calls: int = Field(
        default=0,
        description="Calls of this bid the bid cache answered (no request sent): 1 for a cache "
        "hit; bid_then_speak's row adds its written call's. calls + cached_calls is what the "
        "bid needs on a cold cache. Bids recorded before it was stored: 1 when cached.")
    deployment: str | None = Field(
        default=None,
        description="Which deployment of the model answered (its name in the spec's "
        "deployments, load-balanced by litellm's Router); null for a model with one endpoint, "
        "an in-process model, a cache hit or a failed call.")
    outcome: BidOutcome = Field(
        default="read",
        description="What became of the bid: read (its score was read from a reply), cached "
        "(read, from the bid cache), unreadable (a reply came back, no score could be read: "
        "the bid counts as score 0.0 and cannot make a lull), failed (the call produced no "
        "reply). Set by the turn loop; the store's v10 upgrade and the import of a version 1 "
        "bundle fill it in for bids recorded before it existed.")
    kind: Literal["agent", "human"] = Field(
        default="agent",
        description="Who bid: agent (a model) or human (a person in the room, path human, "
        "calls 0). Both go through the same selection rule.")

    @property
    def read(self) -> bool:
        """Whether a score was read from a reply (from the model or the bid cache)."""
        return self.outcome in READ_OUTCOMES

    @property
    def failed(self) -> bool:
        """Whether the call produced no reply at all."""
        return self.outcome == "failed"


class Turn(_Record):
    """The outcome of one turn and the reasons behind it (docs/engine.md §6, §9)."""

    turn: int = Field(description="The turn number, from 1.")
    winner: str | None = Field(
        default=None, description="The agent_name of the speaker; null when nobody won.")
    winning_adjusted: float | None = Field(
        default=None, description="The winner's adjusted score; null when nobody won.")
    runner_up_adjusted: float | None = Field(
        default=None,
        description="The highest adjusted score among the other bids with a message from a "
        "completed call, eligible or not; null when there is none.")
    margin: float | None = Field(
        default=None,
        description="winning_adjusted - runner_up_adjusted; null when either is null.")
    lull: bool = Field(
        default=False,
        description='True exactly when reason is "lull": no bid could take the floor.')
    reason: TurnReason | Literal[""] = Field(
        default="",
        description="Why the turn ended as it did: highest_bid, tie_by_order (list order broke a "
        "tie), penalty_changed_winner (on raw scores another bid would have won), lull (no "
        "eligible bid, at least one bid read), all_failed (every call failed), no_readable_bid "
        "(no bid could be read: every reply unreadable or failed); the last two stop the run "
        'with error. "" only on hand-built turns.')
    penalty_changed_winner: bool = Field(
        default=False,
        description="Whether the recency penalty changed who spoke (true even when the reason "
        "is tie_by_order); false on a turn without a winner.")
    failed_bids: int = Field(
        default=0,
        description='How many bids of the turn have outcome "failed" (the call produced no '
        'reply). Unreadable replies are not counted here.')
    rule_winner: str | None = Field(
        default=None,
        description="Human as selector: who the bidding rule picked (null: a lull, or no "
        "person picked this turn).")
    human_pick: str | None = Field(
        default=None,
        description="Human as selector: who the person picked among the top bids (the rule's "
        "pick when they accepted it); null when nobody picked (the rule's choice stood). When "
        "it differs from rule_winner the reason is human_pick.")
    selector_reason: str | None = Field(
        default=None,
        description="Strategy selector: the selector model's reply (the speaker it named and "
        "why), masked and cut to 2,000 characters, or its error when the call failed (the turn "
        "then fell back to round_robin); null for other strategies.")


ScorerKind = Literal["exact", "numeric", "regex", "choice", "judge"]
AnswerFrom = Literal["final", "vote"]


class JudgeCall(_Record):
    """The LLM judge's one call for a run's outcome: what it was asked and what it cost."""

    model: str = Field(description="The litellm model that judged.")
    prompt: str = Field(description="The whole judge prompt sent (rubric, task, answer).")
    reply: str = Field(default="", description="The judge's raw reply (scrubbed, capped).")
    calls: int = Field(default=0, ge=0, description="HTTP requests made (retries included).")
    prompt_tokens: int | None = Field(default=None, ge=0,
                                      description="As the provider reported.")
    completion_tokens: int | None = Field(default=None, ge=0,
                                          description="As the provider reported.")
    cost_usd: float | None = Field(
        default=None, ge=0.0,
        description="litellm's price for the call; null when it cannot price it.")
    error: str | None = Field(default=None, description="Why the call failed; else null.")


class Outcome(_Record):
    """Did the group get it right: a scored task's answer, taken and scored after the run
    (docs/outcomes.md)."""

    task_id: str = Field(description="The task's id in its task set.")
    scorer: ScorerKind = Field(description="How the answer was scored.")
    answer_from: AnswerFrom = Field(
        description="final: the last posted message; vote: majority over each agent's last "
        "stated answer (ties go to the earliest agent in list order, as Du et al.).")
    expected: str | None = Field(
        description="The expected answer (a regex's pattern; null for a judge with a rubric).")
    answer: str | None = Field(description="The group's extracted answer; null when none.")
    correct: bool | None = Field(
        description="Whether the answer was right (a judge: score >= its pass mark); null when "
        "the judge could not score it.")
    score: float | None = Field(
        ge=0.0, le=1.0,
        description="1.0 or 0.0 for the rule scorers; the judge's score in [0, 1]; null when "
        "the judge failed.")
    votes: dict[str, str | None] = Field(
        default_factory=dict,
        description="For vote: each agent's last stated answer (null: it stated none).")
    judge: JudgeCall | None = Field(default=None, description="The judge's call, if any.")


class RunRecord(_Record):
    """Everything one run produced: the typed record of docs/engine.md §9."""

    run_id: str = Field(description="The run's id (a uuid4 as hex for engine runs).")
    config: dict[str, Any] = Field(
        description="The chat configuration the run used (ChatConfig fields: threshold, "
        "recency_penalty, recency_window, max_loops, bid_prompt, ...; no agents).")
    task: str = Field(description="The task, posted as the first message.")
    messages: list[Message] = Field(
        default_factory=list, description="The posted messages in order, the task first.")
    bids: list[Bid] = Field(
        default_factory=list,
        description="Every bid of every completed turn: one per agent per turn, in turn then "
        "agent-list order.")
    turns: list[Turn] = Field(
        default_factory=list, description="One row per completed turn, in order.")
    stop_reason: StopReason | None = Field(
        default=None,
        description="Why the run stopped: max_loops (the message cap, task included, was "
        "reached), lull (a turn nobody won, at least one bid read), error (a turn where no bid "
        "could be read: every call failed or every reply was unreadable), cancelled; null while "
        "running.")
    error: str | None = Field(
        default=None,
        description='For stop_reason error: "no agent produced a readable bid on turn N: " then '
        '"agent: reason" for each bid of that turn, joined by "; " (each reason at most 300 '
        "characters); else null.")
    started_at: str = Field(
        default_factory=utc_now, description="When the run started, ISO-8601 in UTC.")
    ended_at: str | None = Field(
        default=None, description="When the run stopped, ISO-8601 in UTC; null while running.")
    total_calls: int = Field(
        default=0, description="Model requests over all bids (the sum of Bid.calls).")
    total_prompt_tokens: int = Field(
        default=0, description="Prompt tokens over all bids (unreported counts add 0).")
    total_completion_tokens: int = Field(
        default=0, description="Completion tokens over all bids (unreported counts add 0).")
    total_cost_usd: float | None = Field(
        default=0.0,
        description="Sum of the known bid costs in US dollars; null (unknown, not free) when "
        "some bid made a model call that could not be priced and none could; when some could, "
        "a partial sum that unpriced_bids flags.")
    unpriced_bids: int = Field(
        default=0,
        description="Bids that made a model call litellm could not price (e.g. a local model "
        "missing from its price map); 0 means total_cost_usd is complete.")
    outcome: Outcome | None = Field(
        default=None, description="For a task with an answer (groupchat_core.outcomes.Task): "
        "the extracted answer and whether it was right; null for a plain task.")

    @property
    def cost_complete(self) -> bool:
        """Whether total_cost_usd covers every bid (no call went unpriced)."""
        return self.unpriced_bids == 0

    @property
    def cache_hits(self) -> int:
        """Bids answered by the bid cache (no model call was made for them)."""
        return sum(b.cached for b in self.bids)

    @property
    def calls_needed(self) -> int:
        """Model calls the run needs on a cold bid cache: calls made plus calls the cache
        answered (bid_then_speak's written call counted even when cached)."""
        return self.total_calls + sum(b.cached_calls for b in self.bids)

    def bids_frame(self) -> pd.DataFrame:
        """The bid log as a pandas DataFrame; columns are the Bid fields (docs/engine.md §9)."""
        return _frame(self.bids, Bid)

    def turns_frame(self) -> pd.DataFrame:
        return _frame(self.turns, Turn)

    def messages_frame(self) -> pd.DataFrame:
        return _frame(self.messages, Message)

    def figures(self) -> dict[str, Any]:
        """The key Analysis figures (plotly) by name: bids_heatmap, bid_lines,
        winner_timeline, transitions, turn_shares. Needs plotly (the `[dashboard]` extra)."""
        from ._display import record_figures

        return record_figures(self)

    def _repr_html_(self) -> str:
        """A compact summary for Jupyter; every text is escaped (model output is untrusted)."""
        from ._display import SIM_MARK, shares_text, summary_html

        spoke: dict[str, int] = {}
        for turn in self.turns:
            if turn.winner is not None:
                spoke[turn.winner] = spoke.get(turn.winner, 0) + 1
        tokens = f"{self.total_prompt_tokens:,} in, {self.total_completion_tokens:,} out"
        rows = [("task", self.task), ("stop reason", self.stop_reason or "running"),
                ("messages", f"{max(len(self.messages) - 1, 0)} posted after the task"),
                ("turns", str(len(self.turns))), ("speakers", shares_text(spoke)),
                ("totals", f"{self.total_calls} calls, {tokens} tokens, cost "
                 + format_cost(self.total_cost_usd, self.unpriced_bids)),
                ("run", self.run_id)]
        if self.error:
            rows.insert(2, ("error", self.error))
        simulated = any(b.path == "simulation" for b in self.bids)
        return summary_html("GroupChat run", rows, SIM_MARK if simulated else None)


IN_PROCESS_PATHS = ("simulation", "scripted", "none")  # paths of bids no provider billed


def unpriced(bid: Bid) -> bool:
    """A bid that reached a provider but has no price: a completed call (not an in-process
    model, not a cache hit, not a failed call, which providers do not bill) without a cost.
    The store keeps the count per run (runs.unpriced_bids, its SQL twin: store/_writer.py)."""
    return (bid.cost_usd is None and not bid.cached and bid.calls > 0
            and bid.path not in IN_PROCESS_PATHS)


def cost_totals(bids: list[Bid]) -> tuple[float | None, int]:
    """(total_cost_usd, unpriced_bids) over a run's bids; the total is None when calls were made
    and none of them could be priced."""
    missing = sum(unpriced(b) for b in bids)
    known = [b.cost_usd for b in bids if b.cost_usd is not None]
    if missing and not known:
        return None, missing
    return sum(known, 0.0), missing


def format_cost(total: float | None, unpriced_bids: int = 0) -> str:
    """A run's cost for people: "$0.0012", "unknown", or a partial sum said to be one."""
    if total is None:
        return "unknown"
    text = f"${total:.4f}"
    if unpriced_bids:
        text += f" + unknown ({unpriced_bids} unpriced bid{'s' if unpriced_bids != 1 else ''})"
    return text


def _frame(rows: list[Any], model: type[BaseModel]) -> pd.DataFrame:
    import pandas as pd  # lazy: pandas is not needed to run a chat

    columns = list(model.model_fields)
    return pd.DataFrame([row.model_dump() for row in rows], columns=columns)


# --- events -------------------------------------------------------------------------------


class RunStarted(_Record):
    """A run began: its id, task, agents in order and the ChatConfig as a dict."""

    kind: Literal["run_started"] = "run_started"
    run_id: str
    task: str
    agents: list[str]
    config: dict[str, Any]
    started_at: str = Field(default_factory=utc_now)


class TurnStarted(_Record):
    """A turn began; its bids follow as BidReceived events."""

    kind: Literal["turn_started"] = "turn_started"
    run_id: str
    turn: int


class BidReceived(_Record):
    """One bid as it arrives; `winner` is not known yet (always False here)."""

    kind: Literal["bid"] = "bid"
    run_id: str
    bid: Bid


class BidDelta(_Record):
    """A bid forming (stream_bids): the score once its number is complete, the message so far.

    Sent only to observers whose `wants` names "bid_delta"; the bid itself follows as
    BidReceived, which is the truth (a delta is a preview of untrusted model text)."""

    kind: Literal["bid_delta"] = "bid_delta"
    run_id: str
    turn: int
    agent: str
    score: float | None = None
    message: str = ""


class SpeakerSelected(_Record):
    """A turn has a winner (`turn.winner`); its message is posted next."""

    kind: Literal["speaker_selected"] = "speaker_selected"
    run_id: str
    turn: Turn


class LullReached(_Record):
    """A turn nobody won (no failure): the run stops with stop_reason "lull"."""

    kind: Literal["lull"] = "lull"
    run_id: str
    turn: Turn


class MessagePosted(_Record):
    """A message joined the transcript (the task first, as turn 0)."""

    kind: Literal["message_posted"] = "message_posted"
    run_id: str
    turn: int  # 0 for the task
    message: Message


class TurnCompleted(_Record):
    """Everything a turn produced, for writers that persist a turn in one transaction."""

    kind: Literal["turn_completed"] = "turn_completed"
    run_id: str
    turn: Turn
    bids: list[Bid]
    message: Message | None


class RunFinished(_Record):
    """The run ended; `record` is the complete RunRecord."""

    kind: Literal["run_finished"] = "run_finished"
    run_id: str
    record: RunRecord


Event = Annotated[
    RunStarted
    | TurnStarted
    | BidReceived
    | BidDelta
    | SpeakerSelected
    | LullReached
    | MessagePosted
    | TurnCompleted
    | RunFinished,
    Field(discriminator="kind"),
]


# --- observers ----------------------------------------------------------------------------


class Observer(Protocol):
    """What watches a run: anything called with each event (a plain function will do).

    An observer may also declare, as attributes (a class's are the usual place):

    - `wants: frozenset[str]`: the event kinds it takes (`Event.kind` values); the others are
      not sent to it. Without it, it gets every kind but "bid_delta", which is opt-in: only an
      observer whose `wants` names it gets deltas, and bids stream (stream_bids) only while one
      does.
    - `thread_safe: bool`: True to be called on the engine's loop thread directly, instead of
      on the thread that drives the run; it must then be quick (the store's recorder, the
      dashboard's live view).

    `observer_wants` and `observer_thread_safe` are the one place they are read."""

    def __call__(self, event: Event, /) -> None: ...


def observer_wants(observer: Observer) -> frozenset[str] | None:
    """The event kinds the observer declared it wants, or None (every kind but bid_delta)."""
    wants = getattr(observer, "wants", None)
    return None if wants is None else frozenset(wants)


def observer_thread_safe(observer: Observer) -> bool:
    """Whether the observer may be called on the engine's loop thread (see Observer)."""
    return bool(getattr(observer, "thread_safe", False))


def observer_takes(observer: Observer, kind: str) -> bool:
    """Whether events of this kind go to the observer (bid_delta only when it asked)."""
    wants = observer_wants(observer)
    return kind in wants if wants is not None else kind != "bid_delta"
