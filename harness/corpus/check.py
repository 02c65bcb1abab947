"""`corpus check`: restore each kept state, resume it with the code installed now, judge.

Each state is restored into a fresh cell folder (the store as the kill left it, the
ledger, the model's state), read with the checking version's adapter, and resumed by one
fresh worker, as a matrix cell's resumer is. The resumed session is held to the checking
version's own baseline of the same scenario (run once per row, as the matrix does); the
ledger's effects after the restore are held to what the old worker had done. The bound
is the matrix's: a call whose effect happened but whose result was not durable at the
kill may run once more.
"""

from __future__ import annotations

import functools
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from killpoint.adapters.blame import charged, checked_problems, checked_progress
from killpoint.corpus import files, groups, snapshot
from killpoint.corpus import manifest as mf
from killpoint.engine.engine import SESSION_ID, Engine
from killpoint.engine.options import EngineConfig
from killpoint.errors import AdapterFault, CorpusError, Interrupted, StoreLeftover
from killpoint.judge.baseline import Baseline, durable_results, effects
from killpoint.judge.oracle import Sides, comparable, compare_sessions
from killpoint.scenarios import ledger as ledger_mod
from killpoint.scenarios import versions
from killpoint.values.cell import Row
from killpoint.values.findings import Finding
from killpoint.values.scenario_refs import resolve_scenario
from killpoint.values.sentences import count
from killpoint.values.timeline import Event
from killpoint.workers.processes import Worker
from killpoint.workers.worker import LEDGER

Signature = tuple[str, str]
UNFINISHED = frozenset({"RUNNING", "PENDING"})
SIDES = Sides("checking version's baseline", "resumed run")


@dataclass
class StateResult:
    id: str
    recorded_as: str  # scenario reference and version it was recorded with
    checked_as: str  # the reference it was checked with
    mode: str
    point: str
    group: str
    sentence: str
    details: list[str] = field(default_factory=list)
    recorded_verdict: str = ""
    seconds: float = 0.0

    @property
    def failing(self) -> bool:
        return groups.BY_NAME[self.group].failing

    @property
    def failed_before(self) -> bool:
        """The recording version's own cell at this point was not ok: what fails here
        may owe nothing to the upgrade (compare with a check under the recording code)."""
        return self.recorded_verdict not in ("", "ok")

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "recorded_as": self.recorded_as,
            "checked_as": self.checked_as,
            "mode": self.mode,
            "point": self.point,
            "group": self.group,
            "failing": self.failing,
            "sentence": self.sentence,
            "details": self.details,
            "recorded_verdict": self.recorded_verdict,
            "failed_before": self.failed_before,
            "seconds": round(self.seconds, 4),
        }


@dataclass
class CheckResult:
    corpus: Path
    recorded: mf.Versions
    checking: mf.Versions
    states: list[StateResult] = field(default_factory=list)
    seconds: float = 0.0

    def counts(self) -> dict[str, int]:
        found = Counter(s.group for s in self.states)
        return {g.name: found[g.name] for g in groups.GROUPS if found[g.name]}

    @property
    def failing(self) -> list[StateResult]:
        return [s for s in self.states if s.failing]

    @property
    def control(self) -> bool:
        """Checked with the versions that recorded it: a control, named so."""
        return self.recorded == self.checking

    def version_rows(self) -> list[tuple[str, str, str, bool]]:
        """(name, recorded, checked, changed) for killpoint, Python, the runtime and every
        other library either side names (each once: a library list that names killpoint
        or Python too does not add a second row)."""
        rec, now = self.recorded, self.checking
        rows = [("killpoint", rec.killpoint, now.killpoint), ("python", rec.python, now.python),
                ("runtime", rec.runtime, now.runtime)]  # fmt: skip
        named = {name.lower() for name, _, _ in rows}
        for lib in sorted(set(rec.libraries) | set(now.libraries)):
            if lib.lower() in named:
                continue
            rows.append((lib, rec.libraries.get(lib, "-"), now.libraries.get(lib, "-")))
        return [(name, a, b, a != b) for name, a, b in rows]

    def to_json(self) -> dict[str, Any]:
        return {
            "corpus": str(self.corpus),
            "recorded": self.recorded.__dict__,
            "checking": self.checking.__dict__,
            "counts": self.counts(),
            "seconds": round(self.seconds, 3),
            "states": [s.to_json() for s in self.states],
        }


def checked_ref(info: mf.StateInfo, scenario_version: str | None) -> str:
    """The scenario a state is resumed under: its recorded reference, or the version
    asked for of the same scenario."""
    if scenario_version is None:
        return info.scenario
    name, _ = versions.split(info.scenario)
    return (
        name
        if scenario_version == resolve_scenario(name).version
        else (f"{name}{versions.SEPARATOR}{scenario_version}")
    )


def repeated(
    before: Counter[Signature],
    after: Counter[Signature],
    baseline: Counter[Signature],
    allowed: Counter[Signature],
) -> Counter[Signature]:
    """Effects the resumed run did again that the old worker had done, beyond what the
    checking version's baseline does itself and beyond the bound."""
    found: Counter[Signature] = Counter()
    for sig, again in after.items():
        old = before[sig]
        beyond = old + again - baseline[sig]
        n = min(again, old, beyond) - allowed[sig]
        if n > 0:
            found[sig] = n
    return found


def unreadable(fault: AdapterFault, when: str) -> tuple[str, str, list[str]]:
    """What a read through the checking version's adapter that failed comes to: raising
    on the old rows is the checking version's (its runtime's loader, or its adapter,
    cannot take them); an answer outside the Protocol is its adapter's alone."""
    if fault.raised:
        return ("store-unreadable", f"{when}: {fault}", list(fault.evidence))
    return ("adapter-error", f"{when}: {fault}; nothing is said of the runtime", [])


def matching_store(corpus: Path, kept: str, store: str) -> None:
    """A corpus's states restore only into the kind of store that kept them: CorpusError
    naming the option that fits."""
    from killpoint.stores import store_kind

    given = store_kind(store)
    if given == kept:
        return
    fix = (
        "check it without --store (each state restores into a SQLite file)"
        if kept == "sqlite"
        else "give --store postgresql+psycopg://USER@HOST:PORT/DBNAME (a server to restore into)"
    )
    raise CorpusError(
        f"killpoint: corpus {str(corpus)!r} holds {kept} states and the store given is "
        f"{given}; {fix}"
    )


class Checker:
    """Checks states of one corpus under one runtime, sharing baselines per row."""

    def __init__(
        self,
        corpus: Path,
        runtime: str,
        *,
        scenario_version: str | None = None,
        timeout: float = 30.0,
        work_parent: Path | None = None,
        store: str = "sqlite",
    ) -> None:
        self.corpus = corpus
        self.manifest = mf.read_manifest(corpus)
        matching_store(corpus, self.manifest.store, store)
        self.runtime = runtime
        self.scenario_version = scenario_version
        self.engine = Engine(EngineConfig(store=store, timeout=timeout, work_parent=work_parent))
        self.adapter = self.engine.adapter(runtime)

    def states(self) -> list[tuple[Path, mf.StateInfo]]:
        found = []
        for sid in self.manifest.states:
            folder = files.inside(self.corpus, mf.STATES, mf.folder_name(sid))
            info = mf.read_state(folder)
            if info.id != sid:
                raise CorpusError(
                    f"killpoint: {str(folder / mf.STATE)!r} is state {info.id!r}, but the "
                    f"manifest lists it as {sid!r}"
                )
            found.append((folder, info))
        return found

    def validate(self) -> list[tuple[Path, mf.StateInfo]]:
        """Every state, read, and its folder read as data (killpoint.corpus.snapshot.check:
        no link, no file over its limit, a PostgreSQL state in the form, line by line);
        each scenario it is to be resumed under resolves (a version its scenario does not
        declare is bad input). CorpusError before anything runs."""
        found = self.states()
        for folder, _ in found:
            snapshot.check(folder, self.manifest.store)
        for ref in dict.fromkeys(checked_ref(info, self.scenario_version) for _, info in found):
            resolve_scenario(ref)
        return found

    def versions(self) -> mf.Versions:
        return mf.versions_now(self.runtime, self.adapter.preload_modules)

    @functools.cached_property
    def control(self) -> bool:
        """Checked with the versions that recorded the corpus (killpoint, Python, the
        runtime and its libraries): a control, not an upgrade."""
        return self.versions() == self.manifest.versions

    def _read(self, url: str) -> tuple[dict[str, Any] | None, list[Finding], int]:
        """The session, what inspect finds and the checkpoints held, through the adapter;
        AdapterFault for what it raised or answered outside its Protocol."""
        session = self.engine.read_session(self.runtime, url)
        found = checked_problems(charged("inspect()", self.adapter.inspect)(url, SESSION_ID))
        held = checked_progress(charged("progress()", self.adapter.progress)(url, SESSION_ID))
        problems = [
            p if isinstance(p, Finding) else Finding("store-invariant", p, path="store")
            for p in found
        ]
        return session, problems, held

    def check(self, folder: Path, info: mf.StateInfo) -> StateResult:
        t0 = time.monotonic()
        ref = checked_ref(info, self.scenario_version)
        result = StateResult(
            id=info.id,
            recorded_as=f"{info.scenario} (version {info.scenario_version})",
            checked_as=ref,
            mode=info.mode,
            point=info.point,
            group="ok",
            sentence="",
            recorded_verdict=info.recorded_verdict,
        )
        try:
            found = self._check(folder, info, ref)
        except (Interrupted, CorpusError):
            raise  # Ctrl-C; a state that is not data (the command refuses the corpus)
        except Exception as exc:
            found = [
                (
                    "error",
                    f"killpoint failed on this state: {type(exc).__name__}: {exc}",
                    traceback.format_exc().splitlines()[-8:],
                )
            ]
        if self.control and ref == info.scenario:
            # No version changed, the scenario's neither: nothing here is "after upgrade".
            found = [(groups.CONTROL.get(g, g), sentence, more) for g, sentence, more in found]
        names = [g for g, _, _ in found]
        result.group = groups.worst(names)
        for g, sentence, details in found:
            if g == result.group and not result.sentence:
                result.sentence = sentence
            result.details += details
        result.seconds = time.monotonic() - t0
        return result

    def _check(
        self, folder: Path, info: mf.StateInfo, ref: str
    ) -> list[tuple[str, str, list[str]]]:
        row = (self.runtime, ref, info.mode, self.manifest.store)
        base = self.engine.baseline(row)
        if base.problem_kind == "adapter-error":
            # The baseline failed in the adapter's read, not in the runtime's run.
            return [("adapter-error", f"{base.problem}; nothing is said of the runtime", [])]
        if base.problem or base.nondeterministic:
            return [("no-baseline", base.problem or base.nondeterministic or "", [])]
        work = self.engine.work_dir(f"corpus-{mf.folder_name(info.id)}")
        url = self.engine.stores.fresh(work)
        try:
            return self._resume(folder, info, row, base, work, url)
        finally:
            self.engine.forget_store(url)
            self.engine.settle_folder(work, keep=False)

    def _resume(
        self,
        folder: Path,
        info: mf.StateInfo,
        row: Row,
        base: Baseline,
        work: Path,
        url: str,
    ) -> list[tuple[str, str, list[str]]]:
        snapshot.restore(folder, work, url, self.engine.stopping)
        old_entries = ledger_mod.read(work / LEDGER)
        try:
            before, found_there, held = self._read(url)
        except AdapterFault as exc:
            return [unreadable(exc, "the checking version cannot read the store")]
        # As after a matrix cell's crash: only what breaks an invariant stops the resume
        # (an inconsistency that changes nothing a resume does is a detail).
        problems = [p.sentence for p in found_there if p.verdict != "ok"]
        if problems and info.recorded_verdict == "corrupt":
            return [
                (
                    "broken-when-recorded",
                    f"the store was broken when recorded (the recording cell: corrupt): "
                    f"{problems[0]}",
                    problems,
                )
            ]
        if problems:
            return [
                (
                    "store-unreadable",
                    f"the checking version finds the store broken: {problems[0]}",
                    problems,
                )
            ]
        runs = list((before or {}).get("runs", {}).values())
        if info.run_index >= len(runs):
            return [
                (
                    "store-unreadable",
                    f"run {info.run_index + 1}, in the store the recording "
                    "version left, is not there as the checking version reads it",
                    [],
                )
            ]
        status = runs[info.run_index]["status"]
        step: dict[str, Any] | None = {"resume_at": info.run_index}
        if status == "CANCELLED":
            step = None
        elif status == "COMPLETED":
            inputs = len(resolve_scenario(row[1]).inputs)
            step = None if info.run_index + 1 >= inputs else {"start_at": info.run_index + 1}
        outcome = "done"
        detail = ""
        if step is not None:
            timeline: list[Event] = []
            worker = Worker(
                self.engine.worker_spec(
                    row, url, work, log_name="resumer", checkpoint_offset=held, **step
                ),
                timeline,
                time.monotonic(),
                self.engine.stopping,
            )
            out = worker.join(time.monotonic() + self.engine.config.timeout)
            if out.kind == "interrupted":
                raise Interrupted()
            if out.kind == "timeout":
                return [("hung", f"the resumer passed its time limit ({out.detail})", [])]
            outcome, detail = out.kind, out.detail
        try:
            final, after, held_after = self._read(url)
        except AdapterFault as exc:
            return [unreadable(exc, "the store cannot be read after the resume")]
        new_entries = ledger_mod.read(work / LEDGER)[len(old_entries) :]
        allowed = effects(old_entries) - durable_results(before)
        again = repeated(effects(old_entries), effects(new_entries), base.effects, allowed)
        found: list[tuple[str, str, list[str]]] = []
        if again:
            lines = [f"{tool}({args}) x{n}" for (tool, args), n in sorted(again.items())]
            found.append(
                (
                    "effect-repeated-after-upgrade",
                    f"the resumed run repeated {count(sum(again.values()), 'side effect')} the old worker "
                    f"had done: {', '.join(lines[:3])}",
                    lines,
                )
            )
        if outcome != "done":
            changed = comparable(before) != comparable(final) or held_after != held
            did = sum(1 for e in new_entries if e.phase == "started" and e.effect)
            if not changed and not did:
                found.append(
                    (
                        "fails-closed",
                        f"the resume was refused ({outcome}): "
                        f"{detail.splitlines()[0] if detail else ''}".rstrip(": "),
                        [],
                    )
                )
            else:
                what = "changed the store" if changed else f"did {count(did, 'side effect')}"
                found.append(
                    (
                        "diverged-after-upgrade",
                        f"the resume failed ({outcome}: {detail[:200]}) after it {what}",
                        [],
                    )
                )
            return found
        unfinished = [
            f"run {n + 1} is {r['status']}"
            for n, r in enumerate((final or {}).get("runs", {}).values())
            if r["status"] in UNFINISHED
        ]
        if unfinished:
            found.append(("stranded", f"the resumer ended and {unfinished[0]}", unfinished))
        broken = [p.sentence for p in after if p.verdict != "ok"]
        if broken:
            found.append(
                (
                    "diverged-after-upgrade",
                    f"after the resume the store breaks an invariant: {broken[0]}",
                    broken[1:],
                )
            )
        diffs = compare_sessions(base.session, final, SIDES)
        if diffs:
            found.append(
                ("diverged-after-upgrade", diffs[0].sentence, [d.sentence for d in diffs[1:6]])
            )
        return found


def check(
    corpus: Path,
    runtime: str,
    *,
    scenario_version: str | None = None,
    timeout: float = 30.0,
    workers: int = 2,
    only: Iterable[str] | None = None,
    work_parent: Path | None = None,
    store: str = "sqlite",
    on_state: Callable[[StateResult], None] = lambda r: None,
    leftovers: list[StoreLeftover] | None = None,
) -> CheckResult:
    """Check every state of `corpus` (or the ids in `only`) under `runtime` now, restoring
    into `store` (sqlite, or the PostgreSQL server of a corpus recorded on one).

    CorpusError when the corpus, or a state met while restoring, is not data this
    killpoint reads: the states in flight stop, as on Ctrl-C. However it ends, each
    store made for a state is removed; one that cannot be (the server gone) is added to
    `leftovers`, with the statement that drops it, for the caller to name."""
    t0 = time.monotonic()
    checker = Checker(
        corpus,
        runtime,
        scenario_version=scenario_version,
        timeout=timeout,
        work_parent=work_parent,
        store=store,
    )
    wanted = set(only) if only is not None else None
    chosen = [(f, s) for f, s in checker.validate() if wanted is None or s.id in wanted]
    result = CheckResult(corpus, checker.manifest.versions, checker.versions())

    def one(item: tuple[Path, mf.StateInfo]) -> StateResult:
        r = checker.check(*item)
        on_state(r)
        return r

    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="corpus")
    try:
        result.states = list(pool.map(one, chosen))
    except BaseException:
        # Ctrl-C, or a state that is no data: the states in flight stop at their next
        # step (a restore checks between statements and chunks), and none starts.
        checker.engine.stopping.set()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        checker.engine.sweep()
        left = checker.engine.retry_leftovers()
        if leftovers is not None:
            leftovers.extend(left)
    result.seconds = time.monotonic() - t0
    return result


__all__ = [
    "CheckResult",
    "Checker",
    "StateResult",
    "check",
    "checked_ref",
    "matching_store",
    "repeated",
]
