"""The dashboard warms litellm in the background once per server process, after its first
script run (issue 24, target 2): the first streamed run then finds it loaded."""

from __future__ import annotations

import sys

from groupchat_ui.kit import warmup
from tests.helpers.app_helpers import new_app


def test_a_script_run_starts_one_warm_up_thread_for_the_process(app):
    started = warmup.thread()  # the app fixture's script run started it
    assert started is not None and started.name == "groupchat-warmup"
    new_app()  # a second session
    assert warmup.thread() is started
    started.join(timeout=300)
    assert "litellm" in sys.modules
