"""Which code wrote a record: the app, litellm and store schema versions (recorded with bundles
and runs, so a result can be traced to the code that produced it)."""

from __future__ import annotations

from functools import cache
from importlib import metadata

DISTRIBUTION = "groupchat-lab"
# Kept equal to pyproject.toml's [project] version (tests/architecture/test_public_api.py
# checks it), so a checkout that is not installed still knows its version.
APP_VERSION = "0.2.0"
# The store's schema version (store/_schema.py re-exports it). Declared here, without
# SQLAlchemy, so `groupchat-lab --version` can print it without loading the store.
SCHEMA_VERSION = 13


@cache
def app_version() -> str:
    """The installed distribution's version, else the checkout's APP_VERSION."""
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return APP_VERSION


@cache
def litellm_version() -> str:
    """litellm's installed version, read from its metadata (importing litellm costs seconds)."""
    try:
        return metadata.version("litellm")
    except metadata.PackageNotFoundError:
        return "not installed"
