"""The crash matrix planned once and shipped to pytest-xdist workers.

A cell is planned from its row's baseline, and a baseline is only known by running it; so
the process that owns the session plans, and every worker collects that plan instead of
planning its own (see killpoint.plugin.hooks for why). The plan travels as JSON through
execnet, baselines included, so workers judge cells against the controller's baselines.
No pytest here: the plan is data, and making it is the engine's work.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from killpoint.engine.campaign import Campaign, CampaignConfig, Skipped
    from killpoint.judge.baseline import Baseline
    from killpoint.values.cell import CellResult


@dataclass
class MatrixPlan:
    """What every process collects: made once by the session's owner, shipped to workers."""

    cells: list[str] = field(default_factory=list)
    broken: list[tuple[str, str]] = field(default_factory=list)  # (row id, why)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (row id, why)
    error: str | None = None
    # Only in the process that planned:
    campaign: Campaign | None = None
    baselines: list[Baseline] = field(default_factory=list)
    skipped_rows: list[Skipped] = field(default_factory=list)

    def to_wire(self) -> str:
        """JSON (execnet carries a str as is, to popen and ssh gateways alike)."""
        return json.dumps(
            {
                "cells": self.cells,
                "broken": self.broken,
                "skipped": self.skipped,
                "error": self.error,
                "baselines": [baseline_to_wire(b) for b in self.baselines],
            }
        )

    @classmethod
    def from_wire(cls, text: str) -> MatrixPlan:
        data = json.loads(text)
        return cls(
            cells=list(data["cells"]),
            broken=[(a, b) for a, b in data["broken"]],
            skipped=[(a, b) for a, b in data["skipped"]],
            error=data["error"],
            baselines=[baseline_from_wire(b) for b in data["baselines"]],
        )


def baseline_to_wire(base: Baseline) -> dict[str, Any]:
    """Every field but the derived batches (rebuilt by analyse()); effects as triples."""
    data = {f.name: getattr(base, f.name) for f in dataclasses.fields(base)}
    del data["batches"]
    data["effects"] = [[tool, args, n] for (tool, args), n in base.effects.items()]
    return data


def baseline_from_wire(data: dict[str, Any]) -> Baseline:
    from collections import Counter

    from killpoint.judge.baseline import Baseline

    data = dict(data)
    effects = Counter({(tool, args): n for tool, args, n in data.pop("effects")})
    data["tables"] = tuple(data.get("tables", ()))  # JSON gives a list back
    base = Baseline(**data, effects=effects)
    base.analyse()
    return base


def make_plan(config: CampaignConfig, *, cells: list[str] | None = None) -> MatrixPlan:
    """Baselines (in parallel), then the cells of every row, in a deterministic order;
    `cells`: only these (and the baselines of their rows)."""
    from concurrent.futures import ThreadPoolExecutor

    from killpoint.engine.campaign import Campaign

    campaign = Campaign(config, cells=cells)
    rows, skipped = campaign.rows()
    with ThreadPoolExecutor(max_workers=config.workers, thread_name_prefix="baseline") as pool:
        baselines = list(pool.map(campaign.engine.baseline, rows))
    plan = MatrixPlan(campaign=campaign, baselines=baselines, skipped_rows=skipped)
    for s in skipped:
        plan.skipped.append(
            ("/".join((s.runtime, s.scenario, s.mode, campaign.store_kind)), s.reason)
        )
    for base in baselines:
        row = "/".join(base.row)
        if base.problem or base.nondeterministic:
            # The row's failure, once, as its own item (ROW/without-crash); no crash cell
            # stands in for it at a point the selection may not even name.
            plan.broken.append((row, str(base.problem or base.nondeterministic)))
            continue
        plan.cells += [c.id for c in campaign.cells_for(base)]
    for s in campaign.point_skips:
        row = "/".join((s.runtime, s.scenario, s.mode, campaign.store_kind))
        plan.skipped.append((f"{row}/{s.point}", s.reason))
    plan.skipped_rows += campaign.point_skips
    for s in campaign.skipped_points:  # a kind that cannot run here: its points, skipped
        row = "/".join((s.runtime, s.scenario, s.mode, campaign.store_kind))
        plan.skipped.append((f"{row}/{s.reason.partition(' points: ')[0]}", s.reason))
        plan.skipped_rows.append(s)
    for s in campaign.empty_rows:  # a row that offers no point of the kinds asked for
        row = "/".join((s.runtime, s.scenario, s.mode, campaign.store_kind))
        plan.skipped.append((row, s.reason))
        plan.skipped_rows.append(s)
    return plan


def lost_cell(cell_id: str, why: str) -> CellResult | None:
    """The verdict of a cell whose pytest worker died before it could report one."""
    from killpoint import kinds
    from killpoint.errors import PointError
    from killpoint.values.cell import CellResult

    try:
        cell = kinds.parse_cell(cell_id)
    except PointError:
        return None
    return CellResult(
        id=cell.id,
        runtime=cell.runtime,
        scenario=cell.scenario,
        mode=cell.mode,
        store=cell.store,
        schedule=[str(p) for p in cell.schedule],
        verdict="missed",
        expected=False,
        detail=f"the pytest worker running this cell died: {why}",
        replay=cell.replay_command(),
    )


__all__ = ["MatrixPlan", "baseline_from_wire", "baseline_to_wire", "lost_cell", "make_plan"]
