"""Persistence: every run and its bid log, saved as it happens (SQLite by default, any URL).

    from groupchat_core.store import RunStore

Every SQL statement of the package lives in this subpackage, behind RunStore's methods; no
module outside it imports SQLAlchemy or a private `store._*` module
(tests/architecture/test_store_boundary.py).
Where the data lives: `data_location()` (GROUPCHAT_DB, else GROUPCHAT_HOME, else a clone's
`data/`, else the platform's user data directory; see docs/engine.md, "Where the data lives").
"""

from .._home import DataLocation, data_location, stray_databases
from ._connect import ENV_VAR, default_url, dispose_engines, safe_url
from ._library import check_owner
from ._recorder import StoreRecorder
from ._runstore import RunStore
from ._schema import RUN_STATUSES, SCHEMA_VERSION
from ._sqlite_check import missing_store
from ._sweeps import SWEEP_STATUSES, CellClaim, SweepBusy
from ._writer import outcome_values, status_for

__all__ = [
    "ENV_VAR",
    "RUN_STATUSES",
    "SCHEMA_VERSION",
    "SWEEP_STATUSES",
    "CellClaim",
    "DataLocation",
    "RunStore",
    "StoreRecorder",
    "SweepBusy",
    "check_owner",
    "data_location",
    "default_url",
    "dispose_engines",
    "missing_store",
    "outcome_values",
    "safe_url",
    "status_for",
    "stray_databases",
]
