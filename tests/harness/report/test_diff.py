"""Two reports compared: new, fixed, still failing and flaky cells; new, fixed and not
exercised groups; the Markdown of a pull-request comment, its run content made inert."""

# ruff: noqa: SIM300
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from killpoint.errors import DiffError
from killpoint.report.diff import compare
from killpoint.report.diff_text import markdown
from tests.harness.cli.test_rerun import killpoint

ROW = "reference/research/tool-batch/sqlite"
LOST_GROUP = "acknowledged-lost:-:runs[*].status"
DUP_GROUP = "tool-executions-repeated:fetch:runs[*].tool_executions"


def cell(k: int, verdict: str, *groups: str, expected: bool = False) -> dict[str, Any]:
    return {
        "id": f"{ROW}/after-checkpoint:{k}",
        "runtime": "reference",
        "scenario": "research",
        "mode": "tool-batch",
        "store": "sqlite",
        "schedule": [f"after-checkpoint:{k}"],
        "verdict": verdict,
        "expected": expected,
        "accepted": False,
        "findings": [
            {"kind": g.split(":")[0], "group": g, "verdict": verdict, "severity": "high"}
            for g in groups
        ],
    }


def group(key: str, verdict: str, *cells: dict[str, Any], example: str = "x") -> dict[str, Any]:
    return {
        "key": key,
        "kind": key.split(":")[0],
        "tool": None if key.split(":")[1] == "-" else key.split(":")[1],
        "path": key.split(":", 2)[2],
        "severity": "high",
        "verdict": verdict,
        "count": len(cells),
        "cells": [c["id"] for c in cells],
        "example": example,
        "accepted": None,
    }


def report(cells: list[dict[str, Any]], groups: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "schema": "killpoint.matrix/2",
        "runtime": "reference",
        "store": "sqlite",
        "cells": cells,
        "groups": groups,
        "without_crash": [],
        "baselines": [],
    }


@pytest.fixture
def pair() -> tuple[dict[str, Any], dict[str, Any]]:
    """Base: 1 ok, 2 lost, 3 duplicated, 4 ok, 5 ok, 6 lost. Head: 1 lost (new), 2 ok
    (fixed), 3 duplicated (still failing), 4 hung with no finding, as base's ok had none
    (flaky), 5 diverged (new), 6 ok (fixed)."""
    base_cells = [
        cell(1, "ok", expected=True),
        cell(2, "lost", LOST_GROUP),
        cell(3, "duplicated", DUP_GROUP),
        cell(4, "ok", expected=True),
        cell(5, "ok", expected=True),
        cell(6, "lost", LOST_GROUP),
    ]
    head_cells = [
        cell(1, "lost", LOST_GROUP),
        cell(2, "ok", expected=True),
        cell(3, "duplicated", DUP_GROUP),
        cell(4, "hung"),
        cell(5, "diverged", "run-differs:-:runs[*].content"),
        cell(6, "ok", expected=True),
    ]
    base = report(
        base_cells,
        [
            group(LOST_GROUP, "lost", base_cells[1], base_cells[5]),
            group(DUP_GROUP, "duplicated", base_cells[2]),
        ],
    )
    head = report(
        head_cells,
        [
            group(LOST_GROUP, "lost", head_cells[0]),
            group(DUP_GROUP, "duplicated", head_cells[2]),
            group("run-differs:-:runs[*].content", "diverged", head_cells[4], example="`<b>@all"),
        ],
    )
    return base, head


class TestCompare:
    def test_cells_are_new_fixed_still_failing_or_flaky(self, pair: Any) -> None:
        diff = compare(*pair, base_name="base.json", head_name="head.json")
        ids = lambda changes: [c.id.rsplit(":", 1)[1] for c in changes]  # noqa: E731
        assert ["1", "5"] == ids(diff.new)
        assert ["2", "6"] == ids(diff.fixed)
        assert ["3"] == ids(diff.still_failing)
        assert ["4"] == ids(diff.flaky)  # ok -> hung, no finding on either side
        assert [] == diff.not_run
        assert ("ok", "lost") == (diff.new[0].base, diff.new[0].head)

    def test_groups_are_new_still_failing_or_fixed(self, pair: Any) -> None:
        diff = compare(*pair, base_name="b", head_name="h")
        assert ["run-differs:-:runs[*].content"] == [g.key for g in diff.new_groups]
        assert {LOST_GROUP, DUP_GROUP} == {g.key for g in diff.still_groups}
        assert diff.regressed

    def test_a_group_gone_is_fixed_only_where_head_ran_its_cells(self, pair: Any) -> None:
        base, head = pair
        head["groups"] = [g for g in head["groups"] if g["key"] != DUP_GROUP]
        head["cells"][2] = cell(3, "ok", expected=True)
        assert [DUP_GROUP] == [
            g.key for g in compare(base, head, base_name="b", head_name="h").fixed_groups
        ]
        head["cells"].pop(2)  # head did not run cell 3: says nothing of its group
        diff = compare(base, head, base_name="b", head_name="h")
        assert [] == diff.fixed_groups
        assert [DUP_GROUP] == [g.key for g in diff.unexercised_groups]
        assert [f"{ROW}/after-checkpoint:3"] == [c.id for c in diff.not_run]

    def test_the_same_report_has_no_change(self, pair: Any) -> None:
        diff = compare(pair[1], pair[1], base_name="h", head_name="h")
        assert not diff.regressed
        assert [] == diff.new + diff.fixed + diff.flaky + diff.new_groups + diff.fixed_groups

    def test_reports_of_two_runtimes_are_refused(self, pair: Any) -> None:
        base, head = pair
        head["runtime"] = "agno"
        with pytest.raises(
            DiffError, match=r"base\.json ran runtime 'reference', head\.json 'agno'"
        ):
            compare(base, head, base_name="base.json", head_name="head.json")


class TestMarkdown:
    def test_the_comment_lists_the_changes(self, pair: Any) -> None:
        text = markdown(compare(*pair, base_name="main.json", head_name="pr.json"))
        assert text.startswith("**killpoint: new failing groups**")
        assert "### New failing groups" in text
        assert "`run-differs at runs[*].content`" in text
        assert f"`{ROW}/after-checkpoint:5`" in text

    def test_run_content_cannot_format_or_mention(self, pair: Any) -> None:
        """A sentence with a backtick, HTML and an @mention stays text."""
        text = markdown(compare(*pair, base_name="b", head_name="h"))
        # `\@all` would not do: GitHub mentions once the escape is resolved.
        assert "\\`&lt;b&gt;@\u2060all" in text
        assert "<b>" not in text and "@all" not in text


class TestCommand:
    def write(self, folder: Path, name: str, document: dict[str, Any]) -> str:
        (folder / name).write_text(json.dumps(document))
        return name

    def test_exit_1_on_a_new_failing_group_and_markdown_written(
        self, tmp_path: Path, pair: Any
    ) -> None:
        base, head = (
            self.write(tmp_path, n, d) for n, d in zip(("b.json", "h.json"), pair, strict=True)
        )
        result = killpoint("diff", base, head, "--markdown", "pr.md", cwd=tmp_path)
        assert 1 == result.returncode, result.stderr
        assert "1 new group, 0 fixed, 2 still failing" in result.stdout
        assert "### New failing groups" in (tmp_path / "pr.md").read_text()

    def test_exit_0_when_head_brings_no_failing_group(self, tmp_path: Path, pair: Any) -> None:
        base, head = pair
        result = killpoint(
            "diff", self.write(tmp_path, "h.json", head), self.write(tmp_path, "b.json", base),
            cwd=tmp_path,
        )  # fmt: skip
        assert 0 == result.returncode, result.stderr  # the reports swapped: nothing new
        assert "Fixed groups:\n  run-differs" in result.stdout

    def test_a_file_that_is_no_report_is_one_line(self, tmp_path: Path, pair: Any) -> None:
        (tmp_path / "x.json").write_text("[]")
        result = killpoint("diff", "x.json", self.write(tmp_path, "h.json", pair[1]), cwd=tmp_path)
        assert 2 == result.returncode
        assert 1 == len(result.stderr.strip().splitlines())
        assert "'x.json' is not a killpoint matrix report" in result.stderr


class TestWhatBothRan:
    """Issue 56: a base report with a narrower selection made every cell it never ran
    "new" and the diff exit 1, so a narrower report on main failed a pull request."""

    def wider(self, pair: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        """Head also ran a row base never ran: its cells fail with a group of their own."""
        base, head = pair
        other = dict(cell(1, "diverged", "runs-differ:-:runs"))
        other.update(id="reference/cancel/tool-batch/sqlite/after-checkpoint:1", scenario="cancel")
        head = {**head, "cells": [*head["cells"], other]}
        head["groups"] = [*head["groups"], group("runs-differ:-:runs", "diverged", other)]
        return base, head

    def test_cells_base_did_not_run_are_not_new(self, pair: Any) -> None:
        diff = compare(*self.wider(pair), base_name="b", head_name="h")
        assert "reference/cancel/tool-batch/sqlite/after-checkpoint:1" in [
            c.id for c in diff.base_not_run
        ]
        assert all("cancel" not in c.id for c in diff.new)

    def test_a_group_seen_only_where_base_did_not_run_is_no_regression(
        self, tmp_path: Path, pair: Any
    ) -> None:
        base, head = self.wider(pair)
        base["groups"] = head["groups"][:2]  # base has head's other failing groups
        base["cells"] = [
            *base["cells"][:1],
            *[c for c in head["cells"] if "cancel" not in c["id"]][1:],
        ]
        diff = compare(base, head, base_name="b", head_name="h")
        assert ["runs-differ:-:runs"] == [g.key for g in diff.base_unrun_groups]
        assert "runs-differ:-:runs" not in [g.key for g in diff.new_groups]
        b = TestCommand().write(tmp_path, "b.json", base)
        h = TestCommand().write(tmp_path, "h.json", head)
        result = killpoint("diff", b, h, cwd=tmp_path)
        assert "only where base did not run (not compared)" in result.stdout
        assert "Cells base did not run (not compared):" in result.stdout
