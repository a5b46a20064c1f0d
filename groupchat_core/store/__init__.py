"""Persistence: every run and its bid log, saved as it happens (SQLite by default, any URL).

    from groupchat_core.store import RunStore
"""

from ._connect import ENV_VAR, default_url, dispose_engines, safe_url
from ._recorder import StoreRecorder
from ._runstore import RunStore
from ._schema import RUN_STATUSES, SCHEMA_VERSION

__all__ = [
    "ENV_VAR",
    "RUN_STATUSES",
    "SCHEMA_VERSION",
    "RunStore",
    "StoreRecorder",
    "default_url",
    "dispose_engines",
    "safe_url",
]
