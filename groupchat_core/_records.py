"""Typed records of a run (messages, bids, turns) and the events observers receive.

Field names follow SPEC §7 exactly: the store, the dashboard and the pandas frames all use them.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

StopReason = Literal["max_loops", "lull", "error", "cancelled"]
BidPath = Literal[
    "tool_call",  # forced respond tool call (the normal path)
    "tool_call:required",  # provider rejected a forced tool_choice; retried with "required"
    "tool_call:auto",  # ... and then with "auto"
    "json_text",  # provider rejected tools; asked for a JSON object in plain text
    "text_fallback",  # tools were sent, but the reply was text (parsed as JSON, or silent)
    "simulation",  # offline sim/<persona> model, run in-process
    "scripted",  # a scripted fake from groupchat_core.testing._scripted
    "none",  # no call was completed (e.g. cancelled, blocked)
]


def utc_now() -> str:
    """ISO-8601 timestamp in UTC, the format of every time in the records."""
    return datetime.now(UTC).isoformat()


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Message(_Record):
    role: str
    content: str
    timestamp: str = Field(default_factory=utc_now)
    score: float | None = None

    def as_dict(self) -> dict[str, Any]:
        """SPEC §6 message dict: role, content, timestamp, plus score on agent replies."""
        out: dict[str, Any] = {
            "role": self.role,
            "content": self.content,
            "timestamp": self.timestamp,
        }
        if self.score is not None:
            out["score"] = self.score
        return out


class Bid(_Record):
    turn: int
    agent: str
    position: int
    score: float = 0.0
    adjusted: float = 0.0
    penalized: bool = False
    eligible: bool = False
    winner: bool = False
    message: str = ""
    latency_ms: float = 0.0
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cost_usd: float | None = None
    path: BidPath = "none"
    error: str | None = None
    calls: int = 0
    cached: bool = False  # answered by the bid cache: no model call (calls == 0)


class Turn(_Record):
    turn: int
    winner: str | None = None
    winning_adjusted: float | None = None
    runner_up_adjusted: float | None = None
    margin: float | None = None
    lull: bool = False
    reason: str = ""
    penalty_changed_winner: bool = False
    failed_bids: int = 0


class RunRecord(_Record):
    run_id: str
    config: dict[str, Any]
    task: str
    messages: list[Message] = Field(default_factory=list)
    bids: list[Bid] = Field(default_factory=list)
    turns: list[Turn] = Field(default_factory=list)
    stop_reason: StopReason | None = None
    error: str | None = None
    started_at: str = Field(default_factory=utc_now)
    ended_at: str | None = None
    total_calls: int = 0
    total_prompt_tokens: int = 0
    total_completion_tokens: int = 0
    total_cost_usd: float = 0.0

    @property
    def cache_hits(self) -> int:
        """Bids answered by the bid cache (no model call was made for them)."""
        return sum(b.cached for b in self.bids)

    def bids_frame(self) -> Any:
        """The bid log as a pandas DataFrame with SPEC §7 column names."""
        return _frame(self.bids, Bid)

    def turns_frame(self) -> Any:
        return _frame(self.turns, Turn)

    def messages_frame(self) -> Any:
        return _frame(self.messages, Message)


def _frame(rows: list[Any], model: type[BaseModel]) -> Any:
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
    | SpeakerSelected
    | LullReached
    | MessagePosted
    | TurnCompleted
    | RunFinished,
    Field(discriminator="kind"),
]
