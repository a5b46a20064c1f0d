"""The dashboard's logic without a script run: provider keys, tables the pages show, and the
services the pages call (saving agents, presets, imports, starting recorded runs)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pandas as pd
import pytest
from pydantic import ValidationError

import groupchat_core
from groupchat_core import (
    Agent,
    Bid,
    ChatSpec,
    ConfigError,
    RunRecord,
    Turn,
    dump_agents,
    dump_spec,
)
from groupchat_core.analysis import speaker_metrics
from groupchat_core.store import RunStore
from groupchat_ui.agents import logic as agent_logic
from groupchat_ui.analysis import logic as analysis_logic
from groupchat_ui.kit import metrics, presets, providers
from groupchat_ui.kit.jobs import JobRegistry
from groupchat_ui.run import logic as run_logic
from groupchat_ui.runs import logic as runs_logic
from tests.helpers.app_helpers import wait_for
from tests.helpers.scripted_trio import trio_record

SECRET = "sk-unit-0123456789SECRET"


@pytest.fixture
def record() -> RunRecord:
    """Alice wins, Bob wins (Alice penalised), then a lull on turn 3."""
    return trio_record("Debate.")


# --- providers ----------------------------------------------------------------------------


@pytest.mark.parametrize("model, api_base, need", [
    ("sim/eager", None, (None, True)),
    ("gpt-4o-mini", None, ("OPENAI_API_KEY", True)),
    ("o3-mini", None, ("OPENAI_API_KEY", True)),
    ("anthropic/claude-3-5-haiku-latest", None, ("ANTHROPIC_API_KEY", True)),
    ("claude-3-opus", None, ("ANTHROPIC_API_KEY", True)),
    ("groq/llama-3.1-8b", None, ("GROQ_API_KEY", True)),
    ("ollama/llama3.2", None, (None, True)),
    ("openai/my-model", "http://127.0.0.1:8000/v1", ("OPENAI_API_KEY", True)),
    ("hosted_vllm/my-model", "http://127.0.0.1:8000/v1", (None, True)),
    ("openai/my-model", "https://api.example.com/v1", ("OPENAI_API_KEY", True)),
    ("mystery-model", None, (None, False)),
])
def test_key_need_names_the_providers_variable(model, api_base, need):
    found = providers.key_need(model, api_base)
    assert (found.env, found.known) == need


def test_missing_keys_counts_session_and_environment_keys_and_preflight_lists_them(
        monkeypatch):
    agents = [Agent(agent_name="A", model_name="gpt-4o-mini"),
              Agent(agent_name="B", model_name="anthropic/claude-3"),
              Agent(agent_name="C", model_name="sim/balanced"),
              Agent(agent_name="D", model_name="mystery-model")]
    warnings = providers.missing_keys(agents, {"OPENAI_API_KEY": "k"}, {})
    assert [(w.agent, w.env) for w in warnings] == [("B", "ANTHROPIC_API_KEY"), ("D", None)]
    assert "ANTHROPIC_API_KEY" in warnings[0].text and "Settings" in warnings[0].text
    assert "model string" in warnings[1].text
    assert providers.missing_keys(agents[:2], {}, {"OPENAI_API_KEY": "e",
                                                   "ANTHROPIC_API_KEY": "e"}) == []
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):  # the Run page's preflight
        monkeypatch.delenv(name, raising=False)
    problems, unknown = run_logic.preflight(agents, {}, {})
    assert [p.split("'")[1] for p in problems] == ["A", "B"] and "OPENAI_API_KEY" in problems[0]
    assert len(unknown) == 1 and "D" in unknown[0]
    problems, _ = run_logic.preflight(agents[:1], {"OPENAI_API_KEY": "sk-" + "d" * 30}, {})
    assert problems == []


def test_session_keys_go_on_per_job_copies_for_trusted_endpoints_only(monkeypatch):
    original = Agent(agent_name="A", model_name="gpt-4o-mini")
    hosted = Agent(agent_name="Hosted", model_name="openai/gpt-4o-mini")
    sim = Agent(agent_name="S", model_name="sim/eager")
    official = Agent(agent_name="Official", model_name="openai/x",
                     api_base="https://api.openai.com/v1/")
    hostile = Agent(agent_name="Hostile", model_name="openai/x",
                    api_base="https://api.openai.com.evil.example/v1")
    local = Agent(agent_name="Local", model_name="openai/x", api_base="http://127.0.0.1:8000/v1")
    keys = {"OPENAI_API_KEY": SECRET}
    copies = providers.with_session_keys([original, hosted, sim, official, hostile, local], keys)
    assert [c.secret_key() for c in copies] == [SECRET, SECRET, None, SECRET, None, None]
    assert original.api_key is None  # the saved agent never holds the key
    assert SECRET not in str(copies[0].to_spec()) and SECRET not in repr(copies[0])
    monkeypatch.setenv("GROUPCHAT_TRUSTED_API_BASES", "http://127.0.0.1:8000/v1")
    assert providers.with_session_keys([local], keys)[0].secret_key() == SECRET


def test_a_key_typed_for_one_base_goes_to_that_base_only() -> None:
    mine = Agent(agent_name="Mine", model_name="openai/x", api_base="https://llm.example.org/v1/")
    other = Agent(agent_name="Other", model_name="openai/x",
                  api_base="https://llm.example.org:8443/v1")
    name = providers.endpoint_key_name("https://LLM.example.org/v1")
    assert name == "https://llm.example.org:443/v1"
    copies = providers.with_session_keys([mine, other], {name: SECRET})
    assert [c.secret_key() for c in copies] == [SECRET, None]
    assert providers.endpoint_key_name("https://user@llm.example.org/v1") is None


CONNECTION = "litellm.APIConnectionError: APIConnectionError: OpenAIException - Connection error."


@pytest.mark.parametrize("error, expected", [
    ("AuthenticationError: Incorrect API key provided", "Add OPENAI_API_KEY in Settings"),
    ("ModelCallError: real model calls are blocked (GROUPCHAT_BLOCK_REMOTE_CALLS is set): "
     "agent 'A'", "nothing was sent"),
    ("InternalServerError: OpenAIException - Missing credentials. Please pass an `api_key`",
     "accepts any value"),
    ("NotFoundError: The model `gpt-9` does not exist", "Check the model string 'gpt-4o-mini'"),
    ("BadRequestError: LLM Provider NOT provided. Pass in the LLM provider", "model string"),
    ("BadRequestError: this model does not support tools", "Tool choice mode to json"),
    ("APIConnectionError: Connection refused", "at http://127.0.0.1:1/v1"),
    ("RateLimitError: 429", "in-flight call limit"),
    ("TimeoutError: no bid within 120 s", "timeout"),
    ("ModelCallError: real model calls are blocked (GROUPCHAT_BLOCK_REMOTE_CALLS is set)",
     "blocked"),
    ("Something else", "Check the agent's model string"),
    ("unreadable: reply had no respond call and no JSON bid in its text", "readable bid"),
    ("UntrustedEndpoint: agent 'A' points at untrusted api_base http://x/v1: ... (it answered "
     "AuthenticationError: 401)", "GROUPCHAT_TRUSTED_API_BASES"),  # names the fix in Settings
    # connection advice matches whether an api_base was set
    (CONNECTION, "server at http://127.0.0.1:1/v1"),
])
def test_failure_hint_says_what_to_do(error, expected):
    hint = providers.failure_hint(error, "gpt-4o-mini", "http://127.0.0.1:1/v1")
    assert expected in hint and (not error.startswith("Untrusted") or "Settings" in hint)
    assert not error.startswith("litellm.APIConnection") or "network" not in hint
    if error == CONNECTION:  # without an api_base: the network, no URL to check
        bare = providers.failure_hint(error, "gpt-4o", None)
        assert "network" in bare and "api_base URL" not in bare


def test_model_labels_mark_simulations():
    assert providers.model_label("sim/eager") == "sim/eager (simulated)"
    assert providers.model_label("gpt-4o-mini") == "gpt-4o-mini"
    assert "sim/balanced" in groupchat_core.SIM_MODELS


# --- views --------------------------------------------------------------------------------


def test_reveal_streams_a_new_reply_word_by_word():
    posted = datetime(2026, 1, 1, tzinfo=UTC)
    content = "one two three four five six seven eight nine ten " * 3
    first, done = run_logic.reveal(content, posted.isoformat(), posted)
    assert first == "one" and not done
    later, done = run_logic.reveal(content, posted.isoformat(), posted + timedelta(seconds=1))
    assert len(later.split(" ")) == int(run_logic.WORDS_PER_SECOND) + 1 and not done
    assert content.startswith(later)
    assert run_logic.reveal(content, posted.isoformat(), posted + timedelta(minutes=1)) == (
        content, True)
    assert run_logic.reveal("x", None, posted) == ("x", True)


def test_past_turns_shows_each_turn_newest_first_with_every_bid(record: RunRecord):
    by_turn = {t.turn: [b for b in record.bids if b.turn == t.turn] for t in record.turns}
    table = run_logic.past_turns(record.turns, by_turn, ["Alice", "Bob", "Cara"])
    assert list(table["turn"]) == [3, 2, 1]
    assert list(table["spoke"]) == ["lull", "Bob", "Alice"]
    assert table.iloc[2]["Alice"] == "0.90 ★" and table.iloc[2]["Cara"] == "0.10 silent"
    assert table.iloc[1]["Alice"] == "0.90 → 0.60" and table.iloc[1]["Bob"] == "0.70 ★"
    failed = Bid(turn=1, agent="X", position=0, error="boom", path="none")
    assert run_logic.failures([failed, failed.model_copy(update={"error": "later"})]) == {
        "X": "boom"}


def test_summary_and_metric_cards(record: RunRecord):
    pairs = {label: value for label, value, _ in run_logic.summary(record)}
    assert pairs["Stop reason"] == "lull" and pairs["Turns"] == "3" and pairs["Messages"] == "2"
    assert pairs["Cost"] == "$0.0000" and pairs["Time"].endswith(" s")
    m = speaker_metrics(record.turns_frame(), record.bids_frame(), stop_reason="lull")
    cards = {c[0]: c for c in metrics.metric_cards(m)}
    assert cards["Lull turn"][1] == "3" and cards["Turns"][3] == "lull"
    assert cards["Longest monologue"][1:4:2] == ("1", "Alice")
    assert set(cards) >= {"Speaker entropy", "Evenness", "Gini", "Mean margin",
                          "Penalty flips", "Failed bids"}


def test_comparison_aligns_speakers_by_turn(record: RunRecord):
    turns = record.turns_frame()
    other = turns.copy()
    other.loc[other["turn"] == 2, "winner"] = "Cara"
    aligned = runs_logic.aligned_speakers(turns, other, ("A", "B"))
    assert list(aligned["same"]) == [True, False, True]
    assert list(aligned["A"]) == ["Alice", "Bob", "(lull)"]
    m = speaker_metrics(turns, record.bids_frame())
    table = runs_logic.compare_metrics(m, m, ("A", "B"))
    assert list(table.columns) == ["metric", "A", "B"] and (table["A"] == table["B"]).all()


def test_filter_runs_by_text_and_parameters():
    runs = pd.DataFrame({"name": ["Demo", "Panel"], "task": ["AI?", "Budget"],
                         "threshold": [0.5, 0.7], "max_loops": [10, 30]})
    assert list(runs_logic.filter_runs(runs, text="budget")["name"]) == ["Panel"]
    assert list(runs_logic.filter_runs(runs, threshold=(0.6, 1.0))["name"]) == ["Panel"]
    assert list(runs_logic.filter_runs(runs, max_loops=(1, 20))["name"]) == ["Demo"]


# --- services -----------------------------------------------------------------------------


def test_agent_from_form_values_and_field_errors():
    agent = agent_logic.agent_from_values({
        "agent_name": "  Ada ", "system_prompt": "Maths.", "model_name": "sim/eager",
        "temperature": 0.2, "max_tokens": 100, "api_base": " ", "timeout": 30.0,
        "tool_choice_mode": "", "sim_latency": 0.4})
    assert agent.agent_name == "Ada" and agent.api_base is None
    assert agent.tool_choice_mode is None and agent.litellm_kwargs == {"sim_latency": 0.4}
    remote = agent_logic.agent_from_values({"agent_name": "R", "model_name": "gpt-4o-mini",
                                         "sim_latency": 0.4, "tool_choice_mode": "json"})
    assert remote.litellm_kwargs == {} and remote.tool_choice_mode == "json"
    with pytest.raises(ValidationError) as caught:
        agent_logic.agent_from_values({"agent_name": "", "model_name": "sim/eager",
                                    "temperature": 5.0})
    errors = agent_logic.field_errors(caught.value)
    assert "must not be empty" in errors["agent_name"] and "between 0 and 2" in errors[
        "temperature"]


def test_save_agent_renames_and_refuses_clashes(store: RunStore):
    agent_logic.save_agent(store, Agent(agent_name="Ada"), None, [])
    agent_logic.save_agent(store, Agent(agent_name="Bea"), None, ["Ada"])
    with pytest.raises(ConfigError, match="already exists"):
        agent_logic.save_agent(store, Agent(agent_name="Bea"), None, ["Ada", "Bea"])
    with pytest.raises(ConfigError, match="already exists"):
        agent_logic.save_agent(store, Agent(agent_name="Bea"), "Ada", ["Ada", "Bea"])
    assert agent_logic.save_agent(store, Agent(agent_name="Cy", temperature=1.0), "Ada",
                                  ["Ada", "Bea"]) == "renamed"
    assert [a.agent_name for a in store.list_agents()] == ["Cy", "Bea"]  # Ada's place kept
    assert agent_logic.copy_name("Cy", ["Cy", "Cy (copy)"]) == "Cy (copy 2)"
    assert agent_logic.duplicate_agent(store, "Cy", ["Bea", "Cy"]) == "Cy (copy)"
    assert store.get_agent("Cy (copy)").temperature == 1.0


def test_presets_are_valid_rooms_with_staggered_sim_latency(store: RunStore):
    trio = presets.PRESETS["Debate trio"]
    latencies = [a.litellm_kwargs["sim_latency"] for a in trio.build_agents()]
    assert latencies == sorted(latencies) and latencies[0] == presets.PRESET_LATENCY_S
    assert all(not a.litellm_kwargs for a in trio.build_agents(latency_s=0.0))
    for preset in presets.PRESETS.values():
        assert preset.spec().agents and preset.task
        names = run_logic.load_preset(store, preset)
        assert names == [a[0] for a in preset.agents]
    assert sorted(store.list_presets()) == sorted(presets.PRESETS)
    assert [a.agent_name for a in store.load_preset("Five-expert panel").agents][0] == (
        "Economist")


def test_import_agents_from_an_agents_file_or_a_spec_all_or_nothing(store: RunStore):
    text = dump_agents([Agent(agent_name="A"), Agent(agent_name="B")], "yaml")
    assert agent_logic.import_agents(store, text.encode(), "agents.yaml") == ["A", "B"]
    spec = dump_spec(ChatSpec(agents=[Agent(agent_name="C"), Agent(agent_name="D")]), "json")
    assert agent_logic.import_agents(store, spec, "room.json") == ["C", "D"]
    bad = "schema_version: 1\nagents:\n  - agent_name: E\n  - agent_name: F\n    temperature: 9\n"
    with pytest.raises(ConfigError, match="temperature"):
        agent_logic.import_agents(store, bad, "bad.yaml")
    assert [a.agent_name for a in store.list_agents()] == ["A", "B", "C", "D"]


def test_start_run_records_the_run_and_refuses_a_bad_room(store: RunStore):
    agents = [Agent(agent_name="Ann", model_name="sim/eager"),
              Agent(agent_name="Ben", model_name="sim/balanced")]
    run_id = _run_job(store, agents, {}, {"max_loops": 4, "threshold": 0.3, "name": "unit"})
    info = store.run_info(run_id)
    assert info["status"] == "finished" and info["name"] == "unit" and info["turns"] == 3
    registry = JobRegistry()
    with pytest.raises(ConfigError, match="at least two agents"):
        run_logic.start_run(store, registry, "o", agents[:1], "t", {}, {})
    with pytest.raises(ConfigError, match="task"):
        run_logic.start_run(store, registry, "o", agents, "  ", {}, {})
    assert registry.jobs_for("o") == []


def test_run_demo_records_a_finished_offline_debate(store: RunStore):
    run_id = analysis_logic.run_demo(store)
    info = store.run_info(run_id)
    assert info["status"] == "finished" and info["name"] == analysis_logic.DEMO_NAME
    assert info["turns"] >= 2
    assert [a["model_name"].startswith("sim/") for a in info["spec"]["agents"]] == [True] * 3


def test_dashboard_runs_ask_every_agent_afresh_unless_told_to_reuse_bids_as_the_help_says():
    assert "Off by default here" in run_logic.PARAM_HELP["bid_cache"]
    agents = [Agent(agent_name="A"), Agent(agent_name="B")]
    params = run_logic.default_params()
    assert params["bid_cache"] is False and params["threshold"] == 0.5
    assert run_logic.build_chat(agents, params, {}).bid_cache is None
    reuse = run_logic.build_chat(agents, {**params, "bid_cache": True}, {})
    assert reuse.bid_cache is not None and reuse.bid_cache.applies(agents[0], None) is False


def _run_job(store: RunStore, agents: list[Agent], keys: dict[str, str],
             params: dict[str, object] | None = None) -> str:
    registry = JobRegistry()
    try:
        job_id = run_logic.start_run(store, registry, "owner", agents, "Plan the offsite.",
                                    params or {"max_loops": 3, "threshold": 0.3}, keys)
        wait_for(lambda: registry.snapshot(job_id).done, "the job")
        run_id = registry.snapshot(job_id).run_id
    finally:
        registry.shutdown()
    assert registry.jobs_for("owner") == []  # shutdown cleared the registry
    store.flush()
    return str(run_id)


def _store_bytes(tmp_path) -> bytes:
    return b"".join(p.read_bytes() for p in tmp_path.glob("groupchat.db*"))


def test_a_session_key_reaches_the_provider_but_never_the_store(store: RunStore, tmp_path,
                                                                monkeypatch):
    from groupchat_core.testing import FakeOpenAIServer, error, tool_call

    with FakeOpenAIServer() as server:
        monkeypatch.setenv("GROUPCHAT_TRUSTED_API_BASES", server.base_url)  # the key may go
        server.script("kind", [tool_call(0.9, "Hello"), tool_call(0.1, "")])
        # A provider that echoes the key in its error text (some do, partly masked or not).
        server.set_responder("leaky", lambda body: error(401, f"Incorrect API key {SECRET}"))
        agents = [Agent(agent_name="Kind", model_name="openai/kind", api_base=server.base_url,
                        num_retries=0),
                  Agent(agent_name="Leaky", model_name="openai/leaky",
                        api_base=server.base_url, num_retries=0)]
        run_id = _run_job(store, agents, {"OPENAI_API_KEY": SECRET})
        auth = {r.headers.get("authorization") for r in server.requests}
    assert auth == {f"Bearer {SECRET}"}  # the copies carried the session key
    bids = store.bids(run_id)
    leaky = bids[bids["agent"] == "Leaky"]["error"].iloc[0]
    assert "AuthenticationError" in leaky and "***" in leaky and SECRET not in leaky
    assert SECRET.encode() not in _store_bytes(tmp_path)
    assert all(a.api_key is None for a in agents)  # the saved agents never held it


# --- status: labels, times, hints, cost, what Analysis opens (issue 11 §2) ------------------


def test_run_label_names_a_run_by_its_given_name_else_its_task_and_times_read_locally():
    from groupchat_ui.kit import labels

    started = "2026-12-01T08:04:13.123456+00:00"
    plain = labels.run_label("dynamic-groupchat", "Should we adopt AI\nfor diagnosis?", started,
                             "aafaee41-0000")
    title, when, short_id = plain.split(" · ")
    assert title == "Should we adopt AI for diagnosis?" and short_id == "aafaee41"
    assert when == datetime.fromisoformat(started).astimezone().strftime("%Y-%m-%d %H:%M")
    assert labels.run_label("DB choice", "Pick a database").startswith("DB choice")
    assert labels.run_label(None, "x" * 200).endswith("…")
    assert len(labels.run_label(None, "x" * 200)) == labels.LABEL_CHARS
    assert labels.run_label("", "") == "untitled run"
    assert labels.run_label("dynamic-groupchat", "") == "dynamic-groupchat"  # nothing better
    value = started  # local time drops the T and the microseconds
    shown = labels.local_time(value)
    assert shown == datetime.fromisoformat(value).astimezone().strftime("%Y-%m-%d %H:%M:%S")
    assert "T" not in shown and "." not in shown
    assert labels.local_time(None) == "" and labels.local_time(float("nan")) == ""
    assert labels.local_time("not a time") == ""
    assert len(labels.local_time(value, seconds=False, date=False)) == len("08:04")


def test_runs_table_labels_runs_formats_times_and_says_unknown_cost():
    """The store keeps an unknown cost as NULL and each run's unpriced bids (schema v13)."""
    runs = pd.DataFrame([
        {"run_id": "r1", "name": "dynamic-groupchat", "task": "Plan the offsite",
         "status": "finished", "stop_reason": "lull", "agents": "A, B", "turns": 3,
         "threshold": 0.5, "recency_penalty": 0.1, "recency_window": 1, "max_loops": 10,
         "total_calls": 6, "total_cost_usd": None, "unpriced_bids": 6,
         "started_at": "2026-12-01T08:04:13.5+00:00", "ended_at": "2026-12-01T08:04:15.25+00:00"},
        {"run_id": "r2", "name": "Mine", "task": "Other", "status": "finished",
         "stop_reason": "lull", "agents": "A, B", "turns": 3, "threshold": 0.5,
         "recency_penalty": 0.1, "recency_window": 1, "max_loops": 10, "total_calls": 6,
         "total_cost_usd": 0.0123, "unpriced_bids": 2, "started_at": None, "ended_at": None},
        {"run_id": "r3", "name": "Sims", "task": "Sims", "status": "finished",
         "stop_reason": "lull", "agents": "A, B", "turns": 3, "threshold": 0.5,
         "recency_penalty": 0.1, "recency_window": 1, "max_loops": 10, "total_calls": 6,
         "total_cost_usd": 0.0, "unpriced_bids": 0, "started_at": None, "ended_at": None},
    ])
    table = runs_logic.runs_table(runs)
    assert table["run"][0].startswith("Plan the offsite · ") and table["run"][1] == "Mine · r2"
    assert "." not in table["started"][0] and "T" not in table["ended"][0]
    assert list(table["cost"]) == ["unknown", "$0.0123 + unknown (2 unpriced bids)",
                                   "$0.0000"]  # sims: a true zero


def test_analysis_defaults_to_this_sessions_newest_ended_run():
    runs = pd.DataFrame({"run_id": ["live", "theirs", "mine-new", "mine-old"],
                         "status": ["running", "finished", "running", "finished"]})
    # mine-new's job has ended; its store row, written in the background, lags
    assert analysis_logic.default_run(runs, ["mine-new", "mine-old"]) == "mine-new"
    assert analysis_logic.default_run(runs, ["mine-old"]) == "mine-old"
    assert analysis_logic.default_run(runs, []) == "theirs"
    assert analysis_logic.default_run(runs[runs["status"] != "finished"], []) is None
    assert analysis_logic.default_run(runs.iloc[0:0], ["x"]) is None


def test_outcomes_say_no_readable_bid_never_every_bid_failed():
    turns = pd.DataFrame({"turn": [1, 2, 3], "winner": ["Ann", None, None],
                          "lull": [False, True, False],
                          "reason": ["highest_bid", "lull", "no_readable_bid"]})
    assert analysis_logic.outcomes(turns) == {1: "Ann spoke", 2: "lull",
                                              3: "no agent produced a readable bid"}
    assert analysis_logic.unreadable_turn(turns) == 3
    bids = pd.DataFrame({"turn": [3, 3, 1], "agent": ["B", "A", "A"], "position": [1, 0, 0],
                         "path": ["json", "none", "forced"], "error": ["prose", "500", None],
                         "latency_ms": [1, 2, 3], "calls": [1, 1, 1]})
    assert list(analysis_logic.bid_reasons(bids, 3)["agent"]) == ["A", "B"]
    record_turns = [Turn(turn=1, winner="Ann"), Turn(turn=2, reason="all_failed")]
    by_turn = {2: [Bid(turn=2, agent="Ann", position=0, error="boom", path="none")]}
    assert run_logic.unreadable_turn(record_turns, by_turn) == (2, {"Ann": "boom"})
    table = run_logic.past_turns(record_turns, by_turn, ["Ann"])
    assert list(table["spoke"]) == ["no agent produced a readable bid", "Ann"]


def test_help_texts_say_what_the_limits_and_the_sims_really_are():
    assert "trickles" in providers.LIMITS_HELP and "Retry-After" in providers.LIMITS_HELP
    assert "(retries + 4) × agent timeout + 8 s per retry" in providers.LIMITS_HELP
    assert providers.LIMITS_HELP in run_logic.PARAM_HELP["bid_timeout"]
    assert "word overlap" in groupchat_core.SIM_NOTE


def test_who_speaks_and_the_selectors_endpoint_and_mode_round_trip_through_the_run_form():
    """A preset's, a stored run's or the form memory's strategy reaches the chat; a blank
    selector model or run name leaves the engine's default; the form starts at its defaults."""
    from groupchat_ui.run.form import RunForm

    stored = {"strategy": "selector", "selector_model": "sim/eager", "threshold": 0.4}
    assert run_logic.chat_params(stored) == stored
    assert "name" not in run_logic.chat_params({"name": "  "})  # the engine's default name
    assert run_logic.chat_params({"name": " DB choice "})["name"] == "DB choice"
    assert run_logic.default_params()["name"] == ""
    assert "selector_model" not in run_logic.chat_params({"selector_model": " "})
    defaults = run_logic.default_params()
    assert defaults["strategy"] == groupchat_core.chat_default("strategy")
    assert defaults["selector_model"] == groupchat_core.chat_default("selector_model")
    with pytest.raises(ConfigError, match="strategy 'nope' is not one of"):
        run_logic.build_chat([], {"strategy": "nope"}, {})
    # the selector's endpoint and mode reach the chat, blanks do not
    asked = RunForm.from_values({"strategy": "selector", "selector_model": "openai/picker",
                                 "selector_api_base": " http://127.0.0.1:8080/v1 ",
                                 "selector_tool_choice_mode": "json_schema"}).chat_kwargs()
    assert (asked["selector_api_base"], asked["selector_tool_choice_mode"]) == (
        "http://127.0.0.1:8080/v1", "json_schema")
    groupchat_core.GroupChat(agents=[groupchat_core.Agent(agent_name=n, model_name="sim/eager")
                                     for n in ("A", "B")], **asked)  # the engine takes them
    blank = RunForm.from_values({"selector_api_base": "  ", "selector_tool_choice_mode": None})
    assert not {"selector_api_base", "selector_tool_choice_mode"} & set(blank.chat_kwargs())


def test_remembered_modes_table():
    from groupchat_ui.settings import logic as settings_logic

    mode = groupchat_core.RememberedMode("openai/x", None, "abc", "json", 245.4)
    table = settings_logic.modes_table([mode])
    assert table.iloc[0].to_dict() == {"model": "openai/x", "api_base": "(provider default)",
                                       "mode": "json", "expires in": "4 min 05 s",
                                       "tools": "abc"}
    assert settings_logic.expires_in(3.9) == "3 s"
    assert settings_logic.modes_table([]).empty
