"""The campaign's configuration: every option read once, then checked against the
environment (the same reason from every front: test_option_table.py)."""

# ruff: noqa: SIM300
from __future__ import annotations

from pathlib import Path

import pytest

from killpoint.engine.options import CampaignConfig, parse_points, runtime_adapter, split_list
from killpoint.errors import OptionError

pytest_plugins = ["pytester"]
REPO = Path(__file__).resolve().parents[3]


def build_agent(name: str) -> None:
    """An Agent factory that was never wrapped in agent_adapter."""


def refused(**given: object) -> OptionError:
    with pytest.raises(OptionError) as info:
        config = CampaignConfig.from_options(**given)
        config.check()
    return info.value


class TestParsing:
    def test_lists_take_commas_spaces_or_both(self) -> None:
        assert ("tool-batch", "tool", "runs") == split_list(" tool-batch, tool\n runs,")
        assert () == split_list("  ")

    def test_defaults_parse_to_a_config(self) -> None:
        config = CampaignConfig.from_options()
        assert ("reference", (), 1, "all") == (
            config.runtime,
            config.modes,
            config.depth,
            str(config.points),
        )

    @pytest.mark.parametrize(
        ("given", "option", "reason"),
        [
            ({"timeout": "nan"}, "timeout", "give a finite number of seconds above 0"),
            ({"timeout": "inf"}, "timeout", "give a finite number of seconds above 0"),
            ({"timeout": "0"}, "timeout", "give a finite number of seconds above 0"),
            (
                {"scenarios": ","},
                "scenarios",
                "names nothing; leave the option out to mean every one",
            ),
            ({"modes": " , "}, "modes", "names nothing; leave the option out to mean every one"),
            (
                {"points": ","},
                "points",
                "selects nothing; choose from boundaries, kills, faults, clocks, orders, "
                "power-loss, fs-ops, restarts, all",
            ),
            ({"depth": "3"}, "depth", "give a whole number from 1 to 2"),
            ({"workers": "0"}, "workers", "give a whole number at least 1"),
            ({"seed": "x"}, "seed", "give a whole number"),
            ({"keep": "some"}, "keep", "not a keep policy; choose from none, failed, all"),
        ],
    )
    def test_a_bad_value_names_the_option_and_why(
        self, given: dict[str, str], option: str, reason: str
    ) -> None:
        error = refused(**given)
        assert (option, reason) == (error.option, error.reason[: len(reason)])

    def test_a_point_selection_is_parsed_once_into_kinds_and_points(self) -> None:
        selection = parse_points("boundaries,mid-model,mid-batch:1:0")
        assert ("after-checkpoint", "mid-model") == selection.kinds
        assert ["mid-batch:1:0"] == [str(p) for p in selection.explicit]
        assert 20 == parse_points("random:20").sample


class TestEnvironment:
    def test_a_built_in_runtime_loads(self) -> None:
        adapter = runtime_adapter("reference")
        assert ("runs", "tool-batch", "tool") == tuple(m.name for m in adapter.modes)

    def test_a_misspelt_mode_is_refused_with_the_one_it_meant(self) -> None:
        error = refused(modes=("toolbatch",))
        assert (
            "not a mode of runtime 'reference'; did you mean 'tool-batch'? choose from runs, "
            "tool-batch, tool"
        ) == error.reason

    def test_an_unknown_runtime_is_refused_with_the_choices(self) -> None:
        error = refused(runtime="nope")
        assert error.reason.startswith("unknown runtime 'nope'; choose from reference")

    def test_a_missing_module_is_refused_with_the_hint_to_make_it_importable(self) -> None:
        error = refused(runtime="kp_no_such_module:x")
        assert "No module named 'kp_no_such_module'" in error.reason
        assert "pythonpath = ." in error.reason
        assert not error.text().count("killpoint:") > 1  # one prefix, never doubled

    def test_a_module_that_raises_when_imported_is_named_with_what_it_raised(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        (tmp_path / "kp_raises.py").write_text("raise RuntimeError('no config file')\n")
        (tmp_path / "kp_syntax.py").write_text("def broken(:\n")
        monkeypatch.syspath_prepend(str(tmp_path))
        assert "RuntimeError: no config file" in refused(runtime="kp_raises:adapter").reason
        assert "SyntaxError" in refused(runtime="kp_syntax:adapter").reason
        assert "RuntimeError: no config file" in refused(scenarios="kp_raises:FLOW").reason

    def test_an_unwrapped_agent_factory_is_refused_with_the_fix(self) -> None:
        error = refused(runtime=f"{__name__}:build_agent")
        assert "is a function that takes arguments (name)" in error.reason  # never called
        assert "decorate it with killpoint.agent_adapter" in error.reason

    def test_a_mode_the_runtime_does_not_declare(self) -> None:
        error = refused(modes="fast")
        assert (
            "modes",
            "not a mode of runtime 'reference'; choose from runs, tool-batch, tool",
        ) == (
            error.option,
            error.reason,
        )


@pytest.mark.slow
def test_crash_check_of_a_module_that_is_not_importable_fails_in_one_line(
    pytester: pytest.Pytester,
) -> None:
    """In a fresh project without `pythonpath = .`, crash.check("mypkg.mod:build") fails
    the test with one line: the import error, one `killpoint:` prefix and the hint; no
    traceback through killpoint's internals."""
    (pytester.path / "tests").mkdir()
    (pytester.path / "tests" / "test_mine.py").write_text(
        "def test_mine(crash):\n    crash.check('mypkg.mod:build')\n"
    )
    result = pytester.runpytest_subprocess("-p", "no:randomly", "tests")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    line = next(x for x in out.splitlines() if "crash.check runtime=" in x)
    assert "No module named 'mypkg'" in line
    assert "pythonpath = ." in line
    assert 1 == line.count("killpoint:")
    assert "During handling" not in out and "Traceback" not in out
    assert "killpoint/options.py" not in out and "harness/engine/options.py" not in out


def test_the_engine_config_is_derived_from_the_campaigns(tmp_path: Path) -> None:
    from killpoint.engine.options import EngineConfig

    config = CampaignConfig(
        store="sqlite", timeout=3.5, keep="all", work_parent=tmp_path, workers=3
    )
    assert config.engine_config() == EngineConfig(
        store="sqlite", timeout=3.5, keep="all", work_parent=tmp_path, workers=3
    )


class TestModelBehaviour:
    def test_a_behaviour_reaches_the_engine(self) -> None:
        """`--model-behaviour` is a campaign option the engine's config carries to every
        worker it starts."""
        config = CampaignConfig.from_options(model_behaviour="reorder")
        assert "reorder" == config.engine_config().model_behaviour
        assert None is CampaignConfig.from_options().engine_config().model_behaviour

    def test_an_unknown_behaviour_is_one_line_with_the_choices(self) -> None:
        with pytest.raises(OptionError) as caught:
            CampaignConfig.from_options(model_behaviour="regenerate")
        assert (
            "killpoint: --model-behaviour='regenerate': not a model behaviour; did you mean "
            "'regenerate-ids'? choose from regenerate-ids, reorder, respell, replan"
        ) == str(caught.value)


def test_a_module_not_found_says_where_each_front_looks_for_it() -> None:
    """The hint said killpoint imports with the current folder on sys.path; under pytest
    it is not there at all (the plugin adds none): each front is said as it is."""
    with pytest.raises(OptionError) as raised:
        runtime_adapter("no_such_project_module:adapter")
    text = str(raised.value)
    assert "No module named 'no_such_project_module'" in text
    assert "run it from the folder that holds the package" in text
    assert "pytest adds none: set `pythonpath = .` in its ini file" in text
