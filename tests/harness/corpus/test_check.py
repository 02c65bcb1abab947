"""`corpus check`: a corpus recorded with the reference runtime, resumed under each modelled
change of its scenario and under deliberately broken new versions of the runtime; each
state lands in the group its change calls for."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from killpoint.corpus import manifest as mf
from killpoint.corpus.check import CheckResult, check, repeated
from killpoint.corpus.record import record
from killpoint.corpus.snapshot import STORE
from killpoint.engine.options import CampaignConfig

POINTS = "after-checkpoint,mid-batch"
# Versions whose change touches fetch_detail: a state whose store holds a fetch_detail
# call resumes into a session that today's baseline does not have.
TOUCHING_FETCH = {"tool-renamed", "tool-removed", "signature-changed"}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("corpus") / "research"
    config = CampaignConfig.from_options(
        runtime="reference",
        scenarios=("research",),
        modes=("tool-batch",),
        points=POINTS,
        workers=2,
        keep="none",
    )
    recorded = record(config, out)
    assert len(recorded.states) >= 6
    return out


def groups_by_state(result: CheckResult) -> dict[str, str]:
    return {s.id: s.group for s in result.states}


def states(corpus: Path) -> list[mf.StateInfo]:
    m = mf.read_manifest(corpus)
    return [mf.read_state(corpus / mf.STATES / mf.folder_name(s)) for s in m.states]


def holds_fetch(corpus: Path, state: mf.StateInfo) -> bool:
    """The state's store holds a fetch_detail call: done, or asked for by a model reply the
    reference runtime journaled before its batch ran (a resume replays that reply)."""
    if "fetch_detail" in state.tool_calls:
        return True
    db = corpus / mf.STATES / mf.folder_name(state.id) / STORE
    with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
        bodies = [row[0] for row in conn.execute("SELECT body FROM kp_replies")]
    return any("fetch_detail" in str(body) for body in bodies)


def status_at_kill(corpus: Path, state: mf.StateInfo) -> str:
    """The status the kill left the state's run in, as the recording version stored it."""
    db = corpus / mf.STATES / mf.folder_name(state.id) / STORE
    with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
        rows = [r[0] for r in conn.execute("SELECT status FROM kp_runs ORDER BY created_at")]
    return str(rows[state.run_index])


class TestScenarioVersions:
    def test_same_version_resumes_every_state_ok(self, corpus: Path) -> None:
        """Checked with the code that recorded it, every state resumes as the baseline ends."""
        result = check(corpus, "reference")
        assert set(groups_by_state(result).values()) == {"ok"}
        assert not result.failing

    @pytest.mark.parametrize(
        "version",
        ["tool-renamed", "tool-added", "tool-removed", "signature-changed", "instructions-changed"],
    )
    def test_each_change_gets_its_group(self, corpus: Path, version: str) -> None:
        """A change to a tool the old rows call diverges exactly the states holding such a
        call; a tool added, or new instructions, resumes every state ok."""
        result = check(corpus, "reference", scenario_version=version)
        expected = {
            s.id: "diverged-after-upgrade"
            if version in TOUCHING_FETCH and holds_fetch(corpus, s)
            else "ok"
            for s in states(corpus)
        }
        assert expected == groups_by_state(result)
        assert {s.checked_as for s in result.states} == {f"research@{version}"}

    def test_report_names_both_versions(self, corpus: Path) -> None:
        """The result holds the recording and checking versions side by side."""
        result = check(corpus, "reference", scenario_version="tool-added")
        data = result.to_json()
        assert data["recorded"]["runtime"] == "reference"
        assert data["checking"]["killpoint"] == data["recorded"]["killpoint"]
        assert all(s["recorded_as"] == "research (version 1)" for s in data["states"])


class TestBrokenUpgrades:
    def test_misread_rows_diverge(self, corpus: Path) -> None:
        """A new version that loads old tool results wrongly is diverged-after-upgrade on
        every state that holds one, never ok."""
        result = check(corpus, "tests.harness.upgrade_runtimes:misreading")
        expected = {
            s.id: "diverged-after-upgrade" if s.tool_calls else "ok" for s in states(corpus)
        }
        assert expected == groups_by_state(result)
        assert any(s.tool_calls for s in states(corpus))

    def test_refusing_old_rows_fails_closed(self, corpus: Path) -> None:
        """A new version that raises on old rows, before writing, fails closed: low, not
        failing the check."""
        result = check(corpus, "tests.harness.upgrade_runtimes:refusing")
        assert set(groups_by_state(result).values()) == {"fails-closed"}
        assert not result.failing
        assert all("older version" in s.sentence for s in result.states)

    def test_rerunning_finished_tools_repeats_effects(self, corpus: Path) -> None:
        """A new version that re-runs finished tools repeats what the old worker did."""
        result = check(corpus, "tests.harness.upgrade_runtimes:rerunning")
        for s in result.states:
            assert s.group == "effect-repeated-after-upgrade", (s.id, s.group, s.sentence)
        assert result.failing

    def test_a_resume_that_drives_nothing_strands_the_run(self, corpus: Path) -> None:
        """A new version that returns the old run as it stands leaves it RUNNING."""
        result = check(corpus, "tests.harness.upgrade_runtimes:stranding")
        assert set(groups_by_state(result).values()) == {"stranded"}
        assert all("is RUNNING" in s.sentence for s in result.states)


class TestWhoseFault:
    def test_a_resume_that_never_returns_is_hung_and_leaves_no_process(
        self, corpus: Path, tmp_path: Path
    ) -> None:
        """A new version that blocks on an old run passes the time limit: hung (failing),
        its resumer killed, nothing left running under the check."""
        import psutil

        before = {c.pid for c in psutil.Process().children(recursive=True)}
        result = check(corpus, "tests.harness.upgrade_runtimes:hanging", timeout=4.0,
                       only=[s.id for s in states(corpus)[:2]], work_parent=tmp_path)  # fmt: skip
        assert [s.group for s in result.states] == ["hung", "hung"]
        assert all("time limit" in s.sentence for s in result.states)
        assert result.failing
        # The forkserver outlives a check (it is the process's); the resumers may not.
        assert {c.pid for c in psutil.Process().children(recursive=True)} <= before

    def test_an_adapter_outside_its_protocol_is_the_adapters_fault(self, corpus: Path) -> None:
        """An adapter that reads an unfinished run into an invalid normal form is
        adapter-error on exactly the states whose run the kill left RUNNING, never
        store-unreadable; the sentence names the method and the field."""
        result = check(corpus, "tests.harness.upgrade_runtimes:malformed")
        by_id = {s.id: s for s in result.states}
        running = 0
        for info in states(corpus):
            got = by_id[info.id]
            if status_at_kill(corpus, info) == "RUNNING":
                running += 1
                assert got.group == "adapter-error", (got.id, got.group, got.sentence)
                assert "read_session()" in got.sentence and "status" in got.sentence
                assert "nothing is said of the runtime" in got.sentence
            else:
                assert got.group == "ok", (got.id, got.group, got.sentence)
        assert running

    def test_a_baseline_the_adapter_cannot_read_is_the_adapters_fault(self, corpus: Path) -> None:
        """The checking version's own run read through a broken adapter is adapter-error,
        not no-baseline: the runtime ran; its adapter misread it."""
        result = check(corpus, "tests.harness.upgrade_runtimes:malformed_everywhere")
        assert {s.group for s in result.states} == {"adapter-error"}


class TestRepeated:
    def test_in_flight_call_may_run_once_more(self) -> None:
        """A call whose effect happened without a durable result repeats within the bound."""
        from collections import Counter

        sig = ("fetch_detail", '{"result_id":"r1"}')
        assert (
            repeated(Counter({sig: 1}), Counter({sig: 1}), Counter({sig: 1}), Counter({sig: 1}))
            == Counter()
        )
        assert repeated(
            Counter({sig: 1}), Counter({sig: 1}), Counter({sig: 1}), Counter()
        ) == Counter({sig: 1})

    def test_a_call_the_baseline_makes_twice_is_no_repeat(self) -> None:
        """The resumed run's second call is the baseline's own second call."""
        from collections import Counter

        sig = ("ping", "{}")
        assert (
            repeated(Counter({sig: 1}), Counter({sig: 1}), Counter({sig: 2}), Counter())
            == Counter()
        )


class TestBrokenWhenRecorded:
    def test_a_store_the_recording_broke_is_not_charged_to_the_upgrade(
        self, tmp_path: Path
    ) -> None:
        """A runtime that splits a checkpoint over two transactions leaves a store that
        breaks its invariants at the kills after a checkpoint: the recording cell says
        corrupt, and the check names the state broken-when-recorded (not failing: it
        tests no upgrade), never store-unreadable."""
        config = CampaignConfig.from_options(
            runtime="tests.harness.broken_runtimes:split_checkpoint",
            scenarios=("research",), modes=("tool-batch",), points="after-checkpoint",
            workers=2, keep="none",
        )  # fmt: skip
        recorded = record(config, tmp_path / "c")
        corrupt = {s.id for s in recorded.states if s.recorded_verdict == "corrupt"}
        assert corrupt
        result = check(tmp_path / "c", "reference")
        found = groups_by_state(result)
        assert {found[i] for i in corrupt} == {"broken-when-recorded"}
        assert "store-unreadable" not in found.values()


class TestControl:
    """Issue 56: a corpus checked against the very versions that recorded it called its
    failing states `diverged-after-upgrade`, and its versions table listed killpoint
    twice."""

    BROKEN = "tests.harness.broken_runtimes:rerun_finished"

    @pytest.fixture(scope="class")
    def recorded(self, tmp_path_factory: pytest.TempPathFactory) -> Path:
        out = tmp_path_factory.mktemp("control") / "research"
        config = CampaignConfig.from_options(
            runtime=self.BROKEN, scenarios=("research",), modes=("tool-batch",),
            points="after-checkpoint", workers=2, keep="none",
        )  # fmt: skip
        record(config, out)
        return out

    def test_a_check_with_the_recording_versions_is_a_control_named_so(
        self, recorded: Path
    ) -> None:
        result = check(recorded, self.BROKEN)
        found = set(groups_by_state(result).values())
        assert not {g for g in found if g.endswith("-after-upgrade")}, found
        assert {g for g in found if g.endswith("-in-control")}, found  # its defect shows
        assert result.control

    def test_the_versions_table_names_killpoint_once(self, tmp_path: Path) -> None:
        """agno's adapter is killpoint's own module: the libraries a manifest records for
        it name killpoint too; the table has it once, in its own row."""
        libraries = {"SQLAlchemy": "2.1.9", "agno": "3.1.10", "killpoint": "0.1.0"}
        side = mf.Versions("0.1.0", "3.11.7", "agno", libraries)
        names = [name.lower() for name, *_ in CheckResult(tmp_path, side, side).version_rows()]
        assert names.count("killpoint") == 1, names
        assert len(names) == len(set(names)), names
