"""A report document written by a command that is not a campaign (`merge`, `search`): its
JSON and HTML paths checked before anything is done, then written whole, HTML last."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from killpoint.errors import TargetError
from killpoint.report.targets import Target, same_file


def targets(json_path: Path, html_path: Path | None) -> list[Target]:
    """The targets, checked; TargetError (naming the path and the fix) otherwise."""
    if html_path is not None and same_file(json_path, html_path):
        raise TargetError(f"the JSON and the HTML both name {str(json_path)!r}; give two paths")
    found = [Target(json_path), *([Target(html_path)] if html_path is not None else [])]
    for target in found:
        target.check()
    return found


def output_targets(asked: dict[str, str], taken: list[Path]) -> dict[str, Target]:
    """The targets of the other formats asked for ({format: path}), checked, none of them
    a path another output is written to; TargetError otherwise."""
    from killpoint.report.renderers import RENDERERS

    found: dict[str, Target] = {}
    for name, path in asked.items():
        target = Target(Path(path))
        if any(same_file(target.path, t) for t in taken):
            raise TargetError(
                f"{RENDERERS[name].option} names {path!r}, a path another report is written "
                "to; give it a path of its own"
            )
        target.check()
        taken = [*taken, target.path]
        found[name] = target
    return found


def write_all(
    document: dict[str, Any],
    found: list[Target],
    diff_base: dict[str, Any] | None = None,
    diff_base_name: str = "the base report",
) -> list[str]:
    """Write the JSON, then the HTML (with a diff against `diff_base`); the paths written."""
    from killpoint.report.document import dumps
    from killpoint.report.html import render_report
    from killpoint.report.redact import redact

    texts = [dumps(document)]
    if len(found) > 1:
        texts.append(
            redact(render_report(document, diff_base=diff_base, diff_base_name=diff_base_name))
        )
    for target, text in zip(found, texts, strict=False):
        target.write(text)
    return [str(t.path.absolute()) for t in found]


__all__ = ["output_targets", "targets", "write_all"]
