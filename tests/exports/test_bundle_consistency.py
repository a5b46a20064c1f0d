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


def test_a_winner_who_is_not_the_highest_eligible_bid(store):
    data = trio_bundle(store)
    bid(data, 2, "Alice")["winner"], bid(data, 2, "Bob")["winner"] = True, False
    data["turns"][1]["winner"] = "Alice"
    data["messages"][2].update(role="Alice", content="A2", score=0.9)
    refused(store, data, r"^hostile\.json: turn 2: the recorded winner is 'Alice', but "
                         r"re-running selection on its bids makes 'Bob' the winner \(threshold "
                         r"0\.5, recency penalty 0\.3, window 1; recent speakers: 'Alice'\)$")


@pytest.mark.parametrize(("setting", "value", "pattern"), [
    # a smaller penalty: on turn 2 Alice's 0.9 - 0.05 beats Bob's 0.7
    ("recency_penalty", 0.05, r"turn 2: the recorded winner is 'Bob', but .* makes 'Alice' the "
                              r"winner \(threshold 0\.5, recency penalty 0\.05"),
    # no window: nobody is penalised, so Alice wins turn 2
    ("recency_window", 0, r"turn 2: the recorded winner is 'Bob', but .* makes 'Alice' the "
                          r"winner .*window 0; recent speakers: none"),
    # a higher threshold: Alice's 0.9 on turn 1 is not above it
    ("threshold", 0.95, r"turn 1: the recorded winner is 'Alice', but no bid is eligible"),
])
def test_selection_is_rerun_under_the_bundles_own_settings(store, setting, value, pattern):
    data = trio_bundle(store)
    data["spec"][setting] = value
    refused(store, data, pattern)


def test_recent_speakers_come_from_the_bundles_messages_as_in_the_engine(store):
    """Window 2: before turn 3 the last two posted messages are Alice's and Bob's, so Alice's
    silent bid is penalised there (recorded under window 1: not penalised)."""
    data = trio_bundle(store)
    data["spec"]["recency_window"] = 2
    refused(store, data, r"turn 3, agent 'Alice': penalized is recorded as False, but the "
                         r"engine's rule gives True .*recent speakers: 'Alice', 'Bob'")


def test_missing_bids(store):
    data = trio_bundle(store)
    data["bids"].remove(bid(data, 2, "Cara"))
    refused(store, data, r"turn 2: no bid from agent 'Cara' \(every agent bids on every turn\)")


def test_two_winners_on_one_turn(store):
    data = trio_bundle(store)
    bid(data, 1, "Bob")["winner"] = True
    refused(store, data, r"turn 1: 2 bids are marked winner \('Alice', 'Bob'\); one speaker")


def test_a_posted_message_whose_role_is_not_the_winner(store):
    data = trio_bundle(store)
    data["messages"][1]["role"] = "Bob"
    refused(store, data, r"turn 1: the posted message is from 'Bob', but the turn's winner is "
                         r"'Alice'")


def test_a_posted_message_that_is_not_the_winning_bid(store):
    data = trio_bundle(store)
    data["messages"][1]["content"] = "something Alice never bid"
    refused(store, data, r"turn 1: the posted message of 'Alice' is not its winning bid")


def test_a_message_on_a_lull_turn(store):
    data = trio_bundle(store)
    data["messages"].append({**data["messages"][2], "role": "Bob", "content": "B3",
                             "score": 0.4, "turn": 3})
    refused(store, data, r"turn 3: nobody won this turn, yet a message from 'Bob' is posted")


def test_two_messages_on_one_turn(store):
    data = trio_bundle(store)
    data["messages"].insert(2, dict(data["messages"][1]))
    refused(store, data, r"turn 1: 2 messages are posted on it; its winner 'Alice' posts "
                         r"exactly one")


@pytest.mark.parametrize("score", [55, -3])
def test_scores_outside_zero_to_one(store, score):
    data = trio_bundle(store)
    bid(data, 1, "Cara")["score"] = score
    refused(store, data, rf"turn 1, agent 'Cara': score {score}(\.0)? is outside \[0, 1\]")


def test_a_winner_who_is_not_one_of_the_agents(store):
    data = trio_bundle(store)
    data["turns"][0]["winner"] = "Mallory"
    refused(store, data, r"turn 1: winner 'Mallory' is not one of the agents \('Alice', 'Bob', "
                         r"'Cara'\)")


@pytest.mark.parametrize("number", [-5, 0])
def test_a_negative_or_zero_turn_number(store, number):
    data = trio_bundle(store)
    data["turns"][2]["turn"] = number
    for b in data["bids"]:
        if b["turn"] == 3:
            b["turn"] = number
    refused(store, data, rf"turn {number}: turn numbers start at 1 \(the task is turn 0\)")


def test_turns_out_of_order(store):
    data = trio_bundle(store)
    data["turns"][0]["turn"], data["turns"][1]["turn"] = 2, 1
    refused(store, data, r"turn 2 is out of place: turns are numbered 1, 2, 3, \.\.\. in order")


def test_finished_without_a_stop_reason(store):
    data = trio_bundle(store)
    data["run"]["stop_reason"] = None
    refused(store, data, r"run status is 'finished' but it has no stop_reason")


def test_a_stop_reason_the_log_contradicts(store):
    data = trio_bundle(store)
    data["run"]["stop_reason"] = "max_loops"
    refused(store, data, r"the run's stop_reason is 'max_loops', but its last turn \(3\) has no "
                         r"winner, which ends a run with 'lull'")


def test_a_status_the_stop_reason_contradicts(store):
    data = trio_bundle(store)
    data["run"]["stop_reason"] = "cancelled"
    refused(store, data, r"run status is 'finished' but stop_reason 'cancelled' ends a run as "
                         r"'cancelled'")


def test_more_messages_than_max_loops(store):
    data = trio_bundle(store)
    data["spec"]["max_loops"] = 2
    refused(store, data, r"the run has 3 messages, over its max_loops 2")


def test_duplicate_agent_names_in_the_spec(store):
    data = trio_bundle(store)
    data["spec"]["agents"][2]["agent_name"] = "Alice"
    refused(store, data, r"duplicate agent_name 'Alice' in the spec")


@pytest.mark.parametrize(("name", "code"), [
    ("\x1b]0;owned\x07", "U+001B"),  # retitles a terminal
    ("clear\x1b[2J", "U+001B"),
    ("csi\x9b2J", "U+009B"),  # the one-byte CSI
    ("del\x7f", "U+007F"),
    ("evil\u202egnp.exe", "U+202E"),  # right-to-left override
    ("line\u2028break", "U+2028"),
    ("zero\u200bwidth", "U+200B"),
])
def test_run_names_with_control_characters(store, name, code):
    data = trio_bundle(store)
    data["run"]["name"] = name
    message = refused(store, data,
                      rf"run name .* contains the control character {re.escape(code)}; ")
    assert "\x1b" not in message and "\u202e" not in message


def test_agent_names_and_tags_with_control_characters(store):
    data = trio_bundle(store)
    data["spec"]["agents"][0]["agent_name"] = "Ali\u202ece"
    # the Agent model itself refuses it first: the same rule, worded by _agent.py
    refused(store, data, r"agent_name contains U\+202E RIGHT-TO-LEFT OVERRIDE; remove it")
    data = trio_bundle(store)
    data["spec"]["agents"][0]["agent_name"] = "Ali\x1b[2Jce"  # C0: refused by Agent itself
    refused(store, data, r"agents\.0\.agent_name: agent_name contains U\+001B")
    data = trio_bundle(store)
    data["run"]["tags"] = ["ok", "bad\x1b[31m"]
    refused(store, data, r"tag 'bad\\x1b\[31m' contains the control character U\+001B")


def test_a_task_is_text_like_a_reply_and_keeps_its_escape_sequences(store):
    """The engine accepts any task (as it posts any reply); bundles carry what it recorded.
    Printing such text safely is the CLI's job (issue 10 §6), not the importer's."""
    chat = scripted_chat({"A": [(0.9, "hi \x1b[2J")], "B": [(0.1, "")]}, max_loops=2)
    store.attach(chat)
    chat.run("task \x1b]0;title\x07")
    data = export_bundle(store, chat.last_run.run_id)
    data["run"]["run_id"] = COPY_ID
    assert import_bundle(store, json.dumps(data)) == COPY_ID


@pytest.mark.parametrize(("field", "value", "pattern"), [
    ("total_calls", 999, r"run total_calls is 999, but its bids add up to 9 \(totals are the "
                         r"sums over the bids\)"),
    ("total_prompt_tokens", 5, r"run total_prompt_tokens is 5, but its bids add up to 0"),
    ("total_cost_usd", 12.5, r"run total_cost_usd is 12\.5, but its bids add up to 0"),
    ("total_calls", 1e30, r"run\.total_calls: total_calls must be an integer from 0 to "
                          r"2,147,483,647 \(what the store holds\), got 1e\+30"),
    ("total_calls", 10**30, r"run\.total_calls: Input should be less than or equal to "
                            r"2147483647"),
])
def test_totals_that_lie(store, field, value, pattern):
    data = trio_bundle(store)
    data["run"][field] = value
    refused(store, data, pattern)


@pytest.mark.parametrize(("mutate", "pattern"), [
    (lambda d: d["turns"][0].update(margin=0.5),
     r"turn 1: margin is recorded as 0\.5, but re-running selection on its bids gives 0\.2"),
    (lambda d: d["turns"][1].update(reason="highest_bid"),
     r"turn 2: reason is recorded as 'highest_bid', but re-running selection on its bids gives "
     r"'penalty_changed_winner'"),
    (lambda d: d["turns"][2].update(lull=False),
     r"turn 3: lull is recorded as False, but re-running selection on its bids gives True"),
    (lambda d: bid(d, 2, "Alice").update(adjusted=0.9),
     r"turn 2, agent 'Alice': adjusted is recorded as 0\.9, but the engine's rule gives 0\.6"),
    (lambda d: bid(d, 1, "Bob").update(eligible=False),
     r"turn 1, agent 'Bob': eligible is recorded as False, but the engine's rule gives True"),
    (lambda d: bid(d, 1, "Alice").update(calls=10**12),
     r"bids\.0\.calls: Input should be less than or equal to 2147483647"),
    (lambda d: d["messages"][0].update(content="another task"),
     r"the first message must be the task as posted"),
    (lambda d: d["messages"][1].update(content="A1\x00"),
     r"messages\[1\]\.content contains a NUL character"),
])
def test_turn_rows_bids_and_messages_must_be_what_the_engine_writes(store, mutate, pattern):
    data = trio_bundle(store)
    mutate(data)
    refused(store, data, pattern)


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


@pytest.mark.parametrize("settings", [
    {"max_loops": 4, "recency_window": 2, "recency_penalty": 0.5},
    {"max_loops": 5, "recency_window": 0, "threshold": -1.0},
    {"max_loops": 5, "recency_window": 3, "recency_penalty": 0.0, "threshold": 0.0},
])
def test_runs_the_engine_records_import_back_exactly(store, other_store, settings):
    script = {"A": [(0.9, "a1"), (0.8, "a2"), (0.8, "a3"), (0.7, "a4"), (0.6, "a5")],
              "B": [(0.8, "b1"), (0.8, "b2"), (0.3, ""), (0.7, "b4"), (0.6, "b5")],
              "C": [(0.8, "c1"), (0.9, "c2"), (0.95, "c3"), (0.7, "c4"), (0.6, "c5")]}
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
