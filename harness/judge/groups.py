"""Findings grouped by cause across the cells of a campaign, and the accepted ones.

A campaign reads as a short list of problems: each group is one cause (a finding kind, the
tool, the path with its numbers made `*`), with how many cells show it, one plain
explanation, one example and its replay command. A project may commit a file of accepted
findings (by group, with a reason and a link): cells whose unexpected findings are all
accepted are shown and counted apart and do not fail; an accepted group that no longer
occurs is reported as "no longer occurs" after a whole campaign, and "not exercised" after
one narrowed to some points, scenarios or modes (or a rerun, or an interrupted one).

The file is TOML:

    [[accept]]
    group = "tool-executions-lost:-:runs[*].tool_executions"
    reason = "agno 3.1 keeps only the last leg's tool executions"
    link = "https://github.com/agno-agi/agno/issues/0000"   # optional

A group's tool may be `*` (`effect-duplicated:*:ledger`): every tool's group of that kind
and path. Each built-in runtime ships such a file for what its documentation calls by
design (`--accept builtin`: killpoint.adapters.registry.accepted_file).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from killpoint.errors import AcceptError, InputError
from killpoint.values.cell import row_command
from killpoint.values.findings import (
    BY_TOOL,
    KINDS,
    RANK,
    SEVERITIES,
    SYMPTOMS,
    Finding,
    fails,
    path_pattern,
)
from killpoint.values.input_files import load_toml


@dataclass(frozen=True)
class Accepted:
    group: str
    reason: str
    link: str = ""


def read_accepted(path: Path) -> dict[str, Accepted]:
    """The accepted groups of a TOML file ({group key: entry})."""
    try:  # bounded in size and depth: `--accept /dev/zero` is refused, not read for good
        data = load_toml(path)
    except InputError as exc:
        raise AcceptError(str(exc)) from None
    entries = data.get("accept")
    if not isinstance(entries, list):
        raise AcceptError(
            f"killpoint: {str(path)!r} holds no [[accept]] entries; each needs `group` and "
            "`reason` (the group keys are in the report and the JSON)"
        )
    found: dict[str, Accepted] = {}
    for n, entry in enumerate(entries, start=1):
        if not isinstance(entry, dict):
            entry = {}  # refused below, with the fix
        group, reason = entry.get("group"), entry.get("reason")
        if not isinstance(group, str) or not isinstance(reason, str) or not reason.strip():
            raise AcceptError(
                f"killpoint: {str(path)!r}, entry {n}: give `group` (a finding group key) "
                "and `reason` (why it is accepted), both as text"
            )
        kind = group.split(":", 1)[0]
        if kind not in KINDS:
            raise AcceptError(
                f"killpoint: {str(path)!r}, entry {n}: {group!r} names no finding kind "
                f"({kind!r}); copy the group key from the report"
            )
        link = entry.get("link", "")
        if not isinstance(link, str):
            raise AcceptError(f"killpoint: {str(path)!r}, entry {n}: give `link` as text")
        found[group] = Accepted(group, reason.strip(), link)
    return found


ANY_TOOL = "*"


def matching(key: str, accepted: Mapping[str, Accepted]) -> Accepted | None:
    """The accepted entry a group key falls under: its own, or one whose tool is `*` with
    the same kind and path."""
    found = accepted.get(key)
    if found is not None:
        return found
    kind, _, rest = key.partition(":")
    _, _, path = rest.partition(":")
    return accepted.get(f"{kind}:{ANY_TOOL}:{path}")


def met_by(entry: str, keys: Iterable[str]) -> bool:
    """Whether an accepted entry's key covers one of the group keys met."""
    return any(matching(k, {entry: Accepted(entry, "")}) is not None for k in keys)


def apply_accepted(cells: Iterable[Any], accepted: Mapping[str, Accepted]) -> None:
    """Mark each cell whose unexpected findings all belong to accepted groups, or are the
    consequences of one in the same cell: a symptom (a status, content or messages that
    differ, an effect repeated: killpoint.values.findings.SYMPTOMS) beside an accepted
    finding that says how the run went wrong (a cancel forgotten by design) comes with it;
    beside none it stays open. A finding of that sort not accepted still fails its cell."""
    for cell in cells:
        open_ = [f for f in cell.findings if not f.get("expected") and f.get("verdict") != "ok"]
        for f in open_:
            entry = matching(str(f.get("group")), accepted) if f.get("group") else None
            if entry is not None:
                f["accepted"] = entry.reason
        causes = [f for f in open_ if f.get("kind") not in SYMPTOMS and "accepted" in f]
        if causes:
            for f in open_:
                if "accepted" not in f and f.get("kind") in SYMPTOMS:
                    f["accepted"] = f"comes with {causes[0].get('group')}: {causes[0]['accepted']}"
        cell.accepted = bool(open_) and all("accepted" in f for f in open_)


@dataclass
class Group:
    """One cause across cells."""

    key: str
    kind: str
    tool: str | None
    pattern: str
    severity: str
    verdict: str
    cells: list[str] = field(default_factory=list)
    example: str = ""  # the first cell's sentence
    example_cell: str = ""
    replay: str = ""
    accepted: str | None = None
    # A row-level group: found in the uninterrupted run ("happens without a crash"); its
    # `cells` are the rows (RUNTIME/SCENARIO/MODE/STORE) whose baselines show it.
    without_crash: bool = False
    # The verdicts its cells have, most cells first: a cell's verdict is its most severe
    # finding's, so a group's cells may have another than the group's kind names (a
    # `usage-differs` group of `corrupt` cells). Empty for a row-level group.
    verdicts: dict[str, int] = field(default_factory=dict)

    @property
    def failing(self) -> bool:
        """Fails a campaign held to the default threshold: it names a verdict, is not
        accepted, and is of medium severity or more (`--fail-on` moves the threshold)."""
        return self.verdict != "ok" and not self.accepted and fails(self.severity)

    @property
    def badge(self) -> str:
        """The verdict a reader sees on the group: its cells' (the most common), or the
        one its kind names for a row-level group."""
        return next(iter(self.verdicts), self.verdict)

    @property
    def meaning(self) -> str:
        return KINDS[self.kind].meaning

    @property
    def heading(self) -> str:
        """What tells this group from every other: its kind, tool and path, as its key does
        ("acknowledged-lost at runs[*].status", "run-differs at runs[*].content")."""
        tool = f" (tool {self.tool})" if self.tool else ""
        where = f" at {self.pattern}" if self.pattern and self.pattern != "-" else ""
        return f"{self.kind}{tool}{where}"

    def to_json(self) -> dict[str, Any]:
        # A row-level group names rows, not cells: the same fields under their own names.
        members, example = (
            ("rows", "example_row") if self.without_crash else ("cells", "example_cell")
        )
        return {
            "key": self.key,
            "kind": self.kind,
            "tool": self.tool,
            "path": self.pattern,
            "severity": self.severity,
            "verdict": self.verdict,
            "meaning": self.meaning,
            "count": len(self.cells),
            members: self.cells,
            "example": self.example,
            example: self.example_cell,
            "replay": self.replay,
            "accepted": self.accepted,
            "failing": self.failing,
            **({} if self.without_crash else {"verdicts": dict(self.verdicts)}),
        }


def group_findings(cells: Iterable[Any], *, include_expected: bool = False) -> list[Group]:
    """Groups of the cells' findings, most severe and most frequent first. Expected
    findings (allowed repeats, expected losses) are left out unless asked for; low
    ones (inconsistencies) are kept: they are shown, they just do not fail."""
    groups: dict[str, Group] = {}
    for cell in cells:
        seen: set[str] = set()
        for data in cell.findings:
            if data.get("expected") and not include_expected:
                continue
            finding = Finding.from_json(data)
            key = data.get("group") or finding.group_key
            if key in seen:
                continue  # a cell counts once per group
            seen.add(key)
            group = groups.get(key)
            if group is None:
                group = groups[key] = Group(
                    key=key,
                    kind=finding.kind,
                    tool=None if key.split(":", 2)[1] == "-" else key.split(":", 2)[1],
                    pattern=key.split(":", 2)[2],
                    severity=finding.severity,
                    verdict=finding.verdict,
                    example=finding.sentence,
                    example_cell=cell.id,
                    replay=cell.replay,
                    accepted=data.get("accepted"),
                )
            group.cells.append(cell.id)
            if not data.get("accepted"):
                group.accepted = None  # accepted only where every cell's finding is
            verdict = str(getattr(cell, "verdict", "") or finding.verdict)
            group.verdicts[verdict] = group.verdicts.get(verdict, 0) + 1
    for group in groups.values():
        group.verdicts = dict(
            sorted(group.verdicts.items(), key=lambda kv: (-kv[1], RANK.get(kv[0], len(RANK))))
        )
    return sorted(
        groups.values(),
        key=lambda g: (RANK[g.verdict], SEVERITIES.index(g.severity), -len(g.cells), g.key),
    )


def row_groups(baselines: Iterable[Any], accepted: Mapping[str, Accepted]) -> list[Group]:
    """The findings of the rows' uninterrupted runs (Baseline.findings), one group per
    cause across rows: each happens without a crash, so it is the row's, reported once."""
    groups: dict[str, Group] = {}
    for base in baselines:
        row = "/".join(base.row)
        for data in base.findings:
            finding = Finding.from_json(data)
            key = str(data.get("group") or finding.group_key)
            group = groups.get(key)
            if group is None:
                group = groups[key] = Group(
                    key=key,
                    kind=finding.kind,
                    tool=finding.tool if finding.tool and finding.kind in BY_TOOL else None,
                    pattern=path_pattern(finding.path) or "-",
                    severity=finding.severity,
                    verdict=finding.verdict,
                    example=finding.sentence,
                    example_cell=row,
                    replay=row_command(*base.row),
                    accepted=entry.reason if (entry := matching(key, accepted)) else None,
                    without_crash=True,
                )
            if row not in group.cells:
                group.cells.append(row)
    return sorted(
        groups.values(),
        key=lambda g: (RANK[g.verdict], SEVERITIES.index(g.severity), -len(g.cells), g.key),
    )


NOT_EXERCISED = "not exercised"
NO_LONGER = "no longer occurs"


def unmet(
    groups: Iterable[Group], accepted: Mapping[str, Accepted], narrowed: str | None
) -> list[tuple[Accepted, str]]:
    """Accepted groups this campaign did not meet, each with what that says. A campaign
    `narrowed` (a subset of points, scenarios or modes, a rerun, an interrupt: the reason)
    may simply not have run what showed them: "not exercised", never "fixed". Only a
    whole campaign can say a group "no longer occurs"."""
    met = {g.key for g in groups}
    status = NOT_EXERCISED if narrowed else NO_LONGER
    return [(a, status) for key, a in accepted.items() if not met_by(key, met)]


def fixed(groups: Iterable[Group], accepted: Mapping[str, Accepted]) -> list[Accepted]:
    """Accepted groups this campaign did not meet (whatever it exercised)."""
    return [a for a, _ in unmet(groups, accepted, None)]


__all__ = [
    "ANY_TOOL",
    "NOT_EXERCISED",
    "NO_LONGER",
    "AcceptError",
    "Accepted",
    "Group",
    "apply_accepted",
    "fixed",
    "group_findings",
    "matching",
    "met_by",
    "read_accepted",
    "row_groups",
    "unmet",
]
