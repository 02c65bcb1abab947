"""Scenarios that misbehave on purpose, for the engine's own tests."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any

from scenarios import Conversation, Expected, Reply, Scenario, ToolEnv


def _blocking_tools(env: ToolEnv) -> list[Callable[..., Any]]:
    def wait_forever(reason: str) -> str:
        """Never returns."""
        fifo = os.environ.get("KILLPOINT_TEST_FIFO")
        if fifo:  # tell the test that a worker is inside the tool
            with open(fifo, "w") as f:
                f.write("in tool\n")
        threading.Event().wait()
        return reason

    return [wait_forever]


def _blocking_script(conversation: Conversation) -> Reply:
    if not conversation.turns():
        return Reply.call("wait_forever", reason="test")
    return Reply.final("unreachable")


BLOCKING = Scenario(
    name="blocking",
    description="a tool that never returns",
    script=_blocking_script,
    tools=_blocking_tools,
    expected=(Expected(),),
    modes=("tool-batch",),
)


def _echo_tools(env: ToolEnv) -> list[Callable[..., Any]]:
    def echo(text: str) -> str:
        """Echo the text back."""
        return text

    return [echo]


def _impure_script(conversation: Conversation) -> Reply:
    if not conversation.turns():
        return Reply.call("echo", text="hello")
    return Reply.final(f"answered by process {os.getpid()}")  # differs per process


IMPURE = Scenario(
    name="impure",
    description="a script that depends on its process",
    script=_impure_script,
    tools=_echo_tools,
    expected=(Expected(),),
    modes=("tool-batch",),
)
