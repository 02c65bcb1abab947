"""What a failed crash cell says: verdict, first difference, replay command and seed.

Shared by the matrix items and the `crash` fixture, so a cell reads the same whichever
ran it. No pytest here: these are strings.
"""

from __future__ import annotations

import importlib
import os
import shlex
import site
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .cell import CellResult


def replay_line(result: CellResult) -> str:
    """The cell's replay command, with PYTHONPATH set when it names the user's own modules."""
    roots: list[str] = []
    for ref in (result.runtime, result.scenario):
        if ":" in ref and not ref.startswith("random:"):
            root = _import_root(ref.partition(":")[0])
            if root is not None and root not in roots:
                roots.append(root)
    if not roots:
        return result.replay
    return f"PYTHONPATH={shlex.quote(os.pathsep.join(roots))} {result.replay}"


def _import_root(module_name: str) -> str | None:
    """The sys.path entry `module_name` was imported from, unless it is an installed one."""
    try:
        module = sys.modules.get(module_name) or importlib.import_module(module_name)
    except Exception:
        return None
    filename = getattr(module, "__file__", None)
    if not filename:
        return None
    path = Path(filename).resolve()
    depth = module_name.count(".") + (1 if path.name == "__init__.py" else 0)
    root = path.parents[depth]
    installed = {Path(p).resolve() for p in (*site.getsitepackages(), site.getusersitepackages())}
    return None if root in installed else str(root)


def difference_text(result: CellResult) -> str:
    diff = result.first_difference
    if not diff:
        return "-"
    return f"{diff.get('path')}: baseline {diff.get('baseline')!r}, resumed {diff.get('actual')!r}"


def cell_failure(result: CellResult, seed: int) -> str:
    lines = [
        f"killpoint: {result.id}",
        f"  verdict:          {result.verdict} (unexpected for {result.mode} at "
        f"{'+'.join(result.schedule)})",
        f"  detail:           {result.detail or '-'}",
        f"  first difference: {difference_text(result)}",
        f"  duplicates:       {result.duplicates} (bound {result.bound})",
        f"  replay:           {replay_line(result)}",
        f"  seed:             {seed} (--crash-seed {seed})",
    ]
    if result.kept:
        lines.append(f"  kept:             {result.kept} (store, ledger, worker logs)")
    if result.timeline:
        lines.append("  timeline:")
        lines += [f"    {e.t:8.4f}s  {e.text}" for e in result.timeline[-15:]]
    if result.stderr_tail.strip():
        lines.append("  worker stderr (tail):")
        lines += [f"    {line}" for line in result.stderr_tail.strip().splitlines()[-20:]]
    return "\n".join(lines)


__all__ = ["cell_failure", "difference_text", "replay_line"]
