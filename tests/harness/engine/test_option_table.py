"""The option table: each option declared once, and every front built from it takes every
option the table gives it, with the table's default and the same sentence for the same bad
value (each front naming the option its own way). In-process; one real run per front:
tests/harness/cli/test_project_config.py (the command line and [tool.killpoint]) and
tests/harness/plugin/test_crash_fixture.py (pytest's ini keys and crash.check)."""

# ruff: noqa: SIM300
from __future__ import annotations

import argparse
import textwrap
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest

from killpoint.cli import matrix as cli_matrix
from killpoint.cli import project_config
from killpoint.cli.main import main
from killpoint.engine import option_table as table
from killpoint.engine.option_values import max_workers
from killpoint.engine.options import CampaignConfig, EngineConfig
from killpoint.errors import OptionError
from killpoint.plugin import settings as plugin_settings
from killpoint.plugin.crash_fixture import CHECK_KEYS, OWN_KEYS
from killpoint.values.shard import Shard

pytest_plugins = ["pytester"]

# Each option a front can give: a value as a front gives it (text; TOML's own type for
# [tool.killpoint]), and the field's value once read.
GOOD: dict[str, tuple[str, Any, Any]] = {
    "runtime": ("reference", "reference", "reference"),
    "scenarios": ("research,confirm", ["research", "confirm"], ("research", "confirm")),
    "modes": ("tool-batch", "tool-batch", ("tool-batch",)),
    "points": ("kills", "kills", "kills"),
    "depth": ("2", 2, 2),
    "seed": ("7", 7, 7),
    "store": ("sqlite", "sqlite", "sqlite"),
    "workers": ("3", 3, 3),
    "timeout": ("4.5", 4.5, 4.5),
    "keep": ("all", "all", "all"),
    "work_dir": ("/tmp/kp-here", "/tmp/kp-here", Path("/tmp/kp-here")),
    "kills": ("real", "real", "real"),
    "model_behaviour": ("reorder", "reorder", "reorder"),
    "shard": ("1/2", None, Shard(1, 2)),
    "cut": ("torn-seq", "torn-seq", "torn-seq"),
    "fs_ops": ("3", 3, "3"),
    "order": ("plan", "plan", "plan"),
    "fail_fast": ("true", True, True),
    "budget": ("5m", "5m", 300.0),
}
# A bad value of each kind of reader (none needs the environment), and the reason.
BAD = [
    ("depth", "3", "give a whole number from 1 to 2"),
    ("keep", "some", "not a keep policy; choose from none, failed, all"),
    ("kills", "both", "not a way to kill; choose from fast, real"),
    ("timeout", "0", "give a finite number of seconds above 0"),
    ("fs_ops", "none", "give all, syncs or a whole number of operations per checkpoint"),
    ("points", "nowhere", "not a group (boundaries, kills, faults"),
    (
        "model_behaviour",
        "regenerate",
        "not a model behaviour; did you mean 'regenerate-ids'? choose from regenerate-ids",
    ),
    ("order", "random", "not a cell order; choose from informative, plan"),
    ("budget", "soon", "give a time span such as 90s, 5m or 1h"),
    # checked against the environment, after reading
    ("modes", "fast", "not a mode of runtime 'reference'; choose from runs, tool-batch, tool"),
    ("runtime", "nosuch", "unknown runtime 'nosuch'; choose from reference"),
    ("scenarios", "nosuch", "unknown scenario 'nosuch'"),
    # a typo: the name it most likely meant, before the choices, on every front
    ("keep", "faild", "not a keep policy; did you mean 'failed'? choose from none, failed, all"),
    ("modes", "toolbatch", "not a mode of runtime 'reference'; did you mean 'tool-batch'? choose"),
    ("runtime", "refrence", "unknown runtime 'refrence'; did you mean 'reference'? choose from"),
    ("scenarios", "side_effects", "unknown scenario 'side_effects'; did you mean 'side-effects'?"),
]


def read(option: table.Option) -> Any:
    """A field's value as a test compares it (a point selection by its text)."""
    value = getattr(
        CampaignConfig.from_options(**{option.name: GOOD[option.name][0]}), str(option.sets)
    )
    return str(value) if option.name == "points" else value


class TestTheTable:
    def test_every_campaign_option_is_a_field_and_every_field_an_option(self) -> None:
        assert {f.name for f in fields(CampaignConfig)} == set(table.BY_FIELD)

    def test_each_option_has_one_default(self) -> None:
        """CampaignConfig() and the engine's view take each default from the table."""
        config, engine = CampaignConfig(), EngineConfig()
        for o in table.campaign():
            assert o.default_value() == getattr(config, str(o.sets)), o.name
        shared = {f.name for f in fields(EngineConfig)} & set(table.BY_FIELD)
        assert {"store", "timeout", "keep", "cut", "fs_ops", "model_behaviour"} <= shared
        # An engine no campaign made bounds no cell (one replayed alone waits for no slot).
        assert None is engine.workers
        for name in shared - {"workers"}:
            assert table.BY_FIELD[name].default_value() == getattr(engine, name), name

    def test_kills_is_fast_everywhere(self) -> None:
        """One default: the command's, a configuration built in Python's, crash.check's."""
        assert "fast" == CampaignConfig().kills == table.option("kills").default
        assert "fast" == cli_matrix.config_from(cli_args()).kills

    def test_each_option_has_one_help_line_and_a_reason_where_a_front_differs(self) -> None:
        for o in table.OPTIONS:
            assert o.help and "\n" not in o.help and "(default" not in o.help, o.name
            if o.fronts != frozenset(table.FRONTS) or o.notes:
                assert o.why or set(o.notes) <= {table.PYTEST, table.CHECK}, o.name
            if o.fronts != frozenset(table.FRONTS):
                assert o.why, f"{o.name}: a front leaves it out without saying why"

    def test_every_option_a_front_takes_has_a_good_value_here(self) -> None:
        assert set(GOOD) == {o.name for o in table.campaign() if o.fronts}

    def test_the_reference_lists_each_option_by_every_name(self) -> None:
        rows = {r.name: r for r in table.reference()}
        assert "work_root" not in rows  # killpoint's own, given by no front
        fs = rows["fs_ops"]
        assert ("all", table.WORD_OR_WHOLE) == (fs.default, fs.toml)
        assert {
            "cli": "--fs-ops",
            "pytest": "--crash-fs-ops",
            "ini": "crash_fs_ops",
            "project": "fs-ops",
            "check": "fs_ops=",
        } == fs.names
        assert rows["workers"].why and "check" not in rows["workers"].names


class TestWorkers:
    def test_the_bound_is_named_with_why(self) -> None:
        bound = max_workers()
        assert bound == CampaignConfig.from_options(workers=bound).workers
        with pytest.raises(OptionError) as caught:
            CampaignConfig.from_options(workers=bound + 1)
        assert caught.value.text().startswith(
            f"killpoint: --workers={bound + 1}: give a whole number from 1 to {bound}"
        )
        assert "processes and threads of its own" in caught.value.reason

    def test_the_bound_is_many_cells_per_core(self) -> None:
        import os

        assert max_workers() >= 8 * (os.cpu_count() or 1) > 0


# -- every front takes every option the table gives it -------------------------------------


def cli_args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    cli_matrix.add_parser(parser.add_subparsers(dest="command"))
    return parser.parse_args(["matrix", *argv])


CLI = [o for o in table.on(table.CLI) if o.sets is not None]
PROJECT = [o for o in table.on(table.PROJECT) if o.sets is not None]
CHECKED = [o for o in table.on(table.CHECK) if o.sets is not None]
PYTEST = [o for o in table.on(table.PYTEST) if o.sets is not None]


@pytest.mark.parametrize("option", CLI, ids=[o.name for o in CLI])
def test_the_command_line_takes_it(option: table.Option) -> None:
    # A switch (--fail-fast) takes no value: given, it is on.
    given = () if option.toml == table.BOOL else (GOOD[option.name][0],)
    config = cli_matrix.config_from(cli_args(option.flag, *given))
    value = getattr(config, str(option.sets))
    assert read(option) == (str(value) if option.name == "points" else value)


def test_the_command_line_has_a_flag_for_each_option_and_no_other() -> None:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command")
    cli_matrix.add_parser(sub)
    matrix = sub.choices["matrix"]
    flags = {a.option_strings[0] for a in matrix._actions if a.option_strings} - {"-h"}
    assert {o.flag for o in table.on(table.CLI)} == flags


@pytest.mark.parametrize("option", PROJECT, ids=[o.name for o in PROJECT])
def test_the_project_table_takes_it(option: table.Option, tmp_path: Path) -> None:
    """[tool.killpoint] can set kills, cut, fs-ops and model-behaviour too."""
    value = GOOD[option.name][1]
    if isinstance(value, bool):
        toml = str(value).lower()
    else:
        toml = f'"{value}"' if isinstance(value, str) else repr(value).replace("'", '"')
    (tmp_path / "pyproject.toml").write_text(f"[tool.killpoint]\n{option.key} = {toml}\n")
    project = project_config.read(tmp_path)
    args = project_config.merge(vars(cli_args()), project)
    config = cli_matrix.config_from(argparse.Namespace(**args))
    value = getattr(config, str(option.sets))
    assert read(option) == (str(value) if option.name == "points" else value)


def test_the_project_table_has_a_key_for_each_option_and_no_other() -> None:
    assert [o.key for o in table.on(table.PROJECT)] == list(project_config.KEYS)
    assert {"kills", "cut", "fs-ops", "model-behaviour"} <= set(project_config.KEYS)


@pytest.mark.parametrize("option", PYTEST, ids=[o.name for o in PYTEST])
def test_pytest_takes_it_as_an_option_and_as_an_ini_key(
    option: table.Option, pytester: pytest.Pytester
) -> None:
    text = GOOD[option.name][0]
    extra = ["--crash-seed=1"] if option.name == "shard" else []
    for given in (
        pytester.parseconfig(f"{option.pytest_flag}={text}", *extra),
        ini_config(pytester, f"{option.ini} = {text}", *extra),
    ):
        settings = plugin_settings.read(given)
        if option.name == "seed":  # the session's, chosen once ('last' or a new one)
            assert read(option) == int(str(settings.seed))
            continue
        value = getattr(plugin_settings.campaign_config(settings), str(option.sets))
        assert read(option) == (str(value) if option.name == "points" else value)


def ini_config(pytester: pytest.Pytester, line: str, *args: str) -> pytest.Config:
    pytester.makeini(f"[pytest]\n{line}\n")
    return pytester.parseconfig(*args)


def test_crash_check_takes_each_option_it_should(pytester: pytest.Pytester) -> None:
    """Each keyword the table gives crash.check reaches its campaign (kills= included)."""
    assert {o.name for o in CHECKED} - {"runtime"} == set(CHECK_KEYS) - set(OWN_KEYS)
    assert ("cassette",) == OWN_KEYS  # the fixture's own: killpoint.plugin.cassettes
    cases = {o.name: (GOOD[o.name][0], str(o.sets), read(o)) for o in CHECKED}
    pytester.makepyfile(
        test_keys=textwrap.dedent(
            f"""
            import pytest

            CASES = {cases!r}

            @pytest.mark.parametrize("name", sorted(CASES))
            def test_key(crash, name):
                given, field, wanted = CASES[name]
                config = crash._config(None, None, {{name: given}})
                value = getattr(config, field)
                assert wanted == (str(value) if name == "points" else value)
            """
        )
    )
    pytester.runpytest("-p", "no:randomly").assert_outcomes(passed=len(cases))


# -- the same sentence from every front ----------------------------------------------------


@pytest.mark.parametrize(("name", "value", "reason"), BAD, ids=[b[0] for b in BAD])
def test_every_front_says_the_same_reason(
    name: str,
    value: str,
    reason: str,
    pytester: pytest.Pytester,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The command line, [tool.killpoint], pytest's option and its ini key: one line each,
    the front's own name for the option, and the same reason."""
    o = table.option(name)
    said = {}
    monkeypatch.chdir(pytester.path)
    out = ["--json", str(pytester.path / "m.json"), "--report", str(pytester.path / "m.html")]
    if table.CLI in o.fronts:
        assert 2 == main(["matrix", o.flag, value, *out])
        said[o.flag] = capsys.readouterr().err
    if table.PROJECT in o.fronts:
        toml = pytester.path / "pyproject.toml"
        literal = value if value.isdigit() else f'"{value}"'  # TOML's own type
        toml.write_text(f"[tool.killpoint]\n{o.key} = {literal}\n")
        assert 2 == main(["matrix", *out])
        said[f"[tool.killpoint] {o.key} in {toml}"] = capsys.readouterr().err
        toml.unlink()
    if table.PYTEST in o.fronts:
        for label, config in (
            (o.pytest_flag, pytester.parseconfig(f"{o.pytest_flag}={value}")),
            (f"ini option {o.ini}", ini_config(pytester, f"{o.ini} = {value}")),
        ):
            with pytest.raises(pytest.UsageError) as caught:
                plugin_settings.check(plugin_settings.read(config))
            said[label] = str(caught.value)
    assert len(said) >= 2
    for label, line in said.items():
        assert f"killpoint: {label}={value!r}: {reason}" in line, (label, line)


def test_crash_check_says_the_same_reason(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_bad=textwrap.dedent(
            f"""
            import pytest

            @pytest.mark.parametrize("name, value", {[(n, v) for n, v, _ in BAD]!r})
            def test_bad(crash, name, value):
                crash.check(**{{name: value}})
            """
        )
    )
    result = pytester.runpytest("-p", "no:randomly")
    result.assert_outcomes(failed=len(BAD))
    out = result.stdout.str()
    for name, value, reason in BAD:
        key = "scenario" if name == "scenarios" else name  # crash.check's own word for it
        assert f"killpoint: crash.check {key}={value!r}: {reason}" in out, name


# -- `accept`: a file, or the word `builtin` on every front that takes it -----------------


def test_builtin_is_a_word_and_anything_else_a_path() -> None:
    from killpoint.engine.option_values import BUILTIN

    accept = table.option("accept")
    assert BUILTIN == accept.parse("builtin") == accept.parse(" builtin ")
    assert Path("builtin") == accept.parse("./builtin")  # a file of that name
    assert Path("ok.toml") == accept.parse("ok.toml")


def test_pytest_takes_accept_builtin(pytester: pytest.Pytester) -> None:
    """`--crash-accept builtin` (and the ini key) is the runtime's own file, not a file named
    builtin beside the ini: checked like any accept file (a missing file is refused)."""
    from killpoint.engine.acceptances import accepted_groups
    from killpoint.engine.option_values import BUILTIN

    for given in (
        pytester.parseconfig("--crash-accept=builtin", "--crash-runtime=agno"),
        ini_config(pytester, "crash_accept = builtin", "--crash-runtime=agno"),
    ):
        settings = plugin_settings.read(given)
        assert BUILTIN == settings.accept
        plugin_settings.check(settings)
        assert accepted_groups(settings.accept, "agno")  # agno ships its by-design groups
    missing = plugin_settings.read(pytester.parseconfig("--crash-accept=nosuch.toml"))
    with pytest.raises(pytest.UsageError, match=r"nosuch\.toml"):
        plugin_settings.check(missing)


@pytest.mark.parametrize("name", table.FILES_RENDERED)
def test_every_rendered_format_is_one_option_on_each_command(name: str) -> None:
    """`matrix`, `merge` and `report` take `--junit`, `--markdown`... as the table declares
    each: one help line, one destination the renderers read."""
    from killpoint.cli.main import build_parser
    from killpoint.report.renderers import asked

    parser = build_parser()
    option = table.option(name)
    for command in (["matrix"], ["merge", "a.json", "-o", "all.json"], ["report", "a.json"]):
        args = parser.parse_args([*command, option.flag, f"out.{name}"])
        assert {name: f"out.{name}"} == asked(args)
