"""The plugin's options: every option killpoint.engine.option_table gives pytest, read from
the command line, else the ini file, else the table's default, and read by the table's
readers like the CLI's.

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

from killpoint.engine import option_table as table
from killpoint.engine.options import CampaignConfig
from killpoint.errors import ConfigError, OptionError

# The paths the plugin writes or reads, beside the campaign's options.
PATHS = ("report", "json", "accept")


def masked_usage(text: str) -> pytest.UsageError:
    """pytest's usage error, its secrets masked (a store URL's password), one line that
    commands no CI runner (killpoint.values.shown.line)."""
    from killpoint.redaction import redact
    from killpoint.values.shown import line

    return pytest.UsageError(line(redact(text)))


@dataclass(frozen=True)
class Settings:
    """The session's crash options: command line over ini over defaults, checked.
    `given`: the campaign's options given, as given (a crash.check reads them again with
    its own); `campaign`: them read, over the table's defaults."""

    matrix: bool = False
    campaign: CampaignConfig = field(default_factory=CampaignConfig)
    given: dict[str, Any] = field(default_factory=dict, compare=False)
    seed: str | None = None  # a number, "last", or None (choose one)
    report: Path | None = None
    json: Path | None = None
    accept: Path | str | None = None  # a file, or `builtin` (killpoint.engine.acceptances)
    record_mode: str = "none"  # what a cassette check records (killpoint.plugin.cassettes)
    cells: tuple[str, ...] = ()  # `killpoint::CELL` arguments: only these (plugin.node_ids)
    sources: dict[str, str] = field(default_factory=dict, compare=False)  # name -> label

    def label(self, name: str) -> str:
        return self.sources.get(name, table.option(name).pytest_flag)

    def usage(self, error: OptionError) -> pytest.UsageError:
        name = "scenarios" if error.option == "scenario" else error.option
        return masked_usage(error.text(self.label(name)))

    def for_cells(self, cells: tuple[str, ...], runtime: str) -> Settings:
        """The settings of a session given cells by node id: the matrix of their runtime."""
        given = {**self.given, "runtime": runtime}
        return replace(
            self,
            matrix=True,
            cells=cells,
            given=given,
            campaign=replace(self.campaign, runtime=runtime),
        )


def read(config: pytest.Config) -> Settings:
    """Each option from the command line, else the ini file, else its default; the
    campaign's options read by the table's readers (a bad value is a usage error)."""
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    base = {"cmdline": config.invocation_params.dir, "ini": config.rootpath}
    for o in table.on(table.PYTEST):
        given = config.getoption(o.ini)
        if given is not None:
            raw, source, where = given, o.pytest_flag, "cmdline"
        else:
            raw, source, where = config.getini(o.ini), f"ini option {o.ini}", "ini"
            if raw in ("", None, False):
                continue
        sources[o.name] = source  # only what was given: the rest are valid defaults
        if o.name in PATHS:
            # As the table reads it (`--crash-accept builtin` is a word, not a file), a
            # relative path from where pytest was started or the ini file's folder.
            path = o.parse(str(raw))
            if isinstance(path, Path) and not path.is_absolute():
                path = base[where] / path
            values[o.name] = path
        elif o.toml == table.BOOL:
            values[o.name] = bool(raw)
        else:
            values[o.name] = str(raw)
    settings = Settings(sources=sources)
    seed = values.pop("seed", None)
    given = {o.name: values[o.name] for o in table.campaign() if o.name in values}
    try:
        campaign = CampaignConfig.from_options(**given)
    except OptionError as exc:
        raise settings.usage(exc) from None
    if campaign.shard is not None and seed is None:
        from killpoint.values.shard import unseeded

        raise masked_usage(unseeded(campaign.shard, settings.label("shard"), "--crash-seed"))
    if seed is not None and seed.strip() != "last":
        try:
            CampaignConfig.from_options(seed=seed)
        except OptionError as exc:
            raise masked_usage(
                exc.text(settings.label("seed")).replace(exc.reason, f"{exc.reason}, or 'last'")
            ) from None
    record_mode = table.option("record_mode")
    try:
        mode = record_mode.parse(values.get("record_mode", record_mode.default_value()))
    except OptionError as exc:
        raise settings.usage(exc) from None
    return replace(
        settings,
        matrix=bool(values.get("matrix", False)),
        record_mode=mode,
        campaign=campaign,
        given=given,
        seed=seed.strip() if seed is not None else None,
        report=values.get("report"),
        json=values.get("json"),
        accept=values.get("accept"),
    )


def check(settings: Settings) -> None:
    """What was given, checked against the environment before anything runs."""
    given = set(settings.sources)
    try:
        settings.campaign.check(only=given & {"runtime", "modes", "scenarios", "store"})
    except OptionError as exc:
        raise settings.usage(exc) from None
    except ConfigError as exc:
        raise masked_usage(str(exc)) from None
    from killpoint.errors import TargetError
    from killpoint.report.targets import Target, same_file

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
        from killpoint.engine.acceptances import accepted_groups
        from killpoint.errors import AcceptError

        try:
            accepted_groups(settings.accept, settings.campaign.runtime)
        except AcceptError as exc:
            raise masked_usage(str(exc)) from None


def campaign_config(settings: Settings, **overrides: Any) -> CampaignConfig:
    """The session's campaign, with `overrides` (options as crash.check gives them) read
    over what the session was given."""
    return CampaignConfig.from_options(**{**settings.given, **overrides})


def addoptions(parser: pytest.Parser) -> None:
    group = parser.getgroup("killpoint", "killpoint crash matrix")
    for o in table.on(table.PYTEST):
        text = o.described(table.PYTEST)
        if o.toml == table.BOOL:
            group.addoption(o.pytest_flag, action="store_true", default=None, dest=o.ini, help=text)
            parser.addini(o.ini, f"{text} (like {o.pytest_flag})", type="bool", default=False)
        else:
            group.addoption(
                o.pytest_flag,
                action="store",
                default=None,
                dest=o.ini,
                metavar=o.metavar,
                help=text,
            )
            parser.addini(o.ini, f"{text} (like {o.pytest_flag})", type="string", default="")


__all__ = ["PATHS", "Settings", "addoptions", "campaign_config", "check", "read"]
