"""The reference parts of the documentation, generated from the code so they cannot drift.

A page holds a generated block between two markers:

    <!-- generated: NAME -->
    ...
    <!-- end generated: NAME -->

`python docs/generate.py` fills every such block of README.md and docs/**/*.md from the
function BLOCKS names; `--check` changes nothing and exits 1 naming each stale block
(tests/test_docs_reference.py runs it). Prose around a block stays hand-written.

Each block reads one registry: the crash-point kinds (killpoint.kinds), the verdicts,
finding kinds and severity table (killpoint.values.findings), the built-in scenarios, the
report schema (killpoint.report.report_schema), the corpus manifest's schema, the
`killpoint` parser, the pytest plugin's options, and the campaign's options with the
fronts that take each (killpoint.engine.option_table, the table every front is built from,
read by `campaign_options()` and `project_keys()`).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
BEGIN = re.compile(r"<!-- generated: ([a-z-]+) -->\n")
END = "<!-- end generated: {name} -->"
WIDTH = 96  # usage lines are wrapped here, whatever the terminal


def cell(text: object) -> str:
    """Text made safe for one Markdown table cell."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def table(head: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "| " + " | ".join("---" for _ in head) + " |"]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def code(text: str) -> str:
    """Inline code; text with a `|` stays plain, since a table cell must escape it and
    inside backticks GitHub and Python-Markdown read the escape differently."""
    return text if "|" in text else f"`{text}`"


# -- crash points -------------------------------------------------------------------------


def crash_points() -> str:
    from killpoint import kinds
    from killpoint.kinds.base import shape

    rows = []
    for kind in kinds.REGISTRY.values():
        rows.append(
            (
                code(shape(kind.name, kind.arity)),
                "yes" if kind.kills else "no",
                ", ".join(code(g) for g in kind.groups),
                "yes" if kind.follows else "",
                kind.meaning,
            )
        )
    return table(("point", "kills", "`--points` groups", "depth 2", "meaning"), rows)


def point_groups() -> str:
    from killpoint import kinds

    groups: dict[str, list[str]] = {}
    for kind in kinds.REGISTRY.values():
        for group in kind.groups:
            groups.setdefault(group, []).append(kind.name)
    rows = [(code(g), ", ".join(code(n) for n in names)) for g, names in groups.items()]
    return table(("group", "kinds"), rows)


# -- verdicts and findings ----------------------------------------------------------------


def verdicts() -> str:
    from killpoint.values.findings import VERDICTS

    return table(
        ("verdict", "glyph", "meaning"), ((code(v.name), v.glyph, v.meaning) for v in VERDICTS)
    )


def finding_kinds() -> str:
    from killpoint.values.findings import KINDS

    rows = (
        (code(k.name), k.severity, code(k.verdict), k.meaning)
        for k in sorted(KINDS.values(), key=lambda k: k.name)
    )
    return table(("kind", "severity", "verdict it sets", "meaning"), rows)


def severity() -> str:
    from killpoint.values.findings import HARM_OF, HARMS

    rows = []
    for harm in HARMS:
        kinds = ", ".join(code(k) for k, h in HARM_OF.items() if h == harm.name)
        rows.append((harm.severity, harm.what, kinds))
    return table(("severity", "harm", "kinds"), rows)


# -- scenarios ----------------------------------------------------------------------------


def scenarios() -> str:
    from killpoint import scenarios as builtin

    return table(("scenario", "what it does"), ((code(n), d) for n, d in builtin.describe()))


# -- the report's JSON ---------------------------------------------------------------------

# What each field of a report means. The types come from the schema the reports are checked
# against; a field the schema has and this table lacks (or the reverse) stops the generator.
FIELDS: dict[str, dict[str, str]] = {
    "TOP": {
        "schema": "`killpoint.matrix/2`",
        "command": "the command line that ran the campaign (secrets masked)",
        "seed": "the seed of random sampling",
        "runtime": "the runtime under test",
        "store": "`sqlite`, or the PostgreSQL URL with its password masked",
        "scenarios": "the scenario names the campaign ran",
        "modes": "the checkpoint modes",
        "points": "the `--points` given",
        "depth": "1, or 2: the resumed run crashed too",
        "versions": "Python's and each library's version",
        "interrupted": "the campaign was stopped before its end",
        "summary": "the figures (below)",
        "excluded_from_comparison": "the fields never compared with the baseline (ids, timestamps)",
        "causes": "the cells clustered by the findings that occur together, most impact first (below)",
        "groups": "the findings grouped by kind, tool and path (below)",
        "accepted": "the accept file's entries, by group key",
        "skipped": "rows not run, and explicit points a row lacks, each with the reason",
        "baselines": "one per row: its uninterrupted run",
        "planned_cells": "every row the campaign planned, and its cells' schedules (`null`: stopped before that row was planned)",
        "cells": "every cell that ran (below)",
        "shard": "`{index: K, count: N}` for a shard's report",
        "merged_from": "the shards' files of a merged report",
        "rerun_of": "for `--rerun-failed`: the earlier report and what changed since",
        "stopped": "for a campaign stopped early (`--fail-fast`, `--budget`): why, when, and what it covered (below)",
        "search": "for a `killpoint search` report: the cells `tried`, the `minimal` one, the `database`",
    },
    "SHARD": {"index": "K, from 1", "count": "N"},
    "RERUN_OF": {
        "report": "the earlier report's path",
        "still_failing": "cell ids still unexpected",
        "now_passing": "cell ids now passing",
    },
    "STOPPED": {
        "reason": "`fail-fast`, `budget`, or a caller's own stop condition (a merge of shards that stopped for different reasons: theirs, joined by commas)",
        "seconds": "when it stopped, after the campaign began",
        "budget": "the `--budget` in seconds, or `null`",
        "ran": "cells that ran",
        "planned": "cells planned",
        "rows": "per planned row, what ran (below)",
    },
    "STOPPED_ROW": {
        "runtime": "the row's runtime",
        "scenario": "the row's scenario",
        "mode": "the row's mode",
        "store": "the row's store kind",
        "cells": "its cells planned",
        "ran": "its cells that ran",
        "planned": "`false`: the campaign stopped before the row's baseline was done",
        "baseline_failed": "`true`: the row's baseline failed, so no crash cell was planned (its one cell carries the failure, without a crash); it has no kind and is never covered",
        "kinds": "the kinds of point planned in the row",
        "covered": "those kinds that ran at least one cell",
    },
    "CELL": {
        "id": "`RUNTIME/SCENARIO/MODE/STORE/SCHEDULE`",
        "runtime": "the row's runtime",
        "scenario": "the row's scenario",
        "mode": "the row's checkpoint mode",
        "store": "the row's store kind",
        "schedule": "the crash points, in order (two at depth 2)",
        "verdict": "the verdict (reference: verdicts)",
        "expected": "the verdict is allowed for this mode and point",
        "duplicates": "side effects repeated",
        "bound": "repeats allowed",
        "seconds": "the cell's wall time",
        "detail": "why, in a line",
        "findings": "every finding of the cell (below)",
        "sides": "what the two compared sides are, in words",
        "diff": "the first differences from the baseline",
        "store_at_crash": "checkpoints and, per run, status, message count, `last_checkpoint_at_message_index` and tool executions at the crash",
        "stderr_tail": "the workers' output, its end",
        "timeline": "`[seconds, text, kind, lane]` events",
        "exit_codes": "the workers' exit statuses (-9: SIGKILL)",
        "replay": "the command that reruns the cell",
        "kept": "the cell's folder when it was kept, else `null`",
        "accepted": "every unexpected finding is in an accepted group",
    },
    "FINDING": {
        "kind": "the finding kind (reference: finding kinds)",
        "severity": "`high`, `medium`, `low` or `info`",
        "verdict": "the verdict this kind sets",
        "expected": "allowed here (an expected loss, a repeat within the bound)",
        "sentence": "one plain sentence",
        "path": "where: `runs[0].tool_executions`, `ledger`, `store`...",
        "tool": "the tool it is about, if any",
        "evidence": "ledger lines, store rows",
        "group": "its group's key",
        "sides": "what `expected_value` and `actual_value` are, in words",
        "facts": "what the sentence was made from",
        "accepted": "the accepted group's reason, when accepted",
    },
    "GROUP": {
        "key": "kind, tool and path pattern: what `--accept` names",
        "kind": "the finding kind",
        "tool": "the tool, for kinds about a tool",
        "path": "the path with its numbers made `*`",
        "severity": "the kind's severity",
        "verdict": "the verdict it sets",
        "meaning": "the kind's meaning",
        "count": "how many cells (or rows)",
        "cells": "the cells' ids",
        "rows": "for a group found without a crash: the rows",
        "example": "one example sentence",
        "example_cell": "the example's cell",
        "example_row": "the example's row, for a group found without a crash",
        "replay": "the example's replay command",
        "accepted": "the accepted reason, when accepted",
        "failing": "its cells fail the campaign (unexpected, not accepted, above low severity)",
        "verdicts": "how many of its cells have each verdict",
    },
    "CAUSE": {
        "key": "the cause's key: its telling group's key",
        "name": "the cause's name: its most telling group's kind and path",
        "kind": "the telling finding kind",
        "sentence": "what happened, in one sentence made from the cells' evidence",
        "severity": "the most severe of its groups' severities",
        "verdicts": "how many of its cells have each verdict",
        "count": "how many cells",
        "failing_cells": "its cells that fail the campaign",
        "low_cells": "its cells unexpected at low severity only",
        "accepted_cells": "its cells whose findings are all accepted",
        "rows": "the rows it touches",
        "points": "how many of its cells are at each crash-point kind",
        "cells": "the cells' ids",
        "groups": "the keys of its groups: the symptoms that come with it",
        "example": "one example sentence",
        "example_cell": "the example's cell",
        "replay": "the example's replay command",
        "accepted": "the accepted reason, when every failing group of it is accepted",
    },
    "BASELINE": {
        "runtime": "the row's runtime",
        "scenario": "the row's scenario",
        "mode": "the row's mode",
        "store": "the row's store kind",
        "checkpoints": "checkpoints the uninterrupted run wrote",
        "seconds": "its wall time",
        "problem": "why it could not run, if so",
        "nondeterministic": "how its two runs differed, if they did",
        "writes_lag": "the mode's writes lag the run",
        "trace_note": "a note on the trace the points were planned from",
        "not_planned": "`true`: it failed, so the row's crash cells were not planned; its one cell carries the failure without a crash",
        "cells_not_planned": "for a row not planned: the crash cells it would have had, `null` when its run did not reach its end",
    },
    "SKIPPED": {
        "runtime": "the row's runtime",
        "scenario": "the row's scenario",
        "mode": "the row's mode",
        "reason": "why it was skipped",
        "point": "the explicit point skipped, if it is one",
        "store": "the row's store kind",
    },
    "ACCEPTED": {"reason": "why it is accepted", "link": "an issue, if given"},
    "PLANNED": {
        "runtime": "the row's runtime",
        "scenario": "the row's scenario",
        "mode": "the row's mode",
        "store": "the row's store kind",
        "schedules": "its cells' schedules; `null` when the campaign stopped before planning them",
    },
}
SECTIONS = (
    ("TOP", "The document"),
    ("CELL", "A cell (`cells[]`)"),
    ("FINDING", "A finding (`cells[].findings[]`)"),
    ("CAUSE", "A cause (`causes[]`)"),
    ("GROUP", "A group (`groups[]`, `without_crash[]`)"),
    ("BASELINE", "A baseline (`baselines[]`)"),
    ("SKIPPED", "A skip (`skipped[]`)"),
    ("PLANNED", "A planned row (`planned_cells[]`)"),
    ("ACCEPTED", "An accepted entry (`accepted{}`)"),
    ("SHARD", "`shard`"),
    ("RERUN_OF", "`rerun_of`"),
    ("STOPPED", "`stopped`"),
    ("STOPPED_ROW", "A row of `stopped` (`stopped.rows[]`)"),
)


def report_schema() -> str:
    from killpoint.report import document, report_schema

    parts = [f"Schema `{document.SCHEMA}`. A field may be absent in an older report; present, "
             "it has the type below or the report is refused (exit 2)."]  # fmt: skip
    for name, title in SECTIONS:
        fields: dict[str, Any] = getattr(report_schema, name)
        meaning = FIELDS[name]
        missing = set(fields) - set(meaning)
        extra = set(meaning) - set(fields)
        if missing or extra:
            raise SystemExit(
                f"docs/generate.py: report_schema.{name}: say what {sorted(missing)} mean "
                f"in FIELDS, and drop {sorted(extra)}"
            )
        rows = [
            (code(k), report_schema._type_names(spec), meaning[k]) for k, spec in fields.items()
        ]
        parts += [f"#### {title}", table(("field", "type", "meaning"), rows)]
    return "\n\n".join(parts)


def corpus_manifest() -> str:
    from killpoint.corpus.manifest import MANIFEST_SCHEMA

    return "```json\n" + json.dumps(MANIFEST_SCHEMA, indent=2) + "\n```"


# -- the command line ----------------------------------------------------------------------

# Parts of a help text that depend on the machine the generator runs on.
MACHINE = (re.compile(r", here \d+"), "")


def _help(text: str | None) -> str:
    if not text or text == argparse.SUPPRESS:
        return ""
    return MACHINE[0].sub(MACHINE[1], text % {"default": "?", "prog": "killpoint"})


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, tuple[str, argparse.ArgumentParser]]:
    """Each subcommand's parser, with its one-line help, nested ones as `corpus record`."""
    found: dict[str, tuple[str, argparse.ArgumentParser]] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            for name, sub in action.choices.items():
                found[name] = (helps.get(name, ""), sub)
                for inner, pair in _subcommands(sub).items():
                    found[f"{name} {inner}"] = pair
    return found


COMMON = {"-h", "--help", "--version", "-q", "--quiet", "-v", "--verbose", "--color"}


def _usage(sub: argparse.ArgumentParser) -> str:
    formatter = argparse.HelpFormatter(sub.prog, width=WIDTH)
    shown = [a for a in sub._actions if not COMMON & set(a.option_strings)]
    formatter.add_usage(sub.usage, shown, sub._mutually_exclusive_groups, prefix="")
    return formatter.format_help().strip()


def _argument(action: argparse.Action) -> str:
    if not action.option_strings:
        return code(action.metavar or action.dest)
    takes = action.nargs != 0
    metavar = action.metavar or action.dest.upper()
    if action.choices and not action.metavar:
        metavar = "|".join(str(c) for c in action.choices)
    return ", ".join(code(f"{o} {metavar}" if takes else o) for o in action.option_strings)


def cli() -> str:
    from killpoint.cli.main import build_parser

    parser = build_parser()
    subs = _subcommands(parser)
    common = [a for a in next(iter(subs.values()))[1]._actions if COMMON & set(a.option_strings)]
    parts = [
        "Every command takes these after its name:",
        table(("option", "meaning"), ((_argument(a), _help(a.help)) for a in common if a.help)),
    ]
    for name, (summary, sub) in subs.items():
        own = [a for a in sub._actions if not COMMON & set(a.option_strings)]
        if any(isinstance(a, argparse._SubParsersAction) for a in own):
            parts += [f"### `killpoint {name}`", f"{summary[:1].upper()}{summary[1:]}."]
            continue
        rows = [(_argument(a), _help(a.help)) for a in own]
        parts += [
            f"### `killpoint {name}`",
            f"{summary[:1].upper()}{summary[1:]}.",
            f"```text\n{_usage(sub)}\n```",
        ]
        if rows:
            parts.append(table(("argument", "meaning"), rows))
    return "\n\n".join(parts)


# -- pytest --------------------------------------------------------------------------------


@dataclass(frozen=True)
class PytestOption:
    name: str
    metavar: str | None
    help: str
    ini: str | None = None


class _Recorder:
    """Stands in for pytest's parser: records what the plugin's pytest_addoption declares."""

    def __init__(self) -> None:
        self.options: list[dict[str, Any]] = []
        self.inis: dict[str, str] = {}

    def getgroup(self, name: str, description: str = "") -> _Recorder:
        return self

    def addoption(self, *names: str, **attrs: Any) -> None:
        self.options.append({"names": names, **attrs})

    def addini(self, name: str, help: str, **attrs: Any) -> None:
        self.inis[name] = help


def pytest_options() -> list[PytestOption]:
    from killpoint.plugin import hooks

    recorder = _Recorder()
    hooks.pytest_addoption(recorder)  # type: ignore[arg-type]
    found = []
    for option in recorder.options:
        dest = option.get("dest") or option["names"][0].lstrip("-").replace("-", "_")
        found.append(
            PytestOption(
                option["names"][0],
                None if option.get("action") == "store_true" else option.get("metavar"),
                option.get("help", ""),
                dest if dest in recorder.inis else None,
            )
        )
    return found


def pytest() -> str:
    rows = []
    for option in pytest_options():
        shown = f"{option.name} {option.metavar}" if option.metavar else option.name
        rows.append((code(shown), code(option.ini) if option.ini else "", option.help))
    return table(("option", "ini key", "meaning"), rows)


def markers() -> str:
    from killpoint.plugin.keys import MARKER, MATRIX_MARKER

    return table(
        ("marker", "what it does"),
        (
            (code(MATRIX_MARKER), f"carried by every matrix cell: `-m {MATRIX_MARKER}` selects them"),
            (code(MARKER), "configures a test's `crash.check` (runtime, scenario, modes...); it never selects"),
        ),
    )  # fmt: skip


# -- the campaign's options, front by front --------------------------------------------------


@dataclass(frozen=True)
class CampaignOption:
    name: str  # as [tool.killpoint] and the docs spell it: `fail-on`
    help: str
    cli: str | None  # `--fail-on`
    pytest: str | None  # `--crash-fail-on`
    ini: str | None  # `crash_fail_on`
    project: str | None  # the [tool.killpoint] key
    check: str | None  # the crash.check() keyword
    why: str  # why a front leaves it out or takes it otherwise ("" when none does)


def campaign_options() -> list[CampaignOption]:
    """Every option of a campaign and the fronts that take it, read from the one table the
    fronts are built from (killpoint.engine.option_table), so the page cannot say what
    a front does not do."""
    from killpoint.engine import option_table as options

    found = []
    for ref in options.reference():
        names = ref.names
        default = f" (default: {ref.default})" if ref.default is not None else ""
        found.append(
            CampaignOption(
                name=ref.name.replace("_", "-"),
                help=_help(ref.help + default),
                cli=names.get(options.CLI),
                pytest=names.get(options.PYTEST),
                ini=names.get("ini"),
                project=names.get(options.PROJECT),
                check=names.get(options.CHECK, "").removesuffix("=") or None,
                why=ref.why,
            )
        )
    return found


def campaign() -> str:
    def shown(value: str | None) -> str:
        return code(value) if value else "—"

    found = campaign_options()
    rows = [
        (o.name, shown(o.cli), shown(o.pytest), shown(o.ini), shown(o.project), shown(o.check), o.help)
        for o in found
    ]  # fmt: skip
    heads = ("option", "killpoint matrix", "pytest", "ini", "[tool.killpoint]", "crash.check")
    why = [f"- **{o.name}**: {o.why}" for o in found if o.why]
    return "\n\n".join(
        [
            table((*heads, "meaning"), rows),
            "Where a front does not take an option, or takes it otherwise:",
            "\n".join(why),
        ]
    )


def project_keys() -> str:
    from killpoint.cli.project_config import KEYS

    return table(
        ("key", "value", "same as"),
        ((code(k), o.toml, code(o.flag)) for k, o in KEYS.items()),
    )


# -- filling the pages ----------------------------------------------------------------------

BLOCKS: dict[str, Callable[[], str]] = {
    "crash-points": crash_points,
    "point-groups": point_groups,
    "verdicts": verdicts,
    "finding-kinds": finding_kinds,
    "severity": severity,
    "scenarios": scenarios,
    "report-schema": report_schema,
    "corpus-manifest": corpus_manifest,
    "cli": cli,
    "pytest-options": pytest,
    "markers": markers,
    "campaign-options": campaign,
    "project-keys": project_keys,
}


def pages() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


def fill(text: str, where: str, made: dict[str, str]) -> str:
    """`text` with each generated block replaced by what its function makes now."""
    out: list[str] = []
    pos = 0
    for match in BEGIN.finditer(text):
        name = match.group(1)
        if match.start() < pos:
            continue
        if name not in BLOCKS:
            raise SystemExit(f"docs/generate.py: {where}: no block named {name!r}")
        end = text.find(END.format(name=name), match.end())
        if end < 0:
            raise SystemExit(f"docs/generate.py: {where}: block {name!r} has no end marker")
        if name not in made:
            made[name] = BLOCKS[name]()
        out += [text[pos : match.end()], made[name], "\n"]
        pos = end
    out.append(text[pos:])
    return "".join(out)


def stale(write: bool) -> list[str]:
    """The pages whose blocks differ from what the code makes (rewritten when `write`)."""
    made: dict[str, str] = {}
    found = []
    for page in pages():
        text = page.read_text(encoding="utf-8")
        new = fill(text, str(page.relative_to(REPO)), made)
        if new != text:
            found.append(str(page.relative_to(REPO)))
            if write:
                page.write_text(new, encoding="utf-8")
    return found


def main(argv: Sequence[str]) -> int:
    check = "--check" in argv
    found = stale(write=not check)
    for page in found:
        print(f"{'stale' if check else 'wrote'}: {page}")
    if check and found:
        print("docs/generate.py: regenerate with `make docs` (or python docs/generate.py)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
