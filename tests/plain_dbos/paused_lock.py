"""How often a DBOS process paused (SIGSTOP) at a random moment leaves its SQLite system
database locked for another writer: `python -m tests.plain_dbos.paused_lock PAUSES STEP_SECONDS`
(the child's workflow records a step every STEP_SECONDS)."""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

CHILD = r"""
import asyncio, sys
from dbos import DBOS, SetWorkflowID

@DBOS.step()
async def step(n: int) -> int:
    await asyncio.sleep(float(sys.argv[2]))
    return n

@DBOS.workflow()
async def workflow() -> int:
    return sum([await step(n) for n in range(100000)])

async def main():
    url = f"sqlite:///{sys.argv[1]}"
    DBOS(config={"name": "plain", "system_database_url": url, "log_level": "CRITICAL"})
    DBOS.launch()
    with SetWorkflowID("w1"):
        handle = await DBOS.start_workflow_async(workflow)
    print("ready", flush=True)
    await handle.get_result()

asyncio.run(main())
"""


def main() -> None:
    pauses, step_seconds = int(sys.argv[1]), sys.argv[2]
    db = f"{tempfile.mkdtemp()}/sys.db"
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, db, step_seconds], stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None and child.stdout.readline().strip() == "ready"
    rng = random.Random(31)
    locked = 0
    try:
        for _ in range(pauses):
            time.sleep(rng.uniform(0.005, 0.05))
            os.kill(child.pid, signal.SIGSTOP)
            conn = sqlite3.connect(db, timeout=0.5, isolation_level=None)
            try:
                conn.execute("BEGIN IMMEDIATE")
                conn.execute("ROLLBACK")
            except sqlite3.OperationalError:
                locked += 1
            finally:
                conn.close()
                os.kill(child.pid, signal.SIGCONT)
    finally:
        child.kill()
        child.wait()
    print(f"{locked} of {pauses} random pauses left the system database locked for another writer")


if __name__ == "__main__":
    main()
