"""A runtime that waits on a held lock by design, and says so: its adapter declines the
`lock-held` kind (`tests.harness.declining_runtimes:patient`), as an adapter for DBOS,
which sets busy_timeout=30000 on every connection, would; and one that stores on SQLite
only, and declares it (`sqlite_only`)."""

from __future__ import annotations

from typing import Any, ClassVar

from sqlalchemy import event
from sqlalchemy.engine import make_url

from killpoint.adapters.reference import ReferenceAdapter, ReferenceDriver
from killpoint.runtime import Store

WAIT_MS = 30_000
WHY = "the runtime waits 30 s on a held write lock by design (busy_timeout on every connection)"


class PatientStore(Store):
    """Overrides the URL's lock timeout: every connection waits out a held lock."""

    def __init__(self, url: str, **kwargs: Any) -> None:
        parsed = make_url(url)
        super().__init__(str(parsed.difference_update_query(["timeout"])), **kwargs)

        @event.listens_for(self.engine, "connect")
        def _patient(dbapi_conn: Any, _record: Any) -> None:
            cur = dbapi_conn.cursor()
            cur.execute(f"PRAGMA busy_timeout={WAIT_MS}")
            cur.close()


class PatientDriver(ReferenceDriver):
    store_class = PatientStore


class PatientAdapter(ReferenceAdapter):
    name = "patient"
    driver_class = PatientDriver
    declined_kinds: ClassVar[dict[str, str]] = {"lock-held": WHY}


patient = PatientAdapter()


class MisspeltAdapter(ReferenceAdapter):
    name = "misspelt"
    declined_kinds: ClassVar[dict[str, str]] = {"lock-hold": WHY}


misspelt = MisspeltAdapter()


class SqliteOnlyAdapter(ReferenceAdapter):
    """Stores on SQLite only, and says so (`stores`); its driver refuses any other URL as
    the guide's `sqlite_path` does, so a row on another store that ran would fail."""

    name = "sqlite-only"
    stores = ("sqlite",)

    def driver(
        self, scenario: Any, store_url: str, mode: str, ledger: Any, *, lease_seconds: float
    ) -> ReferenceDriver:
        if make_url(store_url).get_backend_name() != "sqlite":
            raise ValueError("sqlite-only stores on SQLite only: run killpoint with --store sqlite")
        return super().driver(scenario, store_url, mode, ledger, lease_seconds=lease_seconds)


sqlite_only = SqliteOnlyAdapter()


class MisstoredAdapter(ReferenceAdapter):
    name = "misstored"
    stores = ("postgres",)  # the kind is "postgresql"


misstored = MisstoredAdapter()
