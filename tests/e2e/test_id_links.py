"""Links naming a run or a sweep by id, in a real browser (issue 38, item 11): the 8-character
run id the app's labels show and the 12-character sweep id `sweep list` prints open that run
or sweep (the address then holds its full id); an unknown id shows an error naming it and the
closest ids, no run or sweep at all (not the newest), and the address keeps the id asked for.
The runs and sweeps are made here; the error's closest ids depend on what else the shared
store holds, so only their presence is checked (tests/ui/test_id_links.py checks which)."""

from __future__ import annotations

import re
import uuid
from typing import Any

from groupchat_core.store import RunStore
from groupchat_core.sweeps import parse_sweep, run_sweep
from groupchat_ui.analysis import logic as analysis_logic

from .conftest import WAIT_MS, expect, wait_idle


def _sweep(store: RunStore) -> str:
    agents = [{"agent_name": n, "model_name": "sim/balanced"} for n in ("Ann", "Ben")]
    spec = parse_sweep({"name": f"links {uuid.uuid4().hex[:6]}", "tasks": ["Plan it."],
                        "base": {"max_loops": 2, "agents": agents},
                        "grid": {"threshold": [0.01]}})
    sweep_id = run_sweep(spec, store).sweep_id
    assert sweep_id is not None
    return sweep_id


def _shows(page: Any, text: str) -> None:
    expect(page.get_by_text(text)).to_be_visible(timeout=WAIT_MS)


def test_id_prefixes_open_their_item_and_unknown_ids_open_none(app_server, app_db_url, page):
    store = RunStore(app_db_url)
    run_id = analysis_logic.run_demo(store)
    analysis_logic.run_demo(store)  # a newer run, which a bad link must not open
    sweep_id = _sweep(store)
    _sweep(store)

    page.goto(f"{app_server}/analysis?run={run_id[:8]}")
    _shows(page, f"Link to this run: analysis?run={run_id}")
    expect(page).to_have_url(re.compile(rf"[?&]run={run_id}\b"), timeout=WAIT_MS)

    page.goto(f"{app_server}/analysis?run=zzzz")
    _shows(page, "The link's run zzzz opens nothing: no run 'zzzz' in ")
    _shows(page, "closest: ")
    wait_idle(page)
    expect(page.get_by_text("Link to this run")).to_have_count(0)
    expect(page).to_have_url(re.compile(r"[?&]run=zzzz(&|$)"))

    page.goto(f"{app_server}/sweeps?sweep={sweep_id[:12]}")
    _shows(page, f"Link to this sweep: sweeps?sweep={sweep_id}")
    expect(page).to_have_url(re.compile(rf"[?&]sweep={sweep_id}\b"), timeout=WAIT_MS)

    page.goto(f"{app_server}/sweeps?sweep=6e88a4da9a76")
    _shows(page, "The link's sweep 6e88a4da9a76 opens nothing: no sweep '6e88a4da9a76'")
    wait_idle(page)
    expect(page.get_by_text("Link to this sweep")).to_have_count(0)
    expect(page.get_by_role("button", name="Export sweep to MLflow")).to_have_count(0)
    expect(page).to_have_url(re.compile(r"[?&]sweep=6e88a4da9a76(&|$)"))
