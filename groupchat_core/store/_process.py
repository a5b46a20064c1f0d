"""Who is writing a run: pid, host and process start time, to tell live runs from dead ones.

A run stays `running` while its writer lives. At startup the store marks `interrupted` only runs
whose writer was on this host and is gone: a pid that no longer exists, a zombie, or a pid reused
by a process that started at another time. Runs written from other hosts (a shared PostgreSQL)
are never touched: their liveness cannot be seen from here.
"""

from __future__ import annotations

import functools
import os
import socket
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Writer:
    pid: int
    hostname: str
    proc_start: str  # "" where the platform does not tell


def _stat(pid: int) -> tuple[str, str] | None:
    """(state, start time in clock ticks) from /proc on Linux, else None."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = raw.rsplit(")", 1)[-1].split()  # the command name may hold spaces and parens
    return (fields[0], fields[19]) if len(fields) > 19 else None


@functools.cache
def _hostname() -> str:
    return socket.gethostname()


def this_writer() -> Writer:
    pid = os.getpid()
    stat = _stat(pid)
    return Writer(pid, _hostname(), stat[1] if stat else "")


def is_alive(pid: int, proc_start: str | None) -> bool:
    """Whether the process that wrote a run on this host still runs."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # it exists, owned by another user
    except OSError:
        return False
    stat = _stat(pid)
    if stat is None:
        return not Path("/proc/self/stat").exists()  # no /proc at all: trust os.kill
    state, started = stat
    if state in ("Z", "X"):
        return False  # killed, not yet reaped
    return not proc_start or started == proc_start


def writer_alive(pid: int, proc_start: str | None, me: Writer) -> bool:
    """Whether the writer of a run or sweep on this host still runs (this process included)."""
    if pid == me.pid:
        return not proc_start or proc_start == me.proc_start
    return is_alive(pid, proc_start)
