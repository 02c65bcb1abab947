"""`corpus record`: run the chosen cells and keep, at each kill, the state a resumer finds.

A recording cell is a matrix cell like any other (it crashes, resumes and is judged, so
the corpus says what the recording version itself made of each point); at its kill it
also keeps the store, the ledger and the scripted model's state (killpoint.corpus.
snapshot) before anything resumes (the engine tells the Keeper of each cell's first crash:
killpoint.engine.cell_host.CrashWatcher). Only the kills of one crash are kept (the kinds
that say so, PointKind.kept): the state after a pause, a lock or a power cut is not one
that a deploy leaves. A kill that left nothing to resume (a run whose
checkpoints had not landed) is counted, not kept.

The corpus is built in a sibling folder and moved into place once its manifest is
written: an interrupted recording leaves no folder that looks like a corpus.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from killpoint import kinds
from killpoint.corpus import manifest as mf
from killpoint.corpus import snapshot
from killpoint.engine.campaign import Campaign, CampaignConfig, CampaignResult
from killpoint.engine.cell_host import CrashedCell
from killpoint.errors import CorpusError, PgStateError
from killpoint.judge.baseline import Baseline
from killpoint.kinds.base import Plan
from killpoint.values.cell import CellResult
from killpoint.values.scenario_refs import resolve_scenario


@dataclass
class Recorded:
    """What a recording kept and left."""

    folder: Path
    states: list[mf.StateInfo] = field(default_factory=list)
    nothing_to_resume: list[str] = field(default_factory=list)  # cell ids
    not_kept: list[str] = field(default_factory=list)  # cells whose point is no kept kind
    # (cell id, why): states a corpus cannot hold (a schema object outside the form, a
    # state over the size limit); never kept as if they could be given back whole.
    refused: list[tuple[str, str]] = field(default_factory=list)
    campaign: CampaignResult | None = None

    @property
    def bytes(self) -> int:
        return sum(s.bytes for s in self.states)


def state_id(scenario: str, mode: str, point: str) -> str:
    return f"{scenario}/{mode}/{point}"


def baseline_file(scenario: str, mode: str) -> str:
    return f"{mf.folder_name(f'{scenario}/{mode}')}.json"


class Keeper:
    """Where recording cells keep their states (one per corpus being built): told of each
    cell's first crash by the engine (a CrashWatcher), it keeps the state of every kind that
    is kept in a corpus (PointKind.kept)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.lock = threading.Lock()
        self.states: dict[str, mf.StateInfo] = {}  # cell id -> state
        self.empty: list[str] = []
        self.refused: list[tuple[str, str]] = []

    def first_crash(self, run: CrashedCell, plan: Plan) -> None:
        if kinds.get(run.cell.schedule.first.kind).kept:
            self.keep(run, plan)

    def keep(self, run: CrashedCell, plan: Plan) -> None:
        cell = run.cell
        assert run.work is not None
        held = run.progress()
        session = run.read()
        runs = list((session or {}).get("runs", {}).values())
        if plan.run_index >= len(runs):
            with self.lock:
                self.empty.append(cell.id)
            return
        scenario = resolve_scenario(cell.scenario)
        point = str(cell.schedule.first)
        sid = state_id(cell.scenario, cell.mode, point)
        dest = self.root / mf.STATES / mf.folder_name(sid)
        try:
            size = snapshot.keep(run.work, run.url, dest)
        except (CorpusError, PgStateError) as exc:
            shutil.rmtree(dest, ignore_errors=True)
            with self.lock:
                self.refused.append((cell.id, str(exc)))
            return
        calls = tuple(e["name"] for r in runs for e in r["tool_executions"])
        info = mf.StateInfo(
            id=sid,
            scenario=cell.scenario,
            scenario_name=scenario.name,
            scenario_version=scenario.version,
            mode=cell.mode,
            point=point,
            run_index=plan.run_index,
            run_started_at=plan.run_started_at,
            checkpoints=held,
            baseline=baseline_file(cell.scenario, cell.mode),
            tool_calls=calls,
            bytes=size,
        )
        with self.lock:
            self.states[cell.id] = info


def baseline_json(base: Baseline) -> dict[str, Any]:
    scenario = resolve_scenario(base.scenario)
    return {
        "scenario": base.scenario,
        "scenario_version": scenario.version,
        "mode": base.mode,
        "session": base.session,
        "effects": [[tool, args, n] for (tool, args), n in sorted(base.effects.items())],
        "problem": base.problem,
    }


def record(
    config: CampaignConfig,
    out: Path,
    on_planned: Callable[[int], None] = lambda n: None,
    on_cell: Callable[[CellResult], None] = lambda r: None,
) -> Recorded:
    """Run `config`'s cells (depth 1) and write the corpus to `out` (absent or empty)."""
    config = replace(config, depth=1)
    out.parent.mkdir(parents=True, exist_ok=True)
    building = Path(tempfile.mkdtemp(prefix=f".{out.name}.recording-", dir=out.parent))
    try:
        keeper = Keeper(building)
        campaign = Campaign(config)
        campaign.engine.watchers.append(keeper)
        adapter = campaign.engine.adapter(config.runtime)
        result = campaign.run(on_planned, on_cell)
        done = Recorded(out, campaign=result)
        if result.interrupted:
            raise KeyboardInterrupt()
        (building / mf.BASELINES).mkdir(exist_ok=True)
        for base in result.baselines:
            mf.write_json(
                building / mf.BASELINES / baseline_file(base.scenario, base.mode),
                baseline_json(base),
            )
        by_cell = {c.id: c for c in result.cells}
        states: list[mf.StateInfo] = []
        for cell_id, info in keeper.states.items():
            cell = by_cell.get(cell_id)
            if cell is not None:
                info = replace(info, recorded_verdict=cell.verdict, recorded_expected=cell.expected)
            mf.write_json(building / mf.STATES / mf.folder_name(info.id) / mf.STATE, info.to_json())
            states.append(info)
        states.sort(key=lambda s: s.id)
        done.states = states
        done.nothing_to_resume = sorted(keeper.empty)
        done.refused = sorted(keeper.refused)
        done.not_kept = sorted(
            c.id
            for c in result.cells
            if c.schedule and not kinds.get(c.schedule[0].split(":")[0]).kept
        )
        manifest = mf.Manifest(
            schema=mf.SCHEMA,
            versions=mf.versions_now(config.runtime, adapter.preload_modules),
            store=campaign.store_kind,
            states=tuple(s.id for s in states),
            created=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        )
        mf.write_json(building / mf.MANIFEST, manifest.to_json())
        if out.exists():
            out.rmdir()  # empty (checked by the caller); a full one is never replaced
        building.rename(out)
        return done
    finally:
        shutil.rmtree(building, ignore_errors=True)


__all__ = ["Keeper", "Recorded", "baseline_file", "record", "state_id"]
