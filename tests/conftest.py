"""Suite-wide guards (no real model calls, no provider keys, no network beyond loopback) and
the store fixtures, parametrised over SQLite and PostgreSQL."""

from __future__ import annotations

import functools
import ipaddress
import os
import socket
from collections.abc import Callable, Iterator
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, NoReturn

import pytest

from tests.helpers.kinds import GROUPED, path_kinds, work_unit
from tests.helpers.stores import release_store_engines

if TYPE_CHECKING:
    from groupchat_core.store import RunStore
    from tests.helpers.pg import Databases

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ["GROUPCHAT_BLOCK_REMOTE_CALLS"] = "1"
# Every Ray cluster a test starts listens on loopback (Ray reads this once, when it is first
# imported: set here, before any test module can import it; the Ray test modules setting it at
# their own import came too late in an xdist worker where another module had imported Ray).
os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"


def _scan_manifests_once() -> None:
    """Each new AppTest scans every installed package's metadata for Streamlit component
    manifests (~0.15 s, a third of a small page's AppTest run); the installed packages do not
    change during a run, so a process scans once and every AppTest reads the same answer."""
    from streamlit.components.v2 import manifest_scanner

    manifest_scanner.scan_component_manifests = functools.cache(  # type: ignore[assignment]
        manifest_scanner.scan_component_manifests)


_scan_manifests_once()
_real_connect = socket.socket.connect


def _loopback_only(self: socket.socket, address: object) -> None:
    if isinstance(address, tuple) and address:
        host = str(address[0])
        try:
            allowed = ipaddress.ip_address(host).is_loopback
        except ValueError:
            allowed = host == "localhost"
        if not allowed:
            raise ConnectionRefusedError(f"tests may only connect to loopback, not {host!r}")
    _real_connect(self, address)


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch, tmp_path: object) -> None:
    """Block non-local model calls and sockets, strip provider keys, keep data in tmp_path."""
    for name in list(os.environ):
        # Keys; and the trace switches (OTEL_* now turns traces on: a developer's collector
        # settings must not trace, or fail, the suite's runs).
        if name.endswith("_API_KEY") or name.startswith("OTEL_") or name == "GROUPCHAT_TRACES":
            monkeypatch.delenv(name)
    monkeypatch.setenv("GROUPCHAT_BLOCK_REMOTE_CALLS", "1")
    monkeypatch.setenv("GROUPCHAT_DB", f"sqlite:///{tmp_path}/groupchat.db")
    monkeypatch.setattr(socket.socket, "connect", _loopback_only)
    from groupchat_core.providers import _retries as retries

    monkeypatch.setattr(retries, "RETRY_BASE_DELAY", 0.01)


# --- markers for the slow kinds, and what must share a worker under pytest-xdist -----------------
#
# `pytest -m "not browser"` (or not local_llm / ray / install / postgres) leaves a slow kind out;
# pyproject.toml registers the markers. Kinds by folder and file, and the work units of
# `make test`'s parallel run, are in tests/helpers/kinds.py; `postgres` comes from a fixture.

PG_FIXTURES = {"pg_server", "pg_databases", "pg_url", "pg_store"}


def _kinds(item: pytest.Item) -> set[str]:
    kinds = path_kinds(PurePosixPath(item.path.as_posix()))
    callspec = getattr(item, "callspec", None)
    uses_pg = PG_FIXTURES & set(getattr(item, "fixturenames", ()))
    if uses_pg or (callspec is not None and callspec.params.get("backend") == "postgresql"):
        kinds.add("postgres")
    return kinds


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by these marks (pytest's own hook)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Marks each test's slow kinds; then the order: the grouped (longest) units first, browser
    tests last, as a plain `pytest` runs them. (Under `make test`, xdist deals the work units
    most tests first, its default `--loadscope-reorder`: that order measured fastest, see
    BENCHMARKS.md, "The test suite's wall time". The browser fixture is module-scoped, so
    Playwright's event loop is closed before a worker's next unit.)"""
    kinds: dict[str, set[str]] = {}
    for item in items:
        kinds[item.nodeid] = found = _kinds(item)
        for kind in sorted(found):
            item.add_marker(kind)
    items.sort(key=lambda item: ("browser" in kinds[item.nodeid],
                                 not kinds[item.nodeid] & set(GROUPED)))


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist's: absent under -p no:xdist
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """Under `-n N --dist loadgroup` (as `make test` runs): a work unit is a grouped kind, else
    a whole module (tests/helpers/kinds.py), so module fixtures (a fake server, a built wheel)
    start once per run. Units go out most tests first (xdist's reorder), as workers free up."""
    if config.getvalue("dist") != "loadgroup":
        return None  # the distribution asked for
    from xdist.scheduler import LoadGroupScheduling

    class GroupOrModule(LoadGroupScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return work_unit(nodeid)

    return GroupOrModule(config, log)


# --- databases: one `store` fixture over SQLite and PostgreSQL ----------------------------------
#
# Backend-agnostic store tests take `store` (or `store_url`, `other_store`, `new_database`) and run
# once per backend. PostgreSQL is a throwaway server started once per session from the machine's
# binaries (tests/helpers/pg.py; `make postgres` installs them), or the server at
# GROUPCHAT_TEST_POSTGRES_URL; every test gets new, empty databases of its own, dropped after it.
# Missing binaries or psycopg fail the PostgreSQL variants with what to install: they never skip.

BACKENDS = ("sqlite", "postgresql")


def _fail_unavailable(problem: str) -> NoReturn:
    pytest.fail(problem, pytrace=False)  # outside the except block: one message, no chained trace


@pytest.fixture(scope="session")
def pg_server() -> Iterator[str]:
    """A URL of the server's admin database: the env's server, else a throwaway local one."""
    from tests.helpers.pg import ENV_URL, LocalPostgres, PostgresUnavailable

    external = os.environ.get(ENV_URL, "").strip()
    if external:
        yield external
        return
    try:
        server = LocalPostgres.start()
    except PostgresUnavailable as exc:
        problem = str(exc)
    else:
        problem = ""
    if problem:
        _fail_unavailable(problem)
    try:
        yield server.url()
    finally:
        server.stop()


@pytest.fixture(scope="session")
def pg_databases(pg_server: str) -> Databases:
    from tests.helpers.pg import Databases, PostgresUnavailable

    try:
        return Databases(pg_server)
    except PostgresUnavailable as exc:
        problem = str(exc)
    _fail_unavailable(problem)


@pytest.fixture
def fresh_engines() -> Iterator[None]:
    """For tests that open stores of their own (RunStore(url), the CLI, a bundle import): after
    the test, nothing of theirs is queued, pooled or remembered. A module takes it for all its
    tests with `pytestmark = pytest.mark.usefixtures("fresh_engines")`."""
    yield
    release_store_engines()


@pytest.fixture
def pg_url(pg_databases: Databases, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A new empty PostgreSQL database for this test only; GROUPCHAT_DB points at it."""
    url = pg_databases.create()
    monkeypatch.setenv("GROUPCHAT_DB", url)
    yield url
    release_store_engines()
    pg_databases.drop(url)


@pytest.fixture
def pg_store(pg_url: str) -> RunStore:
    """A store on PostgreSQL only, for what only a server shows."""
    from groupchat_core.store import RunStore

    return RunStore(pg_url)


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def store_url(backend: str, request: pytest.FixtureRequest) -> str:
    """A new empty database on this test's backend, not opened yet; GROUPCHAT_DB (so
    RunStore() and child processes) points at it."""
    if backend == "postgresql":
        return str(request.getfixturevalue("pg_url"))
    return os.environ["GROUPCHAT_DB"]  # a file in tmp_path (see _offline)


@pytest.fixture
def store(store_url: str) -> Iterator[RunStore]:
    """The run store every backend-agnostic test uses: once on SQLite, once on PostgreSQL."""
    from groupchat_core.store import RunStore

    yield RunStore(store_url)
    release_store_engines()


@pytest.fixture
def new_database(backend: str, request: pytest.FixtureRequest,
                 tmp_path: Path) -> Iterator[Callable[[], str]]:
    """Makes further empty databases on this test's backend (URLs), dropped after the test."""
    made: list[str] = []
    databases = request.getfixturevalue("pg_databases") if backend == "postgresql" else None

    def make() -> str:
        url = (databases.create() if databases is not None
               else f"sqlite:///{tmp_path}/other-{len(made)}.db")
        made.append(url)
        return url

    yield make
    release_store_engines()
    for url in made if databases is not None else ():
        databases.drop(url)


@pytest.fixture
def other_store(new_database: Callable[[], str]) -> RunStore:
    """A second store on the same backend (bundles move runs between stores)."""
    from groupchat_core.store import RunStore

    return RunStore(new_database())


@pytest.fixture
def sqlite_store() -> Iterator[RunStore]:
    """A store in tmp_path's SQLite file, for what only SQLite has (WAL, files, pragmas)."""
    from groupchat_core.store import RunStore

    yield RunStore()
    release_store_engines()
