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

from killpoint.cli import output as cli_output
from killpoint.cli import verbosity
from killpoint.cli.exit_codes import (
    EXIT_NO_CELLS,
    EXIT_NOT_WRITTEN,
    EXIT_UNEXPECTED,
    interrupted_status,
)
from killpoint.engine import option_table as table
from killpoint.engine.cell_log import heads
from killpoint.engine.options import CampaignConfig
from killpoint.engine.signal_hold import SignalHold
from killpoint.errors import ConfigError, OptionError, TargetError
from killpoint.report.targets import Target, default_paths, same_file
from killpoint.values.sentences import count, verb

SHOWN_SWEPT = 10  # folders named one by one; the rest are counted

if TYPE_CHECKING:
    from rich.console import Console

    from killpoint.engine.campaign import Campaign, CampaignResult
    from killpoint.report.journal import Journal


def config_from(args: argparse.Namespace) -> CampaignConfig:
    """The campaign the command line (and [tool.killpoint], merged in) asks for."""
    return CampaignConfig.from_options(
        **{o.name: getattr(args, o.name) for o in table.on(table.CLI) if o.sets is not None}
    )


def left_out(config: CampaignConfig) -> list[str]:
    """The banner's lines for the kinds `--points all` leaves out here (power loss without
    FUSE), when the points asked for take `all`."""
    if not config.points.everything:
        return []
    from killpoint import kinds

    return [
        f"{name} points are not part of --points all here: {why}"
        for name, why in kinds.left_out_of_all().items()
    ]


def run(args: argparse.Namespace) -> int:
    from killpoint.cli import project_config
    from killpoint.engine.acceptances import accepted_groups
    from killpoint.errors import AcceptError, KillpointError

    # What was typed, before [tool.killpoint] fills the rest: a rerun takes from its report
    # what the command line did not name.
    given = {
        "runtime": args.runtime,
        "scenarios": args.scenarios,
        "modes": args.modes,
        "cut": args.cut,
        "seed": args.seed,
    }
    try:
        project = project_config.read(Path.cwd())
    except project_config.ProjectConfigError as exc:
        return cli_output.usage_error(str(exc))
    typed = {dest for dest, value in vars(args).items() if value is not None}
    vars(args).update(project_config.merge(vars(args), project))
    from_file = set(project.values) - typed
    try:
        if args.fail_on is not None:
            table.option("fail_on").parse(args.fail_on)
        config = config_from(args)
        cells: list[str] | None = None
        if args.rerun_failed:
            from killpoint.cli.rerun import rerun_config

            config, cells = rerun_config(config, args.rerun_failed, given)
            if not cells:
                from killpoint.cli.rerun import nothing_to_rerun

                return nothing_to_rerun(args.rerun_failed, cli_output.stdout())
        config.check()
        if config.shard is not None and config.seed is None:
            from killpoint.values.shard import unseeded

            return cli_output.usage_error(unseeded(config.shard))
    except OptionError as exc:
        label = project.label(exc.option) if exc.option in from_file else None
        return cli_output.usage_error(exc.text(label))
    except (ConfigError, KillpointError) as exc:
        return cli_output.usage_error(str(exc))
    default_json, default_html = default_paths(config.runtime)
    json_target = Target(Path(args.json) if args.json else default_json)
    html_target = Target(Path(args.report) if args.report else default_html)
    if same_file(json_target.path, html_target.path):
        return cli_output.usage_error(
            f"killpoint: --json and --report both name {str(json_target.path)!r}; give two paths"
        )
    from killpoint.cli.documents import output_targets
    from killpoint.report.renderers import asked

    try:
        outputs = output_targets(asked(args), [json_target.path, html_target.path])
    except TargetError as exc:
        return cli_output.usage_error(f"killpoint: {exc}")
    accepted = {}
    try:
        if args.accept:
            accept = table.option("accept").parse(args.accept)
            accepted = accepted_groups(accept, config.runtime)
        elif args.rerun_failed:
            from killpoint.cli.rerun import carried_accepted

            accepted = carried_accepted(args.rerun_failed)
        for flag, target in (("--json", json_target), ("--report", html_target)):
            try:
                target.check()
                target.lock()
            except TargetError as exc:  # which of the paths given it is
                raise TargetError(f"{flag}: {exc}") from None
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
    from killpoint.report.failed_before import failed_before, search_report
    from killpoint.report.redact import redact
    from killpoint.stores import shown

    err, out = cli_output.stderr(), cli_output.stdout()
    # What failed last time runs early (--order informative): the report this run replaces,
    # and the runtime's search report.
    failed = failed_before([json_target.path, search_report(config.runtime)])
    camp = Campaign(config, accepted=accepted, cells=cells, failed=failed)
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
        for line in left_out(config):
            cli_output.plain(err, line)
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
        earlier = cells_in(json_target.path) if planned_nothing(result) else 0
        if earlier:
            # A report of no cell would replace one of cells (which --rerun-failed and
            # replay read) with nothing: the files are left as they were.
            from killpoint.report.document import to_document

            document = to_document(result)
            not_written, lost, written = False, False, list[str]()
            cli_output.plain(
                err,
                f"killpoint: no cell was planned, so the reports were left as they were: "
                f"{json_target.path} holds the {count(earlier, 'cell')} of an earlier campaign",
            )
        else:
            document, (not_written, lost, written) = write_reports(
                result, json_target, html_target, err, rerun=cells is not None, rerun_of=rerun_of
            )
            not_written |= ending.write_outputs(document, outputs or {}, written, err)
        if journal is not None:
            finish_journal(journal, lost, err)
    finally:
        hold.release()
    groups = result.groups()
    cli_output.summary(document, out)  # and the stopped line: the report's, as every output's
    narrow = narrowed(result, rerun=cells is not None)
    cli_output.show_unmet(unmet([*groups, *result.row_groups()], accepted, narrow), narrow, out)
    if rerun_of is not None and cells is not None:
        from killpoint.cli.rerun import incomplete_notice, show_changes

        show_changes(rerun_of, len(cells), out)
        incomplete_notice(args.rerun_failed, out)
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


def planned_nothing(result: CampaignResult) -> bool:
    """Whether the campaign planned no cell at all (every row skipped, or no point of
    those asked in any row) and was neither interrupted nor stopped."""
    return (
        result.planned == 0
        and not result.cells
        and not result.interrupted
        and result.stopped is None
    )


def cells_in(path: Path) -> int:
    """How many cells the report at `path` holds (0: none, or no report there)."""
    from killpoint.errors import KillpointError
    from killpoint.report.document import read_json

    if not path.is_file():
        return 0
    try:
        found = read_json(path).get("cells")
    except (KillpointError, OSError):  # not a report: nothing of a campaign's to keep
        return 0
    return len(found) if isinstance(found, list) else 0


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
    from killpoint.errors import ReportError
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


def add_parser(sub: Any) -> None:
    p = sub.add_parser("matrix", help="run the crash matrix (the main job)")
    # Every option from the table, none with a default here: a value the command line
    # did not give is taken from [tool.killpoint], a rerun's report, or the table.
    for o in table.on(table.CLI):
        if o.toml == table.BOOL:  # a switch, and its --no- form to turn off the file's
            p.add_argument(
                o.flag, action=argparse.BooleanOptionalAction, help=o.described(table.CLI)
            )
        else:
            p.add_argument(o.flag, metavar=o.metavar, help=o.described(table.CLI))
    p.set_defaults(func=run)


__all__ = ["add_parser", "run"]
