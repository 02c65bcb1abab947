"""The reference runtime with its store on the power-loss mount, cut right after the
session's runs returned COMPLETED: with SQLite's `synchronous=FULL` (the default) every
acknowledged status is in the image; with the weaker variants (a runtime option, not a
code change) the acknowledged COMPLETED run is gone, and the engine's acknowledgement
check would say so. The ledger and the model's state stay outside the mount."""

# ruff: noqa: SIM300

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from killpoint.adapters.registry import load_adapter
from killpoint.powerloss import PowerLossFS

# Runs the scenario to its end, printing each status the runtime returns, then parks.
CHILD = textwrap.dedent(
    """
    import asyncio, json, sys
    from pathlib import Path
    from killpoint import scenarios
    from killpoint.adapters.registry import load_adapter
    from killpoint.scenarios import Ledger, ScriptedModel, drive

    runtime, url, work = sys.argv[1:4]
    scenario = scenarios.get("research")
    ledger = Ledger(Path(work) / "ledger.jsonl", scenario.name)
    driver = load_adapter(runtime).driver(scenario, url, "tool-batch", ledger, lease_seconds=30.0)
    model = ScriptedModel(scenario.script, Path(work) / "model", faults=scenario.faults)

    def ack(result):
        print(json.dumps({"run_id": result.run_id, "status": result.status}), flush=True)

    with model:
        asyncio.run(drive(scenario, driver, model, session_id="s", on_result=ack))
    print("{}", flush=True)
    sys.stdin.read()  # parked: killed here
    """
)


def run_then_cut(cell: Path, runtime: str) -> list[tuple[str, str | None]]:
    """Each acknowledged (status, the run's status in the durable image, None if absent)."""
    with PowerLossFS(cell / "store-backing", cell / "store") as fs:
        url = f"sqlite:///{fs.mountpoint / 'store.db'}"
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, runtime, url, str(cell)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert child.stdout is not None and child.stdin is not None
        acks: list[dict[str, Any]] = []
        for line in child.stdout:  # one line per acknowledgement, then "{}"
            ack = json.loads(line)
            if not ack:
                break
            acks.append(ack)
        child.send_signal(signal.SIGKILL)
        child.wait()  # reaped: its files in the mount are closed
        child.stdin.close()
        child.stdout.close()
        fs.cut()
        fs.unmount()
    session = load_adapter("reference").read_session(url, "s") or {}
    runs = session.get("runs", {})
    return [(a["status"], runs.get(a["run_id"], {}).get("status")) for a in acks]


@pytest.mark.slow
def test_full_keeps_every_acknowledged_status(cell: Path) -> None:
    """synchronous=FULL: the COMPLETED run the runtime returned is in the image."""
    assert [("COMPLETED", "COMPLETED")] == run_then_cut(cell, "reference")


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["synchronous_normal", "synchronous_off"])
def test_weaker_settings_lose_an_acknowledged_completed_run(cell: Path, variant: str) -> None:
    """synchronous=NORMAL (WAL) and OFF: the COMPLETED run is acknowledged, and after the
    cut the store does not have it: the acknowledged-but-lost finding."""
    assert [("COMPLETED", None)] == run_then_cut(cell, f"killpoint.adapters.reference:{variant}")
