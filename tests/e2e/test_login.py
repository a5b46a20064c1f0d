"""Login and owners for real, in one journey: the local OpenID Connect provider
(`oidc_provider`), the dashboard with `[auth]` configured (`serve_with_login`,
tests/e2e/conftest.py), two users in two chromium contexts (two cookie jars) who sign in by
clicking their name at the provider, as a person picks an account.

A signed-out visitor sees only the login. Alice types a key in Settings and starts a run, which
the store records as hers; bob opens her full URL (her `?sid=` in it) and gets a session id of
his own (issue 38 item 13), watching her run but unable to stop or delete it (Stop disabled,
with the reason); she stops it. Keys (issue 19 item 1): the server holds a canary
OPENAI_API_KEY and alice's Settings key is another; her agents point `openai/...` at a provider
on loopback (not a trusted endpoint), which gets neither key, and the store, every export and
the SQLite file hold neither.

What needs no browser is checked in AppTest with a simulated sign-in (tests/ui/): drafts kept
per browser session (test_links.py), refused deletes on the Runs page, a user's own runs
stopped by him, keys kept to one session and agents locked to their owner (test_ownership.py).
"""

from __future__ import annotations

import re
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from groupchat_core import CHAT_BOUNDS, Agent, bids_csv, bundle_json, transcript_markdown
from groupchat_core.store import RunStore, dispose_engines
from groupchat_core.testing import FakeOpenAIServer, tool_call
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
SESSION_CANARY = "sk-canary-alices-session-fedcba987654"
CANARIES = (SERVER_CANARY, SESSION_CANARY)
SID = re.compile(r"[?&]sid=([0-9a-f]{32})")
HOLD_S = 20.0  # each held reply: well inside the chat's 120 s bid_timeout


@pytest.fixture
def login_server(oidc_provider: str, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """The dashboard with login on, for this test alone, holding a canary OPENAI_API_KEY in
    its environment (a key of the server's that must never leave it)."""
    with serve_with_login(oidc_provider, tmp_path, {"OPENAI_API_KEY": SERVER_CANARY}) as served:
        yield served


@pytest.fixture
def held_room(login_server: tuple[str, str]) -> Iterator[tuple[list[str], list[str]]]:
    """Two `openai/...` agents on a fake provider on loopback (an untrusted endpoint) that holds
    every reply HOLD_S seconds (until the test ends) and then always speaks: a run of theirs
    never tires and never lulls, so it cannot end by itself while the test runs. Yields the
    agents' names and the Authorization header of every request the provider got (read as it
    arrives, before the reply is held)."""
    done = threading.Event()
    sent: list[str] = []
    tag = uuid.uuid4().hex[:6]
    with FakeOpenAIServer() as fake:
        def hold(body: dict[str, Any]) -> Any:
            sent.append(fake.request_headers().get("authorization", ""))
            done.wait(HOLD_S)
            return tool_call(0.9, "I would hold it by the sea.")

        fake.set_responder(None, hold)
        names = [f"Hold-{who}-{tag}" for who in ("A", "B")]
        RunStore(login_server[1]).save_agents([
            Agent(agent_name=name, model_name=f"openai/hold{tag}", api_base=fake.base_url,
                  num_retries=0) for name in names])
        dispose_engines()
        try:
            yield names, sent
        finally:
            done.set()  # the held replies go out now; the run was stopped before


def sid_of(page: Any) -> str:
    found = SID.search(page.url)
    assert found, page.url
    return found.group(1)


def type_session_key(page: Any, key: str) -> None:
    open_page(page, "Settings")
    wait_idle(page)
    page.locator(".st-key-key_OPENAI_API_KEY input").fill(key)
    page.locator(".st-key-save_keys button").click()
    expect(page.get_by_text(re.compile(r"^Set for this browser session .*OPENAI_API_KEY"))
           ).to_be_visible(timeout=WAIT_MS)


def start_slow_run(page: Any, task: str, agents: list[str]) -> str:
    """A run of the held room's agents (`held_room`), which only Stop ends."""
    open_page(page, "Run")
    expect(status_line(page)).to_have_text(re.compile(r"^status: "), timeout=WAIT_MS)
    pick_roster(page, agents)
    fill_task(page, task)
    set_number(page, "run_param_max_loops", int(CHAT_BOUNDS["max_loops"].high))
    set_number(page, "run_param_threshold", 0.0)
    start_run(page)
    expect(status_line(page)).to_have_text(RUNNING, timeout=WAIT_MS)
    return job_id(page)


def stored_run(store: RunStore, task: str, ended: bool = False) -> dict[str, Any]:
    """The run with this task, once its start is recorded (or, with `ended`, its end)."""
    def found() -> dict[str, Any] | None:
        runs = store.list_runs()
        rows = runs[runs["task"] == task]
        if not len(rows) or (ended and rows.iloc[0]["status"] == "running"):
            return None
        return dict(rows.iloc[0])

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


def no_canary(text: str, where: str) -> None:
    for canary in CANARIES:
        assert canary not in text, f"{canary!r} reached {where}"


def test_sign_in_owns_a_run_a_second_user_watches_but_cannot_stop_and_keys_stay_home(
        login_server, held_room, open_context, tmp_path):
    app, db_url = login_server
    agents, sent = held_room
    task = f"Alice asks: where should the offsite be? {uuid.uuid4().hex[:6]}"
    alice, bob = (open_context(viewport=VIEWPORT).new_page() for _ in USERS)
    sign_in(alice, app, "alice")
    screenshot(alice, "login-alice-signed-in")
    type_session_key(alice, SESSION_CANARY)
    alice_job = start_slow_run(alice, task, agents)
    store = RunStore(db_url)
    row = stored_run(store, task)
    assert (row["owner"], row["owner_name"]) == USERS["alice"]
    shared, sid = alice.url, sid_of(alice)  # her full URL: the job and her browser's id
    assert f"job={alice_job}" in shared

    sign_in(bob, app, "bob")
    bob.goto(shared)  # pasted: the job it names, with a session id of his own
    expect(status_line(bob)).to_have_text(re.compile(
        rf"^status: running · job {alice_job} "), timeout=WAIT_MS)
    expect(bob).to_have_url(re.compile(r"[?&]sid=(?!" + sid + r")[0-9a-f]{32}"),
                            timeout=WAIT_MS)
    # the status line is drawn before the rest of the panel: wait for each part, not 5 s
    expect(fresh(bob, ".st-key-stop_run button").first).to_be_disabled(timeout=WAIT_MS)
    expect(bob.get_by_text("Only Alice Liddell, who started this run, can stop or delete "
                           "it; you can watch.")).to_be_visible(timeout=WAIT_MS)
    expect(bob.get_by_text("Started by Alice Liddell")).to_be_visible(timeout=WAIT_MS)
    screenshot(bob, "login-bob-watches-alice")

    # bob's look left her run alone: it runs on, and she can stop it
    alice.bring_to_front()
    expect(status_line(alice)).to_have_text(re.compile(
        rf"^status: running · job {alice_job} "), timeout=WAIT_MS)
    assert stop(alice) == "cancelled"
    row = stored_run(store, task, ended=True)
    assert (row["status"], row["owner"]) == ("cancelled", USERS["alice"][0])

    # Keys stay home: the untrusted provider got the placeholder, never her key nor the
    # server's; the store, its exports and the SQLite file hold neither.
    assert sent, "the provider was never called"
    assert set(sent) == {"Bearer no-key"}, sent
    run_id = str(row["run_id"])
    no_canary(bundle_json(store, run_id), "the json bundle")
    no_canary(bids_csv(store, run_id), "the bids csv")
    no_canary(transcript_markdown(store, run_id), "the md transcript")
    dispose_engines()
    raw = b"".join(p.read_bytes() for p in tmp_path.glob("groupchat.db*"))
    for canary in CANARIES:
        assert canary.encode() not in raw, f"{canary!r} reached the SQLite file"
