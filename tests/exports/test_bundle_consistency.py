"""Imported bundles must be runs the engine could have produced (issue 10 §1).

Each hostile bundle below contradicts itself in one way; importing it must fail with ONE line
naming the first contradiction (turn, agent, what was expected) and leave every table of the
store exactly as it was (a hash of all rows before and after). The base bundle is the scripted
trio run (tests/helpers/scripted_trio.py), re-imported under a new run id so that, unchanged, it
would be written: the control test shows that, so the unchanged-store checks can fail.

Every test taking `store` runs on SQLite and on PostgreSQL (tests/conftest.py).

Private imports (`exports._bundles`, `store._schema`): units or test hooks with no public name;
everything public comes from the public API.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import re
import subprocess
import sys
from typing import Any

import pytest
from sqlalchemy import select

from groupchat_core import ConfigError, import_bundle
from groupchat_core.exports._bundles import export_bundle, read_bundle
from groupchat_core.store import RunStore
from groupchat_core.store._schema import METADATA
from tests.helpers import ROOT
from tests.helpers.chats import scripted_chat
from tests.helpers.scripted_trio import TASK, trio_chat

COPY_ID = "imported-copy"


def store_digest(store: RunStore) -> str:
    """A hash of every row of every table, in primary-key order."""
    digest = hashlib.sha256()
    with store.read("hash every table") as conn:
        for table in METADATA.sorted_tables:
            rows = conn.execute(select(table).order_by(*table.primary_key.columns)).all()
            digest.update(f"{table.name}:{[tuple(r) for r in rows]!r}".encode())
    return digest.hexdigest()


def trio_bundle(store: RunStore) -> dict[str, Any]:
    """The trio run (turn 1 Alice, turn 2 Bob because Alice is penalised, turn 3 a lull),
    exported, under a run id the store does not have yet."""
    chat, _ = trio_chat()
    store.attach(chat)
    chat.run(TASK)
    data = copy.deepcopy(export_bundle(store, chat.last_run.run_id))
    data["run"]["run_id"] = COPY_ID
    return data


def bid(data: dict[str, Any], turn: int, agent: str) -> dict[str, Any]:
    return next(b for b in data["bids"] if b["turn"] == turn and b["agent"] == agent)


def refused(store: RunStore, data: dict[str, Any], pattern: str) -> str:
    """Import must fail with one line matching pattern and change nothing."""
    before = store_digest(store)
    with pytest.raises(ConfigError) as caught:
        import_bundle(store, json.dumps(data), source="hostile.json")
    message = str(caught.value)
    assert "\n" not in message and "\r" not in message, message
    assert re.search(pattern, message), message
    assert store_digest(store) == before
    return message


def test_the_unchanged_bundle_imports_and_changes_the_store(store):
    data = trio_bundle(store)
    before = store_digest(store)
    assert import_bundle(store, json.dumps(data)) == COPY_ID
    assert store_digest(store) != before
    assert store.load_run(COPY_ID).turns == store.load_run(data["run"]["run_id"]).turns


# --- the cases of the issue -------------------------------------------------------------------


def _alice_wins_turn_2(d: dict[str, Any]) -> None:
    bid(d, 2, "Alice")["winner"], bid(d, 2, "Bob")["winner"] = True, False
    d["turns"][1]["winner"] = "Alice"
    d["messages"][2].update(role="Alice", content="A2", score=0.9)


def _turn_3_numbered(number: int) -> Any:
    def mutate(d: dict[str, Any]) -> None:
        d["turns"][2]["turn"] = number
        for b in d["bids"]:
            if b["turn"] == 3:
                b["turn"] = number
    return mutate


def _swap_turns(d: dict[str, Any]) -> None:
    d["turns"][0]["turn"], d["turns"][1]["turn"] = 2, 1


CONTRADICTIONS = {
    "a winner who is not the highest eligible bid": (
        _alice_wins_turn_2,
        r"^hostile\.json: turn 2: the recorded winner is 'Alice', but re-running selection on "
        r"its bids makes 'Bob' the winner \(threshold 0\.5, recency penalty 0\.3, window 1; "
        r"recent speakers: 'Alice'\)$"),
    # selection is rerun under the bundle's own settings
    "a smaller penalty: Alice's 0.9 - 0.05 beats Bob's 0.7": (
        lambda d: d["spec"].update(recency_penalty=0.05),
        r"turn 2: the recorded winner is 'Bob', but .* makes 'Alice' the winner \(threshold "
        r"0\.5, recency penalty 0\.05"),
    "no window: nobody is penalised": (
        lambda d: d["spec"].update(recency_window=0),
        r"turn 2: the recorded winner is 'Bob', but .* makes 'Alice' the winner .*window 0; "
        r"recent speakers: none"),
    "a higher threshold than Alice's 0.9": (
        lambda d: d["spec"].update(threshold=0.95),
        r"turn 1: the recorded winner is 'Alice', but no bid is eligible"),
    # window 2: before turn 3 the last two posted messages are Alice's and Bob's, so Alice's
    # silent bid is penalised there (recorded under window 1: not penalised)
    "recent speakers come from the bundle's messages": (
        lambda d: d["spec"].update(recency_window=2),
        r"turn 3, agent 'Alice': penalized is recorded as False, but the engine's rule gives "
        r"True .*recent speakers: 'Alice', 'Bob'"),
    "missing bids": (
        lambda d: d["bids"].remove(bid(d, 2, "Cara")),
        r"turn 2: no bid from agent 'Cara' \(every agent bids on every turn\)"),
    "two winners on one turn": (
        lambda d: bid(d, 1, "Bob").update(winner=True),
        r"turn 1: 2 bids are marked winner \('Alice', 'Bob'\); one speaker"),
    "a posted message whose role is not the winner": (
        lambda d: d["messages"][1].update(role="Bob"),
        r"turn 1: the posted message is from 'Bob', but the turn's winner is 'Alice'"),
    "a posted message that is not the winning bid": (
        lambda d: d["messages"][1].update(content="something Alice never bid"),
        r"turn 1: the posted message of 'Alice' is not its winning bid"),
    "a message on a lull turn": (
        lambda d: d["messages"].append({**d["messages"][2], "role": "Bob", "content": "B3",
                                        "score": 0.4, "turn": 3}),
        r"turn 3: nobody won this turn, yet a message from 'Bob' is posted"),
    "two messages on one turn": (
        lambda d: d["messages"].insert(2, dict(d["messages"][1])),
        r"turn 1: 2 messages are posted on it; its winner 'Alice' posts exactly one"),
    "a score above one": (
        lambda d: bid(d, 1, "Cara").update(score=55),
        r"turn 1, agent 'Cara': score 55(\.0)? is outside \[0, 1\]"),
    "a score below zero": (
        lambda d: bid(d, 1, "Cara").update(score=-3),
        r"turn 1, agent 'Cara': score -3(\.0)? is outside \[0, 1\]"),
    "a winner who is not one of the agents": (
        lambda d: d["turns"][0].update(winner="Mallory"),
        r"turn 1: winner 'Mallory' is not one of the agents \('Alice', 'Bob', 'Cara'\)"),
    "a negative turn number": (
        _turn_3_numbered(-5), r"turn -5: turn numbers start at 1 \(the task is turn 0\)"),
    "a zero turn number": (
        _turn_3_numbered(0), r"turn 0: turn numbers start at 1 \(the task is turn 0\)"),
    "turns out of order": (
        _swap_turns, r"turn 2 is out of place: turns are numbered 1, 2, 3, \.\.\. in order"),
    "finished without a stop reason": (
        lambda d: d["run"].update(stop_reason=None),
        r"run status is 'finished' but it has no stop_reason"),
    "a stop reason the log contradicts": (
        lambda d: d["run"].update(stop_reason="max_loops"),
        r"the run's stop_reason is 'max_loops', but its last turn \(3\) has no winner, which "
        r"ends a run with 'lull'"),
    "a status the stop reason contradicts": (
        lambda d: d["run"].update(stop_reason="cancelled"),
        r"run status is 'finished' but stop_reason 'cancelled' ends a run as 'cancelled'"),
    "more messages than max_loops": (
        lambda d: d["spec"].update(max_loops=2), r"the run has 3 messages, over its max_loops 2"),
    "duplicate agent names in the spec": (
        lambda d: d["spec"]["agents"][2].update(agent_name="Alice"),
        r"duplicate agent_name 'Alice' in the spec"),
    # the Agent model itself refuses these first: the same rule, worded by _agent.py
    "an agent name with a bidi override": (
        lambda d: d["spec"]["agents"][0].update(agent_name="Ali\u202ece"),
        r"agent_name contains U\+202E RIGHT-TO-LEFT OVERRIDE; remove it"),
    "an agent name with a C0 control": (
        lambda d: d["spec"]["agents"][0].update(agent_name="Ali\x1b[2Jce"),
        r"agents\.0\.agent_name: agent_name contains U\+001B"),
    "a tag with a control character": (
        lambda d: d["run"].update(tags=["ok", "bad\x1b[31m"]),
        r"tag 'bad\\x1b\[31m' contains the control character U\+001B"),
    # totals that lie
    "total_calls": (
        lambda d: d["run"].update(total_calls=999),
        r"run total_calls is 999, but its bids add up to 9 \(totals are the sums over the "
        r"bids\)"),
    "total_prompt_tokens": (
        lambda d: d["run"].update(total_prompt_tokens=5),
        r"run total_prompt_tokens is 5, but its bids add up to 0"),
    "total_cost_usd": (
        lambda d: d["run"].update(total_cost_usd=12.5),
        r"run total_cost_usd is 12\.5, but its bids add up to 0"),
    "a float total beyond the store": (
        lambda d: d["run"].update(total_calls=1e30),
        r"run\.total_calls: total_calls must be an integer from 0 to 2,147,483,647 \(what the "
        r"store holds\), got 1e\+30"),
    "an int total beyond the store": (
        lambda d: d["run"].update(total_calls=10**30),
        r"run\.total_calls: Input should be less than or equal to 2147483647"),
    # turn rows, bids and messages must be what the engine writes
    "a margin": (
        lambda d: d["turns"][0].update(margin=0.5),
        r"turn 1: margin is recorded as 0\.5, but re-running selection on its bids gives 0\.2"),
    "a reason": (
        lambda d: d["turns"][1].update(reason="highest_bid"),
        r"turn 2: reason is recorded as 'highest_bid', but re-running selection on its bids "
        r"gives 'penalty_changed_winner'"),
    "a lull": (
        lambda d: d["turns"][2].update(lull=False),
        r"turn 3: lull is recorded as False, but re-running selection on its bids gives True"),
    "an adjusted score": (
        lambda d: bid(d, 2, "Alice").update(adjusted=0.9),
        r"turn 2, agent 'Alice': adjusted is recorded as 0\.9, but the engine's rule gives 0\.6"),
    "eligibility": (
        lambda d: bid(d, 1, "Bob").update(eligible=False),
        r"turn 1, agent 'Bob': eligible is recorded as False, but the engine's rule gives True"),
    "a bid's calls beyond the store": (
        lambda d: bid(d, 1, "Alice").update(calls=10**12),
        r"bids\.0\.calls: Input should be less than or equal to 2147483647"),
    "another task": (
        lambda d: d["messages"][0].update(content="another task"),
        r"the first message must be the task as posted"),
    "a NUL in a message": (
        lambda d: d["messages"][1].update(content="A1\x00"),
        r"messages\[1\]\.content contains a NUL character"),
}


def test_a_bundle_the_engine_could_not_have_written_is_refused(store, subtests):
    """Every case on one store and one recorded run (a refusal changes nothing, so each case
    starts from the same store), each case a subtest of its own."""
    recorded = trio_bundle(store)
    for case, (mutate, pattern) in CONTRADICTIONS.items():
        with subtests.test(case):
            data = copy.deepcopy(recorded)
            mutate(data)
            refused(store, data, pattern)


def test_run_names_with_control_characters(store, subtests):
    recorded = trio_bundle(store)
    for name, code in [
        ("\x1b]0;owned\x07", "U+001B"),  # retitles a terminal
        ("clear\x1b[2J", "U+001B"),
        ("csi\x9b2J", "U+009B"),  # the one-byte CSI
        ("del\x7f", "U+007F"),
        ("evil\u202egnp.exe", "U+202E"),  # right-to-left override
        ("line\u2028break", "U+2028"),
        ("zero\u200bwidth", "U+200B"),
    ]:
        with subtests.test(repr(name)):
            data = copy.deepcopy(recorded)
            data["run"]["name"] = name
            message = refused(store, data,
                              rf"run name .* contains the control character {re.escape(code)}; ")
            assert "\x1b" not in message and "\u202e" not in message


def test_a_task_is_text_like_a_reply_and_keeps_its_escape_sequences(store):
    """The engine accepts any task (as it posts any reply); bundles carry what it recorded.
    Printing such text safely is the CLI's job (issue 10 §6), not the importer's."""
    chat = scripted_chat({"A": [(0.9, "hi \x1b[2J")], "B": [(0.1, "")]}, max_loops=2)
    store.attach(chat)
    chat.run("task \x1b]0;title\x07")
    data = export_bundle(store, chat.last_run.run_id)
    data["run"]["run_id"] = COPY_ID
    assert import_bundle(store, json.dumps(data)) == COPY_ID


def test_the_first_contradiction_is_the_one_named(store):
    data = trio_bundle(store)
    bid(data, 3, "Cara")["score"] = 55  # turn 3
    bid(data, 1, "Bob")["winner"] = True  # turn 1: reported first
    data["run"]["total_calls"] = 999  # checked after the turns
    refused(store, data, r"^hostile\.json: turn 1: 2 bids are marked winner")


def test_nan_in_data_handed_over_directly_is_refused(store):
    data = trio_bundle(store)
    bid(data, 1, "Alice")["score"] = float("nan")
    with pytest.raises(ConfigError, match=r"bids\[0\]\.score is nan, not a finite number"):
        read_bundle(data)


# --- runs the engine really records import back ----------------------------------------------


def _scripted_run(store: RunStore, script: dict[str, list[Any]], **settings: Any) -> str:
    chat = scripted_chat(script, **settings)
    store.attach(chat)
    chat.run("Plan it.")
    return chat.last_run.run_id


def test_runs_the_engine_records_import_back_exactly(store, other_store, subtests):
    script = {"A": [(0.9, "a1"), (0.8, "a2"), (0.8, "a3"), (0.7, "a4"), (0.6, "a5")],
              "B": [(0.8, "b1"), (0.8, "b2"), (0.3, ""), (0.7, "b4"), (0.6, "b5")],
              "C": [(0.8, "c1"), (0.9, "c2"), (0.95, "c3"), (0.7, "c4"), (0.6, "c5")]}
    for settings in [{"max_loops": 4, "recency_window": 2, "recency_penalty": 0.5},
                     {"max_loops": 5, "recency_window": 0, "threshold": -1.0},
                     {"max_loops": 5, "recency_window": 3, "recency_penalty": 0.0,
                      "threshold": 0.0}]:
        with subtests.test(str(settings)):  # each run its own, on the same two stores
            run_id = _scripted_run(store, script, **settings)
            assert import_bundle(other_store, json.dumps(export_bundle(store, run_id))) == run_id
            assert other_store.load_run(run_id) == store.load_run(run_id)


def test_a_run_that_stopped_because_every_bid_failed_imports_back(store, other_store):
    boom = RuntimeError("provider down")
    run_id = _scripted_run(store, {"A": [(0.9, "a1"), boom], "B": [(0.2, ""), boom]})
    data = export_bundle(store, run_id)
    assert data["run"]["stop_reason"] == "error" and data["run"]["status"] == "error"
    assert import_bundle(other_store, json.dumps(data)) == run_id
    assert other_store.load_run(run_id) == store.load_run(run_id)


def test_the_dashboard_import_refuses_a_contradiction_and_changes_nothing(store):
    from groupchat_ui.runs import logic as services

    data = trio_bundle(store)
    bid(data, 2, "Cara")["winner"] = True
    before = store_digest(store)
    with pytest.raises(ConfigError, match=r"^run\.json: turn 2: 2 bids are marked winner"):
        services.import_run(store, json.dumps(data).encode(), "run.json")
    assert store_digest(store) == before


def test_the_cli_import_refuses_with_one_line_and_exit_2(store, store_url, tmp_path):
    data = trio_bundle(store)
    data["run"]["total_calls"] = 999
    path = tmp_path / "lying.json"
    path.write_text(json.dumps(data))
    before = store_digest(store)
    done = subprocess.run([sys.executable, "-m", "groupchat_core", "--db", store_url, "import",
                           str(path)], capture_output=True, text=True, timeout=120, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 2, done.stderr
    assert done.stderr == ("error: lying.json: run total_calls is 999, but its bids add up to 9 "
                           "(totals are the sums over the bids)\n")
    assert "Traceback" not in done.stderr and done.stdout == ""
    assert store_digest(store) == before
