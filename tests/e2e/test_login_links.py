"""A link with login on (issue 38, item 13), for real: a local OIDC provider, the dashboard
with `[auth]`, and two signed-in users in chromium (the provider and server as in
tests/e2e/test_login.py, started afresh for this module).

Every URL of the app carries its browser's session id (`?sid=`). Alice types a task and
max_loops into her Run form and sends it (Start, with no agents picked: nothing starts, the
values are remembered for her reloads), then opens a run on Analysis and hands her full URL
to Bob. Bob, signed in, opens it: he sees that run, with a session id of his own; his Run form
holds none of Alice's values, and what he sends there never reaches Alice's form.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from groupchat_core.store import RunStore, dispose_engines
from groupchat_ui.analysis import logic as analysis_logic

from .conftest import VIEWPORT, WAIT_MS, expect, fill_task, fresh, set_number, wait_idle
from .test_login import oidc_provider, serve_with_login, sign_in

__all__ = ["oidc_provider"]  # a fixture of this module too (its own provider)

SID = re.compile(r"[?&]sid=([0-9a-f]{32})")


@pytest.fixture(scope="module")
def login_server(oidc_provider: str,
                 tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    with serve_with_login(oidc_provider, tmp_path_factory.mktemp("login_links")) as served:
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


def test_a_signed_in_user_opening_anothers_full_url_gets_his_own_session(
        login_server, open_context):
    app, db_url = login_server
    run_id = analysis_logic.run_demo(RunStore(db_url))
    dispose_engines()
    alice, bob = (open_context(viewport=VIEWPORT).new_page() for _ in range(2))
    sign_in(alice, app, "alice")
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
    bob.goto(shared)  # Alice's full URL, pasted
    expect(bob.get_by_text(f"Link to this run: analysis?run={run_id}")).to_be_visible(
        timeout=WAIT_MS)  # the run it names
    expect(bob).to_have_url(re.compile(r"[?&]sid=(?!" + sid + r")[0-9a-f]{32}"),
                            timeout=WAIT_MS)
    bob.goto(f"{app}/run?sid={sid_of(bob)}")
    task, loops = run_form(bob)
    assert task != plan and loops != "7"
    send_run_form(bob, "Bob was here", 9)

    alice.goto(f"{app}/run?sid={sid}")  # her next reload: her values, not Bob's
    assert run_form(alice) == (plan, "7")
