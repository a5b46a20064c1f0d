"""Fixtures of the dashboard's AppTests: one `app` (the whole app, as a browser session sees
it), whose background jobs stop when the test ends."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from streamlit.testing.v1 import AppTest

from groupchat_ui.kit import jobs as job_registry
from tests.helpers.app_helpers import new_app


@pytest.fixture
def app() -> Iterator[AppTest]:
    yield new_app()
    job_registry.registry().shutdown()
