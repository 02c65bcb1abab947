"""The `crash` fixture's work: run the crash matrix of a user's own runtime and scenarios
inside a test, and say which cells went wrong.

The fixture itself is registered by killpoint.plugin.hooks (pytest finds fixtures in the
plugin module); this module is what it returns.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from killpoint.engine import option_table as table
from killpoint.engine.option_values import split_list
from killpoint.errors import UnnamedObject
from killpoint.plugin.failure_messages import finding_lines
from killpoint.plugin.keys import CHECKS_KEY, MARKER, RESULTS_KEY, SESSION_KEY
from killpoint.values import shown
from killpoint.values.sentences import count, plural_of

if TYPE_CHECKING:
    from killpoint.engine.campaign import CampaignConfig
    from killpoint.engine.stop_rule import Stopped
    from killpoint.values.cell import CellResult

# The keywords check() and run() take beside `runtime` and `scenario`: every option the
# table gives this front.
CHECK_KEYS = tuple(o.name for o in table.on(table.CHECK) if o.name != "runtime")
# Those that set no campaign field: the fixture's own (`cassette`: killpoint.plugin.cassettes).
OWN_KEYS = tuple(o.name for o in table.on(table.CHECK) if o.sets is None)
# How an error that names where the option was given begins (_unknown_options).
NAMING_WHERE = (f"killpoint: @pytest.mark.{MARKER} ", "killpoint: crash.check ")
SHOWN_ROWS = 8  # of a stopped check's rows not wholly covered, named in its message


@dataclass
class CrashResults:
    """What one `crash.check` found: every cell's result, and what kept cells from running."""

    runtime: str
    scenarios: tuple[str, ...]
    seed: int
    cells: list[CellResult]
    problems: list[str] = field(default_factory=list)  # baselines that could not run
    # Row-level findings (not accepted): the uninterrupted run already breaks the contract.
    without_crash: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    recorded: list[str] = field(default_factory=list)  # cassettes recorded before the run
    stale: bool = False  # a baseline found its cassette stale
    seconds: float = 0.0
    work_root: Path | None = None
    # Set when `fail_fast` or `budget` stopped the check before its plan was done: why,
    # and what it covered (the cells not run are not in `cells`).
    stopped: Stopped | None = None

    @property
    def unexpected(self) -> list[CellResult]:
        """The cells that fail the check: unexpected and not accepted."""
        return [c for c in self.cells if c.failing]

    @property
    def ok(self) -> bool:
        """Every cell's verdict was expected, every baseline ran, and there were cells."""
        return (
            bool(self.cells)
            and not self.unexpected
            and not self.problems
            and not self.without_crash
        )

    def verdicts(self) -> dict[str, str]:
        return {c.id: c.verdict for c in self.cells}

    def __iter__(self) -> Iterator[CellResult]:
        return iter(self.cells)

    def __len__(self) -> int:
        return len(self.cells)

    def __str__(self) -> str:
        by: dict[str, int] = {}
        for c in self.cells:
            by[c.verdict] = by.get(c.verdict, 0) + 1
        counts = ", ".join(f"{n} {v}" for v, n in sorted(by.items())) or "no cells"
        return (
            f"killpoint: {self.runtime} on {', '.join(self.scenarios)}: "
            f"{count(len(self.cells), 'cell')} ({counts}), {len(self.unexpected)} unexpected, "
            f"seed {self.seed}"
        )

    def failure_message(self) -> str:
        lines = [str(self), *(f"  {line}" for line in self.recorded)]
        if self.stopped is not None:
            lines.append(f"  stopped: {self.stopped.sentence()}")
            lines += [f"    {line}" for line in self.stopped.partial_lines(SHOWN_ROWS)]
        if not self.cells and not self.problems and self.stopped is None:
            if self.skipped:
                lines.append("  no cells ran; skipped:")
                lines += [f"    {why}" for why in dict.fromkeys(self.skipped)]
            else:
                lines.append("  no cells: the selection planned nothing (check points= and modes=)")
        for p in self.problems:
            lines.append(f"  baseline failed: {p}")
        for w in self.without_crash:
            lines.append(f"  without a crash: {w}")
        for c in self.unexpected:
            lines.append(f"  {c.verdict:<11} {c.id}")
            lines += [line[:320] for line in finding_lines(c, " " * 14, limit=4)]
            lines.append(f"              replay: {c.replay}")
        if self.stale:
            lines.append("  record the cassette again: pytest --crash-record-mode=rewrite")
        if self.unexpected or self.problems or self.without_crash:
            lines.append(f"  rerun with --crash-seed {self.seed}")
            if self.work_root is not None:
                lines.append(f"  kept cells (store, ledger, worker logs) under {self.work_root}")
        return "\n".join(shown.line(each) for each in lines)


def _unknown_options(source: str, unknown: list[str], known: Sequence[str]) -> str:
    """`killpoint: SOURCE got unknown option 'mode'; did you mean 'modes'? choose from ...`"""
    from killpoint.values.near import nearest

    near = [m for m in (nearest(u, known) for u in unknown) if m is not None]
    guess = f"; did you mean {' or '.join(repr(m) for m in dict.fromkeys(near))}?" if near else ";"
    return (
        f"killpoint: {source} got unknown {plural_of('option', unknown)} "
        f"{', '.join(repr(u) for u in unknown)}{guess} choose from {', '.join(known)}"
    )


class Crash:
    """The `crash` fixture: run the crash matrix of your own runtime and scenarios.

    `check()` fails the test, listing each unexpected cell with its replay command;
    `run()` only returns the results. Arguments default to the test's `killpoint` marker,
    then to the --crash-... options and ini values.
    """

    def __init__(
        self, request: pytest.FixtureRequest, tmp_path: Path, cassette: Path | None = None
    ) -> None:
        self.request = request
        self.tmp_path = tmp_path
        self.cassette = cassette  # a crash_cassettes item's (killpoint.plugin.cassettes)
        self.state = request.config.stash[SESSION_KEY]
        self._runs = 0

    @property
    def store(self) -> str:
        """The store this process runs cells on (under xdist: this worker's database)."""
        return self.state.store_url()

    def check(self, runtime: Any = None, scenario: Any = None, **options: Any) -> CrashResults:
        __tracebackhide__ = True
        results = self.run(runtime, scenario, **options)
        if not results.ok:
            pytest.fail(results.failure_message(), pytrace=False)
        return results

    def run(self, runtime: Any = None, scenario: Any = None, **options: Any) -> CrashResults:
        __tracebackhide__ = True
        from killpoint.engine.campaign import Campaign
        from killpoint.errors import ConfigError, OptionError

        problem = None
        recorded: list[str] = []
        try:
            config = self._config(runtime, scenario, options, recorded)
            config.check()
        except OptionError as exc:
            key = "scenario" if exc.option == "scenarios" else exc.option
            problem = exc.text(f"crash.check {key}")
        except ConfigError as exc:
            # One that names where it was given (the marker, or the call) says so itself.
            text = str(exc)
            problem = text if text.startswith(NAMING_WHERE) else f"{text} (in crash.check)"
        if problem is not None:
            # Outside the except clause: the failure is one line, without the option
            # error chained to it as "During handling of the above exception".
            pytest.fail(shown.line(problem), pytrace=False)
        campaign = Campaign(config, accepted=self.state.accepted(config.runtime))
        outcome = campaign.run()
        if outcome.interrupted:
            raise KeyboardInterrupt
        results = CrashResults(
            runtime=config.runtime,
            scenarios=config.scenario_names(),
            seed=campaign.seed,
            cells=list(outcome.cells),
            problems=[
                f"{b.runtime}/{b.scenario}/{b.mode}: {b.problem}"
                for b in outcome.baselines
                if b.problem
            ],
            without_crash=[
                f"{g.example_cell}: {g.kind}: {g.example} (group {g.key}, {count(len(g.cells), 'row')})"
                for g in outcome.failing_rows
            ],
            skipped=[f"{s.scenario}/{s.mode}: {s.reason}" for s in outcome.skipped],
            recorded=recorded,
            stale=any(b.problem_kind == "cassette-stale" for b in outcome.baselines),
            seconds=outcome.seconds,
            work_root=config.work_root if config.keep != "none" else None,
            stopped=outcome.stopped,
        )
        node = self.request.node
        node.stash.setdefault(RESULTS_KEY, []).extend(results.cells)
        stopped = None if results.stopped is None else results.stopped.sentence()
        node.stash.setdefault(CHECKS_KEY, []).append({"seed": results.seed, "stopped": stopped})
        node.user_properties += [
            ("killpoint_cells", len(results.cells)),
            ("killpoint_unexpected", len(results.unexpected)),
            ("killpoint_seed", results.seed),
            *([("killpoint_stopped", stopped)] if stopped else []),
        ]
        node.user_properties += [
            (f"killpoint {c.id}", f"{c.verdict}; replay: {c.replay}") for c in results.unexpected
        ]
        return results

    def check_upgrade(
        self, corpus: Any, runtime: Any = None, *, scenario_version: str | None = None
    ) -> Any:
        """Resume every state of a crash-state corpus with the code here; fail the test
        naming each state that did not resume as today's baseline ends, or fail closed."""
        __tracebackhide__ = True
        from killpoint.plugin.corpus_items import check_upgrade

        name = "reference" if runtime is None else self._reference(runtime, "runtime")
        return check_upgrade(
            corpus, name, scenario_version=scenario_version, work_parent=self.tmp_path
        )

    def _config(
        self,
        runtime: Any,
        scenario: Any,
        options: dict[str, Any],
        recorded: list[str] | None = None,
    ) -> CampaignConfig:
        """The check's campaign; a cassette it names is recorded first where the record
        mode asks (what was recorded is added to `recorded`)."""
        from killpoint.errors import ConfigError

        marker_args: dict[str, Any] = {}
        for mark in reversed(list(self.request.node.iter_markers(MARKER))):
            positional = dict(zip(("runtime", "scenario"), mark.args, strict=False))
            marker_args.update(positional, **mark.kwargs)
        merged = {**marker_args, **{k: v for k, v in options.items() if v is not None}}
        if runtime is not None:
            merged["runtime"] = runtime
        if scenario is not None:
            merged["scenario"] = scenario
        known = ("runtime", "scenario", *CHECK_KEYS)
        given = {k for k, v in options.items() if v is not None}
        for source, keys in ((f"@pytest.mark.{MARKER}", set(marker_args)), ("crash.check", given)):
            # Named where the typo is: the marker's keywords are not the call's.
            unknown = sorted(keys - set(known))
            if unknown:
                raise ConfigError(_unknown_options(source, unknown, known))
        overrides: dict[str, Any] = {
            # This process's share of the cores (the table says why no front sets it).
            "workers": self.state.parallel(),
            **{k: v for k, v in merged.items() if k in CHECK_KEYS and k not in OWN_KEYS},
        }
        if "runtime" in merged:
            overrides["runtime"] = self._reference(merged["runtime"], "runtime")
        names: list[Any] = []
        cassette = merged.get("cassette", self.cassette)
        if cassette is not None:
            # The cassette is the scenario; a scenario= beside it is what a missing
            # cassette is recorded from.
            from killpoint.plugin import cassettes

            path = cassettes.cassette_path(self.request.path, cassette)
            source = merged.pop("scenario", None)
            done = cassettes.prepare(
                path,
                self.state.record_mode(),
                overrides.get("runtime") or self.state.campaign_config().runtime,
                None if source is None else self._reference(source, "scenario"),
            )
            if done is not None and recorded is not None:
                recorded.append(done.line)
            names.append(f"cassette:{path}")
        if "scenario" in merged:
            names.append(merged["scenario"])
        if "scenarios" in merged:
            given = merged["scenarios"]
            names += split_list(given) if isinstance(given, str) else list(given)
        if names:
            overrides["scenarios"] = tuple(self._reference(n, "scenario") for n in names)
        if merged.get("store") is None:
            overrides["store"] = self.state.store_url()
        self._runs += 1
        overrides["work_root"] = self.tmp_path / f"killpoint-{self._runs}"
        return self.state.campaign_config(**overrides)

    def _reference(self, obj: Any, kind: str) -> str:
        """An import path for `obj` (workers import runtimes and scenarios by name)."""
        if isinstance(obj, str):
            return obj
        # Where it is defined first (an adapter's factory, a scenario's script), the test
        # module last: the path should read like the user's own code.
        inner = [getattr(obj, attr, None) for attr in ("factory", "script", "tools")]
        names = [getattr(o, "__module__", "") for o in (*inner, obj)]
        candidates = [sys.modules.get(n or "") for n in names] + [self.request.module]
        for module in filter(None, candidates):
            for name, value in vars(module).items():
                if value is obj and not name.startswith("_"):
                    return f"{module.__name__}:{name}"
        raise UnnamedObject(
            f"killpoint: cannot find {obj!r} at the top level of a module; pass the {kind} as "
            "an import path 'package.module:name' (worker processes import it by name)"
        )


__all__ = ["CHECK_KEYS", "OWN_KEYS", "Crash", "CrashResults"]
