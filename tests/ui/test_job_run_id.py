"""A chat job's run is recorded under the job's id, so the Run page (which names the job) and
Analysis and Runs (which name the run) show the same id (issue 21 item 5)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from groupchat_core import Agent, GroupChat
from groupchat_core.store import RunStore
from groupchat_ui.kit.jobs import JobRegistry

pytestmark = pytest.mark.usefixtures("fresh_engines")
DEADLINE_S = 60.0


@pytest.fixture
def reg() -> Iterator[JobRegistry]:
    registry = JobRegistry()
    yield registry
    registry.shutdown()


def test_a_chat_job_and_its_stored_run_share_one_id(reg: JobRegistry, tmp_path):
    store = RunStore(f"sqlite:///{tmp_path}/runs.db")
    chat = GroupChat(agents=[Agent(agent_name="A", model_name="sim/eager"),
                             Agent(agent_name="B", model_name="sim/reserved")], max_loops=3)
    store.attach(chat)
    job_id = reg.start_chat(chat, "Plan it.", owner="me")
    deadline = time.monotonic() + DEADLINE_S
    while not reg.snapshot(job_id).done:  # poll the job's own state, generous deadline
        if time.monotonic() > deadline:
            pytest.fail("the chat job did not finish")
        time.sleep(0.02)
    snap = reg.snapshot(job_id)
    assert snap.status == "finished", snap.error
    assert snap.run_id == job_id
    assert store.flush(timeout=30)
    assert job_id in set(store.list_runs()["run_id"])
