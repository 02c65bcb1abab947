"""`killpoint merge SHARD.json ... -o ALL.json --report ALL.html [--junit ALL.xml ...]`:
the shards of one campaign (`matrix --shard K/N`, pytest `--crash-shard K/N`) as one
report, and any other format of it (killpoint.report.renderers: JUnit, Markdown, the
terminal's summary, GitHub annotations), so a sharded CI job gets every output an
unsharded one does; under GitHub Actions the step summary and annotations too.

Exit 2 when the files are not the shards of one campaign, one is missing (unless
--partial), one lists a cell twice, or they hold more than --max-input-mb in all;
otherwise as the unsharded campaign would have ended: 1 on an unexpected
verdict, 0 when every one is expected or accepted.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from killpoint.cli import output as cli_output
from killpoint.cli.exit_codes import EXIT_NOT_WRITTEN, EXIT_UNEXPECTED
from killpoint.report.renderers import add_options
from killpoint.values.input_files import MERGE_BYTES, MIB
from killpoint.values.sentences import count


def run(args: argparse.Namespace) -> int:
    from killpoint.cli import ending
    from killpoint.cli.documents import output_targets, targets, write_all
    from killpoint.errors import DiffError, MergeError, ReportError, TargetError
    from killpoint.report.diff import compare
    from killpoint.report.document import read_json
    from killpoint.report.merge import merge, read_shards
    from killpoint.report.redact import redact_argv
    from killpoint.report.renderers import asked

    paths = [Path(p) for p in args.shards]
    out = Path(args.output)
    if any(out.exists() and out.samefile(p) for p in paths if p.exists()):
        return cli_output.usage_error(
            f"killpoint: -o {str(out)!r} is one of the shards; give another path"
        )
    try:
        documents = read_shards(paths, args.max_input_mb * MIB)
        document = merge(
            documents,
            command=" ".join(redact_argv(["killpoint", *sys.argv[1:]])),
            partial=args.partial,
        )
        base = read_json(Path(args.diff_base)) if args.diff_base else None
        if base is not None:
            compare(base, document, base_name=args.diff_base, head_name=str(out))
        found = targets(out, Path(args.report) if args.report else None)
        others = output_targets(asked(args), [t.path for t in found])
    except (MergeError, ReportError, DiffError) as exc:
        return cli_output.usage_error(str(exc))
    except TargetError as exc:
        return cli_output.usage_error(f"killpoint: {exc}")
    written = write_all(document, found, diff_base=base, diff_base_name=args.diff_base or "")
    stdout, stderr = cli_output.stdout(), cli_output.stderr()
    not_written = ending.write_outputs(document, others, written, stderr)
    summary = document["summary"]
    cli_output.plain(
        stdout,
        f"merged {count(len(documents), 'shard')}: {count(summary['cells'], 'cell')}, "
        f"{summary['unexpected']} unexpected in {count(summary['groups'], 'group')}",
    )
    if document.get("narrowed"):
        cli_output.plain(stdout, f"narrowed: {document['narrowed']}")
    ending.github(document, None, written, stdout, stderr)
    cli_output.plain(stdout, f"written: {', '.join(written)}")
    if not_written:
        return EXIT_NOT_WRITTEN
    failing = summary["unexpected"] or summary.get("without_crash")
    return EXIT_UNEXPECTED if failing else 0


def _megabytes(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of MiB") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be at least 1")
    return value


def add_parser(sub: Any) -> None:
    p = sub.add_parser("merge", help="merge the JSON of a campaign's shards into one report")
    p.add_argument("shards", nargs="+", metavar="SHARD.json", help="every shard's JSON")
    p.add_argument("-o", "--output", required=True, metavar="ALL.json", help="the merged JSON")
    p.add_argument("--report", metavar="ALL.html", help="the merged HTML report")
    p.add_argument(
        "--partial",
        action="store_true",
        help="merge the shards given even if some are missing (the report names them)",
    )
    p.add_argument(
        "--max-input-mb",
        type=_megabytes,
        default=MERGE_BYTES // MIB,
        metavar="MB",
        help=f"the most the shard files may hold in all (default: {MERGE_BYTES // MIB})",
    )
    p.add_argument(
        "--diff-base",
        metavar="BASE.json",
        help="show in the HTML what changed against this earlier report (killpoint diff)",
    )
    add_options(p)
    p.set_defaults(func=run)


__all__ = ["add_parser", "run"]
