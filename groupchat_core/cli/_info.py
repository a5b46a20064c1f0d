"""`groupchat-lab --version`: which code this is and where its data lives (one place for the
questions a bug report needs answered)."""

from __future__ import annotations

from typing import Any

from .._home import data_location, stray_notice
from .._version import SCHEMA_VERSION, app_version, litellm_version


def version_info() -> dict[str, Any]:
    """The app, litellm and store schema versions, and the store in use (password masked)."""
    location = data_location()
    return {"app_version": app_version(), "litellm_version": litellm_version(),
            "schema_version": SCHEMA_VERSION, "data": _shown_url(location.url),
            "data_source": location.source}


def _shown_url(url: str) -> str:
    """The store URL for --version: one without credentials (no `@`) as it is, without loading
    SQLAlchemy (a cold start); any other through the store's masking."""
    if "@" not in url:
        return url
    from ..store import safe_url

    return safe_url(url)


def version_text() -> str:
    info = version_info()
    lines = [f"groupchat-lab {info['app_version']}",
             f"litellm {info['litellm_version']}",
             f"store schema {info['schema_version']}",
             f"data: {info['data']} (from {info['data_source']})"]
    notice = stray_notice()
    return "\n".join(lines + ([notice] if notice else []))
