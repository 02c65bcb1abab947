"""The `killpoint` command as a user runs it: a real process, real workers, real signals."""

# ruff: noqa: SIM300
from __future__ import annotations

import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
from multiprocessing import connection
from pathlib import Path

import psutil
import pytest

from tests.harness.ticking_campaign import ctrl_c_default

REPO = Path(__file__).resolve().parents[3]
BLOCKING = "tests.harness.scenarios_for_tests:BLOCKING"

pytestmark = pytest.mark.slow


def killpoint(
    *args: str, cwd: Path = REPO, timeout: float = 240, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "killpoint.cli.main", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


class TestBadInput:
    @pytest.mark.parametrize(
        ("args", "named"),
        [
            (["--scenarios", "nope"], "unknown scenario 'nope'"),
            (["--modes", "fast"], "--modes='fast': not a mode of runtime 'reference'"),
            (["--points", "after-checkpoint:x"], "--points='after-checkpoint:x': not a group"),
            (["--runtime", "nosuch"], "unknown runtime 'nosuch'"),
            (["--store", "mysql://u@h/db"], "'mysql'"),
            (["--store", "postgresql+psycopg://nobody@127.0.0.1:1/db"], "cannot reach the store"),
            (["--json", "/proc/killpoint/out.json"], "cannot write in '/proc/killpoint'"),
            (["--report", "/proc/kp.html"], "cannot write in '/proc'"),
            (
                ["--work-dir", "/proc/killpoint/work"],
                "--work-dir='/proc/killpoint/work': cannot keep cells there",
            ),
            (["--timeout", "nan"], "--timeout='nan': give a finite number of seconds above 0"),
            (["--scenarios", ","], "--scenarios=',': names nothing"),
        ],
    )
    def test_one_line_naming_the_value_and_exit_2(
        self, tmp_path: Path, args: list[str], named: str
    ) -> None:
        """Bad input gets one line that names the value, exit status 2, no traceback, and
        nothing written."""
        out = tmp_path / "reports"
        defaults = ["--json", str(out / "m.json"), "--report", str(out / "m.html")]
        result = killpoint("matrix", *defaults, *args)
        assert 2 == result.returncode
        assert named in result.stderr
        assert 1 == len(result.stderr.strip().splitlines()), result.stderr
        assert "Traceback" not in result.stderr
        assert not (out / "m.json").exists()

    @pytest.mark.skipif(
        connection.arbitrary_address("AF_UNIX").startswith("\0"),
        reason="this Python puts multiprocessing's sockets in the abstract namespace",
    )
    def test_a_temporary_folder_too_long_for_the_forkserver_socket(self, tmp_path: Path) -> None:
        """multiprocessing puts the forkserver's socket in TMPDIR; a path too long for
        AF_UNIX is named before anything starts, instead of a traceback from a worker."""
        temp = tmp_path / ("t" * 80)
        temp.mkdir()
        out = tmp_path / "m.json"
        result = killpoint(
            "matrix", "--scenarios", "research", "--points", "after-checkpoint:1",
            "--json", str(out), "--report", str(tmp_path / "m.html"), env={"TMPDIR": str(temp)},
        )  # fmt: skip
        assert 2 == result.returncode
        assert f"the temporary folder '{temp}' is too long" in result.stderr
        assert 1 == len(result.stderr.strip().splitlines()), result.stderr
        assert not out.exists()

    def test_an_unknown_cell_id_is_refused(self) -> None:
        """replay names the malformed cell id and shows its shape."""
        result = killpoint("replay", "research/after-checkpoint:2")
        assert 2 == result.returncode
        assert "RUNTIME/SCENARIO/MODE/STORE/SCHEDULE" in result.stderr


class TestMatrix:
    def test_matrix_writes_json_and_replay_reproduces_a_cell(self, tmp_path: Path) -> None:
        """A small matrix exits 0, its JSON has the documented fields, and replaying one of
        its cells gives the same verdict."""
        path = tmp_path / "m.json"
        result = killpoint(
            "matrix", "--scenarios", "research", "--modes", "tool-batch",
            "--points", "boundaries", "--json", str(path), "--report", str(tmp_path / "m.html"),
        )  # fmt: skip
        assert 0 == result.returncode, result.stderr
        document = json.loads(path.read_text())
        assert 4 == len(document["cells"])
        cell = document["cells"][1]
        assert {"id", "runtime", "scenario", "mode", "store", "schedule", "verdict",
                "expected", "duplicates", "seconds", "replay"} <= set(cell)  # fmt: skip
        assert ("ok", True) == (cell["verdict"], cell["expected"])
        replay = killpoint("replay", cell["id"], "--json", str(path))
        assert 0 == replay.returncode, replay.stdout + replay.stderr
        assert "reproduced" == replay.stdout.splitlines()[-1]

    def test_a_row_whose_baseline_failed_says_which_cells_were_not_planned_and_why(
        self, tmp_path: Path
    ) -> None:
        """The summary, and the text and Markdown files, name the row whose baseline failed,
        the crash cells its one cell stands for, and the baseline's failure (before, a user
        saw one cell at a point never asked for, and no reason)."""
        from tests.harness.failed_baseline import PROBLEM, RUNTIME

        result = killpoint(
            "matrix", "--runtime", RUNTIME, "--scenarios", "research", "--modes", "tool-batch",
            "--points", "after-checkpoint", "--json", str(tmp_path / "m.json"),
            "--report", str(tmp_path / "m.html"), "--text", str(tmp_path / "m.txt"),
            "--markdown", str(tmp_path / "m.md"),
        )  # fmt: skip
        assert 1 == result.returncode, result.stderr
        said = (
            "research/tool-batch: its baseline failed, so the 3 crash cells its run offered "
            f"were not planned: {PROBLEM}"
        )
        assert said in result.stdout
        assert said in (tmp_path / "m.txt").read_text()
        assert "3 not planned" in (tmp_path / "m.md").read_text()

    def test_cells_live_in_the_work_dir_and_an_unused_default_one_is_removed(
        self, tmp_path: Path
    ) -> None:
        """--work-dir is where each run makes its own folder for the cells (two runs do not
        collide); without it, that folder (here in TMPDIR) is gone afterwards when no cell
        was kept in it."""
        one_cell = ["matrix", "--scenarios", "research", "--modes", "tool-batch",
                    "--points", "after-checkpoint:1", "--json", str(tmp_path / "m.json"),
                    "--report", str(tmp_path / "m.html")]  # fmt: skip
        work = tmp_path / "work"
        result = killpoint(*one_cell, "--keep", "all", "--work-dir", str(work))
        assert 0 == result.returncode, result.stderr
        cells = json.loads((tmp_path / "m.json").read_text())["cells"]
        kept = [Path(c["kept"]) for c in cells]
        assert 1 == len(kept)
        assert work == kept[0].parent.parent
        assert any(kept[0].iterdir())
        # replay --keep names the cell's own folder
        replay = killpoint("replay", cells[0]["id"], "--keep", "--work-dir", str(work))
        assert 0 == replay.returncode, replay.stderr
        line = next(x for x in replay.stdout.splitlines() if x.startswith("kept: "))
        again = Path(line.removeprefix("kept: ").partition(" ")[0])
        assert work == again.parent.parent
        assert kept[0].parent != again.parent
        assert any(again.iterdir())
        # Short: multiprocessing puts its forkserver's socket in TMPDIR (108 bytes at most).
        temp = Path(tempfile.mkdtemp(prefix="kp-", dir="/tmp"))
        try:
            result = killpoint(*one_cell, env={"TMPDIR": str(temp)})
            assert 0 == result.returncode, result.stderr
            assert [] == list(temp.iterdir())
        finally:
            shutil.rmtree(temp)

    def test_nothing_it_started_outlives_the_command(self, tmp_path: Path) -> None:
        """When `killpoint matrix` returns, its workers and its forkserver are gone: the
        forkserver is stopped and reaped before the command exits, not a moment after.
        (multiprocessing's resource tracker, which exits when its pipe closes, is left
        out of the check.)"""
        mark = f"killpoint-test-{os.getpid()}-{tmp_path.name}"
        proc = subprocess.Popen(
            [sys.executable, "-m", "killpoint.cli.main", "matrix", "--scenarios", "research",
             "--modes", "tool-batch", "--points", "after-checkpoint:1",
             "--json", str(tmp_path / "m.json"), "--report", str(tmp_path / "m.html")],
            cwd=REPO, env={**os.environ, "KILLPOINT_TEST_MARK": mark},
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        assert 0 == proc.wait(timeout=240)
        left = []
        for p in psutil.process_iter(["pid", "cmdline"]):
            try:
                if p.environ().get("KILLPOINT_TEST_MARK") != mark:
                    continue
            except psutil.Error:
                continue
            if "resource_tracker" not in " ".join(p.info["cmdline"] or ()):
                left.append((p.info["pid"], p.info["cmdline"]))
        assert [] == left

    def test_a_hung_row_does_not_stop_the_campaign(self, tmp_path: Path) -> None:
        """A row whose worker never finishes is killed and reported hung; the other rows
        still run; the exit status says something was unexpected; no worker is left."""
        path = tmp_path / "m.json"
        result = killpoint(
            "matrix", "--scenarios", f"{BLOCKING},research", "--modes", "tool-batch",
            "--points", "after-checkpoint:1", "--timeout", "3",
            "--json", str(path), "--report", str(tmp_path / "m.html"),
        )  # fmt: skip
        assert 1 == result.returncode, result.stderr
        verdicts = {c["scenario"]: c["verdict"] for c in json.loads(path.read_text())["cells"]}
        assert {BLOCKING: "hung", "research": "ok"} == verdicts

    def test_demo_tells_the_story(self) -> None:
        """The demo crashes after checkpoint 1, shows the store, continues and compares."""
        result = killpoint("demo")
        assert 0 == result.returncode, result.stderr
        for step in (
            "gate checkpoint:1:landed",
            "killed (exit -9)",
            "status RUNNING",
            "ok (expected)",
        ):
            assert step in result.stdout


class TestInterrupt:
    def test_ctrl_c_kills_every_worker_writes_what_it_has_and_exits_130(
        self, tmp_path: Path
    ) -> None:
        """SIGINT while a worker sits in a tool: exit 130, the JSON is written (marked
        interrupted), and no process of the campaign survives."""
        fifo = tmp_path / "in-tool"
        os.mkfifo(fifo)
        path = tmp_path / "m.json"
        env = {**os.environ, "KILLPOINT_TEST_FIFO": str(fifo)}
        proc = subprocess.Popen(
            [sys.executable, "-m", "killpoint.cli.main", "matrix", "--scenarios", BLOCKING,
             "--modes", "tool-batch", "--points", "boundaries", "--timeout", "120",
             "--json", str(path), "--report", str(tmp_path / "m.html")],
            cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            preexec_fn=ctrl_c_default,
        )  # fmt: skip
        try:
            # Wait on the pipe for the tool to say it is running: no sleeps.
            fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
            try:
                ready, _, _ = select.select([fd], [], [], 60)
                assert ready, "no worker reached the tool"
            finally:
                os.close(fd)
            family = psutil.Process(proc.pid).children(recursive=True)
            assert family, "the campaign has no worker processes"
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=60)
            assert 130 == proc.returncode, proc.stderr.read() if proc.stderr else ""
            _, alive = psutil.wait_procs(family, timeout=30)
            assert [] == [p.pid for p in alive]
            assert json.loads(path.read_text())["interrupted"] is True
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


class TestUserProject:
    def test_a_project_with_its_own_runtime_scenarios_and_harness_packages(
        self, tmp_path: Path
    ) -> None:
        """A user project whose own `runtime`, `scenarios` and `harness` packages share
        their names with killpoint's folders runs the installed `killpoint` command from
        its folder, unchanged; the replay command it prints works from another folder."""
        project = tmp_path / "shop"
        shutil.copytree(REPO / "tests/harness/fixtures/userproject", project)
        command = str(Path(sys.executable).parent / "killpoint")
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        result = subprocess.run(
            [command, "matrix", "--runtime", "shop.agents:build",
             "--scenarios", "scenarios.refund:REFUND", "--modes", "tool-batch",
             "--points", "boundaries", "--json", "out.json", "--report", "out.html"],
            cwd=project, capture_output=True, text=True, timeout=240, env=env,
        )  # fmt: skip
        assert 0 == result.returncode, result.stderr + result.stdout
        document = json.loads((project / "out.json").read_text())
        row = "shop.agents:build/scenarios.refund:REFUND/tool-batch/sqlite"
        assert {f"{row}/after-checkpoint:1": "ok", f"{row}/after-checkpoint:2": "ok"} == {
            c["id"]: c["verdict"] for c in document["cells"]
        }
        replay = document["cells"][0]["replay"]
        assert replay.startswith(f"PYTHONPATH={project} killpoint replay {row}/")

        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        again = subprocess.run(
            replay.replace(" killpoint ", f" {command} ", 1),
            shell=True, cwd=elsewhere, capture_output=True, text=True, timeout=120, env=env,
        )  # fmt: skip
        assert 0 == again.returncode, again.stderr + again.stdout
        assert f"{row}/after-checkpoint:1: ok (expected)" in again.stdout


class TestPointsARowLacks:
    def test_an_explicit_point_a_row_lacks_is_skipped_with_the_reason(self, tmp_path: Path) -> None:
        """`--points lock-held:2` in mode runs (one checkpoint) and `after-checkpoint:9` of a
        five-checkpoint row are skipped with the reason, never run as `missed` cells; the
        rows that have them run them."""
        path = tmp_path / "m.json"
        result = killpoint(
            "matrix", "--scenarios", "research", "--modes", "runs,tool-batch",
            "--points", "lock-held:2,after-checkpoint:9", "--json", str(path),
            "--report", str(tmp_path / "m.html"),
        )  # fmt: skip
        assert 0 == result.returncode, result.stdout + result.stderr
        document = json.loads(path.read_text())
        assert {"reference/research/tool-batch/sqlite/lock-held:2": "ok"} == {
            c["id"]: c["verdict"] for c in document["cells"]
        }
        skipped = {(s["mode"], s["point"]): s["reason"] for s in document["skipped"]}
        assert {("runs", "lock-held:2"), ("runs", "after-checkpoint:9"),
                ("tool-batch", "after-checkpoint:9")} == set(skipped)  # fmt: skip
        assert skipped[("runs", "lock-held:2")].startswith(
            "point lock-held:2 is not in this row (1 checkpoint in its baseline)"
        )
        assert "skipped research/runs: point lock-held:2 is not in this row" in result.stdout

    def test_a_campaign_that_runs_no_cell_exits_5_with_every_reason(self, tmp_path: Path) -> None:
        """Every row lacks the one point asked for: nothing ran, so the campaign is not
        green (pytest's 5, "no tests collected"), and each skip says why."""
        path = tmp_path / "m.json"
        result = killpoint(
            "matrix", "--scenarios", "research,cancel", "--modes", "runs",
            "--points", "after-checkpoint:9", "--json", str(path),
            "--report", str(tmp_path / "m.html"),
        )  # fmt: skip
        assert 5 == result.returncode, result.stdout + result.stderr
        assert "killpoint: no cell ran (exit 5): 2 skips, for 1 reason:" in result.stderr
        assert (
            "  point after-checkpoint:9 is not in this row (1 checkpoint in its baseline): "
            "after-checkpoint:9 is not a boundary of this baseline; it has 1 checkpoint, "
            "no boundary between two (research/runs, cancel/runs)"
        ) in result.stderr.splitlines()
        assert [] == json.loads(path.read_text())["cells"]  # the reports are still written
        assert "skipped" in (tmp_path / "m.html").read_text()

    def test_a_campaign_that_plans_no_cell_keeps_an_earlier_report(self, tmp_path: Path) -> None:
        """A user's earlier report, which replay and --rerun-failed read, was replaced by a
        report of no cell when a later command planned none (a point no row has): the
        reports are left as they were, and the command says so."""
        paths = ("--json", str(tmp_path / "m.json"), "--report", str(tmp_path / "m.html"))
        first = killpoint(
            "matrix", "--scenarios", "research", "--modes", "tool-batch",
            "--points", "after-checkpoint:1", *paths,
        )  # fmt: skip
        assert 0 == first.returncode, first.stdout + first.stderr
        before = {n: (tmp_path / n).read_bytes() for n in ("m.json", "m.html")}
        again = killpoint(
            "matrix", "--scenarios", "research", "--modes", "tool-batch",
            "--points", "after-checkpoint:99", *paths, "--junit", str(tmp_path / "m.xml"),
        )  # fmt: skip
        assert 5 == again.returncode, again.stdout + again.stderr
        assert before == {n: (tmp_path / n).read_bytes() for n in ("m.json", "m.html")}
        assert not (tmp_path / "m.xml").exists()
        assert (
            "killpoint: no cell was planned, so the reports were left as they were: "
            f"{tmp_path / 'm.json'} holds the 1 cell of an earlier campaign"
        ) in again.stderr.splitlines()
        assert "written:" not in again.stdout

    def test_power_loss_without_libfuse_says_how_to_install_it_and_exits_5(
        self, tmp_path: Path
    ) -> None:
        """The environment names a libfuse that is not installed, so mfusepy cannot load
        one (as on a machine without fuse3): the power-loss points are skipped, the reason
        says what to install, and a campaign of only those points fails."""
        result = killpoint(
            "matrix", "--scenarios", "research", "--modes", "tool-batch",
            "--points", "power-loss", "--json", str(tmp_path / "m.json"),
            "--report", str(tmp_path / "m.html"),
            env={"FUSE_LIBRARY_NAME": "kp-no-such-fuse", "KILLPOINT_NO_FUSE": ""},
        )  # fmt: skip
        assert 5 == result.returncode, result.stdout + result.stderr
        assert "killpoint: no cell ran (exit 5): 1 skip, for 1 reason:" in result.stderr
        assert (
            "  power-loss, power-loss-mid-commit points: libfuse 3 is missing (Unable to find "
            "libfuse); install it: apt-get install fuse3 (research/tool-batch)"
        ) in result.stderr.splitlines()

    def test_replaying_a_point_the_row_lacks_is_bad_input(self) -> None:
        result = killpoint("replay", "reference/research/tool-batch/sqlite/after-checkpoint:9")
        assert 2 == result.returncode, result.stdout + result.stderr
        assert 1 == len(result.stderr.strip().splitlines()), result.stderr
        assert "after-checkpoint:9" in result.stderr
        assert "" == result.stdout


class TestOutput:
    def test_failure_text_is_printed_as_it_is_on_stdout_in_long_lines(self, tmp_path: Path) -> None:
        """A runtime error that reads like rich markup (`[/]`, `[bold]`) is printed as it
        is, cut with an ellipsis; the summary goes to stdout (a pipe here), unwrapped at
        80 columns; the paths written are absolute; `killpoint report` writes beside its
        JSON."""
        sub = tmp_path / "sub"
        result = killpoint(
            "matrix", "--runtime", "tests.harness.broken_adapters:Bracketed",
            "--scenarios", "research", "--modes", "tool-batch", "--points", "after-checkpoint:1",
            "--json", "sub/m.json", "--report", "sub/m.html", cwd=tmp_path,
            env={"PYTHONPATH": str(REPO)},
        )  # fmt: skip
        assert 1 == result.returncode, result.stdout + result.stderr
        assert "Traceback" not in result.stderr and "MarkupError" not in result.stderr
        lines = result.stdout.splitlines()
        said = next(line for line in lines if "the store said" in line)
        assert "the store said [/] and [bold]loud[/bold] and so on" in said
        assert said.endswith("…") and "and so on and so on" in said
        row = "tests.harness.broken_adapters:Bracketed/research/tool-batch/sqlite"
        assert any(f"killpoint replay {row}/after-checkpoint:1" in line for line in lines)
        assert any(line.startswith("crash matrix") for line in lines)  # the table's title
        written = next(line for line in lines if line.startswith("written: "))
        assert f"written: {sub / 'm.json'}, {sub / 'm.html'}" == written
        assert "written:" not in result.stderr

        (sub / "m.html").unlink()
        report = killpoint("report", "sub/m.json", cwd=tmp_path)
        assert 0 == report.returncode, report.stderr
        assert f"written: {sub / 'm.html'}" == report.stdout.strip()
        assert (sub / "m.html").exists()

    def test_report_says_what_it_wrote_as_matrix_does_a_fallback_too(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """`killpoint report` printed bare paths where `matrix`, `merge` and the rebuild
        print `written: …`, and nothing at all when a format went to a fallback."""
        from killpoint.cli.exit_codes import EXIT_NOT_WRITTEN
        from killpoint.cli.main import main
        from killpoint.engine.campaign import CampaignResult
        from killpoint.engine.cell_log import CellLog
        from killpoint.engine.options import CampaignConfig
        from killpoint.report.document import dumps, to_document
        from killpoint.report.targets import fallback_path
        from tests.harness.report.test_junit import cell

        source = tmp_path / "m.json"
        result = CampaignResult(CampaignConfig(), 9, CellLog([cell("after-checkpoint:1")]))
        source.write_text(dumps(to_document(result)))
        html, text = tmp_path / "r.html", tmp_path / "r.txt"
        assert 0 == main(["report", str(source), "-o", str(html), "--text", str(text)])
        assert [f"written: {html}, {text}"] == capsys.readouterr().out.splitlines()
        if not os.access("/dev/full", os.W_OK):
            pytest.skip("no writable /dev/full")
        fallback = fallback_path(Path("/dev/full"))
        try:
            assert EXIT_NOT_WRITTEN == main(["report", str(source), "--text", "/dev/full"])
            assert [f"written: {fallback}"] == capsys.readouterr().out.splitlines()
        finally:
            fallback.unlink(missing_ok=True)


class TestRerunAndAccept:
    def test_rerun_failed_reruns_those_cells_and_an_accept_file_lets_them_pass(
        self, tmp_path: Path
    ) -> None:
        """--rerun-failed runs exactly the unexpected cells of a report; --accept with their
        group key makes them accepted (exit 0); a report with nothing unexpected reruns
        nothing."""
        row = "tests.harness.broken_adapters:Stamped/research/tool-batch/sqlite"
        first = killpoint(
            "matrix", "--runtime", "tests.harness.broken_adapters:Stamped",
            "--scenarios", "research", "--modes", "tool-batch",
            "--points", "after-checkpoint:1,after-checkpoint:2",
            "--json", str(tmp_path / "a.json"), "--report", str(tmp_path / "a.html"),
        )  # fmt: skip
        assert 1 == first.returncode, first.stdout + first.stderr
        document = json.loads((tmp_path / "a.json").read_text())
        failed = sorted(c["id"] for c in document["cells"] if not c["expected"])
        # A row whose baseline is not deterministic carries that in one cell.
        assert [f"{row}/after-checkpoint:1"] == failed

        again = killpoint(
            "matrix", "--rerun-failed", str(tmp_path / "a.json"),
            "--json", str(tmp_path / "b.json"), "--report", str(tmp_path / "b.html"),
        )  # fmt: skip
        assert 1 == again.returncode, again.stdout + again.stderr
        rerun = json.loads((tmp_path / "b.json").read_text())
        assert failed == sorted(c["id"] for c in rerun["cells"])

        (key,) = {g["key"] for g in rerun["groups"] if g["verdict"] != "ok"}
        accept = tmp_path / "accept.toml"
        accept.write_text(f'[[accept]]\ngroup = "{key}"\nreason = "a clock in every run"\n')
        accepted = killpoint(
            "matrix", "--rerun-failed", str(tmp_path / "a.json"), "--accept", str(accept),
            "--json", str(tmp_path / "c.json"), "--report", str(tmp_path / "c.html"),
        )  # fmt: skip
        assert 0 == accepted.returncode, accepted.stdout + accepted.stderr
        assert f"accepted: {key}: 1 cell: a clock in every run" in accepted.stdout

        nothing = killpoint(
            "matrix", "--rerun-failed", str(tmp_path / "c.json"),
            "--json", str(tmp_path / "d.json"), "--report", str(tmp_path / "d.html"),
        )  # fmt: skip
        assert 0 == nothing.returncode, nothing.stdout + nothing.stderr
        assert "nothing to rerun" in nothing.stdout


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["matrix", "--no-such-option"], "unrecognized arguments: --no-such-option"),
        (["search", "--depth", "deep"], "'deep' is not a whole number"),
        (["no-such-command"], "invalid choice: 'no-such-command'"),
        ([], "the following arguments are required: COMMAND"),
    ],
)
def test_a_parser_error_is_one_line_with_the_fix(args: list[str], named: str) -> None:
    """argparse's own errors read as killpoint's others do: one line, the value, where to
    look next, exit 2 (its default is the usage block, then the error)."""
    done = killpoint(*args)
    assert 2 == done.returncode
    lines = done.stderr.strip().splitlines()
    assert 1 == len(lines), done.stderr
    assert named in lines[0] and "--help`" in lines[0], lines[0]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            ["matrix", "--timout", "5"],
            "killpoint: unrecognized arguments: --timout 5; did you mean --timeout? "
            "(see `killpoint matrix --help`)",
        ),
        (
            ["corpus", "record", "--out", "c", "--runtme", "reference"],
            "killpoint: unrecognized arguments: --runtme reference; did you mean --runtime? "
            "(see `killpoint corpus record --help`)",
        ),
        (
            ["matrix", "--no-such-option"],
            "killpoint: unrecognized arguments: --no-such-option (see `killpoint matrix --help`)",
        ),
    ],
)
def test_an_unknown_option_points_at_the_commands_help_and_its_nearest_option(
    tmp_path: Path, args: list[str], expected: str
) -> None:
    """An option the subcommand does not take: its own help, and the option it was
    probably meant to be; nothing runs."""
    done = killpoint(*args, cwd=tmp_path, env={"PYTHONPATH": str(REPO)})
    assert 2 == done.returncode
    assert [expected] == done.stderr.strip().splitlines()
    assert [] == list(tmp_path.iterdir())
