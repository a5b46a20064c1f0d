"""A threshold outside the engine's range, typed in a real browser, is refused in one line.

Issue 21: typing 5 or -3 made Start do nothing, with no message (the input's own min/max made
the browser drop the value silently). The form now takes any number and Start answers with the
engine's message naming the range (groupchat_core CHAT_BOUNDS).
"""

from __future__ import annotations

import re

import pytest

from .conftest import (
    WAIT_MS,
    expect,
    load_preset,
    open_page,
    set_number,
    status_line,
    wait_idle,
)


@pytest.mark.parametrize("value", [5, -3])
def test_an_out_of_range_threshold_is_refused_with_its_range(app_server, page, value):
    page.goto(app_server + "/agents")
    expect(page.get_by_role("heading", name="Agents", exact=True)).to_be_visible(timeout=WAIT_MS)
    load_preset(page)  # the Debate trio, roster and task (its agents may be saved already)
    open_page(page, "Run")
    set_number(page, "run_param_threshold", value)
    said = page.get_by_test_id("stAlert").filter(has_text="threshold must be a number")
    for attempt in range(3):  # a rerun landing at the click can swallow it (see start_run)
        wait_idle(page)
        page.locator(".st-key-start_run button").click()
        try:
            expect(said).to_be_visible(timeout=WAIT_MS // 3)
            break
        except AssertionError:
            if attempt == 2:
                raise
    expect(said).to_have_text(re.compile(rf"threshold must be a number from -1 to 2, got "
                                         rf"{value}\.0"), timeout=WAIT_MS)
    expect(status_line(page)).to_have_text(re.compile(r"^status: idle"))  # nothing started
