"""A first visit in a real browser: the dashboard loads offline, its navigation lists every
page and each answers at its own slug; and a failed browser test keeps what its tabs and the
app server showed."""

from __future__ import annotations

import re
from collections.abc import Iterator
from urllib.parse import urlparse

import pytest

from . import evidence
from .conftest import VIEWPORT, WAIT_MS, expect, open_page, screenshot, serve_app, wait_idle

SLUGS = {"run": "Run", "agents": "Agents", "analysis": "Analysis", "runs": "Runs",
         "sweeps": "Sweeps", "settings": "Settings"}


@pytest.fixture(scope="module")
def app_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One app server and store for this module's two tests: neither writes to the store (the
    import is refused, nothing is saved) and each opens its own browser sessions, so each still
    sees an empty store and a session of its own, in either order; one start less (~7 s)."""
    data = tmp_path_factory.mktemp("smoke-app")
    with serve_app(f"sqlite:///{data}/groupchat.db", data / "streamlit.log") as url:
        yield url


def test_a_first_visit_stays_offline_and_every_page_answers_at_its_slug(app_server, page):
    """No request leaves the app's own server (the favicon, a Material icon, was fetched from
    Google's font host on every load); every page answers at its slug (`/run` once said "Page
    not found"); an import error shows right under its file field, which keeps the file."""
    asked: list[str] = []
    page.on("request", lambda request: asked.append(request.url))
    page.goto(app_server)
    expect(page.get_by_text("status: idle")).to_be_visible(timeout=WAIT_MS)  # the Run page
    icon = page.locator("link[rel~='icon']").first.get_attribute("href") or ""
    assert icon.startswith("data:image/svg+xml"), icon[:80]
    logo = page.get_by_test_id("stSidebarLogo")  # the app's name atop the sidebar
    expect(logo).to_be_visible()
    assert (logo.get_attribute("src") or "").startswith("data:image/svg+xml")
    nav = page.get_by_test_id("stSidebarNav")
    lines = [line.strip() for line in nav.inner_text().splitlines() if line.strip()]
    assert all(title in lines for title in SLUGS.values()), lines

    for slug in ("", *SLUGS):
        page.goto(f"{app_server}/{slug}")
        title = SLUGS.get(slug, "Run")  # the root opens the Run page at /run
        expect(page.get_by_role("heading", name=title, exact=True)).to_be_visible(
            timeout=WAIT_MS)
        wait_idle(page)
        expect(page.get_by_text("Page not found")).to_have_count(0)
        # the path, not the query: the page adds this browser's ?sid= to the URL
        assert urlparse(page.url).path.rstrip("/").endswith(f"/{slug or 'run'}"), page.url

    open_page(page, "Agents")
    wait_idle(page)
    page.locator(".st-key-agents_upload input[type=file]").set_input_files(files=[{
        "name": "bad.json", "mimeType": "application/json", "buffer": b"{this is not json"}])
    expect(page.locator(".st-key-agents_upload").get_by_text("bad.json")).to_be_visible(
        timeout=WAIT_MS)
    wait_idle(page)
    page.locator(".st-key-import_agents button").click()
    alert = page.get_by_test_id("stAlertContentError").filter(
        has_text="Nothing was imported from bad.json")
    expect(alert).to_be_visible(timeout=WAIT_MS)
    button, box = page.locator(".st-key-import_agents").bounding_box(), alert.bounding_box()
    assert button and box
    assert 0 <= box["y"] - (button["y"] + button["height"]) < 150, (button, box)
    expect(page.locator(".st-key-agents_upload").get_by_text("bad.json")).to_be_visible()
    screenshot(page, "smoke")
    elsewhere = [u for u in asked if not u.startswith((app_server, "data:", "blob:"))]
    assert not elsewhere, elsewhere


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
