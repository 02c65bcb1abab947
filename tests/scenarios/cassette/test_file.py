# ruff: noqa: SIM300 - tests assert `expected == actual`
"""The cassette file: written whole or not at all, read back equal, refused with a reason."""

from __future__ import annotations

import json
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
