"""Clear, consistent status (issue 11 §2, and the dashboard side of issue 9) through AppTest:
labels that say which run it is, what Analysis opens (Settings' lifetimes: test_app.py),
feedback next to its control, "no agent produced a readable bid", remembered tool-choice modes
and unknown cost. Real HTTP goes to the shipped fake OpenAI server."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from groupchat_core import Agent, GroupChat, bundle_json, forget_remembered_modes
from groupchat_core.store import RunStore
from groupchat_core.testing import FakeOpenAIServer, text, tool_call
from groupchat_ui.analysis import logic as analysis_logic
from groupchat_ui.kit import jobs as job_registry
from groupchat_ui.kit import store_access
from tests.helpers.app_helpers import (
    errors,
    fill,
    goto,
    new_app,
    poll,
    save_agents,
    select_rows,
    session,
    status,
)

ISO_MICROS = re.compile(r"\d{2}:\d{2}:\d{2}\.\d+|T\d{2}:")


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    forget_remembered_modes()
    with FakeOpenAIServer() as fake:
        yield fake
    forget_remembered_modes()


def run_from_page(at: AppTest, roster: list[str], task: str, *, name: str = "",
                  max_loops: int = 3) -> str:
    """Start a run on the Run page as a user does and wait for it to end; its job id."""
    fill(goto(at, "run"), run_roster=roster).run()
    fill(at, run_task=task, run_param_name=name, run_param_max_loops=max_loops)
    at.button(key="start_run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    job = session(at).current_job
    assert job, [e.value for e in at.error]
    # this job's end, not the previous run's "finished" still on screen
    poll(at, lambda a: bool(re.match(rf"status: (finished|error) · job {job}", status(a))),
         "the run")
    return job


def sim_pair(store: RunStore) -> None:
    save_agents(store, [Agent(agent_name="Ann", model_name="sim/eager"),
                        Agent(agent_name="Ben", model_name="sim/contrarian")])


# --- labels say which run it is -----------------------------------------------------------


def test_labels_name_each_run_and_analysis_opens_this_sessions_newest_finished_run(
        app: AppTest, store: RunStore):
    sim_pair(store)
    run_from_page(app, ["Ann", "Ben"], "Plan the offsite for the sales team")
    mine = run_from_page(app, ["Ann", "Ben"], "Pick a database", name="DB choice")

    def labels(at: AppTest) -> list[str]:
        return [p.label for p in at.sidebar.get("page_link")]

    # The sidebar is drawn before the status line in a script run, so the run that saw the
    # status "finished" may have drawn the sidebar before the run had even started.
    poll(app, lambda at: any("DB choice" in label for label in labels(at)), "the sidebar label")
    links = labels(app)
    assert any("Plan the offsite" in label for label in links), links
    assert any("DB choice" in label for label in links), links
    assert not any("dynamic-groupchat" in label for label in links)

    goto(app, "runs")
    table = app.dataframe[0].value
    assert list(table["run"].str.split(" · ").str[0]) == ["DB choice",
                                                         "Plan the offsite for the sales team"]
    for column in ("started", "ended"):  # local time to the second, no "T", no microseconds
        assert all(re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", v) for v in table[column])
    select_rows(app, [0, 1])
    app.toggle(key="compare_runs").set_value(True).run()
    metrics = next(d.value for d in app.dataframe if "metric" in d.value.columns)
    headers = [c for c in metrics.columns if c != "metric"]
    assert headers[0].startswith("A: DB choice · ") and "B: Plan the offsite" in headers[1]
    assert not any("dynamic-groupchat" in h for h in headers)

    goto(app, "analysis")
    picker = app.selectbox(key="analysis_run")
    assert any(o.startswith("Plan the offsite") for o in picker.options), picker.options
    assert not any(ISO_MICROS.search(o) for o in picker.options)
    assert not any("dynamic-groupchat" in o for o in picker.options)

    # Analysis opens this session's newest finished run, not a newer one still running
    my_run = job_registry.registry().snapshot(mine).run_id
    newer = analysis_logic.run_demo(store)  # another session's, finished later
    running = analysis_logic.run_demo(store)  # and one still running (newest of all)
    with store.write("test") as conn:
        conn.exec_driver_sql("UPDATE runs SET status='running', started_at='2999-01-01' "
                             "WHERE run_id=?", (running,))
    store_access.invalidate()
    assert store.list_runs().iloc[0]["run_id"] == running
    goto(app, "analysis")
    assert app.selectbox(key="analysis_run").value == my_run
    other = goto(new_app(), "analysis")  # no run of its own: anyone's newest ended run
    assert other.selectbox(key="analysis_run").value == newer


# --- feedback next to its control ---------------------------------------------------------


def _after(at: AppTest, key: str, kind: str) -> str:
    """The text of the first `kind` alert drawn after the widget `key` in page order."""
    seen, found = False, ""

    def walk(node: Any) -> None:
        nonlocal seen, found
        if found:
            return
        if getattr(node, "key", None) == key or getattr(getattr(node, "proto", None), "id",
                                                          "").endswith(key):
            seen = True
        if seen and getattr(node, "type", None) == kind:
            found = str(node.value)
        for child in getattr(node, "children", {}).values():
            walk(child)

    walk(at.main)
    return found


def test_import_errors_show_under_their_file_field_and_a_refused_start_under_its_button(
        app: AppTest, store: RunStore):
    goto(app, "agents")
    app.file_uploader(key="agents_upload").set_value(("bad.json", b"{not json", "x"))
    app.button(key="import_agents").click().run()
    assert "Nothing was imported from bad.json" in _after(app, "import_agents", "error")
    assert app.file_uploader(key="agents_upload").value is not None  # not cleared

    run_id = analysis_logic.run_demo(store)
    bundle = bundle_json(store, run_id)
    store.delete_run(run_id)
    store_access.invalidate()
    goto(app, "runs")
    broken = bundle.replace('"turns"', '"turnz"', 1).encode()
    app.file_uploader(key="bundle_upload").set_value(("broken.json", broken, "x"))
    app.button(key="import_bundle").click().run()
    assert "Nothing was imported from broken.json" in _after(app, "import_bundle", "error")
    assert app.file_uploader(key="bundle_upload").value is not None and store.list_runs().empty

    sim_pair(store)  # a refused start says why under the Start button
    fill(goto(app, "run"), run_roster=["Ann", "Ben"]).run()
    fill(app, run_task="   ")
    app.button(key="start_run").click().run()
    assert "the task must not be empty" in _after(app, "start_run", "error")
    assert session(app).job_ids == []


# --- over real HTTP: no readable bid, remembered modes, unknown cost ------------------------


def fake_agents(server: FakeOpenAIServer, models: dict[str, str]) -> list[Agent]:
    return [Agent(agent_name=name, model_name=f"openai/{model}", api_base=server.base_url,
                  num_retries=0, timeout=10) for name, model in models.items()]


def test_no_readable_bid_stops_the_run_and_both_pages_say_why(app: AppTest, store: RunStore,
                                                              server: FakeOpenAIServer):
    server.set_responder("prose", lambda body: text("I would rather not use the tool."))
    save_agents(store, fake_agents(server, {"Wordy": "prose", "Chatty": "talker"}))
    # turn 1: Chatty speaks; then Chatty goes quiet in prose too: no bid can be read
    server.script("talker", [tool_call(0.9, "Let us start.")])
    server.set_responder("talker", lambda body: text("Hmm, prose again."))
    run_from_page(app, ["Wordy", "Chatty"], "Is prose a bid?", max_loops=5)
    shown = errors(app)
    assert "no agent produced a readable bid" in shown, shown
    assert "**Wordy**" in shown and "**Chatty**" in shown  # each agent's reason
    assert "every bid failed" not in shown and "lull" not in status(app)
    assert {m.label: m.value for m in app.metric}["Stop reason"] == "error"

    goto(app, "analysis")
    assert "no agent produced a readable bid" in errors(app)
    reasons = next(d.value for d in app.dataframe if list(d.value.columns)[:2] == ["agent",
                                                                                  "path"])
    assert set(reasons["agent"]) == {"Wordy", "Chatty"} and reasons["error"].notna().all()
    app.session_state["analysis_tab"] = "Why?"  # only the open tab's content runs
    app.run()
    outcomes = app.selectbox(key="explain_turn").options
    assert any("no agent produced a readable bid" in o for o in outcomes), outcomes


def test_unknown_cost_shows_as_unknown_everywhere_and_settings_show_remembered_modes(
        app: AppTest, store: RunStore, server: FakeOpenAIServer):
    server.configure("picky", reject_forced_tool_choice=True)  # a mode to remember
    server.set_responder(None, lambda body: tool_call(0.9, "A word."))
    save_agents(store, fake_agents(server, {"P1": "picky", "P2": "picky"}))  # unpriced
    goto(app, "settings")
    assert app.button(key="reprobe_modes").disabled
    run_from_page(app, ["P1", "P2"], "Is this free?", max_loops=3)
    assert {m.label: m.value for m in app.metric}["Cost"] == "unknown"
    goto(app, "runs")
    assert list(app.dataframe[0].value["cost"]) == ["unknown"]
    goto(app, "analysis")
    assert any("cost unknown" in m.value for m in app.markdown)

    goto(app, "settings")
    table = next(d.value for d in app.dataframe if "mode" in d.value.columns)
    row = table.iloc[0]
    assert row["model"] == "openai/picky" and row["api_base"] == server.base_url
    assert row["mode"] != "forced" and re.fullmatch(r"(\d+ min )?\d+ s", row["expires in"])
    app.button(key="reprobe_modes").click().run()
    assert not any("mode" in d.value.columns for d in app.dataframe)
    assert any("probes from forced" in s.value for s in app.success)

    chat = GroupChat(agents=[Agent(agent_name="S1", model_name="sim/eager"),
                             Agent(agent_name="S2", model_name="sim/eager")],
                     max_loops=3)
    store.attach(chat)
    chat.run("Sims cost nothing")
    store_access.invalidate()
    goto(app, "runs")
    assert list(app.dataframe[0].value["cost"]) == ["$0.0000", "unknown"]
