"""A sweep run on Ray from the Sweeps page, in a real browser (issue 21 item 5): once it has
ended, the page says the cluster is disconnected and shows the per-worker table (cells each
worker finished), in the live panel and again after a reload."""

from __future__ import annotations

import re

import pytest

from .conftest import WAIT_MS, expect, fresh, screenshot, wait_idle
from .test_sweep_status import fill, start_sweep

pytest.importorskip("ray", reason="the ray extra is not installed (requirements-ray.txt)")


def test_a_ray_sweep_shows_its_workers_when_it_ends(app_server, page):
    page.goto(f"{app_server}/sweeps")
    expect(page.get_by_role("heading", name="Sweeps", exact=True)).to_be_visible(timeout=WAIT_MS)
    wait_idle(page)
    fill(page, "sw_threshold", "0.4, 0.6")
    fill(page, "sw_max_loops", "3")
    fill(page, "sw_repeats", "1")
    page.locator(".st-key-sw_executor").get_by_text("a Ray cluster", exact=True).click()
    wait_idle(page)
    start_sweep(page)
    ray_line = fresh(page, '[data-testid="stCaptionContainer"]').filter(
        has_text=re.compile(r"^cells ran on Ray · .* · disconnected"))
    expect(ray_line.first).to_be_visible(timeout=WAIT_MS * 4)  # a local cluster starts first
    live = fresh(page, '[data-testid="stCaptionContainer"]').filter(
        has_text=re.compile(r"^Ray workers: [1-9]\d* worker\(s\) ran [1-9]\d* finished cell"))
    expect(live.first).to_be_visible(timeout=WAIT_MS)
    screenshot(page, "after-sweeps-ray-workers-desktop")
    # after a reload (a new browser session: no live panel), Cells & runs still shows them
    page.reload()
    expect(page.get_by_role("heading", name="Results")).to_be_visible(timeout=WAIT_MS)
    wait_idle(page)
    tab = fresh(page, '[data-testid="stTab"]').filter(has_text=re.compile("^Cells & runs$"))
    tab.click()
    expect(tab).to_have_attribute("aria-selected", "true", timeout=WAIT_MS)
    panel = fresh(page, '[data-testid="stTabPanel"]:visible')
    expect(panel.get_by_text(re.compile(r"^Ray workers: [1-9]\d* worker\(s\) ran [1-9]\d* "
                                        r"finished cell"))).to_be_visible(timeout=WAIT_MS)
    expect(panel.get_by_text(re.compile(r"^cells ran on Ray · .* · disconnected"))
           ).to_be_visible()
    screenshot(page, "after-sweeps-ray-workers-reload-desktop")
