"""Run bundles: one run as a JSON file (spec, task, messages, bids, turns; never a key).

    data = export_bundle(store, run_id)     # a dict; bundle_json() gives the text
    run_id = import_bundle(other_store, data)

Importing validates everything first (unknown fields, wrong types, secret-like fields, size,
consistency between spec, bids and turns) and writes the run in one transaction, so a bad file
changes nothing. An imported run reads back exactly as it was exported.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ._agent import Agent
from ._config import MAX_SPEC_BYTES, ChatSpec, explain, parse_spec
from ._errors import ConfigError
from ._records import Bid, Message, StopReason, Turn, utc_now
from ._safeload import check_plain, parse_text
from .store import RunStore

BUNDLE_FORMAT = "groupchat-run"
BUNDLE_VERSION = 1
MAX_BUNDLE_BYTES = 64 * 1024 * 1024
RUN_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", hide_input_in_errors=True)


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
    status: Literal["running", "finished", "cancelled", "error", "interrupted"]
    stop_reason: StopReason | None = None
    error: str | None = None
    started_at: str
    ended_at: str | None = None
    total_calls: int = Field(default=0, ge=0)
    total_prompt_tokens: int = Field(default=0, ge=0)
    total_completion_tokens: int = Field(default=0, ge=0)
    total_cost_usd: float = Field(default=0.0, ge=0)
    tags: list[str] = Field(default_factory=list)
    notes: str = ""

    _times = field_validator("started_at", "ended_at")(_iso)


class BundleMessage(Message):
    turn: int = Field(ge=0)

    _time = field_validator("timestamp")(_iso)


class Bundle(_Strict):
    format: Literal["groupchat-run"]
    schema_version: int
    exported_at: str | None = None
    run: BundleRun
    spec: dict[str, Any]
    messages: list[BundleMessage] = Field(min_length=1)
    bids: list[Bid] = Field(default_factory=list)
    turns: list[Turn] = Field(default_factory=list)

    @field_validator("schema_version")
    @classmethod
    def _version(cls, v: int) -> int:
        if v != BUNDLE_VERSION:
            raise ValueError(f"bundle schema_version {v} is not supported (expected "
                             f"{BUNDLE_VERSION})")
        return v


def export_bundle(store: RunStore, run_id: str) -> dict[str, Any]:
    """The run as plain data: format, schema_version, run, spec, messages, bids, turns."""
    info = store.run_info(run_id)
    record = store.load_run(run_id)
    posted_on = store.message_turns(run_id)
    run = {k: info[k] for k in BundleRun.model_fields if k != "tags"}
    run["tags"] = [t for t in (info.get("tags") or "").split(",") if t]
    return {
        "format": BUNDLE_FORMAT, "schema_version": BUNDLE_VERSION, "exported_at": utc_now(),
        "run": run, "spec": info["spec"],
        "messages": [{**m.model_dump(), "turn": t}
                     for m, t in zip(record.messages, posted_on, strict=True)],
        "bids": [b.model_dump() for b in record.bids],
        "turns": [t.model_dump() for t in record.turns],
    }


def bundle_json(store: RunStore, run_id: str) -> str:
    """The run's bundle as JSON text, ready for a file or a download (import_bundle reads it)."""
    return json.dumps(export_bundle(store, run_id), indent=1, ensure_ascii=False)


def read_bundle(data: str | bytes | Mapping[str, Any], source: str = "bundle") -> Bundle:
    """Validate a bundle (text or parsed data) completely, without touching any store."""
    if isinstance(data, str | bytes):
        data = parse_text(data, source, MAX_BUNDLE_BYTES)
    else:
        check_plain(data, source)
    if not isinstance(data, Mapping):
        raise ConfigError(f"{source} must be a JSON object, got {type(data).__name__}")
    try:
        bundle = Bundle.model_validate(dict(data))
    except ValidationError as exc:
        raise explain(exc, source) from None
    spec = parse_spec(bundle.spec, f"{source} spec")
    _check_consistent(bundle, spec, source)
    return bundle


def _check_consistent(bundle: Bundle, spec: ChatSpec, source: str) -> None:
    """The log must fit the spec: known agents at their positions, bids on recorded turns."""
    names = [a.agent_name for a in spec.agents]
    turn_numbers = [t.turn for t in bundle.turns]
    if len(set(turn_numbers)) != len(turn_numbers):
        raise ConfigError(f"{source}: turn numbers repeat")
    posted_on = [m.turn for m in bundle.messages]
    if posted_on[0] != 0 or any(t not in turn_numbers for t in posted_on[1:]):
        raise ConfigError(f"{source}: the first message must be the task (turn 0) and every "
                          "other message must belong to a recorded turn")
    seen: set[tuple[int, int]] = set()
    for bid in bundle.bids:
        if not 0 <= bid.position < len(names) or names[bid.position] != bid.agent:
            raise ConfigError(f"{source}: bid of {bid.agent!r} on turn {bid.turn} does not match "
                              "an agent of the spec at that position")
        if bid.turn not in turn_numbers or (bid.turn, bid.position) in seen:
            raise ConfigError(f"{source}: bid of {bid.agent!r} on turn {bid.turn} has no turn "
                              "row, or is duplicated")
        seen.add((bid.turn, bid.position))


def import_bundle(store: RunStore, data: str | bytes | Mapping[str, Any],
                  source: str = "bundle") -> str:
    """Add the bundle's run to the store, all or nothing; returns its run id."""
    bundle = read_bundle(data, source)
    spec = parse_spec(bundle.spec, f"{source} spec").to_data()
    run = bundle.run.model_dump()
    if run["status"] == "running":
        run["status"] = "interrupted"  # no process here is writing it
    store.import_run(run, spec, message_rows=[m.model_dump() for m in bundle.messages],
                     bid_rows=[b.model_dump() for b in bundle.bids],
                     turn_rows=[t.model_dump() for t in bundle.turns])
    return bundle.run.run_id


# --- agent files ---------------------------------------------------------------------------

AGENTS_VERSION = 1


class AgentsFile(_Strict):
    """`{schema_version: 1, agents: [...]}`: saved agents as a file (never an api_key)."""

    schema_version: int
    agents: list[Agent] = Field(min_length=1)

    @field_validator("schema_version")
    @classmethod
    def _version(cls, v: int) -> int:
        if v != AGENTS_VERSION:
            raise ValueError(f"schema_version {v} is not supported (expected {AGENTS_VERSION})")
        return v


def dump_agents(agents: Sequence[Agent], fmt: str = "yaml") -> str:
    """Agents as a JSON or YAML file, with a schema version and without keys."""
    import yaml

    data = {"schema_version": AGENTS_VERSION, "agents": [a.to_spec() for a in agents]}
    if fmt == "json":
        return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    if fmt == "yaml":
        return str(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
    raise ConfigError(f"unknown agents format {fmt!r}; use 'json' or 'yaml'")


def load_agents_text(text: str | bytes, source: str = "agents file") -> list[Agent]:
    """Parse an agents file safely; any problem is one ConfigError naming it."""
    data = parse_text(text, source, MAX_SPEC_BYTES)
    if not isinstance(data, Mapping):
        raise ConfigError(f"{source} must be a mapping with schema_version and agents, got "
                          f"{type(data).__name__}")
    try:
        parsed = AgentsFile.model_validate(dict(data))
    except ValidationError as exc:
        raise explain(exc, source) from None
    names = [a.agent_name for a in parsed.agents]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ConfigError(f"{source}: duplicate agent_name {', '.join(map(repr, duplicates))}")
    return parsed.agents
