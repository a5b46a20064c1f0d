"""Login and owners for real: the local OpenID Connect provider (`oidc_provider`), the
dashboard with `[auth]` configured (`serve_with_login`, tests/e2e/conftest.py), two users in
chromium who sign in by clicking their name at the provider, as a person picks an account.

Owners: a signed-out visitor sees only the login. Every URL carries its browser's session id
(`?sid=`): alice's Run form values survive her reloads, and bob opening her full URL sees the
run it names with a session of his own, none of her values, and what he sends never reaches
her form (issue 38 item 13). Alice starts a run, which the store records as hers; bob watches
it through its link but cannot stop it (Stop disabled, with the reason) nor delete it
(refused, naming why); he starts and stops a run of his own; alice stops hers.

Keys (issue 19 item 1): the server holds a canary OPENAI_API_KEY; alice imports agents
pointing `openai/...` at a hostile provider on loopback that echoes each request's
Authorization header; bob types a second canary in Settings and runs them. The hostile server
gets neither key, the store and every export hold neither; bob cannot edit or delete alice's
agents (the buttons are disabled) but can duplicate one.
"""

from __future__ import annotations

import re
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from groupchat_core import (
    CHAT_BOUNDS,
    Agent,
    bids_csv,
    bundle_json,
    dump_agents,
    transcript_markdown,
)
from groupchat_core.store import RunStore, dispose_engines
from groupchat_core.testing import FakeOpenAIServer, tool_call
from groupchat_ui.analysis import logic as analysis_logic
from tests.helpers.waits import eventually

from .conftest import (
    USERS,
    VIEWPORT,
    WAIT_MS,
    expect,
    fill_task,
    fresh,
    job_id,
    open_page,
    pick_roster,
    screenshot,
    serve_with_login,
    set_number,
    sign_in,
    start_run,
    status_line,
    wait_idle,
)

RUNNING = re.compile(r"^status: running · job [0-9a-f]{32}")


SERVER_CANARY = "sk-canary-server-env-0123456789abcdef"
SESSION_CANARY = "sk-canary-bobs-session-fedcba987654"
CANARIES = (SERVER_CANARY, SESSION_CANARY)
SID = re.compile(r"[?&]sid=([0-9a-f]{32})")


@pytest.fixture
def login_server(oidc_provider: str, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """The dashboard with login on, for this test alone, holding a canary OPENAI_API_KEY in
    its environment (a key of the server's that must never leave it)."""
    with serve_with_login(oidc_provider, tmp_path, {"OPENAI_API_KEY": SERVER_CANARY}) as served:
        yield served


def sid_of(page: Any) -> str:
    found = SID.search(page.url)
    assert found, page.url
    return found.group(1)


def send_run_form(page: Any, task: str, max_loops: int) -> None:
    """Type the task and max_loops, then Start with no agents picked: the form's values reach
    the server (they are remembered), and no run starts."""
    expect(page.get_by_role("heading", name="Run", exact=True)).to_be_visible(timeout=WAIT_MS)
    fill_task(page, task)
    set_number(page, "run_param_max_loops", max_loops)
    fresh(page, ".st-key-start_run button").click()
    expect(page.get_by_text(re.compile(r"^The run did not start: "))).to_be_visible(
        timeout=WAIT_MS)


def run_form(page: Any) -> tuple[str, str]:
    wait_idle(page)
    task = fresh(page, ".st-key-run_task textarea")
    expect(task).to_be_visible(timeout=WAIT_MS)
    return task.input_value(), fresh(page, ".st-key-run_param_max_loops input").input_value()


HOLD_S = 20.0  # each held reply: well inside the chat's 120 s bid_timeout


@pytest.fixture
def held_room(login_server: tuple[str, str]) -> Iterator[list[str]]:
    """Two agents on a fake OpenAI server that holds every reply HOLD_S seconds (until the
    test ends) and then always speaks: a run of theirs never tires and never lulls, so it
    cannot end by itself while the test runs (the sims it replaces fell silent after 22 turns,
    before bob looked). Yields the agents' names."""
    done = threading.Event()
    tag = uuid.uuid4().hex[:6]
    with FakeOpenAIServer() as fake:
        fake.set_responder(None, lambda body: (done.wait(HOLD_S),
                                               tool_call(0.9, "I would hold it by the sea."))[1])
        names = [f"Hold-{who}-{tag}" for who in ("A", "B")]
        RunStore(login_server[1]).save_agents([
            Agent(agent_name=name, model_name=f"openai/hold{tag}", api_base=fake.base_url,
                  num_retries=0) for name in names])
        dispose_engines()
        try:
            yield names
        finally:
            done.set()  # the held replies go out now; the runs were stopped before


def start_slow_run(page: Any, task: str, agents: list[str]) -> str:
    """A run of the held room's agents (`held_room`), which only Stop ends."""
    expect(status_line(page)).to_have_text(re.compile(r"^status: "), timeout=WAIT_MS)
    pick_roster(page, agents)
    fill_task(page, task)
    set_number(page, "run_param_max_loops", int(CHAT_BOUNDS["max_loops"].high))
    set_number(page, "run_param_threshold", 0.0)
    start_run(page)
    expect(status_line(page)).to_have_text(RUNNING, timeout=WAIT_MS)
    return job_id(page)


def stored_run(db_url: str, task: str) -> dict[str, Any]:
    """The run with this task, once its start is recorded (right after it starts)."""
    store = RunStore(db_url)

    def found() -> dict[str, Any] | None:
        runs = store.list_runs()
        rows = runs[runs["task"] == task]
        return dict(rows.iloc[0]) if len(rows) else None

    return eventually(found, f"run {task!r} reaching the store", step=0.2)


def stop(page: Any) -> str:
    """Click the (enabled) Stop; returns how the run ended (`cancelled`; `finished` would mean
    it ended on its own, which the held room rules out). A rerun landing at the click can
    swallow it: click again."""
    button = fresh(page, ".st-key-stop_run button").first
    ended = re.compile(r"^status: (cancelled|finished)")
    for _ in range(5):
        if ended.search(status_line(page).inner_text()):
            break
        try:
            expect(button).to_be_enabled(timeout=5_000)
            button.click(timeout=5_000)
            expect(status_line(page)).to_have_text(ended, timeout=10_000)
        except AssertionError:
            continue
        except Exception:  # playwright's TimeoutError: the button went (the run ended)
            continue
        break
    expect(status_line(page)).to_have_text(ended, timeout=WAIT_MS)
    return status_line(page).inner_text().split(" ")[1]


def test_sign_in_owns_runs_and_a_second_user_can_watch_but_not_stop_or_delete(
        login_server, held_room, open_context):
    app, db_url = login_server
    suffix = uuid.uuid4().hex[:6]
    tasks = {"alice": f"Alice asks: where should the offsite be? {suffix}",
             "bob": f"Bob asks: what should we eat? {suffix}"}
    contexts = {who: open_context(viewport=VIEWPORT) for who in USERS}
    alice, bob = (contexts[who].new_page() for who in USERS)
    run_id = analysis_logic.run_demo(RunStore(db_url))  # a run to share a link to
    dispose_engines()
    sign_in(alice, app, "alice")
    screenshot(alice, "login-alice-signed-in")
    plan = "Alice's unsent plan: a quiet offsite"
    send_run_form(alice, plan, 7)
    sid = sid_of(alice)
    alice.goto(f"{app}/run?sid={sid}")  # a reload of her browser keeps her form
    assert run_form(alice) == (plan, "7")
    alice.goto(f"{app}/analysis?run={run_id}&sid={sid}")
    expect(alice.get_by_text(f"Link to this run: analysis?run={run_id}")).to_be_visible(
        timeout=WAIT_MS)
    shared = alice.url
    assert f"sid={sid}" in shared and f"run={run_id}" in shared
    sign_in(bob, app, "bob")
    bob.goto(shared)  # Alice's full URL, pasted: the run it names, a session id of his own
    expect(bob.get_by_text(f"Link to this run: analysis?run={run_id}")).to_be_visible(
        timeout=WAIT_MS)
    expect(bob).to_have_url(re.compile(r"[?&]sid=(?!" + sid + r")[0-9a-f]{32}"),
                            timeout=WAIT_MS)
    bob.goto(f"{app}/run?sid={sid_of(bob)}")
    task, loops = run_form(bob)
    assert task != plan and loops != "7"
    send_run_form(bob, "Bob was here", 9)
    alice.goto(f"{app}/run?sid={sid}")  # her next reload: her values, not Bob's
    assert run_form(alice) == (plan, "7")

    alice_job = start_slow_run(alice, tasks["alice"], held_room)
    row = stored_run(db_url, tasks["alice"])
    assert (row["owner"], row["owner_name"]) == USERS["alice"]

    bob.goto(f"{app}/run?job={alice_job}")  # the job's link, shared
    expect(status_line(bob)).to_have_text(re.compile(
        rf"^status: running · job {alice_job} "), timeout=WAIT_MS)
    # the status line is drawn before the rest of the panel: wait for each part, not 5 s
    expect(fresh(bob, ".st-key-stop_run button").first).to_be_disabled(timeout=WAIT_MS)
    expect(bob.get_by_text("Only Alice Liddell, who started this run, can stop or delete "
                           "it; you can watch.")).to_be_visible(timeout=WAIT_MS)
    expect(bob.get_by_text("Started by Alice Liddell")).to_be_visible(timeout=WAIT_MS)
    screenshot(bob, "login-bob-watches-alice")

    open_page(bob, "Runs")  # alice's run alone in the table: select it, try to delete it
    wait_idle(bob)
    bob.locator(".st-key-filter_text input").fill(tasks["alice"])
    bob.locator(".st-key-apply_filters button").click()
    expect(bob.get_by_text("1 run(s)", exact=True)).to_be_visible(timeout=WAIT_MS)
    grid = bob.locator(".st-key-runs_table [data-testid='stDataFrameResizable']")
    expect(grid).to_be_visible(timeout=WAIT_MS)
    delete = bob.locator(".st-key-delete_runs button")
    for _ in range(5):
        wait_idle(bob)
        if delete.is_enabled():
            break
        box = grid.bounding_box()
        bob.mouse.click(box["x"] + 14, box["y"] + 17)  # the header: select all
        try:  # a second click before the rerun lands would select nothing again
            expect(delete).to_be_enabled(timeout=10_000)
            break
        except AssertionError:
            continue
    delete.click()
    expect(bob.get_by_text(re.compile(r"^Nothing was deleted: the run .+ was "
                                      r"started by someone else"))
           ).to_be_visible(timeout=WAIT_MS)
    expect(bob.locator(".st-key-confirm_delete_yes")).to_have_count(0)
    assert len(RunStore(db_url).list_runs()) == 2  # hers and the shared one

    bob.goto(f"{app}/run")
    expect(bob.get_by_role("heading", name="Run", exact=True)).to_be_visible(timeout=WAIT_MS)
    bob_job = start_slow_run(bob, tasks["bob"], held_room)
    assert bob_job != alice_job
    assert (stored_run(db_url, tasks["bob"])["owner"]) == USERS["bob"][0]
    expect(fresh(bob, ".st-key-stop_run button").first).to_be_enabled()
    assert stop(bob) == "cancelled"  # his own: Stop is enabled and works

    # bob's attempts left alice's run alone: it runs on, and she can stop it
    alice.bring_to_front()
    expect(status_line(alice)).to_have_text(re.compile(
        rf"^status: running · job {alice_job} "), timeout=WAIT_MS)
    assert stop(alice) == "cancelled"
    store = RunStore(db_url)

    def both_ends() -> dict[str, tuple[str, str]] | None:
        statuses = {r["task"]: (r["status"], r["owner"])
                    for r in store.list_runs().to_dict("records") if r["task"] in tasks.values()}
        return None if "running" in {s for s, _ in statuses.values()} else statuses

    statuses = eventually(both_ends, "the store recording both ends", step=0.2)
    assert statuses == {tasks["alice"]: ("cancelled", USERS["alice"][0]),  # her Stop
                        tasks["bob"]: ("cancelled", USERS["bob"][0])}


@pytest.fixture
def hostile() -> Iterator[FakeOpenAIServer]:
    """A provider that answers every bid with the Authorization header it was sent."""
    with FakeOpenAIServer() as server:
        server.echo_keys()
        yield server


def _no_canary(text: str, where: str) -> None:
    for canary in CANARIES:
        assert canary not in text, f"{canary!r} reached {where}"


def _import_agents(page: Any, agents: list[Agent]) -> None:
    open_page(page, "Agents")
    wait_idle(page)
    page.locator(".st-key-agents_upload input[type=file]").set_input_files(files=[{
        "name": "room.json", "mimeType": "application/json",
        "buffer": dump_agents(agents, "json").encode()}])
    expect(page.locator(".st-key-agents_upload").get_by_text("room.json")).to_be_visible(
        timeout=WAIT_MS)
    wait_idle(page)
    page.locator(".st-key-import_agents button").click()
    expect(page.get_by_test_id("stAlertContentSuccess").filter(
        has_text="Imported 2 agents")).to_be_visible(timeout=WAIT_MS)


def _type_session_key(page: Any, key: str) -> None:
    open_page(page, "Settings")
    wait_idle(page)
    page.locator(".st-key-key_OPENAI_API_KEY input").fill(key)
    page.locator(".st-key-save_keys button").click()
    expect(page.get_by_text(re.compile(r"^Set for this browser session .*OPENAI_API_KEY"))
           ).to_be_visible(timeout=WAIT_MS)


def test_keys_stay_home_and_others_cannot_change_an_agent(login_server, hostile, open_context,
                                                         tmp_path):
    app, db_url = login_server
    tag = uuid.uuid4().hex[:6]
    names = [f"Mallory{tag}", f"Eve{tag}"]
    agents = [Agent(agent_name=n, model_name="openai/x", api_base=hostile.base_url,
                    num_retries=0) for n in names]
    task = f"Bob asks the hostile room {tag}"
    contexts = [open_context(viewport=VIEWPORT) for _ in range(2)]
    alice, bob = (ctx.new_page() for ctx in contexts)
    sign_in(alice, app, "alice")
    _import_agents(alice, agents)

    sign_in(bob, app, "bob")
    _type_session_key(bob, SESSION_CANARY)
    open_page(bob, "Agents")
    wait_idle(bob)
    for kind in ("edit", "delete"):
        expect(fresh(bob, f".st-key-agent_{kind}_{names[0]} button").first).to_be_disabled(
            timeout=WAIT_MS)
    duplicate = fresh(bob, f".st-key-agent_dup_{names[0]} button").first
    expect(duplicate).to_be_enabled()
    duplicate.click()
    expect(bob.get_by_text(f"Duplicated {names[0]} as {names[0]} (copy).")).to_be_visible(
        timeout=WAIT_MS)

    open_page(bob, "Run")
    expect(status_line(bob)).to_have_text(re.compile(r"^status: "), timeout=WAIT_MS)
    pick_roster(bob, names)
    fill_task(bob, task)
    set_number(bob, "run_param_max_loops", 3)
    set_number(bob, "run_param_threshold", 0.0)
    start_run(bob)
    expect(status_line(bob)).to_have_text(re.compile(r"^status: finished"),
                                          timeout=WAIT_MS)

    sent = [r.headers.get("authorization", "") for r in hostile.requests]
    assert sent, "the hostile server was never called"
    for header in sent:
        _no_canary(header, "the hostile server")
    store = RunStore(db_url)
    runs = store.list_runs()
    run_id = str(runs[runs["task"] == task]["run_id"].iloc[0])
    assert store.run_info(run_id)["owner"] == "bob@example.org"
    contents = " ".join(m.content for m in store.load_run(run_id).messages)
    assert "You sent me no-key" in contents  # the echo was recorded: it carried no key
    _no_canary(bundle_json(store, run_id), "the json bundle")
    _no_canary(bids_csv(store, run_id), "the bids csv")
    _no_canary(transcript_markdown(store, run_id), "the md transcript")
    owners = store.agent_owners()
    assert owners[names[0]][0] == "alice@example.org"
    assert owners[f"{names[0]} (copy)"][0] == "bob@example.org"
    assert store.get_agent(names[0]).api_base == hostile.base_url  # unchanged by bob
    dispose_engines()
    raw = b"".join(p.read_bytes() for p in tmp_path.glob("groupchat.db*"))
    for canary in CANARIES:
        assert canary.encode() not in raw, f"{canary!r} reached the SQLite file"
