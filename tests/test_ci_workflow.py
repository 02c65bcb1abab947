"""The GitHub Actions workflow is valid YAML of a workflow's shape, its sharded jobs are the
ones docs/how-to/ci.md shows (block for block), their killpoint command lines are ones
killpoint's parser takes, the shards cover 1..N, and the page's Kubernetes Indexed Job
shards by JOB_COMPLETION_INDEX over the same N it runs."""

# ruff: noqa: SIM300
from __future__ import annotations

import re
import shlex
import textwrap
from pathlib import Path
from typing import Any

import yaml

from killpoint.cli.main import build_parser

REPO = Path(__file__).resolve().parents[1]
WORKFLOW = REPO / ".github" / "workflows" / "fault-injection.yml"
YAML_BLOCK = re.compile(r"^```yaml\n(.*?)^```", re.S | re.M)
SHARDED = ("crash-matrix-shard", "crash-matrix-merge")


def workflow() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(WORKFLOW.read_text())
    return data


GUIDE = REPO / "docs" / "how-to" / "ci.md"


def guide_blocks() -> list[Any]:
    text = GUIDE.read_text()
    return [yaml.safe_load(textwrap.dedent(b)) for b in YAML_BLOCK.findall(text)]


def killpoint_lines(script: str) -> list[list[str]]:
    """The killpoint command lines of a step's script, `${{ ... }}` put as a value."""
    found = []
    for line in script.replace("\\\n", " ").splitlines():
        line = re.sub(r"\$\{\{[^}]*\}\}", "1", line).strip()
        line = re.sub(r"\$\(\(JOB_COMPLETION_INDEX \+ 1\)\)", "1", line)
        if line.startswith("killpoint "):
            found.append(shlex.split(line)[1:])
    return found


def test_the_workflow_has_a_workflows_shape() -> None:
    data = workflow()
    assert "fault-injection" == data["name"]
    assert {"push", "pull_request"} <= set(data[True])  # YAML 1.1 reads `on:` as true
    for name, job in data["jobs"].items():
        assert job["runs-on"], name
        for step in job["steps"]:
            assert ("uses" in step) != ("run" in step), (name, step)


def test_the_sharded_jobs_are_what_the_guide_shows() -> None:
    jobs = workflow()["jobs"]
    shown = [b for b in guide_blocks() if isinstance(b, dict) and set(SHARDED) <= set(b)]
    assert 1 == len(shown), "docs/how-to/ci.md shows the sharded jobs in one yaml block"
    assert {name: jobs[name] for name in SHARDED} == {name: shown[0][name] for name in SHARDED}


def test_the_shards_cover_one_to_n_and_the_merge_waits_for_them() -> None:
    jobs = workflow()["jobs"]
    shard, merge = jobs["crash-matrix-shard"], jobs["crash-matrix-merge"]
    runs = [s["run"] for s in shard["steps"] if "run" in s and "killpoint" in s["run"]]
    (script,) = runs
    count = int(re.search(r"--shard \$\{\{ matrix\.shard \}\}/(\d+)", script).group(1))  # type: ignore[union-attr]
    assert list(range(1, count + 1)) == shard["strategy"]["matrix"]["shard"]
    assert "--seed ${{ github.run_id }}" in script  # one seed for every shard of a run
    assert "crash-matrix-shard" == merge["needs"]
    assert "always()" == merge["if"]
    (merging,) = [s["run"] for s in merge["steps"] if "run" in s and "killpoint merge" in s["run"]]
    assert "reports/shard-*.json" in merging
    uploads = [s for s in merge["steps"] if s.get("uses", "").startswith("actions/upload-artifact")]
    assert 1 == len(uploads)


def test_every_killpoint_line_of_the_workflow_and_the_job_parses() -> None:
    scripts = [s["run"] for job in workflow()["jobs"].values() for s in job["steps"] if "run" in s]
    jobs = [b for b in guide_blocks() if isinstance(b, dict) and b.get("kind") == "Job"]
    assert 1 == len(jobs), "docs/how-to/ci.md shows one Kubernetes Job"
    (container,) = jobs[0]["spec"]["template"]["spec"]["containers"]
    scripts += container["args"]
    lines = [line for s in scripts for line in killpoint_lines(s)]
    assert {"matrix", "merge"} <= {line[0] for line in lines}
    for words in lines:
        build_parser().parse_args(words)  # exits 2 on anything it refuses


def test_the_kubernetes_job_is_indexed_over_its_shards() -> None:
    (job,) = [b for b in guide_blocks() if isinstance(b, dict) and b.get("kind") == "Job"]
    spec = job["spec"]
    assert "Indexed" == spec["completionMode"]
    (container,) = spec["template"]["spec"]["containers"]
    (args,) = container["args"]
    count = int(re.search(r"--shard \$\(\(JOB_COMPLETION_INDEX \+ 1\)\)/(\d+)", args).group(1))  # type: ignore[union-attr]
    assert count == spec["completions"] == spec["parallelism"]
    assert "Never" == spec["template"]["spec"]["restartPolicy"]
