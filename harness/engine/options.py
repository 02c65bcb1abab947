"""A campaign's configuration: its options as killpoint.engine.option_table declares them,
read once for the CLI, the pytest plugin and `crash.check` alike, and checked against the
environment; and the engine's view of it (EngineConfig).

`CampaignConfig.from_options(...)` takes the values as a user gives them (text from a
command line or an ini file, or Python values) and returns a checked configuration, or
raises OptionError naming the option, the value, why, and the choices. Each front end
prints that error with its own name for the option (`--modes`, `--crash-modes`,
`ini option crash_modes`, `crash.check modes`); the rest of the sentence is the same
everywhere.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from killpoint.engine import option_table as table
from killpoint.engine.option_table import default_of
from killpoint.engine.option_values import (
    PointSelection,
    default_workers,
    parse_points,
    split_list,
)
from killpoint.errors import ConfigError, OptionError
from killpoint.values.near import nearest
from killpoint.values.sentences import plural_of

if TYPE_CHECKING:
    from killpoint.values.shard import Shard


@dataclass
class EngineConfig:
    """The engine's view of a campaign (CampaignConfig.engine_config()): the options it
    reads, with the table's defaults, and a few of its own."""

    store: str = default_of("store")
    timeout: float = default_of("timeout")  # per worker
    confirm_timeout: float = 5.0
    keep: str = default_of("keep")  # none | failed | all
    work_root: Path | None = None  # the cells' folders go right here
    work_parent: Path | None = None  # or in a new killpoint-* folder here (work_root.py)
    lease_seconds: float = 30.0
    # How the scripted model answers every turn re-asked after a crash, in every cell
    # (scenarios.behaviours); None: as the first time, except where a point's kind says.
    model_behaviour: str | None = None
    # Which unsynced operations a power-loss point's cut keeps (killpoint.powerloss.cut_models).
    cut: str = default_of("cut")
    # Baselines record the store's file-system operations (fs-op points are planned), and
    # how many per checkpoint the points take (--fs-ops: all, syncs or a number).
    fs_trace: bool = False
    fs_ops: str = default_of("fs_ops")
    # Cells at work at once (killpoint.engine.slots); None: as many as ask (a cell replayed
    # alone waits for no slot).
    workers: int | None = None


@dataclass
class CampaignConfig:
    """One campaign's options, each field an option of killpoint.engine.option_table (its
    default read from there): `from_options` reads them as any front gives them."""

    runtime: str = default_of("runtime")
    scenarios: tuple[str, ...] = default_of("scenarios")  # empty: every built-in
    modes: tuple[str, ...] = default_of("modes")  # empty: every mode the runtime can run
    points: PointSelection = default_of("points")
    depth: int = default_of("depth")
    seed: int | None = default_of("seed")
    store: str = default_of("store")
    workers: int = default_of("workers")
    timeout: float = default_of("timeout")
    keep: str = default_of("keep")
    work_root: Path | None = default_of("work_root")  # the cells' folders go right here
    work_parent: Path | None = default_of("work_parent")  # or in a new killpoint-* folder
    # fast: a row's kill cells resume from one traced worker's copies (engine/row_trace.py);
    # real: each cell starts and SIGKILLs a worker of its own.
    kills: str = default_of("kills")
    model_behaviour: str | None = default_of("model_behaviour")  # scenarios/behaviours.py
    shard: Shard | None = default_of("shard")  # run only this shard's cells (values/shard.py)
    cut: str = default_of("cut")  # power-loss points' cut model (powerloss/cut_models.py)
    fs_ops: str = default_of("fs_ops")  # fs-op points per checkpoint (kinds/fs_ops.py)
    order: str = default_of("order")  # which cells run first (engine/run_order.py)
    fail_fast: bool = default_of("fail_fast")  # stop at the first unexpected cell
    budget: float | None = default_of("budget")  # seconds of cells, then stop (stop_rule.py)

    def __post_init__(self) -> None:
        if isinstance(self.points, str):  # a configuration written in Python
            self.points = PointSelection(self.points.strip())

    def engine_config(self) -> EngineConfig:
        """The engine's view of this campaign: the fields it shares, never copied by hand."""
        shared = {f.name for f in fields(EngineConfig)} & {f.name for f in fields(self)}
        config = EngineConfig(**{name: getattr(self, name) for name in shared})
        from killpoint.kinds.fs_ops import KINDS

        wanted = set(KINDS)
        config.fs_trace = bool(
            wanted & set(self.points.kinds) or wanted & {p.kind for p in self.points.explicit}
        )
        return config

    @classmethod
    def from_options(cls, **given: Any) -> CampaignConfig:
        """Read every option given, by its name in the table (None: its default), with the
        table's reader; OptionError names the first bad one."""
        options = {o.name: o for o in table.campaign()}
        unknown = sorted(set(given) - set(options))
        if unknown:
            raise ConfigError(
                f"killpoint: unknown {plural_of('option', unknown)} {', '.join(unknown)}; "
                f"choose from {', '.join(options)}"
            )
        values: dict[str, Any] = {}
        for name, value in given.items():
            if value is not None:
                option = options[name]
                values[str(option.sets)] = option.parse(value)
        return cls(**values)

    def options(self) -> dict[str, Any]:
        """This configuration as options (by the table's names), for from_options."""
        return {o.name: getattr(self, str(o.sets)) for o in table.campaign()}

    def check(self, only: Iterable[str] | None = None) -> None:
        """Check against the environment what reading could not (the runtime imports and
        declares the modes asked for, the scenarios resolve, the store answers, the work
        folder is writable); `only`: just these options, by the table's names (the plugin
        checks what was given, so that a pytest session that runs no crash test imports
        nothing)."""
        from killpoint.workers.processes import socket_problem

        wanted = set(only) if only is not None else {o.name for o in table.campaign()}
        problem = socket_problem()
        if problem:
            raise ConfigError(problem)
        if wanted & {"runtime", "modes"}:
            adapter = runtime_adapter(self.runtime)
            declined_unknown(self.runtime, adapter)
            declared = [m.name for m in adapter.modes]
            for mode in self.modes:
                if mode not in declared:
                    raise OptionError(
                        "modes",
                        mode,
                        f"not a mode of runtime {self.runtime!r}",
                        declared,
                        near=nearest(mode, declared),
                    )
        if "scenarios" in wanted:
            for name in self.scenarios:
                scenario_ref(name)
        if "store" in wanted:
            from killpoint.errors import StoreError
            from killpoint.stores import backend_for

            try:
                backend_for(self.store).check()
            except StoreError as exc:
                from killpoint.stores import shown

                raise OptionError("store", shown(self.store), str(exc)) from None
        for key in ("work_root", "work_dir"):
            folder = getattr(self, str(table.option(key).sets))
            if folder is not None and key in wanted:
                from killpoint.engine.work_root import check_work_dir

                try:
                    check_work_dir(folder)
                except OSError as exc:
                    raise OptionError(
                        key,
                        str(folder),
                        f"cannot keep cells there ({exc.strerror or exc}); give a writable folder",
                    ) from None

    def validate(self) -> None:
        """Everything: what parsing checks, then the environment."""
        given = self.options()
        type(self).from_options(**{k: (None if v == () else v) for k, v in given.items()})
        self.check()

    def mode_names(self) -> tuple[str, ...]:
        """The modes asked for, or the runtime's runnable ones (its own names and order)."""
        from killpoint.adapters.registry import load_adapter
        from killpoint.values.modes import runnable

        return self.modes or runnable(load_adapter(self.runtime).modes)

    def scenario_names(self) -> tuple[str, ...]:
        from killpoint import scenarios

        return self.scenarios or tuple(scenarios.BUILTINS)


IMPORT_HINT = (
    "is the project importable from here? The killpoint command adds the folder it runs in "
    "to the end of sys.path: run it from the folder that holds the package; pytest adds "
    "none: set `pythonpath = .` in its ini file"
)


def declined_unknown(spec: str, adapter: Any) -> None:
    """An adapter that declines a point kind no registered kind is named (a misspelt kind
    would decline nothing, silently)."""
    from killpoint import kinds
    from killpoint.adapters.protocol import declined_kinds

    unknown = sorted(set(declined_kinds(adapter)) - set(kinds.REGISTRY))
    if unknown:
        raise OptionError(
            "runtime",
            spec,
            f"declined_kinds names unknown {plural_of('point kind', unknown)} {', '.join(unknown)}; "
            "choose from " + ", ".join(kinds.REGISTRY),
        )


def runtime_adapter(spec: str) -> Any:
    """The adapter for `spec`, or OptionError with what failed and the fix."""
    from killpoint.adapters.registry import load_adapter
    from killpoint.errors import AdapterError

    try:
        return load_adapter(spec)
    except AdapterError as exc:
        hint = f"; {IMPORT_HINT}" if _not_found(str(exc)) else ""
        raise OptionError("runtime", spec, f"{exc}{hint}") from None
    except Exception as exc:
        # A factory that needs arguments (an Agent factory, not wrapped), or a module that
        # raises when imported: the user's code, named with what it raised.
        raise OptionError(
            "runtime",
            spec,
            f"loading it raised {raised(exc)}; an import path must name a "
            "RuntimeAdapter (or a no-argument callable returning one); for a function that "
            "builds a killpoint.runtime.Agent, decorate it with killpoint.agent_adapter",
        ) from None


def scenario_ref(name: str) -> Any:
    """The scenario `name` names, or OptionError."""
    from killpoint.errors import ScenarioRefError
    from killpoint.values.scenario_refs import resolve_scenario

    try:
        return resolve_scenario(name)
    except (ScenarioRefError, LookupError) as exc:
        text = str(exc.args[0]) if isinstance(exc, LookupError) and exc.args else str(exc)
        hint = f"; {IMPORT_HINT}" if _not_found(text) else ""
        raise OptionError("scenarios", name, f"{text}{hint}") from None
    except Exception as exc:
        raise OptionError("scenarios", name, f"loading it raised {raised(exc)}") from None


def _not_found(text: str) -> bool:
    """Whether an import error says the module itself was not found (not one that the
    module, found, failed to import: import_paths.raised_while_importing)."""
    return "No module named" in text and "while being imported" not in text


def raised(exc: BaseException) -> str:
    """What the user's code raised, in one line (a message may hold newlines)."""
    return " ".join(f"{type(exc).__name__}: {exc}".split())


__all__ = [
    "CampaignConfig",
    "ConfigError",
    "EngineConfig",
    "OptionError",
    "PointSelection",
    "declined_unknown",
    "default_workers",
    "parse_points",
    "raised",
    "runtime_adapter",
    "scenario_ref",
    "split_list",
]
