"""Under GitHub Actions (`GITHUB_ACTIONS=true`): the campaign's summary appended to the
job's step summary (`$GITHUB_STEP_SUMMARY`, Markdown) and one `::error` annotation per
unexpected group, so a failed run reads on the job's page without opening the log.

Run content reaches both (a scenario's name, a finding's sentence), so every piece is
masked (killpoint.redaction), made visible, and escaped for where it goes: Markdown
punctuation and HTML in the summary; in a workflow command, `%`, `\\r` and `\\n` in the
message, and `:` and `,` too in a property (GitHub's rules, as @actions/core applies them).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from killpoint.redaction import redact
from killpoint.report.text import cut
from killpoint.values.sentences import count
from killpoint.values.shown import LEGACY_COMMAND, visible

if TYPE_CHECKING:
    from killpoint.engine.campaign import CampaignResult
    from killpoint.judge.groups import Group

ANNOTATIONS = 10  # GitHub shows ten error annotations per step; the rest are counted
_MARKDOWN = re.compile(r"([\\`*_{}\[\]()#+\-.!|~])")


def under_actions(environ: Mapping[str, str]) -> bool:
    return environ.get("GITHUB_ACTIONS") == "true"


def _clean(text: object) -> str:
    return visible(redact(str(text)))


def markdown(text: object) -> str:
    """Text shown as itself in GitHub's Markdown: HTML special characters as entities,
    Markdown punctuation escaped, one line."""
    plain = " ".join(_clean(text).split())
    plain = plain.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MARKDOWN.sub(r"\\\1", plain)


def code(text: object) -> str:
    """A command in the summary: <code> with its text escaped (a backtick inside cannot
    end it, as it would end a Markdown code span)."""
    plain = " ".join(_clean(text).split())
    plain = plain.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return f"<code>{plain.replace('|', '&#124;')}</code>"


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(title: str, message: str) -> str:
    """`::error title=...::message`: masked, control characters made visible (newlines
    kept: GitHub shows them once unescaped), then escaped for the workflow command; the
    runner's legacy `##[` broken too, as in every other line (killpoint.values.shown)."""
    title, message = (escape_property(_clean(title)), escape_data(_clean(message)))
    return f"::error title={_unlegacy(title)}::{_unlegacy(message)}"


def _unlegacy(text: str) -> str:
    return text.replace(LEGACY_COMMAND, "##\\[")


def error_commands(groups: Sequence[Group]) -> list[str]:
    lines = []
    for g in groups[:ANNOTATIONS]:
        where = "happens without a crash" if g.without_crash else count(len(g.cells), "cell")
        lines.append(
            annotation(
                f"killpoint: {g.kind} ({g.verdict})",
                f"{g.heading}: {where}\n{cut(g.meaning)}\ne.g. {g.example_cell}: "
                f"{cut(g.example)}\nreplay: {g.replay}",
            )
        )
    if len(groups) > ANNOTATIONS:
        rest = len(groups) - ANNOTATIONS
        lines.append(annotation("killpoint", f"{rest} more group(s): see the step summary"))
    return lines


def step_summary(result: CampaignResult, failing: Sequence[Group], written: Sequence[str]) -> str:
    """The Markdown appended to the step summary."""
    from killpoint.engine.cell_log import heads

    figures = result.summary()
    out = [
        f"## killpoint crash matrix: {markdown(result.config.runtime)}",
        "",
        f"{figures['cells']} cells, {figures['unexpected']} unexpected, "
        f"{figures['expected_losses']} expected losses, {figures['duplicates']} duplicates, "
        f"seed {result.seed}" + (" (interrupted)" if result.interrupted else ""),
        "",
        "| scenario | mode | cells | ok | unexpected |",
        "| --- | --- | ---: | ---: | ---: |",
    ]
    rows: dict[tuple[str, str], list[int]] = {}
    for c in heads(result.cells):
        r = rows.setdefault((c.scenario, c.mode), [0, 0, 0])
        r[0] += 1
        r[1] += c.verdict == "ok"
        r[2] += c.failing
    for (scenario, mode), (n, ok, bad) in rows.items():
        out.append(f"| {markdown(scenario)} | {markdown(mode)} | {n} | {ok} | {bad} |")
    if failing:
        out += ["", f"### {count(len(failing), 'group')} failing the run", ""]
    for n, g in enumerate(failing, start=1):
        where = "without a crash" if g.without_crash else count(len(g.cells), "cell")
        out.append(
            f"{n}. **{markdown(g.heading)}**: {where}, {markdown(g.verdict)} "
            f"({markdown(g.severity)}); e.g. {markdown(g.example_cell)}: "
            f"{markdown(cut(g.example))}; replay: {code(g.replay)}"
        )
    if written:
        out += ["", "Reports: " + ", ".join(code(w) for w in written)]
    return "\n".join(out) + "\n\n"


__all__ = [
    "annotation",
    "code",
    "error_commands",
    "escape_data",
    "escape_property",
    "markdown",
    "step_summary",
    "under_actions",
]
