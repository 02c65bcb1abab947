"""killpoint: a crash-consistency harness for durable agent runtimes.

This module is the public API: what a user imports to write scenarios and to bring a
runtime of their own. Everything else under `killpoint.` is internal and may change.

Names load on first use (PEP 562), so that `import killpoint.workers.worker` in a forked
worker, or pytest loading the plugin, does not import the whole harness.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from killpoint.adapters.checkpoint_gates import CheckpointGates
    from killpoint.adapters.factory import agent_adapter
    from killpoint.adapters.protocol import RuntimeAdapter
    from killpoint.errors import AdapterError, KillpointError, NormalFormError
    from killpoint.scenarios import (
        Conversation,
        Driver,
        Expected,
        Fault,
        Ledger,
        Reply,
        RunResult,
        Scenario,
        ToolEnv,
        ToolRequest,
        gates,
        idempotent,
        intent,
    )
    from killpoint.scenarios.effects import effect
    from killpoint.scenarios.model_server import model_url
    from killpoint.values.findings import Finding
    from killpoint.values.modes import Mode
    from killpoint.values.normal_form import Session

# name -> the module that defines it
_EXPORTS: dict[str, str] = {
    # writing scenarios
    "Scenario": "killpoint.scenarios",
    "Expected": "killpoint.scenarios",
    "Reply": "killpoint.scenarios",
    "ToolRequest": "killpoint.scenarios",
    "Conversation": "killpoint.scenarios",
    "ToolEnv": "killpoint.scenarios",
    "Fault": "killpoint.scenarios",
    "idempotent": "killpoint.scenarios",
    "intent": "killpoint.scenarios",
    # an agent's own tools, recorded in the ledger (a cassette's agent)
    "effect": "killpoint.scenarios.effects",
    # bringing a runtime
    "RuntimeAdapter": "killpoint.adapters.protocol",
    "AdapterError": "killpoint.errors",
    "KillpointError": "killpoint.errors",
    "Driver": "killpoint.scenarios",
    "RunResult": "killpoint.scenarios",
    "Ledger": "killpoint.scenarios",
    "gates": "killpoint.scenarios",
    "Mode": "killpoint.values.modes",
    "Finding": "killpoint.values.findings",
    "CheckpointGates": "killpoint.adapters.checkpoint_gates",
    "Session": "killpoint.values.normal_form",
    "NormalFormError": "killpoint.errors",
    "agent_adapter": "killpoint.adapters.factory",
    "model_url": "killpoint.scenarios.model_server",
}

__all__ = [
    "AdapterError",
    "CheckpointGates",
    "Conversation",
    "Driver",
    "Expected",
    "Fault",
    "Finding",
    "KillpointError",
    "Ledger",
    "Mode",
    "NormalFormError",
    "Reply",
    "RunResult",
    "RuntimeAdapter",
    "Scenario",
    "Session",
    "ToolEnv",
    "ToolRequest",
    "agent_adapter",
    "effect",
    "gates",
    "idempotent",
    "intent",
    "model_url",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'killpoint' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # the next lookup is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
