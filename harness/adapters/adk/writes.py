"""The gates around ADK's durable writes (workers only).

DatabaseSessionService.append_event is ADK's one durable write of a run: every event of
an invocation (the user's message, each model reply, each batch's function responses, an
error, the seal of an abort, end_of_agent) is one call, one transaction, one row of
`events`. Each call that writes is one checkpoint; a partial (streamed) event is not
written, so it is none. COMMIT is seen through SQLAlchemy's commit event, which fires in
the transaction's greenlet, in the asyncio task that opened the checkpoint.
"""

from __future__ import annotations

from typing import Any

from killpoint.adapters.checkpoint_gates import CheckpointGates


def instrument(checkpoints: CheckpointGates) -> None:
    from google.adk.sessions.database_session_service import DatabaseSessionService

    append = DatabaseSessionService.append_event

    async def append_event(self: Any, session: Any, event: Any) -> Any:
        if event.partial:
            return await append(self, session, event)
        async with checkpoints.awrite():
            return await append(self, session, event)

    DatabaseSessionService.append_event = append_event  # type: ignore[method-assign]
    checkpoints.watch_sqlalchemy()
