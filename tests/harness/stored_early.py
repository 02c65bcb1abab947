"""A real campaign of the broken runtime that writes each mid-run checkpoint COMPLETED
(`running_as_completed`), for the tests of how its causes and its reports read: research
and multi-run in tool-batch, after each checkpoint. Of its 9 cells, 7 find the run already
COMPLETED in the store before its end (`terminal-early`, corrupt), so nothing resumes it:
in all 7 its messages and content differ from the baseline's (groups whose kind says
`diverged`, of corrupt cells), and in research's first 3 the tool executions and effects it
had still to make are lost (too few of the 7 to cluster with it by the cells they share)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from killpoint.engine.campaign import Campaign, CampaignResult
from killpoint.engine.options import CampaignConfig

RUNTIME = "tests.harness.broken_runtimes:running_as_completed"
EARLY = 7  # cells whose crash finds the run COMPLETED before its end
LOSING = 3  # of those, research's that lose executions and an effect


def run(work: Path) -> CampaignResult:
    """The campaign, run for real (its workers, its SQLite stores)."""
    config = CampaignConfig.from_options(
        runtime=RUNTIME, scenarios="research,multi-run", modes="tool-batch",
        points="after-checkpoint", keep="none", work_root=str(work), seed=5,
    )  # fmt: skip
    return Campaign(config).run()


@pytest.fixture(scope="module")
def stored_early(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CampaignResult]:
    """The campaign, once per test module."""
    yield run(tmp_path_factory.mktemp("stored-early") / "work")


def document_of(result: CampaignResult) -> dict[str, Any]:
    from killpoint.report.document import to_document

    return to_document(result, ["killpoint", "matrix"])


__all__ = ["EARLY", "LOSING", "RUNTIME", "document_of", "run", "stored_early"]
