"""Deleting a sweep from the Sweeps page in a real browser: the button, a confirmation naming
the sweep, then the sweep and its runs are gone from the store (issue 19, row 9).

The served app has no login, so its session is the local user, who manages sweeps nobody is
recorded as owning (a script made this one). Who may delete what when people sign in is
tests/ui/test_ownership_delete.py.
"""

from __future__ import annotations

import re
import uuid

from groupchat_core.store import RunStore
from groupchat_core.sweeps import parse_sweep, run_sweep
from groupchat_ui.kit.presets import DEBATE_TRIO

from .conftest import WAIT_MS, expect, wait_idle


def test_a_sweep_is_deleted_from_the_sweeps_page_after_a_confirmation_naming_it(
        app_server, app_db_url, page):
    name = f"delete me {uuid.uuid4().hex[:6]}"
    store = RunStore(app_db_url)
    agents = [a.to_spec() for a in DEBATE_TRIO.build_agents(latency_s=0.0)]
    outcome = run_sweep(parse_sweep({"name": name, "base": {"max_loops": 4, "agents": agents},
                                     "grid": {"threshold": [0.4, 0.6]}, "tasks": ["Plan it."]}),
                        store)
    sweep_id = outcome.sweep_id
    assert len(store.list_runs(sweep_id=sweep_id)) == 2

    page.goto(f"{app_server}/sweeps?sweep={sweep_id}")
    expect(page.get_by_role("heading", name="Sweeps", exact=True)).to_be_visible(timeout=WAIT_MS)
    delete = page.locator(".st-key-sw_delete").get_by_role("button", name="Delete sweep")
    expect(delete).to_be_enabled(timeout=WAIT_MS)
    wait_idle(page)
    delete.click()
    question = page.locator(".st-key-confirm_sweep_delete_box")
    expect(question).to_contain_text(f"Delete sweep {name} ({sweep_id[:8]}) and its 2 run(s) "
                                      "for good?", timeout=WAIT_MS)
    assert len(store.list_sweeps().query("sweep_id == @sweep_id")) == 1  # not before "yes"
    page.locator(".st-key-confirm_sweep_delete_yes button").click()
    expect(page.get_by_text(f"Deleted sweep {sweep_id[:8]} and its 2 run(s).")
           ).to_be_visible(timeout=WAIT_MS)
    expect(page.locator(".st-key-confirm_sweep_delete_box")).to_have_count(0)
    assert sweep_id not in set(store.list_sweeps()["sweep_id"])
    assert store.list_runs(sweep_id=sweep_id).empty
    assert not re.search(sweep_id, page.url)  # the page no longer points at it
