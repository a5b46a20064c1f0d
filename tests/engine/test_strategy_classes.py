"""One class per strategy (issue 40 point 2; docs/engine.md §16): each plays its turns on the
turn loop and replays a recorded turn with the same rules; the turn loop holds no strategy of
its own, calls no private method of the Room, and the Room follows a run from its events.

Private imports (`engine._turn_loop` and `exports._bundle_checks`, read as source): the checks
that the loop and the bundle checks keep no strategy of their own.
"""

from __future__ import annotations

import ast
import inspect

import pytest

from groupchat_core import (
    STRATEGIES,
    Agent,
    BidDelta,
    ChatConfig,
    GroupChat,
    Message,
    MessagePosted,
    Room,
    TurnStarted,
)
from groupchat_core.engine import _turn_loop
from groupchat_core.engine.strategies import recent_speakers, strategy_for, turn_row
from groupchat_core.exports import _bundle_checks

PERSONAS = ("eager", "balanced", "reserved")


def test_every_strategy_is_one_class_of_its_own() -> None:
    made = {name: strategy_for(ChatConfig(strategy=name), 3) for name in STRATEGIES}
    assert {name: s.name for name, s in made.items()} == {name: name for name in STRATEGIES}
    assert len({type(s) for s in made.values()}) == len(STRATEGIES)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_every_recorded_turn_replays_to_its_row(strategy: str) -> None:
    """A run's turns, replayed through its strategy one by one (as a bundle's import check
    does), give back every turn row and every bid's standing the run recorded."""
    agents = [Agent(agent_name=f"A{i}", model_name=f"sim/{p}") for i, p in enumerate(PERSONAS)]
    chat = GroupChat(agents=agents, strategy=strategy, max_loops=12, seed=7, threshold=0.2)
    chat.run("Plan a picnic.")
    record = chat.last_run
    assert record.turns  # something to replay
    rules = strategy_for(ChatConfig.model_validate(record.config), len(agents))
    recent = recent_speakers(rules.config.recency_window)
    for row in record.turns:
        bids = sorted((b for b in record.bids if b.turn == row.turn), key=lambda b: b.position)
        selection = rules.replay(row, bids, list(recent))
        expected = turn_row(row.turn, bids, selection)
        expected.selector_reason = row.selector_reason  # what a model said: taken as recorded
        assert expected == row
        assert [(b.penalized, b.adjusted, b.eligible) for b in bids] == list(
            zip(selection.penalized, selection.adjusted, selection.eligible, strict=True))
        if row.winner is not None:
            recent.append(row.winner)


def test_a_replay_names_what_no_run_of_the_strategy_could_record() -> None:
    agents = [Agent(agent_name=f"A{i}", model_name=f"sim/{p}") for i, p in enumerate(PERSONAS)]
    chat = GroupChat(agents=agents, strategy="round_robin", max_loops=3)
    chat.run("Plan it.")
    record = chat.last_run
    row, bid = record.turns[1], record.bids[1]
    rules = strategy_for(ChatConfig(strategy="round_robin"), 3)
    with pytest.raises(ValueError, match=r"^round_robin asks the agent at position 1 on this "
                                         r"turn, not 0 \(strategy round_robin\)$"):
        rules.replay(row, [bid.model_copy(update={"position": 0})], [])
    picked = row.model_copy(update={"rule_winner": "A1"})
    with pytest.raises(ValueError, match="a person picks the speaker only under strategy "
                                         "'bidding', not 'round_robin'"):
        rules.replay(picked, [bid], [])


def _tree(module: object) -> ast.Module:
    return ast.parse(inspect.getsource(module))  # type: ignore[arg-type]


def test_the_turn_loop_names_no_strategy_and_calls_no_private_method_of_the_room() -> None:
    tree = _tree(_turn_loop)
    def strategy(node: ast.AST) -> bool:
        return (isinstance(node, ast.Name) and node.id == "strategy") or (
            isinstance(node, ast.Attribute) and node.attr == "strategy")

    dispatch = [ast.unparse(n) for n in ast.walk(tree) if isinstance(n, ast.Compare)
                and any(strategy(side) for side in (n.left, *n.comparators))]
    assert dispatch == []  # every strategy's turn is its class's (engine/strategies/)
    room_private = sorted({n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)
                           and n.attr.startswith("_") and isinstance(n.value, ast.Attribute)
                           and n.value.attr in ("live_room", "room")})
    assert room_private == []


def test_bundle_checks_replay_through_the_strategies() -> None:
    tree = _tree(_bundle_checks)
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert "engine.strategies" in {(m or "").lstrip(".") for m in imported}
    assert not {m for m in imported if m and ("_turn_loop" in m or "_people" in m)}
    assert "deque" not in ast.unparse(tree)  # the recent speakers are the engine's own


def test_the_room_follows_a_run_from_its_events() -> None:
    room = Room([("Ann", None)])
    before = room.version
    room.observe(TurnStarted(run_id="r", turn=1))  # nothing a room shows
    assert room.version == before
    room.observe(MessagePosted(run_id="r", turn=0, message=Message(role="User", content="Hi")))
    room.observe(BidDelta(run_id="r", turn=1, agent="A", score=0.4, message="I thi"))
    snap = room.snapshot()
    assert snap.messages == (("User", "Hi"),)
    assert [(b.name, b.kind, b.score, b.message) for b in snap.forming] == [
        ("A", "agent", 0.4, "I thi")]
