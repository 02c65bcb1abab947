"""A DBOS workflow whose step raised ends ERROR; DBOS.resume_workflow leaves it ERROR and does
not run the step again."""

from __future__ import annotations

import sqlite3
import tempfile

from dbos import DBOS, SetWorkflowID

calls: list[int] = []


@DBOS.step()
def flaky() -> str:
    calls.append(1)
    if len(calls) == 1:
        raise RuntimeError("model 500")
    return "ok"


@DBOS.workflow()
def workflow() -> str:
    return flaky()


def main() -> None:
    tmp = tempfile.mkdtemp()
    url = f"sqlite:///{tmp}/sys.db"
    DBOS(config={"name": "plain", "system_database_url": url, "log_level": "ERROR"})
    DBOS.launch()
    with SetWorkflowID("w1"):
        try:
            workflow()
        except RuntimeError as exc:
            print("first run raised:", exc)
    print("status after the error:", DBOS.get_workflow_status("w1").status)  # type: ignore[union-attr]
    handle = DBOS.resume_workflow("w1")
    try:
        print("resumed result:", handle.get_result(polling_interval_sec=0.1))
    except Exception as exc:
        print("resumed handle raised:", type(exc).__name__, exc)
    status = DBOS.get_workflow_status("w1")
    print("status after resume_workflow:", status and status.status, "step calls:", len(calls))
    mode = sqlite3.connect(f"{tmp}/sys.db").execute("PRAGMA journal_mode").fetchone()[0]
    print("journal_mode:", mode)
    DBOS.destroy()


if __name__ == "__main__":
    main()
