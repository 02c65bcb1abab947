"""DBOS.cancel_workflow while a step runs: the step's output is refused and the workflow ends
CANCELLED with the earlier steps recorded."""

from __future__ import annotations

import asyncio
import sqlite3
import tempfile
import threading

from dbos import DBOS, SetWorkflowID

ran: list[int] = []


@DBOS.step()
async def step(n: int) -> str:
    ran.append(n)
    if n == 3:  # cancel while this step is in flight, from a thread of its own, and wait
        cancel = threading.Thread(target=DBOS.cancel_workflow, args=("w1",))
        cancel.start()
        cancel.join()
    return f"reply {n}"


@DBOS.workflow()
async def workflow() -> list[str]:
    return [await step(n) for n in range(1, 7)]


async def main() -> None:
    tmp = tempfile.mkdtemp()
    url = f"sqlite:///{tmp}/sys.db"
    DBOS(config={"name": "plain", "system_database_url": url, "log_level": "CRITICAL"})
    DBOS.launch()
    with SetWorkflowID("w1"):
        handle = await DBOS.start_workflow_async(workflow)
    try:
        await handle.get_result()
    except Exception as exc:
        print("get_result raised:", type(exc).__name__)
    status = await DBOS.get_workflow_status_async("w1")
    print("status:", status and status.status, "steps run:", ran)
    rows = (
        sqlite3.connect(f"{tmp}/sys.db")
        .execute(
            "SELECT function_id, function_name, output IS NOT NULL FROM operation_outputs "
            "WHERE workflow_uuid = 'w1' ORDER BY function_id"
        )
        .fetchall()
    )
    print("recorded steps:", rows)
    DBOS.destroy()


if __name__ == "__main__":
    asyncio.run(main())
