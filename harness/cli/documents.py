"""A report document written by a command that is not a campaign (`merge`, `search`,
`report`): its JSON and HTML paths checked before anything is done, then written whole,
HTML last; the other formats' paths checked, and the report a diff is drawn against."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from killpoint.errors import ReportError, TargetError
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
    a path another output is written to; TargetError, naming the option, otherwise."""
    from killpoint.report.renderers import RENDERERS

    found: dict[str, Target] = {}
    for name, path in asked.items():
        target = Target(Path(path))
        option = RENDERERS[name].option
        if any(same_file(target.path, t) for t in taken):
            raise TargetError(
                f"{option} names {path!r}, a path another report is written "
                "to; give it a path of its own"
            )
        try:
            target.check()
        except TargetError as exc:  # which of the paths given it is, and the fix it names
            raise TargetError(f"{option}: {exc}") from None
        taken = [*taken, target.path]
        found[name] = target
    return found


def diff_base(path: str | None, document: dict[str, Any], head_name: str) -> dict[str, Any] | None:
    """The earlier report `--diff-base` names, read and compared with `document` (so that
    one that cannot be compared is refused before anything is written); None without one.
    ReportError or DiffError, naming the file, otherwise."""
    if not path:
        return None
    from killpoint.report.diff import compare
    from killpoint.report.document import read_json

    try:
        base = read_json(Path(path))
    except ReportError as exc:
        raise ReportError(
            f"killpoint: --diff-base: {str(exc).removeprefix('killpoint: ')}; give the JSON of "
            "an earlier killpoint report"
        ) from None
    compare(base, document, base_name=path, head_name=head_name)
    return base


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


__all__ = ["diff_base", "output_targets", "targets", "write_all"]
