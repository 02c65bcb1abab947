"""Scenario tools wrapped so that every real execution is in the ledger and can stop at a gate."""

from __future__ import annotations

import asyncio
import functools
import inspect
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from . import finish_order, gates
from .conversation import canonical_arguments
from .ledger import Ledger

IDEMPOTENCY_KEY = "idempotency_key"
SESSION_STATE = "session_state"
# Parameters a runtime fills in itself (the model never sends them): not the call's arguments.
INJECTED = frozenset({IDEMPOTENCY_KEY, SESSION_STATE, "run_id"})
_IDEMPOTENT = "__killpoint_idempotent__"
INTENT = "__killpoint_intent__"  # the argument names that identify the tool's effect


def idempotent(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Mark a tool whose effect happens at most once per idempotency key.

    The tool must take an `idempotency_key` parameter; when the runtime hands it a key
    that already had its effect, the execution is recorded with effect=False.
    """
    if IDEMPOTENCY_KEY not in inspect.signature(fn).parameters:
        raise TypeError(
            f"scenarios: idempotent tool {fn.__name__!r} must declare an "
            f"{IDEMPOTENCY_KEY!r} parameter"
        )
    setattr(fn, _IDEMPOTENT, True)
    return fn


def intent(*fields: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Declare what one effect of the tool is: the arguments that identify it
    (`@intent("customer", "amount_cents")` on charge_card, `@intent("to")` on send_email).
    The ledger counts effects per intent, so the same charge re-issued with another call
    id, another spelling or a reworded body is the same charge done twice."""

    def mark(fn: Callable[..., Any]) -> Callable[..., Any]:
        params = inspect.signature(fn).parameters
        unknown = [f for f in fields if f not in params or f in INJECTED]
        if not fields or unknown:
            raise TypeError(
                f"scenarios: intent of tool {fn.__name__!r} must name its own arguments; "
                f"{unknown or 'none'} given, arguments: {[p for p in params if p not in INJECTED]}"
            )
        setattr(fn, INTENT, tuple(fields))
        return fn

    return mark


def intent_of(fields: tuple[str, ...], arguments: dict[str, Any]) -> str:
    """Canonical JSON of the declared fields, whole numbers as integers (1999.0 is 1999)."""
    return canonical_arguments({f: _whole(arguments.get(f)) for f in fields})


def _whole(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


@dataclass(frozen=True)
class ToolEnv:
    """What scenario tools are built with: the run's ledger."""

    ledger: Ledger

    def wrap(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """Same name, signature and docstring (runtimes build schemas from them). A tool the
        user marked with `effect` records into this ledger instead of the environment's."""
        ledger = self.ledger
        inner = getattr(fn, EFFECT, None)
        wrapped = ledgered(fn if inner is None else inner, lambda: ledger)
        for mark in (_IDEMPOTENT, INTENT):  # as declared above `effect`, if they were
            if hasattr(fn, mark):
                setattr(wrapped, mark, getattr(fn, mark))
        return wrapped


EFFECT = "__killpoint_effect__"  # on an `effect` wrapper: the function it wraps


def ledgered(fn: Callable[..., Any], ledger_of: Callable[[], Ledger | None]) -> Callable[..., Any]:
    """`fn` with every real execution recorded in the ledger `ledger_of()` gives at the
    call, and its gates passed; called as it is when that gives None (killpoint is not
    running it)."""
    name = fn.__name__
    signature = inspect.signature(fn)

    def marks() -> tuple[bool, tuple[str, ...] | None]:
        # Read at the call: `intent` or `idempotent` may be applied above `effect`.
        return (
            getattr(wrapper, _IDEMPOTENT, False) or getattr(fn, _IDEMPOTENT, False),
            getattr(wrapper, INTENT, None) or getattr(fn, INTENT, None),
        )

    def split(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
        given = dict(kwargs)
        if args:
            bound = signature.bind_partial(*args, **kwargs).arguments
            given = {}
            for key, value in bound.items():
                kind = signature.parameters[key].kind
                if kind is inspect.Parameter.VAR_KEYWORD:
                    given.update(value)
                elif kind is inspect.Parameter.VAR_POSITIONAL:
                    given[key] = list(value)
                else:
                    given[key] = value
        return {k: v for k, v in given.items() if k not in INJECTED}, given.get(IDEMPOTENCY_KEY)

    def effect(ledger: Ledger, args: dict[str, Any], key: str | None) -> None:
        is_idempotent, fields = marks()
        had = is_idempotent and key is not None and ledger.has_effect(key)
        # The record is the side effect: durable before the tool goes on.
        what = intent_of(fields, args) if fields else None
        ledger.record(name, args, phase="started", key=key, effect=not had, intent=what)

    # Order: gate "started" (nothing happened yet), the effect, the tool's work, the
    # wait for the calls its batch finishes first (scenarios.finish_order), the
    # "finished" record, gate "finished" (done, result not yet back in the runtime).
    # "finished" is written when the tool returns or raises (a raised error is its
    # result); a call cut short (killed, cancelled) has "started" only.
    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def async_wrapper(*a: Any, **kwargs: Any) -> Any:
            ledger = ledger_of()
            if ledger is None:
                return await fn(*a, **kwargs)
            args, key = split(a, kwargs)
            slot = finish_order.begin(name, canonical_arguments(args))
            try:
                if finish_order.must_start_later(slot):
                    # In a thread: the calls it waits for begin on this loop.
                    await asyncio.to_thread(finish_order.start, slot)
                await _async_hit(gates.tool_gate(name, args, "started"))
                finish_order.started(slot)
                effect(ledger, args, key)
                try:
                    return await fn(*a, **kwargs)
                finally:
                    if not _cut_short():
                        if finish_order.must_wait(slot):
                            # In a thread: the calls it waits for run on this loop.
                            await asyncio.to_thread(finish_order.wait, slot)
                        ledger.record(name, args, phase="finished", key=key)
                        await _async_hit(gates.tool_gate(name, args, "finished"))
            finally:
                finish_order.finished(slot)

        wrapper: Callable[..., Any] = async_wrapper
        return wrapper

    @functools.wraps(fn)
    def sync_wrapper(*a: Any, **kwargs: Any) -> Any:
        ledger = ledger_of()
        if ledger is None:
            return fn(*a, **kwargs)
        args, key = split(a, kwargs)
        slot = finish_order.begin(name, canonical_arguments(args))
        try:
            finish_order.start(slot)
            gates.hit(gates.tool_gate(name, args, "started"))
            finish_order.started(slot)
            effect(ledger, args, key)
            try:
                return fn(*a, **kwargs)
            finally:
                if not _cut_short():
                    finish_order.wait(slot)
                    ledger.record(name, args, phase="finished", key=key)
                    gates.hit(gates.tool_gate(name, args, "finished"))
        finally:
            finish_order.handed_back(slot, sync_wrapper)

    wrapper = sync_wrapper
    return wrapper


def _cut_short() -> bool:
    """Inside `finally`: whether the tool was interrupted (cancelled, exiting) rather than
    returning or raising an ordinary error."""
    exc = sys.exc_info()[1]
    return exc is not None and not isinstance(exc, Exception)


async def _async_hit(name: str) -> None:
    # A gate blocks its caller; in a thread, so the batch's other calls go on.
    if gates.armed():
        await asyncio.to_thread(gates.hit, name)
    else:
        gates.hit(name)  # traced, never blocks
