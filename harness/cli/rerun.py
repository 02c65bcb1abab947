"""What a report file may make killpoint run: `--rerun-failed` and `replay --json`; and
what a rerun says against the report it reran (still failing, now passing), judged with
the accepted groups that report's campaign had (its `--accept`, carried).

A rerun takes its runtime, store kind, scenarios, modes and seed from the report, and a
report is refused when it disagrees with itself or with what the command line asks (a
PostgreSQL report rerun without `--store` would run its cells on SQLite under
`…/postgresql/…` ids, and pass). Whether the runtime and the scenarios named are a
runtime adapter and scenarios, never any callable, is CampaignConfig.check()'s part.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from killpoint.engine.options import CampaignConfig
from killpoint.errors import RerunError
from killpoint.values.cell import Cell, CellResult
from killpoint.values.input_files import read_int

if TYPE_CHECKING:
    from rich.console import Console

    from killpoint.judge.groups import Accepted

SHOWN = 20  # now-passing cells named one by one; the rest are counted


def store_fix(kind: str) -> str:
    return "leave --store out" if kind == "sqlite" else "give --store the postgresql+psycopg:// URL"


def failed_cells(document: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        c
        for c in document["cells"]
        # A cell that killpoint's own store or disk failed was never judged: rerun it too.
        if (not c.get("expected") and not c.get("accepted")) or c.get("verdict") == "unavailable"
    ]


def parsed(cell_id: Any, where: str) -> Cell:
    from killpoint import kinds
    from killpoint.errors import PointError

    if not isinstance(cell_id, str):
        raise RerunError(f"killpoint: {where}: a cell id should be text, got {cell_id!r}")
    try:
        return kinds.parse_cell(cell_id)
    except PointError as exc:
        raise RerunError(f"killpoint: {where}: {str(exc).removeprefix('killpoint: ')}") from None


def same_as_report(document: dict[str, Any], cell: Cell, where: str) -> None:
    """The cell ran the report's runtime on the report's store kind."""
    runtime, store = document.get("runtime"), document.get("store")
    if cell.runtime != runtime:
        raise RerunError(
            f"killpoint: {where}: cell {cell.id!r} names runtime {cell.runtime!r}, the report "
            f"{runtime!r}; give a report written by `killpoint matrix`"
        )
    if cell.store != store:
        raise RerunError(
            f"killpoint: {where}: cell {cell.id!r} names store {cell.store!r}, the report "
            f"{store!r}; give a report written by `killpoint matrix`"
        )


def rerun_config(
    config: CampaignConfig, path: str, given: dict[str, Any]
) -> tuple[CampaignConfig, list[str]]:
    """The campaign that reruns the failed cells of the report at `path`, and their ids.
    `given`: the options typed on the command line (None: not given)."""
    from killpoint.report.document import read_json
    from killpoint.stores import store_kind

    document = read_json(Path(path))
    runtime, store = document.get("runtime"), document.get("store")
    if not isinstance(runtime, str) or not runtime:
        raise RerunError(
            f"killpoint: {path!r} names no runtime; give a report of `killpoint matrix`"
        )
    if store not in ("sqlite", "postgresql"):
        raise RerunError(
            f"killpoint: {path!r} names store {store!r}, neither sqlite nor postgresql; give a "
            "report of `killpoint matrix`"
        )
    cells = []
    for n, data in enumerate(failed_cells(document)):
        cell = parsed(data.get("id"), f"{path!r}, cell {n}")
        same_as_report(document, cell, path)
        cells.append(cell)
    if given.get("runtime") is not None and given["runtime"] != runtime:
        raise RerunError(
            f"killpoint: --runtime={given['runtime']!r}, but {path!r} ran runtime {runtime!r}; "
            "leave --runtime out (a rerun takes it from the report)"
        )
    kind = store_kind(config.store)
    if kind != store:
        raise RerunError(
            f"killpoint: {path!r} ran on {store}, this rerun would run on {kind}; "
            f"{store_fix(store)}"
        )
    for option, values in (
        ("scenarios", [c.scenario for c in cells]),
        ("modes", [c.mode for c in cells]),
    ):
        asked = getattr(config, option)
        if given.get(option) is not None and not set(values) <= set(asked):
            raise RerunError(
                f"killpoint: --{option}={','.join(asked)!r} leaves out "
                f"{', '.join(sorted(set(values) - set(asked)))} of the cells to rerun from "
                f"{path!r}; leave --{option} out (a rerun takes them from the report)"
            )
    cut = report_cut(failed_cells(document))
    if cut is not None and given.get("cut") is not None and config.cut != cut:
        raise RerunError(
            f"killpoint: --cut={given['cut']!r}, but {path!r} cut its power-loss cells with "
            f"{cut!r}; leave --cut out (a rerun takes it from the report)"
        )
    seed = read_int(document.get("seed"))
    if given.get("seed") is None and seed is not None:
        # The cells are named by id whatever the seed; it decides the order they start in,
        # which a rerun keeps, as it keeps the report's seed line.
        config = dataclasses.replace(config, seed=seed)
    return (
        dataclasses.replace(
            config,
            runtime=runtime,
            scenarios=tuple(dict.fromkeys(c.scenario for c in cells)) or config.scenarios,
            modes=tuple(dict.fromkeys(c.mode for c in cells)) or config.modes,
            cut=cut or config.cut,
        ),
        [c.id for c in cells],
    )


def nothing_to_rerun(path: str, out: Console) -> int:
    """What `--rerun-failed` says of a report without an unexpected cell, and its exit
    status. A report whose campaign did not run its whole plan (interrupted, stopped by
    --fail-fast or --budget) is no all clear: the cells it never ran say nothing of the
    runtime, so it says how many and why, and exits as a campaign that ran no cell does."""
    from killpoint.cli import output as cli_output
    from killpoint.cli.exit_codes import EXIT_NO_CELLS, EXIT_OK
    from killpoint.report.document import read_json
    from killpoint.report.planned import incomplete

    left = incomplete(read_json(Path(path)))
    if left is None:
        cli_output.plain(out, f"no unexpected cell in {path}: nothing to rerun")
        return EXIT_OK
    cli_output.plain(out, f"no unexpected cell in {path}, but the report is incomplete: {left}")
    cli_output.plain(
        out, "nothing was rerun; run the matrix again without --rerun-failed to cover them"
    )
    return EXIT_NO_CELLS


def incomplete_notice(path: str, out: Console) -> None:
    """After a rerun that ran cells: the report it reran did not run its whole plan, and
    its cells never run are no more covered now than they were (a rerun runs the failed
    ones only). The rerun's exit status is its own cells'; this line keeps it from
    reading as the whole campaign's."""
    from killpoint.cli import output as cli_output
    from killpoint.report.document import read_json
    from killpoint.report.planned import incomplete

    left = incomplete(read_json(Path(path)))
    if left is not None:
        cli_output.plain(
            out,
            f"{path} is incomplete: {left}; this rerun ran its failed cells only: run the "
            "matrix again without --rerun-failed to cover the rest",
        )


def report_cut(cells: Sequence[dict[str, Any]]) -> str | None:
    """The cut model the report's power-loss cells were cut with (their evidence names
    it), or None when no cell says."""
    from killpoint.errors import CutModelError
    from killpoint.powerloss.cut_models import from_json, spec_of

    for cell in cells:
        store = cell.get("store_at_crash")
        cut = store.get("power_cut") if isinstance(store, dict) else None
        model = cut.get("model") if isinstance(cut, dict) else None
        if isinstance(model, dict):
            try:
                return spec_of(from_json(model))
            except (CutModelError, KeyError, TypeError, ValueError):
                continue
    return None


def carried_accepted(path: str) -> dict[str, Accepted]:
    """The accepted groups the earlier campaign ran with (its --accept file, as its report
    holds them): a rerun judges its cells as that campaign did, unless --accept is given."""
    from killpoint.judge.groups import Accepted
    from killpoint.report.document import read_json

    found = {}
    for key, entry in (read_json(Path(path)).get("accepted") or {}).items():
        found[key] = Accepted(key, str(entry.get("reason") or ""), str(entry.get("link") or ""))
    return found


def changes(path: str, asked: list[str], cells: Sequence[CellResult]) -> dict[str, Any]:
    """The report's `rerun_of`: of the cells a rerun asked for, those still failing and
    those now passing (a cell that did not finish, interrupted, is neither)."""
    ran = {c.id: c for c in cells}
    return {
        "report": path,
        "still_failing": [i for i in asked if i in ran and ran[i].failing],
        "now_passing": [i for i in asked if i in ran and not ran[i].failing],
    }


def show_changes(change: dict[str, Any], asked: int, out: Console) -> None:
    from killpoint.cli import output as cli_output

    still, passing = change["still_failing"], change["now_passing"]
    not_run = asked - len(still) - len(passing)
    cli_output.plain(
        out,
        f"against {change['report']}: {len(still)} still failing, {len(passing)} now passing"
        + (f", {not_run} not rerun (interrupted)" if not_run else ""),
    )
    for cell_id in passing[:SHOWN]:
        cli_output.plain(out, f"  now passing: {cell_id}")
    if len(passing) > SHOWN:
        cli_output.plain(out, f"  ... and {len(passing) - SHOWN} more now passing")


__all__ = [
    "RerunError",
    "carried_accepted",
    "changes",
    "failed_cells",
    "incomplete_notice",
    "nothing_to_rerun",
    "parsed",
    "rerun_config",
    "same_as_report",
    "show_changes",
    "store_fix",
]
