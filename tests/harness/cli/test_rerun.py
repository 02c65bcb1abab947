"""Code named by a file or a command line: `--rerun-failed` and `replay --json` run what a
report says only when it is what they would run, and a runtime or scenario path is called
only when it is declared to build one (`sys:exit`, `os:abort` never run)."""

# ruff: noqa: SIM300
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.harness.ticking_campaign import TickingCampaign

REPO = Path(__file__).resolve().parents[3]
CELL = "reference/research/tool-batch/sqlite/after-checkpoint:1"


def killpoint(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "killpoint.cli.main", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})},
    )


def report(tmp_path: Path, cell_id: str = CELL, **top: Any) -> Path:
    """A crafted report of one unexpected cell."""
    runtime, scenario, mode, store, schedule = cell_id.split("/")
    document = {
        "schema": "killpoint.matrix/2",
        "runtime": runtime,
        "store": store,
        "cells": [
            {
                "id": cell_id,
                "runtime": runtime,
                "scenario": scenario,
                "mode": mode,
                "store": store,
                "schedule": [schedule],
                "verdict": "lost",
                "expected": False,
            }
        ],
        **top,
    }
    path = tmp_path / "crafted.json"
    path.write_text(json.dumps(document))
    return path


def refused(result: subprocess.CompletedProcess[str], *named: str) -> None:
    """Exit 2, one line on stderr naming what is wrong, nothing run, no traceback."""
    assert 2 == result.returncode, (result.returncode, result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert 1 == len(lines), result.stderr
    for text in named:
        assert text in lines[0]
    assert "Traceback" not in result.stderr + result.stdout


def rerun(tmp_path: Path, path: Path, *more: str) -> subprocess.CompletedProcess[str]:
    return killpoint(
        "matrix", "--rerun-failed", str(path), *more,
        "--json", str(tmp_path / "out.json"), "--report", str(tmp_path / "out.html"),
        cwd=tmp_path,
    )  # fmt: skip


@pytest.mark.parametrize("spec", ["sys:exit", "os:abort", "pytest:main", "killpoint.cli.main:main"])
def test_a_reports_runtime_that_is_no_adapter_is_refused_and_never_called(
    tmp_path: Path, spec: str
) -> None:
    cell = f"{spec}/research/tool-batch/sqlite/after-checkpoint:1"
    result = rerun(tmp_path, report(tmp_path, cell))
    refused(result, repr(spec))
    assert not (tmp_path / "out.json").exists()


@pytest.mark.parametrize("spec", ["sys:exit", "os:abort", "pytest:main"])
def test_a_cell_ids_scenario_that_is_no_scenario_is_refused_and_never_called(
    tmp_path: Path, spec: str
) -> None:
    result = rerun(tmp_path, report(tmp_path, f"reference/{spec}/tool-batch/sqlite/mid-model:1"))
    refused(result, repr(spec))


def test_a_postgresql_report_without_a_store_is_refused(tmp_path: Path) -> None:
    """Its cells would run on SQLite under …/postgresql/… ids, and pass."""
    path = report(tmp_path, "reference/research/tool-batch/postgresql/after-checkpoint:1")
    refused(rerun(tmp_path, path), "ran on postgresql", "give --store")


def test_a_sqlite_report_with_another_runtime_typed_is_refused(tmp_path: Path) -> None:
    result = rerun(
        tmp_path, report(tmp_path), "--runtime", "killpoint.adapters.reference:transcript"
    )
    refused(result, "leave --runtime out")


def test_scenarios_typed_that_leave_out_the_reports_cells_are_refused(tmp_path: Path) -> None:
    refused(rerun(tmp_path, report(tmp_path), "--scenarios", "chain"), "leaves out research")


def test_a_cell_of_another_runtime_or_store_than_its_report_is_refused(tmp_path: Path) -> None:
    refused(rerun(tmp_path, report(tmp_path, runtime="agno")), "names runtime 'reference'")
    refused(rerun(tmp_path, report(tmp_path, store="postgresql")), "names store 'sqlite'")


@pytest.mark.parametrize("option", ["--runtime", "--scenarios"])
@pytest.mark.parametrize("spec", ["sys:exit", "os:abort"])
def test_the_same_paths_typed_on_the_command_line_are_refused(
    tmp_path: Path, option: str, spec: str
) -> None:
    result = killpoint("matrix", option, spec, "--json", str(tmp_path / "o.json"), cwd=tmp_path)
    refused(result, f"{option}={spec!r}")


def test_replay_of_a_cell_naming_sys_exit_is_refused(tmp_path: Path) -> None:
    refused(
        killpoint("replay", "sys:exit/research/tool-batch/sqlite/after-checkpoint:1", cwd=tmp_path),
        "'sys:exit'",
    )


def test_replay_json_refuses_a_report_that_disagrees_with_its_cell(tmp_path: Path) -> None:
    path = report(tmp_path, runtime="agno")
    refused(killpoint("replay", CELL, "--json", str(path), cwd=tmp_path), "names runtime")


def test_replay_of_a_postgresql_cell_without_a_store_is_refused(tmp_path: Path) -> None:
    cell = "reference/research/tool-batch/postgresql/after-checkpoint:1"
    refused(killpoint("replay", cell, cwd=tmp_path), "ran on postgresql", "give --store")


class TestRerunAgainstTheReport:
    """`--rerun-failed` says what changed since the report it reran, and judges with the
    accepted groups that report's campaign had."""

    RUNTIME = "tests.harness.broken_adapters:Stamped"  # after-checkpoint:1 fails, :2 passes

    def first(self, tmp_path: Path) -> dict[str, Any]:
        done = killpoint(
            "matrix", "--runtime", self.RUNTIME, "--scenarios", "research",
            "--modes", "tool-batch", "--points", "after-checkpoint:1,after-checkpoint:2",
            "--json", "a.json", "--report", "a.html", cwd=tmp_path,
        )  # fmt: skip
        assert 1 == done.returncode, done.stdout + done.stderr
        document: dict[str, Any] = json.loads((tmp_path / "a.json").read_text())
        return document

    def test_a_cell_still_failing_is_said_and_written(self, tmp_path: Path) -> None:
        self.first(tmp_path)
        done = rerun(tmp_path, tmp_path / "a.json")
        assert 1 == done.returncode, done.stdout + done.stderr
        assert f"against {tmp_path / 'a.json'}: 1 still failing, 0 now passing" in done.stdout
        written = json.loads((tmp_path / "out.json").read_text())["rerun_of"]
        row = f"{self.RUNTIME}/research/tool-batch/sqlite"
        assert [f"{row}/after-checkpoint:1"] == written["still_failing"]
        assert [] == written["now_passing"]

    def test_a_cell_now_passing_is_named(self, tmp_path: Path) -> None:
        """A report that says a reference cell lost its run; rerun, the cell passes."""
        done = rerun(tmp_path, report(tmp_path))
        assert 0 == done.returncode, done.stdout + done.stderr
        assert "crafted.json: 0 still failing, 1 now passing" in done.stdout
        assert f"  now passing: {CELL}" in done.stdout
        written = json.loads((tmp_path / "out.json").read_text())["rerun_of"]
        assert {"still_failing": [], "now_passing": [CELL]} == {
            k: written[k] for k in ("still_failing", "now_passing")
        }

    def test_the_earlier_accept_is_carried(self, tmp_path: Path) -> None:
        """The earlier campaign accepted the group (its report says so) but its cell was
        failing when written: the rerun accepts it without --accept, and exits 0."""
        document = self.first(tmp_path)
        (key,) = {g["key"] for g in document["groups"] if g["verdict"] != "ok"}
        document["accepted"] = {key: {"reason": "a clock in every run", "link": None}}
        (tmp_path / "earlier.json").write_text(json.dumps(document))
        done = rerun(tmp_path, tmp_path / "earlier.json")
        assert 0 == done.returncode, done.stdout + done.stderr
        assert f"accepted: {key}: 1 cell: a clock in every run" in done.stdout
        assert "0 still failing, 1 now passing" in done.stdout
        written = json.loads((tmp_path / "out.json").read_text())
        assert ["a clock in every run"] == [a["reason"] for a in written["accepted"].values()]


def test_a_rerun_of_an_incomplete_report_says_the_rest_is_not_covered(tmp_path: Path) -> None:
    """The rerun's failed cell passes now, so it exits 0, which is its own cells'; the
    report it reran never ran one cell of its plan, and the rerun says so."""
    row = dict(zip(("runtime", "scenario", "mode", "store"), CELL.split("/")[:4], strict=True))
    path = report(
        tmp_path,
        interrupted=True,
        summary={"planned": 2, "cells": 1},
        planned_cells=[{**row, "schedules": ["after-checkpoint:1", "after-checkpoint:2"]}],
    )
    done = rerun(tmp_path, path)
    assert 0 == done.returncode, done.stdout + done.stderr
    assert (
        f"{path} is incomplete: 1 of 2 planned cells did not run because the campaign was "
        "interrupted; this rerun ran its failed cells only: run the matrix again without "
        "--rerun-failed to cover the rest"
    ) in done.stdout.splitlines()


def test_a_rerun_of_a_complete_report_says_nothing_of_the_rest(tmp_path: Path) -> None:
    done = rerun(tmp_path, report(tmp_path))
    assert 0 == done.returncode, done.stdout + done.stderr
    assert "is incomplete" not in done.stdout


def power_loss_report(tmp_path: Path, model: dict[str, Any]) -> Path:
    path = report(tmp_path, "reference/research/tool-batch/sqlite/power-loss:1")
    document = json.loads(path.read_text())
    document["cells"][0]["store_at_crash"] = {"power_cut": {"model": model}}
    path.write_text(json.dumps(document))
    return path


def test_a_rerun_takes_the_cut_model_from_the_report(tmp_path: Path) -> None:
    """The failed power-loss cells are cut again with their own model (their evidence
    names it); another model typed is refused."""
    from killpoint.cli.rerun import report_cut, rerun_config
    from killpoint.engine.options import CampaignConfig

    path = power_loss_report(tmp_path, {"name": "torn-op", "seed": 5, "unit": 1})
    config, cells = rerun_config(CampaignConfig(), str(path), {})

    assert ("torn-op:byte", ["reference/research/tool-batch/sqlite/power-loss:1"]) == (
        config.cut,
        cells,
    )
    assert None is report_cut([{"store_at_crash": None}, {"id": "x"}])
    refused(rerun(tmp_path, path, "--cut", "reorder"), "leave --cut out", "torn-op:byte")


def test_a_rerun_takes_the_reports_seed_unless_one_is_typed(tmp_path: Path) -> None:
    """The cells are named by id whatever the seed, which decides the order they start in:
    a rerun keeps the report's, as it keeps its runtime and scenarios, and says it; a
    --seed typed wins."""
    from killpoint.cli.rerun import rerun_config
    from killpoint.engine.options import CampaignConfig

    path = report(tmp_path, seed=1234)
    assert 1234 == rerun_config(CampaignConfig(), str(path), {})[0].seed
    typed = CampaignConfig.from_options(seed="7")
    assert 7 == rerun_config(typed, str(path), {"seed": "7"})[0].seed
    done = rerun(tmp_path, path)
    assert 0 == done.returncode, done.stdout + done.stderr
    assert "seed 1234" in done.stdout.splitlines()
    assert 1234 == json.loads((tmp_path / "out.json").read_text())["seed"]


def nothing_rerun(tmp_path: Path, path: Path) -> list[str]:
    """`--rerun-failed` of a report without an unexpected cell whose campaign did not run
    its whole plan: exit 5 (a CI job is not green), nothing written, and what it printed."""
    done = rerun(tmp_path, path)
    assert 5 == done.returncode, done.stdout + done.stderr
    assert not (tmp_path / "out.json").exists()
    lines = done.stdout.splitlines()
    assert "nothing to rerun" not in done.stdout
    assert (
        "nothing was rerun; run the matrix again without --rerun-failed to cover them"
        == (lines[-1])
    )
    return lines


@pytest.mark.slow
def test_an_interrupted_report_is_no_all_clear(tmp_path: Path) -> None:
    """Ctrl-C a real campaign once a cell has finished: its report has no unexpected cell,
    and most of its plan did not run. The rerun says how many cells did not run and why,
    never "nothing to rerun" and 0, which a CI reads as all clear."""
    from killpoint.cli.rerun import failed_cells

    ticking = TickingCampaign(tmp_path, "--points", "all", new_session=True)
    try:
        ticking.ticks(2 * 3 + 10)
        ticking.finished(1)
        os.killpg(ticking.proc.pid, signal.SIGINT)
        _, err = ticking.finish()
    finally:
        ticking.close()
    assert 130 == ticking.proc.returncode, err
    document = json.loads(ticking.json.read_text())
    ran, planned = len(document["cells"]), document["summary"]["planned"]
    assert 0 < ran < planned and [] == failed_cells(document)
    assert [
        f"no unexpected cell in {ticking.json}, but the report is incomplete: "
        f"{planned - ran} of {planned} planned cells did not run because the campaign was "
        "interrupted"
    ] == nothing_rerun(tmp_path, ticking.json)[:-1]


@pytest.mark.slow
def test_a_report_stopped_at_its_budget_is_no_all_clear(tmp_path: Path) -> None:
    """A second cannot run the research rows crashed twice over (several hundred cells):
    the campaign stops at its budget with nothing unexpected, and its rerun says the report
    is incomplete and why."""
    first = killpoint(
        "matrix", "--scenarios", "research", "--modes", "runs,tool-batch,tool",
        "--depth", "2", "--budget", "1s", "--workers", "2", "--keep", "none",
        "--json", "a.json", "--report", "a.html", cwd=tmp_path,
    )  # fmt: skip
    assert first.returncode in (0, 5), first.stdout + first.stderr  # 5: no cell ran by then
    assert "budget" == json.loads((tmp_path / "a.json").read_text())["stopped"]["reason"]
    said = nothing_rerun(tmp_path, tmp_path / "a.json")[0]
    assert said.startswith(
        f"no unexpected cell in {tmp_path / 'a.json'}, but the report is incomplete: "
    )
    assert said.endswith(" because the campaign stopped at its time budget (1.0 s)")
