"""A LangGraph `StateGraph` agent built from a killpoint scenario, and the Driver over it.

The graph is what a LangGraph user writes for a tool-calling agent: `MessagesState`
(langchain-core messages under the `add_messages` reducer), a `model` node that asks the
openai SDK's Responses API for the next reply, LangGraph's prebuilt `ToolNode` for the
model's calls, and a conditional edge between them. The batch goes to the tool node
either as one task for the whole batch, or as one `Send` task per call (`send=True`), so
that each call's result is a pending write of its own.

Nothing of LangGraph is changed here; killpoint's instrumentation lives in `savers.py` and
runs in workers only.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any

import openai
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.messages.tool import tool_call
from langchain_core.tools import InjectedToolCallId, StructuredTool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.types import Command, Send, interrupt

from killpoint.adapters.langgraph.savers import open_saver, setup
from killpoint.scenarios import Ledger, RunResult, Scenario, ToolEnv
from killpoint.scenarios.tooling import IDEMPOTENCY_KEY

SCRIPTED_API_KEY = "sk-killpoint-scripted-model"
MODEL_ID = "gpt-4.1-mini"
# The checkpoint metadata key that names the run a checkpoint belongs to: LangGraph keeps no
# run record, so the driver passes the run id in `config["metadata"]` and LangGraph copies
# it into the metadata of every checkpoint the invocation writes.
RUN_KEY = "killpoint_run_id"
# What a tool that needs confirmation returns when the user says no (the scenarios read
# "reject" in it).
REJECTED = "rejected: the user did not confirm {name}"


def to_input_items(messages: Sequence[Any]) -> list[dict[str, Any]]:
    """The conversation as Responses API input items (the transcript, resent each turn)."""
    items: list[dict[str, Any]] = []
    for m in messages:
        if isinstance(m, HumanMessage):
            items.append({"role": "user", "content": m.text})
        elif isinstance(m, AIMessage):
            if m.text:
                items.append({"role": "assistant", "content": m.text})
            items.extend(
                {
                    "type": "function_call",
                    "call_id": c["id"],
                    "name": c["name"],
                    "arguments": json.dumps(c["args"]),
                }
                for c in m.tool_calls
            )
        elif isinstance(m, ToolMessage):
            items.append(
                {"type": "function_call_output", "call_id": m.tool_call_id, "output": m.text}
            )
    return items


def to_ai_message(response: Any) -> Any:
    """A Responses API reply as the AIMessage LangGraph keeps: its text, its function calls
    (arguments parsed, as langchain-core holds them) and its token usage."""
    texts: list[str] = []
    calls: list[Any] = []
    for item in response.output or ():
        if item.type == "function_call":
            calls.append(
                tool_call(name=item.name, args=json.loads(item.arguments), id=item.call_id)
            )
        elif item.type == "message":
            texts.extend(part.text for part in item.content if part.type == "output_text")
    usage = response.usage
    return AIMessage(
        content="".join(texts),
        tool_calls=calls,
        response_metadata={"model_name": response.model},
        usage_metadata={
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "total_tokens": usage.total_tokens,
        },
    )


def _confirmed(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn` behind LangGraph's `interrupt()`: the run pauses until the user answers, and a
    call that is not confirmed returns REJECTED without running."""
    name = fn.__name__

    async def ask(**kwargs: Any) -> Any:
        if not interrupt({"tool": name, "arguments": kwargs}):
            return REJECTED.format(name=name)
        return await asyncio.to_thread(fn, **kwargs)

    ask.__name__, ask.__doc__ = name, fn.__doc__
    ask.__signature__ = inspect.signature(fn)  # type: ignore[attr-defined]
    ask.__annotations__ = dict(getattr(fn, "__annotations__", {}))
    return ask


def _keyed(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A tool that takes an idempotency key gets the model's tool call id there, through
    LangGraph's `InjectedToolCallId` (hidden from the model): the id is part of the
    checkpointed model reply, so a re-run of the call carries the same key."""

    def call(**kwargs: Any) -> Any:
        return fn(**kwargs)

    signature = inspect.signature(fn)
    injected = Annotated[str, InjectedToolCallId]
    call.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[
            p.replace(annotation=injected) if p.name == IDEMPOTENCY_KEY else p
            for p in signature.parameters.values()
        ]
    )
    call.__annotations__ = {
        p.name: (injected if p.name == IDEMPOTENCY_KEY else p.annotation)
        for p in signature.parameters.values()
    }
    call.__name__, call.__doc__ = fn.__name__, fn.__doc__
    return call


def build_tools(scenario: Scenario, ledger: Ledger) -> list[Any]:
    """The scenario's tools (their executions reach the ledger) as langchain-core tools."""
    tools: list[Any] = []
    for fn in scenario.build_tools(ToolEnv(ledger)):
        if IDEMPOTENCY_KEY in inspect.signature(fn).parameters:
            fn = _keyed(fn)
        if fn.__name__ in scenario.confirm:
            tools.append(StructuredTool.from_function(coroutine=_confirmed(fn)))
        else:
            tools.append(StructuredTool.from_function(fn))
    return tools


def build_graph(
    scenario: Scenario,
    tools: Sequence[Any],
    respond: Callable[[list[dict[str, Any]], list[dict[str, Any]]], Any],
    *,
    send: bool,
) -> Any:
    """The agent's StateGraph (not compiled): model -> tools -> model ... -> END.

    `respond(input_items, tool_specs)` is the model call (an awaitable of a Responses API
    reply). `send`: one `Send` task per call instead of one task for the batch.
    """
    specs = [
        {
            "type": "function",
            "name": t.name,
            "description": t.description,
            "parameters": t.tool_call_schema.model_json_schema(),
        }
        for t in tools
    ]

    async def model(state: MessagesState) -> dict[str, Any]:
        reply = await respond(to_input_items(state["messages"]), specs)
        return {"messages": [to_ai_message(reply)]}

    def route(state: MessagesState) -> Any:
        last = state["messages"][-1]
        if not isinstance(last, AIMessage) or not last.tool_calls:
            return END
        if send:
            return [Send("tools", [call]) for call in last.tool_calls]
        return "tools"

    graph = StateGraph(MessagesState)
    graph.add_node("model", model)
    # handle_tool_errors=True: a tool's exception goes back to the model as an error
    # message (LangGraph's default raises everything but argument errors).
    graph.add_node("tools", ToolNode(list(tools), handle_tool_errors=True))
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", route, ["tools", END])
    graph.add_edge("tools", "model")
    return graph


class LangGraphDriver:
    """Runs a scenario's inputs as invocations of one compiled graph (scenarios.Driver).

    A run is one `ainvoke` with the scenario's input on thread `session_id`; a resume is
    `ainvoke(None)` on the same thread (LangGraph continues from the thread's newest
    checkpoint and its pending writes), or `Command(resume=...)` when the run waits on
    `interrupt()`. The saver and the openai client are made inside the running event loop
    on first use, so a driver built before a fork works in the child.
    """

    def __init__(
        self,
        scenario: Scenario,
        store_url: str,
        durability: str,
        ledger: Ledger,
        *,
        send: bool = False,
        model_id: str = MODEL_ID,
    ) -> None:
        self.scenario = scenario
        self.store_url = store_url
        self.durability = durability
        self.model_id = model_id
        self._client: Any = None
        self._saver: Any = None
        self._graph: Any = None
        self._builder = build_graph(
            scenario, build_tools(scenario, ledger), self._respond, send=send
        )

    async def _respond(self, items: list[dict[str, Any]], specs: list[dict[str, Any]]) -> Any:
        if self._client is None:
            self._client = openai.AsyncOpenAI(
                api_key=SCRIPTED_API_KEY, max_retries=self.scenario.max_retries
            )
        extra = {"instructions": self.scenario.instructions} if self.scenario.instructions else {}
        return await self._client.responses.create(
            model=self.model_id, input=items, tools=specs, **extra
        )

    async def graph(self) -> Any:
        """The compiled graph over this driver's saver (opened on first use)."""
        if self._graph is None:
            self._saver = open_saver(self.store_url)
            saver = await self._saver.__aenter__()
            # The savers' documented first step (the PostgreSQL one requires it).
            await setup(saver)
            self._graph = self._builder.compile(checkpointer=saver)
        return self._graph

    async def aclose(self) -> None:
        """Close the saver's connection (a worker just exits; tests and warm-up close)."""
        if self._saver is not None:
            await self._saver.__aexit__(None, None, None)
            self._saver = self._graph = None
        if self._client is not None:
            await self._client.close()
            self._client = None

    @staticmethod
    def config(session_id: str, run_id: str) -> dict[str, Any]:
        return {"configurable": {"thread_id": session_id}, "metadata": {RUN_KEY: run_id}}

    async def start(self, input: str, *, session_id: str, run_id: str) -> RunResult:
        return await self._invoke({"messages": [HumanMessage(input)]}, session_id, run_id)

    async def resume(
        self, run_id: str, *, session_id: str, confirmations: Mapping[str, bool]
    ) -> RunResult:
        graph = await self.graph()
        state = await graph.aget_state(self.config(session_id, run_id))
        if not state.interrupts:
            return await self._invoke(None, session_id, run_id)
        # Answered by interrupt id; a fresh worker after a crash has no answers in hand
        # and answers as the scenario says.
        answers = {
            i.id: confirmations.get(i.id, self.scenario.confirm.get(i.value["tool"], True))
            for i in state.interrupts
        }
        return await self._invoke(Command(resume=answers), session_id, run_id)

    def cancel(self, run_id: str) -> None:
        raise NotImplementedError(
            "killpoint: open-source LangGraph has no run cancellation (see unsupported())"
        )

    async def _invoke(self, input: Any, session_id: str, run_id: str) -> RunResult:
        graph = await self.graph()
        config = self.config(session_id, run_id)
        try:
            out = await graph.ainvoke(input, config, durability=self.durability)
        except openai.OpenAIError as exc:
            # The model failed: LangGraph stored the error as the task's pending write and
            # raised it. Anything else (a failed checkpoint write) is not an ERROR the
            # store records, so it is not acknowledged as one: it propagates.
            return RunResult(run_id=run_id, status="ERROR", content=f"{type(exc).__name__}: {exc}")
        interrupts = out.get("__interrupt__") or ()
        if interrupts:
            pending = [(i.id, i.value["tool"]) for i in interrupts]
            return RunResult(run_id=run_id, status="PAUSED", pending=pending)
        last = out["messages"][-1]
        return RunResult(run_id=run_id, status="COMPLETED", content=last.text)
