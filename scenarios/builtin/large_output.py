"""large-output: two parallel tool results of more than 1 MiB each, then a checksum summary."""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable
from typing import Any

from ..conversation import Conversation
from ..scenario import Expected, Scenario
from ..script import Reply, ToolRequest
from ..tooling import ToolEnv

TABLES = ("events", "users")
MIN_BYTES = 1 << 20  # every result is at least 1 MiB


@functools.cache
def table_dump(table: str) -> str:
    """A deterministic CSV dump of more than MIN_BYTES characters (ASCII)."""
    lines = [f"# table {table}\n"]
    size, row = len(lines[0]), 0
    while size < MIN_BYTES:
        line = f"{table},{row:07d},{(row * 7919) % 100_003:06d},{'abcdefghij' * 4}\n"
        lines.append(line)
        size += len(line)
        row += 1
    return "".join(lines)


def tools(env: ToolEnv) -> list[Callable[..., Any]]:
    def export_table(table: str) -> str:
        """Export a whole table as CSV."""
        return table_dump(table)

    return [export_table]


def describe_output(table: str, output: str | None) -> str:
    if output is None:
        return f"{table} (missing)"
    digest = hashlib.sha256(output.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"{table} ({len(output)} chars, sha256 {digest})"


def script(conversation: Conversation) -> Reply:
    turns = conversation.turns()
    if not turns:
        return Reply.batch(*(ToolRequest("export_table", {"table": t}) for t in TABLES))
    parts = [
        describe_output(str(c.arguments.get("table")), turns[0].output_of(c))
        for c in turns[0].calls
    ]
    return Reply.final("Exported " + " and ".join(parts) + ".")


SCENARIO = Scenario(
    name="large-output",
    description="two parallel exports of more than 1 MiB each; the summary checks their "
    "lengths and sha256",
    script=script,
    tools=tools,
    inputs=("Export the events and users tables.",),
    expected=(
        Expected(
            content="Exported "
            + " and ".join(describe_output(t, table_dump(t)) for t in TABLES)
            + ".",
            calls=("export_table",) * len(TABLES),
        ),
    ),
)
