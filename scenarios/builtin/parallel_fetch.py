"""parallel-fetch: two batches of 3 parallel calls (the second follows links found by the first), then a summary."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..conversation import Conversation
from ..scenario import Expected, Scenario
from ..script import Reply, ToolRequest
from ..tooling import ToolEnv

FIRST = ("alpha", "beta", "gamma")
# Each page of the first batch links to one page of the second.
LINKS = {"alpha": "delta", "beta": "epsilon", "gamma": "zeta"}


def page_text(page: str) -> str:
    """What fetch_page returns: a pure function of the page name."""
    link = LINKS.get(page)
    see = f" See also: {link}." if link else ""
    return f"Page {page}: {len(page)} paragraphs about checkpoints.{see}"


def tools(env: ToolEnv) -> list[Callable[..., Any]]:
    def fetch_page(page: str) -> str:
        """Fetch one page of the handbook by name."""
        return page_text(page)

    return [fetch_page]


def _link(output: str | None) -> str | None:
    if output is None or "See also: " not in output:
        return None
    return output.split("See also: ", 1)[1].rstrip(".")


def summary(outputs: list[str | None]) -> str:
    parts = [o.split(":", 1)[0].removeprefix("Page ") if o else "(missing)" for o in outputs]
    return f"Read {len(outputs)} pages in two parallel batches: {', '.join(parts)}."


def script(conversation: Conversation) -> Reply:
    turns = conversation.turns()
    if not turns:
        return Reply.batch(*(ToolRequest("fetch_page", {"page": p}) for p in FIRST))
    if len(turns) == 1:
        links = [_link(turns[0].output_of(c)) for c in turns[0].calls]
        return Reply.batch(*(ToolRequest("fetch_page", {"page": p or "missing"}) for p in links))
    outputs = [t.output_of(c) for t in turns for c in t.calls]
    return Reply.final(summary(outputs))


SUMMARY = summary([page_text(p) for p in (*FIRST, *(LINKS[p] for p in FIRST))])

SCENARIO = Scenario(
    name="parallel-fetch",
    description="two batches of 3 parallel fetches (the second follows links from the first), "
    "then a summary",
    script=script,
    tools=tools,
    inputs=("Read the handbook pages alpha, beta and gamma and what they link to.",),
    expected=(Expected(content=SUMMARY, calls=("fetch_page",) * 6),),
)
