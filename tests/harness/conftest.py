"""tests/harness: `fixtures/` holds whole projects that pytester copies and runs; they are
not part of this suite. `own_pg`: a PostgreSQL server a test module may stop and restart."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.conftest import LocalPostgres, PgServer, PgUnavailable

collect_ignore = ["fixtures"]


@pytest.fixture(scope="module")
def own_pg() -> Iterator[tuple[LocalPostgres, str]]:
    """A server of this module's own, which its tests stop and restart: it keeps every
    commit it acknowledged across a restart (synchronous_commit on)."""
    try:
        local = LocalPostgres()
        local.synchronous_commit = "on"
        admin = local.start()
    except PgUnavailable as exc:
        pytest.skip(f"PostgreSQL tests skipped: {exc}")
    server = PgServer(admin)
    server.execute('CREATE DATABASE "outage"')
    try:
        yield local, server.url_for("outage")
    finally:
        local.stop()
