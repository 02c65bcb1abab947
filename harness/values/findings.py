"""Findings and verdicts: what a cell found, each problem named, and the one rule that turns
them into the cell's verdict.

A finding is one problem (or one counted fact) with a kind, a severity, where it is (a
path in the session, or a tool call), the evidence, and one plain sentence. A cell
collects every finding it meets; it never stops at the first difference. The verdict is
derived here, once: the most severe verdict among the findings (see VERDICTS, in order),
`ok` when there is none. A cell is unexpected when one of its findings is.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from killpoint.errors import UnknownFinding
from killpoint.values.sentences import say


@dataclass(frozen=True)
class Verdict:
    name: str
    glyph: str
    meaning: str


# Most severe first: a cell's verdict is the first of these that one of its findings names.
VERDICTS: tuple[Verdict, ...] = (
    Verdict("corrupt", "✗", "the store broke an invariant, or a stale worker wrote after a takeover"),
    Verdict("lost", "∅", "the run is gone after the crash, or what the runtime acknowledged is not in the store"),
    Verdict("duplicated", "×", "side effects repeated beyond the bound, or two workers drove one run"),
    Verdict("diverged", "≠", "the resumed run ends differently, or an effect is missing or new"),
    Verdict("unresumable", "⊘", "continuing refused or raised on a state it should resume"),
    Verdict("hung", "…", "a worker passed its time limit"),
    Verdict("run-failed", "↯", "the run failed with no crash in it (it raised in the runtime or in the adapter's run code): no cell of its row could be judged; the detail names the line that raised"),
    Verdict("missed", "?", "the engine could not reach the crash point (a harness defect)"),
    Verdict("adapter-error", "⚑", "the runtime's adapter raised or answered outside its Protocol while killpoint read the store through it: the adapter's defect; nothing is said of the runtime"),
    Verdict("error", "!", "killpoint or one of its own dependencies failed on this cell; nothing is said of the runtime"),
    Verdict("unavailable", "⌁", "killpoint's store server or work folder failed during the cell (unreachable, restarted, full): nothing is said of the runtime; rerun it"),
    Verdict("ok", "✓", "nothing beyond what the mode allows"),
)  # fmt: skip
BY_NAME: dict[str, Verdict] = {v.name: v for v in VERDICTS}
RANK: dict[str, int] = {v.name: n for n, v in enumerate(VERDICTS)}

SEVERITIES = ("high", "medium", "low", "info")


@dataclass(frozen=True)
class FindingKind:
    name: str
    verdict: str  # the verdict this kind implies ("ok": it never changes the verdict)
    severity: str
    meaning: str  # one line, for legends and group explanations


_KINDS: tuple[FindingKind, ...] = (
    # what the store holds after the crash
    FindingKind("store-invariant", "corrupt", "high", "the store broke one of the runtime's invariants"),
    FindingKind("checkpoint-count", "corrupt", "high", "at the crash point the store held other checkpoints than the baseline did there"),
    FindingKind("stale-write", "corrupt", "high", "a worker that had lost the run wrote to the store after the takeover"),
    FindingKind("status-regressed", "corrupt", "high", "a terminal status in the store was written back to another status"),
    FindingKind("terminal-early", "corrupt", "high", "at a crash point the store already held a run COMPLETED or CANCELLED where the uninterrupted run of it still had model turns to ask and checkpoints to write: the run was stored as over before its end, and nothing resumes it"),
    FindingKind("inconsistency", "ok", "low", "a field of the store disagrees with the rest, without changing what a resume does"),
    # losses
    FindingKind("run-lost", "lost", "high", "a run is not in the store after the crash"),
    FindingKind("acknowledged-lost", "lost", "high", "the runtime returned a status that the store does not hold"),
    FindingKind("acknowledged-early", "lost", "high", "the runtime returned a status before the commit that holds it had landed (the run's history)"),
    FindingKind("acknowledged-unsynced", "lost", "medium", "the runtime returned a status before the commit that holds it was synced: a power cut then loses what the caller was told (the run's history, on the power-loss filesystem)"),
    FindingKind("durability-weaker", "lost", "medium", "the store's durability settings, read back from the runtime's own connection, let a power cut lose commits the mode promises are durable"),
    FindingKind("stale-acknowledged", "duplicated", "high", "a worker that had lost the run to a takeover went on to return a status for it that the store does not hold (the store holds the takeover's): the run is there, the stale worker's answer is not"),
    FindingKind("checkpoints-lost", "ok", "medium", "a power cut took back checkpoints that had landed (committed, not synced); what they held may run again"),
    # side effects (the ledger)
    FindingKind("effect-duplicated", "duplicated", "high", "a tool's side effect happened more often than the baseline's, beyond the bound"),
    FindingKind("effect-repeated", "ok", "info", "a call whose effect was done and whose result was not durable at a crash ran again, as the bound allows"),
    FindingKind("turn-reanswered", "ok", "info", "the model answered a turn again otherwise because the crash took its first answer before any of it was durable: the run from there is another run, its differences from the baseline allowed"),
    FindingKind("two-drivers", "duplicated", "high", "two workers drove the same run"),
    FindingKind("idempotency-key-changed", "duplicated", "high", "a tool that takes an idempotency key ran the same call again under a new key"),
    FindingKind("effect-reissued", "duplicated", "high", "the resumed model re-issued a call whose effect had happened (a new call id, another order, another spelling or wording) and the runtime ran it again"),
    FindingKind("effect-lost", "diverged", "high", "a side effect of the baseline never happened"),
    FindingKind("effect-foreign", "diverged", "high", "a side effect happened that the baseline never had"),
    # the session against the baseline
    FindingKind("runs-differ", "diverged", "high", "the session holds other runs than the baseline's"),
    FindingKind("status-differs", "diverged", "high", "a run ends with another status than in the baseline"),
    FindingKind("tool-executions-lost", "diverged", "high", "tool executions of the baseline are missing from the store"),
    FindingKind("tool-executions-extra", "diverged", "high", "the store holds tool executions the baseline does not"),
    FindingKind("tool-executions-reordered", "diverged", "low", "the same tool executions, in another order"),
    FindingKind("tool-executions-differ", "diverged", "high", "a tool execution differs in a field (result, status...)"),
    FindingKind("messages-differ", "diverged", "high", "the run's messages differ from the baseline's"),
    FindingKind("state-differs", "diverged", "high", "the session state differs from the baseline's"),
    FindingKind("usage-differs", "diverged", "low", "usage or metrics differ from the baseline's"),
    FindingKind("run-differs", "diverged", "high", "another field of the run differs from the baseline's"),
    FindingKind("failures-differ", "ok", "info", "the run's history keeps other records of failed or aborted attempts than the baseline's (a fault the cell injected, a kill before a record landed); the conversation is judged without them"),
    # the contract (whatever the baseline did)
    FindingKind("cancel-late", "diverged", "high", "the run ended CANCELLED, but only after model turns past the first step boundary after the cancel"),
    FindingKind("cancel-ignored", "diverged", "high", "a cancel was requested, yet the run went on past the next step boundary and did not end CANCELLED"),
    FindingKind("state-not-once", "diverged", "high", "the session state disagrees with the tool calls the store's runs hold: an update applied twice or not at all, or calls the runs no longer hold"),
    FindingKind("confirmation-dropped", "diverged", "high", "a confirmation given to continue the run was neither applied nor refused"),
    FindingKind("usage-overcounted", "diverged", "low", "the runs count more model calls than the model served"),
    FindingKind("usage-undercounted", "diverged", "low", "a run counts fewer model calls than the replies it consumed, across every continue"),
    FindingKind("effect-before-record", "diverged", "high", "a tool's effect began before the reply that asked for it was durable, in a mode that promises to replay that reply (the run's history)"),
    FindingKind("lease-stamped-expired", "duplicated", "high", "a lease was stamped already expired by the true clock: any other worker may take the run while its owner drives it (the run's history)"),
    FindingKind("ended-run-continued", "diverged", "high", "continuing a run that had ended changed the store or ran effects or model turns"),
    # the run itself
    FindingKind("nondeterministic", "diverged", "high", "two uninterrupted runs of the scenario differ: no cell of the row can be judged"),
    FindingKind("outcome-unexpected", "diverged", "high", "a run ended otherwise than its scenario says (status, final answer, or the tool calls made)"),
    # a cassette (a recorded agent)
    FindingKind("history-unrecorded", "diverged", "high", "the resumed run asked the model what the recorded, uninterrupted run never did: its history departs from every recorded one"),
    FindingKind("cassette-stale", "diverged", "high", "the uninterrupted run asked the model what its cassette never recorded (the agent changed since, or is not deterministic): no cell of the row can be judged; record it again"),
    FindingKind("mode-broken", "diverged", "high", "the uninterrupted run did not persist as its checkpoint mode declares: no cell of the row can be judged against the declaration"),
    FindingKind("unresumable", "unresumable", "high", "continuing the run failed"),
    FindingKind("takeover-refused", "unresumable", "medium", "two workers drove one run (no run ownership): the woken worker's write landed while the takeover held before its first, and the store refused the takeover's (the later writer), so it keeps one history and the takeover failed"),
    FindingKind("hung", "hung", "high", "a worker passed its time limit"),
    FindingKind("store-locked", "hung", "medium", "a worker passed its time limit, or a read found the store locked, while a paused worker held the store's SQLite lock: one frozen process stops every writer"),
    FindingKind("run-failed", "run-failed", "high", "the run raised, in the runtime or in its adapter's run code once the run began (their defect, not killpoint's; the row could not be judged)"),
    FindingKind("missed", "missed", "high", "the engine could not reach the crash point"),
    FindingKind("adapter-error", "adapter-error", "high", "an adapter method killpoint called raised, or returned what its Protocol does not allow (an invalid normal form): the adapter's defect, not the runtime's"),
    FindingKind("error", "error", "high", "killpoint or one of its own dependencies failed on this cell"),
    FindingKind("disk-full", "unavailable", "info", "the work folder ran out of space (ENOSPC) during the cell; what the cell saw is evidence, not a verdict on the runtime"),
    FindingKind("store-unavailable", "unavailable", "info", "the store server went away or restarted during the cell; what the cell saw is evidence, not a verdict on the runtime"),
    FindingKind("resource-exhausted", "unavailable", "info", "killpoint could not get a thread, a process or memory for the cell (a ulimit, a full machine); nothing is said of the runtime"),
    FindingKind("store-not-durable", "ok", "info", "the store server is configured to keep less than the mode promises (fsync or synchronous_commit off): a setting of the server, not the runtime's"),
)  # fmt: skip
KINDS: dict[str, FindingKind] = {k.name: k for k in _KINDS}


@dataclass(frozen=True)
class Harm:
    name: str
    severity: str
    what: str


# The one severity table: a kind's severity is its harm's (tests/harness/values hold every
# kind to it, and docs/reference/findings.md states it). By what a user loses, not by where it was found.
HARMS: tuple[Harm, ...] = (
    Harm("lost", "high", "what was durable (a run, its tool executions, an effect) is lost"),
    Harm("acknowledged", "high", "a status the runtime acknowledged is not stored"),
    Harm("repeated", "high", "effects repeated beyond the bound, or two workers drove one run"),
    Harm("stale-write", "high", "a worker that lost the run wrote after the takeover"),
    Harm("store", "high", "the store broke an invariant, held a terminal status before the run's end, or took one back"),
    Harm("content", "high", "what the run holds differs: content, messages, tool results, status, state, effects"),
    Harm("contract", "high", "a promise broken whatever the baseline did: cancel, confirmation, state once, ended runs, the mode, the scenario's expected outcome, the order of a run's history"),
    Harm("unjudged", "high", "the cell could not be judged: hung, missed, unresumable, a run that failed without a crash, an adapter's or killpoint's error, a row that is not deterministic"),
    Harm("refused", "medium", "two workers drove one run and the store kept one history by refusing the later writer: the takeover failed, nothing was torn"),
    Harm("stalled", "medium", "a run stalled behind a lock a paused process held; nothing durable is lost while it waits"),
    Harm("unsynced", "medium", "a power cut took back, or could take back, what had landed but was not synced"),
    Harm("order", "low", "the same tool executions, in another order"),
    Harm("usage", "low", "usage and metrics (tokens, model-call counts)"),
    Harm("bookkeeping", "low", "a field disagrees with the rest without changing what a resume does"),
    Harm("allowed", "info", "a repeat the bound allows, or a turn asked again whose first answer was never durable"),
    Harm("history", "info", "records of failed or aborted attempts a runtime keeps beside the conversation: shown, never the verdict"),
    Harm("outage", "info", "killpoint's own store, disk or resources failed, or the store server keeps less than the mode promises: evidence, not a verdict"),
)  # fmt: skip
HARM_OF: dict[str, str] = {
    "run-lost": "lost", "tool-executions-lost": "lost", "effect-lost": "lost",
    "acknowledged-lost": "acknowledged", "acknowledged-early": "acknowledged", "stale-acknowledged": "acknowledged",
    "effect-duplicated": "repeated", "two-drivers": "repeated", "idempotency-key-changed": "repeated",
    "effect-reissued": "repeated",
    "stale-write": "stale-write",
    "store-invariant": "store", "checkpoint-count": "store", "status-regressed": "store",
    "terminal-early": "store",
    "messages-differ": "content", "run-differs": "content", "tool-executions-differ": "content",
    "tool-executions-extra": "content", "status-differs": "content", "runs-differ": "content",
    "state-differs": "content", "effect-foreign": "content",
    "cancel-ignored": "contract", "cancel-late": "contract", "state-not-once": "contract",
    "confirmation-dropped": "contract", "ended-run-continued": "contract", "mode-broken": "contract",
    "outcome-unexpected": "contract", "effect-before-record": "contract",
    "lease-stamped-expired": "contract",
    "unresumable": "unjudged", "hung": "unjudged", "missed": "unjudged", "run-failed": "unjudged", "adapter-error": "unjudged", "error": "unjudged",
    "nondeterministic": "unjudged", "cassette-stale": "unjudged",
    "history-unrecorded": "content",
    "store-locked": "stalled",
    "takeover-refused": "refused",
    "checkpoints-lost": "unsynced", "acknowledged-unsynced": "unsynced", "durability-weaker": "unsynced",
    "tool-executions-reordered": "order",
    "usage-differs": "usage", "usage-overcounted": "usage", "usage-undercounted": "usage",
    "inconsistency": "bookkeeping",
    "effect-repeated": "allowed", "turn-reanswered": "allowed",
    "failures-differ": "history",
    "disk-full": "outage", "store-unavailable": "outage", "resource-exhausted": "outage",
    "store-not-durable": "outage",
}  # fmt: skip
# Kinds grouped per tool: the tool is what the finding is about.
BY_TOOL = frozenset(
    {
        "effect-duplicated",
        "effect-repeated",
        "effect-lost",
        "effect-foreign",
        "idempotency-key-changed",
        "effect-reissued",
        "confirmation-dropped",
    }
)


# Kinds that say what differs at the end, or an effect counted, rather than how the run went
# wrong: in a cell, the consequences of the kind beside them that does say it (a cancel
# forgotten shows as the status, the content and the messages differing). An accepted
# finding of another kind explains them in its cell; causes fold them into their mechanism.
SYMPTOMS = frozenset(
    {
        "status-differs",
        "run-differs",
        "runs-differ",
        "messages-differ",
        "state-differs",
        "usage-differs",
        "usage-overcounted",
        "usage-undercounted",
        "tool-executions-extra",
        "tool-executions-reordered",
        "tool-executions-differ",
        "effect-duplicated",
        "effect-foreign",
        "stale-acknowledged",
    }
)


# A fact of a finding the uninterrupted run made, carried into a report by the one cell of
# a row that could not be planned (its baseline failed): that cell made no crash, and no
# crash point may be named as where its finding shows.
NO_CRASH = "no_crash"


@dataclass(frozen=True)
class Finding:
    """One problem a cell found (or, for `effect-repeated`, one allowed repeat counted)."""

    kind: str
    sentence: str  # one line in plain words
    path: str = ""  # where: "runs[0].tool_executions", "ledger", "store"...
    tool: str | None = None
    expected_value: Any = None  # what the expected side held
    actual_value: Any = None  # what the cell's side held
    evidence: tuple[str, ...] = ()  # ledger lines, store rows
    expected: bool = False  # allowed here (an expected loss, a repeat within the bound)
    # What `expected_value` and `actual_value` are, in words ("baseline", "store after the
    # takeover", "the cancel's turn"); None: the cell's two sides.
    sides: tuple[str, str] | None = None
    facts: Mapping[str, Any] | None = None  # what the sentence was made from (sentences.say)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise UnknownFinding(f"killpoint: unknown finding kind {self.kind!r}")

    @classmethod
    def of(cls, kind: str, facts: Mapping[str, Any], **fields: Any) -> Finding:
        """A finding whose sentence is its kind's template filled with `facts`."""
        return cls(kind, say(kind, facts), facts=dict(facts), **fields)

    @property
    def verdict(self) -> str:
        return KINDS[self.kind].verdict

    @property
    def severity(self) -> str:
        return KINDS[self.kind].severity

    @property
    def group_key(self) -> str:
        """The cause, across cells: kind, tool, and the path with its numbers made `*`.
        The tool only where it is the cause's subject (an effect, a key, a confirmation):
        a store that drops the executions of a continued run drops whichever tools ran."""
        tool = self.tool if self.kind in BY_TOOL else None
        return f"{self.kind}:{tool or '-'}:{path_pattern(self.path) or '-'}"

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "severity": self.severity,
            "verdict": self.verdict,
            "expected": self.expected,
            "sentence": self.sentence,
            "path": self.path,
            "tool": self.tool,
            "expected_value": _clip(self.expected_value),
            "actual_value": _clip(self.actual_value),
            "evidence": list(self.evidence),
            "group": self.group_key,
            "sides": list(self.sides) if self.sides else None,
            "facts": {k: _clip(v) for k, v in self.facts.items()} if self.facts else None,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Finding:
        return cls(
            kind=str(data["kind"]),
            sentence=str(data.get("sentence", "")),
            path=str(data.get("path", "")),
            tool=data.get("tool"),
            expected_value=data.get("expected_value"),
            actual_value=data.get("actual_value"),
            evidence=tuple(data.get("evidence") or ()),
            expected=bool(data.get("expected", False)),
            sides=_pair(data.get("sides")),
            facts=data.get("facts") if isinstance(data.get("facts"), Mapping) else None,
        )


def _pair(value: Any) -> tuple[str, str] | None:
    if isinstance(value, list | tuple) and len(value) == 2:
        return str(value[0]), str(value[1])
    return None


_NUMBER = re.compile(r"\[\d+\]|\[\'[^\]]*\'\]")


def path_pattern(path: str) -> str:
    """`runs[1].tool_executions[3].name` -> `runs[*].tool_executions[*].name`."""
    return _NUMBER.sub("[*]", path)


def _clip(value: Any, limit: int = 2000) -> Any:
    if isinstance(value, str) and len(value) > limit:
        return value[:limit] + f"… ({len(value)} chars)"
    if isinstance(value, (dict, list)):
        text = repr(value)
        return value if len(text) <= limit else text[:limit] + f"… ({len(text)} chars)"
    return value


def deciding(findings: Iterable[Finding]) -> Finding | None:
    """The finding that decides the cell: the most severe unexpected one that names a
    verdict; only when there is none, the most severe allowed one. An allowed finding (an
    expected loss, a repeat within the bound) never outranks one the mode does not allow:
    a cell where a loss is allowed and a cancel was ignored is about the cancel."""
    named = [f for f in findings if f.verdict != "ok"]
    open_ = [f for f in named if not f.expected]
    pool = open_ or named
    if not pool:
        return None
    return min(enumerate(pool), key=lambda nf: (RANK[nf[1].verdict], nf[0]))[1]


def deciding_data(findings: Iterable[Any]) -> Mapping[str, Any] | None:
    """`deciding`, on findings as a report's JSON holds them (Finding.to_json())."""
    named = [f for f in findings if isinstance(f, Mapping) and f.get("verdict") not in (None, "ok")]
    pool = [f for f in named if not f.get("expected")] or named
    if not pool:
        return None
    last = len(RANK)
    return min(enumerate(pool), key=lambda nf: (RANK.get(str(nf[1]["verdict"]), last), nf[0]))[1]


def open_severity(findings: Iterable[Any]) -> str | None:
    """The most severe severity among the findings (as a report's JSON holds them) that
    name a verdict and are not allowed here: what decides whether an unexpected cell fails
    a campaign (a cell whose only such findings are low, a token count, does not, unless
    `--fail-on low`). None: there is none."""
    found = [
        str(f.get("severity"))
        for f in findings
        if isinstance(f, Mapping) and f.get("verdict") not in (None, "ok") and not f.get("expected")
    ]
    known = [s for s in found if s in SEVERITIES]
    if not known:
        return "high" if found else None  # a severity this version does not know: the worst
    return min(known, key=SEVERITIES.index)


def fails(severity: str | None) -> bool:
    """Whether findings of this severity fail a campaign held to the default threshold
    (medium and above; `--fail-on low` lowers it)."""
    return severity is None or severity in ("high", "medium")


def verdict_of(findings: Iterable[Finding]) -> tuple[str, bool]:
    """The one rule: (verdict, expected). The verdict is the one the deciding finding
    names (`ok` without any): the most severe unexpected finding's, or, when every
    finding is allowed here, the most severe allowed one's; the cell is expected when no
    finding that names a verdict is unexpected (a low-severity inconsistency is shown and
    counted, and changes neither)."""
    found = deciding(list(findings))
    if found is None:
        return "ok", True
    return found.verdict, found.expected


def ranked(findings: Iterable[Finding]) -> list[Finding]:
    """Most severe first: by the verdict each names, then severity; allowed ones last."""
    return sorted(
        findings, key=lambda f: (f.expected, RANK[f.verdict], SEVERITIES.index(f.severity))
    )


def headline(findings: Sequence[Finding], verdict: str = "") -> str:
    """One line for the cell: the deciding finding's sentence (`verdict` is accepted for
    callers that pass it; the deciding finding names the verdict itself)."""
    found = deciding(findings)
    return found.sentence if found is not None else ""


__all__ = [
    "BY_NAME",
    "HARMS",
    "HARM_OF",
    "KINDS",
    "NO_CRASH",
    "RANK",
    "SYMPTOMS",
    "VERDICTS",
    "Finding",
    "FindingKind",
    "Harm",
    "Verdict",
    "deciding",
    "deciding_data",
    "fails",
    "headline",
    "open_severity",
    "path_pattern",
    "ranked",
    "verdict_of",
]
