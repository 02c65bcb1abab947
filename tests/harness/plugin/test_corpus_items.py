"""The corpus's pytest face, end to end with pytester: `--crash-corpus DIR` collects one
item per state under a stable id and fails the ones a change breaks;
`crash.check_upgrade(corpus=DIR)` fails its test naming them."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from killpoint.corpus.record import record
from killpoint.engine.options import CampaignConfig
from tests.harness.plugin.test_hooks import run

pytest_plugins = ["pytester"]

IDS = [f"killpoint-corpus::research/tool-batch/after-checkpoint:{k}" for k in (1, 2, 3, 4)]


@pytest.fixture(scope="module")
def corpus() -> Iterator[Path]:
    temp = Path(tempfile.mkdtemp(prefix="kp-corpus-", dir="/tmp"))
    config = CampaignConfig.from_options(
        scenarios=("research",), modes=("tool-batch",), points="after-checkpoint",
        workers=2, keep="none",
    )  # fmt: skip
    record(config, temp / "c")
    yield temp / "c"
    shutil.rmtree(temp)


def test_each_state_is_an_item_with_a_stable_id(pytester: pytest.Pytester, corpus: Path) -> None:
    """Collected from the manifest: the same ids in every run."""
    result = run(pytester, f"--crash-corpus={corpus}", "--collect-only", "-q")
    listed = [line for line in result.outlines if line.startswith("killpoint-corpus")]
    assert listed == IDS


def test_a_breaking_change_fails_its_states(pytester: pytest.Pytester, corpus: Path) -> None:
    """Renaming a tool the old rows call fails the states that hold such a call, and
    only those."""
    result = run(pytester, f"--crash-corpus={corpus}", "--crash-scenario-version=tool-renamed")
    result.assert_outcomes(passed=1, failed=3)
    result.stdout.fnmatch_lines(["*after-checkpoint:2: diverged-after-upgrade:*fetch_result*"])


def test_check_upgrade_in_a_test(
    pytester: pytest.Pytester, corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fixture's check_upgrade passes under the recording code and fails under a
    runtime that re-runs finished tools."""
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).parents[3]))
    pytester.makepyfile(
        test_up=f"""
        def test_same(crash):
            result = crash.check_upgrade({str(corpus)!r})
            assert set(result.counts()) == {{"ok"}}

        def test_rerunning(crash):
            crash.check_upgrade({str(corpus)!r}, "tests.harness.upgrade_runtimes:rerunning")
        """
    )
    result = run(pytester, "-p", "no:cacheprovider", f"--rootdir={pytester.path}")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*effect-repeated-after-upgrade*"])


def test_not_a_corpus_is_a_usage_error(pytester: pytest.Pytester) -> None:
    result = run(pytester, f"--crash-corpus={pytester.path}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*corpus.json* is missing*"])
