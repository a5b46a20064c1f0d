"""The dashboard loads in a real browser and its navigation lists all five pages."""

from __future__ import annotations

from .conftest import screenshot

PAGES = ("Agents", "Run", "Analysis", "Runs", "Sweeps", "Settings")


def test_app_loads_with_all_five_pages(app_server, page):
    page.goto(app_server)
    page.get_by_text("status: idle").wait_for(timeout=60_000)  # the Run page, rendered
    nav = page.get_by_test_id("stSidebarNav")
    lines = [line.strip() for line in nav.inner_text().splitlines() if line.strip()]
    assert all(title in lines for title in PAGES), lines
    page.get_by_test_id("stSidebarNav").get_by_text("Agents", exact=True).click()
    page.get_by_role("heading", name="Agents", exact=True).wait_for(timeout=30_000)
    screenshot(page, "smoke")
