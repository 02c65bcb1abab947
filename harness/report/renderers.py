"""Every output of a campaign, rendered from its report document, registered here once.

The JSON document is the source: `killpoint matrix` writes it from its result, `merge`
from its shards, `report` reads it back; each other format is a function of it. A command
offers one option per file format (`--junit PATH`, `--markdown PATH`, ...) made from this
table (`add_options`), so a new format is one entry here and every command writes it.
The terminal and GitHub Actions read the same renderers (killpoint.cli.ending).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Renderer:
    name: str
    option: str  # the command-line option that asks for a file of it
    help: str
    render: Callable[[Mapping[str, Any]], str]


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
        Renderer("json", "--json", "the JSON report (the document itself)", _json),
        Renderer("html", "--report", "the HTML report", _html),
        Renderer("junit", "--junit", "JUnit XML: a test case per cell, classed by row", _junit),
        Renderer(
            "markdown", "--markdown", "a Markdown summary (causes, failing groups)", _markdown
        ),
        Renderer("text", "--text", "the terminal's summary as plain text", _text),
        Renderer(
            "annotations",
            "--annotations",
            "GitHub Actions `::error` annotations, one line per failing group",
            _annotations,
        ),
    )
}
# What a command that is not a campaign offers as files: everything but the JSON it reads
# or writes under its own option, and the HTML (`merge --report`, `report -o`).
FILES = ("junit", "markdown", "text", "annotations")


def render(name: str, document: Mapping[str, Any]) -> str:
    return RENDERERS[name].render(document)


def add_options(parser: argparse.ArgumentParser, names: tuple[str, ...] = FILES) -> None:
    """One `--FORMAT PATH` option per format of `names` (dest: the format's name)."""
    for name in names:
        r = RENDERERS[name]
        parser.add_argument(
            r.option, dest=f"out_{name}", metavar="PATH", help=f"also write {r.help}"
        )


def asked(args: argparse.Namespace, names: tuple[str, ...] = FILES) -> dict[str, str]:
    """{format: path} of the files the options ask for."""
    found = {}
    for name in names:
        path = getattr(args, f"out_{name}", None)
        if path:
            found[name] = str(path)
    return found


__all__ = ["FILES", "RENDERERS", "Renderer", "add_options", "asked", "render"]
