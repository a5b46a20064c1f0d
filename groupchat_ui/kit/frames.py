"""A frame's rows as dicts keyed by column name, for labels and pickers.

Why: pandas-stubs types `DataFrame.to_dict("records")` as `dict[Hashable, Any]` (a column may be
named by any hashable); every frame the store hands the dashboard is named by strings, and the
label functions say so (`Mapping[str, Any]`), so mypy checks them.
"""

from __future__ import annotations

from typing import Any

import pandas as pd


def records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """`frame.to_dict("records")` with str column names."""
    return [{str(k): v for k, v in row.items()} for row in frame.to_dict("records")]
