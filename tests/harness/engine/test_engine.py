"""The crash engine end to end: real workers, real kills, a real SQLite file or server."""

# ruff: noqa: SIM300
from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from killpoint import kinds
from killpoint.engine.engine import Engine
from killpoint.engine.options import EngineConfig
from killpoint.kinds.takeover import late_allowance, unfinished_batch
from killpoint.scenarios.conversation import canonical_arguments
from killpoint.values.cell import Cell, CellResult
from killpoint.values.points import CrashPoint
from tests.harness.broken_adapters import PASSWORD
from tests.harness.broken_runtimes import VARIANTS
from tests.harness.live_workers import assert_no_worker_alive, worker_pids

pytestmark = pytest.mark.slow


def engine_for(
    tmp_path: Path, store: str = "sqlite", keep: str = "none", **kwargs: object
) -> Engine:
    return Engine(EngineConfig(store=store, work_root=tmp_path / "work", keep=keep, **kwargs))


def run_row(
    engine: Engine, runtime: str, scenario: str, mode: str, chosen: tuple[str, ...]
) -> list[CellResult]:
    row = (runtime, scenario, mode, engine.stores.kind)
    base = engine.baseline(row)
    assert base.problem is None, base.problem
    return [engine.run_cell(Cell(*row, schedule=(p,))) for p in kinds.points_of(base, chosen)]


class TestReferenceRuntime:
    def test_every_point_of_research_is_expected_on_sqlite(self, tmp_path: Path) -> None:
        """The reference runtime gets no unexpected verdict at any crash point or fault of
        the research scenario in "tool-batch" mode, and every kind of point that runs on
        SQLite is exercised."""
        # fs-op points need baselines traced on the mount (EngineConfig.fs_trace): their
        # own tests are tests/harness/kinds/test_fs_ops.py.
        traced = set(kinds.groups()["fs-ops"])
        every = tuple(
            n
            for n in kinds.names()
            if kinds.get(n).unavailable("sqlite") is None and n not in traced
        )
        engine = engine_for(tmp_path)
        results = run_row(engine, "reference", "research", "tool-batch", every)
        unexpected = [(r.id, r.verdict, r.detail) for r in results if not r.expected]
        assert [] == unexpected
        # A regeneration kind plans a point only where its behaviour changes a re-asked
        # turn: research's batches hold one call each (nothing to reorder, and no finish
        # order to choose), and its alternative query belongs to no turn a kill here re-asks.
        # mid-stream stands only on turns a runtime streams, and the reference runtime does
        # not (its cells: tests/harness/kinds/test_mid_stream.py).
        base = engine.baseline(("reference", "research", "tool-batch", "sqlite"))
        assert [] == kinds.reorderable(base)
        assert set(every) - {"reorder", "replan", "finish-order", "mid-stream"} == {
            kinds.parse_point(r.schedule[0]).kind for r in results
        }
        kills = [r for r in results if kinds.is_kill(kinds.parse_point(r.schedule[0]))]
        # power-loss at the session's end cuts the power after the worker has exited
        cuts = [kinds.parse_point(r.schedule[0]) for r in results]
        ends = [str(max((p for p in cuts if p.kind == "power-loss"), default=None))]
        assert all(-9 == r.exit_codes[0] for r in kills if r.schedule != ends)
        assert_no_worker_alive(worker_pids(results))

    def test_the_transcript_style_is_expected_too(self, tmp_path: Path) -> None:
        """The reference runtime resending its whole transcript each turn (the matrix runs
        it chained by default) is as sound at every kill point of research."""
        runtime = "killpoint.adapters.reference:transcript"
        names = ("after-checkpoint", "mid-batch", "mid-model", "mid-commit")
        results = run_row(engine_for(tmp_path), runtime, "research", "tool", names)
        assert [] == [(r.id, r.verdict, r.detail) for r in results if not r.expected]
        assert set(names) == {kinds.parse_point(r.schedule[0]).kind for r in results}

    @pytest.mark.postgres
    def test_kills_in_tool_mode_are_expected_on_postgresql(
        self, tmp_path: Path, pg_url: str
    ) -> None:
        """The same holds on a real PostgreSQL server, where each cell gets its own schema."""
        engine = engine_for(tmp_path, store=pg_url)
        results = run_row(
            engine, "reference", "parallel-fetch", "tool", ("after-checkpoint", "mid-batch")
        )
        assert [] == [(r.id, r.verdict, r.detail) for r in results if not r.expected]
        assert {"postgresql"} == {r.store for r in results}

    @pytest.mark.postgres
    @pytest.mark.parametrize("mode", ["tool-batch", "tool"])
    def test_session_state_is_applied_once_at_every_kill_on_postgresql(
        self, tmp_path: Path, pg_url: str, mode: str
    ) -> None:
        """session-state's tools update the session's state; killed anywhere and resumed,
        the reference runtime applies each update once (the state invariant holds, the
        state equals the baseline's) on a real PostgreSQL server."""
        engine = engine_for(tmp_path, store=pg_url)
        kills = ("after-checkpoint", "mid-batch", "mid-commit", "sigstop-writing")
        results = run_row(engine, "reference", "session-state", mode, kills)
        assert [] == [(r.id, r.verdict, r.detail) for r in results if not r.expected]
        assert set(kills) == {kinds.parse_point(r.schedule[0]).kind for r in results}
        judged = [r for r in results if r.verdict == "ok"]
        assert judged and not any(
            f["kind"] in ("state-not-once", "state-differs") for r in results for f in r.findings
        )

    def test_runs_mode_loses_the_run_as_documented(self, tmp_path: Path) -> None:
        """In mode "runs" a crash mid-run leaves the session and no run: verdict lost,
        expected, and nothing is resumed."""
        engine = engine_for(tmp_path)
        results = run_row(engine, "reference", "research", "runs", ("mid-model",))
        assert {("lost", True)} == {(r.verdict, r.expected) for r in results}
        assert all(1 == len(r.exit_codes) for r in results)

    @pytest.mark.parametrize(
        "schedule", ["after-checkpoint:1+after-checkpoint:3", "after-checkpoint:1+mid-model:4"]
    )
    def test_a_second_crash_in_the_resumed_run(self, tmp_path: Path, schedule: str) -> None:
        """Depth 2: crashed after checkpoint 1, resumed, crashed again (after checkpoint 3,
        or while model turn 4 is answered), resumed again: the second point is reached and
        confirmed in the store like the first, and the run still ends as the baseline."""
        engine = engine_for(tmp_path)
        cell = Cell("reference", "research", "tool-batch", "sqlite", kinds.parse_schedule(schedule))
        result = engine.run_cell(cell)
        assert ("ok", True) == (result.verdict, result.expected), result.detail
        assert [-9, -9, 0] == result.exit_codes
        confirmed = [e.text for e in result.timeline if e.text.startswith("store confirms")]
        assert 2 == len(confirmed) and confirmed[1].endswith(schedule.split("+")[1])


class TestBrokenRuntimes:
    @pytest.mark.parametrize("variant", VARIANTS)
    def test_each_defect_gets_an_unexpected_verdict(self, tmp_path: Path, variant: str) -> None:
        """Each deliberately broken variant of the reference runtime gets at least one
        unexpected verdict over the kill points of the research scenario; the work
        folders of failed cells are kept and named, the others' are not."""
        runtime = f"tests.harness.broken_runtimes:{variant}"
        engine = engine_for(tmp_path, keep="failed")
        row = (runtime, "research", "tool-batch", "sqlite")
        base = engine.baseline(row)
        points = (
            kinds.points_of(base, ("after-checkpoint", "mid-batch")) if base.problem is None else []
        )
        points = points or [CrashPoint("mid-model", 2)]
        results = [engine.run_cell(Cell(*row, schedule=(p,))) for p in points]
        unexpected = [r for r in results if not r.expected]
        assert unexpected, [(r.id, r.verdict) for r in results]
        assert all(f"killpoint replay {r.id}" in r.replay for r in unexpected)
        # (a cell whose baseline already failed starts no worker: it has nothing to keep)
        assert all(r.kept and any(Path(r.kept).iterdir()) for r in unexpected if r.exit_codes)
        assert all(r.kept is None for r in results if r.expected)


class TestHarnessFailures:
    def test_a_scenario_that_is_not_deterministic_fails_its_row(self, tmp_path: Path) -> None:
        """Two baselines that differ make every cell of the row a failure that says so."""
        engine = engine_for(tmp_path)
        cell = Cell(
            "reference",
            "tests.harness.scenarios_for_tests:IMPURE",
            "tool-batch",
            "sqlite",
            (CrashPoint("after-checkpoint", 1),),
        )
        result = engine.run_cell(cell)
        assert ("diverged", False) == (result.verdict, result.expected)
        assert "scenario is not deterministic" in result.detail

    def test_the_stand_in_of_a_nondeterministic_row_makes_no_crash(self, tmp_path: Path) -> None:
        """The one cell of a row whose two baselines differ (its id keeps mid-model:1, the
        stand-in point) says in its plan that it made no crash, as a failed baseline's does,
        so that its cause never says where a crash that was never made shows."""
        from killpoint.judge.causes import find_causes
        from killpoint.values.findings import NO_CRASH

        row = ("reference", "tests.harness.scenarios_for_tests:IMPURE", "tool-batch", "sqlite")
        result = engine_for(tmp_path).run_cell(Cell(*row, schedule=(kinds.stand_in(),)))
        assert result.timeline[0].text.startswith("plan: no crash"), result.timeline
        (found,) = result.findings
        assert ("nondeterministic", True) == (found["kind"], found["facts"][NO_CRASH])
        (cause,) = find_causes([result])
        assert {"no crash": 1} == cause.points
        assert "mid-model" not in cause.sentence, cause.sentence

    def test_a_hung_worker_is_killed_and_reported(self, tmp_path: Path) -> None:
        """A worker past its time limit is killed, the cell says hung, nothing is left."""
        engine = engine_for(tmp_path, timeout=2.0)
        row = ("reference", "tests.harness.scenarios_for_tests:BLOCKING", "tool-batch", "sqlite")
        result = engine.run_cell(Cell(*row, schedule=(CrashPoint("mid-model", 1),)))
        assert ("hung", False) == (result.verdict, result.expected)
        assert "baseline" in result.detail and "timeout" in result.detail
        assert_no_worker_alive(worker_pids([result]))

    def test_a_point_the_baseline_never_reaches_is_missed(self, tmp_path: Path) -> None:
        """Asking for a boundary the baseline does not have is a harness failure, never a pass."""
        engine = engine_for(tmp_path)
        cell = Cell(
            "reference", "research", "tool-batch", "sqlite", (CrashPoint("after-checkpoint", 9),)
        )
        result = engine.run_cell(cell)
        assert ("missed", False) == (result.verdict, result.expected)
        assert "boundaries 1..4" in result.detail


def _call(name: str, **args: object) -> dict[str, object]:
    return {"name": name, "arguments": json.dumps(args)}


def _execution(name: str, turn: int, index: int, **args: object) -> dict[str, object]:
    return {**_call(name, **args), "turn": turn, "call_index": index}


def _paused_session() -> dict[str, Any]:
    """A run paused inside its second batch: fetch(a) ran in turn 1; of turn 2's a, b, c
    only b has a durable result."""
    return {
        "runs": {
            "r": {
                "messages": [
                    {"role": "user", "tool_calls": []},
                    {"role": "assistant", "tool_calls": [_call("fetch", kind="a")]},
                    {"role": "tool", "tool_calls": []},
                    {
                        "role": "assistant",
                        "tool_calls": [
                            _call("fetch", kind="a"),
                            _call("fetch", kind="b"),
                            _call("fetch", kind="c"),
                        ],
                    },
                ],
                # the first batch and the newest batch's second call are durable
                "tool_executions": [
                    _execution("fetch", 1, 0, kind="a"),
                    _execution("fetch", 2, 1, kind="b"),
                ],
            }
        }
    }


class TestStaleWorkerAllowance:
    """A paused worker's batch keeps running in its threads until SIGSTOP lands, and a call
    it dispatched but had not started may run after it is woken."""

    @staticmethod
    def sig(kind: str) -> tuple[str, str]:
        return ("fetch", canonical_arguments({"kind": kind}))

    def test_the_unfinished_batch_is_the_newest_turns_calls_without_a_result(self) -> None:
        # kind=a also ran in turn 1: matched by position, not by signature
        assert Counter([self.sig("a"), self.sig("c")]) == unfinished_batch(_paused_session())
        finished = {"runs": {"r": {**_paused_session()["runs"]["r"], "messages": []}}}
        assert Counter() == unfinished_batch(finished)

    def test_only_calls_of_that_batch_not_started_at_the_pause_are_allowed(self) -> None:
        unfinished = unfinished_batch(_paused_session())
        started = Counter([self.sig("a")])  # had its effect before the pause
        late = Counter([self.sig("c")])
        assert Counter([self.sig("c")]) == late_allowance(unfinished, started=started, late=late)
        # a new batch after waking (no fence) is not allowed, nor a call it had started
        new = Counter([self.sig("d"), self.sig("a")])
        assert Counter() == late_allowance(unfinished, started=started, late=new)


def test_sweep_removes_every_folder_neither_kept_nor_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A folder whose cell was cut short before it settled it, or whose removal a late
    file survived, goes at the sweep; a kept one stays, and so does anything in the work
    root the engine did not make."""
    engine = engine_for(tmp_path)
    kept, removed, cut_short, survived = (engine.work_dir(n) for n in ("k", "r", "c", "s"))
    engine.settle_folder(kept, keep=True)
    engine.settle_folder(removed, keep=False)
    remove = shutil.rmtree
    # Its first removal is beaten by a file landing in it: the folder is still there.
    monkeypatch.setattr(
        shutil, "rmtree", lambda p, **kw: None if p == survived else remove(p, **kw)
    )
    (survived / "late.log").write_text("")
    engine.settle_folder(survived, keep=False)
    assert survived.exists()
    monkeypatch.setattr(shutil, "rmtree", remove)
    theirs = engine.work_root / "not-the-engines"
    theirs.mkdir()
    engine.sweep()
    assert [kept, theirs] == sorted(engine.work_root.iterdir())
    assert not removed.exists() and not cut_short.exists()


class TestAdapterBlame:
    """A read of the adapter that raises, or a normal form it breaks, is charged to the
    adapter: `adapter-error` naming the method and the exception, never killpoint's
    `error` nor `missed`."""

    def cell(self, tmp_path: Path, broken: str, point: str) -> CellResult:
        runtime = f"tests.harness.broken_adapters:{broken}"
        cell = Cell(runtime, "research", "tool-batch", "sqlite", kinds.parse_schedule(point))
        return engine_for(tmp_path).run_cell(cell)

    def test_an_inspect_that_raises_is_the_adapters_and_redacted(self, tmp_path: Path) -> None:
        result = self.cell(tmp_path, "RaisingInspect", "after-checkpoint:2")
        (found,) = [f for f in result.findings if f["kind"] == "adapter-error"]
        assert ("adapter-error", False) == (result.verdict, result.expected)
        assert found["sentence"].startswith("the adapter's inspect() raised RuntimeError: ")
        assert PASSWORD not in json.dumps(result.findings)

    def test_a_read_that_raises_after_the_crash_is_the_adapters(self, tmp_path: Path) -> None:
        result = self.cell(tmp_path, "RaisingAfterCrash", "after-checkpoint:2")
        assert "adapter-error" == result.verdict, result.detail
        assert "read_session() raised KeyError" in result.detail

    def test_an_invalid_normal_form_is_the_adapters_not_missed(self, tmp_path: Path) -> None:
        """The baseline's normal form is invalid: every cell of the row says so."""
        result = self.cell(tmp_path, "Unnormal", "after-checkpoint:1")
        assert ("adapter-error", False) == (result.verdict, result.expected)
        assert "read_session() returned an invalid normal form" in result.detail
        assert "tool_executions" in result.detail


class TestFailedBaselineFolder:
    """A row whose uninterrupted run failed: the matrix kept no folder of it (the report's
    `"kept": null`), so its baseline.log was nowhere to open. Its folder is now kept by a
    failed cell's rule, and its stand-in cell names it as a cell names its own."""

    ROW = ("tests.harness.broken_adapters:NeverStarts", "research", "tool-batch", "sqlite")

    def stand_in(self, tmp_path: Path, keep: str) -> CellResult:
        engine = engine_for(tmp_path, keep=keep)
        assert "run-failed" == engine.baseline(self.ROW).problem_kind
        return engine.run_cell(Cell(*self.ROW, schedule=(kinds.stand_in(),)))

    def test_kept_by_default_and_named_by_the_stand_in(self, tmp_path: Path) -> None:
        result = self.stand_in(tmp_path, "failed")
        assert result.kept is not None
        kept = Path(result.kept)
        assert "RuntimeError: this driver cannot start a run" in (kept / "baseline.log").read_text()
        # The second run's folder is not the one the problem is told from: not kept.
        assert [kept] == [p for p in (tmp_path / "work").iterdir() if p.is_dir()]

    def test_not_kept_with_keep_none(self, tmp_path: Path) -> None:
        assert self.stand_in(tmp_path, "none").kept is None
        assert [] == [p for p in (tmp_path / "work").iterdir() if p.is_dir()]
