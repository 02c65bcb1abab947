"""Blame for the adapter's reads: what the engine asks an adapter in its own process
(`read_session`, `inspect`, `progress`, `lease_deadline`) that raises or answers outside
the Protocol is the adapter's defect, and says so.

Before, a read that raised ended the cell as "killpoint failed on this cell" (`error`)
and an invalid normal form as `missed` ("the engine could not reach the point"): both
blamed killpoint for what the adapter did. An AdapterFault names the method and what it
did, redacted (a store URL in an exception carries its password), and the cell's
verdict is `adapter-error`: nothing is said of the runtime, nor of killpoint.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from killpoint.errors import AdapterFault, NormalFormError
from killpoint.values.findings import Finding
from killpoint.values.normal_form import validate_session

T = TypeVar("T")

# Lines of the adapter's traceback kept as the finding's evidence.
TRACEBACK_LINES = 12


def charged(method: str, fn: Callable[..., T]) -> Callable[..., T]:
    """`fn` whose exceptions are the adapter's: each becomes an AdapterFault naming
    `method`, the exception's type and message, with the end of its traceback."""

    def call(*args: Any) -> T:
        try:
            return fn(*args)
        except AdapterFault:
            raise
        except Exception as exc:
            lines = traceback.format_exc().splitlines()[-TRACEBACK_LINES:]
            raise AdapterFault(
                method, f"raised {type(exc).__name__}: {exc}", tuple(lines), raised=True
            ) from exc

    return call


def checked_session(value: Any, runtime: str) -> None:
    """A session from `read_session` in the normal form, or AdapterFault naming the field."""
    try:
        validate_session(value, f"runtime {runtime!r}: read_session")
    except NormalFormError as exc:
        detail = str(exc).removeprefix("killpoint: ")
        raise AdapterFault("read_session()", f"returned an invalid normal form: {detail}") from exc


def checked(method: str, value: T, wanted: type | tuple[type, ...], shape: str) -> T:
    """`value` when it is a `wanted`, else AdapterFault saying what `method` returned."""
    if isinstance(value, bool) or not isinstance(value, wanted):
        raise AdapterFault(
            method, f"returned {type(value).__name__} {value!r:.80}; it returns {shape}"
        )
    return value


def checked_progress(value: Any) -> int:
    """What `progress` returned when it is an int, else AdapterFault saying what it
    returned (its type and repr): the one wording of the matrix, the corpus check and
    check-adapter."""
    return checked("progress()", value, int, "the number of checkpoints landed (an int)")


def checked_problems(value: Any) -> list[str | Finding]:
    """What `inspect` found, each a sentence or a Finding, or AdapterFault naming the
    first item that is neither."""
    shape = "a list of sentences (str) or Findings"
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise AdapterFault(
            "inspect()", f"returned {type(value).__name__} {value!r:.80}; it returns {shape}"
        )
    items = list(value)
    for n, item in enumerate(items):
        if not isinstance(item, (str, Finding)):
            raise AdapterFault(
                "inspect()",
                f"returned {type(item).__name__} {item!r:.80} at [{n}]; it returns {shape}",
            )
    return items


__all__ = [
    "AdapterFault",
    "charged",
    "checked",
    "checked_problems",
    "checked_progress",
    "checked_session",
]
