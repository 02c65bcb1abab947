"""Which threads of a DBOS process write its SQLite system database, and with what: `python
-m tests.plain_dbos.background_writes SECONDS` runs one workflow of three steps, then leaves
DBOS idle for SECONDS, and prints every INSERT, UPDATE and DELETE by thread (the launch's
migrations left out). No killpoint, no pydantic-ai."""

from __future__ import annotations

import asyncio
import collections
import sys
import tempfile
import threading
import time
from typing import Any

import sqlalchemy
from dbos import DBOS, SetWorkflowID

seen: collections.Counter[tuple[str, str]] = collections.Counter()


def listen(conn: Any, cursor: Any, statement: str, *_: Any) -> None:
    head = " ".join(statement.split())
    if head.lower().startswith(("insert", "update", "delete", "with")) and "migrations" not in head:
        seen[(threading.current_thread().name, head[:90])] += 1


@DBOS.step()
async def step(n: int) -> int:
    return n


@DBOS.workflow()
async def workflow() -> int:
    return sum([await step(n) for n in range(3)])


async def main(idle: float) -> None:
    url = f"sqlite:///{tempfile.mkdtemp()}/sys.db"
    DBOS(config={"name": "plain", "system_database_url": url, "log_level": "CRITICAL"})
    DBOS.launch()
    with SetWorkflowID("w1"):
        handle = await DBOS.start_workflow_async(workflow)
    await handle.get_result()
    time.sleep(idle)
    DBOS.destroy()


if __name__ == "__main__":
    sqlalchemy.event.listen(sqlalchemy.Engine, "after_cursor_execute", listen)
    asyncio.run(main(float(sys.argv[1]) if len(sys.argv) > 1 else 5.0))
    for (thread, statement), n in sorted(seen.items()):
        print(f"{n:4}  {thread:24}  {statement}")
