"""Two reports compared: what a pull request's campaign (head) changed against main's (base).

Only what both reports ran is compared. Cells are matched by id. A cell is
- **new**: failing in head (unexpected, not accepted), passing in base;
- **fixed**: failing in base, passing in head;
- **still failing**: failing in both;
- **flaky**: its verdict changed while its findings did not (the same group keys on both
  sides): the same evidence judged two ways is timing, not a change of code, and counted
  apart from new and fixed.
A cell of base that head did not run is **not run**, and a cell of head that base did not
run is **not run by base**: each says nothing either way (a narrower report on main is no
regression of the pull request's wider one).

Groups (cell groups and row-level ones) are matched by key, on the cells and rows both
reports ran: a failing group of head that base does not fail, seen in a cell or row base
ran too, is **new** (what `killpoint diff` exits 1 on); one seen only in cells or rows
base did not run is **not run by base**; a failing group of base that head does not show
is **fixed** only if head ran every cell and row base saw it in, else **not exercised**.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from killpoint.errors import DiffError


@dataclass
class CellChange:
    id: str
    base: str | None  # the verdict in base; None: base did not run it
    head: str | None

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "base": self.base, "head": self.head}


@dataclass
class GroupChange:
    key: str
    heading: str
    verdict: str
    base: int  # cells or rows of base that show it
    head: int
    example: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "heading": self.heading,
            "verdict": self.verdict,
            "base": self.base,
            "head": self.head,
            "example": self.example,
        }


@dataclass
class ReportDiff:
    base: str  # how each report is named (a path)
    head: str
    new: list[CellChange] = field(default_factory=list)
    fixed: list[CellChange] = field(default_factory=list)
    still_failing: list[CellChange] = field(default_factory=list)
    flaky: list[CellChange] = field(default_factory=list)
    not_run: list[CellChange] = field(default_factory=list)
    base_not_run: list[CellChange] = field(default_factory=list)  # head ran them, base did not
    new_groups: list[GroupChange] = field(default_factory=list)
    fixed_groups: list[GroupChange] = field(default_factory=list)
    still_groups: list[GroupChange] = field(default_factory=list)
    unexercised_groups: list[GroupChange] = field(default_factory=list)
    base_unrun_groups: list[GroupChange] = field(
        default_factory=list
    )  # only where base did not run

    @property
    def regressed(self) -> bool:
        """A failing group head has and base had not: what fails a pull request."""
        return bool(self.new_groups)

    def to_json(self) -> dict[str, Any]:
        return {
            "base": self.base,
            "head": self.head,
            **{
                name: [c.to_json() for c in getattr(self, name)]
                for name in ("new", "fixed", "still_failing", "flaky", "not_run", "base_not_run")
            },
            **{
                name: [g.to_json() for g in getattr(self, name)]
                for name in (
                    "new_groups",
                    "fixed_groups",
                    "still_groups",
                    "unexercised_groups",
                    "base_unrun_groups",
                )
            },
        }


def failing(cell: dict[str, Any]) -> bool:
    return not cell.get("expected") and not cell.get("accepted")


def finding_keys(cell: dict[str, Any]) -> set[str]:
    return {str(f.get("group") or f.get("kind")) for f in cell.get("findings") or []}


def failing_groups(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every group that fails the campaign (a verdict, not accepted), cells' and rows'."""
    groups = [*document.get("groups", []), *document.get("without_crash", [])]
    return {g["key"]: g for g in groups if g.get("verdict") != "ok" and not g.get("accepted")}


def _members(group: dict[str, Any]) -> list[str]:
    return list(group.get("cells") or group.get("rows") or [])


def _rows(document: dict[str, Any]) -> set[str]:
    """The rows a report ran (its baselines), as row-level groups name them."""
    return {
        "/".join((b["runtime"], b["scenario"], b["mode"], b["store"]))
        for b in document.get("baselines", [])
    }


def _heading(group: dict[str, Any]) -> str:
    tool = f" (tool {group['tool']})" if group.get("tool") else ""
    path = group.get("path")
    where = f" at {path}" if path and path != "-" else ""
    rows = ", without a crash" if "rows" in group and "cells" not in group else ""
    return f"{group.get('kind', '?')}{tool}{where}{rows}"


def _change(group: dict[str, Any], base: int, head: int) -> GroupChange:
    return GroupChange(
        key=group["key"],
        heading=_heading(group),
        verdict=str(group.get("verdict", "")),
        base=base,
        head=head,
        example=str(group.get("example", "")),
    )


def compare(
    base: dict[str, Any], head: dict[str, Any], *, base_name: str, head_name: str
) -> ReportDiff:
    """What head changed against base; DiffError when they test different things."""
    for key in ("runtime", "store"):
        if base.get(key) != head.get(key):
            raise DiffError(
                f"killpoint: {base_name} ran {key} {base.get(key)!r}, {head_name} "
                f"{head.get(key)!r}; compare two reports of one {key}"
            )
    diff = ReportDiff(base_name, head_name)
    before = {c["id"]: c for c in base.get("cells", [])}
    after = {c["id"]: c for c in head.get("cells", [])}
    for cell_id, cell in after.items():
        old = before.get(cell_id)
        change = CellChange(cell_id, old.get("verdict") if old else None, cell.get("verdict"))
        if old is None:
            diff.base_not_run.append(change)
        elif old.get("verdict") != cell.get("verdict") and finding_keys(old) == finding_keys(cell):
            diff.flaky.append(change)
        elif failing(cell) and failing(old):
            diff.still_failing.append(change)
        elif failing(cell):
            diff.new.append(change)
        elif failing(old):
            diff.fixed.append(change)
    diff.not_run = [
        CellChange(i, c.get("verdict"), None) for i, c in before.items() if i not in after
    ]
    ran = set(after) | _rows(head)
    base_ran = set(before) | _rows(base)
    old_groups, new_groups = failing_groups(base), failing_groups(head)
    for key, group in new_groups.items():
        shared = [m for m in _members(group) if m in base_ran]
        if key in old_groups:
            diff.still_groups.append(
                _change(group, len(_members(old_groups[key])), len(_members(group)))
            )
        elif shared:
            diff.new_groups.append(_change(group, 0, len(shared)))
        else:
            diff.base_unrun_groups.append(_change(group, 0, len(_members(group))))
    for key, group in old_groups.items():
        if key in new_groups:
            continue
        gone = _change(group, len(_members(group)), 0)
        if all(m in ran for m in _members(group)):
            diff.fixed_groups.append(gone)
        else:
            diff.unexercised_groups.append(gone)
    return diff


__all__ = ["CellChange", "DiffError", "GroupChange", "ReportDiff", "compare", "failing"]
