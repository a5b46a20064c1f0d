"""The engine's exception tree, kept short on purpose.

    GroupChatError            base of everything the engine raises on purpose
    ├── ConfigError           bad constructor argument, spec, file or limit (also a ValueError)
    ├── CliError              bad command-line usage (`python -m groupchat_core ...`)
    ├── ModelCallError        a model call that failed (status, code, retry_after, attempts,
    │                         cause) or that the engine refused to make (remote calls blocked)
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
    """A model call that failed, or that the engine refused to make (GROUPCHAT_BLOCK_REMOTE_CALLS
    is set and the agent would reach beyond loopback). Recorded on the bid as its error.

    Every provider's failures arrive as this one class, so the retry policy reads them alike
    (docs/engine.md §3, "Model call errors"): `status` (the HTTP status the server answered,
    None when none came: a connection error, a timeout, a reply that was not a completion),
    `code` (the engine's short name for the failure: "rate_limited", "server_error",
    "bad_gateway", "unavailable", "connection", "timeout", "context_window", "bad_request",
    "unsupported_params", "unprocessable", "auth", "permission", "not_found",
    "deployment_at_limit", "bad_reply", "error"; None for a refusal), `retry_after` (seconds the
    server asked to wait, None when it named none), `attempts` (HTTP requests made) and
    `cause` (the exception it came from, if any). `kind` is the name a bid's error shows
    ("RateLimitError: ..."), the class name of the cause when there is one."""

    def __init__(self, message: str, *, status: int | None = None, code: str | None = None,
                 retry_after: float | None = None, attempts: int = 0,
                 cause: BaseException | None = None, kind: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.retry_after = retry_after
        self.attempts = attempts
        self.cause = cause
        self.kind = kind or type(self).__name__


class StoreError(GroupChatError):
    """The run store could not complete an operation."""
