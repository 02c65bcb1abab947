"""The package's imports form no circle: a layer never reaches back up to one that uses it.

Every import counts, at module level or inside a function, under TYPE_CHECKING or not:
an import that is only safe because it is deferred is still an arrow that runs back up.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# The folders installed as the package `killpoint` (pyproject.toml's package-dir).
ROOTS = {"killpoint": REPO / "harness", "killpoint.runtime": REPO / "runtime",
         "killpoint.scenarios": REPO / "scenarios"}  # fmt: skip


def modules() -> dict[str, Path]:
    found = {}
    for prefix, root in ROOTS.items():
        for path in root.rglob("*.py"):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join([prefix, *parts])] = path
    return found


def imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The killpoint modules that `name` imports."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            # `from pkg import mod` imports the module pkg.mod; `from mod import name`, mod.
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                targets.add(sub if sub in known else base)
    return {t for t in targets if t in known and t != name}


def graph() -> dict[str, set[str]]:
    found = modules()
    known = set(found)
    return {name: imports(name, path, known) for name, path in found.items()}


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_the_package_has_no_import_circle() -> None:
    found = circles(graph())
    assert not found, "import circles:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_the_walk_sees_a_circle() -> None:
    edges = graph()
    assert "killpoint.engine.engine" in edges["killpoint.engine.campaign"]
    # Add the arrow a careless change would: the engine asking the campaign.
    edges["killpoint.engine.engine"] = {
        *edges["killpoint.engine.engine"],
        "killpoint.engine.campaign",
    }
    assert ["killpoint.engine.campaign", "killpoint.engine.engine"] in circles(edges)


def rooms(edges: dict[str, set[str]]) -> dict[str, set[str]]:
    """The same graph between rooms: `killpoint.engine.cell_run` is in `killpoint.engine`;
    a module at the top (`killpoint.errors`) and the package itself are rooms of their own."""

    def room(name: str) -> str:
        return ".".join(name.split(".")[:2])

    found: dict[str, set[str]] = {room(a): set() for a in edges}
    for a, targets in edges.items():
        found[room(a)].update(room(b) for b in targets if room(b) != room(a))
    return found


def test_the_rooms_are_layers() -> None:
    """docs/explanation/architecture.md: a folder imports only those below it, i.e. the
    rooms form no circle either."""
    between = rooms(graph())
    assert {"killpoint.engine", "killpoint.values", "killpoint.cli"} <= set(between)
    found = circles(between)
    assert not found, "rooms in a circle:\n" + "\n".join(" <-> ".join(c) for c in found)


@pytest.mark.parametrize(
    ("low", "high"),
    [
        ("killpoint.values", "killpoint.engine"),
        ("killpoint.values", "killpoint.kinds"),
        ("killpoint.judge", "killpoint.engine"),
        ("killpoint.kinds", "killpoint.engine"),
        ("killpoint.workers", "killpoint.engine"),
        ("killpoint.adapters", "killpoint.engine"),
        ("killpoint.stores", "killpoint.engine"),
        ("killpoint.engine", "killpoint.cli"),
        ("killpoint.engine", "killpoint.plugin"),
        ("killpoint.engine", "killpoint.report"),
        ("killpoint.cli", "killpoint.plugin"),
        ("killpoint.plugin", "killpoint.cli"),
    ],
)
def test_a_layer_never_imports_one_above_it(low: str, high: str) -> None:
    edges = graph()
    up = sorted(
        f"{a} -> {b}"
        for a, targets in edges.items()
        if a == low or a.startswith(low + ".")
        for b in targets
        if b == high or b.startswith(high + ".")
    )
    assert not up, f"{low} imports {high}:\n" + "\n".join(up)
