"""Matrix node ids as pytest gives them back: `pytest 'killpoint::CELL_ID'` reruns that
cell (alone or with other arguments, under xdist too), a skipped row is reported at its
own node id instead of `.`, and each JUnit test case is classed by its row.

pytest reads every argument as a path; `killpoint::…` names no file ("file or directory
not found"). So each process takes those arguments out of `config.args` at configure time,
before the session collects, and the matrix is made of those cells only. An xdist worker
gets the controller's command line (xdist sends `invocation_params.args`), takes the same
arguments out, and collects the controller's plan: every process agrees on the items.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import pytest

from killpoint.plugin.keys import MATRIX
from killpoint.stores import STORE_KINDS

if TYPE_CHECKING:
    from killpoint.plugin.settings import Settings

PREFIX = f"{MATRIX}::"


def take_cells(config: pytest.Config) -> tuple[str, ...]:
    """The cell ids given as `killpoint::ID` arguments, removed from config.args (an empty
    list then collects no file: the matrix's items are the only ones)."""
    cells = tuple(a[len(PREFIX) :] for a in config.args if a.startswith(PREFIX))
    if cells:
        config.args[:] = [a for a in config.args if not a.startswith(PREFIX)]
    return cells


def checked(settings: Settings, cells: Sequence[str]) -> Settings:
    """The settings with the named cells (the matrix on, their runtime); a usage error for
    an id that is not a cell's or that the options contradict."""
    from killpoint import kinds
    from killpoint.errors import PointError, StoreError
    from killpoint.plugin.settings import masked_usage
    from killpoint.stores import store_kind

    parsed = []
    for cell_id in cells:
        try:
            parsed.append(kinds.parse_cell(cell_id))
        except PointError as exc:
            raise masked_usage(
                f"killpoint: {PREFIX + cell_id!r} is not a cell's node id: "
                f"{str(exc).removeprefix('killpoint: ')} (a whole row: --crash-scenarios and "
                "--crash-modes)"
            ) from None
    runtimes = sorted({c.runtime for c in parsed})
    if len(runtimes) > 1:
        raise masked_usage(
            f"killpoint: the cells given name runtimes {', '.join(runtimes)}; give cells of one "
            "runtime per session"
        )
    if "runtime" in settings.sources and settings.campaign.runtime != runtimes[0]:
        raise masked_usage(
            f"killpoint: {PREFIX}{parsed[0].id} is a cell of runtime {runtimes[0]!r}, "
            f"{settings.label('runtime')} says {settings.campaign.runtime!r}; leave it out, or give "
            "cells of that runtime"
        )
    try:
        kind = store_kind(settings.campaign.store)
    except StoreError as exc:
        raise masked_usage(str(exc)) from None
    wrong = next((c for c in parsed if c.store != kind), None)
    if wrong is not None:
        fix = (
            f"leave {settings.label('store')} out"
            if wrong.store == "sqlite"
            else f"give {settings.label('store')} the postgresql+psycopg:// URL"
        )
        raise masked_usage(
            f"killpoint: {PREFIX}{wrong.id} ran on {wrong.store}, this session runs cells on "
            f"{kind}; {fix}"
        )
    return settings.for_cells(tuple(c.id for c in parsed), runtimes[0])


def relocate_skip(item: pytest.Item, report: pytest.TestReport) -> None:
    """A skipped matrix row is located at its node id (`SKIPPED [1] killpoint::ROW: why`),
    not at the folder the matrix was collected in (`SKIPPED [1] .: why`). No line number:
    a row has none, and pytest folds marker skips without one."""
    longrepr = report.longrepr
    if report.skipped and isinstance(longrepr, tuple) and item.nodeid.startswith(PREFIX):
        report.longrepr = (item.nodeid, None, longrepr[2])  # type: ignore[assignment]


def row_of(nodeid: str) -> tuple[str, str] | None:
    """(classname, name) of a matrix item: `killpoint.RUNTIME/SCENARIO/MODE` and the rest
    of its id (`STORE/SCHEDULE`, `STORE/without-crash`, …); None for any other node."""
    if not nodeid.startswith(PREFIX):
        return None
    parts = nodeid[len(PREFIX) :].split("/")
    if len(parts) < 4:
        return None  # `killpoint::planning`: no row
    # STORE is `sqlite` or `postgresql`: the row is what comes before it (a cassette's
    # scenario holds slashes of its path).
    at = next((n for n in range(len(parts) - 1, 2, -1) if parts[n] in STORE_KINDS), 3)
    return f"{MATRIX}.{'/'.join(parts[:at])}", "/".join(parts[at:])


def class_by_row(config: pytest.Config, report: pytest.TestReport) -> None:
    """Before pytest's JUnit writer opens the case (record_xml_attribute's way, from the
    report's own node id): its classname and name by row."""
    try:
        from _pytest.junitxml import xml_key
    except ImportError:  # a pytest without it keeps its own classnames
        return
    xml = config.stash.get(xml_key, None)
    row = row_of(report.nodeid)
    if xml is None or row is None or report.when != "setup":
        return
    classname, name = row
    reporter = xml.node_reporter(report)
    reporter.add_attribute("classname", f"{xml.prefix}.{classname}" if xml.prefix else classname)
    reporter.add_attribute("name", name)


class RowClassnames:
    """The plugin object that classes JUnit cases by row (first, before LogXML's hook)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        class_by_row(self.config, report)


__all__ = [
    "PREFIX",
    "RowClassnames",
    "checked",
    "class_by_row",
    "relocate_skip",
    "row_of",
    "take_cells",
]
