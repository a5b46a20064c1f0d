"""Jobs on the background loop: per-owner isolation, live snapshots, cancel, records, shutdown;
and the table bounded (issue 44.3): finished chats past `keep_finished` keep only a summary, read
back from the store whole; running jobs never shrink."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator

import pytest

from groupchat_core import Agent, GroupChat, RunStarted
from groupchat_core.store import RunStore
from groupchat_core.testing import ScriptedBid
from groupchat_ui.kit import jobs, store_access
from groupchat_ui.kit.jobs import JobRegistry, JobSnapshot, from_record
from groupchat_ui.run.logic import default_params, start_run
from tests.helpers.app_helpers import goto, new_app, status, wait_for
from tests.helpers.chats import scripted_chat
from tests.helpers.waits import HANG_GUARD_S


@pytest.fixture
def reg() -> Iterator[JobRegistry]:
    registry = JobRegistry()
    yield registry
    registry.shutdown()


@pytest.fixture
def kept2() -> Iterator[JobRegistry]:
    registry = JobRegistry(keep_finished=2)
    yield registry
    registry.shutdown()


def agents(latency: float = 0.0) -> list[Agent]:
    return [Agent(agent_name=n, model_name=f"sim/{p}", litellm_kwargs={"sim_latency": latency})
            for n, p in (("Ann", "eager"), ("Ben", "balanced"), ("Cy", "contrarian"))]


def sim_chat(max_loops: int = 8, latency: float = 0.03) -> GroupChat:
    return GroupChat(agents=agents(latency), max_loops=max_loops, threshold=0.3, seed=2)


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
    assert reg.wait(first, HANG_GUARD_S) and reg.snapshot(first).done  # the public wait
    with pytest.raises(KeyError):
        reg.wait("no-such-job")
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
    assert reg.cleanup(now=time.time() + jobs.DEFAULT_TTL_S + 1) == 1
    with pytest.raises(KeyError, match="expired"):
        reg.snapshot(done)
    assert reg.snapshot(running).status in ("queued", "running")


def test_the_process_wide_registry_is_one_instance_that_runs_jobs():
    shared = jobs.registry()
    assert jobs.registry() is shared
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
    slow = reg.start_job(forever, "ann", user="alice@example.org", user_name="Alice")
    wait_for(lambda: reg.task_snapshot(slow).events, "the slow job to start")
    assert not reg.cancel(slow, user="bob@example.org")  # only the user it runs for stops it
    assert reg.task_snapshot(slow).status in ("queued", "running")
    assert reg.task_snapshot(slow).user_name == "Alice"
    assert reg.tasks_for("ann", "sweep", "bob@example.org") == []
    assert [t.id for t in reg.tasks_for("ann", "sweep", "alice@example.org")] == [slow]
    assert reg.cancel(slow, user="alice@example.org")
    assert reg.task_snapshot(slow).status == "cancelled"
    wait_for(lambda: reg.task_snapshot(slow).done, "the cancel to settle")
    assert reg.task_snapshot(slow).status == "cancelled"
    assert [s.id for s in reg.tasks_for("ann", "sweep")] == [job, slow]
    assert reg.tasks_for("ben") == [] and reg.jobs_for("ann") == []


def run(store: RunStore, reg: JobRegistry, task: str, *, max_loops: int = 5,
        latency: float = 0.0, owner: str = "browser-1") -> str:
    """A chat started the way the Run page starts one (recorded, streamed)."""
    params = {**default_params(), "max_loops": max_loops, "threshold": 0.0}
    return start_run(store, reg, owner, agents(latency), task, params, {})


def finished(reg: JobRegistry, store: RunStore, task: str, **kwargs: object) -> JobSnapshot:
    job_id = run(store, reg, task, **kwargs)  # type: ignore[arg-type]
    wait_for(lambda: reg.snapshot(job_id).done, f"{task} to finish")
    return reg.snapshot(job_id)


def test_finished_chats_beyond_the_kept_ones_become_summaries_read_back_whole_running_never(
        kept2: JobRegistry, sqlite_store: RunStore):
    slow = run(sqlite_store, kept2, "Slow", max_loops=400, latency=0.01)  # runs throughout
    wait_for(lambda: kept2.snapshot(slow).messages, "the slow chat to start")
    whole = [finished(kept2, sqlite_store, f"Task {i}") for i in range(5)]
    # a job shrinks the others once it has settled, a moment after it reads done
    wait_for(lambda: kept2.snapshot(whole[2].id).summary, "the third newest to shrink")
    snaps = [kept2.snapshot(s.id) for s in whole]

    assert [s.summary for s in snaps] == [True, True, True, False, False]
    for before, after in zip(whole[:3], snaps[:3], strict=True):
        assert after.messages == () and after.turns == () and after.record is None
        assert dict(after.bids_by_turn) == {} and dict(after.candidates) == {}
        assert after.current_turn == before.current_turn  # the status line keeps its turn
        assert kept2.events(after.id) == []
        assert (after.status, after.task, after.run_id, after.owner, after.user,
                after.created_at) == (before.status, before.task, before.run_id, before.owner,
                                      before.user, before.created_at)
        assert (after.message_count, after.turn_count, after.event_count) == (
            len(before.messages), len(before.turns), before.event_count)
        assert after.message_count == 5 and after.turn_count == 4
    for kept in snaps[3:]:
        assert kept.messages and kept.record is not None and kept2.events(kept.id)
    first, summary = whole[0], snaps[0]  # a summary reads its run back from the store whole
    assert summary.run_id == first.id
    filled = from_record(summary, sqlite_store.load_run(summary.run_id))
    assert not filled.summary and filled.status == "finished"
    assert filled.messages == first.messages and filled.turns == first.turns
    assert dict(filled.bids_by_turn) == dict(first.bids_by_turn)
    assert filled.current_turn == first.current_turn and filled.record == first.record
    assert filled.config["threshold"] == first.config["threshold"] == 0.0

    live = kept2.snapshot(slow)  # the oldest job of all, still running: whole
    assert not live.done and not live.summary and live.messages
    wait_for(lambda: len(kept2.snapshot(slow).messages) > len(live.messages), "more messages")

    # the session's list: every running job and the newest two finished ones
    assert [s.id for s in kept2.jobs_for("browser-1")] == [slow, whole[3].id, whole[4].id]
    ids = [slow, *(s.id for s in whole), "gone"]
    assert kept2.bounded(ids) == [slow, whole[3].id, whole[4].id]
    assert kept2.bounded(ids, also=whole[0].id) == [slow, whole[0].id, whole[3].id, whole[4].id]
    assert kept2.cancel(slow) is True


def test_summaries_are_bounded_too(kept2: JobRegistry, sqlite_store: RunStore,
                                   monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(jobs, "MAX_SUMMARIES", 1)
    done = [finished(kept2, sqlite_store, f"Task {i}") for i in range(4)]

    def forgotten() -> bool:
        try:
            kept2.snapshot(done[0].id)
        except KeyError:  # a page treats it as expired
            return True
        return False

    wait_for(forgotten, "the oldest summary to be forgotten")
    assert kept2.snapshot(done[1].id).summary
    assert [kept2.snapshot(s.id).summary for s in done[2:]] == [False, False]


@pytest.mark.parametrize(("raw", "expected"), [
    (None, jobs.DEFAULT_KEEP_FINISHED), ("", jobs.DEFAULT_KEEP_FINISHED), ("5", 5),
    (" 7 ", 7), ("10000", 10_000), *[(bad, None) for bad in ("0", "-3", "ten", "10001", "2.5")],
])
def test_the_setting_is_read_from_the_environment_and_a_bad_one_is_one_logged_line(
        raw: str | None, expected: int | None, caplog: pytest.LogCaptureFixture):
    environ = {} if raw is None else {jobs.KEEP_FINISHED_ENV: raw}
    with caplog.at_level(logging.WARNING, logger="groupchat_ui"):
        assert jobs.keep_finished_setting(environ) == (expected or 20)  # bad: the default
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == (expected is None)
    for line in lines:
        assert jobs.KEEP_FINISHED_ENV in line and repr(raw) in line and "\n" not in line
        assert "from 1 to 10,000" in line


def test_the_registry_takes_the_setting(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv(jobs.KEEP_FINISHED_ENV, "3")
    assert JobRegistry().keep_finished == 3
    assert JobRegistry(keep_finished=9).keep_finished == 9


def test_the_run_page_shows_a_summarised_job_from_the_store(monkeypatch: pytest.MonkeyPatch):
    registry = jobs.registry()
    monkeypatch.setattr(registry, "keep_finished", 1)
    store = store_access.store()
    try:
        old = finished(registry, store, "The old one", owner="someone")
        newer = finished(registry, store, "The newer one", owner="someone")
        wait_for(lambda: registry.snapshot(old.id).summary, "the old job to shrink")
        assert store.flush(timeout=HANG_GUARD_S)
        at = goto(new_app(), "run", job=old.id)
        assert status(at).startswith(f"status: finished · job {old.id} · turn 4 · messages 4")
        shown = " ".join(str(m.value) for m in at.markdown)
        assert all(m.content[:40] in shown for m in old.messages[1:] if m.content)
        assert not registry.snapshot(newer.id).summary
    finally:
        registry.shutdown()
