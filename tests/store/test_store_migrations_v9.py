"""Schema v9: a scored task's outcome on its run (issue 20 item 1).

A v8 store (a real SQLite file, and the throwaway PostgreSQL: the `store_url` fixture) is
upgraded in place keeping its runs, with no outcome; a scored run records its outcome in the
row and reads it back exactly; a bundle carries it to another store; a plain run has none.

Private imports (OUTCOME_COLUMNS, create_version, forget_checked, get_engine, metadata_for):
units tested as such, which no public module exports.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest
from sqlalchemy import create_engine, insert, inspect

from groupchat_core import Agent, GroupChat, bundle_json, import_bundle
from groupchat_core.outcomes import Task
from groupchat_core.store import SCHEMA_VERSION, RunStore, dispose_engines
from groupchat_core.store._connect import get_engine
from groupchat_core.store._migrations import OUTCOME_COLUMNS, create_version, forget_checked
from groupchat_core.store._schema import metadata_for
from groupchat_core.testing import ScriptedBids
from tests.store.test_store_migrations import SPEC  # the same old run spec

TASK = Task(id="q7", prompt="What is 6*7?", answer="42", scorer="numeric", answer_from="vote")


pytestmark = pytest.mark.usefixtures("fresh_engines")


def _v8_store(url: str) -> None:
    engine = get_engine(url)
    create_version(engine, 8)
    t = metadata_for(8).tables
    with engine.begin() as conn:
        conn.execute(insert(t["runs"]).values(
            run_id="old-run", name="old", task="Plan it.", status="finished",
            stop_reason="max_loops", spec_json=json.dumps(SPEC), agents="A, B", threshold=0.5,
            recency_penalty=0.3, recency_window=1, max_loops=2,
            started_at="2025-01-01T00:00:00+00:00", ended_at="2025-01-01T00:00:01+00:00"))
        conn.execute(insert(t["messages"]), [
            {"run_id": "old-run", "position": 0, "turn": 0, "role": "User",
             "content": "Plan it.", "timestamp": "2025-01-01T00:00:00+00:00", "score": None}])
    dispose_engines()
    forget_checked()


def _columns(url: str) -> set[str]:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return {c["name"] for c in inspect(conn).get_columns("runs")}
    finally:
        engine.dispose()


def _scored_run(store: RunStore) -> GroupChat:
    script = ScriptedBids({"A": [(0.9, "It is 41."), (0.2, ""), (0.1, "")],
                           "B": [(0.3, ""), (0.8, "I get 42."), (0.1, "")]})
    chat = GroupChat(agents=[Agent(agent_name=n, model_name=script.model_name) for n in "AB"],
                     max_loops=3)
    store.attach(chat)
    chat.run(TASK)
    script.close()
    return chat


def test_a_v8_store_is_upgraded_to_v9_keeping_its_runs(store_url):
    _v8_store(store_url)
    assert not set(OUTCOME_COLUMNS) & _columns(store_url)

    store = RunStore(store_url)

    assert SCHEMA_VERSION >= 9  # later versions keep the outcome columns
    assert set(OUTCOME_COLUMNS) <= _columns(store_url)
    old = store.load_run("old-run")
    assert old.task == "Plan it." and old.outcome is None
    listed = store.list_runs()
    assert listed[["run_id", "task_id", "correct"]].values.tolist() == [["old-run", None, None]]
    chat = _scored_run(store)  # the new columns work on the upgraded store
    assert store.load_run(chat.last_run.run_id).outcome == chat.last_run.outcome


def test_a_scored_run_reads_back_its_outcome_and_a_bundle_carries_it(store, new_database):
    chat = _scored_run(store)
    outcome = chat.last_run.outcome
    assert outcome is not None
    assert outcome.votes == {"A": "41", "B": "42"} and outcome.answer == "41"  # tie: A first
    assert outcome.correct is False
    assert store.load_run(chat.last_run.run_id) == chat.last_run
    info = store.run_info(chat.last_run.run_id)
    assert (info["task_id"], info["answer"], info["correct"], info["score"], info["scorer"]) == (
        "q7", "41", False, 0.0, "numeric")

    text = bundle_json(store, chat.last_run.run_id)
    assert json.loads(text)["outcome"] == outcome.model_dump()
    listed = store.list_runs()
    assert listed["models"].tolist() == [(chat.agents[0].model_name,) * 2]
    assert len(pd.util.hash_pandas_object(listed)) == 1  # hashable: the dashboard caches it
    other = RunStore(new_database())
    run_id = import_bundle(other, text)
    assert other.load_run(run_id).outcome == outcome
    assert other.list_runs()["correct"].tolist() == [False]


def test_a_plain_run_has_no_outcome_anywhere(store):
    script = ScriptedBids({"A": [(0.9, "42")], "B": [(0.1, "")]})
    chat = GroupChat(agents=[Agent(agent_name=n, model_name=script.model_name) for n in "AB"],
                     max_loops=2)
    store.attach(chat)
    chat.run("What is 6*7?")
    script.close()
    assert store.load_run(chat.last_run.run_id).outcome is None
    assert "outcome" not in json.loads(bundle_json(store, chat.last_run.run_id))
    assert store.run_info(chat.last_run.run_id)["outcome_json"] is None


def test_a_bundle_cannot_carry_an_impossible_outcome(store):
    from groupchat_core import ConfigError

    chat = _scored_run(store)
    bundle = json.loads(bundle_json(store, chat.last_run.run_id))
    for bad in ({"score": 5.0}, {"scorer": "vibes"}, {"extra": 1}):
        forged = {**bundle, "outcome": {**bundle["outcome"], **bad}}
        with pytest.raises(ConfigError) as err:
            import_bundle(store, forged)
        assert "outcome" in str(err.value) and "\n" not in str(err.value)
