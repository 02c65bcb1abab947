"""The oracle: compare a session with the one it should equal, and the ledger's effects with
the baseline's, and name every difference as a finding.

Lists are compared by identity before any field is: tool executions by (turn, call index,
name, arguments), runs and messages by position (and role); what is missing and what is
extra is said first ("3 of 7 tool executions missing: search(a), ..."), then the fields
of what matched. The whole difference, leaf by leaf, is kept apart for the JSON.

The two sides are named by the caller ("baseline" / "resumed", or "after the takeover" /
"after the stale worker woke"), and every sentence uses those names.
"""

from __future__ import annotations

import contextlib
import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from killpoint.values.findings import Finding

MAX_DIFFERENCES = 200  # leaf differences kept per cell (the JSON notes how many more)
SHOWN = 4  # items named in a sentence before "..."
# Keys of a run compared as usage: a difference there is reported on its own, and below
# the findings about what the run did.
USAGE_KEYS = ("usage", "metrics", "metrics_details")


@dataclass(frozen=True)
class Sides:
    """What the two sides of a comparison are, in the words every sentence uses."""

    expected: str = "baseline"
    actual: str = "resumed"


@dataclass(frozen=True)
class Difference:
    path: str
    expected: Any
    actual: Any

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "expected": _clip(self.expected), "actual": _clip(self.actual)}

    def __str__(self) -> str:
        return f"{self.path}: {_clip(self.expected)!r} vs {_clip(self.actual)!r}"


def _clip(value: Any, limit: int = 600) -> Any:
    if isinstance(value, str) and len(value) > limit:
        return value[:limit] + f"… ({len(value)} chars)"
    if isinstance(value, (dict, list)):
        text = repr(value)
        return value if len(text) <= limit else text[:limit] + f"… ({len(text)} chars)"
    return value


def comparable(session: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A normalised session with its runs in order (run ids are not compared)."""
    if session is None:
        return None
    return {"state": session["state"], "runs": list(session["runs"].values())}


# -- every difference, leaf by leaf ------------------------------------------------------------


def differences(expected: Any, actual: Any, path: str = "session") -> list[Difference]:
    """Every leaf that differs (lists by index), at most MAX_DIFFERENCES."""
    found: list[Difference] = []
    _walk(expected, actual, path, found)
    return found


def _walk(expected: Any, actual: Any, path: str, found: list[Difference]) -> None:
    if len(found) >= MAX_DIFFERENCES:
        return
    if isinstance(expected, Mapping) and isinstance(actual, Mapping):
        for key in [*expected, *(k for k in actual if k not in expected)]:
            if key not in actual or key not in expected:
                found.append(Difference(f"{path}.{key}", expected.get(key), actual.get(key)))
            else:
                _walk(expected[key], actual[key], f"{path}.{key}", found)
        return
    if isinstance(expected, list) and isinstance(actual, list):
        for n, (e, a) in enumerate(zip(expected, actual, strict=False)):
            _walk(e, a, f"{path}[{n}]", found)
        for n in range(min(len(expected), len(actual)), max(len(expected), len(actual))):
            if len(found) >= MAX_DIFFERENCES:
                return
            found.append(
                Difference(
                    f"{path}[{n}]",
                    expected[n] if n < len(expected) else None,
                    actual[n] if n < len(actual) else None,
                )
            )
        return
    if expected != actual:
        found.append(Difference(path, expected, actual))


def first_difference(expected: Any, actual: Any, path: str = "session") -> Difference | None:
    found: list[Difference] = []
    _walk(expected, actual, path, found)
    return found[0] if found else None


# -- findings from two sessions ----------------------------------------------------------------


def compare_sessions(
    expected: Mapping[str, Any] | None,
    actual: Mapping[str, Any] | None,
    sides: Sides = Sides(),
) -> list[Finding]:
    """Every way `actual` differs from `expected`, as findings (none: they are equal)."""
    e, a = comparable(expected), comparable(actual)
    if e is None and a is None:
        return []
    if e is None or a is None:
        which = sides.actual if a is None else sides.expected
        return [Finding("runs-differ", f"the session is absent {which}", path="session")]
    found: list[Finding] = []
    if e["state"] != a["state"]:
        diff = differences(e["state"], a["state"], "state")
        found.append(
            Finding(
                "state-differs",
                f"the session state differs at {len(diff)} place(s), first {diff[0].path}: "
                f"{sides.expected} {_clip(diff[0].expected, 80)!r}, "
                f"{sides.actual} {_clip(diff[0].actual, 80)!r}",
                # The part of the state that first differs (state.session_metrics, say):
                # the cause across cells, not the value.
                path=".".join(diff[0].path.split(".")[:2]),
                expected_value=e["state"],
                actual_value=a["state"],
            )
        )
    e_runs, a_runs = e["runs"], a["runs"]
    if len(e_runs) != len(a_runs):
        found.append(
            Finding(
                "runs-differ",
                f"the {sides.expected} has {len(e_runs)} run(s), the {sides.actual} {len(a_runs)}",
                path="runs",
                expected_value=[r.get("status") for r in e_runs],
                actual_value=[r.get("status") for r in a_runs],
            )
        )
    for n, (er, ar) in enumerate(zip(e_runs, a_runs, strict=False)):
        found += compare_runs(er, ar, f"runs[{n}]", sides)
    return found


def compare_runs(
    expected: Mapping[str, Any], actual: Mapping[str, Any], at: str, sides: Sides
) -> list[Finding]:
    found: list[Finding] = []
    if expected.get("status") != actual.get("status"):
        found.append(
            Finding(
                "status-differs",
                f"{at} ends {actual.get('status')} {sides.actual}, "
                f"{expected.get('status')} in the {sides.expected}",
                path=f"{at}.status",
                expected_value=expected.get("status"),
                actual_value=actual.get("status"),
            )
        )
    found += compare_executions(
        expected.get("tool_executions") or [], actual.get("tool_executions") or [], at, sides
    )
    found += compare_messages(
        expected.get("messages") or [], actual.get("messages") or [], at, sides
    )
    handled = {"status", "tool_executions", "messages"}
    for key in [*expected, *(k for k in actual if k not in expected)]:
        if key in handled or expected.get(key) == actual.get(key):
            continue
        kind = "usage-differs" if key in USAGE_KEYS else "run-differs"
        diff = differences(expected.get(key), actual.get(key), f"{at}.{key}")
        first = diff[0] if diff else Difference(f"{at}.{key}", None, None)
        found.append(
            Finding(
                kind,
                f"{first.path}: {sides.expected} {_clip(first.expected, 80)!r}, "
                f"{sides.actual} {_clip(first.actual, 80)!r}"
                + (f" (and {len(diff) - 1} more)" if len(diff) > 1 else ""),
                path=f"{at}.{key}",
                expected_value=expected.get(key),
                actual_value=actual.get(key),
            )
        )
    return found


def _call_text(e: Mapping[str, Any]) -> str:
    args = e.get("arguments", "")
    with contextlib.suppress(TypeError, ValueError):
        args = json.dumps(json.loads(args), separators=(",", ":"), sort_keys=True)
    text = f"{e.get('name')}({args})"
    return text if len(text) <= 80 else text[:77] + "..."


def _identity(e: Mapping[str, Any]) -> tuple[Any, ...]:
    return (e.get("turn"), e.get("call_index"), e.get("name"), e.get("arguments"))


def _named(items: Sequence[Mapping[str, Any]]) -> str:
    shown = ", ".join(_call_text(x) for x in items[:SHOWN])
    return shown + (", ..." if len(items) > SHOWN else "")


def compare_executions(
    expected: Sequence[Mapping[str, Any]],
    actual: Sequence[Mapping[str, Any]],
    at: str,
    sides: Sides,
) -> list[Finding]:
    """Tool executions matched by identity: missing, extra, order, then fields."""
    path = f"{at}.tool_executions"
    e_ids = Counter(_identity(x) for x in expected)
    a_ids = Counter(_identity(x) for x in actual)
    missing_ids, extra_ids = e_ids - a_ids, a_ids - e_ids
    found: list[Finding] = []
    if missing_ids:
        missing = _take(expected, missing_ids)
        found.append(
            Finding(
                "tool-executions-lost",
                f"{len(missing)} of {len(expected)} tool executions of the {sides.expected} "
                f"missing {sides.actual}: {_named(missing)}",
                path=path,
                tool=_one_tool(missing),
                expected_value=[_call_text(x) for x in missing],
            )
        )
    if extra_ids:
        extra = _take(actual, extra_ids)
        found.append(
            Finding(
                "tool-executions-extra",
                f"{len(extra)} tool execution(s) {sides.actual} that the {sides.expected} "
                f"does not hold: {_named(extra)}",
                path=path,
                tool=_one_tool(extra),
                actual_value=[_call_text(x) for x in extra],
            )
        )
    if missing_ids or extra_ids:
        return found
    if [_identity(x) for x in expected] != [_identity(x) for x in actual]:
        found.append(
            Finding(
                "tool-executions-reordered",
                f"the same {len(expected)} tool executions in another order {sides.actual}",
                path=path,
                expected_value=[_call_text(x) for x in expected],
                actual_value=[_call_text(x) for x in actual],
            )
        )
    # Fields of the matched executions, pairing equal identities in order.
    pending: dict[tuple[Any, ...], list[int]] = {}
    for n, x in enumerate(actual):
        pending.setdefault(_identity(x), []).append(n)
    for x in expected:
        m = pending[_identity(x)].pop(0)
        diff = differences(x, actual[m], f"{path}[{m}]")
        if diff:
            first = diff[0]
            found.append(
                Finding(
                    "tool-executions-differ",
                    f"{_call_text(x)} differs at {first.path}: {sides.expected} "
                    f"{_clip(first.expected, 80)!r}, {sides.actual} {_clip(first.actual, 80)!r}",
                    path=first.path,
                    tool=str(x.get("name")),
                    expected_value=first.expected,
                    actual_value=first.actual,
                )
            )
    return found


def _take(items: Sequence[Mapping[str, Any]], wanted: Counter[tuple[Any, ...]]) -> list[Any]:
    left = Counter(wanted)
    out = []
    for x in items:
        if left[_identity(x)] > 0:
            left[_identity(x)] -= 1
            out.append(x)
    return out


def _one_tool(items: Iterable[Mapping[str, Any]]) -> str | None:
    names = {str(x.get("name")) for x in items}
    return names.pop() if len(names) == 1 else None


def _message_text(m: Mapping[str, Any]) -> str:
    calls = m.get("tool_calls") or []
    if calls:
        return f"{m.get('role')}({', '.join(str(c.get('name')) for c in calls)})"
    return str(m.get("role"))


def compare_messages(
    expected: Sequence[Mapping[str, Any]],
    actual: Sequence[Mapping[str, Any]],
    at: str,
    sides: Sides,
) -> list[Finding]:
    """Messages by position and role: a different shape first, then fields."""
    path = f"{at}.messages"
    e_roles = [_message_text(m) for m in expected]
    a_roles = [_message_text(m) for m in actual]
    if e_roles != a_roles:
        n = next(
            (i for i, (x, y) in enumerate(zip(e_roles, a_roles, strict=False)) if x != y),
            min(len(e_roles), len(a_roles)),
        )
        return [
            Finding(
                "messages-differ",
                f"{len(actual)} messages {sides.actual}, {len(expected)} in the "
                f"{sides.expected}; from message {n}: {sides.expected} "
                f"[{', '.join(e_roles[n : n + SHOWN])}], {sides.actual} "
                f"[{', '.join(a_roles[n : n + SHOWN])}]",
                path=f"{path}[{n}]",
                expected_value=e_roles,
                actual_value=a_roles,
            )
        ]
    diff = differences(list(expected), list(actual), path)
    if not diff:
        return []
    first = diff[0]
    return [
        Finding(
            "messages-differ",
            f"{len(diff)} field(s) of the messages differ, first {first.path}: {sides.expected} "
            f"{_clip(first.expected, 80)!r}, {sides.actual} {_clip(first.actual, 80)!r}",
            path=first.path,
            expected_value=first.expected,
            actual_value=first.actual,
        )
    ]


# -- side effects ------------------------------------------------------------------------------


Signature = tuple[str, str]  # (tool, canonical arguments)


@dataclass(frozen=True)
class EffectCount:
    duplicates: int  # repeats of the baseline's effects, whatever the bound
    missing: list[tuple[Signature, int]]  # (call, how many times fewer than the baseline)
    repeated: list[tuple[Signature, int]]  # (call, extra executions)
    foreign: list[tuple[Signature, int]]  # (call, executions) the baseline never had


def count_effects(baseline: Counter[Signature], actual: Counter[Signature]) -> EffectCount:
    """Effects of the cell against its baseline's. A repeat of an effect the baseline had
    is a duplicate; an effect it never had is no duplicate of anything: the run went
    elsewhere (a divergence), and it is listed apart."""
    repeated = [(s, actual[s] - n) for s, n in baseline.items() if actual[s] > n]
    foreign = [(s, n) for s, n in actual.items() if s not in baseline]
    missing = [(s, n - actual[s]) for s, n in baseline.items() if actual[s] < n]
    return EffectCount(sum(x[1] for x in repeated), missing, repeated, foreign)


def effect_findings(
    counted: EffectCount,
    allowed: Counter[Signature],
    *,
    judged: bool,
    evidence: Mapping[Signature, Sequence[str]] | None = None,
) -> list[Finding]:
    """Findings from the ledger. Every repeat is counted: within what `allowed` permits
    for that call (its effect had happened, its result was not durable at a crash) it is
    an expected `effect-repeated`, beyond it an `effect-duplicated`. Missing and foreign
    effects are findings only when the run was `judged` complete (a run lost as expected
    did not owe the rest of its effects)."""
    evidence = evidence or {}
    found: list[Finding] = []
    for sig, extra in counted.repeated:
        within = min(extra, allowed[sig])
        beyond = extra - within
        text = _sig_text(sig)
        lines = tuple(evidence.get(sig, ()))
        if beyond:
            why = (
                f"{beyond} beyond the {within} repeat(s) allowed for a call in flight at a crash"
                if within
                else "it was not in flight at any crash, so no repeat is allowed"
            )
            found.append(
                Finding(
                    "effect-duplicated",
                    f"{text} ran {extra} more time(s) than in the baseline; {why}",
                    path="ledger",
                    tool=sig[0],
                    actual_value=extra,
                    expected_value=within,
                    evidence=lines,
                )
            )
        if within:
            found.append(
                Finding(
                    "effect-repeated",
                    f"{text} ran again {within} time(s): it was in flight at a crash",
                    path="ledger",
                    tool=sig[0],
                    actual_value=within,
                    evidence=lines,
                    expected=True,
                )
            )
    if judged:
        for sig, fewer in counted.missing:
            found.append(
                Finding(
                    "effect-lost",
                    f"{_sig_text(sig)} ran {fewer} time(s) fewer than in the baseline",
                    path="ledger",
                    tool=sig[0],
                    expected_value=fewer,
                )
            )
        for sig, n in counted.foreign:
            found.append(
                Finding(
                    "effect-foreign",
                    f"{_sig_text(sig)} ran {n} time(s); the baseline never ran it",
                    path="ledger",
                    tool=sig[0],
                    actual_value=n,
                    evidence=tuple(evidence.get(sig, ())),
                )
            )
    return found


def _sig_text(sig: Signature) -> str:
    return _call_text({"name": sig[0], "arguments": sig[1]})


__all__ = [
    "MAX_DIFFERENCES",
    "Difference",
    "EffectCount",
    "Sides",
    "comparable",
    "compare_sessions",
    "count_effects",
    "differences",
    "effect_findings",
    "first_difference",
]
