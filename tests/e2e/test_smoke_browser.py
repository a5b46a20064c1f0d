"""The dashboard loads in a real browser and its navigation lists all five pages; a failed
browser test keeps what its tabs and the app server showed."""

from __future__ import annotations

import re

from . import evidence
from .conftest import VIEWPORT, WAIT_MS, expect, screenshot

PAGES = ("Agents", "Run", "Analysis", "Runs", "Sweeps", "Settings")


def test_app_loads_with_all_five_pages(app_server, page):
    """... and offline: no request leaves the app's own server (the favicon, a Material icon,
    was fetched from Google's font host on every load)."""
    asked: list[str] = []
    page.on("request", lambda request: asked.append(request.url))
    page.goto(app_server)
    page.get_by_text("status: idle").wait_for(timeout=60_000)  # the Run page, rendered
    icon = page.locator("link[rel~='icon']").first.get_attribute("href") or ""
    assert icon.startswith("data:image/svg+xml"), icon[:80]
    elsewhere = [u for u in asked if not u.startswith((app_server, "data:", "blob:"))]
    assert not elsewhere, elsewhere
    logo = page.get_by_test_id("stSidebarLogo")  # the app's name atop the sidebar
    expect(logo).to_be_visible()
    assert (logo.get_attribute("src") or "").startswith("data:image/svg+xml")
    nav = page.get_by_test_id("stSidebarNav")
    lines = [line.strip() for line in nav.inner_text().splitlines() if line.strip()]
    assert all(title in lines for title in PAGES), lines
    page.get_by_test_id("stSidebarNav").get_by_text("Agents", exact=True).click()
    page.get_by_role("heading", name="Agents", exact=True).wait_for(timeout=30_000)
    screenshot(page, "smoke")


def test_a_failure_keeps_each_tab_and_the_app_servers_stacks(app_server, page, open_context,
                                                             tmp_path, monkeypatch):
    """What a failed browser test leaves (evidence.py): read from two live tabs and the app
    server, as the report hook does when a test fails."""
    monkeypatch.setattr(evidence, "FAILURES", tmp_path)
    page.goto(app_server)
    expect(page.get_by_text("status: idle")).to_be_visible(timeout=WAIT_MS)
    other = open_context(viewport=VIEWPORT).new_page()
    other.goto(f"{app_server}/agents")
    expect(other.get_by_role("heading", name="Agents", exact=True)).to_be_visible(
        timeout=WAIT_MS)
    other.evaluate("() => console.error('kept for the report')")

    said = evidence.keep("tests/e2e/x.py::test_x", [page.context, other.context])

    tabs = re.findall(r"^tab (tab\d): (\S+)$", said, re.MULTILINE)
    assert [url.split("?")[0] for _, url in tabs] == [f"{app_server}/run", f"{app_server}/agents"]
    traffic = [int(n) for n in re.findall(r"'received': (\d+)", said)]
    assert len(traffic) == 2 and min(traffic) > 0, said  # both tabs' websockets were counted
    assert "'script': 'notRunning'" in said and "error: kept for the report" in said
    assert re.search(r"app server \d+, thread stacks now:\n.*groupchat_ui/kit/server\.py",
                     said, re.DOTALL), said
    folder = tmp_path / "tests_e2e_x.py_test_x"
    for name in ("tab0.png", "tab0.html", "tab1.png", "tab1.console.txt"):
        assert (folder / name).stat().st_size > 0, name
    assert "kept for the report" in (folder / "tab1.console.txt").read_text()
