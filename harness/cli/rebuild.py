"""`killpoint report --from-journal JOURNAL`: the reports of a campaign that did not write
them (killed, or its disk full at the end), rebuilt from the journal it left beside its
JSON.

The JSON goes where the campaign meant it to go (beside the journal), the HTML beside it
or to `-o`. A journal whose campaign still runs (it holds the JSON's lock) is refused.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from killpoint.cli import output as cli_output
from killpoint.values.sentences import count


def run(args: argparse.Namespace) -> int:
    from killpoint.errors import ReportError, TargetError
    from killpoint.report.journal import read_journal, write_rebuilt
    from killpoint.report.targets import Target, same_file

    path = Path(args.from_journal)
    try:
        left = read_journal(path)
    except ReportError as exc:
        return cli_output.usage_error(str(exc))
    name = left.json_name
    if not name or Path(name).name != name or name in (".", ".."):
        name = path.name.removesuffix(".jsonl").removesuffix(".journal") + ".json"
    json_path = path.parent / name
    html_path = Path(args.output) if args.output else json_path.with_suffix(".html")
    if same_file(json_path, html_path) or same_file(path, html_path):
        return cli_output.usage_error(
            f"killpoint: -o {str(html_path)!r} is the journal or its JSON; give another path"
        )
    target = Target(json_path)
    try:
        target.check()
        target.lock()
    except TargetError as exc:
        return cli_output.usage_error(
            f"killpoint: {exc} (its journal {str(path)!r} is still being written)"
        )
    try:
        write_rebuilt(left, json_path, html_path)
    except OSError as exc:
        return cli_output.usage_error(
            f"killpoint: cannot write the rebuilt reports: {exc.strerror or exc}"
        )
    finally:
        target.close()
    path.unlink(missing_ok=True)
    out = cli_output.stdout()
    state = "finished" if left.finished else "was stopped"
    cli_output.plain(
        out,
        f"rebuilt {count(left.cells, 'cell')} of a campaign that {state} before writing its reports "
        f"(the journal is removed)",
    )
    cli_output.plain(out, f"written: {json_path.absolute()}, {html_path.absolute()}")
    return 0


__all__ = ["run"]
