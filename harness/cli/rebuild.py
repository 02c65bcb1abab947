"""`killpoint report --from-journal JOURNAL`: the reports of a campaign that did not write
them (killed, or its disk full at the end), rebuilt from the journal it left beside its
JSON.

The JSON goes where the campaign meant it to go (beside the journal), the HTML beside it
or to `-o`, and the other formats asked for (`--junit`, `--markdown`, `--text`,
`--annotations`) where they say, as `killpoint report` writes them from a saved JSON (its
`--diff-base` too). A journal whose campaign still runs (it holds the JSON's lock) is
refused, and so is one that names itself as the JSON or the HTML, or a JSON (an HTML not
given with `-o`) that is an existing file other than a killpoint matrix report; so is
another format's path that is one of those files or cannot be written, and an HTML
another campaign is writing (it holds the HTML's lock). A refusal writes nothing.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from killpoint.cli import output as cli_output
from killpoint.cli.exit_codes import EXIT_NOT_WRITTEN
from killpoint.values.sentences import count

# What a file killpoint may replace looks like (the start of it, read with a bound):
# a matrix report's JSON names its schema at the top; its HTML names killpoint as the
# generator in its head.
JSON_REPORT = "json"
HTML_REPORT = "html"
HTML_GENERATOR = b'<meta name="generator" content="killpoint killpoint.matrix/'
HTML_HEAD_BYTES = 4096


def not_a_report(target: Path, kind: str) -> str | None:
    """Why the existing file at `target` is not one a rebuild may replace, or None (it
    does not exist, or it is a killpoint matrix report: the campaign was about to replace
    it with its own). The rule is the file's own shape: a report of any campaign may be
    replaced (as the campaign itself would have), anything else is someone else's."""
    import os
    import stat

    from killpoint.errors import InputError
    from killpoint.report.document import READABLE
    from killpoint.values.input_files import load_json

    try:
        mode = os.stat(target).st_mode  # a symlink: what it names is what gets written
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"cannot be looked at ({exc.strerror or exc})"
    if not stat.S_ISREG(mode):
        return "exists and is not a regular file"  # never read: a FIFO would block
    if kind == HTML_REPORT:
        try:
            with open(target, "rb") as f:
                head = f.read(HTML_HEAD_BYTES)
        except OSError as exc:
            return f"cannot be read ({exc.strerror or exc})"
        return None if HTML_GENERATOR in head else "exists and is not a killpoint HTML report"
    try:
        document = load_json(target)
    except InputError:
        document = None
    if isinstance(document, dict) and document.get("schema") in READABLE:
        return None
    return "exists and is not a killpoint matrix report"


def run(args: argparse.Namespace) -> int:
    from killpoint.cli import ending
    from killpoint.cli.documents import diff_base, output_targets
    from killpoint.errors import DiffError, ReportError, TargetError
    from killpoint.report.journal import read_journal, write_rebuilt
    from killpoint.report.renderers import asked
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
    # The JSON's name comes from the journal, a file anyone may have edited: it may only
    # name a new file, or a report the campaign would have replaced itself; never the
    # journal (written over, then removed as "rebuilt": the reports lost, exit 0), and
    # never a file of someone else's.
    if same_file(json_path, path):
        return cli_output.usage_error(
            f"killpoint: {str(path)!r} names itself as the JSON to rebuild ('json': {name!r} "
            "in its first line); set that to the name of a new file"
        )
    if args.output is None and same_file(path, html_path):
        return cli_output.usage_error(
            f"killpoint: the HTML beside the JSON {name!r} would be the journal "
            f"{str(path)!r} itself; give -o to choose where the HTML goes"
        )
    if same_file(json_path, html_path) or same_file(path, html_path):
        return cli_output.usage_error(
            f"killpoint: -o {str(html_path)!r} is the journal or its JSON; give another path"
            if args.output is not None
            else f"killpoint: the HTML beside the JSON {name!r} would be the JSON itself; "
            "give -o to choose where the HTML goes"
        )
    foreign = not_a_report(json_path, JSON_REPORT)
    if foreign is not None:
        return cli_output.usage_error(
            f"killpoint: {str(json_path)!r}, where the journal's first line puts the JSON, "
            f"{foreign}; move it away, or set 'json' in the journal's first line to the "
            "name of a new file"
        )
    # An HTML path given with -o is the user's own choice, as `killpoint matrix --report`.
    foreign = None if args.output is not None else not_a_report(html_path, HTML_REPORT)
    if foreign is not None:
        return cli_output.usage_error(
            f"killpoint: {str(html_path)!r}, where the HTML goes beside the JSON, {foreign}; "
            "give -o to choose where the HTML goes, or move it away"
        )
    # What `killpoint report` checks before it writes a saved JSON's outputs, checked here
    # the same way and as early: a refusal leaves no report half-written.
    html = Target(html_path)
    try:
        html.check()
    except TargetError as exc:
        named = "-o: " if args.output is not None else ""
        return cli_output.usage_error(f"killpoint: {named}{exc}")
    try:
        others = output_targets(asked(args), [path, json_path, html_path])
        base = diff_base(args.diff_base, left.document, str(path))
    except TargetError as exc:
        return cli_output.usage_error(f"killpoint: {exc}")
    except (ReportError, DiffError) as exc:
        return cli_output.usage_error(str(exc))
    target = Target(json_path)
    try:
        target.check()
    except TargetError as exc:
        return cli_output.usage_error(f"killpoint: the JSON beside the journal: {exc}")
    try:
        target.lock()
    except TargetError:
        return cli_output.usage_error(
            f"killpoint: the campaign that writes {str(path)!r} is still running (it holds "
            f"{str(json_path)!r}); wait for it to end: it writes its reports itself"
        )
    # The HTML too, as a campaign locks it: a campaign writing it now is not raced, and the
    # lock file a killed campaign left beside it goes once this rebuild lets it go.
    try:
        html.lock()
    except TargetError as exc:
        target.close()
        named = "-o: " if args.output is not None else ""
        return cli_output.usage_error(f"killpoint: {named}{exc}")
    written = [str(json_path.absolute()), str(html_path.absolute())]
    try:
        write_rebuilt(left, json_path, html_path, base, args.diff_base or "")
        # The JSON is whole: a format that fails from here on is said and goes to a
        # fallback, as `killpoint report` does, and the JSON renders it again.
        missed = ending.write_outputs(left.document, others, written, cli_output.stderr())
    except OSError as exc:
        return cli_output.usage_error(
            f"killpoint: cannot write the rebuilt reports: {exc.strerror or exc}"
        )
    finally:
        html.close()
        target.close()
    path.unlink(missing_ok=True)
    out = cli_output.stdout()
    state = "finished" if left.finished else "was stopped"
    cli_output.plain(
        out,
        f"rebuilt {count(left.cells, 'cell')} of a campaign that {state} before writing its reports "
        f"(the journal is removed)",
    )
    cli_output.plain(out, f"written: {', '.join(written)}")
    return EXIT_NOT_WRITTEN if missed else 0


__all__ = ["run"]
