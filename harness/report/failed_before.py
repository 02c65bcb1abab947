"""The cells that failed before: what a campaign runs early (killpoint.engine.run_order).

Read from the report the campaign is about to replace (its own JSON target, from the
last run) and from the runtime's `killpoint search` report: their unexpected cells, by
id. A report that is missing or cannot be read gives nothing; it never stops a campaign.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from killpoint.report.document import ReportError, read_json


def search_report(runtime: str) -> Path:
    """Where `killpoint search` writes its JSON by default (killpoint.cli.search_report)."""
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", runtime).strip("-.") or "runtime"
    return Path("reports") / f"{slug}-search.json"


def failed_before(paths: Iterable[Path]) -> list[str]:
    """Ids of the unexpected (not accepted) cells in the reports at these paths."""
    found: dict[str, None] = {}
    for path in paths:
        try:
            if not path.is_file():
                continue
            document = read_json(path)
        except (OSError, ReportError):
            continue
        for cell in document["cells"]:
            if not cell.get("expected") and not cell.get("accepted"):
                found[str(cell["id"])] = None
    return list(found)


__all__ = ["failed_before", "search_report"]
