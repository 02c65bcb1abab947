"""`--crash-shard K/N`: checked as the CLI's `--shard` is (one line naming the option and
the value, a seed required), and collecting only the shard's cells."""

from __future__ import annotations

import re

import pytest

from killpoint.values.shard import Shard
from tests.harness.plugin.test_hooks import SMALL, run

pytest_plugins = ["pytester"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--crash-shard=3/2", "--crash-seed=1"], "killpoint: --crash-shard='3/2': K counts from 1 to N"),
        (["--crash-shard=a/b", "--crash-seed=1"], "killpoint: --crash-shard='a/b': give K/N"),
        (["--crash-shard=1/2"], "killpoint: --crash-shard='1/2' needs --crash-seed"),
    ],
)  # fmt: skip
def test_a_bad_shard_is_a_usage_error(
    pytester: pytest.Pytester, args: list[str], message: str
) -> None:
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str()


def test_an_ini_shard_names_the_ini_option(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\ncrash_shard = 0/2\ncrash_seed = 1\n")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "killpoint: ini option crash_shard='0/2'" in result.stderr.str()


def collected(pytester: pytest.Pytester, *args: str) -> list[str]:
    result = run(pytester, *SMALL, "--crash-points=boundaries,kills", "--crash-seed=5",
                 "--collect-only", "-q", *args)  # fmt: skip
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    return re.findall(r"^killpoint::(\S+)$", result.stdout.str(), re.M)


def test_the_shards_collect_disjoint_cells_that_make_the_whole(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\n")
    whole = collected(pytester)
    one = collected(pytester, "--crash-shard=1/2")
    two = collected(pytester, "--crash-shard=2/2")
    assert len(whole) > 4
    assert one and two and not set(one) & set(two)
    assert sorted(whole) == sorted(one + two)
    assert all(Shard(1, 2).owns(c) for c in one)


def test_a_bad_cut_model_is_a_usage_error(pytester: pytest.Pytester) -> None:
    """`--crash-cut` is checked as the CLI's `--cut` is, before anything runs."""
    result = pytester.runpytest("--crash-cut=torn-seq:2")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert (
        "killpoint: --crash-cut='torn-seq:2': only torn-op takes a unit (torn-op:byte, "
        "torn-op:N); give 'torn-seq' alone"
    ) in result.stderr.str()


def test_an_ini_cut_model_names_the_ini_option(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\ncrash_cut = sideways\n")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "killpoint: ini option crash_cut='sideways': not a cut model" in result.stderr.str()
