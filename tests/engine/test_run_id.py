"""A run recorded under an id the caller gives (`arun_record(run_id=...)`): the dashboard
records a chat job's run under the job's id, so the Run page, Analysis and Runs show one id
(issue 21: the Run page showed the job id, every other page the run id; the dashboard's side is
tests/ui/test_app.py::test_run_page_runs_a_sim_chat_live_and_ends_with_a_summary)."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from groupchat_core import Agent, ConfigError, GroupChat

pytestmark = pytest.mark.usefixtures("fresh_engines")


def _chat() -> GroupChat:
    return GroupChat(agents=[Agent(agent_name="A", model_name="sim/eager"),
                             Agent(agent_name="B", model_name="sim/reserved")], max_loops=3)


def test_a_run_is_recorded_under_the_id_given_and_a_bad_id_is_refused():
    wanted = uuid.uuid4().hex
    record = asyncio.run(_chat().arun_record("Plan it.", run_id=wanted))
    assert record.run_id == wanted
    with pytest.raises(ConfigError, match="32 lowercase hex"):
        asyncio.run(_chat().arun_record("Plan it.", run_id="../etc"))
    assert asyncio.run(_chat().arun_record("Plan it.")).run_id != wanted  # default: a new one
