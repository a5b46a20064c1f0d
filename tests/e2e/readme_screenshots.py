"""The README's screenshots, taken from the real app in Debian's chromium (not a test).

    .venv/bin/python -m tests.e2e.readme_screenshots     # writes docs/screenshots/*.png

Serves the app on a free port with a fresh SQLite file in a temporary folder, records a few
offline runs (the offline presets, several seeds) so the Runs table has rows, then walks the pages
at 1280 px wide: Agents with the debate trio loaded, Run in the middle of a live chat, Analysis
of that run, Runs, Settings. PNGs are kept under 300 KB (quantised if needed).
"""

from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

from .conftest import (
    CHROMIUM,
    CHROMIUM_ARGS,
    ROOT,
    WAIT_MS,
    expect,
    open_page,
    serve_app,
    status_line,
    wait_idle,
    wait_plots,
)

OUT = ROOT / "docs" / "screenshots"
WIDTH = 1280
MAX_BYTES = 300_000
MID_RUN = re.compile(r"^status: running · job \w+ · turn \d+ · messages ([3-9]|\d\d+)$")


def record_runs(db_url: str) -> None:
    """Offline runs of both presets with a few seeds, recorded into the app's store."""
    from groupchat_core import GroupChat, is_sim_model
    from groupchat_core.store import RunStore
    from groupchat_ui.kit.presets import PRESETS

    store = RunStore(db_url)
    offline = [p for p in PRESETS.values() if all(is_sim_model(a[2]) for a in p.agents)]
    for preset in offline:  # the local-LLM preset needs `make llm` running
        for seed in (1, 2, 3):
            chat = GroupChat(name=preset.name, agents=preset.build_agents(latency_s=0.0),
                             seed=seed, **dict(preset.settings))
            store.attach(chat)
            chat.run(preset.task)
    store.flush(timeout=30)


def shoot(page: Any, name: str, height: int) -> Path:
    page.set_viewport_size({"width": WIDTH, "height": height})
    page.mouse.move(WIDTH // 2, 5)  # over the empty header: no hover effects or tooltips
    page.evaluate("() => document.querySelectorAll('[data-testid=stMain], "
                  "[data-testid=stAppViewContainer]').forEach(e => e.scrollTo(0, 0))")
    path = OUT / f"{name}.png"
    page.screenshot(path=str(path))
    if path.stat().st_size > MAX_BYTES:
        from PIL import Image

        Image.open(path).quantize(colors=256).save(path, optimize=True)
    print(f"{path.relative_to(ROOT)}: {path.stat().st_size // 1000} KB")
    return path


def walk(page: Any, base: str) -> None:
    page.goto(base + "/agents")
    expect(page.get_by_role("heading", name="Agents", exact=True)).to_be_visible(timeout=WAIT_MS)
    wait_idle(page)
    page.locator(".st-key-load_preset button").click()  # the Debate trio is preselected
    expect(page.locator(".st-key-agent_edit_Optimist")).to_be_visible(timeout=WAIT_MS)
    wait_idle(page)
    page.locator(".st-key-agent_edit_Optimist button").first.click()  # a filled form, no notice
    expect(page.get_by_text("Edit Optimist")).to_be_visible(timeout=WAIT_MS)
    wait_idle(page)
    shoot(page, "agents", 860)

    open_page(page, "Run")  # the preset also set the roster, the parameters and the task
    wait_idle(page)
    page.locator(".st-key-start_run button").click()
    expect(status_line(page)).to_have_text(MID_RUN, timeout=WAIT_MS)
    page.wait_for_function("() => !!document.querySelector("
                           "'[class*=\"st-key-floor_\"] .js-plotly-plot svg.main-svg')",
                           timeout=WAIT_MS)
    shoot(page, "run", 960)
    expect(status_line(page)).to_have_text(re.compile(r"^status: finished"), timeout=WAIT_MS)

    page.get_by_test_id("stPageLink").filter(has_text="Open this run in Analysis").click()
    expect(page.get_by_test_id("stMetric").first).to_be_visible(timeout=WAIT_MS)
    wait_plots(page, 2)
    wait_idle(page)
    shoot(page, "analysis", 1200)

    open_page(page, "Runs")
    expect(page.get_by_text(re.compile(r"^\d+ run\(s\)$"))).to_be_visible(timeout=WAIT_MS)
    wait_idle(page)
    shoot(page, "runs", 860)

    open_page(page, "Settings")
    wait_idle(page)
    shoot(page, "settings", 860)


def main() -> None:
    from playwright.sync_api import sync_playwright

    OUT.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix="groupchat-lab-"))
    try:
        db_url = f"sqlite:///{folder}/groupchat.db"
        record_runs(db_url)
        with serve_app(db_url, folder / "streamlit.log") as base, sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True,
                                         args=CHROMIUM_ARGS)
            context = browser.new_context(viewport={"width": WIDTH, "height": 900})
            walk(context.new_page(), base)
            browser.close()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
