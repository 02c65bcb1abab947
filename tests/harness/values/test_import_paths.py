"""What an import path may call: a class or a function declared to build the thing asked
for, or the user's own function; never the standard library's, nor an installed package's
undeclared one, nor a function that needs arguments."""

from __future__ import annotations

import pytest

from killpoint.values.import_paths import call_problem, import_attribute, without_attribute


class Wanted:
    pass


def fits(cls: type) -> bool:
    return issubclass(cls, Wanted)


def declared() -> Wanted:
    return Wanted()


def undeclared():  # type: ignore[no-untyped-def]
    return Wanted()


def wrong() -> int:
    return 1


def needs(name: str) -> Wanted:
    return Wanted()


def test_declared_classes_and_functions_and_the_users_own_may_be_called() -> None:
    assert call_problem(Wanted, fits, "Wanted") is None
    assert call_problem(declared, fits, "Wanted") is None
    assert call_problem(undeclared, fits, "Wanted") is None


@pytest.mark.parametrize(
    ("obj", "why"),
    [
        (wrong, "declared to return int"),
        (needs, "takes arguments (name)"),
        (int, "is the class int"),
        (print, "is a builtin_function_or_method"),
        (Wanted(), "is a Wanted"),
        (pytest.main, "declared to return"),
    ],
)
def test_anything_else_is_refused_with_why(obj: object, why: str) -> None:
    problem = call_problem(obj, fits, "Wanted")
    assert problem is not None and why in problem


def test_an_undeclared_function_of_an_installed_package_is_refused() -> None:
    import psutil

    problem = call_problem(psutil.pids, fits, "Wanted")
    assert problem is not None and "installed module" in problem


def test_standard_modules_are_not_even_imported() -> None:
    with pytest.raises(ImportError, match="standard library"):
        import_attribute("antigravity:x")


@pytest.mark.parametrize(
    ("spec", "dotted"),
    [
        ("shop/agents.py:build", "'shop.agents:build'"),
        ("shop\\agents.py:build", "'shop.agents:build'"),
        ("agents.py:build", "'agents:build'"),
        ("shop/__init__.py:build", "'shop:build'"),
    ],
)
def test_a_file_path_is_refused_with_the_dotted_form(spec: str, dotted: str) -> None:
    with pytest.raises(ImportError, match="is a file path") as raised:
        import_attribute(spec)
    assert f"give a module path with dots, e.g. {dotted}" in str(raised.value)


def test_a_misspelt_attribute_is_named_with_the_one_meant() -> None:
    """str(AttributeError) carries no "did you mean" (only a printed traceback does)."""
    with pytest.raises(AttributeError) as raised:
        import_attribute(f"{__name__}:declard")
    assert str(raised.value) == f"{__name__!r} has no attribute 'declard'; did you mean 'declared'?"


def test_a_misspelt_attribute_of_an_attribute_names_its_owner() -> None:
    with pytest.raises(AttributeError, match=r":Wanted' has no attribute 'mro_'"):
        import_attribute(f"{__name__}:Wanted.mro_")


def test_an_attribute_nothing_is_near_gets_no_guess() -> None:
    with pytest.raises(AttributeError) as raised:
        import_attribute(f"{__name__}:zzzzzz")
    assert "did you mean" not in str(raised.value)


@pytest.mark.parametrize(
    ("spec", "said"),
    [
        (
            "myagent/killpoint_adapter.py",
            "'myagent/killpoint_adapter.py' is a file path, not a module, and names no "
            "adapter; give the module with dots and the adapter's name after ':', e.g. "
            "'myagent.killpoint_adapter:adapter'",
        ),
        (
            "myagent.killpoint_adapter",
            "'myagent.killpoint_adapter' names a module but no adapter in it; give the "
            "adapter's name after ':', e.g. 'myagent.killpoint_adapter:adapter'",
        ),
    ],
)
def test_a_module_without_its_attribute_gets_the_form_it_needs(spec: str, said: str) -> None:
    assert said == without_attribute(spec, "adapter", "adapter")


def test_a_plain_name_is_not_taken_for_a_module() -> None:
    assert None is without_attribute("refrence", "adapter", "adapter")
