"""Who is writing a run: pid, host and process start time, to tell live runs from dead ones.

A run stays `running` while its writer lives. At startup the store marks `interrupted` only runs
whose writer was on this host and is gone: a pid that no longer exists, a zombie, or a pid reused
by a process that started at another time. Runs written from other hosts (a shared PostgreSQL)
are never touched: their liveness cannot be seen from here.

Liveness and start times come from psutil, so this works wherever psutil does (Linux, macOS,
Windows, the BSDs), not only where /proc exists. A start time is recorded as seconds since the
epoch with two decimals ("1764606000.12"); rows written before psutil (Linux clock ticks since
boot, digits only) are still compared against /proc where it exists.
"""

from __future__ import annotations

import functools
import os
import socket
from dataclasses import dataclass
from pathlib import Path

import psutil

_GONE = (psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD)
_SAME_START_S = 0.015  # two decimals recorded: equal start times differ by rounding only


@dataclass(frozen=True)
class Writer:
    pid: int
    hostname: str
    proc_start: str  # "" where the platform does not tell


@functools.cache
def _hostname() -> str:
    return socket.gethostname()


def _start_text(created: float) -> str:
    return f"{created:.2f}"


def this_writer() -> Writer:
    pid = os.getpid()
    try:
        start = _start_text(psutil.Process(pid).create_time())
    except (psutil.Error, OSError):
        start = ""
    return Writer(pid, _hostname(), start)


def _legacy_ticks(pid: int) -> str | None:
    """The start time in clock ticks from /proc (how rows were written before psutil)."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = raw.rsplit(")", 1)[-1].split()  # the command name may hold spaces and parens
    return fields[19] if len(fields) > 19 else None


def _same_start(recorded: str, created: float, pid: int) -> bool:
    """Whether the recorded start time is this process's (not a reused pid's)."""
    if recorded.isdigit():  # a row from before psutil: Linux clock ticks
        ticks = _legacy_ticks(pid)
        return ticks is None or ticks == recorded
    try:
        return abs(float(recorded) - created) <= _SAME_START_S
    except ValueError:
        return False  # unreadable: not a start time this process could have written


def is_alive(pid: int, proc_start: str | None) -> bool:
    """Whether the process that wrote a run on this host still runs."""
    try:
        process = psutil.Process(pid)
        status = process.status()
        created = process.create_time()
    except psutil.NoSuchProcess:  # includes a zombie on platforms that report it so
        return False
    except psutil.AccessDenied:
        return True  # it exists, owned by another user; its details are not ours to read
    except (psutil.Error, OSError, ValueError):
        return False
    if status in _GONE:
        return False  # killed, not yet reaped
    return not proc_start or _same_start(proc_start, created, pid)


def writer_alive(pid: int, proc_start: str | None, me: Writer) -> bool:
    """Whether the writer of a run or sweep on this host still runs (this process included)."""
    if pid == me.pid:
        return not proc_start or proc_start == me.proc_start
    return is_alive(pid, proc_start)
