"""One rule for turning a value into something JSON carries (numpy scalars as numbers,
NaN/NaT/NA as None, anything else as text), shared by the CLI's JSON output and the sweeps'
self-describing exports so both write the same document for the same data."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any


def plain(value: Any) -> Any:
    """A value JSON can carry: numpy scalars as Python numbers, NaN/NaT/NA as None."""
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, str | bytes):
        try:
            value = value.item()  # numpy scalar
        except (TypeError, ValueError):
            pass
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if value is None or isinstance(value, str | int | float | bool):
        return value
    try:
        import pandas as pd

        if pd.isna(value):
            return None
    except (TypeError, ValueError):
        pass
    return str(value)
