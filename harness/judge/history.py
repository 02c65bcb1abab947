"""Rules over a run's history (scenarios.history): properties that hold on every run, crashed
or not, each broken one shown by the two or three events that break it (its witness).

A kill shows an order-of-events defect only when it lands in the defect's window; these
rules see the order itself, on every run the matrix makes, the baseline's included (what a
baseline breaks is its row's finding, "happens without a crash"):

- an effect never begins before the durable record of the reply that asked for it, in a
  mode that promises to replay that reply after a crash (`effect-before-record`);
- nothing is returned to the caller before the commit that holds it has landed
  (`acknowledged-early`) and, where the store is on the power-loss filesystem, has been
  synced (`acknowledged-unsynced`), in a mode that promises durability;
- a lease is never stamped already expired by the true clock (`lease-stamped-expired`);
  one stamped by a worker whose clock a clock-skew point set off is that fault's doing,
  shown and allowed;
- a run's model calls are what its turns consumed across every start and continue: in an
  uninterrupted run, the replies the model served it; after a crash, at least the replies
  the run holds (`usage-undercounted`; the other side, `usage-overcounted`, is
  killpoint.judge.contract.model_calls).

Each rule reads only what the history holds: a runtime whose adapter reports no facts of
a kind (no statuses with its commits, no leases, no store files on the filesystem) is not
judged on the rules that need them.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

from killpoint.scenarios.history import Event
from killpoint.values.findings import Finding

SYNCS = ("fsync", "fdatasync")
# A store file that holds no durable data: SQLite's shared-memory index of the WAL.
NOT_DATA = ("-shm",)


def _call(tool: Any, arguments: Any) -> tuple[str, str]:
    return str(tool), str(arguments)


def _calls(event: Event) -> set[tuple[str, str]]:
    return {_call(*c) for c in event.get("calls") or () if len(c) == 2}


def effects_before_records(events: Sequence[Event]) -> list[Finding]:
    """Each reply whose first effect began before any durable write of the reply (its
    journal record, or a checkpoint holding it) had committed, in the worker it was served
    to. A reply no worker was served (one a resumed run took from its store) needs none.
    Where no commit in the history says which calls it holds (an adapter that reports its
    writes but not their content), no commit can be shown to hold a reply, nor not to:
    nothing is judged."""
    if not any(x.event == "committed" and "calls" in x.data for x in events):
        return []
    found: list[Finding] = []
    told: set[int] = set()  # replies already reported
    for e in events:
        if e.event != "effect" or not e.get("effect", True):
            continue
        call = _call(e.get("tool"), e.get("arguments"))
        asked = partial(_asks, call=call)
        reply = _last(events, e.n, e.pid, asked)
        if reply is None or reply.n in told:
            continue
        kept = partial(_records, call=call)
        if _between(events, reply.n, e.n, e.pid, kept):
            continue
        told.add(reply.n)
        late = _first(events, e.n, e.pid, kept)
        found.append(
            Finding.of(
                "effect-before-record",
                {
                    "call": f"{call[0]}({call[1]})",
                    "turn": reply.get("turn"),
                    "reply": reply.n,
                    "effect": e.n,
                    "committed": late.n if late is not None else None,
                },
                path="history",
                expected_value="the reply's record committed before its effects",
                # The reply, whichever of its calls had its effect first: a resumed run that
                # asks it again and breaks the rule again adds nothing to its row's finding.
                actual_value=sorted(f"{t}({a})" for t, a in _calls(reply)),
                evidence=tuple(x.describe() for x in (reply, e, late) if x is not None),
                sides=("the order the mode promises", "the order in the history"),
            )
        )
    return found


def _asks(event: Event, call: tuple[str, str]) -> bool:
    return event.event == "model-reply" and call in _calls(event)


def _records(event: Event, call: tuple[str, str]) -> bool:
    return event.event == "committed" and call in _calls(event)


def acknowledgements(events: Sequence[Event]) -> list[Finding]:
    """Each status returned before the commit that holds it had landed, or (with the store
    on the power-loss filesystem) before every store file that commit wrote was synced."""
    told = any(x.event == "committed" and x.get("status") for x in events)
    traced = any(x.event == "fs" for x in events)
    found: list[Finding] = []
    for a in events:
        if a.event != "ack":
            continue
        run_id, status = a.get("run_id"), a.get("status")
        commit: Event | None
        if told:
            # Any worker's commit: a second caller may return what the owner wrote.
            holds = partial(_holds, run_id=run_id, status=status)
            commit = _last(events, a.n, None, holds)
            if commit is None:
                late = _first(events, a.n, None, holds)
                found.append(_early(a, late))
                continue
        else:
            commit = _last(events, a.n, a.pid, lambda x: x.event == "committed" and _checkpoint(x))
        if commit is None or not traced:
            continue
        unsynced = _unsynced(events, commit, a)
        if unsynced is not None:
            found.append(_unsynced_finding(a, commit, unsynced))
    return found


def _checkpoint(event: Event) -> bool:
    return bool(event.get("what") == "checkpoint")


def _holds(event: Event, run_id: Any, status: Any) -> bool:
    return bool(
        event.event == "committed"
        and _checkpoint(event)
        and event.get("run_id") == run_id
        and event.get("status") == status
    )


def _early(ack: Event, late: Event | None) -> Finding:
    return Finding.of(
        "acknowledged-early",
        {
            "run_id": ack.get("run_id"),
            "status": ack.get("status"),
            "ack": ack.n,
            "committed": late.n if late is not None else None,
        },
        path=f"runs[{ack.get('run_id')!r}].status",
        expected_value="committed before it is returned",
        actual_value=ack.get("status"),
        evidence=tuple(x.describe() for x in (ack, late) if x is not None),
        sides=("the order the mode promises", "the order in the history"),
    )


def _unsynced(events: Sequence[Event], commit: Event, ack: Event) -> Event | None:
    """The last write of the commit to a store file that no sync of that file followed
    before `ack`, or None."""
    began = _last(
        events,
        commit.n,
        commit.pid,
        lambda x: x.event == "write" and x.get("number") == commit.get("number") and _checkpoint(x),
    )
    start = began.n if began is not None else commit.n
    last: dict[str, Event] = {}
    for x in events[start : commit.n]:
        if x.event == "fs" and x.get("op") == "write" and not _not_data(x.get("file")):
            last[str(x.get("file"))] = x
    for file, write in sorted(last.items(), key=lambda item: item[1].n):
        synced = any(
            x.event == "fs" and x.get("op") in SYNCS and str(x.get("file")) == file
            for x in events[write.n + 1 : ack.n]
        )
        if not synced:
            return write
    return None


def _not_data(file: Any) -> bool:
    return str(file).endswith(NOT_DATA)


def _unsynced_finding(ack: Event, commit: Event, write: Event) -> Finding:
    return Finding.of(
        "acknowledged-unsynced",
        {
            "run_id": ack.get("run_id"),
            "status": ack.get("status"),
            "ack": ack.n,
            "committed": commit.n,
            "write": write.n,
            "file": write.get("file"),
        },
        path=f"runs[{ack.get('run_id')!r}].status",
        expected_value="synced before it is returned",
        actual_value=ack.get("status"),
        evidence=tuple(x.describe() for x in sorted((write, commit, ack), key=lambda x: x.n)),
        sides=("the order the mode promises", "the order in the history"),
    )


def leases(events: Sequence[Event]) -> list[Finding]:
    """Each lease stamped to expire before its stamping began, by the true clock (`since`:
    when the claim, renewal or write that stamped it began). One per run and way stamped."""
    skewed = {e.pid for e in events if e.event == "clock" and e.get("skew")}
    found: list[Finding] = []
    told: set[tuple[Any, Any, int]] = set()
    for e in events:
        if e.event != "lease":
            continue
        expires, since = e.get("expires_at"), e.get("since", e.at)
        if not isinstance(expires, (int, float)) or expires >= since:
            continue
        key = (e.get("run_id"), e.get("by"), e.pid)
        if key in told:
            continue
        told.add(key)
        clock = _first(events, -1, e.pid, lambda x: x.event == "clock")
        found.append(
            Finding.of(
                "lease-stamped-expired",
                {"run_id": e.get("run_id"), "by": e.get("by"), "ago": since - expires},
                path=f"runs[{e.get('run_id')!r}].lease",
                expected_value="a lease that runs out after it is stamped",
                actual_value=str(e.get("by")),
                evidence=tuple(x.describe() for x in (clock, e) if x is not None),
                # The clock was set off on purpose: the fault's doing, not the runtime's.
                expected=e.pid in skewed,
            )
        )
    return found


def usage(
    events: Sequence[Event], session: Mapping[str, Any] | None, *, uninterrupted: bool
) -> list[Finding]:
    """Each run whose stored `usage.model_calls` falls short of what its turns consumed:
    in an uninterrupted run, every reply the model served it across its start and every
    continue (too many is usage-overcounted); after a crash, the replies the run holds."""
    served: dict[str, list[Event]] = defaultdict(list)
    drives: dict[str, list[Event]] = defaultdict(list)
    driving: dict[int, str] = {}
    for e in events:
        if e.event == "run" and e.get("run_id"):
            driving[e.pid] = str(e.get("run_id"))
            drives[driving[e.pid]].append(e)
        elif e.event == "model-reply" and e.pid in driving:
            served[driving[e.pid]].append(e)
    found: list[Finding] = []
    for run_id, run in ((session or {}).get("runs") or {}).items():
        stored = _model_calls(run)
        if stored is None:
            continue
        if uninterrupted:
            consumed = len(served.get(run_id, ()))
            started = drives.get(run_id, [])
            if stored < consumed:
                # The witness: where the run began and was last continued, and its last reply.
                shown = [*started[:1], *started[1:][-1:], *served[run_id][-1:]]
                found.append(
                    _undercount(
                        run_id,
                        stored,
                        consumed,
                        {"consumed": consumed, "drives": len(started)},
                        tuple(x.describe() for x in shown),
                    )
                )
            continue
        held = sum(1 for m in run.get("messages") or () if m.get("role") == "assistant")
        if stored < held:
            found.append(_undercount(run_id, stored, held, {"held": held}, ()))
    return found


def _model_calls(run: Mapping[str, Any]) -> int | None:
    u = run.get("usage")
    n = u.get("model_calls") if isinstance(u, Mapping) else None
    return n if isinstance(n, int) and not isinstance(n, bool) else None


def _undercount(
    run_id: str, stored: int, wanted: int, facts: dict[str, Any], witness: tuple[str, ...]
) -> Finding:
    return Finding.of(
        "usage-undercounted",
        {"run_id": run_id, "stored": stored, **facts},
        path=f"runs[{run_id!r}].usage.model_calls",
        expected_value=wanted,
        actual_value=stored,
        evidence=witness,
        sides=(
            "replies the run consumed" if "consumed" in facts else "replies the run holds",
            "model calls the run counts",
        ),
    )


def reanswered(events: Sequence[Event]) -> list[tuple[Event, Event]]:
    """(the first reply, the reply given again otherwise) of each model turn that a worker
    was answered otherwise after the worker first served it had made no record of that
    reply durable (no commit of it held the reply's calls; where the adapter reports no
    calls, no checkpoint of it landed after the reply): the turn was asked again because
    its answer was lost, and may be answered again, as after a kill before the reply."""
    facts = any(x.event == "committed" and "calls" in x.data for x in events)
    found: list[tuple[Event, Event]] = []
    for again in events:
        if again.event != "model-reply" or not again.get("regenerated"):
            continue
        first = _last(events, again.n, None, partial(_first_pass, again=again))
        if first is None:
            continue
        calls = _calls(first)

        def kept(x: Event, calls: set[tuple[str, str]] = calls) -> bool:
            if x.event != "committed":
                return False
            return bool(calls & _calls(x)) if facts else _checkpoint(x)

        if _first(events, first.n, first.pid, kept) is None:
            found.append((first, again))
    return found


def _first_pass(event: Event, again: Event) -> bool:
    """`event` served the turn `again` answers again, to another worker."""
    return (
        event.event == "model-reply"
        and event.get("turn") == again.get("turn")
        and event.pid != again.pid
    )


def check(
    events: Sequence[Event],
    session: Mapping[str, Any] | None,
    *,
    replays: bool,
    durable: bool,
    uninterrupted: bool,
) -> list[Finding]:
    """Every rule the history is held to. `replays`: the mode promises to replay a reply
    that asked for tools (Mode.replays_replies); `durable`: that a status returned is
    durable (Mode.durable); `uninterrupted`: nobody was killed (a baseline)."""
    return [
        *(effects_before_records(events) if replays else ()),
        *(acknowledgements(events) if durable else ()),
        *leases(events),
        *usage(events, session, uninterrupted=uninterrupted),
    ]


def _last(events: Sequence[Event], before: int, pid: int | None, match: Any) -> Event | None:
    for x in reversed(events[: max(before, 0)]):
        if (pid is None or x.pid == pid) and match(x):
            return x
    return None


def _first(events: Sequence[Event], after: int, pid: int | None, match: Any) -> Event | None:
    for x in events[after + 1 :]:
        if (pid is None or x.pid == pid) and match(x):
            return x
    return None


def _between(events: Sequence[Event], start: int, end: int, pid: int, match: Any) -> bool:
    return any(x.pid == pid and match(x) for x in events[start + 1 : end])


__all__ = [
    "acknowledgements",
    "check",
    "effects_before_records",
    "leases",
    "reanswered",
    "usage",
]
