"""Versions of a scenario: the same input under changed application code.

A crash-state corpus recorded under one version is resumed under another; each variant
here models one kind of change a project ships between the two (a tool renamed, added or
removed, a tool's signature changed, the instructions changed). A variant keeps the
scenario's name (it is the same application) and says its `version`; it is named
`SCENARIO@VERSION` wherever a scenario is named (`--scenario research@tool-renamed`).

Each variant's script answers any history, whichever version made it: it reads how far
the run has got from the number of finished tool batches, never from a tool's name, so
a run resumed from an older version's rows is answered where it stands.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import Any

from .builtin import research
from .conversation import Conversation
from .scenario import Expected, Scenario
from .script import Reply, Script
from .tooling import ToolEnv

SEPARATOR = "@"


class UnknownVersion(KeyError):
    """A scenario reference names a version its scenario does not declare."""

    def __str__(self) -> str:
        return str(self.args[0])


def _fetch_script(
    fetch: str, arg: str, extra: Callable[[int], Reply | None] | None = None
) -> Script:
    def script(conversation: Conversation) -> Reply:
        turns = conversation.turns()
        if not turns:
            return Reply.call("search", query=conversation.last_user)
        fetched = len(turns) - 1
        if fetched < len(research.RESULTS):
            return Reply.call(fetch, **{arg: research.RESULTS[fetched]})
        if extra is not None:
            reply = extra(fetched - len(research.RESULTS))
            if reply is not None:
                return reply
        return Reply.final(research.SUMMARY)

    return script


def _search(env: ToolEnv) -> Callable[..., Any]:
    def search(query: str) -> str:
        """Search the web and return the ids of the top results."""
        return json.dumps({"query": query, "results": list(research.RESULTS)})

    return search


def _renamed_tools(env: ToolEnv) -> list[Callable[..., Any]]:
    def fetch_result(result_id: str) -> str:
        """Fetch the full text of one search result."""
        return f"Full text of {result_id}: findings about the query."

    return [_search(env), fetch_result]


def _signature_tools(env: ToolEnv) -> list[Callable[..., Any]]:
    def fetch_detail(result: str, full: bool = True) -> str:
        """Fetch the text of one search result (all of it unless `full` is false)."""
        return f"Full text of {result}: findings about the query."

    return [_search(env), fetch_detail]


def _added_tools(env: ToolEnv) -> list[Callable[..., Any]]:
    def cite(result_ids: list[str]) -> str:
        """Format citations for the results used."""
        return "; ".join(f"[{r}]" for r in result_ids)

    return [*research.tools(env), cite]


def _cite_after_fetching(extra_turn: int) -> Reply | None:
    return Reply.call("cite", result_ids=list(research.RESULTS)) if extra_turn == 0 else None


def _removed_tools(env: ToolEnv) -> list[Callable[..., Any]]:
    return [_search(env)]


def _summary_only(conversation: Conversation) -> Reply:
    # Without fetch_detail the search results are all there is to summarise: one batch.
    if not conversation.turns():
        return Reply.call("search", query=conversation.last_user)
    return Reply.final(research.SUMMARY)


BASE = research.SCENARIO
FETCHES = ("fetch_detail",) * len(research.RESULTS)


def _variant(version: str, description: str, **changes: Any) -> Scenario:
    return dataclasses.replace(
        BASE, version=version, description=f"{BASE.description}; {description}", **changes
    )


# The versions of each built-in scenario that declares any, by version name.
VERSIONS: dict[str, dict[str, Scenario]] = {
    BASE.name: {
        v.version: v
        for v in (
            _variant(
                "tool-renamed",
                "fetch_detail renamed fetch_result",
                tools=_renamed_tools,
                script=_fetch_script("fetch_result", "result_id"),
                expected=(
                    Expected(content=research.SUMMARY, calls=("search", *["fetch_result"] * 3)),
                ),
            ),
            _variant(
                "tool-added",
                "a cite tool added, called once after the fetches",
                tools=_added_tools,
                script=_fetch_script("fetch_detail", "result_id", _cite_after_fetching),
                expected=(Expected(content=research.SUMMARY, calls=("search", *FETCHES, "cite")),),
            ),
            _variant(
                "tool-removed",
                "fetch_detail removed: the summary is made from the search alone",
                tools=_removed_tools,
                script=_summary_only,
                expected=(Expected(content=research.SUMMARY, calls=("search",)),),
            ),
            _variant(
                "signature-changed",
                "fetch_detail's parameter result_id renamed result, a flag added",
                tools=_signature_tools,
                script=_fetch_script("fetch_detail", "result"),
            ),
            _variant(
                "instructions-changed",
                "new instructions",
                instructions="You are a careful research assistant. Cite every source.",
            ),
        )
    }
}


def split(ref: str) -> tuple[str, str | None]:
    """`research@tool-renamed` -> ("research", "tool-renamed"); no version: (ref, None)."""
    name, sep, version = ref.rpartition(SEPARATOR)
    return (name, version) if sep and name and ":" not in version else (ref, None)


def version_of(base: Scenario, version: str) -> Scenario:
    """The declared `version` of a built-in scenario (its own version: itself)."""
    if version == base.version:
        return base
    declared = VERSIONS.get(base.name, {})
    if version not in declared:
        choices = ", ".join([base.version, *declared]) if declared else base.version
        raise UnknownVersion(
            f"killpoint: scenario {base.name!r} has no version {version!r}; its versions: {choices}"
        )
    return declared[version]


__all__ = ["SEPARATOR", "VERSIONS", "UnknownVersion", "split", "version_of"]
