"""Every output of a campaign, rendered from its report document, registered here once.

The JSON document is the source: `killpoint matrix` writes it from its result, `merge`
from its shards, `report` reads it back; each other format is a function of it. A command
offers one option per file format (`--junit PATH`, `--markdown PATH`, ...), each declared
once in killpoint.engine.option_table (its help, and the fronts beside `killpoint matrix`
that take it) and added here to `merge` and `report` (`add_options`); so a new format is
one entry here and one option there, and every command writes it. The terminal and
GitHub Actions read the same renderers (killpoint.cli.ending).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from killpoint.engine import option_table as table


@dataclass(frozen=True)
class Renderer:
    name: str  # its option's name in killpoint.engine.option_table (`report`: the HTML)
    render: Callable[[Mapping[str, Any]], str]

    @property
    def option(self) -> str:
        """The command-line option that asks for a file of it."""
        return table.option(self.name).flag


def _json(document: Mapping[str, Any]) -> str:
    from killpoint.report.document import dumps

    return dumps(dict(document))


def _html(document: Mapping[str, Any]) -> str:
    from killpoint.report.html import render_report
    from killpoint.report.redact import redact

    return redact(render_report(document))


def _junit(document: Mapping[str, Any]) -> str:
    from killpoint.report.junit import render

    return render(document)


def _markdown(document: Mapping[str, Any]) -> str:
    from killpoint.report.github import summary_markdown

    return summary_markdown(document)


def _text(document: Mapping[str, Any]) -> str:
    from killpoint.report.terminal import render

    return render(document)


def _annotations(document: Mapping[str, Any]) -> str:
    from killpoint.report.github import annotation_lines

    return annotation_lines(document)


RENDERERS: dict[str, Renderer] = {
    r.name: r
    for r in (
        Renderer("json", _json),
        Renderer("report", _html),
        Renderer("junit", _junit),
        Renderer("markdown", _markdown),
        Renderer("text", _text),
        Renderer("annotations", _annotations),
    )
}
# What every command offers as files beside the JSON and the HTML, which each names its own
# way (`merge -o/--report`, `report RESULTS -o`).
FILES = table.FILES_RENDERED


def render(name: str, document: Mapping[str, Any]) -> str:
    return RENDERERS[name].render(document)


def add_options(parser: argparse.ArgumentParser, names: tuple[str, ...] = FILES) -> None:
    """One `--FORMAT PATH` option per format of `names`, as the option table declares it
    (dest: the format's name, as `killpoint matrix` has it)."""
    for name in names:
        o = table.option(name)
        parser.add_argument(o.flag, dest=o.name, metavar=o.metavar, help=o.described())


def asked(args: argparse.Namespace, names: tuple[str, ...] = FILES) -> dict[str, str]:
    """{format: path} of the files the options ask for."""
    found = {}
    for name in names:
        path = getattr(args, name, None)
        if path:
            found[name] = str(path)
    return found


__all__ = ["FILES", "RENDERERS", "Renderer", "add_options", "asked", "render"]
