"""Whether the store's settings keep what a mode promises: the settings as the runtime's own
connection read them back (killpoint.stores.durability, the history's `settings` events),
held to what a power cut would take.

SQLite (every setting is the runtime's: it opens the connections and sets their PRAGMAs):
`synchronous=OFF` never syncs; `NORMAL` in WAL mode syncs the WAL only at its checkpoints,
so the last commits may go; `journal_mode` OFF or MEMORY keeps no rollback journal on disk.
PostgreSQL: `fsync=off` never flushes; `synchronous_commit=off` returns before the commit's
WAL is flushed. Set by the runtime's session (or its role), that is the runtime's finding
(`durability-weaker`); set by the server's configuration, it is the store's
(`store-not-durable`, shown, not failing).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from killpoint.scenarios.history import Event
from killpoint.values.findings import Finding


def shortfalls(settings: Mapping[str, Any]) -> list[tuple[str, str, str, bool]]:
    """(setting, value, why, set by the server) for each setting that keeps less than a
    durable commit."""
    found: list[tuple[str, str, str, bool]] = []
    sync = str(settings.get("synchronous", "")).upper()
    mode = str(settings.get("journal_mode", "")).lower()
    if sync == "OFF":
        found.append(
            (
                "synchronous",
                sync,
                "SQLite never syncs a commit: a power cut may lose any of them",
                False,
            )
        )
    elif sync == "NORMAL" and mode == "wal":
        found.append(
            (
                "synchronous",
                sync,
                "in WAL mode SQLite then syncs only at a checkpoint of the WAL: a power cut may lose the last commits",
                False,
            )
        )
    if mode in ("off", "memory"):
        found.append(
            (
                "journal_mode",
                mode,
                "no rollback journal on disk: a power cut during a commit may corrupt the store",
                False,
            )
        )
    for name, why in (
        ("fsync", "the server never flushes to disk: a power cut may lose or corrupt anything"),
        (
            "synchronous_commit",
            "a commit returns before its WAL is flushed: a power cut may lose the last commits returned",
        ),
    ):
        if str(settings.get(name, "")).lower() == "off":
            found.append((name, "off", why, settings.get(f"{name}_source") == "server"))
    return found  # fmt: skip


def settings_findings(events: Iterable[Event]) -> list[Finding]:
    """One finding per setting (and value) that falls short, over every `settings` event."""
    found: list[Finding] = []
    seen: set[tuple[str, str]] = set()
    for e in events:
        if e.event != "settings":
            continue
        for setting, value, why, server in shortfalls(e.data):
            if (setting, value) in seen:
                continue
            seen.add((setting, value))
            found.append(
                Finding.of(
                    "store-not-durable" if server else "durability-weaker",
                    {"setting": setting, "value": value, "why": why},
                    path=f"store.{setting}",
                    expected_value="durable commits",
                    actual_value=value,
                    evidence=(e.describe(),),
                    sides=("what the mode promises", "the store's setting, read back"),
                )
            )
    return found


__all__ = ["settings_findings", "shortfalls"]
