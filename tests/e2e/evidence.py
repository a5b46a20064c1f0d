"""What a failed browser test leaves behind, so a failure seen once on a loaded machine can be
read afterwards instead of guessed at.

For every tab still open when the test failed: a full-page screenshot and the page's DOM
(artifacts/failures/<test>/), and in the failure's report a few lines per tab: its address,
whether a script run is in flight, how many stale elements it shows, what Streamlit's websocket
did (messages received and sent, how long ago the last of each, closes), its console errors
and page errors. For every app server of the test's worker: the Python stacks of all its
threads (`faulthandler`, on SIGUSR1, see `SERVER_BOOT`), so a script run that hangs shows where.

Tabs are watched from their context's creation (`watch`): the module's own context and those a
test opens through the `open_context` fixture, which closes them only after the report is made.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import time
from collections import deque
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from tests.helpers import ROOT

FAILURES = ROOT / "artifacts" / "failures"
CONSOLE_LINES = 200
# The app server as `groupchat_ui.kit.server` runs it, with every thread's stack dumped to its
# log (stderr) on SIGUSR1: `python -c SERVER_BOOT run script.py ...`. Its exit skips the final
# garbage collection of everything litellm and Streamlit loaded (`gc.freeze` as the last exit
# handler; coverage's data is saved by its own): stopped, it took 2-3 s to end where 0.4 s now.
SERVER_BOOT = ("import atexit, faulthandler, gc, runpy, signal; atexit.register(gc.freeze); "
               "faulthandler.register(signal.SIGUSR1, all_threads=True); "
               "runpy.run_module('groupchat_ui.kit.server', run_name='__main__', alter_sys=True)")
# Counts what the page's websockets do, from the first script on, before Streamlit opens one.
WIRE_SCRIPT = """(() => {
  if (window.__gcWire) return;
  const wire = window.__gcWire = {opened: 0, received: 0, sent: 0, lastReceived: 0,
                                  lastSent: 0, closes: []};
  const Native = window.WebSocket;
  window.WebSocket = class extends Native {
    constructor(...args) {
      super(...args);
      wire.opened += 1;
      this.addEventListener('message', () => {
        wire.received += 1; wire.lastReceived = Date.now(); });
      this.addEventListener('close', (e) => wire.closes.push([Date.now(), e.code, e.reason]));
    }
    send(data) { wire.sent += 1; wire.lastSent = Date.now(); return super.send(data); }
  };
})();"""
PAGE_STATE = """() => {
  const app = document.querySelector('[data-testid="stApp"]');
  const wire = window.__gcWire || null;
  const now = Date.now();
  return {
    script: app ? app.getAttribute('data-test-script-state') : 'no stApp',
    stale: document.querySelectorAll('[data-stale="true"]').length,
    chat: document.querySelectorAll('[data-testid="stChatMessage"]').length,
    visibility: document.visibilityState,
    wire: wire && {opened: wire.opened, received: wire.received, sent: wire.sent,
      lastReceivedMsAgo: wire.lastReceived ? now - wire.lastReceived : null,
      lastSentMsAgo: wire.lastSent ? now - wire.lastSent : null,
      closes: wire.closes.map(([at, code, reason]) => [now - at, code, reason])},
    text: (document.body ? document.body.innerText : '').slice(0, 400),
  };
}"""


_CONSOLES: dict[int, deque[str]] = {}  # id(page) -> its console lines, while the page is open
_SERVERS: dict[int, Path] = {}  # pid -> log file, for the app servers of this process


def watch(context: Any) -> Any:
    """Count each tab's websocket traffic and keep its console and page errors; returns the
    context."""
    context.add_init_script(script=WIRE_SCRIPT)
    for page in context.pages:
        _watch_page(page)
    context.on("page", _watch_page)
    return context


def _watch_page(page: Any) -> None:
    console = _CONSOLES.setdefault(id(page), deque(maxlen=CONSOLE_LINES))
    start = time.monotonic()

    def note(kind: str, text: str) -> None:
        console.append(f"{time.monotonic() - start:7.1f}s {kind}: {text[:500]}")

    page.on("console", lambda msg: note(msg.type, msg.text))
    page.on("pageerror", lambda err: note("pageerror", str(err)))
    page.on("crash", lambda _: note("crash", "the tab's renderer crashed"))
    page.on("close", lambda _: _CONSOLES.pop(id(page), None))


def serving(pid: int, log: Path) -> None:
    """An app server (started with SERVER_BOOT) whose stacks a failure should show."""
    _SERVERS[pid] = log


def stopped(pid: int) -> None:
    _SERVERS.pop(pid, None)


def keep(test_id: str, contexts: Iterable[Any]) -> str:
    """Keep what the open tabs and the app servers show now; returns the report's summary."""
    folder = FAILURES / re.sub(r"[^A-Za-z0-9_.-]+", "_", test_id)[-150:]
    folder.mkdir(parents=True, exist_ok=True)
    parts = []
    pages = [page for context in contexts for page in context.pages if not page.is_closed()]
    for n, page in enumerate(pages):
        parts.append(_keep_page(page, folder / f"tab{n}"))
    parts.extend(_server_stacks(folder))
    parts.append(f"(screenshots and DOM in {folder})")
    return "\n".join(parts)


def _keep_page(page: Any, stem: Path) -> str:
    lines = [f"tab {stem.name}: {page.url}"]
    try:
        state = page.evaluate(PAGE_STATE)
        text = " ".join(str(state.pop("text")).split())
        lines.append(f"  {state}")
        lines.append(f"  text: {text[:300]!r}")
    except Exception as exc:  # noqa: BLE001 - a stuck or crashed tab: say so, keep going
        lines.append(f"  state unreadable: {type(exc).__name__}: {str(exc)[:200]}")
    with contextlib.suppress(Exception):
        page.screenshot(path=str(stem.with_suffix(".png")), full_page=True, timeout=10_000)
    with contextlib.suppress(Exception):
        stem.with_suffix(".html").write_text(page.content(), encoding="utf-8")
    noted = list(_CONSOLES.get(id(page), ()))
    stem.with_suffix(".console.txt").write_text("\n".join(noted), encoding="utf-8")
    worth = [line for line in noted  # the page's bids for web fonts fail offline: noise
             if not re.search(r"s (log|debug|info):|ERR_NAME_NOT_RESOLVED", line)]
    lines.extend(f"  {line}" for line in worth[-12:])
    return "\n".join(lines)


def _server_stacks(folder: Path) -> list[str]:
    """Each live app server's thread stacks, from its log after a SIGUSR1."""
    parts = []
    for pid, log in list(_SERVERS.items()):
        size = log.stat().st_size if log.exists() else 0
        try:
            os.kill(pid, signal.SIGUSR1)
        except ProcessLookupError:
            parts.append(f"app server {pid}: gone")
            continue
        dump, deadline = "", time.monotonic() + 5
        while "Current thread" not in dump and time.monotonic() < deadline:
            time.sleep(0.1)  # faulthandler writes the dump from the server's signal handler
            with open(log, "rb") as f:
                f.seek(size)
                dump = f.read().decode("utf-8", "replace")
        (folder / f"server-{pid}-stacks.txt").write_text(dump, encoding="utf-8")
        parts.append(f"app server {pid}, thread stacks now:\n{_script_stacks(dump)}")
    return parts


def _script_stacks(dump: str) -> str:
    """The dump's threads that run app code (not Tornado's or Python's own idle ones)."""
    threads = re.split(r"\n(?=Thread 0x|Current thread 0x)", dump.strip())
    busy = [t for t in threads if re.search(r"groupchat_|app_pages|streamlit_app", t)]
    return "\n".join(busy or threads)[-6000:]
