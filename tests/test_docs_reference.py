"""The reference pages are what the code says: docs/generate.py's blocks are current, each
is made from its registry (change the registry and the page is stale), and the pages that
are written by hand name every value of what they describe."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from killpoint import kinds
from killpoint.cli import exit_codes
from killpoint.values import findings
from tests.docs_pages import generator

REPO = Path(__file__).resolve().parents[1]


def test_every_generated_block_is_current() -> None:
    stale = generator().stale(write=False)
    assert not stale, f"stale pages {stale}: run `make docs` (or python docs/generate.py)"


def test_a_changed_registry_makes_its_pages_stale(monkeypatch: pytest.MonkeyPatch) -> None:
    gen = generator()
    kind = kinds.REGISTRY["sigstop-writing"]
    monkeypatch.setattr(type(kind), "meaning", "a meaning no page has")
    assert "docs/reference/crash-points.md" in gen.stale(write=False)


def test_the_crash_point_page_has_every_kind_and_its_details() -> None:
    text = (REPO / "docs" / "reference" / "crash-points.md").read_text()
    for name, kind in kinds.REGISTRY.items():
        shape = f"{name}:K:I" if kind.arity == 2 else f"{name}:K"
        assert f"`{shape}`" in text, name  # the generated table
        assert re.search(rf"^- .*`{re.escape(name)}:k", text, re.M), f"{name}: say it in more words"


def test_the_findings_page_has_every_kind_and_verdict() -> None:
    text = (REPO / "docs" / "reference" / "findings.md").read_text()
    for kind in findings.KINDS.values():
        assert f"| `{kind.name}` | {kind.severity} | `{kind.verdict}` |" in text
    for verdict in findings.VERDICTS:
        assert f"| `{verdict.name}` | {verdict.glyph} |" in text


def test_the_readme_names_every_verdict() -> None:
    text = (REPO / "README.md").read_text()
    for verdict in findings.VERDICTS:
        assert f"| `{verdict.name}` |" in text


def test_the_exit_codes_page_has_every_status() -> None:
    text = (REPO / "docs" / "reference" / "exit-codes.md").read_text()
    statuses = {v for k, v in vars(exit_codes).items() if k.startswith("EXIT_")}
    for status in statuses:
        assert re.search(rf"^\| {status}\b", text, re.M), status
    for signum in (15, 1):  # SIGTERM, SIGHUP
        assert str(exit_codes.interrupted_status(signum)) in text


def test_the_schema_page_describes_every_field(monkeypatch: pytest.MonkeyPatch) -> None:
    """A field added to the schema without a meaning stops the generator."""
    from killpoint.report import report_schema

    gen = generator()
    monkeypatch.setitem(report_schema.CELL, "new_field", report_schema.TEXT)
    with pytest.raises(SystemExit, match="new_field"):
        gen.report_schema()


def test_the_options_come_from_every_front() -> None:
    options = {o.name: o for o in generator().campaign_options()}
    assert options["modes"].cli == "--modes"
    assert options["modes"].pytest == "--crash-modes"
    assert options["modes"].ini == "crash_modes"
    assert options["modes"].project == "modes"
    assert options["modes"].check == "modes"
    assert options["workers"].pytest is None  # pytest-xdist's -n spreads the cells there
    assert options["kills"].check == "kills"  # crash.check(kills=...)
    assert options["accept"].project == "accept"


def test_the_options_page_is_made_from_the_option_table(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fronts are built from killpoint.engine.option_table; so is the page: a help line
    changed there makes the page stale, and every option the table gives a front is on it."""
    import dataclasses

    from killpoint.engine import option_table

    gen = generator()
    text = (REPO / "docs" / "reference" / "options.md").read_text()
    for o in option_table.OPTIONS:
        if o.fronts:
            assert f"| {o.name.replace('_', '-')} |" in text, o.name
    changed = tuple(
        dataclasses.replace(o, help="a help line no page has") if o.name == "fs_ops" else o
        for o in option_table.OPTIONS
    )
    monkeypatch.setattr(option_table, "OPTIONS", changed)
    assert "docs/reference/options.md" in gen.stale(write=False)
