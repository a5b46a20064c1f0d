"""Login for real: a local OpenID Connect provider, the dashboard with `[auth]` configured, and
two users in chromium.

The provider is `oidc-provider-mock` (a Flask app) on 127.0.0.1 in a thread; its authorization
page offers the predefined users as buttons, so a test signs in by clicking "alice" as a person
picks an account. The app server is a second `streamlit run` of this checkout whose secrets
file (`--secrets.files`, outside the repo) holds the `[auth]` section and nothing else, with its
own SQLite file.

What it shows: a signed-out visitor sees only the login; alice signs in and starts a run, which
the store records as hers; bob, signed in in another browser context, watches alice's running
job through its link but cannot stop it (Stop disabled, with the reason) nor delete her run
(refused, naming why); he starts and stops a run of his own; alice stops hers.
"""

from __future__ import annotations

import re
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from groupchat_core import CHAT_BOUNDS, Agent
from groupchat_core.store import RunStore, dispose_engines
from groupchat_core.testing import FakeOpenAIServer, tool_call

from .conftest import (
    VIEWPORT,
    WAIT_MS,
    expect,
    fill_task,
    free_port,
    fresh,
    job_id,
    open_page,
    pick_roster,
    screenshot,
    serve_app,
    set_number,
    start_run,
    status_line,
    wait_idle,
)

USERS = {"alice": ("alice@example.org", "Alice Liddell"), "bob": ("bob@example.org", "Bob Lee")}
RUNNING = re.compile(r"^status: running · job [0-9a-f]{32}")


@pytest.fixture(scope="module")
def oidc_provider() -> Iterator[str]:
    """A local OIDC provider on 127.0.0.1 (random port) knowing alice and bob; yields its URL."""
    import oidc_provider_mock
    import werkzeug.serving

    users = [oidc_provider_mock.User(sub=sub, claims={"email": email, "email_verified": True,
                                                      "name": name})
             for sub, (email, name) in USERS.items()]
    server = werkzeug.serving.make_server(
        "127.0.0.1", 0, oidc_provider_mock.app(user_claims=users), threaded=True)
    thread = threading.Thread(target=server.serve_forever, args=(0.1,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        thread.join(5)
        server.server_close()


@contextmanager
def serve_with_login(provider: str, data: Path,
                     extra_env: dict[str, str] | None = None) -> Iterator[tuple[str, str]]:
    """`streamlit run streamlit_app.py` with `[auth]` in a secrets file of its own (and
    `extra_env` in its environment); yields (app URL, store URL)."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    secrets = data / "secrets.toml"
    secrets.write_text(
        "[auth]\n"
        f'redirect_uri = "{url}/oauth2callback"\n'
        f'cookie_secret = "{uuid.uuid4().hex}{uuid.uuid4().hex}"\n'
        'client_id = "groupchat-lab-test"\n'
        'client_secret = "not-a-real-secret"\n'
        f'server_metadata_url = "{provider}/.well-known/openid-configuration"\n',
        encoding="utf-8")
    db_url = f"sqlite:///{data}/groupchat.db"
    store = RunStore(db_url)  # two slow sim agents to pick from
    slow = {"sim_latency": 0.8}
    store.save_agents([Agent(agent_name=n, model_name="sim/eager", litellm_kwargs=slow)
                       for n in ("Ann", "Ben")])
    dispose_engines()
    with serve_app(db_url, data / "streamlit.log", port,
                   ["--secrets.files", str(secrets)], extra_env) as served:
        assert served == url
        yield url, db_url


@pytest.fixture(scope="module")
def login_server(oidc_provider: str,
                 tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    with serve_with_login(oidc_provider, tmp_path_factory.mktemp("login")) as served:
        yield served


def sign_in(page: Any, app: str, who: str) -> None:
    """Open the app signed out (only the login), log in, pick the user at the provider."""
    page.goto(app)
    login = page.locator(".st-key-login button")
    expect(login).to_be_visible(timeout=WAIT_MS)
    expect(page.get_by_role("heading", name="GroupChat Lab")).to_be_visible()
    wait_idle(page)
    assert page.get_by_test_id("stSidebarNav").count() == 0  # no pages for a visitor
    assert status_line(page).count() == 0 and "Data:" not in page.content()
    login.click()
    page.get_by_role("button", name=who, exact=True).click(timeout=WAIT_MS)  # the provider
    expect(page.get_by_role("heading", name="Run", exact=True)).to_be_visible(timeout=WAIT_MS)
    expect(page.get_by_test_id("stSidebar").get_by_text(re.compile(
        rf"^Signed in as {USERS[who][1]} \({re.escape(USERS[who][0])}\)$"))
    ).to_be_visible(timeout=WAIT_MS)
    expect(page.locator(".st-key-logout button")).to_be_visible()


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
    deadline = time.monotonic() + WAIT_MS / 1000
    while True:
        runs = store.list_runs()
        found = runs[runs["task"] == task]
        if len(found):
            return dict(found.iloc[0])
        assert time.monotonic() < deadline, f"run {task!r} never reached the store"
        time.sleep(0.2)


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
    sign_in(alice, app, "alice")
    screenshot(alice, "login-alice-signed-in")
    alice_job = start_slow_run(alice, tasks["alice"], held_room)
    row = stored_run(db_url, tasks["alice"])
    assert (row["owner"], row["owner_name"]) == USERS["alice"]

    sign_in(bob, app, "bob")
    bob.goto(f"{app}/run?job={alice_job}")  # the job's link, shared
    expect(status_line(bob)).to_have_text(re.compile(
        rf"^status: running · job {alice_job} "), timeout=WAIT_MS)
    # the status line is drawn before the rest of the panel: wait for each part, not 5 s
    expect(fresh(bob, ".st-key-stop_run button").first).to_be_disabled(timeout=WAIT_MS)
    expect(bob.get_by_text("Only Alice Liddell, who started this run, can stop or delete "
                           "it; you can watch.")).to_be_visible(timeout=WAIT_MS)
    expect(bob.get_by_text("Started by Alice Liddell")).to_be_visible(timeout=WAIT_MS)
    screenshot(bob, "login-bob-watches-alice")

    open_page(bob, "Runs")  # alice's run is the only one: select it, try to delete it
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
    assert len(RunStore(db_url).list_runs()) == 1

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
    statuses = {r["task"]: (r["status"], r["owner"]) for r in store.list_runs().to_dict("records")}
    deadline = time.monotonic() + WAIT_MS / 1000
    while any(s == "running" for s, _ in statuses.values()) and time.monotonic() < deadline:
        time.sleep(0.2)
        statuses = {r["task"]: (r["status"], r["owner"])
                    for r in store.list_runs().to_dict("records")}
    assert statuses == {tasks["alice"]: ("cancelled", USERS["alice"][0]),  # her Stop
                        tasks["bob"]: ("cancelled", USERS["bob"][0])}
