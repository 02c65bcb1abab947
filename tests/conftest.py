"""Fixtures: a PostgreSQL server for the session, a fresh database per test, store URLs on
both backends, and the respx mock of the Responses API.

PostgreSQL: `KILLPOINT_PG_URL` (any database on a server we may CREATE DATABASE on) is used
as is; otherwise the session runs `initdb` + `pg_ctl` into a temp dir (as the `postgres`
user when run as root) on a free localhost port, and stops it at the end. Each pytest-xdist
worker has its own session, so its own server. Without PostgreSQL binaries the PostgreSQL
tests are skipped with the reason, or fail when `KILLPOINT_REQUIRE_PG` is set (CI).
"""

from __future__ import annotations

import atexit
import glob
import os
import pwd
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import psycopg
import pytest
import respx
from sqlalchemy.engine import make_url

from tests.helpers import mock_openai

PG_URL_ENV = "KILLPOINT_PG_URL"
REQUIRE_PG_ENV = "KILLPOINT_REQUIRE_PG"


class PgUnavailable(Exception):
    """No PostgreSQL for this session; the message says what is missing."""


# -- PostgreSQL server -----------------------------------------------------------------------


def _version_key(bindir: str) -> tuple[int, ...]:
    version = Path(bindir).parent.name
    return tuple(int(p) for p in version.split(".") if p.isdigit()) or (0,)


def find_pg_binaries() -> tuple[Path, Path]:
    """`initdb` and `pg_ctl`: from PATH, else the newest /usr/lib/postgresql/*/bin."""
    initdb, pg_ctl = shutil.which("initdb"), shutil.which("pg_ctl")
    if initdb and pg_ctl:
        return Path(initdb).resolve(), Path(pg_ctl).resolve()
    for bindir in sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=_version_key, reverse=True):
        i, p = Path(bindir, "initdb"), Path(bindir, "pg_ctl")
        if i.exists() and p.exists():
            return i, p
    raise PgUnavailable(
        "no PostgreSQL binaries: `initdb`/`pg_ctl` are not on PATH nor in "
        "/usr/lib/postgresql/*/bin (install the `postgresql` package, or set "
        f"{PG_URL_ENV}=postgresql://user@host:port/db)"
    )


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LocalPostgres:
    """A throwaway cluster in a temp dir: no fsync, trust auth, localhost only."""

    def __init__(self) -> None:
        self.initdb, self.pg_ctl = find_pg_binaries()
        self.prefix: list[str] = []
        self.uid: int | None = None
        self.gid: int | None = None
        if os.geteuid() == 0:
            try:
                pw = pwd.getpwnam("postgres")
            except KeyError:
                raise PgUnavailable(
                    "running as root and there is no `postgres` user to run the server as "
                    "(PostgreSQL refuses to run as root)"
                ) from None
            self.uid, self.gid = pw.pw_uid, pw.pw_gid
            if runuser := shutil.which("runuser"):
                self.prefix = [runuser, "-u", "postgres", "--"]
            elif setpriv := shutil.which("setpriv"):
                self.prefix = [
                    setpriv,
                    f"--reuid={pw.pw_uid}",
                    f"--regid={pw.pw_gid}",
                    "--init-groups",
                    "--",
                ]
            else:
                raise PgUnavailable("running as root and neither `runuser` nor `setpriv` exists")
        self.base = Path(tempfile.mkdtemp(prefix="kppg-"))
        self.data = self.base / "data"
        self.log = self.base / "server.log"
        self.port: int | None = None
        self.started = False
        self.watchdog: subprocess.Popen[bytes] | None = None
        # Off: fast, but a restart (not a kill of a client) loses the last commits it
        # acknowledged. On for the tests that restart the server on purpose.
        self.synchronous_commit = "off"

    def _run(self, *args: str | Path, check: bool = True) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            [*self.prefix, *map(str, args)],
            cwd=self.base,
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=120,
        )
        if check and proc.returncode != 0:
            raise PgUnavailable(
                f"`{Path(str(args[0])).name}` failed ({proc.returncode}): "
                f"{(proc.stderr or proc.stdout).strip()[-2000:]}"
            )
        return proc

    def start(self) -> str:
        if self.uid is not None and self.gid is not None:
            os.chown(self.base, self.uid, self.gid)
        self._run(
            self.initdb,
            "-D",
            self.data,
            "-U",
            "postgres",
            "--auth=trust",
            "--encoding=UTF8",
            "--no-locale",
            "--no-sync",
        )
        last = ""
        for _ in range(5):  # another process may grab the free port first
            port = _free_port()
            proc = self._pg_ctl_start(port)
            if proc.returncode == 0:
                self.port, self.started = port, True
                atexit.register(self.stop)
                self.watchdog = start_watchdog(self)
                return f"postgresql://postgres@127.0.0.1:{port}/postgres"
            last = self.log.read_text(errors="replace")[-2000:] if self.log.exists() else ""
            last = last or proc.stderr
        raise PgUnavailable(f"`pg_ctl start` failed five times; server log:\n{last}")

    def _pg_ctl_start(self, port: int) -> subprocess.CompletedProcess[str]:
        options = (
            f"-p {port} -k {self.base} -c listen_addresses=127.0.0.1 -c fsync=off "
            f"-c synchronous_commit={self.synchronous_commit} -c full_page_writes=off "
            "-c max_connections=200"
        )
        return self._run(
            self.pg_ctl, "-D", self.data, "-l", self.log, "-w", "-t", "60", "-o", options,
            "start", check=False,
        )  # fmt: skip

    def halt(self) -> None:
        """Stop the server at once (its connections die); `resume` starts it again."""
        self._run(self.pg_ctl, "-D", self.data, "-m", "immediate", "-w", "stop")

    def resume(self) -> None:
        assert self.port is not None
        proc = self._pg_ctl_start(self.port)
        if proc.returncode != 0:
            raise PgUnavailable(f"`pg_ctl start` failed again: {proc.stderr.strip()}")

    def restart_command(self) -> str:
        """A shell command that restarts this server (for KILLPOINT_STORE_RESTART)."""
        return shlex.join(
            [*self.prefix, str(self.pg_ctl), "-D", str(self.data), "-m", "immediate", "-w",
             "-t", "60", "-l", str(self.log), "restart"]
        )  # fmt: skip

    def postmaster_pid(self) -> int | None:
        try:
            return int((self.data / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def stop(self) -> None:
        if self.started:
            self.started = False
            self._run(self.pg_ctl, "-D", self.data, "-m", "immediate", "-w", "stop", check=False)
        shutil.rmtree(self.base, ignore_errors=True)
        if self.watchdog is not None:
            self.watchdog.kill()
            self.watchdog.wait()
            self.watchdog = None


def start_watchdog(server: LocalPostgres) -> subprocess.Popen[bytes]:
    """A process that stops `server` when this one is gone, however it ends (SIGKILL, a
    killed xdist worker): `pg_ctl start` detaches the server, which would outlive us."""
    return subprocess.Popen(
        [sys.executable, "-m", "tests.pg_watchdog", str(os.getpid()), str(server.base),
         *server.prefix, str(server.pg_ctl), "-D", str(server.data), "-m", "immediate", "-w",
         "stop"],
        cwd=Path(__file__).resolve().parent.parent, stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip


@dataclass(frozen=True)
class PgServer:
    """A PostgreSQL server the tests may create and drop databases on."""

    admin_url: str  # libpq URL of a maintenance database

    def execute(self, sql: str) -> None:
        with psycopg.connect(self.admin_url, autocommit=True, connect_timeout=10) as conn:
            conn.execute(sql)  # type: ignore[arg-type]

    def url_for(self, database: str) -> str:
        """The store URL (SQLAlchemy, psycopg 3 driver) of `database` on this server."""
        return (
            make_url(self.admin_url)
            .set(drivername="postgresql+psycopg", database=database)
            .render_as_string(hide_password=False)
        )


def _libpq_url(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


def _unavailable(reason: str) -> NoReturn:
    if os.environ.get(REQUIRE_PG_ENV):
        pytest.fail(
            f"PostgreSQL is required ({REQUIRE_PG_ENV} is set) but unavailable: {reason}",
            pytrace=False,
        )
    pytest.skip(f"PostgreSQL tests skipped: {reason}")


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    """The session's PostgreSQL server (KILLPOINT_PG_URL, or one started here)."""
    if url := os.environ.get(PG_URL_ENV):
        server = PgServer(_libpq_url(url))
        try:
            server.execute("SELECT 1")
        except psycopg.Error as exc:
            _unavailable(f"{PG_URL_ENV} is set but the server does not answer: {exc}")
        yield server
        return
    try:
        local = LocalPostgres()
    except PgUnavailable as exc:
        _unavailable(str(exc))
    try:
        try:
            server = PgServer(local.start())
            server.execute("SELECT 1")
        except (PgUnavailable, psycopg.Error, OSError, subprocess.SubprocessError) as exc:
            _unavailable(f"could not start a server with {local.pg_ctl}: {exc}")
        yield server
    finally:
        local.stop()


@pytest.fixture
def pg_url(pg_server: PgServer) -> Iterator[str]:
    """A fresh, empty database (dropped after the test) on the session's server."""
    name = f"kp_{uuid.uuid4().hex[:20]}"
    pg_server.execute(f'CREATE DATABASE "{name}"')
    try:
        yield pg_server.url_for(name)
    finally:
        pg_server.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh, empty store: a new SQLite file, or a new PostgreSQL database."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'store.db'}"
    return str(request.getfixturevalue("pg_url"))


# -- the Responses API -----------------------------------------------------------------------


@pytest.fixture
def openai_mock(monkeypatch: pytest.MonkeyPatch) -> Iterator[respx.MockRouter]:
    """respx on httpx2's transports: routes serve the SDK's default client; any request
    without a route fails the test (AllMockedAssertionError) instead of reaching the network."""
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID"):
        monkeypatch.delenv(var, raising=False)
    with mock_openai() as router:
        yield router


def pytest_report_header(config: pytest.Config) -> str:
    if url := os.environ.get(PG_URL_ENV):
        return f"killpoint: PostgreSQL from {PG_URL_ENV} ({make_url(url).host})"
    try:
        initdb, _ = find_pg_binaries()
    except PgUnavailable as exc:
        return f"killpoint: {exc}"
    return f"killpoint: PostgreSQL tests start a server from {initdb.parent}"
