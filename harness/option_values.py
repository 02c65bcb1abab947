"""Values as users give them to the plugin, in options, ini files and `crash.check()`:
lists, and runtime references.

Shared by the options' validation and the `crash` fixture, so both read a list and refuse
a runtime the same way.
"""

from __future__ import annotations

import re
from typing import Any


def split_list(text: str) -> tuple[str, ...]:
    """`a,b`, `a, b` and `a b` alike: an ini file's lists read naturally with spaces."""
    return tuple(p for p in re.split(r"[,\s]+", text.strip()) if p)


def load_runtime(spec: str, error: Any) -> Any:
    """The adapter for `spec`, or `error(why)` raised with a hint that names the fix."""
    from .adapter import AdapterError, load_adapter

    try:
        return load_adapter(spec)
    except AdapterError as exc:
        raise error(str(exc)) from None
    except Exception as exc:  # a factory that needs arguments: an Agent factory, not wrapped
        raise error(
            f"calling it gave {type(exc).__name__}: {exc}; an import path must name a "
            "RuntimeAdapter (or a no-argument callable returning one) — for a function that "
            "builds a runtime.Agent, decorate it with killpoint.agent_adapter"
        ) from None


__all__ = ["load_runtime", "split_list"]
