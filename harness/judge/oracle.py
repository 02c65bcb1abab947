"""The oracle: compare a session with the one it should equal, and the ledger's effects with
the baseline's, and name every difference as a finding.

Lists are compared by identity before any field is: tool executions by (turn, call index,
name, arguments), runs and messages by position (and role); what is missing and what is
extra is said first ("3 of 7 tool executions missing: search(a), ..."), then the fields
of what matched. The whole difference, leaf by leaf, is kept apart for the JSON.

The two sides are named by the caller ("baseline" / "resumed run", or "store after the
takeover" / "store after the stale worker woke"); every sentence and every finding's
`sides` use those names, and each kind's sentence comes from its template
(killpoint.values.sentences).
"""

from __future__ import annotations

import contextlib
import difflib
import json
from collections import Counter
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from killpoint.values.findings import Finding, path_pattern

MAX_DIFFERENCES = 200  # leaf differences kept per cell (the JSON notes how many more)
SHOWN = 4  # items named in a sentence before "..."
# Keys of a run compared as usage: a difference there is reported on its own, and below
# the findings about what the run did.
USAGE_KEYS = ("usage", "metrics", "metrics_details")


@dataclass(frozen=True)
class Sides:
    """What the two sides of a comparison are, as nouns every sentence puts "the" before:
    "baseline" / "resumed run", "store after the takeover" / "store after the stale worker
    woke"."""

    expected: str = "baseline"
    actual: str = "resumed run"

    @property
    def pair(self) -> tuple[str, str]:
        return self.expected, self.actual

    def facts(self) -> dict[str, str]:
        return {"expected_side": self.expected, "actual_side": self.actual}


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
    """Every leaf that differs, at most MAX_DIFFERENCES. Lists of tool executions are
    matched by identity (turn, call index, name, arguments) and messages by alignment, so
    one missing item is one difference, not a shift of every later one: what is missing
    first, then what is extra, then the fields of what matched. Other lists by index."""
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
        _walk_list(expected, actual, path, found)
        return
    if expected != actual:
        found.append(Difference(path, expected, actual))


def _walk_list(expected: list[Any], actual: list[Any], path: str, found: list[Difference]) -> None:
    pairs, missing, extra = _align(expected, actual, path)
    for n in missing:
        found.append(Difference(f"{path}[{n}]", expected[n], None))
    for m in extra:
        found.append(Difference(f"{path}[{m}]", None, actual[m]))
    for n, m in pairs:
        if len(found) >= MAX_DIFFERENCES:
            return
        # The item is named where the resumed side holds it.
        _walk(expected[n], actual[m], f"{path}[{m}]", found)
    del found[MAX_DIFFERENCES:]


def _is_execution(x: Any) -> bool:
    return isinstance(x, Mapping) and {"turn", "call_index", "name"} <= set(x)


def _align(
    expected: Sequence[Any], actual: Sequence[Any], path: str
) -> tuple[list[tuple[int, int]], list[int], list[int]]:
    """(matched index pairs, indices missing from `actual`, indices extra in it)."""
    pairs: list[tuple[int, int]] = []
    missing: list[int] = []
    extra: list[int] = []
    if expected and actual and all(map(_is_execution, [*expected, *actual])):
        waiting: dict[tuple[Any, ...], list[int]] = {}
        for m, x in enumerate(actual):
            waiting.setdefault(_identity(x), []).append(m)
        for n, x in enumerate(expected):
            slots = waiting.get(_identity(x))
            if slots:
                pairs.append((n, slots.pop(0)))
            else:
                missing.append(n)
        taken = {m for _, m in pairs}
        return pairs, missing, [m for m in range(len(actual)) if m not in taken]
    if path.endswith(".messages") and expected and actual:
        keys_e = [_message_key(x) for x in expected]
        keys_a = [_message_key(x) for x in actual]
        matcher = difflib.SequenceMatcher(a=keys_e, b=keys_a, autojunk=False)
        for op, i1, i2, j1, j2 in matcher.get_opcodes():
            if op == "equal" or (op == "replace" and i2 - i1 == j2 - j1):
                pairs += zip(range(i1, i2), range(j1, j2), strict=True)
            else:
                missing += range(i1, i2)
                extra += range(j1, j2)
        return pairs, missing, extra
    common = min(len(expected), len(actual))
    return (
        [(n, n) for n in range(common)],
        list(range(common, len(expected))),
        list(range(common, len(actual))),
    )


def _message_key(m: Any) -> Hashable:
    """What a message is, for alignment: its role, its calls and its content. The values
    themselves where they hash (a string caches its hash: a 1 MiB tool result is not
    copied into a repr for every comparison), their repr where they do not."""
    if not isinstance(m, Mapping):
        return repr(m)
    calls = tuple((c.get("name"), c.get("arguments")) for c in m.get("tool_calls") or [])
    key = (m.get("role"), calls, m.get("content"))
    try:
        hash(key)
    except TypeError:
        return repr(key)
    return key


def first_difference(expected: Any, actual: Any, path: str = "session") -> Difference | None:
    found: list[Difference] = []
    _walk(expected, actual, path, found)
    return found[0] if found else None


# -- findings from two sessions ----------------------------------------------------------------


def _usage_key(key: str) -> bool:
    """A part of the session state that is usage or metrics (agno's session_metrics)."""
    return "metrics" in key or "usage" in key


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
        return [Finding.of("runs-differ", {"absent": which}, path="session", sides=sides.pair)]
    found: list[Finding] = []
    e_state, a_state = e["state"], a["state"]
    if e_state != a_state:
        diff = differences(e_state, a_state, "state")
        usage = [d for d in diff if _usage_key(d.path.split(".")[1] if "." in d.path else "")]
        rest = [d for d in diff if d not in usage]
        for kind, part in (("state-differs", rest), ("usage-differs", usage)):
            if not part:
                continue
            first = part[0]
            found.append(
                Finding.of(
                    kind,
                    {
                        "where": first.path,
                        "expected_value": _clip(first.expected, 80),
                        "actual_value": _clip(first.actual, 80),
                        "more": len(part) - 1,
                        **sides.facts(),
                    },
                    # The part of the state that first differs (state.session_metrics, say):
                    # the cause across cells, not the value.
                    path=".".join(first.path.split(".")[:2]),
                    expected_value=first.expected,
                    actual_value=first.actual,
                    sides=sides.pair,
                )
            )
    e_runs, a_runs = e["runs"], a["runs"]
    if len(e_runs) != len(a_runs):
        found.append(
            Finding.of(
                "runs-differ",
                {"expected_runs": len(e_runs), "actual_runs": len(a_runs), **sides.facts()},
                path="runs",
                expected_value=[r.get("status") for r in e_runs],
                actual_value=[r.get("status") for r in a_runs],
                sides=sides.pair,
            )
        )
    for n, (er, ar) in enumerate(zip(e_runs, a_runs, strict=False)):
        found += compare_runs(er, ar, f"runs[{n}]", sides)
    return found


def compare_runs(
    expected: Mapping[str, Any], actual: Mapping[str, Any], at: str, sides: Sides
) -> list[Finding]:
    found: list[Finding] = []
    run = int(at[at.index("[") + 1 : at.index("]")]) + 1 if "[" in at else 1
    if expected.get("status") != actual.get("status"):
        found.append(
            Finding.of(
                "status-differs",
                {
                    "run": run,
                    "expected_value": expected.get("status"),
                    "actual_value": actual.get("status"),
                    **sides.facts(),
                },
                path=f"{at}.status",
                expected_value=expected.get("status"),
                actual_value=actual.get("status"),
                sides=sides.pair,
            )
        )
    found += compare_executions(
        expected.get("tool_executions") or [], actual.get("tool_executions") or [], at, sides
    )
    found += compare_messages(
        expected.get("messages") or [], actual.get("messages") or [], at, sides
    )
    found += compare_failures(
        expected.get("failures") or [], actual.get("failures") or [], at, sides
    )
    handled = {"status", "tool_executions", "messages", "failures"}
    for key in [*expected, *(k for k in actual if k not in expected)]:
        if key in handled or expected.get(key) == actual.get(key):
            continue
        kind = "usage-differs" if key in USAGE_KEYS else "run-differs"
        diff = differences(expected.get(key), actual.get(key), f"{at}.{key}")
        first = diff[0] if diff else Difference(f"{at}.{key}", None, None)
        found.append(
            Finding.of(
                kind,
                {
                    "where": first.path,
                    "expected_value": _clip(first.expected, 80),
                    "actual_value": _clip(first.actual, 80),
                    "more": len(diff) - 1,
                    **sides.facts(),
                },
                path=f"{at}.{key}",
                expected_value=expected.get(key),
                actual_value=actual.get(key),
                sides=sides.pair,
            )
        )
    return found


def compare_failures(
    expected: Sequence[Mapping[str, Any]],
    actual: Sequence[Mapping[str, Any]],
    at: str,
    sides: Sides,
) -> list[Finding]:
    """A run's failure records (killpoint.values.normal_form) against the other side's: one
    finding that never sets the verdict when they differ. Where a fault or a kill landed
    decides whether a record was written; what the failure changed shows in the status,
    the messages and the effects, each compared on its own."""
    if list(expected) == list(actual):
        return []
    run = int(at[at.index("[") + 1 : at.index("]")]) + 1 if "[" in at else 1
    kinds = {
        "expected_kinds": [str(f.get("kind")) for f in expected],
        "actual_kinds": [str(f.get("kind")) for f in actual],
    }
    first = differences(list(expected), list(actual), f"{at}.failures")[0]
    where = {
        "where": first.path.removeprefix(f"{at}."),
        "expected_value": _clip(first.expected, 80),
        "actual_value": _clip(first.actual, 80),
    }
    return [
        Finding.of(
            "failures-differ",
            {"run": run, **kinds, **where, **sides.facts()},
            path=f"{at}.failures",
            expected_value=list(expected),
            actual_value=list(actual),
            sides=sides.pair,
        )
    ]


def _call_text(e: Mapping[str, Any]) -> str:
    args = e.get("arguments", "")
    with contextlib.suppress(TypeError, ValueError):
        args = json.dumps(json.loads(args), separators=(",", ":"), sort_keys=True)
    text = f"{e.get('name')}({args})"
    return text if len(text) <= 80 else text[:77] + "..."


def _identity(e: Mapping[str, Any]) -> tuple[Any, ...]:
    return (e.get("turn"), e.get("call_index"), e.get("name"), e.get("arguments"))


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
        calls = [_call_text(x) for x in missing]
        found.append(
            Finding.of(
                "tool-executions-lost",
                {"n": len(missing), "of": len(expected), "calls": calls, **sides.facts()},
                path=path,
                tool=_one_tool(missing),
                expected_value=calls,
                sides=sides.pair,
            )
        )
    if extra_ids:
        extra = _take(actual, extra_ids)
        calls = [_call_text(x) for x in extra]
        found.append(
            Finding.of(
                "tool-executions-extra",
                {"n": len(extra), "calls": calls, **sides.facts()},
                path=path,
                tool=_one_tool(extra),
                actual_value=calls,
                sides=sides.pair,
            )
        )
    if missing_ids or extra_ids:
        return found
    if [_identity(x) for x in expected] != [_identity(x) for x in actual]:
        found.append(
            Finding.of(
                "tool-executions-reordered",
                {"n": len(expected), **sides.facts()},
                path=path,
                expected_value=[_call_text(x) for x in expected],
                actual_value=[_call_text(x) for x in actual],
                sides=sides.pair,
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
                Finding.of(
                    "tool-executions-differ",
                    {
                        "call": _call_text(x),
                        "field": first.path.removeprefix(f"{path}[{m}]."),
                        "expected_value": _clip(first.expected, 80),
                        "actual_value": _clip(first.actual, 80),
                        **sides.facts(),
                    },
                    path=first.path,
                    tool=str(x.get("name")),
                    expected_value=first.expected,
                    actual_value=first.actual,
                    sides=sides.pair,
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
            Finding.of(
                "messages-differ",
                {
                    "at": n,
                    "actual_n": len(actual),
                    "expected_n": len(expected),
                    "expected_roles": e_roles[n : n + SHOWN],
                    "actual_roles": a_roles[n : n + SHOWN],
                    **sides.facts(),
                },
                path=f"{path}[{n}]",
                expected_value=e_roles,
                actual_value=a_roles,
                sides=sides.pair,
            )
        ]
    diff = differences(list(expected), list(actual), path)
    # A message's own usage (agno's per-message token metrics) is usage, not content.
    usage = [d for d in diff if any(f".{k}" in d.path for k in USAGE_KEYS)]
    content = [d for d in diff if d not in usage]
    found = []
    if usage:
        first = usage[0]
        found.append(
            Finding.of(
                "usage-differs",
                {
                    "where": first.path,
                    "expected_value": _clip(first.expected, 80),
                    "actual_value": _clip(first.actual, 80),
                    "more": len(usage) - 1,
                    **sides.facts(),
                },
                path=path_pattern(first.path),
                expected_value=first.expected,
                actual_value=first.actual,
                sides=sides.pair,
            )
        )
    if not content:
        return found
    first = content[0]
    return [
        Finding.of(
            "messages-differ",
            {
                "fields": len(content),
                "where": first.path,
                "expected_value": _clip(first.expected, 80),
                "actual_value": _clip(first.actual, 80),
                **sides.facts(),
            },
            path=first.path,
            expected_value=first.expected,
            actual_value=first.actual,
            sides=sides.pair,
        ),
        *found,
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
    left_out: Mapping[Signature, int] | None = None,
) -> list[Finding]:
    """Findings from the ledger. Every repeat is counted: within what `allowed` permits
    for that call (its effect had happened, its result was not durable at a crash) it is
    an expected `effect-repeated`, beyond it an `effect-duplicated`. Missing and foreign
    effects are findings only when the run was `judged` complete (a run lost as expected
    did not owe the rest of its effects). `left_out`: calls a checkpoint of their batch
    left out (killpoint.judge.left_out), with its number, said with their repeat."""
    evidence, left_out = evidence or {}, left_out or {}
    found: list[Finding] = []
    for sig, extra in counted.repeated:
        within = min(extra, allowed[sig])
        beyond = extra - within
        call = _sig_text(sig)
        lines = tuple(evidence.get(sig, ()))
        if beyond:
            found.append(
                Finding.of(
                    "effect-duplicated",
                    {"call": call, "extra": extra, "within": within}
                    | ({"left_out": left_out[sig]} if sig in left_out else {}),
                    path="ledger",
                    tool=sig[0],
                    actual_value=extra,
                    expected_value=within,
                    evidence=lines,
                    sides=("repeats allowed", "repeats in the ledger"),
                )
            )
        if within:
            found.append(
                Finding.of(
                    "effect-repeated",
                    {"call": call, "within": within},
                    path="ledger",
                    tool=sig[0],
                    actual_value=within,
                    evidence=lines,
                    expected=True,
                    sides=("repeats allowed", "repeats in the ledger"),
                )
            )
    if judged:
        for sig, fewer in counted.missing:
            found.append(
                Finding.of(
                    "effect-lost",
                    {"call": _sig_text(sig), "fewer": fewer},
                    path="ledger",
                    tool=sig[0],
                    expected_value=fewer,
                    sides=("effects the ledger lacks", "ledger"),
                )
            )
        for sig, n in counted.foreign:
            found.append(
                Finding.of(
                    "effect-foreign",
                    {"call": _sig_text(sig), "n": n},
                    path="ledger",
                    tool=sig[0],
                    actual_value=n,
                    evidence=tuple(evidence.get(sig, ())),
                    sides=("baseline ledger", "ledger"),
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
