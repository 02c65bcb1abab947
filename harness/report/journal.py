"""The journal of a campaign: its configuration, its plan and every finished cell, written
as each happens, next to the JSON report, so that a campaign killed before it wrote its
reports (SIGKILL, the machine's OOM killer) loses only the cells in flight.

It is JSON Lines, one object per line, each line written whole with one `write` and
fsync'd before the next cell is recorded:

    {"journal": "killpoint.journal/1", "pid": ..., "json": NAME, "head": {...}}
    {"plan": {"skipped": [...], "baselines": [...]}, "planned": N}
    {"cell": {...}, "t": SECONDS}           # one per finished cell
    {"end": {"interrupted": false, "seconds": S, "leftover_stores": [...]}}

A plan line is written as each row's baseline is done, with every row planned so far,
and once more when the last is: the last one read is the plan (a campaign killed before
its last baseline still says which rows it planned). A last line cut short by a kill is
left out when the journal is read. The journal goes
once the reports are written; one that is left behind names a campaign that did not
write them, and is rebuilt into reports by `killpoint report --from-journal` or by the
next campaign that writes the same JSON.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from killpoint.engine.campaign import CampaignResult, cell_order
from killpoint.engine.cell_log import CellLog
from killpoint.errors import ReportError
from killpoint.report.document import assemble, dumps, plan, stopped_json
from killpoint.report.redact import redact
from killpoint.report.targets import write_atomically
from killpoint.values.cell import CellResult

VERSION = "killpoint.journal/1"


def journal_path(json_path: Path) -> Path:
    """`reports/reference-matrix.journal.jsonl` beside `reports/reference-matrix.json`."""
    name = json_path.name.removesuffix(".json")
    return json_path.with_name(f"{name}.journal.jsonl")


class Journal:
    """An open journal, written by the campaign (a `campaign.Recorder`). A write that fails
    (a full disk) stops the journal, never the campaign: `broken` says why."""

    def __init__(self, path: Path, json_path: Path, top: dict[str, Any]) -> None:
        self.path = path
        self.broken: str | None = None
        self._t0 = time.monotonic()
        self._store = str(top["store"])
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND | os.O_CLOEXEC
        self._fd: int | None = os.open(path, flags, 0o666)
        self._line({"journal": VERSION, "pid": os.getpid(), "json": json_path.name, "head": top})
        _sync_folder(path.parent)  # the journal's name lasts as long as its lines do

    def planned(self, result: CampaignResult) -> None:
        self._line({"plan": plan(result, self._store), "planned": result.planned})

    def finished(self, cell: CellResult) -> None:
        self._line({"cell": cell.json_view(), "t": round(time.monotonic() - self._t0, 3)})

    def ended(self, result: CampaignResult) -> None:
        self._line(
            {
                "end": {
                    "interrupted": result.interrupted,
                    "seconds": result.seconds,
                    "leftover_stores": result.leftover_stores,
                    "stopped": stopped_json(result),
                }
            }
        )

    def _line(self, data: dict[str, Any]) -> None:
        if self._fd is None:
            return
        # Masked before it is written: the journal is an output like the reports.
        text = redact(json.dumps(data, ensure_ascii=True, separators=(",", ":")))
        try:
            _write_all(self._fd, (text.replace("\n", " ") + "\n").encode())
            os.fsync(self._fd)
        except OSError as exc:
            self.broken = f"{exc.strerror or exc}"
            self.close()

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def remove(self) -> None:
        """The reports are written: the journal has nothing they lack."""
        self.close()
        self.path.unlink(missing_ok=True)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _sync_folder(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@dataclass
class LeftBehind:
    """A journal read back: the document it rebuilds, and what it says of its campaign."""

    document: dict[str, Any]
    pid: int | None
    json_name: str
    cells: int
    finished: bool  # the campaign reached its end (it died writing its reports)


# A journal holds what its campaign held in memory: a bound against a file that is not one.
MAX_LINE = 64 << 20


def read_journal(path: Path) -> LeftBehind:
    """The report a journal rebuilds; ReportError when the file is not a journal."""
    try:
        f = open(path, "rb")  # noqa: SIM115  (closed below)
    except OSError as exc:
        raise ReportError(f"killpoint: cannot read {str(path)!r}: {exc.strerror or exc}") from None
    with f:
        first = _parse(f.readline(MAX_LINE))
        if not isinstance(first, dict) or first.get("journal") != VERSION:
            raise ReportError(
                f"killpoint: {str(path)!r} is not a killpoint journal (its first line has no "
                f"{VERSION!r}); give the .journal.jsonl file a campaign left beside its JSON"
            )
        top = first.get("head")
        if not isinstance(top, dict):
            raise ReportError(f"killpoint: {str(path)!r} has no campaign in its first line")
        planned: dict[str, Any] = {}
        count, seconds, end = 0, 0.0, None
        cells = CellLog()
        for n, raw in enumerate(iter(lambda: f.readline(MAX_LINE), b""), start=2):
            entry = _parse(raw)
            if entry is None or not raw.endswith(b"\n"):
                continue  # the line a kill cut short (only the last can be)
            if not isinstance(entry, dict):
                raise ReportError(f"killpoint: {str(path)!r}, line {n}: not an object")
            if "cell" in entry:
                try:
                    cells.append(CellResult.from_json(entry["cell"]))
                except (ValueError, TypeError) as exc:
                    raise ReportError(f"killpoint: {str(path)!r}, line {n}: {exc}") from None
                seconds = max(seconds, float(entry.get("t") or 0.0))
            elif "plan" in entry and isinstance(entry["plan"], dict):
                planned = entry["plan"]
                count = int(entry.get("planned") or 0)
            elif "end" in entry and isinstance(entry["end"], dict):
                end = entry["end"]
    cells.sort(key=cell_order)
    try:
        document = assemble(
            top,
            planned,
            cells,
            count=count,
            seconds=float(end.get("seconds", seconds)) if end else seconds,
            # No end: the campaign was stopped before it reached it.
            interrupted=bool(end.get("interrupted", True)) if end else True,
            leftover_stores=list(end.get("leftover_stores") or []) if end else [],
            stopped=end.get("stopped") if end else None,
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ReportError(f"killpoint: {str(path)!r}: its campaign line lacks {exc}") from None
    pid = first.get("pid")
    return LeftBehind(
        document,
        pid if isinstance(pid, int) else None,
        str(first.get("json") or ""),
        len(cells),
        end is not None,
    )


def recovered_paths(json_path: Path, pid: int | None) -> tuple[Path, Path]:
    """Where a campaign rebuilds the journal it found beside its own JSON (which it is
    about to replace): `NAME.recovered-PID.json` and `.html` beside it."""
    name = json_path.name.removesuffix(".json")
    tag = f"recovered-{pid}" if pid is not None else "recovered"
    return json_path.with_name(f"{name}.{tag}.json"), json_path.with_name(f"{name}.{tag}.html")


def write_rebuilt(
    left: LeftBehind,
    json_path: Path,
    html_path: Path,
    diff_base: dict[str, Any] | None = None,
    diff_base_name: str = "",
) -> None:
    """The JSON, then the HTML (with what changed against `diff_base`, when given), each
    whole or not at all."""
    from killpoint.report.html import render_report

    page = render_report(left.document, diff_base=diff_base, diff_base_name=diff_base_name)
    write_atomically(json_path, dumps(left.document))
    write_atomically(html_path, redact(page))


def _parse(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None


__all__ = [
    "MAX_LINE",
    "VERSION",
    "Journal",
    "LeftBehind",
    "journal_path",
    "read_journal",
    "recovered_paths",
    "write_rebuilt",
]
