"""The `killpoint` command: its parser, the small commands, and how the process ends.

`matrix` lives in matrix.py, `replay` in replay.py, `check-adapter` in check.py, `corpus` in
corpus.py, `merge` in merge.py, `diff` in diff.py, what is printed in output.py; the exit
statuses in exit_codes.py; the options a campaign takes in killpoint.engine.option_table.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from types import FrameType
from typing import Any, NoReturn

from killpoint.adapters.registry import RUNTIME_HELP
from killpoint.cli import check as cli_check
from killpoint.cli import common, search_report, verbosity
from killpoint.cli import corpus as cli_corpus
from killpoint.cli import diff as cli_diff
from killpoint.cli import matrix as cli_matrix
from killpoint.cli import merge as cli_merge
from killpoint.cli import output as cli_output
from killpoint.cli import record as cli_record
from killpoint.cli import replay as cli_replay
from killpoint.cli.exit_codes import EXIT_NOT_WRITTEN, EXIT_USAGE, interrupted_status
from killpoint.engine.option_table import option
from killpoint.report import renderers

WORK_DIR_HELP = option("work_dir").described()


class Stopped(KeyboardInterrupt):
    """SIGTERM or SIGHUP (a CI job cancelled, a terminal closed): the Ctrl-C path, with the
    signal's own exit status."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


# -- scenarios ----------------------------------------------------------------------------


def _cmd_scenarios(args: argparse.Namespace) -> int:
    from killpoint import scenarios

    out = cli_output.stdout()
    width = max(len(name) for name, _ in scenarios.describe())
    for name, description in scenarios.describe():
        cli_output.plain(out, f"{name:<{width}}  {description}")
    return 0


# -- demo ---------------------------------------------------------------------------------


def _cmd_demo(args: argparse.Namespace) -> int:
    from killpoint.cli.demo import run_demo

    return run_demo(mode=args.mode, store=args.store, runtime=args.runtime)


# -- search -------------------------------------------------------------------------------


def _cmd_search(args: argparse.Namespace) -> int:
    from killpoint.engine.engine import Engine
    from killpoint.engine.options import CampaignConfig, EngineConfig
    from killpoint.engine.search import database_at, search
    from killpoint.errors import ConfigError, OptionError, TargetError

    try:
        config = CampaignConfig.from_options(
            runtime=args.runtime,
            scenarios=(args.scenario,),
            modes=(args.mode,),
            store=args.store,
            timeout=args.timeout,
            seed=args.seed,
        )
        config.check()
        found_targets = search_report.targets(args, config.runtime)
    except OptionError as exc:
        return cli_output.usage_error(exc.text(cli_check.LABELS.get(exc.option)))
    except ConfigError as exc:
        return cli_output.usage_error(str(exc))
    except TargetError as exc:
        return cli_output.usage_error(f"killpoint: {exc}")
    folder = search_report.database_folder(args)
    engine = Engine(EngineConfig(store=config.store, timeout=config.timeout))
    row = (config.runtime, args.scenario, args.mode, engine.stores.kind)
    out = cli_output.stdout()
    if not verbosity.quiet():
        cli_output.plain(
            out, f"searching {'/'.join(row)} (depth {args.depth}, seed {config.seed}) ..."
        )
    found = search(
        engine,
        row,
        depth=args.depth,
        max_examples=args.max_examples,
        seed=config.seed or 0,
        database=database_at(folder),
    )
    if not verbosity.quiet():
        cli_output.plain(out, f"ran {len(found.tried)} schedules")
    if found.minimal is None:
        cli_output.plain(out, "no schedule gave an unexpected verdict")
    else:
        m = found.minimal
        cli_output.plain(out, f"minimal failing schedule: {'+'.join(m.schedule)}")
        cli_output.plain(out, f"  {m.verdict}: {cli_output.cut(m.detail)}")
        cli_output.plain(out, f"  replay: {m.replay}")
    written = search_report.write(found, config, args.depth, folder, found_targets)
    cli_output.plain(out, f"written: {', '.join(written)}")
    return 0 if found.minimal is None else 1


# -- report -------------------------------------------------------------------------------


def _cmd_report(args: argparse.Namespace) -> int:
    """`killpoint report RESULTS.json [-o HTML] [--junit PATH] [--markdown PATH] ...`: any
    output of a saved report (killpoint.report.renderers), rendered from its document. The
    HTML is written when -o is given or no other format is asked for."""
    from killpoint.cli import ending
    from killpoint.cli.documents import diff_base, output_targets
    from killpoint.errors import ReportError, TargetError
    from killpoint.report.document import read_json
    from killpoint.report.html import render_report
    from killpoint.report.redact import redact
    from killpoint.report.renderers import asked
    from killpoint.report.targets import Target, same_file

    if args.from_journal is not None or args.results is None:
        if args.results is not None or args.from_journal is None:
            return cli_output.usage_error(
                "killpoint: give `report` a matrix JSON, or --from-journal JOURNAL, not both"
                if args.results is not None
                else "killpoint: give `report` a matrix JSON, or --from-journal JOURNAL"
            )
        from killpoint.cli import rebuild

        return rebuild.run(args)
    source = Path(args.results)
    others = asked(args)
    html = args.output is not None or not others
    out = Path(args.output) if args.output else source.with_suffix(".html")
    if html and same_file(source, out):
        return cli_output.usage_error(
            f"killpoint: -o {str(out)!r} is the report's own JSON; give another path"
        )
    from killpoint.errors import DiffError

    try:
        document = read_json(source)
        base = diff_base(args.diff_base, document, str(source))
    except (ReportError, DiffError) as exc:
        return cli_output.usage_error(str(exc))
    target = Target(out)
    written: list[str] = []
    try:
        found = output_targets(others, [source, *([out] if html else [])])
        if html:
            target.check()
            # As a campaign and a rebuild take it: two writers of one HTML are kept apart,
            # and the lock file a killed campaign left goes as this one is let go.
            target.lock()
            page = render_report(document, diff_base=base, diff_base_name=args.diff_base or "")
            target.write(redact(page))
            written.append(str(out.absolute()))
    except TargetError as exc:
        return cli_output.usage_error(f"killpoint: {exc}")
    except OSError as exc:
        return cli_output.usage_error(
            f"killpoint: cannot write {str(out)!r}: {exc.strerror or exc}"
        )
    finally:
        target.close()
    missed = ending.write_outputs(document, found, written, cli_output.stderr())
    # As `matrix`, `merge` and `report --from-journal` say it (a fallback among them): one
    # line a script can find.
    if written:
        cli_output.plain(cli_output.stdout(), f"written: {', '.join(written)}")
    return EXIT_NOT_WRITTEN if missed else 0


# -- parser -------------------------------------------------------------------------------


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be at least 1")
    return value


class Parser(argparse.ArgumentParser):
    """argparse with its errors in one line that names the fix, as every other bad input
    of killpoint's (its default prints the whole usage block first)."""

    def error(self, message: str, *, help_of: str | None = None) -> NoReturn:
        from killpoint.values.shown import line

        see = help_of or self.prog
        self.exit(EXIT_USAGE, f"{line(f'{self.prog}: {message}')} (see `{see} --help`)\n")

    def parse_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> argparse.Namespace:
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            # What a subcommand did not know reaches the top parser: point at the help of
            # the command it was given to (`killpoint matrix --help`), with its nearest option.
            command = self._command_parser(parsed)
            message = f"unrecognized arguments: {' '.join(extras)}"
            near = _near_options(command, extras)
            if near:
                message += f"; did you mean {' or '.join(near)}?"
            self.error(message, help_of=command.prog)
        return parsed

    def _command_parser(self, parsed: argparse.Namespace) -> argparse.ArgumentParser:
        """The innermost (sub)command's parser that `parsed` went through."""
        parser: argparse.ArgumentParser = self
        while True:
            chosen = None
            for action in parser._actions:
                if isinstance(action, argparse._SubParsersAction):
                    name = getattr(parsed, action.dest, None)
                    chosen = action.choices.get(name) if isinstance(name, str) else None
            if chosen is None:
                return parser
            parser = chosen


def _near_options(parser: argparse.ArgumentParser, extras: Sequence[str]) -> list[str]:
    """The options of `parser` closest to each unknown option among `extras` (`--timout`:
    `--timeout`)."""
    from killpoint.values.near import nearest

    known = [o for a in parser._actions for o in a.option_strings if o.startswith("--")]
    near: list[str] = []
    for extra in extras:
        if extra.startswith("--"):
            match = nearest(extra.partition("=")[0], known)
            if match is not None and match not in near:
                near.append(match)
    return near


class CommandParser(Parser):
    """A subcommand's parser: every one takes the common options (killpoint.cli.common)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs, parents=[*kwargs.pop("parents", ()), common.parent()])


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="killpoint",
        description="Crash-consistency harness for durable agent runtimes.",
    )
    parser.add_argument("--version", action=common.VersionAction)
    sub = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", parser_class=CommandParser
    )

    p = sub.add_parser("scenarios", help="list the built-in scenarios, one line each")
    p.set_defaults(func=_cmd_scenarios)

    cli_matrix.add_parser(sub)
    cli_replay.add_parser(sub, WORK_DIR_HELP)
    cli_check.add_parser(sub, WORK_DIR_HELP)
    cli_corpus.add_parser(sub, WORK_DIR_HELP)
    cli_merge.add_parser(sub)
    cli_diff.add_parser(sub)
    cli_record.add_parser(sub)

    p = sub.add_parser("demo", help="the classic story: start, crash, inspect, continue, compare")
    p.add_argument(
        "--mode", help="a checkpoint mode of the runtime (default: its first that persists mid-run)"
    )
    p.add_argument("--store", default="sqlite", help="sqlite, or a postgresql+psycopg:// URL")
    p.add_argument("--runtime", default="reference", help=RUNTIME_HELP)
    p.set_defaults(func=_cmd_demo)

    p = sub.add_parser("search", help="search crash schedules with hypothesis; shrink a failure")
    p.add_argument("--runtime", default="reference", help=RUNTIME_HELP)
    p.add_argument("--scenario", default="research")
    p.add_argument("--mode", default="tool-batch", help="a checkpoint mode of the runtime")
    p.add_argument("--store", help=option("store").described())
    p.add_argument("--depth", type=_positive_int, default=2, help="most crashes per schedule")
    p.add_argument("--max-examples", type=_positive_int, default=30)
    p.add_argument("--seed", default="0")
    p.add_argument("--timeout", help=option("timeout").described())
    search_report.add_options(p)
    p.set_defaults(func=_cmd_search)

    p = sub.add_parser(
        "report", help="render a saved JSON as the HTML report, JUnit, Markdown or text"
    )
    p.add_argument("results", nargs="?", help="a matrix JSON")
    p.add_argument(
        "-o",
        "--output",
        help="where the HTML goes (default: beside the JSON, .html, unless only other "
        "formats are asked for)",
    )
    p.add_argument(
        "--from-journal",
        metavar="JOURNAL",
        help="rebuild the JSON (beside the journal) and the HTML of a campaign that did not "
        "write them, from the .journal.jsonl it left; with the formats below and "
        "--diff-base as for a saved JSON",
    )
    p.add_argument(
        "--diff-base",
        metavar="BASE.json",
        help="show what changed against this earlier report (as `killpoint diff` does)",
    )
    renderers.add_options(p)
    p.set_defaults(func=_cmd_report)
    return parser


def _raise_stopped(signum: int, frame: FrameType | None) -> None:
    raise Stopped(signum)


def main(argv: Sequence[str] | None = None) -> int:
    # The user's own modules (adapters, scenarios) import from the current folder, in
    # this process and in every worker forked for it; last on the path, so that a
    # project's own `runtime/` or `scenarios/` never stands in for an installed module.
    if os.getcwd() not in sys.path:
        sys.path.append(os.getcwd())
    previous: dict[signal.Signals, Any] = {}
    if threading.current_thread() is threading.main_thread():
        # SIGTERM and SIGHUP take the Ctrl-C path: raised in the main thread, where the
        # campaign waits, they kill every worker and write what finished. One ignored by
        # whoever started killpoint (nohup: SIGHUP) stays ignored, as SIGINT does.
        for signum in (signal.SIGTERM, signal.SIGHUP):
            if signal.getsignal(signum) is not signal.SIG_IGN:
                previous[signum] = signal.signal(signum, _raise_stopped)
    try:
        args = build_parser().parse_args(argv)
        common.apply(args)
        return int(args.func(args))
    except KeyboardInterrupt as exc:
        # Before or after the campaign's own handling (start-up, writing): quietly.
        from killpoint.workers.processes import kill_all

        kill_all()
        return interrupted_status(getattr(exc, "signum", None))
    finally:
        for stopped, handler in previous.items():
            signal.signal(stopped, handler)


def entry() -> None:
    """The `killpoint` command: main(), then, as this process ends here, stop the
    forkserver its workers came from (main() called from Python keeps it for the next
    campaign). A command that started no worker never imported the module."""
    try:
        code = main()
    finally:
        processes = sys.modules.get("killpoint.workers.processes")
        if processes is not None:
            processes.stop_forkserver()
        mounts = sys.modules.get("killpoint.powerloss.mount")
        if mounts is not None:  # the helper that forks power-loss mount servers
            mounts.stop_helper()
    sys.exit(code)


if __name__ == "__main__":
    entry()
