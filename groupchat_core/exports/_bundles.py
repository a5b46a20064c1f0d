"""Run bundles: one run as a JSON file (spec, task, messages, bids, turns; never a key).

    data = export_bundle(store, run_id)     # a dict; bundle_json() gives the text
    run_id = import_bundle(other_store, data)

Importing validates everything first (unknown fields, wrong types, secret-like fields, size,
numbers the store can hold) and then re-checks the run against the engine's own rules: every
turn is re-selected from its bids with `select_speaker` under the bundle's threshold, recency
penalty and window (recent speakers derived from the bundle's messages, as the turn loop does),
and the recorded winner, turn row, posted message, stop reason and totals must all agree. The
first contradiction is one ConfigError line (turn, agent, what was expected); the run is written
in one transaction only after all of that, so a bad file changes nothing. An imported run reads
back exactly as it was exported.
"""

from __future__ import annotations

import json
import math
import unicodedata
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, Literal, NoReturn

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .._agent import Agent
from .._config import MAX_SPEC_BYTES, ChatSpec, explain, parse_spec
from .._errors import ConfigError
from .._records import Bid, Message, Outcome, RunRecord, StopReason, Turn, outcome_of, utc_now
from .._safeload import MAX_STORED_INT, check_plain, parse_text
from .._statuses import RunStatus
from ..engine._people import picked_selection, top_bids
from ..engine._selection import Selection, candidate, select_speaker
from ..engine._strategies import ASKS_ONE, replay
from ..engine._turn_loop import _turn_row  # the engine's own turn row
from ..store import RunStore, outcome_values, status_for

BUNDLE_FORMAT = "groupchat-run"
BUNDLE_VERSION = 3
"""2: bids carry `outcome` (read / cached / unreadable / failed). Version 1 bundles, written
before it, import all the same: each bid's outcome follows from its error, path and cached.
3: `people` (issue 22): the seats of the run's people in the roster (the spec lists agents
only), bids carry `kind`, turns `rule_winner` / `human_pick`. Version 1 and 2 bundles have no
people: every bid is an agent's, no turn was picked by a person."""
READABLE_BUNDLE_VERSIONS = frozenset({1, 2, BUNDLE_VERSION})
MAX_BUNDLE_BYTES = 64 * 1024 * 1024
RUN_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"


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

    _ints = field_validator("turn", "position", "prompt_tokens", "completion_tokens", "calls",
                            mode="before")(_whole)


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


def export_bundle(store: RunStore, run_id: str) -> dict[str, Any]:
    """The run as plain data: format, schema_version (the bundle format's), exported_at,
    written_by (app, litellm and store schema versions), run, spec, messages, bids, turns."""
    info = store.run_info(run_id)
    record = store.load_run(run_id)
    posted_on = store.message_turns(run_id)
    run = {k: info[k] for k in BundleRun.model_fields if k != "tags"}
    run["tags"] = [t for t in (info.get("tags") or "").split(",") if t]
    bundle = {
        "format": BUNDLE_FORMAT, "schema_version": BUNDLE_VERSION, "exported_at": utc_now(),
        "written_by": written_by(), "run": run, "spec": info["spec"],
        "messages": [{**m.model_dump(), "turn": t}
                     for m, t in zip(record.messages, posted_on, strict=True)],
        "bids": [b.model_dump() for b in record.bids],
        "turns": [t.model_dump() for t in record.turns],
        "people": [{"name": name, "position": position} for position, name in sorted(
            {(b.position, b.agent) for b in record.bids if b.kind == "human"})],
    }
    if record.outcome is not None:  # only scored runs carry one (older readers stay happy)
        bundle["outcome"] = record.outcome.model_dump()
    return bundle


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


Fail = Callable[[str], NoReturn]  # raises a ConfigError naming the bundle


def _check_consistent(bundle: Bundle, spec: ChatSpec, source: str) -> None:
    """The bundle must be a run the engine could have produced; raise on the first
    contradiction, in the order: spec and names, status, structure, each turn, stop, totals."""

    def fail(problem: str) -> NoReturn:
        raise ConfigError(f"{source}: {problem}")

    names, people = _roster(bundle, spec, fail)
    _check_names(bundle, spec, names, fail)
    _check_status(bundle.run, fail)
    _check_structure(bundle, names, people, fail)
    _check_turns(bundle, spec, names, fail)
    _check_stop(bundle, spec, fail)
    _check_totals(bundle, fail)


_JOINERS = frozenset("\u200d")  # zero-width joiner: part of emoji sequences, not a control


def _hidden_character(text: str) -> str | None:
    """The first character of a name that is not shown as itself: C0/C1 controls (ESC starts
    terminal escape sequences), DEL, line/paragraph separators, bidi overrides and zero-width
    format characters (which make a name read as another)."""
    for ch in text:
        category = unicodedata.category(ch)
        if category in ("Cc", "Zl", "Zp") or (category == "Cf" and ch not in _JOINERS):
            return f"U+{ord(ch):04X}"
    return None


def _roster(bundle: Bundle, spec: ChatSpec, fail: Fail) -> tuple[list[str], set[int]]:
    """Everyone who bids, in list order (a bid's position): the people at their seats, the
    spec's agents in the other positions in spec order. Returns the names and the people's
    positions."""
    size = len(spec.agents) + len(bundle.people)
    seats: dict[int, str] = {}
    for person in bundle.people:
        if not 0 <= person.position < size or person.position in seats:
            fail(f"person {person.name!r} sits at position {person.position}, which is "
                 f"{'taken' if person.position in seats else 'outside the roster'} (the "
                 f"roster has {size} seats, numbered from 0): fix the bundle's people")
        seats[person.position] = person.name
    agents = iter(a.agent_name for a in spec.agents)
    return [seats[i] if i in seats else next(agents) for i in range(size)], set(seats)


def _check_names(bundle: Bundle, spec: ChatSpec, names: list[str], fail: Fail) -> None:
    seen: set[str] = set()
    for name in [a.agent_name for a in spec.agents]:
        if name in seen:
            fail(f"duplicate agent_name {name!r} in the spec: names identify speakers, so each "
                 "agent needs a unique name")
        seen.add(name)
    seen = set()
    for name in names:
        if name in seen:
            fail(f"duplicate name {name!r} in the roster (an agent and a person, or two "
                 "people): names identify speakers, so each needs a unique name")
        seen.add(name)
    if len(names) < 2:
        fail(f"the spec has {len(names)} agent(s); a chat needs at least 2")
    if bundle.people and not spec.agents:
        fail("the run has people but no agent; a room needs at least 1 agent")
    if bundle.people and spec.strategy != "bidding":
        fail(f"the run has people under strategy {spec.strategy!r}; people bid only under "
             "strategy 'bidding'")
    labels = [("run name", bundle.run.name), ("spec name", spec.name)]
    labels += [("tag", t) for t in bundle.run.tags]
    labels += [("agent_name", a.agent_name) for a in spec.agents]
    labels += [("person", p.name) for p in bundle.people]
    labels += [(f"model_name of {a.agent_name!r}", a.model_name) for a in spec.agents]
    for what, label in labels:
        hidden = _hidden_character(label)
        if hidden is not None:
            fail(f"{what} {label!r} contains the control character {hidden}; names are shown "
                 "on terminals and pages and must read as what they are: remove it")


def _check_status(run: BundleRun, fail: Fail) -> None:
    """Status and stop reason as the store writes them (store/_writer.status_for)."""
    reason = run.stop_reason
    if run.status == "finished" and reason is None:
        fail("run status is 'finished' but it has no stop_reason: a finished run says why it "
             "stopped (max_loops, lull, ...)")
    if reason is not None and run.status in ("finished", "cancelled"):
        expected = status_for(RunRecord(run_id=run.run_id, config={}, task=run.task,
                                        stop_reason=reason))
        if expected != run.status:
            fail(f"run status is {run.status!r} but stop_reason {reason!r} ends a run as "
                 f"{expected!r}")


def _check_structure(bundle: Bundle, names: list[str], people: set[int], fail: Fail) -> None:
    """Turns numbered 1, 2, 3, ...; the task first; every message and bid on a recorded turn."""
    for index, row in enumerate(bundle.turns, start=1):
        if row.turn < 1:
            fail(f"turn {row.turn}: turn numbers start at 1 (the task is turn 0)")
        if row.turn != index:
            fail(f"turn {row.turn} is out of place: turns are numbered 1, 2, 3, ... in order, "
                 f"so turn {index} was expected there")
    recorded = len(bundle.turns)
    first, *rest = bundle.messages
    if first.turn != 0 or any(not 1 <= m.turn <= recorded for m in rest):
        fail("the first message must be the task (turn 0) and every other message must belong "
             "to a recorded turn")
    if first.role != "User" or first.content != bundle.run.task or first.score is not None:
        fail("the first message must be the task as posted: role 'User', the run's task as its "
             "content, no score")
    if any(a.turn > b.turn for a, b in zip(rest, rest[1:], strict=False)):
        fail("messages are not in the order they were posted (their turns go backwards)")
    seen: set[tuple[int, int]] = set()
    for bid in bundle.bids:
        if not 0 <= bid.position < len(names) or names[bid.position] != bid.agent:
            fail(f"bid of {bid.agent!r} on turn {bid.turn} does not match an agent of the spec "
                 "(or a person of the bundle's people) at that position")
        kind = "human" if bid.position in people else "agent"
        if bid.kind != kind:
            fail(f"bid of {bid.agent!r} on turn {bid.turn} is recorded as kind {bid.kind!r}, "
                 f"but {bid.agent!r} is {'a person' if kind == 'human' else 'an agent'} "
                 f"(kind {kind!r})")
        if kind == "human" and (bid.path != "human" or bid.calls or bid.cached
                                or bid.prompt_tokens or bid.completion_tokens or bid.cost_usd):
            fail(f"bid of {bid.agent!r} on turn {bid.turn}: a person's bid has path 'human', "
                 "no calls, tokens or cost, and is never cached")
        if not 1 <= bid.turn <= recorded or (bid.turn, bid.position) in seen:
            fail(f"bid of {bid.agent!r} on turn {bid.turn} has no turn row, or is duplicated")
        seen.add((bid.turn, bid.position))


def _same(recorded: Any, expected: Any) -> bool:
    if isinstance(recorded, float | int) and isinstance(expected, float | int) and not (
            isinstance(recorded, bool) or isinstance(expected, bool)):
        return math.isclose(recorded, expected, rel_tol=1e-9, abs_tol=1e-12)
    return bool(recorded == expected)


def _room(spec: ChatSpec, recent: Sequence[str]) -> str:
    speakers = ", ".join(map(repr, recent)) or "none"
    return (f"threshold {spec.threshold:g}, recency penalty {spec.recency_penalty:g}, window "
            f"{spec.recency_window}; recent speakers: {speakers}")


def _check_turns(bundle: Bundle, spec: ChatSpec, names: list[str], fail: Fail) -> None:
    """Re-run each turn: selection from its bids (the engine's select_speaker), the turn row
    (the engine's _turn_row), the posted message; recent speakers as the turn loop keeps them."""
    bids_on: dict[int, list[BundleBid]] = {}
    for bid in bundle.bids:
        bids_on.setdefault(bid.turn, []).append(bid)
    posted_on: dict[int, list[BundleMessage]] = {}
    for message in bundle.messages[1:]:
        posted_on.setdefault(message.turn, []).append(message)
    window = spec.recency_window
    recent: deque[str] = deque(maxlen=window)  # as TurnLoop.recent: the last `window` speakers
    for index, row in enumerate(bundle.turns):
        t = row.turn
        bids = sorted(bids_on.get(t, []), key=lambda b: b.position)
        have = {b.position for b in bids}
        for position, name in enumerate(names):
            if position not in have and spec.strategy not in ASKS_ONE:
                fail(f"turn {t}: no bid from agent {name!r} (every agent bids on every turn)")
        for bid in bids:
            if not 0.0 <= bid.score <= 1.0:
                fail(f"turn {t}, agent {bid.agent!r}: score {bid.score!r} is outside [0, 1] (the "
                     "engine clamps every score into [0, 1])")
            expected_outcome = outcome_of(bid.error, bid.path, bid.cached)
            if bid.outcome != expected_outcome:
                fail(f"turn {t}, agent {bid.agent!r}: outcome is recorded as {bid.outcome!r}, "
                     f"but its error, path and cached make it {expected_outcome!r}")
        marked = [b.agent for b in bids if b.winner]
        if len(marked) > 1:
            fail(f"turn {t}: {len(marked)} bids are marked winner "
                 f"({', '.join(map(repr, marked))}); one speaker per turn")
        if row.winner is not None and row.winner not in names:
            fail(f"turn {t}: winner {row.winner!r} is not one of the agents "
                 f"({', '.join(map(repr, names))})")
        if row.rule_winner is not None or row.human_pick is not None:
            selection = _picked_turn(row, bids, spec, list(recent), fail)
        else:
            try:  # the strategy's own rule (docs/engine.md §16), as the turn loop applies it
                selection = replay(spec.strategy, [candidate(b) for b in bids],
                                   [b.position for b in bids], list(recent), spec.threshold,
                                   spec.recency_penalty, turn=t, agents=len(names),
                                   seed=spec.seed, reason=row.reason)
            except ValueError as exc:
                fail(f"turn {t}: {exc} (strategy {spec.strategy})")
        expected = _turn_row(t, list(bids), selection)
        expected.rule_winner, expected.human_pick = row.rule_winner, row.human_pick
        winner = expected.winner
        if row.winner != winner or marked != ([winner] if winner else []):
            said = row.winner if row.winner == (marked[0] if marked else None) else (
                f"{row.winner!r} on the turn row, {marked[0] if marked else None!r} on the bids")
            fail(f"turn {t}: the recorded winner is {said!r}, but re-running selection on its "
                 f"bids makes {winner!r} the winner ({_room(spec, recent)})" if winner else
                 f"turn {t}: the recorded winner is {said!r}, but no bid is eligible on "
                 f"re-running selection ({_room(spec, recent)})")
        for i, bid in enumerate(bids):
            for field, value in (("penalized", selection.penalized[i]),
                                 ("adjusted", selection.adjusted[i]),
                                 ("eligible", selection.eligible[i])):
                if not _same(getattr(bid, field), value):
                    fail(f"turn {t}, agent {bid.agent!r}: {field} is recorded as "
                         f"{getattr(bid, field)!r}, but the engine's rule gives {value!r} "
                         f"({_room(spec, recent)})")
        for field in Turn.model_fields:
            if not _same(getattr(row, field), getattr(expected, field)):
                fail(f"turn {t}: {field} is recorded as {getattr(row, field)!r}, but re-running "
                     f"selection on its bids gives {getattr(expected, field)!r} "
                     f"({_room(spec, recent)})")
        posted = posted_on.get(t, [])
        if winner is None:
            if posted:
                fail(f"turn {t}: nobody won this turn, yet a message from {posted[0].role!r} is "
                     "posted on it")
            if index + 1 < len(bundle.turns):
                fail(f"turn {t}: nobody won, so the run stopped there; turn "
                     f"{bundle.turns[index + 1].turn} cannot follow it")
            continue
        if len(posted) != 1:
            fail(f"turn {t}: {len(posted)} messages are posted on it; its winner {winner!r} "
                 "posts exactly one")
        message, won = posted[0], bids[selection.winner or 0]
        if message.role != winner:
            fail(f"turn {t}: the posted message is from {message.role!r}, but the turn's winner "
                 f"is {winner!r}")
        if message.content != won.message or not _same(message.score, won.score):
            fail(f"turn {t}: the posted message of {winner!r} is not its winning bid (message "
                 "and score must be the bid's)")
        recent.append(winner)


def _picked_turn(row: BundleTurn, bids: list[BundleBid], spec: ChatSpec, recent: list[str],
                 fail: Fail) -> Selection:
    """A turn under a person as selector, re-made as the engine made it (engine/_people.py
    resolve): the rule on the bids as bid (a person's no-post error came after), the pick
    among the top bids, then a picked person who did not post gives the floor to the next."""
    t = row.turn
    if spec.strategy != "bidding":
        fail(f"turn {t}: rule_winner / human_pick are recorded, but a person picks the speaker "
             f"only under strategy 'bidding', not {spec.strategy!r}")
    working = [b.model_copy() for b in bids]
    for bid in working:
        if bid.kind == "human":
            bid.error = None

    def select() -> Selection:
        return select_speaker([candidate(b) for b in working], recent, spec.threshold,
                              spec.recency_penalty)

    selection = select()
    rule = None if selection.winner is None else working[selection.winner].agent
    if row.rule_winner != rule:
        fail(f"turn {t}: rule_winner is recorded as {row.rule_winner!r}, but the bidding rule "
             f"on its bids picks {rule!r} ({_room(spec, recent)})")
    if row.human_pick is not None:
        top = top_bids(working, selection, spec.selector_top_k)
        index = next((i for i in top if working[i].agent == row.human_pick), None)
        if index is None:
            fail(f"turn {t}: human_pick {row.human_pick!r} is not one of the top "
                 f"{spec.selector_top_k} bids the person chose among "
                 f"({', '.join(repr(working[i].agent) for i in top) or 'none'})")
        if row.human_pick != rule:
            selection = picked_selection(selection, index,
                                         [candidate(b) for b in working])
    while selection.winner is not None and working[selection.winner].kind == "human":
        won = selection.winner
        if not bids[won].error:
            break
        working[won].error = bids[won].error
        selection = select()
    return selection


def _check_stop(bundle: Bundle, spec: ChatSpec, fail: Fail) -> None:
    """The cap on messages, and a finished run's stop reason against how its log ends."""
    count = len(bundle.messages)
    if count > spec.max_loops:
        fail(f"the run has {count} messages, over its max_loops {spec.max_loops} (the task "
             "counts)")
    run = bundle.run
    if run.status != "finished":
        return  # a cancelled, failed or interrupted run's log may end anywhere
    last = bundle.turns[-1] if bundle.turns else None
    if last is not None and last.winner is None:
        ends = "lull" if last.lull else "error"
        how = f"its last turn ({last.turn}) has no winner"
    else:
        ends = "max_loops" if count == spec.max_loops else "nothing"
        how = f"it has {count} of max_loops {spec.max_loops} messages"
    if run.stop_reason != ends:
        fail(f"the run's stop_reason is {run.stop_reason!r}, but {how}, which ends a run with "
             + (f"{ends!r}" if ends != "nothing" else "no stop: the run was not finished"))


def _check_totals(bundle: Bundle, fail: Fail) -> None:
    """Totals are the sums over the bids (RunRecord._finish). A run that never finished has
    zeros; a run whose recording failed keeps its totals over a shorter log (status error)."""
    run = bundle.run
    sums = {
        "total_calls": sum(b.calls for b in bundle.bids),
        "total_prompt_tokens": sum(b.prompt_tokens or 0 for b in bundle.bids),
        "total_completion_tokens": sum(b.completion_tokens or 0 for b in bundle.bids),
        "total_cost_usd": sum(b.cost_usd or 0.0 for b in bundle.bids),
    }
    recorded = {name: getattr(run, name) for name in sums}
    if all(v == 0 for v in recorded.values()) and (run.status == "error" or
                                                    run.stop_reason is None):
        return
    for name, total in sums.items():
        value = recorded[name]
        if _same(value, total) or (run.status == "error" and value >= total):
            continue
        fail(f"run {name} is {value!r}, but its bids add up to {total!r} (totals are the sums "
             "over the bids)")


def import_bundle(store: RunStore, data: str | bytes | Mapping[str, Any],
                  source: str = "bundle") -> str:
    """Add the bundle's run to the store, all or nothing; returns its run id."""
    bundle = read_bundle(data, source)
    spec = parse_spec(bundle.spec, f"{source} spec").to_data()
    run = bundle.run.model_dump()
    if run["status"] == "running":
        run["status"] = "interrupted"  # no process here is writing it
    run.update(outcome_values(bundle.outcome))
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
