"""Cassettes in pytest: `crash.check(cassette=PATH)`, the `crash_cassettes` marker (a folder
of cassettes, one test item per cassette) and `--crash-record-mode`.

A relative cassette path, the marker's folder included, is read from the test file's
folder (as pytest-recording keeps cassettes beside their tests), so a test reads the
same files wherever pytest is started. The record mode says what happens before the
cassette's matrix runs: `none` replays only, and a missing cassette fails the test naming
the file and the flag; `once` records a missing cassette through the recording proxy
(killpoint.recording.record, as `killpoint record` does) and replays one that exists;
`rewrite` records every cassette again. A cassette recorded from an older agent is found
stale by the matrix's baseline (`cassette-stale`), which the failure message tells how to
record again.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from killpoint.plugin.keys import CASSETTE_FIXTURE, CASSETTES_MARKER

FLAG = "--crash-record-mode"
PATTERN = "*.json"


def cassette_path(test_file: Path, given: Any) -> Path:
    """A cassette path as a test gives it: a relative one from the test file's folder."""
    path = Path(str(given)).expanduser()
    return path if path.is_absolute() else test_file.parent / path


@dataclass(frozen=True)
class Recorded:
    """What recording a cassette before its check did (None of it: nothing recorded)."""

    path: Path
    line: str


def prepare(path: Path, mode: str, runtime: str, scenario: str | None) -> Recorded | None:
    """Make `path` what the record mode asks for before its matrix runs: recorded when it
    is missing (`once`) or always (`rewrite`); fails the test when it cannot be. `scenario`:
    the scenario a missing cassette is recorded from (its tools and inputs); one that
    exists is recorded again from what it holds (its scenario, inputs, name, redactions)."""
    __tracebackhide__ = True
    exists = path.is_file()
    if mode == "none" or (mode == "once" and exists):
        if not exists:
            pytest.fail(
                f"killpoint: cassette {str(path)!r} does not exist; record it with "
                f"{FLAG}=once (the agent runs once against its provider) or `killpoint "
                f"record --runtime {runtime} --out {path}`",
                pytrace=False,
            )
        return None
    return _record(path, runtime, scenario)


def _record(path: Path, runtime: str, scenario: str | None) -> Recorded:
    __tracebackhide__ = True
    from killpoint.errors import AdapterError, RecordError, ScenarioRefError
    from killpoint.recording.record import Plan, record
    from killpoint.scenarios import cassette as cassettes

    plan = Plan(runtime=runtime, out=path, scenario=scenario)
    problem = None
    if path.is_file():
        try:
            old = cassettes.load(path)
        except cassettes.CassetteError as exc:
            problem = f"{exc}; delete it to record it afresh"
        else:
            plan = Plan(
                runtime=runtime,
                out=path,
                scenario=old.scenario,
                inputs=old.inputs,
                name=old.name,
                mode=old.recorded.get("mode"),
                redact_headers=old.redactions.headers,
                redact_paths=old.redactions.paths,
                agent_version=old.recorded.get("agent_version"),
            )
    elif scenario is None:
        problem = (
            "nothing to send the agent: give crash.check scenario= (the scenario whose "
            "tools and inputs are recorded) or record it with `killpoint record --input TEXT`"
        )
    if problem is None:
        try:
            made = record(plan)
        except (AdapterError, RecordError, ScenarioRefError) as exc:
            problem = str(exc)
        else:
            served = sum(1 for i in made.cassette.interactions if i.said is not None)
            line = (
                f"recorded {path} ({len(made.cassette.interactions)} model requests, "
                f"{served} answered)"
            )
            return Recorded(made.path, line)
    pytest.fail(
        f"killpoint: {FLAG}: cannot record cassette {str(path)!r}: {problem}", pytrace=False
    )


def folder_cassettes(folder: Path, given: Any) -> list[Path]:
    """The cassettes of a `crash_cassettes` folder, by name; a folder without any fails
    the collection, naming it."""
    __tracebackhide__ = True
    found = sorted(folder.glob(PATTERN)) if folder.is_dir() else []
    if not found:
        why = "no cassette (*.json) in" if folder.is_dir() else "no folder"
        pytest.fail(
            f"killpoint: @pytest.mark.{CASSETTES_MARKER}({str(given)!r}): {why} {folder}; "
            f"record one with `killpoint record --out {folder}/NAME.json`",
            pytrace=False,
        )
    return found


def parametrize(metafunc: pytest.Metafunc) -> None:
    """A test marked `crash_cassettes(FOLDER)` runs once per cassette in the folder, each
    item named by its file: its `crash.check()` checks that cassette."""
    __tracebackhide__ = True
    mark = metafunc.definition.get_closest_marker(CASSETTES_MARKER)
    if mark is None:
        return
    given = mark.args[0] if mark.args else mark.kwargs.get("folder")
    if given is None or CASSETTE_FIXTURE not in metafunc.fixturenames:
        pytest.fail(
            f"killpoint: @pytest.mark.{CASSETTES_MARKER}(FOLDER) names a folder of cassettes "
            "for a test that uses the `crash` fixture",
            pytrace=False,
        )
    files = folder_cassettes(cassette_path(metafunc.definition.path, given), given)
    metafunc.parametrize(CASSETTE_FIXTURE, files, ids=[f.stem for f in files], indirect=True)


__all__ = [
    "FLAG",
    "Recorded",
    "cassette_path",
    "folder_cassettes",
    "parametrize",
    "prepare",
]
