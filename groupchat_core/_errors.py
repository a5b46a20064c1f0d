"""The engine's exception tree, kept short on purpose.

    GroupChatError            base of everything the engine raises on purpose
    ├── ConfigError           bad constructor argument, spec, file or limit (also a ValueError)
    ├── CliError              bad command-line usage (`python -m groupchat_core ...`)
    ├── ModelCallError        a model call the engine refused to make (remote calls blocked)
    └── StoreError            the run store could not read or write

Callers (the CLI, the dashboard) catch these classes, never a bare ValueError: anything else that
escapes is a bug. A failed model call is data, not an exception out of a run: the turn loop
records it on the bid (`Bid.error`, e.g. "ModelCallError: real model calls are blocked ...").
A stop reason (lull, max_loops, error, cancelled) is data on the run record too.
"""

from __future__ import annotations


class GroupChatError(Exception):
    """Base class for errors raised by groupchat_core."""


class ConfigError(GroupChatError, ValueError):
    """A configuration value is invalid; the message names the value and the fix."""


class CliError(GroupChatError):
    """A command-line usage error, reported like every other error: one line, exit status 2."""


class ModelCallError(GroupChatError):
    """A model call the engine refused to make: GROUPCHAT_BLOCK_REMOTE_CALLS is set (tests) and
    the agent would reach beyond loopback. Recorded on the bid as its error, like any failure."""


class StoreError(GroupChatError):
    """The run store could not complete an operation."""
