"""The pytest plugin, end to end with pytester: options and ini values, usage errors, the
matrix under pytest-xdist (-n 2, several popen gateways) against a serial run, seeds, JUnit
properties, a user project with its own agent and scenario, a broken runtime, and a
database per xdist worker on PostgreSQL.

Runs that start engine workers use `runpytest_subprocess`: the forkserver and the killed
workers need a process of their own. Selections stay small (one scenario, one mode,
boundaries or explicit points).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from sqlalchemy import create_engine, text

pytest_plugins = ["pytester"]

FIXTURES = Path(__file__).parents[1] / "fixtures"
SMALL = (
    "--crash-matrix",
    "--crash-scenarios=research",
    "--crash-modes=tool-batch",
    "--crash-points=boundaries",
)
RESEARCH_CELLS = [
    f"reference/research/tool-batch/sqlite/after-checkpoint:{k}" for k in (1, 2, 3, 4)
]


@pytest.fixture
def own_tmpdir(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """TMPDIR for the runs of one test, removed afterwards; short, since multiprocessing
    puts its sockets there and an AF_UNIX path holds 107 bytes at most."""
    temp = Path(tempfile.mkdtemp(prefix="kp-", dir="/tmp"))
    monkeypatch.setenv("TMPDIR", str(temp))
    yield temp
    shutil.rmtree(temp)


def run(pytester: pytest.Pytester, *args: str, timeout: float = 240) -> pytest.RunResult:
    """A pytest subprocess in pytester's directory; afterwards nothing it started is left."""
    result = pytester.runpytest_subprocess("-p", "no:randomly", *args, timeout=timeout)
    assert_no_leftovers(pytester.path)
    return result


def assert_no_leftovers(path: Path) -> None:
    """Every process started in `path` (xdist workers, forkservers, engine workers) ends.

    A forkserver leaves when it reads EOF on the pipe its parent held, a moment after the
    parent exits: wait for that (bounded), never for a fixed time."""
    here = str(path)
    mine = []
    for proc in psutil.process_iter(["cwd"]):
        try:
            # This process works in `path` too (pytester chdirs there): not one of them.
            if proc.pid != os.getpid() and (proc.info["cwd"] or "").startswith(here):
                mine.append(proc)
        except psutil.Error:
            continue
    _, alive = psutil.wait_procs(mine, timeout=15)
    assert not alive, [(p.pid, p.cmdline()) for p in alive]


def cells(document: dict[str, Any]) -> list[tuple[str, str, bool]]:
    return [(c["id"], c["verdict"], c["expected"]) for c in document["cells"]]


def read_json(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


class TestOptions:
    def test_help_shows_the_group_with_every_option_and_ini_name(
        self, pytester: pytest.Pytester
    ) -> None:
        """`--help` lists the killpoint group; every option has an ini equivalent."""
        result = pytester.runpytest("--help")
        result.stdout.fnmatch_lines(["killpoint crash matrix:"])
        out = result.stdout.str()
        for name in (
            "matrix",
            "runtime",
            "scenarios",
            "modes",
            "points",
            "depth",
            "seed",
            "store",
            "report",
            "json",
            "keep",
        ):
            assert f"--crash-{name}" in out
            assert f"crash_{name} (" in out

    @pytest.mark.parametrize(
        ("args", "message"),
        [
            (["--crash-modes=runs,fast"], "killpoint: --crash-modes='fast': not a mode of runtime 'reference'; choose from runs, tool-batch, tool"),
            (["--crash-keep=some"], "killpoint: --crash-keep='some': not a keep policy; choose from none, failed, all"),
            (["--crash-depth=3"], "killpoint: --crash-depth='3': give a whole number from 1 to 2"),
            (["--crash-seed=soon"], "killpoint: --crash-seed='soon': give a whole number, or 'last'"),
            (["--crash-points=nowhere"], "killpoint: --crash-points='nowhere': not a group"),
            (["--crash-runtime=nosuch"], "killpoint: --crash-runtime='nosuch': unknown runtime 'nosuch'"),
            (["--crash-runtime=json:dumps"], "killpoint: --crash-runtime='json:dumps': runtime 'json:dumps' cannot be imported: 'json' is a module of the standard library"),
            (["--crash-scenarios=research,nosuch"], "killpoint: --crash-scenarios='nosuch': unknown scenario 'nosuch'"),
            (["--crash-store=mysql://db/x"], "killpoint: --crash-store='mysql://db/x': store 'mysql://db/x' uses 'mysql'"),
            (["-p", "no:cacheprovider", "--crash-seed=last"], "killpoint: --crash-seed='last': pytest's cache is disabled"),
        ],
    )  # fmt: skip
    def test_a_bad_value_is_a_usage_error_naming_option_and_value(
        self, pytester: pytest.Pytester, args: list[str], message: str
    ) -> None:
        """Each bad value stops pytest before anything runs, with the option and the value."""
        result = pytester.runpytest(*args)
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        assert message in result.stderr.str()

    def test_a_bad_ini_value_names_the_ini_option(self, pytester: pytest.Pytester) -> None:
        """The same checks apply to ini values, and the message says which ini option."""
        pytester.makeini("[pytest]\ncrash_modes = tool-batch quick\n")
        result = pytester.runpytest()
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        assert "killpoint: ini option crash_modes='quick': not a mode" in result.stderr.str()

    def test_ini_options_select_the_matrix_and_the_command_line_wins(
        self, pytester: pytest.Pytester
    ) -> None:
        """crash_matrix & co. in the ini collect cells with stable ids; a flag overrides."""
        pytester.makeini(
            "[pytest]\n"
            "crash_matrix = true\n"
            "crash_scenarios = research\n"
            "crash_modes = tool-batch\n"
            "crash_points = after-checkpoint:1, after-checkpoint:2\n"
            "crash_seed = 7\n"
        )
        result = run(pytester, "--collect-only", "-q", "--crash-points=after-checkpoint:3")
        assert result.ret == pytest.ExitCode.OK
        result.stdout.fnmatch_lines(
            [
                "killpoint::reference/research/tool-batch/sqlite/after-checkpoint:3",
                "1 test collected*",
            ]
        )
        assert "after-checkpoint:1" not in result.stdout.str()


class TestMatrixUnderXdist:
    def test_n2_and_n0_give_the_same_cells_and_verdicts(self, pytester: pytest.Pytester) -> None:
        """Each cell is one item; a serial run and `-n 2` write the same JSON cells."""
        pytester.makeini("[pytest]\n")
        serial = run(pytester, *SMALL, "-n", "0", "--crash-json=serial.json", "-v")
        serial.assert_outcomes(passed=4)
        serial.stdout.fnmatch_lines(
            [f"killpoint::{cell} PASSED*" for cell in RESEARCH_CELLS], consecutive=False
        )
        spread = run(
            pytester, *SMALL, "-n", "2", "--crash-json=spread.json", "--crash-report=spread.html"
        )
        spread.assert_outcomes(passed=4)
        spread.stdout.fnmatch_lines(["written: */spread.json, */spread.html"])
        assert RESEARCH_CELLS[0] in (pytester.path / "spread.html").read_text()
        expected = [(cell, "ok", True) for cell in RESEARCH_CELLS]
        assert expected == cells(read_json(pytester.path / "serial.json"))
        assert expected == cells(read_json(pytester.path / "spread.json"))
        document = read_json(pytester.path / "spread.json")
        assert document["summary"]["planned"] == 4
        assert [b["checkpoints"] for b in document["baselines"]] == [5]

    def test_popen_gateways_and_junit_properties(
        self, pytester: pytest.Pytester, own_tmpdir: Path
    ) -> None:
        """Several `--tx` popen gateways run the same cells; a worker that dies is replaced
        and loses nothing reported; JUnit XML carries verdict, schedule and replay command,
        without warnings. (The worker that dies cannot remove its forkserver's socket
        folder: the run gets a temporary folder of its own.)"""
        pytester.makeini("[pytest]\njunit_family = legacy\n")
        # A worker that dies loses nothing already reported; xdist replaces it.
        pytester.makepyfile(test_die="import os\n\ndef test_die():\n    os._exit(3)\n")
        result = run(
            pytester,
            *SMALL[:-1],
            "--crash-points=after-checkpoint:1,after-checkpoint:4",
            "--tx=2*popen",
            "--dist=load",
            "--crash-json=reports/tx.json",
            "--junitxml=junit.xml",
        )
        result.assert_outcomes(passed=2, failed=1)
        result.stdout.fnmatch_lines(["*crashed while running 'test_die.py::test_die'*"])
        assert "warning" not in result.stdout.str().lower()
        document = read_json(pytester.path / "reports" / "tx.json")
        chosen = [RESEARCH_CELLS[0], RESEARCH_CELLS[3]]
        assert [(c, "ok", True) for c in chosen] == cells(document)
        tree = ET.parse(pytester.path / "junit.xml")
        row = "killpoint.reference/research/tool-batch"  # classed by row (plugin.node_ids)
        cases = [c for c in tree.iter("testcase") if c.get("classname") == row]
        assert len(cases) == 2
        for case in cases:
            props = {p.get("name"): p.get("value") for p in case.iter("property")}
            assert props["verdict"] == "ok"
            assert props["schedule"] == case.get("name").rpartition("/")[2]
            assert props["cell"] == f"reference/research/tool-batch/{case.get('name')}"
            assert props["replay"] == f"killpoint replay {props['cell']}"

    def test_the_same_seed_gives_the_same_schedules(self, pytester: pytest.Pytester) -> None:
        """random:N samples from the seed; `--crash-seed last` reuses the previous one."""
        pytester.makeini("[pytest]\n")
        sample = ("--crash-matrix", "--crash-scenarios=research", "--crash-modes=tool-batch")

        def collected(*args: str) -> tuple[list[str], str]:
            result = run(pytester, *sample, "--crash-points=random:3", "--co", *args)
            assert result.ret == pytest.ExitCode.OK, result.stdout.str()
            ids = [m[1] for line in result.outlines if (m := re.search(r"<CellItem (.+)>", line))]
            return ids, result.stdout.str()

        first, header = collected("--crash-seed=11")
        assert len(first) == 3
        assert "killpoint: seed 11 " in header
        again, header = collected("--crash-seed=last")
        assert "killpoint: seed 11 " in header
        assert first == again
        other, _ = collected("--crash-seed=12")
        assert len(other) == 3
        assert other != first


class TestUserProject:
    def test_own_agent_scenario_marker_fixture_and_a_broken_runtime(
        self, pytester: pytest.Pytester
    ) -> None:
        """A user project: its agent factory and scenario pass through marker and fixture;
        its broken runtime fails — as a fixture check and as matrix cells — with the
        verdict, the first difference and a replay command that works."""
        shutil.copytree(FIXTURES / "userproject", pytester.path, dirs_exist_ok=True)
        result = run(
            pytester,
            "--crash-matrix",
            "--crash-runtime=shop.broken:forgetful",
            "--crash-scenarios=scenarios.refund:REFUND",
            "--crash-modes=tool-batch",
            "--crash-points=boundaries",
            "--crash-seed=5",
            "--crash-json=out.json",
        )
        result.assert_outcomes(passed=2, failed=3)
        out = result.stdout.str()
        broken = "shop.broken:forgetful/scenarios.refund:REFUND/tool-batch/sqlite"
        replay = f"PYTHONPATH={pytester.path} killpoint replay {broken}/after-checkpoint:1"
        result.stdout.fnmatch_lines(
            [
                # the fixture: one message listing each unexpected cell with its replay
                "*killpoint: shop.broken:forgetful on scenarios.refund:REFUND: 2 cells "
                "(2 duplicated), 2 unexpected, seed 5",
                f"  duplicated  {broken}/after-checkpoint:1",
                "              effect-duplicated: lookup_order(*) ran once more than in "
                "the baseline; it was not in flight at any crash, so no repeat is allowed",
                "              runs-differ: the baseline holds 1 run, the resumed run 2",
                f"              replay: {replay}",
                f"  duplicated  {broken}/after-checkpoint:2",
                # a matrix cell item: verdict, every finding, replay, seed
                f"killpoint: {broken}/after-checkpoint:1",
                "  verdict:          duplicated (unexpected for tool-batch at after-checkpoint:1)",
                "  findings:",
                "    effect-duplicated: *",
                f"  replay:           {replay}",
                "  seed:             5 (--crash-seed 5)",
                "  kept:             * (store, ledger, worker logs)",
            ],
            consecutive=False,
        )
        assert "test_refund_survives_every_boundary" not in out.split("short test summary")[1]
        document = read_json(pytester.path / "out.json")
        verdicts = {c["id"]: c["verdict"] for c in document["cells"]}
        good = "shop.agents:build/scenarios.refund:REFUND/tool-batch/sqlite"
        assert verdicts[f"{good}/after-checkpoint:1"] == "ok"
        assert verdicts[f"{good}/after-checkpoint:2"] == "ok"
        assert f"{good}/mid-batch:1:0" in verdicts
        assert verdicts[f"{broken}/after-checkpoint:2"] == "duplicated"


class TestWithoutCrash:
    def test_a_row_whose_baseline_breaks_the_contract_is_one_failing_item(
        self, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A late cancel shows in the uninterrupted run: the row gets one item of its own
        that fails naming it, and the crash cell whose resumed run cancels as late passes."""
        monkeypatch.setenv("PYTHONPATH", str(Path(__file__).parents[3]))
        result = run(
            pytester,
            "--crash-matrix",
            "--crash-runtime=tests.harness.broken_runtimes:late_cancel",
            "--crash-scenarios=cancel",
            "--crash-modes=tool-batch",
            "--crash-points=after-checkpoint:1",
        )
        result.assert_outcomes(passed=1, failed=1)
        result.stdout.fnmatch_lines(
            [
                "*killpoint: tests.harness.broken_runtimes:late_cancel/cancel/tool-batch/sqlite/"
                "without-crash: happens without a crash (the baseline shows it)",
                "*  cancel-late: a cancel was requested during model turn 3, *"
                "[[]group cancel-late:-:model@no-crash]",
                "without a crash: cancel-late: 1 row, diverged*",
            ],
            consecutive=False,
        )

    def test_a_broken_baseline_is_the_rows_without_crash_item(
        self, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Issue 56: a row whose baseline fails was reported as a crash cell at a point the
        test never asked for (`mid-model:1` under boundaries); the docs promise one item
        `ROW/without-crash`, failing with the baseline's problem, and no cell of the row."""
        monkeypatch.setenv("PYTHONPATH", str(Path(__file__).parents[3]))
        result = run(
            pytester,
            "--crash-matrix",
            "--crash-runtime=tests.harness.broken_runtimes:silent_final_write",
            "--crash-scenarios=research",
            "--crash-modes=tool-batch",
            "--crash-points=boundaries",
        )
        result.assert_outcomes(failed=1)
        row = "tests.harness.broken_runtimes:silent_final_write/research/tool-batch/sqlite"
        result.stdout.fnmatch_lines(
            [f"*killpoint: {row}/without-crash: happens without a crash: the baseline failed: *"]
        )
        assert "mid-model:1" not in result.stdout.str()


@pytest.mark.postgres
class TestPostgres:
    def test_each_xdist_worker_gets_its_own_database(
        self, pytester: pytest.Pytester, pg_url: str
    ) -> None:
        """With a PostgreSQL store every worker runs on a database the plugin created for
        it, and drops at the end."""
        pytester.makeini("[pytest]\n")
        pytester.makepyfile(
            test_where="""
            import os
            from pathlib import Path

            def test_where(crash):
                Path(os.environ["PYTEST_XDIST_WORKER"] + ".url").write_text(crash.store)
            """
        )
        result = run(
            pytester,
            "--crash-matrix",
            "--crash-scenarios=research",
            "--crash-modes=tool-batch",
            "--crash-points=after-checkpoint:2",
            f"--crash-store={pg_url}",
            "-n",
            "2",
            "--dist=each",
            "--crash-json=pg.json",
        )
        # Each of the 2 workers: the cell, test_where and the row's without-crash item (the
        # rules over its uninterrupted runs' histories, which pass).
        result.assert_outcomes(passed=6)
        urls = {p.stem: p.read_text() for p in pytester.path.glob("gw*.url")}
        assert sorted(urls) == ["gw0", "gw1"]
        databases = {w: url.rpartition("/")[2].partition("?")[0] for w, url in urls.items()}
        base = pg_url.rpartition("/")[2]
        assert databases["gw0"] != databases["gw1"]
        for worker, name in databases.items():
            assert name.startswith(f"{base}_") and name.endswith(f"_{worker}")
        engine = create_engine(pg_url)
        try:
            with engine.connect() as conn:
                left = conn.execute(text("SELECT datname FROM pg_database")).scalars().all()
        finally:
            engine.dispose()
        assert not set(databases.values()) & set(left)
        document = read_json(pytester.path / "pg.json")
        assert [(c["store"], c["verdict"]) for c in document["cells"]] == [("postgresql", "ok")]


class TestCrashFixtureReport:
    def test_the_report_of_crash_checks_says_what_they_ran(self, pytester: pytest.Pytester) -> None:
        """A session that runs only crash.check tests writes a report whose header is what
        ran (the project's runtime, its mode and points, every cell planned and judged),
        not the session's defaults with "2 / 0 cells (of planned)" and an Incomplete banner."""
        shutil.copytree(FIXTURES / "userproject", pytester.path, dirs_exist_ok=True)
        result = run(
            pytester, "-k", "survives_every_boundary", "--crash-json=out.json",
            "--crash-report=out.html",
        )  # fmt: skip
        result.assert_outcomes(passed=1, deselected=2)
        document = read_json(pytester.path / "out.json")
        assert (document["runtime"], document["modes"], document["points"]) == (
            "shop.agents:build",
            ["tool-batch"],
            "after-checkpoint",
        )
        assert (document["summary"]["cells"], document["summary"]["planned"]) == (2, 2)
        assert not document["interrupted"]
        page = (pytester.path / "out.html").read_text()
        assert "Incomplete" not in page and "(of planned)" not in page
        assert "shop.agents:build" in page


class TestNothingRan:
    def test_a_matrix_whose_every_point_is_skipped_exits_5(self, pytester: pytest.Pytester) -> None:
        """Every row lacks the point asked for: the skipped rows are no pass (pytest's own
        5, "no tests collected"), and the reason is in the summary."""
        pytester.makeini("[pytest]\n")
        result = run(
            pytester, "--crash-matrix", "--crash-scenarios=research", "--crash-modes=runs",
            "--crash-points=after-checkpoint:9",
        )  # fmt: skip
        assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED, result.stdout.str()
        result.stdout.fnmatch_lines(
            ["killpoint: no cell ran (exit 5): 1 skip, for 1 reason:",
             "  point after-checkpoint:9 is not in this row (1 checkpoint in its baseline)*"]
        )  # fmt: skip


class TestSeedLine:
    def test_a_session_without_the_matrix_prints_no_seed(self, pytester: pytest.Pytester) -> None:
        """The seed header belongs to --crash-matrix; an ordinary session (the plugin is
        always installed) prints nothing of killpoint's."""
        pytester.makepyfile(test_plain="def test_plain():\n    assert True\n")
        result = pytester.runpytest("-p", "no:randomly")
        result.assert_outcomes(passed=1)
        assert "killpoint: " not in result.stdout.str()  # the header names the plugin only
        with_matrix = pytester.runpytest(
            "-p", "no:randomly", "--crash-matrix", "--crash-scenarios=research",
            "--crash-modes=tool-batch", "--crash-points=after-checkpoint:1", "--collect-only",
        )  # fmt: skip
        assert "killpoint: seed " in with_matrix.stdout.str()


class TestMarkers:
    def test_crash_matrix_selects_cells_and_the_killpoint_marker_only_configures(
        self, pytester: pytest.Pytester
    ) -> None:
        """`-m crash_matrix` keeps exactly the matrix cells; the project's own tests that
        carry `@pytest.mark.killpoint(...)` for configuration are not selected by it."""
        pytester.makepyfile(
            test_own="""
            import pytest

            @pytest.mark.killpoint(modes="tool-batch")
            def test_configured_only():
                pass
            """
        )
        result = pytester.runpytest(
            "-p", "no:randomly", *SMALL[:3], "--crash-points=after-checkpoint:1",
            "-m", "crash_matrix", "--collect-only", "-q",
        )  # fmt: skip
        ids = [line for line in result.stdout.lines if "::" in line]
        assert ids == ["killpoint::reference/research/tool-batch/sqlite/after-checkpoint:1"]
        own = pytester.runpytest("-p", "no:randomly", "-m", "killpoint", "--collect-only", "-q")
        assert [line for line in own.stdout.lines if "::" in line] == [
            "test_own.py::test_configured_only"
        ]
