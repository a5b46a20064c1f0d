"""A bid's outcome (issue 25 item 1): set once by the turn loop, stored (v10 fills old bids),
bundled and read by every reader; a turn with no readable bid is an error, never a lull (issue 9).
Private imports (BidCache, Candidate, TurnPrinter, engine_outcome, parse_response, store
internals): units with no public name."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pandas as pd
import pytest
from pydantic import SecretStr
from sqlalchemy import create_engine, insert, select

from groupchat_core import (
    Agent,
    Bid,
    ConfigError,
    GroupChat,
    Turn,
    TurnCompleted,
    bundle_json,
    import_bundle,
    select_speaker,
    transcript_markdown,
)
from groupchat_core.analysis import bid_outcomes, charts, counterfactual, explain_turn
from groupchat_core.cli._main import TurnPrinter
from groupchat_core.engine._bidcache import BidCache
from groupchat_core.engine._selection import Candidate
from groupchat_core.exports._bundle_model import engine_outcome
from groupchat_core.providers._replies import parse_response
from groupchat_core.store import SCHEMA_VERSION, RunStore, dispose_engines
from groupchat_core.store._connect import get_engine
from groupchat_core.store._migrations import create_version, forget_checked
from groupchat_core.store._schema import metadata_for
from groupchat_core.testing import FakeOpenAIServer, Reply, error, text, tool_call

KEY = "sk-test-outcome-0123456789abcdef"
pytestmark = pytest.mark.usefixtures("fresh_engines")


def _agent(srv: FakeOpenAIServer, name: str, **kw: Any) -> Agent:
    return Agent(agent_name=name, model_name=f"openai/{name.lower()}", api_base=srv.base_url,
                 api_key=SecretStr(KEY), num_retries=0, **kw)


def test_the_turn_loop_sets_each_outcome_once() -> None:
    with FakeOpenAIServer() as server:
        server.script("a", [tool_call(0.9, "first"), tool_call(0.9, "again")])
        server.script("b", [text("no json here"), text("still none")])
        server.script("c", [error(500, "down"), error(500, "down")])
        chat = GroupChat(agents=[_agent(server, n, temperature=0.0) for n in "ABC"], max_loops=2,
                         bid_cache=BidCache(cache_all=True))
        chat.run("Plan it.")
        assert [b.outcome for b in chat.last_run.bids] == ["read", "unreadable", "failed"]
        assert [(b.read, b.failed) for b in chat.last_run.bids] == [
            (True, False), (False, False), (False, True)]
        chat.run("Plan it.")  # the same prompt: A's read bid comes from the cache, nothing else
        assert [b.outcome for b in chat.last_run.bids] == ["cached", "unreadable", "failed"]


# --- the v10 upgrade fills the outcome of bids recorded before it ---------------------------

OLD_BIDS = [  # (error, path, cached) -> the outcome the old rule gave
    (None, "tool_call", False, "read"),
    ("message cut to 20,000 characters", "tool_call", False, "read"),  # a note: still read
    (None, "tool_call", True, "cached"),
    ("unreadable: reply had no respond call", "text_fallback", False, "unreadable"),
    ("APIError: 500 down", "none", False, "failed"),
    ("unreadable: odd", "none", False, "failed"),  # no reply at all: failed wins
]


def _old_store(url: str, version: int) -> None:
    from tests.store.test_store_migrations import SPEC

    engine = get_engine(url)
    create_version(engine, version)
    t = metadata_for(version).tables
    with engine.begin() as conn:
        conn.execute(insert(t["runs"]).values(
            run_id="old", name="old", task="t", status="finished", stop_reason="max_loops",
            spec_json=json.dumps(SPEC), agents="A", threshold=0.5, recency_penalty=0.3,
            recency_window=1, max_loops=2, started_at="2025-01-01T00:00:00+00:00",
            ended_at="2025-01-01T00:00:01+00:00", total_calls=1))
        conn.execute(insert(t["bids"]), [
            {"run_id": "old", "turn": 1, "position": i, "agent": f"A{i}", "score": 0.0,
             "adjusted": 0.0, "penalized": False, "eligible": False, "winner": False,
             "message": "", "latency_ms": 1.0, "path": path, "error": err, "calls": 1,
             "cached": cached} for i, (err, path, cached, _) in enumerate(OLD_BIDS)])
    dispose_engines()
    forget_checked()


@pytest.mark.parametrize("version", [8, 9])  # v9: another branch's step; v10 follows either
def test_the_v10_upgrade_fills_in_the_outcome_of_old_bids(store_url: str, version: int) -> None:
    _old_store(store_url, version)
    RunStore(store_url).list_runs()  # opening the store upgrades it
    engine = create_engine(store_url)
    try:
        with engine.connect() as conn:
            bids_t = metadata_for(SCHEMA_VERSION).tables["bids"]
            stored = conn.execute(select(bids_t.c.outcome).order_by(bids_t.c.position)).all()
    finally:
        engine.dispose()
    assert [r.outcome for r in stored] == [o for *_, o in OLD_BIDS]
    assert [engine_outcome(e, p, c) for e, p, c, _ in OLD_BIDS] == [o for *_, o in OLD_BIDS]


# --- bundles ----------------------------------------------------------------------------------


def _bundled(store: RunStore) -> dict:
    """A stored sim run, as a bundle."""
    chat = GroupChat(agents=[Agent(agent_name=n, model_name="sim/eager") for n in "AB"],
                     max_loops=3)
    store.attach(chat)
    chat.run("t")
    store.flush()
    return json.loads(bundle_json(store, chat.last_run.run_id))


def test_outcomes_are_stored_and_bundled_old_bundles_import_and_contradicting_ones_do_not(
        store: RunStore, new_database) -> None:
    data = _bundled(store)
    run_id = data["run"]["run_id"]
    frame = store.bids(run_id)
    expected = ["cached" if c else "read" for c in frame["cached"]]  # sims may hit the cache
    assert frame["outcome"].tolist() == expected
    assert [b.outcome for b in store.load_run(run_id).bids] == expected
    assert data["schema_version"] == 4 and [b["outcome"] for b in data["bids"]] == expected
    old = {**data, "schema_version": 1, "bids": [
        {k: v for k, v in b.items() if k not in ("outcome", "cached_calls")}
        for b in data["bids"]]}
    other = RunStore(new_database())
    run_id = import_bundle(other, old)
    assert other.bids(run_id)["outcome"].tolist() == expected
    assert other.bids(run_id)["cached_calls"].tolist() == [int(o == "cached") for o in expected]
    data["bids"][0]["outcome"] = "failed"
    with pytest.raises(ConfigError, match="outcome is recorded as 'failed'"):
        import_bundle(RunStore(new_database()), data)
    del data["bids"][0]["outcome"]  # only a version 1 bundle gets it filled in
    with pytest.raises(ConfigError, match=r"bids\.0\.outcome: Field required"):
        import_bundle(RunStore(new_database()), data)


# --- every reader reads the field -------------------------------------------------------------


def test_metrics_charts_and_cli_read_the_outcome_field() -> None:
    # B's outcome says failed though nothing else on its row does: every reader sees a failure
    bids = pd.DataFrame([b.model_dump() for b in (
        Bid(turn=1, agent="A", position=0, score=0.9, adjusted=0.9, eligible=True, winner=True,
            message="hi", path="simulation"),
        Bid(turn=1, agent="B", position=1, path="simulation", outcome="failed"))])
    assert bid_outcomes(bids).tolist() == ["read", "failed"]
    turns = pd.DataFrame([Turn(turn=1, winner="A", winning_adjusted=0.9, reason="highest_bid")
                          .model_dump()])
    assert "(0 failed)" not in explain_turn(bids, turns, 1, 0.5)
    assert "1 of 2 bids had an empty message (1 failed)" in explain_turn(bids, turns, 1, 0.5)
    assert charts._failed(bids).tolist() == [False, True]
    assert charts._floor_label(bids.iloc[1], 0.3) == "failed"
    out = io.StringIO()
    TurnPrinter(out)(TurnCompleted(run_id="r", turn=Turn(turn=1, winner="A"),
                                bids=[Bid(**r) for r in bids.to_dict("records")], message=None))
    assert "B 0.00 (failed)" in out.getvalue()


def test_a_frame_from_before_the_field_is_refused_naming_the_fix() -> None:
    bids = pd.DataFrame([{"error": "x", "path": "none"}, {"error": "unreadable: y",
                                                          "path": "text_fallback"}])
    with pytest.raises(ConfigError, match="no outcome column .* read them from the store"):
        bid_outcomes(bids)
    with pytest.raises(ConfigError, match="no outcome column"):
        charts._floor_label(bids.iloc[0], 0.3)
    assert bid_outcomes(pd.DataFrame()).empty  # no bids yet: nothing to read


# --- Selection names the runner-up and the raw-score winner ----------------------------------


def test_selection_names_the_runner_up_and_the_raw_score_winner() -> None:
    bids = [Candidate("A", 0.9, "a"), Candidate("B", 0.7, "b"), Candidate("C", 0.8, "c"),
            Candidate("D", 0.95, "d", failed=True)]
    chosen = select_speaker(bids, ["A"], threshold=0.5, recency_penalty=0.3)
    assert (chosen.winner, chosen.runner_up, chosen.raw_winner) == (2, 1, 0)
    assert chosen.penalty_changed_winner
    lull = select_speaker([Candidate("A", 0.9, "a"), Candidate("B", 0.2, "b")], ["A"],
                          threshold=0.7, recency_penalty=0.3)
    assert (lull.winner, lull.runner_up, lull.raw_winner) == (None, 0, 0)  # the penalty made it


def test_explain_turn_names_the_selections_runner_up_not_a_resorted_frame() -> None:
    """Equal adjusted scores: the runner-up is the earlier agent in the list, as selection has
    it, even when the frame's rows are not in position order."""
    rows = [Bid(turn=1, agent=n, position=p, score=s, adjusted=s, eligible=True, winner=w,
                message=n.lower(), path="simulation")
            for n, p, s, w in (("C", 2, 0.6, False), ("A", 0, 0.9, True), ("B", 1, 0.6, False))]
    bids = pd.DataFrame([b.model_dump() for b in rows])
    turns = pd.DataFrame([Turn(turn=1, winner="A", winning_adjusted=0.9, runner_up_adjusted=0.6,
                               margin=0.3, reason="highest_bid").model_dump()])
    assert "The runner-up was B at 0.6" in explain_turn(bids, turns, 1, 0.5)


# --- a turn with no readable bid is an error, never a lull (issue 9 §2), over real HTTP ---


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as srv:
        yield srv
    assert srv.unexpected == [], f"unexpected calls: {srv.unexpected}"


def _run(srv: FakeOpenAIServer, replies: dict[str, Reply | list[Reply]],
         store: RunStore | None = None) -> GroupChat:
    """Each agent's reply (or replies, turn by turn); the chat's event kinds in `chat.events`."""
    for name, reply in replies.items():
        srv.script(name.lower(), reply if isinstance(reply, list) else [reply])
    events: list[str] = []
    chat = GroupChat(agents=[_agent(srv, n) for n in replies],
                     on_event=lambda e: events.append(e.kind))
    if store is not None:
        store.attach(chat)
    chat.run("Plan the offsite.")
    chat.events = events
    return chat


UNREADABLE = {
    "truncated": tool_call(None, None, arguments_raw='{"score": 0.8, "message": "We should bo'),
    "not an object": tool_call(None, None, arguments_raw="[1, 2]"),
    "empty": tool_call(None, None, arguments_raw=""),
    "nan": tool_call(None, None, arguments_raw='{"score": NaN, "message": "hi"}'),
    "inf": tool_call(None, None, arguments_raw='{"score": Infinity, "message": "hi"}'),
    "huge": tool_call(None, None, arguments_raw='{"score": 1e999, "message": "hi"}'),
    "words": tool_call("very high", "I have thoughts"),
    "no_score": tool_call(None, None, arguments_raw='{"message": "hi"}'),
    "prose": text("I'd love to chime in, but let me think about it first."),
}


@pytest.mark.parametrize("kind", sorted(UNREADABLE))
def test_every_reply_unreadable_stops_with_error_naming_each_agent(
    server: FakeOpenAIServer, kind: str,
) -> None:
    chat = _run(server, {"A": UNREADABLE[kind], "B": UNREADABLE["truncated"]})
    record = chat.last_run
    assert record.stop_reason == "error"
    turn = record.turns[0]
    assert (turn.reason, turn.lull, turn.winner, turn.failed_bids) == (
        "no_readable_bid", False, None, 0)
    assert record.error.startswith("no agent produced a readable bid on turn 1: A: unreadable: ")
    assert "; B: unreadable: respond arguments are not JSON" in record.error
    assert all(b.error.startswith("unreadable: ") and b.path != "none" for b in record.bids)
    assert all(b.score == 0.0 for b in record.bids) and record.bids[1].message == ""
    if kind == "not an object":
        assert record.bids[0].message == ""
        assert "A: unreadable: respond arguments are not a JSON object" in record.error
    # events on such a turn: the bids and turn_completed, no lull
    assert chat.events[-4:] == ["bid", "bid", "turn_completed", "run_finished"]
    assert "lull" not in chat.events


@pytest.mark.parametrize(("reply", "why"), [
    (tool_call(0.1, ""), "a silent bid"),
    (tool_call(0.2, None, arguments_raw='{"score": 0.2}'), "a missing message"),
    (tool_call(-3, "below zero"), "a score clamped to 0.0"),
    (tool_call(0.2, True), "a message of the wrong type, with a valid score"),
    (text('Sure. {"score": 0.3, "message": ""}'), "JSON in text"),
])
def test_one_read_bid_makes_a_lull(server: FakeOpenAIServer, reply: Reply, why: str) -> None:
    chat = _run(server, {"A": UNREADABLE["nan"], "B": reply})
    record = chat.last_run
    assert record.stop_reason == "lull", why
    assert record.turns[0].reason == "lull" and record.turns[0].lull and record.error is None
    assert "lull" in chat.events


def test_failed_and_unreadable_together_are_no_readable_bid_with_bounded_reasons(
        server: FakeOpenAIServer) -> None:
    chat = _run(server, {"A": error(500, "upstream down " + "x" * 50_000),
                         "B": UNREADABLE["prose"]})
    record = chat.last_run
    assert record.stop_reason == "error" and record.turns[0].reason == "no_readable_bid"
    assert record.turns[0].failed_bids == 1
    assert "A: InternalServerError" in record.error
    assert "B: unreadable: reply had no respond call and no JSON bid" in record.error
    assert len(record.bids[0].error) < 2_100 and "characters cut)" in record.bids[0].error
    assert len(record.error) < 800


def test_a_readable_winner_on_a_later_turn_is_unaffected(server: FakeOpenAIServer) -> None:
    record = _run(server, {"A": [tool_call(0.9, "first"), UNREADABLE["nan"]],
                           "B": [tool_call(0.1, ""), UNREADABLE["empty"]]}).last_run
    assert [t.reason for t in record.turns] == ["highest_bid", "no_readable_bid"]
    assert record.stop_reason == "error" and "on turn 2" in record.error
    assert [m.content for m in record.messages] == ["Plan the offsite.", "first"]


def test_analysis_and_exports_say_it_was_no_lull(server: FakeOpenAIServer) -> None:
    store = RunStore()
    record = _run(server, {"A": UNREADABLE["nan"], "B": UNREADABLE["prose"]}, store).last_run
    bids, turns = record.bids_frame(), record.turns_frame()
    explained = explain_turn(bids, turns, 1, 0.5)
    assert "no agent produced a readable bid" in explained and "not a lull" in explained
    assert "A: unreadable: invalid score nan" in explained.replace("'", "")
    assert counterfactual(bids, threshold=0.0, recency_penalty=0.0,
                          recency_window=1).stopped == "no_readable_bid"
    markdown = transcript_markdown(store, record.run_id)
    assert "### Turn 1: nobody spoke" in markdown and "lull" not in markdown
    assert "no agent produced a readable bid" in markdown
    assert store.load_run(record.run_id).turns[0].reason == "no_readable_bid"


def test_a_reply_cut_off_at_max_tokens_says_so() -> None:
    call = SimpleNamespace(function=SimpleNamespace(name="respond",
                                                    arguments='{"score": 0.8, "mess'))
    choice = SimpleNamespace(finish_reason="length",
                             message=SimpleNamespace(tool_calls=[call], content=None))
    parsed, path = parse_response(SimpleNamespace(choices=[choice]), "forced")
    assert path == "tool_call" and not parsed.readable
    assert parsed.error is not None and parsed.error.startswith("unreadable: respond arguments")
    assert parsed.error.endswith("(the reply was cut off at max_tokens)")
