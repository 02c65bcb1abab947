"""Kills at the store's file-system operations, found by the power-loss layer with no hook in
the runtime (docs/powerloss.md, "fs-op points").

fs-op:K:N        the worker is SIGKILLed just before the Nth store-file operation (0-based:
                 write, fsync, fdatasync, truncate, rename, unlink, fsyncdir) of
                 checkpoint K: the FUSE server holds that request, the worker is killed,
                 then the request fails and nothing of it reaches the store
fs-op-after:K:N  the same operation passes through to the store first; its reply is held

"Checkpoint K's operations" are those made after checkpoint K-1 landed (after the mount,
for K = 1) and up to checkpoint K's `landed` gate: the engine marks the count on the
server while the worker is parked at each `landed` gate (engine.fs_trace), in the
baseline as in the cell. N is enumerated from the baseline's trace of operations: only
operations both baseline runs made in the same order (kind and file, from the
checkpoint's first operation to N) are planned, and `--fs-ops` bounds how many per
checkpoint (all, syncs: only fsync/fdatasync/fsyncdir, or a number spread evenly).

A SIGKILL leaves the page cache, and the backing folder is the page cache: after the
kill the store is the backing folder as it stands, and the cell goes on as any kill
cell (inspect, the acknowledgement check, resume, compare).
"""

from __future__ import annotations

import os
import signal
import time
from contextlib import suppress
from pathlib import Path
from typing import Any

from killpoint.errors import PointError
from killpoint.judge.baseline import Baseline
from killpoint.kinds.base import CellContext, Plan
from killpoint.kinds.power_loss import BACKING, MOUNTPOINT, fuse_unavailable
from killpoint.powerloss.op_trace import SYNCS, TracedOp
from killpoint.scenarios import gates
from killpoint.stores import per_url
from killpoint.stores.sqlite import FILE, path_of
from killpoint.values.findings import Finding
from killpoint.values.points import CrashPoint

BUDGETS = ("all", "syncs")  # or a whole number of operations per checkpoint
KINDS = ("fs-op", "fs-op-after")  # a campaign with either traces its baselines' operations


def by_checkpoint(ops: list[dict[str, Any]]) -> dict[int, list[TracedOp]]:
    found: dict[int, list[TracedOp]] = {}
    for data in ops:
        op = TracedOp.from_json(data)
        found.setdefault(op.checkpoint, []).append(op)
    return found


def agreed(mine: list[TracedOp], theirs: list[TracedOp]) -> list[TracedOp]:
    """The operations of one checkpoint both baseline runs made alike, from the first on:
    the longest common prefix by kind and file (offsets may move with content)."""
    found = []
    for a, b in zip(mine, theirs, strict=False):
        if (a.kind, a.file) != (b.kind, b.file):
            break
        found.append(a)
    return found


def within(ops: list[TracedOp], budget: str) -> list[TracedOp]:
    """The operations a budget keeps: all, the syncs, or N spread evenly (first and last)."""
    if budget == "all":
        return ops
    if budget == "syncs":
        return [op for op in ops if op.kind in SYNCS]
    n = int(budget)
    if len(ops) <= n:
        return ops
    if n == 1:
        return [ops[-1]]
    picks = sorted({round(i * (len(ops) - 1) / (n - 1)) for i in range(n)})
    return [ops[i] for i in picks]


def planned_ops(base: Baseline) -> dict[tuple[int, int], TracedOp]:
    """(K, N) -> the operation, for every fs-op point the baseline offers."""
    mine, theirs = by_checkpoint(base.fs_ops), by_checkpoint(base.other_fs_ops)
    found: dict[tuple[int, int], TracedOp] = {}
    for k in range(1, base.checkpoints + 1):
        ops = mine.get(k, [])
        if base.other_fs_ops:
            ops = agreed(ops, theirs.get(k, []))
        for op in within(ops, base.fs_budget):
            found[(k, op.n)] = op
    return found


class FsOp:
    name = KINDS[0]
    meaning = (
        "just before the Nth store-file operation of checkpoint K (write, sync, truncate, "
        "rename, unlink) the worker is killed; the operation never reaches the store"
    )
    label = "fs-op K:N"
    kills = True
    arity = 2
    groups: tuple[str, ...] = ("fs-ops",)  # opt-in: every cell mounts a filesystem
    follows = False  # the resumed run's store is a plain folder, not a mount
    copyable = False
    kept = False
    cuts = False
    after = False

    def points(self, base: Baseline) -> list[CrashPoint]:
        return [CrashPoint(self.name, k, n) for k, n in sorted(planned_ops(base))]

    def plan(self, base: Baseline, point: CrashPoint) -> Plan:
        op = by_checkpoint(base.fs_ops).get(point.k, [])
        n = point.i if point.i is not None else -1
        if not 0 <= n < len(op):
            counts = by_checkpoint(base.fs_ops)
            shown = ", ".join(f"{k}: {len(v)}" for k, v in sorted(counts.items())) or "none"
            raise PointError(
                f"killpoint: {point} is not in this baseline's trace of store-file operations "
                f"(operations per checkpoint: {shown}); N counts from 0"
            )
        k = point.k
        arm = (gates.checkpoint_gate(k - 1, "landed"),) if k > 1 else ()
        writing = gates.checkpoint_gate(k, "writing")
        where = writing if base.passed(writing) else gates.checkpoint_gate(k, "landed")
        run, started = base.run_at(base.position(where))
        return Plan(point, arm, frozenset(arm), k - 1, run, started, notes=(op[n].describe(),))

    def describe(self, point: CrashPoint) -> str:
        when = "just after" if self.after else "just before"
        return (
            f"{when} store-file operation {point.i} of checkpoint {point.k} "
            f"({point.k - 1} landed) the worker is killed"
            + ("" if self.after else "; the operation never reaches the store")
        )

    def run(self, cell: CellContext, plan: Plan) -> None:
        from killpoint.powerloss import PowerLossFS

        folder = Path(path_of(cell.url)).parent
        mountpoint = folder / MOUNTPOINT
        cell.url = f"sqlite:///{mountpoint / FILE}"
        k, n = plan.point.k, plan.point.i or 0
        fs = PowerLossFS(folder / BACKING, mountpoint)
        try:
            fs.mark(1)
            worker = cell.start("worker", gates=plan.arm, release=True)
            if plan.arm:
                # The gate alone, not the store read back as other kills confirm it: the
                # baseline's engine read nothing there, and a reader of the engine's own
                # changes what SQLite writes next (it holds the WAL back from a restart).
                out = worker.wait(frozenset(plan.arm), cell.deadline())
                if out.kind != "gates":
                    cell.kill(worker)
                    kind = "hung" if out.kind == "timeout" else "missed"
                    cell.end(Finding(kind, f"the worker never reached {plan.arm[0]}: {out.detail}"))
                fs.mark(k)  # the worker is parked at checkpoint K-1's landed gate
            fs.arm(n, after=self.after)
            for gate in plan.arm:
                worker.release(gate)
            deadline = cell.deadline()
            held = fs.wait_held(deadline, also=[worker.conn])
            # The worker's pipe speaks too (a run's status acknowledged): read it, and
            # wait on unless the worker has ended.
            while held is None and time.monotonic() < deadline:
                worker.drain()
                if worker.finished is not None:
                    break
                held = fs.wait_held(deadline, also=[worker.conn])
            if held is None:
                cell.kill(worker)
                cell.end(
                    Finding(
                        "missed",
                        f"the worker never made store-file operation {n} of checkpoint {k} "
                        f"(the baseline's: {plan.notes[0] if plan.notes else '?'})",
                    )
                )
            # Its thread waits for the reply and cannot die before it: the signal first,
            # then the drop, and the process ends without running another line.
            with suppress(ProcessLookupError):
                os.killpg(worker.pid, signal.SIGKILL)
            fs.drop()
            cell.kill(worker)
            assert held is not None
            when = "after" if self.after else "before"
            cell.event(f"killed {when} {held.describe()}", "kill", "store")
            baseline = plan.notes[0] if plan.notes else ""
            alike = baseline.startswith(f"{held.kind} of {held.file}")
            if not alike:
                cell.event(
                    f"operation {n} of checkpoint {k} was the baseline's {baseline}; this "
                    f"run's is the {held.describe()}"
                )
            cell.evidence(
                "fs_op", {"when": when, **held.to_json(), "baseline": baseline, "alike": alike}
            )
            per_url.release(cell.url)
            fs.unmount()
        finally:
            per_url.release(cell.url)
            fs.close()
        # What a SIGKILL leaves is the page cache, which the backing folder stands for.
        cell.url = f"sqlite:///{folder / BACKING / FILE}"
        cell.after_crash(plan, [worker])

    def unavailable(self, store_kind: str) -> str | None:
        return fuse_unavailable("fs-op points", store_kind, verb="need")


class FsOpAfter(FsOp):
    name = KINDS[1]
    meaning = (
        "just after the Nth store-file operation of checkpoint K reached the store, before "
        "its reply, the worker is killed"
    )
    label = "fs-op-after K:N"
    after = True


__all__ = ["BUDGETS", "KINDS", "FsOp", "FsOpAfter", "planned_ops"]
