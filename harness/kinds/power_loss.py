"""Power loss: the machine dies, not only the process.

power-loss:K   the power goes once checkpoint K has landed: the worker is killed there
               (after the last checkpoint, once the runtime has returned its final
               status) and the store's folder is cut to its durable image, each file
               as of its last fsync (killpoint.powerloss, docs/powerloss.md)

The cell's store lives on the power-loss filesystem while the worker runs; the ledger of
side effects, the model's state and the logs stay outside it (the world keeps its side
effects when a machine dies). After the cut the image sits at the store's own path, so
the rest of the cell (inspect, the acknowledgement check, the resume, the comparison)
reads it as any kill cell reads its store.
"""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from pathlib import Path

from killpoint.errors import PointError
from killpoint.judge.baseline import Baseline
from killpoint.kinds.base import CellContext, Plan, after_checkpoint
from killpoint.kinds.kills import MidCommit
from killpoint.scenarios import gates
from killpoint.stores import per_url
from killpoint.stores.sqlite import FILE, path_of
from killpoint.values.findings import Finding
from killpoint.values.points import CrashPoint
from killpoint.values.sentences import count
from killpoint.workers.processes import Worker

MOUNTPOINT = "store"  # the store's folder, inside the cell's folder
# What each cut model leaves, for the cell's timeline (rules: docs/powerloss.md).
CUT_SENTENCES = {
    "synced": "the store keeps what was synced",
    "torn-op": "the store keeps what was synced and a torn part of each file's last write",
    "torn-seq": "the store keeps what was synced and a seeded subset of the writes since",
    "reorder": "the store keeps what was synced and a prefix of each file's and each "
    "directory's operations since",
}
BACKING = "store-backing"  # what the filesystem passes the store's I/O through to


def image_problem(db: Path) -> str | None:
    """Why SQLite cannot use the image at `db` (integrity_check's first complaint, or
    the error opening it raised), or None. A missing file is an empty store, not this."""
    if not db.exists():
        return None
    try:
        conn = sqlite3.connect(db, timeout=30)
        try:
            verdict = str(conn.execute("PRAGMA integrity_check").fetchone()[0])
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        return f"SQLite: {exc}"
    return None if verdict == "ok" else f"SQLite integrity_check: {verdict}"


def fuse_unavailable(what: str, store_kind: str, verb: str = "needs") -> str | None:
    """Why a kind whose store lies on the power-loss filesystem cannot run: a store server
    (its files are not in the cell's folder), or no FUSE here; None when it can."""
    if store_kind != "sqlite":
        return (
            f"{what} {verb} the store's files in the cell's folder (sqlite); a {store_kind} "
            "server keeps its own"
        )
    from killpoint.powerloss import available

    return available()


def named(cut: str) -> str:
    """The cut model in a finding's words: none for the default (its words are as before
    cut models), else its name without the cell's seed (the evidence has the seed)."""
    return "" if cut == "synced" else f" ({cut})"


class PowerLoss:
    name = "power-loss"
    meaning = (
        "the power goes once checkpoint K has landed (after the last, once the run returned "
        "its status): the worker is killed, the store keeps only what was synced"
    )
    label = "power loss"
    kills = True
    arity = 1
    groups: tuple[str, ...] = (
        "power-loss",
    )  # opt-in: each cell mounts a filesystem (not in "all")
    follows = False  # the resumed run's store is the plain image, not a mount
    copyable = False
    kept = False
    cuts = True  # cut by the campaign's cut model (--cut), which its replay must repeat

    def points(self, base: Baseline) -> list[CrashPoint]:
        return [CrashPoint(self.name, k) for k in range(1, base.checkpoints + 1)]

    def plan(self, base: Baseline, point: CrashPoint) -> Plan:
        k = point.k
        if not 1 <= k <= base.checkpoints:
            raise PointError(
                f"killpoint: {point} is not a checkpoint of this baseline; it has "
                f"{count(base.checkpoints, 'checkpoint')}, 1..{base.checkpoints}"
            )
        if k < base.checkpoints:
            return after_checkpoint(base, point)
        # The end: the worker runs out and returns every status; nothing to arm.
        run, started = base.run_at(base.position(gates.checkpoint_gate(k, "landed")))
        return Plan(point, (), frozenset(), k, run, started, notes=("end",))

    def describe(self, point: CrashPoint) -> str:
        return (
            f"the power goes once checkpoint {point.k} has landed (after the last, once the "
            "runtime has returned its final status): the worker is killed and the store "
            "keeps what was synced"
        )

    def run(self, cell: CellContext, plan: Plan) -> None:
        # The store moves into a folder of its own, the mount; the cell's folder keeps the
        # ledger, the model's state and the logs.
        folder = Path(path_of(cell.url)).parent
        mountpoint = folder / MOUNTPOINT
        cell.url = f"sqlite:///{mountpoint / FILE}"
        from killpoint.powerloss import PowerLossFS
        from killpoint.powerloss.cut_models import cell_seed, parse_cut

        # Each cell its own seed, the same in every campaign and replay of it.
        model = parse_cut(cell.cut, seed=cell_seed(f"{cell.cell_id} {cell.cut}"))
        fs = PowerLossFS(folder / BACKING, mountpoint)
        try:
            worker = self.reach(cell, plan)
            if worker.alive:
                cell.kill(worker)
            report = fs.cut(model=model)  # before anything else touches the store
            # The default's words are as before cut models (a finding's text is its group).
            seeded = "" if model.name == "synced" else f" ({report.cut})"
            cell.fault(f"power cut{seeded}: {CUT_SENTENCES[model.name]}")
            # The engine's own connections close after the cut (a close may checkpoint a
            # WAL: too late to make anything durable), and must close for the unmount.
            per_url.release(cell.url)
            fs.unmount()
        finally:
            per_url.release(cell.url)
            fs.close()  # every path out unmounts (a no-op after unmount())
        cell.evidence("power_cut", report.to_json())  # names the model and its seed
        for line in report.summary().splitlines():
            cell.event(f"cut: {line}", "store", "store")
        unsound = image_problem(Path(path_of(cell.url)))
        if unsound is not None:
            # Read before the adapter is asked anything: a malformed image is the cut's
            # outcome (SQLite documents it for synchronous=OFF), not the adapter's fault.
            cell.end(
                Finding(
                    "store-invariant",
                    f"after the power cut{named(cell.cut)} the store is not sound: {unsound}",
                    path="store",
                )
            )
        held = cell.progress()
        if held < plan.checkpoints:
            cell.add(
                Finding(
                    "checkpoints-lost",
                    f"the power cut{named(cell.cut)} took back {plan.checkpoints - held} of the "
                    f"{count(plan.checkpoints, 'landed checkpoint')}: {held} "
                    f"{'is' if held == 1 else 'are'} in the store after it",
                    path="store",
                    expected_value=plan.checkpoints,
                    actual_value=held,
                )
            )
        cell.after_crash(plan, [worker])

    def reach(self, cell: CellContext, plan: Plan) -> Worker:
        """A worker parked at the point (or, at the end, one that has returned every status)."""
        worker = cell.start("worker", gates=plan.arm)
        if plan.arm:
            cell.reach(worker, plan)
            return worker
        ended = cell.join(worker, "the worker")
        if not ended.startswith("done"):
            cell.end(Finding("missed", f"the worker ended ({ended}) before the session's end"))
        held = cell.progress()
        if held != plan.checkpoints:
            cell.end(
                Finding(
                    "checkpoint-count",
                    f"at the session's end the store held {count(held, 'checkpoint')}; the baseline "
                    f"held {plan.checkpoints}",
                    path="store",
                    expected_value=plan.checkpoints,
                    actual_value=held,
                )
            )
        cell.event(
            f"store confirms {count(plan.checkpoints, 'checkpoint')} at the end", "store", "store"
        )
        return worker

    def unavailable(self, store_kind: str) -> str | None:
        return fuse_unavailable("power loss", store_kind)


class PowerLossMidCommit(PowerLoss):
    """mid-commit's point (the runtime's commit hook marks it), then the power cut."""

    name = "power-loss-mid-commit"
    meaning = (
        "inside checkpoint K's transaction, before COMMIT, the power goes: the worker is "
        "killed, the store keeps only what was synced"
    )
    label = "power loss mid-commit"

    def points(self, base: Baseline) -> list[CrashPoint]:
        return [CrashPoint(self.name, p.k) for p in MidCommit().points(base)]

    def plan(self, base: Baseline, point: CrashPoint) -> Plan:
        return replace(MidCommit().plan(base, CrashPoint(MidCommit.name, point.k)), point=point)

    def describe(self, point: CrashPoint) -> str:
        return (
            f"inside checkpoint {point.k}'s transaction, before COMMIT "
            f"({count(point.k - 1, 'checkpoint')} landed), the power goes: the worker is killed and the store keeps "
            "what was synced"
        )


__all__ = ["BACKING", "MOUNTPOINT", "PowerLoss", "PowerLossMidCommit"]
