"""Process liveness for interrupted runs and sweep owners (store/_process.py), through psutil:
a live writer, a dead pid, a zombie, a reused pid (another start time), and rows written before
psutil (Linux clock ticks) all read as they should.

Private imports (`store._process`): units or test hooks with no public name; everything public comes
from the public API.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from groupchat_core.store import _process
from groupchat_core.store._process import is_alive, this_writer, writer_alive


@pytest.fixture
def sleeper():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    yield child
    child.kill()
    child.wait()


def test_this_writer_records_psutils_start_time():
    me = this_writer()
    assert me.proc_start == f"{psutil.Process().create_time():.2f}"
    assert writer_alive(me.pid, me.proc_start, me)
    assert not writer_alive(me.pid, "12.00", me)  # this pid, an earlier process


def test_a_live_writer_its_reused_pid_and_a_dead_one(sleeper, monkeypatch):
    def no_proc(pid: int) -> str | None:
        raise AssertionError("psutil start times never need /proc")

    monkeypatch.setattr(_process, "_legacy_ticks", no_proc)
    start = f"{psutil.Process(sleeper.pid).create_time():.2f}"
    assert is_alive(sleeper.pid, start)
    assert is_alive(sleeper.pid, None) and is_alive(sleeper.pid, "")
    assert not is_alive(sleeper.pid, f"{float(start) - 5:.2f}")  # a pid reused since
    assert not is_alive(sleeper.pid, "not-a-start-time")
    sleeper.kill()
    sleeper.wait()
    assert not is_alive(sleeper.pid, start)


def test_a_zombie_is_not_alive():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        status = None
        for _ in range(600):  # until it has exited (not reaped: Popen.wait is not called)
            status = psutil.Process(child.pid).status()
            if status == psutil.STATUS_ZOMBIE:
                break
            time.sleep(0.05)
        assert status == psutil.STATUS_ZOMBIE
        assert not is_alive(child.pid, None)
    finally:
        child.wait()


def test_rows_written_before_psutil_still_compare(sleeper):
    ticks = Path(f"/proc/{sleeper.pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    assert is_alive(sleeper.pid, ticks)
    assert not is_alive(sleeper.pid, str(int(ticks) + 1))
