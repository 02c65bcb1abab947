"""`package.module:attribute`, read from a command line or a report: what may be called to
build what it names.

An import path can come from a file that anyone could have written (a report's `runtime`,
a cell id's scenario), so an attribute is called only when it is declared to build the
thing asked for: a class of the right shape, or a Python function that takes no argument
and either declares that it returns the right type or is the user's own code (not the
standard library, not an installed package, not killpoint). `sys:exit`, `os:abort` or
`pytest:main` are never called.
"""

from __future__ import annotations

import importlib
import inspect
import sys
import sysconfig
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

from killpoint.values.near import did_you_mean
from killpoint.values.own_code import innermost, shown_path


def import_attribute(spec: str) -> tuple[str, Any]:
    """The module's name and the attribute `spec` names; ImportError (also when the module,
    found, raised while being imported: `raised_while_importing`) or AttributeError."""
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise ImportError(f"{spec!r} is not 'package.module:attribute'")
    if "/" in module_name or "\\" in module_name:
        raise ImportError(_file_path(module_name, attr))
    if module_name.partition(".")[0] in sys.stdlib_module_names:
        # Not even imported: some standard modules act when imported (`antigravity`).
        raise ImportError(f"{module_name!r} is a module of the standard library")
    try:
        obj: Any = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (module_name + ".").startswith(exc.name + "."):
            # The module itself (or its package) is not there.
            if module_name.endswith(".py"):
                raise ImportError(_file_path(module_name, attr)) from None
            raise
        # One the module imports.
        raise ImportError(raised_while_importing(module_name, exc)) from exc
    except Exception as exc:
        raise ImportError(raised_while_importing(module_name, exc)) from exc
    for depth, part in enumerate(attr.split(".")):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            # str(AttributeError) names no near attribute (the interpreter adds one only
            # to a traceback it prints): a typo gets the name it most likely meant.
            owner = (
                module_name if depth == 0 else f"{module_name}:{'.'.join(attr.split('.')[:depth])}"
            )
            near = did_you_mean(part, [n for n in dir(obj) if not n.startswith("_")])
            raise AttributeError(
                f"{owner!r} has no attribute {part!r}" + (f"; {near}" if near else "")
            ) from None
    return module_name, obj


def raised_while_importing(module_name: str, exc: BaseException) -> str:
    """The user's module was found but raised while being imported: what it raised, and
    where in the user's own code (`file:line`)."""
    said = exc.msg if isinstance(exc, SyntaxError) else exc  # its place is `at`
    what = " ".join(f"{type(exc).__name__}: {said}".split())
    where = _raised_at(exc)
    at = f" (at {where})" if where else ""
    return f"module {module_name!r} raised {what} while being imported{at}"


def without_attribute(spec: str, attr: str, what: str) -> str | None:
    """What to give instead of a module named without `:attribute` (a file path,
    `myagent/adapter.py`, or a dotted module, `myagent.adapter`): the dotted module and
    the `:ATTR` it needs, `what` saying what ATTR names. None when `spec` looks like
    neither (a misspelt built-in name, say)."""
    if "/" in spec or "\\" in spec or spec.endswith(".py"):
        fix = f"is a file path, not a module, and names no {what}; give the module with dots and"
    elif "." in spec and all(part.isidentifier() for part in spec.split(".")):
        fix = f"names a module but no {what} in it; give"
    else:
        return None
    return f"{spec!r} {fix} the {what}'s name after ':', e.g. '{_dotted(spec)}:{attr}'"


def _file_path(module_name: str, attr: str) -> str:
    """A file given where a module belongs (`myagent/adapter.py`): the dotted form."""
    return (
        f"{module_name!r} is a file path, not a module; give a module path with dots, "
        f"e.g. '{_dotted(module_name)}:{attr}'"
    )


def _dotted(module_name: str) -> str:
    """The module a file path most likely names (`myagent/adapter.py`: `myagent.adapter`)."""
    path = Path(module_name.replace("\\", "/"))
    if path.suffix == ".py":
        path = path.with_suffix("")
    if path.is_absolute():
        try:
            path = path.relative_to(Path.cwd())
        except ValueError:
            path = Path(path.name)
    parts = [p for p in path.parts if p not in ("", ".")]
    if ".." in parts:
        parts = [path.name]
    if parts[-1:] == ["__init__"]:
        parts.pop()
    return ".".join(parts) or "package.module"


def _raised_at(exc: BaseException) -> str | None:
    """Where `exc` was raised in the user's own code: a SyntaxError's own line, else the
    innermost frame of the project's code (killpoint.values.own_code)."""
    if isinstance(exc, SyntaxError) and exc.filename and exc.lineno:
        return f"{shown_path(exc.filename)}:{exc.lineno}"
    return innermost(exc.__traceback__)


def call_problem(obj: Any, fits: Callable[[type], bool], what: str) -> str | None:
    """Why `obj` may not be called to build a `what` (None: it may). `fits`: whether a
    class is a `what`."""
    if isinstance(obj, type):
        return None if fits(obj) else f"is the class {_name(obj)}, not a {what}"
    if not inspect.isfunction(obj):
        return f"is a {type(obj).__name__}, not a {what} nor a function that returns one"
    try:
        inspect.signature(obj).bind()
    except TypeError:
        needed = [
            p.name
            for p in inspect.signature(obj).parameters.values()
            if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
        return f"is a function that takes arguments ({', '.join(needed) or 'keyword-only'})"
    except ValueError:
        return "is a function whose signature cannot be read"
    declared = _return_type(obj)
    if declared is not None:
        if isinstance(declared, type) and fits(declared):
            return None
        return f"is a function declared to return {_name(declared)}, not a {what}"
    where = _not_users(obj)
    if where is not None:
        return (
            f"is a function of {where} that does not declare it returns a {what} "
            f"(annotate it: `-> {what}`)"
        )
    return None


def _return_type(function: Any) -> Any:
    """The return annotation as an object; None when there is none or it cannot be read
    (a name imported only for type checkers)."""
    if "return" not in getattr(function, "__annotations__", {}):
        return None
    try:
        return typing.get_type_hints(function).get("return")
    except Exception:
        return None


def _not_users(function: Any) -> str | None:
    """Where a function lives when it is not the user's own code; None when it is."""
    module_name = str(getattr(function, "__module__", None) or "")
    top = module_name.partition(".")[0]
    if not top or top in sys.stdlib_module_names or top == "builtins":
        return "the standard library"
    if top == "killpoint":
        return "killpoint"
    module = sys.modules.get(module_name)
    filename = getattr(module, "__file__", None)
    if not filename:
        return f"module {module_name!r}, which has no file"
    path = Path(filename).resolve()
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        root = sysconfig.get_paths().get(key)
        if root and path.is_relative_to(Path(root).resolve()):
            return f"the installed module {module_name!r}"
    return None


def _name(obj: Any) -> str:
    if isinstance(obj, type):
        return (
            obj.__qualname__
            if obj.__module__ == "builtins"
            else f"{obj.__module__}.{obj.__qualname__}"
        )
    return repr(obj)


__all__ = [
    "call_problem",
    "import_attribute",
    "raised_while_importing",
    "without_attribute",
]
