"""What a scenario says its runs end with (`Expected`: the status, the final answer, the
tool calls in order), held against a session.

A comparison with the baseline cannot see a defect the baseline shares: a cancel honoured
one batch early makes 2 of the 3 calls in every run, crashed or not. The scenario's own
expectation can. The calls are the run's tool executions in call order (a call refused at a confirmation
is one, with its status); the final answer is the run's `content` when the runtime keeps
one as text, else its last assistant message's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from killpoint.scenarios import Scenario
from killpoint.values.findings import Finding


def made_calls(run: Mapping[str, Any]) -> list[str]:
    """The tool names of the run's executions, in call order (turn, then place in the
    batch)."""
    executions = sorted(
        run.get("tool_executions") or [],
        key=lambda e: (e.get("turn", 0), e.get("call_index", 0)),
    )
    return [str(e.get("name")) for e in executions]


def final_answer(run: Mapping[str, Any]) -> str | None:
    """The run's answer as text, or None when the normal form keeps none as text."""
    content = run.get("content")
    if isinstance(content, str):
        return content
    for m in reversed(run.get("messages") or []):
        if m.get("role") == "assistant" and not m.get("tool_calls"):
            text = m.get("content")
            return text if isinstance(text, str) else None
    return None


def unmet(scenario: Scenario, session: Mapping[str, Any] | None) -> list[Finding]:
    """Where the session's runs end otherwise than the scenario expects. A session stops at
    its first run that does not complete, so the runs after it are not owed."""
    if session is None:
        return []
    runs = list(session["runs"].values())
    found: list[Finding] = []
    for n, expected in enumerate(scenario.expected):
        at = f"runs[{n}]"
        if n >= len(runs):
            if runs and runs[-1].get("status") != "COMPLETED":
                break  # that run's own status says why the session stopped
            facts = {"what": "runs", "runs": len(runs), "scenario": scenario.name,
                     "expected_runs": len(scenario.expected)}  # fmt: skip
            found.append(
                Finding.of(
                    "outcome-unexpected",
                    facts,
                    path="runs",
                    expected_value=len(scenario.expected),
                    actual_value=len(runs),
                )
            )
            break
        run = runs[n]
        status = run.get("status")
        calls = made_calls(run)
        if status != expected.status:
            facts = {"what": "status", "run": n + 1, "status": status,
                     "expected_status": expected.status}  # fmt: skip
            found.append(
                Finding.of(
                    "outcome-unexpected",
                    facts,
                    path=f"{at}.status",
                    expected_value=expected.status,
                    actual_value=status,
                )
            )
        if expected.calls is not None and calls != list(expected.calls):
            facts = {"what": "calls", "run": n + 1, "calls": calls,
                     "expected_calls": list(expected.calls)}  # fmt: skip
            found.append(
                Finding.of(
                    "outcome-unexpected",
                    facts,
                    path=f"{at}.calls",
                    expected_value=list(expected.calls),
                    actual_value=calls,
                )
            )
        answer = final_answer(run)
        if expected.content is not None and status == "COMPLETED" and answer != expected.content:
            facts = {"what": "content", "run": n + 1, "answer": answer,
                     "expected_answer": expected.content}  # fmt: skip
            found.append(
                Finding.of(
                    "outcome-unexpected",
                    facts,
                    path=f"{at}.content",
                    expected_value=expected.content,
                    actual_value=answer,
                )
            )
    return found


__all__ = ["final_answer", "made_calls", "unmet"]
