"""The runtime adapter Protocol: everything the engine relies on in a runtime.

An adapter is everything killpoint knows about one runtime. docs/adapters.md writes one
step by step; `killpoint check-adapter --runtime package.module:adapter` checks one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from killpoint.values.modes import Mode

if TYPE_CHECKING:
    from killpoint.adapters.checkpoint_gates import CheckpointGates
    from killpoint.scenarios import Driver, Ledger, Scenario
    from killpoint.values.findings import Finding
    from killpoint.values.normal_form import Session


@runtime_checkable
class RuntimeAdapter(Protocol):
    """How killpoint builds, drives and reads back one runtime.

    The engine relies on exactly what is declared here. Subclass it to inherit the
    defaults (`class MyAdapter(killpoint.RuntimeAdapter): ...`), or write the members
    out. Every read takes the store URL: an adapter keeps no connection across a fork,
    and is used from several threads of the engine at once.

    Optional, read where present (so an adapter written out before it still is one):
    `declined_kinds`, a mapping from a crash-point kind's name to why that kind does not
    apply to this runtime (one line). Its points are skipped with the reason, never run.
    `local_model = True`: every worker also serves the scripted model at a real local
    address (127.0.0.1) and puts its base URL in the environment before `driver()` is
    called (KILLPOINT_MODEL_URL; OPENAI_BASE_URL, ANTHROPIC_BASE_URL), for a runtime whose
    model client is not the openai SDK's default transport (LiteLLM, the anthropic SDK, a
    client of its own, a model call in a subprocess).
    `bounded_reads = True`: its reads in the engine (`progress`, `read_session`,
    `lease_deadline`, `inspect`) of an embedded SQLite store return or raise within the
    store's busy timeout (no wait without a bound): the engine makes them in the cell's
    own thread instead of handing each to a thread that keeps the cell's deadline.
    `stores`: the kinds of store the runtime can keep its runs in ("sqlite",
    "postgresql"); a row on any other is skipped with the reason, never run. Absent (or
    None): every kind.
    """

    name: str
    # The checkpoint modes the runtime offers, in its own names (see killpoint.values.modes).
    modes: Sequence[Mode]
    # Keys the oracle drops from every dict of the normal form, at any depth, before it
    # compares a session with its baseline: what differs between two runs by construction
    # (ids, timestamps, durations, ownership). Shown in every report.
    excluded: Sequence[str] = ()
    # Modules the forkserver imports before it forks any worker of this runtime, so that
    # its workers start warm (the runtime's own packages, its database driver).
    preload_modules: Sequence[str] = ()

    def instrument(self, checkpoints: CheckpointGates) -> None:
        """In a worker, before the run: make every durable write of a checkpoint go
        through `checkpoints` (its `wrap` or `write`, and a commit hook), so that the
        gates `checkpoint:{n}:writing|committing|landed` mark it."""

    def driver(
        self, scenario: Scenario, store_url: str, mode: str, ledger: Ledger, *, lease_seconds: float
    ) -> Driver:
        """A killpoint.Driver over a fresh agent of this runtime, built from `scenario` (its
        tools wrapped with `scenario.build_tools(ToolEnv(ledger))`), writing to `store_url`
        in `mode`. `lease_seconds`: how long a run stays owned by its worker, for runtimes
        with run ownership."""
        ...

    def progress(self, store_url: str, session_id: str) -> int:
        """How many checkpoints of the session have landed: exactly one per `landed` gate
        its workers passed (0 when there are none). Polled while a worker is parked."""
        ...

    def read_session(self, store_url: str, session_id: str) -> Session | Mapping[str, Any] | None:
        """Everything the runtime persists about the session and its runs, in the normal
        form (killpoint.Session gives its shape; the engine checks every session read
        against it); None when the session is absent."""
        ...

    def inspect(self, store_url: str, session_id: str) -> Sequence[str | Finding]:
        """Broken invariants of the store after a crash, one sentence each (empty: sound).
        A sentence is a broken store (`corrupt`); give a killpoint.Finding of kind
        "inconsistency" instead for a field that disagrees with the rest without changing
        what a resume does (shown and counted, low severity)."""
        return []

    def lease_deadline(self, store_url: str, session_id: str) -> float | None:
        """When (time.time()) the lease of the session's unfinished run expires; None when
        the runtime has no run ownership."""
        return None

    def unsupported(self, scenario: Scenario, mode: str) -> str | None:
        """Why this runtime cannot run `scenario` in `mode` (None: it can). The row is
        skipped with this reason, never failed."""
        return None


def bounded_reads(adapter: object) -> bool:
    """Whether the adapter declares its reads of a SQLite store bounded (see above)."""
    return getattr(adapter, "bounded_reads", False) is True


def declined_kinds(adapter: object) -> dict[str, str]:
    """The point kinds the adapter declares do not apply to its runtime, with the reason."""
    return dict(getattr(adapter, "declined_kinds", None) or {})


def supported_stores(adapter: object) -> tuple[str, ...] | None:
    """The kinds of store the adapter declares it supports; None: it declares none, so
    every kind (an adapter written before `stores` existed runs where it ran)."""
    stores = getattr(adapter, "stores", None)
    return None if stores is None else tuple(stores)


def store_unsupported(runtime: str, adapter: object, store_kind: str) -> str | None:
    """Why `runtime` cannot run on a store of `store_kind` (None: it can): the store, and
    the stores the adapter declares, so that the reason says what to run instead."""
    stores = supported_stores(adapter)
    if stores is None or store_kind in stores:
        return None
    return (
        f"runtime {runtime!r} does not run on a {store_kind} store: its adapter supports "
        f"{' and '.join(stores)} only (its `stores`)"
    )


def local_model(adapter: object) -> bool:
    """Whether the adapter asks for the scripted model at a local address (see above)."""
    return getattr(adapter, "local_model", False) is True


MEMBERS = (
    "name",
    "modes",
    "excluded",
    "preload_modules",
    "instrument",
    "driver",
    "progress",
    "read_session",
    "inspect",
    "lease_deadline",
    "unsupported",
)
