"""An imported bundle re-checked against the engine's own rules (see _bundles.py): every turn
re-selected from its bids, the people's seats and a selector's picks re-made, the stop reason
and totals summed again; the first contradiction is one ConfigError line.

Why apart from _bundles.py: these checks are most of the importer and change with the engine's
rules (strategies, people), not with the file format.
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Callable
from typing import Any, NoReturn

from .._config import ChatSpec
from .._errors import ConfigError
from .._records import RunRecord, Turn
from ..engine._strategies import message_cap
from ..engine.strategies import recent_speakers, rules_note, strategy_for, turn_row
from ..store import status_for
from ._bundle_model import (
    Bundle,
    BundleBid,
    BundleMessage,
    BundleRun,
    engine_outcome,
)

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
        if kind == "human" and (bid.path != "human" or bid.calls or bid.cached or bid.cached_calls
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


def _check_turns(bundle: Bundle, spec: ChatSpec, names: list[str], fail: Fail) -> None:
    """Re-run each turn through the run's strategy (its replay of a recorded turn: the rules
    the turn loop applied), the turn row as the engine writes it, the posted message; recent
    speakers as the turn loop keeps them."""
    bids_on: dict[int, list[BundleBid]] = {}
    for bid in bundle.bids:
        bids_on.setdefault(bid.turn, []).append(bid)
    posted_on: dict[int, list[BundleMessage]] = {}
    for message in bundle.messages[1:]:
        posted_on.setdefault(message.turn, []).append(message)
    strategy = strategy_for(spec, len(names))
    recent = recent_speakers(spec.recency_window)
    for index, row in enumerate(bundle.turns):
        t = row.turn
        bids = sorted(bids_on.get(t, []), key=lambda b: b.position)
        have = {b.position for b in bids}
        for position, name in enumerate(names):
            if position not in have and not strategy.asks_one:
                fail(f"turn {t}: no bid from agent {name!r} (every agent bids on every turn)")
        for bid in bids:
            if not 0.0 <= bid.score <= 1.0:
                fail(f"turn {t}, agent {bid.agent!r}: score {bid.score!r} is outside [0, 1] (the "
                     "engine clamps every score into [0, 1])")
            if bid.cached and not bid.cached_calls:
                fail(f"turn {t}, agent {bid.agent!r}: the bid is cached, so the cache answered "
                     "at least one of its calls, but cached_calls is 0")
            expected_outcome = engine_outcome(bid.error, bid.path, bid.cached)
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
        try:  # the strategy's own rule (docs/engine.md §16), as the turn loop applies it
            selection = strategy.replay(row, bids, list(recent))
        except ValueError as exc:
            fail(f"turn {t}: {exc}")
        expected = turn_row(t, bids, selection)
        expected.rule_winner, expected.human_pick = row.rule_winner, row.human_pick
        if row.selector_reason is not None and spec.strategy != "selector":
            fail(f"turn {t}: a selector_reason is recorded, but the run's strategy is "
                 f"{spec.strategy}, which asks no selector model")
        expected.selector_reason = row.selector_reason  # what the model said: taken as recorded
        winner = expected.winner
        if row.winner != winner or marked != ([winner] if winner else []):
            said = row.winner if row.winner == (marked[0] if marked else None) else (
                f"{row.winner!r} on the turn row, {marked[0] if marked else None!r} on the bids")
            fail(f"turn {t}: the recorded winner is {said!r}, but re-running selection on its "
                 f"bids makes {winner!r} the winner ({rules_note(spec, recent)})" if winner else
                 f"turn {t}: the recorded winner is {said!r}, but no bid is eligible on "
                 f"re-running selection ({rules_note(spec, recent)})")
        for i, bid in enumerate(bids):
            for field, value in (("penalized", selection.penalized[i]),
                                 ("adjusted", selection.adjusted[i]),
                                 ("eligible", selection.eligible[i])):
                if not _same(getattr(bid, field), value):
                    fail(f"turn {t}, agent {bid.agent!r}: {field} is recorded as "
                         f"{getattr(bid, field)!r}, but the engine's rule gives {value!r} "
                         f"({rules_note(spec, recent)})")
        for field in Turn.model_fields:
            if not _same(getattr(row, field), getattr(expected, field)):
                fail(f"turn {t}: {field} is recorded as {getattr(row, field)!r}, but re-running "
                     f"selection on its bids gives {getattr(expected, field)!r} "
                     f"({rules_note(spec, recent)})")
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
        cap = message_cap(spec.strategy, spec.max_loops, len(spec.agents))  # vote: one round
        ends = "max_loops" if count == cap else "nothing"
        how = f"it has {count} of max_loops {spec.max_loops} messages" + (
            f" (at most {cap} under {spec.strategy})" if cap != spec.max_loops else "")
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
