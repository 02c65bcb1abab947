"""One error family: every exception class the harness defines is a KillpointError."""

from __future__ import annotations

import ast
import builtins
from pathlib import Path

import pytest

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
    from killpoint.errors import OptionError, PointError

    assert issubclass(PointError, ValueError)
    assert issubclass(OptionError, KillpointError)
    assert killpoint.KillpointError is KillpointError
    assert issubclass(killpoint.AdapterError, KillpointError)


def test_every_error_is_in_the_one_public_module_with_its_doc() -> None:
    """Each error class the harness defines on purpose lives in killpoint.errors, is in its
    __all__ and says what it means; a user imports any of them from there."""
    import killpoint.errors as errors

    defined = {
        name.rpartition(":")[2]: name.partition(":")[0]
        for name in exception_classes()
        if name.rpartition(":")[2] not in NOT_ERRORS
    }
    assert len(defined) >= 30
    assert {n: m for n, m in defined.items() if m != "errors.py"} == {}
    public = {n for n in errors.__all__ if isinstance(getattr(errors, n), type)}
    assert set(defined) <= public
    for name in public:
        cls = getattr(errors, name)
        assert issubclass(cls, KillpointError), name
        assert cls.__doc__ and cls.__doc__.strip(), name
        # A KillpointError that means a bad value, a missing name or a failed call is also
        # the built-in it refines (the family's own base and its plain states aside).
        if name not in {
            "KillpointError",
            "Interrupted",
            "Overdue",
            "StoreUnavailable",
            "StoreLeftover",
        }:
            assert BUILTIN_ERRORS & {b.__name__ for b in cls.__mro__[1:]}, name


# Where a built-in is the contract. Raised inside the runtime under test, as the runtime an
# adapter wraps raises them (a run the store does not hold, a cancel it does not offer):
# the runtime's errors, judged as the runtime's. A module's __getattr__ (AttributeError),
# the import of a user's `package.module:name` (ImportError, as importlib's, which its
# callers turn into AdapterError or ScenarioRefError), and a refused fork told to
# multiprocessing as the error it handles.
BUILT_IN_CONTRACT = {
    "adapters/pydantic_ai/agent.py",
    "adapters/langgraph/agent.py",
    "__init__.py",
    "values/import_paths.py",
    "workers/forkserver/fork_refused.py",
    # ThreadPoolExecutor's surface: a submit after shutdown raises RuntimeError there too.
    "engine/priority_pool.py",
}


def test_no_bare_built_in_is_raised_where_a_killpoint_error_is_meant() -> None:
    found = []
    for path in sorted(HARNESS.rglob("*.py")):
        if str(path.relative_to(HARNESS)) in BUILT_IN_CONTRACT:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Raise) and node.exc is not None:
                call = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
                if isinstance(call, ast.Name) and call.id in BUILTIN_ERRORS - {"KeyboardInterrupt"}:
                    found.append(f"{path.relative_to(HARNESS)}:{node.lineno} {call.id}")
    assert found == []


def test_a_public_mode_refuses_a_bad_name_with_a_killpoint_error() -> None:
    from killpoint.errors import ModeError

    with pytest.raises(ModeError) as caught:
        killpoint.Mode("a/b", "one line")
    assert isinstance(caught.value, ValueError)


def test_an_option_error_names_the_nearest_choice_before_the_choices() -> None:
    from killpoint.errors import OptionError

    near = OptionError(
        "modes", "toolbatch", "not a mode", ("runs", "tool-batch"), near="tool-batch"
    )
    assert near.reason == "not a mode; did you mean 'tool-batch'? choose from runs, tool-batch"
    assert near.text() == (
        "killpoint: --modes='toolbatch': not a mode; did you mean 'tool-batch'? choose from "
        "runs, tool-batch"
    )
    plain = OptionError("modes", "zz", "not a mode", ("runs", "tool-batch"))
    assert plain.reason == "not a mode; choose from runs, tool-batch"
