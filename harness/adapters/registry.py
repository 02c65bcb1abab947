"""The built-in runtimes, and finding an adapter by name or import path.

This is the one place that names the built-in runtimes: the loader, the forkserver's
warm-up, the versions a report records and both faces' help texts read it. A new
built-in runtime is a package under `killpoint.adapters` and one entry here.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from killpoint.adapters.protocol import MEMBERS, RuntimeAdapter
from killpoint.errors import AdapterError
from killpoint.values.import_paths import call_problem, import_attribute, without_attribute
from killpoint.values.modes import Mode
from killpoint.values.near import did_you_mean


@dataclass(frozen=True)
class Builtin:
    name: str
    # The adapter's module: imported on load, and what the warm-up looks for among the
    # forkserver's preloaded modules.
    module: str
    factory: str  # the adapter class in `module`
    # What the runtime needs, and the command that installs it, said when the adapter's
    # library cannot be imported.
    needs: str = ""
    install: str = ""
    # Distributions whose versions a report records for this runtime.
    distributions: tuple[str, ...] = ()
    # `module:function` that runs the runtime once in the forkserver (None: none).
    warm: str | None = None


BUILTINS: dict[str, Builtin] = {
    b.name: b
    for b in (
        Builtin(
            "reference",
            "killpoint.adapters.reference",
            "ReferenceAdapter",
            distributions=("openai", "SQLAlchemy", "psycopg", "respx"),
            warm="killpoint.adapters.reference_warm:warm_up",
        ),
        Builtin(
            "agno",
            "killpoint.adapters.agno",
            "AgnoAdapter",
            needs="agno 3.1",
            install="pip install killpoint[agno]",
            distributions=("agno",),
            warm="killpoint.adapters.agno.warm:warm_up",
        ),
        Builtin(
            "langgraph",
            "killpoint.adapters.langgraph",
            "LangGraphAdapter",
            needs="LangGraph 1.2 and its SQLite and PostgreSQL savers",
            install="pip install killpoint[langgraph]",
            # The savers and their drivers: a lagging or lost write can be theirs, so the
            # report names them beside the graph library.
            distributions=(
                "langgraph",
                "langgraph-checkpoint",
                "langgraph-checkpoint-sqlite",
                "langgraph-checkpoint-postgres",
                "aiosqlite",
            ),
            warm="killpoint.adapters.langgraph.warm:warm_up",
        ),
        Builtin(
            "pydantic-ai",
            "killpoint.adapters.pydantic_ai",
            "PydanticAIAdapter",
            needs="pydantic-ai 2.68 with its openai and dbos extras, and DBOS 3",
            install="pip install killpoint[pydantic-ai]",
            # DBOS is the durable half: its recovery and its system database writes are
            # what a finding is about as often as the agent library is.
            distributions=("pydantic-ai-slim", "dbos"),
        ),
        Builtin(
            "adk",
            "killpoint.adapters.adk",
            "AdkAdapter",
            needs="google-adk 2.13 with LiteLLM, aiosqlite and greenlet",
            install="pip install killpoint[adk]",
            # The session service is the durable half, over SQLAlchemy's asyncio drivers;
            # LiteLLM is how ADK reaches the model.
            distributions=("google-adk", "litellm", "aiosqlite", "SQLAlchemy"),
            warm="killpoint.adapters.adk.warm:warm_up",
        ),
    )
}

RUNTIME_HELP = ", ".join(BUILTINS) + ", or package.module:adapter (a class, factory or instance)"


def _load_builtin(builtin: Builtin) -> RuntimeAdapter:
    # Each adapter imports its library lazily and says what is missing (import_problem).
    module = importlib.import_module(builtin.module)
    problem: Callable[[], str | None] | None = getattr(module, "import_problem", None)
    found = problem() if problem is not None else None
    if found is not None:
        raise AdapterError(
            f"killpoint: runtime {builtin.name!r} needs {builtin.needs}, which cannot be "
            f"imported ({found}); install with `{builtin.install}`"
        )
    adapter: RuntimeAdapter = getattr(module, builtin.factory)()
    return adapter


ACCEPTED_FILE = "accepted.toml"  # beside a built-in adapter's module: its by-design groups


def accepted_file(runtime: str) -> Path | None:
    """The accepted-findings file a built-in runtime ships for what its documentation
    calls by design (`--accept builtin`); None for a runtime that ships none (the
    reference runtime, a user's adapter)."""
    builtin = BUILTINS.get(runtime)
    if builtin is None:
        return None
    spec = importlib.util.find_spec(builtin.module)
    if spec is None or spec.origin is None or not spec.submodule_search_locations:
        return None  # a module of its own, not a package: no file beside it
    path = Path(spec.origin).parent / ACCEPTED_FILE
    return path if path.is_file() else None


def warm_loaded() -> list[str]:
    """Run once each built-in runtime whose adapter the forkserver preloaded (the
    reference runtime always): the names of those whose warm-up raised. A failed warm-up costs speed, never
    correctness."""
    failed = []
    for builtin in BUILTINS.values():
        if builtin.warm is None:
            continue
        if builtin.name != "reference" and builtin.module not in sys.modules:
            continue
        module, _, function = builtin.warm.partition(":")
        try:
            getattr(importlib.import_module(module), function)()
        except Exception:
            failed.append(builtin.name)
    return failed


def load_adapter(spec: str) -> RuntimeAdapter:
    """A built-in name, or `package.module:factory` (a callable returning an adapter, or one)."""
    if spec in BUILTINS:
        return _load_builtin(BUILTINS[spec])
    if ":" not in spec:
        hint = without_attribute(spec, "adapter", "adapter")
        if hint is not None:  # a module or file given without its object
            raise AdapterError(
                f"killpoint: runtime {hint} (a RuntimeAdapter, its class, or a function "
                "without arguments that returns one)"
            )
        near = did_you_mean(spec, BUILTINS)
        raise AdapterError(
            f"killpoint: unknown runtime {spec!r}; {near + ' ' if near else ''}choose from "
            f"{', '.join(BUILTINS)} or give an import path 'package.module:adapter'"
        )
    try:
        _, obj = import_attribute(spec)
    except (ImportError, AttributeError) as exc:
        raise AdapterError(f"killpoint: runtime {spec!r} cannot be imported: {exc}") from None
    # Called only when declared to build an adapter: a path may come from a report file,
    # and `sys:exit` or `os:abort` must never run.
    if not isinstance(obj, RuntimeAdapter) or isinstance(obj, type):
        problem = call_problem(obj, adapter_class, "killpoint.RuntimeAdapter")
        if problem is not None:
            raise AdapterError(
                f"killpoint: runtime {spec!r} {problem}; give a RuntimeAdapter, its class, or "
                "a function without arguments that returns one (for a function that builds a "
                "killpoint.runtime.Agent, decorate it with killpoint.agent_adapter)"
            )
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


# What a class needs to be an adapter before it is instantiated (data members may be set
# in __init__).
_METHODS = ("instrument", "driver", "progress", "read_session")


def adapter_class(cls: type) -> bool:
    """Whether `cls` is shaped like a RuntimeAdapter (its instances may be)."""
    return all(callable(getattr(cls, m, None)) for m in _METHODS)


def check_declarations(spec: str, adapter: RuntimeAdapter) -> None:
    """The declared members have the declared shapes (an adapter written out by hand may
    have a tuple of names where Modes belong, say)."""
    modes = adapter.modes
    if not modes or not all(isinstance(m, Mode) for m in modes):
        raise AdapterError(
            f"killpoint: runtime {spec!r} declares modes {modes!r}; give a sequence of "
            "killpoint.Mode (name, meaning, persists_mid_run, results_per_call, writes_lag, "
            "unavailable, tool_results_durable, replays_replies, durable)"
        )
    names = [m.name for m in modes]
    if len(set(names)) != len(names):
        raise AdapterError(f"killpoint: runtime {spec!r} declares a mode twice: {names}")
    if not any(m.runnable for m in modes):
        raise AdapterError(f"killpoint: runtime {spec!r} declares no mode it can run")
    declined = getattr(adapter, "declined_kinds", None) or {}
    if not isinstance(declined, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) and v.strip() and "\n" not in v
        for k, v in declined.items()
    ):
        raise AdapterError(
            f"killpoint: runtime {spec!r}: declined_kinds should map a point kind's name to "
            f"a one-line reason, got {declined!r}"
        )
    for attr in ("excluded", "preload_modules"):
        value = getattr(adapter, attr, ())
        if isinstance(value, str) or not all(isinstance(v, str) for v in value):
            raise AdapterError(
                f"killpoint: runtime {spec!r}: {attr} should be a sequence of names, got {value!r}"
            )
    check_stores(spec, adapter)


def check_stores(spec: str, adapter: RuntimeAdapter) -> None:
    """`stores`, where declared, names kinds of store killpoint has: a misspelt kind
    would skip every row of the matrix (or none) without a word."""
    from killpoint.stores import STORE_KINDS  # here: the adapter's import stays light

    value = getattr(adapter, "stores", None)
    if value is None:
        return
    if (
        isinstance(value, str)
        or not isinstance(value, Sequence)
        or not value
        or not all(v in STORE_KINDS for v in value)
    ):
        raise AdapterError(
            f"killpoint: runtime {spec!r}: stores should be a sequence of the store kinds it "
            f"supports, from {', '.join(STORE_KINDS)}, got {value!r} (leave it out to "
            "support every kind)"
        )
