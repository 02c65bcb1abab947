"""Scenarios that misbehave on purpose, for the engine's own tests."""

from __future__ import annotations

import gc
import os
import signal
import threading
from collections.abc import Callable
from typing import Any

from killpoint.scenarios import Conversation, Expected, Reply, Scenario, ToolEnv


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
)


def _worker_state_tools(env: ToolEnv) -> list[Callable[..., Any]]:
    def worker_state() -> str:
        """How the garbage collector and Ctrl-C stand in this process."""
        # asyncio.run puts its own handler in place of Python's default, never of SIG_IGN.
        sigint = "ignored" if signal.getsignal(signal.SIGINT) == signal.SIG_IGN else "handled"
        return f"enabled={gc.isenabled()} frozen={gc.get_freeze_count() > 0} sigint={sigint}"

    return [worker_state]


def _worker_state_script(conversation: Conversation) -> Reply:
    turns = conversation.turns()
    if not turns:
        return Reply.call("worker_state")
    call = turns[-1].calls[0]
    return Reply.final(turns[-1].output_of(call) or "")


WORKER_STATE = Scenario(
    name="worker-state",
    description="a tool that tells how the garbage collector and Ctrl-C stand in its worker",
    script=_worker_state_script,
    tools=_worker_state_tools,
    expected=(Expected(),),
)


def _ticking_tools(env: ToolEnv) -> list[Callable[..., Any]]:
    def tick(n: int) -> str:
        """Tell the test (a byte on its FIFO, when it reads one) that a worker got here; with
        KILLPOINT_TEST_HOLD set, stay here until killed."""
        fifo = os.environ.get("KILLPOINT_TEST_TICKS")
        if fifo:
            try:
                fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:
                pass  # nobody reads: nobody is waiting
            else:
                try:
                    os.write(fd, b"t")
                except OSError:
                    pass
                finally:
                    os.close(fd)
        if os.environ.get("KILLPOINT_TEST_HOLD"):
            threading.Event().wait()  # held in its first tool call until it is killed
        return f"tick {n}"

    return [tick]


def _ticking_script(conversation: Conversation) -> Reply:
    turns = conversation.turns()
    if len(turns) < TICKS:
        return Reply.call("tick", n=len(turns) + 1)
    return Reply.final("ticked")


TICKS = 3
TICKING = Scenario(
    name="ticking",
    description="three tool calls, each announced on the test's FIFO",
    script=_ticking_script,
    tools=_ticking_tools,
    expected=(Expected(),),
)


def _filling_tools(env: ToolEnv) -> list[Callable[..., Any]]:
    def fill_disk() -> str:
        """Fill the filesystem of the cell's folder, as a neighbour would."""
        fd = os.open(env.ledger.path.parent / "neighbour", os.O_WRONLY | os.O_CREAT)
        try:
            for size in (65536, 512):  # to the last block
                try:
                    while True:
                        os.write(fd, b"\0" * size)
                except OSError:
                    pass
        finally:
            os.close(fd)
        return "filled"

    return [fill_disk]


def _filling_script(conversation: Conversation) -> Reply:
    if not conversation.turns():
        return Reply.call("fill_disk")
    return Reply.final("the disk is full")


FILLING = Scenario(
    name="filling",
    description="a tool that fills the disk under the cell's folder: killpoint's own "
    "writes after it (the ledger's line, the model's state) meet ENOSPC",
    script=_filling_script,
    tools=_filling_tools,
    expected=(Expected(),),
)
