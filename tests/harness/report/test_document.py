"""A report names the versions of what the campaign imported, LangGraph's savers included,
and nothing it did not load; a row whose baseline failed says its crash cells were not
planned."""

# ruff: noqa: SIM300
from __future__ import annotations

from importlib import metadata
from pathlib import Path

import pytest

from killpoint.engine.campaign import CampaignResult
from killpoint.report.document import read_json, versions, write_json
from tests.harness.failed_baseline import (
    OFFERED,
    ROW,
    document_of,
    failed_row,  # noqa: F401  (a fixture)
)


@pytest.mark.parametrize(
    "dist",
    [
        "langgraph-checkpoint",
        "langgraph-checkpoint-sqlite",
        "langgraph-checkpoint-postgres",
        "aiosqlite",
    ],
)
def test_each_installed_saver_is_named_with_its_version(dist: str) -> None:
    try:
        installed = metadata.version(dist)
    except metadata.PackageNotFoundError:
        pytest.skip(f"{dist} is not installed here")
    assert versions("langgraph")[dist] == installed


def test_what_is_not_installed_is_left_out() -> None:
    assert "no-such-distribution-here" not in versions("no_such_module_here:factory")
    assert versions()["python"].count(".") == 2


def test_an_agno_campaign_names_agno_and_no_other_runtime_library() -> None:
    """Issue 56: the versions row of an agno campaign listed langgraph and dbos, which the
    campaign never loaded."""
    pytest.importorskip("agno")
    found = versions("agno")
    assert "agno" in found and "killpoint" in found
    assert not {"langgraph", "langgraph-checkpoint", "dbos", "pydantic-ai-slim"} & set(found), found


def test_a_postgresql_campaign_names_its_driver() -> None:
    pytest.importorskip("psycopg")
    assert "psycopg" in versions("agno", "postgresql")
    assert "psycopg" not in versions("agno", "sqlite")


def test_an_accepted_group_a_narrowed_campaign_did_not_meet_is_not_exercised() -> None:
    """--points kills never runs a takeover: an accepted stale-write group it did not meet
    is "not exercised" in the JSON, never fixed; a whole campaign says "no longer occurs"."""
    from killpoint.engine.campaign import CampaignResult
    from killpoint.engine.options import CampaignConfig
    from killpoint.judge.groups import Accepted
    from killpoint.report.document import narrowed, to_document

    key = "stale-write:-:store"
    accepted = {key: Accepted(key, "the lease is checked late")}
    kills = CampaignResult(CampaignConfig.from_options(points="kills"), seed=1, accepted=accepted)
    document = to_document(kills, ["killpoint", "matrix"])
    assert document["narrowed"] == "--points kills"
    assert document["accepted"][key]["this_campaign"] == "not exercised"
    whole = CampaignResult(CampaignConfig.from_options(), seed=1, accepted=accepted)
    assert narrowed(whole) is None
    assert to_document(whole, ["killpoint"])["accepted"][key]["this_campaign"] == "no longer occurs"
    assert narrowed(whole, rerun=True) == "it reran the failed cells of a report"


def test_a_row_whose_baseline_failed_says_so_in_its_baseline_and_reads_back(
    failed_row: CampaignResult,  # noqa: F811
    tmp_path: Path,
) -> None:
    """The row's baseline entry (kept by a merge of shards, unlike the plan) says its crash
    cells were not planned and how many; the file reads back as a report."""
    path = tmp_path / "m.json"
    write_json(document_of(failed_row), path)
    (base,) = read_json(path)["baselines"]
    assert ROW == tuple(base[k] for k in ("runtime", "scenario", "mode", "store"))
    assert (True, OFFERED) == (base["not_planned"], base["cells_not_planned"])
