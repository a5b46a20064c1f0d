"""Who the command line acts for: `--owner NAME`, else the OS user running it.

Recorded as the owner of the runs and sweeps the CLI starts or imports (as the dashboard records
the signed-in user), and checked by `sweep delete`. It is a label, not a sign-in: whoever can
reach the store's database can write anything in it, so the CLI's owner rules guard against
mistakes (deleting a colleague's sweep by a wrong id), not against the store's own users.
"""

from __future__ import annotations

import argparse
import getpass
from typing import Any

from .._errors import CliError


def add_owner_flag(parser: Any, what: str) -> None:
    parser.add_argument("--owner", default=None, metavar="NAME",
                        help=f"who {what} (default: the OS user, {os_user() or 'unknown'}); "
                             "the dashboard shows it, and only that user (or an admin) may "
                             "delete it there")


def os_user() -> str | None:
    """The OS user's login name; None where the system cannot tell (then nobody is recorded)."""
    try:
        return getpass.getuser() or None
    except Exception:  # no LOGNAME/USER and no password database entry (some containers)
        return None


def cli_owner(args: argparse.Namespace) -> str | None:
    """`--owner` (checked: 1-320 printable characters), else the OS user."""
    from ..store import check_owner

    given = getattr(args, "owner", None)
    if given is None:
        return os_user()
    try:
        return check_owner(given)
    except Exception as exc:  # StoreError: say it is the flag
        raise CliError(f"--owner: {exc}") from None
