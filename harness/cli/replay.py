"""`killpoint replay CELL`: rerun one cell and say whether it reproduced.

With `--json REPORT` the new result is compared with the recorded one: "reproduced" when
the verdict and the finding groups are the same, "did not reproduce" with the difference
otherwise. `--repeat N` runs the cell N times and counts how often it reproduced (a cell
that does not always is flaky, and says so).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from killpoint import kinds
from killpoint.cli import output as cli_output
from killpoint.cli import verbosity
from killpoint.cli.exit_codes import EXIT_UNEXPECTED
from killpoint.cli.kept import kept_note
from killpoint.engine.options import CampaignConfig
from killpoint.errors import ConfigError, OptionError
from killpoint.values.durations import offset
from killpoint.values.sentences import count

if TYPE_CHECKING:
    from killpoint.judge.baseline import Baseline
    from killpoint.values.cell import Cell


def signature(cell: dict[str, Any]) -> tuple[str, frozenset[str]]:
    """What "the same result" means: the verdict and the groups of the unexpected findings."""
    groups = frozenset(
        str(f.get("group"))
        for f in cell.get("findings") or []
        if not f.get("expected") and f.get("verdict") != "ok"
    )
    return str(cell.get("verdict")), groups


def compare(recorded: dict[str, Any], now: dict[str, Any]) -> str:
    """'' when the same; else what differs, in one line."""
    (v1, g1), (v2, g2) = signature(recorded), signature(now)
    parts = []
    if v1 != v2:
        parts.append(f"verdict {v1} recorded, {v2} now")
    if g2 - g1:
        parts.append("new: " + ", ".join(sorted(g2 - g1)))
    if g1 - g2:
        parts.append("gone: " + ", ".join(sorted(g1 - g2)))
    return "; ".join(parts)


def shown_as(cell: Cell, base: Baseline) -> str:
    """The cell as every report names it: the stand-in of a row that could not be planned
    (its baseline failed, or its two runs differ) made no crash, so it is named by its row,
    never by the point its id keeps (which replay and --rerun-failed still parse)."""
    from killpoint.report.planned import shown_cell

    unplanned = base.problem is not None or base.nondeterministic is not None
    return shown_cell(cell.id, [cell.row] if unplanned else [])


def absent(document: dict[str, Any], cell: Cell, path: str) -> str:
    """Why a cell has no result in a report: planned there but never run, or in a row
    never planned (the campaign was stopped or interrupted first), or not of its plan."""
    from killpoint.report.planned import read_planned

    plan = read_planned(document) or {}
    why = "it was stopped" if document.get("stopped") else "it was interrupted"
    if cell.row in plan and plan[cell.row] is None:
        said = f"is of a row {path!r} never planned ({why} before the row's baseline ended)"
    elif str(cell.schedule) in (plan.get(cell.row) or ()):
        said = f"was planned in {path!r} but did not run ({why} first)"
    else:
        return f"killpoint: cell {cell.id!r} is not in {path!r}"
    return (
        f"killpoint: cell {cell.id!r} {said}: there is no result to compare with; replay it "
        "without --json"
    )


def run(args: argparse.Namespace) -> int:
    from killpoint.cli.rerun import same_as_report, store_fix
    from killpoint.engine.engine import Engine
    from killpoint.engine.option_table import option
    from killpoint.engine.option_values import whole_number
    from killpoint.engine.options import EngineConfig
    from killpoint.errors import PointError, ReportError, RerunError, StoreError
    from killpoint.kinds.fs_ops import KINDS as FS_KINDS
    from killpoint.report.document import read_json
    from killpoint.stores import store_kind

    try:
        cell = kinds.parse_cell(args.cell)
    except PointError as exc:
        return cli_output.usage_error(str(exc))
    store = args.store or option("store").default_value()
    try:
        behaviour = (
            None
            if args.model_behaviour is None
            else option("model_behaviour").parse(args.model_behaviour)
        )
        cut = option("cut").parse(args.cut or option("cut").default_value())
    except OptionError as exc:
        return cli_output.usage_error(exc.text())
    try:
        kind = store_kind(store)
    except StoreError as exc:
        return cli_output.usage_error(str(exc))
    if kind != cell.store:
        return cli_output.usage_error(
            f"killpoint: cell {cell.id!r} ran on {cell.store}, this replay would run on "
            f"{kind}; {store_fix(cell.store)}"
        )
    recorded = None
    if args.json:
        try:
            document = read_json(Path(args.json))
        except ReportError as exc:
            return cli_output.usage_error(str(exc))
        recorded = next((c for c in document["cells"] if c["id"] == cell.id), None)
        if recorded is None:
            return cli_output.usage_error(absent(document, cell, args.json))
        try:
            same_as_report(document, cell, args.json)
        except RerunError as exc:
            return cli_output.usage_error(str(exc))
    try:
        repeat = whole_number("repeat", args.repeat, 1)
    except OptionError as exc:
        return cli_output.usage_error(exc.text())
    work_parent = Path(args.work_dir) if args.work_dir else None
    try:
        config = CampaignConfig.from_options(
            runtime=cell.runtime,
            scenarios=(cell.scenario,),
            modes=(cell.mode,),
            store=store,
            work_dir=work_parent,
        )
        config.check()
    except OptionError as exc:
        # The runtime, scenario and mode come from the cell id, not from an option.
        of_cell = {"runtime": "runtime", "scenarios": "scenario", "modes": "mode"}
        label = f"cell {cell.id!r}: its {of_cell[exc.option]}" if exc.option in of_cell else None
        return cli_output.usage_error(exc.text(label))
    except ConfigError as exc:
        return cli_output.usage_error(str(exc))
    skip = kinds.unavailable([p.kind for p in cell.schedule], kind)
    if skip:  # never failed, never passed: said, and nothing runs
        for name, why in skip.items():
            line = f"{cell.id}: skipped, {name} points cannot run here: {why}"
            cli_output.plain(cli_output.stdout(), line)
        return 0
    engine = Engine(
        EngineConfig(
            store=store,
            keep="all" if args.keep else "failed",
            work_parent=work_parent,
            model_behaviour=behaviour,
            cut=cut,
            # A cell at a store-file operation needs the baseline's trace of them.
            fs_trace=any(p.kind in FS_KINDS for p in cell.schedule),
        )
    )
    base = engine.baseline(cell.row)
    if base.problem is None and base.nondeterministic is None:
        for point in cell.schedule:
            try:
                kinds.plan(base, point)
            except PointError as exc:
                return cli_output.usage_error(
                    f"killpoint: cell {cell.id!r}: {str(exc).removeprefix('killpoint: ')}"
                )
    out = cli_output.stdout()
    results = [engine.run_cell(cell) for _ in range(repeat)]
    shown = shown_as(cell, base)
    same = 0
    for n, result in enumerate(results, start=1):
        now = result.to_json()
        head = f"{shown}: {result.verdict} ({'expected' if result.expected else 'UNEXPECTED'})"
        cli_output.plain(out, head if repeat == 1 else f"run {n}: {head}")
        for line in cli_output.finding_lines(result.findings)[:8]:
            cli_output.plain(out, f"  {line}")
        if repeat == 1 and not verbosity.quiet():
            for event in result.timeline:
                # An event's text may end in a worker's traceback: its lines kept, under it.
                cli_output.block(out, f"  {offset(event.t):>10}  {event.text}", " " * 14)
        if recorded is not None:
            difference = compare(recorded, now)
            same += not difference
            cli_output.plain(
                out, "reproduced" if not difference else f"did not reproduce: {difference}"
            )
        if result.kept:
            cli_output.plain(out, f"kept: {result.kept} (store, ledger, worker logs)")
    # A kept folder holds RAM in /dev/shm until removed: said as a campaign says it.
    note = kept_note([r.kept for r in results if r.kept], postgresql=kind == "postgresql")
    if note:
        cli_output.plain(out, note)
    if repeat > 1:
        verdicts = sorted({r.verdict for r in results})
        line = f"{count(repeat, 'run')}: verdicts {', '.join(verdicts)}"
        if recorded is not None:
            line += f"; reproduced {same} of {repeat}"
            if 0 < same < repeat:
                line += " (flaky)"
        elif len(verdicts) > 1:
            line += " (flaky)"
        cli_output.plain(out, line)
    return 0 if all(r.expected for r in results) else EXIT_UNEXPECTED


def add_parser(sub: Any, work_dir_help: str) -> None:
    p = sub.add_parser("replay", help="rerun one cell of a report; say whether it reproduced")
    p.add_argument(
        "cell", help="cell id, e.g. reference/research/tool-batch/sqlite/after-checkpoint:2"
    )
    p.add_argument("--json", help="the report it comes from: say whether the result reproduced")
    p.add_argument("--store", help="sqlite (default) or the PostgreSQL URL the cell ran on")
    p.add_argument("--repeat", default="1", help="run it N times and count the reproductions")
    p.add_argument("--keep", action="store_true", help="keep the store, ledger and worker logs")
    p.add_argument("--work-dir", help=work_dir_help)
    p.add_argument(
        "--model-behaviour",
        help="the campaign's --model-behaviour, for a cell of a campaign that had one",
    )
    p.add_argument(
        "--cut",
        help="the campaign's --cut, for a power-loss cell of a campaign that had one "
        "(default: synced)",
    )
    p.set_defaults(func=run)


__all__ = ["add_parser", "compare", "run"]
