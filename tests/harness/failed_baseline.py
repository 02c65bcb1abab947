"""A real campaign whose row's uninterrupted run fails, for the tests of what its reports
say of that row: the broken runtime `silent_final_write` (its final write fails silently,
so every baseline acknowledges a status its store does not hold) on research/tool-batch.
Its run still reaches its end, so the crash cells its trace offers are counted: three,
after checkpoints 1 to 3 (its fourth, the final one, never lands). With `--fail-fast`
(`stopped_row`), the row's one cell is the first unexpected one: the campaign stops there,
and says so."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from killpoint.engine.campaign import Campaign, CampaignResult, Recorder
from killpoint.engine.options import CampaignConfig

RUNTIME = "tests.harness.broken_runtimes:silent_final_write"
ROW = (RUNTIME, "research", "tool-batch", "sqlite")
OFFERED = 3  # after-checkpoint:1..3
# Where its problem starts (Baseline.problem, killpoint.engine.engine._read_baseline).
PROBLEM = "the baseline acknowledged what its store does not hold"


def config(work: Path, runtime: str = RUNTIME, **options: Any) -> CampaignConfig:
    return CampaignConfig.from_options(
        runtime=runtime, scenarios="research", modes="tool-batch", points="after-checkpoint",
        keep="none", work_root=str(work), seed=5, **options,
    )  # fmt: skip


def run(
    work: Path,
    recorder: Recorder | None = None,
    runtime: str = RUNTIME,
    cells: list[str] | None = None,
    **options: Any,
) -> CampaignResult:
    """The campaign, run for real (its workers, its SQLite stores); `cells`: only those
    (a rerun's), `options`: more of the campaign's (`fail_fast=True`)."""
    return Campaign(config(work, runtime, **options), cells=cells).run(recorder=recorder)


@pytest.fixture(scope="module")
def failed_row(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CampaignResult]:
    """The campaign, once per test module."""
    yield run(tmp_path_factory.mktemp("failed-baseline") / "work")


@pytest.fixture(scope="module")
def stopped_row(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CampaignResult]:
    """The campaign with `--fail-fast`, once per test module: its one cell is unexpected, so
    the campaign stops there (`stopped`)."""
    yield run(tmp_path_factory.mktemp("failed-baseline-stopped") / "work", fail_fast=True)


def document_of(result: CampaignResult) -> dict[str, Any]:
    from killpoint.report.document import to_document

    return to_document(result, ["killpoint", "matrix"])


__all__ = [
    "OFFERED",
    "PROBLEM",
    "ROW",
    "RUNTIME",
    "config",
    "document_of",
    "failed_row",
    "run",
    "stopped_row",
]
