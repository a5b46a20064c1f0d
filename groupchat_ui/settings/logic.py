"""The Settings page without streamlit: the remembered tool-choice modes as a table, and why
the data lives where it does."""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

from groupchat_core import RememberedMode


def expires_in(seconds: float) -> str:
    """"4 min 05 s" / "42 s": how long until the model is probed again."""
    whole = max(int(seconds), 0)
    minutes, rest = divmod(whole, 60)
    return f"{minutes} min {rest:02d} s" if minutes else f"{rest} s"


def modes_table(modes: Iterable[RememberedMode]) -> pd.DataFrame:
    """One row per remembered (model, api_base, tools) mode, soonest expiry last."""
    rows = [{"model": m.model, "api_base": m.api_base or "(provider default)", "mode": m.mode,
             "expires in": expires_in(m.expires_in), "tools": m.tools_hash} for m in modes]
    return pd.DataFrame(rows, columns=["model", "api_base", "mode", "expires in", "tools"])


SOURCES = {
    "GROUPCHAT_DB": "set by the `GROUPCHAT_DB` environment variable",
    "GROUPCHAT_HOME": "`groupchat.db` in the folder named by the `GROUPCHAT_HOME` environment "
                      "variable",
    "checkout": "the repository's `data/` folder (this server runs from a clone)",
    "user data directory": "this platform's user data directory (the default of an installed "
                           "copy)",
}


def data_source(source: str) -> str:
    """Why the store is where it is, in words."""
    return SOURCES.get(source, source)
