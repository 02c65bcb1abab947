"""flaky-model: a 429 the SDK retries, then a 500 that outlasts the retries (ERROR), continued."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..conversation import Conversation
from ..faults import Fault
from ..scenario import Expected, Scenario
from ..script import Reply
from ..tooling import ToolEnv

SYMBOLS = ("ACME", "GLOBEX", "INITECH")
PRICES = {"ACME": "101.50", "GLOBEX": "43.20", "INITECH": "7.75"}
MAX_RETRIES = 1

# Turn 1: one 429, retried by the SDK (max_retries=1) after 1 ms: the run goes on.
# Turn 3: 500 twice, one more than the retries: the run ends ERROR; the driver continues
# it once and the fault is spent (counted in the model's state dir), so it completes.
FAULTS = (
    Fault(turn=1, kind="429", times=1, retry_after_ms=1),
    Fault(turn=3, kind="500", times=MAX_RETRIES + 1, retry_after_ms=1),
)


def tools(env: ToolEnv) -> list[Callable[..., Any]]:
    def get_quote(symbol: str) -> str:
        """The last price of a stock symbol."""
        return PRICES.get(symbol, "unknown")

    return [get_quote]


def final_text(prices: list[tuple[str, str]]) -> str:
    return "Quotes: " + ", ".join(f"{s} {p}" for s, p in prices) + "."


def script(conversation: Conversation) -> Reply:
    turns = conversation.turns()
    if len(turns) < len(SYMBOLS):
        return Reply.call("get_quote", symbol=SYMBOLS[len(turns)])
    prices = [
        (str(c.arguments.get("symbol")), t.output_of(c) or "?") for t in turns for c in t.calls
    ]
    return Reply.final(final_text(prices))


SCENARIO = Scenario(
    name="flaky-model",
    description="a 429 the SDK retries, then a 500 that ends the run as ERROR; continued once, "
    "it completes",
    script=script,
    tools=tools,
    inputs=("Quote ACME, GLOBEX and INITECH.",),
    expected=(
        Expected(content=final_text([(s, PRICES[s]) for s in SYMBOLS]), calls=("get_quote",) * 3),
    ),
    faults=FAULTS,
    max_retries=MAX_RETRIES,
    continue_on_error=1,
)
