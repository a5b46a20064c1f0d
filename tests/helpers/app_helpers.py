"""What the dashboard's AppTest modules (tests/ui/) share: opening the app, moving between pages,
filling forms, reading the status lines, polling a live job or sweep to a state.

AppTest never fires `run_every`, so live runs and sweeps are followed by polling with short
sleeps and `at.run()`. The job registry lives for the whole test process: `new_app`'s callers
shut it down after each test (see the `app` fixtures).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from groupchat_core import Agent
from groupchat_core.store import RunStore
from groupchat_core.sweeps import parse_sweep, run_sweep
from groupchat_ui.kit import state as ui_state
from groupchat_ui.kit import store_access
from groupchat_ui.kit.state import STATE_KEY, SessionState
from tests.helpers import ROOT
from tests.helpers.waits import eventually

WIDGETS = ("text_input", "text_area", "number_input", "selectbox", "multiselect", "checkbox",
           "toggle", "slider", "radio")


def new_app(**query: str) -> AppTest:
    """The whole app (streamlit_app.py) in a new session, run once; `query` sets ?key=value."""
    at = AppTest.from_file(str(ROOT / "streamlit_app.py"), default_timeout=60)
    for key, value in query.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def save_agents(store: RunStore, agents: list[Agent]) -> None:
    """Write agents behind the dashboard's back, then drop its cached reads (as its own
    writes do)."""
    store.save_agents(agents)
    store_access.invalidate()


def goto(at: AppTest, page: str, **params: str) -> AppTest:
    """Switch to a page, with query parameters (a shared link) when given."""
    at.switch_page(f"app_pages/{page}.py")
    for name, value in params.items():
        at.query_params[name] = value
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def open_tab(at: AppTest, key: str, label: str) -> AppTest:
    """Open a lazy st.tabs' tab (`key`: its widget key) and rerun: only the open tab runs."""
    at.session_state[key] = label
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def signed_in_sessions(monkeypatch: pytest.MonkeyPatch, users: dict[str, tuple[str, str]]
                       ) -> Callable[[str], AppTest]:
    """A server with login on: `open_as(name)` opens the app in a new session signed in as
    `users[name]` (identity, display name). Sign-in is simulated by replacing `state.identify`;
    the real OIDC sign-in is tests/e2e/test_login.py."""

    def identify(session: SessionState) -> bool:
        import streamlit as st

        who = st.session_state.get("test_user")
        if who is None:
            return False
        session.user, session.user_name = users[who]
        return True

    monkeypatch.setattr(ui_state, "identify", identify)
    monkeypatch.setattr(ui_state, "login_configured", lambda: True)

    def open_as(who: str) -> AppTest:
        at = AppTest.from_file(str(ROOT / "streamlit_app.py"), default_timeout=60)
        at.session_state["test_user"] = who
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        return at

    return open_as


def session(at: AppTest) -> SessionState:
    return at.session_state[STATE_KEY]


def caption_starting(at: AppTest, head: str) -> str:
    return next((c.value for c in at.caption if c.value.startswith(head)), "")


def status(at: AppTest) -> str:
    """The Run page's status line ("status: running · job ... · turn 3")."""
    return caption_starting(at, "status:")


def sweep_status(at: AppTest) -> str:
    """The Sweeps page's status line ("sweep status: running · 1 / 4 cells finished ...")."""
    return caption_starting(at, "sweep status:")


def turn(at: AppTest) -> int:
    found = re.search(r"turn (\d+)", status(at))
    return int(found.group(1)) if found else 0


def query(at: AppTest, key: str) -> str | None:
    """A query parameter's value (AppTest may hold it as a one-item list)."""
    value = at.query_params.get(key)
    return value[0] if isinstance(value, list) else value


def poll(at: AppTest, check: Callable[[AppTest], bool], what: str,
         shown: Callable[[AppTest], str] = status) -> None:
    """Rerun every 0.2 s until `check` holds; a hang fails naming `what` and the last `shown`."""
    def rerun() -> bool:
        if check(at):
            return True
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        return False

    eventually(rerun, what, step=0.2, detail=lambda: f"; last status: {shown(at)!r}")


def texts(elements: Any) -> str:
    return " ".join(e.value for e in elements)


def errors(at: AppTest) -> str:
    return texts(at.error)


def rendered_text(at: AppTest) -> str:
    """Everything sent to the browser in the last run (every element's protobuf, as text)."""
    parts: list[str] = []

    def walk(node: Any) -> None:
        proto = getattr(node, "proto", None)
        if proto is not None:
            parts.append(str(proto))
        for child in getattr(node, "children", {}).values():
            walk(child)

    walk(at._tree)
    return "\n".join(parts)


def small_grid(at: AppTest, repeats: int = 2, max_loops: int = 6,
               penalties: str = "0.0, 0.3") -> None:
    """Fill the Sweeps form with a small sim grid: threshold 0.4 and 0.6 × `penalties`,
    window 1 (2 × len(penalties) × repeats cells)."""
    at.text_input(key="sw_threshold").input("0.4, 0.6")
    at.text_input(key="sw_recency_penalty").input(penalties)
    at.text_input(key="sw_recency_window").input("1")
    at.number_input(key="sw_repeats").set_value(repeats)
    at.number_input(key="sw_max_loops").set_value(max_loops)
    at.run()
    assert not at.exception, [e.value for e in at.exception]


def widget(at: AppTest, key: str) -> Any:
    """The input widget (text, number, choice, toggle...) with this key."""
    for kind in WIDGETS:
        try:
            return getattr(at, kind)(key=key)
        except KeyError:
            continue
    raise KeyError(f"no widget with key {key!r}")


def fill(at: AppTest, **values: Any) -> AppTest:
    """Set widgets by key (`fill(at, run_task="Hi", run_param_max_loops=3)`); no rerun (a form's
    values reach the server with its submit button: click it, or `.run()` for other widgets)."""
    for key, value in values.items():
        widget(at, key).set_value(value)
    return at


def select_rows(at: AppTest, rows: list[int], key: str = "runs_table") -> None:
    """Select rows of a table (the Runs page's) as a click in the browser does."""
    at.session_state[key] = {"selection": {"rows": rows, "columns": [], "cells": []}}
    at.run()


def sim_agents(store: RunStore, *names: str, latency: float = 0.0,
               model: str = "sim/eager") -> None:
    """Save sim agents (each bid taking `latency` seconds) behind the dashboard's back."""
    kwargs = {"sim_latency": latency} if latency else {}
    save_agents(store, [Agent(agent_name=n, model_name=model, litellm_kwargs=kwargs)
                        for n in names])


def preset_run_form(at: AppTest) -> AppTest:
    """Load the debate trio on the Agents page, then open the Run page."""
    goto(at, "agents")
    at.button(key="load_preset").click().run()
    return goto(at, "run")


def sim_sweep(store: RunStore, name: str = "s", thresholds: tuple[float, ...] = (0.01,),
              max_loops: int = 2, **owner: str | None) -> str:
    """A finished sweep of two sims, one cell per threshold; its id."""
    agents = [{"agent_name": n, "model_name": "sim/balanced"} for n in ("Ann", "Ben")]
    spec = parse_sweep({"name": name, "base": {"max_loops": max_loops, "agents": agents},
                        "grid": {"threshold": list(thresholds)}, "tasks": ["Plan a picnic."],
                        "repeats": 1})
    sweep_id = run_sweep(spec, store, **owner).sweep_id
    assert sweep_id is not None
    store_access.invalidate()
    return sweep_id


def wait_for(check: Callable[[], object], what: str) -> None:
    """Poll with short sleeps until `check` holds (no timing assertion)."""
    eventually(check, what, step=0.02)
