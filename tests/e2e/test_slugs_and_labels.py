"""In a real browser: every page answers at its own slug (`/run` used to say "Page not found"),
runs are labelled by their task or given name in the sidebar and the Analysis picker (not
"dynamic-groupchat"), and an import error shows right under its file field, which keeps the file.
"""

from __future__ import annotations

import re
import uuid
from typing import Any
from urllib.parse import urlparse

import pytest

from .conftest import (
    SCREENSHOTS,
    WAIT_MS,
    expect,
    fill_task,
    load_preset,
    open_page,
    set_number,
    start_run,
    status_line,
    wait_idle,
)

SHOTS = SCREENSHOTS / "labels"  # artifacts/ (git-ignored), like every e2e screenshot
SLUGS = {"run": "Run", "agents": "Agents", "analysis": "Analysis", "runs": "Runs",
         "sweeps": "Sweeps", "settings": "Settings"}


def shot(page: Any, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


@pytest.mark.parametrize("slug", ["", *SLUGS])
def test_every_page_has_a_working_slug(app_server: str, page: Any, slug: str):
    page.goto(f"{app_server}/{slug}")
    title = SLUGS.get(slug, "Run")  # the root opens the Run page at /run
    expect(page.get_by_role("heading", name=title, exact=True)).to_be_visible(timeout=WAIT_MS)
    wait_idle(page)
    expect(page.get_by_text("Page not found")).to_have_count(0)
    # the path, not the query: the page adds this browser's ?sid= to the URL
    assert urlparse(page.url).path.rstrip("/").endswith(f"/{slug or 'run'}"), page.url


def test_a_run_is_labelled_by_its_task_and_by_its_given_name(app_server: str, page: Any):
    suffix = uuid.uuid4().hex[:6]
    task = f"Plan the offsite {suffix}"
    page.goto(f"{app_server}/run")
    expect(status_line(page)).to_have_text(re.compile(r"^status: idle"), timeout=WAIT_MS)
    load_preset(page, "use_preset")
    wait_idle(page)
    fill_task(page, task)
    set_number(page, "run_param_max_loops", 3)
    start_run(page)
    expect(status_line(page)).to_have_text(re.compile(r"^status: finished"), timeout=WAIT_MS)
    sidebar = page.get_by_test_id("stSidebar")
    # the sidebar's job labels lead with time and id, so labels cut short still differ
    job_label = r"^\d\d:\d\d · [0-9a-f]{8} · "
    expect(sidebar.get_by_role("link", name=re.compile(f"{job_label}{task}$")).first
           ).to_be_visible(timeout=WAIT_MS)

    # a second run with a name of its own: the name labels it
    page.locator("summary").filter(has_text="New run").first.click()
    wait_idle(page)
    expect(page.locator(".st-key-run_task textarea")).to_be_visible(timeout=WAIT_MS)
    fill_task(page, f"Pick a database {suffix}")
    page.locator(".st-key-run_param_name input").fill(f"DB choice {suffix}")
    set_number(page, "run_param_max_loops", 3)
    start_run(page)  # waits until the status shows the new job, not the finished first one
    expect(status_line(page)).to_have_text(re.compile(r"^status: finished"), timeout=WAIT_MS)
    expect(sidebar.get_by_role("link", name=re.compile(f"{job_label}DB choice {suffix}$")).first
           ).to_be_visible(timeout=WAIT_MS)
    expect(sidebar.get_by_text("dynamic-groupchat")).to_have_count(0)
    shot(page, "run-labels-sidebar")

    open_page(page, "Analysis")  # opens this session's newest ended run, labelled by name
    picker = page.locator(".st-key-analysis_run").get_by_role("combobox")
    expect(picker).to_have_value(re.compile(
        rf"^DB choice {suffix} · \d{{4}}-\d\d-\d\d \d\d:\d\d · [0-9a-f]{{8}}$"),
        timeout=WAIT_MS)  # local time to the minute: no "T", no microseconds
    shot(page, "analysis-picker-label")


def test_an_agents_import_error_shows_under_its_field_and_keeps_the_file(app_server: str,
                                                                         page: Any):
    page.goto(f"{app_server}/agents")
    expect(page.get_by_role("heading", name="Agents", exact=True)).to_be_visible(
        timeout=WAIT_MS)
    wait_idle(page)
    field = page.locator(".st-key-agents_upload input[type=file]")
    field.set_input_files(files=[{"name": "bad.json", "mimeType": "application/json",
                                  "buffer": b"{this is not json"}])
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
    shot(page, "agents-import-error")
