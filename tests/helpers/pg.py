"""A throwaway PostgreSQL server for the store's tests, from the machine's own binaries.

    server = LocalPostgres.start()   # initdb + pg_ctl start in a fresh temp folder
    server.url("groupchat_test")    # postgresql+psycopg://postgres@127.0.0.1:<port>/groupchat_test
    server.stop()                    # pg_ctl stop -m immediate, and the folder is removed

The binaries come from Debian's `postgresql` package (`make postgres` installs it); the packaged
cluster and its service are never used. The server listens on 127.0.0.1 at a free port and on a
unix socket in its own folder, trusts local connections (initdb -A trust) and runs with fsync
off: it holds nothing worth keeping. As root (CI), initdb refuses to run, so the server runs as
the unprivileged `postgres` user that the package creates, in a folder that user owns.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import pwd
import re
import shlex
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Sequence
from glob import glob
from pathlib import Path
from typing import Any

from sqlalchemy.engine import URL, make_url

ENV_URL = "GROUPCHAT_TEST_POSTGRES_URL"
SERVER_USER = "postgres"  # the OS user the server runs as under root; also the superuser role
INSTALL_HINT = ("run `make postgres` (it installs Debian's postgresql package), or set "
                f"{ENV_URL} to a server where this role may CREATE DATABASE")


class PostgresUnavailable(RuntimeError):
    """No server can be started here; the message says what to install."""


def find_bindir() -> Path:
    """The newest /usr/lib/postgresql/<major>/bin holding initdb and pg_ctl (else PATH's)."""
    found = sorted(glob("/usr/lib/postgresql/*/bin/initdb"),
                   key=lambda p: int(re.sub(r"\D", "", p.split("/")[4]) or 0))
    candidates = [Path(p).parent for p in reversed(found)]
    on_path = shutil.which("initdb")
    if on_path:
        candidates.append(Path(on_path).resolve().parent)
    for bindir in candidates:
        if os.access(bindir / "initdb", os.X_OK) and os.access(bindir / "pg_ctl", os.X_OK):
            return bindir
    raise PostgresUnavailable(f"PostgreSQL's server binaries (initdb, pg_ctl) are not "
                              f"installed: {INSTALL_HINT}")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class LocalPostgres:
    """One running throwaway server; `start()` makes it, `stop()` ends it and removes its files."""

    def __init__(self, bindir: Path, base: Path, run_as: str | None) -> None:
        self.bindir, self.base, self.run_as = bindir, base, run_as
        self.data, self.sockets, self.log = base / "data", base / "sockets", base / "server.log"
        self.port = 0
        self.startup_s = 0.0
        self._running = False

    @classmethod
    def start(cls, attempts: int = 3) -> LocalPostgres:
        began = time.monotonic()
        bindir = find_bindir()
        run_as = None
        if os.geteuid() == 0:  # initdb and postgres refuse to run as root
            try:
                owner = pwd.getpwnam(SERVER_USER)
            except KeyError:
                raise PostgresUnavailable(
                    f"running as root, the server needs the unprivileged {SERVER_USER!r} user "
                    f"that Debian's postgresql package creates: {INSTALL_HINT}") from None
            run_as = SERVER_USER
        # /tmp rather than $TMPDIR: a short path (unix socket paths are limited to ~100 bytes)
        # that the postgres user can reach when we are root.
        base = Path(tempfile.mkdtemp(prefix="groupchat-pg-",
                                     dir="/tmp" if os.path.isdir("/tmp") else None))
        server = cls(bindir, base, run_as)
        try:
            server.sockets.mkdir()
            if run_as is not None:
                for path in (base, server.sockets):
                    os.chown(path, owner.pw_uid, owner.pw_gid)
            server._initdb()
            server._start(attempts)
        except BaseException:
            server.stop()
            raise
        server.startup_s = time.monotonic() - began
        return server

    def _run(self, args: Sequence[str], what: str, timeout: float = 120) -> None:
        command = [str(self.bindir / args[0]), *args[1:]]
        if self.run_as is not None:
            command = ["runuser", "-u", self.run_as, "--", *command]
        env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
        env.update(LC_ALL="C", LANG="C", TZ="UTC")
        done = subprocess.run(command, cwd=self.base, env=env, capture_output=True, text=True,
                              timeout=timeout, check=False)
        if done.returncode != 0:
            log = self.log.read_text(errors="replace")[-3000:] if self.log.exists() else ""
            raise PostgresUnavailable(
                f"{what} failed (exit {done.returncode}): {shlex.join(command)}\n"
                f"{done.stdout[-2000:]}{done.stderr[-2000:]}{log}")

    def _initdb(self) -> None:
        self._run(["initdb", "-D", str(self.data), "-A", "trust", "-U", SERVER_USER,
                   "-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions"],
                  "initdb of a throwaway PostgreSQL cluster")

    def _start(self, attempts: int) -> None:
        for attempt in range(1, attempts + 1):
            self.port = free_port()
            options = (f"-k {shlex.quote(str(self.sockets))} -p {self.port} "
                       "-c listen_addresses=127.0.0.1 -F -c full_page_writes=off")
            try:
                self._run(["pg_ctl", "-D", str(self.data), "-l", str(self.log), "-w", "-t", "60",
                           "-o", options, "start"], "starting the throwaway PostgreSQL server")
            except PostgresUnavailable:
                # Another program may have taken the free port in between: try a new one.
                if attempt == attempts or "could not bind" not in self._log_text():
                    raise
                continue
            self._running = True
            atexit.register(self.stop)
            return

    def _log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def url(self, database: str = "postgres") -> str:
        return f"postgresql+psycopg://{SERVER_USER}@127.0.0.1:{self.port}/{database}"

    def stop(self) -> None:
        """Stop at once (the data is thrown away) and remove every file; safe to call twice."""
        if self._running:
            self._running = False
            with contextlib.suppress(PostgresUnavailable, subprocess.TimeoutExpired):
                self._run(["pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "-t", "30",
                           "stop"], "stopping the throwaway PostgreSQL server", timeout=60)
        shutil.rmtree(self.base, ignore_errors=True)


class Databases:
    """Creates and drops uniquely named databases on a server (one per test: no shared rows).

    `admin_url` is a SQLAlchemy URL of a database to connect to for CREATE/DROP DATABASE.
    """

    def __init__(self, admin_url: str) -> None:
        try:
            import psycopg
        except ImportError:
            raise PostgresUnavailable("psycopg is not installed: run `make setup` (it installs "
                                      "requirements-dev.txt)") from None
        self._psycopg = psycopg
        self.admin: URL = make_url(admin_url)
        self._count = 0

    def _connect(self) -> Any:  # a psycopg connection, autocommit
        url = self.admin
        return self._psycopg.connect(
            host=url.host or None, port=url.port, user=url.username, password=url.password,
            dbname=url.database or "postgres", autocommit=True, connect_timeout=10)

    def create(self, prefix: str = "groupchat_test") -> str:
        """A new empty database; returns its SQLAlchemy URL (same server, role and driver)."""
        self._count += 1
        name = f"{prefix}_{os.getpid()}_{self._count}_{os.urandom(3).hex()}"
        with self._connect() as conn:
            # PostgreSQL 15+ copies the template through the WAL by default; with fsync off a
            # plain file copy is several times faster (0.03-0.1 s instead of 0.25 s here).
            fast = " STRATEGY FILE_COPY" if conn.info.server_version >= 150000 else ""
            conn.execute(f'CREATE DATABASE "{name}"{fast}')
        return self.admin.set(drivername="postgresql+psycopg", database=name
                              ).render_as_string(hide_password=False)

    def drop(self, url: str) -> None:
        name = make_url(url).database
        with self._connect() as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def names(self, prefix: str = "groupchat_test") -> list[str]:
        with self._connect() as conn:
            rows = conn.execute("SELECT datname FROM pg_database WHERE datname LIKE %s",
                                (prefix.replace("_", r"\_") + "%",)).fetchall()
        return sorted(r[0] for r in rows)
