"""`killpoint diff BASE.json HEAD.json [--markdown PATH]`: what a campaign changed against
an earlier one (killpoint.report.diff); exit 1 when head has a failing group base had not,
so that a pull request's job fails on what it brought, not on what main already had."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from killpoint.cli import output as cli_output
from killpoint.cli.exit_codes import EXIT_UNEXPECTED


def run(args: argparse.Namespace) -> int:
    from killpoint.errors import DiffError, ReportError, TargetError
    from killpoint.report.diff import compare
    from killpoint.report.diff_text import lines, markdown
    from killpoint.report.document import read_json
    from killpoint.report.targets import Target

    try:
        base = read_json(Path(args.base))
        head = read_json(Path(args.head))
        diff = compare(base, head, base_name=args.base, head_name=args.head)
        target = Target(Path(args.markdown)) if args.markdown else None
        if target is not None:
            target.check()
    except (ReportError, DiffError) as exc:
        return cli_output.usage_error(str(exc))
    except TargetError as exc:
        return cli_output.usage_error(f"killpoint: --markdown={args.markdown!r}: {exc}")
    out = cli_output.stdout()
    for line in lines(diff):
        cli_output.plain(out, line)
    if target is not None:
        target.write(markdown(diff))
        cli_output.plain(out, f"written: {target.path.absolute()}")
    return EXIT_UNEXPECTED if diff.regressed else 0


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "diff", help="compare two reports: new, fixed, still failing and flaky cells and groups"
    )
    p.add_argument("base", metavar="BASE.json", help="the earlier report (main's)")
    p.add_argument("head", metavar="HEAD.json", help="the report to judge (the pull request's)")
    p.add_argument(
        "--markdown", metavar="PATH", help="also write the diff as Markdown (a PR comment)"
    )
    p.set_defaults(func=run)


__all__ = ["add_parser", "run"]
