"""Input files are read within a size and a depth: `/dev/zero`, a 100k-deep JSON or TOML,
and a file that is not UTF-8 give one line (InputError), before memory or the stack run out."""

from __future__ import annotations

from pathlib import Path

import pytest

from killpoint.errors import InputError
from killpoint.values.input_files import DEPTH, load_json, load_toml, nesting


def test_dev_zero_is_refused_within_the_limit() -> None:
    with pytest.raises(InputError, match="larger than 1 MiB"):
        load_json(Path("/dev/zero"), limit=1024 * 1024)
    with pytest.raises(InputError, match="larger than 1 MiB"):
        load_toml(Path("/dev/zero"))


@pytest.mark.parametrize("depth", [DEPTH + 1, 900, 100_000])
def test_deep_json_and_toml_are_refused(tmp_path: Path, depth: int) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text("[" * depth + "]" * depth)
    with pytest.raises(InputError, match="nests deeper"):
        load_json(deep)
    toml = tmp_path / "deep.toml"
    toml.write_text("a = " + "[" * depth + "]" * depth)
    with pytest.raises(InputError, match="nests deeper"):
        load_toml(toml)


def test_what_killpoint_writes_is_well_within_the_depth() -> None:
    assert nesting({"a": [{"b": 1}]}) == 3


def test_not_utf8_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(b'{"a": "\xff"}')
    with pytest.raises(InputError, match="not UTF-8"):
        load_json(path)


def test_an_integer_read_back_is_never_a_bool() -> None:
    """JSON's `true` parses as a Python int: a count or a seed read from a report must not
    take it for 1."""
    from killpoint.values.input_files import read_int

    assert [read_int(v) for v in (7, 0, True, "7", 7.0)] == [7, 0, None, None, None]
