"""At most one timed fragment on any page (issue 40, point 5): Streamlit 1.67's browser side
crashes now and then when several rerun beside a full run, and the page stays blank for good.
`components.refresh_every` gives a page's one timer to the first fragment that asks; the sidebar
never asks (the Sweeps page used to run three at once while a sweep ran)."""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import streamlit

from groupchat_ui.kit import jobs as job_registry
from groupchat_ui.kit.components import timer_granted
from groupchat_ui.kit.state import STATE_KEY
from tests.helpers import ROOT
from tests.helpers.app_helpers import goto, new_app


def test_the_first_fragment_that_asks_holds_the_timer() -> None:
    assert timer_granted(None, "a", 0.5) == 0.5
    assert timer_granted("a", "a", 0.5) == 0.5  # its own reruns keep it
    assert timer_granted("a", "b", 0.5) is None  # another gets none
    assert timer_granted(None, "b", None) is None  # asking for no timer takes none


def test_every_timed_fragment_asks_for_the_page_timer() -> None:
    """A fragment that set `run_every` itself would bypass the one-timer rule."""
    found, checked = [], 0
    for path in [*(ROOT / "groupchat_ui").rglob("*.py"), *(ROOT / "app_pages").glob("*.py")]:
        text = path.read_text(encoding="utf-8")
        for line in text.splitlines():
            if "run_every=" not in line:
                continue
            checked += 1
            name = re.search(r"run_every=(\w+)\)", line)  # a name given by refresh_every
            if "refresh_every(" not in line and not (
                    name and re.search(rf"\b{name.group(1)} = refresh_every\(", text)):
                found.append(f"{path.relative_to(ROOT)}: {line.strip()}")
    assert checked >= 3 and found == []


@pytest.fixture
def timers(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every `run_every` a fragment is declared with, as the script asks for it."""
    asked: list[Any] = []
    real: Callable[..., Any] = streamlit.fragment

    def fragment(func: Any = None, *, run_every: Any = None) -> Any:
        asked.append(run_every)
        return real(func, run_every=run_every)

    monkeypatch.setattr(streamlit, "fragment", fragment)
    return asked


@pytest.fixture
def held() -> Iterator[threading.Event]:
    gate = threading.Event()
    yield gate
    gate.set()
    job_registry.registry().shutdown()


def test_the_sweeps_page_runs_one_timer_while_a_sweep_job_runs(
        timers: list[Any], held: threading.Event) -> None:
    """A sweep job of this session that cannot end until the test lets it (no timing)."""
    at = goto(new_app(), "sweeps")
    session = at.session_state[STATE_KEY]

    async def job(emit: Any) -> None:
        await asyncio.to_thread(held.wait, 600)

    job_id = job_registry.registry().start_job(job, session.owner)
    session.sweep_jobs.append(job_id)
    timers.clear()
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    live = [t for t in timers if t is not None]
    assert live == [0.5], timers  # the live panel's, and no other (the sidebar asked none)
    assert any(c.value.startswith("Jobs of this session: 1 running") for c in at.sidebar.caption)
