"""The app loads in a real browser and runs an offline sim debate."""

from __future__ import annotations

from .conftest import screenshot


def test_sim_debate_in_the_browser(app_server, page):
    page.goto(app_server)
    page.get_by_role("button", name="Run debate").click()
    page.get_by_text("stop reason:").wait_for(timeout=60_000)
    assert page.get_by_text("(simulated)").count() >= 1
    screenshot(page, "smoke")
