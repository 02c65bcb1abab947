"""--fail-on: the groups that fail a run held to a severity, verdict or not."""

from __future__ import annotations

from dataclasses import replace

from killpoint.cli.fail_on import failing_groups, spared
from killpoint.engine.campaign import CampaignResult
from killpoint.engine.cell_log import CellLog
from killpoint.engine.options import CampaignConfig
from killpoint.judge.groups import Group
from killpoint.values.cell import CellResult
from killpoint.values.findings import Finding


def group(n: int = 1) -> Group:
    return Group(
        key=f"status-differs:-:runs[*].status{n}",
        kind="status-differs",
        tool=None,
        pattern="runs[*].status",
        severity="high",
        verdict="diverged",
        cells=["reference/research/tool-batch/sqlite/mid-model:1"],
        example="ended otherwise",
        example_cell="reference/research/tool-batch/sqlite/mid-model:1",
        replay="killpoint replay reference/research/tool-batch/sqlite/mid-model:1",
    )


HIGH = group()
MEDIUM = replace(group(2), kind="checkpoints-lost", severity="medium", verdict="ok")
LOW = replace(group(3), kind="inconsistency", severity="low", verdict="ok")
ACCEPTED_HIGH = replace(group(4), accepted="known")


class TestThreshold:
    def test_each_threshold_takes_its_severity_and_above(self) -> None:
        """Accepted groups never fail; low ones only under --fail-on low."""
        every = [HIGH, MEDIUM, LOW, ACCEPTED_HIGH]
        assert failing_groups(every, "high") == [HIGH]
        assert failing_groups(every, "medium") == [HIGH, MEDIUM]
        assert failing_groups(every, "low") == [HIGH, MEDIUM, LOW]

    def test_an_unexpected_group_below_the_threshold_is_said_to_be_spared(self) -> None:
        """A verdict-naming group of medium severity under --fail-on high does not fail the
        run, and the command says so (spared)."""
        medium_verdict = replace(MEDIUM, verdict="lost")
        assert [medium_verdict] == spared([HIGH, medium_verdict, LOW], "high")
        assert spared([HIGH, medium_verdict], "medium") == []


class TestSeverityDecides:
    """Issue 56: `usage-differs` is of low severity, yet cells whose only unexpected
    findings were token counts were unexpected `diverged` cells that failed the run."""

    def campaign(self) -> CampaignResult:
        usage = Finding("usage-differs", "input_tokens: 1470 in the baseline, 1484 in the "
                        "resumed run", path="state.session_metrics.input_tokens")  # fmt: skip
        cell_id = "agno/research/tool-batch/sqlite/model-500:2"
        cell = CellResult(
            id=cell_id, runtime="agno", scenario="research", mode="tool-batch", store="sqlite",
            schedule=["model-500:2"], verdict="diverged", expected=False,
            findings=[usage.to_json()], replay=f"killpoint replay {cell_id}",
        )  # fmt: skip
        return CampaignResult(CampaignConfig(runtime="agno"), 1, CellLog([cell]))

    def test_a_cell_of_low_findings_only_is_reported_so_and_fails_nothing(self) -> None:
        result = self.campaign()
        (cell,) = result.cells
        assert (cell.verdict, cell.expected, cell.severity) == ("diverged", False, "low")
        assert cell.low and not cell.failing
        figures = result.summary()
        assert (figures["unexpected"], figures["low"]) == (0, 1)
        assert not result.failing
        (usage,) = result.groups()
        assert not usage.failing

    def test_fail_on_low_fails_it(self) -> None:
        result = self.campaign()
        assert [g.key for g in failing_groups(result.groups(), "low")] == [
            "usage-differs:-:state.session_metrics.input_tokens"
        ]
        assert failing_groups(result.groups(), "medium") == []
