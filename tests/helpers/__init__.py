"""What tests share that is not a fixture (fixtures live in tests/conftest.py): the repository's
root here; the dashboard's AppTest helpers, the throwaway PostgreSQL server and the scripted trio
in the modules beside this one. Import them as `from tests.helpers... import ...`."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
