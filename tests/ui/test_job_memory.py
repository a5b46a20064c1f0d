"""The job table is bounded (issue 44, 3): finished chats beyond the newest `keep_finished` keep
only a summary, a session's job list is bounded the same way, running jobs are never shrunk, and
a summary's run is read back from the store whole."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from groupchat_core import Agent
from groupchat_core.store import RunStore
from groupchat_ui.kit import jobs
from groupchat_ui.kit.jobs import JobRegistry, JobSnapshot, from_record
from groupchat_ui.run.logic import default_params, start_run
from tests.helpers.app_helpers import DEADLINE_S, goto, new_app, status, wait_for


@pytest.fixture
def reg() -> Iterator[JobRegistry]:
    registry = JobRegistry(keep_finished=2)
    yield registry
    registry.shutdown()


def agents(latency: float = 0.0) -> list[Agent]:
    return [Agent(agent_name=n, model_name=f"sim/{p}", litellm_kwargs={"sim_latency": latency})
            for n, p in (("Ann", "eager"), ("Ben", "balanced"), ("Cy", "contrarian"))]


def run(store: RunStore, reg: JobRegistry, task: str, *, max_loops: int = 5,
        latency: float = 0.0, owner: str = "browser-1") -> str:
    """A chat started the way the Run page starts one (recorded, streamed)."""
    params = {**default_params(), "max_loops": max_loops, "threshold": 0.0}
    return start_run(store, reg, owner, agents(latency), task, params, {})


def finished(reg: JobRegistry, store: RunStore, task: str, **kwargs: object) -> JobSnapshot:
    job_id = run(store, reg, task, **kwargs)  # type: ignore[arg-type]
    wait_for(lambda: reg.snapshot(job_id).done, f"{task} to finish")
    return reg.snapshot(job_id)


def test_finished_chats_beyond_the_kept_ones_become_summaries_running_ones_never(
        reg: JobRegistry, sqlite_store: RunStore):
    slow = run(sqlite_store, reg, "Slow", max_loops=400, latency=0.01)  # runs throughout
    wait_for(lambda: reg.snapshot(slow).messages, "the slow chat to start")
    whole = [finished(reg, sqlite_store, f"Task {i}") for i in range(5)]
    # a job shrinks the others once it has settled, a moment after it reads done
    wait_for(lambda: reg.snapshot(whole[2].id).summary, "the third newest to shrink")
    snaps = [reg.snapshot(s.id) for s in whole]

    assert [s.summary for s in snaps] == [True, True, True, False, False]
    for before, after in zip(whole[:3], snaps[:3], strict=True):
        assert after.messages == () and after.turns == () and after.record is None
        assert dict(after.bids_by_turn) == {} and after.forming is None
        assert reg.events(after.id) == []
        assert (after.status, after.task, after.run_id, after.owner, after.user,
                after.created_at) == (before.status, before.task, before.run_id, before.owner,
                                      before.user, before.created_at)
        assert (after.message_count, after.turn_count, after.event_count) == (
            len(before.messages), len(before.turns), before.event_count)
        assert after.message_count == 5 and after.turn_count == 4
    for kept in snaps[3:]:
        assert kept.messages and kept.record is not None and reg.events(kept.id)

    live = reg.snapshot(slow)  # the oldest job of all, still running: whole
    assert not live.done and not live.summary and live.messages
    wait_for(lambda: len(reg.snapshot(slow).messages) > len(live.messages), "more messages")

    # the session's list: every running job and the newest two finished ones
    assert [s.id for s in reg.jobs_for("browser-1")] == [slow, whole[3].id, whole[4].id]
    ids = [slow, *(s.id for s in whole), "gone"]
    assert reg.bounded(ids) == [slow, whole[3].id, whole[4].id]
    assert reg.bounded(ids, also=whole[0].id) == [slow, whole[0].id, whole[3].id, whole[4].id]
    assert reg.cancel(slow) is True


def test_a_summary_reads_its_run_back_from_the_store_whole(reg: JobRegistry,
                                                           sqlite_store: RunStore):
    first = finished(reg, sqlite_store, "First")
    for i in range(2):
        finished(reg, sqlite_store, f"Later {i}")
    wait_for(lambda: reg.snapshot(first.id).summary, "the oldest to shrink")
    summary = reg.snapshot(first.id)
    assert summary.run_id == first.id
    filled = from_record(summary, sqlite_store.load_run(summary.run_id))
    assert not filled.summary and filled.status == "finished"
    assert filled.messages == first.messages and filled.turns == first.turns
    assert dict(filled.bids_by_turn) == dict(first.bids_by_turn)
    assert filled.current_turn == first.current_turn and filled.record == first.record
    assert filled.config["threshold"] == first.config["threshold"] == 0.0


def test_summaries_are_bounded_too(reg: JobRegistry, sqlite_store: RunStore,
                                   monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(jobs, "MAX_SUMMARIES", 1)
    done = [finished(reg, sqlite_store, f"Task {i}") for i in range(4)]

    def forgotten() -> bool:
        try:
            reg.snapshot(done[0].id)
        except KeyError:  # a page treats it as expired
            return True
        return False

    wait_for(forgotten, "the oldest summary to be forgotten")
    assert reg.snapshot(done[1].id).summary
    assert [reg.snapshot(s.id).summary for s in done[2:]] == [False, False]


@pytest.mark.parametrize(("raw", "expected"), [
    (None, jobs.DEFAULT_KEEP_FINISHED), ("", jobs.DEFAULT_KEEP_FINISHED), ("5", 5),
    (" 7 ", 7), ("10000", 10_000),
])
def test_the_setting_is_read_from_the_environment(raw: str | None, expected: int):
    environ = {} if raw is None else {jobs.KEEP_FINISHED_ENV: raw}
    assert jobs.keep_finished_setting(environ) == expected


@pytest.mark.parametrize("raw", ["0", "-3", "ten", "10001", "2.5"])
def test_a_bad_setting_is_one_logged_line_and_the_default(raw: str,
                                                          caplog: pytest.LogCaptureFixture):
    with caplog.at_level(logging.WARNING, logger="groupchat_ui"):
        assert jobs.keep_finished_setting({jobs.KEEP_FINISHED_ENV: raw}) == 20
    [line] = [r.getMessage() for r in caplog.records]
    assert jobs.KEEP_FINISHED_ENV in line and repr(raw) in line and "\n" not in line
    assert "from 1 to 10,000" in line


def test_the_registry_takes_the_setting(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv(jobs.KEEP_FINISHED_ENV, "3")
    assert JobRegistry().keep_finished == 3
    assert JobRegistry(keep_finished=9).keep_finished == 9


def test_the_run_page_shows_a_summarised_job_from_the_store(monkeypatch: pytest.MonkeyPatch):
    from groupchat_ui.kit import store_access

    registry = jobs.registry()
    monkeypatch.setattr(registry, "keep_finished", 1)
    store = store_access.store()
    try:
        old = finished(registry, store, "The old one", owner="someone")
        newer = finished(registry, store, "The newer one", owner="someone")
        wait_for(lambda: registry.snapshot(old.id).summary, "the old job to shrink")
        assert store.flush(timeout=DEADLINE_S)
        at = goto(new_app(), "run", job=old.id)
        assert status(at).startswith(f"status: finished · job {old.id} · turn 4 · messages 4")
        shown = " ".join(str(m.value) for m in at.markdown)
        assert all(m.content[:40] in shown for m in old.messages[1:] if m.content)
        assert not registry.snapshot(newer.id).summary
    finally:
        registry.shutdown()
