"""Two shards of a campaign, run for real and merged, give the report one unsharded run of
it gives, cell for cell; `killpoint merge` refuses what is not the shards of one campaign."""

# ruff: noqa: SIM300
from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from tests.harness.cli.test_rerun import killpoint, refused

SELECTION = (
    "--scenarios", "research,tool-error", "--modes", "tool-batch,runs",
    "--points", "boundaries,kills", "--seed", "11", "--workers", "2",
)  # fmt: skip
TIMED = {"seconds", "cells_per_second"}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One unsharded campaign (all.json) and its two shards (s1.json, s2.json)."""
    folder = tmp_path_factory.mktemp("shards")
    for name, more in (("all", ()), ("s1", ("--shard", "1/2")), ("s2", ("--shard", "2/2"))):
        result = killpoint(
            "matrix", *SELECTION, *more,
            "--json", f"{name}.json", "--report", f"{name}.html", cwd=folder,
        )  # fmt: skip
        assert 0 == result.returncode, (name, result.stdout, result.stderr)
    return folder


def read(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def judged(cell: dict[str, Any]) -> dict[str, Any]:
    """What a cell's judgement is, without what timing and folders change."""
    keys = ("kind", "severity", "verdict", "expected", "path", "tool", "group", "sentence")
    return {
        "id": cell["id"],
        "verdict": cell["verdict"],
        "expected": cell["expected"],
        "accepted": cell["accepted"],
        "duplicates": cell["duplicates"],
        "bound": cell["bound"],
        "detail": cell["detail"],
        "findings": [{k: f.get(k) for k in keys} for f in cell["findings"]],
    }


def cases(path: Path) -> list[tuple[str, str, str]]:
    """(classname, name, outcome) of every test case of a JUnit file."""
    root = ET.parse(path).getroot()
    found = []
    for case in root.iter("testcase"):
        outcome = next((c.tag for c in case if c.tag in ("failure", "skipped")), "passed")
        found.append((case.get("classname", ""), case.get("name", ""), outcome))
    return sorted(found)


class TestEveryOutput:
    """Issue 51: JUnit was rendered from the live result, so `killpoint merge` could write
    none and a sharded CI job got no test report. Every output is rendered from the
    document: merge writes each, and `report` writes each from a saved JSON."""

    def test_a_sharded_job_gets_the_junit_an_unsharded_one_gets(self, runs: Path) -> None:
        result = killpoint(
            "merge", "s1.json", "s2.json", "-o", "out.json", "--junit", "out.xml",
            "--markdown", "out.md", "--text", "out.txt", cwd=runs,
        )  # fmt: skip
        assert 0 == result.returncode, result.stderr
        whole = killpoint("report", "all.json", "--junit", "all.xml", cwd=runs)
        assert 0 == whole.returncode, whole.stderr
        merged = cases(runs / "out.xml")
        assert len(merged) >= len(read(runs / "all.json")["cells"])
        assert cases(runs / "all.xml") == merged
        assert (runs / "out.md").read_text().startswith("## killpoint crash matrix: reference")
        text = (runs / "out.txt").read_text()
        assert "crash matrix" in text and read(runs / "out.json")["command"].startswith("killpoint")
        for name in ("out.xml", "out.md", "out.txt"):
            assert str(runs / name) in result.stdout

    def test_a_format_given_the_path_of_another_output_is_refused(self, runs: Path) -> None:
        result = killpoint(
            "merge", "s1.json", "s2.json", "-o", "twice.json", "--junit", "twice.json", cwd=runs
        )
        refused(result, "--junit names 'twice.json', a path another report is written to")


class TestMergedEqualsUnsharded:
    def test_each_shard_holds_its_cells_and_says_which_it_is(self, runs: Path) -> None:
        whole = {c["id"] for c in read(runs / "all.json")["cells"]}
        one, two = read(runs / "s1.json"), read(runs / "s2.json")
        assert {"index": 1, "count": 2} == one["shard"]
        assert {"index": 2, "count": 2} == two["shard"]
        ids_one, ids_two = {c["id"] for c in one["cells"]}, {c["id"] for c in two["cells"]}
        assert ids_one and ids_two and not ids_one & ids_two
        assert whole == ids_one | ids_two
        assert len(ids_one) == one["summary"]["planned"]

    def test_the_merge_is_the_unsharded_report_cell_for_cell(self, runs: Path) -> None:
        result = killpoint(
            "merge", "s1.json", "s2.json", "-o", "merged.json", "--report", "merged.html",
            cwd=runs,
        )  # fmt: skip
        assert 0 == result.returncode, result.stderr
        assert "merged 2 shards" in result.stdout
        whole, merged = read(runs / "all.json"), read(runs / "merged.json")
        assert [judged(c) for c in whole["cells"]] == [judged(c) for c in merged["cells"]]
        assert whole["groups"] == merged["groups"]
        assert whole["without_crash"] == merged["without_crash"]
        assert whole["skipped"] == merged["skipped"]
        drop = lambda d: {k: v for k, v in d.items() if k not in TIMED}  # noqa: E731
        assert drop(whole["summary"]) == drop(merged["summary"])
        assert [drop(b) for b in whole["baselines"]] == [drop(b) for b in merged["baselines"]]
        for key in ("seed", "runtime", "store", "scenarios", "modes", "points", "depth"):
            assert whole[key] == merged[key]
        assert "shard" not in merged
        assert ["s1.json", "s2.json"] == merged["merged_from"]
        assert whole["cells"][0]["id"] in (runs / "merged.html").read_text()

    def test_the_merge_keeps_the_plan_of_the_unsharded_run(self, runs: Path) -> None:
        """The plan is what tells a cell not run from one that does not apply: each row's
        cells of both shards together are the unsharded run's."""
        killpoint("merge", "s1.json", "s2.json", "-o", "plan.json", cwd=runs)
        plan = lambda d: {  # noqa: E731
            tuple(r[k] for k in ("runtime", "scenario", "mode", "store")): sorted(r["schedules"])
            for r in d["planned_cells"]
        }
        whole = plan(read(runs / "all.json"))
        assert whole and whole == plan(read(runs / "plan.json"))

    def test_the_merge_and_the_unsharded_run_have_no_difference(self, runs: Path) -> None:
        killpoint("merge", "s2.json", "s1.json", "-o", "m2.json", cwd=runs)
        result = killpoint("diff", "all.json", "m2.json", cwd=runs)
        assert 0 == result.returncode, result.stderr
        assert "0 new groups, 0 fixed, 0 still failing" in result.stdout
        assert "0 new, 0 fixed, 0 still failing, 0 flaky, 0 not run" in result.stdout


class TestRefused:
    def test_a_missing_shard_is_named(self, runs: Path) -> None:
        result = killpoint("merge", "s1.json", "-o", "part.json", cwd=runs)
        refused(result, "shard 2/2 missing", "given: 1/2", "--partial")
        assert not (runs / "part.json").exists()

    def test_partial_merges_and_says_what_is_missing(self, runs: Path) -> None:
        result = killpoint("merge", "s1.json", "--partial", "-o", "part.json", cwd=runs)
        assert 0 == result.returncode, result.stderr
        merged = read(runs / "part.json")
        assert "shard 2/2 not merged" in merged["narrowed"]
        assert len(read(runs / "s1.json")["cells"]) == len(merged["cells"])

    def test_a_shard_given_twice_is_named(self, runs: Path) -> None:
        shutil.copy(runs / "s1.json", runs / "copy.json")
        result = killpoint("merge", "s1.json", "copy.json", "s2.json", "-o", "x.json", cwd=runs)
        refused(result, "shard 1/2 is given twice", "s1.json", "copy.json")

    @pytest.mark.parametrize(
        ("key", "value", "named"),
        [
            ("seed", 12, "seed 11 vs 12"),
            ("points", "boundaries", "points 'boundaries,kills' vs 'boundaries'"),
            ("scenarios", ["research"], "scenarios"),
            ("versions", {"python": "3.0.0"}, "python"),
        ],
    )
    def test_shards_of_another_campaign_are_refused_naming_the_difference(
        self, runs: Path, key: str, value: Any, named: str
    ) -> None:
        other = read(runs / "s2.json")
        other[key] = value if key != "versions" else {**other["versions"], **value}
        (runs / "other.json").write_text(json.dumps(other))
        result = killpoint("merge", "s1.json", "other.json", "-o", "x.json", cwd=runs)
        refused(result, "other.json is another campaign than s1.json", named)
        assert not (runs / "x.json").exists()

    def test_an_unsharded_report_is_no_shard(self, runs: Path) -> None:
        result = killpoint("merge", "all.json", "s1.json", "-o", "x.json", cwd=runs)
        refused(result, "all.json is not a shard", "--shard K/N")

    def test_a_shard_holding_another_shards_cell_is_refused(self, runs: Path) -> None:
        one, two = read(runs / "s1.json"), read(runs / "s2.json")
        one["cells"].append(two["cells"][0])
        (runs / "forged.json").write_text(json.dumps(one))
        result = killpoint("merge", "forged.json", "s2.json", "-o", "x.json", cwd=runs)
        refused(result, "holds cell", two["cells"][0]["id"])

    def test_a_shard_that_repeats_a_cell_is_refused(self, runs: Path) -> None:
        """A cell listed twice would be counted twice (a 239-cell campaign reported as
        359): refused, naming the cell and the file."""
        one = read(runs / "s1.json")
        one["cells"].append(one["cells"][0])
        (runs / "twice.json").write_text(json.dumps(one))
        result = killpoint("merge", "twice.json", "s2.json", "-o", "x.json", cwd=runs)
        refused(result, "twice.json lists cell", one["cells"][0]["id"], "more than once")
        assert not (runs / "x.json").exists()

    def test_the_shards_together_are_bounded(self, runs: Path) -> None:
        """Each file is bounded by itself; their sum is bounded before any is read, and the
        message names the limit and the option that raises it."""
        big = runs / "big.json"
        with big.open("wb") as f:
            f.truncate(70 * 1024 * 1024)  # sparse: over the default alone, never read
        result = killpoint("merge", "s1.json", "big.json", "-o", "x.json", cwd=runs)
        refused(result, "hold 70.", "over the 64 MiB merge reads", "--max-input-mb")
        # Raised, the sum passes; the file alone is still held to a report's own limit.
        result = killpoint(
            "merge", "s1.json", "big.json", "-o", "x.json", "--max-input-mb", "100", cwd=runs
        )
        refused(result, "big.json' is larger than 32 MiB")

    def test_shards_of_different_counts_are_refused(self, runs: Path) -> None:
        other = read(runs / "s2.json")
        other["shard"] = {"index": 2, "count": 3}
        other["cells"] = []
        (runs / "three.json").write_text(json.dumps(other))
        result = killpoint("merge", "s1.json", "three.json", "-o", "x.json", cwd=runs)
        refused(result, "three.json is shard 2/3", "share N")


class TestDiffBase:
    def test_the_merged_html_shows_what_changed_against_a_base_escaped(self, runs: Path) -> None:
        """A base where one cell failed, with HTML in its group's example: the merged page
        names the cell fixed and the group, and shows the example as text."""
        base = read(runs / "all.json")
        victim = base["cells"][0]
        victim.update(verdict="lost", expected=False)
        base["groups"].append(
            {
                "key": "acknowledged-lost:-:runs[*].status",
                "kind": "acknowledged-lost",
                "tool": None,
                "path": "runs[*].status",
                "severity": "high",
                "verdict": "lost",
                "meaning": "m",
                "count": 1,
                "cells": [victim["id"]],
                "example": "<script>alert(1)</script>",
                "example_cell": victim["id"],
                "replay": "",
                "accepted": None,
            }
        )
        (runs / "base.json").write_text(json.dumps(base))
        result = killpoint(
            "merge", "s1.json", "s2.json", "-o", "d.json", "--report", "d.html",
            "--diff-base", "base.json", cwd=runs,
        )  # fmt: skip
        assert 0 == result.returncode, result.stderr
        page = (runs / "d.html").read_text()
        assert 'id="diff"' in page
        assert "Against base.json: 0 new groups, 1 fixed" in page
        assert "Fixed cells: 1" in page and victim["id"] in page
        assert "<script>alert(1)" not in page
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
        report = killpoint("report", "d.json", "-o", "r.html", "--diff-base", "base.json", cwd=runs)
        assert 0 == report.returncode, report.stderr
        assert "Against base.json: 0 new groups, 1 fixed" in (runs / "r.html").read_text()


@pytest.mark.slow
def test_a_shard_stopped_at_its_budget_leaves_the_merge_stopped(runs: Path) -> None:
    """A merge dropped the shards' `stopped`: a CI job whose shard ran out of its budget
    got a merged report and JUnit that read as a complete, green campaign. The merge says
    the campaign stopped, counts what every shard ran against the whole plan, and its
    other outputs name the cells not run and why."""
    first = killpoint(
        "matrix", *SELECTION, "--shard", "1/2", "--budget", "1s",
        "--json", "b1.json", "--report", "b1.html", cwd=runs,
    )  # fmt: skip
    assert first.returncode in (0, 5), first.stdout + first.stderr  # 5: no cell ran by then
    assert "budget" == read(runs / "b1.json")["stopped"]["reason"]
    result = killpoint(
        "merge", "b1.json", "s2.json", "-o", "b.json", "--junit", "b.xml", "--text", "b.txt",
        cwd=runs,
    )  # fmt: skip
    assert 0 == result.returncode, result.stderr
    merged = read(runs / "b.json")
    stopped = merged["stopped"]
    assert "budget" == stopped["reason"] and 1.0 == stopped["budget"]
    planned = sum(len(r["schedules"] or ()) for r in merged["planned_cells"])
    assert (len(merged["cells"]), planned) == (stopped["ran"], stopped["planned"])
    assert stopped["ran"] < len(read(runs / "all.json")["cells"])
    assert "it stopped at its time budget (1.0 s): " in merged["narrowed"]
    assert "stopped at its time budget (1.0 s)" in (runs / "b.txt").read_text()
    not_run = [c for c in cases(runs / "b.xml") if c[1].endswith("not-run")]
    assert not_run and all("skipped" == outcome for *_, outcome in not_run)
    assert "stopped at its time budget" in (runs / "b.xml").read_text()
