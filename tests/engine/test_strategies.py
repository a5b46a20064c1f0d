"""Speaker-selection strategies (issues 20, 40; docs/engine.md §16): the pure rules over 10,000
seeded random cases each, each strategy end to end, one class per strategy that replays its turns.
Private imports (rules, export_bundle, and _turn_loop/_bundle_checks read as source): no public
name."""

from __future__ import annotations

import ast
import inspect
import json
import random

import pytest

from groupchat_core import (
    STRATEGIES,
    Agent,
    BidDelta,
    ChatConfig,
    ConfigError,
    GroupChat,
    Message,
    MessagePosted,
    Room,
    RunRecord,
    TurnStarted,
    import_bundle,
    select_speaker,
)
from groupchat_core.analysis import explain_turn
from groupchat_core.engine import _turn_loop
from groupchat_core.engine._selection import Candidate
from groupchat_core.engine._strategies import (
    assigned,
    can_speak,
    pick_named,
    scheduled,
    score_only,
)
from groupchat_core.engine.strategies import recent_speakers, strategy_for, turn_row
from groupchat_core.exports import _bundle_checks
from groupchat_core.exports._bundles import export_bundle
from groupchat_core.store import RunStore
from groupchat_core.sweeps import estimate, parse_sweep
from groupchat_core.testing import FakeOpenAIServer, ScriptedBids, text, tool_call

NAMES = [f"A{i}" for i in range(8)]
SCORES = [0.0, 0.1, 0.25, 0.3, 0.5, 0.5000001, 0.6, 0.7, 0.8, 0.9, 1.0]
CASES = 10_000  # random cases per rule, seeded: the same cases every run, milliseconds each
# (hypothesis drew these at ~5 ms a case: 140 s of the suite for three tests)


def random_turn(rng: random.Random) -> tuple[list[Candidate], list[str], float, float]:
    """A turn of 2-8 bids (failed, unreadable or silent ones among them), a recent-speaker
    window, a threshold and a penalty, each drawn from values that sit on the rules' edges."""
    n = rng.randint(2, 8)
    cands = []
    for i in range(n):
        failed, unreadable = rng.random() < 0.5, rng.random() < 0.5
        message = "" if failed else rng.choice(["", "hi", "ok"])
        cands.append(Candidate(NAMES[i], rng.choice(SCORES), message, failed=failed,
                               unreadable=unreadable and not failed))
    recent = [rng.choice(NAMES[:n]) for _ in range(rng.randint(0, 3))]
    return (cands, recent, rng.choice([-0.5, 0.0, 0.2, 0.5, 0.7, 1.0]),
            rng.choice([-0.3, 0.0, 0.1, 0.2, 0.3, 0.5]))


def _adjusted(c: Candidate, recent: list[str], penalty: float) -> float:
    return c.score - penalty if c.agent in recent else c.score


def test_bidding_and_bid_then_speaks_first_call_pick_by_their_rules() -> None:
    """Both rules over the same 10,000 random turns."""
    rng = random.Random(20)
    for case in range(CASES):
        cands, recent, threshold, penalty = random_turn(rng)
        try:
            check_bidding(cands, recent, threshold, penalty)
            check_bid_then_speak_first_call(cands, recent, threshold, penalty)
        except AssertionError as exc:
            raise AssertionError(f"case {case}: {cands} {recent} {threshold} {penalty}") \
                from exc
    assert case == CASES - 1


def check_bidding(cands: list[Candidate], recent: list[str], threshold: float,
                  penalty: float) -> None:
    """Bidding: the winner is the highest adjusted bid above threshold."""
    sel = select_speaker(cands, recent, threshold, penalty)
    allowed = [i for i, c in enumerate(cands)
               if can_speak(c) and _adjusted(c, recent, penalty) > threshold]
    if not allowed:  # nobody may take the floor: a lull (or an error when nothing was read)
        assert sel.winner is None
        expected = "lull" if any(c.read for c in cands) else (
            "all_failed" if all(c.failed for c in cands) else "no_readable_bid")
        assert sel.reason == expected
        return
    best = max(_adjusted(cands[i], recent, penalty) for i in allowed)
    first = min(i for i in allowed if _adjusted(cands[i], recent, penalty) == best)
    assert sel.winner == first  # the highest; ties go to the earlier agent
    assert sel.winner in allowed  # never an agent the rule excluded


def check_bid_then_speak_first_call(cands: list[Candidate], recent: list[str],
                                    threshold: float, penalty: float) -> None:
    """bid_then_speak's first call picks from the read scores only."""
    sel = select_speaker([score_only(c) for c in cands], recent, threshold, penalty)
    if sel.winner is not None:
        won = cands[sel.winner]
        assert not won.failed and _adjusted(won, recent, penalty) > threshold
        assert all(_adjusted(c, recent, penalty) <= _adjusted(won, recent, penalty)
                   for c in cands if not c.failed)


def test_scheduled_rules_ask_one_agent_and_never_post_an_excluded_bid() -> None:
    rng = random.Random(21)
    for _ in range(CASES):
        strategy = rng.choice(["round_robin", "random", "all_speak"])
        turn, n, seed = rng.randint(1, 10_000), rng.randint(2, 16), rng.randint(-2**53, 2**53)
        failed, message = rng.random() < 0.5, rng.choice(["", "x"])
        pos = scheduled(strategy, turn, n, seed)
        assert 0 <= pos < n
        assert pos == scheduled(strategy, turn, n, seed)  # seeded: the same every time
        if strategy != "random":
            assert pos == (turn - 1) % n
        c = Candidate(NAMES[0], rng.choice(SCORES), "" if failed else message, failed=failed)
        sel = assigned(c, strategy)  # type: ignore[arg-type]
        assert (sel.winner == 0) == can_speak(c)  # an excluded bid (silent, failed) never speaks
        assert sel.reason == (strategy if can_speak(c) else ("all_failed" if failed else "lull"))


def test_selector_names_only_agents_on_the_roster() -> None:
    """Replies made of roster names, their parts, case changes, punctuation and any unicode
    character: a reply never names an agent it does not contain."""
    rng = random.Random(22)
    roster = ["Ann", "Ann Lee", "Bob", "Cy", "bob", "Dee"]
    pieces = [*roster, "An", "Le", "bo", "ANN", " ", ", ", ": ", "\n", "é", "Ann-Lee", "Bobby"]
    for _ in range(CASES):
        names = rng.sample(roster, rng.randint(2, 5))
        reply = "".join(rng.choice(pieces) if rng.random() < 0.7 else chr(rng.randint(1, 0x2FFF))
                        for _ in range(rng.randint(0, 8)))
        pos = pick_named(reply, names)
        assert pos is None or names[pos].lower() in reply.lower(), (reply, names)


def test_selector_prefers_the_name_the_reply_starts_with() -> None:
    assert pick_named("Ann Lee: she knows", ["Ann", "Ann Lee", "Bob"]) == 1
    assert pick_named("I pick Bob, then Ann", ["Ann", "Bob"]) == 1
    assert pick_named("nobody", ["Ann", "Bob"]) is None


# --- end to end, scripted fakes ------------------------------------------------------------

def _chat(script: dict[str, list[object]], **config: object) -> tuple[GroupChat, ScriptedBids]:
    """One agent per key but "selector", which (when given) is the selector model."""
    fake = ScriptedBids(script, shared=False)
    agents = [Agent(agent_name=n, model_name=fake.model_name) for n in script
              if n != "selector"]
    if "selector" in script:
        config["selector_model"] = fake.model_name
    chat = GroupChat(agents=agents, providers=fake.providers, bid_cache=False,
                     output_type="basemodel", **config)  # type: ignore[arg-type]
    return chat, fake


def test_strategy_is_a_validated_setting_with_bidding_by_default() -> None:
    assert GroupChat(agents=[Agent(agent_name="a"), Agent(agent_name="b")]).to_dict()[
        "strategy"] == "bidding"
    with pytest.raises(ConfigError, match="strategy 'loudest' is not one of: bidding"):
        GroupChat(agents=[Agent(agent_name="a"), Agent(agent_name="b")], strategy="loudest")


def test_round_robin_asks_only_the_next_agent_in_list_order() -> None:
    chat, fake = _chat({"A": [(0.1, "a1"), (0.0, "a2")], "B": [(0.0, "b1")]},
                       strategy="round_robin", max_loops=4)
    record = chat.run("task")
    assert [(t.winner, t.reason) for t in record.turns] == [
        ("A", "round_robin"), ("B", "round_robin"), ("A", "round_robin")]
    assert [m.content for m in record.messages] == ["task", "a1", "b1", "a2"]
    assert record.total_calls == 3 == len(record.bids)  # one call per turn, not one per agent
    assert "It is your turn to speak" in fake.calls[0].messages[-1]["content"]
    fake.assert_complete()
    # analysis explains a turn named by the rule, not by its bid
    text = explain_turn(record.bids_frame(), record.turns_frame(), 1, 0.5)
    assert "A spoke because it was next in list order (round_robin)" in text
    assert "above the threshold" not in text


def test_a_silent_scheduled_speaker_is_a_lull() -> None:
    chat, _ = _chat({"A": [(0.9, "")], "B": []}, strategy="round_robin")
    record = chat.run("task")
    assert record.stop_reason == "lull" and record.turns[0].reason == "lull"


def test_all_speak_asks_everyone_on_one_snapshot_per_round_and_posts_in_list_order() -> None:
    chat, fake = _chat({"A": [(0.0, "a1"), (0.0, "a2")], "B": [(0.0, "b1"), (0.0, "b2")],
                        "C": [(0.0, "c1"), (0.0, "c2")]}, strategy="all_speak", max_loops=7)
    record = chat.run("task")
    assert [m.role for m in record.messages[1:]] == ["A", "B", "C", "A", "B", "C"]
    assert {t.reason for t in record.turns} == {"all_speak"}
    first_round = fake.calls[:3]  # everyone asked before anything of the round was posted
    assert all(len(r.history) == 1 for r in first_round)
    assert all(len(r.history) == 4 for r in fake.calls[3:])
    assert [b.turn for b in record.bids] == [1, 2, 3, 4, 5, 6]


def test_random_strategy_is_reproducible_from_the_seed() -> None:
    def run(seed: int) -> list[str | None]:
        chat, _ = _chat({n: [(0.0, f"{n}{i}") for i in range(12)] for n in "ABC"},
                        strategy="random", max_loops=13, seed=seed)
        return [t.winner for t in chat.run("task").turns]

    assert run(4) == run(4)
    assert run(4) != run(5)
    assert run(4) == ["ABC"[scheduled("random", t, 3, 4)] for t in range(1, 13)]
    assert len({scheduled("random", t, 5, 1) for t in range(1, 41)}) == 5  # every seat comes up


def test_selector_model_picks_the_speaker_and_its_call_is_counted(store: RunStore) -> None:
    chat, fake = _chat({"selector": [(1.0, "Bob: he has not spoken"), (1.0, "nobody")],
                        "Ann": [], "Bob": [(0.0, "bob speaks"), (0.0, "bob again")]},
                       max_loops=3, strategy="selector")
    store.attach(chat)
    record = chat.run("task")
    assert [(t.winner, t.reason) for t in record.turns] == [
        ("Bob", "selector"), ("Bob", "round_robin")]  # turn 2 named nobody: round robin
    said = ["Bob: he has not spoken", "nobody"]  # the selector's reply, stored with its turn
    assert [t.selector_reason for t in record.turns] == said
    store.flush()
    assert store.turns(record.run_id)["selector_reason"].tolist() == said
    assert [t.selector_reason for t in store.load_run(record.run_id).turns] == said
    why = explain_turn(store.bids(record.run_id), store.turns(record.run_id), 1, 0.5)
    assert "Bob: he has not spoken" in why
    assert record.total_calls == 4  # two selector calls + two speakers, one bid row a turn
    asked = [r for r in fake.calls if r.agent.agent_name == "selector"][0]
    assert "Ann, Bob" in asked.messages[-1]["content"] and "User: task" in \
        asked.messages[-1]["content"]
    fake.assert_complete()


def test_bid_then_speak_asks_scores_then_only_the_winner_writes() -> None:
    chat, fake = _chat({"A": [(0.9, "long text nobody should post"), (0.9, "A writes")],
                        "B": [(0.7, "also long")]}, strategy="bid_then_speak", max_loops=2)
    record = chat.run("task")
    assert [m.content for m in record.messages] == ["task", "A writes"]
    a, b = record.bids
    assert (a.calls, b.calls) == (2, 1) and record.total_calls == 3
    assert b.message == "" and a.winner and a.score == 0.9
    prompts = [r.messages[-1]["content"] for r in fake.calls]
    assert sum("score only" in p for p in prompts) == 2
    assert sum("Your bid won the floor" in p for p in prompts) == 1
    assert record.turns[0].reason == "highest_bid"


def test_bid_then_speak_counts_both_calls_when_the_bid_cache_answers(store: RunStore,
                                                                     other_store: RunStore
                                                                     ) -> None:
    """On sims the written call is the score call's cached answer: calls_needed stays a cold
    cache's, through the store and a bundle."""
    def run(cache: bool) -> RunRecord:
        agents = [Agent(agent_name=n, model_name=m) for n, m in
                  (("A", "sim/balanced"), ("B", "sim/eager"), ("C", "sim/reserved"))]
        chat = GroupChat(agents=agents, bid_cache=cache, max_loops=4, seed=3,
                         strategy="bid_then_speak", output_type="basemodel")
        store.attach(chat)
        return chat.run("Plan the offsite.")

    cold, warm = run(False), run(True)
    assert cold.calls_needed == cold.total_calls == 3 * len(cold.turns) + len(cold.messages) - 1
    assert warm.calls_needed == cold.calls_needed and warm.total_calls < cold.total_calls
    won = [b for b in warm.bids if b.winner]
    assert won and all(b.calls + b.cached_calls == 2 for b in won)
    assert all(b.cached_calls == int(b.cached) + 1 for b in won)  # the written call's hit
    store.flush()
    assert store.load_run(warm.run_id).calls_needed == warm.calls_needed
    data = export_bundle(store, warm.run_id)
    assert [b["cached_calls"] for b in data["bids"]] == [b.cached_calls for b in warm.bids]
    import_bundle(other_store, json.dumps(data))
    assert other_store.load_run(warm.run_id).calls_needed == warm.calls_needed


def test_strategy_is_a_sweep_axis_and_the_estimate_counts_each_rules_calls() -> None:
    order = ["bidding", "bid_then_speak", "selector", "round_robin", "random", "all_speak"]
    spec = parse_sweep({
        "base": {"agents": [{"agent_name": "a"}, {"agent_name": "b"}], "max_loops": 4},
        "grid": {"strategy": order}, "tasks": ["t"]})
    cells = list(spec.cells())
    assert [c.params["strategy"] for c in cells] == order
    assert spec.chat_spec(cells[5]).strategy == "all_speak"
    # 3 turns x 2 agents; + 1 written call a turn (bid_then_speak); the selector asks one agent
    # + itself; the rules that name a speaker ask one agent a turn (it used to count every agent)
    assert [estimate(spec, [c]).calls_upper for c in cells] == [6, 9, 6, 3, 3, 3]
    with pytest.raises(ConfigError, match="grid.strategy"):
        parse_sweep({"base": {"agents": [{"agent_name": "a"}, {"agent_name": "b"}]},
                     "grid": {"strategy": ["shouting"]}, "tasks": ["t"]})


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_every_strategy_is_stored_exactly_and_its_bundle_imports_back(
        store: object, other_store: object, strategy: str) -> None:
    """The store rebuilds the record; a bundle passes the import check (the strategy's rule)."""
    script: dict[str, list[object]] = {n: [(0.6 + 0.1 * i, f"{n}{j}") for j in range(12)]
                                       for i, n in enumerate("ABC")}
    script["selector"] = [(1.0, "C: fresh view"), (1.0, "none")] * 6
    chat, _ = _chat(script, max_loops=6, strategy=strategy, seed=7)
    store.attach(chat)  # type: ignore[attr-defined]
    record = chat.run("task")
    assert record.stop_reason == "max_loops"
    loaded = store.load_run(record.run_id)  # type: ignore[attr-defined]
    assert loaded == record and loaded.config["strategy"] == strategy
    data = export_bundle(store, record.run_id)  # type: ignore[arg-type]
    assert import_bundle(other_store, json.dumps(data)) == record.run_id  # type: ignore[arg-type]
    assert other_store.load_run(record.run_id).config["strategy"] == strategy  # type: ignore
    if strategy != "bidding":  # a turn another rule would not have made is refused
        data["turns"][0]["reason"] = "highest_bid" if strategy != "bid_then_speak" else "lull"
        with pytest.raises(ConfigError):
            import_bundle(other_store, json.dumps({**data, "run": {**data["run"],
                                                                   "run_id": "x" * 32}}))


def test_a_selector_is_asked_on_its_own_server_in_its_own_mode() -> None:
    """Over real HTTP on that server in json_schema mode (no tools); its JSON reply picks."""
    with FakeOpenAIServer() as fake:
        fake.script("picker", [text('{"score": 1, "message": "Bob: he has not spoken"}')])
        fake.script("agents", [tool_call(0.0, "Bob speaks")])
        agents = [Agent(agent_name=n, model_name="openai/agents", api_base=fake.base_url,
                        num_retries=0) for n in ("Ann", "Bob")]
        chat = GroupChat(agents=agents, bid_cache=False, max_loops=2, strategy="selector",
                         selector_model="openai/picker", selector_api_base=fake.base_url,
                         selector_tool_choice_mode="json_schema", output_type="basemodel")
        record = chat.run("task")
        asked, base = fake.requests_for("picker"), fake.base_url
    assert [(t.winner, t.reason) for t in record.turns] == [("Bob", "selector")]
    assert record.messages[-1].content == "Bob speaks"
    assert len(asked) == 1 and "tools" not in asked[0].body
    assert asked[0].body["response_format"]["type"] == "json_object"
    assert asked[0].body["response_format"]["schema"]["required"] == ["score", "message"]
    assert chat.to_dict()["selector_api_base"] == base  # recorded with the spec


def test_a_selector_api_base_with_a_control_character_is_refused_in_one_line() -> None:
    agents = [Agent(agent_name=n, model_name="sim/balanced") for n in ("Ann", "Bob")]
    with pytest.raises(ConfigError, match="selector_api_base contains"):
        GroupChat(agents=agents, strategy="selector", selector_api_base="http://x\x1b[31m")


# --- one class per strategy: replays, and no strategy in the turn loop or bundle checks ---

PERSONAS = ("eager", "balanced", "reserved")


def test_every_strategy_is_one_class_of_its_own() -> None:
    made = {name: strategy_for(ChatConfig(strategy=name), 3) for name in STRATEGIES}
    assert {name: s.name for name, s in made.items()} == {name: name for name in STRATEGIES}
    assert len({type(s) for s in made.values()}) == len(STRATEGIES)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_every_recorded_turn_replays_to_its_row(strategy: str) -> None:
    """Replayed turn by turn (as a bundle's import check does): every row and bid standing."""
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
