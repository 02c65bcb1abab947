"""One cell, run: the context a crash-point kind drives (killpoint.kinds.base.CellContext),
and the findings it collects on the way.

The kind says what happens at its point (start, reach, kill or fault, continue); this
module does each step the same way for every kind: confirm a point in the store, kill and
count what was in flight, inspect the store after a crash, check what the workers
acknowledged, continue the run (or crash it again), compare with the baseline and check
the contract. A step that cannot go on (a point not reached, a worker past its time
limit, a run gone) records its finding and ends the cell (`CellOver`); whatever ended it,
the ledger's effects are counted at the end.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from killpoint import kinds
from killpoint.adapters.blame import charged, checked_problems
from killpoint.judge import contract
from killpoint.judge import history as history_rules
from killpoint.judge.baseline import effects
from killpoint.judge.cassette import with_history
from killpoint.judge.oracle import (
    comparable,
    compare_sessions,
    count_effects,
    differences,
    effect_findings,
)
from killpoint.kinds.base import Crashed, Plan
from killpoint.scenarios import ledger as ledger_mod
from killpoint.scenarios.model import (
    requested_turns,
)
from killpoint.values.cell import CellResult
from killpoint.values.durations import offset
from killpoint.values.findings import Finding, headline, ranked, verdict_of
from killpoint.values.modes import find
from killpoint.values.scenario_refs import resolve_scenario
from killpoint.values.sentences import count
from killpoint.workers.processes import kill_left_behind
from killpoint.workers.worker import MODEL_STATE

if TYPE_CHECKING:
    from killpoint.engine.state_copy import Copy

from killpoint.engine.cell_base import CellOver, Signature
from killpoint.engine.cell_workers import WorkerSteps

LOG_TAIL_LINES = 25
LOG_TAIL_BYTES = 64 * 1024  # what log_tail reads of a worker's log, from its end
LOG_LINE_CHARS = 2000  # of one line: an 8 MiB line is shown by its end


class CellRun(WorkerSteps):
    """One cell, run: the context a crash-point kind drives (killpoint.kinds.base.CellContext)."""

    def after_crash(
        self,
        plan: Plan,
        crashed: Sequence[Crashed],
        resume: Callable[[dict[str, Any], int], None] | None = None,
    ) -> None:
        if not self.crashed:
            self.crashed = True
            for watcher in self.engine.watchers:
                watcher.first_crash(self, plan)
        held, session = self.at_crash("after the crash")
        if self.confirmed is not None and held != self.confirmed:
            # Writes queued behind the run kept landing between the confirmation and the
            # kill; the cell is judged on the kill's reading, so the timeline says so.
            self.event(
                f"store held {count(held, 'checkpoint')} at the kill ({held - self.confirmed:+d} "
                "since the point was confirmed: writes lag)",
                "store",
                "store",
            )
        self.confirmed = None
        if self.base.writes_lag and held != plan.checkpoints:
            # What landed before the crash is this run's race: judged on what the store holds.
            plan = replace(plan, checkpoints=held)
        self.allow_in_flight(session, held)
        found = self.call(
            "the adapter's inspect()",
            charged("inspect()", self.adapter.inspect),
            self.url,
            self.engine.session_id,
        )
        problems = [
            p if isinstance(p, Finding) else Finding("store-invariant", p, path="store")
            for p in checked_problems(found)
        ]
        for p in problems:
            self.fault(f"inspect: {p.sentence}")
            self.add(p)
        if any(p.verdict != "ok" for p in problems):
            raise CellOver("the store is broken after the crash")
        acked = contract.acknowledged([a for w in crashed for a in w.acks], session)
        if acked:
            for f in acked:
                self.add(f)
            raise CellOver("acknowledged state is not durable")
        self.event("inspect: store sound", "store", "store")
        step = self.next_step(plan, session)
        if step is None:
            self.compare()
            return
        if self.rest:
            self.crash_again(step, held)
            return
        if resume is not None:
            resume(step, held)
            self.compare()
            return
        resumer = self.start("resumer", checkpoint_offset=held, **step)
        out = resumer.join(self.deadline())
        if out.kind == "timeout":
            self.end(Finding("hung", f"the resumer passed its time limit ({out.detail})"))
        if out.kind != "done":
            self.end(Finding("unresumable", f"the resumed run failed: {out.detail}"))
        self.compare()

    def crash_again(self, step: dict[str, Any], held: int) -> None:
        """Depth 2: crash the resumed worker too, at a point of its own, reached and
        confirmed in the store as the first point was."""
        point, self.rest = self.rest[0], self.rest.rest
        plan = kinds.get(point.kind).plan(self.base, point)
        worker = self.start("resumer", gates=plan.arm, checkpoint_offset=held, **step)
        self.reach(worker, plan)
        self.kill(worker)
        self.after_crash(plan, [worker])

    def compare(self) -> None:
        """The final session against the baseline, then the contract."""
        final = self.read()
        self.observe("at the end", final)
        self.judged = True
        found = compare_sessions(self.base.session, final, self.sides)
        found = self.reanswered(found)
        self.findings += found
        if found:
            self.diff = [
                d.to_json() for d in differences(comparable(self.base.session), comparable(final))
            ]
        # Charged to the cell only beyond the overcount its baseline shows (the row's).
        overcount = contract.model_calls(final, len(self.model_turns(served=True)))
        self.findings += contract.added_by_crash(overcount, self.base.findings)
        self.final = final
        if not found:
            # Only what was compared: the contract and the ledger may still find more;
            # result() says so on this line when they do (never "matches" beside a
            # failing verdict without what else failed).
            self.matched = len(self.timeline)
            self.event(
                f"the session of the {self.sides.actual} matches that of the "
                f"{self.sides.expected}, field by field"
            )

    def reanswered(self, found: list[Finding]) -> list[Finding]:
        """The comparison's findings, allowed where the model answered a turn again
        otherwise because the crash took its first answer before anything of it was durable
        (its reply had arrived, not yet journaled or checkpointed): the runtime was right to
        ask again, as after a kill before the reply, and the run that follows is another
        run than the baseline's. What the contract, the history and the ledger find stands."""
        if not found or self.work is None:
            return found
        again = history_rules.reanswered(self.history())
        if not again:
            return found
        turns = sorted({int(second.get("turn") or 0) for _, second in again})
        return [
            Finding.of(
                "turn-reanswered",
                {"turns": turns, "differences": len(found)},
                path="model",
                evidence=tuple(
                    x.describe() for first, second in again[:2] for x in (first, second)
                ),
                expected=True,
            )
        ]

    def execute(self, copy: Copy | None = None) -> None:
        """The cell by its kind; from `copy`, the state a traced worker left at its first
        point (killpoint.engine.row_trace), resumed as after a kill there."""
        point = self.cell.schedule.first
        kind = kinds.get(point.kind)
        plan = kind.plan(self.base, point)
        self.work = self.engine.work_dir(self.cell.id)
        with contextlib.suppress(CellOver):
            if copy is not None:
                copy.place(self.work)
            self.url = self.call(
                "a new store (the store server)",
                self.engine.stores.fresh,
                self.work,
                dependency=True,
            )
            self.event(f"plan: {point} — {plan.detail or kind.describe(point)}")
            self.copy = copy
            kind.run(self, plan)

    def finish(self) -> None:
        """What is counted whatever ended the cell: the ledger's effects against the
        baseline's (every repeat), the contract checks on what ran."""
        if self.work is None:
            return
        # A request the cassette never recorded, before what it explains.
        self.findings = with_history(self.findings, self.work / MODEL_STATE)
        entries = self.ledger()
        counted = count_effects(self.base.effects, effects(entries))
        self.duplicates = counted.duplicates
        self.findings += effect_findings(
            counted,
            self.allowed,
            judged=self.judged,
            evidence=ledger_lines(entries, self.wall0),
            left_out=self.left_out,
        )
        self.findings += contract.idempotency(entries, self.base.effects)
        scenario = resolve_scenario(self.cell.scenario)
        # The same checks the baseline was held to: what it showed as it is here is the
        # row's finding, not this cell's.
        checked = contract.without_crash(
            scenario,
            self.final if self.judged else None,
            entries,
            requested_turns(self.work / MODEL_STATE),
        )
        # The history of every worker of the cell, held to the same rules as the baseline's.
        mode = find(self.adapter.modes, self.cell.mode)
        checked += history_rules.check(
            self.history(),
            self.final if self.judged else None,
            replays=bool(mode and mode.replays_replies),
            durable=bool(mode is None or mode.durable),
            uninterrupted=False,
        )
        self.findings += contract.added_by_crash(checked, self.base.findings)

    def result(self) -> CellResult:
        self.findings = ranked(self.findings)
        verdict, expected = verdict_of(self.findings)
        detail = headline(self.findings)
        if self.matched is not None and not expected:
            others = [f.kind for f in self.findings if not f.expected and f.verdict != "ok"]
            said = self.timeline[self.matched]
            self.timeline[self.matched] = said._replace(
                text=f"{said.text}; the verdict comes from what else was found: "
                f"{', '.join(dict.fromkeys(others))}"
            )
        self.event(
            f"verdict: {verdict}, {'expected' if expected else 'unexpected'}"
            + (f": {detail}" if detail else "")
        )
        tails = (
            "".join(log_tail(self.work, w.spec.log_name) for w in self.workers) if self.work else ""
        )
        return CellResult(
            id=self.cell.id,
            runtime=self.cell.runtime,
            scenario=self.cell.scenario,
            mode=self.cell.mode,
            store=self.cell.store,
            schedule=[str(p) for p in self.cell.schedule],
            verdict=verdict,
            expected=expected,
            duplicates=self.duplicates,
            bound=sum(self.allowed.values()),
            detail=detail,
            findings=[f.to_json() for f in self.findings],
            sides={"expected": self.sides.expected, "actual": self.sides.actual},
            diff=self.diff,
            store_at_crash=(
                {**(self.store_at_crash or {}), **self.kind_evidence}
                if self.kind_evidence
                else self.store_at_crash
            ),
            stderr_tail=tails[-4000:],
            timeline=self.timeline,
            exit_codes=[w.exitcode for w in self.workers],
            replay=self.cell.replay_command(self.options()),
        )

    def cleanup(self, expected: bool, cut_short: bool = False) -> Path | None:
        """Stop what is left of the cell; returns its work folder if that is kept. A cell
        `cut_short` by an interrupt is in no report, so nothing of it is kept."""
        self.caller.close()
        for w in self.workers:
            if w.alive:
                w.kill()
        if self.workers:
            # What its workers left running (children that called setsid, or stayed in
            # a group whose leader exited) dies with the cell.
            kill_left_behind()
        keep = self.engine.config.keep
        wanted = not cut_short and (keep == "all" or (keep == "failed" and not expected))
        kept = self.work if wanted else None
        if self.url:
            if kept is not None:
                # A store outside the folder (a PostgreSQL schema) stays with it; the
                # folder says where it is.
                self.engine.keep_store(self.url, kept)
            else:
                self.engine.forget_store(self.url)
        if self.work is not None:
            self.engine.settle_folder(self.work, keep=kept is not None)
        return kept

    duplicates = 0
    final: dict[str, Any] | None = None  # the session compare() judged
    matched: int | None = None  # the timeline's "matches ..., field by field" event


def ledger_lines(entries: Sequence[ledger_mod.Entry], zero: float) -> dict[Signature, list[str]]:
    """Per call, the ledger's records of its effects, as evidence lines, each at its time
    on the cell's clock (`zero`: the cell's start, time.time()), the clock its timeline
    has: a line reads "+1.3 s" where the timeline's events around it do."""
    lines: dict[Signature, list[str]] = {}
    for e in entries:
        if e.phase == "started" and e.effect:
            key = f", key {e.key}" if e.key else ""
            lines.setdefault(e.effect_signature, []).append(
                f"{e.tool} started by pid {e.pid} at {offset(e.at - zero)}{key}"
            )
    return lines


def log_tail(work: Path | None, log_name: str, lines: int = LOG_TAIL_LINES) -> str:
    if work is None:
        return ""
    try:  # only the end of the file: a worker may have written hundreds of megabytes
        with open(work / f"{log_name}.log", "rb") as f:
            f.seek(max(0, f.seek(0, os.SEEK_END) - LOG_TAIL_BYTES))
            text = f.read(LOG_TAIL_BYTES).decode("utf-8", "replace")
    except FileNotFoundError:
        return ""
    tail = "\n".join(line[-LOG_LINE_CHARS:] for line in text.splitlines()[-lines:])
    return f"\n--- {log_name} stderr ---\n{tail}" if tail else ""


__all__ = ["CellOver", "CellRun", "log_tail"]
