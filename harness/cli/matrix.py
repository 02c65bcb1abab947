"""`killpoint matrix`: the main job, from options to written reports and an exit status.

Everything that can be checked is checked before the first worker starts (options, the
runtime, the store, the work folder, the report targets, an accepted-findings file, a
report to rerun); then the campaign runs, and what finished is written, whatever ended it.
"""

from __future__ import annotations

import argparse
import signal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from killpoint.adapters.registry import RUNTIME_HELP
from killpoint.cli import output as cli_output
from killpoint.cli import verbosity
from killpoint.cli.exit_codes import (
    EXIT_NO_CELLS,
    EXIT_NOT_WRITTEN,
    EXIT_UNEXPECTED,
    interrupted_status,
)
from killpoint.engine.cell_log import heads
from killpoint.engine.options import CampaignConfig, ConfigError, OptionError
from killpoint.engine.signal_hold import SignalHold
from killpoint.report.targets import Target, TargetError, default_paths, same_file
from killpoint.values.sentences import count, verb

SHOWN_SWEPT = 10  # folders named one by one; the rest are counted
# Formats a campaign writes beside its JSON, HTML and --junit (killpoint.report.renderers).
EXTRA_FORMATS = ("markdown", "text", "annotations")

if TYPE_CHECKING:
    from rich.console import Console

    from killpoint.engine.campaign import Campaign, CampaignResult
    from killpoint.report.journal import Journal


def config_from(args: argparse.Namespace) -> CampaignConfig:
    return CampaignConfig.from_options(
        runtime=args.runtime,
        scenarios=args.scenarios,
        modes=args.modes,
        points=args.points,
        depth=args.depth,
        seed=args.seed,
        store=args.store,
        workers=args.workers,
        timeout=args.timeout,
        keep=args.keep,
        work_parent=args.work_dir,
        kills=args.kills,
        model_behaviour=args.model_behaviour,
        shard=args.shard,
        cut=args.cut,
        fs_ops=args.fs_ops,
    )


def run(args: argparse.Namespace) -> int:
    from killpoint.cli import project_config
    from killpoint.cli.fail_on import CHOICES as FAIL_ON
    from killpoint.errors import KillpointError
    from killpoint.judge.groups import AcceptError, read_accepted

    # What was typed, before [tool.killpoint] fills the rest: a rerun takes from its report
    # what the command line did not name.
    given = {
        "runtime": args.runtime,
        "scenarios": args.scenarios,
        "modes": args.modes,
        "cut": args.cut,
    }
    try:
        project = project_config.read(Path.cwd())
    except project_config.ProjectConfigError as exc:
        return cli_output.usage_error(str(exc))
    typed = {dest for dest, value in vars(args).items() if value is not None}
    vars(args).update(project_config.merge(vars(args), project))
    from_file = set(project.values) - typed
    if args.fail_on is not None and args.fail_on not in FAIL_ON:
        return cli_output.usage_error(
            f"killpoint: {project.label('fail_on')}={args.fail_on!r}: not a severity; "
            f"choose from {', '.join(FAIL_ON)}"
        )
    try:
        config = config_from(args)
        cells: list[str] | None = None
        if args.rerun_failed:
            from killpoint.cli.rerun import rerun_config

            config, cells = rerun_config(config, args.rerun_failed, given)
            if not cells:
                cli_output.plain(
                    cli_output.stdout(),
                    f"no unexpected cell in {args.rerun_failed}: nothing to rerun",
                )
                return 0
        config.check()
        if config.shard is not None and config.seed is None:
            from killpoint.values.shard import unseeded

            return cli_output.usage_error(unseeded(config.shard))
    except OptionError as exc:
        dest = "work_dir" if exc.option in ("work_parent", "work_root") else exc.option
        return cli_output.usage_error(exc.text(project.label(dest) if dest in from_file else None))
    except (ConfigError, KillpointError) as exc:
        return cli_output.usage_error(str(exc))
    default_json, default_html = default_paths(config.runtime)
    json_target = Target(Path(args.json) if args.json else default_json)
    html_target = Target(Path(args.report) if args.report else default_html)
    if same_file(json_target.path, html_target.path):
        return cli_output.usage_error(
            f"killpoint: --json and --report both name {str(json_target.path)!r}; give two paths"
        )
    from killpoint.report.renderers import RENDERERS, asked

    wanted = {**({"junit": args.junit} if args.junit else {}), **asked(args, EXTRA_FORMATS)}
    outputs = {name: Target(Path(path)) for name, path in wanted.items()}
    taken = [json_target, html_target]
    for name, target in outputs.items():
        if any(same_file(target.path, t.path) for t in taken):
            return cli_output.usage_error(
                f"killpoint: {RENDERERS[name].option} names {str(target.path)!r}, a path "
                "another report is written to; give it a path of its own"
            )
        taken.append(target)
    accepted = {}
    try:
        if args.accept == BUILTIN_ACCEPT:
            accepted = builtin_accepted(config.runtime)
        elif args.accept:
            accepted = read_accepted(Path(args.accept))
        elif args.rerun_failed:
            from killpoint.cli.rerun import carried_accepted

            accepted = carried_accepted(args.rerun_failed)
        for target in (json_target, html_target):
            target.check()
            target.lock()
        for target in outputs.values():
            target.check()
    except (TargetError, AcceptError, KillpointError) as exc:
        for target in (json_target, html_target):
            target.close()
        message = str(exc)
        return cli_output.usage_error(
            message if message.startswith("killpoint:") else f"killpoint: {message}"
        )
    try:
        return campaign(config, args, json_target, html_target, accepted, cells, outputs)
    finally:
        for target in (json_target, html_target):
            target.close()


def campaign(
    config: CampaignConfig,
    args: argparse.Namespace,
    json_target: Target,
    html_target: Target,
    accepted: dict[str, Any],
    cells: list[str] | None,
    outputs: dict[str, Target] | None = None,
) -> int:
    from killpoint.cli import ending
    from killpoint.cli.progress import with_progress
    from killpoint.engine.campaign import Campaign
    from killpoint.judge.groups import unmet
    from killpoint.report.document import narrowed
    from killpoint.report.redact import redact
    from killpoint.stores import shown

    err, out = cli_output.stderr(), cli_output.stdout()
    camp = Campaign(config, accepted=accepted, cells=cells)
    recover_left_behind(json_target, html_target, err)
    name_swept(camp.engine.swept, err)
    journal = open_journal(camp, json_target)
    if not verbosity.quiet():
        cli_output.plain(
            err,
            f"killpoint matrix runtime={config.runtime} store={redact(shown(config.store))} "
            f"points={config.points} depth={config.depth} seed={camp.seed} "
            f"workers={config.workers}"
            + (f" rerun={count(len(cells), 'cell')}" if cells is not None else "")
            + (f" shard={config.shard}" if config.shard is not None else ""),
        )
    # Engaged by the campaign at its first interrupt or its last cell; released once the
    # reports are written, which no signal cuts off half-way.
    hold = SignalHold()
    try:
        result = with_progress(camp, err, recorder=journal, hold=hold)
        if journal is not None:
            journal.ended(result)
        rerun_of = None
        if cells is not None:
            from killpoint.cli.rerun import changes

            rerun_of = changes(args.rerun_failed, cells, heads(result.cells))
        document, (not_written, lost, written) = write_reports(
            result, json_target, html_target, err, rerun=cells is not None, rerun_of=rerun_of
        )
        not_written |= ending.write_outputs(document, outputs or {}, written, err)
        if journal is not None:
            finish_journal(journal, lost, err)
    finally:
        hold.release()
    groups = result.groups()
    cli_output.summary(document, out)
    narrow = narrowed(result, rerun=cells is not None)
    cli_output.show_unmet(unmet([*groups, *result.row_groups()], accepted, narrow), narrow, out)
    if rerun_of is not None and cells is not None:
        from killpoint.cli.rerun import show_changes

        show_changes(rerun_of, len(cells), out)
    cli_output.plain(out, f"seed {camp.seed}")
    for left in result.leftover_stores:
        cli_output.plain(
            err,
            f"killpoint: could not drop the {left['store']} on {left['server']} "
            f"({left['error']}); drop it with: {left['statement']}",
        )
    unjudged = sum(1 for c in heads(result.cells) if c.verdict == "unavailable")
    if unjudged:
        cli_output.plain(
            err,
            f"killpoint: {count(unjudged, 'cell')} could not be judged: the store server, the "
            "work folder or a thread or process limit failed under them (their findings say "
            "how); rerun them with --rerun-failed and the JSON",
        )
    failing = ending.failing_groups(result, [*groups, *result.row_groups()], args.fail_on, err)
    ending.github(document, args.fail_on, written, out, err)
    ending.name_kept(result, out)
    if written:  # last: what a reader of the log looks for when the run is over
        cli_output.plain(out, f"written: {', '.join(written)}")
    if result.interrupted:
        cli_output.plain(err, "interrupted: the report holds the cells that finished")
        return interrupted_status(result.signal)
    if hold.received:
        cli_output.plain(
            err,
            f"killpoint: {signal.Signals(hold.received[0]).name} came while the reports were "
            "written; they are complete",
        )
        return interrupted_status(hold.received[0])
    if not_written:
        return EXIT_NOT_WRITTEN
    if failing if args.fail_on else result.failing:
        return EXIT_UNEXPECTED
    if not heads(result.cells):
        cli_output.no_cells(result, err)
        return EXIT_NO_CELLS
    return 0


def name_swept(folders: list[Path], err: Console) -> None:
    """Cell folders of killed campaigns, removed before this one started."""
    if not folders:
        return
    shown = ", ".join(str(f) for f in folders[:SHOWN_SWEPT])
    more = f" and {len(folders) - SHOWN_SWEPT} more" if len(folders) > SHOWN_SWEPT else ""
    cli_output.plain(
        err,
        f"killpoint: removed {count(len(folders), 'cell folder')} that killed campaigns left "
        f"behind: {shown}{more}",
    )


def open_journal(camp: Campaign, json_target: Target) -> Journal | None:
    """The journal beside a JSON written to a file (a stream has no beside)."""
    from killpoint.report.document import head
    from killpoint.report.journal import Journal, journal_path

    if json_target.kind != "regular":
        return None
    path = journal_path(json_target.real)
    top = head(camp.config, camp.seed, camp.accepted)
    try:
        return Journal(path, json_target.real, top)
    except OSError as exc:
        cli_output.plain(
            cli_output.stderr(),
            f"killpoint: cannot write the journal {str(path)!r} ({exc.strerror or exc}); "
            "the cells are written at the end only",
        )
        return None


def finish_journal(journal: Journal, lost: bool, err: Console) -> None:
    """The journal goes once both reports are written (where asked, or to a fallback);
    when one could not be written anywhere (`lost`) it stays, and says how to rebuild them."""
    if journal.broken is not None:
        cli_output.plain(
            err, f"killpoint: the journal {str(journal.path)!r} stopped: {journal.broken}"
        )
    if not lost:
        journal.remove()
        return
    journal.close()
    cli_output.plain(
        err,
        f"killpoint: the finished cells are in {str(journal.path)!r}; rebuild the reports with "
        f"`killpoint report --from-journal {journal.path}`",
    )


def recover_left_behind(json_target: Target, html_target: Target, err: Console) -> None:
    """A journal beside this campaign's JSON is an earlier campaign's that did not write its
    reports (the JSON's lock is ours, so it has ended): its cells are rebuilt into reports
    of their own, before this campaign replaces the JSON."""
    from killpoint.report.document import ReportError
    from killpoint.report.journal import journal_path, read_journal, recovered_paths, write_rebuilt

    if json_target.kind != "regular":
        return
    path = journal_path(json_target.real)
    if not path.exists():
        return
    try:
        left = read_journal(path)
        json_path, html_path = recovered_paths(json_target.real, left.pid)
        write_rebuilt(left, json_path, html_path)
    except (ReportError, OSError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        cli_output.plain(
            err, f"killpoint: a journal was left at {str(path)!r} and could not be rebuilt: {why}"
        )
        return
    path.unlink(missing_ok=True)
    who = f"pid {left.pid}" if left.pid is not None else "an earlier campaign"
    cli_output.plain(
        err,
        f"killpoint: {who} ended without writing its reports; the {count(left.cells, 'cell')} "
        f"its journal holds {verb(left.cells, 'is', 'are')} rebuilt into {json_path} and "
        f"{html_path}",
    )


def write_reports(
    result: CampaignResult,
    json_target: Target,
    html_target: Target,
    err: Console,
    *,
    rerun: bool = False,
    rerun_of: dict[str, Any] | None = None,
) -> tuple[dict[str, Any], tuple[bool, bool, list[str]]]:
    """Write the JSON, then the HTML; a path that fails gets a fallback (named). The
    document (every other output is rendered from it), and: whether something could not
    be written where asked, whether one could not be written at all, and the paths written
    (the `written:` line, printed last)."""
    from killpoint.report.document import dumps, to_document, write
    from killpoint.report.html import render_report
    from killpoint.report.redact import redact

    document = to_document(result, rerun=rerun)
    if rerun_of is not None:
        document["rerun_of"] = rerun_of
    written: list[str] = []
    missed = lost = False
    for target, make in (
        (json_target, lambda: dumps(document)),
        (html_target, lambda: redact(render_report(document))),
    ):
        try:
            fallback = write(target, make())
        except OSError as exc:
            cli_output.plain(
                err, f"killpoint: could not write {str(target.path)!r} nor a fallback: {exc}"
            )
            missed = lost = True
            continue
        if fallback is not None:
            missed = True
            cli_output.plain(
                err, f"killpoint: cannot write {str(target.path)!r}; written to {fallback} instead"
            )
            written.append(str(fallback))
        else:
            written.append(str(target.path.absolute()))
    return document, (missed, lost, written)


BUILTIN_ACCEPT = "builtin"  # --accept builtin: the runtime's own by-design file


def builtin_accepted(runtime: str) -> dict[str, Any]:
    """The groups the runtime's documentation calls by design (empty for one that ships
    none: the reference runtime has no by-design findings)."""
    from killpoint.adapters.registry import accepted_file
    from killpoint.judge.groups import read_accepted

    path = accepted_file(runtime)
    return read_accepted(path) if path is not None else {}


def add_parser(sub: Any, work_dir_help: str, positive_int: Any) -> None:
    from killpoint.cli.fail_on import CHOICES as FAIL_ON
    from killpoint.engine.options import default_workers

    p = sub.add_parser("matrix", help="run the crash matrix (the main job)")
    # No default here: a rerun tells a runtime typed from none (the configuration's default).
    p.add_argument("--runtime", help=RUNTIME_HELP + " (default: reference)")
    p.add_argument("--scenarios", help="comma-separated scenario names (default: all built-ins)")
    p.add_argument(
        "--modes",
        help="comma-separated checkpoint modes of the runtime (default: every mode it can run; "
        "the reference runtime's: runs,tool-batch,tool)",
    )
    p.add_argument(
        "--points",
        help="boundaries | kills | faults | all (default) | power-loss | random:N | kinds or points, "
        "comma-separated",
    )
    p.add_argument("--depth", help="1 (default), or 2: crash the resumed run too")
    p.add_argument("--seed", help="seed for random sampling (printed when chosen)")
    p.add_argument("--store", help="sqlite (default), or a postgresql+psycopg:// URL")
    p.add_argument(
        "--workers",
        help=f"cells at work at once (default: twice the cores, here {default_workers()}); "
        "with 2 or more, a cell waiting for a lease to run out lets another work meanwhile",
    )
    p.add_argument("--timeout", help="seconds per worker before 'hung' (default: 30)")
    p.add_argument("--keep", help="keep work dirs: none, failed (default) or all")
    p.add_argument(
        "--kills",
        default="fast",
        help="fast (default): a row's kill cells resume from one traced worker's copies of "
        "the state at each point; real: each cell starts and SIGKILLs a worker of its own",
    )
    p.add_argument("--work-dir", help=work_dir_help)
    p.add_argument("--json", help="where the JSON goes (default: reports/RUNTIME-matrix.json)")
    p.add_argument("--report", help="where the HTML goes (default: reports/RUNTIME-matrix.html)")
    p.add_argument(
        "--accept",
        help="a TOML file of accepted finding groups: shown, counted apart, not failing; "
        "`builtin`: the groups the runtime's documentation calls by design",
    )
    p.add_argument("--junit", help="also write the results as JUnit XML to this path")
    from killpoint.report.renderers import add_options

    add_options(p, EXTRA_FORMATS)
    p.add_argument(
        "--fail-on",
        choices=FAIL_ON,
        help="fail (exit 1) on any finding group of this severity or above, verdict or not "
        "(default: on an unexpected verdict)",
    )
    p.add_argument(
        "--model-behaviour",
        help="how the model answers every turn asked again after a crash, in every cell: "
        "regenerate-ids, reorder, respell or replan (default: as the first time)",
    )
    p.add_argument(
        "--cut",
        help="power-loss points: which unsynced writes the cut keeps: synced (default: none), "
        "torn-op (each file's last write torn at a sector; torn-op:byte at a byte), torn-seq "
        "(a seeded subset), reorder (a prefix per file and per directory); docs/powerloss.md",
    )
    p.add_argument(
        "--fs-ops",
        help="fs-op points (--points fs-ops): which store-file operations of each checkpoint "
        "get a point: all (default), syncs (fsync, fdatasync) or a number spread evenly; "
        "docs/powerloss.md",
    )
    p.add_argument(
        "--rerun-failed",
        metavar="REPORT.json",
        help="rerun only the unexpected cells of an earlier report (its runtime, store kind, "
        "scenarios and modes)",
    )
    p.add_argument(
        "--shard",
        metavar="K/N",
        help="run only shard K of N (cells by a stable hash of their id; give every shard the "
        "same --seed), then `killpoint merge` the shards' JSON",
    )
    p.set_defaults(func=run)


__all__ = ["add_parser", "run"]
