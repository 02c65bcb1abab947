"""The `killpoint` command."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

EXIT_UNEXPECTED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
REPORTS = Path("reports")
WORK_DIR_HELP = (
    "where to make this run's folder for the cells' stores, ledgers and logs "
    "(default: /dev/shm, or TMPDIR when set or /dev/shm is small)"
)


def _fail(message: str) -> int:
    print(message, file=sys.stderr)
    return EXIT_USAGE


def _split(text: str | None) -> tuple[str, ...]:
    return tuple(p.strip() for p in (text or "").split(",") if p.strip())


# -- scenarios ----------------------------------------------------------------------------


def _cmd_scenarios(args: argparse.Namespace) -> int:
    from killpoint import scenarios

    width = max(len(name) for name, _ in scenarios.describe())
    for name, description in scenarios.describe():
        print(f"{name:<{width}}  {description}")
    return 0


# -- matrix -------------------------------------------------------------------------------


def _cmd_matrix(args: argparse.Namespace) -> int:
    from rich.console import Console

    from .campaign import Campaign, CampaignConfig, ConfigError
    from .results import check_writable, to_document, write_json

    console = Console(stderr=True)
    json_path = Path(args.json) if args.json else REPORTS / "matrix.json"
    report_path = Path(args.report) if args.report else REPORTS / "matrix.html"
    config = CampaignConfig(
        runtime=args.runtime,
        scenarios=_split(args.scenarios),
        modes=_split(args.modes),
        points=args.points,
        depth=args.depth,
        seed=args.seed,
        store=args.store,
        workers=args.workers,
        timeout=args.timeout,
        keep=args.keep,
        work_parent=Path(args.work_dir) if args.work_dir else None,
    )
    try:
        config.validate()
    except ConfigError as exc:
        return _fail(str(exc))
    for path in (json_path, report_path):
        try:
            check_writable(path)
        except OSError as exc:
            return _fail(f"killpoint: cannot write the report to {str(path)!r}: {exc}")

    campaign = Campaign(config)
    console.print(
        f"[bold]killpoint matrix[/] runtime={config.runtime} store={campaign.store_kind} "
        f"points={config.points} depth={config.depth} seed={campaign.seed} "
        f"workers={config.workers}"
    )
    result = _run_with_progress(campaign, console)
    document = to_document(result)
    write_json(document, json_path)
    written = [str(json_path)]
    if _render_html(document, report_path):
        written.append(str(report_path))
    _print_summary(result, console)
    console.print(f"seed {campaign.seed}; written: {', '.join(written)}")
    if result.interrupted:
        console.print("[yellow]interrupted: the report holds the cells that finished[/]")
        return EXIT_INTERRUPTED
    return EXIT_UNEXPECTED if result.unexpected else 0


def _run_with_progress(campaign, console):  # type: ignore[no-untyped-def]
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[bad]} unexpected"),
        TimeElapsedColumn(),
        console=console,
        transient=False,
    ) as progress:
        task = progress.add_task("baselines", total=None, bad=0)
        bad = 0

        def planned(n: int) -> None:
            progress.update(task, description="cells", total=n, completed=0)

        def cell_done(r) -> None:  # type: ignore[no-untyped-def]
            nonlocal bad
            bad += 0 if r.expected else 1
            progress.update(task, advance=1, bad=bad)

        return campaign.run(on_planned=planned, on_cell=cell_done)


def _render_html(document: dict, path: Path) -> bool:  # type: ignore[type-arg]
    try:
        from .report import render_report
    except ImportError:
        return False
    from .results import write_atomically

    write_atomically(path, render_report(document))
    return True


def _print_summary(result, console) -> None:  # type: ignore[no-untyped-def]
    from rich.table import Table

    table = Table(title="crash matrix", show_lines=False)
    for name in ("scenario", "mode", "cells", "ok", "lost (expected)", "unexpected", "dups"):
        table.add_column(name, justify="left" if name in ("scenario", "mode") else "right")
    rows: dict[tuple[str, str], list[int]] = {}
    for c in result.cells:
        r = rows.setdefault((c.scenario, c.mode), [0, 0, 0, 0, 0])
        r[0] += 1
        r[1] += c.verdict == "ok"
        r[2] += c.verdict == "lost" and c.expected
        r[3] += not c.expected
        r[4] += c.duplicates
    for (scenario, mode), r in rows.items():
        style = "red" if r[3] else None
        table.add_row(scenario, mode, *map(str, r), style=style)
    console.print(table)
    for s in result.skipped:
        console.print(f"skipped {s.scenario}/{s.mode}: {s.reason}")
    summary = result.summary()
    console.print(
        f"{summary['cells']} cells, {summary['unexpected']} unexpected, "
        f"{summary['expected_losses']} expected losses, {summary['duplicates']} duplicates, "
        f"{summary['seconds']} s ({summary['cells_per_second']} cells/s)"
    )
    for c in result.unexpected[:30]:
        console.print(f"[red]{c.verdict}[/] {c.id}: {c.detail[:200]}", markup=True, highlight=False)
        console.print(f"  replay: {c.replay}", markup=False, highlight=False)
    if len(result.unexpected) > 30:
        console.print(f"... and {len(result.unexpected) - 30} more unexpected cells in the JSON")


# -- replay -------------------------------------------------------------------------------


def _cmd_replay(args: argparse.Namespace) -> int:
    from .cell import Cell
    from .engine import Engine, EngineConfig
    from .points import PointError
    from .results import read_json
    from .stores import StoreError, store_kind

    try:
        cell = Cell.parse(args.cell)
    except PointError as exc:
        return _fail(str(exc))
    store = args.store or "sqlite"
    try:
        kind = store_kind(store)
    except StoreError as exc:
        return _fail(str(exc))
    if kind != cell.store:
        return _fail(
            f"killpoint: cell {cell.id!r} ran on {cell.store}; give --store "
            + ("sqlite" if cell.store == "sqlite" else "a postgresql+psycopg:// URL")
        )
    recorded = None
    if args.json:
        try:
            document = read_json(Path(args.json))
        except (OSError, ValueError) as exc:
            return _fail(f"killpoint: cannot read {args.json!r}: {exc}")
        recorded = next((c for c in document.get("cells", []) if c["id"] == cell.id), None)
        if recorded is None:
            return _fail(f"killpoint: cell {cell.id!r} is not in {args.json!r}")
    from .campaign import CampaignConfig, ConfigError

    work_parent = Path(args.work_dir) if args.work_dir else None
    try:
        CampaignConfig(
            runtime=cell.runtime,
            scenarios=(cell.scenario,),
            modes=(cell.mode,),
            store=store,
            work_parent=work_parent,
        ).validate()
    except ConfigError as exc:
        return _fail(str(exc))
    engine = Engine(
        EngineConfig(store=store, keep="all" if args.keep else "failed", work_parent=work_parent)
    )
    result = engine.run_cell(cell)
    print(f"{cell.id}: {result.verdict} ({'expected' if result.expected else 'UNEXPECTED'})")
    if result.detail:
        print(f"  {result.detail}")
    for event in result.timeline:
        print(f"  {event.t:8.4f}s  {event.text}")
    if recorded is not None:
        same = recorded["verdict"] == result.verdict
        print(f"recorded verdict: {recorded['verdict']} — {'same' if same else 'DIFFERENT'}")
    if result.kept:
        print(f"kept: {result.kept} (store, ledger, worker logs)")
    return 0 if result.expected else EXIT_UNEXPECTED


# -- demo ---------------------------------------------------------------------------------


def _cmd_demo(args: argparse.Namespace) -> int:
    from .demo import run_demo

    return run_demo(mode=args.mode, store=args.store, runtime=args.runtime)


# -- search -------------------------------------------------------------------------------


def _cmd_search(args: argparse.Namespace) -> int:
    from .campaign import CampaignConfig, ConfigError
    from .engine import Engine, EngineConfig
    from .search import search

    config = CampaignConfig(
        runtime=args.runtime, scenarios=(args.scenario,), modes=(args.mode,), store=args.store
    )
    try:
        config.validate()
    except ConfigError as exc:
        return _fail(str(exc))
    engine = Engine(EngineConfig(store=args.store, timeout=args.timeout))
    row = (args.runtime, args.scenario, args.mode, engine.stores.kind)
    print(f"searching {'/'.join(row)} (depth {args.depth}, seed {args.seed}) ...")
    found = search(engine, row, depth=args.depth, max_examples=args.max_examples, seed=args.seed)
    print(f"ran {len(found.tried)} schedules")
    if found.minimal is None:
        print("no schedule gave an unexpected verdict")
        return 0
    m = found.minimal
    print(f"minimal failing schedule: {'+'.join(m.schedule)}")
    print(f"  {m.verdict}: {m.detail}")
    print(f"  replay: {m.replay}")
    return EXIT_UNEXPECTED


# -- report -------------------------------------------------------------------------------


def _cmd_report(args: argparse.Namespace) -> int:
    from .results import read_json, write_atomically

    try:
        from .report import render_report
    except ImportError:
        return _fail("killpoint: the HTML report renderer is not installed in this version")
    try:
        document = read_json(Path(args.results))
    except (OSError, ValueError) as exc:
        return _fail(f"killpoint: cannot read {args.results!r}: {exc}")
    out = Path(args.output)
    try:
        write_atomically(out, render_report(document))
    except OSError as exc:
        return _fail(f"killpoint: cannot write {str(out)!r}: {exc}")
    print(out)
    return 0


# -- parser -------------------------------------------------------------------------------


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be at least 1")
    return value


def build_parser() -> argparse.ArgumentParser:
    from .campaign import default_workers

    parser = argparse.ArgumentParser(
        prog="killpoint",
        description="Crash-consistency harness for durable agent runtimes.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("scenarios", help="list the built-in scenarios, one line each")
    p.set_defaults(func=_cmd_scenarios)

    p = sub.add_parser("matrix", help="run the crash matrix (the main job)")
    p.add_argument("--runtime", default="reference", help="reference, or package.module:adapter")
    p.add_argument("--scenarios", help="comma-separated scenario names (default: all built-ins)")
    p.add_argument(
        "--modes",
        help="comma-separated checkpoint modes of the runtime (default: every mode it can run; "
        "the reference runtime's: runs,tool-batch,tool)",
    )
    p.add_argument(
        "--points",
        default="all",
        help="boundaries | kills | faults | all | random:N | kinds or points, comma-separated",
    )
    p.add_argument(
        "--depth", type=int, choices=(1, 2), default=1, help="2: crash the resumed run too"
    )
    p.add_argument("--seed", type=int, help="seed for random sampling (printed when chosen)")
    p.add_argument("--store", default="sqlite", help="sqlite, or a postgresql+psycopg:// URL")
    p.add_argument(
        "--workers",
        type=_positive_int,
        default=default_workers(),
        help="cells at once (default: twice the cores)",
    )
    p.add_argument("--timeout", type=float, default=30.0, help="seconds per worker before 'hung'")
    p.add_argument(
        "--keep", choices=("none", "failed", "all"), default="failed", help="keep work dirs"
    )
    p.add_argument("--work-dir", help=WORK_DIR_HELP)
    p.add_argument("--json", help="where the JSON goes (default: reports/matrix.json)")
    p.add_argument("--report", help="where the HTML goes (default: reports/matrix.html)")
    p.set_defaults(func=_cmd_matrix)

    p = sub.add_parser("replay", help="rerun one cell of a report")
    p.add_argument(
        "cell", help="cell id, e.g. reference/research/tool-batch/sqlite/after-checkpoint:2"
    )
    p.add_argument("--json", help="a report to compare the verdict with")
    p.add_argument("--store", help="sqlite (default) or the PostgreSQL URL the cell ran on")
    p.add_argument("--keep", action="store_true", help="keep the store, ledger and worker logs")
    p.add_argument("--work-dir", help=WORK_DIR_HELP)
    p.set_defaults(func=_cmd_replay)

    p = sub.add_parser("demo", help="the classic story: start, crash, inspect, continue, compare")
    p.add_argument("--mode", help="a checkpoint mode of the runtime (default: tool-batch)")
    p.add_argument("--store", default="sqlite", help="sqlite, or a postgresql+psycopg:// URL")
    p.add_argument("--runtime", default="reference")
    p.set_defaults(func=_cmd_demo)

    p = sub.add_parser("search", help="search crash schedules with hypothesis; shrink a failure")
    p.add_argument("--runtime", default="reference")
    p.add_argument("--scenario", default="research")
    p.add_argument("--mode", default="tool-batch", help="a checkpoint mode of the runtime")
    p.add_argument("--store", default="sqlite")
    p.add_argument("--depth", type=_positive_int, default=2, help="most crashes per schedule")
    p.add_argument("--max-examples", type=_positive_int, default=30)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--timeout", type=float, default=30.0)
    p.set_defaults(func=_cmd_search)

    p = sub.add_parser("report", help="render a saved JSON as the HTML crash-matrix report")
    p.add_argument("results", help="a matrix JSON")
    p.add_argument("-o", "--output", default=str(REPORTS / "matrix.html"))
    p.set_defaults(func=_cmd_report)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    import os

    # The user's own modules (adapters, scenarios) import from the current folder, in
    # this process and in every worker forked for it; last on the path, so that a
    # project's own `runtime/` or `scenarios/` never stands in for an installed module.
    if os.getcwd() not in sys.path:
        sys.path.append(os.getcwd())
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        from .processes import kill_all

        kill_all()
        return EXIT_INTERRUPTED


def entry() -> None:
    """The `killpoint` command: main(), then, as this process ends here, stop the
    forkserver its workers came from (main() called from Python keeps it for the next
    campaign). A command that started no worker never imported the module."""
    try:
        code = main()
    finally:
        processes = sys.modules.get("killpoint.processes")
        if processes is not None:
            processes.stop_forkserver()
    sys.exit(code)


if __name__ == "__main__":
    entry()
