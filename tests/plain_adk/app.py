"""The plain ADK app every test here runs: a resumable `App` whose `LlmAgent` calls its one
tool `step` STEPS times and then answers, its sessions in `DatabaseSessionService`.

The model is a `BaseLlm` of a few lines (no network): it answers from the conversation ADK
sends it, so a fresh process that resumes an invocation gets the same replies. Knobs, from
the environment, for the tests that need a process to stop where they kill it:

  PLAIN_ADK_LOG      a file: one line per model call ("model N") and per tool call ("step N")
  PLAIN_ADK_HOLD_AT  model turn N: print "held", then block the event loop for good
  PLAIN_ADK_ABORT_AT model turn N: set the invocation's abort_signal first (with HOLD_AT:
                     the process is held after the cancel was asked, before ADK seals it)
  PLAIN_ADK_FAIL_AT  model turn N: raise (a provider's error) the first time it is asked
  PLAIN_ADK_WRITE_AT model turn N: the first write after it (the append of its reply, past
                     ADK's stale check) prints "at write" and waits for a line on stdin;
                     once committed it prints "written"
  PLAIN_ADK_HOLD_NEXT with WRITE_AT: after "written", the process's next statement (the
                     stale check of its next append) prints "at next" and waits for a line

Run as a child: `python -m tests.plain_adk.app DB_URL start|resume SESSION INVOCATION`
(prints "ready" once built, then waits for one line on stdin before it runs, so that a test
starts two at once), ending with "status: ..." or the exception's name.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import sys
import threading
import warnings
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

warnings.filterwarnings("ignore", message=r"\[EXPERIMENTAL\]", category=UserWarning)

from google.adk.agents import LlmAgent  # noqa: E402
from google.adk.apps import App, ResumabilityConfig  # noqa: E402
from google.adk.models.base_llm import BaseLlm  # noqa: E402
from google.adk.models.llm_response import LlmResponse  # noqa: E402
from google.adk.runners import Runner  # noqa: E402
from google.adk.sessions import DatabaseSessionService  # noqa: E402
from google.genai import types  # noqa: E402
from sqlalchemy import event  # noqa: E402
from sqlalchemy.orm import Session as OrmSession  # noqa: E402

APP, USER = "plain", "user"
STEPS = 3
ABORT: asyncio.Event | None = None  # the running invocation's abort_signal
WRITE_ARMED = threading.Event()  # the next write is held (PLAIN_ADK_WRITE_AT)
NEXT_ARMED = threading.Event()  # the next statement is held (PLAIN_ADK_HOLD_NEXT)


def log(line: str) -> None:
    path = os.environ.get("PLAIN_ADK_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(line + "\n")


def knob(name: str) -> int | None:
    value = os.environ.get(f"PLAIN_ADK_{name}")
    return int(value) if value else None


class StepModel(BaseLlm):
    """Calls `step` with n = 0, 1, ... (call id `call-n`) until STEPS are done, then answers."""

    model: str = "plain-step-model"

    async def generate_content_async(
        self, llm_request: Any, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        done = sum(1 for c in llm_request.contents for p in c.parts or () if p.function_response)
        turn = done + 1
        log(f"model {turn}")
        if turn == knob("ABORT_AT") and ABORT is not None:
            ABORT.set()
        if turn == knob("WRITE_AT"):
            WRITE_ARMED.set()
        if turn == knob("HOLD_AT"):
            print("held", flush=True)
            threading.Event().wait()  # the loop is blocked: nothing more of ADK runs
        failed = Path(os.environ.get("PLAIN_ADK_LOG", "/nonexistent") + ".failed")
        if turn == knob("FAIL_AT") and not failed.exists():
            failed.touch()
            raise RuntimeError("the provider answered 500")
        if done < STEPS:
            call = types.FunctionCall(id=f"call-{done}", name="step", args={"n": done})
            yield LlmResponse(
                content=types.Content(role="model", parts=[types.Part(function_call=call)])
            )
            return
        yield LlmResponse(
            content=types.Content(role="model", parts=[types.Part(text=f"done after {done} steps")])
        )


def step(n: int) -> str:
    """Do step n of the job."""
    log(f"step {n}")
    return f"step {n} done"


def build(db_url: str) -> tuple[Runner, DatabaseSessionService]:
    agent = LlmAgent(name="agent", model=StepModel(), tools=[step])
    app = App(name=APP, root_agent=agent, resumability_config=ResumabilityConfig(is_resumable=True))
    service = DatabaseSessionService(db_url)
    if knob("WRITE_AT") is not None:
        hold_a_write(service)
    return Runner(app=app, session_service=service), service


def hold_a_write(service: DatabaseSessionService) -> None:
    """PLAIN_ADK_WRITE_AT: hold the armed write before it reaches SQLite. ADK has read the
    session's revision by then; the test decides when the write goes on."""
    engine = service.db_engine.sync_engine
    held = threading.Event()

    @event.listens_for(engine, "before_cursor_execute")
    def before(conn: Any, cursor: Any, statement: str, *rest: Any) -> None:
        if NEXT_ARMED.is_set():
            NEXT_ARMED.clear()
            print("at next", flush=True)
            sys.stdin.readline()
        if WRITE_ARMED.is_set() and statement.lstrip().upper().startswith(("INSERT", "UPDATE")):
            WRITE_ARMED.clear()
            held.set()
            print("at write", flush=True)
            sys.stdin.readline()

    # The ORM's after_commit, not the engine's commit event: that one comes before SQLite
    # has committed, and a test told "written" must find the write in the store.
    @event.listens_for(OrmSession, "after_commit")
    def committed(session: Any) -> None:
        if held.is_set():
            held.clear()
            print("written", flush=True)
            if knob("HOLD_NEXT"):
                NEXT_ARMED.set()


async def run(
    runner: Runner, service: DatabaseSessionService, session: str, invocation: str, *, start: bool
) -> None:
    """Start (with the user's message) or resume (run_async with the invocation's id only)."""
    global ABORT
    ABORT = asyncio.Event()
    message = None
    if start:
        if await service.get_session(app_name=APP, user_id=USER, session_id=session) is None:
            await service.create_session(app_name=APP, user_id=USER, session_id=session)
        message = types.Content(role="user", parts=[types.Part(text="Do the job.")])
    async for _ in runner.run_async(
        user_id=USER,
        session_id=session,
        invocation_id=invocation,
        new_message=message,
        abort_signal=ABORT,
    ):
        pass


def events(path: Path, session: str = "s") -> list[dict[str, Any]]:
    """The session's events as ADK stored them, in ADK's order (plain sqlite3)."""
    conn = sqlite3.connect(path)
    try:
        rows = conn.execute(
            "SELECT event_data FROM events WHERE session_id = ? ORDER BY timestamp, id", (session,)
        ).fetchall()
    finally:
        conn.close()
    return [json.loads(data) for (data,) in rows]


def calls(event: dict[str, Any]) -> list[str]:
    return [
        p["function_call"]["id"]
        for p in (event.get("content") or {}).get("parts", [])
        if p.get("function_call")
    ]


def responses(event: dict[str, Any]) -> list[str]:
    return [
        p["function_response"]["id"]
        for p in (event.get("content") or {}).get("parts", [])
        if p.get("function_response")
    ]


def text(event: dict[str, Any]) -> str | None:
    found = [p["text"] for p in (event.get("content") or {}).get("parts", []) if p.get("text")]
    return "".join(found) if found else None


async def _main(db_url: str, what: str, session: str, invocation: str) -> None:
    runner, service = build(db_url)
    await service.prepare_tables()
    print("ready", flush=True)
    await asyncio.to_thread(sys.stdin.readline)
    try:
        await run(runner, service, session, invocation, start=what == "start")
        print("status: done", flush=True)
    except Exception as exc:
        print(f"raised: {type(exc).__name__}: {exc}", flush=True)
    finally:
        await service.close()


if __name__ == "__main__":
    asyncio.run(_main(*sys.argv[1:5]))
