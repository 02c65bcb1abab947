"""The runs' own work in a matrix: about the least a cell can cost (for matrix_speed).

The runtime's work, and the scripted model's in answering it (about 15% of a run: the
one part of this floor that is the harness's own).

A cell drives its scenario about once from start to end (the crashed worker up to the
crash point, a fresh one on from the last checkpoint; a cell whose run is lost stops
early), so the CPU of one uninterrupted run, timed in this process with everything
imported and warm (no fork, no crash, no comparison), is about the least a cell costs.
Summed over the cells of a matrix, it bounds the cells per second any harness could
reach on this machine's cores with this runtime.
"""

from __future__ import annotations

import asyncio
import gc
import tempfile
import time
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from killpoint.adapters.protocol import RuntimeAdapter
from killpoint.adapters.registry import load_adapter
from killpoint.engine.work_root import default_parent
from killpoint.scenarios import Ledger, Scenario, ScriptedModel, drive
from killpoint.values.scenario_refs import resolve_scenario
from killpoint.workers.tls import share_tls_context


def run_cpu(runtime: str, scenario: str, mode: str, repeats: int = 5) -> float:
    """CPU seconds of one uninterrupted run (building the agent, the store and the
    scripted model included) in this process: the least of `repeats` (a floor, and
    the figure a noisy machine disturbs least), after one untimed run that warms
    whatever the runtime does lazily. As in a campaign's workers, the clients share one
    TLS context, and the store is where a campaign would keep it."""
    share_tls_context()
    adapter = load_adapter(runtime)
    resolved = resolve_scenario(scenario)
    times = []
    for n in range(repeats + 1):
        with tempfile.TemporaryDirectory(prefix="killpoint-floor-", dir=default_parent()) as tmp:
            t0 = time.process_time()
            one_run(adapter, resolved, mode, Path(tmp))
            if n:
                times.append(time.process_time() - t0)
    return min(times)


def one_run(adapter: RuntimeAdapter, scenario: Scenario, mode: str, work: Path) -> None:
    """The scenario driven once from start to end, its store and model state in `work`."""
    ledger = Ledger(work / "ledger.jsonl", scenario.name)
    driver = adapter.driver(
        scenario, f"sqlite:///{work}/floor.db", mode, ledger, lease_seconds=30.0
    )
    with ScriptedModel(scenario.script, work / "model", faults=scenario.faults) as model:
        asyncio.run(drive(scenario, driver, model, session_id="floor"))


def run_costs(runtime: str, pairs: Iterable[tuple[str, str]]) -> dict[tuple[str, str], float]:
    """run_cpu() of each (scenario, mode). Measure before a campaign: afterwards this
    process holds the campaign's results, and every collection walks them. What is
    imported is frozen meanwhile, as it is in a worker (harness/workers/warm.py)."""
    gc.freeze()
    try:
        return {(s, m): run_cpu(runtime, s, m) for s, m in set(pairs)}
    finally:
        gc.unfreeze()


def floor_per_cell(costs: dict[tuple[str, str], float], cells: Iterable[tuple[str, str]]) -> float:
    """Mean CPU seconds of the runs' own work over cells given as (scenario, mode)."""
    counts = Counter(cells)
    return sum(n * costs[pair] for pair, n in counts.items()) / sum(counts.values())
