"""A cell's run, its workers: start one, wait for it at its point and confirm the point in
the store (exactly, or as it landed where writes lag the run), pause or kill it, wait for
its end within the cell's time limit.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from killpoint.engine.polling import poll
from killpoint.engine.stall import holds_commit_lock, pause_unlocked
from killpoint.errors import AdapterFault
from killpoint.kinds.base import Crashed, Plan
from killpoint.scenarios import gates
from killpoint.values.findings import Finding
from killpoint.values.sentences import count, times
from killpoint.workers.processes import Worker

if TYPE_CHECKING:
    pass

from killpoint.engine.cell_store import StoreReading, summary

# Seconds the counts must stay unchanged at a point where a write stays in flight.
SETTLE = 0.1


class WorkerSteps(StoreReading):
    """A cell's run as a kind drives its workers (killpoint.kinds.base.CellWorkers)."""

    def start(self, log_name: str, **spec: Any) -> Worker:
        assert self.work is not None
        url = spec.pop("store_url", self.url)
        spec.setdefault("checkpoint_trace", self.base.writes_lag)
        # A batch the worker takes from its store finishes in call order too.
        spec.setdefault("batches", self.base.batch_calls())
        worker = Worker(
            self.engine.worker_spec(self.cell.row, url, self.work, log_name=log_name, **spec),
            self.timeline,
            self.t0,
            self.engine.stopping,
        )
        self.workers.append(worker)
        return worker

    def join(self, worker: Worker, what: str) -> str:
        out = worker.join(self.deadline())
        if out.kind == "timeout":
            self.end(Finding("hung", f"{what} passed its time limit ({out.detail})"))
        return f"{out.kind} {out.detail}".strip()

    def reach(self, worker: Worker, plan: Plan) -> None:
        out = worker.wait(plan.wait_for, self.deadline())
        if out.kind == "timeout":
            worker.kill()
            self.end(Finding("hung", f"{plan.point}: {out.detail}"))
        if out.kind != "gates":
            worker.kill()
            self.end(
                Finding(
                    "missed",
                    f"the worker ended ({out.kind}) before reaching {plan.point}: {out.detail}",
                )
            )

        if self.base.writes_lag and not at_checkpoint(plan):
            self.confirm_landed(worker, plan)
            return

        def there() -> bool:
            try:
                landed = self.progress()
            except AdapterFault:
                # Held inside its commit with the store's file lock (a rollback journal whose
                # transaction spilled pages to the file): no read can happen until the
                # worker ends, and the point kills it next anyway, so the count confirmed is
                # what the kill leaves.
                if not (worker.alive and holds_commit_lock(self.url, worker)):
                    raise
                worker.kill()
                self.event("the worker held the store's lock inside its commit: killed first")
                landed = self.progress()
            if landed != plan.checkpoints:
                return False
            return self.finished_first(plan)

        # The worker is parked at its gate: the state waited for is about to hold or never will.
        if not poll(there, self.engine.config.confirm_timeout, self.engine.stopping):
            held = self.progress()
            worker.kill()
            self.store_at_crash = summary(self.read(), held)
            self.end(
                Finding.of(
                    "checkpoint-count",
                    {"point": str(plan.point), "held": held, "wanted": plan.checkpoints},
                    path="store",
                    expected_value=plan.checkpoints,
                    actual_value=held,
                    sides=("checkpoints in the baseline there", "checkpoints in the store"),
                )
            )
        self.event(
            f"store confirms {count(plan.checkpoints, 'checkpoint')} at {plan.point}",
            "store",
            "store",
        )

    def pause(self, worker: Worker) -> None:
        retaken = pause_unlocked(
            self.url,
            worker,
            self.engine.config.confirm_timeout,
            self.deadline(),
            self.engine.stopping,
        )
        if retaken:
            self.event(
                f"the pause was taken again ({times(retaken)}): another thread of the worker "
                "held the store's SQLite lock"
            )

    def finished_first(self, plan: Plan) -> bool:
        """The calls the plan needs finished before its point have finished (ledger)."""
        done = self.ledger()
        for call in plan.finished_first:
            n = sum(
                1
                for e in done
                if e.phase == "finished" and e.signature == (call.tool, call.arguments)
            )
            if n < call.occurrence:
                return False
        return True

    def confirm_landed(self, worker: Worker, plan: Plan) -> None:
        """A point inside a step, in a mode whose writes lag: how many checkpoints have
        landed there is a race of this run, so it is read, not required. The worker
        announces each write it begins and lands; the store must hold every write
        announced as landed and none that was never begun. Waits for the writes to settle
        (the counts unchanged for SETTLE: a worker whose event loop is parked with it
        cannot announce a write its driver finishes), then says what the store holds; the
        kill's own reading is what the cell is judged on, and the timeline names any write
        that landed between the two."""
        seen: list[tuple[int, int, int]] = []
        since = [time.monotonic()]

        def settled() -> bool:
            # Landed writes announced before the store is read are in it; writes in it
            # were announced as begun before the pipe is read again.
            worker.drain()
            landed = announced(worker)[0]
            held = self.progress()
            worker.drain()
            counts = (landed, announced(worker)[1], held)
            if not seen or seen[-1] != counts:
                seen.append(counts)
                since[0] = time.monotonic()
            if not self.finished_first(plan):
                return False
            # Nothing in flight is not enough: a write queued behind the run may not have
            # begun yet, so the counts must also stay unchanged for SETTLE.
            return time.monotonic() - since[0] >= SETTLE

        if not poll(settled, self.engine.config.confirm_timeout, self.engine.stopping):
            worker.kill()
            self.end(
                Finding(
                    "missed",
                    f"at {plan.point} the calls before it had not finished "
                    f"({', '.join(c.tool for c in plan.finished_first)})"
                    if not self.finished_first(plan)
                    else f"at {plan.point} the worker's writes did not settle",
                )
            )
        landed, begun, held = seen[-1]
        if not landed <= held <= begun:
            worker.kill()
            self.store_at_crash = summary(self.read(), held)
            self.end(
                Finding.of(
                    "checkpoint-count",
                    {"point": str(plan.point), "held": held, "begun": begun, "landed": landed},
                    path="store",
                    expected_value=landed if held < landed else begun,
                    actual_value=held,
                    sides=("checkpoints the worker announced", "checkpoints in the store"),
                )
            )
        self.confirmed = held
        self.event(
            f"store holds {count(held, 'checkpoint')} at {plan.point} (worker: {landed} landed, "
            f"{begun} begun; writes lag, the baseline's trace had {plan.checkpoints} there)",
            "store",
            "store",
        )

    def kill(self, worker: Worker) -> None:
        worker.kill()

    def crash_at(self, plan: Plan) -> Sequence[Crashed]:
        copy, self.copy = self.copy, None
        if copy is not None:
            # The copy in the cell's folder is what the kill would have left; it stands
            # for the crashed worker (after_crash reads only what it acknowledged).
            self.timeline += copy.events(self.t0)
            return [copy]
        worker = self.start("worker", gates=plan.arm)
        self.reach(worker, plan)
        self.kill(worker)
        return [worker]

    def sleep_until(self, when: float) -> None:
        self.engine.slots.sleep_until(when)

    def lent(self) -> AbstractContextManager[None]:
        return self.engine.slots.lent()

    def resume_gate(self, step: dict[str, Any]) -> str:
        """The gate a fresh worker passes as it takes the run up."""
        if "resume_at" in step:
            return gates.run_gate(step["resume_at"] + 1, "resume")
        return gates.run_gate(step["start_at"] + 1, "start")


def at_checkpoint(plan: Plan) -> bool:
    """The point is armed at a checkpoint's own gate: the adapter numbers writes in the
    order they land, so the count there is exact even when writes lag the run."""
    return any((g := gates.parse(name)) is not None and g.kind == "checkpoint" for name in plan.arm)


def announced(worker: Worker) -> tuple[int, int]:
    """(highest checkpoint announced landed, highest begun) by a worker that traces its
    writes; its offset when it announced none."""
    landed = begun = worker.spec.checkpoint_offset
    for name in worker.trace:
        gate = gates.parse(name)
        if gate is None or gate.kind != "checkpoint" or gate.number is None:
            continue
        if gate.phase == "landed":
            landed = max(landed, gate.number)
        elif gate.phase == "writing":
            begun = max(begun, gate.number)
    return landed, begun


__all__ = ["WorkerSteps", "announced", "at_checkpoint"]
