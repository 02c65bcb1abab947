"""What the power-loss filesystem costs a cell: the same scenario's work with the store on
tmpfs and on the mount, side by side (alternating, so the machine's load hits both).

    python -m tests.benchmarks.powerloss_cost [--scenarios research,long-chain] [--repeats 7]

On the mount a sample is what a power-loss cell adds: mount, the whole run with its
store there, the cut, closing the store's connections, unmount. Wall time, since the
FUSE server works in a process of its own; the CPU of this process is printed too. A
cell also forks, kills, reaps, resumes and compares, which cost the same either way,
so a cell's ratio is below the run's printed here: this is the bound.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from killpoint.adapters.registry import load_adapter
from killpoint.engine.work_root import default_parent
from killpoint.powerloss import PowerLossFS, stop_helper
from killpoint.scenarios import Ledger, ScriptedModel, drive
from killpoint.values.scenario_refs import resolve_scenario
from killpoint.workers.tls import share_tls_context
from tests.benchmarks import power_loss_options


def run(scenario: str, mode: str, work: Path, store: Path) -> None:
    resolved = resolve_scenario(scenario)
    driver = load_adapter("reference").driver(
        resolved, f"sqlite:///{store / 'store.db'}", mode, Ledger(work / "ledger.jsonl", scenario),
        lease_seconds=30.0,
    )  # fmt: skip
    try:
        with ScriptedModel(resolved.script, work / "model", faults=resolved.faults) as model:
            asyncio.run(drive(resolved, driver, model, session_id="bench"))
    finally:
        driver.agent.db.dispose()  # closes the store: no file stays open in the mount


def sample(scenario: str, mode: str, on_mount: bool) -> tuple[float, float, dict[str, float]]:
    """(wall s, CPU s of this process, the mount's own steps) for one run."""
    with tempfile.TemporaryDirectory(prefix="killpoint-plcost-", dir=default_parent()) as tmp:
        work = Path(tmp)
        t0, c0 = time.perf_counter(), time.process_time()
        steps: dict[str, float] = {}
        if not on_mount:
            (work / "store").mkdir()
            run(scenario, mode, work, work / "store")
        else:
            fs = PowerLossFS(work / "store-backing", work / "store")
            steps["mount"] = time.perf_counter() - t0
            with fs:
                run(scenario, mode, work, fs.mountpoint)
                t1 = time.perf_counter()
                fs.cut()
                t2 = time.perf_counter()
                fs.unmount()
                steps["cut"], steps["unmount"] = t2 - t1, time.perf_counter() - t2
        return time.perf_counter() - t0, time.process_time() - c0, steps


def main() -> None:
    args = power_loss_options.parse(__doc__.splitlines()[0])
    if args is None:
        return
    share_tls_context()
    print(f"{'scenario':<14} {'tmpfs ms':>9} {'mount ms':>9} {'ratio':>6}   "
          f"{'CPU tmpfs':>9} {'CPU mount':>9}   mount/cut/unmount ms")  # fmt: skip
    try:
        for scenario in args.scenarios.split(","):
            sample(scenario, args.mode, False)  # warm what the runtime does lazily
            sample(scenario, args.mode, True)
            plain, mounted, steps = [], [], []
            for _ in range(args.repeats):
                plain.append(sample(scenario, args.mode, False))
                mounted.append(sample(scenario, args.mode, True))
                steps.append(mounted[-1][2])
            wall_plain = statistics.median(w for w, _, _ in plain)
            wall_mount = statistics.median(w for w, _, _ in mounted)
            cpu_plain = statistics.median(c for _, c, _ in plain)
            cpu_mount = statistics.median(c for _, c, _ in mounted)
            parts = "/".join(
                f"{statistics.median(s[k] for s in steps) * 1000:.0f}"
                for k in ("mount", "cut", "unmount")
            )
            print(
                f"{scenario:<14} {wall_plain * 1000:>9.0f} {wall_mount * 1000:>9.0f} "
                f"{wall_mount / wall_plain:>5.2f}x   {cpu_plain * 1000:>9.0f} "
                f"{cpu_mount * 1000:>9.0f}   {parts}"
            )
    finally:
        stop_helper()


if __name__ == "__main__":
    main()
