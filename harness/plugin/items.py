"""The crash matrix as pytest items: one collector, an item per cell, an item per
row that could not be planned."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from killpoint import kinds
from killpoint.engine.matrix_plan import MatrixPlan
from killpoint.plugin.failure_messages import cell_failure
from killpoint.plugin.keys import (
    MATRIX,
    MATRIX_MARKER,
    RESULTS_KEY,
    SESSION_KEY,
)
from killpoint.values.shown import line

if TYPE_CHECKING:
    from killpoint.values.cell import CellResult

# -- the matrix as items --------------------------------------------------------------------


class CrashMatrix(pytest.Collector):
    """The parent of every cell item (node id `killpoint`); collects the plan's items."""

    def __init__(self, *, plan: MatrixPlan, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.plan = plan

    def collect(self) -> list[pytest.Item]:
        plan = self.plan
        items: list[pytest.Item] = []
        if plan.error:
            items.append(RowItem.from_parent(self, name="planning", why=plan.error, skip=False))
        items += [RowItem.from_parent(self, name=r, why=why, skip=True) for r, why in plan.skipped]
        broken = {row for row, _ in plan.broken}
        # A row whose uninterrupted run failed is the row's failure, as its contract
        # findings are: one item, ROW/without-crash (docs/plugin.md), and no crash cell.
        items += [
            RowItem.from_parent(
                self,
                name=f"{row}/without-crash",
                why=f"happens without a crash: the baseline failed: {why}",
                skip=False,
            )
            for row, why in plan.broken
        ]
        items += [
            WithoutCrashItem.from_parent(
                self,
                name="/".join((b.runtime, b.scenario, b.mode, b.store, "without-crash")),
                findings=b.findings,
            )
            for b in plan.baselines
            if b.findings and "/".join((b.runtime, b.scenario, b.mode, b.store)) not in broken
        ]
        items += [CellItem.from_parent(self, name=cell_id) for cell_id in plan.cells]
        for item in items:
            item.add_marker(MATRIX_MARKER)
            if isinstance(item, RowItem) and item.skip:
                # Reported at the item's own location, with the reason.
                item.add_marker(pytest.mark.skip(reason=line(item.why)))
        return items

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, "killpoint crash matrix"


def matrix_items(session: pytest.Session, plan: MatrixPlan) -> list[pytest.Item]:
    """Collect the matrix as pytest collects a file: reports, counts and errors included."""
    matrix = CrashMatrix.from_parent(session, name=MATRIX, nodeid=MATRIX, plan=plan)
    session.ihook.pytest_collectstart(collector=matrix)
    report = session.ihook.pytest_make_collect_report(collector=matrix)
    report.__dict__.pop("call", None)
    session.ihook.pytest_collectreport(report=report)
    items = [x for x in (report.result or []) if isinstance(x, pytest.Item)]
    for item in items:
        session.ihook.pytest_itemcollected(item=item)
    return items


class CellFailed(Exception):
    """A cell whose verdict is unexpected for its mode and crash point."""

    def __init__(self, result: CellResult, seed: int) -> None:
        super().__init__(result.id)
        self.result = result
        self.seed = seed


class CellItem(pytest.Item):
    """One cell: (runtime, scenario, mode, store, schedule) -> one verdict."""

    def runtest(self) -> None:

        state = self.config.stash[SESSION_KEY]
        result = state.engine().run_cell(kinds.parse_cell(self.name))
        self.stash[RESULTS_KEY] = [result]
        self.user_properties += [
            ("cell", result.id),
            ("verdict", result.verdict),
            ("expected", "yes" if result.expected else "no"),
            ("schedule", "+".join(result.schedule)),
            ("replay", result.replay),
            ("seed", state.seed),
        ]
        from killpoint.judge.groups import apply_accepted

        apply_accepted([result], state.accepted(result.runtime))
        if result.accepted:
            reasons = sorted({f["accepted"] for f in result.findings if "accepted" in f})
            pytest.xfail(line(f"killpoint: accepted: {'; '.join(reasons)}"))
        if result.failing:
            raise CellFailed(result, state.seed)
        if result.low:  # unexpected, every unexpected finding low: it passes, said so
            self.user_properties.append(("severity", "low"))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, CellFailed):
            return cell_failure(excinfo.value.result, excinfo.value.seed)
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, f"killpoint cell {self.name}"


class RowItem(pytest.Item):
    """A row that yields no cells: skipped (the mode is not offered), or failed (no baseline)."""

    def __init__(self, *, why: str, skip: bool, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.why = why
        self.skip = skip

    def runtest(self) -> None:
        pytest.fail(line(f"killpoint: {self.name}: {self.why}"), pytrace=False)

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, f"killpoint row {self.name}"


class WithoutCrashItem(pytest.Item):
    """A row whose uninterrupted run breaks the contract: the row's findings, once (no
    crash cell of the row is charged with them)."""

    def __init__(self, *, findings: list[dict[str, Any]], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.findings = findings

    def runtest(self) -> None:
        from killpoint.judge.groups import matching

        accepted = self.config.stash[SESSION_KEY].accepted()
        open_ = [f for f in self.findings if f.get("verdict") != "ok"]
        entries = {id(f): matching(str(f.get("group")), accepted) for f in open_}
        if open_ and all(entries[id(f)] is not None for f in open_):
            reasons = sorted({e.reason for e in entries.values() if e is not None})
            pytest.xfail(line(f"killpoint: accepted: {'; '.join(reasons)}"))
        failing = [f for f in open_ if entries[id(f)] is None]
        if failing:
            lines = [f"killpoint: {self.name}: happens without a crash (the baseline shows it)"]
            lines += [f"  {f['kind']}: {f['sentence']}  [group {f['group']}]" for f in failing]
            pytest.fail("\n".join(line(each) for each in lines), pytrace=False)

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, f"killpoint row {self.name}"


# -- the `crash` fixture (its work: killpoint.plugin.crash_fixture) ----------------------------------
