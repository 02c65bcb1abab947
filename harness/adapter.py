"""The runtime adapter Protocol, and finding an adapter by name or import path."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from killpoint.scenarios import Driver, Ledger, Scenario


class AdapterError(ValueError):
    """A runtime name or import path that does not give an adapter."""


@runtime_checkable
class RuntimeAdapter(Protocol):
    """How killpoint builds, drives and reads back one runtime.

    Every read takes the store URL: adapters keep no connection across a fork.

    Optional: `preload_modules`, module names the forkserver imports before it forks
    any worker of this runtime (its workers then start warm; see killpoint.processes).
    """

    name: str
    modes: tuple[str, ...]  # checkpoint modes the runtime offers

    def instrument(self, checkpoint_offset: int) -> None:
        """In a worker: hit gates `checkpoint:{n}:writing` (before the write begins),
        `checkpoint:{n}:committing` (inside its transaction, before COMMIT) and
        `checkpoint:{n}:landed` (committed) around every checkpoint, n counting from
        checkpoint_offset + 1."""

    def driver(
        self, scenario: Scenario, store_url: str, mode: str, ledger: Ledger, *, lease_seconds: float
    ) -> Driver:
        """A scenarios.Driver over a fresh agent of this runtime."""

    def progress(self, store_url: str, session_id: str) -> int:
        """Checkpoints of the session that have landed (0 when there are none)."""

    def lease_deadline(self, store_url: str, session_id: str) -> float | None:
        """When the lease of the session's unfinished run expires (None: no lease)."""

    def read_session(self, store_url: str, session_id: str) -> dict[str, Any] | None:
        """Everything the runtime persists about the session and its runs, normalised:
        {"state": ..., "runs": {run_id: {...}}}; None when the session is absent."""

    def inspect(self, store_url: str, session_id: str) -> list[str]:
        """Broken invariants of the store after a crash (empty when it is sound)."""


def _reference() -> RuntimeAdapter:
    from .adapters.reference import ReferenceAdapter

    return ReferenceAdapter()


def _agno() -> RuntimeAdapter:
    from .adapters import agno  # imports agno lazily; sets AGNO_TELEMETRY=false first

    problem = agno.import_problem()
    if problem is not None:
        raise AdapterError(
            f"killpoint: runtime 'agno' needs agno 3.1, which cannot be imported ({problem}); "
            "install it with `pip install killpoint[agno]`"
        )
    return agno.AgnoAdapter()


BUILTIN: dict[str, Callable[[], RuntimeAdapter]] = {"reference": _reference, "agno": _agno}


def load_adapter(spec: str) -> RuntimeAdapter:
    """`reference`, or `package.module:factory` (a callable returning an adapter, or one)."""
    if spec in BUILTIN:
        return BUILTIN[spec]()
    if ":" not in spec:
        raise AdapterError(
            f"killpoint: unknown runtime {spec!r}; choose from {', '.join(BUILTIN)} "
            "or give an import path 'package.module:adapter'"
        )
    module_name, _, attr = spec.partition(":")
    try:
        obj: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as exc:
        raise AdapterError(f"killpoint: runtime {spec!r} cannot be imported: {exc}") from None
    # A class is instantiated (a class passes the Protocol's isinstance check too).
    if isinstance(obj, type) or (callable(obj) and not isinstance(obj, RuntimeAdapter)):
        obj = obj()
    adapter = obj
    if not isinstance(adapter, RuntimeAdapter):
        raise AdapterError(
            f"killpoint: runtime {spec!r} gave {adapter!r}, which is not a RuntimeAdapter "
            "(see killpoint.adapter.RuntimeAdapter)"
        )
    return adapter
