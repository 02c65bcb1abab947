"""tool-error: one call of a parallel batch raises; the model sees the error and recovers."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..conversation import Conversation
from ..scenario import Expected, Scenario
from ..script import Reply, ToolRequest
from ..tooling import ToolEnv

BROKEN = "primary"


class MirrorDown(ConnectionError):
    """The mirror did not answer."""


def report_text(source: str) -> str:
    return f"Report from {source}: 3 sections, all green."


def tools(env: ToolEnv) -> list[Callable[..., Any]]:
    def fetch_report(source: str) -> str:
        """Fetch the quarterly report from one mirror."""
        if source == BROKEN:
            raise MirrorDown(f"mirror {source!r} refused the connection")
        return report_text(source)

    return [fetch_report]


def _failed(output: str | None) -> bool:
    # Runtimes word a tool's error differently ("error: MirrorDown: ...", or the exception's
    # text alone); every one of them carries the exception's message.
    return output is None or "refused the connection" in output


def script(conversation: Conversation) -> Reply:
    turns = conversation.turns()
    if not turns:
        return Reply.batch(
            ToolRequest("fetch_report", {"source": BROKEN}),
            ToolRequest("fetch_report", {"source": "archive"}),
        )
    first = turns[0]
    failed = [c.arguments.get("source") for c in first.calls if _failed(first.output_of(c))]
    if len(turns) == 1:
        if not failed:
            return Reply.final("Both mirrors answered; nothing to recover.")
        return Reply.call("fetch_report", source="backup")
    recovered = turns[1].output_of(turns[1].calls[0]) if turns[1].calls else None
    if _failed(recovered):
        return Reply.final(f"The {', '.join(map(str, failed))} mirror failed and so did backup.")
    # The report as the tool returned it, not as the runtime wrapped it for the model (ADK
    # sends a function's return value as JSON, {"result": ...}): one answer for every runtime.
    return Reply.final(
        f"The {', '.join(map(str, failed))} mirror failed; recovered from the backup. "
        f"{report_text('backup')}"
    )


SCENARIO = Scenario(
    name="tool-error",
    description="one call of a parallel batch raises; the model reads the error and "
    "recovers with another call",
    script=script,
    tools=tools,
    inputs=("Get the quarterly report.",),
    expected=(
        Expected(
            content=f"The {BROKEN} mirror failed; recovered from the backup. "
            f"{report_text('backup')}",
            calls=("fetch_report",) * 3,
        ),
    ),
)
