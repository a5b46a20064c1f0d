"""A page that went blank: Streamlit 1.67's browser side under several timed fragments.
Measurement only.

    python -m bench.blank_page [--rounds 15] [--tabs 6] [--hogs 2] [--variants base single]

Serves bench/blank_page_app.py (the Run page's live view reduced to its shape) and, for each
variant, opens `--tabs` tabs in Debian's chromium and starts a 2-s job in every tab `--rounds`
times (the views redraw every 0.2 s while it runs), with `--hogs` busy Python processes holding
the cores, as a loaded test machine does. Counts the page errors (a crash of Streamlit's
renderer, after which React drops the page: it stays blank) and the job ends a tab never showed
within 12 s (such a tab is reloaded, so the next round starts clean). Prints one line per
variant.
"""

from __future__ import annotations

import collections
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import _harness as h
from bench.dashboard import ROOT, chromium, machine

APP = Path(__file__).with_name("blank_page_app.py")
HOG = "while True: sum(i * i for i in range(100000))"


def serve(log: Path) -> tuple[subprocess.Popen[bytes], str]:
    from tests.e2e.conftest import free_port, wait_healthy

    port = free_port()
    with log.open("wb") as out:  # the child keeps its own copy of the handle
        proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", str(APP), "--server.headless", "true",
             "--server.address", "127.0.0.1", "--server.port", str(port),
             "--browser.gatherUsageStats", "false"],
            cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    wait_healthy(url, proc)
    return proc, url


def variant(browser: Any, url: str, name: str, rounds: int, tabs: int) -> dict[str, int]:
    from playwright.sync_api import expect

    errors: collections.Counter[str] = collections.Counter()
    pages = []
    for _ in range(tabs):
        page = browser.new_context().new_page()
        page.on("pageerror", lambda err: errors.update([str(err)[:80]]))
        page.goto(f"{url}/?dur=2&every=0.2&v={name}")
        pages.append(page)
    unseen = 0
    for _ in range(rounds):
        for page in pages:
            try:
                page.locator(".st-key-start button").click(timeout=20_000)
            except Exception:  # noqa: BLE001 - a blank tab has no button: start it afresh
                page.reload()
                page.wait_for_timeout(3_000)
        for page in pages:
            settled = page.get_by_text("status: finished").and_(
                page.locator(":not(.st-key-ending *)"))
            try:
                expect(settled).to_be_visible(timeout=12_000)
            except AssertionError:
                unseen += 1
                page.reload()
                page.wait_for_timeout(2_000)
        time.sleep(0.3)
    for page in pages:
        page.context.close()
    return {"job ends": rounds * tabs, "page errors": sum(errors.values()),
            "ends never shown": unseen, **{f"error: {k}": v for k, v in errors.items()}}


def main(argv: list[str] | None = None) -> None:
    parser = h.options(__doc__)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--tabs", type=int, default=6)
    parser.add_argument("--hogs", type=int, default=2)
    parser.add_argument("--variants", nargs="+", default=["base", "single"])
    args = parser.parse_args(argv)
    hogs = [subprocess.Popen([sys.executable, "-c", HOG]) for _ in range(args.hogs)]
    proc = None
    try:
        proc, url = serve(Path(tempfile.gettempdir()) / "bench_blank_page.log")
        with chromium() as browser:
            print(machine())
            for name in args.variants:
                started = time.monotonic()
                result = variant(browser, url, name, args.rounds, args.tabs)
                print(f"{name}: {result} ({time.monotonic() - started:.0f} s)", flush=True)
    finally:
        if proc is not None:
            proc.terminate()
        for hog in hogs:
            hog.kill()


if __name__ == "__main__":
    main()
