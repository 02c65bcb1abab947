"""The runtime adapter Protocol, and finding an adapter by name or import path.

An adapter is everything killpoint knows about one runtime. docs/adapters.md writes one
step by step; `killpoint check-adapter --runtime package.module:adapter` checks one.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from .modes import Mode

if TYPE_CHECKING:
    from .checkpoint_gates import CheckpointGates
    from .findings import Finding
    from .normal_form import Session
    from .scenarios import Driver, Ledger, Scenario


class AdapterError(ValueError):
    """A runtime name or import path that does not give an adapter."""


@runtime_checkable
class RuntimeAdapter(Protocol):
    """How killpoint builds, drives and reads back one runtime.

    The engine relies on exactly what is declared here. Subclass it to inherit the
    defaults (`class MyAdapter(killpoint.RuntimeAdapter): ...`), or write the members
    out. Every read takes the store URL: an adapter keeps no connection across a fork,
    and is used from several threads of the engine at once.
    """

    name: str
    # The checkpoint modes the runtime offers, in its own names (see killpoint.modes).
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

    def read_session(self, store_url: str, session_id: str) -> Session | None:
        """Everything the runtime persists about the session and its runs, in the normal
        form (killpoint.normal_form); None when the session is absent."""
        ...

    def inspect(self, store_url: str, session_id: str) -> list[str | Finding]:
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


def _langgraph() -> RuntimeAdapter:
    from .adapters import langgraph  # imports LangGraph lazily

    problem = langgraph.import_problem()
    if problem is not None:
        raise AdapterError(
            f"killpoint: runtime 'langgraph' needs LangGraph 1.2 and its SQLite and PostgreSQL "
            f"savers, which cannot be imported ({problem}); install them with "
            "`pip install killpoint[langgraph]`"
        )
    return langgraph.LangGraphAdapter()


BUILTIN: dict[str, Callable[[], RuntimeAdapter]] = {
    "reference": _reference,
    "agno": _agno,
    "langgraph": _langgraph,
}


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
        missing = [m for m in MEMBERS if not hasattr(adapter, m)]
        raise AdapterError(
            f"killpoint: runtime {spec!r} gave {adapter!r}, which is not a RuntimeAdapter "
            f"(missing: {', '.join(missing)}); subclass killpoint.RuntimeAdapter to inherit "
            "the optional members"
        )
    check_declarations(spec, adapter)
    return adapter


def check_declarations(spec: str, adapter: RuntimeAdapter) -> None:
    """The declared members have the declared shapes (an adapter written out by hand may
    have a tuple of names where Modes belong, say)."""
    modes = adapter.modes
    if not modes or not all(isinstance(m, Mode) for m in modes):
        raise AdapterError(
            f"killpoint: runtime {spec!r} declares modes {modes!r}; give a sequence of "
            "killpoint.Mode (name, meaning, persists_mid_run, results_per_call, writes_lag)"
        )
    names = [m.name for m in modes]
    if len(set(names)) != len(names):
        raise AdapterError(f"killpoint: runtime {spec!r} declares a mode twice: {names}")
    if not any(m.runnable for m in modes):
        raise AdapterError(f"killpoint: runtime {spec!r} declares no mode it can run")
    for attr in ("excluded", "preload_modules"):
        value = getattr(adapter, attr, ())
        if isinstance(value, str) or not all(isinstance(v, str) for v in value):
            raise AdapterError(
                f"killpoint: runtime {spec!r}: {attr} should be a sequence of names, got {value!r}"
            )
