"""The dashboard through Streamlit's AppTest: every page renders, and each page does its job
(helpers: tests/helpers/app_helpers.py)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from groupchat_core import (
    STRATEGIES,
    TOOL_CHOICE_MODES,
    Agent,
    GroupChat,
    bundle_json,
    chat_default,
    dump_agents,
    max_inflight_calls,
    set_max_inflight_calls,
)
from groupchat_core.store import RunStore
from groupchat_ui.agents import logic as agent_logic
from groupchat_ui.analysis import logic as analysis_logic
from groupchat_ui.kit import jobs as job_registry
from groupchat_ui.kit import store_access
from groupchat_ui.kit.labels import row_label
from groupchat_ui.runs import logic as runs_logic
from tests.helpers.app_helpers import (
    errors,
    fill,
    goto,
    new_app,
    open_tab,
    poll,
    preset_run_form,
    query,
    rendered_text,
    save_agents,
    select_rows,
    session,
    sim_agents,
    sim_sweep,
    status,
    sweep_status,
    texts,
    turn,
    wait_for,
)

PAGES = ("agents", "run", "analysis", "runs", "settings")
SECRET = "sk-test-0123456789abcdefSECRET"


def test_every_page_renders_and_agents_saved_by_another_writer_show_on_the_next_rerun(
        app: AppTest, store: RunStore):
    """Agents saved by the CLI or another server waited out a 10 s cache."""
    assert app.title[0].value == "Run"  # the landing page
    for page in PAGES:
        goto(app, page)
        assert app.title[0].value == page.capitalize()
    assert any("Data:" in c.value for c in app.sidebar.caption)
    goto(app, "run")
    assert app.multiselect(key="run_roster").options == []
    other = RunStore(store.url)  # another writer: nothing tells the dashboard's cache
    other.save_agents([Agent(agent_name=n, model_name="sim/eager") for n in ("Ann", "Ben")])
    app.run()
    assert app.multiselect(key="run_roster").options == [
        "Ann · sim/eager (simulated)", "Ben · sim/eager (simulated)"]
    other.set_agent_order(["Ben"])
    app.run()
    assert app.multiselect(key="run_roster").options[0].startswith("Ben · ")
    other.delete_agent("Ann")
    app.run()
    assert app.multiselect(key="run_roster").options == ["Ben · sim/eager (simulated)"]


# --- agents -------------------------------------------------------------------------------


def fill_agent(at: AppTest, name: str, role: str = "", model: str | None = None,
               custom: str = "") -> None:
    at.text_input(key="agent_form_name").set_value(name)
    at.text_area(key="agent_form_role").set_value(role)
    if model is not None:
        at.selectbox(key="agent_form_model").set_value(model)
    at.text_input(key="agent_form_custom_model").set_value(custom)


def names_in(store: RunStore) -> list[str]:
    return [a.agent_name for a in store.list_agents()]


def test_agents_page_creates_edits_renames_deletes_makes_agents_in_a_row_with_every_tool_mode(
        app: AppTest, store: RunStore):
    goto(app, "agents")
    fill_agent(app, "Ada", "You are a careful mathematician.", "sim/reserved")
    app.button(key="save_agent").click().run()
    assert names_in(store) == ["Ada"]
    assert store.get_agent("Ada").model_name == "sim/reserved"
    assert "sim/reserved (simulated)" in rendered_text(app)
    assert app.text_input(key="agent_form_name").value == ""  # blank for the next agent
    assert "**New agent**" in texts(app.markdown) and session(app).editing is None

    app.button(key="agent_edit_Ada").click().run()
    assert app.text_input(key="agent_form_name").value == "Ada"
    assert "**Edit Ada**" in texts(app.markdown)
    assert "Rename: change the name below" in texts(app.info)
    app.number_input(key="agent_form_temperature").set_value(1.2)
    app.text_input(key="agent_form_name").set_value("Ada L.")
    app.button(key="save_agent").click().run()
    assert [(a.agent_name, a.temperature) for a in store.list_agents()] == [("Ada L.", 1.2)]
    assert "Renamed Ada to Ada L." in texts(app.success)

    app.button(key="agent_delete_Ada L.").click().run()  # the trash only asks
    assert names_in(store) == ["Ada L."]
    assert "Delete the agent Ada L. for good?" in texts(app.warning)
    app.button(key="confirm_agent_delete_no").click().run()
    assert names_in(store) == ["Ada L."] and not app.warning
    app.button(key="agent_delete_Ada L.").click().run()
    app.button(key="confirm_agent_delete_yes").click().run()
    assert store.list_agents() == []
    assert "Deleted agent Ada L." in texts(app.success)
    assert not app.exception

    # Issue 11: saving a new agent turned the form into "Edit <it>": the next save renamed it.
    for name in ("Optimist", "Pessimist", "Realist"):
        fill_agent(app, name, f"You are the {name}.", "sim/eager")
        app.button(key="save_agent").click().run()
        assert f"Saved new agent {name}." in texts(app.success)
    assert names_in(store) == ["Optimist", "Pessimist", "Realist"]
    assert store.get_agent("Optimist").system_prompt == "You are the Optimist."

    app.button(key="new_agent").click().run()
    fill_agent(app, "   ")
    app.button(key="save_agent").click().run()
    assert any("agent_name must not be empty" in e.value for e in app.error)
    fill_agent(app, "Remote", model="other: a litellm model string", custom="")
    app.button(key="save_agent").click().run()
    assert any("litellm model string" in e.value for e in app.error)
    assert names_in(store) == ["Optimist", "Pessimist", "Realist"]
    fill_agent(app, "Remote", model="other: a litellm model string", custom="gpt-4o-mini")
    app.button(key="save_agent").click().run()
    assert store.get_agent("Remote").model_name == "gpt-4o-mini"
    app.button(key="new_agent").click().run()
    fill_agent(app, "Remote", model="sim/eager")  # a second agent with a taken name
    app.button(key="save_agent").click().run()
    assert any("already exists" in e.value for e in app.error)
    assert store.get_agent("Remote").model_name == "gpt-4o-mini"

    app.button(key="new_agent").click().run()
    modes = app.selectbox(key="agent_form_tool_mode")
    assert modes.options == ["automatic (fall back as needed)", *TOOL_CHOICE_MODES]
    assert "json_schema" in modes.options
    fill_agent(app, "Smol", "You bid briefly.", custom="openai/smollm2")
    app.selectbox(key="agent_form_tool_mode").set_value("json_schema")
    app.button(key="save_agent").click().run()
    assert store.get_agent("Smol").tool_choice_mode == "json_schema"
    app.button(key="agent_edit_Smol").click().run()
    assert app.selectbox(key="agent_form_tool_mode").value == "json_schema"


def test_agents_duplicate_reorder_reload_import_and_export(app: AppTest, store: RunStore):
    goto(app, "agents")
    app.button(key="load_preset").click().run()
    app.button(key="agent_up_Realist").click().run()
    assert names_in(store) == ["Optimist", "Realist", "Pessimist"]
    app.button(key="agent_dup_Optimist").click().run()
    order = session(app).agent_order
    assert order.index("Optimist (copy)") == order.index("Optimist") + 1
    assert names_in(store) == order == ["Optimist", "Optimist (copy)", "Realist", "Pessimist"]
    assert {b.label for b in app.get("download_button")} >= {"Export JSON", "Export YAML"}
    reloaded = goto(new_app(), "agents")  # the order is stored: a reload keeps it
    rows = [m.value for m in reloaded.markdown if re.match(r"\*\*\d\. ", m.value)]
    assert [re.match(r"\*\*\d\. ([\w ()]+)", r).group(1) for r in rows] == order
    goto(reloaded, "run")
    assert reloaded.multiselect(key="run_roster").options[:2] == [
        "Optimist · sim/eager (simulated)", "Optimist (copy) · sim/eager (simulated)"]
    assert reloaded.multiselect(key="run_roster").options[2] == (
        "Realist · sim/balanced (simulated)")

    _import(app, dump_agents([Agent(agent_name="Newcomer", model_name="sim/eager")], "json"))
    assert store.get_agent("Newcomer").model_name == "sim/eager"
    _import(app, json.dumps({"schema_version": 1, "agents": [{"agent_name": "Evil",
                                                              "api_key": "x"}]}))
    assert any("Nothing was imported" in e.value for e in app.error)
    assert "Evil" not in names_in(store)


FILE = dump_agents([Agent(agent_name="Optimist", model_name="sim/eager",
                          system_prompt="An imported optimist."),
                    Agent(agent_name="Newcomer", model_name="sim/eager")], "json")


def _import(app: AppTest, text: str = FILE) -> None:
    app.file_uploader(key="agents_upload").set_value(("room.json", text.encode(), "x"))
    app.button(key="import_agents").click().run()
    assert not app.exception


def prompt(store: RunStore, name: str) -> str:
    return store.get_agent(name).system_prompt


def test_copies_of_imported_agents_get_free_names(store: RunStore):
    store.save_agents([Agent(agent_name="A", model_name="sim/eager"),
                       Agent(agent_name="A (imported)", model_name="sim/eager")])
    file_a = Agent(agent_name="A", model_name="sim/eager", system_prompt="other")
    assert agent_logic.import_conflicts(store, [file_a]) == ["A"]
    assert agent_logic.import_conflicts(store, [store.get_agent("A")]) == []
    assert agent_logic.save_imported(store, [file_a], keep=("A",)) == ["A (imported 2)"]
    assert store.get_agent("A").system_prompt == ""


def test_a_saved_agent_that_breaks_the_key_rule_is_a_warning_and_can_be_imported_over(
        app: AppTest, store: RunStore):
    """Issue 44: saved before litellm_kwargs lost its endpoints, it does not load."""
    hidden = {**Agent(agent_name="Old").__dict__, "litellm_kwargs": {"base_url": "http://x/v1"}}
    store.save_agent(Agent.model_construct(**hidden))  # as an older version stored it
    page = goto(app, "agents")
    warnings = [w.value.replace("\\_", "_") for w in page.warning]  # shown escaped (Markdown)
    assert any(w.startswith("saved agent 'Old' is invalid") and "base_url" in w
               for w in warnings), warnings
    _import(page, dump_agents([Agent(agent_name="Old", model_name="sim/eager")], "json"))
    assert store.get_agent("Old").litellm_kwargs == {}
    page.run()
    assert not any("'Old' is invalid" in w.value for w in page.warning)


def picked(app: AppTest) -> list[str]:
    return [str(v).split(" · ")[0] for v in app.multiselect(key="run_roster").value]


def test_a_preset_or_an_import_asks_before_replacing_edited_agents_and_the_form_follows(
        app: AppTest, store: RunStore):
    goto(app, "agents")
    app.button(key="load_preset").click().run()
    app.button(key="load_preset").click().run()  # unchanged agents: no question
    assert not app.warning
    app.button(key="agent_edit_Optimist").click().run()
    app.text_area(key="agent_form_role").set_value("My own careful optimist.")
    app.button(key="save_agent").click().run()

    app.button(key="load_preset").click().run()
    assert "would replace your saved Optimist" in texts(app.warning)
    assert store.get_agent("Optimist").system_prompt == "My own careful optimist."
    app.button(key="confirm_preset_no").click().run()
    assert not app.warning
    assert store.get_agent("Optimist").system_prompt == "My own careful optimist."

    app.button(key="load_preset").click().run()
    app.button(key="confirm_preset_copies").click().run()
    assert store.get_agent("Optimist").system_prompt == "My own careful optimist."
    assert store.get_agent("Optimist (preset)").system_prompt == "You argue for the benefits."
    assert session(app).roster == ["Optimist (preset)", "Pessimist", "Realist"]

    goto(app, "run")  # the same question on the Run page: a roster picked by hand stays till Yes
    roster = app.multiselect(key="run_roster")
    hand = ["Pessimist", "Realist"]
    roster.set_value([o for o in roster.options if o.split(" · ")[0] in hand]).run()
    app.button(key="use_preset").click().run()
    assert "would replace your saved Optimist" in texts(app.warning)
    assert picked(app) == hand, "the roster switched before the question's answer"
    app.button(key="confirm_preset_no").click().run()
    assert not app.warning and picked(app) == hand, "No switched the roster"
    app.button(key="use_preset").click().run()
    app.button(key="confirm_preset_yes").click().run()
    assert store.get_agent("Optimist").system_prompt == "You argue for the benefits."
    assert app.multiselect(key="run_roster").value == ["Optimist", "Pessimist", "Realist"]

    # Issue 38.12: an import asks as a preset does; an open edit form then shows what was imported
    goto(app, "agents")
    saved = prompt(store, "Optimist")
    app.button(key="agent_edit_Optimist").click().run()
    assert app.text_area(key="agent_form_role").value == saved

    _import(app)
    assert "room.json would replace your saved Optimist" in texts(app.warning)
    assert prompt(store, "Optimist") == saved and "Newcomer" not in names_in(store)
    app.button(key="confirm_import_no").click().run()  # cancel: nothing imported
    assert not app.warning and "Nothing was imported from room.json" in texts(app.info)
    assert prompt(store, "Optimist") == saved and "Newcomer" not in names_in(store)

    _import(app)
    app.button(key="confirm_import_copies").click().run()  # keep mine
    assert prompt(store, "Optimist") == saved
    assert prompt(store, "Optimist (imported)") == "An imported optimist."
    assert "Newcomer" in names_in(store)
    assert app.text_area(key="agent_form_role").value == saved

    _import(app)
    app.button(key="confirm_import_yes").click().run()  # replace
    assert prompt(store, "Optimist") == "An imported optimist."
    assert app.text_area(key="agent_form_role").value == "An imported optimist."
    app.button(key="save_agent").click().run()  # the open form saves what was imported
    assert prompt(store, "Optimist") == "An imported optimist."

    _import(app)  # the same agents again: nothing would change, nothing is asked
    assert not app.warning and "Imported 2 agents" in texts(app.success)


def test_presets_save_their_agents_and_prepare_the_run(app: AppTest, store: RunStore):
    saved: list[str] = []
    presets: list[str] = []
    for preset, names in (
            ("Debate trio", ["Optimist", "Pessimist", "Realist"]),
            ("Five-expert panel", ["Economist", "Ethicist", "Engineer", "Clinician", "Lawyer"])):
        goto(app, "agents")
        app.selectbox(key="preset_choice").set_value(preset)
        app.button(key="load_preset").click().run()
        saved, presets = saved + names, [*presets, preset]
        assert sorted(names_in(store)) == sorted(saved)
        assert sorted(store.list_presets()) == sorted(presets)
        goto(app, "run")
        assert app.multiselect(key="run_roster").value == names
        assert app.text_area(key="run_task").value
        assert app.text_input(key="run_param_name").value == ""  # labelled by its task


# --- run ----------------------------------------------------------------------------------


def start(app: AppTest, max_loops: int) -> None:
    fill(preset_run_form(app), run_param_max_loops=max_loops)
    app.button(key="start_run").click().run()
    assert not app.error, [e.value for e in app.error]


def test_run_page_runs_a_sim_chat_live_and_ends_with_a_summary(app: AppTest, store: RunStore):
    start(app, max_loops=5)
    assert status(app).startswith(("status: running", "status: queued", "status: finished"))
    poll(app, lambda at: status(at).startswith("status: finished"), "the run to finish")
    metrics = {m.label: m.value for m in app.metric}
    assert metrics["Stop reason"] == "max_loops" and metrics["Turns"] == "4"
    assert len(app.chat_message) == 5  # the task and four replies
    assert "(simulated)" in rendered_text(app)
    job_id = session(app).current_job
    assert app.query_params["job"] == job_id
    run_id = job_registry.registry().snapshot(job_id).run_id
    assert run_id == job_id  # Run names the job, Analysis and Runs the run: one id
    store.flush()
    assert store.run_info(run_id)["status"] == "finished"
    assert len(store.bids(run_id)) == 12


def test_a_run_needs_two_agents_and_stop_cancels_a_slow_chat_keeping_what_was_posted(
        app: AppTest, store: RunStore):
    sim_agents(store, "Ann", "Ben", latency=0.5)
    form = {"run_task": "Talk about the weather.", "run_param_threshold": 0.0,
            "run_param_max_loops": 60}
    fill(goto(app, "run"), run_roster=["Ann"], **form)
    app.button(key="start_run").click().run()  # one agent: refused, nothing started
    assert any("at least two agents" in e.value for e in app.error)
    assert session(app).job_ids == []
    fill(app, run_roster=["Ann", "Ben"], **form)
    app.button(key="start_run").click().run()
    poll(app, lambda at: turn(at) >= 2 or not status(at).startswith(("status: running",
                                                                    "status: queued")),
         "a few turns")
    assert status(app).startswith("status: running"), [e.value for e in app.error]
    app.button(key="stop_run").click().run()
    poll(app, lambda at: status(at).startswith("status: cancelled"), "the cancellation")
    assert any("Stopped" in i.value for i in app.info)
    snap = job_registry.registry().snapshot(session(app).current_job)
    assert snap.status == "cancelled" and len(snap.messages) < 60
    store.flush()
    wait_for(lambda: store.run_info(snap.run_id)["status"] != "running", "the stored stop")
    assert store.run_info(snap.run_id)["status"] == "cancelled"


def test_several_runs_at_once_coming_back_shows_the_watched_job_and_a_reload_keeps_them(
        app: AppTest):
    """Issue 11: start A, start B (watching B), go to Analysis, come back: it showed A; after
    a reload the sidebar said "0 running, 0 in all"."""
    start(app, max_loops=60)
    a = session(app).current_job
    app.button(key="start_run").click().run()
    b = session(app).current_job
    assert session(app).job_ids == [a, b] and app.selectbox(key="job_select").value == b
    assert sum(not j.done for j in job_registry.registry().jobs_for(session(app).owner)) >= 1
    assert a != b and b in status(app) and a not in status(app)
    for page in ("analysis", "run"):
        goto(app, page)
    assert b in status(app) and a not in status(app)
    assert app.selectbox(key="job_select").value == b and query(app, "job") == b
    for page in ("agents", "runs", "settings", "run"):  # any page in between
        goto(app, page)
    assert b in status(app) and query(app, "job") == b
    app.selectbox(key="job_select").set_value(a).run()  # now watch A
    assert a in status(app) and query(app, "job") == a
    goto(app, "analysis")
    goto(app, "run")
    assert a in status(app) and b not in status(app) and query(app, "job") == a

    owner, jobs = session(app).owner, [a, b]  # a reload keeps this browser's jobs
    assert app.query_params["sid"] in (owner, [owner])
    reloaded = new_app(sid=owner, job=jobs[0])
    assert session(reloaded).owner == owner and session(reloaded).job_ids == jobs
    assert "2 in all" in texts(reloaded.sidebar.caption)
    assert jobs[0] in status(reloaded)
    assert len(reloaded.selectbox(key="job_select").options) == 2
    other = new_app()  # another browser sees none of them, but a link finds its job
    assert session(other).owner != owner and "0 in all" in texts(other.sidebar.caption)
    assert status(other).startswith("status: idle")
    assert jobs[1] in status(new_app(job=jobs[1]))
    stranger = new_app(sid="not-an-id")  # a malformed id starts a new browser
    assert session(stranger).owner != owner and "0 in all" in texts(stranger.sidebar.caption)


def test_a_reload_shows_a_running_sweep_with_stop(app: AppTest, store: RunStore):
    """Issue 11: `?sweep=` of a running sweep said "idle", with no Stop and no Resume."""
    sim_agents(store, "Ann", "Ben", latency=0.05)
    goto(app, "sweeps")
    app.selectbox(key="sw_room").select("Saved agents").run()
    fill(app, sw_saved=["Ann", "Ben"], sw_repeats=40, sw_concurrency=1).run()
    app.button(key="sw_start").click().run()
    poll(app, lambda at: sweep_status(at).startswith("sweep status: running")
         and "sweep" in at.query_params, "the sweep")
    sweep_id = query(app, "sweep")
    for sid in (session(app).owner, None):  # a reload of this browser, then a shared link
        other = goto(new_app(sweep=sweep_id, **({"sid": sid} if sid else {})), "sweeps")
        assert sweep_status(other).startswith("sweep status: running"), sweep_status(other)
        assert [b for b in other.button if b.key == "sw_stop"]
    other.button(key="sw_stop").click().run()
    poll(other, lambda at: sweep_status(at).startswith("sweep status: cancelled"), "the stop")
    store.flush()
    poll(other, lambda at: store.get_sweep(sweep_id)["status"] == "cancelled", "the store")
    fresh = goto(new_app(sweep=sweep_id), "sweeps")
    assert sweep_status(fresh).startswith("sweep status: cancelled"), sweep_status(fresh)
    assert [b for b in fresh.button if b.key == "sw_resume"]


def test_run_page_warns_about_missing_keys_and_explains_provider_failures(
        app: AppTest, store: RunStore, monkeypatch: pytest.MonkeyPatch):
    save_agents(store, [Agent(agent_name="Gpt", model_name="gpt-4o-mini"),
                        Agent(agent_name="Claude", model_name="anthropic/claude-3-5-haiku")])
    fill(goto(app, "run"), run_roster=["Gpt", "Claude"]).run()
    assert "Missing credentials" in errors(app)  # before Start, which is disabled
    assert "OPENAI\\_API\\_KEY" in errors(app) and "ANTHROPIC\\_API\\_KEY" in errors(app)
    assert "agent 'Gpt'" in errors(app) and "agent 'Claude'" in errors(app)
    assert app.button(key="start_run").disabled
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):  # keys set: the calls themselves fail
        monkeypatch.setenv(name, "sk-not-a-real-key")
    assert not app.run().button(key="start_run").disabled
    app.text_area(key="run_task").set_value("Say hello.")
    app.button(key="start_run").click().run()
    poll(app, lambda at: status(at).startswith("status: finished"), "the failed run")
    assert "**Gpt**" in errors(app) and "**Claude**" in errors(app)
    assert "blocked" in errors(app)  # tests block real calls; the hint says what to do
    assert {m.label: m.value for m in app.metric}["Stop reason"] == "error"


def test_the_run_form_chooses_who_speaks_from_the_cores_strategies(app: AppTest,
                                                                    store: RunStore):
    sim_agents(store, "Ann", "Ben")
    goto(app, "run")
    box = app.selectbox(key="run_param_strategy")
    assert list(box.options) == list(STRATEGIES) and box.value == chat_default("strategy")
    assert all(name in (box.help or "") for name in STRATEGIES)
    for strategy, selector_model in (("round_robin", None), ("selector", "sim/contrarian")):
        fill(app, run_roster=["Ann", "Ben"], run_task="Talk about the weather.",
             run_param_max_loops=3, run_param_strategy=strategy,
             **({"run_param_selector_model": selector_model} if selector_model else {}))
        app.button(key="start_run").click().run()
        assert not app.error, [e.value for e in app.error]
        job = session(app).current_job
        poll(app, lambda at, job=job: status(at).startswith(f"status: finished · job {job}"),
             "the run to finish")
        store.flush()
        config = store.load_run(job_registry.registry().snapshot(job).run_id).config
        assert config["strategy"] == strategy
        if selector_model:
            assert config["selector_model"] == selector_model


# --- analysis and runs --------------------------------------------------------------------


def test_analysis_offers_a_demo_until_a_run_has_ended_shows_it_and_opens_a_run_linked_at_once(
        app: AppTest, store: RunStore):
    """A link to a run recorded within the run list's 2 s cache opened "not listed yet"."""
    goto(app, "analysis")
    assert store.list_runs().empty and app.button(key="demo_run")  # an empty store
    running = analysis_logic.run_demo(store)
    with store.write("test") as conn:
        conn.exec_driver_sql("UPDATE runs SET status='running' WHERE run_id=?", (running,))
    store_access.invalidate()
    app.run()  # a run, but none has ended: the demo still
    app.button(key="demo_run").click().run()
    assert not app.exception
    run_id = next(r for r in store.list_runs()["run_id"] if r != running)
    assert app.selectbox(key="analysis_run").value == run_id
    assert app.query_params["run"] == run_id
    labels = [m.label for m in app.metric]
    for label in ("Turns", "Lull turn", "Speaker entropy", "Evenness", "Gini",
                  "Longest monologue", "Mean margin", "Penalty flips", "Failed bids"):
        assert label in labels
    # Only the open tab runs: Bids first, then each tab as it is opened.
    assert [c.key for c in app.get("plotly_chart")] == ["bids_heatmap", "bid_lines"]
    assert not app.get("download_button") and not app.expander
    open_tab(app, "analysis_tab", "Speakers")
    assert [c.key for c in app.get("plotly_chart")] == [
        "winner_timeline", "transitions", "turn_shares"]
    open_tab(app, "analysis_tab", "Why?")
    assert app.info[0].value.startswith("Turn 1:")  # the explainer
    app.selectbox(key="explain_turn").set_value(2).run()
    assert app.info[0].value.startswith("Turn 2:")
    open_tab(app, "analysis_tab", "Files")
    assert {b.label for b in app.get("download_button")} == {
        "Bundle (JSON)", "Bids (CSV)", "Transcript (Markdown)"}
    open_tab(app, "analysis_tab", "Transcript")
    assert len(app.expander) == len(store.turns(run_id))

    chat = GroupChat(agents=[Agent(agent_name=n, model_name="sim/eager") for n in "AB"],
                     max_loops=3, seed=1)  # recorded elsewhere, after the list was read
    store.attach(chat)
    chat.run("Elsewhere.")
    assert store.flush() and chat.last_run is not None
    linked = chat.last_run.run_id
    goto(app, "analysis", run=linked[:8])
    assert not app.error, [e.value for e in app.error]
    assert app.selectbox(key="analysis_run").value == linked


def chart_turns(app: AppTest, key: str) -> list[int]:
    """The turns on the x axis of a chart's first trace, as the browser receives them."""
    chart = next(c for c in app.get("plotly_chart") if c.key == key)
    return [int(x) for x in json.loads(chart.proto.spec)["data"][0]["x"]]


def test_analysis_pages_a_long_runs_per_turn_charts_by_windows_of_turns(app: AppTest,
                                                                        store: RunStore):
    """Issue 11 §3: a long run's charts drew every turn at once (cost); nothing may be lost."""
    from groupchat_core import Agent, GroupChat
    from groupchat_core.testing import ScriptedBids

    script = {name: [(0.9 if t % 3 == i else 0.4, f"{name} {t}") for t in range(450)]
              for i, name in enumerate(("Ann", "Bo", "Cy"))}
    fake = ScriptedBids(script)
    chat = GroupChat(agents=[Agent(agent_name=n, model_name=fake.model_name) for n in script],
                     max_loops=451, threshold=0.5)
    store.attach(chat)
    chat.run("A long one.")
    store.flush()
    goto(app, "analysis")
    picker = app.selectbox(key="bid_window")
    assert picker.options == ["turns 1–200", "turns 201–400", "turns 401–450 (latest)"]
    assert picker.value == (401, 450)
    assert chart_turns(app, "bids_heatmap") == list(range(401, 451))
    picker.set_value((1, 200)).run()
    assert chart_turns(app, "bids_heatmap") == list(range(1, 201))
    assert chart_turns(app, "bid_lines") == list(range(1, 201))
    open_tab(app, "analysis_tab", "Speakers")
    assert app.selectbox(key="bid_window").value == (1, 200)
    timeline = json.loads(next(c for c in app.get("plotly_chart")
                               if c.key == "winner_timeline").proto.spec)["data"]
    assert sorted(x for t in timeline[1:] for x in t["x"]) == list(range(1, 201))
    shares = json.loads(next(c for c in app.get("plotly_chart")
                             if c.key == "turn_shares").proto.spec)["data"][0]
    assert list(shares["x"]) == ["Ann", "Bo", "Cy"]  # the whole run's shares
    assert abs(sum(shares["y"]) - 1) < 1e-9


def test_runs_page_lists_compares_deletes_imports_filters_and_opens_a_run_in_analysis(
        app: AppTest, store: RunStore):
    first, second = analysis_logic.run_demo(store), analysis_logic.run_demo(store)
    table = goto(app, "runs").dataframe[0].value
    assert set(table["run_id"]) == {first, second}
    label = next(row_label(r) for r in store.list_runs().to_dict("records")
                 if r["run_id"] == first)
    select_rows(app, [int(table.index[table["run_id"] == first][0])])
    app.button(key="delete_runs").click().run()  # the question names the run (not "1 run(s)")
    question = texts(app.warning)
    assert f"Delete the run {label} and its bid log for good?" in question
    assert "run(s)" not in question and first[:8] in question and second[:8] not in question
    app.button(key="confirm_delete_no").click().run()

    select_rows(app, [0, 1])
    app.toggle(key="compare_runs").set_value(True).run()
    frames = [d.value for d in app.dataframe]
    speakers = next(f for f in frames if "same" in f.columns)
    assert len(speakers) > 1 and speakers["same"].all()  # the demo is deterministic
    metrics = next(f for f in frames if "metric" in f.columns)
    assert "Gini" in list(metrics["metric"])
    bundle = bundle_json(store, first)
    app.button(key="delete_runs").click().run()
    question = texts(app.warning)
    assert "Delete these 2 runs and their bid logs for good?" in question
    assert first[:8] in question and second[:8] in question
    app.button(key="confirm_delete_yes").click().run()
    assert store.list_runs().empty
    app.file_uploader(key="bundle_upload").set_value(("run.json", bundle.encode(), "x"))
    app.button(key="import_bundle").click().run()
    assert list(store.list_runs()["run_id"]) == [first]

    run_id = first  # the filters, then a run opened in Analysis
    app.text_input(key="filter_text").set_value("no such words")
    app.button(key="apply_filters").click().run()
    assert app.dataframe[0].value.empty
    fill(app, filter_text="demo", filter_status="finished", filter_agent="Realist")
    app.button(key="apply_filters").click().run()
    assert list(app.dataframe[0].value["run_id"]) == [run_id]
    select_rows(app, [0])
    app.button(key="open_run").click().run()
    assert app.title[0].value == "Analysis"
    assert app.selectbox(key="analysis_run").value == run_id


# --- settings -----------------------------------------------------------------------------


def shown(at: AppTest) -> set[str]:
    return set(at.dataframe(key="runs_table").value["run_id"])


def test_the_scope_sets_single_runs_apart_from_a_sweeps_and_a_link_names_it(app: AppTest,
                                                                           store: RunStore):
    """Issue 41: single runs apart from a sweep's, and a link that shows the same runs."""
    single = analysis_logic.run_demo(store)
    sweep_id = sim_sweep(store, "big", thresholds=(0.01, 0.2, 0.4))
    swept = set(store.list_runs(sweep_id=sweep_id)["run_id"])
    goto(app, "runs")
    scope = app.selectbox(key="filter_scope")
    assert scope.value == runs_logic.ALL_RUNS and shown(app) == swept | {single}
    assert scope.options[:2] == ["all runs (4)", "single runs (1)"]
    assert scope.options[2].startswith("sweep big · ") and scope.options[2].endswith("(3 runs)")

    scope.set_value(runs_logic.SINGLE_RUNS).run()
    assert shown(app) == {single}
    assert query(app, "runs") == "single"
    app.selectbox(key="filter_scope").set_value(sweep_id).run()
    assert shown(app) == swept
    assert query(app, "sweep") == sweep_id and query(app, "runs") is None
    app.text_input(key="filter_text").set_value("no such words")  # the other filters narrow it
    app.button(key="apply_filters").click().run()
    assert shown(app) == set()

    at = goto(new_app(), "runs", sweep=sweep_id[:6])  # a unique prefix, as elsewhere
    assert at.selectbox(key="filter_scope").value == sweep_id and shown(at) == swept
    at = goto(new_app(), "runs", runs="single")
    assert shown(at) == {single}
    at = goto(new_app(), "runs", sweep="nosuchsweep")  # names nothing here: every run
    assert at.selectbox(key="filter_scope").value == runs_logic.ALL_RUNS
    assert shown(at) == swept | {single}


def test_scopes_count_runs_and_keep_sweeps_without_runs_out():
    runs = pd.DataFrame({"run_id": ["a", "b", "c", "d"], "sweep_id": [None, "s1", "s1", None]})
    sweeps = pd.DataFrame({"sweep_id": ["s2", "s1"], "name": ["empty", "grid"],
                           "created_at": ["2026-12-07T06:00:00", "2026-12-06T05:04:03"]})
    scopes = runs_logic.run_scopes(runs, sweeps)
    assert scopes == {"all": "all runs (4)", "single": "single runs (2)",
                      "s1": "sweep grid · 2026-12-06 05:04 · s1 (2 runs)"}
    assert list(runs_logic.in_scope(runs, "single")["run_id"]) == ["a", "d"]
    assert list(runs_logic.in_scope(runs, "s1")["run_id"]) == ["b", "c"]
    assert runs_logic.in_scope(runs, "all") is runs
    assert runs_logic.scope_from_query({"sweep": "s"}, scopes) == "s1"
    assert runs_logic.scope_from_query({"runs": "single"}, scopes) == "single"
    assert runs_logic.scope_from_query({}, scopes) == "all"
    assert runs_logic.scope_query("s1") == {"sweep": "s1"} and runs_logic.scope_query("all") == {}


def test_settings_keep_keys_in_this_session_only_and_preferences_live_as_said(
        app: AppTest, store: RunStore, tmp_path: Path):
    goto(app, "settings")
    captions = " ".join(c.value for c in app.caption)
    assert "Not saved anywhere" in captions and "reload" in captions
    assert "until the server restarts" in captions
    before = max_inflight_calls()
    fill(app, pref_default_model="sim/eager", pref_inflight=8)
    app.button(key="save_preferences").click().run()
    try:
        assert session(app).default_model == "sim/eager" and max_inflight_calls() == 8
    finally:
        set_max_inflight_calls(before)
    said = " ".join(s.value for s in app.success)
    assert "Preferences saved" not in said and "not saved" in said

    assert app.button(key="clear_keys").disabled
    app.text_input(key="key_OPENAI_API_KEY").set_value(SECRET)
    app.button(key="save_keys").click().run()
    assert session(app).provider_keys == {"OPENAI_API_KEY": SECRET}
    assert "OPENAI_API_KEY" not in os.environ
    assert any("set ✓ (this session)" in t.label for t in app.text_input)
    assert SECRET not in rendered_text(app)
    assert SECRET not in repr(session(app))

    save_agents(store, [Agent(agent_name="Gpt", model_name="gpt-4o-mini"),
                        Agent(agent_name="Sim", model_name="sim/balanced")])
    fill(goto(app, "run"), run_roster=["Gpt", "Sim"]).run()
    assert "Missing credentials" not in errors(app)  # the session key counts
    assert not app.button(key="start_run").disabled
    fill(app, run_task="Plan the offsite.", run_param_max_loops=3)
    app.button(key="start_run").click().run()
    poll(app, lambda at: status(at).startswith("status: finished"), "the run")
    assert SECRET not in rendered_text(app)
    store.flush()
    data = b"".join(p.read_bytes() for p in tmp_path.glob("groupchat.db*"))
    assert data and SECRET.encode() not in data

    goto(app, "settings")
    app.button(key="forget_OPENAI_API_KEY").click().run()
    assert session(app).provider_keys == {}
    fill(app, key_OPENAI_API_KEY="sk-" + "a" * 24, key_GROQ_API_KEY="gsk-" + "b" * 24)
    app.button(key="save_keys").click().run()
    assert set(session(app).provider_keys) == {"OPENAI_API_KEY", "GROQ_API_KEY"}
    app.button(key="forget_GROQ_API_KEY").click().run()
    assert set(session(app).provider_keys) == {"OPENAI_API_KEY"}
    app.button(key="clear_keys").click().run()
    assert session(app).provider_keys == {}
    assert any("Cleared every key" in s.value for s in app.success)
