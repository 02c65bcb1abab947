"""One error family: every exception class the harness defines is a KillpointError."""

from __future__ import annotations

import ast
import builtins
from pathlib import Path

import killpoint
from killpoint.errors import KillpointError

HARNESS = Path(__file__).resolve().parents[1] / "harness"
# Not errors of killpoint's: a pytest item's failure (pytest shows it), a cell's early end
# inside its own run (caught there), a signal taking the Ctrl-C path, a corpus state's
# failure as a pytest item, and the failing schedule search hands hypothesis to shrink.
NOT_ERRORS = {"CellFailed", "CellOver", "Stopped", "KillpointError", "UpgradeFailed", "_Found"}
BUILTIN_ERRORS = {
    name
    for name, value in vars(builtins).items()
    if isinstance(value, type) and issubclass(value, BaseException)
}


def exception_classes() -> dict[str, list[str]]:
    """Each class the harness defines on a built-in exception: its bases, by name. Read from
    the source, so that modules needing a system library (libfuse) count too."""
    found = {}
    for path in sorted(HARNESS.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ClassDef):
                continue
            bases = [b.id for b in node.bases if isinstance(b, ast.Name)]
            if BUILTIN_ERRORS & set(bases) or "KillpointError" in bases:
                found[f"{path.relative_to(HARNESS)}:{node.name}"] = bases
    return found


def test_every_harness_exception_is_a_killpoint_error() -> None:
    found = exception_classes()
    assert len(found) >= 15  # the walk reached the modules that define them
    strays = [
        name
        for name, bases in found.items()
        if name.rpartition(":")[2] not in NOT_ERRORS
        and "KillpointError" not in bases
        and not any(b.endswith("Error") and b not in BUILTIN_ERRORS for b in bases)
    ]
    assert not strays, f"not a KillpointError: {strays}"


def test_each_refines_the_builtin_it_means() -> None:
    from killpoint.engine.options import OptionError
    from killpoint.values.points import PointError

    assert issubclass(PointError, ValueError)
    assert issubclass(OptionError, KillpointError)
    assert killpoint.KillpointError is KillpointError
    assert issubclass(killpoint.AdapterError, KillpointError)
