"""`delete RUN [RUN ...]`: remove runs with their bid logs, by the owner rules of `sweep delete`.

Each run is resolved first (an id or a unique prefix) and checked before anything is removed:
the CLI's identity (`--owner`, else the OS user) must be the run's recorded owner, or none may be
recorded (the CLI holds the store's credentials: a run nobody owns is the CLI's to manage); a run
still `running` is refused (its process would write into a deleted row). Then one confirmation
names them all (`--yes` skips it; without a terminal to ask on, `--yes` is required). One refused
run deletes nothing, as the dashboard's Runs page does.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .._errors import CliError
from .._terminal import terminal_text
from ._exits import FAILED
from ._store import say, shorten


def add_parser(sub: Any) -> None:
    from ._owner import add_owner_flag

    remove = sub.add_parser("delete", help="delete runs with their bid logs (only their owner; "
                                           "asks first unless --yes)")
    remove.add_argument("runs", nargs="+", metavar="RUN", help="run id (or a unique prefix)")
    remove.add_argument("--yes", action="store_true", help="do not ask for a confirmation")
    add_owner_flag(remove, "deletes them (must be each run's recorded owner)")


def check_owner(label: str, row: dict[str, Any], me: str | None) -> None:
    """Refuse, in one line, what another owner recorded."""
    owner = row.get("owner")
    if owner is not None and owner != me:
        raise CliError(f"{label} belongs to {terminal_text(row.get('owner_name') or owner)}, "
                       f"not to {terminal_text(me or 'an unknown user')}: only its owner "
                       "deletes it (run as that user, or give --owner)")


def confirmed(question: str, what: str, yes: bool) -> bool:
    """--yes, or a 'y' typed on the terminal; without a terminal to ask on, an error."""
    if yes:
        return True
    if not sys.stdin.isatty():
        raise CliError(f"deleting {what} needs a confirmation: add --yes (stdin is not a "
                       "terminal to ask on)")
    print(f"{question} This cannot be undone. [y/N] ", end="", file=sys.stderr, flush=True)
    if sys.stdin.readline().strip().lower() in ("y", "yes"):
        return True
    say("nothing deleted", sys.stderr)
    return False


def cmd_delete(args: argparse.Namespace) -> int:
    from ._owner import cli_owner
    from ._store import store_of

    store, me = store_of(args, create=False), cli_owner(args)
    chosen: dict[str, str] = {}
    for prefix in args.runs:
        run_id = store.resolve(prefix)
        row = store.run_info(run_id)
        label = f"run {run_id[:12]} ({shorten(' '.join(str(row.get('task') or '').split()))})"
        check_owner(label, row, me)
        if row["status"] == "running":
            raise CliError(f"{label} is still running: stop it (Ctrl-C, or the dashboard's "
                           "Stop) before deleting it")
        chosen[run_id] = label
    what = next(iter(chosen.values())) if len(chosen) == 1 else f"{len(chosen)} runs"
    if not confirmed(f"Delete {what}?", what, args.yes):
        return FAILED  # the user answered no: nothing deleted
    for run_id, label in chosen.items():
        store.delete_run(run_id)
        say(f"deleted {label}", sys.stderr)
    return 0
