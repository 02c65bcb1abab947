# ruff: noqa: SIM300 - tests assert `expected == actual`
"""The cassette file: written whole or not at all, read back equal, refused with a reason."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from killpoint.scenarios.cassette import CassetteError, dump, from_json, load
from killpoint.scenarios.wire import RESPONSES
from tests.scenarios.cassette.support import recorded


def test_a_cassette_round_trips(tmp_path: Path) -> None:
    cassette, _ = recorded(tmp_path, RESPONSES, stream=True)
    again = from_json(json.loads(json.dumps(cassette.to_json())))
    assert cassette.to_json() == again.to_json()
    first = cassette.interactions[0]
    assert first.said is not None and "search" == first.said.calls[0]["name"]
    assert first.response.events is not None
    data = json.loads(next(tmp_path.glob("*.json")).read_text())
    assert {"text", "calls", "usage"} == set(data["interactions"][0]["reply"])


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.update(killpoint_cassette=9), "this killpoint reads format 1"),
        (lambda d: d.pop("killpoint_cassette"), "not a killpoint cassette"),
        (lambda d: d.update(inputs=[]), "inputs should be a list of one or more texts"),
        (lambda d: d["outcomes"].append(d["outcomes"][0]), "1 inputs but 2 outcomes"),
        (
            lambda d: d["interactions"][0]["request"].update(format="grpc"),
            "format 'grpc' is none of",
        ),
        (lambda d: d["interactions"][0]["response"].pop("events"), "needs a body (text) or events"),
        (lambda d: d["redactions"].update(paths=["user"]), "should begin with '$'"),
    ],
)
def test_a_bad_cassette_says_what_is_wrong(tmp_path: Path, change: object, message: str) -> None:
    cassette, _ = recorded(tmp_path, RESPONSES, stream=True)
    data = cassette.to_json()
    change(data)  # type: ignore[operator]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(CassetteError, match=r"bad\.json") as info:
        load(path)
    assert message in str(info.value)


def test_missing_and_not_json(tmp_path: Path) -> None:
    with pytest.raises(CassetteError, match=r"cannot be read .* `killpoint record"):
        load(tmp_path / "none.json")
    (tmp_path / "x.json").write_text("{")
    with pytest.raises(CassetteError, match="is not JSON"):
        load(tmp_path / "x.json")


def test_a_write_replaces_the_file_whole(tmp_path: Path) -> None:
    """Written to a temporary file then renamed: the folder holds the cassette and nothing
    else, and a reader never sees half of one."""
    cassette, _ = recorded(tmp_path / "r", RESPONSES, stream=False)
    path = tmp_path / "out" / "c.json"
    dump(cassette, path)
    dump(cassette, path)
    assert ["c.json"] == [p.name for p in path.parent.iterdir()]
    assert cassette.to_json() == load(path).to_json()


# A child that loads one path under a memory ceiling and prints what load() said: a load
# that reads /dev/zero without end or waits on a FIFO fails the test instead of taking
# the machine or the run with it.
_LOAD_IN_CHILD = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (1 << 31, 1 << 31))
from killpoint.scenarios.cassette import CassetteError, load
try:
    load(sys.argv[1])
except CassetteError as exc:
    print(exc)
"""


def _refusal_in_child(path: Path) -> str:
    try:
        done = subprocess.run(
            [sys.executable, "-c", _LOAD_IN_CHILD, str(path)],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"loading {path} did not return within 30 s")
    assert 0 == done.returncode, done.stderr[-2000:]
    return done.stdout.strip()


@pytest.mark.parametrize("kind", ["device", "fifo"])
def test_a_device_or_a_pipe_is_refused_unread(tmp_path: Path, kind: str) -> None:
    """/dev/zero never ends and a FIFO with no writer never starts: both are refused as no
    regular file, at once, with the fix."""
    path = Path("/dev/zero")
    if kind == "fifo":
        path = tmp_path / "cassette.json"
        os.mkfifo(path)
    message = _refusal_in_child(path)
    assert f"cassette {str(path)!r} is not a regular file" in message
    assert "`killpoint record --out PATH`" in message


def test_a_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(CassetteError, match=r"is not a regular file .*`killpoint record"):
        load(tmp_path)


def test_a_cassette_over_the_bound_is_refused_unread(tmp_path: Path) -> None:
    """64 MiB and a byte: refused by its size, before any of it is read (a sparse file:
    nothing is written to disk)."""
    path = tmp_path / "big.json"
    with path.open("wb") as f:
        f.truncate(64 * 1024 * 1024 + 1)
    with pytest.raises(CassetteError, match=r"big\.json' is larger than 64 MiB"):
        load(path)


def test_a_cassette_nested_too_deep_is_refused(tmp_path: Path) -> None:
    """The JSON parser recurses per level: 100,000 levels are a CassetteError, not a
    RecursionError, and the message quotes none of the file."""
    path = tmp_path / "deep.json"
    path.write_text('{"killpoint_cassette": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(CassetteError, match=r"deep\.json' is JSON nested too deep") as info:
        load(path)
    assert "[[" not in str(info.value)
