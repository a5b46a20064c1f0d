"""The engine's exception tree, kept short on purpose.

    GroupChatError            base of everything the engine raises on purpose
    ├── ConfigError           bad constructor argument or spec (also a ValueError)
    ├── ModelCallError        a model call could not be made or was refused
    └── StoreError            the run store could not read or write

A stop reason (lull, max_loops, error, cancelled) is data on the run record, never an exception.
"""

from __future__ import annotations


class GroupChatError(Exception):
    """Base class for errors raised by groupchat_core."""


class ConfigError(GroupChatError, ValueError):
    """A configuration value is invalid; the message names the value and the fix."""


class ModelCallError(GroupChatError):
    """A model call failed in a way the engine itself detected (e.g. blocked in tests)."""


class StoreError(GroupChatError):
    """The run store could not complete an operation."""
