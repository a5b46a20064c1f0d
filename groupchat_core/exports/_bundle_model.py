"""The run bundle's shape: its format and version, and the strict models every field of an
imported file is validated against (unknown fields, types, sizes, numbers the store can hold).

Why apart from _bundles.py: the models are the file format; exporting, importing and the
engine-rule checks (_bundle_checks.py) all read them.
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from .._records import UNREADABLE, Bid, BidOutcome, Message, Outcome, StopReason, Turn
from .._safeload import MAX_STORED_INT
from .._statuses import RunStatus

BUNDLE_FORMAT = "groupchat-run"
BUNDLE_VERSION = 4
"""2: bids carry `outcome` (read / cached / unreadable / failed). Version 1 bundles, written
before it, import all the same: `Bundle` fills each bid's in by `engine_outcome`.
3: `people` (issue 22): the seats of the run's people in the roster (the spec lists agents
only), bids carry `kind`, turns `rule_winner` / `human_pick`. Version 1 and 2 bundles have no
people: every bid is an agent's, no turn was picked by a person.
4: bids carry `cached_calls` (calls the bid cache answered; bid_then_speak's row may hold two)
and turns `selector_reason` (the selector model's reply). Older bundles read cached_calls as 1
for a cached bid, 0 otherwise (filled in by `Bundle`), and have no selector reason."""
READABLE_BUNDLE_VERSIONS = frozenset({1, 2, 3, BUNDLE_VERSION})
MAX_BUNDLE_BYTES = 64 * 1024 * 1024
RUN_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"


def engine_outcome(error: str | None, path: str, cached: bool) -> BidOutcome:
    """The outcome the turn loop gives a bid with this error, path and cached (docs/engine.md
    §9): failed when the call raised (error, no reply path), unreadable when no score could be
    read, else read or cached. Why here: a version 1 bundle has no outcome and gets this one,
    and the consistency checks refuse a bundle whose recorded outcome contradicts it (the
    store's v10 upgrade has its SQL twin, frozen like every migration)."""
    if error and path == "none":
        return "failed"
    if error and error.startswith(UNREADABLE):
        return "unreadable"
    return "cached" if cached else "read"


_STORED: dict[str, Any] = {"ge": -MAX_STORED_INT, "le": MAX_STORED_INT}  # an INTEGER column
_COUNT: dict[str, Any] = {"ge": 0, "le": MAX_STORED_INT}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", hide_input_in_errors=True)


def _whole(value: Any, info: Any) -> Any:
    """An integer field given as a float (1e30 in JSON): our bound, not pydantic's "unable to
    parse input string"; 3.0 still reads as 3."""
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()
                                         and abs(value) <= MAX_STORED_INT):
        raise ValueError(f"{info.field_name} must be an integer from 0 to {MAX_STORED_INT:,} "
                         f"(what the store holds), got {value!r}")
    return value


def _iso(value: str | None) -> str | None:
    if value is not None:
        try:
            datetime.fromisoformat(value)
        except ValueError:
            raise ValueError(f"{value!r} is not an ISO-8601 time") from None
    return value


class BundleRun(_Strict):
    run_id: str = Field(pattern=RUN_ID_PATTERN)
    name: str
    task: str = Field(min_length=1)
    status: RunStatus
    stop_reason: StopReason | None = None
    error: str | None = None
    started_at: str
    ended_at: str | None = None
    total_calls: int = Field(default=0, **_COUNT)
    total_prompt_tokens: int = Field(default=0, **_COUNT)
    total_completion_tokens: int = Field(default=0, **_COUNT)
    total_cost_usd: float = Field(default=0.0, ge=0)
    tags: list[str] = Field(default_factory=list)
    notes: str = ""
    # Who the run was recorded for, as information: never imported (the importer becomes
    # the owner, RunStore.import_run), so a file cannot make a run look like anyone's.
    owner: str | None = Field(default=None, max_length=320)
    owner_name: str | None = Field(default=None, max_length=320)

    _times = field_validator("started_at", "ended_at")(_iso)
    _ints = field_validator("total_calls", "total_prompt_tokens", "total_completion_tokens",
                            mode="before")(_whole)


class BundleMessage(Message):
    turn: int = Field(ge=0, le=MAX_STORED_INT)

    _time = field_validator("timestamp")(_iso)


class BundleBid(Bid):
    """A bid as a bundle carries it: numbers bounded so the store can hold every one (a total
    of 1e30 is this one error, not an OverflowError from the database); the meaning of each
    value is checked against the engine's rules by _check_consistent."""

    turn: int = Field(**_STORED)
    position: int = Field(**_STORED)
    latency_ms: float = Field(default=0.0, ge=0)
    prompt_tokens: int | None = Field(default=None, **_COUNT)
    completion_tokens: int | None = Field(default=None, **_COUNT)
    cost_usd: float | None = Field(default=None, ge=0)
    calls: int = Field(default=0, **_COUNT)
    cached_calls: int = Field(**_COUNT)  # required: Bundle fills it in for versions 1-3
    outcome: BidOutcome  # required: Bundle fills it in for version 1

    _ints = field_validator("turn", "position", "prompt_tokens", "completion_tokens", "calls",
                            "cached_calls", mode="before")(_whole)


class BundleTurn(Turn):
    """A turn row as a bundle carries it (integers the store can hold)."""

    turn: int = Field(**_STORED)
    failed_bids: int = Field(default=0, **_COUNT)

    _ints = field_validator("turn", "failed_bids", mode="before")(_whole)


class BundlePerson(_Strict):
    """A person's seat: their name and position in the roster (list order, agents around
    them). Nothing else about them is kept: who they signed in as is not the run's data."""

    name: str = Field(min_length=1, max_length=200)
    position: int = Field(**_STORED)

    _ints = field_validator("position", mode="before")(_whole)


class WrittenBy(_Strict):
    """Which code wrote a bundle, so a result can be traced to it (bundles written before
    0.2.0 have no `written_by`; they import all the same)."""

    app_version: str = Field(min_length=1, max_length=64)
    litellm_version: str = Field(min_length=1, max_length=64)
    store_schema_version: int = Field(ge=1, le=MAX_STORED_INT)


def written_by() -> dict[str, Any]:
    """This code's `written_by` block: app, litellm and store schema versions."""
    from .._version import app_version, litellm_version
    from ..store import SCHEMA_VERSION

    return {"app_version": app_version(), "litellm_version": litellm_version(),
            "store_schema_version": SCHEMA_VERSION}


class Bundle(_Strict):
    format: Literal["groupchat-run"]
    schema_version: int
    exported_at: str | None = None
    written_by: WrittenBy | None = None
    run: BundleRun
    spec: dict[str, Any]
    messages: list[BundleMessage] = Field(min_length=1)
    bids: list[BundleBid] = Field(default_factory=list)
    turns: list[BundleTurn] = Field(default_factory=list)
    people: list[BundlePerson] = Field(default_factory=list)  # v3: the people's seats
    outcome: Outcome | None = None  # a scored task's outcome (docs/outcomes.md), if any

    @field_validator("schema_version")
    @classmethod
    def _version(cls, v: int) -> int:
        if v not in READABLE_BUNDLE_VERSIONS:
            raise ValueError(f"bundle schema_version {v} is not supported (expected one of "
                             f"{sorted(READABLE_BUNDLE_VERSIONS)})")
        return v

    @model_validator(mode="before")
    @classmethod
    def _upgrade(cls, data: Any) -> Any:
        """An older bundle's bids as a version 4 bundle holds them: outcome (version 1) and
        cached_calls (versions 1-3) filled in as the store's v10 and v12 upgrades do. A newer
        bundle missing either is refused by BundleBid, not guessed."""
        version = data.get("schema_version") if isinstance(data, dict) else None
        if not (isinstance(version, int) and version < BUNDLE_VERSION
                and isinstance(data.get("bids"), list)):
            return data
        return {**data, "bids": [_upgraded_bid(b, version) if isinstance(b, dict) else b
                                 for b in data["bids"]]}


def _upgraded_bid(bid: dict[str, Any], version: int) -> dict[str, Any]:
    filled: dict[str, Any] = {"cached_calls": int(bool(bid.get("cached")))}
    if version == 1:
        filled["outcome"] = engine_outcome(bid.get("error"), bid.get("path", "none"),
                                           bool(bid.get("cached")))
    return {**filled, **bid}
