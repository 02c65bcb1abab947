"""Causes: the cells of a campaign clustered by the findings that occur together, each named
by its most telling finding and said in one sentence from its evidence.

A finding group (killpoint.judge.groups) is a symptom: one kind at one path. One defect
shows as several (a forgotten cancel is `cancel-ignored`, `status-differs`, and the run's
content and messages differing, in the same cells), and the same cells of a row and of
other rows show them together. So:

1. Groups whose cells are nearly the same (Jaccard similarity of their cell sets at
   `TOGETHER` or more) are one cluster; so are groups of one kind that says how the run
   went wrong (not only what differs at the end) at nested paths (`runs[*]` and
   `runs[*].status`).
2. A cluster of symptoms only (a difference, a repeated effect) whose every cell is in a
   cluster that names a mechanism (a cancel forgotten, a stale write, two drivers, lost
   executions) is a consequence of those: its groups become details of each, for the cells
   they share. So is a cluster named by a kind `TELLING` ranks (executions or an effect
   lost) whose every cell also shows the head of a cause ranked above it (a run stored as
   over before its end: where that shows in many more cells than what it lost, the two
   never cluster by step 1): its groups become details of each such cause. Seen in any
   cell without one, it stays a cause of its own.
3. Each cluster is a cause, named by its most telling group (`TELLING`: the kind that says
   what happened before the kinds that say what differs, then the most cells), described
   in one sentence made from its cells' evidence (what the findings' facts and the store
   at the crash say), and ordered by impact: the cells it fails, its severity, the rows it
   touches.

A cause whose every failing group is accepted is accepted, with the telling group's reason
(a runtime's by-design behaviours: `--accept builtin`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from killpoint.judge.groups import Group, group_findings
from killpoint.values.findings import KINDS, NO_CRASH, RANK, SEVERITIES, SYMPTOMS, fails
from killpoint.values.sentences import count, listed, verb

TOGETHER = 0.75  # Jaccard similarity of two groups' cells that makes them one cluster

# Most telling first: what a worker or the runtime did wrong, then what was lost, then what
# differs. A kind not listed comes after these, before the symptoms.
TELLING = (
    "stale-write",
    "two-drivers",
    "lease-stamped-expired",
    "takeover-refused",
    "cancel-ignored",
    "cancel-late",
    "confirmation-dropped",
    "state-not-once",
    "ended-run-continued",
    "status-regressed",
    "terminal-early",
    "store-invariant",
    "checkpoint-count",
    "acknowledged-lost",
    "acknowledged-early",
    "acknowledged-unsynced",
    "durability-weaker",
    "run-lost",
    "effect-lost",
    "tool-executions-lost",
    "idempotency-key-changed",
    "effect-reissued",
    "effect-before-record",
    "outcome-unexpected",
    "mode-broken",
    "nondeterministic",
)
_SYMPTOM_ORDER = (
    "effect-duplicated",
    "stale-acknowledged",
    "status-differs",
    "tool-executions-extra",
    "tool-executions-differ",
    "runs-differ",
    "state-differs",
    "messages-differ",
    "effect-foreign",
    "run-differs",
    "tool-executions-reordered",
    "usage-overcounted",
    "usage-undercounted",
    "usage-differs",
)


def telling_rank(kind: str) -> int:
    if kind in TELLING:
        return TELLING.index(kind)
    if kind in _SYMPTOM_ORDER:
        return len(TELLING) + 1 + _SYMPTOM_ORDER.index(kind)
    return len(TELLING)


@dataclass
class Detail:
    """A symptom group as a detail of a cause: how many of the cause's cells show it."""

    group: Group
    cells: int


@dataclass
class Cause:
    """One cause across cells: its most telling group, the groups that come with it, and
    the cells that show any of them."""

    head: Group
    sentence: str
    details: list[Detail]
    cells: list[str]
    rows: list[str]
    verdicts: dict[str, int]  # the verdicts its cells have, most cells first
    failing_cells: int  # its cells that fail the campaign
    low_cells: int  # its cells unexpected at low severity only
    accepted_cells: int
    points: dict[str, int]  # the crash-point kinds it shows at, most cells first
    severity: str
    accepted: str | None = None  # the reason, when every failing group of it is accepted
    keys: list[str] = field(default_factory=list)  # every group key it holds

    @property
    def key(self) -> str:
        return self.head.key

    @property
    def name(self) -> str:
        return self.head.heading

    @property
    def failing(self) -> bool:
        return self.failing_cells > 0

    example_cell: str = ""  # its first cell that shows its telling group
    example: str = ""  # that finding's sentence
    replay: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "name": self.name,
            "kind": self.head.kind,
            "sentence": self.sentence,
            "severity": self.severity,
            "verdicts": dict(self.verdicts),
            "count": len(self.cells),
            "failing_cells": self.failing_cells,
            "low_cells": self.low_cells,
            "accepted_cells": self.accepted_cells,
            "rows": self.rows,
            "points": dict(self.points),
            "cells": self.cells,
            "groups": [{"key": d.group.key, "cells": d.cells} for d in self.details],
            "example": self.example,
            "example_cell": self.example_cell,
            "replay": self.replay,
            "accepted": self.accepted,
        }


class _Clusters:
    """Union-find over group keys."""

    def __init__(self, keys: Iterable[str]) -> None:
        self.parent = {k: k for k in keys}

    def find(self, key: str) -> str:
        while self.parent[key] != key:
            self.parent[key] = self.parent[self.parent[key]]
            key = self.parent[key]
        return key

    def join(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)

    def members(self) -> list[list[str]]:
        found: dict[str, list[str]] = {}
        for key in self.parent:
            found.setdefault(self.find(key), []).append(key)
        return list(found.values())


def _nested(a: str, b: str) -> bool:
    """One path inside the other (`runs[*]` and `runs[*].status`)."""
    return a == b or b.startswith(a + ".") or a.startswith(b + ".")


def cluster(groups: Sequence[Group]) -> list[list[Group]]:
    """Groups clustered by the cells they share (step 1 of the module's rule)."""
    by_key = {g.key: g for g in groups}
    sets = {g.key: set(g.cells) for g in groups}
    clusters = _Clusters(by_key)
    keys = list(by_key)
    for n, a in enumerate(keys):
        for b in keys[n + 1 :]:
            shared = len(sets[a] & sets[b])
            if shared and shared / len(sets[a] | sets[b]) >= TOGETHER:
                clusters.join(a, b)
            ga, gb = by_key[a], by_key[b]
            if (
                ga.kind == gb.kind
                and ga.kind not in SYMPTOMS
                and ga.tool == gb.tool
                and _nested(ga.pattern, gb.pattern)
            ):
                clusters.join(a, b)
    return [[by_key[k] for k in members] for members in clusters.members()]


def find_causes(cells: Iterable[Any], *, groups: Sequence[Group] | None = None) -> list[Cause]:
    """The causes of the cells' unexpected findings, most impact first. `cells`: CellResult
    (whole, with the store at the crash, for the sentences); `groups`: the cells' finding
    groups when already made (killpoint.judge.groups.group_findings of the same cells)."""
    cells = [c for c in cells if not c.expected]
    by_id = {c.id: c for c in cells}
    if groups is None:
        groups = group_findings(cells)
    groups = [g for g in groups if g.verdict != "ok" and not g.without_crash]
    clusters = cluster(groups)

    def within(g: Group, keep: set[str]) -> Group:
        return replace(g, cells=[c for c in g.cells if c in keep])

    # A mechanism's cause holds the cells that show the mechanism; its symptoms there are
    # its own, their cells elsewhere are strays (another cause's, or a cause of their own).
    # Most telling first: a cause is settled before any cluster it may hold as details.
    causes: list[tuple[list[Group], list[Group]]] = []
    strays: list[Group] = []
    named = [[g for g in m if g.kind not in SYMPTOMS] for m in clusters]
    for mechanism, members in sorted(
        ((n, m) for n, m in zip(named, clusters, strict=True) if n),
        key=lambda nm: _telling(_head(nm[0])),
    ):
        mine = {c for g in mechanism for c in g.cells if c in by_id}
        holders = _holders(mechanism, mine, causes)
        if holders:  # a consequence of what a more telling cause did, in each of its cells
            for _, details in holders:
                details += [within(g, mine) for g in mechanism]
            strays += [within(g, set(by_id)) for g in members if g.kind in SYMPTOMS]
            continue
        causes.append(([within(g, mine) for g in members], []))
        strays += [within(g, set(by_id) - mine) for g in members if g.kind in SYMPTOMS]
    mechanisms = list(causes)
    covered = {c for own, _ in mechanisms for g in own for c in g.cells}
    leftover = [g for g in strays if g.cells]
    for members in (m for m in clusters if all(g.kind in SYMPTOMS for g in m)):
        if {c for g in members for c in g.cells if c in by_id} <= covered:
            leftover += members  # a consequence only: a detail where it shows
        else:
            causes.append((list(members), []))
    symptoms = causes[len(mechanisms) :]

    def attach(g: Group, to: list[tuple[list[Group], list[Group]]]) -> set[str]:
        """`g` as a detail of each cause of `to` it shares cells with; those cells."""
        held: set[str] = set()
        for own, details in to:
            mine = {c for m in own for c in m.cells}
            if any(g is m for m in own) or not mine & set(g.cells):
                continue
            details.append(within(g, mine))
            held |= mine & set(g.cells)
        return held

    rest = []
    for g in _merged(leftover):  # a mechanism's detail first; else a symptom cause's
        outside = within(g, set(g.cells) - attach(g, mechanisms))
        outside = within(outside, set(outside.cells) - attach(outside, symptoms))
        if outside.cells:
            rest.append(outside)
    for members in cluster(rest):  # symptoms no cause holds: causes of their own
        causes.append((members, []))
    found = [_cause(own, details, by_id) for own, details in causes if own]
    return sorted((c for c in found if c.cells), key=impact)


def _telling(g: Group) -> tuple[int, int, str]:
    """How telling a group is, most first: its kind's rank (TELLING), then its cells."""
    return (telling_rank(g.kind), -len(g.cells), g.key)


def _head(groups: Sequence[Group]) -> Group:
    """The group that names a cause: its most telling."""
    return min(groups, key=_telling)


def _holders(
    mechanism: Sequence[Group],
    mine: set[str],
    causes: Sequence[tuple[list[Group], list[Group]]],
) -> list[tuple[list[Group], list[Group]]]:
    """The causes that hold a cluster naming a mechanism (its groups `mechanism`, its cells
    `mine`) as details: each whose head is more telling and shows in every cell of it (a run
    stored as over before its end, and the executions and effects it never made). Seen in
    one cell without it, the cluster is a cause of its own. Only a kind TELLING ranks is
    held: one outside it (missed, hung, unresumable, an error) says what could not be
    judged, which no finding beside it explains. Nor is an open cluster held by an accepted
    cause: it still fails its cells (docs/report.md, by design)."""
    head = _head(mechanism)
    if head.kind not in TELLING or not mine:
        return []
    accepted = all(g.accepted for g in mechanism)
    found = []
    for own, details in causes:
        top = _head([g for g in own if g.kind not in SYMPTOMS])
        if (
            telling_rank(top.kind) < telling_rank(head.kind)
            and mine <= set(top.cells)
            and (accepted or not top.accepted)
        ):
            found.append((own, details))
    return found


def _merged(groups: Sequence[Group]) -> list[Group]:
    """Restricted copies of one group (from several clusters) as one group again."""
    found: dict[str, Group] = {}
    for g in groups:
        kept = found.get(g.key)
        if kept is None:
            found[g.key] = replace(g, cells=list(g.cells))
        else:
            kept.cells += [c for c in g.cells if c not in kept.cells]
    return list(found.values())


def impact(cause: Cause) -> tuple[Any, ...]:
    """The order causes are shown in: the cells they fail, severity, rows touched."""
    return (
        -cause.failing_cells,
        SEVERITIES.index(cause.severity) if cause.severity in SEVERITIES else len(SEVERITIES),
        -len(cause.rows),
        -len(cause.cells),
        cause.key,
    )


def _cause(members: list[Group], consequences: list[Group], by_id: Mapping[str, Any]) -> Cause:
    members = [g for g in members if g.cells]
    head = _head(members)
    own = {c for g in members for c in g.cells if c in by_id}
    shown = [c for c in by_id if c in own]
    ordered = sorted(members, key=lambda g: (g is not head, telling_rank(g.kind), -len(g.cells)))
    details = [Detail(g, len(g.cells)) for g in ordered]
    details += [
        Detail(g, len(g.cells))
        for g in sorted(consequences, key=lambda g: (telling_rank(g.kind), -len(g.cells)))
        if g.cells
    ]
    cells = [by_id[c] for c in shown]
    keys = {g.key for g in members}
    verdicts = Counter(str(c.verdict) for c in cells)
    points = Counter(_point_kind(c) for c in cells)
    severity = min((g.severity for g in members if g.severity in SEVERITIES), key=SEVERITIES.index)
    # Its own findings in its cells: accepted when every one is (by design: --accept
    # builtin); a cell fails by this cause when one of them fails and is not accepted.
    mine = [
        (c, f)
        for c in cells
        for f in c.findings
        if isinstance(f, Mapping)
        and f.get("group") in keys
        and not f.get("expected")
        and f.get("verdict") != "ok"
    ]
    accepted = (
        next((str(f["accepted"]) for _, f in mine if f.get("group") == head.key), None)
        if mine and all(f.get("accepted") for _, f in mine)
        else None
    )
    failing = {
        c.id
        for c, f in mine
        if c.failing and not f.get("accepted") and fails(str(f.get("severity")))
    }
    example_cell, example = next(
        ((c, f) for c, f in mine if f.get("group") == head.key), (cells[0], {})
    )
    return Cause(
        head=head,
        sentence=explain(head, members, cells),
        details=details,
        cells=shown,
        rows=list(dict.fromkeys("/".join((c.runtime, c.scenario, c.mode, c.store)) for c in cells)),
        verdicts=dict(
            sorted(verdicts.items(), key=lambda kv: (-kv[1], RANK.get(kv[0], len(RANK))))
        ),
        failing_cells=len(failing),
        low_cells=sum(1 for c in cells if c.low),
        accepted_cells=sum(1 for c in cells if c.accepted),
        points=dict(points.most_common()),
        severity=severity,
        accepted=accepted,
        keys=[g.key for g in members] + [g.key for g in consequences],
        example_cell=example_cell.id,
        example=str(example.get("sentence", "")) or head.example,
        replay=str(getattr(example_cell, "replay", "")) or head.replay,
    )


WITHOUT_CRASH = "no crash"  # the point "kind" of a cell that carries a failed baseline


def _point_kind(cell: Any) -> str:
    found = list(cell.findings or ())
    if found and all((f.get("facts") or {}).get(NO_CRASH) for f in found):
        return WITHOUT_CRASH
    schedule = list(cell.schedule or [""])
    return str(schedule[0]).split(":", 1)[0]


# -- one sentence from the evidence --------------------------------------------------------------


def _where(points: Counter[str]) -> str:
    """Where a cause shows, by crash-point kind."""
    kinds = [k for k, _ in points.most_common() if k]
    if kinds == [WITHOUT_CRASH]:
        return ", each in a row's uninterrupted run, without a crash"
    kinds = [k for k in kinds if k != WITHOUT_CRASH]
    if not kinds:
        return ""
    if len(kinds) == 1:
        return f", all at {kinds[0]} points"
    if len(kinds) <= 3:
        return f", at {' and '.join([', '.join(kinds[:-1]), kinds[-1]])} points"
    return f", at {len(kinds)} kinds of crash point"


@dataclass(frozen=True)
class Evidence:
    """What a cause's sentence is made from: its cells, the crash-point kinds they are at,
    and the keys of its own groups."""

    cells: Sequence[Any]
    points: Counter[str]
    keys: frozenset[str]

    def findings(self, kind: str) -> list[tuple[Any, Mapping[str, Any]]]:
        return _findings(self.cells, kind, self.keys)


def _findings(
    cells: Iterable[Any], kind: str, keys: frozenset[str] = frozenset()
) -> list[tuple[Any, Mapping[str, Any]]]:
    """The cells' unexpected findings of `kind` (in the groups `keys`, when given)."""
    return [
        (c, f)
        for c in cells
        for f in c.findings
        if isinstance(f, Mapping)
        and f.get("kind") == kind
        and not f.get("expected")
        and (not keys or f.get("group") in keys)
    ]


def _held_at_crash(cell: Any) -> int | None:
    """Tool executions the store held at the crash (the engine's summary of it)."""
    store = getattr(cell, "store_at_crash", None)
    if not isinstance(store, Mapping) or not isinstance(store.get("runs"), list):
        return None
    return sum(int(r.get("tool_executions") or 0) for r in store["runs"] if isinstance(r, Mapping))


def _executions_lost(e: Evidence) -> str:
    points = e.points
    found = e.findings("tool-executions-lost")
    n = len({c.id for c, _ in found})
    exact = {
        c.id
        for c, f in found
        if (f.get("facts") or {}).get("n") is not None
        and (f.get("facts") or {}).get("n") == _held_at_crash(c)
        and _held_at_crash(c)
    }
    if exact and len(exact) * 4 >= n * 3:
        return (
            "A resumed run keeps only the tool executions it ran itself: in "
            f"{len(exact)} of {count(n, 'cell')} the executions missing at the end are "
            f"exactly those the store held at the crash{_where(points)}"
        )
    return f"Tool executions of the baseline are missing from the store in {count(n, 'cell')}{_where(points)}"


def _cancel_ignored(e: Evidence) -> str:
    points = e.points
    found = e.findings("cancel-ignored")
    ended = Counter(s for _, f in found for s in (f.get("facts") or {}).get("ended") or [])
    n = len({c.id for c, _ in found})
    how = f" and ended {listed(s for s, _ in ended.most_common())}" if ended else ""
    return (
        "A cancel requested before the crash does not survive it: in "
        f"{count(n, 'cell')} the resumed run asked for model turns past the cancel{how}"
        f"{_where(points)}"
    )


def _stale_write(e: Evidence) -> str:
    points = e.points
    found = e.findings("stale-write")
    fields = Counter(
        str((f.get("facts") or {}).get("field") or f.get("path") or "the store") for _, f in found
    )
    n = len({c.id for c, _ in found})
    where = listed((_pattern(k) for k, _ in fields.most_common()), 3)
    return (
        "A worker paused and woken after another took its run over still writes: in "
        f"{count(n, 'cell')} the stale worker changed {where}{_where(points)}"
    )


def _two_drivers(e: Evidence) -> str:
    cells, points = e.cells, e.points
    n = len({c.id for c, _ in e.findings("two-drivers")})
    repeats = sum(int(getattr(c, "duplicates", 0) or 0) for c in cells)
    effects = f", and side effects ran again ({count(repeats, 'repeat')})" if repeats else ""
    return (
        f"Two workers drive one run: in {count(n, 'cell')} both resumers ran tools and asked "
        f"the model{effects}{_where(points)}"
    )


def _usage(e: Evidence) -> str:
    cells = e.cells
    found = e.findings("usage-differs")
    n = len({c.id for c, _ in found})
    more = less = 0
    for _, f in found:
        facts = f.get("facts") or {}
        a, b = facts.get("expected_value"), facts.get("actual_value")
        if isinstance(a, int | float) and isinstance(b, int | float):
            more += b > a
            less += b < a
    paths = listed(dict.fromkeys(_pattern(str(f.get("path") or "")) for _, f in found), 2)
    only = sum(1 for c in cells if getattr(c, "low", False))
    alone = f"; in {count(only, 'cell')} nothing else differs" if only else ""
    if more and not less:
        return (
            f"The resumed run counts more tokens than the baseline in {count(n, 'cell')} "
            f"({paths}), a token count only{alone}"
        )
    return f"Usage differs from the baseline's in {count(n, 'cell')} ({paths}){alone}"


def _acknowledged(e: Evidence) -> str:
    points = e.points
    found = e.findings("acknowledged-lost")
    n = len({c.id for c, _ in found})
    gone = sum(1 for _, f in found if (f.get("facts") or {}).get("stored") is None)
    said = (
        "the run is not in the store at all"
        if gone == len(found)
        else "the store holds another status"
        if not gone
        else f"the store holds another status, or ({gone}) no run"
    )
    return (
        f"The runtime returns a status it did not store: in {count(n, 'cell')} a worker "
        f"returned a status and {said}{_where(points)}"
    )


def _terminal_early(e: Evidence) -> str:
    found = e.findings("terminal-early")
    n = len({c.id for c, _ in found})
    statuses = Counter(str(f.get("actual_value") or "") for _, f in found)
    held = " or ".join(s for s, _ in statuses.most_common() if s)
    return (
        f"A run is stored as over before its end: in {count(n, 'cell')} the store already "
        f"held it {held or 'terminal'} at the crash, where the uninterrupted run still went "
        f"on to ask the model, so nothing resumed it{_where(e.points)}"
    )


EXPLAIN = {
    "tool-executions-lost": _executions_lost,
    "cancel-ignored": _cancel_ignored,
    "stale-write": _stale_write,
    "two-drivers": _two_drivers,
    "usage-differs": _usage,
    "acknowledged-lost": _acknowledged,
    "terminal-early": _terminal_early,
}


def _pattern(path: str) -> str:
    from killpoint.values.findings import path_pattern

    return path_pattern(path) or "the store"


def explain(head: Group, members: Sequence[Group], cells: Sequence[Any]) -> str:
    """The cause in one plain sentence, from its cells' evidence."""
    points = Counter(_point_kind(c) for c in cells)
    made = EXPLAIN.get(head.kind)
    if made is not None:
        return made(Evidence(cells, points, frozenset(g.key for g in members)))
    meaning = KINDS[head.kind].meaning if head.kind in KINDS else head.kind
    # A member of the head's own kind is named by its tool ("effect-duplicated (send_sms)"):
    # by its kind alone it would read as the head beside itself.
    others = [
        f"{g.kind} ({g.tool})" if g.kind == head.kind and g.tool else g.kind
        for g in members
        if g is not head
    ]
    with_ = f", with {listed(dict.fromkeys(others), 3)} in the same cells" if others else ""
    if any(mark in meaning for mark in (": ", "; ", "(")):
        # A meaning that runs on past its first clause would carry "in N cells" off to
        # its last ("... not the runtime's in 1 cell"): the cells come first.
        return f"In {count(len(cells), 'cell')}{with_}{_where(points)}: {meaning}"
    return (
        f"{meaning[0].upper()}{meaning[1:]} in {count(len(cells), 'cell')}{with_}{_where(points)}"
    )


def summary(causes: Sequence[Cause]) -> str:
    """ "3 causes" with how many fail the campaign."""
    failing = sum(1 for c in causes if c.failing and not c.accepted)
    return f"{count(len(causes), 'cause')}, {failing} {verb(failing, 'fails', 'fail')} the campaign"


__all__ = [
    "TELLING",
    "TOGETHER",
    "Cause",
    "Detail",
    "cluster",
    "explain",
    "find_causes",
    "impact",
    "summary",
]
