"""Portable files: run bundles (exact round trip, saying which code wrote them), bid CSV, Markdown
transcripts, agent files.

Hostile input (unknown fields, wrong types, keys, object-building YAML tags, aliases, huge or
deep files) is refused with one clear error and changes nothing. Tests taking `store` and
`other_store` run on SQLite and on PostgreSQL (tests/conftest.py).

Private imports (`exports._bundles`): units or test hooks with no public name; everything public
comes from the public API.
"""

from __future__ import annotations

import copy
import io
import json

import pandas as pd
import pytest

from groupchat_core import (
    Agent,
    ConfigError,
    GroupChat,
    StoreError,
    app_version,
    bids_csv,
    bundle_json,
    dump_agents,
    import_bundle,
    litellm_version,
    load_agents_text,
    transcript_markdown,
)
from groupchat_core.exports._bundle_model import MAX_BUNDLE_BYTES, BundleRun
from groupchat_core.exports._bundles import export_bundle, read_bundle
from groupchat_core.store import RUN_STATUSES, SCHEMA_VERSION, RunStore
from groupchat_core.testing import ScriptedBids
from tests.helpers.scripted_trio import trio_script

pytestmark = pytest.mark.usefixtures("fresh_engines")


def recorded_run(store: RunStore, script: dict | None = None, **kwargs) -> str:
    script = script or trio_script()
    fake = ScriptedBids(script)
    agents = [Agent(agent_name=n, model_name=fake.model_name, system_prompt=f"I am {n}.")
              for n in script]
    chat = GroupChat(name="bundle-test", agents=agents, max_loops=10, **kwargs)
    store.attach(chat)
    chat.run("Debate the plan.")
    return chat.last_run.run_id


def _row_counts(store: RunStore) -> tuple[int, int, int, int]:
    return (len(store.list_runs()), len(store.messages()), len(store.bids()), len(store.turns()))


def test_a_bundle_imported_elsewhere_reproduces_the_run_exactly(store, other_store):
    run_id = recorded_run(store)
    store.set_tags(run_id, ["baseline"])
    store.set_notes(run_id, "first try")
    data = export_bundle(store, run_id)
    assert data["format"] == "groupchat-run" and data["schema_version"] == 4
    assert data["run"]["task"] == "Debate the plan." and len(data["bids"]) == 9

    assert import_bundle(other_store, json.loads(json.dumps(data))) == run_id

    assert other_store.load_run(run_id) == store.load_run(run_id)
    again = export_bundle(other_store, run_id)
    assert {**again, "exported_at": None} == {**data, "exported_at": None}
    mine, theirs = store.run_info(run_id), other_store.run_info(run_id)
    for key in ("status", "stop_reason", "started_at", "ended_at", "tags", "notes", "spec"):
        assert mine[key] == theirs[key]
    pd.testing.assert_frame_equal(other_store.bids(run_id), store.bids(run_id))


def test_bundle_text_round_trip_and_a_second_import_is_refused(store, other_store):
    run_id = recorded_run(store)
    text = bundle_json(store, run_id)
    import_bundle(other_store, text)
    before = _row_counts(other_store)
    with pytest.raises(StoreError, match="already in the store"):
        import_bundle(other_store, text)
    assert _row_counts(other_store) == before


def test_a_bundle_never_holds_a_key(store):
    fake = ScriptedBids({"A": [(0.1, "")], "B": [(0.1, "")]})
    agents = [Agent(agent_name=n, model_name=fake.model_name, api_key="sk-secret-bundle-123")
              for n in "AB"]
    chat = GroupChat(agents=agents)
    store.attach(chat)
    chat.run("t")
    text = bundle_json(store, chat.last_run.run_id)
    assert "sk-secret-bundle" not in text and "api_key" not in text


def test_a_run_exported_while_running_imports_as_interrupted(store, other_store):
    data = export_bundle(store, recorded_run(store))
    data["run"]["status"] = "running"
    run_id = import_bundle(other_store, data)
    assert other_store.run_info(run_id)["status"] == "interrupted"


# --- `written_by`: the app, litellm and store schema versions; bundles from before 0.2.0,
# without it, still import; a malformed one is one clear error


def test_a_bundle_records_the_code_that_wrote_it(sqlite_store):
    data = export_bundle(sqlite_store, recorded_run(sqlite_store))
    assert data["written_by"] == {"app_version": app_version(),
                                  "litellm_version": litellm_version(),
                                  "store_schema_version": SCHEMA_VERSION}
    assert read_bundle(json.dumps(data)).written_by.app_version == "0.2.0"


def test_a_bundle_from_before_written_by_still_imports(sqlite_store, tmp_path):
    run_id = recorded_run(sqlite_store)
    old = export_bundle(sqlite_store, run_id)
    del old["written_by"]
    other = RunStore(f"sqlite:///{tmp_path}/b.db")
    assert import_bundle(other, json.dumps(old)) == run_id
    assert other.load_run(run_id) == sqlite_store.load_run(run_id)


@pytest.mark.parametrize(("written_by", "message"), [
    ({"app_version": "0.2.0", "litellm_version": "1", "store_schema_version": 5, "x": 1},
     "written_by.x"),
    ({"app_version": "", "litellm_version": "1", "store_schema_version": 5},
     "written_by.app_version"),
    ({"app_version": "0.2.0", "litellm_version": "1", "store_schema_version": "five"},
     "written_by.store_schema_version"),
    ("0.2.0", "written_by"),
])
def test_a_malformed_written_by_is_one_clear_error(sqlite_store, written_by, message):
    data = {**export_bundle(sqlite_store, recorded_run(sqlite_store)), "written_by": written_by}
    with pytest.raises(ConfigError, match=message) as error:
        read_bundle(json.dumps(data), "old.json")
    assert str(error.value).count("\n") == 0


def test_bundle_run_statuses_match_the_store():
    assert set(BundleRun.model_fields["status"].annotation.__args__) == set(RUN_STATUSES)


def _mutations():
    def set_path(path, value):
        def mutate(d):
            *parents, last = path
            for p in parents:
                d = d[p]
            d[last] = value
        return mutate

    return {
        "unknown top-level field": (set_path(["extra"], 1), "extra: unknown key"),
        "unknown bid field": (set_path(["bids", 0, "mood"], "x"), "bids.0.mood: unknown key"),
        "wrong type": (set_path(["bids", 0, "score"], "high"), "bids.0.score"),
        "api_key in an agent": (set_path(["spec", "agents", 0, "api_key"], "sk-x"),
                                r"secret-like field 'spec\.agents\[0\]\.api_key'"),
        "key hidden in a tool": (set_path(["spec", "agents", 0, "tools_list_dictionary"],
                                          [{"auth": {"OpenAI-API-Key": "x"}}]), "secret-like"),
        "password": (set_path(["run", "password"], "x"), r"secret-like field 'run\.password'"),
        "bad run id": (set_path(["run", "run_id"], "../../etc/passwd"), "run.run_id"),
        "bad status": (set_path(["run", "status"], "exploded"), "run.status"),
        "bad time": (set_path(["run", "started_at"], "yesterday"), "ISO-8601"),
        "future version": (set_path(["schema_version"], 5), "not supported"),
        "wrong format": (set_path(["format"], "something-else"), "format"),
        "unknown agent": (set_path(["bids", 0, "agent"], "Mallory"), "does not match"),
        "orphan bid": (set_path(["bids", 0, "turn"], 99), "has no turn row"),
        "orphan message": (set_path(["messages", 1, "turn"], 42), "belong to a recorded turn"),
        "spec unknown key": (set_path(["spec", "exec"], "rm -rf /"),
                             "bundle spec: exec: unknown key"),
    }


def test_a_hostile_or_broken_bundle_is_refused_and_changes_nothing(store, other_store, subtests):
    """One recorded run for every case, each case a subtest on a fresh copy of its bundle."""
    recorded = export_bundle(store, recorded_run(store))
    for case, (mutate, message) in _mutations().items():
        with subtests.test(case):
            data = copy.deepcopy(recorded)
            mutate(data)
            before = _row_counts(other_store)
            with pytest.raises(ConfigError, match=message) as caught:
                import_bundle(other_store, json.dumps(data))
            assert "sk-x" not in str(caught.value)
            assert "\n" not in str(caught.value)
            assert _row_counts(other_store) == before


@pytest.mark.parametrize(("text", "message"), [
    ('{"a": NaN}', "NaN is not valid JSON"),
    ('{"a": 1e999}', "out of range"),
    ("[" * 100_000 + "]" * 100_000, "nested"),
    ('{"a":' * 100 + "1" + "}" * 100, "nested more than 64"),
    ("[1, 2]", "must be a JSON object"),
    ("{not json", "not valid JSON or YAML"),
    (b"\xff\xfe{}", "not UTF-8"),
])
def test_malformed_bundle_text_is_one_clear_error(text, message):
    with pytest.raises(ConfigError, match=message):
        read_bundle(text)


def test_an_oversized_bundle_is_refused_before_parsing():
    with pytest.raises(ConfigError, match="over the .*-byte limit"):
        read_bundle(" " * (MAX_BUNDLE_BYTES + 1))


def test_bids_csv_has_the_spec_columns_and_defuses_formulas(store):
    run_id = recorded_run(store, {"A": [(0.9, "=HYPERLINK(\"http://x\")"), (0.1, "")],
                                  "B": [(0.2, "+1"), (0.1, "")]})
    frame = pd.read_csv(io.StringIO(bids_csv(store, run_id)))
    assert list(frame.columns) == list(store.bids(run_id).columns)
    assert frame["message"].tolist()[:2] == ["'=HYPERLINK(\"http://x\")", "'+1"]
    assert frame["score"].tolist() == [0.9, 0.2, 0.1, 0.1]


def test_the_markdown_transcript_shows_scores_runner_up_and_is_inert(store):
    run_id = recorded_run(store, {
        "Alice": [(0.9, "Look: ![x](http://evil.example/p.png) <script>alert(1)</script>"),
                  (0.3, "")],
        "Bob": [(0.7, "B1"), (0.2, "")],
    })
    md = transcript_markdown(store, run_id)
    assert "### Turn 1: Alice" in md
    assert "score 0.90, adjusted 0.90; runner-up Bob 0.70, margin 0.20" in md
    assert "### Turn 2: nobody spoke" in md and "lull" in md
    assert "![x]" not in md and "!\\[x]" in md
    assert "<script>" not in md and "&lt;script&gt;" in md
    assert f"- Run: `{run_id}`" in md and "Status: finished (stop reason: lull)" in md


# --- agent files -----------------------------------------------------------------------------

AGENTS = [Agent(agent_name="Critic", system_prompt="Find flaws.", model_name="sim/contrarian"),
          Agent(agent_name="Fan", model_name="gpt-4o-mini", temperature=0.9)]


@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_agent_files_round_trip_without_keys(fmt):
    keyed = [a.model_copy(update={"api_key": "sk-agent-file-secret"}) for a in AGENTS]
    text = dump_agents(keyed, fmt)
    assert "sk-agent-file" not in text and "schema_version" in text
    assert load_agents_text(text) == AGENTS


@pytest.mark.parametrize(("text", "message"), [
    ("schema_version: 1\nagents:\n- agent_name: A\n  api_key: sk-1\n", "secret-like"),
    ("schema_version: 1\nagents:\n- agent_name: A\n  colour: red\n", "unknown key"),
    ("schema_version: 1\nagents:\n- agent_name: A\n  temperature: hot\n", "temperature"),
    ("schema_version: 1\nagents: []\n", "agents"),
    ("schema_version: 7\nagents:\n- agent_name: A\n", "not supported"),
    ("agents:\n- agent_name: A\n", "schema_version"),
    ("schema_version: 1\nagents:\n- agent_name: A\n- agent_name: A\n", "duplicate"),
    ("- just\n- a list\n", "must be a mapping"),
    ("a: &x [1, 2]\nb: *x\n", "aliases are not allowed"),
    ("schema_version: 1\nagents:\n- agent_name: A\n  litellm_kwargs: {api_base_key: k}\n",
     "secret-like|litellm_kwargs"),
])
def test_bad_agent_files_are_one_clear_error(text, message):
    with pytest.raises(ConfigError, match=message):
        load_agents_text(text)


def test_yaml_tags_that_build_objects_are_never_run(tmp_path):
    marker = tmp_path / "pwned"
    hostile = (f"schema_version: 1\nagents:\n- agent_name: !!python/object/apply:os.system "
               f"['touch {marker}']\n")
    with pytest.raises(ConfigError, match="not valid JSON or YAML.*python/object"):
        load_agents_text(hostile)
    assert not marker.exists()


def test_a_billion_laughs_yaml_is_refused_quickly():
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 9)]
    with pytest.raises(ConfigError, match="aliases"):
        load_agents_text("\n".join(lines))
