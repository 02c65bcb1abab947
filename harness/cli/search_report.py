"""What `killpoint search` keeps and writes beside its lines: the example database it
replays failures from (`--database`, `.killpoint/search` by default, `none` for none) and a
JSON and HTML report of every schedule it tried, as a matrix writes its cells (one row,
its baseline, the cells in report order; `search` in the JSON says what was found)."""

from __future__ import annotations

import argparse
import dataclasses
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from killpoint.engine.options import CampaignConfig
    from killpoint.engine.search import SearchResult
    from killpoint.report.targets import Target

NO_DATABASE = "none"


def add_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--database",
        metavar="DIR",
        default=".killpoint/search",
        help="hypothesis example database whose failures are tried first and kept "
        "(default: .killpoint/search; 'none': none)",
    )
    p.add_argument("--json", help="where the JSON goes (default: reports/RUNTIME-search.json)")
    p.add_argument("--report", help="where the HTML goes (default: reports/RUNTIME-search.html)")


def database_folder(args: argparse.Namespace) -> Path | None:
    return None if args.database == NO_DATABASE else Path(args.database).expanduser()


def targets(args: argparse.Namespace, runtime: str) -> list[Target]:
    """The report targets, checked before the search starts (TargetError otherwise)."""
    from killpoint.cli.documents import targets as checked

    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", runtime).strip("-.") or "runtime"
    json_path = Path(args.json) if args.json else Path("reports") / f"{slug}-search.json"
    html_path = Path(args.report) if args.report else Path("reports") / f"{slug}-search.html"
    return checked(json_path, html_path)


def document(
    found: SearchResult, config: CampaignConfig, depth: int, database: Path | None
) -> dict[str, Any]:
    """The search as a matrix report of one row: every schedule tried is a cell."""
    from killpoint.engine.campaign import CampaignResult, sorted_cells
    from killpoint.engine.cell_log import CellLog
    from killpoint.engine.options import PointSelection
    from killpoint.report.document import to_document

    # Search depth is not a matrix depth (1 or 2): the schedules hold up to `depth` crashes.
    ran = dataclasses.replace(config, points=PointSelection("kills"))
    result = CampaignResult(ran, config.seed or 0, CellLog(sorted_cells(found.tried.values())))
    result.baselines = [found.baseline] if found.baseline is not None else []
    result.planned = len(found.tried)
    doc = to_document(result)
    doc["depth"] = depth
    doc["search"] = {
        "tried": [c.id for c in found.tried.values()],
        "minimal": found.minimal.id if found.minimal is not None else None,
        "database": str(database) if database is not None else None,
    }
    return doc


def write(
    found: SearchResult,
    config: CampaignConfig,
    depth: int,
    database: Path | None,
    found_targets: list[Target],
) -> list[str]:
    from killpoint.cli.documents import write_all

    return write_all(document(found, config, depth, database), found_targets)


__all__ = ["add_options", "database_folder", "document", "targets", "write"]
