"""Where the lab keeps its data: one answer for the CLI, the dashboard and `--version`.

Precedence (docs/engine.md, "Where the data lives"):
1. `GROUPCHAT_DB`: any SQLAlchemy URL, used as it is;
2. `GROUPCHAT_HOME`: a folder; the store is `<home>/groupchat.db`;
3. running from a clone (the code sits in a checkout, as with `make run`): the repo's
   git-ignored `data/` folder, so the checkout's CLI and dashboard share one store;
4. an installed copy: the platform's user data directory (platformdirs, e.g.
   `~/.local/share/groupchat-lab` on Linux), never a folder inside the installed package.

A `data/groupchat.db` next to the working directory (or in the checkout) that is not the store
in use is not silently abandoned: `stray_notice()` says how to point at it or move it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

DB_VAR = "GROUPCHAT_DB"
HOME_VAR = "GROUPCHAT_HOME"
APP_NAME = "groupchat-lab"
DB_FILE = "groupchat.db"
PACKAGE_DIR = Path(__file__).resolve().parent
CHECKOUT_ROOT = PACKAGE_DIR.parent


@dataclass(frozen=True)
class DataLocation:
    """The store URL in use, why (`source`), and its file when it is a SQLite file."""

    url: str
    source: str  # "GROUPCHAT_DB", "GROUPCHAT_HOME", "checkout" or "user data directory"
    path: Path | None


def is_checkout(root: Path = CHECKOUT_ROOT) -> bool:
    """Whether the code runs from a clone (its root holds pyproject.toml and the dashboard's
    entry script), not from an installed copy in site-packages."""
    return (root / "pyproject.toml").is_file() and (root / "streamlit_app.py").is_file()


def data_home() -> tuple[Path, str]:
    """The data folder and why it was chosen (GROUPCHAT_DB aside)."""
    configured = os.environ.get(HOME_VAR, "").strip()
    if configured:
        return Path(configured).expanduser().resolve(), HOME_VAR
    if is_checkout():
        return CHECKOUT_ROOT / "data", "checkout"
    import platformdirs

    return Path(platformdirs.user_data_path(APP_NAME, appauthor=False)), "user data directory"


def data_location() -> DataLocation:
    """The store in use: GROUPCHAT_DB if set, else `<data home>/groupchat.db`."""
    configured = os.environ.get(DB_VAR, "").strip()
    if configured:
        return DataLocation(configured, DB_VAR, _sqlite_file(configured))
    home, source = data_home()
    path = home / DB_FILE
    return DataLocation(f"sqlite:///{path}", source, path)


def _sqlite_file(url: str) -> Path | None:
    """The file of a `sqlite:///...` URL (None for other databases and in-memory ones)."""
    prefix = "sqlite:///"
    if not url.startswith(prefix):
        return None
    name = url[len(prefix):].split("?", 1)[0]
    return Path(name).expanduser().resolve() if name and name != ":memory:" else None


def stray_databases(cwd: Path | None = None) -> list[Path]:
    """Existing `data/groupchat.db` files next to the working directory or in the checkout
    that are not the store in use (an old default a user may be looking for)."""
    in_use = data_location().path
    candidates = [(cwd or Path.cwd()) / "data" / DB_FILE, CHECKOUT_ROOT / "data" / DB_FILE]
    found: list[Path] = []
    for candidate in candidates:
        try:
            resolved = candidate.resolve()
            exists = resolved.is_file()
        except OSError:
            continue
        if exists and resolved != in_use and resolved not in found:
            found.append(resolved)
    return found


def stray_notice(cwd: Path | None = None) -> str | None:
    """One line per stray store saying how to use it, or None when there is none."""
    location = data_location()
    where = location.path or "the database in GROUPCHAT_DB"
    lines = [f"note: {path} holds an existing store that is not in use (the data lives in "
             f"{where}); to use it, set {DB_VAR}=sqlite:///{path}"
             + (f" or move it to {location.path}" if location.path else "")
             for path in stray_databases(cwd)]
    return "\n".join(lines) or None
