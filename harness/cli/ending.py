"""How `killpoint matrix` and `killpoint merge` end, after the summary: the other formats
of the document (JUnit, Markdown, ...), the threshold of `--fail-on`, GitHub's step
summary and annotations, and the kept folders named; then the `written:` line, last."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from killpoint.cli import output as cli_output
from killpoint.values.sentences import count, verb

if TYPE_CHECKING:
    from rich.console import Console

    from killpoint.engine.campaign import CampaignResult
    from killpoint.judge.groups import Group
    from killpoint.report.targets import Target


def write_outputs(
    document: dict[str, Any], targets: Mapping[str, Target], written: list[str], err: Console
) -> bool:
    """Write each asked format (killpoint.report.renderers) of the document to its target
    (to a fallback, named, when its path fails); whether one could not be written where
    asked."""
    from killpoint.report.document import write
    from killpoint.report.renderers import render

    missed = False
    for name, target in targets.items():
        try:
            fallback = write(target, render(name, document))
        except OSError as exc:
            cli_output.plain(
                err, f"killpoint: could not write {str(target.path)!r} nor a fallback: {exc}"
            )
            missed = True
            continue
        if fallback is not None:
            cli_output.plain(
                err, f"killpoint: cannot write {str(target.path)!r}; written to {fallback} instead"
            )
            written.append(str(fallback))
            missed = True
        else:
            written.append(str(target.path.absolute()))
    return missed


def failing_groups(
    result: CampaignResult, groups: Sequence[Group], threshold: str | None, err: Console
) -> list[Group]:
    """The groups that fail the run: by `--fail-on` when given (saying what it spared), else
    the unexpected ones, as without it."""
    from killpoint.cli import fail_on

    if threshold is None:
        return [g for g in groups if g.failing]
    spared = fail_on.spared(groups, threshold)
    if spared:
        cells = sum(len(g.cells) for g in spared)
        cli_output.plain(
            err,
            f"killpoint: --fail-on {threshold}: {count(len(spared), 'unexpected group')} "
            f"({count(cells, 'cell')} or row) below {threshold} severity "
            f"{verb(len(spared), 'does', 'do')} not fail the run",
        )
    return fail_on.failing_groups(groups, threshold)


def github(
    document: Mapping[str, Any],
    threshold: str | None,
    written: Sequence[str],
    out: Console,
    err: Console,
) -> None:
    """Under GitHub Actions: the annotations (stdout, where the runner reads workflow
    commands) and the step summary (appended; a summary that cannot be written is said),
    both rendered from the report's document (killpoint.report.github)."""
    from killpoint.report import github as gh

    if not gh.under_actions(os.environ):
        return
    out.file.write(gh.annotation_lines(document, threshold))
    out.file.flush()
    path = os.environ.get("GITHUB_STEP_SUMMARY")
    if not path:
        return
    try:
        with open(path, "a", encoding="utf-8") as f:
            f.write(gh.step_summary(document, written, threshold))
    except OSError as exc:
        cli_output.plain(
            err, f"killpoint: cannot append to GITHUB_STEP_SUMMARY {path!r}: {exc.strerror or exc}"
        )


def name_kept(result: CampaignResult, out: Console) -> None:
    """The kept folders, their size, and the command that removes them."""
    from killpoint.cli.kept import kept_note
    from killpoint.engine.cell_log import heads

    kept = [c.kept for c in heads(result.cells) if c.kept]
    note = kept_note(kept, postgresql=result.config.store != "sqlite")
    if note is not None:
        cli_output.plain(out, note)


__all__ = ["failing_groups", "github", "name_kept", "write_outputs"]
