"""The plugin's options: read from the command line, else the ini file, else the defaults,
and checked by the one option model (killpoint.engine.options) like the CLI's.

Only what was given is checked against the environment (the runtime, the store...), so a
pytest session that runs no crash test imports nothing it does not need. A bad value is a
pytest usage error naming the option as it was given (`--crash-modes` or
`ini option crash_modes`) and the same reason the CLI gives.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest

from killpoint.adapters.registry import RUNTIME_HELP
from killpoint.engine.options import CampaignConfig, ConfigError, OptionError, split_list

# (option, ini name, ini type, metavar, help)
OPTIONS: tuple[tuple[str, str, str, str | None, str], ...] = (
    ("--crash-matrix", "crash_matrix", "bool", None, "collect the crash matrix as test items"),
    ("--crash-runtime", "crash_runtime", "string", "RUNTIME",
     f"runtime under test: {RUNTIME_HELP} (default: reference)"),
    ("--crash-scenarios", "crash_scenarios", "string", "NAMES",
     "comma-separated scenarios: built-in names, 'random:SEED' or 'package.module:SCENARIO' "
     "(default: every built-in)"),
    ("--crash-modes", "crash_modes", "string", "MODES",
     "comma-separated checkpoint modes of the runtime (default: every mode it can run)"),
    ("--crash-points", "crash_points", "string", "POINTS",
     "boundaries | kills | faults | all | power-loss | random:N | kinds or points, comma-separated "
     "(default: all)"),
    ("--crash-depth", "crash_depth", "string", "1|2", "2: crash the resumed run too (default: 1)"),
    ("--crash-seed", "crash_seed", "string", "SEED",
     "seed for random points; 'last' reuses the previous run's (default: a new one)"),
    ("--crash-store", "crash_store", "string", "STORE",
     "sqlite, or a postgresql+psycopg:// URL (each xdist worker gets its own database)"),
    ("--crash-report", "crash_report", "string", "PATH", "write the HTML crash-matrix report"),
    ("--crash-json", "crash_json", "string", "PATH", "write the crash matrix as JSON"),
    ("--crash-keep", "crash_keep", "string", "none|failed|all",
     "keep the store file and worker logs of these cells (default: failed)"),
    ("--crash-accept", "crash_accept", "string", "FILE",
     "a TOML file of accepted finding groups: shown, counted apart, not failing"),
    ("--crash-model-behaviour", "crash_model_behaviour", "string", "BEHAVIOUR",
     "how the model answers every turn asked again after a crash: regenerate-ids, reorder, "
     "respell or replan (default: as the first time)"),
    ("--crash-cut", "crash_cut", "string", "MODEL",
     "power-loss points: which unsynced writes the cut keeps: synced, torn-op, torn-op:byte, "
     "torn-seq or reorder (default: synced; docs/powerloss.md)"),
    ("--crash-fs-ops", "crash_fs_ops", "string", "all|syncs|N",
     "fs-op points: which store-file operations of each checkpoint get one: all, syncs "
     "(fsync, fdatasync) or a number spread evenly (default: all; docs/powerloss.md)"),
    ("--crash-shard", "crash_shard", "string", "K/N",
     "collect only shard K of N (cells by a stable hash of their id; give every shard the "
     "same --crash-seed), then `killpoint merge` the shards' --crash-json"),
)  # fmt: skip

# Settings fields that are campaign options (the rest are the plugin's own).
CAMPAIGN_KEYS = (
    "runtime", "scenarios", "modes", "points", "depth", "store", "keep", "model_behaviour",
    "shard", "cut", "fs_ops",
)  # fmt: skip


def masked_usage(text: str) -> pytest.UsageError:
    """pytest's usage error, its secrets masked (a store URL's password), one line that
    commands no CI runner (killpoint.values.shown.line)."""
    from killpoint.redaction import redact
    from killpoint.values.shown import line

    return pytest.UsageError(line(redact(text)))


@dataclass(frozen=True)
class Settings:
    """The session's crash options: command line over ini over defaults, checked."""

    matrix: bool = False
    runtime: str = "reference"
    scenarios: tuple[str, ...] = ()  # empty: every built-in
    modes: tuple[str, ...] = ()  # empty: every mode the runtime can run
    points: str = "all"
    depth: int = 1
    seed: str | None = None  # a number, "last", or None (choose one)
    store: str = "sqlite"
    report: Path | None = None
    json: Path | None = None
    keep: str = "failed"
    accept: Path | None = None
    cells: tuple[str, ...] = ()  # `killpoint::CELL` arguments: only these (plugin.node_ids)
    model_behaviour: str | None = None
    shard: str | None = None  # K/N (killpoint.values.shard)
    cut: str = "synced"  # power-loss points' cut model (killpoint.powerloss.cut_models)
    fs_ops: str = "all"  # fs-op points per checkpoint (killpoint.kinds.fs_ops)
    sources: dict[str, str] = field(default_factory=dict, compare=False)  # key -> label

    def label(self, key: str) -> str:
        return self.sources.get(key, f"--crash-{key}")

    def usage(self, error: OptionError) -> pytest.UsageError:
        key = "scenarios" if error.option == "scenario" else error.option
        return masked_usage(error.text(self.label(key)))


def read(config: pytest.Config) -> Settings:
    """Each option from the command line, else the ini file, else its default; the
    campaign's options parsed by the option model (a bad value is a usage error)."""
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    base = {"cmdline": config.invocation_params.dir, "ini": config.rootpath}
    for option, ini, _kind, _metavar, _help in OPTIONS:
        key = ini.removeprefix("crash_")
        given = config.getoption(ini)
        if given is not None:
            raw, source, where = given, option, "cmdline"
        else:
            raw, source, where = config.getini(ini), f"ini option {ini}", "ini"
            if raw in ("", None, False):
                continue
        sources[key] = source  # only what was given: the rest are valid defaults
        if key == "matrix":
            values[key] = bool(raw)
        elif key in ("report", "json", "accept"):
            path = Path(str(raw)).expanduser()
            values[key] = path if path.is_absolute() else base[where] / path
        else:
            values[key] = str(raw)
    settings = Settings(sources=sources)
    try:
        parsed = CampaignConfig.from_options(**{k: values[k] for k in CAMPAIGN_KEYS if k in values})
    except OptionError as exc:
        raise settings.usage(exc) from None
    seed = values.get("seed")
    if parsed.shard is not None and seed is None:
        from killpoint.values.shard import unseeded

        raise masked_usage(unseeded(parsed.shard, settings.label("shard"), "--crash-seed"))
    if seed is not None and seed.strip() != "last":
        try:
            CampaignConfig.from_options(seed=seed)
        except OptionError as exc:
            raise masked_usage(
                exc.text(settings.label("seed")).replace(exc.reason, f"{exc.reason}, or 'last'")
            ) from None
    return replace(
        settings,
        matrix=bool(values.get("matrix", False)),
        runtime=parsed.runtime,
        scenarios=parsed.scenarios,
        modes=parsed.modes,
        points=str(parsed.points),
        depth=parsed.depth,
        seed=seed.strip() if seed is not None else None,
        store=parsed.store,
        keep=parsed.keep,
        model_behaviour=parsed.model_behaviour,
        report=values.get("report"),
        json=values.get("json"),
        accept=values.get("accept"),
        shard=str(parsed.shard) if parsed.shard is not None else None,
        cut=parsed.cut,
        fs_ops=parsed.fs_ops,
    )


def check(settings: Settings) -> None:
    """What was given, checked against the environment before anything runs."""
    given = set(settings.sources)
    config = campaign_config(settings)
    try:
        config.check(only=given & {"runtime", "modes", "scenarios", "store"})
    except OptionError as exc:
        raise settings.usage(exc) from None
    except ConfigError as exc:
        raise masked_usage(str(exc)) from None
    from killpoint.report.targets import Target, TargetError, same_file

    if settings.report and settings.json and same_file(settings.report, settings.json):
        raise masked_usage(
            f"killpoint: {settings.label('json')} and {settings.label('report')} name the same "
            f"file {str(settings.json)!r}; give two paths"
        )
    for key in ("report", "json"):
        path = getattr(settings, key)
        if path is not None:
            try:
                Target(path).check()
            except TargetError as exc:
                raise masked_usage(
                    f"killpoint: {settings.label(key)}={str(path)!r}: {exc}"
                ) from None
    if settings.accept is not None:
        from killpoint.judge.groups import AcceptError, read_accepted

        try:
            read_accepted(settings.accept)
        except AcceptError as exc:
            raise masked_usage(str(exc)) from None


def campaign_config(settings: Settings, **overrides: Any) -> CampaignConfig:
    values: dict[str, Any] = {
        "runtime": settings.runtime,
        "scenarios": settings.scenarios or None,
        "modes": settings.modes or None,
        "points": settings.points,
        "depth": settings.depth,
        "store": settings.store,
        "keep": settings.keep,
        "model_behaviour": settings.model_behaviour,
        "shard": settings.shard,
        "cut": settings.cut,
        "fs_ops": settings.fs_ops,
    }
    values.update(overrides)
    return CampaignConfig.from_options(**values)


def addoptions(parser: pytest.Parser) -> None:
    group = parser.getgroup("killpoint", "killpoint crash matrix")
    for option, ini, kind, metavar, text in OPTIONS:
        if kind == "bool":
            group.addoption(option, action="store_true", default=None, dest=ini, help=text)
            parser.addini(ini, f"{text} (like {option})", type="bool", default=False)
        else:
            group.addoption(
                option, action="store", default=None, dest=ini, metavar=metavar, help=text
            )
            parser.addini(ini, f"{text} (like {option})", type="string", default="")


__all__ = ["OPTIONS", "Settings", "addoptions", "campaign_config", "check", "read", "split_list"]
