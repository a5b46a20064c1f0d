"""Schema versions: a store made by an older schema is upgraded in place, keeping its runs; a
failed upgrade changes nothing; stores from newer code or other programs are refused. Then each
version's new columns, written by new runs, sweeps and bundles, and read back exactly:
v4 cell claims, v6 owners and code versions, v9 outcomes, v11 people and picks, v12 cached calls
and selector reasons, v13 unknown costs.

Each test runs on SQLite and on PostgreSQL (the `store_url` / `store` fixtures, tests/conftest.py).

Private imports (`store._connect`, `store._migrations`, `store._schema`, OUTCOME_COLUMNS): units
or test hooks with no public name; everything public comes from the public API.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pandas as pd
import pytest
from sqlalchemy import create_engine, insert, inspect, select, update

from groupchat_core import (
    Agent,
    ConfigError,
    GroupChat,
    Human,
    HumanAction,
    HumanPrompt,
    Pick,
    SetBid,
    StoreError,
    app_version,
    bundle_json,
    format_cost,
    import_bundle,
    litellm_version,
)
from groupchat_core.outcomes import Task
from groupchat_core.store import SCHEMA_VERSION, RunStore, dispose_engines
from groupchat_core.store._connect import get_engine
from groupchat_core.store._migrations import OUTCOME_COLUMNS, create_version, forget_checked
from groupchat_core.store._schema import metadata_for, schema_version
from groupchat_core.sweeps import SweepSpec, run_sweep
from groupchat_core.testing import ScriptedBids
from groupchat_ui.kit.presets import DEBATE_TRIO
from tests.helpers.stores import release_store_engines, table_columns

SPEC = {"name": "old", "description": "d", "max_loops": 5, "threshold": 0.5,
        "recency_penalty": 0.3, "recency_window": 1, "idle_timeout": 8.0,
        "output_type": "str-all-except-first", "verbose": False, "auto_equip": True,
        "bid_prompt": None, "seed": 0, "bid_timeout": 120.0, "batch_concurrency": 1,
        "schema_version": 1, "agents": [{"agent_name": "A", "model_name": "sim/eager"},
                                        {"agent_name": "B", "model_name": "sim/eager"}]}
# A finished run's row as every schema version has it (each builder adds its version's columns).
OLD_RUN = {"name": "old", "task": "t", "status": "finished", "stop_reason": "max_loops",
           "spec_json": json.dumps(SPEC), "agents": "A, B", "threshold": 0.5,
           "recency_penalty": 0.3, "recency_window": 1, "max_loops": 2,
           "started_at": "2025-01-01T00:00:00+00:00", "ended_at": "2025-01-01T00:00:01+00:00"}
TASK_MESSAGE = {"position": 0, "turn": 0, "role": "User", "content": "Plan it.",
                "timestamp": "2025-01-01T00:00:00+00:00", "score": None}


pytestmark = pytest.mark.usefixtures("fresh_engines")


def _old_store(url: str, version: int, **rows: list[dict]) -> None:
    """A store as schema `version` wrote it, holding `rows` (by table, inserted in that order)."""
    engine = get_engine(url)
    create_version(engine, version)
    tables = metadata_for(version).tables
    with engine.begin() as conn:
        for table, values in rows.items():
            conn.execute(insert(tables[table]), values)
    release_store_engines()


def _v1_file(url: str) -> None:
    """A store written by schema version 1, holding one finished run with a two-agent turn."""
    bid = {"run_id": "old-run", "turn": 1, "score": 0.9, "adjusted": 0.9, "penalized": False,
           "eligible": True, "message": "hello", "latency_ms": 1.5, "prompt_tokens": None,
           "completion_tokens": None, "cost_usd": None, "path": "simulation", "error": None,
           "calls": 1}
    _old_store(
        url, 1,
        runs=[{**OLD_RUN, "run_id": "old-run", "task": "Plan it.", "total_calls": 2}],
        run_agents=[{"run_id": "old-run", "position": i, "agent": n, "model_name": "sim/eager"}
                    for i, n in enumerate("AB")],
        messages=[{**TASK_MESSAGE, "run_id": "old-run"},
                  {"run_id": "old-run", "position": 1, "turn": 1, "role": "A",
                   "content": "hello", "timestamp": "2025-01-01T00:00:01+00:00", "score": 0.9}],
        bids=[{**bid, "position": 0, "agent": "A", "winner": True},
              {**bid, "position": 1, "agent": "B", "winner": False, "score": 0.2,
               "adjusted": 0.2, "eligible": False, "message": ""}],
        turns=[{"run_id": "old-run", "turn": 1, "winner": "A", "winning_adjusted": 0.9,
                "runner_up_adjusted": None, "margin": None, "lull": False,
                "reason": "highest_bid", "penalty_changed_winner": False, "failed_bids": 0}])


def _columns_and_indexes(url: str) -> tuple[list[str], list[str]]:
    """The runs table's columns and indexes, read on a connection of its own."""
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            inspector = inspect(conn)
            return ([c["name"] for c in inspector.get_columns("runs")],
                    [i["name"] for i in inspector.get_indexes("runs")])
    finally:
        engine.dispose()


def _agent(name: str, role: str = "") -> Agent:
    return Agent(agent_name=name, system_prompt=role, model_name="sim/eager")


def _version(url: str) -> int:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return conn.execute(select(schema_version.c.version)).scalar()
    finally:
        engine.dispose()


def test_a_version_1_store_is_upgraded_in_place_and_keeps_its_runs(store_url):
    _v1_file(store_url)
    columns, indexes = _columns_and_indexes(store_url)
    assert "tags" not in columns and "ix_runs_started_at" not in indexes

    store = RunStore(store_url)

    with store.read("test") as conn:
        assert conn.execute(select(schema_version.c.version)).scalar() == SCHEMA_VERSION == 13
    columns, indexes = _columns_and_indexes(store_url)
    assert {"tags", "notes"} <= set(columns) and "ix_runs_started_at" in indexes
    record = store.load_run("old-run")
    assert [m.content for m in record.messages] == ["Plan it.", "hello"]
    assert [(b.agent, b.winner) for b in record.bids] == [("A", True), ("B", False)]
    assert record.turns[0].winner == "A" and record.stop_reason == "max_loops"
    assert store.list_runs()[["run_id", "tags", "notes", "turns"]].values.tolist() == [
        ["old-run", "", "", 1]]
    store.set_tags("old-run", ["from-v1"])  # the new columns work on upgraded rows
    assert store.list_runs(tag="from-v1")["run_id"].tolist() == ["old-run"]
    release_store_engines()
    assert RunStore(store_url).load_run("old-run") == record  # reopening changes nothing


def test_a_failed_upgrade_is_rolled_back_whole_ddl_included(store_url, monkeypatch):
    from groupchat_core.store import _migrations as migrations

    _v1_file(store_url)

    def broken(conn):
        migrations._v1_to_v2(conn)
        raise RuntimeError("disk on fire")

    monkeypatch.setitem(migrations.STEPS, 1, broken)
    with pytest.raises(RuntimeError, match="disk on fire"):
        RunStore(store_url)
    dispose_engines()
    assert _version(store_url) == 1
    columns, indexes = _columns_and_indexes(store_url)
    assert "tags" not in columns and "ix_runs_started_at" not in indexes  # transactional DDL
    monkeypatch.setitem(migrations.STEPS, 1, migrations._v1_to_v2)
    forget_checked()
    assert RunStore(store_url).load_run("old-run").task == "Plan it."


def test_a_store_from_newer_code_is_refused(store_url):
    RunStore(store_url)
    with get_engine(store_url).begin() as conn:
        conn.execute(schema_version.update().values(version=SCHEMA_VERSION + 1))
    forget_checked()
    with pytest.raises(StoreError, match="newer than this code"):
        RunStore(store_url)


def test_a_database_of_another_program_is_refused(new_database):
    foreign = new_database()
    engine = create_engine(foreign)
    with engine.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE runs (id integer)")
    engine.dispose()
    with pytest.raises(StoreError, match="not a GroupChat Lab store"):
        RunStore(foreign)


# --- v4: sweeps.owned_at and sweep_cells (cell claims) ------------------------------------------


def test_a_version_3_store_gets_cell_claims_and_agent_positions_keeping_its_agents(store_url):
    """v4 adds sweeps.owned_at and sweep_cells: every cell with a finished run gets a
    `finished` claim (the latest run, when an old double resume left two), so no finished cell
    can be claimed again; other cells stay claimable. And agents.position, the saved order of
    agents (issue 11 §1: "the agent order resets on reload"): old agents are kept, by name."""
    run = {"name": "old", "task": "t", "spec_json": json.dumps(SPEC), "agents": "A, B",
           "threshold": 0.5, "recency_penalty": 0.3, "recency_window": 1, "max_loops": 2,
           "sweep_id": "old-sweep"}
    _old_store(store_url, 3, sweeps=[{
        "sweep_id": "old-sweep", "name": "old", "grid_json": "{}", "status": "stopped_budget",
        "created_at": "2025-01-01T00:00:00+00:00", "pid": 1, "hostname": "h",
        "proc_start": "9"}], runs=[
        {**run, "run_id": "c1-first", "cell": "c1", "status": "finished",
         "started_at": "2025-01-01T00:00:01+00:00", "ended_at": "2025-01-01T00:00:02+00:00"},
        {**run, "run_id": "c1-again", "cell": "c1", "status": "finished",
         "started_at": "2025-01-01T00:00:03+00:00", "ended_at": "2025-01-01T00:00:04+00:00"},
        {**run, "run_id": "c2-run", "cell": "c2", "status": "finished",
         "started_at": "2025-01-01T00:00:01+00:00", "ended_at": "2025-01-01T00:00:05+00:00"},
        {**run, "run_id": "c3-run", "cell": "c3", "status": "interrupted",
         "started_at": "2025-01-01T00:00:01+00:00", "ended_at": None},
        {**run, "run_id": "lone", "cell": None, "sweep_id": None, "status": "finished",
         "started_at": "2025-01-01T00:00:01+00:00", "ended_at": None}], agents=[
        {"name": name, "spec_json": json.dumps(_agent(name, f"{name} role").to_spec()),
         "created_at": "2026-01-01T00:00:00+00:00", "updated_at": "2026-01-01T00:00:00+00:00"}
        for name in ("Beta", "Alpha")])
    assert "position" not in table_columns(store_url, "agents")

    store = RunStore(store_url)
    assert _version(store_url) == SCHEMA_VERSION == 13
    assert [a.agent_name for a in store.list_agents()] == ["Alpha", "Beta"]  # no position yet
    assert store.get_agent("Beta").system_prompt == "Beta role"
    store.save_agent(_agent("Gamma"))
    store.set_agent_order(["Gamma", "Beta"])
    release_store_engines()
    assert [a.agent_name for a in RunStore(store_url).list_agents()] == ["Gamma", "Beta", "Alpha"]
    claims = store.cell_claims("old-sweep").set_index("cell")
    assert claims["state"].to_dict() == {"c1": "finished", "c2": "finished"}
    assert claims["run_id"].to_dict() == {"c1": "c1-again", "c2": "c2-run"}
    sweep = store.get_sweep("old-sweep")
    assert (sweep["status"], sweep["owned_at"], sweep["pid"]) == ("stopped_budget", None, 1)
    assert not store.claim_cell("old-sweep", "c1").claimed  # finished cells are never rerun
    assert store.claim_cell("old-sweep", "c3").claimed  # the interrupted one is run again
    assert store.sweep_owner("old-sweep") is None
    store.reopen_sweep("old-sweep")  # the new owner columns work on the upgraded row
    assert store.get_sweep("old-sweep")["owned_at"] is not None
    store.delete_run("c2-run")  # its claim loses the run: the cell may be run again
    assert store.claim_cell("old-sweep", "c2").claimed


# --- v6: who owns a run or a sweep, and which code recorded it ----------------------------------
#
# Old runs and sweeps get NULL owners; new ones record the owner the caller names and the app and
# litellm versions; a sweep's runs inherit its owner; a bundle cannot say who owns its run.

OWNER_COLUMNS = ("owner", "owner_name", "app_version", "litellm_version")


def _chat() -> GroupChat:
    settings = dict(DEBATE_TRIO.settings)
    return GroupChat(name="own", agents=DEBATE_TRIO.build_agents(latency_s=0.0), **settings)


def test_a_v5_store_is_upgraded_to_v6_keeping_runs_sweeps_and_agents(store_url):
    _old_store(store_url, 5, sweeps=[{
        "sweep_id": "old-sweep", "name": "old", "grid_json": "{}", "status": "finished",
        "created_at": "2025-01-01T00:00:00+00:00", "pid": 1, "hostname": "h"}], runs=[{
            **OLD_RUN, "run_id": "old-run", "task": "Plan it.", "sweep_id": "old-sweep",
            "cell": "c1", "total_calls": 2, "tags": "kept", "notes": "n"}],
        messages=[{**TASK_MESSAGE, "run_id": "old-run"}], agents=[{
            "name": "A", "spec_json": json.dumps(SPEC["agents"][0]), "created_at": "x",
            "updated_at": "x", "position": 0}])
    assert not set(OWNER_COLUMNS) & table_columns(store_url, "runs")

    store = RunStore(store_url)

    assert SCHEMA_VERSION >= 6  # later versions keep these columns
    assert set(OWNER_COLUMNS) <= table_columns(store_url, "runs")
    assert set(OWNER_COLUMNS) <= table_columns(store_url, "sweeps")
    info = store.run_info("old-run")
    assert (info["task"], info["tags"], info["notes"], info["sweep_id"]) == (
        "Plan it.", "kept", "n", "old-sweep")
    assert all(info[c] is None for c in OWNER_COLUMNS)  # nobody knows who started an old run
    sweep = store.get_sweep("old-sweep")
    assert sweep["status"] == "finished" and all(sweep[c] is None for c in OWNER_COLUMNS)
    assert [a.agent_name for a in store.list_agents()] == ["A"]
    listed = store.list_runs()
    assert listed[["run_id", "owner", "owner_name"]].values.tolist() == [["old-run", None, None]]
    store.set_owner("old-run", "alice@example.org", "Alice")  # the new columns work
    assert store.run_info("old-run")["owner"] == "alice@example.org"


def test_a_run_records_its_owner_and_the_code_that_recorded_it(store):
    chat = _chat()
    store.attach(chat, owner="alice@example.org", owner_name="Alice Liddell")
    chat.run(DEBATE_TRIO.task)
    mine = store.run_info(chat.last_run.run_id)
    assert (mine["owner"], mine["owner_name"]) == ("alice@example.org", "Alice Liddell")
    assert (mine["app_version"], mine["litellm_version"]) == (app_version(), litellm_version())

    anonymous = _chat()
    store.attach(anonymous)  # a script that names no owner
    anonymous.run(DEBATE_TRIO.task)
    info = store.run_info(anonymous.last_run.run_id)
    assert info["owner"] is None and info["app_version"] == app_version()


def test_a_sweep_and_its_runs_belong_to_whoever_started_it(store):
    spec = SweepSpec.model_validate({
        "name": "owned", "tasks": ["Plan it."], "concurrency": 1,
        "base": {"max_loops": 2, "agents": [a.to_spec() for a in DEBATE_TRIO.build_agents(0.0)]},
        "grid": {"threshold": [0.3, 0.6]}})
    outcome = run_sweep(spec, store, owner="bob@example.org", owner_name="Bob")
    sweep = store.get_sweep(outcome.sweep_id)
    assert (sweep["owner"], sweep["owner_name"]) == ("bob@example.org", "Bob")
    assert sweep["app_version"] == app_version()
    runs = store.list_runs(sweep_id=outcome.sweep_id)
    assert len(runs) == 2 and set(runs["owner"]) == {"bob@example.org"}
    assert set(runs["owner_name"]) == {"Bob"}


def test_a_bundle_says_who_owned_the_run_but_cannot_make_it_anyones(store, new_database):
    """Issue 19 (ownership everywhere): exports carry the owner, as information; an import
    never takes it (the importer owns what it imports), so a file cannot forge ownership."""
    chat = _chat()
    store.attach(chat, owner="alice@example.org", owner_name="Alice")
    chat.run(DEBATE_TRIO.task)
    bundle = json.loads(bundle_json(store, chat.last_run.run_id))
    assert (bundle["run"]["owner"], bundle["run"]["owner_name"]) == (
        "alice@example.org", "Alice")
    other = RunStore(new_database())
    run = dict(bundle["run"], owner="mallory", owner_name="Mallory")
    import_bundle(other, {**bundle, "run": run})
    assert other.run_info(bundle["run"]["run_id"])["owner"] is None  # not Mallory, not Alice
    other.delete_run(bundle["run"]["run_id"])
    # the store itself ignores owner fields it is handed with an imported run
    other.import_run({**bundle["run"], "owner": "mallory"}, bundle["spec"],
                     message_rows=bundle["messages"], bid_rows=bundle["bids"],
                     turn_rows=bundle["turns"])
    assert other.run_info(bundle["run"]["run_id"])["owner"] is None


def test_an_owner_that_is_not_a_short_printable_text_is_refused(store, subtests):
    for bad in ["", "   ", "x" * 321, "evil\nname", "\x1b[31m"]:
        with subtests.test(repr(bad)):
            with pytest.raises(StoreError, match="owner must be 1-320 printable characters"):
                store.recorder(_chat(), owner=bad)
            with pytest.raises(StoreError, match="owner must be"):
                store.create_sweep("s", {}, owner=bad)


# --- v9: a scored task's outcome on its run (issue 20 item 1) -----------------------------------
#
# Old runs have no outcome; a scored run records its outcome in the row and reads it back
# exactly; a bundle carries it to another store; a plain run has none.

TASK = Task(id="q7", prompt="What is 6*7?", answer="42", scorer="numeric", answer_from="vote")


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
    _old_store(store_url, 8, runs=[{**OLD_RUN, "run_id": "old-run", "task": "Plan it."}],
               messages=[{**TASK_MESSAGE, "run_id": "old-run"}])
    assert not set(OUTCOME_COLUMNS) & table_columns(store_url, "runs")

    store = RunStore(store_url)

    assert SCHEMA_VERSION >= 9  # later versions keep the outcome columns
    assert set(OUTCOME_COLUMNS) <= table_columns(store_url, "runs")
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
    chat = _scored_run(store)
    bundle = json.loads(bundle_json(store, chat.last_run.run_id))
    for bad in ({"score": 5.0}, {"scorer": "vibes"}, {"extra": 1}):
        forged = {**bundle, "outcome": {**bundle["outcome"], **bad}}
        with pytest.raises(ConfigError) as err:
            import_bundle(store, forged)
        assert "outcome" in str(err.value) and "\n" not in str(err.value)


# --- v11: people in the room (issue 22): bids.kind, turns.rule_winner, turns.human_pick ----------
#
# Old runs' bids become agents' and their turns had no pick; a run with a person and a person
# choosing the speaker records both and reads them back exactly.


def test_the_v11_upgrade_keeps_old_runs_as_agents_without_picks(store_url: str) -> None:
    _old_store(store_url, 10, runs=[{**OLD_RUN, "run_id": "old", "agents": "A",
                                     "total_calls": 1}], bids=[{
        "run_id": "old", "turn": 1, "position": 0, "agent": "A", "score": 0.9,
        "adjusted": 0.9, "penalized": False, "eligible": True, "winner": True,
        "message": "hi", "latency_ms": 1.0, "path": "tool_call", "error": None,
        "calls": 1, "cached": False, "outcome": "read"}], turns=[{
        "run_id": "old", "turn": 1, "winner": "A", "winning_adjusted": 0.9,
        "runner_up_adjusted": None, "margin": None, "lull": False, "reason": "highest_bid",
        "penalty_changed_winner": False, "failed_bids": 0}])
    assert "kind" not in table_columns(store_url, "bids")
    store = RunStore(store_url)
    assert SCHEMA_VERSION >= 11
    bids, turns = store.bids("old"), store.turns("old")
    assert {"kind"} <= table_columns(store_url, "bids")
    assert {"rule_winner", "human_pick"} <= table_columns(store_url, "turns")
    assert bids["kind"].tolist() == ["agent"]
    assert turns["rule_winner"].isna().all() and turns["human_pick"].isna().all()
    assert store.load_run("old").bids[0].kind == "agent"


@pytest.fixture
def fake() -> Iterator[ScriptedBids]:
    made = ScriptedBids({"A": [(0.9, "a1"), (0.6, "a2")], "B": [(0.7, "b1"), (0.2, "")]},
                        shared=False)
    yield made
    made.close()


def test_people_and_picks_are_stored_and_read_back(store: RunStore, fake: ScriptedBids) -> None:
    async def ann(prompt: HumanPrompt) -> HumanAction | None:
        return SetBid(0.3, "not now") if prompt.phase == "bid" else None

    async def judge(prompt: HumanPrompt) -> HumanAction | None:
        return Pick("B") if prompt.turn == 1 else Pick(None)  # then: the rule's pick

    chat = GroupChat(agents=[Agent(agent_name="A", model_name=fake.model_name),
                             Human("Ann", callback=ann),
                             Agent(agent_name="B", model_name=fake.model_name)],
                     providers=fake.providers, bid_cache=False, max_loops=3,
                     human_selector=Human("Judge", callback=judge), human_window=600,
                     human_post_window=600)
    store.attach(chat)
    chat.run("Plan it.")
    store.flush()
    run_id = chat.last_run.run_id
    bids, turns = store.bids(run_id), store.turns(run_id)
    assert bids["kind"].tolist() == ["agent", "human", "agent"] * 2
    assert bids[bids["kind"] == "human"]["message"].tolist() == ["not now", "not now"]
    assert turns["winner"].tolist() == ["B", "A"]
    assert turns["rule_winner"].tolist() == ["A", "A"]
    assert turns["human_pick"].tolist() == ["B", "A"]
    assert turns["reason"].tolist() == ["human_pick", "highest_bid"]
    loaded = store.load_run(run_id)
    assert [b.kind for b in loaded.bids] == [b.kind for b in chat.last_run.bids]
    assert [(t.rule_winner, t.human_pick) for t in loaded.turns] == [
        (t.rule_winner, t.human_pick) for t in chat.last_run.turns]


# --- v12: bids.cached_calls and turns.selector_reason -------------------------------------------
#
# cached_calls: calls the bid cache answered, so calls_needed counts bid_then_speak's cached
# written call; selector_reason: the selector model's reply. An upgraded cached bid counts the
# one cached call it was counted as before, other bids none, and no turn has a selector reason.


def test_the_v12_upgrade_counts_each_cached_bid_once_and_no_selector_reason(
        store_url: str) -> None:
    bid = {"run_id": "old", "turn": 1, "score": 0.9, "adjusted": 0.9, "penalized": False,
           "eligible": True, "message": "hi", "latency_ms": 1.0, "error": None, "kind": "agent"}
    _old_store(store_url, 11, runs=[{**OLD_RUN, "run_id": "old", "agents": "A,B",
                                     "total_calls": 1}], bids=[
        {**bid, "position": 0, "agent": "A", "winner": True, "path": "simulation",
         "calls": 0, "cached": True, "outcome": "cached"},
        {**bid, "position": 1, "agent": "B", "winner": False, "path": "simulation",
         "calls": 1, "cached": False, "outcome": "read"}], turns=[{
        "run_id": "old", "turn": 1, "winner": "A", "winning_adjusted": 0.9,
        "runner_up_adjusted": 0.9, "margin": 0.0, "lull": False, "reason": "tie_by_order",
        "penalty_changed_winner": False, "failed_bids": 0}])
    assert "cached_calls" not in table_columns(store_url, "bids")
    store = RunStore(store_url)
    assert "cached_calls" in table_columns(store_url, "bids")
    assert "selector_reason" in table_columns(store_url, "turns")
    assert store.bids("old")["cached_calls"].tolist() == [1, 0]
    assert store.turns("old")["selector_reason"].isna().all()
    record = store.load_run("old")
    assert [b.cached_calls for b in record.bids] == [1, 0] and record.calls_needed == 2
    stats = store.cache_stats(["old"]).iloc[0]
    assert (stats["cache_hits"], stats["cached_calls"], stats["calls"]) == (1, 1, 1)


# --- v13: an unknown cost is NULL, not 0, with each run's unpriced bid count (issue 40 §4) -------
#
# So readers take both from the run row instead of re-deriving "unpriced": a run whose calls had
# no price reads "unknown", a partly priced run keeps its partial sum with the count, a simulated
# run stays $0. New runs and bundle imports write the same columns.


def test_the_v13_upgrade_stores_an_unknown_cost_as_null_with_the_unpriced_count(
        store_url: str) -> None:
    bid = {"turn": 1, "score": 0.9, "adjusted": 0.9, "penalized": False, "eligible": True,
           "message": "hi", "latency_ms": 1.0, "error": None, "kind": "agent", "cached": False,
           "outcome": "read", "cached_calls": 0}
    # (run, [(path, calls, cost_usd, cached)] per bid)
    runs = {"local": [("tool_call", 1, None, False), ("tool_call", 1, None, False)],
            "partly": [("tool_call", 1, 0.002, False), ("tool_call", 1, None, False)],
            "sim": [("simulation", 1, None, False), ("simulation", 0, None, True)]}
    _old_store(store_url, 12, runs=[
        {**OLD_RUN, "run_id": run_id, "name": run_id, "agents": "A,B", "total_calls": 2,
         "total_cost_usd": 0.002 * (run_id == "partly")} for run_id in runs], bids=[
        {**bid, "run_id": run_id, "position": i, "agent": "AB"[i], "winner": i == 0,
         "path": path, "calls": calls, "cost_usd": cost, "cached": cached}
        for run_id, bids in runs.items() for i, (path, calls, cost, cached) in enumerate(bids)])
    assert "unpriced_bids" not in table_columns(store_url, "runs")
    store = RunStore(store_url)
    assert SCHEMA_VERSION == 13 and "unpriced_bids" in table_columns(store_url, "runs")
    listed = store.list_runs().set_index("run_id")
    assert listed.loc["local", "unpriced_bids"] == 2
    assert listed.loc["local", "total_cost_usd"] != listed.loc["local", "total_cost_usd"]  # NaN
    assert (listed.loc["partly", "unpriced_bids"], listed.loc["partly", "total_cost_usd"]) == (
        1, 0.002)
    assert (listed.loc["sim", "unpriced_bids"], listed.loc["sim", "total_cost_usd"]) == (0, 0)
    texts = {r: (lambda rec: format_cost(rec.total_cost_usd, rec.unpriced_bids))(
        store.load_run(r)) for r in ("local", "partly", "sim")}
    assert texts == {"local": "unknown", "partly": "$0.0020 + unknown (1 unpriced bid)",
                     "sim": "$0.0000"}
    # the column takes NULL now (SQLite's NOT NULL was removed from the stored definition)
    with get_engine(store_url).begin() as conn:
        conn.execute(update(metadata_for(13).tables["runs"]).values(total_cost_usd=None))


def test_a_new_run_and_an_import_write_null_for_a_cost_nobody_could_price(store: RunStore):
    fake = ScriptedBids({"A": [(0.9, "first")], "B": [(0.1, "")]}, shared=False)
    agents = [Agent(agent_name=n, model_name=fake.model_name) for n in ("A", "B")]
    chat = GroupChat(agents=agents, max_loops=2, providers=fake.providers)
    store.attach(chat)
    chat.run("price this")
    store.flush()
    record = chat.last_run
    assert record is not None
    row = store.list_runs().iloc[0]
    assert (row["unpriced_bids"], row["total_cost_usd"]) == (record.unpriced_bids,
                                                             record.total_cost_usd or 0.0)
    # an imported bundle whose calls had no price reads as unknown, as the engine said
    bundle = json.loads(bundle_json(store, record.run_id))
    for bid in bundle["bids"]:
        bid.update(path="tool_call", calls=1, cost_usd=None, cached=False)
    bundle["run"]["run_id"] = "imported"
    imported = import_bundle(store, json.dumps(bundle))
    loaded = store.load_run(imported)
    assert loaded.total_cost_usd is None and loaded.unpriced_bids == len(bundle["bids"])
