"""`agent_adapter`: a reference-runtime Agent of the user's own as a killpoint runtime.

Lives apart from the pytest plugin, so that workers and the CLI never import pytest.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from killpoint.adapters.protocol import RuntimeAdapter


def agent_adapter(factory: Callable[..., Any], *, name: str | None = None) -> RuntimeAdapter:
    """A reference-runtime adapter whose agent is the user's own, built by `factory`.

    `factory` is called in each worker with the keyword arguments the reference driver
    gives `runtime.Agent` (name, model, db, tools, instructions, checkpoint,
    lease_seconds) and returns an `Agent` (or a subclass). Use it as a decorator or
    assign its result in a module; `package.module:name` is then a runtime for
    `killpoint matrix --runtime`, `killpoint replay` and the pytest plugin. The
    result still builds agents when called. Lives here, not in the pytest plugin, so
    that workers and the CLI never import pytest.
    """
    from killpoint.adapters.reference import ReferenceAdapter, ReferenceDriver

    class Driver(ReferenceDriver):
        def __init__(self, scenario: Any, store: Any, mode: str, ledger: Any, **kw: Any) -> None:
            super().__init__(scenario, store, mode, ledger, **kw)
            ref = self.agent  # built from the scenario: its model, store and tools
            self.agent = factory(
                name=ref.name,
                model=ref.model,
                db=ref.db,
                tools=ref.tools,
                instructions=ref.instructions,
                checkpoint=ref.checkpoint,
                lease_seconds=ref.lease_seconds,
            )

    class FactoryAdapter(ReferenceAdapter):
        driver_class = Driver

        def __call__(self, **kwargs: Any) -> Any:
            return factory(**kwargs)

        def __repr__(self) -> str:
            return f"agent_adapter({getattr(factory, '__qualname__', factory)!r})"

    adapter = FactoryAdapter()
    adapter.name = name or str(getattr(factory, "__name__", "agent"))
    adapter.factory = factory  # type: ignore[attr-defined]
    return adapter


__all__ = ["agent_adapter"]
