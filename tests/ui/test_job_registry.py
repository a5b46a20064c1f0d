"""Jobs on the background loop: per-owner isolation, live snapshots, cancel, records, shutdown."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest

from groupchat_core import Agent, GroupChat, RunStarted
from groupchat_core.testing import ScriptedBid
from groupchat_ui.kit import jobs as job_registry
from groupchat_ui.kit.jobs import JobRegistry, JobSnapshot
from tests.helpers.app_helpers import wait_for
from tests.helpers.chats import scripted_chat


@pytest.fixture
def reg() -> Iterator[JobRegistry]:
    registry = JobRegistry()
    yield registry
    registry.shutdown()

def sim_chat(max_loops: int = 8, latency: float = 0.03) -> GroupChat:
    agents = [Agent(agent_name=n, model_name=f"sim/{p}", litellm_kwargs={"sim_latency": latency})
              for n, p in [("Ann", "eager"), ("Ben", "balanced"), ("Cy", "contrarian")]]
    return GroupChat(agents=agents, max_loops=max_loops, threshold=0.3, seed=2)


def slow_chat(turns: int = 40, latency: float = 0.1) -> GroupChat:
    """Two scripted agents who always want to talk, each bid taking `latency` seconds."""
    return scripted_chat({n: [ScriptedBid(0.9, f"{n} says {i}", latency=latency)
                              for i in range(turns)] for n in ("X", "Y")},
                         max_loops=turns, recency_penalty=0.0)


def test_two_owners_see_only_their_own_jobs_and_progress_while_running(reg: JobRegistry):
    first = reg.start_chat(sim_chat(), "Plan a picnic for the team.", owner="alice")
    second = reg.start_chat(slow_chat(turns=6, latency=0.05), "Talk.", owner="bob")
    seen: list[JobSnapshot] = []

    def progressed() -> bool:
        seen.append(reg.snapshot(second))
        return seen[-1].done

    wait_for(progressed, "the scripted job to finish")
    assert any(s.status == "running" and 1 <= len(s.messages) < 6 for s in seen)
    assert any(s.current_bids for s in seen)  # the live floor had bids to draw
    assert [s.id for s in reg.jobs_for("alice")] == [first]
    assert [s.id for s in reg.jobs_for("bob")] == [second]
    assert reg.jobs_for("carol") == []
    wait_for(lambda: reg.snapshot(first).done, "the sim job to finish")
    for job_id in (first, second):
        snap = reg.snapshot(job_id)
        assert snap.status == "finished" and snap.error is None
        assert snap.record is not None and snap.record.stop_reason in ("max_loops", "lull")
        assert [m.content for m in snap.messages] == [m.content for m in snap.record.messages]
        assert snap.turns == tuple(snap.record.turns)
        assert sum(len(b) for b in snap.bids_by_turn.values()) == len(snap.record.bids)
    assert reg.snapshot(first).config["threshold"] == 0.3


def test_cancel_records_cancelled_at_once_and_keeps_posted_messages(reg: JobRegistry):
    job = reg.start_chat(slow_chat(turns=40, latency=0.1), "Talk for a long time.", "alice")
    other = reg.start_chat(sim_chat(), "Plan a picnic.", "alice")
    wait_for(lambda: len(reg.snapshot(job).messages) >= 3, "three posted messages")
    assert reg.cancel(job) is True
    snap = reg.snapshot(job)
    assert snap.status == "cancelled" and snap.done  # recorded before the loop even reacts
    assert len(snap.messages) >= 3 and snap.messages[0].content == "Talk for a long time."
    wait_for(lambda: reg.snapshot(job).record is not None, "the cancelled run's record")
    record = reg.snapshot(job).record
    assert record.stop_reason == "cancelled" and len(record.messages) < 40
    assert [m.content for m in reg.snapshot(job).messages] == [m.content for m in record.messages]
    assert reg.cancel(job) is False  # already over
    wait_for(lambda: reg.snapshot(other).done, "the other job")
    assert reg.snapshot(other).status == "finished"  # cancelling one job spares the rest


def test_a_snapshot_is_a_frozen_copy(reg: JobRegistry):
    job = reg.start_chat(slow_chat(turns=8, latency=0.03), "Talk.", "alice")
    wait_for(lambda: len(reg.snapshot(job).messages) >= 2, "two messages")
    early = reg.snapshot(job)
    count = len(early.messages)
    wait_for(lambda: reg.snapshot(job).done, "the job to finish")
    assert len(early.messages) == count and early.status == "running"
    with pytest.raises(TypeError):
        early.bids_by_turn[99] = ()  # type: ignore[index]
    assert early.last_event_index == early.event_count - 1
    assert len(reg.events(job, since=early.event_count)) > 0


def test_one_chat_object_runs_several_jobs_without_crosstalk(reg: JobRegistry):
    chat = sim_chat(max_loops=6)
    seen_by_observer: list[str] = []
    jobs = [reg.start_chat(chat, f"Topic {i}", owner="alice",
                           extra_observers=[lambda e: seen_by_observer.append(e.kind)])
            for i in range(2)]
    wait_for(lambda: all(reg.snapshot(j).done for j in jobs), "both jobs")
    jobs.append(reg.start_chat(chat, "Topic 2", owner="alice"))  # reuse after the others ended
    wait_for(lambda: reg.snapshot(jobs[2]).done, "the third job")
    for i, job_id in enumerate(jobs):
        snap, events = reg.snapshot(job_id), reg.events(job_id)
        assert [type(e) for e in events].count(RunStarted) == 1
        assert {e.run_id for e in events} == {snap.run_id}
        assert snap.messages[0].content == f"Topic {i}"
    assert seen_by_observer.count("run_started") == 2


def test_a_failing_run_becomes_an_error_job(reg: JobRegistry):
    unscripted = scripted_chat({"A": [(0.9, "a")], "B": [(0.1, "")]}, max_loops=5)  # turn 2
    job = reg.start_chat(unscripted, "Talk.", "alice")
    blank = reg.start_chat(sim_chat(), "   ", "alice")
    wait_for(lambda: reg.snapshot(job).done and reg.snapshot(blank).done, "both jobs")
    snap = reg.snapshot(job)
    assert snap.status == "error" and "UnexpectedModelCall" in snap.error
    assert [m.content for m in snap.messages] == ["Talk.", "a"]  # what was posted is kept
    assert reg.snapshot(blank).error.startswith("ConfigError: task must be")


def test_shutdown_cancels_every_job(reg: JobRegistry):
    jobs = [reg.start_chat(slow_chat(latency=0.2), "Talk.", owner) for owner in ("a", "b")]
    wait_for(lambda: all(reg.snapshot(j).status == "running" for j in jobs), "both running")
    assert reg.shutdown(clear=False) == 2
    assert [reg.snapshot(j).status for j in jobs] == ["cancelled", "cancelled"]
    assert all(reg.snapshot(j).record.stop_reason == "cancelled" for j in jobs)  # settled
    reg.shutdown()
    assert reg.jobs_for("a") == [] and reg.jobs_for("b") == []


def test_finished_jobs_expire_after_their_time_to_live(reg: JobRegistry):
    done = reg.start_chat(sim_chat(max_loops=3), "Short.", "alice")
    wait_for(lambda: reg.snapshot(done).done, "the short job")
    running = reg.start_chat(slow_chat(latency=0.2), "Long.", "alice")
    assert reg.cleanup(now=time.time() + job_registry.DEFAULT_TTL_S + 1) == 1
    with pytest.raises(KeyError, match="expired"):
        reg.snapshot(done)
    assert reg.snapshot(running).status in ("queued", "running")


def test_the_process_wide_registry_is_one_instance_that_runs_jobs():
    shared = job_registry.registry()
    assert job_registry.registry() is shared
    job = shared.start_chat(sim_chat(max_loops=3), "Hello.", owner="module-test")
    try:
        assert [s.id for s in shared.jobs_for("module-test")] == [job]
        wait_for(lambda: shared.snapshot(job).done, "the job")
        assert shared.snapshot(job).status == "finished"
        assert shared.cancel(job) is False
    finally:
        shared.shutdown()


def test_a_generic_job_reports_events_and_cancels_cleanly(reg: JobRegistry):
    import asyncio

    async def work(emit: Callable[[object], None]) -> str:
        for i in range(3):
            emit(i)
        return "done"

    async def forever(emit: Callable[[object], None]) -> None:
        emit("started")
        await asyncio.sleep(60)

    job = reg.start_job(work, owner="ann", kind="sweep")
    wait_for(lambda: reg.task_snapshot(job).done, "the job to finish")
    snap = reg.task_snapshot(job)
    assert (snap.status, snap.events, snap.result) == ("finished", (0, 1, 2), "done")
    slow = reg.start_job(forever, owner="ann")
    wait_for(lambda: reg.task_snapshot(slow).events, "the slow job to start")
    assert reg.cancel(slow)
    wait_for(lambda: reg.task_snapshot(slow).done, "the cancel to settle")
    assert reg.task_snapshot(slow).status == "cancelled"
    assert [s.id for s in reg.tasks_for("ann", "sweep")] == [job, slow]
    assert reg.tasks_for("ben") == [] and reg.jobs_for("ann") == []
