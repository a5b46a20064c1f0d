"""`groupchat-lab run --human NAME` (issue 22): a person seated in the terminal, driven through
a real pseudo-terminal and through piped stdin, with the offline sim agents of the example spec.

The terminal is read for each prompt as it appears (a condition, bounded so a broken build
fails instead of hanging); nothing is timed.
"""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
from pathlib import Path

import pytest

from groupchat_core import LowerHand, Pass, RaiseHand, SetBid
from groupchat_core.cli._human import parse_line
from groupchat_core.store import RunStore
from tests.helpers import ROOT
from tests.helpers.cli import DEBATE

BOUND = 120.0  # seconds a prompt may take to appear before the test gives up


def _env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "GROUPCHAT_DB": f"sqlite:///{tmp_path}/cli.db", "PYTHONPATH": str(ROOT)}


def _read_until(fd: int, needle: bytes, seen: bytearray) -> bytes:
    """Read the terminal until `needle` has appeared in it (bounded by BOUND)."""
    import time

    ends = time.monotonic() + BOUND
    while needle not in seen:
        left = ends - time.monotonic()
        if left <= 0:
            raise AssertionError(f"{needle!r} never appeared; the terminal showed:\n"
                                 + seen.decode(errors="replace"))
        ready, _, _ = select.select([fd], [], [], left)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:  # the child closed the terminal
                chunk = b""
            if not chunk:
                raise AssertionError(f"{needle!r} never appeared before the end; it showed:\n"
                                     + seen.decode(errors="replace"))
            seen.extend(chunk)
    return bytes(seen)


def test_a_person_at_a_real_terminal_bids_wins_and_posts(tmp_path: Path) -> None:
    master, slave = pty.openpty()
    task = "Tea or coffee? \x1b]0;pwned\x07"  # untrusted text must reach the screen inert
    child = subprocess.Popen(
        [sys.executable, "-m", "groupchat_core", "run", DEBATE, "--task", task, "--human", "Ann",
         "--human-window", "600", "--max-loops", "2", "--no-store"],
        stdin=slave, stdout=slave, stderr=slave, env=_env(tmp_path), cwd=tmp_path,
        close_fds=True)
    os.close(slave)
    seen = bytearray()
    try:
        screen = _read_until(master, b"s to bid", seen)
        assert b"--- turn 1: Ann, " in screen
        _read_until(master, b"0.7 [draft]: bid 0.7] >", seen)
        os.write(master, b"1 a person speaks\n")
        _read_until(master, b"you won turn 1", seen)
        os.write(master, b"\n")  # Enter keeps the draft
        _read_until(master, b"stopped: max_loops", seen)
        assert child.wait(timeout=BOUND) == 0
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        try:
            while True:  # what is left on the terminal
                ready, _, _ = select.select([master], [], [], 0)
                if not ready:
                    break
                chunk = os.read(master, 4096)
                if not chunk:
                    break
                seen.extend(chunk)
        except OSError:
            pass
        os.close(master)
    text = seen.decode(errors="replace")
    assert "Ann: a person speaks" in text
    assert "\x1b]0;" not in text and "\\x1b]0;pwned\\x07" in text  # shown, never obeyed
    assert "bid  Optimist" in text  # the agents' bids are on the prompt


def test_piped_stdin_plays_the_person_and_the_run_records_their_bids(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "groupchat_core", "run", DEBATE, "--task", "Tea or coffee?",
         "--human", "Ann", "--human-window", "600", "--max-loops", "3"],
        input="0.99 hello from a person\n\n", env=_env(tmp_path), cwd=tmp_path,
        capture_output=True, text=True, timeout=BOUND)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Ann: hello from a person")
    assert "time" not in done.stdout and "s to bid" in done.stderr  # prompts stay on stderr
    run_id = done.stderr.strip().splitlines()[-1].removeprefix("run ")
    bids = RunStore(f"sqlite:///{tmp_path}/cli.db").bids(run_id)
    hers = bids[bids["agent"] == "Ann"]
    # turn 1: her bid wins; turn 2: the end of input is a pass, at once (no 600 s wait)
    assert hers["kind"].tolist() == ["human", "human"]
    assert hers["score"].tolist() == [0.99, 0.0]
    assert set(bids[bids["agent"] != "Ann"]["kind"]) == {"agent"}


@pytest.mark.parametrize(("line", "action"), [
    ("", Pass()), ("  ", Pass()), ("h", RaiseHand()), ("HAND", RaiseHand()), ("l", LowerHand()),
    ("0.7", SetBid(0.7, "")), ("1 my words", SetBid(1.0, "my words")), (".5 x", SetBid(0.5, "x")),
    ("1.5", None), ("hello", None), ("-0.2", None),
])
def test_typed_lines_are_read_as_actions(line: str, action: object) -> None:
    assert parse_line(line) == action
