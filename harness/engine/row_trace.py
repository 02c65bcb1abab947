"""One traced worker per row: the run carried through each of its kill points in turn, the
state it leaves at each copied, so that each cell resumes from its copy in one fresh worker
(`--kills fast`, the default; `--kills real` starts and kills a worker per cell).

At a point whose state is only what the worker left in files (the store, the ledger, the
scripted model's state: a kind that says so, PointKind.copyable, on a store in the cell's
folder), a SIGKILL leaves exactly what the kernel holds of those files at that moment:
every write the worker made has reached the page cache, nothing it had not yet written
exists anywhere.
So the traced worker is held at the point's gates (as a killed cell's worker is), its
point confirmed in the store the same way, then SIGSTOPped; once every one of its threads
is stopped the files are copied byte for byte (what a SIGKILL at that instant leaves), and
it is woken and released to the next point. The row's last point is a real SIGKILL, the
copy taken after it. Anything the trace did not expect (a point not confirmed, a gate met
out of order, the worker ending early) ends the trace there: the points it did not copy
run as real kills, so that a copy is only ever the state a real kill was confirmed at.

Where the copy is not the same state: the worker itself. After a kill its pid is dead; a
runtime that asks whether the process holding a run's lease is alive (the reference
runtime does, on one host) must find it so, and so no cell of a row starts before the
row's trace has ended with its worker's kill. Locks (a stopped worker holds its POSIX
locks; a copy has none, as after a SIGKILL, which releases them), a SQLite `-shm` file (copied as
it is; the first connection to the copy rebuilds it, as it does after a kill, since no
process has it open), and what the kernel does not hold (an fsync in flight makes no
difference to a process crash: the page cache is what the next reader sees). A power cut
is a different state (what was synced, not what was written): power-loss points keep
real kills, as do points needing a live process (a SIGSTOPped worker woken later, a lock
or a server restart under a worker, a model fault) and stores outside the cell's folder
(a PostgreSQL schema: what another connection reads there while the worker is stopped is
what its kill would leave, since the server rolls back whatever a dropped connection had
not committed, but a copy would have to rebuild the runtime's own tables, their keys and
its sequences at their positions in every cell's schema: not built), and modes whose
writes lag the run (what has landed at a point is a race of each run, not one state to
copy).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from killpoint import kinds
from killpoint.engine.cell_run import CellOver, CellRun
from killpoint.engine.state_copy import Copy
from killpoint.errors import PointError
from killpoint.values.cell import Cell
from killpoint.values.points import CrashPoint, Schedule
from killpoint.workers.processes import Outcome

if TYPE_CHECKING:
    from killpoint.engine.cell_host import CellHost
    from killpoint.judge.baseline import Baseline
    from killpoint.kinds.base import Plan
    from killpoint.workers.processes import Worker

STORES = frozenset({"sqlite"})  # stores whose files live in the cell's folder
SKIPPED_FILES = (".log",)  # the tracer's own output, not state a resumer reads


def copyable(cell: Cell, base: Baseline) -> bool:
    """Whether `cell` may resume from a traced worker's copy of its first point."""
    first = cell.schedule.first
    return (
        cell.store in STORES
        and kinds.get(first.kind).copyable
        and not base.writes_lag
        and not base.problem
        and not base.nondeterministic
    )


@dataclass
class Trace:
    """What tracing one row gave: a copy per point reached, and why it stopped early."""

    copies: dict[CrashPoint, Copy] = field(default_factory=dict)
    stopped: str | None = None  # why the points after the last copy were not traced
    missed: dict[CrashPoint, str] = field(default_factory=dict)  # points passed over, why


def order_of(base: Baseline, plan: Plan) -> int:
    """Where a point stands in the run: the last of its gates the baseline passed."""
    return max(base.position(g) for g in plan.wait_for)


def trace_row(host: CellHost, base: Baseline, points: Sequence[CrashPoint]) -> Trace:
    """Carry one worker of the row through `points` (of copyable kinds), copying the state at
    each; the last point is a real kill, and the worker is dead when this returns."""
    trace = Trace()
    # Points of different kinds held at the same gates (after-checkpoint:2, double-resume:2)
    # share one copy: the kill leaves the same state whatever follows it.
    sharing: dict[tuple[Any, ...], list[CrashPoint]] = {}
    first: dict[tuple[Any, ...], Plan] = {}
    for p in dict.fromkeys(points):
        try:
            plan = kinds.get(p.kind).plan(base, p)
        except PointError:
            continue  # its cell says so when it runs for real
        key = (plan.arm, plan.wait_for, plan.checkpoints, plan.finished_first)
        sharing.setdefault(key, []).append(p)
        first.setdefault(key, plan)
    plans = sorted(
        first.values(), key=lambda plan: (order_of(base, plan), kinds.point_order(plan.point))
    )
    if not plans:
        return trace
    row = base.row
    tracer = CellRun(host, Cell(*row, schedule=Schedule((plans[0].point,))), base)
    tracer.work = host.work_dir(f"trace-{'-'.join(row)}")
    armed = frozenset(g for plan in plans for g in plan.arm)
    released: set[str] = set()
    try:
        tracer.url = tracer.call(
            "a new store (the store server)", host.stores.fresh, tracer.work, dependency=True
        )
        worker = tracer.start("tracer", gates=tuple(sorted(armed)), release=True)
        stops: list[tuple[int, int]] = []  # spans of the timeline: each copy's own events

        def release_through(n: int) -> None:
            """Every gate of plans[:n+1] that no later point arms goes (a gate not hit yet
            is released ahead, so it never holds the worker)."""
            later = frozenset(g for p in plans[n + 1 :] for g in p.arm)
            for g in sorted(frozenset(g for p in plans[: n + 1] for g in p.arm) - later):
                if g not in released:
                    worker.release(g)
                    released.add(g)

        for n, plan in enumerate(plans):
            # A released gate is still announced as the worker passes it, without a hold.
            held = {g for g in worker.gates_hit if g not in released}
            out = worker.wait(
                plan.wait_for, tracer.deadline(), allowed=frozenset(plan.arm) | held | released
            )
            if out.kind == "gates":
                worker.drain()
                held = {g for g in worker.gates_hit if g not in released}
                if not held <= set(plan.arm):
                    out = Outcome("stray", ", ".join(sorted(held - set(plan.arm))))
            if out.kind == "stray":
                # A later point's gate holds the worker before this point: a real run of
                # this point would not be held there, so it keeps its own kill.
                trace.missed[plan.point] = f"held at {out.detail} before {plan.point}"
                release_through(n)
                continue
            if out.kind != "gates":
                trace.stopped = f"the tracer at {plan.point}: {out.kind} {out.detail}".strip()
                break
            start = len(tracer.timeline)
            tracer.reach(worker, plan)  # raises CellOver where the point is not confirmed
            last = n == len(plans) - 1
            copy = take_copy(host, tracer, worker, plan.point, last, tuple(stops))
            # The confirmation, stop and copy at this point: another cell's business in
            # every later copy (Copy.events leaves them out).
            stops.append((start, len(tracer.timeline)))
            if copy is None:
                trace.stopped = f"the tracer could not be stopped at {plan.point}"
                break
            key = (plan.arm, plan.wait_for, plan.checkpoints, plan.finished_first)
            for p in sharing[key]:
                trace.copies[p] = copy
            if not last:
                release_through(n)
    except CellOver as exc:
        trace.stopped = f"the tracer: {exc}"
    finally:
        # Never kept, whatever --keep says: no result names the trace's folder (each cell
        # keeps its own, its copy included).
        tracer.cleanup(expected=True, cut_short=True)
    return trace


def take_copy(
    host: CellHost,
    tracer: CellRun,
    worker: Worker,
    point: CrashPoint,
    last: bool,
    stops: tuple[tuple[int, int], ...] = (),
) -> Copy | None:
    """The files the worker left, copied while it is stopped (or after its kill)."""
    assert tracer.work is not None
    worker.drain()
    if last:
        worker.kill()  # its pipe closes: whatever it sent is read above
    elif not worker.stop_all(tracer.deadline()):
        return None
    else:
        worker.drain()  # every ack sent before the stop
    folder = host.work_dir(f"copy-{point}")
    try:
        copy_files(tracer.work, folder)
    finally:
        if not last:
            worker.cont()
    tracer.event(f"state at {point} copied ({'after the kill' if last else 'worker stopped'})")
    return Copy(
        point,
        folder,
        list(worker.acks),
        list(tracer.timeline),
        worker.pid,
        last,
        t0=tracer.t0,
        stops=stops,
    )


def copy_files(source: Path, target: Path) -> None:
    """Every file of the worker's folder but its logs, byte for byte."""
    for entry in os.scandir(source):
        if entry.name.endswith(SKIPPED_FILES):
            continue
        if entry.is_dir(follow_symlinks=False):
            shutil.copytree(entry.path, target / entry.name)
        else:
            shutil.copyfile(entry.path, target / entry.name)


__all__ = ["Copy", "Trace", "copyable", "trace_row"]
