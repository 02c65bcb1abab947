"""The corpus check's page: every value from the corpus or the run is escaped text, the
two versions stand side by side with what changed marked, failing states come first."""

from __future__ import annotations

from pathlib import Path

from killpoint.corpus.check import CheckResult, StateResult
from killpoint.corpus.manifest import Versions
from killpoint.report.corpus_html import render

HOSTILE = '<img src=x onerror="alert(1)">'


def result() -> CheckResult:
    recorded = Versions("0.1.0", "3.11.7", "reference", {"SQLAlchemy": "2.1.9", "old-lib": "1"})
    checking = Versions("0.1.0", "3.11.7", "reference", {"SQLAlchemy": "2.2.0"})
    states = [
        StateResult("research/tool-batch/after-checkpoint:1", "research (version 1)",
                    "research", "tool-batch", "after-checkpoint:1", "ok", ""),
        StateResult("research/tool-batch/after-checkpoint:2", "research (version 1)",
                    "research", "tool-batch", "after-checkpoint:2", "diverged-after-upgrade",
                    f"runs[0].content: {HOSTILE} in the resumed run", [f"detail {HOSTILE}"],
                    recorded_verdict="diverged"),
    ]  # fmt: skip
    return CheckResult(Path(f"/corpora/{HOSTILE}"), recorded, checking, states, seconds=2.0)


def test_run_content_is_escaped() -> None:
    page = render(result())
    assert HOSTILE not in page
    assert "&lt;img src=x onerror=&#34;alert(1)&#34;&gt;" in page
    assert "<script" not in page and "script-src" not in page


def test_versions_side_by_side_with_changes_marked() -> None:
    rows = {name: (a, b, changed) for name, a, b, changed in result().version_rows()}
    assert rows["SQLAlchemy"] == ("2.1.9", "2.2.0", True)
    assert rows["old-lib"] == ("1", "-", True)
    assert rows["killpoint"] == ("0.1.0", "0.1.0", False)
    assert render(result()).count('class="changed"') == 2


def test_failing_states_come_first_and_say_the_recorded_cell() -> None:
    page = render(result())
    states = page[page.index('id="states"') :]
    assert states.index("after-checkpoint:2") < states.index("after-checkpoint:1")
    assert "✗ 1 failing state" in page
    assert "the recording version's own cell here: diverged" in page
